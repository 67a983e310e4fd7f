//! Device-side `printf`: the `vprintf(format, args)` built-in that CUDA's `printf`
//! compiles to. The format string is C's; the argument buffer holds each argument
//! aligned to its size (ints and chars as 4 bytes, floats promoted to double, pointers
//! and `long`s as 8 bytes). Output goes to the host's standard output at once (the
//! real driver buffers it until the next synchronisation).

/// Where arguments and strings come from (device memory, through the interpreter's
/// checked accesses).
pub(crate) trait Source {
    /// The next `size`-byte argument (4 or 8), aligned to its size.
    fn arg(&mut self, size: u32) -> Option<u64>;
    /// The NUL-terminated string at a generic address (at most `max` bytes).
    fn string(&mut self, addr: u64, max: usize) -> Option<Vec<u8>>;
}

/// Formats `fmt` with arguments from `src`. Returns the text and the number of
/// arguments used (`printf`'s return value), or `None` if an argument could not be
/// read.
pub(crate) fn format(fmt: &[u8], src: &mut dyn Source) -> Option<(Vec<u8>, i32)> {
    let mut out = Vec::new();
    let mut nargs = 0;
    let mut i = 0;
    while i < fmt.len() {
        let c = fmt[i];
        i += 1;
        if c != b'%' {
            out.push(c);
            continue;
        }
        let start = i - 1;
        let mut spec = Spec::default();
        while let Some(&f) = fmt.get(i) {
            match f {
                b'-' => spec.left = true,
                b'+' => spec.plus = true,
                b' ' => spec.space = true,
                b'#' => spec.alt = true,
                b'0' => spec.zero = true,
                _ => break,
            }
            i += 1;
        }
        spec.width = number(fmt, &mut i);
        if fmt.get(i) == Some(&b'.') {
            i += 1;
            spec.prec = Some(number(fmt, &mut i).unwrap_or(0));
        }
        let mut long = 0;
        while let Some(&l) = fmt.get(i) {
            match l {
                b'l' | b'j' | b'z' | b't' => long += 1,
                b'h' | b'L' => {}
                _ => break,
            }
            i += 1;
        }
        let Some(&conv) = fmt.get(i) else {
            out.extend_from_slice(&fmt[start..]);
            break;
        };
        i += 1;
        let size = if long > 0 { 8 } else { 4 };
        let text: Vec<u8> = match conv {
            b'%' => vec![b'%'],
            b'd' | b'i' => {
                nargs += 1;
                let v = src.arg(size)?;
                let v = if size == 4 {
                    i64::from(v as u32 as i32)
                } else {
                    v as i64
                };
                spec.integer(v < 0, v.unsigned_abs(), 10, false)
            }
            b'u' | b'x' | b'X' | b'o' => {
                nargs += 1;
                let v = src.arg(size)?;
                let v = if size == 4 { v & 0xffff_ffff } else { v };
                let base = match conv {
                    b'u' => 10,
                    b'o' => 8,
                    _ => 16,
                };
                spec.integer(false, v, base, conv == b'X')
            }
            b'c' => {
                nargs += 1;
                vec![src.arg(4)? as u8]
            }
            b'p' => {
                nargs += 1;
                spec.alt = true;
                spec.integer(false, src.arg(8)?, 16, false)
            }
            b's' => {
                nargs += 1;
                let addr = src.arg(8)?;
                let max = spec.prec.unwrap_or(1 << 16);
                if addr == 0 {
                    b"(null)".to_vec()
                } else {
                    src.string(addr, max)?
                }
            }
            b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' => {
                nargs += 1;
                spec.float(f64::from_bits(src.arg(8)?), conv)
            }
            _ => fmt[start..i].to_vec(),
        };
        spec.pad(
            &text,
            matches!(
                conv,
                b'd' | b'i'
                    | b'u'
                    | b'x'
                    | b'X'
                    | b'o'
                    | b'p'
                    | b'f'
                    | b'F'
                    | b'e'
                    | b'E'
                    | b'g'
                    | b'G'
            ),
            &mut out,
        );
    }
    Some((out, nargs))
}

fn number(fmt: &[u8], i: &mut usize) -> Option<usize> {
    let start = *i;
    while fmt.get(*i).is_some_and(u8::is_ascii_digit) {
        *i += 1;
    }
    std::str::from_utf8(&fmt[start..*i]).ok()?.parse().ok()
}

/// A conversion specification's flags, width and precision.
#[derive(Default)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    alt: bool,
    zero: bool,
    width: Option<usize>,
    prec: Option<usize>,
}

impl Spec {
    fn sign(&self, negative: bool) -> &'static str {
        if negative {
            "-"
        } else if self.plus {
            "+"
        } else if self.space {
            " "
        } else {
            ""
        }
    }

    fn integer(&self, negative: bool, v: u64, base: u64, upper: bool) -> Vec<u8> {
        let mut digits = match base {
            8 => format!("{v:o}"),
            16 if upper => format!("{v:X}"),
            16 => format!("{v:x}"),
            _ => v.to_string(),
        };
        if let Some(p) = self.prec {
            if p == 0 && v == 0 {
                digits.clear();
            }
            while digits.len() < p {
                digits.insert(0, '0');
            }
        }
        let prefix = match base {
            16 if self.alt && v != 0 => {
                if upper {
                    "0X"
                } else {
                    "0x"
                }
            }
            8 if self.alt && !digits.starts_with('0') => "0",
            _ => "",
        };
        format!("{}{prefix}{digits}", self.sign(negative)).into_bytes()
    }

    fn float(&self, v: f64, conv: u8) -> Vec<u8> {
        let upper = conv.is_ascii_uppercase();
        let sign = self.sign(v.is_sign_negative() && !v.is_nan());
        let a = v.abs();
        let body = if v.is_nan() {
            "nan".to_string()
        } else if a.is_infinite() {
            "inf".to_string()
        } else {
            let p = self.prec.unwrap_or(6);
            match conv.to_ascii_lowercase() {
                b'f' => format!("{a:.p$}"),
                b'e' | b'a' => exp_form(a, p),
                _ => {
                    let p = p.max(1);
                    let x = exp_form(a, p - 1)
                        .rsplit_once('e')
                        .and_then(|(_, e)| e.parse::<i64>().ok())
                        .unwrap_or(0);
                    let s = if (x as i128) < p as i128 && x >= -4 {
                        format!("{a:.*}", (p as i64 - 1 - x).max(0) as usize)
                    } else {
                        exp_form(a, p - 1)
                    };
                    if self.alt { s } else { strip_zeros(&s) }
                }
            }
        };
        let body = if upper {
            body.to_ascii_uppercase()
        } else {
            body
        };
        format!("{sign}{body}").into_bytes()
    }

    /// Pads `text` to the width: left-justified, zero-filled after the sign and
    /// prefix (numbers only, without precision for integers), or right-justified.
    fn pad(&self, text: &[u8], numeric: bool, out: &mut Vec<u8>) {
        let width = self.width.unwrap_or(0);
        if text.len() >= width {
            out.extend_from_slice(text);
            return;
        }
        let fill = width - text.len();
        let finite = !text.iter().any(|c| matches!(c, b'n' | b'N' | b'i' | b'I'));
        if self.left {
            out.extend_from_slice(text);
            out.extend(std::iter::repeat_n(b' ', fill));
        } else if self.zero && numeric && finite {
            let mut lead = text
                .iter()
                .take_while(|c| matches!(c, b'-' | b'+' | b' '))
                .count();
            if text[lead..].starts_with(b"0x") || text[lead..].starts_with(b"0X") {
                lead += 2;
            }
            out.extend_from_slice(&text[..lead]);
            out.extend(std::iter::repeat_n(b'0', fill));
            out.extend_from_slice(&text[lead..]);
        } else {
            out.extend(std::iter::repeat_n(b' ', fill));
            out.extend_from_slice(text);
        }
    }
}

/// C's `%.{p}e` of a non-negative finite value: `d.ddde+XX`.
fn exp_form(a: f64, p: usize) -> String {
    let s = format!("{a:.p$e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let e: i64 = e.parse().unwrap_or(0);
            let sign = if e < 0 { '-' } else { '+' };
            format!("{m}e{sign}{:02}", e.abs())
        }
        None => s,
    }
}

/// `%g` without `#`: no trailing zeros after the decimal point.
fn strip_zeros(s: &str) -> String {
    let (m, e) = match s.split_once('e') {
        Some((m, e)) => (m, format!("e{e}")),
        None => (s, String::new()),
    };
    let m = if m.contains('.') {
        m.trim_end_matches('0').trim_end_matches('.')
    } else {
        m
    };
    format!("{m}{e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Arguments from a byte buffer laid out as CUDA lays them out; strings by index.
    struct Buf {
        bytes: Vec<u8>,
        pos: usize,
        strings: Vec<&'static str>,
    }

    impl Source for Buf {
        fn arg(&mut self, size: u32) -> Option<u64> {
            let size = size as usize;
            self.pos = self.pos.next_multiple_of(size);
            let mut b = [0u8; 8];
            b[..size].copy_from_slice(self.bytes.get(self.pos..self.pos + size)?);
            self.pos += size;
            Some(u64::from_le_bytes(b))
        }

        fn string(&mut self, addr: u64, max: usize) -> Option<Vec<u8>> {
            let s = self.strings.get(addr as usize - 1)?.as_bytes();
            Some(s[..s.len().min(max)].to_vec())
        }
    }

    fn fmt(f: &str, args: &[(u32, u64)]) -> String {
        let mut bytes = Vec::new();
        for &(size, v) in args {
            while bytes.len() % size as usize != 0 {
                bytes.push(0);
            }
            bytes.extend_from_slice(&v.to_le_bytes()[..size as usize]);
        }
        let mut b = Buf {
            bytes,
            pos: 0,
            strings: vec!["hello", "x"],
        };
        let (out, n) = format(f.as_bytes(), &mut b).unwrap();
        assert_eq!(n as usize, args.len(), "{f}");
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn c_formats() {
        let d = |v: f64| (8, v.to_bits());
        assert_eq!(
            fmt(
                "%d|%5d|%-5d|%05d|%+d",
                &[(4, (-42i32) as u32 as u64), (4, 7), (4, 7), (4, 7), (4, 3)]
            ),
            "-42|    7|7    |00007|+3"
        );
        assert_eq!(
            fmt(
                "%u %x %X %#x %o %lld %lu",
                &[
                    (4, u64::from(u32::MAX)),
                    (4, 255),
                    (4, 255),
                    (4, 255),
                    (4, 8),
                    (8, (-5i64) as u64),
                    (8, 1 << 40)
                ]
            ),
            "4294967295 ff FF 0xff 10 -5 1099511627776"
        );
        assert_eq!(
            fmt(
                "%f %.2f %8.3f %e %E",
                &[d(1.5), d(-2.345), d(3.14149), d(12345.678), d(0.00012)]
            ),
            "1.500000 -2.35    3.141 1.234568e+04 1.200000E-04"
        );
        assert_eq!(
            fmt(
                "%g %g %g %g %.3g",
                &[d(100000.0), d(1e6), d(0.0001), d(1.5e-5), d(2.0 / 3.0)]
            ),
            "100000 1e+06 0.0001 1.5e-05 0.667"
        );
        assert_eq!(
            fmt("%s, %.1s %c%% %p", &[(8, 1), (8, 2), (4, 65), (8, 0x1000)]),
            "hello, x A% 0x1000"
        );
        assert_eq!(
            fmt("%f %f %5.1f", &[d(f64::INFINITY), d(f64::NAN), d(-0.0)]),
            "inf nan  -0.0"
        );
        assert_eq!(fmt("%c%d", &[(4, 66), (4, 1)]), "B1");
        assert_eq!(fmt("no args", &[]), "no args");
    }
}

//! The PTX `.entry` parameter scan: where each parameter of a kernel lies in its
//! parameter buffer, read from PTX text as the PTX ABI lays it out. It checks a
//! kernel's declared signature when the driver has no `cuFuncGetParamInfo`; its
//! public path is [`module::entry_params`](crate::module::entry_params).

/// (offset, size) of each parameter of `.entry name` in PTX text, laid out as the
/// PTX ABI does (each aligned to its alignment); `None` if the list cannot be read.
///
/// A parameter reads `.param [.align A] .type [.ptr [.space] [.align B]] name[[N]]`:
/// `A` is the parameter's alignment (else its type's); `B`, after `.ptr`, is the
/// pointee's and does not move the parameter.
///
/// Only code counts: `//` and `/* */` comments and double-quoted strings are skipped,
/// both when looking for the entry and when reading its list. `name` must be the
/// whole identifier after `.entry` (with or without `.visible` or `.weak` before it,
/// and whitespace around it); an entry without a parameter list has none. A name
/// declared by more than one `.entry` is ambiguous: `None` — counted in the raw
/// text too, so an `.entry name` inside a comment or a string makes the list
/// unreadable rather than a decoy. So is text with a
/// preprocessor directive (a line starting with `#`): `#if 0` or `#define` could
/// make the text read here differ from what the JIT compiles.
pub fn entry_params(ptx: &str, name: &str) -> Option<Vec<(usize, usize)>> {
    Some(
        entry_list(ptx, name)?
            .iter()
            .map(|p| (p.offset, p.size))
            .collect(),
    )
}

/// Whether each parameter of `.entry name` is one integer (`.u`, `.s` or `.b` type, no
/// array): what a raw pointer or a length must be. `None` as for [`entry_params`].
pub(crate) fn entry_integers(ptx: &str, name: &str) -> Option<Vec<bool>> {
    Some(entry_list(ptx, name)?.iter().map(|p| p.integer).collect())
}

/// The parameters of `.entry name`, read as [`entry_params`] describes.
fn entry_list(ptx: &str, name: &str) -> Option<Vec<Param>> {
    let code = code_only(ptx);
    if code.lines().any(|l| l.trim_start().starts_with('#')) {
        return None;
    }
    // The raw text, comments and strings included, must name the entry once too:
    // a reader that disagrees with the JIT's lexer about what is a comment or a
    // string (escapes, `.pragma` strings) must not be able to pick a decoy.
    let raw = the_entry(ptx, name)?;
    let after_name = the_entry(&code, name)?;
    if raw != after_name {
        return None;
    }
    let rest = code.get(after_name..)?.trim_start();
    let Some(list) = rest.strip_prefix('(') else {
        return Some(Vec::new());
    };
    parse_list(list.get(..list.find(')')?)?)
}

/// One parameter of an `.entry` list.
struct Param {
    offset: usize,
    size: usize,
    /// One integer: a `.u`, `.s` or `.b` type, not an array.
    integer: bool,
}

/// The names of the kernels (`.entry`) of PTX text, in order, comments and strings
/// skipped: for an error that names what a module has.
pub(crate) fn entry_names(ptx: &str) -> Vec<String> {
    let code = code_only(ptx);
    let mut names = Vec::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find(".entry") {
        let before_ok = at == 0 || !is_ident(rest.as_bytes()[at - 1]);
        rest = &rest[at + ".entry".len()..];
        let after = rest.trim_start();
        if !before_ok || after.len() == rest.len() {
            continue; // `.entry` inside a longer word, or not followed by a space
        }
        let end = after
            .bytes()
            .position(|c| !is_ident(c))
            .unwrap_or(after.len());
        if end > 0 {
            names.push(after[..end].to_owned());
        }
    }
    names
}

/// A PTX identifier's characters (`[A-Za-z0-9_$%]`).
fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'%')
}

/// `ptx` with every byte of its comments and double-quoted strings made a space
/// (line breaks kept), so that only code is left to search.
fn code_only(ptx: &str) -> String {
    #[derive(PartialEq)]
    enum In {
        Code,
        LineComment,
        BlockComment,
        String,
    }
    let bytes = ptx.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut state = In::Code;
    let mut i = 0;
    while let Some(&c) = bytes.get(i) {
        let next = bytes.get(i + 1).copied();
        // How many bytes this step consumes, and what becomes of them.
        let (step, keep) = match state {
            In::Code => match (c, next) {
                (b'/', Some(b'/')) => {
                    state = In::LineComment;
                    (2, false)
                }
                (b'/', Some(b'*')) => {
                    state = In::BlockComment;
                    (2, false)
                }
                (b'"', _) => {
                    state = In::String;
                    (1, false)
                }
                _ => (1, true),
            },
            In::LineComment => {
                if c == b'\n' {
                    state = In::Code;
                }
                (1, false)
            }
            In::BlockComment => match (c, next) {
                (b'*', Some(b'/')) => {
                    state = In::Code;
                    (2, false)
                }
                _ => (1, false),
            },
            In::String => match (c, next) {
                // An escaped character, but a string never runs past its line.
                (b'\\', Some(n)) if n != b'\n' => (2, false),
                (b'"', _) | (b'\n', _) => {
                    state = In::Code;
                    (1, false)
                }
                _ => (1, false),
            },
        };
        for k in 0..step {
            if let Some(&b) = bytes.get(i + k) {
                // Whole characters are kept or blanked: every state change happens
                // at an ASCII byte, so the output stays UTF-8.
                out.push(if keep || b == b'\n' { b } else { b' ' });
            }
        }
        i += step;
    }
    String::from_utf8(out).unwrap_or_default()
}

/// Where the one `.entry name` in `code` ends (just after the name); `None` if there
/// is none or more than one.
fn the_entry(code: &str, name: &str) -> Option<usize> {
    const ENTRY: &str = ".entry";
    if name.is_empty() || !name.bytes().all(is_ident) {
        return None;
    }
    let bytes = code.as_bytes();
    let mut found = None;
    let mut from = 0;
    while let Some(at) = code.get(from..)?.find(ENTRY).map(|i| from + i) {
        from = at + ENTRY.len();
        // `.entry` as a whole directive: not inside a longer word, whitespace after.
        let before = at.checked_sub(1).and_then(|p| bytes.get(p));
        if before.is_some_and(|&c| is_ident(c) || c == b'.') {
            continue;
        }
        let rest = code.get(from..)?;
        let after = rest.trim_start();
        if after.len() == rest.len() {
            continue;
        }
        let ident = after.bytes().take_while(|&c| is_ident(c)).count();
        if after.get(..ident) != Some(name) {
            continue;
        }
        if found.is_some() {
            return None;
        }
        found = Some(code.len() - after.len() + ident);
    }
    found
}

/// The layout of a parameter list (the text between its parentheses).
fn parse_list(list: &str) -> Option<Vec<Param>> {
    let mut out = Vec::new();
    let mut offset = 0usize;
    for p in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (decl, dims) = match p.split_once('[') {
            Some((decl, dims)) => (decl, Some(dims)),
            None => (p, None),
        };
        let words: Vec<&str> = decl.split_whitespace().collect();
        let ty_at = words
            .iter()
            .position(|w| w.starts_with('.') && !matches!(*w, ".param" | ".align"))?;
        let ty = words.get(ty_at)?;
        let integer = dims.is_none() && matches!(ty.get(1..2), Some("u" | "s" | "b"));
        let elem: usize = match ty.get(2..)? {
            "8" => 1,
            "16" => 2,
            "32" => 4,
            "64" => 8,
            _ => return None,
        };
        let count = match dims {
            Some(dims) => array_len(dims)?,
            None => 1,
        };
        let align = match words.get(..ty_at)?.iter().position(|w| *w == ".align") {
            Some(i) => words.get(i + 1)?.parse::<usize>().ok()?,
            None => elem,
        };
        if !align.is_power_of_two() {
            return None;
        }
        let size = elem.checked_mul(count)?;
        offset = offset.checked_next_multiple_of(align)?;
        out.push(Param {
            offset,
            size,
            integer,
        });
        offset = offset.checked_add(size)?;
    }
    Some(out)
}

/// The element count of an array parameter from what follows its first `[`:
/// `N]`, or `N][M]...` (their product); spaces allowed around the numbers.
fn array_len(dims: &str) -> Option<usize> {
    let mut count = 1usize;
    let mut rest = dims;
    loop {
        let (n, after) = rest.split_once(']')?;
        count = count.checked_mul(n.trim().parse().ok()?)?;
        let after = after.trim_start();
        if after.is_empty() {
            return Some(count);
        }
        rest = after.strip_prefix('[')?;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn preprocessor_directives_make_the_list_unreadable() {
        let ptx = "#if 0\n.entry k(.param .u32 a)\n#endif\n.entry k(.param .u64 a)\n";
        assert_eq!(entry_params(ptx, "k"), None);
        assert_eq!(
            entry_params(".entry k(.param .u64 a) // #not a directive\n", "k"),
            Some(vec![(0, 8)])
        );
    }

    use super::*;

    #[test]
    fn an_align_after_ptr_is_the_pointees_and_bad_lists_are_none() {
        let ptx =
            ".entry k(\n .param .u32 k_param_0,\n .param .u64 .ptr .global .align 4 k_param_1\n)";
        assert_eq!(entry_params(ptx, "k"), Some(vec![(0, 4), (8, 8)]));
        assert_eq!(entry_params(".entry a)(", "a)"), None);
        assert_eq!(
            entry_params(".entry k(.param .align 0 .b8 p[4])", "k"),
            None
        );
        assert_eq!(entry_params(".entry k(.param . p)", "k"), None);
        assert_eq!(
            entry_params(".entry k(.param .b16 p[18446744073709551615])", "k"),
            None
        );
    }

    #[test]
    fn entry_parameters_follow_the_ptx_layout() {
        let ptx = ".visible .entry k(\n .param .u64 k_param_0,\n .param .u32 k_param_1,\n .param .align 8 .b8 k_param_2[16],\n .param .f64 k_param_3\n)\n{ ret; }";
        assert_eq!(
            entry_params(ptx, "k"),
            Some(vec![(0, 8), (8, 4), (16, 16), (32, 8)])
        );
        assert_eq!(entry_params(ptx, "other"), None);
        let weak = ".weak .entry k(.param .u32 a)";
        assert_eq!(entry_params(weak, "k"), Some(vec![(0, 4)]));
    }

    #[test]
    fn entries_in_comments_or_strings_are_never_decoys() {
        let real = "\n.visible .entry k(.param .u64 y)\n{ ret; }";
        // A second `.entry k` anywhere — in a comment, a string, or a string whose
        // escapes a lexer may read differently — makes the list unreadable.
        for decoy in [
            "// .entry k(.param .u32 x)",
            "/* .entry k(.param .u32 x) */",
            "/* a\n .entry k(.param .u32 x)\n */",
            ".file 1 \".entry k(.param .u32 x)\"",
            ".pragma \"say \\\" .entry k(.param .u32 x)\";",
            ".pragma \"\\\" \" .visible .entry k(.param .u32 x) \" \"\";",
        ] {
            let ptx = format!("{decoy}{real}");
            assert_eq!(entry_params(&ptx, "k"), None, "{ptx}");
        }
        // Comments that do not name the entry are skipped.
        let ptx = format!("// .globl k\n/* k( */{real}");
        assert_eq!(entry_params(&ptx, "k"), Some(vec![(0, 8)]));
        // `//` inside a string does not start a comment.
        let ptx = ".file 1 \"a//b.cu\"\n.entry k(.param .u32 x)";
        assert_eq!(entry_params(ptx, "k"), Some(vec![(0, 4)]));
        // A comment that never ends hides the rest.
        assert_eq!(entry_params("/* .entry k(.param .u32 x)", "k"), None);
    }

    #[test]
    fn comments_inside_the_list_are_skipped() {
        let ptx = ".entry k(\n .param .u32 a, // ) not the end, .param .u8 c\n .param .u64 /* , .u8 */ b\n)";
        assert_eq!(entry_params(ptx, "k"), Some(vec![(0, 4), (8, 8)]));
        let ptx = ".entry k(.param .align /* 2 */ 8 .b8 a[/* 1 */ 16 ])";
        assert_eq!(entry_params(ptx, "k"), Some(vec![(0, 16)]));
    }

    #[test]
    fn the_name_is_a_whole_identifier_with_whitespace_allowed() {
        assert_eq!(entry_params(".entry kk(.param .u32 x)", "k"), None);
        assert_eq!(entry_params(".entry k(.param .u32 x)", "kk"), None);
        assert_eq!(entry_params(".entry k_1(.param .u32 x)", "k"), None);
        assert_eq!(
            entry_params(".entry\tk \n (.param .u32 x)", "k"),
            Some(vec![(0, 4)])
        );
        let both = ".entry kk(.param .u32 x)\n.entry k(.param .u64 y)";
        assert_eq!(entry_params(both, "k"), Some(vec![(0, 8)]));
        assert_eq!(entry_params(both, "kk"), Some(vec![(0, 4)]));
        // Not a directive: part of a longer word, or no space before the name.
        assert_eq!(entry_params("x.entry k(.param .u32 x)", "k"), None);
        assert_eq!(entry_params(".entryk(.param .u32 x)", "k"), None);
        assert_eq!(entry_params(".entry k(.param .u32 x)", ""), None);
        assert_eq!(entry_params(".entry k(.param .u32 x)", "k("), None);
    }

    #[test]
    fn a_name_declared_twice_is_ambiguous() {
        let ptx = ".entry k(.param .u32 a)\n{ ret; }\n.visible .entry k(.param .u64 a)\n{ ret; }";
        assert_eq!(entry_params(ptx, "k"), None);
        let commented = ".entry k(.param .u32 a)\n// .entry k(.param .u64 a)";
        assert_eq!(entry_params(commented, "k"), None);
    }

    #[test]
    fn entries_without_a_parameter_list_and_arrays_with_spaces() {
        assert_eq!(entry_params(".entry k\n{ ret; }", "k"), Some(vec![]));
        assert_eq!(
            entry_params(".entry k .maxntid 256, 1, 1\n{ ret; }", "k"),
            Some(vec![])
        );
        assert_eq!(entry_params(".entry k()", "k"), Some(vec![]));
        assert_eq!(
            entry_params(include_str!("../kernels/empty.ptx"), "empty"),
            Some(vec![])
        );
        let ptx = ".entry k(.param .align 8 .b8 p [ 16 ], .param .b32 q[2][3])";
        assert_eq!(entry_params(ptx, "k"), Some(vec![(0, 16), (16, 24)]));
    }

    #[test]
    fn hostile_lists_are_none() {
        for ptx in [
            ".entry k(.param .b8 x[99999999999999999999])",
            ".entry k(.param .b64 x[4611686018427387904])",
            ".entry k(.param .b8 x[3][9223372036854775807])",
            ".entry k(.param .align 0 .b8 x[4])",
            ".entry k(.param .align 3 .b8 x[4])",
            ".entry k(.param .b8 a, .param .align 9223372036854775808 .b8 b, .param .align 9223372036854775808 .b8 c)",
            ".entry k(.param .align",
            ".entry k(.param .u32 x",
            ".entry k(.param .u32 x[4)",
            ".entry k(.param .u32 x[])",
            ".entry k(.param .u32 x[4]])",
            ".entry k(.param .é32 x)",
            ".entry k(.param .u32 x, .param .é x)",
        ] {
            assert_eq!(entry_params(ptx, "k"), None, "{ptx}");
        }
        for ptx in [
            ".entry k(\".entry k(\")",
            ".entry k",
            ".entry k(",
            "/*",
            "\"",
            "\\",
            "//",
            ".entry",
        ] {
            let _ = entry_params(ptx, "k");
        }
    }

    #[test]
    fn mutated_ptx_never_panics() {
        const AFFINE: &str = include_str!("../kernels/affine.ptx");
        let expected = Some(vec![(0, 12), (16, 8), (24, 8)]);
        assert_eq!(entry_params(AFFINE, "affine"), expected);
        let list_end = AFFINE.find(")\n{").unwrap() + 1;
        const SNIPPETS: &[&str] = &[
            "(",
            ")",
            ",",
            "[",
            "]",
            "/*",
            "*/",
            "//",
            "\"",
            "\\",
            "\n",
            " ",
            "é",
            "\u{1F600}",
            ".align 0",
            ".align 3",
            ".align 18446744073709551616",
            "[99999999999999999999]",
            "[18446744073709551615]",
            ".entry affine(",
            ".entry affine",
            ".b8",
            ".param",
            "0",
        ];
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut rand = |n: usize| {
            // xorshift64
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n.max(1) as u64) as usize
        };
        let boundary = |s: &str, mut at: usize| {
            while !s.is_char_boundary(at) {
                at -= 1;
            }
            at
        };
        for round in 0..600 {
            let mut ptx = AFFINE.to_owned();
            for _ in 0..1 + rand(4) {
                let at = boundary(&ptx, rand(ptx.len() + 1));
                match rand(3) {
                    0 => ptx.truncate(at),
                    1 => {
                        let end = boundary(&ptx, (at + rand(40)).min(ptx.len()));
                        ptx.replace_range(at..end, "");
                    }
                    _ => ptx.insert_str(at, SNIPPETS[rand(SNIPPETS.len())]),
                }
            }
            for name in ["affine", "affine_param_0", "", "a"] {
                let _ = entry_params(&ptx, name);
            }
            // Truncated after its list, the kernel reads the same.
            let cut = list_end + rand(AFFINE.len() - list_end + 1);
            assert_eq!(
                entry_params(&AFFINE[..cut], "affine"),
                expected,
                "round {round}"
            );
        }
    }
}

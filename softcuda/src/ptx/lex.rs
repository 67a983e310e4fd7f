//! The PTX tokenizer: source text to a flat list of tokens with line numbers.
//!
//! Comments (`//` and `/* */`) are dropped. Identifiers keep their dots, so an
//! opcode such as `ld.global.nc.v4.f32`, a directive such as `.reg` and a special
//! register such as `%tid.x` are one token each; `::` inside an identifier is kept
//! too (`ld.global.L1::no_allocate`). Numbers keep their source text: the parser
//! decides what a literal means.

/// What a token is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TokKind {
    /// A name, directive, opcode or register (`%r1`, `.reg`, `add.s32`, `$L__BB0_2`).
    Ident(String),
    /// A numeric literal, as written (`42`, `0x1F`, `0f3F800000`, `1.5`).
    Num(String),
    /// A double-quoted string, without the quotes.
    Str(String),
    /// One punctuation character.
    Punct(char),
}

/// A token and the 1-based line it starts on.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tok {
    pub kind: TokKind,
    pub line: u32,
}

fn ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b'$' || c == b'%' || c == b'.'
}

fn ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c == b'.'
}

/// Splits `src` into tokens, or says on which line a character is not PTX.
pub(crate) fn tokenize(src: &str) -> Result<Vec<Tok>, (u32, String)> {
    let b = src.as_bytes();
    let mut toks = Vec::with_capacity(src.len() / 4);
    let mut i = 0;
    let mut line = 1u32;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            i += 1;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let start = line;
            i += 2;
            loop {
                if i + 1 >= b.len() {
                    return Err((start, "Unterminated comment".into()));
                }
                if b[i] == b'*' && b[i + 1] == b'/' {
                    i += 2;
                    break;
                }
                if b[i] == b'\n' {
                    line += 1;
                }
                i += 1;
            }
        } else if c == b'"' {
            let start = i + 1;
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\n' {
                    return Err((line, "Unterminated string".into()));
                }
                i += 1;
            }
            let s = String::from_utf8_lossy(&b[start..i.min(b.len())]).into_owned();
            toks.push(Tok {
                kind: TokKind::Str(s),
                line,
            });
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            i += 1;
            while i < b.len() {
                let d = b[i];
                let exp_sign = (d == b'+' || d == b'-')
                    && matches!(b[i - 1], b'e' | b'E')
                    && !is_hex_literal(&b[start..i]);
                if d.is_ascii_alphanumeric() || d == b'.' || exp_sign {
                    i += 1;
                } else {
                    break;
                }
            }
            let s = String::from_utf8_lossy(&b[start..i]).into_owned();
            toks.push(Tok {
                kind: TokKind::Num(s),
                line,
            });
        } else if ident_start(c) {
            let start = i;
            i += 1;
            loop {
                if i < b.len() && ident_char(b[i]) {
                    i += 1;
                } else if i + 2 < b.len()
                    && b[i] == b':'
                    && b[i + 1] == b':'
                    && b[i + 2].is_ascii_alphanumeric()
                {
                    i += 2;
                } else {
                    break;
                }
            }
            let s = String::from_utf8_lossy(&b[start..i]).into_owned();
            toks.push(Tok {
                kind: TokKind::Ident(s),
                line,
            });
        } else if b",;:[]{}()<>+-!|@=*".contains(&c) {
            toks.push(Tok {
                kind: TokKind::Punct(c as char),
                line,
            });
            i += 1;
        } else {
            let ch = src.get(i..).and_then(|s| s.chars().next()).unwrap_or('?');
            return Err((line, format!("Unexpected character '{ch}'")));
        }
    }
    Ok(toks)
}

/// Whether a literal's text so far is a hexadecimal form (`0x`, `0f`, `0d`), in
/// which `e` is a digit and never starts an exponent.
fn is_hex_literal(s: &[u8]) -> bool {
    s.len() >= 2 && s[0] == b'0' && matches!(s[1], b'x' | b'X' | b'f' | b'F' | b'd' | b'D')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(s: &str) -> Vec<TokKind> {
        tokenize(s).unwrap().into_iter().map(|t| t.kind).collect()
    }

    #[test]
    fn opcodes_registers_and_addresses() {
        let k = kinds("@!%p1 ld.global.nc.v2.f32 {%f1, _}, [%rd1+-4]; // c\n");
        assert_eq!(k[0], TokKind::Punct('@'));
        assert_eq!(k[1], TokKind::Punct('!'));
        assert_eq!(k[2], TokKind::Ident("%p1".into()));
        assert_eq!(k[3], TokKind::Ident("ld.global.nc.v2.f32".into()));
        assert!(k.contains(&TokKind::Punct('+')));
        assert!(k.contains(&TokKind::Num("4".into())));
        assert_eq!(k.last(), Some(&TokKind::Punct(';')));
    }

    #[test]
    fn numbers_comments_and_lines() {
        let t =
            tokenize("/* a\n b */ mov.f32 %f1, 0f3F800000;\n.version 8.8\nx 1.5e-3 0x1e").unwrap();
        assert_eq!(t[0].line, 2);
        assert_eq!(t[3].kind, TokKind::Num("0f3F800000".into()));
        assert_eq!(t[5].kind, TokKind::Ident(".version".into()));
        assert_eq!(t[6].kind, TokKind::Num("8.8".into()));
        assert_eq!(t[6].line, 3);
        assert_eq!(t[8].kind, TokKind::Num("1.5e-3".into()));
        assert_eq!(t[9].kind, TokKind::Num("0x1e".into()));
        assert!(tokenize("a # b").is_err());
    }

    #[test]
    fn double_colon_stays_in_identifiers() {
        let k = kinds("ld.global.L1::evict_last.u32 x: y");
        assert_eq!(k[0], TokKind::Ident("ld.global.L1::evict_last.u32".into()));
        assert_eq!(k[2], TokKind::Punct(':'));
    }
}

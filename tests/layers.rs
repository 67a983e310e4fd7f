//! The layering of `docs/architecture.md` ("Layers") holds in the code: every
//! `crate::` path in `src/` (a `use`, an inline path, a name the crate root
//! re-exports) names a module on the same row of the diagram or a lower one. Plain
//! text reading, no build: comments, doc comments and string literals are skipped,
//! and `$crate::` inside a macro names the macro's own module's crate, not a layer.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The diagram's rows, top first: the module names left of `│` on each line of the
/// first code block after `## Layers`.
fn diagram() -> Vec<Vec<String>> {
    let doc = fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let start = doc
        .find("\n## Layers")
        .expect("docs/architecture.md has no `## Layers`");
    let rest = &doc[start..];
    let open = rest.find("```").expect("the Layers section has no diagram") + 3;
    let body = &rest[open..];
    let body = &body[body.find('\n').unwrap() + 1..];
    let body = &body[..body.find("```").expect("the diagram is not closed")];
    body.lines()
        .filter_map(|l| l.split_once('│').map(|(names, _)| names))
        .map(|names| {
            names
                .split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|row| !row.is_empty())
        .collect()
}

/// Every `.rs` file under `dir`.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The source with comments and the insides of string and character literals
/// blanked (newlines kept, so line numbers stay right).
fn code_only(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let blank = |ch: char| if ch == '\n' { '\n' } else { ' ' };
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
        } else if c[i] == 'r'
            && (next == Some('"') || next == Some('#'))
            && (i == 0 || !(c[i - 1].is_alphanumeric() || c[i - 1] == '_'))
        {
            // A raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while c.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= c.len() {
                    break;
                }
                if c[j] == '"' && (1..=hashes).all(|k| c.get(j + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                out.push(blank(c[j]));
                j += 1;
            }
            i = j;
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    i += 1;
                }
                if i < c.len() {
                    out.push(blank(c[i]));
                }
                i += 1;
            }
            i += 1;
        } else if c[i] == '\'' && (next == Some('\\') || c.get(i + 2) == Some(&'\'')) {
            // A character literal (a lifetime has no closing quote).
            i += 1;
            while i < c.len() && c[i] != '\'' {
                if c[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

fn ident_at(c: &[char], mut i: usize) -> (String, usize) {
    let mut s = String::new();
    while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
        s.push(c[i]);
        i += 1;
    }
    (s, i)
}

fn skip_ws(c: &[char], mut i: usize) -> usize {
    while i < c.len() && c[i].is_whitespace() {
        i += 1;
    }
    i
}

/// The first segment of each path `crate::` is followed by at `i` (one, or one per
/// item of a `{...}` group).
fn heads(c: &[char], i: usize) -> Vec<String> {
    let i = skip_ws(c, i);
    if c.get(i) != Some(&'{') {
        let (name, _) = ident_at(c, i);
        return vec![name];
    }
    let mut out = Vec::new();
    let mut depth = 0;
    let mut expect_item = true;
    let mut j = i;
    while j < c.len() {
        match c[j] {
            '{' => {
                depth += 1;
                if depth == 1 {
                    expect_item = true;
                }
                j += 1;
            }
            '}' => {
                depth -= 1;
                j += 1;
                if depth == 0 {
                    break;
                }
            }
            ',' if depth == 1 => {
                expect_item = true;
                j += 1;
            }
            ch if depth == 1 && expect_item && (ch.is_alphanumeric() || ch == '_') => {
                let (name, k) = ident_at(c, j);
                out.push(name);
                expect_item = false;
                j = k;
            }
            _ => j += 1,
        }
    }
    out
}

/// The names the crate root re-exports, with the module each comes from.
fn root_reexports(lib: &str) -> BTreeMap<String, String> {
    let code = code_only(lib);
    let mut map = BTreeMap::new();
    for stmt in code.split(';') {
        let stmt = stmt.trim();
        let Some(rest) = stmt.strip_prefix("pub use ") else {
            continue;
        };
        let Some((module, names)) = rest.split_once("::") else {
            continue;
        };
        let names = names.trim().trim_start_matches('{').trim_end_matches('}');
        for name in names.split(',') {
            let name = name.split_whitespace().last().unwrap_or("");
            if !name.is_empty() {
                map.insert(name.to_owned(), module.trim().to_owned());
            }
        }
    }
    map
}

#[test]
fn every_crate_path_points_down_the_documented_layers() {
    let rows = diagram();
    let mut rank = BTreeMap::new();
    for (i, row) in rows.iter().enumerate() {
        for m in row {
            assert!(
                rank.insert(m.clone(), rows.len() - i).is_none(),
                "docs/architecture.md's Layers diagram names `{m}` twice"
            );
        }
    }

    let src = root().join("src");
    let mut modules = BTreeSet::new();
    for entry in fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if name != "lib" && (path.is_dir() || path.extension().is_some_and(|e| e == "rs")) {
            modules.insert(name);
        }
    }
    let mut problems = Vec::new();
    for m in &modules {
        if !rank.contains_key(m) {
            problems.push(format!("src/{m} is missing from the Layers diagram"));
        }
    }
    for m in rank.keys() {
        if !modules.contains(m) {
            problems.push(format!(
                "the Layers diagram names `{m}`, which src/ does not have"
            ));
        }
    }

    let lib = fs::read_to_string(src.join("lib.rs")).unwrap();
    let reexports = root_reexports(&lib);
    let mut all = Vec::new();
    files(&src, &mut all);
    all.sort();
    let mut checked = 0;
    for path in all {
        let rel = path.strip_prefix(&src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let from = first.trim_end_matches(".rs").to_owned();
        if from == "lib" {
            continue; // The crate root: the public facade over every layer.
        }
        let Some(&from_rank) = rank.get(&from) else {
            continue; // Reported above.
        };
        let code: Vec<char> = code_only(&fs::read_to_string(&path).unwrap())
            .chars()
            .collect();
        let mut line = 1;
        let mut i = 0;
        while i < code.len() {
            if code[i] == '\n' {
                line += 1;
            }
            let starts = code[i..].starts_with(&['c', 'r', 'a', 't', 'e', ':', ':'])
                && (i == 0 || !(code[i - 1].is_alphanumeric() || matches!(code[i - 1], '_' | '$')));
            if starts {
                for head in heads(&code, i + 7) {
                    let to = if rank.contains_key(&head) {
                        Some(head.clone())
                    } else {
                        reexports.get(&head).cloned()
                    };
                    let Some(to) = to else { continue };
                    checked += 1;
                    if rank[&to] > from_rank {
                        problems.push(format!(
                            "src/{}:{line}: `{from}` uses `crate::{head}` (`{to}`), a higher layer",
                            rel.display()
                        ));
                    }
                }
            }
            i += 1;
        }
    }
    assert!(
        checked > 100,
        "only {checked} crate paths found: is the reader broken?"
    );
    assert!(
        problems.is_empty(),
        "the code does not keep docs/architecture.md's Layers:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_reader_skips_comments_strings_and_macro_paths() {
    let code: String = code_only(
        "// crate::a\n/// crate::b\n/* crate::c /* nested */ */ let s = \"crate::d\"; let r = r#\"crate::e\"#; let c = '\"'; $crate::f; crate::g",
    );
    let c: Vec<char> = code.chars().collect();
    let found: Vec<_> = (0..c.len())
        .filter(|&i| {
            c[i..].starts_with(&['c', 'r', 'a', 't', 'e', ':', ':'])
                && (i == 0 || !(c[i - 1].is_alphanumeric() || matches!(c[i - 1], '_' | '$')))
        })
        .flat_map(|i| heads(&c, i + 7))
        .collect();
    assert_eq!(found, ["g"]);
    let g: Vec<char> = "{a::X, b::{c, d}, e}".chars().collect();
    assert_eq!(heads(&g, 0), ["a", "b", "e"]);
    let m = root_reexports("pub use error::{CudaError, LoadError};\npub use device::Device;");
    assert_eq!(m["LoadError"], "error");
    assert_eq!(m["Device"], "device");
}

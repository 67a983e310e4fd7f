//! The PTX linker behind `cuLink*`: several PTX units (separately compiled, `-rdc`)
//! into one program, and softcuda's linked-image format.
//!
//! Linking works on the units' syntax trees. Every unit is parsed (a syntax error is
//! reported against that unit's name and line); then:
//! - exported definitions (`.visible` / `.weak` / `.common` variables and
//!   functions with a body) form one namespace: two strong definitions of a name are
//!   `Multiple definition`; a weak one yields to a strong one, or to the first weak;
//! - every declaration (`.extern` variable, function without a body) must be
//!   defined by some unit (or in its own unit, or be one of the built-in externs
//!   `vprintf` and `cudaGraphSetConditional`), else `Undefined reference`; a
//!   declaration whose type or parameter list differs from the definition is refused;
//! - internal (file-scope) names that more than one unit uses are renamed per unit,
//!   so `$str` in two units are two strings;
//! - the merged program is compiled as one module (variables first, then the
//!   functions in unit order), and compile errors name the unit and line.
//!
//! Logs are nvlink-style (`nvlink error   : Undefined reference to 'f' in 'b.ptx'`)
//! for link errors and ptxas-style, naming the unit, for errors inside a unit.
//!
//! The linked image ([`image`]) is text, so that `cuModuleLoadData` reads it like PTX:
//! a first line [`IMAGE_MAGIC`], then per unit a line `//unit <name bytes> <text
//! bytes>` followed by the name and the text. Loading it links the units again
//! (deterministically), so the image is self-contained: a copy stays loadable after
//! `cuLinkDestroy`.

use super::compile;
use super::lex;
use super::log;
use super::parse::{self, Ast, DeclSpace, Function, Init, Item, Operand, Stmt, VarDecl};
use super::{JitOptions, Module};
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

/// The first line of a linked image.
pub const IMAGE_MAGIC: &str = "//softcuda-linked-image 1\n";

/// One input of a link: its name (for the logs) and its PTX text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// The name given to `cuLinkAddData` (or the file's path).
    pub name: String,
    /// The PTX text.
    pub text: String,
}

/// Serialises `units` into a linked image, NUL-terminated.
pub fn image(units: &[Unit]) -> Vec<u8> {
    let mut out = String::from(IMAGE_MAGIC);
    for u in units {
        let _ = writeln!(out, "//unit {} {}", u.name.len(), u.text.len());
        out.push_str(&u.name);
        out.push_str(&u.text);
        out.push('\n');
    }
    let mut bytes = out.into_bytes();
    bytes.push(0);
    bytes
}

/// The units of a linked image, or `None` if `text` is not one (or is malformed).
pub fn parse_image(text: &str) -> Option<Vec<Unit>> {
    let mut rest = text.strip_prefix(IMAGE_MAGIC)?;
    let mut units = Vec::new();
    while !rest.is_empty() {
        let (header, body) = rest.split_once('\n')?;
        let mut words = header.strip_prefix("//unit ")?.split(' ');
        let n: usize = words.next()?.parse().ok()?;
        let t: usize = words.next()?.parse().ok()?;
        let name = body.get(..n)?;
        let text = body.get(n..n.checked_add(t)?)?;
        rest = body.get(n + t..)?.strip_prefix('\n')?;
        units.push(Unit {
            name: name.to_owned(),
            text: text.to_owned(),
        });
    }
    Some(units)
}

/// Checks one unit's syntax (what `cuLinkAddData` reports at once): the error log
/// on failure.
pub fn check_unit(unit: &Unit) -> Result<(), String> {
    parse_unit(unit).map(drop)
}

fn parse_unit(unit: &Unit) -> Result<Ast, String> {
    let toks = lex::tokenize(&unit.text).map_err(|e| unit_log(&unit.name, &[e]))?;
    let (ast, errors) = parse::parse(&toks);
    if errors.is_empty() {
        Ok(ast)
    } else {
        Err(unit_log(&unit.name, &errors))
    }
}

/// ptxas-style errors against unit `name`, then the fatal line.
fn unit_log(name: &str, errors: &[(u32, String)]) -> String {
    let mut out = String::new();
    for (line, msg) in errors {
        let _ = writeln!(out, "ptxas {name}, line {line}; error   : {msg}");
    }
    out.push_str("ptxas fatal   : Ptx assembly aborted due to errors\n");
    out
}

/// nvlink-style errors, then the fatal line.
fn link_log(errors: &[String]) -> String {
    let mut out = String::new();
    for e in errors {
        let _ = writeln!(out, "nvlink error   : {e}");
    }
    out.push_str("nvlink fatal   : Link aborted due to errors\n");
    out
}

const BUILTIN_EXTERNS: [&str; 2] = ["vprintf", "cudaGraphSetConditional"];

fn exported(linkage: Option<&str>) -> bool {
    matches!(linkage, Some(".visible" | ".weak" | ".common"))
}

fn weak(linkage: Option<&str>) -> bool {
    matches!(linkage, Some(".weak" | ".common"))
}

/// A variable declaration that refers to another unit's definition.
fn is_extern_var(d: &VarDecl) -> bool {
    d.linkage.as_deref() == Some(".extern") && d.space != DeclSpace::Shared
}

/// What a declaration must agree on with its definition.
fn var_shape(d: &VarDecl) -> (DeclSpace, String, u32, usize) {
    (d.space, d.ty.clone(), d.vec, d.dims.len())
}

/// A parameter's type, vector width and array rank.
type ParamShape = (String, u32, usize);

fn func_shape(f: &Function) -> (bool, Vec<ParamShape>, Vec<ParamShape>) {
    let list = |ps: &[VarDecl]| {
        ps.iter()
            .map(|p| (p.ty.clone(), p.vec, p.dims.len()))
            .collect()
    };
    (f.is_entry, list(&f.params), list(&f.rets))
}

/// Links `units` and compiles the result: the module and the info log, or the
/// error log.
pub fn link(units: &[Unit], opts: &JitOptions) -> Result<(Module, String), String> {
    if units.is_empty() {
        return Err(link_log(&["No input to link".into()]));
    }
    // 1. Parse every unit.
    let mut asts = Vec::with_capacity(units.len());
    let mut log = String::new();
    for u in units {
        match parse_unit(u) {
            Ok(a) => asts.push(a),
            Err(l) => log.push_str(
                l.trim_end_matches("ptxas fatal   : Ptx assembly aborted due to errors\n"),
            ),
        }
    }
    if !log.is_empty() {
        log.push_str("ptxas fatal   : Ptx assembly aborted due to errors\n");
        return Err(log);
    }
    // 2. Exported definitions: the winner of each name.
    let mut defs: HashMap<String, (usize, bool)> = HashMap::new();
    let mut errors = Vec::new();
    for (i, ast) in asts.iter().enumerate() {
        for item in &ast.items {
            let (name, linkage) = match item {
                Item::Var(d) if !is_extern_var(d) => (&d.name, d.linkage.as_deref()),
                Item::Func(f) if f.body.is_some() => (&f.name, f.linkage.as_deref()),
                _ => continue,
            };
            if !exported(linkage) {
                continue;
            }
            let w = weak(linkage);
            match defs.get(name) {
                None => {
                    defs.insert(name.clone(), (i, w));
                }
                Some(&(first, true)) if !w => {
                    let _ = first;
                    defs.insert(name.clone(), (i, false));
                }
                Some(&(first, false)) if !w => errors.push(format!(
                    "Multiple definition of '{name}' in '{}', first defined in '{}'",
                    units[i].name, units[first].name
                )),
                Some(_) => {} // a weak one after the winner: dropped
            }
        }
    }
    // 3. Declarations resolve; internal names that clash are renamed.
    let mut all_names: Vec<HashSet<String>> = Vec::with_capacity(asts.len());
    let mut internal: Vec<HashSet<String>> = Vec::with_capacity(asts.len());
    for ast in &asts {
        let (mut names, mut own) = (HashSet::new(), HashSet::new());
        for item in &ast.items {
            match item {
                Item::Var(d) => {
                    names.insert(d.name.clone());
                    if !is_extern_var(d) && !exported(d.linkage.as_deref()) {
                        own.insert(d.name.clone());
                    }
                }
                Item::Func(f) => {
                    names.insert(f.name.clone());
                    if f.body.is_some() && !exported(f.linkage.as_deref()) {
                        own.insert(f.name.clone());
                    }
                }
            }
        }
        all_names.push(names);
        internal.push(own);
    }
    for (i, ast) in asts.iter().enumerate() {
        let defined_here = |n: &str| {
            ast.items.iter().any(|it| match it {
                Item::Func(f) => f.name == n && f.body.is_some(),
                Item::Var(d) => d.name == n && !is_extern_var(d),
            })
        };
        for item in &ast.items {
            let (name, shape_ok) = match item {
                Item::Var(d) if is_extern_var(d) => {
                    let ok = find_def(&asts, &defs, &d.name, |it| match it {
                        Item::Var(v) if !is_extern_var(v) => Some(var_shape(v) == var_shape(d)),
                        _ => None,
                    });
                    (&d.name, ok)
                }
                Item::Func(f) if f.body.is_none() => {
                    if defined_here(&f.name) || BUILTIN_EXTERNS.contains(&f.name.as_str()) {
                        continue;
                    }
                    let ok = find_def(&asts, &defs, &f.name, |it| match it {
                        Item::Func(g) if g.body.is_some() => Some(func_shape(g) == func_shape(f)),
                        _ => None,
                    });
                    (&f.name, ok)
                }
                _ => continue,
            };
            match shape_ok {
                None => errors.push(format!(
                    "Undefined reference to '{name}' in '{}'",
                    units[i].name
                )),
                Some(false) => errors.push(format!(
                    "Declaration of '{name}' in '{}' does not match its definition in '{}'",
                    units[i].name,
                    defs.get(name).map_or("?", |(u, _)| units[*u].name.as_str())
                )),
                Some(true) => {}
            }
        }
    }
    if !errors.is_empty() {
        return Err(link_log(&errors));
    }
    // 4. Merge: renamed, line-shifted, variables first.
    let mut offsets = Vec::with_capacity(units.len());
    let mut at = 0u32;
    for u in units {
        offsets.push(at);
        let lines = u32::try_from(u.text.lines().count()).unwrap_or(u32::MAX);
        at = at.saturating_add(lines).saturating_add(1);
    }
    let mut merged = Ast::default();
    let (mut vars, mut funcs) = (Vec::new(), Vec::new());
    for (i, ast) in asts.into_iter().enumerate() {
        let clash: HashMap<String, String> = internal[i]
            .iter()
            .filter(|n| {
                all_names
                    .iter()
                    .enumerate()
                    .any(|(j, names)| j != i && names.contains(*n))
                    || defs.contains_key(*n)
            })
            .map(|n| (n.clone(), format!("{n}$u{i}")))
            .collect();
        let off = offsets.get(i).copied().unwrap_or(0);
        if let Some((maj, min, line)) = ast.version
            && merged.version.is_none_or(|(a, b, _)| (maj, min) > (a, b))
        {
            merged.version = Some((maj, min, line.saturating_add(off)));
        }
        if let Some((names, line)) = &ast.target
            && (merged.target.is_none()
                || target_sm(names) > merged.target.as_ref().map_or(0, |t| target_sm(&t.0)))
        {
            merged.target = Some((names.clone(), line.saturating_add(off)));
        }
        if merged.address_size.is_none() {
            merged.address_size = ast.address_size.map(|(s, l)| (s, l.saturating_add(off)));
        }
        for mut item in ast.items {
            let keep = match &item {
                Item::Var(d) if is_extern_var(d) => false,
                Item::Var(d) if exported(d.linkage.as_deref()) => {
                    defs.get(&d.name).is_some_and(|(u, _)| *u == i)
                }
                Item::Func(f) if f.body.is_some() && exported(f.linkage.as_deref()) => {
                    defs.get(&f.name).is_some_and(|(u, _)| *u == i)
                }
                _ => true,
            };
            if !keep {
                continue;
            }
            fix_item(&mut item, &clash, off);
            match item {
                Item::Var(_) => vars.push(item),
                Item::Func(_) => funcs.push(item),
            }
        }
    }
    merged.items = vars;
    merged.items.append(&mut funcs);
    // 5. Compile the whole.
    let c = compile::compile(&merged, opts).map_err(|errs| {
        let mut out = String::new();
        for (line, msg) in &errs {
            let unit = offsets.iter().rposition(|o| *o < *line).unwrap_or(0);
            let local = line.saturating_sub(offsets.get(unit).copied().unwrap_or(0));
            let name = units
                .get(unit)
                .map_or("linked ptx input", |u| u.name.as_str());
            let _ = writeln!(out, "ptxas {name}, line {local}; error   : {msg}");
        }
        out.push_str("ptxas fatal   : Ptx assembly aborted due to errors\n");
        out
    })?;
    let info = if opts.verbose {
        log::info_log(&c, opts.target_sm)
    } else {
        String::new()
    };
    Ok((Module::from_compiled(c), info))
}

/// Whether the definition of `name` (if any unit exports it) satisfies a declaration:
/// `None` if undefined, else what `agrees` says of the defining item.
fn find_def(
    asts: &[Ast],
    defs: &HashMap<String, (usize, bool)>,
    name: &str,
    agrees: impl Fn(&Item) -> Option<bool>,
) -> Option<bool> {
    let (unit, _) = defs.get(name)?;
    asts.get(*unit)?
        .items
        .iter()
        .filter(|it| match it {
            Item::Var(d) => d.name == name,
            Item::Func(f) => f.name == name,
        })
        .find_map(agrees)
}

/// The `sm_NN` number of a `.target` list (0 if none).
fn target_sm(names: &[String]) -> u32 {
    names
        .iter()
        .filter_map(|n| n.strip_prefix("sm_"))
        .filter_map(|v| {
            let d: String = v.chars().take_while(char::is_ascii_digit).collect();
            d.parse().ok()
        })
        .max()
        .unwrap_or(0)
}

/// Renames the names of `map` everywhere in `item` and shifts its lines by `off`.
fn fix_item(item: &mut Item, map: &HashMap<String, String>, off: u32) {
    match item {
        Item::Var(d) => fix_decl(d, map, off),
        Item::Func(f) => {
            f.line = f.line.saturating_add(off);
            rename(&mut f.name, map);
            for p in f.params.iter_mut().chain(f.rets.iter_mut()) {
                fix_decl(p, map, off);
            }
            for (_, _, line) in &mut f.directives {
                *line = (*line).saturating_add(off);
            }
            for s in f.body.iter_mut().flatten() {
                match s {
                    Stmt::Decl(d) => fix_decl(d, map, off),
                    Stmt::Label(n, line) | Stmt::Prototype(n, line) => {
                        rename(n, map);
                        *line = (*line).saturating_add(off);
                    }
                    Stmt::Inst(i) => {
                        i.line = i.line.saturating_add(off);
                        if let Some((g, _)) = &mut i.guard {
                            rename(g, map);
                        }
                        i.ops.iter_mut().for_each(|o| fix_operand(o, map));
                    }
                    Stmt::Open | Stmt::Close | Stmt::Loc(..) => {}
                }
            }
        }
    }
}

fn fix_decl(d: &mut VarDecl, map: &HashMap<String, String>, off: u32) {
    d.line = d.line.saturating_add(off);
    rename(&mut d.name, map);
    if let Some(i) = &mut d.init {
        fix_init(i, map);
    }
}

fn fix_init(i: &mut Init, map: &HashMap<String, String>) {
    match i {
        Init::Symbol(s) => rename(s, map),
        Init::List(l) => l.iter_mut().for_each(|i| fix_init(i, map)),
        Init::Value(_) => {}
    }
}

fn fix_operand(o: &mut Operand, map: &HashMap<String, String>) {
    match o {
        Operand::Name(n) | Operand::Not(n) | Operand::NameOff(n, _) => rename(n, map),
        Operand::Addr(Some(n), _) => rename(n, map),
        Operand::Pair(a, b) => {
            rename(a, map);
            rename(b, map);
        }
        Operand::Vec(l) | Operand::List(l) => l.iter_mut().for_each(|o| fix_operand(o, map)),
        Operand::Addr(None, _) | Operand::Imm(_) | Operand::Sink => {}
    }
}

fn rename(n: &mut String, map: &HashMap<String, String>) {
    if let Some(new) = map.get(n.as_str()) {
        n.clone_from(new);
    }
}

//! The PTX parser: tokens to a syntax tree of module directives, variables and
//! functions. It checks syntax only; names, types and instructions are checked by
//! the compiler (`compile/`), which turns this tree into executable code.

use super::lex::{Tok, TokKind};

/// A parse error: line and message.
pub(crate) type PError = (u32, String);

/// A literal operand or initializer value, as written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Lit {
    /// An integer (decimal, hex, octal or binary), negated if written with `-`.
    Int(i128),
    /// `0fXXXXXXXX`: the bits of an f32.
    F32(u32),
    /// `0dXXXXXXXXXXXXXXXX`: the bits of an f64.
    F64(u64),
    /// A decimal floating-point literal (`1.5`, `2e-3`).
    Dec(f64),
}

/// An instruction operand.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Operand {
    /// A name: register, special register, variable, label or function.
    Name(String),
    /// `!%p`: a negated predicate.
    Not(String),
    /// A literal.
    Imm(Lit),
    /// `name+offset` outside brackets (the address of a variable plus an offset).
    NameOff(String, i64),
    /// `[base+offset]`, `[base]` or `[offset]`.
    Addr(Option<String>, i64),
    /// `{a, b, ...}`: a vector of operands.
    Vec(Vec<Operand>),
    /// `d|p`: two destinations (`setp`, `shfl.sync`).
    Pair(String, String),
    /// `_`: a destination that is discarded.
    Sink,
    /// `(a, b, ...)`: a `call` argument or return list.
    List(Vec<Operand>),
}

/// One instruction, as written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Inst {
    pub line: u32,
    /// `@%p` or `@!%p`: the predicate register and whether it is negated.
    pub guard: Option<(String, bool)>,
    /// The full dotted opcode (`ld.global.nc.v4.f32`).
    pub opcode: String,
    pub ops: Vec<Operand>,
}

/// The state space of a variable declaration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DeclSpace {
    Reg,
    Global,
    Const,
    Shared,
    Local,
    Param,
}

/// A variable initializer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Init {
    Value(Lit),
    /// A variable's address (`generic(name)` or `name`): not supported, kept for the error.
    Symbol(String),
    List(Vec<Init>),
}

/// A variable declaration (`.reg`, `.global`, `.shared`, `.param`, ...).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct VarDecl {
    pub line: u32,
    pub space: DeclSpace,
    /// `.extern`, `.visible`, `.weak` or `.common`, if written.
    pub linkage: Option<String>,
    pub align: Option<u32>,
    /// The element type name without its dot (`b8`, `f32`, `pred`).
    pub ty: String,
    /// 1, or 2/4 for `.v2`/`.v4`.
    pub vec: u32,
    pub name: String,
    /// Array dimensions; `None` for `[]`.
    pub dims: Vec<Option<u64>>,
    /// `%r<6>`: declares `%r0` .. `%r5`.
    pub count: Option<u32>,
    pub init: Option<Init>,
}

/// A body statement.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Stmt {
    Decl(VarDecl),
    Label(String, u32),
    Inst(Inst),
    /// `{`: opens a scope.
    Open,
    /// `}`: closes a scope.
    Close,
    /// `name: .callprototype ...;` — recorded so that an indirect call can be refused by name.
    Prototype(String, u32),
    /// `.loc file line ...`: the source position of the instructions that follow.
    Loc(u32, u32),
}

/// An `.entry` or `.func`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Function {
    pub line: u32,
    pub is_entry: bool,
    pub linkage: Option<String>,
    pub name: String,
    pub rets: Vec<VarDecl>,
    pub params: Vec<VarDecl>,
    /// Performance directives (`.maxntid`, `.reqntid`, `.minnctapersm`, `.maxnreg`, ...).
    pub directives: Vec<(String, Vec<u64>, u32)>,
    /// `None` for a declaration without a body (a prototype or an `.extern .func`).
    pub body: Option<Vec<Stmt>>,
}

/// A module-scope item.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Item {
    Var(VarDecl),
    Func(Function),
}

/// A parsed module.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Ast {
    /// `.version major.minor` and its line.
    pub version: Option<(u32, u32, u32)>,
    /// `.target` names (`sm_80`, `debug`, ...) and the line.
    pub target: Option<(Vec<String>, u32)>,
    pub address_size: Option<(u32, u32)>,
    pub items: Vec<Item>,
    /// `.file n "name"` directives: number and name.
    pub files: Vec<(u32, String)>,
}

/// Parses a literal's text (`42`, `0x1F`, `017`, `0b101`, `0f3F800000`, `0d...`, `1.5`).
pub(crate) fn parse_lit(text: &str) -> Option<Lit> {
    let t = text.strip_suffix(['U', 'u']).unwrap_or(text);
    let lower = t.to_ascii_lowercase();
    if let Some(h) = lower.strip_prefix("0f") {
        if h.len() == 8 {
            return u32::from_str_radix(h, 16).ok().map(Lit::F32);
        }
        return None;
    }
    if let Some(h) = lower.strip_prefix("0d") {
        if h.len() == 16 {
            return u64::from_str_radix(h, 16).ok().map(Lit::F64);
        }
        return None;
    }
    if let Some(h) = lower.strip_prefix("0x") {
        return u64::from_str_radix(h, 16).ok().map(|v| Lit::Int(v.into()));
    }
    if let Some(h) = lower.strip_prefix("0b") {
        return u64::from_str_radix(h, 2).ok().map(|v| Lit::Int(v.into()));
    }
    if lower.contains(['.', 'e']) {
        return lower.parse::<f64>().ok().map(Lit::Dec);
    }
    if lower.len() > 1 && lower.starts_with('0') {
        return u64::from_str_radix(&lower[1..], 8)
            .ok()
            .map(|v| Lit::Int(v.into()));
    }
    lower.parse::<u64>().ok().map(|v| Lit::Int(v.into()))
}

struct Parser<'a> {
    toks: &'a [Tok],
    pos: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<&'a TokKind> {
        self.toks.get(self.pos).map(|t| &t.kind)
    }

    fn peek_at(&self, n: usize) -> Option<&'a TokKind> {
        self.toks.get(self.pos + n).map(|t| &t.kind)
    }

    /// The line of the current token (or of the last one at the end).
    fn line(&self) -> u32 {
        self.toks
            .get(self.pos)
            .or(self.toks.last())
            .map_or(1, |t| t.line)
    }

    fn next(&mut self) -> Option<&'a TokKind> {
        let t = self.toks.get(self.pos).map(|t| &t.kind);
        self.pos += 1;
        t
    }

    fn err<T>(&self, msg: impl Into<String>) -> Result<T, PError> {
        Err((self.line(), msg.into()))
    }

    fn is_punct(&self, c: char) -> bool {
        self.peek() == Some(&TokKind::Punct(c))
    }

    fn eat_punct(&mut self, c: char) -> bool {
        if self.is_punct(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect_punct(&mut self, c: char) -> Result<(), PError> {
        if self.eat_punct(c) {
            Ok(())
        } else {
            self.err(format!("syntax error: expected '{c}'{}", self.found()))
        }
    }

    fn found(&self) -> String {
        match self.peek() {
            Some(TokKind::Ident(s) | TokKind::Num(s)) => format!(", found '{s}'"),
            Some(TokKind::Str(s)) => format!(", found \"{s}\""),
            Some(TokKind::Punct(c)) => format!(", found '{c}'"),
            None => ", found end of input".into(),
        }
    }

    fn is_ident(&self, s: &str) -> bool {
        matches!(self.peek(), Some(TokKind::Ident(x)) if x == s)
    }

    fn eat_ident(&mut self, s: &str) -> bool {
        if self.is_ident(s) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn ident(&mut self) -> Result<&'a str, PError> {
        match self.peek() {
            Some(TokKind::Ident(s)) => {
                self.pos += 1;
                Ok(s)
            }
            _ => self.err(format!("syntax error: expected a name{}", self.found())),
        }
    }

    fn number(&mut self) -> Result<u64, PError> {
        match self.peek() {
            Some(TokKind::Num(s)) => match parse_lit(s) {
                Some(Lit::Int(v)) => {
                    self.pos += 1;
                    u64::try_from(v).or_else(|_| self.err("integer out of range"))
                }
                _ => self.err(format!("syntax error: expected an integer, found '{s}'")),
            },
            _ => self.err(format!("syntax error: expected an integer{}", self.found())),
        }
    }

    /// Skips the rest of the current line (directives such as `.loc` end at the newline).
    fn skip_line(&mut self, line: u32) {
        while self.toks.get(self.pos).is_some_and(|t| t.line == line) {
            self.pos += 1;
        }
    }

    /// Skips to just after the next `;` (error recovery), stopping before a `}`.
    fn skip_statement(&mut self) {
        while let Some(t) = self.peek() {
            match t {
                TokKind::Punct(';') => {
                    self.pos += 1;
                    return;
                }
                TokKind::Punct('}') => return,
                _ => self.pos += 1,
            }
        }
    }

    /// Skips a balanced `{ ... }` group starting at the current `{`.
    fn skip_braces(&mut self) -> Result<(), PError> {
        self.expect_punct('{')?;
        let mut depth = 1;
        while depth > 0 {
            match self.next() {
                Some(TokKind::Punct('{')) => depth += 1,
                Some(TokKind::Punct('}')) => depth -= 1,
                Some(_) => {}
                None => return self.err("syntax error: unbalanced '{'"),
            }
        }
        Ok(())
    }
}

const LINKAGE: [&str; 4] = [".extern", ".visible", ".weak", ".common"];

/// Parses a whole module. Syntax errors inside function bodies are collected per
/// statement (parsing goes on after them); an error at module scope stops parsing.
pub(crate) fn parse(toks: &[Tok]) -> (Ast, Vec<PError>) {
    let mut p = Parser { toks, pos: 0 };
    let mut ast = Ast::default();
    let mut errors = Vec::new();
    while p.peek().is_some() {
        if let Err(e) = top_item(&mut p, &mut ast, &mut errors) {
            errors.push(e);
            break;
        }
    }
    (ast, errors)
}

fn top_item(p: &mut Parser, ast: &mut Ast, errors: &mut Vec<PError>) -> Result<(), PError> {
    let line = p.line();
    let Some(TokKind::Ident(word)) = p.peek() else {
        return p.err(format!(
            "syntax error{}",
            p.found().replacen(", found", ": unexpected", 1)
        ));
    };
    match word.as_str() {
        ".version" => {
            p.pos += 1;
            let text = match p.next() {
                Some(TokKind::Num(s)) => s.clone(),
                _ => return Err((line, "syntax error: bad .version".into())),
            };
            let (maj, min) = text.split_once('.').unwrap_or((&text, "0"));
            match (maj.parse(), min.parse()) {
                (Ok(a), Ok(b)) => ast.version = Some((a, b, line)),
                _ => return Err((line, format!("syntax error: bad .version '{text}'"))),
            }
        }
        ".target" => {
            p.pos += 1;
            let mut names = Vec::new();
            while p.toks.get(p.pos).is_some_and(|t| t.line == line) {
                match p.next() {
                    Some(TokKind::Ident(s)) => names.push(s.clone()),
                    Some(TokKind::Punct(',')) => {}
                    _ => return Err((line, "syntax error: bad .target".into())),
                }
            }
            ast.target = Some((names, line));
        }
        ".address_size" => {
            p.pos += 1;
            let n = p.number()?;
            ast.address_size = Some((u32::try_from(n).unwrap_or(0), line));
        }
        ".file" => {
            p.pos += 1;
            if let (Some(TokKind::Num(n)), Some(TokKind::Str(name))) = (p.peek(), p.peek_at(1))
                && let Some(Lit::Int(n)) = parse_lit(n)
                && let Ok(n) = u32::try_from(n)
            {
                ast.files.push((n, name.clone()));
            }
            p.skip_line(line);
        }
        ".loc" => p.skip_line(line),
        ".section" => {
            p.pos += 1;
            while !p.is_punct('{') && p.peek().is_some() {
                p.pos += 1;
            }
            p.skip_braces()?;
        }
        ".pragma" => {
            p.pos += 1;
            p.skip_statement();
        }
        _ => {
            let mut linkage = None;
            while let Some(TokKind::Ident(w)) = p.peek() {
                if LINKAGE.contains(&w.as_str()) {
                    linkage = Some(w.clone());
                    p.pos += 1;
                } else {
                    break;
                }
            }
            match p.peek() {
                Some(TokKind::Ident(w)) if w == ".entry" || w == ".func" => {
                    let f = function(p, linkage, errors)?;
                    ast.items.push(Item::Func(f));
                }
                Some(TokKind::Ident(w))
                    if matches!(w.as_str(), ".global" | ".const" | ".shared" | ".local") =>
                {
                    let decls = var_decl(p, linkage, false)?;
                    p.expect_punct(';')?;
                    ast.items.extend(decls.into_iter().map(Item::Var));
                }
                Some(TokKind::Ident(w)) => {
                    let what = match w.as_str() {
                        ".tex" | ".texref" | ".surfref" | ".samplerref" => {
                            "texture, surface and sampler references are not supported"
                        }
                        ".alias" => ".alias is not supported",
                        _ => "",
                    };
                    if what.is_empty() {
                        return p.err(format!("syntax error: unexpected '{w}'"));
                    }
                    return p.err(what);
                }
                _ => return p.err(format!("syntax error{}", p.found())),
            }
        }
    }
    Ok(())
}

fn space_of(w: &str) -> Option<DeclSpace> {
    Some(match w {
        ".reg" => DeclSpace::Reg,
        ".global" => DeclSpace::Global,
        ".const" => DeclSpace::Const,
        ".shared" => DeclSpace::Shared,
        ".local" => DeclSpace::Local,
        ".param" => DeclSpace::Param,
        _ => return None,
    })
}

/// Parses `.space [.align N] [.vN] .type [.ptr ...] name[dims][<N>] [= init] {, name ...}`
/// (without the final `;`). `single` stops after one name (parameter lists).
fn var_decl(p: &mut Parser, linkage: Option<String>, single: bool) -> Result<Vec<VarDecl>, PError> {
    let line = p.line();
    let sp = p.ident()?;
    let Some(space) = space_of(sp) else {
        return Err((
            line,
            format!("syntax error: expected a state space, found '{sp}'"),
        ));
    };
    let mut align = None;
    let mut vec = 1;
    let mut ty = None;
    while let Some(TokKind::Ident(w)) = p.peek() {
        match w.as_str() {
            ".align" => {
                p.pos += 1;
                align = Some(u32::try_from(p.number()?).unwrap_or(0));
            }
            ".v2" => {
                p.pos += 1;
                vec = 2;
            }
            ".v4" => {
                p.pos += 1;
                vec = 4;
            }
            ".attribute" => {
                p.pos += 1;
                p.expect_punct('(')?;
                while !p.eat_punct(')') {
                    if p.next().is_none() {
                        return p.err("syntax error: unterminated .attribute");
                    }
                }
            }
            ".ptr" if ty.is_some() => {
                // `.ptr [.space] [.align N]` describes the pointee of a parameter.
                p.pos += 1;
                if let Some(TokKind::Ident(s)) = p.peek()
                    && matches!(s.as_str(), ".global" | ".const" | ".shared" | ".local")
                {
                    p.pos += 1;
                }
                if p.eat_ident(".align") {
                    p.number()?;
                }
            }
            w if w.starts_with('.') && ty.is_none() => {
                ty = Some(w[1..].to_string());
                p.pos += 1;
            }
            _ => break,
        }
    }
    let Some(ty) = ty else {
        return p.err(format!("syntax error: expected a type{}", p.found()));
    };
    let mut out = Vec::new();
    loop {
        let name_line = p.line();
        let name = p.ident()?.to_string();
        let mut dims = Vec::new();
        while p.eat_punct('[') {
            if p.eat_punct(']') {
                dims.push(None);
            } else {
                dims.push(Some(p.number()?));
                p.expect_punct(']')?;
            }
        }
        let mut count = None;
        if p.eat_punct('<') {
            count = Some(u32::try_from(p.number()?).unwrap_or(u32::MAX));
            p.expect_punct('>')?;
        }
        let mut init = None;
        if p.eat_punct('=') {
            init = Some(initializer(p)?);
        }
        out.push(VarDecl {
            line: name_line,
            space,
            linkage: linkage.clone(),
            align,
            ty: ty.clone(),
            vec,
            name,
            dims,
            count,
            init,
        });
        if single || !p.eat_punct(',') {
            break;
        }
    }
    Ok(out)
}

fn initializer(p: &mut Parser) -> Result<Init, PError> {
    if p.eat_punct('{') {
        let mut items = Vec::new();
        if !p.eat_punct('}') {
            loop {
                items.push(initializer(p)?);
                if p.eat_punct('}') {
                    break;
                }
                p.expect_punct(',')?;
            }
        }
        return Ok(Init::List(items));
    }
    let neg = p.eat_punct('-');
    match p.next() {
        Some(TokKind::Num(s)) => match parse_lit(s) {
            Some(l) => Ok(Init::Value(negate(l, neg))),
            None => p.err(format!("syntax error: bad number '{s}'")),
        },
        Some(TokKind::Ident(s)) if !neg => {
            if (s == "generic" || s == "global") && p.eat_punct('(') {
                let n = p.ident()?.to_string();
                p.expect_punct(')')?;
                Ok(Init::Symbol(n))
            } else {
                Ok(Init::Symbol(s.clone()))
            }
        }
        _ => p.err("syntax error: bad initializer"),
    }
}

fn negate(l: Lit, neg: bool) -> Lit {
    if !neg {
        return l;
    }
    match l {
        Lit::Int(v) => Lit::Int(-v),
        Lit::F32(b) => Lit::F32(b ^ 0x8000_0000),
        Lit::F64(b) => Lit::F64(b ^ (1 << 63)),
        Lit::Dec(f) => Lit::Dec(-f),
    }
}

fn param_list(p: &mut Parser) -> Result<Vec<VarDecl>, PError> {
    p.expect_punct('(')?;
    let mut out = Vec::new();
    if p.eat_punct(')') {
        return Ok(out);
    }
    loop {
        let mut d = var_decl(p, None, true)?;
        out.append(&mut d);
        if p.eat_punct(')') {
            return Ok(out);
        }
        p.expect_punct(',')?;
    }
}

fn function(
    p: &mut Parser,
    linkage: Option<String>,
    errors: &mut Vec<PError>,
) -> Result<Function, PError> {
    let line = p.line();
    let is_entry = p.ident()? == ".entry";
    let mut rets = Vec::new();
    if !is_entry && p.is_punct('(') {
        rets = param_list(p)?;
    }
    let name = p.ident()?.to_string();
    let mut params = Vec::new();
    if p.is_punct('(') {
        params = param_list(p)?;
    }
    let mut directives = Vec::new();
    loop {
        let dline = p.line();
        match p.peek() {
            Some(TokKind::Ident(w)) if w == ".pragma" => {
                p.pos += 1;
                p.skip_statement();
            }
            Some(TokKind::Ident(w)) if w.starts_with('.') => {
                let w = w[1..].to_string();
                p.pos += 1;
                let mut nums = Vec::new();
                if matches!(p.peek(), Some(TokKind::Num(_))) {
                    nums.push(p.number()?);
                    while p.eat_punct(',') {
                        nums.push(p.number()?);
                    }
                }
                directives.push((w, nums, dline));
            }
            _ => break,
        }
    }
    if p.eat_punct(';') {
        return Ok(Function {
            line,
            is_entry,
            linkage,
            name,
            rets,
            params,
            directives,
            body: None,
        });
    }
    p.expect_punct('{')?;
    let body = body(p, errors)?;
    Ok(Function {
        line,
        is_entry,
        linkage,
        name,
        rets,
        params,
        directives,
        body: Some(body),
    })
}

/// Parses statements up to the `}` that closes the function body.
fn body(p: &mut Parser, errors: &mut Vec<PError>) -> Result<Vec<Stmt>, PError> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    loop {
        let line = p.line();
        match p.peek() {
            None => return p.err("syntax error: function body not closed"),
            Some(TokKind::Punct('}')) => {
                p.pos += 1;
                if depth == 0 {
                    return Ok(out);
                }
                depth -= 1;
                out.push(Stmt::Close);
            }
            Some(TokKind::Punct('{')) => {
                p.pos += 1;
                depth += 1;
                out.push(Stmt::Open);
            }
            Some(TokKind::Punct(';')) => p.pos += 1,
            _ => {
                if let Err(e) = statement(p, &mut out, line) {
                    errors.push(e);
                    p.skip_statement();
                }
            }
        }
    }
}

fn statement(p: &mut Parser, out: &mut Vec<Stmt>, line: u32) -> Result<(), PError> {
    if let Some(TokKind::Ident(w)) = p.peek() {
        match w.as_str() {
            ".loc" => {
                p.pos += 1;
                let num = |t: Option<&TokKind>| match t {
                    Some(TokKind::Num(n)) => match parse_lit(n) {
                        Some(Lit::Int(v)) => u32::try_from(v).ok(),
                        _ => None,
                    },
                    _ => None,
                };
                if let (Some(f), Some(l)) = (num(p.peek()), num(p.peek_at(1))) {
                    out.push(Stmt::Loc(f, l));
                }
                p.skip_line(line);
                return Ok(());
            }
            ".file" => {
                p.skip_line(line);
                return Ok(());
            }
            ".pragma" => {
                p.pos += 1;
                p.skip_statement();
                return Ok(());
            }
            w if space_of(w).is_some() => {
                for d in var_decl(p, None, false)? {
                    out.push(Stmt::Decl(d));
                }
                return p.expect_punct(';');
            }
            w if LINKAGE.contains(&w) => {
                let linkage = Some(w.to_string());
                p.pos += 1;
                for d in var_decl(p, linkage, false)? {
                    out.push(Stmt::Decl(d));
                }
                return p.expect_punct(';');
            }
            w if !w.starts_with('.') && p.peek_at(1) == Some(&TokKind::Punct(':')) => {
                let name = w.to_string();
                p.pos += 2;
                if p.is_ident(".callprototype") {
                    p.skip_statement();
                    out.push(Stmt::Prototype(name, line));
                } else {
                    out.push(Stmt::Label(name, line));
                }
                return Ok(());
            }
            _ => {}
        }
    }
    let guard = if p.eat_punct('@') {
        let neg = p.eat_punct('!');
        Some((p.ident()?.to_string(), neg))
    } else {
        None
    };
    let opcode = p.ident()?.to_string();
    if opcode.starts_with('.') {
        return Err((line, format!("Unknown directive '{opcode}'")));
    }
    let mut ops = Vec::new();
    if !p.is_punct(';') {
        loop {
            ops.push(operand(p)?);
            if !p.eat_punct(',') {
                break;
            }
        }
    }
    p.expect_punct(';')?;
    out.push(Stmt::Inst(Inst {
        line,
        guard,
        opcode,
        ops,
    }));
    Ok(())
}

fn signed_number(p: &mut Parser) -> Result<Lit, PError> {
    let neg = p.eat_punct('-');
    match p.next() {
        Some(TokKind::Num(s)) => match parse_lit(s) {
            Some(l) => Ok(negate(l, neg)),
            None => p.err(format!("syntax error: bad number '{s}'")),
        },
        _ => p.err("syntax error: expected a number"),
    }
}

fn offset(p: &mut Parser) -> Result<i64, PError> {
    let sign = if p.eat_punct('+') {
        1
    } else if p.eat_punct('-') {
        -1
    } else {
        return Ok(0);
    };
    match signed_number(p)? {
        Lit::Int(v) => i64::try_from(v * sign).or_else(|_| p.err("offset out of range")),
        _ => p.err("syntax error: bad address offset"),
    }
}

fn operand(p: &mut Parser) -> Result<Operand, PError> {
    match p.peek() {
        Some(TokKind::Punct('[')) => {
            p.pos += 1;
            let r = match p.peek() {
                Some(TokKind::Ident(s)) => {
                    p.pos += 1;
                    let off = offset(p)?;
                    if p.is_punct(',') {
                        // `[a, b, ...]` (texture and surface forms): kept as a list for
                        // the compiler to refuse with the instruction's name.
                        let mut v = vec![Operand::Addr(Some(s.clone()), off)];
                        while p.eat_punct(',') {
                            v.push(operand(p)?);
                        }
                        p.expect_punct(']')?;
                        return Ok(Operand::List(v));
                    }
                    Operand::Addr(Some(s.clone()), off)
                }
                _ => match signed_number(p)? {
                    Lit::Int(v) => {
                        let base = i64::try_from(v).or_else(|_| p.err("address out of range"))?;
                        Operand::Addr(None, base + offset(p)?)
                    }
                    _ => return p.err("syntax error: bad address"),
                },
            };
            p.expect_punct(']')?;
            Ok(r)
        }
        Some(TokKind::Punct('{')) => {
            p.pos += 1;
            let mut v = Vec::new();
            loop {
                v.push(operand(p)?);
                if p.eat_punct('}') {
                    break;
                }
                p.expect_punct(',')?;
            }
            Ok(Operand::Vec(v))
        }
        Some(TokKind::Punct('(')) => {
            p.pos += 1;
            let mut v = Vec::new();
            if !p.eat_punct(')') {
                loop {
                    v.push(operand(p)?);
                    if p.eat_punct(')') {
                        break;
                    }
                    p.expect_punct(',')?;
                }
            }
            Ok(Operand::List(v))
        }
        Some(TokKind::Punct('!')) => {
            p.pos += 1;
            Ok(Operand::Not(p.ident()?.to_string()))
        }
        Some(TokKind::Punct('-') | TokKind::Num(_)) => Ok(Operand::Imm(signed_number(p)?)),
        Some(TokKind::Ident(s)) => {
            p.pos += 1;
            if s == "_" {
                return Ok(Operand::Sink);
            }
            if p.eat_punct('|') {
                let q = p.ident()?;
                return Ok(Operand::Pair(s.clone(), q.to_string()));
            }
            if p.is_punct('+') {
                let off = offset(p)?;
                return Ok(Operand::NameOff(s.clone(), off));
            }
            Ok(Operand::Name(s.clone()))
        }
        _ => p.err(format!("syntax error: expected an operand{}", p.found())),
    }
}

#[cfg(test)]
mod tests {
    use super::super::lex::tokenize;
    use super::*;

    fn parse_ok(s: &str) -> Ast {
        let (ast, errs) = parse(&tokenize(s).unwrap());
        assert!(errs.is_empty(), "{errs:?}");
        ast
    }

    #[test]
    fn literals() {
        assert_eq!(parse_lit("42"), Some(Lit::Int(42)));
        assert_eq!(parse_lit("0x1F"), Some(Lit::Int(31)));
        assert_eq!(parse_lit("017"), Some(Lit::Int(15)));
        assert_eq!(parse_lit("0b101"), Some(Lit::Int(5)));
        assert_eq!(parse_lit("0f3F800000"), Some(Lit::F32(0x3F80_0000)));
        assert_eq!(
            parse_lit("0d3FF0000000000000"),
            Some(Lit::F64(0x3FF0_0000_0000_0000))
        );
        assert_eq!(parse_lit("1.5"), Some(Lit::Dec(1.5)));
        assert_eq!(parse_lit("4294967295U"), Some(Lit::Int(4_294_967_295)));
        assert_eq!(parse_lit("0f3F80"), None);
    }

    #[test]
    fn module_with_function_and_variables() {
        let ast = parse_ok(
            ".version 8.8\n.target sm_80\n.address_size 64\n\
             .global .align 4 .b8 tbl[4] = {1, 2, 3, 4};\n\
             .extern .shared .align 16 .b8 dyn[];\n\
             .visible .entry k(.param .u64 k_param_0, .param .align 8 .b8 k_param_1[16])\n\
             .maxntid 128, 1, 1\n{\n.reg .b32 %r<3>;\n$L1:\n@!%p1 bra $L1;\n\
             ld.param.u64 %rd1, [k_param_0+8];\n shfl.sync.down.b32 %r1|%p2, %r2, 1, 31, -1;\n\
             { .param .b32 param0; call.uni (retval0), f, (param0); }\n ret;\n}\n",
        );
        assert_eq!(ast.version.map(|v| (v.0, v.1)), Some((8, 8)));
        assert_eq!(ast.items.len(), 3);
        let Item::Func(f) = &ast.items[2] else {
            panic!()
        };
        assert!(f.is_entry);
        assert_eq!(f.params.len(), 2);
        assert_eq!(f.params[1].dims, vec![Some(16)]);
        assert_eq!(f.directives[0], ("maxntid".to_string(), vec![128, 1, 1], 7));
        let body = f.body.as_ref().unwrap();
        assert!(matches!(&body[0], Stmt::Decl(d) if d.count == Some(3)));
        assert!(matches!(&body[1], Stmt::Label(l, _) if l == "$L1"));
        let Stmt::Inst(i) = &body[2] else { panic!() };
        assert_eq!(i.guard, Some(("%p1".into(), true)));
        let Stmt::Inst(i) = &body[3] else { panic!() };
        assert_eq!(i.ops[1], Operand::Addr(Some("k_param_0".into()), 8));
        let Stmt::Inst(i) = &body[4] else { panic!() };
        assert_eq!(i.ops[0], Operand::Pair("%r1".into(), "%p2".into()));
        assert_eq!(i.ops[4], Operand::Imm(Lit::Int(-1)));
        assert!(body.contains(&Stmt::Open) && body.contains(&Stmt::Close));
    }

    #[test]
    fn syntax_errors_have_lines() {
        let (_, errs) =
            parse(&tokenize(".version 8.8\n.entry k()\n{\nadd.s32 %r1, [%r2;\nret;\n}\n").unwrap());
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].0, 4);
    }
}

//! Instruction selection: one `match` over every PTX opcode the interpreter
//! implements, each arm checking its modifiers and operands and building the `ir`
//! operation. It is one function of some 800 lines on purpose: one arm per opcode
//! family, read side by side, and split only by opcode.

use super::*;

impl Fcx<'_> {
    /// Lowers one instruction to its main operation (helper operations are emitted
    /// before it; `post`, if set, is emitted after it under the same guard).
    pub(super) fn lower(
        &mut self,
        mn: &str,
        m: &mut Mods,
        i: &parse::Inst,
        post: &mut Option<Op>,
    ) -> Result<Op, String> {
        let opc = i.opcode.as_str();
        Ok(match mn {
            "mov" => self.mov(m, i)?,
            "add" | "sub" | "addc" | "subc" => {
                let ty = m.ty()?;
                let o = self.operands(i, 3)?;
                if ty.is_float() {
                    let op = match mn {
                        "add" => FOp::Add,
                        "sub" => FOp::Sub,
                        _ => return Err(format!("Illegal type in '{opc}'")),
                    };
                    self.float2(op, ty, m, o)?
                } else {
                    let cc = m.has("cc");
                    let sat = m.has("sat");
                    if sat && (ty != Ty::S32 || cc || mn.ends_with('c')) {
                        return Err(format!("Illegal modifier '.sat' in '{opc}'"));
                    }
                    let op = match (mn, cc, sat) {
                        ("add", false, false) => IntOp::Add,
                        ("add", false, true) => IntOp::AddSat,
                        ("add", true, _) => IntOp::AddCc,
                        ("addc", false, _) => IntOp::AddC,
                        ("addc", true, _) => IntOp::AddCCc,
                        ("sub", false, false) => IntOp::Sub,
                        ("sub", false, true) => IntOp::SubSat,
                        ("sub", true, _) => IntOp::SubCc,
                        ("subc", false, _) => IntOp::SubC,
                        _ => IntOp::SubCCc,
                    };
                    self.int_op(op, ty, o)?
                }
            }
            "mul" => {
                let ty = m.ty()?;
                let o = self.operands(i, 3)?;
                if ty.is_float() {
                    self.float2(FOp::Mul, ty, m, o)?
                } else {
                    let op = match m.one_of(&["lo", "hi", "wide"]) {
                        Some("hi") => IntOp::MulHi,
                        Some("wide") if ty.bits() <= 32 => IntOp::MulWide,
                        Some("wide") => return Err(format!("Illegal type in '{opc}'")),
                        _ => IntOp::MulLo,
                    };
                    self.int_op(op, ty, o)?
                }
            }
            "mul24" => {
                let ty = m.ty()?;
                if ty != Ty::U32 && ty != Ty::S32 {
                    return Err(format!("Illegal type in '{opc}'"));
                }
                let op = if m.one_of(&["lo", "hi"]) == Some("hi") {
                    IntOp::Mul24Hi
                } else {
                    IntOp::Mul24Lo
                };
                let o = self.operands(i, 3)?;
                self.int_op(op, ty, o)?
            }
            "mad" | "mad24" | "fma" => {
                let ty = m.ty()?;
                let o = self.operands(i, 4)?;
                if ty.is_float() {
                    if mn == "mad24" {
                        return Err(format!("Illegal type in '{opc}'"));
                    }
                    let f64 = self.float_ty(ty, opc)?;
                    let rnd = self.float_rnd(m);
                    let (ftz, sat) = (m.has("ftz"), m.has("sat"));
                    let (d, a, b, c) = (
                        self.dst(&o[0])?,
                        self.src(&o[1], ty)?,
                        self.src(&o[2], ty)?,
                        self.src(&o[3], ty)?,
                    );
                    match (rnd, f64) {
                        (Rnd::Rn, _) => Op::Fma {
                            f64,
                            ftz,
                            sat,
                            d,
                            a,
                            b,
                            c,
                        },
                        (_, false) => Op::Fma32Dir {
                            ftz,
                            sat,
                            rnd,
                            d,
                            a,
                            b,
                            c,
                        },
                        (_, true) => {
                            return Err(format!(
                                "Unsupported rounding modifier in instruction '{opc}'"
                            ));
                        }
                    }
                } else {
                    if mn == "fma" {
                        return Err(format!("Illegal type in '{opc}'"));
                    }
                    if mn == "mad" && m.has("cc") {
                        let hi = m.one_of(&["lo", "hi"]) == Some("hi");
                        return self.mad_cc(hi, false, true, ty, o);
                    }
                    let op = match (mn, m.one_of(&["lo", "hi", "wide"])) {
                        ("mad24", Some("lo") | None) => Int3Op::Mad24Lo,
                        ("mad24", _) => return Err(format!("Unsupported instruction '{opc}'")),
                        (_, Some("hi")) => Int3Op::MadHi,
                        (_, Some("wide")) if ty.bits() <= 32 => Int3Op::MadWide,
                        (_, Some("wide")) => return Err(format!("Illegal type in '{opc}'")),
                        _ => Int3Op::MadLo,
                    };
                    let cty = if op == Int3Op::MadWide {
                        self.widen(ty)
                    } else {
                        ty
                    };
                    let (d, a, b, c) = (
                        self.dst(&o[0])?,
                        self.src(&o[1], ty)?,
                        self.src(&o[2], ty)?,
                        self.src(&o[3], cty)?,
                    );
                    Op::Int3 {
                        op,
                        ty: int_ty(ty),
                        d,
                        a,
                        b,
                        c,
                    }
                }
            }
            "madc" => {
                let hi = match m.one_of(&["lo", "hi"]) {
                    Some("hi") => true,
                    Some(_) => false,
                    None => return Err(format!("Missing .lo or .hi in '{opc}'")),
                };
                let cout = m.has("cc");
                let ty = m.ty()?;
                let o = self.operands(i, 4)?;
                self.mad_cc(hi, true, cout, ty, o)?
            }
            "div" => {
                let ty = m.ty()?;
                let o = self.operands(i, 3)?;
                if ty.is_float() {
                    let f64 = self.float_ty(ty, opc)?;
                    match m.one_of(&["approx", "full", "rn", "rz", "rm", "rp"]) {
                        Some("approx" | "full") if !f64 => {}
                        Some("rn") | None => {}
                        Some(r) => {
                            return Err(format!(
                                "Unsupported modifier '.{r}' in instruction '{opc}'"
                            ));
                        }
                    }
                    let ftz = m.has("ftz");
                    let (d, a, b) = (self.dst(&o[0])?, self.src(&o[1], ty)?, self.src(&o[2], ty)?);
                    Op::Float {
                        op: FOp::Div,
                        f64,
                        ftz,
                        sat: false,
                        d,
                        a,
                        b,
                    }
                } else {
                    self.int_op(IntOp::Div, ty, o)?
                }
            }
            "rem" => {
                let ty = self.int_only(m, opc)?;
                let o = self.operands(i, 3)?;
                self.int_op(IntOp::Rem, ty, o)?
            }
            "min" | "max" => {
                let ty = m.ty()?;
                let o = self.operands(i, 3)?;
                if ty.is_float() {
                    let f64 = self.float_ty(ty, opc)?;
                    let ftz = m.has("ftz");
                    let op = if mn == "min" { FOp::Min } else { FOp::Max };
                    let (d, a, b) = (self.dst(&o[0])?, self.src(&o[1], ty)?, self.src(&o[2], ty)?);
                    Op::Float {
                        op,
                        f64,
                        ftz,
                        sat: false,
                        d,
                        a,
                        b,
                    }
                } else {
                    self.int_op(if mn == "min" { IntOp::Min } else { IntOp::Max }, ty, o)?
                }
            }
            "abs" | "neg" => {
                let ty = m.ty()?;
                let o = self.operands(i, 2)?;
                if ty.is_float() {
                    let f64 = self.float_ty(ty, opc)?;
                    let ftz = m.has("ftz");
                    let op = if mn == "abs" { FUnOp::Abs } else { FUnOp::Neg };
                    let (d, a) = (self.dst(&o[0])?, self.src(&o[1], ty)?);
                    Op::FloatUn {
                        op,
                        f64,
                        ftz,
                        sat: false,
                        d,
                        a,
                    }
                } else {
                    if !ty.is_signed() {
                        return Err(format!("Illegal type in '{opc}'"));
                    }
                    self.int_un(
                        if mn == "abs" {
                            IntUnOp::Abs
                        } else {
                            IntUnOp::Neg
                        },
                        ty,
                        o,
                    )?
                }
            }
            "sqrt" | "rcp" | "rsqrt" | "sin" | "cos" | "ex2" | "lg2" | "tanh" => {
                let ty = m.ty()?;
                let f64 = self.float_ty(ty, opc)?;
                let approx = m.has("approx");
                let rn = m.has("rn");
                let exact_ok = matches!(mn, "sqrt" | "rcp");
                if approx == rn || (rn && !exact_ok) {
                    return Err(format!(
                        "Missing or unsupported rounding modifier in instruction '{opc}'"
                    ));
                }
                if f64 && approx && !matches!(mn, "rcp" | "rsqrt" | "sqrt") {
                    return Err(format!("Illegal type in '{opc}'"));
                }
                let ftz = m.has("ftz");
                let op = match mn {
                    "sqrt" => FUnOp::Sqrt,
                    "rcp" => FUnOp::Rcp,
                    "rsqrt" => FUnOp::Rsqrt,
                    "sin" => FUnOp::Sin,
                    "cos" => FUnOp::Cos,
                    "ex2" => FUnOp::Ex2,
                    "lg2" => FUnOp::Lg2,
                    _ => FUnOp::Tanh,
                };
                let o = self.operands(i, 2)?;
                let (d, a) = (self.dst(&o[0])?, self.src(&o[1], ty)?);
                Op::FloatUn {
                    op,
                    f64,
                    ftz,
                    sat: false,
                    d,
                    a,
                }
            }
            "copysign" => {
                let ty = m.ty()?;
                let f64 = self.float_ty(ty, opc)?;
                let o = self.operands(i, 3)?;
                let (d, a, b) = (self.dst(&o[0])?, self.src(&o[1], ty)?, self.src(&o[2], ty)?);
                Op::Float {
                    op: FOp::Copysign,
                    f64,
                    ftz: false,
                    sat: false,
                    d,
                    a,
                    b,
                }
            }
            "testp" => {
                let t = match m.one_of(&[
                    "finite",
                    "infinite",
                    "number",
                    "notanumber",
                    "normal",
                    "subnormal",
                ]) {
                    Some("finite") => TestP::Finite,
                    Some("infinite") => TestP::Infinite,
                    Some("number") => TestP::Number,
                    Some("notanumber") => TestP::NotANumber,
                    Some("normal") => TestP::Normal,
                    Some("subnormal") => TestP::Subnormal,
                    _ => return Err(format!("Missing property in instruction '{opc}'")),
                };
                let ty = m.ty()?;
                let f64 = self.float_ty(ty, opc)?;
                let o = self.operands(i, 2)?;
                let (d, a) = (self.dst(&o[0])?, self.src(&o[1], ty)?);
                Op::Testp { t, f64, d, a }
            }
            "and" | "or" | "xor" => {
                let ty = m.ty()?;
                let o = self.operands(i, 3)?;
                let op = match mn {
                    "and" => IntOp::And,
                    "or" => IntOp::Or,
                    _ => IntOp::Xor,
                };
                self.int_op(op, ty, o)?
            }
            "not" | "cnot" | "popc" | "clz" | "brev" | "bfind" => {
                let ty = m.ty()?;
                if !(ty.is_int() || (ty == Ty::Pred && mn == "not")) {
                    return Err(format!("Illegal type in '{opc}'"));
                }
                let op = match mn {
                    "not" => IntUnOp::Not,
                    "cnot" => IntUnOp::Cnot,
                    "popc" => IntUnOp::Popc,
                    "clz" => IntUnOp::Clz,
                    "brev" => IntUnOp::Brev,
                    _ if m.has("shiftamt") => IntUnOp::BfindShift,
                    _ => IntUnOp::Bfind,
                };
                let o = self.operands(i, 2)?;
                self.int_un(op, ty, o)?
            }
            "shl" | "shr" => {
                let ty = self.int_only(m, opc)?;
                let o = self.operands(i, 3)?;
                let (d, a, b) = (
                    self.dst(&o[0])?,
                    self.src(&o[1], ty)?,
                    self.src(&o[2], Ty::U32)?,
                );
                Op::Int {
                    op: if mn == "shl" { IntOp::Shl } else { IntOp::Shr },
                    ty: int_ty(ty),
                    d,
                    a,
                    b,
                }
            }
            "bfe" => {
                let ty = self.int_only(m, opc)?;
                let o = self.operands(i, 4)?;
                let (d, a, b, c) = (
                    self.dst(&o[0])?,
                    self.src(&o[1], ty)?,
                    self.src(&o[2], Ty::U32)?,
                    self.src(&o[3], Ty::U32)?,
                );
                Op::Int3 {
                    op: Int3Op::Bfe,
                    ty: int_ty(ty),
                    d,
                    a,
                    b,
                    c,
                }
            }
            "bfi" => {
                let ty = self.int_only(m, opc)?;
                let o = self.operands(i, 5)?;
                let d = self.dst(&o[0])?;
                let (a, b) = (self.src(&o[1], ty)?, self.src(&o[2], ty)?);
                let (pos, len) = (self.src(&o[3], Ty::U32)?, self.src(&o[4], Ty::U32)?);
                Op::Bfi {
                    bits: ty.bits() as u8,
                    d,
                    a,
                    b,
                    pos,
                    len,
                }
            }
            "prmt" => {
                let ty = m.ty()?;
                if ty != Ty::B32 {
                    return Err(format!("Illegal type in '{opc}'"));
                }
                let o = self.operands(i, 4)?;
                let (d, a, b, c) = (
                    self.dst(&o[0])?,
                    self.src(&o[1], ty)?,
                    self.src(&o[2], ty)?,
                    self.src(&o[3], ty)?,
                );
                Op::Prmt { d, a, b, c }
            }
            "shf" => {
                let left = match m.one_of(&["l", "r"]) {
                    Some("l") => true,
                    Some(_) => false,
                    None => return Err(format!("Missing direction in '{opc}'")),
                };
                let clamp = match m.one_of(&["wrap", "clamp"]) {
                    Some("clamp") => true,
                    Some(_) => false,
                    None => return Err(format!("Missing mode in '{opc}'")),
                };
                if m.ty()? != Ty::B32 {
                    return Err(format!("Illegal type in '{opc}'"));
                }
                let o = self.operands(i, 4)?;
                let (d, a, b, c) = (
                    self.dst(&o[0])?,
                    self.src(&o[1], Ty::B32)?,
                    self.src(&o[2], Ty::B32)?,
                    self.src(&o[3], Ty::U32)?,
                );
                Op::Shf {
                    left,
                    clamp,
                    d,
                    a,
                    b,
                    c,
                }
            }
            "lop3" => {
                if m.ty()? != Ty::B32 {
                    return Err(format!("Illegal type in '{opc}'"));
                }
                let o = self.operands(i, 5)?;
                let lut = match &o[4] {
                    Operand::Imm(Lit::Int(v)) if (0..=255).contains(v) => *v as u8,
                    _ => return Err("lop3 needs an immediate lookup table".into()),
                };
                let (d, a, b, c) = (
                    self.dst(&o[0])?,
                    self.src(&o[1], Ty::B32)?,
                    self.src(&o[2], Ty::B32)?,
                    self.src(&o[3], Ty::B32)?,
                );
                Op::Lop3 { d, a, b, c, lut }
            }
            "sad" => {
                let ty = self.int_only(m, opc)?;
                let o = self.operands(i, 4)?;
                let (d, a, b, c) = (
                    self.dst(&o[0])?,
                    self.src(&o[1], ty)?,
                    self.src(&o[2], ty)?,
                    self.src(&o[3], ty)?,
                );
                Op::Int3 {
                    op: Int3Op::Sad,
                    ty: int_ty(ty),
                    d,
                    a,
                    b,
                    c,
                }
            }
            "setp" => self.setp(m, i)?,
            "selp" => {
                let ty = m.ty()?;
                let o = self.operands(i, 4)?;
                let (d, a, b, c) = (
                    self.dst(&o[0])?,
                    self.src(&o[1], ty)?,
                    self.src(&o[2], ty)?,
                    self.src(&o[3], Ty::Pred)?,
                );
                Op::Selp { d, a, b, c }
            }
            "cvt" => self.cvt(m, i)?,
            "cvta" => {
                let to = m.has("to");
                let space =
                    space_mod(m).ok_or_else(|| format!("Missing state space in '{opc}'"))?;
                let ty = m.ty()?;
                if ty != Ty::U64 && ty != Ty::U32 {
                    return Err(format!("Illegal type in '{opc}'"));
                }
                let o = self.operands(i, 2)?;
                let d = self.dst(&o[0])?;
                if let Operand::Name(n) | Operand::NameOff(n, _) = &o[1]
                    && let Some(
                        sym @ (Sym::Shared(_)
                        | Sym::Global(_)
                        | Sym::Frame { param: false, .. }
                        | Sym::KParam { .. }),
                    ) = self.lookup(n)
                {
                    // cvta of a variable: its generic address directly.
                    let off = if let Operand::NameOff(_, off) = &o[1] {
                        *off
                    } else {
                        0
                    };
                    if to {
                        return Err(format!("Bad operand in '{opc}'"));
                    }
                    let (sp, a) = self.sym_addr(sym, n, off)?;
                    return Ok(Op::AddrOf {
                        d,
                        a,
                        space: sp,
                        generic: true,
                        bits32: ty == Ty::U32,
                    });
                }
                let a = self.src(&o[1], Ty::U64)?;
                Op::Cvta {
                    to,
                    space,
                    bits32: ty == Ty::U32,
                    d,
                    a,
                }
            }
            "mapa" | "getctarank" => {
                let cluster = m.has("shared::cluster");
                let ty = m.ty()?;
                if !matches!(ty, Ty::U32 | Ty::U64) {
                    return Err(format!("Illegal type in '{opc}'"));
                }
                if mn == "mapa" {
                    let o = self.operands(i, 3)?;
                    let d = self.dst(&o[0])?;
                    let (a, rank) = (self.src(&o[1], ty)?, self.src(&o[2], Ty::U32)?);
                    Op::Mapa {
                        d,
                        a,
                        rank,
                        generic: !cluster,
                        bits32: ty == Ty::U32,
                    }
                } else {
                    let o = self.operands(i, 2)?;
                    let d = self.dst(&o[0])?;
                    let a = self.src(&o[1], ty)?;
                    Op::GetCtaRank {
                        d,
                        a,
                        generic: !cluster,
                    }
                }
            }
            "isspacep" => {
                let space =
                    space_mod(m).ok_or_else(|| format!("Missing state space in '{opc}'"))?;
                let o = self.operands(i, 2)?;
                let (d, a) = (self.dst(&o[0])?, self.src(&o[1], Ty::U64)?);
                Op::Isspacep { space, d, a }
            }
            "ld" | "ldu" | "st" => self.ldst(mn == "st", m, i, post)?,
            "atom" | "red" => self.atom(mn == "red", m, i, post)?,
            "tex" | "txq" | "suld" | "sust" | "suq" => self.texture(mn, m, i)?,
            "bra" => {
                m.ignore(&["uni"]);
                let o = self.operands(i, 1)?;
                let Operand::Name(label) = &o[0] else {
                    return Err("bra needs a label".into());
                };
                if matches!(self.lookup(label), Some(Sym::Reg(_))) {
                    return Err("Indirect branches are not supported".into());
                }
                self.fixups
                    .push((self.prog.code.len(), label.clone(), i.line));
                Op::Bra { target: 0 }
            }
            "call" => {
                m.ignore(&["uni"]);
                self.call(i)?
            }
            "ret" => {
                m.ignore(&["uni"]);
                self.operands(i, 0)?;
                Op::Ret
            }
            "exit" => {
                self.operands(i, 0)?;
                Op::Exit
            }
            "trap" => {
                self.operands(i, 0)?;
                Op::Trap
            }
            "bar" | "barrier" => self.barrier(mn, m, i)?,
            "membar" => {
                m.one_of(&["cta", "gl", "sys", "proxy"]);
                m.ignore(&["alias"]);
                Op::Fence
            }
            "fence" => {
                m.ignore(&[
                    "sc",
                    "acq_rel",
                    "acquire",
                    "release",
                    "relaxed",
                    "cta",
                    "gpu",
                    "sys",
                    "cluster",
                    "proxy",
                    "alias",
                    "async",
                    "global",
                    "shared",
                    "cta",
                    "mbarrier_init",
                ]);
                Op::Fence
            }
            "shfl" => {
                if !m.has("sync") {
                    return Err(format!("Unsupported instruction '{opc}' (only shfl.sync)"));
                }
                let mode = match m.one_of(&["up", "down", "bfly", "idx"]) {
                    Some("up") => ShflMode::Up,
                    Some("down") => ShflMode::Down,
                    Some("bfly") => ShflMode::Bfly,
                    Some(_) => ShflMode::Idx,
                    None => return Err(format!("Missing mode in '{opc}'")),
                };
                if m.ty()? != Ty::B32 {
                    return Err(format!("Illegal type in '{opc}'"));
                }
                let o = self.operands(i, 5)?;
                let (d, p) = match &o[0] {
                    Operand::Pair(d, p) => (self.reg(d)?, self.reg(p)?),
                    other => (self.dst(other)?, NO_REG),
                };
                let a = self.src(&o[1], Ty::B32)?;
                let b = self.src(&o[2], Ty::U32)?;
                let c = self.src(&o[3], Ty::U32)?;
                let mask = self.src(&o[4], Ty::B32)?;
                Op::Shfl {
                    mode,
                    d,
                    p,
                    a,
                    b,
                    c,
                    mask,
                }
            }
            "vote" => {
                if !m.has("sync") {
                    return Err(format!("Unsupported instruction '{opc}' (only vote.sync)"));
                }
                let mode = match m.one_of(&["all", "any", "uni", "ballot"]) {
                    Some("all") => VoteMode::All,
                    Some("any") => VoteMode::Any,
                    Some("uni") => VoteMode::Uni,
                    Some(_) => VoteMode::Ballot,
                    None => return Err(format!("Missing mode in '{opc}'")),
                };
                let ty = m.ty()?;
                if (mode == VoteMode::Ballot) != (ty == Ty::B32)
                    || (ty != Ty::B32 && ty != Ty::Pred)
                {
                    return Err(format!("Illegal type in '{opc}'"));
                }
                let o = self.operands(i, 3)?;
                let (d, a, mask) = (
                    self.dst(&o[0])?,
                    self.src(&o[1], Ty::Pred)?,
                    self.src(&o[2], Ty::B32)?,
                );
                Op::Vote { mode, d, a, mask }
            }
            "activemask" => {
                if m.ty()? != Ty::B32 {
                    return Err(format!("Illegal type in '{opc}'"));
                }
                let o = self.operands(i, 1)?;
                Op::Activemask {
                    d: self.dst(&o[0])?,
                }
            }
            "redux" => {
                if !m.has("sync") {
                    return Err(format!("Missing '.sync' in '{opc}'"));
                }
                let op = match m.one_of(&["add", "min", "max", "and", "or", "xor"]) {
                    Some("add") => ReduxOp::Add,
                    Some("min") => ReduxOp::Min,
                    Some("max") => ReduxOp::Max,
                    Some("and") => ReduxOp::And,
                    Some("or") => ReduxOp::Or,
                    Some(_) => ReduxOp::Xor,
                    None => return Err(format!("Missing operation in '{opc}'")),
                };
                let ty = m.ty()?;
                if !matches!(ty, Ty::U32 | Ty::S32 | Ty::B32) {
                    return Err(format!("Illegal type in '{opc}'"));
                }
                let o = self.operands(i, 3)?;
                let (d, a, mask) = (
                    self.dst(&o[0])?,
                    self.src(&o[1], ty)?,
                    self.src(&o[2], Ty::B32)?,
                );
                Op::Redux {
                    op,
                    signed: ty == Ty::S32,
                    d,
                    a,
                    mask,
                }
            }
            "match" => {
                let all = match m.one_of(&["any", "all"]) {
                    Some("all") => true,
                    Some(_) => false,
                    None => return Err(format!("Missing mode in '{opc}'")),
                };
                if !m.has("sync") {
                    return Err(format!("Missing '.sync' in '{opc}'"));
                }
                let ty = m.ty()?;
                if ty != Ty::B32 && ty != Ty::B64 {
                    return Err(format!("Illegal type in '{opc}'"));
                }
                let o = self.operands(i, 3)?;
                let (a, mask) = (self.src(&o[1], ty)?, self.src(&o[2], Ty::B32)?);
                let bits64 = ty == Ty::B64;
                if all {
                    let (d, p) = match &o[0] {
                        Operand::Pair(d, p) => (self.reg(d)?, self.reg(p)?),
                        other => (self.dst(other)?, NO_REG),
                    };
                    Op::MatchAll {
                        bits64,
                        d,
                        p,
                        a,
                        mask,
                    }
                } else {
                    Op::MatchAny {
                        bits64,
                        d: self.dst(&o[0])?,
                        a,
                        mask,
                    }
                }
            }
            "nanosleep" | "prefetch" | "prefetchu" | "pmevent" | "griddepcontrol" => {
                m.ignore(&[
                    "u32",
                    "global",
                    "local",
                    "L1",
                    "L2",
                    "launch_dependents",
                    "wait",
                    "mask",
                    "tensormap",
                    "const",
                    "param",
                ]);
                m.ignore_prefix("L2::", "");
                Op::Nop
            }
            _ => {
                if UNSUPPORTED_INSTS.contains(&mn) {
                    return Err(format!("Unsupported instruction '{opc}'"));
                }
                return Err(format!("Unknown instruction '{opc}'"));
            }
        })
    }
}

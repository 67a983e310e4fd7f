//! The lowering of the instruction families that need more than a line or two:
//! float and integer arithmetic forms, `mov`, `setp`, `cvt`, loads and stores,
//! atomics, barriers and calls (used by `lower`).

use super::*;

impl Fcx<'_> {
    /// The rounding modifier of float arithmetic (`.rn` when none is given).
    pub(super) fn float_rnd(&mut self, m: &mut Mods) -> Rnd {
        match m.one_of(&["rn", "rz", "rm", "rp"]) {
            Some("rz") => Rnd::Rz,
            Some("rm") => Rnd::Rm,
            Some("rp") => Rnd::Rp,
            _ => Rnd::Rn,
        }
    }

    /// `add`, `sub`, `mul` of floats, with any rounding.
    pub(super) fn float2(
        &mut self,
        op: FOp,
        ty: Ty,
        m: &mut Mods,
        o: &[Operand],
    ) -> Result<Op, String> {
        let f64 = self.float_ty(ty, m.opcode)?;
        let rnd = self.float_rnd(m);
        let (ftz, sat) = (m.has("ftz"), m.has("sat"));
        let (d, a, b) = (self.dst(&o[0])?, self.src(&o[1], ty)?, self.src(&o[2], ty)?);
        Ok(if rnd == Rnd::Rn {
            Op::Float {
                op,
                f64,
                ftz,
                sat,
                d,
                a,
                b,
            }
        } else {
            Op::FloatDir {
                op,
                f64,
                ftz,
                sat,
                rnd,
                d,
                a,
                b,
            }
        })
    }

    /// `mad.cc` and `madc`.
    pub(super) fn mad_cc(
        &mut self,
        hi: bool,
        cin: bool,
        cout: bool,
        ty: Ty,
        o: &[Operand],
    ) -> Result<Op, String> {
        if !matches!(ty, Ty::U32 | Ty::S32 | Ty::U64 | Ty::S64) {
            return Err("Illegal type in mad.cc / madc".into());
        }
        let (d, a, b, c) = (
            self.dst(&o[0])?,
            self.src(&o[1], ty)?,
            self.src(&o[2], ty)?,
            self.src(&o[3], ty)?,
        );
        Ok(Op::MadCc {
            mode: CarryMode { hi, cin, cout },
            ty: int_ty(ty),
            d,
            a,
            b,
            c,
        })
    }

    /// Whether a float type is f64 (f32 otherwise); f16 arithmetic is refused.
    pub(super) fn float_ty(&self, ty: Ty, opc: &str) -> Result<bool, String> {
        match ty {
            Ty::F32 => Ok(false),
            Ty::F64 => Ok(true),
            Ty::F16 => Err(format!("Unsupported type '.f16' in instruction '{opc}'")),
            _ => Err(format!("Illegal type in '{opc}'")),
        }
    }

    pub(super) fn int_only(&mut self, m: &mut Mods, opc: &str) -> Result<Ty, String> {
        let ty = m.ty()?;
        if !ty.is_int() {
            return Err(format!("Illegal type in '{opc}'"));
        }
        Ok(ty)
    }

    pub(super) fn widen(&self, ty: Ty) -> Ty {
        match ty {
            Ty::U16 => Ty::U32,
            Ty::S16 => Ty::S32,
            Ty::U32 => Ty::U64,
            Ty::S32 => Ty::S64,
            _ => Ty::B64,
        }
    }

    pub(super) fn int_op(&mut self, op: IntOp, ty: Ty, o: &[Operand]) -> Result<Op, String> {
        if ty.is_float() {
            return Err(format!("Illegal type for integer operation '{op:?}'"));
        }
        let (d, a, b) = (self.dst(&o[0])?, self.src(&o[1], ty)?, self.src(&o[2], ty)?);
        Ok(Op::Int {
            op,
            ty: int_ty(ty),
            d,
            a,
            b,
        })
    }

    pub(super) fn int_un(&mut self, op: IntUnOp, ty: Ty, o: &[Operand]) -> Result<Op, String> {
        let (d, a) = (self.dst(&o[0])?, self.src(&o[1], ty)?);
        Ok(Op::IntUn {
            op,
            ty: int_ty(ty),
            d,
            a,
        })
    }

    pub(super) fn mov(&mut self, m: &mut Mods, i: &parse::Inst) -> Result<Op, String> {
        let ty = m.ty()?;
        let o = self.operands(i, 2)?;
        let bits = ty.bits();
        match (&o[0], &o[1]) {
            (Operand::Vec(ds), src) => {
                let n = ds.len();
                if !matches!(n, 2 | 4) || bits % n as u32 != 0 {
                    return Err("Bad vector operand of mov".into());
                }
                let a = self.src(src, ty)?;
                let mut d = [NO_REG; 4];
                for (k, x) in ds.iter().enumerate() {
                    d[k] = self.dst(x)?;
                }
                Ok(Op::Unpack {
                    d,
                    n: n as u8,
                    bits: (bits / n as u32) as u8,
                    a,
                })
            }
            (dst, Operand::Vec(parts)) => {
                let n = parts.len();
                if !matches!(n, 2 | 4) || bits % n as u32 != 0 {
                    return Err("Bad vector operand of mov".into());
                }
                let pty = Ty::from_name(&format!("b{}", bits / n as u32))
                    .ok_or("Bad vector operand of mov")?;
                let mut p = [NO_REG; 4];
                for (k, x) in parts.iter().enumerate() {
                    p[k] = self.src(x, pty)?;
                }
                Ok(Op::Pack {
                    d: self.dst(dst)?,
                    parts: p,
                    n: n as u8,
                    bits: (bits / n as u32) as u8,
                })
            }
            (dst, Operand::Name(n)) if self.lookup(n).is_none() && special(n).is_some() => {
                let d = self.dst(dst)?;
                let (sr, _) = special(n).ok_or("special")?;
                Ok(Op::Special { d, sr })
            }
            (dst, Operand::Name(n) | Operand::NameOff(n, _))
                if matches!(
                    self.lookup(n),
                    Some(
                        Sym::Shared(_)
                            | Sym::Global(_)
                            | Sym::KParam { .. }
                            | Sym::Frame { param: false, .. }
                    )
                ) =>
            {
                let d = self.dst(dst)?;
                let off = if let Operand::NameOff(_, off) = &o[1] {
                    *off
                } else {
                    0
                };
                let sym = self.lookup(n).ok_or("symbol")?;
                let (space, a) = self.sym_addr(sym, n, off)?;
                Ok(Op::AddrOf {
                    d,
                    a,
                    space,
                    generic: false,
                    bits32: bits == 32,
                })
            }
            (dst, src) => {
                let a = self.src(src, ty)?;
                Ok(Op::Mov {
                    d: self.dst(dst)?,
                    a,
                    bits: bits as u8,
                })
            }
        }
    }

    pub(super) fn setp(&mut self, m: &mut Mods, i: &parse::Inst) -> Result<Op, String> {
        let opc = i.opcode.as_str();
        let cmp = match m.one_of(&[
            "eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs", "equ", "neu", "ltu", "leu",
            "gtu", "geu", "num", "nan",
        ]) {
            Some("eq") => Cmp::Eq,
            Some("ne") => Cmp::Ne,
            Some("lt") => Cmp::Lt,
            Some("le") => Cmp::Le,
            Some("gt") => Cmp::Gt,
            Some("ge") => Cmp::Ge,
            Some("lo") => Cmp::Lo,
            Some("ls") => Cmp::Ls,
            Some("hi") => Cmp::Hi,
            Some("hs") => Cmp::Hs,
            Some("equ") => Cmp::Equ,
            Some("neu") => Cmp::Neu,
            Some("ltu") => Cmp::Ltu,
            Some("leu") => Cmp::Leu,
            Some("gtu") => Cmp::Gtu,
            Some("geu") => Cmp::Geu,
            Some("num") => Cmp::Num,
            Some(_) => Cmp::Nan,
            None => return Err(format!("Missing comparison in '{opc}'")),
        };
        let bop = match m.one_of(&["and", "or", "xor"]) {
            Some("and") => BoolOp::And,
            Some("or") => BoolOp::Or,
            Some(_) => BoolOp::Xor,
            None => BoolOp::None,
        };
        let ftz = m.has("ftz");
        let ty = m.ty()?;
        let float_cmp = matches!(
            cmp,
            Cmp::Equ | Cmp::Neu | Cmp::Ltu | Cmp::Leu | Cmp::Gtu | Cmp::Geu | Cmp::Num | Cmp::Nan
        );
        let unsigned_cmp = matches!(cmp, Cmp::Lo | Cmp::Ls | Cmp::Hi | Cmp::Hs);
        if ty == Ty::Pred || (ty.is_float() && unsigned_cmp) || (!ty.is_float() && float_cmp) {
            return Err(format!("Illegal comparison or type in '{opc}'"));
        }
        let n = if bop == BoolOp::None { 3 } else { 4 };
        let o = self.operands(i, n)?;
        let (p, q) = match &o[0] {
            Operand::Pair(p, q) => (self.reg(p)?, self.reg(q)?),
            other => (self.dst(other)?, NO_REG),
        };
        let (a, b) = (self.src(&o[1], ty)?, self.src(&o[2], ty)?);
        let c = if bop == BoolOp::None {
            NO_REG
        } else {
            self.src(&o[3], Ty::Pred)?
        };
        Ok(Op::Setp {
            cmp,
            ty,
            ftz,
            bop,
            p,
            q,
            a,
            b,
            c,
        })
    }

    pub(super) fn cvt(&mut self, m: &mut Mods, i: &parse::Inst) -> Result<Op, String> {
        let opc = i.opcode.as_str();
        let rnd = match m.one_of(&["rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi"]) {
            Some("rn") => Rnd::Rn,
            Some("rz") => Rnd::Rz,
            Some("rm") => Rnd::Rm,
            Some("rp") => Rnd::Rp,
            Some("rni") => Rnd::Rni,
            Some("rzi") => Rnd::Rzi,
            Some("rmi") => Rnd::Rmi,
            Some("rpi") => Rnd::Rpi,
            _ => Rnd::None,
        };
        let ftz = m.has("ftz");
        let sat = m.has("sat");
        let tys = m.types()?;
        let [dty, sty] = tys[..] else {
            return Err(format!(
                "Instruction '{opc}' needs a destination and a source type"
            ));
        };
        if dty == Ty::Pred || sty == Ty::Pred {
            return Err(format!("Illegal type in '{opc}'"));
        }
        let int_rnd = matches!(rnd, Rnd::Rni | Rnd::Rzi | Rnd::Rmi | Rnd::Rpi);
        let fp_rnd = matches!(rnd, Rnd::Rn | Rnd::Rz | Rnd::Rm | Rnd::Rp);
        match (dty.is_float(), sty.is_float()) {
            (false, false) if rnd != Rnd::None => {
                return Err(format!("Illegal rounding modifier in '{opc}'"));
            }
            (false, true) if !int_rnd => {
                return Err(format!(
                    "Rounding modifier required (.rni, .rzi, .rmi or .rpi) in '{opc}'"
                ));
            }
            (true, false) if !fp_rnd => {
                return Err(format!(
                    "Rounding modifier required (.rn, .rz, .rm or .rp) in '{opc}'"
                ));
            }
            (true, true) => {
                let narrowing = dty.bits() < sty.bits();
                if narrowing && !fp_rnd {
                    return Err(format!(
                        "Rounding modifier required (.rn, .rz, .rm or .rp) in '{opc}'"
                    ));
                }
                if int_rnd && dty != sty {
                    return Err(format!("Illegal rounding modifier in '{opc}'"));
                }
            }
            _ => {}
        }
        let o = self.operands(i, 2)?;
        let d = self.dst(&o[0])?;
        let a = self.src(&o[1], sty)?;
        let dbits = self.reg_width(d);
        if !dty.is_float() && !sty.is_float() && !sat && (dbits == dty.bits() || !dty.is_signed()) {
            return Ok(Op::Ext {
                d,
                a,
                from: sty.bits() as u8,
                signed: sty.is_signed(),
                to: dty.bits() as u8,
            });
        }
        Ok(Op::Cvt {
            dty,
            sty,
            rnd,
            sat,
            ftz,
            dbits: dbits as u8,
            d,
            a,
        })
    }

    pub(super) fn ldst(
        &mut self,
        store: bool,
        m: &mut Mods,
        i: &parse::Inst,
        post: &mut Option<Op>,
    ) -> Result<Op, String> {
        let opc = i.opcode.as_str();
        let space = space_mod(m);
        let acquire = m.has("acquire");
        let release = m.has("release");
        m.ignore(&[
            "volatile", "relaxed", "weak", "mmio", "cta", "gpu", "sys", "cluster", "ca", "cg",
            "cs", "lu", "cv", "wb", "wt", "nc", "unified",
        ]);
        m.ignore_prefix("L1::", "");
        m.ignore_prefix("L2::", "L2::cache_hint");
        let n = match m.one_of(&["v2", "v4"]) {
            Some("v2") => 2,
            Some("v4") => 4,
            _ => 1,
        };
        let ty = m.ty()?;
        if ty == Ty::Pred {
            return Err(format!("Illegal type in '{opc}'"));
        }
        let o = self.operands(i, 2)?;
        let (mo, vo) = if store {
            (&o[0], &o[1])
        } else {
            (&o[1], &o[0])
        };
        let (space, a) = self.mem(mo, space)?;
        let elems: Vec<&Operand> = match vo {
            Operand::Vec(v) if n > 1 && v.len() == n => v.iter().collect(),
            Operand::Vec(_) => return Err(format!("Vector operand does not match '{opc}'")),
            x if n == 1 => vec![x],
            _ => return Err(format!("Vector operand expected in '{opc}'")),
        };
        let mut regs = [NO_REG; 4];
        if store {
            if acquire {
                return Err(format!("Illegal modifier '.acquire' in '{opc}'"));
            }
            for (k, e) in elems.iter().enumerate() {
                regs[k] = self.src(e, ty)?;
            }
            if release {
                self.emit(Op::Fence, NO_REG, false);
            }
            if space == MemSpace::KParam || space == MemSpace::Const {
                return Err(format!("Cannot store to that state space in '{opc}'"));
            }
            Ok(Op::St {
                space,
                ty,
                n: n as u8,
                s: regs,
                a,
            })
        } else {
            if release {
                return Err(format!("Illegal modifier '.release' in '{opc}'"));
            }
            // The destinations' register width (sub-word loads extend to it).
            let mut dbits = None;
            for (k, e) in elems.iter().enumerate() {
                regs[k] = self.dst(e)?;
                if regs[k] != self.sink {
                    dbits.get_or_insert(self.reg_width(regs[k]));
                }
            }
            let dbits = dbits.unwrap_or(ty.bits());
            if acquire {
                *post = Some(Op::Fence);
            }
            Ok(Op::Ld {
                space,
                ty,
                n: n as u8,
                dbits: dbits as u8,
                d: regs,
                a,
            })
        }
    }

    pub(super) fn atom(
        &mut self,
        red: bool,
        m: &mut Mods,
        i: &parse::Inst,
        post: &mut Option<Op>,
    ) -> Result<Op, String> {
        let opc = i.opcode.as_str();
        let space = space_mod(m);
        // `.release` orders what came before, `.acquire` what comes after, as the
        // fences of `st.release`/`ld.acquire` do (racecheck also reads them).
        let acq_rel = m.has("acq_rel");
        let acquire = m.has("acquire") || acq_rel;
        let release = m.has("release") || acq_rel;
        if matches!(
            space,
            Some(MemSpace::Local | MemSpace::Const | MemSpace::KParam)
        ) {
            return Err(format!("Illegal state space in '{opc}'"));
        }
        m.ignore(&["relaxed", "sem", "cta", "gpu", "sys", "cluster"]);
        if release {
            self.emit(Op::Fence, NO_REG, false);
        }
        if acquire {
            *post = Some(Op::Fence);
        }
        let op = match m.one_of(&[
            "add", "min", "max", "exch", "cas", "and", "or", "xor", "inc", "dec",
        ]) {
            Some("add") => AtomOp::Add,
            Some("min") => AtomOp::Min,
            Some("max") => AtomOp::Max,
            Some("exch") => AtomOp::Exch,
            Some("cas") => AtomOp::Cas,
            Some("and") => AtomOp::And,
            Some("or") => AtomOp::Or,
            Some("xor") => AtomOp::Xor,
            Some("inc") => AtomOp::Inc,
            Some("dec") => AtomOp::Dec,
            _ => return Err(format!("Missing operation in '{opc}'")),
        };
        let ty = m.ty()?;
        let ok = match op {
            AtomOp::Add => matches!(
                ty,
                Ty::U32 | Ty::S32 | Ty::U64 | Ty::S64 | Ty::F32 | Ty::F64
            ),
            AtomOp::Min | AtomOp::Max => matches!(ty, Ty::U32 | Ty::S32 | Ty::U64 | Ty::S64),
            AtomOp::Inc | AtomOp::Dec => ty == Ty::U32,
            AtomOp::And | AtomOp::Or | AtomOp::Xor => matches!(ty, Ty::B32 | Ty::B64),
            AtomOp::Exch | AtomOp::Cas => matches!(
                ty,
                Ty::B32 | Ty::B64 | Ty::U32 | Ty::S32 | Ty::U64 | Ty::S64
            ),
        };
        if !ok {
            return Err(format!("Unsupported type in instruction '{opc}'"));
        }
        let n = match (red, op == AtomOp::Cas) {
            (true, _) => 2,
            (false, false) => 3,
            (false, true) => 4,
        };
        if red && op == AtomOp::Cas {
            return Err(format!("Illegal operation in '{opc}'"));
        }
        let o = self.operands(i, n)?;
        let (o, d) = if red {
            (o, NO_REG)
        } else {
            (&o[1..], self.dst(&o[0])?)
        };
        let (space, a) = self.mem(&o[0], space)?;
        if !matches!(
            space,
            MemSpace::Global | MemSpace::Shared | MemSpace::Generic
        ) {
            return Err(format!("Illegal state space in '{opc}'"));
        }
        let b = self.src(&o[1], ty)?;
        let c = if op == AtomOp::Cas {
            self.src(&o[2], ty)?
        } else {
            NO_REG
        };
        Ok(Op::Atom {
            space,
            op,
            ty,
            d,
            a,
            b,
            c,
        })
    }

    pub(super) fn barrier(
        &mut self,
        mn: &str,
        m: &mut Mods,
        i: &parse::Inst,
    ) -> Result<Op, String> {
        let opc = i.opcode.as_str();
        if mn == "bar" && m.has("warp") {
            if !m.has("sync") {
                return Err(format!("Unsupported instruction '{opc}'"));
            }
            let o = self.operands(i, 1)?;
            return Ok(Op::WarpSync {
                mask: self.src(&o[0], Ty::B32)?,
            });
        }
        if m.has("cluster") {
            // barrier.cluster.arrive[.release|.relaxed][.aligned],
            // barrier.cluster.wait[.acquire][.aligned]: no operands.
            if mn != "barrier" || !i.ops.is_empty() {
                return Err(format!("Unsupported instruction '{opc}'"));
            }
            m.ignore(&["aligned", "release", "relaxed", "acquire"]);
            return match m.one_of(&["arrive", "wait"]) {
                Some("arrive") => Ok(Op::ClusterBar { arrive: true }),
                Some(_) => Ok(Op::ClusterBar { arrive: false }),
                None => Err(format!("Missing operation in '{opc}'")),
            };
        }
        m.ignore(&["aligned"]);
        let kind = match m.one_of(&["sync", "arrive", "red"]) {
            Some("sync") => BarKind::Sync,
            Some("arrive") => BarKind::Arrive,
            Some(_) => match m.one_of(&["popc", "and", "or"]) {
                Some("popc") => BarKind::RedPopc,
                Some("and") => BarKind::RedAnd,
                Some(_) => BarKind::RedOr,
                None => return Err(format!("Missing operation in '{opc}'")),
            },
            None if mn == "bar" => BarKind::Sync,
            None => return Err(format!("Missing operation in '{opc}'")),
        };
        let o = &i.ops;
        match kind {
            BarKind::Sync | BarKind::Arrive => {
                let need = if kind == BarKind::Arrive { 2 } else { 1 };
                if o.len() < need || o.len() > 2 {
                    return Err(format!("Wrong number of operands in '{opc}'"));
                }
                let id = self.src(&o[0], Ty::U32)?;
                let count = if o.len() == 2 {
                    self.src(&o[1], Ty::U32)?
                } else {
                    NO_REG
                };
                Ok(Op::Bar {
                    kind,
                    id,
                    count,
                    d: NO_REG,
                    p: NO_REG,
                })
            }
            _ => {
                let ty = m.ty()?;
                let want = if kind == BarKind::RedPopc {
                    Ty::U32
                } else {
                    Ty::Pred
                };
                if ty != want {
                    return Err(format!("Illegal type in '{opc}'"));
                }
                if o.len() != 3 && o.len() != 4 {
                    return Err(format!("Wrong number of operands in '{opc}'"));
                }
                let d = self.dst(&o[0])?;
                let id = self.src(&o[1], Ty::U32)?;
                let count = if o.len() == 4 {
                    self.src(&o[2], Ty::U32)?
                } else {
                    NO_REG
                };
                let p = self.src(&o[o.len() - 1], Ty::Pred)?;
                Ok(Op::Bar {
                    kind,
                    id,
                    count,
                    d,
                    p,
                })
            }
        }
    }

    pub(super) fn call(&mut self, i: &parse::Inst) -> Result<Op, String> {
        let mut ops = i.ops.iter().peekable();
        let rets = match ops.peek() {
            Some(Operand::List(l)) => {
                ops.next();
                l.clone()
            }
            _ => Vec::new(),
        };
        let fname = match ops.next() {
            Some(Operand::Name(n)) => n,
            _ => return Err("call needs a function name".into()),
        };
        let args = match ops.next() {
            Some(Operand::List(l)) => l.clone(),
            None => Vec::new(),
            Some(_) => return Err("Bad call arguments".into()),
        };
        if ops.next().is_some() {
            return Err("Indirect calls (with a prototype) are not supported".into());
        }
        let func = match self.lookup(fname) {
            Some(Sym::Func(f)) => f,
            Some(Sym::Reg(_)) => return Err("Indirect calls are not supported".into()),
            _ => return Err(format!("Unknown function '{fname}'")),
        };
        let sig = &self.sigs[func as usize];
        // `vprintf` (device printf) is built in.
        let printf =
            !sig.has_body && fname == "vprintf" && sig.params == [8, 8] && sig.rets.len() <= 1;
        // `cudaGraphSetConditional(handle, value)` (the device runtime's, which NVRTC
        // emits as an extern call with `-rdc`) is built in too.
        let set_cond = !sig.has_body
            && fname == "cudaGraphSetConditional"
            && sig.params == [8, 4]
            && sig.rets.is_empty();
        if !sig.has_body && !printf && !set_cond {
            return Err(format!("Unresolved extern function '{fname}'"));
        }
        if sig.is_entry {
            return Err(format!("Cannot call entry function '{fname}'"));
        }
        if sig.params.len() != args.len() || sig.rets.len() != rets.len() {
            return Err(format!("Call of '{fname}' does not match its declaration"));
        }
        let (psizes, rsizes) = (sig.params.clone(), sig.rets.clone());
        let frame_args = |list: &[Operand], sizes: &[u32]| -> Result<Vec<(u32, u32)>, String> {
            list.iter()
                .zip(sizes)
                .map(|(o, &size)| match o {
                    Operand::Name(n) => match self.lookup(n) {
                        Some(Sym::Frame { off, param: true }) => Ok((off, size)),
                        _ => Err(format!("Call argument '{n}' must be a .param variable")),
                    },
                    _ => Err("Call arguments must be .param variables".into()),
                })
                .collect()
        };
        let args = frame_args(&args, &psizes)?;
        let rets = frame_args(&rets, &rsizes)?;
        self.prog.calls.push(CallSite { func, args, rets });
        let site = self.prog.calls.len() as u32 - 1;
        if printf {
            return Ok(Op::Printf { site });
        }
        if set_cond {
            return Ok(Op::SetConditional { site });
        }
        self.callees.push(func);
        Ok(Op::Call { site })
    }
}

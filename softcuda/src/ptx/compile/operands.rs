//! Names and operands inside a function body: registers, scopes and declarations,
//! the frame, and the resolution of an operand to a register, an address or a
//! constant; [`Fcx::inst`] hands each instruction to `lower`.

use super::*;

impl Fcx<'_> {
    pub(super) fn new_reg(&mut self, bits: u8, declared: bool) -> Reg {
        self.reg_bits.push(bits);
        self.template.push(0);
        self.declared.push(declared);
        self.occ.push((u32::MAX, 0));
        self.reg_bits.len() as Reg - 1
    }

    /// A read-only register holding `v`.
    pub(super) fn constant(&mut self, v: u64) -> Reg {
        if let Some(&r) = self.consts.get(&v) {
            return r;
        }
        let r = self.new_reg(0, false);
        self.template[r as usize] = v;
        self.consts.insert(v, r);
        r
    }

    pub(super) fn alloc_frame(&mut self, size: u32, align: u32) -> u32 {
        let off = align_up(self.frame, align);
        self.frame = off + size;
        self.frame_align = self.frame_align.max(align);
        off
    }

    pub(super) fn emit(&mut self, op: Op, guard: Reg, neg: bool) {
        self.prog.code.push(Inst { op, guard, neg });
        self.prog.lines.push(self.line);
        self.prog.locs.push(self.loc);
    }

    pub(super) fn pc(&self) -> u32 {
        self.prog.code.len() as u32 - self.start
    }

    pub(super) fn lookup(&self, name: &str) -> Option<Sym> {
        for s in self.scopes.iter().rev() {
            if let Some(x) = s.get(name) {
                return Some(*x);
            }
        }
        self.module.get(name).copied()
    }

    pub(super) fn declare(&mut self, name: &str, sym: Sym) -> Result<(), String> {
        let scope = self.scopes.last_mut().ok_or("no scope")?;
        if scope.insert(name.to_string(), sym).is_some() {
            return Err(format!("Duplicate definition of '{name}'"));
        }
        Ok(())
    }

    pub(super) fn decl(&mut self, d: &VarDecl) -> Result<(), String> {
        match d.space {
            DeclSpace::Reg => {
                let ty = Ty::from_name(&d.ty)
                    .ok_or_else(|| format!("Unsupported register type '.{}'", d.ty))?;
                if d.vec != 1 || !d.dims.is_empty() {
                    return Err(format!("Unsupported vector or array register '{}'", d.name));
                }
                let bits = ty.bits() as u8;
                match d.count {
                    Some(n) => {
                        if n > 1 << 20 {
                            return Err(format!("Too many registers '{}<{n}>'", d.name));
                        }
                        for i in 0..n {
                            let r = self.new_reg(bits, true);
                            self.declare(&format!("{}{i}", d.name), Sym::Reg(r))?;
                        }
                    }
                    None => {
                        let r = self.new_reg(bits, true);
                        self.declare(&d.name, Sym::Reg(r))?;
                    }
                }
                if self.reg_bits.len() > (1 << 24) {
                    return Err("Too many registers in one function".into());
                }
                Ok(())
            }
            DeclSpace::Local | DeclSpace::Param => {
                let (_, align, size) = decl_layout(d)?;
                if d.init.is_some() {
                    return Err(format!("Variable '{}' cannot have an initializer", d.name));
                }
                let size = u32::try_from(size)
                    .ok()
                    .filter(|s| *s <= 1 << 24)
                    .ok_or("Local variable too large")?;
                let off = self.alloc_frame(size, align);
                self.declare(
                    &d.name,
                    Sym::Frame {
                        off,
                        param: d.space == DeclSpace::Param,
                    },
                )
            }
            DeclSpace::Shared => {
                let (_, align, size) = decl_layout(d)?;
                let id = shared_var(d, align, size, self.prog)?;
                self.declare(&d.name, Sym::Shared(id))
            }
            DeclSpace::Global | DeclSpace::Const => {
                Err(format!("Unsupported function-scope variable '{}'", d.name))
            }
        }
    }

    /// A declared register by name.
    pub(super) fn reg(&mut self, name: &str) -> Result<Reg, String> {
        match self.lookup(name) {
            Some(Sym::Reg(r)) => {
                let pc = self.pc();
                let o = &mut self.occ[r as usize];
                o.0 = o.0.min(pc);
                o.1 = o.1.max(pc);
                Ok(r)
            }
            Some(_) => Err(format!("'{name}' is not a register")),
            None => Err(format!("Unknown symbol '{name}'")),
        }
    }

    pub(super) fn reg_width(&self, r: Reg) -> u32 {
        u32::from(self.reg_bits.get(r as usize).copied().unwrap_or(64))
    }

    /// A destination register (or the sink for `_`).
    pub(super) fn dst(&mut self, o: &Operand) -> Result<Reg, String> {
        match o {
            Operand::Name(n) => self.reg(n),
            Operand::Sink => Ok(self.sink),
            _ => Err("Destination must be a register".into()),
        }
    }

    /// The address (in its space) of a variable, into a new temporary.
    pub(super) fn addr_of(
        &mut self,
        sym: Sym,
        name: &str,
        off: i64,
        bits32: bool,
        generic: bool,
    ) -> Result<Reg, String> {
        let (space, a) = self.sym_addr(sym, name, off)?;
        let d = self.new_reg(if bits32 { 32 } else { 64 }, false);
        self.emit(
            Op::AddrOf {
                d,
                a,
                space,
                generic,
                bits32,
            },
            NO_REG,
            false,
        );
        Ok(d)
    }

    /// A variable's space and address operand.
    pub(super) fn sym_addr(
        &mut self,
        sym: Sym,
        name: &str,
        off: i64,
    ) -> Result<(MemSpace, Addr), String> {
        let off32 = i32::try_from(off).map_err(|_| "Address offset out of range".to_string())?;
        Ok(match sym {
            Sym::KParam { off: p } => {
                let a = u32::try_from(i64::from(p) + off)
                    .map_err(|_| "Parameter offset out of range".to_string())?;
                (MemSpace::KParam, Addr::Abs(a))
            }
            Sym::Frame { off: f, .. } => {
                let a = u32::try_from(i64::from(f) + off)
                    .map_err(|_| "Frame offset out of range".to_string())?;
                (MemSpace::Local, Addr::Frame(a))
            }
            Sym::Shared(i) => {
                self.shared_refs.push(i);
                (MemSpace::Shared, Addr::Shared(i, off32))
            }
            Sym::Global(i) => {
                let sp = match self.globals.get(i as usize).map(|g| g.space) {
                    Some(Space::Const) => MemSpace::Const,
                    _ => MemSpace::Global,
                };
                (sp, Addr::Global(i, off32))
            }
            Sym::Reg(_) | Sym::Func(_) => return Err(format!("'{name}' is not a variable")),
        })
    }

    /// A source operand of type `ty`, as a register (immediates become constants,
    /// special registers, addresses and negations become temporaries).
    pub(super) fn src(&mut self, o: &Operand, ty: Ty) -> Result<Reg, String> {
        match o {
            Operand::Imm(l) => Ok(self.constant(imm_bits(*l, ty)?)),
            Operand::Name(n) => {
                if n == "WARP_SZ" {
                    return Ok(self.constant(32));
                }
                match self.lookup(n) {
                    Some(Sym::Reg(_)) => self.reg(n),
                    Some(Sym::Func(_)) => {
                        Err(format!("Address of function '{n}' is not supported"))
                    }
                    Some(sym) => {
                        if matches!(sym, Sym::Frame { param: true, .. }) && !self.is_entry {
                            return Err(format!("Address of parameter '{n}' is not supported"));
                        }
                        self.addr_of(sym, n, 0, ty.bits() == 32, false)
                    }
                    None => match special(n) {
                        Some((sr, bits)) => {
                            let d = self.new_reg(bits, false);
                            self.emit(Op::Special { d, sr }, NO_REG, false);
                            Ok(d)
                        }
                        None => Err(format!("Unknown symbol '{n}'")),
                    },
                }
            }
            Operand::NameOff(n, off) => match self.lookup(n) {
                Some(
                    sym @ (Sym::Shared(_)
                    | Sym::Global(_)
                    | Sym::KParam { .. }
                    | Sym::Frame { param: false, .. }),
                ) => self.addr_of(sym, n, *off, ty.bits() == 32, false),
                _ => Err(format!("Bad operand '{n}+{off}'")),
            },
            Operand::Not(n) => {
                let p = self.reg(n)?;
                let d = self.new_reg(1, false);
                self.emit(
                    Op::IntUn {
                        op: IntUnOp::Not,
                        ty: IntTy {
                            bits: 1,
                            signed: false,
                        },
                        d,
                        a: p,
                    },
                    NO_REG,
                    false,
                );
                Ok(d)
            }
            _ => Err("Bad source operand".into()),
        }
    }

    /// A memory operand: its space (from the instruction, or the variable's own for
    /// generic accesses of a variable) and address.
    pub(super) fn mem(
        &mut self,
        o: &Operand,
        space: Option<MemSpace>,
    ) -> Result<(MemSpace, Addr), String> {
        let Operand::Addr(base, off) = o else {
            return Err("Expected a memory operand [...]".into());
        };
        let Some(name) = base else {
            // An absolute address: a constant register.
            let r = self.constant(*off as u64);
            return Ok((space.unwrap_or(MemSpace::Generic), Addr::Reg(r, 0)));
        };
        match self.lookup(name) {
            Some(Sym::Reg(_)) => {
                let off32 =
                    i32::try_from(*off).map_err(|_| "Address offset out of range".to_string())?;
                let r = self.reg(name)?;
                let sp = match space {
                    None => MemSpace::Generic,
                    Some(MemSpace::KParam) if !self.is_entry => {
                        return Err(
                            "ld.param through a register is only supported in kernels".into()
                        );
                    }
                    Some(s) => s,
                };
                Ok((sp, Addr::Reg(r, off32)))
            }
            Some(sym) => {
                let (natural, a) = self.sym_addr(sym, name, *off)?;
                let want = match (space, sym) {
                    (None, _) => natural,
                    // `.param` variables of call sequences and `.func`s live in the frame.
                    (Some(MemSpace::KParam), Sym::Frame { param: true, .. }) => MemSpace::Local,
                    (Some(s), _) => s,
                };
                let ok = want == natural
                    && !(space == Some(MemSpace::Local)
                        && matches!(sym, Sym::Frame { param: true, .. }));
                if !ok {
                    return Err(format!("State space mismatch for '{name}'"));
                }
                Ok((natural, a))
            }
            None => match special(name) {
                Some(_) => Err(format!("Special register '{name}' cannot be an address")),
                None => Err(format!("Unknown symbol '{name}'")),
            },
        }
    }

    pub(super) fn operands<'o>(
        &self,
        i: &'o parse::Inst,
        n: usize,
    ) -> Result<&'o [Operand], String> {
        if i.ops.len() != n {
            return Err(format!(
                "Instruction '{}' takes {n} operands, {} given",
                i.opcode,
                i.ops.len()
            ));
        }
        Ok(&i.ops)
    }

    pub(super) fn inst(&mut self, i: &parse::Inst) -> Result<(), String> {
        let (guard, neg) = match &i.guard {
            Some((p, neg)) => (self.reg(p)?, *neg),
            None => (NO_REG, false),
        };
        let (mn, rest) = i.opcode.split_once('.').unwrap_or((&i.opcode, ""));
        let mut m = Mods::new(&i.opcode, rest);
        let mut post = None;
        let op = self.lower(mn, &mut m, i, &mut post)?;
        m.finish()?;
        self.emit(op, guard, neg);
        if let Some(p) = post {
            self.emit(p, guard, neg);
        }
        Ok(())
    }
}

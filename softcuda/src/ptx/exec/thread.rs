//! Running one thread: the interpreter loop over `ir` operations until the thread
//! blocks, yields or ends, special registers, clocks and device-side `printf`. The
//! loop is one `match` over the operations on purpose (a single dispatch point);
//! what the arms share lives in `memory` and `warp`.

use super::*;

pub(super) fn clock() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

pub(super) fn globaltimer() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

pub(super) fn special(cx: &Ctx, t: &Thread, sr: Sreg) -> u64 {
    let lane = t.lane;
    let k = |d: u8| usize::from(d.min(2));
    match sr {
        Sreg::Tid(d) => u64::from(t.tid[k(d)]),
        Sreg::Ntid(d) => u64::from(cx.block[k(d)]),
        Sreg::Ctaid(d) => u64::from(cx.ctaid[k(d)]),
        Sreg::Nctaid(d) => u64::from(cx.grid[k(d)]),
        Sreg::LaneId => u64::from(lane),
        Sreg::WarpId => u64::from(t.warp),
        Sreg::NWarpId => u64::from(cx.nthreads.div_ceil(32)),
        Sreg::SmId => 0,
        Sreg::NSmId => 1,
        Sreg::GridId => cx.gridid,
        Sreg::Clock => clock() & 0xffff_ffff,
        Sreg::ClockHi => clock() >> 32,
        Sreg::Clock64 => clock(),
        Sreg::GlobalTimer => globaltimer(),
        Sreg::GlobalTimerLo => globaltimer() & 0xffff_ffff,
        Sreg::GlobalTimerHi => globaltimer() >> 32,
        Sreg::LanemaskEq => 1 << lane,
        Sreg::LanemaskLe => (2u64 << lane) - 1,
        Sreg::LanemaskLt => (1u64 << lane) - 1,
        Sreg::LanemaskGe => !((1u64 << lane) - 1) & 0xffff_ffff,
        Sreg::LanemaskGt => !((2u64 << lane) - 1) & 0xffff_ffff,
        Sreg::DynSmem => u64::from(cx.dyn_bytes),
        Sreg::TotalSmem => u64::from(cx.shared_bytes),
        Sreg::ClusterId(d) => u64::from(cx.ctaid[k(d)] / cx.cluster[k(d)]),
        Sreg::NClusterId(d) => u64::from(cx.grid[k(d)] / cx.cluster[k(d)]),
        Sreg::ClusterCtaid(d) => u64::from(cx.ctaid[k(d)] % cx.cluster[k(d)]),
        Sreg::ClusterNctaid(d) => u64::from(cx.cluster[k(d)]),
        Sreg::ClusterCtarank => {
            let [x, y, z] = [0, 1, 2].map(|i| cx.ctaid[i] % cx.cluster[i]);
            u64::from(x + cx.cluster[0] * (y + cx.cluster[1] * z))
        }
        Sreg::ClusterNctarank => u64::from(cx.cluster[0] * cx.cluster[1] * cx.cluster[2]),
        Sreg::IsExplicitCluster => u64::from(cx.explicit_cluster),
        // driver_abi.h: load_env_reg64<1, 2>, high word in %envreg1.
        Sreg::EnvReg(1) => cx.workspace >> 32,
        Sreg::EnvReg(2) => cx.workspace & 0xffff_ffff,
        Sreg::EnvReg(_) => 0,
        Sreg::ReservedSmem(w) => u64::from(match w {
            0 | 3 => cx.reserved_smem,
            1 => cx.reserved_smem + RESERVED_SMEM,
            2 => RESERVED_SMEM,
            _ => cx.reserved_smem + 16,
        }),
    }
}

/// Device memory as `printf` reads it: arguments from the buffer at `args`, strings
/// at generic addresses.
pub(super) struct PrintfSource<'a, 'b> {
    cx: &'a Ctx<'b>,
    cache: &'a mut RegionCache,
    stack: &'a [u8],
    shared: &'a [u8],
    args: u64,
    pos: u64,
    err: Option<LaunchError>,
}

impl PrintfSource<'_, '_> {
    fn load(&mut self, addr: u64, size: u32) -> Option<u64> {
        let (stack, shared) = (self.stack, self.shared);
        match locate(
            self.cx,
            self.cache,
            stack.len(),
            shared.len(),
            &[],
            MemSpace::Generic,
            addr,
            size,
        ) {
            Ok(loc) => Some(read(self.cx, loc, stack, shared, &[], 0, size)),
            Err(e) => {
                self.err = Some(e);
                None
            }
        }
    }
}

impl printf::Source for PrintfSource<'_, '_> {
    fn arg(&mut self, size: u32) -> Option<u64> {
        self.pos = self.pos.next_multiple_of(u64::from(size));
        let v = self.load(self.args.wrapping_add(self.pos), size)?;
        self.pos += u64::from(size);
        Some(v)
    }

    fn string(&mut self, addr: u64, max: usize) -> Option<Vec<u8>> {
        let mut s = Vec::new();
        while s.len() < max {
            match self.load(addr.wrapping_add(s.len() as u64), 1)? as u8 {
                0 => break,
                c => s.push(c),
            }
        }
        Some(s)
    }
}

/// `vprintf(format, args)`: prints, returns the number of arguments used.
pub(super) fn device_printf(
    cx: &Ctx,
    cache: &mut RegionCache,
    t: &Thread,
    shared: &[u8],
    site: u32,
) -> Result<i32, LaunchError> {
    let Some(cs) = cx.prog.calls.get(site as usize) else {
        return Err(LaunchError::IllegalInstruction("bad call site".into()));
    };
    let sb = t.stack_base as usize;
    let arg = |k: usize| {
        cs.args
            .get(k)
            .map_or(0, |&(off, _)| rd(&t.stack, sb + off as usize, 8))
    };
    let (fmt_addr, args) = (arg(0), arg(1));
    if fmt_addr == 0 {
        return Ok(-1);
    }
    let mut src = PrintfSource {
        cx,
        cache,
        stack: &t.stack,
        shared,
        args,
        pos: 0,
        err: None,
    };
    let formatted = printf::Source::string(&mut src, fmt_addr, 1 << 16)
        .and_then(|f| printf::format(&f, &mut src));
    match (formatted, src.err) {
        (Some((text, n)), _) => {
            let mut out = std::io::stdout().lock();
            // Output errors (a closed stdout) must not fail the kernel.
            let _ = out.write_all(&text).and_then(|()| out.flush());
            Ok(n)
        }
        (None, Some(e)) => Err(e),
        (None, None) => Ok(-2),
    }
}

/// Runs one thread until it exits or stops at a barrier or warp collective.
pub(super) fn run_thread(
    cx: &Ctx,
    cache: &mut RegionCache,
    t: &mut Thread,
    shared: &mut [u8],
    bars: &mut [Bar; 16],
    cb: &mut ClusterBar,
    peers: &mut [Vec<u8>],
) -> Result<Stop, LaunchError> {
    let code = cx.code;
    // initcheck and racecheck, read once here (not per operation). (A second,
    // check-free instance of this loop measured slower: it is no longer inlined.)
    let init = cx.checks & (CHECK_INIT | CHECK_GLOBAL) != 0;
    let racing = cx.checks & CHECK_RACE != 0;
    let mut budget = YIELD_AFTER;
    let funcs = &cx.prog.funcs;
    let mut pc = t.pc as usize;
    let mut base = t.reg_base as usize;
    macro_rules! r {
        ($x:expr) => {
            t.regs[base + $x as usize]
        };
    }
    // Where `len` bytes at `addr` of `space` are, for this thread; on failure the
    // thread stops at the access (its pc and frame saved: `report_fault` reads the
    // access from there) with the error.
    macro_rules! locate {
        ($space:expr, $addr:expr, $len:expr) => {
            match locate(
                cx,
                cache,
                t.stack.len(),
                shared.len(),
                peers,
                $space,
                $addr,
                $len,
            ) {
                Ok(loc) => loc,
                Err(e) => fail!(e),
            }
        };
    }
    // Stops with a memory fault at this operation (its position saved).
    macro_rules! fail {
        ($e:expr) => {{
            t.pc = pc as u32;
            t.reg_base = base as u32;
            return Err($e);
        }};
    }
    // Saves the position and stops.
    macro_rules! stop {
        ($s:expr) => {{
            t.pc = pc as u32;
            t.reg_base = base as u32;
            return Ok($s);
        }};
    }
    loop {
        let Some(inst) = code.get(pc) else {
            return Err(LaunchError::IllegalInstruction(format!(
                "jump outside the code (operation {pc})"
            )));
        };
        if inst.guard != NO_REG && (r!(inst.guard) != 0) == inst.neg {
            pc += 1;
            continue;
        }
        match &inst.op {
            Op::Nop => {}
            &Op::Mov { d, a, bits } => r!(d) = r!(a) & mask(u32::from(bits)),
            &Op::Special { d, sr } => r!(d) = special(cx, t, sr),
            Op::AddrOf {
                d,
                a,
                space,
                generic,
                bits32,
            } => {
                let mut v = addr_value(cx, t, base, a);
                if *generic {
                    v = v.wrapping_add(match space {
                        MemSpace::Shared => SHARED_WIN,
                        MemSpace::Local => LOCAL_WIN,
                        MemSpace::KParam => PARAM_WIN,
                        _ => 0,
                    });
                }
                r!(*d) = if *bits32 { v & 0xffff_ffff } else { v };
            }
            &Op::Pack { d, parts, n, bits } => {
                let mut v = 0u64;
                for (k, &p) in parts.iter().take(usize::from(n)).enumerate() {
                    v |= (r!(p) & mask(u32::from(bits))) << (k as u32 * u32::from(bits));
                }
                r!(d) = v;
            }
            &Op::Unpack { d, n, bits, a } => {
                let v = r!(a);
                for (k, &x) in d.iter().take(usize::from(n)).enumerate() {
                    r!(x) = (v >> (k as u32 * u32::from(bits))) & mask(u32::from(bits));
                }
            }
            &Op::Int { op, ty, d, a, b } => {
                r!(d) = arith::int_bin(op, ty, r!(a), r!(b), &mut t.carry);
            }
            &Op::IntUn { op, ty, d, a } => r!(d) = arith::int_un(op, ty, r!(a)),
            &Op::Int3 { op, ty, d, a, b, c } => r!(d) = arith::int3(op, ty, r!(a), r!(b), r!(c)),
            &Op::Bfi {
                bits,
                d,
                a,
                b,
                pos,
                len,
            } => {
                r!(d) = arith::bfi(u32::from(bits), r!(a), r!(b), r!(pos), r!(len));
            }
            &Op::Prmt { d, a, b, c } => r!(d) = arith::prmt(r!(a), r!(b), r!(c)),
            &Op::Shf {
                left,
                clamp,
                d,
                a,
                b,
                c,
            } => r!(d) = arith::shf(left, clamp, r!(a), r!(b), r!(c)),
            &Op::Lop3 { d, a, b, c, lut } => r!(d) = arith::lop3(r!(a), r!(b), r!(c), lut),
            &Op::Float {
                op,
                f64,
                ftz,
                sat,
                d,
                a,
                b,
            } => {
                r!(d) = arith::float_bin(op, f64, ftz, sat, r!(a), r!(b));
            }
            &Op::FloatUn {
                op,
                f64,
                ftz,
                sat,
                d,
                a,
            } => r!(d) = arith::float_un(op, f64, ftz, sat, r!(a)),
            &Op::Fma {
                f64,
                ftz,
                sat,
                d,
                a,
                b,
                c,
            } => r!(d) = arith::fma(f64, ftz, sat, r!(a), r!(b), r!(c)),
            &Op::FloatDir {
                op,
                f64,
                ftz,
                sat,
                rnd,
                d,
                a,
                b,
            } => {
                r!(d) = arith::float_dir(op, f64, ftz, sat, rnd, r!(a), r!(b));
            }
            &Op::Fma32Dir {
                ftz,
                sat,
                rnd,
                d,
                a,
                b,
                c,
            } => {
                r!(d) = arith::fma32_dir(ftz, sat, rnd, r!(a), r!(b), r!(c));
            }
            &Op::MadCc {
                mode,
                ty,
                d,
                a,
                b,
                c,
            } => {
                r!(d) = arith::mad_cc(mode, ty, r!(a), r!(b), r!(c), &mut t.carry);
            }
            &Op::Testp { t: tp, f64, d, a } => r!(d) = u64::from(arith::testp(tp, f64, r!(a))),
            &Op::Setp {
                cmp,
                ty,
                ftz,
                bop,
                p,
                q,
                a,
                b,
                c,
            } => {
                let x = arith::compare(cmp, ty, ftz, r!(a), r!(b));
                let (v, w) = match bop {
                    BoolOp::None => (x, !x),
                    BoolOp::And => (x && r!(c) != 0, !x && r!(c) != 0),
                    BoolOp::Or => (x || r!(c) != 0, !x || r!(c) != 0),
                    BoolOp::Xor => (x ^ (r!(c) != 0), !x ^ (r!(c) != 0)),
                };
                r!(p) = u64::from(v);
                if q != NO_REG {
                    r!(q) = u64::from(w);
                }
            }
            &Op::Selp { d, a, b, c } => r!(d) = if r!(c) != 0 { r!(a) } else { r!(b) },
            &Op::Ext {
                d,
                a,
                from,
                signed,
                to,
            } => {
                let v = if signed {
                    sext(r!(a), u32::from(from)) as u64
                } else {
                    r!(a) & mask(u32::from(from))
                };
                r!(d) = v & mask(u32::from(to));
            }
            &Op::Cvt {
                dty,
                sty,
                rnd,
                sat,
                ftz,
                dbits,
                d,
                a,
            } => {
                r!(d) = arith::cvt(dty, sty, rnd, sat, ftz, u32::from(dbits), r!(a));
            }
            &Op::Cvta {
                to,
                space,
                bits32,
                d,
                a,
            } => {
                let v = r!(a);
                let win = match space {
                    MemSpace::Shared => SHARED_WIN,
                    MemSpace::Local => LOCAL_WIN,
                    MemSpace::KParam => PARAM_WIN,
                    _ => 0,
                };
                let out = if win == 0 {
                    v
                } else if to {
                    if v & WIN_MASK == win { v - win } else { v }
                } else {
                    v.wrapping_add(win)
                };
                r!(d) = if bits32 { out & 0xffff_ffff } else { out };
            }
            &Op::Isspacep { space, d, a } => {
                let win = r!(a) & WIN_MASK;
                r!(d) = u64::from(match space {
                    MemSpace::Shared => win == SHARED_WIN,
                    MemSpace::Local => win == LOCAL_WIN,
                    MemSpace::KParam => win == PARAM_WIN,
                    MemSpace::Global => !matches!(win, SHARED_WIN | LOCAL_WIN | PARAM_WIN),
                    _ => false,
                });
            }
            Op::Ld {
                space,
                ty,
                n,
                dbits,
                d,
                a,
            } => {
                let addr = addr_value(cx, t, base, a);
                let size = ty.bytes();
                let loc = locate!(*space, addr, size * u32::from(*n));
                if init
                    && let Loc::Host(h) = loc
                    && !cx.mem.initialized(h, u64::from(size * u32::from(*n)))
                {
                    report_uninit(cx, t, pc, addr, size * u32::from(*n));
                }
                if racing && let Loc::Shared(o) = loc {
                    race::access(cx, t, pc, o, size * u32::from(*n), false);
                }
                for (k, &x) in d.iter().take(usize::from(*n)).enumerate() {
                    let v = read(cx, loc, &t.stack, shared, peers, k as u32 * size, size);
                    r!(x) = extend(v, *ty, *dbits);
                }
            }
            Op::St { space, ty, n, s, a } => {
                let addr = addr_value(cx, t, base, a);
                let size = ty.bytes();
                let loc = locate!(*space, addr, size * u32::from(*n));
                if init && let Loc::Host(h) = loc {
                    cx.mem.written(h, u64::from(size * u32::from(*n)));
                }
                if racing && let Loc::Shared(o) = loc {
                    race::access(cx, t, pc, o, size * u32::from(*n), true);
                }
                for (k, &x) in s.iter().take(usize::from(*n)).enumerate() {
                    let v = r!(x);
                    let off = k as u32 * size;
                    match loc {
                        Loc::Host(h) => host_write(h + u64::from(off), size, v),
                        Loc::Shared(o) => wr(shared, o + off as usize, size, v),
                        Loc::Peer(r, o) => {
                            if let Some(p) = peers.get_mut(r) {
                                wr(p, o + off as usize, size, v);
                            }
                        }
                        Loc::Local(o) => wr(&mut t.stack, o + off as usize, size, v),
                        Loc::Param(_) => fail!(LaunchError::IllegalAddress {
                            addr,
                            len: u64::from(size),
                        }),
                    }
                }
            }
            Op::Atom {
                space,
                op,
                ty,
                d,
                a,
                b,
                c,
            } => {
                let addr = addr_value(cx, t, base, a);
                let size = ty.bytes();
                let loc = locate!(*space, addr, size);
                if init && let Loc::Host(h) = loc {
                    cx.mem.written(h, u64::from(size));
                }
                let bv = r!(*b);
                let cv = if *c == NO_REG { 0 } else { r!(*c) };
                let old = match loc {
                    Loc::Host(h) => host_atomic(h, size, *op, *ty, bv, cv),
                    Loc::Shared(o) => {
                        let old = rd(shared, o, size);
                        wr(shared, o, size, atom_apply(*op, *ty, old, bv, cv));
                        old
                    }
                    Loc::Peer(r, o) => match peers.get_mut(r) {
                        Some(p) => {
                            let old = rd(p, o, size);
                            wr(p, o, size, atom_apply(*op, *ty, old, bv, cv));
                            old
                        }
                        None => 0,
                    },
                    Loc::Local(o) => {
                        let old = rd(&t.stack, o, size);
                        wr(&mut t.stack, o, size, atom_apply(*op, *ty, old, bv, cv));
                        old
                    }
                    Loc::Param(_) => fail!(LaunchError::IllegalAddress {
                        addr,
                        len: u64::from(size),
                    }),
                };
                if *d != NO_REG {
                    r!(*d) = old;
                }
            }
            &Op::Bra { target } => {
                let back = target as usize <= pc;
                pc = target as usize;
                if back {
                    budget -= 1;
                    if budget == 0 {
                        stop!(Stop::Yield);
                    }
                }
                continue;
            }
            &Op::Call { site } => {
                let Some(cs) = cx.prog.calls.get(site as usize) else {
                    return Err(LaunchError::IllegalInstruction("bad call site".into()));
                };
                let callee = &funcs[cs.func as usize];
                let caller = &funcs[t.func as usize];
                if t.frames.len() >= MAX_CALL_DEPTH {
                    return Err(LaunchError::OutOfResources(format!(
                        "call depth over {MAX_CALL_DEPTH}"
                    )));
                }
                let new_base = base + caller.template.len();
                let caller_sb = t.stack_base as usize;
                let new_sb = (caller_sb + caller.frame_bytes as usize)
                    .next_multiple_of(callee.frame_align as usize);
                let top = new_sb + callee.frame_bytes as usize;
                if top > MAX_STACK {
                    return Err(LaunchError::OutOfResources(format!(
                        "stack overflow ({top} bytes of local memory)"
                    )));
                }
                if t.stack.len() < top {
                    t.stack.resize(top, 0);
                }
                let need = new_base + callee.template.len();
                if t.regs.len() < need {
                    t.regs.resize(need, 0);
                }
                t.regs[new_base..need].copy_from_slice(&callee.template);
                for (&(aoff, asize), &(poff, psize)) in cs.args.iter().zip(&callee.params) {
                    let src = caller_sb + aoff as usize;
                    t.stack
                        .copy_within(src..src + asize.min(psize) as usize, new_sb + poff as usize);
                }
                t.frames.push(Frame {
                    ret_pc: pc as u32 + 1,
                    func: t.func,
                    reg_base: base as u32,
                    stack_base: t.stack_base,
                    site,
                });
                t.func = cs.func;
                t.stack_base = new_sb as u32;
                base = new_base;
                pc = callee.entry as usize;
                continue;
            }
            &Op::Printf { site } => {
                let ret = match device_printf(cx, cache, t, shared, site) {
                    Ok(ret) => ret,
                    Err(e) => fail!(e),
                };
                if let Some(&(roff, rsize)) = cx
                    .prog
                    .calls
                    .get(site as usize)
                    .and_then(|cs| cs.rets.first())
                {
                    let off = t.stack_base as usize + roff as usize;
                    wr(&mut t.stack, off, rsize.min(4), u64::from(ret as u32));
                }
            }
            &Op::SetConditional { site } => {
                let Some(cs) = cx.prog.calls.get(site as usize) else {
                    return Err(LaunchError::IllegalInstruction("bad call site".into()));
                };
                let sb = t.stack_base as usize;
                let arg = |k: usize, size: u32| {
                    cs.args
                        .get(k)
                        .map_or(0, |&(off, _)| rd(&t.stack, sb + off as usize, size))
                };
                let (handle, value) = (arg(0, 8), arg(1, 4) as u32);
                if !cx.mem.set_conditional(handle, value) {
                    fail!(LaunchError::IllegalAddress {
                        addr: handle,
                        len: 4,
                    });
                }
            }
            Op::Ret => match t.frames.pop() {
                None => stop!(Stop::Exit),
                Some(fr) => {
                    let callee = &funcs[t.func as usize];
                    if let Some(cs) = cx.prog.calls.get(fr.site as usize) {
                        for (&(roff, rsize), &(coff, csize)) in cs.rets.iter().zip(&callee.rets) {
                            let src = t.stack_base as usize + coff as usize;
                            let len = rsize.min(csize) as usize;
                            t.stack.copy_within(
                                src..src + len,
                                fr.stack_base as usize + roff as usize,
                            );
                        }
                    }
                    t.func = fr.func;
                    t.stack_base = fr.stack_base;
                    base = fr.reg_base as usize;
                    pc = fr.ret_pc as usize;
                    continue;
                }
            },
            Op::Exit => stop!(Stop::Exit),
            Op::Trap => return Err(LaunchError::Trap),
            &Op::Bar {
                kind, id, count, p, ..
            } => {
                let idv = r!(id);
                if idv >= 16 {
                    return Err(LaunchError::IllegalInstruction(format!(
                        "barrier {idv} out of range 0..16"
                    )));
                }
                let b = &mut bars[idv as usize];
                if count != NO_REG {
                    b.count = r!(count) as u32;
                }
                b.arrived += 1;
                if kind != BarKind::Arrive {
                    if matches!(kind, BarKind::RedPopc | BarKind::RedAnd | BarKind::RedOr) {
                        b.nred += 1;
                        b.ptrue += u32::from(r!(p) != 0);
                    }
                    b.waiting += 1;
                    stop!(Stop::Barrier(idv as u8));
                }
            }
            Op::WarpSync { .. }
            | Op::Shfl { .. }
            | Op::Vote { .. }
            | Op::Activemask { .. }
            | Op::Redux { .. }
            | Op::MatchAny { .. }
            | Op::MatchAll { .. } => stop!(Stop::Warp),
            Op::Fence => {
                fence(Ordering::SeqCst);
                if racing {
                    race::fence(cx);
                }
            }
            &Op::Mapa {
                d,
                a,
                rank,
                generic,
                bits32,
            } => {
                let v = r!(a);
                let off = if generic {
                    if v & WIN_MASK != SHARED_WIN {
                        fail!(LaunchError::IllegalAddress { addr: v, len: 0 });
                    }
                    v - SHARED_WIN
                } else {
                    v
                } & ((1 << CLUSTER_RANK_SHIFT) - 1);
                // The full rank: one outside the cluster (at most 16 blocks) maps to
                // `POISON_RANK`, which no cluster has, so an access through it is an
                // illegal address instead of aliasing a real rank.
                let rank = r!(rank) & 0xffff_ffff;
                let rank = if rank < own_cluster_size(cx) {
                    rank
                } else {
                    POISON_RANK
                };
                let c = (rank + 1) << CLUSTER_RANK_SHIFT | off;
                let out = if generic { SHARED_WIN | c } else { c };
                r!(d) = if bits32 { out & 0xffff_ffff } else { out };
            }
            &Op::GetCtaRank { d, a, generic } => {
                let v = r!(a);
                let v = if generic {
                    v.wrapping_sub(SHARED_WIN)
                } else {
                    v
                };
                let hi = (v >> CLUSTER_RANK_SHIFT) & 0xff;
                r!(d) = if hi == 0 { own_rank(cx) } else { hi - 1 };
            }
            &Op::ClusterBar { arrive: true } => {
                cb.arrived += 1;
                t.cluster_target = cb.phase + 1;
            }
            &Op::ClusterBar { arrive: false } => {
                if cb.phase < t.cluster_target {
                    stop!(Stop::ClusterWait);
                }
            }
            &Op::Tex { site } => {
                let Some(s) = cx.prog.tex.get(site as usize) else {
                    return Err(LaunchError::IllegalInstruction("bad texture site".into()));
                };
                if let Err(e) = super::texture::run(cx, cache, t, base, pc, s) {
                    fail!(e);
                }
            }
        }
        pc += 1;
    }
}

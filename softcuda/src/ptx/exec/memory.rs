//! Memory as a thread sees it: the shared, local and parameter windows, cluster
//! peers' shared memory, and loads, stores and atomics on global memory (relaxed
//! atomic accesses: `crate::devmem`), with each access checked against what the
//! kernel may touch.

use super::*;

/// Splits an address of `space` into its real space and offset (generic addresses
/// by their window; space addresses given in generic form are accepted too).
#[inline(always)]
pub(super) fn resolve(space: MemSpace, addr: u64) -> (MemSpace, u64) {
    let win = addr & WIN_MASK;
    match space {
        MemSpace::Generic => match win {
            SHARED_WIN => (MemSpace::Shared, addr - SHARED_WIN),
            LOCAL_WIN => (MemSpace::Local, addr - LOCAL_WIN),
            PARAM_WIN => (MemSpace::KParam, addr - PARAM_WIN),
            _ => (MemSpace::Global, addr),
        },
        MemSpace::Shared if win == SHARED_WIN => (space, addr - SHARED_WIN),
        MemSpace::Local if win == LOCAL_WIN => (space, addr - LOCAL_WIN),
        MemSpace::KParam if win == PARAM_WIN => (space, addr - PARAM_WIN),
        _ => (space, addr),
    }
}

/// Checks an access of `len` bytes (a power of two) at `addr` and says where it goes.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn locate(
    cx: &Ctx,
    cache: &mut RegionCache,
    stack_len: usize,
    shared_len: usize,
    peers: &[Vec<u8>],
    space: MemSpace,
    addr: u64,
    len: u32,
) -> Result<Loc, LaunchError> {
    let len64 = u64::from(len);
    if addr & (len64 - 1) != 0 {
        return Err(LaunchError::MisalignedAddress { addr });
    }
    let bad = LaunchError::IllegalAddress { addr, len: len64 };
    let (sp, a) = resolve(space, addr);
    let within = |size: usize| a.checked_add(len64).is_some_and(|end| end <= size as u64);
    match sp {
        MemSpace::Shared if within(shared_len) => Ok(Loc::Shared(a as usize)),
        MemSpace::Local if within(stack_len) => Ok(Loc::Local(a as usize)),
        MemSpace::KParam if within(cx.params.len()) => Ok(Loc::Param(a as usize)),
        MemSpace::Global | MemSpace::Const | MemSpace::Generic if cache.check(cx.mem, a, len64) => {
            Ok(Loc::Host(a))
        }
        MemSpace::Shared if a >> 24 != 0 => peer(cx, peers, shared_len, a, len64).ok_or(bad),
        _ => Err(bad),
    }
}

/// Tells the driver's hook ([`DeviceMemory::fault`]) of the memory access thread
/// `t` stopped at with `e` (its pc and frame saved there). The failure path only:
/// nothing of this runs for an access that succeeds, and the interpreter loop only
/// saves its position before returning the error.
#[cold]
#[inline(never)]
pub(super) fn report_fault(cx: &Ctx, t: &Thread, shared_len: usize, e: &LaunchError) {
    let (addr, misaligned) = match *e {
        LaunchError::IllegalAddress { addr, .. } => (addr, false),
        LaunchError::MisalignedAddress { addr } => (addr, true),
        _ => return,
    };
    let (kind, space, len) = match cx.code.get(t.pc as usize).map(|i| &i.op) {
        Some(Op::Ld { space, ty, n, .. }) => (AccessKind::Read, *space, ty.bytes() * u32::from(*n)),
        Some(Op::St { space, ty, n, .. }) => {
            (AccessKind::Write, *space, ty.bytes() * u32::from(*n))
        }
        Some(Op::Atom { space, ty, .. }) => (AccessKind::Atomic, *space, ty.bytes()),
        Some(&Op::Tex { site }) => {
            // A texture or surface object, or the device memory a linear texture reads.
            let Some((kind, space, len)) = super::texture::fault_kind(cx, t, site, addr) else {
                return;
            };
            if space != AccessSpace::Global {
                report(cx, t, kind, space, len, addr, 0, 0, misaligned);
                return;
            }
            (kind, MemSpace::Global, len)
        }
        _ => return, // not an access (`mapa`, a conditional handle, `printf`)
    };
    let (sp, off) = resolve(space, addr);
    let (space, space_len) = match sp {
        MemSpace::Shared => (AccessSpace::Shared, shared_len as u64),
        MemSpace::Local => (AccessSpace::Local, t.stack.len() as u64),
        MemSpace::KParam => (AccessSpace::Param, cx.params.len() as u64),
        MemSpace::Const => (AccessSpace::Const, 0),
        MemSpace::Global | MemSpace::Generic => (AccessSpace::Global, 0),
    };
    report(cx, t, kind, space, len, addr, off, space_len, misaligned);
}

/// Hands the fault of thread `t` to the driver's hook.
#[allow(clippy::too_many_arguments)]
fn report(
    cx: &Ctx,
    t: &Thread,
    kind: AccessKind,
    space: AccessSpace,
    len: u32,
    addr: u64,
    off: u64,
    space_len: u64,
    misaligned: bool,
) {
    let func = cx.prog.funcs.get(t.func as usize);
    let fault = Fault {
        kernel: &cx.kernel.name,
        function: func.map_or("?", |f| f.name.as_str()),
        offset: t.pc.wrapping_sub(func.map_or(0, |f| f.entry)),
        line: cx.prog.lines.get(t.pc as usize).copied().unwrap_or(0),
        loc: loc_of(cx, t.pc),
        tid: t.tid,
        ctaid: cx.ctaid,
        kind,
        space,
        size: len,
        addr,
        offset_in_space: off,
        space_len,
        misaligned,
    };
    cx.mem.fault(&fault);
}

/// Tells the driver's hook ([`DeviceMemory::uninit_read`]) of a load of `len` bytes
/// at global address `addr` by thread `t` at operation `pc` that reads memory
/// nothing has written (initcheck). Only with initcheck on.
#[cold]
#[inline(never)]
pub(super) fn report_uninit(cx: &Ctx, t: &Thread, pc: usize, addr: u64, len: u32) {
    let func = cx.prog.funcs.get(t.func as usize);
    cx.mem.uninit_read(&Fault {
        kernel: &cx.kernel.name,
        function: func.map_or("?", |f| f.name.as_str()),
        offset: (pc as u32).wrapping_sub(func.map_or(0, |f| f.entry)),
        line: cx.prog.lines.get(pc).copied().unwrap_or(0),
        loc: loc_of(cx, pc as u32),
        tid: t.tid,
        ctaid: cx.ctaid,
        kind: AccessKind::Read,
        space: AccessSpace::Global,
        size: len,
        addr,
        offset_in_space: addr,
        space_len: 0,
        misaligned: false,
    });
}

/// A cluster address (`mapa`): rank + 1 in bits 24.., the offset below.
pub(super) const CLUSTER_RANK_SHIFT: u32 = 24;

/// The rank `mapa` gives an address of a block outside the cluster: above any
/// cluster's (at most `MAX_CLUSTER` blocks), and `+ 1` still fits the 8 bits above
/// `CLUSTER_RANK_SHIFT` of a 32-bit shared address.
pub(super) const POISON_RANK: u64 = 0xfe;

/// The blocks of the running block's cluster (1 without a cluster).
pub(super) fn own_cluster_size(cx: &Ctx) -> u64 {
    cx.cluster.iter().map(|&d| u64::from(d.max(1))).product()
}

/// The block's rank in its cluster.
pub(super) fn own_rank(cx: &Ctx) -> u64 {
    let [x, y, z] = [0, 1, 2].map(|i| cx.ctaid[i] % cx.cluster[i].max(1));
    u64::from(x + cx.cluster[0] * (y + cx.cluster[1] * z))
}

/// Where a cluster shared-memory address goes: the block's own memory or a peer's.
#[cold]
pub(super) fn peer(
    cx: &Ctx,
    peers: &[Vec<u8>],
    shared_len: usize,
    a: u64,
    len: u64,
) -> Option<Loc> {
    let rank = (a >> CLUSTER_RANK_SHIFT).checked_sub(1)?;
    let off = a & ((1 << CLUSTER_RANK_SHIFT) - 1);
    let end = off.checked_add(len)?;
    if rank == own_rank(cx) {
        return (end <= shared_len as u64).then_some(Loc::Shared(off as usize));
    }
    let buf = peers.get(usize::try_from(rank).ok()?)?;
    (end <= buf.len() as u64).then_some(Loc::Peer(rank as usize, off as usize))
}

#[inline(always)]
pub(super) fn rd(s: &[u8], off: usize, size: u32) -> u64 {
    // Fixed sizes, so that no call to `memcpy` is made per access.
    fn get<const N: usize>(s: &[u8], off: usize) -> Option<[u8; N]> {
        s.get(off..off + N)?.try_into().ok()
    }
    match size {
        1 => s.get(off).map_or(0, |&b| u64::from(b)),
        2 => get::<2>(s, off).map_or(0, |b| u64::from(u16::from_le_bytes(b))),
        4 => get::<4>(s, off).map_or(0, |b| u64::from(u32::from_le_bytes(b))),
        8 => get::<8>(s, off).map_or(0, u64::from_le_bytes),
        _ => {
            let mut b = [0u8; 8];
            let n = (size as usize).min(8);
            if let Some(src) = s.get(off..off + n) {
                b[..n].copy_from_slice(src);
            }
            u64::from_le_bytes(b)
        }
    }
}

#[inline(always)]
pub(super) fn wr(s: &mut [u8], off: usize, size: u32, v: u64) {
    fn put<const N: usize>(s: &mut [u8], off: usize, b: [u8; N]) {
        if let Some(d) = s.get_mut(off..off + N) {
            d.copy_from_slice(&b);
        }
    }
    match size {
        1 => put(s, off, [v as u8]),
        2 => put(s, off, (v as u16).to_le_bytes()),
        4 => put(s, off, (v as u32).to_le_bytes()),
        8 => put(s, off, v.to_le_bytes()),
        _ => {
            let n = (size as usize).min(8);
            if let Some(dst) = s.get_mut(off..off + n) {
                dst.copy_from_slice(&v.to_le_bytes()[..n]);
            }
        }
    }
}

// SAFETY (the four host-memory functions below): `locate` has checked, through the
// driver's `DeviceMemory`, that [addr, addr+size) is accessible memory that stays
// allocated until the launch ends (the trait's contract: softcuda's driver makes
// every free wait for running launches, see its `devmem` module), and that `addr` is
// aligned to `size` (1, 2, 4 or 8), the
// size and alignment of the atomic type used. Accessing it through atomics keeps
// concurrent kernels on other host threads free of data races.

#[inline(always)]
pub(super) fn host_read(addr: u64, size: u32) -> u64 {
    match size {
        // SAFETY: see above.
        1 => u64::from(unsafe { AtomicU8::from_ptr(addr as *mut u8) }.load(Ordering::Relaxed)),
        // SAFETY: see above.
        2 => u64::from(unsafe { AtomicU16::from_ptr(addr as *mut u16) }.load(Ordering::Relaxed)),
        // SAFETY: see above.
        4 => u64::from(unsafe { AtomicU32::from_ptr(addr as *mut u32) }.load(Ordering::Relaxed)),
        // SAFETY: see above.
        _ => unsafe { AtomicU64::from_ptr(addr as *mut u64) }.load(Ordering::Relaxed),
    }
}

#[inline(always)]
pub(super) fn host_write(addr: u64, size: u32, v: u64) {
    match size {
        // SAFETY: see above.
        1 => unsafe { AtomicU8::from_ptr(addr as *mut u8) }.store(v as u8, Ordering::Relaxed),
        // SAFETY: see above.
        2 => unsafe { AtomicU16::from_ptr(addr as *mut u16) }.store(v as u16, Ordering::Relaxed),
        // SAFETY: see above.
        4 => unsafe { AtomicU32::from_ptr(addr as *mut u32) }.store(v as u32, Ordering::Relaxed),
        // SAFETY: see above.
        _ => unsafe { AtomicU64::from_ptr(addr as *mut u64) }.store(v, Ordering::Relaxed),
    }
}

/// A read-modify-write on host memory (4 or 8 bytes); returns the old value.
pub(super) fn host_atomic(addr: u64, size: u32, op: AtomOp, ty: Ty, b: u64, c: u64) -> u64 {
    // Integer adds, the common case, as one instruction (`atom_apply`'s wrapping add).
    match (op, ty, size) {
        (AtomOp::Add, Ty::U32 | Ty::S32, 4) => {
            // SAFETY: see above.
            let a = unsafe { AtomicU32::from_ptr(addr as *mut u32) };
            return u64::from(a.fetch_add(b as u32, Ordering::AcqRel));
        }
        (AtomOp::Add, Ty::U64 | Ty::S64, 8) => {
            // SAFETY: see above.
            let a = unsafe { AtomicU64::from_ptr(addr as *mut u64) };
            return a.fetch_add(b, Ordering::AcqRel);
        }
        _ => {}
    }
    if size == 4 {
        // SAFETY: see above.
        let a = unsafe { AtomicU32::from_ptr(addr as *mut u32) };
        let mut old = a.load(Ordering::Relaxed);
        loop {
            let new = atom_apply(op, ty, u64::from(old), b, c) as u32;
            match a.compare_exchange_weak(old, new, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return u64::from(old),
                Err(x) => old = x,
            }
        }
    } else {
        // SAFETY: see above.
        let a = unsafe { AtomicU64::from_ptr(addr as *mut u64) };
        let mut old = a.load(Ordering::Relaxed);
        loop {
            let new = atom_apply(op, ty, old, b, c);
            match a.compare_exchange_weak(old, new, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return old,
                Err(x) => old = x,
            }
        }
    }
}

#[inline(always)]
pub(super) fn read(
    cx: &Ctx,
    loc: Loc,
    stack: &[u8],
    shared: &[u8],
    peers: &[Vec<u8>],
    off: u32,
    size: u32,
) -> u64 {
    match loc {
        Loc::Host(a) => host_read(a + u64::from(off), size),
        Loc::Shared(a) => rd(shared, a + off as usize, size),
        Loc::Peer(r, a) => peers.get(r).map_or(0, |p| rd(p, a + off as usize, size)),
        Loc::Local(a) => rd(stack, a + off as usize, size),
        Loc::Param(a) => rd(cx.params, a + off as usize, size),
    }
}

/// Sign-extends a loaded value of type `ty` to a destination register of `dbits`.
#[inline(always)]
pub(super) fn extend(v: u64, ty: Ty, dbits: u8) -> u64 {
    let dbits = u32::from(dbits);
    if ty.is_signed() && ty.bits() < dbits {
        (sext(v, ty.bits()) as u64) & mask(dbits)
    } else {
        v
    }
}

#[inline(always)]
pub(super) fn addr_value(cx: &Ctx, t: &Thread, base: usize, a: &Addr) -> u64 {
    addr_with(
        cx,
        a,
        |r| t.regs[base + r as usize],
        u64::from(t.stack_base),
    )
}

/// The value of address operand `a`, its register read by `reg`, frame offsets
/// from `frame` (also the lane engine's, whose kernels have no frame).
#[inline(always)]
pub(super) fn addr_with(cx: &Ctx, a: &Addr, reg: impl FnOnce(Reg) -> u64, frame: u64) -> u64 {
    match *a {
        Addr::Reg(r, off) => reg(r).wrapping_add(off as i64 as u64),
        Addr::Frame(off) => frame + u64::from(off),
        Addr::Global(i, off) => cx
            .gaddrs
            .get(i as usize)
            .copied()
            .unwrap_or(0)
            .wrapping_add(off as i64 as u64),
        Addr::Shared(i, off) => {
            let base = cx
                .kernel
                .shared_offsets
                .get(i as usize)
                .copied()
                .unwrap_or(u32::MAX);
            u64::from(base).wrapping_add(off as i64 as u64)
        }
        Addr::Abs(v) => u64::from(v),
    }
}

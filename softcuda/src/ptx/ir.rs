//! The compiled form of a PTX module: a flat array of typed operations whose
//! operands are register indices.
//!
//! Every operand is a register: immediates become read-only constant registers
//! initialised from each function's register template, and special registers,
//! variable addresses and negated predicates are materialised into hidden
//! temporaries by extra operations. A register holds a `u64`; a value of a
//! narrower type lives in the low bits, zero-extended (predicates are 0 or 1,
//! f32 values are their bits).

/// A register index, relative to the current function's register frame.
pub(crate) type Reg = u32;

/// "No register" (an absent optional operand).
pub(crate) const NO_REG: Reg = u32::MAX;

/// A PTX data type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    Pred,
    B8,
    B16,
    B32,
    B64,
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F16,
    F32,
    F64,
}

impl Ty {
    /// Parses a type name without its dot (`u32`, `f64`, `pred`).
    pub(crate) fn from_name(s: &str) -> Option<Ty> {
        Some(match s {
            "pred" => Ty::Pred,
            "b8" => Ty::B8,
            "b16" => Ty::B16,
            "b32" => Ty::B32,
            "b64" => Ty::B64,
            "u8" => Ty::U8,
            "u16" => Ty::U16,
            "u32" => Ty::U32,
            "u64" => Ty::U64,
            "s8" => Ty::S8,
            "s16" => Ty::S16,
            "s32" => Ty::S32,
            "s64" => Ty::S64,
            "f16" => Ty::F16,
            "f32" => Ty::F32,
            "f64" => Ty::F64,
            _ => return None,
        })
    }

    /// Size in bits (1 for predicates).
    pub(crate) fn bits(self) -> u32 {
        match self {
            Ty::Pred => 1,
            Ty::B8 | Ty::U8 | Ty::S8 => 8,
            Ty::B16 | Ty::U16 | Ty::S16 | Ty::F16 => 16,
            Ty::B32 | Ty::U32 | Ty::S32 | Ty::F32 => 32,
            Ty::B64 | Ty::U64 | Ty::S64 | Ty::F64 => 64,
        }
    }

    /// Size in bytes in memory (predicates cannot be stored; 1 for completeness).
    pub(crate) fn bytes(self) -> u32 {
        self.bits().div_ceil(8)
    }

    pub(crate) fn is_signed(self) -> bool {
        matches!(self, Ty::S8 | Ty::S16 | Ty::S32 | Ty::S64)
    }

    pub(crate) fn is_float(self) -> bool {
        matches!(self, Ty::F16 | Ty::F32 | Ty::F64)
    }

    /// Integer or bit-size type (not a float, not a predicate).
    pub(crate) fn is_int(self) -> bool {
        !self.is_float() && self != Ty::Pred
    }
}

/// A state space an access goes to, as the interpreter sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MemSpace {
    /// Device memory: a real host address, checked with `DeviceMemory`.
    Global,
    /// `.const` variables: real host addresses like global memory, read-only.
    Const,
    /// The block's shared memory; addresses are offsets.
    Shared,
    /// The thread's stack: `.local` variables and the `.param` variables of `.func`
    /// frames and call sequences; addresses are offsets.
    Local,
    /// The kernel parameter buffer; addresses are offsets. Read-only.
    KParam,
    /// A generic address: decoded at run time by its window.
    Generic,
}

/// A memory operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Addr {
    /// Register value plus a byte offset.
    Reg(Reg, i32),
    /// An offset in the current frame of the thread's stack.
    Frame(u32),
    /// Module global variable `i` (its real address at launch) plus an offset.
    Global(u32, i32),
    /// Shared variable `i` (its offset in the launched kernel's layout) plus an offset.
    Shared(u32, i32),
    /// A fixed address in the space (kernel parameters).
    Abs(u32),
}

/// Special (read-only, per-thread) registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sreg {
    Tid(u8),
    Ntid(u8),
    Ctaid(u8),
    Nctaid(u8),
    LaneId,
    WarpId,
    NWarpId,
    SmId,
    NSmId,
    GridId,
    Clock,
    ClockHi,
    Clock64,
    GlobalTimer,
    GlobalTimerLo,
    GlobalTimerHi,
    LanemaskEq,
    LanemaskLe,
    LanemaskLt,
    LanemaskGe,
    LanemaskGt,
    DynSmem,
    TotalSmem,
    /// `%clusterid.d`: the cluster's index in the grid.
    ClusterId(u8),
    /// `%nclusterid.d`: clusters in the grid.
    NClusterId(u8),
    /// `%cluster_ctaid.d`: the block's index in its cluster.
    ClusterCtaid(u8),
    /// `%cluster_nctaid.d`: the cluster's shape.
    ClusterNctaid(u8),
    /// `%cluster_ctarank`: the block's linear rank in its cluster.
    ClusterCtarank,
    /// `%cluster_nctarank`: blocks per cluster.
    ClusterNctarank,
    /// `%is_explicit_cluster`: whether the launch gave a cluster shape.
    IsExplicitCluster,
    /// `%envreg<n>` (0..32): driver-defined; 1 and 2 hold the cooperative grid's
    /// workspace address (high, low), the others read 0.
    EnvReg(u8),
    /// `%reserved_smem_offset_begin/_end/_cap/_0/_1` (0..5): the driver-reserved
    /// shared memory of the block.
    ReservedSmem(u8),
}

/// Integer type of an operation: width and signedness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IntTy {
    pub bits: u8,
    pub signed: bool,
}

/// What `mad.cc` / `madc` do: which half of the product, carry in, carry out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CarryMode {
    pub hi: bool,
    pub cin: bool,
    pub cout: bool,
}

/// Two-operand integer (and predicate) operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IntOp {
    Add,
    Sub,
    AddSat,
    SubSat,
    /// `add.cc`: sets the carry flag.
    AddCc,
    /// `addc`: adds the carry flag.
    AddC,
    /// `addc.cc`.
    AddCCc,
    SubCc,
    SubC,
    SubCCc,
    MulLo,
    MulHi,
    /// `mul.wide`: the destination is twice as wide.
    MulWide,
    Mul24Lo,
    Mul24Hi,
    Div,
    Rem,
    Min,
    Max,
    And,
    Or,
    Xor,
    Shl,
    Shr,
}

/// One-operand integer operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IntUnOp {
    Neg,
    Abs,
    Not,
    Cnot,
    Popc,
    Clz,
    Brev,
    Bfind,
    BfindShift,
}

/// Three-operand integer operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Int3Op {
    MadLo,
    MadHi,
    MadWide,
    Mad24Lo,
    /// `bfe d, a, pos, len`.
    Bfe,
    /// `sad d, a, b, c`: |a - b| + c.
    Sad,
}

/// Two-operand float operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FOp {
    Add,
    Sub,
    Mul,
    Div,
    Min,
    Max,
    Copysign,
}

/// One-operand float operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FUnOp {
    Neg,
    Abs,
    Sqrt,
    Rsqrt,
    Rcp,
    Sin,
    Cos,
    Ex2,
    Lg2,
    Tanh,
}

/// `testp` properties.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TestP {
    Finite,
    Infinite,
    Number,
    NotANumber,
    Normal,
    Subnormal,
}

/// Comparison operators of `setp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Lo,
    Ls,
    Hi,
    Hs,
    Equ,
    Neu,
    Ltu,
    Leu,
    Gtu,
    Geu,
    Num,
    Nan,
}

/// The boolean combination of `setp.cmp.bop` with its third (predicate) operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BoolOp {
    None,
    And,
    Or,
    Xor,
}

/// Rounding modes of `cvt` (and the accepted `.rn` of arithmetic).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rnd {
    None,
    Rn,
    Rz,
    Rm,
    Rp,
    Rni,
    Rzi,
    Rmi,
    Rpi,
}

/// Atomic operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AtomOp {
    Add,
    Min,
    Max,
    Exch,
    Cas,
    And,
    Or,
    Xor,
    Inc,
    Dec,
}

/// Kinds of `bar` / `barrier` operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BarKind {
    Sync,
    Arrive,
    RedPopc,
    RedAnd,
    RedOr,
}

/// `shfl.sync` modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShflMode {
    Up,
    Down,
    Bfly,
    Idx,
}

/// `vote.sync` modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VoteMode {
    All,
    Any,
    Uni,
    Ballot,
}

/// `redux.sync` operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReduxOp {
    Add,
    Min,
    Max,
    And,
    Or,
    Xor,
}

/// One executable operation. Registers are `d*` (written) and `a`, `b`, `c`, ... (read).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Op {
    Nop,
    /// d = a & mask(bits).
    Mov {
        d: Reg,
        a: Reg,
        bits: u8,
    },
    Special {
        d: Reg,
        sr: Sreg,
    },
    /// d = the address `a` in `space`, made generic if `generic`, truncated if `bits32`.
    AddrOf {
        d: Reg,
        a: Addr,
        space: MemSpace,
        generic: bool,
        bits32: bool,
    },
    /// `mov.bN d, {a, b, ...}`: n parts of `bits` each, low part first.
    Pack {
        d: Reg,
        parts: [Reg; 4],
        n: u8,
        bits: u8,
    },
    /// `mov.bN {d0, d1, ...}, a`.
    Unpack {
        d: [Reg; 4],
        n: u8,
        bits: u8,
        a: Reg,
    },
    Int {
        op: IntOp,
        ty: IntTy,
        d: Reg,
        a: Reg,
        b: Reg,
    },
    IntUn {
        op: IntUnOp,
        ty: IntTy,
        d: Reg,
        a: Reg,
    },
    Int3 {
        op: Int3Op,
        ty: IntTy,
        d: Reg,
        a: Reg,
        b: Reg,
        c: Reg,
    },
    /// `bfi.bN d, a, b, pos, len`.
    Bfi {
        bits: u8,
        d: Reg,
        a: Reg,
        b: Reg,
        pos: Reg,
        len: Reg,
    },
    /// `prmt.b32` in the default mode (the named modes are refused at load).
    Prmt {
        d: Reg,
        a: Reg,
        b: Reg,
        c: Reg,
    },
    /// `shf.{l,r}.{wrap,clamp}.b32`.
    Shf {
        left: bool,
        clamp: bool,
        d: Reg,
        a: Reg,
        b: Reg,
        c: Reg,
    },
    Lop3 {
        d: Reg,
        a: Reg,
        b: Reg,
        c: Reg,
        lut: u8,
    },
    /// f32 (`f64 == false`) or f64 binary operation.
    Float {
        op: FOp,
        f64: bool,
        ftz: bool,
        sat: bool,
        d: Reg,
        a: Reg,
        b: Reg,
    },
    FloatUn {
        op: FUnOp,
        f64: bool,
        ftz: bool,
        sat: bool,
        d: Reg,
        a: Reg,
    },
    Fma {
        f64: bool,
        ftz: bool,
        sat: bool,
        d: Reg,
        a: Reg,
        b: Reg,
        c: Reg,
    },
    /// `add`/`sub`/`mul` (f32, f64) with a directed rounding `.rz`, `.rm`, `.rp`.
    FloatDir {
        op: FOp,
        f64: bool,
        ftz: bool,
        sat: bool,
        rnd: Rnd,
        d: Reg,
        a: Reg,
        b: Reg,
    },
    /// `fma.{rz,rm,rp}.f32`.
    Fma32Dir {
        ftz: bool,
        sat: bool,
        rnd: Rnd,
        d: Reg,
        a: Reg,
        b: Reg,
        c: Reg,
    },
    /// `mad.{lo,hi}.cc` and `madc.{lo,hi}{.cc}`: uses (`cin`) and sets (`cout`) the carry.
    MadCc {
        mode: CarryMode,
        ty: IntTy,
        d: Reg,
        a: Reg,
        b: Reg,
        c: Reg,
    },
    Testp {
        t: TestP,
        f64: bool,
        d: Reg,
        a: Reg,
    },
    /// p = (a cmp b) bop c; q (if any) = !(a cmp b) bop c.
    Setp {
        cmp: Cmp,
        ty: Ty,
        ftz: bool,
        bop: BoolOp,
        p: Reg,
        q: Reg,
        a: Reg,
        b: Reg,
        c: Reg,
    },
    /// d = c ? a : b.
    Selp {
        d: Reg,
        a: Reg,
        b: Reg,
        c: Reg,
    },
    /// Integer-to-integer `cvt` without saturation: extend from `from` bits, keep `to` bits.
    Ext {
        d: Reg,
        a: Reg,
        from: u8,
        signed: bool,
        to: u8,
    },
    /// Any other `cvt`; `dbits` is the destination register's width.
    Cvt {
        dty: Ty,
        sty: Ty,
        rnd: Rnd,
        sat: bool,
        ftz: bool,
        dbits: u8,
        d: Reg,
        a: Reg,
    },
    /// `cvta[.to].space`: generic <-> space address.
    Cvta {
        to: bool,
        space: MemSpace,
        bits32: bool,
        d: Reg,
        a: Reg,
    },
    Isspacep {
        space: MemSpace,
        d: Reg,
        a: Reg,
    },
    /// Load `n` elements of `ty` into `d[..n]`; `dbits` is the destination registers' width.
    Ld {
        space: MemSpace,
        ty: Ty,
        n: u8,
        dbits: u8,
        d: [Reg; 4],
        a: Addr,
    },
    St {
        space: MemSpace,
        ty: Ty,
        n: u8,
        s: [Reg; 4],
        a: Addr,
    },
    /// `atom` (d = old value) or `red` (d = NO_REG). `c` is the `cas` new value.
    Atom {
        space: MemSpace,
        op: AtomOp,
        ty: Ty,
        d: Reg,
        a: Addr,
        b: Reg,
        c: Reg,
    },
    Bra {
        target: u32,
    },
    /// A call of a `.func`; the index is into `Program::calls`.
    Call {
        site: u32,
    },
    /// A call of the built-in `vprintf` (format and argument-buffer pointers).
    Printf {
        site: u32,
    },
    /// A call of the built-in `cudaGraphSetConditional(handle, value)`.
    SetConditional {
        site: u32,
    },
    Ret,
    Exit,
    Trap,
    /// `bar.sync` and friends. `count` is NO_REG for "all threads"; `d`/`p` for `bar.red`.
    Bar {
        kind: BarKind,
        id: Reg,
        count: Reg,
        d: Reg,
        p: Reg,
    },
    /// `mapa`: d = the address of `a`'s shared-memory location in the block of
    /// cluster rank `rank` (a generic or a `.shared::cluster` address).
    Mapa {
        d: Reg,
        a: Reg,
        rank: Reg,
        generic: bool,
        bits32: bool,
    },
    /// `getctarank`: d = the cluster rank of the block whose shared memory `a` is in.
    GetCtaRank {
        d: Reg,
        a: Reg,
        generic: bool,
    },
    /// `barrier.cluster.arrive` (`arrive`) or `barrier.cluster.wait` (not `arrive`).
    ClusterBar {
        arrive: bool,
    },
    /// `bar.warp.sync mask`.
    WarpSync {
        mask: Reg,
    },
    Shfl {
        mode: ShflMode,
        d: Reg,
        p: Reg,
        a: Reg,
        b: Reg,
        c: Reg,
        mask: Reg,
    },
    Vote {
        mode: VoteMode,
        d: Reg,
        a: Reg,
        mask: Reg,
    },
    Activemask {
        d: Reg,
    },
    Redux {
        op: ReduxOp,
        signed: bool,
        d: Reg,
        a: Reg,
        mask: Reg,
    },
    MatchAny {
        bits64: bool,
        d: Reg,
        a: Reg,
        mask: Reg,
    },
    MatchAll {
        bits64: bool,
        d: Reg,
        p: Reg,
        a: Reg,
        mask: Reg,
    },
    /// `membar` / `fence`: a host memory fence.
    Fence,
    /// `tex`, `txq`, `suld`, `sust`, `suq`: the index into `Program::tex`.
    Tex {
        site: u32,
    },
}

/// What a texture or surface instruction does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TexOp {
    /// `tex[.level]`: a fetch (`lod` is the level operand, or NO_REG).
    Fetch,
    /// `txq.<query>`.
    Txq(TexQuery),
    /// `suld.b`.
    Suld,
    /// `sust.b`.
    Sust,
    /// `suq.<query>`.
    Suq(TexQuery),
}

/// `txq` / `suq` queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TexQuery {
    Width,
    Height,
    Depth,
    ChannelDataType,
    ChannelOrder,
    NormalizedCoords,
    FilterMode,
    AddrMode(u8),
    ArraySize,
    NumMipmapLevels,
    NumSamples,
}

/// Out-of-range handling of surface accesses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SurfClamp {
    Trap,
    Clamp,
    Zero,
}

/// A texture or surface instruction's operands (`Op::Tex`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TexSite {
    pub op: TexOp,
    /// Dimensions addressed (1, 2 or 3), not counting the layer.
    pub dims: u8,
    /// `a1d`/`a2d`: the first coordinate is the layer.
    pub layered: bool,
    /// The register holding the handle.
    pub handle: Reg,
    /// Coordinates (the layer first when layered); NO_REG past the last.
    pub coords: [Reg; 4],
    /// Float coordinates (`tex ... .f32`); integer otherwise.
    pub fcoords: bool,
    /// Destinations (`tex`, `suld`, queries) or sources (`sust`); NO_REG past the last.
    pub vals: [Reg; 4],
    /// `tex`: the result type; `suld`/`sust`: the `.bN` element type.
    pub ty: Ty,
    /// `tex.level`'s level of detail, or NO_REG.
    pub lod: Reg,
    pub clamp: SurfClamp,
}

/// An operation with its guard predicate.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Inst {
    pub op: Op,
    /// Guard register, or NO_REG.
    pub guard: Reg,
    /// Whether the guard is negated (`@!%p`).
    pub neg: bool,
}

/// A compiled function (`.entry` or `.func`).
#[derive(Debug, Clone)]
pub(crate) struct Func {
    pub name: String,
    pub is_entry: bool,
    /// Index of the first operation in `Program::code`.
    pub entry: u32,
    /// Initial register frame: zeros, and the constant registers' values.
    pub template: Vec<u64>,
    /// Bytes of this function's stack frame (locals, parameters, call sequences).
    pub frame_bytes: u32,
    /// Alignment of the frame's base (the largest alignment of its variables, at least 16).
    pub frame_align: u32,
    /// (offset in frame, size) of each formal parameter (`.func` only).
    pub params: Vec<(u32, u32)>,
    /// (offset in frame, size) of each return parameter.
    pub rets: Vec<(u32, u32)>,
    /// Shared variables this function refers to.
    pub shared_refs: Vec<u32>,
    /// Functions this function calls.
    pub callees: Vec<u32>,
    /// Estimated 32-bit registers used (see `compile::estimate_registers`).
    pub reg_estimate: u32,
}

/// A call site: the callee and where the caller's argument and return `.param`
/// variables are (offset in the caller's frame, size).
#[derive(Debug, Clone)]
pub(crate) struct CallSite {
    pub func: u32,
    pub args: Vec<(u32, u32)>,
    pub rets: Vec<(u32, u32)>,
}

/// A `.shared` variable (module scope or function scope).
#[derive(Debug, Clone)]
pub(crate) struct SharedVar {
    pub size: u32,
    pub align: u32,
    /// `.extern .shared name[]`: the dynamic shared memory.
    pub dynamic: bool,
}

/// All compiled code of a module.
#[derive(Debug, Clone, Default)]
pub(crate) struct Program {
    pub code: Vec<Inst>,
    /// Source line of each operation in `code`.
    pub lines: Vec<u32>,
    /// The `.loc` (file number, line) in force at each operation in `code`
    /// (`(0, 0)`: none).
    pub locs: Vec<(u32, u32)>,
    /// The module's `.file` directives: number and name.
    pub files: Vec<(u32, String)>,
    pub funcs: Vec<Func>,
    pub calls: Vec<CallSite>,
    pub shared: Vec<SharedVar>,
    /// Texture and surface instruction sites (`Op::Tex`).
    pub tex: Vec<TexSite>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_stay_compact() {
        assert!(size_of::<Inst>() <= 48, "{}", size_of::<Inst>());
    }
}

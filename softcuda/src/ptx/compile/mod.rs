//! The PTX compiler: checks a syntax tree and lowers it to `ir` operations.
//!
//! Passes: (1) module scope — variables become [`GlobalVar`]s or shared variables,
//! functions get indices and signatures; (2) each function body is compiled in
//! order, names resolved through nested scopes to registers, frame offsets or
//! variables, each instruction's modifiers checked against what the interpreter
//! implements; (3) per kernel, the reachable functions give the shared-memory
//! layout, the stack size and the register count.
//!
//! Modifiers are handled by [`Mods`]: each instruction takes the ones it knows,
//! ignores the ones that do not change the result (cache hints, memory-order
//! qualifiers, `.uni`, `.aligned`), and whatever is left over is refused by name.
//!
//! Register count (`Kernel::num_regs`): for each declared register, the range of
//! operations from its first to its last mention (extended to the end of any loop
//! it is live into) is one live range; the estimate is the largest number of 32-bit
//! units (64-bit registers count 2, predicates 0) whose ranges overlap, plus 2,
//! clamped to 1..=255. It is the same order as what ptxas reports, not equal to it.

use std::collections::HashMap;

mod inst;
mod kernel;
mod lower;
mod operands;
mod texture;

use kernel::kernel_info;

use super::arith::{f64_to_f16, mask};
use super::ir::{
    Addr, AtomOp, BarKind, BoolOp, CallSite, CarryMode, Cmp, FOp, FUnOp, Func, Inst, Int3Op, IntOp,
    IntTy, IntUnOp, MemSpace, NO_REG, Op, Program, ReduxOp, Reg, Rnd, SharedVar, ShflMode, Sreg,
    TestP, Ty, VoteMode,
};
use super::parse::{self, Ast, DeclSpace, Function, Init, Item, Lit, Operand, Stmt, VarDecl};
use super::{GlobalVar, JitOptions, Kernel, ParamInfo, Space};

/// A compile error: line and message.
pub(crate) type CErr = (u32, String);

/// The result of compiling a module.
pub(crate) struct Compiled {
    pub prog: Program,
    pub kernels: Vec<Kernel>,
    pub globals: Vec<GlobalVar>,
}

/// What a name resolves to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sym {
    Reg(Reg),
    /// A kernel parameter at this offset of the parameter buffer.
    KParam {
        off: u32,
    },
    /// A variable in the function's stack frame: `.local`, or `.param` of a `.func`
    /// or call sequence.
    Frame {
        off: u32,
        param: bool,
    },
    Shared(u32),
    /// Index into the module's globals (`.global` or `.const`).
    Global(u32),
    Func(u32),
}

/// A function's signature, known before bodies are compiled.
struct Sig {
    name: String,
    is_entry: bool,
    has_body: bool,
    params: Vec<u32>,
    rets: Vec<u32>,
    line: u32,
}

/// Types PTX has that the interpreter does not implement.
const UNSUPPORTED_TYPES: [&str; 14] = [
    "bf16", "bf16x2", "f16x2", "tf32", "e4m3", "e5m2", "e4m3x2", "e5m2x2", "b128", "s4", "u4",
    "b1", "e2m1", "e3m2",
];

/// Known PTX instructions the interpreter does not implement (for a clearer message).
const UNSUPPORTED_INSTS: [&str; 31] = [
    "tld4",
    "sured",
    "mma",
    "wmma",
    "ldmatrix",
    "stmatrix",
    "movmatrix",
    "cp",
    "mbarrier",
    "elect",
    "setmaxnreg",
    "wgmma",
    "tcgen05",
    "multimem",
    "alloca",
    "stacksave",
    "stackrestore",
    "applypriority",
    "discard",
    "createpolicy",
    "tensormap",
    "brx",
    "dp4a",
    "dp2a",
    "fns",
    "bmsk",
    "szext",
    "istypep",
    "set",
    "slct",
    "brkpt",
];

/// Rounds `v` up to a multiple of `a`.
fn align_up(v: u32, a: u32) -> u32 {
    let a = a.max(1);
    v.div_ceil(a) * a
}

/// The modifiers of one instruction, consumed as the instruction's compiler
/// recognises them; leftovers are errors.
struct Mods<'a> {
    opcode: &'a str,
    items: Vec<(&'a str, bool)>,
}

impl<'a> Mods<'a> {
    fn new(opcode: &'a str, rest: &'a str) -> Self {
        let items = if rest.is_empty() {
            Vec::new()
        } else {
            rest.split('.').map(|s| (s, false)).collect()
        };
        Mods { opcode, items }
    }

    /// Takes `name` if present.
    fn has(&mut self, name: &str) -> bool {
        for it in &mut self.items {
            if !it.1 && it.0 == name {
                it.1 = true;
                return true;
            }
        }
        false
    }

    /// Takes the first of `names` present.
    fn one_of<'n>(&mut self, names: &[&'n str]) -> Option<&'n str> {
        for it in &mut self.items {
            if !it.1
                && let Some(n) = names.iter().find(|n| **n == it.0)
            {
                it.1 = true;
                return Some(n);
            }
        }
        None
    }

    /// Takes every one of `names` present (qualifiers with no effect here).
    fn ignore(&mut self, names: &[&str]) {
        for it in &mut self.items {
            if names.contains(&it.0) {
                it.1 = true;
            }
        }
    }

    /// Takes every modifier starting with `prefix`, except `except`.
    fn ignore_prefix(&mut self, prefix: &str, except: &str) {
        for it in &mut self.items {
            if it.0.starts_with(prefix) && it.0 != except {
                it.1 = true;
            }
        }
    }

    /// Takes all type modifiers, in order.
    fn types(&mut self) -> Result<Vec<Ty>, String> {
        let mut out = Vec::new();
        for it in &mut self.items {
            if it.1 {
                continue;
            }
            if let Some(t) = Ty::from_name(it.0) {
                it.1 = true;
                out.push(t);
            } else if UNSUPPORTED_TYPES.contains(&it.0) {
                return Err(format!(
                    "Unsupported type '.{}' in instruction '{}'",
                    it.0, self.opcode
                ));
            }
        }
        Ok(out)
    }

    /// Takes exactly one type modifier.
    fn ty(&mut self) -> Result<Ty, String> {
        let t = self.types()?;
        match t.as_slice() {
            [t] => Ok(*t),
            [] => Err(format!("Missing type in instruction '{}'", self.opcode)),
            _ => Err(format!("Too many types in instruction '{}'", self.opcode)),
        }
    }

    /// Fails on the first modifier nobody took.
    fn finish(&self) -> Result<(), String> {
        match self.items.iter().find(|it| !it.1) {
            Some(it) => Err(format!(
                "Unsupported modifier '.{}' in instruction '{}'",
                it.0, self.opcode
            )),
            None => Ok(()),
        }
    }
}

fn int_ty(t: Ty) -> IntTy {
    IntTy {
        bits: t.bits() as u8,
        signed: t.is_signed(),
    }
}

/// Space modifiers of memory instructions.
fn space_mod(m: &mut Mods) -> Option<MemSpace> {
    Some(
        match m.one_of(&[
            "global",
            "shared",
            "shared::cta",
            "shared::cluster",
            "local",
            "const",
            "param",
        ])? {
            "global" => MemSpace::Global,
            // A cluster address of the block's own memory is its shared address;
            // other blocks' (from `mapa`) are told apart at run time.
            "shared" | "shared::cta" | "shared::cluster" => MemSpace::Shared,
            "local" => MemSpace::Local,
            "const" => MemSpace::Const,
            _ => MemSpace::KParam,
        },
    )
}

/// Parses a special register name (`%tid.x`, `%laneid`, ...): which, and its width.
fn special(name: &str) -> Option<(Sreg, u8)> {
    let dim = |s: &str| match s {
        "x" => Some(0u8),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    };
    if let Some((base, d)) = name.split_once('.') {
        let d = dim(d)?;
        return Some((
            match base {
                "%tid" => Sreg::Tid(d),
                "%ntid" => Sreg::Ntid(d),
                "%ctaid" => Sreg::Ctaid(d),
                "%nctaid" => Sreg::Nctaid(d),
                "%clusterid" => Sreg::ClusterId(d),
                "%nclusterid" => Sreg::NClusterId(d),
                "%cluster_ctaid" => Sreg::ClusterCtaid(d),
                "%cluster_nctaid" => Sreg::ClusterNctaid(d),
                _ => return None,
            },
            32,
        ));
    }
    Some(match name {
        "%laneid" => (Sreg::LaneId, 32),
        "%warpid" => (Sreg::WarpId, 32),
        "%nwarpid" => (Sreg::NWarpId, 32),
        "%smid" => (Sreg::SmId, 32),
        "%nsmid" => (Sreg::NSmId, 32),
        "%gridid" => (Sreg::GridId, 64),
        "%clock" => (Sreg::Clock, 32),
        "%clock_hi" => (Sreg::ClockHi, 32),
        "%clock64" => (Sreg::Clock64, 64),
        "%globaltimer" => (Sreg::GlobalTimer, 64),
        "%globaltimer_lo" => (Sreg::GlobalTimerLo, 32),
        "%globaltimer_hi" => (Sreg::GlobalTimerHi, 32),
        "%lanemask_eq" => (Sreg::LanemaskEq, 32),
        "%lanemask_le" => (Sreg::LanemaskLe, 32),
        "%lanemask_lt" => (Sreg::LanemaskLt, 32),
        "%lanemask_ge" => (Sreg::LanemaskGe, 32),
        "%lanemask_gt" => (Sreg::LanemaskGt, 32),
        "%dynamic_smem_size" => (Sreg::DynSmem, 32),
        "%total_smem_size" => (Sreg::TotalSmem, 32),
        "%cluster_ctarank" => (Sreg::ClusterCtarank, 32),
        "%cluster_nctarank" => (Sreg::ClusterNctarank, 32),
        "%is_explicit_cluster" => (Sreg::IsExplicitCluster, 1),
        "%reserved_smem_offset_begin" => (Sreg::ReservedSmem(0), 32),
        "%reserved_smem_offset_end" => (Sreg::ReservedSmem(1), 32),
        "%reserved_smem_offset_cap" => (Sreg::ReservedSmem(2), 32),
        "%reserved_smem_offset_0" => (Sreg::ReservedSmem(3), 32),
        "%reserved_smem_offset_1" => (Sreg::ReservedSmem(4), 32),
        _ => match name
            .strip_prefix("%envreg")
            .and_then(|n| n.parse::<u8>().ok())
        {
            Some(n) if n < 32 => (Sreg::EnvReg(n), 32),
            _ => return None,
        },
    })
}

/// An immediate's bits as an operand of type `ty`.
fn imm_bits(lit: Lit, ty: Ty) -> Result<u64, String> {
    let as_f64 = |l: Lit| match l {
        Lit::Int(v) => v as f64,
        Lit::F32(b) => f64::from(f32::from_bits(b)),
        Lit::F64(b) => f64::from_bits(b),
        Lit::Dec(f) => f,
    };
    Ok(match ty {
        Ty::F32 => match lit {
            Lit::F32(b) => u64::from(b),
            l => u64::from((as_f64(l) as f32).to_bits()),
        },
        Ty::F64 => as_f64(lit).to_bits(),
        Ty::F16 => u64::from(f64_to_f16(as_f64(lit), Rnd::Rn)),
        Ty::Pred => match lit {
            Lit::Int(v) => u64::from(v != 0),
            _ => return Err("a predicate cannot be a float literal".into()),
        },
        _ => match lit {
            Lit::Int(v) => (v as u64) & mask(ty.bits()),
            Lit::F32(b) => u64::from(b) & mask(ty.bits()),
            Lit::F64(b) => b & mask(ty.bits()),
            Lit::Dec(_) => {
                return Err("an integer operand cannot be a decimal float literal".into());
            }
        },
    })
}

/// Element size, alignment and total size of a declaration.
fn decl_layout(d: &VarDecl) -> Result<(u32, u32, u64), String> {
    let ty = match Ty::from_name(&d.ty) {
        Some(Ty::Pred) | None => return Err(format!("Unsupported variable type '.{}'", d.ty)),
        Some(t) => t,
    };
    let elem = ty.bytes() * d.vec;
    let mut count = 1u64;
    for dim in &d.dims {
        count = count.saturating_mul(dim.unwrap_or(0));
    }
    let align = d.align.unwrap_or(elem).max(1);
    if !align.is_power_of_two() {
        return Err(format!("Alignment {align} is not a power of two"));
    }
    Ok((elem, align, count.saturating_mul(u64::from(elem))))
}

/// Flattens an initializer into `out` as elements of type `ty`.
fn init_bytes(init: &Init, ty: Ty, out: &mut Vec<u8>) -> Result<(), String> {
    match init {
        Init::List(items) => {
            for i in items {
                init_bytes(i, ty, out)?;
            }
            Ok(())
        }
        Init::Value(l) => {
            let v = imm_bits(*l, ty)?;
            out.extend_from_slice(&v.to_le_bytes()[..ty.bytes() as usize]);
            Ok(())
        }
        Init::Symbol(s) => Err(format!(
            "Initializer with the address of '{s}' is not supported"
        )),
    }
}

/// Compiles a module.
pub(crate) fn compile(ast: &Ast, opts: &JitOptions) -> Result<Compiled, Vec<CErr>> {
    let mut errors: Vec<CErr> = Vec::new();
    check_header(ast, opts, &mut errors);

    // Pass 1: module scope.
    let mut module: HashMap<String, Sym> = HashMap::new();
    let mut globals: Vec<GlobalVar> = Vec::new();
    let mut prog = Program {
        files: ast.files.clone(),
        ..Program::default()
    };
    let mut sigs: Vec<Sig> = Vec::new();
    let mut bodies: Vec<Option<&Function>> = Vec::new();
    for item in &ast.items {
        match item {
            Item::Var(d) => {
                if let Err(e) = module_var(d, &mut module, &mut globals, &mut prog) {
                    errors.push((d.line, e));
                }
            }
            Item::Func(f) => {
                let sizes = |ps: &[VarDecl]| -> Result<Vec<u32>, String> {
                    ps.iter()
                        .map(|p| {
                            if p.space != DeclSpace::Param {
                                return Err(format!(
                                    "Unsupported parameter state space in '{}'",
                                    f.name
                                ));
                            }
                            decl_layout(p).map(|(_, _, s)| s as u32)
                        })
                        .collect()
                };
                let (params, rets) = match (sizes(&f.params), sizes(&f.rets)) {
                    (Ok(p), Ok(r)) => (p, r),
                    (Err(e), _) | (_, Err(e)) => {
                        errors.push((f.line, e));
                        continue;
                    }
                };
                match module.get(&f.name) {
                    Some(Sym::Func(i)) => {
                        let i = *i as usize;
                        if f.body.is_some() {
                            if sigs[i].has_body {
                                errors.push((
                                    f.line,
                                    format!("Duplicate definition of function '{}'", f.name),
                                ));
                                continue;
                            }
                            sigs[i] = Sig {
                                name: f.name.clone(),
                                is_entry: f.is_entry,
                                has_body: true,
                                params,
                                rets,
                                line: f.line,
                            };
                            bodies[i] = Some(f);
                        }
                    }
                    Some(_) => {
                        errors.push((f.line, format!("Duplicate definition of '{}'", f.name)))
                    }
                    None => {
                        module.insert(f.name.clone(), Sym::Func(sigs.len() as u32));
                        sigs.push(Sig {
                            name: f.name.clone(),
                            is_entry: f.is_entry,
                            has_body: f.body.is_some(),
                            params,
                            rets,
                            line: f.line,
                        });
                        bodies.push(f.body.as_ref().map(|_| f));
                    }
                }
            }
        }
    }

    // Pass 2: bodies. Functions without a body keep an empty placeholder.
    let mut directives: Vec<Option<&Function>> = vec![None; sigs.len()];
    for (i, body) in bodies.iter().enumerate() {
        let Some(f) = body else {
            prog.funcs.push(Func {
                name: sigs[i].name.clone(),
                is_entry: sigs[i].is_entry,
                entry: 0,
                template: Vec::new(),
                frame_bytes: 0,
                frame_align: 16,
                params: Vec::new(),
                rets: Vec::new(),
                shared_refs: Vec::new(),
                callees: Vec::new(),
                reg_estimate: 0,
            });
            if sigs[i].is_entry {
                errors.push((
                    sigs[i].line,
                    format!("Entry function '{}' has no body", sigs[i].name),
                ));
            }
            continue;
        };
        directives[i] = Some(f);
        let func = compile_function(f, &module, &globals, &sigs, &mut prog, &mut errors);
        prog.funcs.push(func);
    }
    check_cluster_features(ast, &prog, &directives, &mut errors);
    if !errors.is_empty() {
        errors.sort_by_key(|e| e.0);
        return Err(errors);
    }

    // Pass 3: kernels.
    let mut kernels = Vec::new();
    for (i, f) in directives.iter().enumerate() {
        if let Some(f) = f
            && f.is_entry
        {
            match kernel_info(i as u32, f, &prog, opts) {
                Ok(k) => kernels.push(k),
                Err(e) => errors.push(e),
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Compiled {
        prog,
        kernels,
        globals,
    })
}

/// The SM version named by `.target` (`sm_90a` is 90), if any.
fn target_sm(ast: &Ast) -> Option<u32> {
    let (names, _) = ast.target.as_ref()?;
    names.iter().find_map(|n| {
        let v = n.strip_prefix("sm_")?;
        let digits: String = v.chars().take_while(|c| c.is_ascii_digit()).collect();
        digits.parse::<u32>().ok()
    })
}

/// Thread-block cluster features (`.reqnctapercluster`, `.explicitcluster`,
/// `.maxclusterrank`, `%cluster_*`/`%clusterid`/`%nclusterid`/`%is_explicit_cluster`,
/// `mapa`, `getctarank`, `barrier.cluster`) need `.target sm_90` or higher, as
/// ptxas requires: one error per use below it.
fn check_cluster_features(
    ast: &Ast,
    prog: &Program,
    directives: &[Option<&Function>],
    errors: &mut Vec<CErr>,
) {
    if target_sm(ast).is_none_or(|sm| sm >= 90) {
        return;
    }
    let need = |what: &str| format!("Feature '{what}' requires .target sm_90 or higher");
    for f in directives.iter().flatten() {
        for (name, _, line) in &f.directives {
            if matches!(
                name.as_str(),
                "reqnctapercluster" | "explicitcluster" | "maxclusterrank"
            ) {
                errors.push((*line, need(&format!(".{name}"))));
            }
        }
    }
    for (pc, inst) in prog.code.iter().enumerate() {
        let what = match &inst.op {
            Op::Mapa { .. } => "mapa",
            Op::GetCtaRank { .. } => "getctarank",
            Op::ClusterBar { .. } => "barrier.cluster",
            Op::Special { sr, .. } => match sr {
                Sreg::ClusterId(_) => "%clusterid",
                Sreg::NClusterId(_) => "%nclusterid",
                Sreg::ClusterCtaid(_) => "%cluster_ctaid",
                Sreg::ClusterNctaid(_) => "%cluster_nctaid",
                Sreg::ClusterCtarank => "%cluster_ctarank",
                Sreg::ClusterNctarank => "%cluster_nctarank",
                Sreg::IsExplicitCluster => "%is_explicit_cluster",
                _ => continue,
            },
            _ => continue,
        };
        let line = prog.lines.get(pc).copied().unwrap_or(0);
        errors.push((line, need(what)));
    }
}

fn check_header(ast: &Ast, opts: &JitOptions, errors: &mut Vec<CErr>) {
    match ast.version {
        None => errors.push((1, "Missing .version directive at start of file".into())),
        Some((maj, min, line)) => {
            if maj < 1 || (maj, min) > (8, 8) {
                errors.push((
                    line,
                    format!("Unsupported .version {maj}.{min}; current version is '8.8'"),
                ));
            }
        }
    }
    match &ast.target {
        None => errors.push((1, "Missing .target directive".into())),
        Some((names, line)) => {
            let mut sm = None;
            for n in names {
                if let Some(v) = n.strip_prefix("sm_") {
                    let digits: String = v.chars().take_while(|c| c.is_ascii_digit()).collect();
                    sm = digits.parse::<u32>().ok();
                    if sm.is_none() {
                        errors.push((*line, format!("Unknown target '{n}'")));
                    }
                } else if !matches!(
                    n.as_str(),
                    "texmode_unified" | "texmode_independent" | "debug" | "map_f64_to_f32"
                ) {
                    errors.push((*line, format!("Unknown target '{n}'")));
                }
            }
            if let Some(sm) = sm
                && sm > opts.target_sm
            {
                errors.push((
                    *line,
                    format!(
                        "SM version specified by .target (sm_{sm}) is higher than the target sm_{}",
                        opts.target_sm
                    ),
                ));
            }
        }
    }
    if let Some((size, line)) = ast.address_size
        && size != 64
    {
        errors.push((
            line,
            format!("Unsupported .address_size {size}: only 64 is supported"),
        ));
    }
}

fn module_var(
    d: &VarDecl,
    module: &mut HashMap<String, Sym>,
    globals: &mut Vec<GlobalVar>,
    prog: &mut Program,
) -> Result<(), String> {
    if module.contains_key(&d.name) {
        return Err(format!("Duplicate definition of '{}'", d.name));
    }
    let (_, align, size) = decl_layout(d)?;
    match d.space {
        DeclSpace::Global | DeclSpace::Const => {
            if d.linkage.as_deref() == Some(".extern") {
                return Err(format!("Unresolved extern variable '{}'", d.name));
            }
            let mut init = Vec::new();
            if let Some(i) = &d.init {
                let ty = Ty::from_name(&d.ty).ok_or("bad type")?;
                init_bytes(i, ty, &mut init)?;
            }
            let size = if d.dims.contains(&None) {
                init.len() as u64
            } else {
                size
            };
            if init.len() as u64 > size {
                return Err(format!("Too many initializers for '{}'", d.name));
            }
            init.resize(size as usize, 0);
            let space = if d.space == DeclSpace::Global {
                Space::Global
            } else {
                Space::Const
            };
            module.insert(d.name.clone(), Sym::Global(globals.len() as u32));
            globals.push(GlobalVar {
                name: d.name.clone(),
                space,
                size,
                align,
                init,
            });
        }
        DeclSpace::Shared => {
            let id = shared_var(d, align, size, prog)?;
            module.insert(d.name.clone(), Sym::Shared(id));
        }
        _ => return Err(format!("Unsupported module-scope variable '{}'", d.name)),
    }
    Ok(())
}

fn shared_var(d: &VarDecl, align: u32, size: u64, prog: &mut Program) -> Result<u32, String> {
    if d.init.is_some() {
        return Err(format!(
            "Shared variable '{}' cannot have an initializer",
            d.name
        ));
    }
    let dynamic = d.dims.first() == Some(&None);
    if dynamic && d.linkage.as_deref() != Some(".extern") {
        return Err(format!(
            "Shared array '{}' without a size must be .extern",
            d.name
        ));
    }
    let size =
        u32::try_from(size).map_err(|_| format!("Shared variable '{}' is too large", d.name))?;
    prog.shared.push(SharedVar {
        size,
        align,
        dynamic,
    });
    Ok(prog.shared.len() as u32 - 1)
}

/// Per-function compilation state.
struct Fcx<'a> {
    module: &'a HashMap<String, Sym>,
    globals: &'a [GlobalVar],
    sigs: &'a [Sig],
    prog: &'a mut Program,
    is_entry: bool,
    /// First operation of this function in `prog.code`.
    start: u32,
    scopes: Vec<HashMap<String, Sym>>,
    /// Declared width in bits of each register (0 for constants).
    reg_bits: Vec<u8>,
    template: Vec<u64>,
    consts: HashMap<u64, Reg>,
    /// Registers that were declared (not constants or temporaries).
    declared: Vec<bool>,
    frame: u32,
    frame_align: u32,
    labels: HashMap<String, u32>,
    fixups: Vec<(usize, String, u32)>,
    shared_refs: Vec<u32>,
    callees: Vec<u32>,
    /// First and last operation mentioning each register (for the estimate).
    occ: Vec<(u32, u32)>,
    sink: Reg,
    line: u32,
    /// The `.loc` in force (file number, line; `(0, 0)`: none).
    loc: (u32, u32),
}

fn compile_function(
    f: &Function,
    module: &HashMap<String, Sym>,
    globals: &[GlobalVar],
    sigs: &[Sig],
    prog: &mut Program,
    errors: &mut Vec<CErr>,
) -> Func {
    let start = prog.code.len() as u32;
    let mut cx = Fcx {
        module,
        globals,
        sigs,
        prog,
        is_entry: f.is_entry,
        start,
        scopes: vec![HashMap::new()],
        reg_bits: Vec::new(),
        template: Vec::new(),
        consts: HashMap::new(),
        declared: Vec::new(),
        frame: 0,
        frame_align: 16,
        labels: HashMap::new(),
        fixups: Vec::new(),
        shared_refs: Vec::new(),
        callees: Vec::new(),
        occ: Vec::new(),
        sink: NO_REG,
        line: f.line,
        loc: (0, 0),
    };
    cx.sink = cx.new_reg(64, false);
    let mut params = Vec::new();
    let mut rets = Vec::new();
    let mut kparam_off = 0u32;
    for (list, out) in [(&f.rets, &mut rets), (&f.params, &mut params)] {
        for p in list.iter() {
            let (_, align, size) = match decl_layout(p) {
                Ok(l) => l,
                Err(e) => {
                    errors.push((p.line, e));
                    continue;
                }
            };
            let size = size as u32;
            let sym = if f.is_entry {
                kparam_off = align_up(kparam_off, align);
                let s = Sym::KParam { off: kparam_off };
                kparam_off += size;
                s
            } else {
                let off = cx.alloc_frame(size, align);
                out.push((off, size));
                Sym::Frame { off, param: true }
            };
            if cx.scopes[0].insert(p.name.clone(), sym).is_some() {
                errors.push((p.line, format!("Duplicate parameter '{}'", p.name)));
            }
        }
    }
    let body = f.body.as_deref().unwrap_or(&[]);
    for st in body {
        let r = match st {
            Stmt::Open => {
                cx.scopes.push(HashMap::new());
                Ok(())
            }
            Stmt::Close => {
                cx.scopes.pop();
                Ok(())
            }
            Stmt::Decl(d) => {
                cx.line = d.line;
                cx.decl(d).map_err(|e| (d.line, e))
            }
            Stmt::Label(name, line) => {
                let pc = cx.prog.code.len() as u32;
                if cx.labels.insert(name.clone(), pc).is_some() {
                    Err((*line, format!("Duplicate label '{name}'")))
                } else {
                    Ok(())
                }
            }
            Stmt::Prototype(..) => Ok(()),
            Stmt::Loc(file, line) => {
                cx.loc = (*file, *line);
                Ok(())
            }
            Stmt::Inst(i) => {
                cx.line = i.line;
                cx.inst(i).map_err(|e| (i.line, e))
            }
        };
        if let Err(e) = r {
            errors.push(e);
        }
    }
    // Falling off the end of a body returns.
    cx.emit(Op::Ret, NO_REG, false);
    let fixups = std::mem::take(&mut cx.fixups);
    let mut back_edges = Vec::new();
    for (at, label, line) in fixups {
        match cx.labels.get(&label) {
            Some(&pc) => {
                if let Op::Bra { target } = &mut cx.prog.code[at].op {
                    *target = pc;
                }
                if (pc as usize) <= at {
                    back_edges.push((pc - start, at as u32 - start));
                }
            }
            None => errors.push((line, format!("Unknown label '{label}'"))),
        }
    }
    let reg_estimate = cx.estimate_registers(&back_edges);
    let mut shared_refs = cx.shared_refs.clone();
    shared_refs.sort_unstable();
    shared_refs.dedup();
    let mut callees = cx.callees.clone();
    callees.sort_unstable();
    callees.dedup();
    Func {
        name: f.name.clone(),
        is_entry: f.is_entry,
        entry: start,
        template: cx.template,
        frame_bytes: align_up(cx.frame, 16),
        frame_align: cx.frame_align,
        params,
        rets,
        shared_refs,
        callees,
        reg_estimate,
    }
}

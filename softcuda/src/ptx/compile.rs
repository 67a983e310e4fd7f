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
const UNSUPPORTED_INSTS: [&str; 36] = [
    "tex",
    "tld4",
    "txq",
    "suld",
    "sust",
    "sured",
    "suq",
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
    let mut prog = Program::default();
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

impl Fcx<'_> {
    fn new_reg(&mut self, bits: u8, declared: bool) -> Reg {
        self.reg_bits.push(bits);
        self.template.push(0);
        self.declared.push(declared);
        self.occ.push((u32::MAX, 0));
        self.reg_bits.len() as Reg - 1
    }

    /// A read-only register holding `v`.
    fn constant(&mut self, v: u64) -> Reg {
        if let Some(&r) = self.consts.get(&v) {
            return r;
        }
        let r = self.new_reg(0, false);
        self.template[r as usize] = v;
        self.consts.insert(v, r);
        r
    }

    fn alloc_frame(&mut self, size: u32, align: u32) -> u32 {
        let off = align_up(self.frame, align);
        self.frame = off + size;
        self.frame_align = self.frame_align.max(align);
        off
    }

    fn emit(&mut self, op: Op, guard: Reg, neg: bool) {
        self.prog.code.push(Inst { op, guard, neg });
        self.prog.lines.push(self.line);
    }

    fn pc(&self) -> u32 {
        self.prog.code.len() as u32 - self.start
    }

    fn lookup(&self, name: &str) -> Option<Sym> {
        for s in self.scopes.iter().rev() {
            if let Some(x) = s.get(name) {
                return Some(*x);
            }
        }
        self.module.get(name).copied()
    }

    fn declare(&mut self, name: &str, sym: Sym) -> Result<(), String> {
        let scope = self.scopes.last_mut().ok_or("no scope")?;
        if scope.insert(name.to_string(), sym).is_some() {
            return Err(format!("Duplicate definition of '{name}'"));
        }
        Ok(())
    }

    fn decl(&mut self, d: &VarDecl) -> Result<(), String> {
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
    fn reg(&mut self, name: &str) -> Result<Reg, String> {
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

    fn reg_width(&self, r: Reg) -> u32 {
        u32::from(self.reg_bits.get(r as usize).copied().unwrap_or(64))
    }

    /// A destination register (or the sink for `_`).
    fn dst(&mut self, o: &Operand) -> Result<Reg, String> {
        match o {
            Operand::Name(n) => self.reg(n),
            Operand::Sink => Ok(self.sink),
            _ => Err("Destination must be a register".into()),
        }
    }

    /// The address (in its space) of a variable, into a new temporary.
    fn addr_of(
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
    fn sym_addr(&mut self, sym: Sym, name: &str, off: i64) -> Result<(MemSpace, Addr), String> {
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
    fn src(&mut self, o: &Operand, ty: Ty) -> Result<Reg, String> {
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
    fn mem(&mut self, o: &Operand, space: Option<MemSpace>) -> Result<(MemSpace, Addr), String> {
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

    fn operands<'o>(&self, i: &'o parse::Inst, n: usize) -> Result<&'o [Operand], String> {
        if i.ops.len() != n {
            return Err(format!(
                "Instruction '{}' takes {n} operands, {} given",
                i.opcode,
                i.ops.len()
            ));
        }
        Ok(&i.ops)
    }

    fn inst(&mut self, i: &parse::Inst) -> Result<(), String> {
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

    /// Lowers one instruction to its main operation (helper operations are emitted
    /// before it; `post`, if set, is emitted after it under the same guard).
    fn lower(
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
            "atom" | "red" => self.atom(mn == "red", m, i)?,
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

    /// The rounding modifier of float arithmetic (`.rn` when none is given).
    fn float_rnd(&mut self, m: &mut Mods) -> Rnd {
        match m.one_of(&["rn", "rz", "rm", "rp"]) {
            Some("rz") => Rnd::Rz,
            Some("rm") => Rnd::Rm,
            Some("rp") => Rnd::Rp,
            _ => Rnd::Rn,
        }
    }

    /// `add`, `sub`, `mul` of floats, with any rounding.
    fn float2(&mut self, op: FOp, ty: Ty, m: &mut Mods, o: &[Operand]) -> Result<Op, String> {
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
    fn mad_cc(
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
    fn float_ty(&self, ty: Ty, opc: &str) -> Result<bool, String> {
        match ty {
            Ty::F32 => Ok(false),
            Ty::F64 => Ok(true),
            Ty::F16 => Err(format!("Unsupported type '.f16' in instruction '{opc}'")),
            _ => Err(format!("Illegal type in '{opc}'")),
        }
    }

    fn int_only(&mut self, m: &mut Mods, opc: &str) -> Result<Ty, String> {
        let ty = m.ty()?;
        if !ty.is_int() {
            return Err(format!("Illegal type in '{opc}'"));
        }
        Ok(ty)
    }

    fn widen(&self, ty: Ty) -> Ty {
        match ty {
            Ty::U16 => Ty::U32,
            Ty::S16 => Ty::S32,
            Ty::U32 => Ty::U64,
            Ty::S32 => Ty::S64,
            _ => Ty::B64,
        }
    }

    fn int_op(&mut self, op: IntOp, ty: Ty, o: &[Operand]) -> Result<Op, String> {
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

    fn int_un(&mut self, op: IntUnOp, ty: Ty, o: &[Operand]) -> Result<Op, String> {
        let (d, a) = (self.dst(&o[0])?, self.src(&o[1], ty)?);
        Ok(Op::IntUn {
            op,
            ty: int_ty(ty),
            d,
            a,
        })
    }

    fn mov(&mut self, m: &mut Mods, i: &parse::Inst) -> Result<Op, String> {
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

    fn setp(&mut self, m: &mut Mods, i: &parse::Inst) -> Result<Op, String> {
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

    fn cvt(&mut self, m: &mut Mods, i: &parse::Inst) -> Result<Op, String> {
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

    fn ldst(
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

    fn atom(&mut self, red: bool, m: &mut Mods, i: &parse::Inst) -> Result<Op, String> {
        let opc = i.opcode.as_str();
        let space = space_mod(m);
        if matches!(
            space,
            Some(MemSpace::Local | MemSpace::Const | MemSpace::KParam)
        ) {
            return Err(format!("Illegal state space in '{opc}'"));
        }
        m.ignore(&[
            "relaxed", "acquire", "release", "acq_rel", "sem", "cta", "gpu", "sys", "cluster",
        ]);
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

    fn barrier(&mut self, mn: &str, m: &mut Mods, i: &parse::Inst) -> Result<Op, String> {
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

    fn call(&mut self, i: &parse::Inst) -> Result<Op, String> {
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

    /// See the module documentation.
    fn estimate_registers(&self, back_edges: &[(u32, u32)]) -> u32 {
        let mut ranges: Vec<(u32, u32, u32)> = Vec::new();
        for (r, &(first, last)) in self.occ.iter().enumerate() {
            if !self.declared[r] || first == u32::MAX {
                continue;
            }
            let w = match self.reg_bits[r] {
                1 => 0,
                64 => 2,
                _ => 1,
            };
            if w == 0 {
                continue;
            }
            let mut last = last;
            for &(head, tail) in back_edges {
                if first < head && last >= head && last <= tail {
                    last = tail;
                }
            }
            ranges.push((first, last, w));
        }
        let mut events: Vec<(u32, i64)> = Vec::with_capacity(ranges.len() * 2);
        for (f, l, w) in ranges {
            events.push((f, i64::from(w)));
            events.push((l + 1, -i64::from(w)));
        }
        events.sort_unstable_by_key(|e| (e.0, e.1));
        let (mut cur, mut best) = (0i64, 0i64);
        for (_, w) in events {
            cur += w;
            best = best.max(cur);
        }
        (best as u32 + 2).clamp(1, 255)
    }
}

/// Kernel attributes: parameters, shared layout, stack, registers, directives.
fn kernel_info(fi: u32, f: &Function, prog: &Program, opts: &JitOptions) -> Result<Kernel, CErr> {
    let mut params = Vec::new();
    let mut off = 0u32;
    for p in &f.params {
        let (_, align, size) = decl_layout(p).map_err(|e| (p.line, e))?;
        off = align_up(off, align);
        params.push(ParamInfo {
            offset: off,
            size: size as u32,
            align,
        });
        off += size as u32;
    }
    if off > 32764 {
        return Err((
            f.line,
            format!(
                "Entry function '{}' uses too much parameter space ({off} bytes)",
                f.name
            ),
        ));
    }
    // Reachable functions.
    let mut reach = vec![false; prog.funcs.len()];
    let mut stack = vec![fi];
    while let Some(x) = stack.pop() {
        if std::mem::replace(&mut reach[x as usize], true) {
            continue;
        }
        stack.extend(prog.funcs[x as usize].callees.iter().copied());
    }
    let mut used = vec![false; prog.shared.len()];
    let mut regs = 0;
    for (x, r) in reach.iter().enumerate() {
        if *r {
            for &s in &prog.funcs[x].shared_refs {
                used[s as usize] = true;
            }
            regs = regs.max(prog.funcs[x].reg_estimate);
        }
    }
    let mut shared_offsets = vec![u32::MAX; prog.shared.len()];
    let mut soff = 0u32;
    let mut dyn_align = 16u32;
    for (s, v) in prog.shared.iter().enumerate() {
        if used[s] && !v.dynamic {
            soff = align_up(soff, v.align);
            shared_offsets[s] = soff;
            soff = soff.saturating_add(v.size);
        } else if used[s] {
            dyn_align = dyn_align.max(v.align);
        }
    }
    if soff > 48 * 1024 {
        return Err((
            f.line,
            format!(
                "Entry function '{}' uses too much shared data ({soff:#x} bytes, 0xc000 max)",
                f.name
            ),
        ));
    }
    let dyn_shared_offset = align_up(soff, dyn_align);
    for (s, v) in prog.shared.iter().enumerate() {
        if used[s] && v.dynamic {
            shared_offsets[s] = dyn_shared_offset;
        }
    }
    // Deepest stack: frames are aligned as the interpreter aligns them.
    fn depth(f: u32, prog: &Program, on_path: &mut Vec<bool>) -> u64 {
        let func = &prog.funcs[f as usize];
        if on_path[f as usize] {
            return 0;
        }
        on_path[f as usize] = true;
        let below = func.callees.iter().map(|&c| {
            let cf = &prog.funcs[c as usize];
            u64::from(cf.frame_align) + depth(c, prog, on_path)
        });
        let d = u64::from(func.frame_bytes) + below.max().unwrap_or(0);
        on_path[f as usize] = false;
        d
    }
    let local = depth(fi, prog, &mut vec![false; prog.funcs.len()]).min(u64::from(u32::MAX)) as u32;
    let mut maxntid = None;
    let mut reqntid = None;
    let mut min_blocks = None;
    let mut maxnreg = None;
    let (mut cluster_dims, mut explicit_cluster, mut max_cluster_rank) = (None, false, None);
    for (name, nums, line) in &f.directives {
        let dims = || -> Result<[u32; 3], CErr> {
            if nums.is_empty() || nums.len() > 3 || nums.iter().any(|&n| n == 0 || n > 1024) {
                return Err((*line, format!("Bad .{name} directive")));
            }
            let g = |k: usize| nums.get(k).map_or(1, |&n| n as u32);
            Ok([g(0), g(1), g(2)])
        };
        match name.as_str() {
            "maxntid" => maxntid = Some(dims()?),
            "reqntid" => reqntid = Some(dims()?),
            "minnctapersm" => min_blocks = nums.first().map(|&n| n as u32),
            "maxnreg" => maxnreg = nums.first().map(|&n| n as u32),
            "reqnctapercluster" => cluster_dims = Some(dims()?),
            "explicitcluster" => explicit_cluster = true,
            "maxclusterrank" => max_cluster_rank = nums.first().map(|&n| n as u32),
            "maxnctapersm" | "noreturn" => {}
            "blocksareclusters" => {
                return Err((*line, format!("Unsupported directive '.{name}'")));
            }
            _ => return Err((*line, format!("Unknown directive '.{name}'"))),
        }
    }
    let threads = |d: [u32; 3]| d[0].saturating_mul(d[1]).saturating_mul(d[2]);
    let max_threads = match (maxntid, reqntid) {
        (Some(a), Some(b)) => Some(threads(a).min(threads(b))),
        (Some(a), None) | (None, Some(a)) => Some(threads(a)),
        _ => None,
    };
    if max_threads.is_some_and(|t| t > 1024) {
        return Err((
            f.line,
            format!(
                "Entry function '{}': more than 1024 threads per block",
                f.name
            ),
        ));
    }
    let mut num_regs = regs;
    for cap in [maxnreg, opts.max_registers].into_iter().flatten() {
        num_regs = num_regs.min(cap.max(16));
    }
    if let Some(t) = max_threads {
        num_regs = num_regs.min((65536 / t.max(1)).min(255));
    }
    Ok(Kernel {
        name: f.name.clone(),
        params,
        param_bytes: off,
        static_shared_bytes: soff,
        local_bytes: local,
        num_regs,
        max_threads_per_block: max_threads,
        maxntid,
        reqntid,
        min_blocks_per_sm: min_blocks,
        cluster_dims,
        explicit_cluster,
        max_cluster_rank,
        func: fi,
        shared_offsets,
        dyn_shared_offset,
    })
}

//! Per-kernel results of a compiled module: the register estimate (live ranges,
//! see the module doc) and the kernel's layout and attributes ([`Kernel`]).

use super::*;

impl Fcx<'_> {
    /// See the module documentation.
    pub(super) fn estimate_registers(&self, back_edges: &[(u32, u32)]) -> u32 {
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
pub(super) fn kernel_info(
    fi: u32,
    f: &Function,
    prog: &Program,
    opts: &JitOptions,
) -> Result<Kernel, CErr> {
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
        lanes: crate::ptx::exec::lanes::eligible(prog, fi),
    })
}

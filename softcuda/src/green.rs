//! Green contexts and device resources, the model: SM sets, the record softcuda
//! keeps of a `CUdevResource` inside the struct's opaque padding, the split rule of
//! `cuDevSmResourceSplitByCount`, resource descriptors, and the green contexts
//! themselves ([`Greens`], held in the state). The C ABI is `crate::api::green`.
//!
//! A green context is a context entry of its own (`State::contexts`) that holds a
//! subset of its device's SMs: what depends on the SM count (the cooperative-launch
//! limit, the occupancy grids and cluster counts) sees that subset
//! ([`sm_count`]). Memory allocated while it is current belongs to the device's
//! primary context, which the green context retains ([`memory_owner`]).

use crate::state::State;
use crate::stream::Event;
use crate::types::{CU_DEV_RESOURCE_TYPE_SM, CUdevResource, CUresult, code};
use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher;
use std::sync::{Arc, LazyLock};

/// The most SMs a resource can name.
pub const MAX_SMS: u32 = 256;

/// A set of SMs of one device (bit `i`: SM `i`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SmSet(pub [u64; 4]);

impl SmSet {
    /// SMs `0..n` (at most [`MAX_SMS`]).
    pub fn first(n: u32) -> Self {
        let mut s = SmSet::default();
        for i in 0..n.min(MAX_SMS) {
            s.insert(i);
        }
        s
    }

    fn insert(&mut self, i: u32) {
        self.0[(i / 64) as usize] |= 1 << (i % 64);
    }

    /// How many SMs.
    pub fn count(&self) -> u32 {
        self.0.iter().map(|w| w.count_ones()).sum()
    }

    /// Whether the two sets share an SM.
    pub fn overlaps(&self, o: &SmSet) -> bool {
        self.0.iter().zip(o.0).any(|(a, b)| a & b != 0)
    }

    /// The union.
    pub fn union(&self, o: &SmSet) -> SmSet {
        let mut r = *self;
        for (a, b) in r.0.iter_mut().zip(o.0) {
            *a |= b;
        }
        r
    }

    /// The SMs, ascending.
    fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        (0..MAX_SMS).filter(|&i| self.0[(i / 64) as usize] >> (i % 64) & 1 == 1)
    }

    /// Splits off the `n` lowest SMs: (them, the rest).
    fn take(&self, n: u32) -> (SmSet, SmSet) {
        let mut low = SmSet::default();
        let mut rest = SmSet::default();
        for (k, i) in self.iter().enumerate() {
            if (k as u32) < n {
                low.insert(i);
            } else {
                rest.insert(i);
            }
        }
        (low, rest)
    }
}

/// Where a resource came from: what may be done with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `cuDeviceGetDevResource`, `cuCtxGetDevResource`, `cuGreenCtxGetDevResource`:
    /// may be split.
    Whole,
    /// A group or the remainder of split `.0`: may not be split again; may be
    /// combined with other outputs of the same split into a descriptor.
    Split(u64),
}

/// What softcuda knows of a resource it wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resource {
    /// The device ordinal.
    pub device: usize,
    /// Its origin.
    pub origin: Origin,
    /// Its SMs.
    pub sms: SmSet,
}

/// "SCDRES01": marks a record softcuda wrote.
const MAGIC: u64 = u64::from_le_bytes(*b"SCDRES01");

/// The key of the records' checksum, fresh in each process: a record cannot be
/// forged or edited (its `smCount` included) without softcuda noticing.
static KEY: LazyLock<std::collections::hash_map::RandomState> =
    LazyLock::new(std::collections::hash_map::RandomState::new);

fn checksum(type_: u32, sm_count: u32, body: &[u8]) -> u64 {
    KEY.hash_one((type_, sm_count, body))
}

/// The record layout inside `_internal_padding` (92 bytes): magic (8), device (4),
/// origin (4: 1 whole, 2 split), split id (8), SM mask (32), checksum (8).
const BODY: usize = 56;

impl Resource {
    /// Writes `self` as a `CU_DEV_RESOURCE_TYPE_SM` resource.
    pub fn write(&self) -> CUdevResource {
        let mut r = CUdevResource::zeroed();
        r.type_ = CU_DEV_RESOURCE_TYPE_SM;
        r.data[..4].copy_from_slice(&self.sms.count().to_ne_bytes());
        let p = &mut r._internal_padding;
        p[0..8].copy_from_slice(&MAGIC.to_le_bytes());
        p[8..12].copy_from_slice(&(self.device as u32).to_le_bytes());
        let (kind, split) = match self.origin {
            Origin::Whole => (1u32, 0u64),
            Origin::Split(id) => (2, id),
        };
        p[12..16].copy_from_slice(&kind.to_le_bytes());
        p[16..24].copy_from_slice(&split.to_le_bytes());
        for (i, w) in self.sms.0.iter().enumerate() {
            p[24 + 8 * i..32 + 8 * i].copy_from_slice(&w.to_le_bytes());
        }
        let sum = checksum(r.type_, self.sms.count(), &p[..BODY]);
        p[BODY..BODY + 8].copy_from_slice(&sum.to_le_bytes());
        r
    }

    /// Reads a resource softcuda wrote: `INVALID_RESOURCE_TYPE` for a resource of
    /// another type, `INVALID_VALUE` for one it did not write (zeroed, forged, or
    /// edited since).
    pub fn read(r: &CUdevResource) -> Result<Resource, CUresult> {
        if r.type_ != CU_DEV_RESOURCE_TYPE_SM {
            return Err(code::INVALID_RESOURCE_TYPE);
        }
        let p = &r._internal_padding;
        let u64_at = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&p[i..i + 8]);
            u64::from_le_bytes(b)
        };
        let u32_at = |i: usize| {
            let mut b = [0u8; 4];
            b.copy_from_slice(&p[i..i + 4]);
            u32::from_le_bytes(b)
        };
        if u64_at(0) != MAGIC || u64_at(BODY) != checksum(r.type_, r.sm_count(), &p[..BODY]) {
            return Err(code::INVALID_VALUE);
        }
        let sms = SmSet([u64_at(24), u64_at(32), u64_at(40), u64_at(48)]);
        if sms.count() != r.sm_count() {
            return Err(code::INVALID_VALUE);
        }
        let origin = match (u32_at(12), u64_at(16)) {
            (1, 0) => Origin::Whole,
            (2, id) if id != 0 => Origin::Split(id),
            _ => return Err(code::INVALID_VALUE),
        };
        Ok(Resource {
            device: u32_at(8) as usize,
            origin,
            sms,
        })
    }
}

/// The SM granularity of a split on a device of compute capability `major`: groups
/// are multiples of 8 SMs from 9.0 on (a GPC's worth of co-scheduled SMs), of 2
/// below, and of 2 everywhere with `IGNORE_SM_COSCHEDULING`.
pub fn granularity(major: u32, flags: u32) -> u32 {
    if major >= 9 && flags & crate::types::CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING == 0 {
        8
    } else {
        2
    }
}

/// The size of each group of a split: `min_count` rounded up to the granularity
/// (0 counts as the granularity).
pub fn group_size(min_count: u32, granularity: u32) -> u32 {
    min_count
        .max(1)
        .div_ceil(granularity)
        .saturating_mul(granularity)
}

/// Splits `input` into at most `max_groups` groups of `size` SMs each (the lowest
/// SMs first): the groups and the remainder.
pub fn split(input: &SmSet, size: u32, max_groups: u32) -> (Vec<SmSet>, SmSet) {
    let n = input.count().checked_div(size).unwrap_or(0).min(max_groups);
    let mut rest = *input;
    let mut groups = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let (g, r) = rest.take(size);
        groups.push(g);
        rest = r;
    }
    (groups, rest)
}

/// A resource descriptor (`cuDevResourceGenerateDesc`): never destroyed (CUDA has
/// no function for it); forgotten at `control::reset`.
#[derive(Debug, Clone, Copy)]
pub struct Desc {
    /// The device ordinal.
    pub device: usize,
    /// The SMs.
    pub sms: SmSet,
}

/// A green context.
pub struct Green {
    /// The device ordinal.
    pub device: usize,
    /// Its SMs.
    pub sms: SmSet,
    /// Its context entry (`cuCtxFromGreenCtx`'s handle).
    pub ctx: u64,
    /// The device's primary context, retained while the green context lives.
    pub primary: u64,
    /// `cuGreenCtxWaitEvent`s: (event, record) every stream created later in the
    /// context starts by waiting for, and every default-stream operation waits for.
    pub gates: Vec<(Arc<Event>, u64)>,
}

/// Everything about green contexts the state holds.
#[derive(Default)]
pub struct Greens {
    /// Green contexts by id (the id is `cuGreenCtxGetId`'s).
    pub greens: HashMap<u64, Green>,
    /// Context entry id → green context id.
    pub by_ctx: HashMap<u64, u64>,
    /// Descriptors by id.
    pub descs: HashMap<u64, Desc>,
    /// Streams of destroyed green contexts, not yet destroyed themselves: every use
    /// but `cuStreamDestroy` is `STREAM_DETACHED`.
    pub detached: HashSet<u64>,
}

impl Greens {
    /// The green context whose context entry is `ctx`.
    pub fn of_ctx(&self, ctx: u64) -> Option<&Green> {
        self.greens.get(self.by_ctx.get(&ctx)?)
    }

    /// The green context id whose context entry is `ctx`.
    pub fn id_of_ctx(&self, ctx: u64) -> Option<u64> {
        self.by_ctx.get(&ctx).copied()
    }

    /// Live green contexts.
    pub fn live(&self) -> usize {
        self.greens.len()
    }
}

/// The SM count a launch in context `ctx` sees, if `ctx` is a green context's
/// (`None`: the device's).
pub fn sm_count(s: &State, ctx: u64) -> Option<u32> {
    s.green.of_ctx(ctx).map(|g| g.sms.count())
}

/// The context that owns memory allocated while `ctx` is current: the primary
/// context for a green context, `ctx` itself otherwise.
pub fn memory_owner(s: &State, ctx: u64) -> u64 {
    s.green.of_ctx(ctx).map_or(ctx, |g| g.primary)
}

/// The contexts whose memory a kernel of `ctx` reaches besides its own and its
/// peers': a green context's primary context.
pub fn shares_memory_with(s: &State, ctx: u64) -> Option<u64> {
    s.green.of_ctx(ctx).map(|g| g.primary)
}

/// The error for a stream id that names no live stream: `STREAM_DETACHED` for a
/// stream of a destroyed green context, `INVALID_HANDLE` otherwise.
pub fn missing_stream(s: &State, id: u64) -> CUresult {
    if s.green.detached.contains(&id) {
        code::STREAM_DETACHED
    } else {
        code::INVALID_HANDLE
    }
}

/// The waits (`cuGreenCtxWaitEvent`) that work of context `ctx` must honour.
pub fn gates(s: &State, ctx: u64) -> Vec<(Arc<Event>, u64)> {
    s.green
        .of_ctx(ctx)
        .map_or_else(Vec::new, |g| g.gates.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_edits_are_refused() {
        let r = Resource {
            device: 1,
            origin: Origin::Split(7),
            sms: SmSet::first(16),
        };
        let mut w = r.write();
        assert_eq!(w.sm_count(), 16);
        assert_eq!(Resource::read(&w), Ok(r));
        w.data[0] = 8;
        assert_eq!(Resource::read(&w), Err(code::INVALID_VALUE));
        assert_eq!(
            Resource::read(&CUdevResource::zeroed()),
            Err(code::INVALID_RESOURCE_TYPE)
        );
    }

    #[test]
    fn splits_round_up_and_leave_a_remainder() {
        assert_eq!(group_size(5, 8), 8);
        assert_eq!(group_size(0, 2), 2);
        assert_eq!(group_size(9, 8), 16);
        let (g, rest) = split(&SmSet::first(132), 16, 100);
        assert_eq!(g.len(), 8);
        assert_eq!(rest.count(), 4);
        assert!(!g[0].overlaps(&g[1]));
        let (g, rest) = split(&SmSet::first(132), 8, 3);
        assert_eq!((g.len(), rest.count()), (3, 108));
    }
}

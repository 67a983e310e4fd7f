//! Peer work in safe code: several contexts bound at once ([`PeerGroup`]), buffers
//! that belong to one of them and can be reached from the others ([`PeerBuffer`]),
//! and peer copies between them.
//!
//! A thread has one current context at a time, and a nested binding freezes the
//! outer one (CF3), so two contexts' objects never meet in one call through
//! [`CurrentContext`] alone. A group binds N contexts — one per device — for the
//! duration of a closure:
//!
//! - the group's buffers ([`PeerGroup::alloc`]) live for the group, whichever member
//!   is current: they borrow the group (an invariant brand `'g`, fresh for each
//!   binding), not a member's token, so they never escape the group (and never reach
//!   another group: the brands differ);
//! - [`PeerGroup::enter`] makes one member current and hands its token
//!   ([`Entered`], which derefs to [`CurrentContext`]) to a closure: modules, streams
//!   and launches work there as in any binding. A group buffer becomes a kernel
//!   argument only through [`PeerBuffer::view`]/[`view_mut`](PeerBuffer::view_mut),
//!   which check once that the entered member owns the buffer or has peer access to
//!   its owner ([`PeerGroup::enable_peer_access`]; otherwise
//!   [`CudaError::PeerAccessNotEnabled`]). The view borrows both the buffer and the
//!   token, so it ends with the `enter` (and cannot be used under a nested binding,
//!   which borrows the token mutably);
//! - an `enter` does not return — not even by unwinding — before the entered context
//!   has finished its work (`cuCtxSynchronize`), so no kernel or copy that reached a
//!   group buffer through it is still running when the buffer can be released. A
//!   failed wait aborts the process rather than let memory in use be freed (as
//!   [`Stream::scope`](crate::stream::Stream::scope) does), unless the failure is a
//!   sticky one, after which the context's work was abandoned. A capture in
//!   progress on another thread in the same context (which makes the driver refuse
//!   the wait) is waited out — the driver may invalidate that capture meanwhile
//!   (it then ends with `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`, typed, on its
//!   thread). A group buffer dropped *during* an `enter` is freed
//!   when the `enter` has waited;
//! - peer access the group enabled stays enabled while any group is bound in the
//!   process: [`CurrentContext::disable_peer_access`] refuses
//!   ([`CudaError::PeerGroupsLive`]). Code outside this crate that disables it (the
//!   runtime, another copy of the crate) breaks the contract of the trust boundary;
//!   a GPU then faults on the access (an MMU fault, reported as a sticky
//!   `CUDA_ERROR_ILLEGAL_ADDRESS`) rather than reaching other memory;
//! - a group binding is a root binding: it needs a thread with no binding and no
//!   current context ([`CudaError::ContextAlreadyBound`]); inside it, the members are
//!   made current only by `enter` (one at a time: entering again inside an `enter`
//!   is [`CudaError::ContextAlreadyBound`]) and briefly by the group's own calls.
//!
//! Peer copies ([`PeerBuffer::copy_from_peer`], `cuMemcpyPeer`) need no peer access:
//! the driver stages them when the devices cannot reach each other.

use crate::context::{CurrentContext, RootClaim, bind_raw, same_driver};
use crate::device::Device;
use crate::error::{CudaError, check};
use crate::loader::Driver;
use crate::memory::{self, DeviceCopy, DeviceSlice, DeviceSliceMut, bounds, bytes};
use crate::stream::Stream;
use crate::sys::{CUcontext, CUdeviceptr, CUresult};
use crate::{Context, PrimaryContext};
use core::cell::{Cell, RefCell};
use core::marker::PhantomData;
use core::ops::{Deref, DerefMut, RangeBounds};

/// Invariant in `'g` (fresh for each group binding), neither `Send` nor `Sync`.
type Brand<'g> = PhantomData<(fn(&'g ()) -> &'g (), *const ())>;

/// A context taking part in a group: a created or a retained primary one.
#[derive(Clone, Copy)]
pub enum PeerMember<'c> {
    /// A context this program created.
    Created(&'c Context),
    /// A device's retained primary context.
    Primary(&'c PrimaryContext),
}

impl core::fmt::Debug for PeerMember<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            PeerMember::Created(c) => f.debug_tuple("Created").field(c).finish(),
            PeerMember::Primary(p) => f.debug_tuple("Primary").field(p).finish(),
        }
    }
}

impl<'c> From<&'c Context> for PeerMember<'c> {
    fn from(c: &'c Context) -> Self {
        PeerMember::Created(c)
    }
}

impl<'c> From<&'c PrimaryContext> for PeerMember<'c> {
    fn from(c: &'c PrimaryContext) -> Self {
        PeerMember::Primary(c)
    }
}

impl<'c> From<&'c crate::device_pool::PoolContext> for PeerMember<'c> {
    /// A [`DevicePool`](crate::device_pool::DevicePool)'s context, as lent by
    /// [`with_all`](crate::device_pool::DevicePool::with_all).
    fn from(c: &'c crate::device_pool::PoolContext) -> Self {
        match c {
            crate::device_pool::PoolContext::Primary(p) => PeerMember::Primary(p),
            crate::device_pool::PoolContext::Created(c) => PeerMember::Created(c),
        }
    }
}

/// A member's context, as the group uses it.
struct Slot<'g> {
    raw: CUcontext,
    device: Device,
    poisoned: &'g Cell<Option<CUresult>>,
}

/// Which member of a group: an index that is valid in its group only (the brand).
#[derive(Clone, Copy)]
pub struct Member<'g> {
    index: usize,
    _brand: Brand<'g>,
}

impl Member<'_> {
    /// Its position in the list the group was bound with.
    pub fn index(self) -> usize {
        self.index
    }
}

impl core::fmt::Debug for Member<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Member({})", self.index)
    }
}

/// N contexts bound at once, one per device (see the module docs). Made by
/// [`PeerGroup::bind`]; lent to its closure as `&'g PeerGroup<'g>`.
pub struct PeerGroup<'g> {
    driver: &'static Driver,
    slots: Vec<Slot<'g>>,
    /// `access[a * n + o]`: member `a` may reach member `o`'s memory (enabled by this
    /// group, or found already enabled).
    access: Vec<Cell<bool>>,
    /// The member an `enter` made current, if one is in progress.
    entered: Cell<Option<usize>>,
    /// Allocations (owner, address) dropped during an `enter`: freed once it has
    /// waited for its context.
    deferred: RefCell<Vec<(usize, CUdeviceptr)>>,
    _brand: Brand<'g>,
}

impl core::fmt::Debug for PeerGroup<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let members: Vec<_> = self.slots.iter().map(|s| (s.raw, &s.device)).collect();
        f.debug_struct("PeerGroup")
            .field("members", &members)
            .field("entered", &self.entered.get())
            .finish()
    }
}

impl PeerGroup<'_> {
    /// Binds `members` — at least one, all of one [`Driver`], each on its own device —
    /// for the duration of `f`. Refused: on a thread with a binding or a current
    /// context ([`CudaError::ContextAlreadyBound`]), in a host callback, for a context
    /// of another driver ([`CudaError::ForeignDriver`]), a poisoned one
    /// ([`CudaError::ContextPoisoned`]), none or two on one device
    /// ([`CudaError::InvalidArgument`]).
    ///
    /// ```compile_fail
    /// // A group buffer cannot escape its group.
    /// # fn f(c: &oxicuda_driver::Context) {
    /// use oxicuda_driver::peer::PeerGroup;
    /// let leaked = PeerGroup::bind([c], |g| {
    ///     let m = g.member(0).unwrap();
    ///     g.alloc::<f32>(m, 4).unwrap()
    /// });
    /// # }
    /// ```
    pub fn bind<'c, R>(
        members: impl IntoIterator<Item = impl Into<PeerMember<'c>>>,
        f: impl for<'g> FnOnce(&'g PeerGroup<'g>) -> R,
    ) -> Result<R, CudaError> {
        crate::error::refuse_in_host_callback()?;
        let members: Vec<(&'static Driver, CUcontext, &'c Cell<Option<CUresult>>)> = members
            .into_iter()
            .map(|m| match m.into() {
                PeerMember::Created(c) => c.parts(),
                PeerMember::Primary(p) => p.parts(),
            })
            .collect();
        let Some(&(driver, _, _)) = members.first() else {
            return Err(CudaError::InvalidArgument {
                parameter: "members",
                rule: "a group needs at least one context",
            });
        };
        for &(d, _, poisoned) in &members {
            same_driver(driver, d)?;
            if let Some(code) = poisoned.get() {
                return Err(CudaError::ContextPoisoned { code });
            }
        }
        let _root = RootClaim::claim(driver)?;
        let mut slots: Vec<Slot<'c>> = Vec::with_capacity(members.len());
        for (_, raw, poisoned) in members {
            let device = bind_raw(driver, raw, false, poisoned, |cur| cur.device())??;
            if slots.iter().any(|s| s.device == device) {
                return Err(CudaError::InvalidArgument {
                    parameter: "members",
                    rule: "one context per device: two members are on the same device",
                });
            }
            slots.push(Slot {
                raw,
                device,
                poisoned,
            });
        }
        let n = slots.len();
        let group = PeerGroup {
            driver,
            slots,
            access: (0..n * n).map(|_| Cell::new(false)).collect(),
            entered: Cell::new(None),
            deferred: RefCell::new(Vec::new()),
            _brand: PhantomData,
        };
        let _live = crate::activity::GroupLive::new();
        Ok(f(&group))
    }
}

impl<'g> PeerGroup<'g> {
    /// How many members.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether it has no member (never: a group has at least one).
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The member at `index` in the list the group was bound with.
    pub fn member(&self, index: usize) -> Option<Member<'g>> {
        (index < self.slots.len()).then_some(Member {
            index,
            _brand: PhantomData,
        })
    }

    /// Every member, in order.
    pub fn members(&self) -> impl Iterator<Item = Member<'g>> + use<'g> {
        (0..self.slots.len()).map(|index| Member {
            index,
            _brand: PhantomData,
        })
    }

    /// The driver.
    pub fn driver(&self) -> &'static Driver {
        self.driver
    }

    fn slot(&self, m: Member<'g>) -> Result<&Slot<'g>, CudaError> {
        // A member of this group (the brand) indexes its slots; never out of range.
        self.slots.get(m.index).ok_or(CudaError::InvalidArgument {
            parameter: "member",
            rule: "not a member of this group",
        })
    }

    /// Runs `f` with `m`'s context current (a short nested binding: the group's own
    /// calls, which hand no token out).
    fn within<R>(
        &self,
        m: Member<'g>,
        f: impl for<'x> FnOnce(&mut CurrentContext<'x>) -> Result<R, CudaError>,
    ) -> Result<R, CudaError> {
        let s = self.slot(m)?;
        bind_raw(self.driver, s.raw, false, s.poisoned, f)?
    }

    /// The member's device.
    pub fn device(&self, m: Member<'g>) -> Device {
        // The brand makes `m` one of this group's members.
        self.slots
            .get(m.index)
            .map_or_else(|| self.slots[0].device, |s| s.device)
    }

    /// Whether kernels of `accessor` may reach `owner`'s memory: the same member, or
    /// peer access this group enabled (or found enabled).
    pub fn peer_access(&self, accessor: Member<'g>, owner: Member<'g>) -> bool {
        accessor.index == owner.index
            || self
                .access
                .get(accessor.index * self.slots.len() + owner.index)
                .is_some_and(Cell::get)
    }

    /// Whether the devices can reach each other's memory at all
    /// (`cuDeviceCanAccessPeer`).
    pub fn can_access_peer(
        &self,
        accessor: Member<'g>,
        owner: Member<'g>,
    ) -> Result<bool, CudaError> {
        if accessor.index == owner.index {
            return Ok(true);
        }
        self.device(accessor).can_access_peer(&self.device(owner))
    }

    /// Lets `accessor`'s kernels reach `owner`'s memory (`cuCtxEnablePeerAccess`); it
    /// stays enabled while any group is bound (see the module docs). Access enabled
    /// before (by this program or other code) is taken as enabled. A member and
    /// itself: nothing to do. Devices without a peer path:
    /// `CudaError::Driver(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED)`.
    pub fn enable_peer_access(
        &self,
        accessor: Member<'g>,
        owner: Member<'g>,
    ) -> Result<(), CudaError> {
        if accessor.index == owner.index || self.peer_access(accessor, owner) {
            return Ok(());
        }
        let peer = self.slot(owner)?.raw;
        let driver = self.driver;
        self.within(accessor, |_| {
            // SAFETY: `peer` is a live context of this driver (its owner is borrowed by
            // the group); flags must be 0.
            let r = unsafe { driver.table().cuCtxEnablePeerAccess()?(peer, 0) };
            if r == CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
                return Ok(());
            }
            check(r)
        })?;
        if let Some(c) = self
            .access
            .get(accessor.index * self.slots.len() + owner.index)
        {
            c.set(true);
        }
        Ok(())
    }

    /// Enables peer access between every ordered pair of members whose devices can
    /// reach each other ([`can_access_peer`](Self::can_access_peer)); returns how many
    /// ordered pairs have access afterwards.
    pub fn enable_all_peer_access(&self) -> Result<usize, CudaError> {
        let mut pairs = 0;
        for a in self.members() {
            for o in self.members() {
                if a.index != o.index && self.can_access_peer(a, o)? {
                    self.enable_peer_access(a, o)?;
                    pairs += 1;
                }
            }
        }
        Ok(pairs)
    }

    /// Allocates `len` elements (non-zero) in `owner`'s context; the buffer lives
    /// until dropped or the group ends.
    pub fn alloc<T: DeviceCopy>(
        &'g self,
        owner: Member<'g>,
        len: usize,
    ) -> Result<PeerBuffer<'g, T>, CudaError> {
        let driver = self.driver;
        let ptr = self.within(owner, |_| {
            let mut ptr = 0;
            // SAFETY: a valid out-pointer; the owner's context is current.
            check(unsafe { driver.table().cuMemAlloc()?(&mut ptr, bytes::<T>(len)?) })?;
            crate::leaks::created(crate::leaks::Kind::DeviceAllocations, ptr);
            Ok(ptr)
        })?;
        Ok(PeerBuffer {
            group: self,
            owner: owner.index,
            ptr,
            len,
            _t: PhantomData,
        })
    }

    /// Allocates a buffer in `owner`'s context holding a copy of `data`.
    pub fn alloc_from<T: DeviceCopy>(
        &'g self,
        owner: Member<'g>,
        data: &[T],
    ) -> Result<PeerBuffer<'g, T>, CudaError> {
        let mut b = self.alloc(owner, data.len())?;
        b.copy_from_host(data)?;
        Ok(b)
    }

    /// Makes `member` current and runs `f` with its token; returns once the member's
    /// context has finished all its work — also when `f` panics (see the module docs:
    /// a failed wait aborts). [`CudaError::ContextAlreadyBound`] inside another
    /// `enter` of the group; the usual binding errors otherwise
    /// ([`CudaError::ContextPoisoned`], ...).
    ///
    /// ```compile_fail
    /// // A view of a group buffer ends with the `enter` that checked it.
    /// # fn f(c: &oxicuda_driver::Context) {
    /// use oxicuda_driver::peer::PeerGroup;
    /// PeerGroup::bind([c], |g| {
    ///     let m = g.member(0).unwrap();
    ///     let b = g.alloc::<f32>(m, 4).unwrap();
    ///     let v = g.enter(m, |e| b.view(e).unwrap()).unwrap();
    /// });
    /// # }
    /// ```
    pub fn enter<R>(
        &'g self,
        member: Member<'g>,
        f: impl for<'e> FnOnce(&mut Entered<'g, 'e>) -> R,
    ) -> Result<R, CudaError> {
        if self.entered.get().is_some() {
            return Err(CudaError::ContextAlreadyBound);
        }
        let s = self.slot(member)?;
        let driver = self.driver;
        bind_raw(driver, s.raw, false, s.poisoned, |cur| {
            self.entered.set(Some(member.index));
            let settle = Settle { group: self };
            let mut entered = Entered {
                cur: cur.twin(),
                member,
                group: self,
            };
            let r = f(&mut entered);
            settle.finish().map(|()| r)
        })
        .and_then(|r| r)
    }
}

/// Waits for the current (entered) context's work: [`crate::wait::settled_or_abort`]
/// (success, or a sticky error after which the work was abandoned; the process
/// aborts on anything else).
///
/// A capture in progress on another thread in the same context makes the driver
/// refuse the wait (`STREAM_CAPTURE_UNSUPPORTED`, also in relaxed mode): that is
/// no failure, only "not now" — it is retried, every millisecond, until that capture
/// ends. (This thread's own captures have ended: they end inside the closure.)
fn wait_for_current(driver: &'static Driver) -> Result<(), CudaError> {
    crate::wait::settled_or_abort(driver, "a peer group's work", || {
        loop {
            let r = match driver.table().cuCtxSynchronize_v2000() {
                // SAFETY: no arguments; a context is current.
                Ok(sync) => unsafe { sync() },
                Err(_) => CUresult::CUDA_ERROR_NOT_FOUND,
            };
            if r != CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED {
                break r;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    })
}

/// Ends an `enter`: waits for the entered context's work, then leaves — through
/// [`finish`](Self::finish), which returns a sticky error of the wait, or when
/// dropped by an unwinding closure.
struct Settle<'a, 'g> {
    group: &'a PeerGroup<'g>,
}

impl Settle<'_, '_> {
    fn finish(self) -> Result<(), CudaError> {
        let r = self.settle();
        core::mem::forget(self);
        r
    }

    /// Waits (the entered context is current: the enter's binding is still in
    /// progress), leaves the enter, and frees what was dropped during it.
    fn settle(&self) -> Result<(), CudaError> {
        let r = wait_for_current(self.group.driver);
        self.group.entered.set(None);
        let pending = match self.group.deferred.try_borrow_mut() {
            Ok(mut d) => core::mem::take(&mut *d),
            Err(_) => Vec::new(),
        };
        for (owner, ptr) in pending {
            free_in(self.group, owner, ptr);
        }
        r
    }
}

impl Drop for Settle<'_, '_> {
    // Only on unwind: `finish` forgets the guard.
    fn drop(&mut self) {
        if let Err(e) = self.settle() {
            tracing::error!(%e, "the entered context failed while its work was awaited");
        }
    }
}

/// A member's token inside [`PeerGroup::enter`]: derefs to its [`CurrentContext`],
/// and is what makes a group buffer a kernel argument ([`PeerBuffer::view`]).
///
/// ```compile_fail
/// // CF1 for the entered token: it stays on its thread.
/// fn send<T: Send>() {}
/// send::<oxicuda_driver::peer::Entered<'static, 'static>>();
/// ```
pub struct Entered<'g, 'e> {
    cur: CurrentContext<'e>,
    member: Member<'g>,
    group: &'g PeerGroup<'g>,
}

impl core::fmt::Debug for Entered<'_, '_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Entered")
            .field("member", &self.member)
            .field("context", &self.cur)
            .finish()
    }
}

impl<'g> Entered<'g, '_> {
    /// Which member is current.
    pub fn member(&self) -> Member<'g> {
        self.member
    }

    /// The group.
    pub fn group(&self) -> &'g PeerGroup<'g> {
        self.group
    }
}

impl<'e> Deref for Entered<'_, 'e> {
    type Target = CurrentContext<'e>;
    fn deref(&self) -> &CurrentContext<'e> {
        &self.cur
    }
}

impl<'e> DerefMut for Entered<'_, 'e> {
    fn deref_mut(&mut self) -> &mut CurrentContext<'e> {
        &mut self.cur
    }
}

/// `len` elements of `T` in one member's memory, alive for the group (see the module
/// docs). Neither `Send` nor `Sync`.
pub struct PeerBuffer<'g, T: DeviceCopy> {
    group: &'g PeerGroup<'g>,
    owner: usize,
    ptr: CUdeviceptr,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: DeviceCopy> core::fmt::Debug for PeerBuffer<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let name = format!("PeerBuffer<{}>", crate::memory::short_type_name::<T>());
        f.debug_struct(&name)
            .field("owner", &self.owner)
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("len", &self.len)
            .finish()
    }
}

impl<'g, T: DeviceCopy> PeerBuffer<'g, T> {
    /// Elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The member whose context owns the memory.
    pub fn owner(&self) -> Member<'g> {
        Member {
            index: self.owner,
            _brand: PhantomData,
        }
    }

    /// The device address.
    pub fn device_ptr(&self) -> CUdeviceptr {
        self.ptr
    }

    fn reachable_from(&self, at: &Entered<'g, '_>) -> Result<(), CudaError> {
        if self.group.peer_access(at.member, self.owner()) {
            Ok(())
        } else {
            Err(CudaError::PeerAccessNotEnabled {
                accessor: self.group.device(at.member).ordinal(),
                owner: self.group.device(self.owner()).ordinal(),
            })
        }
    }

    /// A shared view for the entered member's kernels and copies: the owner's own
    /// memory, or a peer's that it has access to
    /// ([`CudaError::PeerAccessNotEnabled`] otherwise).
    pub fn view<'v>(&'v self, at: &'v Entered<'g, '_>) -> Result<DeviceSlice<'v, T>, CudaError> {
        self.reachable_from(at)?;
        Ok(memory::shared(self.group.driver, self.ptr, self.len))
    }

    /// An exclusive view, on the terms of [`view`](Self::view).
    pub fn view_mut<'v>(
        &'v mut self,
        at: &'v Entered<'g, '_>,
    ) -> Result<DeviceSliceMut<'v, T>, CudaError> {
        self.reachable_from(at)?;
        Ok(memory::exclusive(self.group.driver, self.ptr, self.len))
    }

    /// Copies `src` (same length) into the buffer; returns when done.
    pub fn copy_from_host(&mut self, src: &[T]) -> Result<(), CudaError> {
        let (driver, ptr, len) = (self.group.driver, self.ptr, self.len);
        self.group.within(self.owner(), |_| {
            memory::exclusive::<T>(driver, ptr, len).copy_from_host(src)
        })
    }

    /// Copies the buffer into `dst` (same length); returns when done.
    pub fn copy_to_host(&self, dst: &mut [T]) -> Result<(), CudaError> {
        let (driver, ptr, len) = (self.group.driver, self.ptr, self.len);
        self.group.within(self.owner(), |_| {
            memory::shared::<T>(driver, ptr, len).copy_to_host(dst)
        })
    }

    /// The buffer's contents.
    pub fn to_vec(&self) -> Result<Vec<T>, CudaError> {
        let (driver, ptr, len) = (self.group.driver, self.ptr, self.len);
        self.group.within(self.owner(), |_| {
            memory::shared::<T>(driver, ptr, len).to_vec()
        })
    }

    /// The device addresses and byte count of a copy of `src[range]` to `self[at..]`.
    fn peer_extent(
        &self,
        at: usize,
        src: &PeerBuffer<'g, T>,
        range: impl RangeBounds<usize>,
    ) -> Result<(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, usize), CudaError> {
        let (start, end) = bounds(range, src.len)?;
        let n = end - start;
        let dst_end = at.checked_add(n).ok_or(CudaError::OutOfRange {
            start: at,
            end: usize::MAX,
            len: self.len,
        })?;
        bounds(at..dst_end, self.len)?;
        let offset = |i: usize| bytes::<T>(i).map(|b| b as u64);
        Ok((
            self.ptr + offset(at)?,
            self.group.slot(self.owner())?.raw,
            src.ptr + offset(start)?,
            self.group.slot(src.owner())?.raw,
            bytes::<T>(n)?,
        ))
    }

    /// Copies `src[range]` — a buffer of any member, this one's too — to this
    /// buffer's elements from `at` on (`cuMemcpyPeer`); returns when done. No peer
    /// access is needed. [`CudaError::OutOfRange`] if either side does not hold the
    /// range.
    pub fn copy_from_peer(
        &mut self,
        at: usize,
        src: &PeerBuffer<'g, T>,
        range: impl RangeBounds<usize>,
    ) -> Result<(), CudaError> {
        let (dst, dst_ctx, from, src_ctx, n) = self.peer_extent(at, src, range)?;
        if n == 0 {
            return Ok(());
        }
        let driver = self.group.driver;
        // The driver wants a current context; the destination's.
        self.group.within(self.owner(), |_| {
            let t = driver.table();
            // SAFETY: both ranges lie within live allocations of the two (live)
            // contexts (checked above); `&mut self` and `&src` are distinct buffers.
            check(unsafe { t.cuMemcpyPeer()?(dst, dst_ctx, from, src_ctx, n) })?;
            // cuMemcpyPeer may return before the copy is done (it is ordered only
            // with the two contexts' work): wait for the destination's, which holds
            // it, so that "returns when done" holds for every member.
            // SAFETY: no arguments; the destination's context is current.
            check(unsafe { t.cuCtxSynchronize_v2000()?() })
        })
    }

    /// [`copy_from_peer`](Self::copy_from_peer) queued on `stream`, a stream of the
    /// entered member `at_entered`; the enter waits for it before it returns.
    pub fn copy_from_peer_async(
        &mut self,
        at: usize,
        src: &PeerBuffer<'g, T>,
        range: impl RangeBounds<usize>,
        stream: &Stream<'_>,
        _entered: &Entered<'g, '_>,
    ) -> Result<(), CudaError> {
        let (dst, dst_ctx, from, src_ctx, n) = self.peer_extent(at, src, range)?;
        if n == 0 {
            return Ok(());
        }
        let driver = self.group.driver;
        // SAFETY: both ranges lie within live allocations (checked above), which the
        // group keeps alive until the enter — which waits for `stream`'s context —
        // has returned: a buffer dropped meanwhile waits for that context first.
        check(unsafe {
            driver.table().cuMemcpyPeerAsync()?(dst, dst_ctx, from, src_ctx, n, stream.raw())
        })
    }
}

impl<T: DeviceCopy> Drop for PeerBuffer<'_, T> {
    fn drop(&mut self) {
        // Work of the entered member may still use this memory (waiting for it here
        // could be refused: the context may be capturing): the enter frees it once
        // it has waited.
        if self.group.entered.get().is_some() {
            match self.group.deferred.try_borrow_mut() {
                Ok(mut d) => d.push((self.owner, self.ptr)),
                Err(_) => tracing::error!("a peer buffer is leaked"),
            }
            return;
        }
        free_in(self.group, self.owner, self.ptr);
    }
}

/// Frees `ptr` in member `owner`'s context (no work uses it any more). A member
/// whose context reported a sticky error cannot be bound: its memory stays until the
/// context is destroyed (logged).
fn free_in(group: &PeerGroup<'_>, owner: usize, ptr: CUdeviceptr) {
    let driver = group.driver;
    let Some(s) = group.slots.get(owner) else {
        return;
    };
    let freed = bind_raw(driver, s.raw, false, s.poisoned, |_| {
        // SAFETY: the buffer owned the allocation, and no work uses it any more.
        unsafe { memory::free(driver, ptr, crate::leaks::Kind::DeviceAllocations) };
    });
    if let Err(e) = freed {
        tracing::warn!(%e, "a peer buffer could not be freed");
    }
}

#[allow(dead_code)]
fn _assert_not_send() {
    static_assertions::assert_not_impl_any!(PeerGroup<'static>: Send, Sync);
    static_assertions::assert_not_impl_any!(PeerBuffer<'static, f32>: Send, Sync);
    static_assertions::assert_not_impl_any!(Entered<'static, 'static>: Send, Sync);
    static_assertions::assert_not_impl_any!(Member<'static>: Send, Sync);
}

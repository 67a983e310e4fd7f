//! Streams and events.
//!
//! A created stream is a queue with a worker thread: its work runs in order, work on
//! different streams runs concurrently, so event ordering is real and observable.
//! The legacy default stream (`NULL`, `CU_STREAM_LEGACY`) first waits for every
//! blocking stream of the context, then runs the work on the calling thread; the
//! per-thread default stream runs it on the calling thread at once. Either way,
//! "asynchronous" work on a default stream is complete when the call returns — a
//! behaviour the driver's contract allows. Under the sanitizer's `delay` tool it is
//! not: default-stream work goes to a worker of the context (`State::delayed`),
//! chained after the blocking streams' work by internal events (and they after it),
//! and every worker sleeps a seeded while before each operation
//! (`crate::sanitize::delay`); synchronous calls still wait for their work.
//! [`Target::run`] is also where the sanitizer's streamcheck learns of each
//! operation, record and wait as it is submitted.
//!
//! **Failures of running work are sticky**: an operation that fails while it runs
//! (a kernel fault, a kernel out of stack, ...) poisons its context with the sticky
//! code the driver would report ([`sticky_code`]); errors that can be detected when
//! work is queued are returned by the call that queues it, which then queues
//! nothing. A stream keeps no error of its own.
//!
//! **Destroyed streams** (`cuStreamDestroy`, or with their context) still finish
//! their queued work; until then they are "retiring" ([`retire`]) and every
//! synchronisation of their context — [`drain`], the legacy stream,
//! `cuCtxSynchronize` — waits for them too.
//!
//! **After a sticky error** the context is poisoned, as on the driver: every
//! worker of the context reads the context's [`Sticky`] cell before it starts each
//! queued item and, once it is set, starts no further operation — no
//! copy, memset, kernel or `cuLaunchHostFunc` function; event records pending on the
//! stream are resolved as failed and waits for events are dropped. A
//! `cuStreamAddCallback` callback is still called, once, with the error (the
//! driver's documented contract). An operation already running when the fault
//! happens runs to its end. Every synchronisation ([`Stream::synchronize`],
//! [`Event::synchronize`], [`drain`], ...) that finds the context poisoned returns
//! only once the workers it covers have finished the item they were running and
//! discarded the rest; queries say `NOT_READY` until then. So a caller that sees the
//! sticky error from any of them may free the memory the abandoned work would have
//! used.

use crate::sanitize::delay;
use crate::sanitize::streamcheck::{self, Lane};
use crate::state::{self, Kind, R, Sticky};
use crate::types::{CU_STREAM_LEGACY, CU_STREAM_PER_THREAD, CUresult, CUstream, code};
use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// A unit of stream work: an operation (copy, memset, kernel, host function).
pub type Job = Box<dyn FnOnce() -> R + Send>;

/// A `cuStreamAddCallback` callback, given the stream's status.
pub type Callback = Box<dyn FnOnce(CUresult) + Send>;

/// An item of a stream's queue.
pub enum Work {
    /// An operation: not started once the context is poisoned.
    Op(Job),
    /// Record `generation` of an event: completes it, or fails it once the context is
    /// poisoned.
    Record(Arc<Event>, u64),
    /// Waits until an event's record `generation` is resolved (or the context of the
    /// waiting stream is poisoned).
    Wait(Arc<Event>, u64),
    /// A callback: always called, once, with `CUDA_SUCCESS` or the sticky error.
    Callback(Callback),
}

/// `CU_STREAM_NON_BLOCKING`.
pub const NON_BLOCKING: u32 = 0x1;

/// How often a worker waiting for an event looks at its context's sticky error.
const POLL: Duration = Duration::from_millis(10);

struct Queue {
    jobs: VecDeque<Work>,
    /// Items queued so far.
    submitted: u64,
    /// Items finished or discarded. `completed < submitted` exactly while the worker
    /// holds an item or has items queued.
    completed: u64,
    closing: bool,
}

/// A created stream.
pub struct Stream {
    /// The owning context.
    pub ctx: u64,
    /// `CUstream_flags` bits.
    pub flags: u32,
    /// Priority (lower is higher, as in CUDA).
    pub priority: i32,
    /// Stream attributes set with `cuStreamSetAttribute`: id → the 64-byte value.
    pub attributes: Mutex<std::collections::HashMap<u32, [u8; 64]>>,
    /// The context's sticky error (of the context as it was when the stream was made).
    sticky: Arc<Sticky>,
    /// A number no other stream of the process has (the sanitizer's name for it).
    serial: u64,
    queue: Mutex<Queue>,
    cv: Condvar,
}

/// Locks `m`, ignoring poisoning (a panicking job never leaves data half-written).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

thread_local! {
    /// The stream whose worker this thread is (its address), or 0.
    static WORKER: Cell<usize> = const { Cell::new(0) };
}

impl Stream {
    /// Creates a stream of context `ctx` (whose sticky cell is `sticky`) and starts
    /// its worker.
    pub fn spawn(ctx: u64, sticky: Arc<Sticky>, flags: u32, priority: i32) -> R<Arc<Stream>> {
        static SERIAL: AtomicU64 = AtomicU64::new(1);
        let stream = Arc::new(Stream {
            ctx,
            flags,
            priority,
            attributes: Mutex::new(std::collections::HashMap::new()),
            sticky,
            serial: SERIAL.fetch_add(1, Ordering::Relaxed),
            queue: Mutex::new(Queue {
                jobs: VecDeque::new(),
                submitted: 0,
                completed: 0,
                closing: false,
            }),
            cv: Condvar::new(),
        });
        let worker = Arc::clone(&stream);
        std::thread::Builder::new()
            .name("softcuda-stream".into())
            .spawn(move || worker.work())
            .map_err(|_| code::OUT_OF_MEMORY)?;
        Ok(stream)
    }

    /// Whether the calling thread is this stream's worker (a host function or
    /// callback calling the driver): it must never wait for itself.
    fn on_own_worker(&self) -> bool {
        WORKER.with(|w| w.get() == self as *const Stream as usize)
    }

    fn work(&self) {
        WORKER.with(|w| w.set(self as *const Stream as usize));
        let mut ops = 0;
        loop {
            let (item, poisoned) = {
                let mut q = lock(&self.queue);
                loop {
                    if let Some(item) = q.jobs.pop_front() {
                        // Read under the queue lock: a synchroniser that saw the
                        // context poisoned and then found this item queued is sure
                        // the worker sees the poison too.
                        break (item, self.sticky.get());
                    }
                    if q.closing {
                        return;
                    }
                    q = self.cv.wait(q).unwrap_or_else(PoisonError::into_inner);
                }
            };
            if matches!(item, Work::Op(_)) && poisoned.is_none() && delay::on() {
                std::thread::sleep(delay::amount(self.serial, ops));
                ops += 1;
            }
            // An operation that fails has poisoned the context (see `run_job`).
            let _ = perform(&self.sticky, item, poisoned);
            let mut q = lock(&self.queue);
            q.completed += 1;
            self.cv.notify_all();
        }
    }

    /// Queues `work`; its ticket for [`Stream::wait_for`].
    pub fn submit(&self, work: Work) -> u64 {
        let mut q = lock(&self.queue);
        q.jobs.push_back(work);
        q.submitted += 1;
        self.cv.notify_all();
        q.submitted
    }

    /// Waits for the work submitted so far. Work that fails poisons the context, so
    /// the only error is the context's sticky one: once it is set, this waits until
    /// the worker has finished the item it runs and discarded the rest, then returns
    /// it. On the stream's own worker (a host function calling the driver) it returns
    /// at once.
    pub fn synchronize(&self) -> R {
        let target = lock(&self.queue).submitted;
        self.wait_for(target)
    }

    /// [`Stream::synchronize`] up to the work whose ticket ([`Stream::submit`]) is
    /// `target` (not what was queued after it).
    pub fn wait_for(&self, target: u64) -> R {
        let own = self.on_own_worker();
        let mut q = lock(&self.queue);
        loop {
            match self.sticky.get() {
                Some(e) if own || q.completed == q.submitted => return Err(e),
                Some(_) => {}
                None if own || q.completed >= target => return Ok(()),
                None => {}
            }
            q = self.cv.wait(q).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// `NOT_READY` while work is pending (after a sticky error: until the worker has
    /// stopped), then success or the sticky error.
    pub fn query(&self) -> R {
        let busy = self.busy();
        match self.sticky.get() {
            Some(_) if busy => Err(code::NOT_READY),
            Some(e) => Err(e),
            None if busy => Err(code::NOT_READY),
            None => Ok(()),
        }
    }

    /// Whether the worker holds an item or has items queued.
    pub fn busy(&self) -> bool {
        let q = lock(&self.queue);
        q.completed < q.submitted
    }

    /// Lets the worker finish (or, in a poisoned context, discard) the queued work
    /// and exit.
    pub fn close(&self) {
        lock(&self.queue).closing = true;
        self.cv.notify_all();
    }
}

/// Runs or discards `item`; `poisoned` is the context's sticky error as the worker
/// saw it when it took the item.
fn perform(sticky: &Sticky, item: Work, poisoned: Option<CUresult>) -> R {
    match item {
        Work::Op(job) => match poisoned {
            Some(_) => Ok(()), // abandoned: dropped without running
            None => run_job(sticky, job),
        },
        Work::Record(ev, generation) => {
            ev.resolve(generation, poisoned);
            Ok(())
        }
        Work::Wait(ev, generation) => {
            if poisoned.is_none() {
                ev.wait_for(generation, sticky);
            }
            Ok(())
        }
        Work::Callback(cb) => {
            let status = poisoned.unwrap_or(code::SUCCESS);
            // A panic is caught: the callback is the caller's, its failure not ours.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cb(status)));
            Ok(())
        }
    }
}

/// The streams of context `ctx` (of every context if `None`; only the blocking ones
/// if `blocking_only`): the live ones and those destroyed with work left (see
/// [`State::retiring`](crate::state::State::retiring)), which this forgets once idle.
fn streams_in(s: &mut state::State, ctx: Option<u64>, blocking_only: bool) -> Vec<Arc<Stream>> {
    s.retiring.retain(|st| st.busy());
    s.streams
        .values()
        .chain(s.retiring.iter())
        .chain(s.delayed.values())
        .filter(|st| ctx.is_none_or(|c| st.ctx == c))
        .filter(|st| !blocking_only || st.flags & NON_BLOCKING == 0)
        .cloned()
        .collect()
}

/// Closes a stream that is being destroyed (by `cuStreamDestroy` or with its
/// context): its worker still runs (or, in a poisoned context, discards) what is
/// queued, and until it is done every synchronisation that covers the stream's
/// context waits for it.
pub fn retire(s: &mut state::State, stream: Arc<Stream>) {
    stream.close();
    s.retiring.retain(|st| st.busy());
    if stream.busy() {
        s.retiring.push(stream);
    }
}

/// Waits for all queued work of context `ctx` (or of every context), ignoring its
/// errors, and then for every operation on device memory running anywhere (work on a
/// default stream runs on the calling thread, so it may be another thread's): what
/// frees memory or modules first lets the work that may use them finish, as the
/// driver's implicit synchronisation does (in a poisoned context: until the workers
/// have stopped). Streams destroyed with work left are waited for too. Takes the
/// state lock only to list the streams, never while waiting. (Soundness does not
/// rest on this wait: see `crate::devmem`.)
pub fn drain(ctx: Option<u64>) {
    let streams = streams_in(&mut state::state(), ctx, false);
    for s in streams {
        let _ = s.synchronize();
    }
    crate::devmem::quiesce();
}

/// [`drain`] for the calling thread's current context, if any.
pub fn drain_current() {
    if let Some(c) = state::current() {
        drain(Some(c));
    }
}

/// Synchronises every stream in `streams` (all of them, even after an error), then
/// reports the context's sticky error (`sticky`), if any. Since every failure of
/// running work poisons the context, that is the only error a stream can have; the
/// streams' own answers are not used, as a stream destroyed by a reset of the
/// context still carries the error of the context as it was before.
pub fn synchronize_all(streams: &[Arc<Stream>], sticky: &Sticky) -> R {
    for s in streams {
        let _ = s.synchronize();
    }
    sticky.get().map_or(Ok(()), Err)
}

/// The streams of context `ctx` (only the blocking ones if `blocking_only`),
/// destroyed ones with work left included.
pub fn streams_of(ctx: u64, blocking_only: bool) -> Vec<Arc<Stream>> {
    streams_in(&mut state::state(), Some(ctx), blocking_only)
}

/// Runs a job, catching panics. A job that fails poisons the context: on the
/// driver, whatever goes wrong while queued work runs is reported later, by a
/// synchronisation, as a sticky error; what can be refused is refused by the call
/// that queues the work, which then queues nothing. The error becomes the sticky
/// code the driver would give ([`sticky_code`]), which is returned.
fn run_job(sticky: &Sticky, job: Job) -> R {
    let result =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)).unwrap_or(Err(code::UNKNOWN));
    result.map_err(|e| {
        let e = sticky_code(e);
        sticky.set(e);
        sticky.get().unwrap_or(e)
    })
}

/// The sticky error a failure of running work is reported as: sticky codes stay;
/// running out of stack or call depth is `CUDA_ERROR_HARDWARE_STACK_ERROR`;
/// anything else (a panic inside softcuda included) is `CUDA_ERROR_LAUNCH_FAILED`.
pub fn sticky_code(e: CUresult) -> CUresult {
    match e {
        e if is_sticky(e) => e,
        code::LAUNCH_OUT_OF_RESOURCES => code::HARDWARE_STACK_ERROR,
        _ => code::LAUNCH_FAILED,
    }
}

/// Errors that leave the context unusable, as on the driver: illegal address (700),
/// launch timeout (702), assert (710), hardware stack error (714), illegal
/// instruction (715), misaligned address (716), invalid address space (717),
/// invalid PC (718), launch failed (719).
pub fn is_sticky(e: CUresult) -> bool {
    matches!(e, 700 | 702 | 710 | 714..=719)
}

fn is_legacy(stream: CUstream) -> bool {
    matches!(stream as usize, 0 | CU_STREAM_LEGACY)
}

/// Where work for a stream handle goes.
#[derive(Clone)]
pub enum Target {
    /// Run on the calling thread (a default stream), in a context with this sticky
    /// cell.
    Inline(Arc<Sticky>, Lane),
    /// Queue on this stream (a created one, or under the sanitizer's `delay` tool
    /// the context's worker for its default streams).
    Queue(Arc<Stream>, Lane),
}

impl Target {
    /// The queue the work goes to, as streamcheck knows it.
    pub fn lane(&self) -> Lane {
        match self {
            Target::Inline(_, l) | Target::Queue(_, l) => *l,
        }
    }

    /// Runs `work` now or queues it. Inline work in a poisoned context is not run
    /// (a record is failed, a callback told) and the call reports the sticky error.
    /// streamcheck learns of operations, records and waits here, as submitted.
    /// Delayed default-stream work of a synchronous call (a copy, a memset), or of a
    /// copy with a side in plain host memory, is waited for, as the driver does.
    pub fn run(self, work: Work) -> R {
        let lane = self.lane();
        let work = stamped(&lane, work);
        match self {
            Target::Queue(s, lane) => {
                let op = matches!(work, Work::Op(_));
                s.submit(work);
                if op && !matches!(lane, Lane::Stream { .. }) && streamcheck::waits_on_return() {
                    return s.synchronize();
                }
                Ok(())
            }
            Target::Inline(sticky, _) => {
                let poisoned = sticky.get();
                let r = perform(&sticky, work, poisoned);
                poisoned.map_or(r, Err)
            }
        }
    }

    /// [`Target::run`], returning only once `work` has run (or been discarded in a
    /// poisoned context): the host then knows its effects, as streamcheck learns.
    pub fn run_and_wait(self, work: Work) -> R {
        match self {
            Target::Queue(s, lane) => {
                let ticket = s.submit(stamped(&lane, work));
                s.wait_for(ticket)?;
                streamcheck::host_syncs(&lane);
                Ok(())
            }
            inline => inline.run(work),
        }
    }
}

/// `work` as streamcheck knows it: an operation stamped on `lane`, a record or a
/// wait noted (nothing while streamcheck is off).
fn stamped(lane: &Lane, work: Work) -> Work {
    match work {
        Work::Op(job) => match streamcheck::submit(lane) {
            Some(stamp) => Work::Op(Box::new(move || {
                let _running = streamcheck::running(Some(stamp));
                job()
            })),
            None => Work::Op(job),
        },
        Work::Record(ev, generation) => {
            streamcheck::record(Arc::as_ptr(&ev) as usize, lane);
            Work::Record(ev, generation)
        }
        Work::Wait(ev, generation) => {
            streamcheck::wait(lane, Arc::as_ptr(&ev) as usize);
            Work::Wait(ev, generation)
        }
        w @ Work::Callback(_) => w,
    }
}

/// Makes `to`'s later work wait for the work queued on `from` so far.
fn chain(from: &Stream, to: &Stream) {
    let ev = Event::new(from.ctx, Arc::clone(&from.sticky), DISABLE_TIMING);
    from.submit(ev.record_work());
    to.submit(ev.waiter());
}

/// Under `delay`: the worker of context `ctx`'s default streams.
fn delayed_worker(ctx: u64, sticky: &Arc<Sticky>) -> R<Arc<Stream>> {
    let mut s = state::state();
    if let Some(w) = s.delayed.get(&ctx) {
        return Ok(Arc::clone(w));
    }
    let w = Stream::spawn(ctx, Arc::clone(sticky), 0, 0)?;
    s.delayed.insert(ctx, Arc::clone(&w));
    Ok(w)
}

/// Resolves `stream` for context `ctx`; for the legacy default stream, first waits
/// for the context's blocking streams. Under the sanitizer's `delay` tool, the
/// default streams' work goes to the context's worker instead, queued after the
/// blocking streams' work (and a blocking stream's after the worker's).
pub fn target(ctx: u64, stream: CUstream) -> R<Target> {
    let v = stream as usize;
    if is_legacy(stream) || v == CU_STREAM_PER_THREAD {
        let (sticky, gates) = {
            let s = state::state();
            (state::sticky_of(&s, ctx)?, crate::green::gates(&s, ctx))
        };
        // A green context's default streams honour its `cuGreenCtxWaitEvent`s: their
        // work runs on this thread, which waits as the stream would.
        for (e, generation) in gates {
            e.wait_for(generation, &sticky);
        }
        let lane = if is_legacy(stream) {
            // The legacy stream would wait for a capturing blocking stream: refused.
            crate::graph::capture::legacy_use(ctx)?;
            Lane::Legacy { ctx }
        } else {
            Lane::PerThread { ctx }
        };
        if delay::on() {
            let w = delayed_worker(ctx, &sticky)?;
            for s in streams_of(ctx, true) {
                if !Arc::ptr_eq(&s, &w) && s.busy() {
                    chain(&s, &w);
                }
            }
            return Ok(Target::Queue(w, lane));
        }
        if is_legacy(stream) {
            synchronize_all(&streams_of(ctx, true), &sticky)?;
        }
        return Ok(Target::Inline(sticky, lane));
    }
    let id = state::id_of(Kind::Stream, stream).ok_or(code::INVALID_HANDLE)?;
    let (s, delayed) = {
        let st = state::state();
        let s = st
            .streams
            .get(&id)
            .cloned()
            .ok_or_else(|| crate::green::missing_stream(&st, id))?;
        (s, st.delayed.get(&ctx).cloned())
    };
    if let Some(w) = delayed
        && s.flags & NON_BLOCKING == 0
        && w.busy()
    {
        chain(&w, &s);
    }
    let lane = Lane::Stream {
        key: s.serial,
        handle: v as u64,
        ctx: s.ctx,
        blocking: s.flags & NON_BLOCKING == 0,
    };
    Ok(Target::Queue(s, lane))
}

/// The queue of stream handle `stream` of context `ctx` as streamcheck knows it,
/// for the synchronisations it learns of (`None`: not a live stream).
pub fn lane_of(ctx: u64, stream: CUstream) -> Option<Lane> {
    let v = stream as usize;
    if is_legacy(stream) {
        return Some(Lane::Legacy { ctx });
    }
    if v == CU_STREAM_PER_THREAD {
        return Some(Lane::PerThread { ctx });
    }
    let id = state::id_of(Kind::Stream, stream)?;
    let s = state::state().streams.get(&id).cloned()?;
    Some(Lane::Stream {
        key: s.serial,
        handle: v as u64,
        ctx: s.ctx,
        blocking: s.flags & NON_BLOCKING == 0,
    })
}

/// Runs `job` on `stream` of context `ctx`: now, or queued.
pub fn submit(ctx: u64, stream: CUstream, job: Job) -> R {
    target(ctx, stream)?.run(Work::Op(job))
}

/// Whether `stream` is a created stream (not a default stream's handle).
pub fn is_created(stream: CUstream) -> bool {
    !is_legacy(stream) && stream as usize != CU_STREAM_PER_THREAD
}

/// [`submit`], returning only once `job` has run: a copy with a side in plain host
/// memory, which its caller may read, free or reuse when the call returns (the
/// driver may synchronise with the stream for such a copy; softcuda always does).
pub fn submit_and_wait(ctx: u64, stream: CUstream, job: Job) -> R {
    target(ctx, stream)?.run_and_wait(Work::Op(job))
}

/// `cuStreamSynchronize` of a default stream of context `ctx`: the legacy stream
/// waits for every blocking stream (all of them, even after an error).
pub fn synchronize_default(ctx: u64, stream: CUstream) -> R {
    let (sticky, delayed) = {
        let s = state::state();
        (state::sticky_of(&s, ctx)?, s.delayed.get(&ctx).cloned())
    };
    if is_legacy(stream) {
        synchronize_all(&streams_of(ctx, true), &sticky)?;
    } else if let Some(w) = delayed {
        // Under `delay`, the per-thread stream's work is on the context's worker.
        synchronize_all(&[w], &sticky)?;
    }
    sticky.get().map_or(Ok(()), Err)
}

/// `cuStreamQuery` of a default stream: its own work is always complete; in a
/// poisoned context the legacy stream is `NOT_READY` until the blocking streams'
/// workers have stopped.
pub fn query_default(ctx: u64, stream: CUstream) -> R {
    let (sticky, delayed) = {
        let s = state::state();
        (state::sticky_of(&s, ctx)?, s.delayed.get(&ctx).cloned())
    };
    if delayed.is_some_and(|w| w.busy()) {
        return Err(code::NOT_READY);
    }
    let Some(e) = sticky.get() else {
        return Ok(());
    };
    if is_legacy(stream) {
        for s in streams_of(ctx, true) {
            if s.query() == Err(code::NOT_READY) {
                return Err(code::NOT_READY);
            }
        }
    }
    Err(e)
}

/// `CU_EVENT_DISABLE_TIMING`.
pub const DISABLE_TIMING: u32 = 0x2;

#[derive(Clone, Copy)]
struct EventState {
    /// Records made.
    recorded: u64,
    /// The newest record resolved (completed or failed).
    completed: u64,
    /// When that record completed (`None` if it failed).
    time: Option<Instant>,
    /// Why that record failed: its stream's context was poisoned.
    error: Option<CUresult>,
}

/// An event.
pub struct Event {
    /// The owning context.
    pub ctx: u64,
    /// `CUevent_flags` bits.
    pub flags: u32,
    /// The owning context's sticky error.
    sticky: Arc<Sticky>,
    st: Mutex<EventState>,
    cv: Condvar,
    /// An interprocess event's state shared with other processes
    /// (`crate::ipc::event`): its generations and completions are the shared
    /// counters', which records, queries and waits consult.
    ipc: Option<crate::ipc::event::Shared>,
}

impl Event {
    /// A new, never-recorded event of context `ctx` (whose sticky cell is `sticky`).
    pub fn new(ctx: u64, sticky: Arc<Sticky>, flags: u32) -> Arc<Event> {
        Event::with_shared(ctx, sticky, flags, None)
    }

    /// [`Event::new`], its state shared with other processes (`ipc`) if given.
    pub(crate) fn with_shared(
        ctx: u64,
        sticky: Arc<Sticky>,
        flags: u32,
        ipc: Option<crate::ipc::event::Shared>,
    ) -> Arc<Event> {
        Arc::new(Event {
            ctx,
            flags,
            sticky,
            st: Mutex::new(EventState {
                recorded: 0,
                completed: 0,
                time: None,
                error: None,
            }),
            cv: Condvar::new(),
            ipc,
        })
    }

    /// The state shared with other processes, for an interprocess event.
    pub(crate) fn shared(&self) -> Option<&crate::ipc::event::Shared> {
        self.ipc.as_ref()
    }

    /// Whether the event was opened from another process's handle.
    pub fn ipc_imported(&self) -> bool {
        self.ipc.as_ref().is_some_and(|i| i.imported())
    }

    /// A new record: its generation (an interprocess event's from the shared
    /// counter).
    fn next_generation(&self) -> u64 {
        let mut st = lock(&self.st);
        st.recorded = match &self.ipc {
            Some(i) => i.record(),
            None => st.recorded + 1,
        };
        st.recorded
    }

    /// Records the event on `stream`: it completes when the work before it has.
    pub fn record(self: &Arc<Self>, ctx: u64, stream: CUstream) -> R {
        let target = target(ctx, stream)?; // first: a refused record changes nothing
        let generation = self.next_generation();
        target.run(Work::Record(Arc::clone(self), generation))
    }

    /// Resolves record `generation`: completed now, or failed with `failed`.
    fn resolve(&self, generation: u64, failed: Option<CUresult>) {
        let mut st = lock(&self.st);
        if generation > st.completed {
            st.completed = generation;
            st.time = failed.is_none().then(Instant::now);
            st.error = failed;
        }
        if let Some(i) = &self.ipc {
            i.complete(generation);
        }
        self.cv.notify_all();
    }

    /// The status of a resolved event: its record's failure or its context's sticky
    /// error, else success. An interprocess event is resolved once the shared
    /// completions have caught up with the shared records; a failure counts only if
    /// the newest record was this process's.
    fn status(&self, st: &EventState) -> R {
        if let Some(i) = &self.ipc {
            let recorded = i.recorded();
            if i.completed() < recorded {
                return Err(code::NOT_READY);
            }
            let own = (st.completed == recorded).then_some(st.error).flatten();
            return match own.or_else(|| self.sticky.get()) {
                Some(e) => Err(e),
                None => Ok(()),
            };
        }
        if st.completed < st.recorded {
            return Err(code::NOT_READY);
        }
        match st.error.or_else(|| self.sticky.get()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// `NOT_READY` while the last record is pending.
    pub fn query(&self) -> R {
        self.status(&lock(&self.st))
    }

    /// Waits for the last record: until it completed, or until the worker of its
    /// stream reached it and discarded it (after the context was poisoned).
    pub fn synchronize(&self) -> R {
        if let Some(i) = &self.ipc {
            i.wait(i.recorded(), || false);
            return self.status(&lock(&self.st));
        }
        let mut st = lock(&self.st);
        let target = st.recorded;
        while st.completed < target {
            st = self.cv.wait(st).unwrap_or_else(PoisonError::into_inner);
        }
        let done = EventState {
            recorded: target,
            ..*st
        };
        self.status(&done)
    }

    /// Waits (on a stream's worker) for record `target`; gives up once the waiting
    /// stream's context (`sticky`) is poisoned, as its later work is discarded then.
    fn wait_for(&self, target: u64, sticky: &Sticky) {
        if let Some(i) = &self.ipc {
            i.wait(target, || sticky.get().is_some());
            return;
        }
        let mut st = lock(&self.st);
        while st.completed < target && sticky.get().is_none() {
            st = self
                .cv
                .wait_timeout(st, POLL)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Stream work that records the event (a graph's event-record node): like
    /// [`Event::record`], for a stream resolved already.
    pub fn record_work(self: &Arc<Self>) -> Work {
        Work::Record(Arc::clone(self), self.next_generation())
    }

    /// Stream work that waits for the event's last record as of now (of any
    /// process, for an interprocess event).
    pub fn waiter(self: &Arc<Self>) -> Work {
        let target = match &self.ipc {
            Some(i) => i.recorded(),
            None => lock(&self.st).recorded,
        };
        Work::Wait(Arc::clone(self), target)
    }

    /// Milliseconds from `start` to `end`, as `cuEventElapsedTime` defines it.
    pub fn elapsed(start: &Event, end: &Event) -> R<f32> {
        if start.flags & DISABLE_TIMING != 0 || end.flags & DISABLE_TIMING != 0 {
            return Err(code::INVALID_HANDLE);
        }
        // One lock at a time: `start` and `end` may be the same event, and another
        // thread may ask for (end, start).
        let a = *lock(&start.st);
        let b = *lock(&end.st);
        if a.recorded == 0 || b.recorded == 0 {
            return Err(code::INVALID_HANDLE);
        }
        start.status(&a)?;
        end.status(&b)?;
        match (a.time, b.time) {
            (Some(t0), Some(t1)) => Ok(match t1.checked_duration_since(t0) {
                Some(d) => d.as_secs_f32() * 1000.0,
                None => -(t0.duration_since(t1).as_secs_f32() * 1000.0),
            }),
            _ => Err(code::INVALID_HANDLE),
        }
    }
}

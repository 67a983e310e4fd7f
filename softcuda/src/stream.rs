//! Streams and events.
//!
//! A created stream is a queue with a worker thread: its work runs in order, work on
//! different streams runs concurrently, so event ordering is real and observable.
//! The legacy default stream (`NULL`, `CU_STREAM_LEGACY`) first waits for every
//! blocking stream of the context, then runs the work on the calling thread; the
//! per-thread default stream runs it on the calling thread at once. Either way,
//! "asynchronous" work on a default stream is complete when the call returns — a
//! behaviour the driver's contract allows.

use crate::state::{self, Kind, R};
use crate::types::{CU_STREAM_LEGACY, CU_STREAM_PER_THREAD, CUresult, CUstream, code};
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

/// A unit of stream work.
pub type Job = Box<dyn FnOnce() -> R + Send>;

/// `CU_STREAM_NON_BLOCKING`.
pub const NON_BLOCKING: u32 = 0x1;

struct Queue {
    jobs: VecDeque<Job>,
    submitted: u64,
    completed: u64,
    error: Option<CUresult>,
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
    queue: Mutex<Queue>,
    cv: Condvar,
}

/// Locks `m`, ignoring poisoning (a panicking job never leaves data half-written).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Stream {
    /// Creates a stream and starts its worker.
    pub fn spawn(ctx: u64, flags: u32, priority: i32) -> R<Arc<Stream>> {
        let stream = Arc::new(Stream {
            ctx,
            flags,
            priority,
            attributes: Mutex::new(std::collections::HashMap::new()),
            queue: Mutex::new(Queue {
                jobs: VecDeque::new(),
                submitted: 0,
                completed: 0,
                error: None,
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

    fn work(&self) {
        loop {
            let job = {
                let mut q = lock(&self.queue);
                loop {
                    if let Some(job) = q.jobs.pop_front() {
                        break job;
                    }
                    if q.closing {
                        return;
                    }
                    q = self.cv.wait(q).unwrap_or_else(PoisonError::into_inner);
                }
            };
            let result = run_job(self.ctx, job);
            let mut q = lock(&self.queue);
            if let Err(e) = result {
                q.error.get_or_insert(e);
            }
            q.completed += 1;
            self.cv.notify_all();
        }
    }

    /// Queues `job`.
    pub fn submit(&self, job: Job) {
        let mut q = lock(&self.queue);
        q.jobs.push_back(job);
        q.submitted += 1;
        self.cv.notify_all();
    }

    /// Waits for the work submitted so far; the first error any of it met.
    pub fn synchronize(&self) -> R {
        let mut q = lock(&self.queue);
        let target = q.submitted;
        while q.completed < target {
            q = self.cv.wait(q).unwrap_or_else(PoisonError::into_inner);
        }
        q.error.map_or(Ok(()), Err)
    }

    /// `NOT_READY` while work is pending.
    pub fn query(&self) -> R {
        let q = lock(&self.queue);
        if let Some(e) = q.error {
            return Err(e);
        }
        if q.completed < q.submitted {
            Err(code::NOT_READY)
        } else {
            Ok(())
        }
    }

    /// Lets the worker finish the queued work and exit.
    pub fn close(&self) {
        lock(&self.queue).closing = true;
        self.cv.notify_all();
    }
}

/// Waits for all queued work of context `ctx` (or of every context), ignoring its
/// errors: what frees memory or modules first lets the work that may use them finish,
/// as the driver's implicit synchronisation does. Takes the state lock only to list
/// the streams, never while waiting.
pub fn drain(ctx: Option<u64>) {
    let streams: Vec<Arc<Stream>> = state::state()
        .streams
        .values()
        .filter(|s| ctx.is_none_or(|c| s.ctx == c))
        .cloned()
        .collect();
    for s in streams {
        let _ = s.synchronize();
    }
}

/// [`drain`] for the calling thread's current context, if any.
pub fn drain_current() {
    if let Some(c) = state::current() {
        drain(Some(c));
    }
}

/// Runs a job, catching panics; a sticky failure poisons the context.
fn run_job(ctx: u64, job: Job) -> R {
    let result =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)).unwrap_or(Err(code::UNKNOWN));
    if let Err(e) = result
        && is_sticky(e)
    {
        state::poison(ctx, e);
    }
    result
}

/// Errors that leave the context unusable, as on the driver.
pub fn is_sticky(e: CUresult) -> bool {
    matches!(e, 700 | 702 | 714..=719)
}

/// Where work for a stream handle goes.
pub enum Target {
    /// Run on the calling thread (a default stream).
    Inline,
    /// Queue on this stream.
    Queue(Arc<Stream>),
}

/// Resolves `stream` for context `ctx`; for the legacy default stream, first waits
/// for the context's blocking streams.
pub fn target(ctx: u64, stream: CUstream) -> R<Target> {
    let v = stream as usize;
    if v == 0 || v == CU_STREAM_LEGACY {
        let blocking: Vec<Arc<Stream>> = state::state()
            .streams
            .values()
            .filter(|s| s.ctx == ctx && s.flags & NON_BLOCKING == 0)
            .cloned()
            .collect();
        for s in blocking {
            s.synchronize()?;
        }
        return Ok(Target::Inline);
    }
    if v == CU_STREAM_PER_THREAD {
        return Ok(Target::Inline);
    }
    let id = state::id_of(Kind::Stream, stream).ok_or(code::INVALID_HANDLE)?;
    state::state()
        .streams
        .get(&id)
        .cloned()
        .map(Target::Queue)
        .ok_or(code::INVALID_HANDLE)
}

/// Runs `job` on `stream` of context `ctx`: now, or queued.
pub fn submit(ctx: u64, stream: CUstream, job: Job) -> R {
    match target(ctx, stream)? {
        Target::Inline => run_job(ctx, job),
        Target::Queue(s) => {
            s.submit(job);
            Ok(())
        }
    }
}

/// `CU_EVENT_DISABLE_TIMING`.
pub const DISABLE_TIMING: u32 = 0x2;

struct EventState {
    recorded: u64,
    completed: u64,
    time: Option<Instant>,
}

/// An event.
pub struct Event {
    /// The owning context.
    pub ctx: u64,
    /// `CUevent_flags` bits.
    pub flags: u32,
    st: Mutex<EventState>,
    cv: Condvar,
}

impl Event {
    /// A new, never-recorded event.
    pub fn new(ctx: u64, flags: u32) -> Arc<Event> {
        Arc::new(Event {
            ctx,
            flags,
            st: Mutex::new(EventState {
                recorded: 0,
                completed: 0,
                time: None,
            }),
            cv: Condvar::new(),
        })
    }

    /// Records the event on `stream`: it completes when the work before it has.
    pub fn record(self: &Arc<Self>, ctx: u64, stream: CUstream) -> R {
        let generation = {
            let mut st = lock(&self.st);
            st.recorded += 1;
            st.recorded
        };
        let ev = Arc::clone(self);
        submit(
            ctx,
            stream,
            Box::new(move || {
                let mut st = lock(&ev.st);
                if generation > st.completed {
                    st.completed = generation;
                    st.time = Some(Instant::now());
                }
                ev.cv.notify_all();
                Ok(())
            }),
        )
    }

    /// `NOT_READY` while the last record is pending.
    pub fn query(&self) -> R {
        let st = lock(&self.st);
        if st.completed < st.recorded {
            Err(code::NOT_READY)
        } else {
            Ok(())
        }
    }

    /// Waits for the last record.
    pub fn synchronize(&self) -> R {
        let mut st = lock(&self.st);
        let target = st.recorded;
        while st.completed < target {
            st = self.cv.wait(st).unwrap_or_else(PoisonError::into_inner);
        }
        Ok(())
    }

    /// A job that waits for the event's last record as of now.
    pub fn waiter(self: &Arc<Self>) -> Job {
        let target = lock(&self.st).recorded;
        let ev = Arc::clone(self);
        Box::new(move || {
            let mut st = lock(&ev.st);
            while st.completed < target {
                st = ev.cv.wait(st).unwrap_or_else(PoisonError::into_inner);
            }
            Ok(())
        })
    }

    /// Milliseconds from `start` to `end`, as `cuEventElapsedTime` defines it.
    pub fn elapsed(start: &Event, end: &Event) -> R<f32> {
        if start.flags & DISABLE_TIMING != 0 || end.flags & DISABLE_TIMING != 0 {
            return Err(code::INVALID_HANDLE);
        }
        let (a, b) = (lock(&start.st), lock(&end.st));
        if a.recorded == 0 || b.recorded == 0 {
            return Err(code::INVALID_HANDLE);
        }
        if a.completed < a.recorded || b.completed < b.recorded {
            return Err(code::NOT_READY);
        }
        match (a.time, b.time) {
            (Some(t0), Some(t1)) => Ok(match t1.checked_duration_since(t0) {
                Some(d) => d.as_secs_f32() * 1000.0,
                None => -(t0.duration_since(t1).as_secs_f32() * 1000.0),
            }),
            _ => Err(code::INVALID_HANDLE),
        }
    }
}

//! Answering each request when the device's model says it completes: the completion threads
//! that sleep on high-resolution timers and spin the last microseconds, and the warm threads that
//! keep every CPU awake while a request waits long.

use crate::stats::{Collector, Kind};
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// An answer waiting for its deadline.
pub(crate) enum Answer {
    Data(fuser::ReplyData, Vec<u8>),
    Written(fuser::ReplyWrite, u32),
    Empty(fuser::ReplyEmpty),
}

impl Answer {
    fn send(self) {
        match self {
            Answer::Data(r, buf) => r.data(&buf),
            Answer::Written(r, n) => r.written(n),
            Answer::Empty(r) => r.ok(),
        }
    }

    /// Answers with an I/O error.
    pub(crate) fn fail(self) {
        let e = fuser::Errno::EIO;
        match self {
            Answer::Data(r, _) => r.error(e),
            Answer::Written(r, _) => r.error(e),
            Answer::Empty(r) => r.error(e),
        }
    }
}

pub(crate) struct Pending {
    pub(crate) deadline: Instant,
    pub(crate) arrival: Instant,
    pub(crate) kind: Kind,
    pub(crate) bytes: u64,
    pub(crate) answer: Answer,
}

struct Entry(Pending);
impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.0.deadline == o.0.deadline
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        // A min-heap on the deadline.
        o.0.deadline.cmp(&self.0.deadline)
    }
}

/// The completion side: a deadline-ordered queue served by a few threads.
pub(crate) struct Completer {
    queue: Mutex<BinaryHeap<Entry>>,
    cv: Condvar,
    stop: AtomicBool,
    /// How long before a deadline a completion thread stops sleeping and spins; adapted to how
    /// late the timers wake (starts at 50 us, or as [`Completer::calibrate`] measured).
    spin_ns: AtomicU64,
    stats: Arc<Collector>,
    /// When the last answer from the queue was sent, in nanoseconds since `base`.
    last_answer_ns: AtomicU64,
    base: Instant,
    /// Requests in the queue (waiting longer than the spin window), and being answered from it.
    waiting: AtomicUsize,
    /// Requests being spun to in the thread that read them (see [`Completer::complete`]).
    spinning: AtomicUsize,
    /// When the last request arrived, in nanoseconds since `base`.
    last_arrival_ns: AtomicU64,
    /// The last request arrived while the one before it was still due, or with others waiting
    /// in the kernel: requests come as a stream (a queue depth above 1), not one after
    /// another's answer.
    streaming: AtomicBool,
    /// The loop device's `/sys/block/loopN/inflight`: the requests the kernel has in flight on
    /// it, this daemon's and those it has not sent yet.
    kernel_inflight: std::sync::OnceLock<std::fs::File>,
    /// The warm threads, unparked when a request arrives on an idle device. They never take
    /// the queue's lock: a `SCHED_IDLE` thread preempted while holding it would hold up the
    /// completion threads for as long as the CPU stays busy (hundreds of microseconds).
    warmers: Mutex<Vec<std::thread::Thread>>,
    /// How many warm threads sleep (so that a request on a busy device wakes nobody).
    parked: AtomicUsize,
}

/// How long the warm threads keep the CPUs awake after an answer: long enough for a program
/// waiting on it to wake, finish and send its next request (the 0-latency round trip is about
/// 30 us here), so that the daemon's reader thread too wakes on a running CPU.
const WARM_AFTER: Duration = Duration::from_micros(100);
/// How long a warm thread spins before it offers the CPU and looks again.
const WARM_SLICE: Duration = Duration::from_micros(5);

const SPIN_MIN_NS: u64 = 15_000;
/// The spin before a deadline while other requests are in flight: with every thread spinning
/// a full window on this machine's 2 CPUs, the threads that read the next requests could not
/// run (measured: 40 us reads at depth 32 stayed at one request in flight, 13.7k IOPS on any
/// geometry). A timer wake-up's lateness is then the price, paid in latency, not in throughput.
const SPIN_BUSY_NS: u64 = 3_000;
const SPIN_MAX_NS: u64 = 300_000;

impl Completer {
    pub(crate) fn new(stats: Arc<Collector>) -> Arc<Completer> {
        Arc::new(Completer {
            queue: Mutex::new(BinaryHeap::new()),
            cv: Condvar::new(),
            stop: AtomicBool::new(false),
            spin_ns: AtomicU64::new(50_000),
            stats,
            last_answer_ns: AtomicU64::new(0),
            base: Instant::now(),
            waiting: AtomicUsize::new(0),
            spinning: AtomicUsize::new(0),
            last_arrival_ns: AtomicU64::new(0),
            streaming: AtomicBool::new(false),
            kernel_inflight: std::sync::OnceLock::new(),
            warmers: Mutex::new(Vec::new()),
            parked: AtomicUsize::new(0),
        })
    }

    /// Sets the first spin window from how late this thread's own timed sleeps of 100 us to
    /// 3 ms end (a few dozen, some 30 ms in all), rather than from a guess: the window then
    /// covers the machine's timer wake-ups from the first request on, and adapts from there.
    /// Returns the window set.
    pub(crate) fn calibrate(&self) -> Duration {
        let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
        let mut worst = 0u64;
        for (sleep_us, n) in [(100u64, 40), (1_000, 10), (3_000, 4)] {
            let mut late: Vec<u64> = (0..n)
                .map(|_| {
                    let d = Duration::from_micros(sleep_us);
                    let t0 = Instant::now();
                    std::thread::sleep(d);
                    t0.elapsed().saturating_sub(d).as_nanos() as u64
                })
                .collect();
            late.sort_unstable();
            // The 90th percentile: a rare long wake-up should not set the window for good.
            worst = worst.max(late[(late.len() * 9 / 10).min(late.len() - 1)]);
        }
        let window = (worst * 2 + 5_000).clamp(SPIN_MIN_NS, SPIN_MAX_NS);
        self.spin_ns.store(window, Relaxed);
        Duration::from_nanos(window)
    }

    /// Watches the loop device's `inflight` file (see [`Completer::complete`]).
    pub(crate) fn watch_kernel_inflight(&self, f: std::fs::File) {
        let _ = self.kernel_inflight.set(f);
    }

    /// The requests the kernel has in flight on the loop device (reads and writes), if watched.
    fn kernel_inflight(&self) -> Option<u64> {
        let f = self.kernel_inflight.get()?;
        let mut buf = [0u8; 64];
        let n = rustix::io::pread(f, &mut buf, 0).ok()?;
        let text = std::str::from_utf8(&buf[..n]).ok()?;
        text.split_whitespace()
            .map(|x| x.parse::<u64>().ok())
            .sum::<Option<u64>>()
    }

    pub(crate) fn spin_window(&self) -> Duration {
        Duration::from_nanos(self.spin_ns.load(Relaxed))
    }

    /// Answers `p` at its deadline: at once if due; by spinning here if the deadline is within the
    /// spin window and requests come one after another's answer (a hand-off would cost more than
    /// the wait); else through a completion thread, so that this thread goes on reading requests.
    pub(crate) fn complete(&self, p: Pending) {
        let now = Instant::now();
        let now_ns = now.duration_since(self.base).as_nanos() as u64;
        let gap = now_ns.saturating_sub(self.last_arrival_ns.swap(now_ns, Relaxed));
        if p.deadline <= now {
            self.finish(p);
            return;
        }
        let wait = p.deadline - now;
        // A stream: requests arriving closer together than their service time (they overlap),
        // or more requests in flight in the kernel than this one (they wait for a CPU to reach
        // this daemon: spinning here for the whole wait would hold that CPU from them).
        let streaming =
            gap < wait.as_nanos() as u64 || self.kernel_inflight().is_some_and(|n| n > 1);
        self.streaming.store(streaming, Relaxed);
        if wait <= self.spin_window() && !streaming && self.waiting.load(SeqCst) == 0 {
            if self.spinning.fetch_add(1, SeqCst) == 0 {
                spin_until(p.deadline);
                self.finish(p);
                self.spinning.fetch_sub(1, SeqCst);
                return;
            }
            // Another thread spins already: this one hands off.
            self.spinning.fetch_sub(1, SeqCst);
        }
        self.hold();
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let earliest = q.peek().is_none_or(|e| p.deadline < e.0.deadline);
        q.push(Entry(p));
        drop(q);
        if earliest {
            self.cv.notify_all();
        }
    }

    /// A request starts a long wait (in the queue, or in the model thread's model): the CPUs
    /// would halt, so the warm threads keep them awake until [`Completer::release`].
    pub(crate) fn hold(&self) {
        if self.waiting.fetch_add(1, SeqCst) == 0 && self.parked.load(SeqCst) > 0 {
            self.wake_warmers();
        }
    }

    /// A request held by [`Completer::hold`] was answered.
    pub(crate) fn release(&self) {
        // The time first: a warm thread that sees the request counted out also sees its time.
        self.last_answer_ns
            .store(self.base.elapsed().as_nanos() as u64, SeqCst);
        self.waiting.fetch_sub(1, SeqCst);
    }

    /// Sends the answer now and records its latency and lateness against its deadline.
    pub(crate) fn finish(&self, p: Pending) {
        let (kind, bytes, arrival, deadline) = (p.kind, p.bytes, p.arrival, p.deadline);
        p.answer.send();
        let done = Instant::now();
        self.stats.record(
            kind,
            bytes,
            done.duration_since(arrival).as_nanos() as u64,
            done.saturating_duration_since(deadline).as_nanos() as u64,
        );
    }

    /// Runs a completion thread until [`Completer::shutdown`] and the queue is empty.
    pub(crate) fn run(self: &Arc<Completer>) {
        // Wake-ups as exact as the hardware timers allow.
        let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let Some(top) = q.peek() else {
                if self.stop.load(Relaxed) {
                    return;
                }
                q = self.cv.wait(q).unwrap_or_else(|e| e.into_inner());
                continue;
            };
            // Other requests in flight (this one counts in `waiting`), or coming: spin briefly.
            let busy = self.waiting.load(SeqCst) > 1
                || self.spinning.load(SeqCst) > 0
                || self.streaming.load(Relaxed)
                || self.kernel_inflight().is_some_and(|n| n > 1);
            let spin = if busy {
                Duration::from_nanos(SPIN_BUSY_NS)
            } else {
                self.spin_window()
            };
            let now = Instant::now();
            let wake = top.0.deadline.checked_sub(spin).unwrap_or(now);
            if wake > now {
                let (g, _) = self
                    .cv
                    .wait_timeout(q, wake - now)
                    .unwrap_or_else(|e| e.into_inner());
                q = g;
                let woke = Instant::now();
                // Learn how late sleeps end: the spin window follows the oversleep.
                if let Some(top) = q.peek() {
                    if top.0.deadline.checked_sub(spin) == Some(wake) && woke >= wake {
                        self.adapt(woke.duration_since(wake).as_nanos() as u64);
                    }
                }
                continue;
            }
            let Some(Entry(p)) = q.pop() else { continue };
            drop(q);
            // Counts the request out of `waiting` even if answering it panics, so that the warm
            // threads do not spin for good.
            let _out = Answered(self);
            spin_until(p.deadline);
            self.finish(p);
            drop(_out);
            q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Runs a warm thread on `cpu` until [`Completer::shutdown`]: at the lowest priority
    /// (`SCHED_IDLE`) it spins while a request waits in the queue (a wait longer than the spin
    /// window) and for a while after each answer from it, offering the CPU to any other thread
    /// every few microseconds, and sleeps otherwise. A virtual CPU that halts during a long wait
    /// takes tens of microseconds to wake (the host has descheduled it), which the application's
    /// and the daemon's threads woken by the answer would pay: measured on this VM, a 1 ms device
    /// looked 3.5-4.7% slower than 0 plus 1 ms without these threads, 0.4-0.7% with them. Short
    /// waits (spun by the reading thread) need none, so the 0-latency floor is untouched.
    pub(crate) fn warm(self: &Arc<Completer>, cpu: usize) {
        let param = libc::sched_param { sched_priority: 0 };
        // libc: rustix does not wrap sched_setscheduler (`rustix::not_implemented`).
        // SAFETY: a plain system call on the calling thread with a valid parameter.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } != 0 {
            // Spinning above the idle priority would take CPU time from other work: don't.
            return;
        }
        let mut set = rustix::thread::CpuSet::new();
        set.set(cpu);
        let _ = rustix::thread::sched_setaffinity(None, &set);
        self.warmers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(std::thread::current());
        loop {
            if self.stop.load(Relaxed) {
                return;
            }
            // `waiting` first: an answer stores its time before it counts itself out, so a
            // thread that sees it counted out also sees its time.
            let waiting = self.waiting.load(SeqCst);
            let now = Instant::now();
            let after =
                self.base + Duration::from_nanos(self.last_answer_ns.load(SeqCst)) + WARM_AFTER;
            if waiting > 0 || now < after {
                spin_until(now + WARM_SLICE);
                // A thread woken onto this CPU from another one does not preempt us here (it
                // waited until the spin ended, 40-100 us); offering the CPU every slice lets it in.
                std::thread::yield_now();
            } else {
                // Until a request arrives (its `complete` unparks us); the timeout is a safety
                // net only.
                self.parked.fetch_add(1, SeqCst);
                if self.waiting.load(SeqCst) == 0 {
                    std::thread::park_timeout(Duration::from_millis(200));
                }
                self.parked.fetch_sub(1, SeqCst);
            }
        }
    }

    /// Learns from a timed sleep that ended `oversleep_ns` late: the spin window follows.
    pub(crate) fn adapt(&self, oversleep_ns: u64) {
        // The window tracks a slowly decaying maximum of the oversleep, plus a margin.
        let cur = self.spin_ns.load(Relaxed);
        let want = (oversleep_ns * 2 + 5_000).clamp(SPIN_MIN_NS, SPIN_MAX_NS);
        let next = if want > cur {
            want
        } else {
            cur - (cur - want) / 64
        };
        self.spin_ns.store(next, Relaxed);
    }

    /// Asks the completion threads to drain the queue and exit.
    pub(crate) fn shutdown(&self) {
        self.stop.store(true, Relaxed);
        self.cv.notify_all();
        self.wake_warmers();
    }

    fn wake_warmers(&self) {
        for t in self
            .warmers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            t.unpark();
        }
    }
}

/// A request answered from the queue: records the time of the answer and counts it out of
/// `waiting` when dropped.
struct Answered<'a>(&'a Completer);

impl Drop for Answered<'_> {
    fn drop(&mut self) {
        self.0.release();
    }
}

pub(crate) fn spin_until(t: Instant) {
    while Instant::now() < t {
        std::hint::spin_loop();
    }
}

//! Running a device model (`fsage_device::DeviceModel`) in real time; every device runs one (a
//! device made with latencies runs the fixed-latency model of `fsage-device`). The model's clock is
//! nanoseconds since the daemon started. An arrival locks the model and is submitted at its
//! arrival time (never earlier than the model's last time: clamped); a completion the model gives
//! at once is answered through the [`Completer`], like a fixed latency's. The other requests
//! complete through the model thread, which sleeps on a high-resolution timer until shortly
//! before the model's next event, spins to it, runs the model up to the clock and answers what
//! completed. An arrival that moves the next event earlier wakes it. Each answer is recorded
//! against the completion time the model gave, so `dev stats` shows how faithfully the host runs
//! the model.
//!
//! The fast path: a model whose kind answers every request at its arrival (its registry row's
//! `answers_at_arrival`: a fixed latency) never has an event to run, so an arrival only submits
//! it, and the answer is due at the arrival plus the time the model gave (the model's clock
//! starts nothing later than the arrival's own instant, so no clamping shifts it). The model
//! thread then only sleeps.

use crate::stats::Kind;
use crate::timing::{spin_until, Answer, Completer, Pending};
use fsage_device::{DeviceModel, ModelStats, Ns, Rq};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A request the model holds until it completes through `advance`.
struct Waiting {
    arrival: Instant,
    kind: Kind,
    bytes: u64,
    answer: Answer,
}

struct State {
    model: Box<dyn DeviceModel>,
    /// The latest time given to the model: it never goes back.
    last: Ns,
    next_id: u64,
    waiting: HashMap<u64, Waiting>,
    /// The event the model thread sleeps towards (none: it waits for an arrival).
    planned: Option<Ns>,
    /// Counters at the last reset.
    since: ModelStats,
}

/// A model run in real time (see the module documentation).
pub(crate) struct Modeled {
    state: Mutex<State>,
    cv: Condvar,
    /// The model's time 0.
    base: Instant,
    completer: Arc<Completer>,
    stop: AtomicBool,
    /// The fast path (see the module documentation).
    at_arrival: bool,
}

impl Modeled {
    /// Runs `model`; `at_arrival`: it answers every request at its arrival (the fast path).
    pub(crate) fn new(
        model: Box<dyn DeviceModel>,
        completer: Arc<Completer>,
        at_arrival: bool,
    ) -> Arc<Modeled> {
        Arc::new(Modeled {
            state: Mutex::new(State {
                model,
                last: 0,
                next_id: 0,
                waiting: HashMap::new(),
                planned: None,
                since: ModelStats::default(),
            }),
            cv: Condvar::new(),
            base: Instant::now(),
            completer,
            stop: AtomicBool::new(false),
            at_arrival,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn ns(&self, t: Instant) -> Ns {
        t.saturating_duration_since(self.base).as_nanos() as Ns
    }

    fn instant(&self, t: Ns) -> Instant {
        self.base + Duration::from_nanos(t)
    }

    /// Runs the model up to the clock (never back) and takes out the requests it completed.
    fn advance(&self, s: &mut State, now: Instant) -> Vec<Pending> {
        let now = self.ns(now).max(s.last);
        s.last = now;
        let mut done = Vec::new();
        s.model.advance(now, &mut done);
        done.into_iter()
            .filter_map(|(id, t)| {
                let w = s.waiting.remove(&id)?;
                Some(Pending {
                    deadline: self.instant(t),
                    arrival: w.arrival,
                    kind: w.kind,
                    bytes: w.bytes,
                    answer: w.answer,
                })
            })
            .collect()
    }

    /// Answers requests that waited in the model (their completion time has come).
    fn answer(&self, done: Vec<Pending>) {
        for p in done {
            self.completer.finish(p);
            self.completer.release();
        }
    }

    /// Runs `f` on the model, between requests (preconditioning, saving its state).
    pub(crate) fn with_model<R>(&self, f: impl FnOnce(&mut dyn DeviceModel) -> R) -> R {
        let mut s = self.lock();
        f(s.model.as_mut())
    }

    /// Hands a request that arrived at `arrival` to the model and answers it at the completion
    /// time the model gives. A write's `data` goes to a model that looks at it (a compressing
    /// drive's flash use depends on it).
    pub(crate) fn submit(
        &self,
        arrival: Instant,
        kind: Kind,
        offset: u64,
        bytes: u64,
        data: Option<&[u8]>,
        answer: Answer,
    ) {
        let mut s = self.lock();
        // Events due by the arrival happen first (the model's protocol); their requests are
        // answered here if the model thread has not got to them yet. The fast path's model has
        // none: its clock only follows the arrivals.
        let due = if self.at_arrival {
            s.last = self.ns(arrival).max(s.last);
            Vec::new()
        } else {
            self.advance(&mut s, arrival)
        };
        let now = s.last;
        let id = s.next_id;
        s.next_id += 1;
        let rq = Rq {
            id,
            kind,
            offset,
            len: bytes,
        };
        let mut wake = false;
        let given = match data.filter(|_| s.model.wants_data()) {
            Some(d) => s.model.submit_data(now, rq, d),
            None => s.model.submit(now, rq),
        };
        let at_once = match given {
            // The fast path: what the model gave after the arrival's (clamped) time, from the
            // arrival itself.
            Some(t) if self.at_arrival => Some(Pending {
                deadline: arrival + Duration::from_nanos(t.saturating_sub(now)),
                arrival,
                kind,
                bytes,
                answer,
            }),
            Some(t) => Some(Pending {
                deadline: self.instant(t),
                arrival,
                kind,
                bytes,
                answer,
            }),
            None => {
                s.waiting.insert(
                    id,
                    Waiting {
                        arrival,
                        kind,
                        bytes,
                        answer,
                    },
                );
                self.completer.hold();
                wake = match (s.model.next_event(), s.planned) {
                    (Some(next), Some(planned)) => next < planned,
                    (Some(_), None) => true,
                    (None, _) => false,
                };
                None
            }
        };
        drop(s);
        if wake {
            self.cv.notify_one();
        }
        self.answer(due);
        if let Some(p) = at_once {
            self.completer.complete(p);
        }
    }

    /// The model's counters since the start (or the last [`Modeled::reset_stats`]) and its
    /// description.
    pub(crate) fn stats(&self) -> (ModelStats, String) {
        let s = self.lock();
        // Saturating: preconditioning starts a model's own counters again.
        (s.model.stats().since(&s.since), s.model.describe())
    }

    /// Counting starts again.
    pub(crate) fn reset_stats(&self) {
        let mut s = self.lock();
        s.since = s.model.stats();
    }

    /// Runs the model thread until [`Modeled::shutdown`] and no request waits in the model.
    pub(crate) fn run(self: &Arc<Modeled>) {
        let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
        let mut s = self.lock();
        loop {
            // With no request waiting the model's own work (a write-back) need not be followed
            // in real time: the next arrival runs the model up to its time first.
            let next = s.model.next_event().filter(|_| !s.waiting.is_empty());
            let Some(next) = next else {
                s.planned = None;
                if self.stop.load(Relaxed) {
                    // Each request completes through the model; one it left behind must not
                    // hang its issuer.
                    for (_, w) in s.waiting.drain() {
                        w.answer.fail();
                        self.completer.release();
                    }
                    return;
                }
                s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
                continue;
            };
            s.planned = Some(next);
            let deadline = self.instant(next);
            let spin = self.completer.spin_window();
            let now = Instant::now();
            let wake = deadline.checked_sub(spin).unwrap_or(now);
            if wake > now {
                let (g, _) = self
                    .cv
                    .wait_timeout(s, wake - now)
                    .unwrap_or_else(|e| e.into_inner());
                s = g;
                let woke = Instant::now();
                // Learn how late sleeps end, as the completion threads do.
                if s.model.next_event() == Some(next) && woke >= wake {
                    self.completer
                        .adapt(woke.duration_since(wake).as_nanos() as u64);
                }
                continue;
            }
            drop(s);
            spin_until(deadline);
            let mut st = self.lock();
            let done = self.advance(&mut st, Instant::now());
            drop(st);
            self.answer(done);
            s = self.lock();
        }
    }

    /// Asks the model thread to finish the requests in the model and exit.
    pub(crate) fn shutdown(&self) {
        self.stop.store(true, Relaxed);
        let _s = self.lock();
        self.cv.notify_all();
    }
}

/// A model whose every completion goes through `advance`: what the inner model completes at
/// once is held until its time. Runs a fixed-latency model through the model thread, so that
/// the thread's timing can be tested against a model whose times are known exactly.
pub(crate) struct Deferred {
    inner: Box<dyn DeviceModel>,
    due: BinaryHeap<Reverse<(Ns, u64)>>,
}

impl Deferred {
    pub(crate) fn new(inner: Box<dyn DeviceModel>) -> Deferred {
        Deferred {
            inner,
            due: BinaryHeap::new(),
        }
    }
}

impl DeviceModel for Deferred {
    fn save_state(&self) -> Option<Vec<u8>> {
        self.inner.save_state()
    }

    fn load_state(&mut self, bytes: &[u8]) -> fsage_device::Result<()> {
        self.inner.load_state(bytes)
    }

    fn precondition(&mut self, overwrites: f64, seed: u64) -> fsage_device::Result<String> {
        self.inner.precondition(overwrites, seed)
    }

    fn retime(&mut self, kind: &fsage_device::ModelKind) -> fsage_device::Result<()> {
        self.inner.retime(kind)
    }

    fn submit(&mut self, now: Ns, rq: Rq) -> Option<Ns> {
        if let Some(t) = self.inner.submit(now, rq) {
            self.due.push(Reverse((t, rq.id)));
        }
        None
    }

    fn wants_data(&self) -> bool {
        self.inner.wants_data()
    }

    fn submit_data(&mut self, now: Ns, rq: Rq, data: &[u8]) -> Option<Ns> {
        if let Some(t) = self.inner.submit_data(now, rq, data) {
            self.due.push(Reverse((t, rq.id)));
        }
        None
    }

    fn next_event(&self) -> Option<Ns> {
        let held = self.due.peek().map(|Reverse((t, _))| *t);
        match (self.inner.next_event(), held) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn advance(&mut self, now: Ns, done: &mut Vec<(u64, Ns)>) {
        self.inner.advance(now, done);
        while let Some(&Reverse((t, id))) = self.due.peek() {
            if t > now {
                break;
            }
            self.due.pop();
            done.push((id, t));
        }
    }

    fn stats(&self) -> ModelStats {
        self.inner.stats()
    }

    fn describe(&self) -> String {
        format!(
            "{} (every answer through the model thread)",
            self.inner.describe()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsage_device::{FixedLatency, RqKind};

    #[test]
    fn deferred_completes_through_advance_at_the_inner_times() {
        let mut m = Deferred::new(Box::new(FixedLatency::new(
            1_000,
            1_000,
            1_000,
            None,
            Some(1),
        )));
        let rq = |id| Rq {
            id,
            kind: RqKind::Read,
            offset: 0,
            len: 4096,
        };
        assert_eq!(m.submit(0, rq(0)), None);
        assert_eq!(m.submit(0, rq(1)), None);
        assert_eq!(m.next_event(), Some(1_000));
        let mut done = Vec::new();
        m.advance(1_500, &mut done);
        assert_eq!(done, vec![(0, 1_000)]);
        assert_eq!(m.next_event(), Some(2_000));
        m.advance(2_000, &mut done);
        assert_eq!(done, vec![(0, 1_000), (1, 2_000)]);
        assert_eq!(m.next_event(), None);
        assert_eq!(m.stats().requests.reads, 2);
    }
}

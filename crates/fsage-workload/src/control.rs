//! The flowops that pace threads instead of moving data: the event generator and the rate
//! limits that draw from it (`eventlimit`, `opslimit`, `iopslimit`, `bwlimit`), semaphores
//! (`semblock`/`sempost`, `block`/`wakeup`), `hog`, `delay`, and the finish conditions
//! (`finishoncount`, `finishonbytes`). Every wait gives up when the run is stopped.

use crate::flowop::Fail;
use crate::model::{FlowopDef, FlowopKind, Model};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// `eventgen rate=N`: N events a second from the start of the run, at most one second's worth
/// saved up; each limit flowop takes the events its thread's work has cost.
pub(crate) struct EventGen {
    hz: u64,
    start: Instant,
    used: AtomicU64,
}

impl EventGen {
    /// Takes `n` events, waiting for them; false when the run stopped first.
    fn take(&self, n: u64, stop: &dyn Fn() -> bool) -> bool {
        loop {
            let issued = (self.start.elapsed().as_secs_f64() * self.hz as f64) as u64;
            let used = self.used.load(Relaxed);
            let floor = issued.saturating_sub(self.hz);
            if used < floor {
                let _ = self.used.compare_exchange(used, floor, Relaxed, Relaxed);
                continue;
            }
            if issued >= used + n {
                if self
                    .used
                    .compare_exchange(used, used + n, Relaxed, Relaxed)
                    .is_ok()
                {
                    return true;
                }
                continue;
            }
            if stop() {
                return false;
            }
            let wait = (used + n - issued) as f64 / self.hz as f64;
            std::thread::sleep(Duration::from_secs_f64(wait.clamp(0.0001, 0.02)));
        }
    }
}

/// A Filebench semaphore pair: `lw` counts what was posted, `hw` the room left before a
/// blocking post must wait.
struct Sem {
    m: Mutex<(i64, i64)>,
    cv: Condvar,
}

impl Sem {
    fn wait_until(
        &self,
        stop: &dyn Fn() -> bool,
        ready: impl Fn(&(i64, i64)) -> bool,
        then: impl FnOnce(&mut (i64, i64)),
    ) -> bool {
        let mut g = self.m.lock().unwrap_or_else(|e| e.into_inner());
        while !ready(&g) {
            if stop() {
                return false;
            }
            g = self
                .cv
                .wait_timeout(g, Duration::from_millis(20))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        then(&mut g);
        drop(g);
        self.cv.notify_all();
        true
    }
}

/// What every thread shares for the pacing flowops.
pub(crate) struct Control {
    eventgen: Option<EventGen>,
    sems: HashMap<String, Sem>,
    /// I/O operations and bytes of all threads since the start (for a finish without target).
    pub(crate) ops: AtomicU64,
    pub(crate) bytes: AtomicU64,
    /// Whether [`Control::ops`] and [`Control::bytes`] are kept (only a finish without target
    /// reads them: the counters are shared, so kept only then).
    pub(crate) global: bool,
}

impl Control {
    pub(crate) fn new(m: &Model) -> Control {
        let mut sems = HashMap::new();
        let mut global = false;
        for f in m.threads.iter().flat_map(|t| &t.flowops) {
            match f.kind {
                FlowopKind::SemBlock | FlowopKind::Block => {
                    sems.entry(f.name.clone()).or_insert_with(|| Sem {
                        m: Mutex::new((0, f.highwater.unwrap_or(0) as i64)),
                        cv: Condvar::new(),
                    });
                }
                FlowopKind::FinishOnCount | FlowopKind::FinishOnBytes if f.target.is_none() => {
                    global = true
                }
                _ => {}
            }
        }
        Control {
            eventgen: (m.eventgen_hz > 0).then(|| EventGen {
                hz: m.eventgen_hz,
                start: Instant::now(),
                used: AtomicU64::new(0),
            }),
            sems,
            ops: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            global,
        }
    }
}

/// One thread's counts since the start of the run (warm-up included), for the limits and
/// finishes: all its I/O operations, the reads and writes among them, their bytes, and each
/// flowop's operations and bytes.
#[derive(Default)]
pub(crate) struct Counts {
    pub(crate) ops: u64,
    pub(crate) rw_ops: u64,
    pub(crate) bytes: u64,
    pub(crate) flow_ops: Vec<u64>,
    pub(crate) flow_bytes: Vec<u64>,
    /// Per flowop: (last count seen, bucket, seen once) of a rate limit.
    pub(crate) limit: Vec<(u64, i64, bool)>,
}

impl Counts {
    pub(crate) fn new(n: usize) -> Counts {
        Counts {
            flow_ops: vec![0; n],
            flow_bytes: vec![0; n],
            limit: vec![(0, 0, false); n],
            ..Counts::default()
        }
    }

    pub(crate) fn add(&mut self, k: usize, kind: FlowopKind, bytes: u64) {
        self.flow_ops[k] += 1;
        self.flow_bytes[k] += bytes;
        if kind.is_io() {
            self.ops += 1;
            self.bytes += bytes;
            if kind.reads() || kind.writes() {
                self.rw_ops += 1;
            }
        }
    }
}

/// Runs pacing flowop `k` of a thread whose flowops are `flowops`.
pub(crate) fn exec(
    c: &Control,
    flowops: &[FlowopDef],
    k: usize,
    counts: &mut Counts,
    stop: &dyn Fn() -> bool,
) -> Result<(), Fail> {
    let f = &flowops[k];
    let target = f
        .target
        .as_ref()
        .and_then(|t| flowops.iter().position(|x| &x.name == t));
    match f.kind {
        FlowopKind::EventLimit => match &c.eventgen {
            Some(g) if !g.take(1, stop) => Err(Fail::Stopped),
            _ => Ok(()),
        },
        FlowopKind::OpsLimit | FlowopKind::IopsLimit | FlowopKind::BwLimit => {
            let Some(g) = &c.eventgen else {
                return Ok(());
            };
            let now = match (f.kind, target) {
                (FlowopKind::BwLimit, Some(t)) => counts.flow_bytes[t],
                (FlowopKind::BwLimit, None) => counts.bytes,
                (_, Some(t)) => counts.flow_ops[t],
                (FlowopKind::IopsLimit, None) => counts.rw_ops,
                _ => counts.ops,
            };
            let (last, bucket, seen) = &mut counts.limit[k];
            if !*seen {
                *seen = true;
                *last = now;
                return Ok(());
            }
            *bucket -= (now - *last) as i64;
            *last = now;
            if *bucket >= 0 {
                return Ok(());
            }
            let owed = (-*bucket) as u64;
            // bwlimit: one event is a MiB.
            let events = if f.kind == FlowopKind::BwLimit {
                owed.div_ceil(1 << 20)
            } else {
                owed
            };
            if !g.take(events, stop) {
                return Err(Fail::Stopped);
            }
            *bucket += if f.kind == FlowopKind::BwLimit {
                (events << 20) as i64
            } else {
                events as i64
            };
            Ok(())
        }
        FlowopKind::FinishOnCount | FlowopKind::FinishOnBytes => {
            let limit = f.value.unwrap_or(0);
            let bytes = f.kind == FlowopKind::FinishOnBytes;
            let now = match target {
                Some(t) if bytes => counts.flow_bytes[t],
                Some(t) => counts.flow_ops[t],
                None if bytes => c.bytes.load(Relaxed),
                None => c.ops.load(Relaxed),
            };
            if now >= limit {
                return Err(Fail::Done(format!(
                    "{} {} reached {limit} {}{}",
                    f.kind.name(),
                    f.name,
                    if bytes { "bytes" } else { "operations" },
                    match &f.target {
                        Some(t) => format!(" of {t}"),
                        None => " of all threads".into(),
                    }
                )));
            }
            Ok(())
        }
        FlowopKind::SemBlock | FlowopKind::Block => {
            let s = &c.sems[&f.name];
            let v = if f.kind == FlowopKind::Block {
                1
            } else {
                f.value.unwrap_or(1) as i64
            };
            let ok = {
                let mut g = s.m.lock().unwrap_or_else(|e| e.into_inner());
                if f.kind == FlowopKind::SemBlock {
                    g.1 += v;
                }
                drop(g);
                s.cv.notify_all();
                s.wait_until(stop, |g| g.0 >= v, |g| g.0 -= v)
            };
            if ok {
                Ok(())
            } else {
                Err(Fail::Stopped)
            }
        }
        FlowopKind::SemPost | FlowopKind::Wakeup => {
            let tg = f.target.as_deref().expect("checked by the parser");
            let s = &c.sems[tg];
            let v = if f.kind == FlowopKind::Wakeup {
                1
            } else {
                f.value.unwrap_or(1) as i64
            };
            {
                let mut g = s.m.lock().unwrap_or_else(|e| e.into_inner());
                g.0 += v;
                if !f.blocking && g.1 >= v {
                    g.1 -= v;
                }
            }
            s.cv.notify_all();
            if f.blocking && !s.wait_until(stop, |g| g.1 >= v, |g| g.1 -= v) {
                return Err(Fail::Stopped);
            }
            Ok(())
        }
        FlowopKind::Hog => {
            let mut x = 0u64;
            for i in 0..f.value.unwrap_or(0) {
                x = std::hint::black_box(x.wrapping_add(i));
            }
            std::hint::black_box(x);
            Ok(())
        }
        FlowopKind::Delay => {
            let end = Instant::now() + Duration::from_secs(f.value.unwrap_or(0));
            while Instant::now() < end {
                if stop() {
                    return Err(Fail::Stopped);
                }
                std::thread::sleep(
                    end.saturating_duration_since(Instant::now())
                        .min(Duration::from_millis(50)),
                );
            }
            Ok(())
        }
        other => unreachable!("{} is not a pacing flowop", other.name()),
    }
}

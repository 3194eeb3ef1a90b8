//! The flowops that pace threads instead of moving data: the event generator and the rate
//! limits that draw from it (`eventlimit`, `opslimit`, `iopslimit`, `bwlimit`), semaphores
//! (`semblock`/`sempost`, `block`/`wakeup`), `hog`, `delay`, and the finish conditions
//! (`finishoncount`, `finishonbytes`). Every wait gives up when the run is stopped.

use crate::flowop::Fail;
use crate::kind::{FlowopKind, PaceOp};
use crate::model::{FlowopDef, Model};
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
/// blocking post must wait. For `block`, `lw` is instead the number of wakeups so far: a
/// block waits for the next one, as a condition variable does (a wakeup nobody waits for is
/// lost, as in Filebench).
struct Sem {
    m: Mutex<(i64, i64)>,
    cv: Condvar,
}

impl Sem {
    fn new(hw: i64) -> Sem {
        Sem {
            m: Mutex::new((0, hw)),
            cv: Condvar::new(),
        }
    }

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

    fn update(&self, f: impl FnOnce(&mut (i64, i64))) {
        f(&mut self.m.lock().unwrap_or_else(|e| e.into_inner()));
        self.cv.notify_all();
    }
}

/// What every thread shares for the pacing flowops.
pub(crate) struct Control {
    eventgen: Option<EventGen>,
    /// One semaphore per instance of each `semblock`/`block` flowop: in Filebench every
    /// thread instance has its own flowops, each with its own semaphore.
    sems: Vec<Sem>,
    /// (thread instance, flowop index) -> its semaphore in `sems`.
    own: HashMap<(usize, usize), usize>,
    /// Flowop name -> the semaphores of every instance of that name: a `sempost` or `wakeup`
    /// reaches them all (Filebench's flowop_find returns every flowop of the name).
    by_name: HashMap<String, Vec<usize>>,
    /// I/O operations and bytes of all threads since the start (for a finish without target).
    pub(crate) ops: AtomicU64,
    pub(crate) bytes: AtomicU64,
    /// Whether [`Control::ops`] and [`Control::bytes`] are kept (only a finish without target
    /// reads them: the counters are shared, so kept only then).
    pub(crate) global: bool,
}

impl Control {
    /// `instances[t]` is the index in `m.threads` of thread instance `t`.
    pub(crate) fn new(m: &Model, instances: &[usize]) -> Control {
        let mut sems = Vec::new();
        let mut own = HashMap::new();
        let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
        for (t, &d) in instances.iter().enumerate() {
            for (k, f) in m.threads[d].flowops.iter().enumerate() {
                if matches!(f.kind, FlowopKind::Pace(PaceOp::SemBlock | PaceOp::Block)) {
                    own.insert((t, k), sems.len());
                    by_name.entry(f.name.clone()).or_default().push(sems.len());
                    sems.push(Sem::new(f.highwater.unwrap_or(0) as i64));
                }
            }
        }
        let global = m
            .threads
            .iter()
            .flat_map(|t| &t.flowops)
            .any(|f| f.kind.is_finish() && f.target.is_none());
        Control {
            eventgen: (m.eventgen_hz > 0).then(|| EventGen {
                hz: m.eventgen_hz,
                start: Instant::now(),
                used: AtomicU64::new(0),
            }),
            sems,
            own,
            by_name,
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

/// Runs pacing flowop `k` (of kind `op`) of thread instance `t`, whose flowops are `flowops`; the operations it
/// counts for, as Filebench counts them: a rate limit none without an event generator or at its
/// first call (it only takes the count then), a wakeup one per instance of its target.
pub(crate) fn exec(
    c: &Control,
    op: PaceOp,
    flowops: &[FlowopDef],
    t: usize,
    k: usize,
    counts: &mut Counts,
    stop: &dyn Fn() -> bool,
) -> Result<u64, Fail> {
    let f = &flowops[k];
    let target = f
        .target
        .as_ref()
        .and_then(|t| flowops.iter().position(|x| &x.name == t));
    match op {
        PaceOp::EventLimit => match &c.eventgen {
            Some(g) if !g.take(1, stop) => Err(Fail::Stopped),
            Some(_) => Ok(1),
            None => Ok(0),
        },
        PaceOp::OpsLimit | PaceOp::IopsLimit | PaceOp::BwLimit => {
            let Some(g) = &c.eventgen else {
                return Ok(0);
            };
            let now = match (op, target) {
                (PaceOp::BwLimit, Some(t)) => counts.flow_bytes[t],
                (PaceOp::BwLimit, None) => counts.bytes,
                (_, Some(t)) => counts.flow_ops[t],
                (PaceOp::IopsLimit, None) => counts.rw_ops,
                _ => counts.ops,
            };
            let (last, bucket, seen) = &mut counts.limit[k];
            if !*seen {
                *seen = true;
                *last = now;
                return Ok(0);
            }
            *bucket -= (now - *last) as i64;
            *last = now;
            if *bucket >= 0 {
                return Ok(1);
            }
            let owed = (-*bucket) as u64;
            // bwlimit: one event is a MiB.
            let events = if op == PaceOp::BwLimit {
                owed.div_ceil(1 << 20)
            } else {
                owed
            };
            if !g.take(events, stop) {
                return Err(Fail::Stopped);
            }
            *bucket += if op == PaceOp::BwLimit {
                (events << 20) as i64
            } else {
                events as i64
            };
            Ok(1)
        }
        PaceOp::FinishOnCount | PaceOp::FinishOnBytes => {
            let limit = f.value.unwrap_or(0);
            let bytes = op == PaceOp::FinishOnBytes;
            let now = match target {
                Some(t) if bytes => counts.flow_bytes[t],
                Some(t) => counts.flow_ops[t],
                None if bytes => c.bytes.load(Relaxed),
                None => c.ops.load(Relaxed),
            };
            if now >= limit {
                return Err(Fail::Done(format!(
                    "{} {} reached {limit} {}{}",
                    op.name(),
                    f.name,
                    if bytes { "bytes" } else { "operations" },
                    match &f.target {
                        Some(t) => format!(" of {t}"),
                        None => " of all threads".into(),
                    }
                )));
            }
            Ok(1)
        }
        PaceOp::Block => {
            let s = &c.sems[c.own[&(t, k)]];
            let seen = s.m.lock().unwrap_or_else(|e| e.into_inner()).0;
            if s.wait_until(stop, |g| g.0 != seen, |_| ()) {
                Ok(1)
            } else {
                Err(Fail::Stopped)
            }
        }
        PaceOp::Wakeup => {
            let tg = f.target.as_deref().expect("checked by the parser");
            let all = c.by_name.get(tg).map_or(&[][..], |v| &v[..]);
            for &i in all {
                c.sems[i].update(|g| g.0 += 1);
            }
            Ok(all.len() as u64)
        }
        // Filebench (System V semaphores): a semblock gives back `value` of room to blocking
        // posts, then takes `value` posts, waiting for them.
        PaceOp::SemBlock => {
            let s = &c.sems[c.own[&(t, k)]];
            let v = f.value.unwrap_or(1) as i64;
            s.update(|g| g.1 += v);
            if s.wait_until(stop, |g| g.0 >= v, |g| g.0 -= v) {
                Ok(1)
            } else {
                Err(Fail::Stopped)
            }
        }
        // A sempost posts `value` to every instance of its target in turn; a blocking one
        // first waits at each for `value` of room and takes it with the post (one atomic
        // semop in Filebench), a non-blocking one leaves the room alone.
        PaceOp::SemPost => {
            let tg = f.target.as_deref().expect("checked by the parser");
            let v = f.value.unwrap_or(1) as i64;
            for &i in c.by_name.get(tg).into_iter().flatten() {
                let s = &c.sems[i];
                if !f.blocking {
                    s.update(|g| g.0 += v);
                } else if !s.wait_until(
                    stop,
                    |g| g.1 >= v,
                    |g| {
                        g.0 += v;
                        g.1 -= v
                    },
                ) {
                    return Err(Fail::Stopped);
                }
            }
            Ok(1)
        }
        PaceOp::Hog => {
            hog(&mut 0, f.value.unwrap_or(0));
            Ok(1)
        }
        PaceOp::Delay => {
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
            Ok(1)
        }
    }
}

/// Filebench's `hog`: `n` one-byte stores of 1 into the thread's memory (`mem`). Filebench's
/// compiled loop (GCC -O2) reads the memory's address again before each store (it stores
/// through a `char *` member of the thread, which the store may alias) and is not unrolled: a
/// load, an add, a store, a compare and a branch an iteration. On x86-64 this loop is those
/// five instructions, so that it costs Filebench's CPU per iteration on any processor (LLVM
/// would unroll a plain loop of volatile stores eightfold, a quarter cheaper than Filebench's
/// on the machine of BENCHMARKS.md "The hog loop"); elsewhere the stores are volatile.
/// `scripts/bench-hog` measures it against Filebench's.
pub(crate) fn hog(mem: &mut u8, n: u64) {
    let addr: *mut u8 = mem;
    if n == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the loop stores only into `*addr`, which comes from `mem`, borrowed mutably for
    // the whole loop; it reads only `addr`, a live local; it touches no stack and no flags
    // that Rust relies on across the block (asm! assumes the flags clobbered).
    unsafe {
        std::arch::asm!(
            "2:",
            "mov {p}, qword ptr [{slot}]",
            "add {i}, 1",
            "mov byte ptr [{p}], 1",
            "cmp {i}, {n}",
            "jne 2b",
            slot = in(reg) &addr,
            p = out(reg) _,
            i = inout(reg) 0u64 => _,
            n = in(reg) n,
            options(nostack),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    for _ in 0..n {
        // SAFETY: `addr` comes from `mem`, borrowed mutably for the whole loop.
        unsafe { std::ptr::write_volatile(std::ptr::read_volatile(&addr), 1) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Workload;

    fn pace(fl: &[FlowopDef], k: usize) -> PaceOp {
        match fl[k].kind {
            FlowopKind::Pace(op) => op,
            other => panic!("{} is not a pacing flowop", other.name()),
        }
    }

    /// Two instances of a thread that semblocks (`blk`, high water 2) and blocks (`bk`), one
    /// thread that posts to them: thread instances 0 and 1 are the blockers, 2 the poster.
    fn setup(blocking: bool) -> (Model, Control) {
        let text = format!(
            "define process name=b,instances=2\n{{\n  thread name=b\n  {{\n    \
             flowop semblock name=blk,value=1,highwater=2\n    flowop block name=bk\n  }}\n}}\n\
             define process name=p\n{{\n  thread name=p\n  {{\n    \
             flowop sempost name=post,value=1,target=blk{}\n    \
             flowop wakeup name=wk,target=bk\n  }}\n}}\nrun 1\n",
            if blocking { ",blocking" } else { "" }
        );
        let w = Workload::parse(&text, "test.f").unwrap();
        let m = w.model().clone();
        let instances: Vec<usize> = m
            .threads
            .iter()
            .enumerate()
            .flat_map(|(d, t)| std::iter::repeat_n(d, t.instances as usize))
            .collect();
        assert_eq!(instances, [0, 0, 1]);
        let c = Control::new(&m, &instances);
        (m, c)
    }

    fn run(c: &Control, m: &Model, t: usize, k: usize, stop: &dyn Fn() -> bool) -> bool {
        let d = if t < 2 { 0 } else { 1 };
        let fl = &m.threads[d].flowops;
        let mut counts = Counts::new(fl.len());
        match exec(c, pace(fl, k), fl, t, k, &mut counts, stop) {
            Ok(_) => true,
            Err(Fail::Stopped) => false,
            Err(_) => panic!("unexpected failure"),
        }
    }

    fn state(c: &Control, t: usize, k: usize) -> (i64, i64) {
        *c.sems[c.own[&(t, k)]].m.lock().unwrap()
    }

    /// Gives up the first time it is asked whether to stop (a wait that would block).
    fn now() -> bool {
        true
    }

    #[test]
    fn a_post_reaches_every_instance_of_its_target() {
        let (m, c) = setup(false);
        assert_ne!(c.own[&(0, 0)], c.own[&(1, 0)], "one semaphore per instance");
        assert!(run(&c, &m, 2, 0, &now));
        assert_eq!(state(&c, 0, 0).0, 1);
        assert_eq!(state(&c, 1, 0).0, 1);
        // Each instance takes its own post; a second semblock finds none left and waits.
        assert!(run(&c, &m, 0, 0, &now));
        assert!(run(&c, &m, 1, 0, &now));
        assert!(!run(&c, &m, 0, 0, &now));
        // A non-blocking post leaves the high-water room alone; the semblocks gave back 1 each.
        assert_eq!(state(&c, 0, 0), (0, 4));
        assert_eq!(state(&c, 1, 0), (0, 3));
    }

    #[test]
    fn a_blocking_post_waits_for_room_at_each_instance() {
        let (m, c) = setup(true);
        assert!(run(&c, &m, 2, 0, &now));
        assert!(run(&c, &m, 2, 0, &now));
        assert_eq!(state(&c, 0, 0), (2, 0));
        // No room left: the post waits, and posts nothing while it does.
        assert!(!run(&c, &m, 2, 0, &now));
        assert_eq!(state(&c, 0, 0), (2, 0));
        assert_eq!(state(&c, 1, 0), (2, 0));
        // Instance 0 takes a post and gives back room; instance 1 has none: the post to
        // instance 0 goes through, the one to instance 1 still waits.
        assert!(run(&c, &m, 0, 0, &now));
        assert!(!run(&c, &m, 2, 0, &now));
        assert_eq!(state(&c, 0, 0), (2, 0));
        assert_eq!(state(&c, 1, 0), (2, 0));
        // A post that waits goes on once each instance in turn has room.
        std::thread::scope(|s| {
            let h = s.spawn(|| run(&c, &m, 2, 0, &|| false));
            std::thread::sleep(Duration::from_millis(50));
            assert!(!h.is_finished());
            assert!(run(&c, &m, 0, 0, &now));
            std::thread::sleep(Duration::from_millis(50));
            assert!(!h.is_finished());
            assert!(run(&c, &m, 1, 0, &now));
            assert!(h.join().unwrap());
        });
        assert_eq!(state(&c, 0, 0), (2, 0));
        assert_eq!(state(&c, 1, 0), (2, 0));
    }

    #[test]
    fn a_wakeup_releases_every_waiting_block_and_is_lost_when_none_waits() {
        let (m, c) = setup(false);
        assert!(run(&c, &m, 2, 1, &now));
        // The wakeup came before the block: the block waits for the next one.
        assert!(!run(&c, &m, 0, 1, &now));
        std::thread::scope(|s| {
            let a = s.spawn(|| run(&c, &m, 0, 1, &|| false));
            let b = s.spawn(|| run(&c, &m, 1, 1, &|| false));
            // Wakeups until both went through (a wakeup before a thread waits is lost).
            let t0 = Instant::now();
            while !(a.is_finished() && b.is_finished()) {
                assert!(t0.elapsed() < Duration::from_secs(10), "a block never woke");
                assert!(run(&c, &m, 2, 1, &now));
                std::thread::sleep(Duration::from_millis(5));
            }
            assert!(a.join().unwrap() && b.join().unwrap());
        });
    }

    /// Counted as Filebench counts: a wakeup once per instance of its target, a rate limit
    /// not at all without an event generator, and not at its first call with one.
    #[test]
    fn operations_counted_as_filebench_counts_them() {
        let (m, c) = setup(false);
        let fl = &m.threads[1].flowops;
        let mut counts = Counts::new(fl.len());
        assert!(matches!(
            exec(&c, pace(fl, 1), fl, 2, 1, &mut counts, &now),
            Ok(2)
        ));
        let limits = |rate: u64| {
            let w = Workload::parse(
                &format!(
                    "eventgen rate={rate}\ndefine process name=p\n{{\n  thread name=p\n  {{\n    \
                     flowop eventlimit name=ev\n    flowop opslimit name=ol\n  }}\n}}\nrun 1\n"
                ),
                "limits.f",
            )
            .unwrap();
            let m = w.model().clone();
            let c = Control::new(&m, &[0]);
            let fl = &m.threads[0].flowops;
            let mut counts = Counts::new(fl.len());
            let mut n = Vec::new();
            for k in [0, 1, 1] {
                n.push(
                    match exec(&c, pace(fl, k), fl, 0, k, &mut counts, &|| false) {
                        Ok(n) => n,
                        Err(_) => panic!("a limit failed"),
                    },
                );
            }
            n
        };
        assert_eq!(limits(0), [0, 0, 0]);
        assert_eq!(limits(1000), [1, 0, 1]);
    }

    #[test]
    fn a_hog_stores_one_into_the_thread_memory_only_when_it_iterates() {
        let mut mem = 7u8;
        hog(&mut mem, 0);
        assert_eq!(mem, 7);
        hog(&mut mem, 1000);
        assert_eq!(mem, 1);
    }
}

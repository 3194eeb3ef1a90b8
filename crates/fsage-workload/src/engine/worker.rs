//! One thread instance: its buffer and generator, then its flowops in a loop until the stop,
//! each timed, counted and (one in [`CPU_SAMPLE_EVERY`]) sampled for its CPU time.

use super::rep::{Gate, Shared};
use super::stats::{FlowStats, ThreadOut};
use crate::control::{self, Counts};
use crate::error::Error;
use crate::flowop::{exec_data, exec_file, Buf, Fail, ThreadIo};
use crate::kind::FlowopKind;
use crate::model::QuitMode;
use fsage_plan::Rng;
use hdrhistogram::Histogram;
use nix::sys::resource::{getrusage, UsageWho};
use nix::sys::time::TimeVal;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

/// The CPU time of the calling thread in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`): a system
/// call, so per operation it is read only for a sample.
pub(super) fn thread_clock_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// One operation in this many has its CPU time measured, for the CPU time per flowop. Prime,
/// so that it does not keep falling on the same flowops of a thread's cycle.
pub(super) const CPU_SAMPLE_EVERY: u64 = 251;

/// The calling thread's user and system time in nanoseconds (0 if the kernel refuses, which it
/// does not for `RUSAGE_THREAD`). rustix has no getrusage: nix.
pub(super) fn thread_cpu_ns() -> u64 {
    let Ok(ru) = getrusage(UsageWho::RUSAGE_THREAD) else {
        return 0;
    };
    let t = |tv: TimeVal| tv.tv_sec() as u64 * 1_000_000_000 + tv.tv_usec() as u64 * 1000;
    t(ru.user_time()) + t(ru.system_time())
}

/// Told apart from a thread's seed for its buffer's bytes (the choices take the seed itself).
pub(super) const DATA_SALT: u64 = 0xda7a_b0f5_5eed_0001;

/// Latencies above 100 s are recorded as 100 s in the histogram (the exact max is kept apart).
pub(super) const HIST_MAX_NS: u64 = 100_000_000_000;

pub(super) fn worker(sh: &Shared, def: usize, t: usize, seed: u64, barrier: &Gate) -> ThreadOut {
    let flowops = &sh.flowops[def];
    let iomax = flowops
        .iter()
        .filter_map(|f| f.iosize)
        .max()
        .unwrap_or(1 << 20)
        .max(4096) as usize;
    // The buffer's bytes come from a generator of their own: the choices (files, sizes,
    // offsets) of a seed are then the same whatever the data pattern and the buffer's size.
    let buf = Buf::new(iomax, sh.data, &mut Rng::new(seed ^ DATA_SALT));
    let mut tio = ThreadIo::new(buf, Rng::new(seed));
    let mut counts = Counts::new(flowops.len());
    let mut flows: Vec<FlowStats> = flowops
        .iter()
        .map(|_| FlowStats {
            hist: sh
                .record
                .then(|| Histogram::new_with_bounds(1, HIST_MAX_NS, 3).expect("valid bounds")),
            ..FlowStats::default()
        })
        .collect();
    // What a sample's two clock reads cost by themselves: the median of a few empty samples,
    // taken off every sample.
    let clock_cost = {
        let mut v: Vec<u64> = (0..31)
            .map(|_| {
                let a = thread_clock_ns();
                thread_clock_ns().saturating_sub(a)
            })
            .collect();
        v.sort_unstable();
        v[v.len() / 2]
    };
    barrier.ready.fetch_add(1, Relaxed);
    while !barrier.go.load(Relaxed) {
        std::thread::sleep(Duration::from_micros(200));
    }
    let start = *sh.start.get().expect("start set before the barrier");
    let w_end = start + sh.warmup;
    let end = sh.duration.map(|d| w_end + d);
    let mut measuring = false;
    let mut cpu0 = 0;
    let mut last_end = None;
    let mut done = 0u64;
    let stop_now = || sh.stop.load(Relaxed) || end.is_some_and(|e| Instant::now() >= e);
    'run: while !sh.stop.load(Relaxed) {
        for (k, f) in flowops.iter().enumerate() {
            for _ in 0..f.iters {
                let t0 = Instant::now();
                if sh.stop.load(Relaxed) || end.is_some_and(|e| t0 >= e) {
                    break 'run;
                }
                let counted = t0 >= w_end;
                if counted && !measuring {
                    measuring = true;
                    cpu0 = thread_cpu_ns();
                }
                if counted {
                    if let Some(max) = sh.max_ops {
                        if sh.tickets.fetch_add(1, Relaxed) >= max {
                            sh.stop.store(true, Relaxed);
                            break 'run;
                        }
                    }
                }
                let sample = sh.record && counted && done % CPU_SAMPLE_EVERY == 0;
                // A first clock read lets a switch to another thread that is already due happen
                // before the sample starts, so that the sample does not charge it to this
                // operation (with 50 threads on 2 CPUs one often is).
                let c0 = if sample {
                    let _ = thread_clock_ns();
                    thread_clock_ns()
                } else {
                    0
                };
                // The latency does not include the sample's clock reads.
                let t0 = if sample { Instant::now() } else { t0 };
                // Operations this flowop counts for (a pacing flowop may count none or several).
                let mut n = 1;
                let r = match f.kind {
                    FlowopKind::Pace(op) => {
                        control::exec(&sh.control, op, flowops, t, k, &mut counts, &stop_now).map(
                            |c| {
                                n = c;
                                (0, 0)
                            },
                        )
                    }
                    FlowopKind::File(op) => exec_file(&sh.filesets, f, op, &mut tio, &stop_now),
                    FlowopKind::Data(op) => exec_data(&sh.filesets, f, op, &mut tio, &stop_now),
                };
                let t1 = Instant::now();
                // Files the operation opened by itself: one more operation each (Filebench
                // counts them so), timed apart from the operation.
                let mut open_ns = 0;
                for ns in tio.opened.drain(..) {
                    open_ns += ns;
                    // Under --ops an open takes a ticket too; one past the last is not counted.
                    if counted {
                        if let Some(max) = sh.max_ops {
                            if sh.tickets.fetch_add(1, Relaxed) >= max {
                                sh.stop.store(true, Relaxed);
                                continue;
                            }
                        }
                    }
                    counts.add(k, f.kind, 0);
                    if sh.control.global {
                        sh.control.ops.fetch_add(1, Relaxed);
                    }
                    if counted {
                        let st = &mut flows[k];
                        st.ops += 1;
                        if sh.record {
                            st.sum_ns += ns as u128;
                            st.max_ns = st.max_ns.max(ns);
                            if let Some(h) = &mut st.hist {
                                h.saturating_record(ns.clamp(1, HIST_MAX_NS));
                            }
                        }
                    }
                }
                if let Ok((rd, wr)) = r {
                    for _ in 1..n {
                        counts.add(k, f.kind, 0);
                    }
                    if n > 0 {
                        counts.add(k, f.kind, rd + wr);
                    }
                    if sh.control.global && f.kind.is_io() {
                        sh.control.ops.fetch_add(1, Relaxed);
                        sh.control.bytes.fetch_add(rd + wr, Relaxed);
                    }
                }
                // A fileset used up ends the thread in a run-until-done workload.
                let r = match r {
                    Err(Fail::Fatal(Error::RunDry { fileset, msg }))
                        if sh.mode != QuitMode::Timeout =>
                    {
                        Err(Fail::Done(format!("fileset {fileset} used up ({msg})")))
                    }
                    r => r,
                };
                match r {
                    Ok((rd, wr)) => {
                        if counted && n > 0 {
                            let st = &mut flows[k];
                            if sample {
                                st.cpu_ns += thread_clock_ns()
                                    .saturating_sub(c0)
                                    .saturating_sub(clock_cost);
                                st.cpu_samples += 1;
                            }
                            st.ops += n;
                            st.read += rd;
                            st.written += wr;
                            if sh.record {
                                let ns = (t1.duration_since(t0).as_nanos() as u64)
                                    .saturating_sub(open_ns);
                                st.sum_ns += ns as u128;
                                st.max_ns = st.max_ns.max(ns / n);
                                if let Some(h) = &mut st.hist {
                                    for _ in 0..n {
                                        h.saturating_record((ns / n).clamp(1, HIST_MAX_NS));
                                    }
                                }
                            }
                            last_end = Some(t1);
                        }
                    }
                    Err(Fail::Enospc) => {
                        if counted {
                            flows[k].enospc += 1;
                            last_end = Some(t1);
                        }
                    }
                    Err(Fail::Stopped) => break 'run,
                    Err(Fail::Done(why)) => {
                        let finish = f.kind.is_finish();
                        let mut d = sh.done.lock().unwrap_or_else(|e| e.into_inner());
                        if d.is_none() {
                            *d = Some(why);
                        }
                        drop(d);
                        // A finish ends the run, except under alldone, where every thread
                        // must be done.
                        if (finish && sh.mode != QuitMode::AllDone)
                            || sh.mode == QuitMode::FirstDone
                        {
                            sh.stop.store(true, Relaxed);
                        }
                        if counted {
                            last_end = Some(t1);
                        }
                        break 'run;
                    }
                    Err(Fail::Fatal(e)) => {
                        sh.fail(e);
                        break 'run;
                    }
                }
                done += 1;
                sh.counters[t].0.store(done, Relaxed);
            }
        }
    }
    let cpu_ns = measuring.then(|| thread_cpu_ns().saturating_sub(cpu0));
    tio.close_all(&sh.filesets);
    sh.finished.fetch_add(1, Relaxed);
    ThreadOut {
        def,
        flows,
        last_end,
        cpu_ns,
    }
}

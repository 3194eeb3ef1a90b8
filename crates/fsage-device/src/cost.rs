//! Costing a recorded trace on a model, in simulated time: nothing sleeps, so a trace of a cold
//! `grep -r` costs on a hard disk in milliseconds what the disk would take seconds to do.
//!
//! # When each request is issued (the rule)
//!
//! A trace recorded on a fast device says when each request was issued (`r_i`) and, when the
//! recording saw completions, when each completed (`c_i`). On the model the requests take other
//! times, so the issue times must move with them. Requests keep their order, and request `i` is
//! issued at
//!
//! `s_i = max(s_(i-1) + (r_i - r_(i-1)), T_(k_i) + (r_i - c_j))`
//!
//! where `k_i` is the number of recorded completions before `r_i`, `T_k` the time of the k-th
//! completion on the model (whichever request it is), and `j` the request whose recorded
//! completion came last before `r_i`: the issuer is taken to have waited for as many
//! completions as it saw (a reader waiting for its data; fio, keeping its depth, refilling a
//! slot) and then to think for as long as it did when recorded; requests issued while others
//! were outstanding stay outstanding together, as many as when recorded, and queue at the model.
//! Counting completions rather than waiting for request `j` itself matters when the model
//! completes requests in another order than the recording (a drive's queue reordered, filled at
//! other moments): waiting for `j`, every later request waited for it and a deep queue drained
//! (fio at depth 32 on the hard disk costed 0.61 of its real-time rate). Without recorded
//! completions every request keeps its recorded gap to the one before (an open loop).
//! The first request is issued at 0. What this cannot know: a request that in truth waited for a
//! particular completion the model gives later than others (a reader's data behind its
//! read-ahead), or for an older one than the last (two independent streams), and work the host
//! did in the device's idle time that would have overlapped a longer wait; BENCHMARKS.md has its
//! error against real time on the same model.
//!
//! # The issuer's think time (`Think`)
//!
//! The recorded think time `r_i - c_j` is the host's wall-clock time between seeing a completion
//! and issuing the next request: the issuer's own work, but also whatever else the host was doing
//! (a loaded host stretches it tenfold), so a cost that keeps it measures the host as much as the
//! device. [`Think`] says what stands in for it:
//! - `recorded`: the recorded gaps, as above (what a run on that host at that moment took; the
//!   rule to predict a real-time run recorded on the same host);
//! - `none`: no think time: `s_i = max(s_(i-1), T_(k_i))`: the device alone;
//! - `fixed:DUR` (the default, [`DEFAULT_THINK_NS`]): that long before every request that
//!   waited for a completion: a host's per-request work as a constant, so that the same
//!   requests cost the same whatever the host was doing when they were recorded;
//! - `median`: the trace's own median recorded think time before every request that waited (a
//!   loaded host stretches some gaps tenfold but few of them, so the median barely moves; it
//!   does scale with the recording host's speed).
//!
//! Under any rule but `recorded`, requests issued while others were outstanding are issued
//! together (their recorded gaps are the host's too), and a trace without completions is taken as
//! a serial issuer (each request waits for the one before). How many completions each request
//! waited for stays the recording's: on a cold `grep -r` nearly every request is issued with none outstanding, on a
//! quiet host and on a loaded one alike (BENCHMARKS.md).
//!
//! # The host's request path
//!
//! A trace's times are the block layer's, so the model's times are too: a request reaches the
//! model when it is issued and its completion is seen when the model answers. A real device (or
//! fsage's real-time slow device, whose requests cross FUSE) adds a path each way, which the
//! issuer waits for before its next request. `host_path_ns` ([`cost_with`]) adds that path to
//! every completion the issuer sees: `T_(k_i)` above becomes `T_(k_i) + path`, and the total ends one
//! path after the last completion. 0 (the default) costs the device alone.
//!
//! # Pages the drive never saw written
//!
//! A model with a drive state (an SSD) is built erased unless it is given one (a state saved
//! beside an image, or made from the writes of the file system's history). A trace reads data
//! some history wrote; what the drive never saw written is costed by [`CostOptions::unwritten`]:
//! by default as data written in logical order from erased ([`UnwrittenReads::LbaOrder`]), not
//! as free, and the report counts those pages (`stats.unwritten_reads`).

use crate::{DeviceModel, Error, ModelStats, Ns, Rq, Trace, UnwrittenReads};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// What stands in for the issuer's think time when a trace is costed (see the module's doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Think {
    /// The recorded wall-clock gaps (the host's load included).
    Recorded,
    /// None: the device alone.
    None,
    /// The trace's median recorded think time before every request that waited.
    Median,
    /// A fixed time before every request that waited.
    Fixed(Ns),
}

/// The default think time per request that waited: a cold `grep -r`'s median recorded think
/// time on the 2-core development VM when quiet (zlib's traces: 41-60 µs on xfs, 45-61 µs on
/// ext4, 69-93 µs on btrfs; beside two busy loops 16-32 µs, the CPUs never idle and so never
/// slow to wake; BENCHMARKS.md, "Costing that depends on the layout alone").
pub const DEFAULT_THINK_NS: Ns = 50_000;

impl Default for Think {
    fn default() -> Think {
        Think::Fixed(DEFAULT_THINK_NS)
    }
}

impl fmt::Display for Think {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Think::Recorded => f.write_str("recorded"),
            Think::None => f.write_str("none"),
            Think::Median => f.write_str("median"),
            Think::Fixed(ns) => write!(
                f,
                "fixed:{}",
                fsage_units::format_latency(*ns).replace(' ', "")
            ),
        }
    }
}

impl FromStr for Think {
    type Err = Error;

    fn from_str(s: &str) -> crate::Result<Think> {
        match s {
            "recorded" => Ok(Think::Recorded),
            "none" => Ok(Think::None),
            "median" => Ok(Think::Median),
            _ => match s.strip_prefix("fixed:") {
                Some(d) => fsage_units::parse_latency(d)
                    .map(Think::Fixed)
                    .map_err(|e| Error::input(format!("think time {s:?}: {e}"))),
                None => Err(Error::input(format!(
                    "think time {s:?}: expected recorded, none, median or fixed:DURATION \
                     (fixed:20us)"
                ))),
            },
        }
    }
}

impl Serialize for Think {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Think {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Think, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// How a trace is costed: the think-time rule, the host's request path, and how a drive reads
/// pages it never saw written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CostOptions {
    pub think: Think,
    /// Added to every completion the issuer sees (0: the device alone).
    pub host_path_ns: Ns,
    /// Pages the drive never saw written: as data in logical order (the default) or free.
    #[serde(default)]
    pub unwritten: UnwrittenReads,
}

impl CostOptions {
    /// The rule `recorded`: what a run on the recording host took (today's traces' meaning).
    pub fn recorded() -> CostOptions {
        CostOptions {
            think: Think::Recorded,
            ..CostOptions::default()
        }
    }
}

/// Percentiles of a set of durations, in nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Dist {
    pub count: u64,
    pub mean_ns: f64,
    pub p50_ns: Ns,
    pub p90_ns: Ns,
    pub p99_ns: Ns,
    pub max_ns: Ns,
}

impl Dist {
    pub fn of(mut v: Vec<Ns>) -> Dist {
        if v.is_empty() {
            return Dist::default();
        }
        v.sort_unstable();
        let q = |p: f64| v[((v.len() as f64 * p).ceil() as usize).clamp(1, v.len()) - 1];
        Dist {
            count: v.len() as u64,
            mean_ns: v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64,
            p50_ns: q(0.5),
            p90_ns: q(0.9),
            p99_ns: q(0.99),
            max_ns: *v.last().unwrap_or(&0),
        }
    }
}

/// What a trace costs on a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostReport {
    /// The model's description.
    pub model: String,
    pub requests: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// From the first request's issue to the last completion, on the model.
    pub total_ns: Ns,
    /// The same span as recorded (the last recorded completion, or the last issue).
    pub recorded_ns: Ns,
    /// From issue to completion on the model (queueing included), per request.
    pub response: Dist,
    /// The model's counters (busy time, seeks, cache hits...).
    pub stats: ModelStats,
    /// Did the trace have completions (the closed-loop rule), or only issue times (open loop)?
    pub closed_loop: bool,
    /// The host's request path added to every completion the issuer sees (0: the device alone).
    #[serde(default)]
    pub host_path_ns: Ns,
    /// The think-time rule the cost was made with (older reports: `recorded`).
    #[serde(default = "recorded_think")]
    pub think: Think,
    /// The think time the rule gave, over all requests (included in `total_ns`).
    #[serde(default)]
    pub think_ns: Ns,
    /// Requests that waited for a completion before they were issued.
    #[serde(default)]
    pub waited: u64,
    /// The trace's median recorded think time over the requests that waited (what `median`
    /// uses, and how to calibrate `fixed:` for another host), when it has completions.
    #[serde(default)]
    pub median_think_ns: Option<Ns>,
    /// How pages the drive never saw written were read (older reports: `free`).
    #[serde(default = "free_unwritten")]
    pub unwritten: UnwrittenReads,
    /// The drive state the model started from (how much of it was written, and where it was
    /// loaded from), for a model that keeps one; None for a model without.
    #[serde(default)]
    pub drive: Option<String>,
}

fn recorded_think() -> Think {
    Think::Recorded
}

fn free_unwritten() -> UnwrittenReads {
    UnwrittenReads::Free
}

/// What `fsage dev cost` does: reads the trace file, resolves the model (a latency, a built-in
/// name or a model file), builds it for the trace's device size (or, when the trace does not
/// say, the end of its furthest request), loads the drive state in `drive_state` when given (a
/// state saved beside an image, `IMAGE.ftl`, or by `git-age`), and costs the trace on it.
pub fn cost_trace_file(
    trace: &std::path::Path,
    model: &str,
    opts: CostOptions,
    drive_state: Option<&std::path::Path>,
) -> crate::Result<CostReport> {
    let t = Trace::read(trace)?;
    let spec = crate::resolve(model)?;
    let size = match t.device_size {
        Some(s) => s,
        None => {
            // (Trace::read checked that no request ends beyond u64.)
            let end = t
                .requests
                .iter()
                .map(|r| r.offset + r.len)
                .max()
                .unwrap_or(0);
            end.checked_next_multiple_of(1 << 20)
                .unwrap_or(end)
                .max(1 << 20)
        }
    };
    let mut m = spec.build(size).map_err(|e| {
        // The trace's size is what does not fit the model: name the trace.
        Error::input(match t.device_size {
            Some(_) => format!("{}: its device_size: {}", trace.display(), e.message),
            None => format!(
                "{}: the trace gives no device_size, so the device is taken as large as its \
                 furthest request ({}): {}",
                trace.display(),
                fsage_units::format_size(size),
                e.message
            ),
        })
    })?;
    let mut drive = None;
    if let Some(p) = drive_state {
        let bytes = std::fs::read(p).map_err(|e| Error::io(p, "cannot read the drive state", e))?;
        m.load_state(&bytes)
            .map_err(|e| Error::input(format!("{}: {}", p.display(), e.message)))?;
        drive = Some(p.display().to_string());
    }
    let mut r = cost_with(&t, m.as_mut(), opts);
    r.model = format!("{}: {}", spec.name, r.model);
    if let (Some(from), Some(d)) = (drive, &mut r.drive) {
        *d = format!("{d}, loaded from {from}");
    }
    Ok(r)
}

/// Costs `trace` on `model` with the recorded think times (the rule of the module's doc, as
/// traces were costed before think rules). The model should be fresh (its clock at 0).
pub fn cost(trace: &Trace, model: &mut dyn DeviceModel) -> CostReport {
    cost_with(trace, model, CostOptions::recorded())
}

/// For each request that waited, the one it waited for (the last whose recorded completion came
/// before its issue) and how many recorded completions came before its issue. Without recorded
/// completions: `None` everywhere.
fn waited_for(trace: &Trace) -> Vec<Option<Wait>> {
    let rqs = &trace.requests;
    let n = rqs.len();
    if rqs.is_empty() || !rqs.iter().all(|r| r.complete_ns.is_some()) {
        return vec![None; n];
    }
    let mut by_completion: Vec<usize> = (0..n).collect();
    by_completion.sort_by_key(|&i| (rqs[i].complete_ns, i));
    let mut next_done = 0;
    rqs.iter()
        .map(|r| {
            while next_done < n && rqs[by_completion[next_done]].complete_ns <= Some(r.issue_ns) {
                next_done += 1;
            }
            next_done.checked_sub(1).map(|k| Wait {
                last: by_completion[k],
                completions: next_done,
            })
        })
        .collect()
}

/// What a request waited for before it was issued: `completions` completions, the `last` of
/// them (as recorded) the one whose completion its think time is counted from.
#[derive(Debug, Clone, Copy)]
struct Wait {
    last: usize,
    completions: usize,
}

/// The model's completions in the order they happen, reached one by one: the time of the k-th
/// completion is known once no event the model still has to run could come before it.
struct Completions {
    /// Completion times known (from submit or advance), not yet reached.
    known: std::collections::BinaryHeap<std::cmp::Reverse<Ns>>,
    /// The times of the completions reached, in order.
    reached: Vec<Ns>,
}

impl Completions {
    /// The time of the `k`-th completion (1-based), running the model's events up to it; None
    /// if the model never completes that many.
    fn nth(
        &mut self,
        k: usize,
        model: &mut dyn DeviceModel,
        clock: &mut Ns,
        done: &mut Vec<(u64, Ns)>,
        completed: &mut [Option<Ns>],
    ) -> Option<Ns> {
        while self.reached.len() < k {
            let first = self.known.peek().map(|r| r.0);
            match (first, model.next_event()) {
                (Some(c), None) => {
                    self.known.pop();
                    self.reached.push(c);
                }
                (Some(c), Some(e)) if c <= e => {
                    self.known.pop();
                    self.reached.push(c);
                }
                (_, Some(e)) => {
                    *clock = (*clock).max(e);
                    model.advance(*clock, done);
                    self.record(done, completed);
                }
                (None, None) => return None,
            }
        }
        Some(self.reached[k - 1])
    }

    fn record(&mut self, done: &mut Vec<(u64, Ns)>, completed: &mut [Option<Ns>]) {
        for (id, t) in done.drain(..) {
            completed[id as usize] = Some(t);
            self.known.push(std::cmp::Reverse(t));
        }
    }
}

/// Costs `trace` on `model` by the rule above, with `opts`' think rule and host path.
pub fn cost_with(trace: &Trace, model: &mut dyn DeviceModel, opts: CostOptions) -> CostReport {
    model.set_unwritten_reads(opts.unwritten);
    let drive = model.describe_state();
    let rqs = &trace.requests;
    let n = rqs.len();
    let host_path_ns = opts.host_path_ns;
    let closed_loop = !rqs.is_empty() && rqs.iter().all(|r| r.complete_ns.is_some());
    let recorded = opts.think == Think::Recorded;
    // What each waited for: the recording's; without completions, under any rule but
    // `recorded`, a serial issuer.
    let mut waits = waited_for(trace);
    if !closed_loop && !recorded {
        waits = (0..n)
            .map(|i| {
                i.checked_sub(1).map(|last| Wait {
                    last,
                    completions: i,
                })
            })
            .collect();
    }
    let waited = waits.iter().filter(|w| w.is_some()).count() as u64;
    let median_think_ns = median_think(trace, &waits);
    let think_of = |i: usize, j: usize| -> Ns {
        match opts.think {
            Think::Recorded => rqs[i]
                .issue_ns
                .saturating_sub(rqs[j].complete_ns.unwrap_or(rqs[i].issue_ns)),
            Think::None => 0,
            Think::Fixed(d) => d,
            Think::Median => median_think_ns.unwrap_or(0),
        }
    };
    let mut issued: Vec<Ns> = vec![0; n];
    let mut completed: Vec<Option<Ns>> = vec![None; n];
    let mut order = Completions {
        known: Default::default(),
        reached: Vec::new(),
    };
    let mut done = Vec::new();
    let mut clock: Ns = 0;
    let mut think_ns: Ns = 0;

    for i in 0..n {
        let r = &rqs[i];
        let mut s = if i == 0 {
            0
        } else if recorded {
            issued[i - 1] + r.issue_ns.saturating_sub(rqs[i - 1].issue_ns)
        } else {
            issued[i - 1]
        };
        if let Some(w) = waits[i] {
            // Run the model until as many requests have completed on it as had when recorded.
            if let Some(c) = order.nth(w.completions, model, &mut clock, &mut done, &mut completed)
            {
                let think = think_of(i, w.last);
                think_ns += think;
                s = s.max(c + host_path_ns + think);
            }
        }
        let s = s.max(clock);
        model.advance(s, &mut done);
        order.record(&mut done, &mut completed);
        clock = s;
        issued[i] = s;
        let rq = Rq {
            id: i as u64,
            kind: r.kind,
            offset: r.offset,
            len: r.len,
        };
        if let Some(t) = model.submit(s, rq) {
            completed[i] = Some(t);
            order.known.push(std::cmp::Reverse(t));
        }
    }
    // Drain.
    while completed.iter().any(Option::is_none) {
        let Some(t) = model.next_event() else { break };
        clock = clock.max(t);
        model.advance(clock, &mut done);
        order.record(&mut done, &mut completed);
    }
    let last = completed
        .iter()
        .flatten()
        .copied()
        .max()
        .map_or(0, |c| c + host_path_ns);
    let first_recorded = rqs.first().map(|r| r.issue_ns).unwrap_or(0);
    let last_recorded = rqs
        .iter()
        .map(|r| r.complete_ns.unwrap_or(r.issue_ns))
        .max()
        .unwrap_or(0);
    let response = Dist::of(
        (0..n)
            .filter_map(|i| completed[i].map(|c| c.saturating_sub(issued[i]) + host_path_ns))
            .collect(),
    );
    CostReport {
        model: model.describe(),
        requests: n as u64,
        bytes_read: rqs
            .iter()
            .filter(|r| r.kind == crate::RqKind::Read)
            .map(|r| r.len)
            .sum(),
        bytes_written: rqs
            .iter()
            .filter(|r| r.kind == crate::RqKind::Write)
            .map(|r| r.len)
            .sum(),
        total_ns: last,
        recorded_ns: last_recorded - first_recorded,
        response,
        stats: model.stats(),
        closed_loop,
        host_path_ns,
        think: opts.think,
        think_ns,
        waited,
        median_think_ns,
        unwritten: opts.unwritten,
        drive,
    }
}

/// The median recorded think time (issue after the completion waited for) over the requests
/// that waited, when the trace has completions.
fn median_think(trace: &Trace, waits: &[Option<Wait>]) -> Option<Ns> {
    let rqs = &trace.requests;
    let mut v: Vec<Ns> = waits
        .iter()
        .enumerate()
        .filter_map(|(i, w)| {
            let c = rqs[(*w)?.last].complete_ns?;
            Some(rqs[i].issue_ns.saturating_sub(c))
        })
        .collect();
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    Some(v[(v.len() - 1) / 2])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FixedLatency, RqKind, TraceRq};

    fn read(issue: Ns, complete: Option<Ns>) -> TraceRq {
        TraceRq {
            kind: RqKind::Read,
            offset: 0,
            len: 4096,
            issue_ns: issue,
            complete_ns: complete,
        }
    }

    /// Recorded on a 10 us device: four reads, each issued 5 us after the one before completed.
    fn chain() -> Trace {
        Trace::new(
            "chain",
            None,
            (0..4)
                .map(|k| read(k * 15_000, Some(k * 15_000 + 10_000)))
                .collect(),
        )
    }

    /// Four reads issued 1 us apart while none had completed.
    fn burst() -> Trace {
        Trace::new(
            "burst",
            None,
            (0..4).map(|k| read(k * 1_000, Some(50_000 + k))).collect(),
        )
    }

    #[test]
    fn a_dependent_chain_moves_with_the_device() {
        let t = chain();
        // On 1 ms: each costs 1 ms and the 5 us think time stays.
        let r = cost(&t, &mut FixedLatency::uniform(1_000_000));
        assert!(r.closed_loop);
        assert_eq!(r.total_ns, 4 * 1_000_000 + 3 * 5_000);
        assert_eq!(r.recorded_ns, 3 * 15_000 + 10_000);
        assert_eq!(r.response.p50_ns, 1_000_000);
    }

    #[test]
    fn outstanding_requests_stay_together() {
        // Issued while none had completed: they overlap on the model.
        let t = burst();
        let r = cost(&t, &mut FixedLatency::uniform(1_000_000));
        assert_eq!(r.total_ns, 3_000 + 1_000_000);
        // With a queue depth of 1 they serialise.
        let r = cost(
            &t,
            &mut FixedLatency::new(1_000_000, 1_000_000, 1_000_000, None, Some(1)),
        );
        assert_eq!(r.total_ns, 4_000_000);
        assert_eq!(r.response.max_ns, 4_000_000 - 3_000);
    }

    #[test]
    fn the_host_path_delays_every_dependent_request() {
        // The chain above, with a 40 us path: each of the 4 reads is seen 40 us after the model
        // answers it, and the next is issued 5 us after that.
        let t = chain();
        let r = cost_with(&t, &mut FixedLatency::uniform(1_000_000), path(40_000));
        assert_eq!(r.total_ns, 4 * (1_000_000 + 40_000) + 3 * 5_000);
        assert_eq!(r.response.p50_ns, 1_040_000);
        assert_eq!(r.host_path_ns, 40_000);
        // Requests outstanding together share one path, not one each.
        let t = burst();
        let r = cost_with(&t, &mut FixedLatency::uniform(1_000_000), path(40_000));
        assert_eq!(r.total_ns, 3_000 + 1_000_000 + 40_000);
    }

    fn path(ns: Ns) -> CostOptions {
        CostOptions {
            think: Think::Recorded,
            host_path_ns: ns,
            ..CostOptions::default()
        }
    }

    fn think(think: Think) -> CostOptions {
        CostOptions {
            think,
            ..CostOptions::default()
        }
    }

    /// A serial reader recorded on a device of `service` ns per read: read k at `offsets[k]`,
    /// issued `think` ns after read k-1 completed.
    fn serial(offsets: &[u64], service: Ns, think: Ns) -> Trace {
        let mut t = 0;
        let rqs = offsets
            .iter()
            .map(|&o| {
                let r = TraceRq {
                    offset: o,
                    ..read(t, Some(t + service))
                };
                t += service + think;
                r
            })
            .collect();
        Trace::new("serial", Some(1 << 30), rqs)
    }

    #[test]
    fn a_cost_made_without_recorded_gaps_does_not_move_with_the_host() {
        // The same reads recorded twice, the second time on a host three times as busy (every
        // think gap three times as long). On a hard disk, a scattered layout against a
        // contiguous one.
        let scattered: Vec<u64> = (0..200u64).map(|k| (k * 7919 % 1000) << 20).collect();
        let contiguous: Vec<u64> = (0..200u64).map(|k| k * 4096).collect();
        let ratio = |think_gap: Ns, opts: CostOptions| {
            let hdd = crate::resolve("hdd-7200").unwrap();
            let a = serial(&scattered, 20_000, think_gap);
            let c = serial(&contiguous, 20_000, think_gap);
            let ca = cost_with(&a, hdd.build(1 << 30).unwrap().as_mut(), opts);
            let cc = cost_with(&c, hdd.build(1 << 30).unwrap().as_mut(), opts);
            ca.total_ns as f64 / cc.total_ns as f64
        };
        for rule in [Think::default(), Think::None, Think::Fixed(30_000)] {
            let quiet = ratio(30_000, think(rule));
            let loaded = ratio(90_000, think(rule));
            assert_eq!(quiet, loaded, "{rule}: {quiet} against {loaded}");
        }
        // The recorded gaps carry the host's load into the cost: the ratio moves.
        let quiet = ratio(30_000, think(Think::Recorded));
        let loaded = ratio(90_000, think(Think::Recorded));
        assert!(
            (quiet / loaded - 1.0).abs() > 0.05,
            "recorded: {quiet} against {loaded}"
        );
    }

    #[test]
    fn the_median_rule_takes_the_trace_s_typical_gap() {
        // Five reads, each waiting for the one before; gaps 10, 10, 10 and 900 us (one long
        // preemption): the median is 10 us, whatever the tail.
        let mut t = serial(&[0, 4096, 8192, 12288, 16384], 10_000, 10_000);
        let last = t.requests.len() - 1;
        t.requests[last].issue_ns += 890_000;
        t.requests[last].complete_ns = t.requests[last].complete_ns.map(|c| c + 890_000);
        let r = cost_with(
            &t,
            &mut FixedLatency::uniform(1_000_000),
            think(Think::Median),
        );
        assert_eq!(r.waited, 4);
        assert_eq!(r.median_think_ns, Some(10_000));
        assert_eq!(r.think_ns, 40_000);
        assert_eq!(r.total_ns, 5 * 1_000_000 + 40_000);
        // Outstanding together, they stay together and nothing waited.
        let r = cost_with(
            &burst(),
            &mut FixedLatency::uniform(1_000_000),
            think(Think::Median),
        );
        assert_eq!((r.waited, r.think_ns), (0, 0));
        assert_eq!(r.total_ns, 1_000_000);
    }

    #[test]
    fn think_rules_read_and_print() {
        for (text, rule) in [
            ("recorded", Think::Recorded),
            ("none", Think::None),
            ("median", Think::Median),
            ("fixed:20us", Think::Fixed(20_000)),
            ("fixed:1.5ms", Think::Fixed(1_500_000)),
        ] {
            let r: Think = text.parse().unwrap();
            assert_eq!(r, rule);
            assert_eq!(r.to_string().parse::<Think>().unwrap(), rule);
        }
        let e = "fast".parse::<Think>().unwrap_err().to_string();
        assert!(
            e.contains("recorded, none, median or fixed:DURATION"),
            "{e}"
        );
        assert!("fixed:-5us".parse::<Think>().is_err());
    }

    #[test]
    fn without_completions_a_rule_other_than_recorded_takes_a_serial_issuer() {
        let t = Trace::new("open", None, (0..3).map(|k| read(k * 100, None)).collect());
        let r = cost_with(&t, &mut FixedLatency::uniform(10_000), think(Think::None));
        assert_eq!(r.total_ns, 3 * 10_000);
        assert_eq!(r.waited, 2);
    }

    #[test]
    fn without_completions_the_gaps_are_kept() {
        let t = Trace::new("open", None, (0..3).map(|k| read(k * 100, None)).collect());
        let r = cost(&t, &mut FixedLatency::uniform(10_000));
        assert!(!r.closed_loop);
        assert_eq!(r.total_ns, 200 + 10_000);
    }
}

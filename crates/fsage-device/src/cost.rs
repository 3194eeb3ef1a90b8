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
//! `s_i = max(s_(i-1) + (r_i - r_(i-1)), C_j + (r_i - c_j))`
//!
//! where `j` is the request whose recorded completion came last before `r_i`, and `C_j` its
//! completion on the model: the issuer is taken to have waited for the last completion it saw
//! (a reader waiting for its data) and then to think for as long as it did when recorded; requests
//! issued while others were outstanding stay outstanding together and queue at the model. Without
//! recorded completions every request keeps its recorded gap to the one before (an open loop).
//! The first request is issued at 0. What this cannot know: a request that in truth waited for an
//! older completion than the last one (two independent streams), and work the host did in the
//! device's idle time that would have overlapped a longer wait; BENCHMARKS.md has its error
//! against real time on the same model.
//!
//! # The host's request path
//!
//! A trace's times are the block layer's, so the model's times are too: a request reaches the
//! model when it is issued and its completion is seen when the model answers. A real device (or
//! fsage's real-time slow device, whose requests cross FUSE) adds a path each way, which the
//! issuer waits for before its next request. `host_path_ns` ([`cost_with`]) adds that path to
//! every completion the issuer sees: `C_j` above becomes `C_j + path`, and the total ends one
//! path after the last completion. 0 (the default) costs the device alone.

use crate::{DeviceModel, Error, ModelStats, Ns, Rq, Trace};
use serde::{Deserialize, Serialize};

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
}

/// What `fsage dev cost` does: reads the trace file, resolves the model (a latency, a built-in
/// name or a model file), builds it for the trace's device size (or, when the trace does not
/// say, the end of its furthest request) and costs the trace on it.
pub fn cost_trace_file(
    trace: &std::path::Path,
    model: &str,
    host_path_ns: Ns,
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
    let mut r = cost_with(&t, m.as_mut(), host_path_ns);
    r.model = format!("{}: {}", spec.name, r.model);
    Ok(r)
}

/// Costs `trace` on `model` by the rule above. The model should be fresh (its clock at 0).
pub fn cost(trace: &Trace, model: &mut dyn DeviceModel) -> CostReport {
    cost_with(trace, model, 0)
}

/// [`cost`] with the host's request path (see the module's doc) added to every completion.
pub fn cost_with(trace: &Trace, model: &mut dyn DeviceModel, host_path_ns: Ns) -> CostReport {
    let rqs = &trace.requests;
    let n = rqs.len();
    let closed_loop = !rqs.is_empty() && rqs.iter().all(|r| r.complete_ns.is_some());
    // Requests by recorded completion time, to find the last one completed before each issue.
    let mut by_completion: Vec<usize> = if closed_loop {
        (0..n).collect()
    } else {
        Vec::new()
    };
    by_completion.sort_by_key(|&i| (rqs[i].complete_ns, i));
    let mut next_done = 0; // first index in by_completion not yet completed by the current issue
    let mut issued: Vec<Ns> = vec![0; n];
    let mut completed: Vec<Option<Ns>> = vec![None; n];
    let mut done = Vec::new();
    let mut clock: Ns = 0;

    let record = |done: &mut Vec<(u64, Ns)>, completed: &mut Vec<Option<Ns>>| {
        for (id, t) in done.drain(..) {
            completed[id as usize] = Some(t);
        }
    };

    for i in 0..n {
        let r = &rqs[i];
        let mut s = if i == 0 {
            0
        } else {
            issued[i - 1] + r.issue_ns.saturating_sub(rqs[i - 1].issue_ns)
        };
        if closed_loop {
            while next_done < n && rqs[by_completion[next_done]].complete_ns <= Some(r.issue_ns) {
                next_done += 1;
            }
            if let Some(&j) = next_done.checked_sub(1).map(|k| &by_completion[k]) {
                // Run the model until j has completed on it.
                while completed[j].is_none() {
                    let Some(t) = model.next_event() else { break };
                    clock = clock.max(t);
                    model.advance(clock, &mut done);
                    record(&mut done, &mut completed);
                }
                if let Some(cj) = completed[j] {
                    // The think time after the completion it waited for.
                    let think = r.issue_ns - rqs[j].complete_ns.unwrap_or(r.issue_ns);
                    s = s.max(cj + host_path_ns + think);
                }
            }
        }
        let s = s.max(clock);
        model.advance(s, &mut done);
        record(&mut done, &mut completed);
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
        }
    }
    // Drain.
    while completed.iter().any(Option::is_none) {
        let Some(t) = model.next_event() else { break };
        clock = clock.max(t);
        model.advance(clock, &mut done);
        record(&mut done, &mut completed);
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
    }
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
        let r = cost_with(&t, &mut FixedLatency::uniform(1_000_000), 40_000);
        assert_eq!(r.total_ns, 4 * (1_000_000 + 40_000) + 3 * 5_000);
        assert_eq!(r.response.p50_ns, 1_040_000);
        assert_eq!(r.host_path_ns, 40_000);
        // Requests outstanding together share one path, not one each.
        let t = burst();
        let r = cost_with(&t, &mut FixedLatency::uniform(1_000_000), 40_000);
        assert_eq!(r.total_ns, 3_000 + 1_000_000 + 40_000);
    }

    #[test]
    fn without_completions_the_gaps_are_kept() {
        let t = Trace::new("open", None, (0..3).map(|k| read(k * 100, None)).collect());
        let r = cost(&t, &mut FixedLatency::uniform(10_000));
        assert!(!r.closed_loop);
        assert_eq!(r.total_ns, 200 + 10_000);
    }
}

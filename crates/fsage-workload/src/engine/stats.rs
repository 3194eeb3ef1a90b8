//! A thread's counters and histograms per flowop, and their merge into a repetition's result
//! (a composite flowop expanded several times gives one row per name).

use super::RunConfig;
use crate::result::{FlowopResult, OpStats, RepResult};
use crate::workload::Workload;
use hdrhistogram::Histogram;
use std::time::Instant;

#[derive(Default)]
pub(super) struct FlowStats {
    pub(super) ops: u64,
    pub(super) read: u64,
    pub(super) written: u64,
    pub(super) enospc: u64,
    pub(super) sum_ns: u128,
    pub(super) max_ns: u64,
    pub(super) hist: Option<Histogram<u64>>,
    /// CPU time of the sampled operations (one in [`CPU_SAMPLE_EVERY`]), and how many.
    pub(super) cpu_ns: u64,
    pub(super) cpu_samples: u64,
}

pub(super) struct ThreadOut {
    pub(super) def: usize,
    pub(super) flows: Vec<FlowStats>,
    pub(super) last_end: Option<Instant>,
    pub(super) cpu_ns: Option<u64>,
}

pub(super) fn merge(
    w: &Workload,
    cfg: &RunConfig,
    rep: u32,
    threads: u64,
    start: Instant,
    outs: Vec<ThreadOut>,
    interrupted: bool,
) -> RepResult {
    let model = w.model();
    let w_end = start + cfg.warmup;
    let end = outs.iter().filter_map(|o| o.last_end).max();
    let secs = end.map_or(0.0, |e| e.saturating_duration_since(w_end).as_secs_f64());
    let mut merged: Vec<Vec<FlowStats>> = model
        .threads
        .iter()
        .map(|t| t.flowops.iter().map(|_| FlowStats::default()).collect())
        .collect();
    let mut cpu = 0u64;
    let mut cpu_known = false;
    let mut total = FlowStats::default();
    for o in outs {
        if let Some(c) = o.cpu_ns {
            cpu += c;
            cpu_known = true;
        }
        for (k, f) in o.flows.into_iter().enumerate() {
            let m = &mut merged[o.def][k];
            add(m, &f);
            if model.threads[o.def].flowops[k].kind.is_io() {
                add(&mut total, &f);
            }
        }
    }
    let stats = |f: &FlowStats| -> OpStats {
        let rate = |x: f64| if secs > 0.0 { x / secs } else { 0.0 };
        let lat = |q: f64| {
            f.hist
                .as_ref()
                .filter(|h| !h.is_empty())
                .map(|h| h.value_at_quantile(q) as f64 / 1e3)
        };
        OpStats {
            ops: f.ops,
            ops_per_sec: rate(f.ops as f64),
            mb_per_sec: rate((f.read + f.written) as f64 / 1e6),
            bytes_read: f.read,
            bytes_written: f.written,
            mean_us: (cfg.record_latency && f.ops > 0)
                .then(|| f.sum_ns as f64 / f.ops as f64 / 1e3),
            p50_us: lat(0.5),
            p90_us: lat(0.9),
            p99_us: lat(0.99),
            p999_us: lat(0.999),
            max_us: (cfg.record_latency && f.ops > 0).then(|| f.max_ns as f64 / 1e3),
            enospc: f.enospc,
        }
    };
    let mut flowops: Vec<FlowopResult> = Vec::new();
    for (d, t) in model.threads.iter().enumerate() {
        // A composite flowop expanded several times repeats its flowops' names: one row each.
        for (k, f) in t.flowops.iter().enumerate() {
            if let Some(first) = t.flowops[..k]
                .iter()
                .position(|x| x.name == f.name && x.kind == f.kind)
            {
                let (a, b) = merged[d].split_at_mut(k);
                add(&mut a[first], &b[0]);
                b[0] = FlowStats::default();
            }
        }
        for (k, f) in t.flowops.iter().enumerate() {
            if t.flowops[..k]
                .iter()
                .any(|x| x.name == f.name && x.kind == f.kind)
            {
                continue;
            }
            flowops.push(FlowopResult {
                name: f.name.clone(),
                kind: f.kind.name().into(),
                thread: t.name.clone(),
                stats: stats(&merged[d][k]),
                cpu_us_per_op: (merged[d][k].cpu_samples > 0)
                    .then(|| merged[d][k].cpu_ns as f64 / merged[d][k].cpu_samples as f64 / 1e3),
                cpu_samples: merged[d][k].cpu_samples,
            });
        }
    }
    let overall = stats(&total);
    RepResult {
        rep,
        seed: cfg.seed,
        threads,
        warmup_secs: cfg.warmup.as_secs_f64(),
        measured_secs: secs,
        cpu_us_per_op: (cpu_known && overall.ops > 0)
            .then(|| cpu as f64 / overall.ops as f64 / 1e3),
        flowops,
        overall,
        interrupted,
        done: None,
        timeline: None,
    }
}

pub(super) fn add(m: &mut FlowStats, f: &FlowStats) {
    m.ops += f.ops;
    m.read += f.read;
    m.written += f.written;
    m.enospc += f.enospc;
    m.sum_ns += f.sum_ns;
    m.max_ns = m.max_ns.max(f.max_ns);
    m.cpu_ns += f.cpu_ns;
    m.cpu_samples += f.cpu_samples;
    if let Some(h) = &f.hist {
        match &mut m.hist {
            Some(mh) => {
                let _ = mh.add(h);
            }
            None => m.hist = Some(h.clone()),
        }
    }
}

//! The human form of `fsage experiment plan`.

use crate::human_bytes;
use fsage_experiment::analysis::sweep::fmt_latency;
use fsage_experiment::spec::{Plan, StateSpec, WorkloadSource};
use std::fmt::Write as _;

pub use fsage_profile::human_duration;

pub fn render(p: &Plan) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "experiment {} ({}): {} cells",
        p.experiment,
        p.origin,
        p.cells.len()
    );
    let _ = writeln!(
        o,
        "{:<48} {:<8} {:<16} {:<12} {:>9} {:>4}  run",
        "cell", "fs", "state", "workload", "latency", "rep"
    );
    for c in &p.cells {
        let state = match &c.state {
            StateSpec::Fresh => "fresh".to_string(),
            StateSpec::Aged { label, .. } => format!("aged:{label}"),
            StateSpec::Image { name, .. } => format!("image:{name}"),
        };
        let wl = match &c.workload.source {
            WorkloadSource::Builtin { .. } => c.workload.label.clone(),
            WorkloadSource::File { .. } => format!("{} (.f)", c.workload.label),
        };
        let lat = c.latency_us.map_or("plain".into(), fmt_latency);
        let _ = writeln!(
            o,
            "{:<48} {:<8} {:<16} {:<12} {:>9} {:>4}  {}+{}",
            c.id,
            c.fs.label,
            state,
            wl,
            lat,
            c.rep,
            human_duration(c.warmup_s),
            human_duration(c.duration_s)
        );
    }
    if let Some(c) = p.cells.first() {
        let _ = writeln!(
            o,
            "image size {}, cache ratio {}, seed {} (+ repetition)",
            human_bytes(c.image_size),
            c.cache_ratio
                .map_or("none (no page-cache limit)".into(), |r| r.to_string()),
            c.seed
        );
    }
    let _ = writeln!(
        o,
        "estimate: {} ({} of workload, warm-up included, + {} setup allowance: 5 s per cell plus \
         the image restored at 1 GiB/s)",
        human_duration(p.estimate_s),
        human_duration(p.run_s),
        human_duration(p.setup_s)
    );
    if !p.aging_runs.is_empty() {
        let _ = writeln!(
            o,
            "not in the estimate: {} aging run(s), once each ({}); `fsage age --dry-run` \
             predicts their operations",
            p.aging_runs.len(),
            p.aging_runs.join(", ")
        );
    }
    o
}

/// The human form of `fsage experiment status`.
pub fn status(s: &fsage_experiment::runner::Status) -> String {
    use fsage_experiment::runner::CellState;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "experiment {} in {}: {} cells, {} done, {} failed, {} left",
        s.experiment,
        s.out.display(),
        s.total,
        s.done,
        s.failed,
        s.left
    );
    for c in &s.cells {
        let what = match &c.state {
            CellState::Done { seconds, ops_per_s } => format!(
                "done    {:>8}  {}",
                human_duration(*seconds),
                ops_per_s.map_or("-".into(), |x| format!("{x:.0} ops/s"))
            ),
            CellState::Failed { error } => format!("FAILED  {error}"),
            CellState::Left => "left".to_string(),
        };
        let _ = writeln!(o, "  {:<56} {what}", c.id);
    }
    if !s.not_in_plan.is_empty() {
        let _ = writeln!(
            o,
            "{} results are of cells the experiment file no longer has (kept, not reported \
             as part of this plan)",
            s.not_in_plan.len()
        );
    }
    if s.left > 0 {
        let _ = writeln!(
            o,
            "time left: about {} (from {})",
            human_duration(s.estimate_left_s),
            s.estimate_from
        );
    }
    if s.failed > 0 {
        let _ = writeln!(
            o,
            "failed cells are kept; `fsage experiment run FILE --out DIR --retry-failed` runs them again"
        );
    }
    o
}

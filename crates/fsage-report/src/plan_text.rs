//! The human form of `fsage experiment plan`.

use crate::human_bytes;
use fsage_results::experiment::spec::{Plan, StateSpec, WorkloadSource};
use fsage_units::format_latency_us;
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
    // Columns as wide as their longest entry, so that long ids and labels keep them in line.
    let head = ["cell", "fs", "state", "workload", "latency", "rep", "run"];
    let mut rows: Vec<[String; 7]> = Vec::new();
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
        // A cell in a VM says so, and under which kernel (as the plan decided it: a plan
        // records where each cell runs, so formatting reads no system state).
        let fs = match c.runs.as_ref().and_then(|r| r.label()) {
            Some(l) => format!("{} ({l})", c.fs.label),
            None => c.fs.label.clone(),
        };
        rows.push([
            c.id.clone(),
            fs,
            state,
            wl,
            match c.device_model() {
                // On a drive that keeps state: which drive, how the image reached it.
                Some(m) => {
                    let mut s = format!("model {}", m.name);
                    if let Some(d) = &c.drive {
                        let _ = write!(s, ", drive {}", d.label());
                    }
                    if c.aged_in_memory {
                        s.push_str(", aged in memory");
                    }
                    if let Some(p) = &c.placement {
                        let _ = write!(s, ", {}", p.label());
                    }
                    s
                }
                None => c.latency_us().map_or("plain".into(), format_latency_us),
            },
            c.rep.to_string(),
            format!(
                "{}+{}",
                human_duration(c.warmup_s),
                human_duration(c.duration_s)
            ),
        ]);
    }
    let mut w = head.map(|h| h.chars().count());
    for r in &rows {
        for (k, cell) in r.iter().enumerate() {
            w[k] = w[k].max(cell.chars().count());
        }
    }
    let line = |o: &mut String, r: [&str; 7]| {
        let _ = writeln!(
            o,
            "{:<w0$} {:<w1$} {:<w2$} {:<w3$} {:>w4$} {:>w5$}  {}",
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            r[5],
            r[6],
            w0 = w[0],
            w1 = w[1],
            w2 = w[2],
            w3 = w[3],
            w4 = w[4],
            w5 = w[5],
        );
    };
    line(&mut o, head);
    for r in &rows {
        line(&mut o, r.each_ref().map(String::as_str));
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
    if p.cells.iter().any(|c| c.placement.is_some()) {
        let _ = writeln!(
            o,
            "copies: each such cell's image is copied through a device onto its drive (sparse: \
             data written, holes zeroed, which the SSD model unmaps; data: holes left as the \
             drive had them; whole: every block written, as dd), the drive before it erased, \
             preconditioned, or as the previous cell on the same model left it (the run order \
             matters); the copy is not in the estimate"
        );
    }
    let _ = writeln!(
        o,
        "estimate: {} ({} of workload, warm-up included, + {} setup allowance: 5 s per cell plus \
         the image restored at 1 GiB/s{})",
        human_duration(p.estimate_s),
        human_duration(p.run_s),
        human_duration(p.setup_s),
        if p.vm_cells > 0 {
            format!(
                ", plus {} s per cell in a VM for its boot",
                fsage_results::experiment::BOOT_ALLOWANCE_S
            )
        } else {
            String::new()
        }
    );
    if p.vm_cells > 0 {
        let _ = writeln!(
            o,
            "{} cell(s) run in a VM, {}; emulated timings compare only with each other",
            p.vm_cells,
            p.vm_accel.as_deref().unwrap_or("accelerator not checked"),
        );
    }
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
pub fn status(s: &fsage_results::experiment::status::Status) -> String {
    use fsage_results::experiment::status::CellState;
    let mut o = String::new();
    let slurm = if s.jobs.is_empty() {
        String::new()
    } else {
        format!(", {} queued, {} running", s.queued, s.running)
    };
    let _ = writeln!(
        o,
        "experiment {} in {}: {} cells, {} done, {} failed{slurm}, {} left",
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
            CellState::Queued { reason, .. } => format!("queued  ({reason})"),
            CellState::Running { node, .. } => format!("running on {node}"),
            CellState::Left => match (&c.base_job_ended, &c.slurm_state) {
                (Some(b), _) => format!("left    ({b})"),
                (None, Some(st)) => format!("left    (its job ended {st})"),
                (None, None) => "left".to_string(),
            },
        };
        let job = c
            .job
            .as_ref()
            .map_or(String::new(), |j| format!("  [job {j}]"));
        let _ = writeln!(o, "  {:<56} {what}{job}", c.id);
    }
    if let Some(n) = &s.slurm_note {
        let _ = writeln!(o, "note: {n}");
    }
    if !s.jobs.is_empty() {
        let _ = writeln!(o, "Slurm jobs of the last submission:");
        for j in &s.jobs {
            let _ = writeln!(o, "  {:<12} {:<12} {}", j.job_id, j.state, j.what);
        }
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
            "{}",
            if s.jobs.is_empty() {
                "failed cells are kept; `fsage experiment run FILE --out DIR --retry-failed` runs them again"
            } else {
                "failed cells are kept; `fsage experiment submit FILE --out DIR` submits them again, with every cell not done"
            }
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Long cell ids, state and workload labels widen their columns instead of pushing the
    /// others out of line.
    #[test]
    fn plan_columns_stay_in_line() {
        let spec = fsage_experiment::spec::parse(
            "name = \"t\"\nduration = \"1s\"\nimage_size = \"1GiB\"\n[[fs]]\nkind = \"ext4\"\n\
             [[fs]]\nkind = \"xfs\"\nlabel = \"xfs-with-a-long-label\"\n\
             [[state]]\nkind = \"fresh\"\n[[state]]\nkind = \"aged\"\nprofile = \"meyer\"\n\
             label = \"meyer-with-a-long-label\"\n\
             [[workload]]\nname = \"varmail\"\nlabel = \"varmail-scaled-down-a-lot\"\n",
            "t.toml",
            std::path::Path::new("."),
        )
        .unwrap();
        let text = render(&spec.plan());
        let lines: Vec<&str> = text.lines().skip(1).take(5).collect();
        // Every column starts at the same place on every line: the header's columns.
        for col in ["fs", "state", "workload"] {
            let at = lines[0].find(&format!(" {col} ")).unwrap() + 1;
            for l in &lines[1..] {
                assert_eq!(&l[at - 1..at], " ", "{col}: {l:?}\n{text}");
                assert_ne!(&l[at..at + 1], " ", "{col}: {l:?}\n{text}");
            }
        }
        // The right-aligned columns end, and the last one starts, at the same place.
        let run = lines[0].find(" run").unwrap() + 1;
        for l in &lines[1..] {
            assert_eq!(l.find("0.0s+1.0s"), Some(run), "{l:?}\n{text}");
        }
    }
}

//! The human summary of an aging run.

use crate::{human_bytes, RunReport, StopReason};
use std::fmt::Write as _;

/// Why a run ended, for a person at the command line: the library's words plus, for a limit, the
/// flag that set it.
pub(crate) fn stop_reason_text(r: StopReason) -> String {
    let flag = match r {
        StopReason::MaxTime => " (--max-time)",
        StopReason::MaxOverwrites => " (--max-overwrites)",
        StopReason::Confidence => " (--confidence)",
        StopReason::MaxOps => " (--max-ops)",
        _ => "",
    };
    format!("{}{flag}", r.describe())
}

fn limit<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |x| x.to_string())
}

/// The summary printed at the end of a run.
pub fn render(r: &RunReport) -> String {
    r.render_text()
}

trait Render {
    fn render_text(&self) -> String;
}

impl Render for RunReport {
    fn render_text(&self) -> String {
        let mut o = String::new();
        let c = &self.conditions;
        let _ = writeln!(
            o,
            "fsage {}: profile {} on {} ({}), seed {}",
            self.fsage_version, self.profile, self.target, self.backend, self.seed
        );
        if let Some(d) = self.data.filter(|d| !d.is_incompressible()) {
            let _ = writeln!(o, "data written: {d}");
        }
        if let Some(l) = self.platform.label() {
            let _ = writeln!(
                o,
                "platform: {l}: its timings compare only with runs on the same platform"
            );
        }
        let _ = writeln!(
            o,
            "stopped: {}{}",
            stop_reason_text(self.stop_reason),
            self.error
                .as_ref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        );
        let _ = writeln!(o, "stopping conditions (value / limit):");
        let _ = writeln!(
            o,
            "  ticks       {:>14} / {} (T from the convergence theorem)",
            c.ticks, c.t_estimate
        );
        let _ = writeln!(
            o,
            "  time        {:>13.1}s / {}",
            c.elapsed_s,
            limit(c.max_time_s.map(|s| format!("{s}s")))
        );
        let _ = writeln!(
            o,
            "  overwrites  {:>14.3} / {}",
            c.overwrites,
            limit(c.max_overwrites)
        );
        let _ = writeln!(
            o,
            "  age fit p   {:>14.4} / {}",
            c.chi2_p,
            limit(c.confidence)
        );
        let _ = writeln!(o, "  ops         {:>14} / {}", c.ops, limit(c.max_ops));
        // In fallocate mode the files' bytes are allocated, not written: no data reaches the
        // image (the backend's name says the mode: `posix (fallocate)`).
        let _ = writeln!(
            o,
            "run: {} creates, {} deletes in {:.2}s ({:.0} ops/s), {} {}",
            self.creates,
            self.deletes,
            self.elapsed_s,
            self.ops_per_s,
            human_bytes(self.bytes_written),
            if self.backend.contains("(fallocate)") {
                "allocated (fallocate: no data written)"
            } else {
                "written"
            }
        );
        let _ = writeln!(
            o,
            "live: {} files, {} allocated of {} capacity ({:.2}% full, target {:.2}%), {} directories",
            self.live_files,
            human_bytes(self.live_bytes),
            human_bytes(self.capacity),
            100.0 * self.live_bytes as f64 / self.capacity.max(1) as f64,
            100.0 * self.target_bytes as f64 / self.capacity.max(1) as f64,
            self.directories
        );
        if self.stable_ticks == 0 {
            let _ = writeln!(o, "fullness: no stable phase yet");
        } else {
            let _ = writeln!(
                o,
                "fullness: largest deviation from target in the stable phase {} ({:.3}% of capacity); band +/-{}; coin overridden {} times",
                human_bytes(self.max_fullness_deviation_bytes),
                100.0 * self.max_fullness_deviation,
                human_bytes(self.fullness_band_bytes),
                self.forced_creates + self.forced_deletes
            );
        }
        if self.enospc_events > 0 {
            let inodes = if self.enospc_out_of_inodes > 0 {
                format!(
                    " ({} of them with no free inode left: the file system has too few inodes for this profile)",
                    self.enospc_out_of_inodes
                )
            } else {
                String::new()
            };
            let _ = writeln!(
                o,
                "file system full: {} creates refused (ENOSPC){inodes}; the ceiling went down to {} and the target from {} to {}",
                self.enospc_events,
                human_bytes(self.ceiling_bytes),
                human_bytes(self.target_bytes_initial),
                human_bytes(self.target_bytes)
            );
        }
        for (d, n) in &self.directories_added {
            let _ = writeln!(
                o,
                "note: the profile has no directories at depth {d} but needs them; made {n}"
            );
        }
        for u in &self.unmet_size_bins {
            let _ = writeln!(
                o,
                "cannot be met at this capacity: size bin {} (target {:.4}%): {}",
                u.label,
                100.0 * u.ideal,
                u.reason
            );
        }
        for c in &self.clipped_size_bins {
            let _ = writeln!(
                o,
                "clipped at this capacity: size bin {} (target {:.4}%) gets files up to {} only \
                 (1% of the target bytes); larger ones would swing the fullness",
                c.label,
                100.0 * c.ideal,
                human_bytes(c.max_bytes)
            );
        }
        if let Some(f) = &self.fit {
            let mut off = Vec::new();
            if !f.age {
                off.push(format!(
                    "age histogram (RMSE {:.4}%)",
                    100.0 * self.age.rmse
                ));
            }
            if !f.size {
                off.push(format!(
                    "size histogram (a bin {:.2} points off)",
                    100.0 * self.size.max_abs_error
                ));
            }
            if !f.depth {
                off.push(format!(
                    "depth histogram (a bin {:.2} points off)",
                    100.0 * self.depth.max_abs_error
                ));
            }
            if !f.fullness {
                off.push(format!(
                    "fullness ({:+.1} points from the target)",
                    100.0 * f.fullness_off
                ));
            }
            if off.is_empty() {
                let _ = writeln!(
                    o,
                    "on target: age, size and depth histograms and fullness{}",
                    if self.unmet_size_bins.is_empty() && self.clipped_size_bins.is_empty() {
                        ""
                    } else {
                        " (but for the size bins above)"
                    }
                );
            } else {
                let _ = writeln!(o, "NOT on target: {}", off.join("; "));
            }
        }
        for (name, h) in [
            ("age", &self.age),
            ("size", &self.size),
            ("depth", &self.depth),
        ] {
            let _ = writeln!(
                o,
                "{name} histogram: RMSE {:.6}%, worst bin off by {:.4} percentage points",
                100.0 * h.rmse,
                100.0 * h.max_abs_error
            );
            let _ = writeln!(
                o,
                "  {:<22} {:>10} {:>10} {:>12}",
                "bin", "ideal %", "actual %", "files"
            );
            for b in &h.bins {
                let _ = writeln!(
                    o,
                    "  {:<22} {:>10.4} {:>10.4} {:>12}",
                    b.label,
                    100.0 * b.ideal,
                    100.0 * b.actual,
                    b.count
                );
            }
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use crate::Histogram;

    #[test]
    fn histogram_errors() {
        let h = Histogram::new(vec!["a".into(), "b".into()], &[0.5, 0.5], &[6, 4]);
        assert!((h.rmse - 0.1).abs() < 1e-12);
        assert!((h.max_abs_error - 0.1).abs() < 1e-12);
        assert_eq!(h.bins[0].count, 6);
    }

    /// In fallocate mode the summary says the bytes were allocated: no data was written.
    #[test]
    fn fallocate_bytes_are_allocated_not_written() {
        let mut r: fsage_exec::RunReport =
            serde_json::from_str(include_str!("../tests/fixtures/aged-ext4.run.json")).unwrap();
        let line = |r: &fsage_exec::RunReport| {
            super::render(r)
                .lines()
                .find(|l| l.starts_with("run: "))
                .unwrap()
                .to_string()
        };
        assert!(
            line(&r).ends_with(" allocated (fallocate: no data written)"),
            "{}",
            line(&r)
        );
        r.backend = "posix (write)".into();
        assert!(line(&r).ends_with(" written") && !line(&r).contains("allocated"));
    }
}

//! The human form of `fsage status`.

use crate::human_bytes;
use fsage_exec::{RunPhase, RunStatus};
use std::fmt::Write as _;

pub fn render(st: &RunStatus) -> String {
    let mut o = String::new();
    let phase = match st.phase {
        RunPhase::Rapid => "rapid",
        RunPhase::Stable => "stable",
        RunPhase::Done => "done",
    };
    let _ = writeln!(o, "state:      {}", st.state.display());
    let _ = writeln!(
        o,
        "run:        profile {}, seed {}, capacity {}, fullness {}, target {}",
        st.profile,
        st.seed,
        human_bytes(st.capacity),
        st.fullness,
        st.target
            .as_ref()
            .map_or("(dry run)".into(), |t| t.display().to_string())
    );
    if let (Some(image), Some(fs)) = (&st.image, &st.fs) {
        let _ = writeln!(o, "image:      {} ({fs})", image.display());
    }
    let _ = writeln!(
        o,
        "phase:      {phase}, tick {} of {} ({:.2}%)",
        st.ticks,
        st.t_estimate,
        100.0 * st.ticks as f64 / st.t_estimate.max(1) as f64
    );
    let _ = writeln!(o, "elapsed:    {:.1}s over all sessions", st.elapsed_s);
    let _ = writeln!(o, "overwrites: {:.3}", st.overwrites);
    let _ = writeln!(
        o,
        "age RMSE:   {:.6}% (if the run ended now)",
        100.0 * st.age_rmse
    );
    let _ = writeln!(
        o,
        "live:       {} files, {} allocated",
        st.live_files,
        human_bytes(st.live_bytes)
    );
    let s = &st.stop;
    let mut limits = Vec::new();
    if let Some(v) = s.max_ops {
        limits.push(format!("--max-ops {v}"));
    }
    if let Some(v) = s.max_time_s {
        limits.push(format!("--max-time {v}s"));
    }
    if let Some(v) = s.max_overwrites {
        limits.push(format!("--max-overwrites {v}"));
    }
    if let Some(v) = s.confidence {
        limits.push(format!("--confidence {v}"));
    }
    let _ = writeln!(
        o,
        "limits:     {}",
        if limits.is_empty() {
            "none (runs to T)".to_string()
        } else {
            limits.join(", ")
        }
    );
    let _ = writeln!(
        o,
        "stopped:    {}",
        st.stopped.map_or_else(
            || "running, or killed without a clean stop".to_string(),
            crate::run_text::stop_reason_text
        )
    );
    if let Some(e) = &st.error {
        let _ = writeln!(o, "error:      {e}");
    }
    o
}

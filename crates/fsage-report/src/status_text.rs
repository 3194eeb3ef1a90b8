//! The human form of `fsage status`.

use crate::human_bytes;
use fsage_exec::{End, RunPhase, RunStatus, TimeLeft};
use std::fmt::Write as _;

/// `24m 10s to T`, `30s to --max-ops`, `0s (--max-time reached)`, with `or sooner` when an
/// overwrite or confidence limit may end the run first; `total` names the source's last tick.
/// `rapid`: the rate is the rapid phase's, which on every file system measured runs faster than
/// the stable phase that is most of T (ext4 at 90 GB: 26.5 minutes left said after one minute of
/// a 37-minute run), so the text says whose rate it is.
pub fn time_left_text(t: &TimeLeft, total: &str, rapid: bool) -> String {
    let end = match t.until {
        End::Total => total,
        End::MaxOps => "--max-ops",
        End::MaxTime => "--max-time",
    };
    if t.secs <= 0.0 {
        return format!("0s ({end} reached)");
    }
    let sooner = if t.may_end_sooner { " or sooner" } else { "" };
    let whose = if rapid && t.until != End::MaxTime {
        " at the rapid phase's rate"
    } else {
        ""
    };
    format!(
        "{} to {end}{sooner}{whose}",
        fsage_units::format_duration(t.secs)
    )
}

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
    if let Some(r) = st.ticks_per_s {
        let _ = writeln!(
            o,
            "rate:       {} ticks/s over the run (to its last checkpoint)",
            fsage_units::format_rate(r)
        );
    }
    if st.phase != RunPhase::Done {
        let _ = writeln!(
            o,
            "time left:  {}",
            st.time_left.map_or_else(
                || "unknown (no rate yet)".to_string(),
                |t| time_left_text(&t, "T", st.phase == RunPhase::Rapid)
            )
        );
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn tl(secs: f64, until: End, may_end_sooner: bool) -> TimeLeft {
        TimeLeft {
            secs,
            until,
            may_end_sooner,
        }
    }

    #[test]
    fn time_left_names_the_end() {
        assert_eq!(
            time_left_text(&tl(1450.0, End::Total, false), "T", false),
            "24m 10s to T"
        );
        assert_eq!(
            time_left_text(&tl(30.0, End::MaxOps, true), "T", false),
            "30s to --max-ops or sooner"
        );
        assert_eq!(
            time_left_text(&tl(0.0, End::MaxTime, true), "T", true),
            "0s (--max-time reached)"
        );
        assert_eq!(
            time_left_text(&tl(7.0, End::Total, false), "the end", false),
            "7.0s to the end"
        );
        // In the rapid phase the estimate says whose rate it is; a time limit needs no rate.
        assert_eq!(
            time_left_text(&tl(1590.0, End::Total, false), "T", true),
            "26m 30s to T at the rapid phase's rate"
        );
        assert_eq!(
            time_left_text(&tl(60.0, End::MaxTime, false), "T", true),
            "1m 00s to --max-time"
        );
    }
}

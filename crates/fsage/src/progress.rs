//! Progress of a run on stderr: phase, ticks of T, the rate over the last minute, overwrites, age
//! RMSE, run time and time left. On a terminal a line redrawn at most five times a second; into a
//! file or a pipe (a long run's log) a line a minute; none with --quiet.

use fsage_exec::{Observer, Progress};
use fsage_plan::Phase;
use std::io::Write;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Off,
    /// Redrawn in place on a terminal.
    Live,
    /// A whole line every [`LOG_EVERY`], for a log.
    Log,
}

/// How often a run writing into a log says where it stands.
const LOG_EVERY: Duration = Duration::from_secs(60);

pub struct Bar {
    mode: Mode,
    last: Option<Duration>,
    drawn: bool,
    /// Time between redraws on a terminal: 200 ms, or twenty times what one took (the age RMSE
    /// walks every live file), so the display never costs the run more than about 5%.
    every: Duration,
}

impl Bar {
    pub fn new(quiet: bool) -> Bar {
        let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let mode = match (quiet, tty) {
            (true, _) => Mode::Off,
            (false, true) => Mode::Live,
            (false, false) => Mode::Log,
        };
        Bar {
            mode,
            last: None,
            drawn: false,
            every: Duration::from_millis(200),
        }
    }
}

/// The progress line: phase, bar, ticks of T, the rate over the last minute, overwrites, age
/// RMSE, run time and the time left (to T or a nearer --max-ops or --max-time).
fn line(p: &Progress) -> String {
    let phase = match p.phase {
        Some(Phase::Rapid) => "rapid",
        Some(Phase::Stable) => "stable",
        Some(Phase::Done) => "done",
        None => "run",
    };
    let pct = 100.0 * p.tick as f64 / p.total.max(1) as f64;
    let width = 24;
    let filled = (((pct / 100.0) * width as f64).round() as usize).min(width);
    let bar: String = "#".repeat(filled) + &"-".repeat(width - filled);
    // A planner's step is a tick (one operation); another source's is an operation.
    let unit = if p.phase.is_some() {
        "ticks/s"
    } else {
        "ops/s"
    };
    let rate = p.rate.map_or("-".to_string(), fsage_units::format_rate);
    let end = if p.phase.is_some() { "T" } else { "the end" };
    let left = p.time_left.map_or(String::new(), |t| {
        let rapid = p.phase == Some(Phase::Rapid);
        format!("  left {}", fsage_report::time_left_text(&t, end, rapid))
    });
    format!(
        "{phase:>6} [{bar}] {}/{} ticks ({pct:.1}%) {rate} {unit}  overwrites {:.2}  age RMSE {}  {}{left}",
        p.tick,
        p.total,
        p.overwrites,
        p.age_rmse
            .map_or("-".to_string(), |r| format!("{:.4}%", 100.0 * r)),
        fsage_units::format_duration(p.elapsed.as_secs_f64()),
    )
}

impl Observer for Bar {
    fn update(&mut self, progress: &dyn Fn() -> Progress, elapsed: Duration) {
        let every = match self.mode {
            Mode::Off => return,
            Mode::Live => self.every,
            Mode::Log => LOG_EVERY,
        };
        match self.last {
            Some(l) if elapsed < l + every => return,
            // A log's first line comes after a minute, not at the start.
            None if self.mode == Mode::Log => {
                self.last = Some(elapsed);
                return;
            }
            _ => {}
        }
        self.last = Some(elapsed);
        let began = std::time::Instant::now();
        let p = progress();
        if self.mode == Mode::Log {
            eprintln!("fsage: progress: {}", line(&p).trim_start());
            return;
        }
        self.every = Duration::from_millis(200).max(began.elapsed() * 20);
        eprint!("\r\x1b[2K{}", line(&p));
        let _ = std::io::stderr().flush();
        self.drawn = true;
    }

    fn finish(&mut self) {
        if self.drawn {
            eprint!("\r\x1b[2K");
            let _ = std::io::stderr().flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsage_exec::{End, TimeLeft};

    fn progress() -> Progress {
        Progress {
            phase: Some(Phase::Stable),
            tick: 6_690_000,
            total: 40_700_000,
            elapsed: Duration::from_secs(240),
            ops_per_s: 27_875.0,
            rate: Some(27_912.0),
            time_left: Some(TimeLeft {
                secs: 1218.0,
                until: End::Total,
                may_end_sooner: false,
            }),
            overwrites: 0.52,
            age_rmse: Some(0.0123),
        }
    }

    #[test]
    fn the_line_says_rate_and_time_left() {
        let l = line(&progress());
        assert_eq!(
            l,
            "stable [####--------------------] 6690000/40700000 ticks (16.4%) 27.9k ticks/s  \
             overwrites 0.52  age RMSE 1.2300%  4m 00s  left 20m 18s to T"
        );
        // In the rapid phase the time left says it is at that phase's rate.
        let mut p = progress();
        p.phase = Some(Phase::Rapid);
        let l = line(&p);
        assert!(
            l.starts_with(" rapid [") && l.ends_with("left 20m 18s to T at the rapid phase's rate"),
            "{l}"
        );
        // No rate yet: a dash, and no time left.
        let mut p = progress();
        (p.rate, p.time_left) = (None, None);
        let l = line(&p);
        assert!(l.contains(" - ticks/s") && !l.contains("left"), "{l}");
        // An op log's replay counts operations, to its end.
        p.phase = None;
        p.rate = Some(900.0);
        p.time_left = Some(TimeLeft {
            secs: 30.0,
            until: End::MaxOps,
            may_end_sooner: false,
        });
        let l = line(&p);
        assert!(l.starts_with("   run [") && l.contains("900 ops/s"), "{l}");
        assert!(l.ends_with("left 30s to --max-ops"), "{l}");
    }
}

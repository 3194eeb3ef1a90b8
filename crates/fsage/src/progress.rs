//! The progress line on a terminal: phase, ticks of T, ops/s, overwrites, age RMSE. Drawn at most
//! five times a second from numbers the run really has; silent when stderr is not a terminal.

use fsage_exec::{Observer, Progress};
use fsage_plan::Phase;
use std::io::Write;
use std::time::Duration;

pub struct Bar {
    enabled: bool,
    last: Option<Duration>,
    drawn: bool,
    /// Time between redraws: 200 ms, or twenty times what one took (the age RMSE walks every
    /// live file), so the display never costs the run more than about 5%.
    every: Duration,
}

impl Bar {
    pub fn new(quiet: bool) -> Bar {
        let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
        Bar {
            enabled: tty && !quiet,
            last: None,
            drawn: false,
            every: Duration::from_millis(200),
        }
    }
}

fn rate(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

impl Observer for Bar {
    fn update(&mut self, progress: &dyn Fn() -> Progress, elapsed: Duration) {
        if !self.enabled || self.last.is_some_and(|l| elapsed < l + self.every) {
            return;
        }
        self.last = Some(elapsed);
        let began = std::time::Instant::now();
        let p = progress();
        self.every = Duration::from_millis(200).max(began.elapsed() * 20);
        let phase = match p.phase {
            Some(Phase::Rapid) => "rapid",
            Some(Phase::Stable) => "stable",
            Some(Phase::Done) => "done",
            None => "run",
        };
        let pct = 100.0 * p.tick as f64 / p.total.max(1) as f64;
        let width = 24;
        let filled = ((pct / 100.0) * width as f64).round() as usize;
        let bar: String = "#".repeat(filled.min(width)) + &"-".repeat(width - filled.min(width));
        let eta = if p.tick > 0 && p.total > p.tick {
            let secs = elapsed.as_secs_f64() * (p.total - p.tick) as f64 / p.tick as f64;
            format!(" eta {}", fsage_units::format_duration(secs))
        } else {
            String::new()
        };
        eprint!(
            "\r\x1b[2K{phase:>6} [{bar}] {}/{} ticks ({pct:.1}%) {} ops/s  overwrites {:.2}  age RMSE {}  {}{eta}",
            p.tick,
            p.total,
            rate(p.ops_per_s),
            p.overwrites,
            p.age_rmse
                .map_or("-".to_string(), |r| format!("{:.4}%", 100.0 * r)),
            fsage_units::format_duration(elapsed.as_secs_f64()),
        );
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

//! How fast a run goes and how long it has left: the rate over the last minute (a run's pace
//! changes: the rapid phase only creates, the stable phase creates and deletes in a fuller file
//! system, and other work on the machine comes and goes) and the time to the first end it will
//! reach (the theorem's T, `--max-ops`, `--max-time`). Pure arithmetic on (time, tick) samples, so
//! that it is tested without clocks.

use crate::stop::StopConditions;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::time::Duration;

/// Ticks per second over a sliding window of (run time, tick) samples.
#[derive(Debug, Clone)]
pub struct Pace {
    window: Duration,
    samples: VecDeque<(Duration, u64)>,
}

impl Pace {
    /// The window the rate is taken over; a minute smooths the 4096-tick polls of a fast run and
    /// still follows a change of phase or of load within a minute.
    pub const WINDOW: Duration = Duration::from_secs(60);

    pub fn new(window: Duration) -> Pace {
        Pace {
            window,
            samples: VecDeque::new(),
        }
    }

    /// Notes that the run was at `tick` after `at` of run time. Samples older than the window
    /// are dropped, but the oldest one inside it is kept, so the rate always spans the window
    /// once the run is that old.
    pub fn record(&mut self, at: Duration, tick: u64) {
        if self
            .samples
            .back()
            .is_some_and(|&(t, k)| at < t || tick < k)
        {
            // Time or ticks went back (a new session): start again.
            self.samples.clear();
        }
        self.samples.push_back((at, tick));
        while self.samples.len() > 2 && self.samples[1].0 + self.window <= at {
            self.samples.pop_front();
        }
    }

    /// Ticks per second over the window; `None` until two samples lie apart in time.
    pub fn rate(&self) -> Option<f64> {
        let (&(t0, k0), &(t1, k1)) = (self.samples.front()?, self.samples.back()?);
        let dt = t1.checked_sub(t0)?.as_secs_f64();
        (dt > 0.0).then(|| (k1 - k0) as f64 / dt)
    }
}

/// What ends a run first, as far as can be known ahead: the overwrite and confidence limits
/// depend on what the run does and may end it sooner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum End {
    /// The source's last tick (the theorem's T for the planner).
    Total,
    /// `--max-ops`.
    MaxOps,
    /// `--max-time`.
    MaxTime,
}

/// The time left to the first of a run's known ends.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TimeLeft {
    pub secs: f64,
    pub until: End,
    /// An overwrite or confidence limit is set: the run may end sooner.
    pub may_end_sooner: bool,
}

/// The time left at `rate` ticks/s from `tick` (of `total`, 0 when unknown) after `elapsed` of run
/// time, to the first end the run reaches; `None` when no end is known or the rate is unknown
/// and no time limit is set.
pub fn time_left(
    tick: u64,
    total: u64,
    elapsed: Duration,
    rate: Option<f64>,
    stop: &StopConditions,
) -> Option<TimeLeft> {
    let by_ticks = [
        (total, End::Total),
        (stop.max_ops.unwrap_or(0), End::MaxOps),
    ]
    .into_iter()
    .filter(|&(n, _)| n > 0)
    .min_by_key(|&(n, _)| n)
    .and_then(|(n, until)| {
        let left = n.saturating_sub(tick);
        if left == 0 {
            return Some((0.0, until));
        }
        let r = rate.filter(|r| r.is_finite() && *r > 0.0)?;
        Some((left as f64 / r, until))
    });
    let by_time = stop
        .max_time
        .map(|m| (m.saturating_sub(elapsed).as_secs_f64(), End::MaxTime));
    let (secs, until) = match (by_ticks, by_time) {
        (Some(a), Some(b)) => {
            if b.0 < a.0 {
                b
            } else {
                a
            }
        }
        (a, b) => a.or(b)?,
    };
    Some(TimeLeft {
        secs,
        until,
        may_end_sooner: secs > 0.0 && (stop.max_overwrites.is_some() || stop.confidence.is_some()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: u64) -> Duration {
        Duration::from_secs(x)
    }

    #[test]
    fn the_rate_is_over_the_last_window() {
        let mut p = Pace::new(s(60));
        assert_eq!(p.rate(), None);
        p.record(s(0), 0);
        assert_eq!(p.rate(), None);
        // 1000 ticks/s for two minutes, then 100 ticks/s for two minutes.
        for t in 1..=120 {
            p.record(s(t), 1000 * t);
        }
        assert!((p.rate().unwrap() - 1000.0).abs() < 1e-9);
        for t in 121..=240 {
            p.record(s(t), 120_000 + 100 * (t - 120));
        }
        assert!((p.rate().unwrap() - 100.0).abs() < 1e-9, "{:?}", p.rate());
        // Halfway into the change the window holds both paces.
        let mut q = Pace::new(s(60));
        for t in 0..=150 {
            let k = if t <= 120 {
                1000 * t
            } else {
                120_000 + 100 * (t - 120)
            };
            q.record(s(t), k);
        }
        let want = (30.0 * 1000.0 + 30.0 * 100.0) / 60.0;
        assert!((q.rate().unwrap() - want).abs() < 1e-9, "{:?}", q.rate());
        // Samples are dropped, not hoarded.
        assert!(q.samples.len() <= 62, "{}", q.samples.len());
    }

    #[test]
    fn sparse_samples_still_give_a_rate() {
        // A slow run polls rarely: two samples five minutes apart span more than the window.
        let mut p = Pace::new(s(60));
        p.record(s(0), 0);
        p.record(s(300), 4096);
        assert!((p.rate().unwrap() - 4096.0 / 300.0).abs() < 1e-9);
        p.record(s(600), 8192);
        assert!((p.rate().unwrap() - 4096.0 / 300.0).abs() < 1e-9);
        // Going back (a resumed session's clock) starts again.
        p.record(s(10), 100);
        assert_eq!(p.rate(), None);
    }

    #[test]
    fn time_left_is_to_the_first_end() {
        let none = StopConditions::default();
        let r = Some(1000.0);
        let tl = time_left(10_000, 70_000, s(5), r, &none).unwrap();
        assert_eq!(
            (tl.secs, tl.until, tl.may_end_sooner),
            (60.0, End::Total, false)
        );
        // --max-ops before T.
        let ops = StopConditions {
            max_ops: Some(40_000),
            ..none.clone()
        };
        let tl = time_left(10_000, 70_000, s(5), r, &ops).unwrap();
        assert_eq!((tl.secs, tl.until), (30.0, End::MaxOps));
        // --max-ops past T: T comes first.
        let far = StopConditions {
            max_ops: Some(1 << 40),
            ..none.clone()
        };
        assert_eq!(
            time_left(10_000, 70_000, s(5), r, &far).unwrap().until,
            End::Total
        );
        // --max-time before either; it needs no rate.
        let time = StopConditions {
            max_time: Some(s(20)),
            ..ops.clone()
        };
        let tl = time_left(10_000, 70_000, s(5), r, &time).unwrap();
        assert_eq!((tl.secs, tl.until), (15.0, End::MaxTime));
        let tl = time_left(10_000, 70_000, s(5), None, &time).unwrap();
        assert_eq!((tl.secs, tl.until), (15.0, End::MaxTime));
        // A time limit already passed: nothing left.
        assert_eq!(time_left(1, 70_000, s(30), r, &time).unwrap().secs, 0.0);
        // No rate and no time limit: unknown; no end at all: unknown.
        assert_eq!(time_left(10_000, 70_000, s(5), None, &none), None);
        assert_eq!(time_left(10_000, 0, s(5), r, &none), None);
        // At the end: nothing left, rate or not.
        assert_eq!(
            time_left(70_000, 70_000, s(5), None, &none).unwrap().secs,
            0.0
        );
        // An overwrite or confidence limit may end it sooner.
        let ow = StopConditions {
            max_overwrites: Some(2.0),
            ..none.clone()
        };
        assert!(
            time_left(10_000, 70_000, s(5), r, &ow)
                .unwrap()
                .may_end_sooner
        );
        let conf = StopConditions {
            confidence: Some(0.95),
            ..none
        };
        assert!(
            time_left(10_000, 70_000, s(5), r, &conf)
                .unwrap()
                .may_end_sooner
        );
    }
}

//! The seek curve: time to move the heads `d` cylinders, in Ruemmler and Wilkes' two-part form
//! ("An introduction to disk drive modeling", IEEE Computer 27(3), 1994): `a + b·√d` for short
//! seeks (the arm accelerates, then decelerates) and `c + e·d` for long ones (it coasts at top
//! speed), joined smoothly (same value and slope) at `d0`.
//!
//! Datasheets give three figures: single-track (`d = 1`), full stroke (`d = D`, every cylinder)
//! and the average over all seek pairs, weighted as the specifications define it (every start
//! and end cylinder equally likely, zero-length seeks left out: a distance `d` has weight
//! `D + 1 - d`). [`SeekCurve::fit`] finds the curve of that form through all three.

use crate::Error;

/// A fitted seek curve, times in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeekCurve {
    pub a: f64,
    pub b: f64,
    pub c: f64,
    pub e: f64,
    /// Where the short-seek part ends, in cylinders.
    pub d0: f64,
    /// The longest seek, in cylinders (cylinders - 1).
    pub max_d: f64,
}

impl SeekCurve {
    /// The time of a seek of `d` cylinders (0 for none).
    pub fn time(&self, d: u64) -> f64 {
        if d == 0 {
            return 0.0;
        }
        let d = d as f64;
        if d <= self.d0 {
            self.a + self.b * d.sqrt()
        } else {
            self.c + self.e * d
        }
    }

    /// The curve through `(1, track)`, `(max_d, full)` with weighted average `avg`, or why
    /// there is none of this form (the average must lie between the all-linear and the
    /// all-square-root curves' averages).
    pub fn fit(track: f64, avg: f64, full: f64, max_d: u64) -> crate::Result<SeekCurve> {
        if max_d < 2 {
            return Err(Error::input(format!(
                "{} cylinders: too few for a seek curve",
                max_d + 1
            )));
        }
        if !(track > 0.0 && track < avg && avg < full) {
            return Err(Error::input(format!(
                "seek times must grow: single-track {} < average {} < full stroke {} (ms)",
                track / 1e6,
                avg / 1e6,
                full / 1e6
            )));
        }
        let md = max_d as f64;
        let curve = |d0: f64| {
            // Smooth join at d0: e = b / (2√d0), c = a + b√d0/2; a + b = track;
            // c + e·md = full.
            let s = d0.sqrt();
            let b = (full - track) / (s / 2.0 + md / (2.0 * s) - 1.0);
            let a = track - b;
            SeekCurve {
                a,
                b,
                c: a + b * s / 2.0,
                e: b / (2.0 * s),
                d0,
                max_d: md,
            }
        };
        // The weighted average falls as d0 moves down (the curve turns linear earlier).
        let (mut lo, mut hi) = (1.0f64, md);
        let (at_lo, at_hi) = (curve(lo).average(), curve(hi).average());
        if !(at_lo..=at_hi).contains(&avg) {
            return Err(Error::input(format!(
                "an average seek of {:.2} ms cannot be reached with single-track {:.2} ms and \
                 full stroke {:.2} ms: it must lie between {:.2} and {:.2} ms",
                avg / 1e6,
                track / 1e6,
                full / 1e6,
                at_lo / 1e6,
                at_hi / 1e6
            )));
        }
        for _ in 0..100 {
            let mid = (lo * hi).sqrt();
            if curve(mid).average() < avg {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(curve((lo * hi).sqrt()))
    }

    /// The average over all seeks, each distance `d` weighted by `max_d + 1 - d` (as the
    /// datasheets' weighted average). Exact in closed form per part, integrated on the
    /// continuum (cylinder counts are in the hundreds of thousands).
    pub fn average(&self) -> f64 {
        let n = self.max_d;
        let d0 = self.d0.clamp(1.0, n);
        // ∫ (n + 1 - x) (a + b√x) dx and ∫ (n + 1 - x)(c + e x) dx.
        let m = n + 1.0;
        let short = |x: f64| {
            self.a * (m * x - x * x / 2.0)
                + self.b * (m * 2.0 / 3.0 * x.powf(1.5) - 2.0 / 5.0 * x.powf(2.5))
        };
        let long =
            |x: f64| self.c * (m * x - x * x / 2.0) + self.e * (m * x * x / 2.0 - x * x * x / 3.0);
        let weight = |x: f64| m * x - x * x / 2.0;
        let total = (short(d0) - short(1.0)) + (long(n) - long(d0));
        total / (weight(n) - weight(1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: f64 = 1e6;

    #[test]
    fn the_fit_goes_through_the_three_datasheet_figures() {
        let c = SeekCurve::fit(1.0 * MS, 8.5 * MS, 20.0 * MS, 150_000).unwrap();
        assert!((c.time(1) - 1.0 * MS).abs() < 0.01 * MS, "{c:?}");
        assert!((c.time(150_000) - 20.0 * MS).abs() < 0.01 * MS, "{c:?}");
        assert!((c.average() - 8.5 * MS).abs() < 0.01 * MS, "{c:?}");
        // Smooth: both parts agree around the join.
        let d0 = c.d0;
        let (left, right) = (c.a + c.b * d0.sqrt(), c.c + c.e * d0);
        assert!((left - right).abs() < 1.0, "{left} {right}");
        // And it grows.
        let mut last = 0.0;
        for d in [1, 2, 10, 100, 1_000, 10_000, 100_000, 150_000] {
            assert!(c.time(d) > last);
            last = c.time(d);
        }
    }

    /// Ruemmler and Wilkes' HP 97560: 3.24 + 0.400·√d ms up to 383 cylinders, 8.00 + 0.008·d
    /// beyond, 1,962 cylinders. Its three datasheet figures, computed from the curve, give back
    /// the curve.
    #[test]
    fn the_hp97560_curve_is_recovered_from_its_figures() {
        let rw = |d: f64| if d < 383.0 { 3.24 + 0.4 * d.sqrt() } else { 8.0 + 0.008 * d } * MS;
        let max_d = 1961u64;
        let weighted: f64 = (1..=max_d)
            .map(|d| (max_d + 1 - d) as f64 * rw(d as f64))
            .sum::<f64>()
            / (1..=max_d).map(|d| (max_d + 1 - d) as f64).sum::<f64>();
        let c = SeekCurve::fit(rw(1.0), weighted, rw(max_d as f64), max_d).unwrap();
        for d in [1u64, 10, 100, 383, 1000, 1961] {
            let (got, want) = (c.time(d), rw(d as f64));
            assert!(
                (got - want).abs() / want < 0.06,
                "d={d}: fitted {:.3} ms against Ruemmler and Wilkes' {:.3} ms",
                got / MS,
                want / MS
            );
        }
    }

    #[test]
    fn impossible_figures_are_refused_with_the_range() {
        let e = SeekCurve::fit(1.0 * MS, 14.0 * MS, 15.0 * MS, 100_000).unwrap_err();
        assert!(e.message.contains("must lie between"), "{e}");
        let e = SeekCurve::fit(9.0 * MS, 8.5 * MS, 15.0 * MS, 100_000).unwrap_err();
        assert!(e.message.contains("must grow"), "{e}");
    }
}

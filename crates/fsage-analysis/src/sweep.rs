//! Latency sweeps against the slippery-slope model (Santana et al., INFLOW '15):
//! Throughput(l_dev) = C / (l_dev + l_sw): the fits, the classes and the inversions. The types
//! are fsage-results', re-exported here.

pub use fsage_results::analysis::sweep::*;

use crate::{lat_key, AnalysisOptions, GroupMean, MeanCi, State};
use fsage_units::format_latency_us;
use std::collections::BTreeMap;

/// Solves the model through two points (l1, t1), (l2, t2). `None` when no model with C > 0 and
/// l_sw > 0 goes through them (equal throughputs, or a faster device that is not faster).
pub fn fit_calibration(l1: f64, t1: f64, l2: f64, t2: f64) -> Option<ModelFit> {
    // t1 (l1 + s) = t2 (l2 + s)  =>  s = (t2 l2 - t1 l1) / (t1 - t2).
    let den = t1 - t2;
    if den == 0.0 || !den.is_finite() {
        return None;
    }
    let s = (t2 * l2 - t1 * l1) / den;
    let c = t1 * (l1 + s);
    (s > 0.0 && c > 0.0 && s.is_finite() && c.is_finite()).then_some(ModelFit { c, l_sw_us: s })
}

/// Least squares of the relative error over every point: minimises Σ (1 - model(l_i)/t_i)².
/// For a given l_sw the best C has a closed form; l_sw is found by a log-spaced scan and a
/// golden-section search. `None` with fewer than two points, or when the best l_sw runs off to
/// infinity (a flat curve) or to zero.
pub fn fit_least_squares(points: &[(f64, f64)]) -> Option<ModelFit> {
    let pts: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(l, t)| l.is_finite() && *l >= 0.0 && t.is_finite() && *t > 0.0)
        .collect();
    let distinct = {
        let mut ls: Vec<i64> = pts.iter().map(|p| lat_key(Some(p.0)).unwrap()).collect();
        ls.sort();
        ls.dedup();
        ls.len()
    };
    if distinct < 2 {
        return None;
    }
    // For l_sw = s: with h_i = 1 / ((l_i + s) t_i), C = Σ h_i / Σ h_i², residual Σ (1 - C h_i)².
    let best_c = |s: f64| {
        let (a, b) = pts.iter().fold((0.0, 0.0), |(a, b), &(l, t)| {
            let h = 1.0 / ((l + s) * t);
            (a + h, b + h * h)
        });
        a / b
    };
    let cost = |x: f64| {
        let s = x.exp();
        let c = best_c(s);
        pts.iter()
            .map(|&(l, t)| (1.0 - c / ((l + s) * t)).powi(2))
            .sum::<f64>()
    };
    let (lo, hi, n) = ((1e-3f64).ln(), (1e10f64).ln(), 600);
    let step = (hi - lo) / n as f64;
    let (mut bi, mut bc) = (0, f64::INFINITY);
    for i in 0..=n {
        let c = cost(lo + step * i as f64);
        if c < bc {
            (bi, bc) = (i, c);
        }
    }
    if bi == 0 || bi == n {
        return None;
    }
    let (mut a, mut b) = (lo + step * (bi - 1) as f64, lo + step * (bi + 1) as f64);
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let (mut x1, mut x2) = (b - g * (b - a), a + g * (b - a));
    let (mut f1, mut f2) = (cost(x1), cost(x2));
    for _ in 0..200 {
        if f1 < f2 {
            b = x2;
            (x2, f2) = (x1, f1);
            x1 = b - g * (b - a);
            f1 = cost(x1);
        } else {
            a = x1;
            (x1, f1) = (x2, f2);
            x2 = a + g * (b - a);
            f2 = cost(x2);
        }
        if (b - a).abs() < 1e-12 {
            break;
        }
    }
    let s = ((a + b) / 2.0).exp();
    let c = best_c(s);
    (c > 0.0 && c.is_finite()).then_some(ModelFit { c, l_sw_us: s })
}

/// Fits and classifies every (workload, state, fs) measured at two or more device latencies. A
/// device model (a disk) is not a latency, so its groups are never points of a sweep.
pub fn sweep_fits(means: &[GroupMean], opts: &AnalysisOptions) -> Vec<SweepFit> {
    let mut by: BTreeMap<(String, State, String), Vec<&GroupMean>> = BTreeMap::new();
    for g in means
        .iter()
        .filter(|g| g.latency_us.is_some() && g.device_model.is_none())
    {
        by.entry((g.workload.clone(), g.state.clone(), g.fs.clone()))
            .or_default()
            .push(g);
    }
    by.into_iter()
        .filter(|(_, v)| v.len() >= 2)
        .map(|((workload, state, fs), mut v)| {
            v.sort_by(|a, b| a.latency_us.unwrap().total_cmp(&b.latency_us.unwrap()));
            let pts: Vec<(f64, MeanCi)> = v
                .iter()
                .map(|g| (g.latency_us.unwrap(), g.ops_per_s.clone()))
                .collect();
            let (points, calibration, least_squares, classified_with, class) = classify(&pts, opts);
            SweepFit {
                fs,
                workload,
                state,
                points,
                calibration,
                least_squares,
                classified_with,
                class,
                platform: Default::default(),
            }
        })
        .collect()
}

type Classified = (
    Vec<SweepPoint>,
    Option<ModelFit>,
    Option<ModelFit>,
    String,
    SweepClass,
);

/// Fits both models to `points` (latency µs, measured ops/s; any order) and classes the curve by
/// the rule on [`SweepClass`].
pub fn classify(points: &[(f64, MeanCi)], opts: &AnalysisOptions) -> Classified {
    let mut pts = points.to_vec();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (c1, c2) = opts.calibration_us;
    let at = |l: f64| {
        pts.iter()
            .find(|p| lat_key(Some(p.0)) == lat_key(Some(l)))
            .map(|p| p.1.mean)
    };
    let have_cal = at(c1).is_some() && at(c2).is_some();
    let calibration = match (at(c1), at(c2)) {
        (Some(t1), Some(t2)) => fit_calibration(c1, t1, c2, t2),
        _ => None,
    };
    let lsq_input: Vec<(f64, f64)> = pts.iter().map(|p| (p.0, p.1.mean)).collect();
    let least_squares = fit_least_squares(&lsq_input);
    let (model, classified_with) = if have_cal {
        (calibration.clone(), "calibration")
    } else {
        (least_squares.clone(), "least_squares")
    };
    let low_cal = if have_cal { c1.min(c2) } else { f64::INFINITY };
    let out: Vec<SweepPoint> = pts
        .iter()
        .map(|(l, m)| {
            let predicted = model.as_ref().map(|f| f.predict(*l));
            let lsq_predicted = least_squares.as_ref().map(|f| f.predict(*l));
            let rel = |p: Option<f64>| p.filter(|p| *p > 0.0).map(|p| (m.mean - p) / p);
            SweepPoint {
                latency_us: *l,
                measured: m.clone(),
                error: rel(predicted),
                predicted,
                lsq_error: rel(lsq_predicted),
                lsq_predicted,
                calibration: have_cal
                    && (lat_key(Some(*l)) == lat_key(Some(c1))
                        || lat_key(Some(*l)) == lat_key(Some(c2))),
            }
        })
        .collect();
    let class = class_of(&out, model.is_some(), have_cal, low_cal, opts);
    (
        out,
        calibration,
        least_squares,
        classified_with.to_string(),
        class,
    )
}

/// Least-squares slope of y against x; `None` with fewer than two distinct x.
fn slope(pts: &[(f64, f64)]) -> Option<f64> {
    let n = pts.len() as f64;
    if pts.len() < 2 {
        return None;
    }
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

fn class_of(
    pts: &[SweepPoint],
    have_model: bool,
    have_cal: bool,
    low_cal: f64,
    opts: &AnalysisOptions,
) -> SweepClass {
    let tol = opts.tolerance;
    let k = opts.knee_us;
    // 1. Throughput falling as the device gets faster, over the fitted range.
    let hi_cal = if have_cal {
        opts.calibration_us.0.max(opts.calibration_us.1)
    } else {
        f64::INFINITY
    };
    let lo_fit = if have_cal { low_cal } else { f64::NEG_INFINITY };
    let range: Vec<(f64, f64)> = pts
        .iter()
        // 1 ns of slack: latencies are compared as whole nanoseconds elsewhere.
        .filter(|q| q.latency_us >= lo_fit - 1e-3 && q.latency_us <= hi_cal + 1e-3)
        .map(|q| (q.latency_us, q.measured.mean))
        .collect();
    if let Some(slope) = slope(&range).filter(|s| *s > 0.0) {
        let (first, last) = (range[0], range[range.len() - 1]);
        return SweepClass::NoFit {
            reason: format!(
                "throughput falls as the device gets faster from {} to {} (least-squares slope \
                 {:+.1} ops/s per ms; {:.0} ops/s at {}, {:.0} at {})",
                format_latency_us(last.0),
                format_latency_us(first.0),
                slope * 1000.0,
                first.1,
                format_latency_us(first.0),
                last.1,
                format_latency_us(last.0)
            ),
        };
    }
    if !have_model {
        return SweepClass::NoFit {
            reason: if have_cal {
                "no model with C > 0 and l_sw > 0 goes through the calibration points".into()
            } else {
                "no least-squares model with C > 0 and a finite l_sw > 0".into()
            },
        };
    }
    // The points the model predicts: below the lower calibration latency (all, without one).
    let p: Vec<(f64, f64)> = pts
        .iter()
        .filter(|q| q.latency_us < low_cal)
        .filter_map(|q| q.error.map(|e| (q.latency_us, e)))
        .collect();
    if p.is_empty() {
        return SweepClass::Unclassified {
            reason: format!(
                "no latency below the calibration point {} to compare the model with",
                format_latency_us(low_cal)
            ),
        };
    }
    // 2. III: below at or above the knee; departs at the highest such latency.
    if let Some(&(d, _)) = p.iter().rev().find(|(l, e)| *l >= k && *e < -tol) {
        let last_on_model_us = pts.iter().map(|q| q.latency_us).find(|l| *l > d);
        return SweepClass::III {
            departs_us: d,
            last_on_model_us,
        };
    }
    let below = p.iter().any(|(_, e)| *e < -tol);
    let above = p.iter().any(|(_, e)| *e > tol);
    if !below && above {
        return SweepClass::II;
    }
    let upper_within = p
        .iter()
        .filter(|(l, _)| *l >= k)
        .all(|(_, e)| e.abs() <= tol);
    if upper_within {
        if let Some(&(b, _)) = p.iter().rev().find(|(l, e)| *l < k && *e < -tol) {
            return SweepClass::I { below_from_us: b };
        }
    }
    if !below && !above {
        return SweepClass::Follows;
    }
    SweepClass::Unclassified {
        reason: format!(
            "above the model by more than {:.0}% at some latencies at or above {} and below it \
             under {}",
            100.0 * tol,
            format_latency_us(k),
            format_latency_us(k)
        ),
    }
}

/// The order of a and b at one latency: 1 a faster, -1 b faster, 0 tied (means within the
/// margin, or 95% intervals overlapping); and whether it is confirmed by intervals. With a
/// single repetition on either side there is no interval: the order of the means (beyond the
/// margin) is taken, unconfirmed.
fn order(a: &MeanCi, b: &MeanCi, margin: f64) -> (i8, bool) {
    let top = a.mean.max(b.mean);
    if top <= 0.0 || (a.mean - b.mean).abs() / top <= margin {
        return (0, false);
    }
    let confirmed = super::apart(a, b);
    if !confirmed && a.ci95.is_some() && b.ci95.is_some() {
        // Intervals that overlap: tied.
        return (0, false);
    }
    (if a.mean > b.mean { 1 } else { -1 }, confirmed)
}

/// Where the order of one pair changes, walking `points` (latency, order, confirmed) from the
/// slowest device: (from, to, order at from, both confirmed).
fn changes(points: &[(f64, i8, bool)]) -> Vec<(f64, f64, i8, bool)> {
    let mut out = Vec::new();
    let mut prev: Option<(f64, i8, bool)> = None;
    for &(l, o, c) in points {
        if let Some((pl, po, pc)) = prev {
            if po != o {
                out.push((pl, l, po, pc && c));
            }
        }
        prev = Some((l, o, c));
    }
    out
}

/// Every pair of file systems (per workload and state) whose order changes between two
/// latencies at which both orders are clear, with no clear order in between, walking from the
/// slowest device to the fastest. Confirmed inversions come from the orders backed by intervals
/// alone; orders from a single repetition add unconfirmed ones (`confirmed: false`). Only fixed
/// latencies count (a device model has no place between them).
pub fn inversions(means: &[GroupMean], opts: &AnalysisOptions) -> Vec<Inversion> {
    type Curve = BTreeMap<i64, (f64, MeanCi)>;
    let mut by: BTreeMap<(String, State), BTreeMap<String, Curve>> = BTreeMap::new();
    for g in means.iter().filter(|g| g.device_model.is_none()) {
        let Some(l) = g.latency_us else { continue };
        by.entry((g.workload.clone(), g.state.clone()))
            .or_default()
            .entry(g.fs.clone())
            .or_default()
            .insert(lat_key(Some(l)).unwrap(), (l, g.ops_per_s.clone()));
    }
    let mut out = Vec::new();
    for ((workload, state), curves) in &by {
        let names: Vec<&String> = curves.keys().collect();
        for (i, a) in names.iter().enumerate() {
            for b in &names[i + 1..] {
                let (ca, cb) = (&curves[*a], &curves[*b]);
                // Slowest device first; ties left out.
                let all: Vec<(f64, i8, bool)> = ca
                    .iter()
                    .rev()
                    .filter_map(|(key, (l, ma))| {
                        let (_, mb) = cb.get(key)?;
                        let (o, c) = order(ma, mb, opts.inversion_margin);
                        (o != 0).then_some((*l, o, c))
                    })
                    .collect();
                let sure: Vec<(f64, i8, bool)> = all.iter().copied().filter(|p| p.2).collect();
                let mut found = changes(&all);
                // An unconfirmed point between two confirmed ones hides their change: the
                // confirmed change is reported, and the unconfirmed one inside it (the same
                // crossing, seen at the single-repetition point) is not reported again.
                let sure_changes = changes(&sure);
                found.retain(|f| {
                    f.3 || !sure_changes
                        .iter()
                        .any(|c| c.2 == f.2 && f.0 <= c.0 && f.1 >= c.1)
                });
                for ch in sure_changes {
                    if !found.iter().any(|f| (f.0, f.1) == (ch.0, ch.1)) {
                        found.push(ch);
                    }
                }
                found.sort_by(|x, y| y.0.total_cmp(&x.0).then(y.1.total_cmp(&x.1)));
                for (from_us, to_us, po, confirmed) in found {
                    let (slow, fast) = if po > 0 { (a, b) } else { (b, a) };
                    out.push(Inversion {
                        workload: workload.clone(),
                        state: state.clone(),
                        faster_slow_device: (*slow).clone(),
                        faster_fast_device: (*fast).clone(),
                        from_us,
                        to_us,
                        confirmed,
                    });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The paper's grid: 0 to 10 ms in 1 ms steps and 0 to 1 ms in 100 µs steps.
    fn grid() -> Vec<f64> {
        let mut v: Vec<f64> = (0..=10).map(|i| i as f64 * 1000.0).collect();
        v.extend((1..10).map(|i| i as f64 * 100.0));
        v.sort_by(f64::total_cmp);
        v
    }

    fn pts(f: impl Fn(f64) -> f64) -> Vec<(f64, MeanCi)> {
        grid()
            .into_iter()
            .map(|l| (l, MeanCi::of(&[f(l) * 0.99, f(l) * 1.01])))
            .collect()
    }

    const C: f64 = 4.0e7; // ops/s·µs: 4000 ops/s at 10 ms with l_sw 0
    const S: f64 = 350.0;

    fn model(l: f64) -> f64 {
        C / (l + S)
    }

    fn close(a: f64, b: f64, rel: f64) -> bool {
        ((a - b) / b).abs() <= rel
    }

    #[test]
    fn a_model_sweep_recovers_c_and_l_sw_and_follows() {
        let (p, cal, lsq, with, class) = classify(&pts(model), &AnalysisOptions::default());
        let cal = cal.unwrap();
        let lsq = lsq.unwrap();
        assert!(
            close(cal.c, C, 0.01) && close(cal.l_sw_us, S, 0.01),
            "{cal:?}"
        );
        assert!(
            close(lsq.c, C, 0.01) && close(lsq.l_sw_us, S, 0.01),
            "{lsq:?}"
        );
        assert_eq!(with, "calibration");
        assert_eq!(class, SweepClass::Follows);
        assert!(p.iter().all(|q| q.error.unwrap().abs() < 1e-9));
        assert_eq!(p.iter().filter(|q| q.calibration).count(), 2);
    }

    #[test]
    fn noisy_model_sweep_recovers_within_one_percent() {
        // ±0.5% alternating noise on every point.
        let mut i = 0;
        let noisy: Vec<(f64, MeanCi)> = grid()
            .into_iter()
            .map(|l| {
                i += 1;
                let f = if i % 2 == 0 { 1.005 } else { 0.995 };
                (l, MeanCi::of(&[model(l) * f]))
            })
            .collect();
        let (_, _, lsq, _, _) = classify(&noisy, &AnalysisOptions::default());
        let lsq = lsq.unwrap();
        assert!(close(lsq.c, C, 0.01), "{lsq:?}");
        assert!(close(lsq.l_sw_us, S, 0.05), "{lsq:?}");
    }

    #[test]
    fn class_ii_above_the_model() {
        // On the model from 5 ms up, then up to 50% above it at 0.
        let f = |l: f64| {
            model(l)
                * if l < 5000.0 {
                    1.0 + 0.5 * (5000.0 - l) / 5000.0
                } else {
                    1.0
                }
        };
        let (_, cal, _, _, class) = classify(&pts(f), &AnalysisOptions::default());
        let cal = cal.unwrap();
        assert!(close(cal.c, C, 0.01) && close(cal.l_sw_us, S, 0.01));
        assert_eq!(class, SweepClass::II);
    }

    #[test]
    fn class_i_flat_under_one_ms() {
        // On the model down to 1 ms, flat below: no gain from a faster device.
        let f = |l: f64| model(l.max(1000.0));
        let (_, _, _, _, class) = classify(&pts(f), &AnalysisOptions::default());
        // 900 µs: 1350/1250 = 8% below, within 10%; 800 µs: 1150/1350, 15% below.
        assert_eq!(
            class,
            SweepClass::I {
                below_from_us: 800.0
            }
        );
    }

    #[test]
    fn class_iii_departs_where_constructed() {
        // On the model from 3 ms up; below it from 2 ms: only 20% more than at 3 ms at 0.
        let f = |l: f64| {
            if l >= 3000.0 {
                model(l)
            } else {
                model(3000.0) * (1.0 + 0.2 * (3000.0 - l) / 3000.0)
            }
        };
        let (_, _, _, _, class) = classify(&pts(f), &AnalysisOptions::default());
        assert_eq!(
            class,
            SweepClass::III {
                departs_us: 2000.0,
                last_on_model_us: Some(3000.0)
            }
        );
    }

    /// The no-fit rule looks at the fitted range (5 to 10 ms), not at the two ends of the sweep.
    #[test]
    fn no_fit_is_judged_over_the_fitted_range() {
        // On the model from 5 ms up; collapsing below 1 ms to less than at 10 ms. The old rule
        // (fastest against slowest) called it no fit; it is a curve that departs from the model.
        let f = |l: f64| {
            if l >= 1000.0 {
                model(l)
            } else {
                0.5 * model(10000.0)
            }
        };
        let (_, cal, _, _, class) = classify(&pts(f), &AnalysisOptions::default());
        assert!(cal.is_some());
        assert!(matches!(class, SweepClass::I { .. }), "{class:?}");
        // The calibration points alone fit (10 ms slower than 5 ms), but between them throughput
        // rises with latency: no model follows that.
        let f = |l: f64| match l as i64 {
            5000 => 1000.0,
            10000 => 900.0,
            6000..=9000 => l / 5.0,
            _ => model(l),
        };
        let (_, cal, _, _, class) = classify(&pts(f), &AnalysisOptions::default());
        assert!(cal.is_some());
        match class {
            SweepClass::NoFit { reason } => {
                assert!(reason.contains("from 10 ms to 5 ms"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn falling_throughput_has_no_fit() {
        let f = |l: f64| 1000.0 + l / 100.0;
        let (_, cal, _, _, class) = classify(&pts(f), &AnalysisOptions::default());
        assert!(cal.is_none());
        assert!(matches!(class, SweepClass::NoFit { .. }), "{class:?}");
    }

    #[test]
    fn settable_calibration_latencies() {
        let opts = AnalysisOptions {
            calibration_us: (1000.0, 3000.0),
            ..Default::default()
        };
        let (p, cal, _, _, _) = classify(&pts(model), &opts);
        assert!(close(cal.unwrap().l_sw_us, S, 1e-6));
        let cal_pts: Vec<f64> = p
            .iter()
            .filter(|q| q.calibration)
            .map(|q| q.latency_us)
            .collect();
        assert_eq!(cal_pts, vec![1000.0, 3000.0]);
    }

    #[test]
    fn without_calibration_points_least_squares_classes() {
        let three: Vec<(f64, MeanCi)> = [0.0, 100.0, 1000.0]
            .iter()
            .map(|&l| (l, MeanCi::of(&[model(l)])))
            .collect();
        let (_, cal, lsq, with, class) = classify(&three, &AnalysisOptions::default());
        assert!(cal.is_none());
        assert!(close(lsq.unwrap().l_sw_us, S, 0.01));
        assert_eq!(with, "least_squares");
        assert_eq!(class, SweepClass::Follows);
    }

    fn gm(fs: &str, l: f64, ops: f64) -> GroupMean {
        GroupMean {
            fs: fs.into(),
            state: State::Fresh,
            workload: "fileserver".into(),
            latency_us: Some(l),
            device_model: None,
            ops_per_s: MeanCi::of(&[ops * 0.995, ops * 1.005]),
            flash: None,
        }
    }

    #[test]
    fn a_synthetic_inversion_is_found_where_it_happens() {
        // A is 20% faster than B down to 3 ms; B is 30% faster from 2 ms down.
        let mut means = Vec::new();
        for l in grid() {
            let b = model(l);
            let a = if l >= 3000.0 { 1.2 * b } else { b / 1.3 };
            means.push(gm("a", l, a));
            means.push(gm("b", l, b));
            // c: always slowest, never inverts.
            means.push(gm("c", l, 0.5 * b / 1.3));
        }
        let inv = inversions(&means, &AnalysisOptions::default());
        assert_eq!(inv.len(), 1, "{inv:?}");
        let i = &inv[0];
        assert_eq!(i.faster_slow_device, "a");
        assert_eq!(i.faster_fast_device, "b");
        assert_eq!((i.from_us, i.to_us), (3000.0, 2000.0));
        assert!(i.confirmed);
    }

    /// With one repetition there is no interval: a swap from noise is reported, unconfirmed,
    /// neither hidden nor counted as clear.
    #[test]
    fn one_repetition_inversions_are_unconfirmed() {
        let one = |fs: &str, l: f64, ops: f64| GroupMean {
            ops_per_s: MeanCi::of(&[ops]),
            ..gm(fs, l, ops)
        };
        let mut means = Vec::new();
        for l in [0.0, 1000.0, 2000.0] {
            // 5% apart, a ahead at 2 ms, b ahead below: what noise of one run can do.
            let a = if l >= 2000.0 { 1.05 } else { 0.95 } * model(l);
            means.push(one("a", l, a));
            means.push(one("b", l, model(l)));
        }
        let inv = inversions(&means, &AnalysisOptions::default());
        assert_eq!(inv.len(), 1, "{inv:?}");
        assert_eq!((inv[0].from_us, inv[0].to_us), (2000.0, 1000.0));
        assert!(!inv[0].confirmed);

        // Two repetitions everywhere but one side of the change has one: unconfirmed too.
        let mut means = Vec::new();
        for l in [0.0, 1000.0, 2000.0] {
            let a = if l >= 2000.0 { 1.2 } else { 1.0 / 1.2 } * model(l);
            means.push(if l == 1000.0 {
                one("a", l, a)
            } else {
                gm("a", l, a)
            });
            means.push(gm("b", l, model(l)));
        }
        let inv = inversions(&means, &AnalysisOptions::default());
        // 2 ms -> 1 ms rests on one repetition; 2 ms -> 0 is the confirmed change, and the
        // same crossing is reported once.
        let got: Vec<(f64, f64, bool)> = inv
            .iter()
            .map(|i| (i.from_us, i.to_us, i.confirmed))
            .collect();
        assert_eq!(got, vec![(2000.0, 0.0, true)]);
    }

    #[test]
    fn ties_are_not_inversions() {
        let mut means = Vec::new();
        for (k, l) in grid().into_iter().enumerate() {
            // 1% apart, alternating: within the 2% margin.
            let f = if k % 2 == 0 { 1.01 } else { 0.99 };
            means.push(gm("a", l, model(l) * f));
            means.push(gm("b", l, model(l)));
        }
        assert!(inversions(&means, &AnalysisOptions::default()).is_empty());
    }
}

//! The analyses of an experiment's samples and cells, as pure functions on fsage-results' plain
//! serde data: no I/O, no formatting, none of the code that measures. [`analyze`] runs them all;
//! each part is also callable on its own. The types they take and give (samples, states, the
//! analysis JSON) are fsage-results', re-exported here, so `fsage_analysis::Analysis` and
//! `fsage_experiment::analysis::Analysis` are the same type.
//!
//! - Aged against fresh ([`aged_vs_fresh`], [`rank_orders`], [`flowop_latencies`]): mean ops/s
//!   with 95% Student-t intervals, slowdown in percent, rank order of the file systems per state
//!   with a flag where it differs from the fresh order, per-flowop p99 and max latency.
//! - Latency sweeps ([`sweep`]): the slippery-slope model fitted from two calibration latencies
//!   and by least squares, the class of each curve and the inversions between file systems.
//! - Latency percentiles per flowop ([`latency_curves`]): p50 to max from the cells' full
//!   workload reports, over the repetitions.
//! - How far from fresh ([`verdicts`]): each aged base image of an experiment against its fresh
//!   base, from their layout measurements.

pub mod latency_curves;
pub mod sweep;
pub mod verdicts;

pub use fsage_results::analysis::*;
pub use sweep::{classify, fit_calibration, fit_least_squares, inversions, sweep_fits};

use std::collections::{BTreeMap, BTreeSet};

/// Key of a latency: µs as an integer number of nanoseconds, so that it sorts and compares.
pub(crate) fn lat_key(l: Option<f64>) -> Option<i64> {
    l.map(|v| (v * 1000.0).round() as i64)
}

/// Key of a device: its model's name (none for a latency or a plain image, which sort first),
/// then its latency ([`lat_key`]).
pub(crate) type DevKey = (Option<String>, Option<i64>);

pub(crate) fn dev_key(model: &Option<String>, l: Option<f64>) -> DevKey {
    (model.clone(), lat_key(l))
}

type GroupKey = (String, DevKey, String, State);

/// Runs every analysis on `samples`.
pub fn analyze(samples: &[Sample], opts: &AnalysisOptions) -> Analysis {
    let mut notes = Vec::new();
    let good: Vec<Sample> = samples
        .iter()
        .filter(|s| {
            let ok = s.ops_per_s.is_finite() && s.ops_per_s >= 0.0;
            if !ok {
                notes.push(format!(
                    "left out: {} {} {} rep {}: ops/s {}",
                    s.fs,
                    s.state.label(),
                    s.workload,
                    s.rep,
                    s.ops_per_s
                ));
            }
            ok
        })
        .cloned()
        .collect();
    let models: BTreeSet<&String> = good
        .iter()
        .filter_map(|s| s.device_model.as_ref())
        .collect();
    for m in models {
        notes.push(format!(
            "{m}: a device model, not a point on the latency axis: its cells are compared aged \
             against fresh and ranked on their own, and left out of the latency sweeps and \
             inversions"
        ));
    }
    // One platform at a time: a ranking or an inversion never puts an emulated cell beside a
    // native one (their file system labels say the platform too).
    let platforms: BTreeSet<&str> = good.iter().map(|s| s.platform.name()).collect();
    if platforms.len() > 1 {
        notes.push(format!(
            "cells of {} platforms ({}): each analysed apart; timings compare only within one \
             platform",
            platforms.len(),
            platforms.iter().copied().collect::<Vec<_>>().join(", ")
        ));
    }
    let mut a = Analysis {
        format: ANALYSIS_FORMAT,
        options: opts.clone(),
        samples: good.len(),
        means: Vec::new(),
        aged_vs_fresh: Vec::new(),
        ranks: Vec::new(),
        flowops: Vec::new(),
        sweeps: Vec::new(),
        inversions: Vec::new(),
        notes,
    };
    for p in platforms {
        let part: Vec<Sample> = good
            .iter()
            .filter(|s| s.platform.name() == p)
            .cloned()
            .collect();
        let means = group_means(&part);
        a.aged_vs_fresh.extend(aged_vs_fresh(&means));
        a.ranks.extend(rank_orders(&means));
        a.flowops.extend(flowop_latencies(&part));
        a.sweeps
            .extend(sweep_fits(&means, opts).into_iter().map(|mut f| {
                f.platform = fsage_sys::PlatformKind::parse(p).unwrap_or_default();
                f
            }));
        a.inversions.extend(inversions(&means, opts));
        a.means.extend(means);
    }
    a
}

/// Mean and interval of ops/s per (workload, device, fs, state), in that order: the device is a
/// latency (or none), then the device models by name.
pub fn group_means(samples: &[Sample]) -> Vec<GroupMean> {
    type Group<'a> = (Option<f64>, Vec<f64>, Vec<&'a FlashCounters>);
    let mut groups: BTreeMap<GroupKey, Group> = BTreeMap::new();
    for s in samples {
        let g = groups
            .entry((
                s.workload.clone(),
                dev_key(&s.device_model, s.latency_us),
                s.fs.clone(),
                s.state.clone(),
            ))
            .or_insert((s.latency_us, Vec::new(), Vec::new()));
        g.1.push(s.ops_per_s);
        g.2.extend(s.flash.as_ref());
    }
    groups
        .into_iter()
        .map(
            |((workload, (model, _), fs, state), (latency_us, xs, flash))| GroupMean {
                fs,
                state,
                workload,
                latency_us,
                device_model: model,
                ops_per_s: MeanCi::of(&xs),
                flash: FlashMeans::of(&flash),
            },
        )
        .collect()
}

fn fresh_of<'a>(means: &'a [GroupMean], g: &GroupMean) -> Option<&'a GroupMean> {
    means.iter().find(|f| {
        f.state.is_fresh()
            && f.fs == g.fs
            && f.workload == g.workload
            && dev_key(&f.device_model, f.latency_us) == dev_key(&g.device_model, g.latency_us)
    })
}

/// Every aged state against the fresh one of the same file system, workload and device (latency
/// or model).
pub fn aged_vs_fresh(means: &[GroupMean]) -> Vec<AgedVsFresh> {
    means
        .iter()
        .filter(|g| !g.state.is_fresh())
        .filter_map(|g| {
            let f = fresh_of(means, g)?;
            let fresh = f.ops_per_s.clone();
            let aged = g.ops_per_s.clone();
            let slowdown_percent = if fresh.mean > 0.0 {
                100.0 * (fresh.mean - aged.mean) / fresh.mean
            } else {
                f64::NAN
            };
            Some(AgedVsFresh {
                fs: g.fs.clone(),
                workload: g.workload.clone(),
                latency_us: g.latency_us,
                device_model: g.device_model.clone(),
                state: g.state.clone(),
                significant: apart(&fresh, &aged),
                fresh,
                aged,
                slowdown_percent,
                fresh_wa: f.flash.as_ref().and_then(|x| x.write_amplification),
                aged_wa: g.flash.as_ref().and_then(|x| x.write_amplification),
            })
        })
        .collect()
}

/// The rank order of the file systems per (workload, device, state); an aged order is compared
/// with the fresh order of the same file systems. A swap against the fresh order counts as a rank
/// change ([`RankOrder::changed`]) only when the swapped pair is apart in both states (see
/// [`apart`]); otherwise it is [`RankOrder::within_noise`].
pub fn rank_orders(means: &[GroupMean]) -> Vec<RankOrder> {
    type Ranked = (Option<f64>, Vec<(String, MeanCi)>);
    let mut by: BTreeMap<(String, DevKey, State), Ranked> = BTreeMap::new();
    for g in means {
        by.entry((
            g.workload.clone(),
            dev_key(&g.device_model, g.latency_us),
            g.state.clone(),
        ))
        .or_insert((g.latency_us, Vec::new()))
        .1
        .push((g.fs.clone(), g.ops_per_s.clone()));
    }
    let order_of = |v: &[(String, MeanCi)]| {
        let mut v = v.to_vec();
        v.sort_by(|a, b| b.1.mean.total_cmp(&a.1.mean).then_with(|| a.0.cmp(&b.0)));
        v.into_iter().map(|(fs, _)| fs).collect::<Vec<_>>()
    };
    let mut out = Vec::new();
    for ((workload, lk, state), (latency_us, v)) in &by {
        if v.len() < 2 {
            continue;
        }
        let order = order_of(v);
        let fresh = by.get(&(workload.clone(), lk.clone(), State::Fresh));
        let fresh_order = match fresh {
            Some((_, fv)) => {
                let members: BTreeSet<&String> = v.iter().map(|(fs, _)| fs).collect();
                order_of(fv)
                    .into_iter()
                    .filter(|fs| members.contains(fs))
                    .collect()
            }
            None => Vec::new(),
        };
        let differs = !state.is_fresh() && fresh_order.len() == order.len() && fresh_order != order;
        let mut changed = false;
        if let (true, Some((_, fv))) = (differs, fresh) {
            let ci = |set: &[(String, MeanCi)], fs: &str| {
                set.iter().find(|(f, _)| f == fs).map(|(_, m)| m.clone())
            };
            let pos = |o: &[String], fs: &str| o.iter().position(|f| f == fs);
            for (i, a) in fresh_order.iter().enumerate() {
                for b in &fresh_order[i + 1..] {
                    // Fresh: a before b. Swapped when the aged order has b before a.
                    if pos(&order, b) > pos(&order, a) {
                        continue;
                    }
                    let (Some(fa), Some(fb), Some(aa), Some(ab)) =
                        (ci(fv, a), ci(fv, b), ci(v, a), ci(v, b))
                    else {
                        continue;
                    };
                    if apart(&fa, &fb) && apart(&aa, &ab) {
                        changed = true;
                    }
                }
            }
        }
        out.push(RankOrder {
            workload: workload.clone(),
            latency_us: *latency_us,
            device_model: lk.0.clone(),
            state: state.clone(),
            order,
            fresh_order,
            changed,
            within_noise: differs && !changed,
        });
    }
    out
}

/// Whether two means are told apart: both have a 95% interval (two or more repetitions) and the
/// intervals do not overlap. One repetition has no interval, so it tells nothing apart.
pub fn apart(a: &MeanCi, b: &MeanCi) -> bool {
    a.ci95.is_some() && b.ci95.is_some() && !a.overlaps(b)
}

/// Per-flowop p99 (mean over repetitions) and max (over all), every state against fresh.
pub fn flowop_latencies(samples: &[Sample]) -> Vec<FlowopCompare> {
    type Key = (String, DevKey, String, String, State);
    let mut acc: BTreeMap<Key, (Option<f64>, Vec<f64>, f64)> = BTreeMap::new();
    for s in samples {
        for f in &s.flowops {
            let e = acc
                .entry((
                    s.workload.clone(),
                    dev_key(&s.device_model, s.latency_us),
                    s.fs.clone(),
                    f.flowop.clone(),
                    s.state.clone(),
                ))
                .or_insert((s.latency_us, Vec::new(), 0.0));
            e.1.push(f.p99_us);
            e.2 = e.2.max(f.max_us);
        }
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let mut out = Vec::new();
    for ((workload, lk, fs, flowop, state), (latency_us, p99s, max)) in &acc {
        if state.is_fresh() {
            continue;
        }
        let fresh = acc.get(&(
            workload.clone(),
            lk.clone(),
            fs.clone(),
            flowop.clone(),
            State::Fresh,
        ));
        let aged_p99 = mean(p99s);
        let fresh_p99 = fresh.map(|f| mean(&f.1));
        let fresh_max = fresh.map(|f| f.2);
        let ratio = |a: f64, f: Option<f64>| f.filter(|f| *f > 0.0).map(|f| a / f);
        out.push(FlowopCompare {
            fs: fs.clone(),
            workload: workload.clone(),
            latency_us: *latency_us,
            device_model: lk.0.clone(),
            state: state.clone(),
            flowop: flowop.clone(),
            fresh_p99_us: fresh_p99,
            aged_p99_us: aged_p99,
            fresh_max_us: fresh_max,
            aged_max_us: *max,
            p99_ratio: ratio(aged_p99, fresh_p99),
            max_ratio: ratio(*max, fresh_max),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(fs: &str, state: State, rep: u32, ops: f64) -> Sample {
        Sample {
            fs: fs.into(),
            state,
            workload: "varmail".into(),
            latency_us: None,
            device_model: None,
            rep,
            ops_per_s: ops,
            flowops: vec![FlowopLatency {
                flowop: "fsync".into(),
                p99_us: ops / 10.0,
                max_us: ops,
            }],
            flash: None,
            platform: Default::default(),
        }
    }
    fn aged() -> State {
        State::Aged {
            profile: "meyer".into(),
            label: "meyer".into(),
        }
    }

    /// A model's cells are compared aged against the fresh cells on the same model (not the
    /// An emulated cell is never ranked beside a native one: each platform's samples are
    /// analysed apart, and a note says so.
    #[test]
    fn platforms_are_analysed_apart() {
        let tcg = |x: Sample| Sample {
            platform: fsage_sys::PlatformKind::Tcg,
            ..x
        };
        let samples = [
            s("ext4", State::Fresh, 0, 1000.0),
            s("xfs", State::Fresh, 0, 900.0),
            tcg(s("f2fs, emulated (TCG)", State::Fresh, 0, 50.0)),
            tcg(s("nilfs2, emulated (TCG)", State::Fresh, 0, 40.0)),
        ];
        let a = analyze(&samples, &AnalysisOptions::default());
        assert_eq!(a.ranks.len(), 2, "{:?}", a.ranks);
        for r in &a.ranks {
            let emulated = r.order.iter().filter(|f| f.contains("TCG")).count();
            assert!(emulated == 0 || emulated == r.order.len(), "{:?}", r.order);
        }
        assert!(a.notes.iter().any(|n| n.contains("each analysed apart")));
        assert_eq!(a.means.len(), 4);
        // One platform alone: no note.
        let a = analyze(&samples[..2], &AnalysisOptions::default());
        assert!(a.notes.is_empty(), "{:?}", a.notes);
    }

    /// plain or fixed-latency ones) and never made a point of a sweep.
    #[test]
    fn a_device_model_is_its_own_device_and_no_sweep_point() {
        let on = |model: Option<&str>, lat: Option<f64>, x: Sample| Sample {
            device_model: model.map(String::from),
            latency_us: lat,
            ..x
        };
        let mut samples = Vec::new();
        for rep in 0..2 {
            let r = rep as f64;
            // Plain and at two latencies: aging costs nothing there.
            for l in [0.0, 1000.0] {
                let ops = 1e6 / (l + 100.0) + r;
                samples.push(on(None, Some(l), s("ext4", State::Fresh, rep, ops)));
                samples.push(on(None, Some(l), s("ext4", aged(), rep, ops)));
            }
            samples.push(s("ext4", State::Fresh, rep, 900.0 + r));
            samples.push(s("ext4", aged(), rep, 900.0 + r));
            // On the disk aging halves the throughput.
            samples.push(on(
                Some("hdd-7200"),
                None,
                s("ext4", State::Fresh, rep, 200.0 + r),
            ));
            samples.push(on(
                Some("hdd-7200"),
                None,
                s("ext4", aged(), rep, 100.0 + r),
            ));
        }
        let a = analyze(&samples, &AnalysisOptions::default());
        // Plain, 0, 1 ms and the model: four devices, two states.
        assert_eq!(a.means.len(), 8);
        let hdd: Vec<&AgedVsFresh> = a
            .aged_vs_fresh
            .iter()
            .filter(|v| v.device_model.as_deref() == Some("hdd-7200"))
            .collect();
        assert_eq!(hdd.len(), 1);
        assert!((hdd[0].slowdown_percent - 49.9).abs() < 0.2, "{:?}", hdd[0]);
        assert_eq!(hdd[0].latency_us, None);
        let plain = a
            .aged_vs_fresh
            .iter()
            .find(|v| v.device_model.is_none() && v.latency_us.is_none())
            .unwrap();
        assert!(plain.slowdown_percent.abs() < 1e-9, "{plain:?}");
        // The sweeps hold the two latencies only.
        assert_eq!(a.sweeps.len(), 2, "{:?}", a.sweeps);
        for sw in &a.sweeps {
            let ls: Vec<f64> = sw.points.iter().map(|p| p.latency_us).collect();
            assert_eq!(ls, vec![0.0, 1000.0]);
        }
        assert_eq!(
            a.notes
                .iter()
                .filter(|n| n.contains("not a point on the latency axis"))
                .count(),
            1
        );
    }

    /// One repetition has no interval: however far apart the means, no verdict about noise.
    #[test]
    fn one_repetition_gives_no_verdict_about_noise() {
        let samples = vec![
            s("ext4", State::Fresh, 0, 1000.0),
            s("ext4", aged(), 0, 100.0),
        ];
        let a = analyze(&samples, &AnalysisOptions::default());
        let e = &a.aged_vs_fresh[0];
        assert!((e.slowdown_percent - 90.0).abs() < 1e-9);
        assert!(e.no_interval());
        assert!(!e.significant, "one repetition cannot be beyond noise");
    }

    #[test]
    fn slowdown_rank_flip_and_flowops() {
        let samples = vec![
            s("ext4", State::Fresh, 0, 1000.0),
            s("ext4", State::Fresh, 1, 1002.0),
            s("ext4", aged(), 0, 500.0),
            s("ext4", aged(), 1, 502.0),
            s("xfs", State::Fresh, 0, 900.0),
            s("xfs", State::Fresh, 1, 902.0),
            s("xfs", aged(), 0, 880.0),
            s("xfs", aged(), 1, 882.0),
        ];
        let a = analyze(&samples, &AnalysisOptions::default());
        let e = a.aged_vs_fresh.iter().find(|r| r.fs == "ext4").unwrap();
        assert!((e.slowdown_percent - 100.0 * (1001.0 - 501.0) / 1001.0).abs() < 1e-9);
        assert!(e.significant);
        let x = a.aged_vs_fresh.iter().find(|r| r.fs == "xfs").unwrap();
        assert!((x.slowdown_percent - 100.0 * 20.0 / 901.0).abs() < 1e-9);
        assert!(!e.no_interval());
        let fresh = a.ranks.iter().find(|r| r.state.is_fresh()).unwrap();
        assert_eq!(fresh.order, vec!["ext4", "xfs"]);
        assert!(!fresh.changed);
        let r = a.ranks.iter().find(|r| r.state == aged()).unwrap();
        assert_eq!(r.order, vec!["xfs", "ext4"]);
        assert_eq!(r.fresh_order, vec!["ext4", "xfs"]);
        assert!(r.changed, "the aged order flips");
        let f = a.flowops.iter().find(|f| f.fs == "ext4").unwrap();
        assert!((f.aged_p99_us - 50.1).abs() < 1e-9);
        assert_eq!(f.fresh_max_us, Some(1002.0));
        assert_eq!(f.aged_max_us, 502.0);
        assert!((f.p99_ratio.unwrap() - 50.1 / 100.1).abs() < 1e-9);
    }

    #[test]
    fn bad_samples_are_left_out_with_a_note() {
        let mut x = s("ext4", State::Fresh, 0, f64::NAN);
        x.flowops.clear();
        let a = analyze(&[x, s("ext4", State::Fresh, 1, 5.0)], &Default::default());
        assert_eq!(a.samples, 1);
        assert_eq!(a.notes.len(), 1);
    }

    fn lat_means(rows: &[(&str, State, &[f64])]) -> Vec<GroupMean> {
        let samples: Vec<Sample> = rows
            .iter()
            .flat_map(|(fs, st, xs)| {
                xs.iter()
                    .enumerate()
                    .map(|(r, x)| s(fs, st.clone(), r as u32, *x))
                    .collect::<Vec<_>>()
            })
            .collect();
        group_means(&samples)
    }

    /// A swap whose pair overlaps in the aged state, or in the fresh state, or rests on one
    /// repetition, is within noise and not flagged; a swap apart in both states is.
    #[test]
    fn a_rank_change_is_flagged_only_when_the_swapped_pair_is_apart() {
        let aged_of = |rs: &[RankOrder]| rs.iter().find(|r| r.state == aged()).unwrap().clone();
        // Apart in both states: flagged.
        let r = aged_of(&rank_orders(&lat_means(&[
            ("ext4", State::Fresh, &[1000.0, 1002.0]),
            ("xfs", State::Fresh, &[900.0, 902.0]),
            ("ext4", aged(), &[500.0, 502.0]),
            ("xfs", aged(), &[880.0, 882.0]),
        ])));
        assert!(r.changed && !r.within_noise, "{r:?}");
        // Aged means swapped but the aged intervals overlap (910 ± wide against 900 ± wide).
        let r = aged_of(&rank_orders(&lat_means(&[
            ("ext4", State::Fresh, &[1000.0, 1002.0]),
            ("xfs", State::Fresh, &[900.0, 902.0]),
            ("ext4", aged(), &[850.0, 950.0]),
            ("xfs", aged(), &[860.0, 960.0]),
        ])));
        assert_eq!(r.order, vec!["xfs", "ext4"]);
        assert!(!r.changed && r.within_noise, "{r:?}");
        // Apart when aged, but the fresh order was itself within noise.
        let r = aged_of(&rank_orders(&lat_means(&[
            ("ext4", State::Fresh, &[950.0, 1050.0]),
            ("xfs", State::Fresh, &[940.0, 1040.0]),
            ("ext4", aged(), &[500.0, 502.0]),
            ("xfs", aged(), &[880.0, 882.0]),
        ])));
        assert!(!r.changed && r.within_noise, "{r:?}");
        // One repetition: no interval, so no confirmed change.
        let r = aged_of(&rank_orders(&lat_means(&[
            ("ext4", State::Fresh, &[1000.0]),
            ("xfs", State::Fresh, &[900.0]),
            ("ext4", aged(), &[500.0]),
            ("xfs", aged(), &[880.0]),
        ])));
        assert!(!r.changed && r.within_noise, "{r:?}");
        // Three file systems: the clear swap is of ext4 and btrfs, xfs stays in between.
        let r = aged_of(&rank_orders(&lat_means(&[
            ("ext4", State::Fresh, &[1000.0, 1001.0]),
            ("xfs", State::Fresh, &[800.0, 801.0]),
            ("btrfs", State::Fresh, &[600.0, 601.0]),
            ("ext4", aged(), &[500.0, 501.0]),
            ("xfs", aged(), &[800.0, 801.0]),
            ("btrfs", aged(), &[900.0, 901.0]),
        ])));
        assert_eq!(r.order, vec!["btrfs", "xfs", "ext4"]);
        assert!(r.changed, "{r:?}");
        // Same order: neither.
        let r = aged_of(&rank_orders(&lat_means(&[
            ("ext4", State::Fresh, &[1000.0, 1002.0]),
            ("xfs", State::Fresh, &[900.0, 902.0]),
            ("ext4", aged(), &[950.0, 952.0]),
            ("xfs", aged(), &[880.0, 882.0]),
        ])));
        assert!(!r.changed && !r.within_noise, "{r:?}");
    }

    #[test]
    fn a_drive_on_another_state_is_compared_with_fresh_and_its_counters_averaged() {
        let flash = |host: u64, programs: u64| FlashCounters {
            host_pages: host,
            programs,
            gc_copies: programs - host,
            erases: 10,
            gc_s: 1.5,
            free_blocks: 4,
        };
        let on = |state: State, ops: f64, host: u64, programs: u64| Sample {
            device_model: Some("ssd".into()),
            flash: Some(flash(host, programs)),
            ..s("ext4", state, 0, ops)
        };
        let crossed = State::OnDrive {
            fs: Box::new(State::Fresh),
            drive: "aged.meyer".into(),
        };
        let samples = [
            on(State::Fresh, 1000.0, 100, 100),
            on(State::Fresh, 1000.0, 300, 300),
            on(crossed.clone(), 250.0, 100, 250),
            on(crossed.clone(), 250.0, 100, 350),
        ];
        let a = analyze(&samples, &AnalysisOptions::default());
        let g = a.means.iter().find(|g| g.state == crossed).unwrap();
        let f = g.flash.as_ref().unwrap();
        // Pages over pages: (250 + 350) / (100 + 100).
        assert_eq!(f.write_amplification, Some(3.0));
        assert_eq!(f.gc_copies, 200.0);
        let r = &a.aged_vs_fresh[0];
        assert_eq!(r.state, crossed);
        assert_eq!(crossed.label(), "fresh on drive aged.meyer");
        assert_eq!((r.fresh_wa, r.aged_wa), (Some(1.0), Some(3.0)));
        assert!((r.slowdown_percent - 75.0).abs() < 1e-9, "{r:?}");
        // No counters, no drive figures.
        let plain = analyze(&[s("ext4", State::Fresh, 0, 1.0)], &Default::default());
        assert!(plain.means[0].flash.is_none());
    }
}

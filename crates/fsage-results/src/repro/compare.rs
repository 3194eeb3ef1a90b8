//! fsage's number beside each published one: the difference and whether it is within the aim.
//!
//! The aims: a Geriatrix loss within 10 percentage points of the published loss (or its range);
//! a Conway aged/clean ratio within 25% of the published ratio (the ;login: text and the
//! authors' own data differ by up to 15% at the same point: 2x against 1.73x at 100 pulls);
//! absolute grep times and lock waits have no numeric aim (a scaled history and a modeled disk
//! are compared by shape).

use crate::analysis::Analysis;
use crate::git::GitSeries;
use crate::repro::published::PublishedPoint;
use crate::repro::record::{GitRun, Record};
use serde::{Deserialize, Serialize};

/// How close fsage's number must come to the paper's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Aim {
    /// Within this many percentage points (of a loss).
    Points { points: f64 },
    /// Within this fraction of the published value (of a ratio).
    Relative { fraction: f64 },
    /// No numeric aim.
    None,
}

impl Aim {
    /// The aim for numbers in `unit`.
    pub fn for_unit(unit: &str) -> Aim {
        match unit {
            "% loss" => Aim::Points { points: 10.0 },
            "x" => Aim::Relative { fraction: 0.25 },
            _ => Aim::None,
        }
    }
    /// `within 10 points`, `within 25%`, `none`.
    pub fn text(&self) -> String {
        match self {
            Aim::Points { points } => format!("within {points} points"),
            Aim::Relative { fraction } => format!("within {:.0}%", fraction * 100.0),
            Aim::None => "no numeric aim".into(),
        }
    }
}

/// One published point and fsage's number for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointComparison {
    pub published: PublishedPoint,
    /// fsage's number in the same unit, when the run has it.
    pub fsage: Option<f64>,
    /// Where fsage's number was read when not exactly at the published x (`pull 7747`).
    pub fsage_at: Option<String>,
    /// Why there is no number (not run yet, beyond the replayed history).
    pub missing: Option<String>,
    /// fsage minus the nearest end of the published range: percentage points for a loss, percent
    /// of the published value for a ratio; 0 inside the range.
    pub difference: Option<f64>,
    /// `pp` or `%`.
    pub difference_unit: String,
    pub aim: Aim,
    pub within_aim: Option<bool>,
}

/// A reproduction's points, compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub record: Record,
    pub points: Vec<PointComparison>,
}

impl Comparison {
    /// Points with a number, and of those, within the aim.
    pub fn counts(&self) -> (usize, usize, usize) {
        let with = self.points.iter().filter(|p| p.fsage.is_some()).count();
        let within = self
            .points
            .iter()
            .filter(|p| p.within_aim == Some(true))
            .count();
        (self.points.len(), with, within)
    }
}

/// Whether a device name of a result (`crucial-m4-64g@1111MiB`, a scaled model's longer name)
/// is the published device `want`.
pub fn same_device(have: &str, want: &str) -> bool {
    have == want
        || have
            .strip_prefix(want)
            .is_some_and(|rest| rest.starts_with(['@', ' ', '(']))
}

/// The difference of `v` from `p`'s range, in its unit's terms, and whether it meets `aim`.
pub fn difference(p: &PublishedPoint, v: f64, aim: Aim) -> (f64, Option<bool>) {
    let nearest = if v < p.low {
        p.low
    } else {
        match p.high {
            Some(h) if v > h => h,
            _ => v,
        }
    };
    match aim {
        Aim::Points { points } => {
            let d = v - nearest;
            (d, Some(d.abs() <= points + 1e-9))
        }
        Aim::Relative { fraction } => {
            let d = if nearest == 0.0 {
                0.0
            } else {
                (v - nearest) / nearest * 100.0
            };
            (d, Some(d.abs() <= fraction * 100.0 + 1e-9))
        }
        Aim::None => {
            let d = if nearest == 0.0 {
                0.0
            } else {
                (v - nearest) / nearest * 100.0
            };
            (d, None)
        }
    }
}

/// One cell's lock contention, for the lock-wait points (the slippery slope's Figure 8).
#[derive(Debug, Clone)]
pub struct LockCell {
    pub fs: String,
    /// The added device latency, in µs (`None`: no slow device, or a model).
    pub latency_us: Option<f64>,
    /// `emulated (TCG)` or `VM (KVM)` when it ran in a guest.
    pub platform: Option<String>,
    pub report: crate::locks::LockReport,
}

impl LockCell {
    /// The cell's lock report, if its workload recorded one.
    pub fn of(c: &crate::experiment::result::CellResult) -> Option<LockCell> {
        let report = c.workload_report.as_ref()?.get("lock_contention")?.clone();
        let report = serde_json::from_value(report).ok()?;
        let s = c.samples.first();
        Some(LockCell {
            fs: c.cell.fs.kind.clone(),
            latency_us: s.and_then(|s| s.latency_us),
            platform: s
                .and_then(|s| crate::experiment::result::platform_label(s.platform))
                .map(String::from),
            report,
        })
    }
}

/// Compares every published point of `record`'s reproduction with what `analyses` (its
/// experiment's), `git` (its series, by run name) and `locks` (its cells' lock contention)
/// hold.
pub fn compare(
    record: &Record,
    points: &[PublishedPoint],
    analyses: &[&Analysis],
    git: &[(&str, &GitSeries)],
    locks: &[LockCell],
) -> Comparison {
    let published_as = crate::repro::catalog::find(&record.name)
        .map_or(record.name.as_str(), |r| r.published_as());
    let out = points
        .iter()
        .filter(|p| p.reproduction == published_as)
        .map(|p| {
            let aim = Aim::for_unit(&p.unit);
            let (fsage, fsage_at, missing) = match p.unit.as_str() {
                "% loss" => loss(p, analyses),
                "x" | "s/GiB" => from_git(p, record, git),
                "s wait in 60 s" => lock_wait(p, locks),
                _ => (
                    None,
                    None,
                    Some("fsage does not make this measurement".to_string()),
                ),
            };
            let (difference, within_aim) = match fsage {
                Some(v) => {
                    let (d, w) = difference(p, v, aim);
                    (Some(d), w)
                }
                None => (None, None),
            };
            PointComparison {
                published: p.clone(),
                fsage,
                fsage_at,
                missing,
                difference,
                difference_unit: if matches!(aim, Aim::Points { .. }) {
                    "pp".into()
                } else {
                    "%".into()
                },
                aim,
                within_aim,
            }
        })
        .collect();
    Comparison {
        record: record.clone(),
        points: out,
    }
}

type Found = (Option<f64>, Option<String>, Option<String>);

/// A loss: the experiment's aged-against-fresh slowdown of the file system on the device under
/// the workload (x), for the aged state (not a state on another drive).
fn loss(p: &PublishedPoint, analyses: &[&Analysis]) -> Found {
    if p.fs == "f2fs" {
        return (
            None,
            None,
            Some("not run: this host's kernel has no f2fs".into()),
        );
    }
    let hits: Vec<_> = analyses
        .iter()
        .flat_map(|a| &a.aged_vs_fresh)
        .filter(|c| {
            c.fs == p.fs
                && c.workload == p.x
                && matches!(c.state, crate::analysis::State::Aged { .. })
                && c.device_model
                    .as_deref()
                    .is_some_and(|d| same_device(d, &p.device))
        })
        .collect();
    // Where cells ran by several procedures (how the image reached the drive), the paper's own.
    let hit = hits
        .iter()
        .find(|c| {
            c.device_model
                .as_deref()
                .is_some_and(|d| d.contains(crate::repro::catalog::PAPER_PLACEMENT))
        })
        .or(hits.first());
    match hit {
        Some(c) => (Some(c.slowdown_percent), None, None),
        None => (None, None, Some("not run yet".into())),
    }
}

/// A lock-wait point (`i_mutex_dir_key top instance` or `... 5 instances total` at `10 ms`):
/// the wait on the directory `i_rwsem` instances fsage found in the cell of the file system at
/// that latency, the top one or the top five summed, per 60 s of recording.
fn lock_wait(p: &PublishedPoint, locks: &[LockCell]) -> Found {
    let Some(ms) =
        p.x.strip_suffix(" ms")
            .and_then(|m| m.trim().parse::<f64>().ok())
    else {
        return (None, None, Some(format!("x {:?} is not a latency", p.x)));
    };
    let Some(c) = locks
        .iter()
        .find(|c| c.fs == p.fs && (c.latency_us.unwrap_or(f64::NAN) - ms * 1000.0).abs() < 0.5)
    else {
        return (None, None, Some("not run yet".into()));
    };
    let n = if p.series.contains("top instance") {
        1
    } else {
        p.series
            .split_whitespace()
            .find_map(|w| w.parse::<usize>().ok())
            .unwrap_or(1)
    };
    let r = &c.report;
    if r.recorded_s <= 0.0 {
        return (None, None, Some("nothing recorded".into()));
    }
    let dirs: Vec<_> = r.named(crate::locks::DIR_RWSEM).take(n).collect();
    let wait_s = dirs.iter().map(|l| l.wait_total_ns).sum::<u64>() as f64 / 1e9;
    let per_60 = wait_s * 60.0 / r.recorded_s;
    let at = format!(
        "{} directory i_rwsem instance{} over {:.1} s recorded, per 60 s{}{}",
        dirs.len(),
        if dirs.len() == 1 { "" } else { "s" },
        r.recorded_s,
        c.platform
            .as_deref()
            .map_or(String::new(), |p| format!("; {p}: the waits are emulated")),
        if r.lost_events > 0 {
            format!("; {} trace events lost: a lower bound", r.lost_events)
        } else {
            String::new()
        }
    );
    (Some(per_60), Some(at), None)
}

/// Whether a run that `answers` (`cold`, `warm 768 MB`, `aged/clean 4 GB partition`) gives the
/// published series `series`: by its start or its end, a partition run every series of its
/// partition (`clean 4 GB partition` as well as the ratio).
fn answers(answers: &str, series: &str) -> bool {
    let key = answers.strip_prefix("aged/clean ").unwrap_or(answers);
    series.starts_with(answers) || series.ends_with(answers) || series.ends_with(key)
}

/// The Git run of `record` that answers `p`: the first of its file system whose `answers`
/// matches the point's series (or that answers none, then every series of its file system).
/// The report pairs a run's line with the published series it answers by this.
pub fn answering_run<'a>(record: &'a Record, p: &PublishedPoint) -> Option<&'a GitRun> {
    record
        .git_runs
        .iter()
        .find(|r| r.fs == p.fs && r.answers.as_deref().is_none_or(|a| answers(a, &p.series)))
}

/// A ratio or a grep time from the Git series that answers `p`: the run of its file system
/// whose `answers` matches the point's series (or any of the file system's when it has none),
/// at the measured pull nearest the published one.
fn from_git(p: &PublishedPoint, record: &Record, git: &[(&str, &GitSeries)]) -> Found {
    let Some(run) = answering_run(record, p) else {
        return (
            None,
            None,
            Some("no run of this reproduction answers it".into()),
        );
    };
    let Some(s) = git.iter().find(|(n, _)| *n == run.name).map(|(_, s)| *s) else {
        return (None, None, Some("not run yet".into()));
    };
    let Some(model) = s
        .model_names()
        .into_iter()
        .find(|m| same_device(m, &p.device))
        .map(str::to_string)
    else {
        return (
            None,
            None,
            Some(format!("the series was not costed on {}", p.device)),
        );
    };
    let value = |r: &crate::git::GitRow| -> Option<f64> {
        if p.unit == "x" {
            r.modeled_ratio_on(&model)
        } else if p.series.split_whitespace().any(|w| w == "clean") {
            r.clean.modeled_on(&model).map(|m| m.seconds_per_gib)
        } else {
            r.aged.modeled_on(&model).map(|m| m.seconds_per_gib)
        }
    };
    let Some(last) = s.rows.last() else {
        return (None, None, Some("not measured yet".into()));
    };
    // Partition sizes (Figure 6) are compared at the end of the history.
    if run
        .answers
        .as_deref()
        .is_some_and(|a| a.contains("partition"))
    {
        return match value(last) {
            Some(v) => (
                Some(v),
                Some(format!("pull {} (the last)", last.pulls)),
                None,
            ),
            None => (None, None, Some("no modeled ratio at the last pull".into())),
        };
    }
    let Some(x) = p.x_number() else {
        return (None, None, Some(format!("x {:?} is not a pull count", p.x)));
    };
    // fsage counts pulls done (its first measurement is after pull 1, which Conway's scripts
    // number 0): the nearest measurement within half a step and a tenth of the pull count (at
    // least one pull), so that a coarser series does not stand in a far pull for a near one.
    let tolerance = (s.every as f64 / 2.0).min(x / 10.0).max(1.0);
    let near = s
        .rows
        .iter()
        .min_by(|a, b| {
            (a.pulls as f64 - x)
                .abs()
                .total_cmp(&(b.pulls as f64 - x).abs())
        })
        .filter(|r| (r.pulls as f64 - x).abs() <= tolerance);
    match near {
        Some(r) => match value(r) {
            Some(v) => (
                Some(v),
                (r.pulls as f64 != x).then(|| format!("pull {}", r.pulls)),
                None,
            ),
            None => (
                None,
                None,
                Some(format!("no modeled value at pull {}", r.pulls)),
            ),
        },
        None if x > s.commits_total as f64 => (
            None,
            None,
            Some(format!(
                "beyond the replayed history ({} commits)",
                s.commits_total
            )),
        ),
        None if x > last.pulls as f64 => (
            None,
            None,
            Some(format!(
                "not reached yet (the run is at pull {})",
                last.pulls
            )),
        ),
        None => (
            None,
            None,
            Some(format!(
                "not measured near pull {x} (every {} pulls)",
                s.every
            )),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(low: f64, high: Option<f64>, unit: &str) -> PublishedPoint {
        PublishedPoint {
            reproduction: "r".into(),
            paper: "p".into(),
            figure: "f".into(),
            fs: "ext4".into(),
            device: "d".into(),
            series: "s".into(),
            x: "fileserver".into(),
            low,
            high,
            unit: unit.into(),
            kind: "text".into(),
            source: "src".into(),
            note: String::new(),
        }
    }

    #[test]
    fn differences_are_from_the_nearest_end_of_the_range_in_the_units_aim() {
        let p = point(76.0, Some(78.0), "% loss");
        let aim = Aim::for_unit("% loss");
        assert_eq!(difference(&p, 77.0, aim), (0.0, Some(true)));
        assert_eq!(difference(&p, 82.0, aim), (4.0, Some(true)));
        assert_eq!(difference(&p, 63.0, aim), (-13.0, Some(false)));
        let r = point(2.0, Some(2.0), "x");
        let aim = Aim::for_unit("x");
        let (d, w) = difference(&r, 2.4, aim);
        assert!((d - 20.0).abs() < 1e-9 && w == Some(true));
        assert_eq!(difference(&r, 1.0, aim).1, Some(false));
        let open = point(50.0, None, "s wait in 60 s");
        assert_eq!(difference(&open, 70.0, Aim::None), (0.0, None));
        assert!(answers("cold", "cold aged") && answers("cold", "cold clean"));
        assert!(answers("warm 768 MB", "warm 768 MB") && !answers("warm 768 MB", "cold aged"));
        let small = "aged/clean 4 GB partition";
        assert!(answers(small, small) && answers(small, "clean 4 GB partition"));
        assert!(!answers(small, "clean 20 GB partition"));
        assert!(!answers(small, "aged/clean 20 GB partition"));
        assert!(same_device("crucial-m4-64g@1111MiB", "crucial-m4-64g"));
        assert!(!same_device("crucial-m4-64gx", "crucial-m4-64g"));
    }

    #[test]
    fn lock_waits_are_the_directory_locks_per_60_s_at_the_points_latency() {
        use crate::locks::{LockInstance, LockReport, DIR_RWSEM};
        let inst = |ns: u64, name: Option<&str>| LockInstance {
            addr: format!("{ns:016x}"),
            kind: "rwsem".into(),
            name: name.map(String::from),
            identified_by: None,
            waits: 1,
            wait_total_ns: ns,
            wait_max_ns: ns,
            write_waits: 1,
            callers: Vec::new(),
        };
        let s = 1_000_000_000;
        // The segment lock waits most but is no directory lock; six directory instances.
        let mut locks = vec![inst(100 * s, None)];
        locks.extend([6, 5, 4, 3, 2, 1].map(|k| inst(k * s, Some(DIR_RWSEM))));
        let cell = |lat: f64| LockCell {
            fs: "nilfs2".into(),
            latency_us: Some(lat),
            platform: Some("emulated (TCG)".into()),
            report: LockReport {
                source: String::new(),
                kernel: String::new(),
                recorded_s: 30.0,
                waits: 7,
                wait_total_ns: 121 * s,
                unfinished: 0,
                lost_events: 0,
                locks: locks.clone(),
                others: 0,
                others_wait_ns: 0,
            },
        };
        let cells = [cell(0.0), cell(10_000.0)];
        let mut top = point(3.0, Some(3.0), "s wait in 60 s");
        top.fs = "nilfs2".into();
        top.series = "i_mutex_dir_key top instance".into();
        top.x = "10 ms".into();
        let (v, at, missing) = lock_wait(&top, &cells);
        assert_eq!(v, Some(12.0), "6 s in 30 s is 12 s per 60 s");
        assert!(
            at.unwrap().contains("emulated"),
            "the timings are said to be emulated"
        );
        assert!(missing.is_none());
        let mut five = top.clone();
        five.series = "i_mutex_dir_key 5 instances total".into();
        five.x = "0 ms".into();
        assert_eq!(lock_wait(&five, &cells).0, Some(40.0), "(6+5+4+3+2) x 2");
        five.x = "1 ms".into();
        assert_eq!(lock_wait(&five, &cells).2.as_deref(), Some("not run yet"));
    }
}

//! A fresh run: the plan checked and built at the target's capacity, the target checked (empty,
//! writable, enough inodes), the warnings a long or partial run deserves, and the run's files.

use super::checks::{check_block_size, check_fullness, plan, unmet_summary};
use super::{absolute, input, AgeError, AgeObserver, AgeRequest, Level, Prepared, Result};
use fsage_exec::preflight;
use fsage_exec::{OpLog, RunMeta, StopConditions, WriteMode};
use fsage_plan::PlanConfig;
use fsage_profile::{human_bytes, Profile};
use fsage_sys::with_suffix;
use std::time::Duration;

pub(super) fn fresh(
    req: &AgeRequest,
    profile: Profile,
    obs: &mut dyn AgeObserver,
) -> Result<Prepared> {
    let fullness = req.fullness.unwrap_or(profile.fullness.get());
    check_fullness(fullness)?;
    if !req.dry_run {
        let target = req
            .target
            .as_deref()
            .ok_or_else(|| input("a target directory is needed (or a dry run with a capacity)"))?;
        preflight::prepare_target(target, req.force)?;
        preflight::check_writable(target)?;
    }
    let fs = match &req.target {
        Some(t) if t.exists() => Some(fsage_sys::fs_stat(t).map_err(|err| AgeError::Open {
            path: t.clone(),
            err,
        })?),
        _ => None,
    };
    // nilfs2 has no fallocate: a run not told otherwise writes data there, and one told to
    // fallocate is refused before it plans.
    // A dry run of a new file system has no target: its kind says.
    let magic = fs
        .map(|st| st.magic)
        .or(req.new_fs.as_ref().map(|f| f.kind.statfs_magic()));
    // A drive ages by what reaches it: blocks given by fallocate are never written, and would
    // leave an SSD model's drive nearly erased. So a run aging a drive writes data unless told.
    let ages_drive = req.device_model.is_some();
    let mode = match (req.write_mode, magic) {
        (Some(m), Some(magic)) => {
            m.check_for(magic)?;
            m
        }
        (Some(m), None) => m,
        (None, _) if ages_drive => WriteMode::Write,
        (None, Some(magic)) => WriteMode::default_for(magic),
        (None, None) => WriteMode::Fallocate,
    };
    let data = req.data.unwrap_or_default();
    if mode == WriteMode::Fallocate && !data.is_incompressible() {
        return Err(input(format!(
            "--data {data}: fallocate writes no data; give --write-mode write"
        )));
    }
    let capacity = match (req.capacity, fs) {
        (Some(c), _) => c,
        (None, Some(st)) => st.size,
        (None, None) => {
            return Err(input(
                "a capacity is needed: there is no target file system to take it from",
            ))
        }
    };
    let block_size = match (req.block_size, fs) {
        (Some(b), _) => b,
        (None, Some(st)) => st.block_size,
        (None, None) => 4096,
    };
    check_block_size(block_size)?;
    if let (Some(st), false) = (fs, req.dry_run) {
        if capacity > st.size {
            obs.notice(
                Level::Warning,
                &format!(
                    "the capacity {} is larger than the file system ({}); the run will meet a full \
                     file system and adapt",
                    human_bytes(capacity),
                    human_bytes(st.size)
                ),
            );
        }
    }
    let cfg = PlanConfig {
        capacity,
        fullness,
        block_size,
        seed: req.seed.unwrap_or(1),
        exact_sizes: req.exact_sizes,
    };
    let planner = plan(&profile, cfg)?;
    let meta = RunMeta::new(&profile, String::new(), String::new());
    let unmet = planner.unmeetable_bins();
    let (unmet_share, unmet_labels) = unmet_summary(&profile, &planner);
    let t = planner.total();
    // The bytes a run writes take a simulation of its first ticks: only worked out when an
    // overwrite limit is to bound a run that would otherwise take more than a day.
    let unbounded = preflight::estimate_seconds(t, req.dry_run) > 86400.0;
    let bytes = if unbounded && req.stop.max_overwrites.is_some() {
        planner.expected_bytes_written()
    } else {
        0
    };
    let secs = bounded_seconds(t, bytes, capacity, &req.stop, req.dry_run);
    if secs > 86400.0 {
        obs.notice(
            Level::Warning,
            &format!(
                "T = {t} ticks (about {} written) would take about {} at the measured {} speed; \
                 bound the run with a max-ops, max-time or max-overwrites limit, or give a \
                 smaller capacity",
                human_bytes(if bytes > 0 {
                    bytes
                } else {
                    planner.expected_bytes_written()
                }),
                fsage_profile::human_duration(secs),
                if req.dry_run {
                    "dry-run"
                } else {
                    "in-memory ext4"
                }
            ),
        );
    }
    if unmet_share > 0.005 {
        obs.notice(
            Level::Warning,
            &format!(
                "at this capacity the run makes no files in size bins holding {:.2}% of the \
                 profile's files ({unmet_labels}); the size histogram will miss them. A larger \
                 capacity includes them",
                100.0 * unmet_share
            ),
        );
    }
    if let (false, Some(target)) = (req.dry_run, req.target.as_deref()) {
        let needed =
            planner.tree().len() as u64 + planner.rapid_files().max(planner.steady_state());
        preflight::check_inodes(target, planner.tree().len() as u64 - 1, needed)?;
    }
    obs.notice(
        Level::Info,
        &format!(
            "profile {}, capacity {}, fullness {fullness}, seed {}; {} directories; rapid phase: \
             {} files; T = {} ticks (convergence theorem)",
            profile.name,
            human_bytes(capacity),
            cfg.seed,
            planner.tree().len() - 1,
            planner.rapid_files(),
            planner.total()
        ),
    );
    for &(d, _, made) in &planner.tree().adjusted {
        obs.notice(
            Level::Info,
            &format!(
                "note: the profile has no directories at depth {d} but has files deeper; made {made}"
            ),
        );
    }
    for u in &unmet {
        obs.notice(
            Level::Info,
            &format!(
                "note: size bin {} (target {:.4}% of files) cannot be met at this capacity: {}",
                meta.size_labels[u.bin],
                100.0 * u.target_fraction,
                u.reason
            ),
        );
    }
    let target = req.target.as_deref().map(absolute);
    let state = match (&req.state, &target, req.dry_run) {
        (Some(s), _, _) => Some(absolute(s)),
        (None, Some(t), false) => Some(with_suffix(t, ".fsage-state")),
        _ => None,
    };
    let op_log = req
        .op_log
        .as_deref()
        .map(|p| {
            OpLog::create(p).map_err(|err| AgeError::Open {
                path: p.to_path_buf(),
                err,
            })
        })
        .transpose()?;
    if req.write_mode.is_none() && mode != WriteMode::Fallocate && !req.dry_run {
        let kind = magic.and_then(fsage_sys::FsKind::by_magic);
        let why = match kind {
            _ if ages_drive => "the drive ages by what is written: files get their blocks by \
                 writes (--write-mode write; --write-mode fallocate would leave it nearly erased)"
                .to_string(),
            Some(k) if !k.supports_fallocate() => {
                format!(
                    "{k} has no fallocate: files get their blocks by writes (--write-mode write)"
                )
            }
            Some(k) => format!(
                "{k} ages by what is written (its fallocate reserves blocks without writing its \
                 log): files get their blocks by writes (--write-mode write)"
            ),
            None => "files get their blocks by writes (--write-mode write)".to_string(),
        };
        obs.notice(Level::Info, &why);
    }
    Ok(Prepared {
        profile,
        planner,
        target: if req.dry_run { None } else { target },
        mode,
        data,
        op_log,
        op_log_path: req.op_log.as_deref().map(absolute),
        state,
        elapsed_before: Duration::ZERO,
        resumed: false,
        image: None,
        mounted: None,
        saved_stop: None,
        json: None,
    })
}

/// How long a run of `t` ticks (writing about `bytes` at `capacity`) takes at the measured speeds,
/// once the stopping conditions given bound it: the warning about a run longer than a day is
/// only for runs nothing bounds.
fn bounded_seconds(t: u64, bytes: u64, capacity: u64, stop: &StopConditions, dry_run: bool) -> f64 {
    let mut ticks = t as f64;
    if let Some(n) = stop.max_ops {
        ticks = ticks.min(n as f64);
    }
    if let (Some(x), true) = (stop.max_overwrites, bytes > 0) {
        // Bytes are written about evenly over the run.
        ticks = ticks.min(t as f64 * x * capacity as f64 / bytes as f64);
    }
    let mut secs = preflight::estimate_seconds(ticks as u64, dry_run);
    if let Some(d) = stop.max_time {
        secs = secs.min(d.as_secs_f64());
    }
    secs
}

#[cfg(test)]
mod bound_tests {
    use super::*;

    #[test]
    fn a_bounded_run_is_not_warned_about() {
        let t = 10_000_000_000; // hours at any speed
        let none = StopConditions::default();
        assert!(bounded_seconds(t, 1 << 40, 1 << 30, &none, false) > 86400.0);
        let ops = StopConditions {
            max_ops: Some(1_000_000),
            ..Default::default()
        };
        assert!(bounded_seconds(t, 1 << 40, 1 << 30, &ops, false) < 86400.0);
        let time = StopConditions {
            max_time: Some(Duration::from_secs(3600)),
            ..Default::default()
        };
        assert_eq!(bounded_seconds(t, 1 << 40, 1 << 30, &time, false), 3600.0);
        let ow = StopConditions {
            max_overwrites: Some(1.0),
            ..Default::default()
        };
        // 1 overwrite of 1 GiB of the 1 TiB the run would write: 1/1024 of its ticks.
        let full = bounded_seconds(t, 1 << 40, 1 << 30, &none, false);
        let one = bounded_seconds(t, 1 << 40, 1 << 30, &ow, false);
        assert!((one * 1024.0 / full - 1.0).abs() < 1e-6, "{one} {full}");
    }
}

//! Resuming a saved run: the options that would change its decisions are refused, its image is
//! mounted again, and its stopping conditions are merged with those given now. A finished run is
//! only reported again.

use super::execute::json_bytes;
use super::{
    absolute, input, AgeError, AgeObserver, AgeOutcome, AgeRequest, Level, Prepared, Result,
};
use fsage_exec::{report, OpLog, Outcome, RunMeta, State, StopConditions, StopReason, WriteMode};
use fsage_lab::Mounted;
use fsage_plan::Phase;
use std::path::Path;
use std::time::Duration;

/// Loads a saved run and refuses options that would change its decisions. `None`: the run has
/// finished already.
pub(super) fn resume(
    path: &Path,
    req: &AgeRequest,
    obs: &mut dyn AgeObserver,
) -> Result<Option<Prepared>> {
    let st = State::load(path)?;
    let cfg = *st.plan.config();
    let mut refused = Vec::new();
    let mut differs = |flag: &str, given: Option<String>, saved: String| {
        if let Some(g) = given {
            if g != saved {
                refused.push(format!("{flag} {g} (the run has {saved})"));
            }
        }
    };
    differs(
        "capacity",
        req.capacity.map(|c| c.to_string()),
        cfg.capacity.to_string(),
    );
    differs(
        "fullness",
        req.fullness.map(|f| f.to_string()),
        cfg.fullness.to_string(),
    );
    differs(
        "seed",
        req.seed.map(|s| s.to_string()),
        cfg.seed.to_string(),
    );
    differs(
        "block size",
        req.block_size.map(|b| b.to_string()),
        cfg.block_size.to_string(),
    );
    if req.exact_sizes && !cfg.exact_sizes {
        refused.push("exact sizes (the run draws sizes within bins)".into());
    }
    if req.dry_run != st.record.target.is_none() {
        refused.push(if req.dry_run {
            "a dry run (the run ages a target)".to_string()
        } else {
            "a real run (the saved run is a dry run)".to_string()
        });
    }
    if let (Some(given), Some(saved)) = (&req.target, &st.record.target) {
        if absolute(given) != *saved {
            refused.push(format!(
                "target {} (the run ages {})",
                given.display(),
                saved.display()
            ));
        }
    }
    if let Some(given) = &req.op_log {
        if Some(absolute(given)) != st.record.op_log {
            refused.push(format!(
                "op log {} (the run's op log is {})",
                given.display(),
                st.record
                    .op_log
                    .as_ref()
                    .map_or("none".into(), |p| p.display().to_string())
            ));
        }
    }
    if let (Some(given), Some(saved)) = (&req.json, &st.record.json) {
        if absolute(given) != *saved {
            refused.push(format!(
                "--json {} (the run writes its report to {})",
                given.display(),
                saved.display()
            ));
        }
    }
    if !refused.is_empty() {
        return Err(input(format!(
            "{}: a resumed run keeps every option that changes its decisions or where it writes; drop or correct: {}",
            path.display(),
            refused.join("; ")
        )));
    }
    if st.plan.phase() == Phase::Done {
        return Ok(None);
    }
    if let Some(limit) = req.stop.max_time {
        if st.record.elapsed_s >= limit.as_secs_f64() {
            obs.notice(
                Level::Warning,
                &format!(
                    "the time limit {:.0}s counts every session, and the run has already taken \
                     {:.1}s: it stops at once. Give a larger one to go on",
                    limit.as_secs_f64(),
                    st.record.elapsed_s
                ),
            );
        }
    }
    let profile = fsage_profile::parse(
        &st.record.profile_toml,
        &format!("{} (profile)", path.display()),
    )?;
    let op_log = st
        .record
        .op_log
        .as_deref()
        .map(|p| {
            OpLog::resume(p, st.record.op_log_len).map_err(|err| AgeError::Open {
                path: p.to_path_buf(),
                err,
            })
        })
        .transpose()?;
    // A run made on a new image ages the image's mount point: mount it there again.
    let mounted = match (&st.record.image, &st.record.target) {
        (Some(image), Some(mnt)) => {
            // Held from here (and by the mount, for the run): nothing else mounts or ages the
            // image while a stopped run's mount is taken down and it is mounted again.
            let _lock = fsage_sys::lock::lock_target_or_refuse(image, "the image or device")?;
            if fsage_sys::is_block_device(image)
                && fsage_sys::mounts_of_device(image)?
                    .iter()
                    .any(|m| m.mount_point == *mnt)
            {
                // A killed run leaves the device mounted on the run's directory: take it down.
                fsage_lab::mount::umount_point(mnt)?;
                obs.notice(
                    Level::Warning,
                    &format!(
                        "note: {} was still mounted on {} by an earlier, stopped run; unmounted it",
                        image.display(),
                        mnt.display()
                    ),
                );
            } else if !fsage_sys::loops_backed_by(image).is_empty() {
                // A killed run leaves its image mounted: the image is this run's, so take it down.
                fsage_lab::mount::umount(image).map_err(|e| {
                    fsage_lab::Error::operation(format!(
                        "{}: still mounted by an earlier run, and {e}",
                        image.display()
                    ))
                })?;
                obs.notice(
                    Level::Warning,
                    &format!(
                        "note: {} was still mounted by an earlier, stopped run; unmounted it",
                        image.display()
                    ),
                );
            }
            fsage_sys::safe::make_mount_dir(mnt)?;
            Some(Mounted::attach_and_mount(image, mnt)?)
        }
        _ => None,
    };
    // "write", or "write:PATTERN" for data other than incompressible (see `execute`).
    let (saved_mode, saved_data) = super::execute::parse_mode(&st.record.write_mode);
    let mode = req.write_mode.unwrap_or(saved_mode);
    let data = req.data.unwrap_or(saved_data);
    if mode == WriteMode::Fallocate && !data.is_incompressible() {
        return Err(input(format!(
            "--data {data}: fallocate writes no data; give --write-mode write"
        )));
    }
    if req.write_mode.is_none() && mode == WriteMode::Fallocate && req.device_model.is_some() {
        obs.notice(
            Level::Warning,
            "this run gives files their blocks by fallocate, as it was started, so the drive \
             sees little of it: --write-mode write changes that from here",
        );
    }
    obs.notice(
        Level::Info,
        &format!(
            "resuming {} at tick {} of {} (profile {}, seed {})",
            path.display(),
            st.plan.tick(),
            st.plan.total(),
            st.record.profile_name,
            cfg.seed
        ),
    );
    Ok(Some(Prepared {
        profile,
        planner: st.plan,
        target: st.record.target,
        mode,
        data,
        op_log,
        op_log_path: st.record.op_log,
        state: Some(absolute(path)),
        elapsed_before: Duration::from_secs_f64(st.record.elapsed_s.max(0.0)),
        resumed: true,
        image: st.record.image.clone().zip(st.record.fs.clone()),
        mounted,
        saved_stop: Some(StopConditions::from(st.record.stop)),
        json: st.record.json,
    }))
}

/// `resume` of a finished run: nothing to run, but the report asked for is written, from the state
/// alone, so a report lost to a bad path the first time can be had again.
pub(super) fn finished_run(state: &Path, req: &AgeRequest) -> Result<AgeOutcome> {
    let st = State::load(state)?;
    let profile = fsage_profile::parse(&st.record.profile_toml, &state.display().to_string())?;
    let meta = RunMeta::new(
        &profile,
        "none: a finished run, reported from its state file".into(),
        st.record
            .target
            .as_ref()
            .map_or_else(|| "(no target)".to_string(), |t| t.display().to_string()),
    );
    let elapsed = Duration::from_secs_f64(st.record.elapsed_s.max(0.0));
    let outcome = Outcome {
        reason: st.record.stopped.unwrap_or(StopReason::Converged),
        error: None,
        elapsed: Duration::ZERO,
        elapsed_total: elapsed,
        session_ticks: 0,
        chi2_p: fsage_plan::stats::chi2_p(&st.plan.age_counts_now(), st.plan.age_targets()),
        op_log_error: None,
        enospc_inodes: 0,
        checkpoints: 0,
        state_error: None,
    };
    let stop = StopConditions::from(st.record.stop);
    let rep = report(&st.plan, &outcome, &meta, &stop);
    let json = req.json.clone().or(st.record.json.clone());
    if let Some(path) = &json {
        fsage_sys::write_atomic(path, &json_bytes(&rep))?;
    }
    Ok(AgeOutcome {
        report: rep,
        json,
        state: Some(absolute(state)),
        checkpoints: 0,
        state_failed: false,
        image: st.record.image.clone().zip(st.record.fs.clone()),
        finished_earlier: true,
        target_refused: false,
        usable_of: None,
    })
}

/// A resumed run keeps every stopping condition it was started with; one given again replaces it.
/// Returns the conditions in force and a line for each that was kept or replaced.
pub fn merge_stop(saved: &StopConditions, given: &StopConditions) -> (StopConditions, Vec<String>) {
    fn pick<T: PartialEq + Copy>(
        what: &str,
        saved: Option<T>,
        given: Option<T>,
        show: impl Fn(T) -> String,
        notes: &mut Vec<String>,
    ) -> Option<T> {
        match (saved, given) {
            (Some(s), None) => {
                notes.push(format!("keeps {what} {} from the run's start", show(s)));
                Some(s)
            }
            (Some(s), Some(g)) if s != g => {
                notes.push(format!("{what} {} replaces the saved {}", show(g), show(s)));
                Some(g)
            }
            (_, g) => g,
        }
    }
    let mut notes = Vec::new();
    let secs = |d: Duration| format!("{}s", d.as_secs_f64());
    let merged = StopConditions {
        max_time: pick("max-time", saved.max_time, given.max_time, secs, &mut notes),
        max_overwrites: pick(
            "max-overwrites",
            saved.max_overwrites,
            given.max_overwrites,
            |v| v.to_string(),
            &mut notes,
        ),
        confidence: pick(
            "confidence",
            saved.confidence,
            given.confidence,
            |v| v.to_string(),
            &mut notes,
        ),
        max_ops: pick(
            "max-ops",
            saved.max_ops,
            given.max_ops,
            |v| v.to_string(),
            &mut notes,
        ),
    };
    (merged, notes)
}

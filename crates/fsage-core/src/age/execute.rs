//! Running a prepared run on its backend (dry run, POSIX, parallel POSIX), reconciling a resumed
//! target first, then writing the report and unmounting what the run mounted.

use super::{absolute, AgeError, AgeObserver, AgeOutcome, AgeRequest, Level, Prepared, Result};
use fsage_exec::{
    reconcile, report, run, Backend, Checkpointing, DryRun, Outcome, Parallel, Posix, RunCtx,
    RunMeta, RunReport, StopConditions, WriteMode,
};
use fsage_plan::DataPattern;
use fsage_sys::with_suffix;

/// The write mode as a state file keeps it: `fallocate`, `write`, or `write:PATTERN` when the
/// data is not incompressible (older states say `write`, which reads as incompressible).
fn mode_name(m: WriteMode, data: DataPattern) -> String {
    match m {
        WriteMode::Fallocate => "fallocate".into(),
        WriteMode::Write if data.is_incompressible() => "write".into(),
        WriteMode::Write => format!("write:{data}"),
    }
}

/// [`mode_name`] read back (anything unknown is fallocate, as before patterns).
pub(super) fn parse_mode(s: &str) -> (WriteMode, DataPattern) {
    match s.split_once(':') {
        _ if s == "write" => (WriteMode::Write, DataPattern::Incompressible),
        Some(("write", d)) => (WriteMode::Write, DataPattern::parse(d).unwrap_or_default()),
        _ => (WriteMode::Fallocate, DataPattern::Incompressible),
    }
}

pub(super) fn json_bytes(rep: &RunReport) -> Vec<u8> {
    let mut v = serde_json::to_vec_pretty(rep).expect("a run report always serialises");
    v.push(b'\n');
    v
}

fn run_on<B: Backend>(
    p: &mut Prepared,
    backend: &mut B,
    ctx: &RunCtx,
    obs: &mut dyn AgeObserver,
) -> Result<Outcome> {
    if p.resumed {
        if let Some(target) = &p.target {
            let backend_err = |err| AgeError::Backend {
                path: target.clone(),
                err,
            };
            backend.make_dirs(p.planner.tree()).map_err(backend_err)?;
            let r = reconcile(target, &p.planner, backend).map_err(backend_err)?;
            obs.notice(
                Level::Info,
                &format!(
                    "reconciled the target with the saved state: {} files removed, {} made again{}",
                    r.removed,
                    r.recreated,
                    if r.foreign > 0 {
                        format!(", {} entries fsage did not make left alone", r.foreign)
                    } else {
                        String::new()
                    }
                ),
            );
        }
    }
    Ok(run(&mut p.planner, backend, p.op_log.as_mut(), ctx, obs))
}

pub(super) fn execute(
    mut p: Prepared,
    req: &AgeRequest,
    stop: StopConditions,
    obs: &mut dyn AgeObserver,
) -> Result<AgeOutcome> {
    // An image made for the run keeps its report beside it, rewritten by every session.
    // (Beside the mount point for a block device: never a file in /dev.) A resumed run writes
    // where its first session did, unless given the same path again.
    let json = req.json.clone().or_else(|| p.json.clone()).or_else(|| {
        p.image.as_ref().and_then(|(image, _)| {
            if fsage_sys::is_block_device(image) {
                p.target.as_ref().map(|t| with_suffix(t, ".report.json"))
            } else {
                Some(with_suffix(image, ".report.json"))
            }
        })
    });
    let ctx = RunCtx {
        stop: stop.clone(),
        checkpoint: p.state.clone().map(|path| Checkpointing {
            path,
            interval: req.checkpoint_interval,
            profile_name: p.profile.name.clone(),
            profile_toml: fsage_profile::to_toml(&p.profile),
            target: p.target.clone(),
            write_mode: mode_name(p.mode, p.data),
            op_log: p.op_log_path.clone(),
            image: p.image.as_ref().map(|(i, _)| i.clone()),
            fs: p.image.as_ref().map(|(_, f)| f.clone()),
            json: json.as_deref().map(absolute),
        }),
        elapsed_before: p.elapsed_before,
    };
    let (outcome, backend_name) = match p.target.clone() {
        None => {
            let mut b = DryRun;
            let o = run_on(&mut p, &mut b, &ctx, obs)?;
            (o, b.name())
        }
        Some(target) => {
            let mut posix =
                Posix::open(&target, p.mode, p.planner.config().seed).map_err(|err| {
                    AgeError::Open {
                        path: target.clone(),
                        err,
                    }
                })?;
            posix.reuse_existing_dirs(p.resumed);
            posix.set_data(p.data);
            if req.threads > 1 {
                let mut b = Parallel::new(posix, req.threads, req.shard_by);
                let o = run_on(&mut p, &mut b, &ctx, obs)?;
                let name = b.name();
                (o, name)
            } else {
                let mut b = posix;
                let o = run_on(&mut p, &mut b, &ctx, obs)?;
                (o, b.name())
            }
        }
    };
    let target_name = p
        .target
        .as_ref()
        .map_or_else(|| "(no target)".to_string(), |t| t.display().to_string());
    let meta = RunMeta::new(&p.profile, backend_name, target_name);
    let mut rep = report(&p.planner, &outcome, &meta, &stop);
    if p.mode == WriteMode::Write && p.target.is_some() {
        rep.data = Some(p.data);
    }
    if let Some(path) = &json {
        fsage_sys::write_atomic(path, &json_bytes(&rep))?;
    }
    if let Some(m) = p.mounted.take() {
        let mnt = m.mount_point().to_path_buf();
        m.finish().map_err(|e| {
            fsage_lab::Error::operation(format!("the run ended, but unmounting failed: {e}"))
        })?;
        let _ = std::fs::remove_dir(&mnt);
    }
    // Read-only, no permission, or a name already taken: the target, not the file system.
    let target_refused = outcome
        .error
        .as_ref()
        .and_then(|e| e.err.raw_os_error())
        .map(rustix::io::Errno::from_raw_os_error)
        .is_some_and(|n| {
            use rustix::io::Errno;
            matches!(n, Errno::ROFS | Errno::ACCESS | Errno::PERM | Errno::EXIST)
        });
    Ok(AgeOutcome {
        report: rep,
        json,
        state: p.state,
        checkpoints: outcome.checkpoints,
        state_failed: outcome.state_error.is_some(),
        image: p.image,
        finished_earlier: false,
        target_refused,
        usable_of: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state keeps the data pattern beside the write mode; states from before say `write`.
    #[test]
    fn the_write_mode_and_its_data_round_trip_through_the_state() {
        for (m, d) in [
            (WriteMode::Fallocate, DataPattern::Incompressible),
            (WriteMode::Write, DataPattern::Incompressible),
            (WriteMode::Write, DataPattern::Zeros),
            (WriteMode::Write, DataPattern::Compressible(40)),
        ] {
            assert_eq!(parse_mode(&mode_name(m, d)), (m, d));
        }
        assert_eq!(
            mode_name(WriteMode::Write, DataPattern::Incompressible),
            "write"
        );
        assert_eq!(
            parse_mode("write:filebench"),
            (WriteMode::Write, DataPattern::Filebench)
        );
    }
}

//! `fsage age` and `fsage status`: resolve the profile and the capacity (or a saved run), plan,
//! print T, run with checkpoints, report.

use crate::cli::{AgeArgs, WriteModeArg};
#[allow(unused_imports)]
use crate::exit::{bad_input, CmdResult};
use crate::progress::Bar;
use crate::util::{
    check_writable, free_inodes, fs_size, lock_state, parse_duration, prepare_target, write_atomic,
};
use fsage_exec::StopReason;
use fsage_exec::{
    reconcile, report, run, Backend, Checkpointing, DryRun, OpLog, Outcome, Parallel, Posix,
    RunCtx, RunMeta, State, StopConditions, WriteMode,
};
use fsage_plan::{Phase, PlanConfig, Planner};
use fsage_profile::{human_bytes, parse_size, Profile};
use fsage_report::{export, Json, Text};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// What `resume` says of a run that has all its ticks.
#[derive(Debug, thiserror::Error)]
#[error("the run is finished")]
struct FinishedRun;

/// `--resume` of a finished run: nothing to run, but the reports asked for are written, from the
/// state alone, so a report lost to a bad path the first time can be had again.
fn finished_reports(state: &Path, args: &AgeArgs) -> anyhow::Result<()> {
    let Some(path) = &args.json else {
        return Ok(());
    };
    let st = State::load(state)?;
    let profile = fsage_profile::parse(&st.record.profile_toml, &state.display().to_string())?;
    let meta = RunMeta::new(
        &profile,
        "(finished run, from its state)".into(),
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
    write_atomic(path, export(&Json, &rep).as_bytes())
        .map_err(|e| anyhow::anyhow!("--json {e}"))?;
    eprintln!(
        "fsage: wrote the finished run's report to {}",
        path.display()
    );
    Ok(())
}

/// A run ready to go: fresh or resumed.
struct Prepared {
    profile: Profile,
    planner: Planner,
    target: Option<PathBuf>,
    mode: WriteMode,
    op_log: Option<OpLog>,
    op_log_path: Option<PathBuf>,
    state: Option<PathBuf>,
    elapsed_before: Duration,
    resumed: bool,
    /// `--fs`: the image and its file system, mounted at `target` for the run.
    image: Option<(PathBuf, String)>,
    /// A resumed run's stopping conditions, as saved.
    saved_stop: Option<StopConditions>,
    mounted: Option<fsage_lab::Mounted>,
}

fn stop_conditions(args: &AgeArgs) -> anyhow::Result<StopConditions> {
    if let Some(c) = args.confidence {
        if !(c > 0.0 && c < 1.0) {
            return Err(bad_input(format!(
                "--confidence {c}: must lie in (0, 1), e.g. 0.95"
            )));
        }
    }
    if let Some(m) = args.max_overwrites {
        if !(m > 0.0 && m.is_finite()) {
            return Err(bad_input(format!(
                "--max-overwrites {m}: must be a positive number"
            )));
        }
    }
    if args.max_ops == Some(0) {
        return Err(bad_input("--max-ops 0: must be at least 1"));
    }
    Ok(StopConditions {
        max_time: args
            .max_time
            .as_deref()
            .map(|t| parse_duration("--max-time", t))
            .transpose()?,
        max_overwrites: args.max_overwrites,
        confidence: args.confidence,
        max_ops: args.max_ops,
    })
}

fn mode_of(arg: Option<WriteModeArg>) -> WriteMode {
    match arg {
        Some(WriteModeArg::Write) => WriteMode::Write,
        _ => WriteMode::Fallocate,
    }
}

fn mode_name(m: WriteMode) -> &'static str {
    match m {
        WriteMode::Fallocate => "fallocate",
        WriteMode::Write => "write",
    }
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

pub fn run_cmd(mut args: AgeArgs) -> CmdResult {
    // Before anything is made (an --fs image, a mount), so Ctrl-C always cleans up.
    fsage_exec::signals::install();
    let stop = stop_conditions(&args)?;
    let interval = parse_duration("--checkpoint-interval", &args.checkpoint_interval)?;
    if args.threads == 0 || args.threads > 256 {
        return Err(bad_input(format!(
            "--threads {}: must be between 1 and 256",
            args.threads
        )));
    }
    // Every output path is checked before anything runs: a finished run's report must not be
    // lost to a typo in a directory name.
    let state_out = args.state.as_ref().filter(|_| args.resume.is_none());
    for (flag, path) in [
        ("--json", args.json.as_ref()),
        ("--op-log", args.op_log.as_ref()),
        ("--state", state_out),
    ] {
        if let Some(p) = path {
            fsage_sys::check_writable_file(p).map_err(|e| bad_input(format!("{flag} {e}")))?;
        }
    }
    // Held until the run ends: a second session of the same run is refused.
    let mut _lock = match &args.resume {
        Some(state) => Some(lock_state(state)?),
        None => None,
    };
    let prepared = match (args.resume.clone(), args.fs) {
        (Some(state), _) => match resume(&state, &args) {
            Err(e) if e.is::<FinishedRun>() => {
                eprintln!(
                    "fsage: {} is a finished run: nothing left to do, the target is not touched",
                    state.display()
                );
                finished_reports(&state, &args)?;
                return Ok(ExitCode::SUCCESS);
            }
            other => other?,
        },
        (None, Some(fs)) => with_new_fs(fs, &mut args)?,
        (None, None) => fresh(&args)?,
    };
    if _lock.is_none() {
        if let Some(state) = &prepared.state {
            _lock = Some(lock_state(state)?);
        }
    }
    let stop = match &prepared.saved_stop {
        Some(_) if args.clear_limits => {
            if !args.quiet {
                eprintln!(
                    "fsage: the run's saved stopping conditions are dropped (--clear-limits)"
                );
            }
            stop
        }
        Some(saved) => {
            let (merged, notes) = merge_stop(saved, &stop);
            if !args.quiet {
                for n in notes {
                    eprintln!("fsage: {n}");
                }
            }
            merged
        }
        None => stop,
    };
    execute(prepared, &args, stop, interval)
}

/// A resumed run keeps every stopping condition it was started with; one given again replaces it.
/// Returns the conditions in force and a line for each that was kept or replaced.
fn merge_stop(saved: &StopConditions, given: &StopConditions) -> (StopConditions, Vec<String>) {
    fn pick<T: PartialEq + Copy>(
        flag: &str,
        saved: Option<T>,
        given: Option<T>,
        show: impl Fn(T) -> String,
        notes: &mut Vec<String>,
    ) -> Option<T> {
        match (saved, given) {
            (Some(s), None) => {
                notes.push(format!("keeps {flag} {} from the run's start", show(s)));
                Some(s)
            }
            (Some(s), Some(g)) if s != g => {
                notes.push(format!("{flag} {} replaces the saved {}", show(g), show(s)));
                Some(g)
            }
            (_, g) => g,
        }
    }
    let mut notes = Vec::new();
    let secs = |d: Duration| format!("{}s", d.as_secs_f64());
    let merged = StopConditions {
        max_time: pick(
            "--max-time",
            saved.max_time,
            given.max_time,
            secs,
            &mut notes,
        ),
        max_overwrites: pick(
            "--max-overwrites",
            saved.max_overwrites,
            given.max_overwrites,
            |v| v.to_string(),
            &mut notes,
        ),
        confidence: pick(
            "--confidence",
            saved.confidence,
            given.confidence,
            |v| v.to_string(),
            &mut notes,
        ),
        max_ops: pick(
            "--max-ops",
            saved.max_ops,
            given.max_ops,
            |v| v.to_string(),
            &mut notes,
        ),
    };
    (merged, notes)
}

fn with_suffix(p: &Path, suffix: &str) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// `--fs KIND --size SIZE IMAGE`: makes the image and its file system and mounts it at IMAGE.mnt;
/// the run ages the mount point, keeps its state beside the image and writes its report to
/// IMAGE.report.json unless told otherwise.
fn with_new_fs(fs: crate::cli::FsArg, args: &mut AgeArgs) -> anyhow::Result<Prepared> {
    let image = args.target.clone().ok_or_else(|| {
        bad_input("with --fs, TARGET is the image file to create, e.g. /dev/shm/aged.img")
    })?;
    let size_text = args.size.clone().expect("clap requires --size with --fs");
    let size =
        parse_size(&size_text).map_err(|e| bad_input(format!("--size {size_text:?}: {e}")))?;
    let kind = match fs {
        crate::cli::FsArg::Ext4 => fsage_lab::FsKind::Ext4,
        crate::cli::FsArg::Xfs => fsage_lab::FsKind::Xfs,
        crate::cli::FsArg::Btrfs => fsage_lab::FsKind::Btrfs,
    };
    // Check the profile and the plan at this size before making anything.
    let name = args
        .profile
        .as_deref()
        .expect("clap requires --profile without --resume");
    let profile = fsage_profile::resolve(name)?;
    let fullness = args.fullness.unwrap_or(profile.fullness.get());
    check_fullness(fullness)?;
    let block_size = match &args.block_size {
        Some(b) => parse_size(b).map_err(|e| bad_input(format!("--block-size {b:?}: {e}")))?,
        None => 4096,
    };
    plan(
        &profile,
        PlanConfig {
            capacity: size,
            fullness,
            block_size,
            seed: args.seed.unwrap_or(1),
            exact_sizes: args.exact_sizes,
        },
    )
    .map_err(|e| anyhow::anyhow!(e).context(format!("--size {size_text}: nothing was made")))?;
    let opts: Vec<String> = args
        .mkfs_opts
        .as_deref()
        .map(|o| o.split_whitespace().map(String::from).collect())
        .unwrap_or_default();
    let image = absolute(&image);
    fsage_lab::create_image(kind, size, &image, &opts)?;
    let mnt = with_suffix(&image, ".mnt");
    std::fs::create_dir_all(&mnt).map_err(|e| bad_input(format!("{}: {e}", mnt.display())))?;
    let mounted = match fsage_lab::Mounted::attach_and_mount(&image, &mnt) {
        Ok(m) => m,
        Err(e) => {
            let _ = std::fs::remove_dir(&mnt);
            let _ = std::fs::remove_file(&image);
            let _ = std::fs::remove_file(with_suffix(&image, ".fsage.json"));
            return Err(e.into());
        }
    };
    if !args.quiet {
        eprintln!(
            "fsage: made {} ({}, {}) and mounted it on {}",
            image.display(),
            kind.name(),
            human_bytes(size),
            mnt.display()
        );
    }
    args.target = Some(mnt);
    args.state
        .get_or_insert_with(|| with_suffix(&image, ".fsage-state"));
    args.json
        .get_or_insert_with(|| with_suffix(&image, ".report.json"));
    let mut p = match fresh(args) {
        Ok(p) => p,
        Err(e) => {
            // Nothing was aged: take back the image this command made.
            let mnt = mounted.mount_point().to_path_buf();
            let _ = mounted.finish();
            let _ = std::fs::remove_dir(&mnt);
            let _ = std::fs::remove_file(&image);
            let _ = std::fs::remove_file(with_suffix(&image, ".fsage.json"));
            return Err(e);
        }
    };
    p.image = Some((image, kind.name().to_string()));
    p.mounted = Some(mounted);
    Ok(p)
}

/// `--fullness 1` leaves no room above the target for the stable phase to create into: every
/// size bin would be unmeetable and the run refused later, so it is refused here, with the reason.
fn check_fullness(fullness: f64) -> anyhow::Result<()> {
    if !(fullness > 0.0 && fullness < 1.0) {
        return Err(bad_input(format!(
            "--fullness {fullness}: must lie in (0, 1); at 1 there is no room above the target for \
             the stable phase's creates (0.95 is a full file system in practice)"
        )));
    }
    Ok(())
}

/// Builds the planner after checking that it fits in memory, and refuses a capacity at which size
/// bins holding more than 10% of the profile's files cannot be made.
fn plan(profile: &Profile, cfg: PlanConfig) -> anyhow::Result<Planner> {
    let what = || {
        format!(
            "profile {} at capacity {} and fullness {}",
            profile.name,
            human_bytes(cfg.capacity),
            cfg.fullness
        )
    };
    fsage_exec::preflight::check_memory(profile, &cfg, None)
        .map_err(|e| bad_input(format!("{}: {e}; lower --capacity or --fullness", what())))?;
    let planner = Planner::new(profile, cfg).map_err(|e| bad_input(format!("{}: {e}", what())))?;
    let unmet = planner.unmeetable_bins();
    let unmet_share: f64 = unmet.iter().map(|u| u.target_fraction).sum();
    if unmet_share > 0.10 {
        let meta = RunMeta::new(profile, String::new(), String::new());
        let labels = unmet
            .iter()
            .map(|u| meta.size_labels[u.bin].clone())
            .collect::<Vec<_>>()
            .join(", ");
        return Err(bad_input(format!(
            "{} cannot be met: size bins holding {:.1}% of its files are too large for the room \
             left ({labels}). Lower --fullness or raise --capacity",
            what(),
            100.0 * unmet_share,
        )));
    }
    Ok(planner)
}

fn fresh(args: &AgeArgs) -> anyhow::Result<Prepared> {
    let name = args
        .profile
        .as_deref()
        .expect("clap requires --profile without --resume");
    let profile = fsage_profile::resolve(name)?;
    let fullness = args.fullness.unwrap_or(profile.fullness.get());
    check_fullness(fullness)?;
    if !args.dry_run {
        let target = args.target.as_deref().ok_or_else(|| {
            bad_input("TARGET_DIR is required (or use --dry-run with --capacity)")
        })?;
        prepare_target(target, args.force)?;
        check_writable(target)?;
    }
    let fs = match &args.target {
        Some(t) if t.exists() => Some(fs_size(t)?),
        _ => None,
    };
    let capacity = match (&args.capacity, fs) {
        (Some(c), _) => parse_size(c).map_err(|e| bad_input(format!("--capacity {c:?}: {e}")))?,
        (None, Some((size, _))) => size,
        (None, None) => {
            return Err(bad_input(
                "--capacity is needed: there is no target file system to take it from",
            ))
        }
    };
    let block_size = match (&args.block_size, fs) {
        (Some(b), _) => parse_size(b).map_err(|e| bad_input(format!("--block-size {b:?}: {e}")))?,
        (None, Some((_, bs))) => bs,
        (None, None) => 4096,
    };
    if !block_size.is_power_of_two() || block_size < 512 {
        return Err(bad_input(format!(
            "--block-size {block_size}: must be a power of two of at least 512 bytes"
        )));
    }
    if let (Some((size, _)), false) = (fs, args.dry_run) {
        if capacity > size {
            eprintln!(
                "fsage: warning: --capacity {} is larger than the file system ({}); the run will meet \
                 a full file system and adapt",
                human_bytes(capacity),
                human_bytes(size)
            );
        }
    }
    let cfg = PlanConfig {
        capacity,
        fullness,
        block_size,
        seed: args.seed.unwrap_or(1),
        exact_sizes: args.exact_sizes,
    };
    let planner = plan(&profile, cfg)?;
    let meta = RunMeta::new(&profile, String::new(), String::new());
    let unmet = planner.unmeetable_bins();
    let unmet_share: f64 = unmet.iter().map(|u| u.target_fraction).sum();
    let unmet_labels = unmet
        .iter()
        .map(|u| meta.size_labels[u.bin].clone())
        .collect::<Vec<_>>()
        .join(", ");
    let t = planner.total();
    let secs = fsage_exec::preflight::estimate_seconds(t, args.dry_run);
    if secs > 86400.0 && !args.quiet {
        eprintln!(
            "fsage: warning: T = {t} ticks (about {} written) would take about {} at the measured \
             {} speed; bound the run with --max-ops, --max-time or --max-overwrites, or give a \
             smaller --capacity",
            human_bytes(planner.expected_bytes_written()),
            crate::profile_cmd::fmt_duration(secs),
            if args.dry_run {
                "dry-run"
            } else {
                "in-memory ext4"
            }
        );
    }
    if unmet_share > 0.005 && !args.quiet {
        eprintln!(
            "fsage: warning: at this capacity the run makes no files in size bins holding {:.2}% of the \
             profile's files ({unmet_labels}); the size histogram will miss them. A larger --capacity \
             includes them",
            100.0 * unmet_share
        );
    }
    if let (false, Some(target)) = (args.dry_run, args.target.as_deref()) {
        let needed =
            planner.tree().len() as u64 + planner.rapid_files().max(planner.steady_state());
        if let Some(free) = free_inodes(target) {
            if free < needed + needed / 20 {
                return Err(bad_input(format!(
                    "{}: the file system has {free} free inodes, but this run needs about {needed} \
                     ({} directories and the files); make the file system with more inodes (for \
                     ext4, mkfs.ext4 -i 4096) or give a smaller --capacity",
                    target.display(),
                    planner.tree().len() - 1
                )));
            }
        }
    }
    if !args.quiet {
        eprintln!(
            "fsage: profile {}, capacity {}, fullness {fullness}, seed {}; {} directories; rapid phase: {} files; T = {} ticks (convergence theorem)",
            profile.name,
            human_bytes(capacity),
            cfg.seed,
            planner.tree().len() - 1,
            planner.rapid_files(),
            planner.total()
        );
        for &(d, _, made) in &planner.tree().adjusted {
            eprintln!(
                "fsage: note: the profile has no directories at depth {d} but has files deeper; made {made}"
            );
        }
        for u in &unmet {
            eprintln!(
                "fsage: note: size bin {} (target {:.4}% of files) cannot be met at this capacity: {}",
                meta.size_labels[u.bin],
                100.0 * u.target_fraction,
                u.reason
            );
        }
    }
    let target = args.target.as_deref().map(absolute);
    let state = match (&args.state, &target, args.dry_run) {
        (Some(s), _, _) => Some(absolute(s)),
        (None, Some(t), false) => {
            let mut s = t.clone().into_os_string();
            s.push(".fsage-state");
            Some(PathBuf::from(s))
        }
        _ => None,
    };
    let op_log = match &args.op_log {
        Some(p) => Some(
            OpLog::create(p).map_err(|e| bad_input(format!("--op-log {}: {e}", p.display())))?,
        ),
        None => None,
    };
    Ok(Prepared {
        profile,
        planner,
        target: if args.dry_run { None } else { target },
        mode: mode_of(args.write_mode),
        op_log,
        op_log_path: args.op_log.as_deref().map(absolute),
        state,
        elapsed_before: Duration::ZERO,
        resumed: false,
        image: None,
        mounted: None,
        saved_stop: None,
    })
}

/// Loads a saved run and refuses options that would change its decisions.
fn resume(path: &Path, args: &AgeArgs) -> anyhow::Result<Prepared> {
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
        "--capacity",
        args.capacity
            .as_deref()
            .map(|c| parse_size(c).map_or(c.to_string(), |v| v.to_string())),
        cfg.capacity.to_string(),
    );
    differs(
        "--fullness",
        args.fullness.map(|f| f.to_string()),
        cfg.fullness.to_string(),
    );
    differs(
        "--seed",
        args.seed.map(|s| s.to_string()),
        cfg.seed.to_string(),
    );
    differs(
        "--block-size",
        args.block_size
            .as_deref()
            .map(|c| parse_size(c).map_or(c.to_string(), |v| v.to_string())),
        cfg.block_size.to_string(),
    );
    if args.exact_sizes && !cfg.exact_sizes {
        refused.push("--exact-sizes (the run draws sizes within bins)".into());
    }
    if args.dry_run != st.record.target.is_none() {
        refused.push(if args.dry_run {
            "--dry-run (the run ages a target)".to_string()
        } else {
            "a real run (the saved run is a dry run: add --dry-run)".to_string()
        });
    }
    if let (Some(given), Some(saved)) = (&args.target, &st.record.target) {
        if absolute(given) != *saved {
            refused.push(format!(
                "TARGET_DIR {} (the run ages {})",
                given.display(),
                saved.display()
            ));
        }
    }
    if let Some(given) = &args.op_log {
        if Some(absolute(given)) != st.record.op_log {
            refused.push(format!(
                "--op-log {} (the run's op log is {})",
                given.display(),
                st.record
                    .op_log
                    .as_ref()
                    .map_or("none".into(), |p| p.display().to_string())
            ));
        }
    }
    if !refused.is_empty() {
        return Err(bad_input(format!(
            "{}: a resumed run keeps every option that changes its decisions; drop or correct: {}",
            path.display(),
            refused.join("; ")
        )));
    }
    if st.plan.phase() == Phase::Done {
        return Err(FinishedRun.into());
    }
    if let Some(max) = args.max_time.as_deref() {
        let limit = parse_duration("--max-time", max)?;
        if st.record.elapsed_s >= limit.as_secs_f64() {
            eprintln!(
                "fsage: warning: --max-time {max} counts every session, and the run has already \
                 taken {:.1}s: it stops at once. Give a larger --max-time to go on",
                st.record.elapsed_s
            );
        }
    }
    let profile = fsage_profile::parse(
        &st.record.profile_toml,
        &format!("{} (profile)", path.display()),
    )?;
    let op_log = match &st.record.op_log {
        Some(p) => Some(
            OpLog::resume(p, st.record.op_log_len)
                .map_err(|e| bad_input(format!("{}: {e}", p.display())))?,
        ),
        None => None,
    };
    // A run made with --fs ages the image's mount point: mount it there again.
    let mounted = match (&st.record.image, &st.record.target) {
        (Some(image), Some(mnt)) => {
            if !fsage_lab::sys::loops_backed_by(image).is_empty() {
                // A killed run leaves its image mounted: the image is this run's, so take it down.
                fsage_lab::mount::umount(image).map_err(|e| {
                    anyhow::anyhow!(
                        "{}: still mounted by an earlier run, and {e}",
                        image.display()
                    )
                })?;
                eprintln!(
                    "fsage: note: {} was still mounted by an earlier, stopped run; unmounted it",
                    image.display()
                );
            }
            std::fs::create_dir_all(mnt)
                .map_err(|e| bad_input(format!("{}: {e}", mnt.display())))?;
            Some(fsage_lab::Mounted::attach_and_mount(image, mnt)?)
        }
        _ => None,
    };
    let mode = match (args.write_mode, st.record.write_mode.as_str()) {
        (Some(m), _) => mode_of(Some(m)),
        (None, "write") => WriteMode::Write,
        _ => WriteMode::Fallocate,
    };
    if !args.quiet {
        eprintln!(
            "fsage: resuming {} at tick {} of {} (profile {}, seed {})",
            path.display(),
            st.plan.tick(),
            st.plan.total(),
            st.record.profile_name,
            cfg.seed
        );
    }
    Ok(Prepared {
        profile,
        planner: st.plan,
        target: st.record.target,
        mode,
        op_log,
        op_log_path: st.record.op_log,
        state: Some(absolute(path)),
        elapsed_before: Duration::from_secs_f64(st.record.elapsed_s.max(0.0)),
        resumed: true,
        image: st.record.image.clone().zip(st.record.fs.clone()),
        mounted,
        saved_stop: Some(StopConditions::from(st.record.stop)),
    })
}

fn run_on<B: Backend>(
    p: &mut Prepared,
    backend: &mut B,
    ctx: &RunCtx,
    quiet: bool,
) -> anyhow::Result<Outcome> {
    if p.resumed {
        if let Some(target) = &p.target {
            backend.make_dirs(p.planner.tree())?;
            let r = reconcile(target, &p.planner, backend).map_err(|e| {
                anyhow::anyhow!(
                    "cannot bring {} back to the saved state: {e}",
                    target.display()
                )
            })?;
            if !quiet {
                eprintln!(
                    "fsage: reconciled the target with the saved state: {} files removed, {} made again{}",
                    r.removed,
                    r.recreated,
                    if r.foreign > 0 {
                        format!(", {} entries fsage did not make left alone", r.foreign)
                    } else {
                        String::new()
                    }
                );
            }
        }
    }
    let mut bar = Bar::new(quiet);
    Ok(run(
        &mut p.planner,
        backend,
        p.op_log.as_mut(),
        ctx,
        &mut bar,
    ))
}

fn execute(mut p: Prepared, args: &AgeArgs, stop: StopConditions, interval: Duration) -> CmdResult {
    let ctx = RunCtx {
        stop: stop.clone(),
        checkpoint: p.state.clone().map(|path| Checkpointing {
            path,
            interval,
            profile_name: p.profile.name.clone(),
            profile_toml: fsage_profile::to_toml(&p.profile),
            target: p.target.clone(),
            write_mode: mode_name(p.mode).into(),
            op_log: p.op_log_path.clone(),
            image: p.image.as_ref().map(|(i, _)| i.clone()),
            fs: p.image.as_ref().map(|(_, f)| f.clone()),
        }),
        elapsed_before: p.elapsed_before,
    };
    let (outcome, backend_name) = match p.target.clone() {
        None => {
            let mut b = DryRun;
            let o = run_on(&mut p, &mut b, &ctx, args.quiet)?;
            (o, b.name())
        }
        Some(target) => {
            let mut posix = Posix::open(&target, p.mode, p.planner.config().seed)
                .map_err(|e| bad_input(format!("{}: {e}", target.display())))?;
            posix.reuse_existing_dirs(p.resumed);
            if args.threads > 1 {
                let mut b = Parallel::new(posix, args.threads);
                let o = run_on(&mut p, &mut b, &ctx, args.quiet)?;
                let name = b.name();
                (o, name)
            } else {
                let mut b = posix;
                let o = run_on(&mut p, &mut b, &ctx, args.quiet)?;
                (o, b.name())
            }
        }
    };
    let target_name = p
        .target
        .as_ref()
        .map_or_else(|| "(no target)".to_string(), |t| t.display().to_string());
    let meta = RunMeta::new(&p.profile, backend_name, target_name);
    let rep = report(&p.planner, &outcome, &meta, &stop);
    // An image made by --fs keeps its report beside it, rewritten by every session.
    let json = args.json.clone().or_else(|| {
        p.image
            .as_ref()
            .map(|(image, _)| with_suffix(image, ".report.json"))
    });
    if let Some(path) = &json {
        write_atomic(path, export(&Json, &rep).as_bytes())
            .map_err(|e| bad_input(format!("--json {e}")))?;
    }
    if let Some(m) = p.mounted.take() {
        let mnt = m.mount_point().to_path_buf();
        m.finish()
            .map_err(|e| bad_input(format!("the run ended, but: {e}")))?;
        let _ = std::fs::remove_dir(&mnt);
        if let (false, Some((image, fs))) = (args.quiet, &p.image) {
            let how = if rep.converged {
                "aged".to_string()
            } else {
                format!(
                    "partly aged (tick {} of {}; --resume {} goes on)",
                    rep.ticks,
                    rep.t_estimate,
                    p.state
                        .as_ref()
                        .map_or(String::new(), |s| s.display().to_string())
                )
            };
            eprintln!(
                "fsage: unmounted; the {how} {fs} image is {}, its report {}",
                image.display(),
                json.as_ref()
                    .map_or("(none)".into(), |j| j.display().to_string())
            );
        }
    }
    if !args.quiet {
        print!("{}", export(&Text, &rep));
        if let Some(s) = &p.state {
            if outcome.state_error.is_none() {
                println!(
                    "state: {} ({} checkpoints this session); continue with: fsage age --resume {}",
                    s.display(),
                    outcome.checkpoints,
                    s.display()
                );
            }
        }
    }
    Ok(match rep.stop_reason {
        StopReason::IoError => {
            let err = rep.error.as_deref().unwrap_or("unknown");
            // Read-only, no permission, or a name already taken: the target, not the file system.
            let user_side = outcome
                .error
                .as_ref()
                .and_then(|e| e.err.raw_os_error())
                .is_some_and(|n| {
                    matches!(n, libc::EROFS | libc::EACCES | libc::EPERM | libc::EEXIST)
                });
            if user_side {
                eprintln!("fsage: the run stopped: {err}. The target cannot be aged as it is.");
            } else {
                eprintln!(
                    "fsage: the run stopped on an I/O error: {err}. If the file system failed \
                     under the aging workload, that is a stress-test finding worth reporting; the \
                     state file lets the run resume."
                );
            }
            ExitCode::from(1)
        }
        StopReason::Interrupted => ExitCode::from(130),
        _ => ExitCode::SUCCESS,
    })
}

/// `fsage status STATE`: where a run stands, read from its state file alone.
pub fn status(path: &Path, json: bool) -> CmdResult {
    let st = State::load(path)?;
    let status = st.status(path);
    if json {
        print!("{}", export(&Json, &status));
    } else {
        print!("{}", export(&Text, &status));
    }
    Ok(ExitCode::SUCCESS)
}

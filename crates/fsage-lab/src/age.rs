//! `age`, the porcelain of profile-driven aging: everything `fsage age` does between parsing its
//! flags and printing, as one library call, so that the experiment runner ages exactly as the
//! command line does. It resolves the profile, the capacity and the target (or a saved run),
//! checks memory, inodes and output paths before anything is made, makes and mounts an image when
//! asked, runs with checkpoints, writes the report, and unmounts.

use crate::{FsKind, Mounted};
use fsage_exec::preflight::{self, PreflightError, RunLock, TargetError};
use fsage_exec::{
    reconcile, report, run, Backend, Checkpointing, DryRun, Observer, OpError, OpLog, OpLogError,
    Outcome, Parallel, Posix, RunCtx, RunMeta, RunReport, State, StateError, StopConditions,
    StopReason, WriteMode,
};
use fsage_plan::{Phase, PlanConfig, Planner};
use fsage_profile::{human_bytes, Profile, ProfileError};
use fsage_sys::with_suffix;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How loud a notice is: `Info` is progress talk a quiet run drops; `Warning` is always shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warning,
}

/// What the caller hears while a run is prepared and runs: notices and the run loop's progress.
pub trait AgeObserver: Observer {
    fn notice(&mut self, level: Level, text: &str);
}

/// A new file system to make, mount and age: on a new image file (the request's target, mounted
/// at `IMAGE.mnt`), or on a block device such as a slow device (the target is then the directory
/// to mount it on).
#[derive(Debug, Clone)]
pub struct NewFs {
    pub kind: FsKind,
    /// The image's size; on a device, the file system's size (none: the whole device).
    pub size: Option<u64>,
    pub mkfs_opts: Vec<String>,
    /// Format this block device instead of making an image. One that holds a file system is
    /// refused unless the request has `force`; one mounted or attached is always refused.
    pub device: Option<PathBuf>,
}

/// Everything a run can be asked for. `profile` is needed unless `resume` names a saved run.
#[derive(Debug, Clone, Default)]
pub struct AgeRequest {
    /// A built-in profile name or a profile file.
    pub profile: Option<String>,
    /// The directory to age; with `new_fs`, the image file to make.
    pub target: Option<PathBuf>,
    pub capacity: Option<u64>,
    pub fullness: Option<f64>,
    pub seed: Option<u64>,
    pub dry_run: bool,
    pub write_mode: Option<WriteMode>,
    pub exact_sizes: bool,
    pub block_size: Option<u64>,
    pub threads: usize,
    /// Stopping conditions given now; a resumed run merges them with its saved ones.
    pub stop: StopConditions,
    /// Drop a resumed run's saved stopping conditions.
    pub clear_limits: bool,
    pub json: Option<PathBuf>,
    pub op_log: Option<PathBuf>,
    pub state: Option<PathBuf>,
    pub checkpoint_interval: Duration,
    pub resume: Option<PathBuf>,
    /// Age a target that is not empty, or reached through a link onto another file system.
    pub force: bool,
    pub new_fs: Option<NewFs>,
}

/// Why a run could not be prepared or finished. `blame()` says who has to act.
#[derive(Debug, thiserror::Error)]
pub enum AgeError {
    /// Bad input found while resolving the request (a value out of range, a missing target).
    #[error("{0}")]
    Input(String),
    #[error(transparent)]
    Profile(#[from] ProfileError),
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(transparent)]
    Preflight(#[from] PreflightError),
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    OpLog(#[from] OpLogError),
    #[error(transparent)]
    Lab(#[from] crate::Error),
    /// Writing the report failed (the error names the file).
    #[error(transparent)]
    Report(#[from] fsage_sys::WriteError),
    /// The target could not be opened or brought back to a saved state.
    #[error("{}: {err}", path.display())]
    Backend { path: PathBuf, err: OpError },
    #[error("{}: {err}", path.display())]
    Open { path: PathBuf, err: std::io::Error },
}

impl fsage_sys::Blamed for AgeError {
    fn blame(&self) -> fsage_sys::Blame {
        use fsage_sys::Blame;
        match self {
            AgeError::Input(_) | AgeError::Profile(_) | AgeError::Preflight(_) => Blame::Input,
            AgeError::Open { err, .. } => fsage_sys::io_blame(err.kind()),
            AgeError::Target(e) => e.blame(),
            AgeError::State(e) => e.blame(),
            AgeError::OpLog(e) => e.blame(),
            AgeError::Lab(e) => e.blame(),
            AgeError::Report(e) => e.blame(),
            AgeError::Backend { .. } => Blame::Operation,
        }
    }
}

type Result<T> = std::result::Result<T, AgeError>;

fn input(msg: impl Into<String>) -> AgeError {
    AgeError::Input(msg.into())
}

/// What a run came to.
#[derive(Debug)]
pub struct AgeOutcome {
    pub report: RunReport,
    /// Where the report was written as JSON.
    pub json: Option<PathBuf>,
    /// The run's state file, if it keeps one, and the checkpoints this session wrote.
    pub state: Option<PathBuf>,
    pub checkpoints: u64,
    /// The last checkpoint failed (the run cannot be resumed from it).
    pub state_failed: bool,
    /// The image and its file system, for a run made with [`NewFs`] (now unmounted).
    pub image: Option<(PathBuf, String)>,
    /// A resume of a run that had already finished: nothing ran, the report is the saved one.
    pub finished_earlier: bool,
    /// The run stopped on an error that is the target's, not the file system's (read-only, no
    /// permission, a name already taken).
    pub target_refused: bool,
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
    image: Option<(PathBuf, String)>,
    saved_stop: Option<StopConditions>,
    mounted: Option<Mounted>,
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

/// Ages as `req` says: the whole of `fsage age`.
pub fn age(req: &AgeRequest, obs: &mut dyn AgeObserver) -> Result<AgeOutcome> {
    if req.threads == 0 || req.threads > 256 {
        return Err(input(format!(
            "threads {}: must be between 1 and 256",
            req.threads
        )));
    }
    // Every output path is checked before anything runs: a finished run's report must not be
    // lost to a typo in a directory name.
    let state_out = req.state.as_ref().filter(|_| req.resume.is_none());
    for path in [req.json.as_ref(), req.op_log.as_ref(), state_out]
        .into_iter()
        .flatten()
    {
        fsage_sys::check_writable_file(path)?;
    }
    // Held until the run ends: a second session of the same run is refused.
    let mut lock: Option<RunLock> = req.resume.as_deref().map(preflight::lock_run).transpose()?;
    let mut req = req.clone();
    let prepared = match (req.resume.clone(), req.new_fs.clone()) {
        (Some(state), _) => match resume(&state, &req, obs)? {
            Some(p) => p,
            None => return finished_run(&state, &req),
        },
        (None, Some(fs)) if fs.device.is_some() => with_new_fs_on_device(&fs, &mut req, obs)?,
        (None, Some(fs)) => with_new_fs(&fs, &mut req, obs)?,
        (None, None) => fresh(&req, resolve_profile(&req)?, obs)?,
    };
    if lock.is_none() {
        if let Some(state) = &prepared.state {
            lock = Some(preflight::lock_run(state)?);
        }
    }
    let stop = match &prepared.saved_stop {
        Some(_) if req.clear_limits => {
            obs.notice(
                Level::Info,
                "the run's saved stopping conditions are dropped",
            );
            req.stop.clone()
        }
        Some(saved) => {
            let (merged, notes) = merge_stop(saved, &req.stop);
            for n in notes {
                obs.notice(Level::Info, &n);
            }
            merged
        }
        None => req.stop.clone(),
    };
    let out = execute(prepared, &req, stop, obs);
    drop(lock);
    out
}

/// `resume` of a finished run: nothing to run, but the report asked for is written, from the state
/// alone, so a report lost to a bad path the first time can be had again.
fn finished_run(state: &Path, req: &AgeRequest) -> Result<AgeOutcome> {
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
    if let Some(path) = &req.json {
        fsage_sys::write_atomic(path, &json_bytes(&rep))?;
    }
    Ok(AgeOutcome {
        report: rep,
        json: req.json.clone(),
        state: Some(absolute(state)),
        checkpoints: 0,
        state_failed: false,
        image: st.record.image.clone().zip(st.record.fs.clone()),
        finished_earlier: true,
        target_refused: false,
    })
}

fn json_bytes(rep: &RunReport) -> Vec<u8> {
    let mut v = serde_json::to_vec_pretty(rep).expect("a run report always serialises");
    v.push(b'\n');
    v
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

/// Makes the image and its file system and mounts it at IMAGE.mnt; the run ages the mount point,
/// keeps its state beside the image and writes its report to IMAGE.report.json unless told
/// otherwise. The profile and the plan at this size are checked before anything is made.
fn with_new_fs(fs: &NewFs, req: &mut AgeRequest, obs: &mut dyn AgeObserver) -> Result<Prepared> {
    let image = req.target.clone().ok_or_else(|| {
        input("a new file system needs the image file to create, e.g. /dev/shm/aged.img")
    })?;
    let size = fs
        .size
        .ok_or_else(|| input("a new image needs a size, e.g. 4GiB"))?;
    // Resolved once: the check before mkfs and the run use the same profile.
    let profile = check_plan_at(req, size, "image size")?;
    let image = absolute(&image);
    crate::create_image(fs.kind, size, &image, &fs.mkfs_opts)?;
    let mnt = with_suffix(&image, ".mnt");
    let undo = |mounted: Option<Mounted>| {
        if let Some(m) = mounted {
            let _ = m.finish();
        }
        let _ = std::fs::remove_dir(&mnt);
        let _ = std::fs::remove_file(&image);
        let _ = std::fs::remove_file(crate::fs::sidecar_path(&image));
    };
    if let Err(err) = std::fs::create_dir_all(&mnt) {
        undo(None);
        return Err(AgeError::Open { path: mnt, err });
    }
    let mounted = match Mounted::attach_and_mount(&image, &mnt) {
        Ok(m) => m,
        Err(e) => {
            undo(None);
            return Err(e.into());
        }
    };
    obs.notice(
        Level::Info,
        &format!(
            "made {} ({}, {}) and mounted it on {}",
            image.display(),
            fs.kind.name(),
            human_bytes(size),
            mnt.display()
        ),
    );
    req.target = Some(mnt.clone());
    req.state
        .get_or_insert_with(|| with_suffix(&image, ".fsage-state"));
    req.json
        .get_or_insert_with(|| with_suffix(&image, ".report.json"));
    let mut p = match fresh(req, profile, obs) {
        Ok(p) => p,
        Err(e) => {
            // Nothing was aged: take back the image this run made.
            undo(Some(mounted));
            return Err(e);
        }
    };
    p.image = Some((image, fs.kind.name().to_string()));
    p.mounted = Some(mounted);
    Ok(p)
}

/// Checks the profile and its plan at `capacity` before anything is made, so that a profile that
/// cannot fit is refused with nothing formatted; returns the profile for the run.
fn check_plan_at(req: &AgeRequest, capacity: u64, what: &str) -> Result<Profile> {
    let profile = resolve_profile(req)?;
    let fullness = req.fullness.unwrap_or(profile.fullness.get());
    check_fullness(fullness)?;
    plan(
        &profile,
        PlanConfig {
            capacity,
            fullness,
            block_size: req.block_size.unwrap_or(4096),
            seed: req.seed.unwrap_or(1),
            exact_sizes: req.exact_sizes,
        },
    )
    .map_err(|e| {
        input(format!(
            "{e} ({what} {}); nothing was made",
            human_bytes(capacity)
        ))
    })?;
    Ok(profile)
}

/// Formats a block device (a slow device, say) and mounts it on the request's target, a
/// directory made if missing and refused if not empty; the run ages it, keeps its state and
/// report beside that directory unless told otherwise, and unmounts it at the end.
fn with_new_fs_on_device(
    fs: &NewFs,
    req: &mut AgeRequest,
    obs: &mut dyn AgeObserver,
) -> Result<Prepared> {
    let dev = fs.device.clone().expect("called for a device");
    let mnt = req.target.clone().ok_or_else(|| {
        input(format!(
            "a file system made on {} needs the directory to mount it on",
            dev.display()
        ))
    })?;
    if !crate::sys::is_block_device(&dev) {
        return Err(input(format!("{}: not a block device", dev.display())));
    }
    let dev_size = crate::sys::size_of(&dev)?;
    let size = fs.size.unwrap_or(dev_size);
    if size > dev_size {
        return Err(input(format!(
            "size {}: larger than {} ({})",
            human_bytes(size),
            dev.display(),
            human_bytes(dev_size)
        )));
    }
    let mnt = absolute(&mnt);
    let made_dir = !mnt.exists();
    if !made_dir {
        let empty = std::fs::read_dir(&mnt)
            .map_err(|err| AgeError::Open {
                path: mnt.clone(),
                err,
            })?
            .next()
            .is_none();
        if !empty {
            return Err(input(format!(
                "{}: not an empty directory; a new file system is mounted on an empty one",
                mnt.display()
            )));
        }
    }
    let profile = check_plan_at(req, size, "file system size")?;
    crate::create_fs(
        &dev,
        &crate::CreateOptions {
            kind: fs.kind,
            size: fs.size,
            mkfs_opts: fs.mkfs_opts.clone(),
            force: req.force,
        },
    )?;
    let remove_dir = || {
        if made_dir {
            let _ = std::fs::remove_dir(&mnt);
        }
    };
    if let Err(err) = std::fs::create_dir_all(&mnt) {
        return Err(AgeError::Open { path: mnt, err });
    }
    let mounted = match Mounted::attach_and_mount(&dev, &mnt) {
        Ok(m) => m,
        Err(e) => {
            remove_dir();
            return Err(e.into());
        }
    };
    obs.notice(
        Level::Info,
        &format!(
            "made {} ({}) on {} and mounted it on {}",
            fs.kind.name(),
            human_bytes(size),
            dev.display(),
            mnt.display()
        ),
    );
    req.target = Some(mnt.clone());
    req.state
        .get_or_insert_with(|| with_suffix(&mnt, ".fsage-state"));
    req.json
        .get_or_insert_with(|| with_suffix(&mnt, ".report.json"));
    let mut p = match fresh(req, profile, obs) {
        Ok(p) => p,
        Err(e) => {
            let _ = mounted.finish();
            remove_dir();
            return Err(e);
        }
    };
    p.image = Some((dev, fs.kind.name().to_string()));
    p.mounted = Some(mounted);
    Ok(p)
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

/// A block size fsage can count in: a power of two of at least 512 bytes.
pub fn check_block_size(block_size: u64) -> Result<()> {
    if !block_size.is_power_of_two() || block_size < 512 {
        return Err(input(format!(
            "block size {block_size}: must be a power of two of at least 512 bytes"
        )));
    }
    Ok(())
}

/// The plan a new run of `profile` would make at `capacity` (fullness: the profile's unless
/// given), checked exactly as a run checks it (fullness, block size, memory, a size bin that
/// cannot be met, a capacity too small): what `profile show` reports without a target.
pub fn plan_at(
    profile: &Profile,
    capacity: u64,
    fullness: Option<f64>,
    block_size: u64,
    seed: u64,
) -> Result<(Planner, fsage_plan::MemoryEstimate)> {
    let fullness = fullness.unwrap_or(profile.fullness.get());
    check_fullness(fullness)?;
    check_block_size(block_size)?;
    let cfg = PlanConfig {
        capacity,
        fullness,
        block_size,
        seed,
        exact_sizes: false,
    };
    let planner = plan(profile, cfg)?;
    Ok((planner, fsage_plan::estimate_memory(profile, &cfg)))
}

/// A fullness of 1 leaves no room above the target for the stable phase to create into: every
/// size bin would be unmeetable and the run refused later, so it is refused here, with the reason.
pub fn check_fullness(fullness: f64) -> Result<()> {
    if !(fullness > 0.0 && fullness < 1.0) {
        return Err(input(format!(
            "fullness {fullness}: must lie in (0, 1); at 1 there is no room above the target for \
             the stable phase's creates (0.95 is a full file system in practice)"
        )));
    }
    Ok(())
}

/// Builds the planner after checking that it fits in memory, and refuses a capacity at which size
/// bins holding more than 10% of the profile's files cannot be made.
pub fn plan(profile: &Profile, cfg: PlanConfig) -> Result<Planner> {
    let what = || {
        format!(
            "profile {} at capacity {} and fullness {}",
            profile.name,
            human_bytes(cfg.capacity),
            cfg.fullness
        )
    };
    preflight::check_memory(profile, &cfg, None).map_err(|e| {
        input(format!(
            "{}: {e}; lower the capacity or the fullness",
            what()
        ))
    })?;
    let planner = Planner::new(profile, cfg).map_err(|e| input(format!("{}: {e}", what())))?;
    let (unmet_share, labels) = unmet_summary(profile, &planner);
    if unmet_share > 0.10 {
        return Err(input(format!(
            "{} cannot be met: size bins holding {:.1}% of its files are too large for the room \
             left ({labels}). Lower the fullness or raise the capacity",
            what(),
            100.0 * unmet_share,
        )));
    }
    Ok(planner)
}

/// The share of the profile's files in size bins the plan cannot make, and those bins' labels.
fn unmet_summary(profile: &Profile, planner: &Planner) -> (f64, String) {
    let meta = RunMeta::new(profile, String::new(), String::new());
    let unmet = planner.unmeetable_bins();
    let share = unmet.iter().map(|u| u.target_fraction).sum();
    let labels = unmet
        .iter()
        .map(|u| meta.size_labels[u.bin].clone())
        .collect::<Vec<_>>()
        .join(", ");
    (share, labels)
}

/// The profile a new run ages with (a built-in name or a file).
fn resolve_profile(req: &AgeRequest) -> Result<Profile> {
    let name = req
        .profile
        .as_deref()
        .ok_or_else(|| input("a profile is needed (or a saved run to resume)"))?;
    Ok(fsage_profile::resolve(name)?)
}

fn fresh(req: &AgeRequest, profile: Profile, obs: &mut dyn AgeObserver) -> Result<Prepared> {
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
    Ok(Prepared {
        profile,
        planner,
        target: if req.dry_run { None } else { target },
        mode: req.write_mode.unwrap_or(WriteMode::Fallocate),
        op_log,
        op_log_path: req.op_log.as_deref().map(absolute),
        state,
        elapsed_before: Duration::ZERO,
        resumed: false,
        image: None,
        mounted: None,
        saved_stop: None,
    })
}

/// Loads a saved run and refuses options that would change its decisions. `None`: the run has
/// finished already.
fn resume(path: &Path, req: &AgeRequest, obs: &mut dyn AgeObserver) -> Result<Option<Prepared>> {
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
    if !refused.is_empty() {
        return Err(input(format!(
            "{}: a resumed run keeps every option that changes its decisions; drop or correct: {}",
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
            if crate::sys::is_block_device(image)
                && crate::sys::mounts_of_device(image)?
                    .iter()
                    .any(|m| m.mount_point == *mnt)
            {
                // A killed run leaves the device mounted on the run's directory: take it down.
                crate::mount::umount_point(mnt)?;
                obs.notice(
                    Level::Warning,
                    &format!(
                        "note: {} was still mounted on {} by an earlier, stopped run; unmounted it",
                        image.display(),
                        mnt.display()
                    ),
                );
            } else if !crate::sys::loops_backed_by(image).is_empty() {
                // A killed run leaves its image mounted: the image is this run's, so take it down.
                crate::mount::umount(image).map_err(|e| {
                    crate::Error::operation(format!(
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
            std::fs::create_dir_all(mnt).map_err(|err| AgeError::Open {
                path: mnt.clone(),
                err,
            })?;
            Some(Mounted::attach_and_mount(image, mnt)?)
        }
        _ => None,
    };
    let mode = match (req.write_mode, st.record.write_mode.as_str()) {
        (Some(m), _) => m,
        (None, "write") => WriteMode::Write,
        _ => WriteMode::Fallocate,
    };
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
        op_log,
        op_log_path: st.record.op_log,
        state: Some(absolute(path)),
        elapsed_before: Duration::from_secs_f64(st.record.elapsed_s.max(0.0)),
        resumed: true,
        image: st.record.image.clone().zip(st.record.fs.clone()),
        mounted,
        saved_stop: Some(StopConditions::from(st.record.stop)),
    }))
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

fn execute(
    mut p: Prepared,
    req: &AgeRequest,
    stop: StopConditions,
    obs: &mut dyn AgeObserver,
) -> Result<AgeOutcome> {
    let ctx = RunCtx {
        stop: stop.clone(),
        checkpoint: p.state.clone().map(|path| Checkpointing {
            path,
            interval: req.checkpoint_interval,
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
            if req.threads > 1 {
                let mut b = Parallel::new(posix, req.threads);
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
    let rep = report(&p.planner, &outcome, &meta, &stop);
    // An image made for the run keeps its report beside it, rewritten by every session.
    // (Beside the mount point for a block device: never a file in /dev.)
    let json = req.json.clone().or_else(|| {
        p.image.as_ref().and_then(|(image, _)| {
            if crate::sys::is_block_device(image) {
                p.target.as_ref().map(|t| with_suffix(t, ".report.json"))
            } else {
                Some(with_suffix(image, ".report.json"))
            }
        })
    });
    if let Some(path) = &json {
        fsage_sys::write_atomic(path, &json_bytes(&rep))?;
    }
    if let Some(m) = p.mounted.take() {
        let mnt = m.mount_point().to_path_buf();
        m.finish().map_err(|e| {
            crate::Error::operation(format!("the run ended, but unmounting failed: {e}"))
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
    })
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

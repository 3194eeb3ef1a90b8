//! `age`, the porcelain of profile-driven aging: everything `fsage age` does between parsing its
//! flags and printing, as one library call, so that the experiment runner ages exactly as the
//! command line does. It resolves the profile, the capacity and the target (or a saved run),
//! checks memory, inodes and output paths before anything is made, makes and mounts an image when
//! asked, runs with checkpoints, writes the report, and unmounts.
//!
//! By job: `setup` resolves the profile and makes a new file system, `fresh` prepares a new
//! run, `resume` a saved one, `execute` runs either and reports, and `checks` holds the
//! planning checks that `profile show` uses too.

mod checks;
mod drive;
mod execute;
mod fresh;
mod resume;
mod setup;

pub use checks::{check_block_size, check_fullness, plan, plan_at};
pub use drive::DriveAging;
pub use resume::merge_stop;

use fsage_exec::preflight::{self, PreflightError, RunLock, TargetError};
use fsage_exec::{
    Observer, OpError, OpLog, OpLogError, RunReport, StateError, StopConditions, WriteMode,
};
use fsage_lab::{FsKind, Mounted};
use fsage_plan::Planner;
use fsage_profile::{Profile, ProfileError};
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
/// to mount it on). A dry run makes one in memory only to read its usable space, and plans at it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
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
/// Plain data, so that a guest can be handed one (the age step of `fsage-host`).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
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
    /// What written data holds (`--data`; write mode only): `None` is incompressible, or a
    /// resumed run's own.
    pub data: Option<fsage_plan::DataPattern>,
    pub exact_sizes: bool,
    pub block_size: Option<u64>,
    pub threads: usize,
    /// With several threads, which key picks an operation's thread.
    #[serde(default)]
    pub shard_by: fsage_exec::Sharding,
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
    /// Age the drive too: a device model that keeps state (an SSD), fed the run's block requests
    /// to its image at memory speed; its state is saved as `IMAGE.ftl` (see `drive`).
    pub device_model: Option<fsage_device::ModelSpec>,
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
    Lab(#[from] fsage_lab::Error),
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
    fn remedy(&self) -> Option<fsage_sys::Remedy> {
        match self {
            AgeError::Target(e) => e.remedy(),
            AgeError::Lab(e) => e.remedy(),
            _ => None,
        }
    }
}

type Result<T> = std::result::Result<T, AgeError>;

fn input(msg: impl Into<String>) -> AgeError {
    AgeError::Input(msg.into())
}

/// What a run came to (plain data: a guest hands it back).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
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
    /// A dry run with a new file system: it planned at the usable space of that file system
    /// made at this size (its kind and the size).
    pub usable_of: Option<(FsKind, u64)>,
}

/// A run ready to go: fresh or resumed.
struct Prepared {
    profile: Profile,
    planner: Planner,
    target: Option<PathBuf>,
    mode: WriteMode,
    /// What written data holds (write mode).
    data: fsage_plan::DataPattern,
    op_log: Option<OpLog>,
    op_log_path: Option<PathBuf>,
    state: Option<PathBuf>,
    elapsed_before: Duration,
    resumed: bool,
    image: Option<(PathBuf, String)>,
    saved_stop: Option<StopConditions>,
    mounted: Option<Mounted>,
    /// A resumed run's report path, from its state.
    json: Option<PathBuf>,
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
    // A drive to age is checked before anything is made.
    if let Some(m) = &req.device_model {
        if req.new_fs.is_none() && req.resume.is_none() || req.dry_run {
            return Err(input(
                "--device-model ages the drive of an image fsage makes and mounts: use it with \
                 --fs KIND --size SIZE IMAGE (or --resume of such a run)",
            ));
        }
        drive::check(m)?;
    }
    // Held until the run ends: a second session of the same run is refused.
    let mut lock: Option<RunLock> = req.resume.as_deref().map(preflight::lock_run).transpose()?;
    // A new file system's image (or device) is locked before it is made and until the run ends:
    // a second `age` of the same path is refused, naming this one, before it makes, mounts or
    // removes anything (the mount holds the lock of a resumed run's image).
    let _target_lock = match (&req.new_fs, &req.target) {
        (Some(fs), target) if !req.dry_run && req.resume.is_none() => fs
            .device
            .as_ref()
            .or(target.as_ref())
            .map(|t| fsage_sys::lock::lock_target_or_refuse(t, "the image or device"))
            .transpose()?,
        _ => None,
    };
    let mut req = req.clone();
    let mut usable = None;
    // Before anything is made: a kind the kernel lacks (f2fs, nilfs2 here) cannot be mounted.
    if let Some(fs) = &req.new_fs {
        fs.kind.check_kernel()?;
    }
    let prepared = match (req.resume.clone(), req.new_fs.clone()) {
        (Some(state), _) => match resume::resume(&state, &req, obs)? {
            Some(p) => p,
            None => return resume::finished_run(&state, &req),
        },
        (None, Some(fs)) if req.dry_run => {
            usable = Some(setup::usable_capacity(&fs, &mut req, obs)?);
            fresh::fresh(&req, checks::resolve_profile(&req)?, obs)?
        }
        (None, Some(fs)) if fs.device.is_some() => {
            setup::with_new_fs_on_device(&fs, &mut req, obs)?
        }
        (None, Some(fs)) => setup::with_new_fs(&fs, &mut req, obs)?,
        (None, None) => fresh::fresh(&req, checks::resolve_profile(&req)?, obs)?,
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
    let drive =
        match (&req.device_model, &prepared.image, &prepared.mounted) {
            (None, _, _) => None,
            (Some(m), Some((image, _)), Some(mounted)) => {
                Some(drive::DriveAging::start(m, image, mounted.device())?)
            }
            (Some(_), _, _) => return Err(input(
                "--device-model ages the drive of an image fsage makes and mounts: use it with \
                 --fs KIND --size SIZE IMAGE (or --resume of such a run)",
            )),
        };
    let out = execute::execute(prepared, &req, stop, obs);
    // The drive's state is saved whatever the run's outcome (an interrupted run resumes it).
    if let Some(d) = drive {
        match d.finish() {
            Ok(said) => obs.notice(Level::Info, &said),
            Err(e) if out.is_ok() => return Err(e.into()),
            Err(e) => obs.notice(Level::Warning, &format!("the drive's state: {e}")),
        }
    }
    let out = out.map(|mut o| {
        o.usable_of = usable;
        o
    });
    drop(lock);
    out
}

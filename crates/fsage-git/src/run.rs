//! The run: replay commit after commit, measure at the first commit, every N and at the last,
//! checkpoint after every measurement (and, in tree mode, after every commit), stop cleanly
//! between commits on SIGINT or SIGTERM, and resume from the checkpoint.

use crate::drives::{AgedDrives, ImageMount};
use crate::git::{self, Commit, Range};
use crate::measure;
use crate::series::{GitRow, GitSeries, SERIES_FORMAT};
use crate::slow::{MeasureDevice, SlowMount};
use crate::tree::{self, TreeReplay};
use crate::{Error, Result};
use fsage_lab::FsKind;
use fsage_slowdev::Latencies;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Where the aged instance lives.
#[derive(Debug, Clone)]
pub enum Target {
    /// A new image file (made, mounted at `IMAGE.mnt`, unmounted at the end), holding the aged
    /// tree in a directory named after the repository.
    Image {
        path: PathBuf,
        kind: FsKind,
        size: u64,
    },
    /// A directory on a mounted file system (empty unless resuming): the aged tree itself. The
    /// clean instance is an image of `clean_kind` at `clean_image`, as large as the block device
    /// under the directory, or `clean_size` when given (needed when there is no block device).
    /// fsage's own files (checkpoint, a bundle's clone) go beside `clean_image`, off the aged
    /// file system.
    Dir {
        path: PathBuf,
        clean_kind: FsKind,
        clean_image: PathBuf,
        clean_size: Option<u64>,
    },
}

/// The clean image of a directory target when none is given: `clean.img` in a directory of
/// root's alone (mode 0700) in /dev/shm (else the temporary directory), named after the target's
/// device and inode (mount roots of one kind share inode numbers), so that a resumed run finds
/// (and removes) what a killed one left. The directory's name can be computed, so it is made by
/// fsage or refused (another user's, a link, writable by others): nobody else can put anything
/// where the clean instance, its mount point and the checkpoint go.
pub fn default_clean_image(target: &Path) -> Result<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let dir = if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let m = std::fs::metadata(target)
        .map_err(|e| Error::input(format!("{}: {e}", target.display())))?;
    let own = dir.join(format!("fsage-git-{:x}-{}", m.dev(), m.ino()));
    fsage_sys::safe::ensure_private_dir(&own, "the directory of the clean instance")?;
    Ok(own.join("clean.img"))
}

impl Target {
    /// Where fsage's files of the run are named from: the image, or the clean image of a
    /// directory target (so that nothing of fsage's lands in the aged file system).
    fn files_base(&self) -> &Path {
        match self {
            Target::Image { path, .. } => path,
            Target::Dir { clean_image, .. } => clean_image,
        }
    }
}

/// How commits are replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The published method: `git pull` of each commit into a repository on the aged fs.
    Git,
    /// Each commit's changes as fsage-exec operations on a plain working tree.
    Tree,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Git => "git",
            Mode::Tree => "tree",
        }
    }
}

#[derive(Debug, Clone)]
pub struct GitAgeOptions {
    pub repo: PathBuf,
    pub target: Target,
    pub mode: Mode,
    /// Measure every this many commits (and at the first and the last).
    pub every: u64,
    pub range: Range,
    /// Let git collect garbage automatically (off, `gc.auto 0`, by default).
    pub gc: bool,
    /// Go on from the checkpoint.
    pub resume: bool,
    /// Tree mode: write the op log here.
    pub op_log: Option<PathBuf>,
    /// Skip the measurements (replay only; for timing the replay itself).
    pub no_measure: bool,
    /// Take every measurement with the instance on a slow device running this model (a fixed
    /// latency or one with state, such as `hdd-7200`; an image target only); none: on plain
    /// loop devices.
    pub device: Option<MeasureDevice>,
    /// Timed greps per instance and measurement (their median is the series' time).
    pub grep_reps: u32,
    /// Device models the first grep's trace of every measurement is costed on.
    pub cost_models: Vec<fsage_device::ModelSpec>,
    /// What stands in for grep's think time when traces are costed (`fsage_device::cost`).
    pub think: fsage_device::Think,
    /// Sync the aged file system after every pull (or tree commit): what each wrote reaches
    /// the disk before the next, as on a developer's disk where pulls are hours apart, and the
    /// layout no longer depends on when the host's writeback happened to run.
    pub sync_each_pull: bool,
    /// Warm-cache measurements (Conway's Figure 5): the aged instance is neither remounted nor
    /// are caches dropped before its greps, which find what the replay left in memory; the
    /// clean copy is measured cold, as before (the figure's reference).
    pub warm_cache: bool,
    /// Run everything (replay, greps, the clean copy) in a memory cgroup of this many bytes,
    /// page cache included, as a machine with that much memory would.
    pub mem_limit: Option<u64>,
    /// Where the caller writes the series as JSON and CSV: kept in the checkpoint, so that a
    /// resume writes them there too ([`Outcome::json`], [`Outcome::csv`]).
    pub json: Option<PathBuf>,
    pub csv: Option<PathBuf>,
}

/// What the caller sees as the run goes.
pub trait Observer {
    /// After every commit: commits done, commits in all, replay seconds so far.
    fn progress(&mut self, _done: u64, _total: u64, _replay_seconds: f64) {}
    /// After every measurement.
    fn measured(&mut self, _row: &GitRow) {}
    /// Something the user should know (a resume, a skipped figure).
    fn note(&mut self, _msg: &str) {}
}

/// No output.
pub struct Silent;
impl Observer for Silent {}

#[derive(Debug)]
pub struct Outcome {
    pub series: GitSeries,
    /// Stopped by a signal before the last commit.
    pub interrupted: bool,
    pub state: PathBuf,
    /// Where the series goes as JSON and CSV: the paths given, or a resumed run's saved ones.
    pub json: Option<PathBuf>,
    pub csv: Option<PathBuf>,
}

const STATE_FORMAT: &str = "fsage-git-state/1";

/// What must not change between a run and its resume.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct RunKey {
    repo: String,
    mode: String,
    /// The aged file system's kind.
    fs: String,
    /// A directory target: the clean instance's kind (an image's clean instance is of `fs`).
    #[serde(default)]
    clean_fs: Option<String>,
    /// The clean instance's size (the image's, for an image target).
    size: u64,
    every: u64,
    gc: bool,
    first: String,
    last: String,
    commits: u64,
    /// The measuring device's latencies, for a plain latency (absent in checkpoints from before
    /// the option).
    #[serde(default)]
    device: Option<Latencies>,
    /// The measuring device's model, text included, for any other model (absent in checkpoints
    /// from before models), so that a resume cannot switch it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    device_model: Option<fsage_device::ModelSpec>,
    /// Timed greps per measurement (1 in checkpoints from before repetitions).
    #[serde(default = "one")]
    grep_reps: u32,
    /// The cost models, text included (none in checkpoints from before them).
    #[serde(default)]
    cost_models: Vec<fsage_device::ModelSpec>,
    /// The think rule (`recorded` in checkpoints from before rules).
    #[serde(default = "recorded_think")]
    think: fsage_device::Think,
    /// A sync after every pull (false in checkpoints from before the option).
    #[serde(default)]
    sync_each_pull: bool,
    /// Warm-cache measurements (false in checkpoints from before the option).
    #[serde(default)]
    warm_cache: bool,
    /// The memory limit (none in checkpoints from before the option).
    #[serde(default)]
    mem_limit: Option<u64>,
}

fn recorded_think() -> fsage_device::Think {
    fsage_device::Think::Recorded
}

fn one() -> u32 {
    1
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct State {
    format: String,
    key: RunKey,
    series: GitSeries,
    /// Tree mode: op-log length and next tick at the checkpoint.
    op_log_len: Option<u64>,
    tick: u64,
    /// The output paths the run was given (none in checkpoints from before they were kept).
    #[serde(default)]
    outputs: Outputs,
}

/// A run's output paths, absolute: a resume writes to them unless given the same again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Outputs {
    json: Option<PathBuf>,
    csv: Option<PathBuf>,
    op_log: Option<PathBuf>,
}

impl Outputs {
    fn given(opts: &GitAgeOptions) -> Outputs {
        let abs = |p: &Option<PathBuf>| {
            p.as_deref()
                .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()))
        };
        Outputs {
            json: abs(&opts.json),
            csv: abs(&opts.csv),
            op_log: abs(&opts.op_log),
        }
    }

    /// The paths given now, else the saved ones; a path given again that differs from the
    /// saved one is refused, naming both.
    fn resumed(given: Outputs, saved: &Outputs, state_file: &Path) -> Result<Outputs> {
        let mut refused = Vec::new();
        let mut pick = |flag: &str, g: Option<PathBuf>, s: &Option<PathBuf>| match (g, s) {
            (Some(g), Some(s)) if g != *s => {
                refused.push(format!(
                    "{flag} {} (the run writes {})",
                    g.display(),
                    s.display()
                ));
                None
            }
            (g, s) => g.or_else(|| s.clone()),
        };
        let out = Outputs {
            json: pick("--json", given.json, &saved.json),
            csv: pick("--csv", given.csv, &saved.csv),
            op_log: pick("--op-log", given.op_log, &saved.op_log),
        };
        if !refused.is_empty() {
            return Err(Error::input(format!(
                "{}: a resumed run writes where it was started; drop or correct: {}",
                state_file.display(),
                refused.join("; ")
            )));
        }
        Ok(out)
    }
}

/// The checkpoint of a run on `target`: `IMAGE.fsage-git.json`, or for a directory target
/// `CLEAN_IMAGE.fsage-git.json` (never inside the file system being aged).
pub fn state_path(target: &Target) -> PathBuf {
    let t = target.files_base().to_string_lossy();
    PathBuf::from(format!("{}.fsage-git.json", t.trim_end_matches('/')))
}

/// Where a bundle is cloned for the run: `IMAGE.source.git` (or `CLEAN_IMAGE.source.git`); a
/// resume reuses it, a new run replaces it, the end of a run removes it.
pub fn source_clone_path(target: &Target) -> PathBuf {
    let t = target.files_base().to_string_lossy();
    PathBuf::from(format!("{}.source.git", t.trim_end_matches('/')))
}

/// Where the greps' traces are kept: `IMAGE.traces/` (or `CLEAN_IMAGE.traces/`), one file per
/// instance and measurement, `NNNNN-aged.json` and `NNNNN-clean.json` by pulls (a measurement
/// taken again after a stop writes over its own files).
pub fn traces_path(target: &Target) -> PathBuf {
    let t = target.files_base().to_string_lossy();
    PathBuf::from(format!("{}.traces", t.trim_end_matches('/')))
}

fn save_state(path: &Path, st: &State) -> Result<()> {
    let json = serde_json::to_string_pretty(st).map_err(|e| Error::operation(e.to_string()))?;
    fsage_sys::write_atomic(path, json.as_bytes())
        .map_err(|e| Error::operation(format!("checkpoint: {e}")))
}

fn load_state(path: &Path) -> Result<State> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        crate::Error::io(
            path,
            "no checkpoint to resume from (was the run started?)",
            e,
        )
    })?;
    let st: State = serde_json::from_str(&text).map_err(|e| {
        Error::input(format!(
            "{}: not a Git-aging checkpoint: {e}",
            path.display()
        ))
    })?;
    if st.format != STATE_FORMAT {
        return Err(Error::input(format!(
            "{}: format {:?}, expected {STATE_FORMAT:?}",
            path.display(),
            st.format
        )));
    }
    Ok(st)
}

/// Refuses an image too small for the checked-out tree at the last commit (each file rounded up
/// to a 4 KiB block) before anything is made: without the refusal git fills the file system
/// commits later and the run fails late.
fn check_fits(source: &Path, last: &str, size: u64) -> Result<()> {
    let files = crate::tree::ls_tree(source, last)?;
    let tree: u64 = files.values().map(|s| s.div_ceil(4096).max(1) * 4096).sum();
    if size <= tree {
        // The tree, again as much for the repository's objects, and the file system's own.
        let want = (2 * tree + (64 << 20)).next_multiple_of(1 << 20);
        return Err(Error::input(format!(
            "an image of {}: the checked-out tree at the last commit ({}) alone needs {} ({} \
             files), before the repository's objects and the file system's own metadata",
            fsage_units::format_size(size),
            &last[..last.len().min(12)],
            fsage_units::format_size(tree),
            files.len()
        ))
        .with_remedy(fsage_sys::Remedy::SizeAtLeast(want)));
    }
    Ok(())
}

fn is_measured(i: usize, n: usize, every: u64) -> bool {
    i as u64 % every == 0 || i + 1 == n
}

/// What the checks found about the target, before anything is made.
struct TargetFacts {
    /// The aged file system's kind (`ext4`, or what the mount table says of a directory's).
    aged_fs: String,
    clean_kind: FsKind,
    /// The clean instance's size.
    size: u64,
    /// A directory target's block device (its rdev), to trace the grep's reads.
    dir_rdev: Option<u64>,
}

/// The directory `path`'s parent, `.` for a bare name.
fn parent_dir(path: &Path) -> PathBuf {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Refuses a file to be made at `path` whose directory is missing.
fn check_dir_of(path: &Path) -> Result<()> {
    let dir = parent_dir(path);
    match std::fs::metadata(&dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(Error::input(format!(
            "{}: {} is not a directory",
            path.display(),
            dir.display()
        ))),
        Err(_) => Err(Error::input(format!(
            "{}: its directory {} does not exist",
            path.display(),
            dir.display()
        ))),
    }
}

/// The mount-table entry of the file system holding `path`.
fn mount_of(path: &Path) -> Result<fsage_sys::mountinfo::MountEntry> {
    let dev = fsage_sys::device_of(path).map_err(|e| crate::Error::io(path, "stat", e))?;
    let parts = fsage_sys::mountinfo::dev_parts(dev);
    let mounts = fsage_sys::mountinfo::mounts()
        .map_err(|e| Error::operation(format!("/proc/self/mountinfo: {e}")))?;
    mounts
        .into_iter()
        .rev()
        .find(|m| m.dev == parts)
        .ok_or_else(|| {
            Error::operation(format!(
                "{}: its file system ({}:{}) is not in the mount table",
                path.display(),
                parts.0,
                parts.1
            ))
        })
}

/// The size of the block device `rdev` from sysfs (no need to open the device).
fn block_device_size(rdev: u64) -> Option<u64> {
    let (ma, mi) = fsage_sys::mountinfo::dev_parts(rdev);
    let text = std::fs::read_to_string(format!("/sys/dev/block/{ma}:{mi}/size")).ok()?;
    text.trim().parse::<u64>().ok().map(|sectors| sectors * 512)
}

/// Every check of the target before anything is made: the image's directory, a directory
/// target's emptiness, file system, block device and the clean instance's size.
fn check_target(opts: &GitAgeOptions, state_file: &Path) -> Result<TargetFacts> {
    if !opts.resume && state_file.exists() {
        return Err(Error::input(format!(
            "{}: a run's checkpoint is there; resume it, or remove it to start again",
            state_file.display()
        )));
    }
    // The image (or the clean instance) is mounted: a kind the kernel lacks fails here, first.
    match &opts.target {
        Target::Image { kind, .. } => kind.check_kernel()?,
        Target::Dir { clean_kind, .. } => clean_kind.check_kernel()?,
    }
    match &opts.target {
        Target::Image { path, kind, size } => {
            check_dir_of(path)?;
            if !opts.resume && path.exists() {
                return Err(Error::input(format!(
                    "{}: exists; refusing to overwrite it",
                    path.display()
                )));
            }
            Ok(TargetFacts {
                aged_fs: kind.name().into(),
                clean_kind: *kind,
                size: *size,
                dir_rdev: None,
            })
        }
        Target::Dir {
            path,
            clean_kind,
            clean_image,
            clean_size,
        } => {
            if !path.is_dir() {
                return Err(Error::input(format!(
                    "{}: not a directory (give an existing, empty directory)",
                    path.display()
                )));
            }
            if !opts.resume {
                let mut rd =
                    std::fs::read_dir(path).map_err(|e| crate::Error::io(path, "readdir", e))?;
                if rd.next().is_some() {
                    return Err(Error::input(format!(
                        "{}: not empty; Git aging needs an empty directory",
                        path.display()
                    )));
                }
            }
            check_dir_of(clean_image)?;
            let m = mount_of(path)?;
            // The block device: the mount's source (btrfs's st_dev is not one), else st_dev
            // when sysfs knows it as a block device (a source such as `/dev/root`).
            let source = Path::new(&m.source);
            let device = fsage_sys::is_block_device(source).then_some(source);
            let dir_rdev = device
                .and_then(|d| {
                    use std::os::unix::fs::MetadataExt;
                    std::fs::metadata(d).ok().map(|md| md.rdev())
                })
                .or_else(|| {
                    let dev = fsage_sys::device_of(path).ok()?;
                    block_device_size(dev).map(|_| dev)
                });
            let size = match (clean_size, dir_rdev) {
                (Some(s), _) => *s,
                // The same with and without measurements, so that either may resume the other.
                (None, Some(r)) => match (block_device_size(r), device) {
                    (Some(s), _) => s,
                    (None, _) if opts.no_measure => 0,
                    (None, Some(d)) => fsage_sys::size_of(d)?,
                    (None, None) => {
                        return Err(Error::operation(format!(
                            "{}: the size of its block device is not in sysfs",
                            path.display()
                        )))
                    }
                },
                (None, None) if opts.no_measure => 0,
                (None, None) => {
                    return Err(Error::input(format!(
                        "{}: on {} ({}), which has no block device: fsage can neither trace its \
                         reads for a layout score nor make the clean instance as large as its \
                         device; age a directory on a block-device file system or an image, or \
                         give the clean instance's size to measure without the aged layout score",
                        path.display(),
                        m.fstype,
                        m.mount_point.display()
                    ))
                    .with_remedy(fsage_sys::Remedy::Size));
                }
            };
            let aged_dev =
                fsage_sys::device_of(path).map_err(|e| crate::Error::io(path, "stat", e))?;
            // Measuring, the clean image must not be on the aged file system; without
            // measurements it must still not be inside the tree: the checkpoint and the bundle's
            // clone go beside it, and a resume's `git clean` there would remove them.
            let inside_tree = match (parent_dir(clean_image).canonicalize(), path.canonicalize()) {
                (Ok(c), Ok(t)) => c.starts_with(t),
                _ => false,
            };
            if inside_tree
                || (!opts.no_measure
                    && fsage_sys::device_of(&parent_dir(clean_image)).ok() == Some(aged_dev))
            {
                return Err(Error::input(format!(
                    "{}: the clean instance's image (and the checkpoint beside it) would be on the \
                     file system being aged ({}); put it elsewhere",
                    clean_image.display(),
                    m.mount_point.display()
                )));
            }
            Ok(TargetFacts {
                aged_fs: m.fstype,
                clean_kind: *clean_kind,
                size,
                dir_rdev,
            })
        }
    }
}

/// The aged instance: its mount (when fsage made it), where the tree lies, and its drives (an
/// image target's, for the cost models that keep a drive state).
struct Aged {
    image: Option<PathBuf>,
    /// A directory target's block device, to trace.
    dir_rdev: Option<u64>,
    mnt: PathBuf,
    mounted: Option<ImageMount>,
    tree: PathBuf,
    drives: Option<AgedDrives>,
}

impl Aged {
    /// Mounts the image (its writes fed to the drives, if any).
    fn mount(&mut self) -> Result<()> {
        if let Some(img) = &self.image {
            let m = ImageMount::mount(img, &self.mnt, self.drives.as_ref().map(|d| &d.drives))?;
            self.mounted = Some(m);
        }
        Ok(())
    }

    /// Unmounts the image (feeding the drives what it wrote until its loop device went).
    fn unmount(&mut self) -> Result<()> {
        if let Some(m) = self.mounted.take() {
            let r = m.finish()?;
            if let Some(d) = self.drives.as_mut() {
                d.count(r);
            }
        }
        Ok(())
    }

    /// Unmounts and mounts again (an image), for a cold measurement; the device to trace.
    fn remount(&mut self) -> Result<Option<u64>> {
        match &self.image {
            Some(_) => {
                self.unmount()?;
                self.mount()?;
                Ok(self.mounted.as_ref().and_then(|m| m.rdev()))
            }
            None => {
                self.sync()?;
                Ok(self.dir_rdev)
            }
        }
    }

    /// The block device to trace as the instance is mounted now.
    fn rdev(&self) -> Option<u64> {
        match &self.image {
            Some(_) => self.mounted.as_ref().and_then(|m| m.rdev()),
            None => self.dir_rdev,
        }
    }

    /// Copies of the drives as they are now (every write issued so far fed), to cost the
    /// measurement's greps on.
    fn drive_copies(&self) -> Result<Vec<(fsage_device::AgedDrive, String)>> {
        let Some(d) = &self.drives else {
            return Ok(Vec::new());
        };
        if let Some(m) = &self.mounted {
            m.sync_drives()?;
        }
        let fed = d.meta.fed_bytes;
        Ok(crate::drives::snapshot(&d.drives)?
            .into_iter()
            .map(|c| {
                let said = crate::drives::describe("aged", &c, fed);
                (c, said)
            })
            .collect())
    }

    /// Saves the drives (after `pulls` pulls), if any.
    fn save_drives(&mut self, pulls: u64) -> Result<()> {
        if let Some(m) = &self.mounted {
            m.sync_drives()?;
        }
        match self.drives.as_mut() {
            Some(d) => d.save(pulls),
            None => Ok(()),
        }
    }

    /// `syncfs` of the aged file system (only it: a global sync would wait on every other disk).
    fn sync(&self) -> Result<()> {
        let d =
            std::fs::File::open(&self.mnt).map_err(|e| crate::Error::io(&self.mnt, "open", e))?;
        rustix::fs::syncfs(&d).map_err(|e| crate::Error::io(&self.mnt, "syncfs", e.into()))
    }

    /// Measures the image through a slow device: unmounts it, mounts it from a device of
    /// `dev`'s latency, measures, unmounts, destroys the device and mounts the image again for
    /// the replay (also when the measurement failed). The device's writes are fed to the drives,
    /// and a device of a model among them starts from its drive.
    fn measure_slow(
        &mut self,
        dev: &MeasureDevice,
        du: u64,
        grep: measure::Grep,
    ) -> Result<measure::Measured> {
        let Some(img) = self.image.clone() else {
            return Err(Error::input(
                "a slow device needs an image target (a mounted directory cannot be put on one)",
            ));
        };
        self.unmount()?;
        let drives = self.drives.as_ref().map(|d| d.drives.clone());
        let mut fed = None;
        let measured = SlowMount::mount(&img, &self.mnt, dev, drives.as_ref()).and_then(|mut s| {
            let copies = s.sync_drives().and_then(|()| self.drive_copies());
            let device_drive = s.drive_note().map(str::to_string);
            let rdev = Some(s.rdev());
            let m = measure::measure_instance(&self.mnt, rdev, du, grep, Some(&mut || s.renew()));
            let done = s.finish();
            let mut m = m?;
            let (reads, f) = done?;
            fed = Some(f);
            m.figures.set_device_reads(reads);
            m.figures.device_drive = device_drive;
            m.drives = copies?;
            Ok(m)
        });
        if let Some(d) = self.drives.as_mut() {
            d.count(fed);
        }
        let again = self.mount();
        let fig = measured?;
        again?;
        Ok(fig)
    }
}

/// Runs (or, with `resume`, continues) a Git-history aging run.
pub fn git_age(opts: &GitAgeOptions, obs: &mut dyn Observer) -> Result<Outcome> {
    let state_file = state_path(&opts.target);
    let image = match &opts.target {
        Target::Image { path, .. } => Some(path.clone()),
        Target::Dir { .. } => None,
    };
    // What was there before this run is never removed on its way out.
    let had_image = image.as_ref().is_some_and(|p| p.exists());
    let had_state = state_file.exists();
    let had_mnt = image
        .as_ref()
        .is_some_and(|p| measure::mount_dir(p).exists());
    let had_drives = image
        .as_ref()
        .is_some_and(|p| crate::drives::drives_path(p).exists());
    let out = match opts.mem_limit {
        None => git_age_inner(opts, obs),
        Some(bytes) if bytes >= MIN_MEM_LIMIT => {
            let cg = enter_mem_limit(bytes)?;
            obs.note(&format!(
                "running in memory cgroup {} (cgroup {}), limited to {}",
                cg.path().display(),
                cg.version(),
                fsage_units::format_size(bytes)
            ));
            let out = git_age_inner(opts, obs);
            // Left and removed whatever the run did (the guard does it on a panic too).
            let left = cg
                .remove()
                .map_err(|e| Error::operation(format!("the memory cgroup: {e}")));
            let out = out?;
            left?;
            Ok(out)
        }
        // Refused by the checks, before anything is made.
        Some(_) => git_age_inner(opts, obs),
    };
    if let (Err(_), Some(image)) = (&out, &image) {
        // The run's mount is down (its guard went with the error): leave nothing but what a
        // resume needs, and say what that is.
        let mnt = measure::mount_dir(image);
        if !had_mnt && !fsage_sys::is_mount_point(&mnt) {
            let _ = std::fs::remove_dir(&mnt);
        }
        if !had_image && image.exists() {
            // How the image was made is for `image save` of a finished run; not needed to resume.
            let _ = std::fs::remove_file(fsage_lab::fs::sidecar_path(image));
            if state_file.exists() && !had_state {
                obs.note(&format!(
                    "kept {} and its checkpoint {} for `--resume` (remove both to start again)",
                    image.display(),
                    state_file.display()
                ));
            } else if !state_file.exists() {
                // Failed before its first checkpoint: nothing to resume from.
                let _ = std::fs::remove_file(image);
                if !had_drives {
                    let _ = std::fs::remove_dir_all(crate::drives::drives_path(image));
                }
            }
        }
    }
    out
}

/// The smallest `--mem-limit`: below it git and grep themselves would be killed.
pub const MIN_MEM_LIMIT: u64 = 128 << 20;

/// A new memory cgroup (`fsage-git-age-PID-N-RANDOM`), limited to `bytes` and entered by the
/// whole process: what the run reads and writes is charged to it, page cache included.
fn enter_mem_limit(bytes: u64) -> Result<fsage_workload::cgroup::MemCgroup> {
    let mut cg = fsage_workload::cgroup::MemCgroup::create_named("fsage-git-age")
        .map_err(|e| Error::operation(format!("--mem-limit: {e}")))?;
    cg.set_limit(bytes)
        .and_then(|()| cg.enter())
        .map_err(|e| Error::operation(format!("--mem-limit: {e}")))?;
    Ok(cg)
}

/// The names fsage makes beside the image (or the clean image) for itself: each must be absent
/// or not a symbolic link, checked with lstat before anything is made, mounted or removed. A link
/// at `IMAGE.mnt` would have the aged image mounted over its target and replayed into; one at
/// `IMAGE.clean` would have another file system unmounted; one at the traces or the bundle's
/// clone would have fsage write elsewhere.
fn check_neighbours(opts: &GitAgeOptions) -> Result<()> {
    use fsage_sys::safe::lstat_own_name;
    let clean = match &opts.target {
        Target::Image { path, .. } => {
            lstat_own_name(&measure::mount_dir(path), "the mount point fsage makes")?;
            fsage_sys::with_suffix(path, ".clean")
        }
        Target::Dir { clean_image, .. } => clean_image.clone(),
    };
    lstat_own_name(&clean, "the clean instance's image")?;
    lstat_own_name(
        &measure::mount_dir(&clean),
        "the clean instance's mount point",
    )?;
    lstat_own_name(&source_clone_path(&opts.target), "the bundle's clone")?;
    lstat_own_name(&traces_path(&opts.target), "the traces directory")?;
    if let Target::Image { path, .. } = &opts.target {
        lstat_own_name(
            &crate::drives::drives_path(path),
            "the directory of the aged drives",
        )?;
    }
    Ok(())
}

fn git_age_inner(opts: &GitAgeOptions, obs: &mut dyn Observer) -> Result<Outcome> {
    fsage_signals::install();
    check_neighbours(opts)?;
    if opts.every == 0 {
        return Err(Error::input(
            "measure every N commits: N must be at least 1",
        ));
    }
    if opts.device.is_some() && matches!(opts.target, Target::Dir { .. }) {
        return Err(Error::input(
            "measuring on a slow device needs an image target (fsage mounts the image through \
             the device); a directory on a mounted file system cannot be",
        ));
    }
    if opts.grep_reps == 0 {
        return Err(Error::input("--grep-reps: at least 1 grep per measurement"));
    }
    if opts.warm_cache && opts.device.is_some() {
        return Err(Error::input(
            "--warm-cache measures the aged instance as the replay left it in memory; a slow \
             device means mounting it again on the device, which starts its cache cold: give one",
        ));
    }
    if let Some(l) = opts.mem_limit {
        if l < MIN_MEM_LIMIT {
            return Err(Error::input(format!(
                "--mem-limit {}: at least {} (git, grep and fsage itself run inside the limit, \
                 and a process over it is killed)",
                fsage_units::format_size(l),
                fsage_units::format_size(MIN_MEM_LIMIT)
            )));
        }
    }
    for (i, m) in opts.cost_models.iter().enumerate() {
        if opts.cost_models[..i].iter().any(|o| o.name == m.name) {
            return Err(Error::input(format!(
                "--cost-models: `{}` is given twice",
                m.name
            )));
        }
    }
    // Every check of the input before anything is made.
    let state_file = state_path(&opts.target);
    let traces_dir = traces_path(&opts.target);
    let facts = check_target(opts, &state_file)?;
    if let Some(d) = &opts.device {
        d.model.build(facts.size).map_err(|e| {
            Error::input(format!(
                "--device-model: {}: {} (for a device of {} bytes)",
                d.model.name, e.message, facts.size
            ))
        })?;
    }
    for m in &opts.cost_models {
        m.build(facts.size).map_err(|e| {
            Error::input(format!(
                "--cost-models: {}: {} (for a device of {} bytes)",
                m.name, e.message, facts.size
            ))
        })?;
    }
    if !opts.resume
        && !opts.no_measure
        && std::fs::read_dir(&traces_dir).is_ok_and(|mut d| d.next().is_some())
    {
        return Err(Error::input(format!(
            "{}: traces of an earlier run are there; move or remove them to start again",
            traces_dir.display()
        )));
    }
    // The cost models (and the measuring device's model) that keep a drive state get drives
    // aged by the replay's own writes: an image target's (a directory's history is not fsage's
    // to trace: its greps are costed on erased drives).
    let drive_specs = match &opts.target {
        Target::Image { .. } => crate::drives::stateful(
            &opts
                .cost_models
                .iter()
                .chain(opts.device.as_ref().map(|d| &d.model))
                .collect::<Vec<_>>(),
        ),
        Target::Dir { .. } => Vec::new(),
    };
    // Without tracefs nothing can be fed (nor a grep traced to cost): the drives stay erased.
    let no_tracefs = !drive_specs.is_empty() && !Path::new("/sys/kernel/tracing").is_dir();
    let drive_specs = if no_tracefs { Vec::new() } else { drive_specs };
    crate::drives::check_names(&drive_specs)?;
    if let (Target::Image { path, .. }, false) = (&opts.target, opts.resume) {
        let dir = crate::drives::drives_path(path);
        if std::fs::read_dir(&dir).is_ok_and(|mut d| d.next().is_some()) {
            return Err(Error::input(format!(
                "{}: drive states of an earlier run are there; move or remove them to start \
                 again",
                dir.display()
            )));
        }
    }
    // One run per target at a time: a second one (a resume given twice, say) must not reuse, and
    // on its way out remove, the bundle clone the first is pulling from.
    let _lock =
        fsage_exec::preflight::lock_run(&state_file).map_err(|e| Error::input(e.to_string()))?;
    // And the image's lock, as every command that makes, mounts or ages an image takes it: an
    // `fs mount` or `age` of the same image is refused while this run has it.
    let _image_lock = match &opts.target {
        Target::Image { path, .. } => {
            Some(fsage_sys::lock::lock_target_or_refuse(path, "the image")?)
        }
        Target::Dir { .. } => None,
    };
    if let Some(p) = &opts.op_log {
        if !opts.resume {
            check_dir_of(p)?;
        }
    }
    if let (Target::Dir { path, .. }, Some(log)) = (&opts.target, &opts.op_log) {
        let inside = match (parent_dir(log).canonicalize(), path.canonicalize()) {
            (Ok(l), Ok(t)) => l.starts_with(t),
            _ => false,
        };
        if inside {
            return Err(Error::input(format!(
                "{}: the op log would be inside the tree being aged; put it elsewhere",
                log.display()
            )));
        }
    }
    let git_version = git::version()?;
    let grep_version = measure::grep_version()?;
    let source = git::open_source(&opts.repo, &source_clone_path(&opts.target), opts.resume)?;
    let commits = git::commit_list(&source.path, &opts.range)?;
    let n = commits.len();
    let kind = facts.clean_kind;
    let size = facts.size;
    if let (Target::Image { .. }, false) = (&opts.target, opts.resume) {
        check_fits(&source.path, &commits[n - 1].id, size)?;
    }
    // A plain latency keys the run as before models (older checkpoints resume); any other
    // model is keyed by its whole spec.
    let plain_latency = opts.device.as_ref().and_then(|d| {
        let l = d.latencies()?;
        (d.model == fsage_device::ModelSpec::fixed(l.read_ns)).then_some(l.read_ns)
    });
    let key = RunKey {
        repo: source.origin.to_string_lossy().into_owned(),
        mode: opts.mode.name().into(),
        fs: facts.aged_fs.clone(),
        clean_fs: match &opts.target {
            Target::Image { .. } => None,
            Target::Dir { clean_kind, .. } => Some(clean_kind.name().into()),
        },
        size,
        every: opts.every,
        gc: opts.gc,
        first: commits[0].id.clone(),
        last: commits[n - 1].id.clone(),
        commits: n as u64,
        device: plain_latency.map(Latencies::uniform),
        device_model: opts
            .device
            .as_ref()
            .filter(|_| plain_latency.is_none())
            .map(|d| d.model.clone()),
        grep_reps: opts.grep_reps,
        cost_models: opts.cost_models.clone(),
        think: opts.think,
        sync_each_pull: opts.sync_each_pull,
        warm_cache: opts.warm_cache,
        mem_limit: opts.mem_limit,
    };

    // The aged instance, new or resumed.
    let prior = if opts.resume {
        let st = load_state(&state_file)?;
        if st.key != key {
            return Err(Error::input(format!(
                "{}: the checkpoint was made with other settings ({:?}); resume with the same \
                 repository, range, file systems, size, mode, every, gc, device latency or \
                 model, grep repetitions, cost models, think rule and sync",
                state_file.display(),
                st.key
            )));
        }
        Some(st)
    } else {
        None
    };
    let outputs = match &prior {
        Some(st) => Outputs::resumed(Outputs::given(opts), &st.outputs, &state_file)?,
        None => Outputs::given(opts),
    };
    let mut drive_notes = Vec::new();
    let mut aged = match &opts.target {
        Target::Image { path, kind, size } => {
            let mnt = measure::mount_dir(path);
            if prior.is_none() {
                fsage_lab::create_image(*kind, *size, path, &measure::aged_mkfs_opts(*kind))?;
            } else if !fsage_sys::loops_backed_by(path).is_empty() {
                obs.note(&format!(
                    "unmounting {} (left mounted by a stopped run)",
                    path.display()
                ));
                fsage_lab::mount::umount(path)?;
            }
            fsage_sys::safe::make_mount_dir(&mnt)?;
            // Resolved once it is checked (made here, or an empty one of root's, no link).
            let mnt = mnt
                .canonicalize()
                .map_err(|e| crate::Error::io(&mnt, "", e))?;
            let drives = match (drive_specs.is_empty(), &prior) {
                (true, _) => None,
                (false, None) => Some(AgedDrives::new(&drive_specs, *size, path)?),
                (false, Some(_)) => Some(AgedDrives::load(
                    &drive_specs,
                    *size,
                    path,
                    &mut drive_notes,
                )?),
            };
            let mut a = Aged {
                image: Some(path.clone()),
                dir_rdev: None,
                tree: mnt.join(&source.name),
                mnt,
                mounted: None,
                drives,
            };
            a.mount()?;
            a
        }
        Target::Dir { path, .. } => {
            let p = path
                .canonicalize()
                .map_err(|e| crate::Error::io(path, "", e))?;
            Aged {
                image: None,
                dir_rdev: facts.dir_rdev,
                mnt: p.clone(),
                mounted: None,
                tree: p,
                drives: None,
            }
        }
    };
    let clean_image = match &opts.target {
        Target::Image { path, .. } => fsage_sys::with_suffix(path, ".clean"),
        Target::Dir { clean_image, .. } => clean_image.clone(),
    };
    measure::remove_stale_clean(&clean_image)?;

    let mut series = match &prior {
        Some(st) => st.series.clone(),
        None => GitSeries {
            format: SERIES_FORMAT.into(),
            repo: key.repo.clone(),
            mode: key.mode.clone(),
            fs: key.fs.clone(),
            clean_fs: kind.name().into(),
            no_measure: opts.no_measure,
            size_bytes: size,
            every: opts.every,
            gc: opts.gc,
            tree: aged.tree.to_string_lossy().into_owned(),
            first_commit: key.first.clone(),
            last_commit: key.last.clone(),
            commits_total: n as u64,
            pulls_done: 0,
            finished: false,
            remounted: matches!(opts.target, Target::Image { .. }) && !opts.warm_cache,
            warm_cache: opts.warm_cache,
            mem_limit_bytes: opts.mem_limit,
            device_latencies: opts.device.as_ref().and_then(|d| d.latencies()),
            device_model: opts.device.as_ref().map(|d| d.model.clone()),
            grep_reps: opts.grep_reps,
            cost_models: opts.cost_models.clone(),
            cost_think: opts.think,
            sync_each_pull: opts.sync_each_pull,
            traces_dir: None,
            aged_drives: drive_specs.iter().map(|m| m.name.clone()).collect(),
            drives_dir: aged
                .drives
                .as_ref()
                .map(|d| d.dir.to_string_lossy().into_owned()),
            drive_notes: match &opts.target {
                Target::Image { .. } if no_tracefs => {
                    vec![
                        "no tracefs (/sys/kernel/tracing): the drives are not aged by the \
                          replay; a device starts erased"
                            .into(),
                    ]
                }
                Target::Dir { .. } if opts.cost_models.iter().any(|m| m.keeps_state()) => {
                    vec![
                        "a directory target: its greps are costed on erased drives (pages \
                          read as data written in logical order), not on drives aged by its \
                          history"
                            .into(),
                    ]
                }
                _ => Vec::new(),
            },
            replay_seconds: 0.0,
            measure_seconds: 0.0,
            commits_per_second: None,
            git_version,
            grep_version,
            rows: Vec::new(),
        },
    };

    // Where to go on from.
    let mut done = 0usize;
    let mut replay: Option<TreeReplay> = None;
    match opts.mode {
        Mode::Git => {
            if prior.is_none() {
                std::fs::create_dir_all(&aged.tree)
                    .map_err(|e| crate::Error::io(&aged.tree, "mkdir", e))?;
                git::init_aged(&aged.tree, opts.gc)?;
            } else {
                if !aged.tree.join(".git").is_dir() {
                    return Err(Error::input(format!(
                        "{}: no repository there to resume",
                        aged.tree.display()
                    )));
                }
                let want = series.pulls_done as usize;
                // Remove the index lock a killed pull left before asking git anything.
                let lock = aged.tree.join(".git/index.lock");
                if lock.exists() {
                    std::fs::remove_file(&lock)
                        .map_err(|e| crate::Error::io(&lock, "remove", e))?;
                }
                match git::head(&aged.tree)? {
                    None if want == 0 => {}
                    None => {
                        return Err(Error::input(format!(
                            "{}: the repository has no commit, but the checkpoint says {want} \
                             were pulled",
                            aged.tree.display()
                        )))
                    }
                    Some(h) => {
                        let k = commits.iter().position(|c| c.id == h).ok_or_else(|| {
                            Error::input(format!(
                                "{}: HEAD {h} is not one of the commits being replayed",
                                aged.tree.display()
                            ))
                        })?;
                        if k + 1 < want {
                            return Err(Error::input(format!(
                                "{}: HEAD is commit {} of the replay but the checkpoint says {want} \
                                 were pulled",
                                aged.tree.display(),
                                k + 1
                            )));
                        }
                        git::restore_worktree(&aged.tree)?;
                        done = k + 1;
                        if done > want {
                            obs.note(&format!(
                                "the repository is {} commits past the checkpoint; going on from \
                                 there",
                                done - want
                            ));
                        }
                    }
                }
            }
        }
        Mode::Tree => {
            let (files, log, tick) = match &prior {
                None => {
                    std::fs::create_dir_all(&aged.tree)
                        .map_err(|e| crate::Error::io(&aged.tree, "mkdir", e))?;
                    (
                        tree::Files::new(),
                        outputs.op_log.as_deref().map(|p| (p, None)),
                        0,
                    )
                }
                Some(st) => {
                    done = st.series.pulls_done as usize;
                    let expect = if done == 0 {
                        tree::Files::new()
                    } else {
                        tree::ls_tree(&source.path, &commits[done - 1].id)?
                    };
                    let on_disk = tree::disk_files(&aged.tree)?;
                    if on_disk != expect {
                        return Err(Error::operation(format!(
                            "{}: the working tree does not match commit {} of the checkpoint \
                             (stopped in the middle of a commit); start the run again",
                            aged.tree.display(),
                            done
                        )));
                    }
                    let log = match (&outputs.op_log, st.op_log_len) {
                        (Some(p), Some(len)) => Some((p.as_path(), Some(len))),
                        (Some(p), None) => Some((p.as_path(), None)),
                        (None, _) => None,
                    };
                    (expect, log, st.tick)
                }
            };
            replay = Some(TreeReplay::open(
                &aged.tree,
                &source.path,
                files,
                log,
                tick,
            )?);
        }
    }
    series.pulls_done = done as u64;
    series.no_measure = opts.no_measure;
    if prior.is_some() {
        obs.note(&format!(
            "resuming at commit {} of {n} ({} measurements so far)",
            done,
            series.rows.len()
        ));
        if let Some(d) = aged.drives.as_mut() {
            d.gap_notes(done as u64, &mut drive_notes);
        }
    }
    for note in drive_notes {
        obs.note(&note);
        series.drive_notes.push(format!("at pull {done}: {note}"));
    }

    let pattern = measure::random_pattern();
    let checkpoint = |series: &GitSeries, replay: &mut Option<TreeReplay>| -> Result<()> {
        let (op_log_len, tick) = match replay.as_mut() {
            Some(r) => (r.op_log_len()?, r.tick()),
            None => (None, 0),
        };
        save_state(
            &state_file,
            &State {
                format: STATE_FORMAT.into(),
                key: key.clone(),
                series: series.clone(),
                op_log_len,
                tick,
                outputs: outputs.clone(),
            },
        )
    };
    let measure_at = |i: usize,
                      aged: &mut Aged,
                      series: &mut GitSeries,
                      replay: &mut Option<TreeReplay>,
                      obs: &mut dyn Observer|
     -> Result<()> {
        if opts.no_measure {
            return Ok(());
        }
        let t = Instant::now();
        if let Some(r) = replay.as_mut() {
            r.suspend(); // its descriptors would keep the file system busy
        }
        // Warm: measured as the replay left it (neither remounted nor synced).
        let rdev = if opts.warm_cache {
            aged.rdev()
        } else {
            aged.remount()?
        };
        let prepare_seconds = t.elapsed().as_secs_f64();
        let du = measure::du_bytes(&aged.tree)?;
        let grep = measure::Grep {
            pattern: &pattern,
            reps: opts.grep_reps,
            warm: opts.warm_cache,
        };
        let mut a = match &opts.device {
            None => {
                let copies = aged.drive_copies()?;
                let mut a = measure::measure_instance(&aged.mnt, rdev, du, grep, None)?;
                a.drives = copies;
                a
            }
            Some(d) => aged.measure_slow(d, du, grep)?,
        };
        a.figures.prepare_seconds = prepare_seconds;
        let c = measure::clean_instance(
            kind,
            size,
            &clean_image,
            &aged.tree,
            du,
            // The clean copy, the reference, is measured cold.
            measure::Grep {
                warm: false,
                ..grep
            },
            opts.device.as_ref(),
            &drive_specs,
        )?;
        let c0: &Commit = &commits[i];
        let pulls = i as u64 + 1;
        let mut figs = Vec::new();
        for (which, m) in [("aged", a), ("clean", c)] {
            let mut f = m.figures;
            if let Some(mut tr) = m.trace {
                tr.source =
                    format!(
                    "cold grep -r of the {which} instance ({} on {}) at pull {pulls}, commit {}, \
                     of {}",
                    if which == "aged" { &key.fs } else { kind.name() },
                    fsage_units::format_size(size),
                    c0.id,
                    key.repo
                );
                tr.device_size = Some(size);
                if fsage_sys::safe::lstat_own_name(&traces_dir, "the traces directory")?.is_none() {
                    std::fs::create_dir(&traces_dir)
                        .map_err(|e| crate::Error::io(&traces_dir, "mkdir", e))?;
                }
                let file = traces_dir.join(format!("{pulls:05}-{which}.json"));
                tr.write(&file)?;
                f.trace_file = Some(file.to_string_lossy().into_owned());
                series.traces_dir = Some(traces_dir.to_string_lossy().into_owned());
                let t = Instant::now();
                f.modeled = measure::cost_on_models(
                    &tr,
                    &opts.cost_models,
                    size,
                    du,
                    opts.think,
                    &m.drives,
                )?;
                f.cost_seconds = t.elapsed().as_secs_f64();
            }
            figs.push(f);
        }
        let (c, a) = (
            figs.pop().unwrap_or_default(),
            figs.pop().unwrap_or_default(),
        );
        let modeled_ratio = opts
            .cost_models
            .iter()
            .map(|m| crate::series::ModeledRatio {
                model: m.name.clone(),
                ratio: match (a.modeled_on(&m.name), c.modeled_on(&m.name)) {
                    (Some(x), Some(y)) if y.seconds > 0.0 => Some(x.seconds / y.seconds),
                    _ => None,
                },
            })
            .collect();
        let row = GitRow {
            pulls,
            commit: c0.id.clone(),
            commit_date: c0.date.clone(),
            du_bytes: du,
            ratio: (c.grep_seconds > 0.0).then(|| a.grep_seconds / c.grep_seconds),
            modeled_ratio,
            aged: a,
            clean: c,
        };
        obs.measured(&row);
        series.rows.push(row);
        series.measure_seconds += t.elapsed().as_secs_f64();
        Ok(())
    };
    // A measurement the stopped run owed (killed between a measured commit and its checkpoint).
    if done > 0
        && is_measured(done - 1, n, opts.every)
        && series.rows.last().map(|r| r.pulls) != Some(done as u64)
        && !opts.no_measure
    {
        measure_at(done - 1, &mut aged, &mut series, &mut replay, obs)?;
        aged.save_drives(done as u64)?;
        checkpoint(&series, &mut replay)?;
    }
    if prior.is_none() {
        aged.save_drives(0)?;
        checkpoint(&series, &mut replay)?;
    }

    let mut interrupted = false;
    let replay_before = series.replay_seconds;
    let mut replay_this = 0.0;
    for i in done..n {
        if fsage_signals::interrupted() {
            interrupted = true;
            break;
        }
        let t = Instant::now();
        match (&mut replay, opts.mode) {
            (Some(r), Mode::Tree) => r.commit(
                i.checked_sub(1).map(|p| commits[p].id.as_str()),
                &commits[i].id,
            )?,
            _ => {
                git::pull(&aged.tree, &source.path, &commits[i].id)?;
                let h = git::head(&aged.tree)?;
                if h.as_deref() != Some(commits[i].id.as_str()) {
                    return Err(Error::operation(format!(
                        "after pulling {} the aged repository's HEAD is {:?}, not that commit",
                        commits[i].id, h
                    )));
                }
            }
        }
        if opts.sync_each_pull {
            aged.sync()?;
        }
        replay_this += t.elapsed().as_secs_f64();
        series.replay_seconds = replay_before + replay_this;
        series.pulls_done = i as u64 + 1;
        obs.progress(i as u64 + 1, n as u64, series.replay_seconds);
        if is_measured(i, n, opts.every) && !opts.no_measure {
            match measure_at(i, &mut aged, &mut series, &mut replay, obs) {
                Ok(()) => {}
                // Ctrl-C in the middle of a measurement (mkfs, say, stops on it): the
                // measurement is dropped and a resume takes it first.
                Err(_) if fsage_signals::interrupted() => {
                    interrupted = true;
                    break;
                }
                Err(e) => return Err(e),
            }
            aged.save_drives(i as u64 + 1)?;
            checkpoint(&series, &mut replay)?;
        } else if opts.mode == Mode::Tree {
            checkpoint(&series, &mut replay)?;
        }
    }
    series.finished = series.pulls_done as usize == n;
    series.commits_per_second =
        (series.replay_seconds > 0.0).then(|| series.pulls_done as f64 / series.replay_seconds);
    checkpoint(&series, &mut replay)?;
    drop(replay);
    if aged.mounted.is_some() {
        // The drives are saved again once the unmount's writes are in them.
        aged.unmount()?;
        aged.save_drives(series.pulls_done)?;
        let _ = std::fs::remove_dir(&aged.mnt);
    }
    Ok(Outcome {
        series,
        interrupted,
        state: state_file,
        json: outputs.json,
        csv: outputs.csv,
    })
}

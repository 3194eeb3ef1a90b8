//! The executor that runs cells on this machine: images on loop devices, the slow device, the
//! workload engine.
//!
//! For every file system and state it makes one base image, once: formatted (fresh), formatted
//! and aged with the same library call as `fsage age --fs` (aged), or restored from the image
//! library (image). The base image is never mounted read-write again: each cell starts from a
//! sparse copy of it, so that every cell sees the same layout whatever the cells before it wrote
//! (this is the "restore before every run instead of re-aging"). A cell then attaches the copy,
//! through a slow device of the cell's latency or device model when it has one, mounts it, runs
//! the workload (caches dropped, the page cache limited when the experiment says so), unmounts
//! and removes the copy.
//!
//! A base image is complete when its `KEY.base.json` exists; one without it (a run killed while
//! aging) is made again. A run killed in a cell leaves a mount or a slow device behind: the next
//! run removes those that are under its own image directory, and nothing else.
//!
//! The executor's jobs, one module each: [`base`] makes and checks the base images (and the
//! layout measured on each), [`drive`] the drive state a cell's device starts from (an SSD
//! model's), [`cell`] runs one cell on its copy (the slow device, the workload step, the record
//! of where it ran), [`dirs`] the image and scratch directories and the clean-up of a killed
//! run. Every step a kernel must serve goes through [`LabExecutor::run_step`]: here or in a
//! guest, as the plan decided.

mod base;
mod cell;
mod dirs;
mod drive;

pub use base::{probe_bytes, BaseImage, PROBE_BYTES};
pub use cell::{cpu_model, slurm_job};
pub use dirs::{check_images_dir, open_images_dir, IMAGES_MARKER};
pub(crate) use drive::{aging_model, drive_model};

use crate::guest;
use crate::runner::{CellRun, Event, Executor, RunObserver};
use crate::spec::{Cell, StateSpec};
use crate::Error;
use fsage_core::age::{AgeObserver, Level};
use fsage_host::{Guest, Host, InGuest, QemuGuest, Ran, Runs, Step};
use fsage_lab::FsKind;
use fsage_slowdev::Registry;
use fsage_sys::Blamed;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dirs::{clean_under, scratch_work};
use drive::DriveStart;

/// Runs cells on this machine. `out` is the experiment's output directory (aging and layout
/// reports of the base images go to `out/aging` and `out/frag`); `images` holds the base images
/// and each cell's working copy.
pub struct LabExecutor {
    out: PathBuf,
    images: PathBuf,
    bases: BTreeMap<String, BaseImage>,
    /// Base images that could not be made in this run, with why: their other cells fail at once
    /// instead of making them again.
    failed_bases: BTreeMap<String, Error>,
    library: fsage_core::image::Library,
    registry: Registry,
    /// Where each cell's working copy is made and mounted: a new directory of this run or task
    /// under the `--scratch` root ([`crate::storage::Scratch`]), locked while it runs.
    work: PathBuf,
    _work_lock: fsage_exec::preflight::RunLock,
    /// What `work` is on, recorded in every cell's environment.
    storage: crate::storage::Storage,
    /// A Slurm task: the image directory is shared with other tasks (on this node and others),
    /// so it is not locked whole; a base image is made under a lock of its own.
    shared: bool,
    /// The host of the steps of cells that run here ([`fsage_host::Local`]; a recording one
    /// in tests).
    local: Box<dyn Host>,
    /// Where the steps of cells that need another kernel run ([`fsage_host::InGuest`]).
    guest: Box<dyn Guest>,
    /// fsage's own binary, which the guest runs.
    exe: PathBuf,
    /// A local run's lock of the whole image directory (a Slurm task shares it).
    _lock: Option<fsage_exec::preflight::RunLock>,
}

/// `out` from the root: a guest runs its commands from `/`, so a relative output directory
/// (`--out run`) would name another place there.
fn absolute(out: &Path) -> Result<PathBuf, Error> {
    std::path::absolute(out).map_err(|e| Error::input(format!("{}: {e}", out.display())))
}

impl LabExecutor {
    /// Prepares `images` (made if missing; refused if it holds anything but an earlier run's
    /// images), takes its lock, and cleans up what a killed run left in it.
    pub fn new(
        out: &Path,
        images: &Path,
        scratch: &crate::storage::Scratch,
    ) -> Result<LabExecutor, crate::Error> {
        let images = open_images_dir(images)?;
        let marker = images.join(IMAGES_MARKER);
        // Two runs sharing an image directory would overwrite each other's working copy.
        let lock = fsage_exec::preflight::lock_run(&marker).map_err(|e| {
            crate::Error::input(format!(
                "{}: {e} (another experiment run uses this image directory)",
                images.display()
            ))
        })?;
        // What a killed run left beside the bases (an aging's mount); its working copies are
        // in its own scratch directory, cleaned below.
        clean_under(&images, &Registry::new(Registry::default_root()))?;
        LabExecutor::open(out, images, scratch, "run", Some(lock))
    }

    /// The executor of one `experiment run-cell` (a Slurm task, or a run by hand): base images
    /// come from (or are made in) `images`, which other tasks share, so only the base being made
    /// is locked; each cell's working copy goes to a new directory of this task named from
    /// `scratch` (`SCRATCH-RANDOM`, mode 0700) in node-local memory, made and locked after what a
    /// killed task of the same name left is cleaned up ([`task_work_dir`]).
    pub fn for_task(
        out: &Path,
        images: &Path,
        scratch: &crate::storage::Scratch,
        name: &str,
    ) -> Result<LabExecutor, Error> {
        let images = open_images_dir(images)?;
        LabExecutor::open(out, images, scratch, name, None)
    }

    /// The one constructor behind [`LabExecutor::new`] and [`LabExecutor::for_task`]: the
    /// scratch directory named from `name` under `out`'s run, and what a killed run left
    /// cleaned up. `lock` is the whole image directory's (a local run's), or none (a task
    /// among others sharing it: its images are shared, so only a base being made is locked).
    fn open(
        out: &Path,
        images: PathBuf,
        scratch: &crate::storage::Scratch,
        name: &str,
        lock: Option<fsage_exec::preflight::RunLock>,
    ) -> Result<LabExecutor, Error> {
        let out = absolute(out)?;
        let (work, work_lock, storage) = scratch_work(&out, &images, scratch, name)?;
        let ex = LabExecutor {
            out,
            images,
            bases: BTreeMap::new(),
            failed_bases: BTreeMap::new(),
            library: fsage_core::image::Library::open(&fsage_core::image::default_library_dir()),
            registry: Registry::new(Registry::default_root()),
            work,
            _work_lock: work_lock,
            storage,
            shared: lock.is_none(),
            local: Box::new(fsage_host::Local),
            guest: Box::new(QemuGuest { echo: false }),
            exe: guest::own_exe(),
            _lock: lock,
        };
        ex.clean_leftovers()?;
        Ok(ex)
    }

    /// Makes the base image of `cell` if it is not made yet (a Slurm base job), and the base
    /// its drive state comes from, and says where the cell's base is.
    pub fn make_base_of(
        &mut self,
        cell: &Cell,
        obs: &mut dyn RunObserver,
    ) -> Result<BaseImage, Error> {
        let base = self.base(cell, obs)?;
        // And the base whose drive state the cell starts from, when it is another's.
        self.drive_of(cell, &base, obs)?;
        Ok(base)
    }

    /// Runs the cells that need another kernel in `guest` instead of QEMU (tests).
    pub fn with_guest(mut self, guest: Box<dyn Guest>) -> LabExecutor {
        self.guest = guest;
        self
    }

    /// Runs the steps of native cells on `local` instead of [`fsage_host::Local`] (tests).
    pub fn with_local_host(mut self, local: Box<dyn Host>) -> LabExecutor {
        self.local = local;
        self
    }

    /// Runs `step` where the plan put the cell (`runs`): the one path of every step, here or in
    /// a guest.
    fn run_step(
        &mut self,
        runs: &Runs,
        step: &Step,
        obs: &mut dyn RunObserver,
    ) -> Result<Ran, Error> {
        let mut notes = StepNotes { obs };
        match runs {
            Runs::Native => self.local.run(step, &mut notes),
            Runs::Guest { kernel } => InGuest {
                guest: &mut *self.guest,
                kernel: kernel.clone(),
                exe: self.exe.clone(),
                cwd: "/".into(),
                channel_parent: self.work.clone(),
            }
            .run(step, &mut notes),
        }
    }

    /// The working directory of the cells (the scratch directory of a task).
    pub fn work_dir(&self) -> &Path {
        &self.work
    }

    /// Unmounts what is mounted under the working directory (the image directory of a local
    /// run, the scratch directory of a task) and destroys the slow devices whose backing file is
    /// there: the remains of a run that was killed. Touches nothing else (a task leaves the
    /// shared image directory alone: other tasks work there).
    fn clean_leftovers(&self) -> Result<(), crate::Error> {
        clean_under(&self.work, &self.registry)
    }
}

impl Drop for LabExecutor {
    /// The run's or task's working directory is empty once its cells are done (and a killed
    /// one's is cleaned up by the next run of the same name): never removed through a mount.
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.work);
    }
}

impl Executor for LabExecutor {
    fn run_cell(&mut self, cell: &Cell, obs: &mut dyn RunObserver) -> Result<CellRun, Error> {
        let had = self.bases.len();
        let base = self.base(cell, obs)?;
        let base_seconds = (self.bases.len() > had).then_some(base.seconds);
        let work = self.work.join("cell.img");
        let mnt = self.work.join("cell.mnt");
        // The copy, and the drive state a device running an SSD model saved beside it.
        let state = fsage_slowdev::state_file_of(&work);
        let _ = std::fs::remove_file(&work);
        let _ = std::fs::remove_file(&state);
        let r = match (cell.placement, drive_model(cell)) {
            // The image copied through the device onto a drive in the state asked for; the
            // drive the cell leaves is kept for the next cell that continues it.
            (Some(p), Some(m)) => self
                .place(cell, m, p, &base, &work, obs)
                .and_then(|placed| {
                    let r =
                        self.cell_inner(cell, &base, DriveStart::Placed(placed), &work, &mnt, obs);
                    self.keep_last_drive(cell, m, p, &state);
                    r
                }),
            _ => self.drive_of(cell, &base, obs).and_then(|drive| {
                // The device starts from this drive state, a copy: the base keeps its own.
                if let Some((src, _)) = &drive {
                    std::fs::copy(src, &state).map_err(io_at(state.display()))?;
                }
                self.cell_inner(
                    cell,
                    &base,
                    DriveStart::Restored(drive.map(|(_, d)| d)),
                    &work,
                    &mnt,
                    obs,
                )
            }),
        }
        .map(|r| CellRun { base_seconds, ..r });
        let _ = std::fs::remove_file(&work);
        let _ = std::fs::remove_file(&state);
        let _ = std::fs::remove_dir(&mnt);
        r
    }
}

/// `WHAT: ERROR`, keeping who is to blame for the error (an interrupted step stays one).
fn step<E: Blamed + std::fmt::Display>(what: impl std::fmt::Display) -> impl FnOnce(E) -> Error {
    move |e| Error {
        message: format!("{what}: {e}"),
        blame: e.blame(),
        remedy: e.remedy(),
    }
}

/// A failed system call: `WHAT: ERROR` (`what`: the path, or the call).
fn io_at(what: impl std::fmt::Display) -> impl FnOnce(std::io::Error) -> Error {
    move |e| Error::operation(format!("{what}: {e}"))
}

/// Aging notices as runner notes (warnings only: aging's progress talk would flood a log).
/// What a step says, as the run's notes: the aging's warnings, the workload's notes.
struct StepNotes<'a> {
    obs: &'a mut dyn RunObserver,
}

impl fsage_exec::Observer for StepNotes<'_> {}

impl AgeObserver for StepNotes<'_> {
    fn notice(&mut self, level: Level, text: &str) {
        if level == Level::Warning {
            self.obs.event(&Event::Note(text));
        }
    }
}

impl fsage_host::StepObserver for StepNotes<'_> {
    fn note(&mut self, msg: &str) {
        self.obs.event(&Event::Note(msg));
    }
}

/// A cell's mount options. Every working copy of a base has the base's UUID, and XFS refuses
/// to mount a second file system of one UUID: two cells of one base at once on a node (Slurm
/// tasks) need `nouuid`, which skips only that check. Given always, so no result depends on it.
/// A working copy's mount options, from its kind's descriptor: every copy of a base has the
/// base's UUID, and XFS refuses a second file system of one UUID on a node (Slurm tasks) unless
/// `nouuid` (given always, so no result depends on it).
fn mount_options(cell: &Cell) -> String {
    FsKind::by_name(&cell.fs.kind)
        .map_or("", FsKind::copy_mount_options)
        .into()
}

/// What must hold before the first cell: root, the file systems' tools, the library images the
/// states name, and the slow device's needs when a latency is asked for.
pub fn preflight(spec: &crate::ExperimentSpec, plan: &crate::Plan) -> Result<(), crate::Error> {
    if !fsage_sys::is_root() {
        return Err(crate::Error::input(
            "an experiment mounts images and attaches loop devices: run it as root",
        ));
    }
    for f in &spec.file_systems {
        let kind = FsKind::parse(&f.kind).map_err(|e| crate::Error::input(e.to_string()))?;
        kind.check_tools()
            .map_err(|e| crate::Error::input(e.to_string()))?;
    }
    // Where each cell runs was decided when it was planned: a guest's needs, once per file
    // system and kernel.
    let mut checked = std::collections::BTreeSet::new();
    for c in &plan.cells {
        let runs = crate::spec::runs_of(c);
        if checked.insert((c.fs.label.clone(), runs.label())) {
            guest::check_runs(&runs, &c.fs.label).map_err(|e| crate::Error {
                message: format!("{}: {}", spec.origin, e.message),
                ..e
            })?;
        }
    }
    let lib = fsage_core::image::Library::open(&fsage_core::image::default_library_dir());
    for s in &spec.states {
        if let StateSpec::Image { name, .. } = s {
            lib.load(name).map_err(|e| {
                crate::Error::input(format!("{}: state image {name:?}: {e}", spec.origin))
            })?;
        }
    }
    if spec.devices.iter().any(Option::is_some) && !Path::new("/dev/fuse").exists() {
        return Err(crate::Error::input(format!(
            "{}: device latencies and models need the slow device, which needs /dev/fuse (not \
             found)",
            spec.origin
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests;

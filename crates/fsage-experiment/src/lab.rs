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

use crate::analysis::{FlashCounters, FlowopLatency};
use crate::guest;
use crate::result::{DriveState, Environment};
use crate::runner::{write_json, CellRun, Event, Executor, RunObserver};
use crate::spec::{Cell, DriveSpec, FsSpec, StateSpec, WorkloadSource};
use crate::{Error, Sample};
use fsage_core::age::{AgeObserver, AgeRequest, Level, NewFs};
use fsage_host::{
    AgeStep, BenchStep, FragStep, Guest, Host, InGuest, Mount, QemuGuest, Ran, Runs, Step,
    StepResult, WorkloadText,
};
use fsage_lab::sparse::{copy_image, CopyOptions, Holes};
use fsage_lab::{FsKind, Mounted};
use fsage_slowdev::{Backing, DeviceMount, DeviceSpec, Registry, SlowDevice};
use fsage_sys::Blamed;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What is known of a finished base image (`KEY.base.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BaseImage {
    pub key: String,
    pub image: PathBuf,
    pub fs: FsSpec,
    pub state: StateSpec,
    pub size: u64,
    /// SHA-256 of the whole image (holes as zeros).
    pub sha256: String,
    /// Seconds it took to make (aging included).
    pub seconds: f64,
    /// SHA-256 of the drive state its aging left (`KEY.img.ftl`), for a base aged on an SSD
    /// model; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drive_sha256: Option<String>,
}

/// The cell's device model when it keeps a drive state (an SSD): then aged base images are
/// aged through it, and the cell's drive is the one its `drive` names.
pub(crate) fn drive_model(cell: &Cell) -> Option<&fsage_device::ModelSpec> {
    cell.device_model.as_ref().filter(|m| m.keeps_state())
}

/// The model an aged base is aged through: the cell's drive model, unless the experiment ages
/// in memory (`age_on = "memory"`), when the base is the plain one.
pub(crate) fn aging_model(cell: &Cell) -> Option<&fsage_device::ModelSpec> {
    drive_model(cell).filter(|_| !cell.aged_in_memory)
}

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

/// The marker of an image directory the runner made; it cleans up and writes only in such a
/// directory (or a new or empty one, which it marks).
pub const IMAGES_MARKER: &str = ".fsage-experiment-images";

/// What is said when a base is aged: with which profile, in a guest or not, on a drive or not.
fn aging_note(cell: &Cell, label: &str, in_vm: bool) -> String {
    let vm = match (in_vm, &cell.fs.kernel) {
        (false, _) => String::new(),
        (true, None) => " in a VM".to_string(),
        (true, Some(k)) => format!(" in a VM under kernel {k}"),
    };
    let drive = aging_model(cell).map_or(String::new(), |m| {
        format!(
            ", writing data, on the drive of model {} (it ages too)",
            m.name
        )
    });
    format!(
        "aging {} with {label}{vm}{drive} (once; every cell of this state starts from a copy)",
        cell.fs.label
    )
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
        let out = absolute(out)?;
        let (work, work_lock, storage) = scratch_work(&out, &images, scratch, "run")?;
        let ex = LabExecutor {
            out,
            bases: BTreeMap::new(),
            failed_bases: BTreeMap::new(),
            library: fsage_core::image::Library::open(&fsage_core::image::default_library_dir()),
            registry: Registry::new(Registry::default_root()),
            work,
            _work_lock: work_lock,
            storage,
            shared: false,
            images,
            local: Box::new(fsage_host::Local),
            guest: Box::new(QemuGuest { echo: false }),
            exe: guest::own_exe(),
            _lock: Some(lock),
        };
        ex.clean_leftovers()?;
        Ok(ex)
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
            shared: true,
            local: Box::new(fsage_host::Local),
            guest: Box::new(QemuGuest { echo: false }),
            exe: guest::own_exe(),
            _lock: None,
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

    /// The base image of a cell's file system and state, made when missing; a base that failed
    /// in this run fails its other cells at once.
    fn base(&mut self, cell: &Cell, obs: &mut dyn RunObserver) -> Result<BaseImage, Error> {
        let key = self.base_key(cell)?;
        if let Some(e) = self.failed_bases.get(&key) {
            return Err(Error {
                message: format!("base image {key} (failed earlier in this run): {e}"),
                ..e.clone()
            });
        }
        let r = self.make_base(&key, cell, obs);
        if let Err(e) = &r {
            if !fsage_signals::interrupted() {
                self.failed_bases.insert(key, e.clone());
            }
        }
        r
    }

    fn make_base(
        &mut self,
        key: &str,
        cell: &Cell,
        obs: &mut dyn RunObserver,
    ) -> Result<BaseImage, Error> {
        let key = key.to_string();
        if let Some(b) = self.bases.get(&key) {
            return Ok(b.clone());
        }
        let meta = self.images.join(format!("{key}.base.json"));
        let image = self.images.join(format!("{key}.img"));
        // A finished base is reused as it was made; checked before the lock, so that tasks
        // running cells of one base at once do not find it locked while another one hashes it.
        if let Ok(b) = reusable(&meta, &image) {
            self.bases.insert(key, b.clone());
            return Ok(b);
        }
        // Tasks share the image directory: one makes a base, another finding it locked fails
        // (in a submission the base's own job makes it and the cells wait for that job).
        let _base_lock = if self.shared {
            Some(fsage_exec::preflight::lock_run(&meta).map_err(|e| {
                Error::operation(format!(
                    "base image {key}: {e} (another task is making it on this node)"
                ))
            })?)
        } else {
            None
        };
        // Made meanwhile by another task, or changed since it was made.
        match reusable(&meta, &image) {
            Ok(b) => {
                self.bases.insert(key, b.clone());
                return Ok(b);
            }
            Err(Some(why)) => obs.event(&Event::Note(&format!(
                "warning: base image {key} is made again: {why}"
            ))),
            Err(None) => {}
        }
        // Half-made: start again.
        for p in [
            image.clone(),
            fsage_lab::fs::sidecar_path(&image),
            fsage_slowdev::state_file_of(&image),
            meta.clone(),
        ] {
            let _ = std::fs::remove_file(p);
        }
        let _ = std::fs::remove_dir(fsage_sys::with_suffix(&image, ".mnt"));
        let t0 = std::time::Instant::now();
        let kind = FsKind::parse(&cell.fs.kind)?;
        let mkfs_opts: Vec<String> = cell
            .fs
            .mkfs_opts
            .as_deref()
            .unwrap_or("")
            .split_whitespace()
            .map(String::from)
            .collect();
        match &cell.state {
            StateSpec::Fresh => {
                obs.event(&Event::Note(&format!(
                    "making the fresh {} image {}",
                    cell.fs.label,
                    image.display()
                )));
                fsage_lab::create_image(kind, cell.image_size, &image, &mkfs_opts)
                    .map_err(step("mkfs"))?;
            }
            StateSpec::Aged {
                profile,
                label,
                fullness,
                seed,
                max_ops,
                max_time_s,
            } => {
                let runs = cell.runs();
                let drive = aging_model(cell);
                obs.event(&Event::Note(&aging_note(cell, label, runs.is_guest())));
                let aging = self.out.join("aging");
                std::fs::create_dir_all(&aging).map_err(io_at(aging.display()))?;
                // A guest reads a profile file by the text the cell was planned with, written
                // where it is given to it.
                let profile = match (&cell.profile_file, &runs) {
                    (Some(pf), Runs::Guest { .. }) => {
                        let f = self.images.join(format!("{key}.profile.toml"));
                        std::fs::write(&f, &pf.text).map_err(io_at(f.display()))?;
                        f.to_string_lossy().into_owned()
                    }
                    _ => profile.clone(),
                };
                let req = AgeRequest {
                    profile: Some(profile),
                    target: Some(image.clone()),
                    fullness: *fullness,
                    seed: *seed,
                    threads: 1,
                    stop: fsage_exec::StopConditions {
                        max_ops: *max_ops,
                        max_time: max_time_s.map(Duration::from_secs_f64),
                        ..Default::default()
                    },
                    json: Some(aging.join(format!("{key}.json"))),
                    checkpoint_interval: Duration::from_secs(3600),
                    new_fs: Some(NewFs {
                        kind,
                        size: Some(cell.image_size),
                        mkfs_opts: mkfs_opts.clone(),
                        device: None,
                    }),
                    // The drive sees only what is written: aging by fallocate (the default)
                    // would leave it nearly erased.
                    write_mode: drive.map(|_| fsage_exec::WriteMode::Write),
                    device_model: drive.cloned(),
                    ..Default::default()
                };
                let out = match (drive, &runs) {
                    // The drive's model sees a guest's requests where they reach the host: a
                    // loop device on the image, given to the guest as its disk and traced here
                    // as `age` traces its own. The file system is made here first, so that
                    // mkfs is not fed to the drive (as natively); the guest mounts the device
                    // and ages its root.
                    (Some(m), Runs::Guest { .. }) => {
                        fsage_lab::create_image(kind, cell.image_size, &image, &mkfs_opts)
                            .map_err(step("mkfs"))?;
                        let lo = fsage_lab::LoopDevice::attach(&image, false)
                            .map_err(step("attaching the image"))?;
                        let d = fsage_core::age::DriveAging::start(m, &image, lo.path())
                            .map_err(step("tracing the drive"))?;
                        let on_drive = Step::Age(Box::new(AgeStep {
                            request: AgeRequest {
                                target: None,
                                new_fs: None,
                                device_model: None,
                                force: true,
                                ..req
                            },
                            mount: Some(Mount {
                                device: lo.path().to_path_buf(),
                                fs: cell.fs.kind.clone(),
                                options: mount_options(cell),
                                point: fsage_sys::with_suffix(&image, ".mnt"),
                            }),
                            resumed: None,
                        }));
                        let o = self.run_step(&runs, &on_drive, obs);
                        // The trace ends whatever the guest did; the drive is saved only when
                        // the aging ran (a failed base is made again from an erased drive).
                        let said = match &o {
                            Ok(Ran {
                                result: StepResult::Age(a),
                                ..
                            }) if a.report.stop_reason != fsage_exec::StopReason::Interrupted
                                && a.report.stop_reason != fsage_exec::StopReason::IoError =>
                            {
                                Some(d.finish().map_err(step("the drive's state"))?)
                            }
                            _ => {
                                drop(d);
                                None
                            }
                        };
                        drop(lo);
                        let o = o?;
                        if let Some(said) = said {
                            obs.event(&Event::Note(&said));
                        }
                        o
                    }
                    _ => self.run_step(
                        &runs,
                        &Step::Age(Box::new(AgeStep {
                            request: req,
                            mount: None,
                            resumed: None,
                        })),
                        obs,
                    )?,
                };
                let StepResult::Age(out) = out.result else {
                    return Err(Error::operation("aging: the host answered another step"));
                };
                match out.report.stop_reason {
                    fsage_exec::StopReason::Interrupted => {
                        return Err(Error::interrupted("aging: interrupted"))
                    }
                    fsage_exec::StopReason::IoError => {
                        return Err(Error::operation(format!(
                            "aging: stopped on an I/O error: {}",
                            out.report
                                .error
                                .as_ref()
                                .map_or("(no detail)", |e| e.as_str())
                        )))
                    }
                    _ => {}
                }
            }
            StateSpec::Image { name, .. } => {
                obs.event(&Event::Note(&format!(
                    "restoring library image {name} for {}",
                    cell.fs.label
                )));
                let m = self
                    .library
                    .load(name)
                    .map_err(step(format!("library image {name}")))?;
                if m.fs.as_deref() != Some(kind.name()) {
                    return Err(Error::input(format!(
                        "library image {name} holds {}, not {}",
                        m.fs.as_deref().unwrap_or("no known file system"),
                        kind.name()
                    )));
                }
                self.library
                    .restore(name, &image, false)
                    .map_err(step(format!("restoring {name}")))?;
            }
        }
        self.measure_layout(&key, &image, cell, obs);
        let sha256 = fsage_core::image::sha256_image(&image)
            .map_err(|e| format!("checksum of {}: {e}", image.display()))?;
        let size = std::fs::metadata(&image)
            .map_err(io_at(image.display()))?
            .len();
        let ftl = fsage_slowdev::state_file_of(&image);
        let drive_sha256 = if ftl.exists() {
            Some(
                fsage_core::image::sha256_image(&ftl)
                    .map_err(|e| format!("checksum of {}: {e}", ftl.display()))?,
            )
        } else {
            None
        };
        let b = BaseImage {
            key: key.clone(),
            image,
            fs: cell.fs.clone(),
            state: cell.state.clone(),
            size,
            sha256,
            seconds: t0.elapsed().as_secs_f64(),
            drive_sha256,
        };
        write_json(&meta, &b)?;
        // The output directory keeps a copy: the image directory may be in /dev/shm, gone after
        // a reboot, and a base made again may differ from the one earlier cells ran on.
        let rec = self.out.join("bases").join(format!("{key}.json"));
        if let Some(old) = std::fs::read_to_string(&rec)
            .ok()
            .and_then(|t| serde_json::from_str::<BaseImage>(&t).ok())
        {
            if old.sha256 != b.sha256 {
                obs.event(&Event::Note(&format!(
                    "warning: base image {key} was made again and differs from the one the \
                     cells before ran on (SHA-256 {} now, {} then); each cell records the \
                     checksum of its image",
                    &b.sha256[..12],
                    &old.sha256[..old.sha256.len().min(12)]
                )));
            }
        }
        let _ = std::fs::create_dir_all(self.out.join("bases"));
        write_json(&rec, &b).map_err(step("recording the base image"))?;
        self.bases.insert(key, b.clone());
        Ok(b)
    }

    /// The free-space and file layout of a base image, for the report (read-only mount, where
    /// the cell runs), and, natively, a probe file's fragments (on a scratch copy; not built in
    /// a guest); a failure is not the cell's, so it is only left out.
    fn measure_layout(&mut self, key: &str, image: &Path, cell: &Cell, obs: &mut dyn RunObserver) {
        let runs = cell.runs();
        let mnt = fsage_sys::with_suffix(image, ".mnt");
        let step = Step::Frag(Box::new(FragStep {
            mount: Mount {
                device: image.to_path_buf(),
                fs: cell.fs.kind.clone(),
                options: "ro".into(),
                point: mnt.clone(),
            },
        }));
        let measured = self.run_step(&runs, &step, obs);
        let _ = std::fs::remove_dir(&mnt);
        let mut rep = match measured.map(|r| r.result) {
            Ok(StepResult::Frag(rep)) => rep,
            Ok(_) => {
                obs.event(&Event::Note(&format!(
                    "no layout measurement of {key}: the host answered another step"
                )));
                return;
            }
            Err(e) => {
                obs.event(&Event::Note(&format!(
                    "no layout measurement of {key}: {e}"
                )));
                return;
            }
        };
        if runs.is_guest() {
            obs.event(&Event::Note(&format!(
                "layout of {key} measured in a VM (no probe file: not built there)"
            )));
        } else {
            // The probe writes: never on the base itself, on a scratch copy.
            match self.probe_copy(key, image, cell.image_size) {
                Ok(p) => rep.probe = Some(p),
                Err(e) => obs.event(&Event::Note(&format!("no probe measurement of {key}: {e}"))),
            }
        }
        let dir = self.out.join("frag");
        let w = std::fs::create_dir_all(&dir)
            .map_err(|e| e.to_string())
            .and_then(|_| {
                write_json(&dir.join(format!("{key}.json")), &rep).map_err(|e| e.to_string())
            });
        if let Err(e) = w {
            obs.event(&Event::Note(&format!("layout of {key} not written: {e}")));
        }
    }

    /// Writes, maps and deletes a probe file ([`probe_bytes`]) on a sparse scratch copy of the
    /// base image `image`, which is removed afterwards: the base itself is never mounted
    /// read-write again.
    fn probe_copy(
        &self,
        key: &str,
        image: &Path,
        image_size: u64,
    ) -> Result<fsage_measure::Probe, Error> {
        let copy = self.images.join(format!("{key}.probe.img"));
        let mnt = fsage_sys::with_suffix(&copy, ".mnt");
        struct Scratch<'a>(&'a Path, &'a Path);
        impl Drop for Scratch<'_> {
            fn drop(&mut self) {
                let _ = std::fs::remove_file(self.0);
                let _ = std::fs::remove_dir(self.1);
            }
        }
        let _ = std::fs::remove_file(&copy);
        let _scratch = Scratch(&copy, &mnt);
        copy_image(
            image,
            &copy,
            CopyOptions {
                force: false,
                holes: Holes::Skip,
                verify: false,
            },
        )
        .map_err(step("copying the image"))?;
        std::fs::create_dir_all(&mnt).map_err(io_at(mnt.display()))?;
        let m = Mounted::attach_and_mount(&copy, &mnt).map_err(step("mount"))?;
        let r = fsage_measure::sys::statfs(m.mount_point())
            .map_err(io_at("statfs"))
            .and_then(|info| {
                let avail = info.blocks_avail.saturating_mul(info.block_size);
                fsage_measure::probe(m.mount_point(), probe_bytes(image_size, avail))
                    .map_err(step("probe"))
            });
        m.finish().map_err(step("unmount"))?;
        r
    }

    /// The drive state a cell's device starts from (the state file and where it came from), or
    /// none for an erased drive: the base's own drive, or the drive of the aged state the cell
    /// names (whose base is made first if it is not there yet).
    fn drive_of(
        &mut self,
        cell: &Cell,
        base: &BaseImage,
        obs: &mut dyn RunObserver,
    ) -> Result<Option<(PathBuf, DriveState)>, Error> {
        if drive_model(cell).is_none() {
            return Ok(None);
        }
        let from = match &cell.drive {
            None => base.clone(),
            Some(DriveSpec::Erased) => return Ok(None),
            Some(DriveSpec::Of {
                state,
                profile_file,
            }) => {
                let mut other = cell.clone();
                other.state = state.clone();
                other.profile_file = profile_file.clone();
                other.drive = None;
                let b = self.base(&other, obs)?;
                if b.drive_sha256.is_none() {
                    return Err(Error::operation(format!(
                        "base image {} has no drive state to run {} on",
                        b.key, cell.fs.label
                    )));
                }
                b
            }
        };
        Ok(from.drive_sha256.clone().map(|sha256| {
            (
                fsage_slowdev::state_file_of(&from.image),
                DriveState {
                    base: from.key.clone(),
                    sha256,
                },
            )
        }))
    }

    fn cell_inner(
        &mut self,
        cell: &Cell,
        base: &BaseImage,
        start: DriveStart,
        work: &Path,
        mnt: &Path,
        obs: &mut dyn RunObserver,
    ) -> Result<CellRun, Error> {
        let (drive, placed) = match start {
            DriveStart::Restored(d) => (d, None),
            DriveStart::Placed(p) => (None, Some(p)),
        };
        // A placed image is on its drive already (copied through a device of its own).
        if placed.is_none() {
            copy_image(
                &base.image,
                work,
                CopyOptions {
                    force: false,
                    holes: Holes::Skip,
                    verify: false,
                },
            )
            .map_err(step("restoring the base image"))?;
        }
        std::fs::create_dir_all(mnt).map_err(io_at(mnt.display()))?;
        let mut device: Option<DeviceMount> = None;
        // A model's device is the working copy, so the model is built for the image's size (the
        // experiment file was refused if the model could not hold it).
        let spec = match (&cell.device_model, cell.latency_us) {
            (Some(m), _) => Some(DeviceSpec::with_model(
                Backing::Image(work.to_path_buf()),
                m.clone(),
            )),
            (None, Some(us)) => Some(DeviceSpec::new(
                Backing::Image(work.to_path_buf()),
                (us * 1000.0).round() as u64,
            )),
            (None, None) => None,
        };
        let block: PathBuf = match spec {
            Some(mut spec) => {
                // The drive state copied beside the working copy (see `drive_of`), or an erased
                // drive; what the device saves at the end goes with the copy.
                spec.fresh_state = drive.is_none() && placed.is_none();
                spec.registry = self.registry.root().to_path_buf();
                let d = device.insert(DeviceMount::create(&spec).map_err(step("slow device"))?);
                d.path().to_path_buf()
            }
            None => work.to_path_buf(),
        };
        // The workload where the plan put the cell: one step that mounts the device (or the
        // working copy), runs the workload and unmounts, here or in a guest.
        let runs = cell.runs();
        let bench = Step::Bench(Box::new(BenchStep {
            mount: Mount {
                device: block.clone(),
                fs: cell.fs.kind.clone(),
                options: mount_options(cell),
                point: mnt.to_path_buf(),
            },
            workload: match &cell.workload.source {
                WorkloadSource::Builtin { name } => WorkloadText::Builtin { name: name.clone() },
                WorkloadSource::File { path, text } => WorkloadText::File {
                    origin: path.display().to_string(),
                    text: text.clone(),
                },
            },
            set: cell.workload.set.clone(),
            duration_s: cell.duration_s,
            warmup_s: cell.warmup_s,
            seed: cell.seed,
            cache_ratio: cell.cache_ratio,
            sample_s: cell.sample_s,
            data: cell.workload.data,
        }));
        if runs.is_guest() {
            obs.event(&Event::Note(&format!(
                "{}: mounting and running {} in a VM{}",
                cell.fs.label,
                cell.workload.label,
                cell.fs
                    .kernel
                    .as_ref()
                    .map_or(String::new(), |k| format!(" under kernel {k}"))
            )));
        }
        let ran = self.run_step(&runs, &bench, obs);
        // A file system the step could not unmount is still on the device (here; a guest's
        // mounts end with it).
        let still_mounted = fsage_sys::mountinfo::is_mount_point(mnt);
        let stats = device.as_ref().and_then(|d| d.device().stats().ok());
        let dev_json = device.as_ref().and_then(|d| {
            let mut v = serde_json::to_value(d.device().record()).ok()?;
            if let (Some(o), Some(st)) = (v.as_object_mut(), &stats) {
                o.insert("stats".into(), serde_json::to_value(st).ok()?);
            }
            Some(v)
        });
        // An SSD's counters over the cell (fileset creation and warm-up included).
        let flash = stats
            .as_ref()
            .and_then(|st| st.model.as_ref()?.stats.as_ref()?.ssd())
            .map(FlashCounters::from);
        let destroyed = match device {
            // Stopping the daemon under a file system that is still mounted would fail its I/O:
            // the device stays for the next run's clean-up.
            Some(d) if still_mounted => {
                std::mem::forget(d);
                Ok(())
            }
            Some(d) => d.finish().map_err(step("slow device")),
            None => Ok(()),
        };
        let ran = ran?;
        destroyed?;
        let vm = ran.guest;
        let StepResult::Bench(r) = ran.result else {
            return Err(Error::operation("workload: the host answered another step"));
        };
        let Some(rep) = r.reps.first() else {
            return Err(Error::operation("workload: no repetition was measured"));
        };
        let sample = Sample {
            fs: cell.fs.label.clone(),
            state: cell.analysis_state(),
            workload: cell.workload.label.clone(),
            latency_us: cell.latency_us,
            device_model: cell.device_label(),
            rep: cell.rep,
            ops_per_s: rep.overall.ops_per_sec,
            flowops: rep
                .flowops
                .iter()
                .filter_map(|f| {
                    Some(FlowopLatency {
                        flowop: f.name.clone(),
                        p99_us: f.stats.p99_us?,
                        max_us: f.stats.max_us?,
                    })
                })
                .collect(),
            flash,
            platform: Default::default(),
        };
        if rep.overall.ops == 0 && !r.interrupted {
            return Err(Error::operation(
                "workload: no operation completed in the measured time",
            ));
        }
        let (drive, placement) = match placed {
            Some(p) => (p.drive_state, Some(p.record)),
            None => (drive, None),
        };
        let mut env = Environment {
            drive_state: drive,
            placement,
            storage: Some(self.storage.clone()),
            ..environment(cell, base, &r.workload_text, dev_json)
        };
        let mut sample = sample;
        if let Some(o) = &vm {
            guest::in_guest(&mut env, &mut sample, &r, o);
        }
        let r = *r;
        Ok(CellRun {
            samples: vec![sample],
            environment: Some(env),
            workload_report: serde_json::to_value(&r).ok(),
            interrupted: r.interrupted,
            base_seconds: None,
        })
    }
}

/// A cell's image on its drive ([`LabExecutor::place`]): the working copy written through a
/// device of the model, whose drive state it saved beside the copy.
struct Placed {
    record: crate::result::PlacementRecord,
    /// The drive the cell continued (`drive = "previous"`): the cell that left it, its checksum.
    drive_state: Option<DriveState>,
}

/// What a cell's device starts from: the base image restored beside a drive state (none:
/// erased), or the image placed on its drive by a copy.
enum DriveStart {
    Restored(Option<DriveState>),
    Placed(Placed),
}

/// Record of the drive a cell left (`last-drive.*.json`): which cell, and the state's SHA-256.
#[derive(Serialize, Deserialize)]
struct LastDrive {
    cell: String,
    sha256: String,
}

impl LabExecutor {
    /// Where the drive of a cell's model is kept between cells (`drive = "previous"`): one per
    /// model (its text) and image size, as one physical drive that every cell on it shares.
    fn last_drive(&self, cell: &Cell, m: &fsage_device::ModelSpec) -> PathBuf {
        let def = serde_json::to_string(&(&m.text, cell.image_size)).expect("plain data");
        let h = crate::hex(&Sha256::digest(def.as_bytes())[..4]);
        let name: String = m
            .name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-._".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        self.images.join(format!("last-drive.{name}-{h}.ftl"))
    }

    /// Keeps the drive state a placed cell's device saved (`state`, beside the working copy) as
    /// its model's last drive, with the cell's id; a cell whose device saved none (it did not
    /// stop cleanly) leaves the last drive as it was, and says so.
    fn keep_last_drive(&self, cell: &Cell, m: &fsage_device::ModelSpec, state: &Path) {
        let dest = self.last_drive(cell, m);
        let kept = std::fs::read(state)
            .map_err(|e| e.to_string())
            .and_then(|bytes| {
                let sha256 = crate::hex(&Sha256::digest(&bytes));
                fsage_sys::write_atomic_private(&dest, &bytes).map_err(|e| e.to_string())?;
                let meta = fsage_sys::with_suffix(&dest, ".json");
                write_json(
                    &meta,
                    &LastDrive {
                        cell: cell.id.clone(),
                        sha256,
                    },
                )
                .map_err(|e| e.to_string())
            });
        if let Err(e) = kept {
            eprintln!(
                "warning: the drive cell {} left is not kept for the next ({e}); a cell that \
                 continues it starts from the drive before",
                cell.id
            );
        }
    }

    /// Writes the cell's base image onto a drive of model `m` in the state `p.drive` asks for,
    /// through a device of its own that is then destroyed (so the cell's device starts with
    /// empty caches and counters of its own): the working copy and its drive state result.
    fn place(
        &mut self,
        cell: &Cell,
        m: &fsage_device::ModelSpec,
        p: crate::spec::Placement,
        base: &BaseImage,
        work: &Path,
        obs: &mut dyn RunObserver,
    ) -> Result<Placed, Error> {
        use crate::spec::{CopyMethod, DriveBefore};
        let state = fsage_slowdev::state_file_of(work);
        // The drive before the copy.
        let mut previous = None;
        if p.drive == DriveBefore::Previous {
            let last = self.last_drive(cell, m);
            let meta = fsage_sys::with_suffix(&last, ".json");
            if let (Ok(bytes), Ok(t)) = (std::fs::read(&last), std::fs::read_to_string(&meta)) {
                let ld: LastDrive = serde_json::from_str(&t)
                    .map_err(|e| Error::operation(format!("{}: {e}", meta.display())))?;
                if crate::hex(&Sha256::digest(&bytes)) != ld.sha256 {
                    return Err(Error::operation(format!(
                        "{}: the drive cell {} left has changed since (its SHA-256 is not the \
                         one recorded in {}); remove both to start from an erased drive",
                        last.display(),
                        ld.cell,
                        meta.display()
                    )));
                }
                fsage_sys::write_atomic_private(&state, &bytes)
                    .map_err(|e| Error::operation(format!("{}: {e}", state.display())))?;
                previous = Some(ld);
            }
        }
        // The working copy: an empty file of the image's size, which the copy fills.
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(work)
            .and_then(|f| f.set_len(base.size))
            .map_err(io_at(work.display()))?;
        let mut spec = DeviceSpec::with_model(Backing::Image(work.to_path_buf()), m.clone());
        spec.fresh_state = previous.is_none();
        spec.registry = self.registry.root().to_path_buf();
        let d = SlowDevice::create(&spec)
            .map_err(step("slow device for the copy"))?
            .into_guard();
        let drive_before = match (p.drive, &previous) {
            (DriveBefore::Erased, _) => "erased".to_string(),
            (DriveBefore::Preconditioned, _) => {
                let said = d
                    .device()
                    .precondition(2.0, cell.seed)
                    .map_err(step("preconditioning the drive"))?;
                format!("preconditioned: {said}")
            }
            (DriveBefore::Previous, Some(ld)) => format!("as cell {} left it", ld.cell),
            (DriveBefore::Previous, None) => {
                "erased: no cell had run on this drive yet".to_string()
            }
        };
        let holes = match p.copy {
            CopyMethod::Sparse => Holes::ZeroOut,
            CopyMethod::Data => Holes::Skip,
            CopyMethod::Whole => Holes::Write,
        };
        obs.event(&Event::Note(&format!(
            "{} copy of {} onto a drive of {} ({drive_before})",
            p.copy.name(),
            base.key,
            m.name
        )));
        let copied = copy_image(
            &base.image,
            d.path(),
            CopyOptions {
                force: false,
                holes,
                verify: false,
            },
        )
        .map_err(step("copying the image onto the drive"));
        let stats = d.device().stats().ok();
        // Destroyed whatever the copy did: the drive state is saved beside the working copy.
        let destroyed = d.destroy().map_err(step("slow device for the copy"));
        let copied = copied?;
        destroyed?;
        if !state.exists() {
            return Err(Error::operation(format!(
                "{}: the device of the copy saved no drive state",
                state.display()
            )));
        }
        let flash = stats
            .as_ref()
            .and_then(|st| st.model.as_ref()?.stats.as_ref()?.ssd())
            .map(FlashCounters::from);
        let previous_cell = previous.as_ref().map(|ld| ld.cell.clone());
        Ok(Placed {
            drive_state: previous.map(|ld| DriveState {
                base: format!("cell {}", ld.cell),
                sha256: ld.sha256,
            }),
            record: crate::result::PlacementRecord {
                copy: p.copy,
                drive: p.drive,
                drive_before,
                previous_cell,
                data_bytes: copied.data_bytes,
                zeroed_bytes: copied.zeroed_bytes,
                zeros_written: copied.zeros_written,
                copy_s: copied.seconds,
                flash,
            },
        })
    }
}

/// The largest probe written on a scratch copy of a base image: small, so that it costs seconds.
pub const PROBE_BYTES: u64 = 32 << 20;

/// The probe for an image of `image_size` bytes whose file system has `avail` bytes available:
/// 1/32 of the image, at most [`PROBE_BYTES`] (whole MiB, at least 1 MiB), the same for every base
/// of an experiment (against-fresh compares fragments per 100 MiB, but a probe of another size
/// meets the free space differently); at most half of `avail` on an image too full for it.
pub fn probe_bytes(image_size: u64, avail: u64) -> u64 {
    let mib = |b: u64| (b >> 20).max(1) << 20;
    let p = mib((image_size / 32).min(PROBE_BYTES));
    if p <= avail / 2 {
        p
    } else {
        mib(avail / 2)
    }
}

/// The finished base recorded in `meta` for `image`, reused only as it was made: `Err(None)`
/// when there is none (or half of one), `Err(Some(why))` when it changed since.
fn reusable(meta: &Path, image: &Path) -> Result<BaseImage, Option<String>> {
    let text = std::fs::read_to_string(meta).map_err(|_| None)?;
    let b = serde_json::from_str::<BaseImage>(&text).map_err(|_| None)?;
    let drive_kept = b.drive_sha256.is_none() || fsage_slowdev::state_file_of(image).exists();
    if b.image != image || !image.exists() || !drive_kept {
        return Err(None);
    }
    // An image (or drive) changed since would be mounted for every cell of this base.
    check_base(&b).map_err(Some)?;
    Ok(b)
}

/// Whether a base image (and its drive state) still has the SHA-256 recorded when it was made;
/// why not, if not.
fn check_base(b: &BaseImage) -> Result<(), String> {
    let sha = fsage_core::image::sha256_image(&b.image)
        .map_err(|e| format!("checksum of {}: {e}", b.image.display()))?;
    if sha != b.sha256 {
        return Err(format!(
            "{} has SHA-256 {}, not the {} recorded when it was made",
            b.image.display(),
            &sha[..12],
            &b.sha256[..b.sha256.len().min(12)]
        ));
    }
    if let Some(want) = &b.drive_sha256 {
        let ftl = fsage_slowdev::state_file_of(&b.image);
        let sha = fsage_core::image::sha256_image(&ftl)
            .map_err(|e| format!("checksum of {}: {e}", ftl.display()))?;
        if &sha != want {
            return Err(format!(
                "its drive state {} has SHA-256 {}, not the {} recorded",
                ftl.display(),
                &sha[..12],
                &want[..want.len().min(12)]
            ));
        }
    }
    Ok(())
}

/// Refuses an image directory that holds anything but an earlier run's images (or is a file),
/// and one that is a symbolic link, another user's or writable by others: whoever could write
/// there could replace a base image that fsage, as root, mounts for every cell. Nothing is made.
pub fn check_images_dir(images: &Path) -> Result<(), crate::Error> {
    const WHAT: &str = "the image directory";
    let Some(m) = fsage_sys::safe::lstat_own_name(images, WHAT)? else {
        return Ok(());
    };
    if !m.is_dir() {
        return Err(crate::Error::input(format!(
            "{}: the image directory exists and is not a directory",
            images.display()
        )));
    }
    fsage_sys::safe::check_private_dir(images, WHAT)?;
    fsage_sys::safe::check_ancestors(images, WHAT)?;
    if !images.join(IMAGES_MARKER).exists() {
        let mut rd = std::fs::read_dir(images)
            .map_err(|e| crate::Error::input(format!("{}: {e}", images.display())))?;
        if rd.next().is_some() {
            return Err(crate::Error::input(format!(
                "{}: the image directory is not empty and was not made by an experiment run \
                 (no {IMAGES_MARKER}); give a new or empty directory, e.g. /dev/shm/NAME",
                images.display()
            )));
        }
    }
    Ok(())
}

/// Checks the image directory ([`check_images_dir`]), makes it (mode 0700) when missing, and
/// marks it as an experiment's ([`IMAGES_MARKER`]) at once, before any job or cell looks at it:
/// returns its path, resolved once it has passed the checks.
pub fn open_images_dir(images: &Path) -> Result<PathBuf, Error> {
    const WHAT: &str = "the image directory";
    check_images_dir(images)?;
    fsage_sys::safe::ensure_private_dir(images, WHAT)?;
    fsage_sys::safe::check_ancestors(images, WHAT)?;
    let images = images
        .canonicalize()
        .map_err(|e| Error::input(format!("{}: {e}", images.display())))?;
    let marker = images.join(IMAGES_MARKER);
    if !marker.exists() {
        fsage_sys::write_atomic(
            &marker,
            b"base images and working copies of fsage experiment runs\n",
        )
        .map_err(|e| Error::operation(e.to_string()))?;
    }
    Ok(images)
}

/// The working directory of a run or task under the `scratch` root (made if missing): a new
/// `ROOT/fsage-HASH-NAME-RANDOM` ([`task_work_dir`]; HASH from `out`, so that a run or task
/// started again finds and cleans up what a killed one left), its lock, and what it is on.
fn scratch_work(
    out: &Path,
    images: &Path,
    scratch: &crate::storage::Scratch,
    name: &str,
) -> Result<
    (
        PathBuf,
        fsage_exec::preflight::RunLock,
        crate::storage::Storage,
    ),
    Error,
> {
    let root = scratch.root(images)?;
    let (work, lock) = task_work_dir(&scratch_prefix(&root, out, name))?;
    let storage = crate::storage::storage_of(scratch, &root);
    Ok((work, lock, storage))
}

/// `ROOT/fsage-HASH-NAME`: the same for a run or task started again, different for two tasks
/// of one experiment (NAME: the first cell's id, or the base) and for two experiments (HASH).
pub(crate) fn scratch_prefix(root: &Path, out: &Path, name: &str) -> PathBuf {
    use sha2::Digest;
    let h = sha2::Sha256::digest(out.display().to_string().as_bytes());
    root.join(format!("fsage-{}-{name}", crate::hex(&h[..4])))
}

/// A task's working directory: a new `PREFIXRANDOM` (mode 0700) beside `prefix` (its last
/// component the name's start, `fsage-HASH-CELL-`), locked for the task. What a killed task of
/// the same prefix left (its own directories: root's, mode 0700, no link, not locked by a live
/// task) is cleaned up and removed first; anything else of that name is left alone.
fn task_work_dir(prefix: &Path) -> Result<(PathBuf, fsage_exec::preflight::RunLock), Error> {
    let root = prefix
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let start = prefix
        .file_name()
        .map(|n| format!("{}-", n.to_string_lossy()))
        .ok_or_else(|| Error::input(format!("{}: not a directory name", prefix.display())))?;
    if !root.is_dir() {
        std::fs::create_dir_all(root).map_err(|e| {
            Error::input(format!(
                "{}: cannot make the scratch directory: {e}",
                root.display()
            ))
        })?;
    }
    if let Ok(rd) = std::fs::read_dir(root) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(tail) = name.strip_prefix(&start) else {
                continue;
            };
            if tail.len() != 16 || !tail.bytes().all(|b| b.is_ascii_hexdigit()) {
                continue;
            }
            let old = e.path();
            if fsage_sys::safe::check_private_dir(&old, "a killed task's directory").is_err() {
                continue;
            }
            let Ok(lock) = fsage_exec::preflight::lock_run(&old.join(".fsage-task")) else {
                continue; // a live task's
            };
            let old = old.canonicalize().unwrap_or(old);
            let nothing_mounted = || {
                fsage_sys::mounts()
                    .is_ok_and(|m| !m.iter().any(|e| e.mount_point.starts_with(&old)))
            };
            if clean_under(&old, &Registry::new(Registry::default_root())).is_ok()
                && nothing_mounted()
            {
                let _ = std::fs::remove_dir_all(&old);
            }
            drop(lock);
        }
    }
    let work = fsage_sys::safe::create_private_dir(root, &start)?;
    let work = work
        .canonicalize()
        .map_err(|e| Error::input(format!("{}: {e}", work.display())))?;
    let lock = fsage_exec::preflight::lock_run(&work.join(".fsage-task"))
        .map_err(|e| Error::operation(format!("{}: {e}", work.display())))?;
    Ok((work, lock))
}

/// Unmounts what is mounted under `dir` and destroys the slow devices of `registry` whose backing
/// file is there: the remains of a run that was killed.
fn clean_under(dir: &Path, registry: &Registry) -> Result<(), Error> {
    let mounts = fsage_sys::mounts()
        .map_err(|e| Error::operation(format!("reading the mount table: {e}")))?;
    for m in mounts.iter().rev() {
        if m.mount_point.starts_with(dir) {
            fsage_lab::mount::umount_point(&m.mount_point)
                .map_err(|e| Error::operation(format!("cleaning up a killed run: {e}")))?;
        }
    }
    for (_, rec) in registry.list() {
        if rec.backing_file.starts_with(dir) {
            let dev = SlowDevice::open(registry, &rec.name)
                .map_err(|e| Error::operation(format!("cleaning up a killed run: {e}")))?;
            dev.destroy(true)
                .map_err(|e| Error::operation(format!("cleaning up a killed run: {e}")))?;
        }
    }
    Ok(())
}

impl LabExecutor {
    /// The base image's name: the file system and state labels, and a hash of what makes the
    /// image (the file system, the state with the profile's text or the library image's
    /// checksum, the size), so that an edited experiment or profile, or a library image saved
    /// again, does not reuse an image made from something else.
    fn base_key(&self, cell: &Cell) -> Result<String, Error> {
        let source = match &cell.state {
            StateSpec::Fresh => String::new(),
            // A profile file by the text the cell (and its id) was planned with.
            StateSpec::Aged { profile, .. } => {
                match (fsage_profile::builtin(profile), &cell.profile_file) {
                    (Some(_), _) => format!("builtin:{profile}"),
                    (None, Some(pf)) => pf.text.clone(),
                    (None, None) => std::fs::read_to_string(profile)
                        .map_err(io_at(format!("profile {profile}")))?,
                }
            }
            StateSpec::Image { name, .. } => {
                self.library
                    .load(name)
                    .map_err(step(format!("library image {name}")))?
                    .checksums
                    .image_sha256
            }
        };
        // A profile file counts by its text (in `source`), not by where it was found, so moving
        // the experiment's directory does not age its bases again.
        let mut state = cell.state.clone();
        if let StateSpec::Aged { profile, .. } = &mut state {
            if fsage_profile::builtin(profile).is_none() {
                profile.clear();
            }
        }
        // An aged base whose drive ages with it (an SSD model) is its own base, per model: the
        // model's text counts, and its data is written rather than allocated.
        let drive = match (&cell.state, aging_model(cell)) {
            (StateSpec::Aged { .. }, Some(m)) => Some(m),
            _ => None,
        };
        let def = match drive {
            None => serde_json::to_string(&(&cell.fs, &state, cell.image_size, source)),
            Some(m) => serde_json::to_string(&(&cell.fs, &state, cell.image_size, source, &m.text)),
        }
        .expect("plain data serialises");
        let h = crate::hex(&Sha256::digest(def.as_bytes())[..4]);
        Ok(match drive {
            None => format!("{}-{}-{h}", cell.fs.label, cell.state.id_part()),
            Some(m) => format!("{}-{}-{}-{h}", cell.fs.label, cell.state.id_part(), m.name),
        })
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
                    self.keep_last_drive(cell, m, &state);
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

fn environment(
    cell: &Cell,
    base: &BaseImage,
    workload_text: &str,
    device: Option<serde_json::Value>,
) -> Environment {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let memory_bytes = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024);
    Environment {
        fsage_version: env!("CARGO_PKG_VERSION").to_string(),
        kernel: fsage_sys::kernel_release(),
        hostname: read("/proc/sys/kernel/hostname"),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        memory_bytes,
        fs_kind: cell.fs.kind.clone(),
        mkfs_opts: cell.fs.mkfs_opts.clone(),
        image_sha256: Some(base.sha256.clone()),
        seed: cell.seed,
        workload_text: workload_text.to_string(),
        device,
        drive_state: None,
        placement: None,
        platform: Default::default(),
        vm: None,
        cpu_model: cpu_model(),
        slurm_job: slurm_job(),
        storage: None,
    }
}

/// The CPU's model name (`/proc/cpuinfo`), what tells two nodes' hardware apart.
pub fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

/// The Slurm job (`ARRAYJOB_TASK`, or the job id) this process runs in, when it runs in one.
pub fn slurm_job() -> Option<String> {
    let var = |n: &str| std::env::var(n).ok().filter(|v| !v.is_empty());
    match (var("SLURM_ARRAY_JOB_ID"), var("SLURM_ARRAY_TASK_ID")) {
        (Some(a), Some(t)) => Some(format!("{a}_{t}")),
        _ => var("SLURM_JOB_ID"),
    }
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
pub fn preflight(spec: &crate::ExperimentSpec) -> Result<(), crate::Error> {
    if !fsage_sys::is_root() {
        return Err(crate::Error::input(
            "an experiment mounts images and attaches loop devices: run it as root",
        ));
    }
    for f in &spec.file_systems {
        let kind = FsKind::parse(&f.kind).map_err(|e| crate::Error::input(e.to_string()))?;
        kind.check_tools()
            .map_err(|e| crate::Error::input(e.to_string()))?;
        guest::check_guest(f).map_err(|e| crate::Error {
            message: format!("{}: {}", spec.origin, e.message),
            ..e
        })?;
    }
    let lib = fsage_core::image::Library::open(&fsage_core::image::default_library_dir());
    for s in &spec.states {
        if let StateSpec::Image { name, .. } = s {
            lib.load(name).map_err(|e| {
                crate::Error::input(format!("{}: state image {name:?}: {e}", spec.origin))
            })?;
        }
    }
    if (spec.latencies.iter().any(Option::is_some) || !spec.device_models.is_empty())
        && !Path::new("/dev/fuse").exists()
    {
        return Err(crate::Error::input(format!(
            "{}: device latencies and models need the slow device, which needs /dev/fuse (not \
             found)",
            spec.origin
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsage_host::{GuestOutcome, GuestRun};

    /// The disks each guest run was given, and whether read-only.
    type Given = std::sync::Arc<std::sync::Mutex<Vec<Vec<(PathBuf, bool)>>>>;

    /// A guest whose command fails, and that keeps what it was given.
    struct FailingGuest(Given);
    impl Guest for FailingGuest {
        fn run(&mut self, r: &GuestRun) -> Result<GuestOutcome, Error> {
            self.0.lock().unwrap().push(r.disks.clone());
            Ok(GuestOutcome {
                exit_code: 1,
                platform: fsage_sys::PlatformKind::Tcg,
                release: "6.1.0-56-amd64".into(),
                boot_s: 0.1,
                stderr_tail: "fsage: error: the stand-in guest fails".into(),
            })
        }
    }

    /// Aging on an SSD drive in a guest that fails: the base is refused with the guest's
    /// message, the drive keeps no state (a base made again starts from an erased drive), and
    /// the loop device and the trace the host made for the guest are gone.
    #[test]
    fn a_guest_that_fails_to_age_on_a_drive_leaves_no_drive_state_loop_device_or_trace() {
        let test = "a_guest_that_fails_to_age_on_a_drive";
        if let Err(e) = fsage_testkit::need_root_and(&["mkfs.f2fs", "losetup"]) {
            return fsage_testkit::skip(test, e);
        }
        let dir = fsage_testkit::shm_tmp("fsage-lab-guestfail-");
        let model = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../docs/experiments/geriatrix-ssd/ssd-92.toml"),
        )
        .unwrap()
        .replace("\"1113MiB\"", "\"140MiB\"");
        std::fs::write(dir.path().join("ssd.toml"), model).unwrap();
        let text = "name = \"t\"\nduration = \"1s\"\nimage_size = \"128MiB\"\n\
                    [devices]\nlatencies = [\"ssd.toml\"]\n\
                    [[fs]]\nkind = \"f2fs\"\nkernel = \"6.1.0-56\"\n\
                    [[state]]\nkind = \"aged\"\nprofile = \"meyer\"\nmax_ops = 100\n\
                    [[workload]]\nname = \"varmail\"\n";
        let plan = crate::spec::parse(text, "t.toml", dir.path())
            .unwrap()
            .plan();
        let cell = &plan.cells[0];
        assert!(drive_model(cell).is_some() && guest::needs_vm(&cell.fs));
        let seen: Given = Default::default();
        let images = dir.path().join("images");
        let mut ex = LabExecutor::new(&dir.path().join("out"), &images, &Default::default())
            .unwrap()
            .with_guest(Box::new(FailingGuest(seen.clone())));
        let e = ex
            .make_base_of(cell, &mut crate::runner::Quiet)
            .unwrap_err();
        assert!(
            e.message.contains("aging: failed in the guest")
                && e.message.contains("the stand-in guest fails"),
            "{e}"
        );
        // The guest was given one writable loop device; it is detached now.
        let given = seen.lock().unwrap().clone();
        assert_eq!(given.len(), 1, "{given:?}");
        let disks = &given[0];
        assert!(!disks[0].1);
        let name = disks[0]
            .0
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(name.starts_with("loop"), "{disks:?}");
        let backing = std::fs::read_to_string(format!("/sys/block/{name}/loop/backing_file"))
            .unwrap_or_default();
        assert!(
            !backing.contains(&*images.to_string_lossy()),
            "{name} still holds {backing}"
        );
        // No drive state beside any image, and no trace instance of this process left.
        for e in std::fs::read_dir(&images).unwrap() {
            let p = e.unwrap().path();
            assert!(p.extension().is_none_or(|x| x != "ftl"), "{}", p.display());
        }
        let own = format!("fsage-{}-", std::process::id());
        if let Ok(rd) = std::fs::read_dir("/sys/kernel/tracing/instances") {
            for e in rd.flatten() {
                let n = e.file_name().to_string_lossy().into_owned();
                assert!(!n.starts_with(&own), "trace instance {n} left");
            }
        }
    }

    /// The steps a host or a stand-in guest was asked to run, as data.
    type Asked = std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>;

    /// This process's host, recording each step it runs.
    struct RecordingLocal(Asked);
    impl Host for RecordingLocal {
        fn run(
            &mut self,
            step: &Step,
            obs: &mut dyn fsage_host::StepObserver,
        ) -> Result<Ran, Error> {
            self.0
                .lock()
                .unwrap()
                .push(serde_json::to_value(step).unwrap());
            fsage_host::Local.run(step, obs)
        }
    }

    /// A guest that is this process: it reads the request it is handed (`fsage step --json REQ
    /// --out RES`), records it, and serves it here, mounting in a private directory of its own
    /// instead of the guest's tmpfs.
    struct StandInGuest {
        asked: Asked,
        mnt: PathBuf,
    }
    impl Guest for StandInGuest {
        fn run(&mut self, r: &GuestRun) -> Result<GuestOutcome, Error> {
            assert_eq!(r.command[1..3], ["step", "--json"], "{:?}", r.command);
            assert_eq!(r.command[4], "--out");
            let (req, res) = (PathBuf::from(&r.command[3]), PathBuf::from(&r.command[5]));
            let v: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&req).unwrap()).unwrap();
            self.asked.lock().unwrap().push(v);
            let mut step: Step = serde_json::from_slice(&std::fs::read(&req).unwrap()).unwrap();
            step.set_mount_point(&self.mnt);
            std::fs::write(&req, serde_json::to_vec(&step).unwrap()).unwrap();
            let code = match fsage_host::serve(&req, &res) {
                Ok(()) => 0,
                Err(_) => 1,
            };
            Ok(GuestOutcome {
                exit_code: code,
                platform: fsage_sys::PlatformKind::Tcg,
                release: "stand-in".into(),
                boot_s: 0.0,
                stderr_tail: String::new(),
            })
        }
    }

    /// A step with the paths that differ between two runs (images, working copies, mount
    /// points) left out.
    fn without_paths(mut v: serde_json::Value) -> serde_json::Value {
        if let Some(m) = v.get_mut("mount").and_then(|m| m.as_object_mut()) {
            m.remove("device");
            m.remove("point");
        }
        v
    }

    /// The native and the guest path of one experiment cell go through the same host: the same
    /// steps (the base's layout, the workload), the same requests, and a result from each.
    #[test]
    fn a_cell_runs_the_same_steps_natively_and_in_a_guest() {
        let test = "a_cell_runs_the_same_steps_natively_and_in_a_guest";
        if let Err(e) = fsage_testkit::need_root_and(&["mkfs.ext4", "losetup"]) {
            return fsage_testkit::skip(test, e);
        }
        let dir = fsage_testkit::shm_tmp("fsage-lab-host-");
        let text = "name = \"t\"\nduration = \"1s\"\nwarmup = \"0s\"\nimage_size = \"64MiB\"\n\
                    [[fs]]\nkind = \"ext4\"\n[[state]]\nkind = \"fresh\"\n\
                    [[workload]]\nname = \"varmail\"\nset = { nfiles = 20, filesize = \"4k\" }\n";
        let plan = crate::spec::parse(text, "t.toml", dir.path())
            .unwrap()
            .plan();
        let native = plan.cells[0].clone();
        assert_eq!(native.runs, Some(Runs::Native), "decided at plan time");
        let mut in_guest = native.clone();
        in_guest.runs = Some(Runs::Guest { kernel: None });
        let here: Asked = Default::default();
        let there: Asked = Default::default();
        let mnt = dir.path().join("guest-mnt");
        let run = |cell: &Cell, name: &str| {
            let mut ex = LabExecutor::new(
                &dir.path().join(format!("out-{name}")),
                &dir.path().join(format!("images-{name}")),
                &Default::default(),
            )
            .unwrap()
            .with_local_host(Box::new(RecordingLocal(here.clone())))
            .with_guest(Box::new(StandInGuest {
                asked: there.clone(),
                mnt: mnt.clone(),
            }));
            ex.run_cell(cell, &mut crate::runner::Quiet).unwrap()
        };
        let a = run(&native, "native");
        let native_steps: Vec<serde_json::Value> = std::mem::take(&mut *here.lock().unwrap());
        assert!(
            there.lock().unwrap().is_empty(),
            "a native cell asked the guest"
        );
        let b = run(&in_guest, "guest");
        assert!(
            here.lock().unwrap().is_empty(),
            "a guest cell ran a step here"
        );
        let guest_steps: Vec<serde_json::Value> = there.lock().unwrap().clone();
        let kinds = |v: &[serde_json::Value]| -> Vec<String> {
            v.iter()
                .map(|s| s["step"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(kinds(&native_steps), ["frag", "bench"]);
        assert_eq!(kinds(&guest_steps), ["frag", "bench"]);
        for (n, g) in native_steps.iter().zip(&guest_steps) {
            assert_eq!(without_paths(n.clone()), without_paths(g.clone()));
        }
        // The guest mounts in its own directory, not the host's.
        assert_eq!(
            guest_steps[1]["mount"]["point"],
            fsage_host::guest::GUEST_MNT
        );
        // Both measured; the guest's cell says where it ran.
        assert!(a.samples[0].ops_per_s > 0.0 && b.samples[0].ops_per_s > 0.0);
        // (The stand-in's result says it ran natively, as it did: the platform label is the
        // result's own.)
        let env = b.environment.unwrap();
        assert_eq!(env.vm.unwrap().boot_s, 0.0);
        assert!(a.environment.unwrap().vm.is_none());
    }

    #[test]
    fn the_probe_is_a_32nd_of_the_image_at_most_32_mib_and_fits() {
        const MIB: u64 = 1 << 20;
        assert_eq!(probe_bytes(4 << 30, 2 << 30), 32 * MIB);
        assert_eq!(probe_bytes(256 * MIB, 200 * MIB), 8 * MIB);
        // Too full for 8 MiB: half of what is available.
        assert_eq!(probe_bytes(256 * MIB, 10 * MIB), 5 * MIB);
        assert_eq!(probe_bytes(64 * MIB, 0), MIB);
    }
}

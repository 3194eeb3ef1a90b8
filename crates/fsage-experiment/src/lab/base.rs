//! Base images: one per file system and state, made once (formatted, aged, or restored from
//! the library), checked by checksum before it is reused, and its layout measured for the report.

use crate::runner::{write_json, Event, RunObserver};
use crate::spec::{Cell, StateSpec};
use crate::Error;
use fsage_core::age::{AgeRequest, NewFs};
use fsage_host::{AgeStep, FragStep, Mount, Ran, Runs, Step, StepResult};
use fsage_lab::sparse::{copy_image, CopyOptions, Holes};
use fsage_lab::{FsKind, Mounted};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::time::Duration;

use super::{aging_model, io_at, mount_options, step, LabExecutor};

/// What is known of a finished base image (fsage-results': the report reads it).
pub use fsage_results::experiment::base::BaseImage;

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

impl LabExecutor {
    /// The base image of a cell's file system and state, made when missing; a base that failed
    /// in this run fails its other cells at once.
    pub(super) fn base(
        &mut self,
        cell: &Cell,
        obs: &mut dyn RunObserver,
    ) -> Result<BaseImage, Error> {
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
                let runs = crate::spec::runs_of(cell);
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
        let runs = crate::spec::runs_of(cell);
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

//! The drive a cell's device starts from, for a model that keeps a drive state (an SSD): the
//! base's own, another aged state's, or the cell's image placed by a copy onto a drive in a
//! chosen state (erased, preconditioned, as the previous cell left it).

use crate::analysis::FlashCounters;
use crate::result::DriveState;
use crate::runner::{write_json, Event, RunObserver};
use crate::spec::{Cell, DriveSpec};
use crate::Error;
use fsage_lab::sparse::{copy_image, CopyOptions, Holes};
use fsage_slowdev::{Backing, DeviceSpec, SlowDevice};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

use super::{io_at, step, BaseImage, LabExecutor};

/// The cell's device model when it keeps a drive state (an SSD): then aged base images are
/// aged through it, and the cell's drive is the one its `drive` names.
pub(crate) fn drive_model(cell: &Cell) -> Option<&fsage_device::ModelSpec> {
    cell.device.as_ref().filter(|m| m.keeps_state())
}

/// The model an aged base is aged through: the cell's drive model, unless the experiment ages
/// in memory (`age_on = "memory"`), when the base is the plain one.
pub(crate) fn aging_model(cell: &Cell) -> Option<&fsage_device::ModelSpec> {
    drive_model(cell).filter(|_| !cell.aged_in_memory)
}

impl LabExecutor {
    /// The drive state a cell's device starts from (the state file and where it came from), or
    /// none for an erased drive: the base's own drive, or the drive of the aged state the cell
    /// names (whose base is made first if it is not there yet).
    pub(super) fn drive_of(
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
}

/// A cell's image on its drive ([`LabExecutor::place`]): the working copy written through a
/// device of the model, whose drive state it saved beside the copy.
pub(super) struct Placed {
    pub(super) record: crate::result::PlacementRecord,
    /// The drive the cell continued (`drive = "previous"`): the cell that left it, its checksum.
    pub(super) drive_state: Option<DriveState>,
}

/// What a cell's device starts from: the base image restored beside a drive state (none:
/// erased), or the image placed on its drive by a copy.
pub(super) enum DriveStart {
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
    /// model (its text), image size and copy method, as one physical drive that the cells placed
    /// alike share (every file system and state, as a paper's repeated runs on one drive). An
    /// experiment that crosses procedures (`copy`, `drive`) thus runs each on a drive of its own:
    /// a previous drive is never one that an erased cell, or another copy method, left.
    fn last_drive(
        &self,
        cell: &Cell,
        m: &fsage_device::ModelSpec,
        copy: crate::spec::CopyMethod,
    ) -> PathBuf {
        let def =
            serde_json::to_string(&(&m.text, cell.image_size, copy.name())).expect("plain data");
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
    pub(super) fn keep_last_drive(
        &self,
        cell: &Cell,
        m: &fsage_device::ModelSpec,
        p: crate::spec::Placement,
        state: &Path,
    ) {
        // Only a cell that continues a drive leaves one for the next: an erased or preconditioned
        // cell's drive is of no later cell's procedure.
        if p.drive != crate::spec::DriveBefore::Previous {
            return;
        }
        let dest = self.last_drive(cell, m, p.copy);
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
    pub(super) fn place(
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
            let last = self.last_drive(cell, m, p.copy);
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

//! Aging the drive with the file system: with a device model that keeps state (an SSD's FTL),
//! the block requests the run sends to its image are traced (writes, discards, write-zeroes),
//! then fed in order to the model at memory speed (no sleeping: only the state matters), and the
//! drive's state is saved beside the image as `IMAGE.ftl`, where a slow device on that image
//! (`fsage dev create --image IMAGE --model M`) starts from it. A state already there (an earlier
//! session of the run, or an aged drive) is continued. The file system's creation (mkfs) is not
//! traced: the drive starts as the state file (or an erased drive) says.

use super::{input, Result};
use fsage_device::{DeviceModel, ModelSpec, Rq};
use fsage_lab::trace::{BlockTrace, RqFilter};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A trace of the run's requests to its image, and where the drive's state goes. Also used by
/// the experiment runner when a guest ages the image: the guest's requests reach a loop device
/// here, which is what is traced.
pub struct DriveAging {
    trace: BlockTrace,
    model: Box<dyn DeviceModel>,
    spec: ModelSpec,
    state: PathBuf,
    resumed: bool,
}

use fsage_device::state_file_of;

/// Refuses a model that keeps no drive state (nothing to age).
pub(super) fn check(spec: &ModelSpec) -> Result<()> {
    if !spec.keeps_state() {
        return Err(input(format!(
            "--device-model {}: this model keeps no drive state to age (only SSD models do)",
            spec.name
        )));
    }
    Ok(())
}

impl DriveAging {
    /// Builds the model for `image`, continues its saved state if there is one, and starts
    /// tracing `device`, the block device the image's requests reach (the loop device it is mounted
    /// through, or one a guest writes through).
    pub fn start(spec: &ModelSpec, image: &Path, device: &Path) -> Result<DriveAging> {
        let size = std::fs::metadata(image)
            .map_err(|err| super::AgeError::Open {
                path: image.to_path_buf(),
                err,
            })?
            .len();
        let mut model = spec.build(size)?;
        if model.save_state().is_none() {
            return Err(input(format!(
                "--device-model {}: this model keeps no drive state to age (only SSD models do)",
                spec.name
            )));
        }
        let state = state_file_of(image);
        let resumed = state.exists();
        if resumed {
            let bytes = std::fs::read(&state).map_err(|err| super::AgeError::Open {
                path: state.clone(),
                err,
            })?;
            model.load_state(&bytes).map_err(|e| {
                input(format!(
                    "{}: cannot continue this drive state: {e} (remove it to start from an \
                     erased drive)",
                    state.display()
                ))
            })?;
        }
        let rdev = std::fs::metadata(device)
            .map_err(|err| super::AgeError::Open {
                path: device.to_path_buf(),
                err,
            })?
            .rdev();
        let trace = BlockTrace::start(rdev, RqFilter::Writes)?;
        Ok(DriveAging {
            trace,
            model,
            spec: spec.clone(),
            state,
            resumed,
        })
    }

    /// Stops the trace, feeds its requests to the model and saves the drive's state; returns a
    /// line saying what was done.
    pub fn finish(self) -> Result<String> {
        let DriveAging {
            trace,
            mut model,
            spec,
            state,
            resumed,
        } = self;
        let rqs = trace.finish()?;
        let before = model.stats();
        let mut bytes = 0u64;
        let mut now = 0;
        for (i, r) in rqs.iter().enumerate() {
            now = now.max(r.issue_ns);
            bytes += r.sectors * 512;
            model.submit(
                now,
                Rq {
                    id: i as u64,
                    kind: r.kind,
                    offset: r.sector * 512,
                    len: r.sectors * 512,
                },
            );
        }
        let after = model.stats();
        let did = after.since(&before);
        let saved = model
            .save_state()
            .expect("checked at start: the model keeps state");
        fsage_sys::write_atomic(&state, &saved)?;
        Ok(format!(
            "the drive ({}) aged with the file system: {} requests ({} MiB written or discarded) \
             fed to its FTL{}; {}; saved to {}",
            spec.name,
            rqs.len(),
            bytes >> 20,
            if resumed {
                ", continuing the saved drive"
            } else {
                " from an erased drive"
            },
            did.brief(),
            state.display()
        ))
    }
}

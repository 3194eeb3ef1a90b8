//! Aging the drive with the file system (`--device-model`): the run's requests to its image are
//! traced and fed to the model's drive, saved beside the image as `IMAGE.ftl`. The work is
//! `fsage-lab`'s [`DriveAging`] (shared with experiments and Git aging); this checks the model.

use super::{input, Result};
use fsage_device::ModelSpec;

pub use fsage_lab::drive::DriveAging;

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

//! How far from fresh is a mounted file system: it is measured, a fresh twin of the same kind and
//! size is made in memory, measured the same way (the same probe too) and removed, and the two
//! compared. The whole of `fsage frag --against-fresh`, so that an experiment runner gets the same
//! comparison the command line prints.

use crate::age::Level;
use crate::twin::FreshTwin;
use crate::{Error, Result};
use fsage_measure::{AgainstFresh, FragOptions};
use std::path::Path;

/// Measures the file system mounted at `mount` with `opts`, then a fresh twin of it, and compares
/// them. `notice` hears the measurement's warnings and what is being made, as they happen. The
/// result holds both reports (`aged_report`, `fresh_report`).
pub fn measure_against_fresh(
    mount: &Path,
    opts: &FragOptions,
    notice: &mut dyn FnMut(Level, &str),
) -> Result<AgainstFresh> {
    let (report, warnings) = fsage_measure::frag(mount, opts).map_err(measure_error)?;
    for w in warnings {
        notice(Level::Warning, &w);
    }
    let twin = FreshTwin::of(mount)?;
    notice(
        Level::Info,
        &format!(
            "measuring a fresh {} of {} beside it",
            twin.kind.name(),
            fsage_profile::human_bytes(twin.size)
        ),
    );
    // The twin goes away whether or not its measurement worked.
    let fresh = fsage_measure::measure(twin.mount_point(), opts).map_err(measure_error);
    twin.finish()?;
    Ok(fsage_measure::against_fresh(
        &mount.display().to_string(),
        &report,
        &fresh?,
    ))
}

/// The measurement's error as the lab's, keeping who is to blame and the setting that helps.
fn measure_error(e: fsage_measure::Error) -> Error {
    use fsage_sys::Blamed;
    match e {
        fsage_measure::Error::Setting(e) => e,
        e => Error {
            message: e.to_string(),
            blame: e.blame(),
            remedy: e.remedy(),
        },
    }
}

//! How far an image is from fresh, on the figures that tell them apart. The layout score alone
//! does not (98.7% on an aged image; a 35-fragment probe still scores 99.8%), and a fresh file
//! system has no files to score, so the comparison uses free-space and probe figures, measured on
//! the image and on a fresh file system of the same kind and size.
//!
//! [`measure_against_fresh`] is the whole of `fsage frag --against-fresh` (measure a mounted file
//! system, make a fresh twin in memory, measure it the same way, probe included, remove it,
//! compare), so that an experiment runner gets the same comparison the command line prints;
//! [`against_fresh`] is the comparison alone, of two reports measured already.

//! The comparison's types and [`against_fresh`] are fsage-results' (the report reads them without
//! this crate), re-exported here.

use crate::age::Level;
use fsage_lab::{Error, FreshTwin, Result};
use fsage_measure::FragOptions;
use std::path::Path;

pub use fsage_results::against::*;

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
    Ok(against_fresh(
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

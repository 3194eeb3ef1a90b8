//! The drives the greps are costed on, aged by the replay itself. A cost model that keeps a
//! drive state (an SSD's FTL) gets one drive per instance:
//!
//! - the aged instance's: an erased drive fed every write, discard and write-zeroes the aged
//!   image's loop devices received from the first mount on (every pull, mount, unmount and
//!   measurement), in order, so that at each measurement its pages sit where the history put
//!   them, with the garbage collection that caused. Saved in `IMAGE.drives/` at every
//!   checkpoint that follows a measurement and at the end of a session, and continued by a
//!   resume (a stopped run loses at most the writes since the last save, and says so);
//! - the clean instance's: an erased drive fed the writes of its copy (the sorted, synced copy, unmount, mount).
//!
//! Neither is fed its file system's creation (mkfs): the pages mkfs alone wrote are pages the
//! drive never saw written, costed as data written in logical order
//! (`fsage_device::UnwrittenReads::LbaOrder`), alike for both. A grep's trace is costed on a copy
//! of its instance's drive, taken when the instance was mounted for the measurement.

use crate::{Error, Result};
use fsage_device::{AgedDrive, ModelSpec};
use fsage_lab::drive::{DriveMount, Drives, FeedReport};
use fsage_lab::mount::MountOptions;
use fsage_lab::Mounted;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// An image mounted plainly, or with its writes fed to drives.
pub(crate) enum ImageMount {
    Plain(Mounted),
    Fed(DriveMount),
}

impl ImageMount {
    /// Mounts `image` on `mnt` with `opts`; its writes go to `drives` when given.
    pub(crate) fn mount(
        image: &Path,
        mnt: &Path,
        drives: Option<&Drives>,
        opts: &MountOptions,
    ) -> Result<ImageMount> {
        Ok(match drives {
            Some(d) => ImageMount::Fed(DriveMount::attach_and_mount_with(image, mnt, d, opts)?),
            None => ImageMount::Plain(Mounted::attach_and_mount_with(image, mnt, opts)?),
        })
    }

    /// The loop device's number (to trace the grep's reads).
    pub(crate) fn rdev(&self) -> Option<u64> {
        match self {
            ImageMount::Plain(m) => m.loop_rdev(),
            ImageMount::Fed(m) => Some(m.rdev()),
        }
    }

    /// Feeds the drives every write issued so far.
    pub(crate) fn sync_drives(&self) -> Result<()> {
        match self {
            ImageMount::Plain(_) => Ok(()),
            ImageMount::Fed(m) => m.sync_drives(),
        }
    }

    /// Unmounts and detaches (feeding what is left); what the drives were fed.
    pub(crate) fn finish(self) -> Result<Option<FeedReport>> {
        match self {
            ImageMount::Plain(m) => m.finish().map(|()| None),
            ImageMount::Fed(m) => m.finish().map(Some),
        }
    }
}

/// Copies of `drives` as they are now (to cost a trace on, later).
pub(crate) fn snapshot(drives: &Drives) -> Result<Vec<AgedDrive>> {
    drives
        .lock()
        .iter()
        .map(|d| AgedDrive::load(d.spec(), d.size(), &d.state()))
        .collect()
}

/// The cost models (and the measuring device's model) that keep a drive state, once each.
pub(crate) fn stateful(models: &[&ModelSpec]) -> Vec<ModelSpec> {
    let mut out: Vec<ModelSpec> = Vec::new();
    for m in models {
        if m.keeps_state() && !out.iter().any(|o| o.name == m.name) {
            out.push((*m).clone());
        }
    }
    out
}

/// Where the aged drives are kept: `IMAGE.drives/`.
pub fn drives_path(image: &Path) -> PathBuf {
    fsage_sys::with_suffix(image, ".drives")
}

/// A model's name as a file name (anything but letters, digits, `.`, `-` and `_` becomes `_`).
fn file_name_of(model: &str) -> String {
    let s: String = model
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{}.ftl", s.trim_start_matches('.'))
}

/// Refuses models whose file names would be the same.
pub(crate) fn check_names(specs: &[ModelSpec]) -> Result<()> {
    for (i, a) in specs.iter().enumerate() {
        if let Some(b) = specs[..i]
            .iter()
            .find(|b| file_name_of(&b.name) == file_name_of(&a.name))
        {
            return Err(Error::input(format!(
                "--cost-models: `{}` and `{}` would keep their drives in the same file ({}); \
                 rename one model",
                b.name,
                a.name,
                file_name_of(&a.name)
            )));
        }
    }
    Ok(())
}

const META_FORMAT: &str = "fsage-git-drives/1";

/// What `IMAGE.drives/drives.json` says of the drives saved beside it (written after them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DrivesMeta {
    pub format: String,
    /// Pulls replayed when the drives were saved.
    pub pulls: u64,
    /// Requests and bytes fed to the drives over the whole run (every session).
    pub fed_requests: u64,
    pub fed_bytes: u64,
    /// Write events the traces lost (the drives miss them).
    pub lost_events: u64,
    /// The drives' files, by model.
    pub models: Vec<(String, String)>,
}

/// The aged instance's drives, with what they were fed over the run.
pub(crate) struct AgedDrives {
    pub drives: Drives,
    pub dir: PathBuf,
    pub meta: DrivesMeta,
}

impl AgedDrives {
    /// Erased drives for a new run.
    pub(crate) fn new(specs: &[ModelSpec], size: u64, image: &Path) -> Result<AgedDrives> {
        Ok(AgedDrives {
            drives: Drives::erased(specs, size)?,
            dir: drives_path(image),
            meta: DrivesMeta {
                format: META_FORMAT.into(),
                ..DrivesMeta::default()
            },
        })
    }

    /// The drives a stopped run saved. A drive whose file is missing or unreadable starts
    /// erased (said in `notes`).
    pub(crate) fn load(
        specs: &[ModelSpec],
        size: u64,
        image: &Path,
        notes: &mut Vec<String>,
    ) -> Result<AgedDrives> {
        let dir = drives_path(image);
        let meta_file = dir.join("drives.json");
        let meta: Option<DrivesMeta> = std::fs::read_to_string(&meta_file)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .filter(|m: &DrivesMeta| m.format == META_FORMAT);
        let mut drives = Vec::new();
        let mut erased = Vec::new();
        for s in specs {
            let file = dir.join(file_name_of(&s.name));
            let loaded = meta
                .as_ref()
                .filter(|m| m.models.iter().any(|(n, _)| *n == s.name))
                .and_then(|_| std::fs::read(&file).ok())
                .and_then(|b| AgedDrive::load(s, size, &b).ok());
            match loaded {
                Some(d) => drives.push(d),
                None => {
                    erased.push(s.name.clone());
                    drives.push(AgedDrive::erased(s, size)?);
                }
            }
        }
        let meta = match meta {
            Some(m) if erased.is_empty() => m,
            m => {
                notes.push(format!(
                    "the aged drives of {} were not found in {} (or could not be read): they \
                     start erased here, without the writes of the pulls before",
                    erased.join(", "),
                    dir.display()
                ));
                DrivesMeta {
                    format: META_FORMAT.into(),
                    // Unknown: taken as the checkpoint's (the gap is said above).
                    pulls: u64::MAX,
                    ..m.unwrap_or_default()
                }
            }
        };
        Ok(AgedDrives {
            drives: Drives::new(drives),
            dir,
            meta,
        })
    }

    /// What the loaded drives miss, now that the replay goes on after `done` pulls.
    pub(crate) fn gap_notes(&mut self, done: u64, notes: &mut Vec<String>) {
        let saved = self.meta.pulls;
        if saved == u64::MAX {
            self.meta.pulls = done;
        } else if saved < done {
            notes.push(format!(
                "the aged drives were saved after pull {saved}; pulls {} to {done} were replayed \
                 by the stopped run after that and their writes were not fed: the drives miss \
                 them",
                saved + 1
            ));
        } else if saved > done {
            notes.push(format!(
                "the aged drives were saved after pull {saved}, but the repository is at pull \
                 {done}: the drives hold writes of pulls it will replay again"
            ));
        }
    }

    /// Counts what a mount fed.
    pub(crate) fn count(&mut self, r: Option<FeedReport>) {
        if let Some(r) = r {
            self.meta.fed_requests += r.fed.requests;
            self.meta.fed_bytes += r.fed.bytes;
            self.meta.lost_events += r.lost_events;
        }
    }

    /// Saves every drive, then the meta file (so a meta file always describes the drives
    /// beside it), after `pulls` pulls. What a mount still running fed since it was last
    /// counted is in the drives but not yet in the counts.
    pub(crate) fn save(&mut self, pulls: u64) -> Result<()> {
        // IMAGE.drives: made 0700 by fsage, or its own from an earlier session; never a link.
        fsage_sys::safe::ensure_private_dir(&self.dir, "the directory of the aged drives")?;
        let g = self.drives.lock();
        let mut models = Vec::new();
        for d in g.iter() {
            let name = file_name_of(&d.spec().name);
            let file = self.dir.join(&name);
            fsage_sys::write_atomic_private(&file, &d.state())
                .map_err(|e| Error::operation(format!("saving the aged drive: {e}")))?;
            models.push((d.spec().name.clone(), name));
        }
        drop(g);
        self.meta.pulls = pulls;
        self.meta.models = models;
        let json = serde_json::to_string_pretty(&self.meta)
            .map_err(|e| Error::operation(e.to_string()))?;
        fsage_sys::write_atomic(&self.dir.join("drives.json"), json.as_bytes())
            .map_err(|e| Error::operation(format!("saving the aged drives: {e}")))
    }
}

/// A few words on a drive for the series: what fed it and its state.
pub(crate) fn describe(which: &str, d: &AgedDrive, fed_bytes: u64) -> String {
    format!(
        "{which} drive: {} MiB fed; {}",
        fed_bytes >> 20,
        d.describe_state()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_become_file_names() {
        assert_eq!(file_name_of("ssd-sata"), "ssd-sata.ftl");
        assert_eq!(file_name_of("../my ssd"), "_my_ssd.ftl");
        let a = fsage_device::resolve("ssd-sata").unwrap();
        let mut b = a.clone();
        b.name = "ssd/sata".into();
        let mut c = a.clone();
        c.name = "ssd_sata".into();
        assert!(check_names(&[a.clone(), b.clone()]).is_ok());
        let e = check_names(&[b, c]).unwrap_err();
        assert!(e.message.contains("same file"), "{e}");
    }
}

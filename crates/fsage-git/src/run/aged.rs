//! The aged instance: its mount, its tree and the drives its writes age.

use crate::drives::{AgedDrives, ImageMount};
use crate::measure;
use crate::slow::{MeasureDevice, SlowMount};
use crate::{Error, Result};
use std::path::PathBuf;

/// The aged instance: its mount (when fsage made it), where the tree lies, and its drives (an
/// image target's, for the cost models that keep a drive state).
pub(super) struct Aged {
    pub(super) image: Option<PathBuf>,
    /// A directory target's block device, to trace.
    pub(super) dir_rdev: Option<u64>,
    pub(super) mnt: PathBuf,
    pub(super) mounted: Option<ImageMount>,
    pub(super) tree: PathBuf,
    pub(super) drives: Option<AgedDrives>,
}

impl Aged {
    /// Mounts the image (its writes fed to the drives, if any).
    pub(super) fn mount(&mut self) -> Result<()> {
        if let Some(img) = &self.image {
            let m = ImageMount::mount(img, &self.mnt, self.drives.as_ref().map(|d| &d.drives))?;
            self.mounted = Some(m);
        }
        Ok(())
    }

    /// Unmounts the image (feeding the drives what it wrote until its loop device went).
    pub(super) fn unmount(&mut self) -> Result<()> {
        if let Some(m) = self.mounted.take() {
            let r = m.finish()?;
            if let Some(d) = self.drives.as_mut() {
                d.count(r);
            }
        }
        Ok(())
    }

    /// Unmounts and mounts again (an image), for a cold measurement; the device to trace.
    pub(super) fn remount(&mut self) -> Result<Option<u64>> {
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
    pub(super) fn rdev(&self) -> Option<u64> {
        match &self.image {
            Some(_) => self.mounted.as_ref().and_then(|m| m.rdev()),
            None => self.dir_rdev,
        }
    }

    /// Copies of the drives as they are now (every write issued so far fed), to cost the
    /// measurement's greps on.
    pub(super) fn drive_copies(&self) -> Result<Vec<(fsage_device::AgedDrive, String)>> {
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
    pub(super) fn save_drives(&mut self, pulls: u64) -> Result<()> {
        if let Some(m) = &self.mounted {
            m.sync_drives()?;
        }
        match self.drives.as_mut() {
            Some(d) => d.save(pulls),
            None => Ok(()),
        }
    }

    /// `syncfs` of the aged file system (only it: a global sync would wait on every other disk).
    pub(super) fn sync(&self) -> Result<()> {
        let d =
            std::fs::File::open(&self.mnt).map_err(|e| crate::Error::io(&self.mnt, "open", e))?;
        rustix::fs::syncfs(&d).map_err(|e| crate::Error::io(&self.mnt, "syncfs", e.into()))
    }

    /// Measures the image through a slow device: unmounts it, mounts it from a device of
    /// `dev`'s latency, measures, unmounts, destroys the device and mounts the image again for
    /// the replay (also when the measurement failed). The device's writes are fed to the drives,
    /// and a device of a model among them starts from its drive.
    pub(super) fn measure_slow(
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

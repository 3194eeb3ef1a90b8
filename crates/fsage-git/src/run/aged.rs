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
    /// How the image is mounted ([`crate::measure::instance_mount_options`]).
    pub(super) options: fsage_lab::mount::MountOptions,
}

impl Aged {
    /// Mounts the image for the replay (its writes fed to the drives, if any).
    pub(super) fn mount(&mut self) -> Result<()> {
        let options = self.options.clone();
        self.mount_with(&options)
    }

    fn mount_with(&mut self, options: &fsage_lab::mount::MountOptions) -> Result<()> {
        if let Some(img) = &self.image {
            let m = ImageMount::mount(
                img,
                &self.mnt,
                self.drives.as_ref().map(|d| &d.drives),
                options,
            )?;
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

    /// Unmounts and mounts again (an image) read-only ([`measure::measure_mount_options`]), for
    /// a cold measurement; the device to trace. [`Aged::mount_for_replay`] mounts it back.
    pub(super) fn remount(&mut self) -> Result<Option<u64>> {
        match &self.image {
            Some(_) => {
                self.unmount()?;
                self.mount_with(&measure::measure_mount_options())?;
                Ok(self.mounted.as_ref().and_then(|m| m.rdev()))
            }
            None => {
                self.sync()?;
                Ok(self.dir_rdev)
            }
        }
    }

    /// After a cold measurement ([`Aged::remount`]): the image mounted again for the replay.
    pub(super) fn mount_for_replay(&mut self) -> Result<()> {
        if self.image.is_some() {
            self.unmount()?;
            self.mount()?;
        }
        Ok(())
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

    /// Syncs the aged file system (only it: a global sync would wait on every other disk), the
    /// same way in every run ([`fsage_sys::sync_settled`]).
    pub(super) fn sync(&self) -> Result<()> {
        let d =
            std::fs::File::open(&self.mnt).map_err(|e| crate::Error::io(&self.mnt, "open", e))?;
        fsage_sys::sync_settled(&d).map_err(|e| crate::Error::io(&self.mnt, "sync", e))
    }

    /// Measures the image through a slow device: unmounts it, mounts it from a device of
    /// `dev`'s latency, measures, unmounts, destroys the device and mounts the image again
    /// read-only (also when the measurement failed), for the clean copy to read;
    /// [`Aged::mount_for_replay`] makes it writable. The device's writes are fed to the drives,
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
        let again = self.mount_with(&measure::measure_mount_options());
        let fig = measured?;
        again?;
        Ok(fig)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsage_lab::FsKind;
    use std::path::Path;

    /// A new image of `kind` in `dir` as the aged instance (not mounted), its path and mount point.
    fn aged_image(dir: &Path, kind: FsKind, size: u64, one_cpu: bool) -> (Aged, PathBuf, PathBuf) {
        let img = dir.join("aged.img");
        let mnt = dir.join("aged.img.mnt");
        fsage_lab::create_image(kind, size, &img, &measure::aged_mkfs_opts(kind)).unwrap();
        std::fs::create_dir(&mnt).unwrap();
        let a = Aged {
            image: Some(img.clone()),
            dir_rdev: None,
            tree: mnt.clone(),
            mnt: mnt.clone(),
            mounted: None,
            drives: None,
            options: measure::instance_mount_options(kind, one_cpu),
        };
        (a, img, mnt)
    }

    /// A cold measurement sees the aged instance read-only (a grep then writes no access times
    /// into its history), and the replay gets it back writable.
    #[test]
    fn a_cold_measurement_mounts_the_aged_image_read_only_and_the_replay_gets_it_back() {
        let test = "cold_measurement_read_only";
        if let Err(e) = fsage_testkit::need_root_and(&["mkfs.ext4"]) {
            return fsage_testkit::skip(test, e);
        }
        let tmp = fsage_testkit::shm_tmp("fsage-aged-ro");
        let (mut a, img, mnt) = aged_image(tmp.path(), FsKind::EXT4, 64 << 20, false);
        a.mount().unwrap();
        std::fs::write(mnt.join("f"), b"written by the replay").unwrap();
        a.sync().unwrap();
        assert!(a.remount().unwrap().is_some(), "the device to trace");
        let e = std::fs::write(mnt.join("g"), b"x").unwrap_err();
        let erofs = rustix::io::Errno::ROFS.raw_os_error();
        assert_eq!(e.raw_os_error(), Some(erofs), "measured read-only: {e}");
        assert_eq!(
            std::fs::read(mnt.join("f")).unwrap(),
            b"written by the replay"
        );
        a.mount_for_replay().unwrap();
        std::fs::write(mnt.join("g"), b"x").unwrap();
        a.unmount().unwrap();
        assert!(fsage_sys::loops_backed_by(&img).is_empty());
    }

    /// On a one-CPU run a btrfs instance runs one worker per pool and discards at commit, and
    /// its sync leaves nothing delayed: the file's extent is on the disk. (That the sync is
    /// btrfs's own ioctl is fsage-sys's test; `syncfs` would pass this one too.)
    #[test]
    fn a_one_cpu_btrfs_instance_has_one_worker_per_pool_and_syncs_to_the_disk() {
        let test = "one_cpu_btrfs_instance";
        if let Err(e) = fsage_testkit::need_root_and(&["mkfs.btrfs", "filefrag"]) {
            return fsage_testkit::skip(test, e);
        }
        let tmp = fsage_testkit::shm_tmp("fsage-aged-btrfs");
        let (mut a, _img, mnt) = aged_image(tmp.path(), FsKind::BTRFS, 256 << 20, true);
        a.mount().unwrap();
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
        let at = format!(" {} btrfs ", mnt.display());
        let opts = mounts
            .lines()
            .find(|l| l.contains(&at))
            .unwrap_or_else(|| panic!("{} not mounted:\n{mounts}", mnt.display()));
        // /proc/mounts says `discard` for discard=sync, `discard=async` for the default.
        let words: Vec<&str> = opts.split([' ', ',']).collect();
        assert!(
            words.contains(&"thread_pool=1") && words.contains(&"discard"),
            "{opts}"
        );
        std::fs::write(mnt.join("f"), vec![7u8; 256 << 10]).unwrap();
        a.sync().unwrap();
        let out = std::process::Command::new("filefrag")
            .arg("-v")
            .arg(mnt.join("f"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("last,eof") && !text.contains("delalloc"),
            "{text}"
        );
        a.unmount().unwrap();
    }
}

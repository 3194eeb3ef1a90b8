//! A fresh file system beside a mounted one: the same kind and size, made in memory for a
//! comparison (how far from fresh is this image?) and removed after it.

use crate::mount::Mounted;
use crate::{fs::FsKind, Error, Result};
use std::path::{Path, PathBuf};

/// A fresh file system of the same kind and size as another, mounted in a directory of its own
/// under /dev/shm. Dropping it unmounts it and removes the image; [`FreshTwin::finish`] does the
/// same and reports errors.
#[derive(Debug)]
pub struct FreshTwin {
    mounted: Option<Mounted>,
    dir: PathBuf,
    pub kind: FsKind,
    /// Bytes of the device holding the original, and of the twin's image.
    pub size: u64,
}

fn shm_dir() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

impl FreshTwin {
    /// Makes and mounts the twin of the file system mounted at `mount` (its mount point).
    pub fn of(mount: &Path) -> Result<FreshTwin> {
        let canon = mount
            .canonicalize()
            .map_err(|e| Error::input(format!("{}: {e}", mount.display())))?;
        let entry = fsage_sys::mount_table()?
            .into_iter()
            .rev()
            .find(|m| m.mount_point == canon)
            .ok_or_else(|| {
                Error::input(format!(
                    "{}: not a mount point: a fresh twin needs the file system's device to know \
                     its size",
                    mount.display()
                ))
            })?;
        let kind = FsKind::parse(&entry.fstype).map_err(|_| {
            Error::input(format!(
                "{}: a {} file system; fsage makes fresh ext4, xfs and btrfs only",
                mount.display(),
                entry.fstype
            ))
        })?;
        let dev = Path::new(&entry.source);
        if !fsage_sys::is_block_device(dev) {
            crate::bail!(
                "{}: mounted from {}, not a block device: cannot tell its size",
                mount.display(),
                entry.source
            );
        }
        let size = fsage_sys::size_of(dev)?;
        FreshTwin::new(kind, size, &[])
    }

    /// Makes and mounts a new file system of `kind` on an image of `size` bytes: what a real
    /// file system of that size offers (a dry run reads its usable space).
    pub fn new(kind: FsKind, size: u64, mkfs_opts: &[String]) -> Result<FreshTwin> {
        kind.check_tools()?;
        // A random name made with mode 0700: nobody else can plant it or reach into it.
        let dir = fsage_sys::safe::create_private_dir(&shm_dir(), "fsage-twin-")?;
        let mut twin = FreshTwin {
            mounted: None,
            dir,
            kind,
            size,
        };
        let image = twin.dir.join("fresh.img");
        let mnt = twin.dir.join("mnt");
        std::fs::create_dir(&mnt)
            .map_err(|e| Error::operation(format!("{}: {e}", mnt.display())))?;
        crate::fs::create_image(kind, size, &image, mkfs_opts)?;
        twin.mounted = Some(Mounted::attach_and_mount(&image, &mnt)?);
        Ok(twin)
    }

    pub fn mount_point(&self) -> &Path {
        self.mounted
            .as_ref()
            .map_or(Path::new(""), |m| m.mount_point())
    }

    /// Unmounts and removes the twin.
    pub fn finish(mut self) -> Result<()> {
        let r = match self.mounted.take() {
            Some(m) => m.finish(),
            None => Ok(()),
        };
        self.remove_dir();
        r
    }

    fn remove_dir(&mut self) {
        // Only once nothing is mounted below it.
        let mnt = self.dir.join("mnt");
        if self.mounted.is_none() && !fsage_sys::is_mount_point(&mnt) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

impl Drop for FreshTwin {
    fn drop(&mut self) {
        drop(self.mounted.take());
        self.remove_dir();
    }
}

//! Where a cell's working copy lives, the one setting that decides it for local and Slurm runs
//! alike, and what each result records of it: a copy in memory and one on disk run the same
//! workload at different speeds, so results from both are not one comparison.

use crate::Error;
use std::path::{Path, PathBuf};

/// The memory file system the default setting puts working copies in.
pub const TMPFS_ROOT: &str = "/dev/shm";

/// `--scratch`: where each cell's working copy (the copy of its base image the workload runs
/// on) goes, on this machine or on a Slurm node.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Scratch {
    /// `tmpfs` (the default): in memory, under /dev/shm, which must be a tmpfs.
    #[default]
    Tmpfs,
    /// `images`: beside the base images, in the image directory.
    Images,
    /// Any other value: a directory of the user's.
    Dir(PathBuf),
}

impl std::str::FromStr for Scratch {
    type Err = String;
    fn from_str(s: &str) -> Result<Scratch, String> {
        match s {
            "" => Err("an empty --scratch: give tmpfs, images or a directory".into()),
            "tmpfs" => Ok(Scratch::Tmpfs),
            "images" => Ok(Scratch::Images),
            d => Ok(Scratch::Dir(PathBuf::from(d))),
        }
    }
}

impl std::fmt::Display for Scratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scratch::Tmpfs => f.write_str("tmpfs"),
            Scratch::Images => f.write_str("images"),
            Scratch::Dir(d) => write!(f, "{}", d.display()),
        }
    }
}

impl Scratch {
    /// The directory the working copies go under, checked: /dev/shm must be a tmpfs for
    /// `tmpfs` (no silent fallback to a disk, which would change what is measured).
    pub fn root(&self, images: &Path) -> Result<PathBuf, Error> {
        match self {
            Scratch::Tmpfs => {
                let root = Path::new(TMPFS_ROOT);
                let magic = fsage_sys::fs_stat(root).map(|s| s.magic);
                match magic {
                    Ok(m) if is_memory(m) => Ok(root.to_path_buf()),
                    Ok(m) => Err(Error::input(format!(
                        "--scratch tmpfs: {TMPFS_ROOT} is not a tmpfs on this machine ({}): give \
                         --scratch images or --scratch DIR",
                        fsage_sys::fs_type_name(m)
                    ))),
                    Err(e) => Err(Error::input(format!(
                        "--scratch tmpfs: {TMPFS_ROOT}: {e}: give --scratch images or --scratch DIR"
                    ))),
                }
            }
            Scratch::Images => Ok(images.to_path_buf()),
            Scratch::Dir(d) => std::path::absolute(d)
                .map_err(|e| Error::input(format!("--scratch {}: {e}", d.display()))),
        }
    }
}

fn is_memory(magic: u64) -> bool {
    const RAMFS_MAGIC: u64 = 0x8584_58f6;
    magic == fsage_sys::TMPFS_MAGIC || magic == RAMFS_MAGIC
}

/// What a result records of where a cell's working copy lived: fsage-results'.
pub use fsage_results::experiment::storage::{Storage, StorageKind};

/// What holds `root`, for the record: statfs for the kind, the mount table for the type and
/// the device (the mount whose point is the longest prefix of `root`).
pub fn storage_of(setting: &Scratch, root: &Path) -> Storage {
    let magic = fsage_sys::fs_stat(root).map(|s| s.magic).unwrap_or(0);
    let real = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let mount = fsage_sys::mounts().ok().and_then(|m| {
        m.into_iter()
            .filter(|e| real.starts_with(&e.mount_point))
            .max_by_key(|e| e.mount_point.as_os_str().len())
    });
    Storage {
        setting: setting.to_string(),
        kind: if is_memory(magic) {
            StorageKind::Tmpfs
        } else {
            StorageKind::Disk
        },
        fs_type: mount
            .as_ref()
            .map_or_else(|| fsage_sys::fs_type_name(magic), |m| m.fstype.clone()),
        device: mount.map_or_else(|| "unknown".to_string(), |m| m.source),
        root: real,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_parses_and_prints_back() {
        for s in ["tmpfs", "images", "/scratch/fsage"] {
            assert_eq!(s.parse::<Scratch>().unwrap().to_string(), s);
        }
        assert_eq!(Scratch::default(), Scratch::Tmpfs);
        assert!("".parse::<Scratch>().is_err());
    }

    #[test]
    fn dev_shm_is_recorded_as_tmpfs_and_a_disk_directory_as_disk() {
        let shm = Scratch::Tmpfs.root(Path::new("/nowhere")).unwrap();
        let s = storage_of(&Scratch::Tmpfs, &shm);
        assert_eq!(s.kind, StorageKind::Tmpfs, "{s:?}");
        assert_eq!(s.fs_type, "tmpfs");
        assert_eq!(s.root, Path::new(TMPFS_ROOT));
        let d = tempfile::tempdir_in("/var/tmp").unwrap();
        let s = storage_of(&Scratch::Images, d.path());
        // /var/tmp is on the root disk here; elsewhere it may be a tmpfs.
        let magic = fsage_sys::fs_stat(d.path()).unwrap().magic;
        assert_eq!(s.kind == StorageKind::Tmpfs, is_memory(magic), "{s:?}");
        assert_ne!(s.device, "unknown", "{s:?}");
        assert_eq!(s.setting, "images");
    }
}

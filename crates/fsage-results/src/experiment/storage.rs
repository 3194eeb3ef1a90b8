//! Where a cell's working copy lived, as its result records it: a copy in memory and one on disk
//! run the same workload at different speeds, so results from both are not one comparison. The
//! setting that decides it (`--scratch`) is fsage-experiment's `storage`.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Memory or not: what changes a workload's speed the most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StorageKind {
    /// tmpfs or ramfs: in memory.
    Tmpfs,
    /// Any other file system (a disk's, a network's): `fs_type` and `device` say which.
    Disk,
}

impl std::fmt::Display for StorageKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StorageKind::Tmpfs => "tmpfs",
            StorageKind::Disk => "disk",
        })
    }
}

/// Where a cell's working copy lived, as recorded in its result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Storage {
    /// The `--scratch` setting (`tmpfs`, `images`, or the directory given).
    pub setting: String,
    pub kind: StorageKind,
    /// The file system type of the directory (from the mount table, else statfs).
    pub fs_type: String,
    /// What is mounted there: a device (`/dev/nvme0n1p2`), or `tmpfs`.
    pub device: String,
    /// The directory the working copies went under (each cell's in a new directory there).
    pub root: PathBuf,
}

impl Storage {
    /// `tmpfs (/dev/shm)`, `disk (ext4 on /dev/vda, /var/tmp/x)`.
    pub fn describe(&self) -> String {
        match self.kind {
            StorageKind::Tmpfs => format!("tmpfs ({})", self.root.display()),
            StorageKind::Disk => format!(
                "disk ({} on {}, {})",
                self.fs_type,
                self.device,
                self.root.display()
            ),
        }
    }
}

//! btrfs free space: not built yet.

use crate::freesp::FreeSpace;
use crate::sys::FsInfo;
use std::path::Path;

pub fn free_space(mount: &Path, _info: &FsInfo) -> Result<FreeSpace, String> {
    Err(format!(
        "{}: btrfs free-space measurement is not built yet (btrfs has no FS_IOC_GETFSMAP)",
        mount.display()
    ))
}

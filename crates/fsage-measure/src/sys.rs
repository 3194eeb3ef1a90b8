//! The system calls of measuring: FS_IOC_GETFSMAP and FS_IOC_FIEMAP (through rustix's ioctl
//! interface, `fsage_sys::ioctl`), statfs (the one wrapper in `fsage-sys`), syncfs.
//!
//! `struct fsmap`/`fsmap_head` (`linux/fsmap.h`) and `struct fiemap`/`fiemap_extent`
//! (`linux/fiemap.h`) are written out here because neither rustix nor linux-raw-sys (rustix's
//! own kernel bindings, which do have the ioctl numbers) provides them; their sizes are checked
//! against the kernel's opcodes in the tests below.

use fsage_sys::ioctl::{call_in_place, opcode, IoctlOpcode};
use std::io;
use std::os::fd::AsFd;
use std::path::Path;

pub use fsage_sys::{
    fs_type_name, FsStat as FsInfo, BTRFS_SUPER_MAGIC, EXT4_SUPER_MAGIC, TMPFS_MAGIC,
    XFS_SUPER_MAGIC,
};

/// What statfs and statvfs say about the file system holding `path`.
pub fn statfs(path: &Path) -> io::Result<FsInfo> {
    fsage_sys::fs_stat(path)
}

/// Flushes the whole file system holding `fd`, so that delayed allocations have blocks.
pub fn syncfs(fd: impl AsFd) -> io::Result<()> {
    Ok(rustix::fs::syncfs(fd)?)
}

// ---------------------------------------------------------------------------------------------
// GETFSMAP

/// `struct fsmap`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct FsmapRec {
    pub device: u32,
    pub flags: u32,
    pub physical: u64,
    pub owner: u64,
    pub offset: u64,
    pub length: u64,
    pub reserved: [u64; 3],
}

/// `struct fsmap_head` without its flexible array.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct FsmapHead {
    iflags: u32,
    oflags: u32,
    count: u32,
    entries: u32,
    reserved: [u64; 6],
    keys: [FsmapRec; 2],
}

pub const FMR_OF_SPECIAL_OWNER: u32 = 0x10;
pub const FMR_OF_LAST: u32 = 0x20;
/// FMR_OWNER(0, 1): free space.
pub const FMR_OWN_FREE: u64 = 1;

/// _IOWR('X', 59, struct fsmap_head)
const FS_IOC_GETFSMAP: IoctlOpcode = opcode::read_write::<FsmapHead>(b'X', 59);
/// _IOWR('f', 11, struct fiemap)
const FS_IOC_FIEMAP: IoctlOpcode = opcode::read_write::<FiemapHead>(b'f', 11);

const FSMAP_BATCH: usize = 1024;

/// Calls `each` with every record of the file system's space map, in order. `Err` with the
/// errno when the ioctl fails (EOPNOTSUPP or ENOTTY where the file system lacks GETFSMAP).
pub fn getfsmap(fd: impl AsFd, mut each: impl FnMut(&FsmapRec)) -> io::Result<()> {
    // One buffer: the head, then FSMAP_BATCH records, as u64 words for alignment.
    let head_words = size_of::<FsmapHead>() / 8;
    let rec_words = size_of::<FsmapRec>() / 8;
    let mut buf = vec![0u64; head_words + FSMAP_BATCH * rec_words];
    let mut head = FsmapHead {
        count: FSMAP_BATCH as u32,
        ..Default::default()
    };
    head.keys[1] = FsmapRec {
        device: u32::MAX,
        flags: u32::MAX,
        physical: u64::MAX,
        owner: u64::MAX,
        offset: u64::MAX,
        length: 0,
        reserved: [0; 3],
    };
    loop {
        // SAFETY: buf holds at least a FsmapHead; both are plain old data.
        unsafe { std::ptr::write(buf.as_mut_ptr() as *mut FsmapHead, head) };
        // SAFETY: the buffer has room for `count` records after the head, as the ioctl expects.
        unsafe { call_in_place(fd.as_fd(), FS_IOC_GETFSMAP, &mut buf)? };
        // SAFETY: the kernel filled the head.
        let out: FsmapHead = unsafe { std::ptr::read(buf.as_ptr() as *const FsmapHead) };
        let n = out.entries as usize;
        if n == 0 {
            return Ok(());
        }
        let recs = buf[head_words..].as_ptr() as *const FsmapRec;
        let mut last = FsmapRec::default();
        for i in 0..n.min(FSMAP_BATCH) {
            // SAFETY: i < entries <= count records were written after the head.
            last = unsafe { std::ptr::read(recs.add(i)) };
            each(&last);
        }
        if last.flags & FMR_OF_LAST != 0 {
            return Ok(());
        }
        // The next batch starts after the last record returned (ioctl_getfsmap(2)).
        head.keys[0] = last;
    }
}

// ---------------------------------------------------------------------------------------------
// FIEMAP

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct FiemapHead {
    start: u64,
    length: u64,
    flags: u32,
    mapped_extents: u32,
    extent_count: u32,
    reserved: u32,
}

/// `struct fiemap_extent`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct FiemapExtent {
    pub logical: u64,
    pub physical: u64,
    pub length: u64,
    reserved64: [u64; 2],
    pub flags: u32,
    reserved: [u32; 3],
}

pub const FIEMAP_EXTENT_LAST: u32 = 0x1;
pub const FIEMAP_EXTENT_UNKNOWN: u32 = 0x2;
pub const FIEMAP_EXTENT_DELALLOC: u32 = 0x4;
pub const FIEMAP_EXTENT_DATA_INLINE: u32 = 0x200;
pub const FIEMAP_EXTENT_NOT_ALIGNED: u32 = 0x100;
pub const FIEMAP_FLAG_SYNC: u32 = 0x1;

const FIEMAP_BATCH: usize = 64;

/// A reusable FIEMAP buffer (one per thread).
pub struct Fiemap {
    buf: Vec<u64>,
}

impl Default for Fiemap {
    fn default() -> Self {
        let words = (size_of::<FiemapHead>() + FIEMAP_BATCH * size_of::<FiemapExtent>()) / 8;
        Fiemap {
            buf: vec![0; words],
        }
    }
}

impl Fiemap {
    /// Calls `each` with every extent of the open file, in logical order. `sync` asks the kernel
    /// to flush the file first (FIEMAP_FLAG_SYNC).
    pub fn extents(
        &mut self,
        fd: impl AsFd,
        sync: bool,
        mut each: impl FnMut(&FiemapExtent),
    ) -> io::Result<()> {
        let mut start = 0u64;
        loop {
            let head = FiemapHead {
                start,
                length: u64::MAX - start,
                flags: if sync { FIEMAP_FLAG_SYNC } else { 0 },
                extent_count: FIEMAP_BATCH as u32,
                ..Default::default()
            };
            // SAFETY: the buffer starts with room for a FiemapHead (u64-aligned).
            unsafe { std::ptr::write(self.buf.as_mut_ptr() as *mut FiemapHead, head) };
            // SAFETY: the buffer has room for extent_count extents after the head.
            unsafe { call_in_place(fd.as_fd(), FS_IOC_FIEMAP, &mut self.buf)? };
            // SAFETY: the kernel filled the head.
            let out: FiemapHead = unsafe { std::ptr::read(self.buf.as_ptr() as *const FiemapHead) };
            let n = (out.mapped_extents as usize).min(FIEMAP_BATCH);
            if n == 0 {
                return Ok(());
            }
            let exts = self.buf[size_of::<FiemapHead>() / 8..].as_ptr() as *const FiemapExtent;
            let mut last = FiemapExtent::default();
            for i in 0..n {
                // SAFETY: i < mapped_extents records were written after the head.
                last = unsafe { std::ptr::read(exts.add(i)) };
                each(&last);
            }
            if last.flags & FIEMAP_EXTENT_LAST != 0 {
                return Ok(());
            }
            let next = last.logical.saturating_add(last.length);
            if next <= start || next == u64::MAX {
                return Ok(());
            }
            start = next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opcodes_match_the_kernel_headers() {
        // linux-raw-sys's values of FS_IOC_GETFSMAP and FS_IOC_FIEMAP (x86_64 and the other
        // architectures with the generic ioctl encoding).
        assert_eq!(FS_IOC_GETFSMAP, 3233830971);
        assert_eq!(FS_IOC_FIEMAP, 3223348747);
        assert_eq!(size_of::<FsmapRec>(), 64);
        assert_eq!(size_of::<FiemapExtent>(), 56);
    }
}

//! The clean instance's copy of the aged tree, laid out the same way in every run. `cp -a` left
//! the data in the page cache for the background flusher or the unmount to write, so which
//! files were allocated together, in which order and (on ext4) from which CPU's preallocation
//! depended on the flusher's timing and the scheduler: two copies of one tree got different
//! layouts and a clean grep cost up to 2x more seeks. Here the tree is walked in sorted order,
//! each file is written whole and forced to the disk at a fixed point, and the thread is kept on
//! one CPU while it copies, so the allocator sees the same requests in the same order each time.
//! On btrfs each file of more than one block is also allocated whole (`fallocate`) before its
//! data is written: btrfs allocates a file's data for the pages dirty when writeback reaches it,
//! so a writeback started while the file was being written (the flusher, or another process's
//! `sync` or `syncfs`) split it in two allocations, the first part (a smaller size class) in
//! another block group, and every later file moved; allocated whole, the file lands where one
//! undisturbed write put it. And on btrfs the copy commits after every
//! [`BTRFS_COMMIT_EVERY`] names it makes, so that btrfs's delayed-item worker never runs beside it.
//!
//! What is kept is what `cp -a` kept for a Git tree: directories, regular files, symbolic links
//! and hard links, with their permission bits (setuid, setgid and sticky included), owners and
//! access and modification times. Extended attributes, ACLs and holes are not (a Git working
//! tree has none); a FIFO, socket or device node is refused with its path. The source is never
//! followed through a symbolic link: every name is opened relative to its directory's
//! descriptor with `O_NOFOLLOW`, and an entry that changes type between its `lstat` and its
//! `open` is refused.

use crate::{Error, Result};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat, Timespec, Timestamps};
use std::collections::HashMap;
use std::ffi::{CString, OsStr};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// When a copied file's data is forced to the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CopySync {
    /// `fdatasync` after each regular file: the allocator sees one whole file at a time.
    #[default]
    File,
    /// `syncfs` after each directory's entries (its subdirectories' included): fewer, larger
    /// flushes, each allocating a directory's files together in the file system's own order.
    Dir,
}

/// What a copy made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CopyReport {
    pub dirs: u64,
    pub files: u64,
    pub symlinks: u64,
    /// Names made as hard links to a file already copied.
    pub hard_links: u64,
    pub bytes: u64,
    /// `fdatasync` or `syncfs` calls, and on btrfs the commits (`BTRFS_IOC_SYNC`).
    pub syncs: u64,
}

fn errno(e: rustix::io::Errno) -> std::io::Error {
    e.into()
}

fn stamp(sec: i64, nsec: u64) -> Timespec {
    Timespec {
        tv_sec: sec,
        tv_nsec: nsec as _,
    }
}

// The stat fields' types differ between architectures (the casts are no-ops on x86_64).
#[allow(clippy::unnecessary_cast)]
fn times(st: &Stat) -> Timestamps {
    Timestamps {
        last_access: stamp(st.st_atime as i64, st.st_atime_nsec as u64),
        last_modification: stamp(st.st_mtime as i64, st.st_mtime_nsec as u64),
    }
}

fn owner(st: &Stat) -> (Option<rustix::fs::Uid>, Option<rustix::fs::Gid>) {
    (
        Some(rustix::fs::Uid::from_raw(st.st_uid)),
        Some(rustix::fs::Gid::from_raw(st.st_gid)),
    )
}

/// The permission bits `cp -a` keeps (set after the owner: chown clears setuid and setgid).
fn perm(st: &Stat) -> Mode {
    Mode::from_raw_mode(st.st_mode & 0o7777)
}

/// Gives a copied file or directory (open as `fd`, at `path`) the owner, permission bits and
/// times of the original's `st`, in that order (chown clears setuid and setgid).
fn keep_attributes(fd: BorrowedFd<'_>, st: &Stat, path: &Path) -> Result<()> {
    let (u, g) = owner(st);
    rustix::fs::fchown(fd, u, g).map_err(|e| Error::io(path, "chown", errno(e)))?;
    rustix::fs::fchmod(fd, perm(st)).map_err(|e| Error::io(path, "chmod", errno(e)))?;
    rustix::fs::futimens(fd, &times(st)).map_err(|e| Error::io(path, "set the times", errno(e)))
}

/// On btrfs, the copy commits after every this many names it makes (files, directories, links).
/// Each new name leaves inode and directory-index items delayed until the commit, and from 128
/// delayed items on btrfs inserts them from a worker beside the copying thread, wherever the
/// scheduler lets it in, so that which tree leaves split and where their copies go changed from
/// run to run (two copies of zlib's aged tree, 6,534 files: 269 to 418 of 524 tree blocks alike;
/// committing every 32 files: 507 of 507, twice, beside two busy loops).
pub const BTRFS_COMMIT_EVERY: u64 = 32;

struct Copier {
    sync: CopySync,
    /// Allocate each file of more than one block whole before writing it (btrfs).
    preallocate_over: Option<u64>,
    /// Commit after every this many names made ([`BTRFS_COMMIT_EVERY`], btrfs with
    /// `CopySync::File`).
    commit_every: Option<u64>,
    /// Names made so far (directories, files, links).
    made: u64,
    buf: Vec<u8>,
    /// The destination's parent directory: hard links are made relative to it.
    root: OwnedFd,
    /// Its path, for messages.
    dst: PathBuf,
    /// (device, inode) of a source file with several names -> its copy's path under `root`.
    linked: HashMap<(u64, u64), PathBuf>,
    report: CopyReport,
}

/// Copies the directory `src` into the directory `dst_parent` as `dst_parent/NAME` (NAME being
/// `src`'s last component), as `cp -a SRC DST_PARENT` does, in sorted order with the data forced
/// to the disk as `sync` says. `dst_parent/NAME` must not exist. Errors name the path.
pub fn copy_tree(src: &Path, dst_parent: &Path, sync: CopySync) -> Result<CopyReport> {
    let name = src
        .file_name()
        .ok_or_else(|| Error::input(format!("{}: no directory name to copy", src.display())))?
        .to_os_string();
    let src_fd = rustix::fs::open(
        src,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| Error::io(src, "cannot open the directory to copy", errno(e)))?;
    let src_st =
        rustix::fs::fstat(&src_fd).map_err(|e| Error::io(src, "cannot look at it", errno(e)))?;
    let root = rustix::fs::open(
        dst_parent,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| {
        Error::io(
            dst_parent,
            "cannot open the directory to copy into",
            errno(e),
        )
    })?;
    let fs = fsage_sys::fs_stat_fd(&root).map_err(|e| Error::io(dst_parent, "statfs", e))?;
    let btrfs = fs.magic == fsage_sys::BTRFS_SUPER_MAGIC;
    let preallocate_over = btrfs.then_some(fs.block_size);
    let commit_every = (btrfs && sync == CopySync::File).then_some(BTRFS_COMMIT_EVERY);
    // Kept on one CPU: ext4 puts small files in the preallocation of the CPU that allocates
    // them, so a copy that moved between CPUs would lay its small files out by the scheduler's
    // choices. (Best effort: a copy that cannot be pinned is still a copy.)
    let _cpu = fsage_sys::cpu::Pinned::first_allowed().ok();
    let mut c = Copier {
        sync,
        preallocate_over,
        commit_every,
        made: 0,
        buf: vec![0; 1 << 20],
        root,
        dst: dst_parent.to_path_buf(),
        linked: HashMap::new(),
        report: CopyReport::default(),
    };
    let root = c
        .root
        .try_clone()
        .map_err(|e| Error::io(dst_parent, "dup", e))?;
    c.dir(
        src_fd.as_fd(),
        &src_st,
        root.as_fd(),
        &name,
        src,
        Path::new(&name),
    )?;
    Ok(c.report)
}

/// The names in the directory `fd` but `.` and `..`, sorted bytewise.
fn sorted_names(fd: BorrowedFd, path: &Path) -> Result<Vec<CString>> {
    let mut dir =
        rustix::fs::Dir::read_from(fd).map_err(|e| Error::io(path, "readdir", errno(e)))?;
    let mut names = Vec::new();
    while let Some(e) = dir.read() {
        let e = e.map_err(|e| Error::io(path, "readdir", errno(e)))?;
        let n = e.file_name();
        if n.to_bytes() != b"." && n.to_bytes() != b".." {
            names.push(n.to_owned());
        }
    }
    names.sort();
    Ok(names)
}

impl Copier {
    /// Makes `dst_dir/name` a copy of the open source directory `src` (its stat `st`), its
    /// entries first, then its owner, bits and times. `rel` is its path under `root`.
    fn dir(
        &mut self,
        src: BorrowedFd,
        st: &Stat,
        dst_dir: BorrowedFd,
        name: &OsStr,
        src_path: &Path,
        rel: &Path,
    ) -> Result<()> {
        let dst_path = self.dst.join(rel);
        rustix::fs::mkdirat(dst_dir, name, Mode::RWXU)
            .map_err(|e| Error::io(&dst_path, "mkdir", errno(e)))?;
        let dst = rustix::fs::openat(
            dst_dir,
            name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| Error::io(&dst_path, "cannot open", errno(e)))?;
        self.report.dirs += 1;
        self.made()?;
        for n in sorted_names(src, src_path)? {
            let n = OsStr::from_bytes(n.to_bytes());
            self.entry(src, dst.as_fd(), n, &src_path.join(n), &rel.join(n))?;
        }
        if self.sync == CopySync::Dir {
            rustix::fs::syncfs(&dst).map_err(|e| Error::io(&dst_path, "syncfs", errno(e)))?;
            self.report.syncs += 1;
        }
        keep_attributes(dst.as_fd(), st, &dst_path)?;
        Ok(())
    }

    /// One more name made: on btrfs, a commit after every `commit_every` of them.
    fn made(&mut self) -> Result<()> {
        self.made += 1;
        if self.commit_every.is_some_and(|n| self.made % n == 0) {
            fsage_sys::sync_settled(&self.root).map_err(|e| Error::io(&self.dst, "sync", e))?;
            self.report.syncs += 1;
        }
        Ok(())
    }

    fn entry(
        &mut self,
        src_dir: BorrowedFd,
        dst_dir: BorrowedFd,
        name: &OsStr,
        src_path: &Path,
        rel: &Path,
    ) -> Result<()> {
        let st = rustix::fs::statat(src_dir, name, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| Error::io(src_path, "cannot look at it", errno(e)))?;
        match FileType::from_raw_mode(st.st_mode) {
            FileType::Directory => {
                let fd = self.open_src(src_dir, name, src_path, &st, OFlags::DIRECTORY)?;
                self.dir(fd.as_fd(), &st, dst_dir, name, src_path, rel)
            }
            FileType::RegularFile => self.file(src_dir, dst_dir, name, src_path, rel, &st),
            FileType::Symlink => {
                let target = rustix::fs::readlinkat(src_dir, name, Vec::new())
                    .map_err(|e| Error::io(src_path, "readlink", errno(e)))?;
                let dst_path = self.dst.join(rel);
                rustix::fs::symlinkat(target.as_c_str(), dst_dir, name)
                    .map_err(|e| Error::io(&dst_path, "symlink", errno(e)))?;
                let (u, g) = owner(&st);
                rustix::fs::chownat(dst_dir, name, u, g, AtFlags::SYMLINK_NOFOLLOW)
                    .map_err(|e| Error::io(&dst_path, "chown", errno(e)))?;
                rustix::fs::utimensat(dst_dir, name, &times(&st), AtFlags::SYMLINK_NOFOLLOW)
                    .map_err(|e| Error::io(&dst_path, "set the times", errno(e)))?;
                self.report.symlinks += 1;
                self.made()
            }
            _ => Err(Error::input(format!(
                "{}: not a directory, regular file or symbolic link; the clean copy takes only \
                 those",
                src_path.display()
            ))),
        }
    }

    /// Opens a source entry without following a link, and refuses it if it is no longer the
    /// entry `st` described (replaced between the lstat and the open).
    fn open_src(
        &self,
        dir: BorrowedFd,
        name: &OsStr,
        path: &Path,
        st: &Stat,
        kind: OFlags,
    ) -> Result<OwnedFd> {
        let fd = rustix::fs::openat(
            dir,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | kind,
            Mode::empty(),
        )
        .map_err(|e| Error::io(path, "cannot open", errno(e)))?;
        let now =
            rustix::fs::fstat(&fd).map_err(|e| Error::io(path, "cannot look at it", errno(e)))?;
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino)
            || FileType::from_raw_mode(now.st_mode) != FileType::from_raw_mode(st.st_mode)
        {
            return Err(Error::operation(format!(
                "{}: changed while it was copied",
                path.display()
            )));
        }
        Ok(fd)
    }

    fn file(
        &mut self,
        src_dir: BorrowedFd,
        dst_dir: BorrowedFd,
        name: &OsStr,
        src_path: &Path,
        rel: &Path,
        st: &Stat,
    ) -> Result<()> {
        let dst_path = self.dst.join(rel);
        #[allow(clippy::unnecessary_cast)] // the stat fields' types differ between architectures
        let key = (st.st_dev as u64, st.st_ino as u64);
        if st.st_nlink > 1 {
            if let Some(first) = self.linked.get(&key) {
                rustix::fs::linkat(&self.root, first, dst_dir, name, AtFlags::empty())
                    .map_err(|e| Error::io(&dst_path, "link", errno(e)))?;
                self.report.hard_links += 1;
                return self.made();
            }
        }
        let src = self.open_src(src_dir, name, src_path, st, OFlags::empty())?;
        let dst = rustix::fs::openat(
            dst_dir,
            name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::RUSR | Mode::WUSR,
        )
        .map_err(|e| Error::io(&dst_path, "create", errno(e)))?;
        #[allow(clippy::unnecessary_cast)] // the stat fields' types differ between architectures
        let size = st.st_size as u64;
        if self.preallocate_over.is_some_and(|block| size > block) {
            rustix::fs::fallocate(&dst, rustix::fs::FallocateFlags::empty(), 0, size)
                .map_err(|e| Error::io(&dst_path, "fallocate", errno(e)))?;
        }
        let mut from = std::fs::File::from(src);
        let mut to = std::fs::File::from(dst);
        // Plain reads and writes: std::io::copy would use copy_file_range, which may share or
        // clone extents instead of writing the data.
        loop {
            let n = match from.read(&mut self.buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io(src_path, "read", e)),
            };
            to.write_all(&self.buf[..n])
                .map_err(|e| Error::io(&dst_path, "write", e))?;
            self.report.bytes += n as u64;
        }
        if self.sync == CopySync::File {
            rustix::fs::fdatasync(&to).map_err(|e| Error::io(&dst_path, "fdatasync", errno(e)))?;
            self.report.syncs += 1;
        }
        keep_attributes(to.as_fd(), st, &dst_path)?;
        self.report.files += 1;
        self.made()?;
        if st.st_nlink > 1 {
            self.linked.insert(key, rel.to_path_buf());
        }
        Ok(())
    }
}

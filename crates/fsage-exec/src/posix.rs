//! The POSIX backend: real files and directories under the target directory.
//!
//! Every operation is relative to a directory file descriptor and a single name, so no path is ever
//! resolved through a symlink: fsage cannot write outside the target. Directory descriptors are kept
//! open up to the process's file limit; directories beyond it are reached with openat2 and
//! RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS.

use crate::backend::{Backend, FreeSpace, OpError};
use crate::op::{check_relative, FileRef, Operation, Step};
use fsage_plan::{DirId, DirTree, Rng};
use rustix::fs::{AtFlags, FallocateFlags, Mode, OFlags, ResolveFlags};
use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

/// How a created file gets its blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WriteMode {
    /// fallocate(2): blocks allocated, no data written. Fast; the default where the file
    /// system has it ([`WriteMode::default_for`]).
    Fallocate,
    /// write(2) of real (pseudo-random, incompressible) data.
    Write,
}

impl WriteMode {
    /// The mode of a run not told one, on the file system with statfs magic `fs_magic`: the one
    /// that ages it, as its descriptor says ([`fsage_sys::fskind::Fallocate`]). Fallocate on
    /// ext4, xfs and btrfs, whose allocators place fallocated extents as they place written ones;
    /// data on the log-structured file systems: nilfs2 has no fallocate (EOPNOTSUPP), and f2fs's
    /// fallocate reserves blocks without writing its log, so an f2fs image aged by fallocate is
    /// not aged. A file system fsage does not know gets fallocate.
    pub fn default_for(fs_magic: u64) -> WriteMode {
        match fsage_sys::FsKind::by_magic(fs_magic) {
            Some(k) if !k.ages_by_fallocate() => WriteMode::Write,
            _ => WriteMode::Fallocate,
        }
    }

    /// `Err` (bad input) saying why this mode cannot create files on the file system with statfs
    /// magic `fs_magic`, before the first create fails.
    pub fn check_for(self, fs_magic: u64) -> Result<(), fsage_sys::Error> {
        match fsage_sys::FsKind::by_magic(fs_magic) {
            Some(k) if self == WriteMode::Fallocate && !k.supports_fallocate() => {
                Err(fsage_sys::Error::input(format!(
                    "{k} has no fallocate (it returns EOPNOTSUPP): files on it get their blocks \
                     by writing data"
                )))
            }
            _ => Ok(()),
        }
    }
}

pub struct Posix {
    root: OwnedFd,
    /// Open descriptor of each directory, where the file limit allows (index = DirId; 0 = root).
    /// Set once by `make_dirs`; afterwards the backend is only read, so threads can share it.
    dirs: Vec<Option<OwnedFd>>,
    budget: usize,
    mode: WriteMode,
    data: Vec<u8>,
    /// Accept directories that already exist (when resuming a run).
    reuse_dirs: bool,
    /// The tree of the planner's directories, set by `make_dirs`.
    tree: DirTree,
}

/// "f<created>\0" in a stack buffer: no allocation on the hot path.
struct Name {
    buf: [u8; 24],
}

impl Name {
    fn new(created: u64) -> Name {
        use std::io::Write;
        let mut buf = [0u8; 24];
        let mut w = &mut buf[..];
        let _ = write!(w, "f{created}");
        Name { buf }
    }
    fn as_cstr(&self) -> &CStr {
        CStr::from_bytes_until_nul(&self.buf).expect("the buffer ends in NUL bytes")
    }
}

fn cstr(s: &str) -> CString {
    CString::new(s).expect("fsage makes names without NUL bytes")
}

const FILE_MODE: u32 = 0o644;
const DIR_MODE: u32 = 0o755;

/// Raises the soft open-file limit to the hard one and says how many descriptors we may keep.
fn descriptor_budget() -> usize {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut lim = getrlimit(Resource::Nofile);
    if lim.current < lim.maximum {
        let raised = rustix::process::Rlimit {
            current: lim.maximum,
            maximum: lim.maximum,
        };
        if setrlimit(Resource::Nofile, raised).is_ok() {
            lim.current = lim.maximum;
        }
    }
    // None: no limit.
    let cur = lim.current.unwrap_or(u64::MAX);
    usize::try_from(cur)
        .unwrap_or(usize::MAX)
        .saturating_sub(256)
        .clamp(64, 1 << 20)
}

impl Posix {
    /// Opens `target` (which must be a directory) for aging.
    pub fn open(target: &Path, mode: WriteMode, seed: u64) -> io::Result<Posix> {
        let root = rustix::fs::open(
            target,
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        // Real data for `write` mode and for every Write step, whatever the mode: 1 MiB of
        // pseudo-random (incompressible) bytes, reused.
        let mut rng = Rng::new(seed ^ 0x5eed_da7a);
        let data = (0..(1 << 20) / 8)
            .flat_map(|_| rng.next_u64().to_le_bytes())
            .collect();
        Ok(Posix {
            root,
            dirs: Vec::new(),
            budget: descriptor_budget(),
            mode,
            data,
            reuse_dirs: false,
            tree: DirTree::from_paths(&[]).expect("an empty tree is valid"),
        })
    }

    /// What written data holds (incompressible bytes unless told): the buffer every write takes
    /// its bytes from is filled again with `data`.
    pub fn set_data(&mut self, data: fsage_plan::DataPattern) {
        // The default is what `open` filled in (from the run's seed): kept.
        if !data.is_incompressible() {
            let mut rng = Rng::new(0x5eed_da7a);
            data.fill(&mut self.data, &mut rng);
        }
    }

    /// Lets `make_dirs` accept directories that already exist, as a resumed run finds them.
    pub fn reuse_existing_dirs(&mut self, yes: bool) {
        self.reuse_dirs = yes;
    }

    fn dir_fd(&self, dir: DirId) -> Option<BorrowedFd<'_>> {
        if dir == 0 {
            return Some(self.root.as_fd());
        }
        self.dirs
            .get(dir as usize)
            .and_then(|d| d.as_ref())
            .map(|d| d.as_fd())
    }

    /// Opens a directory below the root by path, refusing symlinks and escapes.
    fn open_beneath(&self, path: &str) -> io::Result<OwnedFd> {
        Ok(rustix::fs::openat2(
            &self.root,
            path,
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS,
        )?)
    }

    /// Runs `f` with a descriptor of `dir`, opening it for the call when it is not kept open.
    fn with_dir<T>(
        &self,
        dir: DirId,
        tree: &DirTree,
        f: impl FnOnce(BorrowedFd<'_>) -> io::Result<T>,
    ) -> io::Result<T> {
        match self.dir_fd(dir) {
            Some(fd) => f(fd),
            None => {
                let owned = self.open_beneath(tree.path(dir))?;
                f(owned.as_fd())
            }
        }
    }

    fn fill(&self, fd: BorrowedFd<'_>, size: u64) -> io::Result<()> {
        if size == 0 {
            return Ok(());
        }
        match self.mode {
            WriteMode::Write => self.write_at(fd, 0, size),
            WriteMode::Fallocate => {
                Ok(rustix::fs::fallocate(fd, FallocateFlags::empty(), 0, size)?)
            }
        }
    }

    /// Writes `len` bytes of the data buffer at `offset`.
    fn write_at(&self, fd: BorrowedFd<'_>, offset: u64, len: u64) -> io::Result<()> {
        let mut done = 0u64;
        while done < len {
            let n = (len - done).min(self.data.len() as u64) as usize;
            match rustix::io::pwrite(fd, &self.data[..n], offset + done) {
                Ok(w) => done += w as u64,
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    fn create(&self, dir: DirId, created: u64, size: u64) -> io::Result<()> {
        let name = Name::new(created);
        self.with_dir(dir, &self.tree, |dfd| {
            self.create_in(dfd, name.as_cstr(), size)
        })
    }

    /// Makes `name` in the directory `dfd` with `size` bytes; never leaves a half-made file.
    fn create_in(&self, dfd: BorrowedFd<'_>, name: &CStr, size: u64) -> io::Result<()> {
        let file = rustix::fs::openat(
            dfd,
            name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(FILE_MODE),
        )?;
        if let Err(e) = self.fill(file.as_fd(), size) {
            drop(file);
            // Never leave a half-made file behind: the plan does not have it.
            let _ = rustix::fs::unlinkat(dfd, name, AtFlags::empty());
            return Err(e);
        }
        Ok(())
    }

    /// The directory holding `path` (opened beneath the root, no symlinks) and the last name.
    fn parent_of(&self, path: &str) -> io::Result<(Option<OwnedFd>, CString)> {
        check_relative(path).map_err(|m| io::Error::new(io::ErrorKind::InvalidInput, m))?;
        let (dir, name) = match path.rsplit_once('/') {
            Some((d, n)) => (Some(self.open_beneath(d)?), n),
            None => (None, path),
        };
        Ok((dir, cstr(name)))
    }

    /// Runs `f` with the parent directory's descriptor and the last name of `path`.
    fn at_path<T>(
        &self,
        path: &str,
        f: impl FnOnce(BorrowedFd<'_>, &CStr) -> io::Result<T>,
    ) -> io::Result<T> {
        let (dir, name) = self.parent_of(path)?;
        let dfd = dir.as_ref().map_or(self.root.as_fd(), |d| d.as_fd());
        f(dfd, &name)
    }

    fn open_existing(dfd: BorrowedFd<'_>, name: &CStr) -> io::Result<OwnedFd> {
        Ok(rustix::fs::openat(
            dfd,
            name,
            OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?)
    }

    /// The named-path operations (Git replay, workloads, op-log replay of foreign paths).
    fn carry_out(&self, op: &Operation) -> io::Result<()> {
        use rustix::fs::{mkdirat, renameat, unlinkat};
        match op {
            Operation::Create {
                file: FileRef::Path(p),
                size,
            } => self.at_path(p, |d, n| self.create_in(d, n, *size)),
            Operation::Delete {
                file: FileRef::Path(p),
                ..
            } => self.at_path(p, |d, n| Ok(unlinkat(d, n, AtFlags::empty())?)),
            Operation::Mkdir { path } => self.at_path(path, |d, n| {
                Ok(mkdirat(d, n, Mode::from_raw_mode(DIR_MODE))?)
            }),
            Operation::Rmdir { path } => {
                self.at_path(path, |d, n| Ok(unlinkat(d, n, AtFlags::REMOVEDIR)?))
            }
            Operation::Write { path, offset, len } => self.at_path(path, |d, n| {
                let f = Self::open_existing(d, n)?;
                self.write_at(f.as_fd(), *offset, *len)
            }),
            Operation::Truncate { path, size } => self.at_path(path, |d, n| {
                let f = Self::open_existing(d, n)?;
                Ok(rustix::fs::ftruncate(&f, *size)?)
            }),
            Operation::Rename { from, to } => {
                let (fd_from, n_from) = self.parent_of(from)?;
                let (fd_to, n_to) = self.parent_of(to)?;
                let root = self.root.as_fd();
                let from_dir = fd_from.as_ref().map_or(root, |d| d.as_fd());
                let to_dir = fd_to.as_ref().map_or(root, |d| d.as_fd());
                Ok(renameat(from_dir, &*n_from, to_dir, &*n_to)?)
            }
            Operation::Create {
                file: FileRef::Planned { dir, created },
                size,
            } => self.create(*dir, *created, *size),
            Operation::Delete {
                file: FileRef::Planned { dir, created },
                ..
            } => self.delete(*dir, *created),
        }
    }

    fn delete(&self, dir: DirId, created: u64) -> io::Result<()> {
        let name = Name::new(created);
        self.with_dir(dir, &self.tree, |dfd| {
            Ok(rustix::fs::unlinkat(dfd, name.as_cstr(), AtFlags::empty())?)
        })
    }
}

impl Backend for Posix {
    fn free_space(&self) -> Option<FreeSpace> {
        let st = fsage_sys::fs_stat_fd(&self.root).ok()?;
        Some(FreeSpace {
            bytes: st.available,
            inodes: st.free_inodes,
        })
    }

    fn name(&self) -> String {
        match self.mode {
            WriteMode::Fallocate => "posix (fallocate)".into(),
            WriteMode::Write => "posix (write)".into(),
        }
    }

    fn make_dirs(&mut self, tree: &DirTree) -> Result<(), OpError> {
        if !self.dirs.is_empty() {
            return Ok(()); // made already (a resume reconciles before the run loop starts)
        }
        self.tree = tree.clone();
        self.dirs = Vec::with_capacity(tree.len());
        self.dirs.push(None);
        for (id, path) in tree.created() {
            let name = cstr(path.rsplit('/').next().unwrap_or(path));
            let parent = tree.parent(id);
            let made = self
                .with_dir(parent, tree, |pfd| {
                    if let Err(e) = rustix::fs::mkdirat(pfd, &*name, Mode::from_raw_mode(DIR_MODE))
                    {
                        // A resumed run finds its directories; O_NOFOLLOW below refuses a symlink.
                        if !(self.reuse_dirs && e == rustix::io::Errno::EXIST) {
                            return Err(e.into());
                        }
                    }
                    if self.dirs.len() >= self.budget {
                        return Ok(None);
                    }
                    Ok(Some(rustix::fs::openat(
                        pfd,
                        &*name,
                        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                        Mode::empty(),
                    )?))
                })
                .map_err(|err| OpError {
                    op: "mkdir",
                    path: path.to_string(),
                    err,
                })?;
            self.dirs.push(made);
        }
        Ok(())
    }

    fn apply(&mut self, step: &Step) -> Result<(), OpError> {
        self.apply_shared(step)
    }
}

impl Posix {
    /// One step through a shared reference: what worker threads call.
    pub fn apply_shared(&self, step: &Step) -> Result<(), OpError> {
        self.carry_out(&step.op).map_err(|err| OpError {
            op: step.verb(),
            path: step.path(&self.tree),
            err,
        })
    }

    /// The planner's directory tree as made by `make_dirs`.
    pub fn tree(&self) -> &DirTree {
        &self.tree
    }
}

#[cfg(test)]
mod write_mode_tests {
    use super::WriteMode;
    use fsage_sys::{BTRFS_SUPER_MAGIC, EXT4_SUPER_MAGIC, F2FS_SUPER_MAGIC, NILFS_SUPER_MAGIC};

    #[test]
    fn log_structured_file_systems_write_data_and_nilfs2_refuses_fallocate() {
        for m in [EXT4_SUPER_MAGIC, BTRFS_SUPER_MAGIC, F2FS_SUPER_MAGIC] {
            WriteMode::Fallocate.check_for(m).unwrap();
        }
        for m in [EXT4_SUPER_MAGIC, BTRFS_SUPER_MAGIC] {
            assert_eq!(WriteMode::default_for(m), WriteMode::Fallocate);
        }
        // f2fs takes fallocate but is not aged by it (its log is never written).
        assert_eq!(WriteMode::default_for(F2FS_SUPER_MAGIC), WriteMode::Write);
        assert_eq!(WriteMode::default_for(NILFS_SUPER_MAGIC), WriteMode::Write);
        let e = WriteMode::Fallocate
            .check_for(NILFS_SUPER_MAGIC)
            .unwrap_err();
        assert_eq!(e.blame, fsage_sys::Blame::Input);
        assert_eq!(
            e.message,
            "nilfs2 has no fallocate (it returns EOPNOTSUPP): files on it get their blocks by \
             writing data"
        );
        // A file system fsage does not know (tmpfs) is fallocated.
        assert_eq!(
            WriteMode::default_for(fsage_sys::TMPFS_MAGIC),
            WriteMode::Fallocate
        );
        WriteMode::Write.check_for(NILFS_SUPER_MAGIC).unwrap();
    }
}

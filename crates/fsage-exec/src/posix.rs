//! The POSIX backend: real files and directories under the target directory.
//!
//! Every operation is relative to a directory file descriptor and a single name, so no path is ever
//! resolved through a symlink: fsage cannot write outside the target. Directory descriptors are kept
//! open up to the process's file limit; directories beyond it are reached with openat2 and
//! RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS.

use crate::backend::{Backend, FreeSpace, OpError};
use crate::op::{check_relative, FileRef, Operation, Step};
use fsage_plan::{DirId, DirTree, Rng};
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

/// How a created file gets its blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// fallocate(2): blocks allocated, no data written. Fast; the default.
    Fallocate,
    /// write(2) of real (pseudo-random, incompressible) data.
    Write,
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
    fn ptr(&self) -> *const libc::c_char {
        self.buf.as_ptr().cast()
    }
}

fn cstr(s: &str) -> CString {
    CString::new(s).expect("fsage makes names without NUL bytes")
}

fn last_err() -> io::Error {
    io::Error::last_os_error()
}

/// Raises the soft open-file limit to the hard one and says how many descriptors we may keep.
fn descriptor_budget() -> usize {
    // SAFETY: getrlimit/setrlimit with a valid pointer.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 512;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim.rlim_cur = lim.rlim_max;
            }
        }
        (lim.rlim_cur as usize)
            .saturating_sub(256)
            .clamp(64, 1 << 20)
    }
}

impl Posix {
    /// Opens `target` (which must be a directory) for aging.
    pub fn open(target: &Path, mode: WriteMode, seed: u64) -> io::Result<Posix> {
        let c = CString::new(target.as_os_str().as_encoded_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path has a NUL byte"))?;
        // SAFETY: valid C string; the result is checked.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_DIRECTORY | libc::O_RDONLY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(last_err());
        }
        // SAFETY: fd is a fresh descriptor we own.
        let root = unsafe { OwnedFd::from_raw_fd(fd) };
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

    /// Lets `make_dirs` accept directories that already exist, as a resumed run finds them.
    pub fn reuse_existing_dirs(&mut self, yes: bool) {
        self.reuse_dirs = yes;
    }

    fn dir_fd(&self, dir: DirId) -> Option<RawFd> {
        if dir == 0 {
            return Some(self.root.as_raw_fd());
        }
        self.dirs
            .get(dir as usize)
            .and_then(|d| d.as_ref())
            .map(|d| d.as_raw_fd())
    }

    /// Opens a directory below the root by path, refusing symlinks and escapes.
    fn open_beneath(&self, path: &str) -> io::Result<OwnedFd> {
        let c = cstr(path);
        // SAFETY: open_how is plain data; all-zero is a valid value.
        let mut how: libc::open_how = unsafe { std::mem::zeroed() };
        how.flags = (libc::O_DIRECTORY | libc::O_RDONLY | libc::O_CLOEXEC) as u64;
        how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS;
        // SAFETY: valid pointers; the result is checked.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                self.root.as_raw_fd(),
                c.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        if fd < 0 {
            return Err(last_err());
        }
        // SAFETY: fresh descriptor.
        Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
    }

    /// Runs `f` with a descriptor of `dir`, opening it for the call when it is not kept open.
    fn with_dir<T>(
        &self,
        dir: DirId,
        tree: &DirTree,
        f: impl FnOnce(RawFd) -> io::Result<T>,
    ) -> io::Result<T> {
        match self.dir_fd(dir) {
            Some(fd) => f(fd),
            None => {
                let owned = self.open_beneath(tree.path(dir))?;
                f(owned.as_raw_fd())
            }
        }
    }

    fn fill(&self, fd: RawFd, size: u64) -> io::Result<()> {
        if size == 0 {
            return Ok(());
        }
        match self.mode {
            WriteMode::Write => self.write_at(fd, 0, size),
            WriteMode::Fallocate => {
                // SAFETY: fd is open for writing.
                let r = unsafe { libc::fallocate(fd, 0, 0, size as libc::off_t) };
                if r != 0 {
                    return Err(last_err());
                }
                Ok(())
            }
        }
    }

    /// Writes `len` bytes of the data buffer at `offset`.
    fn write_at(&self, fd: RawFd, offset: u64, len: u64) -> io::Result<()> {
        let mut done = 0u64;
        while done < len {
            let n = (len - done).min(self.data.len() as u64) as usize;
            // SAFETY: the buffer holds at least n bytes.
            let w = unsafe {
                libc::pwrite(
                    fd,
                    self.data.as_ptr().cast(),
                    n,
                    (offset + done) as libc::off_t,
                )
            };
            if w < 0 {
                let e = last_err();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            done += w as u64;
        }
        Ok(())
    }

    fn create(&self, dir: DirId, created: u64, size: u64) -> io::Result<()> {
        let name = Name::new(created);
        let name = name.ptr();
        self.with_dir(dir, &self.tree, |dfd| self.create_in(dfd, name, size))
    }

    /// Makes `name` in the directory `dfd` with `size` bytes; never leaves a half-made file.
    fn create_in(&self, dfd: RawFd, name: *const libc::c_char, size: u64) -> io::Result<()> {
        {
            // SAFETY: name is NUL-terminated; the result is checked.
            let fd = unsafe {
                libc::openat(
                    dfd,
                    name,
                    libc::O_WRONLY
                        | libc::O_CREAT
                        | libc::O_EXCL
                        | libc::O_NOFOLLOW
                        | libc::O_CLOEXEC,
                    0o644,
                )
            };
            if fd < 0 {
                return Err(last_err());
            }
            // SAFETY: fresh descriptor.
            let file = unsafe { OwnedFd::from_raw_fd(fd) };
            if let Err(e) = self.fill(file.as_raw_fd(), size) {
                drop(file);
                // Never leave a half-made file behind: the plan does not have it.
                // SAFETY: as above.
                unsafe { libc::unlinkat(dfd, name, 0) };
                return Err(e);
            }
            Ok(())
        }
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
        f: impl FnOnce(RawFd, &CString) -> io::Result<T>,
    ) -> io::Result<T> {
        let (dir, name) = self.parent_of(path)?;
        let dfd = dir
            .as_ref()
            .map_or(self.root.as_raw_fd(), |d| d.as_raw_fd());
        f(dfd, &name)
    }

    fn open_existing(dfd: RawFd, name: &CString) -> io::Result<OwnedFd> {
        // SAFETY: valid C string; checked.
        let fd = unsafe {
            libc::openat(
                dfd,
                name.as_ptr(),
                libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(last_err());
        }
        // SAFETY: fresh descriptor.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// The named-path operations (Git replay, workloads, op-log replay of foreign paths).
    fn carry_out(&self, op: &Operation) -> io::Result<()> {
        let check = |r: libc::c_int| if r != 0 { Err(last_err()) } else { Ok(()) };
        match op {
            Operation::Create {
                file: FileRef::Path(p),
                size,
            } => self.at_path(p, |d, n| self.create_in(d, n.as_ptr(), *size)),
            // SAFETY (all below): valid descriptors and NUL-terminated names; results checked.
            Operation::Delete {
                file: FileRef::Path(p),
                ..
            } => self.at_path(p, |d, n| check(unsafe { libc::unlinkat(d, n.as_ptr(), 0) })),
            Operation::Mkdir { path } => self.at_path(path, |d, n| {
                check(unsafe { libc::mkdirat(d, n.as_ptr(), 0o755) })
            }),
            Operation::Rmdir { path } => self.at_path(path, |d, n| {
                check(unsafe { libc::unlinkat(d, n.as_ptr(), libc::AT_REMOVEDIR) })
            }),
            Operation::Write { path, offset, len } => self.at_path(path, |d, n| {
                let f = Self::open_existing(d, n)?;
                self.write_at(f.as_raw_fd(), *offset, *len)
            }),
            Operation::Truncate { path, size } => self.at_path(path, |d, n| {
                let f = Self::open_existing(d, n)?;
                check(unsafe { libc::ftruncate(f.as_raw_fd(), *size as libc::off_t) })
            }),
            Operation::Rename { from, to } => {
                let (fd_from, n_from) = self.parent_of(from)?;
                let (fd_to, n_to) = self.parent_of(to)?;
                let raw = |d: &Option<OwnedFd>| {
                    d.as_ref().map_or(self.root.as_raw_fd(), |d| d.as_raw_fd())
                };
                check(unsafe {
                    libc::renameat(raw(&fd_from), n_from.as_ptr(), raw(&fd_to), n_to.as_ptr())
                })
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
        let name = name.ptr();
        self.with_dir(dir, &self.tree, |dfd| {
            // SAFETY: name is NUL-terminated.
            if unsafe { libc::unlinkat(dfd, name, 0) } != 0 {
                return Err(last_err());
            }
            Ok(())
        })
    }
}

impl Backend for Posix {
    fn free_space(&self) -> Option<FreeSpace> {
        // SAFETY: valid descriptor and out-pointer.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstatvfs(self.root.as_raw_fd(), &mut st) } != 0 {
            return None;
        }
        Some(FreeSpace {
            bytes: st.f_bavail as u64 * st.f_frsize as u64,
            inodes: (st.f_files > 0).then_some(st.f_favail as u64),
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
                    // SAFETY: valid C string.
                    if unsafe { libc::mkdirat(pfd, name.as_ptr(), 0o755) } != 0 {
                        let e = last_err();
                        // A resumed run finds its directories; O_NOFOLLOW below refuses a symlink.
                        if !(self.reuse_dirs && e.raw_os_error() == Some(libc::EEXIST)) {
                            return Err(e);
                        }
                    }
                    if self.dirs.len() >= self.budget {
                        return Ok(None);
                    }
                    // SAFETY: valid C string; checked.
                    let fd = unsafe {
                        libc::openat(
                            pfd,
                            name.as_ptr(),
                            libc::O_DIRECTORY | libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                        )
                    };
                    if fd < 0 {
                        return Err(last_err());
                    }
                    // SAFETY: fresh descriptor.
                    Ok(Some(unsafe { OwnedFd::from_raw_fd(fd) }))
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

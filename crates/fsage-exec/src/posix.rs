//! The POSIX backend: real files and directories under the target directory.
//!
//! Every operation is relative to a directory file descriptor and a single name, so no path is ever
//! resolved through a symlink: fsage cannot write outside the target. Directory descriptors are kept
//! open up to the process's file limit; directories beyond it are reached with openat2 and
//! RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS.

use crate::backend::{Backend, FreeSpace, OpError};
use fsage_plan::{DirId, DirTree, Op, OpKind, Rng};
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
        let data = match mode {
            WriteMode::Write => {
                let mut rng = Rng::new(seed ^ 0x5eed_da7a);
                (0..(1 << 20) / 8)
                    .flat_map(|_| rng.next_u64().to_le_bytes())
                    .collect()
            }
            WriteMode::Fallocate => Vec::new(),
        };
        Ok(Posix {
            root,
            dirs: Vec::new(),
            budget: descriptor_budget(),
            mode,
            data,
            reuse_dirs: false,
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
            WriteMode::Fallocate => {
                // SAFETY: fd is open for writing.
                let r = unsafe { libc::fallocate(fd, 0, 0, size as libc::off_t) };
                if r != 0 {
                    return Err(last_err());
                }
            }
            WriteMode::Write => {
                let mut off = 0u64;
                while off < size {
                    let n = (size - off).min(self.data.len() as u64) as usize;
                    // SAFETY: the buffer holds at least n bytes.
                    let w = unsafe {
                        libc::pwrite(fd, self.data.as_ptr().cast(), n, off as libc::off_t)
                    };
                    if w < 0 {
                        let e = last_err();
                        if e.kind() == io::ErrorKind::Interrupted {
                            continue;
                        }
                        return Err(e);
                    }
                    off += w as u64;
                }
            }
        }
        Ok(())
    }

    fn create(&self, op: &Op, tree: &DirTree) -> io::Result<()> {
        let name = Name::new(op.file.created);
        let name = name.ptr();
        let size = op.file.size;
        self.with_dir(op.file.dir, tree, |dfd| {
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
        })
    }

    fn delete(&self, op: &Op, tree: &DirTree) -> io::Result<()> {
        let name = Name::new(op.file.created);
        let name = name.ptr();
        self.with_dir(op.file.dir, tree, |dfd| {
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

    fn apply(&mut self, op: &Op, tree: &DirTree) -> Result<(), OpError> {
        self.apply_shared(op, tree)
    }
}

impl Posix {
    /// One operation through a shared reference: what worker threads call.
    pub fn apply_shared(&self, op: &Op, tree: &DirTree) -> Result<(), OpError> {
        let r = match op.kind {
            OpKind::Create => self.create(op, tree),
            OpKind::Delete => self.delete(op, tree),
        };
        r.map_err(|err| OpError {
            op: match op.kind {
                OpKind::Create => "create",
                OpKind::Delete => "delete",
            },
            path: tree.file_path(op.file.dir, &op.file.name()),
            err,
        })
    }
}

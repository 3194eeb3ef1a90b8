//! What a guest may see and write of the host's directories. A guest runs as root, and QEMU
//! (as root) carries out its file operations on the host: so a writable share uses QEMU's
//! `mapped-xattr` security model (the owners, modes and device numbers the guest sets are kept
//! in `user.virtfs.*` extended attributes, never applied: a guest's `chmod 4755` or `mknod`
//! makes no setuid or device file on the host; a file it creates is root's, mode 0600 on the
//! host while the guest runs), and a command that writes a few named files is given a *staged*
//! share: a fresh directory, private to root, holding only those files, whose results are moved
//! into the real directory when the guest ends (with the guest's permission bits, never a
//! setuid, setgid or sticky bit).
//!
//! Every share is given to QEMU as a directory descriptor fsage holds (`/proc/self/fd/N`), so
//! no rename or symlink of its path after the check can send QEMU to another directory.

use crate::{Error, Result};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat, XattrFlags, CWD};
use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A host directory the guest sees at its own path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Share {
    pub dir: PathBuf,
    pub access: Access,
}

/// How much of a shared directory the guest gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// The whole directory, read-only (QEMU `readonly=on`).
    ReadOnly,
    /// The whole directory, writable: the guest may create, change and remove anything in it
    /// (`fsage vm run --share`).
    Writable,
    /// A fresh directory made inside `dir` (`.fsage-vm-RANDOM`, mode 0700), seen by the guest
    /// at `dir`'s path instead of it. `files` are the names the guest may write, each with its
    /// neighbours `NAME.*` and temporary files `.NAME.*`; those that exist (regular files) are
    /// there as hard links (the guest may change them in place: an image it resumes). `reads`
    /// are there as copies (files it only reads: changing its copy changes nothing on the
    /// host). When writable, what the guest made or replaced under its names is moved into
    /// `dir` when the guest ends; anything else it made there is not (an error names it).
    Staged {
        files: Vec<OsString>,
        reads: Vec<OsString>,
        writable: bool,
    },
}

impl Share {
    pub fn read_only(dir: impl Into<PathBuf>) -> Share {
        Share {
            dir: dir.into(),
            access: Access::ReadOnly,
        }
    }

    pub fn writable(dir: impl Into<PathBuf>) -> Share {
        Share {
            dir: dir.into(),
            access: Access::Writable,
        }
    }

    /// A staged share of `dir`, writable, empty so far.
    pub fn staged(dir: impl Into<PathBuf>) -> Share {
        Share {
            dir: dir.into(),
            access: Access::Staged {
                files: Vec::new(),
                reads: Vec::new(),
                writable: true,
            },
        }
    }

    /// A staged share the guest only reads (its files are copies).
    pub fn staged_read_only(dir: impl Into<PathBuf>) -> Share {
        let mut s = Share::staged(dir);
        if let Access::Staged { writable, .. } = &mut s.access {
            *writable = false;
        }
        s
    }

    /// Adds a name the guest may write, with its `NAME.*` (a staged share; else nothing to do);
    /// the file is given to it (a hard link) when it exists.
    pub fn with_file(mut self, name: impl Into<OsString>) -> Share {
        if let Access::Staged { files, .. } = &mut self.access {
            files.push(name.into());
        }
        self
    }

    /// Adds a file of the directory the guest only reads (a staged share).
    pub fn with_read(mut self, name: impl Into<OsString>) -> Share {
        if let Access::Staged { reads, .. } = &mut self.access {
            reads.push(name.into());
        }
        self
    }

    pub fn is_writable(&self) -> bool {
        match &self.access {
            Access::ReadOnly => false,
            Access::Writable => true,
            Access::Staged { writable, .. } => *writable,
        }
    }
}

fn errno(e: rustix::io::Errno) -> std::io::Error {
    std::io::Error::from(e)
}

fn open_dir_at(dir: BorrowedFd, name: &OsStr) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

fn lstat_at(dir: BorrowedFd, name: &OsStr) -> rustix::io::Result<Stat> {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
}

/// A name nobody can guess: `PREFIX` and 16 hex digits from the kernel's random source.
fn random_name(prefix: &str) -> Result<OsString> {
    use std::io::Read;
    let mut b = [0u8; 8];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| Error::operation(format!("/dev/urandom: {e}")))?;
    Ok(format!("{prefix}{:016x}", u64::from_ne_bytes(b)).into())
}

/// A directory fsage made: random name, created exclusively, mode 0700, owned by fsage's user.
pub(crate) struct PrivateDir {
    pub parent: OwnedFd,
    pub name: OsString,
    pub fd: OwnedFd,
    /// The path it was made under (for messages and the guest's view).
    pub parent_path: PathBuf,
}

impl PrivateDir {
    /// Makes `PARENT/PREFIXrandom`; never an existing directory, never through a symlink.
    pub fn make(parent_path: &Path, prefix: &str) -> Result<PrivateDir> {
        let parent = rustix::fs::openat(
            CWD,
            parent_path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| Error::io(parent_path, "cannot open the directory", errno(e)))?;
        Self::make_at(parent, parent_path, prefix)
    }

    fn make_at(parent: OwnedFd, parent_path: &Path, prefix: &str) -> Result<PrivateDir> {
        for _ in 0..16 {
            let name = random_name(prefix)?;
            match rustix::fs::mkdirat(&parent, name.as_os_str(), Mode::RWXU) {
                Ok(()) => {}
                Err(rustix::io::Errno::EXIST) => continue,
                Err(e) => {
                    return Err(Error::io(
                        parent_path,
                        "cannot make a private directory in it",
                        errno(e),
                    ))
                }
            }
            let fd = open_dir_at(parent.as_fd(), &name)
                .map_err(|e| Error::io(&parent_path.join(&name), "cannot open", errno(e)))?;
            // The umask may have taken bits; none may have been added.
            let _ = rustix::fs::fchmod(&fd, Mode::RWXU);
            return Ok(PrivateDir {
                parent,
                name,
                fd,
                parent_path: parent_path.to_path_buf(),
            });
        }
        Err(Error::operation(format!(
            "{}: cannot find a free name for a private directory",
            parent_path.display()
        )))
    }

    pub fn path(&self) -> PathBuf {
        self.parent_path.join(&self.name)
    }

    /// Removes it and everything in it, never following a symlink.
    pub fn remove(self) {
        remove_tree(self.parent.as_fd(), &self.name);
    }
}

/// Removes `parent/name` and, when a directory, everything under it; symlinks are removed, not
/// followed. Best effort (what cannot be removed stays).
pub(crate) fn remove_tree(parent: BorrowedFd, name: &OsStr) {
    let Ok(st) = lstat_at(parent, name) else {
        return;
    };
    if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
        if let Ok(fd) = open_dir_at(parent, name) {
            for n in entries(fd.as_fd()) {
                remove_tree(fd.as_fd(), &n);
            }
        }
        let _ = rustix::fs::unlinkat(parent, name, AtFlags::REMOVEDIR);
    } else {
        let _ = rustix::fs::unlinkat(parent, name, AtFlags::empty());
    }
}

/// The names in a directory, without `.` and `..`.
fn entries(dir: BorrowedFd) -> Vec<OsString> {
    let Ok(d) = rustix::fs::Dir::read_from(dir) else {
        return Vec::new();
    };
    d.filter_map(|e| e.ok())
        .map(|e| OsStr::from_bytes(e.file_name().to_bytes()).to_os_string())
        .filter(|n| n != "." && n != "..")
        .collect()
}

/// Refuses a writable share on a file system without user extended attributes (tmpfs before
/// Linux 6.6): QEMU's mapped-xattr model keeps the guest's owners and modes there, and without
/// them the guest could not create a file.
pub(crate) fn check_xattrs(dir: BorrowedFd, shown: &Path) -> Result<()> {
    const PROBE: &str = "user.fsage.probe";
    match rustix::fs::fsetxattr(dir, PROBE, b"1", XattrFlags::empty()) {
        Ok(()) => {
            let _ = rustix::fs::fremovexattr(dir, PROBE);
            Ok(())
        }
        Err(e) if e == rustix::io::Errno::NOTSUP || e == rustix::io::Errno::OPNOTSUPP => {
            Err(Error::input(format!(
                "{}: its file system keeps no user extended attributes, which a guest's writable \
                 share needs (QEMU's mapped-xattr keeps the guest's owners and modes there, so \
                 that it cannot make a setuid or device file on the host); tmpfs has them from \
                 Linux 6.6: use a directory on ext4, xfs or btrfs",
                shown.display()
            )))
        }
        Err(e) => Err(Error::io(
            shown,
            "cannot set an extended attribute",
            errno(e),
        )),
    }
}

/// A share made ready for QEMU: the descriptor QEMU is given, and for a staged share what to
/// move back and remove when the guest ends.
pub(crate) struct Prepared {
    /// The path the guest sees it at.
    pub at: PathBuf,
    /// The directory QEMU exports (as `/proc/self/fd/N`).
    pub fd: OwnedFd,
    pub writable: bool,
    staged: Option<Staged>,
}

struct Staged {
    dir: PrivateDir,
    /// Files linked in from the real directory, with their device and inode: left alone when
    /// the guest did not replace them.
    linked: Vec<(OsString, u64, u64)>,
    /// Copies of files the guest only reads: never moved back.
    copied: Vec<OsString>,
    /// The names the guest may write (each with its `NAME.*` and `.NAME.*`).
    files: Vec<OsString>,
    writable: bool,
}

impl Prepared {
    /// The path QEMU is given: the descriptor fsage holds, which QEMU inherits.
    pub fn qemu_path(&self) -> String {
        format!("/proc/self/fd/{}", self.fd.as_raw_fd())
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Opens the share (an existing directory, `dir` absolute) and, for a staged one, makes its
/// private directory with its files in it.
pub(crate) fn prepare(s: &Share) -> Result<Prepared> {
    let dir = &s.dir;
    let fd = rustix::fs::openat(
        CWD,
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR => Error::input(format!(
            "{}: a share must be an existing directory",
            dir.display()
        )),
        e => Error::io(dir, "cannot share it", errno(e)),
    })?;
    let (files, reads, writable) = match &s.access {
        Access::ReadOnly | Access::Writable => {
            if s.is_writable() {
                // Probed on a private directory of its own, so that nothing of the user's is
                // changed even for a moment.
                let probe = PrivateDir::make_at(
                    rustix::io::dup(&fd).map_err(|e| Error::io(dir, "dup", errno(e)))?,
                    dir,
                    ".fsage-vm-probe-",
                )?;
                let r = check_xattrs(probe.fd.as_fd(), dir);
                probe.remove();
                r?;
            }
            return Ok(Prepared {
                at: dir.clone(),
                fd,
                writable: s.is_writable(),
                staged: None,
            });
        }
        Access::Staged {
            files,
            reads,
            writable,
        } => (files, reads, *writable),
    };
    let private = PrivateDir::make_at(fd, dir, ".fsage-vm-")?;
    let mut staged = Staged {
        dir: private,
        linked: Vec::new(),
        copied: Vec::new(),
        files: files.clone(),
        writable,
    };
    // From here on a failure removes the private directory (the links in it are only links).
    let r = fill(&mut staged, dir, files, reads);
    if let Err(e) = r {
        staged.dir.remove();
        return Err(e);
    }
    let fd = rustix::io::dup(&staged.dir.fd)
        .map_err(|e| Error::io(&staged.dir.path(), "dup", errno(e)))?;
    Ok(Prepared {
        at: dir.clone(),
        fd,
        writable,
        staged: Some(staged),
    })
}

fn check_name(dir: &Path, name: &OsStr) -> Result<()> {
    if name.is_empty() || name == "." || name == ".." || name.as_bytes().contains(&b'/') {
        return Err(Error::input(format!(
            "{}: {:?} is not a file name in it",
            dir.display(),
            name
        )));
    }
    Ok(())
}

fn fill(st: &mut Staged, dir: &Path, files: &[OsString], reads: &[OsString]) -> Result<()> {
    if st.writable {
        check_xattrs(st.dir.fd.as_fd(), dir)?;
    }
    let real = st.dir.parent.as_fd();
    let private = st.dir.fd.as_fd();
    let not_a_file = |name: &OsStr| {
        Error::input(format!(
            "{}: not a regular file (a symlink, a directory or a device); a guest is given \
             regular files only",
            dir.join(name).display()
        ))
    };
    for name in files {
        check_name(dir, name)?;
        if st.linked.iter().any(|(n, ..)| n == name) {
            continue;
        }
        match lstat_at(real, name) {
            Err(rustix::io::Errno::NOENT) => continue,
            Err(e) => return Err(Error::io(&dir.join(name), "cannot look at it", errno(e))),
            Ok(s) if FileType::from_raw_mode(s.st_mode) != FileType::RegularFile => {
                return Err(not_a_file(name))
            }
            Ok(_) => {}
        }
        // The entry itself (a symlink put there since is linked as a symlink, and refused next).
        rustix::fs::linkat(
            real,
            name.as_os_str(),
            private,
            name.as_os_str(),
            AtFlags::empty(),
        )
        .map_err(|e| {
            Error::io(
                &dir.join(name),
                "cannot give it to the guest (a hard link)",
                errno(e),
            )
        })?;
        let s = lstat_at(private, name)
            .map_err(|e| Error::io(&dir.join(name), "cannot look at it", errno(e)))?;
        if FileType::from_raw_mode(s.st_mode) != FileType::RegularFile {
            let _ = rustix::fs::unlinkat(private, name.as_os_str(), AtFlags::empty());
            return Err(not_a_file(name));
        }
        st.linked.push((name.clone(), s.st_dev, s.st_ino));
    }
    for name in reads {
        check_name(dir, name)?;
        if st.linked.iter().any(|(n, ..)| n == name) || st.copied.contains(name) {
            continue;
        }
        let src = rustix::fs::openat(
            real,
            name.as_os_str(),
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            rustix::io::Errno::LOOP => not_a_file(name),
            e => Error::io(&dir.join(name), "cannot read it", errno(e)),
        })?;
        let s = rustix::fs::fstat(&src)
            .map_err(|e| Error::io(&dir.join(name), "cannot look at it", errno(e)))?;
        if FileType::from_raw_mode(s.st_mode) != FileType::RegularFile {
            return Err(not_a_file(name));
        }
        let dst = rustix::fs::openat(
            private,
            name.as_os_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .map_err(|e| Error::io(&st.dir.path().join(name), "cannot copy to", errno(e)))?;
        let mut from = std::fs::File::from(src);
        let mut to = std::fs::File::from(dst);
        std::io::copy(&mut from, &mut to)
            .map_err(|e| Error::io(&dir.join(name), "cannot copy it for the guest", e))?;
        st.copied.push(name.clone());
    }
    Ok(())
}

/// The mode the guest gave a file (QEMU's `user.virtfs.mode`), else its mode on the host.
fn guest_mode(fd: BorrowedFd, host: u32) -> u32 {
    let mut b = [0u8; 4];
    match rustix::fs::fgetxattr(fd, "user.virtfs.mode", &mut b) {
        Ok(4) => u32::from_ne_bytes(b),
        _ => host,
    }
}

/// Gives a file or directory the guest made its permission bits from the guest (never a
/// setuid, setgid or sticky bit), under a directory; a file with other links is left as it is
/// (its mode is its other names' too).
fn sanitize(dir: BorrowedFd, name: &OsStr) {
    let Ok(st) = lstat_at(dir, name) else { return };
    let ft = FileType::from_raw_mode(st.st_mode);
    let flags = match ft {
        FileType::Directory => OFlags::RDONLY | OFlags::DIRECTORY,
        FileType::RegularFile if st.st_nlink == 1 => OFlags::RDONLY | OFlags::NONBLOCK,
        _ => return,
    };
    let Ok(fd) = rustix::fs::openat(
        dir,
        name,
        flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return;
    };
    let mode = guest_mode(fd.as_fd(), st.st_mode) & 0o777;
    let _ = rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode));
    if ft == FileType::Directory {
        for n in entries(fd.as_fd()) {
            sanitize(fd.as_fd(), &n);
        }
    }
}

/// What becomes of an entry the guest left in a staged directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Judge {
    /// Renamed into the real directory (a directory there of that name is merged into).
    Move,
    /// Left to go with the private directory: a file given to the guest and not replaced, a
    /// copy it read, a disk's mount point.
    Keep,
    /// A name the guest was not given: an empty directory (a mount point) goes with the private
    /// directory, anything else is reported and stays there.
    Foreign,
}

/// Moves what is in `from` into `to` (same file system): each entry renamed over its namesake
/// (a rename replaces the name, never follows it); a directory that exists in both is merged.
/// `judge(path, stat, top)` says what to do with each (at its path under the real directory;
/// `top`: directly in it). Adds what could not be moved to `problems`.
fn merge(
    from: BorrowedFd,
    to: BorrowedFd,
    at: &Path,
    top: bool,
    judge: &dyn Fn(&Path, &Stat, bool) -> Judge,
    problems: &mut Vec<String>,
) {
    for name in entries(from) {
        let path = at.join(&name);
        let Ok(st) = lstat_at(from, &name) else {
            continue;
        };
        let ft = FileType::from_raw_mode(st.st_mode);
        match judge(&path, &st, top) {
            Judge::Keep => continue,
            Judge::Foreign => {
                let empty_dir = ft == FileType::Directory && only_dirs(from, &name);
                if !empty_dir {
                    problems.push(format!(
                        "{}: not moved: the guest was not given this name",
                        path.display()
                    ));
                }
                continue;
            }
            Judge::Move => {}
        }
        if ft != FileType::RegularFile && ft != FileType::Directory {
            problems.push(format!(
                "{}: not moved: the guest left something that is neither a file nor a directory",
                path.display()
            ));
            continue;
        }
        let there = lstat_at(to, &name).ok();
        let both_dirs = ft == FileType::Directory
            && there.is_some_and(|t| FileType::from_raw_mode(t.st_mode) == FileType::Directory);
        if both_dirs {
            match (open_dir_at(from, &name), open_dir_at(to, &name)) {
                (Ok(f), Ok(t)) => merge(f.as_fd(), t.as_fd(), &path, false, judge, problems),
                _ => problems.push(format!("{}: cannot open to move into", path.display())),
            }
            // What is left of it (mount points, kept files) goes with the private directory.
            continue;
        }
        sanitize(from, &name);
        if let Err(e) = rustix::fs::renameat(from, name.as_os_str(), to, name.as_os_str()) {
            problems.push(format!("{}: not moved: {}", path.display(), errno(e)));
        }
    }
}

/// Is `dir/name` a directory holding nothing but directories (mount points the guest made)?
fn only_dirs(dir: BorrowedFd, name: &OsStr) -> bool {
    let Ok(d) = open_dir_at(dir, name) else {
        return false;
    };
    entries(d.as_fd()).iter().all(|n| {
        lstat_at(d.as_fd(), n)
            .is_ok_and(|s| FileType::from_raw_mode(s.st_mode) == FileType::Directory)
            && only_dirs(d.as_fd(), n)
    })
}

/// Is `name` one the guest may write for a file it was given, `given`: the file itself, its
/// neighbours `GIVEN.*`, and the temporary files of atomic writes `.GIVEN.*`?
fn may_write(name: &OsStr, given: &OsStr) -> bool {
    let (n, g) = (name.as_bytes(), given.as_bytes());
    let after = |p: &[u8]| p.len() > g.len() && p.starts_with(g) && p[g.len()] == b'.';
    n == g || after(n) || n.strip_prefix(b".").is_some_and(after)
}

impl Prepared {
    /// After the guest: a writable staged share's new and replaced files are moved into the
    /// real directory (disks' mount points `disks` are not), and its private directory removed.
    /// An error (the private directory then stays, with what could not be moved) names it.
    pub fn finish(self, disks: &[PathBuf]) -> Result<()> {
        let Some(st) = self.staged else {
            return Ok(());
        };
        let mut problems = Vec::new();
        if st.writable {
            let top = self.at.clone();
            let judge = |p: &Path, s: &Stat, at_top: bool| -> Judge {
                if disks.iter().any(|d| d == p) {
                    return Judge::Keep;
                }
                if !at_top {
                    return Judge::Move;
                }
                let name = p
                    .strip_prefix(&top)
                    .map_or(p.as_os_str(), |r| r.as_os_str());
                if st.copied.iter().any(|c| c == name)
                    || st
                        .linked
                        .iter()
                        .any(|(n, dev, ino)| n == name && s.st_dev == *dev && s.st_ino == *ino)
                {
                    Judge::Keep
                } else if st.files.iter().any(|g| may_write(name, g)) {
                    Judge::Move
                } else {
                    Judge::Foreign
                }
            };
            merge(
                st.dir.fd.as_fd(),
                st.dir.parent.as_fd(),
                &self.at,
                true,
                &judge,
                &mut problems,
            );
        }
        if problems.is_empty() {
            st.dir.remove();
            return Ok(());
        }
        Err(Error::operation(format!(
            "the guest's results could not all be moved into {}; they are left in {}:\n  {}",
            self.at.display(),
            st.dir.path().display(),
            problems.join("\n  ")
        )))
    }
}

/// `name` and its neighbours in `dir` that are regular files (`NAME.*`: an image's state,
/// report, sidecar, drive state): what a staged share gives the guest for a file a command
/// names, so that it finds there what it would find natively.
pub fn neighbours(dir: &Path, name: &OsStr) -> Vec<OsString> {
    let mut out: BTreeSet<OsString> = BTreeSet::new();
    out.insert(name.to_os_string());
    let mut prefix = name.as_bytes().to_vec();
    prefix.push(b'.');
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let n = e.file_name();
            if n.as_bytes().starts_with(&prefix) && e.file_type().is_ok_and(|t| t.is_file()) {
                out.insert(n);
            }
        }
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn private_dirs(d: &Path) -> Vec<PathBuf> {
        std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(".fsage-vm-")
            })
            .collect()
    }

    /// A staged share as a guest would use it, without the guest: the private directory holds
    /// the named file (the same inode) and a copy of the read one and nothing else; what the
    /// guest made comes back without a setuid bit, what it changed in its copy does not, a
    /// disk's mount point does not, and a symlink planted at a result's name is replaced, not
    /// followed.
    #[test]
    fn a_staged_share_gives_only_its_files_and_brings_back_only_the_guests_results() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        std::fs::write(dir.join("a.img"), "image").unwrap();
        std::fs::write(dir.join("p.toml"), "profile").unwrap();
        std::fs::write(dir.join("other"), "someone else's").unwrap();
        let target = d.path().join("target");
        std::fs::write(&target, "not to be written").unwrap();
        std::os::unix::fs::symlink(&target, dir.join("a.img.report.json")).unwrap();
        let share = Share::staged(dir).with_file("a.img").with_read("p.toml");
        let p = prepare(&share).unwrap();
        let s = private_dirs(dir);
        assert_eq!(s.len(), 1);
        let s = s[0].clone();
        let md = std::fs::metadata(&s).unwrap();
        assert_eq!(md.permissions().mode() & 0o777, 0o700);
        let mut names: Vec<_> = std::fs::read_dir(&s)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["a.img", "p.toml"]);
        let ino = |p: &Path| std::fs::metadata(p).unwrap().ino();
        assert_eq!(ino(&s.join("a.img")), ino(&dir.join("a.img")));
        assert_ne!(ino(&s.join("p.toml")), ino(&dir.join("p.toml")));
        // The guest: writes the image in place, changes its copy of the profile, makes a
        // report (setuid as far as it knows), a directory, and a disk's mount point.
        std::fs::write(s.join("a.img"), "aged image").unwrap();
        std::fs::write(s.join("p.toml"), "changed").unwrap();
        std::fs::write(s.join("a.img.report.json"), "{}").unwrap();
        std::fs::set_permissions(
            s.join("a.img.report.json"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        let f = std::fs::File::open(s.join("a.img.report.json")).unwrap();
        rustix::fs::fsetxattr(
            &f,
            "user.virtfs.mode",
            &(0o104755u32).to_ne_bytes(),
            XattrFlags::empty(),
        )
        .unwrap();
        std::fs::create_dir(s.join("a.img.traces")).unwrap();
        std::fs::write(s.join("a.img.traces/t0"), "t").unwrap();
        std::fs::write(s.join("disk.img"), "").unwrap();
        p.finish(&[dir.join("disk.img")]).unwrap();
        assert!(private_dirs(dir).is_empty(), "the private directory goes");
        assert_eq!(
            std::fs::read_to_string(dir.join("a.img")).unwrap(),
            "aged image"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("p.toml")).unwrap(),
            "profile"
        );
        assert_eq!(
            std::fs::read_to_string(&target).unwrap(),
            "not to be written"
        );
        let r = std::fs::symlink_metadata(dir.join("a.img.report.json")).unwrap();
        assert!(r.is_file(), "the planted symlink is replaced");
        assert_eq!(r.mode() & 0o7777, 0o755, "the guest's bits, without setuid");
        assert_eq!(
            std::fs::read_to_string(dir.join("a.img.traces/t0")).unwrap(),
            "t"
        );
        assert!(!dir.join("disk.img").exists());
        assert_eq!(
            std::fs::read_to_string(dir.join("other")).unwrap(),
            "someone else's"
        );
    }

    #[test]
    fn a_named_file_that_is_a_symlink_is_refused_and_nothing_is_left() {
        let d = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/etc/passwd", d.path().join("a.img")).unwrap();
        let e = prepare(&Share::staged(d.path()).with_file("a.img"))
            .err()
            .unwrap();
        assert!(e.message.contains("not a regular file"), "{e}");
        assert_eq!(e.blame, fsage_sys::Blame::Input);
        let e = prepare(&Share::staged_read_only(d.path()).with_read("a.img"))
            .err()
            .unwrap();
        assert!(e.message.contains("not a regular file"), "{e}");
        assert!(private_dirs(d.path()).is_empty());
        let e = prepare(&Share::staged(d.path()).with_file("../x"))
            .err()
            .unwrap();
        assert!(e.message.contains("not a file name"), "{e}");
    }

    /// A result that cannot be moved (a directory of the user's has its name) is kept in the
    /// private directory, which the error names.
    #[test]
    fn a_result_that_cannot_be_moved_is_kept_and_named() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("r.json.d")).unwrap();
        std::fs::write(d.path().join("r.json.d/keep"), "x").unwrap();
        let p = prepare(&Share::staged(d.path()).with_file("r.json")).unwrap();
        let s = private_dirs(d.path()).remove(0);
        std::fs::write(s.join("r.json.d"), "{}").unwrap();
        let e = p.finish(&[]).unwrap_err();
        assert!(e.message.contains(&*s.to_string_lossy()), "{e}");
        assert_eq!(std::fs::read_to_string(s.join("r.json.d")).unwrap(), "{}");
        assert!(d.path().join("r.json.d/keep").exists());
    }

    /// A staged share of /dev/shm for `a.img` lets the guest write `a.img` and `a.img.*`, not
    /// another user's file beside it nor a new name: those stay in the private directory, which
    /// the error names; an empty directory it made (a mount point) is no result.
    #[test]
    fn a_name_the_guest_was_not_given_is_not_moved() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("other"), "someone else's").unwrap();
        let p = prepare(&Share::staged(d.path()).with_file("a.img")).unwrap();
        let s = private_dirs(d.path()).remove(0);
        std::fs::write(s.join("a.img"), "image").unwrap();
        std::fs::write(s.join(".a.img.tmp1"), "left by a crash").unwrap();
        std::fs::write(s.join("other"), "the guest's").unwrap();
        std::fs::write(s.join("a.imgx"), "x").unwrap();
        std::fs::create_dir_all(s.join("sub/dir")).unwrap();
        let e = p.finish(&[]).unwrap_err();
        assert!(
            e.message
                .contains("other: not moved: the guest was not given this name"),
            "{e}"
        );
        assert!(e.message.contains("a.imgx: not moved"), "{e}");
        assert!(!e.message.contains("sub"), "{e}");
        assert_eq!(
            std::fs::read_to_string(d.path().join("other")).unwrap(),
            "someone else's"
        );
        assert_eq!(
            std::fs::read_to_string(d.path().join("a.img")).unwrap(),
            "image"
        );
        assert!(d.path().join(".a.img.tmp1").exists());
        assert!(!d.path().join("a.imgx").exists());
        assert!(may_write(OsStr::new("a.img.ftl"), OsStr::new("a.img")));
        assert!(!may_write(OsStr::new("a.im"), OsStr::new("a.img")));
        assert!(!may_write(OsStr::new(".a.img"), OsStr::new("a.img")));
    }

    #[test]
    fn neighbours_are_the_regular_files_named_after_it() {
        let d = tempfile::tempdir().unwrap();
        for f in ["a.img", "a.img.ftl", "a.imgx", "b"] {
            std::fs::write(d.path().join(f), "").unwrap();
        }
        std::fs::create_dir(d.path().join("a.img.mnt")).unwrap();
        assert_eq!(
            neighbours(d.path(), OsStr::new("a.img")),
            ["a.img", "a.img.ftl"]
        );
        assert_eq!(neighbours(d.path(), OsStr::new("new")), ["new"]);
    }
}

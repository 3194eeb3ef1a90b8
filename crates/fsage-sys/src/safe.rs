//! Making and opening paths as root where other users may write (`/dev/shm`, `/tmp`, a directory
//! a user named): every name fsage makes for itself is random and created exclusively
//! (`O_CREAT|O_EXCL|O_NOFOLLOW`, `mkdtemp`-style directories of mode 0700), a symbolic link where
//! fsage expects its own file or directory is refused rather than followed, and a directory fsage
//! keeps images or working copies in must be root's (or this user's) and writable by nobody else.
//! A planted name then costs an attacker a refusal at most, never a write, a mount or an unmount
//! somewhere else.

use crate::Error;
use rustix::fs::{Mode, OFlags};
use std::fs::{self, File, Metadata};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// 16 hex digits from getrandom(2): a name nobody can compute ahead of fsage.
pub fn random_hex() -> String {
    let mut b = [0u8; 8];
    // getrandom(2) fails only before the kernel's pool is ready (never after boot) or on EINTR:
    // fall back on the time and a per-process counter, which are at least unique.
    if rustix::rand::getrandom(&mut b, rustix::rand::GetRandomFlags::empty())
        .map_or(true, |n| n < 8)
    {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        b = (t ^ (u64::from(std::process::id()) << 32) ^ N.fetch_add(1, Ordering::Relaxed))
            .to_le_bytes();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Creates the file `path`, which must not exist, for reading and writing: `O_CREAT|O_EXCL|
/// O_NOFOLLOW`, so that neither a planted file nor a planted symbolic link is ever opened. `mode`
/// is reduced by the umask as open(2) does.
pub fn create_new(path: &Path, mode: u32) -> io::Result<File> {
    let fd = rustix::fs::open(
        path,
        OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::RDWR | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode),
    )?;
    Ok(File::from(fd))
}

/// Opens an existing file fsage made (a log to append to, a lock) for writing, or makes it:
/// `O_CREAT|O_NOFOLLOW`, never through a symbolic link, never truncated.
pub fn open_or_create_nofollow(path: &Path, mode: u32) -> io::Result<File> {
    let fd = rustix::fs::open(
        path,
        OFlags::CREATE | OFlags::NOFOLLOW | OFlags::RDWR | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode),
    )?;
    let f = File::from(fd);
    if !f.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(f)
}

/// Opens an existing file for reading without following a symbolic link at its last component
/// (`O_NOFOLLOW`, ELOOP on a link).
pub fn open_read_nofollow(path: &Path) -> io::Result<File> {
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    Ok(File::from(fd))
}

/// The directory holding `path` (`.` for a bare name).
pub(crate) fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// A new file beside `path` (`.NAME.fsage-tmp-RANDOM`, on the same file system so that a rename
/// onto `path` is atomic), created exclusively with `mode`. Retried under another name in the
/// unlikely case that one exists. The error names `path`, the file the caller asked for.
pub fn create_temp_beside(path: &Path, mode: u32) -> io::Result<(PathBuf, File)> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file name"))?
        .to_string_lossy()
        .into_owned();
    // Keep the name within NAME_MAX (255) with its prefix and suffix.
    let short: String = name.chars().take(200).collect();
    let dir = parent_dir(path);
    let mut last = None;
    for _ in 0..8 {
        let tmp = dir.join(format!(".{short}.fsage-tmp-{}", random_hex()));
        match create_new(&tmp, mode) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::from(io::ErrorKind::AlreadyExists)))
}

/// Makes a new directory `PARENT/PREFIXRANDOM` of mode 0700 (mkdtemp(3)): exclusive, so a
/// planted name or link is never used.
pub fn create_private_dir(parent: &Path, prefix: &str) -> Result<PathBuf, Error> {
    let mut last = None;
    for _ in 0..8 {
        let d = parent.join(format!("{prefix}{}", random_hex()));
        match fs::DirBuilder::new().mode(0o700).create(&d) {
            Ok(()) => return Ok(d),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(Error::io(&d, "cannot make the directory", e)),
        }
    }
    Err(Error::operation(format!(
        "{}: no free name for a directory {prefix}...: {}",
        parent.display(),
        last.map_or_else(String::new, |e| e.to_string())
    )))
}

/// Whether a directory's owner is root or this process's user.
fn owned_by_us(m: &Metadata) -> bool {
    m.uid() == 0 || m.uid() == rustix::process::geteuid().as_raw()
}

/// Checks an existing directory fsage keeps its own files in (an image directory, a working or
/// lock directory, a mount point it made), by lstat(2): refused when it is a symbolic link, not a
/// directory, owned by another user, or writable by group or others, any of which would let
/// someone else put, replace or redirect what fsage reads, writes, mounts or unmounts there.
/// `what` names the directory's role in the message ("the image directory").
pub fn check_private_dir(dir: &Path, what: &str) -> Result<Metadata, Error> {
    let m = fs::symlink_metadata(dir).map_err(|e| Error::io(dir, what, e))?;
    refuse_unsafe_dir(dir, what, &m)?;
    Ok(m)
}

fn refuse_unsafe_dir(dir: &Path, what: &str, m: &Metadata) -> Result<(), Error> {
    let d = dir.display();
    if m.file_type().is_symlink() {
        return Err(Error::input(format!(
            "{d}: {what} is a symbolic link; fsage never follows a link there (it could lead \
             anywhere): remove it or give the directory itself"
        )));
    }
    if !m.is_dir() {
        return Err(Error::input(format!("{d}: {what} is not a directory")));
    }
    if !owned_by_us(m) {
        return Err(Error::input(format!(
            "{d}: {what} belongs to uid {}, not root: its owner could replace what fsage keeps \
             there; give a directory root owns (a new path is made, mode 0700)",
            m.uid()
        )));
    }
    if m.mode() & 0o022 != 0 {
        return Err(Error::input(format!(
            "{d}: {what} is writable by others (mode {:04o}): they could replace what fsage \
             keeps there; `chmod go-w` it or give a new path (made mode 0700)",
            m.mode() & 0o7777
        )));
    }
    Ok(())
}

/// Makes `dir` with mode 0700 (and the directories above it, as `mkdir -p` does) unless it
/// exists; an existing one must pass [`check_private_dir`]. Returns whether it was made.
pub fn ensure_private_dir(dir: &Path, what: &str) -> Result<bool, Error> {
    let mk = || fs::DirBuilder::new().mode(0o700).create(dir);
    match mk() {
        Ok(()) => return Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let parent = parent_dir(dir);
            fs::create_dir_all(parent).map_err(|e| Error::io(parent, "cannot make", e))?;
            match mk() {
                Ok(()) => return Ok(true),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(Error::io(dir, &format!("cannot make {what}"), e)),
            }
        }
        Err(e) => return Err(Error::io(dir, &format!("cannot make {what}"), e)),
    }
    check_private_dir(dir, what)?;
    Ok(false)
}

/// Checks every directory above `dir` (resolved after `dir` itself passed
/// [`check_private_dir`]): each must be root's or this user's and writable by nobody else, or
/// sticky (`/tmp`, `/dev/shm`), where nobody else may rename or remove what root made. Otherwise
/// the owner of a directory above could swap `dir` for one of their own while fsage runs.
pub fn check_ancestors(dir: &Path, what: &str) -> Result<(), Error> {
    let abs = std::path::absolute(dir).map_err(|e| Error::io(dir, what, e))?;
    let Some(parent) = abs.parent() else {
        return Ok(());
    };
    let real = parent
        .canonicalize()
        .map_err(|e| Error::io(parent, what, e))?;
    for a in real.ancestors() {
        let m = fs::metadata(a).map_err(|e| Error::io(a, what, e))?;
        let sticky = m.permissions().mode() & 0o1000 != 0;
        if !(owned_by_us(&m) && (m.mode() & 0o022 == 0 || sticky)) {
            return Err(Error::input(format!(
                "{}: {what} is inside {}, which {}: they could swap it for one of their own; \
                 give a directory under root's own (e.g. /dev/shm/NAME or /var/tmp/NAME)",
                dir.display(),
                a.display(),
                if owned_by_us(&m) {
                    format!(
                        "others may write to (mode {:04o}, not sticky)",
                        m.mode() & 0o7777
                    )
                } else {
                    format!("belongs to uid {}", m.uid())
                }
            )));
        }
    }
    Ok(())
}

/// A name fsage makes beside an image for itself (`IMAGE.mnt`, `IMAGE.clean`, `IMAGE.ftl`...),
/// looked at with lstat(2): `None` when absent, its metadata when present, and an error when it
/// is a symbolic link, which fsage never follows there (`what`: the name's role).
pub fn lstat_own_name(path: &Path, what: &str) -> Result<Option<Metadata>, Error> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, what, e)),
        Ok(m) if m.file_type().is_symlink() => Err(Error::input(format!(
            "{}: {what} is a symbolic link; fsage makes this name itself and never follows a \
             link there (it could lead to another user's files): remove it",
            path.display()
        ))),
        Ok(m) => Ok(Some(m)),
    }
}

/// A file fsage made for itself and is about to unmount, detach or remove (a clean instance's
/// image left by a killed run, say): `None` when absent; refused when it is a symbolic link, not
/// a regular file, another user's, or has another name (a hard link another user made to
/// someone's image would otherwise have that image's mounts undone).
pub fn check_own_file(path: &Path, what: &str) -> Result<Option<Metadata>, Error> {
    let Some(m) = lstat_own_name(path, what)? else {
        return Ok(None);
    };
    let p = path.display();
    if !m.is_file() {
        return Err(Error::input(format!("{p}: {what} is not a regular file")));
    }
    if !owned_by_us(&m) {
        return Err(Error::input(format!(
            "{p}: {what} belongs to uid {}, not root: fsage did not make it and leaves it alone;              remove it or give another name",
            m.uid()
        )));
    }
    if m.nlink() > 1 {
        return Err(Error::input(format!(
            "{p}: {what} has {} names (hard links): fsage did not make it so and leaves it              alone; remove it or give another name",
            m.nlink()
        )));
    }
    Ok(Some(m))
}

/// The mount point fsage makes beside an image (`IMAGE.mnt`): made with mode 0700 when absent;
/// an existing one (left by a killed run) is used only when it is an empty directory that
/// passes [`check_private_dir`]. Returns whether it was made.
pub fn make_mount_dir(path: &Path) -> Result<bool, Error> {
    const WHAT: &str = "the mount point fsage makes";
    match fs::DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => return Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(Error::io(path, &format!("cannot make {WHAT}"), e)),
    }
    check_private_dir(path, WHAT)?;
    if crate::is_mount_point(path) {
        return Err(Error::input(format!(
            "{}: something is mounted there already",
            path.display()
        )));
    }
    let mut rd = fs::read_dir(path).map_err(|e| Error::io(path, WHAT, e))?;
    if rd.next().is_some() {
        return Err(Error::input(format!(
            "{}: {WHAT} exists and is not empty; move it away",
            path.display()
        )));
    }
    Ok(false)
}

/// Opens a directory without following a symbolic link at its last component (`O_PATH|
/// O_DIRECTORY|O_NOFOLLOW`): what a mount goes onto through `/proc/self/fd/N`, so that the
/// directory checked is the one mounted on, whatever is renamed meanwhile.
pub fn open_dir_nofollow(dir: &Path) -> Result<rustix::fd::OwnedFd, Error> {
    rustix::fs::open(
        dir,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        rustix::io::Errno::LOOP => Error::input(format!(
            "{}: a symbolic link; fsage mounts only on a directory itself, never through a link",
            dir.display()
        )),
        rustix::io::Errno::NOTDIR => Error::input(format!(
            "{}: not a directory (a symbolic link or a file?)",
            dir.display()
        )),
        e => Error::io(dir, "", e.into()),
    })
}

/// The path a file descriptor names (`/proc/self/fd/N`'s link).
pub fn fd_path(fd: &impl rustix::fd::AsRawFd) -> io::Result<PathBuf> {
    fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_names_differ() {
        let a = random_hex();
        assert_eq!(a.len(), 16);
        assert_ne!(a, random_hex());
    }

    #[test]
    fn create_new_never_follows_or_reuses_a_name() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        fs::write(&victim, b"keep").unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        assert_eq!(
            create_new(&link, 0o600).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        assert!(create_new(&victim, 0o600).is_err());
        assert!(open_or_create_nofollow(&link, 0o600).is_err());
        assert_eq!(fs::read(&victim).unwrap(), b"keep");
        let f = create_new(&d.path().join("new"), 0o600).unwrap();
        assert_eq!(f.metadata().unwrap().mode() & 0o077, 0);
    }

    #[test]
    fn private_dirs_are_0700_and_unsafe_ones_refused() {
        let d = tempfile::tempdir().unwrap();
        let p = create_private_dir(d.path(), "x-").unwrap();
        assert_eq!(fs::metadata(&p).unwrap().mode() & 0o777, 0o700);
        check_private_dir(&p, "the test directory").unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        let e = check_private_dir(&link, "the test directory").unwrap_err();
        assert!(e.message.contains("symbolic link"), "{e}");
        assert!(ensure_private_dir(&link, "the test directory").is_err());
        fs::set_permissions(&p, fs::Permissions::from_mode(0o777)).unwrap();
        let e = check_private_dir(&p, "the test directory").unwrap_err();
        assert!(e.message.contains("writable by others"), "{e}");
        let deep = d.path().join("a/b/c");
        assert!(ensure_private_dir(&deep, "the test directory").unwrap());
        assert!(!ensure_private_dir(&deep, "the test directory").unwrap());
        assert!(check_ancestors(&deep, "the test directory").is_ok());
    }

    #[test]
    fn a_mount_dir_is_made_or_an_empty_own_one_reused_never_a_link() {
        let d = tempfile::tempdir().unwrap();
        let m = d.path().join("i.img.mnt");
        assert!(make_mount_dir(&m).unwrap());
        assert!(!make_mount_dir(&m).unwrap());
        fs::write(m.join("f"), b"").unwrap();
        assert!(make_mount_dir(&m).is_err());
        let l = d.path().join("j.img.mnt");
        std::os::unix::fs::symlink(d.path(), &l).unwrap();
        let e = make_mount_dir(&l).unwrap_err();
        assert!(e.message.contains("symbolic link"), "{e}");
        let e = open_dir_nofollow(&l).unwrap_err();
        assert!(e.message.contains("symbolic link"), "{e}");
        let fd = open_dir_nofollow(&m).unwrap();
        assert_eq!(fd_path(&fd).unwrap(), m.canonicalize().unwrap());
        assert!(lstat_own_name(&l, "x").is_err());
        assert!(lstat_own_name(&d.path().join("none"), "x")
            .unwrap()
            .is_none());
    }

    #[test]
    fn a_temp_file_beside_is_random_and_names_the_target_on_error() {
        let d = tempfile::tempdir().unwrap();
        let (a, _) = create_temp_beside(&d.path().join("x.img"), 0o644).unwrap();
        let (b, _) = create_temp_beside(&d.path().join("x.img"), 0o644).unwrap();
        assert_ne!(a, b);
        assert!(a
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(".x.img.fsage-tmp-"));
        let e = create_temp_beside(&d.path().join("nope/x.img"), 0o644).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }
}

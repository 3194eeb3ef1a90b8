//! The few system facts every fsage crate needs, in one place: what file system holds a path
//! (statfs and statvfs through rustix) and how to replace a file so that a reader or a crash sees
//! the old contents or the new, never half. It also answers what the lab, the slow device and Git
//! aging ask before touching a device ([`dev`]: loop devices' backing files, mounts of a device,
//! sizes), runs the external tools ([`tool`]) and guards temporary files ([`TempPath`]). The
//! file systems fsage makes are described once, in [`fskind`].

pub mod cpu;
pub mod dev;
pub mod error;
pub mod fskind;
pub mod ioctl;
pub mod lock;
pub mod mountinfo;
pub mod platform;
pub mod safe;
pub mod temp;
pub mod tool;

pub use dev::{
    block_name, btrfs_member_of, check_device_exclusive, check_device_unused, file_size,
    is_block_device, loops_backed_by, mount_table, mounts_of_device, open_device_exclusive,
    size_of,
};
pub use error::{Error, Remedy};
pub use fskind::FsKind;
pub use platform::PlatformKind;

/// Entries a file system makes in its own root when it is made (ext4's `lost+found`, nilfs2's
/// `.nilfs`): a fresh file system holding only these counts as empty.
pub fn is_fs_own_root_entry(name: &std::ffi::OsStr) -> bool {
    FsKind::ALL
        .iter()
        .any(|k| k.desc().root_entries.iter().any(|e| name == *e))
}
use safe::parent_dir;
pub use temp::TempPath;
pub use tool::{kernel_release, run_tool, run_with_cpu_time, Timed};

pub use mountinfo::{is_mount_point, mounts, MountEntry};
use rustix::fs::{statfs, statvfs, StatVfsMountFlags};
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

// The statfs magics of the kinds fsage makes are their descriptors' ([`fskind::TABLE`]).
pub const EXT4_SUPER_MAGIC: u64 = FsKind::EXT4.magic();
pub const XFS_SUPER_MAGIC: u64 = FsKind::XFS.magic();
pub const BTRFS_SUPER_MAGIC: u64 = FsKind::BTRFS.magic();
pub const TMPFS_MAGIC: u64 = 0x0102_1994;
pub const F2FS_SUPER_MAGIC: u64 = FsKind::F2FS.magic();
pub const NILFS_SUPER_MAGIC: u64 = FsKind::NILFS2.magic();

/// Name of a file system type from its statfs magic (`0x...` for one fsage does not know).
pub fn fs_type_name(magic: u64) -> String {
    match FsKind::by_magic(magic) {
        Some(k) => k.name().into(),
        None if magic == TMPFS_MAGIC => "tmpfs".into(),
        None => format!("0x{magic:x}"),
    }
}

/// What the kernel says about the file system holding a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsStat {
    /// statfs `f_type`.
    pub magic: u64,
    /// Fundamental block size (`f_frsize`, or `f_bsize` where that is 0).
    pub block_size: u64,
    /// Size in bytes (`f_blocks` blocks).
    pub size: u64,
    /// Free bytes, as root counts them.
    pub free: u64,
    /// Free bytes an unprivileged user may use.
    pub available: u64,
    pub blocks: u64,
    pub blocks_free: u64,
    pub blocks_avail: u64,
    /// Free inodes; `None` where the file system has no fixed inode count (btrfs reports 0 files).
    pub free_inodes: Option<u64>,
    pub read_only: bool,
}

impl FsStat {
    pub fn type_name(&self) -> String {
        fs_type_name(self.magic)
    }
}

/// statfs and statvfs of the file system holding `path`.
pub fn fs_stat(path: &Path) -> io::Result<FsStat> {
    Ok(fs_stat_of(&statfs(path)?, &statvfs(path)?))
}

/// statfs and statvfs of the file system holding the open file or directory `fd`.
pub fn fs_stat_fd(fd: impl std::os::fd::AsFd) -> io::Result<FsStat> {
    let fd = fd.as_fd();
    Ok(fs_stat_of(
        &rustix::fs::fstatfs(fd)?,
        &rustix::fs::fstatvfs(fd)?,
    ))
}

fn fs_stat_of(sf: &rustix::fs::StatFs, sv: &rustix::fs::StatVfs) -> FsStat {
    let block_size = if sv.f_frsize > 0 {
        sv.f_frsize
    } else {
        sv.f_bsize
    };
    FsStat {
        // f_type is signed on some targets; the magic is its bit pattern.
        magic: sf.f_type as u32 as u64,
        block_size,
        size: sv.f_blocks * block_size,
        free: sv.f_bfree * block_size,
        available: sv.f_bavail * block_size,
        blocks: sv.f_blocks,
        blocks_free: sv.f_bfree,
        blocks_avail: sv.f_bavail,
        free_inodes: (sv.f_files > 0).then_some(sv.f_favail),
        read_only: sv.f_flag.contains(StatVfsMountFlags::RDONLY),
    }
}

/// `_IO(0x94, 8)`: btrfs's ioctl that syncs the whole file system (flush the data, wait for it,
/// commit).
pub const BTRFS_IOC_SYNC: ioctl::IoctlOpcode = ioctl::opcode::none(0x94, 8);

/// Syncs the file system holding the open directory `dir` so that the same writes leave the
/// same layout in every run. On btrfs `syncfs` is not enough: it starts the data's writeback
/// and then writes the dirty tree blocks without waiting, so whether the ordered extents that
/// the writeback completes in worker threads are in the tree before those blocks are written
/// depends on timing, and a block written before it changed again is copied to a new place in
/// the same transaction. There the file system's own sync (`BTRFS_IOC_SYNC`: flush the data,
/// wait for it, commit) is used; elsewhere `syncfs`.
pub fn sync_settled(dir: impl std::os::fd::AsFd) -> io::Result<()> {
    let fd = dir.as_fd();
    if rustix::fs::fstatfs(fd)?.f_type as u32 as u64 == BTRFS_SUPER_MAGIC {
        // SAFETY: BTRFS_IOC_SYNC takes no argument; `fd` is a directory on a btrfs.
        unsafe { ioctl::call_returning::<BTRFS_IOC_SYNC>(fd) }?;
        return Ok(());
    }
    Ok(rustix::fs::syncfs(fd)?)
}

/// The device number of the file system holding `path` (`st_dev`), following symlinks: two paths
/// are on the same file system exactly when these are equal.
pub fn device_of(path: &Path) -> io::Result<u64> {
    Ok(rustix::fs::stat(path)?.st_dev)
}

/// Whether this process may write into the directory `dir` (access(2) with W_OK|X_OK).
pub fn may_write(dir: &Path) -> io::Result<()> {
    use rustix::fs::{access, Access};
    Ok(access(dir, Access::WRITE_OK | Access::EXEC_OK)?)
}

/// Finds a command on PATH or in the usual sbin directories.
pub fn find_cmd(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// A failed atomic write, naming the file.
#[derive(Debug, thiserror::Error)]
#[error("{}: cannot write: {err}", path.display())]
pub struct WriteError {
    pub path: PathBuf,
    /// The cause, shown in the message (not as a separate source, which would print it twice).
    pub err: io::Error,
}

impl Blamed for WriteError {
    /// A missing directory or a permission refused is the caller's to fix; anything else (a
    /// full disk, an I/O error) is a failed operation.
    fn blame(&self) -> Blame {
        io_blame(self.err.kind())
    }
}

/// Whether this process runs as root (effective uid 0): mounts, loop devices and tracing need it.
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Who is to act on a failed system call, by its kind: the one table of fsage. A path that does
/// not exist or is of the wrong kind (a directory where a file is wanted, or the reverse), a
/// permission refused, a name already taken, a read-only file system and an invalid argument are
/// the caller's to fix (bad input); anything else (EIO, a full disk, a broken pipe, a timeout, an
/// unknown errno) is a failed operation.
pub fn io_blame(kind: io::ErrorKind) -> Blame {
    use io::ErrorKind::*;
    match kind {
        NotFound | PermissionDenied | NotADirectory | IsADirectory | AlreadyExists
        | ReadOnlyFilesystem | InvalidInput | InvalidFilename => Blame::Input,
        _ => Blame::Operation,
    }
}

/// `path` as one word of a command line a message tells the user to run: as it is when every
/// character is safe in a POSIX shell, else single-quoted (`'/tmp/my run/x.state'`).
pub fn shell_arg(path: &Path) -> String {
    let s = path.display().to_string();
    let safe = |c: char| c.is_ascii_alphanumeric() || "/._+-:=,@%".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        s
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// `path` with `suffix` appended to its last component (`IMAGE` -> `IMAGE.mnt`): the naming of
/// every file fsage keeps beside an image.
pub fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Writes `contents` to `path` through a temporary sibling, fsync, rename and an fsync of the
/// directory: after it returns the new contents survive a crash; before, the old ones are intact.
/// The temporary file has a random name and is created exclusively, never through a planted
/// file or symbolic link ([`safe::create_temp_beside`]); a symbolic link at `path` itself is
/// replaced, not followed. The file is readable by all (mode 0666 less the umask), as
/// `File::create` makes it; [`write_atomic_private`] makes one only root reads.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), WriteError> {
    write_atomic_mode(path, contents, 0o666)
}

/// [`write_atomic`] of a file only its owner may read (mode 0600): a drive's state, whatever
/// may hold what another user should not see.
pub fn write_atomic_private(path: &Path, contents: &[u8]) -> Result<(), WriteError> {
    write_atomic_mode(path, contents, 0o600)
}

fn write_atomic_mode(path: &Path, contents: &[u8], mode: u32) -> Result<(), WriteError> {
    let err = |err| WriteError {
        path: path.to_path_buf(),
        err,
    };
    let (tmp, mut f) = safe::create_temp_beside(path, mode).map_err(err)?;
    let mut write = || -> io::Result<()> {
        f.write_all(contents)?;
        f.sync_all()?;
        fs::rename(&tmp, path)?;
        fs::File::open(parent_dir(path))?.sync_all()
    };
    write().map_err(|e| {
        let _ = fs::remove_file(&tmp);
        err(e)
    })
}

/// Checks that `path` can be written later, before a long run starts: its directory exists and
/// is writable, and `path` is not a directory. Nothing is created.
pub fn check_writable_file(path: &Path) -> Result<(), WriteError> {
    let err = |err| WriteError {
        path: path.to_path_buf(),
        err,
    };
    if path.is_dir() {
        return Err(err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "is a directory",
        )));
    }
    let dir = parent_dir(path);
    match fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{} is not a directory", dir.display()),
            )))
        }
        Err(e) => {
            return Err(err(io::Error::new(
                e.kind(),
                format!("its directory {}: {e}", dir.display()),
            )))
        }
    }
    may_write(dir).map_err(|e| {
        err(io::Error::new(
            e.kind(),
            format!("its directory {}: {e}", dir.display()),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn btrfs_sync_is_its_own_ioctl_and_elsewhere_syncfs() {
        // linux/btrfs.h: #define BTRFS_IOC_SYNC _IO(BTRFS_IOCTL_MAGIC, 8), magic 0x94.
        assert_eq!(BTRFS_IOC_SYNC, 0x9408);
        // Not btrfs (the temporary directory): syncfs, which works on any file system.
        let d = std::fs::File::open(std::env::temp_dir()).unwrap();
        sync_settled(&d).unwrap();
    }

    #[test]
    fn shell_args_are_quoted_only_when_needed() {
        assert_eq!(
            shell_arg(Path::new("/dev/shm/a.img.fsage-state")),
            "/dev/shm/a.img.fsage-state"
        );
        assert_eq!(shell_arg(Path::new("/tmp/my run/x")), "'/tmp/my run/x'");
        assert_eq!(shell_arg(Path::new("it's")), r"'it'\''s'");
        assert_eq!(shell_arg(Path::new("a$b")), "'a$b'");
        assert_eq!(shell_arg(Path::new("")), "''");
    }

    #[test]
    fn utc_times() {
        assert_eq!(utc_time(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc_time(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc_time(1_795_457_449), "2026-11-23 18:10:49 UTC");
    }

    #[test]
    fn stat_of_a_temp_dir() {
        let d = tempfile::tempdir().unwrap();
        let s = fs_stat(d.path()).unwrap();
        assert!(s.block_size >= 512 && s.block_size.is_power_of_two());
        assert!(s.size >= s.free && s.free >= s.available);
        assert_eq!(
            device_of(d.path()).unwrap(),
            device_of(Path::new(d.path())).unwrap()
        );
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn atomic_write_replaces_a_link_without_following_it_and_private_is_0600() {
        use std::os::unix::fs::MetadataExt;
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        fs::write(&victim, b"keep").unwrap();
        let p = d.path().join("r.json");
        std::os::unix::fs::symlink(&victim, &p).unwrap();
        write_atomic_private(&p, b"new").unwrap();
        assert_eq!(fs::read(&victim).unwrap(), b"keep");
        let m = fs::symlink_metadata(&p).unwrap();
        assert!(m.is_file());
        assert_eq!(m.mode() & 0o777, 0o600);
        assert_eq!(fs::read(&p).unwrap(), b"new");
    }

    #[test]
    fn atomic_write_into_a_missing_directory_names_the_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("nope/r.json");
        let e = write_atomic(&p, b"x").unwrap_err();
        assert!(e.to_string().contains("nope/r.json"), "{e}");
        assert!(!e.to_string().contains("fsage-tmp"), "{e}");
        let e = check_writable_file(&p).unwrap_err().to_string();
        assert!(
            e.contains("nope/r.json") && e.contains("its directory"),
            "{e}"
        );
        check_writable_file(&d.path().join("ok.json")).unwrap();
        assert!(check_writable_file(d.path()).is_err());
    }
}

/// Seconds since the epoch as `2026-11-23 17:54:09 UTC` (proleptic Gregorian calendar).
pub fn utc_time(unix: u64) -> String {
    let (days, secs) = ((unix / 86400) as i64, unix % 86400);
    // Days to a civil date (Howard Hinnant's algorithm, era of 400 years).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// Who has to act on an error: it decides the exit code (README: 1 an operation failed, 2 bad
/// input, 130 interrupted). Every library error type says which of these it is by implementing
/// [`Blamed`], so that the command line maps errors to exit codes in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blame {
    /// The input was wrong (a flag, a file, a path, a profile): the user can fix it and run again.
    Input,
    /// An operation failed (a mount, a write, a checksum, a tool): exit 1.
    Operation,
    /// A signal stopped the command before it finished.
    Interrupted,
}

/// An error that says who has to act on it. Every library error that can reach the command line
/// implements it: the command line accepts no other, so an error type without a blame does not
/// compile there instead of exiting 1 by omission.
pub trait Blamed {
    fn blame(&self) -> Blame;
    /// The setting that gets past the error, when one does (the command line names its flag).
    fn remedy(&self) -> Option<Remedy> {
        None
    }
}

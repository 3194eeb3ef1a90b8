//! Locks that keep two fsage commands off one image, one device or one run: two `fsage age` on
//! one image path would both make it (the second renaming its image over the first's, which then
//! ages a file system nobody can see), two `fs mount` would mount it read-write twice, two `dev
//! create` would serve one image through two slow devices.
//!
//! **Where and how.** A lock is a `flock(2)` on a file in [`lock_dir`] (`/run/fsage-locks`), a
//! directory of root's alone (mode 0700, refused if another user owns it or may write it), named
//! after a hash of what it locks: `target-HASH.lock` for an image or device, `HASH.lock` for a run
//! (its state file). Not a file beside the image, and not a `flock` of the image itself, because:
//! - the image is often in a world-writable directory (`/dev/shm`, `/tmp`): a lock file there is a
//!   name another user can plant (a link, a file of theirs that they then hold for ever);
//! - the image does not exist yet when `fs create` or `age --fs` must lock it, and is made under a
//!   temporary name and renamed into place: a lock on an inode is not a lock on the path, and a
//!   lock on the directory's descriptor would serialise every image in `/dev/shm`;
//! - `flock` belongs to the open file: the kernel drops it when the holder exits, however it
//!   exits (a crash, SIGKILL), so no lock outlives its command, and `--resume` after a crash
//!   finds the lock free. The file itself stays; the next command to take a lock removes the
//!   files nobody holds ([`sweep_stale`]).
//!
//! The holder writes its pid and command line into the file, so that a refusal names it. A
//! thread may take an image's lock several times (the `age` run holds its image's lock while the
//! library functions it calls take it again): the holds share one open file, since a second
//! `flock` of the same file from another open file would conflict with the first even within one
//! process. Another thread of the same process is refused, as another process is (an experiment
//! runs cells on threads).

use crate::Error;
use rustix::fs::{flock, FlockOperation};
use std::fs::{self, File};
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

/// Where locks live: $FSAGE_LOCK_DIR, /run/fsage-locks, or the temporary directory's.
pub fn lock_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("FSAGE_LOCK_DIR") {
        return d.into();
    }
    [Path::new("/run"), &std::env::temp_dir()]
        .into_iter()
        .find(|d| d.is_dir())
        .unwrap_or(Path::new("/tmp"))
        .join("fsage-locks")
}

/// A held lock: released (its file unlinked, then closed) when the last clone is dropped.
#[derive(Debug, Clone)]
pub struct Lock(#[allow(dead_code)] Arc<Held>);

#[derive(Debug)]
struct Held {
    path: PathBuf,
    file: File,
    shared: bool,
    /// A child process holds the lock too ([`Lock::hand_on`]): the file stays when this
    /// process lets go (the next sweep removes it once the child has exited).
    handed: std::sync::atomic::AtomicBool,
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.handed.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        // Unlinked while still held exclusively: a command waiting on the old file finds, once
        // it has it, that the name names another file (or none) and starts over (see `take`).
        // A shared hold unlinks only when it is the last (its lock converts to an exclusive one);
        // otherwise the last reader does, or the next sweep.
        if self.shared && flock(&self.file, FlockOperation::NonBlockingLockExclusive).is_err() {
            return;
        }
        let _ = fs::remove_file(&self.path);
    }
}

/// The locks this process holds, by lock file and the thread that took them: a second hold by
/// that thread shares the first's open file.
type HeldBy = (PathBuf, std::thread::ThreadId, bool, Weak<Held>);
static HELD: Mutex<Vec<HeldBy>> = Mutex::new(Vec::new());

/// Why a lock was not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockError {
    /// Another process holds it: its pid and command line, as it wrote them (or what could be
    /// read of them), and the lock file.
    Held { holder: String, lock: PathBuf },
    /// The lock directory or file could not be used (not root's, a link, an I/O error).
    Unusable(Error),
}

/// What a lock is taken on: an image (file) path or a block device, reduced to one name whatever
/// path names it (a link to the image, `/dev/block/7:3` for `/dev/loop3`). A path that does not
/// exist yet is named by its directory's resolved path and its file name.
pub fn target_key(target: &Path) -> String {
    use std::os::unix::fs::FileTypeExt;
    if let Ok(m) = fs::metadata(target) {
        if m.file_type().is_block_device() {
            let (ma, mi) = crate::mountinfo::dev_parts(m.rdev());
            return format!("block device {ma}:{mi}");
        }
    }
    if let Ok(p) = target.canonicalize() {
        return format!("file {}", p.display());
    }
    let abs = std::path::absolute(target).unwrap_or_else(|_| target.to_path_buf());
    match (
        abs.parent().and_then(|p| p.canonicalize().ok()),
        abs.file_name(),
    ) {
        (Some(dir), Some(name)) => format!("file {}", dir.join(name).display()),
        _ => format!("file {}", abs.display()),
    }
}

/// FNV-1a: a stable file name from a key, no dependency needed.
fn hash(key: &str) -> u64 {
    key.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The lock file of `key` in `dir`: `PREFIXHASH.lock`.
fn lock_path(dir: &Path, prefix: &str, key: &str) -> PathBuf {
    dir.join(format!("{prefix}{:016x}.lock", hash(key)))
}

/// Takes the lock of the image or block device `target` (see [`target_key`]), or refuses with
/// the holder. Held until the returned [`Lock`] (and every clone) is dropped.
pub fn lock_target(target: &Path) -> Result<Lock, LockError> {
    take(&lock_dir(), "target-", &target_key(target), true, false)
}

/// [`lock_target`] shared, for a command that only reads the image (a copy's source, `image
/// save`): readers hold it together, and keep off anyone who would write it (and are kept off by
/// one), so that Slurm tasks on one node can copy one base at once.
pub fn lock_target_shared_or_refuse(target: &Path, what: &str) -> Result<Lock, Error> {
    take(&lock_dir(), "target-", &target_key(target), true, true)
        .map_err(|e| refusal(e, target, what))
}

/// [`lock_target`] as an [`Error`]: a command holding it is named (bad input, exit code 2: wait
/// for it or stop it, then run again).
pub fn lock_target_or_refuse(target: &Path, what: &str) -> Result<Lock, Error> {
    lock_target(target).map_err(|e| refusal(e, target, what))
}

/// The refusal for a lock `e` of `target` (`what` it is: "the image", "the device").
pub fn refusal(e: LockError, target: &Path, what: &str) -> Error {
    match e {
        LockError::Held { holder, lock } => Error::input(format!(
            "{}: {what} is in use by another fsage ({holder}; it holds the lock {}); wait for \
             it to finish or stop it, then run again",
            target.display(),
            lock.display()
        )),
        LockError::Unusable(e) => e,
    }
}

/// Takes the lock named `PREFIX + hash(key)` in `dir` (made root's alone if missing). With
/// `reentrant`, a lock this thread holds already is shared; without, it is refused as any other
/// holder's (a run's lock: a second session in one process is a second session).
pub fn take(
    dir: &Path,
    prefix: &str,
    key: &str,
    reentrant: bool,
    shared: bool,
) -> Result<Lock, LockError> {
    // Root's alone (made 0700, or refused if someone else could write there): another user's
    // lock file, or link, would hold or redirect fsage's locks.
    crate::safe::ensure_private_dir(dir, "the lock directory").map_err(|e| {
        LockError::Unusable(Error {
            message: format!("{} (set FSAGE_LOCK_DIR to use another)", e.message),
            ..e
        })
    })?;
    let path = lock_path(dir, prefix, key);
    let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
    held.retain(|(_, _, _, w)| w.strong_count() > 0);
    let me = std::thread::current().id();
    // An exclusive hold serves a shared request too; a shared one does not serve an exclusive.
    if let Some(h) = held
        .iter()
        .find(|(p, t, sh, _)| reentrant && *p == path && *t == me && (shared || !*sh))
        .and_then(|(_, _, _, w)| w.upgrade())
    {
        return Ok(Lock(h));
    }
    // Lock files of commands that were killed (SIGKILL, a crash) are left behind: clear them.
    sweep_stale(dir, &path);
    let mut tries = 0;
    loop {
        // Never through a link, and only a regular file (checked on the open descriptor).
        let f = crate::safe::open_or_create_nofollow(&path, 0o600)
            .map_err(|e| LockError::Unusable(Error::io(&path, "cannot open the lock", e)))?;
        let op = if shared {
            FlockOperation::NonBlockingLockShared
        } else {
            FlockOperation::NonBlockingLockExclusive
        };
        if flock(&f, op).is_err() {
            // Another command's sweep holds a stale file for a moment before removing it: look
            // again a few times before calling it held.
            tries += 1;
            if tries < 5 {
                std::thread::sleep(std::time::Duration::from_millis(10));
                continue;
            }
            return Err(LockError::Held {
                holder: holder_of(&path),
                lock: path,
            });
        }
        if same_file(&f, &path) {
            let mut f = f;
            // Who holds it, for a refusal to name: `pid N: ARGS`.
            let _ = f.set_len(0).and_then(|_| {
                f.write_all(format!("pid {}: {}\n", std::process::id(), command_line()).as_bytes())
            });
            let h = Arc::new(Held {
                path,
                file: f,
                shared,
                handed: Default::default(),
            });
            held.push((h.path.clone(), me, shared, Arc::downgrade(&h)));
            return Ok(Lock(h));
        }
        // The holder before us removed the file between our open and our flock: start over.
    }
}

impl Lock {
    /// The lock's open file, for a child process that is to hold the lock for as long as it
    /// runs (the daemon of a slow device serving an image): a `flock` belongs to the open file,
    /// so a child holding a copy of it holds the lock after every hold here is dropped, and the
    /// kernel releases it when the child exits, however it exits. Dropping the holds here then
    /// leaves the file (the child's [`adopt_target`] names itself in it). The copy is
    /// close-on-exec: the caller passes it on explicitly.
    pub fn hand_on(&self) -> std::io::Result<std::os::fd::OwnedFd> {
        let fd = rustix::io::fcntl_dupfd_cloexec(&self.0.file, 3)?;
        self.0
            .handed
            .store(true, std::sync::atomic::Ordering::SeqCst);
        Ok(fd)
    }
}

/// Takes the lock of `target` (see [`lock_target`]) through `fd`, a copy of its open lock file
/// that the parent handed on ([`Lock::hand_on`]), or refuses: `fd` must be the file the lock of
/// `target` is kept in, and the lock must be free or held through that same file. The holder's
/// line in the file then names this process.
pub fn adopt_target(target: &Path, fd: std::os::fd::OwnedFd, what: &str) -> Result<Lock, Error> {
    let dir = lock_dir();
    let path = lock_path(&dir, "target-", &target_key(target));
    let f = File::from(fd);
    if !same_file(&f, &path) {
        return Err(Error::input(format!(
            "{}: the lock handed on is not {what}'s lock {}",
            target.display(),
            path.display()
        )));
    }
    // The same open file holds it already (the parent's flock): this succeeds at once. If the
    // parent let go meanwhile, it takes it, unless another command did.
    if flock(&f, FlockOperation::NonBlockingLockExclusive).is_err() {
        return Err(refusal(
            LockError::Held {
                holder: holder_of(&path),
                lock: path,
            },
            target,
            what,
        ));
    }
    // At offset 0: the open file's offset is where the parent's line ended.
    let line = format!("pid {}: {}\n", std::process::id(), command_line());
    let _ = f.set_len(0).and_then(|_| {
        use std::os::unix::fs::FileExt;
        f.write_all_at(line.as_bytes(), 0)
    });
    let h = Arc::new(Held {
        path,
        file: f,
        shared: false,
        handed: Default::default(),
    });
    let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
    held.push((
        h.path.clone(),
        std::thread::current().id(),
        false,
        Arc::downgrade(&h),
    ));
    Ok(Lock(h))
}

/// This process's command line, its arguments quoted where they need it.
fn command_line() -> String {
    std::env::args_os()
        .map(|a| {
            let s = a.to_string_lossy().into_owned();
            if !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@%+".contains(&b))
            {
                s
            } else {
                format!("'{}'", s.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The holder's `pid N: ARGS`, as it wrote it into the lock file. It writes it just after taking
/// the lock: an empty file is read again for a moment.
fn holder_of(path: &Path) -> String {
    for _ in 0..50 {
        let mut s = String::new();
        // The directory is root's alone: nothing else put this file there. Read at most 4 KiB.
        if let Ok(f) = crate::safe::open_read_nofollow(path) {
            let _ = f.take(4096).read_to_string(&mut s);
        }
        let s = s.trim();
        if !s.is_empty() {
            return s.to_string();
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    "a process that has not said who it is".to_string()
}

/// Whether the open file `f` is still the file `path` names (a holder unlinks its lock file
/// before releasing it).
fn same_file(f: &File, path: &Path) -> bool {
    match (f.metadata(), fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
        _ => false,
    }
}

/// Removes the lock files in `dir` that nobody holds (their command was killed), except `keep`;
/// returns how many. Each is removed the way a holder removes its own: locked first, checked to
/// be still the file its name names, unlinked while held. A command that opened it meanwhile
/// finds, once it has the lock, that the name is gone and starts over with a new file, so a sweep
/// never takes a lock from anyone. Only names of the form `[target-]<16 hex digits>.lock` are
/// touched.
pub fn sweep_stale(dir: &Path, keep: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let path = e.path();
        let name = e.file_name();
        let name = name.to_string_lossy();
        let ours = name
            .strip_suffix(".lock")
            .map(|h| h.strip_prefix("target-").unwrap_or(h))
            .is_some_and(|h| h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit()));
        if !ours || path == keep {
            continue;
        }
        // Opened for reading, never through a link: never created, never truncated.
        let Ok(f) = crate::safe::open_read_nofollow(&path) else {
            continue;
        };
        if flock(&f, FlockOperation::NonBlockingLockExclusive).is_err() {
            continue; // held: a live command
        }
        if same_file(&f, &path) && fs::remove_file(&path).is_ok() {
            removed += 1;
        }
        drop(f); // unlocks
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_locks_are_swept_held_ones_kept() {
        let d = tempfile::tempdir().unwrap();
        let stale = d.path().join("0123456789abcdef.lock");
        let stale_target = d.path().join("target-0123456789abcdef.lock");
        let held = d.path().join("fedcba9876543210.lock");
        let keep = d.path().join("00000000000000aa.lock");
        let other = d.path().join("notes.lock");
        for p in [&stale, &stale_target, &held, &keep, &other] {
            fs::write(p, b"").unwrap();
        }
        // A live command holds `held` (flock is per open file: this conflicts within a process).
        let h = File::open(&held).unwrap();
        flock(&h, FlockOperation::NonBlockingLockExclusive).unwrap();
        assert_eq!(sweep_stale(d.path(), &keep), 2);
        assert!(!stale.exists() && !stale_target.exists(), "unheld: removed");
        assert!(held.exists(), "a held lock stays");
        assert!(keep.exists(), "the caller's own lock stays");
        assert!(other.exists(), "a name fsage does not make stays");
        drop(h);
        assert_eq!(sweep_stale(d.path(), &keep), 1, "released: now stale");
        assert!(!held.exists());
    }

    #[test]
    fn a_command_that_opened_a_swept_lock_starts_over_with_a_new_file() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("0123456789abcdef.lock");
        fs::write(&path, b"").unwrap();
        // A new command opened the stale file just before the sweep removed it...
        let early = fs::OpenOptions::new().write(true).open(&path).unwrap();
        assert_eq!(sweep_stale(d.path(), Path::new("/none")), 1);
        // ...takes the lock of the unlinked file, sees the name no longer names it, and so
        // does not count it as the lock (it opens the name again, making a new file).
        flock(&early, FlockOperation::NonBlockingLockExclusive).unwrap();
        assert!(!same_file(&early, &path));
    }

    #[test]
    fn a_process_takes_its_own_lock_again_another_is_refused_with_the_holder() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("locks");
        let a = take(&dir, "target-", "file /x/img", true, false).unwrap();
        let again = take(&dir, "target-", "file /x/img", true, false).unwrap();
        // Not shared with another thread, nor without `reentrant`.
        let t = dir.clone();
        let elsewhere =
            std::thread::spawn(move || take(&t, "target-", "file /x/img", true, false).is_err());
        assert!(elsewhere.join().unwrap(), "another thread is refused");
        assert!(take(&dir, "target-", "file /x/img", false, false).is_err());
        let path = lock_path(&dir, "target-", "file /x/img");
        let text = fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with(&format!("pid {}: ", std::process::id())),
            "{text}"
        );
        // Another holder (another open file, as another process has) is refused, named.
        drop((a, again));
        assert!(!path.exists(), "the last hold removes its file");
        let other = crate::safe::open_or_create_nofollow(&path, 0o600).unwrap();
        flock(&other, FlockOperation::NonBlockingLockExclusive).unwrap();
        fs::write(&path, "pid 1: fsage age IMG\n").unwrap();
        match take(&dir, "target-", "file /x/img", true, false) {
            Err(LockError::Held { holder, lock }) => {
                assert_eq!(holder, "pid 1: fsage age IMG");
                assert_eq!(lock, path);
            }
            other => panic!("{other:?}"),
        }
        // Released (the holder exited): taken.
        drop(other);
        assert!(take(&dir, "target-", "file /x/img", true, false).is_ok());
    }

    #[test]
    fn readers_share_a_lock_a_writer_is_kept_off_and_the_last_reader_removes_it() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("locks");
        let path = lock_path(&dir, "target-", "k");
        // Two readers (two threads stand for two processes: neither is re-entrant for the other).
        let a = take(&dir, "target-", "k", true, true).unwrap();
        let t = dir.clone();
        let (b, writer_refused) = std::thread::spawn(move || {
            let b = take(&t, "target-", "k", true, true).unwrap();
            (b, take(&t, "target-", "k", true, false).is_err())
        })
        .join()
        .unwrap();
        assert!(writer_refused, "a writer is refused while readers hold it");
        drop(a);
        assert!(path.exists(), "another reader still holds it");
        assert!(take(&dir, "target-", "k", false, false).is_err());
        drop(b);
        assert!(!path.exists(), "the last reader removes it");
        assert!(take(&dir, "target-", "k", false, false).is_ok());
    }

    #[test]
    fn a_link_in_the_lock_directory_is_never_followed() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("locks");
        crate::safe::ensure_private_dir(&dir, "x").unwrap();
        let victim = d.path().join("victim");
        fs::write(&victim, "keep").unwrap();
        std::os::unix::fs::symlink(&victim, lock_path(&dir, "target-", "k")).unwrap();
        assert!(matches!(
            take(&dir, "target-", "k", true, false),
            Err(LockError::Unusable(_))
        ));
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
    }

    #[test]
    fn one_key_for_every_path_of_an_image() {
        let d = tempfile::tempdir().unwrap();
        let img = d.path().join("a.img");
        let missing = target_key(&img);
        fs::write(&img, b"").unwrap();
        assert_eq!(target_key(&img), missing, "made since: the same lock");
        let link = d.path().join("link.img");
        std::os::unix::fs::symlink(&img, &link).unwrap();
        assert_eq!(target_key(&link), missing);
        assert_eq!(
            target_key(&d.path().join(".").join("a.img")),
            missing,
            "another spelling"
        );
        assert_ne!(target_key(&d.path().join("b.img")), missing);
    }
}

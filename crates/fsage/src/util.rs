//! Small helpers shared by the subcommands.

#[allow(unused_imports)]
use crate::exit::{bad_input, CmdResult};
use std::fs;
use std::path::Path;
use std::time::Duration;

/// "90s", "30m", "2h", "1d", "1.5h" or a bare number of seconds.
pub fn parse_duration(flag: &str, text: &str) -> anyhow::Result<Duration> {
    let t = text.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 's')) => (&t[..i], 1.0),
        Some((i, 'm')) => (&t[..i], 60.0),
        Some((i, 'h')) => (&t[..i], 3600.0),
        Some((i, 'd')) => (&t[..i], 86400.0),
        _ => (t, 1.0),
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v * mult < 1e12 => Ok(Duration::from_secs_f64(v * mult)),
        _ => Err(bad_input(format!(
            "{flag} {text:?}: expected a positive duration such as 90s, 30m, 2h or a number of seconds"
        ))),
    }
}

/// Writes `contents` to `path` through a temporary file and a rename, so a reader never sees half.
pub fn write_atomic(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    Ok(fsage_sys::write_atomic(path, contents)?)
}

/// statvfs of the file system holding `path`.
fn statvfs(path: &Path) -> anyhow::Result<libc::statvfs> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| bad_input(format!("{}: path has a NUL byte", path.display())))?;
    // SAFETY: valid C string and out-pointer.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(bad_input(format!(
            "{}: statvfs: {}",
            path.display(),
            std::io::Error::last_os_error()
        )));
    }
    Ok(st)
}

/// Size and block size of the file system holding `path` (statvfs).
pub fn fs_size(path: &Path) -> anyhow::Result<(u64, u64)> {
    let st = statvfs(path)?;
    let frsize = if st.f_frsize > 0 {
        st.f_frsize
    } else {
        st.f_bsize
    };
    Ok((st.f_blocks * frsize, frsize))
}

/// Refuses a target on a read-only file system or one we may not write to, before anything runs.
pub fn check_writable(target: &Path) -> anyhow::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(target.as_os_str().as_bytes())
        .map_err(|_| bad_input(format!("{}: path has a NUL byte", target.display())))?;
    // SAFETY: valid C string.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
        return Err(bad_input(format!(
            "{}: cannot write there: {}",
            target.display(),
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}

/// A run's lock: held while this lives; the lock file is removed when it is dropped, so lock files
/// do not pile up in /run/fsage-locks.
pub struct RunLock {
    path: std::path::PathBuf,
    _file: fs::File,
}

impl Drop for RunLock {
    fn drop(&mut self) {
        // Unlinked while still held: a session waiting on the old file finds, after taking it,
        // that the path names another file (or none) and starts over (see `lock_state`).
        let _ = fs::remove_file(&self.path);
    }
}

/// Takes the run's lock for as long as the returned guard lives: two sessions of one run at once
/// would undo each other's files. The lock file lives under /run/fsage-locks (or the temporary
/// directory), named after the state file's absolute path, so nothing is added beside the target,
/// which may be on the very file system being aged.
pub fn lock_state(state: &Path) -> anyhow::Result<RunLock> {
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    let abs = std::path::absolute(state).unwrap_or_else(|_| state.to_path_buf());
    let abs = match (
        abs.parent().and_then(|p| p.canonicalize().ok()),
        abs.file_name(),
    ) {
        (Some(dir), Some(name)) => dir.join(name),
        _ => abs,
    };
    // FNV-1a of the path: a stable, short file name.
    let hash = abs
        .as_os_str()
        .as_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
        });
    let base = lock_dir();
    fs::create_dir_all(&base).map_err(|e| anyhow::anyhow!("{}: {e}", base.display()))?;
    let path = base.join(format!("{hash:016x}.lock"));
    loop {
        let f = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| anyhow::anyhow!("{}: cannot open the run's lock: {e}", path.display()))?;
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(bad_input(format!(
                "{}: another fsage is running this run now (it holds the lock {}); wait for it or \
                 stop it",
                state.display(),
                path.display()
            )));
        }
        // The holder before us may have removed the file between our open and our flock.
        let same = match (f.metadata(), fs::metadata(&path)) {
            (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
            _ => false,
        };
        if same {
            return Ok(RunLock { path, _file: f });
        }
    }
}

/// Where run locks live: $FSAGE_LOCK_DIR, /run/fsage-locks, or the temporary directory's.
pub fn lock_dir() -> std::path::PathBuf {
    if let Some(d) = std::env::var_os("FSAGE_LOCK_DIR") {
        return d.into();
    }
    [Path::new("/run"), &std::env::temp_dir()]
        .into_iter()
        .find(|d| d.is_dir())
        .unwrap_or(Path::new("/tmp"))
        .join("fsage-locks")
}

/// Free inodes of the file system holding `path`, where it has a fixed number of them.
pub fn free_inodes(path: &Path) -> Option<u64> {
    let st = statvfs(path).ok()?;
    (st.f_files > 0).then_some(st.f_favail)
}

/// Makes sure `target` is an empty directory we may age (creating it if missing), unless `force`.
pub fn prepare_target(target: &Path, force: bool) -> anyhow::Result<()> {
    match fs::symlink_metadata(target) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => fs::create_dir(target).map_err(|e| {
            bad_input(format!(
                "{}: cannot create the target directory: {e}",
                target.display()
            ))
        }),
        Err(e) => Err(bad_input(format!("{}: {e}", target.display()))),
        Ok(m) if m.file_type().is_symlink() => {
            let real = fs::metadata(target)
                .map_err(|e| bad_input(format!("{}: {e}", target.display())))?;
            if !real.is_dir() {
                return Err(bad_input(format!("{}: not a directory", target.display())));
            }
            check_empty(target, force)
        }
        Ok(m) if !m.is_dir() => Err(bad_input(format!("{}: not a directory", target.display()))),
        Ok(_) => check_empty(target, force),
    }
}

fn check_empty(target: &Path, force: bool) -> anyhow::Result<()> {
    let entries = fs::read_dir(target)
        .map_err(|e| bad_input(format!("{}: {e}", target.display())))?
        .filter_map(Result::ok)
        .filter(|e| e.file_name() != "lost+found")
        .count();
    if entries > 0 && !force {
        return Err(bad_input(format!(
            "{}: the target is not empty ({entries} entr{}); fsage writes only into an empty \
             directory so that nothing of yours is touched. Use an empty directory, or --force",
            target.display(),
            if entries == 1 { "y" } else { "ies" }
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(
            parse_duration("--max-time", "90s").unwrap(),
            Duration::from_secs(90)
        );
        assert_eq!(
            parse_duration("--max-time", "2h").unwrap(),
            Duration::from_secs(7200)
        );
        assert_eq!(
            parse_duration("--max-time", "1.5").unwrap(),
            Duration::from_millis(1500)
        );
        let e = parse_duration("--max-time", "soon").unwrap_err();
        assert!(e.to_string().contains("--max-time"), "{e}");
        assert!(parse_duration("--max-time", "-3s").is_err());
    }
}

//! fsage re-running itself in a guest: `age --fs f2fs` on a host whose kernel has no f2fs runs
//! the same command line in a VM whose kernel has it. The command line is passed unchanged and
//! the directories of the files it names are shared read-write at their own paths, so it means
//! the same there: an image made by the guest is a file on the host, loop-mounted in the guest,
//! and the state and reports land beside it as they would natively.

use crate::accel::AccelRequest;
use crate::run::{run, Disk, RunOptions, RunOutcome, DEFAULT_CPUS, DEFAULT_MEM_MIB};
use crate::{Error, Result};
use std::path::{Path, PathBuf};

/// Set in the guest: a command there never dispatches again.
pub fn in_guest() -> bool {
    std::env::var_os("FSAGE_IN_VM").is_some_and(|v| v == "1")
}

/// Why a command that needs a file system should run in a guest, or `None` to run it here.
///
/// `kernel` is the host kernel's answer for that file system (`Err` says what it lacks); `asked`
/// is `--vm`, `refused` is `--no-vm`. A command already in a guest never goes further, and
/// `--no-vm` runs here even when the kernel lacks the file system (the command then fails with
/// the kernel's own reason, which names the remedy).
pub fn reason_to_dispatch(kernel: Result<()>, asked: bool, refused: bool) -> Option<String> {
    if in_guest() || refused {
        return None;
    }
    match kernel {
        Err(e) => Some(e.message),
        Ok(()) if asked => Some("asked for (--vm)".to_string()),
        Ok(()) => None,
    }
}

/// What a self-run needs to know.
#[derive(Debug, Clone, Default)]
pub struct SelfRun {
    /// A cached kernel release; default the newest cached.
    pub kernel: Option<String>,
    /// File systems whose modules the guest loads.
    pub file_systems: Vec<String>,
    /// Block devices the command names (virtio disks at their paths).
    pub disks: Vec<PathBuf>,
    /// Files and directories the command reads or writes: their directories are shared.
    pub paths: Vec<PathBuf>,
    /// fsage's arguments (after the program name), as given.
    pub args: Vec<String>,
}

/// The directories to share for `paths`: each existing directory, or the directory holding a
/// file (made or not). `/` itself is never shared (the host's root stays read-only).
pub fn shares_for(paths: &[PathBuf], cwd: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for p in paths {
        let abs = cwd.join(p);
        let dir = if abs.is_dir() {
            abs
        } else {
            match abs.parent() {
                Some(d) => d.to_path_buf(),
                None => continue,
            }
        };
        if dir.parent().is_none() || !dir.is_dir() {
            continue;
        }
        if !out.iter().any(|s| dir.starts_with(s)) {
            out.retain(|s| !s.starts_with(&dir));
            out.push(dir);
        }
    }
    out
}

/// Runs this fsage binary with `r.args` in a guest; its output is copied through. Returns how it
/// ended (the caller exits with its code).
pub fn run_self(r: &SelfRun) -> Result<RunOutcome> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::operation(format!("cannot find fsage's own binary: {e}")))?;
    check_visible(&exe)?;
    let kernel = crate::cache::resolve_kernel(r.kernel.as_deref(), None)?;
    let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
    let mut command = vec![exe.to_string_lossy().into_owned()];
    command.extend(r.args.iter().cloned());
    run(&RunOptions {
        kernel,
        mem_mib: DEFAULT_MEM_MIB,
        cpus: DEFAULT_CPUS,
        accel: AccelRequest::Auto,
        disks: r
            .disks
            .iter()
            .map(|p| Disk {
                path: p.clone(),
                read_only: false,
            })
            .collect(),
        shares: shares_for(&r.paths, &cwd),
        file_systems: r.file_systems.clone(),
        command,
        cwd,
        env: Vec::new(),
        timeout: None,
        echo: true,
    })
}

/// Refuses a binary the guest cannot run: one under a directory the guest has of its own
/// (its tmpfs /tmp, /dev/shm, /run hide the host's).
pub fn check_visible(exe: &Path) -> Result<()> {
    match crate::guest_private(exe) {
        Some(d) => Err(Error::input(format!(
            "{}: fsage's binary is under {d}, which a guest has of its own (its own tmpfs): the \
             guest cannot run it; run fsage from another directory",
            exe.display()
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binary_under_a_guest_private_directory_is_refused_by_name() {
        let e = check_visible(Path::new("/tmp/x/fsage")).unwrap_err();
        assert!(
            e.message.contains("/tmp/x/fsage") && e.message.contains("under /tmp"),
            "{e}"
        );
        assert!(check_visible(Path::new("/dev/shm/fsage")).is_err());
        assert!(check_visible(Path::new("/usr/local/bin/fsage")).is_ok());
        assert!(check_visible(Path::new("/tmpfoo/fsage")).is_ok());
    }

    #[test]
    fn dispatch_follows_the_kernel_and_the_flags() {
        // Tests never run in a guest with FSAGE_IN_VM=1 set (the guest runs fsage, not tests).
        let lacks = || Err(Error::input("this kernel has no f2fs"));
        assert_eq!(
            reason_to_dispatch(lacks(), false, false).as_deref(),
            Some("this kernel has no f2fs")
        );
        assert_eq!(reason_to_dispatch(lacks(), false, true), None);
        assert_eq!(reason_to_dispatch(Ok(()), false, false), None);
        assert_eq!(
            reason_to_dispatch(Ok(()), true, false).as_deref(),
            Some("asked for (--vm)")
        );
    }

    #[test]
    fn shares_are_the_outermost_existing_directories() {
        let d = tempfile::tempdir().unwrap();
        let sub = d.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let s = shares_for(
            &[
                sub.join("new.img"),
                d.path().join("report.json"),
                PathBuf::from("/no/such/dir/x"),
                PathBuf::from("/x"),
            ],
            Path::new("/"),
        );
        assert_eq!(s, vec![d.path().to_path_buf()]);
    }
}

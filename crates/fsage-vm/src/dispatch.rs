//! What sending fsage's own work to a guest needs from the VM side: whether a command goes there
//! ([`reason_to_dispatch`]), the shares of the files a step writes and reads, and a binary the
//! guest can see. The step itself is a request run by `fsage-host`'s guest host (`fsage step
//! --json` in the VM). Each directory of a file it writes is given to the guest staged at its
//! own path (the files it names and their neighbours, nothing else of the directory; see
//! [`crate::share`]), so it means the same there: an image made by the guest is a file on the
//! host, loop-mounted in the guest, and the state and reports land beside it as they would
//! natively.

use crate::share::{neighbours, Access, Share};
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

/// The shares for a command that writes `writes` and reads `reads` (relative to `cwd`): one
/// staged share per directory, writable when the command writes there. `/` itself is never
/// shared (the host's root stays read-only), nor a directory that does not exist (the command
/// then fails in the guest as it would here).
pub fn shares_for(writes: &[PathBuf], reads: &[PathBuf], cwd: &Path) -> Vec<Share> {
    let mut out: Vec<Share> = Vec::new();
    let split = |p: &PathBuf| {
        let abs = cwd.join(p);
        let name = abs.file_name()?.to_os_string();
        let dir = abs.parent()?.to_path_buf();
        (dir.parent().is_some() && dir.is_dir()).then_some((dir, name))
    };
    fn entry(out: &mut Vec<Share>, dir: PathBuf, writable: bool) -> &mut Share {
        let i = match out.iter().position(|s| s.dir == dir) {
            Some(i) => i,
            None => {
                out.push(if writable {
                    Share::staged(dir)
                } else {
                    Share::staged_read_only(dir)
                });
                out.len() - 1
            }
        };
        let s = &mut out[i];
        if let Access::Staged { writable: w, .. } = &mut s.access {
            *w |= writable;
        }
        s
    }
    for p in writes {
        let Some((dir, name)) = split(p) else {
            continue;
        };
        let files = neighbours(&dir, &name);
        if let Access::Staged { files: f, .. } = &mut entry(&mut out, dir, true).access {
            for n in files {
                if !f.contains(&n) {
                    f.push(n);
                }
            }
        }
    }
    for p in reads {
        let Some((dir, name)) = split(p) else {
            continue;
        };
        // A directory the guest has of its own, or one a staged share hides: a copy there.
        let hidden = crate::guest_private(&dir).is_some()
            || out
                .iter()
                .any(|s| s.is_writable() && dir.starts_with(&s.dir));
        if !hidden || !dir.join(&name).is_file() {
            continue;
        }
        if let Access::Staged { reads: r, .. } = &mut entry(&mut out, dir, false).access {
            if !r.contains(&name) {
                r.push(name);
            }
        }
    }
    out
}

/// `shares` plus, when the program `exe` lies under a staged directory (which hides the rest
/// of its directory), its own directory read-only.
pub fn with_program(mut shares: Vec<Share>, exe: &Path) -> Vec<Share> {
    let hidden = shares
        .iter()
        .any(|s| matches!(s.access, Access::Staged { .. }) && exe.starts_with(&s.dir));
    if let Some(dir) = exe.parent().filter(|_| hidden) {
        shares.push(Share::read_only(dir));
    }
    shares
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
    fn a_command_gets_the_directories_of_what_it_writes_staged_with_those_files_only() {
        let d = tempfile::tempdir().unwrap();
        let sub = d.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        for f in [
            "a.img",
            "a.img.fsage-state",
            "a.img.report.json",
            "a.imgx",
            "other",
        ] {
            std::fs::write(sub.join(f), "x").unwrap();
        }
        std::fs::create_dir(sub.join("a.img.mnt")).unwrap();
        std::fs::write(d.path().join("p.toml"), "x").unwrap();
        let s = shares_for(
            &[
                PathBuf::from("sub/a.img"),
                d.path().join("report.json"),
                PathBuf::from("/no/such/dir/x"),
                PathBuf::from("/x"),
            ],
            // Under a staged directory: a copy there.
            &[d.path().join("p.toml")],
            d.path(),
        );
        assert_eq!(
            s,
            vec![
                Share::staged(&sub)
                    .with_file("a.img")
                    .with_file("a.img.fsage-state")
                    .with_file("a.img.report.json"),
                Share::staged(d.path())
                    .with_file("report.json")
                    .with_read("p.toml"),
            ]
        );
        // A program under a staged directory is given its own directory read-only.
        let sh = vec![Share::staged(&sub)];
        assert_eq!(with_program(sh.clone(), Path::new("/usr/bin/fsage")), sh);
        assert_eq!(
            with_program(sh.clone(), &sub.join("target/fsage"))[1],
            Share::read_only(sub.join("target"))
        );
        // Elsewhere (not under /tmp, /dev/shm, /run, nor a staged directory): read through
        // the host's root.
        let s = shares_for(&[], &[PathBuf::from("/etc/hostname")], Path::new("/"));
        assert_eq!(s, Vec::new());
        // A profile in /dev/shm is given as a copy, read-only where nothing is written.
        let shm = tempfile::tempdir_in("/dev/shm").unwrap();
        std::fs::write(shm.path().join("p.toml"), "x").unwrap();
        let s = shares_for(&[], &[shm.path().join("p.toml")], Path::new("/"));
        assert_eq!(
            s,
            vec![Share::staged_read_only(shm.path()).with_read("p.toml")]
        );
    }
}

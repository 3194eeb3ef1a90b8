//! The external tools fsage runs (mkfs, fsck, btrfs, ...) and the kernel it runs on.

use crate::{find_cmd, Error};
use std::fs;
use std::process::Command;

/// Runs `name args...`; `Err` naming the command, its status and its output when it fails.
pub fn run_tool(name: &str, args: &[&str]) -> Result<String, Error> {
    let exe = find_cmd(name).ok_or_else(|| {
        Error::input(format!(
            "{name} not found: install it (scripts/setup installs e2fsprogs, xfsprogs, btrfs-progs)"
        ))
    })?;
    let o = Command::new(&exe)
        .args(args)
        .output()
        .map_err(|e| Error::operation(format!("{name}: cannot run: {e}")))?;
    if o.status.success() {
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    } else {
        Err(Error::operation(format!(
            "{name} {} failed ({}): {}{}",
            args.join(" "),
            o.status,
            String::from_utf8_lossy(&o.stderr).trim(),
            String::from_utf8_lossy(&o.stdout).trim()
        )))
    }
}

/// The running kernel's release (`uname -r`).
pub fn kernel_release() -> String {
    fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// What a child process did: its exit status, its standard error and its own CPU time.
#[derive(Debug)]
pub struct Timed {
    pub status: std::process::ExitStatus,
    pub stderr: Vec<u8>,
    /// User and system time of the child (and of any children it waited for), in ns.
    pub cpu_ns: u64,
}

/// Runs `cmd` to its end, its standard output discarded and its standard error kept, and
/// reports its CPU time from `wait4`'s resource usage: the child's own, whatever else this
/// process or the host runs meanwhile (a wall-clock time grows with the host's load; this
/// barely does).
pub fn run_with_cpu_time(cmd: &mut Command) -> std::io::Result<Timed> {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    let mut stderr = Vec::new();
    if let Some(mut e) = child.stderr.take() {
        e.read_to_end(&mut stderr)?;
    }
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value, and wait4 writes only into `status` and `ru`.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our own child, not yet reaped (std waits only when asked to).
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    Ok(Timed {
        status: std::process::ExitStatus::from_raw(status),
        stderr,
        cpu_ns: tv(ru.ru_utime) + tv(ru.ru_stime),
    })
}

#[cfg(test)]
mod cpu_tests {
    use super::*;

    #[test]
    fn a_child_s_cpu_time_is_its_own_and_not_its_wall_time() {
        // A child that sleeps 300 ms uses next to no CPU; one that spins uses some.
        let idle = run_with_cpu_time(Command::new("sh").args(["-c", "sleep 0.3"])).unwrap();
        assert!(idle.status.success());
        assert!(idle.cpu_ns < 100_000_000, "{}", idle.cpu_ns);
        let busy = run_with_cpu_time(Command::new("sh").args([
            "-c",
            "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; echo done >&2; exit 3",
        ]))
        .unwrap();
        assert_eq!(busy.status.code(), Some(3));
        assert_eq!(String::from_utf8_lossy(&busy.stderr).trim(), "done");
        assert!(
            busy.cpu_ns > idle.cpu_ns,
            "{} <= {}",
            busy.cpu_ns,
            idle.cpu_ns
        );
    }
}

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

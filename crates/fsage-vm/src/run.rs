//! One command in a guest. The host's `/` is the guest's root, read-only over 9p, so host
//! binaries (fsage, mkfs, fio) run unchanged; /tmp, /dev/shm and /run are the guest's own tmpfs;
//! each share is a host directory mounted at its own path (`nosuid,nodev`), read-only or
//! writable as [`crate::share`] says (results come back as files); each disk is a virtio block
//! device (cache=none) bound over its own path, so a command that names an image file means
//! the same file in the guest. A writable disk passes the guest's discards on to the host's
//! file or device. The command's stdout and stderr are copied through as they are written, and
//! its exit code comes back in a status file.
//!
//! No path is ever part of the guest's shell text: the setup script names shares and disks by
//! number and reads their paths from files in the control share.

use crate::accel::{choose_accel, Accel, AccelRequest};
use crate::kernel::Kernel;
use crate::share::{prepare, Prepared, PrivateDir, Share};
use crate::{Error, Result};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// An image file or block device given to the guest at its host path.
#[derive(Debug, Clone)]
pub struct Disk {
    pub path: PathBuf,
    /// Given to the guest read-only (QEMU `readonly=on`): a disk that must not change, such as
    /// a checksummed base image. Otherwise the guest writes it, and its discards (mkfs, fstrim,
    /// f2fs's default `discard`) punch holes in an image file or trim a block device.
    pub read_only: bool,
}

/// Guest memory when the caller has no reason to choose (MiB): fsage's workloads and aging fit.
pub const DEFAULT_MEM_MIB: u64 = 2048;
/// Guest CPUs when the caller has no reason to choose.
pub const DEFAULT_CPUS: u32 = 2;

/// `Err` when QEMU's option syntax cannot carry `p` (a comma separates its options; it takes
/// UTF-8): "QEMU cannot {what} with a comma or not in UTF-8".
fn qemu_can_name(p: &Path, what: &str) -> Result<()> {
    if p.to_str().is_none_or(|s| s.contains(',')) {
        return Err(Error::input(format!(
            "{}: QEMU cannot {what} with a comma or not in UTF-8",
            p.display()
        )));
    }
    Ok(())
}

/// What to run and how.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub kernel: Kernel,
    /// Guest memory in MiB.
    pub mem_mib: u64,
    pub cpus: u32,
    pub accel: AccelRequest,
    pub disks: Vec<Disk>,
    /// Host directories the guest sees (at the same paths), and how much of them it may write.
    pub shares: Vec<Share>,
    /// File systems whose modules the guest loads (of `initramfs::FILE_SYSTEMS`).
    pub file_systems: Vec<String>,
    /// The command and its arguments.
    pub command: Vec<String>,
    /// Where the command starts (the host's current directory, if the guest sees it).
    pub cwd: PathBuf,
    /// Environment given to the command besides PATH and fsage's own.
    pub env: Vec<(String, String)>,
    /// Kill the guest after this long.
    pub timeout: Option<Duration>,
    /// Copy the guest's output through as it comes (else only collected).
    pub echo: bool,
    /// On Ctrl-C (or SIGTERM), ask the guest's command to stop (a SIGTERM there, which fsage
    /// takes as it takes Ctrl-C: a report written, mounts gone) and give it [`STOP_GRACE`] to
    /// end by itself, instead of stopping QEMU at once; the outcome is then the command's. QEMU
    /// runs in a process group of its own, so that the terminal's Ctrl-C reaches only fsage.
    pub graceful_stop: bool,
}

/// How long a guest asked to stop ([`RunOptions::stop_file`]) has to end by itself.
pub const STOP_GRACE: Duration = Duration::from_secs(120);

/// How a guest run ended.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The command's exit code in the guest.
    pub exit_code: i32,
    pub accel: Accel,
    pub accel_why: String,
    pub release: String,
    /// From starting QEMU to the command starting.
    pub boot: Duration,
    pub total: Duration,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Quotes `s` for a POSIX shell.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn absolute(p: &Path) -> Result<PathBuf> {
    let a = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| Error::operation(format!("current directory: {e}")))?
            .join(p)
    };
    Ok(a)
}

/// Removes the run's control directory when the run ends, however it ends.
struct RunDir(Option<PrivateDir>);
impl Drop for RunDir {
    fn drop(&mut self) {
        if let Some(d) = self.0.take() {
            d.remove();
        }
    }
}

/// The prepared shares; a staged share's results are moved back when the run ends, also when
/// it ends early (then silently: [`Shares::finish`] reports).
struct Shares {
    list: Vec<Prepared>,
    disks: Vec<PathBuf>,
}
impl Shares {
    fn finish(&mut self) -> Result<()> {
        let mut errors = Vec::new();
        for p in self.list.drain(..) {
            if let Err(e) = p.finish(&self.disks) {
                errors.push(e.message);
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(Error::operation(errors.join("\n")))
        }
    }
}
impl Drop for Shares {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// Kills QEMU (by its PID, through the handle) if the run is left early.
struct Guest(Option<Child>);
impl Drop for Guest {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// QEMU's `-drive` value for disk `i`. A writable disk passes the guest's trims on
/// (`discard=unmap`; QEMU's default drops them, and a slow device's SSD model must see them);
/// a read-only one cannot be changed by the guest at all.
fn drive_option(i: usize, path: &Path, read_only: bool) -> String {
    format!(
        "file={},if=none,id=d{i},format=raw,cache=none,aio=threads,{}",
        path.display(),
        if read_only {
            "readonly=on"
        } else {
            "discard=unmap"
        }
    )
}

/// The guest's per-run setup script: shares (parents first; `true` when writable), then
/// `disks` disks, under the host's root at /root. It holds no path: `at NAME` reads the path in
/// the control share's file NAME, byte for byte, into `$p`.
fn setup_script(shares: &[bool], disks: usize) -> String {
    let mut s = String::from(
        "set -e\n\
         at() { p=$(cat \"/ctl/$1\"; echo .); p=\"/root${p%.}\"; }\n",
    );
    for (i, writable) in shares.iter().enumerate() {
        let ro = if *writable { "" } else { ",ro" };
        s += &format!(
            "at share{i}\n\
             mkdir -p \"$p\" 2>/dev/null || true\n\
             mount -t 9p -o \"$P9,cache=none,nosuid,nodev{ro}\" share{i} \"$p\" || die \"cannot mount share{i} at $p\"\n"
        );
    }
    for i in 0..disks {
        s += &format!(
            "at disk{i}\n\
             dev=\n\
             for b in /sys/block/vd*; do [ \"$(cat $b/serial 2>/dev/null)\" = fsage{i} ] && dev=/dev/${{b##*/}}; done\n\
             [ -n \"$dev\" ] || die \"disk{i} ($p) did not appear\"\n\
             if [ ! -e \"$p\" ]; then mkdir -p \"$(dirname \"$p\")\"; touch \"$p\"; fi\n\
             mount --bind \"$dev\" \"$p\" || die \"cannot put disk{i} in place at $p\"\n"
        );
    }
    s += "set +e\n";
    s
}

/// An environment variable's name as the command script can export it.
fn check_env_name(k: &str) -> Result<()> {
    let ok = k.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok {
        return Err(Error::input(format!(
            "{k:?}: not an environment variable's name"
        )));
    }
    Ok(())
}

/// Refuses a file system the guest cannot load (of [`crate::initramfs::FILE_SYSTEMS`]; `none`
/// loads none).
pub fn check_file_systems(names: &[String]) -> Result<()> {
    use crate::initramfs::FILE_SYSTEMS;
    for n in names {
        if n != "none" && !FILE_SYSTEMS.contains(&n.as_str()) {
            return Err(Error::input(format!(
                "{n:?}: not a file system a guest loads (one of {}, or none)",
                FILE_SYSTEMS.join(", ")
            )));
        }
    }
    Ok(())
}

/// The host's memory in bytes (MemTotal), if /proc/meminfo says.
pub fn host_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// Refuses guest memory QEMU cannot give: at least 128 MiB, and less than the host has
/// (`host`: its memory in bytes, when known).
pub fn check_memory(mem_mib: u64, host: Option<u64>) -> Result<()> {
    if mem_mib < 128 {
        return Err(Error::input(format!(
            "{mem_mib} MiB of guest memory: at least 128 MiB"
        )));
    }
    if let Some(h) = host {
        if mem_mib.saturating_mul(1 << 20) >= h {
            return Err(Error::input(format!(
                "{mem_mib} MiB of guest memory: more than this machine has (it has {} MiB; \
                 give the guest less)",
                h >> 20
            )));
        }
    }
    Ok(())
}

/// The shares with one entry per directory (parents first, so that a share inside another is
/// mounted over it, not under it): a directory given twice gets the most either gives.
fn merged_shares(shares: &[Share]) -> Result<Vec<Share>> {
    use crate::share::Access;
    let mut out: Vec<Share> = Vec::new();
    for s in shares {
        let dir = absolute(&s.dir)?;
        match out.iter_mut().find(|o| o.dir == dir) {
            None => out.push(Share {
                dir,
                access: s.access.clone(),
            }),
            Some(o) => {
                o.access = match (
                    std::mem::replace(&mut o.access, Access::ReadOnly),
                    &s.access,
                ) {
                    (Access::Writable, _) | (_, Access::Writable) => Access::Writable,
                    (
                        Access::Staged {
                            mut files,
                            mut reads,
                            writable,
                        },
                        Access::Staged {
                            files: f2,
                            reads: r2,
                            writable: w2,
                        },
                    ) => {
                        files.extend(f2.iter().cloned());
                        reads.extend(r2.iter().cloned());
                        Access::Staged {
                            files,
                            reads,
                            writable: writable || *w2,
                        }
                    }
                    (Access::ReadOnly, other) => other.clone(),
                    (staged, Access::ReadOnly) => staged,
                }
            }
        }
    }
    out.sort_by_key(|s| s.dir.components().count());
    Ok(out)
}

/// The command script run under the host's root.
fn command_script(opts: &RunOptions, accel: Accel) -> String {
    let mut s = String::new();
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/sbin:/usr/bin:/sbin:/bin".into());
    s += &format!("export PATH={}\n", shell_quote(&path));
    s += "export HOME=/root TERM=dumb FSAGE_IN_VM=1\n";
    s += &format!("export FSAGE_PLATFORM={}\n", accel.name());
    for (k, v) in &opts.env {
        // Names are checked by `run` (check_env_name).
        s += &format!("export {k}={}\n", shell_quote(v));
    }
    let cwd = shell_quote(&opts.cwd.to_string_lossy());
    // Under a writable share the directory may be one the guest's view lacks (a staged share
    // holds only its files): made there, so that relative paths mean what they mean here.
    if opts
        .shares
        .iter()
        .any(|s| s.is_writable() && opts.cwd.starts_with(&s.dir))
    {
        s += &format!("mkdir -p {cwd} 2>/dev/null\n");
    }
    s += &format!("cd {cwd} 2>/dev/null || cd /\n");
    let argv: Vec<String> = opts.command.iter().map(|a| shell_quote(a)).collect();
    if opts.graceful_stop {
        // The host creates `stop` in the control directory (here /run/fsage-vm) when it is
        // interrupted: the command gets a SIGTERM (an asynchronous command ignores SIGINT).
        s += &format!("{} &\n", argv.join(" "));
        s += "pid=$!\n";
        s += "(while [ ! -e /run/fsage-vm/stop ]; do sleep 1; done; kill -TERM $pid) \
              2>/dev/null &\n";
        s += "watch=$!\nwait $pid\nrc=$?\nkill $watch 2>/dev/null\nexit $rc\n";
    } else {
        s += &format!("exec {}\n", argv.join(" "));
    }
    s
}

/// Copies what was appended to `file` since `*pos` to `out` (and keeps it).
fn pump(file: &Path, pos: &mut u64, keep: &mut Vec<u8>, out: Option<&mut dyn Write>) {
    let Ok(mut f) = std::fs::File::open(file) else {
        return;
    };
    if f.seek(SeekFrom::Start(*pos)).is_err() {
        return;
    }
    let mut buf = Vec::new();
    if f.read_to_end(&mut buf).is_ok() && !buf.is_empty() {
        *pos += buf.len() as u64;
        if let Some(o) = out {
            let _ = o.write_all(&buf);
            let _ = o.flush();
        }
        keep.extend_from_slice(&buf);
    }
}

/// The last lines of the guest's console, for an error.
fn console_tail(path: &Path) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.trim_matches(|c: char| c.is_control() || c == ' '))
        .filter(|l| !l.is_empty())
        .collect();
    lines[lines.len().saturating_sub(15)..].join("\n  ")
}

/// The run's control directory: private (random name, 0700), where QEMU's mapped-xattr model
/// works (the temporary directory, else fsage's cache).
fn control_dir() -> Result<PrivateDir> {
    let mut last = None;
    for parent in [std::env::temp_dir(), crate::cache_dir()] {
        if std::fs::create_dir_all(&parent).is_err() {
            continue;
        }
        let d = PrivateDir::make(&parent, "fsage-vm-")?;
        match crate::share::check_xattrs(d.fd.as_fd(), &d.path()) {
            Ok(()) => return Ok(d),
            Err(e) => {
                d.remove();
                last = Some(e);
            }
        }
    }
    Err(last.unwrap_or_else(|| Error::operation("no directory for the guest's control files")))
}

/// Boots the guest, runs the command, returns how it ended. An error when the guest could not
/// run it (no QEMU, a share or disk missing, the guest died, the timeout or a signal). A
/// staged share's results are moved into place however the run ends.
pub fn run(opts: &RunOptions) -> Result<RunOutcome> {
    let qemu = fsage_sys::find_cmd("qemu-system-x86_64").ok_or_else(|| {
        Error::input("qemu-system-x86_64 not found: install qemu-system-x86 (scripts/setup does)")
    })?;
    if opts.command.is_empty() {
        return Err(Error::input("no command to run in the guest"));
    }
    check_file_systems(&opts.file_systems)?;
    check_memory(opts.mem_mib, host_memory())?;
    for (k, _) in &opts.env {
        check_env_name(k)?;
    }
    let choice = choose_accel(opts.accel)?;
    let mut disks = Vec::new();
    for d in &opts.disks {
        let p = absolute(&d.path)?;
        let md = std::fs::metadata(&p)
            .map_err(|e| Error::io(&p, "cannot give it to the guest as a disk", e))?;
        if !(md.is_file() || fsage_sys::is_block_device(&p)) {
            return Err(Error::input(format!(
                "{}: a disk must be an image file or a block device",
                p.display()
            )));
        }
        qemu_can_name(&p, "take a disk path")?;
        disks.push((p, d.read_only));
    }
    let disk_paths: Vec<PathBuf> = disks.iter().map(|(p, _)| p.clone()).collect();
    let initrd = crate::initramfs::initramfs_for(&opts.kernel)?;
    let ctl = control_dir()?;
    let dir = ctl.path();
    let ctl_fd = ctl.fd.as_raw_fd();
    let _run_dir = RunDir(Some(ctl));
    // Made after the control directory, so dropped (moved back) before it is removed.
    let mut shares = Shares {
        list: Vec::new(),
        disks: disk_paths.clone(),
    };
    for s in merged_shares(&opts.shares)? {
        shares.list.push(prepare(&s)?);
    }
    let write = |name: &str, bytes: &[u8]| {
        std::fs::write(dir.join(name), bytes)
            .map_err(|e| Error::io(&dir.join(name), "cannot write", e))
    };
    use std::os::unix::ffi::OsStrExt;
    for (i, p) in shares.list.iter().enumerate() {
        write(&format!("share{i}"), p.at.as_os_str().as_bytes())?;
    }
    for (i, p) in disk_paths.iter().enumerate() {
        write(&format!("disk{i}"), p.as_os_str().as_bytes())?;
    }
    write(
        "fs",
        format!("{}\n", opts.file_systems.join(" ")).as_bytes(),
    )?;
    let writable: Vec<bool> = shares.list.iter().map(|p| p.writable).collect();
    write(
        "setup.sh",
        setup_script(&writable, disk_paths.len()).as_bytes(),
    )?;
    write("cmd.sh", command_script(opts, choice.accel).as_bytes())?;
    let r = boot(
        opts,
        &qemu,
        &choice,
        &initrd,
        &dir,
        ctl_fd,
        &shares.list,
        &disks,
    );
    // QEMU has exited (its guard is dropped in `boot`): the shares are the host's again.
    let moved = shares.finish();
    match (r, moved) {
        (Ok(o), Ok(())) => Ok(o),
        (Ok(_), Err(e)) => Err(e),
        (Err(e), Ok(())) => Err(e),
        (Err(e), Err(m)) => Err(Error {
            message: format!("{}\n{}", e.message, m.message),
            ..e
        }),
    }
}

/// Starts QEMU and waits for it; the guest is stopped when this returns. `ctl_fd`: the control
/// directory (the guest's status and output are read from `dir`, its path).
#[allow(clippy::too_many_arguments)]
fn boot(
    opts: &RunOptions,
    qemu: &Path,
    choice: &crate::accel::AccelChoice,
    initrd: &Path,
    dir: &Path,
    ctl_fd: std::os::fd::RawFd,
    shares: &[Prepared],
    disks: &[(PathBuf, bool)],
) -> Result<RunOutcome> {
    // The host's root and the shares given read-only: the guest sees owners and modes as they
    // are and changes nothing. Writable ones: mapped-xattr (see crate::share).
    let read_only_model = if fsage_sys::is_root() {
        "passthrough"
    } else {
        "none"
    };
    let mut cmd = Command::new(qemu);
    cmd.args([
        "-nodefaults",
        "-no-user-config",
        "-display",
        "none",
        "-no-reboot",
    ]);
    cmd.args(["-machine", "q35"]);
    match choice.accel {
        Accel::Kvm => cmd.args(["-accel", "kvm", "-cpu", "host"]),
        Accel::Tcg => cmd.args(["-accel", "tcg", "-cpu", "max"]),
    };
    cmd.arg("-m").arg(format!("{}M", opts.mem_mib));
    cmd.arg("-smp").arg(opts.cpus.to_string());
    cmd.arg("-kernel").arg(&opts.kernel.image);
    cmd.arg("-initrd").arg(initrd);
    cmd.args(["-append", "console=ttyS0 quiet loglevel=3 panic=-1"]);
    cmd.arg("-serial")
        .arg(format!("file:{}", dir.join("console.log").display()));
    cmd.arg("-virtfs").arg(format!(
        "local,path=/,mount_tag=hostroot,security_model={read_only_model},readonly=on,multidevs=remap"
    ));
    cmd.arg("-virtfs").arg(format!(
        "local,path=/proc/self/fd/{ctl_fd},mount_tag=fsagectl,security_model=mapped-xattr"
    ));
    for (i, s) in shares.iter().enumerate() {
        let access = if s.writable {
            "security_model=mapped-xattr".to_string()
        } else {
            format!("security_model={read_only_model},readonly=on")
        };
        cmd.arg("-virtfs").arg(format!(
            "local,path={},mount_tag=share{i},{access},multidevs=remap",
            s.qemu_path()
        ));
    }
    for (i, (d, ro)) in disks.iter().enumerate() {
        cmd.arg("-drive").arg(drive_option(i, d, *ro));
        cmd.arg("-device")
            .arg(format!("virtio-blk-pci,drive=d{i},serial=fsage{i}"));
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if opts.graceful_stop {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    // The directories QEMU exports are the descriptors fsage holds: inherited by QEMU.
    let keep: Vec<std::os::fd::RawFd> = std::iter::once(ctl_fd)
        .chain(shares.iter().map(|s| s.raw_fd()))
        .collect();
    // QEMU dies with fsage even when fsage is killed outright (SIGKILL runs no destructor).
    // SAFETY: between fork and exec the closure makes only async-signal-safe system calls
    // (prctl, fcntl) and allocates nothing.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(move || {
            for fd in &keep {
                let fd = std::os::fd::BorrowedFd::borrow_raw(*fd);
                rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::empty())
                    .map_err(std::io::Error::from)?;
            }
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
                .map_err(std::io::Error::from)
        });
    }
    let start = Instant::now();
    let child = cmd
        .spawn()
        .map_err(|e| Error::operation(format!("qemu-system-x86_64: cannot start: {e}")))?;
    let mut guest = Guest(Some(child));
    let (mut out_pos, mut err_pos) = (0u64, 0u64);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let mut boot = None;
    let mut stop_asked: Option<Instant> = None;
    let status = loop {
        let c = guest
            .0
            .as_mut()
            .expect("the guest runs until the loop ends");
        let done = c
            .try_wait()
            .map_err(|e| Error::operation(format!("qemu: {e}")))?;
        if boot.is_none() && dir.join("started").exists() {
            boot = Some(start.elapsed());
        }
        let mut so = std::io::stdout();
        let mut se = std::io::stderr();
        pump(
            &dir.join("stdout"),
            &mut out_pos,
            &mut out,
            opts.echo.then_some(&mut so as &mut dyn Write),
        );
        pump(
            &dir.join("stderr"),
            &mut err_pos,
            &mut err,
            opts.echo.then_some(&mut se as &mut dyn Write),
        );
        if let Some(st) = done {
            break st;
        }
        if fsage_signals::interrupted() {
            match (opts.graceful_stop, stop_asked) {
                // The guest's command is told (`cmd.sh` watches for the file), and given time
                // to stop cleanly.
                (true, None) => {
                    let _ = std::fs::write(dir.join("stop"), b"stop\n");
                    stop_asked = Some(Instant::now());
                }
                (true, Some(t)) if t.elapsed() < STOP_GRACE => {}
                // A Ctrl-C reaches QEMU too (same process group) and ends it: the signal, not
                // the guest, stopped the command.
                _ => {
                    drop(guest);
                    return Err(Error::interrupted("interrupted: the guest was stopped"));
                }
            }
        }
        if let Some(t) = opts.timeout {
            if start.elapsed() > t {
                drop(guest);
                return Err(Error::operation(format!(
                    "the guest ran longer than the timeout ({}s) and was stopped",
                    t.as_secs()
                )));
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let qemu_out = guest
        .0
        .take()
        .map(|c| c.wait_with_output())
        .transpose()
        .ok()
        .flatten();
    let code = std::fs::read_to_string(dir.join("status"))
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok());
    let Some(exit_code) = code else {
        let qemu_err = qemu_out
            .map(|o| String::from_utf8_lossy(&o.stderr).trim().to_string())
            .unwrap_or_default();
        return Err(Error::operation(format!(
            "the guest ended ({status}) without running the command to its end{}\n  console:\n  {}",
            if qemu_err.is_empty() {
                String::new()
            } else {
                format!("; qemu said: {qemu_err}")
            },
            console_tail(&dir.join("console.log"))
        )));
    };
    Ok(RunOutcome {
        exit_code,
        accel: choice.accel,
        accel_why: choice.why.clone(),
        release: opts.kernel.release.clone(),
        boot: boot.unwrap_or_default(),
        total: start.elapsed(),
        stdout: out,
        stderr: err,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_writable_disk_passes_trims_and_a_read_only_one_is_read_only() {
        let w = drive_option(0, Path::new("/dev/loop3"), false);
        assert_eq!(
            w,
            "file=/dev/loop3,if=none,id=d0,format=raw,cache=none,aio=threads,discard=unmap"
        );
        let r = drive_option(1, Path::new("/i/base.img"), true);
        assert!(r.ends_with(",readonly=on") && !r.contains("discard"), "{r}");
        assert!(r.starts_with("file=/i/base.img,if=none,id=d1,"), "{r}");
    }

    #[test]
    fn quoting_survives_single_quotes_and_spaces() {
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }

    /// The reproduction of issue 33: a share's path with a quote, `;` and a command in it
    /// (`vm run --share '/tmp/x"; touch ...; echo "'`) ran that command in the guest. Paths
    /// are data now: the script holds none, and the one it reads arrives byte for byte.
    #[test]
    fn a_share_path_reaches_the_guest_as_data_never_as_shell_text() {
        let nasty = "/dev/shm/x\"; touch /tmp/pwned; echo \"$(id) `id` 'q' \\ \nend\n";
        let s = setup_script(&[true, false], 1);
        assert!(!s.contains("/dev/shm") && !s.contains("pwned"), "{s}");
        assert!(s.contains("= fsage0 ]"), "{s}");
        assert!(s.contains("mount --bind \"$dev\" \"$p\""), "{s}");
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("share0"), nasty).unwrap();
        std::fs::write(d.path().join("share1"), "/plain").unwrap();
        let log = d.path().join("log");
        let pwned = d.path().join("pwned");
        let nasty_here = nasty.replace("/tmp/pwned", &pwned.to_string_lossy());
        std::fs::write(d.path().join("share0"), &nasty_here).unwrap();
        // The shares' part, run by a shell with mount and mkdir stood in for.
        let script = format!(
            "P9=opts\ndie() {{ echo \"DIE $*\"; exit 9; }}\n\
             mount() {{ for a in \"$@\"; do printf '<%s>' \"$a\"; done >> '{log}'; echo >> '{log}'; }}\n\
             mkdir() {{ :; }}\n{}",
            setup_script(&[true, false], 0).replace("/ctl/", &format!("{}/", d.path().display())),
            log = log.display()
        );
        let o = std::process::Command::new("sh")
            .arg("-c")
            .arg(&script)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
        assert!(!pwned.exists(), "the path ran as a command");
        let got = std::fs::read_to_string(&log).unwrap();
        assert_eq!(
            got,
            format!(
                "<-t><9p><-o><opts,cache=none,nosuid,nodev><share0></root{nasty_here}>\n\
                 <-t><9p><-o><opts,cache=none,nosuid,nodev,ro><share1></root/plain>\n"
            )
        );
    }

    /// The command and its environment are quoted: an argument is one argument, whatever it
    /// holds.
    #[test]
    fn the_command_and_its_environment_arrive_unchanged() {
        let nasty = "a'b\"c $(id) `id` ; \\ \n x";
        let opts = RunOptions {
            kernel: Kernel {
                release: "r".into(),
                image: "/k".into(),
                modules: "/m".into(),
            },
            mem_mib: 256,
            cpus: 1,
            accel: AccelRequest::Auto,
            disks: Vec::new(),
            shares: Vec::new(),
            file_systems: Vec::new(),
            command: vec!["printf".into(), "<%s>%s".into(), nasty.into(), "$V".into()],
            cwd: PathBuf::from("/"),
            env: vec![("V".into(), nasty.into())],
            timeout: None,
            echo: false,
            graceful_stop: false,
        };
        let o = std::process::Command::new("sh")
            .arg("-c")
            .arg(command_script(&opts, Accel::Tcg))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&o.stdout), format!("<{nasty}>$V"));
        assert!(check_env_name("V_1").is_ok());
        assert!(check_env_name("A;touch x").is_err());
        assert!(check_env_name("1A").is_err());
    }

    #[test]
    fn unknown_file_systems_and_more_memory_than_the_host_are_refused() {
        assert!(check_file_systems(&["ext4".into(), "f2fs".into(), "none".into()]).is_ok());
        let e = check_file_systems(&["zfs".into()]).unwrap_err();
        assert!(
            e.message.contains("\"zfs\"") && e.message.contains("nilfs2"),
            "{e}"
        );
        assert_eq!(e.blame, fsage_sys::Blame::Input);
        assert!(check_memory(2048, Some(24 << 30)).is_ok());
        let e = check_memory(100 << 20, Some(24 << 30)).unwrap_err();
        assert!(e.message.contains("24576 MiB"), "{e}");
        assert!(check_memory(64, None).is_err());
        assert!(host_memory().is_some_and(|m| m > 0));
    }
}

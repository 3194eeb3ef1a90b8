//! One command in a guest. The host's `/` is the guest's root, read-only over 9p, so host
//! binaries (fsage, mkfs, fio) run unchanged; /tmp, /dev/shm and /run are the guest's own tmpfs;
//! each share is a host directory mounted read-write at its own path (results come back as
//! files); each disk is a virtio block device (cache=none) bound over its own path, so a command
//! that names an image file means the same file in the guest. A writable disk passes the
//! guest's discards on to the host's file or device. The command's stdout and stderr
//! are copied through as they are written, and its exit code comes back in a status file.

use crate::accel::{choose_accel, Accel, AccelRequest};
use crate::kernel::Kernel;
use crate::{Error, Result};
use std::io::{Read, Seek, SeekFrom, Write};
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
    /// Host directories the guest may write (at the same paths).
    pub shares: Vec<PathBuf>,
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
}

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
struct RunDir(PathBuf);
impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
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

/// The guest's per-run setup script: shares, then disks, under the host's root at /root.
fn setup_script(shares: &[PathBuf], disks: &[PathBuf]) -> String {
    let mut s = String::from("set -e\n");
    for (i, p) in shares.iter().enumerate() {
        let q = shell_quote(&format!("/root{}", p.display()));
        s += &format!(
            "mkdir -p {q} 2>/dev/null || true\n\
             mount -t 9p -o \"$P9,cache=none\" share{i} {q} || die \"cannot mount share {}\"\n",
            p.display()
        );
    }
    for (i, p) in disks.iter().enumerate() {
        let q = shell_quote(&format!("/root{}", p.display()));
        s += &format!(
            "dev=\n\
             for b in /sys/block/vd*; do [ \"$(cat $b/serial 2>/dev/null)\" = fsage{i} ] && dev=/dev/${{b##*/}}; done\n\
             [ -n \"$dev\" ] || die \"disk {p} did not appear\"\n\
             if [ ! -e {q} ]; then mkdir -p \"$(dirname {q})\"; touch {q}; fi\n\
             mount --bind \"$dev\" {q} || die \"cannot put disk {p} in place\"\n",
            p = p.display()
        );
    }
    s += "set +e\n";
    s
}

/// The command script run under the host's root.
fn command_script(opts: &RunOptions, accel: Accel) -> String {
    let mut s = String::new();
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/sbin:/usr/bin:/sbin:/bin".into());
    s += &format!("export PATH={}\n", shell_quote(&path));
    s += "export HOME=/root TERM=dumb FSAGE_IN_VM=1\n";
    s += &format!("export FSAGE_PLATFORM={}\n", accel.name());
    for (k, v) in &opts.env {
        s += &format!("export {k}={}\n", shell_quote(v));
    }
    let cwd = shell_quote(&opts.cwd.to_string_lossy());
    s += &format!("cd {cwd} 2>/dev/null || cd /\n");
    let argv: Vec<String> = opts.command.iter().map(|a| shell_quote(a)).collect();
    s += &format!("exec {}\n", argv.join(" "));
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

/// Boots the guest, runs the command, returns how it ended. An error when the guest could not
/// run it (no QEMU, a share or disk missing, the guest died, the timeout or a signal).
pub fn run(opts: &RunOptions) -> Result<RunOutcome> {
    let qemu = fsage_sys::find_cmd("qemu-system-x86_64").ok_or_else(|| {
        Error::input("qemu-system-x86_64 not found: install qemu-system-x86 (scripts/setup does)")
    })?;
    if opts.command.is_empty() {
        return Err(Error::input("no command to run in the guest"));
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
    let mut shares = Vec::new();
    for s in &opts.shares {
        let p = absolute(s)?;
        if !p.is_dir() {
            return Err(Error::input(format!(
                "{}: a share must be an existing directory",
                p.display()
            )));
        }
        qemu_can_name(&p, "share a path")?;
        shares.push(p);
    }
    // Parents first, so that a share inside another is mounted over it, not under it.
    shares.sort_by_key(|p| p.components().count());
    shares.dedup();
    let initrd = crate::initramfs::initramfs_for(&opts.kernel)?;
    // A new directory of a random name, mode 0700: the guest's setup script is written there,
    // where nobody else can plant, swap or read it (was `fsage-vm-PID-NANOS` by create_dir_all,
    // which went into a directory someone had planted under that name).
    let dir = fsage_sys::safe::create_private_dir(&std::env::temp_dir(), "fsage-vm-")?;
    let run_dir = RunDir(dir.clone());
    let write = |name: &str, text: &str| {
        std::fs::write(dir.join(name), text)
            .map_err(|e| Error::io(&dir.join(name), "cannot write", e))
    };
    write("fs", &format!("{}\n", opts.file_systems.join(" ")))?;
    let disk_paths: Vec<PathBuf> = disks.iter().map(|(p, _)| p.clone()).collect();
    write("setup.sh", &setup_script(&shares, &disk_paths))?;
    write("cmd.sh", &command_script(opts, choice.accel))?;
    let security = if fsage_sys::is_root() {
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
    cmd.arg("-initrd").arg(&initrd);
    cmd.args(["-append", "console=ttyS0 quiet loglevel=3 panic=-1"]);
    cmd.arg("-serial")
        .arg(format!("file:{}", dir.join("console.log").display()));
    cmd.arg("-virtfs").arg(format!(
        "local,path=/,mount_tag=hostroot,security_model={security},readonly=on,multidevs=remap"
    ));
    cmd.arg("-virtfs").arg(format!(
        "local,path={},mount_tag=fsagectl,security_model={security}",
        dir.display()
    ));
    for (i, s) in shares.iter().enumerate() {
        cmd.arg("-virtfs").arg(format!(
            "local,path={},mount_tag=share{i},security_model={security},multidevs=remap",
            s.display()
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
    // QEMU dies with fsage even when fsage is killed outright (SIGKILL runs no destructor).
    // SAFETY: between fork and exec the closure makes one async-signal-safe system call (prctl).
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
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
        // A Ctrl-C reaches QEMU too (same process group) and ends it: the signal, not the
        // guest, stopped the command.
        if fsage_signals::interrupted() {
            drop(guest);
            return Err(Error::interrupted("interrupted: the guest was stopped"));
        }
        if let Some(st) = done {
            break st;
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
    drop(run_dir);
    Ok(RunOutcome {
        exit_code,
        accel: choice.accel,
        accel_why: choice.why,
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

    #[test]
    fn setup_binds_each_disk_over_its_path_by_serial() {
        let s = setup_script(
            &[PathBuf::from("/dev/shm/out")],
            &[PathBuf::from("/dev/shm/out/x.img")],
        );
        assert!(s.contains("share0 '/root/dev/shm/out'"), "{s}");
        assert!(s.contains("= fsage0 ]"), "{s}");
        assert!(
            s.contains("mount --bind \"$dev\" '/root/dev/shm/out/x.img'"),
            "{s}"
        );
    }
}

//! nilfs2's cleaner. nilfs2 never overwrites: a daemon, `nilfs_cleanerd`, copies the live blocks
//! out of old segments so that they can be written again. `mount.nilfs2` starts it, but fsage
//! mounts with mount(2), so fsage starts it itself for every nilfs2 file system it mounts
//! read-write (aging without it fills the file system) and stops it, by the PID it started,
//! before unmounting (a running cleaner keeps the mount busy).
//!
//! A mount left in place (`fsage fs mount`) leaves its cleaner running; a PID file
//! (`/run/fsage/nilfs_cleanerd/DEVICE.pid`: the PID, the device, the mount point) lets a later
//! `fsage fs umount` find it from the mount. Before any signal the PID's command line must be
//! `nilfs_cleanerd ... DEVICE MOUNT_POINT`, so a reused PID or a cleaner someone else started is
//! never touched.

use crate::{Error, Result};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The daemon's program name.
pub const CLEANERD: &str = "nilfs_cleanerd";

/// The cleaner's protection period, in seconds: it reclaims no segment written more recently.
/// Its default, an hour, suits a disk used for months; aging compresses months into minutes, and
/// an hour's protection would keep every block a run deletes, filling the file system.
pub const PROTECTION_SECONDS: u64 = 0;

/// How long the cleaner has to exit after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// Where the PID files of the cleaners fsage started are kept.
pub fn default_pid_dir() -> PathBuf {
    PathBuf::from("/run/fsage/nilfs_cleanerd")
}

/// A cleaner fsage started. Dropping it stops it (unless [`Cleanerd::release`]d).
#[derive(Debug)]
pub struct Cleanerd {
    pid: u32,
    device: PathBuf,
    mount_point: PathBuf,
    pid_file: PathBuf,
    child: Option<Child>,
}

/// The PID file of the cleaner of `device` in `dir`.
fn pid_file_of(dir: &Path, device: &Path) -> PathBuf {
    let name = device
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "device".into());
    dir.join(format!("{name}.pid"))
}

/// A PID file's contents: the PID, the device and the mount point, one a line.
fn pid_file_text(pid: u32, device: &Path, mount_point: &Path) -> String {
    format!("{pid}\n{}\n{}\n", device.display(), mount_point.display())
}

/// `(pid, device, mount point)` from a PID file, `None` when it is not one.
fn parse_pid_file(text: &str) -> Option<(u32, PathBuf, PathBuf)> {
    let mut l = text.lines();
    let pid = l.next()?.trim().parse().ok()?;
    let dev = PathBuf::from(l.next()?);
    let mp = PathBuf::from(l.next()?);
    Some((pid, dev, mp))
}

/// Whether `cmdline` (`/proc/PID/cmdline`: NUL-separated arguments) is a nilfs_cleanerd serving
/// `device` on `mount_point`: its program is named `nilfs_cleanerd` and its last two arguments
/// are the device and the mount point, as both fsage and mount.nilfs2 start it.
pub fn is_cleanerd_of(cmdline: &[u8], device: &Path, mount_point: &Path) -> bool {
    let args: Vec<&[u8]> = cmdline
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .collect();
    let [prog, .., dev, mp] = args.as_slice() else {
        return false;
    };
    let base = prog.rsplit(|&b| b == b'/').next().unwrap_or(prog);
    use std::os::unix::ffi::OsStrExt;
    base == CLEANERD.as_bytes()
        && *dev == device.as_os_str().as_bytes()
        && *mp == mount_point.as_os_str().as_bytes()
}

fn cmdline_of(pid: u32) -> Option<Vec<u8>> {
    fs::read(format!("/proc/{pid}/cmdline")).ok()
}

/// Whether `pid` is still the cleaner of `device` on `mount_point` (a zombie has an empty
/// command line and counts as gone).
fn still_serving(pid: u32, device: &Path, mount_point: &Path) -> bool {
    cmdline_of(pid).is_some_and(|c| is_cleanerd_of(&c, device, mount_point))
}

/// The PID the cleaner prints (`NILFS_CLEANERD_PID=N`), read in a thread of its own so that a
/// cleaner that stays in the foreground and prints nothing does not hold fsage up.
fn said_pid(out: Option<std::process::ChildStdout>) -> std::sync::mpsc::Receiver<u32> {
    let (tx, rx) = std::sync::mpsc::channel();
    if let Some(out) = out {
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if let Some(n) = parse_said_pid(&line) {
                    let _ = tx.send(n);
                    return;
                }
            }
        });
    }
    rx
}

/// How long a cleaner that neither exits nor prints its PID runs before fsage takes it to be in
/// the foreground.
const FOREGROUND_AFTER: Duration = Duration::from_secs(1);

/// `N` from the cleaner's `NILFS_CLEANERD_PID=N` line.
fn parse_said_pid(line: &str) -> Option<u32> {
    line.trim()
        .strip_prefix("NILFS_CLEANERD_PID=")?
        .parse()
        .ok()
}

fn signal(pid: u32, sig: rustix::process::Signal) {
    if let Some(p) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process(p, sig);
    }
}

impl Cleanerd {
    /// Starts the cleaner of the nilfs2 file system on `device` mounted at `mount_point`, asked to
    /// stay in the foreground (`--nofork`; nilfs-utils 2.2 forks anyway and prints the daemon's
    /// PID, which is then the one kept), in a process group of its own (a
    /// Ctrl-C at the terminal reaches fsage, which stops it in order), its messages in
    /// `DEVICE.log` beside its PID file in `pid_dir`.
    pub fn start(device: &Path, mount_point: &Path, pid_dir: &Path) -> Result<Cleanerd> {
        Cleanerd::start_program(Path::new(CLEANERD), device, mount_point, pid_dir)
    }

    /// [`Cleanerd::start`] with another program (a test's stand-in).
    fn start_program(
        program: &Path,
        device: &Path,
        mount_point: &Path,
        pid_dir: &Path,
    ) -> Result<Cleanerd> {
        let exe = if program.components().count() > 1 {
            program.to_path_buf()
        } else {
            fsage_sys::find_cmd(&program.to_string_lossy()).ok_or_else(|| {
                Error::input(format!(
                    "{}: not found; nilfs2 needs its cleaner: install nilfs-tools",
                    program.display()
                ))
            })?
        };
        // Root's alone: a PID file someone else wrote would name the process fsage signals.
        fsage_sys::safe::ensure_private_dir(pid_dir, "the directory of the cleaners' PID files")?;
        let pid_file = pid_file_of(pid_dir, device);
        let log = pid_file.with_extension("log");
        let log_file = fsage_sys::safe::open_or_create_nofollow(&log, 0o600)
            .and_then(|f| f.set_len(0).map(|()| f))
            .map_err(|e| Error::io(&log, "", e))?;
        use std::os::unix::process::CommandExt;
        let mut child = Command::new(&exe)
            .arg("--nofork")
            .arg("-p")
            .arg(PROTECTION_SECONDS.to_string())
            .arg(device)
            .arg(mount_point)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log_file)
            .process_group(0)
            .spawn()
            .map_err(|e| Error::operation(format!("{}: cannot start: {e}", exe.display())))?;
        let child_pid = child.id();
        let failed = |status: String| {
            let said = fs::read_to_string(&log).unwrap_or_default();
            let _ = fs::remove_file(&log);
            Error::operation(format!(
                "{} {} {}: exited at once ({status}): {}",
                CLEANERD,
                device.display(),
                mount_point.display(),
                said.trim()
            ))
        };
        // nilfs-utils 2.2 forks even when asked not to: the parent prints
        // `NILFS_CLEANERD_PID=N` (what mount.nilfs2 reads) and exits 0, and N serves the mount.
        // A cleaner that stays in the foreground is the child itself; one that cannot open the
        // file system exits at once with an error.
        let said = said_pid(child.stdout.take());
        let t0 = Instant::now();
        let (pid, child) = loop {
            if let Ok(n) = said.try_recv() {
                if n == child_pid {
                    break (n, Some(child));
                }
                let status = child.wait().map_err(|e| failed(e.to_string()))?;
                if !status.success() || !still_serving(n, device, mount_point) {
                    return Err(failed(format!("{status}; its daemon {n} is not serving")));
                }
                break (n, None);
            }
            match child.try_wait() {
                // The parent of a forking cleaner: its line may still be in the pipe.
                Ok(Some(status)) => match said.recv_timeout(Duration::from_secs(1)) {
                    Ok(n) if status.success() && still_serving(n, device, mount_point) => {
                        break (n, None)
                    }
                    _ => return Err(failed(status.to_string())),
                },
                Ok(None) if t0.elapsed() >= FOREGROUND_AFTER => break (child_pid, Some(child)),
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => return Err(failed(e.to_string())),
            }
        };
        let me = Cleanerd {
            pid,
            device: device.to_path_buf(),
            mount_point: mount_point.to_path_buf(),
            pid_file,
            child,
        };
        fsage_sys::write_atomic(
            &me.pid_file,
            pid_file_text(pid, device, mount_point).as_bytes(),
        )?;
        Ok(me)
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Leaves it running after fsage exits, for a mount left in place; its PID file stays so
    /// that [`stop_for`] finds it.
    pub fn release(mut self) {
        self.child = None;
        self.pid = 0;
    }

    /// SIGTERM, then SIGKILL if it has not exited within 10 s; waits until it has, and removes
    /// its PID file.
    pub fn stop(mut self) -> Result<()> {
        self.stop_now()
    }

    fn stop_now(&mut self) -> Result<()> {
        if self.pid == 0 {
            return Ok(());
        }
        let pid = std::mem::take(&mut self.pid);
        let r = match self.child.take() {
            Some(mut child) => stop_child(&mut child, pid),
            None => stop_pid(pid, &self.device, &self.mount_point),
        };
        let _ = fs::remove_file(&self.pid_file);
        let _ = fs::remove_file(self.pid_file.with_extension("log"));
        r
    }
}

impl Drop for Cleanerd {
    fn drop(&mut self) {
        if let Err(e) = self.stop_now() {
            eprintln!("fsage: cleanup: {e}");
        }
    }
}

/// Stops a cleaner that is this process's child, and reaps it.
fn stop_child(child: &mut Child, pid: u32) -> Result<()> {
    if let Ok(Some(_)) = child.try_wait() {
        return Ok(());
    }
    signal(pid, rustix::process::Signal::TERM);
    let t0 = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return Ok(()),
            Ok(None) if t0.elapsed() < STOP_GRACE => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Ok(());
            }
            Err(e) => {
                return Err(Error::operation(format!(
                    "{CLEANERD} (PID {pid}): waiting for it to exit: {e}"
                )))
            }
        }
    }
}

/// Stops a cleaner another fsage process started, once its command line shows it is the one.
fn stop_pid(pid: u32, device: &Path, mount_point: &Path) -> Result<()> {
    if !still_serving(pid, device, mount_point) {
        return Ok(());
    }
    signal(pid, rustix::process::Signal::TERM);
    let t0 = Instant::now();
    let mut killed = false;
    while still_serving(pid, device, mount_point) {
        if t0.elapsed() > STOP_GRACE && !killed {
            signal(pid, rustix::process::Signal::KILL);
            killed = true;
        } else if t0.elapsed() > 2 * STOP_GRACE {
            return Err(Error::operation(format!(
                "{CLEANERD} (PID {pid}) of {} on {}: still running after SIGTERM and SIGKILL",
                device.display(),
                mount_point.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// Stops the cleaner fsage started for `device` mounted at `mount_point` (found from its PID
/// file in `pid_dir`, checked against its command line); `Ok(Some(pid))` when it stopped one,
/// `Ok(None)` when fsage started none there (a stale PID file is removed).
pub fn stop_for(device: &Path, mount_point: &Path, pid_dir: &Path) -> Result<Option<u32>> {
    let pid_file = pid_file_of(pid_dir, device);
    let Ok(text) = fs::read_to_string(&pid_file) else {
        return Ok(None);
    };
    let found = parse_pid_file(&text)
        .filter(|(_, d, m)| d == device && m == mount_point)
        .map(|(pid, _, _)| pid)
        .filter(|&pid| still_serving(pid, device, mount_point));
    let r = match found {
        Some(pid) => stop_pid(pid, device, mount_point).map(|()| Some(pid)),
        None => Ok(None),
    };
    if r.is_ok() {
        let _ = fs::remove_file(&pid_file);
        let _ = fs::remove_file(pid_file.with_extension("log"));
    }
    r
}

/// PIDs of the cleaners serving `device` on `mount_point` that fsage did not start (started by
/// mount.nilfs2, say): named in a refusal, never signalled.
pub fn others_serving(device: &Path, mount_point: &Path) -> Vec<u32> {
    let Ok(rd) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| still_serving(pid, device, mount_point))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cleanerd_is_known_by_its_program_device_and_mount_point() {
        let dev = Path::new("/dev/loop7");
        let mp = Path::new("/dev/shm/a.img.mnt");
        let ours = b"nilfs_cleanerd\0--nofork\0-p\x000\0/dev/loop7\0/dev/shm/a.img.mnt\0";
        assert!(is_cleanerd_of(ours, dev, mp));
        let by_mount = b"/sbin/nilfs_cleanerd\0-n\0/dev/loop7\0/dev/shm/a.img.mnt\0";
        assert!(is_cleanerd_of(by_mount, dev, mp));
        // Another device, another mount point, another program, a zombie (empty).
        let other_dev = b"nilfs_cleanerd\0/dev/loop8\0/dev/shm/a.img.mnt\0";
        assert!(!is_cleanerd_of(other_dev, dev, mp));
        let other_mp = b"nilfs_cleanerd\0/dev/loop7\0/mnt\0";
        assert!(!is_cleanerd_of(other_mp, dev, mp));
        let other_prog = b"sleep\0/dev/loop7\0/dev/shm/a.img.mnt\0";
        assert!(!is_cleanerd_of(other_prog, dev, mp));
        let not_quite = b"nilfs_cleanerd.sh\0/dev/loop7\0/dev/shm/a.img.mnt\0";
        assert!(!is_cleanerd_of(not_quite, dev, mp));
        assert!(!is_cleanerd_of(b"", dev, mp));
        assert!(!is_cleanerd_of(b"nilfs_cleanerd\0", dev, mp));
    }

    #[test]
    fn a_pid_file_reads_back() {
        let t = pid_file_text(4242, Path::new("/dev/loop3"), Path::new("/mnt/x y"));
        assert_eq!(
            parse_pid_file(&t),
            Some((4242, "/dev/loop3".into(), "/mnt/x y".into()))
        );
        assert_eq!(parse_pid_file("not a pid\n/dev/loop3\n/mnt\n"), None);
        assert_eq!(parse_pid_file("12\n/dev/loop3\n"), None);
        assert_eq!(
            pid_file_of(Path::new("/run/x"), Path::new("/dev/loop3")),
            Path::new("/run/x/loop3.pid")
        );
    }

    /// A stand-in for nilfs_cleanerd started as fsage starts it (a child): a script named so.
    fn stand_in(dir: &Path) -> PathBuf {
        script(dir, "#!/bin/sh\nexec sleep 60\n")
    }

    /// An executable `nilfs_cleanerd` in `dir` running `text`.
    fn script(dir: &Path, text: &str) -> PathBuf {
        let p = dir.join(CLEANERD);
        fsage_testkit::write_executable(&p, text);
        p
    }

    #[test]
    fn a_started_cleaner_is_stopped_by_its_pid_and_its_pid_file_goes() {
        let dir = fsage_testkit::tmp();
        let pid_dir = dir.path().join("pids");
        let prog = stand_in(dir.path());
        let dev = Path::new("/dev/loop-test");
        let mp = dir.path();
        let c = Cleanerd::start_program(&prog, dev, mp, &pid_dir).unwrap();
        let pid = c.pid();
        let pid_file = pid_dir.join("loop-test.pid");
        let text = fs::read_to_string(&pid_file).unwrap();
        assert_eq!(parse_pid_file(&text).unwrap(), (pid, dev.into(), mp.into()));
        assert!(Path::new(&format!("/proc/{pid}")).exists());
        c.stop().unwrap();
        // Reaped: no process, not even a zombie.
        assert!(!Path::new(&format!("/proc/{pid}")).exists(), "{pid} left");
        assert!(!pid_file.exists());
    }

    #[test]
    fn a_forking_cleaner_is_kept_by_the_pid_it_prints() {
        // As nilfs-utils 2.2 does even with --nofork: the daemon runs on, the parent prints
        // its PID and exits 0.
        let dir = fsage_testkit::tmp();
        let p = script(
            dir.path(),
            "#!/bin/bash\n(exec -a nilfs_cleanerd sh -c 'trap \"kill \\$!; exit 0\" TERM; sleep 60 & wait' x \"$4\" \"$5\" </dev/null >/dev/null 2>&1) &\nsleep 0.2\necho \"NILFS_CLEANERD_PID=$!\"\n",
        );
        let dev = Path::new("/dev/loop-fork");
        let mp = dir.path();
        let c = Cleanerd::start_program(&p, dev, mp, dir.path()).unwrap();
        let pid = c.pid();
        assert!(c.child.is_none(), "the exited parent was kept");
        assert!(still_serving(pid, dev, mp), "{pid} is not the daemon");
        c.stop().unwrap();
        assert!(!still_serving(pid, dev, mp), "{pid} still runs");
        assert!(!dir.path().join("loop-fork.pid").exists());
    }

    #[test]
    fn the_printed_pid_is_read_from_its_line() {
        assert_eq!(parse_said_pid("NILFS_CLEANERD_PID=1234\n"), Some(1234));
        assert_eq!(parse_said_pid("NILFS_CLEANERD_PID="), None);
        assert_eq!(parse_said_pid("something else"), None);
    }

    #[test]
    fn a_cleaner_that_exits_at_once_is_an_error_with_its_message() {
        let dir = fsage_testkit::tmp();
        let p = script(
            dir.path(),
            "#!/bin/sh\necho 'cannot open the file system' >&2\nexit 1\n",
        );
        let e = Cleanerd::start_program(&p, Path::new("/dev/loop-x"), dir.path(), dir.path())
            .unwrap_err();
        assert!(e.message.contains("cannot open the file system"), "{e}");
        assert!(!dir.path().join("loop-x.pid").exists());
    }

    #[test]
    fn stop_for_never_signals_a_process_that_is_not_the_cleaner() {
        let dir = fsage_testkit::tmp();
        let dev = Path::new("/dev/loop-y");
        let mp = dir.path();
        // A process of this test's own, not a cleaner, behind a PID file that names it.
        let mut other = Command::new("sleep").arg("30").spawn().unwrap();
        let pid_file = pid_file_of(dir.path(), dev);
        fs::write(&pid_file, pid_file_text(other.id(), dev, mp)).unwrap();
        assert_eq!(stop_for(dev, mp, dir.path()).unwrap(), None);
        assert!(
            other.try_wait().unwrap().is_none(),
            "a process that is not the cleaner was stopped"
        );
        assert!(!pid_file.exists(), "a stale PID file stays");
        assert!(others_serving(dev, mp).is_empty());
        other.kill().unwrap();
        other.wait().unwrap();
        // No PID file: nothing to stop.
        assert_eq!(stop_for(dev, mp, dir.path()).unwrap(), None);
    }

    #[test]
    fn stop_for_stops_the_cleaner_its_pid_file_names() {
        let dir = fsage_testkit::tmp();
        let dev = Path::new("/dev/loop-z");
        let mp = dir.path();
        // A process whose command line is `nilfs_cleanerd -c SCRIPT x DEV MP`, as another fsage
        // process's cleaner looks from here.
        // It touches READY once its TERM trap is set: a TERM before that would kill it, not
        // stop it cleanly, and fail the test for the stand-in's sake.
        let ready = dir.path().join("ready");
        let mut c = Command::new("bash")
            .arg("-c")
            .arg(r#"exec -a nilfs_cleanerd sh -c 'trap "kill \$!; exit 0" TERM; sleep 30 & : > "$READY"; wait' x "$0" "$1""#)
            .arg(dev)
            .arg(mp)
            .env("READY", &ready)
            .spawn()
            .unwrap();
        let pid = c.id();
        let t0 = Instant::now();
        while !(ready.exists() && still_serving(pid, dev, mp)) {
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "the stand-in never started"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        // The shell's child for `sleep` has the shell's command line until it execs: wait for it.
        while others_serving(dev, mp) != vec![pid] {
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "{:?} serve, not only {pid}",
                others_serving(dev, mp)
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        fs::write(pid_file_of(dir.path(), dev), pid_file_text(pid, dev, mp)).unwrap();
        // A PID file of another mount point names it, but does not match: left alone.
        let elsewhere = dir.path().join("elsewhere");
        assert_eq!(stop_for(dev, &elsewhere, dir.path()).unwrap(), None);
        assert!(c.try_wait().unwrap().is_none());
        fs::write(pid_file_of(dir.path(), dev), pid_file_text(pid, dev, mp)).unwrap();
        assert_eq!(stop_for(dev, mp, dir.path()).unwrap(), Some(pid));
        let status = c.wait().unwrap();
        assert!(status.success(), "{status}: not stopped by SIGTERM");
        assert!(!pid_file_of(dir.path(), dev).exists());
    }
}

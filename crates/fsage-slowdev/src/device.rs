//! Making, changing, inspecting and destroying devices, from the caller's side.

use crate::control::{call, Request, Response, LOCK_FD_VAR};
use crate::registry::{
    finish_dir, lazy_umount, mountpoint_of, read_nofollow, read_record, refuses_set, write_record,
    DeviceRecord, Registry,
};
use crate::{Backing, DeviceSpec, DeviceStats, Error, Latencies, Result};
pub use fsage_results::slowdev::DeviceInfo;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const START_TIMEOUT: Duration = Duration::from_secs(20);
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
const STOP_TIMEOUT: Duration = Duration::from_secs(60);

/// A device fsage made, found in (or just added to) the registry.
#[derive(Debug)]
pub struct SlowDevice {
    dir: PathBuf,
    record: DeviceRecord,
    /// The daemon, when this process started it (so that it is reaped).
    child: Option<Child>,
}

impl SlowDevice {
    /// Makes a device: checks the backing store, registers the device, starts its daemon (a
    /// process of its own, in a session of its own) and waits until the loop device is attached.
    pub fn create(spec: &DeviceSpec) -> Result<SlowDevice> {
        spec.check()?;
        // The image's lock, held until the device is registered and attached: two `dev create`
        // of one image at once would both pass the registry check below and make two devices.
        // The daemon is handed the lock and holds it while it serves the image.
        let registry = Registry::new(&spec.registry);
        let lock = match &spec.backing {
            Backing::Image(p) | Backing::NewImage { path: p, .. } => {
                match fsage_sys::lock::lock_target(p) {
                    Ok(l) => Some(l),
                    // The usual holder is a device of ours serving it: say so.
                    Err(e) => {
                        return Err(match in_registry(&registry, p) {
                            Some(other) => already_served(p, &other),
                            None => fsage_sys::lock::refusal(e, p, "the image"),
                        })
                    }
                }
            }
            Backing::Scratch { .. } => None,
        };
        // The backing file, and whether destroy removes it.
        let (backing, size, made) = match &spec.backing {
            Backing::Image(p) => {
                let m = std::fs::metadata(p).map_err(|e| Error::io(p, "", e))?;
                if !m.is_file() {
                    return Err(Error::input(format!(
                        "{}: not a regular file (give an image file)",
                        p.display()
                    )));
                }
                if m.len() < 4096 || m.len() % 512 != 0 {
                    return Err(Error::input(format!(
                        "{}: {} bytes; an image must be at least 4 KiB and a multiple of 512 bytes",
                        p.display(),
                        m.len()
                    )));
                }
                fsage_lab::check_target_safe(p, true)?;
                (absolute(p)?, m.len(), None)
            }
            Backing::NewImage { path, size } => {
                make_sparse(path, *size, 0o666, "cannot make the image")?;
                let abs = absolute(path).inspect_err(|_| {
                    let _ = std::fs::remove_file(path);
                })?;
                (abs, *size, Some(path.clone()))
            }
            Backing::Scratch { size } => {
                // A random name, made exclusively: nobody can plant it.
                let path = PathBuf::from(format!(
                    "/dev/shm/fsage-dev-{}.img",
                    fsage_sys::safe::random_hex()
                ));
                make_sparse(&path, *size, 0o600, "cannot make the scratch file")?;
                (path.clone(), *size, Some(path))
            }
        };
        let undo_backing = |made: &Option<PathBuf>| {
            if let Some(p) = made {
                let _ = std::fs::remove_file(p);
            }
        };
        if let Some(other) = in_registry(&registry, &backing) {
            undo_backing(&made);
            return Err(already_served(&backing, &other));
        }
        // A model that cannot be built for this size (a disk smaller than the device) is bad
        // input, found before anything runs.
        let mut state_file = None;
        let mut state_note = None;
        if let Some(m) = &spec.model {
            match m.build(size) {
                Err(e) => {
                    undo_backing(&made);
                    return Err(e);
                }
                Ok(built) if built.save_state().is_some() => {
                    if !matches!(spec.backing, Backing::Scratch { .. }) {
                        match check_saved_state(built, &backing, spec.fresh_state) {
                            Ok((file, note)) => {
                                state_file = Some(file);
                                state_note = Some(note);
                            }
                            Err(e) => {
                                undo_backing(&made);
                                return Err(e);
                            }
                        }
                    } else {
                        state_note = Some("a fresh drive (a scratch image keeps no state)".into());
                    }
                }
                Ok(_) => {}
            }
        }
        let (latencies, bandwidth, queue_depth) = spec.fixed_timing();
        let (name, dir) = match registry.allocate() {
            Ok(x) => x,
            Err(e) => {
                undo_backing(&made);
                return Err(e);
            }
        };
        let record = DeviceRecord {
            name,
            device: None,
            daemon_pid: None,
            fuse_mountpoint: mountpoint_of(&dir),
            backing_file: backing,
            remove_backing: matches!(spec.backing, Backing::Scratch { .. }),
            size,
            latencies,
            bandwidth,
            queue_depth,
            threads: spec.threads,
            realtime: spec.realtime,
            created_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            model: spec.model.clone(),
            model_thread: spec.model_thread,
            io_flusher_error: None,
            state_file,
            state_note,
            unwritten_reads: spec.unwritten_reads,
        };
        let started =
            write_record(&dir, &record).and_then(|()| start_daemon(spec, &dir, lock.as_ref()));
        let mut child = match started {
            Ok(c) => c,
            Err(e) => {
                cleanup_dead(&dir, &record);
                undo_backing(&made);
                return Err(e);
            }
        };
        // Wait for the daemon to attach the loop device and say so in the record.
        let t0 = Instant::now();
        loop {
            if let Ok(r) = read_record(&dir) {
                if r.device.is_some() {
                    return Ok(SlowDevice {
                        dir,
                        record: r,
                        child: Some(child),
                    });
                }
            }
            let exited = child.try_wait().ok().flatten();
            if exited.is_some() || t0.elapsed() > START_TIMEOUT {
                if exited.is_none() {
                    let _ = child.kill();
                }
                let _ = child.wait();
                let log = std::fs::read_to_string(dir.join("daemon.log")).unwrap_or_default();
                cleanup_dead(&dir, &record);
                undo_backing(&made);
                return Err(Error::operation(format!(
                    "the device's daemon {}: {}",
                    match exited {
                        Some(st) => format!("exited ({st})"),
                        None => format!("did not start within {}s", START_TIMEOUT.as_secs()),
                    },
                    log.trim()
                )));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The device named `which` (name, `/dev/loopN` or `loopN`) in `registry`.
    pub fn open(registry: &Registry, which: &str) -> Result<SlowDevice> {
        let (dir, record) = registry.find(which)?;
        Ok(SlowDevice {
            dir,
            record,
            child: None,
        })
    }

    /// The block device (`/dev/loopN`).
    pub fn path(&self) -> &Path {
        self.record.device.as_deref().unwrap_or(Path::new(""))
    }

    pub fn name(&self) -> &str {
        &self.record.name
    }

    pub fn record(&self) -> &DeviceRecord {
        &self.record
    }

    /// Is the daemon running? (Checked by its recorded PID and command line, so a reused PID
    /// does not count.)
    pub fn alive(&self) -> bool {
        daemon_alive(&self.dir, &self.record)
    }

    /// Changes the latencies (and bandwidth) of the live device; requests already in flight
    /// keep the delay they were given. A device on a fixed-latency model becomes a device of
    /// these latencies; one whose timing comes from another model is refused.
    pub fn set_latency(&mut self, latencies: Latencies, bandwidth: Option<u64>) -> Result<()> {
        if bandwidth == Some(0) {
            return Err(Error::input("bandwidth 0: give a positive rate"));
        }
        if let Some(why) = refuses_set(&self.record) {
            return Err(Error::input(why));
        }
        call(
            &self.dir,
            &Request::Set {
                latencies,
                bandwidth,
            },
            CALL_TIMEOUT,
        )?;
        self.record.latencies = latencies;
        self.record.bandwidth = bandwidth;
        self.record.model = None;
        Ok(())
    }

    /// Puts the model's drive in steady state (an SSD: the whole device written in order, then
    /// `overwrites` times its capacity at random), at memory speed; returns what was done.
    pub fn precondition(&self, overwrites: f64, seed: u64) -> Result<String> {
        if !self.alive() {
            return Err(Error::operation(format!(
                "device {}: its daemon is not running (destroy it)",
                self.record.name
            )));
        }
        match call(
            &self.dir,
            &Request::Precondition { overwrites, seed },
            Duration::from_secs(3600),
        )? {
            Response::Done { message } => Ok(message),
            other => Err(Error::operation(format!(
                "device {}: unexpected answer {other:?}",
                self.record.name
            ))),
        }
    }

    /// What the daemon served, with the kernel's counters for the loop device.
    pub fn stats(&self) -> Result<DeviceStats> {
        self.stats_inner(false)
    }

    /// The statistics so far, and counting starts again (daemon and kernel alike).
    pub fn stats_and_reset(&self) -> Result<DeviceStats> {
        self.stats_inner(true)
    }

    fn stats_inner(&self, reset: bool) -> Result<DeviceStats> {
        if !self.alive() {
            return Err(Error::operation(format!(
                "device {}: its daemon is not running (destroy it)",
                self.record.name
            )));
        }
        match call(&self.dir, &Request::Stats { reset }, CALL_TIMEOUT)? {
            Response::Stats { stats } => Ok(*stats),
            other => Err(Error::operation(format!(
                "device {}: unexpected answer {other:?}",
                self.record.name
            ))),
        }
    }

    /// Detaches the loop device, unmounts the FUSE file system, stops the daemon, and removes
    /// the device from the registry (and its scratch file). Refuses a device that is mounted
    /// unless `force`: then the daemon stops anyway and the mounted file system's I/O fails.
    pub fn destroy(mut self, force: bool) -> Result<()> {
        let r = self.destroy_inner(force);
        if let Some(mut c) = self.child.take() {
            if r.is_ok() {
                let _ = c.wait();
            } else {
                // Reap it later if it is still running: do not block here.
                std::thread::spawn(move || c.wait());
            }
        }
        r
    }

    fn destroy_inner(&mut self, force: bool) -> Result<()> {
        if self.record.daemon_pid.is_none() {
            self.await_starting_daemon();
        }
        let rec = self.record.clone();
        // A device another command is mounting or aging is refused, naming it; forced (and
        // cleanup, which forces) goes ahead as it goes ahead over a mount.
        let _lock = match &rec.device {
            Some(dev) if !force => Some(fsage_sys::lock::lock_target_or_refuse(
                dev,
                "the slow device",
            )?),
            _ => None,
        };
        if let Some(dev) = &rec.device {
            if let Ok(m) = fsage_sys::mounts_of_device(dev) {
                if let Some(first) = m.first() {
                    if !force {
                        return Err(Error::input(format!(
                            "{} (device {}): mounted on {}; unmount it first, or force (its I/O \
                             then fails)",
                            dev.display(),
                            rec.name,
                            first.mount_point.display()
                        ))
                        .with_remedy(fsage_sys::Remedy::Force));
                    }
                }
            }
        }
        if self.alive() {
            match call(&self.dir, &Request::Stop { force }, STOP_TIMEOUT) {
                Ok(_) => {
                    if let Some(pid) = rec.daemon_pid {
                        wait_pid_gone(pid, self.child.as_mut(), Duration::from_secs(10));
                    }
                    if self.dir.exists() {
                        cleanup_dead(&self.dir, &rec);
                    }
                    return Ok(());
                }
                Err(e) if e.blame == fsage_sys::Blame::Input => return Err(e),
                Err(e) => {
                    // The daemon does not answer: stop it by its recorded PID (checked again).
                    eprintln!("fsage: {e}; killing the daemon");
                    if let Some(pid) = rec.daemon_pid {
                        if daemon_alive(&self.dir, &rec) {
                            kill_checked(pid, || daemon_alive(&self.dir, &rec));
                            wait_pid_gone(pid, self.child.as_mut(), Duration::from_secs(10));
                        }
                    }
                }
            }
        }
        cleanup_dead(&self.dir, &rec);
        Ok(())
    }

    /// A device whose record names no daemon may still have one starting (the fsage that made
    /// it was killed before the daemon recorded itself): wait for it to record itself, so that
    /// destroy stops it, or stop it by its (verified) PID if it never does. Without this the
    /// daemon would outlive the removal of its record and keep its backing file.
    fn await_starting_daemon(&mut self) {
        let Some(pid) = starting_daemon(&self.dir) else {
            return;
        };
        let t0 = Instant::now();
        while t0.elapsed() < START_TIMEOUT {
            if let Ok(r) = read_record(&self.dir) {
                if r.daemon_pid.is_some() {
                    self.record = r;
                    return;
                }
            }
            if !serves(pid, &self.dir) {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if serves(pid, &self.dir) {
            kill_checked(pid, || serves(pid, &self.dir));
            wait_pid_gone(pid, None, Duration::from_secs(10));
        }
    }

    /// A guard that destroys the device (forcibly) when dropped.
    pub fn into_guard(self) -> DeviceGuard {
        DeviceGuard(Some(self))
    }
}

/// Destroys its device when dropped, whatever happened (tests, the experiment runner).
#[derive(Debug)]
pub struct DeviceGuard(Option<SlowDevice>);

impl DeviceGuard {
    pub fn device(&self) -> &SlowDevice {
        self.0.as_ref().expect("guard holds a device until dropped")
    }
    pub fn device_mut(&mut self) -> &mut SlowDevice {
        self.0.as_mut().expect("guard holds a device until dropped")
    }
    pub fn path(&self) -> &Path {
        self.device().path()
    }
    /// Destroys now, reporting errors.
    pub fn destroy(mut self) -> Result<()> {
        match self.0.take() {
            Some(d) => d.destroy(false),
            None => Ok(()),
        }
    }
}

impl Drop for DeviceGuard {
    fn drop(&mut self) {
        if let Some(d) = self.0.take() {
            if let Err(e) = d.destroy(true) {
                eprintln!("fsage-slowdev: destroying a device on drop: {e}");
            }
        }
    }
}

/// Every device in `registry`, with whether its daemon runs and how many requests it served.
pub fn list_devices(registry: &Registry) -> Vec<DeviceInfo> {
    registry
        .list()
        .into_iter()
        .map(|(dir, record)| {
            let alive = daemon_alive(&dir, &record);
            let mounted_on = record
                .device
                .as_deref()
                .and_then(|d| fsage_sys::mounts_of_device(d).ok())
                .unwrap_or_default()
                .into_iter()
                .map(|m| m.mount_point)
                .collect();
            let stats = if alive {
                match call(
                    &dir,
                    &Request::Stats { reset: false },
                    Duration::from_secs(2),
                ) {
                    Ok(Response::Stats { stats }) => Some(stats),
                    _ => None,
                }
            } else {
                None
            };
            DeviceInfo {
                record,
                alive,
                mounted_on,
                requests: stats
                    .as_ref()
                    .map(|s| s.kinds.iter().map(|k| k.requests).sum()),
                model_stats: stats.and_then(|s| s.model).and_then(|m| m.stats),
            }
        })
        .collect()
}

/// Destroys every device in `registry`; one result per device, by name.
pub fn destroy_all(registry: &Registry, force: bool) -> Vec<(String, Result<()>)> {
    registry
        .list()
        .into_iter()
        .map(|(dir, record)| {
            let name = record.name.clone();
            let d = SlowDevice {
                dir,
                record,
                child: None,
            };
            (name, d.destroy(force))
        })
        .collect()
}

/// Makes a new sparse file of `size` bytes at `path` with `mode` (less the umask), exclusively
/// and never through a link. A size the file system there cannot hold (beyond its largest file)
/// is bad input, and nothing is left behind.
fn make_sparse(path: &Path, size: u64, mode: u32, what: &str) -> Result<()> {
    let f = fsage_sys::safe::create_new(path, mode).map_err(|e| Error::io(path, what, e))?;
    let Err(e) = f.set_len(size) else {
        return Ok(());
    };
    drop(f);
    let _ = std::fs::remove_file(path);
    let too_large = matches!(e.raw_os_error(), Some(libc::EFBIG) | Some(libc::EINVAL))
        || e.kind() == std::io::ErrorKind::InvalidInput;
    if too_large {
        let fs = path
            .parent()
            .and_then(|d| {
                fsage_sys::fs_stat(if d.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    d
                })
                .ok()
            })
            .map_or("its file system".to_string(), |st| st.type_name());
        return Err(Error::input(format!(
            "{}: size {}: larger than the largest file {fs} can hold ({e}); a sparse image takes \
             only the blocks written, but its size must fit the file system",
            path.display(),
            fsage_units::format_size(size)
        )));
    }
    Err(Error::io(path, "", e))
}

/// What a user should know about a new sparse image of `size` bytes at `image`: that it is
/// larger than the space free where it lives (writes beyond that space will fail), if it is.
pub fn sparse_note(image: &Path, size: u64) -> Option<String> {
    let st = fsage_sys::fs_stat(image).ok()?;
    (size > st.available).then(|| {
        format!(
            "note: {} is a sparse image of {} on {} with {} free: it holds only what is \
             written, and writes beyond the free space will fail",
            image.display(),
            fsage_units::format_size(size),
            st.type_name(),
            fsage_units::format_size(st.available)
        )
    })
}

fn absolute(p: &Path) -> Result<PathBuf> {
    p.canonicalize().map_err(|e| Error::io(p, "", e))
}

/// The name of the registered device whose backing file is `file` (same device and inode).
fn already_served(file: &Path, device: &str) -> Error {
    Error::input(format!(
        "{}: already the backing file of device {device}",
        file.display()
    ))
}

fn in_registry(registry: &Registry, file: &Path) -> Option<String> {
    let m = std::fs::metadata(file).ok()?;
    registry.list().into_iter().find_map(|(_, r)| {
        std::fs::metadata(&r.backing_file)
            .ok()
            .filter(|o| o.dev() == m.dev() && o.ino() == m.ino())
            .map(|_| r.name)
    })
}

fn start_daemon(
    spec: &DeviceSpec,
    dir: &Path,
    lock: Option<&fsage_sys::lock::Lock>,
) -> Result<Child> {
    let argv: Vec<OsString> = match &spec.daemon_cmd {
        Some(v) if !v.is_empty() => v.clone(),
        _ => {
            let exe = std::env::current_exe().map_err(|e| {
                Error::operation(format!("cannot find the running executable: {e}"))
            })?;
            vec![exe.into(), "dev".into(), "serve".into()]
        }
    };
    let log_path = dir.join("daemon.log");
    let log =
        fsage_sys::safe::create_new(&log_path, 0o600).map_err(|e| Error::io(&log_path, "", e))?;
    let log2 = log.try_clone().map_err(|e| Error::io(&log_path, "", e))?;
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2);
    // The image's lock goes with the daemon: a copy of its open file, kept open across exec
    // (only in the child), named in the environment.
    let handed = lock
        .map(|l| l.hand_on())
        .transpose()
        .map_err(|e| Error::operation(format!("cannot hand the image's lock on: {e}")))?;
    let raw = handed.as_ref().map(|fd| {
        use std::os::fd::AsRawFd;
        fd.as_raw_fd()
    });
    match raw {
        Some(fd) => cmd.env(LOCK_FD_VAR, fd.to_string()),
        None => cmd.env_remove(LOCK_FD_VAR),
    };
    // SAFETY: setsid and fcntl are async-signal-safe; the daemon leaves fsage's session and
    // process group, so that a Ctrl-C or a dying fsage does not take it (and the device's I/O)
    // down; the lock's descriptor, open in this process until after the spawn, stays open
    // across the exec.
    unsafe {
        cmd.pre_exec(move || {
            rustix::process::setsid()?;
            if let Some(fd) = raw {
                let fd = std::os::fd::BorrowedFd::borrow_raw(fd);
                rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::empty())?;
            }
            Ok(())
        });
    }
    let spawned = cmd.spawn();
    drop(handed);
    spawned.map_err(|e| {
        Error::operation(format!(
            "cannot start the daemon {}: {e}",
            Path::new(&argv[0]).display()
        ))
    })
}

/// Is the recorded daemon running? Its command line must name the device's directory.
fn daemon_alive(dir: &Path, rec: &DeviceRecord) -> bool {
    let Some(pid) = rec.daemon_pid else {
        return false;
    };
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let want = dir.as_os_str().as_encoded_bytes();
    cmdline.split(|&b| b == 0).any(|a| a == want)
}

/// The PID of a daemon serving `dir`, found by its command line (`... dev serve DIR`, or the
/// test daemon `fsage-slowdevd DIR`), for a daemon that has not recorded its PID yet.
fn starting_daemon(dir: &Path) -> Option<u32> {
    let me = std::process::id();
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        (pid != me && serves(pid, dir)).then_some(pid)
    })
}

/// Is process `pid` a daemon serving `dir`: its command line exactly `fsage dev serve DIR` (by
/// the path fsage runs from, or a program named `fsage`) or `fsage-slowdevd DIR`, the program
/// it runs matching?
fn serves(pid: u32, dir: &Path) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let Ok(exe) = std::fs::read_link(format!("/proc/{pid}/exe")) else {
        return false;
    };
    let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
    let args = args.strip_suffix(&[&b""[..]]).unwrap_or(&args);
    let want = dir.as_os_str().as_encoded_bytes();
    let name = |p: &Path| p.file_name().map(|n| n.as_encoded_bytes().to_vec());
    match args {
        [_, b"dev", b"serve", d] if *d == want => {
            std::env::current_exe().is_ok_and(|me| me == exe)
                || name(&exe) == Some(b"fsage".to_vec())
        }
        [prog, d] if *d == want => {
            name(Path::new(std::ffi::OsStr::from_bytes(prog))) == Some(b"fsage-slowdevd".to_vec())
                && name(&exe) == Some(b"fsage-slowdevd".to_vec())
        }
        _ => false,
    }
}

/// Sends SIGKILL to `pid` if `check` still holds once the process is pinned by a pidfd (so that
/// a PID reused in between is never signalled).
fn kill_checked(pid: u32, check: impl Fn() -> bool) {
    let Some(p) = rustix::process::Pid::from_raw(pid as i32) else {
        return;
    };
    let Ok(fd) = rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()) else {
        return;
    };
    if check() {
        let _ = rustix::process::pidfd_send_signal(&fd, rustix::process::Signal::KILL);
    }
}

fn wait_pid_gone(pid: u32, child: Option<&mut Child>, timeout: Duration) {
    if let Some(c) = child {
        let t0 = Instant::now();
        while t0.elapsed() < timeout {
            if c.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        return;
    }
    let t0 = Instant::now();
    while t0.elapsed() < timeout {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            // A zombie (state Z) has exited.
            Ok(s)
                if !s
                    .rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z') => {}
            _ => return,
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Cleans up after a daemon that is gone: unmounts its FUSE mount (ours: in the device's own
/// directory), waits briefly for the auto-clearing loop device to go, removes the directory.
fn cleanup_dead(dir: &Path, rec: &DeviceRecord) {
    let mnt = &rec.fuse_mountpoint;
    if mnt.starts_with(dir) && fsage_sys::is_mount_point(mnt) {
        let _ = lazy_umount(mnt);
    }
    if let Some(dev) = &rec.device {
        let _ = fsage_lab::loopdev::wait_detached(dev, 0, Duration::from_secs(2));
    }
    finish_dir(dir, rec);
}

/// Where a device on `image` keeps its model's drive state, and what it starts from: the state
/// saved there (checked now, so that a damaged or mismatched file is refused before anything
/// runs), or a fresh drive (asked for, none saved, or the last device on the image did not stop
/// cleanly).
fn check_saved_state(
    mut model: Box<dyn fsage_device::DeviceModel>,
    image: &std::path::Path,
    fresh: bool,
) -> Result<(PathBuf, String)> {
    let file = crate::registry::state_file_of(image);
    let mark = crate::registry::in_use_mark(&file);
    if fresh {
        return Ok((file, "a fresh drive (asked for)".into()));
    }
    let what = "the drive state beside the image";
    if fsage_sys::safe::lstat_own_name(&file, what)?.is_none() {
        let note = if mark.exists() {
            format!(
                "a fresh drive: the last device on this image did not stop cleanly, so its \
                 drive state ({}) no longer matches the image",
                mark.display()
            )
        } else {
            "a fresh drive (no saved drive state beside the image)".into()
        };
        return Ok((file, note));
    }
    let bytes = read_nofollow(&file)
        .map_err(|e| Error::io(&file, "cannot read the saved drive state", e))?;
    model.load_state(&bytes).map_err(|e| {
        Error::input(format!(
            "{}: cannot use this saved drive state: {e} (--fresh-ftl starts from an erased drive)",
            file.display()
        ))
    })?;
    Ok((
        file.clone(),
        format!("the drive state saved in {}", file.display()),
    ))
}

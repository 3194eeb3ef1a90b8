//! The daemon: serves the backing file as `mnt/disk` through FUSE on several threads, delays each
//! answer by the device's model (`modeled`; a device made with latencies runs the fixed-latency
//! model), attaches the loop device (direct I/O) on that file and holds it, and
//! answers the control socket until told to stop.

use crate::control::{socket_path, Request, Response, LOCK_FD_VAR};
use crate::modeled::{Deferred, Modeled};
use crate::registry::{
    finish_dir, lazy_umount, read_nofollow, read_record, refuses_set, write_record, DeviceRecord,
};
use crate::sched::set_realtime;
use crate::stats::{read_diskstats, Collector, DeviceStats, DiskStats, Kind, ModelInfo};
use crate::timing::{Answer, Completer};
use crate::{Error, Result};
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, InitFlags,
    KernelConfig, LockOwner, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyWrite, Request as FuseRequest, WriteFlags,
};
use std::ffi::OsStr;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::FileExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

const DISK_INO: INodeNo = INodeNo(2);
const DISK_NAME: &str = "disk";
const TTL: Duration = Duration::from_secs(3600);

struct Shared {
    file: File,
    size: u64,
    /// Where answers get their times.
    model: Arc<Modeled>,
    stats: Arc<Collector>,
    created: SystemTime,
}

struct SlowFs {
    s: Arc<Shared>,
}

impl SlowFs {
    fn attr(&self, ino: INodeNo) -> FileAttr {
        let s = &self.s;
        let (kind, perm, size, nlink) = if ino == DISK_INO {
            (FileType::RegularFile, 0o600, s.size, 1)
        } else {
            (FileType::Directory, 0o700, 0, 2)
        };
        FileAttr {
            ino,
            size,
            blocks: size.div_ceil(512),
            atime: s.created,
            mtime: s.created,
            ctime: s.created,
            crtime: s.created,
            kind,
            perm,
            nlink,
            uid: 0,
            gid: 0,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }

    fn other(&self) {
        self.s.stats.other.fetch_add(1, Relaxed);
    }

    fn error(&self) {
        self.s.stats.errors.fetch_add(1, Relaxed);
    }

    /// Answers a request of `bytes` at `offset` that arrived at `arrival`, when the device's
    /// timing says it completes.
    fn delayed(&self, arrival: Instant, kind: Kind, offset: u64, bytes: u64, answer: Answer) {
        self.delayed_data(arrival, kind, offset, bytes, None, answer)
    }

    /// [`SlowFs::delayed`] for a write whose data a model may look at (a compressing drive's).
    fn delayed_data(
        &self,
        arrival: Instant,
        kind: Kind,
        offset: u64,
        bytes: u64,
        data: Option<&[u8]>,
        answer: Answer,
    ) {
        self.s
            .model
            .submit(arrival, kind, offset, bytes, data, answer)
    }
}

fn errno_of(e: &std::io::Error) -> Errno {
    Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))
}

impl Filesystem for SlowFs {
    fn init(&mut self, _req: &FuseRequest, config: &mut KernelConfig) -> std::io::Result<()> {
        // Asynchronous direct I/O lets the loop device keep many requests in flight; the
        // background limit must exceed any queue depth a benchmark uses.
        if let Err(missing) = config.add_capabilities(InitFlags::FUSE_ASYNC_DIO) {
            eprintln!("fsage-slowdev: the kernel lacks {missing:?}: requests will serialise");
        }
        let _ = config.set_max_background(1024);
        let _ = config.set_congestion_threshold(1000);
        let _ = config.set_max_write(crate::stats::FUSE_MAX_REQUEST as u32);
        Ok(())
    }

    fn lookup(&self, _req: &FuseRequest, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        self.other();
        if parent == INodeNo::ROOT && name == DISK_NAME {
            reply.entry(&TTL, &self.attr(DISK_INO), Generation(0));
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    fn getattr(&self, _req: &FuseRequest, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        self.other();
        if ino == INodeNo::ROOT || ino == DISK_INO {
            reply.attr(&TTL, &self.attr(ino));
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    fn setattr(
        &self,
        _req: &FuseRequest,
        ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<fuser::TimeOrNow>,
        _mtime: Option<fuser::TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        self.other();
        // The device has a fixed size; other attribute changes are accepted and ignored.
        if size.is_some_and(|s| s != self.s.size) {
            reply.error(Errno::EPERM);
        } else {
            reply.attr(&TTL, &self.attr(ino));
        }
    }

    fn open(&self, _req: &FuseRequest, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        self.other();
        if ino == DISK_INO {
            // No page cache in the kernel for this file: every access is a request here.
            reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO);
        } else {
            reply.error(Errno::EISDIR);
        }
    }

    fn read(
        &self,
        _req: &FuseRequest,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let arrival = Instant::now();
        let len = (size as u64).min(self.s.size.saturating_sub(offset)) as usize;
        let mut buf = vec![0u8; len];
        let mut done = 0;
        while done < len {
            match self.s.file.read_at(&mut buf[done..], offset + done as u64) {
                Ok(0) => break, // a sparse tail reads as zeros
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.error();
                    reply.error(errno_of(&e));
                    return;
                }
            }
        }
        self.delayed(
            arrival,
            Kind::Read,
            offset,
            len as u64,
            Answer::Data(reply, buf),
        );
    }

    fn write(
        &self,
        _req: &FuseRequest,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let arrival = Instant::now();
        if offset.saturating_add(data.len() as u64) > self.s.size {
            self.error();
            reply.error(Errno::ENOSPC);
            return;
        }
        if let Err(e) = self.s.file.write_all_at(data, offset) {
            self.error();
            reply.error(errno_of(&e));
            return;
        }
        let n = data.len() as u32;
        self.delayed_data(
            arrival,
            Kind::Write,
            offset,
            n as u64,
            Some(data),
            Answer::Written(reply, n),
        );
    }

    fn flush(
        &self,
        _req: &FuseRequest,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // FUSE_FLUSH comes with close(), not with a device flush.
        self.other();
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &FuseRequest,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let arrival = Instant::now();
        self.delayed(arrival, Kind::Flush, 0, 0, Answer::Empty(reply));
    }

    fn fallocate(
        &self,
        _req: &FuseRequest,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let arrival = Instant::now();
        // The loop device sends a discard as a hole punch (PUNCH_HOLE | KEEP_SIZE), a
        // write-zeroes that must keep the blocks allocated (REQ_NOUNMAP: BLKZEROOUT, `blkdiscard
        // -z`, mkfs) as ZERO_RANGE | KEEP_SIZE, and one that may deallocate as a hole punch too
        // (so it counts as a discard here). FALLOC_FL_WRITE_ZEROES (Linux 6.17) is taken as
        // write-zeroes, should FUSE ever pass it on.
        const WRITE_ZEROES: i32 = 0x80;
        let known = libc::FALLOC_FL_KEEP_SIZE
            | libc::FALLOC_FL_PUNCH_HOLE
            | libc::FALLOC_FL_ZERO_RANGE
            | WRITE_ZEROES;
        let zero = mode & (libc::FALLOC_FL_ZERO_RANGE | WRITE_ZEROES) != 0;
        let punch = mode & libc::FALLOC_FL_PUNCH_HOLE != 0;
        if mode & !known != 0 || zero == punch || offset.saturating_add(length) > self.s.size {
            self.error();
            reply.error(Errno::EOPNOTSUPP);
            return;
        }
        let r = if zero {
            zero_range(&self.s.file, offset, length)
        } else {
            punch_hole(&self.s.file, offset, length)
        };
        if let Err(e) = r {
            self.error();
            reply.error(errno_of(&e));
            return;
        }
        let kind = if zero {
            Kind::WriteZeroes
        } else {
            Kind::Discard
        };
        self.delayed(arrival, kind, offset, length, Answer::Empty(reply));
    }

    fn opendir(&self, _req: &FuseRequest, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        self.other();
        reply.opened(FileHandle(0), FopenFlags::empty());
    }

    fn readdir(
        &self,
        _req: &FuseRequest,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        self.other();
        if ino != INodeNo::ROOT {
            reply.error(Errno::ENOTDIR);
            return;
        }
        let entries = [
            (INodeNo::ROOT, FileType::Directory, "."),
            (INodeNo::ROOT, FileType::Directory, ".."),
            (DISK_INO, FileType::RegularFile, DISK_NAME),
        ];
        for (i, (ino, kind, name)) in entries.iter().enumerate().skip(offset as usize) {
            if reply.add(*ino, (i + 1) as u64, *kind, name) {
                break;
            }
        }
        reply.ok();
    }
}

fn punch_hole(file: &File, offset: u64, length: u64) -> std::io::Result<()> {
    use rustix::fs::FallocateFlags as F;
    rustix::fs::fallocate(file, F::PUNCH_HOLE | F::KEEP_SIZE, offset, length).map_err(Into::into)
}

/// Makes `[offset, offset + length)` of the backing file read as zeros, as a write-zeroes
/// request asks: ZERO_RANGE where the backing file system has it, else a hole punch (tmpfs, where
/// scratch images live, has no ZERO_RANGE; the blocks it frees are the device's own business),
/// else zeros written.
fn zero_range(file: &File, offset: u64, length: u64) -> std::io::Result<()> {
    use rustix::fs::FallocateFlags as F;
    let unsupported = |e: &rustix::io::Errno| *e == rustix::io::Errno::OPNOTSUPP;
    match rustix::fs::fallocate(file, F::ZERO_RANGE | F::KEEP_SIZE, offset, length) {
        Err(e) if unsupported(&e) => {}
        r => return r.map_err(Into::into),
    }
    match rustix::fs::fallocate(file, F::PUNCH_HOLE | F::KEEP_SIZE, offset, length) {
        Err(e) if unsupported(&e) => {}
        r => return r.map_err(Into::into),
    }
    let zeros = vec![0u8; 1 << 20];
    let mut at = offset;
    let end = offset + length;
    while at < end {
        let n = (end - at).min(zeros.len() as u64) as usize;
        file.write_all_at(&zeros[..n], at)?;
        at += n as u64;
    }
    Ok(())
}

/// Runs the daemon of the device whose directory is `dir` (made by
/// [`crate::SlowDevice::create`]), until it is told to stop. Returns when the device is gone.
pub fn serve(dir: &Path) -> Result<()> {
    let _ = std::env::set_current_dir("/");
    let mut rec = read_record(dir)?;
    // The image's lock, for the daemon's lifetime (the kernel releases it when the process
    // exits, however it exits): no `fs mount`, `age` or second device touches the image while
    // it is served.
    let _lock = hold_image_lock(&rec)?;
    // The daemon sits in the I/O path: it must not wait for memory reclaim that waits for I/O
    // on this very device.
    rec.io_flusher_error = None;
    if let Err(e) = rustix::process::configure_io_flusher_behavior(true) {
        eprintln!("fsage-slowdev: PR_SET_IO_FLUSHER: {e} (continuing without it)");
        rec.io_flusher_error = Some(format!("PR_SET_IO_FLUSHER: {e}"));
    }
    let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
    if rec.realtime {
        // Every thread made from here on inherits it: the device's timing must not depend on
        // how busy the CPUs are with other work (the kernel's RT throttling still applies).
        if let Err(e) = set_realtime() {
            eprintln!("fsage-slowdev: SCHED_FIFO: {e} (timing will suffer under load)");
        }
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&rec.backing_file)
        .map_err(|e| Error::io(&rec.backing_file, "cannot open the backing file", e))?;
    let stats = Arc::new(Collector::new());
    let completer = Completer::new(stats.clone());
    let window = completer.calibrate();
    let spec = rec.model_spec();
    let mut m = spec.build(rec.size)?;
    load_drive_state(&rec, m.as_mut())?;
    if let Some(rule) = rec.unwritten_reads {
        m.set_unwritten_reads(rule);
    }
    if rec.model_thread {
        m = Box::new(Deferred::new(m));
    }
    let model = Modeled::new(m, completer.clone(), !rec.model_runs_in_thread());
    let shared = Arc::new(Shared {
        file,
        size: rec.size,
        model,
        stats,
        created: SystemTime::now(),
    });
    let started = Instant::now();
    let spawn = |name: String, f: Box<dyn FnOnce() + Send>| {
        std::thread::Builder::new()
            .name(name)
            .spawn(f)
            .map_err(|e| Error::operation(format!("cannot start a thread: {e}")))
    };
    let mut completion_threads = Vec::new();
    for i in 0..2 {
        let c = completer.clone();
        completion_threads.push(spawn(format!("complete-{i}"), Box::new(move || c.run()))?);
    }
    // The model thread (on the fast path it only sleeps: its model has no events).
    let m = shared.model.clone();
    completion_threads.push(spawn("model".into(), Box::new(move || m.run()))?);
    // One warm thread per CPU the daemon may run on.
    let allowed = rustix::thread::sched_getaffinity(None).ok();
    let cpus = (0..rustix::thread::CpuSet::MAX_CPU)
        .filter(|&c| allowed.as_ref().is_none_or(|s| s.is_set(c)))
        .take(if allowed.is_some() { 256 } else { 1 });
    for cpu in cpus.filter(|_| std::env::var_os("FSAGE_SLOWDEV_NO_WARM").is_none()) {
        let c = completer.clone();
        completion_threads.push(spawn(format!("warm-{cpu}"), Box::new(move || c.warm(cpu)))?);
    }

    std::fs::create_dir_all(&rec.fuse_mountpoint)
        .map_err(|e| Error::io(&rec.fuse_mountpoint, "", e))?;
    let mut config = fuser::Config::default();
    config.mount_options = vec![
        fuser::MountOption::FSName(format!("fsage-slowdev:{}", rec.name)),
        fuser::MountOption::Subtype("fsage-slowdev".into()),
        fuser::MountOption::RW,
        fuser::MountOption::NoSuid,
        fuser::MountOption::NoDev,
    ];
    config.n_threads = Some(rec.threads);
    config.clone_fd = true;
    let session = fuser::Session::new(SlowFs { s: shared.clone() }, &rec.fuse_mountpoint, &config)
        .map_err(|e| Error::io(&rec.fuse_mountpoint, "cannot mount the FUSE file system", e))?;
    let session = session
        .spawn()
        .map_err(|e| Error::operation(format!("cannot start the FUSE session: {e}")))?;

    let disk = rec.fuse_mountpoint.join(DISK_NAME);
    let mut held = Some(fsage_lab::LoopDevice::attach_with(
        &disk,
        fsage_lab::LoopOptions {
            read_only: false,
            direct_io: true,
        },
    )?);
    let loop_path = held
        .as_ref()
        .map(|l| l.path().to_path_buf())
        .unwrap_or_default();
    let loop_name = loop_path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();

    // How many requests the kernel holds for this device: a request due within the spin window
    // is spun to only when it is the only one (timing.rs).
    if let Ok(f) = std::fs::File::open(format!("/sys/block/{loop_name}/inflight")) {
        completer.watch_kernel_inflight(f);
    }
    // The kernel's counters for a loop device outlive its earlier users: count from here, where
    // the kernel has counted exactly what the daemon has (the partition scan).
    let mut baseline = read_diskstats(&loop_name)
        .unwrap_or_default()
        .minus(&DiskStats::from_kinds(&shared.stats.summary()));
    let sock = socket_path(dir);
    let _ = std::fs::remove_file(&sock);
    let listener = UnixListener::bind(&sock).map_err(|e| Error::io(&sock, "cannot listen", e))?;
    rec.device = Some(loop_path.clone());
    rec.daemon_pid = Some(std::process::id());
    write_record(dir, &rec)?;
    eprintln!(
        "fsage-slowdev: {} serves {} on {} ({} threads; timed sleeps measured, first spin window \
         {} us)",
        rec.name,
        rec.backing_file.display(),
        loop_path.display(),
        rec.threads,
        window.as_micros()
    );

    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        let Some(req) = read_request(&conn) else {
            continue;
        };
        let resp = match req {
            Request::Set {
                latencies,
                bandwidth,
            } => match refuses_set(&rec) {
                None => {
                    let now = fsage_device::FixedParams {
                        read_ns: latencies.read_ns,
                        write_ns: latencies.write_ns,
                        flush_ns: latencies.flush_ns,
                        bandwidth,
                        queue_depth: rec.queue_depth,
                    };
                    let kind = fsage_device::ModelSpec::fixed_with(now).kind;
                    if let Err(e) = shared.model.with_model(|d| d.retime(&kind)) {
                        reply(
                            &conn,
                            &Response::Error {
                                message: e.message,
                                input: true,
                            },
                        );
                        continue;
                    }
                    rec.latencies = latencies;
                    rec.bandwidth = bandwidth;
                    // A fixed-latency model is now these latencies.
                    rec.model = None;
                    match write_record(dir, &rec) {
                        Ok(()) => Response::Ok,
                        Err(e) => Response::Error {
                            message: e.message,
                            input: false,
                        },
                    }
                }
                Some(why) => Response::Error {
                    message: why,
                    input: true,
                },
            },
            Request::Stats { reset } => {
                let r = Response::Stats {
                    stats: Box::new(DeviceStats {
                        name: rec.name.clone(),
                        device: loop_path.display().to_string(),
                        latencies: rec.latencies,
                        bandwidth: rec.bandwidth,
                        queue_depth: rec.queue_depth,
                        uptime_s: started.elapsed().as_secs_f64(),
                        kinds: shared.stats.summary(),
                        other_requests: shared.stats.other.load(Relaxed),
                        errors: shared.stats.errors.load(Relaxed),
                        spin_window_ns: completer.spin_window().as_nanos() as u64,
                        diskstats: read_diskstats(&loop_name).map(|d| d.minus(&baseline)),
                        // A device of plain latencies names no model; a fixed-latency model's
                        // counters (service time only) are not shown, as before it was one.
                        model: rec.model.as_ref().map(|spec| {
                            if rec.model_runs_in_thread() {
                                let (stats, description) = shared.model.stats();
                                ModelInfo {
                                    name: spec.name.clone(),
                                    description,
                                    stats: Some(stats),
                                }
                            } else {
                                ModelInfo {
                                    name: spec.name.clone(),
                                    description: spec.description.clone(),
                                    stats: None,
                                }
                            }
                        }),
                        io_flusher_error: rec.io_flusher_error.clone(),
                        drive_state: rec.state_note.as_ref().map(|n| match &rec.state_file {
                            Some(f) => format!(
                                "started from {n}; saved to {} when the device is destroyed",
                                f.display()
                            ),
                            None => format!("started from {n}; not saved"),
                        }),
                    }),
                };
                if reset {
                    // Count the kernel (and the model) from here too.
                    shared.model.reset_stats();
                    shared.stats.reset();
                    baseline = read_diskstats(&loop_name).unwrap_or_default();
                }
                r
            }
            Request::Precondition { overwrites, seed } => match rec.model_runs_in_thread() {
                true => match shared
                    .model
                    .with_model(|d| d.precondition(overwrites, seed))
                {
                    Ok(message) => Response::Done { message },
                    Err(e) => Response::Error {
                        message: e.message,
                        input: true,
                    },
                },
                false => Response::Error {
                    message: "a fixed-latency device has nothing to precondition (only SSD \
                              models do)"
                        .into(),
                    input: true,
                },
            },
            Request::Stop { force } => {
                // Close our handle: the auto-clearing loop device goes away unless someone else
                // (a mount, an open descriptor) still holds it.
                if let Some(l) = held.take() {
                    drop(l);
                }
                let gone = fsage_lab::loopdev::wait_detached(&loop_path, 0, Duration::from_secs(5))
                    .is_ok();
                if !gone && !force {
                    // Hold it again, so that it stays ours.
                    let again = std::fs::OpenOptions::new()
                        .read(true)
                        .write(true)
                        .open(&loop_path);
                    reply(
                        &conn,
                        &Response::Error {
                            message: format!(
                                "{}: still in use (mounted or open) after our handle closed{}",
                                loop_path.display(),
                                if again.is_ok() {
                                    ""
                                } else {
                                    "; the device keeps going only while it is held"
                                }
                            ),
                            input: true,
                        },
                    );
                    if let Ok(f) = again {
                        // Keep the descriptor for the daemon's lifetime (leaked on purpose).
                        std::mem::forget(f);
                    }
                    continue;
                }
                completer.shutdown();
                shared.model.shutdown();
                let saved = save_drive_state(&rec, &shared.model);
                if gone {
                    if let Err(e) = session.umount_and_join() {
                        eprintln!("fsage-slowdev: unmounting FUSE: {e}");
                        let _ = lazy_umount(&rec.fuse_mountpoint);
                    }
                    for t in completion_threads {
                        let _ = t.join();
                    }
                } else {
                    // Forced with the loop device still held: detach the FUSE mount lazily; when
                    // this process exits the connection aborts and the device's I/O fails.
                    let _ = lazy_umount(&rec.fuse_mountpoint);
                }
                let synced = shared.file.sync_data();
                finish_dir(dir, &rec);
                if let Err(e) = &saved {
                    eprintln!("fsage-slowdev: {e}");
                }
                let synced = synced
                    .map_err(|e| format!("{}: fsync: {e}", rec.backing_file.display()))
                    .and(saved.map_err(|e| e.message));
                reply(
                    &conn,
                    &match synced {
                        Ok(()) => Response::Ok,
                        Err(message) => Response::Error {
                            message,
                            input: false,
                        },
                    },
                );
                eprintln!("fsage-slowdev: {} stopped", rec.name);
                std::process::exit(0);
            }
        };
        reply(&conn, &resp);
    }
    Ok(())
}

/// Takes the lock of the device's backing file: the one `create` handed on (its descriptor named
/// in the environment), or, for a daemon started otherwise, its own.
fn hold_image_lock(rec: &DeviceRecord) -> Result<fsage_sys::lock::Lock> {
    use std::os::fd::{BorrowedFd, FromRawFd, OwnedFd};
    let what = "the image";
    let handed = std::env::var(LOCK_FD_VAR).ok();
    std::env::remove_var(LOCK_FD_VAR);
    let Some(fd) = handed else {
        return fsage_sys::lock::lock_target_or_refuse(&rec.backing_file, what);
    };
    let fd: std::os::fd::RawFd = fd
        .parse()
        .map_err(|_| Error::input(format!("{}={fd:?}: not a descriptor number", LOCK_FD_VAR)))?;
    // SAFETY: only looked at (fcntl F_GETFD) while nothing else in this process uses it.
    let open = fd > 2 && rustix::io::fcntl_getfd(unsafe { BorrowedFd::borrow_raw(fd) }).is_ok();
    if !open {
        return Err(Error::input(format!(
            "{}={fd}: not an open descriptor above 2",
            LOCK_FD_VAR
        )));
    }
    // SAFETY: open (checked above), and nothing else in this process owns it: the parent
    // handed it on for this alone.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    fsage_sys::lock::adopt_target(&rec.backing_file, owned, what)
}

fn read_request(conn: &UnixStream) -> Option<Request> {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
    let mut line = String::new();
    BufReader::new(conn).read_line(&mut line).ok()?;
    match serde_json::from_str(&line) {
        Ok(r) => Some(r),
        Err(e) => {
            reply(
                conn,
                &Response::Error {
                    message: format!("bad request {line:?}: {e}"),
                    input: true,
                },
            );
            None
        }
    }
}

fn reply(mut conn: &UnixStream, resp: &Response) {
    let mut s = serde_json::to_string(resp).expect("responses serialise");
    s.push('\n');
    let _ = conn.write_all(s.as_bytes());
}

/// Loads the drive state saved beside the image (`dev create` checked it), leaving a mark in
/// its place while the device runs: a daemon that dies leaves the mark, not a state that no
/// longer matches the image.
fn load_drive_state(rec: &DeviceRecord, m: &mut dyn fsage_device::DeviceModel) -> Result<()> {
    let Some(file) = &rec.state_file else {
        return Ok(());
    };
    let loads = rec
        .state_note
        .as_deref()
        .is_some_and(|n| n.starts_with("the drive state saved"));
    if !loads {
        return Ok(());
    }
    let bytes =
        read_nofollow(file).map_err(|e| Error::io(file, "cannot read the saved drive state", e))?;
    m.load_state(&bytes)
        .map_err(|e| Error::input(format!("{}: {e}", file.display())))?;
    let mark = crate::registry::in_use_mark(file);
    std::fs::rename(file, &mark)
        .map_err(|e| Error::io(file, "cannot mark the drive state in use", e))?;
    Ok(())
}

/// Saves the model's drive state beside the image when the device stops cleanly.
fn save_drive_state(rec: &DeviceRecord, m: &Modeled) -> Result<()> {
    let Some(file) = &rec.state_file else {
        return Ok(());
    };
    let Some(bytes) = m.with_model(|d| d.save_state()) else {
        return Ok(());
    };
    // Root's alone (mode 0600).
    fsage_sys::write_atomic_private(file, &bytes).map_err(|e| {
        Error::operation(format!(
            "{}: cannot save the drive state: {e}",
            file.display()
        ))
    })?;
    let _ = std::fs::remove_file(crate::registry::in_use_mark(file));
    Ok(())
}

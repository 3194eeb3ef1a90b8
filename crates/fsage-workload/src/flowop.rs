//! What one execution of each file and data flowop does ([`exec_file`], [`exec_data`]), and what
//! a thread keeps between them (open files, its buffer and generator). The kinds are in
//! [`crate::kind`]; the pacing flowops run in [`crate::control`].

use crate::error::Error;
use crate::fileset::{Fileset, Want};
use crate::kind::{DataOp, FileOp};
use crate::model::{FlowopDef, MAX_FD};
use fsage_plan::{DataPattern, Rng};
use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags};
use rustix::io::{Errno, ReadWriteFlags};
use std::io::IoSlice;
use std::time::Instant;

/// A thread's page-aligned buffers (O_DIRECT needs aligned memory): one reads land in, filled
/// with the run's data pattern, which writes take their bytes from too where the pattern allows
/// it ([`DataPattern::reads_share_the_write_buffer`]: random bytes, and Filebench's one zeroed
/// thread memory); otherwise writes have one of their own that reads never change.
pub(crate) struct Buf {
    v: Vec<u8>,
    off: usize,
    /// Bytes usable from `off` (in both buffers).
    len: usize,
    data: DataPattern,
    /// Writes' own buffer and its aligned start (empty when writes share `v`).
    w: Vec<u8>,
    woff: usize,
}

/// `len` bytes (and a page to align them) of `data`, and the aligned start.
fn aligned(len: usize, data: DataPattern, rng: &mut Rng) -> (Vec<u8>, usize) {
    let mut v = vec![0u8; len + 4096];
    let off = v.as_ptr().align_offset(4096);
    // From the aligned start, so that a compressibility applies to each 4 KiB page written; and
    // exactly `len` bytes, so that how many numbers the pattern draws does not depend on where
    // the allocator put the vector (it did, and a seed then repeated its choices only when the
    // heap was laid out the same).
    data.fill(&mut v[off..off + len], rng);
    (v, off)
}

impl Buf {
    pub(crate) fn new(len: usize, data: DataPattern, rng: &mut Rng) -> Buf {
        let (v, off) = aligned(len, data, rng);
        let (w, woff) = if data.reads_share_the_write_buffer() {
            (Vec::new(), 0)
        } else {
            aligned(len, data, rng)
        };
        Buf {
            v,
            off,
            len,
            data,
            w,
            woff,
        }
    }

    /// An empty stand-in while the buffer is lent out.
    fn empty() -> Buf {
        Buf {
            v: Vec::new(),
            off: 0,
            len: 0,
            data: DataPattern::Incompressible,
            w: Vec::new(),
            woff: 0,
        }
    }

    /// A drawn iosize above the buffers: they grow (refilled with the pattern).
    fn fit(&mut self, n: usize) {
        if n > self.len {
            let mut rng = Rng::new(self.v.len() as u64);
            *self = Buf::new(n, self.data, &mut rng);
        }
    }

    /// `n` bytes to read into.
    fn get(&mut self, n: usize) -> &mut [u8] {
        self.fit(n);
        &mut self.v[self.off..self.off + n]
    }

    /// `n` bytes to write.
    fn write(&mut self, n: usize) -> &[u8] {
        self.fit(n);
        if self.w.is_empty() {
            &self.v[self.off..self.off + n]
        } else {
            &self.w[self.woff..self.woff + n]
        }
    }
}

/// A file a thread holds open under an `fd=` number.
pub(crate) struct OpenFd {
    /// Shared by `opennext`'s rotor slots that hold the same file (see [`io_fd`]).
    pub(crate) fd: std::rc::Rc<OwnedFd>,
    pub(crate) fileset: usize,
    pub(crate) entry: u32,
    off: u64,
    size: Option<u64>,
    direct: bool,
}

/// Why a flowop did not complete: a full file system refusing a write, a mkdir or an append
/// (counted, the run goes on), a stop asked for while it waited for a file, the thread is done
/// (a finish reached, a fileset used up in a run-until-done workload), or an error that ends the
/// run (among them ENOSPC refusing a create or an open: see [`open_entry`]).
pub(crate) enum Fail {
    Enospc,
    Stopped,
    Done(String),
    Fatal(Error),
}

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        Fail::Fatal(e)
    }
}

/// What one thread keeps between its flowops: open files, the last file each fd held (for a
/// `deletefile` by fd), its buffer and generator, and its asynchronous I/O ring.
pub(crate) struct ThreadIo {
    pub(crate) fds: Vec<Option<OpenFd>>,
    pub(crate) last: Vec<Option<(usize, u32)>>,
    pub(crate) buf: Buf,
    pub(crate) rng: Rng,
    pub(crate) aio: Option<crate::aio::Aio>,
    /// `opennext`'s files: Filebench's rotor over the thread's [`ROTOR`] descriptor slots, each
    /// opened at its first use and kept open.
    pub(crate) rotor: Vec<Option<OpenFd>>,
    /// The rotor's last slot (counting down, as Filebench does).
    pub(crate) rotor_at: usize,
    /// Per fd: the rotor slot whose file is lent to that fd now.
    pub(crate) lent: Vec<Option<usize>>,
    /// The duration (ns) of each file this operation opened by itself: Filebench counts such
    /// an open as one more operation of the flowop (the engine records them).
    pub(crate) opened: Vec<u64>,
}

/// Descriptor slots of `opennext` per thread (Filebench's THREADFLOW_MAXFD).
pub(crate) const ROTOR: usize = 128;

impl ThreadIo {
    pub(crate) fn new(buf: Buf, rng: Rng) -> ThreadIo {
        ThreadIo {
            fds: (0..MAX_FD).map(|_| None).collect(),
            last: vec![None; MAX_FD as usize],
            buf,
            rng,
            aio: None,
            rotor: (0..ROTOR).map(|_| None).collect(),
            rotor_at: 0,
            lent: vec![None; MAX_FD as usize],
            opened: Vec::new(),
        }
    }

    /// Closes every file (after waiting for its asynchronous writes) and gives the entries back.
    pub(crate) fn close_all(&mut self, filesets: &[Fileset]) {
        if let Some(a) = &mut self.aio {
            let _ = a.wait_all();
        }
        for slot in self.fds.iter_mut().chain(self.rotor.iter_mut()) {
            if let Some(o) = slot.take() {
                drop(o.fd);
                filesets[o.fileset].release(o.entry);
            }
        }
    }
}

/// The failure of a flowop's system call `what` on `path`: ENOSPC is counted and the run goes
/// on, any other errno ends it.
fn errno_fail(e: Errno, what: &str, f: &FlowopDef, path: &std::ffi::CStr) -> Fail {
    if e == Errno::NOSPC {
        return Fail::Enospc;
    }
    fatal_errno(e, what, f, path)
}

/// The failure of a flowop's system call that ends the run, ENOSPC included.
fn fatal_errno(e: Errno, what: &str, f: &FlowopDef, path: &std::ffi::CStr) -> Fail {
    Fail::Fatal(Error::io(
        format!("flowop {} ({what})", f.name),
        std::path::PathBuf::from(path.to_string_lossy().into_owned()),
        e.into(),
    ))
}

fn workload_err(f: &FlowopDef, msg: String) -> Fail {
    Fail::Fatal(Error::Workload {
        flowop: f.name.clone(),
        msg,
    })
}

/// Takes an entry of fileset `fi` for `want`: the `indexed=` one when it is free for it, else
/// one drawn at random.
fn take(
    fs: &Fileset,
    want: Want,
    f: &FlowopDef,
    rng: &mut Rng,
    stop: &dyn Fn() -> bool,
) -> Result<u32, Fail> {
    let at = f
        .indexed
        .as_ref()
        .map(|p| (p.get(rng) % fs.paths.len().max(1) as u64) as u32);
    match fs.take_at(want, at, rng, stop)? {
        Some(e) => Ok(e),
        None => Err(Fail::Stopped),
    }
}

/// Opens an entry of fileset `fi` for the flowop (a hold on it is already taken).
fn open_entry(
    filesets: &[Fileset],
    fi: usize,
    e: u32,
    create: bool,
    f: &FlowopDef,
) -> Result<OpenFd, Fail> {
    let fs = &filesets[fi];
    let mut flags = OFlags::CLOEXEC;
    flags |= if fs.readonly && !create {
        OFlags::RDONLY
    } else {
        OFlags::RDWR
    };
    if create {
        flags |= OFlags::CREATE | OFlags::TRUNC;
    }
    if f.directio {
        flags |= OFlags::DIRECT;
    }
    let path = &fs.paths[e as usize];
    match rustix::fs::open(path.as_c_str(), flags, Mode::from_raw_mode(0o644)) {
        Ok(fd) => Ok(OpenFd {
            fd: fd.into(),
            fileset: fi,
            entry: e,
            off: 0,
            size: create.then_some(0),
            direct: f.directio,
        }),
        // Even ENOSPC ends the run: the fd the create or open was to fill stays closed, and
        // the thread's next flowops on it would only fail with an error that hides the cause
        // ("srcfd 1 is not open"). Filebench, too, ends a run on a failed flowop.
        Err(err) => Err(fatal_errno(
            err,
            if create { "create" } else { "open" },
            f,
            path,
        )),
    }
}

/// The open file an I/O flowop works on: its fd, or (with a fileset and an empty fd) a file of
/// that fileset opened now and kept open, as Filebench's webserver log appends expect.
/// `opennext` is Filebench's fd rotor: every operation takes the next of [`ROTOR`] slots of the
/// thread, opening a file of the fileset in it at its first use and keeping it open (the file
/// is lent to the flowop's fd for the operation). Such an open is timed into `t.opened`.
fn io_fd(
    filesets: &[Fileset],
    f: &FlowopDef,
    t: &mut ThreadIo,
    stop: &dyn Fn() -> bool,
) -> Result<(), Fail> {
    let slot = f.fd as usize;
    if f.opennext && f.fileset_name.is_some() {
        if let Some(r) = t.lent[slot].take() {
            t.rotor[r] = t.fds[slot].take();
        }
        if t.rotor_at == 0 {
            t.rotor_at = ROTOR;
        }
        t.rotor_at -= 1;
        t.fds[slot] = t.rotor[t.rotor_at].take();
        t.lent[slot] = Some(t.rotor_at);
    }
    if t.fds[slot].is_none() {
        let t0 = Instant::now();
        let Some(fi) = f.fileset.filter(|_| f.fileset_name.is_some()) else {
            return Err(workload_err(
                f,
                format!("fd {} is not open (open it with openfile or createfile first, or give filesetname)", f.fd),
            ));
        };
        let e = take(&filesets[fi], Want::Open, f, &mut t.rng, stop)?;
        match open_entry(filesets, fi, e, false, f) {
            Ok(mut o) => {
                t.opened.push(t0.elapsed().as_nanos() as u64);
                // The rotor's slots that hold the same file share one descriptor (the new one
                // is closed): Filebench's threads are processes, 128 descriptors each, while
                // fsage's share one process's limit (oltp: 210 threads x 128 slots).
                if f.opennext {
                    let same = t
                        .rotor
                        .iter()
                        .flatten()
                        .find(|x| x.fileset == fi && x.entry == e);
                    if let Some(x) = same {
                        o.fd = x.fd.clone();
                    }
                }
                t.last[slot] = Some((fi, e));
                t.fds[slot] = Some(o);
            }
            Err(x) => {
                filesets[fi].release(e);
                return Err(x);
            }
        }
    }
    let o = t.fds[slot].as_mut().expect("slot filled above");
    if f.directio && !o.direct {
        let fl = rustix::fs::fcntl_getfl(&o.fd)
            .map_err(|e| errno_fail(e, "fcntl", f, &filesets[o.fileset].paths[o.entry as usize]))?;
        rustix::fs::fcntl_setfl(&o.fd, fl | OFlags::DIRECT).map_err(|e| {
            errno_fail(
                e,
                "fcntl O_DIRECT",
                f,
                &filesets[o.fileset].paths[o.entry as usize],
            )
        })?;
        o.direct = true;
    }
    Ok(())
}

fn write_at(fd: &OwnedFd, data: &[u8], off: u64, dsync: bool) -> Result<usize, Errno> {
    if dsync {
        rustix::io::pwritev2(fd, &[IoSlice::new(data)], off, ReadWriteFlags::DSYNC)
    } else {
        rustix::io::pwrite(fd, data, off)
    }
}

/// This operation's I/O size: fixed, or drawn from `iosize=$randvar` (at least 1 byte).
fn iosize_of(f: &FlowopDef, rng: &mut Rng) -> usize {
    match &f.iosize_dist {
        Some(r) => r.sample(rng).clamp(1, 1 << 30) as usize,
        None => f.iosize.unwrap_or(1 << 20) as usize,
    }
}

/// The offset of a `read`/`write`/`aiowrite`: random in the file (or its working set) with
/// `random`, else where the last one ended, from the start again at the end of the file. A file
/// planned empty (`define file` without a size) is written on and on.
fn offset_of(f: &FlowopDef, o: &mut OpenFd, size: u64, io: u64, rng: &mut Rng) -> u64 {
    let span = if f.workingset > 0 {
        size.min(f.workingset).max(io)
    } else {
        size
    };
    if f.random {
        let span = if size == 0 && f.workingset > 0 {
            f.workingset
        } else {
            span
        };
        rng.below((span / io).max(1)) * io
    } else {
        if size > 0 && o.off + io > span.max(io) {
            o.off = 0;
        }
        o.off
    }
}

/// Takes an entry of the flowop's fileset for `want` (the parser made sure it names one).
fn take_own<'a>(
    filesets: &'a [Fileset],
    want: Want,
    f: &FlowopDef,
    t: &mut ThreadIo,
    stop: &dyn Fn() -> bool,
) -> Result<(usize, &'a Fileset, u32), Fail> {
    let fi = f.fileset.expect("checked by the parser");
    let fs = &filesets[fi];
    let e = take(fs, want, f, &mut t.rng, stop)?;
    Ok((fi, fs, e))
}

/// One flowop that works on the tree or a file's state (`op` is its kind);
/// `Ok((bytes read, bytes written))` (listdir counts the entries it read as bytes read).
pub(crate) fn exec_file(
    filesets: &[Fileset],
    f: &FlowopDef,
    op: FileOp,
    t: &mut ThreadIo,
    stop: &dyn Fn() -> bool,
) -> Result<(u64, u64), Fail> {
    let slot = f.fd as usize;
    // Every I/O flowop draws its iosize, used or not, so that which flowops use theirs does not
    // move the other draws of a seed.
    let _ = iosize_of(f, &mut t.rng);
    match op {
        FileOp::CreateFile | FileOp::OpenFile => {
            if t.fds[slot].is_some() {
                return Err(workload_err(f, format!("fd {} is already open", f.fd)));
            }
            let create = op == FileOp::CreateFile;
            let want = if create { Want::Create } else { Want::Open };
            let (fi, fs, e) = take_own(filesets, want, f, t, stop)?;
            match open_entry(filesets, fi, e, create, f) {
                Ok(o) => {
                    if create {
                        fs.created(e);
                    }
                    t.fds[slot] = Some(o);
                    t.last[slot] = Some((fi, e));
                    Ok((0, 0))
                }
                Err(x) => {
                    if create {
                        fs.create_failed(e);
                    } else {
                        fs.release(e);
                    }
                    Err(x)
                }
            }
        }
        FileOp::CloseFile => {
            let Some(o) = t.fds[slot].take() else {
                return Err(workload_err(f, format!("fd {} is not open", f.fd)));
            };
            if let Some(a) = &mut t.aio {
                a.wait_all().map_err(Fail::Fatal)?;
            }
            drop(o.fd);
            filesets[o.fileset].release(o.entry);
            Ok((0, 0))
        }
        FileOp::DeleteFile if f.fileset_name.is_none() => {
            // By fd: the file open there (closed first), or the last one it held.
            if let Some(o) = t.fds[slot].take() {
                drop(o.fd);
                filesets[o.fileset].release(o.entry);
            }
            let Some((fi, e)) = t.last[slot].take() else {
                return Err(workload_err(
                    f,
                    format!("fd {} never held a file to delete", f.fd),
                ));
            };
            let fs = &filesets[fi];
            let e = match fs.take_at(Want::Delete, Some(e), &mut t.rng, stop)? {
                Some(e) => e,
                None => return Err(Fail::Stopped),
            };
            remove(fs, e, op, f)
        }
        FileOp::DeleteFile | FileOp::RemoveDir => {
            let (_, fs, e) = take_own(filesets, Want::Delete, f, t, stop)?;
            remove(fs, e, op, f)
        }
        FileOp::MakeDir => {
            let (_, fs, e) = take_own(filesets, Want::Create, f, t, stop)?;
            let path = fs.paths[e as usize].as_c_str();
            match rustix::fs::mkdir(path, Mode::from_raw_mode(0o755)) {
                Ok(()) => {
                    fs.created(e);
                    fs.release(e);
                    Ok((0, 0))
                }
                Err(err) => {
                    fs.create_failed(e);
                    Err(errno_fail(err, "mkdir", f, path))
                }
            }
        }
        FileOp::ListDir => {
            let (_, fs, e) = take_own(filesets, Want::Open, f, t, stop)?;
            let path = fs.paths[e as usize].as_c_str();
            // The directory itself (leafdirs) or the one holding the file.
            let dir = if fs.dirs {
                std::path::PathBuf::from(path.to_string_lossy().into_owned())
            } else {
                std::path::Path::new(&*path.to_string_lossy())
                    .parent()
                    .map(|p| p.to_path_buf())
                    .unwrap_or_default()
            };
            let r = list_dir(&dir);
            fs.release(e);
            r.map(|n| (n, 0))
                .map_err(|err| errno_fail(err, "readdir", f, path))
        }
        FileOp::StatFile => {
            let (_, fs, e) = take_own(filesets, Want::Open, f, t, stop)?;
            let path = fs.paths[e as usize].as_c_str();
            let r = rustix::fs::stat(path);
            fs.release(e);
            r.map(|_| (0, 0))
                .map_err(|err| errno_fail(err, "stat", f, path))
        }
        FileOp::Fsync => {
            let Some(o) = t.fds[slot].as_ref() else {
                return Err(workload_err(f, format!("fd {} is not open", f.fd)));
            };
            rustix::fs::fsync(&o.fd).map(|_| (0, 0)).map_err(|e| {
                errno_fail(e, "fsync", f, &filesets[o.fileset].paths[o.entry as usize])
            })
        }
    }
}

/// Deletes entry `e` (taken for [`Want::Delete`]): a file for deletefile, a directory for
/// removedir.
fn remove(fs: &Fileset, e: u32, op: FileOp, f: &FlowopDef) -> Result<(u64, u64), Fail> {
    let path = fs.paths[e as usize].as_c_str();
    let (r, what) = if op == FileOp::RemoveDir {
        (rustix::fs::rmdir(path), "rmdir")
    } else {
        (rustix::fs::unlink(path), "unlink")
    };
    match r {
        Ok(()) => {
            fs.deleted(e);
            Ok((0, 0))
        }
        Err(err) => {
            fs.delete_failed(e);
            Err(errno_fail(err, what, f, path))
        }
    }
}

/// One flowop that reads or writes an open file (`op` is its kind), or waits for the
/// asynchronous writes; `Ok((bytes read, bytes written))`.
pub(crate) fn exec_data(
    filesets: &[Fileset],
    f: &FlowopDef,
    op: DataOp,
    t: &mut ThreadIo,
    stop: &dyn Fn() -> bool,
) -> Result<(u64, u64), Fail> {
    let iosize = iosize_of(f, &mut t.rng);
    match op {
        DataOp::ReadWholeFile => {
            let mut buf = std::mem::replace(&mut t.buf, Buf::empty());
            let r = (|| {
                io_fd(filesets, f, t, stop)?;
                let o = t.fds[f.fd as usize].as_mut().expect("opened by io_fd");
                let b = buf.get(iosize);
                let mut off = 0u64;
                loop {
                    match rustix::io::pread(&o.fd, &mut *b, off) {
                        Ok(n) => {
                            off += n as u64;
                            if n < iosize {
                                break;
                            }
                        }
                        Err(e) => {
                            return Err(errno_fail(
                                e,
                                "read",
                                f,
                                &filesets[o.fileset].paths[o.entry as usize],
                            ))
                        }
                    }
                }
                o.size = Some(off);
                Ok((off, 0))
            })();
            t.buf = buf;
            r
        }
        DataOp::WriteWholeFile => {
            let src = f.srcfd.unwrap_or(f.fd) as usize;
            let size = match t.fds[src].as_ref() {
                Some(s) => filesets[s.fileset].sizes[s.entry as usize],
                None => {
                    return Err(workload_err(f, format!("srcfd {src} is not open")));
                }
            };
            let mut buf = std::mem::replace(&mut t.buf, Buf::empty());
            let r = (|| {
                io_fd(filesets, f, t, stop)?;
                let o = t.fds[f.fd as usize].as_mut().expect("opened by io_fd");
                let mut off = 0u64;
                while off < size {
                    let n = (size - off).min(iosize as u64) as usize;
                    match write_at(&o.fd, buf.write(n), off, f.dsync) {
                        Ok(k) => off += k as u64,
                        Err(e) => {
                            return Err(errno_fail(
                                e,
                                "write",
                                f,
                                &filesets[o.fileset].paths[o.entry as usize],
                            ))
                        }
                    }
                }
                o.size = Some(o.size.unwrap_or(0).max(size));
                Ok((0, off))
            })();
            t.buf = buf;
            r
        }
        DataOp::AppendFile | DataOp::AppendFileRand => {
            let n = if op == DataOp::AppendFileRand {
                t.rng.between(1, iosize as u64) as usize
            } else {
                iosize
            };
            let mut buf = std::mem::replace(&mut t.buf, Buf::empty());
            let r = (|| {
                io_fd(filesets, f, t, stop)?;
                let o = t.fds[f.fd as usize].as_mut().expect("opened by io_fd");
                let mut flags = ReadWriteFlags::APPEND;
                if f.dsync {
                    flags |= ReadWriteFlags::DSYNC;
                }
                // RWF_APPEND: the kernel writes at the end of the file, atomically with respect
                // to other appends (O_APPEND semantics for this one write).
                match rustix::io::pwritev2(&o.fd, &[IoSlice::new(buf.write(n))], 0, flags) {
                    Ok(k) => {
                        if let Some(s) = &mut o.size {
                            *s += k as u64;
                        }
                        Ok((0, k as u64))
                    }
                    Err(e) => Err(errno_fail(
                        e,
                        "append",
                        f,
                        &filesets[o.fileset].paths[o.entry as usize],
                    )),
                }
            })();
            t.buf = buf;
            r
        }
        DataOp::Read | DataOp::Write | DataOp::AioWrite => {
            let write = op != DataOp::Read;
            let mut buf = std::mem::replace(&mut t.buf, Buf::empty());
            let mut aio = t.aio.take();
            let r = (|| {
                io_fd(filesets, f, t, stop)?;
                let o = t.fds[f.fd as usize].as_mut().expect("opened by io_fd");
                let path = &filesets[o.fileset].paths[o.entry as usize];
                let size = if write {
                    filesets[o.fileset].sizes[o.entry as usize]
                } else {
                    match o.size {
                        Some(s) => s,
                        None => {
                            let s = rustix::fs::fstat(&o.fd)
                                .map_err(|e| errno_fail(e, "fstat", f, path))?
                                .st_size as u64;
                            o.size = Some(s);
                            s
                        }
                    }
                };
                let io = iosize as u64;
                let off = offset_of(f, o, size, io, &mut t.rng);
                if op == DataOp::AioWrite {
                    let a = match &mut aio {
                        Some(a) => a,
                        None => aio.insert(crate::aio::Aio::new()),
                    };
                    a.write(&o.fd, buf.write(iosize), off, f.dsync)
                        .map_err(|e| errno_fail(e, "aiowrite", f, path))?;
                    o.off = off + io;
                    return Ok((0, io));
                }
                let r = if write {
                    write_at(&o.fd, buf.write(iosize), off, f.dsync)
                } else {
                    rustix::io::pread(&o.fd, buf.get(iosize), off)
                };
                match r {
                    Ok(n) => {
                        o.off = off + n as u64;
                        if write {
                            o.size = Some(o.size.unwrap_or(0).max(o.off));
                            Ok((0, n as u64))
                        } else {
                            Ok((n as u64, 0))
                        }
                    }
                    Err(e) => Err(errno_fail(e, if write { "write" } else { "read" }, f, path)),
                }
            })();
            t.buf = buf;
            t.aio = aio;
            r
        }
        DataOp::AioWait => match &mut t.aio {
            Some(a) => a.wait_all().map(|_| (0, 0)).map_err(Fail::Fatal),
            None => Ok((0, 0)),
        },
    }
}

/// Reads a whole directory; the number of entries.
fn list_dir(dir: &std::path::Path) -> Result<u64, Errno> {
    let rd = std::fs::read_dir(dir).map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?;
    let mut n = 0;
    for e in rd {
        e.map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?;
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The buffer takes as many numbers from the generator wherever the allocator puts it: its
    /// alignment pad once took a share, so that a thread's later choices depended on the heap
    /// (a seed repeated itself alone, not beside other tests).
    #[test]
    fn a_buffer_draws_the_same_numbers_wherever_it_lands() {
        for data in [DataPattern::Incompressible, DataPattern::Compressible(50)] {
            let mut after = std::collections::BTreeSet::new();
            let mut offsets = std::collections::BTreeSet::new();
            // Allocations kept alive (the buffers too, so that none lands where the last one
            // was freed) move where the next buffer lands.
            let mut kept = Vec::new();
            for k in 0..64usize {
                kept.push(vec![1u8; 16 * k + 1]);
                let mut rng = Rng::new(7);
                let b = Buf::new(65536, data, &mut rng);
                offsets.insert(b.off);
                after.insert(rng.next_u64());
                kept.push(b.v);
            }
            assert!(
                offsets.len() > 1,
                "the buffers all landed alike: {offsets:?}"
            );
            assert_eq!(after.len(), 1, "{data}: {} different states", after.len());
        }
    }
}

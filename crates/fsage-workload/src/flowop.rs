//! Flowops: the kinds a `.f` file can name, what each needs, and what one execution of each does.
//!
//! To add a flowop: a variant of [`FlowopKind`] (and its `.f` name in [`FlowopKind::ALL`] and
//! [`FlowopKind::name`]); what it needs from its attributes ([`FlowopKind::needs_fileset`],
//! [`FlowopKind::needs_iosize`], which the parser checks) and what it moves
//! ([`FlowopKind::reads`], [`FlowopKind::writes`], for the summary); and its arm in [`exec`].
//! The engine around it (threads, timing, warm-up, stop conditions, statistics) needs no change.

use crate::error::Error;
use crate::fileset::{Fileset, Want};
use crate::model::FlowopDef;
use fsage_plan::Rng;
use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags};
use rustix::io::{Errno, ReadWriteFlags};
use serde::{Deserialize, Serialize};
use std::io::IoSlice;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlowopKind {
    CreateFile,
    OpenFile,
    CloseFile,
    ReadWholeFile,
    WriteWholeFile,
    AppendFile,
    AppendFileRand,
    Read,
    Write,
    Fsync,
    DeleteFile,
    StatFile,
}

impl FlowopKind {
    pub const ALL: [FlowopKind; 12] = [
        FlowopKind::CreateFile,
        FlowopKind::OpenFile,
        FlowopKind::CloseFile,
        FlowopKind::ReadWholeFile,
        FlowopKind::WriteWholeFile,
        FlowopKind::AppendFile,
        FlowopKind::AppendFileRand,
        FlowopKind::Read,
        FlowopKind::Write,
        FlowopKind::Fsync,
        FlowopKind::DeleteFile,
        FlowopKind::StatFile,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FlowopKind::CreateFile => "createfile",
            FlowopKind::OpenFile => "openfile",
            FlowopKind::CloseFile => "closefile",
            FlowopKind::ReadWholeFile => "readwholefile",
            FlowopKind::WriteWholeFile => "writewholefile",
            FlowopKind::AppendFile => "appendfile",
            FlowopKind::AppendFileRand => "appendfilerand",
            FlowopKind::Read => "read",
            FlowopKind::Write => "write",
            FlowopKind::Fsync => "fsync",
            FlowopKind::DeleteFile => "deletefile",
            FlowopKind::StatFile => "statfile",
        }
    }

    pub fn from_name(s: &str) -> Option<FlowopKind> {
        FlowopKind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// Flowops that pick a file of a fileset themselves.
    pub fn needs_fileset(self) -> bool {
        matches!(
            self,
            FlowopKind::CreateFile
                | FlowopKind::OpenFile
                | FlowopKind::DeleteFile
                | FlowopKind::StatFile
        )
    }

    /// Flowops that move `iosize` bytes at a time and have no default for it.
    pub fn needs_iosize(self) -> bool {
        matches!(
            self,
            FlowopKind::Read
                | FlowopKind::Write
                | FlowopKind::AppendFile
                | FlowopKind::AppendFileRand
        )
    }

    /// Reads data (for the read/write split of the summary).
    pub fn reads(self) -> bool {
        matches!(self, FlowopKind::Read | FlowopKind::ReadWholeFile)
    }

    pub fn writes(self) -> bool {
        matches!(
            self,
            FlowopKind::Write
                | FlowopKind::WriteWholeFile
                | FlowopKind::AppendFile
                | FlowopKind::AppendFileRand
        )
    }
}

/// A page-aligned buffer (O_DIRECT needs aligned memory), filled with incompressible bytes.
pub(crate) struct Buf {
    v: Vec<u8>,
    off: usize,
}

impl Buf {
    pub(crate) fn new(len: usize, rng: &mut Rng) -> Buf {
        let mut v = vec![0u8; len + 4096];
        for c in v.chunks_mut(8) {
            c.copy_from_slice(&rng.next_u64().to_le_bytes()[..c.len()]);
        }
        let off = v.as_ptr().align_offset(4096);
        Buf { v, off }
    }
    fn get(&mut self, n: usize) -> &mut [u8] {
        &mut self.v[self.off..self.off + n]
    }
}

/// A file a thread holds open under an `fd=` number.
pub(crate) struct OpenFd {
    pub(crate) fd: OwnedFd,
    pub(crate) fileset: usize,
    pub(crate) entry: u32,
    off: u64,
    size: Option<u64>,
    direct: bool,
}

/// Why a flowop did not complete: a full file system (counted, the run goes on), a stop asked
/// for while it waited for a file, or an error that ends the run.
pub(crate) enum Fail {
    Enospc,
    Stopped,
    Fatal(Error),
}

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        Fail::Fatal(e)
    }
}

fn errno_fail(e: Errno, what: &str, f: &FlowopDef, path: &std::ffi::CStr) -> Fail {
    if e == Errno::NOSPC {
        return Fail::Enospc;
    }
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
            fd,
            fileset: fi,
            entry: e,
            off: 0,
            size: create.then_some(0),
            direct: f.directio,
        }),
        Err(err) => Err(errno_fail(
            err,
            if create { "create" } else { "open" },
            f,
            path,
        )),
    }
}

/// The open file an I/O flowop works on: its fd, or (with a fileset and an empty fd) a file of
/// that fileset opened now and kept open, as Filebench's webserver log appends expect.
fn io_fd<'a>(
    filesets: &[Fileset],
    f: &FlowopDef,
    fds: &'a mut [Option<OpenFd>],
    rng: &mut Rng,
    stop: &dyn Fn() -> bool,
) -> Result<&'a mut OpenFd, Fail> {
    let slot = f.fd as usize;
    if fds[slot].is_none() {
        let Some(fi) = f.fileset else {
            return Err(workload_err(
                f,
                format!("fd {} is not open (open it with openfile or createfile first, or give filesetname)", f.fd),
            ));
        };
        let Some(e) = filesets[fi].take(Want::Open, rng, stop)? else {
            return Err(Fail::Stopped);
        };
        match open_entry(filesets, fi, e, false, f) {
            Ok(o) => fds[slot] = Some(o),
            Err(x) => {
                filesets[fi].release(e);
                return Err(x);
            }
        }
    }
    let o = fds[slot].as_mut().expect("slot filled above");
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
    Ok(o)
}

fn write_at(fd: &OwnedFd, data: &[u8], off: u64, dsync: bool) -> Result<usize, Errno> {
    if dsync {
        rustix::io::pwritev2(fd, &[IoSlice::new(data)], off, ReadWriteFlags::DSYNC)
    } else {
        rustix::io::pwrite(fd, data, off)
    }
}

/// One flowop; `Ok((bytes read, bytes written))`.
pub(crate) fn exec(
    filesets: &[Fileset],
    f: &FlowopDef,
    fds: &mut [Option<OpenFd>],
    buf: &mut Buf,
    rng: &mut Rng,
    stop: &dyn Fn() -> bool,
) -> Result<(u64, u64), Fail> {
    let slot = f.fd as usize;
    let iosize = f.iosize.unwrap_or(1 << 20) as usize;
    match f.kind {
        FlowopKind::CreateFile | FlowopKind::OpenFile => {
            if fds[slot].is_some() {
                return Err(workload_err(f, format!("fd {} is already open", f.fd)));
            }
            let fi = f.fileset.expect("checked by the parser");
            let create = f.kind == FlowopKind::CreateFile;
            let want = if create { Want::Create } else { Want::Open };
            let fs = &filesets[fi];
            let Some(e) = fs.take(want, rng, stop)? else {
                return Err(Fail::Stopped);
            };
            match open_entry(filesets, fi, e, create, f) {
                Ok(o) => {
                    if create {
                        fs.created(e);
                    }
                    fds[slot] = Some(o);
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
        FlowopKind::CloseFile => {
            let Some(o) = fds[slot].take() else {
                return Err(workload_err(f, format!("fd {} is not open", f.fd)));
            };
            drop(o.fd);
            filesets[o.fileset].release(o.entry);
            Ok((0, 0))
        }
        FlowopKind::DeleteFile | FlowopKind::StatFile => {
            let fi = f.fileset.expect("checked by the parser");
            let fs = &filesets[fi];
            let del = f.kind == FlowopKind::DeleteFile;
            let Some(e) = fs.take(if del { Want::Delete } else { Want::Open }, rng, stop)? else {
                return Err(Fail::Stopped);
            };
            let path = fs.paths[e as usize].as_c_str();
            if del {
                match rustix::fs::unlink(path) {
                    Ok(()) => {
                        fs.deleted(e);
                        Ok((0, 0))
                    }
                    Err(err) => {
                        fs.delete_failed(e);
                        Err(errno_fail(err, "unlink", f, path))
                    }
                }
            } else {
                let r = rustix::fs::stat(path);
                fs.release(e);
                r.map(|_| (0, 0))
                    .map_err(|err| errno_fail(err, "stat", f, path))
            }
        }
        FlowopKind::Fsync => {
            let Some(o) = fds[slot].as_ref() else {
                return Err(workload_err(f, format!("fd {} is not open", f.fd)));
            };
            rustix::fs::fsync(&o.fd).map(|_| (0, 0)).map_err(|e| {
                errno_fail(e, "fsync", f, &filesets[o.fileset].paths[o.entry as usize])
            })
        }
        FlowopKind::ReadWholeFile => {
            let o = io_fd(filesets, f, fds, rng, stop)?;
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
        }
        FlowopKind::WriteWholeFile => {
            let src = f.srcfd.unwrap_or(f.fd) as usize;
            let size = match fds[src].as_ref() {
                Some(s) => filesets[s.fileset].sizes[s.entry as usize],
                None => {
                    return Err(workload_err(f, format!("srcfd {src} is not open")));
                }
            };
            let o = io_fd(filesets, f, fds, rng, stop)?;
            let mut off = 0u64;
            while off < size {
                let n = (size - off).min(iosize as u64) as usize;
                let b = buf.get(n);
                match write_at(&o.fd, b, off, f.dsync) {
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
        }
        FlowopKind::AppendFile | FlowopKind::AppendFileRand => {
            let n = if f.kind == FlowopKind::AppendFileRand {
                rng.between(1, iosize as u64) as usize
            } else {
                iosize
            };
            let o = io_fd(filesets, f, fds, rng, stop)?;
            let mut flags = ReadWriteFlags::APPEND;
            if f.dsync {
                flags |= ReadWriteFlags::DSYNC;
            }
            // RWF_APPEND: the kernel writes at the end of the file, atomically with respect to
            // other appends (O_APPEND semantics for this one write).
            match rustix::io::pwritev2(&o.fd, &[IoSlice::new(buf.get(n))], 0, flags) {
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
        }
        FlowopKind::Read | FlowopKind::Write => {
            let write = f.kind == FlowopKind::Write;
            let o = io_fd(filesets, f, fds, rng, stop)?;
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
            let off = if f.random {
                rng.below((size / io).max(1)) * io
            } else {
                if o.off + io > size.max(io) {
                    o.off = 0;
                }
                o.off
            };
            let b = buf.get(iosize);
            let r = if write {
                write_at(&o.fd, b, off, f.dsync)
            } else {
                rustix::io::pread(&o.fd, &mut *b, off)
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
        }
    }
}

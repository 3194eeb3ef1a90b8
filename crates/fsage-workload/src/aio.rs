//! Asynchronous writes for `aiowrite`/`aiowait`: io_uring (the `io-uring` crate), one ring per
//! thread. `aiowrite` copies its data into a buffer of its own and submits; `aiowait` waits for
//! every write the thread has in flight. Where the kernel refuses io_uring (old kernels, a
//! seccomp filter) the write is done at once with `pwrite`, and the run says so
//! ([`io_uring_available`]).

use crate::error::Error;
use io_uring::{opcode, types, IoUring};
use rustix::fd::{AsRawFd, OwnedFd};
use rustix::io::{Errno, ReadWriteFlags};
use std::collections::HashMap;

const RING_ENTRIES: u32 = 64;

pub(crate) struct Aio {
    ring: Option<IoUring>,
    /// Buffers of the writes in flight, by their user data.
    pending: HashMap<u64, Vec<u8>>,
    next: u64,
}

/// Whether this kernel lets fsage use io_uring (probed once per run by the engine).
pub fn io_uring_available() -> bool {
    IoUring::new(2).is_ok()
}

impl Aio {
    pub(crate) fn new() -> Aio {
        let ring = IoUring::new(RING_ENTRIES).ok();
        Aio {
            ring,
            pending: HashMap::new(),
            next: 1,
        }
    }

    /// Submits a write of `data` at `off`; the error of a failed submission (a failed write
    /// shows at [`Aio::wait_all`]).
    pub(crate) fn write(
        &mut self,
        fd: &OwnedFd,
        data: &[u8],
        off: u64,
        dsync: bool,
    ) -> Result<(), Errno> {
        let Some(ring) = &mut self.ring else {
            let flags = if dsync {
                ReadWriteFlags::DSYNC
            } else {
                ReadWriteFlags::empty()
            };
            return rustix::io::pwritev2(fd, &[std::io::IoSlice::new(data)], off, flags)
                .map(|_| ());
        };
        if self.pending.len() >= RING_ENTRIES as usize {
            reap(ring, &mut self.pending, 1).map_err(|_| Errno::IO)?;
        }
        let buf = data.to_vec();
        let id = self.next;
        self.next += 1;
        let mut flags = 0;
        if dsync {
            flags |= ReadWriteFlags::DSYNC.bits() as i32;
        }
        let e = opcode::Write::new(types::Fd(fd.as_raw_fd()), buf.as_ptr(), buf.len() as u32)
            .offset(off)
            .rw_flags(flags)
            .build()
            .user_data(id);
        // The buffer lives in `pending` (its heap block does not move) until the completion.
        self.pending.insert(id, buf);
        // SAFETY: the entry's buffer stays alive and unmoved until its completion is reaped.
        let pushed = unsafe { ring.submission().push(&e) };
        if pushed.is_err() {
            ring.submit()
                .map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?;
            // SAFETY: as above.
            unsafe { ring.submission().push(&e) }.map_err(|_| Errno::AGAIN)?;
        }
        ring.submit()
            .map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?;
        Ok(())
    }

    /// Waits for every write in flight; the first failed one is the error.
    pub(crate) fn wait_all(&mut self) -> Result<(), Error> {
        let Some(ring) = &mut self.ring else {
            return Ok(());
        };
        while !self.pending.is_empty() {
            reap(ring, &mut self.pending, 1)?;
        }
        Ok(())
    }
}

/// Waits for at least `want` completions and takes every one there is.
fn reap(ring: &mut IoUring, pending: &mut HashMap<u64, Vec<u8>>, want: usize) -> Result<(), Error> {
    ring.submit_and_wait(want)
        .map_err(|e| Error::io("io_uring wait", "aiowait", e))?;
    let mut failed = None;
    for c in ring.completion() {
        pending.remove(&c.user_data());
        if c.result() < 0 && failed.is_none() {
            failed = Some(c.result());
        }
    }
    match failed {
        Some(r) => Err(Error::io(
            "asynchronous write",
            "aiowrite",
            std::io::Error::from_raw_os_error(-r),
        )),
        None => Ok(()),
    }
}

impl Drop for Aio {
    fn drop(&mut self) {
        // The kernel may still write from the buffers: wait before they are freed.
        let _ = self.wait_all();
    }
}

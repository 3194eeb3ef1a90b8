//! Scheduling the threads that time requests: the daemon's, and the measuring threads of the
//! benchmark (`measure`), which must not wait behind other work on the CPUs either.

/// Puts the calling thread (and the threads it makes) in `SCHED_FIFO` at a middle priority.
/// libc, because rustix does not wrap sched_setscheduler (`rustix::not_implemented`).
pub(crate) fn set_realtime() -> std::io::Result<()> {
    let param = libc::sched_param { sched_priority: 20 };
    // SAFETY: a plain system call on the calling thread with a valid parameter.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

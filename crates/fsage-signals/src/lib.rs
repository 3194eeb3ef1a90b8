//! SIGINT and SIGTERM set a flag instead of killing fsage, so that a run can write its report and
//! state, and a lab command can unmount, detach and remove its temporary files. Tools such as
//! `timeout` send a signal to the process and then to its group, so one keypress can arrive twice:
//! repeats are absorbed, and only a third signal kills at once.
//!
//! This crate calls libc, not rustix, on purpose: installing a handler in a program linked with
//! libc must go through libc's `sigaction` (it sets up the signal trampoline and its own signal
//! bookkeeping). rustix leaves `sigaction` out for that reason (`rustix::not_implemented::
//! libc_internals`); its `runtime::kernel_sigaction` is for programs with no libc at all.

use std::sync::atomic::{AtomicU32, Ordering};

static SIGNALS: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    if SIGNALS.fetch_add(1, Ordering::SeqCst) >= 2 {
        // SAFETY: signal and raise are async-signal-safe.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }
}

/// Installs the handlers (idempotent).
pub fn install() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: an all-zero `sigaction` is a valid one (empty mask, no flags, SIG_DFL) before the
    // handler is set in it; sigaction only reads the struct we pass and is given no old-action
    // pointer; the handler only touches an atomic and async-signal-safe calls.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = handler;
        libc::sigaction(libc::SIGINT, &act, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &act, std::ptr::null_mut());
    }
}

/// Did SIGINT or SIGTERM arrive since [`install`]?
pub fn interrupted() -> bool {
    SIGNALS.load(Ordering::Relaxed) > 0
}

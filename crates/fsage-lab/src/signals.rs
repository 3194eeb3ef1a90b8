//! SIGINT and SIGTERM set a flag instead of killing fsage, so that a lab command can stop, unmount,
//! detach and remove its temporary files. A third signal kills at once.

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
    // SAFETY: the handler only touches an atomic and async-signal-safe calls.
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

/// `Err` naming `what` when interrupted.
pub fn check(what: &str) -> crate::Result<()> {
    if interrupted() {
        crate::bail!("{what}: interrupted by a signal; cleaned up");
    }
    Ok(())
}

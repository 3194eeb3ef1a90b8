//! SIGINT and SIGTERM set a flag instead of killing fsage (see `fsage-signals`), so that a lab
//! command can stop, unmount, detach and remove its temporary files. A third signal kills at once.

pub use fsage_signals::{install, interrupted};

/// `Err` naming `what` when interrupted.
pub fn check(what: &str) -> crate::Result<()> {
    if interrupted() {
        return Err(crate::Error::interrupted(format!(
            "{what}: interrupted by a signal; cleaned up"
        )));
    }
    Ok(())
}

//! SIGINT and SIGTERM end a run cleanly (report written, op log flushed, state saved): see
//! `fsage-signals`.

pub use fsage_signals::{install, interrupted};

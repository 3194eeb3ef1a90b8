//! The engine's errors, each saying who is to fix it (`blame`).

use fsage_sys::Blame;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A `.f` file that fsage cannot read: its file (or built-in name), line and what is wrong.
    #[error("{origin}:{line}: {msg}")]
    Parse {
        origin: String,
        line: usize,
        msg: String,
    },
    #[error("unknown workload {0:?}: the built-ins are fileserver, varmail, webserver and webproxy, or give a .f file")]
    UnknownWorkload(String),
    #[error("{origin}: no variable ${var} to override (the workload has no `set ${var}=` line)")]
    UnknownVar { origin: String, var: String },
    #[error("bad variable override {0:?}: expected VAR=VALUE")]
    BadOverride(String),
    // The cause is the source, not in the text: `{:#}` prints it after this once.
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The target directory cannot hold the run (not empty, not a directory, too small).
    #[error("{0}")]
    Target(String),
    /// A setting that cannot work (zero reps, a ratio out of range).
    #[error("{0}")]
    Config(String),
    /// A run setting out of range: which, its value and why.
    #[error("{} {value}: {why}", setting.name())]
    Setting {
        setting: Setting,
        value: String,
        why: &'static str,
    },
    /// A fileset has no file for a flowop and no flowop could give it one.
    #[error("fileset {fileset} ran dry: {msg}")]
    RunDry { fileset: String, msg: String },
    /// A workload that names an fd it never opened, or opens one twice.
    #[error("flowop {flowop}: {msg}")]
    Workload { flowop: String, msg: String },
    /// A system call of a flowop or of the layout failed (other than ENOSPC on a write, mkdir or
    /// append, which is counted).
    // The cause in the text, and not a source, which would print it twice.
    #[error("{what} {}: {err}", path.display())]
    Io {
        what: String,
        path: PathBuf,
        err: std::io::Error,
    },
    #[error("memory cgroup: {0}")]
    Cgroup(String),
    /// Nothing was measured: no operation completed in the measured interval.
    #[error("no valid result: {0}")]
    NoResult(String),
    #[error("interrupted before anything was measured")]
    Interrupted,
}

impl fsage_sys::Blamed for Error {
    fn blame(&self) -> Blame {
        match self {
            Error::Parse { .. }
            | Error::UnknownWorkload(_)
            | Error::UnknownVar { .. }
            | Error::BadOverride(_)
            | Error::Target(_)
            | Error::Config(_)
            | Error::Setting { .. }
            | Error::RunDry { .. }
            | Error::Workload { .. } => Blame::Input,
            Error::Interrupted => Blame::Interrupted,
            // A missing path, a permission refused, a read-only file system: the user's to fix.
            Error::Read { source: e, .. } | Error::Io { err: e, .. } => {
                fsage_sys::io_blame(e.kind())
            }
            Error::Cgroup(_) | Error::NoResult(_) => Blame::Operation,
        }
    }
}

/// The settings of a run that [`crate::RunConfig::check`] refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    Reps,
    Threads,
    CacheRatio,
    Ops,
}

impl Setting {
    pub fn name(self) -> &'static str {
        match self {
            Setting::Reps => "repetitions",
            Setting::Threads => "threads",
            Setting::CacheRatio => "cache ratio",
            Setting::Ops => "operation count",
        }
    }
}

impl Error {
    pub(crate) fn io(
        what: impl Into<String>,
        path: impl Into<PathBuf>,
        err: std::io::Error,
    ) -> Error {
        Error::Io {
            what: what.into(),
            path: path.into(),
            err,
        }
    }
}

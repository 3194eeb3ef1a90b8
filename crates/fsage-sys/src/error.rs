//! The error most fsage libraries return: a message that names what went wrong and where, and who
//! has to act on it. One type, so that a lab error passes through Git aging or the slow device
//! unchanged, and the command line needs one downcast for all of them.

use crate::{Blame, Blamed, WriteError};

/// What went wrong (a path, a device, a value and what is wrong with it) and who has to act:
/// bad input (a path that is no image, a mounted device refused) or a failed operation (a mount,
/// a tool, a checksum, an I/O error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    pub message: String,
    pub blame: Blame,
    /// What the caller can change to get past a refusal, if one thing does it.
    pub remedy: Option<Remedy>,
}

/// The setting that gets past a refused input, named in the domain's words. Libraries never name
/// command-line flags; the command line maps each remedy to its flag for a hint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remedy {
    /// The refusal protects something that exists (a file, a file system, a snapshot): forcing
    /// the operation overrides it.
    Force,
    /// A size must be given or changed (an image file has none of its own).
    Size,
    /// The size given is below the least the file system can be made in: this many bytes.
    SizeAtLeast(u64),
    /// Another name must be chosen (or the existing one forced out).
    Name,
    /// The zstd compression level is out of range.
    Level,
    /// The capacity the tree is measured against must be given or changed.
    Capacity,
    /// The size of the probe file must be changed.
    Probe,
    /// The base of the size bins must be changed.
    SizeBase,
    /// The base of the age bins must be changed.
    AgeBase,
    /// Another raw snapshot must be given.
    Snapshot,
    /// Roll back by comparing the whole image with its snapshot instead of the recorded blocks.
    Compare,
    /// The running kernel lacks the file system: run the command under a kernel that has it (a
    /// virtual machine).
    Vm,
}

impl Error {
    /// The caller's input is at fault (exit code 2 at the command line).
    pub fn input(message: impl Into<String>) -> Error {
        Error {
            message: message.into(),
            blame: Blame::Input,
            remedy: None,
        }
    }
    /// An operation failed (exit code 1).
    pub fn operation(message: impl Into<String>) -> Error {
        Error {
            message: message.into(),
            blame: Blame::Operation,
            remedy: None,
        }
    }
    /// A signal stopped the operation (exit code 130).
    pub fn interrupted(message: impl Into<String>) -> Error {
        Error {
            message: message.into(),
            blame: Blame::Interrupted,
            remedy: None,
        }
    }
    /// The same error, saying which setting gets past it.
    pub fn with_remedy(self, remedy: Remedy) -> Error {
        Error {
            remedy: Some(remedy),
            ..self
        }
    }
    /// A failed system call on `path` (`what`: the operation, or empty), blamed by
    /// [`crate::io_blame`]: `PATH: WHAT: ERROR`.
    pub fn io(path: &std::path::Path, what: &str, e: std::io::Error) -> Error {
        let message = if what.is_empty() {
            format!("{}: {e}", path.display())
        } else {
            format!("{}: {what}: {e}", path.display())
        };
        Error {
            message,
            blame: crate::io_blame(e.kind()),
            remedy: None,
        }
    }
}

impl Blamed for Error {
    fn blame(&self) -> Blame {
        self.blame
    }
    fn remedy(&self) -> Option<Remedy> {
        self.remedy
    }
}

/// A bare message is the caller's input at fault (the helpers that return `Result<_, String>`
/// check input).
impl From<String> for Error {
    fn from(s: String) -> Error {
        Error::input(s)
    }
}

impl From<WriteError> for Error {
    fn from(e: WriteError) -> Error {
        Error {
            blame: e.blame(),
            message: e.to_string(),
            remedy: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_io_error_is_blamed_by_its_kind() {
        use std::io::{Error as Io, ErrorKind};
        let p = std::path::Path::new("/x");
        let e = Error::io(p, "open", Io::from(ErrorKind::NotFound));
        assert_eq!(e.blame(), Blame::Input);
        assert!(e.message.starts_with("/x: open: "), "{e}");
        assert_eq!(e.message.matches("not found").count(), 1, "{e}");
        let e = Error::io(p, "", Io::from_raw_os_error(5));
        assert_eq!(e.blame(), Blame::Operation, "EIO: {e}");
        assert_eq!(crate::io_blame(ErrorKind::StorageFull), Blame::Operation);
        assert_eq!(crate::io_blame(ErrorKind::AlreadyExists), Blame::Input);
    }

    #[test]
    fn blame_follows_the_constructor_and_the_write_error() {
        assert_eq!(Error::input("x").blame(), Blame::Input);
        assert_eq!(Error::operation("x").blame(), Blame::Operation);
        let missing = WriteError {
            path: "/nonexistent/r.json".into(),
            err: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        let e = Error::from(missing);
        assert_eq!(e.blame(), Blame::Input);
        assert!(e.to_string().contains("/nonexistent/r.json"), "{e}");
        let full = WriteError {
            path: "r.json".into(),
            err: std::io::Error::from(std::io::ErrorKind::StorageFull),
        };
        assert_eq!(Error::from(full).blame(), Blame::Operation);
    }
}

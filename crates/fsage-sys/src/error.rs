//! The error most fsage libraries return: a message that names what went wrong and where, and who
//! has to act on it. One type, so that a lab error passes through Git aging or the slow device
//! unchanged, and the command line needs one downcast for all of them.

use crate::{Blame, WriteError};

/// What went wrong (a path, a device, a value and what is wrong with it) and who has to act:
/// bad input (a path that is no image, a mounted device refused) or a failed operation (a mount,
/// a tool, a checksum, an I/O error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    pub message: String,
    pub blame: Blame,
}

impl Error {
    /// The caller's input is at fault (exit code 2 at the command line).
    pub fn input(message: impl Into<String>) -> Error {
        Error {
            message: message.into(),
            blame: Blame::Input,
        }
    }
    /// An operation failed (exit code 1).
    pub fn operation(message: impl Into<String>) -> Error {
        Error {
            message: message.into(),
            blame: Blame::Operation,
        }
    }
    pub fn blame(&self) -> Blame {
        self.blame
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
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

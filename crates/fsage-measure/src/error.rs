//! The error of this crate's porcelain (`frag`, `load_reports`, `extract_profile`): a message
//! naming the path or value, and who is to blame, which decides the exit code.

use fsage_sys::Blame;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A path, report file or option is wrong: the user can fix it.
    #[error("{0}")]
    Input(String),
    /// Measuring or walking failed on a valid input.
    #[error("{0}")]
    Failed(String),
    /// Bad input, with the setting that gets past it when one does (a capacity the tree does not
    /// fit in, a probe larger than the free space).
    #[error(transparent)]
    Setting(fsage_sys::Error),
    /// Writing a result failed.
    #[error(transparent)]
    Write(#[from] fsage_sys::WriteError),
}

/// The messages of the measurements themselves (a statfs, a FIEMAP, an ioctl refused): the
/// measurement failed on an input the porcelain has checked.
impl From<String> for Error {
    fn from(message: String) -> Error {
        Error::Failed(message)
    }
}

impl fsage_sys::Blamed for Error {
    fn blame(&self) -> Blame {
        match self {
            Error::Input(_) => Blame::Input,
            Error::Failed(_) => Blame::Operation,
            Error::Setting(e) => e.blame(),
            Error::Write(e) => e.blame(),
        }
    }

    /// The setting that gets past this error, for the command line to name its flag.
    fn remedy(&self) -> Option<fsage_sys::Remedy> {
        match self {
            Error::Setting(e) => e.remedy,
            _ => None,
        }
    }
}

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
    /// Writing a result failed.
    #[error(transparent)]
    Write(#[from] fsage_sys::WriteError),
}

impl Error {
    pub fn blame(&self) -> Blame {
        match self {
            Error::Input(_) => Blame::Input,
            Error::Failed(_) => Blame::Operation,
            Error::Write(e) => e.blame(),
        }
    }
}

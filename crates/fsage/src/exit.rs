//! Exit codes, one meaning each (README): 0 done, 1 an operation failed, 2 bad input, 130
//! interrupted. Commands return `anyhow::Result<ExitCode>`; errors are classified here, in one
//! place, by walking the error's chain for a library error that says who is to blame.

use fsage_sys::Blame;
use std::process::ExitCode;

pub const FAILED: u8 = 1;
pub const BAD_INPUT: u8 = 2;
pub const INTERRUPTED: u8 = 130;

/// What every command returns.
pub type CmdResult = anyhow::Result<ExitCode>;

/// Bad input found by the command line itself (a flag out of range, a missing argument).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

/// A command stopped by SIGINT or SIGTERM before it finished.
#[derive(Debug, thiserror::Error)]
#[error("interrupted")]
pub struct Interrupted;

/// An error that is the user's to fix: exit code 2.
pub fn bad_input(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(msg.into()))
}

/// `return Err(bad_input(format!(...)))`.
#[macro_export]
macro_rules! bail_input {
    ($($t:tt)*) => { return Err($crate::exit::bad_input(format!($($t)*))) };
}

/// Who is to blame for `e`: the first error in its chain that knows. Errors nobody classified
/// (plain I/O, a tool's failure) count as a failed operation.
pub fn blame(e: &anyhow::Error) -> Blame {
    for cause in e.chain() {
        if cause.is::<BadInput>() || cause.is::<fsage_profile::ProfileError>() {
            return Blame::Input;
        }
        if cause.is::<Interrupted>() {
            return Blame::Interrupted;
        }
        if let Some(e) = cause.downcast_ref::<fsage_lab::age::AgeError>() {
            return e.blame();
        }
        if let Some(e) = cause.downcast_ref::<fsage_exec::preflight::TargetError>() {
            return e.blame();
        }
        // The lab, the slow device, Git aging and experiments share this one type.
        if let Some(e) = cause.downcast_ref::<fsage_sys::Error>() {
            return e.blame();
        }
        if let Some(e) = cause.downcast_ref::<fsage_exec::StateError>() {
            return e.blame();
        }
        if let Some(e) = cause.downcast_ref::<fsage_exec::OpLogError>() {
            return e.blame();
        }
        if let Some(e) = cause.downcast_ref::<fsage_measure::Error>() {
            return e.blame();
        }
        if let Some(e) = cause.downcast_ref::<fsage_workload::Error>() {
            return e.blame();
        }
        if let Some(e) = cause.downcast_ref::<fsage_sys::WriteError>() {
            return e.blame();
        }
    }
    Blame::Operation
}

pub fn code(e: &anyhow::Error) -> u8 {
    match blame(e) {
        Blame::Input => BAD_INPUT,
        Blame::Operation => FAILED,
        Blame::Interrupted => INTERRUPTED,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn codes_follow_the_chain() {
        assert_eq!(code(&bad_input("x")), BAD_INPUT);
        let e = Err::<(), _>(bad_input("--size 0"))
            .context("fs create")
            .unwrap_err();
        assert_eq!(code(&e), BAD_INPUT, "context keeps the cause's class");
        assert_eq!(code(&anyhow::anyhow!("mount failed")), FAILED);
        let io = std::io::Error::other("EIO");
        assert_eq!(code(&anyhow::Error::new(io)), FAILED);
        assert_eq!(code(&anyhow::Error::new(Interrupted)), INTERRUPTED);
    }
}

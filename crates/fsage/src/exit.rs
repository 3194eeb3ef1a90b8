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
        if let Some(e) = cause.downcast_ref::<fsage_exec::preflight::PreflightError>() {
            return e.blame();
        }
        if let Some(e) = cause.downcast_ref::<fsage_exec::planner_bench::PlannerBenchError>() {
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

/// The flag that gets past `e`, when a library error in its chain says which setting does:
/// libraries speak of settings, the command line of its flags.
pub fn hint(e: &anyhow::Error) -> Option<String> {
    use fsage_sys::Remedy;
    let remedy = e.chain().find_map(|cause| {
        if let Some(e) = cause.downcast_ref::<fsage_sys::Error>() {
            e.remedy
        } else {
            cause
                .downcast_ref::<fsage_measure::Error>()
                .and_then(|e| e.remedy())
        }
    })?;
    Some(
        match remedy {
            Remedy::SizeAtLeast(min) => {
                return Some(format!(
                    "give a size of at least {} with --size (e.g. --size {}MiB)",
                    fsage_profile::human_bytes(min),
                    min.max(64 << 20).div_ceil(1 << 20)
                ))
            }
            Remedy::Force => "--force overrides this refusal",
            Remedy::Size => "give the size with --size (e.g. --size 4GiB)",
            Remedy::Name => "--name picks another name; --force replaces the stored image",
            Remedy::Level => "--level takes 1 (fast) to 19 (small)",
            Remedy::Capacity => "give the capacity with --capacity (e.g. --capacity 4GiB)",
            Remedy::Probe => "--probe SIZE sets the probe's size",
            Remedy::SizeBase => "--size-base sets the base of the size bins",
            Remedy::AgeBase => "--age-base sets the base of the age bins",
            Remedy::Snapshot => "--snapshot names another snapshot",
            Remedy::Compare => "`fsage rollback restore --compare` compares the whole image",
        }
        .to_string(),
    )
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

    #[test]
    fn a_remedy_becomes_a_flag_hint_through_context() {
        let e = fsage_sys::Error::input("x: exists").with_remedy(fsage_sys::Remedy::Force);
        let e = Err::<(), _>(e).context("image copy").unwrap_err();
        assert_eq!(code(&e), BAD_INPUT);
        assert!(hint(&e).unwrap().contains("--force"));
        assert_eq!(hint(&bad_input("x")), None);
        let m = fsage_measure::Error::Setting(
            fsage_sys::Error::input("a probe of 0 bytes").with_remedy(fsage_sys::Remedy::Probe),
        );
        assert!(hint(&anyhow::Error::new(m)).unwrap().contains("--probe"));
    }
}

//! Exit codes, one meaning each (README): 0 done, 1 an operation failed, 2 bad input, 130
//! interrupted. Commands return [`CmdResult`]; its error takes who is to blame from the library
//! error it is made of, and only errors that say so ([`Blamed`]) convert: an error type without a
//! blame does not compile here, where it would otherwise exit 1 by omission.

use fsage_sys::{Blame, Blamed, Remedy};
use std::fmt::Display;

pub const FAILED: u8 = 1;
pub const BAD_INPUT: u8 = 2;
pub const INTERRUPTED: u8 = 130;

/// What every command returns: `Ok` exits 0, an error exits by its blame.
pub type CmdResult = Result<(), CmdError>;

/// Why a command did not finish: the message (the context, then each cause), who is to blame and
/// the setting that gets past it.
#[derive(Debug)]
pub struct CmdError {
    /// `None` when the command has already said why it stops (a run's summary): only the exit
    /// code is left to give.
    error: Option<anyhow::Error>,
    blame: Blame,
    remedy: Option<Remedy>,
    /// An exit code passed through from elsewhere (a command run in a virtual machine).
    exact: Option<u8>,
}

impl<E> From<E> for CmdError
where
    E: Blamed + std::error::Error + Send + Sync + 'static,
{
    fn from(e: E) -> CmdError {
        CmdError {
            blame: e.blame(),
            remedy: e.remedy(),
            error: Some(anyhow::Error::new(e)),
            exact: None,
        }
    }
}

impl Display for CmdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.error {
            Some(e) => write!(f, "{e:#}"),
            None => write!(f, "{:?}", self.blame),
        }
    }
}

/// Bad input found by the command line itself (a flag out of range, a missing argument).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

impl Blamed for BadInput {
    fn blame(&self) -> Blame {
        Blame::Input
    }
}

/// An error that is the user's to fix: exit code 2.
pub fn bad_input(msg: impl Into<String>) -> CmdError {
    BadInput(msg.into()).into()
}

/// A refusal `--force` gets past (an output file that exists): exit code 2 and a hint naming
/// `--force`, as every forceable refusal has.
pub fn forceable(msg: impl Into<String>) -> CmdError {
    fsage_sys::Error::input(msg)
        .with_remedy(Remedy::Force)
        .into()
}

/// `return Err(bad_input(format!(...)))`.
#[macro_export]
macro_rules! bail_input {
    ($($t:tt)*) => { return Err($crate::exit::bad_input(format!($($t)*))) };
}

/// The one way a command says that a signal stopped it (exit code 130), after it has said where
/// it stopped.
pub fn interrupted() -> CmdError {
    CmdError::said(Blame::Interrupted)
}

impl CmdError {
    /// The command has told the user why it stops; exit by `blame` without another message.
    pub fn said(blame: Blame) -> CmdError {
        CmdError {
            error: None,
            blame,
            remedy: None,
            exact: None,
        }
    }

    /// Exit with `code` and no message: the code of a command run elsewhere, which has spoken.
    pub fn exact(code: u8) -> CmdError {
        CmdError {
            exact: Some(code),
            ..CmdError::said(Blame::Operation)
        }
    }

    /// The same error under a line saying what the command was doing.
    pub fn context(self, c: impl Display + Send + Sync + 'static) -> CmdError {
        CmdError {
            error: self.error.map(|e| e.context(c)),
            ..self
        }
    }

    pub fn code(&self) -> u8 {
        if let Some(c) = self.exact {
            return c;
        }
        match self.blame {
            Blame::Input => BAD_INPUT,
            Blame::Operation => FAILED,
            Blame::Interrupted => INTERRUPTED,
        }
    }

    /// The message, with the context first and then each cause (`{:#}`); `None` when the command
    /// has said it already.
    pub fn message(&self) -> Option<String> {
        self.error.as_ref().map(|e| format!("{e:#}"))
    }

    /// The flag that gets past the error, when the library error says which setting does:
    /// libraries speak of settings, the command line of its flags.
    pub fn hint(&self) -> Option<String> {
        Some(
            match self.remedy? {
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
                Remedy::Vm => {
                    "run it in a virtual machine whose kernel has this file system: `fsage vm \
                     run --disk IMAGE -- fsage ...` (age --fs does so by itself unless --no-vm)"
                }
            }
            .to_string(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code_of(e: impl Into<CmdError>) -> u8 {
        e.into().code()
    }

    #[test]
    fn codes_follow_the_blame_through_context() {
        assert_eq!(bad_input("x").code(), BAD_INPUT);
        let e = bad_input("--size 0").context("fs create");
        assert_eq!(e.code(), BAD_INPUT, "context keeps the cause's class");
        assert_eq!(e.message().unwrap(), "fs create: --size 0");
        assert_eq!(code_of(fsage_sys::Error::operation("mount failed")), FAILED);
        assert_eq!(interrupted().code(), INTERRUPTED);
        assert_eq!(interrupted().message(), None);
        assert_eq!(CmdError::said(Blame::Operation).code(), FAILED);
    }

    #[test]
    fn a_remedy_becomes_a_flag_hint_through_context() {
        let e = fsage_sys::Error::input("x: exists").with_remedy(fsage_sys::Remedy::Force);
        let e = CmdError::from(e).context("image copy");
        assert_eq!(e.code(), BAD_INPUT);
        assert!(e.hint().unwrap().contains("--force"));
        assert_eq!(bad_input("x").hint(), None);
        let m = fsage_measure::Error::Setting(
            fsage_sys::Error::input("a probe of 0 bytes").with_remedy(fsage_sys::Remedy::Probe),
        );
        assert!(CmdError::from(m).hint().unwrap().contains("--probe"));
    }

    /// Every public error type of the libraries the command line calls. Each must say who is to
    /// blame: this list does not compile for one that does not, and a new type that reaches a
    /// command through `?` does not compile there either (`CmdError` converts only from
    /// [`Blamed`] errors).
    #[test]
    fn every_library_error_type_has_a_blame() {
        fn blamed<E: Blamed + std::error::Error + Send + Sync + 'static>() {}
        blamed::<fsage_sys::Error>();
        blamed::<fsage_sys::WriteError>();
        blamed::<fsage_profile::ProfileError>();
        blamed::<fsage_exec::preflight::TargetError>();
        blamed::<fsage_exec::preflight::PreflightError>();
        blamed::<fsage_exec::planner_bench::PlannerBenchError>();
        blamed::<fsage_exec::StateError>();
        blamed::<fsage_exec::OpLogError>();
        blamed::<fsage_measure::Error>();
        blamed::<fsage_workload::Error>();
        blamed::<fsage_core::age::AgeError>();
        blamed::<fsage_lab::Error>();
        blamed::<fsage_git::Error>();
        blamed::<fsage_slowdev::Error>();
        blamed::<fsage_experiment::Error>();
        blamed::<BadInput>();
    }

    /// A representative bad input of each library error type exits 2 and not 1 by omission, with
    /// a context on top as the commands add one.
    #[test]
    fn bad_input_of_every_library_exits_2() {
        use std::io::{Error as Io, ErrorKind};
        let missing = || Io::from(ErrorKind::NotFound);
        let inputs: Vec<CmdError> = vec![
            fsage_sys::Error::input("x").into(),
            fsage_sys::WriteError {
                path: "/nonexistent/x".into(),
                err: missing(),
            }
            .into(),
            fsage_profile::parse("x = ", "p.toml").unwrap_err().into(),
            fsage_exec::preflight::TargetError::NotADirectory { path: "/x".into() }.into(),
            fsage_exec::StateError::Foreign { path: "s".into() }.into(),
            fsage_exec::OpLogError {
                origin: "ops".into(),
                line: 1,
                message: "x".into(),
            }
            .into(),
            fsage_exec::planner_bench::PlannerBenchError::NoLiveFiles.into(),
            fsage_measure::Error::Input("x".into()).into(),
            fsage_workload::Error::BadOverride("x".into()).into(),
            fsage_core::age::AgeError::Input("x".into()).into(),
            BadInput("x".into()).into(),
        ];
        for e in inputs {
            let msg = e.message();
            assert_eq!(e.context("cmd").code(), BAD_INPUT, "{msg:?}");
        }
        let stopped: CmdError = fsage_workload::Error::Interrupted.into();
        assert_eq!(stopped.code(), INTERRUPTED);
        let stopped: CmdError = fsage_sys::Error::interrupted("x").into();
        assert_eq!(stopped.code(), INTERRUPTED);
    }
}

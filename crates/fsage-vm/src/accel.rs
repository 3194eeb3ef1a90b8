//! KVM or TCG: KVM only when the CPU says it virtualises (vmx or svm in /proc/cpuinfo) and
//! /dev/kvm opens. Both are checked because a /dev/kvm alone is not enough: a paravirtual KVM
//! (kvm_pvm, no vmx flag) opens fine and then hangs stock kernels after they start.

use crate::{Error, Result};
use std::fs::OpenOptions;

/// How the guest's CPU is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accel {
    Kvm,
    /// QEMU's emulator: correct but 5–20x slower; its timings compare only with each other.
    Tcg,
}

impl Accel {
    pub fn name(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }
    /// The platform a guest run on it records in its results.
    pub fn platform(self) -> fsage_sys::PlatformKind {
        match self {
            Accel::Kvm => fsage_sys::PlatformKind::Kvm,
            Accel::Tcg => fsage_sys::PlatformKind::Tcg,
        }
    }
}

/// What the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AccelRequest {
    #[default]
    Auto,
    Kvm,
    Tcg,
}

impl AccelRequest {
    pub fn parse(s: &str) -> Result<AccelRequest> {
        match s {
            "auto" => Ok(AccelRequest::Auto),
            "kvm" => Ok(AccelRequest::Kvm),
            "tcg" => Ok(AccelRequest::Tcg),
            _ => Err(Error::input(format!(
                "accelerator {s:?}: expected auto, kvm or tcg"
            ))),
        }
    }
}

/// The accelerator chosen and why, in words for `fsage vm info` and the run's notice.
#[derive(Debug, Clone)]
pub struct AccelChoice {
    pub accel: Accel,
    pub why: String,
}

/// Why this host cannot run a KVM guest.
#[derive(Debug, thiserror::Error)]
pub enum NoKvm {
    #[error("cannot read /proc/cpuinfo: {0}")]
    Cpuinfo(std::io::Error),
    #[error(
        "the CPU has no vmx or svm flag (a /dev/kvm without them, such as kvm_pvm, hangs stock \
         kernels)"
    )]
    NoVirtualisation,
    #[error("/dev/kvm does not open: {0}")]
    DevKvm(std::io::Error),
}

/// Whether this host can run a KVM guest: `Err(why)` when not.
pub fn kvm_usable() -> std::result::Result<(), NoKvm> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").map_err(NoKvm::Cpuinfo)?;
    let virt = cpuinfo
        .lines()
        .filter(|l| l.starts_with("flags"))
        .any(|l| l.split_whitespace().any(|f| f == "vmx" || f == "svm"));
    if !virt {
        return Err(NoKvm::NoVirtualisation);
    }
    OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .map(|_| ())
        .map_err(NoKvm::DevKvm)
}

/// Picks the accelerator: `auto` takes KVM when [`kvm_usable`], TCG otherwise; `kvm` refuses a
/// host that cannot; `tcg` is always possible.
pub fn choose_accel(req: AccelRequest) -> Result<AccelChoice> {
    match (req, kvm_usable()) {
        (AccelRequest::Tcg, _) => Ok(AccelChoice {
            accel: Accel::Tcg,
            why: "asked for".into(),
        }),
        (AccelRequest::Kvm, Ok(())) | (AccelRequest::Auto, Ok(())) => Ok(AccelChoice {
            accel: Accel::Kvm,
            why: "the CPU virtualises (vmx/svm) and /dev/kvm opens".into(),
        }),
        (AccelRequest::Kvm, Err(why)) => Err(Error::input(format!(
            "KVM asked for, but this host cannot run a KVM guest: {why}"
        ))),
        (AccelRequest::Auto, Err(why)) => Ok(AccelChoice {
            accel: Accel::Tcg,
            why: format!("no KVM: {why}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_refuses_unknown_names() {
        assert_eq!(AccelRequest::parse("tcg").unwrap(), AccelRequest::Tcg);
        let e = AccelRequest::parse("hvf").unwrap_err();
        assert!(e.message.contains("\"hvf\""), "{e}");
    }

    #[test]
    fn tcg_when_asked_whatever_the_host() {
        let c = choose_accel(AccelRequest::Tcg).unwrap();
        assert_eq!(c.accel, Accel::Tcg);
    }
}

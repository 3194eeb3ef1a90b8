//! Where a result was measured: natively, or in a virtual machine under KVM or under QEMU's
//! emulator (TCG). Emulated timings are 5–20x slower and compare only with each other, so every
//! result says which. The VM runner tells the guest through `FSAGE_PLATFORM`.

/// How the CPU that ran a measurement was provided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PlatformKind {
    #[default]
    Native,
    /// A virtual machine with hardware virtualisation: near-native CPU, virtual devices.
    Kvm,
    /// A virtual machine emulated by QEMU's TCG: timings are emulated.
    Tcg,
}

impl PlatformKind {
    pub fn name(self) -> &'static str {
        match self {
            PlatformKind::Native => "native",
            PlatformKind::Kvm => "kvm",
            PlatformKind::Tcg => "tcg",
        }
    }

    pub fn parse(s: &str) -> Option<PlatformKind> {
        match s {
            "native" => Some(PlatformKind::Native),
            "kvm" => Some(PlatformKind::Kvm),
            "tcg" => Some(PlatformKind::Tcg),
            _ => None,
        }
    }

    /// This process's platform: `FSAGE_PLATFORM` (set by the VM runner in its guest), else
    /// native. An unknown value counts as emulated rather than native: a timing of unknown
    /// origin must not be compared with native ones.
    pub fn current() -> PlatformKind {
        match std::env::var("FSAGE_PLATFORM") {
            Ok(v) if !v.is_empty() => PlatformKind::parse(&v).unwrap_or(PlatformKind::Tcg),
            _ => PlatformKind::Native,
        }
    }

    pub fn is_native(&self) -> bool {
        *self == PlatformKind::Native
    }

    /// Timings taken here are emulated.
    pub fn is_emulated(self) -> bool {
        self == PlatformKind::Tcg
    }

    /// How a report labels results from here: none for native ones.
    pub fn label(self) -> Option<&'static str> {
        match self {
            PlatformKind::Native => None,
            PlatformKind::Kvm => Some("in a VM (KVM)"),
            PlatformKind::Tcg => Some("emulated (TCG)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_only_tcg_is_emulated() {
        for k in [PlatformKind::Native, PlatformKind::Kvm, PlatformKind::Tcg] {
            assert_eq!(PlatformKind::parse(k.name()), Some(k));
        }
        assert!(PlatformKind::Tcg.is_emulated());
        assert!(!PlatformKind::Kvm.is_emulated());
        assert_eq!(PlatformKind::Tcg.label(), Some("emulated (TCG)"));
        assert_eq!(PlatformKind::Native.label(), None);
    }
}

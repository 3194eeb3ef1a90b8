//! The registry of model kinds: one row per kind, naming it, reading its parameters, building
//! it, and saying what it can do beyond timing requests ([`Capabilities`]). Everything that
//! asks "what kind of device is this?" asks the row, never a `match` on the kind.
//!
//! # Adding a model kind
//!
//! 1. A module (`crates/fsage-device/src/smr.rs`, say) with its parameters type, its model (a
//!    [`DeviceModel`]), its counters type ([`KindCounters`], see [`crate::counters`]) and a unit
//!    type implementing [`Kind`]: its name in model files, its capabilities, how its parameters
//!    are read from a model file ([`Reader`]) and how it is built for a device of a size.
//! 2. One row in the [`model_kinds!`] call below: `Smr => smr::SmrKind`. That row makes the
//!    [`ModelKind`] variant (the parameters as results record them, `"kind": "smr"`), the
//!    [`DeviceCounters`](crate::DeviceCounters) variant (its counters as results record them) and
//!    the [`KINDS`] entry that model files, `fsage dev models` and every capability question use.
//! 3. Its built-in models, if any: a TOML file in `models/` and a line in `BUILTINS`
//!    (`models.rs`); the tests there check that every built-in reads and names its sources.

use crate::models::{ModelSpec, Reader};
use crate::{DeviceModel, Result};

/// What a model kind can do beyond answering requests; the questions callers used to answer by
/// matching on the kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Capabilities {
    /// A drive state that outlives the device (an SSD's FTL, saved as `IMAGE.ftl`): it ages with
    /// the file system, may be preconditioned, and reads of pages it never saw written follow an
    /// [`UnwrittenReads`](crate::UnwrittenReads) rule.
    pub drive_state: bool,
    /// What a request costs depends on the requests before it (a disk's head and caches, a
    /// flash drive's buffer and dies), beyond waiting for a queue slot: a measurement that must
    /// not profit from an earlier one's caches needs a device of its own.
    pub history: bool,
    /// Every request's completion time is known at its arrival ([`DeviceModel::submit`] always
    /// answers): the real-time daemon needs no model thread for it (its fast path).
    pub answers_at_arrival: bool,
    /// Its timing may be changed while a device runs ([`DeviceModel::retime`], `dev set`).
    pub retimable: bool,
}

/// A model kind (see the module documentation).
pub trait Kind {
    /// Its parameters, checked and in base units, as results record them.
    type Params: std::fmt::Debug + Clone + PartialEq;
    /// Its counters, as results record them.
    type Counters: crate::KindCounters + std::fmt::Debug + Clone + PartialEq;
    /// Its name in model files (`kind = "hdd"`) and in results.
    const NAME: &'static str;
    /// A few words for `fsage dev models` and errors (`a hard disk: seeks, rotation, caches`).
    const SUMMARY: &'static str;
    const CAPABILITIES: Capabilities;
    /// Reads its parameters from a model file's `[params]` (unknown keys are refused after).
    fn read(r: &mut Reader) -> Result<Self::Params>;
    /// Builds a device of `device_size` bytes; `spec` names it in errors.
    fn build(spec: &ModelSpec, p: &Self::Params, device_size: u64) -> Result<Box<dyn DeviceModel>>;
    /// The model scaled down to a drive of `size` bytes (`MODEL@SIZE[/FULL]`), for a kind that
    /// scales; `None`: it does not (the error says why).
    fn scaled(
        _spec: &ModelSpec,
        _p: &Self::Params,
        _size: u64,
        _full: Option<u64>,
    ) -> Option<Result<ModelSpec>> {
        None
    }
    /// The device size a model of this kind implies, when it gives one (a capacity).
    fn capacity(_p: &Self::Params) -> Option<u64> {
        None
    }
}

/// One row of the registry, as callers see it.
#[derive(Clone, Copy)]
pub struct KindEntry {
    pub name: &'static str,
    pub summary: &'static str,
    pub capabilities: Capabilities,
    pub(crate) read: fn(&mut Reader) -> Result<ModelKind>,
}

impl std::fmt::Debug for KindEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KindEntry")
            .field("name", &self.name)
            .field("capabilities", &self.capabilities)
            .finish()
    }
}

/// The registry: from one row per kind, the [`ModelKind`] and
/// [`DeviceCounters`](crate::DeviceCounters) enums (their serde tags are the kinds' names), the
/// [`KINDS`] table and the dispatch from a kind's value to its row.
macro_rules! model_kinds {
    ($($variant:ident => $kind:path),* $(,)?) => {
        /// What kind of device a model is, with its parameters checked and in base units (one
        /// variant per registry row; the JSON names the kind: `"kind": "hdd"`).
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(tag = "kind", rename_all = "snake_case")]
        pub enum ModelKind {
            $($variant(<$kind as Kind>::Params),)*
        }

        /// The counters of a model's kind; the JSON names the kind (`"kind": "hdd"`).
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(tag = "kind", rename_all = "snake_case")]
        pub enum DeviceCounters {
            $($variant(<$kind as Kind>::Counters),)*
        }

        /// Every model kind, one row each.
        pub const KINDS: &[KindEntry] = &[$(KindEntry {
            name: <$kind as Kind>::NAME,
            summary: <$kind as Kind>::SUMMARY,
            capabilities: <$kind as Kind>::CAPABILITIES,
            read: |r| <$kind as Kind>::read(r).map(ModelKind::$variant),
        },)*];

        impl ModelKind {
            /// The kind's name (`fixed`, `hdd`, `ssd`).
            pub fn name(&self) -> &'static str {
                match self {
                    $(ModelKind::$variant(_) => <$kind as Kind>::NAME,)*
                }
            }

            pub fn capabilities(&self) -> Capabilities {
                match self {
                    $(ModelKind::$variant(_) => <$kind as Kind>::CAPABILITIES,)*
                }
            }

            pub(crate) fn build(
                &self,
                spec: &ModelSpec,
                device_size: u64,
            ) -> Result<Box<dyn DeviceModel>> {
                match self {
                    $(ModelKind::$variant(p) => <$kind as Kind>::build(spec, p, device_size),)*
                }
            }

            pub(crate) fn scaled(
                &self,
                spec: &ModelSpec,
                size: u64,
                full: Option<u64>,
            ) -> Option<Result<ModelSpec>> {
                match self {
                    $(ModelKind::$variant(p) => <$kind as Kind>::scaled(spec, p, size, full),)*
                }
            }

            /// The device size the model implies, if it gives one (a drive's capacity).
            pub fn capacity(&self) -> Option<u64> {
                match self {
                    $(ModelKind::$variant(p) => <$kind as Kind>::capacity(p),)*
                }
            }
        }

        impl DeviceCounters {
            /// Every counter of the kind, in the order printed.
            pub fn counters(&self) -> Vec<crate::Counter> {
                use crate::KindCounters;
                match self {
                    $(DeviceCounters::$variant(c) => c.counters(),)*
                }
            }

            /// The kind's name as the JSON gives it (`fixed`, `hdd`, `ssd`).
            pub fn kind(&self) -> &'static str {
                match self {
                    $(DeviceCounters::$variant(_) => <$kind as Kind>::NAME,)*
                }
            }

            pub(crate) fn since(&self, earlier: &DeviceCounters) -> DeviceCounters {
                use crate::KindCounters;
                #[allow(unreachable_patterns)]
                match (self, earlier) {
                    $((DeviceCounters::$variant(a), DeviceCounters::$variant(b)) => {
                        DeviceCounters::$variant(a.since(b))
                    })*
                    // Counted from nothing (a model does not change kind).
                    (a, _) => a.clone(),
                }
            }
        }
    };
}

model_kinds! {
    Fixed => crate::fixed::FixedKind,
    Hdd => crate::hdd::kind::HddKind,
    Ssd => crate::ssd::kind::SsdKind,
}

/// The row of the kind named `name` (as a model file writes it).
pub fn kind_named(name: &str) -> Option<&'static KindEntry> {
    KINDS.iter().find(|k| k.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_has_its_own_name_and_the_kinds_json_tag_is_that_name() {
        let mut names: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), KINDS.len(), "two rows of one name");
        for k in KINDS {
            assert!(kind_named(k.name).is_some());
        }
        let fixed = ModelSpec::fixed(5);
        let v = serde_json::to_value(&fixed.kind).unwrap();
        assert_eq!(v["kind"], fixed.kind.name());
        let hdd = crate::resolve("hdd-7200").unwrap();
        assert_eq!(serde_json::to_value(&hdd.kind).unwrap()["kind"], "hdd");
        let st = hdd.build(1 << 30).unwrap().stats();
        assert_eq!(st.device.kind(), hdd.kind.name());
    }

    /// The capabilities answer what matches on the kind used to: only a drive with a state of
    /// its own keeps one; a fixed latency alone has no history and answers at arrival.
    #[test]
    fn capabilities_are_the_kinds_own() {
        let caps = |n: &str| crate::resolve(n).unwrap().capabilities();
        let fixed = caps("100us");
        assert!(!fixed.drive_state && !fixed.history && fixed.answers_at_arrival);
        assert!(fixed.retimable);
        let hdd = caps("hdd-7200");
        assert!(!hdd.drive_state && hdd.history && !hdd.answers_at_arrival);
        let ssd = caps("ssd-sata");
        assert!(ssd.drive_state && ssd.history && !ssd.answers_at_arrival);
    }
}

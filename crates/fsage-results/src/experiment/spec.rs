//! What an experiment file's matrix is made of: its file systems, states and workloads, and the
//! cells and plan it expands into (serde types, kept in results). The validated experiment
//! itself, its parser and the expansion are fsage-experiment's `spec`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Built-in workload personalities.
pub const BUILTIN_WORKLOADS: [&str; 4] = ["fileserver", "varmail", "webserver", "webproxy"];

/// File system kinds fsage can make.
pub const FS_KINDS: [&str; fsage_sys::fskind::COUNT] = fsage_sys::FsKind::NAMES;

/// Where a step (or a cell's steps) runs: decided once (by fsage-host, at plan time for a cell),
/// recorded, shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Runs {
    /// In this process, on this kernel.
    #[default]
    Native,
    /// In a QEMU guest under a cached kernel (`None`: the newest cached).
    Guest { kernel: Option<String> },
}

impl Runs {
    pub fn is_guest(&self) -> bool {
        matches!(self, Runs::Guest { .. })
    }

    /// `VM` or `VM 6.1.0-56` for a guest; `None` for native.
    pub fn label(&self) -> Option<String> {
        match self {
            Runs::Native => None,
            Runs::Guest { kernel: None } => Some("VM".into()),
            Runs::Guest { kernel: Some(k) } => Some(format!("VM {k}")),
        }
    }
}

/// A file system to benchmark.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FsSpec {
    /// Name in tables and cell ids (default: the kind).
    pub label: String,
    pub kind: String,
    /// Extra mkfs options, one string.
    pub mkfs_opts: Option<String>,
    /// The kernel its cells run under, in a virtual machine (`fsage vm`): a Debian kernel
    /// version (`6.1.0-56`). `None`: the host's own kernel, natively.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
}

/// The state a file system is benchmarked in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StateSpec {
    Fresh,
    /// Aged with `fsage age` once per file system, then restored before every cell.
    Aged {
        /// Built-in profile name, or the profile file's canonical path (resolved from the
        /// experiment file's directory). The path is where the runner reads the profile, not
        /// what the cell is: a cell id counts a profile file by its name as written and its text
        /// ([`Cell::profile_file`]).
        profile: String,
        label: String,
        fullness: Option<f64>,
        seed: Option<u64>,
        max_ops: Option<u64>,
        max_time_s: Option<f64>,
    },
    /// An aged image from the library, for the file systems of its kind only.
    Image {
        name: String,
        /// Label of the file system entry it belongs to.
        fs: String,
    },
}

impl StateSpec {
    /// The analysis' view of the state.
    pub fn state(&self) -> crate::analysis::State {
        match self {
            StateSpec::Fresh => crate::analysis::State::Fresh,
            // A profile file by its file name: the directory it sits in is no part of a result,
            // so that results from runs in other places group together.
            StateSpec::Aged { profile, label, .. } => crate::analysis::State::Aged {
                profile: Path::new(profile)
                    .file_name()
                    .map_or(profile.clone(), |n| n.to_string_lossy().into_owned()),
                label: label.clone(),
            },
            StateSpec::Image { name, .. } => crate::analysis::State::Image { name: name.clone() },
        }
    }
    /// The state's part of a cell id and of a base image's name: `fresh`, `aged.LABEL`,
    /// `image.NAME`.
    pub fn id_part(&self) -> String {
        match self {
            StateSpec::Fresh => "fresh".to_string(),
            StateSpec::Aged { label, .. } => format!("aged.{label}"),
            StateSpec::Image { name, .. } => format!("image.{name}"),
        }
    }
    /// Whether the state is one of `fs`'s (a library image is of its own file system only).
    pub fn applies_to(&self, fs: &FsSpec) -> bool {
        match self {
            StateSpec::Image { fs: f, .. } => *f == fs.label,
            _ => true,
        }
    }
}

/// The drive a cell on an SSD model runs on, when it is not the file system's own (the drive
/// that aged with the base image: erased for a fresh file system, aged with it for an aged one).
/// Crossing them tells the two agings apart, as Geriatrix asks: an aged file system on an erased
/// drive, a fresh file system on an aged drive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DriveSpec {
    /// An erased drive (every block free), whatever aged the file system.
    Erased,
    /// The drive that aged with another state of the same file system (`aged.LABEL`), as if the
    /// file system had been made again on it without a discard. The state is kept whole (with
    /// its profile file's text): the drive's history is part of what the cell measures.
    Of {
        state: StateSpec,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        profile_file: Option<ProfileFile>,
    },
}

impl DriveSpec {
    /// As written in `[devices] drives`, and in cell ids and tables: `erased`, `aged.LABEL`.
    pub fn label(&self) -> String {
        match self {
            DriveSpec::Erased => "erased".into(),
            DriveSpec::Of { state, .. } => state.id_part(),
        }
    }
}

/// How an aged base image is aged on a model that keeps a drive state (`[devices] age_on`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgeOn {
    /// Through the drive's model, writing data: the drive ages with the file system (the
    /// default).
    #[default]
    Drive,
    /// In memory, without the drive, as `fsage age` does by default (fallocate): Geriatrix's
    /// procedure for its SSD figure. The image then reaches the drive by a copy.
    Memory,
}

/// How a cell's image is written onto its drive, through the device (`[devices] copy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CopyMethod {
    /// The image's data written, its holes and zero blocks zeroed with write-zeroes requests,
    /// which fsage's SSD model serves by unmapping (`image copy`'s default).
    Sparse,
    /// The image's data written, its holes left alone: what the drive held there stays mapped.
    Data,
    /// Every block written as data, as `dd` to the raw device does (`image copy --whole`).
    Whole,
}

impl CopyMethod {
    pub fn name(self) -> &'static str {
        match self {
            CopyMethod::Sparse => "sparse",
            CopyMethod::Data => "data",
            CopyMethod::Whole => "whole",
        }
    }
}

/// The drive's state before a cell's image is copied onto it (`[devices] drive`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DriveBefore {
    /// Every block free.
    Erased,
    /// In steady state, as SSD benchmarks put it (`dev precondition`: the drive written in
    /// order, then twice its capacity at random, seeded by the cell's seed).
    Preconditioned,
    /// As the previous cell on the same model left it (erased for the first), as a paper's
    /// repeated runs on one drive did: the result depends on the order the cells ran in.
    Previous,
}

impl DriveBefore {
    pub fn name(self) -> &'static str {
        match self {
            DriveBefore::Erased => "erased",
            DriveBefore::Preconditioned => "preconditioned",
            DriveBefore::Previous => "previous",
        }
    }
}

/// How a cell's image reaches a drive that keeps state: copied through the device, onto a drive
/// in a chosen state. Absent from a cell whose drive is the one its aging left (the default),
/// so that such cells keep their ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    pub copy: CopyMethod,
    pub drive: DriveBefore,
}

impl Placement {
    /// `copy.whole-drive.erased`, in cell ids.
    pub fn id_part(&self) -> String {
        format!("copy.{}-drive.{}", self.copy.name(), self.drive.name())
    }
    /// `whole copy, drive erased`, in tables.
    pub fn label(&self) -> String {
        format!("{} copy, drive {}", self.copy.name(), self.drive.name())
    }
}

/// Where a workload comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WorkloadSource {
    Builtin {
        name: String,
    },
    /// A Filebench `.f` file; its text is kept so that the cell id changes when the file does.
    File {
        path: PathBuf,
        text: String,
    },
}

/// A profile file an aged state names: the name as written in the experiment file and the text
/// read from it. This, not the path it was found at, is what the cell ids count, and what a cell
/// result keeps so that the aging can be reproduced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileFile {
    /// `profile` as written in the experiment file (relative to its directory).
    pub written: String,
    /// The profile's TOML text.
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkloadSpec {
    pub label: String,
    pub source: WorkloadSource,
    /// Variables overridden (`set $name=value`).
    pub set: BTreeMap<String, String>,
    /// What the engine writes (`data = "filebench"`: `bench run --data`); absent: incompressible
    /// bytes, and the cell ids of workloads that do not say stay what they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<fsage_plan::DataPattern>,
}

/// One run of one workload: the unit a runner executes and records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// `FS-STATE-WORKLOAD-LATENCY-rREP-HASH`: readable, and stable while what the cell measures
    /// stays the same (the hash covers everything below except the experiment's name).
    pub id: String,
    pub experiment: String,
    pub fs: FsSpec,
    pub state: StateSpec,
    /// The device the cell runs on: `None` for a plain image (no slow device), else its model,
    /// text included; a latency is the `fixed` model of that latency. In JSON it keeps the
    /// cell format's two keys ([`device_keys`]), which the ids hash: `latency_us` for a bare
    /// latency, `device_model` for any other model.
    #[serde(flatten, with = "device_keys")]
    pub device: Option<fsage_device::ModelSpec>,
    /// The drive, when it is not the file system's own (only on a model that keeps state);
    /// absent otherwise, so that other cells keep their ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drive: Option<DriveSpec>,
    /// Aged in memory rather than through the drive (only on a model that keeps state, for an
    /// aged state); absent otherwise, so that other cells keep their ids.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub aged_in_memory: bool,
    /// How the image reaches the drive, when it is copied through the device onto a drive in a
    /// chosen state (only on a model that keeps state).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    pub workload: WorkloadSpec,
    /// Repetition, from 0.
    pub rep: u32,
    /// The workload's seed: the experiment's seed plus the repetition, so that every state and
    /// file system sees the same operations in a repetition.
    pub seed: u64,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub cache_ratio: Option<f64>,
    /// The time series' interval (not part of the id: sampling does not change what is run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_s: Option<f64>,
    /// Lock contention is recorded (not part of the id: recording does not change what is run,
    /// though its tracing costs the kernel a little on every contention).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lock_stats: bool,
    pub image_size: u64,
    /// The aged state's profile file (name as written and text), when it is not built in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_file: Option<ProfileFile>,
    /// Where the cell's steps run (natively, or in a guest under a kernel), decided when it is
    /// planned; absent from plans made before it was recorded (then decided when it runs).
    /// Not part of the id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<Runs>,
}

impl Cell {
    /// The analysis' view of the cell's state: the file system's state, on a drive that is not
    /// its own when the cell says so.
    pub fn analysis_state(&self) -> crate::analysis::State {
        match &self.drive {
            None => self.state.state(),
            Some(d) => crate::analysis::State::OnDrive {
                fs: Box::new(self.state.state()),
                drive: d.label(),
            },
        }
    }
}

impl Cell {
    /// The cell's latency in µs when its device is a bare latency (the `fixed` model of one
    /// latency, as `[devices] latencies` gives it): what latency sweeps are drawn against.
    pub fn latency_us(&self) -> Option<f64> {
        self.device.as_ref().and_then(bare_latency_us)
    }

    /// The cell's device when it is a model other than a bare latency (`hdd-7200`, a model
    /// file, a fixed model with a name and a file).
    pub fn device_model(&self) -> Option<&fsage_device::ModelSpec> {
        self.device
            .as_ref()
            .filter(|m| bare_latency_us(m).is_none())
    }

    /// The device as the analyses group it: the latency, or the model's name, with how the
    /// image reached the drive when it was copied (`ssd-92 (whole copy, drive erased)`), so that
    /// only cells placed alike are compared.
    pub fn device_label(&self) -> Option<String> {
        let m = self.device_model()?;
        Some(match &self.placement {
            None => m.name.clone(),
            Some(p) => format!("{} ({})", m.name, p.label()),
        })
    }
}

/// The latency in µs of a model that is a bare latency (what [`fsage_device::ModelSpec::fixed`]
/// makes: one latency for everything, no name or file of its own).
pub fn bare_latency_us(m: &fsage_device::ModelSpec) -> Option<f64> {
    let p = fsage_device::FixedParams::of(m)?;
    (*m == fsage_device::ModelSpec::fixed(p.read_ns)).then(|| p.read_ns as f64 / 1000.0)
}

/// A cell's device in JSON, as cell format 1 spells it (and its ids hash): `latency_us` (a
/// number for a bare latency, `null` otherwise, always written) and `device_model` (any other
/// model; absent when there is none). So cell ids, result files and plans stay what they were,
/// and results written before the cell carried one device read as they did.
pub mod device_keys {
    use fsage_device::ModelSpec;
    use serde::ser::SerializeMap;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(device: &Option<ModelSpec>, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        let latency = device.as_ref().and_then(super::bare_latency_us);
        m.serialize_entry("latency_us", &latency)?;
        if let (None, Some(model)) = (latency, device) {
            m.serialize_entry("device_model", model)?;
        }
        m.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ModelSpec>, D::Error> {
        #[derive(Deserialize)]
        struct Keys {
            #[serde(default)]
            latency_us: Option<f64>,
            #[serde(default)]
            device_model: Option<ModelSpec>,
        }
        let k = Keys::deserialize(d)?;
        Ok(match (k.device_model, k.latency_us) {
            (Some(m), _) => Some(m),
            (None, Some(us)) => Some(ModelSpec::fixed((us * 1000.0).round() as u64)),
            (None, None) => None,
        })
    }
}

/// The matrix and what it will cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub experiment: String,
    pub origin: String,
    pub cells: Vec<Cell>,
    /// Aging runs (one per file system and aged state), whose time is not in the estimate.
    pub aging_runs: Vec<String>,
    /// Workload time: warm-up plus duration over all cells, in seconds.
    pub run_s: f64,
    /// Allowance for making or restoring the image, dropping caches and making the fileset, per
    /// cell, in seconds (5 s plus the image restored at 1 GiB/s; fsage-experiment's `spec::setup_allowance_s`).
    pub setup_s: f64,
    pub estimate_s: f64,
    /// Cells that run in a VM (their `[[fs]]` names a kernel, or this kernel lacks it); the
    /// estimate allows each a boot.
    #[serde(default)]
    pub vm_cells: usize,
    /// How their guests run (`TCG (emulated): why`), filled in by `plan` on this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm_accel: Option<String>,
    /// What would stop a run that the plan can see (a library image that is not there).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

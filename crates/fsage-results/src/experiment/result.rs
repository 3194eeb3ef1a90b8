//! What a runner writes for each cell: one JSON file, `CELL_ID.json`, written atomically the
//! moment the cell ends, so that a re-run skips the cells whose file exists.

use super::spec::Cell;
use crate::analysis::Sample;
use fsage_sys::Error;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Version of the cell result layout.
pub const RESULT_FORMAT: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CellStatus {
    Done,
    /// The cell failed; the error says which step and why. The rest of the matrix goes on.
    Failed {
        error: String,
    },
}

/// What is needed to reproduce a cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub fsage_version: String,
    /// `uname -r`.
    pub kernel: String,
    pub hostname: String,
    pub cpus: u32,
    pub memory_bytes: u64,
    pub fs_kind: String,
    pub mkfs_opts: Option<String>,
    /// SHA-256 of the image the workload ran on (before the run), when one was made or restored.
    pub image_sha256: Option<String>,
    pub seed: u64,
    /// The workload as run: `.f` text with every `set` applied.
    pub workload_text: String,
    /// The slow device's settings, as the device reports them (absent for a plain image).
    pub device: Option<serde_json::Value>,
    /// The drive state (an SSD model's FTL) the cell's device started from: which base image's
    /// drive, and the state file's SHA-256; absent for an erased drive or a model without state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drive_state: Option<DriveState>,
    /// How the image reached the drive, for a cell that copies it (`[devices] copy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<PlacementRecord>,
    /// The CPU's model name: with `kernel`, what says whether two cells ran on comparable
    /// hardware (results written before it was recorded lack it).
    #[serde(default)]
    pub cpu_model: Option<String>,
    /// The Slurm job (`ARRAYJOB_TASK`) the cell ran in, when it ran in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm_job: Option<String>,
    /// Where the cell's working copy lived (`--scratch`): memory or disk, and which; results
    /// written before it was recorded lack it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<super::storage::Storage>,
    /// Where the workload ran: absent (native) unless in a VM, whose timings compare only with
    /// the same platform's (`tcg`: emulated).
    #[serde(default, skip_serializing_if = "fsage_sys::PlatformKind::is_native")]
    pub platform: fsage_sys::PlatformKind,
    /// A cell run in a VM: the host's kernel and the guest's boot (`kernel`, `cpus` and
    /// `memory_bytes` are then the guest's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm: Option<VmRun>,
}

/// How a platform is named beside a file system: `None` for native.
pub fn platform_label(p: fsage_sys::PlatformKind) -> Option<&'static str> {
    match p {
        fsage_sys::PlatformKind::Native => None,
        fsage_sys::PlatformKind::Kvm => Some("VM (KVM)"),
        fsage_sys::PlatformKind::Tcg => Some("emulated (TCG)"),
    }
}

/// How a cell's guest ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VmRun {
    pub host_kernel: String,
    /// Seconds from starting QEMU to the command starting.
    pub boot_s: f64,
}

/// Where a cell's drive state came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriveState {
    /// The base image whose aging left this drive (`ext4-aged.meyer-ssd-sata-1a2b3c4d`).
    pub base: String,
    pub sha256: String,
}

/// How a cell's image reached its drive (`[devices] copy` and `drive`): the drive before the
/// copy, what the copy wrote, and the drive's counters over the copy alone (the cell's own
/// counters, in its samples, start after it, on a new device).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlacementRecord {
    pub copy: super::spec::CopyMethod,
    pub drive: super::spec::DriveBefore,
    /// What the drive was before the copy, in words: erased, what preconditioning did, or the
    /// cell whose drive it continued.
    pub drive_before: String,
    /// The cell that left the drive (`drive = "previous"`); absent when none had run yet (the
    /// drive then started erased).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_cell: Option<String>,
    /// Bytes written as data, zeroed with write-zeroes, written as zeros; seconds of the copy.
    pub data_bytes: u64,
    pub zeroed_bytes: u64,
    pub zeros_written: u64,
    pub copy_s: f64,
    /// The drive's counters over the copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flash: Option<crate::analysis::FlashCounters>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    pub format: u32,
    pub cell: Cell,
    #[serde(flatten)]
    pub status: CellStatus,
    /// Unix time (seconds) the cell started, and its wall time.
    pub started_unix: u64,
    pub seconds: f64,
    /// Of `seconds`, the time spent making the state's base image (aging), for the one cell of
    /// each state that made it.
    #[serde(default)]
    pub base_seconds: Option<f64>,
    pub environment: Option<Environment>,
    /// One per repetition measured in this cell (one, as the matrix has a cell per repetition).
    pub samples: Vec<Sample>,
    /// The workload engine's full report, kept as is.
    #[serde(default)]
    pub workload_report: Option<serde_json::Value>,
}

impl CellResult {
    pub fn is_done(&self) -> bool {
        self.status == CellStatus::Done
    }

    /// One part of the workload engine's report (`"reps"`, `"lock_contention"`, ...) read as
    /// `T`; `None` when the cell has no report, the part is missing, or it is not a `T`.
    pub fn workload_part<T: serde::de::DeserializeOwned>(&self, key: &str) -> Option<T> {
        let v = self.workload_report.as_ref()?.get(key)?;
        serde_json::from_value(v.clone()).ok()
    }

    /// The samples the analyses take: as recorded, with an SSD model's counters taken from the
    /// device's statistics in the environment where a sample lacks them (results written before
    /// samples carried them).
    pub fn analysis_samples(&self) -> Vec<crate::analysis::Sample> {
        // The device's counters name their kind: an SSD's are flash counters (older results
        // wrote one union of disk and flash counters, read as an SSD's when it has flash ones).
        let from_env = || {
            let st = self
                .environment
                .as_ref()?
                .device
                .as_ref()?
                .pointer("/stats/model/stats")?;
            let m: fsage_device::ModelStats = serde_json::from_value(st.clone()).ok()?;
            m.ssd().map(crate::analysis::FlashCounters::from)
        };
        self.samples
            .iter()
            .map(|s| match &s.flash {
                None => crate::analysis::Sample {
                    flash: from_env(),
                    ..s.clone()
                },
                Some(_) => s.clone(),
            })
            .collect()
    }
}

/// The results read from a directory, and the files that were not cell results.
#[derive(Debug, Clone, Default)]
pub struct ResultSet {
    pub results: Vec<(PathBuf, CellResult)>,
    pub skipped: Vec<(PathBuf, String)>,
}

/// Reads every `*.json` cell result in `dir` (not recursive), sorted by file name. Files that are
/// not cell results are listed in `skipped` with the reason, not fatal.
pub fn read_dir(dir: &Path) -> Result<ResultSet, Error> {
    let rd = std::fs::read_dir(dir)
        .map_err(|e| Error::input(format!("{}: cannot read the directory: {e}", dir.display())))?;
    let mut paths: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    let mut out = ResultSet::default();
    for p in paths {
        match read(&p) {
            Ok(r) => out.results.push((p, r)),
            Err(e) => out.skipped.push((p, e.message)),
        }
    }
    Ok(out)
}

/// Reads one cell result.
pub fn read(path: &Path) -> Result<CellResult, Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::input(format!("{}: {e}", path.display())))?;
    let r: CellResult = serde_json::from_str(&text)
        .map_err(|e| Error::input(format!("{}: not a cell result: {e}", path.display())))?;
    if r.format != RESULT_FORMAT {
        return Err(Error::input(format!(
            "{}: cell result format {} (this fsage reads {RESULT_FORMAT})",
            path.display(),
            r.format
        )));
    }
    Ok(r)
}

/// Cells of one comparison that ran on nodes of different hardware.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HardwareMix {
    /// The comparison: the workload, and the latency or device model (`varmail, plain image`).
    pub comparison: String,
    /// Each kind of node (`CPU MODEL, kernel K`), its hosts and how many cells ran there.
    pub kinds: Vec<(String, Vec<String>, usize)>,
}

impl HardwareMix {
    /// The warning for a mix of [`storage_mixes`].
    pub fn storage_warning(&self) -> String {
        let kinds: Vec<String> = self
            .kinds
            .iter()
            .map(|(k, hosts, n)| format!("{n} on {k} ({})", hosts.join(", ")))
            .collect();
        format!(
            "{}: the cells' working copies lived on different storage ({}); their throughputs \
             are not comparable (`--scratch` sets it; the default is tmpfs)",
            self.comparison,
            kinds.join("; ")
        )
    }
}

impl std::fmt::Display for HardwareMix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kinds: Vec<String> = self
            .kinds
            .iter()
            .map(|(k, hosts, n)| format!("{n} on {} ({k})", hosts.join(", ")))
            .collect();
        write!(
            f,
            "{}: cells ran on nodes of different hardware ({}); their throughputs are not \
             comparable",
            self.comparison,
            kinds.join("; ")
        )
    }
}

/// The comparisons (cells of one workload at one latency or device model, set against each
/// other across file systems and states) whose finished cells ran on more than one kind of node
/// (CPU model and kernel). Cells that recorded no CPU model count by their kernel alone.
pub fn hardware_mixes<'a>(results: impl IntoIterator<Item = &'a CellResult>) -> Vec<HardwareMix> {
    mixes(results, |e| {
        format!(
            "{}, kernel {}",
            e.cpu_model.as_deref().unwrap_or("CPU not recorded"),
            e.kernel
        )
    })
}

/// The comparisons whose finished cells kept their working copies on more than one kind of
/// storage (memory or disk, and which: [`super::storage::Storage::describe`]); cells that
/// recorded none count as "storage not recorded". The hosts are listed as for hardware.
pub fn storage_mixes<'a>(results: impl IntoIterator<Item = &'a CellResult>) -> Vec<HardwareMix> {
    mixes(results, |e| {
        e.storage.as_ref().map_or_else(
            || "storage not recorded".to_string(),
            |s| match s.kind {
                super::storage::StorageKind::Tmpfs => "tmpfs".to_string(),
                super::storage::StorageKind::Disk => {
                    format!("disk ({} on {})", s.fs_type, s.device)
                }
            },
        )
    })
}

/// Cells of one comparison grouped by `kind_of` their environment; the comparisons with more
/// than one kind.
fn mixes<'a>(
    results: impl IntoIterator<Item = &'a CellResult>,
    kind_of: impl Fn(&Environment) -> String,
) -> Vec<HardwareMix> {
    use std::collections::{BTreeMap, BTreeSet};
    type Kinds = BTreeMap<String, (BTreeSet<String>, usize)>;
    let mut by: BTreeMap<String, Kinds> = BTreeMap::new();
    for r in results.into_iter().filter(|r| r.is_done()) {
        let Some(e) = &r.environment else { continue };
        let c = &r.cell;
        let at = match (c.device_model(), c.latency_us()) {
            (Some(m), _) => format!("device model {}", m.name),
            (None, Some(us)) => format!("{us} us"),
            (None, None) => "plain image".to_string(),
        };
        let kind = kind_of(e);
        let k = by
            .entry(format!("{}, {at}", c.workload.label))
            .or_default()
            .entry(kind)
            .or_default();
        k.0.insert(e.hostname.clone());
        k.1 += 1;
    }
    by.into_iter()
        .filter(|(_, kinds)| kinds.len() > 1)
        .map(|(comparison, kinds)| HardwareMix {
            comparison,
            kinds: kinds
                .into_iter()
                .map(|(k, (hosts, n))| (k, hosts.into_iter().collect(), n))
                .collect(),
        })
        .collect()
}

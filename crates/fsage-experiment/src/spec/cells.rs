//! Expanding the matrix into cells, in run order, and each cell's id: readable parts and a hash
//! of what the cell measures, stable across runs from other directories and unrelated edits.

use super::types::{
    AgeOn, Cell, DriveSpec, ExperimentSpec, FsSpec, Placement, Plan, StateSpec, WorkloadSource,
    WorkloadSpec,
};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Version of the cell layout (part of every cell id).
pub const CELL_FORMAT: u32 = 1;

/// Seconds allowed per cell for everything but the workload: 5 s, plus restoring the image at
/// 1 GiB/s (an estimate from this machine's /dev/shm, not a measurement of the cell).
pub fn setup_allowance_s(image_size: u64) -> f64 {
    5.0 + image_size as f64 / (1u64 << 30) as f64
}

impl ExperimentSpec {
    /// Expands the matrix, in run order: repetition, file system, workload, latency, state. The
    /// states of one comparison run back to back, and each repetition goes through the whole
    /// matrix once, so that a machine whose speed drifts during a long run (other work, thermal
    /// state) biases neither side of an aged-against-fresh comparison.
    pub fn plan(&self) -> Plan {
        let mut cells = Vec::new();
        let mut aging_runs = Vec::new();
        // An aged state is aged once for the plain and fixed-latency devices and the models
        // without state, and once more on each model that keeps a drive state (its drive ages
        // with it).
        let plain = self.devices.iter().any(|d| !keeps_state(d));
        for fs in &self.file_systems {
            for st in self.states.iter().filter(|s| s.applies_to(fs)) {
                if let StateSpec::Aged { label, .. } = st {
                    if plain {
                        aging_runs.push(format!("{} aged:{label}", fs.label));
                    }
                    // Aged in memory, the plain base serves the drives too.
                    let keeps = self.devices.iter().flatten().filter(|m| m.keeps_state());
                    if self.age_on == AgeOn::Memory {
                        if !plain && keeps.count() > 0 {
                            aging_runs.push(format!("{} aged:{label} in memory", fs.label));
                        }
                    } else {
                        for m in keeps {
                            aging_runs.push(format!("{} aged:{label} on {}", fs.label, m.name));
                        }
                    }
                }
            }
        }
        for rep in 0..self.repetitions {
            for fs in &self.file_systems {
                for w in &self.workloads {
                    for d in &self.devices {
                        for st in self.states.iter().filter(|s| s.applies_to(fs)) {
                            for drive in self.drives_of(d, st) {
                                for placement in self.placements_of(d) {
                                    let mut c = self.cell(fs, st, w, rep, d.as_ref());
                                    c.drive = drive.clone();
                                    c.placement = placement;
                                    c.aged_in_memory = keeps_state(d)
                                        && self.age_on == AgeOn::Memory
                                        && matches!(st, StateSpec::Aged { .. });
                                    c.id = cell_id(&c);
                                    cells.push(c);
                                }
                            }
                        }
                    }
                }
            }
        }
        debug_assert_eq!(cells.len() as u128, self.cell_count());
        let per_cell = self.warmup_s + self.duration_s;
        let run_s = per_cell * cells.len() as f64;
        // A cell in a VM boots a guest for its workload (and its base one more for aging).
        // Where each cell runs is decided here, once, and recorded on it.
        for c in &mut cells {
            c.runs = Some(fsage_host::decide(&c.fs.kind, c.fs.kernel.as_deref()));
        }
        let vm_cells = cells
            .iter()
            .filter(|c| super::runs_of(c).is_guest())
            .count();
        let setup_s = setup_allowance_s(self.image_size) * cells.len() as f64
            + crate::guest::BOOT_ALLOWANCE_S * vm_cells as f64;
        Plan {
            experiment: self.name.clone(),
            origin: self.origin.clone(),
            cells,
            aging_runs,
            run_s,
            setup_s,
            estimate_s: run_s + setup_s,
            vm_cells,
            vm_accel: None,
            warnings: Vec::new(),
        }
    }

    /// How many cells [`Self::plan`] makes, counted without making them (the parser refuses a
    /// matrix of more than [`super::parser::MAX_CELLS`] before anything is expanded).
    pub fn cell_count(&self) -> u128 {
        use std::collections::HashMap;
        // Model cells of a state: one per model, or per drive for a model that keeps state.
        let keep = self.devices.iter().filter(|d| keeps_state(d)).count() as u128;
        let plain = self.devices.len() as u128 - keep;
        let mut of_state: HashMap<String, u128> = HashMap::new();
        let mut erased = 0u128;
        for d in &self.drives {
            match d {
                Some(DriveSpec::Erased) => erased += 1,
                Some(DriveSpec::Of { state, .. }) => {
                    *of_state.entry(state.id_part()).or_default() += 1
                }
                None => {}
            }
        }
        let drives_of = |st: &StateSpec| -> u128 {
            if self.drives.is_empty() {
                return 1;
            }
            let mut n =
                self.drives.len() as u128 - of_state.get(&st.id_part()).copied().unwrap_or(0);
            if matches!(st, StateSpec::Fresh) {
                n -= erased;
            }
            n
        };
        let placements = self.placements.len().max(1) as u128;
        let per_state = |st: &StateSpec| -> u128 { plain + keep * drives_of(st) * placements };
        // Image states apply to one file system, the others to each.
        let labels: std::collections::HashSet<&str> =
            self.file_systems.iter().map(|f| f.label.as_str()).collect();
        let mut per_rep_workload = 0u128;
        for st in &self.states {
            let applies = match st {
                StateSpec::Image { fs, .. } => u128::from(labels.contains(fs.as_str())),
                _ => self.file_systems.len() as u128,
            };
            per_rep_workload += applies * per_state(st);
        }
        self.repetitions as u128 * self.workloads.len() as u128 * per_rep_workload
    }

    /// The image states whose image `library` does not hold, one message each (the file, the
    /// state, and the library's own word on it, which names `fsage image list`).
    pub fn missing_images(&self, library: &Path) -> Vec<String> {
        let lib = fsage_core::image::Library::open(library);
        self.states
            .iter()
            .filter_map(|s| match s {
                StateSpec::Image { name, .. } => lib
                    .load(name)
                    .err()
                    .map(|e| format!("{}: state image {name:?}: {e}", self.origin)),
                _ => None,
            })
            .collect()
    }

    /// The drives a state runs on with model `m`: its own alone unless the model keeps state
    /// and `drives` asks for more; an erased drive under a fresh file system, and an aged state's
    /// drive under that state, are its own drive, so they are not made twice.
    fn drives_of(
        &self,
        d: &Option<fsage_device::ModelSpec>,
        st: &StateSpec,
    ) -> Vec<Option<DriveSpec>> {
        if !keeps_state(d) || self.drives.is_empty() {
            return vec![None];
        }
        self.drives
            .iter()
            .filter(|d| match (d, st) {
                (Some(DriveSpec::Erased), StateSpec::Fresh) => false,
                (Some(DriveSpec::Of { state, .. }), s) => state.id_part() != s.id_part(),
                _ => true,
            })
            .cloned()
            .collect()
    }

    /// How the image reaches a drive of model `m`: each of `placements` on a model that keeps
    /// state, or not copied (the drive its aging left).
    fn placements_of(&self, d: &Option<fsage_device::ModelSpec>) -> Vec<Option<Placement>> {
        if !keeps_state(d) || self.placements.is_empty() {
            return vec![None];
        }
        self.placements.iter().copied().map(Some).collect()
    }

    fn cell(
        &self,
        fs: &FsSpec,
        st: &StateSpec,
        w: &WorkloadSpec,
        rep: u32,
        device: Option<&fsage_device::ModelSpec>,
    ) -> Cell {
        let mut c = Cell {
            id: String::new(),
            experiment: self.name.clone(),
            fs: fs.clone(),
            state: st.clone(),
            device: device.cloned(),
            drive: None,
            aged_in_memory: false,
            placement: None,
            workload: w.clone(),
            rep,
            seed: self.seed.wrapping_add(rep as u64),
            duration_s: self.duration_s,
            warmup_s: self.warmup_s,
            cache_ratio: self.cache_ratio,
            sample_s: self.sample_s,
            lock_stats: self.lock_stats,
            image_size: self.image_size,
            profile_file: match st {
                StateSpec::Aged { label, .. } => self.profile_files.get(label).cloned(),
                _ => None,
            },
            runs: None,
        };
        c.id = cell_id(&c);
        c
    }
}

/// The id of a cell: readable parts, then 12 hex digits of a SHA-256 of the cell's definition
/// (its JSON, without the id, the experiment's name and the paths of a workload file and a
/// profile file, whose text counts instead (and a profile's name as written); with the format
/// version). So the same experiment planned from another directory, or by another spelling of its
/// path, has the same ids.
pub fn cell_id(c: &Cell) -> String {
    let mut key = c.clone();
    key.id = String::new();
    key.experiment = String::new();
    key.sample_s = None;
    key.lock_stats = false;
    key.runs = None;
    // A workload file counts by its text, not by where the experiment directory sits.
    if let WorkloadSource::File { path, .. } = &mut key.workload.source {
        *path = PathBuf::new();
    }
    if key.profile_file.is_some() {
        if let StateSpec::Aged { profile, .. } = &mut key.state {
            *profile = String::new();
        }
    }
    if let Some(DriveSpec::Of {
        state: StateSpec::Aged { profile, .. },
        profile_file: Some(_),
    }) = &mut key.drive
    {
        *profile = String::new();
    }
    // Serialising plain data cannot fail.
    let json = serde_json::to_string(&key).expect("cells serialise");
    let mut h = Sha256::new();
    h.update(format!("fsage-cell-{CELL_FORMAT}\n").as_bytes());
    h.update(json.as_bytes());
    let hex = crate::hex(&h.finalize()[..6]);
    let state = c.state.id_part();
    let lat = match (c.device_model(), c.latency_us()) {
        (Some(m), _) => {
            let mut s = match &c.drive {
                Some(d) => format!("{}-drive.{}", m.name, d.label()),
                None => m.name.clone(),
            };
            if c.aged_in_memory {
                s.push_str("-aged.memory");
            }
            if let Some(p) = &c.placement {
                s = format!("{s}-{}", p.id_part());
            }
            s
        }
        (None, None) => "plain".to_string(),
        (None, Some(l)) => format!("{}us", trim_num(l)),
    };
    let raw = format!(
        "{}-{}-{}-{}-r{}",
        c.fs.label, state, c.workload.label, lat, c.rep
    );
    let safe: String = raw
        .chars()
        .map(|ch| {
            if ch.is_ascii_alphanumeric() || "-._".contains(ch) {
                ch
            } else {
                '_'
            }
        })
        .collect();
    format!("{safe}-{hex}")
}

/// Whether a cell's device keeps a drive state (an SSD model); a plain image does not.
fn keeps_state(d: &Option<fsage_device::ModelSpec>) -> bool {
    d.as_ref().is_some_and(|m| m.keeps_state())
}

fn trim_num(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

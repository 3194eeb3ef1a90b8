//! The experiment file (TOML; `FORMAT/EXPERIMENT.md` in this crate documents it) and its matrix
//! of cells.
//!
//! [`load`] reads and validates a file: every error names the file, the line and what is wrong.
//! [`ExperimentSpec::plan`] expands it into [`Cell`]s in the order a runner goes through them
//! (repetition, file system, workload, latency, state: the states compared run back to back),
//! each with an id that depends only on what the cell measures, so that a runner can skip the
//! cells whose results exist after an edit of unrelated parts of the file.

use crate::Error;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// Version of the cell layout (part of every cell id).
pub const CELL_FORMAT: u32 = 1;

/// Built-in workload personalities (the workload engine's, issue 13).
pub const BUILTIN_WORKLOADS: [&str; 4] = ["fileserver", "varmail", "webserver", "webproxy"];

/// File system kinds fsage can make.
pub const FS_KINDS: [&str; 3] = ["ext4", "xfs", "btrfs"];

/// A file system to benchmark.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FsSpec {
    /// Name in tables and cell ids (default: the kind).
    pub label: String,
    pub kind: String,
    /// Extra mkfs options, one string.
    pub mkfs_opts: Option<String>,
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
    pub fn state(&self) -> crate::State {
        match self {
            StateSpec::Fresh => crate::State::Fresh,
            // A profile file by its file name: the directory it sits in is no part of a result,
            // so that results from runs in other places group together.
            StateSpec::Aged { profile, label, .. } => crate::State::Aged {
                profile: Path::new(profile)
                    .file_name()
                    .map_or(profile.clone(), |n| n.to_string_lossy().into_owned()),
                label: label.clone(),
            },
            StateSpec::Image { name, .. } => crate::State::Image { name: name.clone() },
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
    fn applies_to(&self, fs: &FsSpec) -> bool {
        match self {
            StateSpec::Image { fs: f, .. } => *f == fs.label,
            _ => true,
        }
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
}

/// A parsed, validated experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentSpec {
    pub name: String,
    pub description: String,
    /// The file it was read from.
    pub origin: String,
    pub file_systems: Vec<FsSpec>,
    pub states: Vec<StateSpec>,
    /// Added device latencies in µs; `None` is a plain image without the slow device. Sorted,
    /// `None` first, then fastest to slowest.
    pub latencies: Vec<Option<f64>>,
    /// Device models (`hdd-7200`, a model file) in `[devices] latencies`, in the order given;
    /// their cells come after the latencies' in each comparison.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub device_models: Vec<fsage_device::ModelSpec>,
    pub workloads: Vec<WorkloadSpec>,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub repetitions: u32,
    pub cache_ratio: Option<f64>,
    pub seed: u64,
    pub image_size: u64,
    /// The profile files of the aged states, by state label (built-in profiles have none).
    #[serde(default)]
    pub profile_files: BTreeMap<String, ProfileFile>,
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
    pub latency_us: Option<f64>,
    /// The device model the cell runs on (then `latency_us` is `None`), text included. Absent
    /// from latency-only cells, whose ids stay what they were before models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_model: Option<fsage_device::ModelSpec>,
    pub workload: WorkloadSpec,
    /// Repetition, from 0.
    pub rep: u32,
    /// The workload's seed: the experiment's seed plus the repetition, so that every state and
    /// file system sees the same operations in a repetition.
    pub seed: u64,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub cache_ratio: Option<f64>,
    pub image_size: u64,
    /// The aged state's profile file (name as written and text), when it is not built in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_file: Option<ProfileFile>,
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
    /// cell, in seconds (see [`setup_allowance_s`]).
    pub setup_s: f64,
    pub estimate_s: f64,
    /// What would stop a run that the plan can see (a library image that is not there).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

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
        for fs in &self.file_systems {
            for st in self.states.iter().filter(|s| s.applies_to(fs)) {
                if let StateSpec::Aged { label, .. } = st {
                    aging_runs.push(format!("{} aged:{label}", fs.label));
                }
            }
        }
        for rep in 0..self.repetitions {
            for fs in &self.file_systems {
                for w in &self.workloads {
                    for &lat in &self.latencies {
                        for st in self.states.iter().filter(|s| s.applies_to(fs)) {
                            cells.push(self.cell(fs, st, w, rep, lat, None));
                        }
                    }
                    for m in &self.device_models {
                        for st in self.states.iter().filter(|s| s.applies_to(fs)) {
                            cells.push(self.cell(fs, st, w, rep, None, Some(m)));
                        }
                    }
                }
            }
        }
        let per_cell = self.warmup_s + self.duration_s;
        let run_s = per_cell * cells.len() as f64;
        let setup_s = setup_allowance_s(self.image_size) * cells.len() as f64;
        Plan {
            experiment: self.name.clone(),
            origin: self.origin.clone(),
            cells,
            aging_runs,
            run_s,
            setup_s,
            estimate_s: run_s + setup_s,
            warnings: Vec::new(),
        }
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

    fn cell(
        &self,
        fs: &FsSpec,
        st: &StateSpec,
        w: &WorkloadSpec,
        rep: u32,
        lat: Option<f64>,
        model: Option<&fsage_device::ModelSpec>,
    ) -> Cell {
        let mut c = Cell {
            id: String::new(),
            experiment: self.name.clone(),
            fs: fs.clone(),
            state: st.clone(),
            latency_us: lat,
            device_model: model.cloned(),
            workload: w.clone(),
            rep,
            seed: self.seed.wrapping_add(rep as u64),
            duration_s: self.duration_s,
            warmup_s: self.warmup_s,
            cache_ratio: self.cache_ratio,
            image_size: self.image_size,
            profile_file: match st {
                StateSpec::Aged { label, .. } => self.profile_files.get(label).cloned(),
                _ => None,
            },
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
    // A workload file counts by its text, not by where the experiment directory sits.
    if let WorkloadSource::File { path, .. } = &mut key.workload.source {
        *path = PathBuf::new();
    }
    if key.profile_file.is_some() {
        if let StateSpec::Aged { profile, .. } = &mut key.state {
            *profile = String::new();
        }
    }
    // Serialising plain data cannot fail.
    let json = serde_json::to_string(&key).expect("cells serialise");
    let mut h = Sha256::new();
    h.update(format!("fsage-cell-{CELL_FORMAT}\n").as_bytes());
    h.update(json.as_bytes());
    let hex: String = h.finalize()[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let state = c.state.id_part();
    let lat = match (&c.device_model, c.latency_us) {
        (Some(m), _) => m.name.clone(),
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

fn trim_num(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

// ---------------------------------------------------------------------------------------------
// Parsing

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    name: Spanned<String>,
    #[serde(default)]
    description: String,
    duration: Spanned<toml::Value>,
    warmup: Option<Spanned<toml::Value>>,
    repetitions: Option<Spanned<i64>>,
    cache_ratio: Option<Spanned<f64>>,
    seed: Option<Spanned<i64>>,
    image_size: Spanned<toml::Value>,
    #[serde(default)]
    fs: Vec<Spanned<RawFs>>,
    #[serde(default)]
    state: Vec<Spanned<RawState>>,
    devices: Option<Spanned<RawDevices>>,
    #[serde(default)]
    workload: Vec<Spanned<RawWorkload>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFs {
    kind: Spanned<String>,
    label: Option<Spanned<String>>,
    mkfs_opts: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawState {
    kind: Spanned<String>,
    profile: Option<Spanned<String>>,
    label: Option<Spanned<String>>,
    fullness: Option<Spanned<f64>>,
    seed: Option<Spanned<i64>>,
    max_ops: Option<Spanned<i64>>,
    max_time: Option<Spanned<toml::Value>>,
    name: Option<Spanned<String>>,
    fs: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDevices {
    #[serde(default)]
    latencies: Vec<Spanned<toml::Value>>,
    #[serde(default)]
    ranges: Vec<Spanned<RawRange>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRange {
    from: Spanned<toml::Value>,
    to: Spanned<toml::Value>,
    step: Spanned<toml::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    name: Option<Spanned<String>>,
    file: Option<Spanned<String>>,
    label: Option<Spanned<String>>,
    #[serde(default)]
    set: BTreeMap<String, Spanned<toml::Value>>,
}

/// Line and column (from 1) of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rfind('\n')
        .map_or(before.len(), |i| before.len() - i - 1)
        + 1;
    (line, col)
}

struct Ctx<'a> {
    origin: &'a str,
    text: &'a str,
    dir: PathBuf,
}

impl Ctx<'_> {
    fn at(&self, span: Range<usize>, msg: impl std::fmt::Display) -> Error {
        let (l, c) = line_col(self.text, span.start);
        Error::input(format!("{}:{l}:{c}: {msg}", self.origin))
    }
    fn whole(&self, msg: impl std::fmt::Display) -> Error {
        Error::input(format!("{}: {msg}", self.origin))
    }
}

/// Reads and validates an experiment file.
pub fn load(path: &Path) -> Result<ExperimentSpec, Error> {
    load_with_text(path).map(|(spec, _)| spec)
}

/// Reads and validates an experiment file; also returns its text (a runner keeps a copy).
pub fn load_with_text(path: &Path) -> Result<(ExperimentSpec, String), Error> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::input(format!(
            "{}: cannot read the experiment: {e}",
            path.display()
        ))
    })?;
    let dir = path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let spec = parse(&text, &path.display().to_string(), &dir)?;
    Ok((spec, text))
}

/// Parses an experiment; `origin` names it in errors, `dir` resolves relative paths (`.f` files,
/// profile files).
pub fn parse(text: &str, origin: &str, dir: &Path) -> Result<ExperimentSpec, Error> {
    let cx = Ctx {
        origin,
        text,
        dir: dir.to_path_buf(),
    };
    let raw: Raw = toml::from_str(text).map_err(|e| {
        let msg = e
            .message()
            .trim()
            .replace("missing field", "missing key")
            .replace("unknown field", "unknown key");
        match e.span() {
            Some(s) if !msg.starts_with("missing key") || s.start > 0 => cx.at(s, msg),
            _ => cx.whole(msg),
        }
    })?;

    let name = raw.name.get_ref().trim().to_string();
    if name.is_empty() {
        return Err(cx.at(raw.name.span(), "`name` is empty"));
    }
    let duration_s = duration(&cx, &raw.duration, "duration")?;
    let warmup_s = match &raw.warmup {
        Some(w) => duration_or_zero(&cx, w, "warmup")?,
        None => 0.0,
    };
    let repetitions = match &raw.repetitions {
        Some(r) if *r.get_ref() < 1 || *r.get_ref() > 1000 => {
            return Err(cx.at(
                r.span(),
                format!("`repetitions` = {}: must be 1 to 1000", r.get_ref()),
            ))
        }
        Some(r) => *r.get_ref() as u32,
        None => 1,
    };
    let cache_ratio = match &raw.cache_ratio {
        Some(c) if !(c.get_ref().is_finite() && *c.get_ref() > 0.0) => {
            return Err(cx.at(
                c.span(),
                format!(
                    "`cache_ratio` = {}: must be above 0 (page cache allowed, as a multiple of \
                     the fileset's bytes; 0.5 is the slippery-slope study's 1:2)",
                    c.get_ref()
                ),
            ))
        }
        Some(c) => Some(*c.get_ref()),
        None => None,
    };
    let seed = match &raw.seed {
        Some(s) if *s.get_ref() < 0 => {
            return Err(cx.at(s.span(), "`seed` must be 0 or more"));
        }
        Some(s) => *s.get_ref() as u64,
        None => 1,
    };
    let image_size = size(&cx, &raw.image_size, "image_size")?;
    if image_size < 64 << 20 {
        return Err(cx.at(
            raw.image_size.span(),
            "`image_size` must be at least 64 MiB (xfs and btrfs need room for their metadata)",
        ));
    }

    // File systems.
    if raw.fs.is_empty() {
        return Err(cx.whole("no file system: add at least one [[fs]] with `kind`"));
    }
    let mut file_systems = Vec::new();
    let mut labels = BTreeSet::new();
    for f in &raw.fs {
        let r = f.get_ref();
        let kind = r.kind.get_ref().trim().to_string();
        if !FS_KINDS.contains(&kind.as_str()) {
            return Err(cx.at(
                r.kind.span(),
                format!(
                    "unknown file system kind {kind:?} (fsage makes {})",
                    FS_KINDS.join(", ")
                ),
            ));
        }
        let (label, lspan) = match &r.label {
            Some(l) => (label_ok(&cx, l, "label")?, l.span()),
            None => (kind.clone(), f.span()),
        };
        if !labels.insert(label.clone()) {
            return Err(cx.at(
                lspan,
                format!("file system label {label:?} used twice: give each [[fs]] its own `label`"),
            ));
        }
        file_systems.push(FsSpec {
            label,
            kind,
            mkfs_opts: r.mkfs_opts.clone().filter(|s| !s.trim().is_empty()),
        });
    }

    // States.
    if raw.state.is_empty() {
        return Err(cx.whole(
            "no state: add at least one [[state]] (kind = \"fresh\", \"aged\" or \"image\")",
        ));
    }
    let mut states: Vec<StateSpec> = Vec::new();
    let mut state_labels = BTreeSet::new();
    let mut profile_files = BTreeMap::new();
    for s in &raw.state {
        let (st, pf) = state(&cx, s, &labels)?;
        if let (StateSpec::Aged { label, .. }, Some(pf)) = (&st, pf) {
            profile_files.insert(label.clone(), pf);
        }
        let key = st.state().label();
        if !state_labels.insert(key.clone()) {
            return Err(cx.at(s.span(), format!("state {key:?} given twice")));
        }
        states.push(st);
    }

    // Devices.
    let (latencies, device_models) = match &raw.devices {
        None => (vec![None], Vec::new()),
        Some(d) => devices(&cx, d, image_size)?,
    };

    // Workloads.
    if raw.workload.is_empty() {
        return Err(cx.whole(format!(
            "no workload: add at least one [[workload]] with `name` (built in: {}) or `file`",
            BUILTIN_WORKLOADS.join(", ")
        )));
    }
    let mut workloads: Vec<WorkloadSpec> = Vec::new();
    for w in &raw.workload {
        let ws = workload(&cx, w)?;
        if workloads.iter().any(|o| o.label == ws.label) {
            return Err(cx.at(
                w.span(),
                format!(
                    "workload label {:?} used twice: give it its own `label`",
                    ws.label
                ),
            ));
        }
        workloads.push(ws);
    }

    Ok(ExperimentSpec {
        name,
        description: raw.description,
        origin: origin.to_string(),
        file_systems,
        states,
        latencies,
        device_models,
        workloads,
        duration_s,
        warmup_s,
        repetitions,
        cache_ratio,
        seed,
        image_size,
        profile_files,
    })
}

fn label_ok(cx: &Ctx, l: &Spanned<String>, key: &str) -> Result<String, Error> {
    let s = l.get_ref().trim();
    if s.is_empty()
        || !s
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._".contains(c))
    {
        return Err(cx.at(
            l.span(),
            format!("`{key}` = {s:?}: use letters, digits, '-', '.' and '_' only"),
        ));
    }
    Ok(s.to_string())
}

fn state(
    cx: &Ctx,
    s: &Spanned<RawState>,
    fs_labels: &BTreeSet<String>,
) -> Result<(StateSpec, Option<ProfileFile>), Error> {
    let r = s.get_ref();
    let kind = r.kind.get_ref().as_str();
    let not_for = |key: &str, span: Range<usize>| {
        cx.at(
            span,
            format!("`{key}` does not apply to a state of kind {kind:?}"),
        )
    };
    // Keys that belong to other kinds are refused rather than ignored.
    let aged_keys = [
        ("profile", r.profile.as_ref().map(|v| v.span())),
        ("fullness", r.fullness.as_ref().map(|v| v.span())),
        ("seed", r.seed.as_ref().map(|v| v.span())),
        ("max_ops", r.max_ops.as_ref().map(|v| v.span())),
        ("max_time", r.max_time.as_ref().map(|v| v.span())),
        ("label", r.label.as_ref().map(|v| v.span())),
    ];
    let image_keys = [
        ("name", r.name.as_ref().map(|v| v.span())),
        ("fs", r.fs.as_ref().map(|v| v.span())),
    ];
    match kind {
        "fresh" => {
            for (k, sp) in aged_keys.iter().chain(image_keys.iter()) {
                if let Some(sp) = sp {
                    return Err(not_for(k, sp.clone()));
                }
            }
            Ok((StateSpec::Fresh, None))
        }
        "aged" => {
            for (k, sp) in &image_keys {
                if let Some(sp) = sp {
                    return Err(not_for(k, sp.clone()));
                }
            }
            let Some(p) = &r.profile else {
                return Err(cx.at(
                    s.span(),
                    "an aged state needs `profile` (a built-in name or a profile file)",
                ));
            };
            let pname = p.get_ref().trim();
            let (profile, file) = if fsage_profile::builtin(pname).is_some() {
                (pname.to_string(), None)
            } else {
                let path = cx.dir.join(pname);
                let unreadable = |e: &dyn std::fmt::Display| {
                    cx.at(
                        p.span(),
                        format!(
                            "profile {pname:?} is neither built in ({}) nor a readable profile \
                             file: {e}",
                            fsage_profile::builtin_names().join(", ")
                        ),
                    )
                };
                let text = std::fs::read_to_string(&path).map_err(|e| unreadable(&e))?;
                fsage_profile::parse(&text, &path.display().to_string())
                    .map_err(|e| unreadable(&e))?;
                let path = std::fs::canonicalize(&path).unwrap_or(path);
                (
                    path.display().to_string(),
                    Some(ProfileFile {
                        written: pname.to_string(),
                        text,
                    }),
                )
            };
            let label = match &r.label {
                Some(l) => label_ok(cx, l, "label")?,
                None => Path::new(pname)
                    .file_stem()
                    .map_or(pname.to_string(), |s| s.to_string_lossy().into_owned()),
            };
            let fullness = match &r.fullness {
                Some(f) if !(*f.get_ref() > 0.0 && *f.get_ref() < 1.0) => {
                    return Err(cx.at(f.span(), "`fullness` must be above 0 and below 1"))
                }
                f => f.as_ref().map(|f| *f.get_ref()),
            };
            let seed = match &r.seed {
                Some(v) if *v.get_ref() < 0 => {
                    return Err(cx.at(v.span(), "`seed` must be 0 or more"))
                }
                v => v.as_ref().map(|v| *v.get_ref() as u64),
            };
            let max_ops = match &r.max_ops {
                Some(v) if *v.get_ref() < 1 => {
                    return Err(cx.at(v.span(), "`max_ops` must be 1 or more"))
                }
                v => v.as_ref().map(|v| *v.get_ref() as u64),
            };
            let max_time_s = match &r.max_time {
                Some(v) => Some(duration(cx, v, "max_time")?),
                None => None,
            };
            Ok((
                StateSpec::Aged {
                    profile,
                    label,
                    fullness,
                    seed,
                    max_ops,
                    max_time_s,
                },
                file,
            ))
        }
        "image" => {
            for (k, sp) in &aged_keys {
                if let Some(sp) = sp {
                    return Err(not_for(k, sp.clone()));
                }
            }
            let Some(n) = &r.name else {
                return Err(cx.at(s.span(), "an image state needs `name` (a library image)"));
            };
            let Some(f) = &r.fs else {
                return Err(cx.at(
                    s.span(),
                    "an image state needs `fs`: the label of the [[fs]] it is an image of",
                ));
            };
            if !fs_labels.contains(f.get_ref()) {
                return Err(cx.at(
                    f.span(),
                    format!(
                        "`fs` = {:?}: no [[fs]] has this label (labels: {})",
                        f.get_ref(),
                        fs_labels.iter().cloned().collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
            Ok((
                StateSpec::Image {
                    name: label_ok(cx, n, "name")?,
                    fs: f.get_ref().clone(),
                },
                None,
            ))
        }
        other => Err(cx.at(
            r.kind.span(),
            format!("unknown state kind {other:?} (fresh, aged or image)"),
        )),
    }
}

/// The devices: latencies (`"none"`, `"100us"`, ranges) and device models (a string that does
/// not start with a digit: a built-in model's name or a model file, relative to the experiment's
/// directory), each model checked to build for a device of `image_size`.
fn devices(
    cx: &Ctx,
    d: &Spanned<RawDevices>,
    image_size: u64,
) -> Result<(Vec<Option<f64>>, Vec<fsage_device::ModelSpec>), Error> {
    let r = d.get_ref();
    let mut set: BTreeSet<Option<u64>> = BTreeSet::new();
    let mut models: Vec<fsage_device::ModelSpec> = Vec::new();
    for v in &r.latencies {
        match v.get_ref() {
            toml::Value::String(s) if s.trim() == "none" => {
                set.insert(None);
            }
            toml::Value::String(s)
                if !s.trim().is_empty() && !s.trim().starts_with(|c: char| c.is_ascii_digit()) =>
            {
                let t = s.trim();
                let in_dir = cx.dir.join(t);
                let text = if Path::new(t).is_relative() && in_dir.exists() {
                    in_dir.to_string_lossy().into_owned()
                } else {
                    t.to_string()
                };
                let m = fsage_device::resolve(&text).map_err(|e| cx.at(v.span(), e.message))?;
                m.build(image_size).map_err(|e| {
                    cx.at(
                        v.span(),
                        format!("{}: {} (image_size {image_size} bytes)", m.name, e.message),
                    )
                })?;
                if models.iter().any(|o| o.name == m.name) {
                    return Err(cx.at(v.span(), format!("device model {:?} given twice", m.name)));
                }
                models.push(m);
            }
            _ => {
                set.insert(Some(latency(cx, v, "latencies")?));
            }
        }
    }
    for rg in &r.ranges {
        let g = rg.get_ref();
        let (from, to, step) = (
            latency(cx, &g.from, "from")?,
            latency(cx, &g.to, "to")?,
            latency(cx, &g.step, "step")?,
        );
        if step == 0 {
            return Err(cx.at(g.step.span(), "`step` must be above 0"));
        }
        if to < from {
            return Err(cx.at(g.to.span(), "`to` is below `from`"));
        }
        let n = (to - from) / step + 1;
        if n > 1000 {
            return Err(cx.at(
                rg.span(),
                format!("this range has {n} latencies; at most 1000"),
            ));
        }
        for i in 0..n {
            set.insert(Some(from + step * i));
        }
    }
    if set.is_empty() && models.is_empty() {
        return Err(cx.at(
            d.span(),
            "[devices] lists no latency: give `latencies` (e.g. [\"none\", \"100us\"]) or \
             `ranges`, or leave [devices] out for plain images",
        ));
    }
    Ok((
        set.into_iter()
            .map(|k| k.map(|n| n as f64 / 1000.0))
            .collect(),
        models,
    ))
}

/// A quantity in the one grammar of fsage-units, from a TOML string (or a number, which is read
/// as its text: only 0 needs no unit), the error at its line naming `key`.
fn quantity<T>(
    cx: &Ctx,
    v: &Spanned<toml::Value>,
    key: &str,
    parse: fn(&str) -> Result<T, fsage_units::UnitError>,
) -> Result<T, Error> {
    let text = match v.get_ref() {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => f.to_string(),
        other => {
            return Err(cx.at(
                v.span(),
                format!(
                    "`{key}`: expected a string such as \"100us\", found {}",
                    other.type_str()
                ),
            ))
        }
    };
    parse(&text).map_err(|e| cx.at(v.span(), format!("`{key}`: {e}")))
}

/// A device latency in ns (fsage-units: `"0"`, `"250ns"`, `"100us"`, `"1.5ms"`, at most 60 s).
fn latency(cx: &Ctx, v: &Spanned<toml::Value>, key: &str) -> Result<u64, Error> {
    quantity(cx, v, key, fsage_units::parse_latency)
}

/// A duration in seconds, 0 allowed (fsage-units: `"90s"`, `"5m"`, `"1h"`, `"0"`).
fn duration_or_zero(cx: &Ctx, v: &Spanned<toml::Value>, key: &str) -> Result<f64, Error> {
    quantity(cx, v, key, fsage_units::parse_duration).map(|d| d.as_secs_f64())
}

/// A positive duration in seconds.
fn duration(cx: &Ctx, v: &Spanned<toml::Value>, key: &str) -> Result<f64, Error> {
    let secs = duration_or_zero(cx, v, key)?;
    if secs <= 0.0 {
        return Err(cx.at(v.span(), format!("`{key}` must be more than 0")));
    }
    Ok(secs)
}

fn size(cx: &Ctx, v: &Spanned<toml::Value>, key: &str) -> Result<u64, Error> {
    match v.get_ref() {
        toml::Value::String(s) => {
            fsage_units::parse_size(s).map_err(|e| cx.at(v.span(), format!("`{key}`: {e}")))
        }
        toml::Value::Integer(i) if *i > 0 => Ok(*i as u64),
        other => Err(cx.at(
            v.span(),
            format!("`{key}`: expected a size such as \"4GiB\", found {other}"),
        )),
    }
}

fn workload(cx: &Ctx, w: &Spanned<RawWorkload>) -> Result<WorkloadSpec, Error> {
    let r = w.get_ref();
    let source = match (&r.name, &r.file) {
        (Some(n), None) => {
            let name = n.get_ref().trim();
            if !BUILTIN_WORKLOADS.contains(&name) {
                return Err(cx.at(
                    n.span(),
                    format!(
                        "unknown built-in workload {name:?} (built in: {}; a .f file goes in \
                         `file`)",
                        BUILTIN_WORKLOADS.join(", ")
                    ),
                ));
            }
            WorkloadSource::Builtin { name: name.into() }
        }
        (None, Some(f)) => {
            let path = cx.dir.join(f.get_ref());
            let text = std::fs::read_to_string(&path)
                .map_err(|e| cx.at(f.span(), format!("workload file {}: {e}", path.display())))?;
            WorkloadSource::File { path, text }
        }
        (Some(n), Some(_)) => {
            return Err(cx.at(
                n.span(),
                "give a workload either `name` (built in) or `file` (a .f file), not both",
            ))
        }
        (None, None) => {
            return Err(cx.at(
                w.span(),
                "a workload needs `name` (built in) or `file` (a .f file)",
            ))
        }
    };
    let mut set = BTreeMap::new();
    for (k, v) in &r.set {
        if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(cx.at(
                v.span(),
                format!("variable name {k:?}: letters, digits and _ only"),
            ));
        }
        let val = match v.get_ref() {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            other => {
                return Err(cx.at(
                    v.span(),
                    format!(
                        "`set.{k}`: expected a string or a number, found {}",
                        other.type_str()
                    ),
                ))
            }
        };
        set.insert(k.clone(), val);
    }
    check_workload(cx, w, &source, &set)?;
    let label = match &r.label {
        Some(l) => label_ok(cx, l, "label")?,
        None => match &source {
            WorkloadSource::Builtin { name } => name.clone(),
            WorkloadSource::File { path, .. } => path
                .file_stem()
                .map_or("workload".into(), |s| s.to_string_lossy().into_owned()),
        },
    };
    Ok(WorkloadSpec { label, source, set })
}

/// Parses the workload and applies its variables now, so that a bad `.f` file or a `set` the
/// workload cannot take is an error of the experiment file (its line, and the `.f` file's line)
/// before anything runs, not a failure of every cell after the aging.
fn check_workload(
    cx: &Ctx,
    w: &Spanned<RawWorkload>,
    source: &WorkloadSource,
    set: &BTreeMap<String, String>,
) -> Result<(), Error> {
    let r = w.get_ref();
    let (parsed, span) = match source {
        WorkloadSource::Builtin { name } => (
            fsage_workload::Workload::builtin(name),
            r.name.as_ref().map_or(w.span(), |n| n.span()),
        ),
        WorkloadSource::File { path, text } => (
            fsage_workload::Workload::parse(text, &path.display().to_string()),
            r.file.as_ref().map_or(w.span(), |f| f.span()),
        ),
    };
    let parsed = parsed.map_err(|e| cx.at(span, format!("workload: {e}")))?;
    // One variable at a time first, so that the error points at the one that is wrong.
    for (k, v) in set {
        if let Err(e) = parsed.with_vars(&[(k, v)]) {
            let at = r.set.get(k).map_or(w.span(), |s| s.span());
            return Err(cx.at(at, format!("`set.{k}` = {v:?}: {e}")));
        }
    }
    let vars: Vec<(&String, &String)> = set.iter().collect();
    parsed
        .with_vars(&vars)
        .map_err(|e| cx.at(w.span(), format!("workload with its `set`: {e}")))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name = "demo"
duration = "30s"
warmup = "5s"
repetitions = 2
cache_ratio = 0.5
seed = 7
image_size = "1GiB"

[[fs]]
kind = "ext4"

[[fs]]
kind = "xfs"
mkfs_opts = "-m reflink=0"

[[state]]
kind = "fresh"

[[state]]
kind = "aged"
profile = "meyer"
max_ops = 100000

[devices]
latencies = ["none"]
ranges = [{ from = "0", to = "1ms", step = "500us" }]

[[workload]]
name = "varmail"
set = { nfiles = 100 }
"#;

    fn p(text: &str) -> Result<ExperimentSpec, Error> {
        parse(text, "x.toml", Path::new("."))
    }

    /// Ids computed before device models existed: latency-only cells keep them.
    #[test]
    fn latency_only_cell_ids_are_pinned() {
        let plan = p(GOOD).unwrap().plan();
        let ids: Vec<&str> = plan.cells.iter().take(4).map(|c| c.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "ext4-fresh-varmail-plain-r0-71c04dcc4a52",
                "ext4-aged.meyer-varmail-plain-r0-1e8eef77ca48",
                "ext4-fresh-varmail-0us-r0-a8279f6633a1",
                "ext4-aged.meyer-varmail-0us-r0-6b2fd3387579",
            ]
        );
        let j = serde_json::to_string(&plan.cells[0]).unwrap();
        assert!(!j.contains("device_model"), "{j}");
    }

    #[test]
    fn devices_take_model_names_beside_latencies() {
        let one = |list: &str| {
            p(&GOOD.replace(
                "latencies = [\"none\"]\nranges = [{ from = \"0\", to = \"1ms\", step = \"500us\" }]",
                &format!("latencies = {list}"),
            ))
        };
        let s = one(r#"["none", "100us"]"#).unwrap();
        let ids: Vec<String> = s.plan().cells.iter().map(|c| c.id.clone()).collect();
        assert_eq!(
            ids[2], "ext4-fresh-varmail-100us-r0-1181f7ecc2af",
            "pinned before models"
        );
        assert_eq!(ids[7], "xfs-aged.meyer-varmail-100us-r0-245c97396d14");
        // A model file beside the experiment, by a name relative to its directory.
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("slow.toml"),
            "name = \"slow\"\nkind = \"fixed\"\n[params]\nread = { value = \"5ms\", source = \"t\" }\nwrite = { value = \"5ms\", source = \"t\" }\n",
        )
        .unwrap();
        let text = GOOD.replace(
            "latencies = [\"none\"]\nranges = [{ from = \"0\", to = \"1ms\", step = \"500us\" }]",
            "latencies = [\"slow.toml\", \"100us\", \"0\"]",
        );
        let s = parse(&text, "x.toml", d.path()).unwrap();
        assert_eq!(s.latencies, vec![Some(0.0), Some(100.0)]);
        assert_eq!(s.device_models.len(), 1);
        assert_eq!(s.device_models[0].name, "slow");
        assert!(s.device_models[0].text.contains("5ms"));
        let plan = s.plan();
        // Per fs and workload: 2 latencies x 2 states, then the model x 2 states.
        assert_eq!(plan.cells.len(), 2 * 2 * (2 + 1) * 2);
        let c = &plan.cells[4];
        assert!(c.id.starts_with("ext4-fresh-varmail-slow-r0-"), "{}", c.id);
        assert_eq!(c.latency_us, None);
        assert_eq!(c.device_model.as_ref().unwrap().name, "slow");
        // The 100us cells are the same cells as in a latency-only experiment.
        assert_eq!(plan.cells[2].id, ids[2]);
        // A bad name is named with file, line and column.
        let e = one(r#"["none",
 "warp-drive"]"#)
        .unwrap_err()
        .to_string();
        assert!(e.contains("x.toml:") && e.contains("warp-drive"), "{e}");
        assert!(e.contains("neither a latency"), "{e}");
        let line = e.split(':').nth(1).unwrap();
        let want = GOOD
            .lines()
            .position(|l| l.starts_with("latencies"))
            .unwrap()
            + 2;
        assert_eq!(line, want.to_string(), "{e}");
        // A latency with a bad unit stays a latency error.
        let e = one(r#"["100 parsecs"]"#).unwrap_err().to_string();
        assert!(e.contains("unknown unit"), "{e}");
        let twice = text.replace("\"slow.toml\", \"100us\"", "\"slow.toml\", \"slow.toml\"");
        let e = parse(&twice, "x.toml", d.path()).unwrap_err().to_string();
        assert!(e.contains("\"slow\" given twice"), "{e}");
    }

    #[test]
    fn expands_the_matrix_with_stable_ids() {
        let s = p(GOOD).unwrap();
        assert_eq!(
            s.latencies,
            vec![None, Some(0.0), Some(500.0), Some(1000.0)]
        );
        let plan = s.plan();
        // 2 fs x 2 states x 1 workload x 2 reps x 4 latencies.
        assert_eq!(plan.cells.len(), 32);
        assert_eq!(plan.aging_runs, vec!["ext4 aged:meyer", "xfs aged:meyer"]);
        let ids: BTreeSet<&str> = plan.cells.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids.len(), 32, "ids are unique");
        // Run order: repetition, fs, workload, latency, state.
        assert!(plan.cells[0].id.starts_with("ext4-fresh-varmail-plain-r0-"));
        assert!(plan.cells[1]
            .id
            .starts_with("ext4-aged.meyer-varmail-plain-r0-"));
        assert_eq!(plan.cells[2].latency_us, Some(0.0));
        assert_eq!(plan.cells[8].fs.label, "xfs");
        assert_eq!(plan.cells[16].rep, 1);
        assert_eq!(plan.cells[16].seed, 8);
        // 32 x 35 s, plus 32 x (5 + 1) s.
        assert_eq!(plan.run_s, 32.0 * 35.0);
        assert_eq!(plan.estimate_s, 32.0 * 41.0);
        // Same cell, same id; another name of the experiment keeps the ids.
        let again = p(&GOOD.replace("\"demo\"", "\"renamed\"")).unwrap().plan();
        assert_eq!(again.cells[5].id, plan.cells[5].id);
        // A longer duration changes every id.
        let longer = p(&GOOD.replace("\"30s\"", "\"31s\"")).unwrap().plan();
        assert_ne!(longer.cells[5].id, plan.cells[5].id);
        // Adding a file system keeps the ids of the cells already there.
        let more = p(&GOOD.replace(
            "[[state]]\nkind = \"fresh\"",
            "[[fs]]\nkind = \"btrfs\"\n\n[[state]]\nkind = \"fresh\"",
        ))
        .unwrap()
        .plan();
        assert_eq!(more.cells.len(), 48);
        assert!(more.cells.iter().any(|c| c.id == plan.cells[20].id));
    }

    fn err(text: &str) -> String {
        p(text).unwrap_err().message
    }

    #[test]
    fn errors_name_the_line_and_what_is_wrong() {
        let e = err(&GOOD.replace("kind = \"xfs\"", "kind = \"zfs\""));
        assert!(e.starts_with("x.toml:14:"), "{e}");
        assert!(e.contains("unknown file system kind \"zfs\""), "{e}");

        let e = err(&GOOD.replace("step = \"500us\"", "step = \"500\""));
        assert!(e.starts_with("x.toml:27:"), "{e}");
        assert!(
            e.contains("`step`: `500` is not a latency: give a unit"),
            "{e}"
        );

        let e = err(&GOOD.replace("name = \"varmail\"", "name = \"mailserver\""));
        assert!(e.starts_with("x.toml:30:"), "{e}");
        assert!(e.contains("unknown built-in workload"), "{e}");

        let e = err(&GOOD.replace("profile = \"meyer\"", "profile = \"nosuch\""));
        assert!(e.starts_with("x.toml:22:"), "{e}");
        assert!(e.contains("neither built in"), "{e}");

        let e = err(&GOOD.replace("repetitions = 2", "repetitions = 0"));
        assert!(e.starts_with("x.toml:5:"), "{e}");

        let e = err(&GOOD.replace("seed = 7", "seed = 7\ncolour = 1"));
        assert!(e.contains("unknown key `colour`"), "{e}");
        assert!(e.starts_with("x.toml:8:"), "{e}");

        let e = err(&GOOD.replace("duration = \"30s\"\n", ""));
        assert!(e.contains("missing key `duration`"), "{e}");

        let e = err(&GOOD.replace("max_ops = 100000", "name = \"x\""));
        assert!(
            e.contains("`name` does not apply to a state of kind \"aged\""),
            "{e}"
        );

        let e = err(&GOOD.replace("[[fs]]\nkind = \"xfs\"", "[[fs]]\nkind = \"ext4\""));
        assert!(e.contains("label \"ext4\" used twice"), "{e}");

        let e = err(&GOOD.replace("image_size = \"1GiB\"", "image_size = \"1MiB\""));
        assert!(e.starts_with("x.toml:8:") && e.contains("64 MiB"), "{e}");
    }

    #[test]
    fn image_states_apply_to_their_file_system_only() {
        let text = GOOD.replace(
            "[devices]",
            "[[state]]\nkind = \"image\"\nname = \"ext4-meyer\"\nfs = \"ext4\"\n\n[devices]",
        );
        let plan = p(&text).unwrap().plan();
        let images: Vec<&Cell> = plan
            .cells
            .iter()
            .filter(|c| matches!(c.state, StateSpec::Image { .. }))
            .collect();
        assert_eq!(images.len(), 8);
        assert!(images.iter().all(|c| c.fs.label == "ext4"));
        let bad = GOOD.replace(
            "[devices]",
            "[[state]]\nkind = \"image\"\nname = \"a\"\nfs = \"btrfs\"\n\n[devices]",
        );
        assert!(p(&bad)
            .unwrap_err()
            .message
            .contains("no [[fs]] has this label"));
    }

    #[test]
    fn no_devices_means_plain_images() {
        let text = GOOD
            .replace("[devices]\nlatencies = [\"none\"]\n", "")
            .replace(
                "ranges = [{ from = \"0\", to = \"1ms\", step = \"500us\" }]\n",
                "",
            );
        assert_eq!(p(&text).unwrap().latencies, vec![None]);
    }

    /// The same experiment file, reached by three spellings of its path (absolute, absolute
    /// through `sub/..`, relative from the current directory), has the same cell ids; the profile
    /// file's text is in every aged cell, and editing it changes the ids.
    #[test]
    fn cell_ids_do_not_depend_on_how_the_path_is_spelled() {
        let d = tempfile::tempdir().unwrap();
        let dir = std::fs::canonicalize(d.path()).unwrap();
        std::fs::create_dir(dir.join("sub")).unwrap();
        let prof = include_str!("../../fsage-profile/builtin/meyer.toml");
        std::fs::write(dir.join("myprof.toml"), prof).unwrap();
        let exp = GOOD.replace("profile = \"meyer\"", "profile = \"myprof.toml\"");
        std::fs::write(dir.join("exp.toml"), &exp).unwrap();
        let cwd = std::env::current_dir().unwrap();
        let ups = "../".repeat(cwd.components().count() - 1);
        let relative = PathBuf::from(format!(
            "{ups}{}",
            dir.join("exp.toml")
                .display()
                .to_string()
                .trim_start_matches('/')
        ));
        assert!(relative.is_relative());
        let spellings = [
            dir.join("exp.toml"),
            dir.join("sub").join("..").join("exp.toml"),
            relative,
        ];
        let ids = |p: &Path| -> Vec<String> {
            load(p)
                .unwrap()
                .plan()
                .cells
                .into_iter()
                .map(|c| c.id)
                .collect()
        };
        let first = ids(&spellings[0]);
        assert!(first
            .iter()
            .any(|i| i.starts_with("ext4-aged.myprof-varmail-plain-r0-")));
        for sp in &spellings[1..] {
            assert_eq!(ids(sp), first, "planned as {}", sp.display());
        }
        // A copy of the experiment and its profile elsewhere (a clone of the repository) too.
        let other = dir.join("sub");
        std::fs::write(other.join("myprof.toml"), prof).unwrap();
        std::fs::write(other.join("exp.toml"), &exp).unwrap();
        assert_eq!(ids(&other.join("exp.toml")), first);
        let plan = load(&spellings[2]).unwrap().plan();
        let aged = plan
            .cells
            .iter()
            .find(|c| matches!(c.state, StateSpec::Aged { .. }))
            .unwrap();
        let pf = aged.profile_file.as_ref().unwrap();
        assert_eq!(
            (pf.written.as_str(), pf.text.as_str()),
            ("myprof.toml", prof)
        );
        assert!(plan
            .cells
            .iter()
            .all(|c| matches!(c.state, StateSpec::Fresh) == c.profile_file.is_none()));
        // The runner reads the profile from an absolute path whatever the spelling.
        let StateSpec::Aged { profile, .. } = &aged.state else {
            unreachable!()
        };
        assert_eq!(Path::new(profile), dir.join("myprof.toml"));
        // An edited profile is another cell.
        std::fs::write(dir.join("myprof.toml"), format!("{prof}\n# edited\n")).unwrap();
        assert_ne!(ids(&spellings[0]), first);
    }

    /// A workload that cannot run is refused when the experiment is read, with the line of the
    /// experiment and the `.f` file's line, not after the aging by every cell.
    #[test]
    fn bad_workloads_and_variables_are_refused_at_load() {
        // A variable the built-in does not have, and one it has with a value it cannot take.
        let e = err(&GOOD.replace(
            "set = { nfiles = 100 }",
            "set = { meanfilesize = \"zzz\", nfiles = 10 }",
        ));
        assert!(e.starts_with("x.toml:31:"), "{e}");
        assert!(
            e.contains("`set.meanfilesize`") && e.contains("no variable $meanfilesize"),
            "{e}"
        );
        let e = err(&GOOD.replace("set = { nfiles = 100 }", "set = { nfiles = \"zzz\" }"));
        assert!(
            e.starts_with("x.toml:31:") && e.contains("`set.nfiles`"),
            "{e}"
        );
        // The documented variables of the built-ins are accepted.
        for b in BUILTIN_WORKLOADS {
            let text = GOOD.replace("\"varmail\"", &format!("\"{b}\"")).replace(
                "set = { nfiles = 100 }",
                "set = { nfiles = 100, filesize = \"16k\", nthreads = 2, meandirwidth = 10, \
                 iosize = \"64k\", meanappendsize = \"4k\" }",
            );
            p(&text).unwrap_or_else(|e| panic!("{b}: {e}"));
        }

        // A .f file that is not Filebench's language, and a good one given a bad value.
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("garbage.f"),
            "set $x=1\nthis is not a workload\n",
        )
        .unwrap();
        std::fs::write(
            d.path().join("small.f"),
            include_str!("../examples/small.f"),
        )
        .unwrap();
        let with_file = |f: &str, set: &str| {
            let text = GOOD.replace(
                "name = \"varmail\"\nset = { nfiles = 100 }",
                &format!("file = \"{f}\"\nset = {{ {set} }}"),
            );
            parse(&text, "x.toml", d.path())
        };
        let e = with_file("garbage.f", "").unwrap_err().message;
        assert!(e.starts_with("x.toml:30:"), "{e}");
        assert!(e.contains("garbage.f:2:"), "{e}");
        let e = with_file("small.f", "meanfilesize = \"zzz\"")
            .unwrap_err()
            .message;
        assert!(
            e.starts_with("x.toml:31:") && e.contains("`set.meanfilesize`"),
            "{e}"
        );
        with_file("small.f", "meanfilesize = \"4k\", nfiles = 10").unwrap();
    }

    /// `plan` warns about a library image that is not in the library, naming `fsage image list`
    /// once; an image that is there gives no warning.
    #[test]
    fn missing_library_images_are_named_once() {
        let text = GOOD.replace(
            "[devices]",
            "[[state]]\nkind = \"image\"\nname = \"not-there\"\nfs = \"ext4\"\n\n[devices]",
        );
        let lib = tempfile::tempdir().unwrap();
        let w = p(&text).unwrap().missing_images(lib.path());
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("x.toml: state image \"not-there\""),
            "{}",
            w[0]
        );
        assert_eq!(w[0].matches("image list").count(), 1, "{}", w[0]);
        assert!(p(GOOD).unwrap().missing_images(lib.path()).is_empty());
    }

    /// Cell ids of a resumed experiment must not change when the parsers of its quantities do:
    /// ids pinned as they were before the latencies, durations and sizes moved to fsage-units.
    #[test]
    fn cell_ids_are_pinned() {
        let text = GOOD
            .replace("\"30s\"", "\"1.5m\"")
            .replace("\"5s\"", "\"0.5s\"")
            .replace("\"1GiB\"", "\"1.5GiB\"")
            .replace(
                "latencies = [\"none\"]",
                "latencies = [\"none\", \"250ns\", \"1.5ms\", \"100 µs\", \"2s\"]",
            )
            .replace("step = \"500us\"", "step = \"0.25ms\"");
        let plan = p(&text).unwrap().plan();
        let ids: Vec<&str> = plan
            .cells
            .iter()
            .filter(|c| c.rep == 0 && c.fs.label == "ext4")
            .map(|c| c.id.as_str())
            .collect();
        assert_eq!(
            ids,
            [
                "ext4-fresh-varmail-plain-r0-3eca255f40db",
                "ext4-aged.meyer-varmail-plain-r0-be96e6b0901d",
                "ext4-fresh-varmail-0us-r0-7ca8a7307773",
                "ext4-aged.meyer-varmail-0us-r0-e349d55faf16",
                "ext4-fresh-varmail-0.25us-r0-8bc1e6bbccd0",
                "ext4-aged.meyer-varmail-0.25us-r0-dd9feb29f4fb",
                "ext4-fresh-varmail-100us-r0-4c4500669acb",
                "ext4-aged.meyer-varmail-100us-r0-edb3431f9a77",
                "ext4-fresh-varmail-250us-r0-8a185fc20e55",
                "ext4-aged.meyer-varmail-250us-r0-511a6a72bd07",
                "ext4-fresh-varmail-500us-r0-05c5c7bc7f90",
                "ext4-aged.meyer-varmail-500us-r0-518b0b69e277",
                "ext4-fresh-varmail-750us-r0-ef363df398f9",
                "ext4-aged.meyer-varmail-750us-r0-b7a153431886",
                "ext4-fresh-varmail-1000us-r0-37b34ca9d68a",
                "ext4-aged.meyer-varmail-1000us-r0-be2017ae2d5d",
                "ext4-fresh-varmail-1500us-r0-f6d2651491c8",
                "ext4-aged.meyer-varmail-1500us-r0-b906792d8941",
                "ext4-fresh-varmail-2000000us-r0-ff0487b084da",
                "ext4-aged.meyer-varmail-2000000us-r0-dc574c4b0d08",
            ]
        );
    }
}

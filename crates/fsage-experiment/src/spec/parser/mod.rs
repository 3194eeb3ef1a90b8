//! Reading an experiment file: TOML with spans, so that every error names the file, the line,
//! the column and what is wrong; then validation into an [`ExperimentSpec`].

use super::types::{
    AgeOn, CopyMethod, DriveBefore, DriveSpec, ExperimentSpec, FsSpec, Placement, ProfileFile,
    StateSpec, WorkloadSource, WorkloadSpec, BUILTIN_WORKLOADS, FS_KINDS,
};
use crate::Error;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml::Spanned;

mod devices;
mod state;
mod workload;

use devices::{devices, drives, placements};
use state::state;
use workload::workload;

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
    sample: Option<Spanned<toml::Value>>,
    lock_stats: Option<Spanned<toml::Value>>,
    kernel: Option<Spanned<toml::Value>>,
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
    kernel: Option<Spanned<String>>,
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
    #[serde(default)]
    drives: Option<Spanned<Vec<Spanned<String>>>>,
    age_on: Option<Spanned<String>>,
    copy: Option<Spanned<toml::Value>>,
    drive: Option<Spanned<toml::Value>>,
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
    data: Option<Spanned<String>>,
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

    check_list_lengths(&cx, &raw)?;
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
    let sample_s = match &raw.sample {
        Some(v) => Some(duration(&cx, v, "sample")?),
        None => None,
    };
    let lock_stats = match &raw.lock_stats {
        Some(v) => v.get_ref().as_bool().ok_or_else(|| {
            cx.at(
                v.span(),
                format!(
                    "`lock_stats` = {}: must be true or false (record lock contention by lock \
                     instance in each cell)",
                    v.get_ref()
                ),
            )
        })?,
        None => false,
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
    let default_kernels: Vec<String> = match &raw.kernel {
        None => Vec::new(),
        Some(v) => {
            let list: Vec<&str> =
                match v.get_ref() {
                    toml::Value::String(s) => vec![s.as_str()],
                    toml::Value::Array(a) if !a.is_empty() => a
                        .iter()
                        .map(|x| x.as_str())
                        .collect::<Option<_>>()
                        .ok_or_else(|| {
                            cx.at(
                                v.span(),
                                "`kernel`: give a version string or a list of them",
                            )
                        })?,
                    _ => return Err(cx.at(
                        v.span(),
                        "`kernel`: give a Debian kernel version (\"6.1.0-56\") or a list of them",
                    )),
                };
            let mut out: Vec<String> = Vec::new();
            for k in list {
                let k = kernel_ok(&cx, k, v.span())?;
                if out.contains(&k) {
                    return Err(cx.at(v.span(), format!("`kernel`: {k:?} given twice")));
                }
                out.push(k);
            }
            out
        }
    };
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
        // Each kind's own minimum size (xfs 300 MiB, btrfs 128 MiB, f2fs 52 MiB, nilfs2 128 MiB
        // and 4 KiB: above the general 64 MiB but for f2fs): refused here, not by mkfs in every
        // cell of that kind.
        if let Ok(k) = fsage_lab::FsKind::parse(&kind) {
            if image_size < k.min_size() {
                return Err(cx.at(
                    r.kind.span(),
                    format!(
                        "{kind} needs an `image_size` of at least {} bytes ({} MiB and {} KiB); \
                         this experiment's is {image_size}",
                        k.min_size(),
                        k.min_size() >> 20,
                        (k.min_size() % (1 << 20)) >> 10
                    ),
                ));
            }
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
        let mkfs_opts = r.mkfs_opts.clone().filter(|s| !s.trim().is_empty());
        let own_kernel = match &r.kernel {
            Some(k) => Some(kernel_ok(&cx, k.get_ref(), k.span())?),
            None => None,
        };
        // An [[fs]] without a kernel of its own takes the top-level one(s): with several, one
        // file system per kernel, labelled `LABEL-kKERNEL`.
        let kernels: Vec<Option<String>> = match (own_kernel, &default_kernels) {
            (Some(k), _) => vec![Some(k)],
            (None, d) if d.is_empty() => vec![None],
            (None, d) if d.len() == 1 => vec![Some(d[0].clone())],
            (None, d) => d.iter().cloned().map(Some).collect(),
        };
        let several = kernels.len() > 1;
        for k in kernels {
            let label = match (&k, several) {
                (Some(k), true) => format!("{label}-k{k}"),
                _ => label.clone(),
            };
            if several && !labels.insert(label.clone()) {
                return Err(cx.at(
                    lspan.clone(),
                    format!(
                        "file system label {label:?} used twice: give each [[fs]] its own `label`"
                    ),
                ));
            }
            file_systems.push(FsSpec {
                label,
                kind: kind.clone(),
                mkfs_opts: mkfs_opts.clone(),
                kernel: k,
            });
        }
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
    // A latency is the fixed model of that latency: translated here, after the checks that
    // tell latencies and models apart.
    let (latencies, device_models) = match &raw.devices {
        None => (vec![None], Vec::new()),
        Some(d) => devices(&cx, d, image_size)?,
    };
    let drives = match raw
        .devices
        .as_ref()
        .and_then(|d| d.get_ref().drives.as_ref())
    {
        None => Vec::new(),
        Some(list) => drives(&cx, list, &device_models, &states, &profile_files)?,
    };
    let (age_on, placements) = match &raw.devices {
        None => (AgeOn::Drive, Vec::new()),
        Some(d) => placements(&cx, d.get_ref(), &device_models)?,
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

    let spec = ExperimentSpec {
        name,
        description: raw.description,
        origin: origin.to_string(),
        file_systems,
        states,
        devices: latencies
            .into_iter()
            .map(|l| l.map(fsage_device::ModelSpec::fixed))
            .chain(device_models.into_iter().map(Some))
            .collect(),
        drives,
        age_on,
        placements,
        workloads,
        duration_s,
        warmup_s,
        repetitions,
        cache_ratio,
        sample_s,
        lock_stats,
        seed,
        image_size,
        profile_files,
    };
    let cells = spec.cell_count();
    if cells > MAX_CELLS as u128 {
        return Err(cx.whole(format!(
            "the matrix has {cells} cells (repetitions x file systems x workloads x devices x \
             states): at most {MAX_CELLS}; split the experiment"
        )));
    }
    Ok(spec)
}

/// The most entries of any one list of an experiment file (`[[fs]]`, `[[state]]`,
/// `[[workload]]`, `latencies`, `ranges`, `drives`, `kernel`), and the most cells its matrix
/// may expand to: a file of a few lines cannot make `experiment plan` run for hours or fill the
/// memory.
pub const MAX_LIST: usize = 1000;
pub const MAX_CELLS: usize = 100_000;

/// Refuses a list longer than [`MAX_LIST`] at its first entry past the bound, before any entry
/// is looked at (some checks compare each entry with the others).
fn check_list_lengths(cx: &Ctx, raw: &Raw) -> Result<(), Error> {
    let long = |n: usize, span: Option<Range<usize>>, what: &str| -> Result<(), Error> {
        if n <= MAX_LIST {
            return Ok(());
        }
        let msg = format!("{n} {what}: at most {MAX_LIST}");
        Err(match span {
            Some(s) => cx.at(s, msg),
            None => cx.whole(msg),
        })
    };
    long(
        raw.fs.len(),
        raw.fs.get(MAX_LIST).map(|f| f.span()),
        "[[fs]] entries",
    )?;
    long(
        raw.state.len(),
        raw.state.get(MAX_LIST).map(|f| f.span()),
        "[[state]] entries",
    )?;
    long(
        raw.workload.len(),
        raw.workload.get(MAX_LIST).map(|f| f.span()),
        "[[workload]] entries",
    )?;
    if let Some(k) = &raw.kernel {
        if let toml::Value::Array(a) = k.get_ref() {
            long(a.len(), Some(k.span()), "kernels in `kernel`")?;
        }
    }
    if let Some(d) = &raw.devices {
        let d = d.get_ref();
        long(
            d.latencies.len(),
            d.latencies.get(MAX_LIST).map(|v| v.span()),
            "`latencies`",
        )?;
        long(
            d.ranges.len(),
            d.ranges.get(MAX_LIST).map(|v| v.span()),
            "`ranges`",
        )?;
        if let Some(l) = &d.drives {
            long(l.get_ref().len(), Some(l.span()), "`drives`")?;
        }
    }
    Ok(())
}

/// A kernel version as `fsage vm` fetches it: a Debian version such as `6.1.0-56` (digits first;
/// letters, digits, `.`, `+`, `-`, `_` after).
fn kernel_ok(cx: &Ctx, k: &str, span: Range<usize>) -> Result<String, Error> {
    let k = k.trim();
    let ok = k.chars().next().is_some_and(|c| c.is_ascii_digit())
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || ".+-_".contains(c));
    if !ok {
        return Err(cx.at(
            span,
            format!("`kernel` {k:?}: give a Debian kernel version such as \"6.1.0-56\" (`fsage vm kernel list`)"),
        ));
    }
    Ok(k.to_string())
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

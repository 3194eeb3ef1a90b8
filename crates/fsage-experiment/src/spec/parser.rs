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
) -> Result<(Vec<Option<u64>>, Vec<fsage_device::ModelSpec>), Error> {
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
    Ok((set.into_iter().collect(), models))
}

/// `[devices] drives`: `"own"`, `"erased"`, `"aged.LABEL"` (an aged state of this file), each
/// once, for an experiment with a model that keeps state (an SSD).
fn drives(
    cx: &Ctx,
    list: &Spanned<Vec<Spanned<String>>>,
    models: &[fsage_device::ModelSpec],
    states: &[StateSpec],
    profile_files: &BTreeMap<String, ProfileFile>,
) -> Result<Vec<Option<DriveSpec>>, Error> {
    if !models.iter().any(|m| m.keeps_state()) {
        return Err(cx.at(
            list.span(),
            "`drives` needs a device model that keeps a drive state (an SSD, e.g. \"ssd-sata\") \
             in `latencies`",
        ));
    }
    if list.get_ref().is_empty() {
        return Err(cx.at(
            list.span(),
            "`drives` is empty: give [\"own\"] or leave it out",
        ));
    }
    let mut out: Vec<Option<DriveSpec>> = Vec::new();
    for d in list.get_ref() {
        let t = d.get_ref().trim();
        let drive = match t {
            "own" => None,
            "erased" => Some(DriveSpec::Erased),
            _ => {
                let known = states
                    .iter()
                    .find(|s| matches!(s, StateSpec::Aged { .. }) && s.id_part() == t);
                let Some(st) = known else {
                    let aged: Vec<String> = states
                        .iter()
                        .filter(|s| matches!(s, StateSpec::Aged { .. }))
                        .map(|s| format!("\"{}\"", s.id_part()))
                        .collect();
                    return Err(cx.at(
                        d.span(),
                        format!(
                            "drive {t:?}: not \"own\", \"erased\" or an aged state of this \
                             experiment ({})",
                            if aged.is_empty() {
                                "it has none".to_string()
                            } else {
                                aged.join(", ")
                            }
                        ),
                    ));
                };
                let profile_file = match st {
                    StateSpec::Aged { label, .. } => profile_files.get(label).cloned(),
                    _ => None,
                };
                Some(DriveSpec::Of {
                    state: st.clone(),
                    profile_file,
                })
            }
        };
        if out.contains(&drive) {
            return Err(cx.at(d.span(), format!("drive {t:?} given twice")));
        }
        out.push(drive);
    }
    Ok(out)
}

/// One name or a list of names (`copy = "whole"`, `copy = ["sparse", "whole"]`), each once, each
/// one of `names`.
fn names_list<T: Copy + PartialEq>(
    cx: &Ctx,
    v: &Spanned<toml::Value>,
    key: &str,
    names: &[(&str, T)],
) -> Result<Vec<T>, Error> {
    let one_of = || {
        names
            .iter()
            .map(|(n, _)| format!("\"{n}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let items: Vec<&toml::Value> = match v.get_ref() {
        toml::Value::Array(a) if a.is_empty() => {
            return Err(cx.at(
                v.span(),
                format!("`{key}` is empty: give one of {}", one_of()),
            ))
        }
        toml::Value::Array(a) => a.iter().collect(),
        other => vec![other],
    };
    let mut out = Vec::new();
    for it in items {
        let Some(t) = it.as_str() else {
            return Err(cx.at(
                v.span(),
                format!("`{key}`: {it} is not a name: give one of {}", one_of()),
            ));
        };
        let Some(&(_, x)) = names.iter().find(|(n, _)| *n == t.trim()) else {
            return Err(cx.at(
                v.span(),
                format!("`{key}`: {t:?} is not one of {}", one_of()),
            ));
        };
        if out.contains(&x) {
            return Err(cx.at(v.span(), format!("`{key}`: {t:?} given twice")));
        }
        out.push(x);
    }
    Ok(out)
}

/// `[devices] age_on`, `copy` and `drive`: where aged states are aged, and how each cell's image
/// reaches a drive that keeps state (the copies crossed with the drives' states before them).
fn placements(
    cx: &Ctx,
    d: &RawDevices,
    models: &[fsage_device::ModelSpec],
) -> Result<(AgeOn, Vec<Placement>), Error> {
    let stateful = models.iter().any(|m| m.keeps_state());
    let need_model = |span: Range<usize>, key: &str| {
        cx.at(
            span,
            format!(
                "`{key}` needs a device model that keeps a drive state (an SSD, e.g. \
                 \"ssd-sata\") in `latencies`"
            ),
        )
    };
    let age_on = match &d.age_on {
        None => AgeOn::Drive,
        Some(a) => {
            if !stateful {
                return Err(need_model(a.span(), "age_on"));
            }
            match a.get_ref().trim() {
                "drive" => AgeOn::Drive,
                "memory" => AgeOn::Memory,
                t => {
                    return Err(cx.at(
                        a.span(),
                        format!("`age_on`: {t:?} is not \"drive\" or \"memory\""),
                    ))
                }
            }
        }
    };
    let copies = match &d.copy {
        None => Vec::new(),
        Some(c) => {
            if !stateful {
                return Err(need_model(c.span(), "copy"));
            }
            if let Some(dr) = &d.drives {
                return Err(cx.at(
                    dr.span(),
                    "`drives` and `copy` cannot be given together: with `copy` the image is \
                     copied onto a drive in the state `drive` names, not run on the drive its \
                     aging left",
                ));
            }
            names_list(
                cx,
                c,
                "copy",
                &[
                    ("sparse", CopyMethod::Sparse),
                    ("data", CopyMethod::Data),
                    ("whole", CopyMethod::Whole),
                ],
            )?
        }
    };
    let befores = match &d.drive {
        None => vec![DriveBefore::Erased],
        Some(v) => {
            if d.copy.is_none() {
                return Err(cx.at(
                    v.span(),
                    "`drive` is the drive's state before the copy: give `copy` too (\"sparse\", \
                     \"data\" or \"whole\")",
                ));
            }
            names_list(
                cx,
                v,
                "drive",
                &[
                    ("erased", DriveBefore::Erased),
                    ("preconditioned", DriveBefore::Preconditioned),
                    ("previous", DriveBefore::Previous),
                ],
            )?
        }
    };
    if age_on == AgeOn::Memory && copies.is_empty() {
        let span = d.age_on.as_ref().map_or(0..0, |a| a.span());
        return Err(cx.at(
            span,
            "`age_on = \"memory\"` leaves the drive out of aging: give `copy` (\"sparse\", \
             \"data\" or \"whole\"), how the image then reaches the drive",
        ));
    }
    let mut out = Vec::new();
    for &copy in &copies {
        for &drive in &befores {
            out.push(Placement { copy, drive });
        }
    }
    Ok((age_on, out))
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
    let data = match &r.data {
        Some(d) => Some(
            fsage_workload::DataPattern::parse(d.get_ref())
                .map_err(|e| cx.at(d.span(), format!("`data`: {e}")))?,
        ),
        None => None,
    };
    Ok(WorkloadSpec {
        label,
        source,
        set,
        data,
    })
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

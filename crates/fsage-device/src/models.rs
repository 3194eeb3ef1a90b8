//! Model files: a device model is a small TOML file whose every number has a unit (the
//! `fsage-units` grammar) and a source, so that a result on a model can be traced to a datasheet,
//! a paper or an emulator's defaults.
//!
//! ```toml
//! name = "fixed-100us"
//! kind = "fixed"
//! description = "100 us per request, as the slippery-slope study's dm-delay devices"
//!
//! [params]
//! read = { value = "100us", source = "Santana et al., INFLOW '15: dm-delay at 100 us" }
//! write = { value = "100us", source = "the same" }
//! ```
//!
//! [`resolve`] reads what a user types where a device goes: a latency (`100us`, `0`: a fixed
//! latency), the name of a built-in model ([`builtins`], `fsage dev models`), or the path of a
//! model file.

pub use crate::fixed::FixedParams;
pub use crate::kinds::ModelKind;
use crate::kinds::{kind_named, Capabilities, KINDS};
use crate::{DeviceModel, Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// One parameter as written: its value (a number or a quantity with a unit) and its source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Param {
    pub value: toml::Value,
    pub source: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    name: String,
    kind: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    params: BTreeMap<String, toml::Spanned<Param>>,
}

/// A model, read and checked: what to record with a result and what to build.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelSpec {
    /// The name it was asked for by (a built-in's name, a file's `name`, or the latency typed).
    pub name: String,
    pub description: String,
    pub kind: ModelKind,
    /// Each parameter as written, with its source (empty for a bare latency).
    pub params: BTreeMap<String, Param>,
    /// The model file's text (empty for a bare latency), kept with results so that they say
    /// exactly what they ran on.
    pub text: String,
}

impl ModelSpec {
    /// A fixed latency for everything (what `--latency 100us` and `devices = ["100us"]` mean).
    pub fn fixed(latency_ns: u64) -> ModelSpec {
        ModelSpec {
            name: fsage_units::format_latency(latency_ns),
            description: format!("fixed latency {}", fsage_units::format_latency(latency_ns)),
            kind: ModelKind::Fixed(FixedParams::uniform(latency_ns)),
            params: BTreeMap::new(),
            text: String::new(),
        }
    }

    /// A fixed-latency device of these parameters (a slow device made with `--latency`,
    /// `--read-latency`, `--bandwidth`, `--queue-depth` rather than a model): named by its
    /// latencies as [`ModelSpec::fixed`] names one latency.
    pub fn fixed_with(p: FixedParams) -> ModelSpec {
        if p == FixedParams::uniform(p.read_ns) {
            return ModelSpec::fixed(p.read_ns);
        }
        let f = fsage_units::format_latency;
        let mut description = format!(
            "fixed latency: read {}, write {}, flush {}",
            f(p.read_ns),
            f(p.write_ns),
            f(p.flush_ns)
        );
        if let Some(bw) = p.bandwidth {
            description += &format!(", {}", fsage_units::format_bandwidth(bw as f64));
        }
        if let Some(q) = p.queue_depth {
            description += &format!(", queue depth {q}");
        }
        ModelSpec {
            name: format!(
                "fixed r{}/w{}/f{}",
                f(p.read_ns),
                f(p.write_ns),
                f(p.flush_ns)
            ),
            description,
            kind: ModelKind::Fixed(p),
            params: BTreeMap::new(),
            text: String::new(),
        }
    }

    /// Reads a model file's text; `origin` names it in errors (a path or `built-in NAME`).
    pub fn parse(text: &str, origin: &str) -> Result<ModelSpec> {
        let f: File = toml::from_str(text).map_err(|e| {
            let at = e
                .span()
                .map(|s| format!(":{}", line_of(text, s.start)))
                .unwrap_or_default();
            Error::input(format!("{origin}{at}: {}", e.message()))
        })?;
        let mut r = Reader {
            text,
            origin,
            params: &f.params,
            used: Vec::new(),
        };
        let Some(entry) = kind_named(&f.kind) else {
            let known: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
            return Err(Error::input(format!(
                "{origin}: kind `{}` is not a model kind (known: {})",
                f.kind,
                known.join(", ")
            )));
        };
        let kind = (entry.read)(&mut r)?;
        r.no_unknown()?;
        Ok(ModelSpec {
            name: f.name,
            description: f.description,
            kind,
            params: f
                .params
                .into_iter()
                .map(|(k, v)| (k, v.into_inner()))
                .collect(),
            text: text.to_string(),
        })
    }

    /// This model scaled down to a drive of `size` bytes (`MODEL@SIZE`, or `MODEL@SIZE/FULL` for a
    /// model without a capacity): an SSD whose FTL has pools in proportion to the capacity, each
    /// a full-size die, so that its spare after collection's reserve and its write amplification
    /// are the full-size drive's, while every die still serves requests (see
    /// [`SsdParams::pools`]). `full` is the full-size capacity when the model gives none.
    pub fn scaled(&self, size: u64, full: Option<u64>) -> Result<ModelSpec> {
        self.kind.scaled(self, size, full).unwrap_or_else(|| {
            Err(Error::input(format!(
                "model {}: only SSD models scale (a hard disk's smaller device is the outer part \
                 of its platters, as a partition is; a fixed latency has no size)",
                self.name
            )))
        })
    }

    /// Whether a device of this model has a state of its own that outlives it (an SSD's FTL,
    /// saved as `IMAGE.ftl`): what ages with a file system. Only that: other questions about
    /// the kind are [`ModelSpec::capabilities`].
    pub fn keeps_state(&self) -> bool {
        self.capabilities().drive_state
    }

    /// What the model's kind can do (its registry row's, [`crate::kinds`]).
    pub fn capabilities(&self) -> Capabilities {
        self.kind.capabilities()
    }

    /// Builds the model for a device of `device_size` bytes.
    pub fn build(&self, device_size: u64) -> Result<Box<dyn DeviceModel>> {
        self.kind.build(self, device_size)
    }
}

/// Reads typed parameters out of a model file, naming file, line and key in errors.
pub struct Reader<'a> {
    text: &'a str,
    origin: &'a str,
    params: &'a BTreeMap<String, toml::Spanned<Param>>,
    used: Vec<&'static str>,
}

impl Reader<'_> {
    fn at(&self, key: &str) -> String {
        match self.params.get(key) {
            Some(p) => format!("{}:{}", self.origin, line_of(self.text, p.span().start)),
            None => self.origin.to_string(),
        }
    }

    fn get(&mut self, key: &'static str) -> Option<&toml::Value> {
        self.used.push(key);
        self.params.get(key).map(|p| &p.get_ref().value)
    }

    /// Whether the file gives `key` (without reading it).
    pub(crate) fn has(&self, key: &str) -> bool {
        self.params.contains_key(key)
    }

    pub(crate) fn missing(&self, key: &str) -> Error {
        Error::input(format!(
            "{}: [params] lacks `{key}` (give {key} = {{ value = ..., source = \"...\" }})",
            self.origin
        ))
    }

    pub(crate) fn bad(&self, key: &str, why: impl std::fmt::Display) -> Error {
        Error::input(format!("{}: `{key}`: {why}", self.at(key)))
    }

    /// A quantity with a unit, read by `parse`.
    pub(crate) fn opt_quantity<T>(
        &mut self,
        key: &'static str,
        parse: fn(&str) -> std::result::Result<T, fsage_units::UnitError>,
    ) -> Result<Option<T>> {
        let Some(v) = self.get(key).cloned() else {
            return Ok(None);
        };
        match v {
            toml::Value::String(s) => parse(&s).map(Some).map_err(|e| self.bad(key, e)),
            toml::Value::Integer(0) => parse("0").map(Some).map_err(|e| self.bad(key, e)),
            other => Err(self.bad(
                key,
                format!("{other} has no unit: write it as a string with its unit, e.g. \"8.5ms\""),
            )),
        }
    }

    pub(crate) fn opt_latency(&mut self, key: &'static str) -> Result<Option<u64>> {
        self.opt_quantity(key, fsage_units::parse_latency)
    }

    pub(crate) fn latency(&mut self, key: &'static str) -> Result<u64> {
        self.opt_latency(key)?.ok_or_else(|| self.missing(key))
    }

    pub(crate) fn opt_bandwidth(&mut self, key: &'static str) -> Result<Option<u64>> {
        self.opt_quantity(key, fsage_units::parse_bandwidth)
    }

    pub(crate) fn opt_size(&mut self, key: &'static str) -> Result<Option<u64>> {
        self.opt_quantity(key, fsage_units::parse_size)
    }

    /// A plain number (a count, revolutions per minute): no unit.
    pub(crate) fn opt_number(&mut self, key: &'static str) -> Result<Option<f64>> {
        match self.get(key).cloned() {
            None => Ok(None),
            Some(toml::Value::Integer(n)) if n >= 0 => Ok(Some(n as f64)),
            Some(toml::Value::Float(x)) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
            Some(other) => Err(self.bad(key, format!("{other}: expected a number of at least 0"))),
        }
    }

    pub(crate) fn opt_count(&mut self, key: &'static str) -> Result<Option<u64>> {
        match self.opt_number(key)? {
            Some(x) if x.fract() != 0.0 || x < 1.0 => {
                Err(self.bad(key, format!("{x}: expected a whole number of at least 1")))
            }
            x => Ok(x.map(|x| x as u64)),
        }
    }

    /// Refuses parameters the kind does not read, and sources left empty.
    pub(crate) fn no_unknown(&self) -> Result<()> {
        for (k, p) in self.params {
            if !self.used.contains(&k.as_str()) {
                return Err(self.bad(
                    k,
                    format!(
                        "not a parameter of this kind (known: {})",
                        self.used.join(", ")
                    ),
                ));
            }
            if p.get_ref().source.trim().is_empty() {
                return Err(self.bad(k, "its source is empty: say where the number comes from"));
            }
        }
        Ok(())
    }
}

fn line_of(text: &str, byte: usize) -> usize {
    text[..byte.min(text.len())].matches('\n').count() + 1
}

/// The built-in models: (name, file text).
const BUILTINS: &[(&str, &str)] = &[
    ("hdd-7200", include_str!("../models/hdd-7200.toml")),
    ("ssd-sata", include_str!("../models/ssd-sata.toml")),
    ("ssd-nvme", include_str!("../models/ssd-nvme.toml")),
    (
        "crucial-m4-64g",
        include_str!("../models/crucial-m4-64g.toml"),
    ),
    ("wd5000ys", include_str!("../models/wd5000ys.toml")),
    ("st500dm002", include_str!("../models/st500dm002.toml")),
    (
        "adata-s510-120g",
        include_str!("../models/adata-s510-120g.toml"),
    ),
    (
        "sandisk-extreme-pro-240g",
        include_str!("../models/sandisk-extreme-pro-240g.toml"),
    ),
];

/// The built-in models, read.
pub fn builtins() -> Vec<ModelSpec> {
    BUILTINS
        .iter()
        .map(|(name, text)| {
            ModelSpec::parse(text, &format!("built-in model {name}"))
                .expect("built-in models parse (tested)")
        })
        .collect()
}

/// What a user typed where a device goes: a latency (a fixed-latency device), a built-in
/// model's name, or a model file's path; any of the last two followed by `@SIZE` (or
/// `@SIZE/FULL` when the model gives no capacity): that model scaled down ([`ModelSpec::scaled`]).
pub fn resolve(text: &str) -> Result<ModelSpec> {
    let t = text.trim();
    if let Ok(ns) = fsage_units::parse_latency(t) {
        return Ok(ModelSpec::fixed(ns));
    }
    if let Some((name, body)) = BUILTINS.iter().find(|(n, _)| *n == t) {
        return ModelSpec::parse(body, &format!("built-in model {name}"));
    }
    let p = Path::new(t);
    if !p.exists() {
        if let Some((model, scale)) = t.rsplit_once('@') {
            let (size, full) = match scale.split_once('/') {
                Some((s, f)) => (s, Some(f)),
                None => (scale, None),
            };
            let bad = |what: &str, e: fsage_units::UnitError| {
                Error::input(format!("`{t}`: {what} after `@`: {e}"))
            };
            let size = fsage_units::parse_size(size).map_err(|e| bad("the scaled size", e))?;
            let full = full
                .map(fsage_units::parse_size)
                .transpose()
                .map_err(|e| bad("the full size", e))?;
            let mut spec = resolve(model)?.scaled(size, full)?;
            // As typed, so that the name resolves again to the same drive.
            spec.name = t.to_string();
            return Ok(spec);
        }
    }
    if t.ends_with(".toml") || p.exists() {
        let body = std::fs::read_to_string(p)
            .map_err(|e| Error::io(p, "cannot read the model file", e))?;
        return ModelSpec::parse(&body, &p.display().to_string());
    }
    // A number first (`61s`, `-5us`, `5`): meant as a latency, so say what is wrong with it.
    if t.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '-' | '+' | '.')) {
        if let Err(e) = fsage_units::parse_latency(t) {
            return Err(Error::input(e.to_string()));
        }
    }
    let names: Vec<&str> = BUILTINS.iter().map(|(n, _)| *n).collect();
    Err(Error::input(format!(
        "`{t}` is neither a latency (e.g. 100us), a built-in model ({}) nor a model file",
        if names.is_empty() {
            "none yet".to_string()
        } else {
            names.join(", ")
        }
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXED: &str = r#"
name = "f"
kind = "fixed"
description = "test"
[params]
read = { value = "100us", source = "a" }
write = { value = "0.2ms", source = "b" }
queue_depth = { value = 4, source = "c" }
"#;

    #[test]
    fn fixed_files_read_with_units_and_sources() {
        let m = ModelSpec::parse(FIXED, "f.toml").unwrap();
        assert_eq!(
            m.kind,
            ModelKind::Fixed(FixedParams {
                read_ns: 100_000,
                write_ns: 200_000,
                flush_ns: 200_000,
                bandwidth: None,
                queue_depth: Some(4),
            })
        );
        assert_eq!(m.params["read"].source, "a");
        let mut d = m.build(1 << 30).unwrap();
        let done = d.submit(
            0,
            crate::Rq {
                id: 0,
                kind: crate::RqKind::Read,
                offset: 0,
                len: 4096,
            },
        );
        assert_eq!(done, Some(100_000));
    }

    #[test]
    fn bad_files_name_the_line_and_key() {
        let e = |t: &str| ModelSpec::parse(t, "m.toml").unwrap_err().to_string();
        let no_unit = FIXED.replace("\"100us\"", "100");
        assert!(e(&no_unit).contains("m.toml:6: `read`"), "{}", e(&no_unit));
        assert!(e(&no_unit).contains("no unit"), "{}", e(&no_unit));
        let unknown = FIXED.replace("queue_depth", "queue_deep");
        assert!(
            e(&unknown).contains("m.toml:8: `queue_deep`: not a parameter"),
            "{}",
            e(&unknown)
        );
        let unsourced = FIXED.replace("source = \"a\"", "source = \" \"");
        assert!(
            e(&unsourced).contains("source is empty"),
            "{}",
            e(&unsourced)
        );
        let missing = FIXED.replace("write = ", "writ = ");
        assert!(e(&missing).contains("lacks `write`"), "{}", e(&missing));
        assert!(e("name = 1").contains("m.toml:1"), "{}", e("name = 1"));
        let kind = FIXED.replace("kind = \"fixed\"", "kind = \"tape\"");
        assert!(e(&kind).contains("kind `tape`"), "{}", e(&kind));
    }

    #[test]
    fn resolve_reads_latencies_names_and_files() {
        assert_eq!(resolve("100us").unwrap(), ModelSpec::fixed(100_000));
        assert_eq!(resolve("0").unwrap(), ModelSpec::fixed(0));
        let e = resolve("warp-drive").unwrap_err().to_string();
        assert!(e.contains("neither a latency"), "{e}");
        for m in builtins() {
            assert_eq!(resolve(&m.name).unwrap(), m);
            assert!(m.params.values().all(|p| !p.source.is_empty()));
        }
    }
}

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

use crate::hdd::{Hdd, HddParams};
use crate::ssd::{Ssd, SsdParams};
use crate::{DeviceModel, Error, FixedLatency, Result};
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

/// The parameters of a fixed-latency device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FixedParams {
    pub read_ns: u64,
    pub write_ns: u64,
    /// A flush; when the file gives none, the write latency.
    pub flush_ns: u64,
    pub bandwidth: Option<u64>,
    pub queue_depth: Option<u32>,
}

/// What kind of device a model is, with its parameters checked and in base units.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ModelKind {
    Fixed(FixedParams),
    Hdd(HddParams),
    Ssd(SsdParams),
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
            kind: ModelKind::Fixed(FixedParams {
                read_ns: latency_ns,
                write_ns: latency_ns,
                flush_ns: latency_ns,
                bandwidth: None,
                queue_depth: None,
            }),
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
        let kind = match f.kind.as_str() {
            "fixed" => {
                let write_ns = r.latency("write")?;
                ModelKind::Fixed(FixedParams {
                    read_ns: r.latency("read")?,
                    write_ns,
                    flush_ns: r.opt_latency("flush")?.unwrap_or(write_ns),
                    bandwidth: r.opt_bandwidth("bandwidth")?,
                    queue_depth: r.opt_count("queue_depth")?.map(|n| n as u32),
                })
            }
            "hdd" => ModelKind::Hdd(hdd_params(&mut r)?),
            "ssd" => ModelKind::Ssd(ssd_params(&mut r)?),
            other => {
                return Err(Error::input(format!(
                    "{origin}: kind `{other}` is not a model kind (known: fixed, hdd, ssd)"
                )))
            }
        };
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
        let ModelKind::Ssd(p) = &self.kind else {
            return Err(Error::input(format!(
                "model {}: only SSD models scale (a hard disk's smaller device is the outer part \
                 of its platters, as a partition is; a fixed latency has no size)",
                self.name
            )));
        };
        let Some(full) = full.or(p.capacity) else {
            return Err(Error::input(format!(
                "model {} gives no capacity, so it has no full-size drive to scale from: write \
                 {}@{}/FULL (e.g. /64GB)",
                self.name,
                self.name,
                fsage_units::format_size(size).replace(' ', "")
            )));
        };
        if size == 0 || size >= full {
            return Err(Error::input(format!(
                "model {}: a scaled drive must be smaller than the full-size drive ({}), not {}",
                self.name,
                fsage_units::format_size(full),
                fsage_units::format_size(size)
            )));
        }
        let q = SsdParams {
            capacity: Some(size),
            full_capacity: Some(full),
            ..p.clone()
        };
        q.geometry(size)
            .and_then(|g| g.check())
            .map_err(|e| Error::input(format!("model {} at {size} bytes: {e}", self.name)))?;
        let pools = q.pools(size);
        let mut params = self.params.clone();
        params.insert(
            "scale".to_string(),
            Param {
                value: toml::Value::String(format!(
                    "{} of {}",
                    fsage_units::format_size(size),
                    fsage_units::format_size(full)
                )),
                source: format!(
                    "scaled with {}@SIZE: FTL pools {pools} (dies x {} / {}, rounded, at least \
                     1), each shaped as one of the {} full-size dies, so that collection's \
                     per-pool reserve is the full drive's share (drives.md section 6)",
                    self.name,
                    fsage_units::format_size(size),
                    fsage_units::format_size(full),
                    p.timing_dies()
                ),
            },
        );
        Ok(ModelSpec {
            name: format!(
                "{}@{}",
                self.name,
                fsage_units::format_size(size).replace(' ', "")
            ),
            description: format!(
                "{} (scaled to {} of {}: FTL pools {pools}, dies {})",
                self.description,
                fsage_units::format_size(size),
                fsage_units::format_size(full),
                p.timing_dies()
            ),
            kind: ModelKind::Ssd(q),
            params,
            text: self.text.clone(),
        })
    }

    /// Whether a device of this model has a state of its own that outlives it (an SSD's FTL,
    /// saved as `IMAGE.ftl`): what ages with a file system.
    pub fn keeps_state(&self) -> bool {
        matches!(self.kind, ModelKind::Ssd(_))
    }

    /// Builds the model for a device of `device_size` bytes.
    pub fn build(&self, device_size: u64) -> Result<Box<dyn DeviceModel>> {
        Ok(match &self.kind {
            ModelKind::Hdd(p) => Box::new(
                Hdd::new(p, device_size)
                    .map_err(|e| Error::input(format!("model {}: {e}", self.name)))?,
            ),
            ModelKind::Ssd(p) => Box::new(
                Ssd::new(p, device_size)
                    .map_err(|e| Error::input(format!("model {}: {e}", self.name)))?,
            ),
            ModelKind::Fixed(p) => Box::new(FixedLatency::new(
                p.read_ns,
                p.write_ns,
                p.flush_ns,
                p.bandwidth,
                p.queue_depth,
            )),
        })
    }
}

/// Reads typed parameters out of a model file, naming file, line and key in errors.
pub(crate) struct Reader<'a> {
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

    fn missing(&self, key: &str) -> Error {
        Error::input(format!(
            "{}: [params] lacks `{key}` (give {key} = {{ value = ..., source = \"...\" }})",
            self.origin
        ))
    }

    fn bad(&self, key: &str, why: impl std::fmt::Display) -> Error {
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

/// A hard disk's parameters (see [`crate::hdd`] for what each does). Write seeks default to
/// the read seeks; the rest are required unless said.
fn hdd_params(r: &mut Reader) -> Result<HddParams> {
    let req_lat = |r: &mut Reader, k: &'static str| r.latency(k);
    let seek_track_ns = req_lat(r, "seek_track")?;
    let seek_avg_ns = req_lat(r, "seek_avg")?;
    let seek_full_ns = req_lat(r, "seek_full")?;
    let rate = |r: &mut Reader, k: &'static str| r.opt_bandwidth(k)?.ok_or_else(|| r.missing(k));
    let count = |r: &mut Reader, k: &'static str| r.opt_count(k)?.ok_or_else(|| r.missing(k));
    let p = HddParams {
        rpm: r.opt_number("rpm")?.ok_or_else(|| r.missing("rpm"))?,
        capacity: r.opt_size("capacity")?,
        offset: r.opt_size("offset")?.unwrap_or(0),
        heads: count(r, "heads")?,
        zones: count(r, "zones")?,
        rate_outer: rate(r, "rate_outer")?,
        rate_inner: rate(r, "rate_inner")?,
        seek_track_ns,
        seek_avg_ns,
        seek_full_ns,
        write_seek_track_ns: r.opt_latency("write_seek_track")?.unwrap_or(seek_track_ns),
        write_seek_avg_ns: r.opt_latency("write_seek_avg")?.unwrap_or(seek_avg_ns),
        write_seek_full_ns: r.opt_latency("write_seek_full")?.unwrap_or(seek_full_ns),
        head_switch_ns: req_lat(r, "head_switch")?,
        overhead_ns: req_lat(r, "overhead")?,
        interface_rate: rate(r, "interface_rate")?,
        read_segments: count(r, "read_segments")?,
        read_ahead: r
            .opt_size("read_ahead")?
            .ok_or_else(|| r.missing("read_ahead"))?,
        write_cache: r
            .opt_size("write_cache")?
            .ok_or_else(|| r.missing("write_cache"))?,
        queue_depth: count(r, "queue_depth")?,
        max_wait_ns: r.opt_latency("max_wait")?.unwrap_or(1_000_000_000),
    };
    if !(p.rpm >= 1000.0 && p.rpm <= 20000.0) {
        return Err(r.bad("rpm", format!("{}: expected 1000 to 20000", p.rpm)));
    }
    if p.offset % 512 != 0 {
        return Err(r.bad("offset", "must be a multiple of 512 bytes"));
    }
    // The seek figures must admit a curve: build one on a nominal disk to check them early.
    for (what, t, a, f) in [
        ("seek", p.seek_track_ns, p.seek_avg_ns, p.seek_full_ns),
        (
            "write_seek",
            p.write_seek_track_ns,
            p.write_seek_avg_ns,
            p.write_seek_full_ns,
        ),
    ] {
        crate::hdd::seek::SeekCurve::fit(t as f64, a as f64, f as f64, 100_000).map_err(|e| {
            r.bad(
                if what == "seek" {
                    "seek_avg"
                } else {
                    "write_seek_avg"
                },
                e,
            )
        })?;
    }
    Ok(p)
}

/// A flash SSD's parameters (see [`crate::ssd`] for what each does); all required but the
/// capacity (default: the device's size) and `gc_free_blocks` (default 2).
fn ssd_params(r: &mut Reader) -> Result<SsdParams> {
    let lat = |r: &mut Reader, k: &'static str| r.latency(k);
    let rate = |r: &mut Reader, k: &'static str| r.opt_bandwidth(k)?.ok_or_else(|| r.missing(k));
    let count = |r: &mut Reader, k: &'static str| r.opt_count(k)?.ok_or_else(|| r.missing(k));
    let size = |r: &mut Reader, k: &'static str| r.opt_size(k)?.ok_or_else(|| r.missing(k));
    let p = SsdParams {
        capacity: r.opt_size("capacity")?,
        over_provisioning: r
            .opt_number("over_provisioning")?
            .ok_or_else(|| r.missing("over_provisioning"))?,
        page_size: size(r, "page_size")?,
        pages_per_block: count(r, "pages_per_block")?,
        channels: count(r, "channels")?,
        dies_per_channel: count(r, "dies_per_channel")?,
        read_ns: lat(r, "read")?,
        program_ns: lat(r, "program")?,
        erase_ns: lat(r, "erase")?,
        channel_rate: rate(r, "channel_rate")?,
        interface_rate: rate(r, "interface_rate")?,
        overhead_ns: lat(r, "overhead")?,
        write_buffer: size(r, "write_buffer")?,
        gc_free_blocks: r.opt_count("gc_free_blocks")?.unwrap_or(2),
        full_capacity: None,
        compression: r.opt_number("compression")?,
        compression_unit: r.opt_size("compression_unit")?.unwrap_or(0),
        unseen_data_ratio: r.opt_number("unseen_data_ratio")?.unwrap_or(1.0),
    };
    if let Some(f0) = p.compression {
        if !(f0 > 0.0 && f0 <= 1.0) {
            return Err(r.bad(
                "compression",
                format!("{f0}: expected the share of a flash page a wholly compressible page takes, above 0 and at most 1 (0.14)"),
            ));
        }
        if p.compression_unit == 0
            || p.page_size % p.compression_unit != 0
            || p.page_size / p.compression_unit < 2
            || p.page_size / p.compression_unit > 256
        {
            return Err(r.bad(
                "compression_unit",
                "a compressing drive needs a packing unit that divides the page into 2 to 256 parts (e.g. 128B)",
            ));
        }
    } else if r.params.contains_key("compression_unit") {
        return Err(r.bad(
            "compression_unit",
            "only a drive with `compression` packs pages",
        ));
    }
    if !(0.0..=1.0).contains(&p.unseen_data_ratio) {
        return Err(r.bad(
            "unseen_data_ratio",
            format!(
                "{}: expected 0 (zeros) to 1 (incompressible)",
                p.unseen_data_ratio
            ),
        ));
    }
    if !(p.over_provisioning > 0.0 && p.over_provisioning < 0.9) {
        return Err(r.bad(
            "over_provisioning",
            format!(
                "{}: expected the share of raw flash kept from the host, above 0 and below 0.9 \
                 (0.07 for 7%)",
                p.over_provisioning
            ),
        ));
    }
    if p.page_size < 512 || p.page_size % 512 != 0 {
        return Err(r.bad("page_size", "must be a multiple of 512 bytes"));
    }
    if p.gc_free_blocks < 2 {
        return Err(r.bad("gc_free_blocks", "must be at least 2"));
    }
    // The shape must hold even the smallest drive (a page): when it does not (a zero, or so
    // many pages that the FTL cannot number them or hold them in memory), name the key to
    // blame: one die of it failing too blames the block (or the free blocks kept), else the dies.
    let fits = |q: &SsdParams, bytes: u64| q.geometry(bytes).and_then(|g| g.check());
    if let Err(e) = fits(&p, p.page_size) {
        let one_die = SsdParams {
            channels: 1,
            dies_per_channel: 1,
            ..p.clone()
        };
        let fewest_free = SsdParams {
            gc_free_blocks: 2,
            ..one_die.clone()
        };
        let key = if fits(&fewest_free, p.page_size).is_err() {
            "pages_per_block"
        } else if fits(&one_die, p.page_size).is_err() {
            "gc_free_blocks"
        } else if p.channels == 0 || (p.dies_per_channel != 0 && p.channels > p.dies_per_channel) {
            "channels"
        } else {
            "dies_per_channel"
        };
        return Err(r.bad(key, e));
    }
    // The shape must hold a nominal drive (the capacity when given): check it early, naming the
    // file and what does not fit.
    p.geometry(p.capacity.unwrap_or(1 << 30))
        .and_then(|g| g.check())
        .map_err(|e| {
            r.bad(
                if p.capacity.is_some() {
                    "capacity"
                } else {
                    "over_provisioning"
                },
                e,
            )
        })?;
    Ok(p)
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

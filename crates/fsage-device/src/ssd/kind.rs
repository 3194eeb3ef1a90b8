//! The flash SSD's row in the model registry ([`crate::kinds`]): its parameters as a model file
//! gives them, how it is built, and how it scales down (`MODEL@SIZE`).

use super::{Ssd, SsdCounters, SsdParams};
use crate::kinds::{Capabilities, Kind};
use crate::models::{ModelSpec, Param, Reader};
use crate::{DeviceModel, Error, Result};

/// `kind = "ssd"`.
pub struct SsdKind;

impl Kind for SsdKind {
    type Params = SsdParams;
    type Counters = SsdCounters;
    const NAME: &'static str = "ssd";
    const SUMMARY: &'static str =
        "a flash SSD: dies, channels, a write buffer, an FTL with garbage collection";
    const CAPABILITIES: Capabilities = Capabilities {
        drive_state: true,
        history: true,
        answers_at_arrival: false,
        retimable: false,
    };

    fn read(r: &mut Reader) -> Result<SsdParams> {
        read(r)
    }

    fn build(spec: &ModelSpec, p: &SsdParams, device_size: u64) -> Result<Box<dyn DeviceModel>> {
        Ok(Box::new(Ssd::new(p, device_size).map_err(|e| {
            Error::input(format!("model {}: {e}", spec.name))
        })?))
    }

    fn scaled(
        spec: &ModelSpec,
        p: &SsdParams,
        size: u64,
        full: Option<u64>,
    ) -> Option<Result<ModelSpec>> {
        Some(scaled(spec, p, size, full))
    }

    fn capacity(p: &SsdParams) -> Option<u64> {
        p.capacity
    }
}

/// See [`ModelSpec::scaled`].
fn scaled(spec: &ModelSpec, p: &SsdParams, size: u64, full: Option<u64>) -> Result<ModelSpec> {
    let Some(full) = full.or(p.capacity) else {
        return Err(Error::input(format!(
            "model {} gives no capacity, so it has no full-size drive to scale from: write \
             {}@{}/FULL (e.g. /64GB)",
            spec.name,
            spec.name,
            fsage_units::format_size(size).replace(' ', "")
        )));
    };
    if size == 0 || size >= full {
        return Err(Error::input(format!(
            "model {}: a scaled drive must be smaller than the full-size drive ({}), not {}",
            spec.name,
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
        .map_err(|e| Error::input(format!("model {} at {size} bytes: {e}", spec.name)))?;
    let pools = q.pools(size);
    let mut params = spec.params.clone();
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
                spec.name,
                fsage_units::format_size(size),
                fsage_units::format_size(full),
                p.timing_dies()
            ),
        },
    );
    Ok(ModelSpec {
        name: format!(
            "{}@{}",
            spec.name,
            fsage_units::format_size(size).replace(' ', "")
        ),
        description: format!(
            "{} (scaled to {} of {}: FTL pools {pools}, dies {})",
            spec.description,
            fsage_units::format_size(size),
            fsage_units::format_size(full),
            p.timing_dies()
        ),
        kind: crate::ModelKind::Ssd(q),
        params,
        text: spec.text.clone(),
    })
}

/// A flash SSD's parameters (see [`crate::ssd`] for what each does); all required but the
/// capacity (default: the device's size) and `gc_free_blocks` (default 2).
fn read(r: &mut Reader) -> Result<SsdParams> {
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
    } else if r.has("compression_unit") {
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

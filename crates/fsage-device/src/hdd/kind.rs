//! The hard disk's row in the model registry ([`crate::kinds`]): its parameters as a model file
//! gives them, and how it is built.

use super::{Hdd, HddCounters, HddParams};
use crate::kinds::{Capabilities, Kind};
use crate::models::{ModelSpec, Reader};
use crate::{DeviceModel, Error, Result};

/// `kind = "hdd"`.
pub struct HddKind;

impl Kind for HddKind {
    type Params = HddParams;
    type Counters = HddCounters;
    const NAME: &'static str = "hdd";
    const SUMMARY: &'static str = "a hard disk: seeks, rotation, zones, caches, a command queue";
    const CAPABILITIES: Capabilities = Capabilities {
        drive_state: false,
        history: true,
        answers_at_arrival: false,
        retimable: false,
    };

    fn read(r: &mut Reader) -> Result<HddParams> {
        read(r)
    }

    fn build(spec: &ModelSpec, p: &HddParams, device_size: u64) -> Result<Box<dyn DeviceModel>> {
        Ok(Box::new(Hdd::new(p, device_size).map_err(|e| {
            Error::input(format!("model {}: {e}", spec.name))
        })?))
    }

    fn capacity(p: &HddParams) -> Option<u64> {
        p.capacity
    }
}

/// A hard disk's parameters (see [`crate::hdd`] for what each does). Write seeks default to
/// the read seeks; the rest are required unless said.
fn read(r: &mut Reader) -> Result<HddParams> {
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

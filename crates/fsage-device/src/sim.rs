//! Synthetic workloads on a drive model in simulated time: what a model does under a pattern a
//! paper or a review measured, so that it can be checked against the figure (BENCHMARKS.md).
//!
//! - [`write_amplification`]: an SSD written in order over a span, then overwritten at random
//!   (4 KiB, uniform over the span) at memory speed until steady, then measured under the same
//!   random writes at a queue depth in simulated time: write amplification, IOPS, die time. What
//!   shows whether a drive scaled down (`MODEL@SIZE`) keeps its full-size behaviour.
//! - [`read_curve`]: random reads of each size at queue depth 1, the mean time per read (the
//!   effective-bandwidth-against-read-size curve Conway et al. measured on their drives).

use crate::models::{ModelKind, ModelSpec};
use crate::ssd::{Ssd, SsdParams};
use crate::{DeviceModel, Error, Ns, Result, Rq, RqKind};
use serde::{Deserialize, Serialize};
use std::collections::BinaryHeap;

/// What [`write_amplification`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WaOptions {
    /// Bytes from the start of the device that the pattern writes (the file system's size on a
    /// larger drive); None: the whole device.
    pub span: Option<u64>,
    /// Random overwrites before measuring, in spans (at memory speed).
    pub warm: f64,
    /// Random overwrites measured, in spans (in simulated time).
    pub measured: f64,
    /// Requests kept in flight while measuring.
    pub queue_depth: usize,
    pub seed: u64,
}

impl Default for WaOptions {
    fn default() -> Self {
        WaOptions {
            span: None,
            warm: 2.0,
            measured: 1.0,
            queue_depth: 32,
            seed: 1,
        }
    }
}

/// What [`write_amplification`] measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WaReport {
    pub model: String,
    pub describe: String,
    pub device_bytes: u64,
    pub span_bytes: u64,
    /// The FTL's pools and the dies serving requests (fewer pools on a scaled drive).
    pub pools: u64,
    pub dies: u64,
    pub blocks_per_pool: u64,
    /// Greedy collection's analytic write amplification for this span on this flash (Agarwal
    /// and Marrow, counting the never-written rest of the drive as spare).
    pub analytic: f64,
    pub options: WaOptions,
    /// Host pages written while measuring, and flash programs they cost.
    pub host_pages: u64,
    pub programs: u64,
    pub write_amplification: f64,
    pub erases: u64,
    /// Simulated time the measured writes took, and what it makes per second.
    pub simulated_ns: Ns,
    pub iops: f64,
    pub mean_latency_ns: f64,
}

/// A reproducible uniform stream (xorshift64*).
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}

fn ssd_of(spec: &ModelSpec, device_bytes: u64) -> Result<(Ssd, &SsdParams)> {
    match &spec.kind {
        ModelKind::Ssd(p) => Ssd::new(p, device_bytes)
            .map(|ssd| (ssd, p))
            .map_err(|e| Error::input(format!("model {}: {e}", spec.name))),
        _ => Err(Error::input(format!(
            "model {}: write amplification needs an SSD model",
            spec.name
        ))),
    }
}

/// Drives `queue_depth` requests in flight through `dev`, `n` of them made by `next`, from
/// time `t0`: returns when the last completes and the sum of their response times. A request a
/// model answers later (a hard disk's) is waited for before the next is made, so such a model
/// runs at depth 1 whatever is asked.
fn closed_loop(
    dev: &mut dyn DeviceModel,
    t0: Ns,
    queue_depth: usize,
    n: u64,
    mut next: impl FnMut(u64) -> Rq,
) -> (Ns, u128) {
    // Completion times of the requests in flight (a min-heap by completion).
    let mut flight: BinaryHeap<std::cmp::Reverse<Ns>> = BinaryHeap::new();
    let mut now = t0;
    let mut total: u128 = 0;
    let mut end = t0;
    let mut done = Vec::new();
    for i in 0..n {
        if flight.len() >= queue_depth.max(1) {
            let std::cmp::Reverse(t) = flight.pop().expect("a full queue");
            now = now.max(t);
        }
        dev.advance(now, &mut done);
        let rq = next(i);
        let t = match dev.submit(now, rq) {
            Some(t) => t,
            None => {
                // A model answering later (a hard disk): run it until this request is done.
                let mut t = now;
                'wait: loop {
                    let Some(ev) = dev.next_event() else { break t };
                    t = ev.max(t);
                    done.clear();
                    dev.advance(t, &mut done);
                    for &(id, at) in &done {
                        if id == rq.id {
                            break 'wait at;
                        }
                    }
                }
            }
        };
        total += (t - now) as u128;
        end = end.max(t);
        flight.push(std::cmp::Reverse(t));
    }
    (end, total)
}

/// An SSD model under uniform random 4 KiB overwrites of a span (see the module documentation).
pub fn write_amplification(
    spec: &ModelSpec,
    device_bytes: u64,
    opts: WaOptions,
) -> Result<WaReport> {
    let (mut ssd, p) = ssd_of(spec, device_bytes)?;
    let span = opts.span.unwrap_or(device_bytes);
    if span == 0 || span > device_bytes {
        return Err(Error::input(format!(
            "the span written ({span} bytes) must be above 0 and at most the device's \
             {device_bytes}"
        )));
    }
    if !(opts.warm >= 0.0 && opts.measured > 0.0 && opts.warm <= 100.0 && opts.measured <= 100.0) {
        return Err(Error::input(
            "warm-up and measured overwrites must be from 0 to 100 spans (measured above 0)",
        ));
    }
    let ps = p.page_size;
    let pages = span / ps;
    if pages == 0 {
        return Err(Error::input("the span is smaller than a page"));
    }
    let write = |id: u64, page: u64| Rq {
        id,
        kind: RqKind::Write,
        offset: page * ps,
        len: ps,
    };
    for l in 0..pages {
        ssd.feed(&write(0, l));
    }
    let mut rng = Rng(opts.seed | 1);
    for _ in 0..(opts.warm * pages as f64) as u64 {
        ssd.feed(&write(0, rng.below(pages)));
    }
    let before = ssd.counters();
    let n = ((opts.measured * pages as f64) as u64).max(1);
    let (end, total) = closed_loop(&mut ssd, 0, opts.queue_depth, n, |i| {
        write(i, rng.below(pages))
    });
    let after = ssd.counters();
    let host = after.host_pages - before.host_pages;
    let programs = after.programs - before.programs;
    let g = ssd.ftl().geometry();
    // The rest of the drive, never written, is spare to greedy collection as the rest is.
    let analytic = crate::ssd::greedy_write_amplification(g.physical_pages(), pages);
    Ok(WaReport {
        model: spec.name.clone(),
        describe: ssd.describe(),
        device_bytes,
        span_bytes: span,
        pools: g.dies as u64,
        dies: p.timing_dies(),
        blocks_per_pool: g.blocks_per_die as u64,
        analytic,
        options: opts,
        host_pages: host,
        programs,
        write_amplification: programs as f64 / host.max(1) as f64,
        erases: after.erases - before.erases,
        simulated_ns: end,
        iops: n as f64 / (end.max(1) as f64 / 1e9),
        mean_latency_ns: total as f64 / n as f64,
    })
}

/// One point of a read curve: reads of `bytes` at queue depth 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadPoint {
    pub bytes: u64,
    pub reads: u64,
    pub mean_ns: f64,
    /// Bytes per second at this size (bytes / mean time).
    pub rate: f64,
}

/// Random reads of each size in `sizes`, aligned to the size, uniform over the device, one at a
/// time (queue depth 1), `reads` of each, on a drive written in order (an SSD: its whole
/// device, so that every read costs flash; a hard disk has no state): the mean time per read.
pub fn read_curve(
    spec: &ModelSpec,
    device_bytes: u64,
    sizes: &[u64],
    reads: u64,
    seed: u64,
) -> Result<Vec<ReadPoint>> {
    let mut dev = spec.build(device_bytes)?;
    if spec.keeps_state() {
        dev.precondition(0.0, seed)?;
    }
    let mut rng = Rng(seed | 1);
    let mut t = 0;
    let mut out = Vec::new();
    for &bytes in sizes {
        if bytes == 0 || bytes > device_bytes {
            return Err(Error::input(format!(
                "read size {bytes}: must be above 0 and at most the device's {device_bytes} bytes"
            )));
        }
        let slots = device_bytes / bytes;
        let (end, total) = closed_loop(dev.as_mut(), t, 1, reads, |i| Rq {
            id: i,
            kind: RqKind::Read,
            offset: rng.below(slots) * bytes,
            len: bytes,
        });
        // A pause between sizes, so that one size's tail does not delay the next's first read.
        t = end + 1_000_000_000;
        let mean = total as f64 / reads.max(1) as f64;
        out.push(ReadPoint {
            bytes,
            reads,
            mean_ns: mean,
            rate: bytes as f64 / (mean / 1e9),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::resolve;

    const M4: u64 = 64_023_257_088;

    fn wa(spec: &ModelSpec, device: u64, span: u64) -> WaReport {
        let opts = WaOptions {
            span: Some(span),
            warm: 1.0,
            measured: 0.25,
            queue_depth: 32,
            seed: 7,
        };
        write_amplification(spec, device, opts).unwrap()
    }

    /// Issue 32's must-show: the 64 GB m4 holding a 59 GB file system and its 1 GiB scaled
    /// copy holding the same share give the same write amplification under the same random
    /// writes (within 10%), where keeping the eight dies at 1 GiB does not.
    #[test]
    fn a_scaled_m4_keeps_the_full_size_write_amplification() {
        let full = resolve("crucial-m4-64g").unwrap();
        let f = wa(&full, M4, 59_000_000_000);
        assert_eq!((f.pools, f.dies, f.blocks_per_pool), (8, 8, 4096));
        let small = resolve("crucial-m4-64g@1GiB").unwrap();
        let span = ((1u64 << 30) as f64 * 59e9 / M4 as f64) as u64;
        let s = wa(&small, 1 << 30, span);
        assert_eq!((s.pools, s.dies), (1, 8));
        let off = s.write_amplification / f.write_amplification - 1.0;
        assert!(
            off.abs() < 0.10,
            "full {:.3} scaled {:.3}",
            f.write_amplification,
            s.write_amplification
        );
        // The same 1 GiB drive with a pool per die (what a drive of the m4's shape and 1 GiB
        // capacity was before scaling): each die's reserve is a larger share, WA is higher.
        let ModelKind::Ssd(p) = &full.kind else {
            panic!("crucial-m4-64g is an SSD model")
        };
        let kept = ModelSpec {
            kind: ModelKind::Ssd(SsdParams {
                capacity: Some(1 << 30),
                ..p.clone()
            }),
            ..full.clone()
        };
        let k = wa(&kept, 1 << 30, span);
        assert_eq!(k.pools, 8);
        assert!(
            k.write_amplification > s.write_amplification * 1.05,
            "dies kept {:.3}, scaled {:.3}",
            k.write_amplification,
            s.write_amplification
        );
        // The scaled drive keeps the full drive's eight dies (its pool's pages spread over
        // them), so it writes at least as fast as the full drive, not an eighth as fast. (Not
        // equally fast: the full drive's dies collect in lockstep bursts that stall its
        // round-robin stream; the scaled pool's collection is spread over the dies.)
        assert!(s.iops > f.iops, "IOPS {} vs {}", s.iops, f.iops);
        eprintln!(
            "full WA {:.3} {:.0} IOPS; scaled WA {:.3} {:.0} IOPS; dies kept WA {:.3}",
            f.write_amplification, f.iops, s.write_amplification, s.iops, k.write_amplification
        );
    }

    #[test]
    fn scaling_needs_a_full_size_and_an_ssd() {
        let e = |t: &str| resolve(t).unwrap_err().to_string();
        assert!(
            e("ssd-sata@4GiB").contains("ssd-sata@4GiB/FULL"),
            "{}",
            e("ssd-sata@4GiB")
        );
        assert!(e("hdd-7200@1GiB").contains("only SSD models scale"));
        assert!(e("crucial-m4-64g@1TB").contains("must be smaller"));
        assert!(e("crucial-m4-64g@1Gx").contains("the scaled size"));
        let s = resolve("ssd-sata@4GiB/64GB").unwrap();
        assert_eq!(s.name, "ssd-sata@4GiB/64GB");
        let ModelKind::Ssd(p) = &s.kind else {
            panic!("ssd-sata is an SSD model")
        };
        assert_eq!(p.pools(4 << 30), 4);
        assert_eq!(p.timing_dies(), 64);
        assert!(s.params["scale"].source.contains("FTL pools 4"));
    }

    /// A model unscaled is timed as before: a pool per die, a page's die is its pool.
    #[test]
    fn an_unscaled_drive_keeps_a_pool_per_die() {
        let spec = resolve("ssd-sata").unwrap();
        let r = write_amplification(
            &spec,
            64 << 20,
            WaOptions {
                warm: 1.0,
                measured: 0.5,
                ..WaOptions::default()
            },
        )
        .unwrap();
        assert_eq!((r.pools, r.dies), (64, 64));
        assert!(r.write_amplification > 1.0);
    }
}

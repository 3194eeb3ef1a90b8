//! A fixed latency per request (dm-delay's model, as in the slippery-slope study): each request
//! completes at `arrival + latency(kind) + bytes / bandwidth`, independently of the others; with
//! a queue depth N, at most N are in service at once and the rest wait for a free slot.

use crate::kinds::{Capabilities, Kind};
use crate::models::{ModelSpec, Reader};
use crate::{
    Counter, DeviceCounters, DeviceModel, Error, KindCounters, ModelKind, ModelStats, Ns, Requests,
    Result, Rq, RqKind, Value,
};
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

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

impl FixedParams {
    /// The parameters of `spec` when it is a fixed latency (what `dev list` shows as a device's
    /// latencies, and what `dev set` starts from).
    pub fn of(spec: &ModelSpec) -> Option<&FixedParams> {
        match &spec.kind {
            ModelKind::Fixed(p) => Some(p),
            _ => None,
        }
    }

    /// One latency for everything, no bandwidth, no queue limit.
    pub fn uniform(ns: Ns) -> FixedParams {
        FixedParams {
            read_ns: ns,
            write_ns: ns,
            flush_ns: ns,
            bandwidth: None,
            queue_depth: None,
        }
    }
}

/// `kind = "fixed"`: the registry's row ([`crate::kinds`]).
pub struct FixedKind;

impl Kind for FixedKind {
    type Params = FixedParams;
    type Counters = FixedCounters;
    const NAME: &'static str = "fixed";
    const SUMMARY: &'static str = "a fixed latency per request (dm-delay's model)";
    const CAPABILITIES: Capabilities = Capabilities {
        drive_state: false,
        history: false,
        answers_at_arrival: true,
        retimable: true,
    };

    fn read(r: &mut Reader) -> Result<FixedParams> {
        let write_ns = r.latency("write")?;
        Ok(FixedParams {
            read_ns: r.latency("read")?,
            write_ns,
            flush_ns: r.opt_latency("flush")?.unwrap_or(write_ns),
            bandwidth: r.opt_bandwidth("bandwidth")?,
            queue_depth: r.opt_count("queue_depth")?.map(|n| n as u32),
        })
    }

    fn build(
        _spec: &ModelSpec,
        p: &FixedParams,
        _device_size: u64,
    ) -> Result<Box<dyn DeviceModel>> {
        Ok(Box::new(FixedLatency::from_params(p)))
    }
}

/// The fixed-latency model.
#[derive(Debug, Clone)]
pub struct FixedLatency {
    pub read_ns: Ns,
    pub write_ns: Ns,
    /// A flush (fsync reaching the device).
    pub flush_ns: Ns,
    /// Bytes per second added as `bytes / bandwidth` to reads and writes (none: no transfer time).
    pub bandwidth: Option<u64>,
    /// Free times of the service slots (a min-heap), with a queue depth.
    slots: Option<BinaryHeap<Reverse<Ns>>>,
    requests: Requests,
    counters: FixedCounters,
}

/// What a fixed-latency device counts beyond its requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct FixedCounters {
    /// Service time summed over the requests (latency and transfer; queueing left out).
    #[serde(default)]
    pub busy_ns: Ns,
}

impl KindCounters for FixedCounters {
    fn counters(&self) -> Vec<Counter> {
        vec![Counter {
            group: "device",
            key: "busy_ns",
            label: "service time",
            value: Value::Time(self.busy_ns),
            brief: true,
        }]
    }

    fn since(&self, e: &Self) -> Self {
        FixedCounters {
            busy_ns: self.busy_ns.saturating_sub(e.busy_ns),
        }
    }
}

impl FixedLatency {
    pub fn new(
        read_ns: Ns,
        write_ns: Ns,
        flush_ns: Ns,
        bandwidth: Option<u64>,
        queue_depth: Option<u32>,
    ) -> FixedLatency {
        FixedLatency {
            read_ns,
            write_ns,
            flush_ns,
            bandwidth: bandwidth.filter(|&b| b > 0),
            slots: queue_depth.map(|n| (0..n.max(1)).map(|_| Reverse(0)).collect()),
            requests: Requests::default(),
            counters: FixedCounters::default(),
        }
    }

    pub fn from_params(p: &FixedParams) -> FixedLatency {
        FixedLatency::new(
            p.read_ns,
            p.write_ns,
            p.flush_ns,
            p.bandwidth,
            p.queue_depth,
        )
    }

    /// One latency for everything, no bandwidth, no queue limit.
    pub fn uniform(ns: Ns) -> FixedLatency {
        FixedLatency::new(ns, ns, ns, None, None)
    }

    /// The service time of a request: its kind's latency plus its transfer time. Discards and
    /// write-zeroes cost a write's latency and no transfer.
    pub fn service_ns(&self, kind: RqKind, bytes: u64) -> Ns {
        let base = match kind {
            RqKind::Read => self.read_ns,
            RqKind::Write | RqKind::Discard | RqKind::WriteZeroes => self.write_ns,
            RqKind::Flush => self.flush_ns,
        };
        let transfer = match self.bandwidth {
            Some(bw) if kind.moves_data() => (bytes as u128 * 1_000_000_000 / bw as u128) as Ns,
            _ => 0,
        };
        base + transfer
    }
}

impl DeviceModel for FixedLatency {
    fn submit(&mut self, now: Ns, rq: Rq) -> Option<Ns> {
        let d = self.service_ns(rq.kind, rq.len);
        let done = match &mut self.slots {
            None => now + d,
            Some(slots) => {
                let Reverse(free) = slots.pop().unwrap_or(Reverse(now));
                let done = free.max(now) + d;
                slots.push(Reverse(done));
                done
            }
        };
        self.requests.count(rq.kind);
        self.counters.busy_ns += d;
        Some(done)
    }

    fn next_event(&self) -> Option<Ns> {
        None
    }

    fn advance(&mut self, _now: Ns, _done: &mut Vec<(u64, Ns)>) {}

    fn stats(&self) -> ModelStats {
        ModelStats::new(self.requests, DeviceCounters::Fixed(self.counters))
    }

    /// New latencies and bandwidth (`dev set`); requests already given keep their times, the
    /// queue's slots stay as they are (a queue depth is not changed live).
    fn retime(&mut self, kind: &ModelKind) -> Result<()> {
        let ModelKind::Fixed(p) = kind else {
            return Err(Error::input(format!(
                "a fixed-latency device cannot become a {} model while it runs",
                kind.name()
            )));
        };
        self.read_ns = p.read_ns;
        self.write_ns = p.write_ns;
        self.flush_ns = p.flush_ns;
        self.bandwidth = p.bandwidth.filter(|&b| b > 0);
        Ok(())
    }

    fn describe(&self) -> String {
        use fsage_units::format_latency as f;
        let mut s = format!(
            "fixed latency: read {}, write {}, flush {}",
            f(self.read_ns),
            f(self.write_ns),
            f(self.flush_ns)
        );
        if let Some(bw) = self.bandwidth {
            s += &format!(", {}", fsage_units::format_bandwidth(bw as f64));
        }
        if let Some(slots) = &self.slots {
            s += &format!(", queue depth {}", slots.len());
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rq(kind: RqKind, len: u64) -> Rq {
        Rq {
            id: 0,
            kind,
            offset: 0,
            len,
        }
    }

    #[test]
    fn queue_depth_serialises_beyond_n() {
        let mut m = FixedLatency::new(1_000_000, 1_000_000, 1_000_000, None, Some(2));
        let t0 = 5_000_000;
        let d: Vec<Ns> = (0..5)
            .map(|_| m.submit(t0, rq(RqKind::Read, 4096)).unwrap() - t0)
            .collect();
        assert_eq!(
            d,
            vec![1_000_000, 1_000_000, 2_000_000, 2_000_000, 3_000_000]
        );
        let mut free = FixedLatency::uniform(1_000_000);
        for _ in 0..5 {
            assert_eq!(
                free.submit(t0, rq(RqKind::Read, 4096)),
                Some(t0 + 1_000_000)
            );
        }
        assert_eq!(free.stats().requests.reads, 5);
    }

    #[test]
    fn bandwidth_adds_transfer_time_to_data_only() {
        let m = FixedLatency::new(10_000, 20_000, 5_000, Some(1 << 20), None);
        assert_eq!(m.service_ns(RqKind::Read, 1 << 20), 1_000_010_000);
        assert_eq!(m.service_ns(RqKind::Write, 0), 20_000);
        assert_eq!(m.service_ns(RqKind::Flush, 4096), 5_000);
        assert_eq!(m.service_ns(RqKind::Discard, 1 << 30), 20_000);
        assert_eq!(m.service_ns(RqKind::WriteZeroes, 1 << 30), 20_000);
    }
}

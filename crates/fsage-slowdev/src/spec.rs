//! What a device is asked to be: backing store, latencies, bandwidth, queue depth.

use crate::{Error, Result};
use fsage_device::{FixedParams, ModelSpec};
pub use fsage_results::slowdev::Latencies;
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::path::PathBuf;

/// Latencies asked for, per kind or for all, on top of a device's (or the defaults).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LatencyChange {
    pub all: Option<u64>,
    pub read: Option<u64>,
    pub write: Option<u64>,
    pub flush: Option<u64>,
}

impl LatencyChange {
    /// Whether any latency is asked for.
    pub fn is_empty(&self) -> bool {
        *self == LatencyChange::default()
    }

    /// `base` with the change: a kind takes its own latency, else the one for all. A flush is a
    /// write reaching the medium: with no flush latency of its own it follows the write latency
    /// (given, or the resulting one once anything changes).
    pub fn apply(&self, base: Latencies) -> Latencies {
        let read_ns = self.read.or(self.all).unwrap_or(base.read_ns);
        let write_ns = self.write.or(self.all).unwrap_or(base.write_ns);
        let flush_ns = self
            .flush
            .or(self.all)
            .or(self.write)
            .unwrap_or(if self.is_empty() {
                base.flush_ns
            } else {
                write_ns
            });
        Latencies {
            read_ns,
            write_ns,
            flush_ns,
        }
    }
}

/// Where the device's data lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backing {
    /// An existing image file (an aged image works as is); kept after destroy.
    Image(PathBuf),
    /// A new sparse image file of this size, made by create and kept after destroy.
    NewImage { path: PathBuf, size: u64 },
    /// A sparse scratch file in /dev/shm, removed by destroy.
    Scratch { size: u64 },
}

/// Everything [`crate::SlowDevice::create`] needs.
#[derive(Debug, Clone)]
pub struct DeviceSpec {
    pub backing: Backing,
    pub latencies: Latencies,
    /// Bytes per second added per request as `bytes / bandwidth` (none: no transfer time).
    pub bandwidth: Option<u64>,
    /// At most this many requests in service at once (none: no limit, no queuing).
    pub queue_depth: Option<u32>,
    /// Threads reading FUSE requests in the daemon.
    pub threads: usize,
    /// Run the daemon's threads `SCHED_FIFO`, so that other work on the CPUs does not delay
    /// answers (default on; needs root).
    pub realtime: bool,
    /// The registry directory (default [`crate::Registry::default_root`]).
    pub registry: PathBuf,
    /// The command that runs the daemon, to which the device's directory is appended (default:
    /// the running executable with `dev serve`, which is fsage itself).
    pub daemon_cmd: Option<Vec<OsString>>,
    /// A device model (`fsage_device::resolve`: a built-in, a model file, a latency), which
    /// replaces `latencies`, `bandwidth` and `queue_depth`. A fixed-latency model runs as those
    /// (so `dev set` can change it); any other runs in the daemon's model thread.
    pub model: Option<ModelSpec>,
    /// Answer every request of a model device through the model thread, even those whose
    /// completion the model gives at once (tests of that path with a fixed-latency model).
    pub model_thread: bool,
    /// Start the model's drive state afresh (an erased SSD) even when one is saved beside the
    /// image (`IMAGE.ftl`).
    pub fresh_state: bool,
    /// How a model with a drive state reads pages it never saw written (none: the model's own
    /// rule, zeros without flash as a real drive answers; `fsage_device::UnwrittenReads`).
    pub unwritten_reads: Option<fsage_device::UnwrittenReads>,
}

impl DeviceSpec {
    /// A device on `backing` with one latency for everything and the defaults otherwise.
    pub fn new(backing: Backing, latency_ns: u64) -> DeviceSpec {
        DeviceSpec {
            backing,
            latencies: Latencies::uniform(latency_ns),
            bandwidth: None,
            queue_depth: None,
            threads: 4,
            realtime: true,
            registry: crate::Registry::default_root(),
            daemon_cmd: None,
            model: None,
            model_thread: false,
            fresh_state: false,
            unwritten_reads: None,
        }
    }

    /// A device on `backing` that runs `model`, with the defaults otherwise.
    pub fn with_model(backing: Backing, model: ModelSpec) -> DeviceSpec {
        DeviceSpec {
            model: Some(model),
            ..DeviceSpec::new(backing, 0)
        }
    }

    /// The latencies, bandwidth and queue depth the device runs with: a fixed-latency model's,
    /// or the spec's own.
    pub(crate) fn fixed_timing(&self) -> (Latencies, Option<u64>, Option<u32>) {
        match self.model.as_ref().and_then(FixedParams::of) {
            Some(p) => (
                Latencies {
                    read_ns: p.read_ns,
                    write_ns: p.write_ns,
                    flush_ns: p.flush_ns,
                },
                p.bandwidth,
                p.queue_depth,
            ),
            _ => (self.latencies, self.bandwidth, self.queue_depth),
        }
    }

    pub(crate) fn check(&self) -> Result<()> {
        let (latencies, bandwidth, queue_depth) = self.fixed_timing();
        if queue_depth == Some(0) {
            return Err(Error::input("queue depth 0: give at least 1"));
        }
        if bandwidth == Some(0) {
            return Err(Error::input("bandwidth 0: give a positive rate"));
        }
        if self.threads == 0 || self.threads > 64 {
            return Err(Error::input(format!(
                "{} daemon threads: give 1 to 64",
                self.threads
            )));
        }
        let max = fsage_units::LATENCY_MAX_NS;
        for (what, v) in [
            ("read", latencies.read_ns),
            ("write", latencies.write_ns),
            ("flush", latencies.flush_ns),
        ] {
            if v > max {
                return Err(Error::input(format!(
                    "{what} latency {}: at most 60 s",
                    fsage_units::format_latency(v)
                )));
            }
        }
        match &self.backing {
            Backing::NewImage { size, .. } | Backing::Scratch { size } if *size < 4096 => Err(
                Error::input(format!("size {size} bytes: give at least 4 KiB")),
            ),
            Backing::NewImage { size, .. } | Backing::Scratch { size } if size % 512 != 0 => Err(
                Error::input(format!("size {size} bytes: not a multiple of 512")),
            ),
            Backing::NewImage { size, .. } | Backing::Scratch { size }
                if *size > i64::MAX as u64 =>
            {
                Err(Error::input(format!(
                    "size {}: more than the largest file or device Linux has (8 EiB)",
                    fsage_units::format_size(*size)
                )))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_flush_follows_the_write_latency_unless_given() {
        use super::{Latencies, LatencyChange};
        let base = Latencies {
            read_ns: 1,
            write_ns: 2,
            flush_ns: 3,
        };
        assert_eq!(LatencyChange::default().apply(base), base);
        let w = LatencyChange {
            write: Some(20),
            ..Default::default()
        };
        assert_eq!(w.apply(base).flush_ns, 20);
        let all = LatencyChange {
            all: Some(7),
            flush: Some(9),
            ..Default::default()
        };
        assert_eq!(
            all.apply(base),
            Latencies {
                read_ns: 7,
                write_ns: 7,
                flush_ns: 9
            }
        );
        // Only the read latency changes: the flush takes the write latency, as a new device's.
        let r = LatencyChange {
            read: Some(5),
            ..Default::default()
        };
        assert_eq!(
            r.apply(base),
            Latencies {
                read_ns: 5,
                write_ns: 2,
                flush_ns: 2
            }
        );
    }

    use super::*;

    #[test]
    fn specs_are_checked() {
        let mut s = DeviceSpec::new(Backing::Scratch { size: 1 << 20 }, 0);
        assert!(s.check().is_ok());
        s.queue_depth = Some(0);
        assert!(s.check().is_err());
        s.queue_depth = None;
        s.backing = Backing::Scratch { size: 1000 };
        assert!(s.check().is_err());
    }
}

//! What a hard disk counts beyond its requests, and how those counts are shown.

use crate::{Counter, KindCounters, Ns, Value};
use serde::{Deserialize, Serialize};

/// What a hard disk counts beyond its requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HddCounters {
    /// Time the mechanism was busy: serving requests from the media, writing back, and
    /// streaming read-ahead that a read waited for.
    pub busy_ns: Ns,
    /// Head movements to another cylinder, and the time they took.
    pub seeks: u64,
    pub seek_ns: Ns,
    /// Time spent waiting for the platter to bring the first sector under the head.
    pub rotation_ns: Ns,
    /// Time spent transferring data to or from the media (head and track switches included).
    pub transfer_ns: Ns,
    /// Reads served from the drive's buffer (read-ahead or dirty write data).
    pub read_hits: u64,
    /// Writes acknowledged from the write cache before reaching the media.
    pub cached_writes: u64,
    /// Write-backs from the write cache to the media.
    pub write_backs: u64,
}

impl KindCounters for HddCounters {
    fn counters(&self) -> Vec<Counter> {
        let c = |group, key, label, value, brief| Counter {
            group,
            key,
            label,
            value,
            brief,
        };
        vec![
            c("disk", "busy_ns", "busy", Value::Time(self.busy_ns), true),
            c("disk", "seeks", "seeks", Value::Count(self.seeks), true),
            c(
                "disk",
                "seek_ns",
                "seeking",
                Value::Time(self.seek_ns),
                false,
            ),
            c(
                "disk",
                "rotation_ns",
                "rotation",
                Value::Time(self.rotation_ns),
                false,
            ),
            c(
                "disk",
                "transfer_ns",
                "transfer",
                Value::Time(self.transfer_ns),
                false,
            ),
            c(
                "cache",
                "read_hits",
                "read hits",
                Value::Count(self.read_hits),
                true,
            ),
            c(
                "cache",
                "cached_writes",
                "writes cached",
                Value::Count(self.cached_writes),
                true,
            ),
            c(
                "cache",
                "write_backs",
                "write-backs",
                Value::Count(self.write_backs),
                false,
            ),
        ]
    }

    fn since(&self, e: &Self) -> Self {
        HddCounters {
            busy_ns: self.busy_ns.saturating_sub(e.busy_ns),
            seeks: self.seeks.saturating_sub(e.seeks),
            seek_ns: self.seek_ns.saturating_sub(e.seek_ns),
            rotation_ns: self.rotation_ns.saturating_sub(e.rotation_ns),
            transfer_ns: self.transfer_ns.saturating_sub(e.transfer_ns),
            read_hits: self.read_hits.saturating_sub(e.read_hits),
            cached_writes: self.cached_writes.saturating_sub(e.cached_writes),
            write_backs: self.write_backs.saturating_sub(e.write_backs),
        }
    }
}

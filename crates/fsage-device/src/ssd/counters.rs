//! What an SSD counts beyond its requests, and how its counters are printed.

use crate::{Counter, KindCounters, Ns, Value};
use serde::{Deserialize, Serialize};

/// Host reads by size: up to 4 KiB, 8, 16, 32, 64 and 128 KiB, and larger (where a read's
/// pages can spread over the dies, and how many commands a layout costs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadSizes(pub [u64; 7]);

impl ReadSizes {
    /// The buckets' upper bounds in KiB (the last bucket has none).
    pub const LIMITS_KIB: [u64; 6] = [4, 8, 16, 32, 64, 128];

    pub fn add(&mut self, bytes: u64) {
        let i = Self::LIMITS_KIB
            .iter()
            .position(|&k| bytes <= k << 10)
            .unwrap_or(Self::LIMITS_KIB.len());
        self.0[i] += 1;
    }

    /// Each bucket less `other`'s (saturating): the reads between two readings.
    pub fn minus(&self, other: &ReadSizes) -> ReadSizes {
        let mut out = *self;
        for (a, b) in out.0.iter_mut().zip(other.0) {
            *a = a.saturating_sub(b);
        }
        out
    }

    /// The reads counted, all sizes together.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// As a person reads it: `(3 ≤4K, 0 ≤8K, ..., 1 more)`.
    pub fn human(&self) -> String {
        let sizes = self
            .0
            .iter()
            .enumerate()
            .map(|(i, n)| match Self::LIMITS_KIB.get(i) {
                Some(k) => format!("{n} ≤{k}K"),
                None => format!("{n} more"),
            })
            .collect::<Vec<_>>()
            .join(", ");
        format!("({sizes})")
    }
}

/// What an SSD counts beyond its requests: where flash time went, garbage collection, and its
/// reads (their sizes, how much flash and how many dies each needed, where pages waited for
/// their dies, pages served without a flash read of their own).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SsdCounters {
    /// Flash time summed over the dies (page reads, programs, collection, erases): with dies
    /// working in parallel it can exceed the time that passed.
    pub die_ns: Ns,
    /// Time the channels spent carrying pages between dies and controller.
    pub channel_ns: Ns,
    /// Pages acknowledged from the write buffer before their program ended.
    pub buffered_pages: u64,
    /// Pages the host wrote to this drive since it was built (its FTL's own count goes on
    /// across saved states).
    pub host_pages: u64,
    /// Flash page reads (the host's and garbage collection's) and programs (likewise).
    pub flash_reads: u64,
    pub programs: u64,
    /// Pages garbage collection copied, blocks erased, die time collection took.
    pub gc_copies: u64,
    pub erases: u64,
    pub gc_ns: Ns,
    /// Free blocks left (a level, not a count).
    pub free_blocks: u64,
    /// Bytes the host read, and its reads by size (their sum: the host reads the drive served).
    pub read_bytes: u64,
    pub read_sizes: ReadSizes,
    /// Flash page reads for host reads (per read: how much flash a read needs).
    pub host_flash_reads: u64,
    /// Distinct dies each host read used, summed over the reads (per read: its parallelism).
    pub read_dies: u64,
    /// Page reads that waited for their die, busy with another page of the same read...
    pub die_waits_same: u64,
    /// ... or with another request (a read, a program, a collection, an erase).
    pub die_waits_other: u64,
    /// The time those page reads waited for their dies.
    pub die_wait_ns: Ns,
    /// Pages read from the write buffer (no flash).
    pub buffer_reads: u64,
    /// Pages read that the drive never saw written (served by [`UnwrittenReads`](crate::UnwrittenReads)).
    pub unwritten_reads: u64,
    /// Pages read that the drive saw discarded (zeros, no flash).
    pub discarded_reads: u64,
}

impl SsdCounters {
    /// Flash pages programmed per page the host wrote (None before the host wrote any).
    pub fn write_amplification(&self) -> Option<f64> {
        (self.host_pages > 0).then(|| self.programs as f64 / self.host_pages as f64)
    }

    /// `x` per host read (None before any read).
    fn per_read(&self, x: u64) -> Option<f64> {
        let reads = self.read_sizes.total();
        (reads > 0).then(|| x as f64 / reads as f64)
    }

    /// Flash page reads per host read (None before any read).
    pub fn flash_reads_per_read(&self) -> Option<f64> {
        self.per_read(self.host_flash_reads)
    }

    /// Distinct dies per host read (None before any read).
    pub fn dies_per_read(&self) -> Option<f64> {
        self.per_read(self.read_dies)
    }

    /// The mean host read in bytes (None before any read).
    pub fn mean_read_bytes(&self) -> Option<f64> {
        self.per_read(self.read_bytes)
    }
}

impl KindCounters for SsdCounters {
    fn counters(&self) -> Vec<Counter> {
        use Value::{Bytes, Count, Ratio, Sizes, Time};
        let c = |group, key, label, value, brief| Counter {
            group,
            key,
            label,
            value,
            brief,
        };
        vec![
            c("flash", "die_ns", "die time", Time(self.die_ns), true),
            c(
                "flash",
                "channel_ns",
                "channel time",
                Time(self.channel_ns),
                false,
            ),
            c(
                "flash",
                "flash_reads",
                "page reads",
                Count(self.flash_reads),
                false,
            ),
            c("flash", "programs", "programs", Count(self.programs), false),
            c(
                "flash",
                "host_pages",
                "host pages",
                Count(self.host_pages),
                false,
            ),
            c(
                "flash",
                "write_amplification",
                "write amplification",
                Ratio(self.write_amplification()),
                true,
            ),
            c(
                "flash",
                "buffered_pages",
                "pages buffered",
                Count(self.buffered_pages),
                false,
            ),
            c(
                "collection",
                "gc_copies",
                "pages copied",
                Count(self.gc_copies),
                false,
            ),
            c("collection", "gc_ns", "collecting", Time(self.gc_ns), false),
            c("collection", "erases", "erases", Count(self.erases), true),
            c(
                "collection",
                "free_blocks",
                "free blocks",
                Count(self.free_blocks),
                true,
            ),
            c(
                "reads",
                "read_bytes",
                "bytes",
                Bytes(Some(self.read_bytes)),
                false,
            ),
            c(
                "reads",
                "mean_read",
                "mean read",
                Bytes(self.mean_read_bytes().map(|b| b.round() as u64)),
                true,
            ),
            c(
                "reads",
                "read_sizes",
                "by size",
                Sizes(self.read_sizes),
                false,
            ),
            c(
                "reads",
                "host_flash_reads",
                "flash page reads",
                Count(self.host_flash_reads),
                false,
            ),
            c(
                "reads",
                "flash_reads_per_read",
                "flash reads per read",
                Ratio(self.flash_reads_per_read()),
                true,
            ),
            c(
                "reads",
                "dies_per_read",
                "dies per read",
                Ratio(self.dies_per_read()),
                true,
            ),
            c(
                "die waits",
                "die_waits_same",
                "on the same read",
                Count(self.die_waits_same),
                false,
            ),
            c(
                "die waits",
                "die_waits_other",
                "on another request",
                Count(self.die_waits_other),
                false,
            ),
            c(
                "die waits",
                "die_wait_ns",
                "waiting",
                Time(self.die_wait_ns),
                false,
            ),
            c(
                "pages",
                "unwritten_reads",
                "never written",
                Count(self.unwritten_reads),
                true,
            ),
            c(
                "pages",
                "discarded_reads",
                "discarded",
                Count(self.discarded_reads),
                false,
            ),
            c(
                "pages",
                "buffer_reads",
                "from the write buffer",
                Count(self.buffer_reads),
                false,
            ),
        ]
    }

    fn since(&self, e: &Self) -> Self {
        SsdCounters {
            die_ns: self.die_ns.saturating_sub(e.die_ns),
            channel_ns: self.channel_ns.saturating_sub(e.channel_ns),
            buffered_pages: self.buffered_pages.saturating_sub(e.buffered_pages),
            host_pages: self.host_pages.saturating_sub(e.host_pages),
            flash_reads: self.flash_reads.saturating_sub(e.flash_reads),
            programs: self.programs.saturating_sub(e.programs),
            gc_copies: self.gc_copies.saturating_sub(e.gc_copies),
            erases: self.erases.saturating_sub(e.erases),
            gc_ns: self.gc_ns.saturating_sub(e.gc_ns),
            // A level: the newer.
            free_blocks: self.free_blocks,
            read_bytes: self.read_bytes.saturating_sub(e.read_bytes),
            read_sizes: self.read_sizes.minus(&e.read_sizes),
            host_flash_reads: self.host_flash_reads.saturating_sub(e.host_flash_reads),
            read_dies: self.read_dies.saturating_sub(e.read_dies),
            die_waits_same: self.die_waits_same.saturating_sub(e.die_waits_same),
            die_waits_other: self.die_waits_other.saturating_sub(e.die_waits_other),
            die_wait_ns: self.die_wait_ns.saturating_sub(e.die_wait_ns),
            buffer_reads: self.buffer_reads.saturating_sub(e.buffer_reads),
            unwritten_reads: self.unwritten_reads.saturating_sub(e.unwritten_reads),
            discarded_reads: self.discarded_reads.saturating_sub(e.discarded_reads),
        }
    }
}

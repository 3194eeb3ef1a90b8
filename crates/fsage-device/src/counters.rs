//! What a model has done, as data: the requests it completed (every model counts these) and the
//! counters of its kind. Each kind names its own counters ([`Counter`]: a key, a label, a group
//! and a value with its unit), so that `dev stats`, `dev list`, `dev cost` and their JSON show any
//! model's counters without knowing its kind: a hard disk's seeks and cache hits, an SSD's
//! programs, erases and write amplification, a fixed latency's service time.
//!
//! # Adding a counter to a kind
//!
//! In the kind's counters type ([`HddCounters`](crate::hdd::HddCounters) in `hdd/mod.rs`,
//! [`SsdCounters`](crate::ssd::SsdCounters) in `ssd/mod.rs`,
//! [`FixedCounters`](crate::fixed::FixedCounters) in `fixed.rs`):
//! 1. a field with `#[serde(default)]` (JSON written before it still reads), counted by the model;
//! 2. one [`Counter`] for it in the type's [`KindCounters::counters`] list, in the order it is
//!    printed (`brief: true` also puts it on `dev list`'s one line);
//! 3. in [`KindCounters::since`], whether it is a count (subtracted: what happened since) or a
//!    level (the newer value, as free blocks are).
//!
//! A value computed from others (a ratio such as the write amplification) is only a
//! [`Value::Ratio`] in the list: it is computed from the counts each time, so it stays right
//! after [`ModelStats::since`], and the JSON carries it too (every ratio of the list is written
//! beside the counts, under its key). Nothing else changes: the printers and the JSON follow the
//! list. A new model kind names its counters type in its [`Kind`](crate::kinds::Kind) and its
//! registry row makes the [`DeviceCounters`] variant (see [`crate::kinds`]).

use crate::{Ns, RqKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Requests a model completed, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Requests {
    #[serde(default)]
    pub reads: u64,
    #[serde(default)]
    pub writes: u64,
    #[serde(default)]
    pub flushes: u64,
    #[serde(default)]
    pub discards: u64,
    #[serde(default)]
    pub write_zeroes: u64,
}

impl Requests {
    pub fn count(&mut self, kind: RqKind) {
        match kind {
            RqKind::Read => self.reads += 1,
            RqKind::Write => self.writes += 1,
            RqKind::Flush => self.flushes += 1,
            RqKind::Discard => self.discards += 1,
            RqKind::WriteZeroes => self.write_zeroes += 1,
        }
    }

    fn since(&self, e: &Requests) -> Requests {
        Requests {
            reads: self.reads.saturating_sub(e.reads),
            writes: self.writes.saturating_sub(e.writes),
            flushes: self.flushes.saturating_sub(e.flushes),
            discards: self.discards.saturating_sub(e.discards),
            write_zeroes: self.write_zeroes.saturating_sub(e.write_zeroes),
        }
    }
}

/// A counter's value, with its unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "unit", content = "value", rename_all = "snake_case")]
pub enum Value {
    /// Things counted (seeks, erases), or a level (free blocks).
    Count(u64),
    /// A time in nanoseconds (printed in seconds).
    Time(Ns),
    /// A ratio computed from other counters; none while undefined (no page written yet).
    Ratio(Option<f64>),
    /// An amount of data in bytes (printed in KiB, MiB, ...); none while undefined (a mean
    /// before anything was counted).
    Bytes(Option<u64>),
    /// Requests by size (an SSD's reads).
    Sizes(crate::ssd::ReadSizes),
}

impl Value {
    /// As a person reads it: `12`, `0.019 s`, `1.25`, `12 KiB` (`-` when undefined), `3 ≤4K, ...`.
    pub fn human(&self) -> String {
        match *self {
            Value::Count(n) => n.to_string(),
            Value::Time(ns) => format!("{:.3} s", ns as f64 / 1e9),
            Value::Ratio(r) => r.map_or("-".into(), |r| format!("{r:.2}")),
            Value::Bytes(b) => b.map_or("-".into(), fsage_units::format_size),
            Value::Sizes(s) => s.human(),
        }
    }
}

/// One counter of a model kind, as the exporters show it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Counter {
    /// Counters of one group print on one line (`disk`, `cache`, `flash`).
    pub group: &'static str,
    /// Its key in the JSON (`seeks`, `write_amplification`).
    pub key: &'static str,
    /// Its name for a person (`seeks`, `write amplification`).
    pub label: &'static str,
    pub value: Value,
    /// Shown in the one-line summary (`dev list`).
    pub brief: bool,
}

/// A model kind's own counters (see the module documentation to add one).
pub trait KindCounters {
    /// Every counter, in the order printed.
    fn counters(&self) -> Vec<Counter>;
    /// What happened since `earlier` (counts subtracted, levels the newer).
    fn since(&self, earlier: &Self) -> Self;
}

pub use crate::kinds::DeviceCounters;

impl Default for DeviceCounters {
    fn default() -> Self {
        DeviceCounters::Fixed(Default::default())
    }
}

/// What a model has done so far: the requests it completed and its kind's counters. The JSON is
/// flat: `{"reads": 3, ..., "kind": "hdd", "seeks": 2, ...}`, with every ratio of the kind's
/// counters beside the counts (`"write_amplification": 1.25`). JSON written before the counters
/// had kinds (one union of disk and flash counters, no `kind`) still reads: as an SSD's when it
/// has flash counters, as a hard disk's when it has disk counters, else as a fixed latency's.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(from = "wire::Wire")]
pub struct ModelStats {
    pub requests: Requests,
    pub device: DeviceCounters,
}

impl ModelStats {
    pub fn new(requests: Requests, device: DeviceCounters) -> ModelStats {
        ModelStats { requests, device }
    }

    /// The kind's counters, in the order printed.
    pub fn counters(&self) -> Vec<Counter> {
        self.device.counters()
    }

    /// The counter named `key`, if the kind has it.
    pub fn get(&self, key: &str) -> Option<Value> {
        self.counters()
            .into_iter()
            .find(|c| c.key == key)
            .map(|c| c.value)
    }

    /// The counters the kind marks as brief, on one line (`seeks 3, read hits 5, ...`).
    pub fn brief(&self) -> String {
        self.counters()
            .iter()
            .filter(|c| c.brief)
            .map(|c| format!("{} {}", c.label, c.value.human()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// What happened since `earlier` (an earlier reading of the same model).
    pub fn since(&self, earlier: &ModelStats) -> ModelStats {
        ModelStats {
            requests: self.requests.since(&earlier.requests),
            device: self.device.since(&earlier.device),
        }
    }

    /// A hard disk's counters, for code about hard disks (tests, analyses).
    pub fn hdd(&self) -> Option<&crate::hdd::HddCounters> {
        match &self.device {
            DeviceCounters::Hdd(c) => Some(c),
            _ => None,
        }
    }

    /// An SSD's counters, for code about flash (the experiments' flash analysis).
    pub fn ssd(&self) -> Option<&crate::ssd::SsdCounters> {
        match &self.device {
            DeviceCounters::Ssd(c) => Some(c),
            _ => None,
        }
    }
}

impl Serialize for ModelStats {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Flat<'a> {
            #[serde(flatten)]
            requests: &'a Requests,
            #[serde(flatten)]
            device: &'a DeviceCounters,
            #[serde(flatten)]
            ratios: BTreeMap<&'static str, Option<f64>>,
        }
        let ratios = self
            .counters()
            .into_iter()
            .filter_map(|c| match c.value {
                Value::Ratio(r) => Some((c.key, r)),
                _ => None,
            })
            .collect();
        Flat {
            requests: &self.requests,
            device: &self.device,
            ratios,
        }
        .serialize(s)
    }
}

/// Reading the JSON: the flat form with `kind`, or the union older versions wrote.
mod wire {
    use super::*;
    use crate::fixed::FixedCounters;
    use crate::hdd::HddCounters;
    use crate::ssd::SsdCounters;

    #[derive(Deserialize)]
    #[serde(untagged)]
    pub(super) enum Wire {
        Current(Current),
        Union(Union),
    }

    #[derive(Deserialize)]
    pub(super) struct Current {
        #[serde(flatten)]
        requests: Requests,
        #[serde(flatten)]
        device: DeviceCounters,
    }

    /// The one struct of hard-disk and flash counters written before counters had kinds.
    #[derive(Deserialize, Default)]
    #[serde(default)]
    pub(super) struct Union {
        #[serde(flatten)]
        requests: Requests,
        busy_ns: Ns,
        seeks: u64,
        seek_ns: Ns,
        rotation_ns: Ns,
        transfer_ns: Ns,
        read_hits: u64,
        cached_writes: u64,
        write_backs: u64,
        flash_reads: u64,
        programs: u64,
        gc_copies: u64,
        erases: u64,
        gc_ns: Ns,
        host_pages: u64,
        free_blocks: u64,
        // An SSD's read counters (the last versions of the union had them).
        read_bytes: u64,
        read_sizes: crate::ssd::ReadSizes,
        host_flash_reads: u64,
        read_dies: u64,
        die_waits_same: u64,
        die_waits_other: u64,
        die_wait_ns: Ns,
        buffer_reads: u64,
        unwritten_reads: u64,
        discarded_reads: u64,
    }

    impl From<Wire> for ModelStats {
        fn from(w: Wire) -> ModelStats {
            match w {
                Wire::Current(c) => ModelStats::new(c.requests, c.device),
                Wire::Union(u) => {
                    let flash = u.free_blocks
                        + u.host_pages
                        + u.programs
                        + u.flash_reads
                        + u.erases
                        + u.gc_copies
                        + u.gc_ns
                        + u.read_bytes
                        + u.host_flash_reads
                        + u.unwritten_reads
                        + u.discarded_reads
                        + u.buffer_reads
                        > 0;
                    let disk = u.seeks
                        + u.seek_ns
                        + u.rotation_ns
                        + u.read_hits
                        + u.cached_writes
                        + u.write_backs
                        > 0;
                    let device = if flash {
                        DeviceCounters::Ssd(SsdCounters {
                            die_ns: u.busy_ns,
                            channel_ns: u.transfer_ns,
                            buffered_pages: u.cached_writes,
                            host_pages: u.host_pages,
                            flash_reads: u.flash_reads,
                            programs: u.programs,
                            gc_copies: u.gc_copies,
                            erases: u.erases,
                            gc_ns: u.gc_ns,
                            free_blocks: u.free_blocks,
                            read_bytes: u.read_bytes,
                            read_sizes: u.read_sizes,
                            host_flash_reads: u.host_flash_reads,
                            read_dies: u.read_dies,
                            die_waits_same: u.die_waits_same,
                            die_waits_other: u.die_waits_other,
                            die_wait_ns: u.die_wait_ns,
                            buffer_reads: u.buffer_reads,
                            unwritten_reads: u.unwritten_reads,
                            discarded_reads: u.discarded_reads,
                        })
                    } else if disk || u.transfer_ns > 0 {
                        DeviceCounters::Hdd(HddCounters {
                            busy_ns: u.busy_ns,
                            seeks: u.seeks,
                            seek_ns: u.seek_ns,
                            rotation_ns: u.rotation_ns,
                            transfer_ns: u.transfer_ns,
                            read_hits: u.read_hits,
                            cached_writes: u.cached_writes,
                            write_backs: u.write_backs,
                        })
                    } else {
                        DeviceCounters::Fixed(FixedCounters { busy_ns: u.busy_ns })
                    };
                    ModelStats::new(u.requests, device)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hdd::HddCounters;
    use crate::ssd::SsdCounters;

    fn ssd() -> ModelStats {
        ModelStats::new(
            Requests {
                writes: 10,
                ..Default::default()
            },
            DeviceCounters::Ssd(SsdCounters {
                host_pages: 100,
                programs: 150,
                gc_copies: 50,
                erases: 3,
                free_blocks: 40,
                ..Default::default()
            }),
        )
    }

    #[test]
    fn the_json_is_flat_names_the_kind_and_carries_the_ratios() {
        let s = ssd();
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["kind"], "ssd");
        assert_eq!(v["writes"], 10);
        assert_eq!(v["programs"], 150);
        assert_eq!(v["write_amplification"], 1.5);
        assert!(
            v.get("seeks").is_none(),
            "no hard-disk counters on an SSD: {v}"
        );
        let back: ModelStats = serde_json::from_value(v).unwrap();
        assert_eq!(back, s);
        // A hard disk names its own.
        let h = ModelStats::new(
            Requests::default(),
            DeviceCounters::Hdd(HddCounters {
                seeks: 4,
                ..Default::default()
            }),
        );
        let v = serde_json::to_value(&h).unwrap();
        assert_eq!(
            (v["kind"].as_str(), v["seeks"].as_u64()),
            (Some("hdd"), Some(4))
        );
        assert!(v.get("programs").is_none(), "{v}");
        assert_eq!(serde_json::from_value::<ModelStats>(v).unwrap(), h);
    }

    #[test]
    fn the_union_older_versions_wrote_still_reads() {
        let old_ssd = r#"{"reads":2,"writes":5,"flushes":0,"discards":0,"write_zeroes":0,
            "busy_ns":900,"seeks":0,"seek_ns":0,"rotation_ns":0,"transfer_ns":30,"read_hits":0,
            "cached_writes":5,"write_backs":0,"flash_reads":7,"programs":12,"gc_copies":2,
            "erases":1,"gc_ns":100,"host_pages":10,"free_blocks":33}"#;
        let s: ModelStats = serde_json::from_str(old_ssd).unwrap();
        assert_eq!(s.requests.writes, 5);
        let c = s.ssd().expect("flash counters: an SSD's");
        assert_eq!((c.programs, c.host_pages, c.free_blocks), (12, 10, 33));
        assert_eq!(s.get("write_amplification"), Some(Value::Ratio(Some(1.2))));
        // An SSD before its first program still had free blocks: still an SSD.
        let idle = r#"{"reads":1,"writes":0,"flushes":0,"discards":0,"write_zeroes":0,
            "busy_ns":0,"seeks":0,"seek_ns":0,"rotation_ns":0,"transfer_ns":0,"read_hits":0,
            "cached_writes":0,"write_backs":0,"free_blocks":512}"#;
        assert!(serde_json::from_str::<ModelStats>(idle)
            .unwrap()
            .ssd()
            .is_some());
        let old_hdd = r#"{"reads":3,"writes":0,"flushes":0,"discards":0,"write_zeroes":0,
            "busy_ns":5000,"seeks":2,"seek_ns":100,"rotation_ns":200,"transfer_ns":300,
            "read_hits":1,"cached_writes":0,"write_backs":0}"#;
        let h: ModelStats = serde_json::from_str(old_hdd).unwrap();
        assert_eq!(h.hdd().map(|c| (c.seeks, c.read_hits)), Some((2, 1)));
        assert_eq!(h.requests.reads, 3);
    }

    /// The union's last form (before counters had kinds) carried an SSD's read counters: they
    /// read into the SSD's own counters, with the ratios computed from them.
    #[test]
    fn the_union_with_ssd_read_counters_still_reads() {
        let old = r#"{"reads":4,"writes":0,"flushes":0,"discards":0,"write_zeroes":0,
            "busy_ns":4000,"seeks":0,"seek_ns":0,"rotation_ns":0,"transfer_ns":10,
            "read_hits":0,"cached_writes":0,"write_backs":0,"flash_reads":6,"programs":0,
            "gc_copies":0,"erases":0,"gc_ns":0,"host_pages":0,"free_blocks":0,
            "read_bytes":40960,"read_sizes":[2,1,1,0,0,0,0],"host_flash_reads":6,
            "read_dies":5,"die_waits_same":1,"die_waits_other":2,"die_wait_ns":700,
            "buffer_reads":0,"unwritten_reads":3,"discarded_reads":1}"#;
        let s: ModelStats = serde_json::from_str(old).unwrap();
        let c = s.ssd().expect("read counters: an SSD's");
        assert_eq!(c.read_sizes.0, [2, 1, 1, 0, 0, 0, 0]);
        assert_eq!(
            (
                c.read_dies,
                c.die_waits_same,
                c.die_waits_other,
                c.die_wait_ns
            ),
            (5, 1, 2, 700)
        );
        assert_eq!((c.unwritten_reads, c.discarded_reads), (3, 1));
        assert_eq!(s.get("flash_reads_per_read"), Some(Value::Ratio(Some(1.5))));
        assert_eq!(s.get("mean_read"), Some(Value::Bytes(Some(10240))));
        // Written again in the current form, it reads back the same.
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["kind"].as_str(), Some("ssd"));
        assert_eq!(v["dies_per_read"].as_f64(), Some(1.25));
        assert_eq!(serde_json::from_value::<ModelStats>(v).unwrap(), s);
    }

    #[test]
    fn since_subtracts_counts_keeps_levels_and_recomputes_ratios() {
        let before = ssd();
        let mut after = ssd();
        after.requests.writes = 30;
        if let DeviceCounters::Ssd(c) = &mut after.device {
            c.host_pages = 300;
            c.programs = 550;
            c.free_blocks = 20;
        }
        let d = after.since(&before);
        assert_eq!(d.requests.writes, 20);
        let c = d.ssd().unwrap();
        assert_eq!((c.host_pages, c.programs, c.free_blocks), (200, 400, 20));
        assert_eq!(d.get("write_amplification"), Some(Value::Ratio(Some(2.0))));
    }
}

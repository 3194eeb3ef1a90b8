//! A drive aged by a file system's history: a model that keeps a drive state (an SSD's FTL),
//! fed, in order and at memory speed, the writes, discards and write-zeroes the file system sent
//! to its device ([`DeviceModel::feed`]: no time passes, only the state changes). What the file
//! system wrote sits where its history put it, with the garbage collection that caused, and a
//! trace of reads is then costed on a copy of the drive ([`AgedDrive::model`]), which leaves the
//! aged state as it was.
//!
//! `fsage age --device-model`, `fsage git-age --cost-models` and experiments feed one from a
//! block trace of the image's device (`fsage-lab`'s `drive` module).

use crate::{DeviceModel, Error, ModelSpec, ModelStats, Result, Rq, RqKind, Trace};
use serde::{Deserialize, Serialize};

/// What a drive was fed: requests and bytes written, discarded or zeroed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fed {
    pub requests: u64,
    pub bytes: u64,
}

impl Fed {
    pub fn add(&mut self, other: Fed) {
        self.requests += other.requests;
        self.bytes += other.bytes;
    }
}

/// A model with a drive state, aged by the requests it is fed.
pub struct AgedDrive {
    spec: ModelSpec,
    size: u64,
    model: Box<dyn DeviceModel>,
    fed: Fed,
}

impl std::fmt::Debug for AgedDrive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgedDrive")
            .field("model", &self.spec.name)
            .field("size", &self.size)
            .field("fed", &self.fed)
            .finish()
    }
}

impl AgedDrive {
    /// An erased drive of `spec` for a device of `size` bytes; refused for a model that keeps
    /// no drive state (nothing would age).
    pub fn erased(spec: &ModelSpec, size: u64) -> Result<AgedDrive> {
        let model = spec.build(size)?;
        if !spec.keeps_state() {
            return Err(Error::input(format!(
                "{}: this model keeps no drive state to age (only SSD models do)",
                spec.name
            )));
        }
        Ok(AgedDrive {
            spec: spec.clone(),
            size,
            model,
            fed: Fed::default(),
        })
    }

    /// The drive in a state [`AgedDrive::state`] (or a device's `IMAGE.ftl`) gave.
    pub fn load(spec: &ModelSpec, size: u64, state: &[u8]) -> Result<AgedDrive> {
        let mut d = AgedDrive::erased(spec, size)?;
        d.model.load_state(state)?;
        Ok(d)
    }

    pub fn spec(&self) -> &ModelSpec {
        &self.spec
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// Takes one request's effect on the drive's state: a write, discard or write-zeroes
    /// (reads and flushes change nothing and are not counted).
    pub fn feed(&mut self, kind: RqKind, offset: u64, len: u64) {
        if matches!(kind, RqKind::Read | RqKind::Flush) || len == 0 {
            return;
        }
        let id = self.fed.requests;
        self.model.feed(&Rq {
            id,
            kind,
            offset,
            len,
        });
        self.fed.requests += 1;
        self.fed.bytes += len;
    }

    /// Feeds every request of `trace`, in order.
    pub fn feed_trace(&mut self, trace: &Trace) {
        for r in &trace.requests {
            self.feed(r.kind, r.offset, r.len);
        }
    }

    /// What this value was fed since it was made or loaded.
    pub fn fed(&self) -> Fed {
        self.fed
    }

    /// The drive state as bytes (to save beside the image, or to copy).
    pub fn state(&self) -> Vec<u8> {
        self.model
            .save_state()
            .expect("checked when made: the model keeps a drive state")
    }

    /// The model's counters since this value was made (the FTL's programs, collection, erases).
    pub fn stats(&self) -> ModelStats {
        self.model.stats()
    }

    /// A few words on the state (how much holds data).
    pub fn describe_state(&self) -> String {
        self.model.describe_state().unwrap_or_default()
    }

    /// A fresh copy of the model in this drive's state, idle at time 0, to cost a trace on:
    /// what the copy is asked does not change this drive.
    pub fn model(&self) -> Result<Box<dyn DeviceModel>> {
        let mut m = self.spec.build(self.size)?;
        m.load_state(&self.state())?;
        Ok(m)
    }

    /// The write amplification of what this value was fed (programs per host page).
    pub fn write_amplification(&self) -> Option<f64> {
        self.stats().ssd()?.write_amplification()
    }
}

/// A copy of `drive`'s model, or an erased one of `spec` for a device of `size` bytes when there
/// is no drive: the model a trace is costed on.
pub fn model_for(
    spec: &ModelSpec,
    size: u64,
    drive: Option<&AgedDrive>,
) -> Result<Box<dyn DeviceModel>> {
    match drive {
        Some(d) => d.model(),
        None => spec.build(size),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{cost_with, CostOptions, Ns, TraceRq};

    const K4: u64 = 4096;

    /// The SSD's counters of a costing.
    fn ssd(r: &crate::CostReport) -> crate::SsdCounters {
        *r.stats.ssd().expect("an SSD's counters")
    }

    fn rq(kind: RqKind, offset: u64, len: u64, at: Ns) -> TraceRq {
        TraceRq {
            kind,
            offset,
            len,
            issue_ns: at,
            complete_ns: Some(at + 10_000),
        }
    }

    /// Writes of two 128 KiB files as a file system's history might send them: `whole` written
    /// in one request; `pieces` in 4 KiB pieces, each followed by `others` pages of other files
    /// (appends interleaved with other work), so that its pages land on whatever dies the
    /// stripe had reached.
    fn history(others: u64) -> Trace {
        let mut rqs = vec![rq(RqKind::Write, 0, 128 << 10, 0)];
        let mut other = 8 << 20;
        for i in 0..32u64 {
            rqs.push(rq(RqKind::Write, (1 << 20) + i * K4, K4, 1 + i));
            for _ in 0..others {
                rqs.push(rq(RqKind::Write, other, K4, 1 + i));
                other += K4;
            }
        }
        Trace::new("writes", Some(64 << 20), rqs)
    }

    fn read(offset: u64, len: u64) -> Trace {
        Trace::new(
            "read",
            Some(64 << 20),
            vec![rq(RqKind::Read, offset, len, 0)],
        )
    }

    /// A file written in pieces among other writes costs more to read than the same file
    /// written at once, on a drive whose state the write trace made (on an erased drive, as
    /// costs were made before drives aged, both were free of flash and cost the same).
    #[test]
    fn a_file_written_in_pieces_costs_more_to_read_than_one_written_at_once() {
        for (name, others) in [("ssd-nvme", 1), ("ssd-nvme", 3), ("ssd-sata", 15)] {
            let spec = crate::resolve(name).unwrap();
            let mut d = AgedDrive::erased(&spec, 64 << 20).unwrap();
            d.feed_trace(&history(others));
            assert_eq!(d.fed().requests, 1 + 32 * (1 + others));
            let cost = |t: &Trace| {
                let mut m = d.model().unwrap();
                cost_with(t, m.as_mut(), CostOptions::default())
            };
            let whole = cost(&read(0, 128 << 10));
            let pieces = cost(&read(1 << 20, 128 << 10));
            eprintln!(
                "{name}, {others} other pages after each piece: whole {} us, pieces {} us; die \
                 waits {} / {}, dies used {} / {}",
                whole.total_ns / 1000,
                pieces.total_ns / 1000,
                ssd(&whole).die_waits_same,
                ssd(&pieces).die_waits_same,
                ssd(&whole).read_dies,
                ssd(&pieces).read_dies
            );
            assert!(
                pieces.total_ns as f64 > 1.3 * whole.total_ns as f64,
                "{name}: {} against {}",
                pieces.total_ns,
                whole.total_ns
            );
            assert!(ssd(&pieces).die_waits_same > ssd(&whole).die_waits_same);
            assert!(ssd(&pieces).read_dies < ssd(&whole).read_dies);
            assert_eq!(ssd(&pieces).host_flash_reads, 32);
            assert_eq!(ssd(&pieces).unwritten_reads, 0);
            // Costing changed nothing of the drive.
            assert_eq!(d.fed().requests, 1 + 32 * (1 + others));
            let again = cost(&read(1 << 20, 128 << 10));
            assert_eq!(again.total_ns, pieces.total_ns);
        }
    }

    #[test]
    fn a_model_without_a_drive_state_is_refused() {
        let e = AgedDrive::erased(&crate::resolve("hdd-7200").unwrap(), 1 << 30).unwrap_err();
        assert!(e.message.contains("keeps no drive state"), "{e}");
    }

    /// Pages a drive never saw written are not free: read as data written in logical order
    /// (counted), or free when asked (what a real drive does with an unmapped page).
    #[test]
    fn never_written_pages_are_read_as_data_in_logical_order() {
        let spec = crate::resolve("ssd-sata").unwrap();
        let t = Trace::new(
            "bare",
            Some(64 << 20),
            (0..20u64)
                .map(|i| rq(RqKind::Read, i * (1 << 20), 16 << 10, i * 100_000))
                .collect(),
        );
        let run = |opts: CostOptions| {
            let mut m = spec.build(64 << 20).unwrap();
            cost_with(&t, m.as_mut(), opts)
        };
        let lba = run(CostOptions::default());
        let free = run(CostOptions {
            unwritten: crate::UnwrittenReads::Free,
            ..CostOptions::default()
        });
        assert_eq!(ssd(&lba).unwritten_reads, 20 * 4);
        assert_eq!(ssd(&lba).host_flash_reads, 20 * 4);
        assert_eq!(ssd(&free).unwritten_reads, 20 * 4);
        assert_eq!(ssd(&free).host_flash_reads, 0);
        // Each 16 KiB read: a page read and the channel, where the interface alone was 30 us.
        assert!(
            lba.total_ns > free.total_ns + 20 * 20_000,
            "{} against {}",
            lba.total_ns,
            free.total_ns
        );
        // 4 pages in logical order sit on 4 dies: no die waits within a read.
        assert_eq!(ssd(&lba).read_dies, 20 * 4);
        assert_eq!(ssd(&lba).die_waits_same, 0);
        assert_eq!(lba.unwritten, crate::UnwrittenReads::LbaOrder);
        assert_eq!(lba.drive.as_deref(), Some("erased (never written)"));
        // A discarded page is zeros under either rule.
        let mut d = AgedDrive::erased(&spec, 64 << 20).unwrap();
        d.feed(RqKind::Discard, 0, 64 << 20);
        let mut m = d.model().unwrap();
        let r = cost_with(&t, m.as_mut(), CostOptions::default());
        assert_eq!((ssd(&r).discarded_reads, ssd(&r).host_flash_reads), (80, 0));
    }
}

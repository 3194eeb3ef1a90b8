//! A flash SSD: a page-mapped FTL over channels × dies, each die busy for its page reads, page
//! programs and block erases; a DRAM write buffer; greedy garbage collection whose copies and
//! erases occupy the die and delay what comes behind them; over-provisioning; discards that
//! invalidate pages.
//!
//! # How a request is served
//!
//! Like FEMU's black-box SSD and NVMeVirt, every resource keeps the time it is next free, and a
//! request reserves what it needs in order; so its completion is known the moment it arrives
//! (`submit` always answers at once), and requests in flight overlap exactly as far as they use
//! different dies and channels.
//!
//! - Every command first costs `overhead` (firmware). The host interface (`interface_rate`) moves
//!   data one command at a time.
//! - **Read**: each page of the range is read on the die holding it (`read` on the die, then the
//!   page over the die's channel at `channel_rate`); pages on different dies proceed together,
//!   pages on one die one after another (a die collision, counted: with another page of the same
//!   request, or with another request's read, program, collection or erase). A page still in the
//!   write buffer, or discarded, needs no flash. A page the drive never saw written is served
//!   by the rule [`UnwrittenReads`] says: zeros without flash (`free`, what a real drive does,
//!   the default in real time), or read from the die it would be on had the drive been written
//!   in logical order from erased (`lba-order`, the default when costing a trace: the trace
//!   reads data some history wrote). The data crosses the interface as the pages
//!   come: the interface's time is reserved for the request at its earliest (so the interface
//!   caps the rate of all requests together), and the request ends no earlier than that nor
//!   before its last page has crossed.
//! - **Write**: the data crosses the interface into the write buffer (`write_buffer` bytes); each
//!   page takes a buffer slot and is programmed at once on the next die in turn (striping: the
//!   channel transfer, then `program` on the die), freeing its slot when the program ends. The
//!   write completes when its last page has a slot: at once while the buffer has room, at the
//!   rate the dies drain it when it is full. Before a page is placed on a die short of free
//!   blocks, greedy garbage collection runs there (see `ftl`): each valid page copied costs a page
//!   read and a page program on that die, each erase `erase`. With `write_buffer = 0` a write
//!   completes when its programs do.
//! - **Flush**: completes when every page written before it is programmed.
//! - **Discard** and **write-zeroes**: unmap the range's pages (a later read returns zeros
//!   without touching flash); they cost the overhead.
//!
//! Not modeled: multi-plane operations, read retries and ECC time, SLC caching, the mapping
//! table's own paging (DFTL), wear-out (erase counts are counted, blocks never fail), power
//! states, a background collector that works while the drive is idle (collection runs when a die
//! needs a block), data-dependent program times (MLC/TLC pages), and the drive's own read-ahead
//! or a flash page larger than the mapping unit (a read that continues where the last one ended
//! costs what any other does).

mod counters;
pub mod ftl;
pub mod kind;
mod params;

use crate::{
    DeviceCounters, DeviceModel, Error, ModelStats, Ns, Requests, Rq, RqKind, UnwrittenReads,
};
use ftl::{Ftl, PageState};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

pub use counters::{ReadSizes, SsdCounters};
pub use params::{compressed_ratio, greedy_write_amplification, SsdParams};

/// The drive: its FTL and when each die, channel and the interface is next free.
pub struct Ssd {
    p: SsdParams,
    ftl: Ftl,
    /// Pages the device addresses (the first part of the drive).
    device_pages: u64,
    die_free: Vec<Ns>,
    channel_free: Vec<Ns>,
    interface_free: Ns,
    /// When each occupied write-buffer slot frees (its page's program ends).
    buffer: BinaryHeap<Reverse<Ns>>,
    slots: usize,
    /// Pages still in the buffer: logical page → when its program ends (a read of it is served
    /// from DRAM until then).
    buffered: HashMap<u32, Ns>,
    last_program_end: Ns,
    requests: Requests,
    counters: SsdCounters,
    unwritten: UnwrittenReads,
    /// The request being served (from 1), and per die the last request that occupied it and
    /// the last read that used it (for the die-collision and dies-per-read counters).
    seq: u64,
    die_by: Vec<u64>,
    die_read_by: Vec<u64>,
    /// The dies that serve requests (`channels x dies_per_channel`) and the FTL's pools (as
    /// many, or fewer on a scaled drive: [`SsdParams::pools`]).
    timing_dies: u32,
    pools: u32,
    /// Slots per flash page (1 without compression), and the slots programmed, copied by
    /// collection and read by it that do not yet make a whole page in the counters.
    k: u64,
    part: [u64; 3],
    /// What each page of the write being submitted compresses to, when its data was shown
    /// ([`DeviceModel::submit_data`]); empty: `unseen_data_ratio` for every page.
    ratios: Vec<f64>,
}

impl Ssd {
    /// An erased drive for a device of `device_size` bytes. It reads pages it never saw written
    /// as a real drive does (zeros, no flash) until told otherwise
    /// ([`DeviceModel::set_unwritten_reads`]).
    pub fn new(p: &SsdParams, device_size: u64) -> crate::Result<Ssd> {
        if cfg!(not(feature = "compression")) && p.compression.is_some() {
            return Err(Error::input(
                "a compressing drive needs fsage-device's `compression` feature (zstd), \
                 which this build left out"
                    .to_string(),
            ));
        }
        let user = p.capacity.unwrap_or(device_size);
        if user < device_size {
            return Err(Error::input(format!(
                "the device ({device_size} bytes) is larger than the drive's capacity ({user})"
            )));
        }
        let ftl = Ftl::new(p.geometry(user)?)?;
        Ok(Ssd::with_ftl(p, device_size, ftl))
    }

    /// A drive in the state `ftl` holds (a saved drive, or one preconditioned).
    pub fn with_ftl(p: &SsdParams, device_size: u64, ftl: Ftl) -> Ssd {
        let geo = ftl.geometry();
        let slots = (p.write_buffer / p.page_size.max(1)) as usize;
        // A state whose pools outnumber the dies (not one this model made) is timed pool by die.
        let timing_dies = (p.timing_dies().min(u32::MAX as u64) as u32).max(geo.dies);
        Ssd {
            p: p.clone(),
            device_pages: device_size.div_ceil(p.page_size).min(geo.user_pages as u64),
            die_free: vec![0; timing_dies as usize],
            channel_free: vec![0; p.channels as usize],
            interface_free: 0,
            buffer: BinaryHeap::with_capacity(slots),
            slots,
            buffered: HashMap::new(),
            last_program_end: 0,
            requests: Requests::default(),
            counters: SsdCounters::default(),
            unwritten: UnwrittenReads::Free,
            seq: 0,
            die_by: vec![0; timing_dies as usize],
            die_read_by: vec![0; timing_dies as usize],
            timing_dies,
            pools: geo.dies,
            k: geo.slots_per_page.max(1) as u64,
            part: [0; 3],
            ratios: Vec::new(),
            ftl,
        }
    }

    pub fn ftl(&self) -> &Ftl {
        &self.ftl
    }

    pub fn ftl_mut(&mut self) -> &mut Ftl {
        &mut self.ftl
    }

    /// The drive's own counters (also in [`DeviceModel::stats`]).
    pub fn counters(&self) -> SsdCounters {
        SsdCounters {
            free_blocks: self.ftl.free_blocks(),
            ..self.counters
        }
    }

    /// The die serving mapped logical page `lpn`. Unscaled, its pool's die. On a scaled drive (fewer
    /// pools than dies) a pool's pages spread over the dies as a superblock's do: page `i` of
    /// pool `p` is on die `(i x pools + p) mod dies`, so that pages written in turn over the
    /// pools go to the dies in turn, and a collection's copies spread too.
    fn timing_die(&self, lpn: u32) -> u32 {
        let (pool, i) = self.ftl.pool_page(lpn).expect("a mapped page");
        if self.pools == self.timing_dies {
            return pool;
        }
        ((i * self.pools as u64 + pool as u64) % self.timing_dies as u64) as u32
    }

    /// Counts `slots` programmed, copied by collection (each also read) in whole pages: the
    /// counters stay in flash pages on a compressing drive, whose pages take parts of one.
    fn count_slots(&mut self, programmed: u64, copied: u64) {
        let k = self.k;
        let c = &mut self.counters;
        for (i, (add, to)) in [
            (programmed + copied, &mut c.programs),
            (copied, &mut c.gc_copies),
            (copied, &mut c.flash_reads),
        ]
        .into_iter()
        .enumerate()
        {
            self.part[i] += add;
            *to += self.part[i] / k;
            self.part[i] %= k;
        }
    }

    /// `ns` for `slots` of a page (`ns` a whole page's).
    fn per_slots(&self, ns: Ns, slots: u64) -> Ns {
        if self.k == 1 {
            ns * slots
        } else {
            (ns as u128 * slots as u128 / self.k as u128) as Ns
        }
    }

    /// The slots the `i`-th page of the write being served takes.
    fn page_slots(&self, i: usize) -> u32 {
        if self.k == 1 {
            return 1;
        }
        let r = self
            .ratios
            .get(i)
            .copied()
            .unwrap_or(self.p.unseen_data_ratio);
        self.p.slots_for(r)
    }

    /// Occupies the dies with `ns` of a pool's work (garbage collection, an erase) from `start`:
    /// unscaled, the pool's own die; scaled, every die its share (the pool's pages spread over
    /// them, as a superblock's), so that the die time a page costs is the full-size drive's.
    fn occupy_pool(&mut self, pool: u32, start: Ns, ns: Ns) {
        if self.pools == self.timing_dies {
            let d = pool as usize;
            self.die_free[d] = self.die_free[d].max(start) + ns;
            self.die_by[d] = self.seq;
            return;
        }
        let share = ns.div_ceil(self.timing_dies as u64);
        for d in 0..self.timing_dies as usize {
            self.die_free[d] = self.die_free[d].max(start) + share;
            self.die_by[d] = self.seq;
        }
    }

    fn channel(&self, die: u32) -> usize {
        (die as u64 % self.p.channels) as usize
    }

    fn xfer(bytes: u64, rate: u64) -> Ns {
        (bytes as u128 * 1_000_000_000 / rate.max(1) as u128) as Ns
    }

    /// The logical pages a byte range touches, within the device.
    fn pages(&self, offset: u64, len: u64) -> std::ops::Range<u32> {
        let ps = self.p.page_size;
        let first = (offset / ps).min(self.device_pages);
        let end = (offset + len).div_ceil(ps).min(self.device_pages);
        first as u32..end as u32
    }

    fn read(&mut self, start: Ns, rq: &Rq) -> Ns {
        let ps = self.p.page_size;
        let seq = self.seq;
        self.counters.read_bytes += rq.len;
        self.counters.read_sizes.add(rq.len);
        let mut last_page = start;
        for lpn in self.pages(rq.offset, rq.len) {
            if self.buffered.get(&lpn).is_some_and(|&end| end > start) {
                self.counters.buffer_reads += 1;
                continue;
            }
            let die = match self.ftl.page_state(lpn) {
                PageState::Mapped(_) => self.timing_die(lpn),
                PageState::Discarded => {
                    self.counters.discarded_reads += 1;
                    continue;
                }
                PageState::NeverWritten => {
                    self.counters.unwritten_reads += 1;
                    match self.unwritten {
                        UnwrittenReads::Free => continue,
                        // Written in order from erased, page `l` went to pool `l mod pools`
                        // as its `l / pools`-th page: die `l mod dies` (see `timing_die`).
                        UnwrittenReads::LbaOrder => lpn % self.timing_dies,
                    }
                }
            };
            let d = die as usize;
            if self.die_free[d] > start {
                if self.die_by[d] == seq {
                    self.counters.die_waits_same += 1;
                } else {
                    self.counters.die_waits_other += 1;
                }
                self.counters.die_wait_ns += self.die_free[d] - start;
            }
            if self.die_read_by[d] != seq {
                self.die_read_by[d] = seq;
                self.counters.read_dies += 1;
            }
            self.die_by[d] = seq;
            self.counters.host_flash_reads += 1;
            let read_start = self.die_free[d].max(start);
            let read_end = read_start + self.p.read_ns;
            let ch = self.channel(die);
            let ch_start = self.channel_free[ch].max(read_end);
            let ch_end = ch_start + Self::xfer(ps, self.p.channel_rate);
            // The die holds the page in its register until the channel takes it.
            self.die_free[d] = ch_end;
            self.channel_free[ch] = ch_end;
            self.counters.flash_reads += 1;
            self.counters.channel_ns += ch_end - ch_start;
            self.counters.die_ns += self.p.read_ns;
            last_page = last_page.max(ch_end);
        }
        // The interface carries the data as the pages come: it reserves the request's transfer
        // time at its earliest (so it caps the rate of all requests together without making a
        // request wait for another's flash reads), and the last page still has to cross it.
        let slot_end = self.interface_free.max(start) + Self::xfer(rq.len, self.p.interface_rate);
        self.interface_free = slot_end;
        slot_end.max(last_page + Self::xfer(rq.len.min(ps), self.p.interface_rate))
    }

    fn write(&mut self, start: Ns, rq: &Rq) -> Ns {
        let ps = self.p.page_size;
        let iface_start = self.interface_free.max(start);
        let arrived = iface_start + Self::xfer(rq.len, self.p.interface_rate);
        self.interface_free = arrived;
        let mut done = arrived;
        let first = self.pages(rq.offset, rq.len).start;
        for lpn in self.pages(rq.offset, rq.len) {
            // A slot in the buffer: at once if one is free, else when the earliest frees.
            let accepted = if self.slots == 0 || self.buffer.len() < self.slots {
                arrived
            } else {
                let Reverse(free_at) = self.buffer.pop().expect("a full buffer has slots");
                free_at.max(arrived)
            };
            let n = self.page_slots((lpn - first) as usize) as u64;
            let placed = self.ftl.write_slots(lpn, n as u32);
            self.counters.host_pages += 1;
            let die = self.timing_die(lpn);
            let d = die as usize;
            self.count_slots(n, placed.gc_copies as u64);
            if placed.gc_copies > 0 || placed.gc_erases > 0 {
                // Collection ran on the pool before the page was placed in it: unscaled, on
                // the pool's own die; scaled, spread over the dies as the pool's pages are (a
                // superblock's victim and copies are on every die).
                let gc = self
                    .per_slots(self.p.read_ns + self.p.program_ns, placed.gc_copies as u64)
                    + placed.gc_erases as Ns * self.p.erase_ns;
                self.occupy_pool(placed.die, accepted, gc);
                self.counters.gc_ns += gc;
                self.counters.erases += placed.gc_erases as u64;
                self.counters.die_ns += gc;
            }
            let die_ready = self.die_free[d].max(accepted);
            self.die_by[d] = self.seq;
            let ch = self.channel(die);
            let ch_start = self.channel_free[ch].max(accepted);
            let ch_end = ch_start + Self::xfer(self.per_slots(ps, n), self.p.channel_rate);
            self.channel_free[ch] = ch_end;
            let program = self.per_slots(self.p.program_ns, n);
            let program_end = die_ready.max(ch_end) + program;
            self.die_free[d] = program_end;
            self.counters.die_ns += program;
            self.counters.channel_ns += ch_end - ch_start;
            self.last_program_end = self.last_program_end.max(program_end);
            if self.slots == 0 {
                done = done.max(program_end);
            } else {
                self.buffer.push(Reverse(program_end));
                self.buffered.insert(lpn, program_end);
                self.counters.buffered_pages += 1;
                done = done.max(accepted);
            }
        }
        if self.buffered.len() > 4 * self.slots.max(1024) {
            let now = start;
            self.buffered.retain(|_, &mut end| end > now);
        }
        done
    }
}

impl DeviceModel for Ssd {
    fn wants_data(&self) -> bool {
        self.k > 1
    }

    fn submit_data(&mut self, now: Ns, rq: Rq, data: &[u8]) -> Option<Ns> {
        if rq.kind != RqKind::Write || self.k == 1 {
            return self.submit(now, rq);
        }
        // Each page's share of the data (a write need not start on a page).
        let ps = self.p.page_size;
        self.ratios = self
            .pages(rq.offset, rq.len)
            .map(|lpn| {
                let from = (lpn as u64 * ps).saturating_sub(rq.offset) as usize;
                let to = ((lpn as u64 + 1) * ps).saturating_sub(rq.offset) as usize;
                data.get(from.min(data.len())..to.min(data.len()))
                    .map_or(self.p.unseen_data_ratio, compressed_ratio)
            })
            .collect();
        let done = self.submit(now, rq);
        self.ratios.clear();
        done
    }

    fn submit(&mut self, now: Ns, rq: Rq) -> Option<Ns> {
        self.seq += 1;
        let start = now + self.p.overhead_ns;
        let done = match rq.kind {
            RqKind::Read => self.read(start, &rq),
            RqKind::Write => self.write(start, &rq),
            RqKind::Flush => self.last_program_end.max(start),
            RqKind::Discard | RqKind::WriteZeroes => {
                for lpn in self.pages(rq.offset, rq.len) {
                    if let Some(pool) = self.ftl.trim(lpn) {
                        // The erase of a wholly discarded block occupies its die, in the
                        // background: the discard does not wait for it.
                        self.occupy_pool(pool, start, self.p.erase_ns);
                        self.counters.erases += 1;
                        self.counters.die_ns += self.p.erase_ns;
                    }
                    self.buffered.remove(&lpn);
                }
                start
            }
        };
        self.requests.count(rq.kind);
        Some(done)
    }

    fn next_event(&self) -> Option<Ns> {
        None
    }

    fn advance(&mut self, _now: Ns, _done: &mut Vec<(u64, Ns)>) {}

    fn stats(&self) -> ModelStats {
        ModelStats::new(self.requests, DeviceCounters::Ssd(self.counters()))
    }

    fn feed(&mut self, rq: &Rq) {
        match rq.kind {
            RqKind::Write => {
                for lpn in self.pages(rq.offset, rq.len) {
                    let n = self.page_slots(usize::MAX) as u64;
                    let placed = self.ftl.write_slots(lpn, n as u32);
                    self.count_slots(n, placed.gc_copies as u64);
                    let c = &mut self.counters;
                    c.host_pages += 1;
                    c.erases += placed.gc_erases as u64;
                    self.buffered.remove(&lpn);
                }
            }
            RqKind::Discard | RqKind::WriteZeroes => {
                for lpn in self.pages(rq.offset, rq.len) {
                    if self.ftl.trim(lpn).is_some() {
                        self.counters.erases += 1;
                    }
                    self.buffered.remove(&lpn);
                }
            }
            RqKind::Read | RqKind::Flush => return,
        }
        self.requests.count(rq.kind);
    }

    fn set_unwritten_reads(&mut self, rule: UnwrittenReads) {
        self.unwritten = rule;
    }

    fn save_state(&self) -> Option<Vec<u8>> {
        Some(self.ftl.to_bytes())
    }

    fn describe_state(&self) -> Option<String> {
        let f = &self.ftl;
        let user = f.geometry().user_pages as u64;
        let mapped = f.mapped_pages();
        let known = f.known_pages();
        Some(if known == 0 {
            "erased (never written)".to_string()
        } else {
            let c = f.counters();
            format!(
                "{mapped} of {user} pages hold data, {} discarded, {} never written; {} pages \
                 written in its history, {} copied by garbage collection (write amplification \
                 {:.2}), {} erases",
                known - mapped,
                user - known,
                c.host_pages,
                c.gc_copies,
                (c.host_pages + c.gc_copies) as f64 / c.host_pages.max(1) as f64,
                c.erases
            )
        })
    }

    fn load_state(&mut self, bytes: &[u8]) -> crate::Result<()> {
        let ftl = Ftl::from_bytes(bytes)?;
        if ftl.geometry() != self.ftl.geometry() {
            return Err(Error::input(format!(
                "the saved drive has another shape ({:?}) than this model on this device ({:?})",
                ftl.geometry(),
                self.ftl.geometry()
            )));
        }
        self.ftl = ftl;
        self.buffered.clear();
        Ok(())
    }

    fn precondition(&mut self, overwrites: f64, seed: u64) -> crate::Result<String> {
        if !(0.0..=100.0).contains(&overwrites) {
            return Err(Error::input(format!(
                "{overwrites}: overwrites must be from 0 to 100 times the capacity"
            )));
        }
        let n = self.device_pages as u32;
        for l in 0..n {
            self.ftl.write(l);
        }
        let mut x = seed | 1;
        let random = (overwrites * n as f64) as u64;
        for _ in 0..random {
            // xorshift64*: uniform enough for wear, reproducible from the seed.
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            let r = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
            self.ftl.write((r % n as u64) as u32);
        }
        let c = self.ftl.counters();
        let wa = (c.host_pages + c.gc_copies) as f64 / c.host_pages.max(1) as f64;
        self.ftl.reset_counters();
        self.buffered.clear();
        Ok(format!(
            "{n} pages written in order, then {random} at random; write amplification {wa:.2}, \
             {} free blocks",
            self.ftl.free_blocks()
        ))
    }

    fn describe(&self) -> String {
        let g = self.ftl.geometry();
        let scaled = match self.p.full_capacity {
            Some(full) if self.pools < self.timing_dies => format!(
                ", scaled from {}: FTL pools of full-size dies {}",
                fsage_units::format_size(full),
                self.pools
            ),
            _ => String::new(),
        };
        format!(
            "SSD: {} channels x {} dies, {} KiB pages, {} pages per block, {:.1}% over-provisioned, \
             read {} / program {} / erase {}{scaled}",
            self.p.channels,
            self.p.dies_per_channel,
            self.p.page_size / 1024,
            g.pages_per_block,
            100.0 * (1.0 - g.user_pages as f64 / g.physical_pages() as f64),
            fsage_units::format_latency(self.p.read_ns),
            fsage_units::format_latency(self.p.program_ns),
            fsage_units::format_latency(self.p.erase_ns),
        )
    }
}

#[cfg(test)]
mod tests;

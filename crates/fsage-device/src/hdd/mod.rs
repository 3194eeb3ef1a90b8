//! A hard disk: seeks from a curve fitted to a datasheet, the platter's angle tracked in time, zoned
//! transfer rates, head and cylinder switches, a segmented read-ahead cache, a write-back cache
//! with flushes that drain it, and a command queue served shortest-positioning-time-first.
//!
//! # How a request is served
//!
//! Requests wait in the drive's queue (at most `queue_depth`; more wait outside in arrival order).
//! When the mechanism is free, it takes the queued request whose positioning time (command
//! overhead, seek, then the wait until its first sector comes round) is shortest; a request that
//! has waited longer than `max_wait` goes first, oldest first. With one request in the queue this
//! is first come, first served. Serving it: overhead, seek (the write curve for writes, which
//! includes the settle), the rotational wait computed from the platter's angle at that moment
//! (angle = time / revolution, so it is tracked, not averaged), then the transfer across tracks at
//! the zone's rate, each track or cylinder boundary adding its switch time.
//!
//! - **Read-ahead**: after a read from the media the drive reads on into a cache segment at media
//!   rate while it has nothing else to do, up to `read_ahead` bytes; a read lying in what a
//!   segment holds by its arrival is a hit (overhead and interface transfer only); a read that
//!   lies in what the segment being filled will hold waits until the stream has reached its end
//!   (also when it starts ahead of the stream, as the second half of a split request does). Any
//!   other work stops the stream. A segment holds what its read brought in plus `read_ahead`
//!   bytes: as the stream reads on, its oldest data leaves it (a ring), so a stream a gigabyte
//!   long does not leave a gigabyte cached. `read_segments` segments, least recently used
//!   replaced.
//! - **Queued reads on the stream**: when the mechanism comes free, reads waiting in the queue
//!   that the read-ahead stream reaches (a sequential stream at a depth above 1: the next
//!   requests were queued while the one before was read) are served from the stream, in order of
//!   address, before any other queued request; each reaching further keeps the stream going. A
//!   drive streaming a sequential read does not stop to position for the next command of the
//!   same stream: without this, each such read paid the command overhead, during which its first
//!   sector passed under the head, and waited a revolution for it, or SPTF took a read further on
//!   whose sector came round sooner and came back later (a seek): 63-66 MB/s at depths 2 to 8
//!   instead of the 125 MB/s of depth 1.
//! - **Write cache** (`write_cache` bytes; 0 means write-through): a write that fits is
//!   acknowledged after overhead and interface transfer and becomes dirty; the drive writes
//!   dirty data back when it has nothing else to do, nearest extent first. A write that does not
//!   fit goes to the media like a read. A read of dirty data is a hit. A flush waits for every
//!   request before it and then for the cache to be empty; requests after it wait for it.
//!   Write-through: writes go to the media, a flush costs its overhead only.
//! - **Discard**: drops cached data of the range, costs the overhead. **Write-zeroes**: a write.
//!
//! Not modeled: error recovery and retries, thermal recalibration, the drive splitting or merging
//! requests, spin-down, an idle delay before write-back, separate seek curves inwards and
//! outwards.

pub mod geometry;
pub mod kind;
pub mod seek;

mod cache;
mod counters;

use cache::Segment;
pub use counters::HddCounters;

use crate::{DeviceCounters, DeviceModel, Error, ModelStats, Ns, Requests, Rq, RqKind};
use geometry::{Geometry, SECTOR};
use seek::SeekCurve;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

/// A hard disk's parameters, in base units (ns, bytes, bytes per second).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HddParams {
    pub rpm: f64,
    /// The disk's size; a smaller device sits at `offset` on it. None: as big as the device.
    pub capacity: Option<u64>,
    /// Where the device starts on the disk (0: the outer edge).
    pub offset: u64,
    pub heads: u64,
    pub zones: u64,
    /// Media rates under the head on the outermost and innermost tracks.
    pub rate_outer: u64,
    pub rate_inner: u64,
    pub seek_track_ns: u64,
    pub seek_avg_ns: u64,
    pub seek_full_ns: u64,
    pub write_seek_track_ns: u64,
    pub write_seek_avg_ns: u64,
    pub write_seek_full_ns: u64,
    pub head_switch_ns: u64,
    /// Per command, before any mechanical work.
    pub overhead_ns: u64,
    /// Between the drive's buffer and the host.
    pub interface_rate: u64,
    pub read_segments: u64,
    pub read_ahead: u64,
    /// Write-back cache size; 0: write-through.
    pub write_cache: u64,
    pub queue_depth: u64,
    /// A request waiting longer goes first (no starvation under SPTF).
    pub max_wait_ns: u64,
}

/// Something the mechanism is doing.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    /// Serving a request from the media.
    Request { id: u64, kind: RqKind },
    /// Writing a dirty extent back: sectors [start, end).
    WriteBack { start: u64, end: u64 },
    /// Waiting for the read-ahead stream to reach a read's end (the stream goes on).
    Streaming,
}

#[derive(Debug, Clone, Copy)]
struct Queued {
    id: u64,
    /// Order of submission (flushes are barriers in this order).
    seq: u64,
    kind: RqKind,
    lba: u64,
    sectors: u64,
    arrival: Ns,
}

/// The hard-disk model.
pub struct Hdd {
    p: HddParams,
    g: Geometry,
    read_seek: SeekCurve,
    write_seek: SeekCurve,
    /// The device's first sector on the disk.
    base: u64,
    /// The model's clock: the last time given.
    now: Ns,
    /// Head position.
    cyl: u64,
    head: u64,
    /// What the mechanism does, and until when.
    busy: Option<(Op, f64)>,
    queue: Vec<Queued>,
    outside: VecDeque<Queued>,
    /// Flushes waiting, in arrival order; requests that arrived after the first wait behind it.
    flushes: VecDeque<Queued>,
    behind_flush: VecDeque<Queued>,
    segments: Vec<Segment>,
    /// Dirty sectors: start -> end, disjoint, not touching.
    dirty: BTreeMap<u64, u64>,
    dirty_sectors: u64,
    seq: u64,
    /// Queued reads served from the read-ahead stream: (completion, id), earliest first.
    streamed: BinaryHeap<Reverse<(Ns, u64)>>,
    requests: Requests,
    counters: HddCounters,
}

impl Hdd {
    pub fn new(p: &HddParams, device_size: u64) -> crate::Result<Hdd> {
        let capacity = p.capacity.unwrap_or(device_size);
        if p.offset + device_size > capacity {
            return Err(Error::input(format!(
                "a device of {} at {} does not fit on a disk of {}",
                fsage_units::format_size(device_size),
                fsage_units::format_size(p.offset),
                fsage_units::format_size(capacity)
            )));
        }
        if p.rate_inner > p.rate_outer || p.rate_inner == 0 {
            return Err(Error::input(
                "the inner media rate must be positive and at most the outer",
            ));
        }
        if p.queue_depth == 0 || p.read_segments == 0 {
            return Err(Error::input(
                "queue_depth and read_segments must be at least 1",
            ));
        }
        let g = Geometry::new(
            capacity.max(SECTOR * 64),
            p.heads,
            p.zones,
            p.rpm,
            p.rate_outer as f64,
            p.rate_inner as f64,
            p.head_switch_ns as f64,
            p.seek_track_ns as f64,
        )?;
        let max_d = g.cylinders - 1;
        let read_seek = SeekCurve::fit(
            p.seek_track_ns as f64,
            p.seek_avg_ns as f64,
            p.seek_full_ns as f64,
            max_d,
        )
        .map_err(|e| Error::input(format!("read seeks: {e}")))?;
        let write_seek = SeekCurve::fit(
            p.write_seek_track_ns as f64,
            p.write_seek_avg_ns as f64,
            p.write_seek_full_ns as f64,
            max_d,
        )
        .map_err(|e| Error::input(format!("write seeks: {e}")))?;
        Ok(Hdd {
            base: p.offset / SECTOR,
            p: p.clone(),
            g,
            read_seek,
            write_seek,
            now: 0,
            cyl: 0,
            head: 0,
            busy: None,
            queue: Vec::new(),
            outside: VecDeque::new(),
            flushes: VecDeque::new(),
            behind_flush: VecDeque::new(),
            segments: Vec::new(),
            dirty: BTreeMap::new(),
            dirty_sectors: 0,
            seq: 0,
            streamed: BinaryHeap::new(),
            requests: Requests::default(),
            counters: HddCounters::default(),
        })
    }

    /// The disk's own counters (also in [`DeviceModel::stats`]).
    pub fn counters(&self) -> &HddCounters {
        &self.counters
    }

    pub fn geometry(&self) -> &Geometry {
        &self.g
    }

    pub fn read_seek(&self) -> &SeekCurve {
        &self.read_seek
    }

    /// The average access time of a 4 KiB read at depth 1 over the whole disk, by the
    /// datasheet's figures: overhead, average seek, half a revolution, the transfer.
    pub fn datasheet_access_ns(&self) -> f64 {
        self.p.overhead_ns as f64
            + self.p.seek_avg_ns as f64
            + self.g.rev_ns / 2.0
            + 4096.0 / self.p.rate_outer as f64 * 1e9
    }

    fn interface_ns(&self, bytes: u64) -> f64 {
        bytes as f64 * 1e9 / self.p.interface_rate as f64
    }

    fn sustained(&self, lba: u64) -> f64 {
        self.g.sustained_rate(lba)
    }

    /// Overhead, seek and rotational wait to start `q` at time `t`.
    fn positioning(&self, t: f64, q: &Queued) -> (f64, f64, f64) {
        let c = self.g.chs(q.lba.min(self.g.sectors.saturating_sub(1)));
        let write = matches!(q.kind, RqKind::Write | RqKind::WriteZeroes);
        let d = c.cyl.abs_diff(self.cyl);
        let seek = if d > 0 {
            if write {
                self.write_seek.time(d)
            } else {
                self.read_seek.time(d)
            }
        } else if c.head != self.head {
            self.p.head_switch_ns as f64
        } else {
            0.0
        };
        let over = self.p.overhead_ns as f64;
        let at = t + over + seek;
        let angle = (at / self.g.rev_ns).fract();
        let wait = (self.g.angle(c) - angle).rem_euclid(1.0) * self.g.rev_ns;
        (over, seek, wait)
    }

    /// Starts whatever comes next at time `t`, if the mechanism is free.
    fn start_next(&mut self, t: f64) {
        if self.busy.is_some() {
            return;
        }
        while self.queue.len() < self.p.queue_depth as usize {
            match self.outside.pop_front() {
                Some(q) => self.queue.push(q),
                None => break,
            }
        }
        // Queued reads the read-ahead stream reaches go first, from the stream.
        if self.stream_queued(t) {
            return;
        }
        if let Some(i) = self.choose(t) {
            let q = self.queue.swap_remove(i);
            self.serve(t, q);
            return;
        }
        // Nothing queued. A flush waiting for the cache to empty, or idle time: write back.
        let streaming = self.segments.iter().any(|s| s.stream.is_some());
        if !self.dirty.is_empty() && (!self.flushes.is_empty() || !streaming) {
            self.write_back(t);
        }
    }

    /// Serves from the read-ahead stream every queued read it reaches at `t` (the mechanism being
    /// free), lowest address first, so that each extends the stream for the next. Returns
    /// whether the stream serves any (the mechanism is then busy streaming).
    fn stream_queued(&mut self, t: f64) -> bool {
        if self.queue.is_empty() || !self.segments.iter().any(|s| s.stream.is_some()) {
            return false;
        }
        let mut served = false;
        loop {
            let mut reads: Vec<Queued> = self
                .queue
                .iter()
                .filter(|q| q.kind == RqKind::Read)
                .copied()
                .collect();
            reads.sort_by_key(|q| (q.lba, q.seq));
            let mut taken = Vec::new();
            for q in reads {
                if let Some(done) = self.read_hit(t, q.lba, q.sectors) {
                    self.counters.read_hits += 1;
                    self.streamed.push(Reverse((done.ceil() as Ns, q.id)));
                    taken.push(q.seq);
                }
            }
            if taken.is_empty() {
                break;
            }
            // (A read that one taken later brought within reach is taken on the next pass.)
            self.queue.retain(|q| !taken.contains(&q.seq));
            served = true;
        }
        served && matches!(self.busy, Some((Op::Streaming, _)))
    }

    /// The queued request to serve at `t`: the oldest one past the age limit, else the one with
    /// the shortest positioning time.
    fn choose(&self, t: f64) -> Option<usize> {
        if self.queue.is_empty() {
            return None;
        }
        let old = self
            .queue
            .iter()
            .enumerate()
            .filter(|(_, q)| t - q.arrival as f64 > self.p.max_wait_ns as f64)
            .min_by_key(|(_, q)| (q.arrival, q.id));
        if let Some((i, _)) = old {
            return Some(i);
        }
        self.queue
            .iter()
            .enumerate()
            .map(|(i, q)| {
                let (o, s, w) = self.positioning(t, q);
                (i, o + s + w, q.arrival, q.id)
            })
            .min_by(|a, b| a.1.total_cmp(&b.1).then(a.2.cmp(&b.2)).then(a.3.cmp(&b.3)))
            .map(|x| x.0)
    }

    /// Charges a media access starting at `t` on `c`'s cylinder to the counters (a seek when
    /// the cylinder changes; `pos` = command overhead, seek and rotational wait, then `xfer`),
    /// leaves the heads on `last`, and says when the access ends.
    fn access(
        &mut self,
        t: f64,
        c: geometry::Chs,
        pos: (f64, f64, f64),
        xfer: f64,
        last: geometry::Chs,
    ) -> f64 {
        let (over, seek, wait) = pos;
        if c.cyl != self.cyl {
            self.counters.seeks += 1;
        }
        self.counters.seek_ns += seek as Ns;
        self.counters.rotation_ns += wait as Ns;
        self.counters.transfer_ns += xfer as Ns;
        let done = t + over + seek + wait + xfer;
        self.counters.busy_ns += (done - t) as Ns;
        self.cyl = last.cyl;
        self.head = last.head;
        done
    }

    fn serve(&mut self, t: f64, q: Queued) {
        self.freeze_streams(t);
        let pos = self.positioning(t, &q);
        let c = self.g.chs(q.lba.min(self.g.sectors.saturating_sub(1)));
        let (xfer, end) = self.g.transfer(c, q.sectors, q.lba);
        let last = self.g.chs(end.saturating_sub(1).max(q.lba));
        let done = self.access(t, c, pos, xfer, last);
        if q.kind == RqKind::Read {
            self.read_ahead_from(q.lba, end, done);
        } else {
            self.remove_dirty(q.lba, q.sectors);
            self.drop_segments(q.lba, q.sectors);
        }
        self.busy = Some((
            Op::Request {
                id: q.id,
                kind: q.kind,
            },
            done,
        ));
    }

    /// Completes flushes whose turn has come (nothing before them left, the cache empty) and
    /// lets the requests behind them in.
    fn settle_flushes(&mut self, t: f64, done: &mut Vec<(u64, Ns)>) {
        loop {
            let Some(f) = self.flushes.front().copied() else {
                return;
            };
            let clear = self.queue.is_empty()
                && self.outside.is_empty()
                && self.dirty.is_empty()
                && !matches!(
                    self.busy,
                    Some((Op::Request { .. } | Op::WriteBack { .. }, _))
                );
            if !clear {
                return;
            }
            self.flushes.pop_front();
            let at = (t.max(f.arrival as f64) + self.p.overhead_ns as f64) as Ns;
            self.requests.count(RqKind::Flush);
            done.push((f.id, at));
            // Requests that came after this flush and before the next one go in.
            let next = self.flushes.front().map(|g| g.seq).unwrap_or(u64::MAX);
            while let Some(q) = self.behind_flush.front().copied() {
                if q.seq > next {
                    break;
                }
                self.behind_flush.pop_front();
                self.admit(q);
            }
        }
    }

    fn admit(&mut self, q: Queued) {
        self.outside.push_back(q);
    }

    fn model_lba(&self, offset: u64) -> u64 {
        self.base + offset / SECTOR
    }
}

impl DeviceModel for Hdd {
    fn submit(&mut self, now: Ns, rq: Rq) -> Option<Ns> {
        let now = now.max(self.now);
        self.now = now;
        let t = now as f64;
        let lba = self.model_lba(rq.offset);
        let sectors = rq.len.div_ceil(SECTOR).max(u64::from(
            rq.kind.moves_data() || rq.kind == RqKind::WriteZeroes,
        ));
        self.seq += 1;
        let q = Queued {
            id: rq.id,
            seq: self.seq,
            kind: rq.kind,
            lba,
            sectors,
            arrival: now,
        };
        // Requests behind a flush wait for it.
        if !self.flushes.is_empty() {
            if rq.kind == RqKind::Flush {
                self.flushes.push_back(q);
            } else {
                self.behind_flush.push_back(q);
            }
            return None;
        }
        let answer = match rq.kind {
            RqKind::Flush => {
                self.flushes.push_back(q);
                let mut done = Vec::new();
                self.settle_flushes(t, &mut done);
                if let Some(&(_, at)) = done.first() {
                    return Some(at);
                }
                self.start_next(t);
                return None;
            }
            RqKind::Discard => {
                self.remove_dirty(lba, sectors);
                self.drop_segments(lba, sectors);
                self.requests.count(RqKind::Discard);
                Some(t + self.p.overhead_ns as f64)
            }
            RqKind::Read => {
                let hit = self.read_hit(t, lba, sectors);
                if hit.is_some() {
                    self.counters.read_hits += 1;
                    self.requests.count(RqKind::Read);
                }
                hit
            }
            RqKind::Write | RqKind::WriteZeroes => {
                let cap = self.p.write_cache / SECTOR;
                if cap > 0 && self.dirty_sectors + sectors <= cap {
                    self.drop_segments(lba, sectors);
                    self.add_dirty(lba, sectors);
                    self.counters.cached_writes += 1;
                    self.requests.count(rq.kind);
                    Some(t + self.p.overhead_ns as f64 + self.interface_ns(sectors * SECTOR))
                } else {
                    None
                }
            }
        };
        if let Some(at) = answer {
            // The drive may have been idle: a cached write gives write-back work.
            if self.busy.is_none() {
                self.start_next(t);
            }
            return Some(at.ceil() as Ns);
        }
        // A read the stream cannot serve waits for any stream promise made, then stops it.
        self.admit(q);
        self.start_next(t);
        None
    }

    fn next_event(&self) -> Option<Ns> {
        let streamed = self
            .streamed
            .peek()
            .map(|Reverse((t, _))| (*t).max(self.now));
        if let Some((_, end)) = self.busy {
            let end = (end.ceil() as Ns).max(self.now);
            return Some(streamed.map_or(end, |s| s.min(end)));
        }
        if streamed.is_some() {
            return streamed;
        }
        // Idle but streaming with dirty data waiting: write-back starts when the stream ends.
        if !self.dirty.is_empty() {
            let end = self
                .segments
                .iter()
                .filter_map(|s| {
                    s.stream.map(|(from, t0, limit)| {
                        t0 + (limit - from) as f64 / self.sustained(s.start)
                    })
                })
                .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
            if let Some(e) = end {
                return Some((e.ceil() as Ns).max(self.now));
            }
        }
        None
    }

    fn advance(&mut self, now: Ns, done: &mut Vec<(u64, Ns)>) {
        while let Some(ev) = self.next_event().filter(|&e| e <= now) {
            let t = ev as f64;
            self.now = self.now.max(ev);
            // Queued reads the stream served whose time has come.
            let mut streamed = false;
            while let Some(&Reverse((at, id))) = self.streamed.peek() {
                if at > ev {
                    break;
                }
                self.streamed.pop();
                self.requests.count(RqKind::Read);
                done.push((id, at));
                streamed = true;
            }
            match self.busy {
                Some((_, end)) if end.ceil() as Ns > ev => {}
                Some((Op::Request { id, kind }, end)) => {
                    self.busy = None;
                    self.requests.count(kind);
                    done.push((id, end.ceil() as Ns));
                }
                Some((Op::WriteBack { start, end }, _)) => {
                    self.busy = None;
                    self.remove_dirty(start, end - start);
                    self.counters.write_backs += 1;
                }
                Some((Op::Streaming, _)) => self.busy = None,
                None if streamed => {}
                None => {
                    // A stream ended with dirty data waiting.
                    self.freeze_streams(t);
                }
            }
            self.settle_flushes(t, done);
            self.start_next(t);
        }
        self.now = self.now.max(now);
    }

    fn stats(&self) -> ModelStats {
        ModelStats::new(self.requests, DeviceCounters::Hdd(self.counters))
    }

    fn describe(&self) -> String {
        format!(
            "hard disk: {} rpm, {} cylinders x {} heads, {} zones, {}-{}, seek {}/{}/{}, write \
             cache {}, queue depth {}",
            self.p.rpm,
            self.g.cylinders,
            self.g.heads,
            self.g.zones.len(),
            fsage_units::format_bandwidth(self.p.rate_inner as f64),
            fsage_units::format_bandwidth(self.p.rate_outer as f64),
            fsage_units::format_latency(self.p.seek_track_ns),
            fsage_units::format_latency(self.p.seek_avg_ns),
            fsage_units::format_latency(self.p.seek_full_ns),
            if self.p.write_cache == 0 {
                "off".to_string()
            } else {
                fsage_units::format_size(self.p.write_cache)
            },
            self.p.queue_depth
        )
    }
}

#[cfg(test)]
mod tests;

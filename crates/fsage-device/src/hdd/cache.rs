//! The drive's buffer: read-ahead segments and the streams that fill them, and the write cache
//! (dirty extents, written back when the mechanism has nothing else to do).

use super::*;

/// A read-ahead segment: sectors [start, valid) read, of which the last `cap` are held; while
/// `stream` is set, `valid` grows from `from` at the sustained rate from time `t0`, up to `limit`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Segment {
    pub(super) start: u64,
    pub(super) valid: u64,
    pub(super) cap: u64,
    pub(super) stream: Option<(u64, f64, u64)>, // (from, t0, limit)
    pub(super) used: Ns,
}

impl Segment {
    /// The first sector still held when the segment holds up to `valid`.
    pub(super) fn held_from(&self, valid: u64) -> u64 {
        self.start.max(valid.saturating_sub(self.cap))
    }

    pub(super) fn valid_at(&self, now: f64, rate: f64) -> u64 {
        match self.stream {
            Some((from, t0, limit)) => {
                // (A thousandth of a sector of slack: times are rounded to the nanosecond.)
                let n = ((now - t0).max(0.0) * rate + 1e-3) as u64;
                (from + n).min(limit)
            }
            None => self.valid,
        }
    }
}

impl Hdd {
    /// Stops every read-ahead stream at `t`; the head is where the stream got to.
    pub(super) fn freeze_streams(&mut self, t: f64) {
        for i in 0..self.segments.len() {
            let s = self.segments[i];
            if s.stream.is_some() {
                let v = s.valid_at(t, self.g.sustained_rate(s.start));
                self.segments[i].valid = v;
                self.segments[i].stream = None;
                let at = self.g.chs(v.min(self.g.sectors - 1));
                self.cyl = at.cyl;
                self.head = at.head;
            }
        }
    }

    /// Is [lba, lba+n) all dirty?
    pub(super) fn all_dirty(&self, lba: u64, n: u64) -> bool {
        match self.dirty.range(..=lba).next_back() {
            Some((_, &end)) => end >= lba + n,
            None => false,
        }
    }

    pub(super) fn add_dirty(&mut self, lba: u64, n: u64) {
        let (mut s, mut e) = (lba, lba + n);
        // Merge with every extent that overlaps or touches [s, e).
        let overlapping: Vec<(u64, u64)> = self
            .dirty
            .range(..=e)
            .rev()
            .take_while(|(_, &end)| end >= s)
            .map(|(&a, &b)| (a, b))
            .collect();
        for (a, b) in overlapping {
            self.dirty.remove(&a);
            self.dirty_sectors -= b - a;
            s = s.min(a);
            e = e.max(b);
        }
        self.dirty.insert(s, e);
        self.dirty_sectors += e - s;
    }

    pub(super) fn remove_dirty(&mut self, lba: u64, n: u64) {
        let (s, e) = (lba, lba + n);
        let hit: Vec<(u64, u64)> = self
            .dirty
            .range(..e)
            .rev()
            .take_while(|(_, &end)| end > s)
            .map(|(&a, &b)| (a, b))
            .collect();
        for (a, b) in hit {
            self.dirty.remove(&a);
            self.dirty_sectors -= b - a;
            if a < s {
                self.dirty.insert(a, s);
                self.dirty_sectors += s - a;
            }
            if b > e {
                self.dirty.insert(e, b);
                self.dirty_sectors += b - e;
            }
        }
    }

    pub(super) fn drop_segments(&mut self, lba: u64, n: u64) {
        self.segments
            .retain(|s| s.valid <= lba || s.held_from(s.valid) >= lba + n || s.stream.is_some());
    }

    /// A read served from the buffer, if it can be: its completion time.
    pub(super) fn read_hit(&mut self, now: f64, lba: u64, n: u64) -> Option<f64> {
        let tail = self.p.overhead_ns as f64 + self.interface_ns(n * SECTOR);
        if self.all_dirty(lba, n) {
            return Some(now + tail);
        }
        let idle_streaming = !matches!(
            self.busy,
            Some((Op::Request { .. } | Op::WriteBack { .. }, _))
        );
        for i in 0..self.segments.len() {
            let s = self.segments[i];
            let rate = self.g.sustained_rate(s.start);
            // What the segment holds now: its oldest data has left as the stream read on.
            if lba < s.held_from(s.valid_at(now, rate)) {
                continue;
            }
            // The host reads on along the stream: keep reading ahead of it.
            let extend = |seg: &mut Segment, ra: u64, max: u64| {
                if let Some((_, _, limit)) = &mut seg.stream {
                    *limit = (*limit).max((lba + n + ra).min(max));
                }
            };
            let (ra, max) = (self.p.read_ahead / SECTOR, self.g.sectors);
            if lba + n <= s.valid_at(now, rate) {
                self.segments[i].used = now as Ns;
                extend(&mut self.segments[i], ra, max);
                return Some(now + tail);
            }
            if let Some((from, t0, limit)) = s.stream {
                // A read ahead of what the stream holds but within its reach waits for it too:
                // the head is already reading towards it (two halves of a split request).
                if idle_streaming && lba + n <= limit {
                    extend(&mut self.segments[i], ra, max);
                    let reach = t0 + (lba + n - from) as f64 / rate;
                    self.segments[i].used = now as Ns;
                    // The data leaves for the host as the stream reads it.
                    let done = reach.max(now + tail);
                    let since = match self.busy {
                        Some((Op::Streaming, u)) => u.max(now),
                        _ => now,
                    };
                    // The media is busy serving the host while the stream reads for it.
                    self.counters.busy_ns += (done - since).max(0.0) as Ns;
                    self.busy = Some((Op::Streaming, since.max(done)));
                    return Some(done);
                }
            }
        }
        None
    }

    /// A new read-ahead segment for a read of [start, end) that ended at `t`.
    pub(super) fn read_ahead_from(&mut self, start: u64, end: u64, t: f64) {
        let limit = (end + self.p.read_ahead / SECTOR).min(self.g.sectors);
        if let Some(i) = self
            .segments
            .iter()
            .position(|s| s.held_from(s.valid) <= start && start <= s.valid)
        {
            self.segments.remove(i);
        }
        if self.segments.len() as u64 >= self.p.read_segments {
            if let Some(i) = (0..self.segments.len()).min_by_key(|&i| self.segments[i].used) {
                self.segments.remove(i);
            }
        }
        self.segments.push(Segment {
            start,
            valid: end,
            cap: limit - start,
            stream: (limit > end).then_some((end, t, limit)),
            used: t as Ns,
        });
    }

    /// Writes back the dirty extent nearest the head (by positioning time of the two extents
    /// either side of it), at most a cylinder's worth at a time.
    pub(super) fn write_back(&mut self, t: f64) {
        self.freeze_streams(t);
        let head_lba = self.g.track_lba(self.cyl, self.head);
        let after = self.dirty.range(head_lba..).next().map(|(&a, &b)| (a, b));
        let before = self
            .dirty
            .range(..head_lba)
            .next_back()
            .map(|(&a, &b)| (a, b));
        let cost = |(a, _): (u64, u64)| {
            let q = Queued {
                id: 0,
                seq: 0,
                kind: RqKind::Write,
                lba: a,
                sectors: 1,
                arrival: 0,
            };
            let (o, s, w) = self.positioning(t, &q);
            o + s + w
        };
        let pick = match (before, after) {
            (Some(b), Some(a)) => {
                if cost(b) < cost(a) {
                    b
                } else {
                    a
                }
            }
            (Some(x), None) | (None, Some(x)) => x,
            (None, None) => return,
        };
        let chunk = (pick.1 - pick.0).min(self.g.zone_of(pick.0).spt * self.g.heads);
        let q = Queued {
            id: 0,
            seq: 0,
            kind: RqKind::Write,
            lba: pick.0,
            sectors: chunk,
            arrival: 0,
        };
        let pos = self.positioning(t, &q);
        let c = self.g.chs(pick.0);
        let (xfer, end) = self.g.transfer(c, chunk, pick.0);
        let last = self.g.chs(end - 1);
        let done = self.access(t, c, pos, xfer, last);
        self.busy = Some((
            Op::WriteBack {
                start: pick.0,
                end: pick.0 + chunk,
            },
            done,
        ));
    }
}

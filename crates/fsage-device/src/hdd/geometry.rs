//! Where a sector is: zones of equal radial width whose sectors per track fall linearly from the
//! outer to the inner edge (zoned bit recording: outer tracks are longer and pass the head faster),
//! a conventional layout (every head of a cylinder, then the next cylinder inwards; LBA 0 on the
//! outer edge), and where on the platter's circle each sector starts, with the track skew that
//! lets a transfer crossing to the next track lose only the switch time, not a revolution.

use crate::Error;

/// Bytes per sector.
pub const SECTOR: u64 = 512;

/// The most heads and zones a model may give a disk.
pub const MAX_HEADS: u64 = 1024;
pub const MAX_ZONES: u64 = 10_000;

/// One zone: a band of cylinders with the same sectors per track.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Zone {
    pub first_lba: u64,
    pub first_cyl: u64,
    pub cylinders: u64,
    pub spt: u64,
}

/// A sector's place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chs {
    pub cyl: u64,
    pub head: u64,
    /// Sector index within its track.
    pub sector: u64,
    /// Sectors on this track.
    pub spt: u64,
}

#[derive(Debug, Clone)]
pub struct Geometry {
    pub zones: Vec<Zone>,
    pub heads: u64,
    pub cylinders: u64,
    pub sectors: u64,
    /// One revolution, ns.
    pub rev_ns: f64,
    pub head_switch_ns: f64,
    /// Moving to the next cylinder during a sequential transfer (a single-track seek).
    pub cyl_switch_ns: f64,
}

impl Geometry {
    /// A disk of `capacity` bytes with `heads` surfaces and `zones` zones, whose outer and
    /// inner tracks pass `rate_outer` and `rate_inner` bytes per second under the head.
    #[allow(clippy::too_many_arguments)] // the disk's eight figures, each named at the call
    pub fn new(
        capacity: u64,
        heads: u64,
        zones: u64,
        rpm: f64,
        rate_outer: f64,
        rate_inner: f64,
        head_switch_ns: f64,
        cyl_switch_ns: f64,
    ) -> crate::Result<Geometry> {
        let rev_ns = 60e9 / rpm;
        let spt_at = |r: f64| (r * rev_ns / 1e9 / SECTOR as f64).round().max(1.0) as u64;
        let (outer, inner) = (spt_at(rate_outer), spt_at(rate_inner));
        if heads == 0 || zones == 0 {
            return Err(Error::input("heads and zones must be at least 1"));
        }
        // Bounds far above any disk's, so that a model file cannot ask for a table that fills
        // the memory or figures that overflow.
        if heads > MAX_HEADS || zones > MAX_ZONES {
            return Err(Error::input(format!(
                "heads {heads} and zones {zones}: at most {MAX_HEADS} heads and {MAX_ZONES} zones"
            )));
        }
        let overflow = || {
            Error::input(format!(
                "a disk of {capacity} bytes, {heads} heads and these rates has more sectors than \
                 fsage can number"
            ))
        };
        let spt: Vec<u64> = (0..zones)
            .map(|z| {
                let f = if zones == 1 {
                    0.0
                } else {
                    z as f64 / (zones - 1) as f64
                };
                (outer as f64 - (outer as f64 - inner as f64) * f).round() as u64
            })
            .collect();
        let sectors = capacity / SECTOR;
        let per_cyl_all = spt
            .iter()
            .try_fold(0u64, |a, s| a.checked_add(s.checked_mul(heads)?))
            .ok_or_else(overflow)?;
        // Cylinders per zone so that the zones hold at least the capacity.
        let per_zone = sectors.div_ceil(per_cyl_all).max(1);
        let mut v = Vec::with_capacity(zones as usize);
        let (mut lba, mut cyl) = (0u64, 0u64);
        for s in spt {
            v.push(Zone {
                first_lba: lba,
                first_cyl: cyl,
                cylinders: per_zone,
                spt: s,
            });
            lba = per_zone
                .checked_mul(heads)
                .and_then(|x| x.checked_mul(s))
                .and_then(|x| x.checked_add(lba))
                .ok_or_else(overflow)?;
            cyl = cyl.checked_add(per_zone).ok_or_else(overflow)?;
        }
        Ok(Geometry {
            zones: v,
            heads,
            cylinders: cyl,
            sectors,
            rev_ns,
            head_switch_ns,
            cyl_switch_ns,
        })
    }

    pub fn zone_of(&self, lba: u64) -> &Zone {
        let i = self.zones.partition_point(|z| z.first_lba <= lba);
        &self.zones[i.saturating_sub(1)]
    }

    pub fn chs(&self, lba: u64) -> Chs {
        let z = self.zone_of(lba);
        let within = lba - z.first_lba;
        let track = within / z.spt;
        Chs {
            cyl: z.first_cyl + track / self.heads,
            head: track % self.heads,
            sector: within % z.spt,
            spt: z.spt,
        }
    }

    /// The first sector of the track at (`cyl`, `head`).
    pub fn track_lba(&self, cyl: u64, head: u64) -> u64 {
        let i = self.zones.partition_point(|z| z.first_cyl <= cyl);
        let z = &self.zones[i.saturating_sub(1)];
        z.first_lba + ((cyl - z.first_cyl) * self.heads + head) * z.spt
    }

    /// Where on the circle (0..1) the first sector of the track at (`cyl`, `head`) starts: each
    /// track is turned by the switch time that leads to it, so a transfer running on into it
    /// finds its first sector just arriving.
    pub fn track_start(&self, cyl: u64, head: u64) -> f64 {
        let heads_switched = cyl * (self.heads - 1) + head;
        let t = heads_switched as f64 * self.head_switch_ns + cyl as f64 * self.cyl_switch_ns;
        (t / self.rev_ns).fract()
    }

    /// Where sector `c` starts on the circle (0..1).
    pub fn angle(&self, c: Chs) -> f64 {
        (self.track_start(c.cyl, c.head) + c.sector as f64 / c.spt as f64).fract()
    }

    /// How long the platter needs to pass `n` sectors from `c` on, switching heads and
    /// cylinders as the transfer runs on; returns the time and where it ends (the place of the
    /// sector after the last).
    pub fn transfer(&self, c: Chs, n: u64, lba: u64) -> (f64, u64) {
        let mut t = 0.0;
        let mut left = n;
        let mut at = c;
        let mut cyl = c.cyl;
        let mut lba = lba;
        while left > 0 {
            let here = (at.spt - at.sector).min(left);
            t += here as f64 / at.spt as f64 * self.rev_ns;
            left -= here;
            lba += here;
            if left > 0 {
                if lba >= self.sectors {
                    break;
                }
                let next = self.chs(lba);
                t += if next.cyl != at.cyl {
                    self.cyl_switch_ns
                } else {
                    self.head_switch_ns
                };
                cyl = next.cyl;
                at = next;
            }
        }
        let _ = cyl;
        (t, lba)
    }

    /// Sectors per nanosecond a long sequential read sustains at `lba` (switches included).
    pub fn sustained_rate(&self, lba: u64) -> f64 {
        let z = self.zone_of(lba);
        let per_cyl = self.heads as f64 * self.rev_ns
            + (self.heads - 1) as f64 * self.head_switch_ns
            + self.cyl_switch_ns;
        (self.heads * z.spt) as f64 / per_cyl
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g() -> Geometry {
        // 7200 rpm: 8.333 ms a revolution; 122.88 MB/s outer = 2000 sectors a track.
        Geometry::new(1 << 40, 4, 10, 7200.0, 122.88e6, 61.44e6, 1e6, 1e6).unwrap()
    }

    #[test]
    fn zones_fall_from_outer_to_inner_and_hold_the_capacity() {
        let g = g();
        assert_eq!(g.zones[0].spt, 2000);
        assert_eq!(g.zones[9].spt, 1000);
        let last = g.zones.last().unwrap();
        assert!(last.first_lba + last.cylinders * g.heads * last.spt >= g.sectors);
        assert_eq!(
            g.chs(0),
            Chs {
                cyl: 0,
                head: 0,
                sector: 0,
                spt: 2000
            }
        );
        assert_eq!(
            g.chs(2000),
            Chs {
                cyl: 0,
                head: 1,
                sector: 0,
                spt: 2000
            }
        );
        assert_eq!(
            g.chs(8001),
            Chs {
                cyl: 1,
                head: 0,
                sector: 1,
                spt: 2000
            }
        );
        let inner = g.chs(g.sectors - 1);
        assert_eq!(inner.spt, 1000);
        assert!(inner.cyl < g.cylinders);
    }

    #[test]
    fn a_track_takes_a_revolution_and_a_switch_costs_its_time() {
        let g = g();
        let rev = 60e9 / 7200.0;
        let (t, end) = g.transfer(g.chs(0), 2000, 0);
        assert!((t - rev).abs() < 1.0, "{t}");
        assert_eq!(end, 2000);
        // Half a track, then on over the boundary to the next head: + 1 ms exactly.
        let (t, _) = g.transfer(g.chs(1000), 2000, 1000);
        assert!((t - (rev + 1e6)).abs() < 1.0, "{t}");
        // The next track starts where the switch leaves the head.
        let a_end_of_0 = g.track_start(0, 0) + 1.0;
        let a_next = g.track_start(0, 1);
        assert!(((a_end_of_0 + 1e6 / rev).fract() - a_next).abs() < 1e-9);
    }
}

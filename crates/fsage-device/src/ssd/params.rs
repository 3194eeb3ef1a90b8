//! An SSD's parameters: geometry, timing, buffer, compression; and what they imply (the
//! analytic write amplification of greedy collection).

use super::ftl::FtlGeometry;
use crate::Error;
use serde::{Deserialize, Serialize};

/// An SSD's parameters, in base units (ns, bytes, bytes per second).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SsdParams {
    /// The drive's user capacity; a smaller device is its first part (the rest is never
    /// written, so it serves as extra over-provisioning, as an unused partition does). None: as
    /// big as the device.
    pub capacity: Option<u64>,
    /// Share of the raw flash the host cannot address (0.07: 7%).
    pub over_provisioning: f64,
    /// The mapping and program unit.
    pub page_size: u64,
    pub pages_per_block: u64,
    pub channels: u64,
    pub dies_per_channel: u64,
    pub read_ns: u64,
    pub program_ns: u64,
    pub erase_ns: u64,
    pub channel_rate: u64,
    pub interface_rate: u64,
    pub overhead_ns: u64,
    /// Bytes of DRAM write buffer; 0: a write completes when its programs do.
    pub write_buffer: u64,
    /// Garbage collection runs on a die with fewer free blocks than this.
    pub gc_free_blocks: u64,
    /// The user capacity of the full-size drive this one is a scaled-down copy of (`MODEL@SIZE`):
    /// its FTL then has fewer allocation pools than the drive has dies, in proportion to the
    /// capacity, each pool shaped as a full-size die (see [`SsdParams::pools`]), while the timing
    /// layer keeps every die. None: not scaled (one pool per die).
    #[serde(default)]
    pub full_capacity: Option<u64>,
    /// A compressing drive (SandForce's DuraWrite): the share of a flash page that a page of
    /// wholly compressible data takes. A page whose data compresses to `r` of its size (zstd
    /// level 1 as the proxy: [`compressed_ratio`]) takes `f0 + (1 - f0) x r` of a flash page,
    /// rounded up to `compression_unit`s. None: no compression.
    #[serde(default)]
    pub compression: Option<f64>,
    /// The packing unit of compressed pages (bytes; a page's share of a flash page is rounded
    /// up to whole units).
    #[serde(default)]
    pub compression_unit: u64,
    /// What the data of a write the drive is not shown compresses to (`r` above: 1
    /// incompressible, 0 zeros): a costed trace's or a fed write's (traces carry no data). The
    /// real-time device shows the drive every write's data.
    #[serde(default = "incompressible")]
    pub unseen_data_ratio: f64,
}

fn incompressible() -> f64 {
    1.0
}

/// What a page's data compresses to, as a share of its size (0 for nothing, 1 or a little more
/// for data that does not compress): zstd at level 1, a fast general-purpose compressor
/// standing in for the drive's own, whose algorithm is not published. (zlib level 1 on 4 KiB
/// blocks, drives.md section 2: zeros 0.01, random 1.00, Rust source 0.40, an x86-64 binary
/// 0.36.)
pub fn compressed_ratio(data: &[u8]) -> f64 {
    if data.is_empty() {
        return 1.0;
    }
    if data.iter().all(|&b| b == 0) {
        return 0.0;
    }
    #[cfg(feature = "compression")]
    match zstd::bulk::compress(data, 1) {
        Ok(c) => (c.len() as f64 / data.len() as f64).min(1.0),
        Err(_) => 1.0,
    }
    // Unreachable in practice: without the feature no compressing drive is built (`Ssd::new`).
    #[cfg(not(feature = "compression"))]
    1.0
}

impl SsdParams {
    /// Slots a flash page is cut into: `page_size / compression_unit` on a compressing drive,
    /// else 1.
    pub fn slots_per_page(&self) -> u64 {
        match self.compression {
            Some(_) if self.compression_unit > 0 => (self.page_size / self.compression_unit).max(1),
            _ => 1,
        }
    }

    /// The slots a page whose data compresses to `ratio` takes (see `compression`).
    pub fn slots_for(&self, ratio: f64) -> u32 {
        let k = self.slots_per_page();
        match self.compression {
            Some(f0) if k > 1 => {
                let share = f0 + (1.0 - f0) * ratio.clamp(0.0, 1.0);
                // (A millionth of slack: 0.14 x 50 must stay 7 slots, not become 8.)
                ((share * k as f64 - 1e-6).ceil() as u64).clamp(1, k) as u32
            }
            _ => k as u32,
        }
    }

    /// The dies that serve requests (the timing layer's), whatever the scale.
    pub fn timing_dies(&self) -> u64 {
        self.channels.saturating_mul(self.dies_per_channel)
    }

    /// The FTL's allocation pools (each a die's blocks, its own open block and free blocks) for
    /// a drive of `user_bytes`: one per die, or for a drive scaled down from `full_capacity`,
    /// `dies x user_bytes / full_capacity` (rounded, at least 1), so that each pool is about a
    /// full-size die. Why: greedy collection keeps `gc_free_blocks` free blocks and an open block
    /// per pool, a reserve fixed in blocks; with every die kept at a small size that reserve is
    /// a large share of the flash (a 4 GiB `ssd-sata`: 2.8% of its 7.2% spare, WA 11.2 against
    /// 7.3 at 64 GB), with pools in proportion it is the full drive's share (WA 7.2; drives.md
    /// section 6, measured with the FTL).
    pub fn pools(&self, user_bytes: u64) -> u64 {
        let dies = self.timing_dies();
        match self.full_capacity {
            Some(full) if full > user_bytes && full > 0 => {
                let share = dies as f64 * user_bytes as f64 / full as f64;
                (share.round() as u64).clamp(1, dies.max(1))
            }
            _ => dies,
        }
    }

    /// The FTL's shape for a drive of `user_bytes`.
    pub fn geometry(&self, user_bytes: u64) -> crate::Result<FtlGeometry> {
        if self.page_size == 0 || self.pages_per_block == 0 {
            return Err(Error::input(
                "page_size and pages_per_block must be above 0",
            ));
        }
        if !(0.0..0.9).contains(&self.over_provisioning) {
            return Err(Error::input(format!(
                "over_provisioning {}: expected a share of the raw flash from 0 to 0.9",
                self.over_provisioning
            )));
        }
        let too_big = || {
            Error::input(format!(
                "{} channels x {} dies x {} pages per block: more than this model handles",
                self.channels, self.dies_per_channel, self.pages_per_block
            ))
        };
        if self.channels == 0 || self.dies_per_channel == 0 {
            return Err(Error::input(
                "channels and dies_per_channel must be above 0",
            ));
        }
        self.channels
            .checked_mul(self.dies_per_channel)
            .ok_or_else(too_big)?;
        let dies = self.pools(user_bytes);
        let user_pages = user_bytes.div_ceil(self.page_size);
        let raw_pages = (user_pages as f64 / (1.0 - self.over_provisioning)).ceil() as u64;
        // A drive too small for its shape gets the blocks garbage collection needs (its
        // effective over-provisioning, which `describe` shows, is then higher than asked).
        let data_blocks = user_pages.div_ceil(dies).div_ceil(self.pages_per_block);
        let blocks_per_die = raw_pages
            .div_ceil(dies.checked_mul(self.pages_per_block).ok_or_else(too_big)?)
            .max(
                data_blocks
                    .checked_add(self.gc_free_blocks)
                    .and_then(|b| b.checked_add(1))
                    .ok_or_else(too_big)?,
            );
        let to_u32 = |x: u64, what: &str| {
            u32::try_from(x).map_err(|_| format!("{what} {x} is more than this model handles"))
        };
        Ok(FtlGeometry {
            dies: to_u32(dies, "dies")?,
            blocks_per_die: to_u32(blocks_per_die, "blocks per die")?,
            pages_per_block: to_u32(self.pages_per_block, "pages per block")?,
            user_pages: to_u32(user_pages, "logical pages")?,
            gc_free_blocks: to_u32(self.gc_free_blocks, "gc_free_blocks")?,
            slots_per_page: to_u32(self.slots_per_page(), "compression slots per page")?,
        })
    }
}

/// The analytic write amplification of greedy garbage collection under uniform random writes,
/// after Agarwal and Marrow (GLOBECOM 2010, "A closed-form expression for write amplification
/// in NAND flash"): WA = (1 + ρ) / (2ρ), where ρ = (physical − user) / user.
pub fn greedy_write_amplification(physical_pages: u64, user_pages: u64) -> f64 {
    let rho = (physical_pages as f64 - user_pages as f64) / user_pages as f64;
    (1.0 + rho) / (2.0 * rho)
}

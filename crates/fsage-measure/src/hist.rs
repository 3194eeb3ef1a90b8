//! The free-space histogram, the result every free-space route produces: free extents binned by
//! size in power-of-two block counts (bin i holds extents of 2^i to 2^(i+1)-1 blocks), as
//! e2freefrag and `xfs_db freesp -s` bin them. Its own module so that the routes (GETFSMAP in
//! `freesp`, the extent tree in `btrfs`) depend on it and not on each other.

use serde::{Deserialize, Serialize};

/// One power-of-two bin of free extents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FreeBin {
    /// Smallest extent size of the bin, in blocks (a power of two).
    pub min_blocks: u64,
    /// Largest extent size of the bin, in blocks (2 * min_blocks - 1).
    pub max_blocks: u64,
    /// Free extents in the bin.
    pub count: u64,
    /// Free blocks in those extents.
    pub blocks: u64,
    /// Share of all free blocks, in percent.
    pub percent: f64,
}

/// Free space of a mounted file system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FreeSpace {
    /// How it was measured: "getfsmap", or "btrfs-tree-search (...)" saying what it covers.
    pub route: String,
    pub block_size: u64,
    /// Blocks of the file system (statfs f_blocks).
    pub fs_blocks: u64,
    pub free_blocks: u64,
    pub free_extents: u64,
    /// Smallest, largest and mean free extent, in blocks (0 when there is no free extent).
    pub min_blocks: u64,
    pub max_blocks: u64,
    pub avg_blocks: f64,
    /// Non-empty bins only, smallest first.
    pub bins: Vec<FreeBin>,
    /// Of `free_blocks` and `free_extents`, the part in unallocated device space (btrfs: space
    /// no chunk uses yet, which becomes data or metadata as needed); absent on routes without
    /// such a part (GETFSMAP) and in reports written before it was counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unallocated_blocks: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unallocated_extents: Option<u64>,
}

/// Accumulates free extents into the histogram.
#[derive(Debug, Clone, Default)]
pub struct FreeHist {
    count: Vec<u64>,
    blocks: Vec<u64>,
    min: u64,
    max: u64,
}

/// Bin index of an extent of `blocks` (>= 1) blocks: floor(log2(blocks)).
pub fn bin_of(blocks: u64) -> usize {
    63 - blocks.leading_zeros() as usize
}

impl FreeHist {
    pub fn add(&mut self, blocks: u64) {
        if blocks == 0 {
            return;
        }
        let i = bin_of(blocks);
        if self.count.len() <= i {
            self.count.resize(i + 1, 0);
            self.blocks.resize(i + 1, 0);
        }
        self.count[i] += 1;
        self.blocks[i] += blocks;
        self.min = if self.min == 0 {
            blocks
        } else {
            self.min.min(blocks)
        };
        self.max = self.max.max(blocks);
    }

    pub fn finish(self, route: &str, block_size: u64, fs_blocks: u64) -> FreeSpace {
        let free_blocks: u64 = self.blocks.iter().sum();
        let free_extents: u64 = self.count.iter().sum();
        let bins = (0..self.count.len())
            .filter(|&i| self.count[i] > 0)
            .map(|i| FreeBin {
                min_blocks: 1 << i,
                max_blocks: (1 << (i + 1)) - 1,
                count: self.count[i],
                blocks: self.blocks[i],
                percent: 100.0 * self.blocks[i] as f64 / free_blocks as f64,
            })
            .collect();
        FreeSpace {
            route: route.into(),
            block_size,
            fs_blocks,
            free_blocks,
            free_extents,
            min_blocks: self.min,
            max_blocks: self.max,
            avg_blocks: if free_extents == 0 {
                0.0
            } else {
                free_blocks as f64 / free_extents as f64
            },
            bins,
            unallocated_blocks: None,
            unallocated_extents: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_are_powers_of_two() {
        assert_eq!(bin_of(1), 0);
        assert_eq!(bin_of(2), 1);
        assert_eq!(bin_of(3), 1);
        assert_eq!(bin_of(4), 2);
        assert_eq!(bin_of(32767), 14);
        assert_eq!(bin_of(32768), 15);
        let mut h = FreeHist::default();
        for b in [1, 3, 3, 8, 15, 16] {
            h.add(b);
        }
        let f = h.finish("t", 4096, 100);
        assert_eq!(f.free_blocks, 46);
        assert_eq!(f.free_extents, 6);
        assert_eq!((f.min_blocks, f.max_blocks), (1, 16));
        let got: Vec<(u64, u64, u64)> = f
            .bins
            .iter()
            .map(|b| (b.min_blocks, b.count, b.blocks))
            .collect();
        assert_eq!(got, vec![(1, 1, 1), (2, 2, 6), (8, 2, 23), (16, 1, 16)]);
    }
}

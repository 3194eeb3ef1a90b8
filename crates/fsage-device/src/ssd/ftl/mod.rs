//! The flash translation layer's state, without time: a page-mapped table from logical pages to
//! flash pages, blocks per die with their valid-page counts and erase counts, one open block per
//! die taking writes in page order, and greedy garbage collection (the victim is the block with
//! the fewest valid pages; its valid pages are copied to the die's open block and it is erased).
//!
//! The timing layer (`super::Ssd`) asks where each page goes and what garbage collection that
//! took, and charges the die for it. Keeping the two apart lets the state be driven at memory
//! speed (preconditioning, aging a drive in simulated time) and saved with an image.

use crate::Error;
use serde::{Deserialize, Serialize};

/// No flash page: a logical page never written or discarded; a flash page holding nothing valid.
const NONE: u32 = u32::MAX;

/// The drive's shape, in pages (the mapping unit) and blocks (the erase unit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FtlGeometry {
    pub dies: u32,
    pub blocks_per_die: u32,
    pub pages_per_block: u32,
    /// Logical pages the host may address.
    pub user_pages: u32,
    /// Garbage collection runs on a die when it has fewer free blocks than this.
    pub gc_free_blocks: u32,
    /// Slots a flash page is cut into for compressed pages (a compressing drive, SandForce's:
    /// a page whose data compresses takes only the slots its compressed size needs, packed
    /// into the open block); 1: no compression, every page takes a whole flash page.
    #[serde(default = "one")]
    pub slots_per_page: u32,
}

fn one() -> u32 {
    1
}

impl FtlGeometry {
    pub fn physical_pages(&self) -> u64 {
        self.dies as u64 * self.blocks_per_die as u64 * self.pages_per_block as u64
    }

    /// Slots per block (pages per block without compression).
    pub fn slots_per_block(&self) -> u32 {
        self.pages_per_block * self.slots_per_page.max(1)
    }

    fn physical_slots(&self) -> u64 {
        self.physical_pages() * self.slots_per_page.max(1) as u64
    }

    /// Why this shape cannot hold its logical pages with room to collect garbage, if it cannot.
    pub fn check(&self) -> crate::Result<()> {
        if self.dies == 0
            || self.pages_per_block == 0
            || self.user_pages == 0
            || self.slots_per_page == 0
        {
            return Err(Error::input(
                "dies, pages per block and the capacity must be above 0",
            ));
        }
        if self.gc_free_blocks < 2 {
            return Err(Error::input(
                "garbage collection needs at least 2 free blocks per die",
            ));
        }
        // Each die must hold its share of the logical pages, the free blocks garbage collection
        // keeps and one block more: then the blocks in use hold at least a block's worth of
        // invalid pages whenever collection runs, so a victim with an invalid page exists.
        let per_die = (self.user_pages as u64).div_ceil(self.dies as u64);
        let needed_blocks =
            per_die.div_ceil(self.pages_per_block as u64) + self.gc_free_blocks as u64 + 1;
        if (self.blocks_per_die as u64) < needed_blocks {
            return Err(Error::input(format!(
                "{} blocks per die hold too little over-provisioning: {} are needed for {} \
                 logical pages per die and {} free blocks",
                self.blocks_per_die, needed_blocks, per_die, self.gc_free_blocks
            )));
        }
        if self.physical_slots() >= NONE as u64 {
            return Err(Error::input(
                "more than 2^32 flash pages (or compression slots): use a larger page or \
                 compression unit",
            ));
        }
        if self.memory_bytes() > MAX_FTL_BYTES {
            return Err(Error::input(format!(
                "the drive's map would take {} MiB of memory, more than {} MiB: use a larger \
                 page, fewer dies or pages per block, or a smaller capacity",
                self.memory_bytes() >> 20,
                MAX_FTL_BYTES >> 20
            )));
        }
        Ok(())
    }

    /// About what an FTL of this shape holds in memory: its two maps, its per-block counts and
    /// each die's free and closed lists.
    pub fn memory_bytes(&self) -> u64 {
        let dies = self.dies as u64;
        let blocks = dies * self.blocks_per_die as u64;
        let lists = dies * (self.slots_per_block() as u64 + 1) * 24;
        4 * self.user_pages as u64 + 4 * self.physical_slots() + 16 * blocks + lists + 64 * dies
    }
}

/// The most memory a drive's FTL may take (a 1 TiB drive of 4 KiB pages takes about 2.2 GiB):
/// so that no model file makes a plan or a device fill the machine's memory.
pub const MAX_FTL_BYTES: u64 = 4 << 30;

/// Where a written page went and what garbage collection ran on its die first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Placement {
    pub die: u32,
    /// Valid pages copied (each a page read and a page program on the die).
    pub gc_copies: u32,
    /// Blocks erased.
    pub gc_erases: u32,
}

/// What a logical page holds, as the drive knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageState {
    /// Written and mapped, on this die.
    Mapped(u32),
    /// Discarded (or zeroed) since it was last written, or discarded without ever being written:
    /// the drive knows it holds nothing and reads it as zeros without flash.
    Discarded,
    /// Never written nor discarded on this drive: it holds whatever was there before the drive's
    /// history began (a trace without history, pages mkfs wrote when mkfs was not fed).
    NeverWritten,
}

/// Counters of what the FTL did since it was made (or loaded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FtlCounters {
    /// Pages the host wrote.
    pub host_pages: u64,
    /// Pages copied by garbage collection.
    pub gc_copies: u64,
    pub erases: u64,
    /// Logical pages discarded while mapped.
    pub trimmed: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Die {
    /// Blocks holding no data, ready to open (a stack: the last freed is reused first).
    free: Vec<u32>,
    /// The block taking writes and the next page in it.
    open: Option<(u32, u32)>,
}

/// The FTL of a whole drive. Block `b` of die `d` is global block `d * blocks_per_die + b`;
/// slot `p` of global block `g` is flash slot `g * slots_per_block + p` (a slot is a flash page
/// without compression; with it, a page takes one or more consecutive slots of one block).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ftl {
    geo: FtlGeometry,
    /// Logical page → flash page.
    l2p: Vec<u32>,
    /// Flash page → the logical page it holds, while valid.
    p2l: Vec<u32>,
    /// Valid pages per global block.
    valid: Vec<u32>,
    erase_counts: Vec<u32>,
    dies: Vec<Die>,
    /// Closed (full) blocks of each die by valid count: `closed[d][v]` lists them, and
    /// `slot[g]` is a block's index in its list (so moving a block is O(1)).
    closed: Vec<Vec<Vec<u32>>>,
    slot: Vec<u32>,
    /// The die the next host page goes to (pages are striped over the dies in turn).
    next_die: u32,
    counters: FtlCounters,
    /// One bit per logical page: written or discarded at some time (so that an unmapped page
    /// is known to be discarded rather than never written).
    known: Vec<u64>,
}

impl Ftl {
    /// An erased drive.
    pub fn new(geo: FtlGeometry) -> crate::Result<Ftl> {
        geo.check()?;
        let blocks = geo.dies as usize * geo.blocks_per_die as usize;
        let ppb = geo.slots_per_block() as usize;
        Ok(Ftl {
            geo,
            l2p: vec![NONE; geo.user_pages as usize],
            p2l: vec![NONE; blocks * ppb],
            valid: vec![0; blocks],
            erase_counts: vec![0; blocks],
            dies: (0..geo.dies)
                .map(|_| Die {
                    free: (0..geo.blocks_per_die).rev().collect(),
                    open: None,
                })
                .collect(),
            closed: (0..geo.dies).map(|_| vec![Vec::new(); ppb + 1]).collect(),
            slot: vec![NONE; blocks],
            next_die: 0,
            counters: FtlCounters::default(),
            known: vec![0; (geo.user_pages as usize).div_ceil(64)],
        })
    }

    pub fn geometry(&self) -> FtlGeometry {
        self.geo
    }

    pub fn counters(&self) -> FtlCounters {
        self.counters
    }

    /// Starts counting again (the state stays): a measurement after preconditioning.
    pub fn reset_counters(&mut self) {
        self.counters = FtlCounters::default();
    }

    /// The die holding logical page `lpn`, if it is mapped.
    pub fn die_of(&self, lpn: u32) -> Option<u32> {
        match self.l2p[lpn as usize] {
            NONE => None,
            ppn => Some(self.die_of_ppn(ppn)),
        }
    }

    /// Where logical page `lpn` is, if it is mapped: its pool (die) and the flash page's index
    /// within that pool (what the timing layer places on a die).
    pub fn pool_page(&self, lpn: u32) -> Option<(u32, u64)> {
        match self.l2p[lpn as usize] {
            NONE => None,
            slot => {
                let per_pool = self.geo.blocks_per_die as u64 * self.geo.slots_per_block() as u64;
                Some((
                    self.die_of_ppn(slot),
                    (slot as u64 % per_pool) / self.geo.slots_per_page.max(1) as u64,
                ))
            }
        }
    }

    /// The slots logical page `lpn` takes (0 when unmapped): its run of slots from where it
    /// starts, within one block.
    pub fn slots_of(&self, lpn: u32) -> u32 {
        let start = self.l2p[lpn as usize];
        if start == NONE {
            return 0;
        }
        let spb = self.geo.slots_per_block();
        let end = (start / spb + 1) * spb;
        (start..end)
            .take_while(|&s| self.p2l[s as usize] == lpn)
            .count() as u32
    }

    /// What logical page `lpn` holds: mapped on a die, discarded, or never written.
    pub fn page_state(&self, lpn: u32) -> PageState {
        match self.l2p[lpn as usize] {
            NONE if self.is_known(lpn) => PageState::Discarded,
            NONE => PageState::NeverWritten,
            ppn => PageState::Mapped(self.die_of_ppn(ppn)),
        }
    }

    /// The die logical page `lpn` would be on had the drive been written in logical order from
    /// erased (pages striped over the dies in turn, from die 0): where a page the drive never
    /// saw written is taken to be when it is read as data.
    pub fn die_in_lba_order(&self, lpn: u32) -> u32 {
        lpn % self.geo.dies
    }

    fn is_known(&self, lpn: u32) -> bool {
        self.known[lpn as usize / 64] & (1 << (lpn % 64)) != 0
    }

    fn mark_known(&mut self, lpn: u32) {
        self.known[lpn as usize / 64] |= 1 << (lpn % 64);
    }

    /// Logical pages written or discarded at some time.
    pub fn known_pages(&self) -> u64 {
        self.known.iter().map(|w| w.count_ones() as u64).sum()
    }

    fn die_of_ppn(&self, ppn: u32) -> u32 {
        ppn / self.geo.slots_per_block() / self.geo.blocks_per_die
    }

    pub fn free_blocks(&self) -> u64 {
        self.dies.iter().map(|d| d.free.len() as u64).sum()
    }

    pub fn mapped_pages(&self) -> u64 {
        self.l2p.iter().filter(|&&p| p != NONE).count() as u64
    }

    pub fn erase_counts(&self) -> &[u32] {
        &self.erase_counts
    }

    /// Writes logical page `lpn` on the next die in turn, collecting garbage there first when
    /// it is short of free blocks. It takes a whole flash page (all its slots).
    pub fn write(&mut self, lpn: u32) -> Placement {
        self.write_slots(lpn, self.geo.slots_per_page)
    }

    /// Writes logical page `lpn` as [`Ftl::write`] does, taking `slots` slots of a flash page
    /// (1 to `slots_per_page`: what its data compresses to).
    pub fn write_slots(&mut self, lpn: u32, slots: u32) -> Placement {
        let n = slots.clamp(1, self.geo.slots_per_page.max(1));
        let mut die = self.next_die;
        self.next_die = (self.next_die + 1) % self.geo.dies;
        let mut placement = self.collect(die);
        // A die whose every closed block is wholly valid cannot make room (its share of the
        // logical pages grew past its size, which the geometry check makes all but impossible):
        // the page goes to the next die with room instead.
        if self.dies[die as usize].free.is_empty() && !self.open_has_room(die, n) {
            for k in 1..self.geo.dies {
                let d = (die + k) % self.geo.dies;
                let p = self.collect(d);
                if !self.dies[d as usize].free.is_empty() || self.open_has_room(d, n) {
                    die = d;
                    placement = p;
                    break;
                }
            }
        }
        placement.die = die;
        self.invalidate(lpn);
        self.place(die, lpn, n);
        self.mark_known(lpn);
        self.counters.host_pages += 1;
        placement
    }

    /// Discards logical page `lpn`: its flash page no longer holds anything valid. A closed
    /// block left with no valid page is erased at once (a drive erases discarded blocks while
    /// idle, so a discarded drive writes as a fresh one): the die erased is returned.
    pub fn trim(&mut self, lpn: u32) -> Option<u32> {
        self.mark_known(lpn);
        let ppn = self.l2p[lpn as usize];
        if ppn == NONE {
            return None;
        }
        self.invalidate(lpn);
        self.counters.trimmed += 1;
        let block = ppn / self.geo.slots_per_block();
        if self.valid[block as usize] == 0 && self.slot[block as usize] != NONE {
            self.erase(block);
            self.counters.erases += 1;
            return Some(block / self.geo.blocks_per_die);
        }
        None
    }

    /// The fewest valid pages of a closed block of `die` (what greedy collection takes next).
    #[cfg(test)]
    fn min_closed_valid(&self, die: u32) -> Option<u32> {
        let lists = &self.closed[die as usize];
        (0..lists.len())
            .find(|&v| !lists[v].is_empty())
            .map(|v| v as u32)
    }

    fn open_has_room(&self, die: u32, slots: u32) -> bool {
        matches!(self.dies[die as usize].open, Some((_, p)) if p + slots <= self.geo.slots_per_block())
    }

    /// Greedy garbage collection on `die` until it has its free blocks again (or nothing can
    /// be gained).
    fn collect(&mut self, die: u32) -> Placement {
        let mut work = Placement::default();
        while (self.dies[die as usize].free.len() as u32) < self.geo.gc_free_blocks {
            let Some(victim) = self.victim(die) else {
                break;
            };
            let spb = self.geo.slots_per_block();
            let first = victim * spb;
            for slot in first..first + spb {
                let lpn = self.p2l[slot as usize];
                if lpn != NONE {
                    // The page's first slot (its later ones are cleared as it moves).
                    let n = self.slots_of(lpn);
                    self.invalidate(lpn);
                    self.place(die, lpn, n);
                    work.gc_copies += n;
                }
            }
            self.erase(victim);
            work.gc_erases += 1;
        }
        self.counters.gc_copies += work.gc_copies as u64;
        self.counters.erases += work.gc_erases as u64;
        work
    }

    /// The closed block of `die` with the fewest valid slots, if erasing it gains a page.
    fn victim(&self, die: u32) -> Option<u32> {
        let gain = self.geo.slots_per_block() - self.geo.slots_per_page.max(1);
        let lists = &self.closed[die as usize];
        (0..=gain as usize).find_map(|v| lists[v].last().copied())
    }

    /// Puts `lpn` on the next `n` slots of `die`'s open block, opening a free block when
    /// needed (a page never straddles two blocks: the slots left at a block's end stay empty).
    fn place(&mut self, die: u32, lpn: u32, n: u32) {
        let ppb = self.geo.slots_per_block();
        let d = &mut self.dies[die as usize];
        let (block, page) = match d.open {
            Some((b, p)) if p + n <= ppb => (b, p),
            full => {
                let b = d
                    .free
                    .pop()
                    .expect("a die keeps a free block for garbage collection (the geometry check)");
                if let Some((old, _)) = full {
                    d.open = None;
                    self.close(old);
                }
                (self.global(die, b), 0)
            }
        };
        let d = &mut self.dies[die as usize];
        d.open = Some((block, page + n));
        let ppn = block * ppb + page;
        self.p2l[ppn as usize..(ppn + n) as usize].fill(lpn);
        self.l2p[lpn as usize] = ppn;
        self.valid[block as usize] += n;
    }

    fn global(&self, die: u32, local: u32) -> u32 {
        die * self.geo.blocks_per_die + local
    }

    /// Unmaps `lpn` (if mapped), lowering its block's valid count.
    fn invalidate(&mut self, lpn: u32) {
        let n = self.slots_of(lpn);
        let ppn = std::mem::replace(&mut self.l2p[lpn as usize], NONE);
        if ppn == NONE {
            return;
        }
        self.p2l[ppn as usize..(ppn + n) as usize].fill(NONE);
        let block = ppn / self.geo.slots_per_block();
        let v = self.valid[block as usize];
        if self.slot[block as usize] != NONE {
            self.unlist(block, v);
            self.list(block, v - n);
        }
        self.valid[block as usize] = v - n;
    }

    fn close(&mut self, block: u32) {
        self.list(block, self.valid[block as usize]);
    }

    fn list(&mut self, block: u32, v: u32) {
        let die = block / self.geo.blocks_per_die;
        let l = &mut self.closed[die as usize][v as usize];
        self.slot[block as usize] = l.len() as u32;
        l.push(block);
    }

    fn unlist(&mut self, block: u32, v: u32) {
        let die = block / self.geo.blocks_per_die;
        let i = self.slot[block as usize] as usize;
        let l = &mut self.closed[die as usize][v as usize];
        l.swap_remove(i);
        if let Some(&moved) = l.get(i) {
            self.slot[moved as usize] = i as u32;
        }
        self.slot[block as usize] = NONE;
    }

    fn erase(&mut self, block: u32) {
        debug_assert_eq!(self.valid[block as usize], 0);
        self.unlist(block, 0);
        self.erase_counts[block as usize] += 1;
        let die = block / self.geo.blocks_per_die;
        let local = block % self.geo.blocks_per_die;
        self.dies[die as usize].free.push(local);
    }

    /// Every invariant of the state, for tests: the two maps agree, valid counts match the
    /// pages, free blocks hold nothing, closed lists hold exactly the full blocks.
    pub fn check(&self) -> crate::Result<()> {
        for (lpn, &ppn) in self.l2p.iter().enumerate() {
            if ppn != NONE && self.p2l[ppn as usize] != lpn as u32 {
                return Err(Error::input(format!(
                    "logical page {lpn} maps to {ppn}, which holds another"
                )));
            }
            if ppn != NONE && !self.is_known(lpn as u32) {
                return Err(Error::input(format!(
                    "logical page {lpn} is mapped but not marked written"
                )));
            }
        }
        let tail = self.geo.user_pages % 64;
        if tail != 0 && self.known.last().is_some_and(|&w| w >> tail != 0) {
            return Err(Error::input("pages past the capacity are marked written"));
        }
        let ppb = self.geo.slots_per_block() as usize;
        let mut held = 0u64;
        for (ppn, &lpn) in self.p2l.iter().enumerate() {
            if lpn != NONE {
                let start = self.l2p[lpn as usize];
                if start == NONE || (ppn as u32) < start || ppn as u32 >= start + self.slots_of(lpn)
                {
                    return Err(Error::input(format!(
                        "flash page {ppn} holds {lpn}, which maps elsewhere"
                    )));
                }
                held += (ppn as u32 == start) as u64;
            }
        }
        if held != self.mapped_pages() {
            return Err(Error::input(format!(
                "{held} flash pages hold data, {} logical pages are mapped",
                self.mapped_pages()
            )));
        }
        for (g, &v) in self.valid.iter().enumerate() {
            let count = self.p2l[g * ppb..(g + 1) * ppb]
                .iter()
                .filter(|&&l| l != NONE)
                .count() as u32;
            if count != v {
                return Err(Error::input(format!(
                    "block {g}: valid count {v}, pages {count}"
                )));
            }
        }
        for (d, die) in self.dies.iter().enumerate() {
            for &b in &die.free {
                let g = self.global(d as u32, b);
                if self.valid[g as usize] != 0 || self.slot[g as usize] != NONE {
                    return Err(Error::input(format!(
                        "free block {g} holds data or is listed"
                    )));
                }
            }
            for (v, list) in self.closed[d].iter().enumerate() {
                for (i, &g) in list.iter().enumerate() {
                    if self.valid[g as usize] as usize != v || self.slot[g as usize] as usize != i {
                        return Err(Error::input(format!(
                            "closed block {g} listed under {v} valid pages"
                        )));
                    }
                }
            }
            let listed: usize = self.closed[d].iter().map(Vec::len).sum();
            let open = usize::from(die.open.is_some());
            if listed + die.free.len() + open != self.geo.blocks_per_die as usize {
                return Err(Error::input(format!(
                    "die {d}: blocks lost or counted twice"
                )));
            }
        }
        Ok(())
    }
}

// Saving and loading the state (`to_bytes`, `from_bytes`).
mod image;

#[cfg(test)]
mod tests;

//! The planner: given a profile, a capacity and a seed, it decides every create and delete of an
//! aging run, one per tick, and does no I/O. A dry run and a real run execute the same decisions.
//!
//! Rapid phase: files drawn from the size and depth histograms until the allocated bytes reach
//! the target fullness; all of them end up in the oldest age bin. Stable phase, up to the theorem's
//! T ticks: a fair coin picks create or delete. A create takes the size bin and the depth bin whose
//! live fraction lies furthest below target; a delete takes the age bin with the largest surplus and,
//! within it, a file from the over-represented size and depth bins (drawn among them, see
//! `pick_over_represented`). The coin is balanced
//! (see `Planner::pending`). Allocated bytes are kept in
//! a band around the target: above it the tick deletes, below it the tick creates.

use crate::rng::Rng;
use crate::theorem::{age_bin, ticks_to_converge};
use crate::tree::{DirId, DirTree};
use fsage_profile::{human_bytes, Fullness, Profile};
use serde::{Deserialize, Serialize};

pub use crate::op::{Counters, LiveFile, Op, OpKind, Phase, PlanConfig, PlanError, UnmeetableBin};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Planner {
    cfg: PlanConfig,
    rng: Rng,
    tree: DirTree,

    size_frac: Vec<f64>,
    size_lo: Vec<u64>,
    size_hi: Vec<u64>,
    size_cum: Vec<f64>,
    /// Size bins the run makes files in (see [`Planner::unmeetable_bins`]).
    size_enabled: Vec<bool>,
    churn_limit: u64,
    depth_frac: Vec<f64>,
    depth_of: Vec<u32>,
    /// Depth bin of every depth of the tree (depths the profile does not list: bin 0, never used).
    bin_of_depth: Vec<u32>,
    depth_cum: Vec<f64>,
    age_frac: Vec<f64>,
    age_edges: Vec<f64>,

    size_live: Vec<u64>,
    depth_live: Vec<u64>,
    age_live: Vec<u64>,
    /// Live files by (age bin, size bin, depth bin).
    cells: Vec<Vec<LiveFile>>,
    /// Live files by (age bin, size bin): lets a delete skip empty size bins at once.
    age_size_live: Vec<u64>,

    live: u64,
    allocated: u64,
    tick: u64,
    total: u64,
    /// The rapid phase's files, decided up front so that T is known before the run starts.
    rapid: Vec<LiveFile>,
    rapid_len: u64,
    /// Live files once the size histogram is exact at the target bytes. The rapid phase's random
    /// draws can leave K below it (a few too many large files); the stable phase then settles here,
    /// so the theorem is applied to the larger of the two.
    steady_files: u64,
    /// The coin is fair and balanced: stable ticks come in pairs, one create and one delete in an
    /// order the coin picks. Each tick is still 50/50, but chance alone can no longer leave an age
    /// bin short of the creates the theorem counts on. Holds the pair's second half.
    pending: Option<bool>,

    target: u64,
    /// u*C as configured (`target` may be lowered by a full file system).
    initial_target: u64,
    band: u64,
    /// Bytes the planner will never exceed: the capacity, lowered when the file system says full.
    ceiling: u64,
    pub counters: Counters,
}

fn cumulative(weights: &[f64]) -> Vec<f64> {
    let mut acc = 0.0;
    weights
        .iter()
        .map(|w| {
            acc += w;
            acc
        })
        .collect()
}

/// Index drawn with probability proportional to the weights behind `cum`; never a zero-weight bin.
fn draw(cum: &[f64], rng: &mut Rng) -> usize {
    let total = *cum.last().unwrap_or(&0.0);
    let x = rng.unit() * total;
    let mut i = cum.partition_point(|&c| c <= x).min(cum.len() - 1);
    // Floating point could land on a zero-width bin at the very top; step back to a real one.
    while i > 0 && cum[i] == cum[i - 1] {
        i -= 1;
    }
    i
}

/// A delete's size (or depth) bin: drawn among the over-represented bins that have files in scope,
/// weighted by those files, or the least under-represented one if none is over. Taking always the
/// single most over-represented bin would make every delete and the create that refills it cycle on
/// one bin; drawing makes the churn follow the histogram while still only trimming surpluses.
fn pick_over_represented(
    rng: &mut Rng,
    bins: usize,
    files: impl Fn(usize) -> u64,
    surplus: impl Fn(usize) -> f64,
) -> usize {
    let mut total = 0u64;
    let mut best = (0, f64::NEG_INFINITY);
    for i in 0..bins {
        let f = files(i);
        if f == 0 {
            continue;
        }
        let sp = surplus(i);
        if sp >= 0.0 {
            total += f;
        }
        if sp > best.1 {
            best = (i, sp);
        }
    }
    if total == 0 {
        return best.0;
    }
    let mut x = rng.below(total);
    for i in 0..bins {
        let f = files(i);
        if f == 0 || surplus(i) < 0.0 {
            continue;
        }
        if x < f {
            return i;
        }
        x -= f;
    }
    best.0
}

impl Planner {
    pub fn new(profile: &Profile, cfg: PlanConfig) -> Result<Planner, PlanError> {
        if cfg.block_size == 0 {
            return Err(PlanError::BadConfig("block size must be positive".into()));
        }
        if Fullness::new(cfg.fullness).is_none() {
            return Err(PlanError::BadConfig(format!(
                "fullness {} is outside (0, 1]",
                cfg.fullness
            )));
        }
        let mut rng = Rng::new(cfg.seed);
        let tree = DirTree::build(profile, &mut rng);

        let size_frac = profile.size_fractions();
        let mut size_lo = Vec::new();
        let mut size_hi = Vec::new();
        let mut prev: Option<u64> = None;
        for b in &profile.sizes {
            let lo = match prev {
                None => 0,
                Some(p) => p + 1,
            };
            size_lo.push(if cfg.exact_sizes { b.max_bytes } else { lo });
            size_hi.push(b.max_bytes);
            prev = Some(b.max_bytes);
        }
        let depth_frac = profile.depth_fractions();
        let age_frac = profile.age_fractions();
        let nb = profile.ages.len() * profile.sizes.len() * profile.depths.len();

        let target = (cfg.capacity as f64 * cfg.fullness).floor() as u64;
        let bs = cfg.block_size;
        // Bins the run will not make: files that cannot fit above the target fullness, or so large
        // that one of them moves the fullness by more than 1%.
        let room = cfg.capacity.saturating_sub(target);
        let churn_limit = (target / 100).max(bs);
        let alloc = |x: u64| x.div_ceil(bs) * bs;
        let size_enabled: Vec<bool> = size_lo
            .iter()
            .zip(&size_frac)
            .map(|(&lo, &f)| f > 0.0 && alloc(lo) <= room && alloc(lo) <= churn_limit)
            .collect();
        // The band must hold the largest file the run makes, or every create of one would force a
        // storm of deletes (and every delete one of creates) that upsets the coin's balance.
        let largest = size_hi
            .iter()
            .zip(&size_enabled)
            .filter(|(_, &on)| on)
            .map(|(&hi, _)| alloc(hi).min(room).min(alloc(churn_limit)))
            .max()
            .unwrap_or(bs);
        let band = (target / 100).max(2 * largest).max(16 * bs);
        let enabled_weights: Vec<f64> = profile
            .sizes
            .iter()
            .zip(&size_enabled)
            .map(|(b, &on)| if on { b.weight } else { 0.0 })
            .collect();
        let mut p = Planner {
            rng,
            tree,
            size_cum: cumulative(&enabled_weights),
            size_enabled,
            churn_limit,
            size_frac,
            size_lo,
            size_hi,
            depth_cum: cumulative(&profile.depths.iter().map(|b| b.weight).collect::<Vec<_>>()),
            depth_frac,
            depth_of: profile.depths.iter().map(|b| b.depth).collect(),
            bin_of_depth: Vec::new(),
            age_edges: profile.age_edges(),
            age_frac,
            size_live: vec![0; profile.sizes.len()],
            depth_live: vec![0; profile.depths.len()],
            age_live: vec![0; profile.ages.len()],
            cells: vec![Vec::new(); nb],
            age_size_live: vec![0; profile.ages.len() * profile.sizes.len()],
            live: 0,
            allocated: 0,
            tick: 0,
            total: 0,
            rapid: Vec::new(),
            rapid_len: 0,
            steady_files: 0,
            pending: None,
            target,
            initial_target: target,
            band,
            ceiling: cfg.capacity,
            counters: Counters::default(),
            cfg,
        };
        p.bin_of_depth = vec![0; p.tree.max_depth() as usize + 1];
        for (i, &d) in p.depth_of.iter().enumerate() {
            if let Some(slot) = p.bin_of_depth.get_mut(d as usize) {
                *slot = i as u32;
            }
        }
        p.allocated = (p.tree.len() as u64 - 1) * bs;
        if p.allocated >= target {
            return Err(PlanError::TooSmall {
                needed: p.allocated,
                target,
            });
        }
        p.plan_rapid();
        if p.rapid.is_empty() {
            return Err(PlanError::NothingFits);
        }
        p.rapid_len = p.rapid.len() as u64;
        p.steady_files = p.steady_state_files();
        p.total = ticks_to_converge(p.rapid_len.max(p.steady_files), &p.age_frac, &p.age_edges);
        Ok(p)
    }

    /// Bytes a file of `size` occupies, as the file system counts it.
    #[inline]
    pub fn alloc(&self, size: u64) -> u64 {
        size.div_ceil(self.cfg.block_size) * self.cfg.block_size
    }

    fn depth_bin_of_dir(&self, dir: DirId) -> usize {
        self.bin_of_depth[self.tree.depth(dir) as usize] as usize
    }

    /// The largest size the run makes in bin `s`: its upper edge, clipped at 1% of the target
    /// bytes (see [`Planner::clipped_bins`]).
    #[inline]
    fn size_top(&self, s: usize) -> u64 {
        self.size_hi[s].min(self.churn_limit).max(self.size_lo[s])
    }

    /// Decides the rapid phase: drawn sizes and depths until the target bytes are reached.
    fn plan_rapid(&mut self) {
        let mut allocated = self.allocated;
        let mut misses = 0;
        while allocated < self.target {
            let s = draw(&self.size_cum, &mut self.rng);
            let size = self.rng.between(self.size_lo[s], self.size_top(s));
            let need = self.alloc(size);
            if allocated + need > self.ceiling {
                // Too large for the room left; give up once draws keep missing.
                misses += 1;
                if misses > 1000 {
                    break;
                }
                continue;
            }
            let d = draw(&self.depth_cum, &mut self.rng);
            let dir = self.tree.pick(self.depth_of[d], &mut self.rng);
            self.rapid.push(LiveFile {
                created: self.rapid.len() as u64,
                size,
                dir,
            });
            allocated += need;
        }
    }

    /// Mean bytes a file of size bin `s` occupies: sizes uniform in the bin, rounded up to blocks.
    fn mean_alloc(&self, s: usize) -> f64 {
        let bs = self.cfg.block_size as u128;
        let (lo, hi) = (self.size_lo[s] as u128, self.size_top(s) as u128);
        // Sum of ceil(x / bs) for x in 0..=n, via sums of floor(y / bs).
        let floor_sum = |m: u128| -> u128 {
            let (q, r) = (m / bs, m % bs);
            bs * q * q.saturating_sub(1) / 2 + q * (r + 1)
        };
        let ceil_sum =
            |n: u128| floor_sum(n + bs - 1) - if bs >= 2 { floor_sum(bs - 2) } else { 0 };
        let total = ceil_sum(hi) - if lo == 0 { 0 } else { ceil_sum(lo - 1) };
        total as f64 / (hi - lo + 1) as f64 * bs as f64
    }

    /// Live files at the target bytes with the size histogram exactly on target.
    fn steady_state_files(&self) -> u64 {
        let (mut weight, mut bytes) = (0.0, 0.0);
        for s in 0..self.size_frac.len() {
            if self.size_enabled[s] {
                weight += self.size_frac[s];
                bytes += self.size_frac[s] * self.mean_alloc(s);
            }
        }
        let dirs = (self.tree.len() as u64 - 1) * self.cfg.block_size;
        if bytes <= 0.0 {
            return 0;
        }
        ((self.target.saturating_sub(dirs)) as f64 * weight / bytes).round() as u64
    }

    /// Live files the stable phase settles at (see `steady_files`).
    pub fn steady_state(&self) -> u64 {
        self.steady_files
    }

    #[inline]
    fn cell(&self, a: usize, s: usize, d: usize) -> usize {
        (a * self.size_frac.len() + s) * self.depth_frac.len() + d
    }

    fn size_bin_of(&self, size: u64) -> usize {
        self.size_hi
            .partition_point(|&hi| hi < size)
            .min(self.size_hi.len() - 1)
    }

    fn insert(&mut self, f: LiveFile, s: usize, d: usize) {
        let a = age_bin(&self.age_edges, f.created, self.total);
        let c = self.cell(a, s, d);
        self.cells[c].push(f);
        self.age_size_live[a * self.size_frac.len() + s] += 1;
        self.size_live[s] += 1;
        self.depth_live[d] += 1;
        self.age_live[a] += 1;
        self.live += 1;
        self.allocated += self.alloc(f.size);
        self.counters.creates += 1;
        self.counters.bytes_written += f.size;
    }

    /// Takes the file at `idx` of cell (a, s, d) out of the live set.
    fn remove(&mut self, a: usize, s: usize, d: usize, idx: usize) -> LiveFile {
        let c = self.cell(a, s, d);
        let f = self.cells[c].swap_remove(idx);
        self.age_size_live[a * self.size_frac.len() + s] -= 1;
        self.size_live[s] -= 1;
        self.depth_live[d] -= 1;
        self.age_live[a] -= 1;
        self.live -= 1;
        self.allocated -= self.alloc(f.size);
        f
    }

    /// The next decision, or `None` once the run has its T ticks.
    pub fn next_op(&mut self) -> Option<Op> {
        if self.tick >= self.total {
            return None;
        }
        let tick = self.tick;
        self.tick += 1;
        if tick < self.rapid_len {
            let f = self.rapid[tick as usize];
            let s = self.size_bin_of(f.size);
            let d = self.depth_bin_of_dir(f.dir);
            self.insert(f, s, d);
            if self.tick == self.rapid_len {
                self.rapid = Vec::new();
            }
            return Some(Op {
                tick,
                kind: OpKind::Create,
                file: f,
            });
        }
        let Some(op) = self.stable_step(tick) else {
            // Nothing is live and no file fits: the run cannot go on.
            self.total = tick;
            self.tick = tick;
            return None;
        };
        let dev = self.allocated.abs_diff(self.target);
        self.counters.max_deviation = self.counters.max_deviation.max(dev);
        Some(op)
    }

    fn stable_step(&mut self, tick: u64) -> Option<Op> {
        let create = if self.live == 0 {
            true
        } else if self.allocated > self.target + self.band {
            self.counters.forced_deletes += 1;
            false
        } else if self.allocated + self.band < self.target {
            self.counters.forced_creates += 1;
            true
        } else if let Some(second) = self.pending.take() {
            second
        } else {
            let first = self.rng.coin();
            self.pending = Some(!first);
            first
        };
        if create {
            if let Some(op) = self.create(tick) {
                return Some(op);
            }
        }
        if self.live > 0 {
            return Some(self.delete(tick));
        }
        self.create(tick)
    }

    fn create(&mut self, tick: u64) -> Option<Op> {
        let room = self.ceiling.saturating_sub(self.allocated);
        let n = self.live as f64;
        let mut best: Option<(usize, f64)> = None;
        for s in 0..self.size_frac.len() {
            let f = self.size_frac[s];
            if !self.size_enabled[s] || self.alloc(self.size_lo[s]) > room {
                continue;
            }
            let deficit = f * n - self.size_live[s] as f64;
            if best.is_none_or(|(_, b)| deficit > b) {
                best = Some((s, deficit));
            }
        }
        let (s, _) = best?;
        let mut d = 0;
        let mut best_d = f64::NEG_INFINITY;
        for (i, &f) in self.depth_frac.iter().enumerate() {
            if f <= 0.0 {
                continue;
            }
            let deficit = f * n - self.depth_live[i] as f64;
            if deficit > best_d {
                best_d = deficit;
                d = i;
            }
        }
        // Sizes above 1% of the target are not made (see `clipped_bins`): one such file would
        // swing the fullness further than the band the run holds it in.
        let top = self.size_top(s);
        let hi = if self.alloc(top) <= room {
            top
        } else {
            room / self.cfg.block_size * self.cfg.block_size
        };
        let size = self.rng.between(self.size_lo[s], hi.max(self.size_lo[s]));
        let dir = self.tree.pick(self.depth_of[d], &mut self.rng);
        let file = LiveFile {
            created: tick,
            size,
            dir,
        };
        self.insert(file, s, d);
        Some(Op {
            tick,
            kind: OpKind::Create,
            file,
        })
    }

    fn delete(&mut self, tick: u64) -> Op {
        let n = self.live as f64;
        let ns = self.size_frac.len();
        let mut a = 0;
        let mut best = f64::NEG_INFINITY;
        for (i, &g) in self.age_frac.iter().enumerate() {
            if self.age_live[i] == 0 {
                continue;
            }
            let surplus = self.age_live[i] as f64 - g * n;
            if surplus > best {
                best = surplus;
                a = i;
            }
        }
        let s = pick_over_represented(
            &mut self.rng,
            ns,
            |i| self.age_size_live[a * ns + i],
            |i| self.size_live[i] as f64 - self.size_frac[i] * n,
        );
        let nd = self.depth_frac.len();
        let base = self.cell(a, s, 0);
        let d = pick_over_represented(
            &mut self.rng,
            nd,
            |i| self.cells[base + i].len() as u64,
            |i| self.depth_live[i] as f64 - self.depth_frac[i] * n,
        );
        let len = self.cells[self.cell(a, s, d)].len() as u64;
        let idx = self.rng.below(len) as usize;
        let file = self.remove(a, s, d, idx);
        self.counters.deletes += 1;
        Op {
            tick,
            kind: OpKind::Delete,
            file,
        }
    }

    /// The file system refused `op` (a create) for lack of space: forget the file, lower the
    /// ceiling to what is allocated now (the file system is fuller than its size said) and, if
    /// needed, the target below it, so the run goes on deleting back into a band that fits. In the
    /// rapid phase this ends the phase; T stays as printed (fewer files only need fewer ticks).
    pub fn reject_create(&mut self, op: &Op) {
        debug_assert_eq!(op.kind, OpKind::Create);
        let f = op.file;
        let s = self.size_bin_of(f.size);
        let d = self.depth_bin_of_dir(f.dir);
        let a = age_bin(&self.age_edges, f.created, self.total);
        let c = self.cell(a, s, d);
        if let Some(idx) = self.cells[c].iter().rposition(|x| *x == f) {
            self.remove(a, s, d, idx);
            self.counters.creates -= 1;
            self.counters.bytes_written -= f.size;
        }
        self.counters.enospc += 1;
        if self.tick <= self.rapid_len {
            // The rapid phase ends here. With a synchronous backend that is at the refused tick;
            // a parallel one reports late, after more rapid creates went out, which stay.
            self.rapid_len = self.tick.saturating_sub(1).max(op.tick);
            self.rapid = Vec::new();
        }
        self.ceiling = self.allocated;
        let floor_target = self.ceiling.saturating_sub(2 * self.band);
        if self.target > floor_target {
            self.target = floor_target;
        }
    }

    /// Logical bytes a run to T will write, by running a copy of the planner: the whole run when T
    /// is at most [`Self::EXACT_BYTES_TICKS`] ticks (the prediction is then exact), else the rapid
    /// phase and that many stable ticks, extrapolated to T at the rate of the sample's second half.
    /// The sizes a stable create draws depend on which bins the deletes empty, and rare large files
    /// dominate the bytes, so neither a formula over the histogram nor a short sample comes close:
    /// the bytes per tick keep rising through the stable phase (a 5 million tick sample of a
    /// profile extracted from /usr/share was 28% low).
    pub fn expected_bytes_written(&self) -> u64 {
        let mut sim = self.clone();
        while sim.tick < sim.rapid_len.min(sim.total) {
            sim.next_op();
        }
        let t0 = sim.tick;
        let left = sim.total - sim.tick;
        let sample = left.min(Self::EXACT_BYTES_TICKS);
        let half = t0 + sample / 2;
        while sim.tick < half && sim.next_op().is_some() {}
        let (t1, b1) = (sim.tick, sim.counters.bytes_written);
        while sim.tick < t0 + sample && sim.next_op().is_some() {}
        if sim.tick >= sim.total || sim.tick == t1 {
            return sim.counters.bytes_written;
        }
        let per_tick = (sim.counters.bytes_written - b1) as f64 / (sim.tick - t1) as f64;
        sim.counters.bytes_written + (per_tick * (sim.total - sim.tick) as f64) as u64
    }

    /// Up to this many stable ticks, [`Self::expected_bytes_written`] runs the whole plan (a few
    /// seconds at the planner's speed).
    pub const EXACT_BYTES_TICKS: u64 = 40_000_000;

    pub(crate) fn rng_state(&self) -> [u64; 4] {
        self.rng.state()
    }

    /// The state a run changes, for [`crate::snapshot`].
    #[allow(clippy::type_complexity)]
    pub(crate) fn dynamic_state(&self) -> (u64, bool, Option<bool>, u64, u64, &[Vec<LiveFile>]) {
        (
            self.rapid_len,
            self.rapid.is_empty() && self.rapid_len > 0,
            self.pending,
            self.target,
            self.ceiling,
            &self.cells,
        )
    }

    /// Puts a saved run's state into a planner made from the same profile and configuration, and
    /// recounts everything derived from the live files.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn set_dynamic_state(
        &mut self,
        rng: [u64; 4],
        tick: u64,
        rapid_len: u64,
        rapid_dropped: bool,
        pending: Option<bool>,
        target: u64,
        ceiling: u64,
        counters: Counters,
        cells: Vec<Vec<LiveFile>>,
    ) -> Result<(), PlanError> {
        if cells.len() != self.cells.len() {
            return Err(PlanError::BadConfig(format!(
                "the saved run has {} histogram cells, the profile gives {}",
                cells.len(),
                self.cells.len()
            )));
        }
        if rapid_len > self.rapid_len || tick > self.total {
            return Err(PlanError::BadConfig(
                "the saved run is further along than its plan allows".into(),
            ));
        }
        self.rng = Rng::from_state(rng);
        self.tick = tick;
        self.rapid_len = rapid_len;
        if rapid_dropped {
            self.rapid = Vec::new();
        }
        self.pending = pending;
        self.target = target;
        self.ceiling = ceiling;
        self.size_live.iter_mut().for_each(|x| *x = 0);
        self.depth_live.iter_mut().for_each(|x| *x = 0);
        self.age_live.iter_mut().for_each(|x| *x = 0);
        self.age_size_live.iter_mut().for_each(|x| *x = 0);
        self.live = 0;
        self.allocated = (self.tree.len() as u64 - 1) * self.cfg.block_size;
        let (ns, nd) = (self.size_frac.len(), self.depth_frac.len());
        for (c, files) in cells.iter().enumerate() {
            let (a, s, d) = (c / (ns * nd), (c / nd) % ns, c % nd);
            for f in files {
                if f.dir as usize >= self.tree.len() {
                    return Err(PlanError::BadConfig(format!(
                        "saved file f{} lies in directory {} of a tree of {}",
                        f.created,
                        f.dir,
                        self.tree.len()
                    )));
                }
                if self.size_bin_of(f.size) != s
                    || self.depth_bin_of_dir(f.dir) != d
                    || age_bin(&self.age_edges, f.created, self.total) != a
                {
                    return Err(PlanError::BadConfig(format!(
                        "saved file f{} lies in a histogram cell it does not belong to",
                        f.created
                    )));
                }
                self.age_size_live[a * ns + s] += 1;
                self.size_live[s] += 1;
                self.depth_live[d] += 1;
                self.age_live[a] += 1;
                self.live += 1;
                self.allocated += self.alloc(f.size);
            }
        }
        self.cells = cells;
        self.counters = counters;
        Ok(())
    }

    pub fn tree(&self) -> &DirTree {
        &self.tree
    }
    pub fn config(&self) -> &PlanConfig {
        &self.cfg
    }
    pub fn phase(&self) -> Phase {
        if self.tick >= self.total {
            Phase::Done
        } else if self.tick < self.rapid_len {
            Phase::Rapid
        } else {
            Phase::Stable
        }
    }
    /// Ticks done so far.
    pub fn tick(&self) -> u64 {
        self.tick
    }
    /// The theorem's T: the run's length at perfect convergence.
    pub fn total(&self) -> u64 {
        self.total
    }
    /// K: files made by the rapid phase.
    pub fn rapid_files(&self) -> u64 {
        self.rapid_len
    }
    pub fn live(&self) -> u64 {
        self.live
    }
    pub fn allocated(&self) -> u64 {
        self.allocated
    }
    /// Target bytes u*C (lowered if the file system filled up early).
    pub fn target_bytes(&self) -> u64 {
        self.target
    }
    /// u*C as configured, before any lowering.
    pub fn initial_target_bytes(&self) -> u64 {
        self.initial_target
    }
    /// Half-width of the band the stable phase keeps the allocated bytes in.
    pub fn band(&self) -> u64 {
        self.band
    }
    pub fn ceiling(&self) -> u64 {
        self.ceiling
    }

    pub fn size_targets(&self) -> &[f64] {
        &self.size_frac
    }
    pub fn depth_targets(&self) -> &[f64] {
        &self.depth_frac
    }
    pub fn age_targets(&self) -> &[f64] {
        &self.age_frac
    }
    pub fn age_edges(&self) -> &[f64] {
        &self.age_edges
    }
    pub fn size_counts(&self) -> &[u64] {
        &self.size_live
    }
    pub fn depth_counts(&self) -> &[u64] {
        &self.depth_live
    }
    /// Live files per age bin as steered (ages relative to T).
    pub fn planned_age_counts(&self) -> &[u64] {
        &self.age_live
    }

    /// Live files per age bin if the run ended now: ages relative to the ticks done. Equal to
    /// [`planned_age_counts`](Self::planned_age_counts) at T. Walks every live file.
    pub fn age_counts_now(&self) -> Vec<u64> {
        let mut out = vec![0; self.age_frac.len()];
        for f in self.live_files() {
            out[age_bin(&self.age_edges, f.created, self.tick)] += 1;
        }
        out
    }

    pub fn live_files(&self) -> impl Iterator<Item = &LiveFile> {
        self.cells.iter().flatten()
    }

    /// Checks the invariants a planner relies on, for one read back from a file: a state that passed
    /// its checksum but was written by a buggy or foreign program must not make the planner panic.
    pub fn check_consistency(&self) -> Result<(), PlanError> {
        self.consistency().map_err(PlanError::BadConfig)
    }

    fn consistency(&self) -> Result<(), String> {
        let (na, ns, nd) = (
            self.age_frac.len(),
            self.size_frac.len(),
            self.depth_frac.len(),
        );
        if na == 0 || ns == 0 || nd == 0 {
            return Err("empty histogram".into());
        }
        let same = |a: usize, b: usize, what: &str| {
            if a == b {
                Ok(())
            } else {
                Err(format!("{what}: {a} entries, expected {b}"))
            }
        };
        same(self.cells.len(), na * ns * nd, "cells")?;
        same(self.age_size_live.len(), na * ns, "age-size counts")?;
        same(self.size_live.len(), ns, "size counts")?;
        same(self.size_lo.len(), ns, "size bins")?;
        same(self.size_hi.len(), ns, "size bins")?;
        same(self.size_cum.len(), ns, "size weights")?;
        same(self.size_enabled.len(), ns, "size bins")?;
        same(self.depth_live.len(), nd, "depth counts")?;
        same(self.depth_of.len(), nd, "depth bins")?;
        same(self.depth_cum.len(), nd, "depth weights")?;
        same(self.age_live.len(), na, "age counts")?;
        same(self.age_edges.len(), na, "age edges")?;
        same(
            self.bin_of_depth.len(),
            self.tree.max_depth() as usize + 1,
            "depth table",
        )?;
        let deepest = self.tree.max_depth();
        if self
            .depth_frac
            .iter()
            .zip(&self.depth_of)
            .any(|(&f, &d)| f > 0.0 && d > deepest)
        {
            return Err("a depth bin lies below the directory tree".into());
        }
        let mut live = 0u64;
        let mut bytes = (self.tree.len() as u64 - 1) * self.cfg.block_size;
        for f in self.cells.iter().flatten() {
            if f.dir as usize >= self.tree.len() {
                return Err(format!(
                    "file f{} in directory {} of {}",
                    f.created,
                    f.dir,
                    self.tree.len()
                ));
            }
            live += 1;
            bytes += self.alloc(f.size);
        }
        same(live as usize, self.live as usize, "live files")?;
        if bytes != self.allocated {
            return Err(format!(
                "allocated bytes {} but the files hold {bytes}",
                self.allocated
            ));
        }
        for (what, counts) in [
            ("size", &self.size_live),
            ("depth", &self.depth_live),
            ("age", &self.age_live),
        ] {
            if counts.iter().sum::<u64>() != live {
                return Err(format!("{what} counts do not add up to the live files"));
            }
        }
        if self.tick > self.total
            || (self.tick < self.rapid_len && self.rapid.len() as u64 != self.rapid_len)
        {
            return Err("tick outside the run".into());
        }
        Ok(())
    }

    /// Heap bytes the planner holds (live-file cells, rapid list, tree paths): for the memory
    /// benchmark, so it can report bytes per live file without guessing.
    pub fn heap_bytes(&self) -> u64 {
        let cells: usize = self
            .cells
            .iter()
            .map(|c| c.capacity() * std::mem::size_of::<LiveFile>())
            .sum::<usize>()
            + self.cells.capacity() * std::mem::size_of::<Vec<LiveFile>>();
        let rapid = self.rapid.capacity() * std::mem::size_of::<LiveFile>();
        (cells + rapid + self.tree.heap_bytes()) as u64
    }

    /// Size bins the run makes files in, but only up to 1% of the target bytes: their upper edge
    /// lies above it, and files that large would each swing the fullness by more than 1%.
    /// `(bin, the largest size made)`.
    pub fn clipped_bins(&self) -> Vec<(usize, u64)> {
        (0..self.size_frac.len())
            .filter(|&s| self.size_enabled[s] && self.size_hi[s] > self.churn_limit)
            .map(|s| (s, self.churn_limit))
            .collect()
    }

    /// Size bins the run makes no files in at this capacity, and why.
    pub fn unmeetable_bins(&self) -> Vec<UnmeetableBin> {
        let room = self.cfg.capacity.saturating_sub(self.initial_target);
        (0..self.size_frac.len())
            .filter(|&s| self.size_frac[s] > 0.0 && !self.size_enabled[s])
            .map(|s| {
                let min = self.alloc(self.size_lo[s]);
                UnmeetableBin {
                    bin: s,
                    min_bytes: self.size_lo[s],
                    room_bytes: room,
                    target_fraction: self.size_frac[s],
                    reason: if min > room {
                        format!(
                            "its smallest file ({}, {} on disk) does not fit in the {} above the target fullness",
                            human_bytes(self.size_lo[s]),
                            human_bytes(min),
                            human_bytes(room)
                        )
                    } else {
                        format!(
                            "its smallest file ({}) is larger than {}, 1% of the target bytes: each create or delete would swing the fullness",
                            human_bytes(self.size_lo[s]),
                            human_bytes(self.churn_limit)
                        )
                    },
                }
            })
            .collect()
    }
}

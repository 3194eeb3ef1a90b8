//! Which creation ticks are still live, with range counts in O(log T): lets the run check the age
//! histogram's fit "as if it ended now" every 1000 ticks without walking every live file.
//! A bitset over ticks plus a Fenwick tree over its 64-tick words: about 0.19 bytes per tick, so it
//! is only built when --confidence asks for it.

pub struct LiveTicks {
    bits: Vec<u64>,
    tree: Vec<u32>,
}

impl LiveTicks {
    pub fn new(ticks: u64) -> LiveTicks {
        let words = (ticks as usize).div_ceil(64) + 1;
        LiveTicks {
            bits: vec![0; words],
            tree: vec![0; words + 1],
        }
    }

    fn grow(&mut self, tick: u64) {
        let need = tick as usize / 64 + 1;
        if need > self.bits.len() {
            // Rare (only past T); rebuild the Fenwick tree at twice the size.
            let words = need * 2;
            self.bits.resize(words, 0);
            self.tree = vec![0; words + 1];
            for w in 0..self.bits.len() {
                let c = self.bits[w].count_ones();
                if c > 0 {
                    self.add_word(w, c as i64);
                }
            }
        }
    }

    fn add_word(&mut self, word: usize, delta: i64) {
        let mut i = word + 1;
        while i < self.tree.len() {
            self.tree[i] = (self.tree[i] as i64 + delta) as u32;
            i += i & i.wrapping_neg();
        }
    }

    pub fn insert(&mut self, tick: u64) {
        self.grow(tick);
        let (w, b) = (tick as usize / 64, tick % 64);
        if self.bits[w] & (1 << b) == 0 {
            self.bits[w] |= 1 << b;
            self.add_word(w, 1);
        }
    }

    pub fn remove(&mut self, tick: u64) {
        let (w, b) = (tick as usize / 64, tick % 64);
        if w < self.bits.len() && self.bits[w] & (1 << b) != 0 {
            self.bits[w] &= !(1 << b);
            self.add_word(w, -1);
        }
    }

    /// Live ticks below `tick`.
    pub fn below(&self, tick: u64) -> u64 {
        let w = (tick as usize / 64).min(self.bits.len());
        let mut sum = 0u64;
        let mut i = w;
        while i > 0 {
            sum += self.tree[i] as u64;
            i -= i & i.wrapping_neg();
        }
        if w < self.bits.len() {
            let b = tick % 64;
            sum += (self.bits[w] & ((1u64 << b) - 1)).count_ones() as u64;
        }
        sum
    }

    /// Live files per age bin if the run ended after `now` ticks (bins as in the planner).
    pub fn age_counts(&self, edges: &[f64], now: u64) -> Vec<u64> {
        // Bin b holds ticks c with (now - c) / now in (e[b-1], e[b]]: c in [lo_b, hi_b).
        // Find each boundary with the planner's own rule, so both always agree.
        let first_tick_in = |b: usize| -> u64 {
            // Smallest c whose bin is <= b: bins fall as c grows.
            let (mut lo, mut hi) = (0u64, now);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if fsage_plan::theorem::age_bin(edges, mid, now) <= b {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            lo
        };
        let mut counts = vec![0; edges.len()];
        let mut upper = now;
        for (b, slot) in counts.iter_mut().enumerate() {
            let lower = if b + 1 == edges.len() {
                0
            } else {
                first_tick_in(b)
            };
            let lower = lower.min(upper);
            *slot = self.below(upper) - self.below(lower);
            upper = lower;
        }
        counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_ranges_and_agrees_with_the_planners_binning() {
        let mut lt = LiveTicks::new(1000);
        for t in (0..1000).step_by(3) {
            lt.insert(t);
        }
        lt.remove(0);
        assert_eq!(lt.below(10), 3); // 3, 6, 9
        assert_eq!(lt.below(1000), 333);
        let edges = [0.1, 0.5, 1.0];
        let counts = lt.age_counts(&edges, 1000);
        let mut want = vec![0u64; 3];
        for t in (3..1000).step_by(3) {
            want[fsage_plan::theorem::age_bin(&edges, t, 1000)] += 1;
        }
        assert_eq!(counts, want);
        lt.insert(5000);
        assert_eq!(lt.below(6000), 334);
    }
}

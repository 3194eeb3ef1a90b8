//! The convergence theorem (Geriatrix, ATC 2018, Appendix A): how many ticks make the age
//! histogram converge.
//!
//! With K live files after the rapid phase, target fraction g_b and relative width s_b of age bin b
//! (b = B the oldest), T = max(2 K g_b / s_b for b < B, K / s_B). Every rapid-phase file then falls
//! in the oldest bin, each younger bin sees enough creates, and the deletes suffice to trim them.

/// Relative width of every age bin, from the bins' upper edges as fractions of the oldest age.
pub fn widths(edges: &[f64]) -> Vec<f64> {
    let mut prev = 0.0;
    edges
        .iter()
        .map(|&e| {
            let w = e - prev;
            prev = e;
            w
        })
        .collect()
}

/// The theorem's T for `k` live files, target fractions `g` and bin edges `edges` (youngest first,
/// the last edge 1). Rounded up, and never below `k` (the rapid phase is part of the run). Also at
/// least one tick per wanted bin (1 / s_b where g_b > 0): for a small K the theorem alone can make a
/// narrow youngest bin span less than one tick, so no file could ever fall in it and the last
/// creates would land in the next, possibly unwanted, bin.
pub fn ticks_to_converge(k: u64, g: &[f64], edges: &[f64]) -> u64 {
    let s = widths(edges);
    let b = s.len();
    let kf = k as f64;
    let mut t = kf / s[b - 1];
    for i in 0..b - 1 {
        t = t.max(2.0 * kf * g[i] / s[i]);
    }
    for i in 0..b {
        if g[i] > 0.0 {
            t = t.max(1.0 / s[i]);
        }
    }
    (t.ceil() as u64).max(k)
}

/// The age bin (0 = youngest) of a file created at tick `created` when the run has `total` ticks:
/// its relative age is (total - created) / total, and it belongs to the first bin whose upper edge is
/// at least that. Used both to steer and to report, so the two always agree.
#[inline]
pub fn age_bin(edges: &[f64], created: u64, total: u64) -> usize {
    if total == 0 {
        return edges.len() - 1;
    }
    let rel = total.saturating_sub(created) as f64 / total as f64;
    edges.partition_point(|&e| e < rel).min(edges.len() - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn theorem_takes_the_binding_bin() {
        // Two bins of equal width, 30% young: 2*K*0.3/0.5 = 1.2K, oldest K/0.5 = 2K.
        assert_eq!(ticks_to_converge(1000, &[0.3, 0.7], &[0.5, 1.0]), 2000);
        // A narrow young bin dominates: 2*1000*0.5/0.01 = 100000.
        assert_eq!(ticks_to_converge(1000, &[0.5, 0.5], &[0.01, 1.0]), 100_000);
        assert_eq!(ticks_to_converge(10, &[1.0], &[1.0]), 10);
        // A wanted bin narrower than one tick at the theorem's T widens T to one tick for it.
        assert_eq!(ticks_to_converge(10, &[0.001, 0.999], &[1e-4, 1.0]), 10_000);
        // An unwanted narrow bin does not.
        assert_eq!(ticks_to_converge(10, &[0.0, 1.0], &[1e-4, 1.0]), 11);
    }

    #[test]
    fn rapid_files_land_in_the_oldest_bin() {
        let edges = [0.25, 0.5, 1.0];
        let g = [0.2, 0.3, 0.5];
        let k = 500;
        let t = ticks_to_converge(k, &g, &edges);
        for c in 0..k {
            assert_eq!(age_bin(&edges, c, t), 2);
        }
        assert_eq!(age_bin(&edges, t - 1, t), 0);
    }

    #[test]
    fn bin_edges_are_inclusive_above() {
        let edges = [0.25, 0.5, 1.0];
        // created at 75 of 100: relative age 0.25 exactly, bin 0.
        assert_eq!(age_bin(&edges, 75, 100), 0);
        assert_eq!(age_bin(&edges, 74, 100), 1);
        assert_eq!(age_bin(&edges, 0, 100), 2);
    }
}

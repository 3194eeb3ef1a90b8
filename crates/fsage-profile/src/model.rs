//! The in-memory profile: validated, so that every consumer can rely on its invariants.

/// Fraction of the capacity that holds data, in (0, 1].
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Fullness(f64);

impl Fullness {
    /// `None` unless `0 < u <= 1` (NaN is refused).
    pub fn new(u: f64) -> Option<Fullness> {
        (u > 0.0 && u <= 1.0).then_some(Fullness(u))
    }
    pub fn get(self) -> f64 {
        self.0
    }
}

/// A file-size bin: files larger than the previous bin's edge and at most `max_bytes`.
/// The first bin starts at 0 bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SizeBin {
    pub max_bytes: u64,
    pub weight: f64,
}

/// Files at `depth` directory components below the root (0 = in the root), and `subdirs`: how many
/// directories sit at this depth, i.e. are children of depth-`depth` directories and so hold the
/// files of depth `depth + 1`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DepthBin {
    pub depth: u32,
    pub weight: f64,
    pub subdirs: u64,
}

/// A relative-age bin: files whose age divided by the oldest bin's `age` lies in
/// (previous edge / oldest, `age` / oldest]. Ages are in any unit; only ratios matter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AgeBin {
    pub age: f64,
    pub weight: f64,
}

/// A validated aging profile. Invariants (enforced by the parser): every histogram is non-empty,
/// its keys strictly increasing, its weights finite, non-negative and not all zero.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub name: String,
    pub description: String,
    /// Where the numbers come from (a citation).
    pub source: String,
    /// Fullness used when the user gives none.
    pub fullness: Fullness,
    pub sizes: Vec<SizeBin>,
    pub depths: Vec<DepthBin>,
    pub ages: Vec<AgeBin>,
}

/// Weights normalised to fractions that sum to 1.
pub fn fractions(weights: impl Iterator<Item = f64> + Clone) -> Vec<f64> {
    let total: f64 = weights.clone().sum();
    weights.map(|w| w / total).collect()
}

impl Profile {
    pub fn size_fractions(&self) -> Vec<f64> {
        fractions(self.sizes.iter().map(|b| b.weight))
    }
    pub fn depth_fractions(&self) -> Vec<f64> {
        fractions(self.depths.iter().map(|b| b.weight))
    }
    pub fn age_fractions(&self) -> Vec<f64> {
        fractions(self.ages.iter().map(|b| b.weight))
    }
    /// Upper edge of each age bin as a fraction of the oldest age, so the last is 1.
    pub fn age_edges(&self) -> Vec<f64> {
        let oldest = self.ages.last().map_or(1.0, |b| b.age);
        let mut edges: Vec<f64> = self.ages.iter().map(|b| b.age / oldest).collect();
        if let Some(last) = edges.last_mut() {
            *last = 1.0;
        }
        edges
    }
}

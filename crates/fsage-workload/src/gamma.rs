//! Gamma-distributed file sizes, as Filebench's `cvar-gamma` (shape `gamma`, mean `mean`, so the
//! scale is mean / shape), drawn with Marsaglia and Tsang's method from fsage's seeded generator.

use fsage_plan::Rng;

/// A standard normal deviate (Box-Muller; one of the pair is enough here).
fn normal(rng: &mut Rng) -> f64 {
    let u1 = 1.0 - rng.unit(); // (0, 1]
    let u2 = rng.unit();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// One draw of Gamma(shape, 1).
pub fn standard_gamma(rng: &mut Rng, shape: f64) -> f64 {
    if shape < 1.0 {
        // Gamma(a) = Gamma(a + 1) * U^(1/a).
        let u = 1.0 - rng.unit();
        return standard_gamma(rng, shape + 1.0) * u.powf(1.0 / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal(rng);
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let u = 1.0 - rng.unit();
        if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return d * v;
        }
    }
}

/// A file size in bytes with the given mean and shape.
pub fn size(rng: &mut Rng, mean: f64, shape: f64) -> u64 {
    let x = standard_gamma(rng, shape) * mean / shape;
    x.round().min(1e15) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Mean and shape (mean^2 / variance) of 10^5 draws within 2% of what was asked.
    #[test]
    fn mean_and_shape_within_two_percent() {
        for (mean, shape, seed) in [
            (131072.0, 1.5, 1),
            (16384.0, 1.5, 2),
            (4096.0, 0.5, 3),
            (1e6, 4.0, 4),
        ] {
            let mut rng = Rng::new(seed);
            let n = 100_000;
            let xs: Vec<f64> = (0..n).map(|_| size(&mut rng, mean, shape) as f64).collect();
            let m = xs.iter().sum::<f64>() / n as f64;
            let var = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1) as f64;
            let k = m * m / var;
            assert!((m / mean - 1.0).abs() < 0.02, "mean {m} vs {mean}");
            assert!(
                (k / shape - 1.0).abs() < 0.02,
                "shape {k} vs {shape} (mean {mean})"
            );
        }
    }
}

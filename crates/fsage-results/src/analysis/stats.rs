//! Means and Student-t confidence intervals.

use serde::{Deserialize, Serialize};

/// Two-sided 97.5% quantiles of Student's t for 1 to 30 degrees of freedom.
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];
/// Beyond 30: (df, quantile), interpolated linearly in 1/df, the standard way to read the table.
const T975_TAIL: [(f64, f64); 4] = [(30.0, 2.042), (40.0, 2.021), (60.0, 2.000), (120.0, 1.980)];

/// The t quantile for a 95% two-sided interval with `df` degrees of freedom (df >= 1).
pub fn t975(df: u64) -> f64 {
    if df == 0 {
        return f64::INFINITY;
    }
    if df <= 30 {
        return T975[df as usize - 1];
    }
    let x = 1.0 / df as f64;
    for w in T975_TAIL.windows(2) {
        let (d0, q0) = w[0];
        let (d1, q1) = w[1];
        if (df as f64) <= d1 {
            let (x0, x1) = (1.0 / d0, 1.0 / d1);
            return q0 + (q1 - q0) * (x - x0) / (x1 - x0);
        }
    }
    // From 120 to infinity (x = 0, quantile 1.960).
    let x0 = 1.0 / 120.0;
    1.960 + (1.980 - 1.960) * x / x0
}

/// Mean of repetitions with its 95% confidence interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeanCi {
    pub n: u64,
    pub mean: f64,
    /// Sample standard deviation (n - 1); 0 for one value.
    pub sd: f64,
    /// Half-width of the 95% interval (Student t, n - 1 degrees of freedom); `None` for one value.
    pub ci95: Option<f64>,
}

impl MeanCi {
    pub fn of(xs: &[f64]) -> MeanCi {
        let n = xs.len() as u64;
        if n == 0 {
            return MeanCi {
                n,
                mean: f64::NAN,
                sd: 0.0,
                ci95: None,
            };
        }
        let mean = xs.iter().sum::<f64>() / n as f64;
        if n == 1 {
            return MeanCi {
                n,
                mean,
                sd: 0.0,
                ci95: None,
            };
        }
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let sd = var.sqrt();
        MeanCi {
            n,
            mean,
            sd,
            ci95: Some(t975(n - 1) * sd / (n as f64).sqrt()),
        }
    }

    pub fn low(&self) -> f64 {
        self.mean - self.ci95.unwrap_or(0.0)
    }
    pub fn high(&self) -> f64 {
        self.mean + self.ci95.unwrap_or(0.0)
    }
    /// Whether the two 95% intervals overlap (a value without an interval is a point).
    pub fn overlaps(&self, other: &MeanCi) -> bool {
        self.low() <= other.high() && other.low() <= self.high()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_table_and_interpolation() {
        assert_eq!(t975(1), 12.706);
        assert_eq!(t975(30), 2.042);
        assert!((t975(40) - 2.021).abs() < 1e-9);
        let t50 = t975(50);
        assert!(t50 < 2.021 && t50 > 2.000, "{t50}");
        assert!((t975(1_000_000) - 1.960).abs() < 1e-3);
    }

    #[test]
    fn mean_ci_known_answer() {
        // 10, 12, 14: mean 12, sd 2, half-width 4.303 * 2 / sqrt(3).
        let m = MeanCi::of(&[10.0, 12.0, 14.0]);
        assert_eq!(m.mean, 12.0);
        assert!((m.sd - 2.0).abs() < 1e-12);
        let want = 4.303 * 2.0 / 3f64.sqrt();
        assert!((m.ci95.unwrap() - want).abs() < 1e-9);
        assert_eq!(MeanCi::of(&[5.0]).ci95, None);
    }
}

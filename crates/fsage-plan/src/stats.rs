//! Goodness of fit: RMSE between fractions, and the chi-squared test's p-value.

/// Root mean squared error between two equally long lists of fractions.
pub fn rmse(ideal: &[f64], actual: &[f64]) -> f64 {
    if ideal.is_empty() {
        return 0.0;
    }
    let sum: f64 = ideal
        .iter()
        .zip(actual)
        .map(|(a, b)| (a - b) * (a - b))
        .sum();
    (sum / ideal.len() as f64).sqrt()
}

/// Fractions of a histogram of counts (all zero when the total is zero).
pub fn to_fractions(counts: &[u64]) -> Vec<f64> {
    let total: u64 = counts.iter().sum();
    counts
        .iter()
        .map(|&c| {
            if total == 0 {
                0.0
            } else {
                c as f64 / total as f64
            }
        })
        .collect()
}

/// Chi-squared goodness of fit of observed counts against expected fractions: the p-value, i.e. the
/// probability of a fit at least this bad if the counts were drawn from the target. The test needs
/// an expected count in every cell, so a bin the target gives no files is pooled with its next
/// non-empty neighbour (the last ones with the one before them).
pub fn chi2_p(observed: &[u64], expected_frac: &[f64]) -> f64 {
    let n: u64 = observed.iter().sum();
    if n == 0 {
        return 0.0;
    }
    let mut cells: Vec<(f64, f64)> = Vec::new();
    let mut pending = (0.0, 0.0);
    for (&o, &f) in observed.iter().zip(expected_frac) {
        pending.0 += o as f64;
        pending.1 += f * n as f64;
        if pending.1 > 0.0 {
            cells.push(pending);
            pending = (0.0, 0.0);
        }
    }
    match cells.last_mut() {
        Some(last) => last.0 += pending.0,
        None => return 0.0,
    }
    if cells.len() < 2 {
        return 1.0;
    }
    let stat: f64 = cells.iter().map(|(o, e)| (o - e).powi(2) / e).sum();
    upper_gamma_regularized((cells.len() - 1) as f64 / 2.0, stat / 2.0)
}

/// ln Γ(x) for x > 0 (Lanczos approximation, g = 7, nine terms).
fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + 7.5;
    for (i, &c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Q(a, x) = Γ(a, x) / Γ(a): by its power series below a + 1, by a continued fraction above.
fn upper_gamma_regularized(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    let log_prefactor = a * x.ln() - x - ln_gamma(a);
    if x < a + 1.0 {
        // P(a, x) = e^{-x} x^a / Γ(a+1) * Σ x^n / ((a+1)...(a+n))
        let mut term = 1.0 / a;
        let mut sum = term;
        let mut ap = a;
        for _ in 0..10_000 {
            ap += 1.0;
            term *= x / ap;
            sum += term;
            if term.abs() < sum.abs() * 1e-15 {
                break;
            }
        }
        (1.0 - sum * log_prefactor.exp()).clamp(0.0, 1.0)
    } else {
        // Modified Lentz evaluation of the continued fraction for Γ(a, x).
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..10_000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < tiny {
                d = tiny;
            }
            c = b + an / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            let delta = d * c;
            h *= delta;
            if (delta - 1.0).abs() < 1e-15 {
                break;
            }
        }
        (log_prefactor.exp() * h).clamp(0.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gamma_matches_known_values() {
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-12);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-12);
    }

    #[test]
    fn chi2_survival_matches_tables() {
        // df = 1: P(X > 3.841) = 0.05; df = 10: P(X > 18.307) = 0.05; df = 2: P(X > x) = e^{-x/2}.
        assert!((upper_gamma_regularized(0.5, 3.841_459 / 2.0) - 0.05).abs() < 1e-5);
        assert!((upper_gamma_regularized(5.0, 18.307_04 / 2.0) - 0.05).abs() < 1e-5);
        assert!((upper_gamma_regularized(1.0, 1.5) - (-1.5f64).exp()).abs() < 1e-12);
    }

    #[test]
    fn perfect_fit_has_p_one_and_bad_fit_p_zero() {
        assert!((chi2_p(&[250, 250, 500], &[0.25, 0.25, 0.5]) - 1.0).abs() < 1e-12);
        assert!(chi2_p(&[900, 50, 50], &[0.25, 0.25, 0.5]) < 1e-10);
        // An empty-target bin is pooled with its neighbour: one stray file barely matters...
        let pooled = chi2_p(&[1, 0, 250, 750], &[0.0, 0.0, 0.25, 0.75]);
        assert!(pooled > 0.9, "{pooled}");
        // ...but many do.
        assert!(chi2_p(&[200, 0, 250, 550], &[0.0, 0.0, 0.25, 0.75]) < 1e-6);
    }

    #[test]
    fn rmse_of_known_errors() {
        assert!((rmse(&[0.5, 0.5], &[0.6, 0.4]) - 0.1).abs() < 1e-12);
        assert_eq!(to_fractions(&[0, 0]), vec![0.0, 0.0]);
    }
}

//! Random variables of the `.f` language: `define randvar` / `randvar(...)` (uniform, gamma,
//! tabular, with `min`, `round`, `seed`, `randsrc`) and `cvar(type=cvar-*, parameters=...)`.
//! Every draw comes from the thread's seeded generator, so `--seed` fixes them all (a `seed=` or
//! `randsrc=` of the file is kept in the model but does not change the draws).

use crate::gamma;
use fsage_plan::Rng;
use serde::{Deserialize, Serialize};

/// A distribution before `min`, `round` and the clamps are applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dist {
    /// Uniform on `[lo, hi]`.
    Uniform {
        lo: f64,
        hi: f64,
    },
    /// Gamma of shape `shape` and mean `mean` (scale `mean / shape`), shifted by `shift`.
    Gamma {
        mean: f64,
        shape: f64,
        shift: f64,
    },
    /// Rows of (percent, low, high): a row drawn by its percent, then uniform on its range.
    Table {
        rows: Vec<(f64, f64, f64)>,
    },
    Normal {
        mean: f64,
        sigma: f64,
    },
    /// exp(N(scale, shape)): Filebench's cvar-lognormal names mu `scale` and sigma `shape`.
    LogNormal {
        mu: f64,
        sigma: f64,
    },
    Exponential {
        mean: f64,
    },
    Triangular {
        lo: f64,
        hi: f64,
        mode: f64,
    },
    Weibull {
        shape: f64,
        scale: f64,
    },
    Erlang {
        shape: u32,
        rate: f64,
    },
}

/// A random variable: a distribution, a floor, a rounding step, an optional ceiling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RandVar {
    pub dist: Dist,
    pub min: f64,
    pub max: Option<f64>,
    /// Results are rounded to a multiple of this (0: to the nearest integer).
    pub round: f64,
}

impl RandVar {
    /// One draw, at least `min`, at most `max`, rounded, as an integer.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let mut x = match &self.dist {
            Dist::Uniform { lo, hi } => lo + rng.unit() * (hi - lo),
            Dist::Gamma { mean, shape, shift } => {
                shift + gamma::standard_gamma(rng, *shape) * (mean / shape)
            }
            Dist::Table { rows } => {
                let total: f64 = rows.iter().map(|r| r.0).sum();
                let mut u = rng.unit() * total;
                let mut pick = rows.last().copied().unwrap_or((1.0, 0.0, 0.0));
                for r in rows {
                    if u < r.0 {
                        pick = *r;
                        break;
                    }
                    u -= r.0;
                }
                pick.1 + rng.unit() * (pick.2 - pick.1)
            }
            Dist::Normal { mean, sigma } => mean + sigma * normal(rng),
            Dist::LogNormal { mu, sigma } => (mu + sigma * normal(rng)).exp(),
            Dist::Exponential { mean } => -mean * (1.0 - rng.unit()).ln(),
            Dist::Triangular { lo, hi, mode } => {
                let u = rng.unit();
                let c = if hi > lo {
                    (mode - lo) / (hi - lo)
                } else {
                    0.5
                };
                if u < c {
                    lo + ((hi - lo) * (mode - lo) * u).sqrt()
                } else {
                    hi - ((hi - lo) * (hi - mode) * (1.0 - u)).sqrt()
                }
            }
            Dist::Weibull { shape, scale } => scale * (-(1.0 - rng.unit()).ln()).powf(1.0 / shape),
            Dist::Erlang { shape, rate } => {
                (0..*shape).map(|_| -(1.0 - rng.unit()).ln() / rate).sum()
            }
        };
        if !x.is_finite() {
            x = self.min;
        }
        x = x.max(self.min);
        if let Some(m) = self.max {
            x = x.min(m);
        }
        if self.round > 0.0 {
            x = (x / self.round).round() * self.round;
        }
        x.max(0.0).round().min(1.8e19) as u64
    }

    /// The mean of the distribution (before the floor and rounding), for sizing and messages.
    pub fn mean(&self) -> f64 {
        let m = match &self.dist {
            Dist::Uniform { lo, hi } => (lo + hi) / 2.0,
            Dist::Gamma { mean, shift, .. } => shift + mean,
            Dist::Table { rows } => {
                let total: f64 = rows.iter().map(|r| r.0).sum();
                if total > 0.0 {
                    rows.iter().map(|r| r.0 * (r.1 + r.2) / 2.0).sum::<f64>() / total
                } else {
                    0.0
                }
            }
            Dist::Normal { mean, .. } => *mean,
            Dist::LogNormal { mu, sigma } => (mu + sigma * sigma / 2.0).exp(),
            Dist::Exponential { mean } => *mean,
            Dist::Triangular { lo, hi, mode } => (lo + hi + mode) / 3.0,
            Dist::Weibull { scale, .. } => *scale,
            Dist::Erlang { shape, rate } => *shape as f64 / rate,
        };
        let m = m.max(self.min);
        self.max.map_or(m, |x| m.min(x))
    }

    /// The largest value a draw can take, if the distribution is bounded (for buffer sizes).
    pub fn upper_bound(&self) -> Option<f64> {
        let b = match &self.dist {
            Dist::Uniform { hi, .. } | Dist::Triangular { hi, .. } => Some(*hi),
            Dist::Table { rows } => rows.iter().map(|r| r.2).reduce(f64::max),
            _ => None,
        };
        match (b, self.max) {
            (Some(b), Some(m)) => Some(b.min(m).max(self.min)),
            (None, Some(m)) => Some(m),
            (Some(b), None) => Some(b.max(self.min)),
            (None, None) => None,
        }
    }
}

/// A standard normal draw (Box-Muller).
fn normal(rng: &mut Rng) -> f64 {
    let u1 = (1.0 - rng.unit()).max(1e-300);
    let u2 = rng.unit();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// A number that is fixed or drawn anew at every use (an `iosize=$randvar`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Param {
    Fixed(u64),
    Rand(RandVar),
}

impl Param {
    pub fn get(&self, rng: &mut Rng) -> u64 {
        match self {
            Param::Fixed(v) => *v,
            Param::Rand(r) => r.sample(rng),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mean_of(r: &RandVar, n: usize) -> f64 {
        let mut rng = Rng::new(5);
        (0..n).map(|_| r.sample(&mut rng) as f64).sum::<f64>() / n as f64
    }

    #[test]
    fn table_draws_follow_the_percents() {
        let r = RandVar {
            dist: Dist::Table {
                rows: vec![(80.0, 1024.0, 4096.0), (20.0, 65536.0, 65536.0)],
            },
            min: 0.0,
            max: None,
            round: 0.0,
        };
        let mut rng = Rng::new(1);
        let big = (0..10_000).filter(|_| r.sample(&mut rng) == 65536).count();
        assert!((1800..2200).contains(&big), "{big}");
        assert!((r.mean() - (0.8 * 2560.0 + 0.2 * 65536.0)).abs() < 1.0);
    }

    #[test]
    fn gamma_mean_min_and_round_hold() {
        let r = RandVar {
            dist: Dist::Gamma {
                mean: 16384.0 - 512.0,
                shape: 1.5,
                shift: 512.0,
            },
            min: 512.0,
            max: None,
            round: 512.0,
        };
        let m = mean_of(&r, 20_000);
        assert!((m - 16384.0).abs() < 600.0, "{m}");
        let mut rng = Rng::new(2);
        for _ in 0..1000 {
            let v = r.sample(&mut rng);
            assert!(v >= 512 && v % 512 == 0, "{v}");
        }
    }

    #[test]
    fn uniform_and_cvars_stay_in_range() {
        let u = RandVar {
            dist: Dist::Uniform {
                lo: 4096.0,
                hi: 8192.0,
            },
            min: 0.0,
            max: None,
            round: 0.0,
        };
        let mut rng = Rng::new(3);
        assert!((0..1000).all(|_| (4096..=8192).contains(&u.sample(&mut rng))));
        assert!((mean_of(&u, 10_000) - 6144.0).abs() < 100.0);
        let e = RandVar {
            dist: Dist::Exponential { mean: 1000.0 },
            min: 0.0,
            max: Some(5000.0),
            round: 0.0,
        };
        assert!((0..1000).all(|_| e.sample(&mut rng) <= 5000));
    }
}

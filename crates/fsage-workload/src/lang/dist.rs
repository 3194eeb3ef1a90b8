//! Random variables: `define randvar`/`randvar(...)` (with `randtable`) and `cvar(...)`.

use super::lex::parse_size;
use super::parser::{Attr, Parser};
use super::{value_text, Value, MAX_ERLANG_SHAPE};
use crate::error::Error;
use crate::randvar::{Dist, RandVar};
use std::collections::HashMap;

impl Parser<'_> {
    /// `cvar(type=cvar-NAME, parameters=k:v;k:v, min=, max=, round=)`.
    pub(super) fn cvar(&mut self, line: usize, attrs: &[Attr]) -> Result<RandVar, Error> {
        let mut ty = None;
        let mut params = String::new();
        let mut r = RandVar {
            dist: Dist::Uniform { lo: 0.0, hi: 1.0 },
            min: 0.0,
            max: None,
            round: 0.0,
        };
        for a in attrs {
            match a.key.as_str() {
                "type" => ty = Some(self.string(a)?),
                "parameters" => params = self.raw(a),
                "min" => r.min = self.float(a)?,
                "max" => r.max = Some(self.float(a)?),
                "round" => r.round = self.float(a)?,
                other => {
                    return Err(self.err(
                        line,
                        format!(
                        "cvar: unsupported attribute {other:?} (type, parameters, min, max, round)"
                    ),
                    ))
                }
            }
        }
        let ty = ty.ok_or_else(|| self.err(line, "cvar without type="))?;
        let mut kv: HashMap<String, f64> = HashMap::new();
        for p in params.split(';') {
            let p = p.trim();
            if p.is_empty() {
                continue;
            }
            let (k, v) = p.split_once(':').ok_or_else(|| {
                self.err(line, format!("cvar parameter {p:?}: expected key:value"))
            })?;
            let num = match parse_size(v) {
                Some(n) if !v.contains('.') => n as f64,
                _ => v
                    .trim()
                    .parse()
                    .map_err(|_| self.err(line, format!("cvar parameter {k}: bad number {v:?}")))?,
            };
            kv.insert(k.trim().to_string(), num);
        }
        let known: &[&str] = match ty.as_str() {
            "cvar-gamma" => &["mean", "gamma"],
            "cvar-uniform" => &["lower", "upper"],
            "cvar-normal" => &["mean", "sigma"],
            "cvar-lognormal" => &["shape", "scale"],
            "cvar-exponential" => &["mean"],
            "cvar-triangular" => &["lower", "upper", "mode"],
            "cvar-weibull" => &["shape", "scale"],
            "cvar-erlang" => &["shape", "rate"],
            t => return Err(self.err(
                line,
                format!("cvar type {t:?} is not supported (cvar-gamma, -uniform, -normal, -lognormal, -exponential, -triangular, -weibull, -erlang)"),
            )),
        };
        if let Some(k) = kv.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(self.err(
                line,
                format!(
                    "{ty} parameter {k:?} is not supported ({})",
                    known.join(", ")
                ),
            ));
        }
        let g = |k: &str, d: f64| kv.get(k).copied().unwrap_or(d);
        r.dist = match ty.as_str() {
            "cvar-gamma" => {
                // Filebench's defaults: mean 4096, gamma 1.5.
                let (mean, shape) = (g("mean", 4096.0), g("gamma", 1.5));
                if !(mean > 0.0 && shape > 0.0 && mean.is_finite() && shape.is_finite()) {
                    return Err(self.err(line, "cvar-gamma mean and gamma must be positive"));
                }
                Dist::Gamma {
                    mean,
                    shape,
                    shift: 0.0,
                }
            }
            "cvar-uniform" => Dist::Uniform {
                lo: g("lower", 0.0),
                hi: g("upper", 1.0),
            },
            "cvar-normal" => Dist::Normal {
                mean: g("mean", 0.0),
                sigma: g("sigma", 1.0),
            },
            "cvar-lognormal" => Dist::LogNormal {
                mu: g("scale", 1.0),
                sigma: g("shape", 1.0),
            },
            "cvar-exponential" => Dist::Exponential {
                mean: g("mean", 1.0),
            },
            "cvar-triangular" => Dist::Triangular {
                lo: g("lower", 0.0),
                hi: g("upper", 1.0),
                mode: g("mode", 0.5),
            },
            "cvar-weibull" => Dist::Weibull {
                shape: g("shape", 1.0),
                scale: g("scale", 1.0),
            },
            _ => {
                let shape = g("shape", 1.0);
                if shape > MAX_ERLANG_SHAPE {
                    return Err(self.err(
                        line,
                        format!("{ty}: shape {shape} is more than {MAX_ERLANG_SHAPE} (each draw sums that many)"),
                    ));
                }
                Dist::Erlang {
                    shape: shape.max(1.0) as u32,
                    rate: g("rate", 1.0),
                }
            }
        };
        let bad = match &r.dist {
            Dist::Uniform { lo, hi } | Dist::Triangular { lo, hi, .. } => {
                lo > hi || lo.is_nan() || hi.is_nan()
            }
            Dist::Weibull { shape, scale } => !(*shape > 0.0 && *scale > 0.0),
            Dist::Erlang { rate, .. } => rate.is_nan() || *rate <= 0.0,
            Dist::Exponential { mean } => mean.is_nan() || *mean <= 0.0,
            _ => false,
        };
        if bad {
            return Err(self.err(line, format!("{ty}: parameters out of range")));
        }
        Ok(r)
    }

    /// `randvar(...)` or `define randvar`: type uniform (default), gamma or tabular, with
    /// `mean`, `gamma` (thousandths of the shape, as Filebench reads it), `min`, `round`,
    /// `randtable`, `seed`, `randsrc`.
    pub(super) fn randvar(
        &mut self,
        line: usize,
        attrs: &[Attr],
        define: bool,
    ) -> Result<RandVar, Error> {
        let mut ty = "uniform".to_string();
        let (mut mean, mut gamma, mut min, mut round) = (None, 1500.0, 0.0, 0.0);
        let mut table: Option<Vec<(f64, f64, f64)>> = None;
        for a in attrs {
            match a.key.as_str() {
                "name" if define => {}
                "type" => ty = self.string(a)?,
                "mean" => mean = Some(self.float(a)?),
                "gamma" => gamma = self.float(a)?,
                "min" => min = self.float(a)?,
                "round" => round = self.float(a)?,
                "seed" | "randsrc" => {
                    let what = a.key.clone();
                    self.note(format!(
                        "randvar {what}=: every draw comes from --seed (the file's {what} is not used)"
                    ));
                }
                "randtable" => table = Some(self.randtable(a)?),
                other => {
                    return Err(self.err(
                        a.line,
                        format!("randvar attribute {other:?} is not supported (name, type, mean, gamma, min, round, seed, randsrc, randtable)"),
                    ))
                }
            }
        }
        let shape = gamma / 1000.0;
        let dist = match ty.as_str() {
            "uniform" => {
                let m = mean.unwrap_or(min + 0.5);
                Dist::Uniform {
                    lo: min,
                    hi: min + 2.0 * (m - min).max(0.0),
                }
            }
            "gamma" => {
                if shape.is_nan() || shape <= 0.0 {
                    return Err(self.err(line, "randvar gamma: gamma must be positive"));
                }
                // Filebench: with no mean the mean is the shape itself.
                let m = mean.unwrap_or(shape);
                Dist::Gamma {
                    mean: (m - min).max(0.0),
                    shape,
                    shift: min,
                }
            }
            "tabular" => {
                let rows = table
                    .clone()
                    .ok_or_else(|| self.err(line, "randvar tabular needs randtable="))?;
                let total: f64 = rows.iter().map(|r| r.0).sum();
                if (total - 100.0).abs() > 0.5 {
                    return Err(self.err(
                        line,
                        format!("randtable percents add up to {total}, not 100"),
                    ));
                }
                match mean {
                    None => Dist::Table { rows },
                    Some(m) => {
                        // Filebench scales the table to the given mean, keeping its minimum.
                        let lo = rows.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
                        let tm = rows.iter().map(|r| r.0 * (r.1 + r.2) / 2.0).sum::<f64>() / total;
                        let k = if tm > lo { (m - min) / (tm - lo) } else { 1.0 };
                        Dist::Table {
                            rows: rows
                                .iter()
                                .map(|r| (r.0, min + (r.1 - lo) * k, min + (r.2 - lo) * k))
                                .collect(),
                        }
                    }
                }
            }
            t => {
                return Err(self.err(
                    line,
                    format!("randvar type {t:?} is not supported (uniform, gamma, tabular)"),
                ))
            }
        };
        if table.is_some() && ty != "tabular" {
            return Err(self.err(line, format!("randtable given to a {ty} randvar")));
        }
        Ok(RandVar {
            dist,
            min,
            max: None,
            round,
        })
    }

    /// `{{percent, low, high}, ...}`.
    pub(super) fn randtable(&mut self, a: &Attr) -> Result<Vec<(f64, f64, f64)>, Error> {
        let Some((s, e)) = a.val else {
            return Err(self.err(a.line, "randtable needs a value"));
        };
        let save = self.pos;
        self.pos = s;
        let r = (|| {
            self.expect_p('{', "to open randtable")?;
            let mut rows = Vec::new();
            loop {
                self.expect_p('{', "to open a randtable row")?;
                let mut row = Vec::new();
                for k in 0..3 {
                    let line = self.line();
                    let v = match self.expr()? {
                        Value::Int(v) => v as f64,
                        other => {
                            return Err(self.err(
                                line,
                                format!("randtable: bad number {}", value_text(&other)),
                            ))
                        }
                    };
                    row.push(v);
                    if k < 2 {
                        self.expect_p(',', "between a randtable row's numbers")?;
                    }
                }
                self.expect_p('}', "to close a randtable row of three numbers")?;
                if row[1] > row[2] {
                    return Err(self.err(self.line(), "randtable row: low above high"));
                }
                rows.push((row[0], row[1], row[2]));
                if self.is_p(',') {
                    self.pos += 1;
                    if self.is_p('}') {
                        break;
                    }
                    continue;
                }
                break;
            }
            self.expect_p('}', "to close randtable")?;
            Ok(rows)
        })();
        let at = self.pos;
        self.pos = save;
        let rows = r?;
        if at != e {
            return Err(self.err(a.line, "unexpected text after randtable"));
        }
        Ok(rows)
    }
}

//! Latency percentiles per flowop from the cells' full workload reports (the curve type is
//! fsage-results', re-exported here).

pub use fsage_results::analysis::latency_curves::*;

use crate::State;
use fsage_results::experiment::result::CellResult;
use std::collections::BTreeMap;

type Key = (String, String, (Option<String>, Option<u64>), State, String);

/// The curves of every flowop of the done cells, in the order first seen.
pub fn from_cells<'a>(cells: impl IntoIterator<Item = &'a CellResult>) -> Vec<FlowopCurve> {
    // Per key: per percentile, the values of the repetitions.
    let mut acc: BTreeMap<Key, (usize, Vec<Vec<f64>>)> = BTreeMap::new();
    let mut order: Vec<Key> = Vec::new();
    for c in cells.into_iter().filter(|c| c.is_done()) {
        let cell = &c.cell;
        let Some(reps) = c
            .workload_report
            .as_ref()
            .and_then(|w| w.get("reps"))
            .and_then(|r| r.as_array())
        else {
            continue;
        };
        for rep in reps {
            let Some(flowops) = rep.get("flowops").and_then(|f| f.as_array()) else {
                continue;
            };
            for f in flowops {
                let (Some(name), Some(stats)) =
                    (f.get("name").and_then(|n| n.as_str()), f.get("stats"))
                else {
                    continue;
                };
                if stats.get("ops").and_then(|o| o.as_u64()) == Some(0) {
                    continue;
                }
                let key: Key = (
                    cell.fs.label.clone(),
                    cell.workload.label.clone(),
                    (cell.device_label(), cell.latency_us().map(f64::to_bits)),
                    cell.state.state(),
                    name.to_string(),
                );
                let e = acc.entry(key.clone()).or_insert_with(|| {
                    order.push(key);
                    (0, vec![Vec::new(); PERCENTILES.len()])
                });
                e.0 += 1;
                for (i, (k, _)) in PERCENTILES.iter().enumerate() {
                    if let Some(v) = stats.get(*k).and_then(|v| v.as_f64()) {
                        e.1[i].push(v);
                    }
                }
            }
        }
    }
    order
        .into_iter()
        .map(|k| {
            let (reps, vals) = &acc[&k];
            let points = PERCENTILES
                .iter()
                .zip(vals)
                .filter(|(_, v)| !v.is_empty())
                .map(|((key, label), v)| {
                    let x = if *key == "max_us" {
                        v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
                    } else {
                        v.iter().sum::<f64>() / v.len() as f64
                    };
                    (label.to_string(), x)
                })
                .collect();
            let (fs, workload, (device_model, lat), state, flowop) = k;
            FlowopCurve {
                fs,
                workload,
                latency_us: lat.map(f64::from_bits),
                device_model,
                state,
                flowop,
                reps: *reps,
                points,
            }
        })
        .collect()
}

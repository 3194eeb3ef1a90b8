//! The cell results themselves: how many ran, which failed and why, and the machines they ran on.

use crate::html::page::{esc, table, Page};
use crate::html::Section;
use crate::inputs::ReportSet;
use fsage_profile::human_bytes;
use std::collections::BTreeSet;
use std::fmt::Write as _;

pub(in crate::html) fn render(p: &mut Page, set: &ReportSet) {
    let done = set.cells.iter().filter(|c| c.item.is_done()).count();
    let failed: Vec<Vec<String>> = set
        .cells
        .iter()
        .filter_map(|c| match &c.item.status {
            fsage_results::experiment::result::CellStatus::Failed { error } => {
                Some(vec![c.item.cell.id.clone(), error.clone()])
            }
            _ => None,
        })
        .collect();
    let mut c = format!(
        "<p class=\"verdict\">{} cells: {done} done, {} failed.</p>",
        set.cells.len(),
        failed.len()
    );
    if !failed.is_empty() {
        c.push_str(&table(&["cell", "error"], &failed));
    }
    let env: BTreeSet<String> = set
        .cells
        .iter()
        .filter_map(|c| c.item.environment.as_ref())
        .map(|e| {
            format!(
                "fsage {}, kernel {}, {} CPUs, {}",
                e.fsage_version,
                e.kernel,
                e.cpus,
                human_bytes(e.memory_bytes)
            )
        })
        .collect();
    if !env.is_empty() {
        let rows: Vec<Vec<String>> = env.into_iter().map(|e| vec![e]).collect();
        c.push_str("<p></p>");
        c.push_str(&table(&["environment"], &rows));
    }
    mix_table(
        &mut c,
        &fsage_results::experiment::result::hardware_mixes(set.cells.iter().map(|c| &c.item)),
        "Cells of one comparison ran on nodes of different hardware (CPU model or kernel): \
         their throughputs are not comparable.",
        "node hardware",
    );
    mix_table(
        &mut c,
        &fsage_results::experiment::result::storage_mixes(set.cells.iter().map(|c| &c.item)),
        "Cells of one comparison kept their working copies on different storage (memory or \
         disk): their throughputs are not comparable.",
        "working copy on",
    );
    // The sampled cells' time series, one collapsed block each.
    let mut sampled = 0;
    for cell in &set.cells {
        let Some(reps) = cell
            .item
            .workload_part::<Vec<fsage_results::bench::RepResult>>("reps")
        else {
            continue;
        };
        for r in reps {
            if let Some(tl) = &r.timeline {
                if sampled == 0 {
                    c.push_str(
                        "<p class=\"verdict\">Time series of the sampled cells (CPU \
                         utilization, requests in flight, ops/s):</p>\n",
                    );
                }
                sampled += 1;
                let _ = writeln!(
                    c,
                    "<details><summary>{}</summary>{}</details>",
                    esc(&cell.item.cell.id),
                    super::timeline::charts(tl, &cell.item.cell.id)
                );
            }
        }
    }
    lock_tables(&mut c, set);
    p.section(
        Section::Cells,
        "Cells",
        "Cell results as written by the experiment runner, one JSON file per cell. Failed cells \
         are left out of every analysis above.",
        &c,
    );
}

/// The cells that recorded lock contention (`lock_stats`): each one's most waited-on lock
/// instances, with what they are where their callers tell, and where the waits came from.
fn lock_tables(c: &mut String, set: &ReportSet) {
    let mut first = true;
    for cell in &set.cells {
        let Some(l) = cell
            .item
            .workload_part::<fsage_results::locks::LockReport>("lock_contention")
        else {
            continue;
        };
        if first {
            c.push_str(
                "<p class=\"verdict\">Lock contention by lock instance (lock:contention_begin/end \
                 tracepoints over each cell's measured phase; a name only where the callers tell \
                 it; in a guest under TCG the waits are emulated time):</p>\n",
            );
            first = false;
        }
        let emulated = cell
            .item
            .samples
            .first()
            .and_then(|s| fsage_results::experiment::result::platform_label(s.platform))
            .map_or(String::new(), |p| format!(", {p}"));
        let rows: Vec<Vec<String>> = l
            .locks
            .iter()
            .take(8)
            .map(|i| {
                vec![
                    format!("{:.3}", i.wait_total_ns as f64 / 1e9),
                    i.waits.to_string(),
                    format!("{:.1}", i.wait_max_ns as f64 / 1e6),
                    i.kind.clone(),
                    i.name.clone().unwrap_or_default(),
                    i.callers
                        .iter()
                        .take(3)
                        .map(|k| match k.path.first() {
                            Some(p) => format!("{} < {p} ({})", k.function, k.waits),
                            None => format!("{} ({})", k.function, k.waits),
                        })
                        .collect::<Vec<_>>()
                        .join("; "),
                ]
            })
            .collect();
        let _ =
            writeln!(
            c,
            "<details><summary>{}: {} waits, {:.1} s in all over {:.1} s{}{}</summary>{}</details>",
            esc(&cell.item.cell.id),
            l.waits,
            l.wait_total_ns as f64 / 1e9,
            l.recorded_s,
            esc(&emulated),
            if l.lost_events > 0 {
                format!(", {} events lost (a lower bound)", l.lost_events)
            } else {
                String::new()
            },
            table(
                &["wait (s)", "waits", "max (ms)", "kind", "what", "callers (waits)"],
                &rows
            )
        );
    }
}

/// A flag and a table of the comparisons whose cells ran on more than one kind of `what`
/// (nothing when there are none).
fn mix_table(
    c: &mut String,
    mixes: &[fsage_results::experiment::result::HardwareMix],
    flag: &str,
    what: &str,
) {
    if mixes.is_empty() {
        return;
    }
    let _ = write!(c, "<p class=\"verdict\">⚑ {flag}</p>");
    let rows: Vec<Vec<String>> = mixes
        .iter()
        .flat_map(|m| {
            m.kinds.iter().map(|(kind, hosts, n)| {
                vec![
                    m.comparison.clone(),
                    kind.clone(),
                    hosts.join(", "),
                    n.to_string(),
                ]
            })
        })
        .collect();
    c.push_str(&table(&["comparison", what, "hosts", "cells"], &rows));
}

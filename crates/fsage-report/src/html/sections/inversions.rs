//! Performance inversions: pairs of file systems whose order changes between device latencies,
//! and the paper's Table 1 form of them.

use crate::html::page::{table, Page};
use crate::html::Section;
use fsage_analysis::Analysis;
use fsage_units::format_latency_us;
use std::collections::{BTreeMap, BTreeSet};

pub(in crate::html) fn render(p: &mut Page, a: &Analysis, suffix: &str) {
    let rows: Vec<Vec<String>> = a
        .inversions
        .iter()
        .map(|i| {
            vec![
                i.workload.clone(),
                i.state.label(),
                i.faster_slow_device.clone(),
                i.faster_fast_device.clone(),
                format!(
                    "between {} and {}",
                    format_latency_us(i.from_us),
                    format_latency_us(i.to_us)
                ),
                if i.confirmed {
                    "yes".into()
                } else {
                    "unconfirmed (one repetition)".into()
                },
            ]
        })
        .collect();
    // No rows: the verdict says why, in place of an empty table.
    let mut c = if rows.is_empty() {
        "<p class=\"verdict\">No inversion: wherever two file systems' order is clear, it is the \
         same at every latency.</p>"
            .to_string()
    } else {
        table(
            &[
                "workload",
                "state",
                "faster on the slower device",
                "faster on the faster device",
                "order changes",
                "confirmed",
            ],
            &rows,
        )
    };
    // The paper's Table 1 form: per fs and workload, which file systems it inverts with.
    let mut t1: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for i in &a.inversions {
        let mark = if i.confirmed { "" } else { " (unconfirmed)" };
        t1.entry((i.faster_slow_device.clone(), i.workload.clone()))
            .or_default()
            .insert(format!("{}{mark}", i.faster_fast_device));
        t1.entry((i.faster_fast_device.clone(), i.workload.clone()))
            .or_default()
            .insert(format!("{}{mark}", i.faster_slow_device));
    }
    if !t1.is_empty() {
        let rows: Vec<Vec<String>> = t1
            .into_iter()
            .map(|((fs, wl), with)| vec![fs, wl, with.into_iter().collect::<Vec<_>>().join(", ")])
            .collect();
        c.push_str("<p></p>");
        c.push_str(&table(&["fs", "workload", "inverts with"], &rows));
    }
    p.section(
        Section::Inversions,
        &format!("Performance inversions{suffix}"),
        &format!(
            "Walking from the slowest device to the fastest, a pair of file systems is inverted \
             where the faster one at one latency is the slower one at the next latency at which \
             their order is clear. An order is clear when the means differ by more than {:.0}% \
             and their 95% intervals do not overlap; tied latencies are skipped. Where one of the \
             two has a single repetition there is no interval: the order of the means is taken, \
             and an inversion that rests on it is marked <i>unconfirmed</i> (it may be noise; \
             run more repetitions).",
            100.0 * a.options.inversion_margin
        ),
        &c,
    );
}

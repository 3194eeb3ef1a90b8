//! `fsage report INPUT... -o report.html`.

use crate::exit::{bad_input, CmdResult};
use clap::Args;
use fsage_experiment::AnalysisOptions;
use fsage_report::html::Section;
use fsage_report::{export, Html, Json, Text};
use fsage_sys::write_atomic;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Results to report on: `fsage age --json` and `fsage frag --json` reports, cell results,
    /// Git-aging series (`fsage git-age --json`), `fsage bench run --json` results, analyses,
    /// directories of them (their *.json files), or an experiment's output directory.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Write the HTML report (one self-contained file) here.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Write the analyses as JSON here ("-" for standard output, instead of the summary).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Only these sections (repeat the flag): published, aging, git, frag, against-fresh, bench,
    /// aged-vs-fresh, latency, sweep, inversions, cells.
    #[arg(long, value_name = "KIND", value_parser = str::parse::<Section>)]
    pub section: Vec<Section>,
    /// The two device latencies the model is calibrated on (a unit is required: 5ms, 500us).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "5ms,10ms",
        value_name = "L1,L2",
        value_parser = fsage_units::parse_latency
    )]
    pub calibration: Vec<u64>,
    /// Relative distance from the model still counted as on it (0.1 = ±10%).
    #[arg(long, default_value_t = 0.10)]
    pub tolerance: f64,
    /// Overwrite FILE of -o or --json.
    #[arg(long)]
    pub force: bool,
}

pub fn run(a: ReportArgs) -> CmdResult {
    if a.calibration.len() != 2 {
        return Err(bad_input(
            "--calibration: give two latencies, e.g. 5ms,10ms",
        ));
    }
    // The analyses keep latencies in µs.
    let (c1, c2) = (
        a.calibration[0] as f64 / 1000.0,
        a.calibration[1] as f64 / 1000.0,
    );
    if c1 == c2 {
        return Err(bad_input("--calibration: the two latencies must differ"));
    }
    if !(a.tolerance > 0.0 && a.tolerance < 1.0) {
        return Err(bad_input("--tolerance: must be above 0 and below 1"));
    }
    for p in [&a.output, &a.json].into_iter().flatten() {
        if p.as_os_str() != "-" && p.exists() && !a.force {
            return Err(crate::exit::forceable(format!(
                "{}: exists; refusing to overwrite it",
                p.display()
            )));
        }
    }
    if a.output.is_none() && a.json.is_none() {
        eprintln!("fsage: no -o FILE: printing the summary only");
    }
    let opts = AnalysisOptions {
        calibration_us: (c1.min(c2), c1.max(c2)),
        tolerance: a.tolerance,
        ..Default::default()
    };
    let set = fsage_report::load(&a.inputs, &opts)?;
    if let Some(o) = &a.output {
        let html = export(
            &Html {
                sections: a.section.clone(),
            },
            &set,
        );
        write_atomic(o, html.as_bytes())?;
        eprintln!("fsage: wrote {}", o.display());
    }
    let analyses: Vec<&fsage_experiment::Analysis> = set.analyses.iter().map(|a| &a.item).collect();
    match a.json.as_deref() {
        Some(p) if p.as_os_str() == "-" => print!("{}", export(&Json, &analyses)),
        Some(p) => {
            write_atomic(p, export(&Json, &analyses).as_bytes())?;
            print!("{}", export(&Text, &set));
        }
        None => print!("{}", export(&Text, &set)),
    }
    Ok(())
}

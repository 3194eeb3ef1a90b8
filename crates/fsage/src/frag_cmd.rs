//! `fsage frag MOUNTPOINT` and `fsage frag compare A.json B.json...`.

use crate::exit::{bad_input, CmdResult};
use clap::{Args, Subcommand};
use fsage_measure::FragOptions;
use fsage_report::{export, Json, Text};
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct FragCmd {
    #[command(subcommand)]
    pub sub: Option<FragSub>,
    #[command(flatten)]
    pub args: FragArgs,
}

#[derive(Subcommand, Debug)]
pub enum FragSub {
    /// Two or more `fsage frag --json` results side by side.
    Compare {
        /// JSON reports (e.g. fresh.json aged.json reference.json).
        #[arg(required = true, num_args = 2..)]
        reports: Vec<PathBuf>,
    },
}

#[derive(Args, Debug)]
pub struct FragArgs {
    /// Mount point (or any directory) of the file system to measure.
    pub mountpoint: Option<PathBuf>,
    /// Write the report as JSON to FILE ("-" for standard output, instead of the text report).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write one new file of SIZE (e.g. 1GiB), fsync it, count its extents, delete it.
    #[arg(long, value_name = "SIZE", value_parser = fsage_units::parse_size)]
    pub probe: Option<u64>,
    /// Free space only: no FIEMAP scan of the files.
    #[arg(long)]
    pub no_files: bool,
    /// How many of the most fragmented files to list.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Worker threads of the file scan (default: the CPUs available).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Flush each file before mapping it (FIEMAP_FLAG_SYNC) instead of one syncfs first.
    #[arg(long)]
    pub sync_each: bool,
    /// Also make a fresh file system of the same kind and size in memory, measure it the same way
    /// (with --probe too, when given), remove it, and say how far from fresh this one is.
    /// --json then writes both reports and the comparison.
    #[arg(long)]
    pub against_fresh: bool,
}

pub fn run(cmd: FragCmd) -> CmdResult {
    if let Some(FragSub::Compare { reports }) = cmd.sub {
        let c = fsage_measure::load_reports(&reports)?;
        print!("{}", export(&Text, &c));
        return Ok(());
    }
    let a = cmd.args;
    let Some(mount) = a.mountpoint else {
        return Err(bad_input(
            "frag: give a MOUNTPOINT to measure, or `frag compare A.json B.json`",
        ));
    };
    let probe = a.probe;
    if a.threads == Some(0) {
        return Err(bad_input("--threads 0: need at least one thread"));
    }
    let json_out = a.json.as_deref().filter(|p| p.as_os_str() != "-");
    if let Some(p) = json_out {
        fsage_sys::check_writable_file(p)?;
    }
    let mut opts = FragOptions {
        files: !a.no_files,
        probe,
        ..Default::default()
    };
    opts.scan.top = a.top;
    opts.scan.sync_each = a.sync_each;
    if let Some(t) = a.threads {
        opts.scan.threads = t;
    }
    if a.against_fresh {
        let cmp =
            fsage_core::against::measure_against_fresh(
                &mount,
                &opts,
                &mut |level, text| match level {
                    fsage_core::age::Level::Warning => eprintln!("fsage: warning: {text}"),
                    fsage_core::age::Level::Info => eprintln!("fsage: {text}"),
                },
            )?;
        match (&a.json, json_out) {
            (Some(_), None) => print!("{}", export(&Json, &cmp)),
            (_, Some(p)) => {
                fsage_sys::write_atomic(p, export(&Json, &cmp).as_bytes())?;
                print!("{}{}", export(&Text, &cmp.aged_report), export(&Text, &cmp));
            }
            (None, None) => print!("{}{}", export(&Text, &cmp.aged_report), export(&Text, &cmp)),
        }
        return Ok(());
    }
    let (report, warnings) = fsage_measure::frag(&mount, &opts)?;
    for w in warnings {
        eprintln!("fsage: warning: {w}");
    }
    match (&a.json, json_out) {
        (Some(_), None) => print!("{}", export(&Json, &report)),
        (_, Some(p)) => {
            fsage_sys::write_atomic(p, export(&Json, &report).as_bytes())?;
            print!("{}", export(&Text, &report));
        }
        (None, None) => print!("{}", export(&Text, &report)),
    }
    Ok(())
}

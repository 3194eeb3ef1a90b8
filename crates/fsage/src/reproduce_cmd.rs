//! `fsage reproduce list` and `fsage reproduce NAME --out DIR [--scale SIZE]`: the papers'
//! figures, one command each (fsage-repro does the work).

use crate::exit::{bad_input, interrupted, CmdError, CmdResult};
use clap::Args;
use fsage_sys::Blame;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ReproduceArgs {
    /// `list`, or the reproduction to run (`fsage reproduce list` names them).
    pub name: String,
    /// The output directory: new, empty, or this reproduction's from an earlier run at the same
    /// scale (the run goes on where it stopped).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The scale (e.g. 1GiB): the size of what each reproduction names in `list` (a file
    /// system, a partition); default: the reproduction's own.
    #[arg(long, value_name = "SIZE", value_parser = fsage_units::parse_size)]
    pub scale: Option<u64>,
    /// Measure a Git reproduction every N pulls instead of the paper's step (Conway's: 100),
    /// to save time; the report says which published points it does not come near.
    #[arg(long, value_name = "N")]
    pub every: Option<u64>,
    /// Where base images and Git-aging images go (default OUT/images; put it in /dev/shm for
    /// speed).
    #[arg(long, value_name = "DIR")]
    pub images: Option<PathBuf>,
    /// The repository a Git reproduction replays (a clone or bundle of nginx).
    #[arg(long, value_name = "PATH")]
    pub repo: Option<PathBuf>,
    /// One line per cell only.
    #[arg(short, long)]
    pub quiet: bool,
}

pub fn run(a: ReproduceArgs) -> CmdResult {
    if a.name == "list" || a.name == "LIST" {
        print!(
            "{}",
            fsage_repro::catalog::list_text(
                &|r| fsage_repro::run::missing(r, r.default_scale),
                &fsage_repro::run::notes
            )
        );
        return Ok(());
    }
    let Some(out) = a.out.clone() else {
        // Before the name is checked, so that an unknown name says which names there are.
        fsage_repro::run::lookup(&a.name)?;
        return Err(bad_input(format!(
            "reproduce {}: give --out DIR (where the run and its results go)",
            a.name
        )));
    };
    fsage_signals::install();
    let mut obs = Obs {
        lines: crate::experiment_cmd::Lines { quiet: a.quiet },
        git: crate::git_age_cmd::Progress::new(
            std::io::IsTerminal::is_terminal(&std::io::stderr()) && !a.quiet,
        ),
    };
    let o = fsage_repro::reproduce(
        &a.name,
        &fsage_repro::Options {
            out: out.clone(),
            scale: a.scale,
            every: a.every,
            images: a.images,
            repo: a.repo,
        },
        &mut obs,
    )?;
    println!("{}: {}", o.record.name, o.record.scale_text());
    if o.complete {
        println!(
            "done; report (the published numbers beside fsage's): fsage report {} -o {}",
            out.display(),
            out.join("report.html").display()
        );
    } else if o.interrupted {
        println!("interrupted: run the same command again to go on");
    }
    if o.interrupted {
        Err(interrupted())
    } else if o.failed > 0 {
        Err(CmdError::said(Blame::Operation))
    } else {
        Ok(())
    }
}

struct Obs {
    lines: crate::experiment_cmd::Lines,
    git: crate::git_age_cmd::Progress,
}

impl fsage_repro::Observer for Obs {
    fn step(&mut self, msg: &str) {
        eprintln!("fsage: {msg}");
    }
    fn experiment(&mut self) -> &mut dyn fsage_experiment::runner::RunObserver {
        &mut self.lines
    }
    fn git(&mut self) -> &mut dyn fsage_git::Observer {
        &mut self.git
    }
}

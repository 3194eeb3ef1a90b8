//! `fsage experiment plan FILE`.

use crate::exit::CmdResult;
use clap::Subcommand;
use fsage_report::{export, Json, Text};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub enum ExperimentCmd {
    /// The cells an experiment file expands to, with their ids and an estimated duration; runs
    /// nothing. (`experiment run` is not built yet.)
    Plan {
        /// An experiment file (TOML; see crates/fsage-experiment/FORMAT/EXPERIMENT.md).
        file: PathBuf,
        /// Print the plan as JSON (every cell in full).
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cmd: ExperimentCmd) -> CmdResult {
    match cmd {
        ExperimentCmd::Plan { file, json } => {
            let plan = fsage_experiment::spec::load(&file)?.plan();
            if json {
                print!("{}", export(&Json, &plan));
            } else {
                print!("{}", export(&Text, &plan));
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

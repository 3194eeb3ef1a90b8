//! fsage: the command line. A thin layer: parse flags, resolve inputs, call the library crates.

mod age;
mod bench;
mod cli;
mod dev_cmd;
mod exit;
mod experiment_cmd;
mod frag_cmd;
mod git_cmd;
mod lab_cmd;
mod profile_cmd;
mod progress;
mod replay;
mod report_cmd;
mod util;
mod workload_cmd;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    // Die quietly when a reader such as `head` closes the pipe, as command-line tools do.
    // SAFETY: restoring the default disposition of a signal.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = cli::Cli::parse();
    let result = match cli.command {
        cli::Command::Profile(cmd) => profile_cmd::run(cmd),
        cli::Command::Age(args) => age::run_cmd(*args),
        cli::Command::Replay(args) => replay::run(args),
        cli::Command::Status { state, json } => age::status(&state, json),
        cli::Command::Bench(cli::BenchCmd::Planner(args)) => bench::run(args),
        cli::Command::Bench(cmd) => workload_cmd::run(cmd),
        cli::Command::Fs(cmd) => lab_cmd::run_fs(cmd),
        cli::Command::Image(cmd) => lab_cmd::run_image(cmd),
        cli::Command::Rollback(cmd) => lab_cmd::run_rollback(cmd),
        cli::Command::Frag(cmd) => frag_cmd::run(cmd),
        cli::Command::Dev(cmd) => dev_cmd::run(cmd),
        cli::Command::GitAge(args) => git_cmd::run(*args),
        cli::Command::Experiment(cmd) => experiment_cmd::run(cmd),
        cli::Command::Report(args) => report_cmd::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if let Some(msg) = e.message() {
                eprintln!("fsage: error: {msg}");
            }
            if let Some(h) = e.hint() {
                eprintln!("fsage: hint: {h}");
            }
            ExitCode::from(e.code())
        }
    }
}

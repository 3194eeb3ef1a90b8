//! fsage: the command line. A thin layer: parse flags, resolve inputs, call the library crates.

mod age_cmd;
mod bench_cmd;
mod cli;
mod dev_cmd;
mod exit;
mod experiment_cmd;
mod frag_cmd;
mod fs_cmd;
mod git_age_cmd;
mod image_cmd;
mod profile_cmd;
mod progress;
mod replay_cmd;
mod report_cmd;
mod reproduce_cmd;
mod rollback_cmd;
#[cfg(test)]
mod units_table;
mod util;
mod vm_cmd;

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
        cli::Command::Age(args) => age_cmd::run(*args),
        cli::Command::Replay(args) => replay_cmd::run(args),
        cli::Command::Status(args) => age_cmd::status(args),
        cli::Command::Bench(cmd) => bench_cmd::run(cmd),
        cli::Command::Fs(cmd) => fs_cmd::run(cmd),
        cli::Command::Image(cmd) => image_cmd::run(cmd),
        cli::Command::Rollback(cmd) => rollback_cmd::run(cmd),
        cli::Command::Frag(cmd) => frag_cmd::run(cmd),
        cli::Command::Dev(cmd) => dev_cmd::run(cmd),
        cli::Command::GitAge(args) => git_age_cmd::run(*args),
        cli::Command::Experiment(cmd) => experiment_cmd::run(cmd),
        cli::Command::Report(args) => report_cmd::run(args),
        cli::Command::Vm(cmd) => vm_cmd::run(cmd),
        cli::Command::Reproduce(args) => reproduce_cmd::run(args),
        cli::Command::Step(args) => vm_cmd::step(args),
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

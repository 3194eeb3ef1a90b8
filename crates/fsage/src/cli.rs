//! The subcommands; each `*_cmd` module owns its flags.

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "fsage",
    version,
    about = "A file system aging lab: age, measure, benchmark, report",
    long_about = "fsage ages a directory tree on any POSIX file system to match an aging profile \
                  (file sizes, directory depths, relative ages, fullness), the way Geriatrix does, \
                  reproducibly and resumably, or by replaying a Git repository's history (Conway \
                  et al.); measures how fragmented a file system is and how far from a fresh one; \
                  runs Filebench workloads (bench); makes slow block devices of any latency or \
                  device model (dev); keeps aged images in memory and in a library, and rolls \
                  them back after a benchmark; runs experiment files resumably (experiment); and \
                  draws everything it measures in one HTML report (report)."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// List, show, import and extract aging profiles.
    #[command(subcommand)]
    Profile(crate::profile_cmd::ProfileCmd),
    /// Age TARGET_DIR (or plan it, with --dry-run) to match a profile.
    Age(Box<crate::age_cmd::AgeArgs>),
    /// Replay an op log with the same system calls and no planner (the baseline for benchmarks).
    Replay(crate::replay_cmd::ReplayArgs),
    /// Where a run stands, from its state file (or the one beside its image), without touching
    /// the target.
    Status(crate::age_cmd::StatusArgs),
    /// Benchmarks: Filebench workloads on a directory (run, list, show) and the planner's own
    /// speed and memory (planner).
    #[command(subcommand)]
    Bench(crate::bench_cmd::BenchCmd),
    /// File systems on image files or devices: create, mount, umount, drop-caches, trim, check.
    #[command(subcommand)]
    Fs(crate::fs_cmd::FsCmd),
    /// The aged-image library: save, list, show, verify, restore; copy an image to a device.
    #[command(subcommand)]
    Image(crate::image_cmd::ImageCmd),
    /// Run a benchmark while recording the blocks it writes (track), then roll the image back
    /// (restore).
    #[command(subcommand)]
    Rollback(crate::rollback_cmd::RollbackCmd),
    /// Measure fragmentation: free-space histogram, file extents and layout scores, a probe file;
    /// reports side by side (compare).
    Frag(crate::frag_cmd::FragCmd),
    /// Block devices of chosen latency or device model: create, list, set, stats, destroy, bench;
    /// the models (models), a block trace costed on one (cost), a drive aged ahead (precondition),
    /// a model's write amplification (wa) and read-size curve (read-curve) in simulated time.
    #[command(subcommand)]
    Dev(crate::dev_cmd::DevCmd),
    /// Git-history aging (Conway et al.): replay a repository's commits, measure aged vs clean.
    GitAge(Box<crate::git_age_cmd::GitAgeArgs>),
    /// Experiments: list a file's cells and estimate their time (plan), run them resumably (run),
    /// show what is done, failed and left (status); on Slurm: submit them as jobs (submit), one
    /// cell as a job runs it (run-cell), stop a submission's jobs (cancel).
    #[command(subcommand)]
    Experiment(crate::experiment_cmd::ExperimentCmd),
    /// One self-contained HTML report with plots (and a summary, and the analyses as JSON) from
    /// aging runs, frag reports, bench runs, cell results and analyses.
    Report(crate::report_cmd::ReportArgs),
    /// Run fsage (or any command) in a QEMU guest under a Debian kernel: file systems the host
    /// kernel lacks (f2fs, nilfs2), or another kernel: run, info, kernel fetch|list.
    #[command(subcommand)]
    Vm(crate::vm_cmd::VmCmd),
    /// The papers' published figures, one command each: `reproduce list` names them (paper,
    /// figure, scale, expected run time, what this build lacks); `reproduce NAME --out DIR
    /// [--scale SIZE]` runs one scaled, resumably, for `fsage report DIR` to draw beside the
    /// published numbers.
    Reproduce(crate::reproduce_cmd::ReproduceArgs),
    /// Run one step request (what a guest is handed: `--json REQUEST`) here and write its result
    /// (`--out RESULT`). Internal: how fsage runs a step in a QEMU guest.
    #[command(hide = true)]
    Step(crate::vm_cmd::StepArgs),
}

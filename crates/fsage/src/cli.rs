//! Flags and subcommands.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "fsage",
    version,
    about = "Age a file system to a profile, reproducibly",
    long_about = "fsage ages a directory tree on any POSIX file system to match an aging profile \
                  (file sizes, directory depths, relative ages, fullness), the way Geriatrix does, \
                  reproducibly and resumably; measures how fragmented a file system is; and keeps \
                  aged images in memory, in a library, and rolls them back after a benchmark."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// List, show, import and extract aging profiles.
    #[command(subcommand)]
    Profile(ProfileCmd),
    /// Age TARGET_DIR (or plan it, with --dry-run) to match a profile.
    Age(Box<AgeArgs>),
    /// Replay an op log with the same system calls and no planner (the baseline for benchmarks).
    Replay(ReplayArgs),
    /// Where a run stands, from its state file, without touching the target.
    Status {
        /// A state file written by `fsage age`.
        state: PathBuf,
        /// Print the status as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Benchmarks: Filebench workloads on a directory (run, list, show) and the planner's own
    /// speed and memory (planner).
    #[command(subcommand)]
    Bench(BenchCmd),
    /// File systems on image files or devices: create, mount, umount, drop-caches, trim, check.
    #[command(subcommand)]
    Fs(crate::lab_cmd::FsCmd),
    /// The aged-image library: save, list, show, verify, restore; copy an image to a device.
    #[command(subcommand)]
    Image(crate::lab_cmd::ImageCmd),
    /// Run a benchmark while recording the blocks it writes, then roll the image back.
    #[command(subcommand)]
    Rollback(crate::lab_cmd::RollbackCmd),
    /// Measure fragmentation: free-space histogram, file extents and layout scores, a probe file.
    Frag(crate::frag_cmd::FragCmd),
    /// Block devices of chosen latency: create, list, set, stats, destroy, bench.
    #[command(subcommand)]
    Dev(crate::dev_cmd::DevCmd),
    /// Git-history aging (Conway et al.): replay a repository's commits, measure aged vs clean.
    GitAge(Box<crate::git_cmd::GitAgeArgs>),
    /// Experiments: list a file's cells and estimate their time (plan), run them resumably (run),
    /// show what is done, failed and left (status).
    #[command(subcommand)]
    Experiment(crate::experiment_cmd::ExperimentCmd),
    /// One self-contained HTML report with plots (and a summary, and the analyses as JSON) from
    /// aging runs, frag reports, cell results and analyses.
    Report(crate::report_cmd::ReportArgs),
}

#[derive(Subcommand, Debug)]
pub enum BenchCmd {
    /// Planner speed and memory per live file at several live-file counts (no I/O).
    Planner(BenchArgs),
    /// Run a Filebench workload (a built-in or a .f file) on TARGET_DIR.
    Run(Box<crate::workload_cmd::RunArgs>),
    /// The built-in workloads.
    List,
    /// Print a workload as .f text (with --set applied).
    Show(crate::workload_cmd::ShowArgs),
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    #[arg(long, default_value = "agrawal")]
    pub profile: String,
    /// Live-file counts to measure at (comma-separated).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "10000,100000,1000000,10000000"
    )]
    pub live: Vec<u64>,
    /// Stable-phase decisions to time at each count.
    #[arg(long, default_value_t = 5_000_000)]
    pub ticks: u64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

#[derive(Subcommand, Debug)]
pub enum ProfileCmd {
    /// The built-in profiles.
    List,
    /// Describe a directory tree as a profile: fullness, sizes, depths, ages.
    Extract(crate::frag_cmd::ExtractArgs),
    /// A profile's histograms, and the ticks the convergence theorem predicts at a capacity.
    Show {
        /// A built-in name or a profile file (.toml).
        profile: String,
        /// Capacity to predict T for.
        #[arg(long, default_value = "50GiB")]
        capacity: String,
        /// Fullness (default: the profile's).
        #[arg(long)]
        fullness: Option<f64>,
        #[arg(long, default_value = "4096")]
        block_size: String,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Print the profile in fsage's TOML format instead.
        #[arg(long)]
        toml: bool,
    },
    /// Convert a profile in the original Geriatrix three-file format into fsage's TOML format.
    Import {
        /// Directory holding size_distribution.txt, dir_distribution.txt, age_distribution.txt.
        dir: PathBuf,
        /// Profile name (default: the directory's name).
        #[arg(long)]
        name: Option<String>,
        /// Default fullness to record.
        #[arg(long)]
        fullness: Option<f64>,
        #[arg(long, default_value = "")]
        description: String,
        #[arg(long, default_value = "")]
        source: String,
        /// Output file (default: standard output). Refuses to overwrite without --force.
        #[arg(short, long)]
        output: Option<PathBuf>,
        #[arg(long)]
        force: bool,
    },
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum WriteModeArg {
    Fallocate,
    Write,
}

#[derive(Args, Debug)]
pub struct AgeArgs {
    /// Built-in profile name or profile file (.toml). Required unless --resume.
    #[arg(long, short = 'p', required_unless_present = "resume")]
    pub profile: Option<String>,
    /// Capacity C (e.g. 4GiB, 512M). Default: the size of the file system holding TARGET_DIR.
    #[arg(long)]
    pub capacity: Option<String>,
    /// Fullness u in (0, 1]. Default: the profile's.
    #[arg(long)]
    pub fullness: Option<f64>,
    /// Seed of every random choice: the same seed gives the same op log. Default: 1.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Plan only: no I/O, the same decisions.
    #[arg(long)]
    pub dry_run: bool,
    /// How files get their blocks. Default: fallocate.
    #[arg(long, value_enum)]
    pub write_mode: Option<WriteModeArg>,
    /// Every file exactly its bin's size (the original tool's behaviour).
    #[arg(long)]
    pub exact_sizes: bool,
    /// Allocation unit for counting space. Default: the target file system's block size (4096 in
    /// a dry run without a target).
    #[arg(long)]
    pub block_size: Option<String>,
    /// File operations run on N threads; the decisions (and the op log) stay the same for every N.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Stop after this long (e.g. 90s, 30m, 2h; a bare number is seconds). Counts every session of
    /// a resumed run.
    #[arg(long)]
    pub max_time: Option<String>,
    /// Stop after writing this many times the capacity.
    #[arg(long)]
    pub max_overwrites: Option<f64>,
    /// Stop once the age histogram's chi-squared fit reaches this p-value (checked every 1000 ticks).
    #[arg(long)]
    pub confidence: Option<f64>,
    /// Stop after this many operations (ticks, the rapid phase included).
    #[arg(long)]
    pub max_ops: Option<u64>,
    /// With --resume: drop the stopping conditions saved with the run (a resumed run keeps them
    /// otherwise); give new ones beside it, or none to run to T.
    #[arg(long, requires = "resume")]
    pub clear_limits: bool,
    /// Write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write one line per operation to FILE.
    #[arg(long, value_name = "FILE")]
    pub op_log: Option<PathBuf>,
    /// State file for checkpoints and --resume. Default for a real run: TARGET_DIR.fsage-state
    /// beside the target; a dry run keeps one only when asked.
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// Seconds between checkpoints (at least; a large state is saved less often).
    #[arg(long, default_value = "5s", value_name = "DUR")]
    pub checkpoint_interval: String,
    /// Continue the run saved in STATE; stopping conditions and --threads may change, options
    /// that change decisions may not.
    #[arg(long, value_name = "STATE", conflicts_with_all = ["profile", "state"])]
    pub resume: Option<PathBuf>,
    /// No progress display and no summary.
    #[arg(long, short)]
    pub quiet: bool,
    /// Age TARGET_DIR even though it is not empty; with --device, format a device that holds a
    /// file system.
    #[arg(long)]
    pub force: bool,
    /// Make a file system of this kind on a new image file (TARGET is then the image path), mount
    /// it, age it, unmount it: the one-command main job. The capacity is the file system's.
    #[arg(long, value_enum, conflicts_with_all = ["dry_run", "capacity", "resume"])]
    pub fs: Option<FsArg>,
    /// Size of the image made by --fs (e.g. 4GiB); with --device, of the file system (default:
    /// the whole device).
    #[arg(long, requires = "fs")]
    pub size: Option<String>,
    /// With --fs: format this block device (e.g. a slow device from `fsage dev create`) instead
    /// of an image; TARGET is then the directory to mount it on.
    #[arg(long, requires = "fs")]
    pub device: Option<PathBuf>,
    /// Extra mkfs options for --fs, as one string.
    #[arg(long, requires = "fs", allow_hyphen_values = true)]
    pub mkfs_opts: Option<String>,
    /// Directory to age (created if missing); with --fs, the image file to create (with --device,
    /// the directory to mount the device on). Optional with --dry-run when --capacity is given.
    pub target: Option<PathBuf>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum FsArg {
    Ext4,
    Xfs,
    Btrfs,
}

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// An op log written by `fsage age --op-log`.
    pub op_log: PathBuf,
    /// Empty directory to replay into.
    pub target: PathBuf,
    #[arg(long, value_enum, default_value = "fallocate")]
    pub write_mode: WriteModeArg,
    /// Replay into a non-empty directory.
    #[arg(long)]
    pub force: bool,
}

//! `fsage profile list|show|import|extract`.

use crate::exit::{bad_input, CmdResult};
use clap::{Args, Subcommand};
use fsage_exec::preflight::estimate_seconds;
use fsage_profile::{builtin, builtin_names, human_bytes, render_tables, to_toml, Fullness};
use fsage_report::{export, Text};
use fsage_sys::write_atomic;
use std::path::PathBuf;

#[derive(Subcommand, Debug)]
pub enum ProfileCmd {
    /// The built-in profiles.
    List,
    /// Describe a directory tree as a profile: fullness, sizes, depths, ages.
    Extract(ExtractArgs),
    /// A profile's histograms, and the ticks the convergence theorem predicts at a capacity.
    Show {
        /// A built-in name or a profile file (.toml).
        profile: String,
        /// Capacity to predict T for.
        #[arg(long, default_value = "50GiB", value_parser = fsage_units::parse_size)]
        capacity: u64,
        /// Fullness (default: the profile's).
        #[arg(long)]
        fullness: Option<f64>,
        #[arg(long, default_value = "4096", value_parser = fsage_units::parse_size)]
        block_size: u64,
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

pub fn run(cmd: ProfileCmd) -> CmdResult {
    match cmd {
        ProfileCmd::Extract(args) => extract(args),
        ProfileCmd::List => {
            println!(
                "{:<10} {:>9} {:>6} {:>6} {:>6}  description",
                "name", "fullness", "sizes", "depths", "ages"
            );
            for name in builtin_names() {
                let p = builtin(name).expect("built-ins parse");
                println!(
                    "{:<10} {:>9} {:>6} {:>6} {:>6}  {}",
                    p.name,
                    p.fullness.get(),
                    p.sizes.len(),
                    p.depths.len(),
                    p.ages.len(),
                    p.description
                );
            }
            Ok(())
        }
        ProfileCmd::Show {
            profile,
            capacity,
            fullness,
            block_size,
            seed,
            toml,
        } => {
            let p = fsage_profile::resolve(&profile)?;
            if toml {
                print!("{}", to_toml(&p));
                return Ok(());
            }
            // The same checks as `fsage age`, before anything is printed.
            let (plan, mem) = fsage_core::age::plan_at(&p, capacity, fullness, block_size, seed)?;
            let u = plan.config().fullness;
            print!("{}", render_tables(&p));
            let t = plan.total();
            let k = plan.rapid_files();
            println!(
                "\nAt {} and fullness {u} (seed {seed}): {} directories, K = {k} files after the rapid phase, \
                 T = {t} ticks to converge ({:.1} × K), about {} written; planner memory about {}.",
                human_bytes(capacity),
                plan.tree().len() - 1,
                t as f64 / k.max(1) as f64,
                human_bytes(plan.expected_bytes_written()),
                human_bytes(mem.bytes)
            );
            println!(
                "Estimated time to T: {} as a dry run, {} on ext4 in memory (measured speeds, \
                 BENCHMARKS.md; slower devices take longer).",
                fsage_profile::human_duration(estimate_seconds(t, true)),
                fsage_profile::human_duration(estimate_seconds(t, false))
            );
            for u in plan.unmeetable_bins() {
                println!(
                    "Size bin {} (target {:.4}%) cannot be met at this capacity: {}.",
                    u.bin,
                    100.0 * u.target_fraction,
                    u.reason
                );
            }
            Ok(())
        }
        ProfileCmd::Import {
            dir,
            name,
            fullness,
            description,
            source,
            output,
            force,
        } => {
            let name = name.unwrap_or_else(|| {
                dir.file_name()
                    .map_or_else(|| "imported".into(), |n| n.to_string_lossy().into_owned())
            });
            let mut p = fsage_profile::import_geriatrix(&dir, &name)?;
            if let Some(u) = fullness {
                p.fullness = Fullness::new(u)
                    .ok_or_else(|| bad_input(format!("--fullness {u}: must lie in (0, 1]")))?;
            }
            if !description.is_empty() {
                p.description = description;
            }
            if !source.is_empty() {
                p.source = source;
            }
            let text = to_toml(&p);
            match output {
                Some(path) => {
                    if path.exists() && !force {
                        return Err(crate::exit::forceable(format!(
                            "{}: exists; refusing to overwrite it",
                            path.display()
                        )));
                    }
                    write_atomic(&path, text.as_bytes())?;
                    eprintln!("fsage: wrote profile {} to {}", p.name, path.display());
                }
                None => print!("{text}"),
            }
            Ok(())
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum AgeFromArg {
    Btime,
    Mtime,
    Ctime,
}

#[derive(Args, Debug)]
pub struct ExtractArgs {
    /// Directory tree to describe.
    pub path: PathBuf,
    /// Output file (default: standard output). Refuses to overwrite without --force.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Capacity the tree's allocated bytes are a fraction of (default: the fullness of the file
    /// system holding PATH).
    #[arg(long, value_parser = fsage_units::parse_size)]
    pub capacity: Option<u64>,
    /// Timestamp giving a file's age: birth time (mtime where the file system has none), mtime
    /// or ctime.
    #[arg(long, value_enum, default_value = "btime")]
    pub age_from: AgeFromArg,
    /// Profile name (default: PATH's last component).
    #[arg(long)]
    pub name: Option<String>,
    /// Size bin edges are powers of this base.
    #[arg(long, default_value_t = 2)]
    pub size_base: u64,
    /// Age bin edges are powers of this base, in seconds.
    #[arg(long, default_value_t = 2.0)]
    pub age_base: f64,
    /// Worker threads (default: the CPUs available).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Keep T (the convergence theorem's ticks) at most this many times K by merging the
    /// youngest age bins: a profile that can be aged in reasonable time.
    #[arg(long, default_value_t = fsage_measure::extract::DEFAULT_MAX_T_FACTOR)]
    pub max_t_factor: f64,
    #[arg(long)]
    pub force: bool,
}

fn extract(a: ExtractArgs) -> CmdResult {
    use fsage_measure::{AgeFrom, ExtractOptions};
    if a.threads == Some(0) {
        return Err(bad_input("--threads 0: need at least one thread"));
    }
    let mut opts = ExtractOptions {
        capacity: a.capacity,
        age_from: match a.age_from {
            AgeFromArg::Btime => AgeFrom::Btime,
            AgeFromArg::Mtime => AgeFrom::Mtime,
            AgeFromArg::Ctime => AgeFrom::Ctime,
        },
        size_base: a.size_base,
        age_base: a.age_base,
        max_t_factor: a.max_t_factor,
        ..Default::default()
    };
    if let Some(t) = a.threads {
        opts.threads = t;
    }
    let x = fsage_measure::extract_profile(
        &a.path,
        a.name.as_deref(),
        &opts,
        a.output.as_deref(),
        a.force,
    )?;
    if a.output.is_none() {
        print!("{}", x.toml);
    }
    for line in export(&Text, &x.stats).lines() {
        eprintln!("fsage: {line}");
    }
    Ok(())
}

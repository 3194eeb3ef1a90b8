//! `fsage frag MOUNTPOINT` and `fsage frag compare A.json B.json...`.

#[allow(unused_imports)]
use crate::exit::{bad_input, CmdResult};
use crate::util::write_atomic;
use clap::{Args, Subcommand};
use fsage_measure::{FragOptions, FragReport};
use std::path::PathBuf;
use std::process::ExitCode;

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
    #[arg(long, value_name = "SIZE")]
    pub probe: Option<String>,
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
        return compare(&reports);
    }
    let a = cmd.args;
    let Some(mount) = a.mountpoint else {
        return Err(bad_input(
            "frag: give a MOUNTPOINT to measure, or `frag compare A.json B.json`",
        ));
    };
    let probe = match &a.probe {
        Some(s) => Some(
            fsage_profile::parse_size(s).map_err(|e| bad_input(format!("--probe {s:?}: {e}")))?,
        ),
        None => None,
    };
    if a.threads == Some(0) {
        return Err(bad_input("--threads 0: need at least one thread"));
    }
    if !mount.exists() {
        return Err(bad_input(format!(
            "{}: no such file or directory",
            mount.display()
        )));
    }
    if mount.is_dir() && !fsage_lab::sys::is_mount_point(&mount) {
        eprintln!(
            "fsage: warning: {} is not a mount point: the free space reported is that of the whole \
             file system holding it, the file measures only those below it",
            mount.display()
        );
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
    let report = fsage_measure::measure(&mount, &opts).map_err(anyhow::Error::msg)?;
    if !report.measured_anything() {
        return Err(bad_input(format!(
            "{}: nothing can be measured on this {} file system: {}",
            mount.display(),
            report.fs_type,
            report.why_nothing()
        )));
    }
    if a.against_fresh {
        let twin = fsage_lab::FreshTwin::of(&mount)?;
        eprintln!(
            "fsage: measuring a fresh {} of {} beside it",
            twin.kind.name(),
            fsage_profile::human_bytes(twin.size)
        );
        let fresh = fsage_measure::measure(twin.mount_point(), &opts).map_err(anyhow::Error::msg);
        twin.finish()?;
        let name = mount.display().to_string();
        let cmp = fsage_measure::against_fresh(&name, &report, &fresh?);
        let text = fsage_report::export(&fsage_report::Text, &cmp);
        match a.json.as_deref() {
            Some(p) if p.as_os_str() == "-" => {
                print!("{}", fsage_report::export(&fsage_report::Json, &cmp))
            }
            Some(p) => {
                write_atomic(
                    p,
                    fsage_report::export(&fsage_report::Json, &cmp).as_bytes(),
                )?;
                print!("{}{text}", fsage_measure::report::render(&report));
            }
            None => print!("{}{text}", fsage_measure::report::render(&report)),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let json = report.to_json();
    match a.json.as_deref() {
        Some(p) if p.as_os_str() == "-" => print!("{json}"),
        Some(p) => {
            write_atomic(p, json.as_bytes())?;
            print!("{}", fsage_measure::report::render(&report));
        }
        None => print!("{}", fsage_measure::report::render(&report)),
    }
    Ok(ExitCode::SUCCESS)
}

fn compare(paths: &[PathBuf]) -> CmdResult {
    let mut reports = Vec::new();
    let mut names = Vec::new();
    for p in paths {
        let text =
            std::fs::read_to_string(p).map_err(|e| bad_input(format!("{}: {e}", p.display())))?;
        let r = FragReport::from_json(&text).map_err(|e| {
            bad_input(format!(
                "{}: not an `fsage frag --json` report: {e}",
                p.display()
            ))
        })?;
        if r.format != fsage_measure::FRAG_FORMAT {
            return Err(bad_input(format!(
                "{}: report format {} (this fsage reads {})",
                p.display(),
                r.format,
                fsage_measure::FRAG_FORMAT
            )));
        }
        names.push(p.file_stem().map_or_else(
            || p.display().to_string(),
            |s| s.to_string_lossy().into_owned(),
        ));
        reports.push(r);
    }
    print!("{}", fsage_measure::report::compare(&names, &reports));
    Ok(ExitCode::SUCCESS)
}

// ---------------------------------------------------------------------------------------------
// `fsage profile extract`

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
    #[arg(long)]
    pub capacity: Option<String>,
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

pub fn extract(a: ExtractArgs) -> CmdResult {
    use fsage_measure::{AgeFrom, ExtractOptions};
    if let Some(o) = &a.output {
        if o.exists() && !a.force {
            return Err(bad_input(format!(
                "{}: exists; --force to overwrite it",
                o.display()
            )));
        }
    }
    if a.threads == Some(0) {
        return Err(bad_input("--threads 0: need at least one thread"));
    }
    let mut opts = ExtractOptions {
        name: a.name.clone().unwrap_or_else(|| {
            a.path
                .canonicalize()
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| "extracted".into())
        }),
        capacity: match &a.capacity {
            Some(c) => Some(
                fsage_profile::parse_size(c)
                    .map_err(|e| bad_input(format!("--capacity {c:?}: {e}")))?,
            ),
            None => None,
        },
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
    let (p, st) = fsage_measure::extract(&a.path, &opts).map_err(bad_input)?;
    let text = fsage_profile::to_toml(&p);
    match &a.output {
        Some(o) => write_atomic(o, text.as_bytes())?,
        None => print!("{text}"),
    }
    let w = &st.walk;
    eprintln!(
        "fsage: {} files, {} directories in {:.2} s ({:.0} files/s); skipped {} symlinks, {} \
         specials, {} extra hard links, {} other file systems, {} unreadable{}{}",
        w.files,
        w.dirs,
        st.seconds,
        w.files as f64 / st.seconds.max(1e-9),
        w.symlinks,
        w.specials,
        w.hardlink_dups,
        w.other_fs,
        w.unreadable,
        String::new(),
        String::new()
    );
    eprintln!("fsage: ages from {}", st.age_source);
    if st.before_1980 + st.future > 0 {
        eprintln!(
            "fsage: warning: left out of the age histogram: {} files with a timestamp before 1980 \
             and {} with one in the future (placeholders, not ages)",
            st.before_1980, st.future
        );
    }
    if let Some(m) = &st.merged {
        eprintln!(
            "fsage: merged the {} youngest age bins ({:.2}% of the files) into the bin of ages up \
             to {} s: T goes from {:.0} K to {:.0} K (--max-t-factor {})",
            m.bins,
            100.0 * m.share,
            m.into_age,
            m.factor_before,
            m.factor_after,
            a.max_t_factor
        );
    }
    for e in &w.errors {
        eprintln!("fsage: skipped: {e}");
    }
    Ok(ExitCode::SUCCESS)
}

//! `fsage fs ...`, `fsage image ...`, `fsage rollback ...`: the lab, on top of `fsage-lab`.

#[allow(unused_imports)]
use crate::exit::{bad_input, CmdError, CmdResult};
use clap::{Args, Subcommand};
use fsage_lab::image::{default_library_dir, Library, SaveOptions};
use fsage_lab::mount::MountOptions;
use fsage_lab::{rollback, signals, sparse, FsKind, Mounted};
use fsage_profile::{human_bytes, parse_size};
use fsage_sys::Blame;
use std::path::{Path, PathBuf};

#[derive(Subcommand, Debug)]
pub enum FsCmd {
    /// Format an image file (sparse; in /dev/shm to age in memory) or a block device, optionally
    /// loop-mount it.
    Create(FsCreateArgs),
    /// Mount an image file (on a loop device that goes away when unmounted) or a block device.
    Mount(FsMountArgs),
    /// Unmount a mount point, or every mount of an image file or device; fsage's loop devices go
    /// away with the mount.
    Umount {
        /// Mount point, image file or block device.
        target: PathBuf,
    },
    /// sync, then drop the page cache, dentries and inodes.
    DropCaches,
    /// Tell the file system to discard its free space (FITRIM): in an image, free space becomes
    /// holes, which `image save` and `image copy` then skip.
    Trim {
        /// Mount point, or an unmounted image file (mounted for the trim, then unmounted).
        target: PathBuf,
    },
    /// Check an unmounted file system read-only (e2fsck -fn, xfs_repair -n, btrfs check).
    Check {
        /// Image file or block device.
        target: PathBuf,
        /// File system type (default: probed).
        #[arg(long = "fs")]
        fs: Option<String>,
    },
}

#[derive(Args, Debug)]
pub struct FsCreateArgs {
    /// File system: ext4, xfs or btrfs.
    #[arg(long = "fs")]
    pub fs: String,
    /// Size (e.g. 4GiB, 512M); required for an image file, default the whole device.
    #[arg(long)]
    pub size: Option<String>,
    /// Extra mkfs arguments, one string (e.g. --mkfs-opts="-b 1024").
    #[arg(long, allow_hyphen_values = true, value_name = "OPTS")]
    pub mkfs_opts: Option<String>,
    /// Mount it here afterwards (left mounted; `fsage fs umount` undoes it).
    #[arg(long, value_name = "DIR")]
    pub mount: Option<PathBuf>,
    /// Overwrite an existing file or file system (never a mounted or attached one).
    #[arg(long)]
    pub force: bool,
    /// Image file (created) or block device.
    pub target: PathBuf,
}

#[derive(Args, Debug)]
pub struct FsMountArgs {
    /// Image file or block device.
    pub target: PathBuf,
    /// Existing directory to mount on.
    pub dir: PathBuf,
    /// File system type (default: probed from the superblock).
    #[arg(long = "fs")]
    pub fs: Option<String>,
    /// Mount options (e.g. -o noatime,discard).
    #[arg(short = 'o', long, default_value = "")]
    pub options: String,
}

#[derive(Args, Debug, Clone)]
pub struct LibraryArg {
    /// Library directory (default: $FSAGE_LIBRARY, else ~/.local/share/fsage/images).
    #[arg(long, value_name = "DIR", global = true)]
    pub library: Option<PathBuf>,
}

impl LibraryArg {
    fn open(&self) -> Library {
        Library::open(&self.library.clone().unwrap_or_else(default_library_dir))
    }
}

#[derive(Subcommand, Debug)]
pub enum ImageCmd {
    /// Store a compressed, sparse snapshot of an unmounted image with its manifest.
    Save(ImageSaveArgs),
    /// The snapshots in the library.
    List(LibraryArg),
    /// A snapshot's manifest.
    Show {
        name: String,
        /// Print manifest.json as stored.
        #[arg(long)]
        json: bool,
        /// Print the embedded profile's TOML.
        #[arg(long)]
        profile_toml: bool,
        #[command(flatten)]
        lib: LibraryArg,
    },
    /// Decompress snapshots and check their checksums (all of them when no name is given).
    Verify {
        names: Vec<String>,
        #[command(flatten)]
        lib: LibraryArg,
    },
    /// Write a snapshot to an image file or a device, checking its checksums.
    Restore {
        name: String,
        /// Image file (written to a temporary file, renamed when verified) or block device.
        target: PathBuf,
        /// Replace an existing file, or overwrite a device holding a file system.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        lib: LibraryArg,
    },
    /// Copy an image onto a device or file, writing only its data (sparse-aware).
    Copy {
        source: PathBuf,
        /// Block device or image file.
        target: PathBuf,
        /// Overwrite an existing file, or a device holding a file system (never a mounted one).
        #[arg(long)]
        force: bool,
        /// On a device, leave the ranges that are holes in the source as they are instead of
        /// zeroing them (faster; safe only when the holes are free space, e.g. after `fs trim`).
        #[arg(long)]
        no_zero_holes: bool,
        /// Skip comparing the target with the source afterwards.
        #[arg(long)]
        no_verify: bool,
    },
}

#[derive(Args, Debug)]
pub struct ImageSaveArgs {
    /// Unmounted image file or block device.
    pub image: PathBuf,
    /// Name in the library (default: the image's file name without extension).
    #[arg(long)]
    pub name: Option<String>,
    /// The aging run's report (`fsage age --json FILE`), embedded whole.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// The aging profile (built-in name or file), embedded whole (default: the report's profile,
    /// when it is a built-in).
    #[arg(long)]
    pub profile: Option<String>,
    /// mkfs options to record (default: from IMAGE.fsage.json, written by `fsage fs create`).
    #[arg(long, allow_hyphen_values = true, value_name = "OPTS")]
    pub mkfs_opts: Option<String>,
    #[arg(long)]
    pub note: Option<String>,
    /// zstd level (1-19).
    #[arg(long, default_value_t = 3)]
    pub level: i32,
    /// Replace a snapshot of the same name; snapshot an image that is attached.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub lib: LibraryArg,
}

#[derive(Subcommand, Debug)]
pub enum RollbackCmd {
    /// Run a benchmark on an image, recording the blocks it writes (tracefs block_rq_issue).
    Track(TrackArgs),
    /// Rewrite the recorded blocks from the snapshot and check the image equals it again.
    Restore {
        image: PathBuf,
        /// The log of `rollback track` (default IMAGE.rollback.json).
        #[arg(long, value_name = "FILE")]
        log: Option<PathBuf>,
        /// Compare the whole image with the snapshot instead of using the recorded blocks.
        #[arg(long)]
        compare: bool,
        /// Skip the final check that the image equals the snapshot.
        #[arg(long)]
        no_verify: bool,
    },
}

#[derive(Args, Debug)]
pub struct TrackArgs {
    /// Unmounted image file.
    pub image: PathBuf,
    /// Raw snapshot to roll back to (default IMAGE.snapshot, made from IMAGE if missing).
    #[arg(long, value_name = "FILE")]
    pub snapshot: Option<PathBuf>,
    /// Log file (default IMAGE.rollback.json).
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Mount point for the benchmark (default: a temporary directory). The command gets it in
    /// $FSAGE_MOUNT, the loop device in $FSAGE_DEVICE.
    #[arg(long, value_name = "DIR")]
    pub mount: Option<PathBuf>,
    /// Do not mount; the command gets only the device.
    #[arg(long)]
    pub no_mount: bool,
    /// Mount options.
    #[arg(short = 'o', long, default_value = "")]
    pub options: String,
    /// Do not trace: roll back by comparing with the snapshot.
    #[arg(long)]
    pub compare: bool,
    /// Skip checking that the image equals an existing snapshot before the run.
    #[arg(long)]
    pub no_check: bool,
    /// The benchmark command.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

fn split_opts(o: &Option<String>) -> Vec<String> {
    o.as_deref()
        .map(|s| s.split_whitespace().map(String::from).collect())
        .unwrap_or_default()
}

fn size_flag(flag: &str, s: &str) -> Result<u64, CmdError> {
    parse_size(s).map_err(|e| bad_input(format!("{flag} {s:?}: {e}")))
}

pub fn run_fs(cmd: FsCmd) -> CmdResult {
    signals::install();
    match cmd {
        FsCmd::Create(a) => {
            let kind = FsKind::parse(&a.fs).map_err(|e| bad_input(format!("--fs: {e}")))?;
            let size = a
                .size
                .as_deref()
                .map(|s| size_flag("--size", s))
                .transpose()?;
            let info = fsage_lab::create_fs(
                &a.target,
                &fsage_lab::CreateOptions {
                    kind,
                    size,
                    mkfs_opts: split_opts(&a.mkfs_opts),
                    force: a.force,
                },
            )?;
            println!(
                "made {} ({}) on {}: {}",
                kind,
                human_bytes(info.size),
                a.target.display(),
                info.mkfs_command.join(" ")
            );
            if let Some(dir) = a.mount {
                let m = Mounted::attach_and_mount(&a.target, &dir)?;
                let (dev, mp) = m.keep();
                println!(
                    "mounted {} ({}) on {}",
                    a.target.display(),
                    dev.display(),
                    mp.display()
                );
            }
            Ok(())
        }
        FsCmd::Mount(a) => {
            if let Some(t) = &a.fs {
                FsKind::parse(t).map_err(|e| bad_input(format!("--fs: {e}")))?;
            }
            let m = Mounted::attach_and_mount_with(
                &a.target,
                &a.dir,
                &MountOptions {
                    fstype: a.fs.clone(),
                    options: a.options.clone(),
                },
            )?;
            let (dev, mp) = m.keep();
            println!(
                "mounted {} ({}) on {}",
                a.target.display(),
                dev.display(),
                mp.display()
            );
            Ok(())
        }
        FsCmd::Umount { target } => {
            let u = fsage_lab::mount::umount(&target)?;
            for m in &u.mount_points {
                println!("unmounted {}", m.display());
            }
            for d in &u.detached {
                println!("detached {}", d.display());
            }
            for d in &u.left_attached {
                println!(
                    "left {} attached: fsage did not attach it (losetup -d {} detaches it)",
                    d.display(),
                    d.display()
                );
            }
            Ok(())
        }
        FsCmd::DropCaches => {
            fsage_lab::drop_caches()?;
            println!("dropped caches");
            Ok(())
        }
        FsCmd::Trim { target } => {
            let n = if target.is_dir() {
                fsage_lab::trim(&target)?
            } else {
                let dir = tempdir_for_mount()?;
                let m = Mounted::attach_and_mount(&target, dir.path())?;
                let r = fsage_lab::trim(m.mount_point());
                m.finish()?;
                r?
            };
            println!("trimmed {} ({})", target.display(), human_bytes(n));
            Ok(())
        }
        FsCmd::Check { target, fs } => {
            let t = match fs {
                Some(t) => t,
                None => fsage_lab::probe_fs(&target)?.ok_or_else(|| {
                    bad_input(format!("{}: no file system found", target.display()))
                })?,
            };
            let kind = FsKind::parse(&t)?;
            fsage_lab::fsck(&target, kind)?;
            println!("{}: {kind} clean", target.display());
            Ok(())
        }
    }
}

/// A fresh directory to mount on, removed when dropped (after the guard using it has unmounted).
struct MountDir(PathBuf);

impl MountDir {
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for MountDir {
    fn drop(&mut self) {
        // remove_dir only removes an empty directory: never anything through a mount.
        let _ = std::fs::remove_dir(&self.0);
    }
}

fn tempdir_for_mount() -> Result<MountDir, CmdError> {
    let p = std::env::temp_dir().join(format!(
        "fsage-mnt-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    std::fs::create_dir(&p).map_err(|e| bad_input(format!("{}: {e}", p.display())))?;
    Ok(MountDir(p))
}

pub fn run_image(cmd: ImageCmd) -> CmdResult {
    signals::install();
    match cmd {
        ImageCmd::Save(a) => {
            let lib = a.lib.open();
            let name = match a.name {
                Some(n) => n,
                None => a
                    .image
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .ok_or_else(|| bad_input(format!("{}: give --name", a.image.display())))?,
            };
            // An image made by `age --fs` has its report beside it: taken unless told otherwise.
            let g = fsage_lab::image::gather(&a.image, a.report.as_deref(), a.profile.as_deref())?;
            if let Some(p) = &g.report_found {
                eprintln!("fsage: taking the aging report {}", p.display());
            }
            let git_series = g
                .report
                .as_ref()
                .is_some_and(fsage_lab::image::is_git_series);
            let (report, profile) = (g.report, g.profile);
            let m = lib.save(
                &a.image,
                &SaveOptions {
                    name,
                    profile,
                    report,
                    mkfs_opts: a.mkfs_opts.as_ref().map(|_| split_opts(&a.mkfs_opts)),
                    note: a.note,
                    zstd_level: a.level,
                    force: a.force,
                },
            )?;
            println!(
                "saved {} as {:?} in {}: {} image, {} of data, {} compressed, sha256 {}",
                a.image.display(),
                m.name,
                lib.dir.display(),
                human_bytes(m.size),
                human_bytes(m.data_bytes),
                human_bytes(m.compressed_bytes),
                m.checksums.image_sha256
            );
            match (&m.profile, g.profile_from) {
                (Some(p), Some(from)) if from != "given" => {
                    println!("profile {} recorded, from {from}", p.name)
                }
                (Some(_), _) => {}
                (None, _) if git_series => {
                    println!("recorded the Git-aging series (no profile: it was aged by a repository's history)")
                }
                (None, _) if m.aging.is_some() => println!(
                    "note: no profile recorded (the report names one fsage cannot find; give --profile)"
                ),
                (None, _) => println!("note: no profile recorded (give --profile or --report)"),
            }
            Ok(())
        }
        ImageCmd::List(l) => {
            let lib = l.open();
            if !lib.dir.is_dir() {
                println!(
                    "no image library at {} (the first `fsage image save` there makes it)",
                    lib.dir.display()
                );
                return Ok(());
            }
            let items = lib.list()?;
            if items.is_empty() {
                println!("no images in {}", lib.dir.display());
                return Ok(());
            }
            println!(
                "{:<24} {:<6} {:>10} {:>10} {:>10}  {:<10} {:>6}",
                "name", "fs", "size", "data", "stored", "profile", "seed"
            );
            for m in items {
                match m {
                    Ok(m) => println!(
                        "{:<24} {:<6} {:>10} {:>10} {:>10}  {:<10} {:>6}",
                        m.name,
                        m.fs.as_deref().unwrap_or("-"),
                        human_bytes(m.size),
                        human_bytes(m.data_bytes),
                        human_bytes(m.compressed_bytes),
                        m.profile.as_ref().map_or("-", |p| p.name.as_str()),
                        m.seed.map_or("-".into(), |s| s.to_string())
                    ),
                    Err(e) => println!("(unreadable: {e})"),
                }
            }
            Ok(())
        }
        ImageCmd::Show {
            name,
            json,
            profile_toml,
            lib,
        } => {
            let lib = lib.open();
            let m = lib.load(&name)?;
            if json {
                use fsage_report::Exporter;
                print!("{}", fsage_report::Json.export(&m));
                return Ok(());
            }
            if profile_toml {
                let p = m
                    .profile
                    .as_ref()
                    .ok_or_else(|| bad_input(format!("{name}: no profile recorded")))?;
                print!("{}", p.toml);
                return Ok(());
            }
            println!("name:          {}", m.name);
            println!("stored in:     {}", lib.entry_dir(&name).display());
            println!("file system:   {}", m.fs.as_deref().unwrap_or("unknown"));
            println!(
                "mkfs options:  {}",
                m.mkfs_opts
                    .as_ref()
                    .map_or("unknown".into(), |o| o.join(" "))
            );
            if let Some(c) = &m.mkfs_command {
                println!("mkfs command:  {}", c.join(" "));
            }
            println!("size:          {} ({} bytes)", human_bytes(m.size), m.size);
            println!(
                "data:          {} in {} runs, {} compressed (zstd -{})",
                human_bytes(m.data_bytes),
                m.data_runs,
                human_bytes(m.compressed_bytes),
                m.zstd_level
            );
            println!("image sha256:  {}", m.checksums.image_sha256);
            println!("data sha256:   {}", m.checksums.data_sha256);
            println!("source:        {}", m.source);
            println!(
                "saved:         {} by fsage {} on kernel {}",
                fsage_sys::utc_time(m.created_unix),
                m.fsage_version,
                m.kernel
            );
            println!(
                "profile:       {}",
                m.profile
                    .as_ref()
                    .map_or("none recorded", |p| p.name.as_str())
            );
            println!(
                "seed:          {}",
                m.seed.map_or("unknown".into(), |s| s.to_string())
            );
            use fsage_lab::image::AgingRecord;
            let opt = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
            match m.aging_record() {
                AgingRecord::Run {
                    stop,
                    ticks,
                    t_estimate,
                    live_files,
                    live_bytes,
                    capacity,
                    fullness,
                } => println!(
                    "aging:         {stop}; {} ticks of T = {}, {} live files, {} live of capacity \
                     {}, fullness {}",
                    opt(ticks),
                    opt(t_estimate),
                    opt(live_files),
                    live_bytes.map_or("-".into(), human_bytes),
                    capacity.map_or("-".into(), human_bytes),
                    fullness.map_or("-".into(), |f| format!("{f}"))
                ),
                AgingRecord::GitSeries {
                    repo,
                    mode,
                    fs,
                    pulls_done,
                    commits_total,
                    first_commit,
                    last_commit,
                } => println!(
                    "aging:         Git history of {repo} ({mode} mode) on {fs}: {} of {} commits \
                     replayed, {first_commit}..{last_commit}",
                    opt(pulls_done),
                    opt(commits_total)
                ),
                AgingRecord::None => println!("aging:         no report recorded"),
            }
            if let Some(n) = &m.note {
                println!("note:          {n}");
            }
            Ok(())
        }
        ImageCmd::Verify { names, lib } => {
            let lib = lib.open();
            let names = if names.is_empty() {
                lib.list()?
                    .into_iter()
                    .filter_map(|m| m.ok().map(|m| m.name))
                    .collect()
            } else {
                names
            };
            if names.is_empty() {
                println!("no images in {}", lib.dir.display());
            }
            let mut bad = 0;
            for n in &names {
                match lib.verify(n) {
                    Ok(m) => println!("{n}: ok (sha256 {})", m.checksums.image_sha256),
                    Err(e) => {
                        bad += 1;
                        println!("{n}: FAILED: {e}");
                    }
                }
            }
            if bad > 0 {
                return Err(CmdError::said(Blame::Operation));
            }
            Ok(())
        }
        ImageCmd::Restore {
            name,
            target,
            force,
            lib,
        } => {
            let lib = lib.open();
            let s = lib.restore(&name, &target, force)?;
            println!(
                "restored {name:?} to {} ({}, {} of data) in {:.2}s; checksums verified",
                target.display(),
                human_bytes(s.size),
                human_bytes(s.data_bytes),
                s.seconds
            );
            Ok(())
        }
        ImageCmd::Copy {
            source,
            target,
            force,
            no_zero_holes,
            no_verify,
        } => {
            let s = sparse::copy_image(
                &source,
                &target,
                sparse::CopyOptions {
                    force,
                    zero_holes: !no_zero_holes,
                    verify: !no_verify,
                },
            )?;
            println!(
                "copied {} to {}: {} image, {} of data written, {} zeroed, {:.2}s{}",
                source.display(),
                target.display(),
                human_bytes(s.size),
                human_bytes(s.data_bytes),
                human_bytes(s.zeroed_bytes),
                s.seconds,
                if s.verified {
                    "; verified identical"
                } else if no_verify {
                    "; not verified (--no-verify)"
                } else {
                    "; not verified (holes left as they were on the device)"
                }
            );
            Ok(())
        }
    }
}

pub fn run_rollback(cmd: RollbackCmd) -> CmdResult {
    signals::install();
    match cmd {
        RollbackCmd::Track(a) => {
            let log = rollback::track(
                &a.image,
                &a.command,
                &rollback::TrackOptions {
                    snapshot: a.snapshot,
                    log: a.log.clone(),
                    mount_point: a.mount,
                    no_mount: a.no_mount,
                    mount_options: a.options,
                    compare: a.compare,
                    no_check: a.no_check,
                },
            )?;
            let log_path = a.log.unwrap_or_else(|| rollback::default_log(&a.image));
            match log.method {
                rollback::Method::Trace => println!(
                    "tracked {} write requests: {} in {} ranges; log {}",
                    log.requests,
                    human_bytes(log.written_bytes),
                    log.ranges.len(),
                    log_path.display()
                ),
                rollback::Method::Compare => println!(
                    "not traced ({}): `rollback restore` will compare with the snapshot; log {}",
                    log.fallback_reason.as_deref().unwrap_or("-"),
                    log_path.display()
                ),
            }
            match log.exit_code {
                Some(0) => Ok(()),
                c => {
                    eprintln!(
                        "fsage: the benchmark command `{}` failed ({}); its writes are logged",
                        log.command.join(" "),
                        c.map_or("killed by a signal".into(), |c| format!("exit code {c}"))
                    );
                    Err(CmdError::said(Blame::Operation))
                }
            }
        }
        RollbackCmd::Restore {
            image,
            log,
            compare,
            no_verify,
        } => {
            let log = log.unwrap_or_else(|| rollback::default_log(&image));
            let l = rollback::read_log(&log)?;
            let canon = image
                .canonicalize()
                .map_err(|e| bad_input(format!("{}: {e}", image.display())))?;
            if l.image != canon {
                return Err(bad_input(format!(
                    "{}: the log {} is for {}",
                    image.display(),
                    log.display(),
                    l.image.display()
                )));
            }
            let r = rollback::restore(&log, compare, !no_verify)?;
            println!(
                "rolled back {} ({}): {} in {} ranges rewritten in {:.3}s{}",
                image.display(),
                r.method.describe(),
                human_bytes(r.bytes),
                r.ranges,
                r.seconds,
                if r.verified {
                    format!(
                        "; identical to the snapshot (checked in {:.3}s)",
                        r.verify_seconds
                    )
                } else {
                    "; not checked (--no-verify)".into()
                }
            );
            Ok(())
        }
    }
}

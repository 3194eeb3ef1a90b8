//! `fsage image save|list|show|verify|restore|copy`: the aged-image library
//! (fsage-core) and sparse copies (fsage-lab).

use crate::exit::{bad_input, CmdError, CmdResult};
use crate::fs_cmd::split_opts;
use clap::{Args, Subcommand};
use fsage_core::image::{default_library_dir, Library, SaveOptions};
use fsage_lab::sparse;
use fsage_profile::human_bytes;
use fsage_report::{export, Json, Text};
use fsage_sys::Blame;
use std::path::PathBuf;

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
    /// Copy an image onto a device or file: its data written, its holes (and all-zero blocks)
    /// zeroed with BLKZEROOUT on a device by default, which a drive may serve by unmapping them
    /// (fsage's SSD model does: the copy is then a copy plus a TRIM of the image's free space);
    /// `--whole` writes every block as data, as `dd` does.
    Copy {
        source: PathBuf,
        /// Block device or image file.
        target: PathBuf,
        /// Overwrite an existing file, or a device holding a file system (never a mounted one).
        #[arg(long)]
        force: bool,
        /// What becomes of the image's holes and all-zero blocks: zeroout (on a device, zeroed
        /// with BLKZEROOUT, no data written: a drive may unmap them; a file keeps them as holes),
        /// write (written as zeros, as `dd` writes them: every block reaches the target as
        /// data), or skip (left as they are: safe only where the holes are free space).
        #[arg(long, value_enum, value_name = "MODE", conflicts_with_all = ["whole", "no_zero_holes"])]
        holes: Option<HolesArg>,
        /// Every block of the image written as data, zeros as zeros, as `dd` does: a drive maps
        /// every page (the same as --holes write).
        #[arg(long, conflicts_with = "no_zero_holes")]
        whole: bool,
        /// On a device, leave the ranges that are holes in the source as they are instead of
        /// zeroing them (the same as --holes skip; faster; safe only when the holes are free
        /// space, e.g. after `fs trim`).
        #[arg(long)]
        no_zero_holes: bool,
        /// Skip comparing the target with the source afterwards.
        #[arg(long)]
        no_verify: bool,
    },
}

/// `image copy --holes`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum HolesArg {
    Zeroout,
    Write,
    Skip,
}

impl From<HolesArg> for sparse::Holes {
    fn from(h: HolesArg) -> sparse::Holes {
        match h {
            HolesArg::Zeroout => sparse::Holes::ZeroOut,
            HolesArg::Write => sparse::Holes::Write,
            HolesArg::Skip => sparse::Holes::Skip,
        }
    }
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

pub fn run(cmd: ImageCmd) -> CmdResult {
    fsage_signals::install();
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
            let g = fsage_core::image::gather(&a.image, a.report.as_deref(), a.profile.as_deref())?;
            if let Some(p) = &g.report_found {
                eprintln!("fsage: taking the aging report {}", p.display());
            }
            let git_series = g
                .report
                .as_ref()
                .is_some_and(fsage_core::image::is_git_series);
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
            if let Some(d) = &m.drive {
                println!(
                    "with the drive it aged on ({}, {}): restored with the image",
                    fsage_device::state_file_of(&a.image).display(),
                    human_bytes(d.bytes)
                );
            }
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
            let items = if lib.dir.is_dir() {
                Some(lib.list()?)
            } else {
                None
            };
            let list = fsage_report::ImageList {
                dir: &lib.dir,
                items: items.as_deref(),
            };
            print!("{}", export(&Text, &list));
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
                print!("{}", export(&Json, &m));
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
            let dir = lib.entry_dir(&name);
            let shown = fsage_report::StoredImage {
                manifest: &m,
                dir: &dir,
            };
            print!("{}", export(&Text, &shown));
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
                "restored {name:?} to {} ({}, {} of data) in {:.2}s; checksums verified{}",
                target.display(),
                human_bytes(s.size),
                human_bytes(s.data_bytes),
                s.seconds,
                s.drive_state.map_or(String::new(), |p| format!(
                    "; the drive it aged on to {}",
                    p.display()
                ))
            );
            Ok(())
        }
        ImageCmd::Copy {
            source,
            target,
            force,
            holes,
            whole,
            no_zero_holes,
            no_verify,
        } => {
            let holes = match (holes, whole, no_zero_holes) {
                (Some(h), _, _) => h.into(),
                (None, true, _) => sparse::Holes::Write,
                (None, _, true) => sparse::Holes::Skip,
                _ => sparse::Holes::ZeroOut,
            };
            let s = sparse::copy_image(
                &source,
                &target,
                sparse::CopyOptions {
                    force,
                    holes,
                    verify: !no_verify,
                },
            )?;
            let holes_said = match holes {
                sparse::Holes::ZeroOut if s.zeroed_bytes > 0 => format!(
                    ", {} zeroed with BLKZEROOUT (a drive may unmap them)",
                    human_bytes(s.zeroed_bytes)
                ),
                sparse::Holes::Write => {
                    format!(", {} of zeros written", human_bytes(s.zeros_written))
                }
                sparse::Holes::Skip if fsage_sys::is_block_device(&target) => {
                    ", holes left as they were".to_string()
                }
                _ => String::new(),
            };
            println!(
                "copied {} to {}: {} image, {} of data written{holes_said}, {:.2}s{}",
                source.display(),
                target.display(),
                human_bytes(s.size),
                human_bytes(s.data_bytes),
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

//! `fsage fs create|mount|umount|drop-caches|trim|check`: file systems on image files or
//! devices (fsage-lab).

use crate::exit::{bad_input, CmdResult};
use clap::{Args, Subcommand};
use fsage_lab::mount::MountOptions;
use fsage_lab::{FsKind, Mounted};
use fsage_profile::human_bytes;
use std::path::PathBuf;

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
    /// Check an unmounted file system read-only (e2fsck -fn, xfs_repair -n, btrfs check,
    /// fsck.f2fs --dry-run; nilfs2 has no checker, which it says).
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
    /// File system: ext4, xfs, btrfs, f2fs or nilfs2 (f2fs and nilfs2 mount only under a kernel
    /// that has them).
    #[arg(long = "fs")]
    pub fs: String,
    /// Size (e.g. 4GiB, 512M); required for an image file, default the whole device.
    #[arg(long, value_parser = fsage_units::parse_size)]
    pub size: Option<u64>,
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

/// `--mkfs-opts` as mkfs arguments.
pub fn split_opts(o: &Option<String>) -> Vec<String> {
    o.as_deref()
        .map(|s| s.split_whitespace().map(String::from).collect())
        .unwrap_or_default()
}

/// Leaves `m` mounted (`fsage fs umount` undoes it) and says where.
fn keep_mounted(target: &std::path::Path, m: Mounted) {
    let (dev, mp) = m.keep();
    println!(
        "mounted {} ({}) on {}",
        target.display(),
        dev.display(),
        mp.display()
    );
}

pub fn run(cmd: FsCmd) -> CmdResult {
    fsage_signals::install();
    match cmd {
        FsCmd::Create(a) => {
            let kind = FsKind::parse(&a.fs).map_err(|e| bad_input(format!("--fs: {e}")))?;
            // mkfs works under any kernel; mounting it afterwards needs one that has it.
            if a.mount.is_some() {
                kind.check_kernel()?;
            }
            let size = a.size;
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
                keep_mounted(&a.target, Mounted::attach_and_mount(&a.target, &dir)?);
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
            keep_mounted(&a.target, m);
            Ok(())
        }
        FsCmd::Umount { target } => {
            let registry = fsage_slowdev::Registry::new(fsage_slowdev::Registry::default_root());
            // An image under a slow device has no loop device of its own: its mounts are the
            // slow device's.
            let u = match slow_device_over(&registry, &target) {
                Some(dev) => fsage_lab::mount::umount(&dev).map_err(|e| fsage_lab::Error {
                    message: format!(
                        "{} is served by slow device {}: {}",
                        target.display(),
                        dev.display(),
                        e.message
                    ),
                    ..e
                })?,
                None => fsage_lab::mount::umount(&target)?,
            };
            for m in &u.mount_points {
                println!("unmounted {}", m.display());
            }
            for d in &u.detached {
                println!("detached {}", d.display());
            }
            // A slow device (`fsage dev create`) is attached by its daemon and outlives the
            // mount; `losetup -d` would bypass `dev destroy`, which also stops the daemon.
            for d in &u.left_attached {
                match registry.find(&d.to_string_lossy()) {
                    Ok((_, rec)) => println!(
                        "left {} attached: it is fsage's slow device {} (`fsage dev destroy {}` \
                         detaches it and stops its daemon)",
                        d.display(),
                        rec.name,
                        d.display()
                    ),
                    Err(_) => println!(
                        "left {} attached: fsage did not attach it (losetup -d {} detaches it)",
                        d.display(),
                        d.display()
                    ),
                }
            }
            Ok(())
        }
        FsCmd::DropCaches => {
            fsage_lab::drop_caches()?;
            println!("dropped caches");
            Ok(())
        }
        FsCmd::Trim { target } => {
            let n = fsage_lab::trim_target(&target)?;
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
            match fsage_lab::fsck(&target, kind)? {
                fsage_lab::Checked::Clean(_) => println!("{}: {kind} clean", target.display()),
                fsage_lab::Checked::NoChecker(why) => println!("{}: {why}", target.display()),
            }
            Ok(())
        }
    }
}

/// The slow device serving `image` (a file no loop device of its own is backed by), if any.
fn slow_device_over(
    registry: &fsage_slowdev::Registry,
    image: &std::path::Path,
) -> Option<PathBuf> {
    if !image.is_file() || !fsage_sys::loops_backed_by(image).is_empty() {
        return None;
    }
    let canon = image.canonicalize().ok()?;
    registry
        .list()
        .into_iter()
        .find(|(_, r)| r.backing_file.canonicalize().is_ok_and(|b| b == canon))
        .and_then(|(_, r)| r.device)
}

//! File system kinds, formatting (with the safety checks), probing and checking.

use crate::{Error, Remedy, Result};
use fsage_sys::fskind::DeviceSize;
use fsage_sys::{find_cmd, is_block_device, run_tool, TempPath};
use serde::{Deserialize, Serialize};
use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// A file system fsage can make, mount, check and snapshot: an entry of fsage-sys's descriptor
/// table ([`fsage_sys::fskind::TABLE`]), which says everything the lab asks of a kind. f2fs and
/// nilfs2 are log-structured: they need a kernel that has them ([`FsKind::check_kernel`]) and
/// measure free space by segment (`fsage-measure`), not by extent.
pub use fsage_sys::fskind::kernel_has;
pub use fsage_sys::FsKind;

/// The file system (or other signature) in a file or device: a kind's name (`Some("ext4")`) from
/// its superblock signature ([`FsKind::probe`]), otherwise what `blkid -p` finds (`"swap"`,
/// `"crypto_LUKS"`, `"partition table dos"`...), `None` when nothing.
pub fn probe_fs(path: &Path) -> Result<Option<String>> {
    let mut f = File::open(path).map_err(|e| Error::io(path, "", e))?;
    let read_at = |off: u64, len: usize| -> Option<Vec<u8>> {
        let mut b = vec![0u8; len];
        f.seek(SeekFrom::Start(off)).ok()?;
        f.read_exact(&mut b).ok()?;
        Some(b)
    };
    if let Some(k) = FsKind::probe(read_at) {
        return Ok(Some(k.name().into()));
    }
    if find_cmd("blkid").is_some() {
        let p = path.to_string_lossy();
        if let Ok(out) = run_tool("blkid", &["-p", "-o", "export", &p]) {
            for l in out.lines() {
                if let Some(t) = l.strip_prefix("TYPE=") {
                    return Ok(Some(t.to_string()));
                }
                if let Some(t) = l.strip_prefix("PTTYPE=") {
                    return Ok(Some(format!("partition table {t}")));
                }
            }
        }
    }
    Ok(None)
}

/// Refuses to overwrite `target` when that could destroy something: a device or image that is
/// mounted, attached to a loop device, used as swap or held by another device (never allowed), or
/// one that holds a file system or other signature, or an existing non-empty file (allowed with
/// `force`).
pub fn check_target_safe(target: &Path, force: bool) -> Result<()> {
    let meta = match fs::metadata(target) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(target, "", e)),
        Ok(m) => m,
    };
    if meta.is_dir() {
        crate::bail!(
            "{}: a directory; give an image file or a block device",
            target.display()
        );
    }
    // Only a regular file or a block device is ever a target: a character device (/dev/null), a
    // fifo or a socket would be replaced by the temporary-file-and-rename write, even forced.
    let is_regular = fs::symlink_metadata(target).is_ok_and(|m| m.file_type().is_file());
    if !is_regular && !is_block_device(target) {
        crate::bail!(
            "{}: neither a regular file nor a block device; fsage writes images only to those",
            target.display()
        );
    }
    if is_block_device(target) {
        if let Some(m) = fsage_sys::mounts_of_device(target)?.first() {
            crate::bail!(
                "{}: mounted on {}; fsage never formats or overwrites a mounted device, even when \
                 forced: unmount it first",
                target.display(),
                m.mount_point.display()
            );
        }
        // A device another loop device is built on, or a member of a mounted btrfs, is in use
        // though the mount table does not say so; then whatever holds it exclusively (a mount,
        // RAID, device mapper) makes the kernel refuse an O_EXCL open.
        fsage_sys::check_device_exclusive(target)?;
        // By its device number, not by resolving the path: the kernel's own name of it.
        let name = fsage_sys::block_name(target).unwrap_or_default();
        let sysdir = PathBuf::from(format!("/sys/class/block/{name}"));
        if let Ok(rd) = fs::read_dir(sysdir.join("holders")) {
            if let Some(h) = rd.flatten().next() {
                crate::bail!(
                    "{}: in use by {} (device mapper, md...); refusing even when forced",
                    target.display(),
                    h.file_name().to_string_lossy()
                );
            }
        }
        // Partitions of a whole disk that are mounted.
        if let Ok(rd) = fs::read_dir(&sysdir) {
            for e in rd.flatten() {
                let part = e.file_name().to_string_lossy().into_owned();
                if part.starts_with(&name) && e.path().join("partition").exists() {
                    let pd = PathBuf::from(format!("/dev/{part}"));
                    if let Some(m) = fsage_sys::mounts_of_device(&pd)
                        .ok()
                        .and_then(|v| v.first().cloned())
                    {
                        crate::bail!(
                            "{}: its partition {} is mounted on {}; unmount it first",
                            target.display(),
                            pd.display(),
                            m.mount_point.display()
                        );
                    }
                }
            }
        }
        let dev_name = format!("/dev/{name}");
        if fs::read_to_string("/proc/swaps").is_ok_and(|s| {
            s.lines()
                .skip(1)
                .any(|l| l.split_whitespace().next() == Some(&*dev_name))
        }) {
            crate::bail!("{}: in use as swap", target.display());
        }
    } else if meta.is_file() {
        let loops = fsage_sys::loops_backed_by(target);
        if !loops.is_empty() {
            crate::bail!(
                "{}: attached to {}; fsage never overwrites an image in use, even when forced: \
                 `fsage fs umount {}` first",
                target.display(),
                loops
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                fsage_sys::shell_arg(target)
            );
        }
    } else {
        crate::bail!("{}: not a regular file or block device", target.display());
    }
    if !force {
        if let Some(t) = probe_fs(target)? {
            return Err(Error::input(format!(
                "{}: holds a file system or signature ({t}); refusing to overwrite it unless \
                 forced",
                target.display()
            ))
            .with_remedy(Remedy::Force));
        }
        if meta.is_file() && meta.len() > 0 {
            return Err(Error::input(format!(
                "{}: exists ({} bytes); refusing to overwrite it unless forced",
                target.display(),
                meta.len()
            ))
            .with_remedy(Remedy::Force));
        }
    }
    Ok(())
}

/// How to make a file system.
#[derive(Debug, Clone)]
pub struct CreateOptions {
    pub kind: FsKind,
    /// Size in bytes: required for an image file; for a device, at most its size (default: all).
    pub size: Option<u64>,
    /// Extra mkfs arguments, split on whitespace (e.g. `-b 1024 -O ^has_journal`).
    pub mkfs_opts: Vec<String>,
    /// Overwrite an existing file system or file (never a mounted or attached one).
    pub force: bool,
}

/// What was made; also written next to an image file as `IMAGE.fsage.json`, which `fsage image
/// save` reads to record the mkfs options.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CreateInfo {
    pub fs: FsKind,
    pub size: u64,
    /// The options given by the user.
    pub mkfs_opts: Vec<String>,
    /// The whole mkfs command line as run (the target path replaced by `TARGET`).
    pub mkfs_command: Vec<String>,
    pub fsage_version: String,
    pub kernel: String,
}

/// Sidecar metadata file of an image: `IMAGE.fsage.json`.
pub fn sidecar_path(image: &Path) -> PathBuf {
    fsage_sys::with_suffix(image, ".fsage.json")
}

/// Reads an image's sidecar metadata, if there is one.
pub fn read_sidecar(image: &Path) -> Option<CreateInfo> {
    let text = fs::read_to_string(sidecar_path(image)).ok()?;
    serde_json::from_str(&text).ok()
}

fn mkfs_args(kind: FsKind, user: &[String], size: Option<u64>, device: bool) -> Vec<String> {
    let d = kind.desc();
    let mut a: Vec<String> = d.mkfs_args.iter().map(|s| s.to_string()).collect();
    if let Some(first) = d.mkfs_full_init.first() {
        if !user.iter().any(|o| o.starts_with(first)) {
            a.extend(d.mkfs_full_init.iter().map(|s| s.to_string()));
        }
    }
    a.extend(user.iter().cloned());
    if let (true, Some(s), DeviceSize::Option { flag, prefix }) = (device, size, d.device_size) {
        a.push(flag.into());
        a.push(format!("{prefix}{s}"));
    }
    a
}

/// Makes a file system on `target`: an image file (made sparse, at `opts.size`, through a
/// temporary file and a rename, so a failure leaves nothing) or a block device (after the safety
/// checks of [`check_target_safe`]).
pub fn create_fs(target: &Path, opts: &CreateOptions) -> Result<CreateInfo> {
    opts.kind.check_tools()?;
    if opts.kind.desc().mkfs_reads_mtab {
        check_mtab(Path::new("/etc/mtab"))?;
    }
    // Held until the image is in place: another command making, mounting or aging the same path
    // meanwhile is refused, naming this one.
    let _lock = fsage_sys::lock::lock_target_or_refuse(target, "the image or device")?;
    check_target_safe(target, opts.force)?;
    let device = is_block_device(target);
    let size = if device {
        let dev_size = fsage_sys::size_of(target)?;
        if dev_size == 0 {
            crate::bail!(
                "{}: the device has 0 bytes (a loop device with nothing attached?)",
                target.display()
            );
        }
        match opts.size {
            Some(s) if s > dev_size => {
                return Err(Error::input(format!(
                    "a size of {s} bytes is larger than {} ({dev_size} bytes)",
                    target.display()
                ))
                .with_remedy(Remedy::Size))
            }
            Some(s) => s,
            None => dev_size,
        }
    } else {
        opts.size.ok_or_else(|| {
            Error::input(format!(
                "{}: an image file needs a size (it has none of its own)",
                target.display()
            ))
            .with_remedy(Remedy::Size)
        })?
    };
    if size < opts.kind.min_size() {
        let min = opts.kind.min_size();
        // nilfs2's least is 4 KiB over 128 MiB: "128 MiB" would be wrong.
        let least = if min % (1 << 20) == 0 {
            format!("{} MiB", min >> 20)
        } else {
            format!(
                "{min} bytes ({} MiB and {} KiB)",
                min >> 20,
                (min % (1 << 20)) >> 10
            )
        };
        let e = Error::input(format!(
            "a size of {size} bytes: {} needs at least {least}",
            opts.kind
        ));
        // A larger --size helps only when the size was given (a device's own size cannot grow).
        return Err(match opts.size {
            Some(_) => e.with_remedy(Remedy::SizeAtLeast(opts.kind.min_size())),
            None => e,
        });
    }
    let mut args = mkfs_args(opts.kind, &opts.mkfs_opts, Some(size), device);
    let info = |args: &[String]| CreateInfo {
        fs: opts.kind,
        size,
        mkfs_opts: opts.mkfs_opts.clone(),
        mkfs_command: std::iter::once(opts.kind.mkfs().to_string())
            .chain(args.iter().cloned())
            .chain(std::iter::once("TARGET".to_string()))
            .collect(),
        fsage_version: env!("CARGO_PKG_VERSION").to_string(),
        kernel: fsage_sys::kernel_release(),
    };
    if device {
        let mut full = args.clone();
        full.push(target.to_string_lossy().into_owned());
        if opts.size.is_some() {
            match opts.kind.desc().device_size {
                DeviceSize::After { unit, suffix } => full.push(format!("{}{suffix}", size / unit)),
                DeviceSize::WholeDevice if size != fsage_sys::size_of(target)? => {
                    return Err(Error::input(format!(
                        "{}: {} formats a whole device and takes no size; give none \
                         (or the device's own size)",
                        target.display(),
                        opts.kind.mkfs()
                    ))
                    .with_remedy(Remedy::Size))
                }
                DeviceSize::WholeDevice | DeviceSize::Option { .. } => {}
            }
        }
        let refs: Vec<&str> = full.iter().map(String::as_str).collect();
        // Once more just before mkfs (which opens the device exclusively itself): nothing took
        // the device since the checks.
        fsage_sys::check_device_exclusive(target)?;
        run_mkfs(opts.kind, &refs).map_err(|e| size_refused(e, opts.kind, size))?;
        return Ok(info(&args));
    }
    let (tmp, f) = TempPath::create_beside(target, "the image", 0o666)?;
    f.set_len(size)
        .map_err(|e| Error::io(target, "cannot size the image", e))?;
    drop(f);
    args.push(tmp.path().to_string_lossy().into_owned());
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    run_mkfs(opts.kind, &refs).map_err(|e| size_refused(e, opts.kind, size))?;
    args.pop();
    crate::check_interrupted("mkfs")?;
    File::open(tmp.path())
        .and_then(|f| f.sync_all())
        .map_err(|e| Error::io(tmp.path(), "fsync", e))?;
    let info = info(&args);
    tmp.persist(target)?;
    let json = serde_json::to_string_pretty(&info).map_err(|e| Error::input(e.to_string()))?;
    fsage_sys::write_atomic(&sidecar_path(target), json.as_bytes())?;
    Ok(info)
}

/// Runs the kind's mkfs. mkfs.btrfs stats every mount point on the machine to see whether its
/// target is mounted, and stops at a FUSE mount whose daemon has died ("Transport endpoint is not
/// connected"), anyone's: such a mount usually lasts only while its owner tears it down (a slow
/// device being destroyed), so mkfs is tried again for a few seconds, then the dead mounts are
/// named.
fn run_mkfs(kind: FsKind, args: &[&str]) -> Result<String> {
    let mut tries = 0;
    loop {
        match run_tool(kind.mkfs(), args) {
            Err(e) if kind.desc().mkfs_stats_all_mounts && is_dead_mount_check(&e.to_string()) => {
                tries += 1;
                if tries >= 20 {
                    let dead = dead_fuse_mounts();
                    return Err(Error::operation(format!(
                        "{e}\n({} checks every mount on the machine; a FUSE mount whose \
                         daemon has died stops it{}: unmount it, e.g. `umount -l MOUNTPOINT`)",
                        kind.mkfs(),
                        if dead.is_empty() {
                            String::new()
                        } else {
                            format!(
                                ": {}",
                                dead.iter()
                                    .map(|p| p.display().to_string())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )
                        }
                    )));
                }
                crate::check_interrupted("mkfs")?;
                std::thread::sleep(std::time::Duration::from_millis(250));
            }
            other => return other,
        }
    }
}

fn is_dead_mount_check(text: &str) -> bool {
    text.contains("cannot check mount status") && text.contains("not connected")
}

/// FUSE mounts whose daemon is gone (stat fails with ENOTCONN).
fn dead_fuse_mounts() -> Vec<PathBuf> {
    fsage_sys::mount_table()
        .unwrap_or_default()
        .into_iter()
        .filter(|m| m.fstype.starts_with("fuse"))
        .filter(|m| {
            matches!(std::fs::symlink_metadata(&m.mount_point),
                Err(e) if e.raw_os_error() == Some(rustix::io::Errno::NOTCONN.raw_os_error()))
        })
        .map(|m| m.mount_point)
        .collect()
}

/// mkfs.nilfs2 opens `/etc/mtab` to see whether the device is mounted and stops ("cannot open
/// /etc/mtab!") where it is missing, as in minimal containers. fsage changes nothing under /etc
/// itself: it says what to do (scripts/setup does it).
fn check_mtab(mtab: &Path) -> Result<()> {
    if mtab.exists() {
        return Ok(());
    }
    crate::bail!(
        "{}: missing, and mkfs.nilfs2 reads it to see whether the device is mounted: \
         `ln -s /proc/self/mounts {}` (scripts/setup does it)",
        mtab.display(),
        mtab.display()
    )
}

/// mkfs.ext4 refuses a device of 2^48 blocks or more ("too big to create a filesystem"): the
/// size given is at fault, not the operation.
fn size_refused(e: Error, kind: FsKind, size: u64) -> Error {
    let text = e.to_string();
    if text.contains("too big to create") {
        Error::input(format!(
            "a size of {size} bytes: too large for {kind} ({text})"
        ))
        .with_remedy(Remedy::Size)
    } else {
        e
    }
}

/// Makes a sparse image file of `size` bytes at `path` (which must not exist) holding a fresh
/// file system of `kind`, made with the extra mkfs arguments `mkfs_opts`.
pub fn create_image(kind: FsKind, size: u64, path: &Path, mkfs_opts: &[String]) -> Result<()> {
    // Checked under the lock: two commands must not both find the path free and both make it.
    let _lock = fsage_sys::lock::lock_target_or_refuse(path, "the image or device")?;
    if path.exists() {
        crate::bail!("{}: exists; refusing to overwrite it", path.display());
    }
    create_fs(
        path,
        &CreateOptions {
            kind,
            size: Some(size),
            mkfs_opts: mkfs_opts.to_vec(),
            force: false,
        },
    )
    .map(|_| ())
}

/// What [`fsck`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checked {
    /// The checker found nothing wrong; its output.
    Clean(String),
    /// The kind has no checker (nilfs2): nothing was checked, and this says why.
    NoChecker(String),
}

/// Checks the (unmounted) file system in `target` without changing it: `e2fsck -fn`,
/// `xfs_repair -n`, `btrfs check --readonly`, `fsck.f2fs --dry-run -f`; nilfs2 has no checker
/// ([`Checked::NoChecker`]). `Err` when the checker finds problems.
pub fn fsck(target: &Path, kind: FsKind) -> Result<Checked> {
    // A mounted file system changes under the checker, which then reports wrong counts: refuse.
    if let Some(dev) = fsage_sys::loops_backed_by(target).first() {
        return Err(Error::input(format!(
            "{}: attached to {} (mounted?): a file system is checked unmounted; `fsage fs umount \
             {}` first",
            target.display(),
            dev.display(),
            target.display()
        )));
    }
    if let Some(m) = fsage_sys::mounts_of_device(target)?.first() {
        return Err(Error::input(format!(
            "{}: mounted on {}; a file system is checked unmounted",
            target.display(),
            m.mount_point.display()
        )));
    }
    let t = target.to_string_lossy();
    let Some(check) = kind.desc().check else {
        return Ok(Checked::NoChecker(format!(
            "{kind} has no offline checker ({} ships no fsck.{kind}): not checked",
            kind.package()
        )));
    };
    let args: Vec<&str> = check.args.iter().copied().chain([&*t]).collect();
    run_tool(check.tool, &args)
        .map(Checked::Clean)
        .map_err(|e| Error::input(format!("{}: the {kind} check found problems: {e}", t)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mkfs_btrfs_stopped_by_a_dead_fuse_mount_is_recognised() {
        // As mkfs.btrfs 6.x printed it in CI while a test's slow device was being destroyed.
        let ci = "mkfs.btrfs -f -q -b 268435456 /dev/loop4 failed (exit status: 1): ERROR: \
                  cannot check mount status of /dev/loop4: Transport endpoint is not connected";
        assert!(is_dead_mount_check(ci));
        assert!(!is_dead_mount_check(
            "mkfs.btrfs failed: ERROR: /dev/loop4 is mounted"
        ));
    }

    #[test]
    fn a_kind_is_serialised_by_its_name() {
        for k in FsKind::ALL {
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(json, format!("\"{}\"", k.name()));
            assert_eq!(serde_json::from_str::<FsKind>(&json).unwrap(), k);
        }
        let e = serde_json::from_str::<FsKind>("\"zfs\"").unwrap_err();
        assert!(e.to_string().contains("nilfs2"), "{e}");
    }

    #[test]
    fn mkfs_gets_each_kinds_arguments_and_device_size() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let lazy = "lazy_itable_init=0,lazy_journal_init=0";
        assert_eq!(
            mkfs_args(FsKind::EXT4, &[], Some(1 << 30), true),
            s(&["-F", "-q", "-E", lazy])
        );
        // The user's own -E replaces the full initialisation.
        assert_eq!(
            mkfs_args(FsKind::EXT4, &s(&["-E", "x"]), None, false),
            s(&["-F", "-q", "-E", "x"])
        );
        assert_eq!(
            mkfs_args(FsKind::XFS, &s(&["-b", "size=1024"]), Some(1 << 30), true),
            s(&["-f", "-q", "-b", "size=1024", "-d", "size=1073741824"])
        );
        assert_eq!(
            mkfs_args(FsKind::XFS, &[], Some(1 << 30), false),
            s(&["-f", "-q"])
        );
        assert_eq!(
            mkfs_args(FsKind::BTRFS, &[], Some(1 << 30), true),
            s(&["-f", "-q", "-b", "1073741824"])
        );
        for k in [FsKind::F2FS, FsKind::NILFS2] {
            assert_eq!(mkfs_args(k, &[], Some(1 << 30), true), s(&["-f", "-q"]));
        }
    }

    #[test]
    fn a_missing_mtab_is_named_with_its_fix() {
        let dir = fsage_testkit::tmp();
        let missing = dir.path().join("mtab");
        let e = check_mtab(&missing).unwrap_err();
        assert!(e.message.contains("ln -s /proc/self/mounts"), "{e}");
        assert!(e.message.contains(&*missing.to_string_lossy()), "{e}");
        fs::write(&missing, "").unwrap();
        check_mtab(&missing).unwrap();
    }

    /// A superblock-sized file with `bytes` written at `off`.
    fn image_with(dir: &Path, name: &str, parts: &[(u64, &[u8])]) -> PathBuf {
        use std::io::Write;
        let p = dir.join(name);
        let mut f = File::create(&p).unwrap();
        f.set_len(128 << 10).unwrap();
        for (off, b) in parts {
            f.seek(SeekFrom::Start(*off)).unwrap();
            f.write_all(b).unwrap();
        }
        p
    }

    #[test]
    fn probe_reads_the_f2fs_and_nilfs2_magics_and_keeps_ext4_first() {
        let dir = fsage_testkit::tmp();
        let f2 = image_with(dir.path(), "f2", &[(1024, &[0x10, 0x20, 0xF5, 0xF2])]);
        assert_eq!(probe_fs(&f2).unwrap().as_deref(), Some("f2fs"));
        let ni = image_with(dir.path(), "ni", &[(1024, &[2, 0, 0, 0, 0, 0, 0x34, 0x34])]);
        assert_eq!(probe_fs(&ni).unwrap().as_deref(), Some("nilfs2"));
        // An ext4 superblock whose blocks count has 0x3434 in its high half is ext4.
        let e4 = image_with(
            dir.path(),
            "e4",
            &[
                (1024, &[0, 4, 0, 0, 0, 0, 0x34, 0x34]),
                (0x438, &[0x53, 0xEF]),
            ],
        );
        assert_eq!(probe_fs(&e4).unwrap().as_deref(), Some("ext4"));
        // A nilfs2 at its checkpoint 0xEF53 has ext4's magic bytes at 0x438: still nilfs2.
        let cp = image_with(
            dir.path(),
            "cp",
            &[
                (1024, &[2, 0, 0, 0, 0, 0, 0x34, 0x34]),
                (0x438, &[0x53, 0xEF]),
            ],
        );
        assert_eq!(probe_fs(&cp).unwrap().as_deref(), Some("nilfs2"));
    }
}

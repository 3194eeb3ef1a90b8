//! File system kinds, formatting (with the safety checks), probing and checking.

use crate::{Error, Remedy, Result};
use fsage_sys::{find_cmd, is_block_device, run_tool, TempPath};
use serde::{Deserialize, Serialize};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// A file system fsage can make, mount, check and snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FsKind {
    Ext4,
    Xfs,
    Btrfs,
}

impl FsKind {
    pub const ALL: [FsKind; 3] = [FsKind::Ext4, FsKind::Xfs, FsKind::Btrfs];

    pub fn name(self) -> &'static str {
        match self {
            FsKind::Ext4 => "ext4",
            FsKind::Xfs => "xfs",
            FsKind::Btrfs => "btrfs",
        }
    }

    pub fn parse(s: &str) -> Result<FsKind> {
        match s {
            "ext4" => Ok(FsKind::Ext4),
            "xfs" => Ok(FsKind::Xfs),
            "btrfs" => Ok(FsKind::Btrfs),
            _ => Err(Error::input(format!(
                "file system {s:?}: fsage knows ext4, xfs and btrfs (f2fs and nilfs2 are not in \
                 this kernel)"
            ))),
        }
    }

    /// The mkfs program.
    pub fn mkfs(self) -> &'static str {
        match self {
            FsKind::Ext4 => "mkfs.ext4",
            FsKind::Xfs => "mkfs.xfs",
            FsKind::Btrfs => "mkfs.btrfs",
        }
    }

    /// Smallest size its mkfs accepts (roughly), for a clear error before running it.
    pub fn min_size(self) -> u64 {
        match self {
            FsKind::Ext4 => 1 << 20,
            FsKind::Xfs => 300 << 20,
            FsKind::Btrfs => 128 << 20,
        }
    }

    /// The tools the kind needs: mkfs and checker.
    pub fn tools(self) -> [&'static str; 2] {
        match self {
            FsKind::Ext4 => ["mkfs.ext4", "e2fsck"],
            FsKind::Xfs => ["mkfs.xfs", "xfs_repair"],
            FsKind::Btrfs => ["mkfs.btrfs", "btrfs"],
        }
    }

    /// `Err` naming the missing tool and its package.
    pub fn check_tools(self) -> Result<()> {
        for t in self.tools() {
            if find_cmd(t).is_none() {
                let pkg = match self {
                    FsKind::Ext4 => "e2fsprogs",
                    FsKind::Xfs => "xfsprogs",
                    FsKind::Btrfs => "btrfs-progs",
                };
                crate::bail!("{t} not found: install {pkg} (apt-get install {pkg})");
            }
        }
        Ok(())
    }
}

impl std::fmt::Display for FsKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The file system (or other signature) in a file or device: `Some("ext4")`, `Some("xfs")`,
/// `Some("btrfs")` from the superblock magic, otherwise what `blkid -p` finds (`"swap"`,
/// `"crypto_LUKS"`, `"partition table dos"`...), `None` when nothing.
pub fn probe_fs(path: &Path) -> Result<Option<String>> {
    let mut f = File::open(path).map_err(|e| Error::io(path, "", e))?;
    let mut read_at = |off: u64, len: usize| -> Option<Vec<u8>> {
        let mut b = vec![0u8; len];
        f.seek(SeekFrom::Start(off)).ok()?;
        f.read_exact(&mut b).ok()?;
        Some(b)
    };
    if read_at(0, 4).is_some_and(|b| b == b"XFSB") {
        return Ok(Some("xfs".into()));
    }
    if read_at(0x10040, 8).is_some_and(|b| b == b"_BHRfS_M") {
        return Ok(Some("btrfs".into()));
    }
    if read_at(0x438, 2).is_some_and(|b| b == [0x53, 0xEF]) {
        // ext2/3/4: fsage mounts them all as ext4.
        return Ok(Some("ext4".into()));
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
        let canon = target
            .canonicalize()
            .map_err(|e| Error::io(target, "", e))?;
        let name = canon
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
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
        if fs::read_to_string("/proc/swaps").is_ok_and(|s| {
            s.lines()
                .skip(1)
                .any(|l| l.split_whitespace().next() == Some(&*canon.to_string_lossy()))
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
                target.display()
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
    let mut a: Vec<String> = match kind {
        FsKind::Ext4 => vec!["-F".into(), "-q".into()],
        FsKind::Xfs | FsKind::Btrfs => vec!["-f".into(), "-q".into()],
    };
    // ext4 otherwise zeroes its inode tables and journal in the background after the first mount:
    // writes nobody asked for, during aging and during a tracked benchmark.
    if kind == FsKind::Ext4 && !user.iter().any(|o| o.starts_with("-E")) {
        a.push("-E".into());
        a.push("lazy_itable_init=0,lazy_journal_init=0".into());
    }
    a.extend(user.iter().cloned());
    if device {
        if let Some(s) = size {
            match kind {
                FsKind::Xfs => {
                    a.push("-d".into());
                    a.push(format!("size={s}"));
                }
                FsKind::Btrfs => {
                    a.push("-b".into());
                    a.push(s.to_string());
                }
                FsKind::Ext4 => {}
            }
        }
    }
    a
}

/// Makes a file system on `target`: an image file (made sparse, at `opts.size`, through a
/// temporary file and a rename, so a failure leaves nothing) or a block device (after the safety
/// checks of [`check_target_safe`]).
pub fn create_fs(target: &Path, opts: &CreateOptions) -> Result<CreateInfo> {
    opts.kind.check_tools()?;
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
        let e = Error::input(format!(
            "a size of {size} bytes: {} needs at least {} MiB",
            opts.kind,
            opts.kind.min_size() >> 20
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
        if opts.kind == FsKind::Ext4 && opts.size.is_some() {
            full.push(format!("{}k", size / 1024));
        }
        let refs: Vec<&str> = full.iter().map(String::as_str).collect();
        run_tool(opts.kind.mkfs(), &refs).map_err(|e| size_refused(e, opts.kind, size))?;
        return Ok(info(&args));
    }
    let tmp = TempPath::beside(target)?;
    {
        let f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(tmp.path())
            .map_err(|e| Error::io(tmp.path(), "cannot create the image", e))?;
        f.set_len(size)
            .map_err(|e| Error::io(tmp.path(), "cannot size the image", e))?;
    }
    args.push(tmp.path().to_string_lossy().into_owned());
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    run_tool(opts.kind.mkfs(), &refs).map_err(|e| size_refused(e, opts.kind, size))?;
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

/// Checks the (unmounted) file system in `target` without changing it: `e2fsck -fn`,
/// `xfs_repair -n`, `btrfs check --readonly`. `Ok(output)` when clean.
pub fn fsck(target: &Path, kind: FsKind) -> Result<String> {
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
    match kind {
        FsKind::Ext4 => run_tool("e2fsck", &["-f", "-n", &t]),
        FsKind::Xfs => run_tool("xfs_repair", &["-n", &t]),
        FsKind::Btrfs => run_tool("btrfs", &["check", "--readonly", &t]),
    }
    .map_err(|e| Error::input(format!("{}: the {kind} check found problems: {e}", t)))
}

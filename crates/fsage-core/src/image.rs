//! The aged-image library: a directory with one subdirectory per snapshot, holding
//! `manifest.json` (see [`Manifest`]) and `data.zst`, the image's non-zero 4 KiB blocks in a
//! zstd-compressed stream:
//!
//! ```text
//! "FSAGE-SPARSE-1\0\0" (16 bytes)  size: u64 LE
//! repeated: offset: u64 LE, length: u64 LE, length bytes of data (ascending, non-overlapping)
//! end:      offset = u64::MAX, length = 0
//! ```
//!
//! Everything else in the image reads as zeros. Saving writes a temporary directory and renames
//! it; restoring writes a temporary file and renames it (on a device it writes in place and then
//! says whether the checksums matched).

use fsage_lab::sparse::{self, zero_range, CHUNK, ZEROS};
use fsage_lab::{Error, Remedy, Result};
use fsage_sys::{is_block_device, TempPath};
use sha2::{Digest, Sha256};
use std::fs::{self, File};
use std::io::{BufReader, BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// The manifest and its parts are fsage-results' (the report reads them without this crate).
pub use fsage_results::image::{
    is_git_series, AgingRecord, Checksums, DriveRecord, Manifest, ProfileRecord,
};

/// Feeds `n` zero bytes to a hasher.
fn hash_zeros(h: &mut Sha256, mut n: u64) {
    while n > 0 {
        let k = n.min(CHUNK as u64) as usize;
        h.update(&ZEROS[..k]);
        n -= k as u64;
    }
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of the whole content of a file or device (holes read as zeros): equal to `sha256sum`.
pub fn sha256_image(path: &Path) -> Result<String> {
    let f = File::open(path).map_err(|e| Error::io(path, "", e))?;
    let mut h = Sha256::new();
    let mut pos = 0u64;
    let size = sparse::scan_nonzero(&f, path, |off, data| {
        hash_zeros(&mut h, off - pos);
        h.update(data);
        pos = off + data.len() as u64;
        Ok(())
    })?;
    hash_zeros(&mut h, size - pos);
    Ok(hex(&h.finalize()))
}

pub const FORMAT: &str = "fsage-image/1";
const MAGIC: &[u8; 16] = b"FSAGE-SPARSE-1\0\0";
pub const DATA_FILE: &str = "data.zst";
pub const MANIFEST_FILE: &str = "manifest.json";

/// The file a snapshot keeps its drive state in.
const DRIVE_FILE: &str = "drive.ftl";

/// What to record besides the image itself.
#[derive(Debug, Clone, Default)]
pub struct SaveOptions {
    pub name: String,
    pub profile: Option<ProfileRecord>,
    pub report: Option<serde_json::Value>,
    pub mkfs_opts: Option<Vec<String>>,
    pub note: Option<String>,
    pub zstd_level: i32,
    /// Replace a snapshot of the same name; save an image that is attached to a loop device.
    pub force: bool,
}

/// A library directory.
#[derive(Debug, Clone)]
pub struct Library {
    pub dir: PathBuf,
}

/// `--library` default: `$FSAGE_LIBRARY`, else `$XDG_DATA_HOME/fsage/images`, else
/// `~/.local/share/fsage/images`, else `/var/lib/fsage/images`.
pub fn default_library_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("FSAGE_LIBRARY").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("fsage/images");
    }
    if let Some(h) = std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(h).join(".local/share/fsage/images");
    }
    PathBuf::from("/var/lib/fsage/images")
}

/// Checks a snapshot name: letters, digits, `.`, `_`, `-`, not starting with `.`.
pub fn check_name(name: &str) -> Result<()> {
    if name.is_empty()
        || name.starts_with('.')
        || name.len() > 200
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        fsage_lab::bail!(
            "image name {name:?}: use letters, digits, '.', '_' and '-' (not starting with '.')"
        );
    }
    Ok(())
}

struct HashWriter<W: Write> {
    inner: W,
    h: Sha256,
    n: u64,
}

impl<W: Write> Write for HashWriter<W> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let k = self.inner.write(b)?;
        self.h.update(&b[..k]);
        self.n += k as u64;
        Ok(k)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

struct HashReader<R: Read> {
    inner: R,
    h: Sha256,
}

impl<R: Read> Read for HashReader<R> {
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        let k = self.inner.read(b)?;
        self.h.update(&b[..k]);
        Ok(k)
    }
}

/// What [`Library::restore`] did.
#[derive(Debug, Clone)]
pub struct RestoreStats {
    pub size: u64,
    pub data_bytes: u64,
    pub seconds: f64,
    /// Where the snapshot's drive state went (`TARGET.ftl`), when it has one and the target is
    /// an image file.
    pub drive_state: Option<PathBuf>,
}

impl Library {
    /// The library at `dir` (made when first saved to).
    pub fn open(dir: &Path) -> Library {
        Library {
            dir: dir.to_path_buf(),
        }
    }

    pub fn entry_dir(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Snapshots `image` (an unmounted image file or device) as `opts.name`.
    pub fn save(&self, image: &Path, opts: &SaveOptions) -> Result<Manifest> {
        check_name(&opts.name)?;
        // Not mounted or aged by another command while it is read.
        let _lock = fsage_sys::lock::lock_target_shared_or_refuse(image, "the image or device")?;
        let level = if opts.zstd_level == 0 {
            3
        } else {
            opts.zstd_level
        };
        if !(1..=19).contains(&level) {
            return Err(
                Error::input(format!("zstd level {level}: levels run from 1 to 19"))
                    .with_remedy(Remedy::Level),
            );
        }
        if image.is_file() {
            let loops = fsage_sys::loops_backed_by(image);
            if !loops.is_empty() && !opts.force {
                return Err(Error::input(format!(
                    "{}: attached to {} (mounted?): a snapshot of a live file system is not \
                     consistent; `fsage fs umount {}` first (or force it)",
                    image.display(),
                    loops[0].display(),
                    fsage_sys::shell_arg(image)
                ))
                .with_remedy(Remedy::Force));
            }
        } else if is_block_device(image) {
            if let Some(m) = fsage_sys::mounts_of_device(image)?.first() {
                if !opts.force {
                    return Err(Error::input(format!(
                        "{}: mounted on {}; unmount it first (or force it)",
                        image.display(),
                        m.mount_point.display()
                    ))
                    .with_remedy(Remedy::Force));
                }
            }
        } else {
            fsage_lab::bail!("{}: not an image file or block device", image.display());
        }
        let inuse = fsage_device::in_use_mark(&fsage_device::state_file_of(image));
        if image.is_file() && inuse.exists() && !opts.force {
            return Err(Error::input(format!(
                "{}: a slow device runs on this image (its drive state is {}): destroy the \
                 device first, so that the image and its drive are saved as they are (or force \
                 it, without the drive)",
                image.display(),
                inuse.display()
            ))
            .with_remedy(Remedy::Force));
        }
        // The drive the image aged on, when a device or an aging run saved one beside it: read
        // before anything is written, never through a link, and only if it is a drive state.
        let ftl = fsage_device::state_file_of(image);
        let drive_state = if image.is_file() {
            read_drive_state(&ftl)?
        } else {
            None
        };
        if fsage_lab::probe_fs(image)?.is_none() {
            fsage_lab::bail!(
                "{}: holds no ext4, xfs or btrfs file system: the library keeps file system images",
                image.display()
            );
        }
        fs::create_dir_all(&self.dir)
            .map_err(|e| Error::io(&self.dir, "cannot create the library", e))?;
        let dest = self.entry_dir(&opts.name);
        if dest.exists() && !opts.force {
            return Err(Error::input(format!(
                "{}: an image named {:?} exists in the library; pick another name or force its \
                 replacement",
                dest.display(),
                opts.name
            ))
            .with_remedy(Remedy::Name));
        }
        let tmp = TempPath::dir_in(&self.dir, &format!(".{}.fsage-tmp-", opts.name))?;
        let src = File::open(image).map_err(|e| Error::io(image, "", e))?;
        let size = fsage_sys::file_size(&src, image)?;
        let data_path = tmp.path().join(DATA_FILE);
        let out = fsage_sys::safe::create_new(&data_path, 0o666)
            .map_err(|e| Error::io(&data_path, "", e))?;
        let hw = HashWriter {
            inner: BufWriter::with_capacity(1 << 20, out),
            h: Sha256::new(),
            n: 0,
        };
        let mut enc =
            zstd::Encoder::new(hw, level).map_err(|e| Error::io(&data_path, "zstd", e))?;
        let werr = |e: std::io::Error| Error::io(&data_path, "write", e);
        enc.write_all(MAGIC).map_err(werr)?;
        enc.write_all(&size.to_le_bytes()).map_err(werr)?;
        let mut ih = Sha256::new();
        let (mut pos, mut data_bytes, mut runs) = (0u64, 0u64, 0u64);
        sparse::scan_nonzero(&src, image, |off, data| {
            hash_zeros(&mut ih, off - pos);
            ih.update(data);
            pos = off + data.len() as u64;
            data_bytes += data.len() as u64;
            runs += 1;
            enc.write_all(&off.to_le_bytes()).map_err(werr)?;
            enc.write_all(&(data.len() as u64).to_le_bytes())
                .map_err(werr)?;
            enc.write_all(data).map_err(werr)
        })?;
        hash_zeros(&mut ih, size - pos);
        enc.write_all(&u64::MAX.to_le_bytes()).map_err(werr)?;
        enc.write_all(&0u64.to_le_bytes()).map_err(werr)?;
        let hw = enc.finish().map_err(werr)?;
        let HashWriter { inner, h, n } = hw;
        let f = inner
            .into_inner()
            .map_err(|e| Error::io(&data_path, "write", e.into_error()))?;
        f.sync_all()
            .map_err(|e| Error::io(&data_path, "fsync", e))?;
        let side = if image.is_file() {
            fsage_lab::fs::read_sidecar(image)
        } else {
            None
        };
        let fs_type = fsage_lab::fs::probe_fs(image)?;
        let drive = if let Some(bytes) = drive_state {
            let dest_ftl = tmp.path().join(DRIVE_FILE);
            fsage_sys::write_atomic_private(&dest_ftl, &bytes)?;
            Some(DriveRecord {
                file: DRIVE_FILE.into(),
                bytes: bytes.len() as u64,
                sha256: hex(&Sha256::digest(&bytes)),
            })
        } else {
            None
        };
        let manifest = Manifest {
            format: FORMAT.into(),
            name: opts.name.clone(),
            created_unix: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            fsage_version: env!("CARGO_PKG_VERSION").into(),
            kernel: fsage_sys::kernel_release(),
            source: image.display().to_string(),
            fs: fs_type,
            mkfs_opts: opts
                .mkfs_opts
                .clone()
                .or_else(|| side.as_ref().map(|s| s.mkfs_opts.clone())),
            mkfs_command: side.map(|s| s.mkfs_command),
            size,
            data_bytes,
            data_runs: runs,
            compressed_bytes: n,
            zstd_level: level,
            checksums: Checksums {
                image_sha256: hex(&ih.finalize()),
                data_sha256: hex(&h.finalize()),
            },
            profile: opts.profile.clone(),
            seed: opts
                .report
                .as_ref()
                .and_then(|r| r.get("seed"))
                .and_then(|s| s.as_u64()),
            aging: opts.report.clone(),
            note: opts.note.clone(),
            drive,
        };
        let json =
            serde_json::to_string_pretty(&manifest).map_err(|e| Error::input(e.to_string()))?;
        fsage_sys::write_atomic(&tmp.path().join(MANIFEST_FILE), json.as_bytes())?;
        if dest.exists() {
            // --force: move the old one aside, put the new one in place, then delete the old.
            let old = TempPath::new(self.dir.join(format!(
                ".{}.fsage-old-{}",
                opts.name,
                fsage_sys::safe::random_hex()
            )));
            fs::rename(&dest, old.path()).map_err(|e| Error::io(&dest, "rename", e))?;
            tmp.persist(&dest)?;
        } else {
            tmp.persist(&dest)?;
        }
        Ok(manifest)
    }

    /// The manifest of snapshot `name`.
    pub fn load(&self, name: &str) -> Result<Manifest> {
        check_name(name)?;
        let p = self.entry_dir(name).join(MANIFEST_FILE);
        let text = fs::read_to_string(&p).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::input(format!(
                    "no image named {name:?} in the library {} (see `fsage image list`)",
                    self.dir.display()
                ))
            } else {
                Error::io(&p, "", e)
            }
        })?;
        let m: Manifest = serde_json::from_str(&text)
            .map_err(|e| Error::input(format!("{}: {e}", p.display())))?;
        if m.format != FORMAT {
            fsage_lab::bail!(
                "{}: format {:?}, this fsage reads {FORMAT:?}",
                p.display(),
                m.format
            );
        }
        Ok(m)
    }

    /// Every snapshot's manifest (by name); unreadable entries as errors.
    pub fn list(&self) -> Result<Vec<std::result::Result<Manifest, Error>>> {
        let rd = match fs::read_dir(&self.dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(&self.dir, "", e)),
            Ok(r) => r,
        };
        let mut names: Vec<String> = rd
            .flatten()
            .filter(|e| e.path().join(MANIFEST_FILE).is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with('.'))
            .collect();
        names.sort();
        Ok(names.iter().map(|n| self.load(n)).collect())
    }

    /// Decompresses snapshot `name`, calling `cb(offset, data)` for each stored run, and checks
    /// both checksums; returns the manifest.
    fn stream(&self, name: &str, mut cb: impl FnMut(u64, &[u8]) -> Result<()>) -> Result<Manifest> {
        let m = self.load(name)?;
        let p = self.entry_dir(name).join(DATA_FILE);
        let f = File::open(&p).map_err(|e| Error::io(&p, "", e))?;
        let mut hr = HashReader {
            inner: f,
            h: Sha256::new(),
        };
        let corrupt = |what: &str| {
            Error::operation(format!("{}: corrupt snapshot data: {what}", p.display()))
        };
        let mut ih = Sha256::new();
        {
            let mut dec = zstd::Decoder::with_buffer(BufReader::with_capacity(1 << 20, &mut hr))
                .map_err(|e| Error::io(&p, "zstd", e))?;
            let mut head = [0u8; 24];
            dec.read_exact(&mut head)
                .map_err(|e| corrupt(&format!("header: {e}")))?;
            if &head[..16] != MAGIC {
                return Err(corrupt("bad magic"));
            }
            let size = u64::from_le_bytes(head[16..24].try_into().unwrap_or_default());
            if size != m.size {
                return Err(corrupt(&format!(
                    "size {size} but the manifest says {}",
                    m.size
                )));
            }
            let mut pos = 0u64;
            let mut buf = vec![0u8; 1 << 20];
            loop {
                fsage_lab::check_interrupted("reading the snapshot")?;
                let mut rec = [0u8; 16];
                dec.read_exact(&mut rec)
                    .map_err(|e| corrupt(&format!("record header: {e}")))?;
                let off = u64::from_le_bytes(rec[..8].try_into().unwrap_or_default());
                let len = u64::from_le_bytes(rec[8..].try_into().unwrap_or_default());
                if off == u64::MAX && len == 0 {
                    break;
                }
                if off < pos || off.checked_add(len).is_none_or(|e| e > size) {
                    return Err(corrupt(&format!(
                        "run at {off} of {len} bytes out of order"
                    )));
                }
                hash_zeros(&mut ih, off - pos);
                let mut done = 0u64;
                while done < len {
                    let k = (len - done).min(buf.len() as u64) as usize;
                    dec.read_exact(&mut buf[..k])
                        .map_err(|e| corrupt(&format!("data: {e}")))?;
                    ih.update(&buf[..k]);
                    cb(off + done, &buf[..k])?;
                    done += k as u64;
                }
                pos = off + len;
            }
            hash_zeros(&mut ih, size - pos);
            // Read to the end so the file checksum covers every byte.
            let mut rest = Vec::new();
            dec.read_to_end(&mut rest)
                .map_err(|e| corrupt(&format!("trailer: {e}")))?;
        }
        std::io::copy(&mut hr, &mut std::io::sink()).map_err(|e| Error::io(&p, "read", e))?;
        let data_sha = hex(&hr.h.finalize());
        if data_sha != m.checksums.data_sha256 {
            fsage_lab::fail!(
                "{}: checksum mismatch: data.zst has SHA-256 {data_sha}, the manifest says {}",
                p.display(),
                m.checksums.data_sha256
            );
        }
        let image_sha = hex(&ih.finalize());
        if image_sha != m.checksums.image_sha256 {
            fsage_lab::fail!(
                "{}: checksum mismatch: the image restored from it has SHA-256 {image_sha}, the \
                 manifest says {}",
                p.display(),
                m.checksums.image_sha256
            );
        }
        Ok(m)
    }

    /// Decompresses snapshot `name` and checks its checksums (the drive state's too), writing
    /// nothing.
    pub fn verify(&self, name: &str) -> Result<Manifest> {
        let m = self.stream(name, |_, _| Ok(()))?;
        self.drive_bytes(name, &m)?;
        Ok(m)
    }

    /// The snapshot's drive state, read and checked against its manifest; none if it has none.
    fn drive_bytes(&self, name: &str, m: &Manifest) -> Result<Option<Vec<u8>>> {
        let Some(d) = &m.drive else {
            return Ok(None);
        };
        let p = self.entry_dir(name).join(&d.file);
        let bytes = fs::read(&p).map_err(|e| Error::io(&p, "", e))?;
        let sha = hex(&Sha256::digest(&bytes));
        if sha != d.sha256 {
            fsage_lab::fail!(
                "{}: checksum mismatch: the drive state has SHA-256 {sha}, the manifest says {}",
                p.display(),
                d.sha256
            );
        }
        Ok(Some(bytes))
    }

    /// Restores snapshot `name` to `target`: an image file (written to a temporary file, renamed
    /// once both checksums match) or a block device at least as large as the image (holes zeroed;
    /// refused if mounted, and if it holds a file system unless `force`). An existing file is
    /// replaced only with `force`.
    pub fn restore(&self, name: &str, target: &Path, force: bool) -> Result<RestoreStats> {
        let t0 = Instant::now();
        let m = self.load(name)?;
        // Checked and written under the lock: nothing mounts, ages or makes it meanwhile.
        let _lock = fsage_sys::lock::lock_target_or_refuse(target, "the restore's target")?;
        fsage_lab::fs::check_target_safe(target, force)?;
        let device = is_block_device(target);
        // The drive goes beside an image file (a block device has no place for it); it is read
        // and checked before anything is written, and an old one is replaced only when forced.
        let drive = if device {
            None
        } else {
            self.drive_bytes(name, &m)?
        };
        let drive_target = fsage_device::state_file_of(target);
        let drive_there = !device
            && fsage_sys::safe::lstat_own_name(&drive_target, "the drive state beside the image")?
                .is_some();
        if drive_there && !force {
            return Err(Error::input(format!(
                "{}: a drive state exists there, which would not match the restored image (force \
                 its replacement{})",
                drive_target.display(),
                if drive.is_some() {
                    " by the snapshot's own"
                } else {
                    "; the snapshot has none, so it is removed"
                }
            ))
            .with_remedy(Remedy::Force));
        }
        let (f, tmp) = if device {
            // Exclusively: refused while a mount, RAID or btrfs holds the device.
            let f = fsage_sys::open_device_exclusive(target)?;
            let dsize = fsage_sys::file_size(&f, target)?;
            if dsize < m.size {
                fsage_lab::bail!(
                    "{}: too small: {dsize} bytes, the image {name:?} is {} bytes",
                    target.display(),
                    m.size
                );
            }
            (f, None)
        } else {
            let dir = target
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            if !dir.is_dir() {
                fsage_lab::bail!(
                    "{}: the directory does not exist (restoring to {} makes the file, not the \
                     directories above it)",
                    dir.display(),
                    target.display()
                );
            }
            // Free bytes as root counts them.
            let free = fsage_sys::fs_stat(dir)
                .map_err(|e| Error::io(dir, "statvfs", e))?
                .free;
            if free < m.data_bytes {
                fsage_lab::bail!(
                    "{}: too small: {free} bytes free there, the image {name:?} needs {} bytes of \
                     data ({} bytes apparent, sparse)",
                    dir.display(),
                    m.data_bytes,
                    m.size
                );
            }
            let (tmp, f) = TempPath::create_beside(target, "the image", 0o666)?;
            f.set_len(m.size).map_err(|e| Error::io(target, "", e))?;
            (f, Some(tmp))
        };
        let wpath = tmp.as_ref().map_or(target, |t| t.path()).to_path_buf();
        let mut pos = 0u64;
        let res = self.stream(name, |off, data| {
            if device && off > pos {
                zero_range(&f, &wpath, pos, off - pos)?;
            }
            f.write_all_at(data, off)
                .map_err(|e| Error::io(&wpath, &format!("write at byte {off}"), e))?;
            pos = off + data.len() as u64;
            Ok(())
        });
        if let Err(e) = res {
            if device {
                fsage_lab::bail!(
                    "{e}; {} now holds a partial image: do not use it",
                    target.display()
                );
            }
            return Err(e);
        }
        if device && m.size > pos {
            zero_range(&f, &wpath, pos, m.size - pos)?;
        }
        f.sync_all().map_err(|e| Error::io(&wpath, "fsync", e))?;
        drop(f);
        if let Some(t) = tmp {
            t.persist(target)?;
        }
        let drive_state = match drive {
            Some(bytes) => {
                // Root's alone, as the device that saved it wrote it.
                fsage_sys::write_atomic_private(&drive_target, &bytes)?;
                Some(drive_target)
            }
            None => {
                if !device {
                    let _ = fs::remove_file(&drive_target);
                }
                None
            }
        };
        Ok(RestoreStats {
            size: m.size,
            data_bytes: m.data_bytes,
            seconds: t0.elapsed().as_secs_f64(),
            drive_state,
        })
    }
}

/// The drive state kept beside an image (`IMAGE.ftl`), if there is one: looked at without
/// following a link (a link there is refused: it could name a file only root may read), read
/// only when it is a regular file, and refused unless it is a drive state (its header and
/// checksum).
pub fn read_drive_state(ftl: &Path) -> Result<Option<Vec<u8>>> {
    let what = "the drive state beside the image";
    let Some(m) = fsage_sys::safe::lstat_own_name(ftl, what)? else {
        return Ok(None);
    };
    if !m.is_file() {
        fsage_lab::bail!("{}: {what} is not a regular file", ftl.display());
    }
    let mut f = fsage_sys::safe::open_read_nofollow(ftl).map_err(|e| Error::io(ftl, "", e))?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)
        .map_err(|e| Error::io(ftl, "", e))?;
    fsage_device::check_drive_state(&bytes).map_err(|e| {
        Error::input(format!(
            "{}: {what} is not one ({}); move it away",
            ftl.display(),
            e.message
        ))
    })?;
    Ok(Some(bytes))
}

/// What `image save` records besides the image, gathered from what the user gave and what lies
/// beside the image: the aging report (given, or `IMAGE.report.json` of `age --fs`), and the
/// profile (given, the report's own copy of its TOML, a built-in of the report's name, or the run's
/// state file `IMAGE.fsage-state`).
#[derive(Debug, Clone, Default)]
pub struct Gathered {
    pub report: Option<serde_json::Value>,
    /// Where the report came from, when it was found beside the image rather than given.
    pub report_found: Option<PathBuf>,
    pub profile: Option<ProfileRecord>,
    /// Where the profile came from, in words ("the aging report", "the state file X", ...).
    pub profile_from: Option<String>,
}

fn record_of(p: &fsage_profile::Profile) -> ProfileRecord {
    ProfileRecord {
        name: p.name.clone(),
        toml: fsage_profile::to_toml(p),
    }
}

/// Gathers what [`Library::save`] records for `image`. `report` is a report file the user named,
/// `profile` a built-in name or profile file.
pub fn gather(image: &Path, report: Option<&Path>, profile: Option<&str>) -> Result<Gathered> {
    let mut g = Gathered::default();
    let beside = fsage_sys::with_suffix(image, ".report.json");
    let report_path = match report {
        Some(p) => Some(p.to_path_buf()),
        None if beside.is_file() => {
            g.report_found = Some(beside.clone());
            Some(beside)
        }
        None => None,
    };
    if let Some(p) = &report_path {
        let text = fs::read_to_string(p).map_err(|e| Error::io(p, "the aging report", e))?;
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            Error::input(format!(
                "{}: the aging report is not JSON: {e}",
                p.display()
            ))
        })?;
        if !is_git_series(&v) && (v.get("profile").is_none() || v.get("seed").is_none()) {
            fsage_lab::bail!(
                "{}: not an fsage age or git-age report (no profile or seed)",
                p.display()
            );
        }
        g.report = Some(v);
    }
    if let Some(n) = profile {
        let p = fsage_profile::resolve(n).map_err(|e| Error::input(e.to_string()))?;
        g.profile = Some(record_of(&p));
        g.profile_from = Some("given".into());
        return Ok(g);
    }
    let Some(r) = &g.report else {
        return Ok(g);
    };
    if is_git_series(r) {
        return Ok(g);
    }
    let name = r["profile"].as_str().unwrap_or_default();
    if let Some(toml) = r["profile_toml"].as_str() {
        let p = fsage_profile::parse(toml, "the aging report's profile")
            .map_err(|e| Error::input(e.to_string()))?;
        g.profile = Some(record_of(&p));
        g.profile_from = Some("the aging report".into());
    } else if let Some(p) = fsage_profile::builtin(name) {
        g.profile = Some(record_of(&p));
        g.profile_from = Some(format!("the built-in profile {name}"));
    } else {
        // An older report without the profile's text: the run's state file has it.
        let state = fsage_sys::with_suffix(image, ".fsage-state");
        // A state file that cannot be read only means no profile is recorded.
        if let Ok(st) = fsage_exec::State::load(&state) {
            if st.record.profile_name == name {
                let p = fsage_profile::parse(&st.record.profile_toml, &state.display().to_string())
                    .map_err(|e| Error::input(e.to_string()))?;
                g.profile = Some(record_of(&p));
                g.profile_from = Some(format!("the state file {}", state.display()));
            }
        }
    }
    Ok(g)
}

#[cfg(test)]
mod gather_tests {
    use super::*;

    fn dir() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    #[test]
    fn a_profile_file_is_taken_from_the_reports_own_copy() {
        let d = dir();
        let img = d.path().join("a.img");
        fs::write(&img, b"").unwrap();
        let mut p = fsage_profile::builtin("dabre").unwrap();
        p.name = "share".into();
        let report = serde_json::json!({
            "profile": "share", "seed": 1, "stop_reason": "max_ops",
            "profile_toml": fsage_profile::to_toml(&p),
        });
        fs::write(
            fsage_sys::with_suffix(&img, ".report.json"),
            report.to_string(),
        )
        .unwrap();
        let g = gather(&img, None, None).unwrap();
        assert!(g.report_found.is_some());
        assert_eq!(g.profile.as_ref().unwrap().name, "share");
        assert_eq!(g.profile_from.as_deref(), Some("the aging report"));
    }

    #[test]
    fn a_git_series_is_recorded_as_one() {
        let d = dir();
        let img = d.path().join("z.img");
        fs::write(&img, b"").unwrap();
        let series = d.path().join("series.json");
        fs::write(
            &series,
            serde_json::json!({
                "format": "fsage-git-series/1", "repo": "/r/zlib.bundle", "mode": "git",
                "fs": "ext4", "pulls_done": 684, "commits_total": 684,
                "first_commit": "aaa", "last_commit": "bbb",
            })
            .to_string(),
        )
        .unwrap();
        let g = gather(&img, Some(&series), None).unwrap();
        assert!(g.profile.is_none());
        let m = Manifest {
            aging: g.report,
            ..test_manifest()
        };
        match m.aging_record() {
            AgingRecord::GitSeries {
                repo, pulls_done, ..
            } => {
                assert_eq!(repo, "/r/zlib.bundle");
                assert_eq!(pulls_done, Some(684));
            }
            r => panic!("{r:?}"),
        }
    }

    #[test]
    fn a_stop_reason_is_told_in_words() {
        let m = Manifest {
            aging: Some(
                serde_json::json!({"profile": "dabre", "seed": 1, "stop_reason": "max_ops"}),
            ),
            ..test_manifest()
        };
        match m.aging_record() {
            AgingRecord::Run { stop, .. } => assert_eq!(stop, "the operation limit reached"),
            r => panic!("{r:?}"),
        }
    }

    fn test_manifest() -> Manifest {
        Manifest {
            format: FORMAT.into(),
            name: "x".into(),
            created_unix: 0,
            fsage_version: "0".into(),
            kernel: "k".into(),
            source: "s".into(),
            fs: None,
            mkfs_opts: None,
            mkfs_command: None,
            size: 0,
            data_bytes: 0,
            data_runs: 0,
            compressed_bytes: 0,
            zstd_level: 3,
            checksums: Checksums {
                image_sha256: String::new(),
                data_sha256: String::new(),
            },
            profile: None,
            seed: None,
            aging: None,
            drive: None,
            note: None,
        }
    }
}

//! fsage's kernel cache: Debian kernel packages fetched with `apt-get download` and unpacked
//! with `dpkg-deb -x` into `$FSAGE_CACHE/kernels/RELEASE` (default `~/.cache/fsage`), never
//! installed on the host. Each is unpacked into a temporary directory, checked, and renamed into
//! place, so the cache holds only whole kernels.

use crate::kernel::{extract_vmlinux, has_pvh_note, Kernel};
use crate::{Error, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// `$FSAGE_CACHE`, else `$XDG_CACHE_HOME/fsage`, else `~/.cache/fsage`.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("FSAGE_CACHE").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("fsage");
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
    PathBuf::from(home).join(".cache/fsage")
}

fn kernels_dir() -> PathBuf {
    cache_dir().join("kernels")
}

/// A kernel in the cache.
#[derive(Debug, Clone)]
pub struct CachedKernel {
    pub kernel: Kernel,
    pub dir: PathBuf,
    /// The Debian package it came from, e.g. `linux-image-6.1.0-56-amd64 6.1.192-2`.
    pub package: String,
}

/// Orders releases by their numbers (6.1.0-9 before 6.1.0-56).
fn version_key(release: &str) -> Vec<u64> {
    release
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|s| s.parse().ok())
        .collect()
}

/// The kernels in the cache, oldest first.
pub fn list_kernels() -> Result<Vec<CachedKernel>> {
    let dir = kernels_dir();
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for ent in rd.flatten() {
        let name = ent.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue; // an unpacking in progress or abandoned
        }
        if let Ok(k) = open_cached(&ent.path(), &name) {
            out.push(k);
        }
    }
    out.sort_by_key(|k| version_key(&k.kernel.release));
    Ok(out)
}

fn open_cached(dir: &Path, release: &str) -> Result<CachedKernel> {
    let vmlinux = dir.join("vmlinux");
    let image = if vmlinux.is_file() {
        vmlinux
    } else {
        dir.join(format!("boot/vmlinuz-{release}"))
    };
    let modules = dir.join("lib/modules").join(release);
    if !image.is_file() || !modules.is_dir() {
        return Err(Error::operation(format!(
            "{}: not a whole kernel (no boot image or modules); remove it and fetch again",
            dir.display()
        )));
    }
    let package = std::fs::read_to_string(dir.join("package"))
        .unwrap_or_default()
        .trim()
        .to_string();
    Ok(CachedKernel {
        kernel: Kernel {
            release: release.to_string(),
            image,
            modules,
        },
        dir: dir.to_path_buf(),
        package,
    })
}

/// Finds a kernel: `None` is the newest cached one; `Some(v)` a cached release equal to `v` or
/// starting with `v-` (`6.1.0-56` finds `6.1.0-56-amd64`).
pub fn resolve_cached(version: Option<&str>) -> Result<Kernel> {
    let all = list_kernels()?;
    let found = match version {
        None => all.last(),
        Some(v) => all
            .iter()
            .rev()
            .find(|k| k.kernel.release == v || k.kernel.release.starts_with(&format!("{v}-"))),
    };
    match (found, version) {
        (Some(k), _) => Ok(k.kernel.clone()),
        (None, None) => Err(Error::input(format!(
            "no kernel in the cache ({}): fetch one first (fsage vm kernel fetch)",
            kernels_dir().display()
        ))),
        (None, Some(v)) => Err(Error::input(format!(
            "kernel {v}: not in the cache ({}; it has {}): fetch it first (fsage vm kernel fetch {v})",
            kernels_dir().display(),
            if all.is_empty() {
                "none".to_string()
            } else {
                all.iter()
                    .map(|k| k.kernel.release.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ))),
    }
}

/// The kernel a command names: a path to a kernel image (with `modules`, its
/// `lib/modules/RELEASE` directory), a cached release, or (`None`) the newest cached one.
pub fn resolve_kernel(spec: Option<&str>, modules: Option<&Path>) -> Result<Kernel> {
    match spec {
        Some(s) if s.contains('/') || Path::new(s).is_file() => {
            let m = modules.ok_or_else(|| {
                Error::input(format!(
                    "{s}: a kernel given by path needs its modules directory (lib/modules/RELEASE)"
                ))
            })?;
            Kernel::from_paths(Path::new(s), m)
        }
        _ if modules.is_some() => Err(Error::input(
            "a modules directory goes with a kernel given by path, not with a cached one",
        )),
        v => resolve_cached(v),
    }
}

fn tool(name: &str) -> Result<PathBuf> {
    fsage_sys::find_cmd(name).ok_or_else(|| {
        Error::input(format!(
            "{name} not found: fetching a Debian kernel needs apt-get and dpkg-deb (a Debian or \
             Ubuntu host); elsewhere give a kernel by path with its modules"
        ))
    })
}

fn output(cmd: &mut Command, what: &str) -> Result<String> {
    let o = cmd
        .output()
        .map_err(|e| Error::operation(format!("{what}: cannot run: {e}")))?;
    if !o.status.success() {
        return Err(Error::operation(format!(
            "{what} failed ({}): {}",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// The Debian `linux-image-6.1.0-NN-amd64` ABIs apt knows, oldest first.
pub fn available_versions() -> Result<Vec<String>> {
    let out = output(
        Command::new(tool("apt-cache")?).args([
            "search",
            "--names-only",
            r"^linux-image-[0-9.]+-[0-9]+-amd64$",
        ]),
        "apt-cache search",
    )?;
    let mut v: Vec<String> = out
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter_map(|p| p.strip_prefix("linux-image-"))
        .filter_map(|p| p.strip_suffix("-amd64"))
        .map(String::from)
        .collect();
    v.sort_by_key(|r| version_key(r));
    v.dedup();
    Ok(v)
}

/// Fetches `linux-image-VERSION-amd64` (default: the newest 6.1.0-NN apt knows) into the cache;
/// returns it as it is there. A kernel already cached is returned as it is.
pub fn fetch_kernel(version: Option<&str>, mut say: impl FnMut(&str)) -> Result<CachedKernel> {
    let apt = tool("apt-get")?;
    let dpkg = tool("dpkg-deb")?;
    let avail = available_versions()?;
    let version = match version {
        Some(v) => v.strip_suffix("-amd64").unwrap_or(v).to_string(),
        None => avail
            .iter()
            .rev()
            .find(|v| v.starts_with("6.1.0-"))
            .cloned()
            .ok_or_else(|| {
                Error::input(
                    "apt knows no linux-image-6.1.0-NN-amd64 package (run apt-get update, or \
                     add Debian 12's archive)",
                )
            })?,
    };
    if !avail.contains(&version) {
        return Err(Error::input(format!(
            "kernel {version}: apt has no package linux-image-{version}-amd64; it has: {}",
            if avail.is_empty() {
                "none (run apt-get update?)".to_string()
            } else {
                avail.join(", ")
            }
        )));
    }
    let release = format!("{version}-amd64");
    let dest = kernels_dir().join(&release);
    if dest.is_dir() {
        if let Ok(k) = open_cached(&dest, &release) {
            say(&format!("{release}: already in {}", dest.display()));
            return Ok(k);
        }
    }
    std::fs::create_dir_all(kernels_dir())
        .map_err(|e| Error::io(&kernels_dir(), "cannot make the cache", e))?;
    let tmp = fsage_sys::TempPath::new(
        kernels_dir().join(format!(".fetch-{release}-{}", std::process::id())),
    );
    let dl = tmp.path().join("download");
    std::fs::create_dir_all(&dl).map_err(|e| Error::io(&dl, "", e))?;
    let pkg = format!("linux-image-{release}");
    say(&format!("downloading {pkg} with apt-get"));
    output(
        Command::new(&apt)
            .arg("download")
            .arg(&pkg)
            .current_dir(&dl),
        &format!("apt-get download {pkg}"),
    )?;
    let deb = std::fs::read_dir(&dl)
        .map_err(|e| Error::io(&dl, "", e))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .ok_or_else(|| Error::operation(format!("apt-get download {pkg}: no .deb came")))?;
    let tree = tmp.path().join("tree");
    say(&format!("unpacking {}", deb.display()));
    output(
        Command::new(&dpkg).arg("-x").arg(&deb).arg(&tree),
        "dpkg-deb -x",
    )?;
    let deb_version = output(
        Command::new(&dpkg).args(["-f"]).arg(&deb).arg("Version"),
        "dpkg-deb -f",
    )?;
    std::fs::write(
        tree.join("package"),
        format!("{pkg} {}\n", deb_version.trim()),
    )
    .map_err(|e| Error::io(&tree, "", e))?;
    let vmlinuz = tree.join(format!("boot/vmlinuz-{release}"));
    if let Some(elf) = extract_vmlinux(&vmlinuz)? {
        if has_pvh_note(&elf) {
            say("extracted the uncompressed kernel (PVH entry): it boots faster under TCG");
            std::fs::write(tree.join("vmlinux"), elf).map_err(|e| Error::io(&tree, "", e))?;
        }
    }
    // Checked before it goes into place: a boot image and a module tree with modules in it.
    let k = open_cached(&tree, &release)?;
    crate::modules::ModuleIndex::open(&k.kernel.modules)?;
    let _ = std::fs::remove_dir_all(&dest); // an incomplete earlier copy
    std::fs::rename(&tree, &dest).map_err(|e| Error::io(&dest, "cannot move into place", e))?;
    drop(tmp);
    open_cached(&dest, &release)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_order_by_number() {
        let mut v = vec!["6.1.0-56", "6.1.0-9", "6.1.0-10"];
        v.sort_by_key(|r| version_key(r));
        assert_eq!(v, ["6.1.0-9", "6.1.0-10", "6.1.0-56"]);
    }
}

//! The guest's initramfs, made by fsage: a static busybox as the shell, an init script, and the
//! modules needed to reach the host's root over 9p and to mount each file system fsage makes.
//! Kept in the cache under the hash of its bytes, so a kernel's initramfs is written once.

use crate::cpio::CpioWriter;
use crate::kernel::Kernel;
use crate::modules::{fs_modules, read_module, ModuleIndex, BOOT};
use crate::{Error, Result};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The file systems whose modules every initramfs carries; a run loads only those it asks for.
pub const FILE_SYSTEMS: &[&str] = &fsage_sys::FsKind::NAMES;

/// The guest's own directories, tmpfs that the init script mounts over the host's (`/tmp`,
/// `/dev/shm`, `/run`): a host file under one of them is not there in the guest.
pub const GUEST_PRIVATE_DIRS: [&str; 3] = ["/tmp", "/dev/shm", "/run"];

/// The guest's own directory that holds `p` (see [`GUEST_PRIVATE_DIRS`]), if one does.
pub fn guest_private(p: &std::path::Path) -> Option<&'static str> {
    GUEST_PRIVATE_DIRS.into_iter().find(|d| p.starts_with(d))
}

/// The guest's /init. It loads the boot modules, mounts the runner's control share and the
/// host's root, loads the modules of the file systems the run names (ctl/fs), runs the run's
/// setup (ctl/setup.sh: tmpfs, shares, disks) and command (ctl/cmd.sh) under the host's root,
/// and leaves the exit code in ctl/status. Failures before the command go to the console.
const INIT: &str = r#"#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
LOADED=" "
load() {
    while read m; do
        case "$LOADED" in *" $m "*) continue ;; esac
        insmod "/modules/$m.ko" || echo "fsage-init: insmod $m failed"
        LOADED="$LOADED$m "
    done < "$1"
}
die() { echo "fsage-init: $*"; poweroff -f; }
load /modules/boot.order
P9="trans=virtio,version=9p2000.L,msize=512000"
mkdir -p /ctl /root
mount -t 9p -o "$P9" fsagectl /ctl || die "cannot mount the control share"
mount -t 9p -o "$P9,ro,cache=loose" hostroot /root || die "cannot mount the host's root"
for fs in $(cat /ctl/fs); do
    [ -f "/modules/$fs.order" ] && load "/modules/$fs.order"
done
mount -t tmpfs tmp /root/tmp || die "cannot mount /tmp"
mount -t devtmpfs dev /root/dev || die "cannot mount /dev"
mkdir -p /root/dev/shm /root/dev/pts
mount -t tmpfs shm /root/dev/shm
mount -t proc proc /root/proc
mount -t sysfs sys /root/sys
# cgroup v2, for a benchmark's page-cache limit (cache_ratio); a kernel without it runs on.
mount -t cgroup2 cgroup2 /root/sys/fs/cgroup 2>/dev/null
mount -t tmpfs run /root/run
mkdir -p /root/run/fsage-vm
mount --bind /ctl /root/run/fsage-vm
. /ctl/setup.sh
echo started > /ctl/started
chroot /root /bin/sh /run/fsage-vm/cmd.sh > /ctl/stdout 2> /ctl/stderr
echo $? > /ctl/status.tmp && mv /ctl/status.tmp /ctl/status
sync
poweroff -f
"#;

/// A static busybox: `FSAGE_BUSYBOX`, else `busybox` on the PATH, refused if it is dynamically
/// linked (the guest has no libraries before the host's root is mounted).
fn busybox() -> Result<(PathBuf, Vec<u8>)> {
    let p = std::env::var_os("FSAGE_BUSYBOX")
        .map(PathBuf::from)
        .or_else(|| fsage_sys::find_cmd("busybox"))
        .ok_or_else(|| {
            Error::input("busybox not found: install busybox-static (scripts/setup does)")
        })?;
    let b = std::fs::read(&p).map_err(|e| Error::io(&p, "cannot read busybox", e))?;
    if !is_static_elf(&b) {
        return Err(Error::input(format!(
            "{}: busybox is dynamically linked; the guest needs a static one (busybox-static)",
            p.display()
        )));
    }
    Ok((p, b))
}

/// An ELF with no PT_INTERP (program interpreter) runs without the dynamic loader.
fn is_static_elf(b: &[u8]) -> bool {
    if b.get(..5) != Some(b"\x7fELF\x02") {
        return false;
    }
    let rd = |o: usize, n: usize| -> usize {
        b.get(o..o + n)
            .map(|x| x.iter().rev().fold(0usize, |a, &y| (a << 8) | y as usize))
            .unwrap_or(0)
    };
    let (phoff, phentsize, phnum) = (rd(0x20, 8), rd(0x36, 2), rd(0x38, 2));
    (0..phnum).all(|i| rd(phoff + i * phentsize, 4) != 3)
}

/// The initramfs for `kernel`, made (or found) in the cache.
pub fn initramfs_for(kernel: &Kernel) -> Result<PathBuf> {
    let idx = ModuleIndex::open(&kernel.modules)?;
    let (_, bb) = busybox()?;
    let mut w = CpioWriter::new(Vec::new());
    let io = |e: std::io::Error| Error::operation(format!("initramfs: {e}"));
    for d in ["bin", "dev", "proc", "sys", "modules", "root", "ctl"] {
        w.dir(d, 0o755).map_err(io)?;
    }
    w.file("bin/busybox", 0o755, &bb).map_err(io)?;
    w.symlink("bin/sh", "busybox").map_err(io)?;
    w.file("init", 0o755, INIT.as_bytes()).map_err(io)?;
    let mut packed = std::collections::HashSet::new();
    let mut lists: Vec<(String, Vec<String>)> = vec![("boot".into(), idx.load_order(BOOT)?)];
    for fs in FILE_SYSTEMS {
        // A kernel without one of them (built in, or left out) still boots for the others.
        if let Ok(o) = idx.load_order(&fs_modules(fs)) {
            lists.push((fs.to_string(), o));
        }
    }
    for (name, order) in &lists {
        for m in order {
            if packed.insert(m.clone()) {
                let path = idx.path(m).expect("load_order names indexed modules");
                w.file(&format!("modules/{m}.ko"), 0o644, &read_module(path)?)
                    .map_err(io)?;
            }
        }
        let mut text = order.join("\n");
        text.push('\n');
        w.file(&format!("modules/{name}.order"), 0o644, text.as_bytes())
            .map_err(io)?;
    }
    let bytes = w.finish().map_err(io)?;
    let hash = Sha256::digest(&bytes);
    let hex: String = hash.iter().take(12).map(|b| format!("{b:02x}")).collect();
    let dir = crate::cache_dir().join("initramfs");
    let path = dir.join(format!("{}-{hex}.cpio", kernel.release));
    if !path.is_file() {
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, "", e))?;
        fsage_sys::write_atomic(&path, &bytes)
            .map_err(|e| Error::operation(format!("{}: {e}", path.display())))?;
    }
    Ok(path)
}

/// The file systems a kernel's initramfs can mount (for `fsage vm info`).
pub fn supported_file_systems(modules: &Path) -> Vec<&'static str> {
    let Ok(idx) = ModuleIndex::open(modules) else {
        return Vec::new();
    };
    FILE_SYSTEMS
        .iter()
        .copied()
        .filter(|fs| idx.load_order(&fs_modules(fs)).is_ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_busybox_is_recognised_as_static_or_not() {
        // A dynamically linked program of the host (the test binary itself) is not static.
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert!(!is_static_elf(&me));
        assert!(!is_static_elf(b"#!/bin/sh\n"));
    }
}

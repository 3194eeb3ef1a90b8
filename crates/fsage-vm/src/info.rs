//! What `fsage vm info` shows: the accelerator a run would get and why, QEMU's version, the
//! kernel cache and what each kernel can mount.

use crate::accel::{choose_accel, AccelChoice, AccelRequest};
use crate::cache::{cache_dir, list_kernels, CachedKernel};
use crate::Result;
use std::path::PathBuf;
use std::process::Command;

pub struct Info {
    pub accel: AccelChoice,
    /// `None` when QEMU is not installed.
    pub qemu: Option<String>,
    pub busybox: Option<PathBuf>,
    pub cache: PathBuf,
    /// Each cached kernel and the file systems its initramfs can mount.
    pub kernels: Vec<(CachedKernel, Vec<&'static str>)>,
}

pub fn info() -> Result<Info> {
    let qemu = fsage_sys::find_cmd("qemu-system-x86_64").map(|q| {
        Command::new(&q)
            .arg("--version")
            .output()
            .ok()
            .and_then(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .next()
                    .map(String::from)
            })
            .unwrap_or_else(|| format!("{} (its version did not print)", q.display()))
    });
    let kernels = list_kernels()?
        .into_iter()
        .map(|k| {
            let fs = crate::initramfs::supported_file_systems(&k.kernel.modules);
            (k, fs)
        })
        .collect();
    Ok(Info {
        accel: choose_accel(AccelRequest::Auto)?,
        qemu,
        busybox: fsage_sys::find_cmd("busybox"),
        cache: cache_dir(),
        kernels,
    })
}

//! Virtual machines for fsage: boot a Debian kernel (fetched with apt into fsage's cache, never
//! installed on the host) or a kernel given by path in QEMU, with the host's root file system
//! shared read-only over 9p, image files as virtio block devices at their host paths, and run one
//! command there; what it may write on the host is [`share`]'s. It exists because the host kernel may lack a file system (f2fs, nilfs2) or be
//! the wrong version for an experiment.
//!
//! Timings taken in a guest are only comparable with timings taken on the same platform: the
//! runner tells the guest its [`fsage_sys::Platform`] through `FSAGE_PLATFORM`, and every result
//! written there records it.

pub mod accel;
pub mod cache;
pub mod cpio;
pub mod dispatch;
pub mod info;
pub mod initramfs;
pub mod kernel;
pub mod modules;
pub mod run;
pub mod share;

pub use accel::{choose_accel, Accel, AccelChoice, AccelRequest};
pub use cache::{cache_dir, fetch_kernel, list_kernels, resolve_kernel, CachedKernel};
pub use dispatch::{check_visible, in_guest, reason_to_dispatch};
pub use info::{info, Info};
pub use initramfs::{guest_private, GUEST_PRIVATE_DIRS};
pub use kernel::Kernel;
pub use run::{
    check_file_systems, check_memory, host_memory, run, Disk, RunOptions, RunOutcome, DEFAULT_CPUS,
    DEFAULT_MEM_MIB,
};
pub use share::{Access, Share};

/// The error type of this crate: fsage's own, with who is to blame.
pub type Error = fsage_sys::Error;
pub type Result<T> = std::result::Result<T, Error>;

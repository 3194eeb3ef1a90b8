//! Helpers of the slow-device tests: skipping where FUSE or loop devices are missing (a failure
//! with `FSAGE_REQUIRE_MOUNT_TESTS=1`), a private registry and backing files in /dev/shm, removed
//! with the test (devices are destroyed by their guards, even when a test fails).

#![allow(dead_code)]

use fsage_slowdev::{Backing, DeviceGuard, DeviceSpec, SlowDevice};
use std::path::{Path, PathBuf};
use tempfile::TempDir;

pub use fsage_testkit::skip;

/// Can this test make slow devices? Says why not (and skips) otherwise.
pub fn can_run(test: &str) -> bool {
    if !fsage_testkit::is_root() {
        skip(test, "needs root");
        return false;
    }
    for p in ["/dev/fuse", "/dev/loop-control"] {
        if !Path::new(p).exists() {
            skip(test, format!("{p} is missing"));
            return false;
        }
    }
    true
}

/// A test's own registry and scratch directory in /dev/shm.
pub struct Lab {
    pub dir: TempDir,
}

impl Lab {
    pub fn new() -> Lab {
        Lab {
            dir: fsage_testkit::shm_tmp("fsage-slowdev-test-"),
        }
    }

    pub fn registry(&self) -> PathBuf {
        self.dir.path().join("registry")
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A spec for a device on a new image `name` of `size` bytes at `latency_ns`.
    pub fn spec(&self, name: &str, size: u64, latency_ns: u64) -> DeviceSpec {
        let mut s = DeviceSpec::new(
            Backing::NewImage {
                path: self.path(name),
                size,
            },
            latency_ns,
        );
        s.registry = self.registry();
        s.daemon_cmd = Some(vec![env!("CARGO_BIN_EXE_fsage-slowdevd").into()]);
        s
    }

    pub fn create(&self, spec: &DeviceSpec) -> DeviceGuard {
        SlowDevice::create(spec)
            .unwrap_or_else(|e| panic!("cannot create a slow device: {e}"))
            .into_guard()
    }
}

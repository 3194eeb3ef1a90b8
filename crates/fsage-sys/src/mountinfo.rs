//! The mount table, parsed in one place: every crate (and the test kit) reads
//! `/proc/self/mountinfo` through [`mounts`].

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// One line of /proc/self/mountinfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountEntry {
    /// st_dev of the mounted file system (major, minor).
    pub dev: (u32, u32),
    pub mount_point: PathBuf,
    pub fstype: String,
    pub source: String,
}

/// Undoes the kernel's octal escapes (`\040` for a space, `\011`, `\012`, `\134`).
pub fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            if let Some(v) = std::str::from_utf8(&b[i + 1..i + 4])
                .ok()
                .and_then(|o| u8::from_str_radix(o, 8).ok())
            {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses the text of a mountinfo file; lines it cannot read are skipped.
pub fn parse(text: &str) -> Vec<MountEntry> {
    let mut v = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let Some(sep) = f.iter().position(|x| *x == "-") else {
            continue;
        };
        if f.len() < 5 || f.len() < sep + 3 {
            continue;
        }
        let dev = f[2]
            .split_once(':')
            .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
            .unwrap_or((0, 0));
        v.push(MountEntry {
            dev,
            mount_point: PathBuf::from(unescape(f[4])),
            fstype: f[sep + 1].to_string(),
            source: unescape(f[sep + 2]),
        });
    }
    v
}

/// The mount table of this process's mount namespace.
pub fn mounts() -> io::Result<Vec<MountEntry>> {
    Ok(parse(&fs::read_to_string("/proc/self/mountinfo")?))
}

/// Is `path` (after resolving symlinks) a mount point? False when the table cannot be read.
pub fn is_mount_point(path: &Path) -> bool {
    let p = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    mounts()
        .map(|m| m.iter().any(|e| e.mount_point == p))
        .unwrap_or(false)
}

/// (major, minor) of a device number.
pub fn dev_parts(dev: u64) -> (u32, u32) {
    (rustix::fs::major(dev), rustix::fs::minor(dev))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_escapes_and_optional_fields() {
        let t =
            "36 35 98:0 / /mnt/a\\040b rw,noatime master:1 shared:2 - ext4 /dev/loop\\0400 rw\n\
                 bad line\n\
                 37 35 0:31 / /proc rw - proc proc rw\n";
        let m = parse(t);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].dev, (98, 0));
        assert_eq!(m[0].mount_point, PathBuf::from("/mnt/a b"));
        assert_eq!(m[0].fstype, "ext4");
        assert_eq!(m[0].source, "/dev/loop 0");
        assert_eq!(m[1].mount_point, PathBuf::from("/proc"));
        assert!(is_mount_point(Path::new("/")));
    }
}

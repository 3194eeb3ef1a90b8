//! One descriptor per file system fsage makes ([`FsDesc`], in [`TABLE`]): everything the crates
//! above ask of a kind (its name and statfs magic, its mkfs and checker with their options, its
//! least size, whether fallocate ages it, the mount options a copy needs, how its free space is
//! measured, the modules a guest loads, its superblock signature). [`FsKind`] is a kind of that
//! table; adding a file system is one entry here and its tests.

use crate::{find_cmd, Error, Remedy};
use std::fmt;

/// What fsage knows of one file system.
#[derive(Debug)]
pub struct FsDesc {
    /// The kernel's type name: the `--fs` value, the experiment spec's `kind`, the JSON value.
    pub name: &'static str,
    /// Its statfs `f_type` once mounted.
    pub magic: u64,
    /// Its superblock signature, by which [`FsKind::probe`] recognises an image: byte strings at
    /// offsets, all of which must be there.
    pub signature: &'static [(u64, &'static [u8])],
    /// The mkfs program.
    pub mkfs: &'static str,
    /// The arguments mkfs always gets first: quiet, and no question (fsage has made its own
    /// safety checks).
    pub mkfs_args: &'static [&'static str],
    /// Options that make the file system whole at mkfs time, given unless the user gives an
    /// option starting like the first of them: ext4 otherwise zeroes its inode tables and journal
    /// in the background after the first mount, writes nobody asked for during aging and during
    /// a tracked benchmark.
    pub mkfs_full_init: &'static [&'static str],
    /// How mkfs is told the size of a file system on a block device.
    pub device_size: DeviceSize,
    /// The offline checker, `None` when the kind's tools ship none.
    pub check: Option<Checker>,
    /// The Debian package with its tools.
    pub package: &'static str,
    /// Smallest size (bytes) its mkfs accepts, for a clear error before running it.
    pub min_size: u64,
    /// What fallocate(2) does on it, which decides the write mode of a run not told one.
    pub fallocate: Fallocate,
    /// Mount options that let a copy of an image be mounted beside the original (which has the
    /// same UUID); given to every working copy, so no result depends on it.
    pub copy_mount_options: &'static str,
    /// How its free space is measured.
    pub free_space: FreeSpaceBy,
    /// Kernel modules a guest loads for it (dependencies are found from the modules).
    pub guest_modules: &'static [&'static str],
    /// Entries mkfs makes in the root (`lost+found`): a fresh file system holding only these
    /// counts as empty.
    pub root_entries: &'static [&'static str],
    /// mkfs reads `/etc/mtab` and stops where it is missing (minimal containers).
    pub mkfs_reads_mtab: bool,
    /// mkfs stats every mount point on the machine and stops at a FUSE mount whose daemon died.
    pub mkfs_stats_all_mounts: bool,
    /// A read-write mount needs a cleaner daemon (nilfs2's `nilfs_cleanerd`, which
    /// `mount.nilfs2` would start and mount(2) does not).
    pub cleaner_daemon: bool,
}

/// How mkfs takes the size of a file system on a device (an image file is made at its size).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceSize {
    /// An option before the device, `flag` then `prefix` and the size in bytes (xfs's
    /// `-d size=N`, btrfs's `-b N`).
    Option {
        flag: &'static str,
        prefix: &'static str,
    },
    /// A count of `unit`-byte blocks after the device, then `suffix` (ext4's `Nk`, f2fs's 512-byte
    /// sectors).
    After { unit: u64, suffix: &'static str },
    /// mkfs formats the whole device and takes no size (nilfs2).
    WholeDevice,
}

/// An offline checker: `tool`, then `args`, then the device; it changes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checker {
    pub tool: &'static str,
    pub args: &'static [&'static str],
}

/// What fallocate(2) does on a file system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallocate {
    /// Allocates blocks placed as written ones would be: aging by fallocate ages it.
    Ages,
    /// Reserves blocks without writing the file system's log: it succeeds, but an image aged by
    /// it is not aged (f2fs: 496 of 502 segments still free after 2,000 operations, against 433
    /// when the same run writes data).
    Unaged,
    /// Not supported (EOPNOTSUPP): files get their blocks by writing data.
    Unsupported,
}

/// How the free space of a mounted file system is measured (`fsage-measure`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FreeSpaceBy {
    /// Free extents from FS_IOC_GETFSMAP.
    Getfsmap,
    /// Free extents from btrfs's extent tree.
    BtrfsTree,
    /// Log-structured: writes go out of place into segments that a cleaner reclaims, so free
    /// space fragments as partly valid segments, not as free extents; read from this source.
    Segments(SegmentSource),
}

/// Where a log-structured file system's segment usage is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentSource {
    /// `/proc/fs/f2fs/DEVICE/segment_info`.
    F2fsProc,
    /// nilfs-tools' `lssu` and `lscp` on the device.
    NilfsTools,
}

const MIB: u64 = 1 << 20;

/// Every file system fsage knows, in the order messages and help list them. f2fs's and nilfs2's
/// least sizes are measured with their mkfs (f2fs-tools 1.15, nilfs-tools 2.2.9) on sparse files
/// with the default options: mkfs.f2fs refuses 51.75 MiB and takes 52 MiB; mkfs.nilfs2 asks for
/// 134221824 bytes (16 segments of 8 MiB and a 4 KiB block), a byte less is refused.
pub const TABLE: &[FsDesc] = &[
    FsDesc {
        name: "ext4",
        magic: 0xEF53,
        // s_magic in the superblock at 1024. ext2/3 share it: fsage mounts them all as ext4.
        signature: &[(0x438, &[0x53, 0xEF])],
        mkfs: "mkfs.ext4",
        mkfs_args: &["-F", "-q"],
        mkfs_full_init: &["-E", "lazy_itable_init=0,lazy_journal_init=0"],
        device_size: DeviceSize::After {
            unit: 1024,
            suffix: "k",
        },
        check: Some(Checker {
            tool: "e2fsck",
            args: &["-f", "-n"],
        }),
        package: "e2fsprogs",
        min_size: MIB,
        fallocate: Fallocate::Ages,
        copy_mount_options: "",
        free_space: FreeSpaceBy::Getfsmap,
        guest_modules: &["ext4", "crc32c_generic"],
        root_entries: &["lost+found"],
        mkfs_reads_mtab: false,
        mkfs_stats_all_mounts: false,
        cleaner_daemon: false,
    },
    FsDesc {
        name: "xfs",
        magic: 0x5846_5342,
        signature: &[(0, b"XFSB")],
        mkfs: "mkfs.xfs",
        mkfs_args: &["-f", "-q"],
        mkfs_full_init: &[],
        device_size: DeviceSize::Option {
            flag: "-d",
            prefix: "size=",
        },
        check: Some(Checker {
            tool: "xfs_repair",
            args: &["-n"],
        }),
        package: "xfsprogs",
        min_size: 300 * MIB,
        fallocate: Fallocate::Ages,
        // XFS refuses to mount a second file system of one UUID; `nouuid` skips only that check.
        copy_mount_options: "nouuid",
        free_space: FreeSpaceBy::Getfsmap,
        guest_modules: &["xfs", "crc32c_generic"],
        root_entries: &[],
        mkfs_reads_mtab: false,
        mkfs_stats_all_mounts: false,
        cleaner_daemon: false,
    },
    FsDesc {
        name: "btrfs",
        magic: 0x9123_683E,
        signature: &[(0x10040, b"_BHRfS_M")],
        mkfs: "mkfs.btrfs",
        mkfs_args: &["-f", "-q"],
        mkfs_full_init: &[],
        device_size: DeviceSize::Option {
            flag: "-b",
            prefix: "",
        },
        check: Some(Checker {
            tool: "btrfs",
            args: &["check", "--readonly"],
        }),
        package: "btrfs-progs",
        min_size: 128 * MIB,
        fallocate: Fallocate::Ages,
        copy_mount_options: "",
        free_space: FreeSpaceBy::BtrfsTree,
        guest_modules: &["btrfs", "crc32c_generic"],
        root_entries: &[],
        mkfs_reads_mtab: false,
        mkfs_stats_all_mounts: true,
        cleaner_daemon: false,
    },
    FsDesc {
        name: "f2fs",
        magic: 0xF2F5_2010,
        // F2FS_SUPER_MAGIC, little-endian, at 1024.
        signature: &[(0x400, &[0x10, 0x20, 0xF5, 0xF2])],
        mkfs: "mkfs.f2fs",
        mkfs_args: &["-f", "-q"],
        mkfs_full_init: &[],
        device_size: DeviceSize::After {
            unit: 512,
            suffix: "",
        },
        // --dry-run: report, write nothing (fsck.f2fs otherwise fixes and rewrites checkpoints).
        check: Some(Checker {
            tool: "fsck.f2fs",
            args: &["--dry-run", "-f"],
        }),
        package: "f2fs-tools",
        min_size: 52 * MIB,
        fallocate: Fallocate::Unaged,
        copy_mount_options: "",
        free_space: FreeSpaceBy::Segments(SegmentSource::F2fsProc),
        guest_modules: &["f2fs", "crc32_generic"],
        root_entries: &[],
        mkfs_reads_mtab: false,
        mkfs_stats_all_mounts: false,
        cleaner_daemon: false,
    },
    FsDesc {
        name: "nilfs2",
        magic: 0x3434,
        // s_rev_level (u32, 2) at 1024 and s_magic 0x3434 at 1024+6. ext4's magic offset (0x438)
        // is the low half of nilfs2's last checkpoint number; the revision keeps an ext4
        // superblock out (its first field, the inode count, is never 2), and the longer
        // signature wins where both match (see FsKind::probe).
        signature: &[(0x400, &[2, 0, 0, 0]), (0x406, &[0x34, 0x34])],
        mkfs: "mkfs.nilfs2",
        mkfs_args: &["-f", "-q"],
        mkfs_full_init: &[],
        device_size: DeviceSize::WholeDevice,
        check: None,
        package: "nilfs-tools",
        min_size: 128 * MIB + 4096,
        fallocate: Fallocate::Unsupported,
        copy_mount_options: "",
        free_space: FreeSpaceBy::Segments(SegmentSource::NilfsTools),
        guest_modules: &["nilfs2"],
        root_entries: &[".nilfs"],
        mkfs_reads_mtab: true,
        mkfs_stats_all_mounts: false,
        cleaner_daemon: true,
    },
];

/// How many kinds [`TABLE`] has.
pub const COUNT: usize = TABLE.len();

/// A file system fsage can make, mount, check and measure: an entry of [`TABLE`]. Compared,
/// printed and serialised by its name.
#[derive(Clone, Copy)]
pub struct FsKind(&'static FsDesc);

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

impl FsKind {
    /// The kinds the code singles out by name (tests, and the reproductions' file systems);
    /// a name missing from the table stops the build.
    pub const EXT4: FsKind = FsKind::named("ext4");
    pub const XFS: FsKind = FsKind::named("xfs");
    pub const BTRFS: FsKind = FsKind::named("btrfs");
    pub const F2FS: FsKind = FsKind::named("f2fs");
    pub const NILFS2: FsKind = FsKind::named("nilfs2");

    /// Every kind fsage knows, whether or not the running kernel has it.
    pub const ALL: [FsKind; COUNT] = {
        let mut all = [FsKind(&TABLE[0]); COUNT];
        let mut i = 0;
        while i < COUNT {
            all[i] = FsKind(&TABLE[i]);
            i += 1;
        }
        all
    };

    /// Their names, in the same order.
    pub const NAMES: [&'static str; COUNT] = {
        let mut names = [""; COUNT];
        let mut i = 0;
        while i < COUNT {
            names[i] = TABLE[i].name;
            i += 1;
        }
        names
    };

    const fn named(name: &str) -> FsKind {
        let mut i = 0;
        while i < COUNT {
            if same(TABLE[i].name, name) {
                return FsKind(&TABLE[i]);
            }
            i += 1;
        }
        panic!("no such file system in the table")
    }

    /// The kind named `name`, if fsage knows it.
    pub fn by_name(name: &str) -> Option<FsKind> {
        FsKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The kind whose statfs `f_type` is `magic`, if fsage knows it.
    pub fn by_magic(magic: u64) -> Option<FsKind> {
        FsKind::ALL.into_iter().find(|k| k.magic() == magic)
    }

    /// The kind named `s`; `Err` (bad input) listing the kinds fsage knows.
    pub fn parse(s: &str) -> Result<FsKind, Error> {
        FsKind::by_name(s).ok_or_else(|| {
            Error::input(format!(
                "file system {s:?}: fsage knows {}",
                names_listed("and")
            ))
        })
    }

    /// The kind whose superblock signature `read_at(offset, len)` finds; where two match (a
    /// nilfs2 whose checkpoint number has ext4's magic bytes), the longer signature wins.
    pub fn probe(mut read_at: impl FnMut(u64, usize) -> Option<Vec<u8>>) -> Option<FsKind> {
        let mut found: Option<(usize, FsKind)> = None;
        for k in FsKind::ALL {
            let sig = k.0.signature;
            if sig
                .iter()
                .all(|(off, bytes)| read_at(*off, bytes.len()).is_some_and(|b| b == *bytes))
            {
                let len = sig.iter().map(|(_, b)| b.len()).sum();
                if found.is_none_or(|(l, _)| len > l) {
                    found = Some((len, k));
                }
            }
        }
        found.map(|(_, k)| k)
    }

    /// Its descriptor.
    pub fn desc(self) -> &'static FsDesc {
        self.0
    }

    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// Its statfs `f_type` once mounted.
    pub const fn magic(self) -> u64 {
        self.0.magic
    }

    /// Its statfs `f_type` once mounted (the name the lab has always used).
    pub fn statfs_magic(self) -> u64 {
        self.0.magic
    }

    /// The mkfs program.
    pub fn mkfs(self) -> &'static str {
        self.0.mkfs
    }

    /// Smallest size its mkfs accepts.
    pub fn min_size(self) -> u64 {
        self.0.min_size
    }

    /// The offline checker's program, `None` where the kind has none (nilfs2).
    pub fn checker(self) -> Option<&'static str> {
        self.0.check.map(|c| c.tool)
    }

    /// The tools the kind needs: mkfs and the checker, where there is one.
    pub fn tools(self) -> Vec<&'static str> {
        std::iter::once(self.mkfs()).chain(self.checker()).collect()
    }

    /// The Debian package with its tools.
    pub fn package(self) -> &'static str {
        self.0.package
    }

    /// Log-structured (f2fs, nilfs2): its free space is measured by segment, not by extent.
    pub fn is_log_structured(self) -> bool {
        matches!(self.0.free_space, FreeSpaceBy::Segments(_))
    }

    /// How its free space is measured.
    pub fn free_space(self) -> FreeSpaceBy {
        self.0.free_space
    }

    /// Whether fallocate(2) allocates space on it (nilfs2 returns EOPNOTSUPP).
    pub fn supports_fallocate(self) -> bool {
        self.0.fallocate != Fallocate::Unsupported
    }

    /// Whether a run not told a write mode ages it by fallocate (else by writing data).
    pub fn ages_by_fallocate(self) -> bool {
        self.0.fallocate == Fallocate::Ages
    }

    /// Mount options of a working copy of an image (xfs's `nouuid`); empty for most kinds.
    pub fn copy_mount_options(self) -> &'static str {
        self.0.copy_mount_options
    }

    /// Kernel modules a guest loads for it.
    pub fn guest_modules(self) -> &'static [&'static str] {
        self.0.guest_modules
    }

    /// `Err` naming the missing tool and its package.
    pub fn check_tools(self) -> Result<(), Error> {
        for t in self.tools() {
            if find_cmd(t).is_none() {
                let pkg = self.package();
                return Err(Error::input(format!(
                    "{t} not found: install {pkg} (apt-get install {pkg})"
                )));
            }
        }
        Ok(())
    }

    /// `Err` (with [`Remedy::Vm`]) when the running kernel cannot mount this kind: it is neither
    /// in `/proc/filesystems` nor a module the kernel could load on mount. mkfs, fsck and the
    /// image library work without it; mounting does not.
    pub fn check_kernel(self) -> Result<(), Error> {
        let listed = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
        let release = crate::kernel_release();
        let modules = std::fs::read_to_string(format!("/lib/modules/{release}/modules.dep"))
            .unwrap_or_default();
        if kernel_has(self.name(), &listed, &modules) {
            return Ok(());
        }
        Err(Error::input(format!(
            "{self}: the running kernel ({release}) has no {self} (not in /proc/filesystems, and \
             no {self} module in /lib/modules/{release}); a kernel that has it is needed, e.g. in \
             fsage's VM runner"
        ))
        .with_remedy(Remedy::Vm))
    }
}

/// The kinds' names for a message: "ext4, xfs, btrfs, f2fs and nilfs2" (`conjunction` "and").
pub fn names_listed(conjunction: &str) -> String {
    match FsKind::NAMES.split_last() {
        Some((last, rest)) if !rest.is_empty() => {
            format!("{} {conjunction} {last}", rest.join(", "))
        }
        Some((last, _)) => last.to_string(),
        None => String::new(),
    }
}

/// Whether a kernel can mount `fstype`: `/proc/filesystems` (`listed`: lines of an optional
/// `nodev` and a name) names it, or `modules.dep` (`modules`: `kernel/fs/f2fs/f2fs.ko.xz: deps`)
/// has its module, which the kernel loads on the first mount.
pub fn kernel_has(fstype: &str, listed: &str, modules: &str) -> bool {
    let in_list = listed
        .lines()
        .any(|l| l.split_whitespace().last() == Some(fstype));
    let as_module = modules.lines().any(|l| {
        let path = l.split(':').next().unwrap_or("");
        let file = path.rsplit('/').next().unwrap_or("");
        file.split_once(".ko")
            .is_some_and(|(stem, _)| stem == fstype)
    });
    in_list || as_module
}

impl PartialEq for FsKind {
    fn eq(&self, other: &FsKind) -> bool {
        self.name() == other.name()
    }
}

impl Eq for FsKind {}

impl fmt::Display for FsKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Debug for FsKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FsKind({})", self.name())
    }
}

impl serde::Serialize for FsKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for FsKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<FsKind, D::Error> {
        let name = String::deserialize(d)?;
        FsKind::by_name(&name)
            .ok_or_else(|| serde::de::Error::unknown_variant(&name, &FsKind::NAMES))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_found_by_its_name_magic_and_signature_and_an_unknown_one_lists_them() {
        let mut magics = std::collections::HashSet::new();
        for k in FsKind::ALL {
            assert_eq!(FsKind::parse(k.name()).unwrap(), k);
            assert_eq!(FsKind::by_magic(k.magic()), Some(k));
            assert!(magics.insert(k.magic()), "{k}: magic shared");
            assert_eq!(crate::fs_type_name(k.magic()), k.name());
            assert_eq!(k.tools()[0], k.mkfs());
            assert!(k.mkfs().starts_with("mkfs."), "{k}");
            assert!(k.guest_modules().contains(&k.name()), "{k}");
            assert!(k.min_size() > 0, "{k}");
            // A superblock holding only this kind's signature is this kind.
            let sig = k.desc().signature;
            let found = FsKind::probe(|off, len| {
                let mut b = vec![0u8; len];
                for (o, bytes) in sig {
                    for (i, x) in bytes.iter().enumerate() {
                        let at = o + i as u64;
                        if at >= off && at < off + len as u64 {
                            b[(at - off) as usize] = *x;
                        }
                    }
                }
                Some(b)
            });
            assert_eq!(found, Some(k), "{k}");
        }
        let e = FsKind::parse("zfs").unwrap_err();
        assert_eq!(e.blame, crate::Blame::Input);
        assert_eq!(
            e.message,
            "file system \"zfs\": fsage knows ext4, xfs, btrfs, f2fs and nilfs2"
        );
        assert_eq!(FsKind::probe(|_, len| Some(vec![0; len])), None);
    }

    #[test]
    fn the_named_kinds_and_their_rules() {
        assert_eq!(FsKind::NAMES, ["ext4", "xfs", "btrfs", "f2fs", "nilfs2"]);
        for (k, n) in [
            (FsKind::EXT4, "ext4"),
            (FsKind::XFS, "xfs"),
            (FsKind::BTRFS, "btrfs"),
            (FsKind::F2FS, "f2fs"),
            (FsKind::NILFS2, "nilfs2"),
        ] {
            assert_eq!(k.name(), n);
        }
        assert_eq!(FsKind::NILFS2.checker(), None);
        assert_eq!(FsKind::NILFS2.tools(), ["mkfs.nilfs2"]);
        assert_eq!(FsKind::F2FS.tools(), ["mkfs.f2fs", "fsck.f2fs"]);
        assert!(!FsKind::NILFS2.supports_fallocate());
        assert!(FsKind::F2FS.supports_fallocate() && !FsKind::F2FS.ages_by_fallocate());
        assert!(FsKind::EXT4.ages_by_fallocate() && FsKind::BTRFS.ages_by_fallocate());
        assert!(FsKind::F2FS.is_log_structured() && !FsKind::EXT4.is_log_structured());
        assert_eq!(FsKind::XFS.copy_mount_options(), "nouuid");
        assert_eq!(FsKind::EXT4.copy_mount_options(), "");
        assert_eq!(FsKind::BTRFS.free_space(), FreeSpaceBy::BtrfsTree);
        assert_eq!(format!("{:?}", FsKind::XFS), "FsKind(xfs)");
    }

    #[test]
    fn nilfs2_with_ext4_magic_bytes_is_nilfs2() {
        // A nilfs2 at its checkpoint 0xEF53 has ext4's magic bytes at 0x438.
        let mut sb = vec![0u8; 0x500];
        sb[0x400..0x404].copy_from_slice(&[2, 0, 0, 0]);
        sb[0x406..0x408].copy_from_slice(&[0x34, 0x34]);
        sb[0x438..0x43a].copy_from_slice(&[0x53, 0xEF]);
        let read =
            |off: u64, len: usize| sb.get(off as usize..off as usize + len).map(<[u8]>::to_vec);
        assert_eq!(FsKind::probe(read), Some(FsKind::NILFS2));
        sb[0x400] = 0;
        let read =
            |off: u64, len: usize| sb.get(off as usize..off as usize + len).map(<[u8]>::to_vec);
        assert_eq!(FsKind::probe(read), Some(FsKind::EXT4));
    }

    #[test]
    fn the_kernel_has_a_type_it_lists_or_can_load() {
        let listed = "nodev\tsysfs\nnodev\ttmpfs\n\text4\n\txfs\nnodev\tfuse\n";
        let modules = "kernel/fs/f2fs/f2fs.ko.xz: kernel/lib/lz4.ko.xz\n\
                       kernel/fs/nilfs2/nilfs2.ko:\n\
                       kernel/fs/f2fsx/f2fsx.ko.zst:\n";
        assert!(kernel_has("ext4", listed, ""));
        assert!(kernel_has("xfs", listed, ""));
        assert!(!kernel_has("f2fs", listed, ""));
        assert!(!kernel_has("nilfs2", listed, ""));
        // "nodev" is a flag, not a type.
        assert!(!kernel_has("nodev", listed, ""));
        assert!(kernel_has("f2fs", listed, modules));
        assert!(kernel_has("nilfs2", "", modules));
        assert!(!kernel_has("btrfs", listed, modules));
        assert!(!kernel_has("f2f", "", modules));
    }

    #[test]
    fn a_kind_this_kernel_lacks_is_refused_with_the_vm_remedy() {
        let listed = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
        for k in FsKind::ALL {
            if let Err(e) = k.check_kernel() {
                assert!(!kernel_has(k.name(), &listed, ""), "{k}: {e}");
                assert_eq!(e.remedy, Some(Remedy::Vm), "{e}");
                assert_eq!(e.blame, crate::Blame::Input, "{e}");
                assert!(
                    e.message.starts_with(&format!("{k}: the running kernel")),
                    "{e}"
                );
                assert!(e.message.contains("VM"), "{e}");
            }
        }
    }
}

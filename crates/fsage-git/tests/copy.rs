//! The clean instance's copy (`fsage_git::copy::copy_tree`): it keeps what `cp -a` kept (bits,
//! owners, times, symbolic links, hard links), never follows a link, and two copies of one tree
//! onto two fresh file systems get the same layout (every file's FIEMAP extents equal).

use fsage_git::copy::{copy_tree, CopySync};
use fsage_testkit::{skip, ImageFs};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

const T_FILE: (i64, i64) = (1_000_000_000, 123_456_789);
const T_DIR: (i64, i64) = (1_100_000_000, 987_654_321);

fn set_times(p: &Path, (s, ns): (i64, i64), atime_s: i64) {
    let ts = rustix::fs::Timestamps {
        last_access: rustix::fs::Timespec {
            tv_sec: atime_s,
            tv_nsec: 5,
        },
        last_modification: rustix::fs::Timespec {
            tv_sec: s,
            tv_nsec: ns as _,
        },
    };
    rustix::fs::utimensat(
        rustix::fs::CWD,
        p,
        &ts,
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
    )
    .unwrap();
}

/// A small tree with every kind of entry the copy takes.
fn small_tree(root: &Path) {
    let t = root.join("tree");
    fs::create_dir_all(t.join("sub/deeper")).unwrap();
    fs::write(t.join("a"), b"hello").unwrap();
    fs::write(t.join("sub/run"), vec![7u8; 70_000]).unwrap();
    fs::write(t.join("empty"), b"").unwrap();
    fs::hard_link(t.join("a"), t.join("sub/deeper/a-again")).unwrap();
    std::os::unix::fs::symlink("../a", t.join("sub/to-a")).unwrap();
    // A link out of the tree: copied as a link, never followed.
    std::os::unix::fs::symlink("/etc/passwd", t.join("out")).unwrap();
    fs::set_permissions(t.join("a"), fs::Permissions::from_mode(0o640)).unwrap();
    fs::set_permissions(t.join("sub/run"), fs::Permissions::from_mode(0o4755)).unwrap();
    fs::set_permissions(t.join("sub/deeper"), fs::Permissions::from_mode(0o1750)).unwrap();
    if fsage_testkit::is_root() {
        rustix::fs::chown(
            t.join("sub/run"),
            Some(rustix::fs::Uid::from_raw(1234)),
            Some(rustix::fs::Gid::from_raw(5678)),
        )
        .unwrap();
        // chown clears setuid: set the bits again.
        fs::set_permissions(t.join("sub/run"), fs::Permissions::from_mode(0o4755)).unwrap();
        rustix::fs::chownat(
            rustix::fs::CWD,
            t.join("out"),
            Some(rustix::fs::Uid::from_raw(4321)),
            None,
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        )
        .unwrap();
    }
    for f in ["a", "sub/run", "empty", "sub/to-a", "out"] {
        set_times(&t.join(f), T_FILE, 1_200_000_000);
    }
    for d in ["sub/deeper", "sub", ""] {
        set_times(&t.join(d), T_DIR, 1_200_000_000);
    }
}

#[test]
fn the_copy_keeps_bits_owners_times_and_links() {
    for sync in [CopySync::File, CopySync::Dir] {
        let src = fsage_testkit::tmp();
        let dst = fsage_testkit::tmp();
        small_tree(src.path());
        let r = copy_tree(&src.path().join("tree"), dst.path(), sync).unwrap();
        assert_eq!(
            (r.dirs, r.files, r.symlinks, r.hard_links, r.bytes),
            (3, 3, 2, 1, 70_005),
            "{r:?}"
        );
        let t = dst.path().join("tree");
        let mode = |p: &str| fs::symlink_metadata(t.join(p)).unwrap().mode() & 0o7777;
        assert_eq!(mode("a"), 0o640);
        assert_eq!(mode("sub/run"), 0o4755);
        assert_eq!(mode("sub/deeper"), 0o1750);
        let a = fs::metadata(t.join("a")).unwrap();
        let again = fs::metadata(t.join("sub/deeper/a-again")).unwrap();
        assert_eq!((a.ino(), a.nlink()), (again.ino(), 2));
        for f in ["a", "sub/run", "empty", "sub/to-a", "out"] {
            let m = fs::symlink_metadata(t.join(f)).unwrap();
            assert_eq!((m.mtime(), m.mtime_nsec()), T_FILE, "{f}");
            assert_eq!((m.atime(), m.atime_nsec()), (1_200_000_000, 5), "{f}");
        }
        for d in ["sub/deeper", "sub", ""] {
            let m = fs::symlink_metadata(t.join(d)).unwrap();
            assert_eq!((m.mtime(), m.mtime_nsec()), T_DIR, "{d:?}");
        }
        // Read last: reading sets the access time.
        assert_eq!(
            fs::read_link(t.join("sub/to-a")).unwrap(),
            Path::new("../a")
        );
        assert_eq!(
            fs::read_link(t.join("out")).unwrap(),
            Path::new("/etc/passwd")
        );
        assert_eq!(fs::read(t.join("a")).unwrap(), b"hello");
        assert_eq!(fs::read(t.join("sub/run")).unwrap(), vec![7u8; 70_000]);
        if fsage_testkit::is_root() {
            let m = fs::symlink_metadata(t.join("sub/run")).unwrap();
            assert_eq!((m.uid(), m.gid()), (1234, 5678));
            assert_eq!(fs::symlink_metadata(t.join("out")).unwrap().uid(), 4321);
        }
    }
}

#[test]
fn the_copy_refuses_a_fifo_and_names_it() {
    let src = fsage_testkit::tmp();
    let dst = fsage_testkit::tmp();
    fs::create_dir(src.path().join("tree")).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        src.path().join("tree/pipe"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        0,
    )
    .unwrap();
    let e = copy_tree(&src.path().join("tree"), dst.path(), CopySync::File).unwrap_err();
    assert!(e.message.contains("tree/pipe"), "{e}");
}

#[test]
fn the_copy_does_not_follow_a_linked_source() {
    let src = fsage_testkit::tmp();
    let dst = fsage_testkit::tmp();
    small_tree(src.path());
    std::os::unix::fs::symlink(src.path().join("tree"), src.path().join("link")).unwrap();
    let e = copy_tree(&src.path().join("link"), dst.path(), CopySync::File).unwrap_err();
    assert!(e.message.contains("link"), "{e}");
    assert!(!dst.path().join("link").exists());
}

/// A tree shaped like a small repository: 24 directories of 40 files, most of them small, a few
/// of hundreds of KiB (sizes from a fixed sequence, so the tree is the same in every run).
fn repo_like_tree(root: &Path) {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for d in 0..24 {
        let dir = root.join(format!("tree/d{:02}/e{}", d, d % 3));
        fs::create_dir_all(&dir).unwrap();
        for f in 0..40 {
            let r = next();
            let size = if r % 17 == 0 {
                100_000 + (r >> 8) % 600_000
            } else {
                200 + (r >> 8) % 12_000
            };
            let byte = (r >> 40) as u8;
            fs::write(dir.join(format!("f{f:03}")), vec![byte; size as usize]).unwrap();
        }
    }
}

/// Every regular file's physical extents (FIEMAP) under `root`, by relative path.
fn layout(root: &Path) -> BTreeMap<String, Vec<(u64, u64, u64)>> {
    fn walk(root: &Path, rel: &str, out: &mut BTreeMap<String, Vec<(u64, u64, u64)>>) {
        let mut fm = fsage_measure::sys::Fiemap::default();
        for e in fs::read_dir(root.join(rel)).unwrap() {
            let e = e.unwrap();
            let p = format!("{rel}/{}", e.file_name().to_string_lossy());
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                walk(root, &p, out);
            } else if ft.is_file() {
                let f = fs::File::open(e.path()).unwrap();
                let mut v = Vec::new();
                fm.extents(&f, true, |x| v.push((x.logical, x.physical, x.length)))
                    .unwrap();
                out.insert(p, v);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, "tree", &mut out);
    out
}

/// Two copies of the repository-like tree onto two fresh file systems (the clean instance's mkfs
/// options) lay out alike; with `writeback`, a thread calls `syncfs` on the second one in a loop
/// while it is copied, as the flusher or another process's `sync` may at any moment.
fn two_copies_lay_out_alike(fstype: &str, sync: CopySync) {
    copies_lay_out_alike(fstype, sync, false)
}

/// mkfs arguments of a test image made as git-age's clean instance is (quiet, forced).
fn clean_mkfs_args(fstype: &str) -> Vec<String> {
    let kind = fsage_lab::FsKind::parse(fstype).unwrap();
    let mut args: Vec<String> = match fstype {
        "ext4" => vec!["-q".into(), "-F".into()],
        _ => vec!["-q".into(), "-f".into()],
    };
    args.extend(fsage_git::measure::clean_mkfs_opts(kind));
    args
}

fn copies_lay_out_alike(fstype: &str, sync: CopySync, writeback: bool) {
    let test = format!("two_copies_lay_out_alike({fstype}, {sync:?}, writeback {writeback})");
    let args = clean_mkfs_args(fstype);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let src = fsage_testkit::shm_tmp("fsage-test-copy-src-");
    repo_like_tree(src.path());
    let mut layouts = Vec::new();
    for i in 0..2 {
        let fs = match ImageFs::make(fstype, 512 << 20, &args) {
            Ok(f) => f,
            Err(reason) => return skip(&test, reason),
        };
        let stop = std::sync::atomic::AtomicBool::new(false);
        let r = std::thread::scope(|s| {
            if writeback && i == 1 {
                let dir = fs::File::open(fs.path()).unwrap();
                let stop = &stop;
                s.spawn(move || {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        rustix::fs::syncfs(&dir).unwrap();
                    }
                });
            }
            let r = copy_tree(&src.path().join("tree"), fs.path(), sync);
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            r.unwrap()
        });
        assert_eq!(r.files, 24 * 40);
        layouts.push(layout(fs.path()));
    }
    assert_eq!(layouts[0].len(), 24 * 40);
    let differ: Vec<&String> = layouts[0]
        .iter()
        .filter(|(p, v)| layouts[1].get(*p) != Some(v))
        .map(|(p, _)| p)
        .collect();
    assert!(
        differ.is_empty(),
        "{test}: {} of {} files laid out differently, e.g. {:?}: {:?} against {:?}",
        differ.len(),
        layouts[0].len(),
        differ[0],
        layouts[0][differ[0]],
        layouts[1].get(differ[0])
    );
}

#[test]
fn two_copies_lay_out_alike_on_ext4() {
    two_copies_lay_out_alike("ext4", CopySync::File);
}

#[test]
#[ignore = "not yet deterministic: 1 of 14 runs on a loaded machine laid half the files elsewhere"]
fn two_copies_lay_out_alike_on_xfs() {
    two_copies_lay_out_alike("xfs", CopySync::File);
}

#[test]
fn two_copies_lay_out_alike_on_btrfs() {
    two_copies_lay_out_alike("btrfs", CopySync::File);
}

/// Where btrfs put its tree blocks (`btrfs inspect-internal dump-tree` of the unmounted image):
/// every node's and leaf's address and owner, sorted.
fn tree_blocks(image: &Path) -> Result<Vec<(u64, String)>, String> {
    let out = std::process::Command::new("btrfs")
        .args(["inspect-internal", "dump-tree"])
        .arg(image)
        .output()
        .map_err(|e| format!("btrfs inspect-internal dump-tree: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "btrfs inspect-internal dump-tree {}: {}",
            image.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut blocks: Vec<(u64, String)> = text
        .lines()
        .filter(|l| l.starts_with("node ") || l.starts_with("leaf "))
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let at = w.get(1)?.parse().ok()?;
            let owner = w.iter().position(|x| *x == "owner")?;
            Some((at, w.get(owner + 1)?.to_string()))
        })
        .collect();
    blocks.sort();
    Ok(blocks)
}

/// Not only the files: btrfs's tree blocks land at the same addresses in two copies. Its
/// delayed inode and directory items, once over 128, are inserted by a worker beside the copy
/// wherever the scheduler lets it in; the copy commits every `BTRFS_COMMIT_EVERY` files so that
/// they never are.
#[test]
fn two_copies_put_btrfs_tree_blocks_alike() {
    let test = "two_copies_put_btrfs_tree_blocks_alike";
    if let Err(e) = fsage_testkit::need_root_and(&["btrfs", "mkfs.btrfs"]) {
        return skip(test, e);
    }
    let args = clean_mkfs_args("btrfs");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let src = fsage_testkit::shm_tmp("fsage-test-copy-src-");
    repo_like_tree(src.path());
    let mut runs = Vec::new();
    for _ in 0..2 {
        let mut fs = match ImageFs::make("btrfs", 512 << 20, &args) {
            Ok(f) => f,
            Err(reason) => return skip(test, reason),
        };
        // Beside two busy threads, as on a loaded machine (without the commits, 1 copy in 3
        // put tree blocks elsewhere even on a quiet one).
        let stop = std::sync::atomic::AtomicBool::new(false);
        let r = std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                });
            }
            let r = copy_tree(&src.path().join("tree"), fs.path(), CopySync::File);
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            r
        })
        .unwrap();
        assert_eq!(r.files, 24 * 40);
        let names = r.files + r.dirs;
        assert!(r.syncs >= r.files + names / fsage_git::copy::BTRFS_COMMIT_EVERY);
        fs.mount.unmount().unwrap();
        runs.push(tree_blocks(fs.image.path()).unwrap());
    }
    assert!(runs[0].len() > 20, "{:?}", runs[0]);
    let only: Vec<_> = runs[0].iter().filter(|b| !runs[1].contains(b)).collect();
    assert!(
        only.is_empty() && runs[0].len() == runs[1].len(),
        "{} of {} tree blocks elsewhere in the second copy ({} blocks), e.g. {:?}",
        only.len(),
        runs[0].len(),
        runs[1].len(),
        only.first()
    );
}

/// btrfs allocates what is dirty when writeback reaches a file: a writeback in the middle of a
/// file's write split it (before the copy preallocated such files), and the rest of the tree moved.
#[test]
fn a_writeback_during_the_copy_moves_nothing_on_btrfs() {
    copies_lay_out_alike("btrfs", CopySync::File, true);
}

/// What each way of syncing costs on a real tree: `FSAGE_COPY_TREE=DIR cargo test -p fsage-git
/// --release --test copy -- --ignored --nocapture copy_time` copies DIR twice onto each of two
/// fresh btrfs file systems, per-file and per-directory sync, and prints the times and whether
/// the two copies' layouts are equal.
#[test]
#[ignore = "a measurement: needs FSAGE_COPY_TREE"]
fn copy_time() {
    let Some(tree) = std::env::var_os("FSAGE_COPY_TREE") else {
        return skip("copy_time", "FSAGE_COPY_TREE is not set");
    };
    let fstype = std::env::var("FSAGE_COPY_FS").unwrap_or_else(|_| "btrfs".into());
    let tree = Path::new(&tree);
    for sync in [CopySync::File, CopySync::Dir] {
        let mut layouts = Vec::new();
        for _ in 0..2 {
            let fs = ImageFs::make(&fstype, 4 << 30, &["-q", "-f"]).unwrap();
            let t = std::time::Instant::now();
            let r = copy_tree(tree, fs.path(), sync).unwrap();
            let secs = t.elapsed().as_secs_f64();
            let name = tree.file_name().unwrap().to_string_lossy().into_owned();
            let mut l = BTreeMap::new();
            let mut fm = fsage_measure::sys::Fiemap::default();
            let mut stack = vec![fs.path().join(&name)];
            while let Some(d) = stack.pop() {
                for e in fs::read_dir(&d).unwrap() {
                    let e = e.unwrap();
                    let ft = e.file_type().unwrap();
                    if ft.is_dir() {
                        stack.push(e.path());
                    } else if ft.is_file() {
                        let f = fs::File::open(e.path()).unwrap();
                        let mut v = Vec::new();
                        fm.extents(&f, true, |x| v.push((x.logical, x.physical, x.length)))
                            .unwrap();
                        let rel = e.path().strip_prefix(fs.path()).unwrap().to_path_buf();
                        l.insert(rel, v);
                    }
                }
            }
            println!(
                "{fstype} {sync:?}: {secs:.2} s, {} files, {} MiB, {} syncs",
                r.files,
                r.bytes >> 20,
                r.syncs
            );
            layouts.push(l);
        }
        let differ = layouts[0]
            .iter()
            .filter(|(p, v)| layouts[1].get(*p) != Some(v))
            .count();
        println!(
            "{fstype} {sync:?}: {differ} of {} files laid out differently",
            layouts[0].len()
        );
    }
}

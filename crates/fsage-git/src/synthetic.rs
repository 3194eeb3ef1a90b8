//! A small synthetic repository for tests and demonstrations: commits that add, modify, rename
//! and delete files and directories, turn a file into a directory and back, and grow a binary
//! file. Deterministic (fixed dates and contents), so its commit ids are the same everywhere.

use crate::git;
use crate::{Error, Result};
use std::path::Path;

fn write(root: &Path, rel: &str, content: &[u8]) -> Result<()> {
    let p = root.join(rel);
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).map_err(|e| crate::Error::io(d, "mkdir", e))?;
    }
    std::fs::write(&p, content).map_err(|e| crate::Error::io(&p, "write", e))
}

fn text(seed: u64, lines: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut s = String::new();
    for i in 0..lines {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.push_str(&format!("line {i} of {seed}: {x:016x}\n"));
    }
    s.into_bytes()
}

fn git_at(dir: &Path, n: u64, args: &[&str]) -> Result<()> {
    let date = format!("{} +0000", 1_500_000_000 + n * 3600);
    let out = git::command(dir, args)
        .env("GIT_AUTHOR_DATE", &date)
        .env("GIT_COMMITTER_DATE", &date)
        .env("GIT_AUTHOR_NAME", "fsage")
        .env("GIT_AUTHOR_EMAIL", "fsage@localhost")
        .env("GIT_COMMITTER_NAME", "fsage")
        .env("GIT_COMMITTER_EMAIL", "fsage@localhost")
        .output()
        .map_err(|e| Error::input(format!("cannot run git: {e}")))?;
    if !out.status.success() {
        return Err(Error::operation(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(())
}

/// Makes a repository of `commits` (at least 10) commits on branch `master` in the empty or
/// missing directory `dir`.
pub fn make_repo(dir: &Path, commits: u64) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| crate::Error::io(dir, "mkdir", e))?;
    git::run(dir, &["init", "-q", "-b", "master", "."])?;
    let commit = |n: u64| -> Result<()> {
        git_at(dir, n, &["add", "-A", "."])?;
        git_at(dir, n, &["commit", "-q", "-m", &format!("commit {n}")])
    };
    let rm = |rel: &str| -> Result<()> {
        let p = dir.join(rel);
        if p.is_dir() {
            std::fs::remove_dir_all(&p).map_err(|e| crate::Error::io(&p, "remove", e))
        } else {
            std::fs::remove_file(&p).map_err(|e| crate::Error::io(&p, "remove", e))
        }
    };
    let mv = |a: &str, b: &str| -> Result<()> {
        let (pa, pb) = (dir.join(a), dir.join(b));
        if let Some(d) = pb.parent() {
            std::fs::create_dir_all(d).map_err(|e| crate::Error::io(d, "mkdir", e))?;
        }
        std::fs::rename(&pa, &pb).map_err(|e| crate::Error::io(&pa, "rename", e))
    };
    // 1: a first tree.
    write(dir, "README", b"synthetic repository\n")?;
    write(dir, "src/a.c", &text(1, 40))?;
    write(dir, "src/b.c", &text(2, 60))?;
    write(dir, "docs/x/y.txt", &text(3, 10))?;
    commit(1)?;
    // 2: modify.
    write(dir, "src/a.c", &text(4, 45))?;
    commit(2)?;
    // 3: a new directory.
    write(dir, "src/lib/c.c", &text(5, 80))?;
    write(dir, "src/lib/d.h", &text(6, 12))?;
    commit(3)?;
    // 4: rename a file.
    mv("src/b.c", "src/bb.c")?;
    commit(4)?;
    // 5: delete the only file of a directory chain.
    rm("docs")?;
    commit(5)?;
    // 6: a binary file.
    let blob: Vec<u8> = (0..200_000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    write(dir, "data/blob.bin", &blob)?;
    commit(6)?;
    // 7: rename a directory.
    mv("src/lib", "lib")?;
    commit(7)?;
    // 8: rename with a change.
    rm("lib/c.c")?;
    let mut c2 = text(5, 80);
    c2.extend_from_slice(b"one more line\n");
    write(dir, "lib/c2.c", &c2)?;
    commit(8)?;
    // 9: a file becomes a directory.
    rm("README")?;
    write(dir, "README/index.md", b"# now a directory\n")?;
    commit(9)?;
    // 10: a directory becomes a file.
    rm("lib")?;
    write(dir, "lib", b"lib is a file now\n")?;
    commit(10)?;
    for n in 11..=commits {
        write(
            dir,
            &format!("n{n}/f{n}.txt"),
            &text(100 + n, (n * 7 % 50) as usize + 1),
        )?;
        if n >= 13 {
            rm(&format!("n{}", n - 2))?;
        }
        write(dir, "src/a.c", &text(200 + n, 40 + n as usize))?;
        let mut b = std::fs::read(dir.join("data/blob.bin"))
            .map_err(|e| crate::Error::io(&dir.join("data/blob.bin"), "read", e))?;
        b.extend((0..5000u32).map(|i| (i ^ n as u32) as u8));
        write(dir, "data/blob.bin", &b)?;
        if n % 4 == 0 {
            // Deep directories come and go; a file moves between directories.
            let _ = std::fs::remove_dir_all(dir.join("src/deep"));
            write(dir, &format!("src/deep/er{n}/z.c"), &text(300 + n, 5))?;
            let from = if dir.join("src/bb.c").exists() {
                "src/bb.c".to_string()
            } else {
                format!("m{}/bb.c", n - 4)
            };
            mv(&from, &format!("m{n}/bb.c"))?;
            let _ = std::fs::remove_dir(dir.join(format!("m{}", n - 4)));
        }
        commit(n)?;
    }
    Ok(())
}

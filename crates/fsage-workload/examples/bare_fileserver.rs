//! The fileserver personality's system calls in a bare loop, without the engine (no pool, no
//! timing, no histograms): the baseline that fsage's fileserver ops/s is compared with in
//! BENCHMARKS.md. The fileset is laid out by the same code as fsage's (same sizes, same 80%
//! preallocated); each thread owns a share of the entries, so no lock is taken.
//!
//! `cargo run --release -p fsage-workload --example bare_fileserver -- TARGET_DIR SECONDS THREADS NFILES`
//! prints the operations per second (11 per iteration, as fsage counts them).

use fsage_plan::Rng;
use fsage_workload::{fileset, Workload};
use std::io::IoSlice;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rustix::fs::{Mode, OFlags};
use rustix::io::ReadWriteFlags;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() != 5 {
        eprintln!("usage: bare_fileserver TARGET_DIR SECONDS THREADS NFILES");
        std::process::exit(2);
    }
    let target = PathBuf::from(&a[1]);
    let secs: f64 = a[2].parse().expect("SECONDS");
    let threads: usize = a[3].parse().expect("THREADS");
    let nfiles = &a[4];
    let w = Workload::builtin("fileserver")
        .unwrap()
        .with_vars(&[("nfiles", nfiles.as_str())])
        .unwrap();
    std::fs::create_dir_all(&target).unwrap();
    let layout = fileset::plan(&w.model().filesets[0], &target, 1);
    layout.materialize(|_, _| true).unwrap();
    let paths: Vec<std::ffi::CString> = layout
        .entries
        .iter()
        .map(|e| {
            std::ffi::CString::new(
                layout
                    .root
                    .join(&e.rel)
                    .into_os_string()
                    .into_encoded_bytes(),
            )
            .unwrap()
        })
        .collect();
    let sizes: Vec<u64> = layout.entries.iter().map(|e| e.size).collect();
    let exists: Vec<bool> = layout.entries.iter().map(|e| e.prealloc).collect();
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(secs);
    let total: u64 = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let (paths, sizes, exists) = (&paths, &sizes, &exists);
                s.spawn(move || {
                    let mine: Vec<usize> = (t..paths.len()).step_by(threads).collect();
                    let mut free: Vec<usize> =
                        mine.iter().copied().filter(|&i| !exists[i]).collect();
                    let mut used: Vec<usize> =
                        mine.iter().copied().filter(|&i| exists[i]).collect();
                    let mut rng = Rng::new(t as u64 + 1);
                    let mut buf = vec![7u8; 1 << 20];
                    let mut iters = 0u64;
                    while Instant::now() < end && !free.is_empty() && used.len() > 1 {
                        // createfile, writewholefile, closefile
                        let k = rng.below(free.len() as u64) as usize;
                        let e = free.swap_remove(k);
                        let fd = rustix::fs::open(
                            paths[e].as_c_str(),
                            OFlags::CREATE | OFlags::TRUNC | OFlags::RDWR | OFlags::CLOEXEC,
                            Mode::from_raw_mode(0o644),
                        )
                        .unwrap();
                        let mut off = 0;
                        while off < sizes[e] {
                            let n = (sizes[e] - off).min(1 << 20) as usize;
                            off += rustix::io::pwrite(&fd, &buf[..n], off).unwrap() as u64;
                        }
                        drop(fd);
                        used.push(e);
                        // openfile, appendfilerand, closefile
                        let e = used[rng.below(used.len() as u64) as usize];
                        let fd = rustix::fs::open(
                            paths[e].as_c_str(),
                            OFlags::RDWR | OFlags::CLOEXEC,
                            Mode::empty(),
                        )
                        .unwrap();
                        let n = rng.between(1, 16384) as usize;
                        rustix::io::pwritev2(
                            &fd,
                            &[IoSlice::new(&buf[..n])],
                            0,
                            ReadWriteFlags::APPEND,
                        )
                        .unwrap();
                        drop(fd);
                        // openfile, readwholefile, closefile
                        let e = used[rng.below(used.len() as u64) as usize];
                        let fd = rustix::fs::open(
                            paths[e].as_c_str(),
                            OFlags::RDWR | OFlags::CLOEXEC,
                            Mode::empty(),
                        )
                        .unwrap();
                        let mut off = 0u64;
                        loop {
                            let n = rustix::io::pread(&fd, &mut buf[..], off).unwrap();
                            off += n as u64;
                            if n < 1 << 20 {
                                break;
                            }
                        }
                        drop(fd);
                        // deletefile
                        let k = rng.below(used.len() as u64) as usize;
                        let e = used.swap_remove(k);
                        rustix::fs::unlink(paths[e].as_c_str()).unwrap();
                        free.push(e);
                        // statfile
                        let e = used[rng.below(used.len() as u64) as usize];
                        rustix::fs::stat(paths[e].as_c_str()).unwrap();
                        iters += 1;
                    }
                    iters * 11
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    });
    let el = start.elapsed().as_secs_f64();
    println!(
        "bare fileserver: {total} ops in {el:.3} s = {:.1} ops/s ({threads} threads)",
        total as f64 / el
    );
}

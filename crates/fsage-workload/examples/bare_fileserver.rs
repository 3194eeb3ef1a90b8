//! The fileserver personality's system calls in a bare loop, without the engine (no pool, no
//! timing, no histograms): the baseline that fsage's fileserver ops/s is compared with in
//! BENCHMARKS.md. The fileset is laid out by the same code as fsage's (same sizes, same 80%
//! preallocated); each thread owns a share of the entries, so no lock is taken. With `shared` as a
//! fifth argument the threads instead draw from one list of free and one of existing files behind
//! a mutex, as fsage's threads do (any thread may open any file): the same work, without the
//! engine's bookkeeping.
//!
//! `cargo run --release -p fsage-workload --example bare_fileserver -- TARGET_DIR SECONDS THREADS NFILES [shared]`
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
    if a.len() != 5 && !(a.len() == 6 && a[5] == "shared") {
        eprintln!("usage: bare_fileserver TARGET_DIR SECONDS THREADS NFILES [shared]");
        std::process::exit(2);
    }
    let shared = a.len() == 6;
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
    layout
        .materialize(fsage_plan::DataPattern::Incompressible, |_, _| true)
        .unwrap();
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
    // The shared lists (free, existing), used with `shared`.
    let pool = std::sync::Mutex::new((
        (0..paths.len())
            .filter(|&i| !exists[i])
            .collect::<Vec<usize>>(),
        (0..paths.len())
            .filter(|&i| exists[i])
            .collect::<Vec<usize>>(),
    ));
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(secs);
    let total: u64 = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let (paths, sizes, exists, pool) = (&paths, &sizes, &exists, &pool);
                s.spawn(move || {
                    let mine: Vec<usize> = (t..paths.len()).step_by(threads).collect();
                    let mut free: Vec<usize> =
                        mine.iter().copied().filter(|&i| !exists[i]).collect();
                    let mut used: Vec<usize> =
                        mine.iter().copied().filter(|&i| exists[i]).collect();
                    let mut rng = Rng::new(t as u64 + 1);
                    let mut buf = vec![7u8; 1 << 20];
                    let mut iters = 0u64;
                    // Picks an entry from the shared lists (0: free, 1: existing), taking it
                    // out of the list when `take`.
                    let pick = |rng: &mut Rng, which: usize, take: bool| -> usize {
                        let mut p = pool.lock().unwrap();
                        let l = if which == 0 { &mut p.0 } else { &mut p.1 };
                        let k = rng.below(l.len() as u64) as usize;
                        if take {
                            l.swap_remove(k)
                        } else {
                            l[k]
                        }
                    };
                    let put = |which: usize, e: usize| {
                        let mut p = pool.lock().unwrap();
                        if which == 0 {
                            p.0.push(e)
                        } else {
                            p.1.push(e)
                        }
                    };
                    // Opens an existing file; shared, one that another thread deleted since it
                    // was picked is skipped for another.
                    let open_existing = |rng: &mut Rng, used: &Vec<usize>| loop {
                        let e = if shared {
                            pick(rng, 1, false)
                        } else {
                            used[rng.below(used.len() as u64) as usize]
                        };
                        match rustix::fs::open(
                            paths[e].as_c_str(),
                            OFlags::RDWR | OFlags::CLOEXEC,
                            Mode::empty(),
                        ) {
                            Ok(fd) => break fd,
                            Err(rustix::io::Errno::NOENT) if shared => continue,
                            Err(e) => panic!("open: {e}"),
                        }
                    };
                    let room = |free: &Vec<usize>, used: &Vec<usize>| {
                        if shared {
                            let p = pool.lock().unwrap();
                            !p.0.is_empty() && p.1.len() > 1
                        } else {
                            !free.is_empty() && used.len() > 1
                        }
                    };
                    while Instant::now() < end && room(&free, &used) {
                        // createfile, writewholefile, closefile
                        let e = if shared {
                            pick(&mut rng, 0, true)
                        } else {
                            let k = rng.below(free.len() as u64) as usize;
                            free.swap_remove(k)
                        };
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
                        if shared {
                            put(1, e);
                        } else {
                            used.push(e);
                        }
                        // openfile, appendfilerand, closefile
                        let fd = open_existing(&mut rng, &used);
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
                        let fd = open_existing(&mut rng, &used);
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
                        let e = if shared {
                            pick(&mut rng, 1, true)
                        } else {
                            let k = rng.below(used.len() as u64) as usize;
                            used.swap_remove(k)
                        };
                        rustix::fs::unlink(paths[e].as_c_str()).unwrap();
                        if shared {
                            put(0, e);
                        } else {
                            free.push(e);
                        }
                        // statfile
                        loop {
                            let e = if shared {
                                pick(&mut rng, 1, false)
                            } else {
                                used[rng.below(used.len() as u64) as usize]
                            };
                            match rustix::fs::stat(paths[e].as_c_str()) {
                                Ok(_) => break,
                                Err(rustix::io::Errno::NOENT) if shared => continue,
                                Err(e) => panic!("stat: {e}"),
                            }
                        }
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

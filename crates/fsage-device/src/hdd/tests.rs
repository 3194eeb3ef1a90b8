//! The hard disk against hand-computed service times, and its figures against its datasheet.

use super::*;
use crate::models::{resolve, ModelKind};
use proptest::prelude::*;

const MS: f64 = 1e6;

/// The built-in hdd-7200's parameters.
fn params() -> HddParams {
    match resolve("hdd-7200").unwrap().kind {
        ModelKind::Hdd(p) => p,
        _ => unreachable!("hdd-7200 is a hard disk"),
    }
}

/// A small, simple disk whose numbers are easy to compute by hand: 6000 rpm (10 ms a
/// revolution), one head, one zone of 1000 sectors a track (51.2 MB/s), no overhead, no caches.
fn simple() -> HddParams {
    HddParams {
        rpm: 6000.0,
        capacity: None,
        offset: 0,
        heads: 1,
        zones: 1,
        rate_outer: 51_200_000,
        rate_inner: 51_200_000,
        seek_track_ns: 1_000_000,
        seek_avg_ns: 5_000_000,
        seek_full_ns: 10_000_000,
        write_seek_track_ns: 1_000_000,
        write_seek_avg_ns: 5_000_000,
        write_seek_full_ns: 10_000_000,
        head_switch_ns: 500_000,
        overhead_ns: 0,
        interface_rate: 512_000_000,
        read_segments: 1,
        read_ahead: 0,
        write_cache: 0,
        queue_depth: 32,
        max_wait_ns: 10_000_000_000,
    }
}

fn rq(id: u64, kind: RqKind, offset: u64, len: u64) -> Rq {
    Rq {
        id,
        kind,
        offset,
        len,
    }
}

/// Submits `r` at `t` and runs the model until it completes; returns the completion time.
fn run_one(d: &mut Hdd, t: Ns, r: Rq) -> Ns {
    if let Some(done) = d.submit(t, r) {
        return done;
    }
    let mut done = Vec::new();
    while let Some(e) = d.next_event() {
        d.advance(e, &mut done);
        if let Some(&(_, at)) = done.iter().find(|(id, _)| *id == r.id) {
            return at;
        }
    }
    panic!("request {} never completed", r.id);
}

const TRACK: u64 = 1000 * 512; // bytes a track on the simple disk
const REV: f64 = 10.0 * MS;

#[test]
fn a_rotation_wait_is_computed_from_the_angle() {
    // 100 tracks (cylinders). The head is on cylinder 0 at angle 0 at time 0.
    let mut d = Hdd::new(&simple(), 100 * TRACK).unwrap();
    // Sector 250 of track 0 starts at angle 0.25: from time 0 it comes round in 2.5 ms, then one
    // sector passes in 10 us.
    let done = run_one(&mut d, 0, rq(1, RqKind::Read, 250 * 512, 512));
    assert_eq!(done, (2.5 * MS + 0.01 * MS) as Ns);
    // Now the head is just past sector 250 (angle 0.251): sector 250 again (written: a read
    // would come from the buffer) is a revolution away less a sector.
    let t = done;
    let again = run_one(&mut d, t, rq(2, RqKind::Write, 250 * 512, 512));
    assert!(((again - t) as f64 - REV).abs() <= 2.0, "{}", again - t);
    // And sector 252, just ahead, costs almost nothing: 1 sector to wait, 1 to read.
    let t = again;
    let ahead = run_one(&mut d, t, rq(3, RqKind::Read, 252 * 512, 512));
    assert!(
        ((ahead - t) as f64 - 0.02 * MS).abs() <= 2.0,
        "{}",
        ahead - t
    );
}

#[test]
fn a_seek_costs_the_curve_then_the_rotation() {
    let mut d = Hdd::new(&simple(), 100 * TRACK).unwrap();
    let curve = *d.read_seek();
    // Cylinder 40 (track 40 with one head), sector 0. After the seek of 40 cylinders the angle is
    // seek/rev; the track start is turned by 40 single-track switches (skew) of 1 ms.
    let seek = curve.time(40);
    let start = (40.0 * 1.0 * MS / REV).fract();
    let at = (seek / REV).fract();
    let wait = (start - at).rem_euclid(1.0) * REV;
    let done = run_one(&mut d, 0, rq(1, RqKind::Read, 40 * TRACK, 512));
    assert_eq!(done, (seek + wait + 0.01 * MS).ceil() as Ns);
    assert_eq!(d.counters().seeks, 1);
}

#[test]
fn a_track_reads_in_a_revolution_and_crossing_adds_the_switch() {
    let mut d = Hdd::new(&simple(), 100 * TRACK).unwrap();
    // From sector 0 at time 0: no wait, a whole track is one revolution.
    assert_eq!(run_one(&mut d, 0, rq(1, RqKind::Read, 0, TRACK)), REV as Ns);
    // Two tracks from sector 0 of track 2: two revolutions and one cylinder switch (1 ms), no
    // second rotational wait thanks to the skew.
    let mut d = Hdd::new(&simple(), 100 * TRACK).unwrap();
    let t0 = run_one(&mut d, 0, rq(1, RqKind::Read, 2 * TRACK, 512));
    let t1 = run_one(&mut d, t0, rq(2, RqKind::Read, 3 * TRACK, TRACK));
    let t2 = run_one(&mut d, t1, rq(3, RqKind::Read, 2 * TRACK, 2 * TRACK));
    let _ = t1;
    // Measure the transfer part alone: total minus the positioning the model charged.
    let s = d.counters();
    assert!(t2 > t1);
    let (xfer, _) = d.geometry().transfer(d.geometry().chs(2000), 2000, 2000);
    assert!((xfer - (2.0 * REV + 1.0 * MS)).abs() < 1.0, "{xfer}");
    assert!(s.transfer_ns > 0);
}

/// The sector of cylinder `cyl` that comes under the head just as a seek from cylinder `from`
/// started at `t` ends: its positioning time is the seek alone (plus under a sector).
fn sector_after_seek(d: &Hdd, t: f64, from: u64, cyl: u64) -> u64 {
    let seek = d.read_seek().time(cyl.abs_diff(from));
    let at = ((t + seek) / REV).fract();
    let start = d.geometry().track_start(cyl, 0);
    ((at - start).rem_euclid(1.0) * 1000.0).ceil() as u64 % 1000
}

#[test]
fn sptf_serves_the_nearest_first_and_depth_one_is_fifo() {
    // Three reads queued behind a first one (sector 0, done at 10 us, head on cylinder 0): at
    // cylinders 90, 10 and 11, each at the sector that arrives as its seek ends, so positioning
    // is the seek. SPTF takes 10, then 11, then 90; arrival order would take 90 first.
    let mut d = Hdd::new(&simple(), 100 * TRACK).unwrap();
    assert_eq!(d.submit(0, rq(0, RqKind::Read, 0, 512)), None);
    let t_free = 0.01 * MS;
    let s10 = sector_after_seek(&d, t_free, 0, 10);
    assert_eq!(
        d.submit(
            1000,
            rq(
                1,
                RqKind::Read,
                90 * TRACK + 512 * sector_after_seek(&d, t_free, 0, 90),
                512
            )
        ),
        None
    );
    assert_eq!(
        d.submit(1000, rq(2, RqKind::Read, 10 * TRACK + 512 * s10, 512)),
        None
    );
    // Cylinder 11 after 10: at the sector that arrives as the one-cylinder seek from 10 ends.
    let t10 = t_free + d.read_seek().time(10) + 0.02 * MS;
    let s11 = sector_after_seek(&d, t10, 10, 11);
    assert_eq!(
        d.submit(1000, rq(3, RqKind::Read, 11 * TRACK + 512 * s11, 512)),
        None
    );
    let mut done = Vec::new();
    while let Some(e) = d.next_event() {
        d.advance(e, &mut done);
    }
    let order: Vec<u64> = done.iter().map(|x| x.0).collect();
    assert_eq!(order, vec![0, 2, 3, 1]);
    // At depth 1 the same arrivals go in order.
    let mut p = simple();
    p.queue_depth = 1;
    let mut d = Hdd::new(&p, 100 * TRACK).unwrap();
    d.submit(0, rq(0, RqKind::Read, 0, 512));
    for (id, cyl) in [(1, 90u64), (2, 10), (3, 11)] {
        d.submit(1000, rq(id, RqKind::Read, cyl * TRACK, 512));
    }
    let mut done = Vec::new();
    while let Some(e) = d.next_event() {
        d.advance(e, &mut done);
    }
    assert_eq!(
        done.iter().map(|x| x.0).collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );
}

#[test]
fn read_ahead_serves_the_next_sequential_read_from_the_cache() {
    let mut p = simple();
    p.read_ahead = 512 * 1024;
    let mut d = Hdd::new(&p, 100 * TRACK).unwrap();
    let t0 = run_one(&mut d, 0, rq(1, RqKind::Read, 0, 4096));
    // 2 ms later the stream has read 200 sectors on: the next 4 KiB is there.
    let t1 = run_one(&mut d, t0 + 2 * MS as Ns, rq(2, RqKind::Read, 4096, 4096));
    assert_eq!(
        t1 - (t0 + 2 * MS as Ns),
        8_000,
        "interface time only (4 KiB at 512 MB/s)"
    );
    assert_eq!(d.counters().read_hits, 1);
    // Right away, a long read on from there is not all read yet: it waits for the stream to
    // reach its end, at the sustained media rate (sectors 16 to 416).
    let t2 = run_one(&mut d, t1, rq(3, RqKind::Read, 8192, 400 * 512));
    let rate = d.geometry().sustained_rate(0);
    let reach = t0 as f64 + (416.0 - 8.0) / rate;
    assert!((t2 as f64 - reach).abs() < 2.0, "{t2} against {reach}");
    assert_eq!(d.counters().read_hits, 2);
}

#[test]
fn cached_writes_hit_on_read_and_a_flush_waits_for_their_write_back() {
    let mut p = simple();
    p.write_cache = 1 << 20;
    let mut d = Hdd::new(&p, 100 * TRACK).unwrap();
    // Eight 4 KiB writes scattered over eight cylinders, acknowledged after the interface time.
    let mut t = 0;
    for k in 0..8u64 {
        let done = d
            .submit(t, rq(k, RqKind::Write, (k * 11 + 3) * TRACK, 4096))
            .unwrap();
        assert_eq!(done - t, 8_000);
        t = done;
    }
    assert_eq!(d.counters().cached_writes, 8);
    // A read of dirty data is a hit.
    assert_eq!(
        d.submit(t, rq(100, RqKind::Read, 3 * TRACK, 4096)),
        Some(t + 8_000)
    );
    // The flush completes only once all eight are on the media: at least eight write-backs, each
    // a seek and a transfer.
    let f = run_one(&mut d, t, rq(200, RqKind::Flush, 0, 0));
    assert_eq!(d.counters().write_backs, 8);
    assert!(f > t + 8 * (d.read_seek().time(11) as Ns), "{f}");
    assert!(d.dirty.is_empty());
}

#[test]
fn write_through_writes_cost_the_media_and_flushes_nothing() {
    let mut d = Hdd::new(&simple(), 100 * TRACK).unwrap();
    let w = run_one(&mut d, 0, rq(1, RqKind::Write, 250 * 512, 512));
    assert_eq!(w, (2.5 * MS + 0.01 * MS) as Ns, "like a read");
    assert_eq!(d.submit(w, rq(2, RqKind::Flush, 0, 0)), Some(w));
}

/// Runs `n` requests from `next` keeping `depth` outstanding (each new one issued when one
/// completes); returns the total time.
fn closed_loop(d: &mut Hdd, depth: usize, n: u64, mut next: impl FnMut(u64) -> Rq) -> f64 {
    let (mut issued, mut completed) = (0u64, 0u64);
    let mut t: Ns = 0;
    // Completions known (from submit or advance) but not yet reached.
    let mut known: Vec<Ns> = Vec::new();
    let mut done = Vec::new();
    while completed < n {
        while issued - completed < depth as u64 && issued < n {
            let r = next(issued);
            issued += 1;
            if let Some(at) = d.submit(t, r) {
                known.push(at);
            }
        }
        // The next completion: a known one, or the model's next event.
        let first_known = known.iter().copied().min();
        let event = d.next_event();
        match first_known {
            Some(k) if event.is_none_or(|e| k <= e) => {
                known.retain(|&x| {
                    x != k || {
                        completed += 1;
                        false
                    }
                });
                t = t.max(k);
            }
            _ => {
                let e = event.expect("requests outstanding, so something to happen");
                d.advance(e, &mut done);
                known.extend(done.drain(..).map(|x| x.1));
                t = t.max(e);
            }
        }
    }
    t as f64
}

fn lcg(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *state >> 11
}

#[test]
fn random_reads_over_the_whole_disk_take_the_datasheet_access_time() {
    let p = params();
    let size = p.capacity.unwrap();
    let mut d = Hdd::new(&p, size).unwrap();
    let want = d.datasheet_access_ns();
    let mut s = 1u64;
    let n = 4000;
    let total = closed_loop(&mut d, 1, n, |i| {
        rq(i, RqKind::Read, (lcg(&mut s) % (size / 4096)) * 4096, 4096)
    });
    let mean = total / n as f64;
    eprintln!(
        "random 4 KiB reads, depth 1, whole disk: {:.3} ms (datasheet {:.3} ms)",
        mean / MS,
        want / MS
    );
    assert!(
        (mean - want).abs() / want < 0.03,
        "mean {:.2} ms against the datasheet's {:.2} ms",
        mean / MS,
        want / MS
    );
    // Within the first 1 GiB the seeks are short: much faster.
    let mut d = Hdd::new(&p, size).unwrap();
    let near = closed_loop(&mut d, 1, n, |i| {
        rq(
            i,
            RqKind::Read,
            (lcg(&mut s) % ((1 << 30) / 4096)) * 4096,
            4096,
        )
    }) / n as f64;
    eprintln!(
        "random 4 KiB reads, depth 1, first 1 GiB: {:.3} ms",
        near / MS
    );
    assert!(near < 0.7 * mean, "{:.2} ms within 1 GiB", near / MS);
    // At depth 16 the queue reorders: clearly more per second.
    let mut d = Hdd::new(&p, size).unwrap();
    let deep = closed_loop(&mut d, 16, n, |i| {
        rq(i, RqKind::Read, (lcg(&mut s) % (size / 4096)) * 4096, 4096)
    }) / n as f64;
    eprintln!(
        "random 4 KiB reads, depth 16, whole disk: {:.3} ms a read, {:.0} IOPS (depth 1: {:.0})",
        deep / MS,
        1e9 / deep,
        1e9 / mean
    );
    assert!(
        deep < 0.6 * mean,
        "{:.2} ms per read at depth 16",
        deep / MS
    );
}

/// The figures of `scripts/bench-hdd-fio`'s device (100 GiB on the outer edge of the 1 TB disk,
/// as `fsage dev create --size 100GiB --model hdd-7200` makes it), in simulated time: what fio
/// on the real-time device is compared with (BENCHMARKS.md, "The hard-disk model in real time").
#[test]
fn random_reads_on_a_100_gib_device_at_depths_1_and_16() {
    let p = params();
    let size = 100u64 << 30;
    let n = 4000;
    let mut s = 7u64;
    let mut d = Hdd::new(&p, size).unwrap();
    let one = closed_loop(&mut d, 1, n, |i| {
        rq(i, RqKind::Read, (lcg(&mut s) % (size / 4096)) * 4096, 4096)
    }) / n as f64;
    let mut d = Hdd::new(&p, size).unwrap();
    let deep = closed_loop(&mut d, 16, n, |i| {
        rq(i, RqKind::Read, (lcg(&mut s) % (size / 4096)) * 4096, 4096)
    }) / n as f64;
    let full = Hdd::new(&p, p.capacity.unwrap())
        .unwrap()
        .datasheet_access_ns();
    eprintln!(
        "100 GiB device, random 4 KiB reads: depth 1 {:.3} ms ({:.0} IOPS), depth 16 {:.0} IOPS",
        one / MS,
        1e9 / one,
        1e9 / deep
    );
    // A tenth of the disk: shorter seeks than the whole stroke, but a half revolution still.
    let half_rev = 30_000.0 / p.rpm * MS;
    assert!(one < 0.75 * full && one > half_rev, "{:.2} ms", one / MS);
    assert!(deep < 0.6 * one, "{:.2} ms per read at depth 16", deep / MS);
}

#[test]
fn sequential_reads_stream_at_the_outer_zone_rate() {
    let p = params();
    let mut d = Hdd::new(&p, 100 << 30).unwrap();
    let n = 400u64;
    let total = closed_loop(&mut d, 1, n, |i| rq(i, RqKind::Read, i << 20, 1 << 20));
    let rate = (n << 20) as f64 / (total / 1e9);
    // The sustained rate: the media rate less the head and cylinder switches.
    let want = d.geometry().sustained_rate(0) * 512.0 * 1e9;
    eprintln!(
        "sequential 1 MiB reads: {:.1} MB/s (sustained outer {:.1} MB/s)",
        rate / 1e6,
        want / 1e6
    );
    assert!(
        (rate - want).abs() / want < 0.03,
        "{:.1} MB/s against the sustained {:.1} MB/s",
        rate / 1e6,
        want / 1e6
    );
    assert!(want > 0.85 * p.rate_outer as f64);
}

/// A 1 MiB read split in two 512 KiB requests issued together (as a loop device whose largest
/// request is 512 KiB sends fio's 1 MiB reads), the next pair issued when both completed.
#[test]
fn sequential_reads_split_in_halves_still_stream_at_the_outer_zone_rate() {
    let p = params();
    let mut d = Hdd::new(&p, 100 << 30).unwrap();
    let (n, half) = (400u64, 512u64 << 10);
    let mut t: Ns = 0;
    let mut done = Vec::new();
    for i in 0..n {
        let mut ends: Vec<Ns> = (0..2)
            .filter_map(|k| d.submit(t, rq(2 * i + k, RqKind::Read, (2 * i + k) * half, half)))
            .collect();
        while ends.len() < 2 {
            let e = d
                .next_event()
                .expect("a read outstanding, so something to happen");
            d.advance(e, &mut done);
            ends.extend(done.drain(..).map(|x| x.1));
        }
        t = ends.into_iter().max().unwrap_or(t);
    }
    let rate = (n << 20) as f64 / (t as f64 / 1e9);
    let want = d.geometry().sustained_rate(0) * 512.0 * 1e9;
    eprintln!(
        "sequential 1 MiB reads as two 512 KiB halves: {:.1} MB/s (sustained outer {:.1} MB/s)",
        rate / 1e6,
        want / 1e6
    );
    // The second half lies just ahead of the stream the first is read from: read on, not a
    // lost revolution per pair (which gave 74 MB/s).
    assert!(
        (rate - want).abs() / want < 0.03,
        "{:.1} MB/s against the sustained {:.1} MB/s",
        rate / 1e6,
        want / 1e6
    );
}

/// A sequential stream of 1 MiB reads at every queue depth fio is run at (1 to 32), whole and as
/// two 512 KiB halves (as the loop device sends them), each new read issued as one completes:
/// the drive reads on at the media rate whatever the depth. Before queued reads were served
/// from the read-ahead stream, each read queued behind another paid the command overhead and a
/// revolution (or SPTF skipped ahead and came back): 63-66 MB/s at depths 2 to 8.
#[test]
fn a_sequential_stream_reads_at_the_media_rate_at_every_depth() {
    let p = params();
    let n = 200u64;
    for depth in [1usize, 2, 4, 8, 16, 32] {
        for halves in [false, true] {
            let mut d = Hdd::new(&p, 100 << 30).unwrap();
            let total = if halves {
                closed_loop(&mut d, 2 * depth, 2 * n, |i| {
                    rq(i, RqKind::Read, i << 19, 1 << 19)
                })
            } else {
                closed_loop(&mut d, depth, n, |i| rq(i, RqKind::Read, i << 20, 1 << 20))
            };
            let rate = (n << 20) as f64 / (total / 1e9);
            let want = d.geometry().sustained_rate(0) * 512.0 * 1e9;
            eprintln!(
                "sequential 1 MiB reads, depth {depth}{}: {:.1} MB/s (sustained outer {:.1} MB/s), \
                 {} seeks",
                if halves { " (512 KiB halves)" } else { "" },
                rate / 1e6,
                want / 1e6,
                d.counters().seeks
            );
            assert!(
                (rate - want).abs() / want < 0.03,
                "depth {depth}, halves {halves}: {:.1} MB/s against the sustained {:.1} MB/s",
                rate / 1e6,
                want / 1e6
            );
            assert_eq!(d.counters().seeks, 0, "depth {depth}: a stream never seeks");
        }
    }
}

/// The model's own figures for `scripts/bench-hdd-fio`'s depth table (BENCHMARKS.md, "The
/// hard-disk model in real time"): fio's jobs on the 100 GiB device in simulated time, closed
/// loop, at depths 1 to 32. Sequential 1 MiB reads stay at the sustained rate; random 4 KiB reads
/// gain from the queue (SPTF) up to depth 32. Prints one `fio-figure` line per job for the script.
#[test]
fn the_fio_jobs_at_every_depth_in_simulated_time() {
    let p = params();
    let size = 100u64 << 30;
    let sustained = Hdd::new(&p, size).unwrap().geometry().sustained_rate(0) * 512.0 * 1e9;
    let mut iops = Vec::new();
    for depth in [1usize, 2, 4, 8, 16, 32] {
        let mut d = Hdd::new(&p, size).unwrap();
        let n = 200u64;
        let total = closed_loop(&mut d, 2 * depth, 2 * n, |i| {
            rq(i, RqKind::Read, i << 19, 1 << 19)
        });
        let rate = (n << 20) as f64 / (total / 1e9);
        let mut d = Hdd::new(&p, size).unwrap();
        let mut s = 11u64;
        let n = 3000u64;
        let total = closed_loop(&mut d, depth, n, |i| {
            rq(i, RqKind::Read, (lcg(&mut s) % (size / 4096)) * 4096, 4096)
        });
        let per_s = n as f64 / (total / 1e9);
        eprintln!("fio-figure seq {depth} {:.1} MB/s", rate / 1e6);
        eprintln!("fio-figure rand {depth} {per_s:.1} IOPS");
        assert!((rate - sustained).abs() / sustained < 0.03, "depth {depth}");
        iops.push(per_s);
    }
    // NCQ: from depth 4 on every doubling serves more (at depth 2 the drive chooses from one:
    // the other read is issued only when the one before completes), 16 deep twice depth 1.
    assert!(iops.windows(2).all(|w| w[1] >= 0.99 * w[0]), "{iops:?}");
    assert!(iops[2..].windows(2).all(|w| w[1] > w[0]), "{iops:?}");
    assert!(iops[4] > 2.0 * iops[0], "{iops:?}");
}

/// A segment holds what its read brought in and the read-ahead after it, not everything a long
/// stream read: after 64 MiB streamed, the first MiB again is read from the media.
#[test]
fn a_long_stream_leaves_only_a_segment_cached() {
    let p = params();
    let mut d = Hdd::new(&p, 100 << 30).unwrap();
    closed_loop(&mut d, 1, 64, |i| rq(i, RqKind::Read, i << 20, 1 << 20));
    let hits = d.counters().read_hits;
    let t = d.now + 1_000_000_000;
    let done = run_one(&mut d, t, rq(1000, RqKind::Read, 0, 1 << 20));
    assert_eq!(
        d.counters().read_hits,
        hits,
        "the first MiB is no longer held"
    );
    // A seek back and the transfer at the media rate, not the interface's 3.5 ms.
    assert!(done - t > 8_000_000, "{} ns", done - t);
    // The last MiB read is still there.
    let hits = d.counters().read_hits;
    run_one(&mut d, done, rq(1001, RqKind::Read, 63 << 20, 1 << 20));
    assert!(d.counters().read_hits > hits);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Any stream of requests: each completes exactly once, never before it arrived, nothing
    /// stalls, and a flush completes only with the cache empty of what came before it.
    #[test]
    fn every_request_completes_once_and_nothing_stalls(
        ops in prop::collection::vec((0u8..10, 0u64..2000, 1u64..64, 0u64..3_000_000), 1..120),
        cache in prop::sample::select(vec![0u64, 64 * 1024, 1 << 20]),
        depth in 1u64..8,
    ) {
        let mut p = simple();
        p.write_cache = cache;
        p.read_ahead = 32 * 1024;
        p.read_segments = 4;
        p.queue_depth = depth;
        let mut d = Hdd::new(&p, 2000 * 512 * 64).unwrap();
        let mut t: Ns = 0;
        let mut arrival = std::collections::HashMap::new();
        let mut completed = std::collections::HashMap::new();
        let mut done = Vec::new();
        for (i, (k, at, len, gap)) in ops.iter().enumerate() {
            t += gap;
            d.advance(t, &mut done);
            let kind = match k {
                0..=4 => RqKind::Read,
                5..=7 => RqKind::Write,
                8 => RqKind::Flush,
                _ => RqKind::Discard,
            };
            let (off, l) = if kind == RqKind::Flush { (0, 0) } else { (at * 512 * 16, len * 512) };
            let r = rq(i as u64, kind, off, l);
            arrival.insert(r.id, (t, kind));
            if let Some(c) = d.submit(t, r) {
                done.push((r.id, c));
            }
            for (id, c) in done.drain(..) {
                prop_assert!(completed.insert(id, c).is_none(), "{id} completed twice");
            }
        }
        let mut guard = 0;
        while completed.len() < arrival.len() {
            let e = d.next_event();
            prop_assert!(e.is_some(), "{} requests outstanding and no event", arrival.len() - completed.len());
            d.advance(e.unwrap(), &mut done);
            for (id, c) in done.drain(..) {
                prop_assert!(completed.insert(id, c).is_none(), "{id} completed twice");
            }
            guard += 1;
            prop_assert!(guard < 100_000);
        }
        for (id, (a, _)) in &arrival {
            prop_assert!(completed[id] >= *a, "{id} completed before it arrived");
        }
        // A flush completes after every write before it has completed.
        for (id, (_, kind)) in &arrival {
            if *kind == RqKind::Flush {
                for (w, (_, k)) in &arrival {
                    if *k == RqKind::Write && w < id {
                        prop_assert!(completed[w] <= completed[id], "write {w} after flush {id}");
                    }
                }
            }
        }
    }
}

#[test]
fn a_costed_scan_is_cheap_in_order_and_dear_shuffled() {
    use crate::{cost, Trace, TraceRq};
    // A 32 MiB file read in 500 pieces of 64 KiB, each issued 20 us after the one before
    // completed (as recorded on a fast device): laid out in order, and in pieces shuffled over
    // the same 32 MiB.
    let mk = |order: Vec<u64>| {
        let reqs = order
            .iter()
            .enumerate()
            .map(|(i, &k)| TraceRq {
                kind: RqKind::Read,
                offset: k * 65536,
                len: 65536,
                issue_ns: i as u64 * 30_000,
                complete_ns: Some(i as u64 * 30_000 + 10_000),
            })
            .collect();
        Trace::new("scan", Some(1 << 30), reqs)
    };
    let in_order: Vec<u64> = (0..500).collect();
    let mut shuffled = in_order.clone();
    let mut s = 7u64;
    for i in (1..shuffled.len()).rev() {
        shuffled.swap(i, (lcg(&mut s) % (i as u64 + 1)) as usize);
    }
    let spec = resolve("hdd-7200").unwrap();
    let a = cost(&mk(in_order), spec.build(1 << 30).unwrap().as_mut());
    let b = cost(&mk(shuffled), spec.build(1 << 30).unwrap().as_mut());
    // In order the read-ahead streams it at media rate; shuffled, each piece costs a rotation.
    assert!(a.total_ns * 5 < b.total_ns, "{} {}", a.total_ns, b.total_ns);
    assert!(a.stats.hdd().unwrap().read_hits > 450, "{:?}", a.stats);
    assert_eq!(a.requests, 500);
}

/// fio in simulated time, as a block trace records it: `n` requests from `next`, `depth` kept
/// outstanding, each new one issued `think()` ns after a completion is seen and reaching the
/// drive `path()` ns after its issue (as through the real-time device's FUSE daemon, which
/// delays each request differently, so the drive may see them in another order than issued).
fn record_closed_loop(
    d: &mut Hdd,
    depth: usize,
    n: u64,
    mut think: impl FnMut() -> Ns,
    mut path: impl FnMut() -> Ns,
    mut next: impl FnMut(u64) -> Rq,
) -> crate::Trace {
    use crate::TraceRq;
    let mut rqs: Vec<TraceRq> = Vec::new();
    // Completions known (from submit or advance) but not yet reached: (time, id).
    let mut known: Vec<(Ns, u64)> = Vec::new();
    // Issue times of the free slots.
    let mut due: Vec<Ns> = vec![0; depth];
    // Requests issued, on their way to the drive: (arrival, request).
    let mut on_path: Vec<(Ns, Rq)> = Vec::new();
    let mut done = Vec::new();
    let mut completed = 0u64;
    while completed < n {
        let issue = due.iter().copied().min().filter(|_| (rqs.len() as u64) < n);
        let first_known = known.iter().map(|k| k.0).min();
        let arrival = on_path.iter().map(|a| a.0).min();
        let event = d.next_event();
        let t = [event, first_known, arrival, issue]
            .into_iter()
            .flatten()
            .min()
            .expect("requests outstanding or to issue, so something to happen");
        if Some(t) == event {
            d.advance(t, &mut done);
            known.extend(done.drain(..).map(|(id, at)| (at, id)));
        } else if Some(t) == first_known {
            let k = known.iter().position(|k| k.0 == t).unwrap();
            let (_, id) = known.swap_remove(k);
            rqs[id as usize].complete_ns = Some(t);
            completed += 1;
            due.push(t + think());
        } else if Some(t) == arrival {
            let k = on_path.iter().position(|a| a.0 == t).unwrap();
            let (_, r) = on_path.swap_remove(k);
            if let Some(at) = d.submit(t, r) {
                known.push((at, r.id));
            }
        } else {
            let k = due.iter().position(|&x| x == t).unwrap();
            due.swap_remove(k);
            let id = rqs.len() as u64;
            let r = next(id);
            rqs.push(TraceRq {
                kind: r.kind,
                offset: r.offset,
                len: r.len,
                issue_ns: t,
                complete_ns: None,
            });
            on_path.push((t + path(), r));
        }
    }
    crate::Trace::new("closed loop", None, rqs)
}

/// Issue 31: fio's traces recorded on the real-time device (each request reaching the drive
/// 20 us to 1 ms after its issue, so not always in the order issued) cost what fio runs at on
/// the model itself, at every depth, sequential and random, under every think rule. Before a
/// request was taken as waiting for a number of completions (it was taken as waiting for the
/// one request whose recorded completion came last), a deep random queue serialised on the
/// model: the drive, its queue filled in another order than when recorded, served that request
/// later than recorded, every later issue waited for it and the queue drained (in real time,
/// 0.77, 0.66 and 0.61 of fio's IOPS at depths 8, 16 and 32).
#[test]
fn fio_traces_cost_the_jobs_rate_at_every_depth() {
    use crate::{cost_with, CostOptions, Think};
    let p = params();
    let size = 100u64 << 30;
    let spec = resolve("hdd-7200").unwrap();
    let job = |depth: usize, random: bool, path: &mut dyn FnMut() -> Ns| {
        let mut d = Hdd::new(&p, size).unwrap();
        let mut s = 5u64;
        if random {
            record_closed_loop(
                &mut d,
                depth,
                1500,
                || 20_000,
                path,
                |i| rq(i, RqKind::Read, (lcg(&mut s) % (size / 4096)) * 4096, 4096),
            )
        } else {
            // fio's 1 MiB reads as the loop device sends them: 512 KiB halves.
            record_closed_loop(
                &mut d,
                2 * depth,
                400,
                || 20_000,
                path,
                |i| rq(i, RqKind::Read, i << 19, 1 << 19),
            )
        }
    };
    let end = |t: &crate::Trace| {
        t.requests
            .iter()
            .filter_map(|r| r.complete_ns)
            .max()
            .unwrap()
    };
    for depth in [1usize, 2, 4, 8, 16, 32] {
        for random in [false, true] {
            let mut h = 3u64;
            let real_time = job(depth, random, &mut || 20_000 + lcg(&mut h) % 1_000_000);
            // The model alone (no path): what the trace costs without its recorded gaps; with
            // them (`recorded`, a floor under each issue), what it took when recorded.
            let alone = end(&job(depth, random, &mut || 0));
            for think in [Think::default(), Think::None, Think::Recorded] {
                let want = match think {
                    Think::Recorded => end(&real_time),
                    _ => alone,
                };
                let opts = CostOptions {
                    think,
                    ..CostOptions::default()
                };
                let c = cost_with(&real_time, spec.build(size).unwrap().as_mut(), opts);
                let ratio = want as f64 / c.total_ns as f64;
                let what = if random {
                    "random 4 KiB"
                } else {
                    "sequential 1 MiB"
                };
                eprintln!(
                    "{what}, depth {depth}, think {think}: costed rate / the job's {ratio:.3}"
                );
                assert!(
                    (ratio - 1.0).abs() < 0.10,
                    "{what} at depth {depth}, think {think}: costed {} ns against the job's \
                     {want} ns ({ratio:.3} of its rate)",
                    c.total_ns
                );
            }
        }
    }
}

/// Issue 33: a model file's zones (a table of that many) and heads (multiplied into sector
/// numbers) were unbounded: 10^12 zones filled the memory, 10^15 heads overflowed.
#[test]
fn heads_and_zones_beyond_any_disk_are_refused() {
    for (heads, zones) in [(4, 1_000_000_000_000), (1_000_000_000_000_000, 30)] {
        let p = HddParams {
            heads,
            zones,
            ..params()
        };
        let e = Hdd::new(&p, 1 << 30).err().unwrap();
        assert!(
            e.message.contains("at most 1024 heads and 10000 zones"),
            "{e}"
        );
    }
}

/// Issue 31, open: a cold `grep -r` of an aged tree reads small files in runs from several
/// places at once (a directory's files here, its inodes there), each read issued a fixed think
/// time after the one before completed. Read-ahead begun after a read in one place is cut short
/// by the next read elsewhere; a later read of the next file in the first place hits if the
/// stream got past it. The stream stops the moment the next command arrives, so under a fixed
/// think time it gets exactly think time x media rate at every interruption, and files are
/// whole blocks: moving the think time across a block's worth of media time (33 us for 4 KiB)
/// turns many misses into hits at once. This trace's device time is 3.79, 4.21, 3.56, 3.51,
/// 3.39, 3.54, 3.16 s at the think times below (33% apart). Ignored because it fails: letting
/// the stream read on until the seek must start (rotationally optimised seek initiation, US
/// patent 6,339,811) passes it (2.08-2.12 s) but doubles the cost's sensitivity to where the
/// layout sits on the platter (median 1.0% -> 2.4% over shifts of 4 KiB-1 MiB on 18 recorded
/// greps), which is what separates two replays' layouts; BENCHMARKS.md, "Costing determinism".
/// Run with `cargo test -p fsage-device -- --ignored interleaved`.
#[test]
#[ignore = "open (issue 31): the read-ahead a request finds after an interruption steps with the think time"]
fn the_cost_of_interleaved_small_reads_moves_smoothly_with_the_think_time() {
    use crate::{cost_with, CostOptions, Think, Trace, TraceRq};
    // 12 places 8 MiB apart, files of 4 or 8 KiB laid end to end in each; every read goes to a
    // place drawn with a bias to the first ones, one in five to an earlier file of that place
    // (at most 2 MiB back).
    let mut s = 2u64;
    let base = |r: u64| (1u64 << 27) + r * (8 << 20);
    let mut next: Vec<u64> = (0..12).map(base).collect();
    let mut reqs = Vec::new();
    for i in 0..3000u64 {
        let r = (lcg(&mut s) % 12).min(lcg(&mut s) % 12) as usize;
        let (offset, len) = if lcg(&mut s) % 100 < 20 && next[r] > base(r as u64) + (64 << 10) {
            let span = (next[r] - base(r as u64)).min(2 << 20) / 4096;
            (next[r] - (1 + lcg(&mut s) % span) * 4096, 4096)
        } else {
            let len = 4096 * (1 + lcg(&mut s) % 2);
            next[r] += len;
            (next[r] - len, len)
        };
        reqs.push(TraceRq {
            kind: RqKind::Read,
            offset,
            len,
            issue_ns: i * 70_000,
            complete_ns: Some(i * 70_000 + 20_000),
        });
    }
    let trace = Trace::new("interleaved", Some(1 << 30), reqs);
    let spec = resolve("hdd-7200").unwrap();
    let device_s = |think_us: u64| {
        let opts = CostOptions {
            think: Think::Fixed(think_us * 1000),
            ..CostOptions::default()
        };
        let r = cost_with(&trace, spec.build(1 << 30).unwrap().as_mut(), opts);
        // What the disk took: the think time the rule put in taken out.
        (r.total_ns - r.think_ns) as f64 / 1e9
    };
    let costs: Vec<(u64, f64)> = [25, 30, 40, 50, 60, 75, 100]
        .iter()
        .map(|&us| (us, device_s(us)))
        .collect();
    let lo = costs.iter().map(|c| c.1).fold(f64::MAX, f64::min);
    let hi = costs.iter().map(|c| c.1).fold(0.0, f64::max);
    assert!(
        hi / lo < 1.05,
        "device time by think time (us, s): {costs:?}"
    );
}

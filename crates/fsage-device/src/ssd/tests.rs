use super::*;
use crate::models::resolve;

const K4: u64 = 4096;

/// A small drive: 2 channels x 2 dies, 64-page blocks, the timings of `ssd-sata`.
fn params(op: f64, buffer: u64) -> SsdParams {
    SsdParams {
        capacity: None,
        over_provisioning: op,
        page_size: K4,
        pages_per_block: 64,
        channels: 2,
        dies_per_channel: 2,
        read_ns: 40_000,
        program_ns: 200_000,
        erase_ns: 2_000_000,
        channel_rate: 400_000_000,
        interface_rate: 550_000_000,
        overhead_ns: 20_000,
        write_buffer: buffer,
        gc_free_blocks: 2,
        full_capacity: None,
        compression: None,
        compression_unit: 0,
        unseen_data_ratio: 1.0,
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

/// A tiny deterministic generator (xorshift), so the tests need no seed plumbing.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Write amplification in steady state: the drive filled in order, then `warm` times its
/// capacity of uniformly random page writes, then measured over `measure` times its capacity.
fn steady_wa(op: f64, user_pages: u64, warm: u64, measure: u64) -> (f64, f64) {
    // Two dies of over 2,000 blocks: the analytic figure is for many blocks; with tens of
    // blocks per die the free blocks collection keeps eat into the over-provisioning (8 dies of
    // 69 blocks at 7%: 10.9 against 6.9).
    let p = SsdParams {
        pages_per_block: 64,
        channels: 2,
        dies_per_channel: 1,
        ..params(op, 0)
    };
    let mut ftl = Ftl::new(p.geometry(user_pages * K4).unwrap()).unwrap();
    let n = ftl.geometry().user_pages;
    for l in 0..n {
        ftl.write(l);
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..warm * n as u64 {
        ftl.write(rng.below(n as u64) as u32);
    }
    ftl.reset_counters();
    for _ in 0..measure * n as u64 {
        ftl.write(rng.below(n as u64) as u32);
    }
    let c = ftl.counters();
    let wa = (c.host_pages + c.gc_copies) as f64 / c.host_pages as f64;
    let g = ftl.geometry();
    (
        wa,
        greedy_write_amplification(g.physical_pages(), g.user_pages as u64),
    )
}

#[test]
fn random_writes_settle_at_the_greedy_write_amplification() {
    for op in [0.07, 0.125, 0.25] {
        let (wa, analytic) = steady_wa(op, 1 << 18, 3, 2);
        eprintln!("over-provisioning {op}: write amplification {wa:.3}, analytic {analytic:.3}");
        assert!(
            (wa / analytic - 1.0).abs() < 0.10,
            "op {op}: {wa:.3} against {analytic:.3}"
        );
    }
}

#[test]
fn sequential_overwrites_amplify_nothing() {
    let p = params(0.07, 0);
    let mut ftl = Ftl::new(p.geometry(4096 * K4).unwrap()).unwrap();
    let n = ftl.geometry().user_pages;
    for _ in 0..4 {
        for l in 0..n {
            ftl.write(l);
        }
    }
    let c = ftl.counters();
    assert!(c.erases > 0, "{c:?}");
    assert_eq!(c.gc_copies, 0, "{c:?}");
}

#[test]
fn a_random_read_costs_overhead_page_read_channel_and_interface() {
    let p = params(0.07, 0);
    let mut d = Ssd::new(&p, 64 << 20).unwrap();
    d.submit(0, rq(0, RqKind::Write, 0, 1 << 20)).unwrap();
    let t = 1_000_000_000;
    let done = d.submit(t, rq(1, RqKind::Read, 40 * K4, K4)).unwrap();
    let expect = 20_000 + 40_000 + 10_240 + 7_447;
    assert_eq!(done - t, expect);
    // A page never written costs no flash read.
    let done = d.submit(2 * t, rq(2, RqKind::Read, 8 << 20, K4)).unwrap();
    assert_eq!(done - 2 * t, 20_000 + 7_447);
    assert_eq!(d.stats().requests.reads, 2);
}

#[test]
fn reads_in_flight_overlap_across_dies_and_queue_on_one() {
    let p = params(0.07, 0);
    let mut d = Ssd::new(&p, 64 << 20).unwrap();
    // Pages 0..4 land on dies 0, 1, 2, 3 in turn.
    d.submit(0, rq(0, RqKind::Write, 0, 16 * K4)).unwrap();
    let t = 1_000_000_000;
    let spread: Vec<Ns> = (0..4)
        .map(|i| d.submit(t, rq(i, RqKind::Read, i * K4, K4)).unwrap() - t)
        .collect();
    // Pages 0, 4, 8, 12 are all on die 0.
    let t2 = 2 * t;
    let same: Vec<Ns> = (0..4)
        .map(|i| d.submit(t2, rq(i, RqKind::Read, 4 * i * K4, K4)).unwrap() - t2)
        .collect();
    let (s, c) = (spread.iter().max().unwrap(), same.iter().max().unwrap());
    // Four dies: a read time plus the shared channel and interface; one die: four read times.
    assert!(*s < 120_000, "{spread:?}");
    assert!(*c > 4 * 40_000, "{same:?}");
}

/// A file read whole in one request against the same file in 4 KiB pieces (FragPicker, SOSP
/// '21: request splitting; Jun et al., FAST '24: die collisions): the pieces cost a command each
/// and, written at different times, collide on dies.
#[test]
fn a_fragmented_file_costs_request_splitting_and_die_collisions() {
    let p = SsdParams {
        channels: 4,
        dies_per_channel: 4,
        ..params(0.07, 0)
    };
    let mut d = Ssd::new(&p, 256 << 20).unwrap();
    // The whole file: 256 pages written in one go, striped over the 16 dies.
    d.submit(0, rq(0, RqKind::Write, 0, 1 << 20)).unwrap();
    // The fragmented one: its pages written one at a time among other writes, so each lands on
    // whatever die the stripe had reached (here, always die 0: 15 other pages between).
    let mut t: Ns = 1_000_000_000;
    for i in 0..256u64 {
        d.submit(t, rq(1, RqKind::Write, (16 << 20) + i * K4, K4))
            .unwrap();
        for j in 0..15u64 {
            d.submit(t, rq(2, RqKind::Write, (64 << 20) + (i * 15 + j) * K4, K4))
                .unwrap();
        }
        t += 10_000_000;
    }
    let t0 = 10 * 1_000_000_000;
    let whole = d.submit(t0, rq(3, RqKind::Read, 0, 1 << 20)).unwrap() - t0;
    // The fragmented file read as the file system would: a request per piece, one at a time.
    let mut now = 20 * 1_000_000_000;
    let start = now;
    for i in 0..256u64 {
        now = d
            .submit(now, rq(4, RqKind::Read, (16 << 20) + i * K4, K4))
            .unwrap();
    }
    let pieces = now - start;
    // Even read in one request, the pieces on one die take 256 read times.
    let t1 = 30 * 1_000_000_000;
    let collided = d
        .submit(t1, rq(5, RqKind::Read, 16 << 20, 1 << 20))
        .unwrap()
        - t1;
    eprintln!(
        "1 MiB file: whole {:.2} ms, 256 requests {:.2} ms, one request over one die {:.2} ms",
        whole as f64 / 1e6,
        pieces as f64 / 1e6,
        collided as f64 / 1e6
    );
    assert!(pieces > 5 * whole, "{pieces} against {whole}");
    assert!(collided > 4 * whole, "{collided} against {whole}");
}

#[test]
fn the_write_buffer_absorbs_a_burst_and_then_drains_at_program_speed() {
    // 16 pages of buffer, 4 dies: a page program takes 200 us, so 4 dies drain a page per 50 us.
    let p = params(0.07, 16 * K4);
    let mut d = Ssd::new(&p, 64 << 20).unwrap();
    let first = d.submit(0, rq(0, RqKind::Write, 0, 16 * K4)).unwrap();
    assert!(first < 200_000, "{first}: the burst fits the buffer");
    let second = d
        .submit(first, rq(1, RqKind::Write, 16 * K4, 16 * K4))
        .unwrap();
    assert!(
        second - first > 600_000,
        "{}: 16 more pages wait for 4 rounds of programs",
        second - first
    );
    let flush = d.submit(second, rq(2, RqKind::Flush, 0, 0)).unwrap();
    assert!(
        flush > second,
        "a flush waits for the buffered pages' programs"
    );
    // A read of a page still in the buffer is served from DRAM.
    let r = d.submit(second, rq(3, RqKind::Read, 31 * K4, K4)).unwrap();
    assert_eq!(r - second, 20_000 + 7_447);
}

#[test]
fn write_through_waits_for_the_program() {
    let p = params(0.07, 0);
    let mut d = Ssd::new(&p, 64 << 20).unwrap();
    let done = d.submit(0, rq(0, RqKind::Write, 0, K4)).unwrap();
    // Overhead, the interface, the channel, the program.
    assert_eq!(done, 20_000 + 7_447 + 10_240 + 200_000);
}

#[test]
fn discarding_the_whole_drive_brings_fresh_speed_back() {
    let p = params(0.07, 0);
    let size = 32 << 20;
    let mut d = Ssd::new(&p, size).unwrap();
    let pages = size / K4;
    let mut rng = Rng(7);
    let mut run = |d: &mut Ssd, n: u64| {
        let t0 = d.last_program_end;
        let mut now = t0;
        for _ in 0..n {
            now = d
                .submit(now, rq(0, RqKind::Write, rng.below(pages) * K4, K4))
                .unwrap();
        }
        (now - t0) as f64 / n as f64
    };
    let fresh = run(&mut d, pages / 2);
    run(&mut d, 3 * pages);
    let aged = run(&mut d, pages / 2);
    let t = d
        .submit(d.last_program_end, rq(0, RqKind::Discard, 0, size))
        .unwrap();
    // The drive idles while it erases what was discarded.
    d.last_program_end = t + 1_000_000_000;
    let trimmed = run(&mut d, pages / 2);
    eprintln!("random 4 KiB writes at depth 1: fresh {fresh:.0} ns, aged {aged:.0}, after a full discard {trimmed:.0}");
    assert!(aged > 2.0 * fresh, "{aged} against {fresh}");
    assert!(
        (trimmed / fresh - 1.0).abs() < 0.05,
        "{trimmed} against {fresh}"
    );
    assert!(d.counters().write_amplification().unwrap() > 1.5);
}

#[test]
fn the_built_in_ssds_read_and_describe_themselves() {
    for name in ["ssd-sata", "ssd-nvme"] {
        let m = resolve(name).unwrap();
        let d = m.build(1 << 30).unwrap();
        assert!(
            d.describe().contains("over-provisioned"),
            "{}",
            d.describe()
        );
        assert!(m.params.values().all(|p| !p.source.is_empty()));
    }
    let e = resolve("ssd-sata")
        .unwrap()
        .build(1 << 30)
        .map(|_| ())
        .and_then(|_| {
            crate::ModelSpec::parse(
                &include_str!("../../models/ssd-sata.toml").replace("0.07", "0.95"),
                "x.toml",
            )
            .map(|_| ())
        })
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("x.toml:") && e.contains("over_provisioning"),
        "{e}"
    );
}

/// `n` requests made by `next` kept `qd` in flight (a closed loop, as fio's libaio engine
/// does): the mean time per request and the requests per second.
fn closed_loop(d: &mut Ssd, qd: usize, n: u64, mut next: impl FnMut(u64) -> Rq) -> (f64, f64) {
    let mut in_flight = BinaryHeap::new();
    // Start once the drive is idle (its dies, channels and interface free), so that what one
    // phase left queued does not count in the next.
    let start = d
        .die_free
        .iter()
        .chain(&d.channel_free)
        .copied()
        .max()
        .unwrap_or(0)
        .max(d.interface_free)
        .max(d.last_program_end);
    let (mut now, mut total) = (start, 0u64);
    for i in 0..n {
        if in_flight.len() == qd {
            let Reverse((done, issued)): Reverse<(Ns, Ns)> = in_flight.pop().unwrap();
            now = done;
            total += done - issued;
        }
        let done = d.submit(now, next(i)).unwrap();
        in_flight.push(Reverse((done, now)));
    }
    while let Some(Reverse((done, issued))) = in_flight.pop() {
        now = now.max(done);
        total += done - issued;
    }
    (
        total as f64 / n as f64,
        n as f64 / ((now - start) as f64 / 1e9),
    )
}

/// The built-in drives' figures in simulated time, on a 32 GiB drive (a benchmark, for
/// BENCHMARKS.md: `cargo test --release -p fsage-device ssd_figures -- --ignored --nocapture`),
/// each checked against what its parameters imply.
#[test]
#[ignore]
fn ssd_figures() {
    for name in ["ssd-sata", "ssd-nvme"] {
        let m = resolve(name).unwrap();
        let crate::ModelKind::Ssd(p) = &m.kind else {
            panic!("{name} is an SSD")
        };
        let size: u64 = 32 << 30;
        let pages = size / K4;
        let mut d = Ssd::new(p, size).unwrap();
        // Sequential 1 MiB writes fill it (and measure the sequential write rate).
        let (_, w_iops) = closed_loop(&mut d, 4, size >> 20, |i| {
            rq(i, RqKind::Write, i << 20, 1 << 20)
        });
        let seq_write = w_iops * (1 << 20) as f64 / 1e6;
        let mut rng = Rng(12345);
        let (r1, _) = closed_loop(&mut d, 1, 20_000, |i| {
            rq(i, RqKind::Read, rng.below(pages) * K4, K4)
        });
        let (_, r32) = closed_loop(&mut d, 32, 100_000, |i| {
            rq(i, RqKind::Read, rng.below(pages) * K4, K4)
        });
        let (_, seq_read) = closed_loop(&mut d, 4, size >> 20, |i| {
            rq(i, RqKind::Read, i << 20, 1 << 20)
        });
        // Random 4 KiB writes at depth 32, 3 times the capacity: the last third is steady.
        let (_, _) = closed_loop(&mut d, 32, 2 * pages, |i| {
            rq(i, RqKind::Write, rng.below(pages) * K4, K4)
        });
        let before = d.counters();
        let (_, w32) = closed_loop(&mut d, 32, pages, |i| {
            rq(i, RqKind::Write, rng.below(pages) * K4, K4)
        });
        let after = d.counters();
        let wa = (after.programs - before.programs) as f64
            / (after.host_pages - before.host_pages) as f64;
        let g = d.ftl().geometry();
        let analytic = greedy_write_amplification(g.physical_pages(), g.user_pages as u64);
        eprintln!(
            "{name}: random 4 KiB read depth 1 {:.1} us, depth 32 {:.0} IOPS; sequential 1 MiB \
             read {:.0} MB/s, write {:.0} MB/s; random 4 KiB write depth 32 in steady state {:.0} \
             IOPS, write amplification {wa:.2} (greedy analytic {analytic:.2})",
            r1 / 1e3,
            r32,
            seq_read * (1 << 20) as f64 / 1e6,
            seq_write,
            w32
        );
        // Depth 1: overhead, a page read, the channel and the interface.
        let one = p.overhead_ns
            + p.read_ns
            + K4 * 1_000_000_000 / p.channel_rate
            + K4 * 1_000_000_000 / p.interface_rate;
        assert!((r1 / one as f64 - 1.0).abs() < 0.02, "{r1} against {one}");
        // Depth 32 reads: many dies at once, up to what the interface carries.
        let dies = (p.channels * p.dies_per_channel) as f64;
        // Depth 32 reads: many dies at once (a die holds a page until its channel takes it),
        // up to what the interface carries. 32 requests over the dies at random leave some
        // idle: a closed network of 32 requests on M dies keeps a share 1 - (M-1)/(32+M-1)
        // busy.
        let per_page = p.read_ns as f64 + (K4 * 1_000_000_000 / p.channel_rate) as f64;
        let busy = 1.0 - (dies - 1.0) / (32.0 + dies - 1.0);
        let cap = (busy * dies * 1e9 / per_page).min(p.interface_rate as f64 / K4 as f64);
        assert!(r32 > 0.8 * cap && r32 <= cap * 1.05, "{r32} against {cap}");
        assert!(
            (wa / analytic - 1.0).abs() < 0.10,
            "{wa} against {analytic}"
        );
    }
}

/// Random 4 KiB reads at depth 32 scale with the dies: `ssd-sata`'s timings on 1, 2, 4 and 8
/// dies, one per channel (so neither the channels nor, below 8 dies, the interface limit them),
/// each near dies / (read + channel transfer); and the same with 500 us page reads.
/// `scripts/bench-ssd-fio` asks the same of a real-time device (BENCHMARKS.md, "The flash SSD
/// model in real time").
#[test]
fn random_reads_at_depth_32_scale_with_the_dies() {
    for read_ns in [40_000, 500_000] {
        reads_at_depth_32_scale(read_ns);
    }
}

fn reads_at_depth_32_scale(read_ns: u64) {
    let mut iops = Vec::new();
    for dies in [1u64, 2, 4, 8] {
        let p = SsdParams {
            channels: dies,
            dies_per_channel: 1,
            read_ns,
            ..params(0.07, 0)
        };
        let size = 64 << 20;
        let mut d = Ssd::new(&p, size).unwrap();
        d.precondition(0.0, 1).unwrap();
        let mut rng = Rng(777);
        let pages = size / K4;
        let (_, r32) = closed_loop(&mut d, 32, 20_000, |i| {
            rq(i, RqKind::Read, rng.below(pages) * K4, K4)
        });
        let n = dies as f64;
        let per_page = (p.read_ns + K4 * 1_000_000_000 / p.channel_rate) as f64;
        // At most every die busy; at least the share a closed network of 32 requests over the
        // dies at random keeps busy, 1 - (n-1)/(32+n-1) (the dies here take requests in arrival
        // order, which keeps them busier than that).
        let iface = p.interface_rate as f64 / K4 as f64;
        let all = (n * 1e9 / per_page).min(iface);
        let busy = 1.0 - (n - 1.0) / (32.0 + n - 1.0);
        let least = (busy * n * 1e9 / per_page).min(iface);
        eprintln!(
            "read {} us, {dies} dies: {r32:.0} IOPS at depth 32 (every die busy: {all:.0})",
            read_ns / 1000
        );
        assert!(
            r32 > 0.95 * least && r32 <= 1.01 * all,
            "{dies} dies: {r32} against {least}..{all}"
        );
        iops.push(r32);
    }
    assert!(iops.windows(2).all(|w| w[1] > 1.7 * w[0]), "{iops:?}");
}

#[test]
fn preconditioning_ages_the_drive_and_its_state_survives_a_save() {
    let p = params(0.07, 0);
    let mut d = Ssd::new(&p, 32 << 20).unwrap();
    let said = d.precondition(2.0, 9).unwrap();
    assert!(said.contains("write amplification"), "{said}");
    assert_eq!(d.ftl().mapped_pages(), (32 << 20) / K4);
    let saved = d.save_state().unwrap();
    let mut e = Ssd::new(&p, 32 << 20).unwrap();
    e.load_state(&saved).unwrap();
    assert_eq!(e.ftl(), d.ftl());
    // An aged drive writes slower than a fresh one from the first write on.
    let mut fresh = Ssd::new(&p, 32 << 20).unwrap();
    let mut rng = Rng(3);
    let (mut ta, mut tf) = (0, 0);
    for _ in 0..2000 {
        let o = rng.below((32 << 20) / K4) * K4;
        ta = e.submit(ta, rq(0, RqKind::Write, o, K4)).unwrap();
        tf = fresh.submit(tf, rq(0, RqKind::Write, o, K4)).unwrap();
    }
    assert!(ta > 2 * tf, "aged {ta} fresh {tf}");
    // A drive of another size refuses the state.
    let mut other = Ssd::new(&p, 64 << 20).unwrap();
    assert!(other
        .load_state(&saved)
        .unwrap_err()
        .message
        .contains("shape"));
    assert!(d.precondition(-1.0, 1).is_err());
}

/// Sequential overwrites of a drive left by random writes amplify at first (the victims hold the
/// random writes' scattered valid pages, and greedy collection copies them into the blocks the
/// sequential pages go to), and less with every pass, until the drive is laid out in order again:
/// what `scripts/bench-ssd-fio` sees (BENCHMARKS.md, "The flash SSD model in real time").
#[test]
fn sequential_passes_after_random_writes_recover_to_no_amplification() {
    let mut ftl = Ftl::new(params(0.25, 0).geometry((1 << 16) * K4).unwrap()).unwrap();
    let n = ftl.geometry().user_pages;
    for l in 0..n {
        ftl.write(l);
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..2 * n as u64 {
        ftl.write(rng.below(n as u64) as u32);
    }
    let mut was = Vec::new();
    for _ in 0..4 {
        ftl.reset_counters();
        for l in 0..n {
            ftl.write(l);
        }
        let c = ftl.counters();
        was.push((c.host_pages + c.gc_copies) as f64 / c.host_pages as f64);
    }
    eprintln!("write amplification of sequential passes after random writes: {was:.3?}");
    assert!(was[0] > 1.5, "{was:?}");
    assert!(was.windows(2).all(|w| w[1] <= w[0]), "{was:?}");
    assert_eq!(was[3], 1.0, "{was:?}");
}

/// Issue 33: a model file could ask for a drive whose map takes more memory than the machine has
/// (an 8 TiB drive of 4 KiB pages: 17 GiB; the plan that built it was killed) or whose shape
/// overflows (2^32 channels x 2^32 dies); both are refused when the drive is built, at once.
#[test]
fn a_drive_too_large_for_memory_or_arithmetic_is_refused() {
    let p = params(0.07, 0);
    let e = Ssd::new(&p, 8 << 40).err().unwrap();
    assert!(e.message.contains("MiB of memory"), "{e}");
    let big = SsdParams {
        channels: 1 << 32,
        dies_per_channel: 1 << 32,
        ..params(0.07, 0)
    };
    let e = Ssd::new(&big, 1 << 30).err().unwrap();
    assert!(e.message.contains("more than this model handles"), "{e}");
    // A 256 GiB drive of the same shape is within the bound.
    let g = p.geometry(256 << 30).unwrap();
    assert!(g.check().is_ok() && g.memory_bytes() < ftl::MAX_FTL_BYTES);
}

/// The S510's compression: a page of zeros takes 5 of 32 slots (0.156 of a flash page, the
/// SF-22xx's measured 0.14 rounded up), random data a whole page; the real-time device shows
/// the data (`submit_data`), a write without it is taken as `unseen_data_ratio` says.
#[test]
fn a_compressing_drive_programs_what_the_data_compresses_to() {
    let spec = resolve("adata-s510-120g@1GiB").unwrap();
    let crate::ModelKind::Ssd(p) = &spec.kind else {
        unreachable!()
    };
    assert_eq!(p.slots_per_page(), 32);
    assert_eq!((p.slots_for(0.0), p.slots_for(1.0)), (5, 32));
    assert_eq!(compressed_ratio(&[0u8; 4096]), 0.0);
    let mut x = 1u64;
    let noise: Vec<u8> = (0..4096 * 64)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    assert!(compressed_ratio(&noise[..4096]) > 0.99);
    let text = "fsage ages file systems and measures them. ".repeat(100);
    let r = compressed_ratio(&text.as_bytes()[..4096]);
    assert!(r > 0.0 && r < 0.2, "{r}");
    let programs = |data: Option<&[u8]>, unseen: f64| {
        let mut q = p.clone();
        q.unseen_data_ratio = unseen;
        let mut d = Ssd::new(&q, 1 << 30).unwrap();
        assert!(d.wants_data());
        let mut t = 0;
        for i in 0..256u64 {
            let w = rq(i, RqKind::Write, i * 64 * K4, 64 * K4);
            t = match data {
                Some(b) => d.submit_data(t, w, b),
                None => d.submit(t, w),
            }
            .unwrap();
        }
        let c = d.counters();
        assert_eq!(c.host_pages, 256 * 64);
        c.programs as f64 / c.host_pages as f64
    };
    let zeros = vec![0u8; 64 * 4096];
    assert!((programs(Some(&zeros), 1.0) - 5.0 / 32.0).abs() < 1e-3);
    assert!((programs(Some(&noise), 0.0) - 1.0).abs() < 1e-3);
    // Without the data: the model's assumption decides.
    assert!((programs(None, 1.0) - 1.0).abs() < 1e-3);
    assert!((programs(None, 0.0) - 5.0 / 32.0).abs() < 1e-3);
    // A drive without compression ignores the data.
    let plain = Ssd::new(&params(0.07, 0), 1 << 26).unwrap();
    assert!(!plain.wants_data());
}

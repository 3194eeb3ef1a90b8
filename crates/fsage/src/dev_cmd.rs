//! `fsage dev ...`: block devices of chosen latency, on top of `fsage-slowdev`.

use crate::exit::{bad_input, CmdError, CmdResult};
use clap::{Args, Subcommand};
use fsage_report::{export, Json, Text};
use fsage_slowdev::{Backing, DeviceSpec, Latencies, Registry, SlowDevice};
use fsage_units::{format_latency, parse_bandwidth, parse_latency, parse_size};
use std::path::PathBuf;

#[derive(Subcommand, Debug)]
pub enum DevCmd {
    /// Make a block device of chosen latency, or running a device model (a FUSE daemon under a
    /// direct-I/O loop device), and print it (e.g. /dev/loop3).
    Create(CreateArgs),
    /// Every device fsage made: latencies or model, backing file, requests served, state.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Change a live device's latencies (no remount; requests in flight keep theirs). A device
    /// running a model other than a fixed latency is refused.
    Set(SetArgs),
    /// Requests and bytes by kind, the latency each got and how late against the device's
    /// timing (percentiles), the model's counters (seeks, cache hits...), the kernel's counts.
    Stats {
        /// The device: /dev/loopN, loopN or its name (sd0).
        dev: String,
        #[arg(long)]
        json: bool,
    },
    /// Detach the loop device, unmount the FUSE file system, stop the daemon.
    Destroy {
        /// The device: /dev/loopN, loopN or its name. Or --all.
        #[arg(required_unless_present = "all")]
        dev: Option<String>,
        /// Every device fsage made.
        #[arg(long, conflicts_with = "dev")]
        all: bool,
        /// Destroy a device that is mounted: the mounted file system's I/O then fails.
        #[arg(long)]
        force: bool,
    },
    /// Floor, accuracy and parallelism of slow devices on a scratch image (BENCHMARKS.md).
    Bench(BenchArgs),
    /// The built-in device models: each parameter with its value and its source.
    Models {
        #[arg(long)]
        json: bool,
    },
    /// What a recorded trace (git-age's IMAGE.traces/*.json) costs on a device model, in
    /// simulated time: total time, response times, seeks, cache hits. The timing rule is in
    /// crates/fsage-device/src/cost.rs.
    Cost {
        /// A trace file.
        trace: PathBuf,
        /// A built-in model (`fsage dev models`), a model file, or a latency (100us).
        #[arg(long)]
        model: String,
        /// The host's request path, each way together, added to every completion the issuer
        /// sees: to predict a run on fsage's real-time slow device, its floor (a trace of the
        /// same work on a `--latency 0` device: the block layer's mean service time). Default 0.
        #[arg(long, value_name = "LAT", value_parser = parse_latency, default_value = "0")]
        host_path: u64,
        /// What stands in for the issuer's think time before each request that waited for
        /// another: fixed:DURATION (default fixed:50us), median (the trace's median recorded
        /// gap), none (the device alone), or recorded (the trace's wall-clock gaps: to predict a
        /// run recorded on the same host).
        #[arg(long, value_name = "RULE", value_parser = crate::util::parse_think)]
        think: Option<fsage_device::Think>,
        /// How a model with a drive state (an SSD) reads pages it never saw written: lba-order
        /// (default: as data written in logical order from erased, since the trace reads data
        /// some history wrote) or free (zeros without flash, as a real drive answers).
        #[arg(long, value_name = "RULE", default_value = "lba-order", value_parser = parse_unwritten)]
        unwritten_reads: fsage_device::UnwrittenReads,
        /// Start the model's drive from this saved state (an image's IMAGE.ftl, or a state
        /// git-age kept in IMAGE.drives/) instead of an erased drive. SSD models only.
        #[arg(long, value_name = "FILE")]
        drive_state: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Put a device's drive in steady state, as SSD benchmarks do: the whole device written in
    /// order, then N times its capacity written at random, in the model's state at memory speed
    /// (no I/O, no data changes). SSD models only.
    Precondition {
        /// The device: /dev/loopN, loopN or its name.
        dev: String,
        /// Random overwrites after the sequential fill, in capacities.
        #[arg(long, default_value_t = 2.0)]
        overwrites: f64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// An SSD model's write amplification in simulated time: the span written in order, then
    /// overwritten at random (4 KiB, uniform) --warm spans at memory speed, then --measured spans
    /// of the same at --queue-depth in simulated time. Compares a drive with its scaled-down
    /// copy (`MODEL@SIZE`): BENCHMARKS.md.
    Wa {
        /// A built-in model, a model file, or either scaled (`crucial-m4-64g@1GiB`).
        #[arg(long)]
        model: String,
        /// The device's size (default: the model's capacity).
        #[arg(long, value_parser = parse_size)]
        size: Option<u64>,
        /// Bytes written from the device's start (a file system's size); default the device.
        /// `N%` for a share of the device.
        #[arg(long, value_name = "SIZE|N%")]
        span: Option<String>,
        #[arg(long, default_value_t = 2.0)]
        warm: f64,
        #[arg(long, default_value_t = 1.0)]
        measured: f64,
        #[arg(long, default_value_t = 32)]
        queue_depth: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// On a compressing model (adata-s510-120g): what the written data compresses to, 0
        /// (zeros) to 1 (incompressible); default the model's `unseen_data_ratio`.
        #[arg(long, value_name = "R")]
        data_ratio: Option<f64>,
        #[arg(long)]
        json: bool,
    },
    /// A model's mean time per random read of each size at queue depth 1, in simulated time (the
    /// effective-bandwidth-against-read-size curve Conway et al. measured on their drives).
    ReadCurve {
        #[arg(long)]
        model: String,
        /// The device's size (default: the model's capacity, else 1 GiB).
        #[arg(long, value_parser = parse_size)]
        size: Option<u64>,
        /// Read sizes, comma-separated.
        #[arg(long, value_delimiter = ',', value_parser = parse_size,
              default_value = "4KiB,64KiB,256KiB,1MiB,4MiB,16MiB,256MiB")]
        sizes: Vec<u64>,
        /// Reads of each size.
        #[arg(long, default_value_t = 1000)]
        reads: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long)]
        json: bool,
    },
    /// The daemon of one device (started by `dev create`, not by hand).
    #[command(hide = true)]
    Serve { dir: PathBuf },
}

#[derive(Args, Debug)]
pub struct LatencyArgs {
    /// Latency of every request (reads, writes, flushes): 0, 250ns, 10us, 1ms, 2.5ms... (a unit is
    /// required; at most 60s).
    #[arg(long, value_name = "LAT", value_parser = parse_latency)]
    pub latency: Option<u64>,
    /// Latency of reads (overrides --latency).
    #[arg(long, value_name = "LAT", value_parser = parse_latency)]
    pub read_latency: Option<u64>,
    /// Latency of writes and discards (overrides --latency).
    #[arg(long, value_name = "LAT", value_parser = parse_latency)]
    pub write_latency: Option<u64>,
    /// Latency of a flush (an fsync reaching the device). Default: the write latency.
    #[arg(long, value_name = "LAT", value_parser = parse_latency)]
    pub flush_latency: Option<u64>,
    /// Transfer rate added per request as bytes / bandwidth (e.g. 500MiB/s, 200MB/s).
    #[arg(long, value_name = "BW", value_parser = parse_bandwidth)]
    pub bandwidth: Option<u64>,
}

#[derive(Args, Debug)]
pub struct CreateArgs {
    /// Backing image file (an aged image works as is; kept after destroy). With --size, a new
    /// sparse image of that size is made here.
    #[arg(long, required_unless_present = "size")]
    pub image: Option<PathBuf>,
    /// Size of a new sparse image: in /dev/shm (removed by destroy) unless --image names it.
    #[arg(long, value_parser = parse_size)]
    pub size: Option<u64>,
    #[command(flatten)]
    pub lat: LatencyArgs,
    /// A device model instead of latencies: a built-in (`fsage dev models`: hdd-7200), a model
    /// file (crates/fsage-device/models/*.toml shows the format), or a latency (100us). A size
    /// larger than memory is fine: a sparse image holds only the blocks written.
    #[arg(
        long,
        value_name = "NAME|FILE",
        conflicts_with_all = [
            "latency",
            "read_latency",
            "write_latency",
            "flush_latency",
            "bandwidth",
            "queue_depth"
        ]
    )]
    pub model: Option<String>,
    /// With an SSD model: start from an erased drive even when a drive state is saved beside
    /// the image (IMAGE.ftl, written when a device on it is destroyed).
    #[arg(long, requires = "model")]
    pub fresh_ftl: bool,
    /// At most N requests in service at once; others wait (default: no limit, no queuing).
    #[arg(long)]
    pub queue_depth: Option<u32>,
    /// Threads reading FUSE requests in the daemon.
    #[arg(long, default_value_t = 4)]
    pub threads: usize,
    /// Do not run the daemon's threads SCHED_FIFO (timing then suffers when the CPUs are busy).
    #[arg(long)]
    pub no_realtime: bool,
    /// Print the device's record as JSON instead of its path.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct SetArgs {
    /// The device: /dev/loopN, loopN or its name.
    pub dev: String,
    #[command(flatten)]
    pub lat: LatencyArgs,
    /// Remove the bandwidth limit.
    #[arg(long, conflicts_with = "bandwidth")]
    pub no_bandwidth: bool,
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Scratch image size (in /dev/shm).
    #[arg(long, default_value = "256MiB", value_parser = parse_size)]
    pub size: u64,
    /// Time per measurement (longer for the 10 ms point).
    #[arg(long, default_value = "3s", value_name = "DUR", value_parser = crate::util::positive_duration)]
    pub duration: std::time::Duration,
    /// Latencies of the accuracy table.
    #[arg(long, value_delimiter = ',', default_value = "0,10us,100us,1ms,10ms", value_parser = parse_latency)]
    pub latencies: Vec<u64>,
    /// Run the measuring threads SCHED_FIFO (like `chrt -f 20 fio ...`).
    #[arg(long)]
    pub realtime: bool,
    /// Write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// The latencies asked for, on top of `base`.
fn latencies(a: &LatencyArgs, base: Latencies) -> (Latencies, bool) {
    let change = fsage_slowdev::LatencyChange {
        all: a.latency,
        read: a.read_latency,
        write: a.write_latency,
        flush: a.flush_latency,
    };
    (change.apply(base), !change.is_empty())
}

pub fn run(cmd: DevCmd) -> CmdResult {
    let registry = Registry::new(Registry::default_root());
    match cmd {
        DevCmd::Serve { dir } => {
            fsage_slowdev::serve(&dir)?;
        }
        DevCmd::Create(a) => {
            let (l, any) = latencies(&a.lat, Latencies::default());
            let model = a.model.as_deref().map(fsage_device::resolve).transpose()?;
            if let Some(m) = model.as_ref().filter(|m| a.fresh_ftl && !m.keeps_state()) {
                return Err(bad_input(format!(
                    "--fresh-ftl: model {} keeps no drive state to start afresh (only SSD models \
                     have one)",
                    m.name
                )));
            }
            if !any && model.is_none() {
                return Err(bad_input(
                    "give --latency, or --read-latency and --write-latency (0 for none), or \
                     --model",
                ));
            }
            let backing = match (a.image, a.size) {
                (Some(p), None) => Backing::Image(p),
                (Some(path), Some(size)) => Backing::NewImage { path, size },
                (None, Some(size)) => Backing::Scratch { size },
                (None, None) => return Err(bad_input("give --image FILE or --size SIZE")),
            };
            let mut spec = DeviceSpec::new(backing, 0);
            spec.latencies = l;
            spec.bandwidth = a.lat.bandwidth;
            spec.queue_depth = a.queue_depth;
            spec.threads = a.threads;
            spec.realtime = !a.no_realtime;
            spec.registry = registry.root().to_path_buf();
            spec.model = model;
            spec.fresh_state = a.fresh_ftl;
            let dev = SlowDevice::create(&spec)?;
            if let Some(size) = a.size {
                if let Some(note) = fsage_slowdev::sparse_note(&dev.record().backing_file, size) {
                    eprintln!("{note}");
                }
            }
            if a.json {
                print!("{}", export(&Json, dev.record()));
            } else {
                println!("{}", dev.path().display());
            }
        }
        DevCmd::List { json } => {
            let devs = fsage_slowdev::list_devices(&registry);
            if json {
                print!("{}", export(&Json, &devs));
            } else {
                print!("{}", export(&Text, &devs[..]));
            }
        }
        DevCmd::Set(a) => {
            let mut dev = SlowDevice::open(&registry, &a.dev)?;
            let (l, any) = latencies(&a.lat, dev.record().latencies);
            let bw = if a.no_bandwidth {
                None
            } else {
                a.lat.bandwidth.or(dev.record().bandwidth)
            };
            if !any && a.lat.bandwidth.is_none() && !a.no_bandwidth {
                return Err(bad_input(
                    "nothing to set: give --latency, --read-latency, --write-latency, \
                     --flush-latency, --bandwidth or --no-bandwidth",
                ));
            }
            dev.set_latency(l, bw)?;
            eprintln!(
                "{}: read {}, write {}, flush {}",
                dev.path().display(),
                format_latency(l.read_ns),
                format_latency(l.write_ns),
                format_latency(l.flush_ns)
            );
        }
        DevCmd::Stats { dev, json } => {
            let st = SlowDevice::open(&registry, &dev)?.stats()?;
            if json {
                print!("{}", export(&Json, &st));
            } else {
                print!("{}", export(&Text, &st));
            }
        }
        DevCmd::Destroy { dev, all, force } => {
            if all {
                let results = fsage_slowdev::destroy_all(&registry, force);
                let mut failed = None;
                for (name, r) in results {
                    match r {
                        Ok(()) => eprintln!("{name}: destroyed"),
                        Err(e) => {
                            eprintln!("{name}: {e}");
                            failed = Some(e);
                        }
                    }
                }
                if let Some(e) = failed {
                    return Err(CmdError::from(e).context("some devices were not destroyed"));
                }
            } else if let Some(which) = dev {
                let d = SlowDevice::open(&registry, &which)?;
                let path = d.path().display().to_string();
                d.destroy(force)?;
                eprintln!("{path}: destroyed");
            }
        }
        DevCmd::Precondition {
            dev,
            overwrites,
            seed,
        } => {
            if !(0.0..=100.0).contains(&overwrites) {
                return Err(bad_input(format!(
                    "--overwrites {overwrites}: give 0 to 100 capacities"
                )));
            }
            let d = SlowDevice::open(&registry, &dev)?;
            let said = d.precondition(overwrites, seed)?;
            eprintln!("{}: {said}", d.path().display());
        }
        DevCmd::Models { json } => {
            let models = fsage_device::models::builtins();
            if json {
                print!("{}", export(&Json, &models));
            } else {
                print!("{}", export(&Text, &models[..]));
            }
        }
        DevCmd::Cost {
            trace,
            model,
            host_path,
            think,
            unwritten_reads,
            drive_state,
            json,
        } => {
            let opts = fsage_device::CostOptions {
                think: think.unwrap_or_default(),
                host_path_ns: host_path,
                unwritten: unwritten_reads,
            };
            let r = fsage_device::cost_trace_file(&trace, &model, opts, drive_state.as_deref())?;
            if json {
                print!("{}", export(&Json, &r));
            } else {
                print!("{}", export(&Text, &r));
            }
        }
        DevCmd::Wa {
            model,
            size,
            span,
            warm,
            measured,
            queue_depth,
            seed,
            data_ratio,
            json,
        } => {
            let mut spec = fsage_device::resolve(&model)?;
            if let Some(r) = data_ratio {
                match &mut spec.kind {
                    fsage_device::ModelKind::Ssd(p)
                        if p.compression.is_some() && (0.0..=1.0).contains(&r) =>
                    {
                        p.unseen_data_ratio = r
                    }
                    _ => {
                        return Err(bad_input(format!(
                            "--data-ratio {r}: give 0 to 1, on a compressing model ({} is not \
                             one or the ratio is out of range)",
                            spec.name
                        )))
                    }
                }
            }
            let size = device_size(&spec, size, "--size")?;
            let span = span
                .map(|t| match t.strip_suffix('%') {
                    Some(pct) => pct
                        .trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|p| *p > 0.0 && *p <= 100.0)
                        .map(|p| (size as f64 * p / 100.0) as u64)
                        .ok_or_else(|| bad_input(format!("--span {t}: expected 0 to 100%"))),
                    None => parse_size(&t).map_err(|e| bad_input(format!("--span: {e}"))),
                })
                .transpose()?;
            if queue_depth == 0 {
                return Err(bad_input("--queue-depth: give at least 1"));
            }
            let opts = fsage_device::sim::WaOptions {
                span,
                warm,
                measured,
                queue_depth,
                seed,
            };
            let r = fsage_device::sim::write_amplification(&spec, size, opts)?;
            if json {
                print!("{}", export(&Json, &r));
            } else {
                print!("{}", export(&Text, &r));
            }
        }
        DevCmd::ReadCurve {
            model,
            size,
            sizes,
            reads,
            seed,
            json,
        } => {
            let spec = fsage_device::resolve(&model)?;
            let size = device_size(&spec, size, "--size").unwrap_or(1 << 30);
            if reads == 0 {
                return Err(bad_input("--reads: give at least 1"));
            }
            let r = fsage_device::sim::read_curve(&spec, size, &sizes, reads, seed)?;
            if json {
                print!("{}", export(&Json, &r));
            } else {
                print!("{}", export(&Text, &r[..]));
            }
        }
        DevCmd::Bench(a) => {
            let spec = fsage_slowdev::bench::BenchSpec {
                size: a.size,
                duration: a.duration,
                latencies: a.latencies,
                realtime: a.realtime,
                registry: registry.root().to_path_buf(),
                daemon_cmd: None,
            };
            let report = fsage_slowdev::bench::run(&spec, &mut |s| eprintln!("bench: {s}"))?;
            if let Some(p) = &a.json {
                fsage_sys::write_atomic(p, export(&Json, &report).as_bytes())?;
            }
            print!("{}", export(&Text, &report));
        }
    }
    Ok(())
}

/// The device size a simulation runs on: the one given, else the model's capacity.
fn device_size(
    spec: &fsage_device::ModelSpec,
    given: Option<u64>,
    flag: &str,
) -> Result<u64, CmdError> {
    given.or(spec.kind.capacity()).ok_or_else(|| {
        bad_input(format!(
            "{flag}: model {} gives no capacity: give the device's size",
            spec.name
        ))
    })
}

fn parse_unwritten(s: &str) -> Result<fsage_device::UnwrittenReads, String> {
    s.parse().map_err(|e: fsage_device::Error| e.message)
}

//! One table of quantities run through every place that reads one: each flag (through the real
//! clap parser, value parsers and all), the experiment file and the profile file. What one place
//! accepts every place accepts, with the same value; what one refuses every one refuses, and the
//! error names the flag or the file and line.
//!
//! Adding a reader of a size, duration, latency or bandwidth (a flag, a file key, a model file
//! parameter) means adding it to the `*_readers` lists below.

use crate::bench_cmd::BenchCmd;
use crate::cli::{Cli, Command};
use crate::dev_cmd::DevCmd;
use crate::profile_cmd::ProfileCmd;
use clap::Parser;
use std::path::Path;
use std::time::Duration;

/// What a reader makes of a text: its value (bytes, ns, bytes per second) or its error message.
type Reader = fn(&str) -> Result<u64, String>;

/// Parses a command line; the error is clap's message (which names the flag). The last two
/// arguments are a flag and its value, passed as `--flag=value` so that `-4K` stays a value.
fn cli(args: &[&str]) -> Result<Command, String> {
    let (flag, value) = (args[args.len() - 2], args[args.len() - 1]);
    let joined = format!("{flag}={value}");
    let args = args[..args.len() - 2]
        .iter()
        .copied()
        .chain([joined.as_str()]);
    Cli::try_parse_from(std::iter::once("fsage").chain(args))
        .map(|c| c.command)
        .map_err(|e| e.to_string())
}

fn ns(d: Duration) -> u64 {
    d.as_nanos() as u64
}

// ---- sizes -------------------------------------------------------------------------------------

const SIZES_OK: &[(&str, u64)] = &[
    ("4096", 4096),
    ("0", 0),
    ("512B", 512),
    ("4K", 4096),
    ("4k", 4096),
    ("4KiB", 4096),
    ("4 kib", 4096),
    ("4Ki", 4096),
    ("4KB", 4000),
    ("1.5M", 3 << 19),
    ("205MB", 205_000_000),
    ("4G", 4 << 30),
    ("4GiB", 4 << 30),
    ("4GB", 4_000_000_000),
    ("1TB", 1_000_000_000_000),
];
const SIZES_BAD: &[&str] = &["", "4X", "-4K", "1.5", "K", "16E", "1.2.3K", "5i", "4 GB/s"];

fn size_readers() -> Vec<(&'static str, Reader)> {
    fn age(flag: &'static str, t: &str) -> Result<u64, String> {
        let mut args = vec!["age", "-p", "meyer", "--fs", "ext4", "x"];
        if flag != "--size" {
            args.extend(["--size", "1G"]);
        }
        args.extend([flag, t]);
        match cli(&args)? {
            Command::Age(a) => Ok(match flag {
                "--capacity" => a.capacity,
                "--block-size" => a.block_size,
                _ => a.size,
            }
            .unwrap()),
            c => panic!("{c:?}"),
        }
    }
    vec![
        ("age --capacity", |t| {
            // --capacity conflicts with --fs: parse it on its own.
            match cli(&["age", "-p", "meyer", "--dry-run", "--capacity", t])? {
                Command::Age(a) => Ok(a.capacity.unwrap()),
                c => panic!("{c:?}"),
            }
        }),
        ("age --size", |t| age("--size", t)),
        ("age --block-size", |t| age("--block-size", t)),
        ("profile show --capacity", |t| {
            match cli(&["profile", "show", "meyer", "--capacity", t])? {
                Command::Profile(ProfileCmd::Show { capacity, .. }) => Ok(capacity),
                c => panic!("{c:?}"),
            }
        }),
        ("profile show --block-size", |t| {
            match cli(&["profile", "show", "meyer", "--block-size", t])? {
                Command::Profile(ProfileCmd::Show { block_size, .. }) => Ok(block_size),
                c => panic!("{c:?}"),
            }
        }),
        ("dev create --size", |t| {
            match cli(&["dev", "create", "--latency", "0", "--size", t])? {
                Command::Dev(DevCmd::Create(a)) => Ok(a.size.unwrap()),
                c => panic!("{c:?}"),
            }
        }),
        ("dev bench --size", |t| {
            match cli(&["dev", "bench", "--size", t])? {
                Command::Dev(DevCmd::Bench(a)) => Ok(a.size),
                c => panic!("{c:?}"),
            }
        }),
        ("fs create --size", |t| {
            match cli(&["fs", "create", "img", "--fs", "ext4", "--size", t])? {
                Command::Fs(crate::fs_cmd::FsCmd::Create(a)) => Ok(a.size.unwrap()),
                c => panic!("{c:?}"),
            }
        }),
        ("frag --probe", |t| {
            match cli(&["frag", "/mnt", "--probe", t])? {
                Command::Frag(f) => Ok(f.args.probe.unwrap()),
                c => panic!("{c:?}"),
            }
        }),
        ("profile extract --capacity", |t| {
            match cli(&["profile", "extract", "/d", "--capacity", t])? {
                Command::Profile(ProfileCmd::Extract(a)) => Ok(a.capacity.unwrap()),
                c => panic!("{c:?}"),
            }
        }),
        ("git-age --size", |t| {
            match cli(&["git-age", "repo", "img", "--fs", "ext4", "--size", t])? {
                Command::GitAge(a) => Ok(a.size.unwrap()),
                c => panic!("{c:?}"),
            }
        }),
        ("profile file: size edge", |t| {
            let text = format!(
                "name = \"t\"\nfullness = 0.5\n[size]\nbins = [[{t:?}, 1], [{}, 1]]\n\
                 [depth]\nbins = [[0, 1, 0]]\n[age]\nbins = [[1, 1]]\n",
                1u64 << 62
            );
            fsage_profile::parse(&text, "t.toml")
                .map(|p| p.sizes[0].max_bytes)
                .map_err(|e| e.to_string())
        }),
    ]
}

// ---- durations ---------------------------------------------------------------------------------

const DURATIONS_OK: &[(&str, u64)] = &[
    ("90s", 90_000_000_000),
    ("1.5m", 90_000_000_000),
    ("30min", 1_800_000_000_000),
    ("2h", 7_200_000_000_000),
    ("1d", 86_400_000_000_000),
    ("250ms", 250_000_000),
    ("10us", 10_000),
    ("10µs", 10_000),
    ("100ns", 100),
    ("1 s", 1_000_000_000),
    ("0.5S", 500_000_000),
];
/// Refused everywhere; `0` is refused only where a duration must be positive.
const DURATIONS_BAD: &[&str] = &[
    "90",
    "1.5",
    "",
    "-3s",
    "soon",
    "5 fortnights",
    "1.2.3s",
    "s",
];

/// (name, reader, whether 0 is refused).
fn duration_readers() -> Vec<(&'static str, Reader, bool)> {
    fn experiment(key: &str, t: &str) -> Result<u64, String> {
        let d = if key == "duration" { t } else { "1s" };
        let mut text = format!(
            "name = \"x\"\nduration = {d:?}\nimage_size = \"1GiB\"\n[[fs]]\nkind = \"ext4\"\n\
             [[state]]\nkind = \"fresh\"\n[[workload]]\nname = \"varmail\"\n"
        );
        if key == "warmup" {
            text = text.replace("image_size", &format!("warmup = {t:?}\nimage_size"));
        }
        if key == "max_time" {
            text = text.replace(
                "kind = \"fresh\"",
                &format!("kind = \"aged\"\nprofile = \"meyer\"\nmax_time = {t:?}"),
            );
        }
        let s = fsage_experiment::spec::parse(&text, "x.toml", Path::new("."))
            .map_err(|e| e.to_string())?;
        let secs = match key {
            "duration" => s.duration_s,
            "warmup" => s.warmup_s,
            _ => match &s.states[0] {
                fsage_experiment::spec::StateSpec::Aged { max_time_s, .. } => max_time_s.unwrap(),
                s => panic!("{s:?}"),
            },
        };
        Ok((secs * 1e9).round() as u64)
    }
    vec![
        (
            "age --max-time",
            |t| match cli(&["age", "-p", "meyer", "--max-time", t])? {
                Command::Age(a) => Ok(ns(a.max_time.unwrap())),
                c => panic!("{c:?}"),
            },
            true,
        ),
        (
            "age --checkpoint-interval",
            |t| match cli(&["age", "-p", "meyer", "--checkpoint-interval", t])? {
                Command::Age(a) => Ok(ns(a.checkpoint_interval)),
                c => panic!("{c:?}"),
            },
            true,
        ),
        (
            "bench run --duration",
            |t| match cli(&["bench", "run", "varmail", "/t", "--duration", t])? {
                Command::Bench(BenchCmd::Run(a)) => Ok(ns(a.duration.unwrap())),
                c => panic!("{c:?}"),
            },
            true,
        ),
        (
            "bench run --warmup",
            |t| match cli(&["bench", "run", "varmail", "/t", "--warmup", t])? {
                Command::Bench(BenchCmd::Run(a)) => Ok(ns(a.warmup.unwrap())),
                c => panic!("{c:?}"),
            },
            false,
        ),
        (
            "dev bench --duration",
            |t| match cli(&["dev", "bench", "--duration", t])? {
                Command::Dev(DevCmd::Bench(a)) => Ok(ns(a.duration)),
                c => panic!("{c:?}"),
            },
            true,
        ),
        (
            "experiment file: duration",
            |t| experiment("duration", t),
            true,
        ),
        (
            "experiment file: warmup",
            |t| experiment("warmup", t),
            false,
        ),
        (
            "experiment file: max_time",
            |t| experiment("max_time", t),
            true,
        ),
    ]
}

// ---- latencies ---------------------------------------------------------------------------------

const LATENCIES_OK: &[(&str, u64)] = &[
    ("0", 0),
    ("0.0", 0),
    ("0ns", 0),
    ("250ns", 250),
    ("10us", 10_000),
    ("10µs", 10_000),
    ("10 us", 10_000),
    ("100US", 100_000),
    ("1.5ms", 1_500_000),
    ("0.25ms", 250_000),
    ("2s", 2_000_000_000),
    ("60s", 60_000_000_000),
    ("1m", 60_000_000_000),
];
const LATENCIES_BAD: &[&str] = &[
    "5",
    "1.5",
    "",
    "61s",
    "2m",
    "-1ms",
    "1fortnight",
    "ms",
    "1h",
    "1.2.3ms",
];

fn latency_readers() -> Vec<(&'static str, Reader)> {
    fn dev(cmd: &str, flag: &str, t: &str) -> Result<u64, String> {
        let args = if cmd == "create" {
            vec!["dev", "create", "--size", "1G", flag, t]
        } else {
            vec!["dev", "set", "loop9", flag, t]
        };
        let lat = match cli(&args)? {
            Command::Dev(DevCmd::Create(a)) => a.lat,
            Command::Dev(DevCmd::Set(a)) => a.lat,
            c => panic!("{c:?}"),
        };
        Ok(match flag {
            "--latency" => lat.latency,
            "--read-latency" => lat.read_latency,
            "--write-latency" => lat.write_latency,
            _ => lat.flush_latency,
        }
        .unwrap())
    }
    fn experiment(key: &str, t: &str) -> Result<u64, String> {
        let devices = match key {
            "latencies" => format!("latencies = [{t:?}]"),
            // A range of one latency.
            _ => format!("ranges = [{{ from = {t:?}, to = {t:?}, step = \"1s\" }}]"),
        };
        let text = format!(
            "name = \"x\"\nduration = \"1s\"\nimage_size = \"1GiB\"\n[[fs]]\nkind = \"ext4\"\n\
             [[state]]\nkind = \"fresh\"\n[[workload]]\nname = \"varmail\"\n[devices]\n\
             {devices}\n"
        );
        let s = fsage_experiment::spec::parse(&text, "x.toml", Path::new("."))
            .map_err(|e| e.to_string())?;
        assert_eq!(s.devices.len(), 1, "{key} = {t:?}");
        // A latency is read as the fixed model of that latency.
        let m = s.devices[0].as_ref().expect("a latency, not a plain image");
        Ok(fsage_device::FixedParams::of(m)
            .expect("a fixed-latency model")
            .read_ns)
    }
    vec![
        ("dev create --latency", |t| dev("create", "--latency", t)),
        ("dev create --read-latency", |t| {
            dev("create", "--read-latency", t)
        }),
        ("dev create --write-latency", |t| {
            dev("create", "--write-latency", t)
        }),
        ("dev create --flush-latency", |t| {
            dev("create", "--flush-latency", t)
        }),
        ("dev set --latency", |t| dev("set", "--latency", t)),
        ("dev set --read-latency", |t| {
            dev("set", "--read-latency", t)
        }),
        ("dev bench --latencies", |t| {
            match cli(&["dev", "bench", "--latencies", &format!("10us,{t}")])? {
                Command::Dev(DevCmd::Bench(a)) => Ok(a.latencies[1]),
                c => panic!("{c:?}"),
            }
        }),
        ("git-age --device-latency", |t| {
            let args = ["git-age", "r", "i", "--fs", "ext4", "--size", "1G"];
            match cli(&[&args[..], &["--device-latency", t]].concat())? {
                Command::GitAge(a) => Ok(a.device_latency.unwrap()),
                c => panic!("{c:?}"),
            }
        }),
        ("report --calibration", |t| {
            match cli(&["report", "in", "--calibration", &format!("{t},10ms")])? {
                Command::Report(a) => Ok(a.calibration[0]),
                c => panic!("{c:?}"),
            }
        }),
        ("experiment file: devices.latencies", |t| {
            experiment("latencies", t)
        }),
        ("experiment file: devices.ranges", |t| {
            experiment("ranges", t)
        }),
        ("model file: read", |t| {
            match model(&format!("read = {{ value = {t:?}, source = \"s\" }}"))?.kind {
                fsage_device::ModelKind::Fixed(f) => Ok(f.read_ns),
                _ => Err("not a fixed-latency model".into()),
            }
        }),
    ]
}

/// A fixed-latency model file with these `[params]` (and a write latency).
fn model(params: &str) -> Result<fsage_device::ModelSpec, String> {
    let text = format!(
        "name = \"m\"\nkind = \"fixed\"\n[params]\n\
         write = {{ value = \"1ms\", source = \"s\" }}\n{params}\n"
    );
    fsage_device::ModelSpec::parse(&text, "m.toml").map_err(|e| e.to_string())
}

// ---- bandwidths --------------------------------------------------------------------------------

const BANDWIDTHS_OK: &[(&str, u64)] = &[
    ("205MB/s", 205_000_000),
    ("1MiB/s", 1 << 20),
    ("500MiB", 500 << 20),
    ("1.5G/s", 3 << 29),
    ("4096", 4096),
    ("1 GB/s", 1_000_000_000),
];
const BANDWIDTHS_BAD: &[&str] = &["0", "0/s", "fast", "-1M/s", "", "1X/s", "1.5/s"];

fn bandwidth_readers() -> Vec<(&'static str, Reader)> {
    vec![
        ("dev create --bandwidth", |t| {
            match cli(&[
                "dev",
                "create",
                "--latency",
                "0",
                "--size",
                "1G",
                "--bandwidth",
                t,
            ])? {
                Command::Dev(DevCmd::Create(a)) => Ok(a.lat.bandwidth.unwrap()),
                c => panic!("{c:?}"),
            }
        }),
        ("dev set --bandwidth", |t| {
            match cli(&["dev", "set", "loop9", "--bandwidth", t])? {
                Command::Dev(DevCmd::Set(a)) => Ok(a.lat.bandwidth.unwrap()),
                c => panic!("{c:?}"),
            }
        }),
        ("model file: bandwidth", |t| {
            let p = format!(
                "read = {{ value = \"0\", source = \"s\" }}\n\
                 bandwidth = {{ value = {t:?}, source = \"s\" }}"
            );
            match model(&p)?.kind {
                fsage_device::ModelKind::Fixed(f) => Ok(f.bandwidth.unwrap()),
                _ => Err("not a fixed-latency model".into()),
            }
        }),
    ]
}

// ---- the check ---------------------------------------------------------------------------------

/// Every reader gives every accepted text its value and refuses every refused one, naming the
/// flag or the file and line; the library parser agrees with the table too.
fn check(
    kind: &str,
    readers: &[(&str, Reader)],
    ok: &[(&str, u64)],
    bad: &[&str],
    zero_refused: &[bool],
) {
    let mut wrong = Vec::new();
    for (i, (name, read)) in readers.iter().enumerate() {
        for &(text, want) in ok {
            let refuse = want == 0 && zero_refused.get(i).copied().unwrap_or(false);
            match (read(text), refuse) {
                (Ok(v), false) if v == want => {}
                (Err(e), true) if e.contains("more than 0") => {}
                (got, _) => wrong.push(format!("{name}: {text:?} gave {got:?}, want {want}")),
            }
        }
        for &text in bad {
            match read(text) {
                Ok(v) => wrong.push(format!("{name}: {text:?} accepted as {v}")),
                Err(e) => {
                    let named = match name.split_once(' ') {
                        _ if name.contains("file:") => e.contains(".toml:"),
                        Some((_, flags)) => e.contains(flags.split(' ').next_back().unwrap()),
                        None => true,
                    };
                    if !named {
                        wrong.push(format!(
                            "{name}: the error for {text:?} names no place: {e}"
                        ));
                    }
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{kind}:\n{}", wrong.join("\n"));
}

#[test]
fn every_reader_of_a_size_agrees() {
    let lib: Vec<(&str, Reader)> = vec![("fsage_units::parse_size", |t| {
        fsage_units::parse_size(t).map_err(|e| e.to_string())
    })];
    check("sizes", &lib, SIZES_OK, SIZES_BAD, &[]);
    check("sizes", &size_readers(), SIZES_OK, SIZES_BAD, &[]);
}

#[test]
fn every_reader_of_a_duration_agrees() {
    let lib: Vec<(&str, Reader)> = vec![("fsage_units::parse_duration", |t| {
        fsage_units::parse_duration(t)
            .map(ns)
            .map_err(|e| e.to_string())
    })];
    let mut ok = DURATIONS_OK.to_vec();
    ok.push(("0", 0));
    check("durations", &lib, &ok, DURATIONS_BAD, &[]);
    let all = duration_readers();
    let readers: Vec<(&str, Reader)> = all.iter().map(|&(n, r, _)| (n, r)).collect();
    let zero: Vec<bool> = all.iter().map(|&(_, _, z)| z).collect();
    check("durations", &readers, &ok, DURATIONS_BAD, &zero);
}

#[test]
fn every_reader_of_a_latency_agrees() {
    let lib: Vec<(&str, Reader)> = vec![("fsage_units::parse_latency", |t| {
        fsage_units::parse_latency(t).map_err(|e| e.to_string())
    })];
    check("latencies", &lib, LATENCIES_OK, LATENCIES_BAD, &[]);
    check(
        "latencies",
        &latency_readers(),
        LATENCIES_OK,
        LATENCIES_BAD,
        &[],
    );
}

#[test]
fn every_reader_of_a_bandwidth_agrees() {
    let lib: Vec<(&str, Reader)> = vec![("fsage_units::parse_bandwidth", |t| {
        fsage_units::parse_bandwidth(t).map_err(|e| e.to_string())
    })];
    check("bandwidths", &lib, BANDWIDTHS_OK, BANDWIDTHS_BAD, &[]);
    check(
        "bandwidths",
        &bandwidth_readers(),
        BANDWIDTHS_OK,
        BANDWIDTHS_BAD,
        &[],
    );
}

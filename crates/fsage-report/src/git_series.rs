//! Git-aging time series: a table for the terminal and CSV with the published scripts' columns
//! first (pulls, du size, aged time, aged layout score, clean time, clean layout score).

use fsage_results::git::{GitRow, GitSeries, InstanceFigures};
use std::fmt::Write;

fn opt3(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.3}"))
}

fn optu(x: Option<u64>) -> String {
    x.map_or("-".into(), |v| v.to_string())
}

fn mib(b: u64) -> String {
    format!("{:.1}", b as f64 / (1u64 << 20) as f64)
}

/// The table a terminal shows.
pub fn render(s: &GitSeries) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Git aging of {} ({} mode) on {}, clean instance {} ({}), {} of {} commits{}",
        s.repo,
        s.mode,
        s.fs,
        s.clean_fs(),
        crate::human_bytes(s.size_bytes),
        s.pulls_done,
        s.commits_total,
        if s.finished { "" } else { " (not finished)" }
    );
    let _ = write!(
        o,
        "replay {:.1} s ({} commits/s), measurements {:.1} s",
        s.replay_seconds,
        opt3(s.commits_per_second),
        s.measure_seconds,
    );
    if s.rows.is_empty() && s.no_measure {
        o.push_str("; replay only, nothing measured\n");
        return o;
    }
    let _ = writeln!(
        o,
        "; {}{}",
        if s.warm_cache {
            "warm cache: the aged instance measured as the replay left it (no caches dropped, \
             not remounted, nothing dropped by fsage), the clean copy cold from its fresh mount \
             (one grep)"
        } else if s.remounted && s.greps_read_only {
            "caches dropped before every grep, aged instance remounted read-only"
        } else if s.remounted {
            "caches dropped before every grep, aged instance remounted"
        } else {
            "caches dropped before every grep (the aged directory's file system was not \
             remounted)"
        },
        if s.no_measure {
            "; the last session replayed without measuring"
        } else {
            ""
        }
    );
    if let Some(l) = s.mem_limit_bytes {
        let _ = writeln!(
            o,
            "run in a memory cgroup limited to {} (page cache included)",
            crate::human_bytes(l)
        );
    }
    if let (None, Some(m)) = (&s.device_latencies, &s.device_model) {
        let _ = writeln!(
            o,
            "measured on a slow device running the model {}: {} (a new device before every \
             grep, so no grep finds the drive's caches warm; replay at full speed)",
            m.name, m.description
        );
    }
    if let Some(l) = &s.device_latencies {
        let _ = writeln!(
            o,
            "measured on a slow device: {} per read, {} per write, {} per flush (replay at full \
             speed)",
            fsage_units::format_latency(l.read_ns),
            fsage_units::format_latency(l.write_ns),
            fsage_units::format_latency(l.flush_ns)
        );
    }
    if s.grep_reps > 1 {
        let _ = writeln!(
            o,
            "each grep timed {} times: the median, and the fastest to the slowest (range)",
            s.grep_reps
        );
    }
    let costed = if s.costed_reps().is_some() {
        "every grep's"
    } else {
        "the first grep's"
    };
    for m in &s.cost_models {
        let _ = writeln!(
            o,
            "costed on {}: {} ({costed} block reads, replayed in simulated time)",
            m.name, m.description
        );
    }
    let how = how_costed(s);
    if !how.is_empty() {
        let _ = writeln!(o, "{}", how.trim());
    }
    if let Some(d) = &s.traces_dir {
        let _ = writeln!(o, "traces: {d} (fsage dev cost reads them)");
    }
    if s.rows.is_empty() {
        o.push_str("no measurements\n");
        return o;
    }
    let models = s.model_names();
    let mut head: Vec<String> = [
        "pulls",
        "commit",
        "date",
        "du MiB",
        "aged s",
        "aged s/GiB",
        "aged LS",
        "clean s",
        "clean s/GiB",
        "clean LS",
        "ratio",
        "aged frag/f",
        "clean frag/f",
        "aged free ext",
        "clean free ext",
    ]
    .map(String::from)
    .to_vec();
    if s.grep_reps > 1 {
        head.extend(["aged range", "clean range"].map(String::from));
    }
    for m in &models {
        head.extend([
            format!("{m} aged s/GiB"),
            format!("{m} clean s/GiB"),
            format!("{m} ratio"),
        ]);
    }
    let range = |i: &InstanceFigures| {
        let (lo, hi) = i.grep_spread();
        format!("{lo:.3}-{hi:.3}")
    };
    let rows: Vec<Vec<String>> = s
        .rows
        .iter()
        .map(|r| {
            let mut v = vec![
                r.pulls.to_string(),
                r.commit.get(..10).unwrap_or(&r.commit).to_string(),
                r.commit_date
                    .get(..10)
                    .unwrap_or(&r.commit_date)
                    .to_string(),
                mib(r.du_bytes),
                format!("{:.3}", r.aged.grep_seconds),
                format!("{:.2}", r.aged.grep_seconds_per_gib),
                opt3(r.aged.layout_score),
                format!("{:.3}", r.clean.grep_seconds),
                format!("{:.2}", r.clean.grep_seconds_per_gib),
                opt3(r.clean.layout_score),
                r.ratio.map_or("-".into(), |v| format!("{v:.2}")),
                opt3(r.aged.frag.fragments_per_file),
                opt3(r.clean.frag.fragments_per_file),
                optu(r.aged.frag.free_extents),
                optu(r.clean.frag.free_extents),
            ];
            if s.grep_reps > 1 {
                v.extend([range(&r.aged), range(&r.clean)]);
            }
            for m in &models {
                let per = |i: &InstanceFigures| {
                    i.modeled_on(m)
                        .map_or("-".into(), |x| format!("{:.2}", x.seconds_per_gib))
                };
                v.extend([
                    per(&r.aged),
                    per(&r.clean),
                    r.modeled_ratio_on(m)
                        .map_or("-".into(), |v| format!("{v:.2}")),
                ]);
            }
            v
        })
        .collect();
    let mut w: Vec<usize> = head.iter().map(|h| h.len()).collect();
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.len());
        }
    }
    for (i, h) in head.iter().enumerate() {
        let _ = write!(o, "{}{:>w$}", if i > 0 { "  " } else { "" }, h, w = w[i]);
    }
    o.push('\n');
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            let _ = write!(o, "{}{:>w$}", if i > 0 { "  " } else { "" }, c, w = w[i]);
        }
        o.push('\n');
    }
    o.push_str(
        "LS: layout score of the grep's block reads (1 - discontiguities/blocks); frag/f: \
         fragments per file (FIEMAP)\n",
    );
    if let Some(e) = s.rows.last().and_then(|r| r.aged.trace_error.as_ref()) {
        let _ = writeln!(o, "no layout score: {e}");
    }
    if let Some(d) = &s.drives_dir {
        let _ = writeln!(
            o,
            "aged drives: {d} (fsage dev cost --drive-state reads them)"
        );
    }
    for n in &s.drive_notes {
        let _ = writeln!(o, "drives: {n}");
    }
    if let Some(r) = s.rows.last() {
        for m in &models {
            for (which, i) in [("aged", &r.aged), ("clean", &r.clean)] {
                let line = i.modeled_on(m).map(brief_counters).unwrap_or_default();
                if !line.is_empty() {
                    let _ = writeln!(o, "{m} at pull {}, {which}: {line}", r.pulls);
                }
            }
        }
    }
    o
}

/// CSV columns, in order (then, for a series with repetitions or cost models, the columns of
/// [`csv_header`]).
pub const CSV_HEADER: &str = "pulls,du_bytes,aged_seconds,aged_layout_score,clean_seconds,\
clean_layout_score,commit,commit_date,aged_seconds_per_gib,clean_seconds_per_gib,ratio,\
aged_read_seconds,aged_read_bytes,aged_read_files,clean_read_seconds,clean_read_bytes,\
clean_read_files,aged_read_blocks,aged_discontiguities,clean_read_blocks,clean_discontiguities,\
aged_free_extents,clean_free_extents,aged_fragments_per_file,clean_fragments_per_file,\
aged_fs_layout_score,clean_fs_layout_score,aged_dynamic_layout_score,clean_dynamic_layout_score";

fn f(x: Option<f64>) -> String {
    x.map_or(String::new(), |v| format!("{v}"))
}
fn u(x: Option<u64>) -> String {
    x.map_or(String::new(), |v| v.to_string())
}

/// A model's name as a CSV column prefix: `1 ms` is `1ms`, `100 µs` is `100us`, anything else
/// outside `[A-Za-z0-9._-]` an underscore.
pub fn column_prefix(model: &str) -> String {
    model
        .chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| match c {
            'µ' | 'μ' => 'u',
            c if c.is_ascii_alphanumeric() || "._-".contains(c) => c,
            _ => '_',
        })
        .collect()
}

/// The header of `s`'s CSV: [`CSV_HEADER`], the greps' spread, then per cost model `M` (its
/// [`column_prefix`]):
/// `M_aged_seconds,M_aged_seconds_per_gib,M_clean_seconds,M_clean_seconds_per_gib,M_ratio`.
pub fn csv_header(s: &GitSeries) -> String {
    let mut h = String::from(CSV_HEADER);
    h.push_str(",aged_seconds_min,aged_seconds_max,clean_seconds_min,clean_seconds_max");
    for m in s.model_names() {
        for c in [
            "aged_seconds",
            "aged_seconds_per_gib",
            "clean_seconds",
            "clean_seconds_per_gib",
            "ratio",
        ] {
            let _ = write!(h, ",{}_{c}", column_prefix(m));
        }
    }
    h
}

fn csv_row(r: &GitRow, models: &[&str]) -> String {
    let (a, c): (&InstanceFigures, &InstanceFigures) = (&r.aged, &r.clean);
    let (a_lo, a_hi) = a.grep_spread();
    let (c_lo, c_hi) = c.grep_spread();
    let mut extra = vec![
        a_lo.to_string(),
        a_hi.to_string(),
        c_lo.to_string(),
        c_hi.to_string(),
    ];
    for m in models {
        for i in [a, c] {
            let x = i.modeled_on(m);
            extra.push(f(x.map(|x| x.seconds)));
            extra.push(f(x.map(|x| x.seconds_per_gib)));
        }
        extra.push(f(r.modeled_ratio_on(m)));
    }
    [
        r.pulls.to_string(),
        r.du_bytes.to_string(),
        a.grep_seconds.to_string(),
        f(a.layout_score),
        c.grep_seconds.to_string(),
        f(c.layout_score),
        r.commit.clone(),
        r.commit_date.clone(),
        a.grep_seconds_per_gib.to_string(),
        c.grep_seconds_per_gib.to_string(),
        f(r.ratio),
        a.read_seconds.to_string(),
        a.read_bytes.to_string(),
        a.read_files.to_string(),
        c.read_seconds.to_string(),
        c.read_bytes.to_string(),
        c.read_files.to_string(),
        u(a.read_blocks),
        u(a.discontiguities),
        u(c.read_blocks),
        u(c.discontiguities),
        u(a.frag.free_extents),
        u(c.frag.free_extents),
        f(a.frag.fragments_per_file),
        f(c.frag.fragments_per_file),
        f(a.frag.layout_score),
        f(c.frag.layout_score),
        f(a.frag.dynamic_layout_score),
        f(c.frag.dynamic_layout_score),
    ]
    .into_iter()
    .chain(extra)
    .collect::<Vec<_>>()
    .join(",")
}

pub fn csv(s: &GitSeries) -> String {
    let mut o = csv_header(s);
    o.push('\n');
    let models = s.model_names();
    for r in &s.rows {
        o.push_str(&csv_row(r, &models));
        o.push('\n');
    }
    o
}

/// How the series' traces were costed and its replay synced, in one sentence for the text and
/// the HTML report (empty without cost models and without a sync).
pub fn how_costed(s: &GitSeries) -> String {
    let mut out = String::new();
    if !s.cost_models.is_empty() {
        out.push_str(&match s.cost_think {
            fsage_device::Think::Recorded => " Think time: as recorded (the host's wall-clock \
                 gaps, its load included)."
                .to_string(),
            fsage_device::Think::None => " Think time: none (the device alone).".to_string(),
            fsage_device::Think::Median => {
                " Think time: each trace's median recorded gap before every read that waited."
                    .to_string()
            }
            fsage_device::Think::Fixed(ns) => format!(
                " Think time: {} before every read that waited for another (fixed).",
                fsage_units::format_latency(ns)
            ),
        });
    }
    if let Some(n) = s.costed_reps() {
        let _ = write!(
            out,
            " Modeled time: the median of {n} costed greps per instance (the lower middle of an \
             even count)."
        );
    }
    if s.sync_each_pull {
        out.push_str(" The aged file system was synced after every pull.");
    }
    if s.one_cpu {
        out.push_str(
            " The replay ran on one CPU, the kernel's unbound workqueues with it (--one-cpu); \
             the measurements on every CPU.",
        );
    }
    if !s.aged_drives.is_empty() {
        let _ = write!(
            out,
            " Drives: {} costed on each instance's own drive (the aged one fed every write, \
             discard and write-zeroes of the replay, the clean one those of its copy; mkfs fed to \
             neither; pages a drive never saw written read as data written in logical order).",
            s.aged_drives.join(", ")
        );
    }
    out
}

/// Where a model's time went over one costed grep, in the counters its kind marks brief (a hard
/// disk's seeks and cache hits; an SSD's reads per request, dies per read, pages its drive never
/// saw written): one line, empty without counters.
pub fn brief_counters(m: &fsage_results::git::ModeledFigures) -> String {
    m.stats.as_ref().map(|st| st.brief()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsage_results::git::{GitSeries, InstanceFigures, SERIES_FORMAT};

    fn series() -> GitSeries {
        let inst = |s: f64, ls: f64| InstanceFigures {
            grep_seconds: s,
            grep_seconds_per_gib: s * 100.0,
            layout_score: Some(ls),
            ..Default::default()
        };
        GitSeries {
            format: SERIES_FORMAT.into(),
            repo: "zlib.bundle".into(),
            mode: "git".into(),
            fs: "ext4".into(),
            clean_fs: "btrfs".into(),
            no_measure: false,
            size_bytes: 1 << 30,
            every: 50,
            gc: false,
            tree: "/mnt/zlib".into(),
            first_commit: "a".into(),
            last_commit: "b".into(),
            commits_total: 2,
            pulls_done: 2,
            finished: true,
            remounted: true,
            warm_cache: false,
            mem_limit_bytes: None,
            device_latencies: None,
            device_model: None,
            grep_reps: 1,
            cost_models: vec![],
            cost_think: fsage_device::Think::default(),
            sync_each_pull: true,
            one_cpu: false,
            greps_read_only: false,
            traces_dir: None,
            aged_drives: vec![],
            drives_dir: None,
            drive_notes: vec![],
            replay_seconds: 1.0,
            measure_seconds: 2.0,
            commits_per_second: Some(2.0),
            git_version: "git version 2.39.5".into(),
            grep_version: "grep (GNU grep) 3.8".into(),
            rows: vec![GitRow {
                pulls: 1,
                commit: "0123456789abcdef0123456789abcdef01234567".into(),
                commit_date: "2011-09-09T22:36:31-07:00".into(),
                du_bytes: 10 << 20,
                aged: inst(0.2, 0.7),
                clean: inst(0.1, 0.9),
                ratio: Some(2.0),
                modeled_ratio: vec![],
            }],
        }
    }

    #[test]
    fn csv_has_the_scripts_columns_first_and_one_line_per_row() {
        let c = csv(&series());
        let lines: Vec<&str> = c.lines().collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].split(',').count(), lines[1].split(',').count());
        assert!(lines[1].starts_with(
            "1,10485760,0.2,0.7,0.1,0.9,0123456789abcdef0123456789abcdef01234567,\
             2011-09-09T22:36:31-07:00,"
        ));
        // A missing figure is an empty field, not a made-up number.
        assert!(lines[1].contains(",,"));
    }

    #[test]
    fn models_and_repetitions_get_columns() {
        let mut s = series();
        s.grep_reps = 3;
        s.cost_models = vec![fsage_device::ModelSpec::fixed(1_000_000)];
        let name = s.cost_models[0].name.clone();
        let m = |secs: f64| fsage_results::git::ModeledFigures {
            model: name.clone(),
            seconds: secs,
            seconds_per_gib: secs * 100.0,
            requests: 10,
            think_seconds: 0.0,
            ..Default::default()
        };
        let r = &mut s.rows[0];
        r.aged.grep_samples = vec![0.3, 0.2, 0.25];
        r.aged.modeled = vec![m(3.0)];
        r.clean.modeled = vec![m(1.5)];
        r.modeled_ratio = vec![fsage_results::git::ModeledRatio {
            model: name.clone(),
            ratio: Some(2.0),
        }];
        let c = csv(&s);
        let lines: Vec<&str> = c.lines().collect();
        let head: Vec<&str> = lines[0].split(',').collect();
        let row: Vec<&str> = lines[1].split(',').collect();
        assert_eq!(head.len(), row.len());
        let col = |name: &str| row[head.iter().position(|h| *h == name).unwrap()];
        assert_eq!(col("aged_seconds_min"), "0.2");
        assert_eq!(col("aged_seconds_max"), "0.3");
        // An instance without samples (an older series): its one time is both ends.
        assert_eq!(col("clean_seconds_min"), "0.1");
        assert_eq!(col("1ms_aged_seconds"), "3");
        assert_eq!(col("1ms_clean_seconds_per_gib"), "150");
        assert_eq!(col("1ms_ratio"), "2");
        let t = render(&s);
        assert!(t.contains("1 ms ratio") && t.contains("0.200-0.300"), "{t}");
        assert!(t.contains("costed on 1 ms"), "{t}");
        // Costed on the first grep only (an older series, or one grep).
        assert!(
            t.contains("(the first grep's block reads") && !t.contains("median of"),
            "{t}"
        );
        // Every grep costed: the median, said once.
        r_seconds(&mut s, vec![3.0, 2.5, 3.5]);
        let t = render(&s);
        assert!(t.contains("(every grep's block reads"), "{t}");
        assert_eq!(
            t.matches("the median of 3 costed greps per instance")
                .count(),
            1,
            "{t}"
        );
        assert_eq!(column_prefix("100 µs"), "100us");
        assert_eq!(column_prefix("hdd-7200"), "hdd-7200");
        // A series without models still exports the base columns first, unchanged.
        assert!(csv(&series()).starts_with(CSV_HEADER));
    }

    fn r_seconds(s: &mut GitSeries, each: Vec<f64>) {
        for m in s.rows[0].aged.modeled.iter_mut() {
            m.rep_seconds = each.clone();
            m.rep = Some(0);
        }
    }

    #[test]
    fn table_shows_the_ratio_and_dates() {
        let t = render(&series());
        assert!(t.contains("2011-09-09") && t.contains("2.00"), "{t}");
        assert!(t.contains("aged instance remounted"));
    }

    #[test]
    fn table_names_both_file_systems_the_commit_and_both_free_extents() {
        let mut s = series();
        s.rows[0].aged.frag.free_extents = Some(4321);
        s.rows[0].clean.frag.free_extents = Some(1234);
        let t = render(&s);
        assert!(t.contains("on ext4, clean instance btrfs"), "{t}");
        let head = t
            .lines()
            .find(|l| l.trim_start().starts_with("pulls"))
            .unwrap();
        assert!(
            head.contains("commit") && head.contains("clean free ext"),
            "{t}"
        );
        let row = t
            .lines()
            .find(|l| l.trim_start().starts_with("1 "))
            .unwrap();
        assert!(
            row.contains("0123456789") && !row.contains("0123456789a"),
            "{t}"
        );
        assert!(row.contains("4321") && row.contains("1234"), "{t}");
        // An older series without clean_fs: the clean instance was of `fs`.
        s.clean_fs.clear();
        assert!(render(&s).contains("on ext4, clean instance ext4"));
    }

    #[test]
    fn a_warm_series_under_a_memory_limit_says_so_and_a_cold_one_does_not() {
        let mut s = series();
        let t = render(&s);
        assert!(t.contains("caches dropped before every grep"), "{t}");
        assert!(!t.contains("warm") && !t.contains("memory cgroup"), "{t}");
        s.warm_cache = true;
        s.remounted = false;
        s.mem_limit_bytes = Some(512 << 20);
        let t = render(&s);
        assert!(
            t.contains("warm cache: the aged instance measured as the replay left it"),
            "{t}"
        );
        assert!(!t.contains("caches dropped before every grep"), "{t}");
        assert!(
            t.contains("memory cgroup limited to 512 MiB (page cache included)"),
            "{t}"
        );
    }

    #[test]
    fn read_only_greps_say_so_and_older_series_do_not() {
        let mut s = series();
        assert!(!render(&s).contains("read-only"));
        s.greps_read_only = true;
        assert!(render(&s).contains("aged instance remounted read-only"));
        let mut v = serde_json::to_value(&s).unwrap();
        v.as_object_mut().unwrap().remove("greps_read_only");
        let back: GitSeries = serde_json::from_value(v).unwrap();
        assert!(!back.greps_read_only);
    }

    #[test]
    fn a_replay_on_one_cpu_says_so() {
        let mut s = series();
        assert!(!how_costed(&s).contains("one CPU"));
        s.one_cpu = true;
        assert!(
            how_costed(&s).contains("The replay ran on one CPU"),
            "{}",
            how_costed(&s)
        );
        // Older series have no field: false.
        let mut v = serde_json::to_value(&s).unwrap();
        v.as_object_mut().unwrap().remove("one_cpu");
        let back: GitSeries = serde_json::from_value(v).unwrap();
        assert!(!back.one_cpu);
    }

    #[test]
    fn replay_only_claims_no_measurement() {
        let mut s = series();
        s.rows.clear();
        s.no_measure = true;
        let t = render(&s);
        assert!(t.contains("nothing measured"), "{t}");
        assert!(
            !t.contains("caches dropped") && !t.contains("remounted"),
            "{t}"
        );
    }
}

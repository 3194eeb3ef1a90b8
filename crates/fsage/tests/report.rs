//! `fsage report` end to end: the fixtures (real `fsage age --json` and `fsage frag --json`
//! output, synthetic cell results) rendered, then opened in headless Chromium, which must draw
//! every section and log nothing to the console.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn fx(p: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fsage-report/tests/fixtures")
        .join(p)
        .display()
        .to_string()
}

fn inputs() -> Vec<String> {
    vec![
        fx("aged-ext4.run.json"),
        fx("fresh-ext4.frag.json"),
        fx("aged-ext4.frag.json"),
        fx("aged2-ext4.frag.json"),
        fx("cells/aged"),
        fx("cells/sweep"),
        fx("against/aged-ext4.against.json"),
        fx("git/zlib-ext4.json"),
        fx("bench/varmail-fresh-ext4.json"),
        fx("bench/varmail-aged-ext4.json"),
    ]
}

#[test]
fn report_writes_html_json_and_a_summary() {
    let d = tmp();
    let html = d.path().join("r.html");
    let json = d.path().join("a.json");
    let mut args = vec!["report".to_string()];
    args.extend(inputs());
    args.extend([
        "-o".into(),
        s(&html).into(),
        "--json".into(),
        s(&json).into(),
    ]);
    let o = fsage_ok(&args);
    let out = stdout(&o);
    assert!(out.contains("rank order changed: varmail"), "{out}");
    assert!(out.contains("III: below the model from 2 ms down"), "{out}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    let j = read_json(&json);
    assert_eq!(j[0]["samples"], 125);
    // Never overwrite without --force.
    let o = fsage(&args);
    expect_code(&o, 2, "existing -o");
    assert!(stderr(&o).contains("--force"), "{}", stderr(&o));
    // Bad input names the flag.
    let o = fsage(["report", &fx("cells/aged"), "--calibration", "5,10ms"]);
    expect_code(&o, 2, "calibration without a unit");
    let o = fsage(["report", &fx("cells/aged"), "--section", "nosuch"]);
    expect_code(&o, 2, "unknown section");
    let e = stderr(&o);
    assert!(
        e.contains("--section")
            && e.contains("\"nosuch\"")
            && e.contains("one of published, aging, git, frag, against-fresh, bench, aged-vs-fresh, latency, sweep, inversions, cells"),
        "{e}"
    );
}

/// Runs chromium with a deadline; (stdout, stderr). Killed by its pid past the deadline.
fn chromium(bin: &Path, profile: &Path, args: &[&str]) -> (String, String) {
    let out = profile.with_extension("out");
    let err = profile.with_extension("err");
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            &format!("--user-data-dir={}", profile.display()),
        ])
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("start chromium");
    let t0 = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if t0.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish in 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (
        std::fs::read_to_string(&out).unwrap_or_default(),
        std::fs::read_to_string(&err).unwrap_or_default(),
    )
}

/// The page's own check, read back from the DOM Chromium dumped: (sections, sections drawn).
fn sections_checked(dom: &str) -> (usize, usize) {
    let body = dom
        .split("<body")
        .nth(1)
        .and_then(|b| b.split('>').next())
        .unwrap_or_else(|| panic!("no <body> in the DOM:\n{dom:.2000}"));
    let attr = |k: &str| -> usize {
        body.split(&format!("{k}=\""))
            .nth(1)
            .and_then(|v| v.split('"').next())
            .unwrap_or_else(|| panic!("no {k} on <body{body}>: the check script did not run"))
            .parse()
            .unwrap()
    };
    (attr("data-sections"), attr("data-sections-ok"))
}

#[test]
fn chromium_renders_every_section_without_console_errors() {
    const T: &str = "chromium_renders_every_section_without_console_errors";
    let Some(bin) = find_cmd("chromium") else {
        return skip(T, "chromium not installed (scripts/setup installs it)");
    };
    let d = tmp();
    let html = d.path().join("report.html");
    let mut args = vec!["report".to_string()];
    args.extend(inputs());
    // An experiment's output directory with the frag measurements of a fresh and an aged base:
    // its section of verdicts must draw too.
    let toml =
        "name = \"x\"\nduration = \"1s\"\nimage_size = \"256MiB\"\n[[fs]]\nkind = \"ext4\"\n\
                [[state]]\nkind = \"fresh\"\n[[state]]\nkind = \"aged\"\nprofile = \"meyer\"\n\
                [[workload]]\nname = \"varmail\"\n";
    let exp = d.path().join("exp");
    let spec = fsage_experiment::spec::parse(toml, "x.toml", d.path()).unwrap();
    fsage_experiment::runner::prepare_out(&exp, &spec.plan(), toml).unwrap();
    std::fs::create_dir_all(exp.join("frag")).unwrap();
    for (to, from) in [
        ("ext4-fresh-0123abcd.json", "fresh-ext4.frag.json"),
        ("ext4-aged.meyer-4567cdef.json", "aged-ext4.frag.json"),
    ] {
        std::fs::copy(fx(from), exp.join("frag").join(to)).unwrap();
    }
    args.push(s(&exp).into());
    args.extend(["-o".into(), s(&html).into()]);
    fsage_ok(&args);
    let html_text = std::fs::read_to_string(&html).unwrap();
    assert!(
        html_text.contains("How far from fresh: the experiment&#39;s base images")
            || html_text.contains("How far from fresh: the experiment's base images"),
        "no verdict section for the experiment directory"
    );
    let url = format!("file://{}", html.display());
    let (dom, log) = chromium(
        &bin,
        &d.path().join("profile-dom"),
        &["--enable-logging=stderr", "--v=0", "--dump-dom", &url],
    );
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    // The page's own check ran (no script error stopped it) and found every section drawn.
    let (total, ok) = sections_checked(&dom);
    assert_eq!(total, 11, "sections on the page");
    assert_eq!(ok, total);
    assert_eq!(dom.matches("data-rendered=\"yes\"").count(), total);

    // The check is not fooled by a table: the same page with every plot replaced by a
    // "(no plot: ...)" note passes only the two table-only sections (inversions, cells).
    let mut broken = std::fs::read_to_string(&html).unwrap();
    while let Some(a) = broken.find("<svg") {
        let b = a + broken[a..].find("</svg>").expect("a closed svg") + "</svg>".len();
        broken.replace_range(a..b, "<p class=\"note\">(no plot: removed by the test)</p>");
    }
    let broken_html = d.path().join("broken.html");
    std::fs::write(&broken_html, broken).unwrap();
    let (dom, log) = chromium(
        &bin,
        &d.path().join("profile-broken"),
        &[
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
            &format!("file://{}", broken_html.display()),
        ],
    );
    assert!(
        log.contains("sections that did not render"),
        "no console error for a page without plots: {log:.2000}"
    );
    assert_eq!(
        dom.matches("data-rendered=\"yes\"").count(),
        2,
        "{dom:.3000}"
    );
    assert_eq!(dom.matches("data-rendered=\"no\"").count(), total - 2);
    // And a screenshot: a PNG with something on it.
    let png = d.path().join("shot.png");
    chromium(
        &bin,
        &d.path().join("profile-shot"),
        &[
            "--window-size=1400,3000",
            &format!("--screenshot={}", png.display()),
            &url,
        ],
    );
    let bytes = std::fs::read(&png).expect("a screenshot");
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert!(
        bytes.len() > 50_000,
        "a nearly blank screenshot: {} bytes",
        bytes.len()
    );
}

/// Cells on a device model are grouped under the model's name, apart from the plain-image and
/// fixed-latency cells, in the page and the summary (the committed hdd-7200 experiment).
#[test]
fn cells_on_a_device_model_are_their_own_groups() {
    let run = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/experiments/hdd-aged-vs-fresh/run");
    let d = tmp();
    let html = d.path().join("r.html");
    let o = fsage_ok(["report", s(&run), "-o", s(&html)]);
    let out = stdout(&o);
    assert!(out.contains("fileserver   model hdd-7200"), "{out}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<h3>fileserver — device model hdd-7200</h3>"));
    assert!(page.contains("<h3>fileserver — device 100 µs</h3>"));
    assert!(
        !page.contains("<h3>fileserver — plain image</h3>"),
        "the model's cells are not shown as a plain image"
    );
}

/// Age, bench, report by hand: `fsage report` of an aging run and two `fsage bench run --json`
/// results (committed fixtures: varmail on the aged 256 MiB ext4 image and on a fresh one) gives
/// the aging and bench sections and a summary line per run; headless Chromium draws both
/// sections with no console message, and a screenshot of the page has something on it.
#[test]
fn report_of_an_aging_run_and_two_bench_runs() {
    const T: &str = "report_of_an_aging_run_and_two_bench_runs";
    let d = tmp();
    let html = d.path().join("x.html");
    let o = fsage_ok([
        "report",
        &fx("bench/aged-ext4.run.json"),
        &fx("bench/varmail-fresh-ext4.json"),
        &fx("bench/varmail-aged-ext4.json"),
        "-o",
        s(&html),
    ]);
    let out = stdout(&o);
    assert!(out.contains("aging run aged-ext4: profile meyer"), "{out}");
    for run in ["varmail-fresh-ext4", "varmail-aged-ext4"] {
        assert!(
            out.contains(&format!("bench {run}: varmail on ")),
            "no line for {run}: {out}"
        );
    }
    let page = std::fs::read_to_string(&html).unwrap();
    assert_eq!(page.matches("<section class=\"fsage\"").count(), 2);
    assert!(page.contains("data-kind=\"aging\"") && page.contains("data-kind=\"bench\""));
    // --section bench alone.
    let only = d.path().join("only.html");
    fsage_ok([
        "report",
        &fx("bench/varmail-aged-ext4.json"),
        "--section",
        "bench",
        "-o",
        s(&only),
    ]);
    let only = std::fs::read_to_string(&only).unwrap();
    assert_eq!(only.matches("<section class=\"fsage\"").count(), 1);

    let Some(bin) = find_cmd("chromium") else {
        return skip(T, "chromium not installed (scripts/setup installs it)");
    };
    let url = format!("file://{}", html.display());
    let (dom, log) = chromium(
        &bin,
        &d.path().join("profile-dom"),
        &["--enable-logging=stderr", "--v=0", "--dump-dom", &url],
    );
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    assert_eq!(sections_checked(&dom), (2, 2), "sections drawn");
    let bench = dom
        .split("data-kind=\"bench\"")
        .nth(1)
        .and_then(|b| b.split('>').next())
        .expect("the bench section in the DOM");
    assert!(bench.contains("data-rendered=\"yes\""), "{bench}");
    let png = d.path().join("shot.png");
    chromium(
        &bin,
        &d.path().join("profile-shot"),
        &[
            "--window-size=1400,2400",
            &format!("--screenshot={}", png.display()),
            &url,
        ],
    );
    let bytes = std::fs::read(&png).expect("a screenshot");
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert!(
        bytes.len() > 50_000,
        "a nearly blank screenshot: {} bytes",
        bytes.len()
    );
}

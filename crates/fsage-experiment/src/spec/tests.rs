use super::*;
use crate::Error;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const GOOD: &str = r#"
name = "demo"
duration = "30s"
warmup = "5s"
repetitions = 2
cache_ratio = 0.5
seed = 7
image_size = "1GiB"

[[fs]]
kind = "ext4"

[[fs]]
kind = "xfs"
mkfs_opts = "-m reflink=0"

[[state]]
kind = "fresh"

[[state]]
kind = "aged"
profile = "meyer"
max_ops = 100000

[devices]
latencies = ["none"]
ranges = [{ from = "0", to = "1ms", step = "500us" }]

[[workload]]
name = "varmail"
set = { nfiles = 100 }
"#;

fn p(text: &str) -> Result<ExperimentSpec, Error> {
    parse(text, "x.toml", Path::new("."))
}

/// Ids computed before device models existed: latency-only cells keep them.
#[test]
fn latency_only_cell_ids_are_pinned() {
    let plan = p(GOOD).unwrap().plan();
    let ids: Vec<&str> = plan.cells.iter().take(4).map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "ext4-fresh-varmail-plain-r0-71c04dcc4a52",
            "ext4-aged.meyer-varmail-plain-r0-1e8eef77ca48",
            "ext4-fresh-varmail-0us-r0-a8279f6633a1",
            "ext4-aged.meyer-varmail-0us-r0-6b2fd3387579",
        ]
    );
    let j = serde_json::to_string(&plan.cells[0]).unwrap();
    assert!(!j.contains("device_model"), "{j}");
}

#[test]
fn devices_take_model_names_beside_latencies() {
    let one = |list: &str| {
        p(&GOOD.replace(
            "latencies = [\"none\"]\nranges = [{ from = \"0\", to = \"1ms\", step = \"500us\" }]",
            &format!("latencies = {list}"),
        ))
    };
    let s = one(r#"["none", "100us"]"#).unwrap();
    let ids: Vec<String> = s.plan().cells.iter().map(|c| c.id.clone()).collect();
    assert_eq!(
        ids[2], "ext4-fresh-varmail-100us-r0-1181f7ecc2af",
        "pinned before models"
    );
    assert_eq!(ids[7], "xfs-aged.meyer-varmail-100us-r0-245c97396d14");
    // A model file beside the experiment, by a name relative to its directory.
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
            d.path().join("slow.toml"),
            "name = \"slow\"\nkind = \"fixed\"\n[params]\nread = { value = \"5ms\", source = \"t\" }\nwrite = { value = \"5ms\", source = \"t\" }\n",
        )
        .unwrap();
    let text = GOOD.replace(
        "latencies = [\"none\"]\nranges = [{ from = \"0\", to = \"1ms\", step = \"500us\" }]",
        "latencies = [\"slow.toml\", \"100us\", \"0\"]",
    );
    let s = parse(&text, "x.toml", d.path()).unwrap();
    assert_eq!(latencies(&s), vec![Some(0.0), Some(100.0)]);
    assert_eq!(models(&s).len(), 1);
    assert_eq!(models(&s)[0].name, "slow");
    assert!(models(&s)[0].text.contains("5ms"));
    let plan = s.plan();
    // Per fs and workload: 2 latencies x 2 states, then the model x 2 states.
    assert_eq!(plan.cells.len(), 2 * 2 * (2 + 1) * 2);
    let c = &plan.cells[4];
    assert!(c.id.starts_with("ext4-fresh-varmail-slow-r0-"), "{}", c.id);
    assert_eq!(c.latency_us(), None);
    assert_eq!(c.device_model().unwrap().name, "slow");
    // The 100us cells are the same cells as in a latency-only experiment.
    assert_eq!(plan.cells[2].id, ids[2]);
    // A bad name is named with file, line and column.
    let e = one(r#"["none",
 "warp-drive"]"#)
    .unwrap_err()
    .to_string();
    assert!(e.contains("x.toml:") && e.contains("warp-drive"), "{e}");
    assert!(e.contains("neither a latency"), "{e}");
    let line = e.split(':').nth(1).unwrap();
    let want = GOOD
        .lines()
        .position(|l| l.starts_with("latencies"))
        .unwrap()
        + 2;
    assert_eq!(line, want.to_string(), "{e}");
    // A latency with a bad unit stays a latency error.
    let e = one(r#"["100 parsecs"]"#).unwrap_err().to_string();
    assert!(e.contains("unknown unit"), "{e}");
    let twice = text.replace("\"slow.toml\", \"100us\"", "\"slow.toml\", \"slow.toml\"");
    let e = parse(&twice, "x.toml", d.path()).unwrap_err().to_string();
    assert!(e.contains("\"slow\" given twice"), "{e}");
}

#[test]
fn expands_the_matrix_with_stable_ids() {
    let s = p(GOOD).unwrap();
    assert_eq!(
        latencies(&s),
        vec![None, Some(0.0), Some(500.0), Some(1000.0)]
    );
    let plan = s.plan();
    // 2 fs x 2 states x 1 workload x 2 reps x 4 latencies.
    assert_eq!(plan.cells.len(), 32);
    assert_eq!(plan.aging_runs, vec!["ext4 aged:meyer", "xfs aged:meyer"]);
    let ids: BTreeSet<&str> = plan.cells.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids.len(), 32, "ids are unique");
    // Run order: repetition, fs, workload, latency, state.
    assert!(plan.cells[0].id.starts_with("ext4-fresh-varmail-plain-r0-"));
    assert!(plan.cells[1]
        .id
        .starts_with("ext4-aged.meyer-varmail-plain-r0-"));
    assert_eq!(plan.cells[2].latency_us(), Some(0.0));
    assert_eq!(plan.cells[8].fs.label, "xfs");
    assert_eq!(plan.cells[16].rep, 1);
    assert_eq!(plan.cells[16].seed, 8);
    // 32 x 35 s, plus 32 x (5 + 1) s.
    assert_eq!(plan.run_s, 32.0 * 35.0);
    assert_eq!(plan.estimate_s, 32.0 * 41.0);
    // Same cell, same id; another name of the experiment keeps the ids.
    let again = p(&GOOD.replace("\"demo\"", "\"renamed\"")).unwrap().plan();
    assert_eq!(again.cells[5].id, plan.cells[5].id);
    // A longer duration changes every id.
    let longer = p(&GOOD.replace("\"30s\"", "\"31s\"")).unwrap().plan();
    assert_ne!(longer.cells[5].id, plan.cells[5].id);
    // Adding a file system keeps the ids of the cells already there.
    let more = p(&GOOD.replace(
        "[[state]]\nkind = \"fresh\"",
        "[[fs]]\nkind = \"btrfs\"\n\n[[state]]\nkind = \"fresh\"",
    ))
    .unwrap()
    .plan();
    assert_eq!(more.cells.len(), 48);
    assert!(more.cells.iter().any(|c| c.id == plan.cells[20].id));
}

fn err(text: &str) -> String {
    p(text).unwrap_err().message
}

#[test]
fn errors_name_the_line_and_what_is_wrong() {
    let e = err(&GOOD.replace("kind = \"xfs\"", "kind = \"zfs\""));
    assert!(e.starts_with("x.toml:14:"), "{e}");
    assert!(e.contains("unknown file system kind \"zfs\""), "{e}");

    let e = err(&GOOD.replace("step = \"500us\"", "step = \"500\""));
    assert!(e.starts_with("x.toml:27:"), "{e}");
    assert!(
        e.contains("`step`: `500` is not a latency: give a unit"),
        "{e}"
    );

    let e = err(&GOOD.replace("name = \"varmail\"", "name = \"mailserver\""));
    assert!(e.starts_with("x.toml:30:"), "{e}");
    assert!(e.contains("unknown built-in workload"), "{e}");

    let e = err(&GOOD.replace("profile = \"meyer\"", "profile = \"nosuch\""));
    assert!(e.starts_with("x.toml:22:"), "{e}");
    assert!(e.contains("neither built in"), "{e}");

    let e = err(&GOOD.replace("repetitions = 2", "repetitions = 0"));
    assert!(e.starts_with("x.toml:5:"), "{e}");

    let e = err(&GOOD.replace("seed = 7", "seed = 7\ncolour = 1"));
    assert!(e.contains("unknown key `colour`"), "{e}");
    assert!(e.starts_with("x.toml:8:"), "{e}");

    let e = err(&GOOD.replace("duration = \"30s\"\n", ""));
    assert!(e.contains("missing key `duration`"), "{e}");

    let e = err(&GOOD.replace("max_ops = 100000", "name = \"x\""));
    assert!(
        e.contains("`name` does not apply to a state of kind \"aged\""),
        "{e}"
    );

    let e = err(&GOOD.replace("[[fs]]\nkind = \"xfs\"", "[[fs]]\nkind = \"ext4\""));
    assert!(e.contains("label \"ext4\" used twice"), "{e}");

    let e = err(&GOOD.replace("image_size = \"1GiB\"", "image_size = \"1MiB\""));
    assert!(e.starts_with("x.toml:8:") && e.contains("64 MiB"), "{e}");
}

#[test]
fn image_states_apply_to_their_file_system_only() {
    let text = GOOD.replace(
        "[devices]",
        "[[state]]\nkind = \"image\"\nname = \"ext4-meyer\"\nfs = \"ext4\"\n\n[devices]",
    );
    let plan = p(&text).unwrap().plan();
    let images: Vec<&Cell> = plan
        .cells
        .iter()
        .filter(|c| matches!(c.state, StateSpec::Image { .. }))
        .collect();
    assert_eq!(images.len(), 8);
    assert!(images.iter().all(|c| c.fs.label == "ext4"));
    let bad = GOOD.replace(
        "[devices]",
        "[[state]]\nkind = \"image\"\nname = \"a\"\nfs = \"btrfs\"\n\n[devices]",
    );
    assert!(p(&bad)
        .unwrap_err()
        .message
        .contains("no [[fs]] has this label"));
}

#[test]
fn no_devices_means_plain_images() {
    let text = GOOD
        .replace("[devices]\nlatencies = [\"none\"]\n", "")
        .replace(
            "ranges = [{ from = \"0\", to = \"1ms\", step = \"500us\" }]\n",
            "",
        );
    assert_eq!(latencies(&p(&text).unwrap()), vec![None]);
}

/// The same experiment file, reached by three spellings of its path (absolute, absolute
/// through `sub/..`, relative from the current directory), has the same cell ids; the profile
/// file's text is in every aged cell, and editing it changes the ids.
#[test]
fn cell_ids_do_not_depend_on_how_the_path_is_spelled() {
    let d = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(d.path()).unwrap();
    std::fs::create_dir(dir.join("sub")).unwrap();
    let prof = include_str!("../../../fsage-profile/builtin/meyer.toml");
    std::fs::write(dir.join("myprof.toml"), prof).unwrap();
    let exp = GOOD.replace("profile = \"meyer\"", "profile = \"myprof.toml\"");
    std::fs::write(dir.join("exp.toml"), &exp).unwrap();
    let cwd = std::env::current_dir().unwrap();
    let ups = "../".repeat(cwd.components().count() - 1);
    let relative = PathBuf::from(format!(
        "{ups}{}",
        dir.join("exp.toml")
            .display()
            .to_string()
            .trim_start_matches('/')
    ));
    assert!(relative.is_relative());
    let spellings = [
        dir.join("exp.toml"),
        dir.join("sub").join("..").join("exp.toml"),
        relative,
    ];
    let ids = |p: &Path| -> Vec<String> {
        load(p)
            .unwrap()
            .plan()
            .cells
            .into_iter()
            .map(|c| c.id)
            .collect()
    };
    let first = ids(&spellings[0]);
    assert!(first
        .iter()
        .any(|i| i.starts_with("ext4-aged.myprof-varmail-plain-r0-")));
    for sp in &spellings[1..] {
        assert_eq!(ids(sp), first, "planned as {}", sp.display());
    }
    // A copy of the experiment and its profile elsewhere (a clone of the repository) too.
    let other = dir.join("sub");
    std::fs::write(other.join("myprof.toml"), prof).unwrap();
    std::fs::write(other.join("exp.toml"), &exp).unwrap();
    assert_eq!(ids(&other.join("exp.toml")), first);
    let plan = load(&spellings[2]).unwrap().plan();
    let aged = plan
        .cells
        .iter()
        .find(|c| matches!(c.state, StateSpec::Aged { .. }))
        .unwrap();
    let pf = aged.profile_file.as_ref().unwrap();
    assert_eq!(
        (pf.written.as_str(), pf.text.as_str()),
        ("myprof.toml", prof)
    );
    assert!(plan
        .cells
        .iter()
        .all(|c| matches!(c.state, StateSpec::Fresh) == c.profile_file.is_none()));
    // The runner reads the profile from an absolute path whatever the spelling.
    let StateSpec::Aged { profile, .. } = &aged.state else {
        unreachable!()
    };
    assert_eq!(Path::new(profile), dir.join("myprof.toml"));
    // An edited profile is another cell.
    std::fs::write(dir.join("myprof.toml"), format!("{prof}\n# edited\n")).unwrap();
    assert_ne!(ids(&spellings[0]), first);
}

/// A workload that cannot run is refused when the experiment is read, with the line of the
/// experiment and the `.f` file's line, not after the aging by every cell.
#[test]
fn bad_workloads_and_variables_are_refused_at_load() {
    // A variable the built-in does not have, and one it has with a value it cannot take.
    let e = err(&GOOD.replace(
        "set = { nfiles = 100 }",
        "set = { meanfilesize = \"zzz\", nfiles = 10 }",
    ));
    assert!(e.starts_with("x.toml:31:"), "{e}");
    assert!(
        e.contains("`set.meanfilesize`") && e.contains("no variable $meanfilesize"),
        "{e}"
    );
    let e = err(&GOOD.replace("set = { nfiles = 100 }", "set = { nfiles = \"zzz\" }"));
    assert!(
        e.starts_with("x.toml:31:") && e.contains("`set.nfiles`"),
        "{e}"
    );
    // The documented variables of the built-ins are accepted.
    for b in BUILTIN_WORKLOADS {
        let text = GOOD.replace("\"varmail\"", &format!("\"{b}\"")).replace(
            "set = { nfiles = 100 }",
            "set = { nfiles = 100, filesize = \"16k\", nthreads = 2, meandirwidth = 10, \
                 iosize = \"64k\", meanappendsize = \"4k\" }",
        );
        p(&text).unwrap_or_else(|e| panic!("{b}: {e}"));
    }

    // A .f file that is not Filebench's language, and a good one given a bad value.
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("garbage.f"),
        "set $x=1\nthis is not a workload\n",
    )
    .unwrap();
    std::fs::write(
        d.path().join("small.f"),
        include_str!("../../examples/small.f"),
    )
    .unwrap();
    let with_file = |f: &str, set: &str| {
        let text = GOOD.replace(
            "name = \"varmail\"\nset = { nfiles = 100 }",
            &format!("file = \"{f}\"\nset = {{ {set} }}"),
        );
        parse(&text, "x.toml", d.path())
    };
    let e = with_file("garbage.f", "").unwrap_err().message;
    assert!(e.starts_with("x.toml:30:"), "{e}");
    assert!(e.contains("garbage.f:2:"), "{e}");
    let e = with_file("small.f", "meanfilesize = \"zzz\"")
        .unwrap_err()
        .message;
    assert!(
        e.starts_with("x.toml:31:") && e.contains("`set.meanfilesize`"),
        "{e}"
    );
    with_file("small.f", "meanfilesize = \"4k\", nfiles = 10").unwrap();
}

/// `plan` warns about a library image that is not in the library, naming `fsage image list`
/// once; an image that is there gives no warning.
#[test]
fn missing_library_images_are_named_once() {
    let text = GOOD.replace(
        "[devices]",
        "[[state]]\nkind = \"image\"\nname = \"not-there\"\nfs = \"ext4\"\n\n[devices]",
    );
    let lib = tempfile::tempdir().unwrap();
    let w = p(&text).unwrap().missing_images(lib.path());
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("x.toml: state image \"not-there\""),
        "{}",
        w[0]
    );
    assert_eq!(w[0].matches("image list").count(), 1, "{}", w[0]);
    assert!(p(GOOD).unwrap().missing_images(lib.path()).is_empty());
}

/// Cell ids of a resumed experiment must not change when the parsers of its quantities do:
/// ids pinned as they were before the latencies, durations and sizes moved to fsage-units.
#[test]
fn cell_ids_are_pinned() {
    let text = GOOD
        .replace("\"30s\"", "\"1.5m\"")
        .replace("\"5s\"", "\"0.5s\"")
        .replace("\"1GiB\"", "\"1.5GiB\"")
        .replace(
            "latencies = [\"none\"]",
            "latencies = [\"none\", \"250ns\", \"1.5ms\", \"100 µs\", \"2s\"]",
        )
        .replace("step = \"500us\"", "step = \"0.25ms\"");
    let plan = p(&text).unwrap().plan();
    let ids: Vec<&str> = plan
        .cells
        .iter()
        .filter(|c| c.rep == 0 && c.fs.label == "ext4")
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(
        ids,
        [
            "ext4-fresh-varmail-plain-r0-3eca255f40db",
            "ext4-aged.meyer-varmail-plain-r0-be96e6b0901d",
            "ext4-fresh-varmail-0us-r0-7ca8a7307773",
            "ext4-aged.meyer-varmail-0us-r0-e349d55faf16",
            "ext4-fresh-varmail-0.25us-r0-8bc1e6bbccd0",
            "ext4-aged.meyer-varmail-0.25us-r0-dd9feb29f4fb",
            "ext4-fresh-varmail-100us-r0-4c4500669acb",
            "ext4-aged.meyer-varmail-100us-r0-edb3431f9a77",
            "ext4-fresh-varmail-250us-r0-8a185fc20e55",
            "ext4-aged.meyer-varmail-250us-r0-511a6a72bd07",
            "ext4-fresh-varmail-500us-r0-05c5c7bc7f90",
            "ext4-aged.meyer-varmail-500us-r0-518b0b69e277",
            "ext4-fresh-varmail-750us-r0-ef363df398f9",
            "ext4-aged.meyer-varmail-750us-r0-b7a153431886",
            "ext4-fresh-varmail-1000us-r0-37b34ca9d68a",
            "ext4-aged.meyer-varmail-1000us-r0-be2017ae2d5d",
            "ext4-fresh-varmail-1500us-r0-f6d2651491c8",
            "ext4-aged.meyer-varmail-1500us-r0-b906792d8941",
            "ext4-fresh-varmail-2000000us-r0-ff0487b084da",
            "ext4-aged.meyer-varmail-2000000us-r0-dc574c4b0d08",
        ]
    );
}

#[test]
fn drives_cross_the_two_agings_on_an_ssd_only() {
    let with = |devices: &str| {
        p(&GOOD.replace(
            "latencies = [\"none\"]\nranges = [{ from = \"0\", to = \"1ms\", step = \"500us\" }]",
            devices,
        ))
    };
    // Without `drives`, an SSD cell runs on its own drive and has the id it would have anyway.
    let own = with("latencies = [\"ssd-sata\"]").unwrap();
    let own_ids: Vec<String> = own.plan().cells.iter().map(|c| c.id.clone()).collect();
    assert_eq!(own_ids.len(), 2 * 2 * 2);
    assert!(own.plan().cells.iter().all(|c| c.drive.is_none()));

    let s = with(
        "latencies = [\"ssd-sata\", \"hdd-7200\"]\ndrives = [\"own\", \"erased\", \"aged.meyer\"]",
    )
    .unwrap();
    let plan = s.plan();
    // Aged once for the disk, once more on the SSD, whose drive ages with it.
    assert_eq!(
        plan.aging_runs,
        [
            "ext4 aged:meyer",
            "ext4 aged:meyer on ssd-sata",
            "xfs aged:meyer",
            "xfs aged:meyer on ssd-sata"
        ]
    );
    let ext4_ssd_r0: Vec<(String, String)> = plan
        .cells
        .iter()
        .filter(|c| {
            c.rep == 0 && c.fs.label == "ext4" && c.device_model().unwrap().name == "ssd-sata"
        })
        .map(|c| {
            (
                c.state.id_part(),
                c.drive.as_ref().map_or("own".into(), |d| d.label()),
            )
        })
        .collect();
    // Fresh: its own (erased) drive and the aged drive; aged: its own drive and an erased one.
    assert_eq!(
        ext4_ssd_r0,
        [
            ("fresh", "own"),
            ("fresh", "aged.meyer"),
            ("aged.meyer", "own"),
            ("aged.meyer", "erased"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    // The disk keeps no state: its cells are the own-drive ones alone.
    let hdd = plan
        .cells
        .iter()
        .filter(|c| c.device_model().unwrap().name == "hdd-7200")
        .count();
    assert_eq!(hdd, 2 * 2 * 2);
    // Own-drive cells keep their ids; the others name their drive, and all differ.
    for c in plan.cells.iter().filter(|c| c.drive.is_none()) {
        if c.device_model().unwrap().name == "ssd-sata" {
            assert!(own_ids.contains(&c.id), "{}", c.id);
        }
    }
    let crossed = plan.cells.iter().find(|c| c.drive.is_some()).unwrap();
    assert!(
        crossed.id.contains("-ssd-sata-drive.aged.meyer-"),
        "{}",
        crossed.id
    );
    let ids: BTreeSet<&String> = plan.cells.iter().map(|c| &c.id).collect();
    assert_eq!(ids.len(), plan.cells.len());
    // The analysis sees the crossed cells as states of their own.
    assert_eq!(
        crossed.analysis_state().label(),
        "fresh on drive aged.meyer"
    );

    // Errors name the line and what is wrong.
    let e = with("latencies = [\"hdd-7200\"]\ndrives = [\"erased\"]")
        .unwrap_err()
        .message;
    assert!(
        e.contains("x.toml:") && e.contains("keeps a drive state"),
        "{e}"
    );
    let e = with("latencies = [\"ssd-sata\"]\ndrives = [\"aged.nobody\"]")
        .unwrap_err()
        .message;
    assert!(
        e.contains("\"aged.nobody\"") && e.contains("\"aged.meyer\""),
        "{e}"
    );
    let e = with("latencies = [\"ssd-sata\"]\ndrives = [\"own\", \"own\"]")
        .unwrap_err()
        .message;
    assert!(e.contains("given twice"), "{e}");
}

#[test]
fn sample_sets_each_cells_interval_without_changing_its_id() {
    let base = "name = \"s\"\nduration = \"10s\"\nimage_size = \"256MiB\"\n[[fs]]\nkind = \"ext4\"\n[[state]]\nkind = \"fresh\"\n[[workload]]\nname = \"varmail\"\n";
    let plain = p(base).unwrap();
    let sampled = p(&format!("sample = \"500ms\"\n{base}")).unwrap();
    assert_eq!(sampled.sample_s, Some(0.5));
    let (a, b) = (plain.plan().cells, sampled.plan().cells);
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.id, y.id);
        assert_eq!(y.sample_s, Some(0.5));
        assert_eq!(x.sample_s, None);
    }
    let bad = p(&format!("sample = \"0s\"\n{base}")).unwrap_err();
    assert!(
        bad.to_string().contains("`sample` must be more than 0"),
        "{bad}"
    );
}

#[test]
fn lock_stats_reaches_every_cell_without_changing_its_id() {
    let base = "name = \"l\"\nduration = \"10s\"\nimage_size = \"256MiB\"\n[[fs]]\nkind = \"ext4\"\n[[state]]\nkind = \"fresh\"\n[[workload]]\nname = \"varmail\"\n";
    let plain = p(base).unwrap();
    let locked = p(&format!("lock_stats = true\n{base}")).unwrap();
    assert!(locked.lock_stats && !plain.lock_stats);
    let (a, b) = (plain.plan().cells, locked.plan().cells);
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.id, y.id);
        assert!(y.lock_stats && !x.lock_stats);
    }
    // Absent from a cell's JSON unless set, so older cells read the same.
    let v = serde_json::to_value(&a[0]).unwrap();
    assert!(v.get("lock_stats").is_none());
    let bad = p(&format!("lock_stats = \"yes\"\n{base}")).unwrap_err();
    assert!(
        bad.to_string()
            .contains("`lock_stats` = \"yes\": must be true or false"),
        "{bad}"
    );
}

#[test]
fn kernels_put_file_systems_in_a_vm_one_per_kernel_when_several() {
    let body = "duration = \"10s\"\nimage_size = \"300MiB\"\n[[state]]\nkind = \"fresh\"\n[[workload]]\nname = \"varmail\"\n";
    let one = p(&format!("name = \"k\"\nkernel = \"6.1.0-56\"\n{body}[[fs]]\nkind = \"ext4\"\n[[fs]]\nkind = \"xfs\"\nkernel = \"6.1.0-55\"\n")).unwrap();
    let k: Vec<(&str, Option<&str>)> = one
        .file_systems
        .iter()
        .map(|f| (f.label.as_str(), f.kernel.as_deref()))
        .collect();
    assert_eq!(
        k,
        vec![("ext4", Some("6.1.0-56")), ("xfs", Some("6.1.0-55"))]
    );
    let two = p(&format!(
        "name = \"k\"\nkernel = [\"6.1.0-56\", \"6.1.0-55\"]\n{body}[[fs]]\nkind = \"ext4\"\n"
    ))
    .unwrap();
    let labels: Vec<&str> = two.file_systems.iter().map(|f| f.label.as_str()).collect();
    assert_eq!(labels, vec!["ext4-k6.1.0-56", "ext4-k6.1.0-55"]);
    // The kernel is part of what a cell measures: its id differs from the host kernel's.
    let host = p(&format!("name = \"k\"\n{body}[[fs]]\nkind = \"ext4\"\n")).unwrap();
    assert_eq!(host.file_systems[0].kernel, None);
    assert_ne!(host.plan().cells[0].id, one.plan().cells[0].id);
    for bad in [
        "kernel = \"../vmlinuz\"",
        "kernel = 6",
        "kernel = []",
        "kernel = [\"6.1.0-56\", \"6.1.0-56\"]",
    ] {
        let e = p(&format!(
            "name = \"k\"\n{bad}\n{body}[[fs]]\nkind = \"ext4\"\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("`kernel`"), "{bad}: {e}");
    }
}

#[test]
fn f2fs_and_nilfs2_are_file_systems_with_their_own_minimum_size() {
    let s = p(&GOOD
        .replace("kind = \"ext4\"", "kind = \"f2fs\"")
        .replace("kind = \"xfs\"", "kind = \"nilfs2\""))
    .unwrap();
    let kinds: Vec<&str> = s.file_systems.iter().map(|f| f.kind.as_str()).collect();
    assert_eq!(kinds, ["f2fs", "nilfs2"]);
    let small = GOOD
        .replace("image_size = \"1GiB\"", "image_size = \"128MiB\"")
        .replace("kind = \"xfs\"", "kind = \"nilfs2\"");
    let e = err(&small);
    assert!(e.starts_with("x.toml:14:"), "{e}");
    assert!(
        e.contains("nilfs2 needs an `image_size` of at least 134221824 bytes"),
        "{e}"
    );
    // 128 MiB is enough for f2fs (52 MiB) and ext4.
    p(&small.replace("kind = \"nilfs2\"", "kind = \"f2fs\"")).unwrap();
    // xfs (300 MiB) and btrfs (128 MiB) are checked at plan time too, not by mkfs in each cell.
    let e = err(&GOOD.replace("image_size = \"1GiB\"", "image_size = \"256MiB\""));
    assert!(e.starts_with("x.toml:14:"), "{e}");
    assert!(
        e.contains("xfs needs an `image_size` of at least 314572800 bytes"),
        "{e}"
    );
    let e = err(&GOOD
        .replace("image_size = \"1GiB\"", "image_size = \"100MiB\"")
        .replace("kind = \"xfs\"", "kind = \"btrfs\""));
    assert!(
        e.contains("btrfs needs an `image_size` of at least 134217728 bytes"),
        "{e}"
    );
}

/// Issue 33: a short file whose matrix expands to more cells than anyone could run (1000
/// repetitions x 1001 latencies x ...) was accepted, and `experiment plan` expanded every cell
/// (an id hashed and a record made for each); lists of any length made its checks (each entry
/// against the others) quadratic. Both are
/// refused before anything is expanded, naming the file (and the entry), under a time guard.
#[test]
fn a_matrix_too_large_to_run_is_refused_before_it_is_expanded() {
    fn guarded(text: String) -> String {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(p(&text).map(|_| ()).unwrap_err().message);
        });
        rx.recv_timeout(std::time::Duration::from_secs(20))
            .expect("the parser did not finish within 20 s")
    }
    // 1000 reps x 2 fs x 2 states x 1 workload x 1001 latencies ("none" and 10 ranges of 100).
    let ranges: String = (0..10)
        .map(|i| format!("{{ from = \"{i}ms\", to = \"{i}.099ms\", step = \"1us\" }}"))
        .collect::<Vec<_>>()
        .join(", ");
    let text = GOOD
        .replace("repetitions = 2", "repetitions = 1000")
        .replace(
            "ranges = [{ from = \"0\", to = \"1ms\", step = \"500us\" }]",
            &format!("ranges = [{ranges}]"),
        );
    let m = guarded(text);
    assert!(
        m.starts_with("x.toml: the matrix has 4004000 cells") && m.contains("at most 100000"),
        "{m}"
    );
    // 1001 file systems: refused at the 1001st, before any label is compared.
    let mut text = GOOD.to_string();
    for i in 0..1001 {
        text += &format!("\n[[fs]]\nkind = \"ext4\"\nlabel = \"e{i}\"\n");
    }
    let m = guarded(text);
    assert!(m.contains("1003 [[fs]] entries: at most 1000"), "{m}");
    assert!(m.starts_with("x.toml:"), "{m}");
}

/// The count the parser checks is the number of cells the plan makes.
#[test]
fn the_cell_count_is_the_plans() {
    for text in [
        GOOD.to_string(),
        GOOD.replace(
            "latencies = [\"none\"]",
            "latencies = [\"none\", \"ssd-sata\"]\ndrives = [\"own\", \"erased\", \"aged.meyer\"]",
        ),
        GOOD.replace(
            "latencies = [\"none\"]",
            "latencies = [\"none\", \"ssd-sata\", \"hdd-7200\"]\nage_on = \"memory\"\n\
             copy = [\"sparse\", \"whole\"]\ndrive = [\"erased\", \"previous\"]",
        ),
    ] {
        let s = p(&text).unwrap();
        assert_eq!(s.cell_count(), s.plan().cells.len() as u128);
    }
}

/// `[[workload]] data` chooses what the engine writes: part of the cell (and its id) when
/// given, absent otherwise, so that workloads without it keep their ids; a bad pattern is an
/// error at its line.
#[test]
fn a_workloads_data_pattern_is_part_of_its_cells() {
    let plain = p(GOOD).unwrap().plan();
    let zeros = p(&GOOD.replace(
        "set = { nfiles = 100 }",
        "set = { nfiles = 100 }\ndata = \"filebench\"",
    ))
    .unwrap()
    .plan();
    assert_eq!(plain.cells.len(), zeros.cells.len());
    for (a, b) in plain.cells.iter().zip(&zeros.cells) {
        assert_eq!(a.workload.data, None);
        assert_eq!(
            b.workload.data,
            Some(fsage_workload::DataPattern::Filebench)
        );
        assert_ne!(a.id, b.id);
    }
    let j = serde_json::to_string(&plain.cells[0]).unwrap();
    assert!(!j.contains("\"data\""), "{j}");
    let e = p(&GOOD.replace(
        "set = { nfiles = 100 }",
        "set = { nfiles = 100 }\ndata = \"compressed\"",
    ))
    .unwrap_err()
    .message;
    assert!(e.contains("x.toml:32:8") && e.contains("`data`"), "{e}");
}

/// `[devices] copy` and `drive` copy each SSD cell's image onto a drive in a chosen state, crossed;
/// `age_on = "memory"` ages without the drive. Cells without them keep their ids; the analyses
/// see each placement as a device of its own; bad combinations are refused at their line.
#[test]
fn copies_and_drive_states_are_crossed_on_an_ssd_only() {
    let with = |devices: &str| {
        p(&GOOD.replace(
            "latencies = [\"none\"]\nranges = [{ from = \"0\", to = \"1ms\", step = \"500us\" }]",
            devices,
        ))
    };
    let own = with("latencies = [\"ssd-sata\", \"hdd-7200\"]")
        .unwrap()
        .plan();
    let same = with("latencies = [\"ssd-sata\", \"hdd-7200\"]\nage_on = \"drive\"")
        .unwrap()
        .plan();
    let ids = |p: &Plan| p.cells.iter().map(|c| c.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&own), ids(&same), "the default, given, changes nothing");

    let s = with(
        "latencies = [\"ssd-sata\", \"hdd-7200\"]\nage_on = \"memory\"\ncopy = [\"sparse\", \"whole\"]\n\
         drive = [\"erased\", \"preconditioned\", \"previous\"]",
    )
    .unwrap();
    let plan = s.plan();
    // Aged in memory: the plain base (the disk's) serves the SSD too.
    assert_eq!(plan.aging_runs, ["ext4 aged:meyer", "xfs aged:meyer"]);
    let ssd: Vec<&Cell> = plan
        .cells
        .iter()
        .filter(|c| c.device_model().unwrap().name == "ssd-sata")
        .collect();
    // 2 repetitions x 2 fs x 2 states x 2 copies x 3 drives.
    assert_eq!(ssd.len(), 2 * 2 * 2 * 6);
    assert!(ssd.iter().all(|c| c.placement.is_some()));
    assert!(ssd
        .iter()
        .all(|c| c.aged_in_memory == matches!(c.state, StateSpec::Aged { .. })));
    let c = ssd
        .iter()
        .find(|c| {
            c.placement
                == Some(Placement {
                    copy: CopyMethod::Whole,
                    drive: DriveBefore::Previous,
                })
                && c.state.id_part() == "aged.meyer"
        })
        .unwrap();
    assert!(
        c.id.contains("-ssd-sata-aged.memory-copy.whole-drive.previous-r"),
        "{}",
        c.id
    );
    assert_eq!(
        c.device_label().as_deref(),
        Some("ssd-sata (whole copy, drive previous)")
    );
    // The disk keeps no state: its cells are as before.
    let hdd_own: Vec<&String> = own
        .cells
        .iter()
        .filter(|c| c.device_model().unwrap().name == "hdd-7200")
        .map(|c| &c.id)
        .collect();
    let hdd: Vec<&String> = plan
        .cells
        .iter()
        .filter(|c| c.device_model().unwrap().name == "hdd-7200")
        .map(|c| &c.id)
        .collect();
    assert_eq!(hdd, hdd_own);
    let all: BTreeSet<&String> = plan.cells.iter().map(|c| &c.id).collect();
    assert_eq!(all.len(), plan.cells.len());

    // Errors.
    let e = with("latencies = [\"hdd-7200\"]\ncopy = \"whole\"")
        .unwrap_err()
        .message;
    assert!(
        e.contains("x.toml:") && e.contains("keeps a drive state"),
        "{e}"
    );
    let e = with("latencies = [\"ssd-sata\"]\nage_on = \"memory\"")
        .unwrap_err()
        .message;
    assert!(e.contains("give `copy`"), "{e}");
    let e = with("latencies = [\"ssd-sata\"]\ndrive = \"previous\"")
        .unwrap_err()
        .message;
    assert!(e.contains("give `copy` too"), "{e}");
    let e = with("latencies = [\"ssd-sata\"]\ncopy = \"dd\"")
        .unwrap_err()
        .message;
    assert!(
        e.contains("\"dd\" is not one of \"sparse\", \"data\", \"whole\""),
        "{e}"
    );
    let e = with("latencies = [\"ssd-sata\"]\ncopy = [\"whole\", \"whole\"]")
        .unwrap_err()
        .message;
    assert!(e.contains("given twice"), "{e}");
    let e = with("latencies = [\"ssd-sata\"]\ncopy = \"whole\"\ndrives = [\"erased\"]")
        .unwrap_err()
        .message;
    assert!(e.contains("cannot be given together"), "{e}");
}

/// The latencies of `s`'s devices (`None`: a plain image), as the experiment file gave them.
fn latencies(s: &ExperimentSpec) -> Vec<Option<f64>> {
    s.devices
        .iter()
        .filter_map(|d| match d {
            None => Some(None),
            Some(m) => super::types::bare_latency_us(m).map(Some),
        })
        .collect()
}

/// The devices of `s` that are models other than a bare latency.
fn models(s: &ExperimentSpec) -> Vec<&fsage_device::ModelSpec> {
    s.devices
        .iter()
        .flatten()
        .filter(|m| super::types::bare_latency_us(m).is_none())
        .collect()
}

/// `[devices] latencies` (and `ranges`) are translated into fixed-latency models when the file
/// is read: a cell carries one device, and a latency's is `ModelSpec::fixed` of it.
#[test]
fn latencies_are_read_as_fixed_latency_models() {
    let s = p(GOOD).unwrap();
    assert_eq!(
        s.devices,
        vec![
            None,
            Some(fsage_device::ModelSpec::fixed(0)),
            Some(fsage_device::ModelSpec::fixed(500_000)),
            Some(fsage_device::ModelSpec::fixed(1_000_000)),
        ]
    );
    let plan = s.plan();
    let c = &plan.cells[2];
    assert_eq!(c.device, Some(fsage_device::ModelSpec::fixed(0)));
    assert_eq!((c.latency_us(), c.device_model()), (Some(0.0), None));
    assert_eq!(plan.cells[0].device, None);
}

/// A cell's JSON keeps format 1's keys (`latency_us`, `device_model`): a result written before
/// the cell carried one device reads into that device, and is written back as it was.
#[test]
fn a_cell_written_with_latency_us_and_device_model_reads_and_writes_as_before() {
    let plan = p(GOOD).unwrap().plan();
    let old = serde_json::to_value(&plan.cells[2]).unwrap();
    assert_eq!(old["latency_us"], 0.0);
    assert!(old.get("device_model").is_none() && old.get("device").is_none());
    // As format 1 wrote it: a latency in µs.
    let mut v = old.clone();
    v["latency_us"] = serde_json::json!(250.0);
    let c: Cell = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(c.device, Some(fsage_device::ModelSpec::fixed(250_000)));
    assert_eq!(serde_json::to_value(&c).unwrap(), v);
    // A model: `latency_us` null beside it.
    let hdd = fsage_device::resolve("hdd-7200").unwrap();
    v["latency_us"] = serde_json::Value::Null;
    v["device_model"] = serde_json::to_value(&hdd).unwrap();
    let c: Cell = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(c.device.as_ref(), Some(&hdd));
    assert_eq!(c.device_model(), Some(&hdd));
    assert_eq!(c.latency_us(), None);
    assert_eq!(serde_json::to_value(&c).unwrap(), v);
    // A plain image: `latency_us` null, no model.
    v["latency_us"] = serde_json::Value::Null;
    v.as_object_mut().unwrap().remove("device_model");
    let c: Cell = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(c.device, None);
    assert_eq!(serde_json::to_value(&c).unwrap(), v);
    // An older cell without the key at all is a plain image too.
    v.as_object_mut().unwrap().remove("latency_us");
    assert_eq!(serde_json::from_value::<Cell>(v).unwrap().device, None);
}

//! Git aging on a synthetic repository the test makes itself: the aged tree equals `git archive`
//! of the commit after every commit (plain directory) and at every measurement (an ext4 image);
//! tree mode gives the same op log twice and the commit's paths and sizes.

use fsage_git::git::{commit_list, Range};
use fsage_git::{git_age, GitAgeOptions, GitRow, Mode, Observer, Target};
use fsage_testkit::{git_archive as archive, skip, snapshot};
use std::path::{Path, PathBuf};
use std::process::Command;

fn have_git() -> bool {
    Command::new("git").arg("--version").output().is_ok()
}

fn repo(dir: &Path) -> PathBuf {
    let r = dir.join("synth");
    fsage_git::synthetic::make_repo(&r, 20).unwrap();
    r
}

fn options(repo: &Path, target: Target, mode: Mode) -> GitAgeOptions {
    GitAgeOptions {
        repo: repo.to_path_buf(),
        target,
        mode,
        every: 5,
        range: Range::default(),
        gc: false,
        resume: false,
        op_log: None,
        no_measure: true,
        device: None,
        grep_reps: 1,
        cost_models: Vec::new(),
        think: fsage_device::Think::default(),
        sync_each_pull: true,
        one_cpu: false,
        warm_cache: false,
        mem_limit: None,
        json: None,
        csv: None,
    }
}

/// Compares the aged tree with the commit after every commit.
struct EveryCommit {
    repo: PathBuf,
    tree: PathBuf,
    commits: Vec<String>,
    checked: usize,
    tree_mode: bool,
}

impl Observer for EveryCommit {
    fn progress(&mut self, done: u64, _total: u64, _s: f64) {
        let id = &self.commits[done as usize - 1];
        if self.tree_mode {
            let want = fsage_git::tree::ls_tree(&self.repo, id).unwrap();
            let got = fsage_git::tree::disk_files(&self.tree).unwrap();
            assert_eq!(
                got, want,
                "tree mode: paths and sizes after commit {done} ({id})"
            );
        } else {
            assert_eq!(
                snapshot(&self.tree),
                archive(&self.repo, id),
                "git mode: the tree after commit {done} ({id})"
            );
        }
        self.checked += 1;
    }
}

#[test]
fn git_mode_tree_equals_git_archive_after_every_commit() {
    if !have_git() {
        return skip("git_mode", "git is not installed");
    }
    let tmp = tempfile::tempdir().unwrap();
    let repo = repo(tmp.path());
    let target = tmp.path().join("aged");
    std::fs::create_dir(&target).unwrap();
    let commits: Vec<String> = commit_list(&repo, &Range::default())
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(commits.len(), 20);
    let mut obs = EveryCommit {
        repo: repo.clone(),
        tree: target.clone(),
        commits: commits.clone(),
        checked: 0,
        tree_mode: false,
    };
    let t = Target::Dir {
        path: target.clone(),
        clean_kind: fsage_lab::FsKind::EXT4,
        clean_image: tmp.path().join("clean.img"),
        clean_size: None,
    };
    let out = git_age(&options(&repo, t, Mode::Git), &mut obs).unwrap();
    assert_eq!(obs.checked, 20);
    assert!(out.series.finished && out.series.pulls_done == 20);
    assert_eq!(
        fsage_git::git::head(&target).unwrap().as_deref(),
        Some(commits[19].as_str())
    );
    let cfg = fsage_git::git::run(&target, &["config", "gc.auto"]).unwrap();
    assert_eq!(cfg.trim(), "0", "automatic gc is off without --gc");
    // A range: the commits from the 5th, at most 6.
    let r = Range {
        first: Some(commits[4].clone()),
        commits: Some(6),
        ..Default::default()
    };
    let l = commit_list(&repo, &r).unwrap();
    assert_eq!(l.len(), 6);
    assert_eq!(l[0].id, commits[4]);
    assert_eq!(l[5].id, commits[9]);
    let bad = Range {
        first: Some("no-such-rev".into()),
        ..Default::default()
    };
    assert!(commit_list(&repo, &bad)
        .unwrap_err()
        .message
        .contains("no-such-rev"));
}

#[test]
fn tree_mode_op_logs_are_the_same_and_trees_match_the_commits() {
    if !have_git() {
        return skip("tree_mode", "git is not installed");
    }
    let tmp = tempfile::tempdir().unwrap();
    let repo = repo(tmp.path());
    let commits: Vec<String> = commit_list(&repo, &Range::default())
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    let mut logs = Vec::new();
    for run in 0..2 {
        let target = tmp.path().join(format!("tree{run}"));
        std::fs::create_dir(&target).unwrap();
        let log = tmp.path().join(format!("ops{run}.txt"));
        let mut o = options(
            &repo,
            Target::Dir {
                path: target.clone(),
                clean_kind: fsage_lab::FsKind::EXT4,
                // fsage's checkpoint goes beside the clean image: one per run.
                clean_image: tmp.path().join(format!("clean{run}.img")),
                clean_size: None,
            },
            Mode::Tree,
        );
        o.op_log = Some(log.clone());
        let mut obs = EveryCommit {
            repo: repo.clone(),
            tree: target.clone(),
            commits: commits.clone(),
            checked: 0,
            tree_mode: true,
        };
        git_age(&o, &mut obs).unwrap();
        assert_eq!(obs.checked, 20);
        logs.push(std::fs::read_to_string(&log).unwrap());
    }
    assert_eq!(
        logs[0], logs[1],
        "the same repository and range give the same op log"
    );
    for verb in [" create ", " delete ", " rename ", " mkdir ", " rmdir "] {
        assert!(
            logs[0].contains(verb),
            "the op log has no{verb}line:\n{}",
            logs[0]
        );
    }
}

/// Unmounts and removes what the image test made, even when it fails.
struct ImageGuard(PathBuf);
impl Drop for ImageGuard {
    fn drop(&mut self) {
        if !fsage_sys::loops_backed_by(&self.0).is_empty() {
            let _ = fsage_lab::mount::umount(&self.0);
        }
    }
}

/// What the image tests age: the synthetic repository and a 64 MiB ext4 image beside it in
/// /dev/shm; the guard (dropped first) unmounts before the directory goes.
struct ImageRun {
    _guard: ImageGuard,
    tmp: tempfile::TempDir,
    repo: PathBuf,
    image: PathBuf,
    target: Target,
}

/// The image tests' setup, or `None` after the skip line when git, root or /dev/shm is missing
/// (`needs`: what root is needed for).
fn image_run(test: &str, needs: &str) -> Option<ImageRun> {
    if !have_git() {
        skip(test, "git is not installed");
        return None;
    }
    if !fsage_testkit::is_root() || !Path::new("/dev/shm").is_dir() {
        skip(test, format!("needs root ({needs}) and /dev/shm"));
        return None;
    }
    let tmp = fsage_testkit::shm_tmp("fsage-git-replay-");
    let repo = repo(tmp.path());
    let image = tmp.path().join("aged.img");
    Some(ImageRun {
        _guard: ImageGuard(image.clone()),
        target: Target::Image {
            path: image.clone(),
            kind: fsage_lab::FsKind::EXT4,
            size: 64 << 20,
        },
        tmp,
        repo,
        image,
    })
}

struct AtMeasurement {
    repo: PathBuf,
    tree: PathBuf,
    rows: Vec<GitRow>,
}

impl Observer for AtMeasurement {
    fn measured(&mut self, row: &GitRow) {
        assert_eq!(
            snapshot(&self.tree),
            archive(&self.repo, &row.commit),
            "the aged tree at pull {}",
            row.pulls
        );
        self.rows.push(row.clone());
    }
}

#[test]
fn image_run_measures_at_first_every_n_and_last_with_the_tree_of_each_commit() {
    let Some(run) = image_run("image_run", "loop devices, mounts") else {
        return;
    };
    let (tmp, repo, image, t) = (&run.tmp, &run.repo, &run.image, run.target.clone());
    let mut o = options(repo, t, Mode::Git);
    o.no_measure = false;
    let mut obs = AtMeasurement {
        repo: repo.clone(),
        tree: tmp.path().join("aged.img.mnt/synth"),
        rows: Vec::new(),
    };
    let out = git_age(&o, &mut obs).unwrap();
    let pulls: Vec<u64> = out.series.rows.iter().map(|r| r.pulls).collect();
    assert_eq!(pulls, vec![1, 6, 11, 16, 20]);
    assert_eq!(obs.rows.len(), 5);
    for r in &out.series.rows {
        assert!(r.du_bytes > 0);
        for (name, i) in [("aged", &r.aged), ("clean", &r.clean)] {
            assert!(i.grep_seconds > 0.0, "{name} grep time");
            assert!(i.read_files > 0 && i.read_bytes > 0, "{name} own read");
            let s = i
                .layout_score
                .unwrap_or_else(|| panic!("{name} layout score missing: {:?}", i.trace_error));
            assert!((0.0..=1.0).contains(&s), "{name} layout score {s}");
            assert!(i.read_blocks.unwrap() > 0);
            assert!(
                i.frag.free_extents.is_some(),
                "{name} frag: {:?}",
                i.frag.error
            );
        }
        assert!(r.ratio.is_some());
    }
    assert!(out.series.remounted && out.series.finished);
    assert!(
        out.series.greps_read_only,
        "an image target's greps run read-only"
    );
    // Nothing left: the image is unmounted, the clean instance gone; the checkpoint stays.
    assert!(fsage_sys::loops_backed_by(image).is_empty());
    assert!(!tmp.path().join("aged.img.clean").exists());
    assert!(out.state.exists());
    // A second run refuses to start over the checkpoint.
    let mut o2 = o.clone();
    o2.resume = false;
    let e = git_age(&o2, &mut fsage_git::run::Silent).unwrap_err();
    assert!(e.message.contains("checkpoint"), "{}", e.message);
}

#[test]
fn image_run_keeps_each_greps_trace_and_costs_it_on_the_models() {
    let Some(run) = image_run("image_costed", "loop devices, mounts, tracefs") else {
        return;
    };
    let (repo, image, t) = (&run.repo, &run.image, run.target.clone());
    let mut o = options(repo, t.clone(), Mode::Git);
    o.no_measure = false;
    o.every = 10;
    o.grep_reps = 3;
    let ms = fsage_device::resolve("1ms").unwrap();
    let us = fsage_device::resolve("100us").unwrap();
    o.cost_models = vec![ms.clone(), us.clone()];
    let out = git_age(&o, &mut fsage_git::run::Silent).unwrap();
    let s = &out.series;
    assert_eq!(s.grep_reps, 3);
    assert_eq!(s.model_names(), vec![ms.name.as_str(), us.name.as_str()]);
    let dir = fsage_git::traces_path(&t);
    assert_eq!(s.traces_dir.as_deref(), Some(dir.to_str().unwrap()));
    let pulls: Vec<u64> = s.rows.iter().map(|r| r.pulls).collect();
    assert_eq!(pulls, vec![1, 11, 20]);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    // Every grep's trace: the first under the name tools know, the others beside it.
    let mut want: Vec<String> = [1, 11, 20]
        .into_iter()
        .flat_map(|p| {
            ["aged", "clean"]
                .into_iter()
                .flat_map(move |w| (0..3).map(move |k| fsage_git::trace_file_name(p, w, k)))
        })
        .collect();
    want.sort();
    assert!(want.contains(&"00011-clean-r2.json".to_string()));
    assert_eq!(names, want);
    for r in &s.rows {
        let mut secs = Vec::new();
        for (name, i) in [("aged", &r.aged), ("clean", &r.clean)] {
            assert_eq!(i.grep_samples.len(), 3, "{name}: three timed greps");
            let mut sorted = i.grep_samples.clone();
            sorted.sort_by(f64::total_cmp);
            assert_eq!(i.grep_seconds, sorted[1], "{name}: the median");
            let file = i.trace_file.as_deref().expect("a kept trace");
            assert_eq!(
                Path::new(file),
                dir.join(format!("{:05}-{name}.json", r.pulls))
            );
            let traces: Vec<fsage_device::Trace> = (0..3)
                .map(|k| {
                    let f = dir.join(fsage_git::trace_file_name(r.pulls, name, k));
                    fsage_device::Trace::read(&f).unwrap()
                })
                .collect();
            for (k, tr) in traces.iter().enumerate() {
                assert!(
                    tr.source.ends_with(&format!("(grep {} of 3)", k + 1)),
                    "{}",
                    tr.source
                );
                assert_eq!(tr.device_size, Some(64 << 20));
                assert!(!tr.requests.is_empty(), "{name}: the grep read nothing");
                assert!(tr
                    .requests
                    .iter()
                    .all(|q| q.kind == fsage_device::RqKind::Read));
                assert!(
                    tr.requests.iter().all(|q| q.complete_ns.is_some()),
                    "{name}: every read has its completion"
                );
            }
            assert!(
                i.grep_cpu_seconds.is_some_and(|c| c > 0.0),
                "{name}: grep's CPU"
            );
            // Costed with the series' rule (the default fixed think time per read).
            assert_eq!(s.cost_think, fsage_device::Think::default());
            assert_eq!(i.modeled.len(), 2);
            for (spec, m) in [&ms, &us].into_iter().zip(&i.modeled) {
                assert_eq!(m.model, spec.name);
                // Every grep's trace costed on a model of its own.
                let costs: Vec<fsage_device::CostReport> = traces
                    .iter()
                    .map(|tr| {
                        let mut dev = spec.build(64 << 20).unwrap();
                        let o = fsage_device::CostOptions::default();
                        fsage_device::cost_with(tr, dev.as_mut(), o)
                    })
                    .collect();
                let each: Vec<f64> = costs.iter().map(|c| c.total_ns as f64 / 1e9).collect();
                assert_eq!(m.rep_seconds, each, "{name} on {}", m.model);
                let mut sorted = each.clone();
                sorted.sort_by(f64::total_cmp);
                assert_eq!(m.seconds, sorted[1], "{name} on {}: the median", m.model);
                // The median grep's own figures.
                let k = m.rep.expect("the median grep") as usize;
                let want = &costs[k];
                assert_eq!(m.seconds, want.total_ns as f64 / 1e9);
                assert!(
                    (m.think_seconds - want.think_ns as f64 / 1e9).abs() < 1e-12 && want.waited > 0,
                    "{name}: the think time is in the cost"
                );
                assert_eq!(m.requests, traces[k].requests.len() as u64);
                let gib = r.du_bytes as f64 / (1u64 << 30) as f64;
                assert!((m.seconds_per_gib - m.seconds / gib).abs() < 1e-9);
            }
            // On a fixed 1 ms device, no request can finish sooner than 1 ms, and a chain of
            // dependent reads costs at least its last read's 1 ms.
            assert!(i.modeled[0].seconds >= 1e-3);
            assert!(i.modeled[0].seconds > i.modeled[1].seconds);
            secs.push(i.modeled[0].seconds);
        }
        assert_eq!(r.modeled_ratio_on(&ms.name), Some(secs[0] / secs[1]));
        assert_eq!(r.modeled_ratio.len(), 2);
    }
    assert_eq!(s.costed_reps(), Some(3));
    // A second run over the traces of the first is refused before anything is made.
    std::fs::remove_file(&out.state).unwrap();
    std::fs::remove_file(image).unwrap();
    let e = git_age(&o, &mut fsage_git::run::Silent).unwrap_err();
    assert!(
        e.message.contains("traces of an earlier run"),
        "{}",
        e.message
    );
    assert!(!image.exists());
}

/// Two files in the aged tree updated in place in turn after every pull, each page written and
/// synced before the other file's (as a program keeping two data files beside the repository
/// would): their pages' last writes interleave, where the clean copy writes each file at once.
/// Made (written whole) after the first pull; every pull then rewrites `per_pull` pages of each.
struct InterleavedFiles {
    tree: PathBuf,
    pages: u64,
    per_pull: u64,
    next: u64,
}

impl Observer for InterleavedFiles {
    fn progress(&mut self, _done: u64, _total: u64, _s: f64) {
        use std::os::unix::fs::FileExt;
        let open = |name: &str| {
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .read(true)
                .write(true)
                .open(self.tree.join(name))
                .unwrap()
        };
        let (a, b) = (open("a.dat"), open("b.dat"));
        if a.metadata().unwrap().len() == 0 {
            for f in [&a, &b] {
                f.write_all_at(&vec![b'-'; (self.pages * 4096) as usize], 0)
                    .unwrap();
                f.sync_all().unwrap();
            }
            return;
        }
        for _ in 0..self.per_pull {
            let at = self.next % self.pages * 4096;
            for f in [&a, &b] {
                f.write_all_at(&[b'a' + (self.next % 26) as u8; 4096], at)
                    .unwrap();
                // An overwrite of written blocks: only the data page goes to the device.
                f.sync_data().unwrap();
            }
            self.next += 1;
        }
    }
}

/// On an SSD model the aged instance's greps are costed on the drive its own writes aged, the
/// clean one's on the drive its copy wrote: the files updated in turn sit on half the dies in
/// the aged drive and on all of them in the clean one, so on `ssd-nvme` (16 dies, reads limited
/// by the flash) the aged grep costs more. (Before drives aged, both were costed on erased
/// drives whose reads needed no flash, and the ratio was 1.) On `ssd-sata` (64 dies behind a
/// 550 MB/s interface) a 128 KiB read takes the interface's 238 µs on either layout: the
/// placement shows in its counters, not in its time.
#[test]
fn an_aged_ssd_drive_costs_interleaved_writes_and_is_kept_with_the_run() {
    let Some(run) = image_run("ssd_drives", "loop devices, mounts, tracefs") else {
        return;
    };
    let (tmp, repo, image, t) = (&run.tmp, &run.repo, &run.image, run.target.clone());
    let mut o = options(repo, t, Mode::Git);
    o.no_measure = false;
    o.every = 10;
    // 4 KiB blocks (a smaller ext4 gets 1 KiB ones, which straddle the drive's pages).
    if let Target::Image { size, .. } = &mut o.target {
        *size = 512 << 20;
    }
    let models = ["ssd-nvme", "ssd-sata", "hdd-7200"].map(|m| fsage_device::resolve(m).unwrap());
    o.cost_models = models.to_vec();
    let mut obs = InterleavedFiles {
        tree: tmp.path().join("aged.img.mnt/synth"),
        pages: 2048,
        per_pull: 128,
        next: 0,
    };
    let out = git_age(&o, &mut obs).unwrap();
    let s = &out.series;
    assert_eq!(s.aged_drives, ["ssd-nvme", "ssd-sata"]);
    let dir = fsage_git::drives::drives_path(image);
    assert_eq!(s.drives_dir.as_deref(), Some(dir.to_str().unwrap()));
    for f in ["ssd-nvme.ftl", "ssd-sata.ftl", "drives.json"] {
        assert!(dir.join(f).is_file(), "{f} kept with the run");
    }
    assert!(s.drive_notes.is_empty(), "{:?}", s.drive_notes);
    let last = s.rows.last().unwrap();
    for m in ["ssd-nvme", "ssd-sata"] {
        let ratio = last.modeled_ratio_on(m).unwrap();
        let (a, c) = (
            last.aged.modeled_on(m).unwrap(),
            last.clean.modeled_on(m).unwrap(),
        );
        let ssd = |f: &fsage_git::ModeledFigures| *f.stats.as_ref().unwrap().ssd().unwrap();
        let (sa, sc) = (ssd(a), ssd(c));
        let dies = |st: fsage_device::SsdCounters| st.dies_per_read().unwrap();
        // The same traces on erased drives whose unwritten pages are free (as before drives
        // aged).
        let flat = |i: &fsage_git::InstanceFigures| {
            let tr =
                fsage_device::Trace::read(Path::new(i.trace_file.as_deref().unwrap())).unwrap();
            let mut dev = fsage_device::resolve(m).unwrap().build(512 << 20).unwrap();
            let opts = fsage_device::CostOptions {
                unwritten: fsage_device::UnwrittenReads::Free,
                ..Default::default()
            };
            fsage_device::cost_with(&tr, dev.as_mut(), opts).total_ns as f64
        };
        let before = flat(&last.aged) / flat(&last.clean);
        eprintln!(
            "{m} at pull {}: aged/clean {ratio:.3} (on erased drives {before:.3}); dies per read \
             aged {:.2}, clean {:.2}; {} / {}",
            last.pulls,
            dies(sa),
            dies(sc),
            a.drive.as_deref().unwrap_or("-"),
            c.drive.as_deref().unwrap_or("-"),
        );
        assert!(a.drive.as_deref().unwrap().starts_with("aged drive"));
        assert!(c.drive.as_deref().unwrap().starts_with("clean drive"));
        assert_eq!(
            a.unwritten_reads,
            Some(fsage_device::UnwrittenReads::LbaOrder)
        );
        assert!(sa.host_flash_reads > 0 && sc.host_flash_reads > 0);
        assert!(
            dies(sa) < 0.9 * dies(sc),
            "{m}: the aged reads use fewer dies"
        );
        // Near 1 on erased drives: only the number and size of reads differ there. The clean
        // copy, written in sorted order with each file synced, reads in a few fewer requests
        // than the aged tree (1.03 to 1.05 seen on ssd-nvme and ssd-sata), so 10%, not 5%.
        assert!(
            (before - 1.0).abs() < 0.10,
            "{m}: {before} on erased drives"
        );
        if m == "ssd-nvme" {
            // 1.08 to 1.18 here: which reads were outstanding together is the recording's, and
            // varies from run to run.
            assert!(
                ratio > 1.04 && ratio > before + 0.04,
                "{m}: aged/clean {ratio}"
            );
        }
    }
    // A new run refuses the drives of this one (as it does its traces).
    std::fs::remove_file(&out.state).unwrap();
    std::fs::remove_file(image).unwrap();
    std::fs::remove_dir_all(fsage_git::traces_path(&o.target)).unwrap();
    let e = git_age(&o, &mut fsage_git::run::Silent).unwrap_err();
    assert!(
        e.message.contains("drive states of an earlier run"),
        "{}",
        e.message
    );
    assert!(!image.exists());
}

/// Notes the memory cgroup the run is in at every measurement, and the mount id of the aged
/// instance (a remount makes a new one).
struct InCgroup {
    seen: Vec<String>,
    mnt: PathBuf,
    mount_ids: Vec<Option<u64>>,
}

/// The mount id of what is mounted at `mnt` (the first field of /proc/self/mountinfo).
fn mount_id(mnt: &Path) -> Option<u64> {
    let want = mnt.canonicalize().ok()?;
    std::fs::read_to_string("/proc/self/mountinfo")
        .ok()?
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f.len() > 4 && Path::new(f[4]) == want).then(|| f[0].parse().ok())?
        })
        .next_back()
}

/// The cgroup v1 memory controller's path of this process (`/` when not in one of fsage's).
fn memory_cgroup() -> String {
    std::fs::read_to_string("/proc/self/cgroup")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            let mut f = l.splitn(3, ':');
            let (_, ctl, path) = (f.next()?, f.next()?, f.next()?);
            ctl.split(',')
                .any(|c| c == "memory")
                .then(|| path.to_string())
        })
        .unwrap_or_default()
}

impl Observer for InCgroup {
    fn measured(&mut self, _row: &GitRow) {
        self.seen.push(memory_cgroup());
        self.mount_ids.push(mount_id(&self.mnt));
    }
}

/// This process's cgroups of `git-age --mem-limit` under cgroup v1's memory controller.
fn own_git_cgroups() -> Vec<String> {
    let prefix = format!("fsage-git-age-{}-", std::process::id());
    std::fs::read_dir("/sys/fs/cgroup/memory")
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

/// `--warm-cache` measures the aged instance as the replay left it (its grep reads next to
/// nothing from the device, the cold clean copy's grep reads its tree), and `--mem-limit` runs
/// the replay and the measurements in a cgroup of their own, left and removed at the end, also
/// when the run fails inside it.
#[test]
fn warm_cache_measures_without_remounting_inside_a_memory_limit_removed_after() {
    let test = "warm_cache_measures_without_remounting_inside_a_memory_limit";
    if !Path::new("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists() {
        skip(
            test,
            "no cgroup v1 memory controller at /sys/fs/cgroup/memory",
        );
        return;
    }
    let Some(run) = image_run(test, "loop devices, mounts, cgroups") else {
        return;
    };
    let mut o = options(&run.repo, run.target.clone(), Mode::Git);
    o.no_measure = false;
    o.warm_cache = true;
    // Three greps, costed: a warm run costs its first grep only (the later ones would read what
    // the first cached), the clean reference greps once.
    o.grep_reps = 3;
    o.cost_models = vec![fsage_device::resolve("1ms").unwrap()];
    // Generous: the other tests of this binary run in the same process, so in the cgroup too.
    o.mem_limit = Some(1 << 30);
    let home = memory_cgroup();
    let mut obs = InCgroup {
        seen: Vec::new(),
        mnt: run.tmp.path().join("aged.img.mnt"),
        mount_ids: Vec::new(),
    };
    let out = git_age(&o, &mut obs).unwrap();
    assert!(out.series.warm_cache && !out.series.remounted && !out.series.greps_read_only);
    // Never remounted: one mount of the aged image from the first measurement to the last.
    assert_eq!(obs.mount_ids.len(), out.series.rows.len());
    assert!(obs.mount_ids[0].is_some(), "{:?}", obs.mount_ids);
    assert!(
        obs.mount_ids.iter().all(|m| *m == obs.mount_ids[0]),
        "{:?}",
        obs.mount_ids
    );
    assert_eq!(out.series.mem_limit_bytes, Some(1 << 30));
    assert!(!obs.seen.is_empty());
    for c in &obs.seen {
        assert!(c.contains("/fsage-git-age-"), "measured in {c}");
    }
    // The warm grep reads only what is not cached. Other processes on the machine may drop
    // every cache at any time (tests of fsage do), so one measurement of the five is asked to
    // show it, not each.
    let blocks: Vec<(u64, u64)> = out
        .series
        .rows
        .iter()
        .map(|r| {
            (
                r.aged.read_blocks.unwrap_or(0),
                r.clean.read_blocks.unwrap_or(0),
            )
        })
        .collect();
    assert!(
        blocks.iter().all(|b| b.1 > 0),
        "the clean copy is measured cold: {blocks:?}"
    );
    assert!(
        blocks.iter().any(|(a, c)| a * 4 < *c),
        "a warm grep reads what is not cached only: (aged, clean) blocks {blocks:?}"
    );
    for r in &out.series.rows {
        assert_eq!(r.aged.grep_samples.len(), 3, "pull {}", r.pulls);
        assert_eq!(r.clean.grep_samples.len(), 1, "pull {}", r.pulls);
        for f in [&r.aged, &r.clean] {
            assert_eq!(f.modeled.len(), 1, "pull {}", r.pulls);
            assert!(f.modeled[0].rep_seconds.is_empty(), "pull {}", r.pulls);
            assert_eq!(f.modeled[0].rep, None, "pull {}", r.pulls);
        }
    }
    // Every warm measurement says how often others dropped the cache before it; where nobody
    // did, the replay's cache is all there (fsage drops none itself in a warm run).
    for r in &out.series.rows {
        let d = r.aged.caches_dropped_before;
        assert!(d.is_some(), "pull {}: no count of foreign drops", r.pulls);
        if d == Some(0) && r.pulls > 1 {
            assert!(
                r.aged.read_blocks.unwrap_or(0) * 4 < r.clean.read_blocks.unwrap_or(0),
                "pull {}: no drop, yet the warm grep read {:?} blocks against the clean {:?}",
                r.pulls,
                r.aged.read_blocks,
                r.clean.read_blocks
            );
        }
    }
    // The image is in /dev/shm: its tmpfs pages are charged to the run and cannot be evicted,
    // so the limit is raised by them at every measurement (a disk would take no memory).
    for r in &out.series.rows {
        let m = r
            .aged
            .memory
            .expect("a memory-limited run records its cgroup");
        assert!(m.shmem_bytes > 0, "pull {}: {m:?}", r.pulls);
        assert_eq!(m.limit_bytes, (1 << 30) + m.shmem_bytes, "pull {}", r.pulls);
        assert_eq!(r.clean.memory, None, "pull {}", r.pulls);
    }
    assert_eq!(memory_cgroup(), home);
    assert!(own_git_cgroups().is_empty(), "{:?}", own_git_cgroups());

    // A run that fails inside the limit leaves it as well.
    let tmp2 = fsage_testkit::shm_tmp("fsage-git-replay-");
    let mut bad = options(
        &run.repo,
        Target::Image {
            path: tmp2.path().join("bad.img"),
            kind: fsage_lab::FsKind::EXT4,
            size: 64 << 20,
        },
        Mode::Git,
    );
    bad.range.first = Some("no-such-revision".into());
    bad.mem_limit = Some(1 << 30);
    assert!(git_age(&bad, &mut fsage_git::run::Silent).is_err());
    assert_eq!(memory_cgroup(), home);
    assert!(own_git_cgroups().is_empty(), "{:?}", own_git_cgroups());
    // Too small a limit is refused before anything is made.
    bad.range.first = None;
    bad.mem_limit = Some(1 << 20);
    let e = git_age(&bad, &mut fsage_git::run::Silent).unwrap_err();
    assert!(e.message.contains("--mem-limit"), "{}", e.message);
    assert!(!tmp2.path().join("bad.img").exists());
}

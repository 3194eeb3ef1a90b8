//! The reproductions: for each published figure, the paper's procedure as an fsage experiment or
//! Git-aging runs, scaled, with what it needs that this build may lack.

/// A Git-aging run is recorded as it was defined, so the record holds its type.
pub use crate::repro::record::GitRun;

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

/// How a reproduction runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An experiment file (`fsage experiment run`), written by [`Reproduction::experiment_toml`].
    Experiment,
    /// Git-aging runs (`fsage git-age`), one per [`GitRun`].
    Git,
    /// Needs a measurement fsage has not got: listed, never run.
    NotBuilt,
}

/// One published figure and how fsage reproduces it.
#[derive(Debug, Clone, Copy)]
pub struct Reproduction {
    /// The command's name for it (`geriatrix-fig7`); the `reproduction` column of
    /// `published.csv`.
    pub name: &'static str,
    pub paper: &'static str,
    pub figure: &'static str,
    /// What the figure shows, in a sentence.
    pub what: &'static str,
    /// The paper's procedure and how fsage follows it.
    pub procedure: &'static str,
    pub kind: Kind,
    /// The default scale (`--scale`), in bytes; what it is the size of is `scale_of`.
    pub default_scale: u64,
    pub scale_of: &'static str,
    /// The paper's own size of the same thing.
    pub paper_scale: &'static str,
    /// How long a run takes at the default scale on a 2-core machine (an estimate, with what it
    /// rests on).
    pub expected: &'static str,
}

/// Every reproduction, in the order `fsage reproduce list` shows them.
pub const REPRODUCTIONS: [Reproduction; 8] = [
    Reproduction {
        name: "geriatrix-fig7",
        paper: "Kadekodi et al., Geriatrix, USENIX ATC '18",
        figure: "Figure 7",
        what: "fileserver throughput aged against unaged, ext4 and btrfs, on a 64 GB Crucial M4 \
               (59 GB file systems) and a 120 GB ADATA S510 (100 GB file systems)",
        procedure: "each file system aged in memory by the meyer profile to 70% full (not through \
                    the drive), its image written onto the drive whole as dd does (every block, \
                    free space included) before each run, the drive as the previous run left \
                    it, then Filebench's fileserver writing what Filebench writes (zeros); the \
                    drives are fsage's models of the paper's, scaled to keep the paper's \
                    file-system-to-drive ratio (59/64 and 100/120). f2fs is left out: this \
                    host's kernel has no f2fs, and a guest here runs only under TCG, whose \
                    timings do not compare with the models' real time",
        kind: Kind::Experiment,
        default_scale: GIB,
        scale_of: "each file system (the drives are scaled to 64/59 and 120/100 of it)",
        paper_scale: "59 GB and 100 GB file systems on 64 GB and 120 GB drives",
        expected: "about 20 to 40 minutes at 1 GiB: 24 cells (the experiment plan estimates \
                   12 minutes of workload) plus a whole-drive copy each, and two agings \
                   (measured 28 Nov 2026: 18.5 minutes on a 2-core machine at load 10-30)",
    },
    Reproduction {
        name: "geriatrix-fig7-procedures",
        paper: "Kadekodi et al., Geriatrix, USENIX ATC '18",
        figure: "Figure 7",
        what:
            "geriatrix-fig7 with the paper's two choices crossed: the image copied whole (dd) or \
               sparse (data only, free space trimmed), onto the drive as the previous run left \
               it or erased; shows which choice decides the result",
        procedure: "as geriatrix-fig7, with `copy = [\"whole\", \"sparse\"]` and `drive = \
                    [\"previous\", \"erased\"]`: four placements per cell; the published numbers \
                    are compared with the paper's own (whole copy, previous drive), the others are \
                    in the report's aged-against-fresh section beside them",
        kind: Kind::Experiment,
        default_scale: GIB,
        scale_of: "each file system (the drives are scaled to 64/59 and 120/100 of it)",
        paper_scale: "59 GB and 100 GB file systems on 64 GB and 120 GB drives",
        expected: "about 1 hour at 1 GiB: 96 cells (the experiment plan estimates 50 minutes \
                   of workload) plus a copy onto the drive each, and two agings (measured 29 Nov \
                   2026: 51.8 minutes on a 2-core machine)",
    },
    Reproduction {
        name: "geriatrix-fig5a",
        paper: "Kadekodi et al., Geriatrix, USENIX ATC '18",
        figure: "Figure 5a",
        what: "fileserver throughput aged against unaged, ext4 and btrfs, on a 500 GB WDC \
               WD5000YS hard disk",
        procedure: "each file system aged by the agrawal profile to 80% full, then Filebench's \
                    fileserver on fsage's model of the WD5000YS in real time, against the same \
                    file system unaged (xfs, also in the figure, is left out: issue 32 asks \
                    for btrfs and ext4)",
        kind: Kind::Experiment,
        default_scale: 2 * GIB,
        scale_of: "each file system (at the start of the modeled disk)",
        paper_scale: "100 GB file systems on a 500 GB disk",
        expected: "about 15 to 30 minutes at 2 GiB: 12 cells of 25 s and two agings to 80% \
                   (measured 28 Nov 2026: 14.3 minutes on a 2-core machine at load 30-47, \
                   its agings 2.6 minutes for ext4 and 4.9 for btrfs)",
    },
    Reproduction {
        name: "conway-fig3",
        paper: "Conway et al., How to Fragment Your File System, USENIX ;login: 2017",
        figure: "Figure 3",
        what: "btrfs on a hard disk: cold-cache grep of the aged tree over a clean copy, against \
               pulls (2x at 100 pulls, 10x at 1,100, 20.6x at 10,000)",
        procedure: "git-age: one git pull per commit of nginx's history (--repo), every 100 \
                    pulls the aged tree and a clean copy on a new file system grepped cold; \
                    each grep's block trace costed on fsage's model of the paper's hard disk \
                    (Seagate ST500DM002); the ratio compared is the modeled one. The same \
                    traces are costed on the paper's SSD and on hdd-7200, ssd-sata and \
                    ssd-nvme too, so that one replay gives every drive's series. nginx has \
                    7,747 commits: the 10,000-pull points are not reached",
        kind: Kind::Git,
        default_scale: 4 * GIB,
        scale_of: "the partition (the image the history is replayed onto; the clean copy's \
                   is the same size)",
        paper_scale: "a 20 GiB partition",
        expected: "about 1.5 to 2 hours at 4 GiB on a shared 2-core machine (measured 28 Nov \
                   2026 beside five other sessions, load 8-79: 2,600 pulls in 50 minutes, \
                   three quarters of it in the measurements every 100 pulls, which grow \
                   with the tree); --every 250 measures a third as often",
    },
    Reproduction {
        name: "conway-fig4",
        paper: "Conway et al., How to Fragment Your File System, USENIX ;login: 2017",
        figure: "Figure 4",
        what: "XFS on an SSD: aged over clean grep time against pulls (1.25x at 800, 1.5x at \
               2,500, 1.9x at 10,000)",
        procedure: "as conway-fig3, with XFS, the ratio compared the one costed on fsage's \
                    model of the paper's SSD (SanDisk Extreme Pro 240 GB), each instance's reads \
                    on a drive its own writes aged (the aged image's writes and discards from \
                    its first mount on, the clean copy's onto an erased drive); the same traces \
                    are costed on the paper's hard disk and the generic models too",
        kind: Kind::Git,
        default_scale: 4 * GIB,
        scale_of: "the partition",
        paper_scale: "a 20 GiB partition",
        expected: "about 1.5 to 2 hours at 4 GiB on a shared 2-core machine (measured 28 Nov \
                   2026 beside five other sessions: 2,600 pulls in 50 minutes; a quiet \
                   machine measured every 250 pulls in 15 minutes)",
    },
    Reproduction {
        name: "conway-fig5",
        paper: "Conway et al., How to Fragment Your File System, USENIX ;login: 2017",
        figure: "Figure 5",
        what: "ext4 on a hard disk, warm-cache greps as the file system outgrows memory, for \
               five memory sizes",
        procedure: "git-age with warm caches (no cache drop, no remount between measurements) \
                    under memory limits scaled from the paper's 768-2048 MB by nginx's final \
                    size over the paper's 1.2 GiB (a third), the greps on fsage's ST500DM002 \
                    model; and the cold aged and clean series beside them",
        kind: Kind::Git,
        default_scale: 4 * GIB,
        scale_of: "the partition",
        paper_scale: "a 20 GiB partition, 768-2048 MB of RAM",
        expected: "about 2 hours at 4 GiB on a quiet 2-core machine (measured 29 Nov 2026: \
                   the cold run 55 minutes beside another run, the five warm runs 71 minutes \
                   together)",
    },
    Reproduction {
        name: "conway-fig6",
        paper: "Conway et al., How to Fragment Your File System, USENIX ;login: 2017",
        figure: "Figure 6",
        what: "ext4 on a hard disk on partitions of two sizes: a larger partition does not \
               mitigate aging, and ext4's clean grep gets slower on it",
        procedure: "git-age of nginx onto ext4 partitions of SCALE and 5 x SCALE (the authors' \
                    data has 4 GB and 20 GB), two separate replays as the paper's were, every \
                    500 pulls, the greps costed on fsage's ST500DM002 model (and the other \
                    models, as conway-fig3); the ratios compared are at the last pull (7,747), \
                    the authors' at 10,000",
        kind: Kind::Git,
        default_scale: 4 * GIB,
        scale_of: "the smaller partition (the larger is 5 times it)",
        paper_scale: "4 GB and 20 GB partitions (the authors' data)",
        expected: "about 2 hours at 4 GiB: two ext4 replays of about an hour each on a \
                   shared 2-core machine (measured 28 Nov 2026: the 4 GiB one reached pull \
                   6,268 in 52 minutes beside five other sessions)",
    },
    Reproduction {
        name: "slippery-fig8",
        paper: "Santana et al., A Fast and Slippery Slope for File Systems, INFLOW '15",
        figure: "Figure 8",
        what: "Nilfs2's most contended locks (i_mutex_dir_key instances) by wait time under \
               fileserver at 0, 1 and 10 ms of added device latency",
        procedure: "nilfs2, fresh, on fsage's slow device at 0, 1 and 10 ms per request (the \
                    paper: dm-delay over a RAM disk), Filebench's fileserver with the paper's \
                    50 threads, 128 KiB files, 20 per directory, caches dropped first and the \
                    page cache held to half the fileset (the paper's 1:2 cache:dataset \
                    ratio); the waits recorded over the 60 s of the measured phase, as the \
                    paper's perf lock recording was. The file system runs in a QEMU guest (this host's \
                    kernel has no nilfs2) under a kernel since 5.19, whose \
                    lock:contention_begin/contention_end tracepoints (through tracefs, the \
                    caller from a stack trace) stand in for perf lock, which needs lockdep: \
                    a directory inode's i_rwsem (lockdep's i_mutex_dir_key) is told by its \
                    callers (the VFS's directory-locking sites). The fileset is 1,000 files \
                    (125 MiB) on a file system of 8 GiB by default: nilfs2 never overwrites, \
                    and fileserver writes its log faster than nilfs_cleanerd reclaims it (1 GiB \
                    file systems ran out of space within 30 s at every latency). Without KVM \
                    the guest is emulated (TCG) and every wait time is an emulated one",
        kind: Kind::Experiment,
        default_scale: 8 * GIB,
        scale_of: "the file system (the fileset stays 1,000 files of 128 KiB)",
        paper_scale: "82K files of 128 KB, about 10 GB, on a RAM disk of a size not given",
        expected: "about 5 to 10 minutes under TCG: 3 cells of a guest boot, the fileset's \
                   layout and 5 + 60 s of fileserver, each slowed by emulation (measured 28 \
                   Nov 2026: 4.7 minutes at nice 19, load 2-6)",
    },
];

/// The placement label (how the image reached the drive, as the analyses name it) of the
/// paper's own procedure, for reproductions that run others beside it.
pub const PAPER_PLACEMENT: &str = "whole copy, drive previous";

/// The reproduction called `name`.
pub fn find(name: &str) -> Option<&'static Reproduction> {
    REPRODUCTIONS.iter().find(|r| r.name == name)
}

/// Something a reproduction needs that a build of fsage may lack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// A drive model (`MODEL` or `MODEL@SIZE`, a model scaled down).
    Model(String),
    /// An experiment setting (`[devices] copy`), with the value used and why.
    Setting {
        key: &'static str,
        value: &'static str,
        why: &'static str,
    },
    /// A Git-aging option fsage-git has not got.
    GitOption {
        option: &'static str,
        why: &'static str,
    },
    /// A measurement no part of fsage makes.
    Measurement(&'static str),
    /// A kernel with the file system `fs`, of version `since` or later: this one, or a cached
    /// guest kernel (`fsage vm kernel fetch`) and QEMU.
    Kernel {
        fs: &'static str,
        since: (u64, u64),
        why: &'static str,
    },
}

/// Git-aging options this build's fsage-git has (the ones a reproduction may need): warm-cache
/// measurements under a memory limit (`GitAgeOptions::warm_cache`, `mem_limit`), used by
/// `run::git_options`.
pub const GIT_OPTIONS_BUILT: &[&str] = &["--warm-cache --mem-limit"];

/// The ST500DM002 (Conway's hard disk) and the SanDisk Extreme Pro 240 GB (Conway's SSD), by
/// fsage's model names.
pub const CONWAY_HDD: &str = "st500dm002";
pub const CONWAY_SSD: &str = "sandisk-extreme-pro-240g";

/// What Conway's cold-cache runs cost every grep on: the paper's two drives and fsage's
/// generic hard disk and SSDs, so that one replay of a file system gives its hard-disk and its
/// SSD series (the paper ran each drive separately; the layout a replay leaves is the same
/// whichever drive is asked about, and each SSD model keeps a drive of its own that the
/// instance's own writes aged).
pub const CONWAY_COLD_MODELS: [&str; 5] =
    [CONWAY_HDD, CONWAY_SSD, "hdd-7200", "ssd-sata", "ssd-nvme"];

/// `n` bytes rounded up to whole MiB, as a model's `@SIZE`.
fn mib_text(n: f64) -> String {
    format!("{}MiB", (n / MIB as f64).ceil() as u64)
}

impl Reproduction {
    /// The reproduction whose published points this one is compared with (its own name, or the
    /// figure's main reproduction for a variant).
    pub fn published_as(&self) -> &'static str {
        match self.name {
            "geriatrix-fig7-procedures" => "geriatrix-fig7",
            n => n,
        }
    }

    /// The drive models at `scale` (Geriatrix Figure 7's scaled to keep the paper's ratios).
    pub fn models(&self, scale: u64) -> Vec<String> {
        match self.name {
            "geriatrix-fig7" | "geriatrix-fig7-procedures" => vec![
                format!("crucial-m4-64g@{}", mib_text(scale as f64 * 64.0 / 59.0)),
                format!("adata-s510-120g@{}", mib_text(scale as f64 * 120.0 / 100.0)),
            ],
            "geriatrix-fig5a" => vec!["wd5000ys".into()],
            "conway-fig3" | "conway-fig4" | "conway-fig6" => {
                CONWAY_COLD_MODELS.iter().map(|m| m.to_string()).collect()
            }
            "conway-fig5" => vec![CONWAY_HDD.into()],
            _ => vec![],
        }
    }

    /// What it needs beyond what every build has, at `scale`.
    pub fn needs(&self, scale: u64) -> Vec<Need> {
        let mut n: Vec<Need> = self.models(scale).into_iter().map(Need::Model).collect();
        match self.name {
            "geriatrix-fig7" | "geriatrix-fig7-procedures" => n.extend([
                Need::Setting {
                    key: "age_on",
                    value: "memory",
                    why: "the paper aged its file systems in memory, not through the drive",
                },
                Need::Setting {
                    key: "copy",
                    value: "whole",
                    why: "the paper wrote each image onto the raw drive with dd, every block",
                },
                Need::Setting {
                    key: "drive",
                    value: "previous",
                    why: "the paper's runs followed one another on the same drive",
                },
                Need::Setting {
                    key: "data",
                    value: "filebench",
                    why: "Filebench writes zeros, which a compressing controller (the S510's \
                          SF-2281) stores almost for free",
                },
            ]),
            "conway-fig5" => n.push(Need::GitOption {
                option: "--warm-cache --mem-limit",
                why: "Figure 5's greps keep the page cache (no drop, no remount) under a \
                      memory limit",
            }),
            "slippery-fig8" => n.extend([
                Need::Setting {
                    key: "lock_stats",
                    value: "true",
                    why: "lock contention by lock instance over the measured phase \
                          (lock:contention_begin/end tracepoints with the caller's stack)",
                },
                Need::Kernel {
                    fs: "nilfs2",
                    since: (5, 19),
                    why: "the lock:contention_begin/contention_end tracepoints",
                },
            ]),
            _ => {}
        }
        n
    }

    /// The experiment file at `scale` (an [`Kind::Experiment`] reproduction).
    pub fn experiment_toml(&self, scale: u64) -> Option<String> {
        let size = fsage_units::format_size(scale).replace(' ', "");
        let gib = scale as f64 / GIB as f64;
        let models = self
            .models(scale)
            .iter()
            .map(|m| format!("\"{m}\""))
            .collect::<Vec<_>>()
            .join(", ");
        match self.name {
            // The paper ran 10 minutes on 59 GB; 20 s at 1 GiB writes about the drive's
            // capacity, as 10 minutes did there: the run and the fileset grow with the scale.
            "geriatrix-fig7" | "geriatrix-fig7-procedures" => {
                let secs = (20.0 * gib).clamp(20.0, 600.0).round();
                let nfiles = ((1000.0 * gib).round() as u64).max(200);
                let (copy, drive) = if self.name == "geriatrix-fig7" {
                    ("\"whole\"", "\"previous\"")
                } else {
                    ("[\"whole\", \"sparse\"]", "[\"previous\", \"erased\"]")
                };
                Some(format!(
                    "# Written by `fsage reproduce {} --scale {size}`: {} {}, scaled.\n\
                     name = \"{}\"\n\
                     description = \"Geriatrix Figure 7 scaled to {size} file systems: aged in memory, \
                     copied whole onto the drive before each run, fileserver\"\n\
                     duration = \"{secs}s\"\nwarmup = \"5s\"\nrepetitions = 3\ncache_ratio = 0.5\n\
                     seed = 1\nimage_size = \"{size}\"\n\n\
                     [[fs]]\nkind = \"ext4\"\n\n[[fs]]\nkind = \"btrfs\"\n\n\
                     [[state]]\nkind = \"fresh\"\n\n\
                     [[state]]\nkind = \"aged\"\nprofile = \"meyer\"\nfullness = 0.7\n\n\
                     [devices]\nlatencies = [{models}]\nage_on = \"memory\"\ncopy = {copy}\n\
                     drive = {drive}\n\n\
                     [[workload]]\nname = \"fileserver\"\nset = {{ nfiles = {nfiles}, nthreads = 16 }}\n\
                     data = \"filebench\"\n",
                    self.name, self.paper, self.figure, self.name
                ))
            }
            "geriatrix-fig5a" => {
                let nfiles = ((500.0 * gib).round() as u64).max(200);
                Some(format!(
                    "# Written by `fsage reproduce geriatrix-fig5a --scale {size}`: {} {}, scaled.\n\
                     name = \"geriatrix-fig5a\"\n\
                     description = \"Geriatrix Figure 5a scaled to {size} file systems: agrawal to 80%, \
                     fileserver on the WD5000YS model\"\n\
                     duration = \"20s\"\nwarmup = \"5s\"\nrepetitions = 3\ncache_ratio = 0.5\n\
                     seed = 1\nimage_size = \"{size}\"\n\n\
                     [[fs]]\nkind = \"ext4\"\n\n[[fs]]\nkind = \"btrfs\"\n\n\
                     [[state]]\nkind = \"fresh\"\n\n\
                     [[state]]\nkind = \"aged\"\nprofile = \"agrawal\"\nfullness = 0.8\n\n\
                     [devices]\nlatencies = [{models}]\n\n\
                     [[workload]]\nname = \"fileserver\"\nset = {{ nfiles = {nfiles} }}\n",
                    self.paper, self.figure
                ))
            }
            // The paper: 82K files of 128 KB (about 10 GB), 50 threads, 20 files per directory,
            // 60 s of perf lock recording, a 1:2 cache:dataset ratio. Here 1,000 files, so that
            // nilfs2's log (which its cleaner reclaims more slowly than fileserver writes) has
            // room.
            "slippery-fig8" => {
                let nfiles = 1000;
                Some(format!(
                    "# Written by `fsage reproduce slippery-fig8 --scale {size}`: {} {}, scaled.\n\
                     name = \"slippery-fig8\"\n\
                     description = \"Slippery slope Figure 8 at {size}: nilfs2 under fileserver at 0, 1 \
                     and 10 ms, lock contention by lock instance\"\n\
                     duration = \"60s\"\nwarmup = \"5s\"\nrepetitions = 1\nsample = \"1s\"\n\
                     cache_ratio = 0.5\n\
                     lock_stats = true\nseed = 1\nimage_size = \"{size}\"\n\n\
                     [[fs]]\nkind = \"nilfs2\"\n\n\
                     [[state]]\nkind = \"fresh\"\n\n\
                     [devices]\nlatencies = [\"0\", \"1ms\", \"10ms\"]\n\n\
                     [[workload]]\nname = \"fileserver\"\n\
                     set = {{ nfiles = {nfiles}, meandirwidth = 20, filesize = \"128k\", nthreads = 50 }}\n",
                    self.paper, self.figure
                ))
            }
            _ => None,
        }
    }

    /// The Git-aging runs at `scale` (a [`Kind::Git`] reproduction).
    pub fn git_runs(&self, scale: u64) -> Vec<GitRun> {
        let run = |name: &str, fs: &str, size: u64, every: u64, models: &[&str]| GitRun {
            name: name.into(),
            fs: fs.into(),
            size,
            every,
            cost_models: models.iter().map(|m| m.to_string()).collect(),
            warm_mem_limit: None,
            answers: None,
        };
        let cold = &CONWAY_COLD_MODELS[..];
        match self.name {
            "conway-fig3" => vec![run("btrfs", "btrfs", scale, 100, cold)],
            "conway-fig4" => vec![run("xfs", "xfs", scale, 100, cold)],
            "conway-fig6" => {
                let mut small = run("ext4-small", "ext4", scale, 500, cold);
                small.answers = Some("aged/clean 4 GB partition".into());
                let mut large = run("ext4-large", "ext4", scale * 5, 500, cold);
                large.answers = Some("aged/clean 20 GB partition".into());
                vec![small, large]
            }
            "conway-fig5" => {
                // The paper's memory sizes over its final 1.2 GiB, times nginx's ~400 MiB.
                let mut v = vec![{
                    let mut r = run("ext4-cold", "ext4", scale, 500, &[CONWAY_HDD]);
                    r.answers = Some("cold".into());
                    r
                }];
                for mb in [768u64, 1024, 1280, 1536, 2048] {
                    let limit = mb * 1_000_000 / 3;
                    let mut r = run(
                        &format!("ext4-warm-{mb}"),
                        "ext4",
                        scale,
                        500,
                        &[CONWAY_HDD],
                    );
                    r.warm_mem_limit = Some(limit);
                    r.answers = Some(format!("warm {mb} MB"));
                    v.push(r);
                }
                v
            }
            _ => vec![],
        }
    }
}

/// `fsage reproduce list`: each reproduction with its paper, figure, scale, expected run time,
/// what this build lacks for it (`missing` gives those lines) and how it would run here
/// (`notes`: in a guest, emulated).
pub fn list_text(
    missing: &dyn Fn(&Reproduction) -> Vec<String>,
    notes: &dyn Fn(&Reproduction) -> Vec<String>,
) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    for r in &REPRODUCTIONS {
        let _ = writeln!(s, "{}  {}, {}", r.name, r.paper, r.figure);
        let _ = writeln!(s, "    {}", r.what);
        let _ = writeln!(
            s,
            "    scale: {} by default, the size of {} (the paper: {})",
            fsage_units::format_size(r.default_scale),
            r.scale_of,
            r.paper_scale
        );
        let _ = writeln!(s, "    expected run time: {}", r.expected);
        if r.kind == Kind::Git {
            let _ = writeln!(s, "    needs: --repo (nginx's history)");
        }
        let m = missing(r);
        if m.is_empty() {
            let _ = writeln!(s, "    runs with this build");
            for n in notes(r) {
                let _ = writeln!(s, "    note: {n}");
            }
        } else {
            let _ = writeln!(s, "    cannot run with this build; missing:");
            for line in m {
                let _ = writeln!(s, "      - {line}");
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repro::published::published;

    #[test]
    fn every_reproduction_has_published_points_and_every_point_a_known_reproduction_or_none() {
        let all = published();
        for r in &REPRODUCTIONS {
            assert!(
                all.iter().any(|p| p.reproduction == r.published_as()),
                "{} has no published point",
                r.name
            );
            assert!(!r.expected.is_empty() && !r.scale_of.is_empty());
        }
        for p in &all {
            if p.reproduction.starts_with("geriatrix-fig2") {
                continue;
            }
            assert!(find(&p.reproduction).is_some(), "{}", p.reproduction);
        }
    }
}

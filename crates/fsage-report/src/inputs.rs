//! What `fsage report` reads: every JSON fsage writes, recognised by its keys, from files or
//! directories, and the analyses computed from the cell results among them.

use fsage_analysis::verdicts::{base_verdicts, BaseVerdict, MeasuredBase};
use fsage_analysis::{analyze, Analysis, AnalysisOptions};
use fsage_exec::report::RunReport;
use fsage_measure::FragReport;
use fsage_results::against::AgainstFresh;
use fsage_results::bench::BenchResult;
use fsage_results::experiment::base::BaseImage;
use fsage_results::experiment::result::CellResult;
use fsage_results::experiment::spec::StateSpec;
use fsage_sys::Error;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// One input and the name it goes by in the report (its file name without `.json` and without a
/// `.run`, `.frag`, `.report` or `.against` suffix).
#[derive(Debug, Clone, Serialize)]
pub struct Named<T> {
    pub name: String,
    pub path: PathBuf,
    pub item: T,
}

/// Kinds of input, by what the JSON holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Run,
    Frag,
    Cell,
    Analysis,
    Against,
    /// A Git-aging series (`fsage git-age --json`).
    Git,
    /// A workload run (`fsage bench run --json`).
    Bench,
}

/// Everything the report shows.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReportSet {
    pub runs: Vec<Named<RunReport>>,
    pub frags: Vec<Named<FragReport>>,
    pub against: Vec<Named<AgainstFresh>>,
    /// Each aged base image of an experiment against its fresh one (from the experiments' `frag`
    /// measurements; see [`fsage_analysis::verdicts`]).
    pub verdicts: Vec<BaseVerdict>,
    pub cells: Vec<Named<CellResult>>,
    pub git: Vec<Named<fsage_results::git::GitSeries>>,
    /// Workload runs (`fsage bench run --json`), in the order given.
    pub bench: Vec<Named<BenchResult>>,
    /// Reproductions (`fsage reproduce NAME --out DIR`): each directory's record; its
    /// experiment's cells and its Git series are among the other inputs.
    pub reproductions: Vec<Named<fsage_results::repro::record::Record>>,
    /// Computed from the cell results (first), then any analysis JSON given.
    pub analyses: Vec<Named<Analysis>>,
    /// Files in a directory that were not fsage results, with why.
    pub skipped: Vec<(PathBuf, String)>,
}

impl ReportSet {
    /// Each reproduction's published points beside fsage's numbers: from the analyses, and from
    /// the Git series read from the reproduction's own directory.
    pub fn comparisons(&self) -> Vec<fsage_results::repro::compare::Comparison> {
        let all = fsage_results::repro::published::published();
        let analyses: Vec<&Analysis> = self.analyses.iter().map(|a| &a.item).collect();
        self.reproductions
            .iter()
            .map(|r| {
                let git: Vec<(&str, &fsage_results::git::GitSeries)> = self
                    .reproduction_series(r)
                    .into_iter()
                    .map(|g| (g.name.as_str(), &g.item))
                    .collect();
                let dir = r.path.parent();
                let locks: Vec<fsage_results::repro::compare::LockCell> = self
                    .cells
                    .iter()
                    .filter(|c| dir.is_some_and(|d| c.path.starts_with(d)))
                    .filter_map(|c| fsage_results::repro::compare::LockCell::of(&c.item))
                    .collect();
                fsage_results::repro::compare::compare(&r.item, &all, &analyses, &git, &locks)
            })
            .collect()
    }

    /// The Git series of the reproduction `r` (those read from under its directory).
    pub fn reproduction_series(
        &self,
        r: &Named<fsage_results::repro::record::Record>,
    ) -> Vec<&Named<fsage_results::git::GitSeries>> {
        let dir = r.path.parent();
        self.git
            .iter()
            .filter(|g| dir.is_some_and(|d| g.path.starts_with(d)))
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
            && self.frags.is_empty()
            && self.against.is_empty()
            && self.cells.is_empty()
            && self.analyses.is_empty()
            && self.git.is_empty()
            && self.bench.is_empty()
            && self.reproductions.is_empty()
    }
}

/// Which kind a JSON value is, from keys only that kind has.
pub fn detect(v: &serde_json::Value) -> Option<Kind> {
    let has = |k: &str| v.get(k).is_some();
    if v.get("format").and_then(|f| f.as_str()) == Some(fsage_results::git::SERIES_FORMAT) {
        Some(Kind::Git)
    } else if has("cell") && has("status") && has("samples") {
        Some(Kind::Cell)
    } else if has("aged_vs_fresh") && has("sweeps") {
        Some(Kind::Analysis)
    } else if has("aged_report") && has("fresh_report") && has("verdict") {
        Some(Kind::Against)
    } else if has("workload_text") && has("reps") && has("summary") && has("environment") {
        Some(Kind::Bench)
    } else if has("stop_reason") && has("profile") && has("age") && has("size") {
        Some(Kind::Run)
    } else if has("fs_type") && has("free_space") && has("block_size") {
        Some(Kind::Frag)
    } else {
        None
    }
}

fn name_of(p: &Path) -> String {
    let mut n = p.file_name().map_or_else(
        || p.display().to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    for suffix in [
        ".json", ".run", ".frag", ".report", ".against", ".bench", ".img",
    ] {
        if let Some(s) = n.strip_suffix(suffix) {
            n = s.to_string();
        }
    }
    n
}

/// Reads `paths` (files, or directories whose `*.json` files are read, not recursively) and
/// analyses the cell results with `opts`. A named file that is not an fsage result is an error;
/// in a directory it is skipped and listed.
pub fn load(paths: &[PathBuf], opts: &AnalysisOptions) -> Result<ReportSet, Error> {
    let mut set = ReportSet::default();
    // A reproduction's directory: its record, then its experiment's output directory and its
    // Git series as if given.
    let mut expanded = Vec::new();
    for p in paths {
        let record = p.join(fsage_results::repro::record::RECORD_FILE);
        if p.is_dir() && record.is_file() {
            let item = fsage_results::repro::record::read_record(p)?;
            set.reproductions.push(Named {
                name: item.name.clone(),
                path: record,
                item,
            });
            // Only what a run has written results into (none before the first run ends).
            let has_json = |d: &Path| {
                std::fs::read_dir(d).is_ok_and(|rd| {
                    rd.filter_map(|e| e.ok())
                        .any(|e| e.path().extension().is_some_and(|x| x == "json"))
                })
            };
            let exp = p.join(fsage_results::repro::record::EXPERIMENT_DIR);
            if exp
                .join(fsage_results::experiment::status::MARKER)
                .is_file()
                && has_json(&exp.join("cells"))
            {
                expanded.push(exp);
            }
            let git = p.join(fsage_results::repro::record::GIT_DIR);
            if has_json(&git) {
                expanded.push(git);
            }
        } else {
            expanded.push(p.clone());
        }
    }
    for p in &expanded {
        if p.is_dir() {
            // An experiment's output directory: its cells, and the aging and layout reports of
            // the images its states were made from.
            let experiment = p.join(fsage_results::experiment::status::MARKER).is_file();
            let dirs: Vec<PathBuf> = if experiment {
                ["cells", "aging", "frag"]
                    .iter()
                    .map(|d| p.join(d))
                    .filter(|d| d.is_dir())
                    .collect()
            } else {
                vec![p.clone()]
            };
            let mut files: Vec<PathBuf> = Vec::new();
            for d in &dirs {
                files.extend(
                    std::fs::read_dir(d)
                        .map_err(|e| Error::input(format!("{}: {e}", d.display())))?
                        .filter_map(|e| e.ok().map(|e| e.path()))
                        .filter(|f| f.is_file() && f.extension().is_some_and(|x| x == "json")),
                );
            }
            files.sort();
            if files.is_empty() {
                return Err(Error::input(format!(
                    "{}: no .json file in this directory",
                    p.display()
                )));
            }
            let cells_before = set.cells.len();
            let frags_before = set.frags.len();
            for f in files {
                if let Err(e) = add(&mut set, &f) {
                    set.skipped.push((f, e.message));
                }
            }
            if experiment {
                let v = experiment_verdicts(p, &set.frags[frags_before..]);
                set.verdicts.extend(v);
            }
            // Results of cells an edited experiment no longer has are not part of it.
            if let Some(ids) = plan_ids(p) {
                let mut kept = set.cells.split_off(cells_before);
                kept.retain(|c| {
                    let keep = ids.contains(&c.item.cell.id);
                    if !keep {
                        set.skipped.push((
                            c.path.clone(),
                            "a cell the experiment's current plan does not have".into(),
                        ));
                    }
                    keep
                });
                set.cells.extend(kept);
            }
        } else {
            add(&mut set, p)?;
        }
    }
    let samples: Vec<_> = set
        .cells
        .iter()
        .filter(|c| c.item.is_done())
        .flat_map(|c| c.item.analysis_samples())
        .collect();
    if !samples.is_empty() {
        let mut a = analyze(&samples, opts);
        a.notes.extend(
            fsage_results::experiment::result::hardware_mixes(set.cells.iter().map(|c| &c.item))
                .iter()
                .map(|m| format!("warning: {m}")),
        );
        a.notes.extend(
            fsage_results::experiment::result::storage_mixes(set.cells.iter().map(|c| &c.item))
                .iter()
                .map(|m| format!("warning: {}", m.storage_warning())),
        );
        set.analyses.insert(
            0,
            Named {
                name: format!("{} cell results", set.cells.len()),
                path: PathBuf::new(),
                item: a,
            },
        );
    }
    if set.is_empty() {
        return Err(Error::input(
            "nothing to report: no fsage result among the inputs (aging run reports, \
             fragmentation reports and comparisons, cell results, analyses, Git-aging series or \
             bench runs)",
        ));
    }
    Ok(set)
}

fn add(set: &mut ReportSet, p: &Path) -> Result<(), Error> {
    let text =
        std::fs::read_to_string(p).map_err(|e| Error::input(format!("{}: {e}", p.display())))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| Error::input(format!("{}: not JSON: {e}", p.display())))?;
    let bad = |what: &str, e: serde_json::Error| {
        Error::input(format!(
            "{}: looks like {what} but does not parse: {e}",
            p.display()
        ))
    };
    let name = name_of(p);
    let path = p.to_path_buf();
    // `fsage report --json` writes a list of analyses.
    if let Some(list) = v.as_array() {
        if !list.is_empty() && list.iter().all(|x| detect(x) == Some(Kind::Analysis)) {
            let n = list.len();
            for (i, x) in list.iter().enumerate() {
                set.analyses.push(Named {
                    name: if n == 1 {
                        name.clone()
                    } else {
                        format!("{name} #{}", i + 1)
                    },
                    path: path.clone(),
                    item: serde_json::from_value(x.clone()).map_err(|e| bad("an analysis", e))?,
                });
            }
            return Ok(());
        }
    }
    match detect(&v) {
        Some(Kind::Run) => set.runs.push(Named {
            name,
            path,
            item: serde_json::from_value(v).map_err(|e| bad("an aging run report", e))?,
        }),
        Some(Kind::Frag) => set.frags.push(Named {
            name,
            path,
            item: serde_json::from_value(v).map_err(|e| bad("a frag report", e))?,
        }),
        Some(Kind::Against) => set.against.push(Named {
            name,
            path,
            item: serde_json::from_value(v).map_err(|e| bad("an against-fresh report", e))?,
        }),
        Some(Kind::Cell) => set.cells.push(Named {
            name,
            path,
            item: serde_json::from_value(v).map_err(|e| bad("a cell result", e))?,
        }),
        Some(Kind::Analysis) => set.analyses.push(Named {
            name,
            path,
            item: serde_json::from_value(v).map_err(|e| bad("an analysis", e))?,
        }),
        Some(Kind::Git) => set.git.push(Named {
            name,
            path,
            item: serde_json::from_value(v).map_err(|e| bad("a Git-aging series", e))?,
        }),
        Some(Kind::Bench) => set.bench.push(Named {
            name,
            path,
            item: serde_json::from_value(v).map_err(|e| bad("a bench run", e))?,
        }),
        None => {
            return Err(Error::input(format!(
                "{}: not a result fsage knows (an aging run report, a frag report, a cell \
                 result, an analysis, a Git-aging series or a `bench run --json` result)",
                p.display()
            )))
        }
    }
    Ok(())
}

/// The cell ids of an experiment output directory's `plan.json`, when it has one.
fn plan_ids(dir: &Path) -> Option<std::collections::BTreeSet<String>> {
    let plan = fsage_results::experiment::status::read_plan(dir).ok()?;
    Some(plan.cells.into_iter().map(|c| c.id).collect())
}

/// The verdicts on the base images of the experiment output directory `dir`, whose frag
/// measurements are `frags`: each measurement is of the base that `bases/KEY.json` records when
/// the run wrote one, else of the plan's file system and state whose base image name
/// (`FS-STATE-HASH`) it carries; one that is neither is left out.
fn experiment_verdicts(dir: &Path, frags: &[Named<FragReport>]) -> Vec<BaseVerdict> {
    let plan = fsage_results::experiment::status::read_plan(dir).ok();
    let mut bases = Vec::new();
    for f in frags {
        let rec = dir.join("bases").join(format!("{}.json", f.name));
        let known = std::fs::read_to_string(&rec)
            .ok()
            .and_then(|t| serde_json::from_str::<BaseImage>(&t).ok())
            // The image file's length is the experiment's image size.
            .map(|b| (b.fs, b.state, b.size))
            .or_else(|| {
                let plan = plan.as_ref()?;
                let (stem, hash) = f.name.rsplit_once('-')?;
                if hash.len() != 8 || !hash.bytes().all(|c| c.is_ascii_hexdigit()) {
                    return None;
                }
                plan.cells
                    .iter()
                    .find(|c| format!("{}-{}", c.fs.label, c.state.id_part()) == stem)
                    .map(|c| (c.fs.clone(), c.state.clone(), c.image_size))
            });
        if let Some((fs, state, size)) = known {
            bases.push(MeasuredBase {
                name: &f.name,
                report: &f.item,
                fs,
                state,
                size,
                modified: std::fs::metadata(&f.path).and_then(|m| m.modified()).ok(),
            });
        }
    }
    base_verdicts(dir, &bases, |fs| {
        plan.as_ref().is_some_and(|p| {
            p.cells
                .iter()
                .any(|c| c.fs.label == fs && matches!(c.state, StateSpec::Fresh))
        })
    })
}

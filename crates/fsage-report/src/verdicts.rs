//! How far from fresh, for an experiment: its output directory holds a `frag` measurement of every
//! base image (`frag/KEY.json`), so each aged (or library) base is set beside the fresh base of
//! the same file system and image size with the comparison `fsage frag --against-fresh` makes
//! ([`fsage_core::against::against_fresh`]), no new measurement needed.

use crate::inputs::Named;
use fsage_core::against::AgainstFresh;
use fsage_experiment::lab::BaseImage;
use fsage_experiment::spec::{FsSpec, StateSpec};
use fsage_measure::FragReport;
use serde::Serialize;
use std::path::Path;

/// One non-fresh base image of an experiment and its comparison with the fresh one.
#[derive(Debug, Clone, Serialize)]
pub struct BaseVerdict {
    /// The experiment's output directory.
    pub experiment: String,
    /// The file system's label in the experiment.
    pub fs: String,
    /// The state's label (`aged:LABEL`, `image:NAME`).
    pub state: String,
    pub image_size: u64,
    /// The frag measurements compared (names in the report).
    pub aged_frag: String,
    pub fresh_frag: Option<String>,
    /// The comparison, or why there is none.
    pub against: Option<AgainstFresh>,
    pub missing: Option<String>,
    /// What to keep in mind reading the comparison (e.g. measured by an older fsage).
    pub notes: Vec<String>,
}

impl BaseVerdict {
    /// The one line for people.
    pub fn line(&self) -> String {
        match (&self.against, &self.missing) {
            (Some(a), _) if self.notes.is_empty() => a.summary.clone(),
            (Some(a), _) => format!("{} (note: {})", a.summary, self.notes.join("; ")),
            (None, Some(why)) => format!("{} {}: no verdict: {why}", self.fs, self.state),
            (None, None) => format!("{} {}: no verdict", self.fs, self.state),
        }
    }
}

/// What a base image is, as the experiment recorded it.
#[derive(Debug, Clone)]
struct Base {
    fs: FsSpec,
    state: StateSpec,
    size: u64,
}

fn state_label(s: &StateSpec) -> String {
    s.state().label()
}

/// What each frag measurement of `dir` (an experiment output directory) is a measurement of:
/// `bases/KEY.json` when the run recorded it, else the plan's file systems and states, matched
/// by the base image's name (`FS-STATE-HASH`).
fn identify(dir: &Path, frags: &[Named<FragReport>]) -> Vec<(usize, Base)> {
    let plan = fsage_experiment::runner::read_plan(dir).ok();
    let mut out = Vec::new();
    for (i, f) in frags.iter().enumerate() {
        let rec = dir.join("bases").join(format!("{}.json", f.name));
        if let Some(b) = std::fs::read_to_string(&rec)
            .ok()
            .and_then(|t| serde_json::from_str::<BaseImage>(&t).ok())
        {
            // The image file's length is the experiment's image size.
            out.push((
                i,
                Base {
                    fs: b.fs,
                    state: b.state,
                    size: b.size,
                },
            ));
            continue;
        }
        let Some(plan) = &plan else { continue };
        let Some((stem, hash)) = f.name.rsplit_once('-') else {
            continue;
        };
        if hash.len() != 8 || !hash.bytes().all(|c| c.is_ascii_hexdigit()) {
            continue;
        }
        if let Some(c) = plan
            .cells
            .iter()
            .find(|c| format!("{}-{}", c.fs.label, c.state.id_part()) == stem)
        {
            out.push((
                i,
                Base {
                    fs: c.fs.clone(),
                    state: c.state.clone(),
                    size: c.image_size,
                },
            ));
        }
    }
    out
}

/// The verdict of every non-fresh base image among `frags`, the frag measurements read from the
/// experiment output directory `dir`. A base with no fresh base of the same file system and size
/// gets a verdict entry that says so.
pub fn for_experiment(dir: &Path, frags: &[Named<FragReport>]) -> Vec<BaseVerdict> {
    let bases = identify(dir, frags);
    let plan = fsage_experiment::runner::read_plan(dir).ok();
    let plan_has_fresh = |fs: &str| {
        plan.as_ref().is_some_and(|p| {
            p.cells
                .iter()
                .any(|c| c.fs.label == fs && matches!(c.state, StateSpec::Fresh))
        })
    };
    let fresh_of = |b: &Base| {
        // The newest measurement when an edited experiment left more than one.
        bases
            .iter()
            .filter(|(_, x)| {
                matches!(x.state, StateSpec::Fresh) && x.fs.label == b.fs.label && x.size == b.size
            })
            .max_by_key(|(i, _)| {
                std::fs::metadata(&frags[*i].path)
                    .and_then(|m| m.modified())
                    .ok()
            })
            .map(|(i, _)| *i)
    };
    let mut out = Vec::new();
    for (i, b) in &bases {
        if matches!(b.state, StateSpec::Fresh) {
            continue;
        }
        let aged = &frags[*i];
        let label = state_label(&b.state);
        let mut v = BaseVerdict {
            experiment: dir.display().to_string(),
            fs: b.fs.label.clone(),
            state: label.clone(),
            image_size: b.size,
            aged_frag: aged.name.clone(),
            fresh_frag: None,
            against: None,
            missing: None,
            notes: Vec::new(),
        };
        match fresh_of(b) {
            Some(j) => {
                let fresh = &frags[j];
                v.fresh_frag = Some(fresh.name.clone());
                // btrfs measured before the unallocated device space was counted: a fresh
                // image then showed only its first data chunk free.
                let old_btrfs = |r: &FragReport| {
                    r.free_space.as_ref().is_some_and(|f| {
                        f.route.starts_with("btrfs") && f.unallocated_blocks.is_none()
                    })
                };
                if old_btrfs(&aged.item) || old_btrfs(&fresh.item) {
                    v.notes.push(
                        "measured by an fsage that left btrfs's unallocated space out of the free \
                         space, so the fresh image's free extents per GiB are those of its first \
                         data chunk only"
                            .into(),
                    );
                }
                v.against = Some(fsage_core::against::against_fresh(
                    &format!("{} {label}", b.fs.label),
                    &aged.item,
                    &fresh.item,
                ));
            }
            None if plan_has_fresh(&b.fs.label) => {
                v.missing = Some(format!(
                    "the fresh {} base image has no layout measurement in {}",
                    b.fs.label,
                    dir.join("frag").display()
                ))
            }
            None => {
                v.missing = Some(format!(
                    "the experiment has no fresh state of {} ({}) to compare with (add a state \
                     of kind \"fresh\")",
                    b.fs.label,
                    fsage_profile::human_bytes(b.size)
                ))
            }
        }
        out.push(v);
    }
    out.sort_by(|a, b| (&a.fs, &a.state).cmp(&(&b.fs, &b.state)));
    out
}

//! How far from fresh, for an experiment: each aged (or library) base image beside the fresh
//! base of the same file system and image size, with the comparison `fsage frag
//! --against-fresh` makes. The verdict types are fsage-results', re-exported here.

pub use fsage_results::analysis::verdicts::*;

use fsage_measure::FragReport;
use fsage_results::against::against_fresh;
use fsage_results::experiment::spec::StateSpec;
use std::path::Path;

fn state_label(s: &StateSpec) -> String {
    s.state().label()
}

/// The verdict of every non-fresh base image among `bases`, the measured base images of the
/// experiment whose output directory is `dir`; `fresh_planned(fs)` says whether the experiment has
/// a fresh state of the file system labelled `fs`. A base with no fresh base of the same file
/// system and size gets a verdict entry that says why.
pub fn base_verdicts(
    dir: &Path,
    bases: &[MeasuredBase],
    fresh_planned: impl Fn(&str) -> bool,
) -> Vec<BaseVerdict> {
    let fresh_of = |b: &MeasuredBase| {
        // The newest measurement when an edited experiment left more than one.
        bases
            .iter()
            .filter(|x| {
                matches!(x.state, StateSpec::Fresh) && x.fs.label == b.fs.label && x.size == b.size
            })
            .max_by_key(|x| x.modified)
    };
    let mut out = Vec::new();
    for b in bases {
        if matches!(b.state, StateSpec::Fresh) {
            continue;
        }
        let label = state_label(&b.state);
        let mut v = BaseVerdict {
            experiment: dir.display().to_string(),
            fs: b.fs.label.clone(),
            state: label.clone(),
            image_size: b.size,
            aged_frag: b.name.to_string(),
            fresh_frag: None,
            against: None,
            missing: None,
            notes: Vec::new(),
        };
        match fresh_of(b) {
            Some(fresh) => {
                v.fresh_frag = Some(fresh.name.to_string());
                // btrfs measured before the unallocated device space was counted: a fresh
                // image then showed only its first data chunk free.
                let old_btrfs = |r: &FragReport| {
                    r.free_space.as_ref().is_some_and(|f| {
                        f.route.starts_with("btrfs") && f.unallocated_blocks.is_none()
                    })
                };
                if old_btrfs(b.report) || old_btrfs(fresh.report) {
                    v.notes.push(
                        "measured by an fsage that left btrfs's unallocated space out of the free \
                         space, so the fresh image's free extents per GiB are those of its first \
                         data chunk only"
                            .into(),
                    );
                }
                v.against = Some(against_fresh(
                    &format!("{} {label}", b.fs.label),
                    b.report,
                    fresh.report,
                ));
            }
            None if fresh_planned(&b.fs.label) => {
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

#[cfg(test)]
mod tests {
    use super::*;
    use fsage_results::experiment::spec::FsSpec;
    use std::time::{Duration, SystemTime};

    /// A frag report of `fs` whose free space is `extents` single-block extents and one of
    /// 4096 blocks.
    fn frag(fs: &str, extents: u64) -> FragReport {
        let mut h = fsage_measure::hist::FreeHist::default();
        h.add(4096);
        for _ in 0..extents {
            h.add(1);
        }
        FragReport {
            platform: Default::default(),
            format: fsage_measure::FRAG_FORMAT,
            mount: "/mnt/x".into(),
            fs_type: fs.into(),
            block_size: 4096,
            free_space: Some(h.finish("getfsmap", 4096, 1 << 18)),
            free_space_error: None,
            free_space_seconds: 0.1,
            files: None,
            probe: None,
            segments: None,
        }
    }

    fn fs(label: &str) -> FsSpec {
        FsSpec {
            label: label.into(),
            kind: label.into(),
            mkfs_opts: None,
            kernel: None,
        }
    }

    fn aged() -> StateSpec {
        StateSpec::Aged {
            profile: "meyer".into(),
            label: "meyer".into(),
            fullness: None,
            seed: None,
            max_ops: None,
            max_time_s: None,
        }
    }

    #[test]
    fn each_aged_base_meets_the_newest_fresh_one_of_its_fs_and_size_or_says_why_not() {
        let (old_fresh, new_fresh, aged_ext4) =
            (frag("ext4", 5000), frag("ext4", 0), frag("ext4", 3000));
        let (aged_xfs, aged_btrfs) = (frag("xfs", 3000), frag("btrfs", 3000));
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let base = |name, report, label: &str, state: StateSpec, modified| MeasuredBase {
            name,
            report,
            fs: fs(label),
            state,
            size: 256 << 20,
            modified,
        };
        let bases = [
            base("btrfs-aged", &aged_btrfs, "btrfs", aged(), Some(t0)),
            base(
                "ext4-fresh-new",
                &new_fresh,
                "ext4",
                StateSpec::Fresh,
                Some(t0 + Duration::from_secs(5)),
            ),
            base("ext4-aged", &aged_ext4, "ext4", aged(), Some(t0)),
            base(
                "ext4-fresh-old",
                &old_fresh,
                "ext4",
                StateSpec::Fresh,
                Some(t0),
            ),
            base("xfs-aged", &aged_xfs, "xfs", aged(), Some(t0)),
        ];
        let dir = Path::new("/out/exp");
        let v = base_verdicts(dir, &bases, |fs| fs != "btrfs");
        let names: Vec<(&str, &str)> = v
            .iter()
            .map(|v| (v.fs.as_str(), v.state.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("btrfs", "aged:meyer"),
                ("ext4", "aged:meyer"),
                ("xfs", "aged:meyer")
            ]
        );
        // The newer of the two fresh ext4 measurements, though listed first.
        assert_eq!(v[1].fresh_frag.as_deref(), Some("ext4-fresh-new"));
        let want = against_fresh("ext4 aged:meyer", &aged_ext4, &new_fresh);
        assert_eq!(
            v[1].against.as_ref().map(|a| &a.summary),
            Some(&want.summary)
        );
        assert_eq!(v[1].line(), want.summary);
        assert!(v[2].against.is_none());
        assert_eq!(
            v[2].line(),
            "xfs aged:meyer: no verdict: the fresh xfs base image has no layout measurement in \
             /out/exp/frag"
        );
        assert!(
            v[0].line().starts_with(
                "btrfs aged:meyer: no verdict: the experiment has no fresh state of btrfs (256"
            ),
            "{}",
            v[0].line()
        );
    }
}

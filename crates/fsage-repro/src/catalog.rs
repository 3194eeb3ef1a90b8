//! The reproductions: for each published figure, the paper's procedure as an fsage experiment or
//! Git-aging runs, scaled, with what it needs that this build may lack. The table is
//! fsage-results' (the report compares without running), re-exported here.

pub use fsage_results::repro::catalog::*;

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn scaled_drives_keep_the_papers_ratios_and_the_experiments_name_them() {
        let r = find("geriatrix-fig7").unwrap();
        assert_eq!(
            r.models(GIB),
            vec!["crucial-m4-64g@1111MiB", "adata-s510-120g@1229MiB"]
        );
        let t = r.experiment_toml(GIB).unwrap();
        assert!(t.contains("image_size = \"1GiB\""), "{t}");
        assert!(t.contains("\"crucial-m4-64g@1111MiB\""), "{t}");
        for k in [
            "age_on = \"memory\"",
            "copy = \"whole\"",
            "drive = \"previous\"",
        ] {
            assert!(t.contains(k), "{k} missing from\n{t}");
        }
        let t4 = r.experiment_toml(4 * GIB).unwrap();
        assert!(
            t4.contains("duration = \"80s\"") && t4.contains("nfiles = 4000"),
            "{t4}"
        );
        assert!(find("conway-fig3").unwrap().experiment_toml(GIB).is_none());
        let v = find("geriatrix-fig7-procedures").unwrap();
        let t = v.experiment_toml(GIB).unwrap();
        assert!(t.contains("name = \"geriatrix-fig7-procedures\""), "{t}");
        assert!(
            t.contains("copy = [\"whole\", \"sparse\"]")
                && t.contains("drive = [\"previous\", \"erased\"]"),
            "{t}"
        );
        assert_eq!(v.published_as(), "geriatrix-fig7");
        // One replay per file system gives every drive's series: Figure 3's btrfs and Figure
        // 4's xfs are each costed on both of the paper's drives and the generic models.
        for name in ["conway-fig3", "conway-fig4", "conway-fig6"] {
            let r = find(name).unwrap();
            for run in r.git_runs(4 * GIB) {
                assert_eq!(run.cost_models, CONWAY_COLD_MODELS, "{name}");
            }
            assert_eq!(r.models(4 * GIB), CONWAY_COLD_MODELS, "{name}");
        }
        let f6 = find("conway-fig6").unwrap().git_runs(4 * GIB);
        assert_eq!(f6[1].size, 20 * GIB);
        // Figure 8: nilfs2 at the paper's three latencies, fileserver with its 50 threads,
        // lock contention recorded; the setting is one this build's parser takes.
        let s8 = find("slippery-fig8").unwrap();
        let t = s8.experiment_toml(4 * GIB).unwrap();
        for k in [
            "lock_stats = true",
            "kind = \"nilfs2\"",
            "latencies = [\"0\", \"1ms\", \"10ms\"]",
            "nthreads = 50",
            "image_size = \"4GiB\"",
            "cache_ratio = 0.5",
        ] {
            assert!(t.contains(k), "{k} missing from\n{t}");
        }
        let spec =
            fsage_experiment::spec::parse(&t, "slippery-fig8", std::path::Path::new(".")).unwrap();
        assert!(spec.lock_stats);
        assert_eq!(spec.cell_count(), 3);
        let f5 = find("conway-fig5").unwrap().git_runs(4 * GIB);
        assert_eq!(f5.len(), 6);
        assert_eq!(f5[1].warm_mem_limit, Some(256_000_000));
    }
}

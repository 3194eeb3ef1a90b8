//! What a runner writes for each cell: one JSON file, `CELL_ID.json`, written atomically the
//! moment the cell ends, so that a re-run skips the cells whose file exists. The types and their
//! reading are fsage-results' (the report reads them without the runner), re-exported here.

pub use fsage_results::experiment::result::*;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Sample;
    use std::path::Path;

    #[test]
    fn a_cell_result_round_trips_and_a_dir_is_read() {
        let spec = crate::spec::parse(
            "name = \"t\"\nduration = \"1s\"\nimage_size = \"1GiB\"\n[[fs]]\nkind = \"ext4\"\n\
             [[state]]\nkind = \"fresh\"\n[[workload]]\nname = \"varmail\"\n",
            "t.toml",
            Path::new("."),
        )
        .unwrap();
        let cell = spec.plan().cells.remove(0);
        let r = CellResult {
            format: RESULT_FORMAT,
            samples: vec![Sample {
                fs: cell.fs.label.clone(),
                state: cell.state.state(),
                workload: cell.workload.label.clone(),
                latency_us: cell.latency_us(),
                device_model: cell.device_label(),
                rep: 0,
                ops_per_s: 1234.5,
                flowops: vec![],
                flash: None,
                platform: Default::default(),
            }],
            cell,
            status: CellStatus::Failed {
                error: "mount: EIO".into(),
            },
            started_unix: 1,
            seconds: 2.0,
            base_seconds: None,
            environment: None,
            workload_report: None,
        };
        let json = serde_json::to_string_pretty(&r).unwrap();
        assert!(json.contains("\"status\": \"failed\""), "{json}");
        let back: CellResult = serde_json::from_str(&json).unwrap();
        assert_eq!(back, r);
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join(format!("{}.json", r.cell.id)), &json).unwrap();
        std::fs::write(d.path().join("notes.json"), "{}").unwrap();
        let set = read_dir(d.path()).unwrap();
        assert_eq!(set.results.len(), 1);
        assert_eq!(set.skipped.len(), 1);
    }

    #[test]
    fn cells_of_one_comparison_on_two_kinds_of_node_are_flagged() {
        let spec = crate::spec::parse(
            "name = \"t\"\nduration = \"1s\"\nrepetitions = 2\nimage_size = \"1GiB\"\n\
             [[fs]]\nkind = \"ext4\"\n[[state]]\nkind = \"fresh\"\n\
             [[workload]]\nname = \"varmail\"\n[[workload]]\nname = \"webserver\"\n",
            "t.toml",
            Path::new("."),
        )
        .unwrap();
        let env = |host: &str, cpu: &str| Environment {
            fsage_version: "x".into(),
            kernel: "6.1.0".into(),
            hostname: host.into(),
            cpus: 2,
            memory_bytes: 1,
            fs_kind: "ext4".into(),
            mkfs_opts: None,
            image_sha256: None,
            seed: 1,
            workload_text: String::new(),
            device: None,
            drive_state: None,
            placement: None,
            platform: Default::default(),
            vm: None,
            cpu_model: Some(cpu.into()),
            slurm_job: None,
            storage: None,
        };
        // varmail r0 and r1 on two CPU models; webserver r0 and r1 on two hosts of one model.
        let results: Vec<CellResult> = spec
            .plan()
            .cells
            .into_iter()
            .map(|cell| {
                let e = match (cell.workload.label.as_str(), cell.rep) {
                    ("varmail", 0) => env("n1", "Xeon A"),
                    ("varmail", _) => env("n2", "EPYC B"),
                    (_, 0) => env("n3", "Xeon A"),
                    _ => env("n4", "Xeon A"),
                };
                CellResult {
                    format: RESULT_FORMAT,
                    cell,
                    status: CellStatus::Done,
                    started_unix: 0,
                    seconds: 1.0,
                    base_seconds: None,
                    environment: Some(e),
                    samples: vec![],
                    workload_report: None,
                }
            })
            .collect();
        assert!(storage_mixes(&results).is_empty());
        let mixes = hardware_mixes(&results);
        assert_eq!(mixes.len(), 1, "{mixes:?}");
        assert_eq!(mixes[0].comparison, "varmail, plain image");
        let text = mixes[0].to_string();
        assert!(text.contains("1 on n2 (EPYC B, kernel 6.1.0)"), "{text}");
        assert!(text.contains("not comparable"), "{text}");
    }

    #[test]
    fn cells_of_one_comparison_on_memory_and_on_disk_are_flagged() {
        let spec = crate::spec::parse(
            "name = \"t\"\nduration = \"1s\"\nrepetitions = 2\nimage_size = \"1GiB\"\n\
             [[fs]]\nkind = \"ext4\"\n[[state]]\nkind = \"fresh\"\n\
             [[workload]]\nname = \"varmail\"\n",
            "t.toml",
            Path::new("."),
        )
        .unwrap();
        let storage = |kind, dev: &str| crate::storage::Storage {
            setting: "x".into(),
            kind,
            fs_type: if dev == "tmpfs" { "tmpfs" } else { "ext4" }.into(),
            device: dev.into(),
            root: "/r".into(),
        };
        let results: Vec<CellResult> = spec
            .plan()
            .cells
            .into_iter()
            .map(|cell| {
                let s = if cell.rep == 0 {
                    storage(crate::storage::StorageKind::Tmpfs, "tmpfs")
                } else {
                    storage(crate::storage::StorageKind::Disk, "/dev/vda")
                };
                CellResult {
                    format: RESULT_FORMAT,
                    cell,
                    status: CellStatus::Done,
                    started_unix: 0,
                    seconds: 1.0,
                    base_seconds: None,
                    environment: Some(Environment {
                        fsage_version: "x".into(),
                        kernel: "6.1.0".into(),
                        hostname: "n1".into(),
                        cpus: 2,
                        memory_bytes: 1,
                        fs_kind: "ext4".into(),
                        mkfs_opts: None,
                        image_sha256: None,
                        seed: 1,
                        workload_text: String::new(),
                        device: None,
                        drive_state: None,
                        placement: None,
                        platform: Default::default(),
                        vm: None,
                        cpu_model: Some("Xeon A".into()),
                        slurm_job: None,
                        storage: Some(s),
                    }),
                    samples: vec![],
                    workload_report: None,
                }
            })
            .collect();
        assert!(hardware_mixes(&results).is_empty());
        let m = storage_mixes(&results);
        assert_eq!(m.len(), 1, "{m:?}");
        let kinds: Vec<&str> = m[0].kinds.iter().map(|k| k.0.as_str()).collect();
        assert_eq!(kinds, ["disk (ext4 on /dev/vda)", "tmpfs"]);
        let w = m[0].storage_warning();
        assert!(
            w.contains("1 on tmpfs (n1)") && w.contains("not comparable"),
            "{w}"
        );
    }
}

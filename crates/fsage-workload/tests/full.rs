//! A full file system during a run (a small tmpfs this test mounts; root needed, else skipped).

use fsage_workload::{run, Error, NoObserver, RunConfig, Stop, Workload};
use std::time::Duration;

/// Creates files and never deletes them: on a tmpfs with few inodes the creates run out.
const CREATE_ONLY: &str = "\
set $dir=/tmp
define fileset name=fs,path=$dir,size=4k,entries=200,dirwidth=200,prealloc=0
define process name=p
{
  thread name=t
  {
    flowop createfile name=createfile1,filesetname=fs,fd=1
    flowop writewholefile name=wrtfile1,srcfd=1,fd=1,iosize=4k
    flowop closefile name=closefile1,fd=1
  }
}
run 10
";

/// A create refused with ENOSPC ends the run with an error naming the flowop, the file and the
/// errno; it once was counted and the next flowop failed with "srcfd 1 is not open".
#[test]
fn a_create_refused_for_space_ends_the_run_naming_flowop_file_and_errno() {
    let test = "a_create_refused_for_space_ends_the_run_naming_flowop_file_and_errno";
    let m = match fsage_testkit::need_root_and(&["mount", "umount"]).and_then(|()| {
        fsage_testkit::MountGuard::mount(
            "tmpfs",
            &["-t", "tmpfs", "-o", "size=16m,nr_inodes=40,mode=0755"],
        )
    }) {
        Ok(m) => m,
        Err(reason) => return fsage_testkit::skip(test, reason),
    };
    let w = Workload::parse(CREATE_ONLY, "create-only.f").unwrap();
    let cfg = RunConfig {
        stop: Some(Stop::Duration(Duration::from_secs(10))),
        warmup: Duration::ZERO,
        ..RunConfig::default()
    };
    let target = m.path().join("t");
    let e = run(&w, &cfg, &target, &mut NoObserver).unwrap_err();
    let text = e.to_string();
    match &e {
        Error::Io { what, path, err } => {
            assert_eq!(err.raw_os_error(), Some(28), "{text}");
            assert!(what.contains("createfile1"), "{text}");
            assert!(path.starts_with(target.join("fs")), "{text}");
        }
        other => panic!("expected the create's ENOSPC, got: {other}"),
    }
    assert!(text.contains("No space left on device"), "{text}");
    assert!(!text.contains("not open"), "{text}");
}

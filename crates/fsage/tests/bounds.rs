//! Inputs that made fsage run for ever (issue 33): a workload file of nested composite flowops
//! made `bench show` and `experiment plan` spin; both now refuse it at once with the file, the
//! line and the bound, exit 2. Each command runs under a guard that kills it after 60 s, so a
//! regression fails instead of hanging CI.

mod common;
use common::*;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs fsage with `args` in `dir`, killed (by its PID) after 60 s: then the test fails.
fn fsage_guarded(dir: &std::path::Path, args: &[&str]) -> Output {
    let mut child = Command::new(bin())
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("fsage {args:?} ran for more than 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// 12 levels of composite flowops, each calling the one below 8 times, the last empty.
fn bomb() -> String {
    let mut t = String::from("define fileset name=a,path=/tmp,size=4k,entries=10\n");
    t += "define flowop name=c0\n{\n}\n";
    for level in 1..=12 {
        t += &format!("define flowop name=c{level}\n{{\n");
        for k in 0..8 {
            t += &format!("  flowop c{} name=k{k}\n", level - 1);
        }
        t += "}\n";
    }
    t += "define process name=p\n{\n  thread name=t\n  {\n    flowop c12 name=top\n    \
          flowop statfile name=s,filesetname=a\n  }\n}\nrun 1\n";
    t
}

#[test]
fn a_workload_file_of_nested_composites_is_refused_by_bench_show_and_experiment_plan() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bomb.f"), bomb()).unwrap();
    let o = fsage_guarded(dir.path(), &["bench", "show", "bomb.f"]);
    expect_code(&o, 2, "bench show of a composite bomb");
    expect_stderr(&o, "bomb.f:");
    expect_stderr(&o, "more than 1000000 flowop statements");
    std::fs::write(
        dir.path().join("x.toml"),
        "name = \"b\"\nduration = \"1s\"\nimage_size = \"256MiB\"\n\
         [[fs]]\nkind = \"ext4\"\n[[state]]\nkind = \"fresh\"\n\
         [[workload]]\nfile = \"bomb.f\"\n",
    )
    .unwrap();
    let o = fsage_guarded(dir.path(), &["experiment", "plan", "x.toml"]);
    expect_code(&o, 2, "experiment plan with a composite bomb");
    expect_stderr(&o, "more than 1000000 flowop statements");
}

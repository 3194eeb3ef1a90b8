//! Workload files that would make the parser run for ever or fill the memory (issue 33): each
//! is refused (or, when it expands to nothing, accepted) at once, naming the file and the line.
//! Every parse runs under a guard: a regression fails the test after 20 s instead of hanging.

use fsage_workload::{Error, Workload};
use std::sync::mpsc;
use std::time::Duration;

/// Parses `text` in a thread and fails the test if it takes longer than 20 s (the thread is
/// left spinning; the test process ends with the suite).
fn parse_guarded(text: String) -> Result<Workload, Error> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(Workload::parse(&text, "bomb.f"));
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("the parser did not finish within 20 s")
}

/// The refusal's line and message.
fn refused(text: String) -> (usize, String) {
    match parse_guarded(text) {
        Err(Error::Parse { origin, line, msg }) => {
            assert_eq!(origin, "bomb.f");
            (line, msg)
        }
        Err(e) => panic!("not a parse error: {e}"),
        Ok(_) => panic!("accepted"),
    }
}

const FILESET: &str = "define fileset name=a,path=/tmp,size=4k,entries=10,prealloc=100\n";

fn process(body: &str) -> String {
    format!("define process name=p\n{{\n  thread name=t\n  {{\n{body}  }}\n}}\nrun 1\n")
}

/// An empty composite flowop called 10^18 times spun for ever; it expands to nothing.
#[test]
fn an_empty_composite_with_huge_iters_expands_to_nothing_at_once() {
    let text = format!(
        "{FILESET}define flowop name=nothing\n{{\n}}\n{}",
        process(
            "    flowop nothing name=n, iters=1000000000000000000\n    \
             flowop statfile name=s,filesetname=a\n"
        )
    );
    let w = parse_guarded(text).unwrap();
    assert_eq!(w.model().threads[0].flowops.len(), 1);
}

/// A composite with a body, 10^18 times: refused before anything is copied.
#[test]
fn a_composite_with_a_body_and_huge_iters_is_refused_at_its_line() {
    let text = format!(
        "{FILESET}define flowop name=one\n{{\n  flowop statfile name=s,filesetname=a\n}}\n{}",
        process("    flowop one name=n, iters=1000000000000000000\n")
    );
    let (line, msg) = refused(text);
    assert_eq!(line, 10, "{msg}");
    assert!(
        msg.contains("iters=1000000000000000000") && msg.contains("10000"),
        "{msg}"
    );
}

/// 12 levels of composites each calling the one below 8 times (8^12 calls of an empty body):
/// the parser read each body again at each call, for ever.
#[test]
fn nested_composite_calls_are_bounded() {
    let mut text = String::from(FILESET);
    text += "define flowop name=c0\n{\n}\n";
    for level in 1..=12 {
        text += &format!("define flowop name=c{level}\n{{\n");
        for k in 0..8 {
            text += &format!("  flowop c{} name=k{k}\n", level - 1);
        }
        text += "}\n";
    }
    text += &process("    flowop c12 name=top\n    flowop statfile name=s,filesetname=a\n");
    let (_, msg) = refused(text);
    assert!(
        msg.contains(&fsage_workload::MAX_EXPANSION_STEPS.to_string()),
        "{msg}"
    );
}

/// A process's instances times its threads' overflowed (a panic in a debug build).
#[test]
fn thread_instances_are_bounded_in_all() {
    let text = format!(
        "{FILESET}define process name=p,instances=1099511627776\n{{\n  \
         thread name=t,instances=1099511627776\n  {{\n    \
         flowop statfile name=s,filesetname=a\n  }}\n}}\nrun 1\n"
    );
    let (_, msg) = refused(text);
    assert!(msg.contains("instances"), "{msg}");
    // Two threads of 6000 each: each within its own bound, more than 10000 in all.
    let text = format!(
        "{FILESET}define process name=p\n{{\n  thread name=t1,instances=6000\n  {{\n    \
         flowop statfile name=s,filesetname=a\n  }}\n  thread name=t2,instances=6000\n  {{\n    \
         flowop statfile name=s2,filesetname=a\n  }}\n}}\nrun 1\n"
    );
    let (line, msg) = refused(text);
    assert_eq!(line, 8, "{msg}");
    assert!(msg.contains("10000 thread instances in all"), "{msg}");
}

/// Numbers whose memory or time a run cannot give: an fd past u32 (it wrapped to fd 0), a
/// fixed iosize above 1 GiB (each thread allocates it), a one-wide directory tree (planning it
/// never ended), an Erlang shape of 10^9 (each draw sums that many), filesets of 10^8 entries
/// each.
#[test]
fn numbers_a_run_cannot_give_are_refused() {
    for (flowop, says) in [
        ("flowop statfile name=s,filesetname=a,fd=4294967296", "fd"),
        (
            "flowop read name=r,filesetname=a,iosize=2g",
            "iosize=2147483648 is more than",
        ),
    ] {
        let (line, msg) = refused(format!("{FILESET}{}", process(&format!("    {flowop}\n"))));
        assert_eq!(line, 6, "{msg}");
        assert!(msg.contains(says), "{msg}");
    }
    let stat = process("    flowop statfile name=s,filesetname=a\n");
    let (line, msg) = refused(format!(
        "define fileset name=a,path=/tmp,size=4k,entries=1000,dirwidth=1\n{stat}"
    ));
    assert_eq!(line, 1);
    assert!(msg.contains("dirwidth=1"), "{msg}");
    let (_, msg) = refused(format!(
        "define fileset name=a,path=/tmp,size=cvar(type=cvar-erlang,parameters=shape:1000000000;rate:1),entries=10\n{stat}"
    ));
    assert!(msg.contains("shape"), "{msg}");
    let mut text = String::new();
    for i in 0..3 {
        text +=
            &format!("define fileset name=f{i},path=/tmp,size=4k,entries=60000000,prealloc=0\n");
    }
    let (line, msg) = refused(format!(
        "{text}{}",
        process("    flowop statfile name=s,filesetname=f0\n")
    ));
    assert_eq!(line, 2, "{msg}");
    assert!(msg.contains("100000000 entries in all"), "{msg}");
}

//! `fsage reproduce`: the list names every reproduction with its paper, figure, scale and
//! expected run time; bad names and missing flags are refused by name; a reproduction this build
//! cannot run as the paper did is refused, naming what is missing, and writes nothing.

mod common;

use common::*;

#[test]
fn the_list_names_every_reproduction_with_its_scale_and_run_time() {
    let o = fsage_ok(["reproduce", "list"]);
    let out = stdout(&o);
    for name in [
        "geriatrix-fig7",
        "geriatrix-fig7-procedures",
        "geriatrix-fig5a",
        "conway-fig3",
        "conway-fig4",
        "conway-fig5",
        "conway-fig6",
        "slippery-fig8",
    ] {
        assert!(
            out.contains(&format!("{name}  ")),
            "{name} missing from\n{out}"
        );
    }
    assert_eq!(out.matches("expected run time: ").count(), 8, "{out}");
    assert!(out.contains("scale: 1 GiB by default"), "{out}");
    assert!(out.contains("Figure 7") && out.contains("Figure 8"));
    assert!(out.contains("contended locks"), "{out}");
}

#[test]
fn bad_names_missing_flags_and_missing_needs_are_refused_by_name() {
    let s = Scratch::new("repro");
    let out = s.path("out");
    let o = fsage(["reproduce", "nosuch", "--out", out.to_str().unwrap()]);
    expect_code(&o, 2, "an unknown reproduction");
    expect_stderr(
        &o,
        "one of geriatrix-fig7, geriatrix-fig7-procedures, geriatrix-fig5a",
    );
    let o = fsage(["reproduce", "geriatrix-fig7"]);
    expect_code(&o, 2, "no --out");
    expect_stderr(&o, "give --out DIR");
    let o = fsage(["reproduce", "conway-fig3", "--out", out.to_str().unwrap()]);
    expect_code(&o, 2, "a Git reproduction without --repo");
    expect_stderr(&o, "--repo");
    let o = fsage([
        "reproduce",
        "slippery-fig8",
        "--out",
        out.to_str().unwrap(),
        "--scale",
        "1MiB",
    ]);
    expect_code(&o, 2, "a scale below 64 MiB");
    expect_stderr(&o, "at least 64 MiB");
    assert!(!out.exists(), "a refused reproduction writes nothing");
}

//! `fsage age --device-model`: the drive ages with the file system. The run's block requests
//! to its image are fed to an SSD model's FTL and its state is saved as IMAGE.ftl, which a
//! resumed run continues and a slow device on the image starts from; models without a drive
//! state, and runs without an image fsage made, are refused before anything runs.

mod common;

use common::*;

#[test]
fn an_ssd_ages_with_the_file_system_and_a_resumed_run_continues_it() {
    // Refused before anything is made: a model without state, a run without --fs.
    let o = fsage([
        "age",
        "-p",
        "meyer",
        "--capacity",
        "64MiB",
        "--dry-run",
        "--device-model",
        "ssd-sata",
    ]);
    expect_code(&o, 2, "--device-model without an image");
    expect_stderr(&o, "--fs KIND --size SIZE IMAGE");
    if let Err(why) = need_root_and(&["mkfs.ext4", "losetup"]) {
        return skip(
            "an_ssd_ages_with_the_file_system_and_a_resumed_run_continues_it",
            &why,
        );
    }
    let d = tmp();
    let img = d.path().join("a.img");
    let o = fsage([
        "age",
        "-p",
        "meyer",
        "--fs",
        "ext4",
        "--size",
        "128MiB",
        "--device-model",
        "hdd-7200",
        s(&img),
    ]);
    expect_code(&o, 2, "a model without a drive state");
    expect_stderr(&o, "keeps no drive state");
    assert!(!img.exists(), "nothing is left of a refused run");

    let o = fsage_ok([
        "age",
        "-p",
        "meyer",
        "--fs",
        "ext4",
        "--size",
        "128MiB",
        "--write-mode",
        "write",
        "--max-ops",
        "3000",
        "--device-model",
        "ssd-sata",
        s(&img),
    ]);
    let err = stderr(&o);
    assert!(
        err.contains("the drive (ssd-sata) aged with the file system")
            && err.contains("from an erased drive"),
        "{err}"
    );
    let ftl = d.path().join("a.img.ftl");
    let first = std::fs::read(&ftl).expect("the drive state is saved beside the image");
    // A resumed run continues the drive.
    let o = fsage_ok([
        "age",
        "--resume",
        s(&d.path().join("a.img.fsage-state")),
        "--max-ops",
        "6000",
        "--device-model",
        "ssd-sata",
    ]);
    expect_stderr(&o, "continuing the saved drive");
    assert_ne!(
        std::fs::read(&ftl).unwrap(),
        first,
        "the drive aged further"
    );
}

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
    // Without --write-mode, a drive's aging writes data (fallocate would reach it as nothing):
    // meyer's first 3,000 files are about 100 MiB.
    expect_stdout(&o, "(posix (write))");
    let fed_mib = err
        .split("requests (")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(0);
    assert!(fed_mib > 50, "the drive was fed {fed_mib} MiB: {err}");
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
    expect_stdout(&o, "(posix (write))");
    assert_ne!(
        std::fs::read(&ftl).unwrap(),
        first,
        "the drive aged further"
    );
}

#[test]
fn the_image_library_keeps_the_drive_an_image_aged_on() {
    if let Err(why) = need_root_and(&["mkfs.ext4", "losetup"]) {
        return skip("the_image_library_keeps_the_drive_an_image_aged_on", &why);
    }
    let d = tmp();
    let img = d.path().join("a.img");
    let lib = d.path().join("lib");
    fsage_ok([
        "age",
        "-p",
        "meyer",
        "--fs",
        "ext4",
        "--size",
        "64MiB",
        "--write-mode",
        "write",
        "--max-ops",
        "1000",
        "--device-model",
        "ssd-sata",
        s(&img),
    ]);
    let drive = std::fs::read(d.path().join("a.img.ftl")).unwrap();
    let o = fsage_ok([
        "image",
        "save",
        s(&img),
        "--name",
        "a",
        "--library",
        s(&lib),
    ]);
    expect_stdout(&o, "with the drive it aged on");
    let o = fsage_ok(["image", "show", "a", "--library", s(&lib)]);
    expect_stdout(&o, "the SSD drive state it aged on");

    // Restored beside the image, byte for byte.
    let out = d.path().join("b.img");
    let o = fsage_ok(["image", "restore", "a", s(&out), "--library", s(&lib)]);
    expect_stdout(&o, "the drive it aged on to");
    assert_eq!(std::fs::read(d.path().join("b.img.ftl")).unwrap(), drive);
    // A drive state already there is not replaced unless forced.
    std::fs::remove_file(&out).unwrap();
    let o = fsage(["image", "restore", "a", s(&out), "--library", s(&lib)]);
    expect_code(&o, 2, "a drive state in the way");
    expect_stderr(&o, "b.img.ftl: a drive state exists there");
    assert!(!out.exists(), "refused before anything is written");
    fsage_ok([
        "image",
        "restore",
        "a",
        s(&out),
        "--library",
        s(&lib),
        "--force",
    ]);

    // A damaged drive state fails verification and is not restored.
    let kept = lib.join("a").join("drive.ftl");
    let mut bytes = std::fs::read(&kept).unwrap();
    bytes[100] ^= 1;
    std::fs::write(&kept, bytes).unwrap();
    let o = fsage(["image", "verify", "a", "--library", s(&lib)]);
    expect_code(&o, 1, "a damaged drive state");
    expect_stdout(&o, "the drive state has SHA-256");
    let o = fsage([
        "image",
        "restore",
        "a",
        s(&d.path().join("c.img")),
        "--library",
        s(&lib),
    ]);
    expect_code(&o, 1, "a damaged drive state is not restored");
    assert!(!d.path().join("c.img").exists());
}

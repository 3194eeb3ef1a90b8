//! Import of the Geriatrix three-file format, on small files.

use std::path::{Path, PathBuf};

use fsage_profile::{import_geriatrix, import_geriatrix_files, ProfileError};

const SIZES: &str = "3\n1024 10\n2048 5.5\n4096 0\n\nFormat:\n<number of observations>\n<size in bytes> <weight in integers>\n";
const DIRS: &str = "2\n0 1 3\n1 4 0\nFormat:\n<depth> <weight in integers> <subdirs>\n";
const AGES: &str = "2\n10.74 1\n31 2\n";

/// A temporary directory with the three files, any of which can be replaced.
fn profile_dir(sizes: &str, dirs: &str, ages: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("size_distribution.txt"), sizes).unwrap();
    std::fs::write(dir.path().join("dir_distribution.txt"), dirs).unwrap();
    std::fs::write(dir.path().join("age_distribution.txt"), ages).unwrap();
    dir
}

fn file(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

/// Imports with one file replaced and returns the error.
fn error(sizes: &str, dirs: &str, ages: &str) -> (PathBuf, ProfileError) {
    let dir = profile_dir(sizes, dirs, ages);
    let e = import_geriatrix(dir.path(), "x").expect_err("the import should fail");
    (dir.path().to_owned(), e)
}

#[track_caller]
fn refused_sizes(sizes: &str, line: Option<usize>, needle: &str) {
    let (dir, e) = error(sizes, DIRS, AGES);
    assert_eq!(e.file, file(&dir, "size_distribution.txt"));
    assert_eq!(e.line, line, "{e}");
    assert!(
        e.message.contains(needle),
        "{e:?} should mention {needle:?}"
    );
}

#[test]
fn imports_the_three_files() {
    let dir = profile_dir(SIZES, DIRS, AGES);
    let p = import_geriatrix(dir.path(), "small").unwrap();
    assert_eq!(p.name, "small");
    assert_eq!(p.fullness.get(), 0.8);
    assert_eq!(p.description, "");
    assert!(p.source.contains(&dir.path().display().to_string()));
    let sizes: Vec<(u64, f64)> = p.sizes.iter().map(|b| (b.max_bytes, b.weight)).collect();
    assert_eq!(sizes, [(1024, 10.0), (2048, 5.5), (4096, 0.0)]);
    let depths: Vec<(u32, f64, u64)> = p
        .depths
        .iter()
        .map(|b| (b.depth, b.weight, b.subdirs))
        .collect();
    assert_eq!(depths, [(0, 1.0, 3), (1, 4.0, 0)]);
    assert_eq!(p.ages[0].age, 10.74);
    assert_eq!(p.validate(), Ok(()));
}

#[test]
fn imports_explicit_paths() {
    let dir = profile_dir(SIZES, DIRS, AGES);
    let renamed = dir.path().join("sizes.dat");
    std::fs::rename(dir.path().join("size_distribution.txt"), &renamed).unwrap();
    let p = import_geriatrix_files(
        &renamed,
        &dir.path().join("dir_distribution.txt"),
        &dir.path().join("age_distribution.txt"),
        "explicit",
    )
    .unwrap();
    assert_eq!(p.sizes.len(), 3);
    assert!(p.source.contains("sizes.dat"));
}

#[test]
fn reads_only_the_announced_rows_like_geriatrix() {
    let dir = profile_dir("2\n1024 10\n2048 5\n4096 1\nFormat:\n", DIRS, AGES);
    assert_eq!(import_geriatrix(dir.path(), "x").unwrap().sizes.len(), 2);
}

#[test]
fn blank_lines_are_skipped_and_lines_still_counted() {
    refused_sizes(
        "\n2\n\n1024 10\n\n2048 -1\n",
        Some(6),
        "size bin 2: weight -1 is negative",
    );
}

#[test]
fn count_mismatches() {
    refused_sizes(
        "3\n1024 10\n2048 5\nFormat:\n",
        Some(4),
        "line 1 announces 3 rows, but only 2 precede the Format: note",
    );
    refused_sizes(
        "3\n1024 10\n2048 5\n",
        Some(1),
        "announces 3 rows, but the file has only 2",
    );
    refused_sizes("0\nFormat:\n", Some(1), "size: no bins");
}

#[test]
fn bad_count_lines() {
    refused_sizes(
        "three\n1024 10\n",
        Some(1),
        "expected the number of rows, found `three`",
    );
    refused_sizes("-1\n1024 10\n", Some(1), "expected the number of rows");
    refused_sizes("", None, "empty file");
    refused_sizes("\n  \n", None, "empty file");
}

#[test]
fn bad_numbers_and_columns() {
    refused_sizes(
        "2\n1024 10\n2048 ten\n",
        Some(3),
        "size bin 2: `ten` is not a number",
    );
    refused_sizes(
        "1\n1024 10 7\n",
        Some(2),
        "size bin 1: expected 2 numbers (edge in bytes, weight), found 3",
    );
    refused_sizes("1\n1024\n", Some(2), "size bin 1: expected 2 numbers");
    refused_sizes(
        "1\n-1024 1\n",
        Some(2),
        "size bin 1: edge -1024 is negative",
    );
    refused_sizes(
        "1\n10.5 1\n",
        Some(2),
        "size bin 1: edge 10.5 is not an integer",
    );
    refused_sizes(
        "1\n99999999999999999999 1\n",
        Some(2),
        "size bin 1: edge 99999999999999999999 is too large",
    );
    refused_sizes("1\n1024 nan\n", Some(2), "weight is NaN");
    refused_sizes(
        "2\n2048 1\n1024 1\n",
        Some(3),
        "size bin 2: edge 1024 is not above the previous edge 2048",
    );
    refused_sizes("2\n1024 0\n2048 0\n", Some(1), "size: all weights are zero");
}

#[test]
fn errors_in_the_other_files_name_them() {
    let (dir, e) = error(SIZES, "2\n0 1 3\n1 4 -2\n", AGES);
    assert_eq!(
        e.to_string(),
        format!(
            "{}:3: depth bin 2: subdirs -2 is negative",
            file(&dir, "dir_distribution.txt")
        )
    );
    let (dir, e) = error(SIZES, DIRS, "2\n0 1\n31 2\n");
    assert_eq!(
        e.to_string(),
        format!(
            "{}:2: age bin 1: age 0 is not positive",
            file(&dir, "age_distribution.txt")
        )
    );
    let (_, e) = error(SIZES, "1\n0 1\n", AGES);
    assert!(
        e.message
            .contains("depth bin 1: expected 3 numbers (depth, weight, subdirs), found 2"),
        "{e}"
    );
}

#[test]
fn missing_files_and_names() {
    let dir = profile_dir(SIZES, DIRS, AGES);
    std::fs::remove_file(dir.path().join("age_distribution.txt")).unwrap();
    let e = import_geriatrix(dir.path(), "x").unwrap_err();
    assert_eq!(e.file, file(dir.path(), "age_distribution.txt"));
    assert!(e.message.starts_with("cannot read"), "{e}");
    let e = import_geriatrix(dir.path(), " ").unwrap_err();
    assert_eq!(e.message, "name is empty");
}

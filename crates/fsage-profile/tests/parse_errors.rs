//! Every validation error of the TOML format: the message names the file, the line and the
//! problem.

use fsage_profile::{load, parse, ProfileError};

/// A valid profile; the line numbers below refer to it.
const VALID: &str = r#"name = "t"
description = "d"
source = "s"
fullness = 0.8

[size]
bins = [[1024, 10], [2048, 5]]

[depth]
bins = [[0, 1, 2], [1, 3, 0]]

[age]
unit = "days"
bins = [[1, 2], [2, 0]]
"#;

fn error(text: &str) -> ProfileError {
    parse(text, "t.toml").expect_err("the text should be refused")
}

/// `VALID` with `from` replaced by `to`, which must be refused on `line` with a message that
/// contains `needle`.
#[track_caller]
fn refused(from: &str, to: &str, line: usize, needle: &str) {
    assert!(VALID.contains(from), "{from:?} is not in the valid text");
    let e = error(&VALID.replacen(from, to, 1));
    assert_eq!(e.file, "t.toml");
    assert_eq!(e.line, Some(line), "wrong line for {e}");
    assert!(
        e.message.contains(needle),
        "{e:?} should mention {needle:?}"
    );
    assert!(
        e.to_string().starts_with(&format!("t.toml:{line}: ")),
        "{e}"
    );
}

#[test]
fn the_valid_profile_parses() {
    let p = parse(VALID, "t.toml").unwrap();
    assert_eq!(p.name, "t");
    assert_eq!(p.fullness.get(), 0.8);
    assert_eq!(p.sizes.len(), 2);
    assert_eq!(p.depths[0].subdirs, 2);
    assert_eq!(p.ages[1].age, 2.0);
}

#[test]
fn display_names_file_line_and_problem() {
    let e = error(&VALID.replace("[2048, 5]", "[2048, -2]"));
    assert_eq!(e.to_string(), "t.toml:7: size bin 2: weight -2 is negative");
    assert_eq!(e.column, Some(21));
}

#[test]
fn optional_keys_may_be_left_out_and_numbers_may_be_either_kind() {
    let text = VALID
        .replace("description = \"d\"\n", "")
        .replace("source = \"s\"\n", "")
        .replace("unit = \"days\"\n", "")
        .replace("fullness = 0.8", "fullness = 1")
        .replace("[1024, 10]", "[1024.0, 0.5]");
    let p = parse(&text, "t.toml").unwrap();
    assert_eq!((p.description.as_str(), p.source.as_str()), ("", ""));
    assert_eq!(p.fullness.get(), 1.0);
    assert_eq!((p.sizes[0].max_bytes, p.sizes[0].weight), (1024, 0.5));
}

#[test]
fn unknown_keys() {
    refused(
        "fullness = 0.8\n",
        "fullness = 0.8\ncolour = 1\n",
        5,
        "unknown key `colour`",
    );
    refused(
        "[2048, 5]]\n",
        "[2048, 5]]\nmax = 3\n",
        8,
        "unknown key `max`",
    );
    refused(
        "unit = \"days\"",
        "units = \"days\"",
        13,
        "unknown key `units`",
    );
    let e = error(&format!("{VALID}[extra]\n"));
    assert_eq!(e.line, Some(15));
    assert!(e.message.contains("unknown key `extra`"), "{e}");
}

#[test]
fn missing_keys() {
    let e = error(&VALID.replace("name = \"t\"\n", ""));
    assert_eq!((e.line, e.message.as_str()), (None, "missing key `name`"));
    assert_eq!(e.to_string(), "t.toml: missing key `name`");
    let e = error(&VALID.replace("fullness = 0.8\n", ""));
    assert!(e.message.contains("missing key `fullness`"), "{e}");
    let e = error(&VALID.replace("[age]\nunit = \"days\"\nbins = [[1, 2], [2, 0]]\n", ""));
    assert!(e.message.contains("missing key `age`"), "{e}");
    refused(
        "bins = [[0, 1, 2], [1, 3, 0]]\n",
        "",
        9,
        "missing key `bins`",
    );
}

#[test]
fn wrong_types() {
    refused(
        "name = \"t\"",
        "name = 3",
        1,
        "`name` must be a string, found integer",
    );
    refused(
        "source = \"s\"",
        "source = [1]",
        3,
        "`source` must be a string, found array",
    );
    refused(
        "fullness = 0.8",
        "fullness = \"high\"",
        4,
        "fullness must be a number, found string",
    );
    refused("unit = \"days\"", "unit = 3", 13, "`unit` must be a string");
    refused(
        "bins = [[1024, 10], [2048, 5]]",
        "bins = 3",
        7,
        "expected an array",
    );
    refused(
        "[size]\nbins = [[1024, 10], [2048, 5]]",
        "size = 5",
        6,
        "expected a table",
    );
    refused(
        "[[1024, 10], [2048, 5]]",
        "[1024, 10]",
        7,
        "size bin 1: expected an array of numbers, found integer",
    );
    refused(
        "[2048, 5]",
        "[2048, \"five\"]",
        7,
        "size bin 2: element 2 must be a number, found string",
    );
    refused(
        "[1, 3, 0]",
        "[1, true, 0]",
        10,
        "depth bin 2: element 2 must be a number, found boolean",
    );
}

#[test]
fn bad_weights() {
    refused(
        "[2048, 5]",
        "[2048, -2]",
        7,
        "size bin 2: weight -2 is negative",
    );
    refused(
        "[2048, 5]",
        "[2048, -0.5]",
        7,
        "size bin 2: weight -0.5 is negative",
    );
    refused("[2048, 5]", "[2048, nan]", 7, "size bin 2: weight is NaN");
    refused(
        "[1, 3, 0]",
        "[1, inf, 0]",
        10,
        "depth bin 2: weight inf is infinite",
    );
    refused(
        "[2, 0]]",
        "[2, -inf]]",
        14,
        "age bin 2: weight -inf is infinite",
    );
    refused(
        "[[1024, 10], [2048, 5]]",
        "[[1024, 0], [2048, 0]]",
        7,
        "size: all weights are zero",
    );
    refused(
        "[[1, 2], [2, 0]]",
        "[[1, 0], [2, 0.0]]",
        14,
        "age: all weights are zero",
    );
    refused(
        "[[1024, 10], [2048, 5]]",
        "[[1024, 1e308], [2048, 1e308]]",
        7,
        "infinity",
    );
}

#[test]
fn empty_histograms() {
    refused("[[1024, 10], [2048, 5]]", "[]", 7, "size: no bins");
    refused("[[0, 1, 2], [1, 3, 0]]", "[]", 10, "depth: no bins");
    refused("[[1, 2], [2, 0]]", "[]", 14, "age: no bins");
}

#[test]
fn keys_must_strictly_increase() {
    refused(
        "[[1024, 10], [2048, 5]]",
        "[[2048, 10], [1024, 5]]",
        7,
        "size bin 2: edge 1024 is not above the previous edge 2048",
    );
    refused(
        "[[1024, 10], [2048, 5]]",
        "[[1024, 10], [1024, 5]]",
        7,
        "size bin 2: edge 1024 is not above",
    );
    refused(
        "[[0, 1, 2], [1, 3, 0]]",
        "[[1, 1, 2], [1, 3, 0]]",
        10,
        "depth bin 2: depth 1 is not above the previous depth 1",
    );
    refused(
        "[[1, 2], [2, 0]]",
        "[[1.5, 2], [1.5, 0]]",
        14,
        "age bin 2: age 1.5 is not above the previous age 1.5",
    );
}

#[test]
fn ages_must_be_positive_and_finite() {
    refused(
        "[[1, 2], [2, 0]]",
        "[[0, 2], [2, 0]]",
        14,
        "age bin 1: age 0 is not positive",
    );
    refused(
        "[[1, 2], [2, 0]]",
        "[[-3, 2], [2, 0]]",
        14,
        "age bin 1: age -3 is not positive",
    );
    refused(
        "[[1, 2], [2, 0]]",
        "[[1, 2], [inf, 0]]",
        14,
        "age bin 2: age inf is not a finite number",
    );
    refused(
        "[[1, 2], [2, 0]]",
        "[[nan, 2], [2, 0]]",
        14,
        "age bin 1: age NaN is not a finite number",
    );
}

#[test]
fn fullness_must_be_in_the_unit_interval() {
    refused(
        "fullness = 0.8",
        "fullness = 0",
        4,
        "fullness 0 is outside (0, 1]",
    );
    refused(
        "fullness = 0.8",
        "fullness = 1.5",
        4,
        "fullness 1.5 is outside (0, 1]",
    );
    refused(
        "fullness = 0.8",
        "fullness = -0.1",
        4,
        "fullness -0.1 is outside (0, 1]",
    );
    refused(
        "fullness = 0.8",
        "fullness = nan",
        4,
        "fullness NaN is outside (0, 1]",
    );
    refused("fullness = 0.8", "fullness = inf", 4, "outside (0, 1]");
}

#[test]
fn rows_need_the_right_number_of_elements() {
    refused(
        "[1024, 10]",
        "[1024, 10, 3]",
        7,
        "size bin 1: expected 2 numbers (edge in bytes, weight), found 3",
    );
    refused(
        "[1, 3, 0]",
        "[1, 3]",
        10,
        "depth bin 2: expected 3 numbers (depth, weight, subdirs), found 2",
    );
    refused(
        "[1, 2]",
        "[1]",
        14,
        "age bin 1: expected 2 numbers (age, weight), found 1",
    );
    refused(
        "[1, 2]",
        "[]",
        14,
        "age bin 1: expected 2 numbers (age, weight), found 0",
    );
}

#[test]
fn integers_must_be_whole_and_not_negative() {
    refused("[2048, 5]", "[-1, 5]", 7, "size bin 2: edge -1 is negative");
    refused(
        "[2048, 5]",
        "[2048.5, 5]",
        7,
        "size bin 2: edge 2048.5 is not an integer",
    );
    refused(
        "[2048, 5]",
        "[inf, 5]",
        7,
        "size bin 2: edge inf is not a finite number",
    );
    refused(
        "[1, 3, 0]",
        "[-1, 3, 0]",
        10,
        "depth bin 2: depth -1 is negative",
    );
    refused(
        "[1, 3, 0]",
        "[1.5, 3, 0]",
        10,
        "depth bin 2: depth 1.5 is not an integer",
    );
    refused(
        "[1, 3, 0]",
        "[4294967296, 3, 0]",
        10,
        "depth bin 2: depth 4294967296 is too large",
    );
    refused(
        "[1, 3, 0]",
        "[1, 3, -7]",
        10,
        "depth bin 2: subdirs -7 is negative",
    );
    refused(
        "[1, 3, 0]",
        "[1, 3, 0.25]",
        10,
        "depth bin 2: subdirs 0.25 is not an integer",
    );
}

#[test]
fn names_must_not_be_empty() {
    refused("name = \"t\"", "name = \"\"", 1, "name is empty");
    refused("name = \"t\"", "name = \"  \"", 1, "name is empty");
}

#[test]
fn toml_syntax_errors_have_a_line() {
    refused("[2048, 5]]", "[2048, 5]", 9, "invalid array");
    refused("source = \"s\"", "source = \"s", 3, "invalid basic string");
    refused("source = \"s\"", "name = \"u\"", 3, "duplicate key");
}

#[test]
fn errors_in_multi_line_arrays_point_at_the_row() {
    let text = VALID.replace(
        "bins = [[1, 2], [2, 0]]",
        "bins = [\n  [1, 2],\n  [2, 0],\n  [3, -1],\n]",
    );
    let e = error(&text);
    assert_eq!((e.line, e.column), (Some(17), Some(3)));
    assert_eq!(e.message, "age bin 3: weight -1 is negative");
}

#[test]
fn load_names_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.toml");
    let e = load(&missing).unwrap_err();
    assert_eq!(e.file, missing.display().to_string());
    assert!(e.message.starts_with("cannot read the profile"), "{e}");

    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, VALID.replace("[2048, 5]", "[2048, -2]")).unwrap();
    let e = load(&bad).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("{}:7: size bin 2: weight -2 is negative", bad.display())
    );

    let good = dir.path().join("good.toml");
    std::fs::write(&good, VALID).unwrap();
    assert_eq!(load(&good).unwrap(), parse(VALID, "x").unwrap());
}

#[test]
fn errors_toml_leaves_unexplained_get_a_message() {
    // A control character in a comment inside an array.
    let e = error(&VALID.replace("[[1024, 10], ", "[[1024, 10], # \u{0}\n"));
    assert_eq!(
        (e.line, e.message.as_str()),
        (Some(7), "invalid TOML syntax")
    );
}

/// Regression: a depth of 4294967295, `subdirs = 9223372036854775807` or 10^6 bins were accepted
/// and made `profile show` grow to 11-15 GB. The format bounds them to what a file system holds.
#[test]
fn counts_a_file_system_cannot_hold_are_refused() {
    refused("[1, 3, 0]", "[4294967295, 3, 0]", 10, "too deep");
    refused("[1, 3, 0]", "[257, 3, 0]", 10, "at most 256");
    refused(
        "[0, 1, 2]",
        "[0, 1, 9223372036854775807]",
        10,
        "more directories than a file system holds",
    );
    let e = error(&VALID.replacen(
        "[[0, 1, 2], [1, 3, 0]]",
        "[[0, 1, 3000000000], [1, 3, 3000000000]]",
        1,
    ));
    assert!(e.message.contains("directories in all"), "{e}");
    let many: Vec<String> = (1..=5000).map(|i| format!("[{i}, 1]")).collect();
    let e = error(&VALID.replacen(
        "[[1024, 10], [2048, 5]]",
        &format!("[{}]", many.join(", ")),
        1,
    ));
    assert!(e.message.contains("at most 4096"), "{e}");
}

#[test]
fn size_edges_may_carry_a_unit_of_the_one_grammar() {
    let p = parse(
        &VALID.replace("[[1024, 10], [2048, 5]]", "[[\"1K\", 10], [\"2.5 KB\", 5]]"),
        "t.toml",
    )
    .unwrap();
    assert_eq!(p.sizes[0].max_bytes, 1024);
    assert_eq!(p.sizes[1].max_bytes, 2500);
    refused(
        "[2048, 5]",
        "[\"2 KQ\", 5]",
        7,
        "size bin 2: edge: `2 KQ` is not a size: unknown unit `KQ`",
    );
    refused("[2048, 5]", "[\"-2K\", 5]", 7, "cannot be negative");
    // Only the edge of a size bin: weights, depths and ages stay numbers.
    refused(
        "[1, 3, 0]",
        "[\"1K\", 3, 0]",
        10,
        "depth bin 2: element 1 must be a number, found string",
    );
}

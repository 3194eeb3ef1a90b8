//! `--help` against the README's `## Commands` section: every subcommand and every flag clap
//! knows (hidden ones excepted) is there, and every flag the README gives a command is one clap
//! knows for it. The command line's own modules are compiled into this test, so the tree walked
//! is `Cli::command()` itself.

#![allow(dead_code)]

#[path = "../src/age_cmd.rs"]
mod age_cmd;
#[path = "../src/bench_cmd.rs"]
mod bench_cmd;
#[path = "../src/cli.rs"]
mod cli;
#[path = "../src/dev_cmd.rs"]
mod dev_cmd;
#[path = "../src/exit.rs"]
mod exit;
#[path = "../src/experiment_cmd.rs"]
mod experiment_cmd;
#[path = "../src/frag_cmd.rs"]
mod frag_cmd;
#[path = "../src/fs_cmd.rs"]
mod fs_cmd;
#[path = "../src/git_age_cmd.rs"]
mod git_age_cmd;
#[path = "../src/image_cmd.rs"]
mod image_cmd;
#[path = "../src/profile_cmd.rs"]
mod profile_cmd;
#[path = "../src/progress.rs"]
mod progress;
#[path = "../src/replay_cmd.rs"]
mod replay_cmd;
#[path = "../src/report_cmd.rs"]
mod report_cmd;
#[path = "../src/reproduce_cmd.rs"]
mod reproduce_cmd;
#[path = "../src/rollback_cmd.rs"]
mod rollback_cmd;
#[path = "../src/util.rs"]
mod util;
#[path = "../src/vm_cmd.rs"]
mod vm_cmd;

use clap::CommandFactory;
use std::collections::{BTreeMap, BTreeSet};

/// Every visible subcommand path (`bench run`) with its visible long flags.
fn clap_tree() -> BTreeMap<String, BTreeSet<String>> {
    fn walk(c: &clap::Command, path: &str, out: &mut BTreeMap<String, BTreeSet<String>>) {
        for s in c.get_subcommands().filter(|s| !s.is_hide_set()) {
            let p = if path.is_empty() {
                s.get_name().to_string()
            } else {
                format!("{path} {}", s.get_name())
            };
            // A flag with a short form is written `--output|-o`: the README may give either.
            let flags = s
                .get_arguments()
                .filter(|a| !a.is_hide_set())
                .filter_map(|a| {
                    let long = a.get_long()?;
                    Some(match a.get_short() {
                        Some(c) => format!("--{long}|-{c}"),
                        None => format!("--{long}"),
                    })
                })
                .filter(|l| !l.starts_with("--help") && !l.starts_with("--version"))
                .collect();
            out.insert(p.clone(), flags);
            walk(s, &p, out);
        }
    }
    let mut out = BTreeMap::new();
    walk(&cli::Cli::command(), "", &mut out);
    out
}

/// The `## Commands` section, up to the next section.
fn commands_section() -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README.md");
    let start = readme
        .find("\n## Commands\n")
        .expect("a ## Commands section");
    let rest = &readme[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |e| e + 3);
    rest[..end].to_string()
}

fn spans(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(|s| s.replace("\\|", "|"))
        .collect()
}

/// `--flag` and `-o` words.
fn flags_in(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| {
            (w.starts_with("--") && w.len() > 2 && !w.ends_with('-'))
                || (w.len() == 2 && w.starts_with('-') && w.as_bytes()[1].is_ascii_alphabetic())
        })
        .map(String::from)
        .collect()
}

/// Does the README's `f` name the flag `spec` (`--output|-o`)?
fn names(spec: &str, f: &str) -> bool {
    spec.split('|').any(|x| x == f)
}

/// The subcommands a span names (`fsage bench run ...`, `bench show ...`, `image
/// list|show|verify`): the longest path it starts with, each alternative of its last word.
fn paths_of(span: &str, paths: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let s = span.strip_prefix("fsage ").unwrap_or(span);
    let words: Vec<&str> = s.split_whitespace().collect();
    for n in (1..=words.len().min(3)).rev() {
        let head = words[..n - 1].join(" ");
        let found: Vec<String> = words[n - 1]
            .split('|')
            .map(|w| {
                if head.is_empty() {
                    w.to_string()
                } else {
                    format!("{head} {w}")
                }
            })
            .filter(|p| paths.contains_key(p))
            .collect();
        if !found.is_empty() {
            return found;
        }
    }
    Vec::new()
}

/// What the README says of each command: the flags given with it in a command's own text (the
/// first column of the table, the `age` options table, "Other options"), and every flag its rows
/// mention anywhere.
struct Readme {
    named: BTreeSet<String>,
    strict: BTreeMap<String, BTreeSet<String>>,
    mentioned: BTreeMap<String, BTreeSet<String>>,
}

/// The section's table rows, one each, and its paragraphs, each joined into one line.
fn units(section: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut para = String::new();
    for line in section.lines() {
        if line.starts_with('|') || line.trim().is_empty() {
            if !para.is_empty() {
                out.push(std::mem::take(&mut para));
            }
            if line.starts_with('|') {
                out.push(line.to_string());
            }
        } else {
            if !para.is_empty() {
                para.push(' ');
            }
            para.push_str(line);
        }
    }
    out.push(para);
    out
}

fn readme(paths: &BTreeMap<String, BTreeSet<String>>) -> Readme {
    let mut r = Readme {
        named: BTreeSet::new(),
        strict: BTreeMap::new(),
        mentioned: BTreeMap::new(),
    };
    for unit in units(&commands_section()) {
        let (first, rest) = if let Some(row) = unit.strip_prefix("| `") {
            let row = &unit[unit.len() - row.len() - 1..];
            row.split_once(" | ").unwrap_or((row, ""))
        } else if unit.starts_with("Other options") {
            (unit.as_str(), "")
        } else {
            continue;
        };
        let mut row_paths: Vec<String> = Vec::new();
        let mut current: Vec<String> = Vec::new();
        for span in spans(first) {
            let found = if span.starts_with("--") && first.starts_with("`--") {
                vec!["age".to_string()] // the `fsage age` options table
            } else {
                paths_of(&span, paths)
            };
            if !found.is_empty() {
                current = found;
            }
            for p in &current {
                r.named.insert(p.clone());
                for f in flags_in(&span) {
                    r.strict.entry(p.clone()).or_default().insert(f.clone());
                    r.mentioned.entry(p.clone()).or_default().insert(f);
                }
                row_paths.push(p.clone());
            }
        }
        for f in flags_in(rest) {
            for p in &row_paths {
                r.mentioned.entry(p.clone()).or_default().insert(f.clone());
            }
        }
    }
    r
}

#[test]
fn every_subcommand_and_flag_of_help_is_in_the_readme_and_the_reverse() {
    let tree = clap_tree();
    let r = readme(&tree);
    let mut wrong = Vec::new();
    for (path, flags) in &tree {
        // A command with subcommands and no flags of its own (`bench`) is named by them.
        let parent = tree.keys().any(|k| k.starts_with(&format!("{path} ")));
        if !(r.named.contains(path) || (parent && flags.is_empty())) {
            wrong.push(format!(
                "`fsage {path}` is not in the README's command table"
            ));
        }
        for f in flags {
            if !r
                .mentioned
                .get(path)
                .is_some_and(|m| m.iter().any(|x| names(f, x)))
            {
                wrong.push(format!(
                    "`fsage {path} {f}` is not in the README's command table"
                ));
            }
        }
    }
    for (path, flags) in &r.strict {
        for f in flags {
            if !tree[path].iter().any(|spec| names(spec, f)) {
                wrong.push(format!(
                    "the README gives `fsage {path}` the flag {f}, which its --help does not have"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

/// The check itself: a flag missing from the README and one the README invents are both found.
#[test]
fn the_check_finds_a_missing_and_an_invented_flag() {
    let mut tree = clap_tree();
    let r = readme(&tree);
    assert!(r.mentioned["report"].contains("--force"));
    assert!(!r.mentioned["age"].contains("--no-such-flag"));
    tree.get_mut("age").unwrap().remove("--capacity");
    assert!(r.strict["age"]
        .iter()
        .any(|f| !tree["age"].iter().any(|spec| names(spec, f))));
}

/// No command row appears twice (`frag --against-fresh` did).
#[test]
fn no_row_of_the_command_table_is_repeated() {
    let mut seen = BTreeSet::new();
    for line in commands_section().lines() {
        if line.starts_with("| `fsage") {
            assert!(seen.insert(line.to_string()), "repeated row: {line}");
        }
    }
}

/// The top-level help describes everything fsage does, and `age --help` states the fullness
/// range the check enforces.
#[test]
fn help_texts_say_what_fsage_does() {
    let mut c = cli::Cli::command();
    let long = c.render_long_help().to_string();
    for what in [
        "bench",
        "slow",
        "Git",
        "experiment",
        "report",
        "fragment",
        "image",
    ] {
        assert!(
            long.contains(what),
            "top-level --help lacks {what:?}:\n{long}"
        );
    }
    let age = c
        .find_subcommand_mut("age")
        .unwrap()
        .render_long_help()
        .to_string();
    let err = fsage_core::age::check_fullness(1.0)
        .unwrap_err()
        .to_string();
    assert!(err.contains("(0, 1)"), "{err}");
    assert!(age.contains("Fullness u in (0, 1)"), "{age}");
}

/// The top-level help lists every visible subcommand of each command in its one-line summary
/// (`dev` named neither models, cost nor precondition; `experiment` neither submit, run-cell nor
/// cancel), so a user finds them from `fsage --help`.
#[test]
fn the_top_level_help_names_every_subcommand() {
    fn words(c: &clap::Command) -> BTreeSet<String> {
        c.get_about()
            .map(|a| a.to_string())
            .unwrap_or_default()
            .split(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '-'))
            .map(|w| w.to_lowercase())
            .collect()
    }
    let top = cli::Cli::command();
    let mut missing = Vec::new();
    for c in top.get_subcommands().filter(|c| !c.is_hide_set()) {
        let said = words(c);
        for s in c.get_subcommands().filter(|s| !s.is_hide_set()) {
            if !said.contains(s.get_name()) {
                missing.push(format!("{} {}", c.get_name(), s.get_name()));
            }
        }
    }
    assert!(missing.is_empty(), "not in `fsage --help`: {missing:?}");
}

/// The README names no path that exists only on the machine it was written on (`/work/...`):
/// the shared bundles are given relative to the checkout.
#[test]
fn the_readme_names_no_machine_path() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README.md");
    let bad: Vec<&str> = readme.lines().filter(|l| l.contains("/work/")).collect();
    assert!(bad.is_empty(), "{bad:?}");
}

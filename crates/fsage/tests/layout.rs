//! README's Layout table against the crate graph: every crate under crates/ has a row, each row's
//! "depends on" column lists exactly the workspace crates in its Cargo.toml's `[dependencies]`, and
//! every crate depends only on crates above it in the table (dev-dependencies are exempt).

use std::collections::BTreeSet;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .parent()
        .unwrap()
}

/// The workspace crates a Cargo.toml's `[dependencies]` names, without the `fsage-` prefix.
fn deps_of(manifest: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(manifest).unwrap();
    let doc: toml::Table = toml::from_str(&text).unwrap();
    doc.get("dependencies")
        .and_then(|d| d.as_table())
        .map(|d| {
            d.keys()
                .filter_map(|k| k.strip_prefix("fsage-").map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// (crate, its "depends on" cell) for each row of the table under `## Layout`, in order.
fn layout_rows() -> Vec<(String, String)> {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let section = readme
        .split("\n## Layout")
        .nth(1)
        .expect("README.md has a ## Layout section");
    let section = section.split("\n## ").next().unwrap();
    section
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            // | `name` | job | depends on |: the job may hold '|' only inside code, which the
            // table does not use, so the last non-empty cell is the dependency list.
            let name = cells[1].trim_matches('`').to_string();
            let deps = cells[cells.len() - 2].to_string();
            (name, deps)
        })
        .collect()
}

#[test]
fn readme_layout_matches_the_crate_graph() {
    let rows = layout_rows();
    assert!(rows.len() > 5, "no Layout table rows found in README.md");
    let mut crates: BTreeSet<String> = BTreeSet::new();
    for e in std::fs::read_dir(root().join("crates")).unwrap() {
        let p = e.unwrap().path();
        if p.join("Cargo.toml").exists() {
            crates.insert(p.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    let named: BTreeSet<String> = rows.iter().map(|r| r.0.clone()).collect();
    assert_eq!(
        named, crates,
        "README Layout rows against the crates under crates/"
    );

    let mut above: BTreeSet<String> = BTreeSet::new();
    let mut problems = Vec::new();
    for (name, cell) in &rows {
        let actual = deps_of(&root().join("crates").join(name).join("Cargo.toml"));
        let listed: BTreeSet<String> = match cell.as_str() {
            "–" | "-" => BTreeSet::new(),
            // The CLI row says "all": every library crate but the test-support one.
            "all" => crates
                .iter()
                .filter(|c| *c != name && *c != "fsage-testkit")
                .map(|c| c.strip_prefix("fsage-").unwrap_or(c).to_string())
                .collect(),
            _ => cell.split(',').map(|d| d.trim().to_string()).collect(),
        };
        if listed != actual {
            problems.push(format!(
                "{name}: README lists {listed:?}, Cargo.toml has {actual:?}"
            ));
        }
        for d in &actual {
            if !above.contains(&format!("fsage-{d}")) {
                problems.push(format!(
                    "{name} depends on fsage-{d}, which is not above it"
                ));
            }
        }
        above.insert(name.clone());
    }
    assert!(
        problems.is_empty(),
        "README Layout table:\n{}",
        problems.join("\n")
    );
}

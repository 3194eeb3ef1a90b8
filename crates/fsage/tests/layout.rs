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

/// What only the code that measures builds: the workload engine's io_uring, the slow device's
/// FUSE daemon, the image library's and a compressing drive's zstd.
const MEASURING_LIBS: [&str; 4] = ["fuser", "io-uring", "zstd", "zstd-sys"];

/// The workspace crates that measure (or build what does): a crate that only reads results
/// must not reach them.
const MEASURING_CRATES: [&str; 4] = ["fsage-workload", "fsage-slowdev", "fsage-lab", "fsage-core"];

/// One `[dependencies]` entry, a `workspace = true` one resolved against the root's
/// `[workspace.dependencies]`.
struct Dep {
    name: String,
    optional: bool,
    default_features: bool,
    features: Vec<String>,
}

fn manifest(path: &Path) -> toml::Table {
    toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn strings(v: Option<&toml::Value>) -> Vec<String> {
    v.and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn normal_deps(doc: &toml::Table, workspace: &toml::Table) -> Vec<Dep> {
    let Some(deps) = doc.get("dependencies").and_then(|d| d.as_table()) else {
        return Vec::new();
    };
    deps.iter()
        .map(|(name, v)| {
            let local = v.as_table();
            let get = |k: &str| local.and_then(|t| t.get(k));
            let inherited = get("workspace").and_then(|w| w.as_bool()) == Some(true);
            let root = inherited
                .then(|| workspace.get(name).and_then(|r| r.as_table()))
                .flatten();
            let mut features = strings(get("features"));
            features.extend(strings(root.and_then(|r| r.get("features"))));
            let default_features = [
                get("default-features"),
                root.and_then(|r| r.get("default-features")),
            ]
            .into_iter()
            .flatten()
            .all(|d| d.as_bool() != Some(false));
            Dep {
                name: name.clone(),
                optional: get("optional").and_then(|o| o.as_bool()) == Some(true),
                default_features,
                features,
            }
        })
        .collect()
}

/// The optional dependencies of a crate that `enabled` features turn on (`dep:x`, `x`, `x/f`).
fn optional_on(doc: &toml::Table, enabled: &BTreeSet<String>) -> BTreeSet<String> {
    let table = doc.get("features").and_then(|f| f.as_table());
    let mut todo: Vec<String> = enabled.iter().cloned().collect();
    let mut seen = BTreeSet::new();
    let mut deps = BTreeSet::new();
    while let Some(f) = todo.pop() {
        if !seen.insert(f.clone()) {
            continue;
        }
        match table.and_then(|t| t.get(&f)) {
            Some(items) => todo.extend(strings(Some(items))),
            None => {
                let f = f.strip_prefix("dep:").unwrap_or(&f);
                if !f.contains("?/") {
                    deps.insert(f.split('/').next().unwrap().to_string());
                }
            }
        }
    }
    deps
}

/// The packages Cargo.lock says each package depends on (for any features), by name.
fn lock_graph() -> std::collections::BTreeMap<String, Vec<String>> {
    let lock = manifest(&root().join("Cargo.lock"));
    let mut g = std::collections::BTreeMap::new();
    for p in lock["package"].as_array().unwrap() {
        let name = p["name"].as_str().unwrap().to_string();
        let deps = strings(p.get("dependencies"))
            .into_iter()
            .map(|d| d.split(' ').next().unwrap().to_string());
        g.entry(name).or_insert_with(Vec::new).extend(deps);
    }
    g
}

/// What `krate`'s normal (non-dev) build reaches that only measuring code should: a measuring
/// workspace crate, or a measuring library through a workspace crate's dependencies (with the
/// features they turn on, fsage-device's `compression` included) or through a registry crate's
/// own dependencies (as Cargo.lock lists them, for any features: an upper bound).
fn measuring_reach(krate: &str) -> Vec<String> {
    let root_doc = manifest(&root().join("Cargo.toml"));
    let workspace = root_doc["workspace"]["dependencies"]
        .as_table()
        .unwrap()
        .clone();
    let doc_of = |c: &str| manifest(&root().join("crates").join(c).join("Cargo.toml"));
    let mut features: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
    features.insert(krate.into(), ["default".to_string()].into());
    let mut todo = vec![krate.to_string()];
    let mut external: BTreeSet<(String, String)> = BTreeSet::new();
    while let Some(c) = todo.pop() {
        let doc = doc_of(&c);
        let on = optional_on(&doc, &features[&c]);
        for d in normal_deps(&doc, &workspace) {
            if d.optional && !on.contains(&d.name) {
                continue;
            }
            if !root()
                .join("crates")
                .join(&d.name)
                .join("Cargo.toml")
                .exists()
            {
                external.insert((c.clone(), d.name));
                continue;
            }
            let mut want: BTreeSet<String> = d.features.into_iter().collect();
            if d.default_features {
                want.insert("default".into());
            }
            let first = !features.contains_key(&d.name);
            let have = features.entry(d.name.clone()).or_default();
            let before = have.len();
            have.extend(want);
            if first || have.len() > before {
                todo.push(d.name);
            }
        }
    }
    let mut problems: Vec<String> = features
        .keys()
        .filter(|c| MEASURING_CRATES.contains(&c.as_str()))
        .map(|c| format!("{krate} reaches {c}"))
        .collect();
    let lock = lock_graph();
    for (by, lib) in &external {
        let mut stack = vec![lib.clone()];
        let mut seen = BTreeSet::new();
        while let Some(x) = stack.pop() {
            if MEASURING_LIBS.contains(&x.as_str()) {
                problems.push(format!("{krate} reaches {x} through {by} -> {lib}"));
            }
            if seen.insert(x.clone()) {
                stack.extend(lock.get(&x).cloned().unwrap_or_default());
            }
        }
    }
    problems.sort();
    problems.dedup();
    problems
}

/// Issue 35: the report builds without the code that measures (no FUSE, io_uring or zstd), the
/// result types being fsage-results' and the analyses fsage-analysis'. The same check on the
/// experiment crate (which runs the workload engine) shows it finds what is there.
#[test]
fn the_report_builds_none_of_the_code_that_measures() {
    for c in ["fsage-report", "fsage-results", "fsage-analysis"] {
        let reach = measuring_reach(c);
        assert!(reach.is_empty(), "{c}:\n{}", reach.join("\n"));
    }
    let experiment = measuring_reach("fsage-experiment");
    for want in ["reaches fsage-workload", "reaches io-uring", "reaches zstd"] {
        assert!(
            experiment.iter().any(|p| p.contains(want)),
            "the check misses what fsage-experiment builds ({want}): {experiment:?}"
        );
    }
}

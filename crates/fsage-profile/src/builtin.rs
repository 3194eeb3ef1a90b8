//! The eight profiles shipped with Geriatrix, converted to our format and compiled in, so that
//! `fsage` works without any data files. The data is under the BSD licence in
//! `builtin/LICENSE-geriatrix.txt`.

use std::path::Path;

use crate::error::ProfileError;
use crate::geriatrix::import_geriatrix;
use crate::model::Profile;
use crate::toml_format::{load, parse};

/// Built-in names and their TOML text, sorted by name.
const BUILTINS: [(&str, &str); 8] = [
    ("agrawal", include_str!("../builtin/agrawal.toml")),
    ("dabre", include_str!("../builtin/dabre.toml")),
    ("douceur", include_str!("../builtin/douceur.toml")),
    ("grundman", include_str!("../builtin/grundman.toml")),
    ("meyer", include_str!("../builtin/meyer.toml")),
    ("pramod", include_str!("../builtin/pramod.toml")),
    ("wang_lanl", include_str!("../builtin/wang_lanl.toml")),
    ("wang_os", include_str!("../builtin/wang_os.toml")),
];

const NAMES: [&str; 8] = {
    let mut names = [""; 8];
    let mut i = 0;
    while i < BUILTINS.len() {
        names[i] = BUILTINS[i].0;
        i += 1;
    }
    names
};

/// Names of the built-in profiles, sorted.
pub fn builtin_names() -> &'static [&'static str] {
    &NAMES
}

/// A built-in profile by name. Case, `_` and `-` are ignored, so the paper's `WangOS` finds
/// `wang_os`.
pub fn builtin(name: &str) -> Option<Profile> {
    let key = |s: &str| {
        s.chars()
            .filter(|c| !matches!(c, '_' | '-'))
            .collect::<String>()
            .to_lowercase()
    };
    let wanted = key(name);
    let (file, text) = BUILTINS.iter().find(|(n, _)| key(n) == wanted)?;
    // The built-ins are checked by the tests; failing here is a build defect, not bad input.
    Some(parse(text, &format!("builtin/{file}.toml")).expect("built-in profiles are valid"))
}

/// A profile named on the command line: a built-in name, else a path to one of our TOML files,
/// else a directory holding the three Geriatrix files (named after the directory).
pub fn resolve(name_or_path: &str) -> Result<Profile, ProfileError> {
    if let Some(profile) = builtin(name_or_path) {
        return Ok(profile);
    }
    let path = Path::new(name_or_path);
    if path.is_file() {
        return load(path);
    }
    if path.join("size_distribution.txt").is_file() {
        let name = path.file_name().map_or_else(
            || name_or_path.to_owned(),
            |n| n.to_string_lossy().into_owned(),
        );
        return import_geriatrix(path, &name);
    }
    Err(ProfileError::whole(
        name_or_path,
        format!(
            "no such built-in profile or profile file; the built-ins are {}",
            NAMES.join(", ")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::toml_format::to_toml;

    /// The raw Geriatrix data, which lives beside the repository (absent in some checkouts).
    fn raw_data() -> Option<PathBuf> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/profiles/geriatrix");
        if dir.is_dir() {
            Some(dir)
        } else {
            println!(
                "note: {} is absent; skipping the raw-data comparison",
                dir.display()
            );
            None
        }
    }

    #[test]
    fn names_are_sorted_and_every_builtin_parses() {
        let names = builtin_names();
        assert_eq!(names.len(), 8);
        assert!(names.windows(2).all(|w| w[0] < w[1]));
        for &name in names {
            let p = builtin(name).unwrap();
            assert_eq!(p.name, name);
            assert!(
                !p.description.is_empty() && p.source.contains("BSD licence"),
                "{name}"
            );
            assert!(p.validate().is_ok());
            let expected = if name == "grundman" { 0.9 } else { 0.8 };
            assert_eq!(p.fullness.get(), expected, "{name}");
            // The files are in canonical form.
            assert_eq!(
                to_toml(&p),
                BUILTINS.iter().find(|b| b.0 == name).unwrap().1,
                "{name}"
            );
        }
    }

    #[test]
    fn builtins_equal_the_raw_geriatrix_data() {
        let Some(raw) = raw_data() else { return };
        for &name in builtin_names() {
            let imported = import_geriatrix(&raw.join(name), name).unwrap();
            let p = builtin(name).unwrap();
            assert_eq!(p.sizes, imported.sizes, "{name}");
            assert_eq!(p.depths, imported.depths, "{name}");
            assert_eq!(p.ages, imported.ages, "{name}");
        }
    }

    #[test]
    fn lookup_ignores_case_and_separators() {
        assert_eq!(builtin("WangOS").unwrap().name, "wang_os");
        assert_eq!(builtin("wang-lanl").unwrap().name, "wang_lanl");
        assert_eq!(builtin("Grundman").unwrap().name, "grundman");
        assert!(builtin("nosuch").is_none());
        assert!(builtin("").is_none());
    }

    #[test]
    fn resolve_finds_builtins_files_and_directories() {
        assert_eq!(resolve("dabre").unwrap().name, "dabre");
        let err = resolve("no/such/profile.toml").unwrap_err();
        assert!(err.to_string().contains("agrawal, dabre, douceur"), "{err}");

        let dir =
            std::env::temp_dir().join(format!("fsage-profile-resolve-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("mine.toml");
        let mut mine = builtin("meyer").unwrap();
        mine.name = "mine".into();
        std::fs::write(&file, to_toml(&mine)).unwrap();
        assert_eq!(resolve(file.to_str().unwrap()).unwrap(), mine);
        std::fs::write(dir.join("size_distribution.txt"), "1\n10 1\n").unwrap();
        std::fs::write(dir.join("dir_distribution.txt"), "1\n0 1 0\n").unwrap();
        std::fs::write(dir.join("age_distribution.txt"), "1\n3 1\n").unwrap();
        let imported = resolve(dir.to_str().unwrap()).unwrap();
        assert_eq!(imported.sizes.len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Rewrites `builtin/*.toml` from the raw data, keeping each file's name, description, source
    /// and fullness: `cargo test -p fsage-profile -- --ignored regenerate_builtins`.
    #[test]
    #[ignore]
    fn regenerate_builtins() {
        let raw = raw_data().expect("the raw Geriatrix data is needed");
        for &name in builtin_names() {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("builtin/{name}.toml"));
            let current = load(&path).unwrap();
            let imported = import_geriatrix(&raw.join(name), name).unwrap();
            let profile = Profile {
                sizes: imported.sizes,
                depths: imported.depths,
                ages: imported.ages,
                ..current
            };
            std::fs::write(&path, to_toml(&profile)).unwrap();
        }
    }
}

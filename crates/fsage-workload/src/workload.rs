//! A workload: its `.f` text, where it came from, the variables overridden, and the parsed model.

use crate::error::Error;
use crate::lang;
use crate::model::Model;
use std::collections::HashMap;
use std::path::Path;

/// The built-in personalities, written for fsage from Filebench's published parameters.
pub const BUILTINS: [(&str, &str, &str); 4] = [
    (
        "fileserver",
        "10,000 files (mean 128 KiB) in directories of 20; 50 threads create, write, append, read, delete, stat",
        include_str!("../builtin/fileserver.f"),
    ),
    (
        "varmail",
        "1,000 files (mean 16 KiB) in one directory; 16 threads delete, create+append+fsync, read+append+fsync, read",
        include_str!("../builtin/varmail.f"),
    ),
    (
        "webserver",
        "1,000 files (mean 16 KiB); 100 threads read ten whole files, then append to one shared log",
        include_str!("../builtin/webserver.f"),
    ),
    (
        "webproxy",
        "10,000 files (mean 16 KiB) in one directory; 100 threads delete, create, append, then read five",
        include_str!("../builtin/webproxy.f"),
    ),
];

#[derive(Debug, Clone)]
pub struct Workload {
    /// The built-in's name or the file's stem.
    pub name: String,
    /// The built-in's name or the file's path, for messages (`origin:line`).
    pub origin: String,
    text: String,
    overrides: HashMap<String, String>,
    model: Model,
}

impl Workload {
    /// A built-in personality by name.
    pub fn builtin(name: &str) -> Result<Workload, Error> {
        let (n, _, text) = BUILTINS
            .iter()
            .find(|(n, _, _)| *n == name)
            .ok_or_else(|| Error::UnknownWorkload(name.to_string()))?;
        Workload::parse(text, n)
    }

    /// Parses `.f` text; `origin` names it in messages.
    pub fn parse(text: &str, origin: &str) -> Result<Workload, Error> {
        let overrides = HashMap::new();
        let model = lang::parse(text, origin, &overrides)?;
        let name = Path::new(origin)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| origin.to_string());
        Ok(Workload {
            name,
            origin: origin.to_string(),
            text: text.to_string(),
            overrides,
            model,
        })
    }

    /// Reads a `.f` file; one that is not UTF-8 text is refused at the line of its first bad
    /// byte (bad input, not a failed read).
    pub fn from_file(path: &Path) -> Result<Workload, Error> {
        let bytes = std::fs::read(path).map_err(|source| Error::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let origin = path.display().to_string();
        let text = String::from_utf8(bytes).map_err(|e| {
            let ok = &e.as_bytes()[..e.utf8_error().valid_up_to()];
            Error::Parse {
                origin: origin.clone(),
                line: 1 + ok.iter().filter(|&&b| b == b'\n').count(),
                msg: "not UTF-8 text (a workload file is Filebench's text language)".into(),
            }
        })?;
        Workload::parse(&text, &origin)
    }

    /// A built-in name, or else a file.
    pub fn resolve(name_or_file: &str) -> Result<Workload, Error> {
        if BUILTINS.iter().any(|(n, _, _)| *n == name_or_file) {
            return Workload::builtin(name_or_file);
        }
        let p = Path::new(name_or_file);
        if p.exists() || name_or_file.contains('/') || name_or_file.ends_with(".f") {
            return Workload::from_file(p);
        }
        Err(Error::UnknownWorkload(name_or_file.to_string()))
    }

    /// The same workload with `set $VAR=` values replaced (`("nfiles", "50000")`).
    pub fn with_vars<K: AsRef<str>, V: AsRef<str>>(
        &self,
        vars: &[(K, V)],
    ) -> Result<Workload, Error> {
        let mut overrides = self.overrides.clone();
        for (k, v) in vars {
            let k = k.as_ref().trim().trim_start_matches('$');
            if k.is_empty() {
                return Err(Error::BadOverride(format!("={}", v.as_ref())));
            }
            overrides.insert(k.to_string(), v.as_ref().trim().to_string());
        }
        let model = lang::parse(&self.text, &self.origin, &overrides)?;
        Ok(Workload {
            overrides,
            model,
            ..self.clone()
        })
    }

    /// `VAR=VALUE` strings, as a command line gives them.
    pub fn with_assignments(&self, sets: &[String]) -> Result<Workload, Error> {
        let mut pairs = Vec::new();
        for s in sets {
            let (k, v) = s
                .split_once('=')
                .ok_or_else(|| Error::BadOverride(s.clone()))?;
            pairs.push((k.to_string(), v.to_string()));
        }
        self.with_vars(&pairs)
    }

    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The workload as `.f` text, with the overridden `set` lines rewritten.
    pub fn to_f_text(&self) -> String {
        let sets = lang::set_lines(&self.text);
        let mut out = String::new();
        let mut skip_to = 0;
        for (i, line) in self.text.lines().enumerate() {
            let n = i + 1;
            if n <= skip_to {
                continue;
            }
            match sets
                .iter()
                .find(|(first, _, name)| *first == n && self.overrides.contains_key(name))
            {
                Some((_, last, name)) => {
                    out.push_str(&format!("set ${name}={}", self.overrides[name]));
                    skip_to = *last;
                }
                None => out.push_str(line),
            }
            out.push('\n');
        }
        out
    }
}

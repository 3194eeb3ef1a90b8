//! A `[[workload]]` table: a built-in or a `.f` file, its `set` variables and its data, checked by
//! parsing the workload now.

use super::*;

pub(super) fn workload(cx: &Ctx, w: &Spanned<RawWorkload>) -> Result<WorkloadSpec, Error> {
    let r = w.get_ref();
    let source = match (&r.name, &r.file) {
        (Some(n), None) => {
            let name = n.get_ref().trim();
            if !BUILTIN_WORKLOADS.contains(&name) {
                return Err(cx.at(
                    n.span(),
                    format!(
                        "unknown built-in workload {name:?} (built in: {}; a .f file goes in \
                         `file`)",
                        BUILTIN_WORKLOADS.join(", ")
                    ),
                ));
            }
            WorkloadSource::Builtin { name: name.into() }
        }
        (None, Some(f)) => {
            let path = cx.dir.join(f.get_ref());
            let text = std::fs::read_to_string(&path)
                .map_err(|e| cx.at(f.span(), format!("workload file {}: {e}", path.display())))?;
            WorkloadSource::File { path, text }
        }
        (Some(n), Some(_)) => {
            return Err(cx.at(
                n.span(),
                "give a workload either `name` (built in) or `file` (a .f file), not both",
            ))
        }
        (None, None) => {
            return Err(cx.at(
                w.span(),
                "a workload needs `name` (built in) or `file` (a .f file)",
            ))
        }
    };
    let mut set = BTreeMap::new();
    for (k, v) in &r.set {
        if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(cx.at(
                v.span(),
                format!("variable name {k:?}: letters, digits and _ only"),
            ));
        }
        let val = match v.get_ref() {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            other => {
                return Err(cx.at(
                    v.span(),
                    format!(
                        "`set.{k}`: expected a string or a number, found {}",
                        other.type_str()
                    ),
                ))
            }
        };
        set.insert(k.clone(), val);
    }
    check_workload(cx, w, &source, &set)?;
    let label = match &r.label {
        Some(l) => label_ok(cx, l, "label")?,
        None => match &source {
            WorkloadSource::Builtin { name } => name.clone(),
            WorkloadSource::File { path, .. } => path
                .file_stem()
                .map_or("workload".into(), |s| s.to_string_lossy().into_owned()),
        },
    };
    let data = match &r.data {
        Some(d) => Some(
            fsage_workload::DataPattern::parse(d.get_ref())
                .map_err(|e| cx.at(d.span(), format!("`data`: {e}")))?,
        ),
        None => None,
    };
    Ok(WorkloadSpec {
        label,
        source,
        set,
        data,
    })
}

/// Parses the workload and applies its variables now, so that a bad `.f` file or a `set` the
/// workload cannot take is an error of the experiment file (its line, and the `.f` file's line)
/// before anything runs, not a failure of every cell after the aging.
pub(super) fn check_workload(
    cx: &Ctx,
    w: &Spanned<RawWorkload>,
    source: &WorkloadSource,
    set: &BTreeMap<String, String>,
) -> Result<(), Error> {
    let r = w.get_ref();
    let (parsed, span) = match source {
        WorkloadSource::Builtin { name } => (
            fsage_workload::Workload::builtin(name),
            r.name.as_ref().map_or(w.span(), |n| n.span()),
        ),
        WorkloadSource::File { path, text } => (
            fsage_workload::Workload::parse(text, &path.display().to_string()),
            r.file.as_ref().map_or(w.span(), |f| f.span()),
        ),
    };
    let parsed = parsed.map_err(|e| cx.at(span, format!("workload: {e}")))?;
    // One variable at a time first, so that the error points at the one that is wrong.
    for (k, v) in set {
        if let Err(e) = parsed.with_vars(&[(k, v)]) {
            let at = r.set.get(k).map_or(w.span(), |s| s.span());
            return Err(cx.at(at, format!("`set.{k}` = {v:?}: {e}")));
        }
    }
    let vars: Vec<(&String, &String)> = set.iter().collect();
    parsed
        .with_vars(&vars)
        .map_err(|e| cx.at(w.span(), format!("workload with its `set`: {e}")))?;
    Ok(())
}

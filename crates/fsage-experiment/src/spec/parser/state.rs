//! A `[[state]]` table: fresh or aged, with its profile and the aging run's limits.

use super::*;

pub(super) fn state(
    cx: &Ctx,
    s: &Spanned<RawState>,
    fs_labels: &BTreeSet<String>,
) -> Result<(StateSpec, Option<ProfileFile>), Error> {
    let r = s.get_ref();
    let kind = r.kind.get_ref().as_str();
    let not_for = |key: &str, span: Range<usize>| {
        cx.at(
            span,
            format!("`{key}` does not apply to a state of kind {kind:?}"),
        )
    };
    // Keys that belong to other kinds are refused rather than ignored.
    let aged_keys = [
        ("profile", r.profile.as_ref().map(|v| v.span())),
        ("fullness", r.fullness.as_ref().map(|v| v.span())),
        ("seed", r.seed.as_ref().map(|v| v.span())),
        ("max_ops", r.max_ops.as_ref().map(|v| v.span())),
        ("max_time", r.max_time.as_ref().map(|v| v.span())),
        ("label", r.label.as_ref().map(|v| v.span())),
    ];
    let image_keys = [
        ("name", r.name.as_ref().map(|v| v.span())),
        ("fs", r.fs.as_ref().map(|v| v.span())),
    ];
    match kind {
        "fresh" => {
            for (k, sp) in aged_keys.iter().chain(image_keys.iter()) {
                if let Some(sp) = sp {
                    return Err(not_for(k, sp.clone()));
                }
            }
            Ok((StateSpec::Fresh, None))
        }
        "aged" => {
            for (k, sp) in &image_keys {
                if let Some(sp) = sp {
                    return Err(not_for(k, sp.clone()));
                }
            }
            let Some(p) = &r.profile else {
                return Err(cx.at(
                    s.span(),
                    "an aged state needs `profile` (a built-in name or a profile file)",
                ));
            };
            let pname = p.get_ref().trim();
            let (profile, file) = if fsage_profile::builtin(pname).is_some() {
                (pname.to_string(), None)
            } else {
                let path = cx.dir.join(pname);
                let unreadable = |e: &dyn std::fmt::Display| {
                    cx.at(
                        p.span(),
                        format!(
                            "profile {pname:?} is neither built in ({}) nor a readable profile \
                             file: {e}",
                            fsage_profile::builtin_names().join(", ")
                        ),
                    )
                };
                let text = std::fs::read_to_string(&path).map_err(|e| unreadable(&e))?;
                fsage_profile::parse(&text, &path.display().to_string())
                    .map_err(|e| unreadable(&e))?;
                let path = std::fs::canonicalize(&path).unwrap_or(path);
                (
                    path.display().to_string(),
                    Some(ProfileFile {
                        written: pname.to_string(),
                        text,
                    }),
                )
            };
            let label = match &r.label {
                Some(l) => label_ok(cx, l, "label")?,
                None => Path::new(pname)
                    .file_stem()
                    .map_or(pname.to_string(), |s| s.to_string_lossy().into_owned()),
            };
            let fullness = match &r.fullness {
                Some(f) if !(*f.get_ref() > 0.0 && *f.get_ref() < 1.0) => {
                    return Err(cx.at(f.span(), "`fullness` must be above 0 and below 1"))
                }
                f => f.as_ref().map(|f| *f.get_ref()),
            };
            let seed = match &r.seed {
                Some(v) if *v.get_ref() < 0 => {
                    return Err(cx.at(v.span(), "`seed` must be 0 or more"))
                }
                v => v.as_ref().map(|v| *v.get_ref() as u64),
            };
            let max_ops = match &r.max_ops {
                Some(v) if *v.get_ref() < 1 => {
                    return Err(cx.at(v.span(), "`max_ops` must be 1 or more"))
                }
                v => v.as_ref().map(|v| *v.get_ref() as u64),
            };
            let max_time_s = match &r.max_time {
                Some(v) => Some(duration(cx, v, "max_time")?),
                None => None,
            };
            Ok((
                StateSpec::Aged {
                    profile,
                    label,
                    fullness,
                    seed,
                    max_ops,
                    max_time_s,
                },
                file,
            ))
        }
        "image" => {
            for (k, sp) in &aged_keys {
                if let Some(sp) = sp {
                    return Err(not_for(k, sp.clone()));
                }
            }
            let Some(n) = &r.name else {
                return Err(cx.at(s.span(), "an image state needs `name` (a library image)"));
            };
            let Some(f) = &r.fs else {
                return Err(cx.at(
                    s.span(),
                    "an image state needs `fs`: the label of the [[fs]] it is an image of",
                ));
            };
            if !fs_labels.contains(f.get_ref()) {
                return Err(cx.at(
                    f.span(),
                    format!(
                        "`fs` = {:?}: no [[fs]] has this label (labels: {})",
                        f.get_ref(),
                        fs_labels.iter().cloned().collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
            Ok((
                StateSpec::Image {
                    name: label_ok(cx, n, "name")?,
                    fs: f.get_ref().clone(),
                },
                None,
            ))
        }
        other => Err(cx.at(
            r.kind.span(),
            format!("unknown state kind {other:?} (fresh, aged or image)"),
        )),
    }
}

//! `[devices]`: latencies and device models, the drives they stand for, and where each cell's image
//! reaches its drive (placement, copy, the drive's state before it).

use super::*;

/// The devices: latencies (`"none"`, `"100us"`, ranges) and device models (a string that does
/// not start with a digit: a built-in model's name or a model file, relative to the experiment's
/// directory), each model checked to build for a device of `image_size`.
pub(super) fn devices(
    cx: &Ctx,
    d: &Spanned<RawDevices>,
    image_size: u64,
) -> Result<(Vec<Option<u64>>, Vec<fsage_device::ModelSpec>), Error> {
    let r = d.get_ref();
    let mut set: BTreeSet<Option<u64>> = BTreeSet::new();
    let mut models: Vec<fsage_device::ModelSpec> = Vec::new();
    for v in &r.latencies {
        match v.get_ref() {
            toml::Value::String(s) if s.trim() == "none" => {
                set.insert(None);
            }
            toml::Value::String(s)
                if !s.trim().is_empty() && !s.trim().starts_with(|c: char| c.is_ascii_digit()) =>
            {
                let t = s.trim();
                let in_dir = cx.dir.join(t);
                let text = if Path::new(t).is_relative() && in_dir.exists() {
                    in_dir.to_string_lossy().into_owned()
                } else {
                    t.to_string()
                };
                let m = fsage_device::resolve(&text).map_err(|e| cx.at(v.span(), e.message))?;
                m.build(image_size).map_err(|e| {
                    cx.at(
                        v.span(),
                        format!("{}: {} (image_size {image_size} bytes)", m.name, e.message),
                    )
                })?;
                if models.iter().any(|o| o.name == m.name) {
                    return Err(cx.at(v.span(), format!("device model {:?} given twice", m.name)));
                }
                models.push(m);
            }
            _ => {
                set.insert(Some(latency(cx, v, "latencies")?));
            }
        }
    }
    for rg in &r.ranges {
        let g = rg.get_ref();
        let (from, to, step) = (
            latency(cx, &g.from, "from")?,
            latency(cx, &g.to, "to")?,
            latency(cx, &g.step, "step")?,
        );
        if step == 0 {
            return Err(cx.at(g.step.span(), "`step` must be above 0"));
        }
        if to < from {
            return Err(cx.at(g.to.span(), "`to` is below `from`"));
        }
        let n = (to - from) / step + 1;
        if n > 1000 {
            return Err(cx.at(
                rg.span(),
                format!("this range has {n} latencies; at most 1000"),
            ));
        }
        for i in 0..n {
            set.insert(Some(from + step * i));
        }
    }
    if set.is_empty() && models.is_empty() {
        return Err(cx.at(
            d.span(),
            "[devices] lists no latency: give `latencies` (e.g. [\"none\", \"100us\"]) or \
             `ranges`, or leave [devices] out for plain images",
        ));
    }
    Ok((set.into_iter().collect(), models))
}

/// `[devices] drives`: `"own"`, `"erased"`, `"aged.LABEL"` (an aged state of this file), each
/// once, for an experiment with a model that keeps state (an SSD).
pub(super) fn drives(
    cx: &Ctx,
    list: &Spanned<Vec<Spanned<String>>>,
    models: &[fsage_device::ModelSpec],
    states: &[StateSpec],
    profile_files: &BTreeMap<String, ProfileFile>,
) -> Result<Vec<Option<DriveSpec>>, Error> {
    if !models.iter().any(|m| m.keeps_state()) {
        return Err(cx.at(
            list.span(),
            "`drives` needs a device model that keeps a drive state (an SSD, e.g. \"ssd-sata\") \
             in `latencies`",
        ));
    }
    if list.get_ref().is_empty() {
        return Err(cx.at(
            list.span(),
            "`drives` is empty: give [\"own\"] or leave it out",
        ));
    }
    let mut out: Vec<Option<DriveSpec>> = Vec::new();
    for d in list.get_ref() {
        let t = d.get_ref().trim();
        let drive = match t {
            "own" => None,
            "erased" => Some(DriveSpec::Erased),
            _ => {
                let known = states
                    .iter()
                    .find(|s| matches!(s, StateSpec::Aged { .. }) && s.id_part() == t);
                let Some(st) = known else {
                    let aged: Vec<String> = states
                        .iter()
                        .filter(|s| matches!(s, StateSpec::Aged { .. }))
                        .map(|s| format!("\"{}\"", s.id_part()))
                        .collect();
                    return Err(cx.at(
                        d.span(),
                        format!(
                            "drive {t:?}: not \"own\", \"erased\" or an aged state of this \
                             experiment ({})",
                            if aged.is_empty() {
                                "it has none".to_string()
                            } else {
                                aged.join(", ")
                            }
                        ),
                    ));
                };
                let profile_file = match st {
                    StateSpec::Aged { label, .. } => profile_files.get(label).cloned(),
                    _ => None,
                };
                Some(DriveSpec::Of {
                    state: st.clone(),
                    profile_file,
                })
            }
        };
        if out.contains(&drive) {
            return Err(cx.at(d.span(), format!("drive {t:?} given twice")));
        }
        out.push(drive);
    }
    Ok(out)
}

/// One name or a list of names (`copy = "whole"`, `copy = ["sparse", "whole"]`), each once, each
/// one of `names`.
pub(super) fn names_list<T: Copy + PartialEq>(
    cx: &Ctx,
    v: &Spanned<toml::Value>,
    key: &str,
    names: &[(&str, T)],
) -> Result<Vec<T>, Error> {
    let one_of = || {
        names
            .iter()
            .map(|(n, _)| format!("\"{n}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let items: Vec<&toml::Value> = match v.get_ref() {
        toml::Value::Array(a) if a.is_empty() => {
            return Err(cx.at(
                v.span(),
                format!("`{key}` is empty: give one of {}", one_of()),
            ))
        }
        toml::Value::Array(a) => a.iter().collect(),
        other => vec![other],
    };
    let mut out = Vec::new();
    for it in items {
        let Some(t) = it.as_str() else {
            return Err(cx.at(
                v.span(),
                format!("`{key}`: {it} is not a name: give one of {}", one_of()),
            ));
        };
        let Some(&(_, x)) = names.iter().find(|(n, _)| *n == t.trim()) else {
            return Err(cx.at(
                v.span(),
                format!("`{key}`: {t:?} is not one of {}", one_of()),
            ));
        };
        if out.contains(&x) {
            return Err(cx.at(v.span(), format!("`{key}`: {t:?} given twice")));
        }
        out.push(x);
    }
    Ok(out)
}

/// `[devices] age_on`, `copy` and `drive`: where aged states are aged, and how each cell's image
/// reaches a drive that keeps state (the copies crossed with the drives' states before them).
pub(super) fn placements(
    cx: &Ctx,
    d: &RawDevices,
    models: &[fsage_device::ModelSpec],
) -> Result<(AgeOn, Vec<Placement>), Error> {
    let stateful = models.iter().any(|m| m.keeps_state());
    let need_model = |span: Range<usize>, key: &str| {
        cx.at(
            span,
            format!(
                "`{key}` needs a device model that keeps a drive state (an SSD, e.g. \
                 \"ssd-sata\") in `latencies`"
            ),
        )
    };
    let age_on = match &d.age_on {
        None => AgeOn::Drive,
        Some(a) => {
            if !stateful {
                return Err(need_model(a.span(), "age_on"));
            }
            match a.get_ref().trim() {
                "drive" => AgeOn::Drive,
                "memory" => AgeOn::Memory,
                t => {
                    return Err(cx.at(
                        a.span(),
                        format!("`age_on`: {t:?} is not \"drive\" or \"memory\""),
                    ))
                }
            }
        }
    };
    let copies = match &d.copy {
        None => Vec::new(),
        Some(c) => {
            if !stateful {
                return Err(need_model(c.span(), "copy"));
            }
            if let Some(dr) = &d.drives {
                return Err(cx.at(
                    dr.span(),
                    "`drives` and `copy` cannot be given together: with `copy` the image is \
                     copied onto a drive in the state `drive` names, not run on the drive its \
                     aging left",
                ));
            }
            names_list(
                cx,
                c,
                "copy",
                &[
                    ("sparse", CopyMethod::Sparse),
                    ("data", CopyMethod::Data),
                    ("whole", CopyMethod::Whole),
                ],
            )?
        }
    };
    let befores = match &d.drive {
        None => vec![DriveBefore::Erased],
        Some(v) => {
            if d.copy.is_none() {
                return Err(cx.at(
                    v.span(),
                    "`drive` is the drive's state before the copy: give `copy` too (\"sparse\", \
                     \"data\" or \"whole\")",
                ));
            }
            names_list(
                cx,
                v,
                "drive",
                &[
                    ("erased", DriveBefore::Erased),
                    ("preconditioned", DriveBefore::Preconditioned),
                    ("previous", DriveBefore::Previous),
                ],
            )?
        }
    };
    if age_on == AgeOn::Memory && copies.is_empty() {
        let span = d.age_on.as_ref().map_or(0..0, |a| a.span());
        return Err(cx.at(
            span,
            "`age_on = \"memory\"` leaves the drive out of aging: give `copy` (\"sparse\", \
             \"data\" or \"whole\"), how the image then reaches the drive",
        ));
    }
    let mut out = Vec::new();
    for &copy in &copies {
        for &drive in &befores {
            out.push(Placement { copy, drive });
        }
    }
    Ok((age_on, out))
}

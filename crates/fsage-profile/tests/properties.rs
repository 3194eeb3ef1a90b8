//! Properties: the parser never panics, and every valid profile survives `to_toml` then `parse`.

use fsage_profile::{
    builtin, builtin_names, parse, render_tables, to_toml, AgeBin, DepthBin, Fullness, Profile,
    SizeBin, MAX_INT,
};
use proptest::prelude::*;

/// Weights as they occur: counts, fractions, zeros and the occasional extreme.
fn weight() -> impl Strategy<Value = f64> {
    prop_oneof![
        (0u32..1_000_000).prop_map(f64::from),
        0.0..1.0,
        Just(0.0),
        (prop::num::f64::POSITIVE | prop::num::f64::NORMAL).prop_filter("not huge", |w| *w < 1e300),
    ]
}

/// Sorts by key, drops duplicate keys, and makes sure some weight is positive.
fn tidy<B>(
    mut bins: Vec<B>,
    key: impl Fn(&B) -> f64,
    weight: impl Fn(&mut B) -> &mut f64,
) -> Vec<B> {
    bins.sort_by(|a, b| key(a).total_cmp(&key(b)));
    bins.dedup_by(|a, b| key(a) == key(b));
    if bins.iter_mut().all(|b| *weight(b) == 0.0) {
        *weight(&mut bins[0]) = 1.0;
    }
    bins
}

fn valid_profile() -> impl Strategy<Value = Profile> {
    let edge = prop_oneof![0u64..100_000, 0..=MAX_INT];
    let sizes = prop::collection::vec((edge, weight()), 1..30).prop_map(|rows| {
        let bins = rows
            .into_iter()
            .map(|(max_bytes, weight)| SizeBin { max_bytes, weight });
        tidy(bins.collect(), |b| b.max_bytes as f64, |b| &mut b.weight)
    });
    let depths = prop::collection::vec(
        (
            0..=fsage_profile::MAX_DEPTH,
            weight(),
            prop_oneof![0u64..100, 0..=fsage_profile::MAX_DIRS / 32],
        ),
        1..30,
    )
    .prop_map(|rows| {
        let bins = rows.into_iter().map(|(depth, weight, subdirs)| DepthBin {
            depth,
            weight,
            subdirs,
        });
        tidy(bins.collect(), |b| f64::from(b.depth), |b| &mut b.weight)
    });
    let age = prop_oneof![
        (1u32..100_000).prop_map(f64::from),
        prop::num::f64::POSITIVE | prop::num::f64::NORMAL | prop::num::f64::SUBNORMAL,
    ];
    let ages = prop::collection::vec((age, weight()), 1..30).prop_map(|rows| {
        let bins = rows.into_iter().map(|(age, weight)| AgeBin { age, weight });
        tidy(bins.collect(), |b| b.age, |b| &mut b.weight)
    });
    let name = any::<String>().prop_filter("a name", |s| !s.trim().is_empty());
    let fullness = prop_oneof![Just(1.0), 1e-9..=1.0f64].prop_map(|u| Fullness::new(u).unwrap());
    (
        name,
        any::<String>(),
        any::<String>(),
        fullness,
        sizes,
        depths,
        ages,
    )
        .prop_map(
            |(name, description, source, fullness, sizes, depths, ages)| Profile {
                name,
                description,
                source,
                fullness,
                sizes,
                depths,
                ages,
            },
        )
}

/// Any profile the model can hold, valid or not.
fn any_profile() -> impl Strategy<Value = Profile> {
    let number = prop_oneof![any::<f64>(), -2.0..3.0, Just(0.0)];
    let sizes = prop::collection::vec((any::<u64>(), number.clone()), 0..4).prop_map(|v| {
        v.into_iter()
            .map(|(max_bytes, weight)| SizeBin { max_bytes, weight })
            .collect()
    });
    let depths =
        prop::collection::vec((0u32..4, number.clone(), any::<u64>()), 0..4).prop_map(|v| {
            v.into_iter()
                .map(|(depth, weight, subdirs)| DepthBin {
                    depth,
                    weight,
                    subdirs,
                })
                .collect()
        });
    let ages = prop::collection::vec((number.clone(), number), 0..4).prop_map(|v| {
        v.into_iter()
            .map(|(age, weight)| AgeBin { age, weight })
            .collect()
    });
    (".{0,3}", 0.01..=1.0f64, sizes, depths, ages).prop_map(|(name, u, sizes, depths, ages)| {
        Profile {
            name,
            description: String::new(),
            source: String::new(),
            fullness: Fullness::new(u).unwrap(),
            sizes,
            depths,
            ages,
        }
    })
}

/// Fragments that stress a TOML parser and our checks.
const FRAGMENTS: &[&str] = &[
    "[",
    "]",
    "[[",
    "]]",
    "=",
    "\"",
    "'",
    "'''",
    "\"\"\"",
    ",",
    ".",
    "{",
    "}",
    "\n",
    "#",
    "-",
    "-1",
    "nan",
    "inf",
    "-inf",
    "1e400",
    "99999999999999999999",
    "0x10",
    "1.5",
    "true",
    "name",
    "bins",
    "[size]",
    "[age]",
    "[depth]",
    "unit",
    "=[]",
    "\u{0}",
    "\u{e9}",
    "\u{1F600}",
    "\r\n",
    "\\",
];

#[derive(Debug, Clone)]
enum Mutation {
    Delete { at: usize, len: usize },
    Insert { at: usize, text: String },
    Replace { at: usize, with: char },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let text = prop_oneof![
        prop::sample::select(FRAGMENTS).prop_map(str::to_owned),
        ".{0,4}"
    ];
    prop_oneof![
        (any::<usize>(), 1usize..20).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<usize>(), text).prop_map(|(at, text)| Mutation::Insert { at, text }),
        (any::<usize>(), any::<char>()).prop_map(|(at, with)| Mutation::Replace { at, with }),
    ]
}

fn mutate(text: &str, mutations: &[Mutation]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for m in mutations {
        let n = chars.len() + 1;
        match m {
            Mutation::Delete { at, len } => {
                let start = at % n;
                let end = (start + len).min(chars.len());
                chars.drain(start.min(end)..end);
            }
            Mutation::Insert { at, text } => {
                let at = at % n;
                chars.splice(at..at, text.chars());
            }
            Mutation::Replace { at, with } => {
                if !chars.is_empty() {
                    let at = at % chars.len();
                    chars[at] = *with;
                }
            }
        }
    }
    chars.into_iter().collect()
}

/// The error, if any, points inside the text.
fn assert_sane(text: &str, result: Result<Profile, fsage_profile::ProfileError>) {
    if let Err(e) = result {
        assert_eq!(e.file, "m.toml");
        if let Some(line) = e.line {
            assert!(
                line >= 1 && line <= text.split('\n').count(),
                "{e} for {text:?}"
            );
        }
        assert!(!e.message.is_empty());
    }
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        assert_sane(&text, parse(&text, "m.toml"));
    }

    #[test]
    fn arbitrary_toml_like_text_never_panics(text in "[\\[\\]a-z0-9=\", .\n#-]{0,200}") {
        assert_sane(&text, parse(&text, "m.toml"));
    }

    #[test]
    fn mutated_profiles_never_panic(
        index in 0usize..8,
        mutations in prop::collection::vec(mutation(), 1..6),
    ) {
        let original = to_toml(&builtin(builtin_names()[index]).unwrap());
        let text = mutate(&original, &mutations);
        assert_sane(&text, parse(&text, "m.toml"));
    }

    #[test]
    fn valid_profiles_round_trip(p in valid_profile()) {
        prop_assert_eq!(p.validate(), Ok(()));
        let text = to_toml(&p);
        prop_assert_eq!(parse(&text, "p.toml"), Ok(p.clone()));
        // Rendering never panics either.
        prop_assert!(render_tables(&p).contains("File sizes"));
    }

    #[test]
    fn validate_agrees_with_the_parser(p in any_profile()) {
        let parsed = parse(&to_toml(&p), "p.toml");
        match p.validate() {
            Ok(()) => prop_assert_eq!(parsed, Ok(p)),
            Err(message) => prop_assert!(parsed.is_err(), "{} but it parsed", message),
        }
    }
}

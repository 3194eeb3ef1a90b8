//! The human summary of `fsage profile extract` (the profile itself is TOML, from
//! `fsage-profile`): what the walk saw, where ages came from, what was left out or merged.

use fsage_measure::ExtractStats;
use std::fmt::Write as _;

pub fn render(st: &ExtractStats) -> String {
    let mut o = String::new();
    let w = &st.walk;
    let _ = writeln!(
        o,
        "{} files, {} directories in {:.2} s ({:.0} files/s); skipped {} symlinks, {} specials, \
         {} extra hard links, {} other file systems, {} unreadable",
        w.files,
        w.dirs,
        st.seconds,
        w.files as f64 / st.seconds.max(1e-9),
        w.symlinks,
        w.specials,
        w.hardlink_dups,
        w.other_fs,
        w.unreadable,
    );
    let _ = writeln!(o, "ages from {}", st.age_source);
    if st.before_1980 + st.future > 0 {
        let _ = writeln!(
            o,
            "warning: left out of the age histogram: {} files with a timestamp before 1980 and {} \
             with one in the future (placeholders, not ages)",
            st.before_1980, st.future
        );
    }
    if let Some(m) = &st.merged {
        let _ = writeln!(
            o,
            "merged the {} youngest age bins ({:.2}% of the files) into the bin of ages up to {} \
             s: T goes from {:.0} K to {:.0} K (budget {} K)",
            m.bins,
            100.0 * m.share,
            m.into_age,
            m.factor_before,
            m.factor_after,
            m.budget
        );
    }
    for e in &w.errors {
        let _ = writeln!(o, "skipped: {e}");
    }
    o
}

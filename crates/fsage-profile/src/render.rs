//! Plain-text summary of a profile, for `fsage profile show`.

use std::fmt::Write as _;

use crate::check::number;
use crate::model::Profile;
use crate::units::{human_bytes, percent};

/// Name, description, source, default fullness and the three histograms as aligned tables.
pub fn render_tables(p: &Profile) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Profile {}", p.name);
    let dash = |s: &str| {
        if s.is_empty() {
            "-".to_owned()
        } else {
            s.to_owned()
        }
    };
    let _ = writeln!(out, "  description: {}", dash(&p.description));
    let _ = writeln!(out, "  source:      {}", dash(&p.source));
    let _ = writeln!(
        out,
        "  fullness:    {} (default)",
        percent(p.fullness.get() * 100.0)
    );

    let fractions = p.size_fractions();
    let mut previous = None;
    let rows = p.sizes.iter().zip(&fractions).map(|(b, f)| {
        let range = match previous.replace(b.max_bytes) {
            None if b.max_bytes == 0 => "0 B".to_owned(),
            None => format!("0 B - {}", human_bytes(b.max_bytes)),
            Some(low) => format!("{} - {}", human_bytes(low), human_bytes(b.max_bytes)),
        };
        vec![range, weight(b.weight), share(f * 100.0)]
    });
    let _ = write!(
        out,
        "\nFile sizes ({} bins; each holds the files above its lower edge, up to its upper edge)\n{}",
        p.sizes.len(),
        table(&["size", "weight", "files"], true, rows.collect())
    );

    let fractions = p.depth_fractions();
    let rows = p.depths.iter().zip(&fractions).map(|(b, f)| {
        vec![
            b.depth.to_string(),
            weight(b.weight),
            share(f * 100.0),
            b.subdirs.to_string(),
        ]
    });
    let _ = write!(
        out,
        "\nDirectory depths ({} bins; subdirs = directories at that depth)\n{}",
        p.depths.len(),
        table(
            &["depth", "weight", "files", "subdirs"],
            false,
            rows.collect()
        )
    );

    let fractions = p.age_fractions();
    let edges = p.age_edges();
    let rows = p
        .ages
        .iter()
        .zip(&edges)
        .zip(&fractions)
        .map(|((b, e), f)| {
            vec![
                number(b.age),
                percent(e * 100.0),
                weight(b.weight),
                share(f * 100.0),
            ]
        });
    let _ = write!(
        out,
        "\nAges ({} bins; relative = age / oldest age, the upper edge of the bin)\n{}",
        p.ages.len(),
        table(
            &["age", "relative", "weight", "files"],
            false,
            rows.collect()
        )
    );
    out
}

/// A weight as written, in scientific notation when very large or very small.
fn weight(w: f64) -> String {
    if w != 0.0 && !(1e-4..1e15).contains(&w.abs()) {
        format!("{w:e}")
    } else {
        number(w)
    }
}

/// A share of the files, with a fixed two decimals so that columns line up.
fn share(p: f64) -> String {
    if p > 0.0 && p < 0.005 {
        "<0.01%".to_owned()
    } else {
        format!("{p:.2}%")
    }
}

/// Rows under a header, right-aligned except for a textual first column.
fn table(header: &[&str], text_first: bool, rows: Vec<Vec<String>>) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header = header.iter().map(|h| h.to_string()).collect();
    for row in std::iter::once(header).chain(rows) {
        let mut line = String::from(" ");
        for (i, (cell, &w)) in row.iter().zip(&widths).enumerate() {
            if i == 0 && text_first {
                let _ = write!(line, " {cell:<w$}");
            } else if i == 0 {
                let _ = write!(line, " {cell:>w$}");
            } else {
                let _ = write!(line, "  {cell:>w$}");
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_keep_small_values_readable() {
        assert_eq!(share(55.2149), "55.21%");
        assert_eq!(share(0.001), "<0.01%");
        assert_eq!(share(0.0), "0.00%");
    }

    #[test]
    fn tables_align() {
        let t = table(&["a", "bb"], true, vec![vec!["xyz".into(), "1".into()]]);
        assert_eq!(t, "  a    bb\n  xyz   1\n");
    }
}

#[cfg(test)]
mod render_tests {
    #[test]
    fn show_dabre() {
        let text = super::render_tables(&crate::builtin("dabre").unwrap());
        println!("{text}");
        assert!(text.contains("Profile dabre"));
        assert!(text.contains("80.0% (default)"), "{text}");
        assert!(text.contains("0 B - 1 KiB"));
        assert!(text.contains("1 KiB - 2 KiB"));
    }
}

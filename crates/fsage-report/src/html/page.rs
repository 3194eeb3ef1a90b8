//! The page around the sections: head, CSS, the check script, the navigation bar and the table of
//! inputs, and the HTML pieces every section builds with (tables, figures, escaping).

use super::{plots, Section};
use crate::inputs::ReportSet;
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// `s` as HTML text or attribute value.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const CSS: &str = r#"
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1400px; color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: .2em; }
h2 { border-bottom: 2px solid #0072b2; padding-bottom: .2em; margin-top: 2em; }
h3 { margin: 1.4em 0 .4em; }
nav a { margin-right: 1em; }
.how { background: #f4f7fa; border-left: 4px solid #0072b2; padding: .5em 1em; font-size: .92em; margin: .6em 0 1em; }
.fig { display: flex; flex-wrap: wrap; gap: 1.2em; align-items: flex-start; margin-bottom: 1em; }
.fig svg { flex: none; border: 1px solid #ddd; max-width: 100%; height: auto; }
table { border-collapse: collapse; font-size: .85em; }
th, td { border: 1px solid #ccc; padding: .2em .5em; text-align: right; white-space: nowrap; }
th { background: #eef2f5; white-space: normal; max-width: 9em; vertical-align: bottom; }
td.l, th.l { text-align: left; }
.flag { color: #b00; font-weight: bold; }
.verdict { font-size: 1.05em; font-weight: 600; margin: .4em 0; }
.note { color: #555; font-size: .9em; }
.tablewrap { max-height: 460px; overflow: auto; }
"#;

/// Run by the page itself (and read back by the headless-Chromium test): every section but the
/// table-only ones (inversions, cells) must hold an `<svg>` with a size and drawn marks (more than
/// a background), no section may carry a "(no plot: ...)" note, and the table-only ones need a
/// table or a verdict line. Each section gets `data-rendered` and, when not, `data-why`.
const CHECK_SCRIPT: &str = r#"
(function () {
  var TABLE_ONLY = ['inversions', 'cells'];
  var secs = document.querySelectorAll('section.fsage');
  var ok = 0, bad = [];
  secs.forEach(function (s) {
    var why = [];
    var svgs = s.querySelectorAll('svg');
    if (TABLE_ONLY.indexOf(s.getAttribute('data-kind')) >= 0) {
      if (s.querySelector('table') === null && s.querySelector('.verdict') === null) why.push('no table');
    } else if (svgs.length === 0) {
      why.push('no plot');
    }
    svgs.forEach(function (v) {
      var b = v.getBBox();
      var marks = v.querySelectorAll('path, line, polyline, polygon, circle, ellipse, rect').length;
      if (!(b.width > 0 && b.height > 0) || marks < 2) why.push('an empty plot');
    });
    s.querySelectorAll('.note').forEach(function (n) {
      if (n.textContent.indexOf('(no plot') === 0) why.push(n.textContent);
    });
    s.setAttribute('data-rendered', why.length ? 'no' : 'yes');
    if (why.length) { s.setAttribute('data-why', why.join('; ')); bad.push(s.id + ' (' + why.join('; ') + ')'); } else ok++;
  });
  document.body.setAttribute('data-sections', String(secs.length));
  document.body.setAttribute('data-sections-ok', String(ok));
  if (bad.length) console.error('fsage report: sections that did not render: ' + bad.join(', '));
})();
"#;

/// The page being built: the sections' HTML in page order and the navigation bar's entries.
#[derive(Default)]
pub(super) struct Page {
    pub(super) body: String,
    nav: Vec<(String, String)>,
    n: usize,
}

impl Page {
    /// Appends a section of `kind` (its `data-kind`, which the page's own check reads) with its
    /// "how this was made" note.
    pub(super) fn section(&mut self, kind: Section, title: &str, how: &str, content: &str) {
        self.n += 1;
        let kind = kind.name();
        let id = format!("{kind}-{}", self.n);
        self.nav.push((id.clone(), title.to_string()));
        let _ = write!(
            self.body,
            "<section class=\"fsage\" id=\"{id}\" data-kind=\"{kind}\">\n<h2>{}</h2>\n\
             <div class=\"how\"><b>How this was made.</b> {how}</div>\n{content}</section>\n",
            esc(title)
        );
    }
}

pub(super) fn plot_or_note(r: Result<String, plots::PlotError>) -> String {
    match r {
        Ok(svg) => svg,
        Err(e) => format!("<p class=\"note\">(no plot: {})</p>", esc(&e.0)),
    }
}

/// A table: header cells, then rows; a cell starting with `<` is raw HTML, else escaped. The first
/// column and words are left-aligned, numbers right.
/// A table, or when it would have no rows, a note that says why (`why_empty`).
pub(super) fn table_or(head: &[&str], rows: &[Vec<String>], why_empty: &str) -> String {
    if rows.is_empty() {
        format!("<p class=\"note\">{}</p>", esc(why_empty))
    } else {
        table(head, rows)
    }
}

pub(super) fn table(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut t = String::from("<div class=\"tablewrap\"><table><thead><tr>");
    for (i, h) in head.iter().enumerate() {
        let _ = write!(
            t,
            "<th{}>{}</th>",
            if i == 0 { " class=\"l\"" } else { "" },
            esc(h)
        );
    }
    t.push_str("</tr></thead><tbody>\n");
    for r in rows {
        t.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            let cell = if c.starts_with('<') {
                c.clone()
            } else {
                esc(c)
            };
            // Numbers right, words left.
            let numeric = c
                .chars()
                .next()
                .is_some_and(|ch| ch.is_ascii_digit() || "+-–.".contains(ch));
            let _ = write!(
                t,
                "<td{}>{cell}</td>",
                if i == 0 || !numeric {
                    " class=\"l\""
                } else {
                    ""
                }
            );
        }
        t.push_str("</tr>\n");
    }
    t.push_str("</tbody></table></div>");
    t
}

pub(super) fn fig(parts: &[String]) -> String {
    format!("<div class=\"fig\">{}</div>\n", parts.concat())
}

/// The whole document: head, navigation, the inputs (and what was skipped), then the sections.
pub(super) fn document(p: Page, set: &ReportSet) -> String {
    let mut inputs = Vec::new();
    for r in &set.reproductions {
        inputs.push(vec![
            r.name.clone(),
            "reproduction".into(),
            r.path.display().to_string(),
        ]);
    }
    for r in &set.runs {
        inputs.push(vec![
            r.name.clone(),
            "aging run".into(),
            r.path.display().to_string(),
        ]);
    }
    for r in &set.git {
        inputs.push(vec![
            r.name.clone(),
            "Git-aging series".into(),
            r.path.display().to_string(),
        ]);
    }
    for r in &set.frags {
        inputs.push(vec![
            r.name.clone(),
            "frag report".into(),
            r.path.display().to_string(),
        ]);
    }
    for r in &set.against {
        inputs.push(vec![
            r.name.clone(),
            "against fresh".into(),
            r.path.display().to_string(),
        ]);
    }
    for r in &set.bench {
        inputs.push(vec![
            r.name.clone(),
            "bench run".into(),
            r.path.display().to_string(),
        ]);
    }
    if !set.cells.is_empty() {
        inputs.push(vec![
            format!("{} cells", set.cells.len()),
            "cell results".into(),
            set.cells
                .iter()
                .filter_map(|c| c.path.parent())
                .map(|d| d.display().to_string())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect::<Vec<_>>()
                .join(", "),
        ]);
    }
    for a in set
        .analyses
        .iter()
        .filter(|a| !a.path.as_os_str().is_empty())
    {
        inputs.push(vec![
            a.name.clone(),
            "analysis".into(),
            a.path.display().to_string(),
        ]);
    }
    let mut head = String::new();
    let _ = write!(
        head,
        "<h1>fsage report</h1>\n<p class=\"note\">Made by fsage {} from {} input(s). Every plot is \
         inline SVG: this file needs nothing else.</p>\n<nav>",
        env!("CARGO_PKG_VERSION"),
        inputs.len()
    );
    for (id, t) in &p.nav {
        let _ = write!(head, "<a href=\"#{id}\">{}</a>", esc(t));
    }
    head.push_str("</nav>\n<details><summary>Inputs</summary>");
    head.push_str(&table(&["name", "kind", "path"], &inputs));
    if !set.skipped.is_empty() {
        let rows: Vec<Vec<String>> = set
            .skipped
            .iter()
            .map(|(p, why)| vec![p.display().to_string(), why.clone()])
            .collect();
        head.push_str("<p>Skipped:</p>");
        head.push_str(&table(&["file", "why"], &rows));
    }
    head.push_str("</details>\n");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>fsage \
         report</title>\n<style>{CSS}</style>\n</head>\n<body>\n{head}{}<script>{CHECK_SCRIPT}</script>\n</body>\n</html>\n",
        p.body
    )
}

//! The report's charts, drawn with plotters' SVG backend into strings: grouped bars (with
//! intervals, optional log scale) and line charts (with intervals, dashed model lines and marked
//! points). Errors come back as text for the page, never as a panic.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// A colour-blind-safe palette (Okabe and Ito). Grey is not in it: grey is the published
/// numbers' ([`PUBLISHED`]).
pub const COLORS: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(213, 94, 0),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(240, 228, 66),
];

/// The published numbers' colour: grey bars and markers beside fsage's.
pub const PUBLISHED: RGBColor = RGBColor(150, 150, 150);

/// The file systems' colours, the same in every plot of every report: ext4 blue, xfs orange,
/// btrfs green, f2fs vermillion, nilfs2 purple.
pub const FS_COLORS: [(&str, RGBColor); 5] = [
    ("ext4", COLORS[0]),
    ("xfs", COLORS[1]),
    ("btrfs", COLORS[2]),
    ("f2fs", COLORS[3]),
    ("nilfs2", COLORS[4]),
];

/// The `i`th colour of the palette (for series that are no file system).
pub fn color(i: usize) -> RGBColor {
    COLORS[i % COLORS.len()]
}

/// The colour of the file system `name` names: its first word that is a file system kind
/// (`ext4`, `nginx-btrfs aged`, `ext4-nojournal`), if any.
pub fn fs_color(name: &str) -> Option<RGBColor> {
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .find_map(|w| FS_COLORS.iter().find(|(k, _)| *k == w).map(|(_, c)| *c))
}

/// The file system's colour when `name` names one, else the palette's `i`th.
pub fn series_color(name: &str, i: usize) -> RGBColor {
    fs_color(name).unwrap_or_else(|| color(i))
}

/// Colours for series named `names`, told apart: each file system's own colour when every name
/// has one and no two share it (series that are file systems), else the palette by position
/// (series that are, say, three reports of one file system, drawn without dashes to tell them
/// apart).
pub fn series_colors(names: &[&str]) -> Vec<RGBColor> {
    let fs: Vec<Option<RGBColor>> = names.iter().map(|n| fs_color(n)).collect();
    let distinct = fs
        .iter()
        .enumerate()
        .all(|(i, c)| c.is_some_and(|c| fs[..i].iter().all(|o| *o != Some(c))));
    if distinct {
        fs.into_iter().flatten().collect()
    } else {
        (0..names.len()).map(color).collect()
    }
}

/// `c` half-way to white: the same series' second measure (a clean instance beside the aged).
pub fn light(c: RGBColor) -> RGBColor {
    let m = |v: u8| ((v as u16 + 255) / 2) as u8;
    RGBColor(m(c.0), m(c.1), m(c.2))
}

/// How a line is drawn: one style per instance or device model; `Markers` draws its points with
/// a marker each, joined by a thin dotted line in x order (published points).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dash {
    Solid,
    Dashed,
    Dotted,
    DashDot,
    LongDash,
    DashDotDot,
    Markers,
}

impl Dash {
    /// The `i`th style for lines of one colour (instances or models): solid, dashed, dotted,
    /// dash-dot, long dash, dash-dot-dot, then again (six runs of one file system stay apart).
    pub fn nth(i: usize) -> Dash {
        [
            Dash::Solid,
            Dash::Dashed,
            Dash::Dotted,
            Dash::DashDot,
            Dash::LongDash,
            Dash::DashDotDot,
        ][i % 6]
    }
    /// Alternating dash and gap lengths in pixels; `None` for a solid line.
    fn pattern(self) -> Option<&'static [u32]> {
        match self {
            Dash::Solid => None,
            Dash::Dashed => Some(&[7, 4]),
            Dash::Dotted => Some(&[2, 3]),
            Dash::DashDot => Some(&[9, 3, 2, 3]),
            Dash::LongDash => Some(&[16, 5]),
            Dash::DashDotDot => Some(&[9, 3, 2, 3, 2, 3]),
            Dash::Markers => Some(&[1, 3]),
        }
    }
}

/// A point's marker shape: one per published series, and the same on the fsage line that
/// answers it, so that the eye pairs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    Square,
    Circle,
    Triangle,
    Diamond,
    Cross,
    TriangleDown,
    Plus,
}

impl Marker {
    /// The `i`th shape: square, circle, triangle, diamond, cross, upside-down triangle, plus.
    pub fn nth(i: usize) -> Marker {
        [
            Marker::Square,
            Marker::Circle,
            Marker::Triangle,
            Marker::Diamond,
            Marker::Cross,
            Marker::TriangleDown,
            Marker::Plus,
        ][i % 7]
    }

    /// Draws the shape at `at` (pixels), `r` pixels from its middle to its edge, filled with
    /// `fill` and outlined with `edge` (a cross or plus: two strokes of `fill`, edged).
    fn draw<DB: plotters::prelude::DrawingBackend>(
        self,
        backend: &mut DB,
        at: (i32, i32),
        r: i32,
        fill: RGBColor,
        edge: Option<RGBAColor>,
    ) -> Result<(), plotters_backend::DrawingErrorKind<DB::ErrorType>> {
        let (x, y) = at;
        let mv = |v: &[(i32, i32)]| v.iter().map(|(a, b)| (x + a, y + b)).collect::<Vec<_>>();
        let d = r + r / 3;
        let poly: &[(i32, i32)] = match self {
            Marker::Square => &[(-r, -r), (r, -r), (r, r), (-r, r)],
            Marker::Diamond => &[(0, -d), (d, 0), (0, d), (-d, 0)],
            Marker::Triangle => &[(0, -r - 1), (r + 1, r), (-r - 1, r)],
            Marker::TriangleDown => &[(0, r + 1), (r + 1, -r), (-r - 1, -r)],
            Marker::Circle => {
                backend.draw_circle(at, r as u32, &fill.filled(), true)?;
                if let Some(c) = edge {
                    backend.draw_circle(at, r as u32, &c.stroke_width(1), false)?;
                }
                return Ok(());
            }
            Marker::Cross | Marker::Plus => {
                let e = r + 1;
                let strokes: [[(i32, i32); 2]; 2] = if self == Marker::Cross {
                    [[(-r, -r), (r, r)], [(-r, r), (r, -r)]]
                } else {
                    [[(-e, 0), (e, 0)], [(0, -e), (0, e)]]
                };
                for s in &strokes {
                    let c = edge.unwrap_or(fill.to_rgba());
                    backend.draw_path(mv(s), &c.stroke_width(4))?;
                }
                for s in &strokes {
                    backend.draw_path(mv(s), &fill.stroke_width(2))?;
                }
                return Ok(());
            }
        };
        backend.fill_polygon(mv(poly), &fill.filled())?;
        if let Some(c) = edge {
            let mut closed = mv(poly);
            closed.push(closed[0]);
            backend.draw_path(closed, &c.stroke_width(1))?;
        }
        Ok(())
    }
}

/// A point's marker, as a plotters element (in the chart's coordinates or, for a legend,
/// pixels): optionally on a short line of `dash` (a legend's swatch).
struct MarkerAt<C> {
    at: [C; 1],
    marker: Option<(Marker, i32, Option<RGBAColor>)>,
    swatch: Option<(Dash, u32)>,
    color: RGBColor,
}

impl<'a, C> plotters::element::PointCollection<'a, C> for &'a MarkerAt<C> {
    type Point = &'a C;
    type IntoIter = &'a [C];
    fn point_iter(self) -> &'a [C] {
        &self.at
    }
}

impl<C, DB: plotters::prelude::DrawingBackend> plotters::element::Drawable<DB> for MarkerAt<C> {
    fn draw<I: Iterator<Item = (i32, i32)>>(
        &self,
        mut points: I,
        backend: &mut DB,
        _: (u32, u32),
    ) -> Result<(), plotters_backend::DrawingErrorKind<DB::ErrorType>> {
        let Some((x, y)) = points.next() else {
            return Ok(());
        };
        let mut mid = (x, y);
        if let Some((dash, width)) = self.swatch {
            let line = [(x, y), (x + 18, y)];
            let style = self.color.stroke_width(width);
            match dash.pattern() {
                Some(p) => {
                    for seg in dash_segments(&line, p) {
                        backend.draw_path(seg, &style)?;
                    }
                }
                None => backend.draw_path(line, &style)?,
            }
            mid = (x + 9, y);
        }
        if let Some((m, r, edge)) = self.marker {
            m.draw(backend, mid, r, self.color, edge)?;
        }
        Ok(())
    }
}

/// A path drawn with a dash pattern of any length (dash, gap, dash, gap, ...): plotters' own
/// dashed path knows one dash and one gap, too few styles to tell six runs apart.
struct DashPath<C> {
    points: Vec<C>,
    pattern: &'static [u32],
    style: ShapeStyle,
}

impl<'a, C> plotters::element::PointCollection<'a, C> for &'a DashPath<C> {
    type Point = &'a C;
    type IntoIter = &'a [C];
    fn point_iter(self) -> &'a [C] {
        &self.points
    }
}

impl<C, DB: plotters::prelude::DrawingBackend> plotters::element::Drawable<DB> for DashPath<C> {
    fn draw<I: Iterator<Item = (i32, i32)>>(
        &self,
        points: I,
        backend: &mut DB,
        _: (u32, u32),
    ) -> Result<(), plotters_backend::DrawingErrorKind<DB::ErrorType>> {
        let pts: Vec<(i32, i32)> = points.collect();
        for seg in dash_segments(&pts, self.pattern) {
            backend.draw_path(seg, &self.style)?;
        }
        Ok(())
    }
}

/// The drawn pieces of the path through `pts` (pixels) under `pattern` (dash, gap, ...
/// lengths), the pattern carried on from one point to the next.
fn dash_segments(pts: &[(i32, i32)], pattern: &[u32]) -> Vec<Vec<(i32, i32)>> {
    let mut out = Vec::new();
    if pts.is_empty() || pattern.iter().all(|p| *p == 0) {
        return out;
    }
    let (mut k, mut left) = (0usize, pattern[0] as f64);
    let mut cur: Vec<(i32, i32)> = vec![pts[0]];
    let at = |a: (i32, i32), b: (i32, i32), t: f64| {
        (
            (a.0 as f64 + (b.0 - a.0) as f64 * t).round() as i32,
            (a.1 as f64 + (b.1 - a.1) as f64 * t).round() as i32,
        )
    };
    for w in pts.windows(2) {
        let (a, b) = (w[0], w[1]);
        let len = (((b.0 - a.0) as f64).powi(2) + ((b.1 - a.1) as f64).powi(2)).sqrt();
        let mut done = 0.0;
        while len - done > left {
            done += left;
            let p = at(a, b, done / len);
            if k % 2 == 0 {
                cur.push(p);
                out.push(std::mem::take(&mut cur));
            } else {
                cur = vec![p];
            }
            k = (k + 1) % pattern.len();
            left = pattern[k] as f64;
        }
        left -= len - done;
        if k % 2 == 0 {
            cur.push(b);
        }
    }
    if k % 2 == 0 && cur.len() > 1 {
        out.push(cur);
    }
    out
}

const FONT: &str = "sans-serif";

/// A plot as wide as the page (the page's CSS shrinks it to a narrower window, keeping its
/// proportions).
pub const WIDE: (u32, u32) = (1360, 460);

/// One bar: its value and, optionally, an interval drawn over it.
#[derive(Debug, Clone)]
pub struct Bar {
    pub value: f64,
    pub interval: Option<(f64, f64)>,
    /// Drawn with a hatched outline and a flag mark (e.g. a rank order that changed).
    pub flag: bool,
    /// This bar's own colour (else its series').
    pub color: Option<RGBColor>,
}

/// One series of bars, a bar (or none) per group.
#[derive(Debug, Clone)]
pub struct BarSeries {
    pub name: String,
    pub bars: Vec<Option<Bar>>,
    /// The series' colour; default: its file system's when its name has one, else the
    /// palette's by position.
    pub color: Option<RGBColor>,
}

#[derive(Debug, Clone)]
pub struct BarChart {
    pub title: String,
    pub x_desc: String,
    pub y_desc: String,
    pub groups: Vec<String>,
    pub series: Vec<BarSeries>,
    /// Log-10 y axis (values must be positive; others are left out).
    pub log_y: bool,
    pub size: (u32, u32),
}

fn fmt_tick(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').into()
    } else {
        // 0.5, 0.05, 0.005: enough decimals for the first significant digit and one more.
        let d = (-a.log10()).ceil().max(1.0) as usize + 1;
        let s = format!("{v:.d$}");
        s.trim_end_matches('0').trim_end_matches('.').into()
    }
}

/// Why a chart has no plot (nothing to plot, or the SVG backend refused): the page says so in
/// the plot's place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlotError(pub String);

impl std::fmt::Display for PlotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PlotError {}

impl From<String> for PlotError {
    fn from(s: String) -> PlotError {
        PlotError(s)
    }
}

impl From<&str> for PlotError {
    fn from(s: &str) -> PlotError {
        PlotError(s.into())
    }
}

/// Grouped bars; returns the `<svg>` element.
pub fn bars(c: &BarChart) -> Result<String, PlotError> {
    let tr = |v: f64| if c.log_y { v.log10() } else { v };
    let usable = |v: f64| v.is_finite() && (!c.log_y || v > 0.0);
    let mut hi = f64::NEG_INFINITY;
    let mut lo = f64::INFINITY;
    // Where the tallest bar is: the legend goes to the other side.
    let (mut top_group, mut top) = (0, f64::NEG_INFINITY);
    for s in &c.series {
        for (gi, b) in s.bars.iter().enumerate() {
            if let Some(b) = b.as_ref().filter(|b| usable(b.value)) {
                if tr(b.value) > top {
                    (top_group, top) = (gi, tr(b.value));
                }
            }
        }
        for b in s.bars.iter().flatten() {
            for v in [
                Some(b.value),
                b.interval.map(|i| i.1),
                b.interval.map(|i| i.0),
            ]
            .into_iter()
            .flatten()
            .filter(|v| usable(*v))
            {
                hi = hi.max(tr(v));
                lo = lo.min(tr(v));
            }
        }
    }
    if !hi.is_finite() {
        return Err("nothing to plot".into());
    }
    let (y0, y1) = if c.log_y {
        let (a, b) = (lo.floor(), hi.ceil());
        (a, if b <= a { a + 1.0 } else { b })
    } else {
        // Room above the tallest bar for the legend.
        (0.0, if hi <= 0.0 { 1.0 } else { hi * 1.3 })
    };
    let n = c.groups.len().max(1);
    let rotate = n > 8 || c.groups.iter().any(|g| g.len() > 14);
    let label_h = if rotate {
        (c.groups
            .iter()
            .map(|g| g.chars().count())
            .max()
            .unwrap_or(4) as u32
            * 6
            + 20)
            .min(130)
    } else {
        30
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, c.size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut chart = ChartBuilder::on(&root)
            .caption(&c.title, (FONT, 16))
            .margin(12)
            .x_label_area_size(label_h + 22)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), y0..y1)
            .map_err(|e| e.to_string())?;
        let log = c.log_y;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(WHITE.mix(0.0))
            .bold_line_style(BLACK.mix(0.1))
            .x_labels(0)
            .y_labels(if log { (y1 - y0) as usize + 1 } else { 8 })
            .y_label_formatter(&|v| {
                if log {
                    fmt_tick(10f64.powf(*v))
                } else {
                    fmt_tick(*v)
                }
            })
            .x_desc(c.x_desc.as_str())
            .y_desc(c.y_desc.as_str())
            .axis_desc_style((FONT, 13))
            .label_style((FONT, 11))
            .draw()
            .map_err(|e| e.to_string())?;
        let k = c.series.len().max(1) as f64;
        let w = 0.8 / k;
        let names: Vec<&str> = c.series.iter().map(|s| s.name.as_str()).collect();
        let cols = series_colors(&names);
        for (si, s) in c.series.iter().enumerate() {
            let col = s.color.unwrap_or(cols[si]);
            // The legend shows the series' colour, or its first bar's own.
            let legend_col = s
                .bars
                .iter()
                .flatten()
                .find_map(|b| b.color)
                .filter(|_| s.color.is_none())
                .unwrap_or(col);
            let mut rects = Vec::new();
            let mut errs = Vec::new();
            let mut flags = Vec::new();
            for (gi, b) in s.bars.iter().enumerate() {
                let Some(b) = b else { continue };
                if !usable(b.value) {
                    continue;
                }
                let x0 = gi as f64 - 0.4 + w * si as f64;
                let (x1, xm) = (x0 + w * 0.92, x0 + w * 0.46);
                let bar_col = b.color.unwrap_or(col);
                rects.push(Rectangle::new(
                    [(x0, y0), (x1, tr(b.value))],
                    bar_col.filled(),
                ));
                if b.flag {
                    rects.push(Rectangle::new(
                        [(x0, y0), (x1, tr(b.value))],
                        BLACK.stroke_width(2),
                    ));
                    let top = b
                        .interval
                        .map_or(b.value, |(_, h)| h.max(b.value))
                        .max(b.value);
                    flags.push((xm, tr(top)));
                }
                if let Some((l, h)) = b.interval.filter(|(l, h)| usable(*l) && usable(*h)) {
                    errs.push(ErrorBar::new_vertical(
                        xm,
                        tr(l),
                        tr(b.value),
                        tr(h),
                        BLACK.stroke_width(1),
                        6,
                    ));
                }
            }
            chart
                .draw_series(rects)
                .map_err(|e| e.to_string())?
                .label(s.name.as_str())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 12, y + 5)], legend_col.filled())
                });
            chart.draw_series(errs).map_err(|e| e.to_string())?;
            let fy = (y1 - y0) * 0.035;
            chart
                .draw_series(flags.into_iter().map(|(x, y)| {
                    Text::new(
                        "⚑",
                        (x, y + fy),
                        (FONT, 13)
                            .into_font()
                            .color(&BLACK)
                            .pos(Pos::new(HPos::Center, VPos::Bottom)),
                    )
                }))
                .map_err(|e| e.to_string())?;
        }
        // Group labels, under each group, rotated when there are many.
        let area = chart.plotting_area();
        for (gi, g) in c.groups.iter().enumerate() {
            let (px, py) = area.map_coordinate(&(gi as f64, y0));
            let style = if rotate {
                TextStyle::from((FONT, 11).into_font())
                    .transform(FontTransform::Rotate270)
                    .pos(Pos::new(HPos::Right, VPos::Center))
            } else {
                TextStyle::from((FONT, 11).into_font()).pos(Pos::new(HPos::Center, VPos::Top))
            };
            root.draw(&Text::new(g.clone(), (px, py + 6), style))
                .map_err(|e| e.to_string())?;
        }
        if c.series.len() > 1 || c.series.first().is_some_and(|s| !s.name.is_empty()) {
            let right_half = top_group * 2 + 1 > c.groups.len();
            chart
                .configure_series_labels()
                .position(if right_half {
                    SeriesLabelPosition::UpperLeft
                } else {
                    SeriesLabelPosition::UpperRight
                })
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK.mix(0.4))
                .label_font((FONT, 11))
                .draw()
                .map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// One line of a line chart.
#[derive(Debug, Clone)]
pub struct Line {
    pub name: String,
    /// Its colour: [`fs_color`] for a file system's, [`PUBLISHED`] for the paper's.
    pub color: RGBColor,
    /// (x, y), drawn in x order.
    pub points: Vec<(f64, f64)>,
    /// (x, low, high) intervals drawn as error bars.
    pub intervals: Vec<(f64, f64, f64)>,
    pub dash: Dash,
    /// Draw a dot at each point.
    pub dots: bool,
    /// Points to mark with a large ring (e.g. calibration points).
    pub rings: Vec<(f64, f64)>,
    /// The points' marker instead of a dot (a square for `Dash::Markers` when `None`): the
    /// published series a line answers and the line share one.
    pub marker: Option<Marker>,
    /// Written at the line's right end (e.g. `warm 768 MB`), where it fits.
    pub end_label: Option<String>,
}

#[derive(Debug, Clone)]
pub struct LineChart {
    pub title: String,
    pub x_desc: String,
    pub y_desc: String,
    pub x_range: (f64, f64),
    pub lines: Vec<Line>,
    pub size: (u32, u32),
    /// A horizontal reference line (a ratio's 1: no difference), labelled with its value.
    pub reference_y: Option<f64>,
    /// Keep the y axis for the bulk of the points: a point more than 2.5 times the 90th
    /// percentile is drawn at the top edge with its value written beside it, instead of
    /// squashing every other point to the bottom.
    pub clip_outliers: bool,
}

/// The y value above which points are outliers, if any point is (see `LineChart::clip_outliers`).
fn outlier_cap(mut ys: Vec<f64>) -> Option<f64> {
    if ys.len() < 5 {
        return None;
    }
    ys.sort_by(f64::total_cmp);
    let p90 = ys[(0.9 * (ys.len() - 1) as f64) as usize];
    let cap = 2.5 * p90;
    (p90 > 0.0 && *ys.last().unwrap() > cap)
        .then(|| ys.iter().copied().filter(|&y| y <= cap).fold(0.0, f64::max))
}

/// A line chart; returns the `<svg>` element.
pub fn lines(c: &LineChart) -> Result<String, PlotError> {
    let (x0, x1) = c.x_range;
    // Room at the right for the lines' end labels.
    let labelled = c.lines.iter().any(|l| l.end_label.is_some());
    let x1 = if labelled { x1 + (x1 - x0) * 0.09 } else { x1 };
    let in_x = |x: f64| x >= x0 - 1e-9 && x <= x1 + 1e-9;
    let mut ys = Vec::new();
    for l in &c.lines {
        for &(x, y) in &l.points {
            if in_x(x) && y.is_finite() {
                ys.push(y);
            }
        }
        for &(x, _, h) in &l.intervals {
            if in_x(x) && h.is_finite() {
                ys.push(h);
            }
        }
    }
    let mut hi = ys.iter().copied().fold(0.0, f64::max);
    if hi <= 0.0 {
        return Err("nothing to plot".into());
    }
    let cap = if c.clip_outliers {
        outlier_cap(ys)
    } else {
        None
    };
    if let Some(cap) = cap {
        hi = cap;
    }
    if let Some(r) = c.reference_y {
        hi = hi.max(r);
    }
    // Room above the data for the legend (a row per named line, top right), so that it covers
    // no line: the plot area is the height less the caption, margins and x labels.
    let named = c.lines.iter().filter(|l| !l.points.is_empty()).count() as f64;
    let plot_h = (c.size.1 as f64 - 88.0).max(100.0);
    let band = ((15.0 * named + 12.0) / plot_h).min(0.5);
    let y1 = hi * 1.05 / (1.0 - band);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, c.size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut chart = ChartBuilder::on(&root)
            .caption(&c.title, (FONT, 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(x0..x1, 0f64..y1)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc(c.x_desc.as_str())
            .y_desc(c.y_desc.as_str())
            .x_label_formatter(&|v| fmt_tick(*v))
            .y_label_formatter(&|v| fmt_tick(*v))
            .axis_desc_style((FONT, 13))
            .label_style((FONT, 11))
            .light_line_style(WHITE.mix(0.0))
            .bold_line_style(BLACK.mix(0.08))
            .draw()
            .map_err(|e| e.to_string())?;
        if let Some(r) = c.reference_y {
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(x0, r), (x1, r)],
                    3,
                    3,
                    BLACK.mix(0.45).stroke_width(1),
                ))
                .map_err(|e| e.to_string())?;
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("{} (no difference)", fmt_tick(r)),
                    (x0 + (x1 - x0) * 0.01, r),
                    (FONT, 10).into_font().color(&BLACK.mix(0.6)),
                )))
                .map_err(|e| e.to_string())?;
        }
        for l in &c.lines {
            let col = l.color;
            let pts: Vec<(f64, f64)> = l
                .points
                .iter()
                .copied()
                .filter(|(x, y)| in_x(*x) && y.is_finite())
                .map(|(x, y)| (x, y.min(y1)))
                .collect();
            // Outliers: at the top edge, a triangle and the value.
            if cap.is_some() {
                let top: Vec<(f64, f64)> = l
                    .points
                    .iter()
                    .copied()
                    .filter(|(x, y)| in_x(*x) && y.is_finite() && *y > y1)
                    .collect();
                chart
                    .draw_series(
                        top.iter()
                            .map(|&(x, _)| TriangleMarker::new((x, y1 * 0.985), 5, col.filled())),
                    )
                    .map_err(|e| e.to_string())?;
                chart
                    .draw_series(top.iter().map(|&(x, y)| {
                        Text::new(
                            format!("{} off scale", fmt_tick(y)),
                            (x + (x1 - x0) * 0.012, y1 * 0.97),
                            (FONT, 10).into_font().color(&col),
                        )
                    }))
                    .map_err(|e| e.to_string())?;
            }
            if pts.is_empty() {
                continue;
            }
            let style = col.stroke_width(2);
            let dash = l.dash;
            let marker = l.marker;
            // The paper's points: grey markers with a dark edge on a thin dotted line in x order.
            let edge = Some(BLACK.mix(0.6));
            let anno = match dash.pattern() {
                Some(pattern) => {
                    let (points, style) = if dash == Dash::Markers {
                        let mut by_x = pts.clone();
                        by_x.sort_by(|a, b| a.0.total_cmp(&b.0));
                        (by_x, col.stroke_width(1))
                    } else {
                        (pts.clone(), style)
                    };
                    chart
                        .draw_series(std::iter::once(DashPath {
                            points,
                            pattern,
                            style,
                        }))
                        .map_err(|e| e.to_string())?
                }
                None => chart
                    .draw_series(LineSeries::new(pts.clone(), style))
                    .map_err(|e| e.to_string())?,
            };
            let legend_marker = match (dash, marker) {
                (Dash::Markers, m) => Some((m.unwrap_or(Marker::Square), 4, edge)),
                (_, Some(m)) => Some((m, 4, None)),
                _ => None,
            };
            let width = if dash == Dash::Markers { 1 } else { 2 };
            anno.label(l.name.as_str()).legend(move |p| MarkerAt {
                at: [p],
                marker: legend_marker,
                swatch: Some((dash, width)),
                color: col,
            });
            let point_marker = match (dash, marker) {
                (Dash::Markers, m) => Some((m.unwrap_or(Marker::Square), 5, edge)),
                (_, Some(m)) if l.dots => Some((m, 4, None)),
                _ => None,
            };
            if let Some(pm) = point_marker {
                chart
                    .draw_series(pts.iter().map(|&p| MarkerAt {
                        at: [p],
                        marker: Some(pm),
                        swatch: None,
                        color: col,
                    }))
                    .map_err(|e| e.to_string())?;
            } else if l.dots {
                chart
                    .draw_series(pts.iter().map(|&p| Circle::new(p, 3, col.filled())))
                    .map_err(|e| e.to_string())?;
            }
            chart
                .draw_series(
                    l.intervals
                        .iter()
                        .filter(|(x, lo, h)| in_x(*x) && lo.is_finite() && h.is_finite())
                        .map(|&(x, lo, h)| {
                            ErrorBar::new_vertical(x, lo, (lo + h) / 2.0, h, col.stroke_width(1), 6)
                        }),
                )
                .map_err(|e| e.to_string())?;
            chart
                .draw_series(
                    l.rings
                        .iter()
                        .filter(|(x, _)| in_x(*x))
                        .map(|&p| Circle::new(p, 8, BLACK.stroke_width(2))),
                )
                .map_err(|e| e.to_string())?;
        }
        // The end labels, each beside its line's last point, moved apart downwards where two
        // would overlap.
        let mut ends: Vec<((i32, i32), &str, RGBColor)> = c
            .lines
            .iter()
            .filter_map(|l| {
                let label = l.end_label.as_deref()?;
                let last = l
                    .points
                    .iter()
                    .copied()
                    .filter(|(x, y)| in_x(*x) && y.is_finite())
                    .max_by(|a, b| a.0.total_cmp(&b.0))?;
                Some((
                    chart.backend_coord(&(last.0, last.1.min(y1))),
                    label,
                    l.color,
                ))
            })
            .collect();
        ends.sort_by_key(|e| e.0 .1);
        let mut below = i32::MIN;
        for ((x, y), label, col) in ends {
            let y = y.max(below + 12);
            below = y;
            root.draw(&Text::new(
                label.to_string(),
                (x + 8, y),
                (FONT, 11)
                    .into_font()
                    .color(&col)
                    .pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(|e| e.to_string())?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .label_font((FONT, 11))
            .draw()
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// One panel: its title, and per series the values in µs per percentile (`None` where not
/// measured).
pub type Panel = (String, Vec<Vec<Option<f64>>>);

/// Small multiples of latency percentile curves: one panel per flowop, the percentiles on x
/// (categories, in order), latency on a log axis, one line per series (a state) in the same
/// colour in every panel, and one legend above the panels, off the data.
#[derive(Debug, Clone)]
pub struct PercentilePanels {
    pub title: String,
    /// The x categories (e.g. p50, p90, p99, p99.9, max).
    pub percentiles: Vec<String>,
    /// Series names (the legend), in colour order.
    pub series: Vec<String>,
    pub panels: Vec<Panel>,
    /// Panels per row, and each panel's size.
    pub columns: usize,
    pub panel_size: (u32, u32),
}

/// A latency in µs with its unit, for the log axis' ticks.
pub fn fmt_us(v: f64) -> String {
    fsage_units::format_latency_round(v)
}

/// Draws [`PercentilePanels`]; returns the `<svg>` element.
pub fn percentile_panels(c: &PercentilePanels) -> Result<String, PlotError> {
    let n = c.percentiles.len();
    if n == 0 || c.panels.is_empty() {
        return Err("nothing to plot".into());
    }
    let cols = c.columns.clamp(1, c.panels.len());
    let rows = c.panels.len().div_ceil(cols);
    let (pw, ph) = c.panel_size;
    let head = 58u32;
    let size = (pw * cols as u32, head + ph * rows as u32);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let (top, body) = root.split_vertically(head);
        top.draw(&Text::new(
            c.title.clone(),
            (10, 6),
            (FONT, 16).into_font().color(&BLACK),
        ))
        .map_err(|e| e.to_string())?;
        // The legend: a row of swatches under the title.
        let mut x = 12i32;
        let names: Vec<&str> = c.series.iter().map(String::as_str).collect();
        let colors = series_colors(&names);
        for (i, s) in c.series.iter().enumerate() {
            let col = colors[i];
            top.draw(&PathElement::new(
                vec![(x, 40), (x + 22, 40)],
                col.stroke_width(3),
            ))
            .map_err(|e| e.to_string())?;
            top.draw(&Circle::new((x + 11, 40), 3, col.filled()))
                .map_err(|e| e.to_string())?;
            top.draw(&Text::new(
                s.clone(),
                (x + 28, 40),
                (FONT, 12)
                    .into_font()
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(|e| e.to_string())?;
            x += 40 + 7 * s.chars().count() as i32;
        }
        let areas = body.split_evenly((rows, cols));
        for ((name, series), area) in c.panels.iter().zip(areas) {
            let vals: Vec<f64> = series
                .iter()
                .flatten()
                .flatten()
                .copied()
                .filter(|v| v.is_finite() && *v > 0.0)
                .collect();
            if vals.is_empty() {
                continue;
            }
            let lo = vals.iter().copied().fold(f64::INFINITY, f64::min).log10();
            let hi = vals
                .iter()
                .copied()
                .fold(f64::NEG_INFINITY, f64::max)
                .log10();
            let (y0, y1) = (lo.floor(), hi.ceil().max(lo.floor() + 1.0));
            let mut chart = ChartBuilder::on(&area)
                .caption(name, (FONT, 13))
                .margin(6)
                .x_label_area_size(22)
                .y_label_area_size(52)
                .build_cartesian_2d(-0.3f64..(n as f64 - 0.7), y0..y1)
                .map_err(|e| e.to_string())?;
            let labels = c.percentiles.clone();
            chart
                .configure_mesh()
                .light_line_style(WHITE.mix(0.0))
                .bold_line_style(BLACK.mix(0.1))
                .x_labels(n)
                .x_label_formatter(&|v| {
                    let i = v.round();
                    if (v - i).abs() < 1e-6 && i >= 0.0 {
                        labels.get(i as usize).cloned().unwrap_or_default()
                    } else {
                        String::new()
                    }
                })
                .y_labels((y1 - y0) as usize + 1)
                .y_label_formatter(&|v| fmt_us(10f64.powf(*v)))
                .label_style((FONT, 10))
                .draw()
                .map_err(|e| e.to_string())?;
            for (si, s) in series.iter().enumerate() {
                let col = colors.get(si).copied().unwrap_or_else(|| color(si));
                let pts: Vec<(f64, f64)> = s
                    .iter()
                    .enumerate()
                    .filter_map(|(i, v)| {
                        v.filter(|v| v.is_finite() && *v > 0.0)
                            .map(|v| (i as f64, v.log10()))
                    })
                    .collect();
                chart
                    .draw_series(LineSeries::new(pts.clone(), col.stroke_width(2)))
                    .map_err(|e| e.to_string())?;
                chart
                    .draw_series(pts.iter().map(|&p| Circle::new(p, 3, col.filled())))
                    .map_err(|e| e.to_string())?;
            }
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

#[cfg(test)]
mod color_tests {
    use super::*;

    /// A file system keeps its colour whatever else is plotted with it (issue 32: nginx xfs was
    /// orange in the grep plots and green in the modeled one); series of one file system get the
    /// palette instead, so that they stay apart.
    #[test]
    fn a_file_system_has_one_colour_and_same_kind_series_stay_apart() {
        assert_eq!(fs_color("nginx-xfs xfs aged"), Some(COLORS[1]));
        assert_eq!(fs_color("ext4-nojournal"), Some(COLORS[0]));
        assert_eq!(fs_color("aged:meyer"), None);
        assert_eq!(
            series_colors(&["btrfs", "xfs"]),
            series_colors(&["xfs", "btrfs"])
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
        );
        assert_eq!(series_colors(&["xfs", "ext4", "btrfs"])[0], COLORS[1]);
        assert_eq!(
            series_colors(&["fresh-ext4", "aged-ext4"]),
            vec![COLORS[0], COLORS[1]]
        );
        assert!(!COLORS.contains(&PUBLISHED), "grey is the papers' alone");
        assert_eq!(light(RGBColor(0, 100, 255)), RGBColor(127, 177, 255));
    }
}

#[cfg(test)]
mod outlier_tests {
    use super::*;

    fn chart(points: Vec<(f64, f64)>, reference_y: Option<f64>) -> String {
        lines(&LineChart {
            title: "t".into(),
            x_desc: "x".into(),
            y_desc: "y".into(),
            x_range: (0.0, 10.0),
            lines: vec![Line {
                name: "a".into(),
                color: color(0),
                points,
                intervals: vec![],
                dash: Dash::Solid,
                dots: true,
                rings: vec![],
                marker: None,
                end_label: None,
            }],
            size: (620, 380),
            reference_y,
            clip_outliers: true,
        })
        .unwrap()
    }

    #[test]
    fn a_far_outlier_is_written_at_the_top_and_the_rest_keep_the_axis() {
        assert_eq!(outlier_cap(vec![1.0, 1.1, 0.9, 1.2, 1.0, 40.0]), Some(1.2));
        assert_eq!(outlier_cap(vec![1.0, 1.1, 0.9, 1.2, 1.0, 2.0]), None);
        assert_eq!(
            outlier_cap(vec![1.0, 50.0]),
            None,
            "too few points to call one an outlier"
        );
        let pts = vec![
            (0.0, 40.0),
            (2.0, 1.0),
            (4.0, 1.1),
            (6.0, 0.9),
            (8.0, 1.2),
            (10.0, 1.0),
        ];
        let svg = chart(pts.clone(), Some(1.0));
        assert!(
            svg.contains("40 off scale"),
            "the outlier's value is written"
        );
        assert!(
            svg.contains("(no difference)"),
            "the reference line is labelled"
        );
        let plain = chart(pts[1..].to_vec(), None);
        assert!(!plain.contains("off scale") && !plain.contains("no difference"));
    }
}

#[cfg(test)]
mod dash_tests {
    use super::*;

    /// A dash-dot line draws a long and a short piece in turn, a dashed one equal pieces, and the
    /// pattern runs on across a line's corners.
    #[test]
    fn dash_patterns_draw_different_pieces() {
        let lens = |pattern: &[u32]| -> Vec<i32> {
            dash_segments(&[(0, 0), (20, 0), (40, 0)], pattern)
                .iter()
                .map(|s| s.last().unwrap().0 - s[0].0)
                .collect()
        };
        assert_eq!(lens(Dash::DashDot.pattern().unwrap()), vec![9, 2, 9, 2, 6]);
        assert_eq!(lens(Dash::Dashed.pattern().unwrap()), vec![7, 7, 7, 7]);
        let pieces = dash_segments(&[(0, 0), (20, 0), (40, 0)], &[16, 5]);
        assert_eq!(pieces[1], vec![(21, 0), (37, 0)]);
        let styles: Vec<_> = (0..6).map(|i| Dash::nth(i).pattern()).collect();
        for (i, p) in styles.iter().enumerate() {
            assert!(!styles[..i].contains(p), "six runs, six styles");
        }
    }
}

//! The three chart shapes every picture is made of, drawn with plotters: horizontal bars by
//! component ([`HBars`]), vertical stacked bars against a capacity ([`Stacked`]) and lines over
//! a sweep ([`Lines`]). Each also draws its exact numbers as text beside the bars or in a table
//! under them; plotters draws the axes, bars, lines and text, this module only lays them out.
//!
//! Coordinates are laid out in whole pixels and every value is turned into `f64` only to be
//! drawn, so any `u128` draws; the exact integers are formatted from the integers themselves.

use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use llmsize_core::units::thousands_u128;

use crate::units::{Scale, short, tick};
use crate::{ChartError, MAX_POINTS, MAX_SERIES, font};

/// Font sizes as plotters takes them (the SVG's `font-size` is this / 1.24).
const TITLE: f64 = 22.0;
const TEXT: f64 = 16.0;
const SMALL: f64 = 14.5;
/// Line height of header and note lines, pixels.
const LINE: i32 = 19;
/// Minimum width of a chart, pixels.
const WIDTH: i32 = 960;
/// Label texts longer than this many characters are cut (a hostile 10 kB model name).
const MAX_LABEL: usize = 48;

/// Colours of series (models), Tableau 10: distinct, and readable on white.
pub(crate) const SERIES: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0xba, 0xb0, 0xac),
];

/// The colour of series `i` (the palette repeats past ten).
pub(crate) fn series_color(i: usize) -> RGBColor {
    SERIES.get(i % SERIES.len()).copied().unwrap_or(BLACK)
}

const CAPACITY: RGBColor = RGBColor(0xc0, 0x1c, 0x28);
const GREY: RGBColor = RGBColor(0x55, 0x55, 0x55);

fn fail(e: impl std::fmt::Display) -> ChartError {
    ChartError::Draw(e.to_string())
}

/// Text as XML 1.0 allows it: control characters (which no escape can carry) as spaces.
/// plotters escapes `<`, `>`, `&` and quotes itself.
fn printable(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// A label cut to [`MAX_LABEL`] characters, printable.
pub(crate) fn clip(s: &str) -> String {
    if s.chars().count() <= MAX_LABEL {
        printable(s)
    } else {
        let mut t: String = s.chars().take(MAX_LABEL - 1).collect();
        t.push('…');
        printable(&t)
    }
}

/// A header or note line: printable and cut at 200 characters (a 10 kB name stays bounded;
/// the lines llmsize writes are shorter).
fn line_text(s: &str) -> String {
    if s.chars().count() <= 200 {
        printable(s)
    } else {
        let mut t: String = s.chars().take(199).collect();
        t.push('…');
        printable(&t)
    }
}

/// Fails when there are more than `max` of `what`.
pub(crate) fn bound(what: &'static str, count: usize, max: usize) -> Result<(), ChartError> {
    if count > max {
        Err(ChartError::TooMany { what, count, max })
    } else {
        Ok(())
    }
}

fn px(v: u32) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

fn count(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

fn f(n: i32) -> f64 {
    f64::from(n)
}

/// Text styles and measuring with the embedded font.
struct Fonts {
    family: FontFamily<'static>,
}

impl Fonts {
    fn new() -> Result<Self, ChartError> {
        Ok(Fonts {
            family: font::ensure()?,
        })
    }

    fn desc(&self, size: f64) -> FontDesc<'static> {
        FontDesc::new(self.family, size, FontStyle::Normal)
    }

    fn style(&self, size: f64, color: RGBColor, h: HPos, v: VPos) -> TextStyle<'static> {
        TextStyle {
            font: self.desc(size),
            color: color.to_backend_color(),
            pos: Pos::new(h, v),
        }
    }

    fn bold(&self, size: f64) -> TextStyle<'static> {
        TextStyle::from(FontDesc::new(self.family, size, FontStyle::Bold))
            .color(&BLACK)
            .pos(Pos::new(HPos::Left, VPos::Top))
    }

    /// Width of `text` in pixels.
    fn width(&self, size: f64, text: &str) -> Result<i32, ChartError> {
        self.desc(size)
            .box_size(text)
            .map(|(w, _)| px(w))
            .map_err(fail)
    }

    fn widest<'a>(
        &self,
        size: f64,
        texts: impl IntoIterator<Item = &'a str>,
    ) -> Result<i32, ChartError> {
        let mut w = 0;
        for t in texts {
            w = w.max(self.width(size, t)?);
        }
        Ok(w)
    }
}

/// A chart's title and the lines under it (what was asked, the totals, the verdict).
#[derive(Debug, Clone, Default)]
pub(crate) struct Header {
    pub title: String,
    pub lines: Vec<String>,
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

fn text(area: &Area<'_>, s: &str, at: (i32, i32), style: &TextStyle<'_>) -> Result<(), ChartError> {
    area.draw(&Text::new(line_text(s), at, style.clone()))
        .map_err(fail)
}

/// Draw the title and lines from the top; returns the y below them.
fn header(area: &Area<'_>, fonts: &Fonts, h: &Header) -> Result<i32, ChartError> {
    text(area, &h.title, (16, 12), &fonts.bold(TITLE))?;
    let mut y = 44;
    let style = fonts.style(TEXT, GREY, HPos::Left, VPos::Top);
    for l in &h.lines {
        text(area, l, (16, y), &style)?;
        y += LINE;
    }
    Ok(y)
}

/// The width the title (measured with the regular face: bold is up to a fifth wider), the
/// header's lines and `notes` need.
fn header_width(fonts: &Fonts, h: &Header, notes: &[String]) -> Result<i32, ChartError> {
    let lines: Vec<String> = h.lines.iter().chain(notes).map(|l| line_text(l)).collect();
    Ok(fonts
        .widest(TEXT, lines.iter().map(String::as_str))?
        .max(fonts.width(TITLE, &line_text(&h.title))? * 6 / 5))
}

fn header_height(h: &Header) -> i32 {
    44 + LINE * count(h.lines.len())
}

/// A legend of coloured swatches on as many lines as it needs; returns the y below it.
fn legend(
    area: &Area<'_>,
    fonts: &Fonts,
    items: &[(String, RGBColor)],
    dashes: Option<&[bool]>,
    y: i32,
    width: i32,
) -> Result<i32, ChartError> {
    let style = fonts.style(TEXT, BLACK, HPos::Left, VPos::Center);
    let (mut x, mut y) = (16, y + 4);
    for (i, (name, color)) in items.iter().enumerate() {
        let w = 26 + fonts.width(TEXT, name)? + 18;
        if x > 16 && x + w > width - 16 {
            x = 16;
            y += LINE + 2;
        }
        match dashes.and_then(|d| d.get(i)) {
            None => area
                .draw(&Rectangle::new(
                    [(x, y + 4), (x + 12, y + 16)],
                    color.filled(),
                ))
                .map_err(fail)?,
            Some(false) => area
                .draw(&PathElement::new(
                    vec![(x, y + 10), (x + 20, y + 10)],
                    color.stroke_width(2),
                ))
                .map_err(fail)?,
            Some(true) => {
                for (a, b) in [(x, x + 6), (x + 10, x + 16)] {
                    area.draw(&PathElement::new(
                        vec![(a, y + 10), (b, y + 10)],
                        color.stroke_width(2),
                    ))
                    .map_err(fail)?;
                }
            }
        }
        text(area, name, (x + 26, y + 10), &style)?;
        x += w;
    }
    Ok(y + LINE + 6)
}

fn legend_height(
    fonts: &Fonts,
    items: &[(String, RGBColor)],
    width: i32,
) -> Result<i32, ChartError> {
    let (mut x, mut lines) = (16, 1);
    for (name, _) in items {
        let w = 26 + fonts.width(TEXT, name)? + 18;
        if x > 16 && x + w > width - 16 {
            x = 16;
            lines += 1;
        }
        x += w;
    }
    Ok(4 + lines * (LINE + 2) + 4)
}

fn notes(area: &Area<'_>, fonts: &Fonts, notes: &[String], y: i32) -> Result<(), ChartError> {
    let style = fonts.style(SMALL, GREY, HPos::Left, VPos::Top);
    for (i, n) in notes.iter().enumerate() {
        text(area, n, (16, y + 6 + LINE * count(i)), &style)?;
    }
    Ok(())
}

fn notes_height(notes: &[String]) -> i32 {
    12 + LINE * count(notes.len())
}

/// A capacity's label just above its line at `(x, y)` (right-aligned), on a white box so
/// that bars and grid lines behind it do not cross the text.
fn cap_label(
    area: &Area<'_>,
    fonts: &Fonts,
    s: &str,
    (x, y): (i32, i32),
) -> Result<(), ChartError> {
    let w = fonts.width(SMALL, s)?;
    area.draw(&Rectangle::new(
        [(x - w - 4, y - 19), (x + 2, y - 3)],
        WHITE.filled(),
    ))
    .map_err(fail)?;
    text(
        area,
        s,
        (x, y - 11),
        &fonts.style(SMALL, CAPACITY, HPos::Right, VPos::Center),
    )
}

/// The SVG text with a `<title>` (the chart's title, for screen readers and tooltips) as the
/// first child of `<svg>`.
fn finish(svg: String, title: &str) -> String {
    let escaped = line_text(title)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    match svg.find(">\n") {
        Some(i) => {
            let (head, tail) = svg.split_at(i + 2);
            format!("{head}<title>{escaped}</title>\n{tail}")
        }
        None => svg,
    }
}

/// The top of an axis: the largest value and a little room, never zero.
fn axis_top(max: f64) -> f64 {
    if max.is_finite() && max > 0.0 {
        max * 1.08
    } else {
        1.0
    }
}

// ---------------------------------------------------------------------------------------
// horizontal bars

/// One bar: which series, its value, and the text after its number (a share, a model name).
#[derive(Debug, Clone)]
pub(crate) struct HBar {
    pub series: usize,
    pub value: u128,
    pub note: String,
}

/// A row: a component and its bars (one per series).
#[derive(Debug, Clone)]
pub(crate) struct HRow {
    pub label: String,
    /// The bar colour when there is one series (the component's colour).
    pub color: RGBColor,
    pub bars: Vec<HBar>,
}

/// Horizontal bars by component, the exact numbers in a column at the right.
#[derive(Debug, Clone)]
pub(crate) struct HBars {
    pub header: Header,
    /// The axis title before its unit (`parameters`, `forward FLOPs`).
    pub axis: String,
    pub scale: Scale,
    /// The series (models); a legend when more than one.
    pub series: Vec<String>,
    pub rows: Vec<HRow>,
    pub notes: Vec<String>,
}

impl HBars {
    pub(crate) fn svg(&self) -> Result<String, ChartError> {
        bound("models", self.series.len(), MAX_SERIES)?;
        let fonts = Fonts::new()?;
        let many = self.series.len() > 1;
        let bar_h = if many { 15 } else { 22 };
        let gap = if many { 12 } else { 8 };
        let labels: Vec<String> = self.rows.iter().map(|r| clip(&r.label)).collect();
        let numbers: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| r.bars.iter().map(|b| thousands_u128(b.value)).collect())
            .collect();
        let notes_of: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| r.bars.iter().map(|b| clip(&b.note)).collect())
            .collect();
        let label_w = fonts.widest(TEXT, labels.iter().map(String::as_str))? + 24;
        let num_w = fonts.widest(TEXT, numbers.iter().flatten().map(String::as_str))?;
        let note_w = fonts.widest(SMALL, notes_of.iter().flatten().map(String::as_str))?;
        let title_w = header_width(&fonts, &self.header, &[])? + 40;
        let width = WIDTH.max(label_w + num_w + note_w + 420).max(title_w);
        let series: Vec<(String, RGBColor)> = self
            .series
            .iter()
            .enumerate()
            .map(|(i, s)| (clip(s), series_color(i)))
            .collect();
        let legend_h = if many {
            legend_height(&fonts, &series, width)?
        } else {
            0
        };
        let plot_h: i32 = self
            .rows
            .iter()
            .map(|r| count(r.bars.len().max(1)) * bar_h + gap)
            .sum();
        let top = header_height(&self.header) + legend_h;
        let chart_h = plot_h + 8 + 52;
        let height = top + chart_h + notes_height(&self.notes);

        let max = self
            .rows
            .iter()
            .flat_map(|r| r.bars.iter().map(|b| self.scale.of(b.value)))
            .fold(0.0, f64::max);
        // y in pixels from the bottom of the plot; rows from the top.
        let mut centers = Vec::new();
        let mut bars = Vec::new();
        let mut y = plot_h;
        for (i, r) in self.rows.iter().enumerate() {
            let first = y - gap / 2;
            for (j, b) in r.bars.iter().enumerate() {
                let y1 = first - count(j) * bar_h;
                let color = if many {
                    series_color(b.series)
                } else {
                    r.color
                };
                bars.push((
                    i,
                    j,
                    self.scale.of(b.value),
                    f(y1 - bar_h + 2),
                    f(y1 - 1),
                    color,
                ));
            }
            let n = count(r.bars.len().max(1));
            centers.push(f(first) - f(n * bar_h) / 2.0);
            y -= n * bar_h + gap;
        }

        let mut buf = String::new();
        {
            let root = SVGBackend::with_string(&mut buf, (to_u32(width), to_u32(height)))
                .into_drawing_area();
            root.fill(&WHITE).map_err(fail)?;
            let below = header(&root, &fonts, &self.header)?;
            if many {
                legend(&root, &fonts, &series, None, below, width)?;
            }
            let (_, rest) = root.split_vertically(top);
            let (chart_area, _) = rest.split_vertically(chart_h);
            let (plot_area, _) = chart_area.split_horizontally(width - num_w - note_w - 40);
            let label_of = |v: &f64| label_at(&centers, &labels, *v);
            let mut chart = ChartBuilder::on(&plot_area)
                .margin_top(8)
                .margin_right(24)
                .x_label_area_size(52)
                .y_label_area_size(label_w)
                .build_cartesian_2d(value_axis(max), keyed(0.0..f(plot_h), centers.clone()))
                .map_err(fail)?;
            let axis_title = if self.scale.name.is_empty() {
                self.axis.clone()
            } else {
                format!("{} ({})", self.axis, self.scale.name)
            };
            chart
                .configure_mesh()
                .disable_y_mesh()
                .y_label_formatter(&label_of)
                .x_label_formatter(&|v| tick(*v))
                .x_desc(axis_title)
                .label_style(fonts.style(TEXT, BLACK, HPos::Center, VPos::Center))
                .axis_desc_style(fonts.style(TEXT, GREY, HPos::Center, VPos::Center))
                .light_line_style(WHITE)
                .bold_line_style(RGBColor(0xe4, 0xe4, 0xe4))
                .draw()
                .map_err(fail)?;
            chart
                .draw_series(bars.iter().map(|(_, _, v, y0, y1, c)| {
                    Rectangle::new([(0.0, *y0), (*v, *y1)], c.filled())
                }))
                .map_err(fail)?;
            let num_style = fonts.style(TEXT, BLACK, HPos::Right, VPos::Center);
            let note_style = fonts.style(SMALL, GREY, HPos::Left, VPos::Center);
            let num_x = width - 24 - note_w - 10;
            for (i, j, _, y0, y1, _) in &bars {
                let (_, py) = chart.backend_coord(&(0.0, (y0 + y1) / 2.0));
                if let Some(n) = numbers.get(*i).and_then(|r| r.get(*j)) {
                    text(&root, n, (num_x, py), &num_style)?;
                }
                if let Some(n) = notes_of.get(*i).and_then(|r| r.get(*j)) {
                    text(&root, n, (num_x + 10, py), &note_style)?;
                }
            }
            notes(&root, &fonts, &self.notes, top + chart_h)?;
            root.present().map_err(fail)?;
        }
        Ok(finish(buf, &self.header.title))
    }
}

/// A linear `f64` axis whose ticks are exactly the given points (bar centres, swept values).
///
/// plotters' own `with_key_points` does this, but its `f64` axis has no default formatter,
/// so its mesh cannot be configured; this is the same with plotters' default formatting
/// (every label goes through our formatter anyway).
#[derive(Debug, Clone)]
struct Keyed {
    lo: f64,
    hi: f64,
    keys: Vec<f64>,
}

impl Ranged for Keyed {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    #[expect(
        clippy::cast_possible_truncation,
        reason = "a pixel; `as` saturates for far-off values"
    )]
    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let span = self.hi - self.lo;
        if span <= 0.0 || !span.is_finite() {
            return (limit.1 - limit.0) / 2;
        }
        let t = (v - self.lo) / span;
        let len = f64::from(limit.1) - f64::from(limit.0);
        (f64::from(limit.0) + len * t + 1e-3).floor() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.keys.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// A value axis from 0 to a little above `max`, ticked at 1, 2 or 5 × 10ᵏ steps.
///
/// The ticks are found by multiplying and dividing by 10 only (plotters' own use `log10` and
/// `powf`, whose last bits may differ between C libraries), so that the bytes of a chart do
/// not depend on the machine.
fn value_axis(max: f64) -> Keyed {
    let top = axis_top(max);
    let mut step = 1.0;
    for _ in 0..400 {
        if top / step < 10.0 {
            break;
        }
        step *= 10.0;
    }
    for _ in 0..400 {
        if top / step >= 1.0 {
            break;
        }
        step /= 10.0;
    }
    let q = top / step;
    // Four to eight ticks.
    let step = if q < 1.5 {
        step * 0.2
    } else if q < 3.5 {
        step * 0.5
    } else if q < 7.5 {
        step
    } else {
        step * 2.0
    };
    let mut keys = Vec::new();
    let mut k = 0.0;
    while k * step <= top && keys.len() < 12 {
        keys.push(k * step);
        k += 1.0;
    }
    keyed(0.0..top, keys)
}

fn keyed(range: std::ops::Range<f64>, keys: Vec<f64>) -> Keyed {
    Keyed {
        lo: range.start,
        hi: range.end,
        keys,
    }
}

/// The label of the category whose centre is at `v` on a keyed axis (none between them).
fn label_at(centers: &[f64], labels: &[String], v: f64) -> String {
    centers
        .iter()
        .position(|c| (c - v).abs() < 0.01)
        .and_then(|i| labels.get(i))
        .cloned()
        .unwrap_or_default()
}

fn to_u32(v: i32) -> u32 {
    u32::try_from(v.max(1)).unwrap_or(1)
}

// ---------------------------------------------------------------------------------------
// stacked bars against a capacity

/// A capacity line: what it is (`RTX 4090`) and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Capacity {
    pub label: String,
    pub bytes: u128,
}

/// One stacked bar: its label, one value per item, the total printed on top, a capacity.
#[derive(Debug, Clone)]
pub(crate) struct Column {
    pub label: String,
    pub values: Vec<u128>,
    pub total: u128,
    pub capacity: Option<Capacity>,
}

/// Vertical stacked bars (items bottom up), a dashed capacity line, and under them a table:
/// one row per item, one exact number per bar, in the bar's column.
#[derive(Debug, Clone)]
pub(crate) struct Stacked {
    pub header: Header,
    pub axis: String,
    /// The items, bottom of the stack first, with their colours.
    pub items: Vec<(String, RGBColor)>,
    pub columns: Vec<Column>,
    /// The label of the totals row (`per GPU`).
    pub total_label: String,
    pub notes: Vec<String>,
}

impl Stacked {
    pub(crate) fn svg(&self, scale_of: fn(u128) -> Scale) -> Result<String, ChartError> {
        bound("bars", self.columns.len(), MAX_SERIES)?;
        let fonts = Fonts::new()?;
        let labels: Vec<String> = self.columns.iter().map(|c| clip(&c.label)).collect();
        // Rows of the table: the items any bar has, then the total, then the capacity.
        let shown: Vec<usize> = (0..self.items.len())
            .filter(|i| {
                self.columns
                    .iter()
                    .any(|c| c.values.get(*i).is_some_and(|v| *v > 0))
            })
            .collect();
        let has_cap = self.columns.iter().any(|c| c.capacity.is_some());
        let mut row_labels: Vec<String> = shown
            .iter()
            .filter_map(|i| self.items.get(*i).map(|(n, _)| n.clone()))
            .collect();
        row_labels.push(self.total_label.clone());
        if has_cap {
            row_labels.push("GPU memory".to_owned());
        }
        let cells: Vec<Vec<String>> = self
            .columns
            .iter()
            .map(|c| {
                let mut v: Vec<String> = shown
                    .iter()
                    .map(|i| thousands_u128(c.values.get(*i).copied().unwrap_or(0)))
                    .collect();
                v.push(thousands_u128(c.total));
                if has_cap {
                    v.push(
                        c.capacity
                            .as_ref()
                            .map_or_else(|| "-".to_owned(), |k| thousands_u128(k.bytes)),
                    );
                }
                v
            })
            .collect();
        let label_w = fonts.widest(TEXT, row_labels.iter().map(String::as_str))? + 40;
        let cell_w = fonts.widest(TEXT, cells.iter().flatten().map(String::as_str))?;
        let axis_label_w = fonts.widest(TEXT, labels.iter().map(String::as_str))?;
        let slot = (cell_w + 24).max(axis_label_w + 16).max(130);
        let n = count(self.columns.len().max(1));
        let plot_left = label_w.max(90);
        // As wide as the bars need (a lone bar is not stretched over the page), the header
        // and notes, and at least a small chart.
        let head_w = header_width(&fonts, &self.header, &self.notes)?;
        let width = (plot_left + n * slot + 40).max(head_w + 40).max(600);
        let plot_h = 380;
        let top = header_height(&self.header);
        let x_area = 34;
        let chart_h = 10 + plot_h + x_area;
        let table_h = 10 + (LINE + 3) * count(row_labels.len());
        let height = top + chart_h + table_h + notes_height(&self.notes);

        let max = self
            .columns
            .iter()
            .flat_map(|c| std::iter::once(c.total).chain(c.capacity.as_ref().map(|k| k.bytes)))
            .max()
            .unwrap_or(0);
        let scale = scale_of(max);
        let centers: Vec<f64> = (0..self.columns.len()).map(|i| f(count(i)) + 0.5).collect();

        let mut buf = String::new();
        {
            let root = SVGBackend::with_string(&mut buf, (to_u32(width), to_u32(height)))
                .into_drawing_area();
            root.fill(&WHITE).map_err(fail)?;
            header(&root, &fonts, &self.header)?;
            let (_, rest) = root.split_vertically(top);
            let (chart_area, _) = rest.split_vertically(chart_h);
            let label_of = |v: &f64| label_at(&centers, &labels, *v);
            let mut chart = ChartBuilder::on(&chart_area)
                .margin_top(10)
                .margin_right(40)
                .x_label_area_size(x_area)
                .y_label_area_size(plot_left)
                .build_cartesian_2d(keyed(0.0..f(n), centers.clone()), value_axis(scale.of(max)))
                .map_err(fail)?;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .x_label_formatter(&label_of)
                .y_label_formatter(&|v| tick(*v))
                .y_desc(format!("{} ({})", self.axis, scale.name))
                .label_style(fonts.style(TEXT, BLACK, HPos::Center, VPos::Center))
                .axis_desc_style(fonts.style(TEXT, GREY, HPos::Center, VPos::Center))
                .light_line_style(WHITE)
                .bold_line_style(RGBColor(0xe4, 0xe4, 0xe4))
                .draw()
                .map_err(fail)?;
            // Bars take 56% of their slot, and at most 180 px (a lone bar stays a bar).
            let slot_px = f(width - plot_left - 40) / f(n);
            let half = (90.0 / slot_px).min(0.28);
            let inside = fonts.style(SMALL, WHITE, HPos::Center, VPos::Center);
            let above = fonts.style(TEXT, BLACK, HPos::Center, VPos::Bottom);
            for (i, c) in self.columns.iter().enumerate() {
                let (x0, x1) = (f(count(i)) + 0.5 - half, f(count(i)) + 0.5 + half);
                let mut acc: u128 = 0;
                for (k, (_, color)) in self.items.iter().enumerate() {
                    let v = c.values.get(k).copied().unwrap_or(0);
                    if v == 0 {
                        continue;
                    }
                    let (b, t) = (scale.of(acc), scale.of(acc.saturating_add(v)));
                    acc = acc.saturating_add(v);
                    chart
                        .draw_series(std::iter::once(Rectangle::new(
                            [(x0, b), (x1, t)],
                            color.filled(),
                        )))
                        .map_err(fail)?;
                    // The value in the unit on the segment itself, when it has room.
                    let (px0, py0) = chart.backend_coord(&(x0, b));
                    let (px1, py1) = chart.backend_coord(&(x1, t));
                    let label = format!("{} {}", short(scale.of(v)), scale.name);
                    if py0 - py1 >= 17 && fonts.width(SMALL, &label)? + 6 <= px1 - px0 {
                        text(
                            &root,
                            &label,
                            (i32::midpoint(px0, px1), i32::midpoint(py0, py1)),
                            &inside,
                        )?;
                    }
                }
                let (pcx, ptop) = chart.backend_coord(&(f(count(i)) + 0.5, scale.of(c.total)));
                text(
                    &root,
                    &format!("{} {}", short(scale.of(c.total)), scale.name),
                    (pcx, ptop - 3),
                    &above,
                )?;
            }
            // Capacity: one line across when every bar has the same, else one per bar.
            let caps: Vec<Option<&Capacity>> =
                self.columns.iter().map(|c| c.capacity.as_ref()).collect();
            let same = caps
                .first()
                .copied()
                .flatten()
                .filter(|first| caps.iter().all(|c| c.is_some_and(|k| k == *first)));
            let line = CAPACITY.stroke_width(2);
            if let Some(k) = same {
                let y = scale.of(k.bytes);
                chart
                    .draw_series(DashedLineSeries::new([(0.0, y), (f(n), y)], 9, 5, line))
                    .map_err(fail)?;
                let (px, py) = chart.backend_coord(&(f(n), y));
                cap_label(
                    &root,
                    &fonts,
                    &format!("{}: {} {}", k.label, short(y), scale.name),
                    (px - 4, py),
                )?;
            } else {
                for (i, k) in caps.iter().enumerate() {
                    if let Some(k) = k {
                        let y = scale.of(k.bytes);
                        let (x0, x1) = (f(count(i)) + 0.08, f(count(i)) + 0.92);
                        chart
                            .draw_series(DashedLineSeries::new([(x0, y), (x1, y)], 7, 4, line))
                            .map_err(fail)?;
                        let (px, py) = chart.backend_coord(&(x1, y));
                        cap_label(&root, &fonts, &clip(&k.label), (px, py))?;
                    }
                }
            }
            // The table: a row per item (its swatch is the legend), a column per bar.
            let row_style = fonts.style(TEXT, BLACK, HPos::Left, VPos::Center);
            let cell_style = fonts.style(TEXT, BLACK, HPos::Center, VPos::Center);
            let y0 = top + chart_h + 10;
            for (r, label) in row_labels.iter().enumerate() {
                let y = y0 + count(r) * (LINE + 3) + LINE / 2;
                let color = shown
                    .get(r)
                    .and_then(|i| self.items.get(*i))
                    .map(|(_, c)| *c);
                match color {
                    Some(c) => root
                        .draw(&Rectangle::new([(16, y - 6), (28, y + 6)], c.filled()))
                        .map_err(fail)?,
                    None if r + 1 == row_labels.len() && has_cap => root
                        .draw(&PathElement::new(vec![(14, y), (30, y)], line))
                        .map_err(fail)?,
                    None => {}
                }
                text(&root, label, (36, y), &row_style)?;
                for (i, col) in cells.iter().enumerate() {
                    let (cx, _) = chart.backend_coord(&(f(count(i)) + 0.5, 0.0));
                    if let Some(cell) = col.get(r) {
                        text(&root, cell, (cx, y), &cell_style)?;
                    }
                }
            }
            notes(&root, &fonts, &self.notes, top + chart_h + table_h)?;
            root.present().map_err(fail)?;
        }
        Ok(finish(buf, &self.header.title))
    }
}

// ---------------------------------------------------------------------------------------
// lines over a sweep

/// One line: its name, colour, dash, and a value at each x.
#[derive(Debug, Clone)]
pub(crate) struct Line {
    pub name: String,
    pub color: RGBColor,
    pub dashed: bool,
    /// `(x, value)`, in sweep order.
    pub points: Vec<(u64, u128)>,
}

/// Lines over a numeric sweep (a linear axis), an optional capacity, and a table of every
/// point's exact value.
#[derive(Debug, Clone)]
pub(crate) struct Lines {
    pub header: Header,
    /// The x axis (`seq_len`, `batch`).
    pub x_axis: String,
    pub y_axis: String,
    pub series: Vec<Line>,
    pub capacity: Option<Capacity>,
    pub notes: Vec<String>,
}

#[expect(clippy::cast_precision_loss, reason = "drawing only; labels are exact")]
fn as_f64(v: u64) -> f64 {
    v as f64
}

impl Lines {
    pub(crate) fn svg(&self, scale_of: fn(u128) -> Scale) -> Result<String, ChartError> {
        bound("lines", self.series.len(), 2 * MAX_SERIES)?;
        for l in &self.series {
            bound("sweep points", l.points.len(), MAX_POINTS)?;
        }
        let fonts = Fonts::new()?;
        let mut xs: Vec<u64> = self
            .series
            .iter()
            .flat_map(|l| l.points.iter().map(|(x, _)| *x))
            .collect();
        xs.sort_unstable();
        xs.dedup();
        let (lo, hi) = (
            xs.first().copied().unwrap_or(0),
            xs.last().copied().unwrap_or(1),
        );
        // A linear axis, so that memory linear in the context draws as a straight line.
        let tx = as_f64;
        let (x_min, x_max) = if hi > lo {
            (tx(lo), tx(hi))
        } else {
            (tx(lo) - 1.0, tx(lo) + 1.0)
        };
        let pad = (x_max - x_min) * 0.04;
        // Tick labels at the swept values, the largest first, each kept when it has room
        // (on a linear axis 1k, 2k and 4k crowd together beside 128k).
        let plot_w = f(WIDTH - 90 - 40);
        let label_w = f(fonts.widest(
            TEXT,
            xs.iter()
                .map(|x| llmsize_core::units::thousands(*x))
                .collect::<Vec<_>>()
                .iter()
                .map(String::as_str),
        )? + 14);
        let span = (x_max - x_min) * 1.08;
        let mut kept: Vec<u64> = Vec::new();
        for x in xs.iter().rev() {
            let at = (tx(*x) - x_min) / span * plot_w;
            if kept
                .last()
                .is_none_or(|k| (tx(*k) - x_min) / span * plot_w - at >= label_w)
            {
                kept.push(*x);
            }
        }
        kept.reverse();
        let keys: Vec<f64> = kept.iter().map(|x| tx(*x)).collect();
        let key_labels: Vec<String> = kept
            .iter()
            .map(|x| llmsize_core::units::thousands(*x))
            .collect();
        let max = self
            .series
            .iter()
            .flat_map(|l| l.points.iter().map(|(_, v)| *v))
            .chain(self.capacity.as_ref().map(|k| k.bytes))
            .max()
            .unwrap_or(0);
        let scale = scale_of(max);

        // Table: a row per x, a column per line.
        let heads: Vec<String> = self.series.iter().map(|l| clip(&l.name)).collect();
        let rows: Vec<(String, Vec<String>)> = xs
            .iter()
            .map(|x| {
                (
                    llmsize_core::units::thousands(*x),
                    self.series
                        .iter()
                        .map(|l| {
                            l.points
                                .iter()
                                .find(|(px, _)| px == x)
                                .map_or_else(|| "-".to_owned(), |(_, v)| thousands_u128(*v))
                        })
                        .collect(),
                )
            })
            .collect();
        let first_w = fonts
            .widest(TEXT, rows.iter().map(|(x, _)| x.as_str()))?
            .max(fonts.width(TEXT, &self.x_axis)?)
            + 30;
        let col_ws: Vec<i32> = (0..self.series.len())
            .map(|i| -> Result<i32, ChartError> {
                let head = heads.get(i).map_or("", String::as_str);
                let w = fonts
                    .widest(
                        TEXT,
                        rows.iter()
                            .filter_map(|(_, c)| c.get(i).map(String::as_str)),
                    )?
                    .max(fonts.width(SMALL, head)?);
                Ok(w + 24)
            })
            .collect::<Result<_, _>>()?;
        let table_w = 16 + first_w + col_ws.iter().sum::<i32>();
        let head_w = header_width(&fonts, &self.header, &self.notes)?;
        let width = WIDTH.max(table_w + 16).max(head_w + 40);
        let legend_items: Vec<(String, RGBColor)> = self
            .series
            .iter()
            .map(|l| (clip(&l.name), l.color))
            .collect();
        let legend_h = legend_height(&fonts, &legend_items, width)?;
        let top = header_height(&self.header) + legend_h;
        let chart_h = 10 + 360 + 52;
        let table_h = 16 + (LINE + 2) * count(rows.len() + 1);
        let height = top + chart_h + table_h + notes_height(&self.notes);

        let mut buf = String::new();
        {
            let root = SVGBackend::with_string(&mut buf, (to_u32(width), to_u32(height)))
                .into_drawing_area();
            root.fill(&WHITE).map_err(fail)?;
            let below = header(&root, &fonts, &self.header)?;
            let dashes: Vec<bool> = self.series.iter().map(|l| l.dashed).collect();
            legend(&root, &fonts, &legend_items, Some(&dashes), below, width)?;
            let (_, rest) = root.split_vertically(top);
            let (chart_area, _) = rest.split_vertically(chart_h);
            let label_of = |v: &f64| -> String {
                keys.iter()
                    .position(|c| (c - v).abs() < 1e-9)
                    .and_then(|i| key_labels.get(i))
                    .cloned()
                    .unwrap_or_default()
            };
            let mut chart = ChartBuilder::on(&chart_area)
                .margin_top(10)
                .margin_right(40)
                .x_label_area_size(52)
                .y_label_area_size(90)
                .build_cartesian_2d(
                    keyed((x_min - pad)..(x_max + pad), keys.clone()),
                    value_axis(scale.of(max)),
                )
                .map_err(fail)?;
            chart
                .configure_mesh()
                .x_label_formatter(&label_of)
                .y_label_formatter(&|v| tick(*v))
                .x_desc(self.x_axis.clone())
                .y_desc(format!("{} ({})", self.y_axis, scale.name))
                .label_style(fonts.style(TEXT, BLACK, HPos::Center, VPos::Center))
                .axis_desc_style(fonts.style(TEXT, GREY, HPos::Center, VPos::Center))
                .light_line_style(WHITE)
                .bold_line_style(RGBColor(0xe4, 0xe4, 0xe4))
                .draw()
                .map_err(fail)?;
            for l in &self.series {
                let pts: Vec<(f64, f64)> = l
                    .points
                    .iter()
                    .map(|(x, v)| (tx(*x), scale.of(*v)))
                    .collect();
                let style = l.color.stroke_width(2);
                if l.dashed {
                    chart
                        .draw_series(DashedLineSeries::new(pts.clone(), 8, 5, style))
                        .map_err(fail)?;
                } else {
                    chart
                        .draw_series(LineSeries::new(pts.clone(), style))
                        .map_err(fail)?;
                }
                // A dot on each point while they are few enough to tell apart.
                if pts.len() <= 40 {
                    chart
                        .draw_series(pts.iter().map(|p| Circle::new(*p, 3, l.color.filled())))
                        .map_err(fail)?;
                }
            }
            if let Some(k) = &self.capacity {
                let y = scale.of(k.bytes);
                chart
                    .draw_series(DashedLineSeries::new(
                        [(x_min - pad, y), (x_max + pad, y)],
                        9,
                        5,
                        CAPACITY.stroke_width(2),
                    ))
                    .map_err(fail)?;
                let (px, py) = chart.backend_coord(&(x_max + pad, y));
                cap_label(
                    &root,
                    &fonts,
                    &format!("{}: {} {}", k.label, short(y), scale.name),
                    (px - 4, py),
                )?;
            }
            // The table.
            let y0 = top + chart_h + 8;
            let head_style = fonts.style(SMALL, GREY, HPos::Right, VPos::Center);
            let cell_style = fonts.style(TEXT, BLACK, HPos::Right, VPos::Center);
            text(
                &root,
                &self.x_axis,
                (16 + first_w - 30, y0 + LINE / 2),
                &fonts.style(SMALL, GREY, HPos::Right, VPos::Center),
            )?;
            let mut x = 16 + first_w;
            let mut col_x = Vec::new();
            for (i, w) in col_ws.iter().enumerate() {
                x += w;
                col_x.push(x - 12);
                if let Some(h) = heads.get(i) {
                    text(&root, h, (x - 12, y0 + LINE / 2), &head_style)?;
                }
            }
            for (r, (xl, cells)) in rows.iter().enumerate() {
                let y = y0 + (count(r) + 1) * (LINE + 2) + LINE / 2;
                text(&root, xl, (16 + first_w - 30, y), &cell_style)?;
                for (c, cell) in cells.iter().enumerate() {
                    if let Some(cx) = col_x.get(c) {
                        text(&root, cell, (*cx, y), &cell_style)?;
                    }
                }
            }
            notes(&root, &fonts, &self.notes, top + chart_h + table_h)?;
            root.present().map_err(fail)?;
        }
        Ok(finish(buf, &self.header.title))
    }
}

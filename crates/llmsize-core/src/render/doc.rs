//! One document, several exporters: every command builds a [`Doc`] from its typed report
//! (titles, tables with named columns, notes), and the same `Doc` renders as a terminal table
//! ([`Doc::to_text`]), Markdown ([`Doc::to_markdown`]) or CSV ([`Doc::to_csv`]), as hyperfine's
//! `export/` renders one set of results several ways. A renderer never formats for one
//! exporter: it says what a cell *is* (a count, bytes, a share, words) and each exporter
//! decides how to show it.
//!
//! Why a document and not strings: the terminal table has to fit the reader's width (long
//! formula columns fold under their row), Markdown needs the same columns with a header, and
//! CSV needs the plain numbers behind `6,738,415,616` or `12.55 GiB`. Only the renderer knows
//! both the words and the number, so it puts both in the [`Cell`].

use std::fmt::Write as _;

use crate::units::{human_bytes, thousands, thousands_u128};

/// How a column's cells line up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Words: names, formulas.
    Left,
    /// Numbers.
    Right,
}

/// How a piece of text is emphasised on a colour terminal (nothing elsewhere).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tone {
    /// As is.
    #[default]
    Plain,
    /// A title or a total.
    Strong,
    /// A good verdict: fits, agrees.
    Good,
    /// A bad verdict: does not fit, disagrees.
    Bad,
    /// Caution: an estimate, a warning in the output.
    Warn,
    /// Secondary: formulas, sources.
    Dim,
}

/// A number behind a cell, written as is in CSV.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Raw {
    /// An exact integer (parameters, bytes, FLOPs).
    Int(i128),
    /// A measured or derived quantity (seconds, a share as a fraction, TFLOP/s).
    Float(f64),
    /// No value (a price not given, a decode step an encoder has not): an empty CSV field,
    /// never a `-` in a column of numbers.
    Missing,
}

impl std::fmt::Display for Raw {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Raw::Int(n) => write!(f, "{n}"),
            // `{}` of an f64 is the shortest text that reads back to the same number.
            Raw::Float(x) => write!(f, "{x}"),
            Raw::Missing => Ok(()),
        }
    }
}

/// One cell: the text people read, and the number behind it when there is one.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Cell {
    /// What the terminal and Markdown show.
    pub text: String,
    /// What CSV writes instead of `text`, when set.
    pub raw: Option<Raw>,
    /// Emphasis on a colour terminal.
    pub tone: Tone,
    /// Shorter words for a terminal too narrow for the table (`12.55 GiB` for `12.55 GiB
    /// (13.48 GB)`): used, for every cell that has them, before a table is split.
    pub short: Option<String>,
}

impl Cell {
    /// Words (or a number already formatted, with nothing plainer behind it).
    #[must_use]
    pub fn text(text: impl Into<String>) -> Self {
        Cell {
            text: text.into(),
            raw: None,
            tone: Tone::Plain,
            short: None,
        }
    }

    /// An empty cell.
    #[must_use]
    pub fn empty() -> Self {
        Cell::default()
    }

    /// No value: `-` for people, an empty field in CSV.
    #[must_use]
    pub fn dash() -> Self {
        Cell::text("-").raw(Raw::Missing)
    }

    /// An exact count shown with thousands separators: `6,738,415,616`.
    #[must_use]
    pub fn count(n: u64) -> Self {
        Cell::text(thousands(n)).raw(Raw::Int(i128::from(n)))
    }

    /// A large exact count (FLOPs): `1,234,567,890,123`.
    #[must_use]
    pub fn count_u128(n: u128) -> Self {
        let raw = i128::try_from(n).map_or(Raw::Float(u128_to_f64(n)), Raw::Int);
        Cell::text(thousands_u128(n)).raw(raw)
    }

    /// A share of a whole (`30.06%`), with the fraction behind it for CSV. Any size: a share
    /// of a FLOP count past 2⁶⁴ is scaled into 64 bits first, which a share never notices.
    #[must_use]
    pub fn share(part: impl Into<u128>, whole: impl Into<u128>) -> Self {
        let (part, whole) = (part.into(), whole.into());
        // Never floored at the first step: at most 128 leading zeros.
        let shift = u128::BITS
            .saturating_sub(whole.leading_zeros())
            .saturating_sub(60);
        let (p, w) = (
            u64::try_from(part >> shift).unwrap_or(u64::MAX),
            u64::try_from(whole >> shift).unwrap_or(u64::MAX),
        );
        #[expect(clippy::cast_precision_loss, reason = "a share is a ratio for display")]
        let fraction = if w == 0 { 0.0 } else { p as f64 / w as f64 };
        Cell::with_raw(crate::units::share(p, w), Raw::Float(fraction))
    }

    /// Bytes in a scaled binary unit (`512 B`, `4.00 MiB`, `12.55 GiB`); CSV gets the bytes.
    #[must_use]
    pub fn bytes(n: u64) -> Self {
        Cell::text(human_bytes(n)).raw(Raw::Int(i128::from(n)))
    }

    /// Bytes with the decimal unit beside (`12.55 GiB (13.48 GB)`), binary alone on a
    /// terminal too narrow for the table; CSV gets the bytes.
    #[must_use]
    pub fn bytes_both(n: u64) -> Self {
        Cell::text(crate::units::bytes_both(n))
            .raw(Raw::Int(i128::from(n)))
            .short(human_bytes(n))
    }

    /// Shorter words for a narrow terminal.
    #[must_use]
    pub fn short(mut self, text: impl Into<String>) -> Self {
        self.short = Some(text.into());
        self
    }

    /// Any text with the number behind it.
    #[must_use]
    pub fn with_raw(text: impl Into<String>, raw: Raw) -> Self {
        Cell::text(text).raw(raw)
    }

    /// Set the number behind the text.
    #[must_use]
    pub fn raw(mut self, raw: Raw) -> Self {
        self.raw = Some(raw);
        self
    }

    /// Show other words for the same number.
    #[must_use]
    pub fn text_as(mut self, text: impl Into<String>) -> Self {
        self.text = text.into();
        self
    }

    /// Set the emphasis.
    #[must_use]
    pub fn tone(mut self, tone: Tone) -> Self {
        self.tone = tone;
        self
    }

    fn width(&self) -> usize {
        self.text.chars().count()
    }
}

impl From<String> for Cell {
    fn from(s: String) -> Self {
        Cell::text(s)
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Self {
        Cell::text(s)
    }
}

#[expect(
    clippy::cast_precision_loss,
    reason = "only past i128::MAX, which no count reaches"
)]
fn u128_to_f64(n: u128) -> f64 {
    n as f64
}

/// A column: its header, alignment, and whether its text may move under the row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// The header, in every exporter (CSV's header too, unless `csv_name` is set).
    pub name: String,
    /// How cells line up on a terminal and in Markdown.
    pub align: Align,
    /// Long words (formulas, "what" explanations): on a narrow terminal they leave the row
    /// and are printed, wrapped, under it.
    pub fold: bool,
    /// The CSV header where the plain number needs its unit said (`bytes` for a column of
    /// `12.55 GiB`).
    pub csv_name: Option<String>,
}

impl Column {
    /// A left-aligned column of words.
    #[must_use]
    pub fn left(name: impl Into<String>) -> Self {
        Column {
            name: name.into(),
            align: Align::Left,
            fold: false,
            csv_name: None,
        }
    }

    /// A right-aligned column of numbers.
    #[must_use]
    pub fn right(name: impl Into<String>) -> Self {
        Column {
            align: Align::Right,
            ..Column::left(name)
        }
    }

    /// A left-aligned column of long words that fold under the row on a narrow terminal.
    #[must_use]
    pub fn fold(name: impl Into<String>) -> Self {
        Column {
            fold: true,
            ..Column::left(name)
        }
    }

    /// Name the plain numbers' unit in CSV's header.
    #[must_use]
    pub fn csv(mut self, name: impl Into<String>) -> Self {
        self.csv_name = Some(name.into());
        self
    }
}

/// A table: a name (CSV's `section`), columns with headers, rows of cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// What the rows are (`components`, `estimates`, `gpus`): CSV's first column.
    pub name: String,
    /// The columns, each with its header.
    pub columns: Vec<Column>,
    /// The rows; a row shorter than the columns leaves the rest empty.
    pub rows: Vec<Vec<Cell>>,
    /// Print the header row on a terminal (Markdown and CSV always have one). Off only for
    /// tables whose first line already names every column (a side-by-side comparison's
    /// model names are its header).
    pub header: bool,
    /// What the cells' short words leave out, said once under the table when they are used
    /// (the GPU a comparison's `yes`/`no` are on).
    pub short_note: Option<String>,
}

impl Table {
    /// An empty table with these columns.
    #[must_use]
    pub fn new(name: impl Into<String>, columns: Vec<Column>) -> Self {
        Table {
            name: name.into(),
            columns,
            rows: Vec::new(),
            header: true,
            short_note: None,
        }
    }

    /// Add a row.
    pub fn push(&mut self, row: Vec<Cell>) {
        self.rows.push(row);
    }

    fn cell(&self, row: usize, col: usize) -> Option<&Cell> {
        self.rows.get(row).and_then(|r| r.get(col))
    }

    /// The table with every cell's short words, if any cell has them.
    fn shortened(&self) -> Option<Table> {
        if !self.rows.iter().flatten().any(|c| c.short.is_some()) {
            return None;
        }
        let mut t = self.clone();
        for cell in t.rows.iter_mut().flatten() {
            if let Some(short) = cell.short.take() {
                cell.text = short;
            }
        }
        Some(t)
    }
}

/// A part of a document.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// The document's title line (a model and where it came from).
    Title(String),
    /// A section heading (`quick estimates`, `assumed (not in the input)`).
    Heading(String),
    /// A table.
    Table(Table),
    /// Lines of prose: notes, assumptions, a verdict. Leading spaces are kept on a terminal
    /// and wrapped lines keep them.
    Lines(Vec<(String, Tone)>),
    /// An empty line between parts (a terminal and Markdown; nothing in CSV).
    Blank,
    /// Text laid out by its renderer (a derivation, `--explain`): printed as is on a
    /// terminal, in a code block in Markdown, left out of CSV.
    Pre(String),
}

/// A document: what a command prints, before it is printed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Doc {
    /// The parts, in order.
    pub blocks: Vec<Block>,
}

/// How the terminal table is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TextOptions {
    /// The terminal's width: tables fold their long columns, then split, to fit it. `None`
    /// (output to a file or pipe, or `--wide`): one line per row, however long.
    pub width: Option<usize>,
    /// ANSI colour (a terminal without `NO_COLOR`).
    pub color: bool,
}

/// Indent of a folded cell under its row.
const FOLD_INDENT: usize = 4;
/// Below this, a terminal is not worth fitting: print rows whole.
const MIN_WIDTH: usize = 20;

impl Doc {
    /// An empty document.
    #[must_use]
    pub fn new() -> Self {
        Doc::default()
    }

    /// Add a title line.
    pub fn title(&mut self, text: impl Into<String>) -> &mut Self {
        self.blocks.push(Block::Title(text.into()));
        self
    }

    /// Add a section heading.
    pub fn heading(&mut self, text: impl Into<String>) -> &mut Self {
        self.blocks.push(Block::Heading(text.into()));
        self
    }

    /// Add a table.
    pub fn table(&mut self, table: Table) -> &mut Self {
        self.blocks.push(Block::Table(table));
        self
    }

    /// Add one line of prose.
    pub fn line(&mut self, text: impl Into<String>) -> &mut Self {
        self.toned(text, Tone::Plain)
    }

    /// Add one line of prose with an emphasis.
    pub fn toned(&mut self, text: impl Into<String>, tone: Tone) -> &mut Self {
        let line = (text.into(), tone);
        if let Some(Block::Lines(lines)) = self.blocks.last_mut() {
            lines.push(line);
        } else {
            self.blocks.push(Block::Lines(vec![line]));
        }
        self
    }

    /// Add an empty line.
    pub fn blank(&mut self) -> &mut Self {
        self.blocks.push(Block::Blank);
        self
    }

    /// Add text laid out by its renderer.
    pub fn pre(&mut self, text: impl Into<String>) -> &mut Self {
        self.blocks.push(Block::Pre(text.into()));
        self
    }

    /// Append another document (several models, one after the other).
    pub fn extend(&mut self, other: Doc) -> &mut Self {
        self.blocks.extend(other.blocks);
        self
    }

    /// The terminal text: one line per row when `width` is `None`; else long columns fold
    /// under their rows and wide tables split into column groups, each repeating the first
    /// column, so that no line passes `width` (but for a single word longer than the width).
    #[must_use]
    pub fn to_text(&self, options: &TextOptions) -> String {
        let width = options.width.filter(|w| *w >= MIN_WIDTH);
        let paint = Painter { on: options.color };
        let mut out = String::new();
        for block in &self.blocks {
            match block {
                Block::Title(t) | Block::Heading(t) => {
                    for l in wrap(t, width, 0) {
                        let _ = writeln!(out, "{}", paint.tone(&l, Tone::Strong));
                    }
                }
                Block::Lines(lines) => {
                    for (l, tone) in lines {
                        for w in wrap(l, width, FOLD_INDENT) {
                            let _ = writeln!(out, "{}", paint.tone(&w, *tone));
                        }
                    }
                }
                Block::Blank => out.push('\n'),
                // A derivation keeps its layout; only a line past the width wraps, its
                // continuation indented under it.
                Block::Pre(text) => {
                    for l in text.lines() {
                        for w in wrap(l, width, FOLD_INDENT) {
                            let _ = writeln!(out, "{w}");
                        }
                    }
                }
                Block::Table(t) => out.push_str(&table_text(t, width, paint)),
            }
        }
        out
    }

    /// GitHub-flavoured Markdown: the same columns as the terminal table, every table with
    /// its header row, never folded.
    #[must_use]
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        let mut previous_blank = true;
        for block in &self.blocks {
            match block {
                Block::Title(t) => {
                    ensure_blank(&mut out, previous_blank);
                    let _ = writeln!(out, "### {}\n", md_escape(t.trim()));
                }
                Block::Heading(t) => {
                    ensure_blank(&mut out, previous_blank);
                    let _ = writeln!(out, "**{}**\n", md_escape(t.trim()));
                }
                Block::Lines(lines) => {
                    ensure_blank(&mut out, previous_blank);
                    for (l, _) in lines {
                        let _ = writeln!(out, "- {}", md_escape(l.trim()));
                    }
                    out.push('\n');
                }
                Block::Blank => {}
                Block::Pre(text) => {
                    ensure_blank(&mut out, previous_blank);
                    let _ = writeln!(out, "```text\n{}\n```\n", text.trim_end());
                }
                Block::Table(t) => {
                    ensure_blank(&mut out, previous_blank);
                    out.push_str(&table_markdown(t));
                    out.push('\n');
                }
            }
            previous_blank = out.ends_with("\n\n") || out.is_empty();
        }
        while out.ends_with("\n\n") {
            out.pop();
        }
        out
    }

    /// CSV: one row per line item of every table, the plain number where a cell has one.
    /// The header is `section` (the table's name) and then every column name of every table
    /// in order of appearance, so that one file holds all the tables with one header; a
    /// table leaves the others' columns empty. Prose is not data and is left out.
    #[must_use]
    pub fn to_csv(&self) -> String {
        let tables: Vec<&Table> = self
            .blocks
            .iter()
            .filter_map(|b| match b {
                Block::Table(t) => Some(t),
                _ => None,
            })
            .collect();
        let mut header: Vec<String> = vec!["section".to_owned()];
        for t in &tables {
            for c in &t.columns {
                let name = c.csv_name.clone().unwrap_or_else(|| csv_header(&c.name));
                if !header.contains(&name) {
                    header.push(name);
                }
            }
        }
        let mut out = csv_line(header.iter().map(String::as_str));
        for t in &tables {
            let positions: Vec<usize> = t
                .columns
                .iter()
                .map(|c| {
                    let name = c.csv_name.clone().unwrap_or_else(|| csv_header(&c.name));
                    header.iter().position(|h| *h == name).unwrap_or(0)
                })
                .collect();
            for row in &t.rows {
                let mut line = vec![String::new(); header.len()];
                if let Some(first) = line.first_mut() {
                    first.clone_from(&t.name);
                }
                for (cell, pos) in row.iter().zip(&positions) {
                    if let Some(slot) = line.get_mut(*pos) {
                        *slot = cell
                            .raw
                            .map_or_else(|| cell.text.trim().to_owned(), |r| r.to_string());
                    }
                }
                out.push_str(&csv_line(line.iter().map(String::as_str)));
            }
        }
        out
    }
}

/// A column header as a CSV name: the words, with an unnamed column (a comparison's row
/// labels) called `item`.
fn csv_header(name: &str) -> String {
    let name = name.trim();
    if name.is_empty() {
        "item".to_owned()
    } else {
        name.to_owned()
    }
}

fn csv_line<'a>(fields: impl Iterator<Item = &'a str>) -> String {
    let mut writer = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    // Writing to a Vec cannot fail; an empty line is the harmless fallback.
    if writer.write_record(fields).is_err() {
        return "\n".to_owned();
    }
    writer
        .into_inner()
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .unwrap_or_else(|| "\n".to_owned())
}

fn ensure_blank(out: &mut String, previous_blank: bool) {
    if !previous_blank && !out.is_empty() && !out.ends_with("\n\n") {
        out.push('\n');
    }
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}

fn table_markdown(t: &Table) -> String {
    let mut out = String::new();
    let header: Vec<String> = t
        .columns
        .iter()
        .map(|c| {
            if c.name.trim().is_empty() {
                " ".to_owned()
            } else {
                md_escape(&c.name)
            }
        })
        .collect();
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let rule: Vec<&str> = t
        .columns
        .iter()
        .map(|c| match c.align {
            Align::Left => ":--",
            Align::Right => "--:",
        })
        .collect();
    let _ = writeln!(out, "| {} |", rule.join(" | "));
    for (r, _) in t.rows.iter().enumerate() {
        let cells: Vec<String> = (0..t.columns.len())
            .map(|c| {
                t.cell(r, c)
                    .map_or_else(String::new, |x| md_escape(x.text.trim_end()))
            })
            .collect();
        // Markdown trims cells: keep a sub-row's indent visible.
        let cells: Vec<String> = cells
            .into_iter()
            .map(|c| {
                // A suffix's length: never floored.
                let lead = c.len().saturating_sub(c.trim_start().len());
                if lead > 0 {
                    format!("{}{}", "&nbsp;".repeat(lead), c.trim_start())
                } else {
                    c
                }
            })
            .collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out
}

/// ANSI styles for a colour terminal, nothing otherwise.
#[derive(Debug, Clone, Copy)]
struct Painter {
    on: bool,
}

impl Painter {
    fn tone(self, text: &str, tone: Tone) -> String {
        use anstyle::{AnsiColor, Style};
        if !self.on || text.is_empty() {
            return text.to_owned();
        }
        let style = match tone {
            Tone::Plain => return text.to_owned(),
            Tone::Strong => Style::new().bold(),
            Tone::Good => Style::new().fg_color(Some(AnsiColor::Green.into())).bold(),
            Tone::Bad => Style::new().fg_color(Some(AnsiColor::Red.into())).bold(),
            Tone::Warn => Style::new().fg_color(Some(AnsiColor::Yellow.into())),
            Tone::Dim => Style::new().dimmed(),
        };
        format!("{}{text}{}", style.render(), style.render_reset())
    }
}

/// Wrap `text` to `width`, continuation lines indented `extra` more than the text's own
/// leading spaces. No width: the line as is.
fn wrap(text: &str, width: Option<usize>, extra: usize) -> Vec<String> {
    let Some(width) = width else {
        return vec![text.to_owned()];
    };
    if text.chars().count() <= width {
        return vec![text.to_owned()];
    }
    // Widths of text in memory: the subtraction takes a suffix, the sum is bounded by `min`.
    let lead = text
        .len()
        .saturating_sub(text.trim_start_matches(' ').len());
    let indent = " ".repeat(lead);
    // saturates: harmless, bounded by `min` with the width.
    let next = " ".repeat(lead.saturating_add(extra).min(width / 2));
    let options = textwrap::Options::new(width)
        .initial_indent(&indent)
        .subsequent_indent(&next)
        .break_words(false);
    textwrap::wrap(text.trim_start_matches(' '), options)
        .into_iter()
        .map(std::borrow::Cow::into_owned)
        .collect()
}

/// The width of each column over the header (when shown) and the cells.
fn widths(t: &Table) -> Vec<usize> {
    (0..t.columns.len())
        .map(|c| {
            let header = if t.header {
                t.columns.get(c).map_or(0, |x| x.name.chars().count())
            } else {
                0
            };
            (0..t.rows.len())
                .filter_map(|r| t.cell(r, c))
                .map(Cell::width)
                .max()
                .unwrap_or(0)
                .max(header)
        })
        .collect()
}

/// The columns' widths and two spaces between each (widths of text in memory: the sums
/// saturate only past `usize::MAX` characters, which no table holds).
// saturates: a width of columns of text in memory, compared with the terminal's; never data.
fn line_width(widths: &[usize], shown: &[usize]) -> usize {
    let sum = shown
        .iter()
        .filter_map(|c| widths.get(*c))
        .fold(0usize, |a, w| a.saturating_add(*w)); // saturates: see above
    sum.saturating_add(shown.len().saturating_sub(1).saturating_mul(2)) // saturates: see above
}

/// The columns kept on the row and those folded under it: long words leave the row, last
/// column first, until the rest fits `limit`.
fn fold_plan(t: &Table, w: &[usize], limit: usize) -> (Vec<usize>, Vec<usize>) {
    let mut shown: Vec<usize> = (0..t.columns.len()).collect();
    let mut folded = Vec::new();
    for c in (0..t.columns.len()).rev() {
        if line_width(w, &shown) <= limit {
            break;
        }
        if t.columns.get(c).is_some_and(|x| x.fold) && c > 0 {
            shown.retain(|x| *x != c);
            folded.insert(0, c);
        }
    }
    (shown, folded)
}

fn table_text(t: &Table, width: Option<usize>, paint: Painter) -> String {
    let all: Vec<usize> = (0..t.columns.len()).collect();
    let Some(limit) = width else {
        return table_lines(t, &widths(t), &all, &[], None, paint);
    };
    // 0. Too wide even with the long words under the rows: the cells' short words, and the
    // note of what they leave out.
    let (shown, _) = fold_plan(t, &widths(t), limit);
    if line_width(&widths(t), &shown) > limit
        && let Some(short) = t.shortened()
    {
        let mut out = fitted_table_text(&short, limit, paint);
        if let Some(note) = &t.short_note {
            out.push('\n');
            for l in wrap(note, Some(limit), FOLD_INDENT) {
                let _ = writeln!(out, "{l}");
            }
        }
        return out;
    }
    fitted_table_text(t, limit, paint)
}

/// A table fitted to `limit`: one line per row when it fits; else long words folded under
/// their rows; else column groups, each with the first column.
fn fitted_table_text(t: &Table, limit: usize, paint: Painter) -> String {
    let w = widths(t);
    let all: Vec<usize> = (0..t.columns.len()).collect();
    if line_width(&w, &all) <= limit {
        return table_lines(t, &w, &all, &[], Some(limit), paint);
    }
    // 1. Long words leave the row, last column first, until the rest fits.
    let (shown, folded) = fold_plan(t, &w, limit);
    // A narrow row with one long last column (`#  command`): the words hang beside the row,
    // wrapped under their own start, rather than under a row that would be nearly empty.
    let left = line_width(&w, &shown);
    if let [last] = folded.as_slice()
        && Some(*last) == t.columns.len().checked_sub(1)
        // saturates: harmless, a bound compared with `limit`.
        && left.saturating_mul(3) <= limit
    {
        return table_hanging(t, &w, &shown, *last, limit, paint);
    }
    if left <= limit {
        return table_lines(t, &w, &shown, &folded, Some(limit), paint);
    }
    // 2. Still too wide (many models side by side): groups of columns, each with the first.
    let mut out = String::new();
    let mut rest: Vec<usize> = shown.iter().copied().filter(|c| *c > 0).collect();
    let mut first_group = true;
    while !rest.is_empty() {
        let mut group = vec![0];
        while let Some(&c) = rest.first() {
            group.push(c);
            if group.len() > 2 && line_width(&w, &group) > limit {
                group.pop();
                break;
            }
            rest.remove(0);
        }
        if !first_group {
            out.push('\n');
        }
        let fold_here: &[usize] = if first_group { &folded } else { &[] };
        out.push_str(&table_lines(t, &w, &group, fold_here, Some(limit), paint));
        first_group = false;
    }
    out
}

/// Rows over the `shown` columns with the long column `hang` beside them, its words wrapped
/// under their own start.
fn table_hanging(
    t: &Table,
    w: &[usize],
    shown: &[usize],
    hang: usize,
    limit: usize,
    paint: Painter,
) -> String {
    // saturates: never, a width of text in memory.
    let left = line_width(w, shown).saturating_add(2);
    let lines = table_lines(t, w, shown, &[], None, paint);
    let mut out = String::new();
    let header = usize::from(t.header);
    for (i, row) in lines.lines().enumerate() {
        let (text, tone) = if i < header {
            (
                t.columns
                    .get(hang)
                    .map_or_else(String::new, |c| c.name.clone()),
                Tone::Strong,
            )
        } else {
            // i ≥ header here: never floored.
            t.cell(i.saturating_sub(header), hang).map_or_else(
                || (String::new(), Tone::Plain),
                |c| (c.text.trim().to_owned(), c.tone),
            )
        };
        if text.is_empty() {
            let _ = writeln!(out, "{row}");
            continue;
        }
        let pad = left.saturating_sub(row.chars().count().min(left));
        let options = textwrap::Options::new(limit.saturating_sub(left).max(MIN_WIDTH / 2))
            .break_words(false);
        for (j, piece) in textwrap::wrap(&text, options).iter().enumerate() {
            let piece = paint.tone(piece, tone);
            if j == 0 {
                let _ = writeln!(out, "{row}{}{piece}", " ".repeat(pad));
            } else {
                let _ = writeln!(out, "{}{piece}", " ".repeat(left));
            }
        }
    }
    out
}

/// Rows over the `shown` columns, each followed by its `folded` cells, wrapped under it.
fn table_lines(
    t: &Table,
    w: &[usize],
    shown: &[usize],
    folded: &[usize],
    width: Option<usize>,
    paint: Painter,
) -> String {
    let mut out = String::new();
    let line = |cells: Vec<(String, Tone)>, out: &mut String| {
        let mut text = String::new();
        for (i, ((cell, tone), c)) in cells.iter().zip(shown).enumerate() {
            if i > 0 {
                text.push_str("  ");
            }
            let width = w.get(*c).copied().unwrap_or(0);
            let pad = " ".repeat(width.saturating_sub(cell.chars().count()));
            let right = t.columns.get(*c).is_some_and(|x| x.align == Align::Right);
            let painted = paint.tone(cell, *tone);
            if right {
                text.push_str(&pad);
                text.push_str(&painted);
            } else {
                text.push_str(&painted);
                text.push_str(&pad);
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    if t.header {
        line(
            shown
                .iter()
                .map(|c| {
                    (
                        t.columns
                            .get(*c)
                            .map_or_else(String::new, |x| x.name.clone()),
                        Tone::Strong,
                    )
                })
                .collect(),
            &mut out,
        );
    }
    for r in 0..t.rows.len() {
        line(
            shown
                .iter()
                .map(|c| {
                    t.cell(r, *c).map_or_else(
                        || (String::new(), Tone::Plain),
                        |x| (x.text.clone(), x.tone),
                    )
                })
                .collect(),
            &mut out,
        );
        // A row's folded cells, joined on one line (wrapped) under it.
        let words: Vec<&str> = folded
            .iter()
            .filter_map(|c| t.cell(r, *c))
            .map(|cell| cell.text.trim())
            .filter(|w| !w.is_empty())
            .collect();
        if !words.is_empty() {
            let text = format!("{}{}", " ".repeat(FOLD_INDENT), words.join(" · "));
            for l in wrap(&text, width, 2) {
                let _ = writeln!(out, "{}", paint.tone(&l, Tone::Dim));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "tests")]
    use super::*;

    fn params_like() -> Doc {
        let mut t = Table::new(
            "components",
            vec![
                Column::left("component"),
                Column::right("parameters"),
                Column::fold("formula"),
            ],
        );
        t.push(vec![
            Cell::text("attention"),
            Cell::count(28_311_552),
            Cell::text("L·(4·d² + 4·d) where L = 12 and d = 768, the attention of every block"),
        ]);
        t.push(vec![Cell::text("total"), Cell::count(124_439_808)]);
        let mut d = Doc::new();
        d.title("gpt2").blank().table(t).line(
            "  note: a long note that goes on and on and on past any reasonable terminal width",
        );
        d
    }

    #[test]
    fn wide_is_one_line_per_row() {
        let text = params_like().to_text(&TextOptions::default());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "gpt2");
        assert_eq!(lines[2], "component   parameters  formula");
        assert!(lines[3].starts_with("attention   28,311,552  L·(4·d²"));
        assert_eq!(lines[4], "total      124,439,808");
    }

    #[test]
    fn narrow_folds_the_formula_under_its_row() {
        let text = params_like().to_text(&TextOptions {
            width: Some(40),
            color: false,
        });
        for l in text.lines() {
            assert!(l.chars().count() <= 40, "{l:?} is wider than 40");
        }
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[2], "component   parameters");
        assert_eq!(lines[3], "attention   28,311,552");
        assert!(lines[4].starts_with("    L·(4·d² + 4·d)"), "{text}");
        // The note keeps its indent and continues deeper.
        assert!(text.contains("\n  note: a long"), "{text}");
    }

    #[test]
    fn a_narrow_row_hangs_its_long_last_column_beside_it() {
        let mut t = Table::new(
            "commands",
            vec![Column::right("#"), Column::fold("command")],
        );
        t.push(vec![
            Cell::count(2),
            Cell::text(
                "llmsize params Meta-Llama-3-8B --set hidden_size=3072 --set num_hidden_layers=57",
            ),
        ]);
        let mut d = Doc::new();
        d.table(t);
        let text = d.to_text(&TextOptions {
            width: Some(50),
            color: false,
        });
        assert_eq!(
            text,
            "#  command\n2  llmsize params Meta-Llama-3-8B --set\n   hidden_size=3072 --set num_hidden_layers=57\n"
        );
    }

    #[test]
    fn many_columns_split_into_groups_with_the_first() {
        let mut t = Table::new(
            "compare",
            std::iter::once(Column::left(""))
                .chain((0..6).map(|i| Column::right(format!("model-number-{i}"))))
                .collect(),
        );
        t.push(
            std::iter::once(Cell::text("total"))
                .chain((0..6).map(|i| Cell::count(1_000_000_000 + i)))
                .collect(),
        );
        let mut d = Doc::new();
        d.table(t);
        let text = d.to_text(&TextOptions {
            width: Some(50),
            color: false,
        });
        for l in text.lines() {
            assert!(l.chars().count() <= 50, "{l:?}");
        }
        for i in 0..6 {
            assert!(text.contains(&format!("model-number-{i}")), "{text}");
            assert!(text.contains(&format!("1,000,000,00{i}")), "{text}");
        }
        assert_eq!(text.matches("total").count(), 3, "{text}");
    }

    #[test]
    fn markdown_has_the_same_columns_and_a_header() {
        let md = params_like().to_markdown();
        assert!(
            md.starts_with(
                "### gpt2\n\n| component | parameters | formula |\n| :-- | --: | :-- |\n"
            ),
            "{md}"
        );
        assert!(md.contains("| total | 124,439,808 |  |"), "{md}");
        assert!(md.contains("- note: a long note"), "{md}");
    }

    #[test]
    fn csv_writes_plain_numbers_one_row_per_item() {
        let csv = params_like().to_csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], "section,component,parameters,formula");
        assert_eq!(
            lines[1],
            "components,attention,28311552,\"L·(4·d² + 4·d) where L = 12 and d = 768, the attention of every block\""
        );
        assert_eq!(lines[2], "components,total,124439808,");
        assert_eq!(lines.len(), 3);
    }

    #[test]
    fn colour_only_when_asked() {
        let plain = params_like().to_text(&TextOptions::default());
        assert!(!plain.contains('\u{1b}'));
        let colour = params_like().to_text(&TextOptions {
            width: None,
            color: true,
        });
        assert!(colour.contains("\u{1b}[1m"), "{colour}");
        // Colour codes do not change the column layout.
        let strip = |s: &str| {
            let mut out = String::new();
            let mut skip = false;
            for ch in s.chars() {
                if ch == '\u{1b}' {
                    skip = true;
                } else if skip && ch == 'm' {
                    skip = false;
                } else if !skip {
                    out.push(ch);
                }
            }
            out
        };
        assert_eq!(strip(&colour), plain);
    }
}

//! Renderers: pure functions from a report to a [`doc::Doc`], which every text exporter
//! (terminal table, Markdown, CSV) renders; `--explain` derivations are laid-out text inside
//! one. JSON, for scripts, is the engine's typed wire format (`llmsize-engine`'s `wire`
//! module); pictures are `llmsize-charts`'.

pub mod doc;
pub mod explain;
pub mod flops;
pub mod memory;
pub mod table;

/// Lay out rows in columns; `right` marks right-aligned columns. Trailing spaces are trimmed.
/// Shared by every table renderer (also the adapters' `inspect` and `audit`).
pub fn columns(rows: &[Vec<String>], right: &[bool]) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            let width = widths.get(i).copied().unwrap_or(0);
            let pad = width.saturating_sub(cell.chars().count());
            if right.get(i).copied().unwrap_or(false) {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

//! The human table of `llmsize params`, for one model or side by side for several: a
//! [`Doc`] that prints as a terminal table, Markdown or CSV.

use super::doc::{Cell, Column, Doc, Raw, Table, TextOptions, Tone};
use crate::count::Category;
use crate::report::ParamsReport;
use crate::units::{human_count, relative};

/// An estimate against the exact count: `-31.75%`, and the fraction behind it.
fn relative_cell(estimate: u64, exact: u64) -> Cell {
    let cell = Cell::text(relative(estimate, exact));
    if exact == 0 {
        return cell;
    }
    #[expect(
        clippy::cast_precision_loss,
        reason = "a relative error is for display"
    )]
    let fraction = (estimate as f64 - exact as f64) / exact as f64;
    cell.raw(Raw::Float(fraction))
}

/// The document for one model: components with share and formula, totals, estimates,
/// assumptions.
#[must_use]
pub fn doc(report: &ParamsReport) -> Doc {
    let c = &report.count;
    let mut doc = Doc::new();
    doc.title(format!(
        "{}{}  ({}, {}; from {})",
        if report.estimate.is_some() {
            "ESTIMATE — "
        } else {
            ""
        },
        report.name,
        report.model_type,
        report.architecture,
        report.source
    ))
    .blank();
    let mut rows = Table::new(
        "components",
        vec![
            Column::left("component"),
            Column::right("parameters"),
            Column::right("share"),
            Column::fold("formula"),
        ],
    );
    let tied = report.tied_embeddings == Some(true);
    for comp in c.components.iter().filter(|x| x.count > 0) {
        let mut formula = comp.formula.symbolic();
        if tied && comp.category == Category::LmHead {
            formula.push_str("  (bias; the weight is tied to token_embedding)");
        }
        rows.push(vec![
            Cell::text(comp.category.as_str()),
            Cell::count(comp.count),
            Cell::share(comp.count, c.total),
            Cell::text(formula).tone(Tone::Dim),
        ]);
    }
    if tied && c.get(Category::LmHead) == 0 {
        rows.push(vec![
            Cell::text("lm_head"),
            Cell::count(0),
            Cell::empty(),
            Cell::text("tied to token_embedding"),
        ]);
    }
    // The share column of a subtotal shows its size in words; CSV gets its share.
    let sized = |n: u64| Cell::share(n, c.total).text_as(human_count(n));
    rows.push(vec![
        Cell::text("total").tone(Tone::Strong),
        Cell::count(c.total).tone(Tone::Strong),
        sized(c.total),
    ]);
    if let Some(why) = &report.estimate {
        rows.push(vec![
            Cell::text("  ESTIMATE").tone(Tone::Warn),
            Cell::empty(),
            Cell::empty(),
            Cell::text(why.clone()).tone(Tone::Warn),
        ]);
    }
    rows.push(vec![
        Cell::text("non-embedding"),
        Cell::count(c.non_embedding()),
        sized(c.non_embedding()),
        Cell::text("total − token, position and token-type tables"),
    ]);
    let (vision, audio) = (c.get(Category::Vision), c.get(Category::Audio));
    if vision > 0 || audio > 0 {
        // The towers are parts of the total: never floored.
        let text = c.total.saturating_sub(vision).saturating_sub(audio);
        rows.push(vec![
            Cell::text("text model"),
            Cell::count(text),
            sized(text),
            Cell::text(
                "total − vision − audio (embeddings and head included); --text-only counts it alone",
            ),
        ]);
    }
    if let Some(a) = &c.active {
        rows.push(vec![
            Cell::text("active per token"),
            Cell::count(a.per_token),
            sized(a.per_token),
            Cell::text(format!(
                "total − routed experts + {}",
                a.routed_formula.symbolic()
            )),
        ]);
        rows.push(vec![
            Cell::text("  without embedding"),
            Cell::count(a.per_token_excl_token_embedding),
            sized(a.per_token_excl_token_embedding),
            Cell::text("active − token_embedding"),
        ]);
    }
    if c.stacks.len() > 1 {
        for s in &c.stacks {
            rows.push(vec![
                Cell::text(format!("  {} ({} layers)", s.role.as_str(), s.layers)),
                Cell::count(s.params),
                sized(s.params),
                Cell::text("its layers, positions and norms"),
            ]);
        }
    }
    doc.table(rows);
    doc.blank()
        .heading("quick estimates (the article's formulas)");
    let mut est = Table::new(
        "estimates",
        vec![
            Column::fold("estimate"),
            Column::right("value"),
            Column::right("vs total"),
            Column::left("vs non-embedding"),
        ],
    );
    for e in &report.estimates {
        est.push(vec![
            Cell::text(e.formula.symbolic()),
            Cell::count(e.value),
            relative_cell(e.value, c.total),
            if e.key == "kaplan_12_l_d2" {
                relative_cell(e.value, c.non_embedding())
            } else {
                Cell::empty()
            },
        ]);
    }
    doc.table(est);
    assumptions(&mut doc, report);
    doc
}

/// `assumed (not in the input)`: the values a config left out.
pub(crate) fn assumptions(doc: &mut Doc, report: &ParamsReport) {
    if !report.assumptions.is_empty() {
        doc.blank().heading("assumed (not in the input)");
        for a in &report.assumptions {
            doc.line(format!("  {} = {}  ({})", a.field, a.value, a.reason));
        }
    }
}

pub(crate) fn render_assumptions(report: &ParamsReport) -> String {
    let mut doc = Doc::new();
    assumptions(&mut doc, report);
    doc.to_text(&TextOptions::default())
}

/// Several models side by side: one column each, the models' names as the header.
#[must_use]
pub fn comparison_doc(reports: &[ParamsReport]) -> Doc {
    let mut table = Table::new(
        "comparison",
        std::iter::once(Column::left(""))
            .chain(reports.iter().map(|r| Column::right(r.name.clone())))
            .collect(),
    );
    let line = |label: &str, f: &dyn Fn(&ParamsReport) -> Cell| -> Vec<Cell> {
        std::iter::once(Cell::text(label))
            .chain(reports.iter().map(f))
            .collect()
    };
    for category in Category::ALL {
        if reports.iter().all(|r| r.count.get(category) == 0) {
            continue;
        }
        table.push(line(category.as_str(), &|r| {
            Cell::count(r.count.get(category))
        }));
    }
    table.push(line("total", &|r| {
        Cell::count(r.count.total).tone(Tone::Strong)
    }));
    table.push(line("", &|r| Cell::text(human_count(r.count.total))));
    table.push(line("non-embedding", &|r| {
        Cell::count(r.count.non_embedding())
    }));
    if reports.iter().any(|r| r.count.active.is_some()) {
        table.push(line("active per token", &|r| {
            Cell::count(
                r.count
                    .active
                    .as_ref()
                    .map_or(r.count.total, |a| a.per_token),
            )
        }));
    }
    table.push(line("layers", &|r| {
        // saturates: only past u64::MAX layers in all (readers bound each stack by
        // MAX_LAYERS); a display.
        let layers = r
            .count
            .stacks
            .iter()
            .map(|s| s.layers)
            .fold(0, u64::saturating_add); // saturates: see above
        Cell::with_raw(layers.to_string(), Raw::Int(i128::from(layers)))
    }));
    table.push(line("hidden size d", &|r| {
        Cell::with_raw(
            r.hidden_size.to_string(),
            Raw::Int(i128::from(r.hidden_size)),
        )
    }));
    table.push(line("vocabulary V", &|r| {
        Cell::with_raw(r.vocab_size.to_string(), Raw::Int(i128::from(r.vocab_size)))
    }));
    table.push(line("tied head", &|r| {
        Cell::text(match r.tied_embeddings {
            Some(true) => "yes",
            Some(false) => "no",
            None => "no head",
        })
    }));
    let mut doc = Doc::new();
    doc.table(table);
    doc
}

//! The human table of `llmsize params`, for one model or side by side for several.

use std::fmt::Write as _;

use super::columns;
use crate::count::Category;
use crate::report::ParamsReport;
use crate::units::{human_count, relative, share, thousands};

/// The table for one model: components with share and formula, totals, estimates, assumptions.
#[must_use]
pub fn render(report: &ParamsReport) -> String {
    let c = &report.count;
    let mut out = String::new();
    let _ = writeln!(
        out,
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
    );
    out.push('\n');
    let mut rows = vec![vec![
        "component".to_owned(),
        "parameters".to_owned(),
        "share".to_owned(),
        "formula".to_owned(),
    ]];
    let tied = report.tied_embeddings == Some(true);
    for comp in c.components.iter().filter(|x| x.count > 0) {
        let mut formula = comp.formula.symbolic();
        if tied && comp.category == Category::LmHead {
            formula.push_str("  (bias; the weight is tied to token_embedding)");
        }
        rows.push(vec![
            comp.category.as_str().to_owned(),
            thousands(comp.count),
            share(comp.count, c.total),
            formula,
        ]);
    }
    if tied && c.get(Category::LmHead) == 0 {
        rows.push(vec![
            "lm_head".to_owned(),
            "0".to_owned(),
            String::new(),
            "tied to token_embedding".to_owned(),
        ]);
    }
    rows.push(vec![
        "total".to_owned(),
        thousands(c.total),
        human_count(c.total),
    ]);
    if let Some(why) = &report.estimate {
        rows.push(vec![
            "  ESTIMATE".to_owned(),
            String::new(),
            String::new(),
            why.clone(),
        ]);
    }
    rows.push(vec![
        "non-embedding".to_owned(),
        thousands(c.non_embedding()),
        human_count(c.non_embedding()),
        "total − token, position and token-type tables".to_owned(),
    ]);
    let (vision, audio) = (c.get(Category::Vision), c.get(Category::Audio));
    if vision > 0 || audio > 0 {
        let text = c.total.saturating_sub(vision).saturating_sub(audio);
        rows.push(vec![
            "text model".to_owned(),
            thousands(text),
            human_count(text),
            "total − vision − audio (embeddings and head included); --text-only counts it alone"
                .to_owned(),
        ]);
    }
    if let Some(a) = &c.active {
        rows.push(vec![
            "active per token".to_owned(),
            thousands(a.per_token),
            human_count(a.per_token),
            format!("total − routed experts + {}", a.routed_formula.symbolic()),
        ]);
        rows.push(vec![
            "  without embedding".to_owned(),
            thousands(a.per_token_excl_token_embedding),
            human_count(a.per_token_excl_token_embedding),
            "active − token_embedding".to_owned(),
        ]);
    }
    if c.stacks.len() > 1 {
        for s in &c.stacks {
            rows.push(vec![
                format!("  {} ({} layers)", s.role.as_str(), s.layers),
                thousands(s.params),
                human_count(s.params),
                "its layers, positions and norms".to_owned(),
            ]);
        }
    }
    out.push_str(&columns(&rows, &[false, true, true, false]));
    out.push_str("\nquick estimates (the article's formulas)\n");
    let mut est = Vec::new();
    for e in &report.estimates {
        est.push(vec![
            e.formula.symbolic(),
            thousands(e.value),
            format!("{} vs total", relative(e.value, c.total)),
            if e.key == "kaplan_12_l_d2" {
                format!("{} vs non-embedding", relative(e.value, c.non_embedding()))
            } else {
                String::new()
            },
        ]);
    }
    out.push_str(&columns(&est, &[false, true, true, false]));
    out.push_str(&render_assumptions(report));
    out
}

pub(crate) fn render_assumptions(report: &ParamsReport) -> String {
    let mut out = String::new();
    if !report.assumptions.is_empty() {
        out.push_str("\nassumed (not in the input)\n");
        for a in &report.assumptions {
            let _ = writeln!(out, "  {} = {}  ({})", a.field, a.value, a.reason);
        }
    }
    out
}

/// Several models side by side: one column each.
#[must_use]
pub fn render_comparison(reports: &[ParamsReport]) -> String {
    let mut rows = vec![
        std::iter::once(String::new())
            .chain(reports.iter().map(|r| r.name.clone()))
            .collect::<Vec<_>>(),
    ];
    for category in Category::ALL {
        if reports.iter().all(|r| r.count.get(category) == 0) {
            continue;
        }
        rows.push(
            std::iter::once(category.as_str().to_owned())
                .chain(reports.iter().map(|r| thousands(r.count.get(category))))
                .collect(),
        );
    }
    let line = |label: &str, f: &dyn Fn(&ParamsReport) -> String| -> Vec<String> {
        std::iter::once(label.to_owned())
            .chain(reports.iter().map(f))
            .collect()
    };
    rows.push(line("total", &|r| thousands(r.count.total)));
    rows.push(line("", &|r| human_count(r.count.total)));
    rows.push(line("non-embedding", &|r| {
        thousands(r.count.non_embedding())
    }));
    if reports.iter().any(|r| r.count.active.is_some()) {
        rows.push(line("active per token", &|r| {
            r.count
                .active
                .as_ref()
                .map_or_else(|| thousands(r.count.total), |a| thousands(a.per_token))
        }));
    }
    rows.push(line("layers", &|r| {
        r.count
            .stacks
            .iter()
            .map(|s| s.layers)
            .sum::<u64>()
            .to_string()
    }));
    rows.push(line("hidden size d", &|r| r.hidden_size.to_string()));
    rows.push(line("vocabulary V", &|r| r.vocab_size.to_string()));
    rows.push(line("tied head", &|r| match r.tied_embeddings {
        Some(true) => "yes".into(),
        Some(false) => "no".into(),
        None => "no head".into(),
    }));
    let mut right = vec![false];
    right.extend(std::iter::repeat_n(true, reports.len()));
    columns(&rows, &right)
}

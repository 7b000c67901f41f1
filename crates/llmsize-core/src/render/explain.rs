//! `--explain`: the derivation written out the way a person would, symbols first, then the
//! numbers filled in, then the value.

use std::fmt::Write as _;

use super::columns;
use crate::expr::{Expr, Symbol};
use crate::report::ParamsReport;
use crate::units::{relative, thousands};

fn collect_symbols(e: &Expr, out: &mut Vec<Symbol>) {
    match e {
        Expr::Lit(_) => {}
        Expr::Sym(s) => {
            if !out.contains(s) {
                out.push(s.clone());
            }
        }
        Expr::Product(xs) | Expr::Sum(xs) => xs.iter().for_each(|x| collect_symbols(x, out)),
    }
}

/// `a = symbolic = numeric = value`, skipping steps that would repeat themselves.
fn derivation(e: &Expr, value: u64) -> String {
    let symbolic = e.symbolic();
    let numeric = e.numeric();
    let value = thousands(value);
    let mut steps = vec![symbolic, numeric];
    steps.dedup();
    if steps
        .last()
        .is_none_or(|s| s.replace(',', "") != value.replace(',', ""))
    {
        steps.push(value);
    }
    steps.join(" = ")
}

/// Compact list of layer runs: `0–2, 5, 7–9`; past 64 runs, the first 64 and how many more
/// (a hostile config can alternate kinds a million times).
fn ranges(runs: &[std::ops::Range<u64>]) -> String {
    // Every real model fits (Gemma-2-27B alternates 23 times per kind).
    const SHOWN: usize = 64;
    let mut parts: Vec<String> = runs
        .iter()
        .take(SHOWN)
        .map(|r| match r.end.checked_sub(1) {
            // A run of layers `start..end` shows its last, `end − 1`.
            Some(last) if last > r.start => format!("{}–{last}", r.start),
            _ => r.start.to_string(),
        })
        .collect();
    if let Some(more) = runs.len().checked_sub(SHOWN).filter(|&n| n > 0) {
        parts.push(format!("… {more} more"));
    }
    parts.join(", ")
}

/// The whole derivation.
#[must_use]
pub fn render(report: &ParamsReport) -> String {
    let c = &report.count;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}  ({}, {}; from {})\n",
        report.name, report.model_type, report.architecture, report.source
    );

    let mut symbols = Vec::new();
    for comp in &c.components {
        collect_symbols(&comp.formula, &mut symbols);
    }
    for g in &c.layer_groups {
        g.parts
            .iter()
            .for_each(|p| collect_symbols(&p.formula, &mut symbols));
    }
    if let Some(a) = &c.active {
        collect_symbols(&a.routed_formula, &mut symbols);
    }
    out.push_str("symbols\n");
    let rows: Vec<Vec<String>> = symbols
        .iter()
        .map(|s| {
            vec![
                format!("  {}", s.sym),
                format!("= {}", thousands(s.value)),
                report
                    .symbol_sources
                    .iter()
                    .find(|(k, _)| *k == s.sym)
                    .map_or_else(|| s.sym.meaning().to_owned(), |(_, v)| v.clone()),
            ]
        })
        .collect();
    out.push_str(&columns(&rows, &[false, false, false]));

    out.push_str("\nparameters by component\n");
    let mut rows = Vec::new();
    for comp in c.components.iter().filter(|x| x.count > 0) {
        rows.push(vec![
            format!("  {}", comp.category.as_str()),
            format!("= {}", derivation(&comp.formula, comp.count)),
        ]);
    }
    if report.tied_embeddings == Some(false) && c.get(crate::count::Category::LmHead) > 0 {
        rows.push(vec![
            String::new(),
            format!(
                "  lm_head is untied (its own V·d matrix): estimates that assume a tied head, like V·d + L·(12d² + 13d), miss these {}",
                thousands(c.get(crate::count::Category::LmHead))
            ),
        ]);
    }
    if report.tied_embeddings == Some(true) {
        let note = "(tied: the output projection is the token_embedding matrix, counted once)";
        if c.get(crate::count::Category::LmHead) == 0 {
            rows.push(vec!["  lm_head".into(), format!("= 0  {note}")]);
        } else {
            rows.push(vec![String::new(), format!("  lm_head weight {note}")]);
        }
    }
    rows.push(vec!["  total".into(), format!("= {}", thousands(c.total))]);
    out.push_str(&columns(&rows, &[false, false]));
    if let Some(a) = &c.active {
        let routed = a.routed_formula.eval().unwrap_or(0);
        let _ = writeln!(
            out,
            "\nactive parameters per token (a token uses k of the E routed experts)\n  routed experts used  = {}\n  active per token     = total − moe_experts + routed used = {} − {} + {} = {}\n  without embedding    = {} − {} = {}",
            derivation(&a.routed_formula, routed),
            thousands(c.total),
            thousands(c.get(crate::count::Category::MoeExperts)),
            thousands(routed),
            thousands(a.per_token),
            thousands(a.per_token),
            thousands(c.get(crate::count::Category::TokenEmbedding)),
            thousands(a.per_token_excl_token_embedding),
        );
    }

    for g in &c.layer_groups {
        let _ = writeln!(
            out,
            "\none {} layer ({} of {}: {}; {})",
            g.stack.as_str(),
            g.layers,
            c.stacks
                .iter()
                .find(|s| s.role == g.stack)
                .map_or(0, |s| s.layers),
            ranges(&g.runs),
            g.kind
        );
        let mut rows: Vec<Vec<String>> = g
            .parts
            .iter()
            .map(|p| {
                vec![
                    format!("  {}", p.label),
                    format!("= {}", derivation(&p.formula, p.count)),
                ]
            })
            .collect();
        rows.push(vec![
            "  layer".into(),
            format!("= {}", thousands(g.per_layer)),
        ]);
        out.push_str(&columns(&rows, &[false, false]));
    }

    out.push_str("\nquick estimates\n");
    let mut rows = Vec::new();
    for e in &report.estimates {
        rows.push(vec![
            format!("  {}", e.formula.symbolic()),
            format!("= {} = {}", e.formula.numeric(), thousands(e.value)),
            format!("{} vs exact", relative(e.value, c.total)),
        ]);
    }
    out.push_str(&columns(&rows, &[false, false, false]));
    for e in &report.estimates {
        let _ = writeln!(out, "  {}: {}", e.formula.symbolic(), e.source);
    }
    out.push_str(&super::table::render_assumptions(report));
    out
}

#[cfg(test)]
mod tests {
    use super::ranges;

    #[test]
    fn index_ranges() {
        assert_eq!(ranges(&[0..3, 5..6, 7..9]), "0–2, 5, 7–8");
        assert_eq!(ranges(&[std::ops::Range { start: 3, end: 4 }]), "3");
        // Gemma-2 style alternation over a million layers stays one short line.
        let alternating: Vec<_> = (0..500_000u64).map(|i| 2 * i..2 * i + 1).collect();
        assert_eq!(
            ranges(&alternating),
            format!(
                "{}, … 499936 more",
                (0..64)
                    .map(|i| (2 * i).to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        );
    }
}

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
    let mut steps = vec![symbolic];
    if steps[0] != numeric {
        steps.push(numeric);
    }
    if *steps.last().expect("one step at least") != value && steps.len() + 1 > 1 {
        steps.push(value);
    }
    steps.dedup();
    steps.join(" = ")
}

/// Compact list of layer indices: `0–2, 5, 7–9`.
fn ranges(indices: &[u64]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < indices.len() {
        let start = indices[i];
        let mut end = start;
        while i + 1 < indices.len() && indices[i + 1] == end + 1 {
            i += 1;
            end = indices[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}–{end}")
        });
        i += 1;
    }
    parts.join(", ")
}

/// The whole derivation.
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
    out.push_str("symbols\n");
    let rows: Vec<Vec<String>> = symbols
        .iter()
        .map(|s| {
            vec![
                format!("  {}", s.name),
                format!("= {}", thousands(s.value)),
                report
                    .symbol_sources
                    .iter()
                    .find(|(k, _)| *k == s.name)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default(),
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
    match report.tied_embeddings {
        Some(true) => rows.push(vec![
            "  lm_head".into(),
            "= 0  (tied: the output projection is the token_embedding matrix, counted once)"
                .into(),
        ]),
        Some(false) if c.get(crate::count::Category::LmHead) > 0 => {}
        _ => {}
    }
    rows.push(vec!["  total".into(), format!("= {}", thousands(c.total))]);
    out.push_str(&columns(&rows, &[false, false]));
    if let Some(a) = &c.active {
        let _ = writeln!(
            out,
            "  active per token = total − moe_experts + {} = {} (routed experts: only k of E per token)",
            derivation(&a.routed_formula, a.routed_formula.eval().unwrap_or(0)),
            thousands(a.per_token)
        );
    }

    for g in &c.layer_groups {
        let _ = writeln!(
            out,
            "\none {} layer ({} of {}: {}; {})",
            g.stack.as_str(),
            g.indices.len(),
            c.stacks
                .iter()
                .find(|s| s.role == g.stack)
                .map_or(0, |s| s.layers),
            ranges(&g.indices),
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
        rows.push(vec!["  layer".into(), format!("= {}", thousands(g.per_layer))]);
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
        assert_eq!(ranges(&[0, 1, 2, 5, 7, 8]), "0–2, 5, 7–8");
        assert_eq!(ranges(&[3]), "3");
    }
}

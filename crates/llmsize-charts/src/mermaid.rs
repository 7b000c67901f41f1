//! The article's picture of a model as a Mermaid flowchart: the input tables, each kind of
//! layer (with the count of one layer by component and how many there are), what follows the
//! layers (final norm, head), and the total — the exact counts of the report, for Markdown.

use std::fmt::Write as _;

use llmsize_core::count::Category;
use llmsize_core::report::ParamsReport;
use llmsize_core::units::{human_count, thousands};

/// Categories drawn before the layers (what turns tokens, images and audio into vectors).
const BEFORE: [Category; 6] = [
    Category::Vision,
    Category::Audio,
    Category::TokenEmbedding,
    Category::PositionEmbedding,
    Category::TokenTypeEmbedding,
    Category::EmbeddingProjection,
];

/// Most layer kinds drawn one by one; the rest are summed in one node (bounded output).
const MAX_GROUPS: usize = 32;

/// Text for inside a quoted Mermaid label or a `%%` comment: quotes and angle brackets as
/// Mermaid's entity codes, line breaks and other control characters as spaces.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '#' => out.push_str("#35;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Where the parameters of `report` sit, as a Mermaid `flowchart`: the input tables, one
/// subgraph per kind of layer (`12 × decoder layer`, the components of one layer with their
/// exact counts), the rest after the layers (final norm, head — "tied" when it reuses the
/// token table), and the total. Every count is the report's; the nodes add up to the total.
#[must_use]
pub fn params_mermaid(report: &ParamsReport) -> String {
    let c = &report.count;
    let mut out = String::from("flowchart TD\n");
    let _ = writeln!(
        out,
        "  %% {}: {} parameters ({}, {}), counted by llmsize",
        esc(&report.name.chars().take(200).collect::<String>()),
        thousands(c.total),
        esc(&report.model_type),
        esc(&report.architecture)
    );
    if let Some(why) = &report.estimate {
        let _ = writeln!(out, "  %% ESTIMATE: {}", esc(why));
    }
    // What the layers hold of each category, to leave the rest outside them.
    let mut in_layers = [0u64; Category::ALL.len()];
    for g in &c.layer_groups {
        for p in &g.parts {
            if let Some(i) = Category::ALL.iter().position(|x| *x == p.category)
                && let Some(slot) = in_layers.get_mut(i)
            {
                *slot = slot.saturating_add(p.count.saturating_mul(g.layers));
            }
        }
    }
    let outside = |cat: Category| -> u64 {
        let i = Category::ALL.iter().position(|x| *x == cat);
        let inside = i.and_then(|i| in_layers.get(i)).copied().unwrap_or(0);
        c.get(cat).saturating_sub(inside)
    };
    let mut chain: Vec<String> = Vec::new();
    let mut before: Vec<String> = Vec::new();
    for cat in BEFORE {
        let n = outside(cat);
        if n > 0 {
            let id = format!("in_{}", cat.as_str());
            let _ = writeln!(out, "  {id}[\"{}<br/>{}\"]", cat.as_str(), thousands(n));
            before.push(id);
        }
    }
    let shown = c.layer_groups.len().min(MAX_GROUPS);
    for (i, g) in c.layer_groups.iter().take(shown).enumerate() {
        let id = format!("layers{i}");
        let runs: Vec<String> = g
            .runs
            .iter()
            .map(|r| {
                if r.end.saturating_sub(r.start) <= 1 {
                    r.start.to_string()
                } else {
                    format!("{}–{}", r.start, r.end.saturating_sub(1))
                }
            })
            .take(8)
            .collect();
        let _ = writeln!(
            out,
            "  subgraph {id}[\"{} × {} layer ({}; layers {}{}): {} each, {} in all\"]",
            g.layers,
            g.stack.as_str(),
            esc(&g.kind),
            runs.join(", "),
            if g.runs.len() > 8 { ", …" } else { "" },
            thousands(g.per_layer),
            thousands(g.per_layer.saturating_mul(g.layers))
        );
        let _ = writeln!(out, "    direction LR");
        // One node per category of the layer, in the parts' order.
        let mut cats: Vec<(Category, u64)> = Vec::new();
        for p in &g.parts {
            match cats.iter_mut().find(|(k, _)| *k == p.category) {
                Some((_, n)) => *n = n.saturating_add(p.count),
                None => cats.push((p.category, p.count)),
            }
        }
        let ids: Vec<String> = cats
            .iter()
            .map(|(cat, n)| {
                let nid = format!("{id}_{}", cat.as_str());
                let _ = writeln!(
                    out,
                    "    {nid}[\"{}<br/>{}\"]",
                    if *cat == Category::Norm {
                        "norms"
                    } else {
                        cat.as_str()
                    },
                    thousands(*n)
                );
                nid
            })
            .collect();
        if ids.len() > 1 {
            let _ = writeln!(out, "    {}", ids.join(" --> "));
        }
        let _ = writeln!(out, "  end");
        chain.push(id);
    }
    if c.layer_groups.len() > shown {
        let rest: u64 = c
            .layer_groups
            .iter()
            .skip(shown)
            .map(|g| g.per_layer.saturating_mul(g.layers))
            .fold(0, u64::saturating_add);
        let layers: u64 = c.layer_groups.iter().skip(shown).map(|g| g.layers).sum();
        let _ = writeln!(
            out,
            "  layers_rest[\"{} more layers of {} other kinds<br/>{}\"]",
            layers,
            c.layer_groups.len() - shown,
            thousands(rest)
        );
        chain.push("layers_rest".to_owned());
    }
    let tied = report.tied_embeddings == Some(true);
    for cat in Category::ALL.into_iter().filter(|x| !BEFORE.contains(x)) {
        let n = outside(cat);
        let id = format!("out_{}", cat.as_str());
        if cat == Category::LmHead && tied {
            let _ = writeln!(
                out,
                "  {id}[\"lm_head<br/>{}{}\"]",
                thousands(n),
                if n == 0 {
                    " (tied to token_embedding)"
                } else {
                    " (bias; weight tied to token_embedding)"
                }
            );
            chain.push(id);
        } else if n > 0 {
            let name = match cat {
                Category::Norm => "final norms".to_owned(),
                other => other.as_str().to_owned(),
            };
            let _ = writeln!(out, "  {id}[\"{name}<br/>{}\"]", thousands(n));
            chain.push(id);
        }
    }
    let active = c
        .active
        .as_ref()
        .map(|a| format!("<br/>active per token {}", thousands(a.per_token)))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "  total[[\"total<br/>{} ({}){active}\"]]",
        thousands(c.total),
        human_count(c.total)
    );
    chain.push("total".to_owned());
    // The flow: every input into the first step, then one step after another.
    if let Some(first) = chain.first() {
        for b in &before {
            let _ = writeln!(out, "  {b} --> {first}");
        }
    }
    for w in chain.windows(2) {
        if let [a, b] = w {
            let _ = writeln!(out, "  {a} --> {b}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::esc;

    #[test]
    fn labels_cannot_break_out_of_their_quotes() {
        assert_eq!(esc("a\"b<c>\n#"), "a#quot;b#lt;c#gt; #35;");
    }
}

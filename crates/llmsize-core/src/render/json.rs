//! `--json`: the public contract for scripts.
//!
//! ## Wire format (`schema_version` 1)
//! One object per model:
//! - `total` (integer): every parameter, a tied matrix once;
//! - `components` (object): the 13 categories (`token_embedding`, `position_embedding`,
//!   `token_type_embedding`, `embedding_projection`, `attention`, `ffn`, `moe_router`,
//!   `moe_experts`, `moe_shared_experts`, `norm`, `lm_head`, `lm_head_transform`, `pooler`),
//!   each an integer, all present, zeros included;
//! - `formulas` (object): the same keys, each the symbolic formula;
//! - `non_embedding`, `tied_embeddings`, `stacks`, `estimates`, `assumptions`, `warnings`;
//! - MoE only: `active_per_token` and `active_per_token_excl_token_embedding`.
//!
//! Several models render as a JSON array of such objects.

use serde_json::{Map, Value, json};

use crate::report::ParamsReport;

/// The JSON value of one report.
pub fn value(report: &ParamsReport) -> Value {
    let c = &report.count;
    let mut components = Map::new();
    let mut formulas = Map::new();
    for comp in &c.components {
        components.insert(comp.category.as_str().into(), json!(comp.count));
        formulas.insert(
            comp.category.as_str().into(),
            json!(comp.formula.symbolic()),
        );
    }
    let mut v = json!({
        "schema_version": 1,
        "name": report.name,
        "source": report.source,
        "model_type": report.model_type,
        "architecture": report.architecture,
        "hidden_size": report.hidden_size,
        "vocab_size": report.vocab_size,
        "total": c.total,
        "non_embedding": c.non_embedding(),
        "tied_embeddings": report.tied_embeddings,
        "components": components,
        "formulas": formulas,
        "stacks": c.stacks.iter().map(|s| json!({
            "role": s.role.as_str(), "layers": s.layers, "params": s.params,
        })).collect::<Vec<_>>(),
        "estimates": report.estimates.iter().map(|e| json!({
            "key": e.key, "formula": e.formula.symbolic(), "value": e.value, "source": e.source,
        })).collect::<Vec<_>>(),
        "assumptions": report.assumptions.iter().map(|a| json!({
            "field": a.field, "value": a.value, "reason": a.reason,
        })).collect::<Vec<_>>(),
        "warnings": report.warnings,
    });
    if let (Some(a), Value::Object(map)) = (&c.active, &mut v) {
        map.insert("active_per_token".into(), json!(a.per_token));
        map.insert(
            "active_per_token_excl_token_embedding".into(),
            json!(a.per_token_excl_token_embedding),
        );
    }
    v
}

/// Pretty JSON for one report, or an array for several.
pub fn render(reports: &[ParamsReport]) -> String {
    let v = if reports.len() == 1 {
        value(&reports[0])
    } else {
        Value::Array(reports.iter().map(value).collect())
    };
    let mut s = serde_json::to_string_pretty(&v).expect("a serde_json::Value always serializes");
    s.push('\n');
    s
}

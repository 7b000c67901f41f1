//! `llmsize presets` and `llmsize gpus`: the built-in models and GPUs.

use std::fmt::Write as _;

use llmsize_core::units::{bytes_both, human_count, thousands};
use llmsize_engine::wire;

use crate::cli::{PresetsArgs, PresetsListArgs};
use crate::{Failure, Outcome, output};

pub(crate) fn run(args: &PresetsListArgs) -> Result<Outcome, Failure> {
    if args.types {
        return types(args.json);
    }
    let rows = llmsize_engine::presets()?;
    let text = if args.json {
        wire::to_pretty(&rows)?
    } else {
        let mut s = String::new();
        let id_w = rows.iter().map(|r| r.id.len()).max().unwrap_or(0);
        let repo_w = rows
            .iter()
            .map(|r| r.hf_repo.as_ref().map_or(1, String::len))
            .max()
            .unwrap_or(0);
        for r in &rows {
            let active = r
                .active_per_token
                .map(|a| format!("  ({} active)", human_count(a)))
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "{:id_w$}  {:repo_w$}  {:12}  {:>17}  {:>7}{active}",
                r.id,
                r.hf_repo.as_deref().unwrap_or("-"),
                r.model_type,
                thousands(r.total),
                human_count(r.total)
            );
        }
        let _ = writeln!(
            s,
            "\n{} built-in models; any config of the {} model types of `llmsize presets --types` is read exactly",
            rows.len(),
            llmsize_engine::model_types().len()
        );
        s
    };
    output::print(&text)?;
    Ok(Outcome::Success)
}

/// `llmsize presets --types`: the registry's model types.
fn types(json: bool) -> Result<Outcome, Failure> {
    let rows = llmsize_engine::model_types();
    let text = if json {
        wire::to_pretty(&rows)?
    } else {
        let w = rows
            .iter()
            .map(|r| r.model_type.len())
            .max()
            .unwrap_or(0)
            .max(10);
        let c = rows
            .iter()
            .map(|r| r.config_class.len())
            .max()
            .unwrap_or(0)
            .max(12);
        let mut s = format!(
            "{:w$}  {:c$}  {:6}  default class\n",
            "model_type", "config class", "reader"
        );
        for r in &rows {
            let _ = writeln!(
                s,
                "{:w$}  {:c$}  {:6}  {}",
                r.model_type, r.config_class, r.reader, r.default_class
            );
        }
        let _ = writeln!(s, "\n{} model types read exactly", rows.len());
        s
    };
    output::print(&text)?;
    Ok(Outcome::Success)
}

/// `llmsize gpus`.
pub(crate) fn gpus(args: &PresetsArgs) -> Result<Outcome, Failure> {
    let rows = llmsize_engine::gpus();
    let text = if args.json {
        wire::to_pretty(&rows)?
    } else {
        let mut s = String::new();
        for g in &rows {
            let _ = writeln!(
                s,
                "{:16}  {:>24}  {:>6.0} GB/s  {:>7.1} TFLOP/s 16-bit  {:>9}  ({}; {})",
                g.name,
                bytes_both(g.memory_bytes),
                g.bandwidth_bytes_per_s / 1e9,
                g.peak_16bit_flops / 1e12,
                g.peak_fp8_flops
                    .map_or_else(|| "no fp8".to_owned(), |p| format!("{:.0} fp8", p / 1e12)),
                g.memory_source,
                g.source
            );
        }
        s
    };
    output::print(&text)?;
    Ok(Outcome::Success)
}

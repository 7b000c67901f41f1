//! `llmsize presets` and `llmsize gpus`: the built-in models and GPUs.

use std::fmt::Write as _;

use llmsize_core::units::{bytes_both, human_count, thousands};
use llmsize_engine::wire;

use crate::cli::PresetsArgs;
use crate::{Failure, Outcome, output};

pub(crate) fn run(args: &PresetsArgs) -> Result<Outcome, Failure> {
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

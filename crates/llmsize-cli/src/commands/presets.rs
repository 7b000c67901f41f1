//! `llmsize presets`: the built-in models and their sizes.

use llmsize_adapters::presets::PRESETS;
use llmsize_adapters::{ReadOptions, read_config};
use llmsize_core::count;
use llmsize_core::units::{human_count, thousands};
use serde_json::json;

use crate::Outcome;
use crate::cli::PresetsArgs;
use crate::output;

pub(crate) fn run(args: &PresetsArgs) -> anyhow::Result<Outcome> {
    let mut rows = Vec::new();
    for p in PRESETS {
        let spec = read_config(p.config, p.id, p.id, &ReadOptions::default())?;
        let c = count(&spec)?;
        rows.push((p, spec.model_type, c.total, c.active.map(|a| a.per_token)));
    }
    let text = if args.json {
        let list: Vec<_> = rows
            .iter()
            .map(|(p, t, total, active)| {
                json!({"id": p.id, "hf_repo": p.hf_repo, "family": p.family, "model_type": t,
                       "total": total, "active_per_token": active})
            })
            .collect();
        let mut s = serde_json::to_string_pretty(&list)?;
        s.push('\n');
        s
    } else {
        let mut s = String::new();
        let id_w = rows.iter().map(|r| r.0.id.len()).max().unwrap_or(0);
        let repo_w = rows
            .iter()
            .map(|r| r.0.hf_repo.map_or(1, str::len))
            .max()
            .unwrap_or(0);
        for (p, t, total, active) in &rows {
            let active = active
                .map(|a| format!("  ({} active)", human_count(a)))
                .unwrap_or_default();
            s.push_str(&format!(
                "{:id_w$}  {:repo_w$}  {:12}  {:>17}  {:>7}{active}\n",
                p.id,
                p.hf_repo.unwrap_or("-"),
                t,
                thousands(*total),
                human_count(*total)
            ));
        }
        s
    };
    output::print(&text)?;
    Ok(Outcome::Success)
}

/// `llmsize gpus`.
pub(crate) fn gpus(args: &PresetsArgs) -> anyhow::Result<Outcome> {
    use llmsize_core::gpu::GPUS;
    use llmsize_core::units::bytes_both;
    let text = if args.json {
        let list: Vec<_> = GPUS
            .iter()
            .map(|g| {
                json!({"name": g.name, "memory_bytes": g.memory_bytes, "memory_source": g.memory_source,
                       "bandwidth_bytes_per_s": g.bandwidth, "peak_16bit_flops": g.peak_16bit,
                       "peak_fp8_flops": g.peak_fp8, "source": g.source})
            })
            .collect();
        serde_json::to_string_pretty(&list)? + "\n"
    } else {
        let mut s = String::new();
        for g in GPUS {
            s.push_str(&format!(
                "{:16}  {:>24}  {:>6.0} GB/s  {:>7.1} TFLOP/s 16-bit  {:>9}  ({}; {})\n",
                g.name,
                bytes_both(g.memory_bytes),
                g.bandwidth / 1e9,
                g.peak_16bit / 1e12,
                g.peak_fp8
                    .map_or_else(|| "no fp8".to_owned(), |p| format!("{:.0} fp8", p / 1e12)),
                g.memory_source,
                g.source
            ));
        }
        s
    };
    output::print(&text)?;
    Ok(Outcome::Success)
}

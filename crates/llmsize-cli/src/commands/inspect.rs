//! `llmsize inspect` and `llmsize audit`: weight files as a count, and against the config.

use llmsize_adapters::ReadOptions;
use llmsize_adapters::checkpoint::{audit as run_audit, render};

use crate::Outcome;
use crate::cli::WeightsArgs;
use crate::output;
use crate::resolve::{Lookup, Model, Want, resolve_model, with_hint};

fn load(args: &WeightsArgs) -> anyhow::Result<Model> {
    let model = resolve_model(
        &args.model,
        &Lookup {
            online: args.hub.online,
            revision: args.hub.revision.clone(),
            weights: Want::Required,
        },
    )?;
    if model.weights.is_none() {
        return Err(with_hint(
            format!(
                "`{}` has no weight files (.safetensors or .gguf)",
                args.model
            ),
            "pass the weights' directory or file, or a Hub repo id with `--online`".into(),
        ));
    }
    Ok(model)
}

pub(crate) fn inspect(args: &WeightsArgs) -> anyhow::Result<Outcome> {
    let model = load(args)?;
    let checkpoint = model
        .weights
        .as_ref()
        .map(crate::weights_io::Weights::checkpoint)
        .ok_or_else(|| anyhow::anyhow!("no weights"))?;
    let summary = checkpoint
        .summary()
        .map_err(|e| anyhow::anyhow!("{}: {e}", model.name))?;
    let text = if args.json {
        serde_json::to_string_pretty(&render::inspect_json(&model.name, &checkpoint, &summary))?
            + "\n"
    } else {
        render::inspect(&model.name, &checkpoint, &summary)
    };
    output::print(&text)?;
    Ok(Outcome::Success)
}

pub(crate) fn audit(args: &WeightsArgs) -> anyhow::Result<Outcome> {
    let model = load(args)?;
    let spec = model.spec(&ReadOptions::default())?;
    let checkpoint = model
        .weights
        .as_ref()
        .map(crate::weights_io::Weights::checkpoint)
        .ok_or_else(|| anyhow::anyhow!("no weights"))?;
    let result =
        run_audit(&spec, &checkpoint).map_err(|e| anyhow::anyhow!("{}: {e}", model.name))?;
    let text = if args.json {
        serde_json::to_string_pretty(&render::audit_json(&model.name, &result))? + "\n"
    } else {
        render::audit(&model.name, &result)
    };
    output::print(&text)?;
    Ok(if result.agrees() {
        Outcome::Success
    } else {
        Outcome::No
    })
}

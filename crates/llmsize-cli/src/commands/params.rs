//! `llmsize params`: exact parameter counts.

use llmsize_adapters::{HeadChoice, ReadOptions};
use llmsize_core::design::{Design, Style, design_spec};
use llmsize_core::render;
use llmsize_core::{ModelSpec, ParamsReport};

use crate::Outcome;
use crate::cli::{DesignArgs, HeadArg, ParamsArgs, StyleArg};
use crate::output;
use crate::resolve::{Lookup, Want, resolve_model, with_hint};

/// What to count: the specs, each with its source label.
pub(crate) struct Settings {
    pub(crate) models: Vec<(ModelSpec, String)>,
}

fn design_of(args: &DesignArgs) -> Option<(Design, Style)> {
    let (hidden, layers) = (args.hidden?, args.layers?);
    Some((
        Design {
            hidden,
            layers,
            vocab: args.vocab,
            heads: args.heads,
            kv_heads: args.kv_heads,
            ffn: args.ffn,
            ctx: args.ctx,
        },
        match args.style {
            StyleArg::Gpt => Style::Gpt,
            StyleArg::Llama => Style::Llama,
        },
    ))
}

/// Arguments → specs: resolve and read every MODEL, build the design if one is described.
pub(crate) fn settings(args: &ParamsArgs) -> anyhow::Result<Settings> {
    let options = ReadOptions {
        overrides: args.set.clone(),
        head: match args.head {
            HeadArg::Config => HeadChoice::Config,
            HeadArg::Base => HeadChoice::Base,
            HeadArg::Lm => HeadChoice::Lm,
        },
    };
    let mut models = Vec::new();
    let lookup = Lookup {
        online: args.hub.online,
        revision: args.hub.revision.clone(),
        weights: Want::No,
    };
    for arg in &args.models {
        let model = resolve_model(arg, &lookup)?;
        let source = model
            .config
            .as_ref()
            .map_or_else(|| format!("{arg} (GGUF metadata)"), |c| c.source.clone());
        models.push((model.spec(&options)?, source));
    }
    if let Some((design, style)) = design_of(&args.design) {
        if !args.set.is_empty() {
            anyhow::bail!(
                "`--set` changes config fields; with `--hidden`/`--layers` give the sizes as flags"
            );
        }
        let spec = design_spec(&design, style)?;
        models.push((spec, "command-line flags".into()));
    }
    if models.is_empty() {
        return Err(with_hint(
            "no MODEL given".into(),
            "name a preset (`llmsize params llama-2-7b`), a config.json, or describe one with `--hidden 4096 --layers 32`".into(),
        ));
    }
    Ok(Settings { models })
}

pub(crate) fn run(args: &ParamsArgs) -> anyhow::Result<Outcome> {
    let settings = settings(args)?;
    let mut reports = Vec::with_capacity(settings.models.len());
    for (spec, source) in &settings.models {
        let report = ParamsReport::new(spec, source.clone())
            .map_err(|e| anyhow::anyhow!("{}: {e}", spec.name))?;
        for w in &report.warnings {
            output::warn(&format!("{}: {w}", report.name));
        }
        reports.push(report);
    }
    let text = if args.json {
        render::json::render(&reports)
    } else if args.explain {
        reports
            .iter()
            .map(render::explain::render)
            .collect::<Vec<_>>()
            .join("\n")
    } else if reports.len() == 1 {
        render::table::render(&reports[0])
    } else {
        render::table::render_comparison(&reports)
    };
    output::print(&text)?;
    Ok(Outcome::Success)
}

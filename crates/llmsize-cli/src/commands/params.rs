//! `llmsize params`: exact parameter counts.

use llmsize_core::render;
use llmsize_engine::{Design, ParamsRequest};

use super::{engine, hub};
use crate::cli::{DesignArgs, ParamsArgs};
use crate::{Failure, Outcome, output};

fn design_of(args: &DesignArgs) -> Option<Design> {
    let (hidden, layers) = (args.hidden?, args.layers?);
    Some(Design {
        sizes: llmsize_core::design::Design {
            hidden,
            layers,
            vocab: args.vocab,
            heads: args.heads,
            kv_heads: args.kv_heads,
            ffn: args.ffn,
            ctx: args.ctx,
        },
        style: args.style,
    })
}

/// Arguments → the engine's request.
pub(crate) fn request(args: &ParamsArgs) -> ParamsRequest {
    ParamsRequest {
        models: args.models.clone(),
        overrides: args.set.clone(),
        assume: args.assume.clone(),
        text_only: args.text_only,
        head: args.head,
        hub: hub(&args.hub),
        design: design_of(&args.design),
    }
}

pub(crate) fn run(args: &ParamsArgs) -> Result<Outcome, Failure> {
    let outcome = engine().params(&request(args))?;
    output::warn_all(&outcome.warnings);
    let reports = &outcome.reports;
    let text = if args.json {
        outcome.to_json()?
    } else if args.explain {
        reports
            .iter()
            .map(render::explain::render)
            .collect::<Vec<_>>()
            .join("\n")
    } else if let [one] = reports.as_slice() {
        render::table::render(one)
    } else {
        render::table::render_comparison(reports)
    };
    output::print(&text)?;
    Ok(Outcome::Success)
}

//! `llmsize params`: exact parameter counts.

use llmsize_core::render;
use llmsize_engine::{Design, ParamsRequest};

use super::{Env, Rendered, doc_text, hub};
use crate::Failure;
use crate::cli::{DesignArgs, Format, ParamsArgs};

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

pub(crate) fn run(args: &ParamsArgs, env: &Env) -> Result<Rendered, Failure> {
    let outcome = env.engine.params(&request(args))?;
    let reports = &outcome.reports;
    let format = args.out.format();
    let text = if format == Format::Json {
        outcome.to_json()?
    } else if format == Format::Svg {
        llmsize_charts::params_svg(reports)?
    } else if format == Format::Mermaid {
        reports
            .iter()
            .map(llmsize_charts::params_mermaid)
            .collect::<Vec<_>>()
            .join("\n")
    } else {
        let doc = if args.explain {
            let mut doc = render::doc::Doc::new();
            doc.pre(
                reports
                    .iter()
                    .map(render::explain::render)
                    .collect::<Vec<_>>()
                    .join("\n"),
            );
            doc
        } else if let [one] = reports.as_slice() {
            render::table::doc(one)
        } else {
            render::table::comparison_doc(reports)
        };
        doc_text(&doc, format, env)
    };
    Ok(Rendered::new(text, outcome.warnings))
}

//! `llmsize inspect` and `llmsize audit`: weight files as a count, and against the config.

use llmsize_engine::{AuditRequest, InspectRequest};

use super::{Env, Rendered, doc_text, hub};
use crate::Failure;
use crate::cli::{Format, WeightsArgs};

pub(crate) fn inspect(args: &WeightsArgs, env: &Env) -> Result<Rendered, Failure> {
    let format = args.out.format();
    if matches!(format, Format::Svg | Format::Mermaid) {
        return Err(super::no_picture("inspect", format));
    }
    let outcome = env.engine.inspect(&InspectRequest {
        model: args.model.clone(),
        hub: hub(&args.hub),
    })?;
    let text = if format == Format::Json {
        outcome.to_json()?
    } else {
        doc_text(&outcome.table(), format, env)
    };
    Ok(Rendered::new(text, Vec::new()))
}

pub(crate) fn audit(args: &WeightsArgs, env: &Env) -> Result<Rendered, Failure> {
    let format = args.out.format();
    if matches!(format, Format::Svg | Format::Mermaid) {
        return Err(super::no_picture("audit", format));
    }
    let outcome = env.engine.audit(&AuditRequest {
        model: args.model.clone(),
        hub: hub(&args.hub),
    })?;
    let text = if format == Format::Json {
        outcome.to_json()?
    } else {
        doc_text(&outcome.table(), format, env)
    };
    Ok(Rendered::new(text, Vec::new()).status(outcome.agrees()))
}

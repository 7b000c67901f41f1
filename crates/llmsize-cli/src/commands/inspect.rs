//! `llmsize inspect` and `llmsize audit`: weight files as a count, and against the config.

use llmsize_engine::{AuditRequest, InspectRequest};

use super::{engine, hub};
use crate::cli::WeightsArgs;
use crate::{Failure, Outcome, output};

pub(crate) fn inspect(args: &WeightsArgs) -> Result<Outcome, Failure> {
    let outcome = engine().inspect(&InspectRequest {
        model: args.model.clone(),
        hub: hub(&args.hub),
    })?;
    let text = if args.json {
        outcome.to_json()?
    } else {
        outcome.table()
    };
    output::print(&text)?;
    Ok(Outcome::Success)
}

pub(crate) fn audit(args: &WeightsArgs) -> Result<Outcome, Failure> {
    let outcome = engine().audit(&AuditRequest {
        model: args.model.clone(),
        hub: hub(&args.hub),
    })?;
    let text = if args.json {
        outcome.to_json()?
    } else {
        outcome.table()
    };
    output::print(&text)?;
    Ok(if outcome.agrees() {
        Outcome::Success
    } else {
        Outcome::No
    })
}

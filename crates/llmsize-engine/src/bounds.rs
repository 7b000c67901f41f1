//! Every count a request carries, checked against `llmsize_core::limits` before any work.
//!
//! Every front end (the CLI, `llmsize serve`, Python) builds the same request types, so the
//! check lives here, once per request type: one table row per field, naming the option as the
//! command line spells it and the bound. A value beyond its bound is far outside any real
//! model or machine; refusing it up front keeps every answer within a second, where the
//! arithmetic behind it would otherwise be exact but useless, or the search behind it long.

use llmsize_core::limits::{
    MAX_BATCH, MAX_GPUS, MAX_LAYERS, MAX_MODELS, MAX_SWEEP_POINTS, MAX_TOKENS,
};
use llmsize_core::units::thousands;

use crate::Error;
use crate::request::{FlopsRequest, MemoryRequest, ParamsRequest, Sweep};
use crate::train::TrainRequest;

/// An option, its value if given, the most it may be, and what the bound counts.
type Row<'a> = (&'a str, Option<u64>, u64, &'a str);

/// The first row whose value is beyond its bound, as an error.
fn check(rows: &[Row<'_>]) -> Result<(), Error> {
    for &(flag, value, max, unit) in rows {
        if let Some(v) = value.filter(|v| *v > max) {
            return Err(Error::bad_input(
                format!(
                    "`{flag} {v}` is out of range: llmsize answers for at most {} {unit}",
                    thousands(max)
                ),
                format!("give `{flag}` at most {}", thousands(max)),
            ));
        }
    }
    Ok(())
}

/// Models side by side, and a sweep's points.
fn check_lists(models: usize, sweep: Option<&Sweep>) -> Result<(), Error> {
    if models > MAX_MODELS {
        return Err(Error::bad_input(
            format!("{models} models side by side: at most {MAX_MODELS}"),
            "compare fewer models at once",
        ));
    }
    let points = sweep.map_or(0, Sweep::points_len);
    if points > MAX_SWEEP_POINTS {
        return Err(too_many_points(points));
    }
    if let Some(Sweep::SeqLen(v) | Sweep::Batch(v)) = sweep {
        let (flag, max, unit) = match sweep {
            Some(Sweep::Batch(_)) => ("--sweep batch=", MAX_BATCH, "sequences"),
            _ => ("--sweep seq=", MAX_TOKENS, "tokens"),
        };
        let rows: Vec<Row<'_>> = v.iter().map(|n| (flag, Some(*n), max, unit)).collect();
        check(&rows)?;
    }
    Ok(())
}

/// A sweep of more points than one answer may hold.
pub(crate) fn too_many_points(points: usize) -> Error {
    Error::bad_input(
        format!("`--sweep` of {points} points: at most {MAX_SWEEP_POINTS}"),
        "sweep fewer values (a chart draws at most as many)",
    )
}

const GPUS: &str = "GPUs";
const TOKENS: &str = "tokens";

impl ParamsRequest {
    /// Every count of the request within its bound.
    pub(crate) fn check_bounds(&self) -> Result<(), Error> {
        check_lists(self.models.len(), None)
    }
}

impl MemoryRequest {
    /// Every count of the request within its bound.
    pub(crate) fn check_bounds(&self) -> Result<(), Error> {
        check_lists(self.models.len(), self.sweep.as_ref())?;
        let r = &self.runtime;
        check(&[
            ("--seq-len", self.seq_len, MAX_TOKENS, TOKENS),
            ("--batch", Some(self.batch), MAX_BATCH, "sequences"),
            (
                "--images",
                Some(self.images),
                MAX_BATCH,
                "images per sequence",
            ),
            ("--image-tokens", self.image_tokens, MAX_TOKENS, TOKENS),
            ("--tp", self.tp, MAX_GPUS, GPUS),
            ("--pp", self.pp, MAX_GPUS, GPUS),
            ("--ctx-size", r.ctx_size, MAX_TOKENS, TOKENS),
            ("--ngl", r.n_gpu_layers, MAX_LAYERS, "layers"),
            ("--block-size", Some(r.block_size), MAX_TOKENS, TOKENS),
            ("--max-model-len", r.max_model_len, MAX_TOKENS, TOKENS),
            (
                "--max-num-batched-tokens",
                r.max_num_batched_tokens,
                MAX_TOKENS,
                TOKENS,
            ),
        ])
    }
}

impl FlopsRequest {
    /// Every count of the request within its bound.
    pub(crate) fn check_bounds(&self) -> Result<(), Error> {
        check_lists(self.models.len(), self.sweep.as_ref())?;
        check(&[
            ("--seq-len", self.seq_len, MAX_TOKENS, TOKENS),
            ("--prompt", self.prompt, MAX_TOKENS, TOKENS),
            ("--batch", Some(self.batch), MAX_BATCH, "sequences"),
            (
                "--images",
                Some(self.images),
                MAX_BATCH,
                "images per sequence",
            ),
            ("--image-tokens", self.image_tokens, MAX_TOKENS, TOKENS),
        ])
    }
}

impl TrainRequest {
    /// Every count of the request within its bound.
    pub(crate) fn check_bounds(&self) -> Result<(), Error> {
        let p = &self.parallel;
        check(&[
            ("--seq-len", Some(self.seq_len), MAX_TOKENS, TOKENS),
            ("--batch", Some(self.batch), MAX_BATCH, "sequences"),
            ("--lora-rank", self.lora_rank, MAX_TOKENS, "ranks"),
            ("--dp", self.dp, MAX_GPUS, GPUS),
            ("--tp", Some(p.tp), MAX_GPUS, GPUS),
            ("--pp", Some(p.pp), MAX_GPUS, GPUS),
            ("--cp", Some(p.cp), MAX_GPUS, GPUS),
            ("--ep", Some(p.ep), MAX_GPUS, GPUS),
            ("--shard-group", p.shard_group, MAX_GPUS, GPUS),
            (
                "--micro-batches",
                Some(p.micro_batches),
                MAX_BATCH,
                "micro-batches",
            ),
            (
                "--interleave",
                Some(p.interleave),
                MAX_LAYERS,
                "chunks per stage",
            ),
        ])
    }
}

//! Model states and activations per GPU under data, tensor, pipeline, context and expert
//! parallelism, ZeRO and FSDP, with CPU offload.
//!
//! OWNED BY A HELPER: see `/work/wt/BRIEF-train.md`.

use crate::SpecError;
use crate::train::Term;

/// How the step is spread over GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parallelism {
    /// Data-parallel replicas (DDP, or the ZeRO/FSDP sharding group).
    pub dp: u64,
    /// Tensor parallelism.
    pub tp: u64,
    /// Pipeline stages.
    pub pp: u64,
    /// Context parallelism.
    pub cp: u64,
    /// Expert parallelism.
    pub ep: u64,
    /// ZeRO stage 0–3 (FSDP full shard = 3, `SHARD_GRAD_OP` = 2).
    pub zero: u8,
    /// FSDP hybrid shard: shard within groups of this many GPUs, replicate across them.
    pub shard_group: Option<u64>,
    /// Megatron sequence parallelism (with TP).
    pub sequence_parallel: bool,
    /// Optimizer states (and master weights) offloaded to the CPU.
    pub offload_optimizer: bool,
    /// Parameters offloaded to the CPU (ZeRO-3 / FSDP).
    pub offload_params: bool,
    /// Micro-batches per step (gradient accumulation; pipeline micro-batches).
    pub micro_batches: u64,
    /// Virtual pipeline stages per GPU (interleaved 1F1B); 1 = plain 1F1B.
    pub interleave: u64,
}

impl Default for Parallelism {
    fn default() -> Self {
        Parallelism {
            dp: 1,
            tp: 1,
            pp: 1,
            cp: 1,
            ep: 1,
            zero: 0,
            shard_group: None,
            sequence_parallel: false,
            offload_optimizer: false,
            offload_params: false,
            micro_batches: 1,
            interleave: 1,
        }
    }
}

impl Parallelism {
    /// GPUs used: `dp·tp·pp·cp`.
    #[must_use]
    pub fn gpus(&self) -> u64 {
        self.dp
            .saturating_mul(self.tp)
            .saturating_mul(self.pp)
            .saturating_mul(self.cp)
    }
}

/// The most loaded GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerGpu {
    /// Its peak bytes (model states + activations + the forward's transient peak).
    pub bytes: u128,
    /// Bytes kept in CPU memory per GPU (offload).
    pub cpu_bytes: u128,
    /// Its terms.
    pub terms: Vec<Term>,
    /// Which rank and why it is the most loaded.
    pub most_loaded: String,
}

/// Placeholder until the parallel module is built: one GPU holds everything.
pub fn single(states_bytes: u128, activation_peak: u128) -> Result<PerGpu, SpecError> {
    let bytes = states_bytes
        .checked_add(activation_peak)
        .ok_or(SpecError::TooLarge {
            what: "memory".into(),
        })?;
    Ok(PerGpu {
        bytes,
        cpu_bytes: 0,
        terms: Vec::new(),
        most_loaded: "one GPU".into(),
    })
}

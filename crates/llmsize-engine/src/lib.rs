//! llmsize-engine: what every front end (the `llmsize` binary, a local web server, Python
//! bindings) calls. It takes typed requests, resolves each MODEL (a preset, a `config.json`
//! or a directory, weight files, the Hugging Face cache, the Hub with `--online`), runs the
//! core's arithmetic, and returns typed outcomes that render as text (with the core's
//! renderers) or serialize as the JSON contract ([`wire`]).
//!
//! It is the I/O shell around the pure crates: it reads files and, when asked, the network,
//! but it never reads the environment (callers pass a [`HubEnv`]), never prints, and never
//! exits. Warnings come back in each outcome's `warnings`; errors are one [`Error`] type
//! whose [`Error::kind`] a front end maps to its status.
//!
//! ```
//! use llmsize_engine::{Engine, HubEnv, ParamsRequest};
//!
//! let engine = Engine::new(HubEnv::default());
//! let outcome = engine
//!     .params(&ParamsRequest::models(["gpt2"]))
//!     .unwrap();
//! assert_eq!(outcome.reports[0].count.total, 124_439_808);
//! ```

#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

mod bounds;
mod design;
pub mod design_args;
mod error;
mod hub;
mod remote;
mod request;
mod resolve;
mod run;
mod train;
mod weights_io;
pub mod wire;

pub use design::{
    Candidate, DesignBase, DesignOutcome, DesignRequest, DesignResult, DesignTrain, FfnRule,
    KvChoice, OptimalRule, quantity_name,
};
pub use error::{Error, ErrorKind};
pub use hub::{
    DEFAULT_ENDPOINT, FetchProgress, HubEnv, ProgressSink, Sink, TransferProgress, TransferSink,
    looks_like_repo_id,
};
pub use llmsize_design::{
    Constraints as DesignConstraints, DesignStyle, Goal, Quantity, parse_count as parse_param_count,
};
pub use request::{
    AuditRequest, CustomGpuFlags, Design, FLOPS_SEQ_LEN, FlopsRequest, HubOptions, InspectRequest,
    MEMORY_SEQ_LEN, MemoryRequest, OVERHEAD_MIB, ParamsRequest, RuntimeFlags, Sweep, SweepAxis,
    Swept, parse_count, parse_size,
};
pub use run::{
    AuditOutcome, FilesUsed, FlopsOutcome, FlopsPoint, InspectOutcome, MemoryOutcome, MemoryResult,
    ModelMemory, ParamsOutcome, gpus, model_types, preset_for_repo_id, presets,
};
pub use train::{TrainJson, TrainOutcome, TrainRequest};

// The option enums of requests, re-exported so a front end needs no other crate to fill one.
pub use llmsize_adapters::HeadChoice;
pub use llmsize_core::design::Style;
pub use llmsize_core::flops::AttentionConvention;
pub use llmsize_core::memory::{CachePolicy, MlaCache};
pub use llmsize_core::runtime::Runtime;
pub use llmsize_train::parallel::Parallelism;

/// The engine: the environment it resolves Hub repo ids in, and the commands.
///
/// Cheap to build (no preset parsing, no HTTP client until `--online` needs one); a server
/// keeps one and calls it from any thread.
#[derive(Debug, Clone, Default)]
pub struct Engine {
    hub: HubEnv,
}

impl Engine {
    /// An engine resolving Hub repo ids in `hub` (the cache and, for `--online`, the Hub).
    #[must_use]
    pub fn new(hub: HubEnv) -> Self {
        Engine { hub }
    }

    /// The environment it was built with.
    #[must_use]
    pub fn hub_env(&self) -> &HubEnv {
        &self.hub
    }

    /// `llmsize params`: exact parameter counts of every model of the request.
    pub fn params(&self, request: &ParamsRequest) -> Result<ParamsOutcome, Error> {
        request.check_bounds()?;
        run::params(request, &self.hub)
    }

    /// `llmsize train`: one training step's memory per GPU, compute, time and cost.
    pub fn train(&self, request: &TrainRequest) -> Result<TrainOutcome, Error> {
        request.check_bounds()?;
        train::run(request, &self.hub)
    }

    /// `llmsize design`: the shapes that meet a parameter, memory or compute target.
    pub fn design(&self, request: &DesignRequest) -> Result<DesignOutcome, Error> {
        design::run(request, &self.hub)
    }

    /// `llmsize memory`: memory to serve a model; fits?
    pub fn memory(&self, request: &MemoryRequest) -> Result<MemoryOutcome, Error> {
        request.check_bounds()?;
        run::memory(request, &self.hub)
    }

    /// `llmsize flops`: FLOPs by component, and speed on a GPU.
    pub fn flops(&self, request: &FlopsRequest) -> Result<FlopsOutcome, Error> {
        request.check_bounds()?;
        run::flops(request, &self.hub)
    }

    /// `llmsize inspect`: the tensors of weight files as a count.
    pub fn inspect(&self, request: &InspectRequest) -> Result<InspectOutcome, Error> {
        run::inspect(request, &self.hub)
    }

    /// `llmsize audit`: the config-based count against the tensors of the weight files.
    pub fn audit(&self, request: &AuditRequest) -> Result<AuditOutcome, Error> {
        run::audit(request, &self.hub)
    }
}

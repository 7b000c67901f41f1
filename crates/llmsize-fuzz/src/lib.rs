//! `llmsize-fuzz`: a mutation fuzzer that runs on stable Rust, with no coverage feedback.
//!
//! It takes the repository's fixture files as seeds, mutates them with a seeded generator
//! (each input depends only on the seed and its iteration number, so any input can be
//! written out again with `--dump`), and runs each through the weight-header readers and,
//! for what they accept and for JSON, through the adapters and the core. A stage that
//! panics, takes longer than `--max-input-ms` or allocates more than `--max-input-mib` is a
//! finding: its input is written to the findings directory and the run exits 1.
//!
//! The numeric mode ([`numbers`]) skips the bytes: it sets each integer of each model
//! type's config to boundary values and runs the parsed config through the adapters' reader
//! and the core: no byte stage, so that the readers run thousands of times a second.
//!
//! It must never change what it tests: it calls only public entry points
//! (`parse_header`, `parse_index`, `read_config`, `read_config_map`, `spec_from_gguf`,
//! `Checkpoint`, `count`, `memory`, `flops`, `train`).

pub mod alloc;
mod driver;
mod mutate;
pub mod numbers;
pub mod seeds;
pub mod targets;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use fastrand::Rng;

pub use driver::Outcome;
pub use seeds::{Kind, Seed};
pub use targets::{StageReport, exercise};

/// Run settings.
#[derive(Debug, Clone)]
pub struct Options {
    /// Stop after this many inputs.
    pub iterations: Option<u64>,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Seed of the generator.
    pub seed: u64,
    /// A stage slower than this is a finding.
    pub max_input: Duration,
    /// A stage allocating more than this (peak, bytes) is a finding.
    pub max_input_bytes: usize,
    /// A stage still running after this long is a hang: recorded, and its worker thread
    /// abandoned (the run goes on with a fresh one, and stops at the second hang).
    pub hang: Duration,
    /// The hard cap on bytes in use set with [`alloc::set_hard_cap`], named in findings.
    pub hard_cap_bytes: usize,
    /// Where inputs of findings are written.
    pub findings_dir: PathBuf,
    /// Which stages run.
    pub stages: Scope,
}

/// A set of stages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The weight-header readers of `llmsize-weights` only.
    Weights,
    /// The readers, then the adapters and the core.
    All,
}

impl Scope {
    /// Whether `stage` is in this set.
    #[must_use]
    pub fn contains(self, stage: &str) -> bool {
        match self {
            Scope::All => true,
            Scope::Weights => stage.starts_with("weights::"),
        }
    }
}

/// What kind of problem an input showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Problem {
    /// A panic (caught).
    Panic,
    /// Slower than `max_input`.
    Slow,
    /// A peak allocation over `max_input_bytes`.
    Memory,
    /// Still running after `hang`.
    Hang,
}

/// One finding.
#[derive(Debug, Clone)]
pub struct Finding {
    /// What went wrong.
    pub problem: Problem,
    /// In which stage.
    pub stage: &'static str,
    /// The panic message, or the time or bytes measured.
    pub detail: String,
    /// The seed file the input was made from.
    pub seed_file: String,
    /// Its iteration number (with the run's seed, `--dump` writes it again).
    pub iteration: u64,
    /// Its model type (numeric mode).
    pub model_type: Option<String>,
    /// The fields it set (numeric mode): `` `a.b` = 7 ``.
    pub mutation: Option<String>,
    /// Where the input was written, if it was.
    pub saved: Option<PathBuf>,
}

/// The result of a run.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Inputs run.
    pub iterations: u64,
    /// Wall time.
    pub elapsed: Duration,
    /// Findings, at most [`KEEP_PER_SIGNATURE`] per (problem, stage, message).
    pub findings: Vec<Finding>,
    /// Findings not kept because their signature was already kept enough.
    pub repeats: u64,
    /// Per stage: inputs run, time, slowest, largest peak.
    pub stages: BTreeMap<&'static str, StageStats>,
    /// Every finding (kept or not), grouped by cause: problem, stage and, for a panic, its
    /// location.
    pub groups: BTreeMap<(Problem, &'static str, String), Group>,
    /// Worker threads abandoned (hung, or parked past the hard cap).
    pub abandoned: u64,
}

/// What one stage did over a run.
#[derive(Debug, Clone, Copy, Default)]
pub struct StageStats {
    /// Inputs it ran.
    pub inputs: u64,
    /// Their time, all together.
    pub total: Duration,
    /// The slowest.
    pub slowest: Duration,
    /// The largest allocation peak, bytes.
    pub peak: usize,
}

/// The findings of one cause.
#[derive(Debug, Clone, Default)]
pub struct Group {
    /// The detail of the first.
    pub example: String,
    /// How many inputs showed it.
    pub count: u64,
    /// The inputs that showed it (seed file, or model type and mutation), each with its
    /// detail in a few words (the first seen), at most a few hundred.
    pub cases: BTreeMap<String, String>,
    /// Distinct cases beyond those listed.
    pub cases_left_out: u64,
}

impl Summary {
    /// Whether a finding falls in `scope` (repeats are of the same stages as kept ones).
    #[must_use]
    pub fn fails(&self, scope: Scope) -> bool {
        self.findings.iter().any(|f| scope.contains(f.stage))
    }
}

/// Findings kept (and written) per signature (and, in numeric mode, per model type).
pub const KEEP_PER_SIGNATURE: usize = 3;

/// The input of `iteration`: which seed, and the mutated bytes. Depends only on `seed`,
/// `iteration` and the seed files.
#[must_use]
pub fn input(seeds: &[Seed], seed: u64, iteration: u64) -> (usize, Vec<u8>) {
    if seeds.is_empty() {
        return (0, Vec::new());
    }
    let mut rng = Rng::with_seed(mix(seed, iteration));
    let index = rng.usize(..seeds.len());
    (index, mutate::mutate(&mut rng, seeds, index))
}

/// `splitmix64` of seed and iteration: independent generators per input.
pub(crate) fn mix(seed: u64, iteration: u64) -> u64 {
    let mut z = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(iteration)
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The byte mode's inputs: [`input`] of the seed files.
struct BytesSource<'a> {
    seeds: &'a [Seed],
    seed: u64,
    downstream: bool,
}

impl driver::Source for BytesSource<'_> {
    fn input(&mut self, iteration: u64) -> Option<(driver::Job, driver::Label)> {
        let (index, bytes) = input(self.seeds, self.seed, iteration);
        let seed_file = self.seeds.get(index)?;
        let job = driver::Job::Bytes {
            bytes,
            data_len: seed_file.data_len,
            downstream: self.downstream,
        };
        let label = driver::Label {
            seed_file: seed_file.name.clone(),
            model_type: None,
            mutation: None,
        };
        Some((job, label))
    }

    fn bytes(&self, iteration: u64) -> Vec<u8> {
        input(self.seeds, self.seed, iteration).1
    }

    fn extension(&self) -> &'static str {
        "bin"
    }

    fn replay_hint(&self, path: &str, iteration: u64) -> String {
        format!(
            "llmsize-fuzz --replay {path} (or --seed {} --dump {iteration})",
            self.seed
        )
    }
}

/// Run the fuzzer over `seeds` (the byte mode). `progress` receives a line every few
/// seconds.
pub fn run(options: &Options, seeds: &[Seed], progress: &mut dyn FnMut(&str)) -> Summary {
    let mut source = BytesSource {
        seeds,
        seed: options.seed,
        downstream: options.stages == Scope::All,
    };
    driver::drive(options, &mut source, progress)
}

/// Run a saved input once, as a run would (on a worker thread, a hang or an allocation past
/// the hard cap reported rather than fatal): through every stage, or with `config` (the
/// numeric mode's input, a JSON object) through `read_config_map` and the core.
#[must_use]
pub fn replay(
    input: Vec<u8>,
    config: Option<serde_json::Map<String, serde_json::Value>>,
    hang: Duration,
) -> Outcome {
    let job = match config {
        Some(map) => driver::Job::Config(map),
        None => driver::Job::Bytes {
            bytes: input,
            data_len: None,
            downstream: true,
        },
    };
    driver::run_one(job, hang)
}

/// The repository root, from where this crate sits in it.
#[must_use]
pub fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

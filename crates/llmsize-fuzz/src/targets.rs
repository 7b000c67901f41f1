//! The code each input goes through, stage by stage, each stage timed, its allocation peak
//! measured and its panics caught.

use std::backtrace::Backtrace;
use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use llmsize_adapters::checkpoint::Checkpoint;
use llmsize_adapters::gguf_config::spec_from_gguf;
use llmsize_adapters::{ReadOptions, read_config, read_config_map};
use llmsize_core::ModelSpec;
use llmsize_core::flops::{AttentionConvention, flops};
use llmsize_core::formats::{KvDtype, WeightFormat};
use llmsize_core::memory::{CachePolicy, MemoryOptions, MlaCache, memory};
use llmsize_weights::{gguf, safetensors};
use serde_json::{Map, Value};

use crate::alloc;

/// What one stage did with one input.
#[derive(Debug, Clone)]
pub struct StageReport {
    /// The function called, e.g. `safetensors::parse_header`.
    pub stage: &'static str,
    /// The panic message, if it panicked.
    pub panic: Option<String>,
    /// The worker thread's CPU time (wall time where the platform gives none).
    pub elapsed: Duration,
    /// Peak bytes allocated above what was in use when it started.
    pub peak_bytes: usize,
}

/// The stage running now, so that a hang can be attributed.
static RUNNING: Mutex<&'static str> = Mutex::new("(none)");

/// The stage that is running (or ran last).
pub fn running_stage() -> &'static str {
    RUNNING.lock().map_or("(unknown)", |s| *s)
}

thread_local! {
    /// The last panic's message, and for one located outside the workspace a backtrace.
    static LAST_PANIC: RefCell<Option<(String, Option<Backtrace>)>> = const { RefCell::new(None) };
}

/// Route panic messages to [`LAST_PANIC`] instead of stderr (set once per process). A panic
/// located outside the workspace (`capacity overflow` in the standard library) keeps a
/// backtrace, so that its message can name the workspace function it came from and findings
/// group by their cause (it is resolved by [`take_panic`], after the stage is measured).
pub fn install_panic_hook() {
    panic::set_hook(Box::new(|info| {
        let ours = info
            .location()
            .is_some_and(|l| l.file().starts_with("crates/"));
        let backtrace = (!ours).then(Backtrace::force_capture);
        LAST_PANIC.with(|p| *p.borrow_mut() = Some((info.to_string(), backtrace)));
    }));
}

/// The last panic's message, naming the workspace function it came from when it is located
/// outside the workspace.
fn take_panic() -> String {
    let Some((message, backtrace)) = LAST_PANIC.with(|p| p.borrow_mut().take()) else {
        return String::new();
    };
    match backtrace.and_then(|b| caller(&b.to_string())) {
        Some(frame) => {
            let (first, rest) = message.split_once('\n').unwrap_or((&message, ""));
            format!("{} (from {frame}):\n{rest}", first.trim_end_matches(':'))
        }
        None => message,
    }
}

/// The first frame of a workspace crate other than this one in a printed backtrace: its
/// function, and its file and line when the build has them.
fn caller(backtrace: &str) -> Option<String> {
    let mut lines = backtrace.lines().map(str::trim);
    while let Some(line) = lines.next() {
        let symbol = line.split_once(": ").map_or(line, |(_, s)| s);
        if symbol.starts_with("llmsize_") && !symbol.starts_with("llmsize_fuzz") {
            let at = lines
                .next()
                .and_then(|l| l.strip_prefix("at "))
                .filter(|l| l.starts_with("./crates/") || l.starts_with("crates/"));
            return Some(match at {
                Some(at) => format!("`{symbol}` at {at}"),
                None => format!("`{symbol}`"),
            });
        }
    }
    None
}

struct Stages {
    reports: Vec<StageReport>,
}

impl Stages {
    fn run<T>(&mut self, stage: &'static str, f: impl FnOnce() -> T) -> Option<T> {
        if let Ok(mut running) = RUNNING.lock() {
            *running = stage;
        }
        let base = alloc::reset_peak();
        // The worker thread's own CPU time, not the wall clock: a stage's cost is what it
        // spends, and a machine busy with other work (a long run beside builds) must not
        // make a finding of a fast stage. A stage that never ends is the driver's
        // `--hang-ms`, which does watch the wall clock.
        let start = cpu_time::ThreadTime::try_now().ok();
        let wall = Instant::now();
        let result = panic::catch_unwind(AssertUnwindSafe(f));
        let elapsed = start.map_or_else(|| wall.elapsed(), |t| t.elapsed());
        let peak_bytes = alloc::peak().saturating_sub(base);
        let panic = result.is_err().then(take_panic);
        self.reports.push(StageReport {
            stage,
            panic,
            elapsed,
            peak_bytes,
        });
        result.ok()
    }
}

/// Run `input` through every reader, and (with `downstream`) what they accept and every
/// JSON input through the adapters and the core. `data_len` is the data section a
/// header-only SafeTensors seed stands for, if known: the input is also read as a file of
/// its own length plus that (which a mutation that keeps the header valid leaves valid).
#[must_use]
pub fn exercise(input: &[u8], data_len: Option<u64>, downstream: bool) -> Vec<StageReport> {
    let mut stages = Stages {
        reports: Vec::new(),
    };
    let len = input.len() as u64;

    let st = stages.run("weights::safetensors::parse_header", || {
        let mut accepted = None;
        for file_len in [
            Some(len),
            data_len.map(|d| len.saturating_add(d)),
            Some(len + 4096),
            Some(1 << 40),
            Some(u64::MAX),
        ]
        .into_iter()
        .flatten()
        {
            if let Ok(h) = safetensors::parse_header(input, file_len, "fuzz.safetensors") {
                let _ = h.tensor("x");
                accepted.get_or_insert((file_len, h));
            }
        }
        accepted
    });
    if let Some(Some((file_len, header))) = st.filter(|_| downstream) {
        stages.run("adapters::checkpoint (safetensors)", || {
            let c =
                Checkpoint::from_safetensors(&[("fuzz.safetensors".to_owned(), file_len, header)]);
            let _ = c.summary();
        });
    }

    let gg = stages.run("weights::gguf::parse_header", || {
        let mut accepted = None;
        for file_len in [len, u64::MAX] {
            if let Ok(h) = gguf::parse_header(input, file_len, "fuzz.gguf") {
                let _ = (h.architecture(), h.block_count(), h.vocab_size());
                accepted.get_or_insert((file_len, h));
            }
        }
        accepted
    });
    if let Some(Some((file_len, header))) = gg.filter(|_| downstream) {
        stages.run("adapters::checkpoint (gguf)", || {
            let _ = Checkpoint::from_gguf("fuzz.gguf", file_len, &header).summary();
        });
        let spec = stages.run("adapters::gguf_config::spec_from_gguf", || {
            spec_from_gguf(&header, "fuzz.gguf", "fuzz").ok()
        });
        if let Some(Some(spec)) = spec {
            core(&mut stages, &spec);
        }
    }

    if let Ok(text) = std::str::from_utf8(input) {
        stages.run("weights::safetensors::parse_index", || {
            let _ = safetensors::parse_index(text, "fuzz.index.json");
        });
        if downstream {
            let spec = stages.run("adapters::read_config", || {
                read_config(text, "config.json", "fuzz", &ReadOptions::default()).ok()
            });
            if let Some(Some(spec)) = spec {
                core(&mut stages, &spec);
            }
        }
    }
    stages.reports
}

/// The stage of the numeric mode's reader.
pub const READ_CONFIG_MAP: &str = "adapters::read_config_map";

/// Run a parsed config through the adapters' reader and, when it accepts it, the core's
/// stages (those [`exercise`] runs after `read_config`): none of the byte stages.
#[must_use]
pub fn exercise_config(map: Map<String, Value>) -> Vec<StageReport> {
    let mut stages = Stages {
        reports: Vec::new(),
    };
    let spec = stages.run(READ_CONFIG_MAP, move || {
        read_config_map(map, "config.json", "fuzz", &ReadOptions::default()).ok()
    });
    if let Some(Some(spec)) = spec {
        core(&mut stages, &spec);
    }
    stages.reports
}

/// The core's top-level entry points (and the training planner's, on the same spec), as the
/// CLI calls them by default.
fn core(stages: &mut Stages, spec: &ModelSpec) {
    stages.run("core::count::count", || {
        let _ = llmsize_core::count::count(spec);
    });
    stages.run("core::memory::memory", || {
        let options = MemoryOptions {
            format: WeightFormat::Bf16,
            seq_len: 4096,
            batch: 1,
            kv_dtype: KvDtype::Bf16,
            tp: 1,
            gpu: None,
            mla: MlaCache::Latent,
            window: CachePolicy::Transformers,
            overhead_bytes: 0,
        };
        let _ = memory(spec, &options);
    });
    stages.run("core::flops::flops", || {
        let _ = flops(spec, 2048, 1, AttentionConvention::Causal);
    });
    stages.run("train::train", || {
        // Full fine-tuning, then LoRA with checkpointing on a 2 × 2 × 2 layout: every part
        // of the step (states, activations, LoRA resolution, step FLOPs, placement).
        let _ = llmsize_train::train(spec, &llmsize_train::TrainOptions::default());
        let lora = llmsize_train::TrainOptions {
            checkpointing: true,
            lora: Some(llmsize_train::lora::LoraOptions {
                rank: 16,
                targets: llmsize_train::lora::LoraTargets::AllLinear,
                dropout: 0.0,
                dora: false,
            }),
            parallel: llmsize_train::parallel::Parallelism {
                dp: 2,
                tp: 2,
                pp: 2,
                micro_batches: 2,
                zero: 3,
                ..llmsize_train::parallel::Parallelism::default()
            },
            ..llmsize_train::TrainOptions::default()
        };
        let _ = llmsize_train::train(spec, &lora);
    });
}

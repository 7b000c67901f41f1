//! `llmsize-fuzz`: a mutation fuzzer that runs on stable Rust, with no coverage feedback.
//!
//! It takes the repository's fixture files as seeds, mutates them with a seeded generator
//! (each input depends only on the seed and its iteration number, so any input can be
//! written out again with `--dump`), and runs each through the weight-header readers and,
//! for what they accept and for JSON, through the adapters and the core. A stage that
//! panics, takes longer than `--max-input-ms` or allocates more than `--max-input-mib` is a
//! finding: its input is written to the findings directory and the run exits 1.
//!
//! It must never change what it tests: it calls only public entry points
//! (`parse_header`, `parse_index`, `read_config`, `spec_from_gguf`, `Checkpoint`,
//! `count`, `memory`, `flops`).

pub mod alloc;
mod mutate;
pub mod seeds;
pub mod targets;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use fastrand::Rng;

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
    /// A stage still running after this long is a hang: recorded, and the run stops.
    pub hang: Duration,
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
    /// Per stage: inputs run, slowest time, largest peak.
    pub stages: BTreeMap<&'static str, (u64, Duration, usize)>,
}

impl Summary {
    /// Whether a finding falls in `scope` (repeats are of the same stages as kept ones).
    #[must_use]
    pub fn fails(&self, scope: Scope) -> bool {
        self.findings.iter().any(|f| scope.contains(f.stage))
    }
}

/// Findings kept (and written) per signature.
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
fn mix(seed: u64, iteration: u64) -> u64 {
    let mut z = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(iteration)
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

struct Job {
    iteration: u64,
    bytes: Vec<u8>,
    data_len: Option<u64>,
    downstream: bool,
}

/// Run the fuzzer over `seeds`. `progress` receives a line every few seconds.
pub fn run(options: &Options, seeds: &[Seed], progress: &mut dyn FnMut(&str)) -> Summary {
    targets::install_panic_hook();
    let mut summary = Summary::default();
    let start = Instant::now();
    let (job_tx, job_rx) = mpsc::channel::<Job>();
    let (report_tx, report_rx) = mpsc::channel::<Vec<StageReport>>();
    let seed = options.seed;
    // The inputs run on a worker thread, so that one that hangs can be reported.
    let worker = thread::Builder::new()
        .name("llmsize-fuzz-worker".into())
        .spawn(move || {
            while let Ok(job) = job_rx.recv() {
                alloc::set_running(seed, job.iteration);
                let reports = exercise(&job.bytes, job.data_len, job.downstream);
                drop(job);
                if report_tx.send(reports).is_err() {
                    break;
                }
            }
        });
    if worker.is_err() {
        progress("could not start the worker thread");
        return summary;
    }
    let mut counts: BTreeMap<(Problem, &'static str, String), usize> = BTreeMap::new();
    let mut last_progress = Instant::now();
    let mut iteration = 0u64;
    loop {
        if options.iterations.is_some_and(|n| iteration >= n)
            || options.duration.is_some_and(|d| start.elapsed() >= d)
        {
            break;
        }
        let (index, bytes) = input(seeds, options.seed, iteration);
        let Some(seed_file) = seeds.get(index) else {
            break;
        };
        let kept = bytes.clone();
        let job = Job {
            iteration,
            bytes,
            data_len: seed_file.data_len,
            downstream: options.stages == Scope::All,
        };
        if job_tx.send(job).is_err() {
            break;
        }
        let Ok(reports) = report_rx.recv_timeout(options.hang) else {
            let mut finding = Finding {
                problem: Problem::Hang,
                stage: targets::running_stage(),
                detail: format!("still running after {} ms", options.hang.as_millis()),
                seed_file: seed_file.name.clone(),
                iteration,
                saved: None,
            };
            finding.saved = save(options, &finding, &kept);
            summary.findings.push(finding);
            summary.iterations = iteration + 1;
            break;
        };
        for r in &reports {
            let entry = summary
                .stages
                .entry(r.stage)
                .or_insert((0, Duration::ZERO, 0));
            entry.0 += 1;
            entry.1 = entry.1.max(r.elapsed);
            entry.2 = entry.2.max(r.peak_bytes);
            for (problem, detail) in problems(options, r) {
                let signature_text = detail.lines().next().unwrap_or_default().to_owned();
                let signature = match problem {
                    Problem::Panic => signature_text,
                    _ => String::new(),
                };
                let seen = counts.entry((problem, r.stage, signature)).or_insert(0);
                *seen += 1;
                if *seen > KEEP_PER_SIGNATURE {
                    summary.repeats += 1;
                    continue;
                }
                let mut finding = Finding {
                    problem,
                    stage: r.stage,
                    detail,
                    seed_file: seed_file.name.clone(),
                    iteration,
                    saved: None,
                };
                finding.saved = save(options, &finding, &kept);
                summary.findings.push(finding);
            }
        }
        iteration += 1;
        summary.iterations = iteration;
        if last_progress.elapsed() >= Duration::from_secs(5) {
            last_progress = Instant::now();
            let secs = start.elapsed().as_secs_f64();
            progress(&format!(
                "{iteration} inputs in {secs:.0} s ({:.0}/s), {} findings",
                f64::from(u32::try_from(iteration).unwrap_or(u32::MAX)) / secs.max(1e-9),
                summary.findings.len() as u64 + summary.repeats
            ));
        }
    }
    summary.elapsed = start.elapsed();
    summary
}

fn problems(options: &Options, r: &StageReport) -> Vec<(Problem, String)> {
    let mut out = Vec::new();
    if let Some(message) = &r.panic {
        out.push((Problem::Panic, message.clone()));
    }
    if r.elapsed > options.max_input {
        out.push((
            Problem::Slow,
            format!(
                "took {} ms (limit {} ms)",
                r.elapsed.as_millis(),
                options.max_input.as_millis()
            ),
        ));
    }
    if r.peak_bytes > options.max_input_bytes {
        out.push((
            Problem::Memory,
            format!(
                "allocated {} MiB at peak (limit {} MiB)",
                r.peak_bytes >> 20,
                options.max_input_bytes >> 20
            ),
        ));
    }
    out
}

/// Write a finding's input and a note beside it; returns the input's path.
fn save(options: &Options, finding: &Finding, bytes: &[u8]) -> Option<PathBuf> {
    std::fs::create_dir_all(&options.findings_dir).ok()?;
    let stage: String = finding
        .stage
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let base = format!(
        "{:?}-{stage}-seed{}-{}",
        finding.problem, options.seed, finding.iteration
    )
    .to_lowercase();
    let path = options.findings_dir.join(format!("{base}.bin"));
    std::fs::write(&path, bytes).ok()?;
    let mut note = String::new();
    let _ = writeln!(
        note,
        "problem: {:?}\nstage: {}\nseed file: {}\nrun seed: {}\niteration: {}\ndetail: {}\nreproduce: llmsize-fuzz --replay {} (or --seed {} --dump {})",
        finding.problem,
        finding.stage,
        finding.seed_file,
        options.seed,
        finding.iteration,
        finding.detail,
        path.display(),
        options.seed,
        finding.iteration
    );
    std::fs::write(options.findings_dir.join(format!("{base}.txt")), note).ok()?;
    Some(path)
}

/// The repository root, from where this crate sits in it.
#[must_use]
pub fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

//! The loop both modes share: make input `i`, run it on the worker thread, weigh what each
//! stage did, save and group the findings, and go on after a worker that hangs or parks.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::targets::{self, StageReport};
use crate::{Finding, Group, KEEP_PER_SIGNATURE, Options, Problem, Summary, alloc};

/// What the worker runs.
pub(crate) enum Job {
    /// Bytes through every reader (and, with `downstream`, the adapters and the core).
    Bytes {
        bytes: Vec<u8>,
        data_len: Option<u64>,
        downstream: bool,
    },
    /// A parsed config through `read_config_map` and the core.
    Config(Map<String, Value>),
}

impl Job {
    fn run(self) -> Vec<StageReport> {
        match self {
            Job::Bytes {
                bytes,
                data_len,
                downstream,
            } => targets::exercise(&bytes, data_len, downstream),
            Job::Config(map) => targets::exercise_config(map),
        }
    }
}

/// What names an input in findings.
pub(crate) struct Label {
    /// The seed file it was made from.
    pub(crate) seed_file: String,
    /// Its model type (numeric mode).
    pub(crate) model_type: Option<String>,
    /// The fields set and their values (numeric mode): `a.b` = 7.
    pub(crate) mutation: Option<String>,
}

/// How a mode makes and saves its inputs.
pub(crate) trait Source {
    /// The input of `iteration`, or `None` when there are no more.
    fn input(&mut self, iteration: u64) -> Option<(Job, Label)>;
    /// The bytes to save for `iteration` (made again: an input depends only on its
    /// iteration and the run's seed).
    fn bytes(&self, iteration: u64) -> Vec<u8>;
    /// The file extension of a saved input.
    fn extension(&self) -> &'static str;
    /// How to run a saved input again.
    fn replay_hint(&self, path: &str, iteration: u64) -> String;
    /// Called with each input's reports (numeric mode keeps per-type figures).
    fn observe(&mut self, _iteration: u64, _label: &Label, _reports: &[StageReport]) {}
}

/// Workers abandoned because they hung (each may keep a core busy): the run stops at the
/// next one.
const MAX_HUNG: usize = 1;
/// Workers abandoned because an allocation went past the hard cap (each sleeps, holding
/// what it had allocated): the run stops at the next one.
const MAX_PARKED: usize = 64;
/// How often the loop looks for a parked worker while waiting for a report.
const POLL: Duration = Duration::from_millis(20);
/// Cases listed per group of findings.
const MAX_CASES: usize = 400;

struct Worker {
    jobs: Sender<Job>,
    reports: Receiver<Vec<StageReport>>,
}

fn spawn_worker() -> Option<Worker> {
    let (jobs, job_rx) = mpsc::channel::<Job>();
    let (report_tx, reports) = mpsc::channel::<Vec<StageReport>>();
    thread::Builder::new()
        .name("llmsize-fuzz-worker".into())
        .spawn(move || {
            alloc::park_on_hard_cap();
            while let Ok(job) = job_rx.recv() {
                if report_tx.send(job.run()).is_err() {
                    break;
                }
            }
        })
        .ok()?;
    Some(Worker { jobs, reports })
}

/// How an input ended.
#[derive(Debug)]
pub enum Outcome {
    /// Every stage answered: what each did.
    Done(Vec<StageReport>),
    /// Still running after the hang limit (the stage it was in is
    /// [`targets::running_stage`]).
    Hung,
    /// An allocation of this many bytes would have passed the hard cap: the worker sleeps.
    Parked(usize),
}

/// Run one job on a worker of its own (as a run does), waiting at most `hang`.
pub(crate) fn run_one(job: Job, hang: Duration) -> Outcome {
    targets::install_panic_hook();
    let Some(worker) = spawn_worker() else {
        return Outcome::Hung;
    };
    if worker.jobs.send(job).is_err() {
        return Outcome::Hung;
    }
    wait(&worker, hang)
}

fn wait(worker: &Worker, hang: Duration) -> Outcome {
    let start = Instant::now();
    loop {
        match worker.reports.recv_timeout(POLL.min(hang)) {
            Ok(reports) => return Outcome::Done(reports),
            Err(RecvTimeoutError::Disconnected) => return Outcome::Hung,
            Err(RecvTimeoutError::Timeout) => {}
        }
        if let Some(bytes) = alloc::parked() {
            return Outcome::Parked(bytes);
        }
        if start.elapsed() >= hang {
            return Outcome::Hung;
        }
    }
}

/// The state of a run.
struct Run<'a> {
    options: &'a Options,
    summary: Summary,
    kept: BTreeMap<(Problem, &'static str, String, String), usize>,
}

/// Run `source`'s inputs until the options' limits. `progress` receives a line every few
/// seconds.
pub(crate) fn drive(
    options: &Options,
    source: &mut dyn Source,
    progress: &mut dyn FnMut(&str),
) -> Summary {
    targets::install_panic_hook();
    let start = Instant::now();
    let mut run = Run {
        options,
        summary: Summary::default(),
        kept: BTreeMap::new(),
    };
    let Some(mut worker) = spawn_worker() else {
        progress("could not start the worker thread");
        return run.summary;
    };
    let (mut hung, mut parked) = (0usize, 0usize);
    let mut last_progress = Instant::now();
    let mut iteration = 0u64;
    loop {
        if options.iterations.is_some_and(|n| iteration >= n)
            || options.duration.is_some_and(|d| start.elapsed() >= d)
        {
            break;
        }
        let Some((job, labelled)) = source.input(iteration) else {
            break;
        };
        // Named by the hard-cap message of a thread that is not a worker.
        alloc::set_running(options.seed, iteration);
        if worker.jobs.send(job).is_err() {
            break;
        }
        let abandoned = match wait(&worker, options.hang) {
            Outcome::Done(reports) => {
                source.observe(iteration, &labelled, &reports);
                for r in &reports {
                    run.weigh(source, iteration, &labelled, r);
                }
                None
            }
            Outcome::Hung => {
                hung += 1;
                let detail = format!("still running after {} ms", options.hang.as_millis());
                Some((Problem::Hang, detail, hung > MAX_HUNG))
            }
            Outcome::Parked(bytes) => {
                parked += 1;
                let detail = format!(
                    "asked for {} MiB more, past the hard cap of {} MiB in use (the worker was abandoned)",
                    bytes >> 20,
                    options.hard_cap_bytes >> 20
                );
                Some((Problem::Memory, detail, parked > MAX_PARKED))
            }
        };
        iteration += 1;
        run.summary.iterations = iteration;
        if let Some((problem, detail, stop)) = abandoned {
            source.observe(iteration - 1, &labelled, &[]);
            let stage = targets::running_stage();
            run.record(source, iteration - 1, &labelled, problem, stage, detail);
            run.summary.abandoned += 1;
            if stop {
                progress(&format!(
                    "stopping: {hung} workers hung and {parked} parked past the hard cap"
                ));
                break;
            }
            let Some(fresh) = spawn_worker() else {
                progress("could not start a fresh worker thread");
                break;
            };
            worker = fresh;
        }
        if last_progress.elapsed() >= Duration::from_secs(5) {
            last_progress = Instant::now();
            let secs = start.elapsed().as_secs_f64();
            progress(&format!(
                "{iteration} inputs in {secs:.0} s ({:.0}/s), {} findings",
                per_second(iteration, start.elapsed()),
                run.summary.findings.len() as u64 + run.summary.repeats
            ));
        }
    }
    run.summary.elapsed = start.elapsed();
    run.summary
}

/// Inputs per second.
#[must_use]
pub(crate) fn per_second(inputs: u64, elapsed: Duration) -> f64 {
    f64::from(u32::try_from(inputs).unwrap_or(u32::MAX)) / elapsed.as_secs_f64().max(1e-9)
}

impl Run<'_> {
    fn weigh(&mut self, source: &dyn Source, iteration: u64, l: &Label, r: &StageReport) {
        let entry = self.summary.stages.entry(r.stage).or_default();
        entry.inputs += 1;
        entry.total += r.elapsed;
        entry.slowest = entry.slowest.max(r.elapsed);
        entry.peak = entry.peak.max(r.peak_bytes);
        for (problem, detail) in problems(self.options, r) {
            self.record(source, iteration, l, problem, r.stage, detail);
        }
    }

    fn record(
        &mut self,
        source: &dyn Source,
        iteration: u64,
        l: &Label,
        problem: Problem,
        stage: &'static str,
        detail: String,
    ) {
        // A panic's first line is its location: the same location is the same cause.
        let signature = match problem {
            Problem::Panic => detail.lines().next().unwrap_or_default().to_owned(),
            _ => String::new(),
        };
        let group = self
            .summary
            .groups
            .entry((problem, stage, signature.clone()))
            .or_insert_with(|| Group {
                example: detail.clone(),
                ..Group::default()
            });
        group.count += 1;
        let case = match (&l.model_type, &l.mutation) {
            (Some(t), Some(m)) => format!("`{t}` {m}"),
            (Some(t), None) => format!("`{t}` (unmutated {})", l.seed_file),
            _ => l.seed_file.clone(),
        };
        if group.cases.len() < MAX_CASES || group.cases.contains_key(&case) {
            group
                .cases
                .entry(case)
                .or_insert_with(|| short(&detail, iteration));
        } else {
            group.cases_left_out += 1;
        }
        let kind = l.model_type.clone().unwrap_or_default();
        let seen = self
            .kept
            .entry((problem, stage, signature, kind))
            .or_insert(0);
        *seen += 1;
        if *seen > KEEP_PER_SIGNATURE {
            self.summary.repeats += 1;
            return;
        }
        let mut finding = Finding {
            problem,
            stage,
            detail,
            seed_file: l.seed_file.clone(),
            iteration,
            model_type: l.model_type.clone(),
            mutation: l.mutation.clone(),
            saved: None,
        };
        finding.saved = save(self.options, source, &finding);
        self.summary.findings.push(finding);
    }
}

/// A finding's detail in a few words: a panic's message (not its location), else the
/// measure; with the iteration.
fn short(detail: &str, iteration: u64) -> String {
    let mut lines = detail.lines();
    let first = lines.next().unwrap_or_default();
    let text = lines.next().unwrap_or(first);
    let text: String = text.chars().take(160).collect();
    format!("{text} (iteration {iteration})")
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
fn save(options: &Options, source: &dyn Source, finding: &Finding) -> Option<PathBuf> {
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
    let path = options
        .findings_dir
        .join(format!("{base}.{}", source.extension()));
    std::fs::write(&path, source.bytes(finding.iteration)).ok()?;
    let mut note = String::new();
    let _ = writeln!(
        note,
        "problem: {:?}\nstage: {}\nseed file: {}",
        finding.problem, finding.stage, finding.seed_file
    );
    if let Some(t) = &finding.model_type {
        let _ = writeln!(note, "model type: {t}");
    }
    if let Some(m) = &finding.mutation {
        let _ = writeln!(note, "mutation: {m}");
    }
    let _ = writeln!(
        note,
        "run seed: {}\niteration: {}\ndetail: {}\nreproduce: {}",
        options.seed,
        finding.iteration,
        finding.detail,
        source.replay_hint(&path.display().to_string(), finding.iteration)
    );
    std::fs::write(options.findings_dir.join(format!("{base}.txt")), note).ok()?;
    Some(path)
}

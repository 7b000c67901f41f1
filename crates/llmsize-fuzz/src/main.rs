//! `llmsize-fuzz`: see the library's documentation. Exit status: 0 no finding, 1 findings,
//! 2 usage or setup error.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command-line tool: the report goes to stdout, progress to stderr"
)]

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use llmsize_fuzz::numbers::{self, NumbersSummary, Origin, Plan};
use llmsize_fuzz::targets::StageReport;
use llmsize_fuzz::{
    Options, Outcome, Problem, Scope, Seed, Summary, alloc, input, repository_root, run, seeds,
};

/// Mutation fuzzer for the weight-header readers and the config → spec → count path.
///
/// Seeds are the repository's fixtures: SafeTensors and GGUF headers, and config.json files.
/// Each input runs through `safetensors::parse_header`, `gguf::parse_header` (real length and
/// `u64::MAX`), `parse_index`, and what they accept (and every JSON input) through the
/// adapters and the core's count, memory and flops. A panic, a stage slower than
/// --max-input-ms or allocating more than --max-input-mib is a finding: its input goes to
/// the findings directory, and the exit status is 1.
///
/// `--mode numbers` instead sets every integer field of every model type's config (JSON
/// seeds, and a generated seed for each type no fixture has) to boundary values, and runs
/// each through `read_config_map` and the core's count, memory, flops and train, round-robin
/// over the types so that every reader is reached early.
#[derive(Parser, Debug)]
#[command(name = "llmsize-fuzz", version)]
struct Args {
    /// What to mutate: the seed files' bytes, or the integers of the configs.
    #[arg(long, value_enum, default_value_t = Mode::Bytes)]
    mode: Mode,
    /// With `--mode numbers`: exit 1 when some supported model type's reader was not reached.
    #[arg(long)]
    require_all_types: bool,
    /// Stop after this many inputs (default 10000 when --seconds is not given).
    #[arg(long)]
    iterations: Option<u64>,
    /// Stop after this many seconds.
    #[arg(long)]
    seconds: Option<f64>,
    /// Seed of the generator: the same seed gives the same inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// A stage that takes longer than this on one input is a finding.
    #[arg(long, default_value_t = 1000)]
    max_input_ms: u64,
    /// A stage whose allocations peak above this on one input is a finding.
    #[arg(long, default_value_t = 256)]
    max_input_mib: u64,
    /// An input still running after this long is a finding: its worker is abandoned and
    /// the run goes on with a fresh one (it stops at the second).
    #[arg(long, default_value_t = 60_000)]
    hang_ms: u64,
    /// Which stages run: the weight readers only, or all.
    #[arg(long, value_enum, default_value_t = ScopeArg::All)]
    stages: ScopeArg,
    /// Which findings make the exit status 1: in any stage, or only in the weight readers
    /// (findings elsewhere are still saved and printed).
    #[arg(long, value_enum, default_value_t = ScopeArg::All)]
    fail_on: ScopeArg,
    /// An allocation that would take the bytes in use past this many MiB never returns:
    /// the input is a finding, its worker is abandoned and the run goes on with a fresh one
    /// (up to 64 times), so that a blow-up does not take the machine down.
    #[arg(long, default_value_t = 4096)]
    hard_cap_mib: u64,
    /// Repository root (seeds are read from its fixtures).
    #[arg(long)]
    root: Option<PathBuf>,
    /// Where to write findings [default: <root>/target/fuzz-findings].
    #[arg(long)]
    findings: Option<PathBuf>,
    /// Write the input of this iteration (with --seed) to the findings directory and exit.
    #[arg(long)]
    dump: Option<u64>,
    /// Run one file through every stage and print what each did.
    #[arg(long, conflicts_with = "dump")]
    replay: Option<PathBuf>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Byte and JSON-text mutations of every seed file, through every stage.
    Bytes,
    /// Integer fields of the config seeds set to boundary values, through the reader and
    /// the core.
    Numbers,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum ScopeArg {
    Weights,
    All,
}

impl From<ScopeArg> for Scope {
    fn from(s: ScopeArg) -> Scope {
        match s {
            ScopeArg::Weights => Scope::Weights,
            ScopeArg::All => Scope::All,
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let root = args.root.clone().unwrap_or_else(repository_root);
    let findings_dir = args
        .findings
        .clone()
        .unwrap_or_else(|| root.join("target/fuzz-findings"));
    let hard_cap_bytes =
        usize::try_from(args.hard_cap_mib.saturating_mul(1 << 20)).unwrap_or(usize::MAX);
    alloc::set_hard_cap(hard_cap_bytes);

    if let Some(path) = &args.replay {
        let hang = Duration::from_millis(args.hang_ms);
        return replay(args.mode, path, hang, args.hard_cap_mib);
    }

    let seeds = match seeds::load(&root) {
        Ok(s) if !s.is_empty() => s,
        Ok(_) => {
            eprintln!("error: no seed files under `{}`", root.display());
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!(
                "error: failed to read the seeds under `{}`: {e}",
                root.display()
            );
            return ExitCode::from(2);
        }
    };
    let plan = (args.mode == Mode::Numbers).then(|| Plan::new(&seeds, args.seed));

    if let Some(iteration) = args.dump {
        return dump(&args, &seeds, plan.as_ref(), &findings_dir, iteration);
    }

    let options = Options {
        iterations: args.iterations.or(if args.seconds.is_none() {
            Some(10_000)
        } else {
            None
        }),
        duration: args.seconds.map(|s| Duration::from_secs_f64(s.max(0.0))),
        seed: args.seed,
        max_input: Duration::from_millis(args.max_input_ms),
        max_input_bytes: usize::try_from(args.max_input_mib.saturating_mul(1 << 20))
            .unwrap_or(usize::MAX),
        hang: Duration::from_millis(args.hang_ms),
        hard_cap_bytes,
        findings_dir,
        stages: args.stages.into(),
    };
    match &plan {
        Some(plan) => run_numbers(&args, &options, plan),
        None => run_bytes(&args, &options, &seeds),
    }
}

/// Run one file through the stages of `mode` and print what each did.
fn replay(mode: Mode, path: &std::path::Path, hang: Duration, hard_cap_mib: u64) -> ExitCode {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: failed to read `{}`: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let config = match mode {
        Mode::Bytes => None,
        Mode::Numbers => match serde_json::from_slice::<serde_json::Value>(&bytes) {
            Ok(serde_json::Value::Object(map)) => Some(map),
            Ok(_) => {
                eprintln!("error: `{}` is not a JSON object", path.display());
                return ExitCode::from(2);
            }
            Err(e) => {
                eprintln!("error: `{}` is not JSON: {e}", path.display());
                return ExitCode::from(2);
            }
        },
    };
    match llmsize_fuzz::replay(bytes, config, hang) {
        Outcome::Done(reports) => print_reports(&reports),
        Outcome::Hung => println!(
            "{:45} still running after {} ms",
            llmsize_fuzz::targets::running_stage(),
            hang.as_millis()
        ),
        Outcome::Parked(bytes) => println!(
            "{:45} asked for {} MiB more, past `--hard-cap-mib` {hard_cap_mib}",
            llmsize_fuzz::targets::running_stage(),
            bytes >> 20
        ),
    }
    ExitCode::SUCCESS
}

fn print_reports(reports: &[StageReport]) {
    for r in reports {
        println!(
            "{:45} {:>9.3} ms {:>10} KiB  {}",
            r.stage,
            r.elapsed.as_secs_f64() * 1000.0,
            r.peak_bytes >> 10,
            r.panic.as_deref().unwrap_or("ok")
        );
    }
}

/// Write input `iteration` to the findings directory.
fn dump(
    args: &Args,
    seeds: &[Seed],
    plan: Option<&Plan>,
    findings_dir: &std::path::Path,
    iteration: u64,
) -> ExitCode {
    let (bytes, from, ext) = if let Some(plan) = plan {
        let Some(case) = plan.case(iteration) else {
            eprintln!("error: no input {iteration} in the numeric mode (no seeds)");
            return ExitCode::from(2);
        };
        let seed = plan.seeds.get(case.seed).map_or("?", |s| s.name.as_str());
        let from = format!("{seed}, {}", Plan::describe(&case));
        let json = serde_json::to_vec_pretty(&plan.config(&case)).unwrap_or_default();
        (json, from, "json")
    } else {
        let (index, bytes) = input(seeds, args.seed, iteration);
        let from = seeds.get(index).map_or("?", |s| s.name.as_str()).to_owned();
        (bytes, from, "bin")
    };
    let path = findings_dir.join(format!("input-seed{}-{iteration}.{ext}", args.seed));
    let written = std::fs::create_dir_all(findings_dir).and_then(|()| std::fs::write(&path, bytes));
    if let Err(e) = written {
        eprintln!("error: failed to write `{}`: {e}", path.display());
        return ExitCode::from(2);
    }
    println!("{} (from {from})", path.display());
    ExitCode::SUCCESS
}

fn run_bytes(args: &Args, options: &Options, seeds: &[Seed]) -> ExitCode {
    eprintln!(
        "llmsize-fuzz: seed {}, {} seed files, findings in `{}`",
        options.seed,
        seeds.len(),
        options.findings_dir.display()
    );
    let summary = run(options, seeds, &mut |line| {
        eprintln!("llmsize-fuzz: {line}");
    });
    println!(
        "{} inputs in {:.1} s, seed {}",
        summary.iterations,
        summary.elapsed.as_secs_f64(),
        options.seed
    );
    print_stages(&summary);
    if summary.findings.is_empty() {
        println!("no findings");
        return ExitCode::SUCCESS;
    }
    let fail_on = Scope::from(args.fail_on);
    println!(
        "\n{} findings ({} more of the same kinds not saved):",
        summary.findings.len(),
        summary.repeats
    );
    for f in &summary.findings {
        println!(
            "  {:?} in {} (iteration {}, from {}): {}",
            f.problem,
            f.stage,
            f.iteration,
            f.seed_file,
            f.detail.lines().next().unwrap_or_default()
        );
        if let Some(path) = &f.saved {
            println!("    input: {}", path.display());
        }
    }
    if summary.fails(fail_on) {
        ExitCode::from(1)
    } else {
        let scope = match args.fail_on {
            ScopeArg::Weights => "weights",
            ScopeArg::All => "all",
        };
        println!("(none in the stages of `--fail-on {scope}`: exit 0)");
        ExitCode::SUCCESS
    }
}

fn print_stages(summary: &Summary) {
    println!(
        "{:45} {:>9} {:>12} {:>12} {:>12}",
        "stage", "inputs", "mean", "slowest", "peak"
    );
    for (stage, st) in &summary.stages {
        let mean =
            st.total.as_secs_f64() / f64::from(u32::try_from(st.inputs.max(1)).unwrap_or(u32::MAX));
        println!(
            "{stage:45} {:>9} {:>9.3} ms {:>9.1} ms {:>8} KiB",
            st.inputs,
            mean * 1000.0,
            st.slowest.as_secs_f64() * 1000.0,
            st.peak >> 10
        );
    }
}

fn run_numbers(args: &Args, options: &Options, plan: &Plan) -> ExitCode {
    eprintln!(
        "llmsize-fuzz: numeric mode, seed {}, {} model types, {} config seeds, {} inputs to set every field to every value, findings in `{}`",
        options.seed,
        plan.types.len(),
        plan.seeds.len(),
        plan.total(),
        options.findings_dir.display()
    );
    let summary = numbers::run(options, plan, &mut |line| {
        eprintln!("llmsize-fuzz: {line}");
    });
    print_coverage(plan, options.seed, &summary);
    write_type_table(plan, options, &summary);
    print_stages(&summary.run);
    print_groups(&summary.run);
    let unreached = summary.unreached(plan);
    let mut code = ExitCode::SUCCESS;
    if !unreached.is_empty() {
        println!(
            "types not reached: {}",
            llmsize_core::limits::a_few(&unreached)
        );
        if args.require_all_types {
            println!("(`--require-all-types`: exit 1)");
            code = ExitCode::from(1);
        }
    }
    if summary.run.fails(Scope::from(args.fail_on)) {
        code = ExitCode::from(1);
    }
    code
}

/// Inputs and their rate, types reached, fields set, and the slowest stage per type.
fn print_coverage(plan: &Plan, seed: u64, s: &NumbersSummary) {
    let run = &s.run;
    let secs = run.elapsed.as_secs_f64();
    println!(
        "{} inputs in {secs:.1} s ({:.0} inputs/s), seed {}, mode numbers",
        run.iterations,
        f64::from(u32::try_from(run.iterations).unwrap_or(u32::MAX)) / secs.max(1e-9),
        seed
    );
    let reached = s.types.iter().filter(|t| t.inputs > 0).count();
    let accepted = s.types.iter().filter(|t| t.accepted > 0).count();
    println!(
        "types reached: {reached} / {} (an input accepted by the reader: {accepted})",
        plan.types.len()
    );
    let generated: Vec<String> = plan
        .generated()
        .iter()
        .map(|(t, o)| match o {
            Origin::Nested(file, path) => format!("{t} (`{path}` of {file})"),
            Origin::Preset(id) => format!("{t} (preset {id})"),
            Origin::Bare => format!("{t} (bare)"),
            Origin::File => (*t).to_owned(),
        })
        .collect();
    println!(
        "generated seeds: {} types{}{}",
        generated.len(),
        if generated.is_empty() { "" } else { ": " },
        generated.join(", ")
    );
    let total = plan.total();
    println!(
        "fields mutated: {} of {} (distinct type and path); enumeration: {} of {total} inputs ({:.1}%){}",
        s.fields_mutated,
        plan.distinct_fields(),
        run.iterations.min(total),
        100.0 * f64::from(u32::try_from(run.iterations.min(total)).unwrap_or(u32::MAX))
            / f64::from(u32::try_from(total.max(1)).unwrap_or(u32::MAX)),
        s.covered_at.map_or(String::new(), |(n, d)| format!(
            ", complete after {n} inputs in {:.1} s",
            d.as_secs_f64()
        ))
    );
    let by_value: Vec<String> = s
        .by_value
        .iter()
        .enumerate()
        .map(|(i, (n, d))| {
            let name = numbers::VALUES.get(i).copied().unwrap_or("two fields");
            let mean = d.as_secs_f64() / f64::from(u32::try_from((*n).max(1)).unwrap_or(u32::MAX));
            format!("{name} {:.3}", mean * 1000.0)
        })
        .collect();
    println!("mean ms per input, by value: {}", by_value.join(", "));
    let mut slowest: Vec<(&str, &(Duration, &str, String))> = plan
        .types
        .iter()
        .zip(&s.types)
        .filter_map(|(t, st)| Some((t.model_type, st.slowest.as_ref()?)))
        .collect();
    slowest.sort_by_key(|(_, (d, _, _))| std::cmp::Reverse(*d));
    println!("slowest stage per type (top 10):");
    for (t, (d, stage, what)) in slowest.iter().take(10) {
        println!(
            "  {t:28} {stage:32} {:>9.1} ms  {what}",
            d.as_secs_f64() * 1000.0
        );
    }
}

/// Every type's slowest and largest stage, in a table beside the findings (the console
/// shows the ten slowest).
fn write_type_table(plan: &Plan, options: &Options, s: &NumbersSummary) {
    let mut table = String::from(
        "model_type\tinputs\taccepted\tslowest_ms\tslowest_stage\tslowest_input\tpeak_mib\tpeak_stage\tpeak_input\n",
    );
    for (t, st) in plan.types.iter().zip(&s.types) {
        let (ms, stage, what) = st.slowest.as_ref().map_or((0.0, "", ""), |(d, stage, w)| {
            (d.as_secs_f64() * 1000.0, *stage, w.as_str())
        });
        let (mib, pstage, pwhat) = st
            .largest
            .as_ref()
            .map_or((0, "", ""), |(b, stage, w)| (b >> 20, *stage, w.as_str()));
        let _ = writeln!(
            table,
            "{}\t{}\t{}\t{ms:.1}\t{stage}\t{what}\t{mib}\t{pstage}\t{pwhat}",
            t.model_type, st.inputs, st.accepted
        );
    }
    let path = options
        .findings_dir
        .join(format!("numbers-types-seed{}.tsv", options.seed));
    let written =
        std::fs::create_dir_all(&options.findings_dir).and_then(|()| std::fs::write(&path, table));
    match written {
        Ok(()) => println!("every type's slowest and largest stage: {}", path.display()),
        Err(e) => eprintln!("error: failed to write `{}`: {e}", path.display()),
    }
}

/// Every finding, grouped by cause, with the inputs that showed it.
fn print_groups(run: &Summary) {
    if run.groups.is_empty() {
        println!("no findings");
        return;
    }
    println!(
        "\nfindings: {} inputs, {} causes ({} inputs saved, {} workers abandoned)",
        run.groups.values().map(|g| g.count).sum::<u64>(),
        run.groups.len(),
        run.findings.len(),
        run.abandoned
    );
    for ((problem, stage, signature), g) in &run.groups {
        let cause = match problem {
            Problem::Panic => signature.clone(),
            Problem::Slow => "slower than `--max-input-ms`".to_owned(),
            Problem::Memory => {
                "more than `--max-input-mib` at peak, or past `--hard-cap-mib`".to_owned()
            }
            Problem::Hang => "still running after `--hang-ms`".to_owned(),
        };
        println!(
            "\n{problem:?} in {stage}: {cause} ({} inputs, {} cases{})",
            g.count,
            g.cases.len(),
            if g.cases_left_out > 0 {
                format!(", {} more not listed", g.cases_left_out)
            } else {
                String::new()
            }
        );
        for (case, detail) in &g.cases {
            println!("  {case}: {detail}");
        }
    }
}

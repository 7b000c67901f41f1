//! A short, bounded fuzz run, so that `cargo test --workspace` covers the harness and the
//! readers: a few thousand mutated inputs through the weight-header readers (no finding
//! allowed), and every unmutated seed once through the whole path (readers, adapters, core).

#![allow(clippy::print_stderr, reason = "test output names the findings")]

use std::time::Duration;

use llmsize_fuzz::{Options, Scope, Summary, repository_root, run, seeds};

fn options(iterations: u64, stages: Scope) -> Options {
    Options {
        iterations: Some(iterations),
        duration: Some(Duration::from_mins(1)),
        seed: 20_261_130,
        // Generous: this runs unoptimised, next to other tests.
        max_input: Duration::from_secs(5),
        max_input_bytes: 256 << 20,
        hang: Duration::from_mins(2),
        hard_cap_bytes: usize::MAX,
        findings_dir: repository_root().join("target/fuzz-findings"),
        stages,
    }
}

fn report(summary: &Summary) {
    for f in &summary.findings {
        eprintln!(
            "{:?} in {} (iteration {}, from {}): {}",
            f.problem, f.stage, f.iteration, f.seed_file, f.detail
        );
    }
}

#[test]
fn mutated_inputs_through_the_readers() {
    let seeds = seeds::load(&repository_root()).unwrap();
    assert!(seeds.len() > 100, "{} seeds", seeds.len());
    let summary = run(&options(3000, Scope::Weights), &seeds, &mut |_| {});
    report(&summary);
    assert!(summary.iterations >= 1000, "{} inputs", summary.iterations);
    assert!(!summary.fails(Scope::Weights));
}

#[test]
fn every_seed_through_the_whole_path() {
    let seeds = seeds::load(&repository_root()).unwrap();
    for seed in &seeds {
        let reports = llmsize_fuzz::exercise(&seed.bytes, seed.data_len, true);
        for r in &reports {
            assert!(
                r.panic.is_none(),
                "{}: {} panicked: {:?}",
                seed.name,
                r.stage,
                r.panic
            );
        }
        let stages: Vec<&str> = reports.iter().map(|r| r.stage).collect();
        // Every seed is accepted by its reader and reaches its next stage.
        let expected = match seed.kind {
            llmsize_fuzz::Kind::Json => "adapters::read_config",
            llmsize_fuzz::Kind::Gguf => "adapters::checkpoint (gguf)",
            llmsize_fuzz::Kind::Safetensors => "adapters::checkpoint (safetensors)",
        };
        assert!(stages.contains(&expected), "{}: {stages:?}", seed.name);
    }
}

#[test]
fn inputs_depend_only_on_seed_and_iteration() {
    let seeds = seeds::load(&repository_root()).unwrap();
    for i in [0, 1, 17, 999] {
        assert_eq!(
            llmsize_fuzz::input(&seeds, 5, i),
            llmsize_fuzz::input(&seeds, 5, i)
        );
    }
    assert_ne!(
        llmsize_fuzz::input(&seeds, 5, 3),
        llmsize_fuzz::input(&seeds, 6, 3)
    );
}

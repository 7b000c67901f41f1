//! The numeric mode: a short fixed run reaches every supported model type's reader, the
//! enumeration depends only on the run's seed and sets every field of every type to every
//! value exactly once, and the fields are found where configs nest them.
//!
//! Its own test binary: the hard cap it sets is process-wide.

#![allow(clippy::print_stderr, reason = "test output names the findings")]

use std::collections::HashSet;
use std::process::Command;
use std::time::Duration;

use llmsize_fuzz::numbers::{self, FieldPath, Plan, SLOTS_PER_FIELD, Step, VALUES};
use llmsize_fuzz::{Options, Scope, alloc, repository_root, seeds};
use serde_json::{Map, Value, json};

const SEED: u64 = 20_261_130;

#[allow(
    clippy::unwrap_used,
    reason = "a test helper: no seeds is a failed test"
)]
fn plan(seed: u64) -> Plan {
    Plan::new(&seeds::load(&repository_root()).unwrap(), seed)
}

#[test]
fn a_short_fixed_run_reaches_every_type() {
    let plan = plan(SEED);
    let supported = llmsize_adapters::hf_config::supported_model_types();
    assert_eq!(plan.types.len(), supported.len());
    // The first round gives every type one input: as many inputs as types reach them all.
    let n = plan.types.len() as u64;
    // A config that asks for more than this parks the worker: the run goes on.
    alloc::set_hard_cap(2 << 30);
    let options = Options {
        iterations: Some(n),
        duration: Some(Duration::from_mins(5)),
        seed: SEED,
        // Generous: this runs unoptimised, next to other tests. The adapters' findings of
        // the day are not this test's business: reaching every reader is.
        max_input: Duration::from_mins(1),
        max_input_bytes: usize::MAX,
        hang: Duration::from_mins(2),
        hard_cap_bytes: 2 << 30,
        findings_dir: repository_root().join("target/fuzz-findings/numbers-test"),
        stages: Scope::All,
    };
    let summary = numbers::run(&options, &plan, &mut |_| {});
    for f in &summary.run.findings {
        eprintln!(
            "{:?} in {} ({}, {}): {}",
            f.problem,
            f.stage,
            f.model_type.as_deref().unwrap_or("?"),
            f.mutation.as_deref().unwrap_or("?"),
            f.detail
        );
    }
    assert_eq!(summary.run.iterations, n);
    assert_eq!(summary.unreached(&plan), Vec::<&str>::new());
    for (t, stats) in plan.types.iter().zip(&summary.types) {
        assert_eq!(stats.inputs, 1, "{}", t.model_type);
    }
}

#[test]
fn the_enumeration_is_deterministic_for_a_seed() {
    let (a, b, other) = (plan(5), plan(5), plan(6));
    let total = a.total();
    let samples = [
        0,
        1,
        275,
        276,
        1000,
        total / 2,
        total - 1,
        total,
        total + 17,
    ];
    for i in samples {
        assert_eq!(a.case(i), b.case(i), "input {i}");
        assert_eq!(a.config(&a.case(i).unwrap()), b.config(&b.case(i).unwrap()));
    }
    // Another seed draws another order of fields (over the first round's 276 inputs, some
    // type starts on another field).
    assert!((0..276).any(|i| a.case(i) != other.case(i)));
}

#[test]
fn the_enumeration_sets_every_field_to_every_value_once() {
    let plan = plan(SEED);
    let total = plan.total();
    let expected: u64 = plan
        .types
        .iter()
        .map(|t| (t.slots.len() * SLOTS_PER_FIELD).max(1) as u64)
        .sum();
    assert_eq!(total, expected);
    let mut seen = HashSet::new();
    let mut round_robin = Vec::new();
    for i in 0..total {
        let case = plan.case(i).unwrap();
        if i < plan.types.len() as u64 {
            round_robin.push(case.type_index);
        }
        let slot = case.slot.map(|s| (s, case.value.unwrap()));
        assert!(
            seen.insert((case.type_index, slot)),
            "input {i} repeats {case:?}"
        );
        if let Some(v) = case.value.filter(|v| *v < VALUES.len()) {
            assert_eq!(case.mutations.len(), 1);
            let want: Value = serde_json::from_str(VALUES[v]).unwrap();
            assert_eq!(case.mutations[0].1, want);
        }
    }
    assert_eq!(seen.len() as u64, total);
    // Round-robin: the first inputs are one of each type, in registry order.
    assert_eq!(round_robin, (0..plan.types.len()).collect::<Vec<_>>());
}

#[test]
fn integer_fields_are_found_in_nested_objects_and_arrays() {
    let config = json!({
        "model_type": "llama",
        "num_hidden_layers": 2,
        "rope_theta": 10000.0,
        "tie_word_embeddings": true,
        "text_config": {"num_hidden_layers": 3, "vision": {"n_layers": 4}},
        "mrope_section": [16, 24, 24, 8, 8],
        "negative": -1,
        "label": "7",
    });
    let Value::Object(map) = config else {
        unreachable!()
    };
    let paths: Vec<String> = numbers::integer_fields(&map)
        .iter()
        .map(ToString::to_string)
        .collect();
    // The first three elements of an array and its last; floats, booleans and strings are
    // not integers.
    assert_eq!(
        paths,
        [
            "num_hidden_layers",
            "text_config.num_hidden_layers",
            "text_config.vision.n_layers",
            "mrope_section[0]",
            "mrope_section[1]",
            "mrope_section[2]",
            "mrope_section[4]",
            "negative",
        ]
    );
    let mut map: Map<String, Value> = map;
    let path = FieldPath(vec![
        Step::Key("text_config".into()),
        Step::Key("vision".into()),
        Step::Key("n_layers".into()),
    ]);
    assert!(numbers::set(&mut map, &path, json!(4_294_967_295u64)));
    assert_eq!(
        map["text_config"]["vision"]["n_layers"],
        json!(4_294_967_295u64)
    );
    let absent = FieldPath(vec![Step::Key("nope".into())]);
    assert!(!numbers::set(&mut map, &absent, json!(1)));
}

#[test]
fn a_saved_config_replays_through_the_numeric_stages() {
    let dir = repository_root().join("target/fuzz-findings/numbers-test");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("replay-llama.json");
    std::fs::write(
        &path,
        r#"{"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
            "intermediate_size": 128, "num_attention_heads": 4, "vocab_size": 100}"#,
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_llmsize-fuzz"))
        .args(["--mode", "numbers", "--replay"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let stages: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        stages,
        [
            "adapters::read_config_map",
            "core::count::count",
            "core::memory::memory",
            "core::flops::flops",
            "train::train",
        ]
    );
    assert!(text.lines().all(|l| l.ends_with("ok")), "{text}");
}

#[test]
fn require_all_types_fails_a_run_that_misses_some() {
    let findings = repository_root().join("target/fuzz-findings/numbers-test");
    let out = Command::new(env!("CARGO_BIN_EXE_llmsize-fuzz"))
        .args([
            "--mode",
            "numbers",
            "--iterations",
            "1",
            "--require-all-types",
        ])
        .arg("--findings")
        .arg(&findings)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("types reached: 1 / "), "{text}");
    assert!(text.contains("types not reached: "), "{text}");
}

//! Configs that hold hostile numbers: every count bounded, every overflow a named error, never
//! a panic, and the time and memory of a read independent of the numbers.
//!
//! Each fixed case asserts its exact message (the file, the key as the user wrote it, the
//! bound); the sweep reads every class-default config of the coverage set
//! (`tests/fixtures/coverage/configs`) with each integer field, nested ones included, set to
//! `2^64 − 1` and to 1,000,000, and asserts that each read returns (Ok or a typed error) and
//! that none takes long. Times are asserted with a wide margin (a debug build): the bound
//! catches work that grows with a number (a 2^32-entry `Vec` takes minutes and 16 GiB), not
//! a slow machine.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

use std::path::PathBuf;
// Reads are timed by the test thread's CPU time, not the wall clock: a machine busy with other
// builds makes a read wait, not work longer, and must not fail the bound.
use cpu_time::ThreadTime as Instant;
use std::time::Duration;

use llmsize_adapters::hf_config::{ReadOptions, read_config};
use serde_json::Value;

fn coverage_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/coverage/configs")
}

fn coverage(name: &str) -> Value {
    let path = coverage_dir().join(format!("{name}.default.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `config` with the value at `path` (`vision_config.n_layers`) set to `value`.
fn with(mut config: Value, path: &str, value: Value) -> Value {
    let mut target = &mut config;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            target[part] = value;
            break;
        }
        target = &mut target[part];
    }
    config
}

/// The error of reading `config` as `config.json`, and how long the read took.
fn error_of(config: &Value) -> (String, Duration) {
    let text = config.to_string();
    let start = Instant::now();
    let result = read_config(&text, "config.json", "m", &ReadOptions::default());
    let took = start.elapsed();
    match result {
        Ok(spec) => panic!("expected an error, read {} layers", spec.num_layers()),
        Err(e) => (e.to_string(), took),
    }
}

/// Generous for a debug build; an unbounded read of the cases below takes minutes.
const QUICK: Duration = Duration::from_secs(1);

#[test]
fn a_vision_tower_of_four_billion_layers_is_refused_by_name() {
    // 2^32 − 1 layers allocated 16 GiB (one float per layer of the scale plan).
    let config = with(
        coverage("inkling_mm_model"),
        "vision_config.n_layers",
        Value::from(4_294_967_295u64),
    );
    let (e, took) = error_of(&config);
    assert_eq!(
        e,
        "`config.json`: key `vision_config.n_layers` is 4294967295: expected at most 1,000,000 layers (llmsize's bound on one stack or tower)"
    );
    assert!(took < QUICK, "{took:?}");
}

#[test]
fn a_text_stack_past_the_bound_is_refused_by_its_path() {
    let config = with(
        coverage("llava"),
        "text_config.num_hidden_layers",
        Value::from(1_000_001u64),
    );
    let (e, took) = error_of(&config);
    assert_eq!(
        e,
        "`config.json`: key `text_config.num_hidden_layers` is 1000001: expected at most 1,000,000 layers (llmsize's bound on one stack or tower)"
    );
    assert!(took < QUICK, "{took:?}");
}

#[test]
fn a_byte_order_mark_is_named() {
    let text = format!("\u{feff}{}", coverage("llama"));
    let e = read_config(&text, "config.json", "m", &ReadOptions::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "`config.json` starts with a UTF-8 byte-order mark (EF BB BF): JSON text must not (Python's `json.loads`, which transformers uses, refuses it too); save the file without it"
    );
}

/// `config` as JSON text with the value of top-level `key` written as the Python literal
/// `literal` (which JSON has no spelling for).
fn with_literal(config: &Value, key: &str, literal: &str) -> String {
    let config = with(config.clone(), key, Value::from("@@LITERAL@@"));
    config.to_string().replace("\"@@LITERAL@@\"", literal)
}

#[test]
fn non_finite_numbers_in_a_key_that_is_read_are_named() {
    let llama = coverage("llama");
    let text = with_literal(&llama, "hidden_size", "Infinity");
    let e = read_config(&text, "config.json", "m", &ReadOptions::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "`config.json`: key `hidden_size` is `Infinity`: expected a positive integer"
    );
    let text = with_literal(&llama, "num_key_value_heads", "NaN");
    let e = read_config(&text, "config.json", "m", &ReadOptions::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "`config.json`: key `num_key_value_heads` is `NaN`: expected a positive integer"
    );
    // In a sub-config, by its path.
    let llava = coverage("llava");
    let mut vision = llava["vision_config"].clone();
    vision["hidden_size"] = Value::from("@@LITERAL@@");
    let text = with(llava, "vision_config", vision)
        .to_string()
        .replace("\"@@LITERAL@@\"", "-Infinity");
    let e = read_config(&text, "config.json", "m", &ReadOptions::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "`config.json`: key `vision_config.hidden_size` is `-Infinity`: expected a positive integer"
    );
}

#[test]
fn non_finite_numbers_in_keys_nobody_reads_still_parse() {
    // Mamba-2's class default (as transformers writes it) carries `time_step_limit:
    // [0.0, Infinity]`, which no size depends on: the same count as with a finite limit.
    let path = coverage_dir().join("mamba2.default.json");
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains("Infinity"), "the fixture holds the literal");
    let spec = read_config(&text, "config.json", "m", &ReadOptions::default()).unwrap();
    let finite = text.replace("Infinity", "1e300");
    let plain = read_config(&finite, "config.json", "m", &ReadOptions::default()).unwrap();
    let total = |s: &llmsize_core::ModelSpec| llmsize_core::count(s).unwrap().total;
    assert_eq!(total(&spec), total(&plain));
    assert!(total(&spec) > 0);
}

#[test]
fn non_finite_numbers_read_as_optional_are_named_too() {
    // `max_position_embeddings` is read where it holds a number, and skipped otherwise: a
    // `NaN` there must not read as "absent".
    let text = with_literal(&coverage("llama"), "max_position_embeddings", "NaN");
    let e = read_config(&text, "config.json", "m", &ReadOptions::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "`config.json`: key `max_position_embeddings` is `NaN`: expected a finite number (transformers cannot build a model from it either)"
    );
}

/// Every integer in `v` (nested objects and lists included; `id2label`/`label2id` are
/// names), as paths of keys and list indices.
fn integer_paths(v: &Value, path: &mut Vec<PathStep>, out: &mut Vec<Vec<PathStep>>) {
    match v {
        Value::Number(n) if n.is_u64() || n.is_i64() => out.push(path.clone()),
        Value::Object(m) => {
            for (k, x) in m {
                if k != "id2label" && k != "label2id" {
                    path.push(PathStep::Key(k.clone()));
                    integer_paths(x, path, out);
                    path.pop();
                }
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                path.push(PathStep::Index(i));
                integer_paths(x, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

#[derive(Debug, Clone)]
enum PathStep {
    Key(String),
    Index(usize),
}

fn set_at(v: &mut Value, path: &[PathStep], value: &Value) {
    let mut target = v;
    for step in path {
        target = match step {
            PathStep::Key(k) => &mut target[k.as_str()],
            PathStep::Index(i) => &mut target[*i],
        };
    }
    *target = value.clone();
}

#[test]
fn every_integer_of_every_model_type_at_hostile_values_reads_quickly() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(coverage_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".default.json"))
        .collect();
    files.sort();
    assert!(files.len() > 250, "{} configs", files.len());
    let values = [Value::from(u64::MAX), Value::from(1_000_000u64)];
    let start = Instant::now();
    let (mut reads, mut slowest) = (0usize, Vec::new());
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let config = Value::Object(llmsize_adapters::hf_config::parse_json(&text, "c").unwrap());
        let mut paths = Vec::new();
        integer_paths(&config, &mut Vec::new(), &mut paths);
        for path in &paths {
            for value in &values {
                let mut hostile = config.clone();
                set_at(&mut hostile, path, value);
                let text = hostile.to_string();
                let t = Instant::now();
                // Ok or a typed error: either is an answer; a panic fails the test.
                let _ = read_config(&text, "config.json", "m", &ReadOptions::default());
                let took = t.elapsed();
                reads += 1;
                slowest.push((took, format!("{} {path:?} = {value}", file.display())));
            }
        }
    }
    let total = start.elapsed();
    slowest.sort_by_key(|(took, _)| std::cmp::Reverse(*took));
    slowest.truncate(10);
    // Seen with `--nocapture`: the figures of the sweep.
    #[allow(clippy::print_stderr, reason = "the sweep's figures, for who runs it")]
    {
        eprintln!("{reads} reads in {total:?}; slowest: {slowest:#?}");
    }
    assert!(reads > 10_000, "{reads}");
    for (took, what) in &slowest {
        assert!(*took < QUICK, "{what}: {took:?}");
    }
    assert!(total < Duration::from_mins(1), "{total:?}");
}

#[test]
fn values_near_2_pow_64_are_overflow_errors_naming_the_formula() {
    // Zaya's convolution state: (n_h + n_kv)·d_h = (8 + 2)·128 = 1280 channels times
    // (cca_time0 − 1) + (cca_time1 − 1) = (2^64 − 2) + 1 = 2^64 − 1 positions.
    let zaya = with(coverage("zaya"), "cca_time0", Value::from(u64::MAX));
    let (e, took) = error_of(&zaya);
    assert_eq!(
        e,
        "`config.json`: `cca_channels·((cca_time0 − 1) + (cca_time1 − 1))` overflows 64 bits (with values: 1280 · 18446744073709551615)"
    );
    assert!(took < QUICK, "{took:?}");
    // LongCat-Flash's query width: qk_nope_head_dim (128) + qk_rope_head_dim.
    let longcat = with(
        coverage("longcat_flash"),
        "qk_rope_head_dim",
        Value::from(u64::MAX),
    );
    let (e, took) = error_of(&longcat);
    assert_eq!(
        e,
        "`config.json`: `qk_nope_head_dim + qk_rope_head_dim` overflows 64 bits (with values: 128 + 18446744073709551615)"
    );
    assert!(took < QUICK, "{took:?}");
}

/// `config` without its per-layer lists (any list of two or more entries but
/// `architectures`), so that the class's own rules derive them from the layer count.
fn without_lists(config: &Value) -> Value {
    match config {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, v)| {
                    !(v.as_array().is_some_and(|a| a.len() >= 2) && *k != "architectures")
                })
                .map(|(k, v)| (k.clone(), without_lists(v)))
                .collect(),
        ),
        v => v.clone(),
    }
}

#[test]
fn a_million_derived_layers_are_runs_built_at_once() {
    // Inkling's text model: all but every 6th layer slide (`InklingTextConfig`), so a million
    // layers are 166,666 periods of 5 sliding and 1 full, then 4 sliding: 333,333 runs of
    // at most a few kinds (the dense first layers aside), built without a layer per layer.
    for (name, path) in [
        ("inkling_text", "num_hidden_layers"),
        ("inkling2_text", "num_hidden_layers"),
        ("gemma2", "num_hidden_layers"),
        ("deepseek_v32", "num_hidden_layers"),
    ] {
        let config = with(
            without_lists(&coverage(name)),
            path,
            Value::from(1_000_000u64),
        );
        let text = config.to_string();
        let start = Instant::now();
        let spec = read_config(&text, "config.json", "m", &ReadOptions::default()).unwrap();
        let took = start.elapsed();
        let stack = &spec.stacks[0].layers;
        assert_eq!(stack.len(), 1_000_000, "{name}");
        assert!(
            stack.kinds().len() <= 8,
            "{name}: {} kinds",
            stack.kinds().len()
        );
        assert!(took < Duration::from_secs(3), "{name}: {took:?}");
        if name == "inkling_text" {
            assert_eq!(stack.runs().len(), 333_333, "{name}");
        }
    }
}

#[test]
fn every_layer_count_past_the_bound_is_refused_or_unread() {
    // Each layer-count key of every coverage config, one past the bound: either refused with
    // the bound, or a key the model type does not read (the count is then unchanged).
    let keys = llmsize_adapters::hf_config::layer_count_keys();
    let total = |spec: &llmsize_core::ModelSpec| llmsize_core::count(spec).ok().map(|c| c.total);
    let mut refused = 0;
    for file in std::fs::read_dir(coverage_dir()).unwrap() {
        let file = file.unwrap().path();
        if !file.to_string_lossy().ends_with(".default.json") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let config = Value::Object(llmsize_adapters::hf_config::parse_json(&text, "c").unwrap());
        let plain = read_config(
            &config.to_string(),
            "config.json",
            "m",
            &ReadOptions::default(),
        )
        .ok()
        .and_then(|s| total(&s));
        let mut paths = Vec::new();
        integer_paths(&config, &mut Vec::new(), &mut paths);
        for path in paths {
            let Some(PathStep::Key(last)) = path.last() else {
                continue;
            };
            if !keys.contains(&last.as_str()) {
                continue;
            }
            let mut hostile = config.clone();
            set_at(&mut hostile, &path, &Value::from(1_000_001u64));
            match read_config(
                &hostile.to_string(),
                "config.json",
                "m",
                &ReadOptions::default(),
            ) {
                Err(e) => {
                    let e = e.to_string();
                    if e.contains("at most 1,000,000 layers") {
                        refused += 1;
                    }
                }
                Ok(spec) => assert_eq!(
                    total(&spec),
                    plain,
                    "{} {path:?}: read past the bound",
                    file.display()
                ),
            }
        }
    }
    assert!(refused > 250, "{refused} refused");
}

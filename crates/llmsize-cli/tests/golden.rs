//! The restructuring of issue 8 must not change a single printed number: the JSON of
//! `params`, `memory` and `flops` for every preset and fixture config, under the default
//! options and four option sets that reach every storage format family, TP, KV dtypes, runtime
//! caches, `--max-context`, full attention and the roofline, equals what the binary of commit
//! 30f760b printed (`tests/fixtures/golden/make.py` recorded it, 1,434 runs).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use common::llmsize_in;
use serde_json::Value;

#[test]
fn golden_json_is_unchanged() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let golden = std::fs::read_to_string(format!("{root}/tests/fixtures/golden/golden.jsonl"))
        .expect("the golden file is committed");
    let mut checked = 0;
    let mut failures = Vec::new();
    for line in golden.lines() {
        let record: Value = serde_json::from_str(line).unwrap();
        let args: Vec<&str> = record["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        let run = llmsize_in(root, &args);
        let parse = |text: &str| {
            serde_json::from_str::<Value>(text).unwrap_or_else(|_| Value::String(text.to_owned()))
        };
        let golden_stdout = parse(record["stdout"].as_str().unwrap());
        let stdout = parse(&run.stdout);
        if run.code != record["exit"].as_i64().unwrap() as i32 || stdout != golden_stdout {
            failures.push(format!(
                "llmsize {}: exit {} (golden {}), stdout differs: {}",
                args.join(" "),
                run.code,
                record["exit"],
                stdout != golden_stdout
            ));
        }
        checked += 1;
    }
    assert_eq!(checked, 1434, "every recorded run is checked");
    assert!(
        failures.is_empty(),
        "{} of {checked} runs differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

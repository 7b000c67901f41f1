//! Every causal-LM and vision-language model type transformers 5.24 builds (issue 9): for each
//! class-default config of `tests/fixtures/coverage/` and every further config of
//! `tests/fixtures/coverage/extra/` (sizes and switches the defaults do not show, counted by the
//! oracle), llmsize either answers exactly what the real code builds (parameters by component,
//! the KV cache after the prefill, the conv/recurrent state bytes) or refuses the type with
//! exit 2 and no number. A wrong number is the one outcome never allowed.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    missing_docs,
    clippy::print_stderr,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use std::path::{Path, PathBuf};

use common::llmsize_env;
use serde_json::Value;

/// The exact entries may only grow: the number of default configs answered exactly when this
/// floor was last raised (the README gives the current count and the types still refused).
const EXACT_DEFAULTS_AT_LEAST: usize = 270;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/coverage")
}

/// (entry, folder its config path is relative to), defaults first.
fn entries() -> Vec<(Value, PathBuf)> {
    let mut out = Vec::new();
    let defaults: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(root().join("coverage.json")).unwrap())
            .unwrap();
    out.extend(defaults.into_iter().map(|e| (e, root())));
    let mut extra: Vec<PathBuf> = std::fs::read_dir(root().join("extra"))
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    extra.sort();
    for file in extra {
        if file.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let list: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let dir = file.parent().unwrap().to_path_buf();
        out.extend(list.into_iter().map(|e| (e, dir.clone())));
    }
    out
}

fn json(args: &[&str]) -> Result<Value, (i32, String, String)> {
    let r = llmsize_env(args, &[]);
    if r.code == 0 {
        Ok(serde_json::from_str(&r.stdout).unwrap())
    } else {
        Err((r.code, r.stdout, r.stderr))
    }
}

#[test]
fn every_type_is_exact_or_refused() {
    let mut wrong = Vec::new();
    let mut exact_defaults = 0;
    let mut exact_extra = 0;
    let mut refused = Vec::new();
    for (e, dir) in entries() {
        let id = format!("{} ({})", e["id"].as_str().unwrap(), e["mapping"]);
        let cfg = dir.join(e["config"].as_str().unwrap());
        let cfg = cfg.to_str().unwrap();
        let want = &e["params"];
        match json(&["params", cfg, "--json"]) {
            Err((code, stdout, stderr)) => {
                // Refused: exit 2, nothing on stdout, and the message says the type is not
                // supported (a type that is supported must not fail on its own default).
                if code != 2 || !stdout.is_empty() || !stderr.contains("is not supported") {
                    wrong.push(format!("{id}: exit {code}: {}", stderr.trim()));
                } else {
                    refused.push(e["model_type"].as_str().unwrap().to_owned());
                }
            }
            Ok(got) => {
                assert_eq!(got["exact"], true, "{id}");
                let mut bad = Vec::new();
                if got["total"] != want["total"] {
                    bad.push(format!("total {} != {}", got["total"], want["total"]));
                }
                // The truth leaves what its categorizer matches to no rule out of its
                // components (its `other`): what remains of the total.
                let named: u64 = want["components"]
                    .as_object()
                    .unwrap()
                    .values()
                    .map(|v| v.as_u64().unwrap())
                    .sum();
                let other = want["total"].as_u64().unwrap() - named;
                for (category, n) in got["components"].as_object().unwrap() {
                    let w = match want["components"].get(category) {
                        Some(w) => w.clone(),
                        None if category == "other" => other.into(),
                        None => 0.into(),
                    };
                    if *n != w {
                        bad.push(format!("{category} {n} != {w}"));
                    }
                }
                // KV cache after the prefill, and the recurrent states, in bf16.
                let kv = e["kv_cache_bytes_bf16"]["by_seq_len"].as_object();
                for (seq, want_kv) in kv.into_iter().flatten() {
                    let args = [
                        "memory",
                        cfg,
                        "--seq-len",
                        seq,
                        "--batch",
                        "1",
                        "--kv-dtype",
                        "bf16",
                        "--json",
                    ];
                    match json(&args) {
                        Ok(m) => {
                            if m["kv_cache_bytes"] != *want_kv {
                                bad.push(format!(
                                    "kv at {seq}: {} != {want_kv}",
                                    m["kv_cache_bytes"]
                                ));
                            }
                            let state: u64 = e["state_bytes"]
                                .as_object()
                                .map_or(0, |s| s.values().map(|v| v.as_u64().unwrap()).sum());
                            if m["state_bytes"] != state {
                                bad.push(format!("state {} != {state}", m["state_bytes"]));
                            }
                        }
                        Err((code, _, stderr)) => {
                            bad.push(format!("memory: exit {code}: {}", stderr.trim()));
                        }
                    }
                }
                if bad.is_empty() {
                    if e["variant"] == "default" {
                        exact_defaults += 1;
                    } else {
                        exact_extra += 1;
                    }
                } else {
                    wrong.push(format!("{id}: {}", bad.join("; ")));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} configs answered wrongly (or failed on a supported type):\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert!(
        exact_defaults >= EXACT_DEFAULTS_AT_LEAST,
        "{exact_defaults} default configs exact, fewer than {EXACT_DEFAULTS_AT_LEAST}"
    );
    refused.sort();
    refused.dedup();
    eprintln!(
        "coverage: {exact_defaults} default configs and {exact_extra} further configs exact; {} types refused: {}",
        refused.len(),
        refused.join(", ")
    );
}

//! `llmsize train … --attention full --device cpu --json`: `train_step_flops` equals what torch's
//! `FlopCounterMode` counted for one training step (forward + backward, + the checkpoint's
//! recompute), for every full fine-tuning step and every LoRA step of the training ground truth.
//!
//! The configs and numbers are copied from `/work/shared/truth/train/` (`train.json`; its
//! README's sections "FLOPs", "LoRA FLOPs" and "MoE FLOPs" say how they were measured) into
//! `tests/fixtures/train/flops/` (`expected.json` names each figure's source).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use serde_json::Value;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/train/flops");

fn expected() -> Value {
    let text = std::fs::read_to_string(format!("{DIR}/expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn str_of<'a>(case: &'a Value, key: &str) -> &'a str {
    case[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} in {case}"))
}

fn num_of(case: &Value, key: &str) -> String {
    case[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} in {case}"))
        .to_string()
}

/// Run every case; returns the failures, one line each.
fn check(cases: &[Value], lora: bool) -> Vec<String> {
    let mut failures = Vec::new();
    for case in cases {
        let config = format!("{DIR}/configs/{}", str_of(case, "config"));
        let (seq, batch) = (num_of(case, "seq"), num_of(case, "batch"));
        let mut args = vec![
            "train",
            config.as_str(),
            "--seq-len",
            seq.as_str(),
            "--batch",
            batch.as_str(),
            "--dtype",
            str_of(case, "dtype"),
            "--attn-impl",
            str_of(case, "attn"),
            "--attention",
            "full",
            "--device",
            "cpu",
            "--json",
        ];
        if case["checkpointing"].as_bool().unwrap() {
            args.push("--checkpointing");
        }
        let (rank, dropout);
        if lora {
            rank = num_of(case, "lora_rank");
            args.extend(["--lora-rank", rank.as_str()]);
            args.extend(["--lora-targets", str_of(case, "lora_targets")]);
            dropout = case["lora_dropout"].as_f64().unwrap_or(0.0).to_string();
            if case["lora_dropout"].as_f64().unwrap_or(0.0) > 0.0 {
                args.extend(["--lora-dropout", dropout.as_str()]);
            }
        }
        let run = common::llmsize(&args);
        let what = format!("{} ({})", args[1..].join(" "), str_of(case, "source"));
        let Ok(json) = serde_json::from_str::<Value>(&run.stdout) else {
            failures.push(format!("{what}: exit {}, {}", run.code, run.stderr.trim()));
            continue;
        };
        let want = case["train_step_flops"].as_u64().unwrap();
        let got = json["train_step_flops"].as_u64();
        if got != Some(want) {
            failures.push(format!(
                "{what}: train_step_flops {got:?}, torch counted {want}"
            ));
        }
        let want = case["forward_flops"].as_u64().unwrap();
        let got = json["forward_flops"].as_u64();
        if got != Some(want) {
            failures.push(format!(
                "{what}: forward_flops {got:?}, torch counted {want}"
            ));
        }
    }
    failures
}

#[test]
fn full_fine_tuning_steps_are_torchs_count() {
    let all = expected();
    let cases = all["full"].as_array().unwrap();
    assert!(cases.len() >= 100, "the fixture holds every measured step");
    let failures = check(cases, false);
    assert!(
        failures.is_empty(),
        "{} of {} steps differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn lora_steps_are_torchs_count() {
    let all = expected();
    let cases = all["lora"].as_array().unwrap();
    assert!(
        cases.len() >= 70,
        "the fixture holds every measured LoRA step"
    );
    let failures = check(cases, true);
    assert!(
        failures.is_empty(),
        "{} of {} LoRA steps differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn the_explanation_shows_the_formulas_with_values() {
    // Llama-2-7B at 512 tokens with checkpointing: 3·M + 3.5·S + the recompute, which skips
    // down_proj (2·T·F·d per layer).
    let config = format!("{DIR}/configs/Llama-2-7b-hf.json");
    let run = common::llmsize(&[
        "train",
        &config,
        "--seq-len",
        "512",
        "--attention",
        "full",
        "--device",
        "cpu",
        "--checkpointing",
        "--explain",
    ]);
    assert!(
        run.stdout
            .contains("2·M + 2.5·S = 2·6,765,647,233,024 + 2.5·137,438,953,472"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("32·(M_l + S_l − 2·T·F·d)")
            && run
                .stdout
                .contains("− 2·512·11008·4096) = 5,291,399,708,672"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_shared_expert_added_last_is_the_recomputes_tail() {
    // Solar Open's shrunk config (`tests/fixtures/train/`, 2 layers, d 4096, shared expert
    // 1280 wide): `SolarOpenMoE.forward` adds the shared experts after the routed ones, so
    // the checkpoint's recompute skips their down_proj, 2·40·1280·4096 per layer. The step
    // is the oracle's FlopCounterMode count (train.json, solar_open runs[1]: 332,157,419,520).
    let config = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/train/configs/solar_open.json"
    );
    let args = [
        "train",
        config,
        "--seq-len",
        "40",
        "--dtype",
        "bf16",
        "--attention",
        "full",
        "--device",
        "cpu",
        "--checkpointing",
    ];
    let run = common::llmsize(&[&args[..], &["--explain"]].concat());
    assert!(
        run.stdout.contains("2·(M_l + S_l − 2·T·F_shared·d)")
            && run.stdout.contains("− 2·40·1280·4096)"),
        "{}",
        run.stdout
    );
    let run = common::llmsize(&[&args[..], &["--json"]].concat());
    let json: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        json["train_step_flops"], 332_157_419_520_u64,
        "{}",
        run.stdout
    );
    assert_eq!(json["exact"], true, "{}", run.stdout);
}

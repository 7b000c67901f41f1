//! `llmsize train --lora-rank R --lora-targets T` as users run it: the adapters peft 0.21.2
//! puts on a transformers 5.24 model, counted exactly, and the setups it refuses (exit 2).
//!
//! Configs in `fixtures/train/lora/` are copies of `../shared/truth/train/configs/` and
//! `../shared/truth/configs/`. Expected numbers are the ground truth's:
//! - `truth/train/train.json` → `params.lora_r16_all_linear`, `params.lora_r8_qv`,
//!   `params.lora_default` (`trainable`, `trainable_tensors`; r 8 q/v is peft's own default
//!   list, or `qkv_proj` for Phi-3 and q/v for Mixtral, which have no default), and
//!   `lora_runs[].gradient_bytes` (`4·N`, fp32 adapters);
//! - `truth/truth.json` → `lora.trainable` (r 16 all-linear) for GPT-J and Phi-2;
//! - marked "peft, measured": `get_peft_model(AutoModelForCausalLM.from_config(cfg),
//!   LoraConfig(...))` with peft 0.21.2 and transformers 5.24 on the meta device, unique
//!   parameters with `requires_grad` counted, for the setups the truth files do not hold.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use common::{Run, llmsize};
use serde_json::Value;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/train/lora/");

fn train(model: &str, lora: &[&str]) -> Run {
    let config = format!("{DIR}{model}.json");
    let mut args = vec![
        "train",
        config.as_str(),
        "--seq-len",
        "512",
        "--device",
        "cpu",
        "--json",
    ];
    args.extend_from_slice(lora);
    llmsize(&args)
}

/// The adapters' parameters and tensors, checked against the states they imply: fp32
/// gradients `4·N` and torch `AdamW` `8·N + 4·n_tensors`.
fn adapters(model: &str, lora: &[&str]) -> (u64, u64, Value) {
    let r = train(model, lora);
    assert!(r.code == 0 || r.code == 1, "{model} {lora:?}: {}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let n = v["trainable_params"].as_u64().unwrap();
    let t = v["trainable_tensors"].as_u64().unwrap();
    assert_eq!(
        v["gradient_bytes"],
        4 * n,
        "{model} {lora:?}: fp32 gradients"
    );
    assert_eq!(
        v["optimizer_state_bytes"],
        8 * n + 4 * t,
        "{model} {lora:?}: AdamW on fp32 adapters"
    );
    (n, t, v["lora_modules"].clone())
}

fn refused(model: &str, lora: &[&str]) -> String {
    let r = train(model, lora);
    assert_eq!(r.code, 2, "{model} {lora:?}: {}", r.stdout);
    r.stderr
}

const R16_ALL: &[&str] = &["--lora-rank", "16", "--lora-targets", "all-linear"];

#[test]
fn all_linear_every_family() {
    // train.json params.lora_r16_all_linear, and truth.json lora.trainable for GPT-J.
    for (model, trainable, tensors) in [
        ("gpt2", 2_359_296, 96),
        ("Llama-2-7b-hf", 39_976_960, 448),
        ("gemma-2-9b", 54_018_048, 588),
        ("Phi-3-mini-4k-instruct", 25_165_824, 256),
        ("Mistral-7B-v0.1", 41_943_040, 448),
        ("Qwen2.5-7B", 40_370_176, 392),
        ("pythia-1.4b", 12_582_912, 192),
        ("opt-1.3b", 14_155_776, 288),
        ("Mixtral-8x7B-v0.1", 359_665_664, 448),
    ] {
        let (n, t, _) = adapters(model, R16_ALL);
        assert_eq!((n, t), (trainable, tensors), "{model}");
    }
    // truth.json lora.trainable: types without a training profile, named by their family.
    let (n, _, _) = adapters("gpt-j-6b", R16_ALL);
    assert_eq!(n, 33_030_144, "gpt-j-6b");
    let (n, _, _) = adapters("phi-2", R16_ALL);
    assert_eq!(n, 23_592_960, "phi-2");
}

#[test]
fn families_without_a_profile_keep_their_names() {
    // peft, measured: GPT-J's MLP is `fc_in`/`fc_out` (r 3: 28·3·((4096+16384) +
    // (16384+4096)) = 3,440,640), and peft's default for `phi` is q_proj, v_proj, fc1, fc2
    // (r 8: 9,175,040 in 256 tensors).
    let (n, t, _) = adapters(
        "gpt-j-6b",
        &["--lora-rank", "3", "--lora-targets", "fc_in,fc_out"],
    );
    assert_eq!((n, t), (3_440_640, 112));
    let (n, t, modules) = adapters("phi-2", &["--lora-rank", "8", "--lora-targets", "default"]);
    assert_eq!((n, t), (9_175_040, 256));
    assert_eq!(
        modules,
        serde_json::json!(["fc1", "fc2", "q_proj", "v_proj"])
    );
}

#[test]
fn fused_modules_are_one_adapter() {
    // train.json: Phi-3's fused qkv_proj and gate_up_proj, GPT-2's c_attn, Pythia's
    // query_key_value, each adapted once with its full width.
    let (_, _, modules) = adapters("Phi-3-mini-4k-instruct", R16_ALL);
    assert_eq!(
        modules,
        serde_json::json!(["down_proj", "gate_up_proj", "o_proj", "qkv_proj"])
    );
    let (_, _, modules) = adapters("gpt2", R16_ALL);
    assert_eq!(modules, serde_json::json!(["c_attn", "c_fc", "c_proj"]));
    // peft, measured: GPT-2's `c_proj` names the attention output and the MLP's down:
    // 12·8·((768 + 768) + (3072 + 768)) = 516,096 in 48 tensors.
    let (n, t, _) = adapters("gpt2", &["--lora-rank", "8", "--lora-targets", "c_proj"]);
    assert_eq!((n, t), (516_096, 48));
}

#[test]
fn q_v_and_peft_default() {
    // train.json params.lora_r8_qv (targets as the truth lists them) and params.lora_default
    // (`LoraConfig()`: r 8, peft's default list, equal to lora_r8_qv where it exists).
    for (model, targets, trainable, tensors) in [
        ("gpt2", "c_attn", 294_912, 24),
        ("Llama-2-7b-hf", "q_proj,v_proj", 4_194_304, 128),
        ("gemma-2-9b", "q_proj,v_proj", 4_472_832, 168),
        ("Mistral-7B-v0.1", "q_proj,v_proj", 3_407_872, 128),
        ("Qwen2.5-7B", "q_proj,v_proj", 2_523_136, 112),
        ("pythia-1.4b", "query_key_value", 1_572_864, 48),
        ("opt-1.3b", "q_proj,v_proj", 1_572_864, 96),
        ("Phi-3-mini-4k-instruct", "qkv_proj", 3_145_728, 64),
        ("Mixtral-8x7B-v0.1", "q_proj,v_proj", 3_407_872, 128),
    ] {
        let (n, t, modules) = adapters(model, &["--lora-rank", "8", "--lora-targets", targets]);
        assert_eq!((n, t), (trainable, tensors), "{model} {targets}");
        let want: Vec<&str> = targets.split(',').collect();
        assert_eq!(modules, serde_json::json!(want), "{model}");
        if !matches!(model, "Phi-3-mini-4k-instruct" | "Mixtral-8x7B-v0.1") {
            let default = adapters(model, &["--lora-rank", "8", "--lora-targets", "default"]);
            assert_eq!(
                (default.0, default.1),
                (trainable, tensors),
                "{model} default"
            );
        }
    }
    // train.json params.lora_default errors: peft has no default for phi3 (`ValueError:
    // Please specify target_modules`), and its transformers-5 conversion empties Mixtral's
    // (`NoMatchingPeftModuleError`).
    let e = refused(
        "Phi-3-mini-4k-instruct",
        &["--lora-rank", "8", "--lora-targets", "default"],
    );
    assert!(e.contains("phi3") && e.contains("no default"), "{e}");
    let e = refused(
        "Mixtral-8x7B-v0.1",
        &["--lora-rank", "8", "--lora-targets", "default"],
    );
    assert!(e.contains("mixtral") && e.contains("conversion"), "{e}");
}

#[test]
fn moe_router_and_experts_through_param_wrapper() {
    // train.json Mixtral: peft adapts the router and the experts as well (ParamWrapper)
    // although it reports only q/k/v/o as target_modules; what is adapted is listed.
    let (_, _, modules) = adapters("Mixtral-8x7B-v0.1", R16_ALL);
    assert_eq!(
        modules,
        serde_json::json!([
            "experts.down_proj",
            "experts.gate_up_proj",
            "gate",
            "k_proj",
            "o_proj",
            "q_proj",
            "v_proj"
        ])
    );
    // peft, measured (r 16 all-linear): Qwen3-MoE and DeepSeek-V2 are converted the same
    // way — and on DeepSeek-V2-Lite the dense layer 0's MLP and the shared experts, whose v4
    // names (`gate_proj`, `up_proj`, `down_proj`) went to the experts, are not adapted;
    // Qwen1.5-MoE (`qwen2_moe`) is not converted: only its Linear modules (attention,
    // shared expert and its gate) get adapters.
    for (model, trainable, tensors) in [
        ("Qwen3-30B-A3B", 996_507_648, 672),
        ("DeepSeek-V2-Lite", 358_994_944, 372),
        ("Qwen1.5-MoE-A2.7B", 15_925_632, 384),
    ] {
        let (n, t, _) = adapters(model, R16_ALL);
        assert_eq!((n, t), (trainable, tensors), "{model}");
    }
    // peft, measured: the experts by their v4 names, `w1` and `w3` fused at rank 2r.
    let (n, _, modules) = adapters(
        "Mixtral-8x7B-v0.1",
        &["--lora-rank", "16", "--lora-targets", "w1,w3,w2"],
    );
    assert_eq!(n, 343_932_928);
    assert_eq!(
        modules,
        serde_json::json!(["experts.down_proj", "experts.gate_up_proj"])
    );
}

#[test]
fn refusals_exit_2_and_say_why() {
    // A name that reaches no module lists the model's modules.
    let e = refused(
        "Llama-2-7b-hf",
        &["--lora-rank", "8", "--lora-targets", "q_proj,query"],
    );
    assert!(
        e.contains("query")
            && e.contains("down_proj, gate_proj, k_proj, lm_head, o_proj, q_proj, up_proj, v_proj"),
        "{e}"
    );
    // A rank above a target's smaller side (q_proj is 4096 × 4096).
    let e = refused(
        "Llama-2-7b-hf",
        &["--lora-rank", "4097", "--lora-targets", "q_proj"],
    );
    assert!(e.contains("at most 4096") && e.contains("q_proj"), "{e}");
    // peft's lora.ParamWrapper (Mixtral's router and experts) refuses dropout and DoRA
    // (train.json README: `ValueError: lora.ParamWrapper does not work with lora_dropout != 0`).
    let e = refused(
        "Mixtral-8x7B-v0.1",
        &[R16_ALL, &["--lora-dropout", "0.05"]].concat(),
    );
    assert!(
        e.contains("ParamWrapper") && e.contains("lora_dropout"),
        "{e}"
    );
    let e = refused("Mixtral-8x7B-v0.1", &[R16_ALL, &["--dora"]].concat());
    assert!(e.contains("ParamWrapper") && e.contains("use_dora"), "{e}");
    // Dropout is fine where no ParamWrapper is involved (train.json lora_runs
    // r16_all_linear_do05 of Llama-2-7b-hf: 39,976,960).
    let (n, _, _) = adapters(
        "Llama-2-7b-hf",
        &[R16_ALL, &["--lora-dropout", "0.05"]].concat(),
    );
    assert_eq!(n, 39_976_960);
    // One of the experts' fused pair alone (peft: `Cannot convert PEFT target(s) w1 without
    // also targeting w3`).
    let e = refused(
        "Mixtral-8x7B-v0.1",
        &["--lora-rank", "16", "--lora-targets", "w1"],
    );
    assert!(e.contains("w3") && e.contains("gate_up_proj"), "{e}");
}

#[test]
fn dora_adds_a_magnitude_vector() {
    // peft, measured: DoRA's `lora_magnitude_vector` has the module's output width.
    for (model, lora, trainable, tensors) in [
        (
            "Llama-2-7b-hf",
            &[
                "--lora-rank",
                "8",
                "--lora-targets",
                "q_proj,v_proj",
                "--dora",
            ][..],
            4_456_448,
            192,
        ),
        ("gpt2", &[R16_ALL, &["--dora"]].concat()[..], 2_442_240, 144),
        (
            "Phi-3-mini-4k-instruct",
            &[
                "--lora-rank",
                "16",
                "--lora-targets",
                "gate_up_proj",
                "--dora",
            ][..],
            10_485_760,
            96,
        ),
    ] {
        let (n, t, _) = adapters(model, lora);
        assert_eq!((n, t), (trainable, tensors), "{model} {lora:?}");
    }
}

//! `llmsize train`: the JSON contract, exit codes, bad input, model states against the
//! measured truth, and the time and cost arithmetic. Activations, LoRA and step FLOPs are
//! checked against the ground truth in `train_rms.rs`, `train_ln.rs`, `train_lora.rs` and
//! `train_flops.rs`.

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::cast_precision_loss,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use common::llmsize;
use serde_json::Value;

fn json(args: &[&str]) -> (i32, Value) {
    let r = llmsize(args);
    assert!(r.code == 0 || r.code == 1, "{:?}: {}", args, r.stderr);
    (r.code, serde_json::from_str(&r.stdout).unwrap())
}

#[test]
fn the_json_contract_has_its_integer_keys() {
    let (code, j) = json(&["train", "llama-2-7b", "--seq-len", "512", "--json"]);
    assert_eq!(code, 0);
    for key in [
        "trainable_params",
        "frozen_params",
        "weights_bytes",
        "gradient_bytes",
        "optimizer_state_bytes",
        "activation_bytes",
        "activation_peak_bytes",
        "backward_peak_bytes",
        "step_peak_bytes",
        "per_gpu_bytes",
        "train_step_flops",
    ] {
        assert!(j[key].is_u64(), "{key} is an integer: {}", j[key]);
    }
    assert!(j["exact"].is_boolean());
    // The article's 6·P·tokens beside the exact step: 6 · 6,738,415,616 · 512.
    assert_eq!(j["estimate_6pd_flops"], 6 * 6_738_415_616_u64 * 512);
}

#[test]
fn the_step_peak_is_the_states_and_the_largest_phase() {
    // One GPU: weights + AdamW states on the GPU (torch's 4-byte `step` per tensor, 291 of
    // them, stays on the CPU) + the largest of the forward's peak, the backward's peak and
    // the gradients; the terms sum to it.
    let (_, j) = json(&[
        "train",
        "llama-2-7b",
        "--seq-len",
        "512",
        "--device",
        "cpu",
        "--json",
    ]);
    let u = |k: &str| j[k].as_u64().unwrap();
    let largest = u("activation_peak_bytes")
        .max(u("backward_peak_bytes"))
        .max(u("gradient_bytes"));
    let optimizer_on_gpu = u("optimizer_state_bytes") - 4 * 291;
    assert_eq!(
        u("step_peak_bytes"),
        u("weights_bytes") + optimizer_on_gpu + largest
    );
    let terms: u64 = j["step_peak"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["value"].as_u64().unwrap())
        .sum();
    assert_eq!(terms, u("step_peak_bytes"));
    // Derived op by op on the CPU kernels: exact; on CUDA's SDPA labelled an estimate.
    assert!(
        j["backward_peak_estimate"].is_null(),
        "{}",
        j["backward_peak_estimate"]
    );
    assert!(j["step_peak_estimate"].is_null());
    let (_, cuda) = json(&["train", "llama-2-7b", "--seq-len", "512", "--json"]);
    assert!(
        cuda["backward_peak_estimate"]
            .as_str()
            .unwrap()
            .contains("CPU kernels")
    );
    assert!(cuda["step_peak_estimate"].is_string());
    // Split over GPUs: the most loaded GPU's figure + the backward's excess over gradients
    // and the forward's peak, unsplit (an upper bound, labelled).
    let (_, zero) = json(&[
        "train",
        "llama-2-7b",
        "--seq-len",
        "512",
        "--gpu",
        "h100x8",
        "--zero",
        "3",
        "--json",
    ]);
    let z = |k: &str| zero[k].as_u64().unwrap();
    let excess =
        z("backward_peak_bytes").saturating_sub(z("gradient_bytes") + z("activation_peak_bytes"));
    assert_eq!(z("step_peak_bytes"), z("per_gpu_bytes") + excess);
    assert!(
        zero["step_peak_estimate"]
            .as_str()
            .unwrap()
            .contains("unsplit")
    );
    // One GPU offloading the optimizer takes the same placed figure, and says so.
    let (_, off) = json(&[
        "train",
        "llama-2-7b",
        "--seq-len",
        "512",
        "--device",
        "cpu",
        "--zero",
        "2",
        "--offload-optimizer",
        "--json",
    ]);
    assert!(
        off["step_peak_estimate"]
            .as_str()
            .unwrap()
            .contains("unsplit")
    );
}

#[test]
fn a_backward_not_derived_is_an_estimate_of_stated_terms() {
    // GPT-2's backward is not derived: held activations + every gradient + the larger of
    // the loss's two fp32 [T, V] gradients (8·T·V) and one [T, d] stream gradient, + the
    // loss's own 4-byte gradient. T = 512, V = 50,257, d = 768: the loss's is the larger.
    let (_, j) = json(&[
        "train",
        "gpt2",
        "--seq-len",
        "512",
        "--device",
        "cpu",
        "--json",
    ]);
    let u = |k: &str| j[k].as_u64().unwrap();
    assert!(j["backward_peak_estimate"].is_string());
    let transient = 8 * 512 * 50_257_u64; // > 512 · 768 · 2
    assert_eq!(
        u("backward_peak_bytes"),
        u("activation_bytes") + u("gradient_bytes") + transient + 4
    );
}

#[test]
fn model_states_are_what_torch_adamw_holds() {
    // ../shared/truth/train/train.json, Llama-2-7b-hf: 6,738,415,616 trainable parameters in
    // 291 tensors; bf16 gradients 13,476,831,232 bytes; AdamW on bf16 parameters
    // 26,953,663,628 bytes (4·N + 4·291), on fp32 parameters 53,907,326,092 (8·N + 4·291).
    let (_, j) = json(&["train", "llama-2-7b", "--seq-len", "512", "--json"]);
    assert_eq!(j["trainable_params"], 6_738_415_616_u64);
    assert_eq!(j["trainable_tensors"], 291);
    assert_eq!(j["frozen_params"], 0);
    assert_eq!(j["weights_bytes"], 13_476_831_232_u64);
    assert_eq!(j["gradient_bytes"], 13_476_831_232_u64);
    assert_eq!(j["optimizer_state_bytes"], 26_953_663_628_u64);
    let (_, j) = json(&["train", "llama-2-7b", "--dtype", "fp32", "--json"]);
    assert_eq!(j["gradient_bytes"], 26_953_662_464_u64);
    assert_eq!(j["optimizer_state_bytes"], 53_907_326_092_u64);
}

#[test]
fn mixed_precision_is_sixteen_bytes_per_parameter_and_megatron_eighteen() {
    // DeepSpeed (ZeRO paper §3.1): 2 (bf16 weights) + 2 (gradients) + 12 (fp32 master, m, v).
    let n = 6_738_415_616_u64;
    let states = |precision: &str| {
        let (_, j) = json(&["train", "llama-2-7b", "--precision", precision, "--json"]);
        j["weights_bytes"].as_u64().unwrap()
            + j["gradient_bytes"].as_u64().unwrap()
            + j["optimizer_state_bytes"].as_u64().unwrap()
    };
    assert_eq!(states("mixed"), 16 * n);
    assert_eq!(states("mixed-fp32-grads"), 18 * n);
}

#[test]
fn exit_one_when_it_does_not_fit_with_changes_that_would() {
    // Full fine-tuning of Llama-2-7B holds 50 GiB of model states: not on a 24 GB RTX 4090.
    let r = llmsize(&["train", "llama-2-7b", "--gpu", "rtx4090"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stdout.contains("does NOT fit"), "{}", r.stdout);
    assert!(r.stdout.contains("what would make it fit"), "{}", r.stdout);
    let (code, j) = json(&["train", "llama-2-7b", "--gpu", "rtx4090", "--json"]);
    assert_eq!(code, 1);
    assert_eq!(j["fits"], false);
    let s = j["suggestions"].as_array().unwrap();
    assert!(!s.is_empty());
    // Every suggestion's total is a full re-run of the step: QLoRA must be far smaller.
    let qlora = s
        .iter()
        .find(|x| x["flags"].as_str().unwrap().contains("--qlora"))
        .unwrap();
    assert!(qlora["per_gpu_bytes"].as_u64().unwrap() < j["per_gpu_bytes"].as_u64().unwrap() / 4);
    // It fits an 8-GPU H100 node's GPU: exit 0, no suggestions.
    let (code, j) = json(&[
        "train",
        "gpt2",
        "--seq-len",
        "512",
        "--gpu",
        "h100",
        "--json",
    ]);
    assert_eq!(code, 0);
    assert_eq!(j["fits"], true);
    assert!(j.get("suggestions").is_none());
}

#[test]
fn the_largest_batch_that_fits_is_the_edge() {
    let (_, j) = json(&[
        "train",
        "gpt2",
        "--seq-len",
        "512",
        "--gpu",
        "rtx4090",
        "--max-batch",
        "--json",
    ]);
    let b = j["max_batch"].as_u64().unwrap();
    assert!(b >= 1);
    // At that batch it fits; one more does not.
    let at = |batch: u64| {
        let (code, _) = json(&[
            "train",
            "gpt2",
            "--seq-len",
            "512",
            "--gpu",
            "rtx4090",
            "--batch",
            &batch.to_string(),
            "--json",
        ]);
        code
    };
    assert_eq!(at(b), 0);
    assert_eq!(at(b + 1), 1);
}

#[test]
fn time_and_cost_follow_the_exact_step() {
    // tokens/s = GPUs · peak · MFU / (step FLOPs / step tokens); seconds = run FLOPs / (GPUs ·
    // peak · MFU); GPU-hours = seconds · GPUs / 3600; cost = GPU-hours · price.
    let (_, j) = json(&[
        "train",
        "llama-2-7b",
        "--gpu",
        "h100x8",
        "--tokens",
        "2T",
        "--mfu",
        "0.4",
        "--price",
        "2.5",
        "--json",
    ]);
    let t = &j["time"];
    let step = j["train_step_flops"].as_f64().unwrap();
    let per_token = step / 2048.0;
    assert!((t["flops_per_token"].as_f64().unwrap() - per_token).abs() < 1.0);
    let peak = 989.4e12; // H100 SXM dense bf16, llmsize's GPU table
    let secs = per_token * 2e12 / (8.0 * peak * 0.4);
    assert!(
        (t["seconds"].as_f64().unwrap() / secs - 1.0).abs() < 1e-6,
        "{t}"
    );
    let hours = secs * 8.0 / 3600.0;
    assert!((t["gpu_hours"].as_f64().unwrap() / hours - 1.0).abs() < 1e-6);
    assert!((t["cost"].as_f64().unwrap() / (hours * 2.5) - 1.0).abs() < 1e-6);
    // 8 GPUs, dp 8, batch 1 × 2,048 tokens.
    assert_eq!(t["tokens_per_step"], 8 * 2048);
    assert_eq!(j["parallel"]["dp"], 8);
}

#[test]
fn bad_input_is_exit_two_with_the_reason() {
    for (args, needle) in [
        (vec!["--batch", "0"], "--batch"),
        (vec!["--seq-len", "0"], "--seq-len"),
        (vec!["--optimizer", "adamax"], "adamw-8bit"),
        (vec!["--precision", "fp8"], "mixed"),
        (vec!["--dtype", "int4"], "bf16"),
        (vec!["--zero", "4"], "ZeRO"),
        (vec!["--tp", "0"], "--tp"),
        (vec!["--gpu", "h100x8", "--tp", "3"], "divide"),
        (vec!["--gpu", "h100x8", "--dp", "3"], "GPUs"),
        (vec!["--max-batch"], "--gpu"),
        (vec!["--tokens", "2T"], "--gpu"),
        (vec!["--qlora"], "--lora-rank"),
        (vec!["--lora-rank", "0"], "rank"),
        (vec!["--lora-rank", "8", "--lora-dropout", "1.5"], "dropout"),
        (vec!["--freeze", "wings"], "embeddings"),
        (vec!["--fsdp", "partial"], "hybrid"),
        (vec!["--gpu", "h100", "--mfu", "0"], "--mfu"),
        (
            vec!["--lora-rank", "8", "--freeze", "embeddings"],
            "--freeze",
        ),
    ] {
        let mut all = vec!["train", "llama-2-7b"];
        all.extend(args.iter().copied());
        let r = llmsize(&all);
        assert_eq!(r.code, 2, "{all:?}: {}", r.stdout);
        assert!(r.stderr.contains(needle), "{all:?}: {}", r.stderr);
    }
}

#[test]
fn a_dotted_target_reaches_only_the_module_under_that_parent() {
    // peft matches `attn.c_proj` against the end of `transformer.h.N.attn.c_proj` only.
    // GPT-2 small, r = 8, 12 layers: attn.c_proj 768→768: 12·8·(768+768) = 147,456;
    // mlp.c_proj 3072→768: 12·8·(3072+768) = 368,640; `c_proj` reaches both: 516,096.
    for (target, want) in [
        ("attn.c_proj", 147_456_u64),
        ("mlp.c_proj", 368_640),
        ("c_proj", 516_096),
    ] {
        let (_, j) = json(&[
            "train",
            "gpt2",
            "--seq-len",
            "512",
            "--lora-rank",
            "8",
            "--lora-targets",
            target,
            "--json",
        ]);
        assert_eq!(j["trainable_params"], want, "{target}");
    }
}

#[test]
fn the_table_a_user_reads() {
    // GPT-2 small at 512 tokens on the measured CPU kernels: every row is pinned by the
    // truth tests; this pins what the table shows and how it is laid out.
    let r = llmsize(&[
        "train",
        "gpt2",
        "--seq-len",
        "512",
        "--device",
        "cpu",
        "--gpu",
        "rtx4090",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    insta::assert_snapshot!("train_gpt2_table", r.snapshot());
}

#[test]
fn lora_on_a_matrix_of_unknown_module_type_is_an_estimate() {
    // Zamba's Mamba mixer `in_proj` is a matrix of a part the typed blocks do not describe:
    // whether peft's all-linear reaches it is not known, so the answer says so.
    let config = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/coverage/configs/zamba.default.json"
    );
    let (_, j) = json(&[
        "train",
        config,
        "--lora-rank",
        "16",
        "--seq-len",
        "64",
        "--json",
    ]);
    assert_eq!(j["exact"], false);
    assert!(
        j["estimate_basis"]
            .as_str()
            .unwrap()
            .contains("module type (Linear or not)"),
        "{}",
        j["estimate_basis"]
    );
    // A llama's adapters are all typed Linear modules: exact.
    let (_, j) = json(&[
        "train",
        "llama-2-7b",
        "--lora-rank",
        "16",
        "--seq-len",
        "64",
        "--json",
    ]);
    assert_eq!(j["exact"], true, "{}", j["estimate_basis"]);
}

#[test]
fn qlora_stores_the_base_in_nf4_and_dequantizes_one_weight_at_a_time() {
    // Same adapters as LoRA: what autograd holds is the same (bitsandbytes' MatMul4Bit saves
    // only the quantized weight); the peak adds the largest matrix dequantized to bf16:
    // Llama-2-7B's MLP 11008 × 4096, 2·45,088,768 = 90,177,536 bytes.
    let args = [
        "train",
        "llama-2-7b",
        "--seq-len",
        "512",
        "--lora-rank",
        "16",
        "--json",
    ];
    let (_, lora) = json(&args);
    let mut q = args.to_vec();
    q.push("--qlora");
    let (_, qlora) = json(&q);
    assert_eq!(qlora["activation_bytes"], lora["activation_bytes"]);
    assert_eq!(
        qlora["activation_peak_bytes"].as_u64().unwrap()
            - lora["activation_peak_bytes"].as_u64().unwrap(),
        90_177_536
    );
    assert_eq!(qlora["trainable_params"], lora["trainable_params"]);
    // The frozen base as `memory --dtype nf4-dq` stores it, plus the fp32 adapters
    // (39,976,960 · 4 bytes).
    let m = llmsize(&["memory", "llama-2-7b", "--dtype", "nf4-dq", "--json"]);
    let m: Value = serde_json::from_str(&m.stdout).unwrap();
    assert_eq!(
        qlora["weights_bytes"].as_u64().unwrap(),
        m["weights_bytes"].as_u64().unwrap() + 4 * 39_976_960
    );
}

#[test]
fn the_longest_sequence_that_fits_is_the_edge() {
    let base = [
        "train",
        "llama-2-7b",
        "--lora-rank",
        "16",
        "--checkpointing",
        "--gpu",
        "rtx4090",
    ];
    let mut args = base.to_vec();
    args.extend(["--max-seq", "--json"]);
    let (_, j) = json(&args);
    let s = j["max_seq"].as_u64().unwrap();
    let at = |seq: u64| {
        let seq = seq.to_string();
        let mut a = base.to_vec();
        a.extend(["--seq-len", &seq, "--json"]);
        json(&a).0
    };
    assert_eq!(at(s), 0);
    assert_eq!(at(s + 1), 1);
}

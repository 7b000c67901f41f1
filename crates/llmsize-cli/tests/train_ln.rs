//! `llmsize train` on the `LayerNorm` families, inside one measured step: the terms add up to
//! what is held, and the CUDA kernels' documented differences from the measured CPU ones
//! (every measured step itself is checked in `train_truth.rs`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use common::llmsize;
use serde_json::Value;

/// The measured steps (`fixtures/train/truth/`, see its README): every one of them is checked
/// in `train_truth.rs`; these tests look inside one.
const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/train/truth");

/// GPT-2's measured step in bf16 with SDPA, batch 1, 512 tokens, no checkpointing.
fn gpt2_run() -> Value {
    let text = std::fs::read_to_string(format!("{DIR}/train.json")).unwrap();
    let t: Value = serde_json::from_str(&text).unwrap();
    let gpt2 = t
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == "gpt2")
        .unwrap();
    gpt2["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| {
            r["dtype"] == "bf16"
                && r["attn"] == "sdpa"
                && r["batch"] == 1
                && r["seq"] == 512
                && r["ckpt"] == false
        })
        .unwrap()
        .clone()
}

/// `llmsize train` on GPT-2 small at 512 tokens, bf16, SDPA, on `device`.
fn step(device: &str) -> Value {
    let path = format!("{DIR}/configs/gpt2.json");
    let r = llmsize(&[
        "train",
        &path,
        "--seq-len",
        "512",
        "--dtype",
        "bf16",
        "--attn-impl",
        "sdpa",
        "--device",
        device,
        "--json",
    ]);
    assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap()
}

#[test]
fn the_terms_add_up_to_what_is_held() {
    // gpt2, bf16, SDPA (CPU math path), batch 1, 512 tokens: 869,756,944 B held (the truth).
    let run = gpt2_run();
    assert_eq!(run["retained_bytes"], 869_756_944u64);
    let j = step("cpu");
    assert_eq!(j["activation_bytes"], 869_756_944u64);
    let terms = j["activations"].as_array().unwrap();
    let total: u64 = terms.iter().map(|t| t["value"].as_u64().unwrap()).sum();
    assert_eq!(total, 869_756_944);
}

#[test]
fn cuda_keeps_one_byte_masks_and_a_fused_kernel() {
    // gpt2 at 512 tokens, bf16, SDPA on CUDA (derived from the documented kernel
    // differences, not measured), against the measured CPU step. Per layer (T = 512, d = A =
    // 768, H = 12, e = 2):
    // - the CPU math path's fp32 q, k, v, probabilities, noise and dropped probabilities,
    //   12·T·A + 12·b·H·s² = 4,718,592 + 37,748,736 = 42,467,328, and c_proj's own input
    //   e·T·A = 786,432, become the flash kernel's fused qkv buffer and output (also c_proj's
    //   input), lse and philox seed/offset: 4·e·T·A + 4·b·H·s + 16 = 3,170,320;
    // - the two residual dropouts keep 1-byte masks: −2·(e − 1)·T·d = −2·393,216;
    // - the two LayerNorms keep fp32 statistics: 2·(2·4·T − 2·e·T) = +4,096.
    // Once: the embedding dropout's mask (−393,216) and the final LayerNorm (+2,048).
    let cpu = step("cpu");
    let cuda = step("cuda");
    let l: i128 = 12;
    let per_layer: i128 = -42_467_328 - 786_432 + 3_170_320 - 2 * 393_216 + 4_096;
    let once: i128 = -393_216 + 2_048;
    let want = i128::from(cpu["activation_bytes"].as_u64().unwrap()) + l * per_layer + once;
    assert_eq!(i128::from(cuda["activation_bytes"].as_u64().unwrap()), want);
}

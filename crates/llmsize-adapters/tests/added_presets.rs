//! The presets added after the ground truth (`presets/added.json`, sources in
//! `presets/SOURCES.md`) are the files they name and are counted exactly: total, every
//! component, and MoE active parameters, as Hugging Face `transformers` 5.24 builds them (the
//! project's oracle on the meta device).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

use std::path::PathBuf;

use llmsize_adapters::hf_config::{ReadOptions, read_config};
use llmsize_adapters::presets::{PRESETS, find};
use llmsize_core::{Category, count};
use serde_json::Value;

fn presets_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("presets")
}

fn added() -> Vec<Value> {
    let text = std::fs::read_to_string(presets_dir().join("added.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn truth_len() -> usize {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/truth/truth.json");
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str::<Vec<Value>>(&text).unwrap().len()
}

#[test]
fn the_added_presets_are_their_files_in_order() {
    let added = added();
    let first = truth_len();
    assert_eq!(PRESETS.len(), first + added.len());
    for (p, e) in PRESETS[first..].iter().zip(&added) {
        assert_eq!(p.id, e["id"].as_str().unwrap());
        assert_eq!(p.hf_repo, e["hf_repo"].as_str());
        assert_eq!(p.family, e["family"].as_str().unwrap());
        let text =
            std::fs::read_to_string(presets_dir().join(e["config"].as_str().unwrap())).unwrap();
        assert_eq!(p.config, text, "{}", p.id);
        assert!(
            e["source"]
                .as_str()
                .unwrap()
                .starts_with("https://huggingface.co/")
        );
        // Reachable by its Hub repository too.
        assert_eq!(find(p.hf_repo.unwrap()).map(|f| f.id), Some(p.id));
    }
}

#[test]
fn the_added_presets_are_counted_exactly() {
    let mut failures = Vec::new();
    for e in added() {
        let id = e["id"].as_str().unwrap();
        let spec = read_config(find(id).unwrap().config, id, id, &ReadOptions::default()).unwrap();
        let c = count(&spec).unwrap();
        let want = &e["params"];
        if c.total != want["total"].as_u64().unwrap() {
            failures.push(format!("{id}: total {} != {}", c.total, want["total"]));
        }
        for cat in Category::ALL {
            let w = want["components"][cat.as_str()].as_u64().unwrap_or(0);
            if c.get(cat) != w {
                failures.push(format!("{id}: {} {} != {w}", cat.as_str(), c.get(cat)));
            }
        }
        let active = c.active.as_ref().map(|a| a.per_token);
        if active != want["active_per_token"].as_u64() {
            failures.push(format!(
                "{id}: active {active:?} != {}",
                want["active_per_token"]
            ));
        }
        let ex = c.active.as_ref().map(|a| a.per_token_excl_token_embedding);
        if ex != want["active_per_token_excl_token_embedding"].as_u64() {
            failures.push(format!("{id}: active excl. embedding {ex:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The published counts these presets are quoted with (model cards), to the digits quoted:
/// within one unit of the last one (cards round or cut: Qwen2.5-14B's 14,770,033,664 is
/// "14.7B", Qwen3-14B's 14,768,307,200 "14.8B").
#[test]
fn published_counts_agree() {
    let counted = |id: &str| {
        let spec = read_config(find(id).unwrap().config, id, id, &ReadOptions::default()).unwrap();
        count(&spec).unwrap()
    };
    #[expect(clippy::cast_precision_loss, reason = "a comparison to quoted digits")]
    let near = |n: u64, quoted: f64, unit: f64| (n as f64 / unit - quoted).abs() < 1.0;
    let b = 1e9;
    // gpt-oss model card (arXiv:2508.10925, table 1): 116.83B total, 5.13B active (without
    // the embedding table, as OpenAI quotes it).
    let oss = counted("gpt-oss-120b");
    assert!(near(oss.total, 11_683.0, 1e7), "{}", oss.total);
    let a = oss.active.unwrap().per_token_excl_token_embedding;
    assert!(near(a, 513.0, 1e7), "{a}");
    // Qwen3-235B-A22B: 235B total, 22B activated.
    let qwen = counted("Qwen3-235B-A22B");
    assert!(near(qwen.total, 235.0, b));
    assert!(near(qwen.active.unwrap().per_token, 22.0, b));
    // DeepSeek-R1: 671B total, 37B activated (without the embedding table).
    let r1 = counted("DeepSeek-R1");
    assert!(near(r1.total, 671.0, b));
    assert!(near(
        r1.active.unwrap().per_token_excl_token_embedding,
        37.0,
        b
    ));
    // Llama-3.2-3B: 3.21B. Qwen2.5-14B: 14.7B. Qwen3-14B: 14.8B. Mistral-Nemo: 12B.
    assert!(near(counted("Llama-3.2-3B").total, 321.0, 1e7));
    assert!(near(counted("Qwen2.5-14B").total, 147.0, 1e8));
    assert!(near(counted("Qwen3-14B").total, 148.0, 1e8));
    assert!(near(counted("Mistral-Nemo-Base-2407").total, 12.0, b));
    // Exact totals the Hub publishes (safetensors metadata, quoted in public repositories):
    // phi-4 14,659,507,200; gemma-3-27b-it 27,432,406,640; gemma-3-12b-it 12,187,325,040 (the
    // -it files have the -pt presets' sizes).
    assert_eq!(counted("phi-4").total, 14_659_507_200);
    assert_eq!(counted("gemma-3-27b-pt").total, 27_432_406_640);
    assert_eq!(counted("gemma-3-12b-pt").total, 12_187_325_040);
    // Qwen3-Coder-480B-A35B: 480B total, 35B activated.
    let coder = counted("Qwen3-Coder-480B-A35B-Instruct");
    assert!(near(coder.total, 480.0, b));
    assert!(near(coder.active.unwrap().per_token, 35.0, b));
    // Llama 4 Scout: 109B total; Scout and Maverick: 17B active (without the embedding table).
    let scout = counted("Llama-4-Scout-17B-16E");
    assert!(near(scout.total, 109.0, b), "{}", scout.total);
    for llama4 in [scout, counted("Llama-4-Maverick-17B-128E-Instruct")] {
        let a = llama4.active.unwrap().per_token_excl_token_embedding;
        assert!(near(a, 17.0, b), "{a}");
    }
    // Mistral-7B-v0.3 is v0.1 with 768 more vocabulary rows in the embedding and the head:
    // 7,241,732,096 + 2 × 768 × 4,096.
    assert_eq!(counted("Mistral-7B-v0.1").total, 7_241_732_096);
    assert_eq!(counted("Mistral-7B-v0.3").total, 7_248_023_552);
    // DeepSeek-R1-Distill-Qwen-7B has Qwen2.5-7B's shapes (its card: fine-tuned from
    // Qwen2.5-Math-7B), so the same 7,615,616,512 as that truth preset; the card says 7B.
    assert_eq!(counted("Qwen2.5-7B").total, 7_615_616_512);
    assert_eq!(counted("DeepSeek-R1-Distill-Qwen-7B").total, 7_615_616_512);
}

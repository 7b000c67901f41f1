//! Counting speed: read and count every built-in preset (the work of `llmsize presets`), every
//! class-default config of the model types transformers builds (`tests/fixtures/coverage/`,
//! those llmsize reads), and the largest single model, DeepSeek-V3 (61 layers, 256 experts).

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

use criterion::{Criterion, criterion_group, criterion_main};
use llmsize_adapters::presets::{PRESETS, find};
use llmsize_adapters::{ReadOptions, read_config};
use llmsize_core::{ParamsReport, count};

fn count_all_presets(c: &mut Criterion) {
    let options = ReadOptions::default();
    c.bench_function("read+count every preset", |b| {
        b.iter(|| {
            let mut total = 0u64;
            for p in PRESETS {
                let spec = read_config(p.config, p.id, p.id, &options).expect("presets are valid");
                total += count(&spec).expect("presets count").total;
            }
            std::hint::black_box(total)
        });
    });
    let deepseek = find("DeepSeek-V3").expect("preset exists");
    c.bench_function("read+report DeepSeek-V3", |b| {
        b.iter(|| {
            let spec = read_config(deepseek.config, "d", "d", &options).expect("valid");
            std::hint::black_box(ParamsReport::new(&spec, "bench").expect("counts"))
        });
    });
}

/// Every class-default config of the coverage truth that llmsize reads (the others are
/// refused before any counting, so they cost nothing worth timing).
fn count_all_default_configs(c: &mut Criterion) {
    let options = ReadOptions::default();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/coverage/configs");
    let mut configs: Vec<(String, String)> = std::fs::read_dir(dir)
        .expect("the coverage fixtures are committed")
        .map(|e| {
            let path = e.expect("readable").path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).expect("readable"))
        })
        .filter(|(name, text)| read_config(text, name, name, &options).is_ok())
        .collect();
    configs.sort();
    let label = format!("read+count all {} supported default configs", configs.len());
    c.bench_function(&label, |b| {
        b.iter(|| {
            let mut total = 0u64;
            for (name, text) in &configs {
                let spec = read_config(text, name, name, &options).expect("read above");
                total = total.wrapping_add(count(&spec).expect("counted above").total);
            }
            std::hint::black_box(total)
        });
    });
}

criterion_group!(benches, count_all_presets, count_all_default_configs);
criterion_main!(benches);

//! Counting speed: read and count every built-in preset (the work of `llmsize presets`), and
//! the largest single model, DeepSeek-V3 (61 layers, 256 experts).

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
    c.bench_function("read+count all 78 presets", |b| {
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

criterion_group!(benches, count_all_presets);
criterion_main!(benches);

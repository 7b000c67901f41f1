//! Training-step speed: one `train()` (model states, activations, step FLOPs, the most loaded
//! GPU) for a dense model, a LoRA step on a MoE, a 3-D parallel layout, and the bisection of
//! `--max-batch` (each probe a full `train()`).

#![allow(clippy::expect_used, missing_docs, reason = "a bench fails loudly")]

use criterion::{Criterion, criterion_group, criterion_main};
use llmsize_adapters::presets::find;
use llmsize_adapters::{ReadOptions, read_config};
use llmsize_train::fit::largest_fitting;
use llmsize_train::lora::{LoraOptions, LoraTargets};
use llmsize_train::parallel::Parallelism;
use llmsize_train::{TrainOptions, train};

fn spec(id: &str) -> llmsize_core::ModelSpec {
    let p = find(id).expect("preset exists");
    read_config(p.config, p.id, p.id, &ReadOptions::default()).expect("valid")
}

fn bench(c: &mut Criterion) {
    let llama = spec("Meta-Llama-3-8B");
    let mixtral = spec("Mixtral-8x7B-v0.1");
    let big = spec("Llama-3.1-405B");
    let full = TrainOptions::default();
    c.bench_function("train Llama-3-8B, full fine-tuning", |b| {
        b.iter(|| std::hint::black_box(train(&llama, &full).expect("trains")));
    });
    let lora = TrainOptions {
        checkpointing: true,
        lora: Some(LoraOptions {
            rank: 16,
            targets: LoraTargets::AllLinear,
            dropout: 0.0,
            dora: false,
        }),
        ..TrainOptions::default()
    };
    c.bench_function("train Mixtral-8x7B, LoRA all-linear + checkpointing", |b| {
        b.iter(|| std::hint::black_box(train(&mixtral, &lora).expect("trains")));
    });
    let layout = TrainOptions {
        parallel: Parallelism {
            dp: 2,
            tp: 8,
            pp: 9,
            sequence_parallel: true,
            micro_batches: 9,
            zero: 1,
            ..Parallelism::default()
        },
        ..TrainOptions::default()
    };
    c.bench_function(
        "train Llama-3.1-405B, dp 2 × tp 8 × pp 9 + SP, ZeRO-1",
        |b| {
            b.iter(|| std::hint::black_box(train(&big, &layout).expect("trains")));
        },
    );
    let capacity = 24u128 << 30;
    c.bench_function(
        "--max-batch of Llama-3-8B LoRA on 24 GiB (bisection)",
        |b| {
            b.iter(|| {
                std::hint::black_box(
                    largest_fitting(&llama, &lora, capacity, 1 << 20, |o, v| o.batch = v)
                        .expect("searches"),
                )
            });
        },
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);

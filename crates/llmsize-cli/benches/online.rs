//! `--online` over a stand-in Hub with 20 ms of latency per request (a nearby CDN's round
//! trip): the headers of a 100-shard checkpoint (`bench/shards.py`'s layout: one MoE layer of
//! 30 BF16 tensors per shard) fetched one at a time (`--jobs 1`) and 8 at a time (the
//! default). Each run makes 103 requests: the file listing, `config.json`, the index and one
//! per shard (`tests/online.rs` asserts the count); before this work a shard took two
//! sequential requests, 203 in all, ~4.1 s at this latency.
//!
//! Measured 2026-11-30 on the 2-core dev machine: `--jobs 1` 2.10 s (floor 103 × 20 ms =
//! 2.06 s), `--jobs 4` 578 ms, `--jobs 8` 333 ms (floor 3 × 20 + ⌈100/8⌉ × 20 = 320 ms); the
//! release binary from before this work 4.14 s (203 requests), after it 340 ms.
//!
//! `cargo bench -p llmsize-cli --bench online`; `LLMSIZE_COMPARE=/a/llmsize:/b/llmsize` also
//! times those binaries' `inspect org/moe-100 --online --json` against the same server (e.g.
//! a build from before this work).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::cast_possible_truncation,
    clippy::case_sensitive_file_extension_comparisons,
    missing_docs,
    reason = "a bench fails loudly on what it did not expect"
)]

#[path = "../tests/fake_hub/mod.rs"]
mod fake_hub;

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use fake_hub::{Behaviour, FakeHub};
use llmsize_engine::{Engine, HubEnv, HubOptions, InspectRequest};

const SHARDS: usize = 100;
const LATENCY: Duration = Duration::from_millis(20);

fn online_100_shards(c: &mut Criterion) {
    let hub = FakeHub::start(
        "org/moe-100",
        fake_hub::moe_repo(SHARDS),
        LATENCY,
        Behaviour::Normal,
    );
    let engine = Engine::new(HubEnv {
        endpoint: Some(hub.endpoint.clone()),
        ..HubEnv::default()
    });
    let mut group = c.benchmark_group("online: 100 shards, 20 ms per request");
    group.sample_size(10);
    for jobs in [1, 4, 8] {
        let request = InspectRequest {
            model: "org/moe-100".into(),
            hub: HubOptions {
                online: true,
                jobs,
                ..HubOptions::default()
            },
        };
        group.bench_function(format!("--jobs {jobs}"), |b| {
            b.iter(|| {
                let outcome = engine.inspect(&request).unwrap();
                assert_eq!(outcome.summary.total, 100 * (28 * 4096 * 1024 + 2 * 4096));
                std::hint::black_box(outcome)
            });
        });
    }
    if let Some(bins) = std::env::var_os("LLMSIZE_COMPARE") {
        let cache = std::env::temp_dir().join("llmsize-bench-empty-hf-home");
        for bin in std::env::split_paths(&bins) {
            group.bench_function(format!("binary {}", bin.display()), |b| {
                b.iter(|| {
                    let out = std::process::Command::new(&bin)
                        .args(["inspect", "org/moe-100", "--online", "--json"])
                        .env("HF_ENDPOINT", &hub.endpoint)
                        .env("HF_HOME", &cache)
                        .output()
                        .unwrap();
                    assert!(out.status.success(), "{out:?}");
                });
            });
        }
    }
    group.finish();
}

criterion_group!(benches, online_100_shards);
criterion_main!(benches);

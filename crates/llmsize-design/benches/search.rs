//! Shapes evaluated per second by the exhaustive search, on one core and on all cores.
//!
//! The space: LLaMA-style, head widths 64 and 128, GQA groups 1, 2, 4, 8, hidden sizes
//! 64..32768 in steps of 64, layers 1..4096 (5.9 million shapes), every shape evaluated against a 7B target (1%).
//! Criterion's throughput is in shapes ("elements") per second.

#![allow(missing_docs, clippy::expect_used, reason = "a benchmark")]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use llmsize_design::base::{Base, DesignStyle};
use llmsize_design::form::measure;
use llmsize_design::search::{FfnRule, KvChoice, Preference, Space, Target, search, size};

fn space() -> Space {
    Space {
        head_dims: vec![64, 128],
        hidden: (64, 32_768, 64),
        layers: (1, 4096),
        kv: KvChoice::Group(vec![1, 2, 4, 8]),
        ffn: FfnRule::Llama {
            mult_num: 1,
            mult_den: 1,
            multiple_of: 256,
        },
        ffn_align: 64,
        tp: 1,
        pp: 1,
        aspect: Some((16.0, 512.0)),
        vocab: 32_000,
        mha_only: false,
    }
}

fn bench(c: &mut Criterion) {
    let base = Base::style(DesignStyle::Llama).expect("style");
    let forms = measure(&base).expect("form");
    let space = space();
    let target = Target {
        value: 7_000_000_000,
        tolerance: 70_000_000,
        resolution: 100_000_000,
        maximize: false,
    };
    let pref = Preference { aspect: 128.0 };
    let n = size(&space);
    let mut group = c.benchmark_group("search");
    group.throughput(Throughput::Elements(n));
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool");
    group.bench_function("one core", |b| {
        b.iter(|| one.install(|| search(&space, &forms.total, &target, pref, 10)));
    });
    group.bench_function(
        format!("all cores ({})", rayon::current_num_threads()),
        |b| b.iter(|| search(&space, &forms.total, &target, pref, 10)),
    );
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

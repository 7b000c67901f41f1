//! The `--train-memory` bound prunes safely: over shapes from far narrower to far wider than
//! the probes, and for the training setups the design accepts, it never exceeds 1.2 × the
//! training step's exact bytes (a shape that fits is then never pruned, the search keeping
//! shapes up to 1.2 × the budget), and on dense steps it is the step itself to 0.1%.

#![allow(
    missing_docs,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_precision_loss,
    reason = "a test fails loudly on what it did not expect"
)]

use llmsize_adapters::hf_config::parse_json;
use llmsize_adapters::presets;
use llmsize_core::formats::WeightFormat;
use llmsize_design::search::Space;
use llmsize_design::{Base, FfnRule, KvChoice, Shape, form, train};
use llmsize_train::TrainOptions;
use llmsize_train::lora::{LoraOptions, LoraTargets};
use llmsize_train::parallel::Parallelism;
use llmsize_train::states::Precision;

fn like(name: &str) -> Base {
    let p = presets::find(name).expect("preset");
    Base::like(p.id, parse_json(p.config, p.id).expect("json")).expect("base")
}

fn space(base: &Base) -> Space {
    let s = base.shape;
    Space {
        head_dims: vec![s.head_dim],
        hidden: (64, 32_768, 64),
        layers: (1, 256),
        kv: KvChoice::Group(vec![s.heads / s.kv_heads.max(1)]),
        ffn: FfnRule::of_model(s.hidden, s.ffn),
        ffn_align: 64,
        tp: 1,
        pp: 1,
        aspect: None,
        vocab: s.vocab,
        mha_only: base.keys.kv_heads.is_none(),
    }
}

/// Widths ×1/8 to ×4 of the base's, at depths 1 to 96.
fn shapes(base: &Base, sp: &Space) -> Vec<Shape> {
    let s = base.shape;
    let group = s.heads / s.kv_heads.max(1);
    let unit = s.head_dim * group;
    let mut out = Vec::new();
    for k in [1, 2, 4, 8, 16, 32] {
        let d = (s.hidden / 8 * k / unit).max(1) * unit;
        for layers in [1, 6, 24, 96] {
            let heads = d / s.head_dim;
            out.push(Shape {
                hidden: d,
                layers,
                heads,
                kv_heads: if sp.mha_only { heads } else { heads / group },
                head_dim: s.head_dim,
                ffn: sp.ffn.ffn(d),
                vocab: s.vocab,
            });
        }
    }
    out
}

/// The largest ratio bound / exact over the shapes, and the smallest.
fn ratios(name: &str, options: &TrainOptions) -> (f64, f64) {
    let base = like(name);
    let forms = form::measure(&base).expect("forms");
    let sp = space(&base);
    let bound = train::bound(&base, &forms, &sp, options).expect("bound");
    let (mut hi, mut lo) = (0.0f64, f64::MAX);
    for s in shapes(&base, &sp) {
        let exact = train::step_bytes(&base, &s, options).expect("step") as f64;
        let b = bound.eval(&s) as f64 / 1e6;
        hi = hi.max(b / exact);
        lo = lo.min(b / exact);
    }
    (hi, lo)
}

fn lora() -> LoraOptions {
    LoraOptions {
        rank: 16,
        targets: LoraTargets::AllLinear,
        dropout: 0.0,
        dora: false,
    }
}

#[test]
fn dense_steps_are_their_own_bound() {
    for name in ["Meta-Llama-3-8B", "gpt2", "Qwen2.5-7B"] {
        for options in [
            TrainOptions::default(),
            TrainOptions {
                checkpointing: true,
                ..TrainOptions::default()
            },
            TrainOptions {
                precision: Precision::Mixed,
                ..TrainOptions::default()
            },
        ] {
            let (hi, lo) = ratios(name, &options);
            assert!(hi < 1.001 && lo > 0.999, "{name} {options:?}: {lo}..{hi}");
        }
    }
}

#[test]
fn adapters_sharding_and_experts_stay_under_the_margin() {
    for (name, options) in [
        (
            "Meta-Llama-3-8B",
            TrainOptions {
                lora: Some(lora()),
                ..TrainOptions::default()
            },
        ),
        (
            "Meta-Llama-3-8B",
            TrainOptions {
                lora: Some(lora()),
                base_format: WeightFormat::parse("nf4-dq"),
                ..TrainOptions::default()
            },
        ),
        (
            "Qwen2.5-7B",
            TrainOptions {
                parallel: Parallelism {
                    dp: 8,
                    zero: 3,
                    ..Parallelism::default()
                },
                ..TrainOptions::default()
            },
        ),
        ("Mixtral-8x7B-v0.1", TrainOptions::default()),
    ] {
        let (hi, lo) = ratios(name, &options);
        assert!(hi <= 1.2, "{name} {options:?}: {lo}..{hi}");
    }
}

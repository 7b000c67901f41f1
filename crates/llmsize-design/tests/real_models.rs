//! The real shape of three models is found among the top candidates when searching like
//! each of them for its own size, and every candidate's total is the reader's.

use llmsize_adapters::hf_config::parse_json;
use llmsize_adapters::presets;
use llmsize_design::{Base, Constraints, Goal, Quantity, Request, Shape, design, parse_count};

fn like(name: &str) -> Base {
    let p = presets::find(name).expect("preset");
    Base::like(p.id, parse_json(p.config, p.id).expect("json")).expect("base")
}

fn request(base: Base, params: &str) -> Request {
    let (value, resolution) = parse_count(params).expect("count");
    Request {
        base,
        goal: Goal::Params {
            value,
            resolution,
            quantity: Quantity::Total,
        },
        tolerance: 0.01,
        constraints: Constraints::default(),
        top: 10,
        ctx: 4096,
    }
}

fn found(name: &str, params: &str, real: Shape) -> usize {
    let out = design(&request(like(name), params)).expect("design");
    for c in &out.candidates {
        eprintln!("{} {:?} {}", c.total, c.shape, c.command);
    }
    eprintln!("evaluated {}", out.evaluated);
    out.candidates
        .iter()
        .position(|c| c.shape == real)
        .unwrap_or_else(|| panic!("{name}: the real shape is not among the top 10"))
}

#[test]
fn llama_3_8b() {
    let rank = found(
        "Meta-Llama-3-8B",
        "8.03B",
        Shape {
            hidden: 4096,
            layers: 32,
            heads: 32,
            kv_heads: 8,
            head_dim: 128,
            ffn: 14336,
            vocab: 128_256,
        },
    );
    assert!(rank < 3, "{rank}");
}

#[test]
fn qwen2_5_7b() {
    // Its own total, 7,615,616,512, to three digits.
    let rank = found(
        "Qwen2.5-7B",
        "7.62B",
        Shape {
            hidden: 3584,
            layers: 28,
            heads: 28,
            kv_heads: 4,
            head_dim: 128,
            ffn: 18944,
            vocab: 152_064,
        },
    );
    assert!(rank < 3, "{rank}");
}

#[test]
fn mixtral_8x7b() {
    // Its own total, 46,702,792,704.
    let rank = found(
        "Mixtral-8x7B-v0.1",
        "46.7B",
        Shape {
            hidden: 4096,
            layers: 32,
            heads: 32,
            kv_heads: 8,
            head_dim: 128,
            ffn: 14336,
            vocab: 32_000,
        },
    );
    assert!(rank < 3, "{rank}");
}

//! The real shape of three models is found among the top candidates when searching like
//! each of them for its own size, and every candidate's total is the reader's; the measured
//! closed forms of the styles are the ones written by hand; counts typed and FFN rules.

#![allow(
    missing_docs,
    clippy::expect_used,
    clippy::panic,
    reason = "a test fails loudly on what it did not expect"
)]

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

#[test]
fn llama_style_form_is_the_hand_written_one() {
    // Per layer: q and o 2·d², k and v 2·d·w, gate/up/down 3·d·f, two RMSNorms 2·d; once: the
    // token table and the untied head 2·V·d, the final norm d.
    let forms = llmsize_design::form::measure(
        &Base::style(llmsize_design::DesignStyle::Llama).expect("style"),
    )
    .expect("form");
    assert_eq!(forms.total.layer, [2, 2, 3, 2, 0, 0, 0, 0, 0, 0]);
    assert_eq!(forms.total.global, [2, 0, 1, 0]);
    assert_eq!(
        forms.total.describe(),
        "L·(2·d² + 2·d·w + 3·d·f + 2·d) + 2·V·d + d"
    );
    // Without the input table: V·d less.
    assert_eq!(forms.non_embedding.global, [1, 0, 1, 0]);
}

#[test]
fn gpt_style_form_is_the_hand_written_one() {
    // GPT-2 has no KV heads of its own: attention is c_attn 3·d² + 3·d and c_proj d² + d, so
    // 4·d² + 4·d; the MLP 2·d·f + f + d; two LayerNorms 4·d: c3 = 4 + 1 + 4 = 9. Once: the
    // tied token table V·d, 2,048 learned positions 2048·d, the final LayerNorm 2·d.
    let forms = llmsize_design::form::measure(
        &Base::style(llmsize_design::DesignStyle::Gpt).expect("style"),
    )
    .expect("form");
    assert_eq!(forms.total.layer, [4, 0, 2, 9, 0, 1, 0, 0, 0, 0]);
    assert_eq!(forms.total.global, [1, 0, 2050, 0]);
}

#[test]
fn counts_typed_carry_their_precision() {
    assert_eq!(parse_count("7B"), Ok((7_000_000_000, 1_000_000_000)));
    assert_eq!(parse_count("8.03B"), Ok((8_030_000_000, 10_000_000)));
    assert_eq!(parse_count("350M"), Ok((350_000_000, 1_000_000)));
    assert_eq!(parse_count("124439808"), Ok((124_439_808, 1)));
    assert_eq!(parse_count("1.5e9"), Ok((1_500_000_000, 100_000_000)));
    assert!(parse_count("7X").is_err());
    assert!(parse_count("0").is_err());
    assert!(parse_count("-3B").is_err());
}

#[test]
fn ffn_rules_give_the_published_widths() {
    use llmsize_design::FfnRule;
    // Meta's rule: ⌊8·4096/3⌋ = 10922 → up to 256: 11008 (Llama-2-7B).
    let llama2 = FfnRule::Llama {
        mult_num: 1,
        mult_den: 1,
        multiple_of: 256,
    };
    assert_eq!(llama2.ffn(4096), 11_008);
    // × 1.3: ⌊1.3·10922⌋ = 14198 → up to 1024: 14336 (Llama-3-8B).
    let llama3 = FfnRule::Llama {
        mult_num: 13,
        mult_den: 10,
        multiple_of: 1024,
    };
    assert_eq!(llama3.ffn(4096), 14_336);
    // d = 8192: ⌊8·8192/3⌋ = 21845, ⌊1.3·21845⌋ = 28398 → 28672 (Llama-3-70B).
    assert_eq!(llama3.ffn(8192), 28_672);
    assert_eq!(FfnRule::of_model(4096, 14_336), llama3);
    assert_eq!(FfnRule::of_model(4096, 11_008), llama2);
    // Qwen2.5-7B: 18944/3584 = 37/7, 18944 = 74·256.
    let qwen = FfnRule::of_model(3584, 18_944);
    assert_eq!(
        qwen,
        FfnRule::Ratio {
            num: 37,
            den: 7,
            multiple_of: 256
        }
    );
    assert_eq!(qwen.ffn(3584), 18_944);
}

#[test]
fn mixtral_form_counts_experts_and_router() {
    // Per layer: attention as LLaMA's (2·d² + 2·d·w), 8 experts of 3·d·f, two RMSNorms 2·d
    // and the router 8·d: 24·d·f + 10·d. Active: 2 of 8 experts, 6·d·f.
    let forms = llmsize_design::form::measure(&like("Mixtral-8x7B-v0.1")).expect("form");
    assert_eq!(forms.total.layer, [2, 2, 24, 10, 0, 0, 0, 0, 0, 0]);
    assert_eq!(forms.active.layer, [2, 2, 6, 10, 0, 0, 0, 0, 0, 0]);
}

#[test]
fn a_model_with_a_fixed_projection_width_is_refused() {
    // OPT-1.3B projects embeddings from `word_embed_proj_dim` = 2048 when the hidden size
    // differs: not a closed form of the sizes the search varies.
    let err = llmsize_design::form::measure(&like("opt-1.3b")).expect_err("refused");
    assert!(
        matches!(err, llmsize_design::DesignError::Unsupported { .. }),
        "{err}"
    );
}

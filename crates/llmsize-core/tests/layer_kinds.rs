//! The layer kinds issue 9 added, on a small llama-style design whose numbers are derived by
//! hand in the comments: a layer without attention or MLP holding a mixer's extras and a
//! recurrent state, a cache-only attention, a sparse-attention indexer's cached key, values
//! from the key projection, experts held as extras, model-level vision extras.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

use llmsize_core::Category;
use llmsize_core::count;
use llmsize_core::design::{Design, Style, design_spec};
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::flops::{AttentionConvention, flops};
use llmsize_core::formats::{KvDtype, WeightFormat};
use llmsize_core::memory::{CachePolicy, MemoryOptions, MlaCache, memory};
use llmsize_core::spec::{Attention, Extra, Ffn, Layer, Layers, ModelSpec, RecurrentState};

/// d = 64, L = 2, V = 100, 4 heads of 16 (MHA), `d_ff` = 128, untied llama block.
fn base() -> ModelSpec {
    design_spec(
        &Design {
            hidden: 64,
            layers: 2,
            vocab: Some(100),
            heads: Some(4),
            ffn: Some(128),
            ..Design::default()
        },
        Style::Llama,
    )
    .unwrap()
}

fn layer(spec: &ModelSpec) -> Layer {
    spec.stacks[0].layers.kinds()[0].clone()
}

fn options(seq_len: u64) -> MemoryOptions {
    MemoryOptions {
        format: WeightFormat::Bf16,
        seq_len,
        batch: 1,
        kv_dtype: KvDtype::Bf16,
        tp: 1,
        gpu: None,
        mla: MlaCache::Latent,
        window: CachePolicy::Transformers,
        overhead_bytes: 0,
    }
}

#[test]
fn a_mixer_layer_counts_its_extras_and_keeps_a_fixed_state() {
    let mut spec = base();
    let mut mixer = layer(&spec);
    mixer.attention = Attention::Absent;
    mixer.ffn = Ffn::Absent;
    mixer.norms.truncate(1);
    let d = || Expr::sym(Sym::Hidden, 64);
    // in_proj d → 256, out_proj 128 → d, a conv kernel 128 × 4, A_log of 8.
    mixer.extras = vec![
        Extra::linear("in_proj", "mixer", Category::Ssm, d(), Expr::Lit(256)),
        Extra::linear("out_proj", "mixer", Category::Ssm, Expr::Lit(128), d()),
        Extra::table(
            "conv1d",
            "mixer",
            Category::Ssm,
            Expr::Lit(128),
            Expr::Lit(4),
        ),
        Extra::vector("A_log", "mixer", Category::Ssm, Expr::Lit(8)),
    ];
    mixer.state = Some(RecurrentState {
        conv: 128 * 4,
        recurrent: 8 * 16 * 16,
        recurrent_f32: true,
        conv_f32: false,
    });
    let attention_layer = layer(&spec);
    spec.stacks[0].layers = Layers::from_pattern([true, false], |m| {
        if *m {
            mixer.clone()
        } else {
            attention_layer.clone()
        }
    });
    let c = count(&spec).unwrap();
    // ssm: 64·256 + 128·64 + 128·4 + 8 = 16384 + 8192 + 512 + 8 = 25,096 (one mixer layer).
    assert_eq!(c.get(Category::Ssm), 25_096);
    // attention: one layer of 4·d² = 16,384; ffn: one layer of 3·d·d_ff = 24,576.
    assert_eq!(c.get(Category::Attention), 16_384);
    assert_eq!(c.get(Category::Ffn), 24_576);
    // norms: 1 (mixer) + 2 (attention layer) + final = 4·64.
    assert_eq!(c.get(Category::Norm), 256);
    let m = memory(&spec, &options(1024)).unwrap();
    // KV of the one attention layer: 2·4·16 elements · 2 B · 1024 tokens = 262,144.
    assert_eq!(m.kv_bytes, 262_144);
    // State: conv 512 · 2 B + recurrent 2048 · 4 B = 9,216, whatever the context.
    assert_eq!(m.state_bytes, 9_216);
    assert_eq!(memory(&spec, &options(8)).unwrap().state_bytes, 9_216);
    // A token multiplies by the mixer's two matrices (16,384 + 8,192), the attention layer's
    // 4·d² = 16,384 and its MLP's 24,576, and the head V·d = 6,400; the conv kernel and the
    // vectors cost 0 under the convention: 71,936.
    let f = flops(&spec, 1, 1, AttentionConvention::Full).unwrap();
    assert_eq!(f.matmul_params, 71_936);
}

#[test]
fn cache_only_attention_caches_without_weights() {
    let mut spec = base();
    let mut l = layer(&spec);
    let Attention::Standard(a) = l.attention.clone() else {
        panic!("a llama design has standard attention")
    };
    l.attention = Attention::CacheOnly(a);
    spec.stacks[0].layers = Layers::repeat(l, 2);
    let c = count(&spec).unwrap();
    assert_eq!(c.get(Category::Attention), 0);
    // 2 layers · 2·4·16 · 2 B · 100 tokens = 51,200.
    assert_eq!(memory(&spec, &options(100)).unwrap().kv_bytes, 51_200);
}

#[test]
fn an_indexer_key_widens_the_cache_and_values_from_keys_drop_v_proj() {
    let mut spec = base();
    let mut l = layer(&spec);
    let Attention::Standard(mut a) = l.attention.clone() else {
        panic!("a llama design has standard attention")
    };
    a.indexer_key_dim = Some(32);
    a.v_from_k = true;
    l.attention = Attention::Standard(a);
    spec.stacks[0].layers = Layers::repeat(l, 2);
    // No v_proj: 3·d² per layer = 12,288, two layers 24,576.
    assert_eq!(count(&spec).unwrap().get(Category::Attention), 24_576);
    // Per token and layer: 2·4·16 + 32 = 160 elements; 2 layers · 160 · 2 B · 10 tokens.
    assert_eq!(memory(&spec, &options(10)).unwrap().kv_bytes, 6_400);
}

#[test]
fn experts_held_as_extras_cost_a_token_only_the_chosen_ones() {
    let mut all = base();
    let mut l = layer(&all);
    l.extras = vec![
        Extra::linear(
            "experts.w",
            "experts",
            Category::MoeExperts,
            Expr::Lit(64),
            Expr::Lit(64),
        )
        .experts(Expr::Lit(8), Expr::Lit(2)),
    ];
    all.stacks[0].layers = Layers::repeat(l, 2);
    // 8 experts of 64·64 per layer, two layers: 65,536 parameters.
    assert_eq!(count(&all).unwrap().get(Category::MoeExperts), 65_536);
    let with = flops(&all, 1, 1, AttentionConvention::Full).unwrap();
    let without = flops(&base(), 1, 1, AttentionConvention::Full).unwrap();
    // A token multiplies by 2 of the 8 per layer: 2 · 2 · 4,096 = 16,384 more parameters.
    assert_eq!(with.matmul_params - without.matmul_params, 16_384);
}

#[test]
fn a_vision_tower_counts_but_a_text_token_never_multiplies_by_it() {
    let mut spec = base();
    spec.extras = vec![
        Extra::linear(
            "vision.fc",
            "vision",
            Category::Vision,
            Expr::Lit(32),
            Expr::Lit(32),
        )
        .times(Expr::Lit(3)),
    ];
    let c = count(&spec).unwrap();
    assert_eq!(c.get(Category::Vision), 3 * 32 * 32);
    let with = flops(&spec, 1, 1, AttentionConvention::Full).unwrap();
    let without = flops(&base(), 1, 1, AttentionConvention::Full).unwrap();
    assert_eq!(with.per_token_flops, without.per_token_flops);
    assert_eq!(
        memory(&spec, &options(16)).unwrap().kv_bytes,
        memory(&base(), &options(16)).unwrap().kv_bytes
    );
}

//! `JetMoE` (`jetmoe`, `modeling_jetmoe.py`): a mixture of attention heads and a mixture of
//! MLP experts, read by code.

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{Extra, Ffn, Layer, Layers, ModelSpec};

use crate::error::ConfigError;
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;

/// `JetMoE` (`modeling_jetmoe.py`). Attention is a mixture of experts (`JetMoeMoA`): each of
/// `num_local_experts` experts maps `d → n_kv·d_h` (`input_linear`, the queries of
/// `num_key_value_heads` heads) and back (`output_linear`), with a router `d → E` and an output
/// bias of `d`, all under `experts` (the truth's `moe_experts`); keys and values come from one
/// shared `kv_proj` (`d → 2·n_kv·d_h`, `attention`) and are cached once per layer
/// (`n_kv` heads of `kv_channels`), the queries of the `top_k` chosen experts attending to
/// them. The MLP (`JetMoeMoE`, under `mlp`: the truth's `ffn`) has `E` experts
/// `d → 2·intermediate_size → d`, an output bias of `d` and a router `d → E` (`moe_router`).
/// Two `RMSNorm`s per layer, tied by default.
pub(super) fn read_jetmoe(
    raw: &mut RawConfig<'_>,
    family: &Family,
    _: crate::hf_config::HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let reason = "absent; `JetMoeConfig` default";
    let d = raw.size_or(&["hidden_size"], Sym::Hidden, 2048, reason)?;
    let layers = raw.size_or(&["num_hidden_layers"], Sym::Layers, 12, reason)?;
    let vocab = raw.size_or(&["vocab_size"], Sym::Vocab, 32000, reason)?;
    let kv = raw.size_or(&["num_key_value_heads"], Sym::KvHeads, 16, reason)?;
    let hd = raw.size_or(&["kv_channels", "head_dim"], Sym::HeadDim, 128, reason)?;
    let f = raw.size_or(&["intermediate_size"], Sym::ExpertFfn, 5632, reason)?;
    let experts = raw.size_or(&["num_local_experts"], Sym::Experts, 8, reason)?;
    let top_k = raw.size_or(&["num_experts_per_tok"], Sym::TopK, 2, reason)?;
    if top_k > experts {
        return Err(raw.invalid(
            "num_experts_per_tok",
            &top_k.into(),
            &format!("at most `num_local_experts` ({experts})"),
        ));
    }
    // `__post_init__`: `num_attention_heads = num_key_value_heads * num_experts_per_tok`.
    let heads = raw.mul(kv, top_k, "num_key_value_heads·num_experts_per_tok")?;
    raw.source(Sym::Heads, "num_key_value_heads·num_experts_per_tok");
    raw.mul(kv, hd, "num_key_value_heads·kv_channels")?;
    raw.mul(f, 2, "2·intermediate_size")?;
    let n = raw.layer_count("num_hidden_layers", layers)?;
    let tied = raw.flag_or("tie_word_embeddings", true, reason)?;
    let hidden = || Expr::sym(Sym::Hidden, d);
    let e = || Expr::sym(Sym::Experts, experts);
    let kv_width = || {
        Expr::product(vec![
            Expr::sym(Sym::KvHeads, kv),
            Expr::sym(Sym::HeadDim, hd),
        ])
    };
    let ffn = || Expr::sym(Sym::ExpertFfn, f);
    // A token goes through the `top_k` experts its router picks, in attention and MLP alike.
    let k = || Expr::sym(Sym::TopK, top_k);
    let extras = vec![
        Extra::linear(
            "self_attention.kv_proj.weight",
            "attention",
            Category::Attention,
            hidden(),
            Expr::product(vec![Expr::Lit(2), kv_width()]),
        ),
        Extra::linear(
            "self_attention.experts.input_linear.weight",
            "attention experts",
            Category::MoeExperts,
            hidden(),
            kv_width(),
        )
        .experts(e(), k()),
        Extra::linear(
            "self_attention.experts.output_linear.weight",
            "attention experts",
            Category::MoeExperts,
            kv_width(),
            hidden(),
        )
        .experts(e(), k()),
        Extra::vector(
            "self_attention.experts.bias",
            "attention experts",
            Category::MoeExperts,
            hidden(),
        ),
        Extra::linear(
            "self_attention.experts.router.layer.weight",
            "attention experts",
            Category::MoeExperts,
            hidden(),
            e(),
        ),
        Extra::linear(
            "mlp.input_linear.weight",
            "mlp experts",
            Category::Ffn,
            hidden(),
            Expr::product(vec![Expr::Lit(2), ffn()]),
        )
        .experts(e(), k()),
        Extra::linear(
            "mlp.output_linear.weight",
            "mlp experts",
            Category::Ffn,
            ffn(),
            hidden(),
        )
        .experts(e(), k()),
        Extra::vector("mlp.bias", "mlp experts", Category::Ffn, hidden()),
        Extra::linear(
            "mlp.router.layer.weight",
            "router",
            Category::MoeRouter,
            hidden(),
            e(),
        ),
    ];
    let layer = Layer {
        attention: llmsize_core::spec::Attention::CacheOnly(crate::hf_config::decoder::mha(
            d, heads, kv, hd, false,
        )),
        cross_attention: None,
        ffn: Ffn::Absent,
        norms: vec![llmsize_core::spec::Norm::rms_norm(d); 2],
        sliding_window: None,
        extras,
        state: None,
    };
    Ok(crate::hf_config::decoder::Decoder::new(
        family.model_type,
        crate::hf_config::architecture(raw, family.architecture),
        d,
        vocab,
        Layers::repeat(layer, n as u64),
        Some(llmsize_core::spec::Norm::rms_norm(d)),
        tied,
    )
    .into_spec())
}

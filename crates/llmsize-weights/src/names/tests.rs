#![allow(
    clippy::cast_possible_truncation,
    reason = "test code: sizes are small"
)]

use super::*;

use Category::{
    Attention, Buffer, EmbeddingProjection, Ffn, LmHead, LmHeadTransform, MoeExperts, MoeRouter,
    MoeSharedExperts, Norm, Pooler, PositionEmbedding, TokenEmbedding, TokenTypeEmbedding, Unknown,
};

fn check_hf(family: &str, cases: &[(&str, Category)]) {
    for &(name, expected) in cases {
        assert_eq!(category_of_hf(name), expected, "{family}: {name}");
    }
}

fn check_gguf(cases: &[(&str, Category)]) {
    for &(name, expected) in cases {
        assert_eq!(category_of_gguf(name), expected, "{name}");
    }
}

/// Every parameter and buffer name of 34 models, with the oracle's category
/// (`fixtures/names/make_names.py`, transformers 5.24.0).
#[test]
fn oracle_names_all_match() {
    let tsv = include_str!("../../fixtures/names/hf_names.tsv");
    let mut checked = 0;
    let mut models = std::collections::BTreeSet::new();
    for line in tsv.lines().filter(|l| !l.starts_with('#')) {
        let cols: Vec<&str> = line.split('\t').collect();
        let [model, name, category] = cols[..] else {
            panic!("bad line {line:?}");
        };
        let expected = Category::from_name(category).unwrap();
        assert_eq!(category_of_hf(name), expected, "{model}: {name}");
        models.insert(model);
        checked += 1;
    }
    assert!(checked > 500, "{checked}");
    assert_eq!(models.len(), 34);
}

/// The same names mapped to llama.cpp names by gguf-py's `TensorNameMap`.
#[test]
fn oracle_names_through_gguf_map_all_match() {
    let tsv = include_str!("../../fixtures/names/gguf_names.tsv");
    let mut checked = 0;
    for line in tsv.lines().filter(|l| !l.starts_with('#')) {
        let cols: Vec<&str> = line.split('\t').collect();
        let [model, gguf_name, category, hf_name] = cols[..] else {
            panic!("bad line {line:?}");
        };
        let expected = Category::from_name(category).unwrap();
        assert_eq!(
            category_of_gguf(gguf_name),
            expected,
            "{model}: {gguf_name} (from {hf_name})"
        );
        checked += 1;
    }
    assert!(checked > 350, "{checked}");
}

#[test]
fn towers_mixers_and_layer_extras_take_everything_inside_them() {
    for (name, want) in [
        (
            "model.vision_tower.vision_model.encoder.layers.0.self_attn.q_proj.weight",
            Category::Vision,
        ),
        (
            "model.multi_modal_projector.linear_1.weight",
            Category::Vision,
        ),
        ("model.visual.blocks.0.norm1.weight", Category::Vision),
        ("thinker.audio_tower.layers.0.fc1.weight", Category::Audio),
        ("backbone.layers.0.mixer.in_proj.weight", Category::Ssm),
        ("backbone.layers.0.mixer.A_log", Category::Ssm),
        ("model.layers.1.mamba.norm.weight", Category::Ssm),
        ("model.layers.0.linear_attn.conv1d.weight", Category::Ssm),
        (
            "model.language_model.layers.0.altup.correction_coefs.weight",
            Category::LayerExtras,
        ),
        (
            "model.language_model.layers.0.laurel.linear_left.weight",
            Category::LayerExtras,
        ),
        // The text model of a vision-language checkpoint keeps its own categories.
        (
            "model.language_model.layers.0.self_attn.q_proj.weight",
            Category::Attention,
        ),
    ] {
        assert_eq!(category_of_hf(name), want, "{name}");
    }
}

#[test]
fn category_names_round_trip() {
    for c in Category::PARAMETERS.into_iter().chain([Buffer, Unknown]) {
        assert_eq!(Category::from_name(c.as_str()), Some(c));
        assert_eq!(c.to_string(), c.as_str());
    }
    assert_eq!(Category::PARAMETERS.len(), 18);
    assert!(Category::PARAMETERS.iter().all(|c| c.is_parameter()));
    assert!(!Buffer.is_parameter() && !Unknown.is_parameter());
    // The truth's `other` (what no rule places) is a parameter category of its own since PI0's
    // action projections; a name the rules do not know is still `unknown`, not a parameter.
    assert_eq!(Category::from_name("other"), Some(Category::Other));
    assert!(Category::Other.is_parameter());
}

#[test]
fn gpt2_hub_names_without_prefix_and_mask_buffers() {
    check_hf(
        "gpt2",
        &[
            ("wte.weight", TokenEmbedding),
            ("wpe.weight", PositionEmbedding),
            ("h.0.ln_1.weight", Norm),
            ("h.0.attn.c_attn.weight", Attention),
            ("h.0.attn.c_attn.bias", Attention),
            ("h.0.attn.c_proj.weight", Attention),
            ("h.0.attn.bias", Buffer),
            ("h.0.attn.masked_bias", Buffer),
            ("h.11.mlp.c_fc.weight", Ffn),
            ("h.11.mlp.c_proj.bias", Ffn),
            ("ln_f.bias", Norm),
            ("transformer.h.0.attn.bias", Buffer),
            ("lm_head.weight", LmHead),
        ],
    );
}

#[test]
fn gptj_and_gpt_neox() {
    check_hf(
        "gptj",
        &[
            ("transformer.h.0.attn.q_proj.weight", Attention),
            ("transformer.h.0.attn.out_proj.weight", Attention),
            ("transformer.h.0.attn.bias", Buffer),
            ("transformer.h.0.attn.masked_bias", Buffer),
            ("transformer.h.0.mlp.fc_in.weight", Ffn),
            ("transformer.h.0.mlp.fc_out.bias", Ffn),
            ("lm_head.bias", LmHead),
        ],
    );
    check_hf(
        "gpt_neox",
        &[
            ("gpt_neox.embed_in.weight", TokenEmbedding),
            (
                "gpt_neox.layers.0.attention.query_key_value.weight",
                Attention,
            ),
            ("gpt_neox.layers.0.attention.dense.bias", Attention),
            ("gpt_neox.layers.0.attention.bias", Buffer),
            ("gpt_neox.layers.0.attention.masked_bias", Buffer),
            ("gpt_neox.layers.0.attention.rotary_emb.inv_freq", Buffer),
            ("gpt_neox.layers.0.mlp.dense_h_to_4h.weight", Ffn),
            ("gpt_neox.final_layer_norm.weight", Norm),
            ("embed_out.weight", LmHead),
        ],
    );
}

#[test]
fn opt_bloom_falcon() {
    check_hf(
        "opt",
        &[
            ("model.decoder.embed_tokens.weight", TokenEmbedding),
            ("model.decoder.embed_positions.weight", PositionEmbedding),
            ("model.decoder.project_in.weight", EmbeddingProjection),
            ("model.decoder.project_out.weight", EmbeddingProjection),
            ("model.decoder.layers.3.self_attn.k_proj.bias", Attention),
            ("model.decoder.layers.3.self_attn_layer_norm.weight", Norm),
            ("model.decoder.layers.3.fc1.weight", Ffn),
            ("model.decoder.layers.3.fc2.bias", Ffn),
            ("model.decoder.final_layer_norm.bias", Norm),
            ("decoder.embed_tokens.weight", TokenEmbedding),
        ],
    );
    check_hf(
        "bloom",
        &[
            ("word_embeddings.weight", TokenEmbedding),
            ("word_embeddings_layernorm.weight", Norm),
            ("h.0.self_attention.query_key_value.bias", Attention),
            ("h.0.mlp.dense_4h_to_h.weight", Ffn),
            ("h.0.post_attention_layernorm.bias", Norm),
        ],
    );
    check_hf(
        "falcon",
        &[
            (
                "transformer.h.0.self_attention.query_key_value.weight",
                Attention,
            ),
            ("transformer.h.0.ln_attn.weight", Norm),
            ("transformer.h.0.ln_mlp.bias", Norm),
            ("transformer.h.0.input_layernorm.weight", Norm),
            ("transformer.h.0.mlp.dense_h_to_4h.weight", Ffn),
        ],
    );
}

#[test]
fn llama_family_dense() {
    // llama, mistral, qwen2, qwen3, gemma 1/2/3, phi3, starcoder2, olmo2
    check_hf(
        "llama-like",
        &[
            ("model.embed_tokens.weight", TokenEmbedding),
            ("model.layers.0.self_attn.q_proj.weight", Attention),
            ("model.layers.0.self_attn.q_proj.bias", Attention),
            ("model.layers.0.self_attn.o_proj.weight", Attention),
            ("model.layers.0.self_attn.q_norm.weight", Attention),
            ("model.layers.0.self_attn.k_norm.weight", Attention),
            ("model.layers.0.self_attn.rotary_emb.inv_freq", Buffer),
            ("model.rotary_emb.inv_freq", Buffer),
            ("model.layers.0.self_attn.qkv_proj.weight", Attention),
            ("model.layers.0.mlp.gate_proj.weight", Ffn),
            ("model.layers.0.mlp.gate_up_proj.weight", Ffn),
            ("model.layers.0.mlp.down_proj.weight", Ffn),
            ("model.layers.0.mlp.c_fc.bias", Ffn),
            ("model.layers.0.input_layernorm.weight", Norm),
            ("model.layers.0.post_attention_layernorm.weight", Norm),
            ("model.layers.0.pre_feedforward_layernorm.weight", Norm),
            ("model.layers.0.post_feedforward_layernorm.weight", Norm),
            ("model.norm.weight", Norm),
            ("model.norm.bias", Norm),
            ("lm_head.weight", LmHead),
        ],
    );
    check_hf(
        "phi",
        &[
            ("model.layers.0.self_attn.dense.weight", Attention),
            ("model.layers.0.mlp.fc1.weight", Ffn),
            ("model.final_layernorm.weight", Norm),
            ("lm_head.bias", LmHead),
        ],
    );
}

#[test]
fn mixtral_hub_names() {
    check_hf(
        "mixtral",
        &[
            ("model.layers.0.block_sparse_moe.gate.weight", MoeRouter),
            (
                "model.layers.0.block_sparse_moe.experts.0.w1.weight",
                MoeExperts,
            ),
            (
                "model.layers.0.block_sparse_moe.experts.7.w2.weight",
                MoeExperts,
            ),
            (
                "model.layers.31.block_sparse_moe.experts.3.w3.weight",
                MoeExperts,
            ),
            ("model.layers.0.mlp.experts.gate_up_proj", MoeExperts),
            ("model.layers.0.mlp.gate.weight", MoeRouter),
        ],
    );
}

#[test]
fn qwen_moe_olmoe_granitemoe() {
    check_hf(
        "qwen2_moe/qwen3_moe/olmoe",
        &[
            ("model.layers.0.mlp.gate.weight", MoeRouter),
            ("model.layers.0.mlp.experts.0.gate_proj.weight", MoeExperts),
            ("model.layers.0.mlp.experts.59.down_proj.weight", MoeExperts),
            (
                "model.layers.0.mlp.shared_expert.up_proj.weight",
                MoeSharedExperts,
            ),
            (
                "model.layers.0.mlp.shared_expert_gate.weight",
                MoeSharedExperts,
            ),
            ("model.layers.0.self_attn.q_norm.weight", Attention),
        ],
    );
    check_hf(
        "granitemoe",
        &[
            (
                "model.layers.0.block_sparse_moe.input_linear.weight",
                MoeExperts,
            ),
            (
                "model.layers.0.block_sparse_moe.output_linear.weight",
                MoeExperts,
            ),
            (
                "model.layers.0.block_sparse_moe.router.layer.weight",
                MoeRouter,
            ),
            (
                "model.layers.0.block_sparse_moe.experts.gate_up_proj",
                MoeExperts,
            ),
        ],
    );
}

#[test]
fn deepseek_mla_and_moe() {
    check_hf(
        "deepseek_v2/v3",
        &[
            ("model.layers.0.self_attn.q_a_proj.weight", Attention),
            ("model.layers.0.self_attn.q_a_layernorm.weight", Attention),
            ("model.layers.0.self_attn.q_b_proj.weight", Attention),
            ("model.layers.0.self_attn.q_proj.weight", Attention),
            (
                "model.layers.0.self_attn.kv_a_proj_with_mqa.weight",
                Attention,
            ),
            ("model.layers.0.self_attn.kv_a_layernorm.weight", Attention),
            ("model.layers.0.self_attn.kv_b_proj.weight", Attention),
            ("model.layers.0.mlp.gate_proj.weight", Ffn),
            ("model.layers.3.mlp.gate.weight", MoeRouter),
            ("model.layers.3.mlp.gate.e_score_correction_bias", Buffer),
            (
                "model.layers.3.mlp.experts.255.down_proj.weight",
                MoeExperts,
            ),
            (
                "model.layers.3.mlp.experts.255.down_proj.weight_scale_inv",
                Buffer,
            ),
            (
                "model.layers.3.mlp.shared_experts.gate_proj.weight",
                MoeSharedExperts,
            ),
            (
                "model.layers.3.self_attn.kv_b_proj.weight_scale_inv",
                Buffer,
            ),
        ],
    );
}

#[test]
fn gpt_oss() {
    check_hf(
        "gpt_oss",
        &[
            ("model.layers.0.self_attn.sinks", Attention),
            ("model.layers.0.mlp.router.weight", MoeRouter),
            ("model.layers.0.mlp.router.bias", MoeRouter),
            ("model.layers.0.mlp.experts.gate_up_proj", MoeExperts),
            ("model.layers.0.mlp.experts.gate_up_proj_bias", MoeExperts),
            ("model.layers.0.mlp.experts.down_proj", MoeExperts),
            ("model.layers.0.mlp.experts.down_proj_bias", MoeExperts),
            // The MXFP4 checkpoint's packed form.
            ("model.layers.0.mlp.experts.gate_up_proj_blocks", MoeExperts),
            ("model.layers.0.mlp.experts.gate_up_proj_scales", MoeExperts),
        ],
    );
}

#[test]
fn bert_and_roberta() {
    check_hf(
        "bert",
        &[
            ("bert.embeddings.word_embeddings.weight", TokenEmbedding),
            (
                "bert.embeddings.position_embeddings.weight",
                PositionEmbedding,
            ),
            (
                "bert.embeddings.token_type_embeddings.weight",
                TokenTypeEmbedding,
            ),
            ("bert.embeddings.LayerNorm.gamma", Norm),
            ("bert.embeddings.position_ids", Buffer),
            ("embeddings.position_ids", Buffer),
            ("bert.embeddings.token_type_ids", Buffer),
            (
                "bert.encoder.layer.0.attention.self.query.weight",
                Attention,
            ),
            ("bert.encoder.layer.0.attention.self.value.bias", Attention),
            (
                "bert.encoder.layer.0.attention.output.dense.weight",
                Attention,
            ),
            (
                "bert.encoder.layer.0.attention.output.LayerNorm.weight",
                Norm,
            ),
            ("bert.encoder.layer.0.intermediate.dense.weight", Ffn),
            ("bert.encoder.layer.11.output.dense.bias", Ffn),
            ("bert.encoder.layer.11.output.LayerNorm.bias", Norm),
            ("bert.pooler.dense.weight", Pooler),
            ("cls.predictions.transform.dense.weight", LmHeadTransform),
            ("cls.predictions.transform.LayerNorm.weight", Norm),
            ("cls.predictions.bias", LmHead),
            ("cls.predictions.decoder.weight", LmHead),
            ("cls.predictions.decoder.bias", LmHead),
        ],
    );
    check_hf(
        "roberta",
        &[
            ("roberta.embeddings.word_embeddings.weight", TokenEmbedding),
            (
                "roberta.encoder.layer.0.attention.self.key.weight",
                Attention,
            ),
            ("lm_head.dense.weight", LmHeadTransform),
            ("lm_head.layer_norm.weight", Norm),
            ("lm_head.decoder.weight", LmHead),
            ("lm_head.bias", LmHead),
        ],
    );
}

#[test]
fn distilbert_and_modernbert() {
    check_hf(
        "distilbert",
        &[
            (
                "distilbert.transformer.layer.0.attention.q_lin.weight",
                Attention,
            ),
            ("distilbert.transformer.layer.0.sa_layer_norm.weight", Norm),
            ("distilbert.transformer.layer.0.ffn.lin1.weight", Ffn),
            (
                "distilbert.transformer.layer.0.output_layer_norm.bias",
                Norm,
            ),
            ("vocab_transform.weight", LmHeadTransform),
            ("vocab_layer_norm.weight", Norm),
            ("vocab_projector.weight", LmHead),
            ("vocab_projector.bias", LmHead),
        ],
    );
    check_hf(
        "modernbert",
        &[
            ("model.embeddings.tok_embeddings.weight", TokenEmbedding),
            ("model.embeddings.norm.weight", Norm),
            ("model.layers.0.attn.Wqkv.weight", Attention),
            ("model.layers.0.attn.Wo.weight", Attention),
            ("model.layers.1.attn_norm.weight", Norm),
            ("model.layers.0.mlp_norm.weight", Norm),
            ("model.layers.0.mlp.Wi.weight", Ffn),
            ("model.layers.0.mlp.Wo.weight", Ffn),
            ("model.final_norm.weight", Norm),
            ("head.dense.weight", LmHeadTransform),
            ("head.norm.weight", Norm),
            ("decoder.weight", LmHead),
            ("decoder.bias", LmHead),
        ],
    );
}

#[test]
fn t5_and_bart() {
    check_hf(
        "t5",
        &[
            ("shared.weight", TokenEmbedding),
            ("encoder.embed_tokens.weight", TokenEmbedding),
            ("decoder.embed_tokens.weight", TokenEmbedding),
            ("encoder.block.0.layer.0.SelfAttention.q.weight", Attention),
            ("encoder.block.0.layer.0.SelfAttention.o.weight", Attention),
            (
                "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
                PositionEmbedding,
            ),
            ("encoder.block.0.layer.0.layer_norm.weight", Norm),
            ("encoder.block.0.layer.1.DenseReluDense.wi.weight", Ffn),
            ("encoder.block.0.layer.1.DenseReluDense.wi_0.weight", Ffn),
            ("encoder.block.0.layer.1.DenseReluDense.wi_1.weight", Ffn),
            (
                "decoder.block.5.layer.1.EncDecAttention.k.weight",
                Attention,
            ),
            ("decoder.block.5.layer.2.DenseReluDense.wo.weight", Ffn),
            ("decoder.final_layer_norm.weight", Norm),
            ("lm_head.weight", LmHead),
        ],
    );
    check_hf(
        "bart",
        &[
            ("model.shared.weight", TokenEmbedding),
            ("model.encoder.embed_tokens.weight", TokenEmbedding),
            ("model.encoder.embed_positions.weight", PositionEmbedding),
            ("model.encoder.layernorm_embedding.weight", Norm),
            ("model.encoder.layers.0.self_attn.k_proj.bias", Attention),
            (
                "model.decoder.layers.0.encoder_attn.q_proj.weight",
                Attention,
            ),
            (
                "model.decoder.layers.0.encoder_attn_layer_norm.weight",
                Norm,
            ),
            ("model.decoder.layers.0.fc1.weight", Ffn),
            ("model.decoder.layers.0.final_layer_norm.bias", Norm),
            ("final_logits_bias", Buffer),
            ("lm_head.weight", LmHead),
            ("model.encoder.embed_positions._float_tensor", Buffer),
        ],
    );
}

#[test]
fn unknown_names() {
    check_hf(
        "none",
        &[
            ("", Unknown),
            ("weight", Unknown),
            ("model.layers.0.conv1d.weight", Unknown),
            // A vision tower is Vision now (issue 9); a module no rule knows stays Unknown.
            ("model.frobnicator.0.weight", Unknown),
        ],
    );
}

#[test]
fn gguf_llm_tensor_names() {
    check_gguf(&[
        ("token_embd.weight", TokenEmbedding),
        ("position_embd.weight", PositionEmbedding),
        ("token_types.weight", TokenTypeEmbedding),
        ("token_embd_norm.weight", Norm),
        ("token_embd_norm.bias", Norm),
        ("blk.0.attn_q.weight", Attention),
        ("blk.0.attn_k.bias", Attention),
        ("blk.0.attn_v.weight", Attention),
        ("blk.12.attn_qkv.weight", Attention),
        ("blk.0.attn_output.weight", Attention),
        ("blk.0.attn_q_a.weight", Attention),
        ("blk.0.attn_q_a_norm.weight", Attention),
        ("blk.0.attn_q_b.weight", Attention),
        ("blk.0.attn_kv_a_mqa.weight", Attention),
        ("blk.0.attn_kv_a_norm.weight", Attention),
        ("blk.0.attn_kv_b.weight", Attention),
        ("blk.0.attn_k_b.weight", Attention),
        ("blk.0.attn_v_b.weight", Attention),
        ("blk.0.attn_q_norm.weight", Attention),
        ("blk.0.attn_k_norm.weight", Attention),
        ("blk.0.attn_sinks.weight", Attention),
        ("blk.0.attn_sinks", Attention),
        ("blk.0.attn_norm.weight", Norm),
        ("blk.0.attn_norm_2.weight", Norm),
        ("blk.0.attn_output_norm.bias", Norm),
        ("blk.0.ffn_norm.weight", Norm),
        ("blk.0.post_attention_norm.weight", Norm),
        ("blk.0.post_ffw_norm.weight", Norm),
        ("blk.0.layer_output_norm.weight", Norm),
        ("blk.0.ffn_gate.weight", Ffn),
        ("blk.0.ffn_up.bias", Ffn),
        ("blk.0.ffn_down.weight", Ffn),
        ("blk.3.ffn_gate_inp.weight", MoeRouter),
        ("blk.3.ffn_gate_inp.bias", MoeRouter),
        ("blk.3.exp_probs_b.bias", Buffer),
        ("blk.3.ffn_gate_exps.weight", MoeExperts),
        ("blk.3.ffn_up_exps.weight", MoeExperts),
        ("blk.3.ffn_down_exps.weight", MoeExperts),
        ("blk.3.ffn_gate_up_exps.weight", MoeExperts),
        ("blk.3.ffn_down_exps.bias", MoeExperts),
        ("blk.3.ffn_gate_shexp.weight", MoeSharedExperts),
        ("blk.3.ffn_up_shexp.weight", MoeSharedExperts),
        ("blk.3.ffn_down_shexp.weight", MoeSharedExperts),
        ("blk.3.ffn_gate_inp_shexp.weight", MoeSharedExperts),
        ("output_norm.weight", Norm),
        ("output_norm.bias", Norm),
        ("output.weight", LmHead),
        ("output.bias", LmHead),
        ("cls.weight", LmHeadTransform),
        ("cls.output.weight", LmHead),
        ("cls.norm.weight", Norm),
        ("rope_freqs.weight", Buffer),
        ("rope_factors_long.weight", Buffer),
        ("blk.0.attn_rot_embd", Buffer),
        ("enc.blk.0.attn_q.weight", Attention),
        ("enc.blk.0.attn_rel_b.weight", PositionEmbedding),
        ("dec.blk.1.cross_attn_o.weight", Attention),
        ("dec.blk.1.cross_attn_norm.weight", Norm),
        ("enc.output_norm.weight", Norm),
        ("dec.output_norm.weight", Norm),
        ("dec.blk.0.ffn_gate.weight", Ffn),
        ("v.blk.0.attn_q.weight", Unknown),
        ("blk.0.nextn.eh_proj.weight", Unknown),
        ("blk.0.ssm_in.weight", Unknown),
        ("blk.x.attn_q.weight", Unknown),
        ("", Unknown),
    ]);
}

#[test]
fn hf_and_gguf_agree_on_a_llama() {
    // The same model under both naming schemes.
    let pairs = [
        ("model.embed_tokens.weight", "token_embd.weight"),
        (
            "model.layers.0.self_attn.q_proj.weight",
            "blk.0.attn_q.weight",
        ),
        (
            "model.layers.0.input_layernorm.weight",
            "blk.0.attn_norm.weight",
        ),
        ("model.layers.0.mlp.up_proj.weight", "blk.0.ffn_up.weight"),
        ("model.norm.weight", "output_norm.weight"),
        ("lm_head.weight", "output.weight"),
        (
            "model.layers.3.mlp.gate.e_score_correction_bias",
            "blk.3.exp_probs_b.bias",
        ),
    ];
    for (hf, gguf) in pairs {
        assert_eq!(category_of_hf(hf), category_of_gguf(gguf), "{hf} / {gguf}");
    }
}

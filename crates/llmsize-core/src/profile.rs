//! How a family's modeling code computes a layer, as far as autograd sees it.
//!
//! Parameter counts need only shapes; what one training step holds for backward needs more:
//! which ops the Hugging Face code runs (an RMSNorm that upcasts to fp32 and saves the copy,
//! a `gelu_new` written in Python that saves five tensors, a fused `qkv` output that a view
//! keeps whole), where dropout is active, how many rotary dimensions a head has. The adapter
//! that reads a model type fills in a [`TrainingProfile`] from its `config.json`; the
//! training planner's activation, LoRA and FLOP arithmetic (`llmsize-train`) reads the shapes
//! from the [`crate::ModelSpec`] and these switches from the profile, so a new model of a
//! known family needs no code. The profile is data a spec carries, so it lives here, beside
//! the spec, and the planner depends on core, never the reverse.

use crate::layout::TensorKind;

/// The layer code of a family, as `modeling_*.py` writes it (the ground truth's
/// `../shared/truth/train/README.md` derives each from measurements).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LayerStyle {
    /// The RMSNorm decoders: Llama, Mistral, Qwen2, Qwen3 (with q/k norms), Mixtral and
    /// Qwen3-MoE (with experts), and with the profile's switches Gemma's norms
    /// ([`NormCode`]), Gemma 2's and `OLMo` 2's placements ([`BlockNorms`]), soft-capping:
    /// separate q/k/v or a fused `qkv_proj` (the layout's `fused_qkv`: Phi-3's, its whole
    /// output kept by the `v` view), a gated MLP (or one `gate_up_proj`, the type's module
    /// names say) or a plain one.
    Llama,
    /// GPT-2: `LayerNorm`, `Conv1D` fused `c_attn`, `gelu_new` in Python, dropouts.
    Gpt2,
    /// GPT-NeoX / Pythia: parallel residual, fused `query_key_value`, partial rotary.
    GptNeox,
    /// OPT: `LayerNorm`, `ReLU` MLP, learned positions with `[b, s]` position ids, dropouts.
    Opt,
    /// BLOOM: `ALiBi`, embedding `LayerNorm`, fused `query_key_value`, eager attention only.
    Bloom,
    /// Falcon: parallel attention and MLP from one `LayerNorm`, multi-query.
    Falcon,
    /// `StarCoder2`: `LayerNorm`, plain GELU MLP with biases, dropouts, sliding window.
    Starcoder2,
    /// BERT as a decoder (`BertLMHeadModel`): post-`LayerNorm` layers (`LayerNorm(x +
    /// dropout(dense(·)))` after attention and after the MLP), separate q/k/v, learned
    /// absolute and token-type embeddings summed into an embedding `LayerNorm`, an MLM head
    /// transform (`dense`, GELU, `LayerNorm`) before the decoder; the softmax of its eager
    /// attention stays in the weights' dtype.
    Bert,
}

impl LayerStyle {
    /// The name shown in explanations.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            LayerStyle::Llama => "llama",
            LayerStyle::Gpt2 => "gpt2",
            LayerStyle::GptNeox => "gpt_neox",
            LayerStyle::Opt => "opt",
            LayerStyle::Bloom => "bloom",
            LayerStyle::Falcon => "falcon",
            LayerStyle::Starcoder2 => "starcoder2",
            LayerStyle::Bert => "bert",
        }
    }
}

/// Where learned positions' int64 ids come from: what the step makes and saves for the
/// table's backward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PositionIds {
    /// Sliced from a registered `[1, max]` buffer (BERT's `position_ids`): nothing made.
    #[default]
    Buffer,
    /// `arange(s)` (plus BART's offset 2), `[1, s]`: `modeling_bart.py`'s
    /// `position_ids.unsqueeze(0) + offset`.
    Arange,
    /// `arange(s).expand(b, -1)` plus the offset, `[b, s]` (MVP's, `TrOCR`'s learned
    /// positions).
    ArangeBatch,
    /// Made from the input ids (RoBERTa's `create_position_ids_from_input_ids`, `[b, s]`; the
    /// token types gathered by them, `[b, s]`).
    FromInputIds,
}

/// How a MoE router turns its logits into each token's top-k weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Routing {
    /// A `softmax` over every expert (fp32, saved), then the top k (Mixtral, Qwen3-MoE,
    /// OLMoE).
    #[default]
    SoftmaxThenTopK,
    /// The top k of the logits, then a `softmax` over those k (Granite-MoE, Aria): no softmax
    /// over every expert; the k-way softmax's output is saved, in fp32 or (Aria's bf16
    /// logits) in the dtype.
    TopKThenSoftmax {
        /// The router's logits stay in the model's dtype.
        logits_in_dtype: bool,
    },
    /// DeepSeek-V3's router (GLM-4-MoE, Solar Open, EXAONE-MoE): sigmoid scores, the experts
    /// chosen within the best `topk_group` of `n_group` groups (each group scored by its top
    /// two): int64 group indices and a bool mask over the experts are saved.
    Grouped {
        /// `n_group`.
        groups: u64,
        /// `topk_group`.
        top_groups: u64,
    },
}

/// Where an `MoE` block's shared expert runs, read from the block's `forward`: it decides the
/// block's last saved tensor, so what a checkpoint's recompute does not re-run (the
/// non-reentrant checkpoint stops at the last pack, `torch/utils/checkpoint.py`
/// `_checkpoint_hook`'s early stop).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SharedExpertOrder {
    /// Not read from the type's code: its step's recompute and backward are estimates.
    #[default]
    Unread,
    /// Before the routed experts, or gated (Qwen2-MoE's `sigmoid(gate(x)) * shared(x)`,
    /// ERNIE 4.5's `shared_output` first): a product that saves tensors (the routed
    /// experts' weighting, the gate's) comes last, so the whole block is re-run.
    Before,
    /// After the routed experts, added plainly (DeepSeek-V3's `hidden + shared_experts(
    /// residuals)`, Aria's, Granite-MoE-Shared's `shared_mlp`): the shared down projection's
    /// pack is the block's last, so its matmul is not re-run.
    After,
}

/// Where a family's rotary cos/sin tables live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RopeTables {
    /// Computed once and shared by every layer.
    #[default]
    Shared,
    /// `apply_rotary_pos_emb` interleaves them (`cos[..., :r/2].repeat_interleave(2)`, GLM,
    /// ERNIE 4.5): every layer whose q or k needs a gradient saves its own copies; the
    /// model's tables are kept only by a checkpoint's recompute closure.
    Interleaved,
}

/// How a family's `RMSNorm` computes: what it saves, in which dtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum NormCode {
    /// `w * (x.float() * rsqrt(mean(x²) + ε)).to(dtype)` (Llama): the normalized tensor the
    /// weight's gradient reads is in the dtype.
    #[default]
    Llama,
    /// `(x.float() * rsqrt(…)) * (1 + w.float())`, then `.to(dtype)` (Gemma's): the fp32
    /// normalized tensor and the fp32 `1 + w` are saved.
    Gemma,
    /// `(w.float() * x_normed).to(dtype)` (Helium's): saved as Gemma's (the fp32 normalized
    /// tensor, the weight's fp32 copy), without the `1 +`.
    Fp32Weight,
    /// `(w * (x.float() * rsqrt(…))).to(dtype)` (`OLMo` 2's): the weight multiplies in fp32.
    Olmo,
}

impl NormCode {
    /// The weight's gradient reads an fp32 normalized tensor (every code but Llama's).
    #[must_use]
    pub fn fp32_normalized(self) -> bool {
        self != NormCode::Llama
    }
}

/// Where a decoder layer's norms sit around its two blocks (attention, MLP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BlockNorms {
    /// `x + f(norm(x))`: a norm before each block.
    #[default]
    Pre,
    /// `x + norm(f(norm(x)))`: before and after each block (Gemma 2 and 3, GLM-4).
    Sandwich,
    /// `x + norm(f(x))`: after each block only, the block reading the residual stream
    /// itself (`OLMo` 2).
    Output,
}

impl BlockNorms {
    /// A norm before each block.
    #[must_use]
    pub fn before(self) -> bool {
        self != BlockNorms::Output
    }

    /// A norm on each block's output: the block's last op saves a tensor, so a
    /// checkpoint's recompute re-runs the whole layer.
    #[must_use]
    pub fn after(self) -> bool {
        self != BlockNorms::Pre
    }
}

/// What the training arithmetic needs beyond shapes.
#[allow(
    clippy::struct_excessive_bools,
    reason = "each is a switch of the modeling code"
)]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TrainingProfile {
    /// The layer code.
    pub style: LayerStyle,
    /// Dropout on attention probabilities is active in `train()` (`attn_pdrop`,
    /// `attention_dropout` > 0): CPU SDPA then falls back to its math path.
    pub attention_dropout: bool,
    /// Dropout on the residual branches (`resid_pdrop`, `residual_dropout`, `dropout` > 0).
    pub hidden_dropout: bool,
    /// Dropout on the embeddings (`embd_pdrop`, `embedding_dropout` > 0).
    pub embedding_dropout: bool,
    /// Rotary dimensions per head (`head_dim`, or `head_dim · rotary_pct`); `None` without
    /// rotary embeddings.
    pub rotary_dims: Option<u64>,
    /// The MoE router's top-k weights are kept in the model's dtype (Qwen3-MoE), not fp32.
    pub routing_weights_in_dtype: bool,
    /// The top-k routing weights are renormalised to sum to 1 (Mixtral always;
    /// `norm_topk_prob` of Qwen3-MoE, default false): the division saves the weights and
    /// their sum for backward.
    pub topk_renormalized: bool,
    /// The order of the router's softmax and top-k.
    pub routing: Routing,
    /// The token embedding's output is multiplied by a Python scalar before layer 0
    /// (Granite's `embedding_multiplier`): with a frozen embedding under checkpointing, the
    /// output becomes a leaf that the multiply's backward holds.
    pub scaled_embedding_output: bool,
    /// Where the rotary tables live.
    pub rope_tables: RopeTables,
    /// The rotary tables are fp32 (`OLMo` 2's shared ones; ERNIE 4.5 keeps its interleaved
    /// copies "in full precision"), not in the dtype.
    pub rotary_fp32: bool,
    /// The `RMSNorm`s' code.
    pub norm: NormCode,
    /// Where the layer's norms sit.
    pub block_norms: BlockNorms,
    /// The attention scores are soft-capped (`tanh(scores / cap) · cap`,
    /// `attn_logit_softcapping` set: Gemma 2, `VaultGemma`), which `tanh` saves.
    pub attn_softcap: bool,
    /// The logits are soft-capped (`final_logit_softcapping` set).
    pub logit_softcap: bool,
    /// A norm inside each block, before its last `Linear` (`BitNet`'s `attn_sub_norm` on the
    /// attention output before `o_proj`, `ffn_sub_norm` on the gated product before
    /// `down_proj`): the layout's third and fourth norms.
    pub sub_norms: bool,
    /// The token embeddings are multiplied by `√d` as a tensor in the dtype (Gemma's
    /// `normalizer`, Gemma 3's `Gemma3TextScaledWordEmbedding`): the multiply's gradient is
    /// one more `[T, d]` in backward.
    pub embedding_normalizer: bool,
    /// Shared tables computed per layer type (`OLMo` 3: one rotary per entry kind of
    /// `layer_types`), 1 for most families.
    pub rotary_tables: u64,
    /// q is multiplied by a position-dependent scale (`get_llama_4_attn_scale`, Ministral 3):
    /// the multiply saves the `[1, 1, s, 1]` scale in the dtype.
    pub q_position_scale: bool,
    /// `apply_rotary_pos_emb` ends with `cat([q_embed, q_pass])` (GLM-4-MoE, MiniMax-M2):
    /// q comes out laid out `[b, H, s, hd]`, so SDPA's output reaches `o_proj` through a
    /// contiguous copy.
    pub rope_concatenated: bool,
    /// Where the `MoE` block's shared expert runs ([`SharedExpertOrder::Unread`] for a type
    /// whose block was not read, and irrelevant without a shared expert).
    pub shared_expert: SharedExpertOrder,
    /// GPT-NeoX's `use_parallel_residual` (default true): `x + attn(ln1(x)) + mlp(ln2(x))`.
    pub parallel_residual: bool,
    /// Where the learned positions' ids come from (BERT's and BART's families; the other
    /// families' own code says it).
    pub position_ids: PositionIds,
    /// Each block ends in its `LayerNorm`, `LN(x + dropout(f(x)))` (BERT; BART's, Marian's
    /// post-LN decoders), not `x + f(LN(x))`.
    pub post_norm: bool,
    /// The self-attention sees every position (BERT without `is_decoder`): no causal mask.
    pub bidirectional: bool,
    /// The loss is `CrossEntropyLoss()(logits.view(-1, V), labels.view(-1))` on the logits in
    /// the model's dtype with the labels unshifted (the encoder-decoders' `…ForCausalLM`), not
    /// transformers' `ForCausalLMLoss` (fp32 logits, shifted labels).
    pub loss_in_dtype: bool,
    /// Dropout between the MLP's activation and its down projection (`activation_dropout`
    /// > 0).
    pub activation_dropout: bool,
    /// The class has no SDPA attention in transformers 5.24 (asking for it raises: BLOOM,
    /// MVP, `TrOCR`): a step is counted with its eager attention, and says so.
    pub eager_only: bool,
    /// The MLP's output joins the residual without the block dropout that follows attention
    /// (XLM-RoBERTa-XL's `XLMRobertaXLOutput`: `dense(x) + input`).
    pub mlp_output_undropped: bool,
    /// The model's forward builds an all-ones fp32 attention mask `[b, s]` when none is given
    /// (BART's family, Megatron-BERT), and keeps it while the layers run: eager attention then
    /// always gets a `[b, 1, s, s]` mask, bidirectional or not.
    pub ones_attention_mask: bool,
    /// The token type ids are made with `torch.zeros(input_shape)` (`[b, s]`, Megatron-BERT),
    /// not gathered from a `[1, max]` buffer (BERT's).
    pub token_types_zeros: bool,
    /// The eager attention clamps its masked scores (`torch.max(scores + mask, finfo.min)`,
    /// XGLM's): `maximum` saves the masked scores in the dtype and its fp32 scalar.
    pub scores_clamped: bool,
    /// The layers are called with the position ids (`BioGPT`'s `position_ids=`), which a
    /// checkpoint's recompute closure then keeps; BERT's and BART's add the positions to the
    /// embeddings only.
    pub layers_take_position_ids: bool,
    /// The decoder's forward keeps the token embeddings and the position embeddings as locals
    /// while its layers run (BART's family).
    pub decoder_locals: bool,
    /// A `LayerNorm` on the token embeddings before the positions are added
    /// (Blenderbot-Small's `layernorm_embedding(inputs_embeds) + positions`), not on their sum.
    pub embedding_norm_before_positions: bool,
    /// The backward's op rules (`llmsize-train`'s `backward`) were traced on this type's code:
    /// its backward peak is derived, not estimated.
    pub backward_traced: bool,
    /// The sliding window is applied (`use_sliding_window` is not false).
    pub sliding_window_applies: bool,
    /// The module names the activation walk sees: the type's own
    /// ([`crate::facts::TypeFacts::modules`], copied by the adapter), or llama's where a
    /// type's layers are counted as llama's (an estimate, `llmsize-train`'s `activations`).
    pub modules: &'static [(TensorKind, &'static str)],
    /// peft's default targets as the walk sees them: the type's own
    /// ([`crate::facts::TypeFacts::peft_default`]), or none for a layer counted as llama's.
    pub peft_default: Option<&'static [&'static str]>,
}

impl TrainingProfile {
    /// A profile of `style` with every switch of the modeling code off: no dropout, no
    /// rotary, fp32 routing weights renormalised after a softmax over every expert, shared
    /// rotary tables, windows applied. Families name only what differs
    /// (`TrainingProfile { rotary_dims: r, ..TrainingProfile::plain(style, modules) }`), so
    /// a new switch is defaulted here once.
    #[must_use]
    pub const fn plain(style: LayerStyle, modules: &'static [(TensorKind, &'static str)]) -> Self {
        TrainingProfile {
            style,
            attention_dropout: false,
            hidden_dropout: false,
            embedding_dropout: false,
            rotary_dims: None,
            routing_weights_in_dtype: false,
            topk_renormalized: true,
            routing: Routing::SoftmaxThenTopK,
            scaled_embedding_output: false,
            rope_tables: RopeTables::Shared,
            rotary_tables: 1,
            rotary_fp32: false,
            norm: NormCode::Llama,
            block_norms: BlockNorms::Pre,
            attn_softcap: false,
            logit_softcap: false,
            embedding_normalizer: false,
            sub_norms: false,
            q_position_scale: false,
            rope_concatenated: false,
            shared_expert: SharedExpertOrder::Unread,
            parallel_residual: false,
            position_ids: PositionIds::Buffer,
            post_norm: false,
            bidirectional: false,
            loss_in_dtype: false,
            activation_dropout: false,
            embedding_norm_before_positions: false,
            eager_only: false,
            mlp_output_undropped: false,
            ones_attention_mask: false,
            decoder_locals: false,
            layers_take_position_ids: false,
            scores_clamped: false,
            token_types_zeros: false,
            backward_traced: false,
            sliding_window_applies: true,
            modules,
            peft_default: None,
        }
    }
}

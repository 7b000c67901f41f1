//! Where a parameter belongs: the one category vocabulary of llmsize.
//!
//! The parameter categories are the ground truth's (`shared/truth/README.md`) and the
//! public JSON contract of `llmsize params --json`; the weight readers add two more for what
//! a checkpoint holds that is not a parameter ([`Category::Buffer`]) or that no rule
//! recognises ([`Category::Unknown`]). Counting, the tensor layout, the tensor-name rules of
//! the weight readers and audits all use this one enum.

/// Where a tensor belongs in a parameter count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Category {
    /// Input token embedding table (`wte`, `embed_tokens`, `word_embeddings`, `shared`).
    TokenEmbedding,
    /// Learned absolute positions (`wpe`, `embed_positions`) and T5's relative-position bias.
    PositionEmbedding,
    /// BERT's segment (token type) table.
    TokenTypeEmbedding,
    /// Projections between embedding and hidden size (OPT-350m `project_in`/`project_out`).
    EmbeddingProjection,
    /// Attention: q/k/v/o, fused qkv, their biases, q/k norms, MLA down/up projections and
    /// their norms, attention sinks.
    Attention,
    /// Dense MLP.
    Ffn,
    /// MoE router (gate) and its bias.
    MoeRouter,
    /// Routed experts.
    MoeExperts,
    /// Always-on shared experts and their gate.
    MoeSharedExperts,
    /// Every other norm: per layer, final, embedding and head norms.
    Norm,
    /// Output projection to the vocabulary and any output bias.
    LmHead,
    /// MLM head transform before the decoder (BERT `cls.predictions.transform.dense`).
    LmHeadTransform,
    /// BERT-style pooler.
    Pooler,
    /// State-space and linear-attention mixers (Mamba, Mamba-2, gated `DeltaNet`, RWKV
    /// time-mix, RG-LRU, LFM2's short convolutions): everything inside the mixer, its own
    /// norms, convolution, `A_log`, `D` and `dt` included.
    Ssm,
    /// Vision towers and multimodal projectors (and other non-text, non-audio encoders).
    Vision,
    /// Audio towers and their projectors.
    Audio,
    /// Residual-stream machinery that is neither attention nor FFN: hyper-connections,
    /// Gemma-3n's altup/laurel and per-layer inputs, learned residual scales and gates.
    LayerExtras,
    /// Parameters of none of the other categories: a vision-language-action model's action
    /// and state projections (PI0's `action_in_proj`, `state_proj`, `action_time_mlp_*`,
    /// `action_out_proj`), which the ground truth's categorizer leaves in its `other`.
    Other,
    /// Not a parameter, though checkpoints carry it: `position_ids`, rotary `inv_freq`,
    /// GPT-2's causal-mask `attn.bias`, DeepSeek's `e_score_correction_bias`, BART's
    /// `final_logits_bias`, FP8 `weight_scale_inv`, llama.cpp's `rope_freqs`.
    Buffer,
    /// A name these rules do not recognise.
    Unknown,
}

impl Category {
    /// The 18 parameter categories, in the ground truth's (and the JSON contract's) order:
    /// the 13 of `shared/truth/README.md`, then the 4 the coverage truth adds, then `other`.
    pub const PARAMETERS: [Category; 18] = [
        Category::TokenEmbedding,
        Category::PositionEmbedding,
        Category::TokenTypeEmbedding,
        Category::EmbeddingProjection,
        Category::Attention,
        Category::Ffn,
        Category::MoeRouter,
        Category::MoeExperts,
        Category::MoeSharedExperts,
        Category::Norm,
        Category::LmHead,
        Category::LmHeadTransform,
        Category::Pooler,
        Category::Ssm,
        Category::Vision,
        Category::Audio,
        Category::LayerExtras,
        Category::Other,
    ];

    /// The category's name as in the ground truth, e.g. `moe_shared_experts`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Category::TokenEmbedding => "token_embedding",
            Category::PositionEmbedding => "position_embedding",
            Category::TokenTypeEmbedding => "token_type_embedding",
            Category::EmbeddingProjection => "embedding_projection",
            Category::Attention => "attention",
            Category::Ffn => "ffn",
            Category::MoeRouter => "moe_router",
            Category::MoeExperts => "moe_experts",
            Category::MoeSharedExperts => "moe_shared_experts",
            Category::Norm => "norm",
            Category::LmHead => "lm_head",
            Category::LmHeadTransform => "lm_head_transform",
            Category::Pooler => "pooler",
            Category::Ssm => "ssm",
            Category::Vision => "vision",
            Category::Audio => "audio",
            Category::LayerExtras => "layer_extras",
            Category::Other => "other",
            Category::Buffer => "buffer",
            Category::Unknown => "unknown",
        }
    }

    /// The category called `name` (one of the [`Category::as_str`] names).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Category> {
        Category::PARAMETERS
            .into_iter()
            .chain([Category::Buffer, Category::Unknown])
            .find(|c| c.as_str() == name)
    }

    /// The parameter categories (the name counting uses).
    pub const ALL: [Category; 18] = Category::PARAMETERS;

    /// Parameters of a non-text modality (vision or audio towers and their projectors),
    /// which a text token never multiplies by.
    #[must_use]
    pub fn is_modality(self) -> bool {
        matches!(self, Category::Vision | Category::Audio)
    }

    /// Parameters of the input tables, which "non-embedding" counts leave out.
    #[must_use]
    pub fn is_input_embedding(self) -> bool {
        matches!(
            self,
            Category::TokenEmbedding | Category::PositionEmbedding | Category::TokenTypeEmbedding
        )
    }

    /// True for the parameter categories; false for [`Category::Buffer`] and
    /// [`Category::Unknown`].
    #[must_use]
    pub fn is_parameter(self) -> bool {
        !matches!(self, Category::Buffer | Category::Unknown)
    }
}

impl std::fmt::Display for Category {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

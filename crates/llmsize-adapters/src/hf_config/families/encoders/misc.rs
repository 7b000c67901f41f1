//! Language models of their own kind: XLM (`XLMWithLMHeadModel`), `XLNet` (`XLNetLMHeadModel`)
//! and `ProphetNet`'s decoder (`ProphetNetForCausalLM`).

use std::collections::BTreeMap;

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{
    Attention, Extra, Ffn, Layer, Layers, ModelSpec, Norm, OutputHead, PositionEmbedding,
    RecurrentState, Stack, StackRole, Table,
};
use serde_json::Value;

use super::bert::{cross_attention_extras, norm_extras};
use crate::error::ConfigError;
use crate::hf_config::decoder::{mha, mlp};
use crate::hf_config::family::Family;
use crate::hf_config::raw::RawConfig;
use crate::hf_config::{HeadChoice, architecture};

/// A spec with one stack and a head, the parts every reader here fills.
struct One {
    model_type: String,
    architecture: String,
    hidden: u64,
    vocab: u64,
    stack: Stack,
    tied: bool,
    biases: u64,
    extras: Vec<Extra>,
}

impl One {
    fn into_spec(self) -> ModelSpec {
        ModelSpec {
            name: String::new(),
            model_type: self.model_type,
            architecture: self.architecture,
            hidden_size: self.hidden,
            vocab_size: self.vocab,
            context_length: None,
            token_embedding: Some(Table {
                rows: self.vocab,
                dim: self.hidden,
            }),
            extra_token_tables: 0,
            embedding_projections: Vec::new(),
            stacks: vec![self.stack],
            head: OutputHead::Lm {
                tied: self.tied,
                biases: self.biases,
                transform: None,
            },
            pooler: None,
            assumptions: Vec::new(),
            warnings: Vec::new(),
            symbol_sources: BTreeMap::new(),
            extras: self.extras,
            estimate: None,
            image_tokens: None,
            quantization: None,
            training: None,
            facts: llmsize_core::facts::TypeFacts::NONE,
        }
    }
}

/// The class must be the one read, else an error naming it.
fn only_class(
    raw: &RawConfig<'_>,
    family: &Family,
    head: HeadChoice,
) -> Result<String, ConfigError> {
    let arch = architecture(raw, family.architecture);
    if arch == family.architecture || head == HeadChoice::Lm {
        return Ok(family.architecture.to_owned());
    }
    let found = raw.value("architectures").cloned().unwrap_or(Value::Null);
    Err(raw.invalid(
        "architectures",
        &found,
        &format!(
            "`{}` (llmsize reads `{}` only as this class)",
            family.architecture, family.model_type
        ),
    ))
}

/// XLM (`modeling_xlm.py`, `XLMWithLMHeadModel`): word and position tables (and a language
/// table when `n_langs > 1` and `use_lang_emb`), `layer_norm_emb`, post-LN layers with biased
/// `q/k/v/out_lin` and a `4·emb_dim` FFN, and `pred_layer.proj` tied to the word table with
/// a bias. The model returns no cache (its `cache` argument is only filled when the caller
/// passes one), so nothing is counted for it. `asm` (adaptive softmax) is not read.
pub(super) fn xlm(
    raw: &mut RawConfig<'_>,
    family: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let architecture = only_class(raw, family, head)?;
    let reason = "absent; `XLMConfig` default";
    if raw.flag_or("asm", false, reason)? {
        return Err(raw.invalid(
            "asm",
            &Value::Bool(true),
            "`false` (llmsize does not read XLM's adaptive-softmax head)",
        ));
    }
    if !raw.flag_or("is_encoder", true, reason)? {
        return Err(raw.invalid(
            "is_encoder",
            &Value::Bool(false),
            "`true` (transformers builds XLM only as an encoder)",
        ));
    }
    let hidden = raw.size_or(&["emb_dim", "hidden_size"], Sym::Hidden, 2048, reason)?;
    let layers = raw.size_or(&["n_layers", "num_hidden_layers"], Sym::Layers, 12, reason)?;
    let heads = raw.size_or(&["n_heads", "num_attention_heads"], Sym::Heads, 16, reason)?;
    let vocab = raw.size_or(&["vocab_size", "n_words"], Sym::Vocab, 30145, reason)?;
    let positions = raw.size_or(&["max_position_embeddings"], Sym::Context, 512, reason)?;
    let langs = raw.size_or(&["n_langs"], Sym::Named("languages"), 1, reason)?;
    let lang_emb = raw.flag_or("use_lang_emb", true, reason)?;
    let tied = raw.flag_or("tie_word_embeddings", true, reason)?;
    let head_dim = raw.derived_head_dim(hidden, "emb_dim", heads, "n_heads")?;
    let inner = raw.mul(hidden, 4, "4 · emb_dim")?;
    let n = raw.layer_count("n_layers", layers)?;
    let mut extras = Vec::new();
    if langs > 1 && lang_emb {
        extras.push(Extra::table(
            "transformer.lang_embeddings.weight",
            "language table",
            Category::TokenEmbedding,
            Expr::sym(Sym::Named("languages"), langs),
            Expr::sym(Sym::Hidden, hidden),
        ));
    }
    let norm = Norm::layer_norm(hidden);
    let layer = Layer {
        attention: Attention::Standard(mha(hidden, heads, heads, head_dim, true)),
        cross_attention: None,
        ffn: Ffn::Dense(mlp(hidden, inner, false, true)),
        norms: vec![norm; 2],
        sliding_window: None,
        extras: Vec::new(),
        state: None,
    };
    Ok(One {
        model_type: family.model_type.to_owned(),
        architecture,
        hidden,
        vocab,
        stack: Stack {
            role: StackRole::Encoder,
            position: Some(PositionEmbedding::Learned {
                table: Table {
                    rows: positions,
                    dim: hidden,
                },
                offset: 0,
            }),
            token_type: None,
            embedding_norm: Some(norm),
            layers: Layers::repeat(layer, n as u64),
            final_norm: None,
        },
        tied,
        biases: 1,
        extras,
    }
    .into_spec())
}

/// `XLNet` (`modeling_xlnet.py`, `XLNetLMHeadModel`): a word table and `mask_emb` (`d`);
/// relative attention with `q/k/v/o/r` (`d × n_head × d_head`, no biases), the
/// `r_w/r_r/r_s` biases (`n_head × d_head` each) and `seg_embed` (`2 × n_head × d_head`), a
/// `LayerNorm` after attention and one in the FFN; `lm_loss` tied to the word table with a
/// bias. It keeps no keys and values: its cache is `mems`, each layer's hidden states of the
/// last `mem_len` tokens (of the first `reuse_len` when set), returned in inference when
/// `use_mems_eval`; counted once the prompt is at least that long.
pub(super) fn xlnet(
    raw: &mut RawConfig<'_>,
    family: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let architecture = only_class(raw, family, head)?;
    let reason = "absent; `XLNetConfig` default";
    let hidden = raw.size_or(&["d_model", "hidden_size"], Sym::Hidden, 1024, reason)?;
    let layers = raw.size_or(&["n_layer", "num_hidden_layers"], Sym::Layers, 24, reason)?;
    let heads = raw.size_or(&["n_head", "num_attention_heads"], Sym::Heads, 16, reason)?;
    let inner = raw.size_or(&["d_inner"], Sym::Ffn, 4096, reason)?;
    let vocab = raw.size_or(&["vocab_size"], Sym::Vocab, 32000, reason)?;
    let tied = raw.flag_or("tie_word_embeddings", true, reason)?;
    // `XLNetConfig` sets `d_head = d_model // n_head` (and rejects another `d_head`).
    let head_dim = raw.derived_head_dim(hidden, "d_model", heads, "n_head")?;
    let mems = raw.flag_or("use_mems_eval", true, reason)?;
    // An explicit `null` is no memory length (every token kept), unlike an absent key.
    let mem_len = if raw.value("mem_len").is_some() {
        raw.uint("mem_len")?
    } else if raw.has("mem_len") {
        None
    } else {
        raw.assume("mem_len", 512, reason);
        Some(512)
    };
    let reuse_len = raw.uint("reuse_len")?.filter(|n| *n > 0);
    let kept = match (mem_len.filter(|n| *n > 0), reuse_len) {
        (Some(m), Some(r)) => m.min(r),
        (Some(m), None) => m,
        (None, _) if !mems => 0,
        (None, _) => {
            let found = raw.value("mem_len").cloned().unwrap_or(Value::Null);
            return Err(raw.invalid(
                "mem_len",
                &found,
                "a positive number of tokens (without one XLNet keeps every token's hidden state, a cache llmsize does not model)",
            ));
        }
    };
    let n = raw.layer_count("n_layer", layers)?;
    let part = "relative attention";
    let heads_e = || Expr::sym(Sym::Heads, heads);
    let dh = || Expr::sym(Sym::HeadDim, head_dim);
    let mut extras = vec![Extra::linear(
        "rel_attn.r",
        part,
        Category::Attention,
        Expr::sym(Sym::Hidden, hidden),
        Expr::product(vec![heads_e(), dh()]),
    )];
    for name in [
        "rel_attn.r_r_bias",
        "rel_attn.r_s_bias",
        "rel_attn.r_w_bias",
    ] {
        extras.push(Extra::table(
            name,
            part,
            Category::Attention,
            heads_e(),
            dh(),
        ));
    }
    extras.push(Extra::table(
        "rel_attn.seg_embed",
        part,
        Category::Attention,
        Expr::Lit(2),
        Expr::product(vec![heads_e(), dh()]),
    ));
    let norm = Norm::layer_norm(hidden);
    let recurrent = if mems {
        raw.mul(kept, hidden, "mem_len · d_model")?
    } else {
        0
    };
    let layer = Layer {
        attention: Attention::Standard(mha(hidden, heads, heads, head_dim, false)),
        cross_attention: None,
        ffn: Ffn::Dense(mlp(hidden, inner, false, true)),
        norms: vec![norm; 2],
        sliding_window: None,
        extras,
        state: (recurrent > 0).then_some(RecurrentState {
            conv: 0,
            recurrent,
            recurrent_f32: false,
            conv_f32: false,
        }),
    };
    Ok(One {
        model_type: family.model_type.to_owned(),
        architecture,
        hidden,
        vocab,
        stack: Stack {
            role: StackRole::Encoder,
            position: None,
            token_type: None,
            embedding_norm: None,
            layers: Layers::repeat(layer, n as u64),
            final_norm: None,
        },
        tied,
        biases: 1,
        extras: vec![Extra::vector(
            "transformer.mask_emb",
            "mask embedding",
            Category::TokenEmbedding,
            Expr::sym(Sym::Hidden, hidden),
        )],
    }
    .into_spec())
}

/// `ProphetNet`'s decoder (`modeling_prophetnet.py`, `ProphetNetForCausalLM`): the word table
/// (shared with the decoder), `position_embeddings` (`max_position_embeddings × d`),
/// `ngram_embeddings` (`ngram × d`) and `embeddings_layer_norm`; layers with the n-gram
/// self-attention (biased `query/key/value/out_proj` and `relative_pos_embeddings`
/// `d → num_buckets · heads`), a cross-attention with its norm when `add_cross_attention`
/// (built, never run without an encoder), and a biased FFN; `lm_head` without a bias, tied
/// by default (untied, the wrapper keeps a third table: [`prophetnet_tables`]).
pub(super) fn prophetnet(
    raw: &mut RawConfig<'_>,
    family: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let architecture = only_class(raw, family, head)?;
    let reason = "absent; `ProphetNetConfig` default";
    let hidden = raw.size_or(&["hidden_size"], Sym::Hidden, 1024, reason)?;
    let layers = raw.size_or(&["num_decoder_layers"], Sym::Layers, 12, reason)?;
    let heads = raw.size_or(&["num_decoder_attention_heads"], Sym::Heads, 16, reason)?;
    let inner = raw.size_or(&["decoder_ffn_dim"], Sym::Ffn, 4096, reason)?;
    let vocab = raw.size_or(&["vocab_size"], Sym::Vocab, 30522, reason)?;
    let positions = raw.size_or(&["max_position_embeddings"], Sym::Context, 512, reason)?;
    let ngram = raw.size_or(&["ngram"], Sym::Named("ngram"), 2, reason)?;
    let buckets = raw.size_or(&["num_buckets"], Sym::Buckets, 32, reason)?;
    let cross = raw.flag_or("add_cross_attention", true, reason)?;
    let tied = raw.flag_or("tie_word_embeddings", true, reason)?;
    let head_dim =
        raw.derived_head_dim(hidden, "hidden_size", heads, "num_decoder_attention_heads")?;
    let n = raw.layer_count("num_decoder_layers", layers)?;
    let part = "n-gram self-attention";
    let rel = Expr::product(vec![
        Expr::sym(Sym::Buckets, buckets),
        Expr::sym(Sym::Heads, heads),
    ]);
    let mut extras = vec![
        Extra::linear(
            "self_attn.relative_pos_embeddings.weight",
            part,
            Category::Attention,
            Expr::sym(Sym::Hidden, hidden),
            rel.clone(),
        ),
        Extra::vector(
            "self_attn.relative_pos_embeddings.bias",
            part,
            Category::Attention,
            rel,
        ),
    ];
    if cross {
        // `ProphetNetDecoderLayer` runs it only `if encoder_hidden_states is not None`.
        extras.extend(
            cross_attention_extras(hidden, true, true, "cross_attn")
                .into_iter()
                .chain(norm_extras(hidden, "cross_attn_layer_norm"))
                .map(Extra::idle),
        );
    }
    let norm = Norm::layer_norm(hidden);
    let layer = Layer {
        attention: Attention::Standard(mha(hidden, heads, heads, head_dim, true)),
        cross_attention: None,
        ffn: Ffn::Dense(mlp(hidden, inner, false, true)),
        norms: vec![norm; 2],
        sliding_window: None,
        extras,
        state: None,
    };
    Ok(One {
        model_type: family.model_type.to_owned(),
        architecture,
        hidden,
        vocab,
        stack: Stack {
            role: StackRole::Decoder,
            position: Some(PositionEmbedding::Learned {
                table: Table {
                    rows: positions,
                    dim: hidden,
                },
                offset: 0,
            }),
            token_type: None,
            embedding_norm: Some(norm),
            layers: Layers::repeat(layer, n as u64),
            final_norm: None,
        },
        tied,
        biases: 0,
        extras: prophetnet_tables(tied, vocab, hidden, ngram),
    }
    .into_spec())
}

/// The tables beside the decoder's word table: `ngram_embeddings`, and, untied, the
/// `ProphetNetDecoderWrapper.word_embeddings` of its own (`ProphetNetForCausalLM` and the
/// wrapper tie `decoder.word_embeddings` and `lm_head` to it only when `tie_word_embeddings`).
fn prophetnet_tables(tied: bool, vocab: u64, hidden: u64, ngram: u64) -> Vec<Extra> {
    let mut tables = vec![Extra::table(
        "decoder.ngram_embeddings.weight",
        "n-gram table",
        Category::TokenEmbedding,
        Expr::sym(Sym::Named("ngram"), ngram),
        Expr::sym(Sym::Hidden, hidden),
    )];
    if !tied {
        tables.push(Extra::table(
            "prophetnet.word_embeddings.weight",
            "wrapper word table",
            Category::TokenEmbedding,
            Expr::sym(Sym::Vocab, vocab),
            Expr::sym(Sym::Hidden, hidden),
        ));
    }
    tables
}

/// A size of the audio sub-config: the first present key, else the class default.
fn audio_size(
    audio: Option<&serde_json::Map<String, Value>>,
    raw: &mut RawConfig<'_>,
    keys: &[&str],
    default: u64,
) -> Result<u64, ConfigError> {
    if let Some(a) = audio {
        // Read as the sub-config's keys: positive, bounded where they count layers, named by
        // their path.
        let sub = raw.nested("audio_config", a);
        for k in keys {
            if let Some(n) = sub.size_opt(k)? {
                return Ok(n);
            }
        }
    }
    let key = keys.first().copied().unwrap_or_default();
    raw.assume(
        &format!("audio_config.{key}"),
        default,
        "absent; `MossTranscribeDiarizeAudioConfig` default",
    );
    Ok(default)
}

/// MOSS Transcribe-Diarize (`modeling_moss_transcribe_diarize.py`): the Qwen3 text model of
/// `text_config`, a Whisper-style audio encoder (`conv1` mel → d and `conv2` d → d, kernel 3,
/// a learned table of `max_source_positions`, layers with q/v/o biased and k unbiased, a
/// biased FFN, two `LayerNorms` each, a final `layer_norm`) and the projector
/// (`linear_1` `d_audio · audio_merge_size → d`, `linear_2` `d → d`, biases with
/// `projector_bias`, a `LayerNorm`). The output head ties by the top-level
/// `tie_word_embeddings`.
pub(super) fn moss_transcribe_diarize(
    raw: &mut RawConfig<'_>,
    family: &Family,
    head: HeadChoice,
) -> Result<ModelSpec, ConfigError> {
    let architecture = only_class(raw, family, head)?;
    let reason = "absent; `MossTranscribeDiarizeConfig` default";
    let mut spec = crate::hf_config::family::read_sub_config(raw, "text_config", "qwen3", head)?;
    let tied = raw.flag_or("tie_word_embeddings", true, reason)?;
    let merge = raw.size_or(
        &["audio_merge_size"],
        Sym::Named("audio_merge_size"),
        4,
        reason,
    )?;
    let bias = raw.flag_or("projector_bias", true, reason)?;
    let audio = match raw.value("audio_config") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m),
        Some(v) => return Err(raw.invalid("audio_config", v, "an object")),
    };
    let d = audio_size(audio, raw, &["hidden_size", "d_model"], 1024)?;
    let layers = audio_size(audio, raw, &["num_hidden_layers", "encoder_layers"], 24)?;
    let ffn = audio_size(audio, raw, &["intermediate_size", "encoder_ffn_dim"], 4096)?;
    let mel = audio_size(audio, raw, &["num_mel_bins"], 80)?;
    let positions = audio_size(audio, raw, &["max_source_positions"], 1500)?;
    let text = spec.hidden_size;
    let part = "audio tower";
    let a = Category::Audio;
    let dd = || Expr::sym(Sym::Named("d_audio"), d);
    let l = || Expr::sym(Sym::Named("L_audio"), layers);
    let mut e = vec![
        Extra::table(
            "audio_tower.conv1.weight",
            part,
            a,
            dd(),
            Expr::product(vec![Expr::sym(Sym::Named("mel_bins"), mel), Expr::Lit(3)]),
        ),
        Extra::vector("audio_tower.conv1.bias", part, a, dd()),
        Extra::table(
            "audio_tower.conv2.weight",
            part,
            a,
            dd(),
            Expr::product(vec![dd(), Expr::Lit(3)]),
        ),
        Extra::vector("audio_tower.conv2.bias", part, a, dd()),
        Extra::table(
            "audio_tower.embed_positions.weight",
            part,
            a,
            Expr::sym(Sym::Named("audio_positions"), positions),
            dd(),
        )
        // `embed_positions.requires_grad_(False)` in the audio encoder's `__init__`.
        .frozen(),
        Extra::vector("audio_tower.layer_norm.weight", part, a, dd()),
        Extra::vector("audio_tower.layer_norm.bias", part, a, dd()),
    ];
    for name in ["q_proj", "k_proj", "v_proj", "out_proj"] {
        e.push(
            Extra::linear(
                format!("audio_tower.layers.self_attn.{name}.weight"),
                part,
                a,
                dd(),
                dd(),
            )
            .times(l()),
        );
        if name != "k_proj" {
            e.push(
                Extra::vector(
                    format!("audio_tower.layers.self_attn.{name}.bias"),
                    part,
                    a,
                    dd(),
                )
                .times(l()),
            );
        }
    }
    let ff = || Expr::sym(Sym::Named("ffn_audio"), ffn);
    e.extend([
        Extra::linear("audio_tower.layers.fc1.weight", part, a, dd(), ff()).times(l()),
        Extra::vector("audio_tower.layers.fc1.bias", part, a, ff()).times(l()),
        Extra::linear("audio_tower.layers.fc2.weight", part, a, ff(), dd()).times(l()),
        Extra::vector("audio_tower.layers.fc2.bias", part, a, dd()).times(l()),
        Extra::vector(
            "audio_tower.layers.norms",
            part,
            a,
            Expr::product(vec![Expr::Lit(4), dd()]),
        )
        .times(l()),
    ]);
    let t = || Expr::sym(Sym::Hidden, text);
    let proj = "audio projector";
    e.push(Extra::linear(
        "multi_modal_projector.linear_1.weight",
        proj,
        a,
        Expr::product(vec![dd(), Expr::sym(Sym::Named("audio_merge_size"), merge)]),
        t(),
    ));
    e.push(Extra::linear(
        "multi_modal_projector.linear_2.weight",
        proj,
        a,
        t(),
        t(),
    ));
    if bias {
        e.push(Extra::vector(
            "multi_modal_projector.linear_1.bias",
            proj,
            a,
            t(),
        ));
        e.push(Extra::vector(
            "multi_modal_projector.linear_2.bias",
            proj,
            a,
            t(),
        ));
    }
    e.push(Extra::vector(
        "multi_modal_projector.norm",
        proj,
        a,
        Expr::product(vec![Expr::Lit(2), t()]),
    ));
    spec.extras.extend(e);
    if let OutputHead::Lm { tied: t, .. } = &mut spec.head {
        *t = tied;
    }
    family.model_type.clone_into(&mut spec.model_type);
    spec.architecture = architecture;
    Ok(spec)
}

//! Encoders built as causal LMs, and encoder-decoders built as their decoder alone.
//!
//! transformers builds these model types as causal LMs from the class `architectures` names
//! (issue 9, item 5): `BertLMHeadModel` is BERT without its pooler plus the MLM-style head,
//! used causally and with a KV cache (the BERT-style `*ForCausalLM` caches once
//! `is_decoder` is set); `BartForCausalLM` is the BART decoder alone with its own
//! embeddings (its cross-attention is built but, with no encoder output, never run and never
//! cached). `architectures` decides the head when it names a class of a known kind; BERT and
//! RoBERTa configs naming their masked-LM or bare class keep the classic readers
//! (`encoder.rs`, `seq2seq.rs`).

mod bart;
mod bert;
mod misc;

use bart::{BART, Dec, On};
use bert::{BERT, Bert, Head, Positions, Width};

use crate::hf_config::family::{Family, Read};

macro_rules! bert {
    ($t:literal, $class:literal, $arch:literal, $b:expr) => {
        Family {
            model_type: $t,
            config_class: $class,
            architecture: $arch,
            read: Read::Code(|r, f, h| bert::read(r, f, h, &$b)),
        }
    };
}

macro_rules! dec {
    ($t:literal, $class:literal, $arch:literal, $d:expr) => {
        Family {
            model_type: $t,
            config_class: $class,
            architecture: $arch,
            read: Read::Code(|r, f, h| bart::read(r, f, h, &$d)),
        }
    };
}

/// RoBERTa (`modeling_roberta.py`): BERT with `RobertaLMHead` (`dense`, `layer_norm`,
/// decoder, `bias`) and `RobertaConfig`'s vocabulary.
const ROBERTA: Bert = Bert {
    class: "RobertaConfig",
    causal: "RobertaForCausalLM",
    base: "RobertaModel",
    vocab: 50265,
    ..BERT
};

/// The entries of this file.
pub(crate) const FAMILIES: &[Family] = &[
    bert!(
        "bert",
        "BertConfig",
        "BertForMaskedLM",
        Bert {
            classic: Some("BertForMaskedLM"),
            ..BERT
        }
    ),
    bert!(
        "roberta",
        "RobertaConfig",
        "RobertaForMaskedLM",
        Bert {
            classic: Some("RobertaForMaskedLM"),
            ..ROBERTA
        }
    ),
    bert!(
        "bert-generation",
        "BertGenerationConfig",
        "BertGenerationDecoder",
        Bert {
            class: "BertGenerationConfig",
            causal: "BertGenerationDecoder",
            base: "BertGenerationEncoder",
            vocab: 50358,
            hidden: 1024,
            layers: 24,
            heads: 16,
            inner: 4096,
            types: None,
            head: Head::Plain,
            base_pooler: false,
            ..BERT
        }
    ),
    bert!(
        "big_bird",
        "BigBirdConfig",
        "BigBirdForCausalLM",
        Bert {
            class: "BigBirdConfig",
            causal: "BigBirdForCausalLM",
            base: "BigBirdModel",
            vocab: 50358,
            positions: 4096,
            qkv_bias_key: Some(("use_bias", true)),
            causal_pooler: true,
            block_sparse: true,
            ..BERT
        }
    ),
    bert!(
        "camembert",
        "CamembertConfig",
        "CamembertForCausalLM",
        Bert {
            class: "CamembertConfig",
            causal: "CamembertForCausalLM",
            base: "CamembertModel",
            table_in_head: true,
            ..BERT
        }
    ),
    bert!(
        "data2vec-text",
        "Data2VecTextConfig",
        "Data2VecTextForCausalLM",
        Bert {
            class: "Data2VecTextConfig",
            causal: "Data2VecTextForCausalLM",
            base: "Data2VecTextModel",
            ..BERT
        }
    ),
    bert!(
        "electra",
        "ElectraConfig",
        "ElectraForCausalLM",
        Bert {
            class: "ElectraConfig",
            causal: "ElectraForCausalLM",
            base: "ElectraModel",
            hidden: 256,
            heads: 4,
            inner: 1024,
            width: Width::Key {
                key: "embedding_size",
                default: 128,
                always_projected: false,
            },
            separate_bias: false,
            base_pooler: false,
            ..BERT
        }
    ),
    bert!(
        "ernie",
        "ErnieConfig",
        "ErnieForCausalLM",
        Bert {
            class: "ErnieConfig",
            causal: "ErnieForCausalLM",
            base: "ErnieModel",
            tweak: Some(bert::ernie),
            ..BERT
        }
    ),
    bert!(
        "megatron-bert",
        "MegatronBertConfig",
        "MegatronBertForCausalLM",
        Bert {
            class: "MegatronBertConfig",
            causal: "MegatronBertForCausalLM",
            base: "MegatronBertModel",
            vocab: 29056,
            hidden: 1024,
            layers: 24,
            heads: 16,
            inner: 4096,
            embedding_norm: false,
            final_norm: true,
            ..BERT
        }
    ),
    bert!(
        "rembert",
        "RemBertConfig",
        "RemBertForCausalLM",
        Bert {
            class: "RemBertConfig",
            causal: "RemBertForCausalLM",
            base: "RemBertModel",
            vocab: 250_300,
            hidden: 1152,
            layers: 32,
            heads: 18,
            inner: 4608,
            tie: false,
            width: Width::Key {
                key: "input_embedding_size",
                default: 256,
                always_projected: true,
            },
            head: Head::RemBert,
            ..BERT
        }
    ),
    bert!(
        "roberta-prelayernorm",
        "RobertaPreLayerNormConfig",
        "RobertaPreLayerNormForCausalLM",
        Bert {
            class: "RobertaPreLayerNormConfig",
            causal: "RobertaPreLayerNormForCausalLM",
            base: "RobertaPreLayerNormModel",
            final_norm: true,
            head_bias_is_norm: true,
            ..ROBERTA
        }
    ),
    bert!(
        "roc_bert",
        "RoCBertConfig",
        "RoCBertForCausalLM",
        Bert {
            class: "RoCBertConfig",
            causal: "RoCBertForCausalLM",
            base: "RoCBertModel",
            tweak: Some(bert::roc_bert),
            ..BERT
        }
    ),
    bert!(
        "roformer",
        "RoFormerConfig",
        "RoFormerForCausalLM",
        Bert {
            class: "RoFormerConfig",
            causal: "RoFormerForCausalLM",
            base: "RoFormerModel",
            vocab: 50000,
            positions: 1536,
            width: Width::Key {
                key: "embedding_size",
                default: 768,
                always_projected: false,
            },
            position: Positions::Sinusoid,
            base_pooler: false,
            ..BERT
        }
    ),
    bert!(
        "xlm-roberta",
        "XLMRobertaConfig",
        "XLMRobertaForCausalLM",
        Bert {
            class: "XLMRobertaConfig",
            causal: "XLMRobertaForCausalLM",
            base: "XLMRobertaModel",
            table_in_head: true,
            ..BERT
        }
    ),
    bert!(
        "xlm-roberta-xl",
        "XLMRobertaXLConfig",
        "XLMRobertaXLForCausalLM",
        Bert {
            class: "XLMRobertaXLConfig",
            causal: "XLMRobertaXLForCausalLM",
            base: "XLMRobertaXLModel",
            vocab: 250_880,
            hidden: 2560,
            layers: 36,
            heads: 32,
            inner: 10240,
            positions: 514,
            types: Some(1),
            embedding_norm: false,
            final_norm: true,
            ..BERT
        }
    ),
    bert!(
        "xmod",
        "XmodConfig",
        "XmodForCausalLM",
        Bert {
            class: "XmodConfig",
            causal: "XmodForCausalLM",
            base: "XmodModel",
            tweak: Some(bert::xmod),
            ..BERT
        }
    ),
    dec!(
        "bart",
        "BartConfig",
        "BartForConditionalGeneration",
        Dec {
            classic: Some("BartForConditionalGeneration"),
            ..BART
        }
    ),
    dec!(
        "mbart",
        "MBartConfig",
        "MBartForCausalLM",
        Dec {
            class: "MBartConfig",
            causal: "MBartForCausalLM",
            final_norm: true,
            encoder_layers: Some(12),
            ..BART
        }
    ),
    dec!(
        "marian",
        "MarianConfig",
        "MarianForCausalLM",
        Dec {
            class: "MarianConfig",
            causal: "MarianForCausalLM",
            encoder_layers: Some(12),
            lm_class: Some("MarianMTModel"),
            vocab: 58101,
            position: bart::Positions::Sinusoid("max_position_embeddings"),
            embedding_norm: On::Fixed(false),
            table_key: Some("decoder_vocab_size"),
            ..BART
        }
    ),
    dec!(
        "blenderbot",
        "BlenderbotConfig",
        "BlenderbotForCausalLM",
        Dec {
            class: "BlenderbotConfig",
            causal: "BlenderbotForCausalLM",
            encoder_layers: Some(2),
            vocab: 8008,
            d_model: 2560,
            layers: 24,
            heads: 32,
            ffn: 10240,
            positions: 128,
            position: bart::Positions::Rows("max_position_embeddings"),
            embedding_norm: On::Fixed(false),
            final_norm: true,
            ..BART
        }
    ),
    dec!(
        "blenderbot-small",
        "BlenderbotSmallConfig",
        "BlenderbotSmallForCausalLM",
        Dec {
            class: "BlenderbotSmallConfig",
            causal: "BlenderbotSmallForCausalLM",
            encoder_layers: Some(8),
            d_model: 512,
            layers: 8,
            ffn: 2048,
            positions: 512,
            position: bart::Positions::Rows("max_position_embeddings"),
            ..BART
        }
    ),
    dec!(
        "pegasus",
        "PegasusConfig",
        "PegasusForCausalLM",
        Dec {
            class: "PegasusConfig",
            causal: "PegasusForCausalLM",
            encoder_layers: Some(12),
            position: bart::Positions::Sinusoid("max_position_embeddings"),
            embedding_norm: On::Fixed(false),
            final_norm: true,
            ..BART
        }
    ),
    dec!(
        "plbart",
        "PLBartConfig",
        "PLBartForCausalLM",
        Dec {
            class: "PLBartConfig",
            causal: "PLBartForCausalLM",
            encoder_layers: Some(6),
            vocab: 50005,
            d_model: 768,
            layers: 6,
            heads: 12,
            ffn: 3072,
            ..BART
        }
    ),
    dec!(
        "trocr",
        "TrOCRConfig",
        "TrOCRForCausalLM",
        Dec {
            class: "TrOCRConfig",
            causal: "TrOCRForCausalLM",
            positions: 512,
            position: bart::Positions::TrOcr,
            embedding_norm: On::Key("layernorm_embedding", true),
            cross_width_key: Some("cross_attention_hidden_size"),
            ..BART
        }
    ),
    dec!(
        "whisper",
        "WhisperConfig",
        "WhisperForCausalLM",
        Dec {
            class: "WhisperConfig",
            causal: "WhisperForCausalLM",
            vocab: 51865,
            d_model: 384,
            layers: 4,
            heads: 6,
            ffn: 1536,
            positions: 448,
            position: bart::Positions::Rows("max_target_positions"),
            embedding_norm: On::Fixed(false),
            final_norm: true,
            k_bias: false,
            ..BART
        }
    ),
    dec!(
        "bigbird_pegasus",
        "BigBirdPegasusConfig",
        "BigBirdPegasusForCausalLM",
        Dec {
            class: "BigBirdPegasusConfig",
            causal: "BigBirdPegasusForCausalLM",
            vocab: 96103,
            d_model: 1024,
            layers: 16,
            positions: 4096,
            position: bart::Positions::Rows("max_position_embeddings"),
            bias_key: Some(("use_bias", false)),
            never_tied: true,
            ..BART
        }
    ),
    dec!(
        "mvp",
        "MvpConfig",
        "MvpForCausalLM",
        Dec {
            class: "MvpConfig",
            causal: "MvpForCausalLM",
            encoder_layers: Some(12),
            vocab: 50267,
            ..BART
        }
    ),
    Family::code("xlm", "XLMConfig", "XLMWithLMHeadModel", misc::xlm),
    Family::code("xlnet", "XLNetConfig", "XLNetLMHeadModel", misc::xlnet),
    Family::code(
        "prophetnet",
        "ProphetNetConfig",
        "ProphetNetForCausalLM",
        misc::prophetnet,
    ),
    Family::code(
        "moss_transcribe_diarize",
        "MossTranscribeDiarizeConfig",
        "MossTranscribeDiarizeForConditionalGeneration",
        misc::moss_transcribe_diarize,
    ),
];

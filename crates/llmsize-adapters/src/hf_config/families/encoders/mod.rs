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
];

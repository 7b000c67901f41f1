//! Invariants over arbitrary designed models: totals are the sum of their components and of
//! the tensor list, counts grow with layers, and nothing panics, even on absurd sizes (they
//! give overflow errors instead).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

use llmsize_core::design::{Design, Style, design_spec};
use llmsize_core::flops::{AttentionConvention, flops};
use llmsize_core::formats::{GgufPreset, KvDtype, WeightFormat};
use llmsize_core::layout::tensors;
use llmsize_core::memory::{CachePolicy, MemoryOptions, MlaCache, memory};
use llmsize_core::{ParamsReport, count};
use proptest::prelude::*;

fn design() -> impl Strategy<Value = (Design, Style)> {
    (
        1u64..64,                                       // heads
        1u64..=4,                                       // kv divisor
        prop_oneof![Just(64u64), Just(128), 1u64..300], // head size
        1u64..200,                                      // layers
        1u64..300_000,                                  // vocab
        prop::option::of(1u64..100_000),                // ffn
        any::<bool>(),
    )
        .prop_map(|(heads, div, head, layers, vocab, ffn, gpt)| {
            let kv = if heads % div == 0 { heads / div } else { heads };
            (
                Design {
                    hidden: heads * head,
                    layers,
                    vocab: Some(vocab),
                    heads: Some(heads),
                    kv_heads: Some(kv),
                    ffn,
                    ctx: Some(2048),
                },
                if gpt { Style::Gpt } else { Style::Llama },
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn totals_are_sums((d, style) in design()) {
        let spec = design_spec(&d, style).unwrap();
        let c = count(&spec).unwrap();
        prop_assert_eq!(c.total, c.components.iter().map(|x| x.count).sum::<u64>());
        let from_tensors: u64 = tensors(&spec).unwrap().iter().map(|t| t.total_elements().unwrap()).sum();
        prop_assert_eq!(c.total, from_tensors);
        for comp in &c.components {
            prop_assert_eq!(comp.formula.eval().unwrap(), comp.count);
        }
        prop_assert!(ParamsReport::new(&spec, "prop").is_ok());
    }

    #[test]
    fn more_layers_more_parameters((d, style) in design()) {
        let spec = design_spec(&d, style).unwrap();
        let more = design_spec(&Design { layers: d.layers + 1, ..d.clone() }, style).unwrap();
        prop_assert!(count(&more).unwrap().total > count(&spec).unwrap().total);
    }

    #[test]
    fn memory_and_flops_never_panic(
        (d, style) in design(),
        seq in 1u64..u64::MAX,
        batch in 1u64..u64::MAX,
        preset in 0usize..GgufPreset::ALL.len(),
    ) {
        let spec = design_spec(&d, style).unwrap();
        for format in [WeightFormat::Bf16, WeightFormat::Gptq4, WeightFormat::Nf4 { double_quant: true }, WeightFormat::Gguf(GgufPreset::ALL[preset])] {
            let options = MemoryOptions {
                format,
                seq_len: seq,
                batch,
                kv_dtype: KvDtype::Q8_0,
                tp: 1,
                gpu: None,
                mla: MlaCache::Latent,
                window: CachePolicy::Transformers,
                overhead_bytes: 0,
            };
            let _ = memory(&spec, &options);
        }
        let _ = flops(&spec, seq, batch, AttentionConvention::Causal);
        let _ = flops(&spec, seq.min(1 << 20), batch.min(1 << 10), AttentionConvention::Full).unwrap();
    }

    #[test]
    fn absurd_sizes_are_errors_not_panics(hidden in 1u64..u64::MAX, layers in 1u64..1_000_000, vocab in 1u64..u64::MAX) {
        if let Ok(spec) = design_spec(&Design { hidden, layers, vocab: Some(vocab), heads: Some(1), ..Design::default() }, Style::Llama) {
            let _ = count(&spec);
            let _ = ParamsReport::new(&spec, "prop");
        }
    }
}

//! Training memory per GPU under parallelism (`train::parallel`), checked against the
//! estimators `DeepSpeed` and Megatron-LM ship, with every difference explained.
//!
//! Sources of the compared figures (read from the repositories, formulas carried here, not
//! code):
//! - `DeepSpeed` (deepspeedai/DeepSpeed @ edaa722): `deepspeed/runtime/zero/stage_1_and_2.py`
//!   `estimate_zero2_model_states_mem_needs` — GPU `2P + 18P/N` (`2 = params_16bit, 18 =
//!   2_grads_16bit + 4_grads_32bit + 4_params_32bit + 8_optimizer_states_32bit`), `2P` with
//!   `cpu_offload`; CPU `P·max(4N, 16)·1.5` per node with offload, `4P·gpus_per_node·1.5`
//!   without. `deepspeed/runtime/zero/stage3.py` `estimate_zero3_model_states_mem_needs` — GPU
//!   `4·LL + 18P/N`, `4·LL + 2P/N` with `offload_optimizer`, `4·LL` with `offload_param` too,
//!   where `LL` is the largest module's own parameters (`model_to_params`, `recurse=False`);
//!   CPU (`zero_init`) `16P·1.5` and `18P·1.5` per node.
//! - Megatron-LM (NVIDIA/Megatron-LM @ d98e8a6): `megatron/training/theoretical_memory_usage.py`
//!   `compute_weight_and_optimizer_memory` (most loaded shard: `(P_tp_sharded/pp + V·h)/tp +
//!   P_replicated/pp`, 18 bytes per parameter, or `6 + 12/dp` with the distributed optimizer)
//!   and `compute_activation_memory` (SP + selective recompute: `s·b·h·(18 + 4·f/h)` per layer,
//!   `L` layers' worth on the first stage, `+ 8·s·b·pp + s·b·h·pp` for the embedding, × `1 +
//!   (pp − 1)/(pp·v)` interleaved or × `min(1, m/pp)`, all ÷ `tp`) and
//!   `compute_activation_memory_without_sp` (`s·b·h·(10 + 24/tp)` per layer, × 1.05).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::cast_precision_loss,
    clippy::float_cmp,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

use llmsize_core::SpecError;
use llmsize_core::design::{Design, Style, design_spec};
use llmsize_core::layout::{Layout, Place, layout};
use llmsize_core::spec::{Attention, Ffn, Layers, Mlp, ModelSpec, Moe};
use llmsize_train::ParamDtype;
use llmsize_train::activations::Activations;
use llmsize_train::parallel::{ParallelInput, Parallelism, PerGpu, per_gpu, validate};
use llmsize_train::states::{Held, Optimizer, Precision, model_states};

/// Llama-2-7B: d 4096, 32 layers, 32 heads (MHA), `SwiGLU` 11008, V 32000, untied:
/// 6,738,415,616 parameters (the ground truth's count).
fn llama2_7b() -> ModelSpec {
    design_spec(
        &Design {
            hidden: 4096,
            layers: 32,
            vocab: Some(32_000),
            heads: Some(32),
            kv_heads: None,
            ffn: Some(11_008),
            ctx: Some(4096),
        },
        Style::Llama,
    )
    .unwrap()
}

/// Llama-2-70B: d 8192, 80 layers, 64 heads, 8 KV heads, `SwiGLU` 28672, V 32000, untied.
fn llama2_70b() -> ModelSpec {
    design_spec(
        &Design {
            hidden: 8192,
            layers: 80,
            vocab: Some(32_000),
            heads: Some(64),
            kv_heads: Some(8),
            ffn: Some(28_672),
            ctx: Some(4096),
        },
        Style::Llama,
    )
    .unwrap()
}

/// GPT-3 175B as Megatron's estimator sees it: d 12288, 96 layers, 96 heads, GELU 4d, V 51200
/// (a multiple of 128·tp, so Megatron pads nothing), tied, `LayerNorm`; `stripped` removes the
/// linear biases and the learned position table, which `compute_weight_and_optimizer_memory`
/// does not count.
fn gpt3(stripped: bool) -> ModelSpec {
    let mut spec = design_spec(
        &Design {
            hidden: 12_288,
            layers: 96,
            vocab: Some(51_200),
            heads: Some(96),
            kv_heads: None,
            ffn: Some(49_152),
            ctx: Some(2048),
        },
        Style::Gpt,
    )
    .unwrap();
    if stripped {
        let mut layer = spec.stacks[0].layers.kinds()[0].clone();
        if let Attention::Standard(a) = &mut layer.attention {
            a.q_bias = false;
            a.k_bias = false;
            a.v_bias = false;
            a.o_bias = false;
        }
        if let Ffn::Dense(m) = &mut layer.ffn {
            m.up_bias = false;
            m.down_bias = false;
        }
        spec.stacks[0].layers = Layers::repeat(layer, 96);
        spec.stacks[0].position = None;
    }
    spec
}

/// Mixtral-8x7B: Mistral-7B attention (32 heads, 8 KV), 8 experts of 14336, top-2:
/// 46,702,792,704 parameters (the ground truth's count).
fn mixtral() -> ModelSpec {
    let mut spec = design_spec(
        &Design {
            hidden: 4096,
            layers: 32,
            vocab: Some(32_000),
            heads: Some(32),
            kv_heads: Some(8),
            ffn: Some(14_336),
            ctx: Some(4096),
        },
        Style::Llama,
    )
    .unwrap();
    let mut layer = spec.stacks[0].layers.kinds()[0].clone();
    layer.ffn = Ffn::Moe(Moe {
        num_experts: 8,
        experts_per_token: 2,
        expert: Mlp {
            hidden: 4096,
            intermediate: 14_336,
            gated: true,
            up_bias: false,
            down_bias: false,
        },
        router_bias: llmsize_core::spec::RouterBias::None,
        router: true,
        shared: None,
        shared_gate: false,
    });
    spec.stacks[0].layers = Layers::repeat(layer, 32);
    spec
}

/// The parameter groups as `train()` builds them (full fine-tuning).
fn held(lay: &Layout, dtype: ParamDtype) -> Vec<Held> {
    lay.tensors
        .iter()
        .map(|t| Held {
            elements: t.elements().unwrap(),
            tensors: t.layers,
            matrix: (!t.is_vector()).then_some((t.rows, t.cols)),
            hidden_matrix: matches!(t.place, Place::Layer { .. }) && !t.is_vector(),
            trainable: true,
            dtype,
            stored_bytes: None,
            kind: t.kind,
            place: t.place,
            adapter: false,
            part_of_previous: false,
            unreached: false,
        })
        .collect()
}

fn acts(
    sharded: u128,
    replicated: u128,
    outside: u128,
    transient: u128,
    layers: u64,
) -> Activations {
    let retained = sharded + replicated + outside;
    Activations {
        retained,
        forward_peak: retained + transient,
        terms: Vec::new(),
        peak_terms: Vec::new(),
        estimate: None,
        layer_sharded: sharded,
        layer_replicated: replicated,
        outside,
        layers,
    }
}

fn none() -> Activations {
    acts(0, 0, 0, 0, 0)
}

struct Case<'a> {
    spec: &'a ModelSpec,
    held: bool,
    precision: Precision,
    activations: Activations,
    seq: u64,
}

impl Case<'_> {
    fn run(&self, p: &Parallelism) -> Result<PerGpu, SpecError> {
        let lay = layout(self.spec).unwrap();
        let h = if self.held {
            held(&lay, ParamDtype::Bf16)
        } else {
            Vec::new()
        };
        per_gpu(&ParallelInput {
            spec: self.spec,
            layout: &lay,
            held: &h,
            precision: self.precision,
            optimizer: Optimizer::AdamW,
            parallel: p,
            activations: &self.activations,
            batch: 1,
            seq: self.seq,
        })
    }
}

fn states_only(spec: &ModelSpec, precision: Precision) -> Case<'_> {
    Case {
        spec,
        held: true,
        precision,
        activations: none(),
        seq: 2048,
    }
}

fn activations_only(spec: &ModelSpec, activations: Activations, seq: u64) -> Case<'_> {
    Case {
        spec,
        held: false,
        precision: Precision::Mixed,
        activations,
        seq,
    }
}

fn zero(stage: u8, dp: u64) -> Parallelism {
    Parallelism {
        dp,
        zero: stage,
        ..Parallelism::default()
    }
}

fn sum(terms: &[llmsize_train::Term]) -> u128 {
    terms.iter().map(|t| t.value).sum()
}

const P7: u128 = 6_738_415_616;

#[test]
fn one_gpu_holds_the_model_states_and_the_forward_peak() {
    let spec = llama2_7b();
    let lay = layout(&spec).unwrap();
    let h = held(&lay, ParamDtype::Bf16);
    let s = model_states(&h, Precision::Pure, Optimizer::AdamW).unwrap();
    assert_eq!(s.trainable_params, 6_738_415_616);
    // Layers: 60 (heads) + 30 (width) bytes; outside 10; the loss's transient 50.
    let a = acts(60, 30, 10, 50, 32);
    let g = per_gpu(&ParallelInput {
        spec: &spec,
        layout: &lay,
        held: &h,
        precision: Precision::Pure,
        optimizer: Optimizer::AdamW,
        parallel: &Parallelism::default(),
        activations: &a,
        batch: 1,
        seq: 2048,
    })
    .unwrap();
    // bf16 AdamW as measured: 2P weights + 2P gradients + 4P states (+ 291 CPU `step`
    // scalars, not on the GPU) + the forward peak 150 = 8P + 150.
    let states_on_gpu =
        s.weights_bytes + s.gradient_bytes + s.optimizer_state_bytes - s.step_bytes_cpu;
    assert_eq!(states_on_gpu, 8 * P7);
    assert_eq!(g.bytes, 8 * P7 + 150);
    assert_eq!(sum(&g.terms), g.bytes);
    assert_eq!((g.cpu_bytes, g.stage, g.gpus), (0, 0, 1));
    assert_eq!(g.most_loaded, "one GPU");
    assert!(g.estimate.is_none());
}

#[test]
fn zero2_equals_deepspeeds_estimator() {
    let spec = llama2_7b();
    let case = states_only(&spec, Precision::Mixed);
    // `estimate_zero2_model_states_mem_needs(P, 8, 1, cpu_offload=False)`:
    // GPU 2P + int(18P/8) = 13,476,831,232 + 15,161,435,136 = 28,638,266,368.
    let deepspeed = 2 * P7 + 18 * P7 / 8;
    assert_eq!(deepspeed, 28_638_266_368);
    // llmsize: 2P weights + ⌈2P/8⌉ gradients + ⌈12P/8⌉ master + Adam, and at the step the
    // fp32 copy of the gradient partition ⌈4P/8⌉ (`stage_1_and_2.py` `step`) — the same 18/N.
    let g = case.run(&zero(2, 8)).unwrap();
    assert_eq!(g.bytes, deepspeed);
    assert_eq!(sum(&g.terms), g.bytes);
    assert!(g.terms.iter().any(|t| t.key == "optimizer_step"));
    assert_eq!(g.most_loaded, "every GPU alike (ZeRO-2 over 8)");

    // With `offload_optimizer`: GPU 2P (DeepSpeed: 2P, equal). CPU: llmsize ⌈12P/8⌉ states +
    // ⌈4P/8⌉ fp32 gradient partition = 2P = 13,476,831,232 per GPU; DeepSpeed asks
    // P·max(4·8, 16)·1.5 = 48P per node = 6P = 40,430,493,696 per GPU: its max(4N, 16) is the
    // fp32 copy of the model every process holds while loading (4 bytes × 8 processes), and
    // 1.5 its `additional_buffer_factor` — 3× llmsize's steady state.
    let g = case
        .run(&Parallelism {
            offload_optimizer: true,
            ..zero(2, 8)
        })
        .unwrap();
    assert_eq!(g.bytes, 2 * P7);
    assert_eq!(g.cpu_bytes, 2 * P7);
    assert_eq!(P7 * 48 / 8, 40_430_493_696);
    assert_eq!(sum(&g.cpu_terms), g.cpu_bytes);
}

#[test]
fn zero1_and_ddp_follow_the_zero_paper() {
    let spec = llama2_7b();
    let case = states_only(&spec, Precision::Mixed);
    // DDP: 16 bytes per parameter (Rajbhandari et al. 2020, §3.1: 2 + 2 + 12).
    assert_eq!(case.run(&zero(0, 8)).unwrap().bytes, 16 * P7);
    // ZeRO-1: the paper's 4Ψ + 12Ψ/N = 4P + 1.5P, plus the step's fp32 gradient copy
    // ⌈4P/8⌉ = 0.5P that `DeepSpeed` makes for stage 1 as for stage 2: 6P = 40,430,493,696.
    assert_eq!(case.run(&zero(1, 8)).unwrap().bytes, 6 * P7);
    // ZeRO over one rank shards nothing, and says so.
    let g = case.run(&zero(1, 1)).unwrap();
    assert_eq!(g.bytes, 16 * P7 + 4 * P7);
    assert!(g.notes.iter().any(|n| n.contains("shards nothing")));
}

#[test]
fn zero3_against_deepspeeds_estimator() {
    let spec = llama2_7b();
    let case = states_only(&spec, Precision::Mixed);
    // DeepSpeed's largest layer: `embed_tokens` (or `lm_head`), 32000·4096 = 131,072,000.
    let ll: u128 = 131_072_000;
    // llmsize's two largest units (FSDP2 keeps two all-gathers alive): the root (embedding,
    // head and final norm, 262,148,096 params) and one decoder layer (202,383,360), in bf16:
    // 524,296,192 + 404,766,720 = 929,062,912.
    let units: u128 = 929_062_912;

    // No offload. DeepSpeed: 4·LL + int(18P/8) = 524,288,000 + 15,161,435,136 =
    // 15,685,723,136. llmsize: ⌈16P/8⌉ = 13,476,831,232 sharded, then the larger of the
    // forward (the units, no activations here) and the step's fp32 gradient copy ⌈4P/8⌉ =
    // 3,369,207,808: 16,846,039,040, 1,160,315,904 more. DeepSpeed's 18 bytes leave out either
    // the 16-bit gradient shard (2/N) or the fp32 copy (4/N, counted as 4 − 2), and count
    // LL's params and grads (4·LL) where the step is the larger peak.
    let g = case.run(&zero(3, 8)).unwrap();
    assert_eq!(4 * ll + 18 * P7 / 8, 15_685_723_136);
    assert_eq!(g.bytes, 16_846_039_040);
    assert_eq!(g.bytes - (4 * ll + 18 * P7 / 8), 1_160_315_904);

    // offload_optimizer: DeepSpeed 4·LL + int(2P/8) = 2,208,891,904; llmsize ⌈2P/8⌉ +
    // units = 1,684,603,904 + 929,062,912 = 2,613,666,816: 404,774,912 more, the units
    // (two whole units' 16-bit weights, the root with the head) against DeepSpeed's params +
    // grads of the one largest module. CPU: DeepSpeed 16P·1.5 per node = 20,215,246,848 per
    // GPU; llmsize 16P/8 = 13,476,831,232 (fp32 states, master, gradient partition): the 1.5
    // buffer factor exactly.
    let g = case
        .run(&Parallelism {
            offload_optimizer: true,
            ..zero(3, 8)
        })
        .unwrap();
    assert_eq!(g.bytes, 2 * P7 / 8 + units);
    assert_eq!(g.bytes - (4 * ll + 2 * P7 / 8), 404_774_912);
    assert_eq!(g.cpu_bytes, 16 * P7 / 8);
    assert_eq!(g.cpu_bytes * 3 / 2, 20_215_246_848);

    // offload_params too: DeepSpeed 4·LL = 524,288,000; llmsize the units, 929,062,912. CPU:
    // DeepSpeed 18P·1.5/8 = 22,742,152,704; llmsize 18P/8 = 15,161,435,136 (+ the 16-bit
    // parameter shard), again the 1.5 factor.
    let g = case
        .run(&Parallelism {
            offload_optimizer: true,
            offload_params: true,
            ..zero(3, 8)
        })
        .unwrap();
    assert_eq!(g.bytes, units);
    assert_eq!(g.cpu_bytes, 18 * P7 / 8);
    assert_eq!(g.cpu_bytes * 3 / 2, 22_742_152_704);
    assert_eq!(sum(&g.terms), g.bytes);
    assert_eq!(sum(&g.cpu_terms), g.cpu_bytes);
}

#[test]
fn hybrid_shard_shards_within_the_group() {
    let spec = llama2_7b();
    let case = states_only(&spec, Precision::Mixed);
    // 16 data-parallel ranks, sharded within groups of 8: the same bytes as ZeRO-3 over 8.
    let hybrid = Parallelism {
        shard_group: Some(8),
        ..zero(3, 16)
    };
    assert_eq!(
        case.run(&hybrid).unwrap().bytes,
        case.run(&zero(3, 8)).unwrap().bytes
    );
    assert!(case.run(&zero(3, 16)).unwrap().bytes < case.run(&hybrid).unwrap().bytes);
}

/// Megatron's `compute_weight_and_optimizer_memory` for a dense model, in bytes.
fn megatron_weights(
    h: f64,
    layers: f64,
    (layer_sharded, layer_replicated, final_norm): (f64, f64, f64),
    vocab: f64,
    (tp, pp): (f64, f64),
    bytes_per_param: f64,
) -> f64 {
    let sharded = (layer_sharded * layers / pp + vocab * h) / tp;
    let replicated = (layer_replicated * layers + final_norm) / pp;
    (sharded + replicated) * bytes_per_param
}

#[test]
fn megatron_weights_and_optimizer_gpt3_175b() {
    let spec = gpt3(true);
    let case = states_only(&spec, Precision::MixedFp32Grads);
    let tp_pp = Parallelism {
        tp: 8,
        pp: 8,
        ..Parallelism::default()
    };
    let h = 12_288.0;
    // Per layer: 12h² split by tp, 2 LayerNorms (4h) whole; final LayerNorm 2h.
    let megatron = |bytes| {
        megatron_weights(
            h,
            96.0,
            (12.0 * h * h, 4.0 * h, 2.0 * h),
            51_200.0,
            (8.0, 8.0),
            bytes,
        )
    };
    // 18 bytes per parameter (bf16 weights, fp32 main gradients, fp32 master + Adam):
    // Megatron 2,797,145,088 params → 50,348,611,584 bytes.
    assert_eq!(megatron(18.0), 50_348_611_584.0);
    // llmsize: the last stage is the most loaded: 12 layers (12h²/8 + 4h each), the final
    // LayerNorm and the tied embedding's copy (V·h/8, with its gradient and Adam states:
    // Megatron's `setup_embeddings_and_output_layer`) = 2,797,166,592 params →
    // 50,348,998,656. Megatron spreads the final LayerNorm over the stages (2h/pp on its
    // "most loaded" first stage): 2h − 2h/8 = 21,504 params, 387,072 bytes less.
    let g = case.run(&tp_pp).unwrap();
    assert_eq!(g.bytes, 50_348_998_656);
    assert_eq!(g.stage, 7);
    assert_eq!(g.bytes as f64 - megatron(18.0), 387_072.0);
    // The distributed optimizer over dp = 16 (= ZeRO-1): 6 + 12/16 bytes per parameter:
    // Megatron 18,880,729,344; llmsize 6·2,797,166,592 + ⌈12·2,797,166,592/16⌉ =
    // 18,880,874,496 (the same 21,504 params × 6.75 = 145,152).
    let g = case
        .run(&Parallelism {
            dp: 16,
            zero: 1,
            ..tp_pp
        })
        .unwrap();
    assert_eq!(megatron(6.0 + 12.0 / 16.0), 18_880_729_344.0);
    assert_eq!(g.bytes, 18_880_874_496);
    assert_eq!(g.bytes as f64 - megatron(6.75), 145_152.0);

    // The real GPT-3 has linear biases and a learned position table (2048·12288, whole on
    // every tensor-parallel rank, first stage), which Megatron's estimator leaves out: the
    // first stage becomes the most loaded with 12·(3h/8 + h + 4h/8 + h) biases + 25,165,824
    // positions − the 3,072 final-norm params Megatron puts there = 25,586,688 params more:
    // 50,809,171,968 against 50,348,611,584 (+460,560,384 bytes, 0.9 %).
    let real = gpt3(false);
    let g = states_only(&real, Precision::MixedFp32Grads)
        .run(&tp_pp)
        .unwrap();
    assert_eq!(g.stage, 0);
    assert_eq!(g.bytes, 50_809_171_968);
    assert_eq!(g.bytes as f64 - megatron(18.0), 460_560_384.0);
}

#[test]
fn megatron_weights_and_optimizer_llama2_70b() {
    let spec = llama2_70b();
    let case = states_only(&spec, Precision::MixedFp32Grads);
    let tp_pp = Parallelism {
        tp: 8,
        pp: 8,
        ..Parallelism::default()
    };
    let h = 8192.0;
    // Megatron: attention 2h²(1 + 8/64), SwiGLU MLP 2·h·f·3/2, 2 RMSNorms (2h), final h;
    // untied, pp > 1: one embedding (V·h) on the most loaded shard. V = 32000 (Megatron would
    // pad it to 32768 with `--make-vocab-size-divisible-by 128` and tp 8; the comparison
    // feeds both the same V).
    let layer = 2.0 * h * h * (1.0 + 8.0 / 64.0) + 3.0 * h * 28_672.0;
    let megatron =
        |bytes| megatron_weights(h, 80.0, (layer, 2.0 * h, h), 32_000.0, (8.0, 8.0), bytes);
    // Megatron: 1,102,480,384 params × 18 = 19,844,646,912.
    assert_eq!(megatron(18.0), 19_844_646_912.0);
    // llmsize: the last stage (10 layers, the final norm, the head V·h/8) = 1,102,487,552
    // params → 19,844,775,936: 7,168 params more (the final norm whole, h − h/8).
    let g = case.run(&tp_pp).unwrap();
    assert_eq!(g.stage, 7);
    assert_eq!(g.bytes, 19_844_775_936);
    assert_eq!(g.bytes as f64 - megatron(18.0), 7_168.0 * 18.0);
    // Distributed optimizer over dp = 16: 7,441,742,592 (Megatron) vs 7,441,790,976.
    let g = case
        .run(&Parallelism {
            dp: 16,
            zero: 1,
            ..tp_pp
        })
        .unwrap();
    assert_eq!(megatron(6.75), 7_441_742_592.0);
    assert_eq!(g.bytes, 7_441_790_976);
}

/// Megatron's `compute_activation_memory` (SP + selective recompute) for the first stage.
fn megatron_activations_sp(
    (s, b, h, f, v): (f64, f64, f64, f64, f64),
    layers: f64,
    (tp, pp): (f64, f64),
    virtual_stages: Option<f64>,
    micro_batches: f64,
) -> f64 {
    let mut a = s * b * h * (18.0 + 4.0 * f / h) * layers;
    a += 8.0 * s * b * pp + s * b * h * pp;
    if let Some(v) = virtual_stages {
        a *= 1.0 + (pp - 1.0) / (pp * v);
    } else if pp > 1.0 {
        a *= (micro_batches / pp).min(1.0);
    }
    if pp == 1.0 {
        a += s * b * h * 4.0 * (1.0 + v / h);
    }
    a / tp
}

#[test]
fn megatron_activations_gpt3_175b() {
    let spec = gpt3(true);
    // Korthikanti et al.'s split of a GPT layer (selective recompute: no s² terms), per
    // s·b·h = 2048·12288 = 25,165,824 bytes: 24 at the heads' and MLP's width (Q, K, V,
    // projection input, 2 × 8 MLP) and 10 at the full width (2 LayerNorm inputs and outputs,
    // 2 dropout masks); Megatron's `18 + 4·f/h` = 34.
    let sbh: u128 = 2048 * 12_288;
    let a = acts(96 * 24 * sbh, 96 * 10 * sbh, 0, 0, 96);
    let case = activations_only(&spec, a, 2048);
    let shape = (2048.0, 1.0, 12_288.0, 49_152.0, 51_200.0);
    let sp = Parallelism {
        tp: 8,
        pp: 8,
        sequence_parallel: true,
        micro_batches: 8,
        ..Parallelism::default()
    };
    // 1F1B, 8 micro-batches: stage 0 holds 8 × 12 layers × 34·sbh / 8 = 10,267,656,192.
    // Megatron adds the embedding's input ids and dropout mask for 8 micro-batches,
    // (8·s·b + s·b·h)·8/8 = 25,182,208: 10,292,838,400 (which llmsize's activations, measured
    // from transformers without embedding dropout, do not hold).
    let g = case.run(&sp).unwrap();
    assert_eq!(g.stage, 0);
    assert_eq!(g.bytes, 10_267_656_192);
    let megatron = megatron_activations_sp(shape, 96.0, (8.0, 8.0), None, 8.0);
    assert_eq!(megatron, 10_292_838_400.0);
    assert_eq!(megatron - g.bytes as f64, 25_182_208.0);

    // Fewer micro-batches than stages: 4 in flight, half (Megatron's min(1, m/pp)).
    let g = case
        .run(&Parallelism {
            micro_batches: 4,
            ..sp
        })
        .unwrap();
    assert_eq!(g.bytes, 10_267_656_192 / 2);
    assert_eq!(
        megatron_activations_sp(shape, 96.0, (8.0, 8.0), None, 4.0),
        megatron / 2.0
    );

    // Interleaved, 2 chunks of 6 layers per stage, 64 micro-batches: stage 0 keeps 2·7 + 8 +
    // 1 = 23 chunks (`schedules.py` warm-up + 1) = 138 layers' worth = 96 × (1 + 7/16),
    // Megatron's factor: 14,759,755,776 against Megatron's 14,795,955,200 (the embedding
    // terms × 23/16).
    let g = case
        .run(&Parallelism {
            interleave: 2,
            micro_batches: 64,
            ..sp
        })
        .unwrap();
    assert_eq!(g.bytes, 138 * 34 * sbh / 8);
    assert_eq!(g.bytes, 14_759_755_776);
    let megatron_v = megatron_activations_sp(shape, 96.0, (8.0, 8.0), Some(2.0), 64.0);
    assert_eq!(megatron_v, 14_795_955_200.0);
    assert_eq!(megatron_v - g.bytes as f64, 25_182_208.0 * 23.0 / 16.0);

    // Without sequence parallelism only the 24·sbh part is split: 96 × (24/8 + 10)·sbh =
    // 31,406,948,352; Megatron's `compute_activation_memory_without_sp` gives the same per
    // layer, `s·b·h·(10 + 24/tp)`, plus the embedding terms, × 1.05 "overhead":
    // 33,188,826,316.8 (its embedding terms are not divided by tp there).
    let g = case
        .run(&Parallelism {
            sequence_parallel: false,
            ..sp
        })
        .unwrap();
    assert_eq!(g.bytes, 31_406_948_352);
    let layer = 2048.0 * 12_288.0 * (10.0 + 24.0 / 8.0) * 96.0;
    let megatron_nosp: f64 = (layer + 8.0 * 2048.0 * 8.0 + 2048.0 * 12_288.0 * 8.0) * 1.05;
    assert!((megatron_nosp - 33_188_826_316.8).abs() < 0.01);
}

#[test]
fn megatron_activations_llama2_70b() {
    let spec = llama2_70b();
    // llmsize's llama layer (truth README, SDPA, bf16, e = 2), T = s·b = 4096, d = A = 8192,
    // K = 1024, F = 28672, H = 64:
    // at the full width: 2 RMSNorms × (4Td + 4T + 2eTd) = 536,903,680;
    // at the heads'/MLP width: e·T·(2A + 2K) + 4·b·H·s + 4eTF = 150,994,944 + 1,048,576 +
    // 939,524,096 = 1,091,567,616; 1,628,471,296 per layer = 48.53·s·b·h.
    let per_width: u128 = 536_903_680;
    let per_heads: u128 = 1_091_567_616;
    let a = acts(80 * per_heads, 80 * per_width, 0, 0, 80);
    let case = activations_only(&spec, a, 4096);
    let p = Parallelism {
        tp: 8,
        pp: 8,
        sequence_parallel: true,
        micro_batches: 8,
        ..Parallelism::default()
    };
    // Stage 0: 8 micro-batches × 10 layers × 1,628,471,296 / 8 = 16,284,712,960.
    let g = case.run(&p).unwrap();
    assert_eq!(g.bytes, 16_284_712_960);
    // Megatron: s·b·h·(18 + 4·28672/8192) = 32·s·b·h per layer, 80 layers, + embedding, ÷ 8:
    // 10,771,005,440. llmsize holds 51 % more: RMSNorm keeps an fp32 copy of its input and
    // the normalised output (16·Td per layer at the full width against Megatron's 10·sbh,
    // which counts LayerNorm inputs and dropout masks), and SwiGLU saves four F-wide tensors
    // (gate, up, act(gate), act·up: 8·T·F) where Megatron's `4·f/h` counts two — the
    // formula's known gaps for SwiGLU; GQA's smaller K and V go the other way.
    let megatron = megatron_activations_sp(
        (4096.0, 1.0, 8192.0, 28_672.0, 32_000.0),
        80.0,
        (8.0, 8.0),
        None,
        8.0,
    );
    assert_eq!(megatron, 10_771_005_440.0);
    assert_eq!(g.bytes - 10_771_005_440, 5_513_707_520);
}

#[test]
fn the_last_stage_leads_when_the_loss_outweighs_the_pipeline() {
    let spec = llama2_7b();
    // Per layer 1,000 bytes at the heads' width and 100 at the full width; outside 50,000 and
    // a transient of 20,000 at the loss. pp = 4, 4 micro-batches, no states.
    let p = Parallelism {
        pp: 4,
        micro_batches: 4,
        ..Parallelism::default()
    };
    // First stage: 4 × 8 layers × 1,100 = 35,200; last: 8 × 1,100 + 50,000 + 20,000 = 78,800.
    let g = activations_only(&spec, acts(32_000, 3_200, 50_000, 20_000, 32), 2048)
        .run(&p)
        .unwrap();
    assert_eq!((g.stage, g.bytes), (3, 78_800));
    assert!(g.most_loaded.contains("the first stage holds 35,200"));
    assert_eq!(sum(&g.terms), g.bytes);
    // Without the loss the first stage leads.
    let g = activations_only(&spec, acts(32_000, 3_200, 0, 0, 32), 2048)
        .run(&p)
        .unwrap();
    assert_eq!((g.stage, g.bytes), (0, 35_200));
    assert!(g.most_loaded.starts_with("pipeline stage 0 of 4"));
}

#[test]
fn context_parallelism_divides_the_activations() {
    let spec = llama2_7b();
    let case = activations_only(&spec, acts(32_000, 3_200, 50_000, 20_000, 32), 2048);
    let g = case
        .run(&Parallelism {
            cp: 4,
            dp: 2,
            ..Parallelism::default()
        })
        .unwrap();
    // (35,200 + 50,000 + 20,000) / 4 = 26,300.
    assert_eq!(g.bytes, 26_300);
    assert!(g.estimate.unwrap().contains("ring attention"));
    assert!(matches!(
        case.run(&Parallelism {
            cp: 3,
            ..Parallelism::default()
        }),
        Err(SpecError::Invalid { field, .. }) if field == "--cp"
    ));
}

#[test]
fn expert_parallelism_holds_e_over_ep_experts() {
    let spec = mixtral();
    let case = states_only(&spec, Precision::Pure);
    // Pure bf16 AdamW: 8 bytes per parameter. One GPU: 46,702,792,704 params.
    assert_eq!(
        case.run(&Parallelism::default()).unwrap().bytes,
        8 * 46_702_792_704
    );
    // ep = 8 (within dp = 8): 1 expert of 8 per layer: 32·3·4096·14336 = 5,637,144,576 expert
    // params + 1,605,636,096 others = 7,242,780,672 params, 57,942,245,376 bytes.
    let ep = Parallelism {
        dp: 8,
        ep: 8,
        ..Parallelism::default()
    };
    let g = case.run(&ep).unwrap();
    assert_eq!(g.bytes, 8 * 7_242_780_672);
    // ZeRO-1 shards the dense states over dp = 8 and the experts' over dp/ep = 1.
    let g = case.run(&Parallelism { zero: 1, ..ep }).unwrap();
    let dense: u128 = 1_605_636_096;
    let experts: u128 = 5_637_144_576;
    assert_eq!(g.bytes, 4 * (dense + experts) + 4 * dense / 8 + 4 * experts);
    // Rules.
    let bad = |p: Parallelism| validate(&p, &spec).unwrap_err();
    assert!(
        matches!(bad(Parallelism { ep: 3, dp: 3, ..Parallelism::default() }), SpecError::Invalid { field, .. } if field == "--ep")
    );
    assert!(
        matches!(bad(Parallelism { ep: 4, dp: 2, ..Parallelism::default() }), SpecError::Invalid { expected, .. } if expected.contains("inside data parallelism"))
    );
    assert!(
        matches!(validate(&Parallelism { ep: 2, dp: 2, ..Parallelism::default() }, &llama2_7b()), Err(SpecError::Invalid { expected, .. }) if expected.contains("without mixture-of-experts"))
    );
}

#[test]
fn tensor_parallel_rules() {
    let spec = llama2_70b();
    let ok = |tp| {
        validate(
            &Parallelism {
                tp,
                ..Parallelism::default()
            },
            &spec,
        )
    };
    // 64 heads, 8 KV heads, F = 28672: tp 8 splits them evenly; tp 16 keeps one whole KV head
    // per rank (Megatron); tp 3 does not divide the heads.
    assert!(ok(8).is_ok());
    assert!(ok(16).is_ok());
    assert!(
        matches!(ok(3), Err(SpecError::Invalid { expected, .. }) if expected.contains("64 attention heads"))
    );
    // tp > KV heads: an estimate (K and V stay one whole head per rank).
    let g = states_only(&spec, Precision::Mixed)
        .run(&Parallelism {
            tp: 16,
            ..Parallelism::default()
        })
        .unwrap();
    assert!(g.estimate.unwrap().contains("key/value heads"));
    // 24 heads, 6 KV heads: tp 4 divides the heads but not the KV heads.
    let mut gqa = llama2_7b();
    let mut layer = gqa.stacks[0].layers.kinds()[0].clone();
    if let Attention::Standard(a) = &mut layer.attention {
        a.num_heads = 24;
        a.num_kv_heads = 6;
    }
    gqa.stacks[0].layers = Layers::repeat(layer, 32);
    assert!(matches!(
        validate(&Parallelism { tp: 4, ..Parallelism::default() }, &gqa),
        Err(SpecError::Invalid { expected, .. }) if expected.contains("6 key/value heads")
    ));
    // An MLP width tp does not divide.
    let mut narrow = llama2_7b();
    let mut layer = narrow.stacks[0].layers.kinds()[0].clone();
    if let Ffn::Dense(m) = &mut layer.ffn {
        m.intermediate = 1000;
    }
    narrow.stacks[0].layers = Layers::repeat(layer, 32);
    assert!(matches!(
        validate(&Parallelism { tp: 16, ..Parallelism::default() }, &narrow),
        Err(SpecError::Invalid { expected, .. }) if expected.contains("MLP width 1000")
    ));
    // Sequence parallelism splits the sequence over tp: s must divide.
    let case = activations_only(&spec, none(), 4100);
    assert!(matches!(
        case.run(&Parallelism { tp: 8, sequence_parallel: true, ..Parallelism::default() }),
        Err(SpecError::Invalid { field, .. }) if field == "--tp"
    ));
    // Sequence parallelism without tensor parallelism does nothing, and says so.
    let g = activations_only(&spec, none(), 4096)
        .run(&Parallelism {
            sequence_parallel: true,
            ..Parallelism::default()
        })
        .unwrap();
    assert!(g.notes.iter().any(|n| n.contains("needs tp > 1")));
}

#[test]
fn pipeline_and_zero_rules() {
    let spec = llama2_7b();
    let check = |p: Parallelism| validate(&p, &spec);
    let d = Parallelism::default();
    let field = |r: Result<(), SpecError>| match r {
        Err(SpecError::Invalid { field, .. } | SpecError::Zero { field }) => field,
        other => panic!("expected an error, got {other:?}"),
    };
    // 32 layers: pp 3 leaves stages unequal (strict rule); pp 4 × interleave 3 too.
    assert_eq!(field(check(Parallelism { pp: 3, ..d })), "--pp");
    assert_eq!(
        field(check(Parallelism {
            pp: 4,
            interleave: 3,
            micro_batches: 4,
            ..d
        })),
        "--interleave"
    );
    assert!(
        check(Parallelism {
            pp: 4,
            interleave: 2,
            micro_batches: 8,
            ..d
        })
        .is_ok()
    );
    // Interleaving needs a pipeline, and micro-batches in groups of pp.
    assert_eq!(
        field(check(Parallelism { interleave: 2, ..d })),
        "--interleave"
    );
    assert_eq!(
        field(check(Parallelism {
            pp: 4,
            interleave: 2,
            micro_batches: 6,
            ..d
        })),
        "--micro-batches"
    );
    // ZeRO stages, offload, hybrid shard.
    assert_eq!(field(check(Parallelism { zero: 4, ..d })), "--zero");
    assert_eq!(
        field(check(Parallelism {
            offload_optimizer: true,
            ..d
        })),
        "--offload-optimizer"
    );
    assert_eq!(
        field(check(Parallelism {
            offload_params: true,
            zero: 2,
            offload_optimizer: true,
            ..d
        })),
        "--offload-params"
    );
    assert_eq!(
        field(check(Parallelism {
            shard_group: Some(3),
            zero: 3,
            dp: 8,
            ..d
        })),
        "--shard-group"
    );
    assert_eq!(
        field(check(Parallelism {
            shard_group: Some(2),
            dp: 8,
            ..d
        })),
        "--shard-group"
    );
    // A degree of 0.
    for p in [
        Parallelism { dp: 0, ..d },
        Parallelism { tp: 0, ..d },
        Parallelism { pp: 0, ..d },
        Parallelism { cp: 0, ..d },
        Parallelism { ep: 0, ..d },
        Parallelism {
            micro_batches: 0,
            ..d
        },
        Parallelism { interleave: 0, ..d },
        Parallelism {
            shard_group: Some(0),
            zero: 3,
            ..d
        },
    ] {
        assert!(matches!(check(p), Err(SpecError::Zero { .. })), "{p:?}");
    }
}

#[test]
fn a_million_layers_split_over_a_thousand_stages_cost_little() {
    let spec = design_spec(
        &Design {
            hidden: 64,
            layers: 1_000_000,
            vocab: Some(100),
            heads: Some(4),
            ffn: Some(128),
            ..Design::default()
        },
        Style::Llama,
    )
    .unwrap();
    let case = Case {
        spec: &spec,
        held: true,
        precision: Precision::Mixed,
        activations: acts(1_000_000, 1_000_000, 0, 0, 1_000_000),
        seq: 64,
    };
    let g = case
        .run(&Parallelism {
            pp: 1000,
            micro_batches: 1000,
            ..Parallelism::default()
        })
        .unwrap();
    // Stage 0: 1,000 layers; per layer 4·64² + 3·64·128 + 2·64 = 41,088 params at 16 bytes,
    // + the embedding 6,400 params; activations 1,000 micro-batches × 1,000 layers × 2 bytes.
    assert_eq!(g.stage, 0);
    assert_eq!(g.bytes, (1000 * 41_088 + 6_400) * 16 + 2_000_000);
}

#[test]
fn a_quantized_base_and_adapters() {
    let spec = llama2_7b();
    let lay = layout(&spec).unwrap();
    // A QLoRA-style base: frozen, its bytes given as one total on the first group (as
    // `train()` does with `memory::weight_lines`), plus one fp32 adapter group per layer.
    let mut h = held(&lay, ParamDtype::Bf16);
    for (i, x) in h.iter_mut().enumerate() {
        x.trainable = false;
        x.stored_bytes = Some(if i == 0 { 3_600_000_000 } else { 0 });
    }
    let q = h
        .iter()
        .find(|x| x.kind == llmsize_core::layout::TensorKind::AttnQ)
        .unwrap()
        .clone();
    h.push(Held {
        elements: 16 * 8192,
        tensors: 32,
        matrix: None,
        hidden_matrix: true,
        trainable: true,
        dtype: ParamDtype::Fp32,
        stored_bytes: None,
        adapter: true,
        ..q
    });
    let run = |p: &Parallelism| {
        per_gpu(&ParallelInput {
            spec: &spec,
            layout: &lay,
            held: &h,
            precision: Precision::Pure,
            optimizer: Optimizer::AdamW,
            parallel: p,
            activations: &none(),
            batch: 1,
            seq: 2048,
        })
        .unwrap()
    };
    // One GPU: the stored base (3,600,000,000) + the adapters' 4,194,304 fp32 params ×
    // (4 weights + 4 gradients + 8 Adam states) = 67,108,864: 3,667,108,864.
    let g = run(&Parallelism::default());
    assert_eq!(g.bytes, 3_667_108_864);
    assert!(g.estimate.is_none());
    // Two stages: each holds 16 layers' adapters (33,554,432); the base's bytes follow the
    // parameters (an estimate, said so); the last stage's head (131,072,000 params) and final
    // norm against the first's embedding: the last leads by its norm, 4,096 of 6,738,415,616
    // parameters' share of 3.6 GB.
    let g = run(&Parallelism {
        pp: 2,
        micro_batches: 2,
        ..Parallelism::default()
    });
    assert_eq!(g.stage, 1);
    let last_params: u128 = 16 * 202_383_360 + 4096 + 131_072_000;
    assert_eq!(
        g.bytes,
        3_600_000_000 * last_params / 6_738_415_616 + 33_554_432
    );
    assert!(g.estimate.unwrap().contains("quantized base"));
    // Tensor parallelism keeps the adapters whole on every rank (an estimate).
    let g = run(&Parallelism {
        tp: 2,
        ..Parallelism::default()
    });
    assert!(g.estimate.unwrap().contains("LoRA adapters are kept whole"));
}

#[test]
fn every_combination_is_an_answer_or_an_error_never_a_panic() {
    // d 64, 4 layers, 4 heads of 16 with 2 KV heads, 4 experts of 128, top-2.
    let mut spec = design_spec(
        &Design {
            hidden: 64,
            layers: 4,
            vocab: Some(100),
            heads: Some(4),
            kv_heads: Some(2),
            ffn: Some(128),
            ctx: Some(64),
        },
        Style::Llama,
    )
    .unwrap();
    let mut layer = spec.stacks[0].layers.kinds()[0].clone();
    let dense = layer.clone();
    layer.ffn = Ffn::Moe(Moe {
        num_experts: 4,
        experts_per_token: 2,
        expert: Mlp {
            hidden: 64,
            intermediate: 128,
            gated: true,
            up_bias: false,
            down_bias: false,
        },
        router_bias: llmsize_core::spec::RouterBias::None,
        router: true,
        shared: None,
        shared_gate: false,
    });
    // A dense first layer, then MoE layers: stages hold different mixes.
    spec.stacks[0].layers = Layers::from_pattern([false, true, true, true], |moe| {
        if *moe { layer.clone() } else { dense.clone() }
    });
    let case = Case {
        spec: &spec,
        held: true,
        precision: Precision::Mixed,
        activations: acts(4_000, 400, 1_000, 500, 4),
        seq: 64,
    };
    let (mut answers, mut errors) = (0, 0);
    for dp in [1, 2, 4] {
        for tp in [1, 2, 4] {
            for pp in [1, 2, 4] {
                for zero in 0..=3u8 {
                    for (ep, cp, interleave, m) in [
                        (1, 1, 1, 1),
                        (2, 1, 1, 8),
                        (1, 2, 2, 4),
                        (4, 1, 1, 2),
                        (2, 2, 1, 3),
                    ] {
                        for offload in [false, true] {
                            let p = Parallelism {
                                dp,
                                tp,
                                pp,
                                cp,
                                ep,
                                zero,
                                interleave,
                                micro_batches: m,
                                sequence_parallel: tp > 1,
                                offload_optimizer: offload,
                                offload_params: offload && zero == 3,
                                shard_group: None,
                            };
                            match case.run(&p) {
                                Ok(g) => {
                                    answers += 1;
                                    assert_eq!(sum(&g.terms), g.bytes, "{p:?}");
                                    assert_eq!(sum(&g.cpu_terms), g.cpu_bytes, "{p:?}");
                                    assert!(g.stage < pp);
                                    assert_eq!(g.gpus, dp * tp * pp * cp);
                                    if pp > 1 {
                                        assert!(g.estimate.is_some(), "mixed stages: {p:?}");
                                    }
                                }
                                Err(SpecError::Invalid { .. } | SpecError::Zero { .. }) => {
                                    errors += 1;
                                }
                                Err(e) => panic!("{p:?}: {e}"),
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(
        answers > 200 && errors > 100,
        "{answers} answers, {errors} errors"
    );
}

#[test]
fn more_gpus_than_the_bound_are_refused_naming_the_degrees() {
    let spec = llama2_7b();
    // 2^20 GPUs in all is the bound (limits::MAX_GPUS): dp 2^17 × tp 8 passes, dp 2^18 × tp 8
    // does not, nor a product past u64::MAX.
    let p = |dp, tp| Parallelism {
        dp,
        tp,
        ..Parallelism::default()
    };
    assert!(validate(&p(1 << 17, 8), &spec).is_ok());
    for (dp, tp, found) in [
        (1 << 18, 8, "262144·8·1·1"),
        (u64::MAX, 8, "18446744073709551615·8·1·1"),
    ] {
        assert_eq!(
            validate(&p(dp, tp), &spec).unwrap_err().to_string(),
            format!(
                "`--dp·--tp·--pp·--cp` = {found} is invalid: expected at most 1,048,576 GPUs in all"
            )
        );
    }
}

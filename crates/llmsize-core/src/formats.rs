//! Storage formats: how many bytes a tensor takes in bf16, FP8, LLM.int8, NF4, GPTQ, AWQ or
//! a GGUF quantization mix, from each format's real layout (blocks, groups, scales, zeros).
//!
//! Sizes are computed per tensor in bits and rounded up to whole blocks and bytes, never from
//! a bytes-per-parameter constant. Which tensors a format leaves in 16 bits (embeddings,
//! output head, norms, biases) follows what each tool really does; GGUF mixes follow
//! llama.cpp's per-tensor rules (`llama_tensor_get_type` in `src/llama-quant.cpp`).

use crate::checked::Checked;
use crate::layout::{Tensor, TensorKind};

pub use crate::ggml::GgmlType;

/// A llama.cpp quantization preset (`llama-quantize` file type).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(non_camel_case_types, reason = "llama.cpp's names")]
pub enum GgufPreset {
    /// `Q2_K`.
    Q2_K,
    /// `Q3_K_S`.
    Q3_K_S,
    /// `Q3_K_M`.
    Q3_K_M,
    /// `Q3_K_L`.
    Q3_K_L,
    /// `Q4_0`.
    Q4_0,
    /// `Q4_1`.
    Q4_1,
    /// `Q4_K_S`.
    Q4_K_S,
    /// `Q4_K_M`.
    Q4_K_M,
    /// `Q5_0`.
    Q5_0,
    /// `Q5_1`.
    Q5_1,
    /// `Q5_K_S`.
    Q5_K_S,
    /// `Q5_K_M`.
    Q5_K_M,
    /// `Q6_K`.
    Q6_K,
    /// `Q8_0`.
    Q8_0,
    /// `IQ4_NL`.
    IQ4_NL,
    /// `IQ4_XS`.
    IQ4_XS,
}

impl GgufPreset {
    /// All presets, for listings and tests.
    pub const ALL: [GgufPreset; 16] = [
        GgufPreset::Q2_K,
        GgufPreset::Q3_K_S,
        GgufPreset::Q3_K_M,
        GgufPreset::Q3_K_L,
        GgufPreset::Q4_0,
        GgufPreset::Q4_1,
        GgufPreset::Q4_K_S,
        GgufPreset::Q4_K_M,
        GgufPreset::Q5_0,
        GgufPreset::Q5_1,
        GgufPreset::Q5_K_S,
        GgufPreset::Q5_K_M,
        GgufPreset::Q6_K,
        GgufPreset::Q8_0,
        GgufPreset::IQ4_NL,
        GgufPreset::IQ4_XS,
    ];

    /// Lowercase name as typed on the command line (`q4_k_m`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            GgufPreset::Q2_K => "q2_k",
            GgufPreset::Q3_K_S => "q3_k_s",
            GgufPreset::Q3_K_M => "q3_k_m",
            GgufPreset::Q3_K_L => "q3_k_l",
            GgufPreset::Q4_0 => "q4_0",
            GgufPreset::Q4_1 => "q4_1",
            GgufPreset::Q4_K_S => "q4_k_s",
            GgufPreset::Q4_K_M => "q4_k_m",
            GgufPreset::Q5_0 => "q5_0",
            GgufPreset::Q5_1 => "q5_1",
            GgufPreset::Q5_K_S => "q5_k_s",
            GgufPreset::Q5_K_M => "q5_k_m",
            GgufPreset::Q6_K => "q6_k",
            GgufPreset::Q8_0 => "q8_0",
            GgufPreset::IQ4_NL => "iq4_nl",
            GgufPreset::IQ4_XS => "iq4_xs",
        }
    }

    /// The type most tensors get.
    #[must_use]
    pub fn base(self) -> GgmlType {
        use GgufPreset as P;
        match self {
            P::Q2_K => GgmlType::Q2_K,
            P::Q3_K_S | P::Q3_K_M | P::Q3_K_L => GgmlType::Q3_K,
            P::Q4_0 => GgmlType::Q4_0,
            P::Q4_1 => GgmlType::Q4_1,
            P::Q4_K_S | P::Q4_K_M => GgmlType::Q4_K,
            P::Q5_0 => GgmlType::Q5_0,
            P::Q5_1 => GgmlType::Q5_1,
            P::Q5_K_S | P::Q5_K_M => GgmlType::Q5_K,
            P::Q6_K => GgmlType::Q6_K,
            P::Q8_0 => GgmlType::Q8_0,
            P::IQ4_NL => GgmlType::IQ4_NL,
            P::IQ4_XS => GgmlType::IQ4_XS,
        }
    }

    /// llama.cpp's published file size for Llama-3-8B in GiB (`tools/quantize/quantize.cpp`,
    /// `QUANT_OPTIONS`), where it gives one; used by tests to check the per-tensor rules.
    #[must_use]
    pub fn published_llama3_8b_gib(self) -> Option<f64> {
        use GgufPreset as P;
        Some(match self {
            P::Q2_K => 2.96,
            P::Q3_K_S => 3.41,
            P::Q3_K_M => 3.74,
            P::Q3_K_L => 4.03,
            P::Q4_0 => 4.34,
            P::Q4_1 => 4.78,
            P::Q4_K_S => 4.37,
            P::Q4_K_M => 4.58,
            P::Q5_0 | P::Q5_K_S => 5.21,
            P::Q5_1 => 5.65,
            P::Q5_K_M => 5.33,
            P::Q6_K => 6.14,
            P::Q8_0 => 7.96,
            P::IQ4_NL | P::IQ4_XS => return None,
        })
    }
}

/// What the model around a tensor looks like, for llama.cpp's rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MixContext {
    /// Query heads / key-value heads (`n_gqa`).
    pub gqa: u64,
    /// Routed experts (0 for dense).
    pub experts: u64,
    /// llama.cpp's `LLM_TYPE_70B` special case (80 layers, d = 8192).
    pub is_70b: bool,
    /// The model has an output matrix of its own (else the token table plays the output).
    pub has_output: bool,
}

/// llama.cpp's `use_more_bits`: the first and last eighth of the layers, and every third in
/// between.
fn use_more_bits(i: u64, n: u64) -> bool {
    match i.checked_sub(n / 8) {
        None => true,
        Some(j) => i >= seven_eighths(n) || j % 3 == 2,
    }
}

/// `7·n/8` as llama.cpp computes it, without overflowing for any `n`.
fn seven_eighths(n: u64) -> u64 {
    // 7·n < 2^67 fits u128, and 7·n/8 < n fits u64.
    (Checked::new(u128::from(n)) * 7u128 / 8u128)
        .ok()
        .and_then(|v| u64::try_from(v).ok())
        .unwrap_or(n)
}

/// The layers of `range` (in a stack of `n`) split into classes that every per-layer rule of
/// [`gguf_type`] treats alike, as `(a representative layer, layers in the class)`. The rules
/// compare the index with 2, 4, n/16, n/8 and 7n/8 and test `(i − n/8) mod 3`, so a run of a
/// million layers is a handful of classes, not a million calls.
#[expect(
    clippy::arithmetic_side_effects,
    reason = "every value lies in `range` (the cuts are clamped to it and sorted, so x ≤ y), \
              every difference is taken after the comparison that makes it non-negative \
              (y ≥ x ≥ n/8 in the middle band, `more` ≤ y − x), and the first layer of a class \
              is x plus at most 2, below y, computed only when that class is not empty"
)]
fn layer_classes(range: std::ops::Range<u64>, n: u64, mut class: impl FnMut(u64, u64)) {
    if range.end.checked_sub(range.start) == Some(1) {
        // A run of one layer (alternating kinds) is its own class.
        return class(range.start, 1);
    }
    let eighth = n / 8;
    let mut cuts = [
        range.start,
        range.end,
        2,
        4,
        n / 16,
        eighth,
        seven_eighths(n),
    ];
    for c in &mut cuts {
        *c = (*c).clamp(range.start, range.end);
    }
    cuts.sort_unstable();
    for w in cuts.windows(2) {
        let &[x, y] = w else { continue };
        if x == y {
            continue;
        }
        if x >= eighth && y <= seven_eighths(n) {
            // Middle band: every third layer gets more bits; j = i − n/8, j mod 3 = 2.
            let below = |m: u64| m / 3; // #{j < m : j mod 3 = 2}
            let more = below(y - eighth) - below(x - eighth);
            if more > 0 {
                class(x + (2 + 3 - (x - eighth) % 3) % 3, more);
            }
            if y - x > more {
                let first_less = if (x - eighth) % 3 == 2 { x + 1 } else { x };
                class(first_less, y - x - more);
            }
        } else {
            class(x, y - x);
        }
    }
}

/// The ggml type llama.cpp gives a tensor under a preset (for the K-quant and legacy presets).
#[must_use]
pub fn gguf_type(t: &Tensor, layer: u64, preset: GgufPreset, ctx: MixContext) -> GgmlType {
    use GgufPreset as P;
    use TensorKind as K;
    let base = preset.base();
    // llama-quantize leaves 1-D tensors, routers and convolution kernels (`ssm_conv1d`,
    // LFM2's `shortconv.conv`) in F32.
    if t.is_vector() || matches!(t.kind, K::Router | K::SharedExpertGate | K::Block) {
        return GgmlType::F32;
    }
    if matches!(t.kind, K::PositionEmbedding | K::TokenTypeEmbedding) {
        return GgmlType::F16;
    }
    let i = layer;
    let n = t.stack_layers.max(1);
    let is_output = t.kind == K::Output || (!ctx.has_output && t.kind == K::TokenEmbedding);
    let chosen = if is_output {
        if !t.cols.is_multiple_of(256) || base == GgmlType::Q8_0 {
            GgmlType::Q8_0
        } else {
            GgmlType::Q6_K
        }
    } else {
        match t.kind {
            K::AttnV => {
                let mut ty = match preset {
                    P::Q2_K => {
                        if ctx.gqa >= 4 {
                            GgmlType::Q4_K
                        } else {
                            GgmlType::Q3_K
                        }
                    }
                    P::Q3_K_M => {
                        if i < 2 {
                            GgmlType::Q5_K
                        } else {
                            GgmlType::Q4_K
                        }
                    }
                    P::Q3_K_L => GgmlType::Q5_K,
                    P::IQ4_NL | P::IQ4_XS if ctx.gqa >= 4 => GgmlType::Q5_K,
                    P::Q4_K_M | P::Q5_K_M if use_more_bits(i, n) => GgmlType::Q6_K,
                    P::Q4_K_S if i < 4 => GgmlType::Q5_K,
                    _ => base,
                };
                if ctx.is_70b && matches!(ty, GgmlType::Q3_K | GgmlType::Q4_K) {
                    ty = GgmlType::Q5_K;
                }
                if ctx.experts == 8 {
                    ty = GgmlType::Q8_0;
                }
                ty
            }
            K::FfnDown | K::ExpertDown => match preset {
                P::Q2_K => GgmlType::Q3_K,
                P::Q3_K_M => {
                    if i < n / 16 {
                        GgmlType::Q5_K
                    } else {
                        GgmlType::Q4_K
                    }
                }
                P::Q3_K_L => GgmlType::Q5_K,
                P::Q4_K_M | P::Q5_K_M if use_more_bits(i, n) => GgmlType::Q6_K,
                P::IQ4_NL | P::IQ4_XS | P::Q4_K_S if i < n / 8 => GgmlType::Q5_K,
                _ => base,
            },
            K::AttnOutput => {
                if ctx.experts == 8 {
                    match preset {
                        P::Q2_K | P::Q3_K_S | P::Q3_K_M | P::Q4_K_S | P::Q4_K_M | P::IQ4_NL => {
                            GgmlType::Q5_K
                        }
                        _ => base,
                    }
                } else {
                    match preset {
                        P::Q2_K => GgmlType::Q3_K,
                        P::Q3_K_M => GgmlType::Q4_K,
                        P::Q3_K_L => GgmlType::Q5_K,
                        _ => base,
                    }
                }
            }
            K::AttnQkv => match preset {
                P::Q3_K_M | P::Q3_K_L => GgmlType::Q4_K,
                P::Q4_K_M => GgmlType::Q5_K,
                P::Q5_K_M => GgmlType::Q6_K,
                _ => base,
            },
            _ => base,
        }
    };
    let (block, _) = chosen.block();
    if t.cols.is_multiple_of(block) {
        chosen
    } else {
        chosen.fallback()
    }
}

/// A set of tensor kinds, small enough to keep [`WeightFormat`] `Copy`: which kinds a
/// quantized format converts (the rest stay as stored, 16-bit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KindSet(u64);

impl KindSet {
    /// No kind.
    pub const EMPTY: KindSet = KindSet(0);

    /// The linear layers inside the blocks (attention and MLP projections, experts, an extra
    /// part's matrices): what the Hugging Face quantizers convert by default, leaving
    /// embeddings, the output head, routers, norms and biases as stored.
    #[must_use]
    pub fn block_matrices() -> KindSet {
        use TensorKind as K;
        [
            K::AttnQ,
            K::AttnK,
            K::AttnV,
            K::AttnQkv,
            K::AttnOutput,
            K::AttnQA,
            K::AttnKvA,
            K::AttnKvB,
            K::FfnGate,
            K::FfnUp,
            K::FfnDown,
            K::ExpertGate,
            K::ExpertUp,
            K::ExpertDown,
            K::SharedGate,
            K::SharedUp,
            K::SharedDown,
            K::Matrix,
        ]
        .into_iter()
        .fold(KindSet::EMPTY, KindSet::with)
    }

    /// The bit of a kind (`TensorKind` has fewer than 64 variants).
    fn bit(kind: TensorKind) -> u64 {
        1u64 << (kind as u32 % 64)
    }

    /// This set and `kind`.
    #[must_use]
    pub fn with(self, kind: TensorKind) -> KindSet {
        KindSet(self.0 | Self::bit(kind))
    }

    /// This set without `kind`.
    #[must_use]
    pub fn without(self, kind: TensorKind) -> KindSet {
        KindSet(self.0 & !Self::bit(kind))
    }

    /// Whether `kind` is in the set.
    #[must_use]
    pub fn contains(self, kind: TensorKind) -> bool {
        self.0 & Self::bit(kind) != 0
    }
}

/// Where the scales of an FP8 (E4M3) weight sit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fp8Scales {
    /// One scale for the whole matrix.
    Tensor,
    /// One scale per output row (`weight_scale` `[N, 1]`).
    Channel,
    /// One scale per `rows × cols` block (`weight_scale_inv` `[⌈N/rows⌉, ⌈K/cols⌉]`,
    /// DeepSeek-V3's 128×128).
    Block {
        /// Block height (output features).
        rows: u32,
        /// Block width (input features).
        cols: u32,
    },
}

/// How an integer-quantized weight is packed, which decides the tensors beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IntPacking {
    /// GPTQ (`AutoGPTQ`/optimum/GPTQModel, format v1): `qweight` int32 `[⌈K·b/32⌉, N]`,
    /// `qzeros` int32 `[G, ⌈N·b/32⌉]` (stored even when `sym`), `scales` fp16 `[G, N]`,
    /// `g_idx` int32 `[K]` (stored whatever `desc_act` says; it only orders the groups).
    Gptq,
    /// AWQ (`AutoAWQ` GEMM, transformers' `AwqConfig`): `qweight` int32 `[K, ⌈N·b/32⌉]`,
    /// `qzeros` int32 `[G, ⌈N·b/32⌉]` (when `zero_point`), `scales` fp16 `[G, N]`.
    Awq {
        /// `zero_point` (asymmetric): `qzeros` stored.
        zero: bool,
    },
    /// compressed-tensors `pack-quantized`: `weight_packed` int32 `[N, ⌈K·b/32⌉]`,
    /// `weight_scale` `[N, G]` in the model dtype, `weight_shape` int64 `[2]`, and when
    /// asymmetric `weight_zero_point` int32 `[⌈N·b/32⌉, G]`; with `actorder` `weight_g_idx`
    /// int32 `[K]`.
    Packed {
        /// Asymmetric: zero points stored.
        zero: bool,
        /// `actorder` set: `weight_g_idx` stored.
        g_idx: bool,
    },
    /// compressed-tensors `int-quantized` (W8A8 int8): `weight` int8 `[N, K]` unpacked,
    /// `weight_scale` `[N, G]` in the model dtype, int8 zero points of the same shape when
    /// asymmetric.
    Plain {
        /// Asymmetric: zero points stored.
        zero: bool,
    },
    /// torchao int4 weight-only: packed nibbles and a bf16 scale and a bf16 zero per group.
    Torchao,
}

/// The layout of a quantized weight matrix, from the format's real tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// OCP MXFP4 (gpt-oss): FP4 E2M1 values in blocks of 32 along the input, each block 16
    /// bytes (`*_blocks`) with one 8-bit E8M0 scale (`*_scales`).
    Mxfp4,
    /// NVFP4: FP4 E2M1 values in blocks of 16 along the input (8 bytes), one FP8 E4M3 scale
    /// per block, and per tensor an fp32 global weight scale and an fp32 input scale.
    Nvfp4,
    /// FP8 E4M3 values, one byte each, and their scales.
    Fp8 {
        /// Where the scales sit.
        scales: Fp8Scales,
        /// Bytes of one scale (4 for fp32, 2 for a bf16 `weight_scale`).
        scale_bytes: u8,
        /// A static activation scale (`input_scale`, fp32) is stored beside the weight.
        input_scale: bool,
    },
    /// Integers of `bits` bits in groups of `group` along the input (0: one group over the
    /// whole row, per-channel), a 16-bit scale per group.
    Int {
        /// Bits per weight (2, 3, 4 or 8).
        bits: u8,
        /// Group size; 0 for per-channel (`group_size: -1`).
        group: u32,
        /// Packing and side tensors.
        packing: IntPacking,
    },
    /// bitsandbytes 4-bit (NF4 or FP4 alike in bytes): packed nibbles, an absmax per 64
    /// weights (fp32, or int8 with an fp32 scale per 256 blocks and a 256-entry fp32 map when
    /// `double_quant`), and the 16-entry fp32 code table.
    Bnb4 {
        /// `bnb_4bit_use_double_quant`.
        double_quant: bool,
        /// FP4 instead of NF4 (same bytes; the label differs).
        fp4: bool,
    },
    /// bitsandbytes `LLM.int8()`: int8 weights and one fp32 scale per output row (`SCB`).
    Bnb8,
}

/// A quantization as a release ships it: the layout of a quantized matrix and which tensor
/// kinds get it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Quant {
    /// The layout of a quantized matrix.
    pub scheme: Scheme,
    /// The kinds quantized; every other tensor stays as stored (16-bit).
    pub kinds: KindSet,
}

/// A weight storage format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WeightFormat {
    /// Every tensor in 32-bit floats.
    Fp32,
    /// Every tensor in fp16.
    Fp16,
    /// Every tensor in bf16.
    Bf16,
    /// FP8 (E4M3) linear weights with one fp32 scale per tensor (compressed-tensors/vLLM
    /// per-tensor), or per 128×128 block (DeepSeek-V3 style) when `block` is true.
    Fp8 {
        /// 128×128 block scales instead of one per tensor.
        block: bool,
    },
    /// bitsandbytes `LLM.int8()`: int8 weights and one fp32 scale per output row (`SCB`).
    Int8,
    /// torchao int4 weight-only, group 128: packed int4 and a bf16 scale and zero per group.
    Int4,
    /// bitsandbytes NF4: 4-bit in blocks of 64 with an fp32 absmax; with double quantization
    /// the absmax is int8 with an fp32 scale per 256 blocks.
    Nf4 {
        /// `bnb_4bit_use_double_quant`.
        double_quant: bool,
    },
    /// GPTQ (`AutoGPTQ` layout) 4-bit, group 128: `qweight` int32 `[K/8, N]`, `scales` fp16
    /// `[K/g, N]`, `qzeros` int32 `[K/g, N/8]`, `g_idx` int32 `[K]`.
    Gptq4,
    /// AWQ 4-bit, group 128: `qweight` int32 `[K, N/8]`, `qzeros` int32 `[K/g, N/8]`,
    /// `scales` fp16 `[K/g, N]`.
    Awq4,
    /// A llama.cpp GGUF preset (per-tensor mix; norms and biases F32).
    Gguf(GgufPreset),
    /// A quantization with its own layout and choice of tensors: a release's
    /// `quantization_config` (gpt-oss's MXFP4 experts, DeepSeek-V3's FP8 blocks, a GPTQ of
    /// 3 bits in groups of 32, …), or a `--dtype` the variants above do not name (`mxfp4`,
    /// `nvfp4`, `w4a16`, `w8a8`, `fp8-channel`, `gptq-8bit`).
    Quantized(Quant),
}

/// Group size of GPTQ/AWQ/int4.
pub const GROUP_SIZE: u64 = 128;

impl WeightFormat {
    /// Every accepted name, for help and error messages.
    #[must_use]
    pub fn names() -> Vec<&'static str> {
        let mut v = vec![
            "bf16",
            "fp16",
            "fp32",
            "fp8",
            "fp8-block",
            "fp8-channel",
            "int8",
            "int4",
            "nf4",
            "nf4-dq",
            "bnb-fp4",
            "gptq-2bit",
            "gptq-3bit",
            "gptq-4bit",
            "gptq-8bit",
            "awq-4bit",
            "w4a16",
            "w8a16",
            "w8a8",
            "mxfp4",
            "nvfp4",
        ];
        v.extend(GgufPreset::ALL.iter().map(|p| p.name()));
        v
    }

    /// A scheme applied to the block matrices, as a `--dtype` name means it.
    fn of(scheme: Scheme) -> Self {
        WeightFormat::Quantized(Quant {
            scheme,
            kinds: KindSet::block_matrices(),
        })
    }

    /// GPTQ of `bits` bits, group 128 (the common release).
    fn gptq(bits: u8) -> Self {
        Self::of(Scheme::Int {
            bits,
            group: 128,
            packing: IntPacking::Gptq,
        })
    }

    /// Parse a name (`bf16`, `q4_k_m`, `gptq-4bit`, `mxfp4`, …), case-insensitively.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        let n = name.trim().to_ascii_lowercase();
        Some(match n.as_str() {
            "fp32" | "f32" | "float32" => WeightFormat::Fp32,
            "fp16" | "f16" | "float16" => WeightFormat::Fp16,
            "bf16" | "bfloat16" => WeightFormat::Bf16,
            "fp8" | "fp8-e4m3" => WeightFormat::Fp8 { block: false },
            "fp8-block" => WeightFormat::Fp8 { block: true },
            // compressed-tensors' FP8 W8A8 (`FP8_DYNAMIC`): a bf16 scale per output channel.
            "fp8-channel" | "w8a8-fp8" | "fp8-dynamic" => Self::of(Scheme::Fp8 {
                scales: Fp8Scales::Channel,
                scale_bytes: 2,
                input_scale: false,
            }),
            "int8" | "llm.int8" => WeightFormat::Int8,
            "int4" => WeightFormat::Int4,
            "nf4" => WeightFormat::Nf4 {
                double_quant: false,
            },
            "nf4-dq" | "qlora" => WeightFormat::Nf4 { double_quant: true },
            "bnb-fp4" => Self::of(Scheme::Bnb4 {
                double_quant: false,
                fp4: true,
            }),
            "gptq-4bit" | "gptq" => WeightFormat::Gptq4,
            "gptq-2bit" => Self::gptq(2),
            "gptq-3bit" => Self::gptq(3),
            "gptq-8bit" => Self::gptq(8),
            "awq-4bit" | "awq" => WeightFormat::Awq4,
            // compressed-tensors' presets: W4A16 is int4 symmetric in groups of 128, W8A16 and
            // W8A8 int8 symmetric per output channel.
            "w4a16" => Self::of(Scheme::Int {
                bits: 4,
                group: 128,
                packing: IntPacking::Packed {
                    zero: false,
                    g_idx: false,
                },
            }),
            "w8a16" => Self::of(Scheme::Int {
                bits: 8,
                group: 0,
                packing: IntPacking::Packed {
                    zero: false,
                    g_idx: false,
                },
            }),
            "w8a8" | "w8a8-int8" => Self::of(Scheme::Int {
                bits: 8,
                group: 0,
                packing: IntPacking::Plain { zero: false },
            }),
            "mxfp4" => Self::of(Scheme::Mxfp4),
            "nvfp4" => Self::of(Scheme::Nvfp4),
            _ => WeightFormat::Gguf(*GgufPreset::ALL.iter().find(|p| p.name() == n)?),
        })
    }

    /// The name as typed (a release's quantization by the name of its family: a GPTQ of 4
    /// bits in groups of 32 is `gptq-4bit`; [`WeightFormat::describe`] gives the details).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            WeightFormat::Fp32 => "fp32",
            WeightFormat::Fp16 => "fp16",
            WeightFormat::Bf16 => "bf16",
            WeightFormat::Fp8 { block: false } => "fp8",
            WeightFormat::Fp8 { block: true } => "fp8-block",
            WeightFormat::Int8 => "int8",
            WeightFormat::Int4 => "int4",
            WeightFormat::Nf4 {
                double_quant: false,
            } => "nf4",
            WeightFormat::Nf4 { double_quant: true } => "nf4-dq",
            WeightFormat::Gptq4 => "gptq-4bit",
            WeightFormat::Awq4 => "awq-4bit",
            WeightFormat::Gguf(p) => p.name(),
            WeightFormat::Quantized(q) => q.scheme.name(),
        }
    }

    /// The layout and the tensor choice of a quantized format (`None` for plain floats and
    /// GGUF mixes, which have rules of their own).
    #[must_use]
    pub fn quant(self) -> Option<Quant> {
        let scheme = match self {
            WeightFormat::Fp32
            | WeightFormat::Fp16
            | WeightFormat::Bf16
            | WeightFormat::Gguf(_) => {
                return None;
            }
            WeightFormat::Quantized(q) => return Some(q),
            WeightFormat::Fp8 { block } => Scheme::Fp8 {
                scales: if block {
                    Fp8Scales::Block {
                        rows: 128,
                        cols: 128,
                    }
                } else {
                    Fp8Scales::Tensor
                },
                scale_bytes: 4,
                input_scale: false,
            },
            WeightFormat::Int8 => Scheme::Bnb8,
            WeightFormat::Int4 => Scheme::Int {
                bits: 4,
                group: 128,
                packing: IntPacking::Torchao,
            },
            WeightFormat::Nf4 { double_quant } => Scheme::Bnb4 {
                double_quant,
                fp4: false,
            },
            WeightFormat::Gptq4 => Scheme::Int {
                bits: 4,
                group: 128,
                packing: IntPacking::Gptq,
            },
            WeightFormat::Awq4 => Scheme::Int {
                bits: 4,
                group: 128,
                packing: IntPacking::Awq { zero: true },
            },
        };
        Some(Quant {
            scheme,
            kinds: KindSet::block_matrices(),
        })
    }

    /// Whether a matmul can run in FP8 (the weights are FP8 E4M3).
    #[must_use]
    pub fn is_fp8(self) -> bool {
        matches!(
            self.quant(),
            Some(Quant {
                scheme: Scheme::Fp8 { .. },
                ..
            })
        )
    }

    /// One line on the layout and which tensors stay 16-bit.
    #[must_use]
    pub fn describe(self) -> String {
        match self {
            WeightFormat::Fp32 => "every tensor 4 bytes per element".into(),
            WeightFormat::Fp16 | WeightFormat::Bf16 => "every tensor 2 bytes per element".into(),
            WeightFormat::Gguf(_) => {
                "llama.cpp mix: per-tensor types by llama-quantize's rules (llama-quant.cpp); norms and biases F32; file metadata not included".into()
            }
            WeightFormat::Fp8 { block: false } => {
                "block linear weights 1 byte + one fp32 scale per tensor; embeddings, head, norms, biases bf16".into()
            }
            WeightFormat::Fp8 { block: true } => {
                "block linear weights 1 byte + one fp32 scale per 128×128 block; embeddings, head, norms, biases bf16".into()
            }
            WeightFormat::Int8 => {
                "LLM.int8(): block linear weights int8 + fp32 scale per output row; embeddings, head, norms, biases bf16".into()
            }
            WeightFormat::Int4 => {
                "int4 weight-only, group 128, bf16 scale and zero per group; embeddings, head, norms, biases bf16".into()
            }
            WeightFormat::Nf4 {
                double_quant: false,
            } => {
                "NF4: block linear weights 4-bit, fp32 absmax per 64 weights; embeddings, head, norms, biases bf16".into()
            }
            WeightFormat::Nf4 { double_quant: true } => {
                "NF4 + double quantization: int8 absmax per 64 weights, fp32 scale per 256 blocks; embeddings, head, norms, biases bf16".into()
            }
            WeightFormat::Gptq4 => {
                "GPTQ 4-bit g128 (qweight, scales fp16, qzeros, g_idx); embeddings, head, norms, biases fp16".into()
            }
            WeightFormat::Awq4 => {
                "AWQ 4-bit g128 (qweight, qzeros, scales fp16); embeddings, head, norms, biases fp16".into()
            }
            WeightFormat::Quantized(_) => self.quant().map_or_else(String::new, |q| {
                format!("{}; {}", q.scheme.describe(), q.kinds.describe())
            }),
        }
    }

    /// Whether a tensor is quantized by a format converting `kinds`: matrices only (a vector
    /// — norm, bias, sinks — always stays as stored).
    fn quantizes(kinds: KindSet, t: &Tensor) -> bool {
        kinds.contains(t.kind) && !t.is_vector()
    }

    /// Parameters and bytes of a tensor over every layer that holds it, by how it is stored
    /// (`None` on overflow). llama.cpp mixes give layers of one kind different types, so a
    /// tensor can be stored several ways.
    #[must_use]
    pub fn tensor_storage(
        self,
        t: &Tensor,
        ctx: MixContext,
    ) -> Option<Vec<(u64, u64, &'static str)>> {
        let one = t.elements().ok()?;
        // Layers that every per-layer rule treats alike (the index compared with 2, 4, n/16
        // and n/8, and use_more_bits) get the same type: count layers per such signature, then
        // size each signature once, however many runs a hostile config has.
        let n = t.stack_layers.max(1);
        let signature = |i: u64| {
            usize::from(i < 2)
                | usize::from(i < 4) << 1
                | usize::from(i < n / 16) << 2
                | usize::from(i < n / 8) << 3
                | usize::from(use_more_bits(i, n)) << 4
        };
        let mut layers_of = [0u64; 32];
        let mut first_of = [0u64; 32];
        match self {
            WeightFormat::Gguf(_) if !t.layer_runs.is_empty() => {
                for r in t.layer_runs.iter() {
                    layer_classes(r.clone(), n, |layer, count| {
                        let s = signature(layer);
                        if let (Some(c), Some(f)) = (layers_of.get_mut(s), first_of.get_mut(s)) {
                            if *c == 0 {
                                *f = layer;
                            }
                            // saturates: never, the classes split the runs, so their sum is at
                            // most the stack's layer count, a u64.
                            *c = c.saturating_add(count);
                        }
                    });
                }
            }
            _ => {
                layers_of[0] = t.layers;
            }
        }
        let mut out: Vec<(u64, u64, &'static str)> = Vec::new();
        for (&count, &layer) in layers_of.iter().zip(&first_of).filter(|(c, _)| **c > 0) {
            let (bytes, storage) = self.tensor_bytes(t, layer, ctx)?;
            let (params, bytes) = (one.checked_mul(count)?, bytes.checked_mul(count)?);
            match out.iter_mut().find(|(_, _, s)| *s == storage) {
                Some((p, b, _)) => {
                    *p = p.checked_add(params)?;
                    *b = b.checked_add(bytes)?;
                }
                None => out.push((params, bytes, storage)),
            }
        }
        Some(out)
    }

    /// Bytes of one instance of a tensor (its copy in layer `layer`) and a label of how it
    /// is stored.
    #[must_use]
    pub fn tensor_bytes(
        self,
        t: &Tensor,
        layer: u64,
        ctx: MixContext,
    ) -> Option<(u64, &'static str)> {
        let (n, k) = (t.rows, t.cols); // N outputs, K inputs
        let elements = t.elements().ok()?;
        let sixteen = || Some((elements.checked_mul(2)?, "16-bit"));
        match self {
            WeightFormat::Fp32 => Some((elements.checked_mul(4)?, "fp32")),
            WeightFormat::Fp16 | WeightFormat::Bf16 => sixteen(),
            WeightFormat::Gguf(preset) => {
                let ty = gguf_type(t, layer, preset, ctx);
                let b = ty.bytes(t.copies.checked_mul(n)?, k)?;
                Some((b, ty.name()))
            }
            _ => {
                let q = self.quant()?;
                if !Self::quantizes(q.kinds, t) {
                    return sixteen();
                }
                // Each copy (a routed expert) is quantized on its own, with its own scales.
                let b = q.scheme.matrix_bytes(n, k)?.checked_mul(t.copies)?;
                Some((b, q.scheme.label()))
            }
        }
    }
}

impl Scheme {
    /// Bytes of one `n × k` matrix (N outputs, K inputs) with every side tensor its format
    /// stores (scales, zeros, `g_idx`, code tables), each rounded up to whole blocks and bytes.
    #[must_use]
    pub fn matrix_bytes(self, n: u64, k: u64) -> Option<u64> {
        let nk = n.checked_mul(k)?;
        match self {
            Scheme::Mxfp4 => {
                // 16 bytes of 32 E2M1 values + one E8M0 byte per block.
                n.checked_mul(k.div_ceil(32))?.checked_mul(17)
            }
            Scheme::Nvfp4 => {
                // 8 bytes of 16 E2M1 values + one E4M3 byte per block; fp32 global weight
                // scale and fp32 input scale per tensor.
                n.checked_mul(k.div_ceil(16))?
                    .checked_mul(9)?
                    .checked_add(8)
            }
            Scheme::Fp8 {
                scales,
                scale_bytes,
                input_scale,
            } => {
                let count = match scales {
                    Fp8Scales::Tensor => 1,
                    Fp8Scales::Channel => n,
                    Fp8Scales::Block { rows, cols } => n
                        .div_ceil(u64::from(rows).max(1))
                        .checked_mul(k.div_ceil(u64::from(cols).max(1)))?,
                };
                nk.checked_add(count.checked_mul(u64::from(scale_bytes))?)?
                    .checked_add(if input_scale { 4 } else { 0 })
            }
            Scheme::Int {
                bits,
                group,
                packing,
            } => {
                let b = u64::from(bits);
                let g = if group == 0 { k } else { u64::from(group) };
                let groups = k.div_ceil(g.max(1));
                // One 16-bit scale per group and output.
                let scales = groups.checked_mul(n)?.checked_mul(2)?;
                // `m` values of `b` bits packed into int32 words, in bytes.
                let words = |m: u64| m.checked_mul(b)?.div_ceil(32).checked_mul(4);
                let parts = match packing {
                    IntPacking::Gptq => [
                        words(k)?.checked_mul(n)?,      // qweight [⌈K·b/32⌉, N]
                        groups.checked_mul(words(n)?)?, // qzeros [G, ⌈N·b/32⌉]
                        scales,
                        k.checked_mul(4)?, // g_idx [K]
                    ],
                    IntPacking::Awq { zero } => [
                        k.checked_mul(words(n)?)?, // qweight [K, ⌈N·b/32⌉]
                        if zero {
                            groups.checked_mul(words(n)?)?
                        } else {
                            0
                        },
                        scales,
                        0,
                    ],
                    IntPacking::Packed { zero, g_idx } => [
                        n.checked_mul(words(k)?)?, // weight_packed [N, ⌈K·b/32⌉]
                        if zero {
                            words(n)?.checked_mul(groups)? // weight_zero_point [⌈N·b/32⌉, G]
                        } else {
                            0
                        },
                        scales.checked_add(16)?, // + weight_shape int64 [2]
                        if g_idx { k.checked_mul(4)? } else { 0 },
                    ],
                    IntPacking::Plain { zero } => [
                        nk.checked_mul(b)?.div_ceil(8),
                        if zero { groups.checked_mul(n)? } else { 0 }, // int8 zeros
                        scales,
                        0,
                    ],
                    IntPacking::Torchao => [
                        nk.checked_mul(b)?.div_ceil(8),
                        scales, // bf16 zero per group beside the bf16 scale
                        scales,
                        0,
                    ],
                };
                parts.iter().try_fold(0u64, |a, p| a.checked_add(*p))
            }
            Scheme::Bnb4 { double_quant, .. } => {
                let blocks = nk.div_ceil(64);
                let absmax = if double_quant {
                    // int8 absmax per block, fp32 scale per 256 blocks, 256-entry fp32 map.
                    blocks
                        .checked_add(blocks.div_ceil(256).checked_mul(4)?)?
                        .checked_add(1024)?
                } else {
                    blocks.checked_mul(4)?
                };
                // + the 16-entry fp32 code table.
                nk.div_ceil(2).checked_add(absmax)?.checked_add(64)
            }
            Scheme::Bnb8 => nk.checked_add(n.checked_mul(4)?),
        }
    }

    /// How a quantized tensor is labelled in the weight lines.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Scheme::Mxfp4 => "mxfp4",
            Scheme::Nvfp4 => "nvfp4",
            Scheme::Fp8 { .. } => "fp8",
            Scheme::Int { bits, packing, .. } => match (packing, bits) {
                (IntPacking::Gptq, 2) => "gptq int2",
                (IntPacking::Gptq, 3) => "gptq int3",
                (IntPacking::Gptq, 8) => "gptq int8",
                (IntPacking::Gptq, _) => "gptq int4",
                (IntPacking::Awq { .. }, _) => "awq int4",
                (IntPacking::Packed { .. }, 8) => "int8 packed",
                (IntPacking::Packed { .. }, _) => "int4 packed",
                (IntPacking::Plain { .. }, _) => "int8",
                (IntPacking::Torchao, _) => "int4",
            },
            Scheme::Bnb4 { fp4: false, .. } => "nf4",
            Scheme::Bnb4 { fp4: true, .. } => "fp4",
            Scheme::Bnb8 => "int8",
        }
    }

    /// The `--dtype` name of the scheme's family.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Mxfp4 => "mxfp4",
            Scheme::Nvfp4 => "nvfp4",
            Scheme::Fp8 {
                scales: Fp8Scales::Tensor,
                ..
            } => "fp8",
            Scheme::Fp8 {
                scales: Fp8Scales::Channel,
                ..
            } => "fp8-channel",
            Scheme::Fp8 {
                scales: Fp8Scales::Block { .. },
                ..
            } => "fp8-block",
            Scheme::Int { bits, packing, .. } => match (packing, bits) {
                (IntPacking::Gptq, 2) => "gptq-2bit",
                (IntPacking::Gptq, 3) => "gptq-3bit",
                (IntPacking::Gptq, 8) => "gptq-8bit",
                (IntPacking::Gptq, _) => "gptq-4bit",
                (IntPacking::Awq { .. }, _) => "awq-4bit",
                (IntPacking::Packed { .. }, 8) => "w8a16",
                (IntPacking::Packed { .. }, _) => "w4a16",
                (IntPacking::Plain { .. }, _) => "w8a8",
                (IntPacking::Torchao, _) => "int4",
            },
            Scheme::Bnb4 {
                fp4: false,
                double_quant: false,
            } => "nf4",
            Scheme::Bnb4 {
                fp4: false,
                double_quant: true,
            } => "nf4-dq",
            Scheme::Bnb4 { fp4: true, .. } => "bnb-fp4",
            Scheme::Bnb8 => "int8",
        }
    }

    /// The layout in words, with the numbers that decide the bytes.
    #[must_use]
    pub fn describe(self) -> String {
        let sixteen = |b: u8| if b == 4 { "fp32" } else { "16-bit" };
        match self {
            Scheme::Mxfp4 => "MXFP4: 4-bit E2M1 values in blocks of 32 with one 8-bit E8M0 scale per block (4.25 bits per weight)".into(),
            Scheme::Nvfp4 => "NVFP4: 4-bit E2M1 values in blocks of 16 with one FP8 E4M3 scale per block (4.5 bits per weight) and an fp32 global and input scale per tensor".into(),
            Scheme::Fp8 { scales, scale_bytes, input_scale } => format!(
                "FP8 E4M3, 1 byte per weight, {} {}{}",
                sixteen(scale_bytes),
                match scales {
                    Fp8Scales::Tensor => "scale per tensor".to_owned(),
                    Fp8Scales::Channel => "scale per output channel".to_owned(),
                    Fp8Scales::Block { rows, cols } => format!("scale per {rows}×{cols} block"),
                },
                if input_scale { " and an fp32 static input scale" } else { "" }
            ),
            Scheme::Int { bits, group, packing } => {
                let groups = if group == 0 {
                    "per output channel".to_owned()
                } else {
                    format!("in groups of {group}")
                };
                match packing {
                    IntPacking::Gptq => format!("GPTQ {bits}-bit {groups}: qweight, fp16 scales, qzeros and g_idx"),
                    IntPacking::Awq { zero } => format!("AWQ {bits}-bit {groups}: qweight, fp16 scales{}", if zero { ", qzeros" } else { " (no zero points)" }),
                    IntPacking::Packed { zero, g_idx } => format!(
                        "compressed-tensors int{bits} pack-quantized {groups}: int32-packed weights, 16-bit scales{}{}",
                        if zero { ", packed zero points" } else { " (symmetric)" },
                        if g_idx { ", g_idx" } else { "" }
                    ),
                    IntPacking::Plain { zero } => format!(
                        "int{bits} {groups}, 16-bit scales{}",
                        if zero { " and int8 zero points" } else { " (symmetric)" }
                    ),
                    IntPacking::Torchao => format!("int{bits} weight-only {groups}, bf16 scale and zero per group"),
                }
            }
            Scheme::Bnb4 { double_quant, fp4 } => format!(
                "bitsandbytes {}: 4-bit, {}",
                if fp4 { "FP4" } else { "NF4" },
                if double_quant {
                    "int8 absmax per 64 weights and an fp32 scale per 256 blocks (double quantization)"
                } else {
                    "fp32 absmax per 64 weights"
                }
            ),
            Scheme::Bnb8 => "LLM.int8(): int8 weights and an fp32 scale per output row".into(),
        }
    }
}

impl KindSet {
    /// Which tensors the set quantizes, in words: "every linear layer but …" or "only …"
    /// (embeddings, norms and biases are never quantized by these formats).
    #[must_use]
    pub fn describe(self) -> String {
        use TensorKind as K;
        if self == KindSet::block_matrices() {
            return "embeddings, head, routers, norms and biases 16-bit".into();
        }
        let groups: [(&str, &[TensorKind]); 7] = [
            (
                "attention",
                &[
                    K::AttnQ,
                    K::AttnK,
                    K::AttnV,
                    K::AttnQkv,
                    K::AttnOutput,
                    K::AttnQA,
                    K::AttnKvA,
                    K::AttnKvB,
                ],
            ),
            ("dense MLPs", &[K::FfnGate, K::FfnUp, K::FfnDown]),
            (
                "routed experts",
                &[K::ExpertGate, K::ExpertUp, K::ExpertDown],
            ),
            (
                "shared experts",
                &[K::SharedGate, K::SharedUp, K::SharedDown],
            ),
            ("routers", &[K::Router]),
            ("other matrices", &[K::Matrix]),
            ("output head", &[K::Output]),
        ];
        let (mut inside, mut outside) = (Vec::new(), Vec::new());
        for (name, kinds) in groups {
            // A group quantized in part is named as quantized; the bytes are per kind.
            if kinds.iter().any(|k| self.contains(*k)) {
                inside.push(name);
            } else {
                outside.push(name);
            }
        }
        let list = |v: &[&str]| v.join(", ");
        if inside.len() >= outside.len() {
            format!(
                "every linear layer quantized but the {}; embeddings, norms and biases 16-bit",
                list(&outside)
            )
        } else {
            format!(
                "only the {} quantized; every other tensor as stored (16-bit)",
                list(&inside)
            )
        }
    }
}

/// Element type of the KV cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KvDtype {
    /// 4 bytes.
    Fp32,
    /// 2 bytes.
    Fp16,
    /// 2 bytes.
    Bf16,
    /// 1 byte (vLLM `fp8`).
    Fp8,
    /// llama.cpp `q8_0`: 34 bytes per 32 elements.
    Q8_0,
    /// llama.cpp `q4_0`: 18 bytes per 32 elements.
    Q4_0,
}

impl KvDtype {
    /// Accepted names.
    pub const NAMES: [&'static str; 6] = ["bf16", "fp16", "fp32", "fp8", "q8_0", "q4_0"];

    /// Parse a name.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name.trim().to_ascii_lowercase().as_str() {
            "fp32" | "f32" => KvDtype::Fp32,
            "fp16" | "f16" => KvDtype::Fp16,
            "bf16" => KvDtype::Bf16,
            "fp8" | "fp8_e4m3" | "fp8-e4m3" => KvDtype::Fp8,
            "q8_0" => KvDtype::Q8_0,
            "q4_0" => KvDtype::Q4_0,
            _ => return None,
        })
    }

    /// The name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            KvDtype::Fp32 => "fp32",
            KvDtype::Fp16 => "fp16",
            KvDtype::Bf16 => "bf16",
            KvDtype::Fp8 => "fp8",
            KvDtype::Q8_0 => "q8_0",
            KvDtype::Q4_0 => "q4_0",
        }
    }

    /// (elements per block, bytes per block).
    #[must_use]
    pub fn block(self) -> (u64, u64) {
        match self {
            KvDtype::Fp32 => (1, 4),
            KvDtype::Fp16 | KvDtype::Bf16 => (1, 2),
            KvDtype::Fp8 => (1, 1),
            KvDtype::Q8_0 => (32, 34),
            KvDtype::Q4_0 => (32, 18),
        }
    }

    /// Bytes of a vector of `n` elements (rounded up to whole blocks).
    #[must_use]
    pub fn bytes(self, n: u64) -> Option<u64> {
        self.checked_bytes(n).ok()
    }

    /// Bytes of a vector of `n` elements, or the error naming the formula and `n`.
    pub fn checked_bytes(self, n: u64) -> Result<u64, crate::Overflow> {
        let (block, size) = self.block();
        (Checked::new(n).div_ceil(block) * size).get("⌈elements ÷ block⌉·bytes per block")
    }
}

#[cfg(test)]
#[allow(
    clippy::float_cmp,
    clippy::cast_precision_loss,
    reason = "bits per weight of ggml blocks are exact binary fractions"
)]
mod tests {
    use super::*;

    #[test]
    fn use_more_bits_matches_llama_cpp_for_32_layers() {
        // i < 4, i >= 28, and (i − 4) % 3 == 2 → 16 of 32 layers.
        let chosen: Vec<u64> = (0..32).filter(|&i| use_more_bits(i, 32)).collect();
        assert_eq!(
            chosen,
            [0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31]
        );
    }

    #[test]
    fn layer_classes_agree_with_every_layer() {
        // Counting layers by class equals asking use_more_bits of each layer.
        for n in [1u64, 2, 3, 7, 8, 16, 17, 24, 32, 33, 80, 95, 126] {
            for (a, b) in [(0, n), (0, n / 2), (n / 3, n), (n / 5, n - n / 7)] {
                let mut classes = Vec::new();
                layer_classes(a..b, n, |r, c| classes.push((r, c)));
                assert_eq!(classes.iter().map(|c| c.1).sum::<u64>(), b - a);
                let more: u64 = classes
                    .iter()
                    .filter(|(i, _)| use_more_bits(*i, n))
                    .map(|c| c.1)
                    .sum();
                let direct = (a..b).filter(|i| use_more_bits(*i, n)).count() as u64;
                assert_eq!(more, direct, "n={n} {a}..{b}");
                for i in a..b {
                    let class = classes.iter().find(|(r, _)| {
                        use_more_bits(*r, n) == use_more_bits(i, n)
                            && (*r < 2) == (i < 2)
                            && (*r < 4) == (i < 4)
                            && (*r < n / 16) == (i < n / 16)
                            && (*r < n / 8) == (i < n / 8)
                    });
                    assert!(class.is_some(), "n={n}: layer {i} has a class");
                }
            }
        }
        // A million layers are a handful of classes.
        let mut classes = 0;
        layer_classes(0..1_000_000, 1_000_000, |_, _| classes += 1);
        assert!(classes < 12);
    }

    #[test]
    fn block_sizes_are_the_ggml_table() {
        // bits per weight = bytes·8 / block (FORMULAS.md §6).
        let bpw = |t: GgmlType| {
            let (b, s) = t.block();
            s as f64 * 8.0 / b as f64
        };
        assert_eq!(bpw(GgmlType::Q4_K), 4.5);
        assert_eq!(bpw(GgmlType::Q6_K), 6.5625);
        assert_eq!(bpw(GgmlType::Q2_K), 2.625);
        assert_eq!(bpw(GgmlType::Q8_0), 8.5);
        assert_eq!(bpw(GgmlType::IQ4_XS), 4.25);
    }

    #[test]
    fn names_round_trip() {
        for n in WeightFormat::names() {
            assert_eq!(WeightFormat::parse(n).map(WeightFormat::name), Some(n));
        }
        assert!(WeightFormat::parse("q9_k").is_none());
    }

    #[test]
    fn every_preset_is_a_llama_cpp_file_type() {
        // The presets are named after llama.cpp's file types, listed once in `ggml`.
        let all: Vec<&str> = (0..64)
            .filter_map(crate::ggml::llama_file_type_name)
            .collect();
        for p in GgufPreset::ALL {
            let name = format!("MOSTLY_{}", p.name().to_uppercase());
            assert!(all.contains(&name.as_str()), "{name}");
        }
    }
}

/// Layout formulas, derived by hand for one 4096×4096 linear (K = N = 4096, g = 128).
#[cfg(test)]
mod layout_tests {
    use super::*;
    use crate::count::Category;

    /// A `q_proj` of `rows × cols` in layer 0 of 1 (one copy).
    pub(super) fn matrix_of(rows: u64, cols: u64) -> Tensor {
        use crate::expr::Expr;
        use crate::layout::{Form, Place, Shape};
        Tensor {
            name: crate::layout::TensorName {
                prefix: "decoder.0".into(),
                cross: false,
                local: "attn_q".into(),
                suffix: ".weight",
            },
            part: "q_proj".into(),
            kind: TensorKind::AttnQ,
            category: Category::Attention,
            place: Place::Layer { stack: 0, kind: 0 },
            shape: Shape {
                copies: Expr::Lit(1),
                active_copies: Expr::Lit(1),
                rows: Expr::Lit(rows),
                cols: Expr::Lit(cols),
                form: Form::Linear,
            },
            stack: None,
            layer_runs: std::sync::Arc::from([std::ops::Range { start: 0, end: 1 }]),
            layers: 1,
            stack_layers: 1,
            copies: 1,
            active_copies: 1,
            rows,
            cols,
            idle: false,
            frozen: false,
            gradless: false,
            fp32: false,
        }
    }

    fn matrix() -> Tensor {
        matrix_of(4096, 4096)
    }

    const CTX: MixContext = MixContext {
        gqa: 1,
        experts: 0,
        is_70b: false,
        has_output: true,
    };

    fn bytes(f: WeightFormat) -> u64 {
        f.tensor_bytes(&matrix(), 0, CTX).unwrap().0
    }

    #[test]
    fn gptq_awq_nf4_fp8_int8_int4() {
        // GPTQ: qweight 4096/8·4096·4 + scales 32·4096·2 + qzeros 32·512·4 + g_idx 4096·4
        //     = 8,388,608 + 262,144 + 65,536 + 16,384 = 8,732,672 B → 4.1640625 bpw
        //     (FORMULAS.md: 4 + 16/g + 4/g + 32/N).
        assert_eq!(bytes(WeightFormat::Gptq4), 8_732_672);
        // AWQ: the same without g_idx = 8,716,288 B → 4.15625 bpw (4 + 20/g).
        assert_eq!(bytes(WeightFormat::Awq4), 8_716_288);
        // NF4: 16,777,216/2 packed + 262,144 blocks·4 B absmax + 64 B code table.
        assert_eq!(
            bytes(WeightFormat::Nf4 {
                double_quant: false
            }),
            8_388_608 + 1_048_576 + 64
        );
        // NF4 + DQ: int8 absmax 262,144 + fp32 per 256 blocks 1,024·4 + 1,024 B map + 64.
        assert_eq!(
            bytes(WeightFormat::Nf4 { double_quant: true }),
            8_388_608 + 262_144 + 4_096 + 1_024 + 64
        );
        // FP8: 1 B per weight + one fp32 scale, or 32·32 block scales.
        assert_eq!(bytes(WeightFormat::Fp8 { block: false }), 16_777_216 + 4);
        assert_eq!(
            bytes(WeightFormat::Fp8 { block: true }),
            16_777_216 + 32 * 32 * 4
        );
        // LLM.int8(): int8 + fp32 scale per output row.
        assert_eq!(bytes(WeightFormat::Int8), 16_777_216 + 4096 * 4);
        // int4 g128: packed + bf16 scale and zero per group: 8,388,608 + 32·4096·4 → 4.25 bpw.
        assert_eq!(bytes(WeightFormat::Int4), 8_388_608 + 524_288);
        assert_eq!(bytes(WeightFormat::Bf16), 33_554_432);
    }

    #[test]
    fn hf_formats_keep_embeddings_and_vectors_16_bit() {
        let mut t = matrix();
        t.kind = TensorKind::TokenEmbedding;
        assert_eq!(
            WeightFormat::Gptq4.tensor_bytes(&t, 0, CTX).unwrap().0,
            33_554_432
        );
        t.kind = TensorKind::Norm;
        t.rows = 1;
        assert_eq!(
            WeightFormat::Nf4 { double_quant: true }
                .tensor_bytes(&t, 0, CTX)
                .unwrap()
                .0,
            8192
        );
        // GGUF keeps vectors in F32.
        let q = WeightFormat::Gguf(GgufPreset::Q4_K_M)
            .tensor_bytes(&t, 0, CTX)
            .unwrap();
        assert_eq!(q, (16_384, "F32"));
    }

    #[test]
    fn gguf_rows_not_multiple_of_a_block_fall_back() {
        // llama.cpp: Q4_K needs ne[0] % 256 == 0, else Q5_0 (32-blocks).
        let mut t = matrix();
        t.cols = 4000;
        let (b, ty) = WeightFormat::Gguf(GgufPreset::Q4_K_S)
            .tensor_bytes(&t, 0, CTX)
            .unwrap();
        assert_eq!(ty, "Q5_0");
        assert_eq!(b, 4096 * (4000 / 32) * 22);
    }
}

/// The quantized layouts of releases, derived by hand per matrix (N outputs, K inputs).
#[cfg(test)]
mod quant_layout_tests {
    use super::*;

    fn q(scheme: Scheme) -> WeightFormat {
        WeightFormat::Quantized(Quant {
            scheme,
            kinds: KindSet::block_matrices(),
        })
    }

    fn bytes(f: WeightFormat, n: u64, k: u64) -> u64 {
        f.quant().unwrap().scheme.matrix_bytes(n, k).unwrap()
    }

    #[test]
    fn mxfp4_is_blocks_of_32_with_a_byte_scale() {
        // gpt-oss expert down_proj 2880×2880: 2880·2880/2 B of E2M1 + 2880·2880/32 E8M0
        // scales = 4,147,200 + 259,200.
        assert_eq!(
            bytes(WeightFormat::parse("mxfp4").unwrap(), 2880, 2880),
            4_147_200 + 259_200
        );
        // A row of 33 inputs takes two blocks: 2·17 B.
        assert_eq!(bytes(q(Scheme::Mxfp4), 1, 33), 34);
    }

    #[test]
    fn nvfp4_is_blocks_of_16_with_an_fp8_scale_and_two_fp32_globals() {
        // 4096×4096: 16,777,216/2 packed + 16,777,216/16 E4M3 scales + 4 + 4.
        assert_eq!(
            bytes(WeightFormat::parse("nvfp4").unwrap(), 4096, 4096),
            8_388_608 + 1_048_576 + 8
        );
    }

    #[test]
    fn fp8_scales_by_tensor_channel_and_block() {
        // DeepSeek-V3 kv_a_proj_with_mqa [576, 7168]: 4,128,768 B + fp32 `weight_scale_inv`
        // [⌈576/128⌉, 7168/128] = [5, 56] → 1,120 B.
        let block = q(Scheme::Fp8 {
            scales: Fp8Scales::Block {
                rows: 128,
                cols: 128,
            },
            scale_bytes: 4,
            input_scale: false,
        });
        assert_eq!(bytes(block, 576, 7168), 4_128_768 + 5 * 56 * 4);
        // compressed-tensors FP8-dynamic: a bf16 scale per output row.
        assert_eq!(
            bytes(WeightFormat::parse("fp8-channel").unwrap(), 4096, 4096),
            16_777_216 + 4096 * 2
        );
        // Static activations add the fp32 `input_scale`.
        let static_tensor = q(Scheme::Fp8 {
            scales: Fp8Scales::Tensor,
            scale_bytes: 4,
            input_scale: true,
        });
        assert_eq!(bytes(static_tensor, 4096, 4096), 16_777_216 + 4 + 4);
    }

    #[test]
    fn gptq_of_3_and_8_bits_and_per_channel() {
        // 3-bit g128, 4096×4096: qweight [4096·3/32 = 384, 4096] int32 = 6,291,456; qzeros
        // [32, 384] int32 = 49,152; scales [32, 4096] fp16 = 262,144; g_idx 16,384.
        assert_eq!(
            bytes(WeightFormat::parse("gptq-3bit").unwrap(), 4096, 4096),
            6_291_456 + 49_152 + 262_144 + 16_384
        );
        // 8-bit per channel (`group_size: -1`): qweight [1024, 4096]·4 = 16,777,216; one
        // group: qzeros [1, 1024]·4 = 4,096, scales [1, 4096]·2 = 8,192; g_idx 16,384.
        let per_channel = q(Scheme::Int {
            bits: 8,
            group: 0,
            packing: IntPacking::Gptq,
        });
        assert_eq!(
            bytes(per_channel, 4096, 4096),
            16_777_216 + 4_096 + 8_192 + 16_384
        );
    }

    #[test]
    fn compressed_tensors_int_schemes() {
        // W4A16 (symmetric, g128): weight_packed [4096, 512] int32 = 8,388,608, bf16
        // weight_scale [4096, 32] = 262,144, weight_shape int64[2] = 16.
        assert_eq!(
            bytes(WeightFormat::parse("w4a16").unwrap(), 4096, 4096),
            8_388_608 + 262_144 + 16
        );
        // Asymmetric with actorder: + weight_zero_point [512, 32] int32 = 65,536 and
        // weight_g_idx [4096] int32 = 16,384.
        let asym = q(Scheme::Int {
            bits: 4,
            group: 128,
            packing: IntPacking::Packed {
                zero: true,
                g_idx: true,
            },
        });
        assert_eq!(
            bytes(asym, 4096, 4096),
            8_388_608 + 262_144 + 16 + 65_536 + 16_384
        );
        // W8A8 int8 per channel, symmetric: int8 weights + a bf16 scale per row.
        assert_eq!(
            bytes(WeightFormat::parse("w8a8").unwrap(), 4096, 4096),
            16_777_216 + 8_192
        );
        // AWQ without zero points drops qzeros (32·512·4 = 65,536) from 8,716,288.
        let awq = q(Scheme::Int {
            bits: 4,
            group: 128,
            packing: IntPacking::Awq { zero: false },
        });
        assert_eq!(bytes(awq, 4096, 4096), 8_716_288 - 65_536);
    }

    #[test]
    fn bnb_fp4_weighs_what_nf4_weighs() {
        // Same packing, absmax and 16-entry code table; only the code differs.
        let fp4 = WeightFormat::parse("bnb-fp4").unwrap();
        assert_eq!(bytes(fp4, 4096, 4096), 8_388_608 + 1_048_576 + 64);
    }

    #[test]
    fn a_kind_outside_the_set_stays_16_bit() {
        let experts_only = WeightFormat::Quantized(Quant {
            scheme: Scheme::Mxfp4,
            kinds: KindSet::EMPTY.with(TensorKind::ExpertDown),
        });
        let mut t = super::layout_tests::matrix_of(2880, 2880);
        let ctx = MixContext {
            gqa: 1,
            experts: 32,
            is_70b: false,
            has_output: true,
        };
        assert_eq!(
            experts_only.tensor_bytes(&t, 0, ctx),
            Some((2880 * 2880 * 2, "16-bit"))
        );
        // 32 experts, each with its own blocks and scales.
        t.kind = TensorKind::ExpertDown;
        t.copies = 32;
        assert_eq!(
            experts_only.tensor_bytes(&t, 0, ctx),
            Some((32 * (4_147_200 + 259_200), "mxfp4"))
        );
        assert!(
            experts_only
                .describe()
                .contains("only the routed experts quantized")
        );
    }
}

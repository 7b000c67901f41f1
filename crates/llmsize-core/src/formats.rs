//! Storage formats: how many bytes a tensor takes in bf16, FP8, LLM.int8, NF4, GPTQ, AWQ or
//! a GGUF quantization mix, from each format's real layout (blocks, groups, scales, zeros).
//!
//! Sizes are computed per tensor in bits and rounded up to whole blocks and bytes, never from
//! a bytes-per-parameter constant. Which tensors a format leaves in 16 bits (embeddings,
//! output head, norms, biases) follows what each tool really does; GGUF mixes follow
//! llama.cpp's per-tensor rules (`llama_tensor_get_type` in `src/llama-quant.cpp`).

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
    // For i ≥ n/8 the subtraction is safe; the first clause covers the rest.
    i < n / 8 || i >= seven_eighths(n) || (i - n / 8) % 3 == 2
}

/// `7·n/8` as llama.cpp computes it, without overflowing for any `n`.
fn seven_eighths(n: u64) -> u64 {
    // 7·n/8 < n, so the quotient fits u64.
    u64::try_from(u128::from(n) * 7 / 8).unwrap_or(n)
}

/// The layers of `range` (in a stack of `n`) split into classes that every per-layer rule of
/// [`gguf_type`] treats alike, as `(a representative layer, layers in the class)`. The rules
/// compare the index with 2, 4, n/16, n/8 and 7n/8 and test `(i − n/8) mod 3`, so a run of a
/// million layers is a handful of classes, not a million calls.
fn layer_classes(range: std::ops::Range<u64>, n: u64, mut class: impl FnMut(u64, u64)) {
    if range.end - range.start == 1 {
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
            let first_more = x + (2 + 3 - (x - eighth) % 3) % 3;
            let first_less = if (x - eighth) % 3 == 2 { x + 1 } else { x };
            if more > 0 {
                class(first_more, more);
            }
            if y - x > more {
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
            "int8",
            "int4",
            "nf4",
            "nf4-dq",
            "gptq-4bit",
            "awq-4bit",
        ];
        v.extend(GgufPreset::ALL.iter().map(|p| p.name()));
        v
    }

    /// Parse a name (`bf16`, `q4_k_m`, `gptq-4bit`, …), case-insensitively.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        let n = name.trim().to_ascii_lowercase();
        Some(match n.as_str() {
            "fp32" | "f32" | "float32" => WeightFormat::Fp32,
            "fp16" | "f16" | "float16" => WeightFormat::Fp16,
            "bf16" | "bfloat16" => WeightFormat::Bf16,
            "fp8" | "fp8-e4m3" => WeightFormat::Fp8 { block: false },
            "fp8-block" => WeightFormat::Fp8 { block: true },
            "int8" | "llm.int8" => WeightFormat::Int8,
            "int4" => WeightFormat::Int4,
            "nf4" => WeightFormat::Nf4 {
                double_quant: false,
            },
            "nf4-dq" | "qlora" => WeightFormat::Nf4 { double_quant: true },
            "gptq-4bit" | "gptq" => WeightFormat::Gptq4,
            "awq-4bit" | "awq" => WeightFormat::Awq4,
            _ => WeightFormat::Gguf(*GgufPreset::ALL.iter().find(|p| p.name() == n)?),
        })
    }

    /// The name as typed.
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
        }
    }

    /// One line on the layout and which tensors stay 16-bit.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            WeightFormat::Fp32 => "every tensor 4 bytes per element",
            WeightFormat::Fp16 | WeightFormat::Bf16 => "every tensor 2 bytes per element",
            WeightFormat::Fp8 { block: false } => {
                "block linear weights 1 byte + one fp32 scale per tensor; embeddings, head, norms, biases bf16"
            }
            WeightFormat::Fp8 { block: true } => {
                "block linear weights 1 byte + one fp32 scale per 128×128 block; embeddings, head, norms, biases bf16"
            }
            WeightFormat::Int8 => {
                "LLM.int8(): block linear weights int8 + fp32 scale per output row; embeddings, head, norms, biases bf16"
            }
            WeightFormat::Int4 => {
                "int4 weight-only, group 128, bf16 scale and zero per group; embeddings, head, norms, biases bf16"
            }
            WeightFormat::Nf4 {
                double_quant: false,
            } => {
                "NF4: block linear weights 4-bit, fp32 absmax per 64 weights; embeddings, head, norms, biases bf16"
            }
            WeightFormat::Nf4 { double_quant: true } => {
                "NF4 + double quantization: int8 absmax per 64 weights, fp32 scale per 256 blocks; embeddings, head, norms, biases bf16"
            }
            WeightFormat::Gptq4 => {
                "GPTQ 4-bit g128 (qweight, scales fp16, qzeros, g_idx); embeddings, head, norms, biases fp16"
            }
            WeightFormat::Awq4 => {
                "AWQ 4-bit g128 (qweight, qzeros, scales fp16); embeddings, head, norms, biases fp16"
            }
            WeightFormat::Gguf(_) => {
                "llama.cpp mix: per-tensor types by llama-quantize's rules (llama-quant.cpp); norms and biases F32; file metadata not included"
            }
        }
    }

    /// Whether a tensor is quantized by this format (HF-side formats touch only the block
    /// linear layers; embeddings, output head, norms and biases stay 16-bit).
    fn quantizes(t: &Tensor) -> bool {
        t.kind.is_block_matrix() && !t.is_vector()
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
        let one = t.elements()?;
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
        let copies = t.copies;
        let (n, k) = (t.rows, t.cols); // N outputs, K inputs
        let elements = t.elements()?;
        let sixteen = || Some((elements.checked_mul(2)?, "16-bit"));
        let per_matrix = |bytes: u64| bytes.checked_mul(copies);
        match self {
            WeightFormat::Fp32 => Some((elements.checked_mul(4)?, "fp32")),
            WeightFormat::Fp16 | WeightFormat::Bf16 => sixteen(),
            _ if !matches!(self, WeightFormat::Gguf(_)) && !Self::quantizes(t) => sixteen(),
            WeightFormat::Fp8 { block } => {
                let scales = if block {
                    n.div_ceil(128)
                        .checked_mul(k.div_ceil(128))?
                        .checked_mul(4)?
                } else {
                    4
                };
                let b = per_matrix(n.checked_mul(k)?.checked_add(scales)?)?;
                Some((b, "fp8"))
            }
            WeightFormat::Int8 => {
                let b = per_matrix(n.checked_mul(k)?.checked_add(n.checked_mul(4)?)?)?;
                Some((b, "int8"))
            }
            WeightFormat::Int4 => {
                let groups = k.div_ceil(GROUP_SIZE);
                let packed = n.checked_mul(k)?.div_ceil(2);
                let scales = groups.checked_mul(n)?.checked_mul(4)?; // bf16 scale + bf16 zero
                Some((per_matrix(packed.checked_add(scales)?)?, "int4"))
            }
            WeightFormat::Nf4 { double_quant } => {
                let per = n.checked_mul(k)?;
                let blocks = per.div_ceil(64);
                let absmax = if double_quant {
                    // int8 absmax per block, fp32 scale per 256 blocks, 256-entry fp32 map.
                    blocks
                        .checked_add(blocks.div_ceil(256).checked_mul(4)?)?
                        .checked_add(1024)?
                } else {
                    blocks.checked_mul(4)?
                };
                // + the 16-entry fp32 NF4 code table.
                let b = per.div_ceil(2).checked_add(absmax)?.checked_add(64)?;
                Some((per_matrix(b)?, "nf4"))
            }
            WeightFormat::Gptq4 => {
                let groups = k.div_ceil(GROUP_SIZE);
                let qweight = k.div_ceil(8).checked_mul(n)?.checked_mul(4)?;
                let scales = groups.checked_mul(n)?.checked_mul(2)?;
                let qzeros = groups.checked_mul(n.div_ceil(8))?.checked_mul(4)?;
                let g_idx = k.checked_mul(4)?;
                let b = qweight
                    .checked_add(scales)?
                    .checked_add(qzeros)?
                    .checked_add(g_idx)?;
                Some((per_matrix(b)?, "gptq int4"))
            }
            WeightFormat::Awq4 => {
                let groups = k.div_ceil(GROUP_SIZE);
                let qweight = n.div_ceil(8).checked_mul(k)?.checked_mul(4)?;
                let qzeros = groups.checked_mul(n.div_ceil(8))?.checked_mul(4)?;
                let scales = groups.checked_mul(n)?.checked_mul(2)?;
                let b = qweight.checked_add(qzeros)?.checked_add(scales)?;
                Some((per_matrix(b)?, "awq int4"))
            }
            WeightFormat::Gguf(preset) => {
                let ty = gguf_type(t, layer, preset, ctx);
                let b = ty.bytes(copies.checked_mul(n)?, k)?;
                Some((b, ty.name()))
            }
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
        let (block, size) = self.block();
        n.div_ceil(block).checked_mul(size)
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

    fn matrix() -> Tensor {
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
                rows: Expr::Lit(4096),
                cols: Expr::Lit(4096),
                form: Form::Linear,
            },
            stack: None,
            layer_runs: std::sync::Arc::from([std::ops::Range { start: 0, end: 1 }]),
            layers: 1,
            stack_layers: 1,
            copies: 1,
            active_copies: 1,
            rows: 4096,
            cols: 4096,
        }
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

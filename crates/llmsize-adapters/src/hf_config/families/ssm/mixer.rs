//! The two state-space mixers every family of this directory builds on, written once as
//! extra tensors of category `ssm` and the recurrent state transformers' cache keeps.

use llmsize_core::Category;
use llmsize_core::expr::{Expr, Sym};
use llmsize_core::spec::{Attention, Extra, Ffn, Layer, Norm, RecurrentState};

use crate::error::ConfigError;
use crate::hf_config::raw::RawConfig;

/// A named quantity of a mixer, as a formula symbol.
fn s(name: &'static str, value: u64) -> Expr {
    Expr::sym(Sym::Named(name), value)
}

fn d(hidden: u64) -> Expr {
    Expr::sym(Sym::Hidden, hidden)
}

/// Mamba-1's `MambaMixer` (`modeling_mamba.py`): `in_proj` d → 2·I, a depthwise `conv1d`
/// of I channels and kernel K, `x_proj` I → R + 2·N, `dt_proj` R → I with a bias, `A_log`
/// I × N, `D` I, `out_proj` I → d. `in_proj`/`out_proj` carry biases with `use_bias`, the
/// convolution with `use_conv_bias`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mamba1 {
    pub hidden: u64,
    /// `intermediate_size` I.
    pub inner: u64,
    /// `state_size` N.
    pub state: u64,
    /// `conv_kernel` K.
    pub kernel: u64,
    /// `time_step_rank` R.
    pub dt_rank: u64,
    pub proj_bias: bool,
    pub conv_bias: bool,
    /// Jamba's `dt_layernorm` (R), `b_layernorm` and `c_layernorm` (N), `RMSNorm`s with weights.
    pub inner_norms: bool,
}

/// The prefix of a mixer's tensors (`mixer`, `mamba`).
pub(crate) type Prefix = &'static str;

fn name(prefix: Prefix, tensor: &'static str) -> String {
    format!("{prefix}.{tensor}")
}

impl Mamba1 {
    /// The mixer's tensors, named under `prefix`.
    pub(crate) fn extras(&self, prefix: Prefix) -> Vec<Extra> {
        const PART: &str = "mamba mixer";
        let c = Category::Ssm;
        let i = s("d_inner", self.inner);
        let n = s("d_state", self.state);
        let k = s("d_conv", self.kernel);
        let r = s("dt_rank", self.dt_rank);
        let mut out = vec![Extra::linear(
            name(prefix, "in_proj.weight"),
            PART,
            c,
            d(self.hidden),
            Expr::product(vec![Expr::Lit(2), i.clone()]),
        )];
        if self.proj_bias {
            out.push(Extra::vector(
                name(prefix, "in_proj.bias"),
                PART,
                c,
                Expr::product(vec![Expr::Lit(2), i.clone()]),
            ));
        }
        out.push(Extra::table(
            name(prefix, "conv1d.weight"),
            PART,
            c,
            i.clone(),
            k,
        ));
        if self.conv_bias {
            out.push(Extra::vector(
                name(prefix, "conv1d.bias"),
                PART,
                c,
                i.clone(),
            ));
        }
        out.push(Extra::linear(
            name(prefix, "x_proj.weight"),
            PART,
            c,
            i.clone(),
            Expr::sum(vec![
                r.clone(),
                Expr::product(vec![Expr::Lit(2), n.clone()]),
            ]),
        ));
        out.push(Extra::linear(
            name(prefix, "dt_proj.weight"),
            PART,
            c,
            r.clone(),
            i.clone(),
        ));
        out.push(Extra::vector(
            name(prefix, "dt_proj.bias"),
            PART,
            c,
            i.clone(),
        ));
        if self.inner_norms {
            out.push(Extra::vector(
                name(prefix, "dt_layernorm.weight"),
                PART,
                c,
                r.clone(),
            ));
            out.push(Extra::vector(
                name(prefix, "b_layernorm.weight"),
                PART,
                c,
                n.clone(),
            ));
            out.push(Extra::vector(
                name(prefix, "c_layernorm.weight"),
                PART,
                c,
                n.clone(),
            ));
        }
        out.push(Extra::table(name(prefix, "A_log"), PART, c, i.clone(), n));
        out.push(Extra::vector(name(prefix, "D"), PART, c, i.clone()));
        out.push(Extra::linear(
            name(prefix, "out_proj.weight"),
            PART,
            c,
            i,
            d(self.hidden),
        ));
        if self.proj_bias {
            out.push(Extra::vector(
                name(prefix, "out_proj.bias"),
                PART,
                c,
                d(self.hidden),
            ));
        }
        out
    }

    /// What the cache keeps: `conv_states` I × K in the model's dtype, `ssm_states` I × N in
    /// float32 (the scan's state is float32 whatever the model's dtype).
    pub(crate) fn state(&self, raw: &RawConfig<'_>) -> Result<RecurrentState, ConfigError> {
        Ok(RecurrentState {
            conv: raw.mul(self.inner, self.kernel, "intermediate_size·conv_kernel")?,
            recurrent: raw.mul(self.inner, self.state, "intermediate_size·state_size")?,
            recurrent_f32: true,
            conv_f32: false,
        })
    }
}

/// Mamba-2's `Mamba2Mixer` (`modeling_mamba2.py`) and its copies in the hybrids: `in_proj`
/// d → I + C + H with C = I + 2·G·N the convolved width, a depthwise `conv1d` of C channels,
/// `dt_bias`, `A_log` and `D` of H, a gated `RMSNorm` of I (absent in some hybrids),
/// `out_proj` I → d.
#[allow(
    clippy::struct_excessive_bools,
    reason = "each is a switch of the real module, as the config names them"
)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mamba2 {
    pub hidden: u64,
    /// The mixer's inner width I (`expand·d`, or `mamba_d_ssm`).
    pub inner: u64,
    /// Heads H.
    pub heads: u64,
    /// Head width P (the recurrent state is H × P × N).
    pub head_dim: u64,
    /// Groups G of B and C.
    pub groups: u64,
    /// `state_size` N.
    pub state: u64,
    /// `conv_kernel` K.
    pub kernel: u64,
    /// Bias on `in_proj`.
    pub in_bias: bool,
    /// Bias on `out_proj` (Falcon-H1 reads it from `projectors_bias`, the others with
    /// `in_proj`'s).
    pub out_bias: bool,
    pub conv_bias: bool,
    /// The gated `RMSNorm` of I before `out_proj`.
    pub norm: bool,
}

impl Mamba2 {
    /// The convolved width C = I + 2·G·N.
    pub(crate) fn conv_dim(&self, raw: &RawConfig<'_>) -> Result<u64, ConfigError> {
        let gn = raw.mul(self.groups, self.state, "n_groups·state_size")?;
        let two_gn = raw.mul(2, gn, "2·n_groups·state_size")?;
        self.inner.checked_add(two_gn).ok_or_else(|| {
            raw.invalid("n_groups", &self.groups.into(), "sizes that fit in 64 bits")
        })
    }

    /// The mixer's tensors, named under `prefix`.
    pub(crate) fn extras(&self, prefix: Prefix) -> Vec<Extra> {
        const PART: &str = "mamba2 mixer";
        let c = Category::Ssm;
        let i = s("d_inner", self.inner);
        let h = s("n_ssm_heads", self.heads);
        let conv = Expr::sum(vec![
            i.clone(),
            Expr::product(vec![
                Expr::Lit(2),
                s("n_groups", self.groups),
                s("d_state", self.state),
            ]),
        ]);
        let mut out = vec![Extra::linear(
            name(prefix, "in_proj.weight"),
            PART,
            c,
            d(self.hidden),
            Expr::sum(vec![i.clone(), conv.clone(), h.clone()]),
        )];
        if self.in_bias {
            out.push(Extra::vector(
                name(prefix, "in_proj.bias"),
                PART,
                c,
                Expr::sum(vec![i.clone(), conv.clone(), h.clone()]),
            ));
        }
        out.push(Extra::table(
            name(prefix, "conv1d.weight"),
            PART,
            c,
            conv.clone(),
            s("d_conv", self.kernel),
        ));
        if self.conv_bias {
            out.push(Extra::vector(name(prefix, "conv1d.bias"), PART, c, conv));
        }
        for v in ["dt_bias", "A_log", "D"] {
            out.push(Extra::vector(name(prefix, v), PART, c, h.clone()));
        }
        if self.norm {
            out.push(Extra::vector(
                name(prefix, "norm.weight"),
                PART,
                c,
                i.clone(),
            ));
        }
        out.push(Extra::linear(
            name(prefix, "out_proj.weight"),
            PART,
            c,
            i,
            d(self.hidden),
        ));
        if self.out_bias {
            out.push(Extra::vector(
                name(prefix, "out_proj.bias"),
                PART,
                c,
                d(self.hidden),
            ));
        }
        out
    }

    /// What the cache keeps: `conv_states` C × K in the model's dtype, the recurrent state
    /// H × P × N in float32 (the chunked scan returns it in float32).
    pub(crate) fn state(&self, raw: &RawConfig<'_>) -> Result<RecurrentState, ConfigError> {
        let conv = self.conv_dim(raw)?;
        let hp = raw.mul(self.heads, self.head_dim, "heads·head_dim")?;
        Ok(RecurrentState {
            conv: raw.mul(conv, self.kernel, "conv_dim·conv_kernel")?,
            recurrent: raw.mul(hp, self.state, "heads·head_dim·state_size")?,
            recurrent_f32: true,
            conv_f32: false,
        })
    }
}

/// A layer that is a norm and a mixer, no attention and no MLP (`MambaBlock`).
pub(crate) fn mixer_layer(extras: Vec<Extra>, state: RecurrentState, norms: Vec<Norm>) -> Layer {
    Layer {
        attention: Attention::Absent,
        cross_attention: None,
        ffn: Ffn::Absent,
        norms,
        sliding_window: None,
        extras,
        state: Some(state),
    }
}

/// The gated `DeltaNet` of Qwen3.5 as `LaraMini` builds it (`LaraMiniGatedDeltaNet`):
/// `in_proj_qkv` d → 2·K + V (K = key heads·key width, V = value heads·value width),
/// `in_proj_z` d → V, `in_proj_b` and `in_proj_a` d → `H_v`, a depthwise `conv1d` of 2·K + V
/// channels without bias, `dt_bias` and `A_log` of `H_v`, a gated `RMSNorm` of the value width,
/// `out_proj` V → d, no biases.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GatedDeltaNet {
    pub hidden: u64,
    pub key_heads: u64,
    pub value_heads: u64,
    pub key_dim: u64,
    pub value_dim: u64,
    pub kernel: u64,
}

impl GatedDeltaNet {
    /// The mixer's tensors, named under `prefix`.
    pub(crate) fn extras(&self, prefix: Prefix) -> Vec<Extra> {
        const PART: &str = "gated deltanet";
        let c = Category::Ssm;
        let k = Expr::product(vec![
            s("n_k_heads", self.key_heads),
            s("d_k_head", self.key_dim),
        ]);
        let v = Expr::product(vec![
            s("n_v_heads", self.value_heads),
            s("d_v_head", self.value_dim),
        ]);
        let hv = s("n_v_heads", self.value_heads);
        let conv = Expr::sum(vec![Expr::product(vec![Expr::Lit(2), k]), v.clone()]);
        vec![
            Extra::linear(
                name(prefix, "in_proj_qkv.weight"),
                PART,
                c,
                d(self.hidden),
                conv.clone(),
            ),
            Extra::linear(
                name(prefix, "in_proj_z.weight"),
                PART,
                c,
                d(self.hidden),
                v.clone(),
            ),
            Extra::linear(
                name(prefix, "in_proj_b.weight"),
                PART,
                c,
                d(self.hidden),
                hv.clone(),
            ),
            Extra::linear(
                name(prefix, "in_proj_a.weight"),
                PART,
                c,
                d(self.hidden),
                hv.clone(),
            ),
            Extra::table(
                name(prefix, "conv1d.weight"),
                PART,
                c,
                conv,
                s("d_conv", self.kernel),
            ),
            Extra::vector(name(prefix, "dt_bias"), PART, c, hv.clone()),
            Extra::vector(name(prefix, "A_log"), PART, c, hv),
            Extra::vector(
                name(prefix, "norm.weight"),
                PART,
                c,
                s("d_v_head", self.value_dim),
            ),
            Extra::linear(name(prefix, "out_proj.weight"), PART, c, v, d(self.hidden)),
        ]
    }

    /// What the cache keeps: `conv_states` (2·K + V) × kernel in the model's dtype, the
    /// recurrent state `H_v` × key width × value width in float32 (the chunked delta rule
    /// returns it in float32).
    pub(crate) fn state(&self, raw: &RawConfig<'_>) -> Result<RecurrentState, ConfigError> {
        let k = raw.mul(
            self.key_heads,
            self.key_dim,
            "linear_num_key_heads·linear_key_head_dim",
        )?;
        let v = raw.mul(
            self.value_heads,
            self.value_dim,
            "linear_num_value_heads·linear_value_head_dim",
        )?;
        let conv = raw
            .mul(2, k, "2·key width")?
            .checked_add(v)
            .ok_or_else(|| {
                raw.invalid(
                    "linear_value_head_dim",
                    &v.into(),
                    "sizes that fit in 64 bits",
                )
            })?;
        let per_head = raw.mul(
            self.key_dim,
            self.value_dim,
            "linear_key_head_dim·linear_value_head_dim",
        )?;
        Ok(RecurrentState {
            conv: raw.mul(conv, self.kernel, "conv_dim·linear_conv_kernel_dim")?,
            recurrent: raw.mul(self.value_heads, per_head, "recurrent state")?,
            recurrent_f32: true,
            conv_f32: false,
        })
    }
}

//! `llmsize flops`: the forward pass and one generated token by component, the article's
//! 2·P and 6·P next to them, and the roofline speed when a GPU is named.

use std::fmt::Write as _;

use super::columns;
use crate::flops::{AttentionConvention, FlopsReport};
use crate::speed::SpeedReport;
use crate::units::{human_flops, human_seconds, share, thousands, thousands_u128};

fn pct(part: u128, whole: u128) -> String {
    // Shares of u128 totals: scale down to u64 range first, exactness is not needed here.
    let shift = 128 - whole.leading_zeros().min(128);
    let s = shift.saturating_sub(60);
    share(
        u64::try_from(part >> s).unwrap_or(u64::MAX),
        u64::try_from(whole >> s).unwrap_or(u64::MAX),
    )
}

/// Human table; `explain` adds formulas.
#[must_use]
pub fn render(name: &str, r: &FlopsReport, speed: Option<&SpeedReport>, explain: bool) -> String {
    let mut out = String::new();
    let conv = match r.convention {
        AttentionConvention::Full => {
            "full: scores over all s² query-key pairs (as torch's FlopCounterMode, PaLM, nanoGPT)"
        }
        AttentionConvention::Causal => {
            "causal: scores over the s(s+1)/2 pairs a causal mask keeps (Megatron, FlashAttention)"
        }
    };
    if let Some(why) = &r.estimate {
        let _ = writeln!(out, "ESTIMATE, not exact: {why}");
    }
    let _ = writeln!(
        out,
        "{name}: FLOPs of a forward pass over {} tokens × batch {}\nconvention: multiply-add = 2 FLOPs; embedding lookups, norms, activations, softmax and biases = 0; attention {conv}\n",
        thousands(r.seq_len),
        r.batch
    );
    let table = |lines: &[crate::flops::FlopsLine], total: u128, label: &str| {
        let mut rows = vec![vec![
            "component".to_owned(),
            "FLOPs".to_owned(),
            "share".to_owned(),
            String::new(),
        ]];
        for l in lines.iter().filter(|l| l.flops > 0) {
            rows.push(vec![
                l.key.to_owned(),
                thousands_u128(l.flops),
                pct(l.flops, total),
                if explain {
                    l.formula.clone()
                } else {
                    String::new()
                },
            ]);
        }
        rows.push(vec![
            label.to_owned(),
            thousands_u128(total),
            human_flops(total),
            String::new(),
        ]);
        columns(&rows, &[false, true, true, false])
    };
    out.push_str(&table(&r.forward, r.forward_flops, "forward total"));
    if r.per_token.is_empty() {
        out.push_str("\nno generated tokens: an encoder reads its input in one pass\n");
    } else {
        let _ = writeln!(
            out,
            "\none generated token with {} tokens of context (one sequence)",
            thousands(r.seq_len)
        );
        out.push_str(&table(&r.per_token, r.per_token_flops, "per token"));
    }

    let two_p = 2 * u128::from(r.params);
    let two_active = 2 * u128::from(r.active_params);
    let _ = writeln!(out, "\nthe article's estimates");
    let rows = vec![
        vec![
            "2·P per token".to_owned(),
            thousands_u128(two_p),
            format!("exact {} per token", thousands_u128(r.per_token_flops)),
        ],
        vec![
            "2·P_active per token".to_owned(),
            thousands_u128(two_active),
            "(MoE: only the routed experts a token uses)".to_owned(),
        ],
        vec![
            "6·P_active per training token".to_owned(),
            thousands_u128(3 * two_active),
            "(fwd 2·P + bwd 4·P; Kaplan, EleutherAI)".to_owned(),
        ],
        vec![
            "6·P per training token".to_owned(),
            thousands_u128(3 * two_p),
            format!(
                "exact 3 × forward per token = {}",
                thousands_u128(
                    r.forward_flops.saturating_mul(3)
                        / u128::from(r.seq_len).saturating_mul(u128::from(r.batch))
                )
            ),
        ],
    ];
    out.push_str(&columns(&rows, &[false, true, false]));
    let _ = writeln!(
        out,
        "  why they differ: P counts the embedding tables, which cost no FLOPs (a lookup), and norms and biases; \
the matmuls use {} parameters per token; attention adds 4·n_h·d_h per key per layer, which grows with the context",
        thousands(r.matmul_params)
    );
    if let Some(s) = speed {
        let _ = writeln!(
            out,
            "\nspeed on {} × {} (roofline estimate)",
            s.options.gpus, s.options.gpu.name
        );
        if s.fits == Some(false) {
            let _ = writeln!(
                out,
                "  warning: does not fit: needs {} per GPU, has {} (see `llmsize memory`); the times assume it did",
                crate::units::bytes_both(s.memory_per_gpu),
                crate::units::bytes_both(s.options.gpu.memory_bytes)
            );
        }
        let mut rows = vec![vec![
            "prefill".to_owned(),
            human_seconds(s.prefill_seconds),
            format!(
                "{} tokens, compute bound",
                thousands(r.seq_len.saturating_mul(r.batch))
            ),
        ]];
        if !r.per_token.is_empty() {
            rows.extend([
                vec![
                    "decode step".to_owned(),
                    human_seconds(s.decode_step_seconds),
                    format!(
                        "{} bound: {} B read, {}",
                        s.decode_bound,
                        thousands(s.decode_bytes),
                        human_flops(s.decode_flops)
                    ),
                ],
                vec![
                    "decode".to_owned(),
                    format!("{:.1} tokens/s", s.decode_tokens_per_second),
                    format!(
                        "batch {}; {:.1} tokens/s per sequence",
                        r.batch, s.per_sequence_tokens_per_second
                    ),
                ],
            ]);
        }
        out.push_str(&columns(&rows, &[false, true, false]));
        for a in &s.assumptions {
            let _ = writeln!(out, "  - {a}");
        }
    }
    out
}

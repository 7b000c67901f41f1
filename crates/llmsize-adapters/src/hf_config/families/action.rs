//! Vision-language-action models: PI0 (`modeling_pi0.py`).
//!
//! `PI0ForConditionalGeneration` holds `PI0Model` — a vision-language model (`vlm`,
//! `AutoModel.from_config(vlm_config)`: `PaliGemmaModel`, without its LM head) and an action
//! expert (`dit`, `AutoModel.from_config(dit_config)`: a `GemmaModel` with its own token
//! table) — plus the projections between actions, robot state and the expert's width. The
//! VLM is the spec's text model and vision tower; the action expert's tensors are extras of
//! their own categories (attention, FFN, norms, its token table); the projections are
//! [`Category::Other`], as the ground truth leaves them in no category. A text or image token
//! runs through the VLM only: the expert and the projections work on the action chunk, so a
//! token multiplies by none of them (their active copies are 0).

use llmsize_core::category::Category;
use llmsize_core::expr::Expr;
use llmsize_core::layout::layout;
use llmsize_core::spec::{Extra, ModelSpec, OutputHead};

use super::vision::parts::{Parts, lit, sym};
use crate::error::ConfigError;
use crate::hf_config::HeadChoice;
use crate::hf_config::family::{Family, read_sub_config};
use crate::hf_config::raw::RawConfig;

/// The entries of this file.
pub(crate) const FAMILIES: &[Family] = &[Family::code(
    "pi0",
    "PI0Config",
    "PI0ForConditionalGeneration",
    pi0,
)];

/// What the action chunk's path holds, by a text token's count: nothing.
fn off_the_token_path(mut e: Extra) -> Extra {
    e.active_copies = Expr::Lit(0);
    e
}

/// `PI0ForConditionalGeneration`.
fn pi0(raw: &mut RawConfig<'_>, f: &Family, _head: HeadChoice) -> Result<ModelSpec, ConfigError> {
    let mut spec = read_sub_config(raw, "vlm_config", "paligemma", HeadChoice::Base)?;
    // `PI0Model` builds the VLM's base model: no LM head, nothing tied to it.
    spec.head = OutputHead::None;
    let dit = read_sub_config(raw, "dit_config", "gemma", HeadChoice::Base)?;
    let expert = layout(&dit).map_err(|e| ConfigError::Invalid {
        file: raw.file.to_owned(),
        key: "dit_config".into(),
        found: e.to_string(),
        expected: "an action expert whose tensors can be laid out".into(),
    })?;
    for t in expert.tensors {
        let copies = raw.mul(t.layers, t.copies, "the action expert's layers·copies")?;
        spec.extras.push(off_the_token_path(Extra {
            name: format!("model.dit.{}", t.name).into(),
            part: format!("action expert {}", t.part_label()).into(),
            category: t.category,
            copies: Expr::Lit(copies),
            active_copies: Expr::Lit(0),
            rows: Expr::Lit(t.rows),
            cols: Expr::Lit(t.cols),
            form: t.shape.form,
            idle: false,
            frozen: t.frozen,
            gradless: t.gradless,
            fp32: t.fp32,
        }));
    }
    let d = sym("d_expert", dit.hidden_size);
    let action = raw.size_or(
        &["max_action_dim"],
        llmsize_core::expr::Sym::Named("max_action_dim"),
        32,
        "PI0Config's default",
    )?;
    let state = raw.size_or(
        &["max_state_dim"],
        llmsize_core::expr::Sym::Named("max_state_dim"),
        32,
        "PI0Config's default",
    )?;
    let two_d = sym("2·d_expert", raw.mul(2, dit.hidden_size, "2·d_expert")?);
    let (a, s) = (sym("max_action_dim", action), sym("max_state_dim", state));
    let mut p = Parts::new(Category::Other);
    let part = "action and state projections";
    let one = lit(1);
    p.linear(
        "embed_action_time.action_in_proj",
        part,
        (a.clone(), d.clone()),
        true,
        &one,
    );
    p.linear(
        "embed_action_time.state_proj",
        part,
        (s, d.clone()),
        true,
        &one,
    );
    p.linear(
        "embed_action_time.action_time_mlp_in",
        part,
        (two_d, d.clone()),
        true,
        &one,
    );
    p.linear(
        "embed_action_time.action_time_mlp_out",
        part,
        (d.clone(), d.clone()),
        true,
        &one,
    );
    p.linear("action_out_proj", part, (d, a), true, &one);
    spec.extras
        .extend(p.out.into_iter().map(off_the_token_path));
    f.model_type.clone_into(&mut spec.model_type);
    f.architecture.clone_into(&mut spec.architecture);
    Ok(spec)
}

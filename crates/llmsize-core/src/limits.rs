//! Every bound on a count that comes from input, in one place.
//!
//! A config, a weight header, a flag or a web request can hold any number; llmsize answers
//! within about a second and 256 MiB whatever they hold. Two rules keep it so:
//!
//! 1. **Work never grows with a number in the input.** Layers are runs of distinct kinds, a
//!    tensor-parallel degree is searched among the divisors of the head counts (never of the
//!    GPU count), a longest context is a bisection. Where a list *is* the input (a config's
//!    `layer_types`, a sweep's values, a header's tensors) the work is linear in its length.
//! 2. **Each count has a stated maximum**, far above any real model or machine, checked where
//!    it is read, with an error that names the key or flag and this bound. The bounds below
//!    are that list; readers, the engine and the front ends use them, never a literal of
//!    their own.
//!
//! The header readers' own format limits (header bytes, string lengths, tensors per file)
//! live beside their formats in `llmsize-weights`, each documented with its reason.

/// Most layers of any one stack or tower: a text decoder, an encoder, a vision, audio or
/// projector tower, MTP modules. The deepest published models have a few hundred; layers are
/// held as runs, so the count costs nothing — the bound is what per-layer lists a config may
/// carry (`layer_types`, window patterns) can reach.
pub const MAX_LAYERS: u64 = 1_000_000;

/// Most runs (stretches of one layer kind) of one stack that a training step walks: a window
/// pattern alternating over a million layers makes a million runs, and a step's pipeline
/// stages and LoRA ranges are walked in layer order, several times over when it searches what
/// would fit. Real models have at most a few hundred layers, so a few hundred runs.
pub const MAX_RUNS: usize = 1 << 16;

/// Most GPUs in `--gpu NAMExCOUNT` (and `dp`, `tp`, `pp` degrees): 2^20. The largest
/// training clusters reported hold a few hundred thousand GPUs.
pub const MAX_GPUS: u64 = 1 << 20;

/// Most points of one `--sweep` (each point is a whole `memory`/`flops` answer; 256 points
/// take about 0.3 s, and a chart draws at most this many).
pub const MAX_SWEEP_POINTS: usize = 256;

/// Most models one command compares side by side (and one chart draws).
pub const MAX_MODELS: usize = 24;

/// Most tokens of a sequence, a context or a batch × sequence product asked about: 2^32. The
/// longest contexts served are 10 M tokens.
pub const MAX_TOKENS: u64 = 1 << 32;

/// Most sequences in a batch: 2^24.
pub const MAX_BATCH: u64 = 1 << 24;

/// Longest context a `--max-context` search tries: 2^24 tokens.
pub const MAX_CONTEXT_SEARCH: u64 = 1 << 24;

/// Most candidates `design --top` prints.
pub const MAX_TOP: usize = 1000;

/// Most values one `design` constraint lists (`--head-dim`, `--kv-heads`, `--gqa-group`):
/// each multiplies the space searched, and real choices are a handful.
pub const MAX_CHOICES: usize = 64;

/// Most shapes one `design` search may visit: 2^40 (the search runs at about 4·10^8 shapes a
/// second on one core, so the largest space takes under an hour; a larger one is refused
/// with its size, to be narrowed with the ranges).
pub const MAX_DESIGN_SHAPES: u128 = 1 << 40;

/// Longest MODEL argument read as a name (a preset, a Hub id, a path): 4096 bytes, Linux's
/// `PATH_MAX`. Longer text is only ever a config's JSON.
pub const MAX_MODEL_NAME: usize = 4096;

/// Longest name that "did you mean" compares with the presets: Hub ids are at most 96
/// characters, so a longer name gets no suggestion (and costs nothing to refuse).
pub const MAX_SUGGEST_LEN: usize = 128;

/// Most names one message lists (files of a repository, candidates, keys); the rest are
/// counted ("and 4,992 more").
pub const MAX_NAMES_IN_MESSAGE: usize = 8;

/// Most bytes of a `config.json`, an index or a MODEL given as text: real configs are
/// kilobytes (DeepSeek-V3's index is 8 MB).
pub const MAX_TEXT_BYTES: u64 = 64 << 20;

/// Most shards an index may name: the largest published checkpoints have a few hundred
/// (DeepSeek-V3 163, Llama-3.1-405B 191).
pub const MAX_SHARDS: usize = 4096;

/// Layers a runtime view places one by one: real models have at most a few hundred.
pub const MAX_PLACED_LAYERS: u64 = 1 << 16;

/// Distinct custom GPUs one process may describe (they are interned for its lifetime).
pub const MAX_CUSTOM_GPUS: usize = 256;

/// `names`, at most [`MAX_NAMES_IN_MESSAGE`] of them, joined with `, `, and how many more.
///
/// `"a, b, c"` or `"a, b, …, h and 4,992 more"`: what a message shows of a long list.
#[must_use]
pub fn a_few<S: AsRef<str>>(names: &[S]) -> String {
    let shown: Vec<&str> = names
        .iter()
        .take(MAX_NAMES_IN_MESSAGE)
        .map(AsRef::as_ref)
        .collect();
    let text = shown.join(", ");
    match names.len().checked_sub(MAX_NAMES_IN_MESSAGE) {
        Some(more) if more > 0 => {
            let more = crate::units::thousands(u64::try_from(more).unwrap_or(u64::MAX));
            format!("{text} and {more} more")
        }
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_few_names_and_the_count() {
        assert_eq!(a_few(&["a", "b"]), "a, b");
        let many: Vec<String> = (0..5000).map(|i| format!("f{i}.gguf")).collect();
        let text = a_few(&many);
        assert!(text.starts_with("f0.gguf, f1.gguf"), "{text}");
        assert!(text.ends_with("f7.gguf and 4,992 more"), "{text}");
        assert_eq!(a_few::<&str>(&[]), "");
    }
}

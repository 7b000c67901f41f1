//! Finding a built-in preset by the names people type.
//!
//! Accepted: the id (`Llama-2-7b-hf`), the Hub repository (`meta-llama/Llama-2-7b-hf`), either
//! case-insensitively, and a loose form without the organisation and a trailing `-hf`
//! (`llama-2-7b`). A miss suggests the nearest names.

mod list;

pub use list::{PRESETS, Preset};

/// Lowercase, `_` as `-`, without an `org/` prefix and a trailing `-hf`.
fn loose(name: &str) -> String {
    let lower = name.trim().to_lowercase().replace('_', "-");
    let base = lower.rsplit('/').next().unwrap_or(&lower);
    base.strip_suffix("-hf").unwrap_or(base).to_owned()
}

/// The preset a name refers to.
#[must_use]
pub fn find(name: &str) -> Option<&'static Preset> {
    let wanted = name.trim();
    PRESETS
        .iter()
        .find(|p| {
            p.id.eq_ignore_ascii_case(wanted)
                || p.hf_repo.is_some_and(|r| r.eq_ignore_ascii_case(wanted))
        })
        .or_else(|| {
            let l = loose(wanted);
            PRESETS
                .iter()
                .find(|p| loose(p.id) == l || p.hf_repo.is_some_and(|r| loose(r) == l))
        })
}

/// Presets whose instruction-tuned releases (`-Instruct`, `-chat`, `-it`, `-Instruct-2507`)
/// publish a `config.json` with the same sizes, so the base preset counts them exactly.
/// Checked on published files: where the project holds both, by count (holdout
/// `falcon-7b-instruct` = `falcon-7b`, 6,921,720,704; `Llama-3.3-70B-Instruct` =
/// `Llama-3.1-70B`, 70,553,706,496; the Hub's totals of `gemma-3-27b-it` and `gemma-3-12b-it`,
/// 27,432,406,640 and 12,187,325,040, are the `-pt` presets' counts); else by the size fields of the tuned file as public
/// repositories quote it (Llama-3.1-70B-Instruct, Qwen2.5-7B/72B-Instruct,
/// Mistral-7B-Instruct-v0.1: hidden, intermediate, heads, KV heads, layers and vocabulary as
/// the base's). The tuned files change token ids (`eos_token_id`), `max_position_embeddings`
/// (Qwen2.5 Instruct: 32,768) or nothing. Left out because the shapes differ:
/// `Mixtral-8x22B-Instruct-v0.1` (vocabulary 32,768, the base 32,000: 140,630,071,296 against
/// 140,620,634,112 in the holdout), and releases that are presets of their own
/// (`Phi-3-mini-4k-instruct`, `Llama-3.3-70B-Instruct`).
const SAME_SHAPES_WHEN_TUNED: &[&str] = &[
    "Llama-2-7b-hf",
    "Llama-2-13b-hf",
    "Llama-2-70b-hf",
    "Meta-Llama-3-8B",
    "Llama-3.1-8B",
    "Llama-3.1-70B",
    "Llama-3.1-405B",
    "Llama-3.2-1B",
    "Llama-3.2-3B",
    "Mistral-7B-v0.1",
    "Mixtral-8x7B-v0.1",
    "Mistral-Nemo-Base-2407",
    "Mistral-Small-24B-Base-2501",
    "Qwen2-0.5B",
    "Qwen2-1.5B",
    "Qwen2-7B",
    "Qwen2.5-0.5B",
    "Qwen2.5-3B",
    "Qwen2.5-7B",
    "Qwen2.5-14B",
    "Qwen2.5-32B",
    "Qwen2.5-72B",
    "Qwen3-4B",
    "Qwen3-30B-A3B",
    "Qwen3-235B-A22B",
    "Qwen1.5-MoE-A2.7B",
    "DeepSeek-V2-Lite",
    "gemma-2b",
    "gemma-7b",
    "gemma-2-2b",
    "gemma-2-9b",
    "gemma-3-1b-pt",
    "gemma-3-12b-pt",
    "gemma-3-27b-pt",
    "SmolLM2-135M",
    "SmolLM2-1.7B",
    "falcon-7b",
];

/// The name parts of a tuned release.
const TUNED: &[&str] = &["instruct", "chat", "it"];

/// Drop the name parts that only say "base" (`-Base-2407`, gemma's `-pt`).
fn stem(parts: &[&str]) -> String {
    parts
        .iter()
        .filter(|p| !matches!(**p, "base" | "pt"))
        .copied()
        .collect::<Vec<_>>()
        .join("-")
}

/// The base preset of an instruction-tuned release's name (`Llama-3.1-8B-Instruct`,
/// `meta-llama/Llama-2-7b-chat-hf`, `gemma-2-9b-it`, `Qwen3-30B-A3B-Instruct-2507`,
/// `Mistral-Nemo-Instruct-2407`), for the presets whose tuned configs have the same sizes.
/// `None` for a name without a tuning part, or whose base is not such a preset.
#[must_use]
pub fn find_tuned(name: &str) -> Option<&'static Preset> {
    let l = loose(name);
    let parts: Vec<&str> = l.split('-').collect();
    let at = parts.iter().position(|p| TUNED.contains(p))?;
    let mut kept: Vec<&str> = parts
        .iter()
        .copied()
        .filter(|p| !TUNED.contains(p))
        .collect();
    let mut stems = vec![stem(&kept)];
    // A date right after the tuning part is either the release's own (`-Instruct-2507` of
    // `Qwen3-4B`) or shared with the base (`Mistral-Nemo-Base-2407`): try both.
    if parts
        .iter()
        .skip(at)
        .nth(1)
        .is_some_and(|d| d.len() == 4 && d.bytes().all(|b| b.is_ascii_digit()))
    {
        kept.remove(at);
        stems.push(stem(&kept));
    }
    stems.iter().find_map(|want| {
        PRESETS.iter().find(|p| {
            SAME_SHAPES_WHEN_TUNED.contains(&p.id)
                && stem(&loose(p.id).split('-').collect::<Vec<_>>()) == *want
        })
    })
}

/// How close a name must be to a preset id (0 to 1) to be suggested. Below it a suggestion
/// is noise: `nope` is 0.56 from `opt-1.3b` by Jaro-Winkler, `llama-9b` 0.93 from `llama-7b`.
pub const SUGGEST_AT_LEAST: f64 = 0.85;

/// `needle` inside `hay` on `-` boundaries (`llama-3-8b` in `meta-llama-3-8b`, not `lama`).
fn contains_on_boundaries(hay: &str, needle: &str) -> bool {
    hay.match_indices(needle).any(|(at, m)| {
        #[expect(
            clippy::arithmetic_side_effects,
            reason = "a match's start plus its length is its end, within `hay`"
        )]
        let end = at + m.len();
        (at == 0 || hay[..at].ends_with('-')) && (end == hay.len() || hay[end..].starts_with('-'))
    })
}

/// Closeness of two loose names: one inside the other on `-` boundaries scores from 1 to 2
/// (more the more of the longer it covers), above any mere likeness; else the better of
/// Jaro-Winkler (kind to shared prefixes) and normalised Damerau-Levenshtein (kind to a typo
/// anywhere), 0 to 1.
fn closeness(a: &str, b: &str) -> f64 {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if short.len() >= 3 && contains_on_boundaries(long, short) {
        #[expect(clippy::cast_precision_loss, reason = "name lengths")]
        let cover = short.len() as f64 / long.len() as f64;
        return 1.0 + cover;
    }
    strsim::jaro_winkler(a, b).max(strsim::normalized_damerau_levenshtein(a, b))
}

/// Up to `n` preset ids close to `name` (at least [`SUGGEST_AT_LEAST`]), closest first;
/// none when nothing is close.
#[must_use]
pub fn suggest(name: &str, n: usize) -> Vec<&'static str> {
    let l = loose(name);
    let mut scored: Vec<(f64, &'static str)> = PRESETS
        .iter()
        .map(|p| {
            let by_repo = p.hf_repo.map_or(0.0, |r| closeness(&l, &loose(r)));
            (closeness(&l, &loose(p.id)).max(by_repo), p.id)
        })
        .filter(|(score, _)| *score >= SUGGEST_AT_LEAST)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored.into_iter().take(n).map(|(_, id)| id).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_people_type() {
        for name in [
            "Llama-2-7b-hf",
            "llama-2-7b-hf",
            "meta-llama/Llama-2-7b-hf",
            "llama-2-7b",
            "LLAMA-2-7B",
        ] {
            assert_eq!(find(name).map(|p| p.id), Some("Llama-2-7b-hf"), "{name}");
        }
        assert_eq!(find("openai-community/gpt2").map(|p| p.id), Some("gpt2"));
        assert!(find("llama-9b").is_none());
    }

    #[test]
    fn misses_suggest_neighbours() {
        let s = suggest("lama-2-7b", 3);
        assert!(s.contains(&"Llama-2-7b-hf"), "{s:?}");
        // Contained on `-` boundaries ranks first, above names that merely look alike
        // (`Llama-3.1-8B` is 0.97 from `llama-3-8b` by Jaro-Winkler).
        assert_eq!(suggest("llama-3-8b", 3).first(), Some(&"Meta-Llama-3-8B"));
        assert_eq!(suggest("mistral", 1), ["Mistral-7B-v0.1"]);
        // `gpt5` is 0.88 from `gpt2`; `xyz-13b` is 0.71 from `opt-13b`, under the bar.
        assert_eq!(suggest("gpt5", 1), ["gpt2"]);
        for far in ["nope", "foo", "config", "xyz-13b"] {
            assert!(suggest(far, 3).is_empty(), "{far}: {:?}", suggest(far, 3));
        }
    }

    #[test]
    fn tuned_names_reach_their_base() {
        for (name, base) in [
            ("Llama-3.1-8B-Instruct", "Llama-3.1-8B"),
            ("meta-llama/Meta-Llama-3-8B-Instruct", "Meta-Llama-3-8B"),
            ("meta-llama/Llama-2-7b-chat-hf", "Llama-2-7b-hf"),
            ("mistralai/Mistral-7B-Instruct-v0.1", "Mistral-7B-v0.1"),
            ("Mistral-Nemo-Instruct-2407", "Mistral-Nemo-Base-2407"),
            ("Qwen/Qwen3-30B-A3B-Instruct-2507", "Qwen3-30B-A3B"),
            ("Qwen2.5-7B-Instruct", "Qwen2.5-7B"),
            ("google/gemma-2-9b-it", "gemma-2-9b"),
            ("gemma-3-1b-it", "gemma-3-1b-pt"),
        ] {
            assert_eq!(find_tuned(name).map(|p| p.id), Some(base), "{name}");
        }
        // No tuning part; a base that is not a preset; a tuned release with other shapes;
        // `-it` only as a whole part (`Qwen2.5-7B-Edit` is not `…-it`).
        for name in [
            "Llama-3.1-8B",
            "Llama-3.1-9B-Instruct",
            "Mistral-7B-Instruct-v0.2",
            "Mixtral-8x22B-Instruct-v0.1",
            "Qwen2.5-7B-Edit",
        ] {
            assert!(find_tuned(name).is_none(), "{name}");
        }
    }

    #[test]
    fn containment_is_on_name_boundaries() {
        assert!(contains_on_boundaries("meta-llama-3-8b", "llama-3-8b"));
        assert!(contains_on_boundaries("mistral-7b-v0.1", "mistral"));
        assert!(!contains_on_boundaries("tinyllama-1.1b", "llama"));
        assert!(!contains_on_boundaries("llama-3-8b", "lama-3"));
    }
}

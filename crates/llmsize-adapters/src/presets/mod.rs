//! Finding a built-in preset by the names people type.
//!
//! Accepted: the id (`Llama-2-7b-hf`), the Hub repository (`meta-llama/Llama-2-7b-hf`), either
//! case-insensitively, and a loose form without the organisation and a trailing `-hf`
//! (`llama-2-7b`). A miss suggests the nearest names.

mod list;

pub use list::{PRESETS, Preset};

/// Lowercase, without an `org/` prefix and a trailing `-hf`.
fn loose(name: &str) -> String {
    let lower = name.trim().to_lowercase();
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

/// Up to `n` preset ids nearest to `name` (Jaro-Winkler on the loose forms).
#[must_use]
pub fn suggest(name: &str, n: usize) -> Vec<&'static str> {
    let l = loose(name);
    let mut scored: Vec<(f64, &'static str)> = PRESETS
        .iter()
        .map(|p| (strsim::jaro_winkler(&l, &loose(p.id)), p.id))
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
    }
}

//! No integer arithmetic on input goes unchecked: the crates that read configs, headers,
//! flags and requests deny clippy's `arithmetic_side_effects` (CI runs clippy with `-D
//! warnings`), so `+`, `-`, `*`, `/` and `%` on an integer there do not build unless they go
//! through `llmsize_core::checked`. This test keeps that switch on and its exceptions few and
//! argued: removing the attribute, or allowing the lint without a reason, fails here.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

use std::path::{Path, PathBuf};

/// The crates every input flows through, and their library roots.
const CHECKED_CRATES: [&str; 5] = [
    "llmsize-core",
    "llmsize-train",
    "llmsize-weights",
    "llmsize-adapters",
    "llmsize-engine",
];

/// The attribute each library root carries (tests are exempt: they build hostile numbers).
const DENY: &str = "#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]";

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_input_crate_denies_unchecked_arithmetic() {
    for name in CHECKED_CRATES {
        let lib = crates_dir().join(name).join("src/lib.rs");
        let text = std::fs::read_to_string(&lib).unwrap();
        assert!(
            text.lines().any(|l| l.trim() == DENY),
            "{}: the library root must carry `{DENY}`",
            lib.display()
        );
    }
}

/// Each source file of the checked crates, as its path and its lines.
fn for_each_source(mut visit: impl FnMut(&std::path::Path, &[&str])) {
    for name in CHECKED_CRATES {
        let mut files = Vec::new();
        rust_files(&crates_dir().join(name).join("src"), &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            visit(&file, &lines);
        }
    }
}

/// Every place that lets the lint through says why, on the attribute itself.
#[test]
fn every_exception_states_its_reason() {
    let mut exceptions = Vec::new();
    for_each_source(|file, lines| {
        for (i, line) in lines.iter().enumerate() {
            let opens = (line.contains("allow(") || line.contains("expect("))
                && !line.trim_start().starts_with("//");
            // The attribute may span lines: `#[expect(\n clippy::…,\n reason = "…"\n)]`.
            let window = lines[i..lines.len().min(i + 6)].join("\n");
            let attribute = window.split(")]").next().unwrap_or_default();
            if opens && attribute.contains("clippy::arithmetic_side_effects") {
                assert!(
                    attribute.contains("reason ="),
                    "{}:{}: allowing `arithmetic_side_effects` needs a `reason = \"…\"` that proves the operands bounded",
                    file.display(),
                    i + 1
                );
                exceptions.push(format!("{}:{}", file.display(), i + 1));
            }
        }
    });
    // A handful of small, argued exceptions; a flood means the lint is being worked around.
    assert!(
        exceptions.len() <= 40,
        "{} exceptions to `arithmetic_side_effects`:\n{}",
        exceptions.len(),
        exceptions.join("\n")
    );
}

/// A saturating `+` or `·` turns an overflow into a number that looks like data
/// (`$18,446,744,073,709,551,615`); each one left says on its line why it cannot reach a
/// printed figure.
#[test]
fn saturating_arithmetic_is_argued() {
    let mut bare = Vec::new();
    for_each_source(|file, lines| {
        let mut in_tests = false;
        for (i, line) in lines.iter().enumerate() {
            if line.trim() == "#[cfg(test)]" {
                in_tests = true;
            }
            if in_tests {
                continue;
            }
            if line.contains("saturating_mul") || line.contains("saturating_add") {
                let here = lines[i.saturating_sub(2)..=i].join("\n");
                if !here.contains("saturates:") {
                    bare.push(format!("{}:{}: {}", file.display(), i + 1, line.trim()));
                }
            }
        }
    });
    assert!(
        bare.is_empty(),
        "saturating arithmetic without a `// saturates: <why it never reaches data>` comment:\n{}",
        bare.join("\n")
    );
}

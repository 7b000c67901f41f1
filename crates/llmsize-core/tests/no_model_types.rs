//! Core holds no `model_type` string: what a model type means beyond its shapes is in its
//! record (`llmsize-adapters`, `hf_config/facts.rs`), copied onto the spec as
//! `ModelSpec::facts`. Core may carry the name and print it, never decide by it. This test
//! reads core's own sources and the training planner's (`llmsize-train`, outside their
//! `#[cfg(test)]` modules) and names every line that compares, matches or dispatches on a
//! `model_type`.

use std::fs;
use std::path::{Path, PathBuf};

/// The ways code decides by a model type's name.
const DECIDING: &[&str] = &[
    "model_type ==",
    "== model_type",
    "model_type.as_str()",
    "model_type.starts_with",
    "model_type.ends_with",
    "model_type.contains",
    "model_type.to_ascii_lowercase",
    "match model_type",
    "matches!(model_type",
    "(&spec.model_type)",
    "(&input.spec.model_type)",
    "model_type: &str",
];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            sources(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

#[test]
fn core_never_decides_by_a_model_type_name() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files).unwrap();
    assert!(
        files.len() > 20,
        "core's sources found under {}",
        root.display()
    );
    // The training planner, split out of core, reads the same facts off the same spec.
    let train = Path::new(env!("CARGO_MANIFEST_DIR")).join("../llmsize-train/src");
    let core_files = files.len();
    sources(&train, &mut files).unwrap();
    assert!(
        files.len() > core_files + 5,
        "the training planner's sources found under {}",
        train.display()
    );
    let mut found = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file).unwrap();
        // The tests at the end of a file may build a spec of a named type.
        let code = text.split("#[cfg(test)]").next().unwrap_or(&text);
        for (n, line) in code.lines().enumerate() {
            if DECIDING.iter().any(|p| line.contains(p)) {
                found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "core decides by a model type's name; put the fact in the type's record \
         (llmsize-adapters hf_config/facts.rs) and read it from ModelSpec::facts:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_sees_a_dispatch_when_there_is_one() {
    // The patterns are not dead: each of these lines, as core once had them, is caught.
    let old = [
        "    let leaf = match (t.kind, spec.model_type.as_str()) {",
        "    let swa = llama_cpp_has_swa(&spec.model_type);",
        "pub fn peft_default_targets(model_type: &str) -> Option<&'static [&'static str]> {",
    ];
    for line in old {
        assert!(DECIDING.iter().any(|p| line.contains(p)), "{line}");
    }
}

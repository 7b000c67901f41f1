//! The README lists the supported model types from the registry itself: this test renders the
//! list from `llmsize presets --types --json` and compares it with the block between the
//! `model-types` markers (`LLMSIZE_BLESS=1 cargo test --test readme` rewrites the block).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use std::fmt::Write as _;

use common::llmsize_env;
use serde_json::Value;

const START: &str = "<!-- model-types:start";
const END: &str = "<!-- model-types:end -->";

#[test]
fn readme_lists_the_registry() {
    let r = llmsize_env(&["presets", "--types", "--json"], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rows: Vec<Value> = serde_json::from_str(&r.stdout).unwrap();
    // Groups in registry order, each with its types.
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for row in &rows {
        let group = row["group"].as_str().unwrap().to_owned();
        let t = format!("`{}`", row["model_type"].as_str().unwrap());
        match groups.iter_mut().find(|(g, _)| *g == group) {
            Some((_, list)) => list.push(t),
            None => groups.push((group, vec![t])),
        }
    }
    let mut block = format!(
        "{START} (generated from the registry, {} types: `llmsize presets --types`) -->\n",
        rows.len()
    );
    for (group, list) in &groups {
        let _ = writeln!(block, "- {group}: {}", list.join(", "));
    }
    block.push_str(END);

    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");
    let readme = std::fs::read_to_string(path).unwrap();
    let start = readme.find(START).expect("the README has the start marker");
    let end = readme.find(END).expect("the README has the end marker") + END.len();
    if readme[start..end] != block {
        if std::env::var_os("LLMSIZE_BLESS").is_some() {
            let fixed = format!("{}{block}{}", &readme[..start], &readme[end..]);
            std::fs::write(path, fixed).unwrap();
        } else {
            panic!(
                "the README's list of model types differs from the registry; expected:\n{block}"
            );
        }
    }
}

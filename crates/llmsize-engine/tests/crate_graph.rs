//! The workspace's internal dependency graph is the one drawn in `crates/README.md`: a new
//! crate or a new edge (say, the CLI reaching past the engine into `llmsize-weights`) must
//! be drawn there first.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The edges of the `crate-graph` fenced block: `a -> b, c` lines.
fn drawn() -> Graph {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("crates/README.md exists");
    let block = readme
        .split("```crate-graph\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("crates/README.md has a ```crate-graph block");
    let mut graph = Graph::new();
    for line in block.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (from, to) = line
            .split_once("->")
            .unwrap_or_else(|| panic!("`{line}`: expected `crate -> dep, dep`"));
        let deps = to
            .split(',')
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(str::to_owned)
            .collect();
        let previous = graph.insert(from.trim().to_owned(), deps);
        assert!(previous.is_none(), "`{}` is drawn twice", from.trim());
    }
    graph
}

/// The normal dependencies between workspace crates, from `cargo metadata`.
fn actual() -> Graph {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata is JSON");
    let packages = metadata["packages"].as_array().expect("packages");
    let members: BTreeSet<String> = packages
        .iter()
        .filter_map(|p| p["name"].as_str().map(str::to_owned))
        .collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .filter(|d| d["kind"].is_null())
                .filter_map(|d| d["name"].as_str())
                .filter(|name| members.contains(*name))
                .map(str::to_owned)
                .collect();
            (p["name"].as_str().expect("name").to_owned(), deps)
        })
        .collect()
}

#[test]
fn crate_graph_is_the_one_drawn_in_the_readme() {
    let drawn = drawn();
    let actual = actual();
    for (krate, deps) in &actual {
        let expected = drawn.get(krate).unwrap_or_else(|| {
            panic!("`{krate}` is not drawn in the ```crate-graph block of crates/README.md")
        });
        assert_eq!(
            deps, expected,
            "`{krate}` depends on {deps:?}, crates/README.md draws {expected:?}"
        );
    }
    // Drawn but not (yet) in this workspace: only the crate being added on another branch.
    for krate in drawn.keys().filter(|k| !actual.contains_key(*k)) {
        assert_eq!(
            krate, "llmsize-fuzz",
            "`{krate}` is drawn in crates/README.md but is not a workspace crate"
        );
    }
}

#[test]
fn the_cli_reaches_the_weights_only_through_the_engine() {
    let actual = actual();
    assert!(!actual["llmsize-cli"].contains("llmsize-weights"));
    assert!(!actual["llmsize-cli"].contains("llmsize-adapters"));
    assert!(actual["llmsize-cli"].contains("llmsize-engine"));
}

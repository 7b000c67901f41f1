//! Print each config's layer kinds and runs, one JSON line per file:
//! `{"file", "stacks": [{"kinds": ["<hash>"...], "runs": [[kind, start, count]...]}]}`.
//!
//! A kind's hash is of its full description (`Layer`'s `Debug`), so two configs of one type
//! that differ only in their layer count give equal hashes for equal layers. The training
//! truth's config shrinker (`tools/train-truth/shrink.py`) uses it to keep every layer kind
//! of a type while cutting its layers.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use llmsize_adapters::hf_config::{ReadOptions, read_config};

#[allow(clippy::print_stdout, reason = "a tool whose output is its stdout")]
fn main() {
    for file in std::env::args().skip(1) {
        let line = match std::fs::read_to_string(&file) {
            Err(e) => format!("{{\"file\":{file:?},\"error\":{:?}}}", e.to_string()),
            Ok(text) => match read_config(&text, &file, &file, &ReadOptions::default()) {
                Err(e) => format!("{{\"file\":{file:?},\"error\":{:?}}}", e.to_string()),
                Ok(spec) => {
                    let stacks: Vec<String> = spec
                        .stacks
                        .iter()
                        .map(|s| {
                            let kinds: Vec<String> = s
                                .layers
                                .kinds()
                                .iter()
                                .map(|k| {
                                    let mut h = DefaultHasher::new();
                                    format!("{k:?}").hash(&mut h);
                                    format!("\"{:016x}\"", h.finish())
                                })
                                .collect();
                            let runs: Vec<String> = s
                                .layers
                                .runs()
                                .iter()
                                .map(|r| format!("[{},{},{}]", r.kind, r.start, r.count))
                                .collect();
                            format!(
                                "{{\"kinds\":[{}],\"runs\":[{}]}}",
                                kinds.join(","),
                                runs.join(",")
                            )
                        })
                        .collect();
                    format!("{{\"file\":{file:?},\"stacks\":[{}]}}", stacks.join(","))
                }
            },
        };
        println!("{line}");
    }
}

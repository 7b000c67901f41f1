//! One report, several exporters (issue 12): the table, Markdown, CSV (and the SVG and Mermaid
//! pictures) of the same question are snapshots for gpt2, Llama-2-7b and Mixtral; Markdown has
//! the table's columns; CSV is one row per line item with the plain numbers `--json` gives.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use common::llmsize;
use serde_json::Value;

const MODELS: [&str; 3] = ["gpt2", "llama-2-7b", "Mixtral-8x7B-v0.1"];

/// The questions asked of each model: `params`, `memory` on a GPU, `flops` with speed.
fn questions(model: &str) -> Vec<(&'static str, Vec<String>)> {
    let m = model.to_owned();
    vec![
        ("params", vec!["params".into(), m.clone()]),
        (
            "memory",
            vec!["memory".into(), m.clone(), "--gpu".into(), "rtx4090".into()],
        ),
        (
            "flops",
            vec!["flops".into(), m, "--gpu".into(), "h100".into()],
        ),
    ]
}

fn run(args: &[String], format: &str) -> String {
    let mut a: Vec<&str> = args.iter().map(String::as_str).collect();
    a.extend(["--format", format]);
    let r = llmsize(&a);
    assert!(r.code == 0 || r.code == 1, "{a:?}: {}", r.stderr);
    r.stdout
}

#[test]
fn snapshots_of_every_text_exporter() {
    for model in MODELS {
        for (name, args) in questions(model) {
            for format in ["table", "markdown", "csv"] {
                let out = run(&args, format);
                insta::assert_snapshot!(format!("{name}_{model}_{format}"), out);
            }
        }
    }
}

/// The header cells of the first Markdown table, and of the terminal table printed first.
fn markdown_headers(md: &str) -> Vec<Vec<String>> {
    md.lines()
        .zip(md.lines().skip(1))
        .filter(|(_, rule)| rule.starts_with("| :--") || rule.starts_with("| --:"))
        .map(|(head, _)| {
            head.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_owned())
                .collect()
        })
        .collect()
}

#[test]
fn markdown_has_the_tables_columns() {
    for model in MODELS {
        let args = vec!["params".to_owned(), model.to_owned()];
        let md = run(&args, "markdown");
        let table = run(&args, "table");
        let headers = markdown_headers(&md);
        assert!(!headers.is_empty(), "{md}");
        for head in &headers {
            // Every header of the Markdown tables is a header line of the terminal table,
            // in the same order.
            let words: Vec<&str> = head
                .iter()
                .map(String::as_str)
                .filter(|h| !h.is_empty())
                .collect();
            assert!(
                table.lines().any(|l| {
                    let mut rest = l;
                    words.iter().all(|w| {
                        rest.find(w).is_some_and(|i| {
                            rest = &rest[i + w.len()..];
                            true
                        })
                    })
                }),
                "{words:?} is not a header of the table:\n{table}"
            );
        }
    }
}

#[test]
fn csv_rows_carry_the_json_numbers() {
    for model in MODELS {
        let json: Value =
            serde_json::from_str(&llmsize(&["params", model, "--json"]).stdout).unwrap();
        let csv = llmsize(&["params", model, "--format", "csv"]).stdout;
        let mut reader = csv::Reader::from_reader(csv.as_bytes());
        let header: Vec<String> = reader
            .headers()
            .unwrap()
            .iter()
            .map(str::to_owned)
            .collect();
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        let (component, parameters) = (col("component"), col("parameters"));
        let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
        for r in &rows {
            assert_eq!(r.len(), header.len(), "one field per column: {r:?}");
        }
        let value = |name: &str| -> u64 {
            rows.iter()
                .find(|r| &r[component] == name)
                .unwrap_or_else(|| panic!("no {name} row in\n{csv}"))[parameters]
                .parse()
                .unwrap()
        };
        assert_eq!(value("total"), json["total"].as_u64().unwrap());
        for (name, n) in json["components"].as_object().unwrap() {
            if n.as_u64().unwrap() > 0 {
                assert_eq!(value(name), n.as_u64().unwrap(), "{model} {name}");
            }
        }
    }
}

/// Every text of an SVG, in document order.
fn svg_texts(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).expect("the SVG is valid XML");
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| {
            n.descendants()
                .filter(roxmltree::Node::is_text)
                .filter_map(|t| t.text())
                .collect::<String>()
                .trim()
                .to_owned()
        })
        .collect()
}

#[test]
fn svg_and_mermaid_pictures() {
    for model in MODELS {
        let json: Value =
            serde_json::from_str(&llmsize(&["params", model, "--json"]).stdout).unwrap();
        let svg = llmsize(&["params", model, "--format", "svg"]).stdout;
        // Deterministic: the same question draws the same bytes.
        assert_eq!(svg, llmsize(&["params", model, "--format", "svg"]).stdout);
        // Every component's exact count is a text of the picture (the charts crate's own
        // tests read the bars' lengths back too).
        let texts = svg_texts(&svg);
        for (name, n) in json["components"].as_object().unwrap() {
            let n = n.as_u64().unwrap();
            if n > 0 {
                let shown = llmsize_core::units::thousands(n);
                assert!(texts.iter().any(|t| t == &shown), "{model} {name} {shown}");
            }
        }
        insta::assert_snapshot!(format!("params_{model}_svg"), svg);
        let mermaid = llmsize(&["params", model, "--format", "mermaid"]).stdout;
        assert!(mermaid.starts_with("flowchart TD\n"), "{mermaid}");
        let total = llmsize_core::units::thousands(json["total"].as_u64().unwrap());
        assert!(mermaid.contains(&total), "{mermaid}");
        insta::assert_snapshot!(format!("params_{model}_mermaid"), mermaid);
        for (name, args) in questions(model).into_iter().skip(1) {
            let svg = run(&args, "svg");
            svg_texts(&svg);
            insta::assert_snapshot!(format!("{name}_{model}_svg"), svg);
        }
    }
    // Pictures only where a command has one: exit 2 with the commands that do.
    let r = llmsize(&["gpus", "--format", "svg"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("`params`, `memory`, `flops` and `train` draw one"),
        "{}",
        r.stderr
    );
    assert_eq!(llmsize(&["memory", "gpt2", "--format", "mermaid"]).code, 2);
    for command in [
        &["design", "--like", "gpt2", "--format", "svg"][..],
        &["inspect", "gpt2", "--format", "svg"],
        &["presets", "--format", "mermaid"],
    ] {
        let r = llmsize(command);
        assert_eq!(r.code, 2, "{command:?}: {}", r.stdout);
        assert!(
            r.stdout.is_empty() && r.stderr.contains("has no"),
            "{}",
            r.stderr
        );
    }
}

/// The README's pictures are the binary's own output, byte for byte (the charts are
/// deterministic); `LLMSIZE_BLESS=1` rewrites them.
#[test]
fn readme_pictures_are_the_binarys_output() {
    let docs = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs");
    let pictures: [(&str, &[&str]); 2] = [
        ("gpt2-params.svg", &["params", "gpt2", "--format", "svg"]),
        (
            "llama-2-7b-kv-sweep.svg",
            &[
                "memory",
                "llama-2-7b",
                "--sweep",
                "seq=1k,4k,16k,32k,64k",
                "--gpu",
                "rtx4090",
                "--format",
                "svg",
            ],
        ),
    ];
    for (file, args) in pictures {
        let drawn = llmsize(args).stdout;
        let path = docs.join(file);
        if std::env::var_os("LLMSIZE_BLESS").is_some() {
            std::fs::write(&path, &drawn).unwrap();
        }
        let kept = std::fs::read_to_string(&path).unwrap();
        assert_eq!(kept, drawn, "{file} is not `llmsize {}`", args.join(" "));
    }
}

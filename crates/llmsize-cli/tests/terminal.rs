//! A terminal-friendly CLI (issue 12): every command's table fits 80 columns under
//! `COLUMNS=80` — each command on presets and fixture files, and every example of the README
//! that needs no file of the reader's — while `--wide` (and a pipe without `COLUMNS`) keeps
//! one line per row; colour only on a terminal and never with `NO_COLOR`; shell completions and
//! a man page from clap's own generators.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use std::path::PathBuf;

use common::{fits_80_keeping_every_number, llmsize};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture(rel: &str) -> String {
    repo()
        .join("tests/fixtures/files")
        .join(rel)
        .display()
        .to_string()
}

fn fits_80(args: &[&str]) {
    fits_80_keeping_every_number(args);
}

#[test]
fn every_command_fits_80_columns() {
    let mistral = fixture("mistral");
    let gguf = fixture("gguf-whole/tiny.gguf");
    let cases: Vec<Vec<&str>> = vec![
        vec!["params", "gpt2"],
        vec!["params", "llama-2-7b"],
        vec!["params", "Mixtral-8x7B-v0.1"],
        vec!["params", "DeepSeek-V3"],
        vec!["params", "gpt2", "--explain"],
        vec![
            "params",
            "gpt2",
            "llama-2-7b",
            "Mixtral-8x7B-v0.1",
            "DeepSeek-V3",
            "gpt-oss-120b",
        ],
        vec!["params", &gguf],
        vec!["memory", "llama-2-7b", "--gpu", "rtx4090"],
        vec!["memory", "llama-2-7b", "--explain"],
        vec!["flops", "gpt2"],
        vec!["flops", "llama-2-7b", "--gpu", "h100", "--explain"],
        vec!["train", "gpt2"],
        vec![
            "train",
            "llama-2-7b",
            "--gpu",
            "h100x8",
            "--zero",
            "3",
            "--explain",
        ],
        vec!["inspect", &mistral],
        vec!["audit", &mistral],
        vec!["inspect", &gguf],
        vec!["audit", &gguf],
        vec!["presets"],
        vec!["presets", "--types"],
        vec!["gpus"],
    ];
    for args in &cases {
        fits_80(args);
    }
}

/// The README's example commands (lines `llmsize …` of its `sh` blocks) that need nothing of
/// the reader's: no `path/to` file, no weight file in the current directory, no network.
fn readme_examples() -> Vec<Vec<String>> {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let mut out = Vec::new();
    let mut in_sh = false;
    for line in readme.lines() {
        if line.starts_with("```") {
            in_sh = !in_sh && line.trim() == "```sh";
            continue;
        }
        let Some(rest) = line.strip_prefix("llmsize ").filter(|_| in_sh) else {
            continue;
        };
        // The command without its comment and its redirection.
        let command = rest.split(" #").next().unwrap();
        let command = command.split(" >").next().unwrap().trim();
        let words: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
        let needs_files = words.iter().any(|w| {
            w.contains("path/to")
                || w.contains("$(")
                || w.to_ascii_lowercase().ends_with(".gguf")
                || w.to_ascii_lowercase().ends_with(".safetensors")
                || w == "--online"
                || w == "--json"
                || w.contains(':')
        });
        // A Hub id that is not a preset reads the reader's cache; a server runs until stopped;
        // pictures, Markdown, CSV and scripts are not terminal tables.
        let not_a_table = words.first().is_some_and(|w| {
            ["inspect", "audit", "serve", "completions", "man"].contains(&w.as_str())
        }) || words
            .windows(2)
            .any(|w| w[0] == "--format" && w[1] != "table");
        if !needs_files && !not_a_table {
            out.push(words);
        }
    }
    out
}

#[test]
fn every_readme_example_fits_80_columns() {
    let examples = readme_examples();
    // The tour has 29 such lines today; a README that lost its examples fails here.
    assert!(examples.len() >= 25, "{examples:?}");
    for words in &examples {
        let args: Vec<&str> = words.iter().map(String::as_str).collect();
        fits_80(&args);
    }
}

/// `script` (util-linux; Debian's essential `bsdutils`) gives the binary a pseudo-terminal, as
/// a user's shell does.
fn on_a_terminal(command: &str, env: &[(&str, &str)]) -> String {
    let mut cmd = std::process::Command::new("script");
    cmd.args(["-qec", command, "/dev/null"]);
    cmd.env_remove("NO_COLOR").env("COLUMNS", "100");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn colour_on_a_terminal_only_and_never_with_no_color() {
    let bin = env!("CARGO_BIN_EXE_llmsize");
    let command = format!("{bin} params gpt2");
    let tty = on_a_terminal(&command, &[]);
    // Bold headers and total on a terminal…
    assert!(tty.contains("\u{1b}[1m"), "{tty}");
    assert!(tty.contains("124,439,808"), "{tty}");
    // …none with NO_COLOR, none in a pipe.
    let no_color = on_a_terminal(&command, &[("NO_COLOR", "1")]);
    assert!(!no_color.contains('\u{1b}'), "{no_color}");
    assert!(!llmsize(&["params", "gpt2"]).stdout.contains('\u{1b}'));
}

#[test]
fn without_columns_the_terminals_own_width_is_used() {
    let bin = env!("CARGO_BIN_EXE_llmsize");
    // A pseudo-terminal of 24 × 72 and no COLUMNS: the table fits the terminal itself.
    let out = std::process::Command::new("script")
        .args([
            "-qec",
            &format!("stty rows 24 cols 72; {bin} memory Meta-Llama-3-8B --gpu rtx4090x3"),
            "/dev/null",
        ])
        .env_remove("COLUMNS")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    assert!(text.contains("19,466,810,368"), "{text}");
    for line in text.lines() {
        assert!(
            line.chars().count() <= 72,
            "{line:?} is wider than the terminal"
        );
    }
}

#[test]
fn completions_for_every_shell_name_every_command() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let r = llmsize(&["completions", shell]);
        assert_eq!(r.code, 0, "{shell}: {}", r.stderr);
        for command in [
            "params", "memory", "flops", "train", "inspect", "audit", "serve",
        ] {
            assert!(
                r.stdout.contains(command),
                "{shell} completion lacks {command}"
            );
        }
        // Options of a subcommand are completed too.
        assert!(
            r.stdout.contains("kv-dtype"),
            "{shell} lacks memory's --kv-dtype"
        );
    }
    assert_eq!(llmsize(&["completions", "tcsh"]).code, 2);
}

#[test]
fn man_page_documents_every_command() {
    let r = llmsize(&["man"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains(".TH llmsize 1"), "{}", r.stdout);
    for command in [
        "PARAMS", "MEMORY", "FLOPS", "TRAIN", "INSPECT", "AUDIT", "SERVE",
    ] {
        assert!(
            r.stdout.contains(&format!(".SH \"LLMSIZE {command}\"")),
            "no section for {command}"
        );
    }
    assert!(
        r.stdout.contains("\\-\\-seq\\-len"),
        "memory's options are documented"
    );
}

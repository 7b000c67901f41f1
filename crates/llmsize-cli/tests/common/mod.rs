//! Running the `llmsize` binary in tests, isolated from the machine's Hugging Face setup.

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
#![allow(dead_code, reason = "each test binary uses a different part")]

use std::process::Command;

/// What a run printed and how it exited.
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// Run `llmsize` with `env` set and the Hugging Face variables of the machine removed.
pub(crate) fn llmsize_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    run(args, env, None)
}

/// Run `llmsize` from the directory `dir` (paths in the arguments are relative to it).
pub(crate) fn llmsize_in(dir: &str, args: &[&str]) -> Run {
    run(args, &[], Some(dir))
}

fn run(args: &[&str], env: &[(&str, &str)], dir: Option<&str>) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_llmsize"));
    if let Some(dir) = dir {
        cmd.current_dir(dir);
    }
    cmd.args(args);
    isolate(&mut cmd);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("the binary runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// Keep the machine's Hugging Face setup (cache, endpoint, token, home) out of a run.
pub(crate) fn isolate(cmd: &mut Command) {
    for k in [
        "HF_HOME",
        "HF_HUB_CACHE",
        "HUGGINGFACE_HUB_CACHE",
        "HF_ENDPOINT",
        "HF_TOKEN",
        "XDG_CACHE_HOME",
    ] {
        cmd.env_remove(k);
    }
    cmd.env("HOME", "/nonexistent-home-for-tests");
}

/// Run `llmsize`.
pub(crate) fn llmsize(args: &[&str]) -> Run {
    llmsize_env(args, &[])
}

/// Run `llmsize` in a terminal of `width` columns (`COLUMNS`; no colour).
pub(crate) fn at_width(args: &[&str], width: usize) -> Run {
    llmsize_env(args, &[("COLUMNS", &width.to_string()), ("NO_COLOR", "1")])
}

/// An answer (exit 0, or 1 for a well-formed "no"), something printed, and no stdout line
/// wider than `width` characters (not bytes: `×`, `·`, `–` are one each).
pub(crate) fn assert_fits(args: &[&str], r: &Run, width: usize) {
    assert!(
        r.code == 0 || r.code == 1,
        "`llmsize {}` exited {}: {}",
        args.join(" "),
        r.code,
        r.stderr
    );
    assert!(!r.stdout.trim().is_empty(), "{args:?} printed nothing");
    for line in r.stdout.lines() {
        assert!(
            line.chars().count() <= width,
            "`COLUMNS={width} llmsize {}`: a line of {} columns:\n{line}\n\n{}",
            args.join(" "),
            line.chars().count(),
            r.stdout
        );
    }
}

/// The exact counts of a text: words of digits in groups of three (`6,738,415,616`).
pub(crate) fn exact_numbers(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_ascii_digit() || c == ','))
        .map(|w| w.trim_matches(','))
        .filter(|w| {
            w.contains(',')
                && w.split(',').skip(1).all(|g| g.len() == 3)
                && w.split(',').all(|g| !g.is_empty())
        })
        .map(str::to_owned)
        .collect()
}

/// `COLUMNS=80`: an answer with no line wider than 80 and every exact count of the one-line
/// layout still there (folding moves words, it drops none); `--wide` under `COLUMNS=80` is the
/// piped output, one line per row.
pub(crate) fn fits_80_keeping_every_number(args: &[&str]) {
    let narrow = at_width(args, 80);
    assert_fits(args, &narrow, 80);
    let piped = llmsize(args);
    for n in exact_numbers(&piped.stdout) {
        assert!(
            narrow.stdout.contains(&n),
            "{args:?}: {n} is missing at 80 columns:\n{}",
            narrow.stdout
        );
    }
    let mut wide_args = args.to_vec();
    wide_args.push("--wide");
    let wide = at_width(&wide_args, 80);
    assert_eq!(
        wide.stdout, piped.stdout,
        "{args:?}: --wide is not the piped output"
    );
    assert_eq!(wide.code, narrow.code, "{args:?}");
}

/// Split a command as a POSIX shell does for the words `llmsize design` prints: plain words
/// and single-quoted ones.
pub(crate) fn shell_words(cmd: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let (mut quoted, mut any) = (false, false);
    for c in cmd.chars() {
        match (quoted, c) {
            (_, '\'') => {
                quoted = !quoted;
                any = true;
            }
            (false, ' ') => {
                if any || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                any = false;
            }
            _ => word.push(c),
        }
    }
    if any || !word.is_empty() {
        words.push(word);
    }
    words
}

impl Run {
    /// The run as uv's snapshots show it: status, exit code, stdout and stderr together, so a
    /// snapshot pins what a user sees and how the program ends.
    pub(crate) fn snapshot(&self) -> String {
        format!(
            "success: {}\nexit_code: {}\n----- stdout -----\n{}\n----- stderr -----\n{}",
            self.code == 0,
            self.code,
            self.stdout,
            self.stderr
        )
    }
}

/// Run `llmsize ARGS…` (isolated from the machine's HF variables) and snapshot its exit code,
/// stdout and stderr together: `llmsize_snapshot!("name", ["params", "gpt2"])`.
#[macro_export]
macro_rules! llmsize_snapshot {
    ($name:expr, [$($arg:expr),* $(,)?]) => {{
        let run = $crate::common::llmsize(&[$($arg),*]);
        insta::assert_snapshot!($name, run.snapshot());
        run
    }};
}

/// A metadata-only GGUF (v3, no tensors) of architecture `arch` with the given `u32` keys, as
/// llama.cpp's writer lays it out (the metadata padded to 32 bytes).
pub(crate) fn metadata_gguf(arch: &str, kvs: &[(&str, u32)]) -> Vec<u8> {
    fn string(out: &mut Vec<u8>, s: &str) {
        out.extend((s.len() as u64).to_le_bytes());
        out.extend(s.as_bytes());
    }
    let mut out = b"GGUF".to_vec();
    out.extend(3u32.to_le_bytes());
    out.extend(0u64.to_le_bytes()); // tensors
    out.extend((kvs.len() as u64 + 1).to_le_bytes());
    string(&mut out, "general.architecture");
    out.extend(8u32.to_le_bytes()); // string
    string(&mut out, arch);
    for (k, v) in kvs {
        string(&mut out, k);
        out.extend(4u32.to_le_bytes()); // u32
        out.extend(v.to_le_bytes());
    }
    while !out.len().is_multiple_of(32) {
        out.push(0);
    }
    out
}

//! Output that cannot fail into a crash: a full or closed stdout, a stderr that cannot be
//! written, a reader that closes the pipe. Each run ends with its exit status (never 101, a
//! panic) and says what it could.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;

use std::fs::OpenOptions;
use std::process::{Command, Stdio};

fn command(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_llmsize"));
    cmd.args(args);
    common::isolate(&mut cmd);
    cmd
}

fn dev_full() -> Stdio {
    Stdio::from(OpenOptions::new().write(true).open("/dev/full").unwrap())
}

/// `llmsize … > /dev/full`: the output cannot be written, so the run failed: exit 2, saying so.
#[test]
fn a_full_stdout_is_an_error() {
    for args in [
        vec!["params", "gpt2"],
        vec!["params", "gpt2", "--json"],
        vec!["--help"],
        vec!["--version"],
        vec!["completions", "bash"],
    ] {
        let out = command(&args).stdout(dev_full()).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(
            stderr.contains("cannot write the output to stdout: No space left on device"),
            "{args:?}: {stderr}"
        );
    }
}

/// `2> /dev/full`: nothing can report a failed write to stderr, so it is ignored (as ripgrep
/// does); the run ends as it would have: 0 with a warning, 2 with an error, never a panic.
#[test]
fn a_full_stderr_never_panics() {
    for (args, code) in [
        // Success with a warning (a key the family does not read).
        (vec!["params", "llama-2-7b", "--set", "foo_bar=1"], 0),
        // An error.
        (vec!["params", "no-such-model-anywhere"], 2),
        // A clap usage error.
        (vec!["params", "gpt2", "--no-such-flag"], 2),
        // A well-formed "no".
        (vec!["memory", "llama-2-7b", "--gpu", "rtx3060"], 1),
    ] {
        let out = command(&args)
            .stdout(Stdio::null())
            .stderr(dev_full())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{args:?}");
    }
    // The warning is there when stderr can be written.
    let out = command(&["params", "llama-2-7b", "--set", "foo_bar=1"])
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("warning: Llama-2-7b-hf: `--set foo_bar=1`"),
        "{stderr}"
    );
}

/// `| head -c0`: the reader is gone before the output is written. Quiet, with the status of
/// a C tool killed by SIGPIPE (141), so `set -o pipefail` sees a cut output.
#[test]
fn a_closed_pipe_is_quiet() {
    let mut child = command(&["presets"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(141));
    assert_eq!(String::from_utf8(out.stderr).unwrap(), "");
}

/// `>&-`: Rust's runtime reopens a closed standard descriptor on `/dev/null` (read-write)
/// before `main`, exactly as Python's `subprocess.DEVNULL` passes one, so the two cannot be
/// told apart: the run answers into `/dev/null` and exits as it would have, never with a
/// panic.
#[test]
fn a_closed_stdout_is_dev_null() {
    for (script, code) in [
        ("exec \"$0\" params gpt2 >&-", 0),
        ("exec \"$0\" params no-such-model-anywhere >&-", 2),
        ("exec \"$0\" params gpt2 2>&- >&-", 0),
    ] {
        let out = Command::new("sh")
            .args(["-c", script, env!("CARGO_BIN_EXE_llmsize")])
            .env("HOME", "/nonexistent-home-for-tests")
            .env_remove("HF_HOME")
            .env_remove("HF_HUB_CACHE")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{script}");
    }
}

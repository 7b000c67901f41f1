//! `llmsize serve`'s API and page, over HTTP against the real binary: every endpoint answers
//! what the command line prints with `--json` for the same question (byte for byte), bad
//! requests get 400 with the command line's own message, and nothing names a file.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;
mod server;

use common::llmsize;
use server::Server;

const GPT2_CONFIG: &str = r#"{"model_type": "gpt2", "n_layer": 12, "n_embd": 768, "n_head": 12, "vocab_size": 50257, "n_positions": 1024}"#;

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Each endpoint and the command line that asks the same question: the same bytes.
#[test]
fn every_endpoint_answers_as_the_command_line() {
    let server = Server::start();
    let cases: &[(&str, &[&str])] = &[
        ("/api/params?model=llama-2-7b", &["params", "llama-2-7b"]),
        (
            "/api/params?model=meta-llama%2FLlama-2-7b-hf",
            &["params", "meta-llama/Llama-2-7b-hf"],
        ),
        (
            "/api/design?like=llama-3-8b&params=8.03B&top=3",
            &[
                "design",
                "--like",
                "llama-3-8b",
                "--params",
                "8.03B",
                "--top",
                "3",
            ],
        ),
        (
            "/api/design?style=llama&params=7B&head_dim=128&gqa_group=4&tp=8",
            &[
                "design",
                "--style",
                "llama",
                "--params",
                "7B",
                "--head-dim",
                "128",
                "--gqa-group",
                "4",
                "--tp",
                "8",
            ],
        ),
        // `design --train-memory` and its training flags (issue 22: the API once refused them);
        // a narrow search, so that the debug build answers within the server's 2 s.
        (
            "/api/design?train_memory=h100&ctx=4096&batch=2&optimizer=adamw-8bit&checkpointing=1&hidden_range=2048..4096&layers_range=16..32&top=3",
            &[
                "design",
                "--train-memory",
                "h100",
                "--ctx",
                "4096",
                "--batch",
                "2",
                "--optimizer",
                "adamw-8bit",
                "--checkpointing",
                "--hidden-range",
                "2048..4096",
                "--layers-range",
                "16..32",
                "--top",
                "3",
            ],
        ),
        (
            "/api/design?train_memory=24GiB&lora_rank=16&qlora=1&zero=2&dp=4&precision=mixed&hidden_range=2048..4096&layers_range=16..32&top=2",
            &[
                "design",
                "--train-memory",
                "24GiB",
                "--lora-rank",
                "16",
                "--qlora",
                "--zero",
                "2",
                "--dp",
                "4",
                "--precision",
                "mixed",
                "--hidden-range",
                "2048..4096",
                "--layers-range",
                "16..32",
                "--top",
                "2",
            ],
        ),
        (
            "/api/params?model=gpt2&model=llama-2-7b",
            &["params", "gpt2", "llama-2-7b"],
        ),
        (
            "/api/memory?model=llama-2-7b&gpu=h100&seq=8192&batch=1&dtype=q4_k_m&kv_dtype=fp8",
            &[
                "memory",
                "llama-2-7b",
                "--gpu",
                "h100",
                "--seq-len",
                "8192",
                "--batch",
                "1",
                "--dtype",
                "q4_k_m",
                "--kv-dtype",
                "fp8",
            ],
        ),
        (
            "/api/flops?model=llama-2-7b&gpu=h100&seq=4096&batch=8",
            &[
                "flops",
                "llama-2-7b",
                "--gpu",
                "h100",
                "--seq-len",
                "4096",
                "--batch",
                "8",
            ],
        ),
        (
            "/api/train?model=llama-2-7b&gpu=h100x8&zero=3&checkpointing=1",
            &[
                "train",
                "llama-2-7b",
                "--gpu",
                "h100x8",
                "--zero",
                "3",
                "--checkpointing",
            ],
        ),
        ("/api/presets", &["presets"]),
        ("/api/presets?types=1", &["presets", "--types"]),
        ("/api/gpus", &["gpus"]),
    ];
    for (path, args) in cases {
        let answer = server.get(path);
        let mut cli_args = args.to_vec();
        cli_args.push("--json");
        let cli = llmsize(&cli_args);
        assert_eq!(cli.code, 0, "{cli_args:?}: {}", cli.stderr);
        assert_eq!(answer.status, 200, "{path}: {}", answer.body);
        assert_eq!(answer.content_type, "application/json", "{path}");
        assert_eq!(answer.outcome.as_deref(), Some("success"), "{path}");
        assert_eq!(answer.body, cli.stdout, "{path} differs from {cli_args:?}");
    }
    // And the numbers are the right ones, not merely the same: Llama-2-7b's exact total.
    let params = json(&server.get("/api/params?model=llama-2-7b").body);
    assert_eq!(params["total"], 6_738_415_616_u64);
    let memory = json(
        &server
            .get("/api/memory?model=llama-2-7b&gpu=h100&seq=8192")
            .body,
    );
    assert_eq!(memory["seq_len"], 8192);
    assert_eq!(memory["gpu"]["name"], "H100-SXM-80GB");
    // 2 (K, V) · 32 layers · 4096 (32 heads · 128) · 2 bytes per token, 8192 tokens.
    assert_eq!(memory["kv_cache_bytes"], 2 * 32 * 4096 * 2 * 8192_u64);
    let gpus = json(&server.get("/api/gpus").body);
    assert!(gpus.as_array().unwrap().len() > 10);
}

/// A config's text, sent as a POST's body (or in `config=`), is the model: as `llmsize params
/// '{…}'` reads it.
#[test]
fn a_pasted_config_is_sized_as_the_command_line_sizes_it() {
    let server = Server::start();
    let cli = llmsize(&["params", GPT2_CONFIG, "--json"]);
    assert_eq!(cli.code, 0, "{}", cli.stderr);
    let posted = server.post("/api/params", GPT2_CONFIG.as_bytes());
    assert_eq!(posted.status, 200, "{}", posted.body);
    assert_eq!(posted.body, cli.stdout);
    // GPT-2 small: 124,439,808 with the head tied to the embedding.
    assert_eq!(json(&posted.body)["total"], 124_439_808);

    let query: String = form_urlencoded::Serializer::new(String::new())
        .append_pair("config", GPT2_CONFIG)
        .finish();
    let in_query = server.get(&format!("/api/params?{query}"));
    assert_eq!(in_query.body, cli.stdout);

    let memory_cli = llmsize(&["memory", GPT2_CONFIG, "--seq-len", "1024", "--json"]);
    let memory = server.post("/api/memory?seq=1024", GPT2_CONFIG.as_bytes());
    assert_eq!(memory.status, 200, "{}", memory.body);
    assert_eq!(memory.body, memory_cli.stdout);
}

/// "Does not fit" is an answer, not an error: 200 with the verdict in the JSON and in
/// `X-Llmsize-Outcome`, where the command line exits 1.
#[test]
fn does_not_fit_is_an_answer() {
    let server = Server::start();
    let cli = llmsize(&["memory", "llama-2-70b", "--gpu", "rtx4090", "--json"]);
    assert_eq!(cli.code, 1);
    let answer = server.get("/api/memory?model=llama-2-70b&gpu=rtx4090");
    assert_eq!(answer.status, 200);
    assert_eq!(answer.outcome.as_deref(), Some("no"));
    assert_eq!(answer.body, cli.stdout);
    assert_eq!(json(&answer.body)["fits"], false);
}

/// Bad input: 400, and the body is what the command line prints on stderr for it.
#[test]
fn bad_requests_get_the_command_lines_message() {
    let server = Server::start();
    let cases: &[(&str, &[&str])] = &[
        (
            "/api/memory?model=llama-2-7b&dtype=bogus",
            &["memory", "llama-2-7b", "--dtype=bogus", "--json"],
        ),
        (
            "/api/params?model=no-such-model",
            &["params", "no-such-model", "--json"],
        ),
        (
            "/api/memory?model=llama-2-7b&batch=x",
            &["memory", "--batch=x", "--json", "--", "llama-2-7b"],
        ),
        (
            "/api/train?model=gpt2&model=llama-2-7b",
            &["train", "--json", "--", "gpt2", "llama-2-7b"],
        ),
        (
            "/api/memory?model=llama-2-7b&gpu=h100&tp=3",
            &["memory", "llama-2-7b", "--gpu=h100", "--tp=3", "--json"],
        ),
    ];
    for (path, args) in cases {
        let cli = llmsize(args);
        assert_eq!(cli.code, 2, "{args:?}");
        assert!(cli.stderr.starts_with("error: "), "{}", cli.stderr);
        let answer = server.get(path);
        assert_eq!(answer.status, 400, "{path}");
        assert_eq!(answer.content_type, "text/plain; charset=utf-8");
        assert_eq!(answer.body, cli.stderr, "{path}");
    }
    // The engine's hint travels with its message.
    let bogus = server.get("/api/memory?model=llama-2-7b&dtype=bogus").body;
    assert!(bogus.contains("unknown weight format `bogus`"), "{bogus}");
    assert!(bogus.contains("hint: valid: bf16"), "{bogus}");

    let unknown = server.get("/api/params?model=gpt2&online=1");
    assert_eq!(unknown.status, 400);
    assert!(
        unknown
            .body
            .starts_with("error: unknown query key `online` for /api/params"),
        "{}",
        unknown.body
    );
    for path in [
        "/api/params?model=gpt2&revision=main",
        "/api/params?model=gpt2&file=x.gguf",
    ] {
        let a = server.get(path);
        assert_eq!(a.status, 400, "{path}");
        assert!(a.body.contains("unknown query key"), "{}", a.body);
    }
    let switch = server.get("/api/params?model=gpt2&text_only=maybe");
    assert_eq!(switch.status, 400);
    assert!(switch.body.contains("`text_only` is a switch"));

    assert_eq!(server.get("/api/inspekt").status, 404);
    assert_eq!(server.get("/nope").status, 404);
    let no_body = server.post("/api/gpus", b"{}");
    assert_eq!(no_body.status, 400);
    let not_config = server.post("/api/params", b"Cargo.toml");
    assert_eq!(not_config.status, 400);
    assert!(
        not_config
            .body
            .contains("a config must be the text of a config.json")
    );
}

/// The server reads no file a request names: a path, or a name that exists beside the
/// server (`Cargo.toml` and `src` are in its working directory), is refused before the
/// engine sees it; the command line, asked the same, reads the file.
#[test]
fn paths_are_refused() {
    let server = Server::start();
    for model in [
        "/etc/passwd",
        "../README.md",
        "./Cargo.toml",
        "Cargo.toml",
        "src",
        "~/.ssh/id_rsa",
        "tests/fixtures",
        "a/b/c",
        "C:\\Windows",
        "org/name:model.gguf",
        "x.gguf",
        "config.json",
    ] {
        let query: String = form_urlencoded::Serializer::new(String::new())
            .append_pair("model", model)
            .finish();
        let answer = server.get(&format!("/api/params?{query}"));
        assert_eq!(answer.status, 400, "{model}");
        assert!(
            answer.body.starts_with("error: `")
                && (answer.body.contains("looks like a path")
                    || answer
                        .body
                        .contains("is not the Hub id of a built-in preset")),
            "{model}: {}",
            answer.body
        );
    }
    // `design`'s `like` names a model too: the same refusals.
    for like in ["Cargo.toml", "../README.md", "tests/fixtures"] {
        let query: String = form_urlencoded::Serializer::new(String::new())
            .append_pair("like", like)
            .append_pair("params", "7B")
            .finish();
        let answer = server.get(&format!("/api/design?{query}"));
        assert_eq!(answer.status, 400, "like={like}: {}", answer.body);
    }
    // A Hub-style id that is a relative path here, not a preset: refused, not read.
    let fixtures = server.get("/api/memory?model=tests%2Ffixtures");
    assert_eq!(fixtures.status, 400);
    assert!(
        fixtures
            .body
            .contains("is not the Hub id of a built-in preset")
    );
}

/// A body over the limit (8 MiB) is refused with 413 before it is read whole.
#[test]
fn an_oversized_body_is_refused() {
    let server = Server::start();
    let len = 9 << 20;
    let head = format!(
        "POST /api/params HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n",
        server.port
    );
    let answer = server.raw(&head, len);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    // Just under the limit is read (and is not a valid config, so 400, not 413).
    let under = server.post("/api/params", &vec![b' '; (8 << 20) - 1]);
    assert_eq!(under.status, 400, "{}", under.body);
}

/// A `Host` other than the server's own (DNS rebinding) is refused.
#[test]
fn another_host_is_refused() {
    let server = Server::start();
    let answer = server.raw(
        "GET /api/gpus HTTP/1.1\r\nHost: attacker.example:80\r\nConnection: close\r\n\r\n",
        0,
    );
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    let localhost = server.raw(
        &format!(
            "GET /api/gpus HTTP/1.1\r\nHost: localhost:{}\r\nConnection: close\r\n\r\n",
            server.port
        ),
        0,
    );
    assert!(localhost.starts_with("HTTP/1.1 200"), "{localhost}");
}

/// The page and its assets, with their types; nothing in them points off this machine, and
/// the Content-Security-Policy forbids the page to load anything from elsewhere.
#[test]
fn the_page_and_its_assets_are_served_and_self_contained() {
    let server = Server::start();
    let page = server.get("/?model=llama-2-7b");
    assert_eq!(page.status, 200);
    assert_eq!(page.content_type, "text/html; charset=utf-8");
    assert!(
        page.body
            .contains(r#"<script src="/app.js" defer></script>"#)
    );
    assert!(
        page.body
            .contains(r#"<link rel="stylesheet" href="/style.css">"#)
    );
    assert!(page.body.contains(r#"id="params-total""#));
    let csp = page
        .headers
        .iter()
        .find(|(k, _)| k == "content-security-policy")
        .map(|(_, v)| v.clone())
        .unwrap();
    assert!(csp.starts_with("default-src 'self';"), "{csp}");

    let js = server.get("/app.js");
    assert_eq!(js.status, 200);
    assert_eq!(js.content_type, "text/javascript; charset=utf-8");
    let css = server.get("/style.css");
    assert_eq!(css.status, 200);
    assert_eq!(css.content_type, "text/css; charset=utf-8");

    for (name, text) in [
        ("page", &page.body),
        ("app.js", &js.body),
        ("style.css", &css.body),
    ] {
        for scheme in ["http://", "https://", "//fonts.", "@import"] {
            for (at, _) in text.match_indices(scheme) {
                let rest = &text[at..];
                // The SVG namespace is a name, never fetched.
                let allowed = rest.starts_with("http://127.0.0.1")
                    || rest.starts_with("http://www.w3.org/2000/svg\"");
                assert!(
                    allowed,
                    "{name} points elsewhere: {}",
                    &rest[..rest.len().min(60)]
                );
            }
        }
        assert!(!text.contains("url("), "{name} loads a url()");
    }
}

/// Warnings, which the command line prints on stderr, travel in headers; the body stays the
/// `--json` stdout.
#[test]
fn warnings_travel_in_headers() {
    let server = Server::start();
    let cli = llmsize(&["params", "gpt2", "--set", "unknown_field=1", "--json"]);
    assert_eq!(cli.code, 0, "{}", cli.stderr);
    let warning = cli
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("warning: "))
        .unwrap_or_else(|| panic!("the CLI warns: {}", cli.stderr));
    let answer = server.get("/api/params?model=gpt2&set=unknown_field%3D1");
    assert_eq!(answer.body, cli.stdout);
    let sent: Vec<String> = answer
        .headers
        .iter()
        .filter(|(k, _)| k == "x-llmsize-warning")
        .map(|(_, v)| {
            form_urlencoded::parse(format!("w={v}").as_bytes())
                .next()
                .unwrap()
                .1
                .into_owned()
        })
        .collect();
    assert_eq!(sent, [warning]);
}

/// A weight file's header alone (what the page reads with `File.slice`): the answer is
/// `llmsize inspect --json` of the whole file; anything else in the body is refused.
#[test]
fn a_safetensors_header_is_inspected_as_the_file() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let (path, head, size) = server::tiny_safetensors(dir.path());
    let cli = llmsize(&["inspect", path.to_str().unwrap(), "--json"]);
    assert_eq!(cli.code, 0, "{}", cli.stderr);

    let answer = server.post(
        &format!("/api/inspect?name=tiny.safetensors&size={size}"),
        &head,
    );
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.body, cli.stdout);
    let report = json(&answer.body);
    assert_eq!(report["total"], server::TINY_PARAMS);
    assert_eq!(report["components"]["token_embedding"], 32_000 * 4096);

    // A body that is not exactly a header: refused, never written as a file to inspect.
    let mut trailing = head.clone();
    trailing.push(0);
    for (body, why) in [
        (&b"1234"[..], "shorter than 8 bytes"),
        (&trailing[..], "bytes of header, and"),
        (&b"\x02\0\0\0\0\0\0\0[]"[..], "not a JSON object"),
    ] {
        let a = server.post("/api/inspect", body);
        assert_eq!(a.status, 400);
        assert!(
            a.body
                .starts_with("error: the body is not a .safetensors header: ")
                && a.body.contains(why),
            "{}",
            a.body
        );
    }
    let small = server.post("/api/inspect?size=3", &head);
    assert_eq!(small.status, 400);
    assert_eq!(server.get("/api/inspect").status, 405);
}

/// A port already taken: exit 2 with a message that says so, not a panic or a hang.
#[test]
fn a_taken_port_is_an_error() {
    let server = Server::start();
    let port = server.port.to_string();
    let second = llmsize(&["serve", "--port", &port]);
    assert_eq!(second.code, 2);
    assert!(
        second
            .stderr
            .starts_with(&format!("error: cannot listen on 127.0.0.1:{port}: ")),
        "{}",
        second.stderr
    );
    assert!(second.stderr.contains("hint: another program has the port"));
}

//! The page in a real browser: headless Chromium (Debian's `chromium`) loads what
//! `llmsize serve` serves, driven over the `DevTools` protocol (a WebSocket, JSON commands).
//!
//! Without Chromium the test is skipped with a reason, unless `CI` is set: there it fails
//! (`.ci/run` installs Chromium).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::print_stderr,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;
mod server;

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use server::Server;
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

const CHROMIUM: &str = "/usr/bin/chromium";

const GPT2_CONFIG: &str = r#"{"model_type": "gpt2", "n_layer": 12, "n_embd": 768, "n_head": 12, "vocab_size": 50257, "n_positions": 1024}"#;

/// Chromium with a fresh profile, no network of its own, and its `DevTools` port on
/// 127.0.0.1; killed on drop.
struct Browser {
    child: Child,
    profile: tempfile::TempDir,
    port: u16,
}

impl Browser {
    fn start(binary: &Path) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let child = Command::new(binary)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                "--window-size=1280,900",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromium starts");
        let mut browser = Browser {
            child,
            profile,
            port: 0,
        };
        // Chromium writes the port it picked to `DevToolsActivePort` in the profile.
        let file = browser.profile.path().join("DevToolsActivePort");
        let deadline = Instant::now() + Duration::from_secs(30);
        while browser.port == 0 {
            if let Some(port) = std::fs::read_to_string(&file)
                .ok()
                .and_then(|t| t.lines().next().and_then(|l| l.trim().parse().ok()))
            {
                browser.port = port;
            } else {
                assert!(Instant::now() < deadline, "chromium never opened DevTools");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        browser
    }

    /// The first page's `DevTools` session.
    fn page(&self) -> Page {
        let targets: Value = serde_json::from_str(
            &Server::agent()
                .get(&format!("http://127.0.0.1:{}/json/list", self.port))
                .call()
                .unwrap()
                .body_mut()
                .read_to_string()
                .unwrap(),
        )
        .unwrap();
        let url = targets
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["type"] == "page")
            .and_then(|t| t["webSocketDebuggerUrl"].as_str())
            .expect("a page target")
            .to_owned();
        let (socket, _) = tungstenite::connect(url).unwrap();
        if let MaybeTlsStream::Plain(s) = socket.get_ref() {
            s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        }
        Page {
            socket,
            next: 0,
            events: Vec::new(),
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A page's `DevTools` session: commands by id, and the events that arrived meanwhile.
struct Page {
    socket: WebSocket<MaybeTlsStream<TcpStream>>,
    next: u64,
    events: Vec<Value>,
}

impl Page {
    fn call(&mut self, method: &str, params: &Value) -> Value {
        self.next += 1;
        let id = self.next;
        let text = json!({ "id": id, "method": method, "params": params }).to_string();
        self.socket.send(Message::text(text)).unwrap();
        loop {
            let Message::Text(text) = self.socket.read().unwrap() else {
                continue;
            };
            let reply: Value = serde_json::from_str(text.as_str()).unwrap();
            if reply["id"] == id {
                assert!(reply["error"].is_null(), "{method}: {}", reply["error"]);
                return reply["result"].clone();
            }
            if reply["id"].is_null() {
                self.events.push(reply);
            }
        }
    }

    /// The value of a JavaScript expression in the page.
    fn eval(&mut self, expression: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            &json!({ "expression": expression, "returnByValue": true }),
        );
        assert!(
            r["exceptionDetails"].is_null(),
            "{expression}: {}",
            r["exceptionDetails"]
        );
        r["result"]["value"].clone()
    }

    /// Wait until `condition` (JavaScript) is true, or fail with what the page shows.
    fn wait_for(&mut self, condition: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.eval(&format!("!!({condition})")) != json!(true) {
            if Instant::now() > deadline {
                let shown = self.eval("document.body.innerText");
                panic!("timed out waiting for {condition}; the page shows:\n{shown}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn text(&mut self, id: &str) -> String {
        self.eval(&format!("document.getElementById('{id}').textContent"))
            .as_str()
            .unwrap()
            .to_owned()
    }

    fn open(&mut self, url: &str) {
        // Marks the document being left, so the old page is never taken for the new one.
        self.eval("window.leaving = true");
        self.call("Page.navigate", &json!({ "url": url }));
        self.wait_for(
            "!window.leaving && document.readyState === 'complete' && document.body.dataset.busy === '0'",
        );
    }
}

/// Chromium, or `None` (and why) when the test cannot run here.
fn chromium() -> Option<PathBuf> {
    let path = PathBuf::from(std::env::var("CHROMIUM").unwrap_or_else(|_| CHROMIUM.into()));
    if path.is_file() {
        return Some(path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{} is missing, and CI is set: .ci/run installs Debian's chromium",
        path.display()
    );
    eprintln!(
        "skipped: no Chromium at {} (install Debian's `chromium`, or set CHROMIUM)",
        path.display()
    );
    None
}

/// `1234567` → `1,234,567`, as the page writes exact numbers.
fn commas(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn the_page_in_a_real_browser() {
    let Some(binary) = chromium() else { return };
    let server = Server::start();
    let browser = Browser::start(&binary);
    let mut page = browser.page();
    page.call(
        "Emulation.setDeviceMetricsOverride",
        &json!({ "width": 1280, "height": 1900, "deviceScaleFactor": 1, "mobile": false }),
    );

    // 1. `/?model=llama-2-7b` alone: the exact total, and its chart once the page has run.
    page.call("Network.enable", &json!({}));
    page.open(&server.url("/?model=llama-2-7b"));
    // Every request the page made went to this server (or stayed in the browser).
    let requests: Vec<String> = page
        .events
        .iter()
        .filter(|e| e["method"] == "Network.requestWillBeSent")
        .map(|e| e["params"]["request"]["url"].as_str().unwrap().to_owned())
        .collect();
    for path in [
        "/?model=llama-2-7b",
        "/app.js",
        "/style.css",
        "/api/presets",
        "/api/params?model=llama-2-7b",
    ] {
        assert!(
            requests.contains(&server.url(path)),
            "{path} not in {requests:?}"
        );
    }
    for url in &requests {
        assert!(
            url.starts_with(&server.url("/"))
                || url.starts_with("blob:")
                || url.starts_with("data:"),
            "the page asked {url}"
        );
    }
    page.call("Network.disable", &json!({}));
    assert_eq!(page.text("params-total"), "6,738,415,616");
    assert_eq!(page.text("model-name"), "Llama-2-7b-hf");
    assert_eq!(
        page.eval("document.querySelectorAll('#params-chart svg').length"),
        json!(1),
        "the parameter chart is drawn inline"
    );
    // The chart is the server's `--format svg`, inline: each bar's exact count, the components
    // the CLI reports, is a text of the page.
    let cli = common::llmsize(&["params", "llama-2-7b", "--json"]);
    let report: Value = serde_json::from_str(&cli.stdout).unwrap();
    let texts = page.eval(
        "[...document.querySelectorAll('#params-chart svg text')].map(t => t.textContent.trim())",
    );
    let texts: Vec<&str> = texts
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for (name, n) in report["components"].as_object().unwrap() {
        let n = n.as_u64().unwrap();
        if n > 0 {
            let shown = llmsize_core::units::thousands(n);
            assert!(
                texts.contains(&shown.as_str()),
                "{name}: {shown} not in {texts:?}"
            );
        }
    }

    // Every count's formula, on a click (and on hover, as the row's title).
    page.eval("document.querySelector('#params-table tr.item').click()");
    assert_eq!(
        page.eval(
            "document.querySelector('#params-table tr.formula-row:not([hidden])').textContent"
        ),
        json!(format!(
            "= {}",
            report["formulas"]["token_embedding"].as_str().unwrap()
        ))
    );

    // A pasted config.json is sized as the command line sizes it.
    page.eval(&format!(
        "document.getElementById('config').value = {}; document.getElementById('use-config').click()",
        json!(GPT2_CONFIG)
    ));
    page.wait_for(
        "document.body.dataset.busy === '0' && document.getElementById('params-total').textContent === '124,439,808'",
    );
    assert_eq!(
        page.eval("new URLSearchParams(location.search).has('model')"),
        json!(false),
        "a pasted config is not in the address"
    );

    // "Does not fit" is shown as such; the command line's warnings are shown too.
    page.open(&server.url("/?model=llama-2-70b&gpu=rtx4090&seq=512"));
    assert!(
        page.text("memory-verdict")
            .starts_with("Does not fit on RTX-4090-24GB"),
        "{}",
        page.text("memory-verdict")
    );
    page.open(&server.url("/?model=bert-base-uncased&gpu=h100&seq=4096&batch=1"));
    let cli = common::llmsize(&[
        "train",
        "bert-base-uncased",
        "--gpu",
        "h100",
        "--seq-len",
        "4096",
        "--batch",
        "1",
        "--json",
    ]);
    let warning = cli.stderr.lines().next().unwrap();
    assert!(warning.starts_with("warning: "), "{}", cli.stderr);
    let shown =
        page.eval("[...document.querySelectorAll('#warnings li')].map(li => li.textContent)");
    assert!(
        shown.as_array().unwrap().contains(&json!(warning)),
        "{shown} lacks {warning}"
    );

    // 2. Pick a model in the picker, move the context slider: the memory total is the
    // command line's for the same question.
    page.open(&server.url("/?gpu=h100&batch=1&dtype=bf16&kv_dtype=bf16&seq=4096"));
    page.eval(
        "(() => { const s = document.getElementById('model'); s.value = 'Mistral-7B-v0.1'; s.dispatchEvent(new Event('change')); })()",
    );
    page.wait_for(
        "document.body.dataset.busy === '0' && document.getElementById('model-name').textContent === 'Mistral-7B-v0.1'",
    );
    // The slider's steps are powers of two from 128; step 8 is 32,768 tokens.
    page.eval(
        "(() => { const s = document.getElementById('seq'); s.value = '8'; s.dispatchEvent(new Event('input')); })()",
    );
    page.wait_for(
        "document.body.dataset.busy === '0' && new URLSearchParams(location.search).get('seq') === '32768'",
    );
    assert_eq!(page.text("seq-value"), "32k tokens");
    let cli = common::llmsize(&[
        "memory",
        "Mistral-7B-v0.1",
        "--gpu",
        "h100",
        "--batch",
        "1",
        "--dtype",
        "bf16",
        "--kv-dtype",
        "bf16",
        "--seq-len",
        "32768",
        "--json",
    ]);
    assert_eq!(cli.code, 0, "{}", cli.stderr);
    let memory: Value = serde_json::from_str(&cli.stdout).unwrap();
    assert_eq!(memory["seq_len"], 32768);
    let total = memory["total_bytes"].as_u64().unwrap();
    let shown = page.text("memory-total");
    assert!(
        shown.starts_with(&format!("{} B (", commas(total))),
        "the page shows {shown}, the CLI {total}"
    );
    assert_eq!(
        page.text("memory-verdict"),
        "Fits on H100-SXM-80GB (79.65 GiB each)"
    );
    assert_eq!(
        page.eval("document.querySelectorAll('#memory-chart svg').length"),
        json!(1),
        "the memory chart is drawn inline"
    );
    let kv = page.eval(
        "[...document.querySelectorAll('#memory-chart svg text')].map(t => t.textContent.trim())",
    );
    let kv_bytes =
        llmsize_core::units::thousands(memory["kv_cache_bytes_per_gpu"].as_u64().unwrap());
    assert!(
        kv.as_array().unwrap().contains(&json!(kv_bytes)),
        "the KV cache segment carries the CLI's bytes {kv_bytes}: {kv}"
    );
    // The address holds the view: opening it again shows the same.
    let href = page.eval("location.href");
    page.open(href.as_str().unwrap());
    assert_eq!(page.text("memory-total"), shown);

    // A weight file chosen in the page: only its header is sent (the server refuses anything
    // else), and the page shows the tensors' count.
    let dir = tempfile::tempdir().unwrap();
    let (path, _, _) = server::tiny_safetensors(dir.path());
    let input = page.call(
        "Runtime.evaluate",
        &json!({ "expression": "document.getElementById('file')" }),
    );
    page.call(
        "DOM.setFileInputFiles",
        &json!({ "files": [path], "objectId": input["result"]["objectId"] }),
    );
    page.wait_for("document.getElementById('inspect-total')");
    assert_eq!(page.text("inspect-total"), commas(server::TINY_PARAMS));

    // 3. A screenshot, kept as an artefact of the test run.
    let shot = page.call(
        "Page.captureScreenshot",
        &json!({ "format": "png", "captureBeyondViewport": true }),
    );
    let png = data_encoding::BASE64
        .decode(shot["data"].as_str().unwrap().as_bytes())
        .unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
    // target/debug/llmsize → target/test-artefacts/serve.png
    let target = Path::new(env!("CARGO_BIN_EXE_llmsize"))
        .parent()
        .and_then(Path::parent)
        .unwrap();
    let dir = target.join("test-artefacts");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("serve.png"), png).unwrap();
}

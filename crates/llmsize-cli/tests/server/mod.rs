//! `llmsize serve` started for a test: the binary on a free port, stopped when dropped.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]
#![allow(dead_code, reason = "each test binary uses a different part")]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running `llmsize serve --port 0`; killed (and reaped) on drop, even when a test fails.
pub(crate) struct Server {
    child: Child,
    pub(crate) port: u16,
}

impl Server {
    /// Start the server from the crate's directory (so `Cargo.toml` and `src` exist beside it:
    /// the path refusals are tested against real files) and read its port from stderr.
    pub(crate) fn start() -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_llmsize"));
        cmd.args(["serve", "--port", "0"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        crate::common::isolate(&mut cmd);
        let mut child = cmd.spawn().expect("llmsize serve starts");
        let stderr = child.stderr.take().unwrap();
        let mut line = String::new();
        BufReader::new(stderr).read_line(&mut line).unwrap();
        let mut server = Server { child, port: 0 };
        let port = line
            .trim()
            .strip_prefix("llmsize serve: http://127.0.0.1:")
            .and_then(|rest| rest.strip_suffix('/'))
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("unexpected first line on stderr: {line:?}"));
        server.port = port;
        server
    }

    /// The server's process id (its descriptors are `/proc/PID/fd` on Linux).
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// A client that returns 4xx/5xx answers instead of failing on them.
    pub(crate) fn agent() -> ureq::Agent {
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            .build()
            .into()
    }

    /// `GET path` → (status, content type, body).
    pub(crate) fn get(&self, path: &str) -> Answer {
        let mut r = Self::agent().get(&self.url(path)).call().unwrap();
        Answer::of(&mut r)
    }

    /// `POST path` with `body`.
    pub(crate) fn post(&self, path: &str, body: &[u8]) -> Answer {
        let mut r = Self::agent().post(&self.url(path)).send(body).unwrap();
        Answer::of(&mut r)
    }

    /// A request written by hand (a forged `Host`, a body larger than the limit): the status
    /// line and headers of the answer.
    pub(crate) fn raw(&self, head: &str, body_len: usize) -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        stream.write_all(head.as_bytes()).unwrap();
        // The body is written from another thread: the server may answer (and stop reading)
        // before it has all arrived, and a writer blocked on a full socket must not stop the
        // answer from being read.
        let mut writer = stream.try_clone().unwrap();
        let feeder = std::thread::spawn(move || {
            let chunk = vec![b'{'; 64 * 1024];
            let mut left = body_len;
            while left > 0 {
                let n = left.min(chunk.len());
                if writer.write_all(&chunk[..n]).is_err() {
                    break;
                }
                left -= n;
            }
        });
        let mut answer = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    answer.extend_from_slice(&buf[..n]);
                    if answer.windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
            }
        }
        drop(stream);
        let _ = feeder.join();
        String::from_utf8_lossy(&answer).into_owned()
    }
}

/// Parameters in [`tiny_safetensors`]: Llama's embedding (32000 × 4096) and one query
/// projection (4096 × 4096).
pub(crate) const TINY_PARAMS: u64 = 32_000 * 4096 + 4096 * 4096;

/// `dir/tiny.safetensors`, a sparse file (its data never read) with two bf16 Llama tensors:
/// its path, its header (the 8 length bytes and the JSON) and its size.
pub(crate) fn tiny_safetensors(dir: &std::path::Path) -> (std::path::PathBuf, Vec<u8>, u64) {
    let embed = 32_000 * 4096 * 2;
    let q = 4096 * 4096 * 2;
    let header = serde_json::json!({
        "model.embed_tokens.weight": {"dtype": "BF16", "shape": [32000, 4096], "data_offsets": [0, embed]},
        "model.layers.0.self_attn.q_proj.weight": {"dtype": "BF16", "shape": [4096, 4096], "data_offsets": [embed, embed + q]},
    })
    .to_string();
    let mut head = (header.len() as u64).to_le_bytes().to_vec();
    head.extend_from_slice(header.as_bytes());
    let size = head.len() as u64 + embed + q;
    let path = dir.join("tiny.safetensors");
    std::fs::write(&path, &head).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(size)
        .unwrap();
    (path, head, size)
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP answer.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) content_type: String,
    pub(crate) outcome: Option<String>,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Answer {
    fn of(r: &mut ureq::http::Response<ureq::Body>) -> Answer {
        let header = |name: &str| {
            r.headers()
                .get(name)
                .map(|v| v.to_str().unwrap().to_owned())
        };
        let content_type = header("content-type").unwrap_or_default();
        let outcome = header("x-llmsize-outcome");
        let headers = r
            .headers()
            .iter()
            .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
            .collect();
        Answer {
            status: r.status().as_u16(),
            content_type,
            outcome,
            headers,
            body: r.body_mut().read_to_string().unwrap(),
        }
    }
}

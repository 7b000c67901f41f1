//! A stand-in for the Hugging Face Hub on the loopback interface, for `--online` tests and
//! the bench: `GET /api/models/{repo}/revision/{rev}` (the file listing) and
//! `GET /{repo}/resolve/{rev}/{file}` with `Range`, each connection on its own thread (so
//! parallel clients are served in parallel), a fixed latency added to every request, a
//! request counter, and three misbehaviours: stalling, dripping bytes and ignoring ranges.
//!
//! Files are stored as their first bytes plus a length; the rest reads as zeros, so a
//! "5 GB shard" costs its header. The server stops when dropped, and by itself after ten
//! minutes whatever happens.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::cast_possible_truncation,
    clippy::case_sensitive_file_extension_comparisons,
    missing_docs,
    unreachable_pub,
    dead_code,
    reason = "test support: fails loudly; each user takes a different part"
)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How the server misbehaves, if at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// Answers as the Hub does.
    Normal,
    /// Accepts the connection and the request, then never answers a weight file's request
    /// (the listing and JSON files are answered).
    StallOnWeights,
    /// Answers a range request for a weight file with `200 OK` and the whole file's
    /// `Content-Length` (a static server without range support).
    IgnoreRange,
    /// Answers a weight file's request at once, then sends its body one byte per this
    /// interval: every read returns within `--timeout`, the transfer never ends.
    Drip(Duration),
}

/// A file: its first bytes and its full length (zeros after the bytes).
#[derive(Debug, Clone)]
pub struct File {
    pub head: Vec<u8>,
    pub len: u64,
}

impl File {
    /// A whole small file.
    pub fn whole(bytes: Vec<u8>) -> Self {
        let len = bytes.len() as u64;
        File { head: bytes, len }
    }
}

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub range: Option<(u64, u64)>,
}

pub struct FakeHub {
    pub endpoint: String,
    requests: Arc<Mutex<Vec<Seen>>>,
    in_flight_max: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl Drop for FakeHub {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl FakeHub {
    /// Serve `files` as the repo `repo` at revision `main`.
    pub fn start(
        repo: &str,
        files: BTreeMap<String, File>,
        latency: Duration,
        behaviour: Behaviour,
    ) -> FakeHub {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        listener.set_nonblocking(true).unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let in_flight_max = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let state = Arc::new(State {
            repo: repo.to_owned(),
            files,
            latency,
            behaviour,
            requests: Arc::clone(&requests),
            in_flight: AtomicUsize::new(0),
            in_flight_max: Arc::clone(&in_flight_max),
            stop: Arc::clone(&stop),
        });
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_mins(10);
            while Instant::now() < deadline && !state.stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let state = Arc::clone(&state);
                        std::thread::spawn(move || serve(stream, &state));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        FakeHub {
            endpoint,
            requests,
            in_flight_max,
            stop,
        }
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Seen> {
        self.requests.lock().unwrap().clone()
    }

    /// The most requests the server was answering at once.
    pub fn max_in_flight(&self) -> usize {
        self.in_flight_max.load(Ordering::Relaxed)
    }
}

struct State {
    repo: String,
    files: BTreeMap<String, File>,
    latency: Duration,
    behaviour: Behaviour,
    requests: Arc<Mutex<Vec<Seen>>>,
    in_flight: AtomicUsize,
    in_flight_max: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

fn is_weight(file: &str) -> bool {
    file.ends_with(".safetensors") || file.ends_with(".gguf")
}

/// One connection: requests until the client closes it (ureq keeps connections alive).
fn serve(stream: TcpStream, state: &State) {
    stream.set_nonblocking(false).unwrap();
    // No Nagle: a small answer must not wait for the client's delayed ACK (40 ms a request).
    stream.set_nodelay(true).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
        let mut range = None;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                break;
            }
            if let Some(v) = h.to_ascii_lowercase().strip_prefix("range: bytes=") {
                let (a, b) = v.trim().split_once('-').unwrap();
                range = Some((a.parse::<u64>().unwrap(), b.parse::<u64>().unwrap()));
            }
        }
        state.requests.lock().unwrap().push(Seen {
            path: path.clone(),
            range,
        });
        let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        state.in_flight_max.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(state.latency);
        let ok = answer(&mut out, &path, range, state);
        state.in_flight.fetch_sub(1, Ordering::SeqCst);
        if !ok {
            return;
        }
    }
}

/// Write the answer; false when the connection should close.
fn answer(out: &mut TcpStream, path: &str, range: Option<(u64, u64)>, state: &State) -> bool {
    let api = format!("/api/models/{}/revision/main", state.repo);
    let prefix = format!("/{}/resolve/main/", state.repo);
    let send = |out: &mut TcpStream, status: &str, headers: &str, body: &[u8]| {
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\n{headers}\r\n",
            body.len()
        );
        let mut all = head.into_bytes();
        all.extend_from_slice(body);
        out.write_all(&all).and_then(|()| out.flush()).is_ok()
    };
    if path == api {
        let siblings: Vec<String> = state
            .files
            .keys()
            .map(|f| format!("{{\"rfilename\":{f:?}}}"))
            .collect();
        let body = format!(
            "{{\"id\":{:?},\"siblings\":[{}]}}",
            state.repo,
            siblings.join(",")
        );
        return send(out, "200 OK", "", body.as_bytes());
    }
    let Some(file) = path
        .strip_prefix(&prefix)
        .and_then(|f| state.files.get(f).map(|x| (f, x)))
    else {
        return send(out, "404 Not Found", "", b"not found");
    };
    let (name, file) = file;
    if is_weight(name) {
        match state.behaviour {
            Behaviour::StallOnWeights => {
                let until = Instant::now() + Duration::from_mins(1);
                while Instant::now() < until && !state.stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(20));
                }
                return false;
            }
            Behaviour::IgnoreRange => {
                // The whole file's length, and then only its first bytes: a client that
                // reads the body before the status would wait for the rest.
                let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", file.len);
                let _ = out.write_all(head.as_bytes());
                let _ = out.write_all(&file.head);
                let _ = out.flush();
                return false;
            }
            Behaviour::Drip(interval) => {
                let Some((a, b)) = range else { return false };
                let b = b.min(file.len - 1);
                let head = format!(
                    "HTTP/1.1 206 Partial Content\r\nContent-Length: {}\r\nContent-Range: bytes {a}-{b}/{}\r\n\r\n",
                    b + 1 - a,
                    file.len
                );
                if out.write_all(head.as_bytes()).is_err() {
                    return false;
                }
                for i in a..=b {
                    let byte = file.head.get(i as usize).copied().unwrap_or(0);
                    if state.stop.load(Ordering::Relaxed)
                        || out.write_all(&[byte]).and_then(|()| out.flush()).is_err()
                    {
                        return false;
                    }
                    std::thread::sleep(interval);
                }
                return true;
            }
            Behaviour::Normal => {}
        }
    }
    // Bytes `[a, b)` of the file: its stored head, then zeros.
    let bytes = |a: u64, b: u64| {
        let mut body = vec![0u8; usize::try_from(b - a).unwrap()];
        let head_len = file.head.len() as u64;
        if a < head_len {
            let end = b.min(head_len);
            body[..usize::try_from(end - a).unwrap()].copy_from_slice(
                &file.head[usize::try_from(a).unwrap()..usize::try_from(end).unwrap()],
            );
        }
        body
    };
    match range {
        Some((a, _)) if a >= file.len => send(
            out,
            "416 Range Not Satisfiable",
            &format!("Content-Range: bytes */{}\r\n", file.len),
            b"",
        ),
        Some((a, b)) => {
            let b = b.min(file.len - 1);
            let body = bytes(a, b + 1);
            send(
                out,
                "206 Partial Content",
                &format!("Content-Range: bytes {a}-{b}/{}\r\n", file.len),
                &body,
            )
        }
        None => {
            let body = bytes(0, file.len);
            send(out, "200 OK", "", &body)
        }
    }
}

/// A SafeTensors shard header as `bench/shards.py` makes them: one MoE layer's 30 BF16
/// tensors (4 attention, 3 shared-expert, 7×3 expert matrices of 4096×1024, 2 norms of
/// 4096). Returns the file (header, and its full length) and its tensor names.
pub fn moe_layer_shard(layer: usize) -> (File, Vec<String>) {
    let mut names: Vec<String> = ["q", "k", "v", "o"]
        .iter()
        .map(|p| format!("self_attn.{p}_proj"))
        .collect();
    names.extend(
        ["gate", "up", "down"]
            .iter()
            .map(|p| format!("mlp.shared_experts.{p}_proj")),
    );
    for e in 0..7 {
        names.extend(
            ["gate", "up", "down"]
                .iter()
                .map(|p| format!("mlp.experts.{e}.{p}_proj")),
        );
    }
    names.push("input_layernorm".into());
    names.push("post_attention_layernorm".into());
    let mut entries = vec!["\"__metadata__\":{\"format\":\"pt\"}".to_owned()];
    let mut keys = Vec::new();
    let mut off = 0u64;
    for t in &names {
        let key = format!("model.layers.{layer}.{t}.weight");
        let shape: Vec<u64> = if t.ends_with("layernorm") {
            vec![4096]
        } else {
            vec![4096, 1024]
        };
        let n = 2 * shape.iter().product::<u64>();
        entries.push(format!(
            "{key:?}:{{\"dtype\":\"BF16\",\"shape\":{shape:?},\"data_offsets\":[{off},{}]}}",
            off + n
        ));
        off += n;
        keys.push(key);
    }
    let json = format!("{{{}}}", entries.join(","));
    let mut head = (json.len() as u64).to_le_bytes().to_vec();
    head.extend_from_slice(json.as_bytes());
    let len = head.len() as u64 + off;
    (File { head, len }, keys)
}

/// A repo of `shards` such shards, with its index and a `config.json`.
pub fn moe_repo(shards: usize) -> BTreeMap<String, File> {
    let mut files = BTreeMap::new();
    let mut weight_map = Vec::new();
    for s in 0..shards {
        let name = format!("model-{:05}-of-{shards:05}.safetensors", s + 1);
        let (file, keys) = moe_layer_shard(s);
        for k in keys {
            weight_map.push(format!("{k:?}:{name:?}"));
        }
        files.insert(name, file);
    }
    let index = format!(
        "{{\"metadata\":{{}},\"weight_map\":{{{}}}}}",
        weight_map.join(",")
    );
    files.insert(
        "model.safetensors.index.json".into(),
        File::whole(index.into_bytes()),
    );
    files.insert(
        "config.json".into(),
        File::whole(br#"{"model_type": "gpt2", "n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 100, "n_positions": 64}"#.to_vec()),
    );
    files
}

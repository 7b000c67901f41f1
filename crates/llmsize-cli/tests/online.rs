//! `--online` against a stand-in Hub on the loopback interface (`fake_hub`): one request per
//! weight file, files fetched in parallel, `--timeout` on a stalled server, a server that
//! ignores ranges, picking one GGUF of a quant repo; and the Hugging Face cache's messages
//! (broken and looping symlinks, `--revision` naming a snapshot folder).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::cast_possible_truncation,
    clippy::case_sensitive_file_extension_comparisons,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;
mod fake_hub;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{Run, llmsize_env};
use fake_hub::{Behaviour, FakeHub, File};
use llmsize_engine::{Engine, HubEnv, HubOptions, InspectRequest};
use serde_json::Value;

fn json_of(r: &Run) -> Value {
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {} / {}", r.stdout, r.stderr))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Run `llmsize` against `hub`, with an empty Hugging Face cache.
fn online(hub: &FakeHub, args: &[&str]) -> Run {
    let empty = tempfile::tempdir().unwrap();
    llmsize_env(
        args,
        &[
            ("HF_ENDPOINT", hub.endpoint.as_str()),
            ("HF_HOME", empty.path().to_str().unwrap()),
        ],
    )
}

/// Parameters of one `moe_layer_shard`: 28 matrices of 4096×1024 and 2 norms of 4096.
const SHARD_PARAMS: u64 = 28 * 4096 * 1024 + 2 * 4096;

#[test]
fn one_request_per_shard_plus_listing_config_and_index() {
    let hub = FakeHub::start(
        "org/moe-100",
        fake_hub::moe_repo(100),
        Duration::from_millis(5),
        Behaviour::Normal,
    );
    let r = online(
        &hub,
        &[
            "inspect",
            "org/moe-100",
            "--online",
            "--json",
            "--jobs",
            "8",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(json_of(&r)["total"], 100 * SHARD_PARAMS);
    let seen = hub.requests();
    // The listing, config.json, the index, and one range request per shard: nothing else.
    assert_eq!(seen.len(), 100 + 3, "{seen:?}");
    let mut per_file: BTreeMap<&str, usize> = BTreeMap::new();
    for s in &seen {
        *per_file.entry(s.path.as_str()).or_default() += 1;
    }
    assert!(per_file.values().all(|&n| n == 1), "{per_file:?}");
    // Each shard's one request is the first range: 256 KiB, more than its ~4 kB header.
    assert!(
        seen.iter()
            .filter(|s| s.path.ends_with(".safetensors"))
            .all(|s| s.range == Some((0, (256 << 10) - 1))),
        "{seen:?}"
    );
    // In parallel, and no more than `--jobs` at once.
    let most = hub.max_in_flight();
    assert!((2..=8).contains(&most), "{most} requests at once");
    // Progress goes to stderr as plain lines when it is not a terminal.
    assert!(
        r.stderr.contains("fetching headers: 0/100 files")
            && r.stderr
                .contains("fetching headers: 100/100 files, done in"),
        "{}",
        r.stderr
    );
}

#[test]
fn jobs_one_is_sequential_and_reads_the_same() {
    let hub = FakeHub::start(
        "org/moe-12",
        fake_hub::moe_repo(12),
        Duration::from_millis(1),
        Behaviour::Normal,
    );
    let engine = Engine::new(HubEnv {
        endpoint: Some(hub.endpoint.clone()),
        ..HubEnv::default()
    });
    let request = |jobs| InspectRequest {
        model: "org/moe-12".into(),
        hub: HubOptions {
            online: true,
            jobs,
            ..HubOptions::default()
        },
    };
    let one = engine.inspect(&request(1)).unwrap();
    assert_eq!(hub.max_in_flight(), 1);
    let eight = engine.inspect(&request(8)).unwrap();
    assert_eq!(one.summary.total, 12 * SHARD_PARAMS);
    assert_eq!(eight.summary.total, one.summary.total);
    assert_eq!(hub.requests().len(), 2 * (12 + 3));
}

#[test]
fn a_header_longer_than_the_first_range_takes_one_more_request() {
    // A shard whose header is 1.5 MiB (a long `__metadata__` string): the first range holds
    // 256 KiB of it, the second request exactly the rest.
    let pad = "x".repeat(3 << 19);
    let json = format!(
        "{{\"__metadata__\":{{\"note\":\"{pad}\"}},\"model.layers.0.self_attn.q_proj.weight\":{{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}}}"
    );
    let mut head = (json.len() as u64).to_le_bytes().to_vec();
    head.extend_from_slice(json.as_bytes());
    let len = head.len() as u64 + 16;
    let header_end = head.len() as u64;
    let files = BTreeMap::from([("model.safetensors".to_owned(), File { head, len })]);
    let hub = FakeHub::start("org/long", files, Duration::ZERO, Behaviour::Normal);
    let r = online(&hub, &["inspect", "org/long", "--online", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(json_of(&r)["total"], 4);
    let ranges: Vec<_> = hub
        .requests()
        .into_iter()
        .filter_map(|s| s.path.ends_with(".safetensors").then_some(s.range))
        .collect();
    assert_eq!(
        ranges,
        [
            Some((0, (256 << 10) - 1)),
            Some((256 << 10, header_end - 1))
        ]
    );
}

#[test]
fn a_stalled_server_times_out_naming_the_url_and_the_timeout() {
    let (file, _) = fake_hub::moe_layer_shard(0);
    let files = BTreeMap::from([("model.safetensors".to_owned(), file)]);
    let hub = FakeHub::start(
        "org/stalled",
        files,
        Duration::ZERO,
        Behaviour::StallOnWeights,
    );
    let t = Instant::now();
    let r = online(
        &hub,
        &["inspect", "org/stalled", "--online", "--timeout", "1"],
    );
    assert!(t.elapsed() < Duration::from_secs(15), "{:?}", t.elapsed());
    assert_eq!(r.code, 2, "{}", r.stderr);
    let url = format!(
        "{}/org/stalled/resolve/main/model.safetensors",
        hub.endpoint
    );
    assert!(
        r.stderr.starts_with(&format!(
            "error: `{url}`: no answer within 1 s (`--timeout`): the server stalled\n"
        )),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .ends_with("hint: try again later, or raise `--timeout SECONDS` for a slow server\n"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_server_that_ignores_ranges_is_refused_before_the_body_is_read() {
    let (file, _) = fake_hub::moe_layer_shard(0);
    let len = file.len;
    let files = BTreeMap::from([("model.safetensors".to_owned(), file)]);
    let hub = FakeHub::start("org/norange", files, Duration::ZERO, Behaviour::IgnoreRange);
    let r = online(&hub, &["inspect", "org/norange", "--online"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    let url = format!(
        "{}/org/norange/resolve/main/model.safetensors",
        hub.endpoint
    );
    assert_eq!(
        r.stderr,
        format!(
            "error: `{url}`: the server ignored the range request (HTTP 200 instead of 206 for bytes 0-262143, a body of {len} bytes); refusing to download the whole file\n\n\
             hint: point `HF_ENDPOINT` at a server that answers HTTP range requests (the Hub and its mirrors do)\n"
        )
    );
}

#[test]
fn a_server_that_ignores_ranges_is_harmless_for_a_file_smaller_than_the_range() {
    // A 200 whose Content-Length is within the range asked is the whole (small) file.
    let json =
        br#"{"model.layers.0.input_layernorm.weight":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}}"#;
    let mut head = (json.len() as u64).to_le_bytes().to_vec();
    head.extend_from_slice(json);
    head.extend_from_slice(&[0; 12]);
    let files = BTreeMap::from([("model.safetensors".to_owned(), File::whole(head))]);
    let hub = FakeHub::start("org/small", files, Duration::ZERO, Behaviour::IgnoreRange);
    let r = online(&hub, &["inspect", "org/small", "--online", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(json_of(&r)["total"], 3);
}

/// The tiny llama GGUF header (d 256, 2 layers; 1,344,768 parameters), as a 1,099,584-byte
/// file.
fn tiny_gguf() -> File {
    File {
        head: std::fs::read(root().join("tests/fixtures/gguf/tiny-llama-consistent.gguf.header"))
            .unwrap(),
        len: 1_099_584,
    }
}

/// A minimal GGUF v3 split shard as llama.cpp's `gguf-split` marks one: `split.no` (u16,
/// from 0), `split.count` (u16), `split.tensors.count` (i32, the tensors of the whole set),
/// and one F32 norm tensor of 4 elements, `blk.{no}.attn_norm.weight`.
fn split_shard(no: u16, count: u16) -> File {
    let mut b = b"GGUF".to_vec();
    b.extend_from_slice(&3u32.to_le_bytes());
    b.extend_from_slice(&1u64.to_le_bytes()); // tensors
    b.extend_from_slice(&3u64.to_le_bytes()); // key-value pairs
    let key = |b: &mut Vec<u8>, k: &str, ty: u32| {
        b.extend_from_slice(&(k.len() as u64).to_le_bytes());
        b.extend_from_slice(k.as_bytes());
        b.extend_from_slice(&ty.to_le_bytes());
    };
    key(&mut b, "split.no", 2); // UINT16
    b.extend_from_slice(&no.to_le_bytes());
    key(&mut b, "split.count", 2);
    b.extend_from_slice(&count.to_le_bytes());
    key(&mut b, "split.tensors.count", 5); // INT32
    b.extend_from_slice(&i32::from(count).to_le_bytes());
    let tensor = format!("blk.{no}.attn_norm.weight");
    b.extend_from_slice(&(tensor.len() as u64).to_le_bytes());
    b.extend_from_slice(tensor.as_bytes());
    b.extend_from_slice(&1u32.to_le_bytes()); // dims
    b.extend_from_slice(&4u64.to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes()); // F32
    b.extend_from_slice(&0u64.to_le_bytes()); // offset
    while !b.len().is_multiple_of(32) {
        b.push(0);
    }
    b.extend_from_slice(&[0; 16]);
    File::whole(b)
}

fn quant_repo() -> BTreeMap<String, File> {
    BTreeMap::from([
        ("README.md".to_owned(), File::whole(b"# quants".to_vec())),
        ("m-Q4_K_M.gguf".to_owned(), tiny_gguf()),
        ("m-Q8_0.gguf".to_owned(), tiny_gguf()),
        (
            "F16/m-F16-00001-of-00002.gguf".to_owned(),
            split_shard(0, 2),
        ),
        (
            "F16/m-F16-00002-of-00002.gguf".to_owned(),
            split_shard(1, 2),
        ),
    ])
}

#[test]
fn several_ggufs_without_a_pick_are_listed() {
    let hub = FakeHub::start(
        "org/quants",
        quant_repo(),
        Duration::ZERO,
        Behaviour::Normal,
    );
    let r = online(&hub, &["params", "org/quants", "--online"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(
        r.stderr,
        "error: `org/quants` holds 3 GGUF files: F16/m-F16-00001-of-00002.gguf (2 shards), m-Q4_K_M.gguf, m-Q8_0.gguf\n\n\
         hint: pick one: `org/quants:FILE` or `--file FILE`, e.g. `org/quants:F16/m-F16-00001-of-00002.gguf`\n"
    );
    // Only the listing was asked for.
    assert_eq!(hub.requests().len(), 1);
}

#[test]
fn repo_colon_file_picks_one_gguf_with_one_request() {
    let hub = FakeHub::start(
        "org/quants",
        quant_repo(),
        Duration::ZERO,
        Behaviour::Normal,
    );
    let r = online(
        &hub,
        &["inspect", "org/quants:m-Q4_K_M.gguf", "--online", "--json"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(json_of(&r)["total"], 1_344_768);
    let seen = hub.requests();
    let paths: Vec<&str> = seen.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/api/models/org/quants/revision/main",
            "/org/quants/resolve/main/m-Q4_K_M.gguf"
        ]
    );
    // The first GGUF range is 8 MiB, and the server answers with the whole 1.1 MB file.
    assert_eq!(seen[1].range, Some((0, (8 << 20) - 1)));
    // `--file` is the same pick; params reads the model from the GGUF's metadata.
    let r = online(
        &hub,
        &[
            "params",
            "org/quants",
            "--file",
            "m-Q8_0.gguf",
            "--online",
            "--json",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(json_of(&r)["total"], 1_344_768);
    // Both at once must agree.
    let r = online(
        &hub,
        &[
            "params",
            "org/quants:m-Q8_0.gguf",
            "--file",
            "m-Q4_K_M.gguf",
            "--online",
        ],
    );
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr,
        "error: `org/quants:m-Q8_0.gguf` picks `m-Q8_0.gguf`, and `--file` picks `m-Q4_K_M.gguf`\n\n\
         hint: pick the file once: `org/name:FILE` or `--file FILE`\n"
    );
    // `--file` belongs to a repo id.
    let r = online(&hub, &["params", "gpt2", "--file", "m-Q8_0.gguf"]);
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr,
        "error: `--file` picks a file of a Hub repo, and `gpt2` is not a repo id\n\n\
         hint: pass the file's path as MODEL instead\n"
    );
    // A file the repo does not have: the GGUF files are listed.
    let r = online(&hub, &["params", "org/quants:m-Q2_K.gguf", "--online"]);
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr,
        "error: `org/quants` at `main` has no file `m-Q2_K.gguf`\n\n\
         hint: its GGUF files: F16/m-F16-00001-of-00002.gguf (2 shards), m-Q4_K_M.gguf, m-Q8_0.gguf\n"
    );
}

#[test]
fn a_split_gguf_picked_by_a_shard_fetches_every_shard() {
    let hub = FakeHub::start(
        "org/quants",
        quant_repo(),
        Duration::ZERO,
        Behaviour::Normal,
    );
    let r = online(
        &hub,
        &[
            "inspect",
            "org/quants:F16/m-F16-00002-of-00002.gguf",
            "--online",
        ],
    );
    let mut fetched: Vec<(String, Option<(u64, u64)>)> = hub
        .requests()
        .into_iter()
        .filter(|s| s.path.ends_with(".gguf"))
        .map(|s| (s.path, s.range))
        .collect();
    fetched.sort();
    // The first shard holds the tokenizer (8 MiB first range), the others a small header.
    assert_eq!(
        fetched,
        [
            (
                "/org/quants/resolve/main/F16/m-F16-00001-of-00002.gguf".to_owned(),
                Some((0, (8 << 20) - 1))
            ),
            (
                "/org/quants/resolve/main/F16/m-F16-00002-of-00002.gguf".to_owned(),
                Some((0, (256 << 10) - 1))
            ),
        ]
    );
    // Both shards' tensors are counted: a 4-element norm in each.
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("F16/m-F16-00001-of-00002.gguf"),
        "{}",
        r.stdout
    );
    let r = online(
        &hub,
        &[
            "inspect",
            "org/quants:F16/m-F16-00001-of-00002.gguf",
            "--online",
            "--json",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(json_of(&r)["total"], 8);
}

// ---------------------------------------------------------------------------------------
// The Hugging Face cache.

const GPT2_CONFIG: &str = r#"{"model_type": "gpt2", "n_layer": 12, "n_embd": 768, "n_head": 12, "vocab_size": 50257, "n_positions": 1024}"#;

/// A cache with `org/model`: returns (cache dir, repo folder).
fn cache() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("models--org--model");
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::create_dir_all(repo.join("blobs")).unwrap();
    (dir, repo)
}

fn in_cache(cache: &Path, args: &[&str]) -> Run {
    llmsize_env(args, &[("HF_HUB_CACHE", cache.to_str().unwrap())])
}

const HASH: &str = "0123456789abcdef0123456789abcdef01234567";

#[cfg(unix)]
#[test]
fn a_broken_symlink_in_the_cache_is_named() {
    let (dir, repo) = cache();
    std::fs::write(repo.join("refs/main"), HASH).unwrap();
    let snap = repo.join("snapshots").join(HASH);
    std::fs::create_dir_all(&snap).unwrap();
    std::os::unix::fs::symlink("../../blobs/4fe2a1", snap.join("config.json")).unwrap();
    let r = in_cache(dir.path(), &["params", "org/model"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(
        r.stderr,
        format!(
            "error: the Hugging Face cache entry of `org/model` is broken: `{}` is a broken symlink: it points to `../../blobs/4fe2a1`, and `{}` does not exist\n\n\
             hint: download the model again (`hf download`), or pass `--online`\n",
            snap.join("config.json").display(),
            repo.join("blobs/4fe2a1").display()
        )
    );
}

#[cfg(unix)]
#[test]
fn a_looping_symlink_in_the_cache_is_named() {
    let (dir, repo) = cache();
    std::fs::write(repo.join("refs/main"), HASH).unwrap();
    let snap = repo.join("snapshots").join(HASH);
    std::fs::create_dir_all(&snap).unwrap();
    std::os::unix::fs::symlink("model.bin", snap.join("model.safetensors")).unwrap();
    std::os::unix::fs::symlink("model.safetensors", snap.join("model.bin")).unwrap();
    std::fs::write(snap.join("config.json"), GPT2_CONFIG).unwrap();
    let r = in_cache(dir.path(), &["inspect", "org/model"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(
        r.stderr,
        format!(
            "error: the Hugging Face cache entry of `org/model` is broken: `{}` is a symlink loop: it points to `model.bin` → `model.safetensors`, which leads back to itself\n\n\
             hint: download the model again (`hf download`), or pass `--online`\n",
            snap.join("model.safetensors").display(),
        )
    );
}

#[test]
fn revision_names_any_snapshot_folder() {
    let (dir, repo) = cache();
    // No ref names it: a folder a user copied in, and a commit folder reached by a prefix.
    let abc = repo.join("snapshots/abc123");
    std::fs::create_dir_all(&abc).unwrap();
    std::fs::write(abc.join("config.json"), GPT2_CONFIG).unwrap();
    let full = repo.join("snapshots").join(HASH);
    std::fs::create_dir_all(&full).unwrap();
    std::fs::write(full.join("config.json"), GPT2_CONFIG).unwrap();
    std::fs::write(repo.join("refs/main"), HASH).unwrap();
    for revision in ["abc123", HASH, "0123456", "main"] {
        let r = in_cache(
            dir.path(),
            &["params", "org/model", "--revision", revision, "--json"],
        );
        assert_eq!(r.code, 0, "{revision}: {}", r.stderr);
        // GPT-2 small: 124,439,808 parameters (the published count).
        assert_eq!(json_of(&r)["total"], 124_439_808, "{revision}");
    }
    let r = in_cache(dir.path(), &["params", "org/model", "--revision", "v2"]);
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr,
        format!(
            "error: `org/model` is in the Hugging Face cache (`{}`) but has no ref or snapshot `v2`\n\n\
             hint: pass `--revision` with a ref (main) or a snapshot folder (0123456789abcdef0123456789abcdef01234567, abc123), or add `--online`\n",
            repo.display()
        )
    );
}

#[test]
fn repo_colon_file_reads_a_cached_file() {
    let (dir, repo) = cache();
    std::fs::write(repo.join("refs/main"), HASH).unwrap();
    let snap = repo.join("snapshots").join(HASH);
    std::fs::create_dir_all(&snap).unwrap();
    let gguf = tiny_gguf();
    let f = std::fs::File::create(snap.join("m-Q4_K_M.gguf")).unwrap();
    std::io::Write::write_all(&mut &f, &gguf.head).unwrap();
    f.set_len(gguf.len).unwrap();
    std::fs::copy(snap.join("m-Q4_K_M.gguf"), snap.join("m-Q8_0.gguf")).unwrap();
    let r = in_cache(dir.path(), &["inspect", "org/model:m-Q8_0.gguf", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(json_of(&r)["total"], 1_344_768);
    let r = in_cache(dir.path(), &["inspect", "org/model:m-Q2_K.gguf"]);
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr,
        format!(
            "error: `org/model` is in the Hugging Face cache, but its snapshot `{}` has no file `m-Q2_K.gguf`\n\n\
             hint: download that file, or add `--online` to read its header from the Hub\n",
            snap.display()
        )
    );
}

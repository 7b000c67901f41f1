//! Hostile I/O through the binary: a Hub that drips bytes (`--deadline`, the slow-transfer
//! line), a repo or folder of 5,000 GGUF files, a 20 MB `__metadata__` string or a 5 kB
//! tensor name, a Hugging Face cache whose ref or links lead out of the repo's folder, a
//! FIFO, a device or a symlink loop named as MODEL, a 100,000-character MODEL. Each is exit 2
//! with a message naming the input, quickly: the bounds asserted are generous for a debug
//! build on a loaded machine, and still far below what an unbounded wait or search took
//! (forever for a FIFO or a dripping server, 17 s for the long MODEL in a release build).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::cast_possible_truncation,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

mod common;
mod fake_hub;

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Run;
use fake_hub::{Behaviour, FakeHub, File};

/// What a refusal may take here (a debug build, process start included, on a shared
/// machine): the release binary answers in milliseconds.
const QUICK: Duration = Duration::from_secs(3);

/// Run `llmsize` isolated from the machine's Hugging Face setup, with `env`, killed after
/// `limit` (so a run that would wait forever fails the test instead of hanging it).
fn run_within(args: &[&str], env: &[(&str, &str)], limit: Duration) -> (Run, Duration) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_llmsize"));
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    common::isolate(&mut cmd);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let start = Instant::now();
    let mut child = cmd.spawn().unwrap();
    // Drain both pipes on their own threads, so a long message cannot fill one and stall.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        out.read_to_string(&mut s).unwrap();
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        err.read_to_string(&mut s).unwrap();
        s
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > limit {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("`llmsize {}` still running after {limit:?}", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = start.elapsed();
    let run = Run {
        code: status.code().unwrap_or(-1),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    };
    (run, took)
}

/// `run_within` against `hub` with an empty cache.
fn online(hub: &FakeHub, args: &[&str], limit: Duration) -> (Run, Duration) {
    let empty = tempfile::tempdir().unwrap();
    run_within(
        args,
        &[
            ("HF_ENDPOINT", hub.endpoint.as_str()),
            ("HF_HOME", empty.path().to_str().unwrap()),
        ],
        limit,
    )
}

/// A SafeTensors file of one F32 tensor `w` of 2 elements, with `metadata` as the
/// `__metadata__` object's JSON text.
fn safetensors(metadata: &str, name: &str) -> Vec<u8> {
    let json = format!(
        r#"{{"__metadata__":{metadata},"{name}":{{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}}}"#
    );
    let mut bytes = (json.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(json.as_bytes());
    bytes.extend_from_slice(&[0; 8]);
    bytes
}

// ---------------------------------------------------------------------------------------
// `--online`: a deadline per file, and a line while a transfer is slow.

#[test]
fn a_dripping_server_is_cut_at_the_deadline_and_reported_while_slow() {
    // One byte every 20 ms of a 256 KiB range: each read returns well within `--timeout`,
    // the range would take 87 minutes.
    let (file, _) = fake_hub::moe_layer_shard(0);
    let files = BTreeMap::from([("model.safetensors".to_owned(), file)]);
    let hub = FakeHub::start(
        "org/drip",
        files,
        Duration::ZERO,
        Behaviour::Drip(Duration::from_millis(20)),
    );
    let (r, took) = online(
        &hub,
        &["inspect", "org/drip", "--online", "--deadline", "3"],
        Duration::from_secs(20),
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    // The deadline, not the 30 s `--timeout` nor the 87 minutes of the whole range.
    assert!(
        took >= Duration::from_secs(3) && took < Duration::from_secs(8),
        "{took:?}"
    );
    let lines: Vec<&str> = r.stderr.lines().collect();
    // After 2 s, one line of progress (the next is due at 7 s, past the deadline); the byte
    // count is what arrived by then, about 100 at 20 ms a byte.
    let progress: Vec<&&str> = lines.iter().filter(|l| l.starts_with("fetching")).collect();
    assert_eq!(progress.len(), 1, "{}", r.stderr);
    assert!(
        progress[0].starts_with("fetching `model.safetensors` header: ")
            && progress[0].ends_with(" B in 2 s"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains(
            "error: `org/drip`: `model.safetensors` header: the transfer did not finish within 3 s (`--deadline` changes it)\n"
        ),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("try again later, or raise `--deadline SECONDS`\n"),
        "{}",
        r.stderr
    );
}

#[test]
fn the_deadline_is_a_positive_number_of_seconds() {
    let (r, _) = run_within(&["params", "gpt2", "--deadline", "0"], &[], QUICK);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "invalid value '0' for '--deadline <SECONDS>': `0`: a time limit is more than 0 and at most 86400 seconds"
        ),
        "{}",
        r.stderr
    );
}

#[test]
fn a_repo_of_5000_ggufs_names_a_few_and_the_count() {
    let mut files = BTreeMap::new();
    for i in 0..5000 {
        files.insert(format!("m-{i:04}.gguf"), File::whole(b"GGUF".to_vec()));
    }
    let hub = FakeHub::start("org/many", files, Duration::ZERO, Behaviour::Normal);
    let (r, took) = online(&hub, &["params", "org/many", "--online"], QUICK);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(took < QUICK, "{took:?}");
    // Sorted names; the first eight, then the count of the rest.
    assert_eq!(
        r.stderr,
        "error: `org/many` holds 5,000 GGUF files: m-0000.gguf, m-0001.gguf, m-0002.gguf, m-0003.gguf, m-0004.gguf, m-0005.gguf, m-0006.gguf, m-0007.gguf and 4,992 more\n\n\
         hint: pick one: `org/many:FILE` or `--file FILE`, e.g. `org/many:m-0000.gguf`\n"
    );
    // A pick the repo lacks lists a few of its files too.
    let (r, _) = online(&hub, &["params", "org/many:x.gguf", "--online"], QUICK);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .ends_with("hint: its GGUF files: m-0000.gguf, m-0001.gguf, m-0002.gguf, m-0003.gguf, m-0004.gguf, m-0005.gguf, m-0006.gguf, m-0007.gguf and 4,992 more\n"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_long_metadata_string_over_online_is_refused_naming_the_key() {
    // 20,000,000 bytes of `__metadata__` text, past its 16 MiB (16,777,216-byte) limit.
    let note = "x".repeat(20_000_000);
    let bytes = safetensors(&format!(r#"{{"note":"{note}"}}"#), "w");
    let files = BTreeMap::from([("model.safetensors".to_owned(), File::whole(bytes))]);
    let hub = FakeHub::start("org/meta", files, Duration::ZERO, Behaviour::Normal);
    let (r, took) = online(&hub, &["inspect", "org/meta", "--online"], QUICK);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(took < QUICK, "{took:?}");
    assert_eq!(
        r.stderr,
        "error: `org/meta/model.safetensors`: `__metadata__` value of `note` is 20,000,000 bytes, which takes `__metadata__` past its limit of 16,777,216 bytes (16 MiB) of text\n"
    );
}

// ---------------------------------------------------------------------------------------
// Local files: long strings, many GGUF models, what is not a file.

#[test]
fn a_long_metadata_string_or_tensor_name_in_a_local_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("meta.safetensors");
    let note = "x".repeat(20_000_000);
    std::fs::write(&path, safetensors(&format!(r#"{{"note":"{note}"}}"#), "w")).unwrap();
    let (r, took) = run_within(&["inspect", path.to_str().unwrap()], &[], QUICK);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(took < QUICK, "{took:?}");
    assert_eq!(
        r.stderr,
        format!(
            "error: `{}`: `__metadata__` value of `note` is 20,000,000 bytes, which takes `__metadata__` past its limit of 16,777,216 bytes (16 MiB) of text\n",
            path.display()
        )
    );
    // A tensor name of 5,000 bytes, past the 4,096 allowed.
    let path = dir.path().join("name.safetensors");
    let name = "n".repeat(5000);
    std::fs::write(&path, safetensors("{}", &name)).unwrap();
    let (r, _) = run_within(&["inspect", path.to_str().unwrap()], &[], QUICK);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(
        r.stderr,
        format!(
            "error: `{}`: a tensor name of 5000 bytes (`{}...`) is longer than the limit of 4096\n",
            path.display(),
            "n".repeat(40)
        )
    );
}

#[test]
fn a_folder_of_5000_ggufs_names_a_few_and_the_count() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..5000 {
        std::fs::write(dir.path().join(format!("m-{i:04}.gguf")), b"GGUF").unwrap();
    }
    let (r, took) = run_within(&["inspect", dir.path().to_str().unwrap()], &[], QUICK);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(took < QUICK, "{took:?}");
    assert_eq!(
        r.stderr,
        format!(
            "error: `{}` holds 5,000 GGUF models\n\n\
             hint: name one of them: m-0000.gguf, m-0001.gguf, m-0002.gguf, m-0003.gguf, m-0004.gguf, m-0005.gguf, m-0006.gguf, m-0007.gguf and 4,992 more\n",
            dir.path().display()
        )
    );
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

#[cfg(unix)]
#[test]
fn a_fifo_a_device_or_a_symlink_loop_is_named_and_never_opened() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("f");
    mkfifo(&fifo);
    let a = dir.path().join("a");
    std::os::unix::fs::symlink("b", &a).unwrap();
    std::os::unix::fs::symlink("a", dir.path().join("b")).unwrap();
    let gone = dir.path().join("gone");
    std::os::unix::fs::symlink("nowhere", &gone).unwrap();
    let cases: [(&Path, String); 4] = [
        (&fifo, "a FIFO, not a file or folder".to_owned()),
        (
            Path::new("/dev/zero"),
            "a character device, not a file or folder".to_owned(),
        ),
        (
            &a,
            "a symlink loop: it points to `b` → `a`, which leads back to itself".to_owned(),
        ),
        (
            &gone,
            format!(
                "a broken symlink: it points to `nowhere`, and `{}` does not exist",
                dir.path().join("nowhere").display()
            ),
        ),
    ];
    for (path, what) in cases {
        for command in ["params", "inspect"] {
            let (r, took) = run_within(&[command, path.to_str().unwrap()], &[], QUICK);
            assert_eq!(r.code, 2, "{command} {}: {}", path.display(), r.stderr);
            assert!(took < QUICK, "{took:?}");
            assert_eq!(
                r.stderr,
                format!(
                    "error: `{}` is {what}\n\n\
                     hint: pass a `config.json`, a weight file (`.safetensors`, `.gguf`) or a folder of them\n",
                    path.display()
                ),
                "{command}"
            );
        }
    }
}

#[cfg(unix)]
#[test]
fn a_fifo_inside_a_model_folder_is_named_and_never_opened() {
    // As a weight file: listed by its name, refused by its type.
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("model.safetensors");
    mkfifo(&fifo);
    let (r, _) = run_within(&["inspect", dir.path().to_str().unwrap()], &[], QUICK);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.starts_with(&format!(
            "error: `{}` is a FIFO, not a file or folder\n",
            fifo.display()
        )),
        "{}",
        r.stderr
    );
    // As the folder's config.json.
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("config.json");
    mkfifo(&fifo);
    let (r, _) = run_within(&["params", dir.path().to_str().unwrap()], &[], QUICK);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.starts_with(&format!(
            "error: `{}` is a FIFO, not a file or folder\n",
            fifo.display()
        )),
        "{}",
        r.stderr
    );
}

#[test]
fn a_100000_character_model_is_refused_at_once() {
    let long = "x".repeat(100_000);
    let (r, took) = run_within(&["params", &long], &[], QUICK);
    assert_eq!(r.code, 2, "{}", r.stderr);
    // 17–26 s before (a "did you mean" against every preset, in a release build).
    assert!(took < QUICK, "{took:?}");
    assert_eq!(
        r.stderr,
        format!(
            "error: MODEL `{}…` is 100,000 bytes long: not a preset, a Hub repo id or a path (at most 4,096 bytes)\n\n\
             hint: pass a preset name, a Hub repo id (`org/name`), a path, or a config's JSON text (which starts with `{{`)\n",
            "x".repeat(40)
        )
    );
}

#[test]
fn a_name_longer_than_the_suggestion_cap_gets_no_suggestion() {
    // 4,000 characters: a name (under 4,096), too long to be compared with every preset.
    let long = format!("llama-2-7b{}", "x".repeat(3990));
    let (r, took) = run_within(&["params", &long], &[], QUICK);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(took < QUICK, "{took:?}");
    assert!(
        r.stderr
            .ends_with("hint: `llmsize presets` lists them all\n"),
        "{}",
        r.stderr
    );
    // A short one still gets its suggestion.
    let (r, _) = run_within(&["params", "lama-2-7b"], &[], QUICK);
    assert!(r.stderr.contains("did you mean: "), "{}", r.stderr);
}

// ---------------------------------------------------------------------------------------
// The Hugging Face cache is a sandbox.

const GPT2_CONFIG: &str = r#"{"model_type": "gpt2", "n_layer": 12, "n_embd": 768, "n_head": 12, "vocab_size": 50257, "n_positions": 1024}"#;

const HASH: &str = "0123456789abcdef0123456789abcdef01234567";

/// A cache with `org/model`'s folders made: returns (cache dir, repo folder).
fn cache() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("models--org--model");
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::create_dir_all(repo.join("blobs")).unwrap();
    std::fs::create_dir_all(repo.join("snapshots").join(HASH)).unwrap();
    (dir, repo)
}

fn in_cache(cache: &Path, args: &[&str]) -> Run {
    run_within(args, &[("HF_HUB_CACHE", cache.to_str().unwrap())], QUICK).0
}

/// A folder outside the cache holding a config that must never be read.
fn outside() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.json"), GPT2_CONFIG).unwrap();
    dir
}

#[test]
fn a_ref_that_leads_out_of_the_cache_is_refused() {
    let (dir, repo) = cache();
    let elsewhere = outside();
    // `snapshots/../../../<elsewhere>`: exit 0 before, having read that folder's config.
    let escape = format!("../../..{}", elsewhere.path().display());
    std::fs::write(repo.join("refs/main"), &escape).unwrap();
    let r = in_cache(dir.path(), &["params", "org/model"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(
        r.stderr,
        format!(
            "error: the Hugging Face cache entry of `org/model` is unsafe: ref `main` (`{}`) holds `{escape}`, which is not a commit hash or a snapshot folder name\n\n\
             hint: a ref file holds the commit hash of a folder under `snapshots/`: download the model again (`hf download`), or pass `--revision` with a snapshot folder\n",
            repo.join("refs/main").display()
        )
    );
}

#[cfg(unix)]
#[test]
fn a_snapshot_link_that_leads_out_of_the_repo_is_refused() {
    let (dir, repo) = cache();
    let root = repo.canonicalize().unwrap();
    std::fs::write(repo.join("refs/main"), HASH).unwrap();
    let snap = repo.join("snapshots").join(HASH);
    // A link into the repo's own `blobs/` is what the cache holds: read.
    std::fs::write(repo.join("blobs/abc"), GPT2_CONFIG).unwrap();
    std::os::unix::fs::symlink("../../blobs/abc", snap.join("config.json")).unwrap();
    let r = in_cache(dir.path(), &["params", "org/model", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("124439808"), "{}", r.stdout);
    // A link out of it is refused, naming the link, its target and where that is.
    let elsewhere = outside();
    let target = elsewhere.path().join("config.json");
    std::fs::remove_file(snap.join("config.json")).unwrap();
    std::os::unix::fs::symlink(&target, snap.join("config.json")).unwrap();
    let r = in_cache(dir.path(), &["params", "org/model"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(
        r.stderr,
        format!(
            "error: the Hugging Face cache entry of `org/model` is unsafe: `{}` is a symlink to `{}`, which resolves to `{}`, outside the repo's cache folder `{}`\n\n\
             hint: the cache's files are links into the repo's own `blobs/`: download the model again (`hf download`), or pass the folder you mean as MODEL\n",
            snap.join("config.json").display(),
            target.display(),
            target.canonicalize().unwrap().display(),
            root.display()
        )
    );
    // A file picked by name is checked as well, whatever its name.
    std::fs::remove_file(snap.join("config.json")).unwrap();
    std::os::unix::fs::symlink(&target, snap.join("notes.txt")).unwrap();
    let r = in_cache(dir.path(), &["params", "org/model:notes.txt"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("is unsafe: "), "{}", r.stderr);
    // So is a snapshot folder that is itself a link out.
    let other = repo.join("snapshots/mine");
    std::os::unix::fs::symlink(elsewhere.path(), &other).unwrap();
    let r = in_cache(dir.path(), &["params", "org/model", "--revision", "mine"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "is unsafe: `{}` is a symlink to `{}`",
            other.display(),
            elsewhere.path().display()
        )),
        "{}",
        r.stderr
    );
}

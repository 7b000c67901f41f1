//! The engine as a library caller (a server, Python bindings) sees it: typed requests,
//! typed outcomes with their warnings, typed errors with a kind and a hint, and a Hugging
//! Face environment passed in rather than read from the process.

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

use std::path::{Path, PathBuf};

use llmsize_engine::{
    AuditRequest, Engine, Error, ErrorKind, FlopsRequest, HubEnv, HubOptions, InspectRequest,
    MemoryRequest, ParamsRequest, Sweep, SweepAxis,
};

fn engine() -> Engine {
    Engine::new(HubEnv::default())
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn tiny_gguf() -> String {
    root()
        .join("crates/llmsize-weights/fixtures/gguf/tiny-llama.gguf")
        .display()
        .to_string()
}

#[test]
fn engine_outcomes_and_errors_cross_threads() {
    fn send_sync<T: Send + Sync + 'static>() {}
    send_sync::<Engine>();
    send_sync::<Error>();
    send_sync::<llmsize_engine::ParamsOutcome>();
    send_sync::<llmsize_engine::MemoryOutcome>();
    send_sync::<llmsize_engine::FlopsOutcome>();
}

#[test]
fn params_of_a_preset() {
    let outcome = engine().params(&ParamsRequest::models(["gpt2"])).unwrap();
    assert_eq!(outcome.reports.len(), 1);
    assert_eq!(outcome.reports[0].count.total, 124_439_808);
    assert!(outcome.warnings.is_empty());
    let json = outcome.to_json().unwrap();
    assert!(
        json.starts_with("{\n  \"schema_version\": 1,\n  \"name\": \"gpt2\","),
        "{json}"
    );
    let two = engine()
        .params(&ParamsRequest::models(["gpt2", "llama-2-7b"]))
        .unwrap()
        .to_json()
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&two).unwrap();
    assert_eq!(v.as_array().map(Vec::len), Some(2));
    assert_eq!(v[1]["schema_version"], 1);
}

#[test]
fn errors_have_a_kind_a_message_naming_the_input_and_a_hint() {
    let e = engine()
        .params(&ParamsRequest::models(["llama-2-7"]))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(
        e.hint().unwrap().contains("Llama-2-7b-hf"),
        "{:?}",
        e.hint()
    );

    let e = engine()
        .params(&ParamsRequest::models(["/no/such/config.json"]))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.to_string().contains("/no/such/config.json"), "{e}");

    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.json");
    std::fs::write(&missing, r#"{"model_type":"llama","vocab_size":32000}"#).unwrap();
    let e = engine()
        .params(&ParamsRequest::models([missing.to_str().unwrap()]))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadInput);
    assert!(
        e.to_string().contains("missing.json") && e.to_string().contains("`hidden_size`"),
        "{e}"
    );

    let unknown = dir.path().join("unknown.json");
    std::fs::write(&unknown, r#"{"model_type":"not_a_model","d_model":768}"#).unwrap();
    let e = engine()
        .params(&ParamsRequest::models([unknown.to_str().unwrap()]))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);

    let mut flops = FlopsRequest::new("gpt2");
    flops.mfu = 1.5;
    let e = engine().flops(&flops).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadInput);
    assert!(e.to_string().contains("--mfu"), "{e}");
    assert!(e.hint().is_some());
}

#[test]
fn gguf_set_warns_and_validates_like_a_config() {
    let gguf = tiny_gguf();
    let request = ParamsRequest {
        overrides: vec!["unknown_key=1".into()],
        ..ParamsRequest::models([gguf.as_str()])
    };
    let outcome = engine().params(&request).unwrap();
    assert_eq!(
        outcome.warnings,
        [
            "tiny-llama: `--set unknown_key=1`: `llama` models do not read `unknown_key`, so it changed nothing"
        ]
    );
    let request = ParamsRequest {
        overrides: vec!["num_attention_heads=7".into()],
        ..ParamsRequest::models([gguf.as_str()])
    };
    let e = engine().params(&request).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadInput);
    assert!(e.to_string().contains("tiny-llama.gguf"), "{e}");
    assert!(e.to_string().contains("`num_attention_heads` = 7"), "{e}");
}

#[test]
fn memory_fits_and_sweeps() {
    let mut request = MemoryRequest::new("llama-2-7b");
    request.gpu = Some("rtx4090".into());
    assert!(engine().memory(&request).unwrap().fits());
    request.models = vec!["llama-2-70b".into()];
    assert!(!engine().memory(&request).unwrap().fits());

    let mut request = MemoryRequest::new("llama-2-7b");
    request.sweep = Some(Sweep::parse("seq=1k,8k").unwrap());
    assert_eq!(request.sweep.as_ref().unwrap().axis(), SweepAxis::SeqLen);
    let json = engine().memory(&request).unwrap().to_json().unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v[1]["swept"]["seq_len"], 8192);
    // GPT-2's learned table has 1,024 rows: 8k is counted as asked, with a note that says so.
    request.models = vec!["gpt2".into()];
    let json = engine().memory(&request).unwrap().to_json().unwrap();
    let g: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(g[1]["seq_len"], 8192);
    assert!(
        g[1]["assumptions"]
            .to_string()
            .contains("`--seq-len 8192` is longer than `gpt2` can take (`n_positions` = 1024)"),
        "{}",
        g[1]["assumptions"]
    );
    assert_eq!(v[1]["schema_version"], 1);
}

#[test]
fn weight_files_are_inspected_and_audited() {
    let gguf = tiny_gguf();
    let inspect = engine()
        .inspect(&InspectRequest {
            model: gguf.clone(),
            hub: HubOptions::default(),
        })
        .unwrap();
    assert!(inspect.summary.total > 0);
    assert!(
        inspect
            .to_json()
            .unwrap()
            .starts_with("{\n  \"schema_version\": 1,")
    );
    let audit = engine()
        .audit(&AuditRequest {
            model: gguf,
            hub: HubOptions::default(),
        })
        .unwrap();
    assert_eq!(audit.audit.summary.total, inspect.summary.total);

    let e = engine()
        .inspect(&InspectRequest {
            model: "gpt2".into(),
            hub: HubOptions::default(),
        })
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.hint().unwrap().contains("--online"));
}

/// The cache is found through the `HubEnv` given, never the process environment.
#[test]
fn hub_cache_comes_from_the_env_value_passed_in() {
    let cache = tempfile::tempdir().unwrap();
    let repo = cache.path().join("models--org--tiny");
    let hash = "0123456789abcdef0123456789abcdef01234567";
    let snap = repo.join("snapshots").join(hash);
    std::fs::create_dir_all(&snap).unwrap();
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), hash).unwrap();
    std::fs::copy(
        root().join("tests/fixtures/truth/configs/gpt2.json"),
        snap.join("config.json"),
    )
    .unwrap();

    let with_cache = Engine::new(HubEnv {
        hf_hub_cache: Some(cache.path().to_path_buf()),
        ..HubEnv::default()
    });
    let outcome = with_cache
        .params(&ParamsRequest::models(["org/tiny"]))
        .unwrap();
    assert_eq!(outcome.reports[0].count.total, 124_439_808);

    let e = engine()
        .params(&ParamsRequest::models(["org/tiny"]))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.hint().unwrap().contains("--online"), "{:?}", e.hint());
}

/// `--online` against an endpoint nobody listens on is a network error, not a panic or a
/// "not found".
#[test]
fn online_without_a_server_is_a_network_error() {
    let engine = Engine::new(HubEnv {
        endpoint: Some("http://127.0.0.1:9".into()),
        ..HubEnv::default()
    });
    let request = ParamsRequest {
        hub: HubOptions {
            online: true,
            ..HubOptions::default()
        },
        ..ParamsRequest::models(["org/not-cached"])
    };
    let e = engine.params(&request).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Network, "{e}");
    assert!(e.to_string().contains("127.0.0.1:9"), "{e}");
}

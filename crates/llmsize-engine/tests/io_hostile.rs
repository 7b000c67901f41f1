//! Hostile I/O as a library caller sees it: a slow transfer reported through
//! [`HubEnv::transfer`] (the engine never prints) and cut at `HubOptions::deadline`, and the
//! kinds of the errors that name a cache escape, a FIFO and an over-long MODEL.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    missing_docs,
    reason = "a test fails loudly on what it did not expect"
)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use llmsize_engine::{
    Engine, ErrorKind, HubEnv, HubOptions, ParamsRequest, TransferProgress, TransferSink,
};

/// A server on the loopback interface that lists `config.json` for any repo, then answers
/// its request with a `Content-Length` of 1,000 and one byte every 50 ms. Serves one
/// connection after another (ureq keeps one alive) until the test ends.
fn dripping_hub() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut out = stream;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let listing = line.contains("/api/models/");
                    loop {
                        let mut h = String::new();
                        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                            break;
                        }
                    }
                    if listing {
                        let body = br#"{"siblings":[{"rfilename":"config.json"}]}"#;
                        let head =
                            format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
                        let _ = out.write_all(head.as_bytes());
                        let _ = out.write_all(body);
                        continue;
                    }
                    let _ = out.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n");
                    for _ in 0..1000 {
                        if out.write_all(b" ").and_then(|()| out.flush()).is_err() {
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(50));
                    }
                }
            });
        }
    });
    endpoint
}

#[test]
fn a_slow_transfer_is_reported_to_the_caller_and_cut_at_the_deadline() {
    let reports: Arc<Mutex<Vec<TransferProgress>>> = Arc::default();
    let seen = Arc::clone(&reports);
    let engine = Engine::new(HubEnv {
        endpoint: Some(dripping_hub()),
        transfer: Some(TransferSink::new(move |p| seen.lock().unwrap().push(p))),
        ..HubEnv::default()
    });
    let request = ParamsRequest {
        models: vec!["org/slow".into()],
        hub: HubOptions {
            online: true,
            deadline: Duration::from_millis(2500),
            ..HubOptions::default()
        },
        ..ParamsRequest::default()
    };
    let start = Instant::now();
    let err = engine.params(&request).unwrap_err();
    let took = start.elapsed();
    assert_eq!(err.kind(), ErrorKind::Network, "{err}");
    assert_eq!(
        err.to_string(),
        "`org/slow`: `config.json`: the transfer did not finish within 2.5 s (`--deadline` changes it)"
    );
    // 2.5 s of a 50 s body: ureq's global timeout, set from what was left of the deadline.
    assert!(
        took >= Duration::from_millis(2500) && took < Duration::from_secs(6),
        "{took:?}"
    );
    // One report, at 2 s (the next would be at 7 s): about 40 bytes at 50 ms a byte.
    let reports = reports.lock().unwrap();
    assert_eq!(reports.len(), 1, "{reports:?}");
    let p = &reports[0];
    assert_eq!(p.what, "`config.json`");
    assert!(p.elapsed >= Duration::from_secs(2), "{p:?}");
    assert!((10..=60).contains(&p.bytes), "{p:?}");
}

#[test]
fn hostile_names_are_bad_input_and_answered_at_once() {
    let engine = Engine::new(HubEnv::default());
    let start = Instant::now();
    let err = engine
        .params(&ParamsRequest::models(["x".repeat(100_000)]))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadInput, "{err}");
    assert!(err.to_string().contains("is 100,000 bytes long"), "{err}");
    // 17–26 s before; microseconds now (a debug build on a loaded machine: a wide margin).
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    let err = engine
        .params(&ParamsRequest::models(["/dev/zero"]))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadInput, "{err}");
    assert_eq!(
        err.to_string(),
        "`/dev/zero` is a character device, not a file or folder"
    );
}

#[test]
fn a_cache_ref_out_of_the_repo_is_bad_input() {
    let cache = tempfile::tempdir().unwrap();
    let repo = cache.path().join("models--org--model");
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::create_dir_all(repo.join("snapshots")).unwrap();
    std::fs::write(repo.join("refs/main"), "../../../etc").unwrap();
    let engine = Engine::new(HubEnv {
        hf_hub_cache: Some(cache.path().to_path_buf()),
        ..HubEnv::default()
    });
    let err = engine
        .params(&ParamsRequest::models(["org/model"]))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadInput, "{err}");
    assert!(
        err.to_string().contains("ref `main` (`")
            && err.to_string().contains("holds `../../../etc`"),
        "{err}"
    );
}

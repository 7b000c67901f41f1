//! `--online`: fetch a Hub repo's `config.json` and only the *headers* of its weight files,
//! with HTTP range requests, from the [`HubEnv`] endpoint (`HF_ENDPOINT`, default
//! `https://huggingface.co`) with its token (`HF_TOKEN`) when set. Never downloads tensor
//! data. Headers are read by the same loops as local files ([`crate::weights_io`]).
//!
//! One request per weight file in the common case: the first range asked is large enough
//! for the whole header of almost every published file ([`SMALL_HEADER_RANGE`],
//! [`GGUF_HEADER_RANGE`]), and the rest is fetched only when a header is longer. Files are
//! fetched `--jobs` at a time. The status is checked before any body is read, so a server
//! that ignores the range (a 200 with the whole multi-GB file) is refused, not downloaded.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use llmsize_core::{checked, limits};

use crate::hub::{FetchProgress, HubEnv, TransferProgress, TransferSink};
use crate::resolve::{Found, Lookup, Model, Want};
use crate::weights_io::{self, ByteSource, Weights};
use crate::{Error, HubOptions};

/// The first range asked of a SafeTensors file, or of a split GGUF's second and later
/// shards. Its size trades one more round trip on a long header against bytes sent on every
/// shard: `huggingface_hub` found 97% of the SafeTensors files of the top 1,000 Hub models
/// have a header under 100 kB (its `get_safetensors_metadata` asks that much first,
/// `huggingface_hub` PR #1855). 256 KiB holds about 2,000 tensor entries (a DeepSeek-V3
/// shard's ~560 take ~70 kB) and costs ~21 ms at 100 Mbit/s, a fraction of one round trip
/// to the Hub; a 1 MiB range would cost ~84 ms on every shard, 8 s for 100 shards, to save a
/// round trip on the rare shard whose header is longer. A GGUF split shard after the first
/// holds only `split.*` keys and its tensor infos: llama.cpp's `gguf-split` writes the
/// model's metadata (and tokenizer) into the first shard only.
pub(crate) const SMALL_HEADER_RANGE: u64 = 256 << 10;

/// The first range asked of a GGUF file (or a split GGUF's first shard). Its metadata holds
/// the tokenizer: ~1 MB for a 32k `SentencePiece` vocabulary (Llama-2, Mistral), ~6 MB for
/// Qwen2.5's or Gemma's 150k–256k, ~8.5 MB for Llama-3 (128,256 tokens and 280,147 merges,
/// each a length-prefixed string). 8 MiB holds most in one request and the largest in two;
/// it is under 0.2% of the smallest file it is asked of (a 4-bit 8B model, ~4.7 GB).
pub(crate) const GGUF_HEADER_RANGE: u64 = 8 << 20;

/// A connection to the Hub (or a server standing in for it). Built only for `--online`.
struct Hub {
    agent: ureq::Agent,
    endpoint: String,
    token: Option<String>,
    /// `--timeout`: connecting, and each wait for the server's next bytes.
    timeout: Duration,
    /// `--deadline`: all of one file's requests, from the first byte asked to the last read.
    deadline: Duration,
    /// Told about a transfer that is slow ([`SLOW_AFTER`], then every [`SLOW_EVERY`]).
    slow: Option<TransferSink>,
}

/// A transfer still running this long is reported (the engine never prints: the front end
/// draws it): long enough that a normal answer from the Hub (well under a second) never is.
const SLOW_AFTER: Duration = Duration::from_secs(2);

/// Then a report this often, so a drip of bytes is seen moving without flooding stderr.
const SLOW_EVERY: Duration = Duration::from_secs(5);

/// Bytes read from a body at a time, between checks of the clock for [`SLOW_EVERY`].
const CHUNK: usize = 64 << 10;

fn transport(message: String, source: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::Network {
        message,
        hint: None,
        source: Some(Box::new(source)),
    }
}

impl Hub {
    fn new(env: &HubEnv, options: &HubOptions) -> Self {
        // `--timeout` bounds connecting and each wait for bytes (a stalled server); the
        // deadline bounds a whole file (a server dripping bytes), set on each request from
        // what is left of its file's time ([`Transfer::get`]).
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_connect(Some(options.timeout))
            .timeout_per_read(Some(options.timeout))
            .http_status_as_error(false)
            .build()
            .into();
        Hub {
            agent,
            endpoint: env.endpoint().to_owned(),
            token: env.token.clone(),
            timeout: options.timeout,
            deadline: options.deadline,
            slow: env.transfer.clone(),
        }
    }

    /// A new transfer of `what` (`` `config.json` ``, `` `model.safetensors` header ``)
    /// of `repo`: its deadline starts now.
    fn transfer<'a>(&'a self, repo: &'a str, what: String) -> Transfer<'a> {
        Transfer {
            hub: self,
            repo,
            what,
            start: Instant::now(),
            bytes: 0,
            next_report: SLOW_AFTER,
        }
    }

    fn file_url(&self, repo: &str, revision: &str, file: &str) -> String {
        // A file name comes from the repo's listing or an index: escape what a URL would read
        // as syntax (`?`, `#`, `%`, spaces), keep the `/` of sub-folders.
        let mut escaped = String::with_capacity(file.len());
        for b in file.bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
                escaped.push(char::from(b));
            } else {
                let _ = write!(escaped, "%{b:02X}");
            }
        }
        format!("{}/{repo}/resolve/{revision}/{escaped}", self.endpoint)
    }

    /// The files of `repo` at `revision`.
    fn list_files(&self, repo: &str, revision: &str) -> Result<Vec<String>, Error> {
        let url = format!("{}/api/models/{repo}/revision/{revision}", self.endpoint);
        let mut t = self.transfer(repo, "the file listing".to_owned());
        let resp = t.get(&url, None)?;
        let text = t.read_text(&url, resp)?;
        let v: Value = serde_json::from_str(&text)
            .map_err(|e| transport(format!("`{url}` did not return JSON"), e))?;
        let files = v
            .get("siblings")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| s["rfilename"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        Ok(files)
    }

    /// A small text file (config.json, an index).
    fn text(&self, repo: &str, revision: &str, file: &str) -> Result<String, Error> {
        let url = self.file_url(repo, revision, file);
        let mut t = self.transfer(repo, format!("`{file}`"));
        let resp = t.get(&url, None)?;
        t.read_text(&url, resp)
    }

    /// A file on the Hub as a source of header bytes: one request for its first
    /// `first_range` bytes, which also tells its length.
    fn file<'a>(
        &'a self,
        repo: &'a str,
        revision: &str,
        file: &str,
        first_range: u64,
    ) -> Result<RemoteFile<'a>, Error> {
        let url = self.file_url(repo, revision, file);
        let mut transfer = self.transfer(repo, format!("`{file}` header"));
        let last = first_range.saturating_sub(1);
        let mut prefix = Vec::new();
        let len = transfer.range(&url, 0, last, &mut prefix)?;
        let expected = len.min(first_range);
        if prefix.len() as u64 != expected {
            return Err(Error::network(format!(
                "`{url}`: asked for bytes 0-{last}, received {} of a {len}-byte file",
                prefix.len()
            )));
        }
        Ok(RemoteFile {
            transfer,
            label: format!("{repo}/{file}"),
            url,
            len,
            prefix,
        })
    }
}

/// One file's requests: they share its deadline (`--deadline`), and while they run long
/// the front end is told how far they got.
struct Transfer<'a> {
    hub: &'a Hub,
    repo: &'a str,
    /// What is fetched, for messages: `` `config.json` ``, `` `x.safetensors` header ``.
    what: String,
    start: Instant,
    /// Bytes of bodies read so far, over every request.
    bytes: u64,
    /// When the next slow-transfer report is due, from `start`.
    next_report: Duration,
}

impl Transfer<'_> {
    /// The error of a transfer past its deadline: the file, the deadline and the flag.
    fn past_deadline(&self, source: Option<ureq::Error>) -> Error {
        Error::Network {
            message: format!(
                "`{}`: {}: the transfer did not finish within {} s (`--deadline` changes it)",
                self.repo,
                self.what,
                self.hub.deadline.as_secs_f64()
            ),
            hint: Some(format!(
                "the server sent {} in that time: try again later, or raise `--deadline SECONDS`",
                llmsize_core::units::human_bytes(self.bytes)
            )),
            source: source.map(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>),
        }
    }

    /// A failed request or read, with the timeout or deadline named when that is what ended
    /// it.
    fn failed(&self, what: String, url: &str, e: ureq::Error) -> Error {
        match e {
            ureq::Error::Timeout(ureq::Timeout::Global) => self.past_deadline(Some(e)),
            ureq::Error::Timeout(_) => Error::Network {
                message: format!(
                    "`{url}`: no answer within {} s (`--timeout`): the server stalled",
                    self.hub.timeout.as_secs_f64()
                ),
                hint: Some(
                    "try again later, or raise `--timeout SECONDS` for a slow server".into(),
                ),
                source: Some(Box::new(e)),
            },
            e => transport(what, e),
        }
    }

    /// A GET, its status checked (and nothing read) before it is returned. ureq's own
    /// `timeout_global` holds it to what is left of the file's deadline, body included.
    fn get(
        &mut self,
        url: &str,
        range: Option<(u64, u64)>,
    ) -> Result<ureq::http::Response<ureq::Body>, Error> {
        let left = self
            .hub
            .deadline
            .checked_sub(self.start.elapsed())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| self.past_deadline(None))?;
        let mut req = self
            .hub
            .agent
            .get(url)
            .config()
            .timeout_global(Some(left))
            .build();
        if let Some(t) = &self.hub.token {
            req = req.header("Authorization", &format!("Bearer {t}"));
        }
        if let Some((a, b)) = range {
            req = req.header("Range", &format!("bytes={a}-{b}"));
        }
        let resp = req
            .call()
            .map_err(|e| self.failed(format!("request to `{url}` failed"), url, e))?;
        let status = resp.status().as_u16();
        match status {
            200 | 206 => Ok(resp),
            416 if range.is_some() => Ok(resp),
            401 | 403 => Err(Error::Network {
                message: format!("`{url}`: HTTP {status}: not authorised"),
                hint: Some("set `HF_TOKEN` to a token with access to this repository".into()),
                source: None,
            }),
            404 => Err(Error::not_found(
                format!("`{url}`: HTTP 404: not found"),
                "check the repository id, the file name and `--revision`",
            )),
            _ => Err(Error::network(format!("`{url}`: HTTP {status}"))),
        }
    }

    /// The body appended to `out`, at most `limit` bytes (more is ureq's
    /// `BodyExceedsLimit`), read a chunk at a time so that a slow one is reported as it goes.
    fn read_body(
        &mut self,
        url: &str,
        what: impl Fn() -> String,
        mut resp: ureq::http::Response<ureq::Body>,
        limit: u64,
        out: &mut Vec<u8>,
    ) -> Result<(), Error> {
        use std::io::Read as _;
        let mut reader = resp.body_mut().with_config().limit(limit).reader();
        let mut chunk = vec![0u8; CHUNK];
        loop {
            let n = match reader.read(&mut chunk) {
                Ok(0) => return Ok(()),
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.failed(what(), url, ureq::Error::from(e))),
            };
            out.extend_from_slice(chunk.get(..n).unwrap_or_default());
            // saturates: never, bytes of one file's headers, capped far below 2^64.
            self.bytes = self.bytes.saturating_add(n as u64);
            self.report();
        }
    }

    /// Tell the front end how far a slow transfer got, when a report is due.
    fn report(&mut self) {
        let elapsed = self.start.elapsed();
        if elapsed < self.next_report {
            return;
        }
        // saturates: harmless, a time to report at (a Duration saturates at centuries).
        self.next_report = elapsed.saturating_add(SLOW_EVERY);
        if let Some(sink) = &self.hub.slow {
            sink.report(TransferProgress {
                what: self.what.clone(),
                bytes: self.bytes,
                elapsed,
            });
        }
    }

    fn read_text(
        &mut self,
        url: &str,
        resp: ureq::http::Response<ureq::Body>,
    ) -> Result<String, Error> {
        let mut bytes = Vec::new();
        self.read_body(
            url,
            || format!("failed to read `{url}`"),
            resp,
            weights_io::MAX_TEXT_FILE,
            &mut bytes,
        )?;
        String::from_utf8(bytes).map_err(|e| {
            Error::network(format!(
                "`{url}` is not UTF-8 text (byte {})",
                e.utf8_error().valid_up_to()
            ))
        })
    }

    /// Bytes `[start, end]` of a file (fewer at its end), appended to `out`; the file's
    /// length.
    ///
    /// The status decides before any body is read: 206 is the range; 416 is a range past
    /// the end (an empty file); a 200 is the server ignoring the range, accepted only when
    /// its `Content-Length` says the whole file is no longer than the range asked (so a
    /// small file costs nothing more), and refused otherwise: that body is the whole file.
    fn range(&mut self, url: &str, start: u64, end: u64, out: &mut Vec<u8>) -> Result<u64, Error> {
        let resp = self.get(url, Some((start, end)))?;
        let status = resp.status().as_u16();
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        // The caller asks `end ≥ start`; a range of `u64::MAX + 1` bytes cannot be asked.
        let want = checked::sub("end − start", end, start)
            .and_then(|d| checked::add("end − start + 1", d, 1))
            .map_err(|e| Error::Internal {
                message: format!("bytes {start}-{end} of `{url}`: {e}"),
            })?;
        let total = match status {
            206 | 416 => header("content-range")
                .as_deref()
                .and_then(|v| v.rsplit('/').next())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .ok_or_else(|| {
                    Error::network(format!(
                        "`{url}`: HTTP {status} without a file length in `Content-Range`"
                    ))
                })?,
            _ => {
                let len = header("content-length").and_then(|v| v.trim().parse::<u64>().ok());
                match len {
                    Some(len) if start == 0 && len <= want => len,
                    _ => {
                        return Err(Error::Network {
                            message: format!(
                                "`{url}`: the server ignored the range request (HTTP {status} instead of 206 for bytes {start}-{end}{}); refusing to download the whole file",
                                len.map_or_else(String::new, |l| format!(", a body of {l} bytes"))
                            ),
                            hint: Some(
                                "point `HF_ENDPOINT` at a server that answers HTTP range requests (the Hub and its mirrors do)"
                                    .into(),
                            ),
                            source: None,
                        });
                    }
                }
            }
        };
        if status == 416 {
            return Ok(total);
        }
        // Room for what is asked (at most a header's limit, the readers' own bound) or what
        // the file holds, whichever is less: the body is appended without a copy that grows.
        let room = want.min(total.saturating_sub(start));
        out.reserve_exact(usize::try_from(room).unwrap_or(0));
        let what = || format!("failed to read bytes {start}-{end} of `{url}`");
        self.read_body(url, what, resp, want, out)?;
        Ok(total)
    }
}

/// A Hub file read by range requests: the bytes fetched so far are a prefix of the file,
/// extended (never fetched twice) when a header reader asks past it.
struct RemoteFile<'a> {
    transfer: Transfer<'a>,
    label: String,
    url: String,
    len: u64,
    prefix: Vec<u8>,
}

impl ByteSource for RemoteFile<'_> {
    fn label(&self) -> &str {
        &self.label
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn read(&mut self, offset: u64, n: u64) -> Result<Cow<'_, [u8]>, Error> {
        let end = offset
            .checked_add(n)
            .filter(|&e| e <= self.len)
            .ok_or_else(|| {
                Error::network(format!(
                    "`{}`: bytes {offset}..+{n} lie past the file's {} bytes",
                    self.url, self.len
                ))
            })?;
        let have = self.prefix.len() as u64;
        if end > have {
            // Extend the prefix with exactly the missing bytes: the readers grow their asks
            // (a GGUF reader at least doubles), so each extension is one request. `end > have`
            // here, so `end − 1 ≥ have`.
            let last = end.saturating_sub(1);
            self.transfer
                .range(&self.url, have, last, &mut self.prefix)?;
            let got = (self.prefix.len() as u64).saturating_sub(have);
            if got != end.saturating_sub(have) {
                return Err(Error::network(format!(
                    "`{}`: asked for bytes {have}-{last}, received {got}",
                    self.url
                )));
            }
        }
        let (a, b) = (usize::try_from(offset), usize::try_from(end));
        match (a, b) {
            (Ok(a), Ok(b)) => Ok(Cow::Borrowed(self.prefix.get(a..b).unwrap_or_default())),
            _ => Err(Error::Internal {
                message: format!("a header of {end} bytes is too large for this machine"),
            }),
        }
    }
}

/// Run `fetch` over `names`, `jobs` at a time, reporting progress; results in the order of
/// `names`. The first error (in that order) is returned, and no new request starts after
/// one failed.
fn fetch_all<T: Send>(
    names: &[String],
    jobs: usize,
    env: &HubEnv,
    fetch: impl Fn(&str) -> Result<T, Error> + Sync,
) -> Result<Vec<T>, Error> {
    let total = names.len();
    let start = Instant::now();
    let report = |done| {
        if let Some(p) = &env.progress {
            p.report(FetchProgress {
                done,
                total,
                elapsed: start.elapsed(),
            });
        }
    };
    report(0);
    let next = AtomicUsize::new(0);
    // Counted and reported under one lock, so reports arrive in order (a progress line that
    // drew 50/50 is not redrawn as 49/50 by a slower thread).
    let done = Mutex::new(0usize);
    let failed = AtomicBool::new(false);
    let results: Mutex<Vec<Option<Result<T, Error>>>> =
        Mutex::new((0..total).map(|_| None).collect());
    let worker = || {
        while !failed.load(Ordering::Relaxed) {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(name) = names.get(i) else { break };
            let r = fetch(name);
            if r.is_err() {
                failed.store(true, Ordering::Relaxed);
            } else if let Ok(mut d) = done.lock() {
                // saturates: never, at most `names.len()`.
                *d = d.saturating_add(1);
                report(*d);
            }
            if let Ok(mut v) = results.lock()
                && let Some(slot) = v.get_mut(i)
            {
                *slot = Some(r);
            }
        }
    };
    let threads = jobs.clamp(1, total.max(1));
    if threads == 1 {
        worker();
    } else {
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(worker);
            }
        });
    }
    let results = results.into_inner().map_err(|_| Error::Internal {
        message: "a header-fetching thread panicked".into(),
    })?;
    let mut out = Vec::with_capacity(total);
    for (name, r) in names.iter().zip(results) {
        match r {
            Some(r) => out.push(r?),
            // Not started because an earlier one failed: that error is returned above,
            // since the failing index is lower or its result comes first in this loop.
            None => {
                return Err(Error::Internal {
                    message: format!("the header of `{name}` was not fetched"),
                });
            }
        }
    }
    Ok(out)
}

fn is_root_safetensors(f: &str) -> bool {
    f.ends_with(".safetensors") && !f.contains('/')
}

fn is_gguf(f: &str) -> bool {
    f.to_ascii_lowercase().ends_with(".gguf")
}

/// `name-00001-of-00003.gguf` → (`name`, 1, 3): llama.cpp's split names, read as local
/// folders read them ([`llmsize_weights::gguf::split::parse_split_name`]).
fn split_parts(file: &str) -> Option<(&str, u64, u64)> {
    let s = llmsize_weights::gguf::split::parse_split_name(file.as_bytes())?;
    Some((file.get(..s.prefix_len)?, s.no, s.count))
}

/// Every shard of the split GGUF `file` belongs to, in order (`file` itself if not split);
/// an error names a shard the listing lacks.
fn gguf_set(file: &str, files: &[String], repo: &str) -> Result<Vec<String>, Error> {
    let Some((_, _, m)) = split_parts(file) else {
        return Ok(vec![file.to_owned()]);
    };
    if m > weights_io::MAX_SHARDS as u64 {
        return Err(Error::bad_input(
            format!(
                "`{file}` names a split GGUF of {m} files, more than the limit of {}",
                weights_io::MAX_SHARDS
            ),
            "a split GGUF has a few shards",
        ));
    }
    let set = llmsize_weights::gguf::split::shard_names(file).unwrap_or_default();
    // A set of the listing: a listing of 100,000 files and a set of 4,096 shards is one
    // look-up per shard, not one pass over the listing per shard.
    let listed: HashSet<&str> = files.iter().map(String::as_str).collect();
    if let Some(missing) = set.iter().find(|s| !listed.contains(s.as_str())) {
        return Err(Error::not_found(
            format!("`{repo}` lists `{file}`, a shard of {m}, but not its shard `{missing}`"),
            "check the repository's files and `--revision`",
        ));
    }
    Ok(set)
}

/// The GGUF choices of a listing: each single file, and each split set once (by its first
/// shard, with its shard count).
fn gguf_choices(files: &[String]) -> Vec<String> {
    let mut v: Vec<String> = files
        .iter()
        .filter(|f| is_gguf(f))
        .filter_map(|f| match split_parts(f) {
            Some((_, 1, m)) => Some(format!("{f} ({m} shards)")),
            Some(_) => None,
            None => Some(f.clone()),
        })
        .collect();
    v.sort();
    v
}

/// A Hub repo as a model: its `config.json`, and (when asked, when there is no config, or
/// when one file is picked) the headers of its weights.
pub(crate) fn model(
    repo: &str,
    pick: Option<&str>,
    lookup: &Lookup,
    env: &HubEnv,
) -> Result<Model, Error> {
    let hub = Hub::new(env, &lookup.hub);
    let jobs = lookup.hub.jobs;
    let revision = lookup.hub.revision.as_str();
    let files = hub.list_files(repo, revision)?;
    let config = if files.iter().any(|f| f == "config.json") {
        Some(Found {
            name: repo.to_owned(),
            source: format!("{}/{repo} ({revision})", hub.endpoint),
            file: format!("{repo}/config.json"),
            text: hub.text(repo, revision, "config.json")?,
        })
    } else {
        None
    };
    let safetensors = |names: &[String]| {
        fetch_all(names, jobs, env, |name| {
            let mut f = hub.file(repo, revision, name, SMALL_HEADER_RANGE)?;
            let header = weights_io::safetensors_header(&mut f)?;
            Ok((name.to_owned(), f.len, header))
        })
    };
    let gguf = |names: &[String]| -> Result<Weights, Error> {
        let shards = fetch_all(names, jobs, env, |name| {
            // Only a split set's first shard (or a single file) holds the tokenizer.
            let first = match split_parts(name) {
                Some((_, n, _)) if n > 1 => SMALL_HEADER_RANGE,
                _ => GGUF_HEADER_RANGE,
            };
            let mut f = hub.file(repo, revision, name, first)?;
            let header = weights_io::gguf_header(&mut f)?;
            Ok((name.to_owned(), f.len, header))
        })?;
        // The same path as local files: one file, or every shard of a split set, merged.
        Weights::gguf(shards)
    };
    let weights = if let Some(pick) = pick {
        if !files.iter().any(|f| f == pick) {
            let choices = gguf_choices(&files);
            return Err(Error::not_found(
                format!("`{repo}` at `{revision}` has no file `{pick}`"),
                if choices.is_empty() {
                    "check the file name and `--revision`".to_owned()
                } else {
                    format!("its GGUF files: {}", limits::a_few(&choices))
                },
            ));
        }
        if is_gguf(pick) {
            Some(gguf(&gguf_set(pick, &files, repo)?)?)
        } else if pick.ends_with(".safetensors") {
            Some(Weights::safetensors(safetensors(&[pick.to_owned()])?))
        } else {
            return Err(Error::bad_input(
                format!("`{repo}:{pick}` is neither a `.gguf` nor a `.safetensors` file"),
                "pick a weight file; a repo's `config.json` is read without picking it",
            ));
        }
    } else if lookup.weights != Want::No || config.is_none() {
        if files.iter().any(|f| f == "model.safetensors.index.json") {
            let text = hub.text(repo, revision, "model.safetensors.index.json")?;
            let index = llmsize_weights::safetensors::parse_index(
                &text,
                &format!("{repo}/model.safetensors.index.json"),
            )?;
            weights_io::check_shards(
                &index.shards,
                &format!("{repo}/model.safetensors.index.json"),
            )?;
            let shards = safetensors(&index.shards)?;
            Some(Weights::indexed(
                &index,
                "model.safetensors.index.json",
                shards,
            ))
        } else if files.iter().any(|f| is_root_safetensors(f)) {
            // Every top-level shard, as a local directory is read (sub-folders hold other
            // variants, e.g. `onnx/` or `original/`).
            let names: Vec<String> = files
                .iter()
                .filter(|f| is_root_safetensors(f))
                .cloned()
                .collect();
            Some(Weights::safetensors(safetensors(&names)?))
        } else {
            match gguf_choices(&files).as_slice() {
                [] => None,
                [_] => {
                    let first = files
                        .iter()
                        .find(|f| is_gguf(f) && split_parts(f).is_none_or(|(_, n, _)| n == 1))
                        .cloned()
                        .unwrap_or_default();
                    Some(gguf(&gguf_set(&first, &files, repo)?)?)
                }
                many => {
                    return Err(Error::bad_input(
                        format!(
                            "`{repo}` holds {} GGUF files: {}",
                            llmsize_core::units::thousands(many.len() as u64),
                            limits::a_few(many)
                        ),
                        format!(
                            "pick one: `{repo}:FILE` or `--file FILE`, e.g. `{repo}:{}`",
                            many.first()
                                .and_then(|c| c.split(' ').next())
                                .unwrap_or_default()
                        ),
                    ));
                }
            }
        }
    } else {
        None
    };
    if config.is_none() && weights.is_none() {
        return Err(Error::NotFound {
            message: format!("`{repo}` at `{revision}` has neither a config.json nor weight files"),
            hint: None,
        });
    }
    Ok(Model {
        name: pick.map_or_else(|| repo.to_owned(), |p| format!("{repo}:{p}")),
        config,
        weights,
        index_only: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_names_are_llama_cpp_s() {
        assert_eq!(
            split_parts("Q4_K_M/m-Q4_K_M-00001-of-00003.gguf"),
            Some(("Q4_K_M/m-Q4_K_M", 1, 3))
        );
        assert_eq!(split_parts("m-00003-of-00003.gguf"), Some(("m", 3, 3)));
        assert_eq!(split_parts("m-00004-of-00003.gguf"), None);
        assert_eq!(split_parts("m-0001-of-0003.gguf"), None);
        assert!(gguf_set("m-00001-of-99999.gguf", &[], "o/r").is_err());
        assert_eq!(split_parts("m-Q4_K_M.gguf"), None);
    }

    #[test]
    fn choices_name_each_split_set_once() {
        let files: Vec<String> = [
            "a-Q8_0.gguf",
            "big/a-F16-00002-of-00002.gguf",
            "big/a-F16-00001-of-00002.gguf",
            "README.md",
        ]
        .map(str::to_owned)
        .to_vec();
        assert_eq!(
            gguf_choices(&files),
            ["a-Q8_0.gguf", "big/a-F16-00001-of-00002.gguf (2 shards)"]
        );
        assert_eq!(
            gguf_set("big/a-F16-00002-of-00002.gguf", &files, "o/r").unwrap(),
            [
                "big/a-F16-00001-of-00002.gguf",
                "big/a-F16-00002-of-00002.gguf"
            ]
        );
        let e = gguf_set(
            "x-00001-of-00002.gguf",
            &["x-00001-of-00002.gguf".into()],
            "o/r",
        )
        .unwrap_err();
        assert!(e.to_string().contains("x-00002-of-00002.gguf"), "{e}");
    }
}

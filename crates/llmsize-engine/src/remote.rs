//! `--online`: fetch a Hub repo's `config.json` and only the *headers* of its weight files,
//! with HTTP range requests, from the [`HubEnv`] endpoint (`HF_ENDPOINT`, default
//! `https://huggingface.co`) with its token (`HF_TOKEN`) when set. Never downloads tensor
//! data. Headers are read by the same loops as local files ([`crate::weights_io`]).

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::Value;

use crate::Error;
use crate::hub::HubEnv;
use crate::resolve::{Found, Lookup, Model, Want};
use crate::weights_io::{self, ByteSource, Weights};

/// A connection to the Hub (or a server standing in for it). Built only for `--online`.
struct Hub {
    agent: ureq::Agent,
    endpoint: String,
    token: Option<String>,
}

fn transport(message: String, source: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::Network {
        message,
        hint: None,
        source: Some(Box::new(source)),
    }
}

impl Hub {
    fn new(env: &HubEnv) -> Self {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_mins(1)))
            .http_status_as_error(false)
            .build()
            .into();
        Hub {
            agent,
            endpoint: env.endpoint().to_owned(),
            token: env.token.clone(),
        }
    }

    fn get(
        &self,
        url: &str,
        range: Option<(u64, u64)>,
    ) -> Result<ureq::http::Response<ureq::Body>, Error> {
        let mut req = self.agent.get(url);
        if let Some(t) = &self.token {
            req = req.header("Authorization", &format!("Bearer {t}"));
        }
        if let Some((a, b)) = range {
            req = req.header("Range", &format!("bytes={a}-{b}"));
        }
        let resp = req
            .call()
            .map_err(|e| transport(format!("request to `{url}` failed"), e))?;
        let status = resp.status().as_u16();
        match status {
            200 | 206 => Ok(resp),
            401 | 403 => Err(Error::Network {
                message: format!("`{url}`: HTTP {status}: not authorised"),
                hint: Some("set `HF_TOKEN` to a token with access to this repository".into()),
                source: None,
            }),
            404 => Err(Error::not_found(
                format!("`{url}`: HTTP 404: not found"),
                "check the repository id and `--revision`",
            )),
            _ => Err(Error::network(format!("`{url}`: HTTP {status}"))),
        }
    }

    /// The files of `repo` at `revision`.
    fn list_files(&self, repo: &str, revision: &str) -> Result<Vec<String>, Error> {
        let url = format!("{}/api/models/{repo}/revision/{revision}", self.endpoint);
        let mut resp = self.get(&url, None)?;
        let text = resp
            .body_mut()
            .with_config()
            .limit(16 << 20)
            .read_to_string()
            .map_err(|e| transport(format!("failed to read `{url}`"), e))?;
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

    /// A small text file (config.json, an index).
    fn text(&self, repo: &str, revision: &str, file: &str) -> Result<String, Error> {
        let url = self.file_url(repo, revision, file);
        let mut resp = self.get(&url, None)?;
        resp.body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_string()
            .map_err(|e| transport(format!("failed to read `{url}`"), e))
    }

    /// Bytes `[start, end]` of a file and the file's length (from `Content-Range`).
    fn range(&self, url: &str, start: u64, end: u64) -> Result<(Vec<u8>, u64), Error> {
        let mut resp = self.get(url, Some((start, end)))?;
        let status = resp.status().as_u16();
        let total = resp
            .headers()
            .get("content-range")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.rsplit('/').next())
            .and_then(|v| v.trim().parse::<u64>().ok());
        // Before any body is read: a server that ignores the range would send the whole file.
        if status != 206 {
            return Err(Error::network(format!(
                "`{url}`: the server ignored the range request (HTTP {status}); refusing to download the whole file"
            )));
        }
        let want = end - start + 1;
        let bytes = resp
            .body_mut()
            .with_config()
            .limit(want)
            .read_to_vec()
            .map_err(|e| transport(format!("failed to read bytes {start}-{end} of `{url}`"), e))?;
        let total = total
            .ok_or_else(|| Error::network(format!("`{url}`: no length in `Content-Range`")))?;
        Ok((bytes, total))
    }

    /// A file on the Hub as a source of header bytes; its length comes from a first range
    /// request of its first 8 bytes (kept, as every header read starts there).
    fn file<'a>(&'a self, repo: &str, revision: &str, file: &str) -> Result<RemoteFile<'a>, Error> {
        let url = self.file_url(repo, revision, file);
        let (first, len) = self.range(&url, 0, 7)?;
        Ok(RemoteFile {
            hub: self,
            label: format!("{repo}/{file}"),
            url,
            len,
            first,
        })
    }
}

/// A Hub file read by range requests.
struct RemoteFile<'a> {
    hub: &'a Hub,
    label: String,
    url: String,
    len: u64,
    /// The first bytes, already fetched.
    first: Vec<u8>,
}

impl ByteSource for RemoteFile<'_> {
    fn label(&self) -> &str {
        &self.label
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn read(&mut self, offset: u64, n: u64) -> Result<Vec<u8>, Error> {
        if n == 0 {
            return Ok(Vec::new());
        }
        if offset == 0 && n <= self.first.len() as u64 {
            let n = usize::try_from(n).unwrap_or(0);
            return Ok(self.first.get(..n).unwrap_or_default().to_vec());
        }
        let (bytes, _) = self.hub.range(&self.url, offset, offset + n - 1)?;
        if bytes.len() as u64 != n {
            return Err(Error::network(format!(
                "`{}`: asked for {n} bytes at offset {offset}, received {}",
                self.url,
                bytes.len()
            )));
        }
        Ok(bytes)
    }
}

fn is_root_safetensors(f: &str) -> bool {
    f.ends_with(".safetensors") && !f.contains('/')
}

/// A Hub repo as a model: its `config.json`, and (when asked, or when there is no config)
/// the headers of its weights.
pub(crate) fn model(repo: &str, lookup: &Lookup, env: &HubEnv) -> Result<Model, Error> {
    let hub = Hub::new(env);
    let revision = lookup.revision.as_str();
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
    let weights = if lookup.weights != Want::No || config.is_none() {
        let shard = |name: &str| -> Result<(String, u64, _), Error> {
            let mut f = hub.file(repo, revision, name)?;
            let header = weights_io::safetensors_header(&mut f)?;
            Ok((name.to_owned(), f.len, header))
        };
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
            let shards = index
                .shards
                .iter()
                .map(|s| shard(s))
                .collect::<Result<Vec<_>, _>>()?;
            Some(Weights::indexed(
                &index,
                "model.safetensors.index.json",
                shards,
            ))
        } else if files.iter().any(|f| is_root_safetensors(f)) {
            // Every top-level shard, as a local directory is read (sub-folders hold other
            // variants, e.g. `onnx/` or `original/`).
            let shards = files
                .iter()
                .filter(|f| is_root_safetensors(f))
                .map(|s| shard(s))
                .collect::<Result<Vec<_>, _>>()?;
            Some(Weights::safetensors(shards))
        } else {
            let ggufs: Vec<&String> = files
                .iter()
                .filter(|f| f.to_ascii_lowercase().ends_with(".gguf"))
                .collect();
            match ggufs.as_slice() {
                [] => None,
                [one] => {
                    let mut f = hub.file(repo, revision, one)?;
                    let header = weights_io::gguf_header(&mut f)?;
                    Some(Weights::gguf(vec![((*one).clone(), f.len, header)])?)
                }
                many => {
                    return Err(Error::bad_input(
                        format!("`{repo}` holds {} GGUF files", many.len()),
                        "download the one you want and pass its path",
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
        name: repo.to_owned(),
        config,
        weights,
    })
}

//! `--online`: fetch a Hub repo's `config.json` and only the *headers* of its weight files,
//! with HTTP range requests, from `HF_ENDPOINT` (default `https://huggingface.co`) with
//! `HF_TOKEN` when set. Never downloads tensor data.

use std::time::Duration;

use anyhow::{Context as _, bail};
use serde_json::Value;

use crate::resolve::with_hint;

/// Safetensors caps headers at 100 MB; so do we, before asking for them.
const MAX_HEADER: u64 = 100_000_000;
/// GGUF headers (metadata incl. the tokenizer) are read up to this many bytes.
pub(crate) const MAX_GGUF_HEADER: u64 = 64 << 20;

/// A connection to the Hub (or a server standing in for it).
pub(crate) struct Hub {
    agent: ureq::Agent,
    endpoint: String,
    token: Option<String>,
}

/// A file's header bytes and its full length.
pub(crate) struct RemoteHeader {
    pub(crate) bytes: Vec<u8>,
    pub(crate) file_len: u64,
}

impl Hub {
    /// From `HF_ENDPOINT` and `HF_TOKEN`.
    pub(crate) fn from_env() -> Self {
        let endpoint = std::env::var("HF_ENDPOINT")
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "https://huggingface.co".into());
        let token = std::env::var("HF_TOKEN").ok().filter(|s| !s.is_empty());
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(60)))
            .http_status_as_error(false)
            .build()
            .into();
        Hub {
            agent,
            endpoint: endpoint.trim_end_matches('/').to_owned(),
            token,
        }
    }

    fn get(
        &self,
        url: &str,
        range: Option<(u64, u64)>,
    ) -> anyhow::Result<ureq::http::Response<ureq::Body>> {
        let mut req = self.agent.get(url);
        if let Some(t) = &self.token {
            req = req.header("Authorization", &format!("Bearer {t}"));
        }
        if let Some((a, b)) = range {
            req = req.header("Range", &format!("bytes={a}-{b}"));
        }
        let resp = req
            .call()
            .with_context(|| format!("request to `{url}` failed"))?;
        let status = resp.status().as_u16();
        match status {
            200 | 206 => Ok(resp),
            401 | 403 => Err(with_hint(
                format!("`{url}`: HTTP {status}: not authorised"),
                "set `HF_TOKEN` to a token with access to this repository".into(),
            )),
            404 => Err(with_hint(
                format!("`{url}`: HTTP 404: not found"),
                "check the repository id and `--revision`".into(),
            )),
            _ => bail!("`{url}`: HTTP {status}"),
        }
    }

    /// The files of `repo` at `revision`.
    pub(crate) fn list_files(&self, repo: &str, revision: &str) -> anyhow::Result<Vec<String>> {
        let url = format!("{}/api/models/{repo}/revision/{revision}", self.endpoint);
        let mut resp = self.get(&url, None)?;
        let text = resp
            .body_mut()
            .with_config()
            .limit(16 << 20)
            .read_to_string()
            .with_context(|| format!("failed to read `{url}`"))?;
        let v: Value =
            serde_json::from_str(&text).with_context(|| format!("`{url}` did not return JSON"))?;
        let files = v["siblings"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s["rfilename"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        Ok(files)
    }

    fn file_url(&self, repo: &str, revision: &str, file: &str) -> String {
        format!("{}/{repo}/resolve/{revision}/{file}", self.endpoint)
    }

    /// A small text file (config.json, an index).
    pub(crate) fn text(&self, repo: &str, revision: &str, file: &str) -> anyhow::Result<String> {
        let url = self.file_url(repo, revision, file);
        let mut resp = self.get(&url, None)?;
        resp.body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_string()
            .with_context(|| format!("failed to read `{url}`"))
    }

    /// Bytes `[start, end]` of a file and the file's length (from `Content-Range`).
    fn range(&self, url: &str, start: u64, end: u64) -> anyhow::Result<(Vec<u8>, u64)> {
        let mut resp = self.get(url, Some((start, end)))?;
        let status = resp.status().as_u16();
        let total = resp
            .headers()
            .get("content-range")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.rsplit('/').next())
            .and_then(|v| v.trim().parse::<u64>().ok());
        let want = end - start + 1;
        let bytes = resp
            .body_mut()
            .with_config()
            .limit(want)
            .read_to_vec()
            .with_context(|| format!("failed to read bytes {start}-{end} of `{url}`"))?;
        if status != 206 {
            bail!(
                "`{url}`: the server ignored the range request (HTTP {status}); refusing to download the whole file"
            );
        }
        let total = total.with_context(|| format!("`{url}`: no length in `Content-Range`"))?;
        Ok((bytes, total))
    }

    /// A safetensors header: 8 bytes of length, then exactly that many bytes.
    pub(crate) fn safetensors_header(
        &self,
        repo: &str,
        revision: &str,
        file: &str,
    ) -> anyhow::Result<RemoteHeader> {
        let url = self.file_url(repo, revision, file);
        let (first, file_len) = self.range(&url, 0, 7)?;
        let Ok(first8) = <[u8; 8]>::try_from(first.as_slice()) else {
            bail!("`{url}`: shorter than the 8-byte safetensors header length");
        };
        let n = u64::from_le_bytes(first8);
        if n > MAX_HEADER || n > file_len.saturating_sub(8) {
            bail!(
                "`{url}`: header length {n} is larger than the file ({file_len} bytes) or the 100 MB limit"
            );
        }
        let mut bytes = first;
        if n > 0 {
            let (rest, _) = self.range(&url, 8, 8 + n - 1)?;
            bytes.extend(rest);
        }
        Ok(RemoteHeader { bytes, file_len })
    }

    /// The first `n` bytes of a file (GGUF headers), and its length.
    pub(crate) fn prefix(
        &self,
        repo: &str,
        revision: &str,
        file: &str,
        n: u64,
    ) -> anyhow::Result<RemoteHeader> {
        let url = self.file_url(repo, revision, file);
        let (first, file_len) = self.range(&url, 0, 7)?;
        let end = n.min(file_len).max(8) - 1;
        let (bytes, _) = if end > 7 {
            self.range(&url, 0, end)?
        } else {
            (first, file_len)
        };
        Ok(RemoteHeader { bytes, file_len })
    }
}

fn is_root_safetensors(f: &str) -> bool {
    f.ends_with(".safetensors") && !f.contains('/')
}

/// A Hub repo as a model: its `config.json`, and (when asked, or when there is no config)
/// the headers of its weights.
pub(crate) fn model(
    repo: &str,
    lookup: &crate::resolve::Lookup,
) -> anyhow::Result<crate::resolve::Model> {
    use crate::resolve::{Found, Model};
    use crate::weights_io::Weights;
    use llmsize_weights::{gguf, safetensors};

    let hub = Hub::from_env();
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
    let weights = if lookup.weights != crate::resolve::Want::No || config.is_none() {
        let label = |f: &str| format!("{repo}/{f}");
        if files.iter().any(|f| f == "model.safetensors.index.json") {
            let text = hub.text(repo, revision, "model.safetensors.index.json")?;
            let index = safetensors::parse_index(&text, &label("model.safetensors.index.json"))?;
            let mut shards = Vec::new();
            for shard in &index.shards {
                let h = hub.safetensors_header(repo, revision, shard)?;
                let header = safetensors::parse_header(&h.bytes, h.file_len, &label(shard))?;
                shards.push((shard.clone(), h.file_len, header));
            }
            Some(Weights::Safetensors(shards))
        } else if files.iter().any(|f| is_root_safetensors(f)) {
            // Every top-level shard, as a local directory is read (sub-folders hold other
            // variants, e.g. `onnx/` or `original/`).
            let mut shards = Vec::new();
            for st in files.iter().filter(|f| is_root_safetensors(f)) {
                let h = hub.safetensors_header(repo, revision, st)?;
                let header = safetensors::parse_header(&h.bytes, h.file_len, &label(st))?;
                shards.push((st.clone(), h.file_len, header));
            }
            Some(Weights::Safetensors(shards))
        } else {
            let ggufs: Vec<&String> = files.iter().filter(|f| f.ends_with(".gguf")).collect();
            match ggufs.as_slice() {
                [] => None,
                [one] => {
                    let mut want = 1u64 << 20;
                    loop {
                        let h = hub.prefix(repo, revision, one, want)?;
                        match gguf::parse_header(&h.bytes, h.file_len, &label(one)) {
                            Ok(header) => {
                                break Some(Weights::Gguf(
                                    (*one).clone(),
                                    h.file_len,
                                    Box::new(header),
                                ));
                            }
                            Err(e)
                                if e.is_need_more_bytes()
                                    && want < h.file_len.min(MAX_GGUF_HEADER) =>
                            {
                                want = want
                                    .saturating_mul(2)
                                    .max(e.needed_at_least().unwrap_or(0))
                                    .min(h.file_len.min(MAX_GGUF_HEADER));
                            }
                            Err(e) => return Err(e.into()),
                        }
                    }
                }
                many => {
                    return Err(with_hint(
                        format!("`{repo}` holds {} GGUF files", many.len()),
                        "download the one you want and pass its path".into(),
                    ));
                }
            }
        }
    } else {
        None
    };
    if config.is_none() && weights.is_none() {
        bail!("`{repo}` at `{revision}` has neither a config.json nor weight files");
    }
    Ok(Model {
        name: repo.to_owned(),
        config,
        weights,
    })
}

//! The local Hugging Face cache, laid out as `huggingface_hub` lays it out:
//! `<cache>/models--<org>--<name>/refs/<revision>` holds a commit hash and
//! `<cache>/models--<org>--<name>/snapshots/<hash>/` the files (symlinks into `blobs/`).
//!
//! The cache directory is `HF_HUB_CACHE`, else `HF_HOME/hub`, else
//! `XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub`. Nothing here touches
//! the network.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::Error;

/// The Hub endpoint when `HF_ENDPOINT` is not set.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// Everything the Hugging Face conventions read from the environment, as a value: the
/// engine never reads the environment itself, so tests and servers pass their own.
#[derive(Debug, Clone, Default)]
pub struct HubEnv {
    /// `HF_HUB_CACHE` (or the older `HUGGINGFACE_HUB_CACHE`): the hub cache itself.
    pub hf_hub_cache: Option<PathBuf>,
    /// `HF_HOME`: the cache is `HF_HOME/hub`.
    pub hf_home: Option<PathBuf>,
    /// `XDG_CACHE_HOME`: the cache is `XDG_CACHE_HOME/huggingface/hub`.
    pub xdg_cache_home: Option<PathBuf>,
    /// `HOME`: the cache is `~/.cache/huggingface/hub`.
    pub home: Option<PathBuf>,
    /// `HF_ENDPOINT` for `--online` [default: [`DEFAULT_ENDPOINT`]].
    pub endpoint: Option<String>,
    /// `HF_TOKEN` for `--online`.
    pub token: Option<String>,
}

impl HubEnv {
    /// Build from a lookup of environment variables, e.g. `|k| std::env::var_os(k)`. Empty
    /// values count as unset, as `huggingface_hub` treats them.
    pub fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> Self {
        let os = |k: &str| var(k).filter(|v| !v.is_empty());
        let path = |k: &str| os(k).map(PathBuf::from);
        let text = |k: &str| os(k).and_then(|v| v.into_string().ok());
        HubEnv {
            hf_hub_cache: path("HF_HUB_CACHE").or_else(|| path("HUGGINGFACE_HUB_CACHE")),
            hf_home: path("HF_HOME"),
            xdg_cache_home: path("XDG_CACHE_HOME"),
            home: path("HOME"),
            endpoint: text("HF_ENDPOINT"),
            token: text("HF_TOKEN"),
        }
    }

    /// The hub cache directory.
    #[must_use]
    pub fn cache_dir(&self) -> Option<PathBuf> {
        if let Some(p) = &self.hf_hub_cache {
            return Some(p.clone());
        }
        if let Some(p) = &self.hf_home {
            return Some(p.join("hub"));
        }
        if let Some(p) = &self.xdg_cache_home {
            return Some(p.join("huggingface").join("hub"));
        }
        self.home
            .as_ref()
            .map(|h| h.join(".cache").join("huggingface").join("hub"))
    }

    /// The Hub endpoint, without a trailing slash.
    #[must_use]
    pub fn endpoint(&self) -> &str {
        self.endpoint
            .as_deref()
            .unwrap_or(DEFAULT_ENDPOINT)
            .trim_end_matches('/')
    }
}

/// True for strings shaped like a Hub model id (`org/name`, no path syntax).
#[must_use]
pub fn looks_like_repo_id(s: &str) -> bool {
    let mut parts = s.split('/');
    let (Some(org), Some(name), None) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let ok = |p: &str| {
        !p.is_empty()
            && p != "."
            && p != ".."
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    ok(org) && ok(name)
}

/// The snapshot directory of `repo` at `revision` in the cache, if the repo is cached.
///
/// `Ok(None)`: the repo is not in the cache at all. An error: it is there but broken (a ref
/// without its snapshot), which deserves a message rather than a fall-through.
pub(crate) fn snapshot(env: &HubEnv, repo: &str, revision: &str) -> Result<Option<PathBuf>, Error> {
    let Some(cache) = env.cache_dir() else {
        return Ok(None);
    };
    let folder = cache.join(format!("models--{}", repo.replace('/', "--")));
    if !folder.is_dir() {
        return Ok(None);
    }
    let is_hash = revision.len() == 40 && revision.chars().all(|c| c.is_ascii_hexdigit());
    let commit = if is_hash {
        revision.to_owned()
    } else {
        let reference = folder.join("refs").join(revision);
        match std::fs::read_to_string(&reference) {
            Ok(s) => s.trim().to_owned(),
            Err(_) => {
                return Err(Error::not_found(
                    format!(
                        "`{repo}` is in the Hugging Face cache (`{}`) but has no ref `{revision}`",
                        folder.display()
                    ),
                    "download it again, or pass `--revision` with a commit hash under `snapshots/`",
                ));
            }
        }
    };
    let snap = folder.join("snapshots").join(&commit);
    if !snap.is_dir() {
        return Err(Error::not_found(
            format!(
                "the Hugging Face cache entry of `{repo}` is broken: ref `{revision}` points to commit `{commit}`, but `{}` is missing",
                snap.display()
            ),
            "download the model again (`huggingface-cli download`), or pass `--online`",
        ));
    }
    Ok(Some(snap))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_dir_precedence() {
        let env = HubEnv {
            hf_hub_cache: None,
            hf_home: Some("/h".into()),
            xdg_cache_home: Some("/x".into()),
            home: Some("/home/u".into()),
            ..HubEnv::default()
        };
        assert_eq!(env.cache_dir(), Some(PathBuf::from("/h/hub")));
        let env = HubEnv {
            hf_home: None,
            ..env
        };
        assert_eq!(env.cache_dir(), Some(PathBuf::from("/x/huggingface/hub")));
        let env = HubEnv {
            xdg_cache_home: None,
            ..env
        };
        assert_eq!(
            env.cache_dir(),
            Some(PathBuf::from("/home/u/.cache/huggingface/hub"))
        );
    }

    #[test]
    fn from_vars_reads_only_what_it_is_given() {
        let vars = |k: &str| match k {
            "HUGGINGFACE_HUB_CACHE" => Some("/old-cache".into()),
            "HF_HOME" => Some("".into()),
            "HF_ENDPOINT" => Some("http://localhost:8080/".into()),
            "HF_TOKEN" => Some("hf_x".into()),
            _ => None,
        };
        let env = HubEnv::from_vars(vars);
        assert_eq!(env.hf_hub_cache, Some(PathBuf::from("/old-cache")));
        assert_eq!(env.hf_home, None, "empty counts as unset");
        assert_eq!(env.endpoint(), "http://localhost:8080");
        assert_eq!(env.token.as_deref(), Some("hf_x"));
        assert_eq!(HubEnv::default().endpoint(), DEFAULT_ENDPOINT);
    }

    #[test]
    fn repo_ids() {
        assert!(looks_like_repo_id("meta-llama/Llama-2-7b-hf"));
        assert!(looks_like_repo_id("sentence-transformers/all-MiniLM-L6-v2"));
        assert!(!looks_like_repo_id("./config.json"));
        assert!(!looks_like_repo_id("a/b/c"));
        assert!(!looks_like_repo_id("../x"));
        assert!(!looks_like_repo_id("gpt2"));
    }

    #[test]
    fn snapshot_resolution_and_broken_entries() {
        let dir = tempfile::tempdir().unwrap();
        let env = HubEnv {
            hf_hub_cache: Some(dir.path().to_path_buf()),
            ..HubEnv::default()
        };
        assert!(snapshot(&env, "org/model", "main").unwrap().is_none());
        let repo = dir.path().join("models--org--model");
        std::fs::create_dir_all(repo.join("refs")).unwrap();
        let hash = "0123456789abcdef0123456789abcdef01234567";
        std::fs::write(repo.join("refs/main"), hash).unwrap();
        let err = snapshot(&env, "org/model", "main").unwrap_err();
        assert!(err.to_string().contains("is broken"), "{err}");
        std::fs::create_dir_all(repo.join("snapshots").join(hash)).unwrap();
        assert_eq!(
            snapshot(&env, "org/model", "main").unwrap(),
            Some(repo.join("snapshots").join(hash))
        );
        assert!(snapshot(&env, "org/model", "v2").is_err());
    }
}

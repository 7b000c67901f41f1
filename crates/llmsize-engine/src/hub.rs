//! The local Hugging Face cache, laid out as `huggingface_hub` lays it out:
//! `<cache>/models--<org>--<name>/refs/<revision>` holds a commit hash and
//! `<cache>/models--<org>--<name>/snapshots/<hash>/` the files (symlinks into `blobs/`).
//!
//! The cache directory is `HF_HUB_CACHE`, else `HF_HOME/hub`, else
//! `XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub`. Nothing here touches
//! the network.
//!
//! A repo's cache folder is a sandbox: a ref holds a commit hash or a snapshot folder's
//! name (never a path), and every file read from a snapshot resolves inside the repo's
//! folder (its links lead into `blobs/`). A ref or link that leads elsewhere is refused,
//! named, rather than followed: the cache is data, and a folder name in it must not make
//! llmsize read another folder's files.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    /// Told how `--online` is getting on with the weight headers (the engine never prints:
    /// the CLI draws a progress line on stderr; a library caller may leave it `None`).
    pub progress: Option<ProgressSink>,
    /// Told when one `--online` transfer is slow (2 s, then every 5 s): a server that drips
    /// bytes is seen, not waited on in silence. The CLI prints a line on stderr.
    pub transfer: Option<TransferSink>,
}

/// How far `--online` is with the weight headers of one model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchProgress {
    /// Files whose header has been read.
    pub done: usize,
    /// Files to read.
    pub total: usize,
    /// Time since the first request for a header.
    pub elapsed: std::time::Duration,
}

/// One `--online` transfer that is taking long: what, how many bytes so far, since when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferProgress {
    /// What is fetched: `` `config.json` ``, `` `model-00001-of-00004.safetensors` header ``,
    /// `the file listing`.
    pub what: String,
    /// Bytes received so far.
    pub bytes: u64,
    /// Time since its first request.
    pub elapsed: std::time::Duration,
}

/// A callback for the engine's reports (the engine never prints); called from the fetching
/// threads, so it must be `Send + Sync`.
pub struct Sink<T>(Arc<dyn Fn(T) + Send + Sync>);

/// Told of [`FetchProgress`]: once with `done == 0` before the first request and once per
/// file after.
pub type ProgressSink = Sink<FetchProgress>;

/// Told of [`TransferProgress`] while a transfer is slow.
pub type TransferSink = Sink<TransferProgress>;

impl<T> Sink<T> {
    /// Wrap a callback.
    pub fn new(f: impl Fn(T) + Send + Sync + 'static) -> Self {
        Sink(Arc::new(f))
    }

    pub(crate) fn report(&self, p: T) {
        (self.0)(p);
    }
}

// By hand: a derive would ask `T: Clone`, and only the `Arc` is cloned.
impl<T> Clone for Sink<T> {
    fn clone(&self) -> Self {
        Sink(Arc::clone(&self.0))
    }
}

impl<T> fmt::Debug for Sink<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Sink(..)")
    }
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
            progress: None,
            transfer: None,
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

/// A snapshot folder of a cached repo: where its files are, and the repo's folder they must
/// resolve inside.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    /// `<cache>/models--org--name/snapshots/<revision>`.
    pub(crate) dir: PathBuf,
    /// The repo's folder, canonical: every file read resolves inside it.
    root: PathBuf,
}

impl Snapshot {
    /// Every file llmsize would read from `dir` (the snapshot or a folder in it) resolves
    /// inside the repo's folder: see [`check_links`].
    pub(crate) fn check_folder(&self, dir: &Path, repo: &str) -> Result<(), Error> {
        check_links(dir, repo, &self.root)
    }

    /// `path` (a file picked by name, whatever its name) leads somewhere, inside the repo's
    /// folder.
    pub(crate) fn check_file(&self, path: &Path, repo: &str) -> Result<(), Error> {
        check_link(path, repo)?;
        check_inside(path, repo, &self.root)
    }
}

/// The snapshot directory of `repo` at `revision` in the cache, if the repo is cached.
///
/// `revision` is a ref (`main`, a tag: `refs/<revision>` holds the commit), else the name of
/// a folder under `snapshots/` (a commit hash, or any folder a user put there), else a prefix
/// of exactly one such folder (`abc1234`, as git takes short hashes).
///
/// `Ok(None)`: the repo is not in the cache at all. An error: it is there but broken (a ref
/// without its snapshot, a weight or config symlink that leads nowhere or in a loop), or
/// has no such revision; each deserves a message rather than a fall-through.
pub(crate) fn snapshot(
    env: &HubEnv,
    repo: &str,
    revision: &str,
) -> Result<Option<Snapshot>, Error> {
    let Some(cache) = env.cache_dir() else {
        return Ok(None);
    };
    let folder = cache.join(format!("models--{}", repo.replace('/', "--")));
    if !folder.is_dir() {
        return Ok(None);
    }
    // A revision is a path below `refs/` or `snapshots/`: no way out of the repo's folder.
    if revision.is_empty()
        || revision.starts_with('/')
        || revision
            .split(['/', '\\'])
            .any(|c| c == ".." || c == "." || c.is_empty())
    {
        return Err(Error::bad_input(
            format!("`--revision {revision}` is not a branch, tag or commit name"),
            "pass a branch (`main`), a tag or a commit hash",
        ));
    }
    let root = std::fs::canonicalize(&folder).map_err(Error::io("resolve", &folder))?;
    let snapshots = folder.join("snapshots");
    let reference = folder.join("refs").join(revision);
    let snap = if reference.is_file() {
        let commit = read_ref(&reference, revision, repo)?;
        let snap = snapshots.join(&commit);
        if !snap.is_dir() {
            return Err(Error::not_found(
                format!(
                    "the Hugging Face cache entry of `{repo}` is broken: ref `{revision}` points to commit `{commit}`, but `{}` is missing",
                    snap.display()
                ),
                "download the model again (`hf download`), or pass `--online`",
            ));
        }
        snap
    } else if snapshots.join(revision).is_dir() {
        snapshots.join(revision)
    } else {
        let folders = snapshot_folders(&snapshots);
        let matching: Vec<&String> = folders.iter().filter(|f| f.starts_with(revision)).collect();
        match matching.as_slice() {
            [one] if revision.len() >= 4 => snapshots.join(one),
            _ => {
                let refs = ref_names(&folder.join("refs"));
                let list = |v: &[String]| {
                    if v.is_empty() {
                        "none".to_owned()
                    } else {
                        llmsize_core::limits::a_few(v)
                    }
                };
                return Err(Error::not_found(
                    format!(
                        "`{repo}` is in the Hugging Face cache (`{}`) but has no ref or snapshot `{revision}`{}",
                        folder.display(),
                        if matching.len() > 1 {
                            format!(" (it is the start of {} snapshots)", matching.len())
                        } else {
                            String::new()
                        }
                    ),
                    format!(
                        "pass `--revision` with a ref ({}) or a snapshot folder ({}), or add `--online`",
                        list(&refs),
                        list(&folders)
                    ),
                ));
            }
        }
    };
    // The snapshot folder itself may be a link (a user's own folder put there): it too must
    // stay inside the repo's folder.
    check_inside(&snap, repo, &root)?;
    check_links(&snap, repo, &root)?;
    Ok(Some(Snapshot { dir: snap, root }))
}

/// Longest ref file read: a commit hash is 40 characters (64 for SHA-256 repos); a ref that is
/// a link to some large file is not read whole.
const MAX_REF_BYTES: u64 = 256;

/// The commit a ref file holds, checked to be a hash or a plain snapshot folder name: a ref
/// holding `../../elsewhere` would lead out of the repo's folder.
fn read_ref(reference: &Path, revision: &str, repo: &str) -> Result<String, Error> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::fs::File::open(reference)
        .and_then(|f| f.take(MAX_REF_BYTES).read_to_end(&mut bytes))
        .map_err(Error::io("read", reference))?;
    let text = String::from_utf8_lossy(&bytes);
    let commit = text.trim();
    let plain = !commit.is_empty()
        && commit != "."
        && commit != ".."
        && commit
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if plain && to_u64(bytes.len()) < MAX_REF_BYTES {
        return Ok(commit.to_owned());
    }
    let shown: String = commit.chars().take(80).collect();
    Err(Error::bad_input(
        format!(
            "the Hugging Face cache entry of `{repo}` is unsafe: ref `{revision}` (`{}`) holds `{}{}`, which is not a commit hash or a snapshot folder name",
            reference.display(),
            shown.escape_debug(),
            if shown.len() < commit.len() || to_u64(bytes.len()) >= MAX_REF_BYTES {
                "…"
            } else {
                ""
            }
        ),
        "a ref file holds the commit hash of a folder under `snapshots/`: download the model again (`hf download`), or pass `--revision` with a snapshot folder",
    ))
}

fn to_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// The folders under `snapshots/`, sorted.
fn snapshot_folders(snapshots: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(snapshots)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    v.sort();
    v
}

/// The refs of a cached repo (`main`, tags), sorted; `refs/pr/1` as `pr/1`.
fn ref_names(refs: &Path) -> Vec<String> {
    let mut v = Vec::new();
    let mut stack = vec![refs.to_path_buf()];
    // Refs nest one or two levels (`refs/pr/1`); a bound keeps a looping folder harmless.
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() && stack.len() < 16 {
                stack.push(p);
            } else if let Ok(rel) = p.strip_prefix(refs) {
                v.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    v.sort();
    v
}

/// True for the files llmsize reads from a snapshot.
fn is_model_file(name: &str) -> bool {
    let ext = |e: &str| {
        Path::new(name)
            .extension()
            .is_some_and(|x| x.eq_ignore_ascii_case(e))
    };
    name == "config.json"
        || name.to_ascii_lowercase().ends_with(".index.json")
        || ext("safetensors")
        || ext("gguf")
}

/// Every file llmsize would read from `dir` (top level) resolves, inside `root`: the
/// cache's files are symlinks into `blobs/`; a deleted blob or a hand-made loop would
/// otherwise read as "no config.json" or a bare "No such file", and a link out of the repo's
/// folder would be followed.
fn check_links(dir: &Path, repo: &str, root: &Path) -> Result<(), Error> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(Error::io("list", dir))?
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(is_model_file))
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        check_link(&p, repo)?;
        check_inside(&p, repo, root)?;
    }
    Ok(())
}

/// `path`, when it exists, resolves (through every link, of it or of a folder above it)
/// inside `root`, the repo's canonical folder; else an error naming the path, where it
/// points and where that is.
fn check_inside(path: &Path, repo: &str, root: &Path) -> Result<(), Error> {
    let Ok(real) = std::fs::canonicalize(path) else {
        return Ok(()); // Missing or broken: `check_link` and the caller name that.
    };
    if real.starts_with(root) {
        return Ok(());
    }
    let link = std::fs::read_link(path).map_or_else(
        |_| "resolves to".to_owned(),
        |t| format!("is a symlink to `{}`, which resolves to", t.display()),
    );
    Err(Error::bad_input(
        format!(
            "the Hugging Face cache entry of `{repo}` is unsafe: `{}` {link} `{}`, outside the repo's cache folder `{}`",
            path.display(),
            real.display(),
            root.display()
        ),
        "the cache's files are links into the repo's own `blobs/`: download the model again (`hf download`), or pass the folder you mean as MODEL",
    ))
}

/// Most symlinks followed before a chain counts as a loop (Linux's `MAXSYMLINKS` is 40).
const MAX_LINKS: usize = 40;

/// `path`, if it is a symlink, leads to an existing file (or folder); else an error naming
/// the link, where it points, and whether the target is missing or the chain loops.
fn check_link(path: &Path, repo: &str) -> Result<(), Error> {
    match link_problem(path) {
        None => Ok(()),
        Some(what) => Err(Error::not_found(
            format!(
                "the Hugging Face cache entry of `{repo}` is broken: `{}` is {what}",
                path.display()
            ),
            "download the model again (`hf download`), or pass `--online`",
        )),
    }
}

/// What is wrong with `path` when it is a symlink that leads nowhere: `a broken symlink: it
/// points to …, and … does not exist`, or `a symlink loop: …`; `None` for anything else (a
/// file, a folder, a link that resolves, nothing at all).
pub(crate) fn link_problem(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.file_type().is_symlink() || std::fs::metadata(path).is_ok() {
        return None;
    }
    let mut chain: Vec<PathBuf> = Vec::new();
    let mut seen: Vec<PathBuf> = vec![path.to_path_buf()];
    let mut current = path.to_path_buf();
    let arrows = |chain: &[PathBuf]| {
        chain
            .iter()
            .map(|t| format!("`{}`", t.display()))
            .collect::<Vec<_>>()
            .join(" → ")
    };
    for _ in 0..MAX_LINKS {
        let Ok(target) = std::fs::read_link(&current) else {
            break;
        };
        chain.push(target.clone());
        let next = current
            .parent()
            .map_or_else(|| target.clone(), |dir| dir.join(&target));
        let next = normalize(&next);
        if seen.contains(&next) {
            return Some(format!(
                "a symlink loop: it points to {}, which leads back to itself",
                arrows(&chain)
            ));
        }
        match std::fs::symlink_metadata(&next) {
            Err(_) => {
                return Some(format!(
                    "a broken symlink: it points to {}, and `{}` does not exist",
                    arrows(&chain),
                    next.display()
                ));
            }
            // A link to something that is there, yet `metadata` failed (a folder on the way
            // is not searchable): not a link problem.
            Ok(m) if !m.file_type().is_symlink() => return None,
            Ok(_) => {}
        }
        seen.push(next.clone());
        current = next;
    }
    Some(format!(
        "a symlink chain that does not end: it points to {} …",
        arrows(&chain)
    ))
}

/// `a/b/../c` → `a/c`, lexically (the cache's links are relative: `../../blobs/<sha>`).
fn normalize(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
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
            snapshot(&env, "org/model", "main").unwrap().map(|s| s.dir),
            Some(repo.join("snapshots").join(hash))
        );
        assert!(snapshot(&env, "org/model", "v2").is_err());
        // A prefix names a snapshot only when one folder starts with it.
        let other = "0123456789ffffffffffffffffffffffffffffff";
        std::fs::create_dir_all(repo.join("snapshots").join(other)).unwrap();
        let err = snapshot(&env, "org/model", "0123456789").unwrap_err();
        assert!(
            err.to_string().contains("the start of 2 snapshots"),
            "{err}"
        );
        assert_eq!(
            snapshot(&env, "org/model", "0123456789a")
                .unwrap()
                .map(|s| s.dir),
            Some(repo.join("snapshots").join(hash))
        );
        assert!(snapshot(&env, "org/model", "../model").is_err());
    }

    #[test]
    fn a_ref_holds_a_hash_or_a_plain_folder_name() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path().join("main");
        let read = |text: &str| {
            std::fs::write(&r, text).unwrap();
            read_ref(&r, "main", "o/r")
        };
        let hash = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(read(&format!("{hash}\n")).unwrap(), hash);
        assert_eq!(read("my-folder_1.0").unwrap(), "my-folder_1.0");
        for bad in ["../../x", "a/b", "..", ".", "", "a\\b", "/etc"] {
            let e = read(bad).unwrap_err().to_string();
            assert!(
                e.contains("is not a commit hash or a snapshot folder name"),
                "{bad}: {e}"
            );
        }
        // Only the first 256 bytes are read: a longer ref is refused, its start shown.
        let e = read(&"a".repeat(1000)).unwrap_err().to_string();
        assert!(e.contains(&format!("holds `{}…`", "a".repeat(80))), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn links_are_followed_to_their_end() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("blob"), "{}").unwrap();
        std::os::unix::fs::symlink("blob", d.join("hop")).unwrap();
        std::os::unix::fs::symlink("hop", d.join("config.json")).unwrap();
        check_link(&d.join("config.json"), "o/r").unwrap();
        // Two hops, the second to nothing: the whole chain and the missing end are named.
        std::fs::remove_file(d.join("blob")).unwrap();
        let err = check_link(&d.join("config.json"), "o/r").unwrap_err();
        assert!(
            err.to_string().ends_with(&format!(
                "is a broken symlink: it points to `hop` → `blob`, and `{}` does not exist",
                d.join("blob").display()
            )),
            "{err}"
        );
    }
}

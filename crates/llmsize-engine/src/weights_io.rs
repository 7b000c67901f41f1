//! Reading weight-file headers: exactly the header bytes, never tensor data.
//!
//! One policy for every source of bytes (a local file, a Hub file over HTTP range requests):
//! a SafeTensors header is its 8-byte length, checked against the file and
//! [`safetensors::MAX_HEADER_SIZE`] before the rest is read; a GGUF header is read as a prefix
//! that grows (at least doubling) while the parser asks for more, up to the file's end or
//! [`gguf::MAX_HEADER_SIZE`], where the parser's own error is returned.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use llmsize_adapters::checkpoint::{Checkpoint, Ignored};
use llmsize_core::{checked, limits};
use llmsize_weights::gguf::split::{
    self, GgufSet, SplitName, merge_split, parse_split_name, split_suffix,
};
use llmsize_weights::gguf::{self, GgufHeader};
use llmsize_weights::safetensors::{self, IndexCheck, SafetensorsHeader, ShardIndex};

use crate::Error;

/// First read of a GGUF header; grown on `NeedMoreBytes`.
const GGUF_FIRST_READ: u64 = 1 << 20;

/// Somewhere header bytes come from.
pub(crate) trait ByteSource {
    /// The label in messages (a path, `repo/file`).
    fn label(&self) -> &str;
    /// The file's length.
    fn len(&self) -> u64;
    /// `n` bytes from `offset`: borrowed where the source holds them already (a Hub file's
    /// fetched prefix), so a 100 MB header is not copied once more per read.
    fn read(&mut self, offset: u64, n: u64) -> Result<Cow<'_, [u8]>, Error>;
}

/// A formula on a file's numbers that has no exact value, as the header readers' own error.
pub(crate) fn overflow(label: &str) -> impl FnOnce(llmsize_core::Overflow) -> Error + '_ {
    move |source| {
        Error::Weights(llmsize_weights::WeightsError::Arithmetic {
            file: label.to_owned(),
            source,
        })
    }
}

/// A SafeTensors header: 8 bytes, then exactly the declared length (checked first).
pub(crate) fn safetensors_header(src: &mut impl ByteSource) -> Result<SafetensorsHeader, Error> {
    let len = src.len();
    let label = src.label().to_owned();
    let first = src.read(0, len.min(8))?.into_owned();
    let n = safetensors::header_len(&first, len, &label)?;
    // One read of the prefix and the header, so the header is held once (up to 100 MB).
    let whole = checked::add("8 + N", 8, n).map_err(overflow(&label))?;
    let bytes = if n > 0 {
        src.read(0, whole)?
    } else {
        Cow::Owned(first)
    };
    Ok(safetensors::parse_header(&bytes, len, &label)?)
}

/// A GGUF header: read a prefix, and more while the parser says it needs more.
pub(crate) fn gguf_header(src: &mut impl ByteSource) -> Result<GgufHeader, Error> {
    let len = src.len();
    let label = src.label().to_owned();
    let cap = len.min(gguf::MAX_HEADER_SIZE);
    let mut want = GGUF_FIRST_READ.min(cap);
    loop {
        let bytes = src.read(0, want)?;
        match gguf::parse_header(&bytes, len, &label) {
            Ok(h) => return Ok(h),
            Err(e) if e.is_need_more_bytes() && want < cap => {
                // Grow strictly (at least doubling) up to the file or the header cap, so the
                // loop ends: at the cap the parser's own error is returned.
                want = e
                    .needed_at_least()
                    .unwrap_or(want)
                    .max(want.saturating_mul(2)) // saturates: harmless, capped by `min(cap)`
                    .min(cap);
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// A local file.
struct LocalFile<'a> {
    path: &'a Path,
    label: String,
    file: File,
    len: u64,
}

impl<'a> LocalFile<'a> {
    fn open(path: &'a Path) -> Result<Self, Error> {
        let file = open_file(path)?;
        let len = file.metadata().map_err(Error::io("stat", path))?.len();
        Ok(LocalFile {
            path,
            label: path.display().to_string(),
            file,
            len,
        })
    }
}

impl ByteSource for LocalFile<'_> {
    fn label(&self) -> &str {
        &self.label
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn read(&mut self, offset: u64, n: u64) -> Result<Cow<'_, [u8]>, Error> {
        let n_usize = usize::try_from(n).map_err(|_| Error::Internal {
            message: format!("a header of {n} bytes is too large for this machine"),
        })?;
        let mut buf = vec![0u8; n_usize];
        self.file
            .seek(SeekFrom::Start(offset))
            .and_then(|_| self.file.read_exact(&mut buf))
            .map_err(|source| Error::Io {
                what: format!(
                    "read {n} bytes at offset {offset} of `{}`",
                    self.path.display()
                ),
                source,
            })?;
        Ok(Cow::Owned(buf))
    }
}

/// What `path` is when it is neither a file nor a folder, to follow "`path` is": `a FIFO, not
/// a file or folder`, `a symlink loop: …`; found without opening it (opening a FIFO waits
/// for a writer, and a device reads forever). `None` for a file, a folder, or nothing.
pub(crate) fn not_a_file(path: &Path) -> Option<String> {
    let Ok(meta) = std::fs::metadata(path) else {
        return crate::hub::link_problem(path);
    };
    let kind = meta.file_type();
    if kind.is_file() || kind.is_dir() {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        let what = if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_char_device() {
            "a character device"
        } else if kind.is_block_device() {
            "a block device"
        } else if kind.is_socket() {
            "a socket"
        } else {
            return Some("neither a file nor a folder".to_owned());
        };
        Some(format!("{what}, not a file or folder"))
    }
    #[cfg(not(unix))]
    Some("neither a file nor a folder".to_owned())
}

/// `path` opened for reading, once it is known to be a regular file (see [`not_a_file`]).
fn open_file(path: &Path) -> Result<File, Error> {
    if let Some(what) =
        not_a_file(path).or_else(|| path.is_dir().then(|| "a folder, not a file".into()))
    {
        return Err(Error::bad_input(
            format!("`{}` is {what}", path.display()),
            "name a `config.json`, a weight file or a folder of them",
        ));
    }
    File::open(path).map_err(Error::io("open", path))
}

/// A local SafeTensors file: its length and header.
pub(crate) fn read_safetensors(path: &Path) -> Result<(u64, SafetensorsHeader), Error> {
    let mut f = LocalFile::open(path)?;
    Ok((f.len, safetensors_header(&mut f)?))
}

/// A local GGUF file: its length and header.
pub(crate) fn read_gguf(path: &Path) -> Result<(u64, GgufHeader), Error> {
    let mut f = LocalFile::open(path)?;
    Ok((f.len, gguf_header(&mut f)?))
}

/// The files of a model, as read.
pub(crate) enum WeightFiles {
    /// SafeTensors files: (file label, length, header).
    Safetensors(Vec<(String, u64, SafetensorsHeader)>),
    /// A GGUF model: one file or every shard of a split one.
    Gguf(Box<GgufSet>),
}

/// Weight files of a model: those read, those beside them that were not, and where the files
/// disagree with their index.
pub(crate) struct Weights {
    /// The files read.
    pub(crate) files: WeightFiles,
    /// Weight files not read, and why.
    pub(crate) ignored: Vec<Ignored>,
    /// Disagreements between an index and its shards (a warning; a disagreement in `audit`).
    pub(crate) problems: Vec<String>,
}

impl Weights {
    /// SafeTensors files read without an index.
    pub(crate) fn safetensors(shards: Vec<(String, u64, SafetensorsHeader)>) -> Self {
        Weights {
            files: WeightFiles::Safetensors(shards),
            ignored: Vec::new(),
            problems: Vec::new(),
        }
    }

    /// The shards an index names (`index_label` in messages), compared with the index: a
    /// tensor it names that no shard holds, one it does not name, a wrong `total_size`.
    pub(crate) fn indexed(
        index: &ShardIndex,
        index_label: &str,
        shards: Vec<(String, u64, SafetensorsHeader)>,
    ) -> Self {
        let headers: Vec<(&str, &SafetensorsHeader)> =
            shards.iter().map(|(f, _, h)| (f.as_str(), h)).collect();
        let problems = IndexCheck::new(index, &headers).messages(index_label);
        Weights {
            files: WeightFiles::Safetensors(shards),
            ignored: Vec::new(),
            problems,
        }
    }

    /// A GGUF model from the headers of its files, however they were read (a local file, HTTP
    /// range requests): one file, or every shard of a split GGUF in any order (checked to make
    /// one set by [`merge_split`]).
    pub(crate) fn gguf(parts: Vec<(String, u64, GgufHeader)>) -> Result<Self, Error> {
        Ok(Weights {
            files: WeightFiles::Gguf(Box::new(merge_split(parts)?)),
            ignored: Vec::new(),
            problems: Vec::new(),
        })
    }

    /// The GGUF model's header (every shard's tensors, the first shard's metadata) and the
    /// label of its first file.
    pub(crate) fn gguf_header(&self) -> Option<(&str, &GgufHeader)> {
        match &self.files {
            WeightFiles::Gguf(set) => Some((
                set.shards.first().map_or("", |s| s.file.as_str()),
                &set.header,
            )),
            WeightFiles::Safetensors(_) => None,
        }
    }

    /// Every tensor, once: a tensor name in two files is an error naming both.
    pub(crate) fn checkpoint(&self) -> Result<Checkpoint, Error> {
        let mut c = match &self.files {
            WeightFiles::Safetensors(shards) => Checkpoint::from_safetensors(shards),
            WeightFiles::Gguf(set) => Checkpoint::from_gguf_set(set),
        };
        if let Some((tensor, first, second)) = c.tensor_in_two_files() {
            return Err(Error::bad_input(
                format!("tensor `{tensor}` is in two files, `{first}` and `{second}`"),
                "the files hold two copies of (part of) the weights, which would be counted twice: pass the directory or file of one checkpoint",
            ));
        }
        c.ignored.clone_from(&self.ignored);
        c.file_problems.clone_from(&self.problems);
        Ok(c)
    }
}

/// The last component of a path, for labels.
pub(crate) fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(
        || p.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// A `model.safetensors.index.json` whose shards are not (all) at hand, and the bytes its
/// `metadata.total_size` says they hold: what a download of the config and index alone gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IndexOnly {
    /// The index's file name.
    pub(crate) file: String,
    /// `metadata.total_size`.
    pub(crate) total_size: u64,
    /// Shards it names.
    pub(crate) shards: usize,
    /// Of those, not in the folder.
    pub(crate) missing: usize,
}

/// The index of `dir` when some shard it names is missing and it states `total_size`; `None`
/// when there is no index, every shard is present (read them), or the size is not stated.
pub(crate) fn index_without_shards(dir: &Path) -> Result<Option<IndexOnly>, Error> {
    let path = dir.join("model.safetensors.index.json");
    if !path.is_file() {
        return Ok(None);
    }
    let text = read_text(&path)?;
    let index = safetensors::parse_index(&text, &path.display().to_string())?;
    let missing = index
        .shards
        .iter()
        .filter(|s| !dir.join(s.as_str()).is_file())
        .count();
    Ok(index
        .total_size
        .filter(|_| missing > 0)
        .map(|total_size| IndexOnly {
            file: file_name(&path),
            total_size,
            shards: index.shards.len(),
            missing,
        }))
}

/// Shards named by a `model.safetensors.index.json`.
pub(crate) fn read_index(path: &Path) -> Result<Weights, Error> {
    let text = read_text(path)?;
    let label = path.display().to_string();
    let index = safetensors::parse_index(&text, &label)?;
    check_shards(&index.shards, &label)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut shards = Vec::new();
    for shard in &index.shards {
        let p = dir.join(shard);
        // One that is there but not a file (a FIFO, a broken link) is named by `open_file`.
        if !p.is_file() && not_a_file(&p).is_none() {
            return Err(Error::not_found(
                format!("`{label}` lists shard `{shard}`, which is missing"),
                "download every shard, or pass `--online` to read the headers from the Hub",
            ));
        }
        let (len, h) = read_safetensors(&p)?;
        shards.push((shard.clone(), len, h));
    }
    Ok(Weights::indexed(&index, &file_name(path), shards))
}

/// The bytes of a file name, as the OS stores them (so a name that is not UTF-8 survives).
fn name_bytes(name: &OsStr) -> &[u8] {
    name.as_encoded_bytes()
}

/// `prefix` (bytes of an OS file name, cut at an ASCII character) followed by `suffix`.
#[cfg(unix)]
#[expect(
    clippy::unnecessary_wraps,
    reason = "the same signature as on other systems, where a name may not convert"
)]
fn join_name(prefix: &[u8], suffix: &str) -> Option<OsString> {
    use std::os::unix::ffi::OsStringExt;
    let mut v = prefix.to_vec();
    v.extend_from_slice(suffix.as_bytes());
    Some(OsString::from_vec(v))
}

/// `prefix` (bytes of an OS file name, cut at an ASCII character) followed by `suffix`.
#[cfg(not(unix))]
fn join_name(prefix: &[u8], suffix: &str) -> Option<OsString> {
    let p = std::str::from_utf8(prefix).ok()?;
    Some(OsString::from(format!("{p}{suffix}")))
}

/// The shard suffix of a path's file name, if any.
fn split_name(path: &Path) -> Option<SplitName> {
    parse_split_name(name_bytes(path.file_name()?))
}

/// A local GGUF model from one of its files: the file itself, or, when its `split.*` keys say
/// it is a shard, every shard of its set (found by llama.cpp's `-%05d-of-%05d.gguf` names next
/// to it; any shard finds the others). A missing shard is an error naming its file.
pub(crate) fn read_gguf_model(path: &Path) -> Result<Weights, Error> {
    let (len, header) = read_gguf(path)?;
    let label = path.display().to_string();
    let Some(info) = split::split_info(&header, &label)? else {
        return Weights::gguf(vec![(label, len, header)]);
    };
    let count = info.count;
    // `split.no` counts from 0, file names from 1; `split_info` checked no < count.
    let number = checked::add("split.no + 1", info.no, 1).map_err(overflow(&label))?;
    let Some(name) = split_name(path).filter(|n| n.count == count && n.no == number) else {
        return Err(Error::bad_input(
            format!(
                "`{label}` is shard {number} of a split GGUF of {count} files (`split.no` = {}, `split.count` = {count}), but its name does not end in `{}`, so the other shards cannot be found",
                info.no,
                split_suffix(number, count)
            ),
            "keep the shards' names as llama.cpp's gguf-split writes them (`PREFIX-00001-of-0000N.gguf` …), side by side",
        ));
    };
    if count > MAX_SHARDS as u64 {
        return Err(Error::bad_input(
            format!(
                "`{label}` is part of a split GGUF of {count} files, more than the limit of {MAX_SHARDS}"
            ),
            "a split GGUF has a few shards (llama.cpp's gguf-split writes up to 99,999)",
        ));
    }
    let file = path.file_name().unwrap_or_default();
    let prefix = name_bytes(file).get(..name.prefix_len).unwrap_or_default();
    let dir = path.parent().unwrap_or(Path::new(""));
    let mut paths = Vec::new();
    for no in 1..=count {
        let sibling = join_name(prefix, &split_suffix(no, count))
            .map(|n| dir.join(n))
            .ok_or_else(|| {
                Error::bad_input(
                    format!(
                        "`{label}`: the names of the other shards cannot be made from this one"
                    ),
                    "rename the shards with UTF-8 names",
                )
            })?;
        paths.push((no, sibling));
    }
    let missing: Vec<String> = paths
        .iter()
        .filter(|(no, p)| *no != name.no && !p.is_file())
        .map(|(no, p)| format!("`{}` (shard {no})", p.display()))
        .collect();
    if !missing.is_empty() {
        return Err(Error::not_found(
            format!(
                "`{label}` is part of a split GGUF of {count} files; {} {} missing",
                limits::a_few(&missing),
                if missing.len() == 1 { "is" } else { "are" }
            ),
            "download every shard next to the others (llama.cpp's gguf-split names them `PREFIX-0000N-of-0000M.gguf`), or pass `--online` to read the headers from the Hub",
        ));
    }
    let mut parts = Vec::with_capacity(paths.len());
    let mut given = Some((len, header));
    for (no, p) in paths {
        let (len, h) = match given.take_if(|_| no == name.no) {
            Some(read) => read,
            None => read_gguf(&p)?,
        };
        // Side by side in one folder: their names say which is which.
        parts.push((file_name(&p), len, h));
    }
    Weights::gguf(parts)
}

/// Whether a file name is Mistral's own checkpoint format (`consolidated.safetensors`,
/// `consolidated-00001-of-00002.safetensors`, `consolidated.00.pth`): the same weights as the
/// HF shards often published beside it, under other names.
fn is_consolidated(name: &str) -> bool {
    name.starts_with("consolidated")
}

/// A PyTorch pickle (`.bin`, `.pth`, `.pt`): not read, named when skipped.
fn is_pickle(ext: &str) -> bool {
    matches!(ext, "bin" | "pth" | "pt")
}

/// The weights in a directory: an index, else every `.safetensors`, else one GGUF model (a
/// file, or the shards of one split GGUF). Weight files beside the chosen ones are named as
/// ignored, with why. With both HF shards and Mistral's `consolidated*.safetensors` (the same
/// weights twice), the HF shards are read when `config.json` is present (it describes them),
/// else the consolidated file.
pub(crate) fn find_weights(dir: &Path) -> Result<Option<Weights>, Error> {
    let has_config = dir.join("config.json").is_file();
    let index = dir.join("model.safetensors.index.json");
    let mut safetensors: Vec<PathBuf> = Vec::new();
    let mut ggufs: Vec<PathBuf> = Vec::new();
    let mut pickles: Vec<PathBuf> = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(Error::io("list", dir))? {
        let p = entry.map_err(Error::io("list", dir))?.path();
        let ext = p
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("safetensors") => safetensors.push(p),
            Some("gguf") => ggufs.push(p),
            Some(e) if is_pickle(e) => pickles.push(p),
            _ => {}
        }
    }
    safetensors.sort();
    ggufs.sort();
    pickles.sort();
    let mut ignored = Vec::new();
    let mut weights = if index.is_file() {
        let w = read_index(&index)?;
        let WeightFiles::Safetensors(used) = &w.files else {
            return Ok(Some(w));
        };
        let used: Vec<&str> = used.iter().map(|(f, _, _)| f.as_str()).collect();
        for p in &safetensors {
            let name = file_name(p);
            if used.contains(&name.as_str()) {
                continue;
            }
            let why = if is_consolidated(&name) {
                "Mistral's consolidated checkpoint, the same weights as the HF shards `model.safetensors.index.json` names, which are read"
            } else {
                "not named by `model.safetensors.index.json`"
            };
            ignored.push(Ignored {
                file: name,
                why: why.into(),
            });
        }
        Some(w)
    } else if !safetensors.is_empty() {
        let (consolidated, hf): (Vec<&PathBuf>, Vec<&PathBuf>) = safetensors
            .iter()
            .partition(|p| is_consolidated(&file_name(p)));
        let (read, skip, why) = if consolidated.is_empty() || hf.is_empty() {
            (safetensors.iter().collect(), Vec::new(), "")
        } else if has_config {
            (
                hf,
                consolidated,
                "Mistral's consolidated checkpoint, the same weights as the HF shards, which are read (config.json describes them)",
            )
        } else {
            (
                consolidated,
                hf,
                "HF shards of the same weights as Mistral's consolidated checkpoint, which is read (there is no config.json)",
            )
        };
        for p in skip {
            ignored.push(Ignored {
                file: file_name(p),
                why: why.into(),
            });
        }
        check_numbered_shards(dir, &read)?;
        let mut shards = Vec::new();
        for p in read {
            let (len, h) = read_safetensors(p)?;
            shards.push((file_name(p), len, h));
        }
        Some(Weights::safetensors(shards))
    } else {
        gguf_in_dir(dir, &ggufs)?
    };
    if weights.is_some() {
        if !safetensors.is_empty() {
            for p in &ggufs {
                ignored.push(Ignored {
                    file: file_name(p),
                    why: "a GGUF beside the SafeTensors files, which are read; pass its path to read it".into(),
                });
            }
        }
        for p in &pickles {
            ignored.push(Ignored {
                file: file_name(p),
                why: "a PyTorch pickle, not read".into(),
            });
        }
    }
    if let Some(w) = &mut weights {
        w.ignored = ignored;
    }
    Ok(weights)
}

/// SafeTensors shards named as `transformers` numbers them (`model-00001-of-00004.safetensors`)
/// and read without an index: every number up to the count is there, or the missing ones are
/// named (half a model is not counted as a model).
fn check_numbered_shards(dir: &Path, files: &[&PathBuf]) -> Result<(), Error> {
    // A set of shards: the name without its number, and the count of the set.
    type Set = (Vec<u8>, u64);
    // Each set with the shard numbers present, in order of first appearance.
    let mut sets: Vec<(Set, HashSet<u64>)> = Vec::new();
    let mut index: HashMap<Set, usize> = HashMap::new();
    for p in files {
        let name = name_bytes(p.file_name().unwrap_or_default());
        let Some(s) = split::parse_shard_name(name, ".safetensors") else {
            continue;
        };
        let key = (
            name.get(..s.prefix_len).unwrap_or_default().to_vec(),
            s.count,
        );
        let i = *index.entry(key.clone()).or_insert_with(|| {
            sets.push((key, HashSet::new()));
            sets.len().saturating_sub(1)
        });
        if let Some((_, present)) = sets.get_mut(i) {
            present.insert(s.no);
        }
    }
    for ((prefix, count), present) in sets {
        let prefix = String::from_utf8_lossy(&prefix);
        // Every number present is at most `count` (`parse_shard_name`), once each.
        let n_missing = count.saturating_sub(present.len() as u64);
        if n_missing > 0 {
            // The first few missing numbers (the search stops there, whatever the count).
            let shown: Vec<String> = (1..=count)
                .filter(|no| !present.contains(no))
                .take(limits::MAX_NAMES_IN_MESSAGE)
                .map(|no| format!("`{prefix}-{no:05}-of-{count:05}.safetensors`"))
                .collect();
            let more = n_missing.saturating_sub(shown.len() as u64);
            return Err(Error::not_found(
                format!(
                    "`{}` holds {} of the {count} shards `{prefix}-…-of-{count:05}.safetensors`; missing: {}{}",
                    dir.display(),
                    present.len(),
                    shown.join(", "),
                    if more > 0 {
                        format!(" and {} more", llmsize_core::units::thousands(more))
                    } else {
                        String::new()
                    }
                ),
                "download every shard (and `model.safetensors.index.json`), or pass `--online` to read the headers from the Hub",
            ));
        }
    }
    Ok(())
}

/// GGUF files grouped into models: the shards of one split set (same prefix and count) are
/// one model, in shard order; any other file is a model of its own. `name` gives a file's name
/// as bytes (a local file's OS name, a Hub path's UTF-8), so local and remote listings group
/// alike.
pub(crate) fn gguf_models<T>(files: &[T], name: impl Fn(&T) -> &[u8]) -> Vec<Vec<&T>> {
    // (the name without the shard number, the members with their shard numbers)
    type Model<'a, T> = (Vec<u8>, Vec<(u64, &'a T)>);
    let mut models: Vec<Model<'_, T>> = Vec::new();
    // Where each key's model is in `models`: linear in the files, however many.
    let mut index: HashMap<Vec<u8>, usize> = HashMap::new();
    for f in files {
        let bytes = name(f);
        let (key, no) = match parse_split_name(bytes) {
            Some(s) => {
                let mut key = bytes.get(..s.prefix_len).unwrap_or_default().to_vec();
                key.extend_from_slice(split_suffix(0, s.count).as_bytes());
                (key, s.no)
            }
            None => (bytes.to_vec(), 0),
        };
        let i = *index.entry(key.clone()).or_insert_with(|| {
            models.push((key, Vec::new()));
            models.len().saturating_sub(1)
        });
        if let Some((_, members)) = models.get_mut(i) {
            members.push((no, f));
        }
    }
    models
        .into_iter()
        .map(|(_, mut members)| {
            members.sort_by_key(|(no, _)| *no);
            members.into_iter().map(|(_, f)| f).collect()
        })
        .collect()
}

/// The one GGUF model of a directory: one file, or the shards of one split GGUF.
fn gguf_in_dir(dir: &Path, ggufs: &[PathBuf]) -> Result<Option<Weights>, Error> {
    let models = gguf_models(ggufs, |p| name_bytes(p.file_name().unwrap_or_default()));
    match models.as_slice() {
        [] => Ok(None),
        [one] => match one.first() {
            Some(first) => read_gguf_model(first).map(Some),
            None => Ok(None),
        },
        many => Err(Error::bad_input(
            format!(
                "`{}` holds {} GGUF models",
                dir.display(),
                llmsize_core::units::thousands(many.len() as u64)
            ),
            format!(
                "name one of them: {}",
                limits::a_few(
                    &many
                        .iter()
                        .filter_map(|m| Some(match m.as_slice() {
                            [one] => file_name(one),
                            [first, ..] => format!("{} ({} shards)", file_name(first), m.len()),
                            [] => return None,
                        }))
                        .collect::<Vec<_>>()
                )
            ),
        )),
    }
}

/// Most bytes read from a `config.json` or an index ([`limits::MAX_TEXT_BYTES`]): a weight
/// file passed by mistake must not be read whole.
pub(crate) const MAX_TEXT_FILE: u64 = limits::MAX_TEXT_BYTES;

/// A text file of at most [`MAX_TEXT_FILE`] bytes.
pub(crate) fn read_text(path: &Path) -> Result<String, Error> {
    let file = open_file(path)?;
    let mut bytes = Vec::new();
    // One byte past the limit tells a file at the limit from a longer one (saturates: never,
    // a constant).
    file.take(MAX_TEXT_FILE.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(Error::io("read", path))?;
    if bytes.len() as u64 > MAX_TEXT_FILE {
        return Err(Error::bad_input(
            format!(
                "`{}` is larger than {} MiB, too large for a `config.json` or an index",
                path.display(),
                MAX_TEXT_FILE >> 20
            ),
            "pass the model's `config.json` (or its directory); weight files are `.safetensors` or `.gguf`",
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        Error::bad_input(
            format!(
                "`{}` is not UTF-8 text (byte {})",
                path.display(),
                e.utf8_error().valid_up_to()
            ),
            "pass the model's `config.json` (or its directory)",
        )
    })
}

/// Most shards an index (or a split GGUF) may name: [`limits::MAX_SHARDS`].
pub(crate) const MAX_SHARDS: usize = limits::MAX_SHARDS;

/// An index names at most [`MAX_SHARDS`] shards (`parse_index` has already checked that each
/// is a plain file name beside it).
pub(crate) fn check_shards(shards: &[String], index: &str) -> Result<(), Error> {
    if shards.len() > MAX_SHARDS {
        return Err(Error::bad_input(
            format!(
                "`{index}` names {} shard files, more than the limit of {MAX_SHARDS}",
                shards.len()
            ),
            "an index lists the shards of one checkpoint",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes in memory that count how much was read.
    struct Memory {
        bytes: Vec<u8>,
        reads: Vec<(u64, u64)>,
    }

    impl ByteSource for Memory {
        fn label(&self) -> &'static str {
            "memory"
        }
        fn len(&self) -> u64 {
            self.bytes.len() as u64
        }
        fn read(&mut self, offset: u64, n: u64) -> Result<Cow<'_, [u8]>, Error> {
            self.reads.push((offset, n));
            let (a, b) = (
                usize::try_from(offset).unwrap(),
                usize::try_from(offset + n).unwrap(),
            );
            Ok(Cow::Borrowed(&self.bytes[a..b]))
        }
    }

    #[test]
    fn safetensors_reads_length_then_exactly_prefix_and_header_in_one_read() {
        let json = br#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
        let mut bytes = (json.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(json);
        bytes.extend_from_slice(&[0u8; 8]);
        let mut src = Memory {
            bytes,
            reads: Vec::new(),
        };
        let h = safetensors_header(&mut src).unwrap();
        assert!(h.tensor("a").is_some());
        // The second read takes the 8-byte prefix again, so the header is held once.
        assert_eq!(src.reads, vec![(0, 8), (0, 8 + json.len() as u64)]);
    }

    #[test]
    fn safetensors_too_large_header_is_refused_before_reading_it() {
        let mut bytes = (u64::MAX / 2).to_le_bytes().to_vec();
        bytes.extend_from_slice(b"{}");
        let mut src = Memory {
            bytes,
            reads: Vec::new(),
        };
        let err = safetensors_header(&mut src).unwrap_err();
        assert!(matches!(err, Error::Weights(_)), "{err}");
        assert_eq!(src.reads, vec![(0, 8)]);
    }

    #[test]
    fn gguf_truncated_stops_at_the_file_end() {
        // A GGUF magic and version, then a tensor count that runs past the end.
        let mut bytes = b"GGUF".to_vec();
        bytes.extend_from_slice(&3u32.to_le_bytes());
        bytes.extend_from_slice(&[1, 0]);
        let mut src = Memory {
            bytes,
            reads: Vec::new(),
        };
        let err = gguf_header(&mut src).unwrap_err();
        assert!(matches!(err, Error::Weights(_)), "{err}");
        assert_eq!(src.reads.len(), 1);
    }
}

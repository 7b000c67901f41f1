//! Reading weight-file headers from disk: exactly the header bytes, never tensor data.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use llmsize_adapters::checkpoint::Checkpoint;
use llmsize_weights::gguf::{self, GgufHeader};
use llmsize_weights::safetensors::{self, SafetensorsHeader};

use crate::resolve::with_hint;

/// First read of a GGUF header; doubled on `NeedMoreBytes`.
const GGUF_FIRST_READ: u64 = 1 << 20;

fn label(path: &Path) -> String {
    path.display().to_string()
}

fn open(path: &Path) -> anyhow::Result<(File, u64)> {
    let f = File::open(path).with_context(|| format!("failed to open `{}`", path.display()))?;
    let len = f
        .metadata()
        .with_context(|| format!("failed to stat `{}`", path.display()))?
        .len();
    Ok((f, len))
}

fn read_exact_at(f: &mut File, path: &Path, offset: u64, n: u64) -> anyhow::Result<Vec<u8>> {
    let n_usize = usize::try_from(n).context("header too large for this machine")?;
    let mut buf = vec![0u8; n_usize];
    f.seek(SeekFrom::Start(offset))
        .and_then(|_| f.read_exact(&mut buf))
        .with_context(|| {
            format!(
                "failed to read {n} bytes at offset {offset} of `{}`",
                path.display()
            )
        })?;
    Ok(buf)
}

/// A SafeTensors header: 8 bytes, then exactly the declared length (checked first).
pub(crate) fn read_safetensors(path: &Path) -> anyhow::Result<(u64, SafetensorsHeader)> {
    let (mut f, len) = open(path)?;
    let file = label(path);
    let first = read_exact_at(&mut f, path, 0, len.min(8))?;
    let n = safetensors::header_len(&first, len, &file)?;
    let mut bytes = first;
    bytes.extend(read_exact_at(&mut f, path, 8, n)?);
    Ok((len, safetensors::parse_header(&bytes, len, &file)?))
}

/// A GGUF header: read a prefix, and more while the parser says it needs more.
pub(crate) fn read_gguf(path: &Path) -> anyhow::Result<(u64, GgufHeader)> {
    let (mut f, len) = open(path)?;
    let file = label(path);
    let mut want = GGUF_FIRST_READ.min(len);
    loop {
        let bytes = read_exact_at(&mut f, path, 0, want)?;
        match gguf::parse_header(&bytes, len, &file) {
            Ok(h) => return Ok((len, h)),
            Err(e) if e.is_need_more_bytes() && want < len.min(gguf::MAX_HEADER_SIZE) => {
                // Grow strictly (at least doubling) up to the file or the header cap, so the
                // loop ends: at the cap the parser's own error is returned.
                want = e
                    .needed_at_least()
                    .unwrap_or(want)
                    .max(want.saturating_mul(2))
                    .min(len)
                    .min(gguf::MAX_HEADER_SIZE);
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Weight files of a model.
pub(crate) enum Weights {
    /// SafeTensors shards: (file label, length, header).
    Safetensors(Vec<(String, u64, SafetensorsHeader)>),
    /// One GGUF file.
    Gguf(String, u64, Box<GgufHeader>),
}

impl Weights {
    pub(crate) fn checkpoint(&self) -> Checkpoint {
        match self {
            Weights::Safetensors(shards) => Checkpoint::from_safetensors(shards),
            Weights::Gguf(file, len, h) => Checkpoint::from_gguf(file, *len, h),
        }
    }
}

/// The last component of a path, for labels.
pub(crate) fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(
        || p.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Shards named by a `model.safetensors.index.json`.
pub(crate) fn read_index(path: &Path) -> anyhow::Result<Weights> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("failed to read `{}`", path.display()))?;
    let index = safetensors::parse_index(&text, &label(path))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut shards = Vec::new();
    for shard in &index.shards {
        let p = dir.join(shard);
        if !p.is_file() {
            return Err(with_hint(
                format!(
                    "`{}` lists shard `{shard}`, which is missing",
                    path.display()
                ),
                "download every shard, or pass `--online` to read the headers from the Hub".into(),
            ));
        }
        let (len, h) = read_safetensors(&p)?;
        shards.push((shard.clone(), len, h));
    }
    Ok(Weights::Safetensors(shards))
}

/// The weights in a directory: an index, else every `.safetensors`, else one `.gguf`.
pub(crate) fn find_weights(dir: &Path) -> anyhow::Result<Option<Weights>> {
    let index = dir.join("model.safetensors.index.json");
    if index.is_file() {
        return read_index(&index).map(Some);
    }
    let mut safetensors: Vec<PathBuf> = Vec::new();
    let mut ggufs: Vec<PathBuf> = Vec::new();
    for entry in
        std::fs::read_dir(dir).with_context(|| format!("failed to list `{}`", dir.display()))?
    {
        let p = entry?.path();
        match p.extension().and_then(|e| e.to_str()) {
            Some("safetensors") => safetensors.push(p),
            Some("gguf") => ggufs.push(p),
            _ => {}
        }
    }
    safetensors.sort();
    ggufs.sort();
    if !safetensors.is_empty() {
        let mut shards = Vec::new();
        for p in &safetensors {
            let (len, h) = read_safetensors(p)?;
            shards.push((file_name(p), len, h));
        }
        return Ok(Some(Weights::Safetensors(shards)));
    }
    match ggufs.as_slice() {
        [] => Ok(None),
        [one] => {
            let (len, h) = read_gguf(one)?;
            Ok(Some(Weights::Gguf(file_name(one), len, Box::new(h))))
        }
        many => Err(with_hint(
            format!("`{}` holds {} GGUF files", dir.display(), many.len()),
            format!(
                "name one of them: {}",
                many.iter()
                    .map(|p| file_name(p))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

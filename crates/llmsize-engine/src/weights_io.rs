//! Reading weight-file headers: exactly the header bytes, never tensor data.
//!
//! One policy for every source of bytes (a local file, a Hub file over HTTP range requests):
//! a SafeTensors header is its 8-byte length, checked against the file and
//! [`safetensors::MAX_HEADER_SIZE`] before the rest is read; a GGUF header is read as a prefix
//! that grows (at least doubling) while the parser asks for more, up to the file's end or
//! [`gguf::MAX_HEADER_SIZE`], where the parser's own error is returned.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use llmsize_adapters::checkpoint::Checkpoint;
use llmsize_weights::gguf::{self, GgufHeader};
use llmsize_weights::safetensors::{self, SafetensorsHeader};

use crate::Error;

/// First read of a GGUF header; grown on `NeedMoreBytes`.
const GGUF_FIRST_READ: u64 = 1 << 20;

/// Somewhere header bytes come from.
pub(crate) trait ByteSource {
    /// The label in messages (a path, `repo/file`).
    fn label(&self) -> &str;
    /// The file's length.
    fn len(&self) -> u64;
    /// `n` bytes from `offset`.
    fn read(&mut self, offset: u64, n: u64) -> Result<Vec<u8>, Error>;
}

/// A SafeTensors header: 8 bytes, then exactly the declared length (checked first).
pub(crate) fn safetensors_header(src: &mut impl ByteSource) -> Result<SafetensorsHeader, Error> {
    let len = src.len();
    let first = src.read(0, len.min(8))?;
    let n = safetensors::header_len(&first, len, src.label())?;
    // One read of the prefix and the header, so the header is held once (up to 100 MB).
    let bytes = if n > 0 { src.read(0, 8 + n)? } else { first };
    Ok(safetensors::parse_header(&bytes, len, src.label())?)
}

/// A GGUF header: read a prefix, and more while the parser says it needs more.
pub(crate) fn gguf_header(src: &mut impl ByteSource) -> Result<GgufHeader, Error> {
    let len = src.len();
    let cap = len.min(gguf::MAX_HEADER_SIZE);
    let mut want = GGUF_FIRST_READ.min(cap);
    loop {
        let bytes = src.read(0, want)?;
        match gguf::parse_header(&bytes, len, src.label()) {
            Ok(h) => return Ok(h),
            Err(e) if e.is_need_more_bytes() && want < cap => {
                // Grow strictly (at least doubling) up to the file or the header cap, so the
                // loop ends: at the cap the parser's own error is returned.
                want = e
                    .needed_at_least()
                    .unwrap_or(want)
                    .max(want.saturating_mul(2))
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
        let file = File::open(path).map_err(Error::io("open", path))?;
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

    fn read(&mut self, offset: u64, n: u64) -> Result<Vec<u8>, Error> {
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
        Ok(buf)
    }
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
pub(crate) fn read_index(path: &Path) -> Result<Weights, Error> {
    let text = read_text(path)?;
    let index = safetensors::parse_index(&text, &path.display().to_string())?;
    check_shards(&index.shards, &path.display().to_string())?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut shards = Vec::new();
    for shard in &index.shards {
        let p = dir.join(shard);
        if !p.is_file() {
            return Err(Error::not_found(
                format!(
                    "`{}` lists shard `{shard}`, which is missing",
                    path.display()
                ),
                "download every shard, or pass `--online` to read the headers from the Hub",
            ));
        }
        let (len, h) = read_safetensors(&p)?;
        shards.push((shard.clone(), len, h));
    }
    Ok(Weights::Safetensors(shards))
}

/// The weights in a directory: an index, else every `.safetensors`, else one `.gguf`.
pub(crate) fn find_weights(dir: &Path) -> Result<Option<Weights>, Error> {
    let index = dir.join("model.safetensors.index.json");
    if index.is_file() {
        return read_index(&index).map(Some);
    }
    let mut safetensors: Vec<PathBuf> = Vec::new();
    let mut ggufs: Vec<PathBuf> = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(Error::io("list", dir))? {
        let p = entry.map_err(Error::io("list", dir))?.path();
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
        many => Err(Error::bad_input(
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

/// Most bytes read from a `config.json` or an index: real ones are kilobytes (DeepSeek-V3's
/// index is 8 MB), and a weight file passed by mistake must not be read whole.
pub(crate) const MAX_TEXT_FILE: u64 = 64 << 20;

/// A text file of at most [`MAX_TEXT_FILE`] bytes.
pub(crate) fn read_text(path: &Path) -> Result<String, Error> {
    let file = File::open(path).map_err(Error::io("open", path))?;
    let mut bytes = Vec::new();
    file.take(MAX_TEXT_FILE + 1)
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

/// Most shards an index may name: the largest published checkpoints have a few hundred
/// (DeepSeek-V3 163, Llama-3.1-405B 191).
pub(crate) const MAX_SHARDS: usize = 4096;

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
        fn read(&mut self, offset: u64, n: u64) -> Result<Vec<u8>, Error> {
            self.reads.push((offset, n));
            let (a, b) = (
                usize::try_from(offset).unwrap(),
                usize::try_from(offset + n).unwrap(),
            );
            Ok(self.bytes[a..b].to_vec())
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

//! Builds GGUF headers byte by byte, for tests. Shared by the unit tests (through `#[path]`)
//! and the integration tests.

#![allow(dead_code, reason = "each test binary uses a different part")]
#![allow(
    clippy::cast_possible_truncation,
    reason = "GGUF v1 fields are u32 by definition; tests pass small values"
)]

/// A GGUF header under construction.
#[derive(Clone, Debug)]
pub(crate) struct GgufBuilder {
    /// Version written after the magic; 1 switches counts and lengths to `u32`.
    pub(crate) version: u32,
    kvs: Vec<u8>,
    kv_count: u64,
    infos: Vec<u8>,
    tensor_count: u64,
    /// Override the tensor count written in the header.
    pub(crate) tensor_count_override: Option<u64>,
    /// Override the metadata key count written in the header.
    pub(crate) kv_count_override: Option<u64>,
    /// Alignment used by [`GgufBuilder::data_start`] (set it to match `general.alignment`).
    pub(crate) alignment: u64,
}

impl GgufBuilder {
    /// An empty header of this version.
    pub(crate) fn new(version: u32) -> Self {
        GgufBuilder {
            version,
            kvs: Vec::new(),
            kv_count: 0,
            infos: Vec::new(),
            tensor_count: 0,
            tensor_count_override: None,
            kv_count_override: None,
            alignment: 32,
        }
    }

    /// A count or length in this version's width.
    pub(crate) fn count(&self, n: u64) -> Vec<u8> {
        if self.version == 1 {
            (n as u32).to_le_bytes().to_vec()
        } else {
            n.to_le_bytes().to_vec()
        }
    }

    /// A length-prefixed string.
    pub(crate) fn string(&self, s: &[u8]) -> Vec<u8> {
        let mut out = self.count(s.len() as u64);
        out.extend_from_slice(s);
        out
    }

    /// An array value's payload: element type, count, encoded elements.
    pub(crate) fn array(&self, element_type: u32, n: u64, elements: &[u8]) -> Vec<u8> {
        let mut out = element_type.to_le_bytes().to_vec();
        out.extend(self.count(n));
        out.extend_from_slice(elements);
        out
    }

    /// A key/value with an encoded payload.
    pub(crate) fn kv_raw(mut self, key: &[u8], type_id: u32, payload: &[u8]) -> Self {
        let key = self.string(key);
        self.kvs.extend(key);
        self.kvs.extend(type_id.to_le_bytes());
        self.kvs.extend_from_slice(payload);
        self.kv_count += 1;
        self
    }

    /// A `u32` key/value.
    pub(crate) fn kv_u32(self, key: &str, v: u32) -> Self {
        self.kv_raw(key.as_bytes(), 4, &v.to_le_bytes())
    }

    /// A `u64` key/value.
    pub(crate) fn kv_u64(self, key: &str, v: u64) -> Self {
        self.kv_raw(key.as_bytes(), 10, &v.to_le_bytes())
    }

    /// A string key/value.
    pub(crate) fn kv_str(self, key: &str, v: &str) -> Self {
        let payload = self.string(v.as_bytes());
        self.kv_raw(key.as_bytes(), 8, &payload)
    }

    /// A tensor info with raw name bytes.
    pub(crate) fn tensor_raw(
        mut self,
        name: &[u8],
        dims: &[u64],
        type_id: u32,
        offset: u64,
    ) -> Self {
        let name = self.string(name);
        self.infos.extend(name);
        self.infos.extend((dims.len() as u32).to_le_bytes());
        for &d in dims {
            let d = self.count(d);
            self.infos.extend(d);
        }
        self.infos.extend(type_id.to_le_bytes());
        self.infos.extend(offset.to_le_bytes());
        self.tensor_count += 1;
        self
    }

    /// A tensor info.
    pub(crate) fn tensor(self, name: &str, dims: &[u64], type_id: u32, offset: u64) -> Self {
        self.tensor_raw(name.as_bytes(), dims, type_id, offset)
    }

    /// The header bytes: magic to the end of the tensor infos.
    pub(crate) fn build(&self) -> Vec<u8> {
        let mut out = b"GGUF".to_vec();
        out.extend(self.version.to_le_bytes());
        out.extend(self.count(self.tensor_count_override.unwrap_or(self.tensor_count)));
        out.extend(self.count(self.kv_count_override.unwrap_or(self.kv_count)));
        out.extend_from_slice(&self.kvs);
        out.extend_from_slice(&self.infos);
        out
    }

    /// Where the data section starts: the header length rounded up to the alignment.
    pub(crate) fn data_start(&self) -> u64 {
        (self.build().len() as u64).next_multiple_of(self.alignment)
    }

    /// The length of a file with `data_len` bytes of tensor data.
    pub(crate) fn file_len(&self, data_len: u64) -> u64 {
        self.data_start() + data_len
    }
}

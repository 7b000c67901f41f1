//! A little-endian cursor over a file prefix that knows the real file length.
//!
//! Every read is checked twice: against the file length (a read past it is
//! [`WeightsError::Truncated`], the file is bad) and against the prefix (a read past it is
//! [`WeightsError::NeedMoreBytes`], the caller should read more). Lengths and counts read from
//! the file are checked against the bytes left in the file and the named limits *before*
//! anything is allocated, and what is then reserved is bounded by the prefix.

use crate::error::{WeightsError, to_u64};

use super::MAX_HEADER_SIZE;

pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: u64,
    file_len: u64,
    file: &'a str,
    /// GGUF v1 stores counts, string lengths and dimensions as `u32`; v2 and v3 as `u64`.
    pub(crate) wide: bool,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(buf: &'a [u8], file_len: u64, file: &'a str) -> Self {
        Cursor {
            buf,
            pos: 0,
            file_len,
            file,
            wide: true,
        }
    }

    pub(crate) fn pos(&self) -> u64 {
        self.pos
    }

    pub(crate) fn file(&self) -> String {
        self.file.to_owned()
    }

    /// Bytes from the cursor to the end of the file.
    pub(crate) fn remaining_in_file(&self) -> u64 {
        self.file_len.saturating_sub(self.pos)
    }

    /// Bytes from the cursor to the end of the prefix.
    fn remaining_in_prefix(&self) -> u64 {
        to_u64(self.buf.len()).saturating_sub(self.pos)
    }

    pub(crate) fn take(&mut self, n: u64, what: &'static str) -> Result<&'a [u8], WeightsError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.file_len)
            .ok_or_else(|| WeightsError::Truncated {
                file: self.file(),
                what,
                offset: self.pos,
                needed: n,
                file_len: self.file_len,
            })?;
        if end > MAX_HEADER_SIZE {
            return Err(WeightsError::HeaderTooLarge {
                file: self.file(),
                header_len: end,
                max: MAX_HEADER_SIZE,
            });
        }
        let slice = usize::try_from(self.pos)
            .ok()
            .zip(usize::try_from(end).ok())
            .and_then(|(start, stop)| self.buf.get(start..stop))
            .ok_or_else(|| WeightsError::NeedMoreBytes {
                file: self.file(),
                have: to_u64(self.buf.len()),
                needed_at_least: end,
            })?;
        self.pos = end;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], WeightsError> {
        let bytes = self.take(to_u64(N), what)?;
        // `take` returned exactly N bytes.
        Ok(bytes.first_chunk::<N>().copied().unwrap_or([0; N]))
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, WeightsError> {
        Ok(self.array::<1>(what)?[0])
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, WeightsError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    pub(crate) fn u64(&mut self, what: &'static str) -> Result<u64, WeightsError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// A count, length or dimension: `u64`, or `u32` in GGUF v1.
    pub(crate) fn count(&mut self, what: &'static str) -> Result<u64, WeightsError> {
        if self.wide {
            self.u64(what)
        } else {
            self.u32(what).map(u64::from)
        }
    }

    /// Bytes of a count or length field in this version.
    pub(crate) fn count_size(&self) -> u64 {
        if self.wide { 8 } else { 4 }
    }

    /// Check a count read at `offset` before acting on it: `count` items of at least
    /// `min_each` bytes must fit in the rest of the file, and `count` must be within `max`.
    pub(crate) fn check_count(
        &self,
        what: &'static str,
        offset: u64,
        count: u64,
        min_each: u64,
        max: u64,
    ) -> Result<(), WeightsError> {
        let min_bytes = llmsize_core::checked::wide_mul(count, min_each);
        let remaining = self.remaining_in_file();
        if min_bytes > u128::from(remaining) {
            return Err(WeightsError::LengthPastEnd {
                file: self.file(),
                what,
                offset,
                count,
                min_bytes,
                remaining,
            });
        }
        if count > max {
            return Err(WeightsError::OverLimit {
                file: self.file(),
                what,
                offset,
                count,
                max,
            });
        }
        Ok(())
    }

    /// How many items of at least `min_each` bytes to reserve room for: never more than the
    /// prefix could hold, so a count that is legal for a huge file allocates nothing up front.
    pub(crate) fn capacity_for(&self, count: u64, min_each: u64) -> usize {
        let fits = self
            .remaining_in_prefix()
            .checked_div(min_each.max(1))
            .unwrap_or(0);
        usize::try_from(count.min(fits)).unwrap_or(0)
    }

    /// A length-prefixed string's bytes, its length checked against the file and `max`.
    pub(crate) fn string_bytes(
        &mut self,
        what: &'static str,
        max: u64,
    ) -> Result<(u64, &'a [u8]), WeightsError> {
        let offset = self.pos;
        let len = self.count(what)?;
        self.check_count(what, offset, len, 1, max)?;
        let bytes = self.take(len, what)?;
        Ok((offset, bytes))
    }
}

//! ggml tensor types: ids, block sizes and block byte sizes.
//!
//! Source: `ggml/include/ggml.h` (`enum ggml_type`) and the `type_traits` table of
//! `ggml/src/ggml.c` in ggml-org/llama.cpp (`blck_size`, `type_size = sizeof(block_*)` from
//! `ggml-common.h`), cross-checked with gguf-py's `GGML_QUANT_SIZES` (gguf 0.19.0) and the
//! table in `shared/FORMULAS.md`. Sizes are a block of `block_size` elements stored in
//! `type_size` bytes, so bits per weight = `type_size x 8 / block_size`, exact for every type.

use std::fmt;

/// A ggml tensor type that llama.cpp can still read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
#[expect(
    non_camel_case_types,
    reason = "the names are ggml's, e.g. `Q4_K`, `IQ2_XXS`"
)]
pub enum GgmlType {
    /// `F32` (0).
    F32,
    /// `F16` (1).
    F16,
    /// `Q4_0` (2): 32 elements in 18 bytes.
    Q4_0,
    /// `Q4_1` (3): 32 elements in 20 bytes.
    Q4_1,
    /// `Q5_0` (6): 32 elements in 22 bytes.
    Q5_0,
    /// `Q5_1` (7): 32 elements in 24 bytes.
    Q5_1,
    /// `Q8_0` (8): 32 elements in 34 bytes.
    Q8_0,
    /// `Q8_1` (9): 32 elements in 36 bytes.
    Q8_1,
    /// `Q2_K` (10): 256 elements in 84 bytes.
    Q2_K,
    /// `Q3_K` (11): 256 elements in 110 bytes.
    Q3_K,
    /// `Q4_K` (12): 256 elements in 144 bytes.
    Q4_K,
    /// `Q5_K` (13): 256 elements in 176 bytes.
    Q5_K,
    /// `Q6_K` (14): 256 elements in 210 bytes.
    Q6_K,
    /// `Q8_K` (15): 256 elements in 292 bytes.
    Q8_K,
    /// `IQ2_XXS` (16): 256 elements in 66 bytes.
    IQ2_XXS,
    /// `IQ2_XS` (17): 256 elements in 74 bytes.
    IQ2_XS,
    /// `IQ3_XXS` (18): 256 elements in 98 bytes.
    IQ3_XXS,
    /// `IQ1_S` (19): 256 elements in 50 bytes.
    IQ1_S,
    /// `IQ4_NL` (20): 32 elements in 18 bytes.
    IQ4_NL,
    /// `IQ3_S` (21): 256 elements in 110 bytes.
    IQ3_S,
    /// `IQ2_S` (22): 256 elements in 82 bytes.
    IQ2_S,
    /// `IQ4_XS` (23): 256 elements in 136 bytes.
    IQ4_XS,
    /// `I8` (24).
    I8,
    /// `I16` (25).
    I16,
    /// `I32` (26).
    I32,
    /// `I64` (27).
    I64,
    /// `F64` (28).
    F64,
    /// `IQ1_M` (29): 256 elements in 56 bytes.
    IQ1_M,
    /// `BF16` (30).
    BF16,
    /// `TQ1_0` (34): 256 elements in 54 bytes.
    TQ1_0,
    /// `TQ2_0` (35): 256 elements in 66 bytes.
    TQ2_0,
    /// `MXFP4` (39): 32 elements in 17 bytes (E8M0 scale + 16 bytes of e2m1).
    MXFP4,
    /// `NVFP4` (40): 64 elements in 36 bytes (four E4M3 scales + 32 bytes of e2m1).
    NVFP4,
    /// `Q1_0` (41): 128 elements in 18 bytes.
    Q1_0,
    /// `Q2_0` (42): 64 elements in 18 bytes.
    Q2_0,
}

/// Rows: type, id, name, block size (elements), type size (bytes per block).
const TABLE: [(GgmlType, u32, &str, u64, u64); 35] = [
    (GgmlType::F32, 0, "F32", 1, 4),
    (GgmlType::F16, 1, "F16", 1, 2),
    (GgmlType::Q4_0, 2, "Q4_0", 32, 18),
    (GgmlType::Q4_1, 3, "Q4_1", 32, 20),
    (GgmlType::Q5_0, 6, "Q5_0", 32, 22),
    (GgmlType::Q5_1, 7, "Q5_1", 32, 24),
    (GgmlType::Q8_0, 8, "Q8_0", 32, 34),
    (GgmlType::Q8_1, 9, "Q8_1", 32, 36),
    (GgmlType::Q2_K, 10, "Q2_K", 256, 84),
    (GgmlType::Q3_K, 11, "Q3_K", 256, 110),
    (GgmlType::Q4_K, 12, "Q4_K", 256, 144),
    (GgmlType::Q5_K, 13, "Q5_K", 256, 176),
    (GgmlType::Q6_K, 14, "Q6_K", 256, 210),
    (GgmlType::Q8_K, 15, "Q8_K", 256, 292),
    (GgmlType::IQ2_XXS, 16, "IQ2_XXS", 256, 66),
    (GgmlType::IQ2_XS, 17, "IQ2_XS", 256, 74),
    (GgmlType::IQ3_XXS, 18, "IQ3_XXS", 256, 98),
    (GgmlType::IQ1_S, 19, "IQ1_S", 256, 50),
    (GgmlType::IQ4_NL, 20, "IQ4_NL", 32, 18),
    (GgmlType::IQ3_S, 21, "IQ3_S", 256, 110),
    (GgmlType::IQ2_S, 22, "IQ2_S", 256, 82),
    (GgmlType::IQ4_XS, 23, "IQ4_XS", 256, 136),
    (GgmlType::I8, 24, "I8", 1, 1),
    (GgmlType::I16, 25, "I16", 1, 2),
    (GgmlType::I32, 26, "I32", 1, 4),
    (GgmlType::I64, 27, "I64", 1, 8),
    (GgmlType::F64, 28, "F64", 1, 8),
    (GgmlType::IQ1_M, 29, "IQ1_M", 256, 56),
    (GgmlType::BF16, 30, "BF16", 1, 2),
    (GgmlType::TQ1_0, 34, "TQ1_0", 256, 54),
    (GgmlType::TQ2_0, 35, "TQ2_0", 256, 66),
    (GgmlType::MXFP4, 39, "MXFP4", 32, 17),
    (GgmlType::NVFP4, 40, "NVFP4", 64, 36),
    (GgmlType::Q1_0, 41, "Q1_0", 128, 18),
    (GgmlType::Q2_0, 42, "Q2_0", 64, 18),
];

/// Ids llama.cpp removed, with their old names: files using them no longer load.
const REMOVED: [(u32, &str); 8] = [
    (4, "Q4_2"),
    (5, "Q4_3"),
    (31, "Q4_0_4_4"),
    (32, "Q4_0_4_8"),
    (33, "Q4_0_8_8"),
    (36, "IQ4_NL_4_4"),
    (37, "IQ4_NL_4_8"),
    (38, "IQ4_NL_8_8"),
];

/// What a ggml type id from a file is.
/// What a type id in a GGUF file names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GgmlTypeId {
    /// A type llama.cpp reads.
    /// A type this reader knows.
    Known(GgmlType),
    /// An id llama.cpp removed, with its old name.
    Removed(&'static str),
    /// Anything else.
    Unknown,
}

impl GgmlType {
    /// Every type, in id order.
    pub fn all() -> impl Iterator<Item = GgmlType> {
        TABLE.into_iter().map(|row| row.0)
    }

    fn row(self) -> (GgmlType, u32, &'static str, u64, u64) {
        // Every variant has exactly one row (checked by the `table_is_complete` test); the
        // fallback is never taken but keeps this free of panics.
        TABLE
            .into_iter()
            .find(|row| row.0 == self)
            .unwrap_or((GgmlType::F32, 0, "F32", 1, 4))
    }

    /// The id stored in GGUF files (`enum ggml_type`).
    #[must_use]
    pub fn id(self) -> u32 {
        self.row().1
    }

    /// The name, e.g. `Q4_K`.
    #[must_use]
    pub fn name(self) -> &'static str {
        self.row().2
    }

    /// Elements per block (`blck_size`): 1 for plain types.
    #[must_use]
    pub fn block_size(self) -> u64 {
        self.row().3
    }

    /// Bytes per block (`type_size`).
    #[must_use]
    pub fn type_size(self) -> u64 {
        self.row().4
    }

    /// Bits per block; with [`GgmlType::block_size`] this is the exact bits per weight.
    #[must_use]
    #[expect(
        clippy::arithmetic_side_effects,
        reason = "a type size is a constant of the table, at most a few hundred bytes"
    )]
    pub fn bits_per_block(self) -> u64 {
        self.type_size() * 8
    }

    /// True for block-quantized types (block size above 1).
    #[must_use]
    pub fn is_quantized(self) -> bool {
        self.block_size() > 1
    }

    /// The type with id `id`, if this reader knows it.
    #[must_use]
    pub fn from_id(id: u32) -> Option<GgmlType> {
        TABLE.into_iter().find(|row| row.1 == id).map(|row| row.0)
    }

    /// The type called `name` (e.g. `Q4_K`), if any.
    #[must_use]
    pub fn from_name(name: &str) -> Option<GgmlType> {
        TABLE.into_iter().find(|row| row.2 == name).map(|row| row.0)
    }

    /// What a type id names: a readable type, a removed one, or nothing.
    #[must_use]
    pub fn classify(id: u32) -> GgmlTypeId {
        if let Some(t) = GgmlType::from_id(id) {
            return GgmlTypeId::Known(t);
        }
        match REMOVED.into_iter().find(|(removed, _)| *removed == id) {
            Some((_, name)) => GgmlTypeId::Removed(name),
            None => GgmlTypeId::Unknown,
        }
    }
}

impl GgmlType {
    /// `(elements per block, bytes per block)`.
    #[must_use]
    pub fn block(self) -> (u64, u64) {
        (self.block_size(), self.type_size())
    }

    /// Bytes of `rows` rows of `row` elements (blocks never span rows), checked.
    #[must_use]
    pub fn bytes(self, rows: u64, row: u64) -> Option<u64> {
        rows.checked_mul(row.div_ceil(self.block_size()))?
            .checked_mul(self.type_size())
    }

    /// llama.cpp's fallback when a row is not a whole number of blocks
    /// (`llama_tensor_get_type`, `src/llama-quant.cpp`).
    #[must_use]
    pub fn fallback(self) -> GgmlType {
        match self {
            GgmlType::Q2_K | GgmlType::Q3_K | GgmlType::IQ4_XS => GgmlType::IQ4_NL,
            GgmlType::Q4_K => GgmlType::Q5_0,
            GgmlType::Q5_K => GgmlType::Q5_1,
            GgmlType::Q6_K => GgmlType::Q8_0,
            _ => GgmlType::F16,
        }
    }
}

impl fmt::Display for GgmlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// llama.cpp's `llama_ftype` names (`general.file_type`), from `include/llama.h`: the one
/// list of llama.cpp file types (the presets of `formats::GgufPreset` are among them).
#[must_use]
pub fn llama_file_type_name(id: u64) -> Option<&'static str> {
    Some(match id {
        0 => "ALL_F32",
        1 => "MOSTLY_F16",
        2 => "MOSTLY_Q4_0",
        3 => "MOSTLY_Q4_1",
        7 => "MOSTLY_Q8_0",
        8 => "MOSTLY_Q5_0",
        9 => "MOSTLY_Q5_1",
        10 => "MOSTLY_Q2_K",
        11 => "MOSTLY_Q3_K_S",
        12 => "MOSTLY_Q3_K_M",
        13 => "MOSTLY_Q3_K_L",
        14 => "MOSTLY_Q4_K_S",
        15 => "MOSTLY_Q4_K_M",
        16 => "MOSTLY_Q5_K_S",
        17 => "MOSTLY_Q5_K_M",
        18 => "MOSTLY_Q6_K",
        19 => "MOSTLY_IQ2_XXS",
        20 => "MOSTLY_IQ2_XS",
        21 => "MOSTLY_Q2_K_S",
        22 => "MOSTLY_IQ3_XS",
        23 => "MOSTLY_IQ3_XXS",
        24 => "MOSTLY_IQ1_S",
        25 => "MOSTLY_IQ4_NL",
        26 => "MOSTLY_IQ3_S",
        27 => "MOSTLY_IQ3_M",
        28 => "MOSTLY_IQ2_S",
        29 => "MOSTLY_IQ2_M",
        30 => "MOSTLY_IQ4_XS",
        31 => "MOSTLY_IQ1_M",
        32 => "MOSTLY_BF16",
        36 => "MOSTLY_TQ1_0",
        37 => "MOSTLY_TQ2_0",
        38 => "MOSTLY_MXFP4_MOE",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_complete() {
        for (i, t) in GgmlType::all().enumerate() {
            assert_eq!(TABLE[i].0, t);
            assert_eq!(GgmlType::from_id(t.id()), Some(t));
            assert_eq!(GgmlType::from_name(t.name()), Some(t));
            assert_eq!(format!("{t:?}"), t.name(), "variant name = ggml name");
        }
        let mut ids: Vec<u32> = TABLE.iter().map(|r| r.1).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), TABLE.len());
    }

    #[test]
    fn bits_per_weight_match_formulas_table() {
        // shared/FORMULAS.md section 6: (type, bpw x 10000).
        let expected = [
            (GgmlType::F16, 160_000),
            (GgmlType::BF16, 160_000),
            (GgmlType::Q8_0, 85_000),
            (GgmlType::Q5_1, 60_000),
            (GgmlType::Q5_0, 55_000),
            (GgmlType::Q4_1, 50_000),
            (GgmlType::Q4_0, 45_000),
            (GgmlType::IQ4_NL, 45_000),
            (GgmlType::IQ3_S, 34_375),
            (GgmlType::IQ2_S, 25_625),
            (GgmlType::IQ2_XXS, 20_625),
            (GgmlType::IQ1_S, 15_625),
            (GgmlType::MXFP4, 42_500),
            (GgmlType::Q2_K, 26_250),
            (GgmlType::Q3_K, 34_375),
            (GgmlType::Q4_K, 45_000),
            (GgmlType::Q5_K, 55_000),
            (GgmlType::Q6_K, 65_625),
            (GgmlType::Q8_K, 91_250),
            (GgmlType::IQ4_XS, 42_500),
            (GgmlType::IQ3_XXS, 30_625),
            (GgmlType::IQ2_XS, 23_125),
            (GgmlType::IQ1_M, 17_500),
            (GgmlType::TQ1_0, 16_875),
            (GgmlType::TQ2_0, 20_625),
        ];
        for (t, bpw_e4) in expected {
            assert_eq!(t.bits_per_block() * 10_000, bpw_e4 * t.block_size(), "{t}");
        }
    }

    #[test]
    fn removed_and_unknown_ids() {
        for id in [4, 5, 31, 32, 33, 36, 37, 38] {
            assert!(
                matches!(GgmlType::classify(id), GgmlTypeId::Removed(_)),
                "{id}"
            );
        }
        assert_eq!(GgmlType::classify(38), GgmlTypeId::Removed("IQ4_NL_8_8"));
        assert_eq!(GgmlType::classify(43), GgmlTypeId::Unknown);
        assert_eq!(GgmlType::classify(u32::MAX), GgmlTypeId::Unknown);
        assert_eq!(GgmlType::classify(12), GgmlTypeId::Known(GgmlType::Q4_K));
    }
}

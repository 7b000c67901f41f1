//! `--json`: the public contract for scripts is no longer rendered here.
//!
//! The JSON of every report (`params`, `memory`, `flops`, `inspect`, `audit`) is built from
//! dedicated serialization types in `llmsize-engine`'s `wire` module, which documents the
//! wire format and writes `schema_version` in one place. The core's reports stay free of
//! serialization concerns; this module is kept empty so the module list of `render` needs
//! no change while the core is being restructured.

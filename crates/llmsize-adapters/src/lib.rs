//! adapters

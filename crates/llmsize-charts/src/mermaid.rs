//! todo
/// todo
pub fn params_mermaid() {}

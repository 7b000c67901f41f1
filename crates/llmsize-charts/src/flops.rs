//! todo
/// todo
pub fn flops_svg() {}

//! The residual IR as data: residual types and operations with their exact
//! Rust semantics ([`ops`]), and residual functions with their builder,
//! passes and listing ([`builder`]). The bottom layer: it imports nothing
//! else of the crate.

pub mod builder;
pub mod operand;
pub mod ops;

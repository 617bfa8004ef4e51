//! The residual IR as data: residual types and operations with their exact
//! Rust semantics ([`ops`]), red boxes as data ([`operand`]), residual
//! functions ([`function`]), the builder that records them ([`builder`]),
//! the passes that simplify them ([`passes`], one file per pass), and their
//! text form ([`listing`]). The bottom layer: it imports nothing else of the
//! crate.

pub mod builder;
pub mod function;
pub mod listing;
pub mod operand;
pub mod ops;
pub mod passes;

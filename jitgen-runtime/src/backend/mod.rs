//! Backends: what turns a recorded [`ResidualFunction`] into something usable
//! (PyPy's `rgenop`, behind one trait).
//!
//! - [`text::TextBackend`] gives the readable listing (one residual operation
//!   per line): what tests snapshot and what `listing()` shows.
//! - [`cranelift::CraneliftBackend`] gives machine code ([`dump`]: what it
//!   writes for `objdump` and `perf`).
//!
//! Both consume the same function, and one conformance suite
//! (`tests/conformance.rs`) checks the listing of each case and the results
//! of the machine code against the semantics of [`crate::ir::ops`].

pub mod cranelift;
pub mod dump;
mod native;
pub mod text;

use std::fmt;

use crate::ir::builder::ResidualFunction;

/// A backend: compiles residual functions to its kind of code.
pub trait Backend {
    /// What it produces.
    type Code;
    /// Compiles one residual function.
    fn compile(&mut self, f: &ResidualFunction) -> Result<Self::Code, BackendError>;
}

/// A backend could not compile a function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendError(pub String);

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "backend error: {}", self.0)
    }
}

impl std::error::Error for BackendError {}

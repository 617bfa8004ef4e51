//! jitgen-runtime: what generating extensions call, at compile time and at
//! run time, and the machine-code backend under them. In layers, each using
//! only those above it in this list:
//!
//! - [`ir`]: the residual IR as data: operations and their semantics, the
//!   builder, the passes, the listing.
//! - [`backend`]: the backends behind one trait (PyPy's rgenop): text
//!   listings and Cranelift. What residual code calls at run time is passed
//!   in ([`backend::cranelift::RuntimeHooks`]).
//! - [`run`]: what exists while residual code runs: compiled functions and
//!   their handles, callbacks, the heap, flexswitch tables, counters.
//! - [`compile`]: one compilation: red boxes, the JIT state, virtual
//!   containers, the scheduler.
//! - [`portal`]: portals: settings, the hot-spot policy, the code cache.
//!
//! The old flat module paths (`jitgen_runtime::schedule`, ...) are kept as
//! re-exports for tests and tools; code inside the crate names the layers.
//!
//! Architecture Invariant: a module of a layer imports nothing from a layer
//! after it in the list above (`tests/layers.rs`).
//! Architecture Invariant: this crate knows nothing of `syn`; generating
//! extensions reach it only through `::jitgen::__private`.
//! Architecture Invariant: no panic and no unwind crosses generated frames:
//! residual code returns a status word, callbacks catch panics.

#![warn(missing_docs)]

pub mod backend;
pub mod compile;
pub mod ir;
pub mod portal;
pub mod run;

pub use compile::{frame, redbox, schedule, spill, state, vdict, virtuals, vlist};
pub use ir::{builder, ops};
pub use portal::driver;
pub use run::{contstack, heap, promotion};

/// Compiled residual functions ([`run::residual`]), how Rust enters them
/// ([`run::enter`]) and how their pieces are fused ([`run::fusion`]), under
/// one name.
pub mod residual {
    pub use crate::run::enter::*;
    pub use crate::run::fusion::*;
    pub use crate::run::residual::*;
}

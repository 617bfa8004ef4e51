//! jitgen-runtime: the support code that generating extensions call at compile
//! time, and the machine-code backend under it.
//!
//! - [`ops`]: residual types and operations with their exact Rust semantics.
//! - [`builder`]: residual code (a small SSA IR with block parameters) and its builder.
//! - [`backend`]: the backends behind one trait: text listings and Cranelift.
//! - [`redbox`]: red boxes (PyPy's rvalue): a constant or a run-time value,
//!   and the operations on them that fold or emit.
//! - [`state`]: the JIT state: a chain of virtual frames of the generating
//!   extension's choosing.
//! - [`schedule`]: one compilation: red splits, pending states, merge points
//!   (freeze, exact match, widen), returns, the operation budget.
//! - [`residual`]: compiled residual functions, called through typed handles;
//!   callbacks that catch panics; messages of `panic!`s reached in residual code.
//! - [`heap`]: the arena of objects residual code allocates; `Vec` helpers.
//! - [`promotion`]: flexswitches: case tables, misses that call back into the compiler.
//! - [`vlist`]: virtual lists: `Vec`s made while compiling, kept as red boxes.
//! - [`vdict`]: virtual dicts: `HashMap`s with compile-time keys, kept as red boxes.
//! - [`virtuals`]: virtual structures: objects made while compiling, kept in
//!   the state's heap until they escape.
//! - [`driver`]: what portals need at run time: settings, counters, code cache, statistics.
//!
//! Architecture Invariant: this crate knows nothing of `syn`; generating
//! extensions reach it only through `::jitgen::__private`.
//! Architecture Invariant: no panic and no unwind crosses generated frames:
//! residual code returns a status word, callbacks catch panics.

#![warn(missing_docs)]

pub mod backend;
pub mod builder;
pub mod driver;
pub mod heap;
pub mod ops;
pub mod promotion;
pub mod redbox;
pub mod residual;
pub mod schedule;
pub mod state;
pub mod vdict;
pub mod virtuals;
pub mod vlist;

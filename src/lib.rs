//! jitgen: a partial-evaluation JIT compiler generator for interpreters written in Rust.
//!
//! Put `#[jit_interpreter]` on the module holding an interpreter and add a few
//! [`hint!`] markers; jitgen analyses the module's functions (the
//! hint-annotator's binding-time analysis) and derives from them a
//! just-in-time compiler for the interpreted language. See the README for the
//! contract and ARCHITECTURE.md for the map of the crates.
//!
//! This crate is the facade users depend on: the attribute, the hints, the
//! prelude, and the paths that generated code uses (`__private`).

pub use hint_annotator::{CallKind, Color, ColoredGraph, ColoredGraphs};
pub use jitgen_macros::jit_interpreter;
pub use jitgen_runtime::driver::{Config, HotPolicy, StatsSnapshot};

/// A binding-time hint. Interpreted, it returns its first argument unchanged
/// (`hint!(global_merge_point)` does nothing), so an annotated module is
/// always a working interpreter. `#[jit_interpreter]` reads the hints:
///
/// | hint | meaning |
/// | --- | --- |
/// | `hint!(e, concrete)` | `e` and everything it depends on must be green |
/// | `hint!(e, promote)` | the result is green; the value is promoted at run time |
/// | `hint!(e, deepfreeze)` | reads through `e` are green when `e` is green |
/// | `hint!(e, variable)` | the result is red |
/// | `hint!(global_merge_point)` | the head of the dispatch loop |
#[macro_export]
macro_rules! hint {
    (global_merge_point) => {
        ()
    };
    ($e:expr, $flag:ident) => {
        $e
    };
}

/// What an interpreter module needs: `use jitgen::prelude::*;`.
pub mod prelude {
    pub use crate::hint;
    pub use crate::{jit_interpreter, CallKind, Color};
}

/// Paths used by code that `#[jit_interpreter]` generates. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use hint_annotator;
    pub use jitgen_runtime as rt;

    /// Annotates the module source the macro embedded.
    pub fn graphs_from_source(src: &str) -> hint_annotator::ColoredGraphs {
        hint_annotator::annotate_source(src).expect("the module was annotated without errors when it was compiled")
    }
}

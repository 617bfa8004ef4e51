//! The integration tests of jitgen on the example interpreters
//! (`interpreters/`), one module each, in one test binary: one link of
//! Cranelift and the interpreters instead of one per file, and the modules'
//! tests run in parallel with each other. `tests/constructs` holds the
//! tests whose interpreters are small modules written inside the test; two
//! binaries, so that they compile in parallel.
//!
//! Every JIT setting (`jit::config()`) and counter (`jit::stats()`) belongs
//! to one `#[jit_interpreter]` module and lives for the whole process. A
//! module whose tests change them for an interpreter that other modules use
//! too takes that interpreter's lock (`common::TLR`); tests that need a
//! fresh process (the default threshold, the environment switches) run in a
//! child process (`common::run_child`).
//!
//! Two tiers: `cargo test --workspace` runs a sample of every random-program
//! test; `JITGEN_DEEP=1` runs the deep tier, thousands of programs each
//! (`common::how_many`).

mod common;

mod contract;
mod frame_locals;
mod inside_a_call;
mod ip_in_frames;
mod lazy;
mod peers;
mod procvm;
mod regvm;
mod rust_recursion;
mod stackvm;
mod subroutines;
mod tape;
mod tlc;
mod tlr;
mod virtualizable;
mod virtuals;

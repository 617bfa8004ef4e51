//! The example interpreters rewritten the ways another Rust programmer could
//! have written them (`variants.rs` says which); each variant is a module
//! whose test runs its programs through the portal and `jit::specialize`
//! against `jit::plain`.

include!(concat!(env!("OUT_DIR"), "/variants.rs"));

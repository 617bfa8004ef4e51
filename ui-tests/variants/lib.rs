//! Nothing but a home for `tests/variants.rs` and the build script that
//! writes its variants (`variants.rs`).

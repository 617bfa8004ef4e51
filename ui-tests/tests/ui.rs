//! Compile errors of `#[jit_interpreter]`, each at its span (trybuild). All
//! cases fail to compile, so trybuild only checks them: one `cargo check` of
//! `jitgen` and of every case together.

#[test]
fn ui() {
    trybuild::TestCases::new().compile_fail("tests/ui/*.rs");
}

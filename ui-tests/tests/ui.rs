//! Compile errors of `#[jit_interpreter]`, each at its span (trybuild). All
//! cases fail to compile, so trybuild only checks them: one `cargo check` of
//! `jitgen` and of every case together.

#[test]
fn ui() {
    // trybuild's project builds jitgen's dependencies again, with the default
    // profile: without debuginfo, which nothing here reads.
    std::env::set_var("CARGO_PROFILE_DEV_DEBUG", "false");
    trybuild::TestCases::new().compile_fail("tests/ui/*.rs");
}

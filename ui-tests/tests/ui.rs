//! Compile errors of `#[jit_interpreter]`, each at its span (trybuild).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}

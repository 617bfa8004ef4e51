//! Compile errors of `#[jit_interpreter]`, each at its span, and the example
//! interpreters varied into other valid Rust, each variant built and run
//! against `jit::plain` (trybuild).

mod variants;

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    // Each variant is written the way another Rust programmer could have
    // written the interpreter; it must build, and its portal and `jit::specialize`
    // must give plain's results (its `main` asserts it).
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("variants");
    for path in variants::write_all(&dir) {
        t.pass(path);
    }
}

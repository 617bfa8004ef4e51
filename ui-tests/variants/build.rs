//! Writes the test crate of the interpreters' variants into `OUT_DIR`:
//! every variation at once in the fast tier, also each alone when built
//! with `JITGEN_DEEP=1` (see `variants.rs`).

#[path = "variants.rs"]
mod variants;

fn main() {
    println!("cargo:rerun-if-changed=variants.rs");
    println!("cargo:rerun-if-changed=../../interpreters/stackvm/src/lib.rs");
    println!("cargo:rerun-if-changed=../../interpreters/subroutines/src/lib.rs");
    println!("cargo:rerun-if-env-changed=JITGEN_DEEP");
    let deep = std::env::var_os("JITGEN_DEEP").is_some_and(|v| v != "0");
    let out = std::path::Path::new(&std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("variants.rs");
    std::fs::write(out, variants::test_crate(deep)).expect("the variants written");
}

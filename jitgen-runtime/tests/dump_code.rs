//! `JITGEN_DUMP_CODE=dir`: each function compiled leaves its machine code,
//! its Cranelift IR and its residual listing in `dir`. Its own binary: the
//! variable would make every other test's compilations write files too.

use jitgen_runtime::ir::listing::{listing, parse};
use jitgen_runtime::residual::compile_host;

/// The listing written is the function's as compiled, and parses back to
/// it; the machine code and the CLIF are there beside it.
#[test]
fn a_dumped_function_leaves_its_listing_beside_its_machine_code() {
    let dir = std::env::temp_dir().join(format!("jitgen-dump-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::env::set_var("JITGEN_DUMP_CODE", &dir);
    let f = parse(
        "entry(v0: i64, v1: i64):
    v2 = add.i64 v0, v1
    v3 = mul.i64 v2, v1
    return v3
",
        &[],
    )
    .expect("parses");
    let code = compile_host(&f).expect("compiles");
    assert_eq!(code.call_words(&[3, 5]).expect("runs"), vec![40]);
    let read = |ext: &str| std::fs::read(dir.join(format!("code-0.{ext}"))).unwrap_or_default();
    let ir = String::from_utf8(read("ir")).expect("text");
    assert_eq!(ir, listing(&f));
    assert_eq!(listing(&parse(&ir, &[]).expect("the dump parses")), ir);
    assert!(String::from_utf8(read("clif")).expect("text").contains("imul"), "the CLIF");
    assert!(!read("bin").is_empty(), "the machine code");
    let _ = std::fs::remove_dir_all(&dir);
}

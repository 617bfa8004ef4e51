//! `JITGEN_DUMP_CODE=dir`: each function compiled leaves its machine code,
//! its Cranelift IR and its residual listing in `dir`; `JITGEN_PERF_MAP`:
//! it is named in `/tmp/perf-PID.map`. Its own binary: the variables would
//! make every other test's compilations write files too.

use jitgen_runtime::ir::listing::{listing, parse};
use jitgen_runtime::residual::compile_host;

/// The listing written is the function's as compiled, and parses back to
/// it; the machine code and the CLIF are there beside it. The perf map
/// names the code `jitN_`, N as in its dump files, and where `perf record`
/// runs the process (it sets `PERF_BUILDID_DIR`, and Cranelift then names
/// the functions it defines in the same map) no other name is given at the
/// same address. (One test: the number N counts the process's functions.)
#[test]
fn a_dumped_function_leaves_its_listing_beside_its_machine_code() {
    let dir = std::env::temp_dir().join(format!("jitgen-dump-{}", std::process::id()));
    let map = format!("/tmp/perf-{}.map", std::process::id());
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&map);
    std::env::set_var("JITGEN_DUMP_CODE", &dir);
    std::env::set_var("JITGEN_PERF_MAP", "1");
    std::env::set_var("PERF_BUILDID_DIR", &dir);
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

    let again = compile_host(&f).expect("compiles");
    assert_eq!(again.call_words(&[1, 2]).expect("runs"), vec![6]);
    assert!(dir.join("code-1.ir").exists(), "the second function's dump");
    let text = std::fs::read_to_string(&map).expect("the perf map");
    let mut names = std::collections::BTreeMap::<&str, std::collections::BTreeSet<&str>>::new();
    for line in text.lines() {
        let [addr, _size, name] = line.split(' ').collect::<Vec<_>>()[..] else { panic!("a map line: {line:?}") };
        names.entry(addr).or_default().insert(name);
    }
    let mut named: Vec<_> = names.values().filter(|n| n.iter().any(|n| n.starts_with("jit"))).collect();
    named.sort();
    assert_eq!(named.len(), 2, "{text}");
    for (k, n) in named.iter().enumerate() {
        assert_eq!(n.len(), 1, "one name per address:\n{text}");
        assert!(n.iter().all(|n| n.starts_with(&format!("jit{k}_"))), "{text}");
    }
    let _ = std::fs::remove_file(&map);
    let _ = std::fs::remove_dir_all(&dir);
}

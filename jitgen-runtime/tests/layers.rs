//! The runtime's layers point one way: `ir <- backend <- run <- compile <-
//! portal`. A module of a layer may import from its own layer and the layers
//! before it, never from one after it, and names the layer in its paths
//! (`crate::ir::ops`, not the crate root's re-export `crate::ops`). This test
//! reads every `crate::` path in `src/` (comments and doc links included: a
//! doc that sends the reader up a layer is an arrow too) and lists the arrows
//! that run back.

use std::path::{Path, PathBuf};

const LAYERS: &[&str] = &["ir", "backend", "run", "compile", "portal"];

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The layer a path names after `crate::`, or `None` for an unknown name.
fn rank(name: &str) -> Option<usize> {
    LAYERS.iter().position(|l| *l == name)
}

/// Every `crate::NAME` in `text`, with its line number.
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let mut out = vec![];
    for (n, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            let after = &rest[i + "crate::".len()..];
            let name: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            // `jitgen_runtime::...` in a doc example ends in `crate::` too
            // only as `_crate::`; skip identifiers that merely end so.
            let before = rest[..i].chars().last();
            if !before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                out.push((n + 1, name));
            }
            rest = after;
        }
    }
    out
}

#[test]
fn no_runtime_layer_imports_from_a_layer_above_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = vec![];
    files(&src, &mut all);
    all.sort();
    let mut wrong = vec![];
    let mut seen = 0;
    for f in &all {
        let rel = f.strip_prefix(&src).unwrap();
        let first = rel.components().next().unwrap().as_os_str().to_str().unwrap();
        if rel == Path::new("lib.rs") {
            continue;
        }
        let own = rank(first).unwrap_or_else(|| panic!("{}: a module outside the layers {LAYERS:?}", rel.display()));
        seen += 1;
        let text = std::fs::read_to_string(f).unwrap();
        for (line, name) in crate_paths(&text) {
            match rank(&name) {
                Some(r) if r <= own => {}
                Some(r) => wrong.push(format!(
                    "{}:{line}: `{first}` imports from `{}`, a layer above it",
                    rel.display(),
                    LAYERS[r]
                )),
                None => wrong.push(format!(
                    "{}:{line}: `crate::{name}` does not name a layer (write `crate::<layer>::...`)",
                    rel.display()
                )),
            }
        }
    }
    assert!(seen >= 15, "the test read only {seen} modules: has src/ moved?");
    assert!(wrong.is_empty(), "arrows that run back up the layers:\n{}", wrong.join("\n"));
}

#[test]
fn the_check_sees_an_arrow_that_runs_back() {
    let text = "use crate::ir::ops::ValTy;\n/// see [`crate::portal::driver`]\nuse crate::ops;";
    let names: Vec<String> = crate_paths(text).into_iter().map(|(_, n)| n).collect();
    assert_eq!(names, ["ir", "portal", "ops"]);
    assert!(rank("portal") > rank("ir"));
    assert_eq!(rank("ops"), None);
}

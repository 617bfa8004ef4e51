//! The runtime's layers point one way: `ir <- backend <- run <- compile <-
//! portal`. A module of a layer may import from its own layer and the layers
//! before it, never from one after it, and names the layer in its paths
//! (`crate::ir::ops`, not the crate root's re-export `crate::ops`). This test
//! reads every `crate::` path in `src/` (comments and doc links included: a
//! doc that sends the reader up a layer is an arrow too) and lists the arrows
//! that run back.
//!
//! Within a layer, and within the macro crate and the annotator (each one
//! layer), the files' imports form no cycle: every `crate::` and `super::`
//! path that names another file of the same layer is an arrow, and arrows
//! that come back to where they started are listed. No source file of the
//! three crates is longer than 1,500 lines, and no function of the macro
//! crate or the annotator longer than 200.

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

/// The module path of a source file under `src/` (`compile/spill.rs` is
/// `["compile", "spill"]`), or `None` for a `mod.rs` or `lib.rs`, which
/// declare a layer's or crate's modules rather than being one of them.
fn module_of(rel: &Path) -> Option<Vec<String>> {
    let name = rel.file_stem()?.to_str()?;
    if name == "mod" || name == "lib" {
        return None;
    }
    let mut m: Vec<String> = rel.parent()?.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    m.push(name.to_string());
    Some(m)
}

/// Every module path `text` names through `crate::` (absolute) or `super::`
/// (relative to `parent`), with `use` groups (`crate::run::{heap, stats}`)
/// expanded to their first segments.
fn named_paths(text: &str, parent: &[String]) -> Vec<Vec<String>> {
    let ident = |s: &str| -> String { s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect() };
    let mut out = vec![];
    for (marker, base) in [("crate::", &[][..]), ("super::", parent)] {
        let mut rest = text;
        while let Some(i) = rest.find(marker) {
            let before = rest[..i].chars().last();
            rest = &rest[i + marker.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let mut path: Vec<String> = base.to_vec();
            let mut at = rest;
            loop {
                let id = ident(at);
                if id.is_empty() {
                    break;
                }
                at = &at[id.len()..];
                path.push(id);
                match at.strip_prefix("::") {
                    Some(next) => at = next,
                    None => break,
                }
            }
            if let Some(group) = at.strip_prefix('{') {
                // The first segment of each item at the group's top level.
                let mut depth = 0;
                let mut item_start = true;
                for (k, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => item_start = true,
                        c if item_start && depth == 0 && (c.is_alphanumeric() || c == '_') => {
                            let mut p = path.clone();
                            p.push(ident(&group[k..]));
                            out.push(p);
                            item_start = false;
                        }
                        _ => {}
                    }
                }
            } else {
                out.push(path);
            }
        }
    }
    out
}

/// The import cycles among the files of each layer of the crate whose source
/// is in `src` (`layer_of` gives a file's layer from its module path), each
/// as its files.
fn import_cycles(src: &Path, layer_of: impl Fn(&[String]) -> String) -> Vec<Vec<String>> {
    let mut all = vec![];
    files(src, &mut all);
    all.sort();
    let modules: Vec<(Vec<String>, PathBuf)> =
        all.iter().filter_map(|f| Some((module_of(f.strip_prefix(src).ok()?)?, f.clone()))).collect();
    let mut graph = petgraph::graph::DiGraph::<String, ()>::new();
    let nodes: Vec<_> = modules.iter().map(|(m, _)| graph.add_node(m.join("::"))).collect();
    for (k, (m, f)) in modules.iter().enumerate() {
        let text = std::fs::read_to_string(f).unwrap();
        let parent = &m[..m.len() - 1];
        for path in named_paths(&text, parent) {
            // The file the path names: its longest prefix that is a module.
            let Some(j) = (1..=path.len()).rev().find_map(|n| modules.iter().position(|(o, _)| o[..] == path[..n]))
            else {
                continue;
            };
            if j != k && layer_of(&modules[j].0) == layer_of(m) {
                graph.update_edge(nodes[k], nodes[j], ());
            }
        }
    }
    petgraph::algo::tarjan_scc(&graph)
        .into_iter()
        .filter(|scc| scc.len() > 1)
        .map(|scc| {
            let mut names: Vec<String> = scc.iter().map(|n| graph[*n].clone()).collect();
            names.sort();
            names
        })
        .collect()
}

/// The source directories of the crates whose files this test holds to
/// their layers, their cycles and their length.
fn crates() -> [(&'static str, PathBuf); 3] {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    [
        ("jitgen-runtime", root.join("jitgen-runtime/src")),
        ("jitgen-macros", root.join("jitgen-macros/src")),
        ("hint-annotator", root.join("hint-annotator/src")),
    ]
}

#[test]
fn no_import_cycle_among_the_files_of_a_layer() {
    let mut cycles = vec![];
    for (name, src) in crates() {
        // The runtime's layers are its top directories; each other crate is
        // one layer.
        let runtime = name == "jitgen-runtime";
        for cycle in import_cycles(&src, |m| if runtime { m[0].clone() } else { String::new() }) {
            cycles.push(format!("{name}: {}", cycle.join(" -> ")));
        }
    }
    assert!(cycles.is_empty(), "files of one layer that import each other:\n{}", cycles.join("\n"));
}

#[test]
fn the_cycle_check_sees_groups_and_relative_paths() {
    let text = "use crate::run::{heap::Heap, stats};\nuse super::promotion::Case;\n// crate::ir::ops";
    let paths: Vec<String> = named_paths(text, &["run".to_string()]).into_iter().map(|p| p.join("::")).collect();
    assert_eq!(paths, ["run::heap", "run::stats", "ir::ops", "run::promotion::Case"]);
}

/// Longer files hold more than one concept: split them by concept.
const MAX_LINES: usize = 1_500;

#[test]
fn no_source_file_is_longer_than_its_limit() {
    let mut long = vec![];
    for (name, src) in crates() {
        let mut all = vec![];
        files(&src, &mut all);
        for f in all {
            let n = std::fs::read_to_string(&f).unwrap().lines().count();
            if n > MAX_LINES {
                long.push(format!("{name}/{}: {n} lines", f.strip_prefix(&src).unwrap().display()));
            }
        }
    }
    long.sort();
    assert!(long.is_empty(), "files over {MAX_LINES} lines:\n{}", long.join("\n"));
}

/// The longest a function of the macro crate or the annotator may be: code
/// that long is split by concern, each part a function of its own.
const MAX_FN_LINES: usize = 200;

/// The functions of `text` longer than `max` lines, as (name, line, length):
/// a `fn` item, from its line to the first line after it that closes it at
/// its indentation (the code is rustfmt's).
fn long_fns(text: &str, max: usize) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = vec![];
    for (i, line) in lines.iter().enumerate() {
        let code = line.trim_start();
        let indent = &line[..line.len() - code.len()];
        let words: Vec<&str> =
            code.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).collect();
        let Some(at) = words.iter().position(|w| *w == "fn") else { continue };
        // Only an item's head: visibility and qualifiers before `fn`.
        let head = ["pub", "crate", "super", "const", "unsafe", "async", "extern", "C"];
        // (Not a comment, nor a string literal holding Rust: a test's input.)
        if !words[..at].iter().all(|w| head.contains(w)) || code.starts_with("//") || code.starts_with('"') {
            continue;
        }
        let Some(name) = words.get(at + 1) else { continue };
        let end = format!("{indent}}}");
        if let Some(j) = lines[i + 1..].iter().position(|l| *l == end) {
            if j + 2 > max {
                out.push((name.to_string(), i + 1, j + 2));
            }
        }
    }
    out
}

#[test]
fn no_function_of_the_macro_or_the_annotator_is_longer_than_its_limit() {
    let mut long = vec![];
    for (name, src) in crates().into_iter().filter(|(n, _)| *n != "jitgen-runtime") {
        let mut all = vec![];
        files(&src, &mut all);
        for f in all {
            for (func, line, n) in long_fns(&std::fs::read_to_string(&f).unwrap(), MAX_FN_LINES) {
                long.push(format!("{name}/{}:{line}: `{func}`, {n} lines", f.strip_prefix(&src).unwrap().display()));
            }
        }
    }
    long.sort();
    assert!(long.is_empty(), "functions over {MAX_FN_LINES} lines:\n{}", long.join("\n"));
}

#[test]
fn the_length_check_sees_a_long_function() {
    let body = "    let x = 1;\n".repeat(5);
    let text = format!("fn short() {{\n}}\n\npub(crate) fn long(a: u8) {{\n{body}}}\n");
    assert_eq!(long_fns(&text, 6), vec![("long".to_string(), 4, 7)]);
    assert!(long_fns(&text, 7).is_empty());
}

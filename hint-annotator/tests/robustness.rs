//! Whatever the input, the annotator answers with graphs or with errors: it
//! never panics. Every example interpreter is mutated one token at a time
//! (deleted, or replaced by another token of the same file) and annotated:
//! every token in the deep tier (`JITGEN_DEEP=1`), every seventh in the fast
//! tier.

use proc_macro2::TokenTree;

const SOURCES: &[&str] = &[
    include_str!("../../examples/plus_minus.rs"),
    include_str!("../../interpreters/tlr/src/lib.rs"),
    // Tuples, `&mut` accessors, `?`, `print!`, methods.
    include_str!("../../interpreters/stackvm/src/lib.rs"),
];

fn flatten(ts: proc_macro2::TokenStream, out: &mut Vec<String>) {
    for t in ts {
        match t {
            TokenTree::Group(g) => {
                let (open, close) = match g.delimiter() {
                    proc_macro2::Delimiter::Parenthesis => ("(", ")"),
                    proc_macro2::Delimiter::Brace => ("{", "}"),
                    proc_macro2::Delimiter::Bracket => ("[", "]"),
                    proc_macro2::Delimiter::None => ("", ""),
                };
                out.push(open.into());
                flatten(g.stream(), out);
                out.push(close.into());
            }
            // Joint punctuation (`+=`, `::`, `->`) stays one token.
            TokenTree::Punct(p) if p.spacing() == proc_macro2::Spacing::Joint => {
                out.push(format!("{}\u{1}", p.as_char()))
            }
            other => out.push(other.to_string()),
        }
    }
}

#[test]
fn mutated_interpreters_never_panic() {
    let mut runs = 0;
    let mut accepted = 0;
    for src in SOURCES {
        let ts: proc_macro2::TokenStream = src.parse().unwrap();
        let mut toks = vec![];
        flatten(ts, &mut toks);
        let replacements = ["0", "x", "+", "!", ";", "&", "as", "match", "hint", "."];
        let deep = std::env::var_os("JITGEN_DEEP").is_some_and(|v| v != "0");
        for i in (0..toks.len()).step_by(if deep { 1 } else { 7 }) {
            for r in std::iter::once("").chain(replacements) {
                let mut m = toks.clone();
                m[i] = r.to_string();
                let text = m.join(" ").replace("\u{1} ", "");
                runs += 1;
                if hint_annotator::annotate_source(&text).is_ok() {
                    accepted += 1;
                }
            }
        }
    }
    assert!(runs > 1000, "{runs}");
    // Most mutants are rejected, a few still are valid interpreters.
    assert!(accepted > 0 && accepted < runs, "{accepted} of {runs}");
}

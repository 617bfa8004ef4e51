//! Checks beyond the hint-annotator's: what the generating extension and the
//! portal hooks need of the module.

use std::collections::HashMap;

use hint_annotator::ColoredGraphs;

/// Every problem with the module's portals, at its span.
pub fn portals(cg: &ColoredGraphs) -> Vec<syn::Error> {
    let mut errors = vec![];
    for f in cg.functions() {
        if f.specializes.is_some() {
            continue;
        }
        let mps = f.merge_points();
        for (i, mp) in mps.iter().enumerate() {
            let op = &f.graph.graph[mp.block].ops[mp.op];
            let span = op.span;
            if i > 0 {
                errors.push(syn::Error::new(span, "only one `hint!(global_merge_point)` per function is supported"));
                continue;
            }
            if f.name().contains("::") {
                errors.push(syn::Error::new(
                    span,
                    "`hint!(global_merge_point)` is supported in free functions of the module, and in methods \
                     taking `&self` or `&mut self` whose other parameters are plain bindings (`x: T`), with no generic \
                     parameters: make the method's signature so, or move the dispatch loop into a function",
                ));
                continue;
            }
            let live = f.live_before(mp.block, mp.op + 1);
            if live.iter().any(|v| f.graph.var(*v).name.as_deref().is_some_and(|n| n.starts_with("__for"))) {
                errors.push(syn::Error::new(
                    span,
                    "`hint!(global_merge_point)` inside a `for` loop is not supported: write the loop with `while`",
                ));
                continue;
            }
            let mut seen: HashMap<String, usize> = HashMap::new();
            for v in &live {
                match &f.graph.var(*v).name {
                    Some(n) => *seen.entry(n.clone()).or_default() += 1,
                    None => errors.push(syn::Error::new(
                        span,
                        format!(
                            "a temporary value (`{}`) is live across `hint!(global_merge_point)`: bind it to a name first",
                            f.graph.var_name(*v)
                        ),
                    )),
                }
            }
            for (n, count) in seen {
                if count > 1 {
                    errors.push(syn::Error::new(
                        span,
                        format!("two bindings named `{n}` are live at `hint!(global_merge_point)` (one shadows the other): rename one"),
                    ));
                }
            }
        }
    }
    errors
}

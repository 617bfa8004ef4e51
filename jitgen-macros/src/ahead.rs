//! Which resume points have, ahead of them, an operation whose code always
//! declines: the table a compilation reads before it makes a flexswitch.
//!
//! A case of a flexswitch (a promoted value's, a lazily compiled side's) is
//! compiled when residual code first reaches it. If that compilation
//! declines, residual code continues in the interpreter through execute
//! mode: the same generating extension, run on the values residual code
//! held. An operation the extension cannot compile (`Gen::decline` emitted
//! its code) it cannot execute either, so execute mode would stop there
//! with the interpreter's state half changed. A compilation therefore makes
//! a flexswitch only where no such operation lies ahead of the switch's
//! state, up to where execute mode hands over: the portal's merge point
//! (for a portal's code, which continues in the interpreter proper from
//! there) or the function's return (`jit::specialize`'s). Elsewhere it
//! declines, before any code exists that could reach the operation; the
//! interpreter runs that position instead.
//!
//! A state is the chain of its frames: each frame's point continues, once
//! the frames inside it return, to its own function's end, so the state has
//! an operation ahead when any of its frames' points has. A point has one
//! ahead when an operation reachable from it in its function's flow graph
//! declines always, or calls a function (inlined by the extension) that
//! has such an operation anywhere.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use hint_annotator::flowgraph::{Exit, OpKind};
use petgraph::stable_graph::NodeIndex;
use proc_macro2::TokenStream;
use quote::quote;

use crate::timeshift::Gen;

/// The operations whose code always declines, by function, block and
/// index, and why.
type Declines = BTreeMap<(usize, NodeIndex, usize), String>;

/// `__declines_ahead(point, parks)`: what lies ahead of `point` that
/// compiled code cannot do (up to the merge point with `parks`, else to the
/// function's return), as two tables of indices into the reasons.
pub fn declines_ahead(gen: &Gen) -> TokenStream {
    let mut declines = gen.static_declines.borrow().clone();
    // A return whose value residual code cannot return only declines where
    // its function is the outermost frame: an entry, whose outputs were
    // checked before it compiles (and which never compiles otherwise).
    declines.retain(|(f, b, k), _| {
        let g = &gen.fns[*f].graph;
        *k < g.graph[*b].ops.len() || !matches!(g.graph[*b].exit, Exit::Return(_))
    });
    let bad = bad_functions(gen, &declines);
    let mut reasons: Vec<String> = vec![];
    let mut index = |r: Option<String>| -> u16 {
        let Some(r) = r else { return 0 };
        let at = reasons.iter().position(|x| *x == r).unwrap_or_else(|| {
            reasons.push(r);
            reasons.len() - 1
        });
        u16::try_from(at + 1).unwrap_or(u16::MAX)
    };
    let mut parking = vec![];
    let mut full = vec![];
    for pt in &gen.points {
        parking.push(index(ahead(gen, &declines, &bad, pt.f, pt.block, pt.op, true)));
        full.push(index(ahead(gen, &declines, &bad, pt.f, pt.block, pt.op, false)));
    }
    quote! {
        /// Per resume point, what lies ahead that compiled code cannot do
        /// (an index into `__AHEAD_WHY` plus one; 0 for nothing), up to the
        /// merge point, then up to the return.
        const __AHEAD_PARKING: &[u16] = &[#(#parking),*];
        const __AHEAD_FULL: &[u16] = &[#(#full),*];
        const __AHEAD_WHY: &[&str] = &[#(#reasons),*];

        /// What a flexswitch resuming at `point` may meet, in a case
        /// compiled later, that compiled code cannot do (see the macro's
        /// `ahead`).
        pub(super) fn __declines_ahead(point: u32, parks: bool) -> ::core::option::Option<&'static str> {
            let table = if parks { __AHEAD_PARKING } else { __AHEAD_FULL };
            match table.get(point as usize) {
                Some(&k) if k > 0 => __AHEAD_WHY.get(k as usize - 1).copied(),
                _ => None,
            }
        }
    }
}

/// The functions with an operation that always declines, or calling one
/// that has, where the extension inlines the call.
fn bad_functions(gen: &Gen, declines: &Declines) -> BTreeSet<usize> {
    let mut bad: BTreeSet<usize> = declines.keys().map(|(f, ..)| *f).collect();
    loop {
        let before = bad.len();
        for (fi, f) in gen.fns.iter().enumerate() {
            if bad.contains(&fi) {
                continue;
            }
            let calls_bad = f.graph.blocks().any(|b| {
                f.graph.graph[b]
                    .ops
                    .iter()
                    .any(|op| gen.inlined_callee(fi, op.result, &op.kind).is_some_and(|c| bad.contains(&c)))
            });
            if calls_bad {
                bad.insert(fi);
            }
        }
        if bad.len() == before {
            return bad;
        }
    }
}

/// What, from operation `op` of block `block` of function `fi` on, can be
/// reached before the function returns (and, with `parks`, before a merge
/// point) that always declines: the first operation found, said with its
/// function, line and reason.
fn ahead(
    gen: &Gen,
    declines: &Declines,
    bad: &BTreeSet<usize>,
    fi: usize,
    block: NodeIndex,
    op: usize,
    parks: bool,
) -> Option<String> {
    if !bad.contains(&fi) {
        return None;
    }
    let g = &gen.fns[fi].graph;
    let said = |what: String, line: usize, why: &str| {
        let name = g.name.trim_start_matches("__");
        format!("{what} in `{name}` (line {line}): {why}")
    };
    let mut seen: BTreeSet<NodeIndex> = BTreeSet::new();
    let mut todo: VecDeque<(NodeIndex, usize)> = VecDeque::from([(block, op)]);
    'blocks: while let Some((b, from)) = todo.pop_front() {
        let ops = &g.graph[b].ops;
        for k in from..=ops.len() {
            let line = ops.get(k).or(ops.last()).map_or(0, |o| o.span.start().line);
            if let Some(why) = declines.get(&(fi, b, k)) {
                let what = ops.get(k).map_or("a jump".to_string(), |o| format!("`{}`", o.kind.name()));
                return Some(said(what, line, why));
            }
            let Some(o) = ops.get(k) else { break };
            if parks && matches!(o.kind, OpKind::GlobalMergePoint) {
                // Execute mode hands over to the interpreter here.
                continue 'blocks;
            }
            if let Some(c) = gen.inlined_callee(fi, o.result, &o.kind).filter(|c| bad.contains(c)) {
                let callee = gen.fns[c].graph.name.trim_start_matches("__").to_string();
                return Some(said(
                    format!("a call of `{callee}`"),
                    line,
                    "it has an operation compiled code cannot do yet",
                ));
            }
        }
        for e in g.exits(b) {
            let (t, _) = g.link(e);
            if seen.insert(t) {
                todo.push_back((t, 0));
            }
        }
    }
    None
}

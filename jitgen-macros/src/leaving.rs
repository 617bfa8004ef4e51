//! Which sides of a portal's red splits leave the interpreter's loop, once
//! the enum values made on the way are known.
//!
//! A side that leaves (a `return`, an error, a panic) compiles when first
//! taken (`Compilation::fork_exit`, `Compilation::split_exit`), so code
//! that never takes it does not carry it. `timeshift::leaves_loop` finds the
//! blocks from which no merge point can be reached at all. Most error paths
//! are not among them: Rust's `?`, `ok_or` and checked arithmetic are
//! written out as an `Option` or a `Result` made in each arm of an `if` and
//! matched after the arms join, so the `None` of `a.checked_add(b)` flows
//! through the same join block as the `Some`, and that block reaches the
//! loop. Only the variant tells which way the match after the join goes.
//!
//! [`leaving_links`] follows each side of a split with the variants, tags
//! and booleans it knows: an enum made by `MakeEnum` on the path, its tag
//! read by `EnumTag`, their comparisons with constants, `!`, copies, and
//! link arguments into block parameters. A branch whose condition is known
//! goes one way; an unknown one goes both. A side leaves when no path from
//! it reaches a merge point. The search is bounded ([`MAX_STEPS`] blocks a
//! side): past it, the side is taken to stay, as it was before.
//!
//! Getting this wrong costs speed, not correctness: a lazy side is a
//! single-case switch that compiles the side when it is first taken.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use hint_annotator::flowgraph::{BinOp, Const, Exit, OpKind, UnOp, Value, Var};
use hint_annotator::ColoredGraph;
use petgraph::stable_graph::{EdgeIndex, NodeIndex};

/// The most blocks one side's search visits before it gives up (the side
/// is then taken to stay in the loop).
pub(crate) const MAX_STEPS: usize = 256;

/// A value known on a path.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash, PartialOrd, Ord)]
enum Known {
    /// An enum value of this variant (its index).
    Variant(u32),
    /// An integer: a tag, or a constant.
    Int(i128),
    /// A boolean.
    Bool(bool),
}

type Env = BTreeMap<Var, Known>;

fn known(env: &Env, v: &Value) -> Option<Known> {
    match v {
        Value::Var(x) => env.get(x).copied(),
        Value::Const(Const::Tag { index, .. }) => Some(Known::Int(*index as i128)),
        Value::Const(Const::Int(i, _)) => Some(Known::Int(*i)),
        Value::Const(Const::Bool(b)) => Some(Known::Bool(*b)),
        Value::Const(_) => None,
    }
}

/// What the operations of block `b` make known, added to `env`.
fn step_block(f: &ColoredGraph, b: NodeIndex, env: &mut Env) {
    for op in &f.graph.graph[b].ops {
        let k = match (&op.kind, op.args.as_slice()) {
            (OpKind::MakeEnum { index, .. }, _) => Some(Known::Variant(*index)),
            (OpKind::EnumTag, [x]) => match known(env, x) {
                Some(Known::Variant(i)) => Some(Known::Int(i as i128)),
                _ => None,
            },
            (OpKind::SameAs, [x]) => known(env, x),
            (OpKind::Un(UnOp::Not), [x]) => match known(env, x) {
                Some(Known::Bool(c)) => Some(Known::Bool(!c)),
                _ => None,
            },
            (OpKind::Bin(op @ (BinOp::Eq | BinOp::Ne)), [a, b]) => match (known(env, a), known(env, b)) {
                (Some(x @ (Known::Int(_) | Known::Bool(_))), Some(y)) => {
                    Some(Known::Bool((x == y) == (*op == BinOp::Eq)))
                }
                _ => None,
            },
            _ => None,
        };
        match k {
            Some(k) => env.insert(op.result, k),
            None => env.remove(&op.result),
        };
    }
}

/// The environment of the target of link `e`, leaving a block whose
/// environment is `env`: the link's known arguments bound to the target's
/// parameters.
fn enter(f: &ColoredGraph, e: EdgeIndex, env: &Env) -> (NodeIndex, Env) {
    let (t, link) = f.graph.link(e);
    let mut next = env.clone();
    for (p, a) in f.graph.graph[t].inputargs.iter().zip(&link.args) {
        match known(env, a) {
            Some(k) => next.insert(*p, k),
            None => next.remove(p),
        };
    }
    (t, next)
}

/// Whether every path from link `e` (leaving a block whose known values
/// are `env`) ends in a return or a panic before any merge point, within
/// [`MAX_STEPS`] blocks.
fn side_leaves(f: &ColoredGraph, e: EdgeIndex, env: &Env, merge_blocks: &BTreeSet<NodeIndex>) -> bool {
    let mut work = vec![enter(f, e, env)];
    let mut seen: HashSet<(NodeIndex, Vec<(Var, Known)>)> = HashSet::new();
    let mut steps = 0;
    while let Some((b, mut env)) = work.pop() {
        if merge_blocks.contains(&b) {
            return false;
        }
        // Only what the block's parameters carry can differ between two
        // visits along one path; the rest is keyed with it all the same.
        if !seen.insert((b, env.iter().map(|(v, k)| (*v, *k)).collect())) {
            continue;
        }
        steps += 1;
        if steps > MAX_STEPS {
            return false;
        }
        step_block(f, b, &mut env);
        match &f.graph.graph[b].exit {
            Exit::Return(_) | Exit::Abort(_) => {}
            Exit::Goto(e) => work.push(enter(f, *e, &env)),
            Exit::Branch { cond, if_true, if_false } => match known(&env, cond) {
                Some(Known::Bool(true)) => work.push(enter(f, *if_true, &env)),
                Some(Known::Bool(false)) => work.push(enter(f, *if_false, &env)),
                _ => {
                    work.push(enter(f, *if_true, &env));
                    work.push(enter(f, *if_false, &env));
                }
            },
        }
    }
    true
}

/// The links of the portal `f`'s branches whose side leaves the loop (see
/// the module doc); empty for a function without a merge point.
pub(crate) fn leaving_links(f: &ColoredGraph) -> BTreeSet<EdgeIndex> {
    let mut out = BTreeSet::new();
    if !f.is_portal() {
        return out;
    }
    let merge_blocks: BTreeSet<NodeIndex> = f.merge_points().iter().map(|m| m.block).collect();
    for b in f.graph.blocks() {
        let Exit::Branch { if_true, if_false, .. } = &f.graph.graph[b].exit else { continue };
        // The block's own operations: an `if` whose arms make `Some` and
        // `None` branches in the block before them, on a condition that
        // is run-time here; what the block made is known on both sides.
        let mut env = Env::new();
        step_block(f, b, &mut env);
        for e in [*if_true, *if_false] {
            if side_leaves(f, e, &env, &merge_blocks) {
                out.insert(e);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};

    /// The portal `run` of `module`'s items, and for each of its red
    /// branches, which sides leave the loop, as text.
    fn check(items: &str, expect: Expect) {
        let file: syn::File = syn::parse_str(items).expect("items parse");
        let graphs = hint_annotator::annotate_items_with(&file.items, &[]).expect("the module annotates");
        let f = graphs.function("run").expect("a portal `run`");
        let leaving = super::leaving_links(f);
        let mut lines = vec![];
        let mut blocks: Vec<_> = f.graph.blocks().collect();
        blocks.sort();
        for b in blocks {
            let hint_annotator::flowgraph::Exit::Branch { cond, if_true, if_false } = &f.graph.graph[b].exit else {
                continue;
            };
            let red = match cond {
                hint_annotator::flowgraph::Value::Var(v) => f.color(*v) == hint_annotator::Color::Red,
                _ => false,
            };
            if !red {
                continue;
            }
            let side = |e| if leaving.contains(e) { "leaves" } else { "stays" };
            let source = f.graph.graph[b]
                .ops
                .iter()
                .find(|op| Some(op.result) == cond.as_var())
                .map_or(String::new(), |op| op.source.split_whitespace().collect::<Vec<_>>().join(" "));
            lines.push(format!("`{source}`: true {}, false {}", side(if_true), side(if_false)));
        }
        expect.assert_eq(&lines.join("\n"));
    }

    #[test]
    fn the_none_of_checked_arithmetic_leaves_through_the_question_mark() {
        check(
            r#"
            use jitgen::prelude::*;
            pub fn run(code: &[u8], mut acc: i64) -> Result<i64, String> {
                let mut pc = 0;
                while pc < code.len() {
                    hint!(global_merge_point);
                    let op = hint!(code[pc], concrete);
                    pc += 1;
                    if op == b'+' {
                        acc = acc.checked_add(1).ok_or("overflow".to_string())?;
                    } else if acc < 0 {
                        acc = 0;
                    }
                }
                Ok(acc)
            }
            "#,
            expect![[r#"
                `(__jitgen_b >= 0) ==(__jitgen_s >= __jitgen_a)`: true stays, false leaves
                `acc < 0`: true stays, false stays
                `Some(__jitgen_v)`: true stays, false leaves
                `acc.checked_add(1).ok_or("overflow".to_string()) ?`: true leaves, false stays"#]],
        );
    }
}

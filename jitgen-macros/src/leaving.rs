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
//! [`Leaving::links`] follows each side of a split with the variants,
//! tags and booleans it knows: an enum made by `MakeEnum` on the path, its
//! tag read by `EnumTag`, their comparisons with constants, `!`, copies,
//! and link arguments into block parameters. A branch whose condition is
//! known goes one way; an unknown one goes both. A side leaves when no
//! path from it reaches a merge point: in a portal, every path ends in a
//! return or a panic; in a function inlined into others (a helper returning
//! `Result` called with `?`), every path returns a variant that, at each of
//! the function's call sites, leaves in its turn. The search is bounded
//! ([`MAX_STEPS`] blocks a side, a recursion taken to stay): past it, the
//! side is taken to stay, as it was before.
//!
//! Getting this wrong costs speed, not correctness: a lazy side is a
//! single-case switch that compiles the side when it is first taken.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use hint_annotator::flowgraph::{BinOp, Const, Exit, Op, OpKind, UnOp, Value, Var};
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

/// A place a search has been: a block, the operation it began at, and what
/// was known there.
type Visit = (NodeIndex, usize, Vec<(Var, Known)>);

fn known(env: &Env, v: &Value) -> Option<Known> {
    match v {
        Value::Var(x) => env.get(x).copied(),
        Value::Const(Const::Tag { index, .. }) => Some(Known::Int(*index as i128)),
        Value::Const(Const::Int(i, _)) => Some(Known::Int(*i)),
        Value::Const(Const::Bool(b)) => Some(Known::Bool(*b)),
        Value::Const(_) => None,
    }
}

/// What operations `ops` make known, added to `env`.
fn step_ops(ops: &[Op], env: &mut Env) {
    for op in ops {
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
fn enter(f: &ColoredGraph, e: EdgeIndex, env: &Env) -> (NodeIndex, usize, Env) {
    let (t, link) = f.graph.link(e);
    let mut next = env.clone();
    for (p, a) in f.graph.graph[t].inputargs.iter().zip(&link.args) {
        match known(env, a) {
            Some(k) => next.insert(*p, k),
            None => next.remove(p),
        };
    }
    (t, 0, next)
}

/// The functions of a module, and where each is called, to follow a side
/// through the returns of the functions it is inlined into.
pub(crate) struct Leaving<'g> {
    fns: Vec<&'g ColoredGraph>,
    /// Per function, its call sites: the caller, the block, the call's
    /// position among the block's operations.
    callers: Vec<Vec<(usize, NodeIndex, usize)>>,
    /// Whether a return of a variant from a function leaves the loop at
    /// every call site (`None` while being found: a recursion stays).
    returns: std::cell::RefCell<BTreeMap<(usize, u32), Option<bool>>>,
}

impl<'g> Leaving<'g> {
    /// The functions `fns`, and the calls `callee` resolves (a call of the
    /// caller `fi` whose result is `result`, of kind `kind`, to the index
    /// of the function inlined there).
    pub(crate) fn new(fns: &[&'g ColoredGraph], callee: impl Fn(usize, Var, &OpKind) -> Option<usize>) -> Self {
        let mut callers = vec![vec![]; fns.len()];
        for (fi, f) in fns.iter().enumerate() {
            for b in f.graph.blocks() {
                for (k, op) in f.graph.graph[b].ops.iter().enumerate() {
                    if let Some(ci) = callee(fi, op.result, &op.kind) {
                        callers[ci].push((fi, b, k));
                    }
                }
            }
        }
        Leaving { fns: fns.to_vec(), callers, returns: Default::default() }
    }

    /// The links of function `fi`'s branches whose side leaves the loop
    /// (see the module doc). In a portal a side leaves at a return; in a
    /// function inlined into others, where it returns a variant that leaves
    /// at every call site (the `Err` of a helper called with `?`).
    pub(crate) fn links(&self, fi: usize) -> BTreeSet<EdgeIndex> {
        let f = self.fns[fi];
        let mut out = BTreeSet::new();
        if !f.is_portal() && self.callers[fi].is_empty() {
            return out;
        }
        for b in f.graph.blocks() {
            let Exit::Branch { if_true, if_false, .. } = &f.graph.graph[b].exit else { continue };
            // The block's own operations: an `if` whose arms make `Some`
            // and `None` branches in the block before them, on a condition
            // that is run-time here; what the block made is known on both
            // sides.
            let mut env = Env::new();
            step_ops(&f.graph.graph[b].ops, &mut env);
            for e in [*if_true, *if_false] {
                if self.walk(fi, vec![enter(f, e, &env)]) {
                    out.insert(e);
                }
            }
        }
        out
    }

    /// Whether every path from the starts (a block of function `fi`, the
    /// operation to begin at, the values known there) ends in a panic, or
    /// in a return that leaves the loop, before any merge point, within
    /// [`MAX_STEPS`] blocks.
    fn walk(&self, fi: usize, mut work: Vec<(NodeIndex, usize, Env)>) -> bool {
        let f = self.fns[fi];
        let merge_blocks: BTreeSet<NodeIndex> = f.merge_points().iter().map(|m| m.block).collect();
        let mut seen: HashSet<Visit> = HashSet::new();
        let mut steps = 0;
        while let Some((b, from, mut env)) = work.pop() {
            if merge_blocks.contains(&b) {
                return false;
            }
            if !seen.insert((b, from, env.iter().map(|(v, k)| (*v, *k)).collect())) {
                continue;
            }
            steps += 1;
            if steps > MAX_STEPS {
                return false;
            }
            step_ops(&f.graph.graph[b].ops[from..], &mut env);
            match &f.graph.graph[b].exit {
                Exit::Abort(_) => {}
                Exit::Return(_) if f.is_portal() => {}
                Exit::Return(v) => match known(&env, v) {
                    Some(Known::Variant(i)) if self.returned_leaves(fi, i) => {}
                    _ => return false,
                },
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

    /// Whether function `fi` returning an enum of variant `index` leaves
    /// the loop at each of its call sites (none: it does not).
    fn returned_leaves(&self, fi: usize, index: u32) -> bool {
        if let Some(known) = self.returns.borrow().get(&(fi, index)) {
            return known.unwrap_or(false);
        }
        self.returns.borrow_mut().insert((fi, index), None);
        let sites = &self.callers[fi];
        let leaves = !sites.is_empty()
            && sites.iter().all(|&(ci, b, k)| {
                let f = self.fns[ci];
                let mut env = Env::new();
                env.insert(f.graph.graph[b].ops[k].result, Known::Variant(index));
                self.walk(ci, vec![(b, k + 1, env)])
            });
        self.returns.borrow_mut().insert((fi, index), Some(leaves));
        leaves
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};

    /// The portal `run` of `module`'s items, and for each of its red
    /// branches, which sides leave the loop, as text.
    fn check(items: &str, expect: Expect) {
        use hint_annotator::flowgraph::{Exit, OpKind, Value};
        let file: syn::File = syn::parse_str(items).expect("items parse");
        let graphs = hint_annotator::annotate_items_with(&file.items, &[]).expect("the module annotates");
        let fns: Vec<_> = graphs.functions().collect();
        let callee = |_, _, kind: &OpKind| match kind {
            OpKind::Call(n) => fns.iter().position(|f| f.name() == n),
            _ => None,
        };
        let leaving = super::Leaving::new(&fns, callee);
        let mut lines = vec![];
        for (fi, f) in fns.iter().enumerate() {
            let links = leaving.links(fi);
            let mut blocks: Vec<_> = f.graph.blocks().collect();
            blocks.sort();
            for b in blocks {
                let Exit::Branch { cond: Value::Var(c), if_true, if_false } = &f.graph.graph[b].exit else { continue };
                if f.color(*c) != hint_annotator::Color::Red {
                    continue;
                }
                let side = |e| if links.contains(e) { "leaves" } else { "stays" };
                let source = f.graph.graph[b]
                    .ops
                    .iter()
                    .find(|op| op.result == *c)
                    .map_or(String::new(), |op| op.source.split_whitespace().collect::<Vec<_>>().join(" "));
                lines.push(format!("{}: `{source}`: true {}, false {}", f.name(), side(if_true), side(if_false)));
            }
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
                run: `(__jitgen_b >= 0) ==(__jitgen_s >= __jitgen_a)`: true stays, false leaves
                run: `acc < 0`: true stays, false stays
                run: `Some(__jitgen_v)`: true stays, false leaves
                run: `acc.checked_add(1).ok_or("overflow".to_string()) ?`: true leaves, false stays"#]],
        );
    }

    #[test]
    fn a_helpers_err_leaves_where_every_caller_passes_it_on_with_a_question_mark() {
        // `pop`'s `None` leaves: `run` passes its `Err` on with `?`. `peek`'s
        // does not: one of its callers goes on with a default.
        check(
            r#"
            use jitgen::prelude::*;
            fn pop(stack: &mut Vec<i64>) -> Result<i64, String> {
                stack.pop().ok_or("empty".to_string())
            }
            fn peek(stack: &Vec<i64>) -> Option<i64> {
                if stack.is_empty() { None } else { Some(stack[stack.len() - 1]) }
            }
            pub fn run(code: &[u8], stack: &mut Vec<i64>) -> Result<i64, String> {
                let mut pc = 0;
                while pc < code.len() {
                    hint!(global_merge_point);
                    let op = hint!(code[pc], concrete);
                    pc += 1;
                    if op == 0 {
                        let v = pop(stack)?;
                        stack.push(v + 1);
                    } else if op == 1 {
                        let v = peek(stack).ok_or("empty".to_string())?;
                        stack.push(v);
                    } else {
                        let v = peek(stack).unwrap_or(0);
                        stack.push(v);
                    }
                }
                Ok(stack.len() as i64)
            }
            "#,
            expect![[r#"
                pop: `Some(__jitgen_v)`: true stays, false leaves
                peek: `stack.is_empty()`: true stays, false stays
                run: `pop(stack) ?`: true leaves, false stays
                run: `Some(__jitgen_v)`: true stays, false leaves
                run: `Some(__jitgen_v)`: true stays, false stays
                run: `peek(stack).ok_or("empty".to_string()) ?`: true leaves, false stays"#]],
        );
    }
}

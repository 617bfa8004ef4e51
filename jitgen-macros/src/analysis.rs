//! What the timeshifter asks of the interpreter's graphs before emitting:
//! which lists escape, which pops reach saved frames, which frames are read in
//! place, what is written back to a caller (methods of `timeshift::Gen`).

use std::collections::BTreeSet;

use hint_annotator::flowgraph::{BinOp, Exit, HintKind, OpKind, Value, Var};
use hint_annotator::Color;
use petgraph::stable_graph::NodeIndex;
use proc_macro2::Ident;

use crate::repr::*;
use crate::timeshift::*;

/// An index into an operand stack known when the stack's field is read
/// (see [`Gen::reads_hidden`]).
pub(crate) enum HiddenIndex {
    /// Computed before the read.
    Known(Value),
    /// A value computed before the read, plus a green step.
    Step(Value, Value),
}

impl<'g> Gen<'g> {
    /// Whether the list `t` read from a field is used otherwise than as the
    /// base of list operations in its own block.
    pub(crate) fn list_temp_escapes(&self, fi: usize, t: Var) -> bool {
        let f = self.fns[fi];
        let tv = Value::Var(t);
        for b in f.graph.blocks() {
            let blk = &f.graph.graph[b];
            let defines = blk.ops.iter().any(|op| op.result == t);
            for op in &blk.ops {
                let list_op =
                    matches!(op.kind, OpKind::GetItem | OpKind::SetItem | OpKind::Len | OpKind::Push | OpKind::Pop);
                for (i, a) in op.args.iter().enumerate() {
                    if *a == tv && !(list_op && i == 0 && defines) {
                        return true;
                    }
                }
            }
            let in_exit = match &blk.exit {
                Exit::Return(v) => *v == tv,
                Exit::Branch { cond, .. } => *cond == tv,
                _ => false,
            };
            if in_exit || f.graph.exits(b).iter().any(|e| f.graph.link(*e).1.args.contains(&tv)) {
                return true;
            }
        }
        false
    }

    /// The list `op` pops or reads when it is a local `Vec` of structs
    /// whose objects may be virtual (the interpreter's saved frames): such
    /// an operation may resume on the continuation stack (compiled
    /// recursion, see the runtime's `compile::spill`) with its top frame
    /// virtual again, from a resume point before it.
    pub(crate) fn pops_frames(&self, fi: usize, op: &hint_annotator::flowgraph::Op) -> Option<Var> {
        match (&op.kind, op.args.first()) {
            (OpKind::Pop | OpKind::Len | OpKind::GetItem, Some(Value::Var(l)))
                if matches!(self.repr(fi, *l), Repr::VOList(_)) && self.fns[fi].color(*l) == Color::Red =>
            {
                Some(*l)
            }
            _ => None,
        }
    }

    /// For `t = getfield(p)`, a list field of a virtual object that this
    /// block pops, where the interpreter reads its saved frames in place:
    /// `(p, k)` as [`Gen::field_list_of`]. Such a pop may find the list's
    /// part below its tail hidden with spilled frames (`compile::spill`'s
    /// segments): the frame on top of the continuation stack is then popped
    /// first, so that its segment is back in the tail.
    pub(crate) fn pops_hidden(
        &self,
        fi: usize,
        b: NodeIndex,
        op: &hint_annotator::flowgraph::Op,
    ) -> Option<(Ident, usize)> {
        if !self.frames_in_place || !matches!(op.kind, OpKind::GetField(_)) {
            return None;
        }
        if !matches!(self.repr(fi, op.result), Repr::VList(_)) {
            return None;
        }
        let t = Value::Var(op.result);
        let ops = &self.fns[fi].graph.graph[b].ops;
        if !ops.iter().any(|o| o.kind == OpKind::Pop && o.args.first() == Some(&t)) {
            return None;
        }
        self.field_list_of(fi, &t)
    }

    /// For `t = getfield(p)`, a list field of a virtual object that this
    /// block then indexes (`t[i]`, read or written), where the interpreter
    /// reads its saved frames in place: `(p, k, i)` for the operation at
    /// `at`, `(p, k)` as [`Gen::field_list_of`], `i` the index where it is
    /// known when the field is read (see [`HiddenIndex`]).
    /// Such an index may name an element of the list's hidden part (a
    /// procedure reading its arguments below its frame's base, in its
    /// caller's segment): the frame on top of the continuation stack is
    /// then popped first, so that its segment is back in the tail.
    pub(crate) fn reads_hidden(
        &self,
        fi: usize,
        b: NodeIndex,
        at: usize,
    ) -> Option<(Ident, usize, Option<HiddenIndex>)> {
        let ops = &self.fns[fi].graph.graph[b].ops;
        let op = &ops[at];
        if !self.frames_in_place || !matches!(op.kind, OpKind::GetField(_)) {
            return None;
        }
        if !matches!(self.repr(fi, op.result), Repr::VList(_)) {
            return None;
        }
        let t = Value::Var(op.result);
        let index = ops
            .iter()
            .find(|o| matches!(o.kind, OpKind::GetItem | OpKind::SetItem) && o.args.first() == Some(&t))?
            .args
            .get(1)?
            .clone();
        // The index, where it is known when the field is read: computed
        // before, or after it as a value computed before plus a green step
        // (`self.stack[base + i]`, the field read first).
        let defined_after = |v: &Value| match v {
            Value::Var(i) => ops.iter().skip(at).position(|o| o.result == *i),
            _ => None,
        };
        let known = match defined_after(&index) {
            None => Some(HiddenIndex::Known(index)),
            Some(d) => {
                let o = &ops[at + d];
                let green = |v: &Value| match v {
                    Value::Var(v) => self.fns[fi].color(*v) == Color::Green,
                    Value::Const(_) => true,
                };
                match (&o.kind, o.args.as_slice()) {
                    (OpKind::Bin(BinOp::Add), [a, c])
                        if defined_after(a).is_none() && defined_after(c).is_none() && green(c) =>
                    {
                        Some(HiddenIndex::Step(a.clone(), c.clone()))
                    }
                    _ => None,
                }
            }
        };
        let (p, k) = self.field_list_of(fi, &t)?;
        Some((p, k, known))
    }

    /// The types of struct whose local `Vec`s the interpreter reads in
    /// place as well as pops (`len` or an index: `frames.last()`). Spilled
    /// by a recursion, such lists count their entries, so that their
    /// length is known (the runtime's `Frame::reads_saved_frames`,
    /// `VDesc::reads_in_place`).
    pub fn frames_read_in_place(&self) -> BTreeSet<String> {
        let (mut popped, mut read) = (BTreeSet::new(), BTreeSet::new());
        for fi in 0..self.fns.len() {
            for b in self.fns[fi].graph.blocks() {
                for op in &self.fns[fi].graph.graph[b].ops {
                    let Some(l) = self.pops_frames(fi, op) else { continue };
                    let Repr::VOList(s) = self.repr(fi, l) else { continue };
                    if op.kind == OpKind::Pop {
                        popped.insert(s);
                    } else {
                        read.insert(s);
                    }
                }
            }
        }
        popped.intersection(&read).cloned().collect()
    }

    /// Whether promotion `k` of block `b` of function `fi` runs on every
    /// turn of the portal's loop: it follows the global merge point in the
    /// merge point's own block, or its block comes after the merge point
    /// and before every jump back to it (it dominates each). An
    /// interpreter that reads its position from its frame and promotes it
    /// at the top of the loop (`hint!(frame.ip, promote)`) does; a `Ret`
    /// promoting the address it returns to does not. Such a switch pins the
    /// promoted red at the merge point (`Compilation::flexswitch_every_turn`).
    pub(crate) fn promotes_every_turn(&self, fi: usize, b: NodeIndex, k: usize) -> bool {
        let g = &self.fns[fi].graph;
        let is_mp = |o: &hint_annotator::flowgraph::Op| o.kind == OpKind::GlobalMergePoint;
        let Some(m) = g.blocks().find(|&m| g.graph[m].ops.iter().any(is_mp)) else { return false };
        if m == b {
            return g.graph[b].ops[..k].iter().any(is_mp);
        }
        let doms = petgraph::algo::dominators::simple_fast(&g.graph, g.start);
        let dominates = |a: NodeIndex, x: NodeIndex| doms.dominators(x).is_some_and(|mut d| d.any(|y| y == a));
        let latches: Vec<NodeIndex> =
            g.graph.neighbors_directed(m, petgraph::Direction::Incoming).filter(|&p| dominates(m, p)).collect();
        dominates(m, b) && !latches.is_empty() && latches.iter().all(|&p| dominates(b, p))
    }

    /// Whether `op` promotes a red scalar: a flexswitch at run time, its
    /// continuation a resume point receiving the value through `__ret`.
    pub(crate) fn promotes_run_time(&self, fi: usize, op: &hint_annotator::flowgraph::Op) -> bool {
        op.kind == OpKind::Hint(HintKind::Promote)
            && match (self.value_repr(fi, &op.args[0]), self.repr(fi, op.result)) {
                (Repr::R(_), Repr::G(_)) => true,
                // What an `Rc` or `Arc` points to: its address.
                (Repr::RPtr | Repr::VPtr, Repr::GRef(_)) => self.fns[fi].graph.shared_pointee(&op.args[0]).is_some(),
                _ => false,
            }
    }

    /// The red `&mut Vec` of scalars parameters of function `fi`, an
    /// inlined function (not a portal, not opaque): each is a virtual list
    /// given by value, live to every return, where it is written back to
    /// the caller's list (`__writeback_fN`). A helper such as `fn pop(stack:
    /// &mut Vec<i64>)` then works on the caller's list without forcing it
    /// into memory.
    pub(crate) fn written_back_params(&self, fi: usize) -> BTreeSet<Var> {
        let f = self.fns[fi];
        if f.is_portal() || f.graph.opaque {
            return BTreeSet::new();
        }
        f.graph
            .params()
            .iter()
            .filter(|p| f.color(**p) == Color::Red && mut_scalar_vec(&f.graph.var(**p).ty).is_some())
            .copied()
            .collect()
    }

    /// `&mut list` taken of a list to pass it to such parameters: a
    /// `same_as` of a variable that is a virtual list, whose every use is an
    /// argument of an inlined call for a written-back parameter (written
    /// back into the alias and into the list it was taken of).
    pub(crate) fn written_back_aliases(&self, fi: usize) -> Vec<Var> {
        let f = self.fns[fi];
        let mut out = vec![];
        for b in f.graph.blocks() {
            for op in &f.graph.graph[b].ops {
                let (OpKind::SameAs, [Value::Var(x)]) = (&op.kind, op.args.as_slice()) else { continue };
                if f.color(op.result) != Color::Red || mut_scalar_vec(&f.graph.var(op.result).ty).is_none() {
                    continue;
                }
                if !matches!(self.repr(fi, *x), Repr::VList(_)) {
                    continue;
                }
                if self.only_written_back_args(fi, op.result) {
                    out.push(op.result);
                }
            }
        }
        out
    }

    /// Whether every use of `v` in function `fi` is an argument of an
    /// inlined call for a written-back parameter.
    pub(crate) fn only_written_back_args(&self, fi: usize, v: Var) -> bool {
        let f = self.fns[fi];
        let val = Value::Var(v);
        for b in f.graph.blocks() {
            let blk = &f.graph.graph[b];
            for op in &blk.ops {
                let Some(k) = op.args.iter().position(|a| *a == val) else { continue };
                if op.args.iter().filter(|a| **a == val).count() > 1 {
                    return false;
                }
                let Some(ci) = self.inlined_callee(fi, op.result, &op.kind) else { return false };
                let callee = self.fns[ci];
                match callee.graph.params().get(k) {
                    Some(p) if self.plans[ci].written_back.contains(p) => {}
                    _ => return false,
                }
            }
            let in_exit = match &blk.exit {
                Exit::Return(x) => *x == val,
                Exit::Branch { cond, .. } => *cond == val,
                _ => false,
            };
            let in_links = f.graph.exits(b).iter().any(|e| f.graph.link(*e).1.args.contains(&val));
            if in_exit || in_links {
                return false;
            }
        }
        true
    }

    /// The variables of a caller that a written-back argument `a` of a call
    /// in function `fi` updates: itself, and through `same_as` the list it
    /// was taken of, while they are virtual lists.
    pub(crate) fn written_back_targets(&self, fi: usize, a: &Value) -> Vec<Var> {
        let f = self.fns[fi];
        let mut out = vec![];
        let mut cur = match a {
            Value::Var(v) => Some(*v),
            Value::Const(_) => None,
        };
        while let Some(v) = cur {
            if !matches!(self.repr(fi, v), Repr::VList(_)) || out.contains(&v) {
                break;
            }
            out.push(v);
            cur = f.graph.blocks().find_map(|b| {
                f.graph.graph[b].ops.iter().find_map(|op| match (&op.kind, op.args.as_slice()) {
                    (OpKind::SameAs, [Value::Var(x)]) if op.result == v => Some(*x),
                    _ => None,
                })
            });
        }
        out
    }
}

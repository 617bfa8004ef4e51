//! Fusion: a root function and the pieces its flexswitches reached, as one
//! function (not part of `simplify`: the run-time layer fuses a tree of
//! compiled code once its switches have cases and it has run a while, see
//! `run::residual::ResidualFn::fuse_pieces`).
//!
//! A flexswitch leaves its function: it stores the live values in the
//! frame, scans its cases and tail-calls one, whose prologue loads them
//! again. Where the code of a case is a known function (a piece, given with
//! its cases by the caller), fusion copies that function into the root and
//! puts a test per case before the switch: equal to the case's value, it
//! jumps to the copy's entry with the live values as arguments; otherwise
//! the switch runs as before (a value without a case still calls back into
//! the compiler). The copies' own switches are fused in turn, so a loop
//! through switches becomes a loop of the one function.
//!
//! A case is left to the switch where the copy's inputs are not the live
//! values' types, where the promoted value is a float (the switch compares
//! bits), where the caller's `hot` does not take its piece (a piece run
//! rarely, such as the continuations of a recursion's first few levels,
//! would only make the function larger), or past `max_ops` operations
//! copied in all. Nothing else changes: the copies return, leave and call
//! as their functions did, on the same frame (cases share their root's
//! frame and outputs).
//!
//! Each copy is also a reentry of the result: the code of a piece left out
//! that continues in a copied one enters the fused function there (the
//! caller points such cases at the reentry, see the run-time layer), so a
//! recursion that passes through a cold piece comes back into the fused
//! code instead of going on in the pieces compiled on their own. A hot
//! piece that only pieces left out reach is copied for its reentry.

use std::collections::HashMap;

use crate::ir::function::{Inst, Label, RBlock, ResidualFunction, Terminator, Val};
use crate::ir::ops::{CmpOp, ValTy};

/// The cases of one switch of a function to fuse: `(function, switch)`,
/// where function 0 is the root and `k + 1` is piece `k`, gives the values
/// with a case and the piece each continues in.
pub type CasesOf<'a> = &'a dyn Fn(usize, u32) -> Vec<(u64, usize)>;

impl ResidualFunction {
    /// `self` (a root) with the pieces its switches reach fused in (see the
    /// module doc), those that `hot` takes only; copies at most `max_ops`
    /// operations of pieces. Each copy is a reentry of the result (see
    /// [`ResidualFunction::reentries`]); the pieces copied come back in the
    /// order of the reentries.
    pub fn fused(
        &self,
        pieces: &[&ResidualFunction],
        cases: CasesOf,
        max_ops: usize,
        hot: &dyn Fn(usize) -> bool,
    ) -> (ResidualFunction, Vec<usize>) {
        let mut out = self.clone();
        let mut fusion = Fusion { copied: HashMap::new(), order: vec![], work: vec![], budget: max_ops };
        // Per function copied: its switches' first index in `out`, and the
        // label of its entry; the root is itself.
        fusion.copied.insert(0, (0, Label::ENTRY));
        fusion.work = switch_blocks(&out).into_iter().map(|l| (0, l)).collect();
        let mut unreached = 0;
        loop {
            while let Some((func, block)) = fusion.work.pop() {
                fusion.fuse_switch(&mut out, pieces, cases, hot, func, block);
            }
            // A hot piece that no copy reaches (entered from pieces left out
            // only) is copied too: they enter it at its reentry.
            let next = (unreached..pieces.len())
                .find(|&k| hot(k) && !fusion.copied.contains_key(&(k + 1)) && pieces[k].outputs == out.outputs);
            let Some(k) = next else { break };
            unreached = k + 1;
            fusion.copy(&mut out, pieces[k], k);
        }
        (out, fusion.order)
    }

    /// Copies `f`'s blocks, values and switches into `self`; returns the
    /// index of its first switch here, its entry's label, and the blocks
    /// that end in a switch.
    fn copy_in(&mut self, f: &ResidualFunction) -> (u32, Label, Vec<Label>) {
        for c in &f.cells {
            if !self.cells.contains(c) {
                self.cells.push(*c);
            }
        }
        let first_switch = self.switches.len() as u32;
        self.switches.extend(f.switches.iter().cloned());
        let vals: HashMap<Val, Val> = f.vals.iter().map(|(v, ty)| (v, self.vals.push(*ty))).collect();
        let labels: HashMap<Label, Label> = f.blocks.keys().map(|l| (l, self.blocks.push(RBlock::default()))).collect();
        let val = |v: Val| vals[&v];
        let mut switches = vec![];
        for (l, b) in f.blocks.iter() {
            let Some(term) = &b.term else { continue };
            let mut insts = b.insts.clone();
            for i in &mut insts {
                i.map_defs(&mut |v| vals[&v]);
                i.map_uses(&val);
            }
            let mut term = term.clone();
            term.map_uses(&val);
            match &mut term {
                Terminator::Jump(to, _) => *to = labels[to],
                Terminator::Branch { if_true, if_false, .. } => {
                    if_true.0 = labels[&if_true.0];
                    if_false.0 = labels[&if_false.0];
                }
                Terminator::FlexSwitch { switch, .. } => {
                    *switch += first_switch;
                    switches.push(labels[&l]);
                }
                Terminator::Return(_) | Terminator::Error(_) => {}
            }
            self.blocks[labels[&l]] =
                RBlock { params: b.params.iter().map(|p| vals[p]).collect(), insts, term: Some(term) };
        }
        (first_switch, labels[&Label::ENTRY], switches)
    }
}

impl ResidualFunction {
    /// Whether the function calls Rust other than on paths rarely taken
    /// (`call.cold`): code that may run slower than the interpreter it
    /// came from.
    pub fn calls_rust(&self) -> bool {
        self.blocks.values().flat_map(|b| &b.insts).any(|i| match i {
            Inst::Call { cold, .. } => !cold,
            Inst::CallCode { .. } => true,
            _ => false,
        })
    }

    /// Drops the turn checks of the counter at `counter` (see
    /// [`crate::ir::function::TurnCounter`]): its load, decrement and
    /// store, and the test of what is left, whose branch becomes a jump to
    /// its side that goes on. Fused code that calls no Rust needs no
    /// measure, and a decrement in memory at every turn of a tight loop
    /// costs it a chain through memory. Returns whether there were any.
    pub fn drop_turn_checks(&mut self, counter: u64) -> bool {
        let at: std::collections::HashSet<Val> = self
            .blocks
            .values()
            .flat_map(|b| &b.insts)
            .filter_map(|i| match i {
                Inst::Const { dst, ty: ValTy::Ptr, bits } if *bits == counter => Some(*dst),
                _ => None,
            })
            .collect();
        if at.is_empty() {
            return false;
        }
        let mut dropped = false;
        for b in self.blocks.values_mut() {
            // The check's values, in the order the check makes them.
            let mut check: std::collections::HashSet<Val> = std::collections::HashSet::new();
            b.insts.retain(|i| {
                let part = match i {
                    Inst::Const { dst, .. } if at.contains(dst) => return false,
                    Inst::Load { dst, base, .. } if at.contains(base) => Some(*dst),
                    Inst::Bin { dst, a, .. } | Inst::Cmp { dst, a, .. } if check.contains(a) => Some(*dst),
                    Inst::Store { base, .. } if at.contains(base) => {
                        dropped = true;
                        return false;
                    }
                    _ => None,
                };
                match part {
                    Some(v) => {
                        check.insert(v);
                        false
                    }
                    None => true,
                }
            });
            if let Some(Terminator::Branch { cond, if_true, .. }) = &b.term {
                if check.contains(cond) {
                    b.term = Some(Terminator::Jump(if_true.0, if_true.1.clone()));
                }
            }
        }
        dropped
    }
}

/// A fusion under way.
struct Fusion {
    /// Per function copied (0 the root, `k + 1` piece `k`): its switches'
    /// first index in the result, and the label of its entry.
    copied: HashMap<usize, (u32, Label)>,
    /// The pieces copied, in order.
    order: Vec<usize>,
    /// Switches to fuse: (function, the block in the result).
    work: Vec<(usize, Label)>,
    /// Operations of pieces that may still be copied.
    budget: usize,
}

impl Fusion {
    /// Copies piece `k` into `out` (budget allowing): its entry label.
    fn copy(&mut self, out: &mut ResidualFunction, f: &ResidualFunction, k: usize) -> Option<Label> {
        if let Some((_, entry)) = self.copied.get(&(k + 1)) {
            return Some(*entry);
        }
        let ops = f.op_count();
        if ops > self.budget {
            return None;
        }
        self.budget -= ops;
        let (first_switch, entry, blocks) = out.copy_in(f);
        self.copied.insert(k + 1, (first_switch, entry));
        self.order.push(k);
        out.reentries.push(entry);
        self.work.extend(blocks.into_iter().map(|l| (k + 1, l)));
        Some(entry)
    }

    /// Puts a test per case whose piece is (or gets) copied before the
    /// switch ending `block` of function `func`.
    fn fuse_switch(
        &mut self,
        out: &mut ResidualFunction,
        pieces: &[&ResidualFunction],
        cases: CasesOf,
        hot: &dyn Fn(usize) -> bool,
        func: usize,
        block: Label,
    ) {
        let Some(Terminator::FlexSwitch { value, live, switch }) = out.blocks[block].term.clone() else {
            return;
        };
        let own = switch - self.copied[&func].0;
        let ty = out.vals[value];
        if ty == ValTy::F64 {
            return;
        }
        let live_tys: Vec<ValTy> = live.iter().map(|v| out.vals[*v]).collect();
        let mut targets = vec![];
        for (w, piece) in cases(func, own) {
            let Some(f) = pieces.get(piece) else { continue };
            if f.inputs != live_tys || f.outputs != out.outputs {
                continue;
            }
            if !self.copied.contains_key(&(piece + 1)) && !hot(piece) {
                continue;
            }
            if let Some(entry) = self.copy(out, f, piece) {
                targets.push((ty.canon(w), entry));
            }
        }
        if targets.is_empty() {
            return;
        }
        // The tests, then the switch in a block of its own.
        let fallback = out.blocks.push(RBlock {
            params: vec![],
            insts: vec![],
            term: Some(Terminator::FlexSwitch { value, live: live.clone(), switch }),
        });
        let mut at = block;
        for (k, (w, entry)) in targets.iter().enumerate() {
            let c = out.vals.push(ty);
            let same = out.vals.push(ValTy::Bool);
            let next = if k + 1 == targets.len() {
                fallback
            } else {
                out.blocks.push(RBlock { params: vec![], insts: vec![], term: None })
            };
            let b = &mut out.blocks[at];
            b.insts.push(Inst::Const { dst: c, ty, bits: *w });
            b.insts.push(Inst::Cmp { dst: same, op: CmpOp::Eq, ty, a: value, b: c });
            b.term = Some(Terminator::Branch { cond: same, if_true: (*entry, live.clone()), if_false: (next, vec![]) });
            at = next;
        }
    }
}

/// The live blocks of `f` that end in a flexswitch.
fn switch_blocks(f: &ResidualFunction) -> Vec<Label> {
    f.live_blocks().filter(|(_, b)| matches!(b.term, Some(Terminator::FlexSwitch { .. }))).map(|(l, _)| l).collect()
}

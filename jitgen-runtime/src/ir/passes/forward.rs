//! Memory a block already knows: a load from a place the block loaded from
//! or stored to before, with nothing in between that may have written it,
//! is the value loaded or stored then; a bounds check that an earlier check
//! of the block implies goes. PyPy's optimizer does the same with its heap
//! cache (`optimizeopt/heap.py`), LuaJIT with store-to-load forwarding.
//!
//! A block entered only from the end of one other (not a function's entry,
//! nor a reentry) starts knowing what that one knew at its end: blocks are
//! walked in dominance order, so its predecessor was walked first, and what
//! it knew is defined before the block.
//!
//! An interpreter working on memory in place (a Brainfuck tape, a stack VM's
//! stack) loads each cell it works on again for every instruction: `+++`
//! loads the cell, adds one and stores it, three times, each load reading
//! what the store before it wrote.
//!
//! A place is a base value, an offset and a type. An address that is a base
//! plus a constant (`add.ptr base, k`) is that base with `k` added to the
//! offset, first: two addresses computed apart name one place. Walking each
//! block forwards, the pass knows the value of every place loaded or stored
//! since the last operation that may have written memory:
//! - a store forgets the places of its base that it overlaps, and the places
//!   of every other base (two bases may be one address), then knows its own;
//! - a call forgets everything (Rust's code may write anything);
//! - nothing else writes memory.
//!
//! A load of a known place with the place's type becomes the known value:
//! its uses are renamed (the value is defined earlier in the block, so it
//! dominates them), and the load goes. A bounds check goes when an earlier
//! check of the block had the same length and the same index, or constant
//! indices of which this one is not the larger: that check passed, so this
//! one would. Branches say as much: a block entered only from a branch on
//! an unsigned comparison knows it held (or failed) there, so `get(i)`'s
//! test `i < len` implies the indexing's check of `i` after it, and a
//! `pop` that found `len != 0` implies the check of `len - 1`. What is
//! known of lengths: at least a constant (`len > 0`, a passed check of
//! `len - k` or of a constant), against which `len - k` and constants are
//! checked. A constant the block made already, or an operation on values
//! it computed already, with no call since, is that value too: an
//! interpreter makes its `1` anew for each `+`, and the address of
//! `tape[ptr]` for each access, which must be one value for its loads to
//! name one place. Nothing moves, so the function leaves where and how it
//! did (an operation that may leave, computed again, would not leave the
//! second time).
//!
//! A branch decides a flag, too: where a block is entered only from a
//! branch on a `bool` `c` (or on `cast(c)` compared with 0 or 1), a wrapping
//! `x - cast(c)` or `x + cast(c)` computed in the block before is `x - 1` or
//! `x + 1` where `c` held and `x` where it did not. A `pop` of a `Vec` of
//! scalars computes its new length `len - cast(len != 0)` without a branch,
//! before the interpreter tests its flag: past that test the block computes
//! `len - 1` anew and uses it instead (in what it knows of memory too), so
//! that the next `pop` does not wait for this one's comparison and cast.
//!
//! Last, wrapping additions and subtractions of constants in a row fold into
//! one (`+++` on a cell is one addition of 3 once its loads are forwarded),
//! and the walk runs again when they did, since the sums may be values
//! computed already.

use rustc_hash::FxHashMap;

use crate::ir::builder::Val;
use crate::ir::function::{Inst, Label, ResidualFunction, Terminator};
use crate::ir::ops::{BinOp, CmpOp, Overflow, UnOp, ValTy};
use crate::ir::passes::ValMap;

/// What a point of a block knows: places of memory and their values, the
/// bounds checks passed, the constants made.
#[derive(Clone, Default)]
struct Memory {
    known: Vec<Known>,
    checks: Vec<(Val, Val)>,
    /// Unsigned values known to be at least a constant.
    at_least: Vec<(Val, u64)>,
    constants: FxHashMap<(ValTy, u64), Val>,
    computed: FxHashMap<Pure, Val>,
}

/// An operation on values alone, as a key: equal keys compute equal values
/// (and one that may leave did not, if an equal one before it did not).
#[derive(Clone, PartialEq, Eq, Hash)]
enum Pure {
    Bin(BinOp, ValTy, Overflow, Val, Val),
    Un(UnOp, ValTy, Overflow, Val),
    Cmp(CmpOp, ValTy, Val, Val),
    Cast(ValTy, ValTy, Val),
}

/// A place of memory whose value is known.
#[derive(Clone)]
struct Known {
    base: Val,
    offset: i32,
    ty: ValTy,
    value: Val,
}

/// Whether the operation `key` defining `dst` was computed before: then
/// `dst` is that value (in `same`) and the operation goes (`keep`).
fn computed_before(
    computed: &mut FxHashMap<Pure, Val>,
    same: &mut ValMap<Val>,
    key: Pure,
    dst: Val,
    keep: &mut bool,
) -> bool {
    match computed.get(&key) {
        Some(v) => {
            same.insert(dst, *v);
            *keep = false;
            true
        }
        None => {
            computed.insert(key, dst);
            false
        }
    }
}

/// What the values a block has seen defined say of bounds: which checks a
/// branch taken or a check passed implies.
struct Facts<'a> {
    consts: &'a ValMap<u64>,
    defs: &'a ValMap<Pure>,
}

impl Facts<'_> {
    /// `x - k` for a constant `k` (a subtraction, or a wrapping addition of
    /// `-k`): `(x, k)`.
    fn step_below(&self, v: Val) -> Option<(Val, u64)> {
        match self.defs.get(&v)? {
            Pure::Bin(BinOp::Sub, ty, _, x, k) if *ty == ValTy::U64 => Some((*x, *self.consts.get(k)?)),
            Pure::Bin(BinOp::Add, ty, Overflow::Wrap, x, k) if *ty == ValTy::U64 => {
                Some((*x, self.consts.get(k)?.wrapping_neg()))
            }
            _ => None,
        }
    }

    /// Whether a bounds check of `index` against `len` cannot fail where
    /// the `checks` passed and the values of `at_least` are at least their
    /// bound: the same check passed, or one of a larger constant index;
    /// `len` is above a constant index, or at least the `k` that `index`
    /// is `len - k` for.
    fn implied(&self, index: Val, len: Val, checks: &[(Val, Val)], at_least: &[(Val, u64)]) -> bool {
        let c = self.consts.get(&index);
        let by_check = checks.iter().any(|&(i, l)| {
            l == len && (i == index || matches!((self.consts.get(&i), c), (Some(a), Some(b)) if b <= a))
        });
        let min = at_least.iter().filter(|(v, _)| *v == len).map(|(_, m)| *m).max().unwrap_or(0);
        by_check
            || c.is_some_and(|c| *c < min)
            || self.step_below(index).is_some_and(|(x, k)| x == len && 1 <= k && k <= min)
    }

    /// Records that `index < len` holds (a check passed, or a branch taken
    /// on it): `len` is at least 1; where `index` is `len - k`, at least
    /// `k`; where it is a constant `c`, at least `c + 1`.
    fn passed(&self, index: Val, len: Val, checks: &mut Vec<(Val, Val)>, at_least: &mut Vec<(Val, u64)>) {
        checks.push((index, len));
        at_least.push((len, 1));
        if let Some((x, k)) = self.step_below(index).filter(|(x, k)| *x == len && *k >= 1) {
            at_least.push((x, k));
        }
        if let Some(c) = self.consts.get(&index).and_then(|c| c.checked_add(1)) {
            at_least.push((len, c));
        }
    }

    /// The booleans a branch on `cond` that went the way of `taken`
    /// decides: `cond` itself, and what it tests, seen through a `bool`
    /// cast compared with 0 or 1 (`cast(c) == 1`, `cast(c) != 0`: `c`;
    /// `cast(c) == 0`: not `c`), innermost last.
    fn decided(&self, mut cond: Val, mut taken: bool) -> Vec<(Val, bool)> {
        let mut out = vec![(cond, taken)];
        for _ in 0..4 {
            let Some(Pure::Cmp(op @ (CmpOp::Eq | CmpOp::Ne), _, x, k)) = self.defs.get(&cond) else { break };
            let (Some(Pure::Cast(ValTy::Bool, _, c)), Some(k)) = (self.defs.get(x), self.consts.get(k)) else { break };
            match (op, k) {
                (CmpOp::Eq, 1) | (CmpOp::Ne, 0) => cond = *c,
                (CmpOp::Eq, 0) | (CmpOp::Ne, 1) => (cond, taken) = (*c, !taken),
                _ => break,
            }
            out.push((cond, taken));
        }
        out
    }

    /// Records what a branch says of `cond` where it decided it was
    /// `taken`: unsigned comparisons of two values or of a value with a
    /// constant (`cond` the innermost of [`Facts::decided`]).
    fn of_branch(&self, cond: Val, taken: bool, checks: &mut Vec<(Val, Val)>, at_least: &mut Vec<(Val, u64)>) {
        let unsigned = |ty: &ValTy| matches!(ty, ValTy::Int { signed: false, .. });
        let Some(Pure::Cmp(op, ty, a, b)) = self.defs.get(&cond) else { return };
        if !unsigned(ty) {
            return;
        }
        let op = if taken { *op } else { op.negated() };
        let (ka, kb) = (self.consts.get(a).copied(), self.consts.get(b).copied());
        match op {
            CmpOp::Lt => self.passed(*a, *b, checks, at_least),
            CmpOp::Gt => self.passed(*b, *a, checks, at_least),
            CmpOp::Le => at_least.extend(ka.map(|k| (*b, k))),
            CmpOp::Ge => at_least.extend(kb.map(|k| (*a, k))),
            CmpOp::Ne if kb == Some(0) => at_least.push((*a, 1)),
            CmpOp::Ne if ka == Some(0) => at_least.push((*b, 1)),
            _ => {}
        }
    }
}

/// `v` as the walk renamed it: a load to the value it reads, then a step
/// by a flag the block knows to its value there.
fn renamed(same: &ValMap<Val>, local: &[(Val, Val)], v: Val) -> Val {
    let v = same.get(&v).copied().unwrap_or(v);
    local_of(local, v)
}

/// What a step by a flag the block knows (`local`) renames `v` to.
fn local_of(local: &[(Val, Val)], v: Val) -> Val {
    local.iter().find(|(n, _)| *n == v).map_or(v, |(_, x)| *x)
}

/// The `bool` that `v` is the cast of, to the integer type `ty`.
fn flag_of(defs: &ValMap<Pure>, v: Val, ty: ValTy) -> Option<Val> {
    match defs.get(&v)? {
        Pure::Cast(ValTy::Bool, to, c) if *to == ty => Some(*c),
        _ => None,
    }
}

/// The flag of a step by a flag: a wrapping `x + cast(c)`, `cast(c) + x`
/// or `x - cast(c)` of integers.
fn flag_of_step(defs: &ValMap<Pure>, key: &Pure) -> Option<Val> {
    let Pure::Bin(op, ty, Overflow::Wrap, a, b) = key else { return None };
    if !ty.is_int() {
        return None;
    }
    match op {
        BinOp::Sub => flag_of(defs, *b, *ty),
        BinOp::Add => flag_of(defs, *b, *ty).or_else(|| flag_of(defs, *a, *ty)),
        _ => None,
    }
}

/// Whether the bytes at `a` (`an` of them) and at `b` (`bn`) overlap.
fn overlap(a: i32, an: u32, b: i32, bn: u32) -> bool {
    (a as i64) < b as i64 + bn as i64 && (b as i64) < a as i64 + an as i64
}

impl ResidualFunction {
    /// Folds constant offsets into addresses, forwards what a block already
    /// knows of memory to its loads, and drops the bounds checks earlier ones
    /// imply (see the module doc); whether it changed anything.
    pub fn forward_memory(&mut self) -> bool {
        let mut changed = self.fold_address_offsets();
        changed |= self.forward_blocks();
        // Loads forwarded, steps on a cell (`+++`) follow one another; the
        // sums they fold into may be values computed already.
        if self.fold_constant_steps() {
            self.forward_blocks();
            changed = true;
        }
        changed
    }

    /// The walk of [`ResidualFunction::forward_memory`] over the blocks;
    /// whether it changed anything.
    fn forward_blocks(&mut self) -> bool {
        let mut changed = false;
        let mut consts: ValMap<u64> = ValMap::for_values_of(self);
        for i in self.blocks.values().flat_map(|b| b.insts.iter()) {
            if let Inst::Const { dst, bits, .. } = i {
                consts.insert(*dst, *bits);
            }
        }
        // Blocks entered only from the end of one other: they start knowing
        // what it knew at its end.
        let mut preds: FxHashMap<Label, Vec<Label>> = FxHashMap::default();
        for (b, blk) in self.blocks.iter() {
            for t in blk.term.iter().flat_map(|t| t.targets()) {
                preds.entry(t).or_default().push(b);
            }
        }
        let order = self.blocks_in_dominance_order();
        // A block's only predecessor, where it starts knowing what that one
        // knew; per block, how many successors start so (the last takes
        // what it knew, the others a copy, so that a chain of blocks copies
        // nothing).
        let only_pred = |b: Label| match preds.get(&b).map(Vec::as_slice) {
            Some([p]) if b != Label::ENTRY && !self.reentries.contains(&b) => Some(*p),
            _ => None,
        };
        let mut heirs: FxHashMap<Label, usize> = FxHashMap::default();
        for &b in &order {
            if let Some(p) = only_pred(b) {
                *heirs.entry(p).or_default() += 1;
            }
        }
        let only_preds: Vec<Option<Label>> = order.iter().map(|&b| only_pred(b)).collect();
        let mut at_end: FxHashMap<Label, (Memory, usize)> = FxHashMap::default();
        // Loads renamed to the value they read.
        let mut same: ValMap<Val> = ValMap::for_values_of(self);
        // What the walk has seen define values (with their uses renamed):
        // the conditions of branches and the indices of bounds checks.
        let mut defs: ValMap<Pure> = ValMap::for_values_of(self);
        // Steps by a flag: `x ± cast(c)` of a `bool` `c`, by `c`, with the
        // block that computes them.
        let mut flag_steps: ValMap<Vec<(Val, Label)>> = ValMap::default();
        for (b, only_pred) in order.into_iter().zip(only_preds) {
            let inherited = only_pred.and_then(|p| {
                let (_, left) = at_end.get_mut(&p)?;
                *left -= 1;
                if *left == 0 {
                    at_end.remove(&p).map(|(m, _)| m)
                } else {
                    at_end.get(&p).map(|(m, _)| m.clone())
                }
            });
            let Memory { mut known, mut checks, mut at_least, mut constants, mut computed } =
                inherited.unwrap_or_default();
            // Steps by a flag the branch into the block decided, known
            // anew here (see `ResidualFunction::decided_steps`).
            // (Few or none: a list, not a map made for each block.)
            let mut local: Vec<(Val, Val)> = vec![];
            let mut prelude = vec![];
            if let (Some(p), Some(Terminator::Branch { cond, if_true, if_false })) =
                (only_pred, only_pred.and_then(|p| self.blocks[p].term.as_ref()))
            {
                if if_true.0 != if_false.0 {
                    let facts = Facts { consts: &consts, defs: &defs };
                    let decided = facts.decided(*cond, b == if_true.0);
                    let &(innermost, taken) = decided.last().expect("the condition itself");
                    facts.of_branch(innermost, taken, &mut checks, &mut at_least);
                    let steps = Self::decided_steps(&decided, p, &flag_steps, &defs);
                    for (n, x, op, ty, flag) in steps {
                        if !known.iter().any(|k| k.value == n) && !self.blocks[b].uses(n) {
                            continue;
                        }
                        if !flag {
                            local.push((n, x));
                            continue;
                        }
                        // (The walk below keeps one constant of each.)
                        let one = match constants.get(&(ty, 1)) {
                            Some(v) => *v,
                            None => {
                                let v = self.vals.push(ty);
                                prelude.push(Inst::Const { dst: v, ty, bits: 1 });
                                v
                            }
                        };
                        let dst = self.vals.push(ty);
                        prelude.push(Inst::Bin { dst, op, ty, ov: Overflow::Wrap, a: x, b: one });
                        local.push((n, dst));
                    }
                }
            }
            if !local.is_empty() {
                changed = true;
                for k in &mut known {
                    k.value = local_of(&local, k.value);
                }
            }
            let here = b;
            let vals = &self.vals;
            let blk = &mut self.blocks[b];
            blk.insts.splice(0..0, prelude);
            let mut keep = vec![true; blk.insts.len()];
            for (k, i) in blk.insts.iter_mut().enumerate() {
                i.map_uses(&|v| renamed(&same, &local, v));
                match i {
                    Inst::Load { dst, ty, base, offset } => {
                        match known.iter().find(|p| p.base == *base && p.offset == *offset && p.ty == *ty) {
                            Some(p) => {
                                same.insert(*dst, p.value);
                                keep[k] = false;
                                changed = true;
                            }
                            None => known.push(Known { base: *base, offset: *offset, ty: *ty, value: *dst }),
                        }
                    }
                    Inst::Store { ty, base, offset, value } => {
                        // (As many bytes as the wider of the two types: the
                        // backend stores the value as it is.)
                        let size = ty.bits().max(vals[*value].bits()) / 8;
                        known.retain(|p| p.base == *base && !overlap(p.offset, p.ty.bits() / 8, *offset, size));
                        if vals[*value] == *ty {
                            known.push(Known { base: *base, offset: *offset, ty: *ty, value: *value });
                        }
                    }
                    Inst::BoundsCheck { index, len } => {
                        let facts = Facts { consts: &consts, defs: &defs };
                        if facts.implied(*index, *len, &checks, &at_least) {
                            keep[k] = false;
                            changed = true;
                        } else {
                            facts.passed(*index, *len, &mut checks, &mut at_least);
                        }
                    }
                    // (A constant kept across a call would take a register
                    // the call saves or a spill; made again after it, it
                    // costs an instruction.)
                    Inst::Call { .. } | Inst::CallCode { .. } => {
                        known.clear();
                        constants.clear();
                        computed.clear();
                    }
                    Inst::Const { dst, ty, bits } => match constants.get(&(*ty, *bits)) {
                        Some(v) => {
                            same.insert(*dst, *v);
                            keep[k] = false;
                            changed = true;
                        }
                        None => {
                            constants.insert((*ty, *bits), *dst);
                        }
                    },
                    Inst::Bin { dst, op, ty, ov, a, b } => {
                        let key = Pure::Bin(*op, *ty, *ov, *a, *b);
                        if let Some(flag) = flag_of_step(&defs, &key) {
                            flag_steps.entry_or_default(flag).push((*dst, here));
                        }
                        defs.insert(*dst, key.clone());
                        changed |= computed_before(&mut computed, &mut same, key, *dst, &mut keep[k]);
                    }
                    Inst::Un { dst, op, ty, ov, a } => {
                        let key = Pure::Un(*op, *ty, *ov, *a);
                        changed |= computed_before(&mut computed, &mut same, key, *dst, &mut keep[k]);
                    }
                    Inst::Cmp { dst, op, ty, a, b } => {
                        let key = Pure::Cmp(*op, *ty, *a, *b);
                        defs.insert(*dst, key.clone());
                        changed |= computed_before(&mut computed, &mut same, key, *dst, &mut keep[k]);
                    }
                    Inst::Cast { dst, from, to, a } => {
                        let key = Pure::Cast(*from, *to, *a);
                        defs.insert(*dst, key.clone());
                        changed |= computed_before(&mut computed, &mut same, key, *dst, &mut keep[k]);
                    }
                }
            }
            if let Some(t) = &mut blk.term {
                t.map_uses(&|v| renamed(&same, &local, v));
            }
            let mut k = 0;
            blk.insts.retain(|_| {
                k += 1;
                keep[k - 1]
            });
            if let Some(&n) = heirs.get(&b) {
                at_end.insert(b, (Memory { known, checks, at_least, constants, computed }, n));
            }
        }
        if !same.is_empty() {
            // Uses in blocks walked before the load's own.
            for blk in self.blocks.values_mut() {
                for i in &mut blk.insts {
                    i.map_uses(&|v| same.get(&v).copied().unwrap_or(v));
                }
                if let Some(t) = &mut blk.term {
                    t.map_uses(&|v| same.get(&v).copied().unwrap_or(v));
                }
            }
        }
        changed
    }

    /// Of the steps by a flag (`n = x ± cast(c)`) that `pred` computes, those
    /// whose flag `c` a branch decided (`decided`): `(n, x, op, type, c)`.
    /// Where `c` holds, `n` is `x ± 1`, which does not wait for `c`: a
    /// `pop`'s new length is `len - cast(len != 0)`, computed without a
    /// branch before the interpreter tests the flag, and the next `pop`
    /// after that test would wait for the comparison, the cast and the
    /// subtraction of this one.
    fn decided_steps(
        decided: &[(Val, bool)],
        pred: Label,
        flag_steps: &ValMap<Vec<(Val, Label)>>,
        defs: &ValMap<Pure>,
    ) -> Vec<(Val, Val, BinOp, ValTy, bool)> {
        let mut out = vec![];
        for (c, holds) in decided {
            for (n, at) in flag_steps.get(c).map(Vec::as_slice).unwrap_or(&[]) {
                let Some(Pure::Bin(op, ty, _, a, b)) = defs.get(n) else { continue };
                if *at != pred {
                    continue;
                }
                // The operand that is not the flag's cast.
                let x = if flag_of(defs, *b, *ty) == Some(*c) { *a } else { *b };
                out.push((*n, x, *op, *ty, *holds));
            }
        }
        out
    }

    /// Wrapping additions and subtractions of constants in a row are one:
    /// `x + 1`, then that `+ 1`, is `x + 2` (`+++` on a tape cell, a
    /// hundred of them in a row in a Brainfuck loop's body). The steps in
    /// between stay until nothing uses them (the `dead` pass). Wrapping
    /// arithmetic only: modulo the type's width, the sum is exact. Whether
    /// any changed.
    fn fold_constant_steps(&mut self) -> bool {
        let mut consts: ValMap<u64> = ValMap::for_values_of(self);
        // Values that are another value plus a constant (modulo the width).
        let mut steps: ValMap<(Val, u64)> = ValMap::for_values_of(self);
        let mut changed = false;
        for l in self.blocks_in_dominance_order() {
            let insts = std::mem::take(&mut self.blocks[l].insts);
            let mut out = Vec::with_capacity(insts.len());
            for i in insts {
                let step = match &i {
                    Inst::Const { dst, bits, .. } => {
                        consts.insert(*dst, *bits);
                        None
                    }
                    Inst::Bin { dst, op, ty, ov: Overflow::Wrap, a, b } if ty.is_int() => {
                        match (op, consts.get(a), consts.get(b)) {
                            (BinOp::Add, None, Some(k)) => Some((*dst, *ty, *a, *k)),
                            (BinOp::Add, Some(k), None) => Some((*dst, *ty, *b, *k)),
                            (BinOp::Sub, None, Some(k)) => Some((*dst, *ty, *a, k.wrapping_neg())),
                            _ => None,
                        }
                    }
                    _ => None,
                };
                let Some((dst, ty, x, k)) = step else {
                    out.push(i);
                    continue;
                };
                match steps.get(&x).copied().filter(|(root, _)| self.vals[*root] == ty) {
                    Some((root, k0)) => {
                        let sum = ty.canon(k0.wrapping_add(k));
                        let c = self.vals.push(ty);
                        consts.insert(c, sum);
                        out.push(Inst::Const { dst: c, ty, bits: sum });
                        out.push(Inst::Bin { dst, op: BinOp::Add, ty, ov: Overflow::Wrap, a: root, b: c });
                        steps.insert(dst, (root, sum));
                        changed = true;
                    }
                    None => {
                        steps.insert(dst, (x, ty.canon(k)));
                        out.push(i);
                    }
                }
            }
            self.blocks[l].insts = out;
        }
        changed
    }

    /// Loads and stores at `add.ptr base, k` (wrapping, `k` a constant)
    /// address `base` at `offset + k` instead, where that fits; whether any
    /// changed.
    fn fold_address_offsets(&mut self) -> bool {
        let mut consts: ValMap<u64> = ValMap::for_values_of(self);
        // Address values that are another value plus a constant.
        let mut plus: ValMap<(Val, i64)> = ValMap::for_values_of(self);
        for blk in self.blocks.values() {
            for i in &blk.insts {
                match i {
                    Inst::Const { dst, bits, .. } => {
                        consts.insert(*dst, *bits);
                    }
                    Inst::Bin { dst, op: BinOp::Add, ty: ValTy::Ptr, ov: Overflow::Wrap, a, b } => {
                        let k = consts.get(b).map(|k| (*a, *k)).or_else(|| consts.get(a).map(|k| (*b, *k)));
                        if let Some((base, k)) = k {
                            let (root, k0) = plus.get(&base).copied().unwrap_or((base, 0));
                            plus.insert(*dst, (root, k0.wrapping_add(k as i64)));
                        }
                    }
                    _ => {}
                }
            }
        }
        let mut changed = false;
        for blk in self.blocks.values_mut() {
            for i in &mut blk.insts {
                if let Inst::Load { base, offset, .. } | Inst::Store { base, offset, .. } = i {
                    if let Some(&(root, k)) = plus.get(base) {
                        if let Ok(o) = i32::try_from(*offset as i64 + k) {
                            (*base, *offset) = (root, o);
                            changed = true;
                        }
                    }
                }
            }
        }
        changed
    }
}

//! A place of memory that a loop of one block works on, kept in a register
//! from the loop's second turn on (scalar promotion, as LuaJIT's loop
//! optimization and PyPy's unrolled loops keep a heap field in a register).
//!
//! A Brainfuck `[-]` runs one block per turn: it checks the tape's index,
//! loads the cell, subtracts one, stores it, and branches on it; each turn's
//! load reads the store before it. Where a block `B` branches back to
//! itself and every load and store in it names one place (a base value that
//! does not change around the loop, an offset and a type), the pass gives
//! the back edge a copy `B'` of the block that:
//! - takes the place's value as one more parameter, and passes the value
//!   it would have stored on its own back edge;
//! - has no load or store of it (a load is the value carried, a store
//!   changes the value carried);
//! - stores the value carried on each edge that leaves the loop, in a block
//!   of its own before the edge's target;
//! - reuses what `B` computed from values that do not change around the
//!   loop (the place's address) and drops its bounds checks on them: `B`
//!   ran them on the same values.
//!
//! `B` stays the loop's first turn (its entry from elsewhere, a reentry
//! included), and its back edge goes to `B'` with the place's value at its
//! end. Nothing else reads or writes memory between the turns, so memory
//! holds what the interpreter would have stored once the loop leaves.
//!
//! What the pass leaves alone: a block that calls anything, loads or stores
//! another place (another base may be the same address), may leave through
//! an error in mid-turn (a bounds check or checked arithmetic on values that
//! change, a division: memory would miss the stores sunk to the loop's exits), or whose
//! values are used by other blocks other than through its edges.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::ir::function::{Inst, Label, PrimaryMap, RBlock, ResidualFunction, Terminator, Val};
use crate::ir::ops::{BinOp, Overflow, ValTy};

/// The place a loop works on: base, offset and type.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Place {
    base: Val,
    offset: i32,
    ty: ValTy,
}

impl ResidualFunction {
    /// Keeps in a register the place of memory that a loop of one block
    /// loads and stores (see the module doc); whether it changed anything.
    pub fn keep_loop_places(&mut self) -> bool {
        let loops: Vec<Label> = self
            .live_blocks()
            .filter(|(b, blk)| {
                *b != Label::ENTRY
                    && matches!(&blk.term, Some(Terminator::Branch { if_true, if_false, .. })
                        if (if_true.0 == *b) != (if_false.0 == *b))
            })
            .map(|(b, _)| b)
            .collect();
        let mut changed = false;
        for b in loops {
            changed |= self.keep_place_of(b);
        }
        changed
    }

    /// [`ResidualFunction::keep_loop_places`] for the loop of block `b`.
    fn keep_place_of(&mut self, b: Label) -> bool {
        let blk = &self.blocks[b];
        let Some(Terminator::Branch { cond, if_true, if_false }) = blk.term.clone() else { return false };
        let back_true = if_true.0 == b;
        let (back, exit) = if back_true { (&if_true, &if_false) } else { (&if_false, &if_true) };
        // Values the same in every turn: parameters passed back unchanged,
        // values from outside, and pure operations on those.
        let mut same: FxHashSet<Val> = FxHashSet::default();
        for (p, a) in blk.params.iter().zip(&back.1) {
            if p == a {
                same.insert(*p);
            }
        }
        let params: FxHashSet<Val> = blk.params.iter().copied().collect();
        let defs: FxHashSet<Val> = blk.insts.iter().flat_map(Inst::defs).copied().collect();
        let outside = |v: &Val| !params.contains(v) && !defs.contains(v);
        let mut place: Option<Place> = None;
        for i in &blk.insts {
            let mut uses = vec![];
            i.for_each_use(&mut |v| uses.push(v));
            let invariant = uses.iter().all(|v| same.contains(v) || outside(v));
            match i {
                Inst::Const { dst, .. } => {
                    same.insert(*dst);
                }
                Inst::Bin { dst, ov, .. } | Inst::Un { dst, ov, .. } => {
                    // Checked arithmetic, and a division (by zero), may leave.
                    let may_leave =
                        *ov == Overflow::Check || matches!(i, Inst::Bin { op: BinOp::Div | BinOp::Rem, .. });
                    if invariant {
                        same.insert(*dst);
                    } else if may_leave {
                        return false;
                    }
                }
                Inst::Cmp { dst, .. } | Inst::Cast { dst, .. } => {
                    if invariant {
                        same.insert(*dst);
                    }
                }
                Inst::BoundsCheck { .. } if invariant => {}
                Inst::Load { base, offset, ty, .. } | Inst::Store { base, offset, ty, .. } => {
                    let here = Place { base: *base, offset: *offset, ty: *ty };
                    if !(same.contains(base) || outside(base)) || place.is_some_and(|p| p != here) {
                        return false;
                    }
                    if let Inst::Store { value, .. } = i {
                        if self.vals[*value] != *ty {
                            return false;
                        }
                    }
                    place = Some(here);
                }
                Inst::BoundsCheck { .. } | Inst::Call { .. } | Inst::CallCode { .. } => return false,
            }
        }
        let Some(place) = place else { return false };
        // The block's own values, other than those the same in every turn,
        // must not be used elsewhere: from `B'`'s exits they would be the
        // first turn's.
        let changing: Vec<Val> = blk
            .params
            .iter()
            .chain(blk.insts.iter().flat_map(Inst::defs))
            .filter(|v| !same.contains(v))
            .copied()
            .collect();
        if !self.users_outside(b, &changing).is_empty() {
            return false;
        }
        // The place's value at the end of the first turn: what was last
        // stored or loaded.
        let at_end = blk.insts.iter().rev().find_map(|i| match i {
            Inst::Store { value, .. } => Some(*value),
            Inst::Load { dst, .. } => Some(*dst),
            _ => None,
        });
        let Some(at_end) = at_end else { return false };

        // The copy, for the turns after the first.
        let (insts, params) = (blk.insts.clone(), blk.params.clone());
        let mut map: FxHashMap<Val, Val> = FxHashMap::default();
        let fresh = |d: Val, map: &mut FxHashMap<Val, Val>, vals: &mut PrimaryMap<Val, ValTy>| {
            let f = vals.push(vals[d]);
            map.insert(d, f);
            f
        };
        // Parameters the same in every turn are `B`'s, which dominates the
        // copy: the copy takes only the others.
        let moving: Vec<bool> = params.iter().map(|p| !same.contains(p)).collect();
        let mut copy_params: Vec<Val> = vec![];
        for p in params.iter().filter(|p| !same.contains(p)) {
            copy_params.push(fresh(*p, &mut map, &mut self.vals));
        }
        let carried = self.vals.push(place.ty);
        copy_params.push(carried);
        let mut now = carried;
        let mut copy_insts = vec![];
        for mut i in insts {
            let defined = i.defs().first().copied();
            if defined.is_some_and(|d| same.contains(&d)) {
                continue;
            }
            match i {
                Inst::BoundsCheck { .. } => continue,
                Inst::Load { dst, .. } => {
                    map.insert(dst, now);
                    continue;
                }
                Inst::Store { value, .. } => {
                    now = map.get(&value).copied().unwrap_or(value);
                    continue;
                }
                _ => {}
            }
            i.map_uses(&|v| map.get(&v).copied().unwrap_or(v));
            i.map_defs(&mut |d| fresh(d, &mut map, &mut self.vals));
            copy_insts.push(i);
        }
        let rename = |v: &Val| map.get(v).copied().unwrap_or(*v);
        let copy = self.blocks.push(RBlock::default());
        let moving_args =
            |args: &[Val]| -> Vec<Val> { args.iter().zip(&moving).filter(|(_, m)| **m).map(|(a, _)| *a).collect() };
        let mut back_args: Vec<Val> = moving_args(&back.1).iter().map(rename).collect();
        back_args.push(now);
        let leave = self.blocks.push(RBlock {
            params: vec![],
            insts: vec![Inst::Store { ty: place.ty, base: place.base, offset: place.offset, value: now }],
            term: Some(Terminator::Jump(exit.0, exit.1.iter().map(rename).collect())),
        });
        let (t, f) = ((copy, back_args), (leave, vec![]));
        let (if_true, if_false) = if back_true { (t, f) } else { (f, t) };
        self.blocks[copy] = RBlock {
            params: copy_params,
            insts: copy_insts,
            term: Some(Terminator::Branch { cond: rename(&cond), if_true, if_false }),
        };
        // The first turn goes on in the copy.
        let mut first_back = moving_args(&back.1);
        first_back.push(at_end);
        if let Some(Terminator::Branch { if_true, if_false, .. }) = &mut self.blocks[b].term {
            let side = if back_true { if_true } else { if_false };
            *side = (copy, first_back);
        }
        true
    }
}

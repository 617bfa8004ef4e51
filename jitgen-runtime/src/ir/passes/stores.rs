//! Overwritten stores: a store whose bytes a later store of its block
//! writes again, with nothing in between that could read memory or leave
//! the function, is dropped.
//!
//! An interpreter's `Vec` worked on in place stores its length at every
//! push and pop (`JitState::vec_push`, `vec_pop`): a binary operation of a
//! stack VM stored it three times where the last store is all anyone can
//! see. Between the two stores there may be only operations that neither
//! read memory nor leave: constants, comparisons, casts and wrapping
//! arithmetic, and stores (to other addresses, or to the same one again).
//! A load, a call, a bounds check, checked arithmetic, a division or the
//! block's end keeps every store before it, so what the interpreter or a
//! callback can see at any exit is what it would have seen.

use crate::ir::builder::Val;
use crate::ir::function::{Inst, ResidualFunction};
use crate::ir::ops::{BinOp, Overflow};

impl ResidualFunction {
    /// Drops the stores a later store of the same block overwrites before
    /// anything could see them (see the module doc); whether it dropped any.
    pub fn drop_overwritten_stores(&mut self) -> bool {
        let mut changed = false;
        for blk in self.blocks.values_mut() {
            // Walking backwards: the places stored to since the last
            // operation that could see memory.
            let mut covered: Vec<(Val, i32, u32)> = vec![];
            let mut keep = vec![true; blk.insts.len()];
            for (k, i) in blk.insts.iter().enumerate().rev() {
                match i {
                    Inst::Store { ty, base, offset, .. } => {
                        let size = ty.bits() / 8;
                        if covered
                            .iter()
                            .any(|&(b, o, s)| b == *base && o <= *offset && *offset + size as i32 <= o + s as i32)
                        {
                            keep[k] = false;
                            changed = true;
                        } else {
                            covered.push((*base, *offset, size));
                        }
                    }
                    Inst::Const { .. } | Inst::Cmp { .. } | Inst::Cast { .. } => {}
                    Inst::Bin { op, ov, .. } if *ov == Overflow::Wrap && !matches!(op, BinOp::Div | BinOp::Rem) => {}
                    Inst::Un { ov, .. } if *ov == Overflow::Wrap => {}
                    _ => covered.clear(),
                }
            }
            let mut k = 0;
            blk.insts.retain(|_| {
                k += 1;
                keep[k - 1]
            });
        }
        changed
    }
}

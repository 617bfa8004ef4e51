//! Dead values: operations without effects whose results nothing uses are
//! dropped, until none is left.
//!
//! Without effects: constants, comparisons, casts, arithmetic that cannot
//! leave through an error exit, loads, and pure calls (`call.pure`). A load
//! of residual code reads memory that is there (a `Vec`'s words after its
//! bounds check, an object's fields, the runtime's own words), so one whose
//! value is unused only costs a memory access; Cranelift keeps such loads
//! (they are not pure for its mid-end). They come from the red operations
//! of an extension whose results the compile-time state made useless: a
//! header read for a `Vec` whose element was then found among the facts;
//! so does the count of the interpreter's saved frames on the continuation
//! stack (a pure call) computed for `frames.last()` where the last frame
//! was virtual.

use rustc_hash::FxHashSet;

use crate::ir::builder::Val;
use crate::ir::function::{Inst, ResidualFunction};
use crate::ir::ops::{BinOp, Overflow};

/// Whether `i` may be dropped when its results are unused.
fn without_effects(i: &Inst) -> bool {
    match i {
        Inst::Const { .. } | Inst::Cmp { .. } | Inst::Cast { .. } | Inst::Load { .. } => true,
        Inst::Bin { op, ov, .. } => *ov == Overflow::Wrap && !matches!(op, BinOp::Div | BinOp::Rem),
        Inst::Un { ov, .. } => *ov == Overflow::Wrap,
        Inst::Call { pure, .. } => *pure,
        Inst::Store { .. } | Inst::BoundsCheck { .. } | Inst::CallCode { .. } => false,
    }
}

impl ResidualFunction {
    /// Drops the operations without effects whose values nothing uses (see
    /// the module doc); whether it dropped any.
    pub fn drop_dead_values(&mut self) -> bool {
        let mut changed = false;
        loop {
            let mut used: FxHashSet<Val> = FxHashSet::default();
            let mut note = |v: Val| {
                used.insert(v);
            };
            for blk in self.blocks.values() {
                blk.insts.iter().for_each(|i| i.for_each_use(&mut note));
                blk.term.iter().for_each(|t| t.for_each_use(&mut note));
            }
            let mut dropped = false;
            for blk in self.blocks.values_mut() {
                let before = blk.insts.len();
                blk.insts.retain(|i| !without_effects(i) || i.defs().iter().any(|d| used.contains(d)));
                dropped |= blk.insts.len() != before;
            }
            if !dropped {
                return changed;
            }
            changed = true;
        }
    }
}

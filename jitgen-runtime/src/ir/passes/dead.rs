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
use crate::ir::function::{Inst, Label, ResidualFunction, SecondaryMap};
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
    ///
    /// Uses are counted once; dropping an operation takes its uses off its
    /// operands' counts, and an operand's defining operation whose values
    /// are then all unused is dropped in turn (a worklist: a chain of dead
    /// values costs its length, not a pass over the function per link).
    pub fn drop_dead_values(&mut self) -> bool {
        let mut uses: SecondaryMap<Val, u32> = crate::ir::function::dense_for(self);
        // Where each operation without effects is (its block and index),
        // by the values it defines; all of them are the worklist's start.
        let mut def_at: SecondaryMap<Val, Option<(Label, u32)>> = crate::ir::function::dense_for(self);
        let mut work: Vec<(Label, u32)> = vec![];
        for (l, blk) in self.blocks.iter() {
            let mut note = |v: Val| uses[v] += 1;
            blk.insts.iter().for_each(|i| i.for_each_use(&mut note));
            blk.term.iter().for_each(|t| t.for_each_use(&mut note));
            for (k, i) in blk.insts.iter().enumerate() {
                if without_effects(i) {
                    for &d in i.defs() {
                        def_at[d] = Some((l, k as u32));
                    }
                    work.push((l, k as u32));
                }
            }
        }
        // Counts only go down, so an operation found used now may be
        // dropped later: it is pushed again when its last use goes.
        let mut dead: FxHashSet<(Label, u32)> = FxHashSet::default();
        while let Some((l, k)) = work.pop() {
            let i = &self.blocks[l].insts[k as usize];
            if dead.contains(&(l, k)) || !i.defs().iter().all(|d| uses[*d] == 0) {
                continue;
            }
            dead.insert((l, k));
            i.for_each_use(&mut |v| {
                uses[v] -= 1;
                if let (0, Some(at)) = (uses[v], def_at[v]) {
                    work.push(at);
                }
            });
        }
        if dead.is_empty() {
            return false;
        }
        for (l, blk) in self.blocks.iter_mut() {
            let mut k = 0;
            blk.insts.retain(|_| {
                k += 1;
                !dead.contains(&(l, k - 1))
            });
        }
        true
    }
}

//! Passes over a finished residual function, run by [`ResidualFunction::simplify`]
//! before any backend sees it; one file per pass. Each is tested text in,
//! text out: a listing parsed ([`crate::ir::listing::parse`]), the pass run,
//! the listing printed (`jitgen-runtime/tests/passes.rs`).
//!
//! Residual code is recorded, not emitted directly, so the listing and the
//! machine code come from the very same function. In order:
//!
//! 1. **Merging** (`merge.rs`): forwarding blocks (no instructions, a jump,
//!    parameters used by that jump alone: a loop entered in mid-turn often
//!    closes through one that reorders or copies its parameters) are jumped
//!    over; a jump passing a constant to a block that only branches on it is
//!    threaded; a block reached by one `jump` joins its predecessor. Labels
//!    made at merge points that were never reached again disappear (`+-+`
//!    lists as exactly add, sub, add).
//! 2. **Propagation** (`propagate.rs`): parameters that every edge gives one
//!    value become that value (a loop-invariant value is no loop parameter);
//!    parameters that every edge gives equal values become one; operations
//!    on constants and branches on them fold. Then merging again if it
//!    changed anything. It runs on the merged function, which is much smaller
//!    than the recorded one.
//! 3. **Rotation** (`rotate.rs`): a loop whose back edge jumps into a small
//!    block (at most [`MAX_COPIED_OPS`] operations) that jumps or branches on
//!    gets a copy of that block for the back edge alone, which joins the back
//!    edge's block: a loop entered in mid-turn no longer runs three blocks a
//!    turn, and a `while` loop tests at its bottom. Copies end as their
//!    originals do, so a copy may get a copy in turn. Where code after the
//!    copied block used its values, SSA repair (on demand, in the manner of
//!    Braun et al.'s SSA construction, 2013) gives it the original's or the
//!    copy's value, through a new parameter where a block has several
//!    predecessors; propagation then drops those that carry one value.
//! 4. **Known memory** (`forward.rs`): a load from a place its block loaded
//!    from or stored to before, nothing having written it since, is the
//!    value it got; a bounds check an earlier one of its block implies goes;
//!    an address that is a base plus a constant is the base, the constant in
//!    the offset; wrapping additions of constants in a row are one.
//! 5. **Places kept in registers** (`places.rs`): a loop of one block whose
//!    loads and stores all name one place, at an address that does not
//!    change around it, carries the place's value in a parameter from its
//!    second turn on, and stores it where it leaves.
//! 6. **Unrolling** (`unroll.rs`): a counted loop of one block runs
//!    [`UNROLL_TURNS`] turns per jump behind a guard (see that module); after
//!    the two passes above, so that a loop over a cell kept in a register
//!    (`[-]`) counts.
//! 7. **Overwritten stores** (`stores.rs`): a store that a later store of
//!    its block writes over, with nothing between that reads memory or
//!    leaves, is dropped.
//! 8. **Dead values** (`dead.rs`): operations without effects (loads
//!    included) whose values nothing uses are dropped.
//!
//! Not part of `simplify`: **fusion** (`fuse.rs`) copies the pieces a root's
//! flexswitches reached into the root, a test per case before each switch
//! ([`ResidualFunction::fused`]); the run-time layer compiles that function
//! once the switches have cases (`run::residual::ResidualFn::fuse_pieces`).
//!
//! Merging moves code into blocks made later, so label order is not
//! dominance order: backends translate blocks in reverse postorder
//! ([`ResidualFunction::blocks_in_dominance_order`]). Two more analyses steer
//! the Cranelift backend's block layout: blocks that only lead out of the
//! function ([`ResidualFunction::exit_paths`]: returns, errors, flexswitches
//! and their miss paths) are cold and go last, and a branch whose true side
//! continues the innermost loop ([`ResidualFunction::true_side_loops`]) is
//! emitted inverted, so the loop's side falls through and a loop takes one
//! jump per turn. `JITGEN_DUMP_CODE=dir` writes the machine code, the
//! optimized CLIF and the listing of the function as compiled.
//!
//! Architecture Invariant: residual code is SSA (every use dominated by its
//! definition). Debug builds check it after `simplify`
//! ([`ResidualFunction::check_dominance`]) and decline with the listing
//! ("jitgen bug: residual code is not SSA"); the random TLC and TLR tests
//! fail on such a decline, and on any compiler panic.
//! Architecture Invariant: simplification keeps the order of effects and
//! errors: the turns of an unrolled loop are turns the original would have
//! run, in order, and only wrapping arithmetic is reassociated
//! (`jitgen-runtime/tests/unroll.rs` runs unrolled loops against the loop
//! taken one turn at a time, at the ends of the integer range).

mod dead;
mod forward;
mod fuse;
mod merge;
mod places;
mod propagate;
mod rotate;
mod stores;
mod unroll;

pub use fuse::CasesOf;
pub use rotate::MAX_COPIED_OPS;
pub use unroll::{MAX_UNROLLED_OPS, UNROLL_TURNS};

use crate::ir::function::{dense_for, ResidualFunction, SecondaryMap, Val};

/// A map from values to `T`, dense over the function's values: what the
/// passes look up by value (constants, renamings, definitions) without
/// hashing. A value past the end is absent; inserting one grows the map.
#[derive(Clone)]
pub(crate) struct ValMap<T: Clone> {
    slots: SecondaryMap<Val, Option<T>>,
    len: usize,
}

impl<T: Clone> ValMap<T> {
    /// An empty map with room for the values of `f`.
    pub(crate) fn for_values_of(f: &ResidualFunction) -> Self {
        ValMap { slots: dense_for(f), len: 0 }
    }

    pub(crate) fn get(&self, v: &Val) -> Option<&T> {
        self.slots.get(*v).and_then(Option::as_ref)
    }

    pub(crate) fn contains_key(&self, v: &Val) -> bool {
        self.get(v).is_some()
    }

    /// Sets `v`'s entry; the one it replaces.
    pub(crate) fn insert(&mut self, v: Val, t: T) -> Option<T> {
        let old = self.slots[v].replace(t);
        self.len += usize::from(old.is_none());
        old
    }

    /// `v`'s entry, made from `T::default()` where there was none.
    pub(crate) fn entry_or_default(&mut self, v: Val) -> &mut T
    where
        T: Default,
    {
        if self.slots[v].is_none() {
            self.len += 1;
        }
        self.slots[v].get_or_insert_with(T::default)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<T: Clone> Default for ValMap<T> {
    fn default() -> Self {
        ValMap { slots: SecondaryMap::new(), len: 0 }
    }
}

impl ResidualFunction {
    /// Merges every block reached only by a `jump` from one predecessor into
    /// that predecessor, and drops unreachable blocks: labels that exist only
    /// because a merge point might have been reached again disappear. Then
    /// [`ResidualFunction::propagate`] (on the smaller function), and again if it changed
    /// anything, and loops are closed through small blocks. Last, known
    /// memory is forwarded, a place a loop of one block works on is carried
    /// in a register, counted loops of one block are unrolled
    /// ([`UNROLL_TURNS`] turns per jump behind a guard; see the `unroll`
    /// module), stores written over are dropped, and so are operations
    /// without effects whose values nothing uses (the `dead` module).
    pub fn simplify(&mut self) {
        self.merge_blocks();
        if self.propagate() {
            self.merge_blocks();
        }
        if self.close_loops_through_small_blocks() && self.propagate() {
            self.merge_blocks();
        }
        self.forward_memory();
        self.keep_loop_places();
        self.unroll_counted_loops();
        self.drop_overwritten_stores();
        self.drop_dead_values();
    }

    /// Runs the residual passes if they are pending (see
    /// [`ResidualFunction::passes_pending`]).
    pub fn run_pending_passes(&mut self) {
        if std::mem::take(&mut self.passes_pending) {
            self.simplify();
        }
    }
}

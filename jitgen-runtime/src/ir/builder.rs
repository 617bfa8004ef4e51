//! Residual code: a small backend-neutral IR, and the builder that records it.
//!
//! A residual function has typed inputs and outputs, and blocks (labels) with
//! typed parameters, instructions and one terminator. Generating extensions
//! never touch it directly: they work on red boxes, and the scheduler and merge
//! logic decide where labels go and what flows into them. The builder only
//! records; backends consume the finished function.
//!
//! Calling convention of compiled residual code: one argument, a pointer to a
//! frame of 64-bit words. Inputs are read from the frame on entry; outputs are
//! written to it on return, and the function returns a status word: 0, or the
//! [`ErrorKind::code`] of the error exit taken (an index out of bounds leaves
//! the index and the length in words 0 and 1).
//!
//! Architecture Invariant: the IR is in SSA form with block parameters; a value
//! is used only in its defining block or in blocks it dominates. The scheduler
//! guarantees this: values cross a merge point only as label parameters.
//!
//! ## How residual code is simplified and laid out
//!
//! **Residual code** is recorded, not emitted directly: `ResidualBuilder` appends
//! instructions to blocks (labels) with typed parameters, and a finished
//! `ResidualFunction` goes to a backend. So the text listing and the machine code come
//! from the very same function, and `listing()` costs nothing extra to keep true.
//! Before any backend sees it, `simplify` threads forwarding blocks (no instructions, a
//! jump, parameters used by that jump alone: a loop entered in mid-turn often closes
//! through one that reorders or copies its parameters) and merges every block reached
//! by a single `jump` into its predecessor: labels made at merge points that were never
//! reached again disappear (`+-+` lists as exactly add, sub, add). Then `propagate`
//! (parameters that every edge gives one value become that value, so a loop-invariant
//! value is no loop parameter; parameters of a block that every edge gives equal values
//! become one; operations on constants and branches on them fold), and the merging
//! again if it changed anything. It runs on the merged function: run first, on the
//! recorded one (TLC factorial: 180 blocks), it cost 0.2 ms of a compilation. Last, a
//! loop whose back edge jumps into a small block (at most `MAX_COPIED_OPS` = 4
//! operations) that jumps or branches on gets a copy of that block for the back edge
//! alone, which joins the back edge's block (`close_loops_through_small_blocks`): a
//! loop entered in mid-turn no longer runs three blocks a turn, and a `while` loop,
//! whose head tests, tests at its bottom (loop rotation: one block and one branch a
//! turn). Copies end as their originals do, so a copy may get a copy in turn (mid-turn
//! entry, then the test). Where code after the copied block used its values, SSA repair
//! (`repair_after_copy`, on demand in the manner of Braun et al.'s SSA construction,
//! 2013) gives it the original's or the copy's value, through a new parameter where a
//! block has several predecessors; `propagate` then drops those that carry one value.
//! It costs 0.06-0.08 ms of a compilation (alternating runs: factorial 1.32 -> 1.39 ms,
//! fibonacci 1.22 -> 1.30, f1 1.20 -> 1.28). A caution for such measurements: on these
//! machines a tight loop's time is bimodal from one call to the next, for native code
//! too (f1's loop in C, `gcc -O2 -fno-tree-vectorize`: 0.78 or 1.5 ms per call of
//! f1(2117), alternating within one process), which earlier made f1's speed look as if
//! it depended on the key compiled more than it did; compare medians of many calls.
//! After rotation, a counted loop of one block (its test compares a parameter stepped
//! by a constant with a bound that does not change in the loop, at most
//! `MAX_UNROLLED_OPS` = 8 operations, no calls) is unrolled (`builder/unroll.rs`): a
//! guard at its entry computes `limit = bound - (UNROLL_TURNS-1)*step`, checks that
//! this did not wrap around and that the induction variable has not passed `limit`, and
//! if so runs a block of `UNROLL_TURNS` = 4 copies of the turn with no test between
//! them, which loops on the same check and then leaves through a block that ends as the
//! loop did; the original block runs the turns left over. Every turn of the unrolled
//! block is a turn the loop would have run, in order, so errors leave at the same turn.
//! In the copies, an accumulating wrapping addition (`p' = p + e`, `p'` the next `p`)
//! is reassociated: `x + a1 + a2` becomes `x + (a1 + a2)`, and an induction variable's
//! copies add 1, 2, 3, 4 times the step to the same value, so each value carried from
//! one jump to the next waits for one addition per four turns instead of four. Values
//! of the loop that its exit used directly get SSA repair as for copies. Merging moves
//! code into blocks made later, so label order is not dominance order: the Cranelift
//! backend translates blocks in reverse postorder
//! (`ResidualFunction::blocks_in_dominance_order`). Block layout is Cranelift's (its
//! own reverse postorder, the false side of a branch first); the backend steers it with
//! two properties of the residual function: blocks that only lead out of the function
//! (`exit_paths`) are marked cold and go last (a flexswitch leaves the function, so its
//! block is one, and so are the blocks of its dispatch and of its miss path, the call
//! into the compiler: in TLC f1 compiled behind an entry guard, they had stood between
//! the entry and the loop; `CraneliftBackend::clif` shows the translation, cold blocks
//! marked), and a branch whose true side returns to it by a shorter path than its false
//! side (`true_side_loops`: the true side continues the innermost loop) is emitted
//! inverted, so the loop's side falls through. A loop then takes one jump per turn, its
//! back edge (TLC's accumulator went from 1.1 to 0.5 ns per turn with that alone). A
//! signed division or remainder by a positive constant branches on the dividend's sign,
//! the non-negative side using the shorter unsigned magic-number sequence.
//! `JITGEN_DUMP_CODE=dir` writes the machine code and optimized CLIF to read such
//! things. Architecture Invariant: residual code is SSA (every use dominated by its
//! definition). Debug builds check it after `simplify`
//! (`ResidualFunction::check_dominance`) and decline with the listing ("jitgen bug:
//! residual code is not SSA"); the random TLC and TLR tests fail on such a decline, and
//! on any compiler panic. Architecture Invariant: simplification keeps the order of
//! effects and errors: the turns of an unrolled loop are turns the original would have
//! run, in order, and only wrapping arithmetic is reassociated
//! (`jitgen-runtime/tests/unroll.rs` runs unrolled loops against the loop taken one
//! turn at a time, at the ends of the integer range).

use std::collections::HashMap;
use std::fmt::Write as _;

pub use cranelift_entity::{EntityRef, PrimaryMap, SecondaryMap};

use crate::ir::ops::{BinOp, CmpOp, ErrorKind, Overflow, UnOp, ValTy};

mod unroll;
pub use unroll::{MAX_UNROLLED_OPS, UNROLL_TURNS};

/// A value of residual code: an index into [`ResidualFunction::vals`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct Val(u32);
cranelift_entity::entity_impl!(Val);

/// The most operations [`ResidualFunction::simplify`] copies to close a
/// loop through a small block.
pub const MAX_COPIED_OPS: usize = 4;

/// A block of residual code: an index into [`ResidualFunction::blocks`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct Label(u32);
cranelift_entity::entity_impl!(Label);

impl Label {
    /// The entry block, whose parameters are the function's inputs.
    pub const ENTRY: Label = Label(0);
}

/// The address of a Rust function that residual code may call, with the
/// callback convention `extern "C" fn(args: *mut u64) -> u64`: arguments in
/// the buffer, the result written to word 0, a status word returned (0 for
/// success; the run-time layer's `run_callback` makes that status). Unsafe to call: `args`
/// must point to as many words as the callback reads and writes (the most
/// of its arguments and results, at least one), and the addresses among
/// them must be those of live objects of the types it expects.
pub type CallbackFn = unsafe extern "C" fn(*mut u64) -> u64;

/// The cases of a flexswitch as residual code scans them: `len` pairs of
/// (value, code address) at `entries`. The run-time side of the switch fills
/// it (its first field, so that the table's address is this one's); machine
/// code reads these fields at their offsets and passes this address to the
/// miss handler.
#[repr(C)]
#[derive(Debug)]
pub struct CaseTable {
    /// Cases so far.
    pub len: usize,
    /// `len` pairs of a value and the address of its case's code.
    pub entries: *const [u64; 2],
}

/// The run-time side of a flexswitch, which a residual function only names:
/// its [`CaseTable`], and the cases compiled so far for listings.
pub trait SwitchTable: std::fmt::Debug {
    /// The address residual code scans and passes to the miss handler.
    fn case_table(&self) -> *const CaseTable;
    /// Appends the listing of every case so far (nested cases indented) to `out`.
    fn describe(&self, out: &mut String, depth: usize);
    /// Itself, for the run-time layer to find its own type again.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// The code compiled later for the states a function's switches resume,
/// owned by the function (the run-time layer's tree of pieces).
pub trait Pieces: std::fmt::Debug {
    /// Appends each piece's listing and its switches' cases to `out`.
    fn describe(&self, out: &mut String);
}

/// An instruction.
#[derive(Clone, Debug)]
#[allow(missing_docs)]
pub enum Inst {
    /// A constant word of the given type.
    Const { dst: Val, ty: ValTy, bits: u64 },
    /// `a op b`; division and remainder check for zero, and with
    /// `Overflow::Check` the arithmetic checks overflow (`MIN / -1` too),
    /// leaving through an error exit.
    Bin { dst: Val, op: BinOp, ty: ValTy, ov: Overflow, a: Val, b: Val },
    /// `op a`.
    Un { dst: Val, op: UnOp, ty: ValTy, ov: Overflow, a: Val },
    /// `a op b`, a bool.
    Cmp { dst: Val, op: CmpOp, ty: ValTy, a: Val, b: Val },
    /// `a as to`.
    Cast { dst: Val, from: ValTy, to: ValTy, a: Val },
    /// Read a value of type `ty` at `base + offset`.
    Load { dst: Val, ty: ValTy, base: Val, offset: i32 },
    /// Write `value` at `base + offset`.
    Store { ty: ValTy, base: Val, offset: i32, value: Val },
    /// Leave with `IndexOutOfBounds` unless `index < len` (both `u64`).
    BoundsCheck { index: Val, len: Val },
    /// Call a Rust function with the callback convention; a non-zero status
    /// leaves residual code with that status. The results are read from the
    /// buffer's first words (their types are the values' types).
    Call { dsts: Vec<Val>, func: CallbackFn, name: String, args: Vec<(Val, ValTy)> },
}

impl Inst {
    /// The values defined.
    pub fn defs(&self) -> Vec<Val> {
        match self {
            Inst::Const { dst, .. }
            | Inst::Bin { dst, .. }
            | Inst::Un { dst, .. }
            | Inst::Cmp { dst, .. }
            | Inst::Cast { dst, .. }
            | Inst::Load { dst, .. } => vec![*dst],
            Inst::Call { dsts, .. } => dsts.clone(),
            Inst::Store { .. } | Inst::BoundsCheck { .. } => vec![],
        }
    }

    fn map_defs(&mut self, f: &mut dyn FnMut(Val) -> Val) {
        match self {
            Inst::Const { dst, .. }
            | Inst::Bin { dst, .. }
            | Inst::Un { dst, .. }
            | Inst::Cmp { dst, .. }
            | Inst::Cast { dst, .. }
            | Inst::Load { dst, .. } => *dst = f(*dst),
            Inst::Call { dsts, .. } => dsts.iter_mut().for_each(|d| *d = f(*d)),
            Inst::Store { .. } | Inst::BoundsCheck { .. } => {}
        }
    }

    /// Calls `f` on each value used (the same as [`Inst::map_uses`] visits).
    fn for_each_use(&self, f: &mut dyn FnMut(Val)) {
        match self {
            Inst::Const { .. } => {}
            Inst::Bin { a, b, .. } | Inst::Cmp { a, b, .. } => {
                f(*a);
                f(*b);
            }
            Inst::Un { a, .. } | Inst::Cast { a, .. } => f(*a),
            Inst::Load { base, .. } => f(*base),
            Inst::Store { base, value, .. } => {
                f(*base);
                f(*value);
            }
            Inst::BoundsCheck { index, len } => {
                f(*index);
                f(*len);
            }
            Inst::Call { args, .. } => args.iter().for_each(|(a, _)| f(*a)),
        }
    }

    fn map_uses(&mut self, f: &dyn Fn(Val) -> Val) {
        match self {
            Inst::Const { .. } => {}
            Inst::Bin { a, b, .. } | Inst::Cmp { a, b, .. } => {
                *a = f(*a);
                *b = f(*b);
            }
            Inst::Un { a, .. } | Inst::Cast { a, .. } => *a = f(*a),
            Inst::Load { base, .. } => *base = f(*base),
            Inst::Store { base, value, .. } => {
                *base = f(*base);
                *value = f(*value);
            }
            Inst::BoundsCheck { index, len } => {
                *index = f(*index);
                *len = f(*len);
            }
            Inst::Call { args, .. } => args.iter_mut().for_each(|(a, _)| *a = f(*a)),
        }
    }
}

/// How a block ends.
#[derive(Clone, Debug, PartialEq)]
pub enum Terminator {
    /// Continue at a label, passing its parameters.
    Jump(Label, Vec<Val>),
    /// Continue at one of two labels depending on a bool.
    Branch {
        /// The condition.
        cond: Val,
        /// Taken when true, with its arguments.
        if_true: (Label, Vec<Val>),
        /// Taken when false, with its arguments.
        if_false: (Label, Vec<Val>),
    },
    /// Return the outputs.
    Return(Vec<Val>),
    /// Leave through an error exit.
    Error(ErrorKind),
    /// Promotion (a flexswitch): continue in the code compiled for the run-time
    /// value of `value`. Cases are added after the code has run, so they live
    /// outside this function, in the table `switches[switch]` of the function
    /// ([`SwitchTable`]); a case receives the `live` values as its inputs.
    FlexSwitch {
        /// The promoted value.
        value: Val,
        /// The values the cases continue with.
        live: Vec<Val>,
        /// Index of the switch's table in [`ResidualFunction::switches`].
        switch: u32,
    },
}

impl Terminator {
    /// Calls `f` on each value used (the same as [`Terminator::map_uses`] visits).
    fn for_each_use(&self, f: &mut dyn FnMut(Val)) {
        match self {
            Terminator::Jump(_, args) | Terminator::Return(args) => args.iter().for_each(|a| f(*a)),
            Terminator::Branch { cond, if_true, if_false } => {
                f(*cond);
                if_true.1.iter().for_each(|a| f(*a));
                if_false.1.iter().for_each(|a| f(*a));
            }
            Terminator::FlexSwitch { value, live, .. } => {
                f(*value);
                live.iter().for_each(|a| f(*a));
            }
            Terminator::Error(_) => {}
        }
    }

    fn map_uses(&mut self, f: &dyn Fn(Val) -> Val) {
        match self {
            Terminator::Jump(_, args) | Terminator::Return(args) => args.iter_mut().for_each(|a| *a = f(*a)),
            Terminator::Branch { cond, if_true, if_false } => {
                *cond = f(*cond);
                if_true.1.iter_mut().for_each(|a| *a = f(*a));
                if_false.1.iter_mut().for_each(|a| *a = f(*a));
            }
            Terminator::FlexSwitch { value, live, .. } => {
                *value = f(*value);
                live.iter_mut().for_each(|a| *a = f(*a));
            }
            Terminator::Error(_) => {}
        }
    }

    /// Appends `v` to the arguments of each edge to `to`.
    fn push_arg_to(&mut self, to: Label, v: Val) {
        match self {
            Terminator::Jump(l, args) if *l == to => args.push(v),
            Terminator::Branch { if_true, if_false, .. } => {
                for (l, args) in [if_true, if_false] {
                    if *l == to {
                        args.push(v);
                    }
                }
            }
            _ => {}
        }
    }

    /// The labels this terminator may continue at.
    pub fn targets(&self) -> Vec<Label> {
        match self {
            Terminator::Jump(l, _) => vec![*l],
            Terminator::Branch { if_true, if_false, .. } => vec![if_true.0, if_false.0],
            _ => vec![],
        }
    }
}

/// A block of residual code.
#[derive(Clone, Debug, Default)]
pub struct RBlock {
    /// Its parameters.
    pub params: Vec<Val>,
    /// Its instructions.
    pub insts: Vec<Inst>,
    /// Its terminator (`None` only while being built, or for removed blocks).
    pub term: Option<Terminator>,
}

/// A finished residual function.
#[derive(Clone, Debug)]
pub struct ResidualFunction {
    /// A name for listings.
    pub name: String,
    /// Input types (the entry block's parameters).
    pub inputs: Vec<ValTy>,
    /// Output types.
    pub outputs: Vec<ValTy>,
    /// The type of each value.
    pub vals: PrimaryMap<Val, ValTy>,
    /// Blocks, indexed by label; removed blocks have no terminator.
    pub blocks: PrimaryMap<Label, RBlock>,
    /// The case tables of the function's flexswitches.
    pub switches: Vec<std::rc::Rc<dyn SwitchTable>>,
    /// The pieces compiled later for the states its switches resume (kept
    /// alive by the function's code; see `schedule`).
    pub pieces: Option<std::rc::Rc<dyn Pieces>>,
}

impl ResidualFunction {
    /// The number of frame words the calling convention needs.
    pub fn frame_words(&self) -> usize {
        let live = self
            .live_blocks()
            .filter_map(|(_, b)| match &b.term {
                Some(Terminator::FlexSwitch { live, .. }) => Some(live.len() + 2),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        self.inputs.len().max(self.outputs.len()).max(live).max(2)
    }

    /// Live blocks in reverse postorder from the entry (then any live block
    /// not reached, in label order): every block comes after the blocks that
    /// dominate it, so a value's definition comes before its uses. Label
    /// order does not promise that: `simplify` may merge a block into a
    /// predecessor created after the blocks it dominates.
    pub fn blocks_in_dominance_order(&self) -> Vec<Label> {
        let mut seen: SecondaryMap<Label, bool> = SecondaryMap::new();
        let mut post: Vec<Label> = Vec::with_capacity(self.blocks.len());
        // Iterative depth-first search: (block, next successor to visit).
        let mut stack: Vec<(Label, usize)> = vec![];
        if self.blocks.get(Label::ENTRY).is_some_and(|b| b.term.is_some()) {
            seen[Label::ENTRY] = true;
            stack.push((Label::ENTRY, 0));
        }
        while let Some((b, k)) = stack.last_mut() {
            let targets = self.blocks[*b].term.as_ref().map(Terminator::targets).unwrap_or_default();
            if let Some(&t) = targets.get(*k) {
                *k += 1;
                if !seen[t] && self.blocks[t].term.is_some() {
                    seen[t] = true;
                    stack.push((t, 0));
                }
            } else {
                post.push(*b);
                stack.pop();
            }
        }
        post.reverse();
        post.extend(self.live_blocks().map(|(l, _)| l).filter(|l| !seen[*l]));
        post
    }

    /// For each block (by label), whether every path from it leaves the
    /// function (returns, errors or reaches a flexswitch) without passing a
    /// cycle. Such blocks run at most once per call, so the backend lays them
    /// out after the others: a loop's exit test then falls through into the
    /// loop's body, and the loop takes one jump per turn, not two.
    pub fn exit_paths(&self) -> SecondaryMap<Label, bool> {
        let mut exit: SecondaryMap<Label, bool> = SecondaryMap::new();
        let mut changed = true;
        while changed {
            changed = false;
            for (l, b) in self.live_blocks() {
                let targets = b.term.as_ref().map(Terminator::targets).unwrap_or_default();
                if !exit[l] && targets.iter().all(|t| exit[*t]) {
                    exit[l] = true;
                    changed = true;
                }
            }
        }
        exit
    }

    /// For each block (by label) ending in a branch, whether its true side
    /// leads back to it by a shorter path than its false side: the true side
    /// continues the innermost loop and the false side leaves it (or leaves
    /// the function). The backend makes such a true side the fall-through,
    /// so that an inner loop whose test is at its head takes one jump per
    /// turn (the back edge), not two.
    pub fn true_side_loops(&self) -> SecondaryMap<Label, bool> {
        let mut out: SecondaryMap<Label, bool> = SecondaryMap::new();
        let mut dist: SecondaryMap<Label, usize> = SecondaryMap::with_default(usize::MAX);
        let mut queue = std::collections::VecDeque::new();
        // The number of jumps from `from` back to `to`, if it comes back.
        let mut back = |from: Label, to: Label| -> Option<usize> {
            dist.clear();
            queue.clear();
            dist[from] = 0;
            queue.push_back(from);
            while let Some(l) = queue.pop_front() {
                let d = dist[l];
                if l == to {
                    return Some(d);
                }
                for t in self.blocks[l].term.as_ref().map(Terminator::targets).unwrap_or_default() {
                    if dist[t] == usize::MAX {
                        dist[t] = d + 1;
                        queue.push_back(t);
                    }
                }
            }
            None
        };
        for (l, b) in self.live_blocks() {
            if let Some(Terminator::Branch { if_true, if_false, .. }) = &b.term {
                if let Some(t) = back(if_true.0, l) {
                    out[l] = back(if_false.0, l).is_none_or(|f| t < f);
                }
            }
        }
        out
    }

    /// The block defining each value (as a parameter or by an instruction)
    /// among the live blocks; `None` for values defined nowhere.
    fn def_blocks(&self) -> SecondaryMap<Val, Option<Label>> {
        let mut def_block = SecondaryMap::new();
        for (b, blk) in self.live_blocks() {
            for v in blk.params.iter().copied().chain(blk.insts.iter().flat_map(Inst::defs)) {
                def_block[v] = Some(b);
            }
        }
        def_block
    }

    /// Checks that every value is defined before its uses on every path
    /// (SSA dominance); the first violation, described.
    pub fn check_dominance(&self) -> Result<(), String> {
        let order = self.blocks_in_dominance_order();
        let mut rpo_index: SecondaryMap<Label, usize> = SecondaryMap::with_default(usize::MAX);
        for (k, l) in order.iter().enumerate() {
            rpo_index[*l] = k;
        }
        let mut preds: SecondaryMap<Label, Vec<Label>> = SecondaryMap::new();
        for l in &order {
            if let Some(t) = &self.blocks[*l].term {
                for x in t.targets() {
                    preds[x].push(*l);
                }
            }
        }
        // Cooper, Harvey and Kennedy's iterative dominators.
        let mut idom: SecondaryMap<Label, Option<Label>> = SecondaryMap::new();
        idom[Label::ENTRY] = Some(Label::ENTRY);
        let mut changed = true;
        while changed {
            changed = false;
            for &b in order.iter().skip(1) {
                let mut new: Option<Label> = None;
                for &p in &preds[b] {
                    if idom[p].is_none() {
                        continue;
                    }
                    let Some(so_far) = new else {
                        new = Some(p);
                        continue;
                    };
                    let (mut x, mut y) = (p, so_far);
                    while x != y {
                        while rpo_index[x] > rpo_index[y] {
                            x = idom[x].expect("processed");
                        }
                        while rpo_index[y] > rpo_index[x] {
                            y = idom[y].expect("processed");
                        }
                    }
                    new = Some(x);
                }
                if new.is_some() && idom[b] != new {
                    idom[b] = new;
                    changed = true;
                }
            }
        }
        let def_block = self.def_blocks();
        let dominates = |d: Label, mut b: Label| loop {
            if b == d {
                return true;
            }
            match idom[b] {
                Some(up) if b != Label::ENTRY => b = up,
                _ => return false,
            }
        };
        for &b in &order {
            let blk = &self.blocks[b];
            let mut seen: Vec<Val> = blk.params.clone();
            let bad = std::cell::Cell::new(None);
            let check = |v: Val, seen: &[Val]| {
                let d = def_block[v];
                let ok = if d == Some(b) { seen.contains(&v) } else { d.is_some_and(|d| dominates(d, b)) };
                if !ok && bad.get().is_none() {
                    bad.set(Some((v, d)));
                }
                v
            };
            for i in &blk.insts {
                let mut i = i.clone();
                i.map_uses(&|v| check(v, &seen));
                seen.extend(i.defs());
            }
            if let Some(t) = &blk.term {
                let mut t = t.clone();
                t.map_uses(&|v| check(v, &seen));
            }
            if let Some((v, d)) = bad.get() {
                let d = d.map_or("no live block".to_string(), |d| format!("L{}", d.index()));
                return Err(format!("{v:?} used in L{}, defined in {d}", b.index()));
            }
        }
        Ok(())
    }

    /// Live blocks in label order.
    pub fn live_blocks(&self) -> impl Iterator<Item = (Label, &RBlock)> {
        self.blocks.iter().filter(|(_, b)| b.term.is_some())
    }

    /// The number of instructions (residual operations) in live blocks.
    pub fn op_count(&self) -> usize {
        self.live_blocks().map(|(_, b)| b.insts.len()).sum()
    }

    /// The blocks `head` reaches (edges from them into `head` close a loop).
    fn reached_from(&self, head: Label) -> SecondaryMap<Label, bool> {
        let mut inside = SecondaryMap::new();
        let mut todo = vec![head];
        while let Some(l) = todo.pop() {
            if let Some(t) = self.blocks[l].term.as_ref() {
                for n in t.targets() {
                    if !std::mem::replace(&mut inside[n], true) {
                        todo.push(n);
                    }
                }
            }
        }
        inside
    }

    /// Pairs `(a, b)`, `a < b`, of parameters of `head` that every edge into
    /// `head` from a block `head` reaches (a back edge; there must be one)
    /// gives the same value: after the first turn they are one value. A
    /// loop entered where the interpreter's state held a copy (a value
    /// picked onto a stack) gets two parameters for it, which the entry
    /// loads apart; knowing them equal behind a guard gives the loop one
    /// (the scheduler's `Compilation::version_entry`).
    pub fn copied_params(&self, head: Label) -> Vec<(usize, usize)> {
        let Some(hb) = self.blocks.get(head).filter(|b| b.term.is_some()) else { return vec![] };
        let inside = self.reached_from(head);
        let mut back: Vec<&[Val]> = vec![];
        for (_, b) in self.live_blocks().filter(|(l, _)| inside[*l]) {
            match b.term.as_ref() {
                Some(Terminator::Jump(t, args)) if *t == head => back.push(args),
                Some(Terminator::Branch { if_true, if_false, .. }) => {
                    for (t, args) in [if_true, if_false] {
                        if *t == head {
                            back.push(args);
                        }
                    }
                }
                _ => {}
            }
        }
        let n = hb.params.len();
        if back.is_empty() || back.iter().any(|args| args.len() != n) {
            return vec![];
        }
        let mut pairs = vec![];
        for b in 0..n {
            // Each later parameter pairs with the first one equal to it.
            if let Some(a) = (0..b).find(|&a| back.iter().all(|args| args[a] == args[b])) {
                pairs.push((a, b));
            }
        }
        pairs
    }

    /// The parameters of `head` (by position) that are loop invariant and
    /// divide: every edge into `head` from a block `head` reaches (a back
    /// edge; there must be one) passes the parameter's own value back
    /// (directly, or through parameters of other blocks that only ever
    /// receive it), and some integer division or remainder divides by that
    /// value. Also a dividing parameter that every back edge gives a copy of
    /// such an invariant one (a loop entered where the divisor is a copy of
    /// an invariant slot), with the parameters along the way: its first turn
    /// divides by its own entry value, later turns by the invariant's.
    /// Knowing such values as constants turns a hardware division per
    /// iteration into a multiplication
    /// (the scheduler's `Compilation::version_entry`).
    pub fn invariant_divisors(&self, head: Label) -> Vec<usize> {
        let Some(hb) = self.blocks.get(head).filter(|b| b.term.is_some()) else { return vec![] };
        let divisors: Vec<Val> = self
            .live_blocks()
            .flat_map(|(_, b)| &b.insts)
            .filter_map(|i| match i {
                Inst::Bin { op: BinOp::Div | BinOp::Rem, ty, b, .. } if *ty != ValTy::F64 => Some(*b),
                _ => None,
            })
            .collect();
        if divisors.is_empty() || hb.params.is_empty() {
            return vec![];
        }
        // Edges into each block: (from, arguments).
        let mut incoming: SecondaryMap<Label, Vec<(Label, &[Val])>> = SecondaryMap::new();
        for (l, b) in self.live_blocks() {
            match b.term.as_ref() {
                Some(Terminator::Jump(t, args)) => incoming[*t].push((l, args)),
                Some(Terminator::Branch { if_true, if_false, .. }) => {
                    incoming[if_true.0].push((l, &if_true.1));
                    incoming[if_false.0].push((l, &if_false.1));
                }
                _ => {}
            }
        }
        let inside = self.reached_from(head);
        // Which parameter of `head` each value is a copy of, by optimistic
        // copy propagation over block parameters: `Top` (no constraint yet),
        // `Of(k)`, or `Bottom` (anything else).
        #[derive(Clone, Copy, PartialEq, Default)]
        enum Origin {
            Top,
            Of(usize),
            #[default]
            Bottom,
        }
        let mut origin: SecondaryMap<Val, Origin> = SecondaryMap::new();
        for (_, b) in self.live_blocks() {
            for q in &b.params {
                origin[*q] = Origin::Top;
            }
        }
        for (k, p) in hb.params.iter().enumerate() {
            origin[*p] = Origin::Of(k);
        }
        for q in &self.blocks[Label::ENTRY].params {
            origin[*q] = Origin::Bottom;
        }
        loop {
            let mut changed = false;
            for (l, b) in self.live_blocks() {
                if l == head || l == Label::ENTRY {
                    continue;
                }
                for (j, q) in b.params.iter().enumerate() {
                    let mut o = Origin::Top;
                    for (_, args) in &incoming[l] {
                        o = match (o, origin[args[j]]) {
                            (Origin::Top, x) | (x, Origin::Top) => x,
                            (Origin::Of(a), Origin::Of(b)) if a == b => Origin::Of(a),
                            _ => Origin::Bottom,
                        };
                    }
                    if o != origin[*q] {
                        origin[*q] = o;
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        let back: Vec<&[Val]> = incoming[head].iter().filter(|(from, _)| inside[*from]).map(|(_, a)| *a).collect();
        if back.is_empty() {
            return vec![];
        }
        // The parameter of `head` each parameter receives back on every back
        // edge, if there is one.
        let passed_back: Vec<Option<usize>> = (0..hb.params.len())
            .map(|k| match origin[back[0][k]] {
                Origin::Of(j) if back.iter().all(|args| origin[args[k]] == Origin::Of(j)) => Some(j),
                _ => None,
            })
            .collect();
        let mut found = vec![false; hb.params.len()];
        for k in 0..hb.params.len() {
            if !divisors.iter().any(|d| origin[*d] == Origin::Of(k)) {
                continue;
            }
            // Follow the copies back to a parameter passed back as itself.
            let mut path = vec![k];
            let mut at = k;
            while let Some(j) = passed_back[at] {
                if j == at {
                    for &p in &path {
                        found[p] = true;
                    }
                    break;
                }
                if path.contains(&j) {
                    break;
                }
                path.push(j);
                at = j;
            }
        }
        (0..hb.params.len()).filter(|&k| found[k]).collect()
    }

    /// Parameters that every edge gives one value (a loop-invariant value
    /// passed around its loop; a constant that a guard at entry established,
    /// the scheduler's `Compilation::version_entry`) become that value;
    /// parameters of a block that every edge gives equal values become one;
    /// operations on constants fold, and branches on constants jump. Again
    /// while anything changes (a folded branch removes an edge, which may
    /// leave a parameter one value), a few times at most.
    /// Returns whether anything changed.
    pub fn propagate(&mut self) -> bool {
        let mut any = false;
        for _ in 0..4 {
            let one = self.single_value_params();
            let equal = self.merge_equal_params();
            let folded = self.fold_constants();
            if !(one || equal || folded) {
                break;
            }
            any = true;
        }
        any
    }

    /// The blocks reachable from the entry.
    fn reachable(&self) -> SecondaryMap<Label, bool> {
        let mut reach = SecondaryMap::new();
        let mut todo = vec![Label::ENTRY];
        while let Some(b) = todo.pop() {
            if !self.blocks.is_valid(b) || std::mem::replace(&mut reach[b], true) {
                continue;
            }
            if let Some(t) = &self.blocks[b].term {
                todo.extend(t.targets());
            }
        }
        reach
    }

    /// Removes the parameters `gone` maps (to what replaces them) from their
    /// blocks and the arguments for them from every edge, and replaces their
    /// uses.
    fn replace_params(&mut self, gone: &rustc_hash::FxHashMap<Val, Val>) {
        // For each block, which of its parameters stay.
        let mut keep: SecondaryMap<Label, Option<Vec<bool>>> = SecondaryMap::new();
        for (b, blk) in self.blocks.iter() {
            let params = &blk.params;
            if b != Label::ENTRY && params.iter().any(|p| gone.contains_key(p)) {
                keep[b] = Some(params.iter().map(|p| !gone.contains_key(p)).collect());
            }
        }
        let resolve = |v: Val| gone.get(&v).copied().unwrap_or(v);
        for b in self.blocks.keys() {
            if let Some(k) = &keep[b] {
                let mut it = k.iter();
                self.blocks[b].params.retain(|_| *it.next().expect("one flag per parameter"));
            }
            let blk = &mut self.blocks[b];
            for i in &mut blk.insts {
                i.map_uses(&resolve);
            }
            let Some(t) = &mut blk.term else { continue };
            t.map_uses(&resolve);
            let drop_args = |(l, args): &mut (Label, Vec<Val>)| {
                if let Some(k) = &keep[*l] {
                    let mut it = k.iter();
                    args.retain(|_| *it.next().expect("one argument per parameter"));
                }
            };
            match t {
                Terminator::Jump(l, args) => {
                    let mut e = (*l, std::mem::take(args));
                    drop_args(&mut e);
                    *args = e.1;
                }
                Terminator::Branch { if_true, if_false, .. } => {
                    drop_args(if_true);
                    drop_args(if_false);
                }
                _ => {}
            }
        }
    }

    /// The edges out of a terminator: each target with its arguments.
    fn edges(t: &Terminator) -> Vec<(Label, &[Val])> {
        match t {
            Terminator::Jump(l, args) => vec![(*l, args.as_slice())],
            Terminator::Branch { if_true, if_false, .. } => {
                vec![(if_true.0, if_true.1.as_slice()), (if_false.0, if_false.1.as_slice())]
            }
            _ => vec![],
        }
    }

    /// Replaces each parameter that every edge into its block gives one
    /// value (itself aside, around a loop) by that value. Optimistic: a
    /// parameter counts as that value until an edge gives another.
    fn single_value_params(&mut self) -> bool {
        #[derive(Clone, Copy, PartialEq)]
        enum Flow {
            Unknown,
            One(Val),
            Many,
        }
        let reach = self.reachable();
        // For the parameters of reached blocks but the entry: what flows in.
        let mut flow: SecondaryMap<Val, Option<Flow>> = SecondaryMap::new();
        let mut any = false;
        for (_, blk) in self.blocks.iter().skip(1).filter(|(b, _)| reach[*b]) {
            for p in &blk.params {
                flow[*p] = Some(Flow::Unknown);
                any = true;
            }
        }
        if !any {
            return false;
        }
        loop {
            let mut changed = false;
            for (_, blk) in self.blocks.iter().filter(|(b, _)| reach[*b]) {
                let Some(t) = &blk.term else { continue };
                for (l, args) in Self::edges(t) {
                    if l == Label::ENTRY {
                        continue;
                    }
                    for (p, a) in self.blocks[l].params.iter().zip(args) {
                        let incoming = match flow[*a] {
                            Some(Flow::Unknown) => continue,
                            Some(x) => x,
                            None => Flow::One(*a),
                        };
                        let Some(old) = flow[*p] else { continue };
                        let new = match (old, incoming) {
                            (Flow::Unknown, x) => x,
                            (Flow::One(x), Flow::One(y)) if x == y => old,
                            _ => Flow::Many,
                        };
                        if new != old {
                            flow[*p] = Some(new);
                            changed = true;
                        }
                    }
                }
            }
            if !changed {
                break;
            }
        }
        let gone: rustc_hash::FxHashMap<Val, Val> = flow
            .iter()
            .filter_map(|(p, f)| match *f {
                Some(Flow::One(x)) if x != p => Some((p, x)),
                _ => None,
            })
            .collect();
        if gone.is_empty() {
            return false;
        }
        self.replace_params(&gone);
        true
    }

    /// Makes one the parameters of a block that every edge into it gives
    /// equal values (two parameters of a loop that every turn passes one
    /// value, once a guard at entry made them equal there too). An edge from
    /// the block to itself may pass the two parameters themselves.
    fn merge_equal_params(&mut self) -> bool {
        let reach = self.reachable();
        // The argument lists of the edges into each block.
        let mut incoming: SecondaryMap<Label, Vec<(Label, &[Val])>> = SecondaryMap::new();
        for (b, blk) in self.blocks.iter().filter(|(b, _)| reach[*b]) {
            for (l, args) in blk.term.iter().flat_map(Self::edges) {
                incoming[l].push((b, args));
            }
        }
        let mut gone: rustc_hash::FxHashMap<Val, Val> = rustc_hash::FxHashMap::default();
        for (b, blk) in self.blocks.iter().skip(1).filter(|(b, _)| reach[*b]) {
            let params = &blk.params;
            for j in 1..params.len() {
                let ty = self.vals[params[j]];
                let same = (0..j).find(|&i| {
                    self.vals[params[i]] == ty
                        && !gone.contains_key(&params[i])
                        && incoming[b].iter().all(|(from, args)| {
                            args[i] == args[j] || *from == b && args[i] == params[i] && args[j] == params[j]
                        })
                });
                if let Some(i) = same {
                    gone.insert(params[j], params[i]);
                }
            }
        }
        if gone.is_empty() {
            return false;
        }
        self.replace_params(&gone);
        true
    }

    /// Folds operations whose operands are constants (those that cannot
    /// fail) into constants, and branches on constants into jumps.
    fn fold_constants(&mut self) -> bool {
        use crate::ir::ops::{fold_bin, fold_cast, fold_cmp, fold_un};
        let mut consts: rustc_hash::FxHashMap<Val, u64> = rustc_hash::FxHashMap::default();
        let mut changed = false;
        for l in self.blocks_in_dominance_order() {
            let blk = &mut self.blocks[l];
            for i in &mut blk.insts {
                let c = |v: &Val| consts.get(v).copied();
                let folded = match i {
                    Inst::Const { dst, bits, .. } => {
                        consts.insert(*dst, *bits);
                        None
                    }
                    Inst::Cmp { dst, op, ty, a, b } => match (c(a), c(b)) {
                        (Some(x), Some(y)) => Some((*dst, ValTy::Bool, fold_cmp(*op, *ty, x, y))),
                        _ => None,
                    },
                    Inst::Bin { dst, op, ty, ov, a, b } => match (c(a), c(b)) {
                        (Some(x), Some(y)) => fold_bin(*op, *ty, *ov, x, y).ok().map(|r| (*dst, *ty, r)),
                        _ => None,
                    },
                    Inst::Un { dst, op, ty, ov, a } => {
                        c(a).and_then(|x| fold_un(*op, *ty, *ov, x).ok()).map(|r| (*dst, *ty, r))
                    }
                    Inst::Cast { dst, from, to, a } => c(a).map(|x| (*dst, *to, fold_cast(*from, *to, x))),
                    _ => None,
                };
                if let Some((dst, ty, bits)) = folded {
                    let bits = ty.canon(bits);
                    *i = Inst::Const { dst, ty, bits };
                    consts.insert(dst, bits);
                    changed = true;
                }
            }
            if let Some(Terminator::Branch { cond, if_true, if_false }) = &blk.term {
                if let Some(&c) = consts.get(cond) {
                    let (to, args) = if c != 0 { if_true.clone() } else { if_false.clone() };
                    blk.term = Some(Terminator::Jump(to, args));
                    changed = true;
                }
            }
        }
        changed
    }

    /// Merges every block reached only by a `jump` from one predecessor into
    /// that predecessor, and drops unreachable blocks: labels that exist only
    /// because a merge point might have been reached again disappear. Then
    /// [`ResidualFunction::propagate`] (on the smaller function: run first,
    /// it took TLC factorial's compilation 0.2 ms), and again if it changed
    /// anything, and loops are closed through small blocks. Last, counted
    /// loops of one block are unrolled ([`UNROLL_TURNS`] turns per jump
    /// behind a guard; see the `unroll` module).
    pub fn simplify(&mut self) {
        self.merge_blocks();
        if self.propagate() {
            self.merge_blocks();
        }
        if self.close_loops_through_small_blocks() && self.propagate() {
            self.merge_blocks();
        }
        self.unroll_counted_loops();
    }

    /// Jumps over forwarding blocks, threads jumps that pass a constant to
    /// a branch, merges blocks into their only predecessor, drops
    /// unreachable blocks.
    fn merge_blocks(&mut self) {
        let n = self.blocks.len();
        let mut subst: rustc_hash::FxHashMap<Val, Val> = rustc_hash::FxHashMap::default();
        let mut threaded = 0;
        let mut forward_rounds = 0;
        // Constants, for jump threading (instructions move between blocks
        // below, but keep their values).
        let consts: rustc_hash::FxHashMap<Val, u64> = self
            .blocks
            .values()
            .filter(|b| b.term.is_some())
            .flat_map(|b| &b.insts)
            .filter_map(|i| match i {
                Inst::Const { dst, bits, .. } => Some((*dst, *bits)),
                _ => None,
            })
            .collect();
        loop {
            let mut preds: SecondaryMap<Label, usize> = SecondaryMap::new();
            let mut reach: SecondaryMap<Label, bool> = SecondaryMap::new();
            let mut stack = vec![Label::ENTRY];
            while let Some(b) = stack.pop() {
                if std::mem::replace(&mut reach[b], true) {
                    continue;
                }
                if let Some(t) = &self.blocks[b].term {
                    for l in t.targets() {
                        preds[l] += 1;
                        stack.push(l);
                    }
                }
            }
            for b in self.blocks.keys() {
                if !reach[b] {
                    self.blocks[b].term = None;
                    self.blocks[b].insts.clear();
                }
            }
            let mut changed = false;
            // Values used outside the block that defines them.
            let mut escaping: SecondaryMap<Val, bool> = SecondaryMap::new();
            {
                let def_block = self.def_blocks();
                for (b, blk) in self.live_blocks() {
                    let mut note = |v: Val| {
                        // (Through the substitutions made so far: uses are
                        // rewritten only at the end.)
                        let mut v = v;
                        while let Some(n) = subst.get(&v) {
                            v = *n;
                        }
                        if def_block[v] != Some(b) {
                            escaping[v] = true;
                        }
                    };
                    for i in &blk.insts {
                        i.for_each_use(&mut note);
                    }
                    if let Some(t) = &blk.term {
                        t.for_each_use(&mut note);
                    }
                }
            }
            // Forwarding blocks (no instructions, a jump, parameters used
            // by that jump alone): their predecessors jump straight on, with
            // the parameters replaced by what they pass. The other forwarded
            // values dominate the forwarder, hence each of its predecessors.
            // (A loop's back edge through a block that reorders or copies its
            // parameters leaves one.)
            type Forward = (Label, Vec<Val>, Vec<Val>);
            let forward: rustc_hash::FxHashMap<Label, Forward> = (self.blocks.keys().skip(1))
                .filter_map(|f| match &self.blocks[f].term {
                    Some(Terminator::Jump(to, fwd))
                        if self.blocks[f].insts.is_empty()
                            && *to != f
                            && !self.blocks[f].params.iter().any(|q| escaping[*q]) =>
                    {
                        Some((f, (*to, fwd.clone(), self.blocks[f].params.clone())))
                    }
                    _ => None,
                })
                .collect();
            // (Bounded: a cycle of forwarders entered from outside would
            // move its entry edge around the cycle forever.)
            forward_rounds += 1;
            if !forward.is_empty() && forward_rounds <= n {
                let redirect = |t: &mut (Label, Vec<Val>)| -> bool {
                    // Follow a chain of forwarders (bounded: they may form a cycle).
                    let mut moved = false;
                    for _ in 0..n {
                        match forward.get(&t.0) {
                            Some((to, fwd, params)) if *to != t.0 => {
                                let args = fwd
                                    .iter()
                                    .map(|v| match params.iter().position(|q| q == v) {
                                        Some(j) => t.1[j],
                                        None => *v,
                                    })
                                    .collect();
                                *t = (*to, args);
                                moved = true;
                            }
                            _ => break,
                        }
                    }
                    moved
                };
                for p in self.blocks.keys() {
                    match &mut self.blocks[p].term {
                        Some(Terminator::Jump(l, args)) => {
                            let mut t = (*l, std::mem::take(args));
                            changed |= redirect(&mut t);
                            (*l, *args) = t;
                        }
                        Some(Terminator::Branch { if_true, if_false, .. }) => {
                            let a = redirect(if_true);
                            let b = redirect(if_false);
                            changed |= a || b;
                        }
                        _ => {}
                    }
                }
            }
            if changed {
                // Uses moved between blocks: recount what escapes.
                continue;
            }
            // Jump threading: a block that only branches on one of its
            // parameters, reached by a jump passing a constant there, is
            // skipped by that jump (a `&&` or `||` whose side is known on
            // one path leaves such blocks). Only when the blocks it branches
            // to get all they need as arguments: code dominated by the
            // skipped block may use its parameters directly, and they would
            // not be defined on the new path.
            for p in self.blocks.keys() {
                let Some(Terminator::Jump(l, args)) = &self.blocks[p].term else { continue };
                let target = &self.blocks[*l];
                let Some(Terminator::Branch { cond, if_true, if_false }) = &target.term else { continue };
                if !target.insts.is_empty() || *l == p || target.params.iter().any(|q| escaping[*q]) {
                    continue;
                }
                let Some(i) = target.params.iter().position(|q| q == cond) else { continue };
                let mut a = args[i];
                while let Some(n) = subst.get(&a) {
                    a = *n;
                }
                let Some(&bits) = consts.get(&a) else { continue };
                let (to, targs) = if bits != 0 { if_true } else { if_false };
                if *to == *l || threaded >= 4 * n {
                    // (bounded: empty blocks may branch around in a cycle)
                    continue;
                }
                threaded += 1;
                let mapped: Vec<Val> = targs
                    .iter()
                    .map(|v| match target.params.iter().position(|q| q == v) {
                        Some(j) => args[j],
                        None => *v,
                    })
                    .collect();
                self.blocks[p].term = Some(Terminator::Jump(*to, mapped));
                changed = true;
            }
            if changed {
                // Predecessor counts changed: recount before merging blocks.
                continue;
            }
            for p in self.blocks.keys() {
                // A chain of such blocks merges into `p` at once (one pass
                // per block of a chain made simplification quadratic).
                loop {
                    let Some(Terminator::Jump(l, args)) = &self.blocks[p].term else { break };
                    let b = *l;
                    if b == p || b == Label::ENTRY || preds[b] != 1 {
                        break;
                    }
                    let args = args.clone();
                    let target = std::mem::take(&mut self.blocks[b]);
                    for (param, arg) in target.params.iter().zip(&args) {
                        // Resolve now, so that chains of substitutions stay short.
                        let mut a = *arg;
                        while let Some(n) = subst.get(&a) {
                            a = *n;
                        }
                        subst.insert(*param, a);
                    }
                    self.blocks[p].insts.extend(target.insts);
                    self.blocks[p].term = target.term;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let resolve = |v: Val| {
            let mut v = v;
            while let Some(n) = subst.get(&v) {
                v = *n;
            }
            v
        };
        for b in self.blocks.values_mut() {
            for i in &mut b.insts {
                i.map_uses(&resolve);
            }
            if let Some(t) = &mut b.term {
                t.map_uses(&resolve);
            }
        }
    }

    /// A loop whose back edge jumps into a small block that jumps or
    /// branches on (a loop entered in mid-turn: the rest of the turn heads
    /// the loop; or a `while` loop, whose head tests) gets a copy of that
    /// block for the back edge alone, which then joins the back edge's
    /// block: each turn runs one block fewer, and a `while`
    /// loop tests at its bottom (loop rotation). Only blocks of at most
    /// [`MAX_COPIED_OPS`] operations. Code elsewhere that used the copied
    /// block's values gets the original's or the copy's through new
    /// parameters ([`ResidualFunction::repair_after_copy`]).
    /// Returns whether it added parameters (some may have one value: see
    /// [`ResidualFunction::propagate`]).
    fn close_loops_through_small_blocks(&mut self) -> bool {
        let n = self.blocks.len();
        let mut preds: SecondaryMap<Label, usize> = SecondaryMap::new();
        for (_, b) in self.live_blocks() {
            for t in b.term.iter().flat_map(|t| t.targets()) {
                preds[t] += 1;
            }
        }
        // Copies end the way their originals do, so a copy may be a back
        // edge's block in turn: each is visited too, up to one copy per
        // original block.
        // (copy, the block that jumps to it)
        let mut copies: Vec<(Label, Label)> = Vec::new();
        let mut repaired = false;
        let mut next = 0;
        while next < self.blocks.len() && copies.len() < n {
            let p = Label::new(next);
            next += 1;
            let Some(Terminator::Jump(t, _)) = &self.blocks[p].term else { continue };
            let t = *t;
            let tb = t;
            let target = &self.blocks[tb];
            let Some(term) = &target.term else { continue };
            let onward = term.targets();
            if onward.is_empty()
                || onward.contains(&t)
                || tb == p
                || tb == Label::ENTRY
                || preds[tb] < 2
                || target.insts.len() > MAX_COPIED_OPS
                || !self.reached_from(t)[p]
            {
                continue;
            }
            let defs: Vec<Val> =
                target.params.iter().copied().chain(target.insts.iter().flat_map(|i| i.defs())).collect();
            let escaping = self.used_outside(tb, &defs);
            let (params, mut insts, mut term) = (target.params.clone(), target.insts.clone(), term.clone());
            let mut map: rustc_hash::FxHashMap<Val, Val> = rustc_hash::FxHashMap::default();
            let vals = &mut self.vals;
            let mut fresh = |d: Val, map: &mut rustc_hash::FxHashMap<Val, Val>| {
                let f = vals.push(vals[d]);
                map.insert(d, f);
                f
            };
            let params: Vec<Val> = params.into_iter().map(|q| fresh(q, &mut map)).collect();
            for i in &mut insts {
                i.map_uses(&|v| map.get(&v).copied().unwrap_or(v));
                i.map_defs(&mut |d| fresh(d, &mut map));
            }
            term.map_uses(&|v| map.get(&v).copied().unwrap_or(v));
            let copy = self.blocks.push(RBlock { params, insts, term: Some(term) });
            if let Some(Terminator::Jump(to, _)) = &mut self.blocks[p].term {
                *to = copy;
            }
            preds[tb] -= 1;
            preds[copy] = 1;
            for u in onward {
                preds[u] += 1;
            }
            if !escaping.is_empty() {
                let preds = self.pred_lists();
                for e in &escaping {
                    self.repair_after_copy(*e, tb, copy, map[e], &preds);
                }
                repaired = true;
            }
            copies.push((copy, p));
        }
        // Each copy has one way in, a jump from the block it was made for:
        // it joins that block (or the block that one joined).
        // Its parameters become the jump's arguments everywhere (SSA repair
        // may have passed them on).
        let mut joined: rustc_hash::FxHashMap<Label, Label> = rustc_hash::FxHashMap::default();
        let mut subst: rustc_hash::FxHashMap<Val, Val> = rustc_hash::FxHashMap::default();
        for &(copy, p) in &copies {
            let into = joined.get(&p).copied().unwrap_or(p);
            let args = match &mut self.blocks[into].term {
                Some(Terminator::Jump(to, args)) if *to == copy => std::mem::take(args),
                // (Not expected: the copy then stays a block of its own.)
                _ => continue,
            };
            let RBlock { params, insts, term } = std::mem::take(&mut self.blocks[copy]);
            subst.extend(params.into_iter().zip(args));
            let blk = &mut self.blocks[into];
            blk.insts.extend(insts);
            blk.term = term;
            joined.insert(copy, into);
        }
        if !subst.is_empty() {
            let resolve = |mut v: Val| {
                while let Some(n) = subst.get(&v) {
                    v = *n;
                }
                v
            };
            for b in self.blocks.values_mut() {
                b.insts.iter_mut().for_each(|i| i.map_uses(&resolve));
                b.term.iter_mut().for_each(|t| t.map_uses(&resolve));
            }
        }
        repaired
    }

    /// For each block, the live blocks that continue at it (each once).
    fn pred_lists(&self) -> SecondaryMap<Label, Vec<Label>> {
        let mut preds: SecondaryMap<Label, Vec<Label>> = SecondaryMap::new();
        for (l, blk) in self.live_blocks() {
            for s in blk.term.iter().flat_map(|t| t.targets()) {
                if !preds[s].contains(&l) {
                    preds[s].push(l);
                }
            }
        }
        preds
    }

    /// Of `defs` (values of block `b`), those that code in other live
    /// blocks uses.
    fn used_outside(&self, b: Label, defs: &[Val]) -> Vec<Val> {
        let mut used = vec![false; defs.len()];
        for (l, blk) in self.live_blocks() {
            if l == b {
                continue;
            }
            let mut note = |v: Val| {
                if let Some(k) = defs.iter().position(|d| *d == v) {
                    used[k] = true;
                }
            };
            blk.insts.iter().for_each(|i| i.for_each_use(&mut note));
            blk.term.iter().for_each(|t| t.for_each_use(&mut note));
        }
        defs.iter().zip(used).filter(|(_, u)| *u).map(|(d, _)| *d).collect()
    }

    /// SSA repair after block `t` was copied as block `copy`: `e`, defined
    /// in `t`, now has a second definition, `e_copy` in the copy. Each use
    /// of `e` outside the two becomes the value that reaches it: a block
    /// with several predecessors gets a parameter where they may bring
    /// different ones. Since `t` dominated every use, every path to one now
    /// passes `t` or the copy.
    /// (`preds`: [`ResidualFunction::pred_lists`]; repair adds arguments,
    /// never edges.)
    fn repair_after_copy(
        &mut self,
        e: Val,
        t: Label,
        copy: Label,
        e_copy: Val,
        preds: &SecondaryMap<Label, Vec<Label>>,
    ) {
        let mut users = Vec::new();
        for (b, blk) in self.live_blocks() {
            let mut uses = false;
            let mut note = |v: Val| uses |= v == e;
            blk.insts.iter().for_each(|i| i.for_each_use(&mut note));
            blk.term.iter().for_each(|t| t.for_each_use(&mut note));
            if uses && b != t && b != copy {
                users.push(b);
            }
        }
        let defs = Defs { e, t, copy, e_copy };
        let mut at_start = rustc_hash::FxHashMap::default();
        for b in users {
            let r = self.value_at_start(b, &defs, preds, &mut at_start);
            let swap = |v: Val| if v == e { r } else { v };
            let blk = &mut self.blocks[b];
            blk.insts.iter_mut().for_each(|i| i.map_uses(&swap));
            blk.term.iter_mut().for_each(|t| t.map_uses(&swap));
        }
    }

    /// The value of a copied block's value (see
    /// [`ResidualFunction::repair_after_copy`]) on entry to block `b`;
    /// adds the parameters it needs.
    fn value_at_start(
        &mut self,
        b: Label,
        d: &Defs,
        preds: &SecondaryMap<Label, Vec<Label>>,
        at_start: &mut rustc_hash::FxHashMap<Label, Val>,
    ) -> Val {
        if let Some(v) = at_start.get(&b) {
            return *v;
        }
        let at_end = |s: &mut Self, q: Label, at_start: &mut rustc_hash::FxHashMap<Label, Val>| {
            if q == d.t {
                d.e
            } else if q == d.copy {
                d.e_copy
            } else {
                s.value_at_start(q, d, preds, at_start)
            }
        };
        match preds[b].as_slice() {
            _ if b == Label::ENTRY => {
                // Reached without passing either definition.
                debug_assert!(false, "{:?} used where its block {:?} does not dominate", d.e, d.t);
                d.e
            }
            [] => d.e,
            [q] => {
                let v = at_end(self, *q, at_start);
                at_start.insert(b, v);
                v
            }
            _ => {
                let phi = self.vals.push(self.vals[d.e]);
                self.blocks[b].params.push(phi);
                at_start.insert(b, phi);
                for &q in &preds[b] {
                    let v = at_end(self, q, at_start);
                    if let Some(term) = &mut self.blocks[q].term {
                        term.push_arg_to(b, v);
                    }
                }
                phi
            }
        }
    }
}

/// A value with two definitions after a block was copied: `e` in block
/// `t`, `e_copy` in block `copy`.
struct Defs {
    e: Val,
    t: Label,
    copy: Label,
    e_copy: Val,
}

/// Records a residual function. Values and labels are numbered in creation order.
#[derive(Debug)]
pub struct ResidualBuilder {
    f: ResidualFunction,
    cur: Option<Label>,
    ops: usize,
    /// Execute mode (the blackhole interpreter): red boxes are all
    /// constants and operations happen at once instead of being recorded.
    pub(crate) exec: bool,
    /// How addresses were computed (see [`SymAddr`]), for the values that
    /// are not roots.
    pub(crate) addrs: rustc_hash::FxHashMap<Val, SymAddr>,
    /// Integer values made by a widening cast, and what they widen.
    pub(crate) widened: rustc_hash::FxHashMap<Val, Val>,
    /// Calls recorded so far (a call may change any `Vec`'s length or buffer).
    pub(crate) calls: u64,
}

/// An address as it was computed: `root + index * stride + offset`, `root`
/// being a value that was not computed so (an input, a load, a constant).
/// Two addresses with equal `SymAddr`s are equal, whatever residual values
/// computed them: this is what lets a known field be found again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SymAddr {
    /// Where the computation started.
    pub root: crate::ir::operand::RedBox,
    /// A run-time index (through widening casts) and its stride, if any.
    pub index: Option<(crate::ir::operand::RedBox, u64)>,
    /// Bytes added.
    pub offset: i64,
}

impl SymAddr {
    /// The address `offset` bytes further.
    pub fn plus(self, offset: i64) -> SymAddr {
        SymAddr { offset: self.offset.wrapping_add(offset), ..self }
    }
}

impl ResidualBuilder {
    /// Starts a function; the entry block is current and its parameters are the inputs.
    pub fn new(name: &str, inputs: &[ValTy], outputs: &[ValTy]) -> ResidualBuilder {
        let mut b = ResidualBuilder {
            f: ResidualFunction {
                name: name.to_string(),
                inputs: inputs.to_vec(),
                outputs: outputs.to_vec(),
                vals: PrimaryMap::new(),
                blocks: PrimaryMap::from(vec![RBlock::default()]),
                switches: vec![],
                pieces: None,
            },
            cur: Some(Label::ENTRY),
            ops: 0,
            exec: false,
            addrs: Default::default(),
            widened: Default::default(),
            calls: 0,
        };
        for t in inputs {
            let v = b.new_val(*t);
            b.f.blocks[Label::ENTRY].params.push(v);
        }
        b
    }

    fn new_val(&mut self, ty: ValTy) -> Val {
        self.f.vals.push(ty)
    }

    /// The entry block's parameters.
    pub fn inputs(&self) -> &[Val] {
        &self.f.blocks[Label::ENTRY].params
    }

    /// The type of a value.
    pub fn ty(&self, v: Val) -> ValTy {
        self.f.vals[v]
    }

    /// Residual instructions recorded so far.
    pub fn op_count(&self) -> usize {
        self.ops
    }

    /// Whether the builder executes instead of recording (the scheduler's execute mode, `Compilation::executing`).
    pub fn is_executing(&self) -> bool {
        self.exec
    }

    /// The function recorded so far (not simplified yet).
    pub fn function(&self) -> &ResidualFunction {
        &self.f
    }

    /// Whether a block is being filled (false after a terminator, until `switch_to`).
    pub fn is_open(&self) -> bool {
        self.cur.is_some()
    }

    fn push(&mut self, inst: Inst) {
        let l = self.cur.expect("emitting into a terminated block");
        self.ops += 1;
        self.f.blocks[l].insts.push(inst);
    }

    fn push_def(&mut self, ty: ValTy, make: impl FnOnce(Val) -> Inst) -> Val {
        let dst = self.new_val(ty);
        self.push(make(dst));
        dst
    }

    /// A constant.
    pub fn konst(&mut self, ty: ValTy, bits: u64) -> Val {
        let bits = ty.canon(bits);
        self.push_def(ty, |dst| Inst::Const { dst, ty, bits })
    }

    /// `a op b`.
    pub fn bin(&mut self, op: BinOp, ty: ValTy, ov: Overflow, a: Val, b: Val) -> Val {
        self.push_def(ty, |dst| Inst::Bin { dst, op, ty, ov, a, b })
    }

    /// `op a`.
    pub fn un(&mut self, op: UnOp, ty: ValTy, ov: Overflow, a: Val) -> Val {
        self.push_def(ty, |dst| Inst::Un { dst, op, ty, ov, a })
    }

    /// `a op b` (a bool).
    pub fn cmp(&mut self, op: CmpOp, ty: ValTy, a: Val, b: Val) -> Val {
        self.push_def(ValTy::Bool, |dst| Inst::Cmp { dst, op, ty, a, b })
    }

    /// `a as to`.
    pub fn cast(&mut self, from: ValTy, to: ValTy, a: Val) -> Val {
        self.push_def(to, |dst| Inst::Cast { dst, from, to, a })
    }

    /// A load at `base + offset`.
    pub fn load(&mut self, ty: ValTy, base: Val, offset: i32) -> Val {
        self.push_def(ty, |dst| Inst::Load { dst, ty, base, offset })
    }

    /// A store at `base + offset`.
    pub fn store(&mut self, ty: ValTy, base: Val, offset: i32, value: Val) {
        self.push(Inst::Store { ty, base, offset, value });
    }

    /// Leaves with `IndexOutOfBounds` unless `index < len`.
    pub fn bounds_check(&mut self, index: Val, len: Val) {
        self.push(Inst::BoundsCheck { index, len });
    }

    /// A call of a Rust callback (see [`CallbackFn`]) returning values of the given types.
    pub fn call(&mut self, func: CallbackFn, name: &str, args: &[(Val, ValTy)], rets: &[ValTy]) -> Vec<Val> {
        let dsts: Vec<Val> = rets.iter().map(|t| self.new_val(*t)).collect();
        self.calls += 1;
        self.push(Inst::Call { dsts: dsts.clone(), func, name: name.to_string(), args: args.to_vec() });
        dsts
    }

    /// A new label with parameters of the given types (not current).
    pub fn new_label(&mut self, params: &[ValTy]) -> (Label, Vec<Val>) {
        let vals: Vec<Val> = params.iter().map(|t| self.new_val(*t)).collect();
        (self.f.blocks.push(RBlock { params: vals.clone(), insts: vec![], term: None }), vals)
    }

    /// If the current block has recorded nothing and `args` (of types
    /// `tys`) are distinct parameters of it: the block, and the position of
    /// each among its parameters. Jumping to the block with them there
    /// ([`ResidualBuilder::args_at`]) is then the same as continuing here.
    pub fn forwarding_params(&self, args: &[Val], tys: &[ValTy]) -> Option<(Label, Vec<u32>)> {
        let l = self.cur?;
        let blk = &self.f.blocks[l];
        if l == Label::ENTRY || !blk.insts.is_empty() || args.len() != tys.len() {
            return None;
        }
        let mut perm = Vec::with_capacity(args.len());
        for (a, t) in args.iter().zip(tys) {
            let p = blk.params.iter().position(|p| p == a)? as u32;
            if perm.contains(&p) || self.f.vals[*a] != *t {
                return None;
            }
            perm.push(p);
        }
        Some((l, perm))
    }

    /// The arguments of a jump to `l` that puts `args` at the positions
    /// `perm` among its parameters; the others get zeros (the code there
    /// no longer reads them).
    pub fn args_at(&mut self, l: Label, perm: &[u32], args: &[Val]) -> Vec<Val> {
        let params = self.f.blocks[l].params.clone();
        let mut out: Vec<Option<Val>> = vec![None; params.len()];
        for (&p, a) in perm.iter().zip(args) {
            out[p as usize] = Some(*a);
        }
        params.iter().zip(out).map(|(p, a)| a.unwrap_or_else(|| self.konst(self.f.vals[*p], 0))).collect()
    }

    /// Where the next instruction goes: the current block and its length.
    pub fn mark(&self) -> Option<(Label, usize)> {
        self.cur.map(|l| (l, self.f.blocks[l].insts.len()))
    }

    /// Moves the instructions of terminated block `l` from index `at` on,
    /// and its terminator, to a new block without parameters, which it
    /// returns; `l` is current again, open at its end.
    pub fn split_block(&mut self, l: Label, at: usize) -> Label {
        let (rest, _) = self.new_label(&[]);
        let blk = &mut self.f.blocks[l];
        let (insts, term) = (blk.insts.split_off(at), blk.term.take());
        let moved = &mut self.f.blocks[rest];
        (moved.insts, moved.term) = (insts, term);
        self.cur = Some(l);
        rest
    }

    /// Replaces the uses of values by others (`subst`, followed through
    /// chains) in the blocks `in_block` selects.
    pub fn substitute(&mut self, in_block: impl Fn(Label) -> bool, subst: &rustc_hash::FxHashMap<Val, Val>) {
        let resolve = |v: Val| {
            let mut v = v;
            // (Bounded: a cycle would be a caller's mistake.)
            for _ in 0..=subst.len() {
                match subst.get(&v) {
                    Some(n) => v = *n,
                    None => break,
                }
            }
            v
        };
        for (l, b) in self.f.blocks.iter_mut() {
            if !in_block(l) {
                continue;
            }
            for inst in &mut b.insts {
                inst.map_uses(&resolve);
            }
            if let Some(t) = &mut b.term {
                t.map_uses(&resolve);
            }
        }
    }

    /// Continues emitting into `l`.
    pub fn switch_to(&mut self, l: Label) {
        self.cur = Some(l);
    }

    fn terminate(&mut self, t: Terminator) {
        let l = self.cur.take().expect("terminating a terminated block");
        self.f.blocks[l].term = Some(t);
    }

    /// Ends the current block with a jump.
    pub fn jump(&mut self, l: Label, args: &[Val]) {
        self.terminate(Terminator::Jump(l, args.to_vec()));
    }

    /// Ends the current block with a two-way branch.
    pub fn branch(&mut self, cond: Val, if_true: (Label, &[Val]), if_false: (Label, &[Val])) {
        self.terminate(Terminator::Branch {
            cond,
            if_true: (if_true.0, if_true.1.to_vec()),
            if_false: (if_false.0, if_false.1.to_vec()),
        });
    }

    /// Ends the current block by returning the outputs.
    pub fn ret(&mut self, vals: &[Val]) {
        self.terminate(Terminator::Return(vals.to_vec()));
    }

    /// Ends the current block with an error exit.
    pub fn error_exit(&mut self, kind: ErrorKind) {
        self.terminate(Terminator::Error(kind));
    }

    /// Ends the current block with a flexswitch on `value` dispatching
    /// through `table` (see [`Terminator::FlexSwitch`]).
    pub fn flexswitch(&mut self, value: Val, live: &[Val], table: std::rc::Rc<dyn SwitchTable>) {
        self.f.switches.push(table);
        let switch = self.f.switches.len() as u32 - 1;
        self.terminate(Terminator::FlexSwitch { value, live: live.to_vec(), switch });
    }

    /// The finished function, simplified. Blocks left open are an error exit
    /// (they cannot be reached by a complete compilation).
    pub fn finish(mut self) -> ResidualFunction {
        for b in self.f.blocks.values_mut() {
            if b.term.is_none() && (!b.insts.is_empty() || !b.params.is_empty()) {
                b.term = Some(Terminator::Error(ErrorKind::Abort(u32::MAX)));
            }
        }
        let entry = &mut self.f.blocks[Label::ENTRY];
        if entry.term.is_none() {
            entry.term = Some(Terminator::Error(ErrorKind::Abort(u32::MAX)));
        }
        self.f.simplify();
        self.f
    }
}

/// The readable listing of a residual function, one operation per line.
pub fn listing(f: &ResidualFunction) -> String {
    // Values are numbered in order of definition, so that listings do not
    // depend on labels that simplification removed.
    let mut number: HashMap<Val, usize> = HashMap::new();
    for (_, b) in f.live_blocks() {
        for p in &b.params {
            let n = number.len();
            number.insert(*p, n);
        }
        for i in &b.insts {
            for d in i.defs() {
                let n = number.len();
                number.insert(d, n);
            }
        }
    }
    let v = |x: &Val| match number.get(x) {
        Some(n) => format!("v{n}"),
        None => format!("?{}", x.index()),
    };
    let vs = |xs: &[Val]| xs.iter().map(v).collect::<Vec<_>>().join(", ");
    let target = |(l, args): &(Label, Vec<Val>)| format!("L{}({})", l.index(), vs(args));
    let mut out = String::new();
    for (l, b) in f.live_blocks() {
        let params: Vec<String> = b.params.iter().map(|p| format!("{}: {}", v(p), f.vals[*p])).collect();
        let name = if l == Label::ENTRY { "entry".to_string() } else { format!("L{}", l.index()) };
        let _ = writeln!(out, "{name}({}):", params.join(", "));
        for i in &b.insts {
            let line = match i {
                Inst::Const { dst, ty, bits } => {
                    let shown = match ty {
                        ValTy::F64 => format!("{:?}", f64::from_bits(*bits)),
                        t if t.signed() => format!("{}", *bits as i64),
                        ValTy::Bool => format!("{}", *bits != 0),
                        ValTy::Ptr => format!("{bits:#x}"),
                        _ => format!("{bits}"),
                    };
                    format!("{} = const.{ty} {shown}", v(dst))
                }
                Inst::Bin { dst, op, ty, ov, a, b } => {
                    let checked = if *ov == Overflow::Check { "_checked" } else { "" };
                    format!("{} = {}{checked}.{ty} {}, {}", v(dst), op.name(), v(a), v(b))
                }
                Inst::Un { dst, op, ty, ov, a } => {
                    let checked = if *ov == Overflow::Check { "_checked" } else { "" };
                    format!("{} = {}{checked}.{ty} {}", v(dst), op.name(), v(a))
                }
                Inst::Cmp { dst, op, ty, a, b } => format!("{} = {}.{ty} {}, {}", v(dst), op.name(), v(a), v(b)),
                Inst::Cast { dst, from, to, a } => format!("{} = cast.{from}.{to} {}", v(dst), v(a)),
                Inst::Load { dst, ty, base, offset } => format!("{} = load.{ty} {}+{offset}", v(dst), v(base)),
                Inst::Store { ty, base, offset, value } => format!("store.{ty} {}+{offset}, {}", v(base), v(value)),
                Inst::BoundsCheck { index, len } => format!("bounds_check {}, {}", v(index), v(len)),
                Inst::Call { dsts, name, args, .. } => {
                    let a: Vec<Val> = args.iter().map(|(x, _)| *x).collect();
                    if dsts.is_empty() {
                        format!("call {name}({})", vs(&a))
                    } else {
                        format!("{} = call {name}({})", vs(dsts), vs(&a))
                    }
                }
            };
            let _ = writeln!(out, "    {line}");
        }
        let term = match b.term.as_ref().expect("live block") {
            Terminator::Jump(l, args) => format!("jump {}", target(&(*l, args.clone()))),
            Terminator::Branch { cond, if_true, if_false } => {
                format!("branch {}, {}, {}", v(cond), target(if_true), target(if_false))
            }
            Terminator::Return(vals) => format!("return {}", vs(vals)),
            Terminator::Error(k) => format!("error {k:?}"),
            Terminator::FlexSwitch { value, live, switch } => {
                format!("flexswitch {} [live {}] #{switch}", v(value), vs(live))
            }
        };
        let _ = writeln!(out, "    {term}");
    }
    out
}

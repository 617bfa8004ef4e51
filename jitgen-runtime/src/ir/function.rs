//! Residual functions as data: values, labels, instructions, terminators,
//! and the analyses that passes and backends ask of a function.
//!
//! A residual function has typed inputs and outputs, and blocks (labels) with
//! typed parameters, instructions and one terminator. Generating extensions
//! never touch it directly: they work on red boxes, and the scheduler and merge
//! logic decide where labels go and what flows into them. The builder (the
//! module beside this one) only records; passes rewrite
//! ([`crate::ir::passes`]); backends consume the finished function.
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

pub use cranelift_entity::{EntityRef, PrimaryMap, SecondaryMap};

use crate::ir::ops::{BinOp, CmpOp, ErrorKind, Overflow, UnOp, ValTy};

/// A value of residual code: an index into [`ResidualFunction::vals`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct Val(u32);
cranelift_entity::entity_impl!(Val);

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
    /// `len` counters, one per case, each added one to when residual code
    /// takes its case through the table (fusion copies the cases taken).
    pub hits: *mut u64,
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
    /// How many cases were added to the switches of the root and its
    /// pieces so far (each new piece is one; a case may also continue in a
    /// piece compiled before).
    fn cases(&self) -> usize;
    /// Each piece's entry address (what its switches' case tables hold)
    /// and function, in the order they were compiled.
    fn functions(&self) -> Vec<(usize, std::rc::Rc<ResidualFunction>)>;
    /// Keeps `owner` (machine code that the switches' tables may enter,
    /// such as a fused root's reentries) as long as the pieces.
    fn keep(&self, owner: std::rc::Rc<dyn std::any::Any>);
    /// Records the root function the pieces belong to, once it is compiled
    /// (weakly: the root owns them), for a switch whose cases run hot to
    /// fuse it from inside a long call.
    fn set_root(&self, _root: std::rc::Weak<dyn std::any::Any>) {}
    /// The root function recorded by [`Pieces::set_root`], while it lives.
    fn root(&self) -> Option<std::rc::Rc<dyn std::any::Any>> {
        None
    }
    /// The counter of turns that the tree's code makes through its root's
    /// entry, where it has turn checks (see [`TurnCounter`]).
    fn turns(&self) -> Option<&TurnCounter> {
        None
    }
}

/// Turns left before a portal's residual code checks its own speed: a word
/// that the code decrements each time it comes to the position it was
/// entered at (a *turn check*, made by the scheduler's `merge`). Every
/// tree of compiled code rooted at one position shares one counter, so
/// that a count spans the turns of all of them, as the portal's clock of
/// time in code spans their time. Where it reaches zero the path leaves to
/// the interpreter, and the portal compares the time the code took per
/// turn with the interpreter's per visit of the position
/// (`portal::slow::TurnClock`). It starts at `i64::MAX` (never reached)
/// until a portal arms it.
///
/// The comparison holds only where every turn counts: code that comes to
/// the position uncounted on some paths (a compilation of a tree that had
/// recorded no call of Rust yet, a recursion's returns through the
/// continuation stack) seems slower per counted turn than it is. Such a
/// counter is *partial*, and its portal never arms it.
#[repr(C)]
#[derive(Debug)]
pub struct TurnCounter {
    /// The turns left; what residual code reads and writes at offset 0.
    pub left: std::cell::Cell<i64>,
    /// Some path comes back to the merge point without counting.
    pub partial: std::cell::Cell<bool>,
    /// Some compilation of a tree counting here called Rust on paths
    /// commonly taken: the cases compiled after it count their turns
    /// whether or not they call Rust themselves (a turn passes through
    /// several).
    pub calls_rust: std::cell::Cell<bool>,
    /// The turns the next count is armed with (0 before the first); the
    /// counter's, since every tree rooted at one position shares it (see
    /// `portal::slow::TurnClock`).
    pub turns: std::cell::Cell<i64>,
    /// The code time and compile time when the count under way was armed.
    pub armed: std::cell::Cell<Option<(std::time::Duration, u64)>>,
}

impl Default for TurnCounter {
    fn default() -> Self {
        TurnCounter {
            left: std::cell::Cell::new(i64::MAX),
            partial: std::cell::Cell::new(false),
            calls_rust: std::cell::Cell::new(false),
            turns: std::cell::Cell::new(0),
            armed: std::cell::Cell::new(None),
        }
    }
}

impl TurnCounter {
    /// Whether the code ran its turns out and left to be measured.
    pub fn ran_out(&self) -> bool {
        self.left.get() <= 0
    }

    /// Records a path that comes back to the merge point without counting:
    /// the count is never armed again, and one armed runs no more out.
    pub fn set_partial(&self) {
        self.partial.set(true);
        self.left.set(i64::MAX);
    }
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
    /// buffer's first words (their types are the values' types). A `cold`
    /// call (`call.cold` in the listing: a helper on a path rarely taken,
    /// such as a `Vec` growing) is made so that it clobbers no register. A
    /// `pure` call (`call.pure`: a helper that only reads, or fills a cache
    /// nothing else of residual code reads) is dropped when its results are
    /// unused.
    Call { dsts: Vec<Val>, func: CallbackFn, name: String, args: Vec<(Val, ValTy)>, cold: bool, pure: bool },
    /// Call compiled residual code directly (a direct call's fast path, see
    /// the run-time layer's `direct`): `code` is the address of its entry
    /// point, called on a frame of `MAX_FRAME_WORDS` words holding `args`
    /// first. A non-zero status goes to the run-time failure hook with the
    /// frame and `entry` (the address of the callee's direct entry), which
    /// finishes a hand-over there, or gives the status residual code leaves
    /// with. The results are the frame's first words.
    CallCode { dsts: Vec<Val>, code: Val, entry: u64, args: Vec<(Val, ValTy)> },
}

impl Inst {
    /// The values defined.
    pub fn defs(&self) -> &[Val] {
        match self {
            Inst::Const { dst, .. }
            | Inst::Bin { dst, .. }
            | Inst::Un { dst, .. }
            | Inst::Cmp { dst, .. }
            | Inst::Cast { dst, .. }
            | Inst::Load { dst, .. } => std::slice::from_ref(dst),
            Inst::Call { dsts, .. } | Inst::CallCode { dsts, .. } => dsts,
            Inst::Store { .. } | Inst::BoundsCheck { .. } => &[],
        }
    }

    pub(crate) fn map_defs(&mut self, f: &mut dyn FnMut(Val) -> Val) {
        match self {
            Inst::Const { dst, .. }
            | Inst::Bin { dst, .. }
            | Inst::Un { dst, .. }
            | Inst::Cmp { dst, .. }
            | Inst::Cast { dst, .. }
            | Inst::Load { dst, .. } => *dst = f(*dst),
            Inst::Call { dsts, .. } | Inst::CallCode { dsts, .. } => dsts.iter_mut().for_each(|d| *d = f(*d)),
            Inst::Store { .. } | Inst::BoundsCheck { .. } => {}
        }
    }

    /// Calls `f` on each value used (the same as [`Inst::map_uses`] visits).
    pub(crate) fn for_each_use(&self, f: &mut dyn FnMut(Val)) {
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
            Inst::CallCode { code, args, .. } => {
                f(*code);
                args.iter().for_each(|(a, _)| f(*a));
            }
        }
    }

    pub(crate) fn map_uses(&mut self, f: &dyn Fn(Val) -> Val) {
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
            Inst::CallCode { code, args, .. } => {
                *code = f(*code);
                args.iter_mut().for_each(|(a, _)| *a = f(*a));
            }
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
    pub(crate) fn for_each_use(&self, f: &mut dyn FnMut(Val)) {
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

    pub(crate) fn map_uses(&mut self, f: &dyn Fn(Val) -> Val) {
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
    pub(crate) fn push_arg_to(&mut self, to: Label, v: Val) {
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

    /// The labels this terminator may continue at (no allocation: the
    /// passes walk them for every block, again and again).
    pub fn targets(&self) -> smallvec::SmallVec<[Label; 2]> {
        match self {
            Terminator::Jump(l, _) => smallvec::smallvec![*l],
            Terminator::Branch { if_true, if_false, .. } => smallvec::smallvec![if_true.0, if_false.0],
            _ => smallvec::SmallVec::new(),
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

impl RBlock {
    /// Whether an instruction or the terminator of the block uses `v`.
    pub(crate) fn uses(&self, v: Val) -> bool {
        let mut used = false;
        let mut see = |u: Val| used |= u == v;
        self.insts.iter().for_each(|i| i.for_each_use(&mut see));
        self.term.iter().for_each(|t| t.for_each_use(&mut see));
        used
    }
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
    /// The words of memory the backend keeps in registers while the
    /// function runs (see [`RegisterCell`]).
    pub cells: Vec<RegisterCell>,
    /// Blocks where the function may also be entered, besides its entry:
    /// a fused root's copies of its pieces (see `passes::fuse`). The
    /// backend gives each an entry point of its own, whose inputs are that
    /// block's parameters, in the frame as the entry's are.
    pub reentries: Vec<Label>,
    /// Whether the function is as recorded, its residual passes still to
    /// run ([`ResidualFunction::simplify`]): a root compiled on the
    /// compiler's thread is simplified there (see `run::background`), off
    /// the interpreter's thread. Whoever compiles such a function runs
    /// them first ([`ResidualFunction::run_pending_passes`]).
    pub passes_pending: bool,
    /// How many turns the function's own loops took where it ran as a
    /// flexswitch's case (counted at their heads, [`ResidualFunction::loop_heads`],
    /// by the code `CraneliftBackend::compile_case` makes; a fused copy
    /// counts nothing): what its case's entries alone do not tell, the
    /// time spent in a piece entered seldom that loops (see
    /// `run::fusion`). None where detached.
    pub turns: Option<std::rc::Rc<std::cell::Cell<u64>>>,
}

/// A word of memory at a constant address that, while a residual function
/// runs, only its loads and stores at that address and offset and the
/// callbacks and code it calls read or write: the continuation stack's
/// length, buffer, capacity and base. The backend keeps such a word in a
/// register: a load of it reads the register and a store writes it; the
/// word is loaded when the function starts, stored before each call and
/// each exit (return, error, flexswitch), and loaded again after each call.
/// A loop that pushes and pops continuation entries then carries the
/// stack's length from one turn to the next in a register, not through a
/// store and a load of memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RegisterCell {
    /// The constant address (of a value of type `ptr`).
    pub address: u64,
    /// The byte offset of the word from it.
    pub offset: i32,
}

/// Frames hold at most this many words (inputs, outputs, the live values of
/// a flexswitch and its two words): a function needing more is not compiled,
/// and the scheduler forces virtual objects before a flexswitch would need more.
pub const MAX_FRAME_WORDS: usize = 64;

/// A map over the values of `f`, every one of them in range, with room
/// for the values a pass adds, so that writes rarely grow it.
pub(crate) fn dense_for<T: Clone + Default>(f: &ResidualFunction) -> SecondaryMap<Val, T> {
    let mut m = SecondaryMap::with_capacity(f.vals.len() + f.vals.len() / 4 + 16);
    m.resize(f.vals.len());
    m
}

impl ResidualFunction {
    /// The function without its switch tables and pieces (which belong to
    /// the thread that made them), for a backend compiling on another
    /// thread; the switches' flexswitch terminators still index the
    /// original's tables (see the Cranelift backend's `CodeContext`).
    /// `self` keeps its name, types, tables and pieces, and gives up its
    /// code: [`ResidualFunction::attached`] puts them back together.
    pub fn detach(&mut self) -> ResidualFunction {
        ResidualFunction {
            name: self.name.clone(),
            inputs: self.inputs.clone(),
            outputs: self.outputs.clone(),
            vals: std::mem::take(&mut self.vals),
            blocks: std::mem::take(&mut self.blocks),
            switches: Vec::new(),
            pieces: None,
            cells: std::mem::take(&mut self.cells),
            reentries: std::mem::take(&mut self.reentries),
            passes_pending: self.passes_pending,
            turns: None,
        }
    }

    /// `code` (what [`ResidualFunction::detach`] took of `self`, simplified
    /// or not since) with `self`'s switch tables and pieces.
    pub fn attached(self, code: ResidualFunction) -> ResidualFunction {
        ResidualFunction { switches: self.switches, pieces: self.pieces, turns: self.turns, ..code }
    }

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

    /// Live blocks in reverse postorder from the entry and the
    /// [`ResidualFunction::reentries`] (then any live block not reached, in
    /// label order): every block comes after the blocks that dominate it, so
    /// a value's definition comes before its uses. Label order does not
    /// promise that: `simplify` may merge a block into a predecessor created
    /// after the blocks it dominates.
    pub fn blocks_in_dominance_order(&self) -> Vec<Label> {
        let mut seen: SecondaryMap<Label, bool> = SecondaryMap::new();
        let mut post: Vec<Label> = Vec::with_capacity(self.blocks.len());
        // Iterative depth-first search from each entry in turn (the
        // reverse postorder of a search from one root above them all):
        // (block, next successor to visit).
        let mut stack: Vec<(Label, usize)> = vec![];
        for root in std::iter::once(Label::ENTRY).chain(self.reentries.iter().copied()) {
            if seen[root] || self.blocks.get(root).is_none_or(|b| b.term.is_none()) {
                continue;
            }
            seen[root] = true;
            stack.push((root, 0));
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
    pub(crate) fn def_blocks(&self) -> SecondaryMap<Val, Option<Label>> {
        let mut def_block = dense_for(self);
        for (b, blk) in self.live_blocks() {
            for v in blk.params.iter().chain(blk.insts.iter().flat_map(Inst::defs)).copied() {
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
        // Each entry is a root of its own (values reach a reentry only as its
        // parameters).
        let mut idom: SecondaryMap<Label, Option<Label>> = SecondaryMap::new();
        let mut root: SecondaryMap<Label, bool> = SecondaryMap::new();
        for r in std::iter::once(Label::ENTRY).chain(self.reentries.iter().copied()) {
            idom[r] = Some(r);
            root[r] = true;
        }
        let mut changed = true;
        while changed {
            changed = false;
            for &b in order.iter().filter(|b| !root[**b]) {
                let mut new: Option<Label> = None;
                for &p in &preds[b] {
                    if idom[p].is_none() {
                        continue;
                    }
                    let Some(so_far) = new else {
                        new = Some(p);
                        continue;
                    };
                    // The nearest common dominator; a block reached from two
                    // entries has none but itself.
                    let (mut x, mut y) = (p, so_far);
                    let up = |l: Label| idom[l].filter(|u| *u != l);
                    new = loop {
                        if x == y {
                            break Some(x);
                        }
                        let higher = if rpo_index[x] > rpo_index[y] { &mut x } else { &mut y };
                        match up(*higher) {
                            Some(u) => *higher = u,
                            None => break Some(b),
                        }
                    };
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
                Some(up) if !root[b] && up != b => b = up,
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
                seen.extend(i.defs().iter().copied());
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

    /// The blocks that control comes back to from a block it reached from
    /// them (the targets of the back edges of a depth-first walk): one per
    /// loop of the function's own (a flexswitch's cases are other
    /// functions), none where it has no loop.
    pub fn loop_heads(&self) -> Vec<Label> {
        // Depth first from every block: 1 on the path, 2 done.
        let mut color: SecondaryMap<Label, u8> = SecondaryMap::new();
        let mut heads = vec![];
        let targets = |l: Label| self.blocks[l].term.as_ref().map(Terminator::targets).unwrap_or_default();
        for (start, _) in self.live_blocks() {
            if color[start] != 0 {
                continue;
            }
            color[start] = 1;
            let mut path = vec![(start, targets(start), 0)];
            while let Some((l, ts, i)) = path.last_mut() {
                let Some(&t) = ts.get(*i) else {
                    color[*l] = 2;
                    path.pop();
                    continue;
                };
                *i += 1;
                match color[t] {
                    1 if !heads.contains(&t) => heads.push(t),
                    0 => {
                        color[t] = 1;
                        path.push((t, targets(t), 0));
                    }
                    _ => {}
                }
            }
        }
        heads
    }

    /// The number of instructions (residual operations) in live blocks.
    pub fn op_count(&self) -> usize {
        self.live_blocks().map(|(_, b)| b.insts.len()).sum()
    }

    /// The blocks `head` reaches (edges from them into `head` close a loop).
    pub(crate) fn reached_from(&self, head: Label) -> SecondaryMap<Label, bool> {
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

    /// The blocks reachable from the entry.
    pub(crate) fn reachable(&self) -> SecondaryMap<Label, bool> {
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

    /// The edges out of a terminator: each target with its arguments.
    pub(crate) fn edges(t: &Terminator) -> smallvec::SmallVec<[(Label, &[Val]); 2]> {
        match t {
            Terminator::Jump(l, args) => smallvec::smallvec![(*l, args.as_slice())],
            Terminator::Branch { if_true, if_false, .. } => {
                smallvec::smallvec![(if_true.0, if_true.1.as_slice()), (if_false.0, if_false.1.as_slice())]
            }
            _ => smallvec::SmallVec::new(),
        }
    }

    /// For each block, the live blocks that continue at it (each once).
    pub(crate) fn pred_lists(&self) -> SecondaryMap<Label, Vec<Label>> {
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
    pub(crate) fn used_outside(&self, b: Label, defs: &[Val]) -> Vec<Val> {
        self.users_outside(b, defs).into_iter().map(|(v, _)| v).collect()
    }

    /// Of `defs` (values of block `b`), those that code in other live
    /// blocks uses, each with those blocks (in label order): one pass over
    /// the function for all of them.
    pub(crate) fn users_outside(&self, b: Label, defs: &[Val]) -> Vec<(Val, Vec<Label>)> {
        let mut users: Vec<Vec<Label>> = vec![vec![]; defs.len()];
        for (l, blk) in self.live_blocks() {
            if l == b {
                continue;
            }
            let mut note = |v: Val| {
                if let Some(k) = defs.iter().position(|d| *d == v) {
                    if users[k].last() != Some(&l) {
                        users[k].push(l);
                    }
                }
            };
            blk.insts.iter().for_each(|i| i.for_each_use(&mut note));
            blk.term.iter().for_each(|t| t.for_each_use(&mut note));
        }
        defs.iter().copied().zip(users).filter(|(_, u)| !u.is_empty()).collect()
    }
}

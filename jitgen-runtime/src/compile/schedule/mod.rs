//! One compilation: the scheduler of a generating extension's paths, and its
//! merge points.
//!
//! The generating extension runs one path at a time. At a red split it asks
//! [`Compilation::split`], which emits a conditional branch, queues the state
//! of the other side and lets the extension continue on one side. At a merge
//! point (the entry of a join block) it hands its state to
//! [`Compilation::merge`], which freezes it and looks it up among the states
//! already compiled for the same key (function, block, greens):
//!
//! - a compiled state at least as general (each red the same constant, or a
//!   run-time value there): jump to its residual code; the path ends;
//! - otherwise a new version: constants that differ from the most general
//!   version so far become run-time values (widening), a label is made for it
//!   and the path continues there.
//!
//! When a path ends (a return, a jump to existing code), the extension asks
//! [`Compilation::next_pending`] for the next queued state.
//!
//! Termination: one key has at most [`Limits::max_versions`] versions that
//! keep constants (the last of them only those that every version and its
//! own state agree on), then the fully general one, which matches every later
//! arrival; and every compilation has a budget of residual operations, past
//! which it is declined.
//!
//! The scheduler, by concept:
//!
//! - this file: a compilation, its limits, splits and the queue of pending
//!   paths, exits, and the finished function;
//! - `merge.rs`: merge points and their versions (widening);
//! - `facts.rs`: the known fields of memory that a merge point keeps;
//! - `resume.rs`: promotion: flexswitches, and the cases compiled when one
//!   misses;
//! - `execute.rs`: execute mode, the blackhole interpreter;
//! - `entry.rs`: entry promotion: the recorded code versioned at its entry.
//!
//! Architecture Invariant: compilation terminates. A key has at most
//! [`Limits::max_versions`] versions that keep constants, then the fully
//! general one; a compilation has a budget of [`Limits::max_ops`] residual
//! operations (past it, what is left is deferred to lazily compiled pieces;
//! a hard limit of twice the budget declines), and [`Limits::max_steps`]
//! stops a green loop that never emits.

mod entry;
mod execute;
mod facts;
mod merge;
mod resume;

pub use entry::EntryFacts;
pub use resume::ResumeFns;

use merge::Version;
use resume::Tree;

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

use crate::compile::redbox::RedBox;
use crate::compile::state::{Frame, JitState, StateKey};
use crate::ir::builder::{Label, ResidualBuilder, ResidualFunction, Val};
use crate::ir::ops::{ErrorKind, ValTy};
use crate::run::stats::Stats;

/// Limits of one compilation.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Residual operations, past which the compilation is declined.
    pub max_ops: usize,
    /// Versions of one merge key before the fully general one.
    pub max_versions: usize,
    /// Steps of the generating extension (block transitions), past which
    /// the compilation is declined: green loops that never end emit nothing.
    pub max_steps: usize,
    /// Cases of one flexswitch; past them a promotion hands over to the
    /// interpreter.
    pub max_cases: usize,
    /// Cases compiled, in all, below one root compilation (its switches and
    /// theirs): past them every miss hands over to the interpreter.
    pub max_tree_cases: usize,
    /// Residual operations after which the other side of a red split is left
    /// to compile when first taken (a lazily compiled side).
    pub lazy_after_ops: usize,
    /// Whether a root's residual passes are left to whoever compiles it
    /// ([`ResidualFunction::passes_pending`]): the compiler's thread, for
    /// roots compiled there. Pieces are simplified where they are recorded.
    pub passes_elsewhere: bool,
}

impl Limits {
    /// The default limits.
    pub const DEFAULT: Limits = Limits {
        max_ops: 20_000,
        max_versions: 4,
        max_steps: 1_000_000,
        max_cases: 16,
        max_tree_cases: 1_000,
        lazy_after_ops: 2_000,
        passes_elsewhere: false,
    };
}

impl Default for Limits {
    fn default() -> Limits {
        Limits::DEFAULT
    }
}

/// What kind of join a merge point is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeKind {
    /// The head of a loop: a new shape is widened against the most general
    /// version so far (constants that differ become run-time values), so that
    /// the loop closes after a turn or two.
    LoopHead,
    /// A loop head where every red becomes a run-time value at once.
    LoopHeadGeneral,
    /// A forward join (after an `if` or a `match`): a new shape gets its own
    /// version with its constants kept (up to `Limits::max_versions`), so that
    /// facts such as an enum's tag survive the join.
    Join,
}

/// Why a compilation gave up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Declined {
    /// More residual operations than [`Limits::max_ops`].
    Budget {
        /// Operations emitted when it gave up.
        ops: usize,
    },
    /// More steps than [`Limits::max_steps`].
    Steps,
    /// The generating extension met something it cannot compile yet.
    Unsupported(String),
}

/// Why a root that could only run straight to a hand-over is declined (see
/// `Compilation::may_run_straight_to_a_hand_over`); `portal::sampler::decline_kind` reads
/// it as positional.
pub const ONLY_HANDS_OVER: &str = "its code would only run straight to a hand-over: it starts in the rest of a call";

/// Why a root entered inside a call of a recursion is declined (see
/// `Compilation::inside_a_call`); positional, as [`ONLY_HANDS_OVER`].
pub const INSIDE_A_CALL: &str =
    "it starts inside a call of a recursion, which would run from there as the rest of a call at each level";

/// Counts of what one compilation did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompileStats {
    /// Red splits (conditional branches emitted).
    pub splits: usize,
    /// Merge points reached.
    pub merges: usize,
    /// Joins passed without a merge: no branch since the path's last
    /// merge point, so no other path can reach them (see `merge`).
    pub joins_passed: usize,
    /// Merge points that jumped to existing code.
    pub matches: usize,
    /// Turn checks made (see `Compilation::turn_check`).
    pub turn_checks: usize,
    /// New, more general versions of a loop head already seen (widenings).
    pub widenings: usize,
    /// Red splits whose other side was left to compile when first taken.
    pub lazy_splits: usize,
    /// Flexswitches emitted (promotions and lazily compiled sides).
    pub flexswitches: usize,
    /// Merge points where virtual objects were forced to share code
    /// compiled for real ones.
    pub forced_at_merges: usize,
    /// Merge points where virtual lists were forced: they grew in a loop
    /// (see [`crate::compile::state::Lineage`]).
    pub lists_forced_at_merges: usize,
    /// Merge points where a language-level recursion spilled its saved
    /// frames onto the continuation stack (see [`crate::compile::spill`]).
    pub spills: usize,
    /// Of the spills, those of a root at a recursion's point other than
    /// its entry (see `Compilation::inside_a_call`).
    pub spills_elsewhere: usize,
    /// Merge points of a root that jumped back to code of its entry's
    /// position in its own call: a loop at the position it starts at.
    pub entry_matches: usize,
    /// Paths that end handing over to the interpreter: they returned below
    /// the depth at which the code is entered ([`JitState::hands_over`]).
    pub handovers: usize,
    /// Flexswitches on a run-time value whose cases may go on in compiled
    /// code (promotions, pops of spilled frames).
    pub promotions: usize,
}

/// One compilation of a generating extension, generic over its frame type.
pub struct Compilation<F: Frame> {
    /// The residual code being recorded.
    pub b: ResidualBuilder,
    outputs: Vec<ValTy>,
    tree: Rc<Tree>,
    defer: Option<fn(&mut Compilation<F>, JitState<F>)>,
    pending: VecDeque<(Label, JitState<F>)>,
    versions: rustc_hash::FxHashMap<StateKey<F::Key>, Vec<Version>>,
    limits: Limits,
    declined: Option<Declined>,
    stats: CompileStats,
    steps: usize,
    /// In execute mode: the input words, and the returned words once known.
    exec_inputs: Option<Vec<u64>>,
    exec_result: Option<Vec<u64>>,
    /// In execute mode: whether to stop at the portal's merge point, and
    /// the state stopped there.
    park_ok: bool,
    parked: Option<Box<dyn std::any::Any>>,
    /// The key of the first merge point reached (see
    /// [`Compilation::entry_facts`]).
    entry_key: Option<StateKey<F::Key>>,
    /// A portal root's entry as a recursion's point
    /// ([`JitState::point_hashes`]); `None` for pieces and `jit::specialize`.
    entry_point: Option<u64>,
    /// Where the extension started ([`Compilation::mark_entry`]).
    entry_mark: Option<(Label, usize)>,
    /// The run-time reds of the versions made so far, by value: their
    /// merge key's hash and their position among its reds (see
    /// `Compilation::pin_promoted`).
    merge_params: rustc_hash::FxHashMap<Val, (u64, merge::Pin)>,
    /// Per merge key (by hash), how many groups of pinned constants have
    /// versions (see `Compilation::merge`).
    pin_groups: rustc_hash::FxHashMap<u64, usize>,
    /// A flexswitch's case (a piece below the root compilation): its
    /// recursions continue in a piece of their own, which the tree shares
    /// (see `Compilation::merge`).
    piece: bool,
}

impl<F: Frame> Compilation<F> {
    /// Starts compiling a residual function with these input and output types.
    pub fn new(name: &str, inputs: &[ValTy], outputs: &[ValTy], limits: Limits) -> Compilation<F> {
        Compilation {
            b: ResidualBuilder::new(name, inputs, outputs),
            outputs: outputs.to_vec(),
            tree: Rc::new(Tree {
                name: name.to_string(),
                stats: None,
                cases_left: Cell::new(limits.max_tree_cases),
                cases_added: Cell::new(0),
                declines_recursion: Cell::new(false),
                cases: RefCell::new(None),
                shapes: RefCell::new(Default::default()),
                knowledge_variants: RefCell::new(Default::default()),
                pieces: RefCell::new(vec![]),
                kept: RefCell::new(vec![]),
                ahead: Cell::new(None),
                root: RefCell::new(None),
                turns: Default::default(),
                counts_turns: Cell::new(false),
                root_position: Cell::new(None),
                pinned: RefCell::new(Default::default()),
                promotes_every_turn: Cell::new(false),
            }),
            defer: None,
            pending: VecDeque::new(),
            versions: rustc_hash::FxHashMap::default(),
            limits,
            declined: None,
            stats: CompileStats::default(),
            steps: 0,
            exec_inputs: None,
            exec_result: None,
            park_ok: false,
            parked: None,
            entry_key: None,
            entry_point: None,
            entry_mark: None,
            merge_params: Default::default(),
            pin_groups: Default::default(),
            piece: false,
        }
    }

    /// Red boxes for the inputs (constants in execute mode).
    pub fn inputs(&self) -> Vec<RedBox> {
        match &self.exec_inputs {
            Some(w) => self.b.inputs().iter().zip(w).map(|(v, w)| RedBox::constant(self.b.ty(*v), *w)).collect(),
            None => self.b.inputs().iter().map(|v| RedBox::Var { ty: self.b.ty(*v), val: *v }).collect(),
        }
    }

    /// What the compilation did so far.
    pub fn stats(&self) -> CompileStats {
        self.stats
    }

    /// Sets where the compilation's flexswitches count their cases and
    /// compilations, and how a path is deferred: when this is set, the other
    /// side of a red split is compiled lazily past
    /// [`Limits::lazy_after_ops`], and past [`Limits::max_ops`] every path
    /// still to compile is deferred at its next merge point instead of the
    /// compilation being declined (a hard limit of twice the budget, or of the budget and 1000, remains).
    pub fn set_defer(&mut self, stats: Option<&'static Stats>, defer: fn(&mut Compilation<F>, JitState<F>)) {
        Rc::get_mut(&mut self.tree).expect("set before any switch").stats = stats;
        self.defer = Some(defer);
    }

    /// Gives the extension's table of resume points ahead of which lies an
    /// operation it cannot compile (`ahead(point, parks)` says which): a flexswitch
    /// whose state has a frame at such a point declines the compilation
    /// instead, here and in the cases below it, since execute mode could
    /// not continue past that operation either. With `parks`, execute mode
    /// hands over at the portal's merge point, so only what lies before it
    /// counts.
    pub fn set_declines_ahead(&mut self, ahead: fn(u32, bool) -> Option<&'static str>, parks: bool) {
        self.tree.ahead.set(Some((ahead, parks)));
    }

    /// Makes a language-level recursion (see `JitState::call_point`) whose
    /// saved frames cannot be spilled (`compile::spill`) decline this
    /// compilation and those below it, and be remembered in the stats
    /// (`Stats::saw_recursion`): for portals, where the interpreter can run
    /// it. (Elsewhere it unrolls up to `MAX_VIRTUAL_PTRS` frames, or runs
    /// over frames in memory.)
    pub fn set_declines_recursion(&mut self) {
        self.tree.declines_recursion.set(true);
    }

    /// Whether this compilation is a portal's (see
    /// [`Compilation::set_declines_recursion`]), not `jit::specialize`'s.
    pub fn for_portal(&self) -> bool {
        self.tree.declines_recursion.get()
    }

    /// Whether this is a portal's root that hands over where it returns
    /// below the depth where it is entered, and neither spills a recursion
    /// nor promotes a value whose cases could go on (its lazily compiled
    /// sides, within [`Limits::lazy_after_ops`], are exits). Where its code
    /// also has no loop, it could only run straight to the hand-over (or
    /// to an exit): it starts in what is left of a call (after an
    /// interpreted call returned), saves a few dispatches and costs a
    /// hand-over at each entry, so it is declined, and the function's entry
    /// or its caller's loop compiles instead.
    fn may_run_straight_to_a_hand_over(&self) -> bool {
        let s = &self.stats;
        self.for_portal()
            && !self.piece
            && s.handovers > 0
            && s.spills == 0
            && s.promotions == 0
            && self.b.op_count() < self.limits.lazy_after_ops
    }

    /// Whether this is a portal's root entered inside a call of a
    /// recursion: it returns below the depth where it is entered, every
    /// recursion it spills is at another point than its entry (the
    /// function's entry, where this root starts after a call returned), and
    /// no loop comes back to its entry. Its code runs what is left of the
    /// call and hands over at the return, which the interpreter's caller
    /// then continues, so that each level of the recursion above it pays a
    /// hand-over. Declined: the recursion's entry compiles instead, where
    /// one entry runs a whole call. A root at a loop's head (the loop of a
    /// call that also recurses) is kept: the interpreter may stay in that
    /// loop for the rest of the run.
    fn inside_a_call(&self) -> bool {
        let s = &self.stats;
        self.for_portal()
            && !self.piece
            && s.handovers > 0
            && s.spills > 0
            && s.spills_elsewhere == s.spills
            && s.entry_matches == 0
    }

    /// Whether the budget is spent and paths should be deferred.
    fn deferring(&self) -> Option<fn(&mut Compilation<F>, JitState<F>)> {
        self.defer.filter(|_| self.b.op_count() > self.limits.max_ops)
    }

    fn over_budget(&mut self) -> bool {
        // With deferral, a path goes on to its next merge point past the
        // budget: the hard limit leaves room for that.
        let m = self.limits.max_ops;
        let max = if self.defer.is_some() { m.saturating_mul(2).max(m.saturating_add(1000)) } else { m };
        if self.declined.is_none() && self.b.op_count() > max {
            self.declined = Some(Declined::Budget { ops: self.b.op_count() });
        }
        self.declined.is_some()
    }

    /// A branch on `cond`. A constant condition folds: its side is returned and
    /// nothing is emitted. Otherwise a conditional branch is emitted, the state
    /// of the false side (made by `on_false`) is queued, and the extension
    /// continues on the true side (`true` is returned).
    pub fn split(&mut self, cond: &RedBox, on_false: &mut dyn FnMut() -> JitState<F>) -> bool {
        if let Some(c) = cond.as_const() {
            return c != 0;
        }
        self.branch_red(cond, on_false());
        true
    }

    /// The state the false side of a split on `cond` starts from: none when
    /// `cond` is true; a copy of `st` when it is a run-time value; `st`
    /// itself when it is false (what is left in `st` is not used again).
    /// Generated code pushes the false side's frame on it and hands it to
    /// [`Compilation::fork`].
    pub fn false_side(&mut self, cond: &RedBox, st: &mut JitState<F>) -> Option<JitState<F>> {
        match cond.as_const() {
            Some(0) => Some(std::mem::replace(st, JitState::empty())),
            Some(_) => None,
            None => Some(st.clone()),
        }
    }

    /// Whether a split on `cond` compiles a side that leaves the
    /// interpreter's loop (a return, an error) when it is first taken:
    /// where `cond` is a run-time value and the compilation defers, as
    /// PyPy compiles a bridge. A run leaves the loop once, and compiled
    /// eagerly, each exit was copied into every piece that reaches it
    /// (leaving a compiled recursion rebuilds its spilled frames in memory:
    /// an error check at each call made a recursion's cases several times
    /// larger).
    pub fn exits_lazily(&self, cond: &RedBox) -> bool {
        cond.as_const().is_none() && !self.b.exec && self.defer.is_some()
    }

    /// [`Compilation::fork`] of a false side that leaves the interpreter's
    /// loop: compiled when first taken where
    /// [`Compilation::exits_lazily`].
    pub fn fork_exit(&mut self, cond: &RedBox, on_false: JitState<F>) -> Option<JitState<F>> {
        if !self.exits_lazily(cond) {
            return self.fork(cond, on_false);
        }
        self.branch_off(cond, true, on_false);
        None
    }

    /// A split on `cond` (where [`Compilation::exits_lazily`]) whose true
    /// side (`exit`) leaves the interpreter's loop: the branch, the true
    /// side compiled when first taken, the false side (`other`) queued as
    /// [`Compilation::fork`] queues it. The current path ends.
    pub fn split_exit(&mut self, cond: &RedBox, mut exit: JitState<F>, mut other: JitState<F>) {
        let Some(defer) = self.defer else { unreachable!("`exits_lazily` holds") };
        exit.sync_facts(&self.b);
        other.sync_facts(&self.b);
        self.stats.lazy_splits += 1;
        let (c, t, f, before) = self.split_branch(cond);
        self.b.label_conds.insert(f, before.clone());
        self.pending.push_back((f, other));
        self.b.switch_to(t);
        self.b.path_conds.push(c);
        defer(self, exit);
        self.b.path_conds = before;
    }

    /// After [`Compilation::false_side`]: on a run-time `cond`, emits the
    /// branch, queues `on_false` (or defers it) and returns `None`, the true
    /// side going on; on a false constant, returns `on_false`, the state the
    /// path goes on with.
    pub fn fork(&mut self, cond: &RedBox, on_false: JitState<F>) -> Option<JitState<F>> {
        if cond.as_const().is_some() {
            return Some(on_false);
        }
        self.branch_red(cond, on_false);
        None
    }

    /// A split on the run-time value `cond`: the branch, and the false
    /// side's state queued or deferred (see `branch_off`).
    fn branch_red(&mut self, cond: &RedBox, on_false: JitState<F>) {
        if self.b.exec {
            crate::compile::redbox::exec_stop(crate::compile::redbox::ExecStop::Unsupported(
                "a branch on a run-time value".into(),
            ));
        }
        let lazy = self.b.op_count() >= self.limits.lazy_after_ops.min(self.limits.max_ops);
        self.branch_off(cond, lazy, on_false);
    }

    /// The branch of a red split on `cond`, counted: the condition's value,
    /// the labels of its true and false sides, and the conditions known on
    /// the path before it.
    fn split_branch(&mut self, cond: &RedBox) -> (Val, Label, Label, Vec<Val>) {
        self.stats.splits += 1;
        let c = self.b.materialize(cond);
        let (t, _) = self.b.new_label(&[]);
        let (f, _) = self.b.new_label(&[]);
        self.b.branch(c, (t, &[]), (f, &[]));
        (c, t, f, self.b.path_conds.clone())
    }

    /// Emits a branch on `cond` (a run-time bool) and continues on its true
    /// side; the false side's state is queued, or (when `lazy` and the
    /// extension can defer) compiled when first taken.
    fn branch_off(&mut self, cond: &RedBox, lazy: bool, mut on_false: JitState<F>) {
        // Facts are checked against the calls recorded when the side is
        // taken up again (see [`Compilation::next_pending`]).
        on_false.sync_facts(&self.b);
        let (c, t, f, before) = self.split_branch(cond);
        match self.defer {
            Some(defer) if lazy => {
                self.stats.lazy_splits += 1;
                self.b.switch_to(f);
                defer(self, on_false);
            }
            _ => {
                self.b.label_conds.insert(f, before.clone());
                self.pending.push_back((f, on_false))
            }
        }
        self.b.switch_to(t);
        self.b.path_conds = before;
        self.b.path_conds.push(c);
    }

    /// Gives up: the compilation will be declined with this reason (the
    /// current path ends; the extension should stop).
    pub fn decline(&mut self, reason: impl Into<String>) {
        if self.b.exec {
            crate::compile::redbox::exec_stop(crate::compile::redbox::ExecStop::Unsupported(reason.into()));
        }
        if self.declined.is_none() {
            self.declined = Some(Declined::Unsupported(reason.into()));
        }
        if self.b.is_open() {
            self.b.error_exit(ErrorKind::Abort(u32::MAX));
        }
        self.pending.clear();
    }

    /// Declines as a language-level recursion does (remembered in the
    /// stats, see [`Compilation::set_declines_recursion`]): the extension
    /// met its spilled frames where it cannot compile them.
    pub fn decline_recursion(&mut self, reason: &str) {
        if let Some(s) = self.tree.stats.filter(|_| self.tree.declines_recursion.get()) {
            s.saw_recursion();
        }
        self.decline(reason);
    }

    /// Counts one step of the generating extension; false when the
    /// compilation must stop (declined, or out of steps).
    pub fn step(&mut self) -> bool {
        if self.b.exec {
            // An interpreter runs as long as the program does.
            return self.exec_result.is_none() && self.parked.is_none();
        }
        self.steps += 1;
        if self.steps > self.limits.max_steps && self.declined.is_none() {
            self.declined = Some(Declined::Steps);
        }
        !self.over_budget()
    }

    /// Continues only where `ok` holds; elsewhere leaves residual code through
    /// `kind`. Returns false when `ok` is the constant false: the path ends.
    pub fn guard(&mut self, ok: &RedBox, kind: ErrorKind) -> bool {
        match ok.as_const() {
            Some(0) => {
                self.error_exit(kind);
                false
            }
            Some(_) => true,
            None => {
                let c = self.b.materialize(ok);
                let (good, _) = self.b.new_label(&[]);
                let (bad, _) = self.b.new_label(&[]);
                self.b.branch(c, (good, &[]), (bad, &[]));
                self.b.switch_to(bad);
                self.b.error_exit(kind);
                self.b.switch_to(good);
                self.b.path_conds.push(c);
                true
            }
        }
    }

    /// Whether the compilation was declined.
    pub fn is_declined(&mut self) -> bool {
        self.over_budget()
    }

    /// Ends the path by returning these values.
    pub fn finish_return(&mut self, vals: &[RedBox]) {
        if self.b.exec {
            self.exec_result = Some(vals.iter().map(|r| r.as_const().unwrap_or(0)).collect());
            return;
        }
        let v: Vec<_> = vals.iter().map(|r| self.b.materialize(r)).collect();
        self.b.ret(&v);
    }

    /// Ends the path with an error exit (a `panic!` reached in residual code).
    pub fn error_exit(&mut self, kind: ErrorKind) {
        if self.b.exec {
            crate::compile::redbox::exec_stop(crate::compile::redbox::ExecStop::Error(kind, None));
        }
        self.b.error_exit(kind);
    }

    /// The next queued state, its residual block now current; `None` when
    /// every path is done (or the compilation was declined).
    pub fn next_pending(&mut self) -> Option<JitState<F>> {
        if self.b.exec || self.over_budget() {
            return None;
        }
        if let Some(defer) = self.deferring() {
            // Past the budget: what is left compiles when first reached.
            while let Some((label, st)) = self.pending.pop_front() {
                self.b.switch_to(label);
                self.b.path_conds = self.b.label_conds.remove(&label).unwrap_or_default();
                defer(self, st);
            }
            return None;
        }
        let (label, mut st) = self.pending.pop_front()?;
        self.b.switch_to(label);
        self.b.path_conds = self.b.label_conds.remove(&label).unwrap_or_default();
        // The calls recorded since it was queued are on other paths: its
        // facts (synced when queued) still hold here.
        st.epoch = self.b.calls;
        Some(st)
    }

    /// The residual function, or why the compilation was declined.
    pub fn finish(mut self) -> Result<ResidualFunction, Declined> {
        if self.over_budget() {
            return Err(self.declined.take().expect("set by over_budget"));
        }
        if self.inside_a_call() {
            return Err(Declined::Unsupported(INSIDE_A_CALL.into()));
        }
        if self.b.hot_calls > 0 && self.for_portal() {
            self.tree.counter().calls_rust.set(true);
        }
        let straight = self.may_run_straight_to_a_hand_over();
        let mut f =
            if self.limits.passes_elsewhere && !self.piece { self.b.finish_as_recorded() } else { self.b.finish() };
        if straight && f.loop_heads().is_empty() {
            return Err(Declined::Unsupported(ONLY_HANDS_OVER.into()));
        }
        if cfg!(debug_assertions) {
            // Residual code must be SSA; checked where it is cheap to.
            if let Err(e) = f.check_dominance() {
                let text = crate::ir::builder::listing(&f);
                return Err(Declined::Unsupported(format!("jitgen bug: residual code is not SSA: {e}\n{text}")));
            }
        }
        // A root with turn checks owns the tree for its counter too.
        if !f.switches.is_empty() || (!self.piece && self.tree.counts_turns.get()) {
            f.pieces = Some(self.tree.clone());
        }
        Ok(f)
    }
}

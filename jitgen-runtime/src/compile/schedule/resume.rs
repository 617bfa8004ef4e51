//! Promotion: [`Compilation::flexswitch`] ends the current path with a
//! flexswitch on a red value. Residual code scans the switch's cases; a
//! value with no case calls back into the compiler (`run::promotion`), which
//! resumes the generating extension from the state kept here, with the
//! value a constant, compiles that case as a piece of its own and adds it to
//! the switch. The pieces below one root compilation share a [`Tree`]: a
//! budget of cases, and a cache of the states already compiled, so that a
//! loop cut by the budget closes through tail calls between pieces instead
//! of compiling anew. The cache's key holds the constants among the
//! state's reds; a shape of state (key, facts, which reds are constants)
//! switched on with more than [`CONSTANT_VARIANTS`] sets of constants passes
//! them as run-time values, so that a recursion whose arguments fold to a
//! new constant at each level shares its pieces instead of compiling one
//! per value. For the same reason, a state holding a spilled list of saved
//! frames (a compiled recursion) forgets what it knew of list elements at
//! run-time indices (`JitState::forget_elements_in_recursion`): the cells
//! of an operand stack it loaded or stored are words of frames at some
//! depth, known differently on each path that returns to the switch, and
//! a case reloads the few it reads. Likewise, a state resumed again knowing
//! other facts about memory than the case compiled for it compiles once
//! more with the facts of run-time values forgotten, and that case serves
//! every later set of them ([`KNOWLEDGE_VARIANTS`]). The facts are put in
//! one order first (`JitState::order_facts`): paths that learned the same
//! facts in another order share a case. Each case is entered by a tail call with its live
//! values passed through the frame (a store and a load per value). When the
//! switch is full or a case declines, residual code continues in the
//! interpreter through execute mode. So a switch is made only where no
//! operation the extension cannot compile lies ahead of its state
//! (`Compilation::set_declines_ahead`): execute mode, running the same
//! extension, could not go past one; the compilation declines instead.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use crate::compile::redbox::RedBox;
use crate::compile::state::{Frame, JitState, StateKey};
use crate::ir::builder::Val;
use crate::ir::ops::ValTy;
use crate::run::stats::Stats;

use super::Compilation;

/// What a generating extension provides so that its states can be resumed
/// after the compilation that made them: by the compiler (a flexswitch case)
/// and by the interpreter (execute mode).
pub struct ResumeFns<F: Frame> {
    /// Runs the extension from a state (its `__run`).
    pub run: fn(&mut Compilation<F>, JitState<F>),
    /// Hands a promoted value to the innermost frame of a state.
    pub deliver: fn(&mut JitState<F>, u64),
    /// Ends the current path with a lazily compiled continuation of a state
    /// (see [`Compilation::set_defer`]).
    pub defer: fn(&mut Compilation<F>, JitState<F>),
}

impl<F: Frame> Clone for ResumeFns<F> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<F: Frame> Copy for ResumeFns<F> {}

/// What the compilations below one root compilation share.
pub(super) struct Tree {
    pub(super) name: String,
    pub(super) stats: Option<&'static Stats>,
    /// Cases that may still be compiled below the root.
    pub(super) cases_left: Cell<usize>,
    /// Cases added to the switches below the root, a new piece's or one
    /// already compiled (what [`crate::run::promotion::Pieces::cases`] counts).
    pub(super) cases_added: Cell<usize>,
    /// A language-level recursion declines (see
    /// [`Compilation::set_declines_recursion`]).
    pub(super) declines_recursion: Cell<bool>,
    /// The code compiled for each state a case resumed (its key and the
    /// layout of its reds): a state met again reuses it, so a loop cut by
    /// the budget closes through tail calls instead of compiling anew.
    /// (A `CaseCache<G>`, typed by the extension's frame.)
    pub(super) cases: RefCell<Option<Box<dyn std::any::Any>>>,
    /// Per shape of the states switches resume (key, facts, which reds are
    /// constants), the constants seen: a shape met with more than
    /// [`CONSTANT_VARIANTS`] of them passes its constants as run-time values
    /// (see [`Compilation::flexswitch`]).
    pub(super) shapes: RefCell<HashMap<u64, Vec<u64>>>,
    /// Per resumed state (key and promoted value, by hash), how many cases
    /// compiled it knowing different facts (see [`KNOWLEDGE_VARIANTS`]).
    pub(super) knowledge_variants: RefCell<HashMap<u64, usize>>,
    /// The pieces compiled so far: name, code and function (for
    /// fusion, see `ir::passes::fuse`, and for listings). The root function owns the tree
    /// (so the pieces); switches refer to it weakly, and to pieces by entry
    /// address, so that pieces can jump to each other in loops.
    pub(super) pieces: RefCell<Vec<Piece>>,
    /// Machine code its switches' tables may enter besides the pieces' (see
    /// [`crate::run::promotion::Pieces::keep`]).
    pub(super) kept: RefCell<Vec<Rc<dyn std::any::Any>>>,
    /// Whether an operation the extension cannot compile lies ahead of a
    /// resume point, and whether execute mode hands over at the merge
    /// point (see [`Compilation::set_declines_ahead`]).
    pub(super) ahead: Cell<Option<(fn(u32, bool) -> Option<&'static str>, bool)>>,
    /// The root function, once compiled (see
    /// [`crate::run::promotion::Pieces::set_root`]).
    pub(super) root: RefCell<Option<std::rc::Weak<dyn std::any::Any>>>,
    /// The turns left before the tree's code checks its speed, whether
    /// any of its code makes turn checks (then the root owns the tree even
    /// without switches), and the position of the root's entry, where
    /// they are made (see `Compilation::turn_position`).
    pub(super) turns: std::cell::OnceCell<Rc<crate::ir::function::TurnCounter>>,
    pub(super) counts_turns: Cell<bool>,
    pub(super) root_position: Cell<Option<u64>>,
    /// Per merge key (by hash), the reds that a path promoted as the
    /// run-time value that merge point's version passed them as: versions
    /// of that key are kept apart by those reds' constants (see
    /// `Compilation::merge`).
    pub(super) pinned: RefCell<HashMap<u64, Vec<super::merge::Pin>>>,
    /// Whether a promotion on every turn was met (then merge points note
    /// where their versions' run-time reds came from).
    pub(super) promotes_every_turn: Cell<bool>,
}

/// A piece of a [`Tree`]: its name, code and function (its listing is made
/// from the function when asked for: most compilations are never listed).
pub(super) struct Piece {
    name: String,
    code: crate::backend::cranelift::NativeCode,
    function: Rc<crate::ir::builder::ResidualFunction>,
}

impl Tree {
    /// The counter of the tree's turn checks: the one of its root's
    /// position once the root's entry was merged (see
    /// `Compilation::turn_check`), else the tree's own.
    pub(super) fn counter(&self) -> &crate::ir::function::TurnCounter {
        self.turns.get_or_init(Default::default)
    }
}

impl std::fmt::Debug for Tree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tree({}, {} pieces)", self.name, self.pieces.borrow().len())
    }
}

impl crate::run::promotion::Pieces for Tree {
    fn describe(&self, out: &mut String) {
        for Piece { name, code, function } in self.pieces.borrow().iter() {
            out.push_str(&format!("{name}:\n"));
            out.push_str(&crate::ir::builder::listing(function));
            for (i, t) in code.switches().iter().enumerate() {
                out.push_str(&format!("switch #{i}:\n"));
                t.describe(out, 1);
            }
        }
    }

    fn cases(&self) -> usize {
        self.cases_added.get()
    }

    fn turns(&self) -> Option<&crate::ir::function::TurnCounter> {
        // Also before any check is made: cases made later may make some,
        // and the portal arms the count when it enters the code.
        Some(self.counter())
    }

    fn functions(&self) -> Vec<(usize, Rc<crate::ir::builder::ResidualFunction>)> {
        self.pieces.borrow().iter().map(|p| (p.code.tail_entry() as usize, p.function.clone())).collect()
    }

    fn keep(&self, owner: Rc<dyn std::any::Any>) {
        self.kept.borrow_mut().push(owner);
    }

    fn set_root(&self, root: std::rc::Weak<dyn std::any::Any>) {
        *self.root.borrow_mut() = Some(root);
    }

    fn root(&self) -> Option<Rc<dyn std::any::Any>> {
        self.root.borrow().as_ref()?.upgrade()
    }
}

/// How many sets of constants the states of one shape that switches resume
/// may keep (each case compiles its own piece for them) before the next
/// such switch passes them as run-time values, so that its cases share the
/// pieces compiled for them. A language-level recursion compiled with its
/// arguments constant (Ackermann's `ack(m - 1, 1)`) returns a new constant
/// at each level: a piece per value, up to the tree's budget of cases.
pub(super) const CONSTANT_VARIANTS: usize = 2;

/// How many cases may compile one resumed state (the same key and promoted
/// value) knowing different facts about memory (`JitState::known`: fields
/// and list cells loaded or stored, with their bounds). A path that reaches
/// a switch knows what it did on the way, and the paths of a recursion that
/// return to one switch each know other facts: with every set kept, one
/// state compiled a case per set, and the fusion of those cases grew with
/// them. Past this many, the state compiles once with the facts of
/// run-time values forgotten (`JitState::forget_run_time_fields`), and that
/// case serves every later set. Fields known as constants stay known (a
/// promoted function, an `ip` stored: forgotten, each would be promoted
/// again), and so do the relations between the live values and which of
/// them are lengths, which place the stack cells a case reads. Two sets,
/// not one: a state's second set is often what most of its paths know,
/// and with one, funcvm's Ackermann ran slower (PERFORMANCE.md).
pub(super) const KNOWLEDGE_VARIANTS: usize = 2;

/// The largest constant by which a case knows one live value of its switch
/// as another plus it ([`Related`]). Indices an interpreter computes from
/// a frame's base reach what the stack's length in memory locates (an
/// argument below the base, the caller's words above its own) a few
/// apart; larger constants relate frames several calls apart, change with
/// the depth, and each set of them is part of a case's key, so compiles a
/// case of its own. The procedure VM's recursive fibonacci compiled 347
/// cases with every constant kept, 207-365 within 4, 110-124 within 2 (as
/// many as before relations survived its returns), its code as fast in
/// each (PERFORMANCE.md).
pub(super) const RELATED_SPAN: i64 = 2;

/// How a red of a resumed state is laid out: a constant, or an input.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(super) enum Layout {
    Const(ValTy, u64),
    Input(usize, ValTy),
}

/// Resumed states (key, layout of reds) to the entry and name of their piece.
/// The promoted value is part of the key: a frame's key does not show the
/// value handed to it.
pub(super) type CaseCache<G> = HashMap<CaseKey<G>, (usize, String)>;

/// The key of a resumed state in a [`CaseCache`].
pub(super) type CaseKey<G> =
    (StateKey<<G as Frame>::Key>, FactsKey, Vec<Layout>, Option<u64>, Vec<Related>, Vec<usize>);

/// A live value of a switch known as an earlier one plus a constant
/// (positions among the live values, and the constant): a case knows it too.
pub(super) type Related = (usize, usize, i64);

/// The live values known as an earlier one plus a constant (a stack's
/// length in memory beside a frame's base in it), so that a case places
/// indices made from either as the switch's path did. Only constants up to
/// [`RELATED_SPAN`] are kept.
fn related_inputs(b: &crate::ir::builder::ResidualBuilder, live: &[Val]) -> Vec<Related> {
    let red = |v: Val| RedBox::Var { ty: b.ty(v), val: v };
    (0..live.len())
        .filter_map(|i| {
            let ri = red(live[i]);
            if !ri.ty().is_int() {
                return None;
            }
            (0..i).find_map(|j| {
                let rj = red(live[j]);
                (rj.ty() == ri.ty())
                    .then(|| b.difference(&rj, &ri))
                    .flatten()
                    .filter(|k| k.abs() <= RELATED_SPAN)
                    .map(|k| (i, j, k))
            })
        })
        .collect()
}

pub(super) type FactsKey = Vec<(u32, i32, ValTy, Option<u64>, i64, u64)>;

/// How many different run-time values these reds hold.
fn distinct_run_time_values(reds: &[RedBox]) -> usize {
    let mut vals: Vec<Val> = reds
        .iter()
        .filter_map(|r| match r {
            RedBox::Var { val, .. } => Some(*val),
            _ => None,
        })
        .collect();
    vals.sort_unstable();
    vals.dedup();
    vals.len()
}

pub(super) fn layout(reds: &[RedBox], inputs: &[RedBox]) -> Vec<Layout> {
    reds.iter()
        .map(|r| match r {
            RedBox::Const { ty, bits } => Layout::Const(*ty, *bits),
            RedBox::Var { ty, .. } => Layout::Input(inputs.iter().position(|i| i == r).unwrap_or(usize::MAX), *ty),
        })
        .collect()
}

/// How a red of a snapshot is rebuilt in a case: kept (a constant), an input
/// of the case, or the promoted value.
#[derive(Clone, Copy)]
pub(super) enum Slot {
    Keep(RedBox),
    Input(usize),
    Promoted(ValTy),
    /// The root the promoted value was computed from by adding this
    /// constant (a field's address, `&*rc` past an `Rc`'s counts).
    PromotedLess(ValTy, i64),
}

pub(super) fn rebuild(slots: &[Slot], inputs: &[RedBox], promoted: u64) -> Vec<RedBox> {
    slots
        .iter()
        .map(|s| match s {
            Slot::Keep(r) => *r,
            Slot::Input(i) => inputs[*i],
            Slot::Promoted(ty) => RedBox::constant(*ty, ty.canon(promoted)),
            Slot::PromotedLess(ty, k) => RedBox::constant(*ty, ty.canon(promoted.wrapping_sub(*k as u64))),
        })
        .collect()
}

impl<F: Frame> Compilation<F> {
    /// Ends the current path with a flexswitch on `value` (or, with no
    /// value, a single-case switch: a lazily compiled continuation) whose
    /// cases resume `st`, a state of the generating extension `fns` runs.
    ///
    /// The live values passed to the cases are the state's run-time reds;
    /// a case compiles `st` with them as inputs and the promoted value as a
    /// constant (delivered to the innermost frame, and replacing the reds
    /// that held it). When the switch is full or the case declined, residual
    /// code continues in the interpreter: the same extension in execute mode
    /// from `st`, with the values residual code held.
    ///
    /// Memory: the table keeps `st` (its frames: a few words per live
    /// variable), the case code (about a page each) and the case listings.
    pub fn flexswitch<G: Frame + 'static>(&mut self, st: JitState<G>, value: Option<&RedBox>, fns: ResumeFns<G>) {
        self.flexswitch_on(st, value, fns, false, false)
    }

    /// [`Compilation::flexswitch`] on a promotion that runs on every turn
    /// of the portal's loop (the macro's `promotes_every_turn`): where the
    /// path has not branched since its last merge point and `value` is a
    /// run-time red that merge point's version passed, that red is pinned
    /// there ([`Compilation::pin_promoted`]).
    pub fn flexswitch_every_turn<G: Frame + 'static>(&mut self, st: JitState<G>, value: &RedBox, fns: ResumeFns<G>) {
        self.flexswitch_on(st, Some(value), fns, false, true)
    }

    /// Resumes a pop of a spilled list with no virtual element left (see
    /// [`crate::compile::spill`]); `st` is the state before the pop. When
    /// the continuation stack holds no entry of this call, the pop goes on
    /// with the list as it was before any spill (a queued path); else a
    /// flexswitch on the top entry's template compiles, per template, the
    /// state with that frame virtual again. Returns the state to go on with
    /// in execute mode, `None` when compiling (the path ended). `forever`
    /// makes the state the switch keeps (the extension's `__forever`).
    pub fn unspill<G: Frame + 'static>(
        &mut self,
        mut st: JitState<F>,
        forever: fn(JitState<F>) -> JitState<G>,
        fns: ResumeFns<G>,
    ) -> Option<JitState<F>> {
        use crate::run::contstack::{peek, EMPTY};
        if self.b.exec {
            let id = self.b.red_call(peek, "cont_peek", &[], &[ValTy::U64])[0];
            let w = id.as_const().unwrap_or(EMPTY);
            if st.unspill(&mut self.b, (w != EMPTY).then_some(w)).is_none() {
                crate::compile::redbox::exec_stop(crate::compile::redbox::ExecStop::Unsupported(
                    "a frame on the continuation stack that this thread did not spill".into(),
                ));
            }
            return Some(st);
        }
        st.learn_path(&self.b);
        // Forced before the top entry's template is read: forcing an operand
        // stack with a hidden part moves it into its `Vec` and rewrites the
        // template of each entry holding a segment (`cont_materialize`).
        self.fit_in_frame(&mut st);
        let mut below = st.clone();
        if below.unspill(&mut self.b, None).is_none() {
            self.decline("a pop of a spilled list it cannot find");
            return None;
        }
        let (t, id) = crate::compile::spill::peek_top(&mut self.b);
        self.stats.splits += 1;
        below.sync_facts(&self.b);
        self.pending.push_back((t, below));
        self.flexswitch_on(forever(st), Some(&id), fns, true, false);
        None
    }

    /// Normalizes `st` and, where it holds too many values to hand over in
    /// a frame, forces its virtual lists' elements, then its virtual
    /// objects' fields, into memory (one address each).
    fn fit_in_frame<H: Frame>(&mut self, st: &mut JitState<H>) {
        st.sync_facts(&self.b);
        st.normalize();
        let too_large =
            |st: &JitState<H>| distinct_run_time_values(&st.reds()) + 2 > crate::ir::function::MAX_FRAME_WORDS;
        if too_large(st) {
            st.force_lists(&mut self.b);
            st.sync_facts(&self.b);
            st.normalize();
        }
        if too_large(st) {
            st.force_all(&mut self.b);
            st.sync_facts(&self.b);
            st.normalize();
        }
    }

    /// [`Compilation::flexswitch`]; with `unspilling`, the value is the
    /// template of the continuation stack's top entry, which a case pops
    /// into the state instead of delivering a promoted value.
    fn flexswitch_on<G: Frame + 'static>(
        &mut self,
        st: JitState<G>,
        value: Option<&RedBox>,
        fns: ResumeFns<G>,
        unspilling: bool,
        every_turn: bool,
    ) {
        if self.b.exec {
            crate::compile::redbox::exec_stop(crate::compile::redbox::ExecStop::Unsupported(
                "a flexswitch in execute mode".into(),
            ));
        }
        if let Some((ahead, parks)) = self.tree.ahead.get() {
            if let Some(why) = st.frames.iter().filter_map(Frame::point).find_map(|p| ahead(p, parks)) {
                // A case compiled later could meet it, and so could execute
                // mode continuing from the switch (see the macro's `ahead`).
                self.decline(format!("a flexswitch would lead to what compiled code cannot do yet: {why}"));
                return;
            }
        }
        if every_turn {
            self.tree.promotes_every_turn.set(true);
        }
        let pins = every_turn && st.merged_at == self.b.branches;
        let mut st = st;
        st.learn_path(&self.b);
        // The table keeps the state for as long as the code lives; not its
        // path's past.
        st.lineage = Default::default();
        st.forget_elements_in_recursion();
        self.fit_in_frame(&mut st);
        st.order_facts();
        // The promoted value, and the narrower values it widens: each is
        // known in a case (a field loaded as `u32`, promoted as `usize`).
        let mut promoted: Vec<Val> = vec![];
        // And the root it is an offset from: known too (a promoted `&*f`
        // of an `Rc` field makes the field's value known, so that the next
        // load of the field promotes nothing).
        let mut promoted_root: Option<(Val, i64)> = None;
        if let Some(v @ RedBox::Var { val, .. }) = value {
            promoted.push(*val);
            while let Some(n) = self.b.widened_from(*promoted.last().expect("pushed")) {
                promoted.push(n);
            }
            let s = self.b.sym_addr(v);
            if let (RedBox::Var { val: root, ty }, None) = (s.root, s.index) {
                if s.offset != 0 && ty == v.ty() {
                    promoted_root = Some((root, s.offset));
                }
            }
        }
        if pins {
            // The promoted value, or the root it is an offset from (an
            // `Rc`'s pointer, promoted as the address of what it points to).
            let roots = promoted.iter().copied().chain(promoted_root.map(|(r, _)| r));
            if let Some(v) = roots.into_iter().find(|v| self.merge_params.contains_key(v)) {
                self.pin_promoted(v);
            }
        }
        let reds = st.reds();
        // A shape switched on with too many sets of constants passes them
        // as run-time values (see [`CONSTANT_VARIANTS`]).
        let widen = {
            use std::hash::BuildHasher;
            let consts: Vec<u64> = reds.iter().filter_map(|r| r.as_const()).collect();
            let shape: Vec<bool> = reds.iter().map(|r| r.as_const().is_some()).collect();
            let h = rustc_hash::FxBuildHasher;
            let shape = h.hash_one((st.key(), st.facts_key(), shape, value.is_some()));
            let consts = h.hash_one(consts);
            let mut shapes = self.tree.shapes.borrow_mut();
            let seen = shapes.entry(shape).or_default();
            if !seen.contains(&consts) && seen.len() < CONSTANT_VARIANTS {
                seen.push(consts);
            }
            let fits = distinct_run_time_values(&reds) + reds.iter().filter(|r| r.as_const().is_some()).count() + 2
                <= crate::ir::function::MAX_FRAME_WORDS;
            !seen.contains(&consts) && fits
        };
        let mut live: Vec<Val> = vec![];
        let mut slots = vec![];
        for r in reds {
            let r = match r {
                RedBox::Const { .. } if widen => RedBox::Var { ty: r.ty(), val: self.b.materialize(&r) },
                r => r,
            };
            slots.push(match r {
                RedBox::Var { ty, val } if promoted.contains(&val) => Slot::Promoted(ty),
                RedBox::Var { ty, val } if promoted_root.is_some_and(|(r, _)| r == val) => {
                    Slot::PromotedLess(ty, promoted_root.map_or(0, |(_, k)| k))
                }
                RedBox::Var { val, .. } => match live.iter().position(|v| *v == val) {
                    Some(i) => Slot::Input(i),
                    None => {
                        live.push(val);
                        Slot::Input(live.len() - 1)
                    }
                },
                c => Slot::Keep(c),
            });
        }
        let live_tys: Vec<ValTy> = live.iter().map(|v| self.b.ty(*v)).collect();
        let related = related_inputs(&self.b, &live);
        // The live values known as lengths: a case knows them too.
        let lengths: Vec<usize> = (0..live.len()).filter(|&i| self.b.lengths.contains(&live[i])).collect();
        if st.hands_over() {
            // Not one that leaves to be measured (`JitState::leaving`).
            self.stats.handovers += usize::from(st.below_entry && !st.leaving);
        } else if value.is_some() {
            self.stats.promotions += 1;
        }
        let max_cases = if st.hands_over() {
            // Returned below where compiled code was entered: the
            // interpreter goes on (see `JitState::below_entry`).
            0
        } else if value.is_some() {
            self.limits.max_cases
        } else {
            self.limits.max_cases.min(1)
        };
        let promoting = value.is_some() && !unspilling;
        let keyed = value.is_some();
        let snapshot = Rc::new((st, slots));
        let tree = self.tree.clone();
        if let Some(s) = tree.stats {
            s.flexswitch_made(value.is_none() && !unspilling);
        }
        let (limits, outputs) = (self.limits, self.outputs.clone());
        let compile = {
            let (snapshot, weak, live_tys, outputs) =
                (snapshot.clone(), Rc::downgrade(&tree), live_tys.clone(), outputs.clone());
            let related = related.clone();
            let lengths = lengths.clone();
            Box::new(move |w: u64| -> Option<crate::run::promotion::Case> {
                let tree = weak.upgrade()?;
                // The state resumed with `w`: the compilation it starts, and
                // its key. `general`: with what the switch's path knew of
                // memory forgotten, but for constants.
                let name = format!("{}_piece{}", tree.name, tree.pieces.borrow().len() + 1);
                let prepare = |general: bool| -> Option<(Compilation<G>, JitState<G>, CaseKey<G>)> {
                    let mut c: Compilation<G> = Compilation::new(&name, &live_tys, &outputs, limits);
                    c.tree = tree.clone();
                    c.defer = Some(fns.defer);
                    c.piece = true;
                    let mut st = snapshot.0.clone();
                    let inputs = c.inputs();
                    let (related, lengths) = (related.clone(), lengths.clone());
                    for &(i, j, k) in &related {
                        if let RedBox::Var { val, .. } = inputs[i] {
                            c.b.set_linear_form(val, Some((inputs[j], k)));
                        }
                    }
                    for &i in &lengths {
                        c.b.know_length(&inputs[i]);
                    }
                    let mut reds = rebuild(&snapshot.1, &inputs, w);
                    st.set_reds(&reds);
                    if general {
                        st.forget_run_time_fields();
                        reds = st.reds();
                    }
                    st.know_lengths(&mut c.b);
                    if promoting {
                        (fns.deliver)(&mut st, w);
                    }
                    if unspilling {
                        let rel = st.unspill(&mut c.b, Some(w))?;
                        // Words that should be the operand stack's length plus
                        // a constant: checked, and where they are not, a lazily
                        // compiled continuation goes on with them as they are.
                        let generic = st.clone();
                        if let Some(cond) = st.relate_unspilled(&mut c.b, &rel) {
                            c.branch_off(&cond, true, generic);
                        }
                    }
                    st.epoch = c.b.calls;
                    let key = (st.key(), st.facts_key(), layout(&reds, &inputs), keyed.then_some(w), related, lengths);
                    Some((c, st, key))
                };
                let cached = |key: &CaseKey<G>| -> Option<(usize, String)> {
                    let mut cache = tree.cases.borrow_mut();
                    let cache = cache.get_or_insert_with(|| Box::new(CaseCache::<G>::new()));
                    cache.downcast_ref::<CaseCache<G>>().and_then(|m| m.get(key)).cloned()
                };
                let remember = |key: CaseKey<G>, entry: usize, name: &str| {
                    if let Some(m) = tree.cases.borrow_mut().as_mut().and_then(|b| b.downcast_mut::<CaseCache<G>>()) {
                        m.insert(key, (entry, name.to_string()));
                    }
                };
                let reuse = |entry: usize, name: String| {
                    tree.cases_added.set(tree.cases_added.get() + 1);
                    Some(crate::run::promotion::Case::Shared(entry as *const u8, name))
                };
                let (mut c, mut st, mut key) = prepare(false)?;
                if let Some((entry, name)) = cached(&key) {
                    return reuse(entry, name);
                }
                // A state met again knowing other facts compiles once more,
                // without those of run-time values (see `KNOWLEDGE_VARIANTS`).
                let mut also = None;
                let variants = {
                    let mut h = std::collections::hash_map::DefaultHasher::new();
                    std::hash::Hash::hash(&(&key.0, key.3, promoting, unspilling), &mut h);
                    let mut v = tree.knowledge_variants.borrow_mut();
                    let n = v.entry(std::hash::Hasher::finish(&h)).or_insert(0);
                    *n += 1;
                    *n
                };
                if variants > KNOWLEDGE_VARIANTS && st.knows_run_time_fields() {
                    let (gc, gst, gkey) = prepare(true)?;
                    if let Some(s) = tree.stats {
                        s.case_forgetting();
                    }
                    if let Some((entry, name)) = cached(&gkey) {
                        remember(key, entry, &name);
                        return reuse(entry, name);
                    }
                    also = Some(std::mem::replace(&mut key, gkey));
                    (c, st) = (gc, gst);
                }
                if tree.cases_left.get() == 0 {
                    return None;
                }
                tree.cases_left.set(tree.cases_left.get() - 1);
                let t0 = std::time::Instant::now();
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
                    (fns.run)(&mut c, st);
                    c.finish()
                }));
                let r = match r {
                    Ok(Ok(f)) => {
                        crate::run::enter::compile_native(&f).map(|c| (c, f.op_count(), f)).map_err(|e| e.to_string())
                    }
                    Ok(Err(d)) => Err(format!("{d:?}")),
                    Err(_) => Err("the generating extension panicked".to_string()),
                };
                if let Some(s) = tree.stats {
                    let (ops, nanos) = (r.as_ref().ok().map(|(_, n, _)| *n), t0.elapsed().as_nanos() as u64);
                    s.compiled(ops, nanos);
                    s.case_compiled(ops, nanos);
                    if let Err(why) = &r {
                        s.declined_because(&format!("{name}: {why}"));
                    }
                }
                let (code, _, function) = r.ok()?;
                let entry = code.tail_entry() as usize;
                remember(key, entry, &name);
                if let Some(k) = also {
                    remember(k, entry, &name);
                }
                let piece = Piece { name: name.clone(), code, function: Rc::new(function) };
                tree.pieces.borrow_mut().push(piece);
                tree.cases_added.set(tree.cases_added.get() + 1);
                Some(crate::run::promotion::Case::Shared(entry as *const u8, name))
            })
        };
        let resume: crate::run::promotion::Resumer = {
            let (name, stats) = (tree.name.clone(), tree.stats);
            Rc::new(move |words: &[u64], w: u64| {
                if let Some(s) = stats {
                    s.resumed();
                }
                let mut c: Compilation<G> = Compilation::executing(&name, &live_tys, words, &outputs);
                c.park_ok = crate::run::enter::take_parking();
                c.execute(|c| {
                    let mut st = snapshot.0.clone();
                    st.set_reds(&rebuild(&snapshot.1, &c.inputs(), w));
                    if promoting {
                        (fns.deliver)(&mut st, w);
                    }
                    if unspilling && st.unspill(&mut c.b, Some(w)).is_none() {
                        crate::compile::redbox::exec_stop(crate::compile::redbox::ExecStop::Unsupported(
                            "a frame on the continuation stack that this thread did not spill".into(),
                        ));
                    }
                    (fns.run)(c, st)
                })
            })
        };
        let table = crate::run::promotion::FlexTable::resumable(max_cases, compile, Some(resume), tree.stats);
        let weak: std::rc::Weak<dyn crate::run::promotion::Pieces> = Rc::downgrade(&tree) as _;
        table.set_tree(weak);
        let v = match value {
            Some(r) => self.b.materialize(r),
            None => self.b.konst(ValTy::I64, 0),
        };
        self.stats.flexswitches += 1;
        self.b.flexswitch(v, &live, table);
    }
}

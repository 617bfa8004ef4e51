//! Merge points and their versions.
//!
//! [`Compilation::merge`] at the entry of a join block freezes the state into
//! its key (the frames' function, block and greens) and the shape of its reds
//! (each a constant, or a run-time value). If a compiled version of that key
//! covers the shape (each red the same constant, or a run-time value there),
//! the path jumps to it and ends. Otherwise a new version is made:
//!
//! - at a forward join it keeps its constants (up to `max_versions`), so that
//!   facts such as an enum's tag survive the join;
//! - at a loop head the first two shapes are kept exact (the first turn of a
//!   loop often differs from the steady state: a stack slot written during
//!   the turn is a constant from the second turn on), and a third is widened
//!   against the most general version so far: reds that differ become
//!   run-time values, and the known fields ([`super::facts`]) are intersected;
//! - [`MergeKind::LoopHeadGeneral`] makes every red a run-time value at the
//!   first arrival.
//!
//! The last version that keeps constants keeps only those that every version
//! so far and its own state agree on (an enum tag that never varied stays
//! constant: making it a run-time value would compile every case of every
//! `match` on it); after it comes the fully general version, which covers
//! every later arrival.
//!
//! Virtual lists have their lengths in the key, so a loop that pushes onto
//! one (an interpreter's output) would get a version per length. A state
//! whose path went through the same merge point with fewer elements in its
//! frames' lists, its lists aside from their lengths equal, and through a
//! run-time branch since ([`crate::compile::state::Lineage`]), has its
//! frames' lists forced there: the loop's second turn gets one version with
//! them real. So does a state arriving where that version exists. A list
//! that shrinks in a loop (a drain), or grows in a loop that branches on
//! nothing known only at run time, stays virtual; so do lists of up to
//! [`COUNTED_GROWTH`] elements in a loop counted by red constants, each turn
//! with other constants than every earlier one (a `for` over a compile-time
//! range that pops a call's arguments, each pop an error exit, into the
//! callee's locals). A path back at a merge point one language-level call
//! deeper holds more reds, but its lists are no longer: they stay virtual
//! (else a callee's locals are allocated at each call of a recursion).
//!
//! A state back at a call point with more of the interpreter's saved frames
//! virtual than when its path was there before, through a run-time branch
//! since, is a language-level recursion: its frames are spilled onto the
//! continuation stack (`crate::compile::spill`), after the lists that grew
//! with them (an operand stack its calls share) are forced, so that one
//! version of the function's code serves every depth.
//!
//! A red computed from another by adding constants (`sp + 1` beside `sp`, or
//! two of them from one root: [`ResidualBuilder::linear_form`]) keeps that
//! relation in the shape (`Shape::Plus`): a version covers only states where
//! it holds, and its label knows its parameter as the other's plus the
//! constant, so that an index computed on one side of the merge point names
//! the same address as one computed on the other. Facts indexed by a value
//! that is not a red (the `sp` a store used, the state holding `sp + 1`) are
//! kept relative to a red with the same root.
//!
//! A join (`MergeKind::Join`) reached with no two-way branch recorded since
//! the path's last merge point (`JitState::merged_at`) is passed: paths part
//! only at branches, so none parted from this one since, and one that
//! parted earlier and comes another way compiles its own copy of what
//! follows (passing a merge point shares less code, it is never wrong).
//! Nothing is made for it (no key, shape, version or label), and the path
//! keeps what its branches showed. Loop heads always merge, so
//! compilations still end.
//! Most joins of an interpreter's dispatch are of this kind (627 of 804 in
//! TLC's recursive fibonacci), and merging each cost its path's facts: the
//! checks after it were made again.
//!
//! A promotion that runs on every turn of the portal's loop (the macro's
//! `promotes_every_turn`: `hint!(frame.ip, promote)` at the top of the
//! loop) of a run-time red that the path's last merge point passed, with no
//! branch since, pins that red at that merge key for the whole tree
//! ([`Pin`]: a red by position, or a known field by place;
//! [`Compilation::pin_promoted`]). Later states are looked up under the key
//! extended by the constants they hold there ([`Compilation::pin_key`]), so
//! that each constant gets versions of its own, as a green would. An
//! interpreter that keeps its position in its frame then compiles each
//! position once, where the loop head used to widen the position after two
//! versions and switch on it before every instruction. A key has at most
//! [`MAX_PIN_GROUPS`] sets of constants in one compilation; past them, states
//! share the plain key's versions.
//!
//! A version gets a label whose parameters are its run-time reds, and the
//! path continues there. When the current block has recorded nothing since
//! it began and its parameters hold every value the new version passes (two
//! merge points in a row with no operation between them: TLC's PICK, PUSH,
//! POP), that block is the version's label too, and the version keeps where
//! its values sit among the block's parameters (`Version::perm`; a jump to it
//! passes zeros for the others, which the code after it no longer reads). It
//! is the same code either way: what the extension did between the two merge
//! points depended only on the first one's key and shape. Values reach a
//! label only as its parameters, so SSA dominance holds by construction.

use crate::compile::redbox::RedBox;
use crate::compile::state::{Frame, JitState};
use crate::ir::builder::{Label, ResidualBuilder, Val};
use crate::ir::ops::{BinOp, CmpOp, ErrorKind, Overflow, ValTy};

use super::facts::{describe_facts, match_facts, rebuild_facts, widen_facts, FactDesc, FactVal};
use super::{Compilation, MergeKind};

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Shape {
    Const(ValTy, u64),
    Var(ValTy),
    /// The same run-time value as the red at this earlier position (a copy:
    /// one parameter serves both, so facts about one hold for the other).
    Same(usize),
    /// A run-time integer known to be the red at this earlier position (a
    /// `Var`) plus a constant: an index and the index past it (`sp`, `sp +
    /// 1`). A parameter too, which the label knows as that sum, so that an
    /// index computed from one is seen to equal one computed from the other
    /// (a return address stored at `stack[sp]` before a merge point is
    /// found again at `stack[sp + 1 - 1]` after it).
    Plus(usize, i64),
}

impl Shape {
    /// Whether the red is a parameter of the version's label.
    pub(super) fn is_param(&self) -> bool {
        matches!(self, Shape::Var(_) | Shape::Plus(..))
    }
}

impl Shape {
    fn covers(&self, r: &RedBox) -> bool {
        match (self, r) {
            (Shape::Var(t), r) => *t == r.ty(),
            (Shape::Const(t, c), RedBox::Const { ty, bits }) => t == ty && c == bits,
            _ => false,
        }
    }
}

/// The most elements the frames' lists may hold at a turn of a loop
/// counted by red constants before they are forced (see
/// [`Compilation::merge`]): a call's arguments moved into its frame's
/// locals one by one stay virtual. It bounds the unrolling of a loop that
/// pushes as it counts down a constant (brainfuck's `[.-]` in
/// `tests/rust_style.rs`; PERFORMANCE.md has what larger bounds cost).
pub const COUNTED_GROWTH: usize = 2;

/// A red of a merge point's state whose constants keep versions apart (see
/// [`Compilation::pin_key`]): a red of the state by position, or a known
/// field by place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Pin {
    Red(usize),
    Field(FactDesc),
}

/// The most sets of pinned constants one merge key has versions for in one
/// compilation (see [`Compilation::pin_key`]): what bounds the unrolling
/// of a promoted position, as `Limits::max_steps` bounds a green one.
pub const MAX_PIN_GROUPS: usize = 512;

/// Whether a version of this shape covers a state with these reds.
pub(super) fn shape_covers(b: &ResidualBuilder, shape: &[Shape], reds: &[RedBox]) -> bool {
    shape.len() == reds.len()
        && shape.iter().zip(reds).all(|(s, r)| match s {
            Shape::Same(j) => reds[*j] == *r,
            Shape::Plus(j, k) => b.difference(&reds[*j], r) == Some(*k),
            s => s.covers(r),
        })
}

/// The exact shape of these reds: constants kept, copies of a run-time
/// value marked as such, and integers computed from another red by adding
/// a constant marked as that red plus the constant.
pub(super) fn exact_shape(b: &ResidualBuilder, reds: &[RedBox]) -> Vec<Shape> {
    // The run-time values seen so far, with their first position.
    let mut seen: Vec<(Val, usize)> = Vec::with_capacity(reds.len());
    // The roots of the integers seen, with the first position computed
    // from each and what it adds to the root.
    let mut roots: Vec<(RedBox, usize, i64)> = vec![];
    reds.iter()
        .enumerate()
        .map(|(i, r)| match r {
            RedBox::Const { ty, bits } => Shape::Const(*ty, *bits),
            RedBox::Var { ty, val } => match seen.iter().find(|(v, _)| v == val) {
                Some(&(_, j)) => Shape::Same(j),
                None => {
                    seen.push((*val, i));
                    if b.linear_form(r).is_none() {
                        return Shape::Var(*ty);
                    }
                    let (root, k) = b.root_form(r, None);
                    match roots.iter().find(|(x, _, _)| *x == root) {
                        Some(&(_, j, o)) => Shape::Plus(j, ty.canon(k.wrapping_sub(o) as u64) as i64),
                        None => {
                            roots.push((root, i, k));
                            Shape::Var(*ty)
                        }
                    }
                }
            },
        })
        .collect()
}

pub(super) struct Version {
    pub(super) label: Label,
    /// For a label made for an earlier version (see `Compilation::merge`):
    /// the position among its parameters of each value this version passes.
    pub(super) perm: Option<Vec<u32>>,
    pub(super) shape: Vec<Shape>,
    /// The fields this version knows (its label's last parameters are
    /// their run-time values).
    pub(super) facts: Vec<FactDesc>,
    /// The reds known to be lengths ([`ResidualBuilder::know_length`]) that
    /// its label's parameters are known as: a state is covered only where
    /// they are lengths too.
    pub(super) lengths: Vec<usize>,
}

impl<F: Frame> Compilation<F> {
    /// Where a turn check counts (see [`Compilation::turn_check`]): the
    /// position of the state's top frame, its point and green values, as
    /// the interpreter's hook sees it, whatever the frames below it (a
    /// recursion's calls at the entry's position are turns, as they are
    /// visits of it for the interpreter). Frames without positions (the
    /// runtime's tests) use the key of every frame, with lists and dicts
    /// of values seen real: an operand stack virtual at the entry is real
    /// a turn later.
    fn turn_position(&self, st: &JitState<F>, key: &crate::compile::state::StateKey<F::Key>) -> Option<u64> {
        use std::hash::BuildHasher;
        if self.b.exec || !self.for_portal() || self.defer.is_none() {
            return None;
        }
        Some(match st.frames.last().and_then(Frame::position) {
            Some(p) => p,
            None => {
                let view = crate::compile::state::KeyView { lists: true, ..Default::default() };
                let frames: Vec<F::Key> = st.frames.iter().map(|f| f.key_as(view)).collect();
                rustc_hash::FxBuildHasher.hash_one((&frames, &key.1))
            }
        })
    }

    /// A turn check (see [`crate::ir::function::TurnCounter`]): where a
    /// path of a portal's compilation arrives at the position of the
    /// root's entry (`h`, see [`Compilation::turn_position`]), in the root
    /// or in a case below it, the code counts the turn down in the tree's
    /// counter, and where none is left the path leaves to the interpreter:
    /// the false side is a state that hands over at once
    /// (`JitState::leaving`), so execute mode parks it at this merge point.
    /// The interpreter's measure counts visits of the same position, so
    /// the two times are per the same unit.
    ///
    /// Every tree rooted at one position counts in one counter (see
    /// [`position_counter`]): the portal's clock of time in
    /// code runs in all of them. Only code that may run slower than the
    /// interpreter it came from counts: a compilation that has recorded
    /// calls of Rust on paths commonly taken, or any compilation at a
    /// position where one did (a turn passes through the cases of its
    /// promotions, and the case that ends it often calls nothing itself).
    /// Elsewhere (a recursion's arithmetic, a loop over memory, at a
    /// position where nothing calls Rust yet) a turn does not count, and
    /// the count is *partial*: the portal compares time per turn only
    /// where every turn counts. (The count is the compilation's, not the
    /// path's: a path without calls may count too, which costs a
    /// decrement.) The root's first merge point is its entry, whose
    /// position is kept here.
    fn turn_check(&mut self, st: &JitState<F>, h: u64) {
        if !self.piece && self.entry_key.is_none() {
            self.tree.root_position.set(Some(h));
            // (A portal's trees share its stats: their address tells its
            // counters from those of another module's function of the
            // same name.)
            let portal = self.tree.stats.map_or(0, |s| s as *const _ as usize);
            let _ = self.tree.turns.set(position_counter(portal, &self.tree.name, h));
            return;
        }
        if self.tree.root_position.get() != Some(h) || st.hands_over() || self.tree.counter().partial.get() {
            return;
        }
        let calls = self.b.hot_calls > 0 || self.tree.counter().calls_rust.get();
        if !calls {
            // A turn that does not count: the counts are no longer per turn.
            self.tree.counter().set_partial();
            return;
        }
        self.tree.counts_turns.set(true);
        let at = self.b.konst(ValTy::Ptr, self.tree.counter() as *const _ as u64);
        let left = self.b.load(ValTy::I64, at, 0);
        let one = self.b.konst(ValTy::I64, 1);
        let left = self.b.bin(BinOp::Sub, ValTy::I64, Overflow::Wrap, left, one);
        self.b.store(ValTy::I64, at, 0, left);
        let zero = self.b.konst(ValTy::I64, 0);
        let goes_on = self.b.cmp(CmpOp::Gt, ValTy::I64, left, zero);
        let mut leave = st.clone();
        leave.leaving = true;
        if let Some(f) = leave.frames.last_mut() {
            f.unmerge();
        }
        self.stats.turn_checks += 1;
        self.branch_off(&RedBox::Var { ty: ValTy::Bool, val: goes_on }, true, leave);
        // What the check showed holds no more at the version (see `merge`).
        self.b.path_conds.clear();
    }

    /// Where reds of this merge key are pinned (see [`Compilation::pin_promoted`])
    /// and constants here, appends their constants to `key`: the versions of
    /// each set of constants are apart, as if those reds were greens. A key
    /// has at most [`MAX_PIN_GROUPS`] such sets in one compilation; past
    /// them its states share the versions of the plain key.
    fn pin_key(
        &mut self,
        base: u64,
        reds: &[RedBox],
        facts: &[(FactDesc, RedBox)],
        key: &mut crate::compile::state::StateKey<F::Key>,
    ) {
        let tree = self.tree.clone();
        let pinned = tree.pinned.borrow();
        let Some(pins) = pinned.get(&base) else { return };
        let consts: Vec<Option<u64>> = pins
            .iter()
            .map(|p| match p {
                Pin::Red(i) => reds.get(*i).and_then(RedBox::as_const),
                Pin::Field(d) => {
                    facts.iter().find(|(e, _)| e.is_at(d.root, d.index, d)).and_then(|(_, v)| v.as_const())
                }
            })
            .collect();
        if consts.iter().all(Option::is_none) {
            return;
        }
        let mut pinned_key = key.clone();
        pinned_key.1.push(usize::MAX);
        for c in &consts {
            pinned_key.1.extend(c.map_or([0, 1], |c| [c as usize, 0]));
        }
        if !self.versions.contains_key(&pinned_key) {
            let groups = self.pin_groups.entry(base).or_insert(0);
            if *groups >= MAX_PIN_GROUPS {
                return;
            }
            *groups += 1;
        }
        *key = pinned_key;
    }

    /// A promotion of `val` on a path with no branch since its last merge
    /// point: where `val` is a run-time red that merge point's version
    /// passed, that red is pinned at its key for the whole tree: later
    /// versions keep its constants apart ([`Compilation::pin_key`]). An interpreter that promotes its
    /// position from its frame after the merge point (`hint!(frame.ip,
    /// promote)`) then compiles each position of the interpreted program
    /// once, as a green position would, instead of widening the position
    /// at a loop head and switching on it at every instruction.
    pub(super) fn pin_promoted(&mut self, val: Val) {
        if let Some((key, pin)) = self.merge_params.get(&val) {
            let mut pinned = self.tree.pinned.borrow_mut();
            let pins = pinned.entry(*key).or_default();
            if !pins.contains(pin) {
                pins.push(pin.clone());
            }
        }
    }

    /// A merge point: returns the state to continue with (its red boxes now
    /// the label's parameters and the constants kept), or `None` when the path
    /// jumped to existing code or the compilation is over budget.
    pub fn merge(&mut self, mut st: JitState<F>, kind: MergeKind) -> Option<JitState<F>> {
        if self.b.exec {
            return Some(st);
        }
        if let (true, Some(defer)) = (st.hands_over(), self.defer) {
            // A flexswitch that hands over at once (see `flexswitch`).
            if let Some(f) = st.frames.last_mut() {
                f.unmerge();
            }
            defer(self, st);
            return None;
        }
        if let Some(defer) = self.deferring() {
            if !self.over_budget() {
                if let Some(f) = st.frames.last_mut() {
                    f.unmerge();
                }
                defer(self, st);
                return None;
            }
        }
        if self.over_budget() {
            if self.b.is_open() {
                self.b.error_exit(ErrorKind::Abort(u32::MAX));
            }
            return None;
        }
        if kind == MergeKind::Join && st.merged_at == self.b.branches {
            self.stats.joins_passed += 1;
            return Some(st);
        }
        self.stats.merges += 1;
        // What this path's branches showed holds no more where other paths
        // join it (a version's code is theirs too).
        st.learn_path(&self.b);
        self.b.path_conds.clear();
        st.sync_facts(&self.b);
        st.normalize();
        let mut key = st.key();
        if !self.versions.contains_key(&key) {
            if let Some((exact, point, depth)) = st.call_point() {
                // `jit::specialize` has no interpreter to leave a recursion
                // on constants to: it spills one whose frames fill a virtual
                // list. A portal declines it and compiles where the
                // recursion's values are known only at run time.
                let unrolled = !self.for_portal() && depth >= crate::compile::virtuals::MAX_VIRTUAL_PTRS;
                if let (true, same_lists) = st.lineage.grew_recursion(point, depth, self.b.branches, exact, unrolled) {
                    // A language-level recursion: its saved frames go onto
                    // the continuation stack, and the call continues in
                    // the function's code for any depth (`compile::spill`).
                    // Lists that grew with it (an operand stack the calls
                    // share, a frame's or the interpreter's own) are forced
                    // first, so that one version of the function's code
                    // serves every depth.
                    if !same_lists {
                        self.stats.lists_forced_at_merges += 1;
                        st.force_lists(&mut self.b);
                        st.heap.force_backed_lists(&mut self.b);
                        st.sync_facts(&self.b);
                        st.normalize();
                    }
                    // Backed lists in memory keep a tail, emptied here: what
                    // is below the callee's frame goes with the caller's
                    // frame (a segment), the rest into memory.
                    if st.spill_frames(&mut self.b, true) {
                        self.stats.spills += 1;
                        // A recursion's turns come back through the
                        // continuation stack, not only through merges: its
                        // turns are not all counted (see `turn_check`).
                        self.tree.counter().set_partial();
                        if self.entry_point.is_some_and(|e| e != point) {
                            self.stats.spills_elsewhere += 1;
                        }
                        if let Some(s) = self.tree.stats {
                            s.spilled();
                        }
                        st.sync_facts(&self.b);
                        st.normalize();
                        key = st.key();
                        let shared = self.piece && st.frames.iter().any(Frame::reads_saved_frames);
                        if let (true, Some(defer), false) = (shared, self.defer, self.versions.contains_key(&key)) {
                            // In a case (a caller's continuation after a
                            // return) of an interpreter that reads its frames
                            // in place, the function's code is a piece the
                            // tree shares, compiled once, not a copy per case.
                            // Other interpreters keep their copies (see
                            // PERFORMANCE.md).
                            if let Some(f) = st.frames.last_mut() {
                                f.unmerge();
                            }
                            defer(self, st);
                            return None;
                        }
                    } else if self.tree.declines_recursion.get() {
                        if let Some(s) = self.tree.stats {
                            s.saw_recursion();
                        }
                        self.decline("a language-level recursion (a function of the interpreted program calling itself, through the interpreter's saved frames) whose frames cannot be spilled");
                        return None;
                    }
                }
            }
        }
        if !self.versions.contains_key(&key) {
            // Lists that grew since this path was here last (a loop turn)
            // are forced: one version for them real instead of one per
            // length. A loop counted by red constants (a `for` over a
            // compile-time range: its counter is a join, so red), its
            // constants different from every earlier visit's, keeps lists
            // of up to [`COUNTED_GROWTH`] elements in all virtual.
            if let Some((real, consts)) = st.lists_real_key() {
                use std::hash::BuildHasher;
                let point = rustc_hash::FxBuildHasher.hash_one(&real);
                let consts = rustc_hash::FxBuildHasher.hash_one(&consts);
                let size = st.frame_lists_len();
                let (grew, same) = st.lineage.grew_tagged(point, size, self.b.branches, consts);
                let grew = grew && (same || size > COUNTED_GROWTH);
                if grew || self.versions.contains_key(&real) {
                    self.stats.lists_forced_at_merges += 1;
                    st.force_lists(&mut self.b);
                    st.sync_facts(&self.b);
                    st.normalize();
                    key = st.key();
                }
            }
        }
        if !st.heap.objects.is_empty() && !self.versions.contains_key(&key) {
            // Code already exists for this state with its objects real: the
            // virtual objects are forced here, at the merge, and share it.
            if self.versions.contains_key(&st.forced_key()) {
                self.stats.forced_at_merges += 1;
                st.force_all(&mut self.b);
                key = st.key();
            }
        }
        if let Some(position) = self.turn_position(&st, &key) {
            self.turn_check(&st, position);
        }
        let reds = st.core_reds();
        let facts = describe_facts(&self.b, &st.known, &reds);
        // The plain key's hash, where it is needed: pins of this tree, or a
        // new version of a compilation that pins (see `pin_key`).
        let hash = |key: &crate::compile::state::StateKey<F::Key>| {
            use std::hash::BuildHasher;
            rustc_hash::FxBuildHasher.hash_one(key)
        };
        let base = self.tree.promotes_every_turn.get().then(|| hash(&key));
        if let Some(base) = base {
            self.pin_key(base, &reds, &facts, &mut key);
        }
        if self.entry_key.is_none() {
            self.entry_key = Some(key.clone());
            if !self.piece && self.for_portal() {
                self.entry_point = Some(st.point_hashes().1);
            }
        }
        // One lookup: the versions are borrowed until the new one is pushed
        // (keys are long; hashing and comparing them again showed up).
        let versions = self.versions.entry(key).or_default();
        // The first version of a merge point is often made on a path that
        // knows fewer fields than later ones (a loop entered in mid-turn, by
        // a flexswitch's case): one more, exact version keeps what they know.
        let one_more = versions.len() == 1;
        let found = versions.iter().find_map(|v| {
            if !shape_covers(&self.b, &v.shape, &reds)
                || one_more && v.facts.len() < facts.len()
                || !v.lengths.iter().all(|&i| self.b.is_length(&reds[i]))
            {
                return None;
            }
            match_facts(&v.facts, &facts).map(|m| (v, m))
        });
        if let Some((v, map)) = found {
            let label = v.label;
            let mut passed: Vec<RedBox> =
                v.shape.iter().zip(&reds).filter(|(s, _)| s.is_param()).map(|(_, r)| *r).collect();
            for (d, &k) in v.facts.iter().zip(&map) {
                if let FactVal::Var(_) = d.value {
                    passed.push(facts[k].1);
                }
            }
            let args: Vec<_> = passed.iter().map(|r| self.b.materialize(r)).collect();
            match &v.perm {
                None => self.b.jump(label, &args),
                Some(perm) => {
                    let args = self.b.args_at(label, perm, &args);
                    self.b.jump(label, &args);
                }
            }
            self.stats.matches += 1;
            // Back at a root's entry position, in its own call: a loop
            // there (its lists may have another shape than at the entry).
            if kind != MergeKind::Join
                && self.entry_point.is_some()
                && st.calls_inline() == 0
                && Some(st.point_hashes().1) == self.entry_point
            {
                self.stats.entry_matches += 1;
            }
            return None;
        }
        let general = kind == MergeKind::LoopHeadGeneral || versions.len() >= self.limits.max_versions;
        let last_widening = versions.len() + 1 >= self.limits.max_versions;
        let exact = || exact_shape(&self.b, &reds);
        let all_facts = || facts.iter().map(|(d, _)| d.clone()).collect::<Vec<_>>();
        let (shape, fact_descs): (Vec<Shape>, Vec<FactDesc>) = match (general, kind, versions.last()) {
            // The most general version knows no field: it covers every state.
            (true, _, _) => (reds.iter().map(|r| Shape::Var(r.ty())).collect(), vec![]),
            // The last version before it keeps only what every version so
            // far and this state agree on: a constant that never varied (an
            // enum's tag, most often) stays one. Making it a run-time value
            // too would compile every case of the code that tests it, which
            // nothing has reached; if something does, it gets the most
            // general version.
            (false, _, Some(_)) if last_widening => {
                self.stats.widenings += 1;
                let shape = exact()
                    .into_iter()
                    .enumerate()
                    .map(|(i, s)| match s {
                        Shape::Var(_) => s,
                        _ if versions.iter().all(|v| v.shape.get(i) == Some(&s)) => s,
                        _ => Shape::Var(reds[i].ty()),
                    })
                    .collect();
                (shape, vec![])
            }
            (false, MergeKind::Join, _) | (false, _, None) => (exact(), all_facts()),
            // The second shape of a loop head is kept exact too: the first
            // turn of a loop often differs from the steady state (a stack
            // slot written during the turn, a flag set once), and constants
            // that hold from the second turn on then survive. A third shape
            // widens.
            (false, _, Some(_)) if versions.len() == 1 => (exact(), all_facts()),
            (false, _, Some(prev)) => {
                self.stats.widenings += 1;
                let shape = prev
                    .shape
                    .iter()
                    .zip(&reds)
                    .map(|(s, r)| match s {
                        Shape::Same(j) if reds[*j] == *r => s.clone(),
                        Shape::Plus(j, k) if self.b.difference(&reds[*j], r) == Some(*k) => s.clone(),
                        Shape::Const(..) if s.covers(r) => s.clone(),
                        _ => Shape::Var(r.ty()),
                    })
                    .collect();
                (shape, widen_facts(&prev.facts, &facts))
            }
        };
        // (A new version's facts are the state's, so they match.)
        let (fact_descs, map) = match match_facts(&fact_descs, &facts) {
            Some(map) => (fact_descs, map),
            None => (vec![], vec![]),
        };
        let mut var_tys: Vec<ValTy> = shape
            .iter()
            .zip(&reds)
            .filter_map(|(s, r)| match s {
                Shape::Var(t) => Some(*t),
                Shape::Plus(..) => Some(r.ty()),
                Shape::Const(..) | Shape::Same(_) => None,
            })
            .collect();
        var_tys.extend(fact_descs.iter().filter_map(|d| match d.value {
            FactVal::Var(t) => Some(t),
            _ => None,
        }));
        let mut passed: Vec<RedBox> = shape.iter().zip(&reds).filter(|(s, _)| s.is_param()).map(|(_, r)| *r).collect();
        for (d, &k) in fact_descs.iter().zip(&map) {
            if let FactVal::Var(_) = d.value {
                passed.push(facts[k].1);
            }
        }
        let args: Vec<_> = passed.iter().map(|r| self.b.materialize(r)).collect();
        // A block that has recorded nothing since it began, and whose
        // parameters hold every value passed, serves as this version's
        // label too: no block that only forwards its parameters is made
        // (most merge points of an interpreter's loop record nothing in
        // between: TLC's PICK, PUSH and POP).
        let (label, params, perm) = match self.b.forwarding_params(&args, &var_tys) {
            Some((label, perm)) => (label, args, Some(perm)),
            None => {
                let (label, params) = self.b.new_label(&var_tys);
                self.b.jump(label, &args);
                self.b.switch_to(label);
                (label, params, None)
            }
        };
        let mut params = params.into_iter();
        let mut new_reds: Vec<RedBox> = Vec::with_capacity(shape.len());
        for s in &shape {
            let r = match s {
                Shape::Const(ty, bits) => RedBox::Const { ty: *ty, bits: *bits },
                Shape::Var(ty) => RedBox::Var { ty: *ty, val: params.next().expect("one parameter per run-time red") },
                Shape::Same(j) => new_reds[*j],
                Shape::Plus(_, _) => RedBox::Var {
                    ty: reds[new_reds.len()].ty(),
                    val: params.next().expect("one parameter per run-time red"),
                },
            };
            new_reds.push(r);
        }
        // What the label knows of its parameters: the sums of `Plus`, and
        // nothing else (a block reused as the label has parameters whose
        // sums the earlier version knew in terms of values this one may not
        // pass).
        // Where this version's run-time reds came from, for a promotion on
        // every turn that may pin one (`pin_promoted`).
        for (i, (s, r)) in shape.iter().zip(&new_reds).enumerate() {
            if let (true, RedBox::Var { val, .. }) = (s.is_param(), r) {
                self.b.set_linear_form(*val, None);
                if let Some(base) = base {
                    self.merge_params.insert(*val, (base, Pin::Red(i)));
                }
            }
        }
        for (s, r) in shape.iter().zip(&new_reds) {
            if let (Shape::Plus(j, k), RedBox::Var { val, .. }) = (s, r) {
                self.b.set_linear_form(*val, Some((new_reds[*j], *k)));
            }
        }
        let lengths: Vec<usize> = if general {
            vec![]
        } else {
            (0..shape.len()).filter(|&i| shape[i].is_param() && self.b.is_length(&reds[i])).collect()
        };
        for &i in &lengths {
            self.b.know_length(&new_reds[i]);
        }
        st.known = rebuild_facts(&mut self.b, &fact_descs, &new_reds, &mut params);
        for (d, f) in fact_descs.iter().zip(&st.known) {
            if let (FactVal::Var(_), RedBox::Var { val, .. }, Some(base)) = (d.value, f.value, base) {
                self.merge_params.insert(val, (base, Pin::Field(d.clone())));
            }
        }
        for f in &st.known {
            f.reds_into(&mut new_reds);
        }
        st.epoch = self.b.calls;
        versions.push(Version { label, perm, shape, facts: fact_descs, lengths });
        st.merged_at = self.b.branches;
        st.set_reds(&new_reds);
        st.know_lengths(&mut self.b);
        Some(st)
    }
}

thread_local! {
    /// The turn counters of the positions roots were compiled at, by the
    /// portal's stats, the tree's name and the position: every tree rooted at one
    /// position counts its turns in one counter (see
    /// [`crate::ir::function::TurnCounter`]).
    static COUNTERS: std::cell::RefCell<std::collections::HashMap<(usize, u64, u64), std::rc::Weak<crate::ir::function::TurnCounter>>> =
        Default::default();
}

/// The turn counter of `position` for the trees named `name` of the portal
/// whose stats are at `portal` (see [`COUNTERS`]).
fn position_counter(portal: usize, name: &str, position: u64) -> std::rc::Rc<crate::ir::function::TurnCounter> {
    use std::hash::BuildHasher;
    let key = (portal, rustc_hash::FxBuildHasher.hash_one(name), position);
    COUNTERS.with(|c| {
        let mut c = c.borrow_mut();
        if let Some(counter) = c.get(&key).and_then(std::rc::Weak::upgrade) {
            return counter;
        }
        if c.len() >= 1024 {
            c.retain(|_, w| w.strong_count() > 0);
        }
        let counter = std::rc::Rc::new(crate::ir::function::TurnCounter::default());
        c.insert(key, std::rc::Rc::downgrade(&counter));
        counter
    })
}

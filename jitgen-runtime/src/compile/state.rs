//! The JIT state: what a paused compile-time process is.
//!
//! A state is a chain of virtual frames, the innermost last: one per inlined
//! call, each knowing where its function continues (its block), its green
//! values and its red boxes. The state is generic over the frame type; a
//! generating extension's frames are `frame::PointFrame`s (tests define
//! their own); the runtime only needs the frame's merge key and its red
//! boxes. A state is plain data: it is cloned at a red split, frozen and
//! compared at a merge point, and queued until the scheduler resumes it.

use std::fmt::Debug;
use std::hash::Hash;

use crate::compile::redbox::RedBox;
use crate::compile::vdict::VDict;
use crate::compile::virtuals::{VHeap, VPList, VPtr, MAX_VIRTUAL_PTRS};
use crate::compile::vlist::{InPlaceRef, VList};
use crate::ir::builder::CallbackFn;
use crate::ir::builder::ResidualBuilder;
use crate::ir::builder::SymAddr;
use crate::ir::ops::{BinOp, CmpOp, Overflow, ValTy};
use crate::run::heap::VecHeader;

/// One virtual frame of a generating extension.
pub trait Frame: Clone {
    /// The function, block and green values: states whose keys are equal may
    /// share residual code.
    type Key: Clone + Eq + Hash + Debug;
    /// This frame's key.
    fn key(&self) -> Self::Key;
    /// The red boxes of the frame's live variables, in a fixed order.
    fn reds(&self) -> Vec<RedBox>;
    /// Replaces the red boxes, in the order of [`Frame::reds`].
    fn set_reds(&mut self, reds: &[RedBox]);
    /// Appends the red boxes to `out` ([`Frame::reds`] without a vector of
    /// its own; generated frames implement it so, merge points call it).
    fn reds_into(&self, out: &mut Vec<RedBox>) {
        out.extend(self.reds());
    }
    /// Replaces the red boxes from the start of `reds` (which may go on
    /// beyond them) and returns how many it took.
    fn set_reds_counted(&mut self, reds: &[RedBox]) -> usize {
        let n = self.reds().len();
        self.set_reds(&reds[..n]);
        n
    }
    /// The resume point of the generating extension the frame is at, where
    /// frames have one (see `Compilation::set_declines_ahead`).
    fn point(&self) -> Option<u32> {
        None
    }
    /// The frame's position as the interpreter's hook sees it: its point
    /// and green values, hashed, where frames have them. Turn checks count
    /// arrivals at the root's position whatever the frames below (see
    /// `Compilation::turn_check`).
    fn position(&self) -> Option<u64> {
        None
    }
    /// For a frame at a merge point that already went through it: marks it
    /// as not merged yet, so that a compilation resuming it (a deferred
    /// path) registers the merge point first.
    fn unmerge(&mut self) {}
    /// Visits the frame's pointers to structs that may be virtual.
    fn vptrs_mut(&mut self, _f: &mut dyn FnMut(&mut VPtr)) {}
    /// Visits the frame's lists and dicts (virtual or real) that may be
    /// forced: [`JitState::force_lists`] and merge keys use it.
    fn lists_mut(&mut self, _f: &mut dyn FnMut(ListMut<'_>)) {}
    /// Whether the interpreter reads its lists of structs (saved frames) in
    /// place, not only by `pop` (`frames.last()` at every instruction):
    /// spilled, they count their entries on the continuation stack, so
    /// that their length is known ([`JitState::spill_frames`],
    /// [`JitState::frames_len`]).
    fn reads_saved_frames(&self) -> bool {
        false
    }
    /// The key this frame would have with the parts `view` names real (at
    /// a null address), the frame itself unchanged: what a merge point
    /// compares. The default changes a copy.
    fn key_as(&self, view: KeyView) -> Self::Key {
        let mut f = self.clone();
        view.apply(&mut f);
        f.key()
    }
    /// Appends the red boxes the frame would have with its lists and dicts
    /// seen real ([`KeyView::lists`]). The default changes a copy.
    fn reds_lists_real(&self, out: &mut Vec<RedBox>) {
        let mut f = self.clone();
        KeyView { lists: true, ..KeyView::default() }.apply(&mut f);
        f.reds_into(out);
    }
}

/// Parts of a frame a merge key may see as real, at a null address, without
/// forcing them ([`Frame::key_as`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyView {
    /// Virtual structs, those in lists of structs too.
    pub objects: bool,
    /// Lists of structs (saved frames), with their elements.
    pub saved_frames: bool,
    /// Lists and dicts of values.
    pub lists: bool,
}

impl KeyView {
    /// Changes `f` as the view sees it.
    pub fn apply<F: Frame>(self, f: &mut F) {
        let null = RedBox::constant(ValTy::Ptr, 0);
        if self.objects {
            f.vptrs_mut(&mut |p| {
                if let VPtr::Virtual(_) = p {
                    *p = VPtr::Real(null);
                }
            });
        }
        if self.saved_frames {
            f.lists_mut(&mut |l| {
                if let ListMut::Ptrs(l) = l {
                    *l = VPList::Real(null);
                }
            });
        }
        if self.lists {
            f.lists_mut(&mut |l| l.forget());
        }
    }
}

/// A frame's list or dict, as [`Frame::lists_mut`] visits it, with the
/// helpers residual code calls to make it real.
pub enum ListMut<'a> {
    /// A list of scalars of this type: `vec_new_repeat` and `vec_set` for
    /// it ([`VList::force`]).
    Scalars(&'a mut VList, ValTy, CallbackFn, CallbackFn),
    /// A list of enums of this many slots each: `flat_vec_new` for it
    /// ([`VList::force_flat`]).
    Flat(&'a mut VList, usize, CallbackFn),
    /// A dict with keys of this type: `map_new` and `map_insert` for it
    /// ([`VDict::force`]).
    Dict(&'a mut VDict, ValTy, CallbackFn, CallbackFn),
    /// A list of structs (saved frames): neither forced nor forgotten, its
    /// growth bounded by [`VPList::push`] (recursion, not a loop); a state
    /// too large for a frame forces its objects instead. Visited for
    /// [`JitState::call_point`].
    Ptrs(&'a mut VPList),
}

impl ListMut<'_> {
    /// Forces it (a real one stays as it is).
    fn force(self, b: &mut ResidualBuilder) {
        match self {
            ListMut::Scalars(l, ty, new, set) => {
                l.force(b, ty, new, set);
            }
            ListMut::Flat(l, w, new) => {
                l.force_flat(b, w, new);
            }
            ListMut::Dict(d, ty, new, insert) => {
                d.force(b, ty, new, insert);
            }
            ListMut::Ptrs(_) => {}
        }
    }

    /// Makes it real at address 0, recording nothing: for keys only.
    fn forget(self) {
        let null = RedBox::constant(ValTy::Ptr, 0);
        match self {
            ListMut::Scalars(l, ..) | ListMut::Flat(l, ..) => *l = VList::Real(null),
            ListMut::Dict(d, ..) => *d = VDict::Real(null),
            ListMut::Ptrs(_) => {}
        }
    }
}

/// The merge key of a state: its frames' keys and the types of its virtual
/// objects in canonical order.
pub type StateKey<K> = (Vec<K>, Vec<usize>);

/// Where an operand stack's tail splits when frames are spilled (see
/// [`JitState::spill_frames`]).
struct SegmentPlan {
    /// The object whose list it is.
    object: usize,
    /// The list among the object's.
    list: usize,
    /// For each frame spilled, oldest first, where its part of the tail
    /// begins; what is below the first goes into memory.
    cuts: Vec<usize>,
    /// The tail's elements below the newest frame's base: the last spilled
    /// frame's part ends there.
    above: usize,
    /// The newest frame's base: the list's length before its tail then.
    base: RedBox,
}

/// Whether `f` has a list of saved frames that `pick` takes.
fn has_frames_list<F: Frame>(f: &mut F, pick: impl Fn(&VPList) -> bool) -> bool {
    let mut found = false;
    f.lists_mut(&mut |l| found |= matches!(l, ListMut::Ptrs(l) if pick(l)));
    found
}

/// Whether `f` has a spilled list with no virtual element left.
fn pops_spilled<F: Frame>(f: &mut F) -> bool {
    has_frames_list(f, VPList::pops_spilled)
}

/// Whether `f` has a spilled list.
fn has_spilled<F: Frame>(f: &mut F) -> bool {
    has_frames_list(f, |l| matches!(l, VPList::Spilled { .. }))
}

/// A compile-time state: a chain of virtual frames, the innermost last.
#[derive(Clone, Debug)]
pub struct JitState<F> {
    /// The frames, outermost first.
    pub frames: Vec<F>,
    /// The virtual objects the frames point to.
    pub heap: VHeap,
    /// Fields of real objects known on this path (see [`Fact`]): loaded or
    /// stored since the last call that is not inlined, oldest first. They
    /// survive merge points (see `schedule`) and flexswitches; a promotion
    /// turns a known value into a constant.
    pub known: Vec<Fact>,
    /// The builder's call count when `known` was last brought up to date
    /// (see [`JitState::sync_facts`]).
    pub epoch: u64,
    /// The merge points with virtual lists this path went through last.
    pub lineage: Lineage,
    /// This path popped a saved frame from memory: it returned below the
    /// depth at which compiled code was entered. Such a path hands over to
    /// the interpreter at its next flexswitch or merge point: what follows
    /// is the caller, whose lists came out of memory and stay real in
    /// compiled code, while code compiled for the caller's own loop starts
    /// with them in registers ([`JitState::hands_over`]).
    pub below_entry: bool,
    /// This path leaves to the interpreter at the merge point it is at: a
    /// turn check ran its counter out (see `schedule::merge`), and the
    /// portal measures its code against the interpreter.
    pub leaving: bool,
    /// The builder's count of two-way branches when this path last went
    /// through a merge point (or began): a join it reaches with no branch
    /// recorded since is reached by no other path (see `schedule::merge`).
    pub merged_at: u64,
    /// The last length taken of a list of structs with virtual elements
    /// over a part in memory or on the continuation stack: that part's
    /// length (a run-time value) and the virtual elements then. An index
    /// computed from it (`len - 1` in `last()`) names a virtual element
    /// ([`JitState::frames_elem`]). Forgotten with the fields and at
    /// normalization.
    pub top_len: Option<Box<(RedBox, Vec<VPtr>)>>,
}

/// The merge points with virtual lists a path went through, each with its
/// state's size then: a state arriving where its path has been, with more
/// reds, and through a run-time branch since, has grown its lists in a loop
/// of the interpreted program (its output), and merge points force them
/// ([`crate::compile::schedule`]) rather than compile one version per
/// length. A loop with no run-time branch (its trip count known while
/// compiling: copying a call's arguments) is unrolled as before. A shared
/// list, newest first: paths that split share their past.
///
/// Visits sit in chunks, oldest first within each, so that a search reads
/// memory in order instead of chasing a pointer per visit (it ran at every
/// merge point and was a fifth of a recursion's compile time). A path sees a
/// chunk up to its own length; the first path to visit after a split extends
/// the chunk they share, the others begin chunks of their own.
#[derive(Clone, Debug, Default)]
pub struct Lineage(Option<std::rc::Rc<Chunk>>, usize);

/// Consecutive visits of a [`Lineage`], and the lineage before them.
#[derive(Debug)]
pub struct Chunk {
    visits: std::cell::RefCell<Vec<Visit>>,
    before: Lineage,
}

/// One merge point in a [`Lineage`].
#[derive(Clone, Copy, Debug)]
struct Visit {
    point: u64,
    size: usize,
    branches: u64,
    tag: u64,
}

impl Lineage {
    /// How far back a path is searched: a loop of more merge points with
    /// virtual lists than this is not seen as one.
    const DEPTH: usize = 512;

    /// Records a visit of the point `point` (a hash) of size `size` (the
    /// elements of the frames' lists, see [`JitState::frame_lists_len`], or,
    /// for a call point, how many calls deep: see [`JitState::call_point`]),
    /// the builder having recorded `branches` branches, and returns whether
    /// this path was there before smaller and with fewer branches recorded:
    /// a loop that grew, or a language-level recursion through a run-time
    /// branch (one whose depth is known while compiling unrolls).
    pub fn grew(&mut self, point: u64, size: usize, branches: u64) -> bool {
        self.visit(point, size, branches, None, branches).0
    }

    /// [`Lineage::grew`], the visit carrying `tag`; also whether the path
    /// grew from a visit with the same tag (at any point).
    pub fn grew_tagged(&mut self, point: u64, size: usize, branches: u64, tag: u64) -> (bool, bool) {
        self.visit(point, size, branches, Some(tag), branches)
    }

    /// [`Lineage::grew_tagged`] for a language-level recursion whose depth
    /// is known while compiling: with `unrolled` (its saved frames as many
    /// as a virtual list holds), a visit smaller at the same point counts
    /// without a run-time branch between them, so that the recursion
    /// spills instead of unrolling past what the list can hold.
    pub fn grew_recursion(&mut self, point: u64, size: usize, branches: u64, tag: u64, unrolled: bool) -> (bool, bool) {
        self.visit(point, size, if unrolled { u64::MAX } else { branches }, Some(tag), branches)
    }

    /// Records the visit (with `branches` recorded) and searches the path's
    /// past (one scan, newest first): whether it grew at `point` from a
    /// visit with fewer branches than `since`, and from a visit tagged `tag`
    /// (`false` without one).
    fn visit(&mut self, point: u64, size: usize, since: u64, tag: Option<u64>, branches: u64) -> (bool, bool) {
        let (grew, same) = self.search(point, size, since, tag);
        let visit = Visit { point, size, branches, tag: tag.unwrap_or(u64::MAX) };
        if let Some(chunk) = &self.0 {
            let mut visits = chunk.visits.borrow_mut();
            if visits.len() == self.1 {
                visits.push(visit);
                self.1 += 1;
                return (grew, same);
            }
        }
        let before = std::mem::take(self);
        let visits = std::cell::RefCell::new(vec![visit]);
        *self = Lineage(Some(std::rc::Rc::new(Chunk { visits, before })), 1);
        (grew, same)
    }

    fn search(&self, point: u64, size: usize, since: u64, tag: Option<u64>) -> (bool, bool) {
        let (mut grew, mut same) = (false, false);
        let mut left = Self::DEPTH;
        let mut at = self;
        while let (Some(chunk), true) = (&at.0, left > 0) {
            let visits = chunk.visits.borrow();
            let seen = &visits[at.1.saturating_sub(left)..at.1];
            for v in seen.iter().rev() {
                if v.size < size && v.branches < since {
                    grew |= v.point == point;
                    same |= tag == Some(v.tag);
                    if grew && (same || tag.is_none()) {
                        return (grew, same);
                    }
                }
            }
            left -= seen.len();
            at = &chunk.before;
        }
        (grew, same)
    }
}

impl Drop for Lineage {
    /// Unlinks the chunks no other path shares one by one (a long path
    /// would overflow the stack dropping them recursively).
    fn drop(&mut self) {
        let mut next = self.0.take();
        while let Some(rc) = next {
            match std::rc::Rc::try_unwrap(rc) {
                Ok(mut c) => next = c.before.0.take(),
                Err(_) => break,
            }
        }
    }
}

/// The alias class of `Vec` headers (their buffer and length fields). The
/// classes of module structs' fields are odd; those of `Vec` elements even
/// (with bit 2 set).
pub const VEC_HEADER: u32 = 0;

/// The class of bounds-check facts: `index < len` held (the fact's root is
/// the length, its index the index's root with stride 1, its offset what
/// the index adds to that root). About values, so no store forgets them.
pub const BOUNDS_CHECKED: u32 = 2;

/// The class of ordering facts: `root + offset < root + offset + field`
/// (unsigned) held on the path, so that no value between the two wraps
/// (see [`JitState::learn_path`]). About values, so no store forgets them.
pub const ORDERED: u32 = 8;

/// Facts kept per state at most (the oldest go first).
pub const MAX_FACTS: usize = 16;

/// The largest lower bound of a `Vec`'s length kept ([`Fact::min`]): an
/// interpreter pops a few values at a time, and each bound splits versions.
pub const MAX_KNOWN_LENGTH: u64 = 2;

/// A load at `at` where `one` is 1, else of a word of the runtime's (0):
/// `safe + (at - safe) * one`, no branch (the caller tests `one` next, or
/// discards what was read).
pub(crate) fn or_safe(b: &mut ResidualBuilder, at: &RedBox, one: &RedBox) -> RedBox {
    let safe = RedBox::u64(crate::run::heap::EMPTY_POP_WORDS.as_ptr() as u64);
    let a = b.red_cast(at, ValTy::U64);
    let d = b.red_bin(BinOp::Sub, Overflow::Wrap, &a, &safe);
    let d = b.red_bin(BinOp::Mul, Overflow::Wrap, &d, one);
    let a = b.red_bin(BinOp::Add, Overflow::Wrap, &safe, &d);
    b.red_cast(&a, ValTy::Ptr)
}

/// The longest tail [`JitState::tail_get`] chooses from at run time.
pub const MAX_SELECTED: usize = 4;

/// How residual code works on a real `Vec` of enums of one type (see
/// [`JitState::flat_vec_push`]): its layouts when measured, the alias class
/// of its elements, and the runtime's helpers.
pub struct FlatVec {
    /// The enum's layout ([`crate::run::heap::Flat::layout`]).
    pub layout: Option<&'static crate::run::heap::EnumLayout>,
    /// The `Vec`'s ([`crate::run::heap::vec_header`]).
    pub header: Option<VecHeader>,
    /// The alias class of the elements (see [`Fact`]).
    pub class: u32,
    /// [`crate::run::heap::vec_reserve_one`] for the element type.
    pub reserve: CallbackFn,
    /// [`crate::run::heap::flat_vec_push`] for the element type.
    pub push: CallbackFn,
    /// [`crate::run::heap::flat_vec_pop`] for the element type.
    pub pop: CallbackFn,
}

impl FlatVec {
    /// How residual code works on a `Vec` of the enum `M` flattens, its
    /// elements in alias class `class`.
    pub fn of<M: crate::run::heap::Flat>(class: u32) -> FlatVec {
        FlatVec {
            layout: M::layout(),
            header: crate::run::heap::vec_header::<M::T>(),
            class,
            reserve: crate::run::heap::vec_reserve_one::<M::T>,
            push: crate::run::heap::flat_vec_push::<M>,
            pop: crate::run::heap::flat_vec_pop::<M>,
        }
    }
}

/// A field of a real object known on a path: the `ty` at `at` holds `value`.
///
/// Facts are found again by address *computation* ([`SymAddr`]), so a field
/// read twice through addresses computed twice is loaded once. A store
/// forgets the facts it may overwrite: those of the same alias class
/// (`class`: the Rust type the field belongs to, the element type of a
/// `Vec`, or [`VEC_HEADER`]) whose bytes overlap the stored ones (`field`:
/// the offset in that type). Rust does not let a place of one type be written
/// as a place of another, so facts of other classes stay true. A call may
/// change any `Vec`, so facts about `Vec` headers and elements last until the
/// next call only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fact {
    /// Where.
    pub at: SymAddr,
    /// The type of the field.
    pub ty: ValTy,
    /// The alias class.
    pub class: u32,
    /// The offset of the field in its class's type.
    pub field: i32,
    /// What it holds: a value of type `ty`, or one of a wider integer type
    /// that `ty`'s value was widened to (so that promoting the wide value
    /// makes the field known).
    pub value: RedBox,
    /// A lower bound of the value as an unsigned integer (0: none known):
    /// the length of a `Vec` pushed onto in compiled code, so that a pop
    /// after a merge point still knows it is not empty.
    pub min: u64,
}

impl Fact {
    /// Whether a call may change it: a `Vec`'s header or elements (the
    /// runtime's helpers write them), not a struct's field (only calls that
    /// are not inlined do, and they forget every fact) or a checked bound.
    pub(crate) fn calls_may_change(&self) -> bool {
        self.class == VEC_HEADER || self.class & 1 == 0 && self.class != BOUNDS_CHECKED && self.class != ORDERED
    }

    /// Whether a store of a `ty` at `at` (a `field` of alias class
    /// `class`) may overwrite this fact: same class and overlapping field,
    /// unless the two addresses differ by a known constant that keeps
    /// their bytes apart (two elements of one `Vec`: `stack[sp]` and
    /// `stack[sp + 1]`).
    pub(crate) fn overlaps(&self, at: &SymAddr, class: u32, field: i32, ty: ValTy) -> bool {
        let size = |t: ValTy| (t.bits() as i64 / 8).max(1);
        let end = |o: i32, t: ValTy| o + size(t) as i32;
        let apart = self.at.root == at.root
            && self.at.index == at.index
            && (self.at.offset.checked_add(size(self.ty)).is_some_and(|e| e <= at.offset)
                || at.offset.checked_add(size(ty)).is_some_and(|e| e <= self.at.offset));
        self.class == class && self.field < end(field, ty) && field < end(self.field, self.ty) && !apart
    }

    pub(crate) fn reds_into(&self, out: &mut Vec<RedBox>) {
        out.push(self.at.root);
        if let Some((i, _)) = self.at.index {
            out.push(i);
        }
        out.push(self.value);
    }

    fn set_reds(&mut self, reds: &[RedBox], at: &mut usize) {
        self.at.root = reds[*at];
        *at += 1;
        if let Some((i, _)) = &mut self.at.index {
            *i = reds[*at];
            *at += 1;
        }
        self.value = reds[*at];
        *at += 1;
    }
}

impl<F: Frame> JitState<F> {
    /// A state with one frame.
    pub fn new(frame: F) -> JitState<F> {
        JitState::with_heap(frame, VHeap::default())
    }

    /// A state with no frame (what a state moved out of leaves behind).
    pub fn empty() -> JitState<F> {
        JitState {
            frames: vec![],
            heap: VHeap::default(),
            known: vec![],
            epoch: 0,
            lineage: Lineage::default(),
            below_entry: false,
            leaving: false,
            merged_at: 0,
            top_len: None,
        }
    }

    /// This state, continuing with `frame` on top.
    pub fn pushed(mut self, frame: F) -> JitState<F> {
        self.frames.push(frame);
        self
    }

    /// A state with one frame and the virtual objects it points to.
    pub fn with_heap(frame: F, heap: VHeap) -> JitState<F> {
        JitState { frames: vec![frame], heap, ..JitState::empty() }
    }

    /// Puts the heap in canonical order (see [`crate::compile::virtuals`]): pointers
    /// to forced objects become real, virtual objects are numbered by first
    /// reference from the frames, unreachable ones dropped.
    pub fn normalize(&mut self) {
        self.top_len = None;
        if self.heap.objects.is_empty() {
            // No object, so no pointer to a virtual one.
            return;
        }
        let heap = &self.heap;
        let mut map: Vec<Option<u32>> = vec![None; heap.objects.len()];
        let mut objects = vec![];
        for f in &mut self.frames {
            f.vptrs_mut(&mut |p| {
                *p = heap.resolve(p);
                if let VPtr::Virtual(i) = *p {
                    let n = *map[i as usize].get_or_insert_with(|| {
                        objects.push(heap.objects[i as usize].clone());
                        objects.len() as u32 - 1
                    });
                    *p = VPtr::Virtual(n);
                }
            });
        }
        // Virtualizable objects stay until written back, reachable or not.
        for (i, o) in heap.objects.iter().enumerate() {
            if map[i].is_none() && o.backing.is_some() && o.forced.is_none() {
                objects.push(o.clone());
            }
        }
        self.heap.objects = objects;
    }

    /// The innermost frame.
    pub fn top(&self) -> &F {
        self.frames.last().expect("a state has at least one frame")
    }

    /// The innermost frame, mutably.
    pub fn top_mut(&mut self) -> &mut F {
        self.frames.last_mut().expect("a state has at least one frame")
    }

    /// The key this state would have with every virtual object forced.
    pub fn forced_key(&self) -> StateKey<F::Key> {
        let view = KeyView { objects: true, ..KeyView::default() };
        (self.frames.iter().map(|f| f.key_as(view)).collect(), vec![])
    }

    /// Forces every virtual object the frames point to (in residual code
    /// recorded by `b`), leaving the state normalized with an empty heap.
    pub fn force_all(&mut self, b: &mut crate::ir::builder::ResidualBuilder) {
        let heap = &mut self.heap;
        for f in &mut self.frames {
            f.vptrs_mut(&mut |p| *p = VPtr::Real(heap.force(b, p)));
        }
        heap.write_back(b);
        // Written back through raw stores: what was known may be stale.
        self.forget_fields();
        self.normalize();
    }

    /// Forces every virtual list and dict of the frames (see
    /// [`Frame::lists_mut`]): a state too large to hand over in a frame
    /// of words keeps its lists in memory instead.
    pub fn force_lists(&mut self, b: &mut crate::ir::builder::ResidualBuilder) {
        for f in &mut self.frames {
            f.lists_mut(&mut |l| l.force(b));
        }
    }

    /// The key this state would have with its frames' virtual lists and
    /// dicts forced, or `None` when it has none; with it, which of the
    /// frames' other reds are constants, and their values (each turn of a
    /// loop counted by a red constant has other ones).
    pub fn lists_real_key(&self) -> Option<(StateKey<F::Key>, Vec<Option<u64>>)> {
        let view = KeyView { lists: true, ..KeyView::default() };
        let keys: Vec<F::Key> = self.frames.iter().map(|f| f.key_as(view)).collect();
        let own = self.key();
        if keys == own.0 {
            return None;
        }
        let mut reds = Vec::with_capacity(32);
        for f in &self.frames {
            f.reds_lists_real(&mut reds);
        }
        Some(((keys, own.1), reds.iter().map(RedBox::as_const).collect()))
    }

    /// How many elements the frames' virtual lists of values (an enum counts
    /// once, not per slot) and dicts hold, not their lists of structs: what
    /// a loop growing a list grows.
    pub fn frame_lists_len(&mut self) -> usize {
        let mut n = 0;
        for f in &mut self.frames {
            f.lists_mut(&mut |l| match l {
                ListMut::Scalars(VList::Virtual(items) | VList::Tail(_, items, ..), ..) => n += items.len(),
                ListMut::Flat(VList::Virtual(items) | VList::Tail(_, items, ..), w, _) => n += items.len() / w.max(1),
                ListMut::Dict(VDict::Virtual(entries), ..) => n += entries.len(),
                _ => {}
            });
        }
        n
    }

    /// Where a path is, for recursion: the hash of the frames' keys with
    /// their lists of structs (saved frames) taken as empty and real, the
    /// same with every other list and dict taken as real too (an operand
    /// stack shared by the calls grows with them), and how many virtual
    /// elements the lists of structs hold (how deep the language-level
    /// calls compiled inline are); `None` when they hold none.
    pub fn call_point(&mut self) -> Option<(u64, u64, usize)> {
        let depth = self.calls_inline();
        if depth == 0 {
            return None;
        }
        let (exact, point) = self.point_hashes();
        Some((exact, point, depth))
    }

    /// How many virtual elements the lists of structs (saved frames) hold:
    /// how deep the language-level calls compiled inline are.
    pub fn calls_inline(&mut self) -> usize {
        let mut depth = 0;
        for f in &mut self.frames {
            f.lists_mut(&mut |l| {
                if let ListMut::Ptrs(VPList::Virtual(items) | VPList::Over(_, items) | VPList::Spilled { items, .. }) =
                    l
                {
                    depth += items.len();
                }
            });
        }
        depth
    }

    /// The two hashes of [`JitState::call_point`], whatever the depth: at a
    /// root's entry, where the path is for a recursion met later.
    pub fn point_hashes(&self) -> (u64, u64) {
        use std::hash::BuildHasher;
        // The lists of objects with a backing (the interpreter's own, live
        // at its merge point: an operand stack in a struct) are the state's
        // too.
        let backed: Vec<u64> = self
            .heap
            .objects
            .iter()
            .filter(|o| o.backing.is_some() && o.forced.is_none())
            .flat_map(|o| o.lists.iter().map(VList::key_word))
            .collect();
        let view = KeyView { saved_frames: true, ..KeyView::default() };
        let keys: Vec<F::Key> = self.frames.iter().map(|f| f.key_as(view)).collect();
        let exact = rustc_hash::FxBuildHasher.hash_one((&keys, &backed, "calls"));
        let view = KeyView { lists: true, ..view };
        let keys: Vec<F::Key> = self.frames.iter().map(|f| f.key_as(view)).collect();
        (exact, rustc_hash::FxBuildHasher.hash_one((&keys, "calls, lists real")))
    }

    /// Spills the saved frames of a language-level recursion onto the
    /// continuation stack (see [`crate::compile::spill`]): the one list of
    /// structs with virtual elements loses them (all but the newest where
    /// the interpreter reads its frames in place: [`Frame::reads_saved_frames`]).
    /// False (nothing done) when there is not exactly one such list, another
    /// list is spilled already, or a frame is also named from elsewhere in
    /// the state.
    ///
    /// With `segmenting`, the tail of an operand stack the calls share is
    /// emptied: the part of it below the newest frame's base goes onto the
    /// continuation stack with the frame below (its [`Segment`]), hidden
    /// from the `Vec`, and the rest stays in the tail, when that base is
    /// known relative to the list's length before the tail; otherwise the
    /// tail moves into memory ([`JitState::force_backed_lists`]).
    ///
    /// [`Segment`]: crate::compile::spill::Segment
    pub fn spill_frames(&mut self, b: &mut ResidualBuilder, segmenting: bool) -> bool {
        let mut plan = if segmenting { self.segment_plan(b) } else { None };
        let segments: Vec<Vec<RedBox>> = match &plan {
            Some(p) => match &self.heap.objects[p.object].lists[p.list] {
                VList::Tail(_, items, ..) => (0..p.cuts.len())
                    .map(|i| items[p.cuts[i]..p.cuts.get(i + 1).copied().unwrap_or(p.above)].to_vec())
                    .collect(),
                _ => vec![],
            },
            None => vec![],
        };
        let clear_below = plan
            .as_ref()
            .is_some_and(|p| matches!(self.heap.objects[p.object].lists[p.list], VList::Tail(_, _, _, None)));
        let mut done = self.spill_frames_with(b, &segments, clear_below);
        if !done && plan.is_some() {
            // A frame that would take a segment is real: spilled without.
            plan = None;
            done = self.spill_frames_with(b, &[], false);
        }
        match plan {
            Some(p) if done => {
                let VList::Tail(addr, items, how, hidden) = &mut self.heap.objects[p.object].lists[p.list] else {
                    unreachable!("planned on a tail")
                };
                let (addr, how) = (*addr, how.0);
                let lower: Vec<RedBox> = items.drain(..p.above).take(p.cuts[0]).collect();
                *hidden = Some(p.base);
                // What is below the caller's frame goes into memory.
                if let Some(h) = (how.header)() {
                    for x in &lower {
                        self.vec_push(b, &addr, x, h, how.size, how.class, how.reserve);
                    }
                }
            }
            _ if segmenting => self.force_backed_lists(b),
            _ => {}
        }
        done
    }

    /// Where the tail of the one operand stack with a tail splits (see
    /// [`JitState::spill_frames`]).
    fn segment_plan(&mut self, b: &mut ResidualBuilder) -> Option<SegmentPlan> {
        if b.exec || !self.frames.iter().any(Frame::reads_saved_frames) {
            return None;
        }
        // The frames to be spilled, and the newest one, kept.
        let mut batch = vec![];
        for f in &mut self.frames {
            f.lists_mut(&mut |l| {
                if let ListMut::Ptrs(VPList::Virtual(items) | VPList::Over(_, items) | VPList::Spilled { items, .. }) =
                    l
                {
                    if items.len() >= 2 {
                        batch = items.clone();
                    }
                }
            });
        }
        let newest = batch.pop()?;
        let fields_of = |p: &VPtr| match self.heap.resolve(p) {
            VPtr::Virtual(i) => self.heap.objects[i as usize].fields.clone(),
            VPtr::Real(_) => vec![],
        };
        let fields = fields_of(&newest);
        let batch_fields: Vec<Vec<RedBox>> = batch.iter().map(fields_of).collect();
        let (o, l) = crate::compile::spill::backed_tail(&self.heap, |_| true)?;
        let list = self.heap.objects[o].lists[l].clone();
        let VList::Tail(_, items, _, hidden) = &list else { return None };
        let len = self.before_tail(b, &list)?;
        // Integer fields of a frame placed in the tail: offset and value.
        let placed = |fields: &[RedBox], most: usize| {
            let mut v: Vec<(usize, RedBox)> = fields
                .iter()
                .filter(|f| f.ty() == len.ty() && !f.is_const())
                .filter_map(|f| Some((usize::try_from(b.difference(&len, f)?).ok()?, *f)))
                .filter(|(k, _)| *k <= most)
                .collect();
            v.sort_by_key(|(k, _)| *k);
            v
        };
        let &(above, base) = placed(&fields, items.len()).iter().find(|(k, _)| *k > 0)?;
        // Each frame's part begins at its lowest field placed in the tail
        // (its base), or where the part of the frame below it does.
        let mut cuts = Vec::with_capacity(batch.len());
        for f in &batch_fields {
            let at = cuts.last().copied().unwrap_or(0);
            cuts.push(placed(f, above).first().map_or(at, |(k, _)| *k).max(at));
        }
        if hidden.is_some() {
            cuts[0] = 0;
        }
        Some(SegmentPlan { object: o, list: l, cuts, above, base })
    }

    /// [`JitState::spill_frames`] with given segments (one per frame
    /// spilled, or none).
    fn spill_frames_with(&mut self, b: &mut ResidualBuilder, segments: &[Vec<RedBox>], clear_below: bool) -> bool {
        let counted = self.frames.iter().any(Frame::reads_saved_frames);
        let mut refs: std::collections::HashMap<u32, usize> = Default::default();
        let (mut candidates, mut spilled) = (0, 0);
        for f in &mut self.frames {
            f.vptrs_mut(&mut |p| {
                if let VPtr::Virtual(i) = p {
                    *refs.entry(*i).or_default() += 1;
                }
            });
            f.lists_mut(&mut |l| {
                if let ListMut::Ptrs(l) = l {
                    match l {
                        VPList::Spilled { items, .. } => {
                            spilled += 1;
                            candidates += !items.is_empty() as usize;
                        }
                        VPList::Virtual(items) | VPList::Over(_, items) => candidates += !items.is_empty() as usize,
                        VPList::Real(_) => {}
                    }
                }
            });
        }
        if candidates != 1 || spilled > 1 {
            return false;
        }
        let heap = &self.heap;
        let mut done = false;
        for f in &mut self.frames {
            f.lists_mut(&mut |l| {
                let ListMut::Ptrs(l) = l else { return };
                let mut items = vec![];
                l.vptrs_mut(&mut |p| items.push(*p));
                if items.is_empty() || done {
                    return;
                }
                let shared =
                    items.iter().any(|p| matches!(p, VPtr::Virtual(i) if refs.get(i).copied().unwrap_or(0) > 1));
                if !shared && (spilled == 0 || matches!(l, VPList::Spilled { .. })) {
                    done = crate::compile::spill::spill_list(l, b, heap, counted, segments, clear_below);
                }
            });
        }
        done
    }

    /// Resumes a pop of a spilled list with no virtual element left (the
    /// innermost frame that has one): `Some(id)` makes the top entry of the
    /// continuation stack, of template `id`, its virtual element again (and
    /// its segment the operand stack's); `None` makes the list what it was
    /// before any spill. `None` back when no frame has such a list or the
    /// template is unknown; else the words to relate
    /// ([`JitState::relate_unspilled`]).
    pub fn unspill(&mut self, b: &mut ResidualBuilder, id: Option<u64>) -> Option<Vec<(RedBox, i64)>> {
        self.top_len = None;
        // The innermost frame's list (a pop of frames), or an outer one's
        // (a pop of an operand stack whose hidden part is needed).
        // Else the one spilled list, whose frames are virtual down to the
        // one that is not (an index into an operand stack's hidden part:
        // `JitState::reads_hidden`).
        let innermost = (0..self.frames.len()).rev().find(|&i| pops_spilled(&mut self.frames[i]));
        let below_virtual = innermost.is_none();
        let at = match innermost {
            Some(at) => at,
            None => (0..self.frames.len()).rev().find(|&i| has_spilled(&mut self.frames[i]))?,
        };
        let f = &mut self.frames[at];
        let heap = &mut self.heap;
        let mut done = None;
        f.lists_mut(&mut |l| {
            let ListMut::Ptrs(l) = l else { return };
            if done.is_some() || !(l.pops_spilled() || below_virtual && matches!(l, VPList::Spilled { .. })) {
                return;
            }
            done = match id {
                Some(id) => crate::compile::spill::unspill_top(l, b, heap, id),
                None => {
                    if let VPList::Spilled { below, items, .. } = l {
                        let items = std::mem::take(items);
                        *l = match *below {
                            Some(a) => VPList::Over(a, items),
                            None => VPList::Virtual(items),
                        };
                    }
                    // No entry of this call is left: nothing of an operand
                    // stack is hidden, its `Vec` holds what is before its tail.
                    let mut u = crate::compile::spill::Unspilled::default();
                    for o in &mut heap.objects {
                        for l in &mut o.lists {
                            if let VList::Tail(p, _, how, hidden @ Some(_)) = l {
                                u.visible = hidden.take().map(|m| (*p, how.0, m));
                            }
                        }
                    }
                    Some(u)
                }
            };
        });
        let u = done?;
        // The `Vec`'s length is then that of the list before its tail.
        if let (Some((p, how, len)), false) = (u.visible, b.exec) {
            if let Some(h) = (how.header)() {
                self.sync_facts(b);
                let at = b.sym_addr(&p).plus(h.len as i64);
                self.known.retain(|f| !f.overlaps(&at, VEC_HEADER, h.len, ValTy::U64));
                self.know(Fact { at, ty: ValTy::U64, class: VEC_HEADER, field: h.len, value: len, min: 0 });
            }
        }
        Some(u.related)
    }

    /// Whether list `k` of the virtual object `p` has a hidden part and an
    /// empty tail: a pop would need the part hidden on the continuation
    /// stack (see [`crate::compile::spill::Segment`]).
    pub fn pops_hidden(&self, p: &VPtr, k: usize) -> bool {
        matches!(self.heap.list(p, k), Some(VList::Tail(_, items, _, Some(_))) if items.is_empty())
    }

    /// Whether element `index` of list `k` of the virtual object `p` lies
    /// in the list's hidden part (see [`crate::compile::spill::Segment`]):
    /// placed below the length before its tail; for an index not known yet,
    /// whether the tail is empty (any element is then below it). The frame on top of the
    /// continuation stack is then popped first, where
    /// [`JitState::unspills_for_index`] allows it, its segment back in the
    /// tail, so that the element is read or written there instead of moving
    /// the hidden part into memory (a procedure reading its arguments below
    /// its frame's base).
    pub fn reads_hidden(&self, b: &ResidualBuilder, p: &VPtr, k: usize, index: Option<&RedBox>) -> bool {
        let Some(VList::Tail(_, items, _, Some(m))) = self.heap.live(p).map(|o| &o.lists[k]) else { return false };
        match index {
            Some(i) => b.difference(m, i).is_some_and(|c| c < 0),
            None => items.is_empty(),
        }
    }

    /// [`JitState::reads_hidden`] for the index `base + step`, before it is
    /// computed: whether it names an element of the hidden part of list `k`
    /// of `p`. The step is a constant (green); a run-time one says no.
    pub fn reads_hidden_step(&self, b: &ResidualBuilder, p: &VPtr, k: usize, base: &RedBox, step: &RedBox) -> bool {
        let Some(VList::Tail(_, _, _, Some(m))) = self.heap.live(p).map(|o| &o.lists[k]) else { return false };
        let Some(s) = step.as_const() else { return false };
        b.difference(m, base).is_some_and(|c| c.wrapping_add(s as i64) < 0)
    }

    /// Whether a frame's list is spilled with fewer than
    /// [`MAX_VIRTUAL_PTRS`] virtual frames, so that [`JitState::unspill`]
    /// may make one more virtual for an index into a hidden part.
    pub fn unspills_for_index(&mut self) -> bool {
        let mut room = false;
        for f in &mut self.frames {
            f.lists_mut(&mut |l| {
                room |= matches!(l, ListMut::Ptrs(VPList::Spilled { items, .. }) if items.len() < MAX_VIRTUAL_PTRS)
            });
        }
        room
    }

    /// Whether a frame has a spilled list with no virtual element left (see
    /// [`JitState::unspill`]).
    pub fn any_pops_spilled(&mut self) -> bool {
        self.frames.iter_mut().any(pops_spilled)
    }

    /// Where words a pop took from the continuation stack were expected to
    /// be the operand stack's length in memory plus a constant (see
    /// [`crate::compile::spill::unspill_top`]): the condition that they
    /// are, and each word replaced by that sum in this state, which holds
    /// where the condition does. `None` (nothing done) when there is no
    /// such word, or no single operand stack with a part in memory.
    pub fn relate_unspilled(&mut self, b: &mut ResidualBuilder, rel: &[(RedBox, i64)]) -> Option<RedBox> {
        let rel: Vec<_> = rel.iter().filter(|(w, _)| !w.is_const()).collect();
        if rel.is_empty() || b.exec {
            return None;
        }
        let (o, l) = crate::compile::spill::backed_tail(&self.heap, |_| true)?;
        let VList::Tail(p, _, how, hidden) = self.heap.objects[o].lists[l].clone() else { return None };
        let len = match hidden {
            Some(m) => m,
            None => {
                let h = (how.0.header)()?;
                self.vec_len(b, &p, (h.ptr, h.len))
            }
        };
        let mut cond: Option<RedBox> = None;
        let mut map = vec![];
        for (w, e) in rel.into_iter().filter(|(w, _)| w.ty() == len.ty()) {
            let sum = b.red_bin(BinOp::Add, Overflow::Wrap, &len, &RedBox::constant(w.ty(), w.ty().canon(*e as u64)));
            let same = b.red_cmp(CmpOp::Eq, w, &sum);
            cond = Some(match cond {
                None => same,
                Some(c) => b.red_bin(BinOp::And, Overflow::Wrap, &c, &same),
            });
            map.push((*w, sum));
        }
        let cond = cond?;
        let reds: Vec<RedBox> =
            self.reds().into_iter().map(|r| map.iter().find(|(w, _)| *w == r).map_or(r, |(_, s)| *s)).collect();
        self.set_reds(&reds);
        Some(cond)
    }

    /// Undoes every spill still on the continuation stack, in execute mode,
    /// before the state is handed over to the interpreter (see
    /// [`crate::compile::spill::unspill_all`]); false if one could not be.
    pub fn unspill_all(&mut self, b: &mut ResidualBuilder) -> bool {
        let heap = &mut self.heap;
        let mut ok = true;
        for f in &mut self.frames {
            f.lists_mut(&mut |l| {
                if let ListMut::Ptrs(l) = l {
                    ok &= crate::compile::spill::unspill_all(l, b, heap);
                }
            });
        }
        ok
    }

    /// Moves the lists of objects with a backing (the interpreter's own,
    /// live at its merge point: an operand stack the interpreted program's
    /// calls share) into memory at a language-level recursion, where they
    /// stay: a virtual one into the backing's `Vec` (a call), a tail into
    /// its `Vec` in place (stores). A list of integers whose `Vec` layout is
    /// known keeps a tail from then on ([`VList::Tail`]): what the callee
    /// pushes and pops stays in registers. Virtual lists stay virtual
    /// (`VHeap::force_backed_lists` moves them).
    pub fn force_backed_lists(&mut self, b: &mut ResidualBuilder) {
        for i in 0..self.heap.objects.len() {
            let o = &self.heap.objects[i];
            let (Some(_), None) = (o.backing, o.forced) else { continue };
            let desc = o.desc;
            for (k, d) in desc.lists.iter().enumerate() {
                let Some(how) = d.in_place else { continue };
                let Some(h) = (how.header)() else { continue };
                let (addr, items) = match &mut self.heap.objects[i].lists[k] {
                    VList::Real(p) => (*p, vec![]),
                    l @ VList::Tail(_, _, _, Some(_)) => {
                        let p = l.flush_tail(b).expect("a tail");
                        self.sync_facts(b);
                        (p, vec![])
                    }
                    VList::Tail(p, items, ..) => (*p, items.clone()),
                    VList::Virtual(_) => continue,
                };
                for x in &items {
                    self.vec_push(b, &addr, x, h, how.size, how.class, how.reserve);
                }
                self.heap.objects[i].lists[k] = VList::Tail(addr, vec![], InPlaceRef(how), None);
            }
        }
    }

    /// Marks the hidden length of each list with a tail, and the known
    /// length and capacity of each `Vec` read in place, as lengths (see
    /// [`ResidualBuilder::know_length`]): a state rebuilt from run-time
    /// values (a piece's inputs, a merge point's parameters) holds new
    /// values for them, each a length wherever it came from. (A `Vec` read
    /// in place has elements of a nonzero size, [`crate::run::heap::vec_header`],
    /// and its buffer is in the address space: below 2^62 of them.)
    pub fn know_lengths(&self, b: &mut ResidualBuilder) {
        for f in &self.known {
            if f.class == VEC_HEADER && f.ty == ValTy::U64 {
                b.know_length(&f.value);
            }
        }
        for o in &self.heap.objects {
            for l in &o.lists {
                if let VList::Tail(_, _, _, Some(h)) = l {
                    b.know_length(h);
                }
            }
        }
    }

    /// Makes every list with a tail a real one ([`VList::untail`]): the
    /// state is handed over to the interpreter, which knows only `Vec`s.
    pub fn untail_lists(&mut self, b: &mut ResidualBuilder) {
        for o in &mut self.heap.objects {
            for l in &mut o.lists {
                l.untail(b);
            }
        }
        for f in &mut self.frames {
            f.lists_mut(&mut |l| {
                if let ListMut::Scalars(l, ..) | ListMut::Flat(l, ..) = l {
                    l.untail(b);
                }
            });
        }
    }

    /// The length of a list with a tail before its tail: that of its part
    /// hidden on the continuation stack, else its `Vec`'s.
    fn before_tail(&mut self, b: &mut ResidualBuilder, l: &VList) -> Option<RedBox> {
        let VList::Tail(p, _, how, hidden) = l else { return None };
        let len = match hidden {
            Some(m) => *m,
            None => {
                let h = (how.0.header)()?;
                self.vec_len(b, p, (h.ptr, h.len))
            }
        };
        b.know_length(&len);
        Some(len)
    }

    /// `len()` of a list with a tail: the length before it plus the tail's
    /// (see [`ResidualBuilder::red_length_plus`]). `None` for other lists.
    pub fn tail_len(&mut self, b: &mut ResidualBuilder, l: &VList) -> Option<RedBox> {
        let VList::Tail(_, items, ..) = l else { return None };
        let len = self.before_tail(b, l)?;
        Some(if items.is_empty() { len } else { b.red_length_plus(&len, items.len() as u64) })
    }

    /// Element `index` of a list with a nonempty tail, without moving the
    /// tail into memory: the tail's element where the index is the `Vec`'s
    /// length plus a constant below the tail's length; the `Vec`'s where it
    /// is that length minus a constant; otherwise (a tail of at most
    /// [`MAX_SELECTED`] elements) the one or the other, chosen at run time
    /// without a branch. Bounds are checked against the whole length.
    /// `None` where the caller's way is needed (it moves the tail first).
    pub fn tail_get(&mut self, b: &mut ResidualBuilder, l: &VList, index: &RedBox) -> Option<RedBox> {
        let VList::Tail(p, items, how, hidden) = l else { return None };
        let (how, k) = (how.0, items.len());
        if k == 0 {
            return None;
        }
        let h = (how.header)()?;
        let len = self.before_tail(b, l)?;
        let c = b.difference(&len, index);
        match c {
            Some(c) if (0..k as i64).contains(&c) => return Some(items[c as usize]),
            Some(c) if c >= 0 => return None,
            None if k > MAX_SELECTED => return None,
            // The `Vec` holds only part of what is before the tail.
            _ if hidden.is_some() => return None,
            _ => {}
        }
        let total = b.red_length_plus(&len, k as u64);
        self.bounds_check(b, index, &total);
        let buf = self.vec_buf(b, p, (h.ptr, h.len));
        let at = b.red_index_addr(&buf, index, how.size);
        if c.is_some() {
            return Some(self.load_field(b, how.ty, &at, 0, how.class, 0));
        }
        // The element in memory (or the runtime's word), then each of the
        // tail's where the index names it.
        let inside = b.red_cmp(CmpOp::Lt, index, &len);
        let one = b.red_cast(&inside, ValTy::U64);
        let safe = or_safe(b, &at, &one);
        let mut v = b.red_load(how.ty, &safe, 0);
        for (j, x) in items.iter().enumerate() {
            let at_j = if j == 0 { len } else { b.red_length_plus(&len, j as u64) };
            let here = b.red_cmp(CmpOp::Eq, index, &at_j);
            let m = b.red_cast(&here, how.ty);
            let dx = b.red_bin(BinOp::Sub, Overflow::Wrap, x, &v);
            let dx = b.red_bin(BinOp::Mul, Overflow::Wrap, &dx, &m);
            v = b.red_bin(BinOp::Add, Overflow::Wrap, &v, &dx);
        }
        Some(v)
    }

    /// Writes element `index` of a list with a nonempty tail where the
    /// index is placed as [`JitState::tail_get`] places it (no choice at
    /// run time); false (nothing done) otherwise.
    pub fn tail_set(&mut self, b: &mut ResidualBuilder, l: &mut VList, index: &RedBox, x: &RedBox) -> bool {
        let Some(len) = self.before_tail(b, l) else { return false };
        let VList::Tail(p, items, how, hidden) = l else { return false };
        let (how, k) = (how.0, items.len());
        let Some(h) = (how.header)() else { return false };
        if k == 0 {
            return false;
        }
        match b.difference(&len, index) {
            Some(c) if (0..k as i64).contains(&c) => {
                items[c as usize] = *x;
                true
            }
            Some(c) if c < 0 && hidden.is_none() => {
                let total = b.red_length_plus(&len, k as u64);
                self.bounds_check(b, index, &total);
                let buf = self.vec_buf(b, p, (h.ptr, h.len));
                let at = b.red_index_addr(&buf, index, how.size);
                self.store_field(b, &at, 0, x, how.class, 0);
                true
            }
            _ => false,
        }
    }

    /// Whether the path hands over to the interpreter at its next
    /// flexswitch or merge point: it returned below the entry
    /// ([`JitState::below_entry`]), and the interpreter does not read its
    /// saved frames in place. One that does (its calls share one operand
    /// stack, in memory once a recursion compiled) goes on in compiled
    /// code, the caller's frame read from memory: handing over there made
    /// code entered inside a recursion cover only what was left of one
    /// call, the rest interpreted.
    pub fn hands_over(&self) -> bool {
        self.leaving || self.below_entry && !self.frames.iter().any(Frame::reads_saved_frames)
    }

    /// Forgets every known field (a call that is not inlined may write any).
    pub fn forget_fields(&mut self) {
        self.known.clear();
        self.top_len = None;
    }

    /// Forgets the known fields whose values are run-time values, keeping
    /// those known as constants (what promotions made known).
    pub fn forget_run_time_fields(&mut self) {
        self.known.retain(|f| f.value.as_const().is_some());
    }

    /// Whether a known field holds a run-time value.
    pub fn knows_run_time_fields(&self) -> bool {
        self.known.iter().any(|f| f.value.as_const().is_none())
    }

    /// `len()` of a list of structs whose objects may be virtual, without
    /// moving its virtual elements into memory: a constant for a virtual
    /// list; else the length of its part in memory (and of its entries on
    /// the continuation stack) plus its virtual elements, remembered so
    /// that an index computed from it finds them
    /// ([`JitState::frames_elem`]). `None` when the `Vec` layout is needed
    /// and not known, or for a spilled list that does not count its
    /// entries ([`Frame::reads_saved_frames`]).
    pub fn frames_len(&mut self, l: &VPList, b: &mut ResidualBuilder, layout: Option<(i32, i32)>) -> Option<RedBox> {
        let (below, items) = match l {
            VPList::Virtual(items) => return Some(RedBox::u64(items.len() as u64)),
            VPList::Real(a) => return Some(b.red_vec_len(a, layout?)),
            VPList::Over(a, items) => (b.red_vec_len(a, layout?), items),
            VPList::Spilled { counted: false, .. } => return None,
            VPList::Spilled { below, counted: true, items } => {
                let n = crate::compile::spill::entries(b);
                let m = match below {
                    Some(a) => {
                        let len = self.vec_len(b, a, layout?);
                        b.red_bin(BinOp::Add, Overflow::Wrap, &len, &n)
                    }
                    None => n,
                };
                (m, items)
            }
        };
        if items.is_empty() {
            return Some(below);
        }
        self.top_len = Some(Box::new((below, items.clone())));
        Some(b.red_length_plus(&below, items.len() as u64))
    }

    /// The element at `index` of a list of structs, when `index` names one
    /// of its virtual elements over a part in memory or on the continuation
    /// stack: computed from the length [`JitState::frames_len`] gave, with
    /// those elements still there.
    pub fn frames_elem(&self, l: &VPList, b: &ResidualBuilder, index: &RedBox) -> Option<VPtr> {
        let (VPList::Over(_, items) | VPList::Spilled { items, .. }) = l else { return None };
        let (below, then) = &**self.top_len.as_ref()?;
        let n = items.len().min(then.len());
        if items[..n] != then[..n] {
            return None;
        }
        let j = b.difference(below, index)?;
        usize::try_from(j).ok().and_then(|j| items.get(j)).copied()
    }

    /// The alias classes, types, offsets and lower bounds of the known
    /// fields, in order: states whose reds are laid out alike but know other
    /// fields, or other bounds, differ here. (Code compiled knowing that a
    /// `Vec` is not empty pops it unchecked: a case compiled for one arrival
    /// must not serve one where it may be empty.)
    pub fn facts_key(&self) -> Vec<(u32, i32, ValTy, Option<u64>, i64, u64)> {
        self.known.iter().map(|f| (f.class, f.field, f.ty, f.at.index.map(|(_, s)| s), f.at.offset, f.min)).collect()
    }

    /// The merge key of the whole chain (of a normalized state).
    pub fn key(&self) -> StateKey<F::Key> {
        let mut heap = vec![];
        for o in &self.heap.objects {
            // Descriptors are aligned: the low bit says "has a backing".
            heap.push(o.desc as *const _ as usize | o.backing.is_some() as usize);
            heap.extend(o.lists.iter().map(|l| l.key_word() as usize));
        }
        (self.frames.iter().map(Frame::key).collect(), heap)
    }

    /// Every red box of the chain, outermost frame first, then the fields of
    /// the virtual objects (of a normalized state).
    pub fn reds(&self) -> Vec<RedBox> {
        let mut r = self.core_reds();
        for f in &self.known {
            f.reds_into(&mut r);
        }
        r
    }

    /// Puts the known facts in an order that depends only on what they
    /// say: by where the red their address starts from first appears
    /// among the frames' and objects' reds, then by offset, index, class,
    /// field and type. Paths that learned the same facts in another order
    /// (the stack's buffer read before the frames' on one, after on the
    /// other) then leave switches whose cases have one key and one layout
    /// of live values, and share one case.
    pub fn order_facts(&mut self) {
        if self.known.len() < 2 {
            return;
        }
        let firsts = self.core_reds();
        let place = |r: &RedBox| match r {
            RedBox::Var { .. } => (0, firsts.iter().position(|x| x == r).map_or(u64::MAX, |i| i as u64)),
            RedBox::Const { bits, .. } => (1, *bits),
        };
        self.known.sort_by_cached_key(|f| {
            (
                place(&f.at.root),
                f.at.offset,
                f.at.index.map(|(i, stride)| (place(&i), stride)),
                f.class,
                f.field,
                f.ty.bits(),
                f.ty.is_int(),
            )
        });
    }

    /// Forgets what the state knows of list elements at run-time indices
    /// (an operand stack's cells loaded or stored) where a frame holds a
    /// spilled list of saved frames, a compiled recursion: there those
    /// cells are the words of frames at some depth, different on each path
    /// to a switch, and a case's state that keeps them is one of its own
    /// (see `schedule::resume`). Whether it forgot any.
    pub fn forget_elements_in_recursion(&mut self) -> bool {
        if !self.known.iter().any(|f| f.at.index.is_some()) || !self.frames.iter_mut().any(|f| has_spilled(f)) {
            return false;
        }
        self.known.retain(|f| f.at.index.is_none());
        true
    }

    /// The reds of the frames and virtual objects only: [`JitState::reds`]
    /// without the known fields'.
    pub fn core_reds(&self) -> Vec<RedBox> {
        let mut r: Vec<RedBox> = Vec::with_capacity(32);
        for f in &self.frames {
            f.reds_into(&mut r);
        }
        for o in &self.heap.objects {
            r.extend_from_slice(&o.fields);
            r.extend(o.backing);
            for l in &o.lists {
                l.reds_into(&mut r);
            }
        }
        r
    }

    /// Replaces every red box, in the order of [`JitState::reds`].
    pub fn set_reds(&mut self, reds: &[RedBox]) {
        let mut at = 0;
        for f in &mut self.frames {
            at += f.set_reds_counted(&reds[at..]);
        }
        for o in &mut self.heap.objects {
            let n = o.fields.len();
            o.fields.copy_from_slice(&reds[at..at + n]);
            at += n;
            if let Some(p) = &mut o.backing {
                *p = reds[at];
                at += 1;
            }
            for l in &mut o.lists {
                l.set_reds(reds, &mut at);
            }
        }
        for f in &mut self.known {
            f.set_reds(reds, &mut at);
        }
    }
}

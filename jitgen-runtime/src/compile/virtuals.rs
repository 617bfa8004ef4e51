//! Virtual structures: objects the interpreter allocates while being
//! compiled, kept as red boxes in the compile-time state instead of memory.
//!
//! A struct literal or `Box::new` of a module struct makes a [`VObject`] in
//! the state's heap and a [`VPtr::Virtual`] naming it; references to it
//! (`&obj`, `&mut obj`, the box) are the same `VPtr`, so aliasing is exact
//! within a state. Field reads and writes on it emit nothing. It is
//! *forced* (allocated in residual code by its type's constructor, in the
//! arena of objects residual code makes, its fields stored) when it
//! escapes: its address is needed by code that is not inlined, or a
//! reference to it meets residual memory. From then on the object is a real
//! one and every `VPtr` naming it reads and writes memory.
//!
//! An object's fields may include lists ([`VList`], of scalars or of
//! flattened enums): forcing a new object allocates it with empty lists and
//! stores them. A `Vec` of such structs (an interpreter's saved frames) is a
//! [`VPList`], a virtual list of pointers, at most [`MAX_VIRTUAL_PTRS`] long.
//!
//! *Virtualizable* objects (structs marked `#[virtualizable]`, the
//! interpreter's frame) are virtual objects with a *backing*: the address of
//! the real object they were loaded from at a portal's entry. Forcing one writes its fields back into the
//! backing object (stores, and [`crate::run::heap::vec_store`] /
//! [`crate::run::heap::vec_move`] for lists) and makes it real again; every
//! return of residual code writes them back ([`VHeap::write_back`]). A
//! return whose result is a `Vec` moved out of one makes the result complete
//! in memory first and leaves that field alone: the field's copy of the list
//! is the dead one, and storing its tail again would repeat its elements
//! ([`VHeap::write_back_returning`]).
//! Residual code may keep them in registers in between because the
//! interpreter gave it a `&mut` to the frame: nothing else can read the
//! frame while residual code runs, except what residual code itself calls,
//! and an object escaping into such a call is forced first.
//!
//! Invariant: a state's heap is in canonical order whenever its key or reds
//! are taken (`JitState::normalize`): objects numbered by
//! first reference from the frames, outermost first, unreachable and forced
//! objects gone. So two states with equal keys have heaps of the same shape,
//! and their reds line up.
//!
//! ## Virtual containers in detail
//!
//! **Virtual containers** (`vlist.rs`, `virtuals.rs`). A red local `Vec` of scalars is
//! a `VList`: virtual (its elements' red boxes) or real (the `Vec`'s address). `Vec::new`,
//! `vec![a, b]` and `vec![x; n]` with a compile-time `n` (at most `MAX_VIRTUAL_LEN` = 64
//! elements) make virtual lists; push, pop, `len`, and reads and writes at compile-time
//! indices emit nothing. A virtual list is forced (allocated by `vec_new_repeat` in the
//! arena, its elements stored) when its address is needed: a run-time index, a reference
//! taken, a call that is not inlined. Its length is part of its frame's key. A portal's
//! own `Vec` locals live at the merge point are *virtualized at entry*: the hook puts
//! their length into the position key, and the compiled entry loads their elements once
//! into registers (TLR's registers: no loads or stores in the square loop); after a
//! hand-over the portal gets back a `Vec` rebuilt from the registers.
//! A red value whose type is a module struct with scalar fields (by value, boxed, or
//! behind a reference) is a `VPtr`: real (an address) or virtual (an index into the
//! state's `VHeap`). Struct literals and `Box::new` make virtual objects; every
//! reference to one is the same `VPtr`, so aliasing is exact within a state (an inlined
//! `fn bump(o: &mut Obj)` writes the caller's object). Field reads and writes of a
//! virtual object emit nothing. It is forced (its type's generated constructor called
//! in residual code, the object placed in the arena) when its address is needed: a call
//! that is not inlined, a pointer conversion. At a merge point, a state whose virtual
//! objects would match code already compiled for the same state with them real is
//! forced there and jumps to it (`CompileStats::forced_at_merges`). States are
//! normalized before their key is taken: objects numbered by first reference from the
//! frames, forced and unreachable ones dropped, so equal keys mean heaps of one shape.
//! A red local `Vec` of a plain enum (an operand stack of values) is a `VList` of
//! flattened elements (`Repr::VEList`): push, pop, `len` and constant indices work on
//! each element's slots. A real one (an object's field, a list forced at a run-time
//! index or when its address is needed) is worked on through the runtime's helpers
//! for `Vec`s of flattened elements (`heap::flat_vec_*`, generic over the trait
//! `heap::Flat` that the macro implements on a marker type `__F_T` per plain enum),
//! or in place: Rust does not specify an enum's layout, so `heap::enum_layout`
//! measures it once per type at run time (the one offset where an unsigned integer
//! reads as the variant's index, and for each payload slot the one offset where it
//! reads as its word, over samples of every variant written over different fills),
//! and only when every sample agrees do reads load the tag and all slots, and writes
//! of a known variant store its tag and its slots. An enum whose tag hides in a
//! payload's niche gets no layout and keeps the calls (`jitgen-runtime/tests/enum_layout.rs`). A portal's own
//! list of enums is read at entry through `flat_vec_get` and handed back rebuilt
//! (`__unflat_*`).
//! Module structs whose fields are scalars or lists (of scalars or of plain enums)
//! are virtual structures too (a TLC call frame `{ stack, args, ret }`, an instance
//! `{ class, fields }`): their virtual objects keep the lists as `VList`s, and forcing
//! one allocates it with empty lists (`__valloc_S`) and stores them (`vec_store` /
//! `flat_vec_store`, or `vec_move` of a real list). A list field read from an owned
//! struct (`caller.stack` of a popped frame) moves the list out: the temporary is the
//! object's list itself, never forced. A red `Vec` of such structs (the interpreter's
//! saved frames) is a `VPList` (`Repr::VOList`): a virtual list of `VPtr`s, its length
//! and which elements are virtual in the key, at most `MAX_VIRTUAL_PTRS` = 4 long.
//! Its `pop` gives an `Option` of the struct as a tag and a `VPtr` (`Repr::VOpt`). A
//! real one is worked on in memory: elements by address (`vec_layout`), push and pop
//! moving objects through the arena (`vec_push_moved`, `vec_pop_moved`), or by their
//! field words for structs of scalars (`__vpush_S`, `__vpop_S`: popped objects stay
//! virtual). A portal's `Vec` of frames enters compiled code virtual and empty where
//! it is empty (its lengths then known while compiling), and otherwise as its real
//! `Vec` whatever its length (the position key says only which): calls compiled code
//! makes push their frames *over* it (`VPList::Over`: the real `Vec` and virtual
//! frames on top), so they stay virtual and their returns pop them at compile time;
//! past `MAX_VIRTUAL_PTRS` the bottom ones move into memory (`VPList::flush`), as
//! they do where their address or a run-time index is needed. A pop with no virtual
//! frame left pops from memory: the path returned below the depth at which compiled
//! code was entered (`Popped::BelowEntry`, `JitState::below_entry`), and it hands over
//! to the interpreter at its next flexswitch or merge point, so that the caller's loop
//! runs in code compiled for it, whose lists are in registers, not in code that got
//! them from memory. Positions with saved frames wait four times the threshold
//! (`PortalSite::nested`), so that a loop calling a function compiles with the call
//! inside before the function compiles alone. Other real lists of structs (a field
//! read through a pointer, a `&mut Vec`) are worked on in memory. A language-level
//! recursion (a path back at the same position with more saved frames virtual,
//! through a run-time branch: `JitState::call_point`) spills them onto the
//! continuation stack (`VPList::Spilled`, see `compile::spill`) and runs the
//! function's code again. An interpreter that reads its frames in place (`len` and
//! `last()` find virtual frames by how the index was computed, `JitState::frames_len`)
//! keeps its current frame virtual, and a spilled list's length counts the stack's
//! entries; lists that grew with the recursion (an operand stack the calls share, in
//! the interpreter's own struct) are forced into their own `Vec`s first
//! (`VHeap::force_backed_lists`). Where frames cannot be spilled (one shared), it
//! declines a portal's compilation, and from then on the module's portals refuse
//! entries with saved frames (`Stats::saw_recursion`). A
//! hand-over inside an inlined call parks with the saved frames, spilled ones
//! included, rebuilt from the state (`__unpark_S`). So TLC's SEND/CALL/RETURN
//! compile into the caller's loop: the callee's frame, operand stack and arguments stay
//! virtual, and only the instance's fields are memory.
//! A red local `HashMap` of scalars is a `VDict` (`vdict.rs`): virtual while every key
//! used is a compile-time constant (entries sorted by key, the keys in the frame's key,
//! the values reds; `insert`, `get(&k).copied()`, `remove`, `contains_key` and `len` emit
//! nothing), forced into Rust's own `HashMap` (in the arena) at a key known only at run
//! time. Fields of *real* objects are remembered on a path (`JitState::known`, a list of
//! `state::Fact`s, at most `MAX_FACTS`): a struct field or a `Vec`'s buffer and length,
//! loaded or stored, is not loaded again. A fact is found by how its address was
//! computed (`builder::SymAddr`: root value + index × stride + offset, the index seen
//! through widening casts), not by the residual value that computed it, so
//! `heap.objects[o].class` computed twice is one fact. Facts are reds of the state: they
//! cross flexswitches (a promotion makes them constants, also through a widening
//! cast: a `u32` field promoted as `usize`) and merge points (a version lists the facts
//! it knows, by where their roots and values are in the state; a state is covered only
//! if it knows them too, extra facts are dropped; a widened version keeps the facts
//! both know, the fully general one none). Copies of one run-time value stay one label
//! parameter at a merge (`Shape::Same`), so a fact about one copy holds for the others.
//! With both, TLC's accumulator promotes its object's class once per loop entry
//! instead of three times per turn. Bounds checks are facts too (class
//! `BOUNDS_CHECKED`: `index < len` held for these values; no store forgets them), so an
//! index checked once is not checked again on the path; so are comparisons a branch took
//! true (class `ORDERED`: `m + j < m + k` held, so nothing from `m + j` to `m + k` wraps),
//! so that the bounds tests of indices near one checked fold. So are the tag and slots of
//! elements of `Vec`s of enums (a class per element type, even; a call forgets them,
//! as it may write through the runtime's helpers): the accumulator's attribute value
//! stays in a register through its loop. A merge point whose only version knows fewer
//! facts than an arriving state gets a second, exact version (a loop first reached in
//! mid-turn, as in a flexswitch's case, closes on the facts a full turn knows).
//! Green data read at an index that is red but constant while compiling (TLC's
//! `attr_index` loop counter, red because the attribute name is) is read while
//! compiling, like any green read: it is frozen and part of the portal's content check.
//! Architecture Invariant: a store forgets every fact of its alias class (the struct
//! type, the element type, or `VEC_HEADER`) whose bytes it overlaps, whatever the address: two addresses
//! computed differently may be equal (`objs[i]`, `objs[j]`). Facts of another class stay
//! (Rust never writes a place of one type as another). A call forgets the `Vec` facts
//! (it may push), a call that is not inlined or a write-back of virtual objects all.
//! A store of the very value a field is known to hold (same address, class and red box)
//! is left out: the accumulator's loop stored its attribute's unchanged tag every turn.
//! Errors as values: enums (`Result`, `Option`, the module's own) are flattened into
//! red boxes, never allocated, so an `Err` payload is built only where residual code
//! returns it.
//!
//! ## Virtualizable frames
//!
//! **Virtualizable frames** (`virtuals.rs`). A portal's live `&mut S` where `S` is
//! `#[virtualizable]` (scalar and `Vec`-of-scalar fields) becomes, at the portal's
//! entry, a virtual object with a *backing*: the real object's address. Its scalar
//! fields are loaded once, its lists like a portal's own `Vec`s (length in the position
//! key, elements in registers); from then on `frame.a`, `frame.regs[n]`, even inside
//! inlined methods taking the frame, emit nothing. A list field read (`frame.regs`)
//! gives a copy of the object's list that goes back into the object after each list
//! operation on it; if the copy is used any other way (bound to a reference, passed to
//! a call, carried to another block) the object is forced first. The object is written
//! back (stores, `vec_store`/`vec_move` for lists) when residual code returns
//! (`VHeap::write_back` before `finish_return`), when it escapes (forcing a backed
//! object writes it back and makes it real again), and in execute mode before the
//! portal parks and the interpreter proper continues from memory. Normalization keeps
//! backed objects even when no frame points to them any more, so their writes are not
//! lost. Why this is cheaper than PyPy's virtualizables: the interpreter hands residual
//! code a `&mut S`, and while that borrow lives no other code can read `S` except code
//! residual code itself calls, where the object escapes and is written back first. So
//! nothing outside residual code needs PyPy's check of a hidden "this frame is virtual"
//! field before every access. A panic in residual code (a bounds check, an overflow)
//! does not write the frame back: the interpreter would have panicked too, and a frame
//! caught with `catch_unwind` holds the values of the last write-back.
//!
//! Architecture Invariant: a virtual object with a backing is written back before
//! control leaves residual code other than by a panic (return, escape, park), and
//! is never dropped from a state before that.
//!
//! Virtualizable structs may have list-of-enum fields too; those stay in the backing
//! object (the virtual object names the field's real `Vec`), not in registers.
//!
//! Not yet: dicts of non-scalars, lists of lists, virtual objects with pointer or enum
//! fields, `vec![x; n]` of enums with a run-time `n` (these decline); forcing a virtual
//! `Vec` of structs; push and pop on real lists of enums in place (calls).

use crate::compile::redbox::RedBox;
use crate::compile::vlist::{InPlace, VList};
use crate::ir::builder::{CallbackFn, ResidualBuilder};
use crate::ir::ops::ValTy;

/// A pointer to a struct at compile time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VPtr {
    /// A real object: its address.
    Real(RedBox),
    /// A virtual object: its index in the state's heap.
    Virtual(u32),
}

/// The longest virtual list of pointers ([`VPList`]). When it holds an
/// interpreter's saved frames, this is how deep language-level calls are
/// inlined: past it the compilation declines, which bounds what recursion
/// unrolls (each level may split).
pub const MAX_VIRTUAL_PTRS: usize = 4;

/// A `Vec` of structs at compile time: a virtual list of pointers (the
/// interpreter's stack of saved frames), a real `Vec`'s address, or a real
/// `Vec` with virtual elements pushed over it. Its length and which of its
/// elements are virtual are part of the state's key (a real part counts as
/// one word, whatever its length).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VPList {
    /// A real `Vec`: the address of the `Vec` object.
    Real(RedBox),
    /// A virtual one: its elements.
    Virtual(Vec<VPtr>),
    /// A portal's own `Vec` (its address: the saved frames below the depth
    /// at which compiled code was entered) and the elements pushed over it
    /// since, not yet in memory (the calls compiled code made).
    Over(RedBox, Vec<VPtr>),
    /// Compiled recursion: below the virtual elements, maybe entries of the
    /// continuation stack (`spill.rs`), and below those the
    /// real `Vec` of an `Over` list (or nothing, for a list that was
    /// virtual). A pop with no virtual element left resumes on the
    /// continuation stack's top entry ([`Popped::Spilled`]).
    Spilled {
        /// The real `Vec` below the spilled entries, if any.
        below: Option<RedBox>,
        /// The interpreter reads its saved frames in place: the list's
        /// length is `below`'s, plus the continuation stack's entries
        /// (`spill::entries`: all are this list's), plus
        /// `items`'.
        counted: bool,
        /// The virtual elements over the spilled ones.
        items: Vec<VPtr>,
    },
}

/// The words of a frame's key beyond its point (see `frame::PointFrame`):
/// its green words, then what its slots add; most frames' fit without an
/// allocation.
pub type KeyWords = smallvec::SmallVec<[u64; 8]>;

impl VPList {
    /// The words this list adds to its frame's key.
    pub fn key_words(&self, out: &mut KeyWords) {
        let items = match self {
            VPList::Real(_) => return out.push(u64::MAX),
            VPList::Virtual(items) => items,
            VPList::Over(_, items) => {
                out.push(u64::MAX - 1);
                items
            }
            VPList::Spilled { below, counted, items } => {
                out.push(u64::MAX - 2 - below.is_some() as u64 - 2 * *counted as u64);
                items
            }
        };
        out.push(items.len() as u64);
        out.extend(items.iter().map(|p| match p {
            VPtr::Real(_) => u64::MAX,
            VPtr::Virtual(i) => *i as u64,
        }));
    }

    /// [`VPList::key_words`] with its virtual elements seen as real.
    pub fn key_words_forced(&self, out: &mut KeyWords) {
        let at = out.len();
        self.key_words(out);
        let n = self.items().len();
        let end = out.len();
        out[end - n..].fill(u64::MAX);
        debug_assert!(end - n > at);
    }

    /// The virtual elements over the real part (all of a virtual list's).
    fn items(&self) -> &[VPtr] {
        match self {
            VPList::Real(_) => &[],
            VPList::Virtual(items) | VPList::Over(_, items) | VPList::Spilled { items, .. } => items,
        }
    }

    /// Appends its reds: the addresses of the real list and real elements.
    pub fn reds_into(&self, out: &mut Vec<RedBox>) {
        if let VPList::Real(p) | VPList::Over(p, _) | VPList::Spilled { below: Some(p), .. } = self {
            out.push(*p);
        }
        out.extend(self.items().iter().filter_map(|p| match p {
            VPtr::Real(r) => Some(*r),
            VPtr::Virtual(_) => None,
        }));
    }

    /// Replaces its reds from `reds[*at..]` (the order of `reds_into`).
    pub fn set_reds(&mut self, reds: &[RedBox], at: &mut usize) {
        let mut next = |p: &mut RedBox| {
            *p = reds[*at];
            *at += 1;
        };
        let items = match self {
            VPList::Real(p) => return next(p),
            VPList::Virtual(items) => items,
            VPList::Over(p, items) => {
                next(p);
                items
            }
            VPList::Spilled { below, items, .. } => {
                if let Some(p) = below {
                    next(p);
                }
                items
            }
        };
        for p in items {
            if let VPtr::Real(r) = p {
                next(r);
            }
        }
    }

    /// Visits its virtual elements.
    pub fn vptrs_mut(&mut self, f: &mut dyn FnMut(&mut VPtr)) {
        if let VPList::Virtual(items) | VPList::Over(_, items) | VPList::Spilled { items, .. } = self {
            items.iter_mut().for_each(f);
        }
    }

    /// Whether a `pop` would resume on the continuation stack: a spilled
    /// list with no virtual element left.
    pub fn pops_spilled(&self) -> bool {
        matches!(self, VPList::Spilled { items, .. } if items.is_empty())
    }

    /// `pop()`: the `Option`'s tag (`0` None, `1` Some), the object, and
    /// where it came from. The last virtual element if there is one, else
    /// from memory (a run-time tag; the object virtual when the struct
    /// moves by its fields, else moved into the arena).
    pub fn pop(&mut self, b: &mut ResidualBuilder, heap: &mut VHeap, desc: &'static VDesc) -> (RedBox, VPtr, Popped) {
        let u32t = ValTy::U32;
        let (a, from) = match self {
            VPList::Virtual(items) | VPList::Over(_, items) | VPList::Spilled { items, .. } if !items.is_empty() => {
                let p = items.pop().expect("not empty");
                return (RedBox::constant(u32t, 1), p, Popped::Virtual);
            }
            VPList::Spilled { .. } => {
                return (RedBox::constant(u32t, 0), VPtr::Real(RedBox::constant(ValTy::Ptr, 0)), Popped::Spilled);
            }
            VPList::Virtual(_) => {
                return (RedBox::constant(u32t, 0), VPtr::Real(RedBox::constant(ValTy::Ptr, 0)), Popped::Virtual);
            }
            VPList::Real(a) => (*a, Popped::Memory),
            VPList::Over(a, _) => (*a, Popped::BelowEntry),
        };
        match desc.by_fields {
            Some((_, pop)) => {
                let mut outs = vec![u32t];
                outs.extend_from_slice(desc.fields);
                let v = b.red_call(pop, "vec_pop", &[a], &outs);
                (v[0], heap.alloc(desc, v[1..].to_vec(), Vec::new()), from)
            }
            None => {
                let v = b.red_call(desc.pop_moved, "vec_pop", &[a], &[u32t, ValTy::Ptr]);
                (v[0], VPtr::Real(v[1]), from)
            }
        }
    }

    /// Moves the virtual elements over a real part into memory (a virtual
    /// list, with no memory, stays as it is; so does a spilled one, whose
    /// memory is below its entries on the continuation stack); whether
    /// residual code called.
    pub fn flush(&mut self, b: &mut ResidualBuilder, heap: &mut VHeap, desc: &VDesc) -> bool {
        let VPList::Over(a, items) = self else { return false };
        let a = *a;
        let called = !items.is_empty();
        for x in std::mem::take(items) {
            push_real(b, heap, desc, a, &x);
        }
        called
    }

    /// The address of the real `Vec` once [`VPList::flush`]ed; `None` for
    /// a virtual or a spilled list.
    pub fn address(&self) -> Option<RedBox> {
        match self {
            VPList::Real(a) | VPList::Over(a, _) => Some(*a),
            VPList::Virtual(_) | VPList::Spilled { .. } => None,
        }
    }
}

/// Where [`VPList::pop`] took its object from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Popped {
    /// A virtual element (or a virtual list's `None`): nothing emitted.
    Virtual,
    /// A real list (a field, a `&mut Vec`): a call.
    Memory,
    /// A real list, in place: loads and stores residual code keeps facts
    /// about (see `JitState::vlist_pop`).
    InPlace,
    /// Below the virtual elements over a portal's own list: a call, and the
    /// path returned below the depth at which compiled code was entered.
    BelowEntry,
    /// Nothing: the list is spilled and has no virtual element left, so the
    /// popped frame is on the continuation stack or below it; the generating
    /// extension resumes there ([`crate::compile::schedule::Compilation::unspill`]).
    Spilled,
}

/// Pushes the object `x` onto the real `Vec` at `a`: by its field words (a
/// virtual object stays unmade), or forced and moved out of the arena.
pub(crate) fn push_real(b: &mut ResidualBuilder, heap: &mut VHeap, desc: &VDesc, a: RedBox, x: &VPtr) {
    match desc.by_fields {
        Some((push, _)) => {
            let mut args = vec![a];
            for (k, (t, off)) in desc.fields.iter().zip(desc.offsets).enumerate() {
                args.push(match heap.field(x, k) {
                    Some(f) => f,
                    None => {
                        let o = heap.force(b, x);
                        b.red_load(*t, &o, *off)
                    }
                });
            }
            b.red_call(push, "vec_push", &args, &[]);
        }
        None => {
            let o = heap.force(b, x);
            b.red_call(desc.push_moved, "vec_push", &[a, o], &[]);
        }
    }
}

/// What the runtime knows of a struct type, to force its virtual objects.
#[derive(Debug)]
pub struct VDesc {
    /// The type's name, for listings.
    pub name: &'static str,
    /// The residual types of its fields, in declaration order.
    pub fields: &'static [ValTy],
    /// Allocates an object from its scalar field words (frame words 0..n),
    /// its list fields empty, and writes its address into word 0 (the
    /// callback convention).
    pub alloc: CallbackFn,
    /// The byte offsets of the scalar fields, in the order of `fields`.
    pub offsets: &'static [i32],
    /// The list fields (`Vec`s of scalars or of plain enums).
    pub lists: &'static [VListField],
    /// [`crate::run::heap::vec_push_moved`] for this type: `[vec, obj] -> []`.
    pub push_moved: CallbackFn,
    /// [`crate::run::heap::vec_pop_moved`] for this type: `[vec] -> [tag, obj]`.
    pub pop_moved: CallbackFn,
    /// For a struct of scalars, push and pop that move an object into and
    /// out of a real `Vec` by its field words (`[vec, fields..] -> []`,
    /// `[vec] -> [tag, fields..]`): popped objects stay virtual.
    pub by_fields: Option<(CallbackFn, CallbackFn)>,
    /// Where objects move by their field words (`by_fields`): how a real
    /// `Vec` of them is pushed onto and popped in place.
    pub in_memory: Option<StructVec>,
    /// The interpreter reads its `Vec`s of this type in place (`len`, an
    /// index: `frames.last()`), not only by `pop`: spilled, they count
    /// their entries on the continuation stack (`VPList::Spilled`).
    pub reads_in_place: bool,
}

/// A real `Vec` of a struct of scalars, as residual code pushes onto it
/// and pops it in place (`JitState::vlist_push`, `JitState::vlist_pop`).
#[derive(Debug, Clone, Copy)]
pub struct StructVec {
    /// Where the `Vec` keeps its buffer, length and capacity
    /// ([`crate::run::heap::vec_header`] for the struct).
    pub header: fn() -> Option<crate::run::heap::VecHeader>,
    /// The struct's size in bytes.
    pub size: u64,
    /// The alias class of the struct's fields (see the state's `Fact`),
    /// the one its field loads and stores through pointers use.
    pub class: u32,
    /// [`crate::run::heap::vec_reserve_one`] for the struct.
    pub reserve: CallbackFn,
}

/// A list field of a struct whose objects may be virtual.
#[derive(Debug)]
pub struct VListField {
    /// Its byte offset in the struct.
    pub offset: i32,
    /// The red boxes per element: 1 for scalars, the flattened slots of a
    /// plain enum.
    pub width: usize,
    /// [`crate::run::heap::vec_store`] (or [`crate::run::heap::flat_vec_store`]) for
    /// its element type: `[dest, n, slots..] -> []`.
    pub store: CallbackFn,
    /// [`crate::run::heap::vec_move`] for its element type.
    pub mov: CallbackFn,
    /// For a list of integers: how to write into it in place, so that,
    /// once in memory, it keeps a tail ([`VList::Tail`]).
    pub in_place: Option<&'static InPlace>,
}

/// A virtual object.
#[derive(Clone, Debug)]
pub struct VObject {
    /// Its type.
    pub desc: &'static VDesc,
    /// Its fields' values, in declaration order.
    pub fields: Vec<RedBox>,
    /// Its list fields' values, in declaration order.
    pub lists: Vec<VList>,
    /// The real object it stands for (a virtualizable object loaded at a
    /// portal's entry), written back when forced.
    pub backing: Option<RedBox>,
    /// Its address, once forced.
    pub forced: Option<RedBox>,
}

/// The virtual objects of one compile-time state.
#[derive(Clone, Debug, Default)]
pub struct VHeap {
    /// The objects, indexed by [`VPtr::Virtual`].
    pub objects: Vec<VObject>,
}

impl VHeap {
    /// A new virtual object with these field and list values.
    pub fn alloc(&mut self, desc: &'static VDesc, fields: Vec<RedBox>, lists: Vec<VList>) -> VPtr {
        self.objects.push(VObject { desc, fields, lists, backing: None, forced: None });
        VPtr::Virtual(self.objects.len() as u32 - 1)
    }

    /// A virtual object standing for the real one at `backing`, with its
    /// fields' and lists' current values.
    pub fn alloc_backed(
        &mut self,
        desc: &'static VDesc,
        fields: Vec<RedBox>,
        lists: Vec<VList>,
        backing: RedBox,
    ) -> VPtr {
        self.objects.push(VObject { desc, fields, lists, backing: Some(backing), forced: None });
        VPtr::Virtual(self.objects.len() as u32 - 1)
    }

    /// The object `p` names, while it is virtual.
    pub fn live(&self, p: &VPtr) -> Option<&VObject> {
        match p {
            VPtr::Virtual(i) => self.objects.get(*i as usize).filter(|o| o.forced.is_none()),
            VPtr::Real(_) => None,
        }
    }

    /// Whether `p` names a virtual (not forced) object.
    pub fn is_virtual(&self, p: &VPtr) -> bool {
        self.live(p).is_some()
    }

    /// Field `k` of a virtual object; `None` when `p` is real.
    pub fn field(&self, p: &VPtr, k: usize) -> Option<RedBox> {
        self.live(p).map(|o| o.fields[k])
    }

    /// Writes field `k` of a virtual object; false when `p` is real.
    pub fn set_field(&mut self, p: &VPtr, k: usize, v: &RedBox) -> bool {
        if !self.is_virtual(p) {
            return false;
        }
        let VPtr::Virtual(i) = p else { return false };
        self.objects[*i as usize].fields[k] = *v;
        true
    }

    /// List field `k` of a virtual object (a copy: write it back with
    /// [`VHeap::set_list`] after changing it); `None` when `p` is real.
    pub fn list(&self, p: &VPtr, k: usize) -> Option<VList> {
        self.live(p).map(|o| o.lists[k].clone())
    }

    /// Writes list field `k` of a virtual object; false when `p` is real.
    pub fn set_list(&mut self, p: &VPtr, k: usize, l: &VList) -> bool {
        if !self.is_virtual(p) {
            return false;
        }
        let VPtr::Virtual(i) = p else { return false };
        self.objects[*i as usize].lists[k] = l.clone();
        true
    }

    /// The address of the object `p` names, forcing it first when virtual:
    /// a new object (its type's constructor), or its backing object with
    /// the fields written back.
    pub fn force(&mut self, b: &mut ResidualBuilder, p: &VPtr) -> RedBox {
        self.force_except(b, p, None)
    }

    /// [`VHeap::force`], leaving alone a list field that is the real `Vec`
    /// at `moved` (see [`VHeap::write_back_returning`]).
    fn force_except(&mut self, b: &mut ResidualBuilder, p: &VPtr, moved: Option<&RedBox>) -> RedBox {
        let i = match p {
            VPtr::Real(r) => return *r,
            VPtr::Virtual(i) => *i as usize,
        };
        if let Some(r) = self.objects[i].forced {
            return r;
        }
        let o = &self.objects[i];
        let addr = match o.backing {
            Some(addr) => {
                for (x, off) in o.fields.iter().zip(o.desc.offsets) {
                    b.red_store(&addr, *off, x);
                }
                addr
            }
            // A new object: its scalar fields given, its lists empty.
            None => b.red_call(o.desc.alloc, o.desc.name, &o.fields, &[ValTy::Ptr])[0],
        };
        let desc = o.desc;
        for (l, d) in self.objects[i].lists.iter_mut().zip(desc.lists) {
            if let (VList::Real(src) | VList::Tail(src, ..), Some(moved)) = (&*l, moved) {
                if src == moved {
                    continue;
                }
            }
            let dest = b.red_offset(&addr, d.offset as u64);
            l.flush_tail(b);
            match l {
                VList::Real(src) | VList::Tail(src, ..) => {
                    b.red_call(d.mov, "vec_move", &[dest, *src], &[]);
                }
                VList::Virtual(items) => {
                    let mut args = vec![dest, RedBox::u64((items.len() / d.width.max(1)) as u64)];
                    args.extend_from_slice(items);
                    b.red_call(d.store, "vec_store", &args, &[]);
                }
            }
        }
        self.objects[i].forced = Some(addr);
        addr
    }

    /// Moves the virtual lists of objects with a backing into the backing's
    /// own `Vec`s, where they stay (an operand stack the interpreted
    /// program's calls share, forced at a recursion); whether it did.
    pub fn force_backed_lists(&mut self, b: &mut ResidualBuilder) -> bool {
        let mut forced = false;
        for o in &mut self.objects {
            let (Some(addr), None) = (o.backing, o.forced) else { continue };
            for (l, d) in o.lists.iter_mut().zip(o.desc.lists) {
                let VList::Virtual(items) = l else { continue };
                let dest = b.red_offset(&addr, d.offset as u64);
                let mut args = vec![dest, RedBox::u64((items.len() / d.width.max(1)) as u64)];
                args.extend_from_slice(items);
                b.red_call(d.store, "vec_store", &args, &[]);
                *l = VList::Real(dest);
                forced = true;
            }
        }
        forced
    }

    /// Writes every virtualizable object back into its backing object
    /// (before residual code returns to the interpreter).
    pub fn write_back(&mut self, b: &mut ResidualBuilder) {
        for i in 0..self.objects.len() {
            if self.objects[i].backing.is_some() {
                self.force(b, &VPtr::Virtual(i as u32));
            }
        }
    }

    /// [`VHeap::write_back`] at a return of the portal whose result is the
    /// real `Vec` at `returned`, already complete in memory (its tail
    /// stored by the return). A list field of a backed object that is that
    /// `Vec` is the place the result was moved out of: its copy here is
    /// stale (a tail stored again would repeat elements), and moving it
    /// into the backing would empty the result. It is left alone.
    pub fn write_back_returning(&mut self, b: &mut ResidualBuilder, returned: &RedBox) {
        for i in 0..self.objects.len() {
            if self.objects[i].backing.is_some() {
                self.force_except(b, &VPtr::Virtual(i as u32), Some(returned));
            }
        }
    }

    /// The real pointer a forced object became (frames still naming it
    /// virtual are rewritten by normalization).
    pub fn resolve(&self, p: &VPtr) -> VPtr {
        match p {
            VPtr::Virtual(i) => match self.objects.get(*i as usize).and_then(|o| o.forced) {
                Some(r) => VPtr::Real(r),
                None => *p,
            },
            real => *real,
        }
    }
}

//! Virtual lists: a `Vec` of scalars that residual code never sees.
//!
//! A `Vec` the interpreter creates while being compiled (`Vec::new()`,
//! `vec![x; n]` with a compile-time `n`, `vec![a, b]`) is kept as its
//! elements' red boxes: its length is known at compile time, and push, pop,
//! `len` and accesses at compile-time indices emit nothing. It is *forced*
//! (a real `Vec` allocated in residual code and its elements stored) when its
//! shape can no longer be known: an access at a run-time index, a reference
//! taken to it, a call that is not inlined, or a length past
//! [`MAX_VIRTUAL_LEN`]. A `Vec` that comes from outside (an input of the
//! residual function) is real from the start.
//!
//! A real `Vec` may also carry a *tail* ([`VList::Tail`]): elements pushed
//! onto it that residual code has not stored yet. An operand stack the
//! interpreted program's calls share, moved into memory at a language-level
//! recursion (`JitState::force_backed_lists`), becomes one: the callee's
//! pushes and pops stay in registers, and only what is below its frame goes
//! to memory at the next call. Reads and writes at an index the compiler
//! can place relative to the part in memory find the tail's elements
//! (`JitState::tail_get`, `tail_set`); anything else that needs the `Vec`
//! itself moves the tail into it first ([`VList::force`]).
//!
//! Invariant: the length of a virtual list is part of the state's key (see
//! [`VList::key_word`]), so that states merged into one residual block agree
//! on it, and only its elements are reds; so is the length of a tail. A
//! list growing in a loop is forced at a merge point (see
//! `schedule::merge`), and a state too large to hand over to a lazily
//! compiled side has its lists forced first
//! (`JitState::force_lists`).
//!
//! Invariant: the part in memory of a list with a tail is a valid `Vec`
//! (its length field is its length); the list is that `Vec`, then its
//! hidden part (where the tail's last field says it has one: the segments
//! of the continuation stack's entries of the current call of residual
//! code, oldest first), then the tail. Whatever reads or writes the `Vec`
//! itself moves the hidden part back into it first ([`VList::flush_tail`]).

use crate::compile::redbox::RedBox;
use crate::ir::builder::{CallbackFn, ResidualBuilder};
use crate::ir::ops::ValTy;
use crate::run::heap::VecHeader;

/// The longest list kept virtual: past it (or when a push would make it
/// longer), the list is forced. It bounds the unrolling of a loop that grows
/// a list.
pub const MAX_VIRTUAL_LEN: usize = 64;

/// The longest list of enums whose length (and whose top elements'
/// variants) code entered where the interpreter has saved frames keeps in
/// its key; a longer one is taken from memory. An operand stack that every
/// call shares grows with the depth, and a version per depth would compile;
/// one that each call starts afresh (TLC's) is short there.
pub const NESTED_KEYED_LEN: usize = 4;

/// How residual code writes into a real `Vec` of integers in place: what a
/// [`VList::Tail`] needs to move its elements into memory.
#[derive(Debug)]
pub struct InPlace {
    /// [`crate::run::heap::vec_header`] for the element type.
    pub header: fn() -> Option<VecHeader>,
    /// The size of an element.
    pub size: u64,
    /// The element's residual type (an integer).
    pub ty: ValTy,
    /// The alias class of the elements (see `state::Fact`).
    pub class: u32,
    /// [`crate::run::heap::vec_reserve_one`] for the element type.
    pub reserve: CallbackFn,
    /// [`crate::run::heap::vec_extend`] for the element type.
    pub extend: CallbackFn,
}

/// An [`InPlace`] of a generated descriptor, compared by address.
#[derive(Clone, Copy, Debug)]
pub struct InPlaceRef(pub &'static InPlace);

impl PartialEq for InPlaceRef {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for InPlaceRef {}

/// The longest tail: past it, a push moves the tail into memory first. It
/// bounds the versions of a loop that pushes onto a list with a tail (its
/// length is in the key) where a call's temporaries need only a few.
pub const MAX_TAIL_LEN: usize = 8;

/// A `Vec` of scalars at compile time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VList {
    /// A real `Vec`: the address of the `Vec` object.
    Real(RedBox),
    /// A virtual one: its elements.
    Virtual(Vec<RedBox>),
    /// A real `Vec` (its address) followed by elements not stored yet. The
    /// last field is `None` where the part before the tail is the `Vec` as
    /// it is in memory, or that part's length where some of it is *hidden*:
    /// segments of the operand stack that went onto the continuation stack
    /// with the frames they belong to (`compile::spill`), the `Vec` holding
    /// only what is below them.
    Tail(RedBox, Vec<RedBox>, InPlaceRef, Option<RedBox>),
}

/// The bit of [`VList::key_word`] that says "a real list with a tail".
const TAIL_KEY: u64 = 1 << 62;

/// The bit of [`VList::key_word`] that says "part of it hidden on the
/// continuation stack".
const HIDDEN_KEY: u64 = 1 << 61;

impl VList {
    /// A virtual list, or `None` when it would be too long.
    pub fn virtual_of(items: Vec<RedBox>) -> Option<VList> {
        (items.len() <= MAX_VIRTUAL_LEN).then_some(VList::Virtual(items))
    }

    /// `vec![x; n]`: virtual when `n` is a small compile-time constant.
    pub fn repeat(x: &RedBox, n: &RedBox) -> Option<VList> {
        let n = n.as_const()? as usize;
        VList::virtual_of(vec![*x; n])
    }

    /// The length, when virtual.
    pub fn len_const(&self) -> Option<RedBox> {
        self.len_w(1)
    }

    /// The element at a compile-time index, when virtual and in bounds.
    pub fn get_const(&self, index: &RedBox) -> Option<RedBox> {
        self.get_w(index, 1).map(|s| s[0])
    }

    /// Writes the element at a compile-time index; false when the list is
    /// real or the index not known or out of bounds (nothing done).
    pub fn set_const(&mut self, index: &RedBox, value: &RedBox) -> bool {
        self.set_w(index, std::slice::from_ref(value))
    }

    /// Pushes onto a virtual list; false when real or full (nothing done).
    pub fn push_virtual(&mut self, value: &RedBox) -> bool {
        self.push_w(std::slice::from_ref(value))
    }

    /// Pops from a virtual list: `Some(None)` when it is empty, `None` when
    /// the list is real.
    pub fn pop_virtual(&mut self) -> Option<Option<RedBox>> {
        self.pop_w(1).map(|e| e.map(|v| v[0]))
    }

    // Lists of enums: each element is `w` red boxes (its flattened slots).

    /// The length of a virtual list of `w`-slot elements.
    pub fn len_w(&self, w: usize) -> Option<RedBox> {
        match self {
            VList::Virtual(items) => Some(RedBox::u64((items.len() / w) as u64)),
            VList::Real(_) | VList::Tail(..) => None,
        }
    }

    /// The element at a compile-time index (its `w` slots), when virtual and
    /// in bounds.
    pub fn get_w(&self, index: &RedBox, w: usize) -> Option<&[RedBox]> {
        let VList::Virtual(items) = self else { return None };
        let i = usize::try_from(index.as_const()?).ok()?;
        items.get(i.checked_mul(w)?..i.checked_mul(w)?.checked_add(w)?)
    }

    /// Writes the element at a compile-time index; false when not possible.
    pub fn set_w(&mut self, index: &RedBox, value: &[RedBox]) -> bool {
        let w = value.len();
        let VList::Virtual(items) = self else { return false };
        let Some(i) = index.as_const().and_then(|i| usize::try_from(i).ok()) else { return false };
        match i.checked_mul(w).and_then(|at| items.get_mut(at..at.checked_add(w)?)) {
            Some(slots) => {
                slots.copy_from_slice(value);
                true
            }
            None => false,
        }
    }

    /// Pushes an element onto a virtual list (at most [`MAX_VIRTUAL_LEN`]
    /// elements); false when real or full.
    pub fn push_w(&mut self, value: &[RedBox]) -> bool {
        match self {
            VList::Virtual(items) if items.len() / value.len().max(1) < MAX_VIRTUAL_LEN => {
                items.extend_from_slice(value);
                true
            }
            VList::Tail(_, items, ..) if items.len() < MAX_TAIL_LEN => {
                items.extend_from_slice(value);
                true
            }
            _ => false,
        }
    }

    /// Pops an element of `w` slots: `Some(None)` when empty, `None` when
    /// real (or a tail is empty: the pop is the `Vec`'s).
    pub fn pop_w(&mut self, w: usize) -> Option<Option<Vec<RedBox>>> {
        match self {
            VList::Virtual(items) | VList::Tail(_, items, ..) if items.len() >= w => {
                Some(Some(items.split_off(items.len() - w)))
            }
            VList::Virtual(_) => Some(None),
            VList::Real(_) | VList::Tail(..) => None,
        }
    }

    /// The word this list adds to its frame's key: its length when virtual,
    /// its tail's marked when it has one.
    pub fn key_word(&self) -> u64 {
        match self {
            VList::Virtual(items) => items.len() as u64,
            VList::Real(_) => u64::MAX,
            VList::Tail(_, items, _, hidden) => {
                TAIL_KEY | if hidden.is_some() { HIDDEN_KEY } else { 0 } | items.len() as u64
            }
        }
    }

    /// Appends its reds: the address when real, the elements when virtual,
    /// both for a tail (and the length before it, when hidden).
    pub fn reds_into(&self, out: &mut Vec<RedBox>) {
        match self {
            VList::Real(p) => out.push(*p),
            VList::Virtual(items) => out.extend_from_slice(items),
            VList::Tail(p, items, _, hidden) => {
                out.push(*p);
                out.extend(hidden);
                out.extend_from_slice(items);
            }
        }
    }

    /// Replaces its reds from `reds[*at..]` (the order of `reds_into`).
    pub fn set_reds(&mut self, reds: &[RedBox], at: &mut usize) {
        match self {
            VList::Real(p) => {
                *p = reds[*at];
                *at += 1;
            }
            VList::Virtual(items) => {
                let n = items.len();
                items.copy_from_slice(&reds[*at..*at + n]);
                *at += n;
            }
            VList::Tail(p, items, _, hidden) => {
                *p = reds[*at];
                *at += 1;
                if let Some(h) = hidden {
                    *h = reds[*at];
                    *at += 1;
                }
                let n = items.len();
                items.copy_from_slice(&reds[*at..*at + n]);
                *at += n;
            }
        }
    }

    /// Makes a list with a tail a real one (its tail moved into memory), for
    /// code that knows only real and virtual lists: the interpreter's
    /// objects rebuilt at a hand-over.
    pub fn untail(&mut self, b: &mut ResidualBuilder) {
        if let Some(p) = self.flush_tail(b) {
            *self = VList::Real(p);
        }
    }

    /// The address of a real `Vec`, forcing a virtual one first: residual
    /// code allocates it (`new_repeat(0, len)`, Rust's own code, in the
    /// arena of objects residual code makes) and stores the elements.
    pub fn force(
        &mut self,
        b: &mut ResidualBuilder,
        elem: ValTy,
        new_repeat: crate::ir::builder::CallbackFn,
        set: crate::ir::builder::CallbackFn,
    ) -> RedBox {
        self.flush_tail(b);
        let items = match self {
            VList::Real(p) | VList::Tail(p, ..) => return *p,
            VList::Virtual(items) => std::mem::take(items),
        };
        let n = RedBox::u64(items.len() as u64);
        let p = b.red_call(new_repeat, "vec_new_repeat", &[RedBox::constant(elem, 0), n], &[ValTy::Ptr])[0];
        for (i, x) in items.iter().enumerate() {
            b.red_call(set, "vec_set", &[p, RedBox::u64(i as u64), *x], &[]);
        }
        *self = VList::Real(p);
        p
    }

    /// The address of a real `Vec` of `w`-slot elements (a list of enums),
    /// forcing a virtual one first: residual code calls `new`
    /// ([`crate::run::heap::flat_vec_new`]) with the length and the slots.
    pub fn force_flat(&mut self, b: &mut ResidualBuilder, w: usize, new: crate::ir::builder::CallbackFn) -> RedBox {
        self.flush_tail(b);
        let items = match self {
            VList::Real(p) | VList::Tail(p, ..) => return *p,
            VList::Virtual(items) => std::mem::take(items),
        };
        let mut args = vec![RedBox::u64((items.len() / w.max(1)) as u64)];
        args.extend_from_slice(&items);
        let p = b.red_call(new, "vec_new", &args, &[ValTy::Ptr])[0];
        *self = VList::Real(p);
        p
    }
}

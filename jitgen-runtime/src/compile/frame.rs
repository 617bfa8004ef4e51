//! The frame of a generating extension: the program point where it stops,
//! and the values live there.
//!
//! A generating extension can stop at every point where the runtime may keep
//! its state (a merge point, a split, a call). Its frame is a [`PointFrame`]:
//! the point's number, the green values live there as words, the red boxes of
//! its red scalars, enums and slices, and its compile-time containers and
//! pointers as [`Slot`]s. The macro emits, per layout (the representations of
//! a point's live variables, in order), one function that packs typed values
//! into a frame and one that unpacks them; everything else the runtime asks of
//! a frame (its key, its red boxes, its pointers to virtual structures, its
//! lists) is this module's code, the same for every interpreter.
//!
//! Architecture Invariant: a frame's key is its point and its words, then
//! what each slot adds, in slot order; its red boxes are its `reds`, then
//! each slot's, in slot order. Frames at the same point have the same layout,
//! so their keys and red boxes correspond word for word and box for box.

use std::marker::PhantomData;

use smallvec::SmallVec;

use crate::compile::redbox::RedBox;
use crate::compile::state::{Frame, JitState, KeyView, ListMut};
use crate::compile::vdict::VDict;
use crate::compile::virtuals::{VPList, VPtr};
use crate::compile::vlist::VList;
use crate::ir::builder::CallbackFn;
use crate::ir::ops::ValTy;

/// A live value that is neither a green word nor a red box.
#[derive(Clone, Debug)]
pub enum Slot {
    /// A green enum, flattened: its words are constants, part of the key.
    Consts(SmallVec<[RedBox; 4]>),
    /// A pointer to a struct that may be virtual.
    Ptr(VPtr),
    /// An `Option` of such a struct: the tag's red box and the pointer.
    Opt(RedBox, VPtr),
    /// A list of scalars of this type, with `vec_new_repeat` and `vec_set`
    /// for it ([`VList::force`]).
    Scalars(VList, ValTy, CallbackFn, CallbackFn),
    /// A list of enums of this many slots each, with `flat_vec_new` for it.
    Flat(VList, usize, CallbackFn),
    /// A dict with keys of this type, with `map_new` and `map_insert` for it.
    Dict(VDict, ValTy, CallbackFn, CallbackFn),
    /// A list of structs (saved frames).
    Ptrs(VPList),
    /// A moved-out slot (see [`Values::take`]).
    Taken,
}

const NOT_CONST: u64 = u64::MAX;

/// The address a part seen as real has ([`KeyView`]).
const NULL: RedBox = RedBox::Const { ty: ValTy::Ptr, bits: 0 };

fn ptr_word(p: &VPtr) -> u64 {
    match p {
        VPtr::Real(_) => NOT_CONST,
        VPtr::Virtual(i) => *i as u64,
    }
}

impl Slot {
    /// [`Slot::key_words`] with the parts `view` names real.
    fn key_words_as(&self, k: &mut KeyWords, view: KeyView) {
        match self {
            Slot::Ptr(_) if view.objects => k.push(NOT_CONST),
            Slot::Opt(tag, _) if view.objects => k.extend([tag.as_const().unwrap_or(NOT_CONST), NOT_CONST]),
            Slot::Scalars(..) | Slot::Flat(..) if view.lists => k.push(VList::Real(NULL).key_word()),
            Slot::Dict(..) if view.lists => VDict::Real(NULL).key_words(k),
            Slot::Ptrs(_) if view.saved_frames => VPList::Real(NULL).key_words(k),
            Slot::Ptrs(l) if view.objects => l.key_words_forced(k),
            s => s.key_words(k),
        }
    }

    /// [`Slot::reds_into`] with lists and dicts seen real.
    fn reds_lists_real(&self, out: &mut Vec<RedBox>) {
        match self {
            Slot::Scalars(..) | Slot::Flat(..) | Slot::Dict(..) => out.push(NULL),
            s => s.reds_into(out),
        }
    }

    fn key_words(&self, k: &mut KeyWords) {
        match self {
            Slot::Consts(bs) => k.extend(bs.iter().map(|b| b.as_const().unwrap_or(NOT_CONST))),
            Slot::Ptr(p) => k.push(ptr_word(p)),
            Slot::Opt(tag, p) => k.extend([tag.as_const().unwrap_or(NOT_CONST), ptr_word(p)]),
            Slot::Scalars(l, ..) | Slot::Flat(l, ..) => k.push(l.key_word()),
            Slot::Dict(d, ..) => d.key_words(k),
            Slot::Ptrs(l) => l.key_words(k),
            Slot::Taken => {}
        }
    }

    fn reds_into(&self, out: &mut Vec<RedBox>) {
        match self {
            Slot::Consts(_) | Slot::Taken => {}
            Slot::Ptr(p) => {
                if let VPtr::Real(b) = p {
                    out.push(*b);
                }
            }
            Slot::Opt(tag, p) => {
                out.push(*tag);
                if let VPtr::Real(b) = p {
                    out.push(*b);
                }
            }
            Slot::Scalars(l, ..) | Slot::Flat(l, ..) => l.reds_into(out),
            Slot::Dict(d, ..) => d.reds_into(out),
            Slot::Ptrs(l) => l.reds_into(out),
        }
    }

    fn set_reds(&mut self, reds: &[RedBox], at: &mut usize) {
        let mut take = || {
            *at += 1;
            reds[*at - 1]
        };
        match self {
            Slot::Consts(_) | Slot::Taken => {}
            Slot::Ptr(p) => {
                if let VPtr::Real(b) = p {
                    *b = take();
                }
            }
            Slot::Opt(tag, p) => {
                *tag = take();
                if let VPtr::Real(b) = p {
                    *b = take();
                }
            }
            Slot::Scalars(l, ..) | Slot::Flat(l, ..) => l.set_reds(reds, at),
            Slot::Dict(d, ..) => d.set_reds(reds, at),
            Slot::Ptrs(l) => l.set_reds(reds, at),
        }
    }

    fn wrong(&self, want: &str) -> ! {
        panic!("jitgen: a frame's slot is {self:?}, not {want} (the point's layout)")
    }

    /// The green enum's boxes.
    pub fn into_consts<const N: usize>(self) -> [RedBox; N] {
        match self {
            Slot::Consts(bs) => boxes(&bs),
            s => s.wrong("a green enum"),
        }
    }
    /// The pointer.
    pub fn into_ptr(self) -> VPtr {
        match self {
            Slot::Ptr(p) => p,
            s => s.wrong("a pointer"),
        }
    }
    /// The option.
    pub fn into_opt(self) -> (RedBox, VPtr) {
        match self {
            Slot::Opt(tag, p) => (tag, p),
            s => s.wrong("an option"),
        }
    }
    /// The list (of scalars or of enums).
    pub fn into_list(self) -> VList {
        match self {
            Slot::Scalars(l, ..) | Slot::Flat(l, ..) => l,
            s => s.wrong("a list"),
        }
    }
    /// The dict.
    pub fn into_dict(self) -> VDict {
        match self {
            Slot::Dict(d, ..) => d,
            s => s.wrong("a dict"),
        }
    }
    /// The list of structs.
    pub fn into_ptrs(self) -> VPList {
        match self {
            Slot::Ptrs(l) => l,
            s => s.wrong("a list of structs"),
        }
    }
    /// The list (of scalars or of enums), in place.
    pub fn list_mut(&mut self) -> &mut VList {
        match self {
            Slot::Scalars(l, ..) | Slot::Flat(l, ..) => l,
            s => s.wrong("a list"),
        }
    }
}

/// `N` red boxes from the start of `bs` (a flattened enum, a slice).
pub fn boxes<const N: usize>(bs: &[RedBox]) -> [RedBox; N] {
    match bs.get(..N).map(<[RedBox; N]>::try_from) {
        Some(Ok(a)) => a,
        _ => panic!("jitgen: a frame holds {} red boxes where its layout has {N}", bs.len()),
    }
}

/// The green reference a frame holds as the word `w`.
pub fn green_ref<'a, T>(w: u64) -> &'a T {
    // SAFETY: `w` is the address of a `&'a T` that the generating extension
    // packed into this frame (`ref_word`); the frame's lifetime is that of the
    // data its green references point into (see `__forever` in the
    // generated code).
    unsafe { &*(w as usize as *const T) }
}

/// The word a frame holds for a green reference.
pub fn ref_word<T>(r: &T) -> u64 {
    r as *const T as usize as u64
}

/// The green slice a frame holds as the words `ptr` and `len`.
pub fn green_slice<'a, T>(ptr: u64, len: u64) -> &'a [T] {
    // SAFETY: as for `green_ref`: the words of a `&'a [T]` packed into this
    // frame.
    unsafe { std::slice::from_raw_parts(ptr as usize as *const T, len as usize) }
}

/// What a frame holds beyond its point: green words, red boxes, slots (also
/// a call's result, delivered to its continuation).
///
/// Sized so that a [`PointFrame`] and its [`JitState`] stay within 128 bytes
/// each: the extension's `__run` moves both into a point's function at each
/// step, and moves of that size are compiled inline rather than as calls of
/// `memcpy` (most frames have 4 words or fewer and 3 red boxes or fewer; more
/// spill to the heap).
#[derive(Clone, Debug, Default)]
pub struct Values {
    /// The green values, as words (part of the key).
    pub words: SmallVec<[u64; 4]>,
    /// The red boxes of red scalars, enums and slices.
    pub reds: SmallVec<[RedBox; 3]>,
    /// The rest, in the layout's order.
    pub slots: Box<[Slot]>,
}

impl Values {
    /// Values of these words, red boxes and slots.
    pub fn new(words: &[u64], reds: &[RedBox], slots: Vec<Slot>) -> Values {
        Values { words: SmallVec::from_slice(words), reds: SmallVec::from_slice(reds), slots: slots.into_boxed_slice() }
    }
    /// Word `i`.
    pub fn word(&self, i: usize) -> u64 {
        self.words[i]
    }
    /// Red box `i`.
    pub fn red(&self, i: usize) -> RedBox {
        self.reds[i]
    }
    /// The red boxes from `i` on.
    pub fn reds_from(&self, i: usize) -> &[RedBox] {
        &self.reds[i..]
    }
    /// Whether these are green words only (no red box, no slot).
    pub fn is_green(&self) -> bool {
        self.reds.is_empty() && self.slots.is_empty()
    }
    /// Slot `i`, moved out.
    pub fn take(&mut self, i: usize) -> Slot {
        std::mem::replace(&mut self.slots[i], Slot::Taken)
    }
}

pub use crate::compile::virtuals::KeyWords;

const _: () = assert!(std::mem::size_of::<PointFrame<'static>>() <= 128);
const _: () = assert!(std::mem::size_of::<JitState<PointFrame<'static>>>() <= 128);

/// A frame of a generating extension (see the module doc).
#[derive(Clone, Debug)]
pub struct PointFrame<'a> {
    /// The program point it stops at.
    pub point: u32,
    /// At a join: whether the state already went through its merge.
    pub merged: bool,
    /// Whether the interpreter reads its lists of structs in place
    /// ([`Frame::reads_saved_frames`]): the same for every frame of an
    /// extension.
    reads_saved: bool,
    /// The live values.
    pub vals: Values,
    /// At a call's continuation: the result, once delivered.
    pub ret: Option<Box<Values>>,
    /// Green references live as long as `'a`.
    _data: PhantomData<&'a ()>,
}

impl PointFrame<'_> {
    /// A frame at `point` holding `vals`.
    pub fn new(point: u32, reads_saved: bool, vals: Values) -> Self {
        PointFrame { point, merged: false, reads_saved, vals, ret: None, _data: PhantomData }
    }
}

impl PointFrame<'_> {
    /// The key words of a result delivered to the frame and kept (a
    /// continuation that stopped again before its first operation, to
    /// bring spilled frames back: only green results are kept so).
    fn ret_key_words(&self, k: &mut KeyWords) {
        if let Some(r) = &self.ret {
            k.push(r.words.len() as u64);
            k.extend_from_slice(&r.words);
        }
    }

    /// A copy changed as `view` sees it: what [`Frame::key_as`] and
    /// [`Frame::reds_lists_real`] must agree with (checked in debug builds).
    fn changed_copy(&self, view: KeyView) -> Self {
        let mut f = self.clone();
        view.apply(&mut f);
        f
    }
}

impl Frame for PointFrame<'_> {
    type Key = (u32, KeyWords);

    fn point(&self) -> Option<u32> {
        Some(self.point)
    }

    fn position(&self) -> Option<u64> {
        use std::hash::BuildHasher;
        Some(rustc_hash::FxBuildHasher.hash_one((self.point, &self.vals.words)))
    }

    fn key(&self) -> Self::Key {
        let mut k = KeyWords::from_slice(&self.vals.words);
        for s in &self.vals.slots {
            s.key_words(&mut k);
        }
        self.ret_key_words(&mut k);
        (self.point, k)
    }

    fn key_as(&self, view: KeyView) -> Self::Key {
        let mut k = KeyWords::from_slice(&self.vals.words);
        for s in &self.vals.slots {
            s.key_words_as(&mut k, view);
        }
        self.ret_key_words(&mut k);
        debug_assert_eq!(k, self.changed_copy(view).key().1, "a frame's key seen through {view:?}");
        (self.point, k)
    }

    fn reds_lists_real(&self, out: &mut Vec<RedBox>) {
        let at = out.len();
        out.extend_from_slice(&self.vals.reds);
        for s in &self.vals.slots {
            s.reds_lists_real(out);
        }
        let view = KeyView { lists: true, ..KeyView::default() };
        debug_assert_eq!(out[at..], self.changed_copy(view).reds(), "a frame's reds with its lists real");
    }

    fn reds(&self) -> Vec<RedBox> {
        let mut out = Vec::new();
        self.reds_into(&mut out);
        out
    }

    fn reds_into(&self, out: &mut Vec<RedBox>) {
        out.extend_from_slice(&self.vals.reds);
        for s in &self.vals.slots {
            s.reds_into(out);
        }
    }

    fn set_reds(&mut self, reds: &[RedBox]) {
        self.set_reds_counted(reds);
    }

    fn set_reds_counted(&mut self, reds: &[RedBox]) -> usize {
        let n = self.vals.reds.len();
        self.vals.reds.copy_from_slice(&reds[..n]);
        let mut at = n;
        for s in &mut self.vals.slots {
            s.set_reds(reds, &mut at);
        }
        at
    }

    fn unmerge(&mut self) {
        self.merged = false;
    }

    fn vptrs_mut(&mut self, f: &mut dyn FnMut(&mut VPtr)) {
        for s in &mut self.vals.slots {
            match s {
                Slot::Ptr(p) | Slot::Opt(_, p) => f(p),
                Slot::Ptrs(l) => l.vptrs_mut(f),
                _ => {}
            }
        }
    }

    fn lists_mut(&mut self, f: &mut dyn FnMut(ListMut<'_>)) {
        for s in &mut self.vals.slots {
            match s {
                Slot::Scalars(l, ty, new, set) => f(ListMut::Scalars(l, *ty, *new, *set)),
                Slot::Flat(l, n, new) => f(ListMut::Flat(l, *n, *new)),
                Slot::Dict(d, ty, new, insert) => f(ListMut::Dict(d, *ty, *new, *insert)),
                Slot::Ptrs(l) => f(ListMut::Ptrs(l)),
                _ => {}
            }
        }
    }

    fn reads_saved_frames(&self) -> bool {
        self.reads_saved
    }
}

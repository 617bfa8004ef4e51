//! Memory that residual code allocates, and the Rust helpers it calls for
//! `Vec` and `HashMap` operations.
//!
//! Residual code does not know the layout of Rust's `Vec`; it calls these
//! helpers (the callback convention of [`crate::ir::builder::CallbackFn`]), which
//! run Rust's own code, panics included (a panic is carried out as a status
//! and resumed by the caller, so an index out of bounds gives Rust's message).
//! Objects that residual code allocates live in a per-thread arena until the
//! residual call that made them returns (`arena_mark` / `arena_release`).
//!
//! The helpers are `unsafe` to call, all for one reason, stated once here
//! rather than on each (hence the `missing_safety_doc` allowance): the
//! buffer must hold the words the helper's doc lists (`[arguments] ->
//! [results]`), and the addresses among them must be those of live objects
//! of the helper's types, as [`crate::ir::builder::CallbackFn`] says.
#![allow(clippy::missing_safety_doc)]

use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::Hash;

use crate::ir::ops::ValTy;
use crate::run::residual::{run_callback, Word};

thread_local! {
    /// Objects residual code made, each with its number in the order they
    /// were made (see [`arena_mark`]), in that order.
    static ARENA: RefCell<Vec<(u64, Box<dyn Any>)>> = const { RefCell::new(Vec::new()) };
    /// The number the next object made gets, where residual code reads it
    /// (a direct call frees what its callee left: see [`arena_len_cell`]).
    static ARENA_NEXT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The index in `a` of the object at `addr`, searched from the newest (an
/// object is mostly dropped or taken soon after it was made).
fn arena_find(a: &[(u64, Box<dyn Any>)], addr: u64) -> Option<usize> {
    a.iter().rposition(|(_, b)| std::ptr::addr_eq(&**b as *const dyn Any, addr as usize as *const u8))
}

/// The address of this thread's arena mark (the `u64` [`arena_mark`]
/// returns, which residual code reads: compiled code runs only in the
/// thread that compiled it). It grows at each object made, and only then.
pub fn arena_len_cell() -> *const u64 {
    ARENA_NEXT.with(|l| l.as_ptr() as *const u64)
}

/// [`arena_release`] as a callback: `[mark] -> []`.
pub unsafe extern "C" fn arena_release_to(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: one word.
        let mark = unsafe { args(buf, 1) }[0];
        arena_release(mark as usize);
        Ok(())
    })
}

/// The arena's mark now: pass it to [`arena_release`] when the residual
/// call that may allocate has returned. A mark is the number the next
/// object made gets, not a length: an object made before it and dropped
/// during the call (a frame residual code replaced) must not bring the
/// objects made after it below the mark, where the release would miss
/// them (they leaked, and so did what they held).
pub fn arena_mark() -> usize {
    ARENA_NEXT.with(|n| n.get()) as usize
}

/// How many objects the arena holds.
pub fn arena_len() -> usize {
    ARENA.with(|a| a.borrow().len())
}

/// Frees what residual code allocated since `mark` and did not drop.
pub fn arena_release(mark: usize) {
    let dropped: Vec<(u64, Box<dyn Any>)> = ARENA.with(|a| {
        let mut a = a.borrow_mut();
        let at = a.partition_point(|(k, _)| *k < mark as u64);
        a.split_off(at)
    });
    drop(dropped);
}

/// Moves the object at `addr` out of the arena, if residual code allocated
/// one of type `T` there (for a portal continuing in the interpreter with a
/// value residual code made).
pub fn arena_take<T: 'static>(addr: u64) -> Option<T> {
    ARENA.with(|a| {
        let mut a = a.borrow_mut();
        let i = arena_find(&a, addr)?;
        if !a[i].1.is::<T>() {
            return None;
        }
        let (_, b) = a.remove(i);
        b.downcast::<T>().ok().map(|b| *b)
    })
}

/// Moves the `Vec` at `addr` out, for a portal continuing in the
/// interpreter with a list moved there: out of the arena when residual code
/// made it there, else out of the place it is in (a field of an object it
/// was moved out of, which Rust's move semantics leave dead), which keeps an
/// empty `Vec`.
///
/// # Safety
/// `addr` must be the address of a live `Vec<T>` no one reads again
/// (residual code's real lists are addresses of live `Vec`s of their type).
pub unsafe fn take_vec<T: 'static>(addr: u64) -> Vec<T> {
    match arena_take::<Vec<T>>(addr) {
        Some(v) => v,
        // SAFETY: guaranteed by the caller.
        None => std::mem::take(unsafe { vec_at::<T>(addr) }),
    }
}

/// The `Vec` at `addr` as a value of its own, for a value rebuilt from
/// residual code's words (an enum's payload, a portal's result): moved out
/// of the arena when residual code made it there, else a copy of the one
/// in the place it is in. Such a place belongs to the interpreter: an
/// element or field residual code read in place, where Rust's code cloned
/// it (residual code treats a `clone` of a value as the value itself). The
/// place keeps its own, which its owner drops.
///
/// # Safety
/// `addr` must be the address of a live `Vec<T>`.
pub unsafe fn take_or_copy_vec<T: Clone + 'static>(addr: u64) -> Vec<T> {
    match arena_take::<Vec<T>>(addr) {
        Some(v) => v,
        // SAFETY: guaranteed by the caller.
        None => unsafe { vec_at::<T>(addr) }.clone(),
    }
}

/// The `String` at `addr` as a value of its own, as [`take_or_copy_vec`]
/// gives a `Vec`: out of the arena, else a copy of the interpreter's own.
///
/// # Safety
/// `addr` must be the address of a live `String`.
pub unsafe fn take_string(addr: u64) -> String {
    // SAFETY: guaranteed by the caller.
    unsafe { take_or_clone::<String>(addr) }
}

/// The value at `addr` as one of its own, as [`take_string`] gives a
/// `String`: out of the arena, else a clone of the interpreter's own (an
/// `Rc` residual code read in place: its count incremented).
///
/// # Safety
/// `addr` must be the address of a live `T`.
pub unsafe fn take_or_clone<T: Clone + 'static>(addr: u64) -> T {
    match arena_take::<T>(addr) {
        Some(v) => v,
        // SAFETY: guaranteed by the caller.
        None => unsafe { &*(addr as usize as *const T) }.clone(),
    }
}

/// An argument of a residual call made from the address of an object of
/// type `P` (an `Rc`) that compiled code holds, as the callee takes it
/// (Rust's inference picks the impl): `&P` by reference, or `P` as a value
/// of its own (see [`take_or_clone`]).
pub trait SharedArg<P>: Sized {
    /// The argument.
    ///
    /// # Safety
    /// `addr` must be the address of a live `P`, in the arena or in a
    /// place of the interpreter's that outlives the call.
    unsafe fn from_addr(addr: u64) -> Self;
}

impl<P: Clone + 'static> SharedArg<P> for P {
    unsafe fn from_addr(addr: u64) -> P {
        // SAFETY: guaranteed by the caller.
        unsafe { take_or_clone::<P>(addr) }
    }
}

impl<'a, P: 'static> SharedArg<P> for &'a P {
    unsafe fn from_addr(addr: u64) -> &'a P {
        // SAFETY: guaranteed by the caller.
        unsafe { &*(addr as usize as *const P) }
    }
}

/// Drops the object at `addr` if residual code made it in the arena (a
/// temporary string after its last use): `[addr] -> []`. An address the
/// arena does not hold (an object the interpreter owns) is left alone.
pub unsafe extern "C" fn arena_drop(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: one word.
        let addr = unsafe { args(buf, 1) }[0];
        let dropped = ARENA.with(|a| {
            let mut a = a.borrow_mut();
            let i = arena_find(&a, addr)?;
            Some(a.remove(i))
        });
        drop(dropped);
        Ok(())
    })
}

/// An interpreter's local handed to compiled code: moved into the arena
/// for the call, so that compiled code owns it (its `drop` of the object,
/// `arena_drop`, is Rust's drop of the local), and taken back after it
/// where compiled code did not drop it.
pub struct Handed<T: 'static>(*mut T);

impl<T: 'static> Handed<T> {
    /// Moves `v` into the arena.
    pub fn new(v: T) -> Self {
        Handed(arena_alloc(v))
    }

    /// The object, for the call.
    pub fn get(&mut self) -> &mut T {
        // SAFETY: the arena holds it until `back` or an `arena_drop` of
        // compiled code, which cannot outlive the call this is given to.
        unsafe { &mut *self.0 }
    }

    /// The object after the call, unless compiled code dropped it.
    pub fn back(self) -> Option<T> {
        arena_take::<T>(self.0 as usize as u64)
    }
}

/// The result of a method the analysis knows only by its use, as
/// `Option<T>` of a plain value `T` (scalars, enums of them, handles):
/// Rust's method may give `Option<T>` or `Option<&T>` (`Some(&v)` in the
/// interpreter's pattern). Either reads out as `Option<T>`; the second by
/// copying its bits, which is what the interpreter's copy did, as for a
/// map's values read out by copy.
pub trait OptionRead<T> {
    /// The value, read out.
    fn read_out(self) -> Option<T>;
}

impl<T> OptionRead<T> for Option<T> {
    fn read_out(self) -> Option<T> {
        self
    }
}

impl<T> OptionRead<T> for Option<&T> {
    fn read_out(self) -> Option<T> {
        // SAFETY: the generated code asks this only for plain values,
        // whose bits are a copy (see above).
        self.map(|v| unsafe { std::ptr::read(v) })
    }
}

/// Moves a value into the arena; returns its (stable) address.
pub fn arena_alloc<T: 'static>(v: T) -> *mut T {
    let mut b = Box::new(v);
    let p: *mut T = &mut *b;
    let k = ARENA_NEXT.with(|n| n.replace(n.get() + 1));
    ARENA.with(|a| a.borrow_mut().push((k, b)));
    p
}

/// A `Copy` value made once per type and words, and kept for the life of
/// the process: the `&'static` a green handle in an enum's words stands
/// for (`Value::Obj(ObjRef(7))` read from a program's constants), which
/// compiled code may hold. As many are kept as distinct values are met.
pub fn green_copy<T: Copy + 'static>(words: &[u64], make: impl FnOnce() -> T) -> &'static T {
    type Kept = HashMap<(std::any::TypeId, Vec<u64>), usize>;
    static KEPT: std::sync::Mutex<Option<Kept>> = std::sync::Mutex::new(None);
    let key = (std::any::TypeId::of::<T>(), words.to_vec());
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    let at = *kept
        .get_or_insert_with(HashMap::new)
        .entry(key)
        .or_insert_with(|| Box::leak(Box::new(make())) as *const T as usize);
    // SAFETY: the address of a `T` leaked above for this type and words,
    // never freed or written.
    unsafe { &*(at as *const T) }
}

/// Where an `Rc<T>` keeps its `T`: the byte offset from the one word an
/// `Rc` is (the address of its allocation) to the value, measured on this
/// build (Rust does not specify it) on an allocation of a `T`'s size and
/// alignment. `None` when an `Rc` is not one word: residual code then
/// cannot read through it.
pub fn rc_value_offset<T>() -> Option<i32> {
    use std::mem::MaybeUninit;
    use std::rc::Rc;
    shared_offset(Rc::new(MaybeUninit::<T>::uninit()), |r| Rc::as_ptr(r) as usize)
}

/// Where an `Arc<T>` keeps its `T` (see [`rc_value_offset`]).
pub fn arc_value_offset<T>() -> Option<i32> {
    use std::mem::MaybeUninit;
    use std::sync::Arc;
    shared_offset(Arc::new(MaybeUninit::<T>::uninit()), |r| Arc::as_ptr(r) as usize)
}

/// The offset from the word `p` is to the value it points to (`value_at`).
fn shared_offset<P>(p: P, value_at: impl Fn(&P) -> usize) -> Option<i32> {
    if std::mem::size_of::<P>() != std::mem::size_of::<usize>() {
        return None;
    }
    // SAFETY: `p` is one word (checked above), read as an integer.
    let word = unsafe { std::ptr::read(&p as *const P as *const usize) };
    let off = value_at(&p).checked_sub(word)?;
    i32::try_from(off).ok().filter(|o| *o <= 256)
}

/// Where a `Vec<T>` keeps its buffer pointer and its length: byte offsets
/// into the `Vec`, measured on this build (Rust does not specify the layout).
/// `None` when the measurement is not conclusive: residual code then calls
/// the helpers below instead of reading the fields.
pub fn vec_layout<T>() -> Option<(i32, i32)> {
    vec_header::<T>().map(|h| (h.ptr, h.len))
}

/// Where a reference to a slice or `str` (`&[T]`, `&str`) keeps its address
/// and its length: byte offsets into the reference, measured on this build
/// (Rust does not specify the layout of a wide pointer). `None` when the
/// measurement is not conclusive.
pub fn slice_ref_layout() -> Option<(i32, i32)> {
    let data = [7u8; 3];
    let s: &[u8] = &data[..2];
    // SAFETY: a wide pointer is two words (checked by `transmute`'s sizes).
    let words: [usize; 2] = unsafe { std::mem::transmute::<&[u8], [usize; 2]>(s) };
    match words {
        [p, 2] if p == s.as_ptr() as usize => Some((0, 8)),
        [2, p] if p == s.as_ptr() as usize => Some((8, 0)),
        _ => None,
    }
}

/// Where a `Box<[T]>` keeps its address and its length, as
/// [`slice_ref_layout`] measures a `&[T]`.
pub fn boxed_slice_layout() -> Option<(i32, i32)> {
    let b: Box<[u8]> = vec![7u8; 2].into_boxed_slice();
    let p = b.as_ptr() as usize;
    // SAFETY: a boxed slice is two words (checked by `transmute`'s sizes);
    // the words are read, and the box is made again from them to be freed.
    let words: [usize; 2] = unsafe { std::mem::transmute::<Box<[u8]>, [usize; 2]>(b) };
    let found = match words {
        [q, 2] if q == p => Some((0, 8)),
        [2, q] if q == p => Some((8, 0)),
        _ => None,
    };
    // SAFETY: the same words, back into the box they were.
    drop(unsafe { std::mem::transmute::<[usize; 2], Box<[u8]>>(words) });
    found
}

/// The byte offsets of a `Vec`'s three words (see [`vec_layout`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VecHeader {
    /// The buffer pointer.
    pub ptr: i32,
    /// The length.
    pub len: i32,
    /// The capacity.
    pub cap: i32,
}

/// Where a `Vec<T>` keeps its buffer pointer, length and capacity
/// (measured as [`vec_layout`] is).
pub fn vec_header<T>() -> Option<VecHeader> {
    let w = std::mem::size_of::<usize>();
    if std::mem::size_of::<Vec<T>>() != 3 * w || std::mem::size_of::<T>() == 0 {
        return None;
    }
    let v: Vec<T> = Vec::with_capacity(3);
    // SAFETY: a Vec of three words is plain memory; reading it as words
    // copies its bit pattern and leaves `v` untouched.
    let words: [usize; 3] = unsafe { std::mem::transmute_copy(&v) };
    let (ptr, cap) = (v.as_ptr() as usize, v.capacity());
    let at = |x: usize| words.iter().position(|y| *y == x);
    let (p, c, l) = (at(ptr)?, at(cap)?, at(0)?);
    if p == c || p == l || c == l || ptr == 0 || cap == 0 {
        return None;
    }
    Some(VecHeader { ptr: (p * w) as i32, len: (l * w) as i32, cap: (c * w) as i32 })
}

/// `v.reserve(1)`: `[addr] -> []` (compiled pushes call it when full).
pub unsafe extern "C" fn vec_reserve_one<T: 'static>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: one word; the address is a live Vec<T>.
        let b = unsafe { args(buf, 1) };
        unsafe { vec_at::<T>(b[0]) }.reserve(1);
        Ok(())
    })
}

/// What residual code may read where a pop finds its `Vec` empty (it reads
/// before it knows, and the values are not used): room for an element of
/// up to [`EMPTY_POP_BYTES`] bytes.
pub static EMPTY_POP_WORDS: [u64; EMPTY_POP_BYTES / 8] = [0; EMPTY_POP_BYTES / 8];

/// The size of [`EMPTY_POP_WORDS`].
pub const EMPTY_POP_BYTES: usize = 64;

/// Reads the argument buffer of a callback.
///
/// # Safety
/// `buf` must point to at least `n` words.
unsafe fn args<'b>(buf: *mut u64, n: usize) -> &'b mut [u64] {
    // SAFETY: guaranteed by the caller (residual code passes a buffer of
    // max(arguments, results, 1) words).
    unsafe { std::slice::from_raw_parts_mut(buf, n) }
}

/// # Safety
/// `addr` must be the address of a live `Vec<T>`.
unsafe fn vec_at<'v, T>(addr: u64) -> &'v mut Vec<T> {
    // SAFETY: guaranteed by the caller: residual code only holds addresses of
    // the interpreter's live vectors and of arena objects.
    unsafe { &mut *(addr as usize as *mut Vec<T>) }
}

/// `Vec::new()`: `[] -> [addr]`.
pub unsafe extern "C" fn vec_new<T: Word + 'static>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: one result word.
        let b = unsafe { args(buf, 1) };
        b[0] = arena_alloc(Vec::<T>::new()) as usize as u64;
        Ok(())
    })
}

/// `Vec::new()` of values residual code does not hold as words (enums
/// owning strings): `[] -> [addr]`, worked on by residual calls of `Vec`'s
/// own methods.
pub unsafe extern "C" fn vec_new_objects<T: 'static>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: one result word.
        let b = unsafe { args(buf, 1) };
        b[0] = arena_alloc(Vec::<T>::new()) as usize as u64;
        Ok(())
    })
}

/// `vec![elem; n]`: `[elem, n] -> [addr]`.
pub unsafe extern "C" fn vec_new_repeat<T: Word + 'static>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: two argument words.
        let b = unsafe { args(buf, 2) };
        let v = vec![T::from_word(b[0]); b[1] as usize];
        b[0] = arena_alloc(v) as usize as u64;
        Ok(())
    })
}

/// Writes back a virtual list into a `Vec` the interpreter owns (a field of
/// a virtualizable object): `[dest, n, e0, .. e(n-1)] -> []`.
pub unsafe extern "C" fn vec_store<T: Word>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: two words, then `n` more; the address is a live Vec<T>.
        let n = unsafe { args(buf, 2) }[1] as usize;
        let b = unsafe { args(buf, 2 + n) };
        let v = unsafe { vec_at::<T>(b[0]) };
        v.clear();
        v.extend(b[2..].iter().map(|w| T::from_word(*w)));
        Ok(())
    })
}

/// Appends elements to a `Vec` (a list's tail moved into memory):
/// `[dest, n, e0, .. e(n-1)] -> []`.
pub unsafe extern "C" fn vec_extend<T: Word>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: two words, then `n` more; the address is a live Vec<T>.
        let n = unsafe { args(buf, 2) }[1] as usize;
        let b = unsafe { args(buf, 2 + n) };
        let v = unsafe { vec_at::<T>(b[0]) };
        v.extend(b[2..].iter().map(|w| T::from_word(*w)));
        Ok(())
    })
}

/// `*dest = (*src).clone()`: Rust's own clone of a value into a place, its
/// old value dropped (a field of a frame holding an `Rc`, assigned a
/// clone of another frame): `[dest, src] -> []`. Nothing when they are the
/// same place.
pub unsafe extern "C" fn clone_into<T: Clone + 'static>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: two words; both addresses are of live `T`s.
        let b = unsafe { args(buf, 2) };
        if b[0] != b[1] {
            let v = unsafe { &*(b[1] as usize as *const T) }.clone();
            *unsafe { &mut *(b[0] as usize as *mut T) } = v;
        }
        Ok(())
    })
}

/// Whether residual code may change the counts of a `T` in place: `T` is
/// std's `Rc` of a sized type, one word holding the address of its shared
/// block, whose first word is the strong count. std declares that block
/// `repr(C)` (strong count, weak count, value); this build of std is
/// checked once, on an `Rc<u64>`, and where the name or the check
/// disagrees every clone is Rust's own ([`clone_into`]).
pub fn rc_counts_in_place<T>() -> bool {
    use std::sync::OnceLock;
    static CHECKED: OnceLock<bool> = OnceLock::new();
    std::mem::size_of::<T>() == 8
        && std::any::type_name::<T>().starts_with("alloc::rc::Rc<")
        && *CHECKED.get_or_init(|| {
            let a = std::rc::Rc::new(7u64);
            // SAFETY: an `Rc` of a sized type is one word (checked above
            // for `T`, and `Rc<u64>` is such an `Rc`).
            let block = unsafe { std::mem::transmute_copy::<std::rc::Rc<u64>, usize>(&a) };
            // SAFETY: the block is live while `a` is; its first word is read
            // only if it is aligned for a word, which a heap block is.
            let strong = || unsafe { *(block as *const usize) };
            let b = a.clone();
            let two = strong() == 2;
            drop(b);
            two && strong() == 1 && std::rc::Rc::strong_count(&a) == 1
        })
}

/// The strong count of an `Rc` `T` went from one to zero in residual code
/// ([`rc_counts_in_place`]): puts it back at one and drops the `Rc` as
/// Rust does, its value and then its block freed: `[rc] -> []`, `rc` the
/// `Rc`'s word.
pub unsafe extern "C" fn rc_drop_last<T: 'static>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: one word, the word of a live `Rc` whose count residual
        // code took from one to zero without dropping it; `T` is that
        // `Rc`'s type, one word (`rc_counts_in_place`).
        let b = unsafe { args(buf, 1) };
        unsafe { *(b[0] as usize as *mut usize) = 1 };
        drop(unsafe { std::mem::transmute_copy::<u64, T>(&b[0]) });
        Ok(())
    })
}

/// Moves a real `Vec` into another place (`*dest = take(src)`; nothing when
/// they are the same): `[dest, src] -> []`.
pub unsafe extern "C" fn vec_move<T: 'static>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: two words; both addresses are live Vec<T>s.
        let b = unsafe { args(buf, 2) };
        if b[0] != b[1] {
            let src = std::mem::take(unsafe { vec_at::<T>(b[1]) });
            *unsafe { vec_at::<T>(b[0]) } = src;
        }
        Ok(())
    })
}

/// `v.len()`: `[addr] -> [len]`.
pub unsafe extern "C" fn vec_len<T>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: one word; the address is a live Vec<T>.
        let b = unsafe { args(buf, 1) };
        b[0] = unsafe { vec_at::<T>(b[0]) }.len() as u64;
        Ok(())
    })
}

/// `v[i]`: `[addr, i] -> [elem]` (panics as Rust does when out of bounds).
pub unsafe extern "C" fn vec_get<T: Word>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: two words; the address is a live Vec<T>.
        let b = unsafe { args(buf, 2) };
        let v = unsafe { vec_at::<T>(b[0]) };
        b[0] = v[b[1] as usize].to_word();
        Ok(())
    })
}

/// `v[i] = x`: `[addr, i, x] -> []`.
pub unsafe extern "C" fn vec_set<T: Word>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: three words; the address is a live Vec<T>.
        let b = unsafe { args(buf, 3) };
        let v = unsafe { vec_at::<T>(b[0]) };
        v[b[1] as usize] = T::from_word(b[2]);
        Ok(())
    })
}

/// `v.push(x)`: `[addr, x] -> []`.
pub unsafe extern "C" fn vec_push<T: Word>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: two words; the address is a live Vec<T>.
        let b = unsafe { args(buf, 2) };
        unsafe { vec_at::<T>(b[0]) }.push(T::from_word(b[1]));
        Ok(())
    })
}

/// `v.pop()`: `[addr] -> [tag (0 None, 1 Some), elem]`.
pub unsafe extern "C" fn vec_pop<T: Word>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: two words (results); the address is a live Vec<T>.
        let b = unsafe { args(buf, 2) };
        match unsafe { vec_at::<T>(b[0]) }.pop() {
            Some(x) => {
                b[0] = 1;
                b[1] = x.to_word();
            }
            None => {
                b[0] = 0;
                b[1] = 0;
            }
        }
        Ok(())
    })
}

/// An element type residual code sees as `N` words: a plain enum in its
/// flattened layout (tag, then every variant's payload slots). The macro
/// implements it on a marker type per enum, so that the element type itself
/// may be foreign (`Option<i64>`).
pub trait Flat: 'static {
    /// The element type.
    type T: 'static;
    /// Its number of words.
    const N: usize;
    /// Writes the words of `v` into `out[..N]`.
    fn flat(v: &Self::T, out: &mut [u64]);
    /// The value of the words `w[..N]` (as `flat` wrote them).
    fn unflat(w: &[u64]) -> Self::T;
    /// Where the tag and the payload slots are in memory, when measured
    /// (see [`enum_layout`]): residual code then reads and writes elements
    /// in place instead of calling the helpers below.
    fn layout() -> Option<&'static EnumLayout> {
        None
    }
}

/// The measured layout of a plain enum: the tag and each payload slot of
/// the flattened form, as byte offsets into a value.
#[derive(Clone, Debug)]
pub struct EnumLayout {
    /// `size_of::<T>()`.
    pub size: u64,
    /// Where the tag is, and its width (an unsigned integer type).
    pub tag: (i32, ValTy),
    /// For each flattened slot after the tag: its offset and type.
    pub slots: Vec<(i32, ValTy)>,
    /// For each flattened slot after the tag: the variant it belongs to.
    pub slot_variant: Vec<usize>,
}

impl EnumLayout {
    /// How to write the tag into fresh memory (a push): the widest unsigned
    /// integer of at most 8 bytes at its offset, aligned and within the
    /// value, zero-extended. Rust may keep the tag wider than the narrowest
    /// one that reads it (filling the padding before the payload), and reads
    /// it whole (a derived `PartialEq` compares tags so): a narrow store
    /// into fresh memory leaves the rest of it undefined. Bytes past the
    /// real tag are padding, or a payload slot written after the tag. Over a
    /// valid value (a set), the narrow store is enough: the rest of a wider
    /// tag is already zero.
    pub fn tag_store(&self) -> (i32, ValTy) {
        let off = self.tag.0 as u64;
        let w = [8u64, 4, 2, 1]
            .into_iter()
            .find(|w| off % w == 0 && off + w <= self.size && *w >= (self.tag.1.bits() / 8) as u64)
            .unwrap_or((self.tag.1.bits() / 8) as u64);
        (self.tag.0, ValTy::Int { bits: (w * 8) as u8, signed: false })
    }

    /// Whether no two slots share a byte, and none shares one with the
    /// tag: then a value whose variant is known only at run time can be
    /// written whole, its tag and every slot (those of the other variants
    /// land on bytes that are padding for its own).
    pub fn slots_apart(&self) -> bool {
        let bytes = |(at, ty): (i32, ValTy)| (at as i64, at as i64 + (ty.bits() / 8).max(1) as i64);
        let all: Vec<(i64, i64)> =
            std::iter::once(bytes(self.tag)).chain(self.slots.iter().map(|s| bytes(*s))).collect();
        all.iter().enumerate().all(|(i, a)| all[i + 1..].iter().all(|b| a.1 <= b.0 || b.1 <= a.0))
    }
}

/// The bytes of `v` written over a buffer filled with `fill`.
fn bytes_over<T>(v: T, fill: u8) -> Vec<u8> {
    let n = std::mem::size_of::<T>();
    let mut buf = vec![fill; n.max(1)];
    // SAFETY: the buffer has room for a T (unaligned write); it is then only
    // read as bytes and never dropped as a T (`v` is plain: no destructor).
    unsafe { std::ptr::write_unaligned(buf.as_mut_ptr() as *mut T, v) };
    buf
}

/// Reads a canonical word of type `ty` at `off` in `b`.
fn read_word(b: &[u8], off: usize, ty: ValTy) -> Option<u64> {
    let n = (ty.bits() / 8) as usize;
    let mut w = [0u8; 8];
    w[..n].copy_from_slice(b.get(off..off + n)?);
    Some(ty.canon(u64::from_le_bytes(w)))
}

/// Measures where a plain enum keeps its tag and payloads (Rust does not
/// specify it): `tys` are the flattened slots' types, `ranges` each
/// variant's slots. `None` unless the tag is an unsigned integer equal to
/// the variant's index at one offset, each payload slot has its own bytes,
/// and reading values of every variant with sample payloads that way gives
/// back their flattened words; residual code then calls the helpers.
pub fn enum_layout<F: Flat>(tys: &[ValTy], ranges: &[(usize, usize)]) -> Option<EnumLayout> {
    let size = std::mem::size_of::<F::T>();
    if tys.len() != F::N || tys.iter().any(|t| *t == ValTy::Ptr) || size == 0 {
        return None;
    }
    let mut slot_variant = vec![usize::MAX; F::N];
    for (k, (a, b)) in ranges.iter().enumerate() {
        for v in slot_variant.iter_mut().take(*b).skip(*a) {
            *v = k;
        }
    }
    let value = |k: usize, slots: &[(usize, u64)]| {
        let mut w = vec![0u64; F::N];
        w[0] = k as u64;
        for (s, x) in slots {
            w[*s] = tys[*s].canon(*x);
        }
        F::unflat(&w)
    };
    // Samples of every variant: their bytes (padding holds whatever the
    // copy brought) and their words.
    let patterns = [0u64, 1, u64::MAX, 0x8000_0000_0000_0000, 0x7FFF_FFFF_FFFF_FFFF, 0x1234_5678_9ABC_DEF0, 0xFF, 0x80];
    let mut samples: Vec<(usize, Vec<u8>, Vec<u64>)> = vec![];
    for (k, (a, b)) in ranges.iter().enumerate() {
        for j in 0..16usize {
            let payload: Vec<(usize, u64)> =
                (*a..*b).map(|s| (s, patterns[(j + s) % patterns.len()].rotate_left((j * 7 + s) as u32))).collect();
            let mut want = vec![0u64; F::N];
            F::flat(&value(k, &payload), &mut want);
            if want[0] != k as u64 {
                return None;
            }
            samples.push((k, bytes_over(value(k, &payload), if j % 2 == 0 { 0 } else { 0xFF }), want));
        }
    }
    let reads_as = |off: usize, ty: ValTy, which: &dyn Fn(usize) -> bool, slot: usize| {
        samples.iter().filter(|(k, _, _)| which(*k)).all(|(_, b, w)| read_word(b, off, ty) == Some(w[slot]))
    };
    // The tag: the narrowest unsigned integer at one offset that reads as the
    // variant's index in every sample.
    let mut tag = None;
    for len in [1usize, 2, 4] {
        let ty = ValTy::Int { bits: (len * 8) as u8, signed: false };
        let fits: Vec<usize> = (0..size).step_by(len).filter(|off| reads_as(*off, ty, &|_| true, 0)).collect();
        match fits.as_slice() {
            [] => continue,
            [off] => {
                tag = Some((*off, len, ty));
                break;
            }
            _ => return None,
        }
    }
    let (tag_off, tag_len, tag_ty) = tag?;
    // Each payload slot: the one offset where it reads as its word in every
    // sample of its variant.
    let mut slots = vec![(0i32, ValTy::U8); F::N];
    for s in 1..F::N {
        let k = slot_variant[s];
        let ty = tys[s];
        let n = (ty.bits() / 8) as usize;
        let fits: Vec<usize> = (0..size)
            .step_by(n)
            .filter(|off| off + n <= tag_off || *off >= tag_off + tag_len)
            .filter(|off| reads_as(*off, ty, &|v| v == k, s))
            .collect();
        match fits.as_slice() {
            [off] => slots[s] = (*off as i32, ty),
            _ => return None,
        }
    }
    Some(EnumLayout {
        size: size as u64,
        tag: (tag_off as i32, tag_ty),
        slots: slots[1..].to_vec(),
        slot_variant: slot_variant[1..].to_vec(),
    })
}

/// `v.len()` of a `Vec` of any element type: `[addr] -> [len]`.
pub unsafe extern "C" fn flat_vec_len<F: Flat>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: one word; the address is a live Vec<F::T>.
        let b = unsafe { args(buf, 1) };
        b[0] = unsafe { vec_at::<F::T>(b[0]) }.len() as u64;
        Ok(())
    })
}

/// `v[i]`: `[addr, i] -> [w0 .. wN-1]`; an index out of bounds is an error.
pub unsafe extern "C" fn flat_vec_get<F: Flat>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: max(2, N) words; the address is a live Vec<F::T>.
        let b = unsafe { args(buf, F::N.max(2)) };
        let v = unsafe { vec_at::<F::T>(b[0]) };
        let x = v.get(b[1] as usize).ok_or(crate::ir::ops::ErrorKind::IndexOutOfBounds)?;
        F::flat(x, &mut b[..F::N]);
        Ok(())
    })
}

/// `v[i] = x`: `[addr, i, w0 .. wN-1] -> []`; out of bounds is an error.
pub unsafe extern "C" fn flat_vec_set<F: Flat>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: 2 + N words; the address is a live Vec<F::T>.
        let b = unsafe { args(buf, 2 + F::N) };
        let v = unsafe { vec_at::<F::T>(b[0]) };
        let slot = v.get_mut(b[1] as usize).ok_or(crate::ir::ops::ErrorKind::IndexOutOfBounds)?;
        *slot = F::unflat(&b[2..]);
        Ok(())
    })
}

/// `*p` of an enum at an address (an element of an array, bounds-checked
/// already): `[p] -> [w0 .. wN-1]`.
pub unsafe extern "C" fn flat_load_at<F: Flat>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: max(1, N) words; the address is a live F::T.
        let b = unsafe { args(buf, F::N.max(1)) };
        let x = unsafe { &*(b[0] as usize as *const F::T) };
        F::flat(x, &mut b[..F::N]);
        Ok(())
    })
}

/// `*p = x` of an enum at an address (an element of an array,
/// bounds-checked already): `[p, w0 .. wN-1] -> []`.
pub unsafe extern "C" fn flat_store_at<F: Flat>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: 1 + N words; the address is a live F::T.
        let b = unsafe { args(buf, 1 + F::N) };
        *unsafe { &mut *(b[0] as usize as *mut F::T) } = F::unflat(&b[1..]);
        Ok(())
    })
}

/// `v.push(x)`: `[addr, w0 .. wN-1] -> []`.
pub unsafe extern "C" fn flat_vec_push<F: Flat>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: 1 + N words; the address is a live Vec<F::T>.
        let b = unsafe { args(buf, 1 + F::N) };
        unsafe { vec_at::<F::T>(b[0]) }.push(F::unflat(&b[1..]));
        Ok(())
    })
}

/// `v.pop()`: `[addr] -> [tag (0 None, 1 Some), w0 .. wN-1]`.
pub unsafe extern "C" fn flat_vec_pop<F: Flat>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: 1 + N words (results); the address is a live Vec<F::T>.
        let b = unsafe { args(buf, 1 + F::N) };
        match unsafe { vec_at::<F::T>(b[0]) }.pop() {
            Some(x) => {
                b[0] = 1;
                F::flat(&x, &mut b[1..]);
            }
            None => b.fill(0),
        }
        Ok(())
    })
}

/// A new `Vec` of `n` elements (a virtual list forced):
/// `[n, e0 words .. e(n-1) words] -> [addr]`.
pub unsafe extern "C" fn flat_vec_new<F: Flat>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: one word, then n * N more.
        let n = unsafe { args(buf, 1) }[0] as usize;
        let b = unsafe { args(buf, 1 + n * F::N) };
        let v: Vec<F::T> = b[1..].chunks(F::N.max(1)).take(n).map(F::unflat).collect();
        b[0] = arena_alloc(v) as usize as u64;
        Ok(())
    })
}

/// Writes a virtual list into a `Vec` field of an object:
/// `[dest, n, e0 words .. e(n-1) words] -> []`.
pub unsafe extern "C" fn flat_vec_store<F: Flat>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: two words, then n * N more; the address is a live Vec<F::T>.
        let n = unsafe { args(buf, 2) }[1] as usize;
        let b = unsafe { args(buf, 2 + n * F::N) };
        let v = unsafe { vec_at::<F::T>(b[0]) };
        v.clear();
        v.extend(b[2..].chunks(F::N.max(1)).take(n).map(F::unflat));
        Ok(())
    })
}

/// `v.push(x)` of an object residual code made: `[addr, obj] -> []`, the
/// object moved out of the arena (an object elsewhere cannot be moved).
pub unsafe extern "C" fn vec_push_moved<T: 'static>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: two words; the address is a live Vec<T>.
        let b = unsafe { args(buf, 2) };
        let x = arena_take::<T>(b[1]).expect("jitgen: only objects residual code made can be moved into a Vec");
        unsafe { vec_at::<T>(b[0]) }.push(x);
        Ok(())
    })
}

/// `v.pop()` of a `Vec` of objects: `[addr] -> [tag (0 None, 1 Some), obj]`,
/// the object moved into the arena.
pub unsafe extern "C" fn vec_pop_moved<T: 'static>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: two words; the address is a live Vec<T>.
        let b = unsafe { args(buf, 2) };
        match unsafe { vec_at::<T>(b[0]) }.pop() {
            Some(x) => {
                b[0] = 1;
                b[1] = arena_alloc(x) as usize as u64;
            }
            None => b.fill(0),
        }
        Ok(())
    })
}

/// # Safety
/// `addr` must be the address of a live `HashMap<K, V>`.
unsafe fn map_at<'m, K, V>(addr: u64) -> &'m mut HashMap<K, V> {
    // SAFETY: guaranteed by the caller, as for `vec_at`.
    unsafe { &mut *(addr as usize as *mut HashMap<K, V>) }
}

/// Writes an `Option<V>` as `[tag (0 None, 1 Some), value]`.
fn put_option<V: Word>(b: &mut [u64], v: Option<V>) {
    match v {
        Some(x) => {
            b[0] = 1;
            b[1] = x.to_word();
        }
        None => {
            b[0] = 0;
            b[1] = 0;
        }
    }
}

/// `HashMap::new()`: `[] -> [addr]`.
pub unsafe extern "C" fn map_new<K: Word + Hash + Eq + 'static, V: Word + 'static>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: one result word.
        let b = unsafe { args(buf, 1) };
        b[0] = arena_alloc(HashMap::<K, V>::new()) as usize as u64;
        Ok(())
    })
}

/// `m.insert(k, v)`: `[addr, k, v] -> [tag, old]`.
pub unsafe extern "C" fn map_insert<K: Word + Hash + Eq, V: Word>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: three words; the address is a live HashMap<K, V>.
        let b = unsafe { args(buf, 3) };
        let m = unsafe { map_at::<K, V>(b[0]) };
        let old = m.insert(K::from_word(b[1]), V::from_word(b[2]));
        put_option(b, old);
        Ok(())
    })
}

/// `m.get(&k).copied()`: `[addr, k] -> [tag, value]`.
pub unsafe extern "C" fn map_get<K: Word + Hash + Eq, V: Word>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: two words; the address is a live HashMap<K, V>.
        let b = unsafe { args(buf, 2) };
        let m = unsafe { map_at::<K, V>(b[0]) };
        let v = m.get(&K::from_word(b[1])).copied();
        put_option(b, v);
        Ok(())
    })
}

/// `m.remove(&k)`: `[addr, k] -> [tag, value]`.
pub unsafe extern "C" fn map_remove<K: Word + Hash + Eq, V: Word>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: two words; the address is a live HashMap<K, V>.
        let b = unsafe { args(buf, 2) };
        let m = unsafe { map_at::<K, V>(b[0]) };
        let v = m.remove(&K::from_word(b[1]));
        put_option(b, v);
        Ok(())
    })
}

/// `m.contains_key(&k)`: `[addr, k] -> [bool]`.
pub unsafe extern "C" fn map_contains<K: Word + Hash + Eq, V: Word>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: two words; the address is a live HashMap<K, V>.
        let b = unsafe { args(buf, 2) };
        let m = unsafe { map_at::<K, V>(b[0]) };
        b[0] = m.contains_key(&K::from_word(b[1])) as u64;
        Ok(())
    })
}

/// `m.len()`: `[addr] -> [len]`.
pub unsafe extern "C" fn map_len<K: Word + Hash + Eq, V: Word>(buf: *mut u64) -> u64 {
    run_callback(|| {
        // SAFETY: one word; the address is a live HashMap<K, V>.
        let b = unsafe { args(buf, 1) };
        b[0] = unsafe { map_at::<K, V>(b[0]) }.len() as u64;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Objects are taken newest first without growing the arena, older ones
    /// by address, and a wrong type or an unknown address takes nothing.
    #[test]
    fn arena_take_finds_objects_and_frees_the_newest_slot() {
        let (mark, before) = (arena_mark(), arena_len());
        let old = arena_alloc(7i64) as usize as u64;
        for k in 0..10_000i64 {
            let p = arena_alloc(k) as usize as u64;
            assert_eq!(arena_take::<i64>(p), Some(k));
        }
        assert_eq!(arena_len(), before + 1, "each newest object left no slot behind");
        let newer = arena_alloc(8u32) as usize as u64;
        assert_eq!(arena_take::<u32>(old), None, "a wrong type");
        assert_eq!(arena_take::<i64>(old), Some(7));
        assert_eq!(arena_take::<i64>(old), None, "taken already");
        assert_eq!(arena_take::<u32>(newer), Some(8));
        arena_release(mark);
        assert_eq!(arena_len(), before);
    }

    /// An object made before a mark and dropped after it (a frame that
    /// residual code replaced) leaves the objects made after the mark
    /// above it: the release frees them (it missed them when marks were
    /// lengths, and what they held leaked).
    #[test]
    fn a_release_frees_what_was_made_after_its_mark_whatever_was_dropped() {
        let before = arena_len();
        let counted = std::rc::Rc::new(());
        let handed = arena_alloc(counted.clone()) as usize as u64;
        let mark = arena_mark();
        arena_alloc(counted.clone());
        // SAFETY: one word, the address of an object of the arena.
        let mut buf = [handed];
        assert_eq!(unsafe { arena_drop(buf.as_mut_ptr()) }, 0);
        assert_eq!(std::rc::Rc::strong_count(&counted), 2);
        arena_release(mark);
        assert_eq!(std::rc::Rc::strong_count(&counted), 1, "the object made after the mark is freed");
        assert_eq!(arena_len(), before);
    }
}

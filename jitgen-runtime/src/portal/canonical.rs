//! Green data made canonical: one copy per content, kept for good.
//!
//! Compiled code is cached by the addresses of the green data it was
//! specialized on, and may hold them (`driver::PortalCache`). A machine built
//! afresh for each run (`Vm::new(program.clone())`) gets its program in a new
//! buffer, often at an address no earlier run had: keyed by that address,
//! every run would count, compile and fill in its flexswitches again, and
//! never run warm code. So before a portal's hook keys a visit, it replaces
//! each green sequence of plain values (integers, text, and the module's
//! enums and structs made only of such values) by its *canonical copy*: a
//! copy made the first time that content is seen, never freed and never
//! written. Keys, content checks, compiled code and the states its
//! flexswitches keep then name the copy, and a new buffer holding the same
//! program finds the code compiled for the last one.
//!
//! The copy of a sequence of flat values is bitwise; the macro asks for one
//! only for element types whose bitwise copy is a value of its own that
//! owns nothing (no pointer, no `Vec`, no `String`, nothing from outside
//! the module), so a copy is valid and never needs dropping. Green data that
//! owns only such values (a program of `Vec`s and `String`s) is copied by a
//! generated function that copies each buffer ([`deep`]); its content is
//! taken without the addresses of its buffers. Green data is frozen while a portal call reads
//! it (DESIGN.md section 6): within one call, a buffer once made canonical
//! maps to its copy without reading its content again ([`Seen`]), but a
//! buffer of integers or text is compared with its copy at each visit, as
//! its content was before. Copies are bounded per thread
//! ([`MAX_COPIES`], [`MAX_BYTES`]); past the bound, green data is used
//! where it is, keyed by its address.
//!
//! Architecture Invariant: a canonical copy is never freed and never
//! written, and it equals, in content, the data it stands for in the call
//! that uses it.

use std::any::TypeId;
use std::cell::RefCell;

use rustc_hash::{FxHashMap, FxHashSet};

/// Canonical copies one thread keeps at most.
pub const MAX_COPIES: usize = 1024;

/// Bytes of canonical copies one thread keeps at most.
pub const MAX_BYTES: usize = 16 << 20;

/// Buffers one portal call remembers having made canonical.
const SEEN: usize = 16;

/// What one portal call has made canonical: the address and length of
/// what it was given, and the address of the copy standing for it (the
/// given address where it is used in place).
#[derive(Default)]
pub struct Seen(Vec<(usize, usize, usize)>);

impl Seen {
    /// Nothing seen yet.
    pub const fn new() -> Seen {
        Seen(Vec::new())
    }

    fn find(&self, at: (usize, usize)) -> Option<usize> {
        self.0.iter().find(|e| (e.0, e.1) == at).map(|e| e.2)
    }

    fn remember(&mut self, at: (usize, usize), copy: usize) {
        if self.0.len() == SEEN {
            self.0.remove(0);
        }
        self.0.push((at.0, at.1, copy));
    }

    fn forget(&mut self, at: (usize, usize)) {
        self.0.retain(|e| (e.0, e.1) != at);
    }
}

/// The canonical copies of one thread.
#[derive(Default)]
struct Copies {
    /// Copy addresses by element type, kind and content.
    by_content: FxHashMap<(TypeId, Vec<u8>), usize>,
    /// (address, length) of every copy: data handed over already canonical.
    copies: FxHashSet<(usize, usize)>,
    bytes: usize,
}

thread_local! {
    static COPIES: RefCell<Copies> = RefCell::new(Copies::default());
}

/// How many canonical copies this thread keeps, and their bytes.
pub fn copies() -> (usize, usize) {
    COPIES.with(|c| {
        let c = c.borrow();
        (c.copies.len(), c.bytes)
    })
}

/// The address standing for the data at `at` (its canonical copy's, or
/// `at.0` where it stays in place): `make` copies the data, giving the
/// copy's (address, length) and its size in bytes.
fn canonical_at(
    kind: TypeId,
    at: (usize, usize),
    seen: &mut Seen,
    content: &dyn Fn(&mut Vec<u8>),
    make: &dyn Fn() -> ((usize, usize), usize),
) -> usize {
    if let Some(copy) = seen.find(at) {
        return copy;
    }
    let copy = COPIES.with(|c| {
        let mut c = c.borrow_mut();
        if c.copies.contains(&at) {
            return at.0;
        }
        let mut bytes = Vec::new();
        content(&mut bytes);
        let key = (kind, bytes);
        if let Some(&copy) = c.by_content.get(&key) {
            return copy;
        }
        if c.copies.len() >= MAX_COPIES || c.bytes + key.1.len() > MAX_BYTES {
            return at.0;
        }
        let (copy, size) = make();
        c.bytes += size + key.1.len();
        c.copies.insert(copy);
        c.by_content.insert(key, copy.0);
        copy.0
    });
    seen.remember(at, copy);
    copy
}

/// A bitwise copy of `s`, never dropped.
///
/// # Safety
/// A bitwise copy of a `T` must be a value of its own that owns nothing.
unsafe fn leaked_copy<T>(s: &[T]) -> &'static mut Vec<T> {
    let mut v = Vec::with_capacity(s.len());
    // SAFETY: `v` has room for `s.len()` elements, and the caller says a
    // bitwise copy is a valid `T` of its own.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), v.as_mut_ptr(), s.len());
        v.set_len(s.len());
    }
    Box::leak(Box::new(v))
}

/// The canonical copy of a green slice (see the module doc), its content
/// written by `content`.
///
/// # Safety
/// A bitwise copy of a `T` must be a value of its own that owns nothing,
/// and `content` must write all of an element's content, no address.
pub unsafe fn slice<'a, T: 'static>(s: &'a [T], seen: &mut Seen, content: fn(&T, &mut Vec<u8>)) -> &'a [T] {
    let at = (s.as_ptr() as usize, s.len());
    let each = |out: &mut Vec<u8>| s.iter().for_each(|e| content(e, out));
    // SAFETY: as the caller says.
    let make = || {
        let v = unsafe { leaked_copy(s) };
        ((v.as_ptr() as usize, v.len()), std::mem::size_of_val(s))
    };
    let copy = canonical_at(TypeId::of::<[T]>(), at, seen, &each, &make);
    // SAFETY: the address of `s`, or of a copy of `s.len()` elements never freed.
    unsafe { std::slice::from_raw_parts(copy as *const T, s.len()) }
}

/// The canonical copy of a green `Vec` (a `Vec` never dropped, whose
/// address keys it), as [`slice`].
///
/// # Safety
/// As [`slice`].
pub unsafe fn vec<'a, T: 'static>(v: &'a Vec<T>, seen: &mut Seen, content: fn(&T, &mut Vec<u8>)) -> &'a Vec<T> {
    let at = (v as *const Vec<T> as usize, usize::MAX);
    let each = |out: &mut Vec<u8>| {
        out.extend_from_slice(&(v.len() as u64).to_le_bytes());
        v.iter().for_each(|e| content(e, out))
    };
    // SAFETY: as the caller says.
    let make = || {
        let c: &Vec<T> = unsafe { leaked_copy(v) };
        ((c as *const Vec<T> as usize, usize::MAX), std::mem::size_of_val(&v[..]))
    };
    let copy = canonical_at(TypeId::of::<Vec<T>>(), at, seen, &each, &make);
    // SAFETY: the address of `v`, or of a `Vec` never dropped.
    unsafe { &*(copy as *const Vec<T>) }
}

/// The canonical copy of green data that owns only flat values (a program
/// of `Vec`s and `String`s; the macro's `is_owned_flat`), made by `copy`
/// and never dropped; its content, without addresses, written by `content`.
pub fn deep<'a, T: 'static>(v: &'a T, seen: &mut Seen, content: fn(&T, &mut Vec<u8>), copy: fn(&T) -> T) -> &'a T {
    let at = (v as *const T as usize, usize::MAX);
    let make = || {
        let c: &T = Box::leak(Box::new(copy(v)));
        ((c as *const T as usize, usize::MAX), std::mem::size_of::<T>())
    };
    let made = canonical_at(TypeId::of::<T>(), at, seen, &|out| content(v, out), &make);
    // SAFETY: the address of `v`, or of a copy never dropped.
    unsafe { &*(made as *const T) }
}

/// The canonical copy of a green slice of such data, as [`deep`].
pub fn deep_slice<'a, T: 'static>(
    s: &'a [T],
    seen: &mut Seen,
    content: fn(&T, &mut Vec<u8>),
    copy: fn(&T) -> T,
) -> &'a [T] {
    let at = (s.as_ptr() as usize, s.len());
    let each = |out: &mut Vec<u8>| s.iter().for_each(|e| content(e, out));
    let make = || {
        let c: &'static [T] = Box::leak(s.iter().map(copy).collect::<Vec<T>>().into_boxed_slice());
        ((c.as_ptr() as usize, c.len()), std::mem::size_of_val(s))
    };
    let made = canonical_at(TypeId::of::<[T]>(), at, seen, &each, &make);
    // SAFETY: the address of `s`, or of a copy of `s.len()` elements never dropped.
    unsafe { std::slice::from_raw_parts(made as *const T, s.len()) }
}

/// The canonical copy of a green slice of integers (or `bool`s, `char`s,
/// floats), compared in place with its copy at each visit.
pub fn scalars<'a, T: Copy + 'static>(s: &'a [T], seen: &mut Seen) -> &'a [T] {
    let at = (s.as_ptr() as usize, s.len());
    let bytes = crate::portal::driver::content_bytes(s);
    if let Some(copy) = seen.find(at) {
        // SAFETY: the address of `s`, or of a copy of `s.len()` elements never freed.
        let c = unsafe { std::slice::from_raw_parts(copy as *const T, s.len()) };
        if copy == at.0 || crate::portal::driver::content_bytes(c) == bytes {
            return c;
        }
        seen.forget(at);
    }
    let make = || {
        // SAFETY: integers, `bool`s, `char`s and floats own nothing.
        let v = unsafe { leaked_copy(s) };
        ((v.as_ptr() as usize, v.len()), bytes.len())
    };
    let copy = canonical_at(TypeId::of::<[T]>(), at, seen, &|out| out.extend_from_slice(bytes), &make);
    // SAFETY: as above.
    unsafe { std::slice::from_raw_parts(copy as *const T, s.len()) }
}

/// The canonical copy of green text, as [`scalars`].
pub fn text<'a>(s: &'a str, seen: &mut Seen) -> &'a str {
    let b = scalars(s.as_bytes(), seen);
    // SAFETY: the bytes of `s`, or a copy of them.
    unsafe { std::str::from_utf8_unchecked(b) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(e: &u32, out: &mut Vec<u8>) {
        out.extend_from_slice(&e.to_le_bytes());
    }

    #[test]
    fn equal_content_in_two_buffers_has_one_copy() {
        let (a, b) = (vec![1u32, 2, 3], vec![1u32, 2, 3]);
        let (mut s1, mut s2) = (Seen::new(), Seen::new());
        // SAFETY: `u32` owns nothing.
        let (ca, cb) = unsafe { (slice(&a, &mut s1, word), slice(&b, &mut s2, word)) };
        assert_eq!(ca.as_ptr(), cb.as_ptr());
        assert_ne!(ca.as_ptr(), a.as_ptr());
        assert_eq!(ca, &a[..]);
        // Already canonical: itself.
        // SAFETY: as above.
        assert_eq!(unsafe { slice(ca, &mut Seen::new(), word) }.as_ptr(), ca.as_ptr());
        let other = vec![1u32, 2, 4];
        // SAFETY: as above.
        assert_ne!(unsafe { slice(&other, &mut Seen::new(), word) }.as_ptr(), ca.as_ptr());
    }

    #[test]
    fn a_vec_is_canonical_by_its_own_address() {
        let (a, b) = (vec![7u32; 5], vec![7u32; 5]);
        // SAFETY: `u32` owns nothing.
        let (ca, cb) = unsafe { (vec(&a, &mut Seen::new(), word), vec(&b, &mut Seen::new(), word)) };
        assert!(std::ptr::eq(ca, cb));
        assert_eq!(ca, &a);
        // A slice of the same content is another kind of copy.
        // SAFETY: as above.
        let cs = unsafe { slice(&a[..], &mut Seen::new(), word) };
        assert_ne!(cs.as_ptr(), ca.as_ptr());
    }

    #[test]
    fn owned_data_is_copied_once_per_content() {
        fn text(s: &String, out: &mut Vec<u8>) {
            out.extend_from_slice(&(s.len() as u64).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        }
        fn texts(v: &Vec<String>, out: &mut Vec<u8>) {
            out.extend_from_slice(&(v.len() as u64).to_le_bytes());
            v.iter().for_each(|s| text(s, out));
        }
        let (a, b) = (vec!["x".to_string(), "yz".to_string()], vec!["x".to_string(), "yz".to_string()]);
        let (ca, cb) = (deep(&a, &mut Seen::new(), texts, Vec::clone), deep(&b, &mut Seen::new(), texts, Vec::clone));
        assert!(std::ptr::eq(ca, cb));
        assert_eq!(ca, &a);
        assert_ne!(ca[0].as_ptr(), a[0].as_ptr(), "its own buffers");
        // "x","yz" and "xy","z" differ: lengths are content.
        let c = vec!["xy".to_string(), "z".to_string()];
        assert!(!std::ptr::eq(deep(&c, &mut Seen::new(), texts, Vec::clone), ca));
        let (s1, s2) = (
            deep_slice(&a[..], &mut Seen::new(), text, String::clone),
            deep_slice(&b[..], &mut Seen::new(), text, String::clone),
        );
        assert_eq!(s1.as_ptr(), s2.as_ptr());
        assert_eq!(s1, &a[..]);
    }

    #[test]
    fn scalars_changed_within_a_call_get_their_own_copy() {
        let mut a = vec![9u8, 8, 7];
        let mut seen = Seen::new();
        let first = scalars(&a, &mut seen).as_ptr();
        a[1] = 0;
        let second = scalars(&a, &mut seen);
        assert_eq!(second, &[9, 0, 7]);
        assert_ne!(second.as_ptr(), first);
        assert_eq!(text("+-<>", &mut seen).as_ptr(), text(&String::from("+-<>"), &mut Seen::new()).as_ptr());
    }
}

//! Virtual dicts: a `HashMap` of scalars whose keys are compile-time
//! constants, kept as red boxes.
//!
//! A map the interpreter creates while being compiled (`HashMap::new()`) is
//! virtual: its entries are (constant key, red value) pairs in key order, and
//! `insert`, `get`, `remove`, `contains_key` and `len` with constant keys emit
//! nothing. A key known only at run time forces it: residual code allocates a
//! real `HashMap` (Rust's own, in the arena of objects residual code makes)
//! and inserts the entries. A map from outside is real from the start.
//!
//! Invariant: the keys of a virtual dict are part of the state's key
//! ([`VDict::key_words`]); only the values are reds.

use crate::compile::redbox::RedBox;
use crate::ir::builder::{CallbackFn, ResidualBuilder};
use crate::ir::ops::ValTy;

/// The most entries a dict keeps virtual; an insert past it forces it.
pub const MAX_VIRTUAL_ENTRIES: usize = 64;

/// A `HashMap` of scalars at compile time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VDict {
    /// A real map: the address of the `HashMap` object.
    Real(RedBox),
    /// A virtual one: (key word, value), sorted by key.
    Virtual(Vec<(u64, RedBox)>),
}

/// An `Option` of a value as two red boxes (tag, value), as enums are flattened.
fn option(v: Option<RedBox>, vty: ValTy) -> [RedBox; 2] {
    match v {
        Some(x) => [RedBox::constant(ValTy::U32, 1), x],
        None => [RedBox::constant(ValTy::U32, 0), RedBox::constant(vty, 0)],
    }
}

impl VDict {
    /// An empty virtual dict.
    pub fn new() -> VDict {
        VDict::Virtual(vec![])
    }

    fn entries(&mut self, key: &RedBox) -> Option<(&mut Vec<(u64, RedBox)>, u64)> {
        match (self, key.as_const()) {
            (VDict::Virtual(e), Some(k)) => Some((e, k)),
            _ => None,
        }
    }

    /// `get(&k)` at a constant key of a virtual dict.
    pub fn get_const(&mut self, key: &RedBox, vty: ValTy) -> Option<[RedBox; 2]> {
        let (e, k) = self.entries(key)?;
        Some(option(e.iter().find(|x| x.0 == k).map(|x| x.1), vty))
    }

    /// `contains_key(&k)` at a constant key of a virtual dict.
    pub fn contains_const(&mut self, key: &RedBox) -> Option<RedBox> {
        let (e, k) = self.entries(key)?;
        Some(RedBox::bool(e.iter().any(|x| x.0 == k)))
    }

    /// `insert(k, v)` at a constant key of a virtual dict (not past
    /// [`MAX_VIRTUAL_ENTRIES`]).
    pub fn insert_const(&mut self, key: &RedBox, v: &RedBox) -> Option<[RedBox; 2]> {
        let vty = v.ty();
        let (e, k) = self.entries(key)?;
        match e.binary_search_by_key(&k, |x| x.0) {
            Ok(i) => Some(option(Some(std::mem::replace(&mut e[i].1, *v)), vty)),
            Err(_) if e.len() >= MAX_VIRTUAL_ENTRIES => None,
            Err(i) => {
                e.insert(i, (k, *v));
                Some(option(None, vty))
            }
        }
    }

    /// `remove(&k)` at a constant key of a virtual dict.
    pub fn remove_const(&mut self, key: &RedBox, vty: ValTy) -> Option<[RedBox; 2]> {
        let (e, k) = self.entries(key)?;
        let old = e.iter().position(|x| x.0 == k).map(|i| e.remove(i).1);
        Some(option(old, vty))
    }

    /// `len()` of a virtual dict.
    pub fn len_const(&self) -> Option<RedBox> {
        match self {
            VDict::Virtual(e) => Some(RedBox::u64(e.len() as u64)),
            VDict::Real(_) => None,
        }
    }

    /// Appends the words this dict adds to its frame's key: its keys.
    pub fn key_words(&self, out: &mut crate::compile::virtuals::KeyWords) {
        match self {
            VDict::Real(_) => out.push(u64::MAX),
            VDict::Virtual(e) => {
                out.push(e.len() as u64);
                out.extend(e.iter().map(|x| x.0));
            }
        }
    }

    /// Appends its reds: the address when real, the values when virtual.
    pub fn reds_into(&self, out: &mut Vec<RedBox>) {
        match self {
            VDict::Real(p) => out.push(*p),
            VDict::Virtual(e) => out.extend(e.iter().map(|x| x.1)),
        }
    }

    /// Replaces its reds from `reds[*at..]` (the order of `reds_into`).
    pub fn set_reds(&mut self, reds: &[RedBox], at: &mut usize) {
        match self {
            VDict::Real(p) => {
                *p = reds[*at];
                *at += 1;
            }
            VDict::Virtual(e) => {
                for x in e.iter_mut() {
                    x.1 = reds[*at];
                    *at += 1;
                }
            }
        }
    }

    /// The address of a real map, forcing a virtual one first (allocated
    /// by `new`, its entries inserted by `insert`, both Rust's own code).
    pub fn force(&mut self, b: &mut ResidualBuilder, kty: ValTy, new: CallbackFn, insert: CallbackFn) -> RedBox {
        let entries = match self {
            VDict::Real(p) => return *p,
            VDict::Virtual(e) => std::mem::take(e),
        };
        let p = b.red_call(new, "map_new", &[], &[ValTy::Ptr])[0];
        for (k, v) in entries {
            b.red_call(insert, "map_insert", &[p, RedBox::constant(kty, k), v], &[ValTy::U32, v.ty()]);
        }
        *self = VDict::Real(p);
        p
    }
}

impl Default for VDict {
    fn default() -> VDict {
        VDict::new()
    }
}

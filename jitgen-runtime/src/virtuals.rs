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
//! Invariant: a state's heap is in canonical order whenever its key or reds
//! are taken ([`crate::state::JitState::normalize`]): objects numbered by
//! first reference from the frames, outermost first, unreachable and forced
//! objects gone. So two states with equal keys have heaps of the same shape,
//! and their reds line up.

use crate::builder::{CallbackFn, ResidualBuilder};
use crate::ops::ValTy;
use crate::redbox::RedBox;

/// A pointer to a struct at compile time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VPtr {
    /// A real object: its address.
    Real(RedBox),
    /// A virtual object: its index in the state's heap.
    Virtual(u32),
}

/// What the runtime knows of a struct type, to force its virtual objects.
#[derive(Debug)]
pub struct VDesc {
    /// The type's name, for listings.
    pub name: &'static str,
    /// The residual types of its fields, in declaration order.
    pub fields: &'static [ValTy],
    /// Allocates an object from its field words (frame words 0..n) and
    /// writes its address into word 0 (the callback convention).
    pub alloc: CallbackFn,
}

/// A virtual object.
#[derive(Clone, Debug)]
pub struct VObject {
    /// Its type.
    pub desc: &'static VDesc,
    /// Its fields' values, in declaration order.
    pub fields: Vec<RedBox>,
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
    /// A new virtual object with these field values.
    pub fn alloc(&mut self, desc: &'static VDesc, fields: Vec<RedBox>) -> VPtr {
        self.objects.push(VObject { desc, fields, forced: None });
        VPtr::Virtual(self.objects.len() as u32 - 1)
    }

    /// The object `p` names, while it is virtual.
    fn live(&self, p: &VPtr) -> Option<&VObject> {
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

    /// The address of the object `p` names, forcing it first when virtual.
    pub fn force(&mut self, b: &mut ResidualBuilder, p: &VPtr) -> RedBox {
        let i = match p {
            VPtr::Real(r) => return *r,
            VPtr::Virtual(i) => *i as usize,
        };
        if let Some(r) = self.objects[i].forced {
            return r;
        }
        let o = &self.objects[i];
        let addr = b.red_call(o.desc.alloc, o.desc.name, &o.fields, &[ValTy::Ptr])[0];
        self.objects[i].forced = Some(addr);
        addr
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

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
//! *Virtualizable* objects (structs marked `#[virtualizable]`, the
//! interpreter's frame) are virtual objects with a *backing*: the address of
//! the real object they were loaded from at a portal's entry. Their fields
//! may include lists ([`VList`]). Forcing one writes its fields back into the
//! backing object (stores, and [`crate::heap::vec_store`] /
//! [`crate::heap::vec_move`] for lists) and makes it real again; every
//! return of residual code writes them back ([`VHeap::write_back`]).
//! Residual code may keep them in registers in between because the
//! interpreter gave it a `&mut` to the frame: nothing else can read the
//! frame while residual code runs, except what residual code itself calls,
//! and an object escaping into such a call is forced first.
//!
//! Invariant: a state's heap is in canonical order whenever its key or reds
//! are taken ([`crate::state::JitState::normalize`]): objects numbered by
//! first reference from the frames, outermost first, unreachable and forced
//! objects gone. So two states with equal keys have heaps of the same shape,
//! and their reds line up.

use crate::builder::{CallbackFn, ResidualBuilder};
use crate::ops::ValTy;
use crate::redbox::RedBox;
use crate::vlist::VList;

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
    /// writes its address into word 0 (the callback convention); `None` for
    /// structs with list fields, whose virtual objects always have a backing.
    pub alloc: Option<CallbackFn>,
    /// The byte offsets of the scalar fields, in the order of `fields`.
    pub offsets: &'static [i32],
    /// The list fields (`Vec`s of scalars of a virtualizable struct).
    pub lists: &'static [VListField],
}

/// A list field of a virtualizable struct.
#[derive(Debug)]
pub struct VListField {
    /// Its byte offset in the struct.
    pub offset: i32,
    /// The residual type of its elements.
    pub elem: ValTy,
    /// [`crate::heap::vec_store`] for its element type.
    pub store: CallbackFn,
    /// [`crate::heap::vec_move`] for its element type.
    pub mov: CallbackFn,
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
    /// A new virtual object with these field values.
    pub fn alloc(&mut self, desc: &'static VDesc, fields: Vec<RedBox>) -> VPtr {
        self.objects.push(VObject { desc, fields, lists: vec![], backing: None, forced: None });
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
                for (l, d) in o.lists.iter().zip(o.desc.lists) {
                    let dest = b.red_offset(&addr, d.offset as u64);
                    match l {
                        VList::Real(src) => {
                            b.red_call(d.mov, "vec_move", &[dest, *src], &[]);
                        }
                        VList::Virtual(items) => {
                            let mut args = vec![dest, RedBox::u64(items.len() as u64)];
                            args.extend_from_slice(items);
                            b.red_call(d.store, "vec_store", &args, &[]);
                        }
                    }
                }
                addr
            }
            None => {
                let alloc = o.desc.alloc.expect("objects of structs with list fields have a backing");
                b.red_call(alloc, o.desc.name, &o.fields, &[ValTy::Ptr])[0]
            }
        };
        self.objects[i].forced = Some(addr);
        addr
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

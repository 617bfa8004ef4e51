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

/// The longest virtual list of pointers ([`VPList`]). When it holds an
/// interpreter's saved frames, this is how deep language-level calls are
/// inlined: past it the compilation declines, which bounds what recursion
/// unrolls (each level may split).
pub const MAX_VIRTUAL_PTRS: usize = 4;

/// A `Vec` of structs at compile time: a virtual list of pointers (the
/// interpreter's stack of saved frames), or a real `Vec`'s address. Its
/// length and which of its elements are virtual are part of the state's key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VPList {
    /// A real `Vec`: the address of the `Vec` object.
    Real(RedBox),
    /// A virtual one: its elements.
    Virtual(Vec<VPtr>),
}

impl VPList {
    /// The words this list adds to its frame's key.
    pub fn key_words(&self, out: &mut Vec<u64>) {
        match self {
            VPList::Real(_) => out.push(u64::MAX),
            VPList::Virtual(items) => {
                out.push(items.len() as u64);
                out.extend(items.iter().map(|p| match p {
                    VPtr::Real(_) => u64::MAX,
                    VPtr::Virtual(i) => *i as u64,
                }));
            }
        }
    }

    /// Appends its reds: the addresses of the real list and real elements.
    pub fn reds_into(&self, out: &mut Vec<RedBox>) {
        match self {
            VPList::Real(p) => out.push(*p),
            VPList::Virtual(items) => out.extend(items.iter().filter_map(|p| match p {
                VPtr::Real(r) => Some(*r),
                VPtr::Virtual(_) => None,
            })),
        }
    }

    /// Replaces its reds from `reds[*at..]` (the order of `reds_into`).
    pub fn set_reds(&mut self, reds: &[RedBox], at: &mut usize) {
        let mut next = |p: &mut RedBox| {
            *p = reds[*at];
            *at += 1;
        };
        match self {
            VPList::Real(p) => next(p),
            VPList::Virtual(items) => {
                for p in items {
                    if let VPtr::Real(r) = p {
                        next(r);
                    }
                }
            }
        }
    }

    /// Visits its virtual elements.
    pub fn vptrs_mut(&mut self, f: &mut dyn FnMut(&mut VPtr)) {
        if let VPList::Virtual(items) = self {
            items.iter_mut().for_each(f);
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
}

/// A list field of a struct whose objects may be virtual.
#[derive(Debug)]
pub struct VListField {
    /// Its byte offset in the struct.
    pub offset: i32,
    /// The red boxes per element: 1 for scalars, the flattened slots of a
    /// plain enum.
    pub width: usize,
    /// [`crate::heap::vec_store`] (or [`crate::heap::flat_vec_store`]) for
    /// its element type: `[dest, n, slots..] -> []`.
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
                addr
            }
            // A new object: its scalar fields given, its lists empty.
            None => b.red_call(o.desc.alloc, o.desc.name, &o.fields, &[ValTy::Ptr])[0],
        };
        for (l, d) in o.lists.iter().zip(o.desc.lists) {
            let dest = b.red_offset(&addr, d.offset as u64);
            match l {
                VList::Real(src) => {
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

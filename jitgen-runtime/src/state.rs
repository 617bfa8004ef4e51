//! The JIT state: what a paused compile-time process is.
//!
//! A state is a chain of virtual frames, the innermost last: one per inlined
//! call, each knowing where its function continues (its block), its green
//! values and its red boxes. The generating extension defines the frame type
//! (typically one enum over the blocks of all the module's functions, greens in
//! their Rust types); the runtime only needs the frame's merge key and its red
//! boxes. A state is plain data: it is cloned at a red split, frozen and
//! compared at a merge point, and queued until the scheduler resumes it.

use std::fmt::Debug;
use std::hash::Hash;

use crate::builder::ResidualBuilder;
use crate::ops::ValTy;
use crate::redbox::RedBox;
use crate::virtuals::{VHeap, VPtr};

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
    /// For a frame at a merge point that already went through it: marks it
    /// as not merged yet, so that a compilation resuming it (a deferred
    /// path) registers the merge point first.
    fn unmerge(&mut self) {}
    /// Visits the frame's pointers to structs that may be virtual.
    fn vptrs_mut(&mut self, _f: &mut dyn FnMut(&mut VPtr)) {}
}

/// The merge key of a state: its frames' keys and the types of its virtual
/// objects in canonical order.
pub type StateKey<K> = (Vec<K>, Vec<usize>);

/// A compile-time state: a chain of virtual frames, the innermost last.
#[derive(Clone, Debug)]
pub struct JitState<F> {
    /// The frames, outermost first.
    pub frames: Vec<F>,
    /// The virtual objects the frames point to.
    pub heap: VHeap,
    /// Fields of real objects known on this path: (address, offset, type,
    /// value). Loaded or stored since the last merge point or call that is
    /// not inlined; a promotion turns a known value into a constant.
    pub known: Vec<(RedBox, i32, ValTy, RedBox)>,
}

impl<F: Frame> JitState<F> {
    /// A state with one frame.
    pub fn new(frame: F) -> JitState<F> {
        JitState::with_heap(frame, VHeap::default())
    }

    /// A state with one frame and the virtual objects it points to.
    pub fn with_heap(frame: F, heap: VHeap) -> JitState<F> {
        JitState { frames: vec![frame], heap, known: vec![] }
    }

    /// Puts the heap in canonical order (see [`crate::virtuals`]): pointers
    /// to forced objects become real, virtual objects are numbered by first
    /// reference from the frames, unreachable ones dropped.
    pub fn normalize(&mut self) {
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
        let mut c = JitState { frames: self.frames.clone(), heap: VHeap::default(), known: vec![] };
        for f in &mut c.frames {
            f.vptrs_mut(&mut |p| {
                if let VPtr::Virtual(_) = p {
                    *p = VPtr::Real(RedBox::constant(crate::ops::ValTy::Ptr, 0));
                }
            });
        }
        c.key()
    }

    /// Forces every virtual object the frames point to (in residual code
    /// recorded by `b`), leaving the state normalized with an empty heap.
    pub fn force_all(&mut self, b: &mut crate::builder::ResidualBuilder) {
        let heap = &mut self.heap;
        for f in &mut self.frames {
            f.vptrs_mut(&mut |p| *p = VPtr::Real(heap.force(b, p)));
        }
        heap.write_back(b);
        self.normalize();
    }

    /// Reads a field of a real object: the value known on this path, or a
    /// load (then known).
    pub fn load_field(&mut self, b: &mut ResidualBuilder, ty: ValTy, addr: &RedBox, offset: i32) -> RedBox {
        if let Some(k) = self.known.iter().find(|k| k.0 == *addr && k.1 == offset && k.2 == ty) {
            return k.3;
        }
        let v = b.red_load(ty, addr, offset);
        if !b.exec {
            self.known.push((*addr, offset, ty, v));
        }
        v
    }

    /// Writes a field of a real object; it is known from then on, and what
    /// was known at the same offset of other objects (which may be this
    /// one) is forgotten.
    pub fn store_field(&mut self, b: &mut ResidualBuilder, addr: &RedBox, offset: i32, value: &RedBox) {
        b.red_store(addr, offset, value);
        self.known.retain(|k| k.1 != offset);
        if !b.exec {
            self.known.push((*addr, offset, value.ty(), *value));
        }
    }

    /// Forgets every known field (a call that is not inlined may write any).
    pub fn forget_fields(&mut self) {
        self.known.clear();
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
        let mut r: Vec<RedBox> = self.frames.iter().flat_map(Frame::reds).collect();
        for o in &self.heap.objects {
            r.extend_from_slice(&o.fields);
            r.extend(o.backing);
            for l in &o.lists {
                l.reds_into(&mut r);
            }
        }
        for k in &self.known {
            r.push(k.0);
            r.push(k.3);
        }
        r
    }

    /// Replaces every red box, in the order of [`JitState::reds`].
    pub fn set_reds(&mut self, reds: &[RedBox]) {
        let mut at = 0;
        for f in &mut self.frames {
            let n = f.reds().len();
            f.set_reds(&reds[at..at + n]);
            at += n;
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
        for k in &mut self.known {
            k.0 = reds[at];
            k.3 = reds[at + 1];
            at += 2;
        }
    }
}

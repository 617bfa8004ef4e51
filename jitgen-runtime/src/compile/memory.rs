//! What a compilation knows of memory on its path, and what it does through
//! that knowledge: loads and stores of fields of real objects that reuse what
//! the path already loaded or stored ([`Fact`]s, forgotten where a store or a
//! call may change them), `Vec` headers, elements, pushes and pops on real
//! lists, bounds checks implied by earlier ones, and comparisons decided by
//! what the path learned.

use crate::compile::redbox::RedBox;
use crate::compile::state::*;
use crate::compile::virtuals::{Popped, VDesc, VPList, VPtr};
use crate::ir::builder::{CallbackFn, ResidualBuilder, SymAddr};
use crate::ir::ops::{BinOp, CmpOp, Overflow, ValTy};
use crate::run::heap::VecHeader;

impl<F: Frame> JitState<F> {
    /// Forgets the facts a call may change (`Vec` headers and elements) if
    /// a call was recorded since they were last checked.
    pub fn sync_facts(&mut self, b: &ResidualBuilder) {
        if self.epoch != b.calls {
            self.known.retain(|f| !f.calls_may_change());
            self.epoch = b.calls;
        }
    }

    /// Reads a field (of type `ty`, alias class `class`, at `field` in its
    /// type) of a real object at `addr + offset`: the value known on this
    /// path, or a load (then known).
    pub fn load_field(
        &mut self,
        b: &mut ResidualBuilder,
        ty: ValTy,
        addr: &RedBox,
        offset: i32,
        class: u32,
        field: i32,
    ) -> RedBox {
        if b.exec {
            return b.red_load(ty, addr, offset);
        }
        self.sync_facts(b);
        let at = b.sym_addr(addr).plus(offset as i64);
        if let Some(f) = self.known.iter().find(|f| f.at == at && f.ty == ty && f.class == class) {
            let v = f.value;
            return b.red_cast(&v, ty);
        }
        let v = b.red_load(ty, addr, offset);
        self.know(Fact { at, ty, class, field, value: v, min: 0 });
        v
    }

    /// Writes a field of a real object (as [`JitState::load_field`] reads
    /// it); it is known from then on, and the facts the store may overwrite
    /// are forgotten. A store of the value the field is known to hold is
    /// left out (a loop storing an enum's unchanged tag every turn).
    pub fn store_field(
        &mut self,
        b: &mut ResidualBuilder,
        addr: &RedBox,
        offset: i32,
        value: &RedBox,
        class: u32,
        field: i32,
    ) {
        if b.exec {
            b.red_store(addr, offset, value);
            return;
        }
        self.sync_facts(b);
        let ty = value.ty();
        let at = b.sym_addr(addr).plus(offset as i64);
        if self.known.iter().any(|f| f.class == class && f.field == field && f.at == at && f.value == *value) {
            return;
        }
        b.red_store(addr, offset, value);
        self.known.retain(|f| !f.overlaps(&at, class, field, ty));
        self.know(Fact { at, ty, class, field, value: *value, min: 0 });
    }

    /// Records a fact; where [`MAX_FACTS`] are known, the oldest of those a
    /// call would forget anyway (`Vec` elements and headers) goes first,
    /// so that the fields an interpreter keeps its place in (a frame's
    /// function and instruction pointer) stay known across its operand
    /// stack's traffic.
    pub(crate) fn know(&mut self, f: Fact) {
        if self.known.len() >= MAX_FACTS {
            let at = self.known.iter().position(Fact::calls_may_change).unwrap_or(0);
            self.known.remove(at);
        }
        self.known.push(f);
    }

    /// The address of element `index` of the `Vec` at `addr` (elements of
    /// `size` bytes, header fields at `layout`), after Rust's bounds check;
    /// the header is read through [`JitState::load_field`].
    pub fn vec_elem(
        &mut self,
        b: &mut ResidualBuilder,
        addr: &RedBox,
        index: &RedBox,
        size: u64,
        layout: (i32, i32),
    ) -> RedBox {
        let len = self.vec_len(b, addr, layout);
        self.bounds_check(b, index, &len);
        let buf = self.load_field(b, ValTy::Ptr, addr, layout.0, VEC_HEADER, layout.0);
        b.red_index_addr(&buf, index, size)
    }

    /// `v.len()` of a real `Vec` at `addr` (its layout `(ptr, len)`), known
    /// from then on (see [`JitState::load_field`]), and known to be a length
    /// (see [`JitState::know_lengths`]).
    pub fn vec_len(&mut self, b: &mut ResidualBuilder, addr: &RedBox, layout: (i32, i32)) -> RedBox {
        let len = self.load_field(b, ValTy::U64, addr, layout.1, VEC_HEADER, layout.1);
        b.know_length(&len);
        len
    }

    /// The buffer of a real `Vec` at `addr` (as [`JitState::vec_len`]).
    pub fn vec_buf(&mut self, b: &mut ResidualBuilder, addr: &RedBox, layout: (i32, i32)) -> RedBox {
        self.load_field(b, ValTy::Ptr, addr, layout.0, VEC_HEADER, layout.0)
    }

    /// `v.push(x)` on a real `Vec` of scalars at `addr`, in place: its
    /// length and capacity compared, a call to grow it only when full,
    /// the element and the length stored (and known from then on: a value
    /// pushed is found where it is popped or read).
    #[allow(clippy::too_many_arguments)]
    pub fn vec_push(
        &mut self,
        b: &mut ResidualBuilder,
        addr: &RedBox,
        x: &RedBox,
        h: VecHeader,
        size: u64,
        class: u32,
        reserve: CallbackFn,
    ) {
        self.vec_push_slots(b, addr, &[(0, *x)], h, size, class, reserve)
    }

    /// [`JitState::vec_push`] of an element stored as these values at these
    /// offsets (an enum: its tag, and its variant's payload).
    #[allow(clippy::too_many_arguments)]
    pub fn vec_push_slots(
        &mut self,
        b: &mut ResidualBuilder,
        addr: &RedBox,
        slots: &[(i32, RedBox)],
        h: VecHeader,
        size: u64,
        class: u32,
        reserve: CallbackFn,
    ) {
        let len = self.load_field(b, ValTy::U64, addr, h.len, VEC_HEADER, h.len);
        let cap = self.load_field(b, ValTy::U64, addr, h.cap, VEC_HEADER, h.cap);
        let full = b.red_cmp(CmpOp::Eq, &len, &cap);
        if full.as_const() != Some(0) {
            // The buffer and the capacity may change: they are what the
            // side that grows it reads again, or what they were (nothing
            // names the old buffer once the `Vec` grew: Rust forbids
            // borrows of it across a push).
            let s = b.sym_addr(addr);
            let (ptr, capacity) = (s.plus(h.ptr as i64), s.plus(h.cap as i64));
            let old_buf = self.load_field(b, ValTy::Ptr, addr, h.ptr, VEC_HEADER, h.ptr);
            self.known.retain(|f| f.class != VEC_HEADER || (f.at != ptr && f.at != capacity));
            let reread = [(ValTy::Ptr, *addr, h.ptr), (ValTy::U64, *addr, h.cap)];
            let grown = b.red_call_if(&full, reserve, "vec_reserve", &[*addr], &reread, &[old_buf, cap]);
            let (buf, cap) = (grown[0], grown[1]);
            // The elements known are where they were in the buffer, moved
            // or not.
            for f in &mut self.known {
                if f.at.root == old_buf && f.class != VEC_HEADER {
                    f.at.root = buf;
                }
            }
            self.know(Fact { at: ptr, ty: ValTy::Ptr, class: VEC_HEADER, field: h.ptr, value: buf, min: 0 });
            self.know(Fact { at: capacity, ty: ValTy::U64, class: VEC_HEADER, field: h.cap, value: cap, min: 0 });
        }
        let min = self.fact_min(b, addr, h.len);
        let buf = self.load_field(b, ValTy::Ptr, addr, h.ptr, VEC_HEADER, h.ptr);
        let at = b.red_index_addr(&buf, &len, size);
        for (off, x) in slots {
            self.store_field(b, &at, *off, x, class, *off);
        }
        let n = b.red_length_plus(&len, 1);
        self.store_field(b, addr, h.len, &n, VEC_HEADER, h.len);
        self.set_fact_min(b, addr, h.len, (min + 1).min(MAX_KNOWN_LENGTH));
    }

    /// `v.push(x)` on a real `Vec` of enums at `addr`, `x` flattened (its
    /// tag, then every variant's slots): in place when the layouts are
    /// known (its tag written whole into the fresh element,
    /// [`crate::run::heap::EnumLayout::tag_store`], then as it is read, so
    /// that it is known; then the slots), else by the runtime's helper. The
    /// slots written are its variant's where that is known, every slot
    /// where it is known only at run time and no two slots share a byte
    /// ([`crate::run::heap::EnumLayout::slots_apart`]: a stack VM pushing a
    /// value it read from its stack).
    pub fn flat_vec_push(&mut self, b: &mut ResidualBuilder, addr: &RedBox, x: &[RedBox], how: &FlatVec) {
        match (how.layout, how.header, x[0].as_const()) {
            (Some(el), Some(h), k) if k.is_some() || el.slots_apart() => {
                let (toff, tty) = el.tag_store();
                let mut slots = vec![(toff, b.red_cast(&x[0], tty))];
                if tty != el.tag.1 {
                    slots.push((el.tag.0, b.red_cast(&x[0], el.tag.1)));
                }
                for (j, (off, _)) in el.slots.iter().enumerate() {
                    if k.is_none_or(|k| el.slot_variant[j] == k as usize) {
                        slots.push((*off, x[j + 1]));
                    }
                }
                self.vec_push_slots(b, addr, &slots, h, el.size, how.class, how.reserve);
            }
            _ => {
                let mut args = vec![*addr];
                args.extend_from_slice(x);
                b.red_call(how.push, "vec_push", &args, &[]);
            }
        }
    }

    /// `v.pop()` on a real `Vec` of enums at `addr`: the `Option`
    /// flattened (types `tys`: its tag, the enum's tag, the slots). In place
    /// when the layouts are known (the tag and every slot read, those of
    /// other variants not looked at), else by the runtime's helper.
    pub fn flat_vec_pop(
        &mut self,
        b: &mut ResidualBuilder,
        addr: &RedBox,
        how: &FlatVec,
        tys: &[ValTy],
    ) -> Vec<RedBox> {
        match (how.layout, how.header) {
            (Some(el), Some(h)) if el.size as usize <= crate::run::heap::EMPTY_POP_BYTES => {
                let mut at = vec![el.tag];
                at.extend_from_slice(&el.slots);
                let (some, v) = self.vec_pop_slots(b, addr, &at, h, el.size, how.class);
                let mut r = vec![some, b.red_cast(&v[0], ValTy::U32)];
                r.extend_from_slice(&v[1..]);
                r
            }
            _ => b.red_call(how.pop, "vec_pop", &[*addr], tys),
        }
    }

    /// The lower bound known of a `Vec`'s length ([`Fact::min`]).
    pub(crate) fn fact_min(&self, b: &ResidualBuilder, addr: &RedBox, len: i32) -> u64 {
        let at = b.sym_addr(addr).plus(len as i64);
        self.known.iter().find(|f| f.class == VEC_HEADER && f.at == at).map_or(0, |f| f.min)
    }

    pub(crate) fn set_fact_min(&mut self, b: &ResidualBuilder, addr: &RedBox, len: i32, min: u64) {
        let at = b.sym_addr(addr).plus(len as i64);
        if let Some(f) = self.known.iter_mut().find(|f| f.class == VEC_HEADER && f.at == at) {
            f.min = min;
        }
    }

    /// `v.pop()` on a real `Vec` of scalars at `addr`, in place: the
    /// `Option`'s tag (a `u32`) and the value. Where the length is not
    /// known to be positive, the tag is computed and the value read from a
    /// word of the runtime's when the `Vec` is empty (no branch: the
    /// interpreter tests the tag next).
    pub fn vec_pop(
        &mut self,
        b: &mut ResidualBuilder,
        addr: &RedBox,
        ty: ValTy,
        h: VecHeader,
        size: u64,
        class: u32,
    ) -> [RedBox; 2] {
        let (some, v) = self.vec_pop_slots(b, addr, &[(0, ty)], h, size, class);
        [some, v[0]]
    }

    /// [`JitState::vec_pop`] of an element read as values of these types at
    /// these offsets (an enum: its tag, and every variant's payload, of
    /// which only the tag's is used); at most
    /// [`crate::run::heap::EMPTY_POP_BYTES`] bytes.
    pub fn vec_pop_slots(
        &mut self,
        b: &mut ResidualBuilder,
        addr: &RedBox,
        slots: &[(i32, ValTy)],
        h: VecHeader,
        size: u64,
        class: u32,
    ) -> (RedBox, Vec<RedBox>) {
        debug_assert!(size as usize <= crate::run::heap::EMPTY_POP_BYTES);
        let len = self.load_field(b, ValTy::U64, addr, h.len, VEC_HEADER, h.len);
        let min = self.fact_min(b, addr, h.len);
        let some = if min > 0 { RedBox::bool(true) } else { b.red_cmp(CmpOp::Ne, &len, &RedBox::u64(0)) };
        if some.as_const() == Some(0) {
            return (RedBox::constant(ValTy::U32, 0), slots.iter().map(|(_, ty)| RedBox::constant(*ty, 0)).collect());
        }
        let known = some.as_const().is_some();
        let one = if known { RedBox::u64(1) } else { b.red_cast(&some, ValTy::U64) };
        let n = b.red_bin(BinOp::Sub, Overflow::Wrap, &len, &one);
        let buf = self.load_field(b, ValTy::Ptr, addr, h.ptr, VEC_HEADER, h.ptr);
        let at = b.red_index_addr(&buf, &n, size);
        let vals = if known {
            slots.iter().map(|(off, ty)| self.load_field(b, *ty, &at, *off, class, *off)).collect()
        } else {
            let at = or_safe(b, &at, &one);
            slots.iter().map(|(off, ty)| b.red_load(*ty, &at, *off)).collect()
        };
        self.store_field(b, addr, h.len, &n, VEC_HEADER, h.len);
        self.set_fact_min(b, addr, h.len, min.saturating_sub(1));
        (if known { RedBox::constant(ValTy::U32, 1) } else { b.red_cast(&some, ValTy::U32) }, vals)
    }

    /// `push(x)` of an object onto the list `l` of structs described by
    /// `desc`: onto a real `Vec` of a struct of scalars in place, its field
    /// words stored as a `Vec` of scalars' element is (facts stay true:
    /// `Ok(false)`); else as [`VPList::push`] (or, `spilling`,
    /// [`VPList::push_spilling`]) does.
    pub fn vlist_push(
        &mut self,
        b: &mut ResidualBuilder,
        l: &mut VPList,
        desc: &VDesc,
        x: VPtr,
        spilling: bool,
    ) -> Result<bool, ()> {
        if let (VPList::Real(a), Some(m)) = (&*l, desc.in_memory) {
            if let Some(h) = (m.header)() {
                let a = *a;
                let mut slots = Vec::with_capacity(desc.fields.len());
                for (k, (t, off)) in desc.fields.iter().zip(desc.offsets).enumerate() {
                    let v = match self.heap.field(&x, k) {
                        Some(f) => f,
                        None => {
                            let o = self.heap.force(b, &x);
                            self.load_field(b, *t, &o, *off, m.class, *off)
                        }
                    };
                    slots.push((*off, v));
                }
                self.vec_push_slots(b, &a, &slots, h, m.size, m.class, m.reserve);
                return Ok(false);
            }
        }
        if spilling {
            l.push_spilling(b, &mut self.heap, desc, x)
        } else {
            l.push(b, &mut self.heap, desc, x)
        }
    }

    /// `pop()` of the list `l` of structs described by `desc`: of a real
    /// `Vec` of a struct of scalars in place (a field's, or the memory
    /// below a portal's own list once its virtual elements are popped,
    /// which marks the path [`JitState::below_entry`]), its field words
    /// loaded into a virtual object ([`Popped::InPlace`]); else as
    /// [`VPList::pop`] does.
    pub fn vlist_pop(
        &mut self,
        b: &mut ResidualBuilder,
        l: &mut VPList,
        desc: &'static VDesc,
    ) -> (RedBox, VPtr, Popped) {
        let real = match &*l {
            VPList::Real(a) => Some((*a, false)),
            VPList::Over(a, items) if items.is_empty() => Some((*a, true)),
            _ => None,
        };
        if let (Some((a, below)), Some(m)) = (real, desc.in_memory) {
            if let (Some(h), true) = ((m.header)(), m.size as usize <= crate::run::heap::EMPTY_POP_BYTES) {
                self.below_entry |= below;
                let at: Vec<(i32, ValTy)> = desc.offsets.iter().copied().zip(desc.fields.iter().copied()).collect();
                let (some, vals) = self.vec_pop_slots(b, &a, &at, h, m.size, m.class);
                let p = self.heap.alloc(desc, vals, Vec::new());
                return (some, p, Popped::InPlace);
            }
        }
        l.pop(b, &mut self.heap, desc)
    }

    /// Checks `index < len` unless this path already did.
    pub fn bounds_check(&mut self, b: &mut ResidualBuilder, index: &RedBox, len: &RedBox) {
        if b.exec || index.is_const() && len.is_const() {
            b.red_bounds_check(index, len);
            return;
        }
        let (i, k) = b.index_form(index);
        let at = SymAddr { root: *len, index: Some((i, 1)), offset: k };
        if self.known.iter().any(|f| f.class == BOUNDS_CHECKED && f.at == at) {
            return;
        }
        b.red_bounds_check(index, len);
        self.know(Fact { at, ty: ValTy::Bool, class: BOUNDS_CHECKED, field: 0, value: RedBox::bool(true), min: 0 });
    }

    /// The intervals the [`ORDERED`] facts show do not wrap, as `(root,
    /// from, to)` (see [`ResidualBuilder::ordered_within`]).
    pub(crate) fn intervals(&self) -> Vec<(RedBox, i64, i64)> {
        self.known
            .iter()
            .filter(|f| f.class == ORDERED)
            .map(|f| (f.at.root, f.at.offset, f.at.offset + f.field as i64))
            .collect()
    }

    /// Keeps what the comparisons this path took true since its last merge
    /// point showed (`ResidualBuilder::path_intervals`) as [`ORDERED`]
    /// facts, so that it crosses merge points and flexswitches as facts do:
    /// one per root (an interval overlapping the root's joins it; one that
    /// does not is dropped).
    pub fn learn_path(&mut self, b: &ResidualBuilder) {
        if b.exec {
            return;
        }
        for (m, j, k) in b.path_intervals() {
            let Ok(width) = i32::try_from(k - j) else { continue };
            let at = SymAddr { root: m, index: None, offset: j };
            let old = self.known.iter().position(|f| f.class == ORDERED && f.at.root == m);
            if let Some(i) = old {
                let f = &self.known[i];
                let (oj, ok) = (f.at.offset, f.at.offset + f.field as i64);
                // Overlapping intervals: their union does not wrap either.
                if oj <= k && j <= ok {
                    let (nj, nk) = (oj.min(j), ok.max(k));
                    if let Ok(w) = i32::try_from(nk - nj) {
                        self.known[i].at.offset = nj;
                        self.known[i].field = w;
                    }
                }
                continue;
            }
            self.know(Fact { at, ty: ValTy::Bool, class: ORDERED, field: width, value: RedBox::bool(true), min: 0 });
        }
    }

    /// `x op y` ([`ResidualBuilder::red_cmp`]), folded where this path
    /// knows the answer: two values of one root plus constants within an
    /// interval that an [`ORDERED`] fact says does not wrap; a 64-bit index
    /// checked against a `Vec`'s length on it, plus a positive constant, is
    /// not zero (`sp + 1` after a store at `stack[sp]`).
    pub fn red_cmp(&self, b: &mut ResidualBuilder, op: CmpOp, x: &RedBox, y: &RedBox) -> RedBox {
        if let (false, Some(r)) = (b.exec, b.ordered_cmp(op, x, y, &self.intervals())) {
            return r;
        }
        if let (false, CmpOp::Eq | CmpOp::Ne, Some(0), 64) = (b.exec, op, y.as_const(), x.ty().bits()) {
            if let Some((root, k)) = b.linear_form(x) {
                // The checked index is `root + offset`, below a length (so
                // below 2^63): adding less than 2^62 cannot wrap to zero.
                let checked = |f: &Fact| f.class == BOUNDS_CHECKED && f.at.index == Some((root, 1));
                if self.known.iter().any(|f| checked(f) && (1..1 << 62).contains(&k.wrapping_sub(f.at.offset))) {
                    return RedBox::bool(op == CmpOp::Ne);
                }
            }
        }
        b.red_cmp(op, x, y)
    }
}

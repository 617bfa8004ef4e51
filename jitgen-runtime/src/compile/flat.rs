//! Elements of real lists of enums (flat lists: each element its tag and the
//! payload slots of every variant, [`crate::run::heap::Flat`]), and of
//! arrays and slices of them, read and written for generating extensions:
//! in place where the enum's layout was measured (the tag and the slots,
//! through the facts of [`JitState::load_field`]), else by a call of the
//! runtime's `flat_vec_get` or `flat_vec_set` (`flat_load_at` or
//! `flat_store_at` for an element of an array).

use crate::compile::redbox::RedBox;
use crate::compile::state::{FlatVec, Frame, JitState};
use crate::compile::vlist::VList;
use crate::ir::builder::ResidualBuilder;
use crate::ir::ops::ValTy;
use crate::run::heap::{
    flat_load_at, flat_store_at, flat_vec_get, flat_vec_len, flat_vec_new, flat_vec_set, vec_layout, EnumLayout, Flat,
};

impl<F: Frame> JitState<F> {
    /// Element `index` of the real list of `M` at `addr`: its tag (a `u32`)
    /// and every slot (those of other variants are read but not used).
    /// `class` is the alias class of the elements; `tys` the slots' types,
    /// for the call made where the layout is not known.
    pub fn flat_get<M: Flat>(
        &mut self,
        b: &mut ResidualBuilder,
        addr: &RedBox,
        index: &RedBox,
        class: u32,
        tys: &[ValTy],
    ) -> Vec<RedBox> {
        let (Some(el), Some(vl)) = (M::layout(), vec_layout::<M::T>()) else {
            return b.red_call(flat_vec_get::<M>, "vec_get", &[*addr, *index], tys);
        };
        let e = self.vec_elem(b, addr, index, el.size, vl);
        self.flat_load(b, el, &e, class)
    }

    /// The tag and every slot of the `M` at the address `e`, in place.
    fn flat_load(&mut self, b: &mut ResidualBuilder, el: &EnumLayout, e: &RedBox, class: u32) -> Vec<RedBox> {
        let tag = self.load_field(b, el.tag.1, e, el.tag.0, class, el.tag.0);
        let mut words = vec![b.red_cast(&tag, ValTy::U32)];
        for (off, ty) in &el.slots {
            words.push(self.load_field(b, *ty, e, *off, class, *off));
        }
        words
    }

    /// The `M` at the address `e` (an element of an array or a slice,
    /// bounds-checked already), as [`JitState::flat_get`] reads one: in
    /// place where `M`'s layout was measured, else by a helper call.
    pub fn flat_get_at<M: Flat>(
        &mut self,
        b: &mut ResidualBuilder,
        e: &RedBox,
        class: u32,
        tys: &[ValTy],
    ) -> Vec<RedBox> {
        match M::layout() {
            Some(el) => self.flat_load(b, el, e, class),
            None => b.red_call(flat_load_at::<M>, "load_at", &[*e], tys),
        }
    }

    /// Writes `value` into the `M` at the address `e`, as
    /// [`JitState::flat_set`] writes an element: in place where the layout
    /// was measured and the variant is known, or every slot can be written
    /// (no two share a byte); else by a helper call.
    pub fn flat_set_at<M: Flat>(&mut self, b: &mut ResidualBuilder, e: &RedBox, value: &[RedBox], class: u32) {
        let k = value[0].as_const();
        let Some(el) = M::layout().filter(|el| k.is_some() || el.slots_apart()) else {
            let mut args = vec![*e];
            args.extend_from_slice(value);
            b.red_call(flat_store_at::<M>, "store_at", &args, &[]);
            // (The helper wrote memory a fact may hold.)
            self.forget_fields();
            return;
        };
        let tag = b.red_cast(&value[0], el.tag.1);
        self.store_field(b, e, el.tag.0, &tag, class, el.tag.0);
        for (j, (off, _)) in el.slots.iter().enumerate() {
            if k.is_none_or(|k| el.slot_variant[j] == k as usize) {
                self.store_field(b, e, *off, &value[j + 1], class, *off);
            }
        }
    }

    /// Writes `value` (a tag and every slot, as [`JitState::flat_get`] reads
    /// them) into element `index` of the real list of `M` at `addr`: in
    /// place, its tag and its variant's slots where the variant is known,
    /// every slot where it is not and no two share a byte
    /// ([`crate::run::heap::EnumLayout::slots_apart`]); else by the
    /// runtime's helper.
    pub fn flat_set<M: Flat>(
        &mut self,
        b: &mut ResidualBuilder,
        addr: &RedBox,
        index: &RedBox,
        value: &[RedBox],
        class: u32,
    ) {
        match (M::layout(), vec_layout::<M::T>(), value[0].as_const()) {
            // Its variant's slots, or every slot where the variant is known
            // only at run time and no two share a byte (as a push).
            (Some(el), Some(vl), k) if k.is_some() || el.slots_apart() => {
                let e = self.vec_elem(b, addr, index, el.size, vl);
                let tag = b.red_cast(&value[0], el.tag.1);
                self.store_field(b, &e, el.tag.0, &tag, class, el.tag.0);
                for (j, (off, _)) in el.slots.iter().enumerate() {
                    if k.is_none_or(|k| el.slot_variant[j] == k as usize) {
                        self.store_field(b, &e, *off, &value[j + 1], class, *off);
                    }
                }
            }
            _ => {
                let mut args = vec![*addr, *index];
                args.extend_from_slice(value);
                b.red_call(flat_vec_set::<M>, "vec_set", &args, &[]);
            }
        }
    }

    /// The address of the real list `l` of `M`s, made real first if it is
    /// virtual.
    fn flat_list_addr<M: Flat>(b: &mut ResidualBuilder, l: &mut VList) -> RedBox {
        l.force_flat(b, M::N, flat_vec_new::<M>)
    }

    /// `l.len()` of a list of `M`s (a local, or a real list's `VList::Real`):
    /// known while it is virtual, else read from memory.
    pub fn flat_list_len<M: Flat>(&mut self, b: &mut ResidualBuilder, l: &mut VList) -> RedBox {
        if let Some(n) = l.len_w(M::N) {
            return n;
        }
        let a = Self::flat_list_addr::<M>(b, l);
        match vec_layout::<M::T>() {
            Some(vl) => self.vec_len(b, &a, vl),
            None => b.red_call(flat_vec_len::<M>, "vec_len", &[a], &[ValTy::U64])[0],
        }
    }

    /// `l[index]` of a list of `M`s, flattened (`N` slots of types `tys`;
    /// `class` the elements' alias class).
    pub fn flat_list_get<M: Flat, const N: usize>(
        &mut self,
        b: &mut ResidualBuilder,
        l: &mut VList,
        index: &RedBox,
        class: u32,
        tys: &[ValTy],
    ) -> [RedBox; N] {
        if let Some(s) = l.get_w(index, M::N) {
            return crate::compile::frame::boxes(s);
        }
        let a = Self::flat_list_addr::<M>(b, l);
        crate::compile::frame::boxes(&self.flat_get::<M>(b, &a, index, class, tys))
    }

    /// `l[index] = value` on a list of `M`s.
    pub fn flat_list_set<M: Flat>(
        &mut self,
        b: &mut ResidualBuilder,
        l: &mut VList,
        index: &RedBox,
        value: &[RedBox],
        class: u32,
    ) {
        if !l.set_w(index, value) {
            let a = Self::flat_list_addr::<M>(b, l);
            self.flat_set::<M>(b, &a, index, value, class);
        }
    }

    /// `l.push(value)` on a list of `M`s.
    pub fn flat_list_push<M: Flat>(&mut self, b: &mut ResidualBuilder, l: &mut VList, value: &[RedBox], class: u32) {
        if !l.push_w(value) {
            let a = Self::flat_list_addr::<M>(b, l);
            self.flat_vec_push(b, &a, value, &FlatVec::of::<M>(class));
        }
    }

    /// `l.pop()` on a list of `M`s: the `Option` flattened (`N` slots of
    /// types `tys`: its tag, then the element's).
    pub fn flat_list_pop<M: Flat, const N: usize>(
        &mut self,
        b: &mut ResidualBuilder,
        l: &mut VList,
        class: u32,
        tys: &[ValTy],
    ) -> [RedBox; N] {
        match l.pop_w(M::N) {
            Some(Some(e)) => {
                let mut out = RedBox::zeros::<N>(tys);
                out[0] = RedBox::constant(tys[0], 1);
                out[1..].copy_from_slice(&e);
                out
            }
            Some(None) => RedBox::zeros::<N>(tys),
            None => {
                let a = Self::flat_list_addr::<M>(b, l);
                let v = self.flat_vec_pop(b, &a, &FlatVec::of::<M>(class), tys);
                crate::compile::frame::boxes(&v)
            }
        }
    }
}

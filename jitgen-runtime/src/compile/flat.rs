//! Elements of real lists of enums (flat lists: each element its tag and the
//! payload slots of every variant, [`crate::run::heap::Flat`]), read and
//! written for generating extensions: in place where the enum's layout was
//! measured (the tag and the slots, through the facts of
//! [`JitState::load_field`]), else by a call of the runtime's
//! `flat_vec_get` or `flat_vec_set`.

use crate::compile::redbox::RedBox;
use crate::compile::state::{Frame, JitState};
use crate::ir::builder::ResidualBuilder;
use crate::ir::ops::ValTy;
use crate::run::heap::{flat_vec_get, flat_vec_set, vec_layout, Flat};

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
        let tag = self.load_field(b, el.tag.1, &e, el.tag.0, class, el.tag.0);
        let mut words = vec![b.red_cast(&tag, ValTy::U32)];
        for (off, ty) in &el.slots {
            words.push(self.load_field(b, *ty, &e, *off, class, *off));
        }
        words
    }

    /// Writes `value` (a tag and every slot, as [`JitState::flat_get`] reads
    /// them) into element `index` of the real list of `M` at `addr`: where
    /// the variant is known, its tag and its own slots in place.
    pub fn flat_set<M: Flat>(
        &mut self,
        b: &mut ResidualBuilder,
        addr: &RedBox,
        index: &RedBox,
        value: &[RedBox],
        class: u32,
    ) {
        match (M::layout(), vec_layout::<M::T>(), value[0].as_const()) {
            (Some(el), Some(vl), Some(k)) => {
                let e = self.vec_elem(b, addr, index, el.size, vl);
                self.store_field(b, &e, el.tag.0, &RedBox::constant(el.tag.1, k), class, el.tag.0);
                for (j, (off, _)) in el.slots.iter().enumerate() {
                    if el.slot_variant[j] == k as usize {
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
}

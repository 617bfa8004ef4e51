//! How a generating extension's frames hold their values: layouts.
//!
//! A frame is the runtime's `PointFrame`: a point's number, its green values
//! as words, its red boxes and its slots (containers, pointers). What the
//! runtime asks of a frame (key, red boxes, pointers, lists) is the runtime's
//! code. What remains typed is the packing: a point's layout is the
//! representations of its live variables, in order, and each layout gets one
//! function that packs values of those types into the runtime's `Values`
//! (`__valsN`) and one that unpacks them (`__unvalsN`). Many points share a
//! layout (TLC: 483 points, about 170 layouts); a call's result is held the
//! same way, as a layout of one value.

use std::collections::HashMap;

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use crate::repr::*;

/// How one value is held in a frame.
#[derive(Clone)]
enum Held {
    /// A green scalar: one word.
    Word(Sc),
    /// A green reference: its address.
    Ref,
    /// A green slice: its address and length.
    Slice,
    /// Red boxes: a scalar (`None`), or an array of that many.
    Reds(Option<usize>),
    /// A green enum's constant boxes: a slot.
    Consts(usize),
    /// Slots of the runtime's kinds.
    Ptr,
    Opt,
    Scalars(Sc),
    Flat(Ident, usize),
    Dict(Sc, Sc),
    Ptrs,
    /// A value that holds nothing (`()`).
    Nothing,
}

fn held(r: &Repr, green: bool) -> Held {
    match r {
        Repr::Unit | Repr::Bad(_) => Held::Nothing,
        Repr::G(sc) => Held::Word(*sc),
        Repr::GRef(_) => Held::Ref,
        Repr::GSlice(_) => Held::Slice,
        Repr::Enum(_, n) if green => Held::Consts(*n),
        Repr::Enum(_, n) => Held::Reds(Some(*n)),
        Repr::R(_) | Repr::RPtr => Held::Reds(None),
        Repr::RSlice => Held::Reds(Some(2)),
        Repr::VPtr => Held::Ptr,
        Repr::VOpt => Held::Opt,
        Repr::VList(sc) => Held::Scalars(*sc),
        Repr::VEList(ety, n) => Held::Flat(flat_marker(ety), *n),
        Repr::VDict(k, v) => Held::Dict(*k, *v),
        Repr::VOList(_) => Held::Ptrs,
    }
}

/// Where a layout's value `k` is: its first word, red box and slot.
#[derive(Clone, Copy, Default)]
struct At {
    word: usize,
    red: usize,
    slot: usize,
}

/// One layout: its values' types and how each is held.
struct Layout {
    tys: Vec<TokenStream>,
    held: Vec<Held>,
}

impl Layout {
    /// Where each value is.
    fn places(&self) -> Vec<At> {
        let mut at = At::default();
        let mut out = vec![];
        for h in &self.held {
            out.push(at);
            match h {
                Held::Word(_) | Held::Ref => at.word += 1,
                Held::Slice => at.word += 2,
                Held::Reds(None) => at.red += 1,
                Held::Reds(Some(n)) => at.red += n,
                Held::Nothing => {}
                _ => at.slot += 1,
            }
        }
        out
    }

    /// `__valsN`: typed values into `Values`.
    fn pack_fn(&self, name: &Ident) -> TokenStream {
        let rt = rt();
        let args: Vec<Ident> = (0..self.tys.len()).map(|k| format_ident!("a{}", k)).collect();
        let tys = &self.tys;
        let (mut words, mut reds, mut slots) = (vec![], vec![], vec![]);
        for (a, h) in args.iter().zip(&self.held) {
            match h {
                Held::Word(sc) => words.push(to_word(*sc, quote!(#a))),
                Held::Ref => words.push(quote!(#rt::frame::ref_word(#a))),
                Held::Slice => {
                    words.push(quote!(#a.as_ptr() as usize as u64));
                    words.push(quote!(#a.len() as u64));
                }
                Held::Reds(None) => reds.push(quote!(#a)),
                Held::Reds(Some(n)) => reds.extend((0..*n).map(|i| quote!(#a[#i]))),
                Held::Nothing => {}
                Held::Consts(_) => slots.push(quote!(#rt::Slot::Consts(#a.iter().copied().collect()))),
                Held::Ptr => slots.push(quote!(#rt::Slot::Ptr(#a))),
                Held::Opt => slots.push(quote!(#rt::Slot::Opt(#a.0, #a.1))),
                Held::Scalars(sc) => {
                    let (t, vt) = (sc_rust(*sc), sc_valty(*sc));
                    slots.push(
                        quote!(#rt::Slot::Scalars(#a, #vt, #rt::heap::vec_new_repeat::<#t>, #rt::heap::vec_set::<#t>)),
                    )
                }
                Held::Flat(m, n) => slots.push(quote!(#rt::Slot::Flat(#a, #n, #rt::heap::flat_vec_new::<#m>))),
                Held::Dict(k, v) => {
                    let (kt, vt, kvt) = (sc_rust(*k), sc_rust(*v), sc_valty(*k));
                    slots.push(quote!(#rt::Slot::Dict(#a, #kvt, #rt::heap::map_new::<#kt, #vt>, #rt::heap::map_insert::<#kt, #vt>)))
                }
                Held::Ptrs => slots.push(quote!(#rt::Slot::Ptrs(#a))),
            }
        }
        quote! {
            #[inline(never)]
            fn #name<'a>(#(#args: #tys),*) -> #rt::Values {
                #rt::Values::new(&[#(#words),*], &[#(#reds),*], ::std::vec![#(#slots),*])
            }
        }
    }

    /// `__unvalsN`: `Values` back into typed values.
    fn unpack_fn(&self, name: &Ident) -> TokenStream {
        let rt = rt();
        let tys = &self.tys;
        let exprs = self.held.iter().zip(self.places()).map(|(h, at)| {
            let (w, r, s) = (at.word, at.red, at.slot);
            match h {
                Held::Word(sc) => from_word(*sc, quote!(__v.word(#w))),
                Held::Ref => quote!(#rt::frame::green_ref(__v.word(#w))),
                Held::Slice => {
                    let w1 = w + 1;
                    quote!(#rt::frame::green_slice(__v.word(#w), __v.word(#w1)))
                }
                Held::Reds(None) => quote!(__v.red(#r)),
                Held::Reds(Some(_)) => quote!(#rt::frame::boxes(__v.reds_from(#r))),
                Held::Nothing => quote!(()),
                Held::Consts(n) => quote!(__v.take(#s).into_consts::<#n>()),
                Held::Ptr => quote!(__v.take(#s).into_ptr()),
                Held::Opt => quote!(__v.take(#s).into_opt()),
                Held::Scalars(_) | Held::Flat(..) => quote!(__v.take(#s).into_list()),
                Held::Dict(..) => quote!(__v.take(#s).into_dict()),
                Held::Ptrs => quote!(__v.take(#s).into_ptrs()),
            }
        });
        quote! {
            #[inline(never)]
            fn #name<'a>(mut __v: #rt::Values) -> (#(#tys,)*) {
                (#(#exprs,)*)
            }
        }
    }
}

/// The layouts of an extension, in the order first asked for.
#[derive(Default)]
pub(crate) struct Layouts {
    by_sig: HashMap<String, usize>,
    all: Vec<Layout>,
}

impl Layouts {
    /// The number of the layout of values of these representations (with
    /// whether each is green).
    pub fn of(&mut self, values: &[(Repr, bool)]) -> usize {
        let tys: Vec<TokenStream> = values.iter().map(|(r, _)| field_ty(r)).collect();
        let held: Vec<Held> = values.iter().map(|(r, g)| held(r, *g)).collect();
        let sig = values.iter().zip(&tys).map(|((r, g), t)| format!("{r:?}/{g}/{t}")).collect::<Vec<_>>().join(", ");
        let n = self.all.len();
        *self.by_sig.entry(sig).or_insert_with(|| {
            self.all.push(Layout { tys, held });
            n
        })
    }

    /// The slot of value `k` of layout `n`.
    pub fn slot_of(&self, n: usize, k: usize) -> usize {
        self.all[n].places()[k].slot
    }

    /// The functions of the layouts `used`.
    pub fn emit(&self, used: &std::collections::BTreeSet<usize>) -> TokenStream {
        let fns = self.all.iter().enumerate().filter(|(n, _)| used.contains(n)).map(|(n, l)| {
            let (pack, unpack) = (l.pack_fn(&pack_name(n)), l.unpack_fn(&unpack_name(n)));
            quote!(#pack #unpack)
        });
        quote!(#(#fns)*)
    }
}

/// `__valsN`.
pub(crate) fn pack_name(n: usize) -> Ident {
    format_ident!("__vals{}", n)
}

/// `__unvalsN`.
pub(crate) fn unpack_name(n: usize) -> Ident {
    format_ident!("__unvals{}", n)
}

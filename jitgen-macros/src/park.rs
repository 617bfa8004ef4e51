//! How a portal's state goes back to the interpreter after a hand-over:
//! where it parks, which of its variables the interpreter may have changed,
//! the struct they are parked in, the code that fills it from a parked
//! state (objects moved out of the arena, virtual objects and lists
//! rebuilt), and the interpreter's variables assigned from it.
//!
//! Execute mode parks at the portal's merge point where the merge point
//! starts its block. A merge point inside its block is the first statement
//! of a `while let`'s body, after the pattern's bindings: execute mode parks
//! at the head of that loop instead, before the turn's condition is tested,
//! and the outlined loop is entered there again (`outline`), so that the
//! interpreter tests it and makes the bindings itself. A portal that cannot
//! park runs the rest of a call that handed over in execute mode, the
//! extension interpreting: correct, and far slower than the interpreter.

use std::collections::HashSet;

use hint_annotator::flowgraph::Var;
use hint_annotator::types::Ty;
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use crate::entry::{base_name, live_name};
use crate::repr::*;
use crate::timeshift::Gen;

/// How a variable the interpreter may have changed goes back to it when a
/// portal continues in the interpreter proper after a hand-over.
pub(crate) enum ParkKind {
    /// A scalar: green (a Rust value in the frame) or red (a constant box).
    Scalar(Sc, bool),
    /// An owned object passed by `&mut`: unchanged, or one residual code
    /// allocated (moved out of the arena).
    Owned(TokenStream),
    /// A shared reference.
    Ref(TokenStream),
    /// A `Vec` of scalars: real (as `Owned`), or virtual (its elements).
    List(Sc),
    /// A `Vec` of a plain enum of `n` slots: real, or virtual (flattened).
    EnumList(Ty, usize),
    /// A `Vec` of a struct whose objects may be virtual: real, or a virtual
    /// list of pointers (each object rebuilt by `__unpark_S`).
    ObjList(String),
    /// A local struct the extension may have made virtual: unchanged in
    /// place, or rebuilt by `__unpark_S` (a newtype around a `Vec` stack).
    Obj(String),
}

pub(crate) struct ParkVar {
    field: Ident,
    param: Ident,
    src: TokenStream,
    kind: ParkKind,
}

/// The variables a portal gets back at its merge point, or `None` when one
/// of them cannot be handed back (then the portal does not park: after a
/// hand-over, the rest of its call runs in execute mode).
pub(crate) fn park_plan(gen: &Gen, fi: usize, vars: &[Var], mutable: &HashSet<String>) -> Option<Vec<ParkVar>> {
    let f = gen.fns[fi];
    let mut plan = vec![];
    for v in vars {
        let info = f.graph.var(*v);
        let name = info.name.clone()?;
        if !mutable.contains(base_name(&name)) {
            continue;
        }
        if name == "self" {
            return None;
        }
        let kind = match (gen.repr(fi, *v), &info.ty) {
            (Repr::G(sc), _) => ParkKind::Scalar(sc, true),
            (Repr::R(sc), _) => ParkKind::Scalar(sc, false),
            (Repr::RPtr, Ty::Ref { .. } | Ty::Boxed(_)) => return None,
            (Repr::RPtr, t) => ParkKind::Owned(rust_ty(t, None)),
            (Repr::VList(sc), Ty::Vec(_)) => ParkKind::List(sc),
            (Repr::VEList(ety, w), Ty::Vec(_)) => ParkKind::EnumList(ety, w),
            (Repr::VOList(s), Ty::Vec(_)) => ParkKind::ObjList(s),
            (Repr::VPtr, Ty::Struct(s)) => ParkKind::Obj(s.clone()),
            (Repr::GRef(_), Ty::Ref { mutable: false, to }) => {
                let t = rust_ty(to, None);
                ParkKind::Ref(quote!(&'static #t))
            }
            (Repr::GSlice(target), Ty::Ref { mutable: false, .. }) => {
                let t = rust_ty(&target, None);
                ParkKind::Ref(quote!(&'static [#t]))
            }
            (Repr::Unit, _) => continue,
            _ => return None,
        };
        let (param, src) = live_name(&name);
        plan.push(ParkVar { field: format_ident!("v{}", v.0), param, src, kind });
    }
    Some(plan)
}

/// A `Vec` rebuilt from the red boxes `__items` of a virtual list (each a
/// constant when handing over; `msg` if not).
pub(crate) fn rebuilt_list(le: &LElem, msg: &str) -> TokenStream {
    match le {
        LElem::Sc(sc) => {
            let back = from_word(*sc, quote!(__x.as_const().expect(#msg)));
            quote!(__items.iter().map(|__x| #back).collect())
        }
        LElem::Enum(ety, w) => {
            let (_, unflat, _) = enum_helpers(ety);
            quote!(__items
                .chunks(#w)
                .map(|__c| {
                    let __words: ::std::vec::Vec<u64> = __c.iter().map(|__x| __x.as_const().expect(#msg)).collect();
                    #unflat(&__words)
                })
                .collect())
        }
    }
}

/// `__unpark_S(heap, p) -> S`: the object a parked state's pointer names,
/// rebuilt for the interpreter (a virtual one from its fields and lists, a
/// forced one moved out of the arena).
pub(crate) fn unpark_fn(sname: &str, types: &hint_annotator::ModuleTypes) -> TokenStream {
    let rt = rt();
    let d = &types.structs[sname];
    let (sn, f) = (format_ident!("{}", sname), format_ident!("__unpark_{}", sname));
    let msg = format!("jitgen: a field of a `{sname}` is not known when handing over to the interpreter");
    let lost = format!("jitgen: cannot hand a `{sname}` made by residual code back to the interpreter");
    let (mut k, mut j) = (0usize, 0usize);
    let mut inits = vec![];
    for (name, t) in &d.fields {
        let fid = member(name);
        match list_field(t, types) {
            Some(le) => {
                let et = le.rust();
                let rebuilt = rebuilt_list(&le, &msg);
                inits.push(quote!(#fid: match &__o.lists[#j] {
                    #rt::VList::Virtual(__items) => #rebuilt,
                    #rt::VList::Real(__p) => {
                        let __a = __p.as_const().expect(#msg);
                        // SAFETY: a real list's address is that of a live
                        // Vec of its type, moved into this object.
                        unsafe { #rt::heap::take_vec::<#et>(__a) }
                    }
                    #rt::VList::Tail(__p, __items, ..) => {
                        let __a = __p.as_const().expect(#msg);
                        // SAFETY: as for a real list; its tail follows.
                        let mut __v = unsafe { #rt::heap::take_vec::<#et>(__a) };
                        let __t: ::std::vec::Vec<#et> = #rebuilt;
                        __v.extend(__t);
                        __v
                    }
                }));
                j += 1;
            }
            None => {
                let sc = scalar(t).expect("a virtual struct's fields are scalars or lists");
                let back = from_word(sc, quote!(__o.fields[#k].as_const().expect(#msg)));
                inits.push(quote!(#fid: #back));
                k += 1;
            }
        }
    }
    quote! {
        #[allow(non_snake_case, unused_unsafe, clippy::all)]
        fn #f(__heap: &#rt::virtuals::VHeap, __p: &#rt::VPtr) -> #sn {
            let __taken = |__r: &#rt::RedBox| {
                #rt::heap::arena_take::<#sn>(__r.as_const().expect(#msg)).expect(#lost)
            };
            match __p {
                #rt::VPtr::Real(__r) => __taken(__r),
                #rt::VPtr::Virtual(__i) => {
                    let __o = &__heap.objects[*__i as usize];
                    if let Some(__r) = &__o.forced {
                        return __taken(__r);
                    }
                    #sn { #(#inits),* }
                }
            }
        }
    }
}

/// How a portal's state goes back to the interpreter after a hand-over
/// (see `park_plan`): the struct of its variables and the code that fills
/// it from a parked state and the interpreter's variables from it.
pub(crate) struct Park {
    pub(crate) parked: Ident,
    pub(crate) parked_fields: Vec<TokenStream>,
    pub(crate) origins: Vec<TokenStream>,
    pub(crate) unparks: Vec<TokenStream>,
    pub(crate) assigns: Vec<TokenStream>,
    /// Whether the state parks at the head of the loop whose body holds
    /// the merge point (see `park_point`): the loop, entered again, tests
    /// its condition first. Only an outlined loop can (see `outline`);
    /// where the loop is not outlined, the portal does not park.
    pub(crate) at_head: bool,
    pub(crate) field_pats: Vec<TokenStream>,
    pub(crate) unpack: Ident,
    pub(crate) pid: u32,
}
/// The struct a portal's state goes back to the interpreter in, and the code
/// around it (see `Park`).
pub(crate) fn park_pieces(
    gen: &mut Gen,
    unpark_structs: &mut Vec<String>,
    fi: usize,
    point: usize,
    mutable: &HashSet<String>,
    name: &str,
    handed: &[(TokenStream, Ident)],
) -> Park {
    let head = park_point(gen, fi, point);
    let at_head = head.is_some_and(|p| p != point);
    let point = head.unwrap_or(point);
    let plan = head.and_then(|_| park_plan(&gen, fi, &gen.points[point].live.clone(), &mutable));
    if plan.is_some() {
        gen.park_points.insert(point);
    }
    let plan = plan.unwrap_or_default();
    let parked = format_ident!("__Parked_{}", name);
    let mut parked_fields = vec![];
    let mut origins = vec![];
    let mut unparks = vec![];
    let mut assigns = vec![];
    for pv in &plan {
        park_var(pv, &mut parked_fields, &mut origins, &mut unparks, &mut assigns, unpark_structs, handed);
    }
    // The frame's values, those the plan does not name unbound.
    let field_pats: Vec<TokenStream> = gen.points[point]
        .live
        .iter()
        .map(|v| {
            let id = format_ident!("v{}", v.0);
            if plan.iter().any(|pv| pv.field == id) {
                quote!(#id)
            } else {
                quote!(_)
            }
        })
        .collect();
    let unpack = crate::frame::unpack_name(gen.point_layout(point));
    let pid = point as u32;
    Park { parked, parked_fields, origins, unparks, assigns, at_head, field_pats, unpack, pid }
}

/// The point a portal whose merge point is `point` parks at after a
/// hand-over: the merge point itself where it starts its block; where it
/// does not (a `while let`'s body, whose pattern binds before it), the head
/// of the loop, from which every path to it comes (execute mode stops
/// there before the turn's bindings are made, and the interpreter makes
/// them); `None` where there is no such head.
fn park_point(gen: &Gen, fi: usize, point: usize) -> Option<usize> {
    let pt = &gen.points[point];
    if pt.op == 0 {
        return Some(point);
    }
    let f = gen.fns[fi];
    let heads = &gen.plans[fi].loop_heads;
    // Backwards from the merge point's block, up to loop heads.
    let (mut head, mut seen, mut todo) = (None, HashSet::new(), vec![pt.block]);
    while let Some(b) = todo.pop() {
        for pred in f.graph.graph.neighbors_directed(b, petgraph::Direction::Incoming) {
            if heads.contains(&pred) {
                if head.is_some_and(|h| h != pred) {
                    return None;
                }
                head = Some(pred);
            } else if pred == pt.block || pred == f.graph.start {
                return None;
            } else if seen.insert(pred) {
                todo.push(pred);
            }
        }
    }
    gen.point_ids.get(&(fi, head?, 0)).copied()
}

/// One variable of a park plan: its field of the parked struct, the code
/// that fills it from the parked state, and its assignment back.
fn park_var(
    pv: &ParkVar,
    parked_fields: &mut Vec<TokenStream>,
    origins: &mut Vec<TokenStream>,
    unparks: &mut Vec<TokenStream>,
    assigns: &mut Vec<TokenStream>,
    unpark_structs: &mut Vec<String>,
    handed: &[(TokenStream, Ident)],
) {
    let rt = rt();
    let (field, param, src) = (&pv.field, &pv.param, &pv.src);
    let msg =
        format!("jitgen: `{}` is not known when handing over to the interpreter", src.to_string().replace(' ', ""));
    match &pv.kind {
        ParkKind::Scalar(sc, green) => {
            let t = sc_rust(*sc);
            parked_fields.push(quote!(pub #param: #t));
            let val = if *green { quote!(#field) } else { from_word(*sc, quote!(#field.as_const().expect(#msg))) };
            unparks.push(quote!(#param: #val));
            assigns.push(quote!(#src = __p.#param;));
        }
        ParkKind::ObjList(sname) => {
            let sn = format_ident!("{}", sname);
            let t = quote!(::std::vec::Vec<#sn>);
            parked_fields.push(quote!(pub #param: ::core::option::Option<#t>));
            let orig = format_ident!("__orig_{}", param);
            origins.push(quote!(let #orig = &*#param as *const #t as usize as u64;));
            let unpark = format_ident!("__unpark_{}", sname);
            if !unpark_structs.contains(sname) {
                unpark_structs.push(sname.clone());
            }
            unparks.push(quote!(#param: match #field {
                #rt::VPList::Real(__p) => {
                    let __a = __p.as_const().expect(#msg);
                    // SAFETY: as for lists of scalars.
                    if __a == #orig { None } else { Some(unsafe { #rt::heap::take_vec(__a) }) }
                }
                // (Spilled frames were put back by `unspill_all`.)
                #rt::VPList::Virtual(__ptrs) | #rt::VPList::Spilled { below: None, items: __ptrs, .. } => Some(__ptrs.iter().map(|__q| #unpark(&__vheap, __q)).collect()),
                #rt::VPList::Over(__p, __ptrs) | #rt::VPList::Spilled { below: Some(__p), items: __ptrs, .. } => {
                    let __a = __p.as_const().expect(#msg);
                    let __more = __ptrs.iter().map(|__q| #unpark(&__vheap, __q));
                    if __a == #orig {
                        #param.extend(__more);
                        None
                    } else {
                        // SAFETY: as for lists of scalars.
                        let mut __v: #t = unsafe { #rt::heap::take_vec(__a) };
                        __v.extend(__more);
                        Some(__v)
                    }
                }
            }));
            assigns.push(quote!(if let ::core::option::Option::Some(__v) = __p.#param { #src = __v; }));
        }
        ParkKind::Obj(sname) => {
            let sn = format_ident!("{}", sname);
            parked_fields.push(quote!(pub #param: ::core::option::Option<#sn>));
            let unpark = format_ident!("__unpark_{}", sname);
            if !unpark_structs.contains(sname) {
                unpark_structs.push(sname.clone());
            }
            let lost = format!("jitgen: cannot hand `{src}` made by residual code back to the interpreter");
            let handed_tmp = handed.iter().find(|(h, _)| h.to_string() == src.to_string());
            // A real object: the interpreter's own, changed in place if
            // at all (`None`), or one residual code made (in the arena);
            // a virtual one is rebuilt.
            let real = match handed_tmp {
                // Handed to compiled code: whatever the arena holds at
                // its address now (see `Owned` below).
                Some(_) => quote!(#rt::heap::arena_take::<#sn>(__a)),
                None => {
                    let orig = format_ident!("__orig_{}", param);
                    origins.push(quote!(let #orig = &*#param as *const #sn as usize as u64;));
                    quote!(if __a == #orig { None } else { Some(#rt::heap::arena_take::<#sn>(__a).expect(#lost)) })
                }
            };
            // (An object backed by a real one was written back into it
            // before parking: `VHeap::write_back`.)
            unparks.push(quote!(#param: match __vheap.resolve(&#field) {
                #rt::VPtr::Real(__r) => {
                    let __a = __r.as_const().expect(#msg);
                    #real
                }
                __q => ::core::option::Option::Some(#unpark(&__vheap, &__q)),
            }));
            assigns.push(assign_back(src, param, handed_tmp));
        }
        ParkKind::Owned(_) | ParkKind::List(_) | ParkKind::EnumList(..) => {
            // An owned object: unchanged (None), one residual code
            // made (moved out of the arena), or a virtual list
            // (rebuilt from its elements).
            let t = match &pv.kind {
                ParkKind::Owned(t) => t.clone(),
                ParkKind::List(sc) => {
                    let e = sc_rust(*sc);
                    quote!(::std::vec::Vec<#e>)
                }
                ParkKind::EnumList(ety, _) => {
                    let e = rust_ty(ety, None);
                    quote!(::std::vec::Vec<#e>)
                }
                ParkKind::Scalar(..) | ParkKind::Ref(_) | ParkKind::ObjList(_) | ParkKind::Obj(_) => {
                    unreachable!("matched above")
                }
            };
            parked_fields.push(quote!(pub #param: ::core::option::Option<#t>));
            let orig = format_ident!("__orig_{}", param);
            origins.push(quote!(let #orig = &*#param as *const #t as usize as u64;));
            let lost = format!("jitgen: cannot hand `{src}` made by residual code back to the interpreter");
            let is_list = !matches!(&pv.kind, ParkKind::Owned(_));
            let from_addr = |w: TokenStream| {
                let take = if is_list {
                    // SAFETY: a list local moved here from that
                    // address, which is a live Vec of its type.
                    quote!(unsafe { #rt::heap::take_vec(__a) })
                } else {
                    quote!(#rt::heap::arena_take::<#t>(__a).expect(#lost))
                };
                quote!({
                    let __a = #w.as_const().expect(#msg);
                    if __a == #orig { None } else { Some(#take) }
                })
            };
            let rebuilt = match &pv.kind {
                ParkKind::List(sc) => Some(rebuilt_list(&LElem::Sc(*sc), &msg)),
                ParkKind::EnumList(ety, w) => Some(rebuilt_list(&LElem::Enum(ety.clone(), *w), &msg)),
                _ => None,
            };
            let value = match rebuilt {
                None => from_addr(quote!(#field)),
                Some(rebuilt) => {
                    let real = from_addr(quote!(__p));
                    // (Tails were moved into memory: `untail_lists`.)
                    quote!(match #field {
                        #rt::VList::Real(__p) | #rt::VList::Tail(__p, ..) => #real,
                        #rt::VList::Virtual(__items) => Some(#rebuilt),
                    })
                }
            };
            let handed_tmp = handed.iter().find(|(h, _)| h.to_string() == src.to_string());
            let value = match (handed_tmp, &pv.kind) {
                // Handed to compiled code, so in the arena: whatever the
                // arena holds at its address now (the handed object, or
                // one that compiled code made after dropping it, which
                // may reuse its address), taken here, before the arena
                // releases what compiled code made.
                (Some(_), ParkKind::Owned(_)) => quote!({
                    let __a = #field.as_const().expect(#msg);
                    #rt::heap::arena_take::<#t>(__a)
                }),
                _ => value,
            };
            unparks.push(quote!(#param: #value));
            assigns.push(assign_back(src, param, handed_tmp));
        }
        ParkKind::Ref(t) => {
            parked_fields.push(quote!(pub #param: #t));
            unparks.push(quote!(#param: #field));
            assigns.push(quote!(#src = __p.#param;));
        }
    }
}

/// The interpreter's variable `src` assigned from the parked field `param`
/// (an `Option`): where it was handed to compiled code (see
/// `Entry::handed`), what compiled code gives back, else what it did not
/// drop; else the parked value where there is one.
fn assign_back(src: &TokenStream, param: &Ident, handed: Option<&(TokenStream, Ident)>) -> TokenStream {
    match handed {
        Some((_, tmp)) => {
            let back = format_ident!("{}_back", tmp);
            let gone = format!("jitgen: compiled code dropped `{src}` and handed back none");
            quote!(#src = match __p.#param {
                ::core::option::Option::Some(__v) => __v,
                ::core::option::Option::None => #back.take().expect(#gone),
            };)
        }
        None => quote!(if let ::core::option::Option::Some(__v) = __p.#param { #src = __v; }),
    }
}

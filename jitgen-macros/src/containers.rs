//! Timeshifting the operations on containers: lists of enums and of
//! objects, dicts, fields of structures, indexing, and the objects and
//! payloads they hold (methods of `timeshift::Gen`).

use hint_annotator::flowgraph::{OpKind, Value, Var};
use hint_annotator::types::{IntTy, Ty};
use hint_annotator::Color;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::repr::*;
use crate::timeshift::*;

impl<'g> Gen<'g> {
    /// An operation on a list of enums (see `Repr::VEList`), or `None` when
    /// `op` is not one. On a virtual list at compile-time positions nothing
    /// is emitted; otherwise the list is forced and the runtime's helpers
    /// for `Vec`s of flattened elements (`heap::Flat`) are called.
    pub(crate) fn enum_list_op(&mut self, fi: usize, op: &hint_annotator::flowgraph::Op) -> Option<TokenStream> {
        let rt = rt();
        let r = op.result;
        let args = &op.args;
        let base = match op.kind {
            OpKind::NewVec | OpKind::NewVecRepeat => None,
            OpKind::Len | OpKind::GetItem | OpKind::SetItem | OpKind::Push | OpKind::Pop => match args.first() {
                Some(Value::Var(v)) if matches!(self.repr(fi, *v), Repr::VEList(..) | Repr::RPtr) => Some(*v),
                _ => return None,
            },
            _ => return None,
        };
        // A `&mut Vec<E>` (a red pointer) is worked on as the real list it points to.
        let by_ref = base.is_some_and(|v| matches!(self.repr(fi, v), Repr::RPtr));
        let list_repr = match base {
            Some(v) if by_ref => match self.value_ty(fi, &Value::Var(v)).autoderef() {
                Ty::Vec(e) if is_enum(e) && plain(e, self.cg.types()) => {
                    Repr::VEList((**e).clone(), slots(e, self.cg.types(), 0)?.len())
                }
                _ => return None,
            },
            Some(v) => self.repr(fi, v),
            None => self.repr(fi, r),
        };
        let list_of = |v: Var| {
            let id = v_ident(v);
            if by_ref {
                quote!((#rt::VList::Real(#id)))
            } else {
                quote!(#id)
            }
        };
        let Repr::VEList(ety, n) = list_repr else { return None };
        let erepr = Repr::Enum(ety.clone(), n);
        let u = quote!(#rt::RedBox);
        let usize_r = Repr::R(Sc::Int(IntTy::Usize));
        let m = flat_marker(&ety);
        let class = elem_class(&quote!(#m).to_string());
        let (_, _, tys) = enum_helpers(&ety);
        let force = |l: &TokenStream| force_flat_list(&ety, n, l.clone());
        Some(match (&op.kind, base) {
            (OpKind::Len, Some(l)) => {
                let l = list_of(l);
                self.bind(fi, r, quote!(__st.flat_list_len::<#m>(&mut __c.b, &mut #l)))
            }
            (OpKind::GetItem, Some(l)) => {
                let l = list_of(l);
                let i = self.operand(fi, &args[1], &usize_r)?;
                self.bind(
                    fi,
                    r,
                    quote!({
                        let __i = #i;
                        __st.flat_list_get::<#m, #n>(&mut __c.b, &mut #l, &__i, #class, &#tys())
                    }),
                )
            }
            (OpKind::SetItem, Some(l)) => {
                let l = list_of(l);
                let i = self.operand(fi, &args[1], &usize_r)?;
                let x = self.operand(fi, &args[2], &erepr)?;
                quote!({
                    let (__i, __x) = (#i, #x);
                    __st.flat_list_set::<#m>(&mut __c.b, &mut #l, &__i, &__x, #class);
                })
            }
            (OpKind::Push, Some(l)) => {
                let l = list_of(l);
                let x = self.operand(fi, &args[1], &erepr)?;
                quote!({
                    let __x = #x;
                    __st.flat_list_push::<#m>(&mut __c.b, &mut #l, &__x, #class);
                })
            }
            (OpKind::Pop, Some(l)) => {
                let l = list_of(l);
                let (_, _, otys) = enum_helpers(&Ty::Option(Box::new(ety.clone())));
                let m1 = n + 1;
                self.bind(fi, r, quote!(__st.flat_list_pop::<#m, #m1>(&mut __c.b, &mut #l, #class, &#otys())))
            }
            (OpKind::NewVec, None) => {
                let mut xs = vec![];
                for a in args {
                    xs.push(self.operand(fi, a, &erepr)?);
                }
                let addr = force(&quote!(__l));
                self.bind(
                    fi,
                    r,
                    quote!({
                        let mut __items: ::std::vec::Vec<#u> = ::std::vec::Vec::new();
                        #(__items.extend_from_slice(&#xs);)*
                        let __n = __items.len() / #n.max(1);
                        let mut __l = #rt::VList::Virtual(__items);
                        if __n > #rt::vlist::MAX_VIRTUAL_LEN {
                            #addr;
                        }
                        __l
                    }),
                )
            }
            (OpKind::NewVecRepeat, None) => {
                let x = self.operand(fi, &args[0], &erepr)?;
                let k = self.operand(fi, &args[1], &usize_r)?;
                self.bind(
                    fi,
                    r,
                    quote!({
                        let (__x, __k) = (#x, #k);
                        match __k.as_const() {
                            Some(__k) if (__k as usize) <= #rt::vlist::MAX_VIRTUAL_LEN => {
                                #rt::VList::Virtual(__x.repeat(__k as usize))
                            }
                            _ => {
                                __c.decline("`vec![x; n]` of enums with `n` not known at compile time");
                                break 'path None;
                            }
                        }
                    }),
                )
            }
            _ => return None,
        })
    }

    /// A `HashMap` operation (`Len` for `len()`): on a virtual dict at a
    /// constant key, nothing is emitted; otherwise Rust's own code is called.
    pub(crate) fn map_op(&mut self, fi: usize, r: Var, kind: &OpKind, args: &[Value]) -> TokenStream {
        let rt = rt();
        let Some(Value::Var(m)) = args.first() else { return self.decline("this map") };
        let Repr::VDict(ksc, vsc) = self.repr(fi, *m) else {
            return self.real_map_op(fi, r, kind, args);
        };
        let id = v_ident(*m);
        let (kt, vt, kvt, vvt, u32t) = (sc_rust(ksc), sc_rust(vsc), sc_valty(ksc), sc_valty(vsc), u32_valty());
        let addr = force_dict(ksc, vsc, quote!(#id));
        let key = match args.get(1) {
            Some(k) => match self.operand(fi, k, &Repr::R(ksc)) {
                Some(k) => k,
                None => return self.decline("a key"),
            },
            None => quote!(#rt::RedBox::u64(0)),
        };
        let call = |f: TokenStream, name: &str, extra: TokenStream, rets: TokenStream| quote!({ let __a = #addr; __c.b.red_call(#rt::heap::#f::<#kt, #vt>, #name, &[__a #extra], &#rets) });
        let code = match kind {
            OpKind::Len => {
                let real = call(quote!(map_len), "map_len", quote!(), quote!([#rt::ValTy::U64]));
                quote!(match #id.len_const() { Some(__n) => __n, None => (#real)[0] })
            }
            OpKind::MapContains => {
                let real = call(quote!(map_contains), "map_contains", quote!(, __k), quote!([#rt::ValTy::Bool]));
                quote!({ let __k = #key; match #id.contains_const(&__k) { Some(__x) => __x, None => (#real)[0] } })
            }
            OpKind::MapGet | OpKind::MapRemove => {
                let (f, name, fast) = if *kind == OpKind::MapGet {
                    (quote!(map_get), "map_get", quote!(get_const))
                } else {
                    (quote!(map_remove), "map_remove", quote!(remove_const))
                };
                let real = call(f, name, quote!(, __k), quote!([#u32t, #vvt]));
                quote!({
                    let __k = #key;
                    match #id.#fast(&__k, #vvt) { Some(__x) => __x, None => { let __v = #real; [__v[0], __v[1]] } }
                })
            }
            _ => {
                let Some(v) = args.get(2).and_then(|v| self.operand(fi, v, &Repr::R(vsc))) else {
                    return self.decline("a value");
                };
                let real = call(quote!(map_insert), "map_insert", quote!(, __k, __x), quote!([#u32t, #vvt]));
                quote!({
                    let (__k, __x) = (#key, #v);
                    match #id.insert_const(&__k, &__x) { Some(__o) => __o, None => { let __v = #real; [__v[0], __v[1]] } }
                })
            }
        };
        let _ = kvt;
        match self.repr(fi, r) {
            Repr::Unit => quote!({ let _ = #code; }),
            _ => self.bind(fi, r, code),
        }
    }

    /// An operation on a real `HashMap` whose keys or values are not
    /// scalars: one residual call of Rust's own method on the map's
    /// address, its key by reference, a value read out copied.
    fn real_map_op(&mut self, fi: usize, r: Var, kind: &OpKind, args: &[Value]) -> TokenStream {
        let name = match kind {
            OpKind::Len => ".len()",
            OpKind::MapContains => ".contains_key(&)",
            OpKind::MapGet => ".get(&).copied()",
            OpKind::MapRemove => ".remove(&)",
            _ => ".insert(,)",
        };
        let Some(Value::Var(m)) = args.first() else { return self.decline("this map") };
        if !matches!(self.repr(fi, *m), Repr::RPtr) {
            return self.decline("a HashMap whose keys or values are not scalars, known only while compiling");
        }
        // A value read by `get` is checked to be plain there (`ObjectCall::copied`).
        self.opaque_call(fi, r, name, args, None)
    }

    /// `push` or `pop` on the interpreter's own `Vec` of values that are
    /// not scalars (`String`s, `Copy` structs, enums): one residual call of
    /// Rust's own method; a `String` pushed is a copy of compiled code's
    /// (which drops its own where it dies).
    fn real_vec_push_pop(&mut self, fi: usize, r: Var, kind: &OpKind, args: &[Value]) -> TokenStream {
        let Some(Value::Var(v)) = args.first() else { return self.decline("this Vec") };
        if !matches!(self.repr(fi, *v), Repr::RPtr) {
            return self.decline("a Vec of non-scalars in residual code");
        }
        let name = if *kind == OpKind::Push { ".push()" } else { ".pop()" };
        self.opaque_call(fi, r, name, args, None)
    }

    /// An operation on a `Vec` of structs whose objects may be virtual (see
    /// `Repr::VOList`), or on the `Option` its `pop` gives; `None` when `op`
    /// is not one. A virtual list of pointers emits nothing; a real one is
    /// worked on in memory, its elements moved through the arena.
    pub(crate) fn obj_list_op(&mut self, fi: usize, op: &hint_annotator::flowgraph::Op) -> Option<TokenStream> {
        let rt = rt();
        let r = op.result;
        let args = &op.args;
        let base_repr = match args.first() {
            Some(Value::Var(v)) => self.repr(fi, *v),
            _ => Repr::Unit,
        };
        if let Repr::VOpt = base_repr {
            let a = self.operand(fi, &args[0], &base_repr)?;
            let rgreen = self.fns[fi].color(r) == Color::Green;
            return Some(match &op.kind {
                OpKind::EnumTag if rgreen => {
                    let msg = format!(
                        "the variant of `{}` is needed known while compiling, and is known only when running (an enum promoted with payloads, or read from mutable memory); promote the index it is read at instead (`hint!(pc, promote)`), or read it from code that is green (`hint!(code[pc], concrete)`)",
                        op.source
                    );
                    self.bind(fi, r, quote!(match #a.0.as_const() { Some(__w) => __w as u32, None => { __c.decline(#msg); break 'path None; } }))
                }
                OpKind::EnumTag => self.bind(fi, r, quote!(#a.0)),
                OpKind::EnumField { .. } => self.bind(fi, r, quote!(#a.1)),
                OpKind::Unwrap => {
                    let msg = "called `Option::unwrap()` on a `None` value";
                    self.bind(
                        fi,
                        r,
                        quote!({
                            let __o = #a;
                            let __ok = __c.b.red_cmp(#rt::CmpOp::Eq, &__o.0, &#rt::RedBox::constant(#rt::ValTy::U32, 1));
                            if !__c.guard(&__ok, #rt::ops::ErrorKind::Abort(#rt::residual::message_id(#msg))) {
                                break 'path None;
                            }
                            __o.1
                        }),
                    )
                }
                _ => self.decline("this use of an `Option` of a struct"),
            });
        }
        let list_repr = match op.kind {
            OpKind::NewVec => self.repr(fi, r),
            OpKind::Len | OpKind::GetItem | OpKind::SetItem | OpKind::Push | OpKind::Pop => base_repr.clone(),
            _ => return None,
        };
        // A `&mut Vec<S>` (a red pointer) is worked on as the real list it points to.
        let by_ref = matches!(base_repr, Repr::RPtr) && !matches!(op.kind, OpKind::NewVec);
        let list_repr = match (&list_repr, args.first()) {
            (Repr::RPtr, Some(a)) if by_ref => match self.value_ty(fi, a).autoderef() {
                Ty::Vec(e) if matches!(**e, Ty::Struct(_)) => match virtual_struct(e, self.cg.types()) {
                    Some(s) => Repr::VOList(s),
                    None => return None,
                },
                _ => return None,
            },
            _ => list_repr,
        };
        let Repr::VOList(sname) = list_repr else { return None };
        let sn = format_ident!("{}", sname);
        let list_of = |v: Var| {
            let id = v_ident(v);
            if by_ref {
                quote!((#rt::VPList::Real(#id)))
            } else {
                quote!(#id)
            }
        };
        // Pushes and pops go through the runtime (`VPList::push`, `pop`),
        // with the type's `VDesc`: how its objects move into memory.
        self.vstructs.insert(sname.clone());
        let desc = format_ident!("__VDESC_{}", sname);
        let decline = |what: &str| {
            let msg = format!("{what} on a `Vec<{sname}>` that is not virtual");
            quote!({ __c.decline(#msg); break 'path None; })
        };
        let (not_virtual, no_layout) = (decline("this operation"), decline("a layout not known"));
        let spilled = {
            let msg = format!("a language-level recursion whose frames are read (a `Vec<{sname}>` whose frames are on the continuation stack)");
            quote!({ __c.decline_recursion(#msg); break 'path None; })
        };
        let too_deep = {
            let msg = format!(
                "a `Vec<{sname}>` growing past {{}} virtual elements (recursion, when they are the interpreter's frames)"
            );
            quote!({
                __c.decline(format!(#msg, #rt::virtuals::MAX_VIRTUAL_PTRS));
                break 'path None;
            })
        };
        // A list with virtual elements over a real part, made all real
        // where memory is read.
        let flushed =
            |l: &TokenStream| quote!(if #l.flush(&mut __c.b, &mut __st.heap, &#desc) { __st.forget_fields(); });
        Some(match (&op.kind, &args[..]) {
            (OpKind::NewVec, xs) => {
                let mut ps = vec![];
                for x in xs {
                    ps.push(self.operand(fi, x, &Repr::VPtr)?);
                }
                let n = ps.len();
                self.bind(
                    fi,
                    r,
                    quote!({
                        if #n > #rt::virtuals::MAX_VIRTUAL_PTRS #too_deep
                        #rt::VPList::Virtual(::std::vec![#(#ps),*])
                    }),
                )
            }
            (OpKind::Len, [Value::Var(l), ..]) => {
                // Virtual elements stay virtual: an index computed from the
                // length (`last()`) finds them (`JitState::frames_elem`).
                let l = list_of(*l);
                self.bind(
                    fi,
                    r,
                    quote!({
                        match __st.frames_len(&#l, &mut __c.b, #rt::heap::vec_layout::<#sn>()) {
                            Some(__n) => __n,
                            None if matches!(&#l, #rt::VPList::Spilled { .. }) => #spilled,
                            None => #no_layout,
                        }
                    }),
                )
            }
            (OpKind::GetItem, [Value::Var(l), i]) => {
                let l = list_of(*l);
                let flush = flushed(&l);
                let i = self.operand(fi, i, &Repr::R(Sc::Int(IntTy::Usize)))?;
                self.bind(
                    fi,
                    r,
                    quote!({
                        let __i = #i;
                        match __st.frames_elem(&#l, &__c.b, &__i) {
                            Some(__p) => __p,
                            None => {
                        #flush
                        match &#l {
                            #rt::VPList::Virtual(__items) => {
                                match __i.as_const().and_then(|__k| __items.get(__k as usize)) {
                                    Some(__p) => *__p,
                                    None => #not_virtual,
                                }
                            }
                            #rt::VPList::Real(__a) | #rt::VPList::Over(__a, _) => match #rt::heap::vec_layout::<#sn>() {
                                Some(__l) => #rt::VPtr::Real(
                                    __st.vec_elem(&mut __c.b, __a, &__i, ::core::mem::size_of::<#sn>() as u64, __l),
                                ),
                                None => #no_layout,
                            },
                            #rt::VPList::Spilled { .. } => #spilled,
                        }
                            }
                        }
                    }),
                )
            }
            (OpKind::Push, [Value::Var(l), x]) => {
                let l = list_of(*l);
                let x = self.operand(fi, x, &Repr::VPtr)?;
                quote!({
                    let __x = #x;
                    let __spilling = !__c.for_portal();
                    let __pushed = __st.vlist_push(&mut __c.b, &mut #l, &#desc, __x, __spilling);
                    match __pushed {
                        Ok(true) => __st.forget_fields(),
                        Ok(false) => {}
                        Err(()) => #too_deep,
                    }
                })
            }
            (OpKind::Pop, [Value::Var(l)]) => {
                let l = list_of(*l);
                self.bind(
                    fi,
                    r,
                    quote!({
                        let (__tag, __p, __from) = __st.vlist_pop(&mut __c.b, &mut #l, &#desc);
                        if __from != #rt::virtuals::Popped::Virtual && __from != #rt::virtuals::Popped::InPlace {
                            __st.forget_fields();
                            __st.below_entry |= __from == #rt::virtuals::Popped::BelowEntry;
                        }
                        (__tag, __p)
                    }),
                )
            }
            _ => self.decline(&format!("this operation on a `Vec<{sname}>`")),
        })
    }

    pub(crate) fn get_field(
        &mut self,
        fi: usize,
        r: Var,
        rr: &Repr,
        rgreen: bool,
        base: &Value,
        name: &str,
    ) -> TokenStream {
        let rt = rt();
        let types = self.cg.types();
        let fname = member(name);
        let rty = self.fns[fi].graph.var(r).ty.clone();
        if rgreen {
            let Some(b) = self.operand(fi, base, &self.value_repr(fi, base)) else {
                return self.decline("a field read");
            };
            return match rr {
                Repr::G(_) => self.bind(fi, r, quote!(#b.#fname)),
                Repr::GRef(_) => match &rty {
                    Ty::Ref { .. } => self.bind(fi, r, quote!(#b.#fname)),
                    _ => self.bind(fi, r, quote!(&#b.#fname)),
                },
                Repr::GSlice(_) => self.bind(fi, r, quote!(&#b.#fname[..])),
                Repr::Enum(t, _) => {
                    let e = self.enum_from_rust(&t.clone(), quote!(&#b.#fname));
                    self.bind(fi, r, e)
                }
                Repr::Unit => quote!(),
                _ => self.decline("this field read"),
            };
        }
        let Some((addr, Ty::Struct(sname))) = self.red_object(fi, base) else {
            return self.decline("a field read through this pointer");
        };
        if let (Some(p), Repr::VList(_) | Repr::VEList(..)) = (self.vptr_local(fi, base), rr) {
            if let Some(Err(k)) = types.structs.get(&sname).and_then(|d| vfield_index(d, name, types)) {
                // A copy of the object's list, written back after each
                // operation on it (see `field_list_of`); forced first when
                // the copy would be used otherwise.
                let sn = format_ident!("{}", sname);
                // A list moved out of an owned object is the object's list
                // itself; one read through a reference is a copy.
                let escapes = !moves_out(&self.value_ty(fi, base)) && self.list_temp_escapes(fi, r);
                return self.bind(
                    fi,
                    r,
                    quote!(match __st.heap.list(&#p, #k) {
                        Some(__l) if !#escapes => __l,
                        _ => {
                            #addr
                            #rt::VList::Real(__c.b.red_offset(&__addr, ::core::mem::offset_of!(#sn, #fname) as u64))
                        }
                    }),
                );
            }
        }
        if let (Some(p), Repr::R(sc)) = (self.vptr_local(fi, base), rr) {
            if let Some(Ok(k)) = types.structs.get(&sname).and_then(|d| vfield_index(d, name, types)) {
                let (sn, vt, class) = (format_ident!("{}", sname), sc_valty(*sc), alias_class(&sname));
                return self.bind(
                    fi,
                    r,
                    quote!(match __st.heap.field(&#p, #k) {
                        Some(__x) => __x,
                        None => {
                            #addr
                            let __f = ::core::mem::offset_of!(#sn, #fname) as i32;
                            __st.load_field(&mut __c.b, #vt, &__addr, __f, #class, __f)
                        }
                    }),
                );
            }
        }
        if !types.structs.contains_key(&sname) {
            return self.decline("a field of a struct the module does not define through a run-time pointer");
        }
        let sn = struct_at(&sname, types);
        let off = quote!(::core::mem::offset_of!(#sn, #fname) as u64);
        match (rr, &rty) {
            (Repr::R(sc), _) => {
                let vt = sc_valty(*sc);
                let class = alias_class(&sname);
                self.bind(
                    fi,
                    r,
                    quote!({ #addr __st.load_field(&mut __c.b, #vt, &__addr, #off as i32, #class, #off as i32) }),
                )
            }
            (Repr::RPtr | Repr::VPtr, Ty::Boxed(_) | Ty::Ref { .. }) => {
                self.bind_ptr(fi, r, quote!({ #addr __c.b.red_load(#rt::ValTy::Ptr, &__addr, #off as i32) }))
            }
            (Repr::RSlice, Ty::Ref { .. } | Ty::Boxed(_)) => {
                // A `&[T]`, `&str` or `Box<[T]>` field: its address and
                // length, as the wide pointer lays them out.
                let (class, u) = (alias_class(&sname), u64_valty());
                let layout = match &rty {
                    Ty::Boxed(_) => quote!(#rt::heap::boxed_slice_layout()),
                    _ => quote!(#rt::heap::slice_ref_layout()),
                };
                self.bind(
                    fi,
                    r,
                    quote!({
                        #addr
                        match #layout {
                            Some((__p, __n)) => {
                                let __f = #off as i32;
                                [
                                    __st.load_field(&mut __c.b, #rt::ValTy::Ptr, &__addr, __f + __p, #class, __f + __p),
                                    __st.load_field(&mut __c.b, #u, &__addr, __f + __n, #class, __f + __n),
                                ]
                            }
                            None => { __c.decline("a reference to a slice whose layout is not known"); break 'path None; }
                        }
                    }),
                )
            }
            (Repr::RPtr | Repr::VList(_) | Repr::VEList(..) | Repr::VOList(_), _) => {
                self.bind_ptr(fi, r, quote!({ #addr __c.b.red_offset(&__addr, #off) }))
            }
            (Repr::VPtr, Ty::Struct(_)) => self.bind_ptr(fi, r, quote!({ #addr __c.b.red_offset(&__addr, #off) })),
            (Repr::Enum(_, n), _) if plain(&rty, types) => {
                // A plain enum in the struct, in Rust's layout: its words read
                // by a helper, as `flat` lays them out.
                // SAFETY (of the helper): the address of a live struct of the
                // interpreter's, as residual code holds it.
                let place = quote!(&(*(__b[0] as usize as *const #sn)).#fname);
                let read = self.enum_in_place(&rty, *n, place, quote!(__addr), "an enum field");
                self.bind(fi, r, quote!({ #addr #read }))
            }
            _ => self.decline("a field of this type through a run-time pointer"),
        }
    }

    /// The `n` words of an enum of type `ty` read in place by one helper
    /// call, as `flat` lays them out: the helper makes the reference
    /// `place` of the address in `__b[0]`, residual code passes `addr` (a
    /// red box), and `what` names the call in listings.
    pub(crate) fn enum_in_place(
        &mut self,
        ty: &Ty,
        n: usize,
        place: TokenStream,
        addr: TokenStream,
        what: &str,
    ) -> TokenStream {
        let rt = rt();
        if owns_opaque(ty, self.cg.types()) {
            return self.decline("a value owning an object jitgen does not model, read in place");
        }
        let (flat, _, tys) = enum_helpers(ty);
        self.uses_enum(ty);
        // A value owning strings is read as a copy, as Rust's `clone` of it:
        // its place may be overwritten (its strings dropped) while the
        // value lives, and a value moved into a call is its own.
        let types = self.cg.types();
        let flat = if !plain(ty, types) && rebuildable(ty, types) { flat_copy_fn(ty) } else { flat };
        let cb = self.callback(
            n.max(1),
            quote! {
                let __r = #flat(unsafe { #place });
                __b[..#n].copy_from_slice(&__r);
            },
        );
        quote!(#rt::redbox::first_n::<#n>(&__c.b.red_call(#cb, #what, &[#addr], &#tys())))
    }

    pub(crate) fn get_item(
        &mut self,
        fi: usize,
        r: Var,
        rr: &Repr,
        rgreen: bool,
        base: &Value,
        idx: &Value,
    ) -> TokenStream {
        let rt = rt();
        let base_ty = self.value_ty(fi, base);
        let cont = base_ty.autoderef().clone();
        let et = match &cont {
            Ty::Vec(t) | Ty::Slice(t) | Ty::Array(t, _) => (**t).clone(),
            _ => return self.decline("indexing this value"),
        };
        if rgreen {
            let Some(b) = self.operand(fi, base, &self.value_repr(fi, base)) else {
                return self.decline("an element read");
            };
            let Some(i) = self.green(fi, idx) else { return self.decline("an index") };
            let get = match rr {
                Repr::G(_) => quote!(*__x),
                Repr::GRef(_) if matches!(et, Ty::Ref { .. }) => quote!(*__x),
                Repr::GRef(_) => quote!(__x),
                Repr::GSlice(_) => quote!(&__x[..]),
                Repr::Enum(t, _) => self.enum_from_rust(&t.clone(), quote!(__x)),
                Repr::Unit => quote!(()),
                _ => return self.decline("this element read"),
            };
            return self.bind(
                fi,
                r,
                quote!(match #b.get(#i as usize) {
                    Some(__x) => #get,
                    None => {
                        __c.b.red_bounds_check(&#rt::RedBox::u64(#i as u64), &#rt::RedBox::u64(#b.len() as u64));
                        __c.error_exit(#rt::ops::ErrorKind::IndexOutOfBounds);
                        break 'path None;
                    }
                }),
            );
        }
        let Some(i) = self.operand(fi, idx, &Repr::R(Sc::Int(IntTy::Usize))) else { return self.decline("an index") };
        match cont {
            Ty::Vec(_) if matches!(et, Ty::Struct(_)) && matches!(rr, Repr::RPtr | Repr::VPtr) => {
                // An element of a `Vec` of structs: its address, in place.
                let Some((addr, _)) = self.red_object(fi, base) else { return self.decline("this vector") };
                let t = rust_ty(&et, None);
                self.bind_ptr(
                    fi,
                    r,
                    quote!({
                        let __i = #i;
                        #addr
                        match #rt::heap::vec_layout::<#t>() {
                            Some(__l) => __st.vec_elem(&mut __c.b, &__addr, &__i, ::core::mem::size_of::<#t>() as u64, __l),
                            None => { __c.decline("a Vec whose layout is not known"); break 'path None; }
                        }
                    }),
                )
            }
            Ty::Vec(_) if is_enum(&et) && matches!(rr, Repr::Enum(..)) => {
                // An element of a real `Vec` of enums, in place: a plain
                // enum's tag and slots where its layout was measured, else
                // one helper call; an enum holding objects (a heap of them)
                // by a helper that gives their addresses among its words
                // (see `repr::payload_slots`).
                let Repr::Enum(_, n) = *rr else { unreachable!("matched above") };
                let Some((addr, _)) = self.red_object(fi, base) else { return self.decline("this vector") };
                if plain(&et, self.cg.types()) {
                    self.uses_enum(&et);
                    let (m, (_, _, tys)) = (flat_marker(&et), enum_helpers(&et));
                    let class = elem_class(&quote!(#m).to_string());
                    return self.bind(
                        fi,
                        r,
                        quote!({
                            let __i = #i;
                            #addr
                            let __v = __st.flat_get::<#m>(&mut __c.b, &__addr, &__i, #class, &#tys());
                            #rt::redbox::first_n::<#n>(&__v)
                        }),
                    );
                }
                let t = rust_ty(&et, None);
                // SAFETY (of the helper): the address of a live element of
                // the interpreter's `Vec`, bounds checked by residual code.
                let read = self.enum_in_place(
                    &et,
                    n,
                    quote!(&*(__b[0] as usize as *const #t)),
                    quote!(__e),
                    "an enum in place",
                );
                self.bind(
                    fi,
                    r,
                    quote!({
                        let __i = #i;
                        #addr
                        let __e = match #rt::heap::vec_layout::<#t>() {
                            Some(__l) => __st.vec_elem(&mut __c.b, &__addr, &__i, ::core::mem::size_of::<#t>() as u64, __l),
                            None => { __c.decline("a Vec whose layout is not known"); break 'path None; }
                        };
                        #read
                    }),
                )
            }
            Ty::Vec(_) => {
                let Some(esc) = scalar(&et) else { return self.decline("a Vec of non-scalars in residual code") };
                let Some((addr, _)) = self.red_object(fi, base) else { return self.decline("this vector") };
                let (t, vt) = (sc_rust(esc), sc_valty(esc));
                let class = elem_class(&quote!(#t).to_string());
                let real = quote!({
                    #addr
                    match #rt::heap::vec_layout::<#t>() {
                        Some(__l) => {
                            let __e = __st.vec_elem(&mut __c.b, &__addr, &__i, ::core::mem::size_of::<#t>() as u64, __l);
                            __st.load_field(&mut __c.b, #vt, &__e, 0, #class, 0)
                        }
                        None => __c.b.red_call(#rt::heap::vec_get::<#t>, "vec_get", &[__addr, __i], &[#vt])[0],
                    }
                });
                let green_base = match self.value_repr(fi, base) {
                    from @ (Repr::GRef(_) | Repr::GSlice(_)) => self.operand(fi, base, &from),
                    _ => None,
                };
                match (list_local(self, fi, base), green_base) {
                    (Some(l), _) => self.bind(
                        fi,
                        r,
                        quote!({
                            let __i = #i;
                            match #l.get_const(&__i) {
                                Some(__x) => __x,
                                None => match __st.tail_get(&mut __c.b, &#l, &__i) {
                                    Some(__x) => __x,
                                    None => #real,
                                },
                            }
                        }),
                    ),
                    (None, Some(g)) => {
                        // Green data (frozen, and part of the portal's content
                        // check) at an index known now: read now.
                        let w = to_word(esc, quote!(*__x));
                        self.bind(
                            fi,
                            r,
                            quote!({
                                let __i = #i;
                                match __i.as_const().and_then(|__k| (#g).get(__k as usize)) {
                                    Some(__x) => #rt::RedBox::constant(#vt, #w),
                                    None => #real,
                                }
                            }),
                        )
                    }
                    (None, None) => self.bind(fi, r, quote!({ let __i = #i; #real })),
                }
            }
            Ty::Slice(_) | Ty::Array(..) => {
                let addr = match self.elem_addr(fi, base, &cont, &et, &i) {
                    Ok(a) => a,
                    Err(declined) => return declined,
                };
                match rr {
                    Repr::R(sc) => {
                        let vt = sc_valty(*sc);
                        self.bind(fi, r, quote!({ let __a = #addr; __c.b.red_load(#vt, &__a, 0) }))
                    }
                    Repr::RPtr | Repr::VList(_) if is_owned_pointer(&et) => self.bind_ptr(fi, r, addr),
                    // A plain enum (`locals: [Value; 8]`): its tag and slots
                    // read in place, as a `Vec`'s element is.
                    Repr::Enum(_, n) if is_enum(&et) && plain(&et, self.cg.types()) => {
                        let n = *n;
                        self.uses_enum(&et);
                        let (m, (_, _, tys)) = (flat_marker(&et), enum_helpers(&et));
                        let class = elem_class(&quote!(#m).to_string());
                        self.bind(
                            fi,
                            r,
                            quote!({
                                let __e = #addr;
                                let __v = __st.flat_get_at::<#m>(&mut __c.b, &__e, #class, &#tys());
                                #rt::redbox::first_n::<#n>(&__v)
                            }),
                        )
                    }
                    _ => self.decline("an element of this type through a run-time pointer"),
                }
            }
            _ => self.decline("indexing this value"),
        }
    }

    /// The address of element `i` (a red box expression) of a slice or an
    /// array reached through a run-time pointer, bounds-checked as Rust
    /// does; `Err` with the decline when the sequence has no such address.
    pub(crate) fn elem_addr(
        &mut self,
        fi: usize,
        base: &Value,
        cont: &Ty,
        et: &Ty,
        i: &TokenStream,
    ) -> Result<TokenStream, TokenStream> {
        let rt = rt();
        let esize = rust_ty(et, None);
        let ptr_len = match cont {
            Ty::Slice(_) => {
                let Some(s) = self.operand(fi, base, &Repr::RSlice) else { return Err(self.decline("this slice")) };
                quote!(let __s = #s; let (__ptr, __len) = (__s[0], __s[1]);)
            }
            Ty::Array(_, n) => {
                let Some((addr, _)) = self.red_object(fi, base) else { return Err(self.decline("this array")) };
                let n = *n;
                quote!(#addr let (__ptr, __len) = (__addr, #rt::RedBox::u64(#n));)
            }
            _ => return Err(self.decline("indexing this value")),
        };
        Ok(quote!({
            #ptr_len
            __c.b.red_bounds_check(&#i, &__len);
            let __off = __c.b.red_bin(#rt::BinOp::Mul, #rt::Overflow::Wrap, &#i,
                &#rt::RedBox::u64(::core::mem::size_of::<#esize>() as u64));
            let __off = __c.b.red_cast(&__off, #rt::ValTy::Ptr);
            __c.b.red_bin(#rt::BinOp::Add, #rt::Overflow::Wrap, &__ptr, &__off)
        }))
    }

    /// Statements that bind `__addr` (a red box) to the address of the object
    /// an operand designates, following references and boxes; and the type of
    /// that object.
    pub(crate) fn red_object(&self, fi: usize, v: &Value) -> Option<(TokenStream, Ty)> {
        let rt = rt();
        let ty = self.value_ty(fi, v);
        let start = self.operand(fi, v, &Repr::RPtr)?;
        let mut code = quote!(let __addr = #start;);
        if let (Repr::VPtr, Some(s)) = (self.value_repr(fi, v), virtual_struct(&ty, self.cg.types())) {
            // Whatever its type (`S`, `Box<S>`, `&S`, `&Box<S>`), the address
            // of the struct.
            return Some((code, Ty::Struct(s)));
        }
        // The operand's box holds the address of the object its type designates.
        let mut cur = match &ty {
            Ty::Ref { to, .. } => (**to).clone(),
            Ty::Boxed(inner) => (**inner).clone(),
            other => other.clone(),
        };
        loop {
            match cur {
                Ty::Ref { to, .. } | Ty::Boxed(to) if !matches!(*to, Ty::Slice(_)) => {
                    code = quote!(#code let __addr = __c.b.red_load(#rt::ValTy::Ptr, &__addr, 0););
                    cur = *to;
                }
                Ty::Ref { .. } | Ty::Boxed(_) => return None,
                other => return Some((code, other)),
            }
        }
    }

    /// A struct residual code builds (see `built_struct`: scalars, `String`s,
    /// `Vec`s of scalars, enums rebuilt from words), made by a residual call
    /// of Rust's own code from its fields' words, in the arena.
    pub(crate) fn new_owning_struct(&mut self, fi: usize, r: Var, s: &str, args: &[Value]) -> TokenStream {
        let rt = rt();
        let types = self.cg.types().clone();
        let d = types.structs[s].clone();
        let (mut arg_code, mut inits, mut at) = (vec![], vec![], 0usize);
        for (a, (name, t)) in args.iter().zip(&d.fields) {
            let fid = member(name);
            let (x, read, width) = match (scalar(t), t) {
                (Some(sc), _) => (self.operand(fi, a, &Repr::R(sc)), from_word(sc, quote!(__b[#at])), 1),
                // SAFETY: the address of a live `String` the struct
                // literal moves (the analysis's types say so).
                (None, Ty::Str) => {
                    (self.operand(fi, a, &Repr::RPtr), quote!(unsafe { #rt::heap::take_string(__b[#at]) }), 1)
                }
                // A list moves in: the address of a real `Vec`.
                (None, Ty::Vec(e)) => {
                    let Some(sc) = scalar(e) else { return self.decline("a field value") };
                    let x = self.operand(fi, a, &Repr::VList(sc)).map(|l| {
                        let p = force_list(sc, quote!(__l));
                        quote!({ let mut __l = #l; #p })
                    });
                    let et = sc_rust(sc);
                    // SAFETY: as for a `String` (copied where it is a place
                    // of the interpreter's, as a rebuilt payload's is).
                    (x, quote!(unsafe { #rt::heap::take_or_copy_vec::<#et>(__b[#at]) }), 1)
                }
                // An enum, rebuilt from its words (its strings moved out).
                _ => {
                    let Repr::Enum(_, n) = repr(t, false, &types) else { return self.decline("a field value") };
                    self.uses_enum(t);
                    let (_, unflat, _) = enum_helpers(t);
                    let end = at + n;
                    let x = self.enum_words(fi, a, t, n).map(|w| quote!(&#w[..]));
                    (x, quote!(#unflat(&__b[#at..#end])), n)
                }
            };
            let Some(x) = x else { return self.decline("a field value") };
            arg_code.push(if width == 1 && !is_enum(t) {
                quote!(__args.push(#x);)
            } else {
                quote!(__args.extend_from_slice(#x);)
            });
            inits.push(quote!(#fid: #read));
            at += width;
        }
        let (sn, width, pt) = (format_ident!("{}", s), at.max(1), ptr_valty());
        let name = format!("new {s}");
        let cb = self.callback(
            width,
            quote! {
                let __r = #sn { #(#inits),* };
                __b[0] = #rt::heap::arena_alloc(__r) as usize as u64;
            },
        );
        let bind = self.bind(fi, r, quote!(__v[0]));
        quote! {
            let __v = {
                let mut __args = ::std::vec::Vec::new();
                #(#arg_code)*
                __c.b.red_call(#cb, #name, &__args, &[#pt])
            };
            #bind
        }
    }

    /// The red boxes of the fields of `v`, a struct of scalars (a handle an
    /// enum holds as words, `repr::flat_payload`): constants where it is
    /// green, else its fields, read from the virtual object or loaded from
    /// the real one.
    pub(crate) fn scalar_struct_words(&mut self, fi: usize, v: &Value, ty: &Ty) -> Option<TokenStream> {
        let rt = rt();
        let (sname, fields) = scalar_struct(ty, self.cg.types())?;
        let sn = format_ident!("{}", sname);
        if let Repr::GRef(_) = self.value_repr(fi, v) {
            let g = self.operand(fi, v, &Repr::GRef(ty.clone()))?;
            let words = fields.iter().map(|(name, sc)| {
                let (m, vt) = (member(name), sc_valty(*sc));
                let w = to_word(*sc, quote!(__g.#m));
                quote!(#rt::RedBox::constant(#vt, #w))
            });
            return Some(quote!({ let __g = #g; [#(#words),*] }));
        }
        let p = self.operand(fi, v, &Repr::VPtr)?;
        let words = vptr_struct_words(&sn, &sname, &fields);
        Some(quote!({ let __p = #p; #words }))
    }

    /// Records that the generated code uses the word helpers of the enum
    /// `t` (`enum_helpers`), made once per module.
    pub(crate) fn uses_enum(&mut self, t: &Ty) {
        if !self.enums.contains(t) {
            self.enums.push(t.clone());
        }
    }

    /// The operand `v` as the `n` words of the plain enum `ty` (a residual
    /// call's argument, a payload, a store): an `Option` held as a tag and
    /// an object made into them (`vopt_enum_words`).
    /// The drop of a local enum value owning strings or `Rc`s where its
    /// block ends (`OpKind::Drop`): rebuilt from its words and dropped by
    /// Rust, which frees what it owns in the arena (an object read in
    /// place is a copy: `heap::take_or_clone`). Nothing for an enum that
    /// owns nothing, or owns what cannot be rebuilt so (see
    /// `repr::drops_by_rebuilding`).
    pub(crate) fn enum_drop(&mut self, fi: usize, v: &Value) -> TokenStream {
        let ty = self.value_ty(fi, v);
        let types = self.cg.types();
        if !is_enum(&ty) || plain(&ty, types) || !drops_by_rebuilding(&ty, types, 0) {
            return quote!();
        }
        let n = slots(&ty, types, 0).map_or(0, |s| s.len());
        let Some(words) = self.enum_words(fi, v, &ty, n) else { return quote!() };
        self.uses_enum(&ty);
        let (_, unflat, _) = enum_helpers(&ty);
        let cb = self.callback(n.max(1), quote!(::core::mem::drop(#unflat(&__b[..#n]));));
        quote!(__c.b.red_call(#cb, "drop", &#words, &[]);)
    }

    pub(crate) fn enum_words(&mut self, fi: usize, v: &Value, ty: &Ty, n: usize) -> Option<TokenStream> {
        match self.value_repr(fi, v) {
            Repr::VOpt => self.vopt_enum_words(fi, v, ty, n),
            _ => self.operand(fi, v, &Repr::Enum(ty.clone(), n)),
        }
    }

    /// The words of an `Option` held as a tag and an object (`Repr::VOpt`:
    /// `Some(ins)` of a struct made here) as those of the plain enum `ft`
    /// (of `n` words) holding the struct as its fields' words
    /// (`flat_payload`). `None` for other types.
    fn vopt_enum_words(&mut self, fi: usize, v: &Value, ft: &Ty, n: usize) -> Option<TokenStream> {
        let rt = rt();
        let Ty::Option(inner) = ft else { return None };
        let (sname, fields) = flat_payload(inner, self.cg.types())?;
        let (off, _) = field_offset(ft, "Some", 0, self.cg.types())?;
        let o = self.operand(fi, v, &Repr::VOpt)?;
        self.uses_enum(ft);
        let (_, _, tys) = enum_helpers(ft);
        let words = vptr_struct_words(&format_ident!("{}", sname), &sname, &fields);
        Some(quote!({
            let (__tag, __p) = #o;
            match __tag.as_const() {
                Some(0) => #rt::RedBox::enum_value::<#n>(&#tys(), 0, &[]),
                Some(__k) => {
                    let __f = #words;
                    #rt::RedBox::enum_value::<#n>(&#tys(), __k, &[(#off, &__f[..])])
                }
                None => {
                    __c.decline("an `Option` of an object stored, its variant known only when running");
                    break 'path None;
                }
            }
        }))
    }

    /// A payload slot (or slots) of an enum array `a` at `off`, as `r`.
    pub(crate) fn payload(&mut self, fi: usize, r: Var, rr: &Repr, a: TokenStream, off: usize) -> TokenStream {
        let rt = rt();
        let rty = self.fns[fi].graph.var(r).ty.clone();
        if let Some((sname, fields)) = flat_payload(&rty, self.cg.types()) {
            // A handle held as its fields' words: a virtual object made of
            // them where red; a green one is a constant struct, kept for the
            // life of the process (one per value).
            let n = fields.len();
            let end = off + n;
            match rr {
                Repr::VPtr => {
                    self.vstructs.insert(sname.clone());
                    let desc = format_ident!("__VDESC_{}", sname);
                    return self.bind(fi, r, quote!(__st.heap.alloc(&#desc, #a[#off..#end].to_vec(), ::std::vec![])));
                }
                Repr::GRef(_) => {
                    let st = rust_ty(&rty, None);
                    let inits = fields.iter().enumerate().map(|(k, (name, sc))| {
                        let m = member(name);
                        let back = from_word(*sc, quote!(__w[#k]));
                        quote!(#m: #back)
                    });
                    return self.bind(
                        fi,
                        r,
                        quote!({
                            let __w: ::std::vec::Vec<u64> = #a[#off..#end].iter().filter_map(|__x| __x.as_const()).collect();
                            if __w.len() != #n {
                                __c.decline("a payload expected to be known");
                                break 'path None;
                            }
                            #rt::heap::green_copy(&__w, || #st { #(#inits),* })
                        }),
                    );
                }
                _ => return self.decline("this enum payload"),
            }
        }
        match rr {
            Repr::G(sc) => {
                let back = from_word(*sc, quote!(__w));
                self.bind(
                    fi,
                    r,
                    quote!(match #a[#off].as_const() { Some(__w) => #back, None => { __c.decline("a payload expected to be known"); break 'path None; } }),
                )
            }
            Repr::R(_) => self.bind(fi, r, quote!(#a[#off])),
            // A `&str`: its address and length.
            Repr::RSlice => {
                let next = off + 1;
                self.bind(fi, r, quote!([#a[#off], #a[#next]]))
            }
            // A `&str` known while compiling: a literal's (or text frozen
            // for the compilation), its bytes.
            Repr::GSlice(_) => {
                let next = off + 1;
                self.bind(
                    fi,
                    r,
                    quote!(match (#a[#off].as_const(), #a[#next].as_const()) {
                        // SAFETY: the words are a `&str`'s (see `enum_helper_fns`)
                        // that lives for the compilation.
                        (Some(__p), Some(__n)) => unsafe { ::core::slice::from_raw_parts(__p as usize as *const u8, __n as usize) },
                        _ => { __c.decline("text expected to be known"); break 'path None; }
                    }),
                )
            }
            Repr::RPtr | Repr::VList(_) => self.bind_ptr(fi, r, quote!(#a[#off])),
            Repr::Enum(_, n) => {
                let end = off + n;
                self.bind(fi, r, quote!(#rt::redbox::first_n::<#n>(&#a[#off..#end])))
            }
            Repr::GRef(t) => {
                // A pointer in a green enum value read from frozen data.
                let ty = rust_ty(t, Some(&quote!('a)));
                self.bind(
                    fi,
                    r,
                    quote!(match #a[#off].as_const() {
                        // SAFETY: green enum values come from frozen data
                        // borrowed for the whole compilation.
                        Some(__w) => unsafe { &*(__w as usize as *const #ty) },
                        None => { __c.decline("a pointer expected to be known"); break 'path None; }
                    }),
                )
            }
            Repr::Unit => quote!(),
            _ => self.decline("this enum payload"),
        }
    }

    /// A green enum value as an array of constant boxes, from a Rust place.
    pub(crate) fn enum_from_rust(&mut self, ty: &Ty, place: TokenStream) -> TokenStream {
        let rt = rt();
        self.uses_enum(ty);
        let (flat, _, tys) = enum_helpers(ty);
        quote!({
            let __w = #flat(#place);
            let __t = #tys();
            #rt::RedBox::constants(&__t, &__w)
        })
    }

    /// An operation on a list: its length, an element, a push or pop, a new list.
    pub(crate) fn list_op(&mut self, fi: usize, op: &hint_annotator::flowgraph::Op) -> TokenStream {
        let rt = rt();
        let OpParts { r, rr, rgreen, args } = self.op_parts(fi, op);
        match &op.kind {
            OpKind::GetItem => self.get_item(fi, r, &rr, rgreen, &args[0], &args[1]),
            OpKind::Len => {
                let base_ty = self.value_ty(fi, &args[0]);
                if rgreen {
                    if let Ty::Array(_, n) = base_ty.autoderef() {
                        let n = *n as usize;
                        return self.bind(fi, r, quote!(#n));
                    }
                    let a = need!(self, self.operand(fi, &args[0], &self.value_repr(fi, &args[0])), "operand");
                    return self.bind(fi, r, quote!(#a.len()));
                }
                if let Ty::Map(..) = base_ty.autoderef() {
                    return self.map_op(fi, r, &OpKind::Len, args);
                }
                match base_ty.autoderef().clone() {
                    Ty::Slice(_) => {
                        let s = need!(self, self.operand(fi, &args[0], &Repr::RSlice), "slice");
                        self.bind(fi, r, quote!(#s[1]))
                    }
                    Ty::Vec(et) => {
                        let Some(esc) = scalar(&et) else {
                            // The interpreter's own `Vec` of objects: its length word.
                            let (addr, _) = need!(self, self.red_object(fi, &args[0]), "vector");
                            let t = rust_ty(&et, None);
                            let u = u64_valty();
                            return self.bind(
                                fi,
                                r,
                                quote!({
                                    #addr
                                    match #rt::heap::vec_layout::<#t>() {
                                        Some(__l) => __st.vec_len(&mut __c.b, &__addr, __l),
                                        None => __c.b.red_call(#rt::heap::vec_len::<#t>, "vec_len", &[__addr], &[#u])[0],
                                    }
                                }),
                            );
                        };
                        let (addr, _) = need!(self, self.red_object(fi, &args[0]), "vector");
                        let t = sc_rust(esc);
                        let u = u64_valty();
                        let real = quote!({
                            #addr
                            match #rt::heap::vec_layout::<#t>() {
                                Some(__l) => __st.vec_len(&mut __c.b, &__addr, __l),
                                None => __c.b.red_call(#rt::heap::vec_len::<#t>, "vec_len", &[__addr], &[#u])[0],
                            }
                        });
                        match list_local(self, fi, &args[0]) {
                            Some(l) => self.bind(
                                fi,
                                r,
                                quote!(match #l.len_const() {
                                    Some(__n) => __n,
                                    None => match __st.tail_len(&mut __c.b, &#l) {
                                        Some(__n) => __n,
                                        None => #real,
                                    },
                                }),
                            ),
                            None => self.bind(fi, r, real),
                        }
                    }
                    _ => self.decline("the length of this value"),
                }
            }
            OpKind::SetItem => {
                let base_ty = self.value_ty(fi, &args[0]);
                match base_ty.autoderef().clone() {
                    Ty::Vec(et) => {
                        let Some(esc) = scalar(&et) else {
                            return self.decline("a Vec of non-scalars in residual code");
                        };
                        let (addr, _) = need!(self, self.red_object(fi, &args[0]), "vector");
                        let i = need!(self, self.operand(fi, &args[1], &Repr::R(Sc::Int(IntTy::Usize))), "index");
                        let x = need!(self, self.operand(fi, &args[2], &Repr::R(esc)), "value");
                        let t = sc_rust(esc);
                        let class = elem_class(&quote!(#t).to_string());
                        let real = quote!({
                            #addr
                            match #rt::heap::vec_layout::<#t>() {
                                Some(__l) => {
                                    let __e = __st.vec_elem(&mut __c.b, &__addr, &#i, ::core::mem::size_of::<#t>() as u64, __l);
                                    __st.store_field(&mut __c.b, &__e, 0, &#x, #class, 0);
                                }
                                None => {
                                    __c.b.red_call(#rt::heap::vec_set::<#t>, "vec_set", &[__addr, #i, #x], &[]);
                                }
                            }
                        });
                        match list_local(self, fi, &args[0]) {
                            Some(l) => {
                                quote!(if !#l.set_const(&#i, &#x) && !__st.tail_set(&mut __c.b, &mut #l, &#i, &#x) #real)
                            }
                            None => real,
                        }
                    }
                    cont @ (Ty::Slice(_) | Ty::Array(..)) => {
                        // Through `&mut [T]` or `&mut [T; N]`: a store at the
                        // element's address, bounds-checked.
                        let et = match &cont {
                            Ty::Slice(t) | Ty::Array(t, _) => (**t).clone(),
                            _ => Ty::Error,
                        };
                        if is_enum(&et) && plain(&et, self.cg.types()) {
                            // A plain enum: its tag and slots written in
                            // place, as a `Vec`'s element is.
                            let vr = self.value_repr(fi, &args[2]);
                            let i = need!(self, self.operand(fi, &args[1], &Repr::R(Sc::Int(IntTy::Usize))), "index");
                            let x = need!(self, self.operand(fi, &args[2], &vr), "value");
                            let addr = match self.elem_addr(fi, &args[0], &cont, &et, &quote!(__i)) {
                                Ok(a) => a,
                                Err(declined) => return declined,
                            };
                            self.uses_enum(&et);
                            let m = flat_marker(&et);
                            let class = elem_class(&quote!(#m).to_string());
                            return quote!({
                                let __i = #i;
                                let __x = #x;
                                let __a = #addr;
                                __st.flat_set_at::<#m>(&mut __c.b, &__a, &__x[..], #class);
                            });
                        }
                        let Some(esc) = scalar(&et) else {
                            return self.decline("a store of a non-scalar element through a run-time pointer");
                        };
                        let i = need!(self, self.operand(fi, &args[1], &Repr::R(Sc::Int(IntTy::Usize))), "index");
                        let x = need!(self, self.operand(fi, &args[2], &Repr::R(esc)), "value");
                        let addr = match self.elem_addr(fi, &args[0], &cont, &et, &quote!(__i)) {
                            Ok(a) => a,
                            Err(declined) => return declined,
                        };
                        // A known field like a `Vec`'s element (the slice
                        // may be one's buffer): the store forgets what it
                        // may overwrite.
                        let t = sc_rust(esc);
                        let class = elem_class(&quote!(#t).to_string());
                        quote!({
                            let __i = #i;
                            let __x = #x;
                            let __a = #addr;
                            __st.store_field(&mut __c.b, &__a, 0, &__x, #class, 0);
                        })
                    }
                    _ => self.decline("a store into this kind of sequence in residual code"),
                }
            }
            _ => unreachable!("jitgen: a list operation dispatched elsewhere"),
        }
    }

    /// An operation that grows or shrinks a list (`push`, `pop`), or makes one.
    pub(crate) fn list_make_op(&mut self, fi: usize, op: &hint_annotator::flowgraph::Op) -> TokenStream {
        let rt = rt();
        let f = self.fns[fi];
        let OpParts { r, args, .. } = self.op_parts(fi, op);
        match &op.kind {
            OpKind::Push | OpKind::Pop => {
                let base_ty = self.value_ty(fi, &args[0]);
                let Ty::Vec(et) = base_ty.autoderef().clone() else { return self.decline("push/pop on a non-Vec") };
                let Some(esc) = scalar(&et) else { return self.real_vec_push_pop(fi, r, &op.kind, &args) };
                let (addr, _) = need!(self, self.red_object(fi, &args[0]), "vector");
                let (t, vt, u32t) = (sc_rust(esc), sc_valty(esc), u32_valty());
                let list = list_local(self, fi, &args[0]);
                // In place where the `Vec` layout is known (`JitState::vec_push`,
                // `vec_pop`), else by the runtime's helpers.
                let class = elem_class(&quote!(#t).to_string());
                let size = quote!(::core::mem::size_of::<#t>() as u64);
                if op.kind == OpKind::Push {
                    let x = need!(self, self.operand(fi, &args[1], &Repr::R(esc)), "value");
                    let real = quote!({
                        #addr
                        match #rt::heap::vec_header::<#t>() {
                            Some(__h) => __st.vec_push(&mut __c.b, &__addr, &__x, __h, #size, #class, #rt::heap::vec_reserve_one::<#t>),
                            None => {
                                __c.b.red_call(#rt::heap::vec_push::<#t>, "vec_push", &[__addr, __x], &[]);
                            }
                        }
                    });
                    match list {
                        Some(l) => quote!({ let __x = #x; if !#l.push_virtual(&__x) #real }),
                        None => quote!({ let __x = #x; #real }),
                    }
                } else {
                    let real = quote!({
                        #addr
                        match #rt::heap::vec_header::<#t>() {
                            Some(__h) => __st.vec_pop(&mut __c.b, &__addr, #vt, __h, #size, #class),
                            None => {
                                let __v = __c.b.red_call(#rt::heap::vec_pop::<#t>, "vec_pop", &[__addr], &[#u32t, #vt]);
                                [__v[0], __v[1]]
                            }
                        }
                    });
                    match list {
                        Some(l) => self.bind(
                            fi,
                            r,
                            quote!(match #l.pop_virtual() {
                                Some(Some(__x)) => [#rt::RedBox::constant(#u32t, 1), __x],
                                Some(None) => [#rt::RedBox::constant(#u32t, 0), #rt::RedBox::constant(#vt, 0)],
                                None => #real,
                            }),
                        ),
                        None => self.bind(fi, r, real),
                    }
                }
            }
            OpKind::NewVec | OpKind::NewVecRepeat => {
                let Ty::Vec(et) = f.graph.var(r).ty.clone() else { return self.decline("a vector") };
                let values = is_enum(&et) || *et == Ty::Str;
                if let (true, OpKind::NewVec, true, Repr::RPtr) = (values, &op.kind, args.is_empty(), self.repr(fi, r))
                {
                    // A `Vec` of values owning strings (`Vec<Value>`, call
                    // arguments): Rust's own, pushed and popped by residual
                    // calls (see `real_vec_push_pop`).
                    let (t, p) = (rust_ty(&et, Some(&quote!('static))), ptr_valty());
                    let new = quote!(#rt::heap::vec_new_objects::<#t>);
                    return self.bind_ptr(fi, r, quote!(__c.b.red_call(#new, "vec_new", &[], &[#p])[0]));
                }
                let Some(esc) = scalar(&et) else { return self.decline("a Vec of non-scalars in residual code") };
                let t = sc_rust(esc);
                let p = ptr_valty();
                if op.kind == OpKind::NewVecRepeat {
                    let x = need!(self, self.operand(fi, &args[0], &Repr::R(esc)), "element");
                    let n = need!(self, self.operand(fi, &args[1], &Repr::R(Sc::Int(IntTy::Usize))), "count");
                    let real = quote!(__c.b.red_call(#rt::heap::vec_new_repeat::<#t>, "vec_new_repeat", &[__x, __n], &[#p])[0]);
                    if matches!(self.repr(fi, r), Repr::VList(_)) {
                        self.bind(
                            fi,
                            r,
                            quote!({
                                let (__x, __n) = (#x, #n);
                                match #rt::VList::repeat(&__x, &__n) {
                                    Some(__l) => __l,
                                    None => #rt::VList::Real(#real),
                                }
                            }),
                        )
                    } else {
                        self.bind(fi, r, quote!({ let (__x, __n) = (#x, #n); #real }))
                    }
                } else if matches!(self.repr(fi, r), Repr::VList(_)) && args.len() <= 64 {
                    let mut xs = vec![];
                    for a in args {
                        xs.push(need!(self, self.operand(fi, a, &Repr::R(esc)), "element"));
                    }
                    self.bind(fi, r, quote!(#rt::VList::Virtual(::std::vec![#(#xs),*])))
                } else {
                    let mut pushes = vec![];
                    for a in args {
                        let x = need!(self, self.operand(fi, a, &Repr::R(esc)), "element");
                        pushes.push(quote!({
                            __c.b.red_call(#rt::heap::vec_push::<#t>, "vec_push", &[__p, #x], &[]);
                        }));
                    }
                    self.bind_ptr(
                        fi,
                        r,
                        quote!({
                            let __p = __c.b.red_call(#rt::heap::vec_new::<#t>, "vec_new", &[], &[#p])[0];
                            #(#pushes)*
                            __p
                        }),
                    )
                }
            }
            _ => unreachable!("jitgen: a list operation dispatched elsewhere"),
        }
    }
}

/// The words of the fields of the struct `sname` (a struct of scalars,
/// `fields`) that the `VPtr` bound to `__p` points to: a virtual object's
/// fields, or loads from the real one.
fn vptr_struct_words(sn: &proc_macro2::Ident, sname: &str, fields: &[(String, Sc)]) -> TokenStream {
    let class = alias_class(sname);
    let words = fields.iter().enumerate().map(|(k, (name, sc))| {
        let (m, vt) = (member(name), sc_valty(*sc));
        quote!(match __st.heap.field(&__p, #k) {
            Some(__x) => __x,
            None => {
                let __a = __st.heap.force(&mut __c.b, &__p);
                let __f = ::core::mem::offset_of!(#sn, #m) as i32;
                __st.load_field(&mut __c.b, #vt, &__a, __f, #class, __f)
            }
        })
    });
    quote!([#(#words),*])
}

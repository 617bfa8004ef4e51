//! Timeshifting operations on objects: loads, fields of structures, boxes,
//! enum values and their payloads, and dicts (methods of `timeshift::Gen`).

use hint_annotator::flowgraph::OpKind;
use hint_annotator::types::Ty;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::repr::*;
use crate::timeshift::*;

impl<'g> Gen<'g> {
    /// An operation on an object: a load, a field, a struct, a box, an enum value or a dict.
    pub(crate) fn object_op(&mut self, fi: usize, op: &hint_annotator::flowgraph::Op) -> TokenStream {
        let rt = rt();
        let types = self.cg.types();
        let OpParts { r, rr, rgreen, args } = self.op_parts(fi, op);
        match &op.kind {
            OpKind::Load => {
                let base_ty = self.value_ty(fi, &args[0]);
                let (Ty::Ref { to, .. } | Ty::Boxed(to)) = base_ty else {
                    return self.decline("a load through a non-pointer");
                };
                if matches!(*to, Ty::Text | Ty::Slice(_)) && matches!(rr, Repr::RSlice) {
                    // `*name` of a `&str` or a `Box<[T]>`: the text or the
                    // slice is its address and length, as the pointer is.
                    let a = need!(self, self.operand(fi, &args[0], &Repr::RSlice), "operand");
                    self.bind(fi, r, a)
                } else if rgreen {
                    let a = need!(self, self.operand(fi, &args[0], &self.value_repr(fi, &args[0])), "operand");
                    match &rr {
                        Repr::G(_) => self.bind(fi, r, quote!(*#a)),
                        Repr::Enum(t, _) => {
                            let e = self.enum_from_rust(t, quote!(&*#a));
                            self.bind(fi, r, e)
                        }
                        _ => self.decline("this load"),
                    }
                } else if let Repr::Enum(t, n) = &rr {
                    // An enum in place: its words as `flat` reads them (an
                    // object it holds, by its address there).
                    let (t, n) = (t.clone(), *n);
                    let a = need!(self, self.operand(fi, &args[0], &Repr::RPtr), "operand");
                    let et = rust_ty(&t, None);
                    let place = quote!(&*(__b[0] as usize as *const #et));
                    let read = self.enum_in_place(&t, n, place, a, "a read of an enum in place");
                    self.bind(fi, r, read)
                } else {
                    let Some(sc) = scalar(&to) else {
                        return self.decline("a load of a non-scalar through a run-time pointer");
                    };
                    let a = need!(self, self.operand(fi, &args[0], &Repr::RPtr), "operand");
                    let vt = sc_valty(sc);
                    self.bind(fi, r, quote!(__c.b.red_load(#vt, &#a, 0)))
                }
            }
            OpKind::SharedDeref => {
                let Ty::Ref { to, .. } = &self.fns[fi].graph.var(r).ty else { return self.decline("a shared pointer") };
                let Ty::Foreign(text) = self.value_ty(fi, &args[0]).autoderef().clone() else {
                    return self.decline("a shared pointer");
                };
                let t = rust_ty(to, None);
                let measure = if text.trim_start().starts_with("Arc") || text.contains("::Arc") {
                    quote!(#rt::heap::arc_value_offset::<#t>())
                } else {
                    quote!(#rt::heap::rc_value_offset::<#t>())
                };
                if rgreen {
                    // `&'a Rc<T>` to `&'a T`.
                    let a = need!(self, self.operand(fi, &args[0], &self.value_repr(fi, &args[0])), "operand");
                    self.bind(fi, r, quote!(&**#a))
                } else {
                    let a = need!(self, self.operand(fi, &args[0], &Repr::RPtr), "operand");
                    // The pointer inside the `Rc` is known on the path once
                    // read (an `Rc` is written only by Rust, whose calls
                    // forget what is known): a promoted `&*frame.function`
                    // read again needs no switch.
                    let class = crate::timeshift::alias_class(&format!("Rc<{}>", text.trim()));
                    self.bind_ptr(
                        fi,
                        r,
                        quote!(match #measure {
                            Some(__off) => {
                                let __p = __st.load_field(&mut __c.b, #rt::ValTy::Ptr, &#a, 0, #class, 0);
                                __c.b.red_offset(&__p, __off as u64)
                            }
                            None => { __c.decline("an Rc or Arc that is not one word"); break 'path None; }
                        }),
                    )
                }
            }
            OpKind::GetField(name) => self.get_field(fi, r, &rr, rgreen, &args[0], name),
            OpKind::SetField(name) => {
                let (addr, s) = need!(self, self.red_object(fi, &args[0]), "a store into this object");
                let Ty::Struct(sname) = s else { return self.decline("a store into a non-struct") };
                if !types.structs.contains_key(&sname) {
                    return self.decline("a store into a struct the module does not define");
                }
                let fty = types.structs[&sname].fields.get(name).cloned();
                if let (Some(le), Some(Err(k))) =
                    (fty.as_ref().and_then(|t| list_field(t, types)), vfield_index(&types.structs[&sname], name, types))
                {
                    // A list field of a virtual object: replaced in the
                    // virtual object, or written into the real one.
                    let Some(p) = self.vptr_local(fi, &args[0]) else {
                        return self.decline("a store into this list field");
                    };
                    let v = need!(self, self.operand(fi, &args[1], &le.repr()), "a list value");
                    let (sn, fname, t) = (format_ident!("{}", sname), member(name), le.rust());
                    let (store, w) = (le.store_fn(), le.width());
                    return quote!({
                        let __l: #rt::VList = ::core::clone::Clone::clone(&#v);
                        if !__st.heap.set_list(&#p, #k, &__l) {
                            #addr
                            let __dest = __c.b.red_offset(&__addr, ::core::mem::offset_of!(#sn, #fname) as u64);
                            let mut __l = __l;
                            __l.untail(&mut __c.b);
                            match __l {
                                #rt::VList::Real(__src) | #rt::VList::Tail(__src, ..) => {
                                    __c.b.red_call(#rt::heap::vec_move::<#t>, "vec_move", &[__dest, __src], &[]);
                                }
                                #rt::VList::Virtual(__items) => {
                                    let mut __a = ::std::vec![__dest, #rt::RedBox::u64((__items.len() / #w) as u64)];
                                    __a.extend_from_slice(&__items);
                                    __c.b.red_call(#store, "vec_store", &__a, &[]);
                                }
                            }
                            __st.forget_fields();
                        }
                    });
                }
                if let Some(ft) = fty.as_ref().filter(|t| is_enum(t) && plain(t, types)) {
                    return self.store_enum_field(fi, &args[1], ft, &sname, name, addr);
                }
                let Some(sc) = fty.as_ref().and_then(scalar) else {
                    return self.decline("a store of a non-scalar field through a run-time pointer");
                };
                let v = need!(self, self.operand(fi, &args[1], &Repr::R(sc)), "value");
                let (sn, fname) = (struct_at(&sname, types), member(name));
                let class = alias_class(&sname);
                let real = quote!({
                    #addr
                    let __f = ::core::mem::offset_of!(#sn, #fname) as i32;
                    __st.store_field(&mut __c.b, &__addr, __f, &__x, #class, __f);
                });
                match self.vptr_local(fi, &args[0]) {
                    Some(p) => {
                        let Some(Ok(k)) = vfield_index(&types.structs[&sname], name, types) else {
                            return self.decline("a store into this field");
                        };
                        quote!({ let __x = #v; if !__st.heap.set_field(&#p, #k, &__x) #real })
                    }
                    None => quote!({ let __x = #v; #real }),
                }
            }
            OpKind::NewMap => match rr {
                Repr::VDict(..) => self.bind(fi, r, quote!(#rt::VDict::new())),
                _ => self.decline("a HashMap of non-scalars in residual code"),
            },
            OpKind::MapInsert | OpKind::MapGet | OpKind::MapRemove | OpKind::MapContains => {
                self.map_op(fi, r, &op.kind, args)
            }
            _ => unreachable!("jitgen: an object operation dispatched elsewhere"),
        }
    }

    /// `dst.name = src.name.clone()` (`OpKind::CloneInto`), a field of a
    /// type the analysis does not model (an `Rc`), or of a struct of values
    /// kept whole (a handle), in two objects of one struct: the handle's
    /// bytes copied where it is `Copy`; else the field cloned into its
    /// place (the old value dropped) at their addresses, by Rust's own
    /// clone or, for an `Rc`, by residual code changing its counts.
    pub(crate) fn clone_into(
        &mut self,
        fi: usize,
        name: &str,
        args: &[hint_annotator::flowgraph::Value],
    ) -> TokenStream {
        let types = self.cg.types();
        let (Some((dst, Ty::Struct(sname))), Some((src, _))) =
            (self.red_object(fi, &args[0]), self.red_object(fi, &args[1]))
        else {
            return self.decline("a field cloned into an object it cannot reach");
        };
        let Some(ft) = types.structs.get(&sname).and_then(|d| d.fields.get(name)).cloned() else {
            return self.decline("a field cloned into a struct the module does not define");
        };
        let (sn, fname, t) = (struct_at(&sname, types), member(name), rust_ty(&ft, None));
        // A `Copy` struct is copied; anything else is cloned by Rust, or in
        // place where it is an `Rc` (see `red_clone_into`).
        let copy = match &ft {
            Ty::Struct(n) => types.structs.get(n).is_some_and(|d| d.copy),
            _ => false,
        };
        let clone = if copy {
            quote!(__c.b.red_copy_into::<#t>(&__a[0], &__a[1]))
        } else {
            quote!(__c.b.red_clone_into::<#t>(&__a[0], &__a[1]))
        };
        quote!({
            let __to = { #dst __addr };
            let __from = { #src __addr };
            let __f = ::core::mem::offset_of!(#sn, #fname) as u64;
            let __a = [__c.b.red_offset(&__to, __f), __c.b.red_offset(&__from, __f)];
            #clone;
            __st.forget_fields();
        })
    }

    /// A store of a plain enum (`value`, of type `ft`) into field `name` of
    /// the struct `sname` at the address `addr` binds: its words written by
    /// a helper in Rust's layout, as `unflat` reads them.
    fn store_enum_field(
        &mut self,
        fi: usize,
        value: &hint_annotator::flowgraph::Value,
        ft: &Ty,
        sname: &str,
        name: &str,
        addr: TokenStream,
    ) -> TokenStream {
        let n = slots(ft, self.cg.types(), 0).map_or(0, |s| s.len());
        let v = need!(self, self.enum_words(fi, value, ft, n), "value");
        let (_, unflat, _) = enum_helpers(ft);
        self.uses_enum(ft);
        let (sn, fname) = (struct_at(sname, self.cg.types()), member(name));
        let cb = self.callback(
            n + 1,
            quote! {
                // SAFETY: the address of a live struct of the interpreter's,
                // as residual code holds it; a plain enum owns nothing.
                unsafe { (*(__b[0] as usize as *mut #sn)).#fname = #unflat(&__b[1..=#n]) };
            },
        );
        quote!({
            #addr
            let mut __a = ::std::vec![__addr];
            __a.extend_from_slice(&#v);
            __c.b.red_call(#cb, "an enum field", &__a, &[]);
            __st.forget_fields();
        })
    }

    /// An operation that makes a struct, a box or an enum value, or reads an enum's tag or payload.
    pub(crate) fn value_op(&mut self, fi: usize, op: &hint_annotator::flowgraph::Op) -> TokenStream {
        let rt = rt();
        let f = self.fns[fi];
        let types = self.cg.types();
        let OpParts { r, rr, rgreen, args } = self.op_parts(fi, op);
        match &op.kind {
            OpKind::NewStruct(s) if matches!(rr, Repr::RPtr) && built_struct(s, types) => {
                self.new_owning_struct(fi, r, s, args)
            }
            OpKind::NewStruct(s) if rgreen => {
                // A value struct of green fields: its one copy for these
                // words, kept for the process (what a green `&S` holds).
                let d = types.structs[s].clone();
                let mut inits = vec![];
                for (a, (name, t)) in args.iter().zip(&d.fields) {
                    let m = member(name);
                    let x = match repr(t, true, types) {
                        Repr::G(sc) => need!(self, self.operand(fi, a, &Repr::G(sc)), "a field value"),
                        Repr::Enum(t, n) => {
                            let x = need!(self, self.operand(fi, a, &Repr::Enum(t.clone(), n)), "a field value");
                            let (_, unflat, _) = enum_helpers(&t);
                            quote!(#unflat(&#rt::redbox::const_words(&#x)))
                        }
                        _ => return self.decline("a struct made of known fields"),
                    };
                    inits.push(quote!(#m: #x));
                }
                let st = struct_at(s, types);
                let kept = need!(self, self.green_value_struct(s, quote!(#st { #(#inits),* })), "a known struct");
                self.bind(fi, r, kept)
            }
            OpKind::NewStruct(s) => {
                let Repr::VPtr = rr else {
                    return self.decline(&format!(
                        "allocating a `{s}` in residual code (only structs whose fields are scalars, or lists of scalars or of plain enums, can be virtual yet)"
                    ));
                };
                let d = types.structs[s].clone();
                let mut fields = vec![];
                let mut lists = vec![];
                for (a, t) in args.iter().zip(d.fields.values()) {
                    match list_field(t, types) {
                        Some(le) => lists.push(need!(self, self.operand(fi, a, &le.repr()), "a list value")),
                        None => {
                            let sc = scalar(t).expect("a virtual struct's fields are scalars or lists");
                            fields.push(need!(self, self.operand(fi, a, &Repr::R(sc)), "a field value"));
                        }
                    }
                }
                self.vstructs.insert(s.clone());
                let desc = format_ident!("__VDESC_{}", s);
                self.bind(fi, r, quote!(__st.heap.alloc(&#desc, ::std::vec![#(#fields),*], ::std::vec![#(#lists),*])))
            }
            OpKind::NewBox => match (&rr, self.value_repr(fi, &args[0])) {
                (Repr::VPtr, Repr::VPtr) => {
                    // The boxed value moves into the box: the same object.
                    let a = need!(self, self.operand(fi, &args[0], &rr), "the boxed value");
                    self.bind(fi, r, a)
                }
                _ => self.decline("allocating a Box of this type in residual code"),
            },
            OpKind::MakeEnum { index, .. } if matches!(rr, Repr::VOpt) => {
                // `None`, or `Some` of an object: a tag and the object.
                let tag = *index as u64;
                let obj = match args.first() {
                    Some(a) => need!(self, self.operand(fi, a, &Repr::VPtr), "the object"),
                    None => {
                        let pt = ptr_valty();
                        quote!(#rt::VPtr::Real(#rt::RedBox::constant(#pt, 0)))
                    }
                };
                self.bind(fi, r, quote!((#rt::RedBox::constant(#rt::ValTy::U32, #tag), #obj)))
            }
            OpKind::MakeEnum { variant, index, .. } => {
                let ty = f.graph.var(r).ty.clone();
                let Repr::Enum(_, n) = rr.clone() else { return self.decline("this enum value") };
                let (_, _, tys) = enum_helpers(&ty);
                let tag = *index as u64;
                let mut sets = vec![];
                for (i, a) in args.iter().enumerate() {
                    let Some((off, fty)) = field_offset(&ty, variant, i, types) else {
                        return self.decline("an enum payload");
                    };
                    match repr(&fty, false, types) {
                        Repr::R(sc) => {
                            let x = need!(self, self.operand(fi, a, &Repr::R(sc)), "payload");
                            sets.push(quote!((#off, &[#x][..])));
                        }
                        Repr::Enum(_, n) => {
                            let x = need!(self, self.enum_words(fi, a, &fty, n), "payload");
                            sets.push(quote!((#off, &#x[..])));
                        }
                        // A `&str`: its address and length.
                        Repr::RSlice if is_text_ref(&fty) => {
                            let x = need!(self, self.operand(fi, a, &Repr::RSlice), "payload");
                            sets.push(quote!((#off, &#x[..])));
                        }
                        // A list: its address (made real if it was virtual).
                        Repr::RPtr | Repr::VList(_) => {
                            let x = need!(self, self.operand(fi, a, &Repr::RPtr), "payload");
                            sets.push(quote!((#off, &[#x][..])));
                        }
                        Repr::VPtr if flat_payload(&fty, types).is_some() => {
                            let words = need!(self, self.scalar_struct_words(fi, a, &fty), "payload");
                            sets.push(quote!((#off, &#words[..])));
                        }
                        Repr::Unit => {}
                        _ => return self.decline("an enum payload of this type"),
                    }
                }
                self.bind(fi, r, quote!(#rt::RedBox::enum_value::<#n>(&#tys(), #tag, &[#(#sets),*])))
            }
            OpKind::EnumTag => {
                let a = need!(self, self.operand(fi, &args[0], &self.value_repr(fi, &args[0])), "enum");
                if rgreen {
                    let msg = format!(
                        "the variant of `{}` is needed known while compiling, and is known only when running (an enum promoted with payloads, or read from mutable memory); promote the index it is read at instead (`hint!(pc, promote)`), or read it from code that is green (`hint!(code[pc], concrete)`)",
                        op.source
                    );
                    self.bind(fi, r, quote!(match #a[0].as_const() { Some(__w) => __w as u32, None => { __c.decline(#msg); break 'path None; } }))
                } else {
                    self.bind(fi, r, quote!(#a[0]))
                }
            }
            OpKind::EnumField { variant, index } => {
                let ety = self.value_ty(fi, &args[0]);
                let a = need!(self, self.operand(fi, &args[0], &self.value_repr(fi, &args[0])), "enum");
                let Some((off, _)) = field_offset(&ety, variant, *index as usize, types) else {
                    return self.decline("an enum payload");
                };
                self.payload(fi, r, &rr, a, off)
            }
            OpKind::Unwrap => {
                let ety = self.value_ty(fi, &args[0]);
                let (succ, variant, msg) = match ety {
                    Ty::Option(_) => (1u64, "Some", "called `Option::unwrap()` on a `None` value"),
                    _ => (0u64, "Ok", "called `Result::unwrap()` on an `Err` value"),
                };
                let a = need!(self, self.operand(fi, &args[0], &self.value_repr(fi, &args[0])), "enum");
                let Some((off, _)) = field_offset(&ety, variant, 0, types) else { return self.decline("unwrap") };
                let check = quote!({
                    let __ok = __c.b.red_cmp(#rt::CmpOp::Eq, &#a[0], &#rt::RedBox::constant(#rt::ValTy::U32, #succ));
                    if !__c.guard(&__ok, #rt::ops::ErrorKind::Abort(#rt::residual::message_id(#msg))) {
                        break 'path None;
                    }
                });
                let take = self.payload(fi, r, &rr, a, off);
                quote!(#check #take)
            }
            _ => unreachable!("jitgen: an object operation dispatched elsewhere"),
        }
    }

    /// The one copy (`heap::green_copy`) of the value struct `s` (see
    /// `ModuleTypes::value_struct`) equal to the Rust value `v`, keyed by
    /// its fields' words (`value_struct_key`).
    pub(crate) fn green_value_struct(&mut self, s: &str, v: TokenStream) -> Option<TokenStream> {
        let rt = rt();
        let types = self.cg.types();
        let f = Ty::Struct(s.to_string());
        let key = value_struct_key(&f, &quote!(__v), types)?;
        let mut enums = vec![];
        collect_enums(&f, types, &mut enums);
        enums.iter().for_each(|t| self.uses_enum(t));
        Some(quote!({
            let __v = #v;
            let mut __k: ::std::vec::Vec<u64> = ::std::vec::Vec::new();
            #key
            #rt::heap::green_copy(&__k, || __v)
        }))
    }
}

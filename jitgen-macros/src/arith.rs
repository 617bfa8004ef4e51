//! Timeshifting arithmetic, comparisons, casts and copies (methods of
//! `timeshift::Gen`): green operands compute now, red ones emit residual
//! operations through the runtime's red boxes, which fold constants.

use hint_annotator::flowgraph::{BinOp, HintKind, OpKind, UnOp, Value, Var};
use hint_annotator::types::Ty;
use proc_macro2::TokenStream;
use quote::quote;

use crate::repr::*;
use crate::timeshift::*;

impl<'g> Gen<'g> {
    /// Whether `v` is a value of a plain enum.
    fn plain_enum(&self, fi: usize, v: &Value) -> bool {
        let t = self.value_ty(fi, v);
        is_enum(&t) && plain(&t, self.cg.types())
    }

    /// The type of `v` (behind references) when it is a struct of scalars
    /// whose `PartialEq` is derived.
    fn derived_eq_struct(&self, fi: usize, v: &Value) -> Option<Ty> {
        let mut t = self.value_ty(fi, v);
        while let Ty::Ref { to, .. } = t {
            t = *to;
        }
        let (s, _) = scalar_struct(&t, self.cg.types())?;
        self.cg.types().structs.get(&s).is_some_and(|d| d.derives_eq).then_some(t)
    }

    /// `==` (`eq`) or `!=` of two run-time values of a plain enum: Rust's
    /// own (derived or written by hand), one residual call on their words.
    fn enum_eq(&mut self, fi: usize, r: Var, eq: bool, args: &[Value]) -> TokenStream {
        let rt = rt();
        let ty = self.value_ty(fi, &args[0]);
        let n = slots(&ty, self.cg.types(), 0).map_or(0, |s| s.len());
        let a = need!(self, self.operand(fi, &args[0], &self.value_repr(fi, &args[0])), "enum operand");
        let c = need!(self, self.operand(fi, &args[1], &self.value_repr(fi, &args[1])), "enum operand");
        self.uses_enum(&ty);
        let (_, unflat, _) = enum_helpers(&ty);
        let end = 2 * n;
        let test = if eq { quote!(__x == __y) } else { quote!(__x != __y) };
        let cb = self.callback(
            end.max(1),
            quote! {
                let (__x, __y) = (#unflat(&__b[..#n]), #unflat(&__b[#n..#end]));
                __b[0] = (#test) as u64;
            },
        );
        let what = if eq { "==" } else { "!=" };
        self.bind(
            fi,
            r,
            quote!({
                let mut __args = ::std::vec::Vec::with_capacity(#end);
                __args.extend_from_slice(&#a);
                __args.extend_from_slice(&#c);
                __c.b.red_call(#cb, #what, &__args, &[#rt::ValTy::Bool])[0]
            }),
        )
    }

    /// A derived `==` (`eq`) or `!=` of structs of scalars (handles): their
    /// fields compared in order.
    fn struct_eq(&mut self, fi: usize, r: Var, eq: bool, args: &[Value]) -> TokenStream {
        let rt = rt();
        let ty = need!(self, self.derived_eq_struct(fi, &args[0]), "operand");
        let a = need!(self, self.scalar_struct_words(fi, &args[0], &ty), "operand");
        let c = need!(self, self.scalar_struct_words(fi, &args[1], &ty), "operand");
        let and = Self::overflow(BinOp::BitAnd);
        let not = if eq { quote!() } else { quote!(let __r = __c.b.red_un(#rt::ops::UnOp::Not, #and, &__r);) };
        self.bind(
            fi,
            r,
            quote!({
                let (__x, __y) = (#a, #c);
                let mut __r = #rt::RedBox::constant(#rt::ValTy::Bool, 1);
                for (__p, __q) in __x.iter().zip(__y.iter()) {
                    let __e = __st.red_cmp(&mut __c.b, #rt::CmpOp::Eq, __p, __q);
                    __r = __c.b.red_bin(#rt::BinOp::And, #and, &__r, &__e);
                }
                #not
                __r
            }),
        )
    }

    /// An arithmetic operation, comparison, cast or copy (`SameAs`, a hint).
    pub(crate) fn arith_op(&mut self, fi: usize, op: &hint_annotator::flowgraph::Op) -> TokenStream {
        let rt = rt();
        let f = self.fns[fi];
        let OpParts { r, rr, rgreen, args } = self.op_parts(fi, op);
        match &op.kind {
            OpKind::Bin(b @ (BinOp::Eq | BinOp::Ne)) if !rgreen && self.plain_enum(fi, &args[0]) => {
                self.enum_eq(fi, r, *b == BinOp::Eq, args)
            }
            OpKind::Bin(b @ (BinOp::Eq | BinOp::Ne)) if !rgreen && self.derived_eq_struct(fi, &args[0]).is_some() => {
                self.struct_eq(fi, r, *b == BinOp::Eq, args)
            }
            OpKind::Bin(b) if b.is_comparison() && is_enum(&self.value_ty(fi, &args[0])) => {
                if !rgreen {
                    return self.decline("comparing run-time enum values is not supported yet");
                }
                let a = need!(self, self.operand(fi, &args[0], &self.value_repr(fi, &args[0])), "enum operand");
                let c = need!(self, self.operand(fi, &args[1], &self.value_repr(fi, &args[1])), "enum operand");
                let e = if *b == BinOp::Eq { quote!(#a == #c) } else { quote!(#a != #c) };
                self.bind(fi, r, e)
            }
            OpKind::Bin(b) if b.is_comparison() => {
                let cmp = match b {
                    BinOp::Eq => quote!(Eq),
                    BinOp::Ne => quote!(Ne),
                    BinOp::Lt => quote!(Lt),
                    BinOp::Le => quote!(Le),
                    BinOp::Gt => quote!(Gt),
                    _ => quote!(Ge),
                };
                if rgreen {
                    let (a, c) = (
                        need!(self, self.green(fi, &args[0]), "operand"),
                        need!(self, self.green(fi, &args[1]), "operand"),
                    );
                    let e = match b {
                        BinOp::Eq => quote!(#a == #c),
                        BinOp::Ne => quote!(#a != #c),
                        BinOp::Lt => quote!(#a < #c),
                        BinOp::Le => quote!(#a <= #c),
                        BinOp::Gt => quote!(#a > #c),
                        _ => quote!(#a >= #c),
                    };
                    self.bind(fi, r, e)
                } else {
                    let (a, c) = (
                        need!(self, self.boxed(fi, &args[0]), "operand"),
                        need!(self, self.boxed(fi, &args[1]), "operand"),
                    );
                    self.bind(fi, r, quote!(__st.red_cmp(&mut __c.b, #rt::CmpOp::#cmp, &#a, &#c)))
                }
            }
            OpKind::Bin(b) => {
                let (rop, ov) = match b {
                    BinOp::Add => (quote!(Add), Self::overflow(*b)),
                    BinOp::Sub => (quote!(Sub), Self::overflow(*b)),
                    BinOp::Mul => (quote!(Mul), Self::overflow(*b)),
                    BinOp::Div => (quote!(Div), Self::overflow(*b)),
                    BinOp::Rem => (quote!(Rem), Self::overflow(*b)),
                    BinOp::BitAnd => (quote!(And), Self::overflow(*b)),
                    BinOp::BitOr => (quote!(Or), Self::overflow(*b)),
                    BinOp::BitXor => (quote!(Xor), Self::overflow(*b)),
                    BinOp::Shl => (quote!(Shl), Self::overflow(*b)),
                    BinOp::Shr => (quote!(Shr), Self::overflow(*b)),
                    BinOp::WrappingAdd => (quote!(Add), Self::overflow(BinOp::Min)),
                    BinOp::WrappingSub => (quote!(Sub), Self::overflow(BinOp::Min)),
                    BinOp::WrappingMul => (quote!(Mul), Self::overflow(BinOp::Min)),
                    BinOp::WrappingDiv => (quote!(Div), Self::overflow(BinOp::Min)),
                    BinOp::WrappingRem => (quote!(Rem), Self::overflow(BinOp::Min)),
                    BinOp::Min => (quote!(Min), Self::overflow(*b)),
                    BinOp::Max => (quote!(Max), Self::overflow(*b)),
                    _ => unreachable!("comparisons handled above"),
                };
                let rty = f.graph.var(r).ty.clone();
                let Some(sc) = scalar(&rty) else { return self.decline("arithmetic on a non-scalar") };
                if rgreen {
                    let ty_a = need!(self, scalar(&self.value_ty(fi, &args[0])), "operand");
                    let ty_b = need!(self, scalar(&self.value_ty(fi, &args[1])), "operand");
                    let (a, c) = (
                        need!(self, self.green(fi, &args[0]), "operand"),
                        need!(self, self.green(fi, &args[1]), "operand"),
                    );
                    let (wa, wc) = (to_word(ty_a, a), to_word(ty_b, c));
                    let vt = sc_valty(sc);
                    let back = from_word(sc, quote!(__w));
                    self.bind(
                        fi,
                        r,
                        quote!(match #rt::ops::fold_bin(#rt::BinOp::#rop, #vt, #ov, #wa, #wc) {
                            Ok(__w) => #back,
                            Err(__k) => { __c.error_exit(__k); break 'path None; }
                        }),
                    )
                } else {
                    let (a, c) = (
                        need!(self, self.boxed(fi, &args[0]), "operand"),
                        need!(self, self.boxed(fi, &args[1]), "operand"),
                    );
                    self.bind(fi, r, quote!(__c.b.red_bin(#rt::BinOp::#rop, #ov, &#a, &#c)))
                }
            }
            OpKind::Un(u) => {
                let (rop, ov) = match u {
                    UnOp::Neg => (quote!(Neg), Self::overflow(BinOp::Add)),
                    UnOp::Abs => (quote!(Abs), Self::overflow(BinOp::Add)),
                    UnOp::Not => (quote!(Not), Self::overflow(BinOp::Min)),
                    UnOp::WrappingNeg => (quote!(Neg), Self::overflow(BinOp::Min)),
                };
                let Some(sc) = scalar(&f.graph.var(r).ty) else { return self.decline("arithmetic on a non-scalar") };
                if rgreen {
                    let a = need!(self, self.green(fi, &args[0]), "operand");
                    let (vt, wa, back) = (sc_valty(sc), to_word(sc, a), from_word(sc, quote!(__w)));
                    self.bind(
                        fi,
                        r,
                        quote!(match #rt::ops::fold_un(#rt::ops::UnOp::#rop, #vt, #ov, #wa) {
                            Ok(__w) => #back,
                            Err(__k) => { __c.error_exit(__k); break 'path None; }
                        }),
                    )
                } else {
                    let a = need!(self, self.boxed(fi, &args[0]), "operand");
                    self.bind(fi, r, quote!(__c.b.red_un(#rt::ops::UnOp::#rop, #ov, &#a)))
                }
            }
            OpKind::Cast if matches!(self.value_ty(fi, &args[0]), Ty::Enum(_)) => self.enum_cast(fi, op),
            OpKind::Cast => {
                let Some(sc) = scalar(&f.graph.var(r).ty) else { return self.decline("a cast to a non-scalar") };
                if rgreen {
                    let a = need!(self, self.green(fi, &args[0]), "operand");
                    let t = sc_rust(sc);
                    self.bind(fi, r, quote!((#a) as #t))
                } else {
                    let a = need!(self, self.boxed(fi, &args[0]), "operand");
                    let vt = sc_valty(sc);
                    self.bind(fi, r, quote!(__c.b.red_cast(&#a, #vt)))
                }
            }
            OpKind::SameAs
            | OpKind::Hint(HintKind::Concrete | HintKind::Deepfreeze | HintKind::Variable)
            | OpKind::Hint(HintKind::Promote) => {
                let from = self.value_repr(fi, &args[0]);
                if let Some(e) = self.slice_of_ref(fi, r, &rr, &from, &args[0]) {
                    return e;
                }
                if let Some(e) = self.operand(fi, &args[0], &rr) {
                    return self.bind(fi, r, e);
                }
                // A red value needed green: only a constant can be.
                match (&from, &rr) {
                    (Repr::R(sc), Repr::G(_)) => {
                        let a = need!(self, self.operand(fi, &args[0], &from), "operand");
                        let back = from_word(*sc, quote!(__w));
                        let msg = format!(
                            "`{}` needs a value known only at run time to be known while compiling, where no flexswitch can promote it",
                            op.source
                        );
                        self.bind(
                            fi,
                            r,
                            quote!(match (#a).as_const() {
                                Some(__w) => #back,
                                None => { __c.decline(#msg); break 'path None; }
                            }),
                        )
                    }
                    _ => self.decline(&format!("`{}`: this value cannot be made green here", op.source)),
                }
            }
            _ => unreachable!("jitgen: an arithmetic operation dispatched elsewhere"),
        }
    }

    /// A slice read out of a reference to its owner: `&Box<[T]>` as its
    /// address and length, `&Vec<T>` as its buffer and length. `None` when
    /// `a` is no such reference or `rr` no slice.
    fn slice_of_ref(&mut self, fi: usize, r: Var, rr: &Repr, from: &Repr, a0: &Value) -> Option<TokenStream> {
        let rt = rt();
        let (Repr::RSlice, Ty::Ref { to, .. }) = (rr, self.value_ty(fi, a0)) else { return None };
        if let (Ty::Boxed(_), Repr::RPtr) = (&*to, from) {
            // `&Box<[T]>` read as the box: its address and length,
            // loaded from the box's place, remembered as a `Vec`'s
            // header is (alias class 0: a call forgets them).
            let Some(a) = self.operand(fi, a0, &Repr::RPtr) else { return Some(self.decline("a boxed slice")) };
            let u = u64_valty();
            return Some(self.bind(
                fi,
                r,
                quote!({
                    let __addr = #a;
                    match #rt::heap::boxed_slice_layout() {
                        Some((__p, __n)) => [
                            __st.load_field(&mut __c.b, #rt::ValTy::Ptr, &__addr, __p, 0, __p),
                            __st.load_field(&mut __c.b, #u, &__addr, __n, 0, __n),
                        ],
                        None => { __c.decline("a boxed slice whose layout is not known"); break 'path None; }
                    }
                }),
            ));
        }
        if let Ty::Vec(et) = &*to {
            // `&Vec<T>` as `&[T]`: the buffer and the length.
            let Some(esc) = scalar(et) else { return Some(self.decline("a slice of non-scalars")) };
            let Some((addr, _)) = self.red_object(fi, a0) else { return Some(self.decline("a vector")) };
            let t = sc_rust(esc);
            return Some(self.bind(
                fi,
                r,
                quote!({
                    #addr
                    match #rt::heap::vec_layout::<#t>() {
                        Some(__l) => [__st.vec_buf(&mut __c.b, &__addr, __l), __st.vec_len(&mut __c.b, &__addr, __l)],
                        None => { __c.decline("a Vec whose layout is not known"); break 'path None; }
                    }
                }),
            ));
        }
        None
    }

    /// `e as T` of a fieldless enum: its variant's discriminant. The tag of
    /// its words is the variant's index; where the discriminants step by
    /// one from the first (as written without `= ..`, or numbered so), the
    /// cast is the tag plus the first, else a helper looks it up.
    fn enum_cast(&mut self, fi: usize, op: &hint_annotator::flowgraph::Op) -> TokenStream {
        let rt = rt();
        let OpParts { r, rgreen, args, .. } = self.op_parts(fi, op);
        let Ty::Enum(en) = self.value_ty(fi, &args[0]) else { unreachable!("checked by the caller") };
        let Some(sc) = scalar(&self.fns[fi].graph.var(r).ty) else { return self.decline("a cast to a non-scalar") };
        let Some(def) = self.cg.types().enums.get(&en) else { return self.decline("a cast of an enum") };
        let discs: Vec<i128> = def.variants.iter().map(|v| v.discriminant).collect();
        let a = need!(self, self.operand(fi, &args[0], &self.value_repr(fi, &args[0])), "an enum operand");
        let (t, vt, w) = (sc_rust(sc), sc_valty(sc), to_word(sc, quote!(__d)));
        let table: Vec<_> = discs.iter().map(|d| proc_macro2::Literal::i128_suffixed(*d)).collect();
        // The discriminant of a variant known now.
        let known = quote! {
            const __D: &[i128] = &[#(#table),*];
            let __known = (#a)[0].as_const().and_then(|__k| __D.get(__k as usize)).map(|__d| *__d as #t);
        };
        if rgreen {
            return self.bind(
                fi,
                r,
                quote!({
                    #known
                    match __known {
                        Some(__d) => __d,
                        None => { __c.decline("a cast of an enum value not known while compiling"); break 'path None; }
                    }
                }),
            );
        }
        let first = discs.first().copied().unwrap_or(0);
        let dynamic = if discs.iter().enumerate().all(|(k, d)| *d == first + k as i128) {
            let f = first as i64 as u64;
            let ov = Self::overflow(BinOp::Min);
            quote!({
                let __t = __c.b.red_cast(&(#a)[0], #vt);
                __c.b.red_bin(#rt::BinOp::Add, #ov, &__t, &#rt::RedBox::constant(#vt, #vt.canon(#f)))
            })
        } else {
            // Discriminants in any order: looked up by a helper.
            let cb = self.callback(
                1,
                quote! {
                    const __D: &[i128] = &[#(#table),*];
                    let __d = __D[__b[0] as usize] as #t;
                    __b[0] = #w;
                },
            );
            quote!(__c.b.red_call(#cb, "an enum's discriminant", &[(#a)[0]], &[#vt])[0])
        };
        self.bind(
            fi,
            r,
            quote!({
                #known
                match __known {
                    Some(__d) => #rt::RedBox::constant(#vt, #w),
                    None => #dynamic,
                }
            }),
        )
    }
}

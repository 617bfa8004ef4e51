//! Timeshifting arithmetic, comparisons, casts and copies (methods of
//! `timeshift::Gen`): green operands compute now, red ones emit residual
//! operations through the runtime's red boxes, which fold constants.

use hint_annotator::flowgraph::{BinOp, HintKind, OpKind, UnOp};
use hint_annotator::types::Ty;
use proc_macro2::TokenStream;
use quote::quote;

use crate::repr::*;
use crate::timeshift::*;

impl<'g> Gen<'g> {
    /// An arithmetic operation, comparison, cast or copy (`SameAs`, a hint).
    pub(crate) fn arith_op(&mut self, fi: usize, op: &hint_annotator::flowgraph::Op) -> TokenStream {
        let rt = rt();
        let f = self.fns[fi];
        let OpParts { r, rr, rgreen, args } = self.op_parts(fi, op);
        match &op.kind {
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
                if let (Repr::RSlice, Ty::Ref { to, .. }) = (&rr, self.value_ty(fi, &args[0])) {
                    if let Ty::Vec(et) = &*to {
                        // `&Vec<T>` as `&[T]`: the buffer and the length.
                        let Some(esc) = scalar(et) else { return self.decline("a slice of non-scalars") };
                        let (addr, _) = need!(self, self.red_object(fi, &args[0]), "a vector");
                        let t = sc_rust(esc);
                        return self.bind(
                            fi,
                            r,
                            quote!({
                                #addr
                                match #rt::heap::vec_layout::<#t>() {
                                    Some(__l) => [__st.vec_buf(&mut __c.b, &__addr, __l), __st.vec_len(&mut __c.b, &__addr, __l)],
                                    None => { __c.decline("a Vec whose layout is not known"); break 'path None; }
                                }
                            }),
                        );
                    }
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
}

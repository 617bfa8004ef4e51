//! The content of green data behind a portal's green references, as bytes.
//!
//! Compiled code is cached by the *addresses* of the green data it was
//! specialized on (the bytecode, the class table). When that data is freed
//! and other data is allocated at the same address, the address alone would
//! select code compiled for the old data. So each cached entry also keeps
//! the bytes of the data (see `jitgen_runtime::driver::PortalCache`), and
//! code is reused only when they are equal. This module generates, per type
//! of the module, a function appending the bytes of a value and everything
//! it owns or references: scalars, sequences (with their buffers' addresses
//! and lengths), structs, enums (their tag, then the payload), boxes and
//! references (with their addresses: compiled code may read green data
//! through addresses it holds as constants).
//!
//! Not covered (documented as green data that must stay unchanged while
//! code compiled for it is cached): `HashMap`s (their length only) and
//! types from outside the module.
//!
//! ## Green data and cached code
//!
//! **Green data and cached code** (`content.rs` in the macro crate). Compiled code is
//! cached by the addresses of the green data it was specialized on, and may hold
//! addresses of green data it reads at run time. So each cache entry also keeps the
//! *content* of the portal's green data: the bytes of green slices of scalars (compared
//! in place), and for deeper green data (a `&Program` with its class table) the bytes of
//! everything reachable plus the addresses of every buffer, taken once per call of the
//! portal by generated `__content_T` functions. Code is reused only when the content is
//! equal; a program freed and another allocated at the same address recompiles (the
//! cache keeps the code of a few earlier contents per key, for when one comes back). Found by
//! TLC's tests, which assemble a fresh program per run: stale code read freed class
//! tables. `HashMap`s (length only) and types from outside the module are not covered.
//!
//! A green sequence of flat values (`is_flat`: integers, and the module's enums and
//! structs made only of them) is first replaced by its canonical copy, one per content
//! (`entry::canonical`, `jitgen_runtime::portal::canonical`): a machine built afresh for
//! each run, its program in a new buffer, then finds the code compiled for the last one.
//!
//! Architecture Invariant: compiled code runs only on green data equal, in content and
//! in the addresses of its buffers, to the data it was compiled for.

use hint_annotator::types::{IntTy, Ty};
use hint_annotator::ModuleTypes;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::repr::{member, rust_ty, scalar, to_word, variants};

/// The function appending the content of a module struct or enum.
fn content_fn_name(name: &str) -> proc_macro2::Ident {
    format_ident!("__content_{}", name)
}

/// Statements appending to `__out` the content of the value `place` (an
/// expression of type `&ty`).
pub fn content_of(ty: &Ty, place: TokenStream) -> TokenStream {
    if let Some(sc) = scalar(ty) {
        let w = to_word(sc, quote!(*#place));
        return quote!(__out.extend_from_slice(&#w.to_le_bytes()););
    }
    match ty {
        Ty::F32 => quote!(__out.extend_from_slice(&(*#place).to_bits().to_le_bytes());),
        // Addresses count too: compiled code may hold the address of green
        // data it reads at run time.
        Ty::Ref { to, .. } => {
            // Parenthesized: `place` is followed by method calls inside.
            let inner = content_of(to, quote!((*#place)));
            quote! {
                __out.extend_from_slice(&((*#place) as *const _ as *const u8 as usize as u64).to_le_bytes());
                #inner
            }
        }
        Ty::Boxed(to) => {
            let inner = content_of(to, quote!((&**#place)));
            quote! {
                __out.extend_from_slice(&((&**#place) as *const _ as *const u8 as usize as u64).to_le_bytes());
                #inner
            }
        }
        Ty::Vec(t) | Ty::Slice(t) | Ty::Array(t, _) => {
            // Integers as their own bytes (the bytes of bytecode are
            // themselves), each sequence's room reserved once: this runs at
            // every portal call of a key with code.
            let head = quote! {
                __out.extend_from_slice(&(#place.as_ptr() as usize as u64).to_le_bytes());
                __out.extend_from_slice(&(#place.len() as u64).to_le_bytes());
            };
            match &**t {
                Ty::Int(IntTy::U8) => quote!(#head __out.extend_from_slice(&#place[..]);),
                Ty::Int(i) => {
                    let bytes = (i.bits() / 8) as usize;
                    quote! {
                        #head
                        __out.reserve(#place.len() * #bytes);
                        for __e in #place.iter() { __out.extend_from_slice(&__e.to_le_bytes()); }
                    }
                }
                t => {
                    let each = content_of(t, quote!(__e));
                    quote!(#head for __e in #place.iter() { #each })
                }
            }
        }
        Ty::Tuple(ts) => {
            let parts = ts.iter().enumerate().map(|(i, t)| {
                let i = syn::Index::from(i);
                content_of(t, quote!((&(#place).#i)))
            });
            quote!(#(#parts)*)
        }
        Ty::Map(..) => quote!(__out.extend_from_slice(&(#place.len() as u64).to_le_bytes());),
        Ty::Str => quote! {
            __out.extend_from_slice(&(#place.as_ptr() as usize as u64).to_le_bytes());
            __out.extend_from_slice(&(#place.len() as u64).to_le_bytes());
            __out.extend_from_slice(#place.as_bytes());
        },
        Ty::Struct(n) | Ty::Enum(n) => {
            let f = content_fn_name(n);
            quote!(#f(#place, __out);)
        }
        Ty::Option(t) => {
            let inner = content_of(t, quote!(__v));
            quote! {
                match #place {
                    ::core::option::Option::Some(__v) => { __out.push(1); #inner }
                    ::core::option::Option::None => __out.push(0),
                }
            }
        }
        Ty::Result(t, e) => {
            let (ok, err) = (content_of(t, quote!(__v)), content_of(e, quote!(__v)));
            quote! {
                match #place {
                    ::core::result::Result::Ok(__v) => { __out.push(0); #ok }
                    ::core::result::Result::Err(__v) => { __out.push(1); #err }
                }
            }
        }
        _ => quote!(),
    }
}

/// The content functions of every struct and enum of the module.
pub fn content_fns(types: &ModuleTypes) -> TokenStream {
    let mut fns = vec![];
    for (name, d) in &types.structs {
        let f = content_fn_name(name);
        let sn = format_ident!("{}", name);
        let lts = (0..d.lifetimes).map(|_| quote!('_));
        let t = if d.lifetimes > 0 { quote!(#sn<#(#lts),*>) } else { quote!(#sn) };
        let fields: Vec<TokenStream> = d
            .fields
            .iter()
            .map(|(fname, fty)| {
                let member = member(fname);
                content_of(fty, quote!((&__v.#member)))
            })
            .collect();
        fns.push(quote! {
            #[allow(non_snake_case, unused_variables, clippy::all)]
            pub(super) fn #f(__v: &#t, __out: &mut ::std::vec::Vec<u8>) {
                #(#fields)*
            }
        });
    }
    for name in types.enums.keys() {
        let ty = Ty::Enum(name.clone());
        let f = content_fn_name(name);
        let t = rust_ty(&ty, None);
        let arms: Vec<TokenStream> = variants(&ty, types)
            .into_iter()
            .enumerate()
            .map(|(k, (_, path, fields, named))| {
                let k = k as u8;
                let binds: Vec<proc_macro2::Ident> = (0..fields.len()).map(|i| format_ident!("__f{}", i)).collect();
                let pat = if fields.is_empty() {
                    quote!(#path)
                } else if named {
                    let names =
                        types.enums[name].variants[k as usize].fields.iter().map(|(n, _)| format_ident!("{}", n));
                    quote!(#path { #(#names: #binds),* })
                } else {
                    quote!(#path(#(#binds),*))
                };
                let parts: Vec<TokenStream> =
                    fields.iter().zip(&binds).map(|(t, b)| content_of(t, quote!(#b))).collect();
                quote!(#pat => { __out.push(#k); #(#parts)* })
            })
            .collect();
        let body = if arms.is_empty() { quote!(match *__v {}) } else { quote!(match __v { #(#arms)* }) };
        fns.push(quote! {
            #[allow(non_snake_case, unused_variables, clippy::all)]
            pub(super) fn #f(__v: &#t, __out: &mut ::std::vec::Vec<u8>) {
                #body
            }
        });
    }
    quote!(#(#fns)*)
}

/// Whether the content of a green value of this type is worth keeping
/// (it owns or references more than its address says).
pub fn has_deep_content(ty: &Ty) -> bool {
    match ty {
        Ty::Ref { to, .. } | Ty::Boxed(to) => has_deep_content(to),
        Ty::Struct(_)
        | Ty::Enum(_)
        | Ty::Vec(_)
        | Ty::Str
        | Ty::Slice(_)
        | Ty::Array(..)
        | Ty::Option(_)
        | Ty::Result(..) => true,
        _ => false,
    }
}

/// Whether a value of this type owns nothing and holds no address: a
/// bitwise copy of it is a value of its own, and [`content_of`] writes all
/// of it and no address. Green sequences of such values are made canonical
/// (`jitgen_runtime::portal::canonical`).
pub fn is_flat(ty: &Ty, types: &ModuleTypes) -> bool {
    fn flat(ty: &Ty, types: &ModuleTypes, seen: &mut Vec<String>) -> bool {
        match ty {
            Ty::Unit | Ty::Bool | Ty::Char | Ty::F32 | Ty::F64 | Ty::Int(_) => true,
            Ty::Option(t) => flat(t, types, seen),
            Ty::Result(t, e) => flat(t, types, seen) && flat(e, types, seen),
            Ty::Tuple(ts) => ts.iter().all(|t| flat(t, types, seen)),
            Ty::Struct(n) | Ty::Enum(n) if seen.contains(n) => true,
            Ty::Struct(n) => {
                let Some(d) = types.structs.get(n) else { return false };
                seen.push(n.clone());
                d.lifetimes == 0 && d.fields.values().all(|t| flat(t, types, seen))
            }
            Ty::Enum(n) => {
                let Some(d) = types.enums.get(n) else { return false };
                seen.push(n.clone());
                d.variants.iter().all(|v| v.fields.iter().all(|(_, t)| flat(t, types, seen)))
            }
            _ => false,
        }
    }
    flat(ty, types, &mut vec![])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_types_own_nothing_and_hold_no_address() {
        let src = r#"
            pub enum Instr { Push(i64), Jump { to: usize }, Op(Op), Halt }
            #[derive(Clone, Copy)]
            pub struct Op { code: u8, arg: i32, wide: f64 }
            pub enum Const { Num(f64), Text(String) }
            pub struct Chunk { code: Vec<u8> }
            pub struct Node { next: Option<Box<Node>>, v: i64 }
            pub fn run(code: &[Instr], c: &[Const], k: &Chunk, n: &Node) -> usize { code.len() + c.len() + k.code.len() + n.v as usize }
        "#;
        let cg = hint_annotator::annotate_source(src).expect("the module annotates");
        let types = cg.types();
        let flat = |t: Ty| is_flat(&t, types);
        assert!(flat(Ty::Enum("Instr".into())));
        assert!(flat(Ty::Struct("Op".into())));
        assert!(flat(Ty::Int(IntTy::U8)) && flat(Ty::Option(Box::new(Ty::Char))));
        assert!(!flat(Ty::Enum("Const".into())), "a `String` is owned");
        assert!(!flat(Ty::Struct("Chunk".into())), "a `Vec` is owned");
        assert!(!flat(Ty::Struct("Node".into())), "a `Box` is owned");
        assert!(!flat(Ty::Ref { mutable: false, to: Box::new(Ty::Int(IntTy::U8)) }), "an address");
        assert!(!flat(Ty::Struct("Unknown".into())), "not of the module");
    }
}

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
//! structs made only of them), or green data that owns only such values and `String`s
//! (`is_owned_flat`: copied by the generated `__copy_T` functions), is first replaced by
//! its canonical copy, one per content taken without addresses (`entry::canonical`,
//! `jitgen_runtime::portal::canonical`): a machine built afresh for each run, its program
//! in new buffers, then finds the code compiled for the last one.
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
/// expression of type `&ty`), with the addresses of its buffers where the
/// `bool` `__addrs` in scope says so (not for a canonical copy's content,
/// which is the same for equal data anywhere).
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
                if __addrs {
                    __out.extend_from_slice(&((*#place) as *const _ as *const u8 as usize as u64).to_le_bytes());
                }
                #inner
            }
        }
        Ty::Boxed(to) => {
            let inner = content_of(to, quote!((&**#place)));
            quote! {
                if __addrs {
                    __out.extend_from_slice(&((&**#place) as *const _ as *const u8 as usize as u64).to_le_bytes());
                }
                #inner
            }
        }
        Ty::Vec(t) | Ty::Slice(t) | Ty::Array(t, _) => {
            // Integers as their own bytes (the bytes of bytecode are
            // themselves), each sequence's room reserved once: this runs at
            // every portal call of a key with code.
            let head = quote! {
                if __addrs {
                    __out.extend_from_slice(&(#place.as_ptr() as usize as u64).to_le_bytes());
                }
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
            if __addrs {
                __out.extend_from_slice(&(#place.as_ptr() as usize as u64).to_le_bytes());
            }
            __out.extend_from_slice(&(#place.len() as u64).to_le_bytes());
            __out.extend_from_slice(#place.as_bytes());
        },
        Ty::Struct(n) | Ty::Enum(n) => {
            let f = content_fn_name(n);
            quote!(#f(#place, __out, __addrs);)
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
            pub(super) fn #f(__v: &#t, __out: &mut ::std::vec::Vec<u8>, __addrs: bool) {
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
            pub(super) fn #f(__v: &#t, __out: &mut ::std::vec::Vec<u8>, __addrs: bool) {
                #body
            }
        });
    }
    fns.extend(copy_fns(types));
    quote!(#(#fns)*)
}

/// The function copying a module struct or enum whose values own only
/// flat values (see [`is_owned_flat`]).
fn copy_fn_name(name: &str) -> proc_macro2::Ident {
    format_ident!("__copy_{}", name)
}

/// Whether green data of this type may be made canonical by a copy
/// (`jitgen_runtime::portal::canonical::deep`): flat values, and what owns
/// only such values (`Vec`s, boxes, `String`s, options, tuples, arrays, the
/// module's structs and enums made of these). Not what borrows, shares or
/// comes from outside the module (references, `Rc`, maps), whose copy would
/// not be a value of its own.
pub fn is_owned_flat(ty: &Ty, types: &ModuleTypes) -> bool {
    !matches!(ty, Ty::Boxed(t) if matches!(**t, Ty::Slice(_) | Ty::Text))
        && made_of_values(ty, types, true, &mut vec![])
}

/// Whether `ty` is made only of values (scalars, and the module's structs,
/// enums, options, tuples and arrays of them), and, where `owning`, of
/// what owns them (`Vec`s, boxes, `String`s); `seen`: the module types
/// under way (a recursive type is as its other fields say).
fn made_of_values(ty: &Ty, types: &ModuleTypes, owning: bool, seen: &mut Vec<String>) -> bool {
    let mut made = |t: &Ty| made_of_values(t, types, owning, seen);
    match ty {
        Ty::Unit | Ty::Bool | Ty::Char | Ty::F32 | Ty::F64 | Ty::Int(_) => true,
        Ty::Str => owning,
        Ty::Vec(t) | Ty::Boxed(t) => owning && made(t),
        Ty::Option(t) | Ty::Array(t, _) => made(t),
        Ty::Result(t, e) => made(t) && made(e),
        Ty::Tuple(ts) => ts.iter().all(made),
        Ty::Struct(n) | Ty::Enum(n) if seen.contains(n) => true,
        Ty::Struct(n) => {
            let Some(d) = types.structs.get(n) else { return false };
            seen.push(n.clone());
            d.lifetimes == 0 && d.fields.values().all(|t| made_of_values(t, types, owning, seen))
        }
        Ty::Enum(n) => {
            let Some(d) = types.enums.get(n) else { return false };
            seen.push(n.clone());
            d.variants.iter().all(|v| v.fields.iter().all(|(_, t)| made_of_values(t, types, owning, seen)))
        }
        _ => false,
    }
}

/// An expression copying the value `place` (an expression of type `&ty`,
/// [`is_owned_flat`]) into a value that owns buffers of its own.
pub fn copy_of(ty: &Ty, place: TokenStream) -> TokenStream {
    match ty {
        Ty::Unit | Ty::Bool | Ty::Char | Ty::F32 | Ty::F64 | Ty::Int(_) => quote!(*#place),
        Ty::Str => quote!(::std::string::String::clone(#place)),
        Ty::Vec(t) => {
            let e = copy_of(t, quote!(__e));
            quote!(#place.iter().map(|__e| #e).collect::<::std::vec::Vec<_>>())
        }
        Ty::Boxed(t) => {
            let e = copy_of(t, quote!((&**#place)));
            quote!(::std::boxed::Box::new(#e))
        }
        Ty::Option(t) => {
            let e = copy_of(t, quote!(__v));
            quote!(#place.as_ref().map(|__v| #e))
        }
        Ty::Result(t, e) => {
            let (ok, err) = (copy_of(t, quote!(__v)), copy_of(e, quote!(__v)));
            quote! {
                match #place {
                    ::core::result::Result::Ok(__v) => ::core::result::Result::Ok(#ok),
                    ::core::result::Result::Err(__v) => ::core::result::Result::Err(#err),
                }
            }
        }
        Ty::Tuple(ts) => {
            let parts = ts.iter().enumerate().map(|(i, t)| {
                let i = syn::Index::from(i);
                copy_of(t, quote!((&(#place).#i)))
            });
            quote!((#(#parts,)*))
        }
        Ty::Array(t, _) => {
            let e = copy_of(t, quote!((&(#place)[__i])));
            quote!(::core::array::from_fn(|__i| #e))
        }
        Ty::Struct(n) | Ty::Enum(n) => {
            let f = copy_fn_name(n);
            quote!(#f(#place))
        }
        _ => quote!(::core::unreachable!("jitgen: a copy of what owns more than flat values")),
    }
}

/// The copy functions of the module's structs and enums that own only
/// flat values (see [`copy_of`]).
fn copy_fns(types: &ModuleTypes) -> Vec<TokenStream> {
    let mut fns = vec![];
    for (name, d) in &types.structs {
        if !is_owned_flat(&Ty::Struct(name.clone()), types) {
            continue;
        }
        let (f, sn) = (copy_fn_name(name), format_ident!("{}", name));
        let fields = d.fields.iter().map(|(fname, fty)| {
            let m = member(fname);
            let e = copy_of(fty, quote!((&__v.#m)));
            quote!(#m: #e)
        });
        fns.push(quote! {
            #[allow(non_snake_case, dead_code, clippy::all)]
            pub(super) fn #f(__v: &#sn) -> #sn {
                #sn { #(#fields),* }
            }
        });
    }
    for (name, d) in &types.enums {
        let ty = Ty::Enum(name.clone());
        if !is_owned_flat(&ty, types) {
            continue;
        }
        let (f, t) = (copy_fn_name(name), rust_ty(&ty, None));
        let arms: Vec<TokenStream> = variants(&ty, types)
            .into_iter()
            .enumerate()
            .map(|(k, (_, path, fields, named))| {
                let binds: Vec<proc_macro2::Ident> = (0..fields.len()).map(|i| format_ident!("__f{}", i)).collect();
                let copies = fields.iter().zip(&binds).map(|(t, b)| copy_of(t, quote!(#b)));
                if fields.is_empty() {
                    quote!(#path => #path,)
                } else if named {
                    let names: Vec<proc_macro2::Ident> =
                        d.variants[k].fields.iter().map(|(n, _)| format_ident!("{}", n)).collect();
                    quote!(#path { #(#names: #binds),* } => #path { #(#names: #copies),* },)
                } else {
                    quote!(#path(#(#binds),*) => #path(#(#copies),*),)
                }
            })
            .collect();
        let body = if arms.is_empty() { quote!(match *__v {}) } else { quote!(match __v { #(#arms)* }) };
        fns.push(quote! {
            #[allow(non_snake_case, dead_code, clippy::all)]
            pub(super) fn #f(__v: &#t) -> #t {
                #body
            }
        });
    }
    fns
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
    made_of_values(ty, types, false, &mut vec![])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_types_own_nothing_and_owned_ones_only_flat_values_and_strings() {
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
        // What owns only flat values and `String`s is copied buffer by buffer.
        let owned = |t: Ty| is_owned_flat(&t, types);
        assert!(owned(Ty::Enum("Const".into())) && owned(Ty::Struct("Chunk".into())));
        assert!(owned(Ty::Struct("Node".into())), "a recursive box");
        assert!(owned(Ty::Vec(Box::new(Ty::Enum("Instr".into())))));
        assert!(!owned(Ty::Ref { mutable: false, to: Box::new(Ty::Struct("Chunk".into())) }), "borrowed");
        assert!(!owned(Ty::Map(Box::new(Ty::Str), Box::new(Ty::Int(IntTy::I64)))), "a map");
        assert!(!owned(Ty::Foreign("Rc<Chunk>".into())), "shared");
    }
}

//! The frame enum of a generating extension and its `Frame` implementation.
//!
//! A generating extension can stop at every program point where the runtime
//! may keep its state (a merge point, a split, a call): its frame enum has one
//! variant per point, holding the variables live there. The runtime asks a
//! frame for its key (the point and its green values as words), its red boxes,
//! to replace them, and to visit its pointers to virtual structures; each is a
//! `match` over the variants.
//!
//! Many points hold the same variables, and most arms do the same thing with
//! them: an arm binds only the fields its code uses, and variants whose arms
//! bind the same fields (names and types) and do the same share one arm, an
//! or-pattern. The point's number, which the key holds, comes from a match of
//! its own (one short line per variant). TLC's expansion has 483 variants and
//! about 300 distinct arms per method.

use std::collections::{BTreeMap, HashSet};

use indexmap::IndexMap;
use proc_macro2::{Ident, TokenStream, TokenTree};
use quote::quote;

use crate::repr::rt;

/// The arms of one method, grouped: the text of the bound fields (with their
/// types) and of the code, to the bound fields, the code and the variants.
#[derive(Default)]
struct Arms(IndexMap<String, (Vec<Ident>, TokenStream, Vec<Ident>)>);

impl Arms {
    /// Adds `variant`'s arm: `code`, binding those of `fields` it names.
    fn add(&mut self, variant: &Ident, fields: &BTreeMap<String, (Ident, String)>, code: TokenStream) {
        let used = idents_in(&code);
        let bound: Vec<&(Ident, String)> = fields.iter().filter(|(n, _)| used.contains(*n)).map(|(_, f)| f).collect();
        let sig: String = bound.iter().map(|(n, t)| format!("{n}: {t}; ")).collect::<String>() + &code.to_string();
        let entry = self.0.entry(sig).or_insert_with(|| (bound.iter().map(|(n, _)| n.clone()).collect(), code, vec![]));
        entry.2.push(variant.clone());
    }

    /// The arms, each `__Frame::Ra { f, .. } | __Frame::Rb { f, .. } => { code }`.
    fn arms(&self) -> Vec<TokenStream> {
        let arm = |(fields, code, variants): &(Vec<Ident>, TokenStream, Vec<Ident>)| {
            let pats = variants.iter().map(|v| quote!(__Frame::#v { #(#fields,)* .. }));
            quote!(#(#pats)|* => { #code })
        };
        self.0.values().map(arm).collect()
    }
}

/// Every identifier in `ts`, groups included.
fn idents_in(ts: &TokenStream) -> HashSet<String> {
    let mut out = HashSet::new();
    let mut stack: Vec<TokenStream> = vec![ts.clone()];
    while let Some(ts) = stack.pop() {
        for t in ts {
            match t {
                TokenTree::Ident(i) => {
                    out.insert(i.to_string());
                }
                TokenTree::Group(g) => stack.push(g.stream()),
                _ => {}
            }
        }
    }
    out
}

/// The frame enum and its `Frame` implementation, built a point at a time.
#[derive(Default)]
pub(crate) struct FrameEnum {
    variants: Vec<TokenStream>,
    points: Vec<TokenStream>,
    key: Arms,
    reds: Arms,
    sets: Arms,
    vptrs: Arms,
    unmerge: Vec<Ident>,
}

/// What a point's variant does in each method.
pub(crate) struct PointArms {
    /// Statements making the key's words in `__k`.
    pub key: TokenStream,
    /// Statements appending the red boxes to `__r`.
    pub reds: TokenStream,
    /// Statements replacing the red boxes from `__reds[__at..]`, advancing `__at`.
    pub sets: TokenStream,
    /// Statements visiting pointers to virtual structures with `__f`.
    pub vptrs: TokenStream,
    /// Whether the point is a join that records whether it merged.
    pub merges: bool,
}

impl FrameEnum {
    /// Adds the variant `name` of point `pid`, with its fields (name and type).
    pub fn add(&mut self, name: &Ident, pid: u32, fields: &[(Ident, TokenStream)], arms: PointArms) {
        self.variants.push({
            let fs = fields.iter().map(|(n, t)| quote!(#n: #t));
            quote!(#name { #(#fs),* })
        });
        self.points.push(quote!(__Frame::#name { .. } => #pid,));
        let by_name: BTreeMap<String, (Ident, String)> =
            fields.iter().map(|(n, t)| (n.to_string(), (n.clone(), t.to_string()))).collect();
        self.key.add(name, &by_name, arms.key);
        self.reds.add(name, &by_name, arms.reds);
        self.sets.add(name, &by_name, arms.sets);
        if !arms.vptrs.is_empty() {
            self.vptrs.add(name, &by_name, arms.vptrs);
        }
        if arms.merges {
            self.unmerge.push(name.clone());
        }
    }

    /// The enum and its implementation; `more` are further methods of it
    /// (`lists_mut`, `reads_saved_frames`).
    pub fn emit(&self, more: TokenStream) -> TokenStream {
        let rt = rt();
        let (variants, points) = (&self.variants, &self.points);
        let (key, reds, sets, vptrs) = (self.key.arms(), self.reds.arms(), self.sets.arms(), self.vptrs.arms());
        let unmerge = (!self.unmerge.is_empty()).then(|| {
            let pats = self.unmerge.iter().map(|v| quote!(__Frame::#v { __merged, .. }));
            quote!(#(#pats)|* => *__merged = false,)
        });
        quote! {
            #[derive(Clone)]
            #[allow(non_camel_case_types, dead_code)]
            pub(super) enum __Frame<'a> {
                #(#variants,)*
                __Phantom(::core::marker::PhantomData<&'a ()>),
            }

            impl<'a> __Frame<'a> {
                /// The program point this frame stops at.
                fn __point(&self) -> u32 {
                    match self {
                        #(#points)*
                        __Frame::__Phantom(_) => u32::MAX,
                    }
                }
            }

            impl<'a> #rt::state::Frame for __Frame<'a> {
                type Key = (u32, ::std::vec::Vec<u64>);
                #[allow(unused_variables, unused_mut)]
                fn key(&self) -> Self::Key {
                    let __k = match self {
                        #(#key)*
                        __Frame::__Phantom(_) => ::std::vec::Vec::new(),
                    };
                    (self.__point(), __k)
                }
                fn reds(&self) -> ::std::vec::Vec<#rt::redbox::RedBox> {
                    let mut __r = ::std::vec::Vec::new();
                    self.reds_into(&mut __r);
                    __r
                }
                #[allow(unused_variables, unused_mut)]
                fn reds_into(&self, __out: &mut ::std::vec::Vec<#rt::redbox::RedBox>) {
                    let mut __r = __out;
                    match self {
                        #(#reds)*
                        __Frame::__Phantom(_) => {}
                    }
                }
                #[allow(unused_variables)]
                fn vptrs_mut(&mut self, __f: &mut dyn FnMut(&mut #rt::virtuals::VPtr)) {
                    match self {
                        #(#vptrs)*
                        _ => {}
                    }
                }
                #more
                fn unmerge(&mut self) {
                    match self {
                        #unmerge
                        _ => {}
                    }
                }
                fn set_reds(&mut self, __reds: &[#rt::redbox::RedBox]) {
                    self.set_reds_counted(__reds);
                }
                #[allow(unused_variables, unused_mut, unused_assignments)]
                fn set_reds_counted(&mut self, __reds: &[#rt::redbox::RedBox]) -> usize {
                    let mut __at = 0usize;
                    match self {
                        #(#sets)*
                        __Frame::__Phantom(_) => {}
                    }
                    __at
                }
            }
        }
    }
}

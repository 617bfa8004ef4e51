//! Portal methods: `impl Vm { fn run(&mut self) }` with the merge point
//! inside, lifted to a free function of the module before the analysis.
//!
//! The method `T::m(&mut self, a: A) -> R` becomes the hidden free function
//! `__T_m(self_: &mut T, a: A) -> R` with the method's body (`self` renamed
//! `self_`, `Self` named `T`), and the method's body becomes the call
//! `__T_m(self, a)`. Everything downstream (analysis, portal hook, parking,
//! `jit::plain`, `jit::specialize`) sees an ordinary portal function; the
//! `jit` module names it again as `jit::plain::T::m` and
//! `jit::specialize::T::m`. The method keeps its signature and meaning.
//!
//! A `&mut self` method of a struct usually has `self` split into its
//! fields first (see `split`): the free function then takes the fields
//! (`__T_m(__self_cells, __self_pc_at_entry, __self_code, ..)`), and the
//! method's body, written after the analysis (`finish_wrappers`), borrows
//! them from `self` side by side. `jit::plain::T::m(&mut t, ..)` calls it
//! the same way, and `jit::specialize::T::m(&mut t, ..)` specializes it to
//! the green fields and runs it.
//!
//! Lifted are methods whose receiver is `&self` or `&mut self` and whose
//! other parameters are plain bindings (`x: T`, `mut x: T`); others keep
//! their merge point, which `check::portals` then refuses at its span.

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::{Group, Ident, TokenStream, TokenTree};
use quote::{format_ident, quote, ToTokens};
use syn::ext::IdentExt;

/// A method lifted to a free function.
pub struct LiftedMethod {
    /// The `Self` type's name.
    pub ty: Ident,
    /// The method's name.
    pub method: Ident,
    /// The free function's name.
    pub free: Ident,
    /// Whether the method is `pub`: a private one's free function (where
    /// `self` is kept whole) is named under `jit::plain` and
    /// `jit::specialize` for the module only.
    pub public: bool,
    /// When `self` was split into its fields (see `split`): how the method
    /// calls the free function.
    pub split: Option<SplitCall>,
    /// Why `self` was kept whole, when it was.
    pub whole_because: Option<String>,
    /// Methods of `ty` inlined into the portal that nothing else calls,
    /// with their bodies: the analysis sees a stub instead (analyzed
    /// alone, a method's `hint!(self.pc, concrete)` is a red read), and
    /// `finish_wrappers` puts the bodies back.
    pub stubbed: Vec<(Ident, syn::Block)>,
}

/// How a method whose `self` was split calls its portal.
pub struct SplitCall {
    /// The impl's generic parameters (lifetimes only) and where clause, for
    /// the functions taking `params`.
    pub generics: (TokenStream, TokenStream),
    /// `self_: &mut T` and the method's own parameters.
    pub params: Vec<TokenStream>,
    /// The method's return type (`-> R`), `Self` named.
    pub output: TokenStream,
    /// Binds the portal's arguments standing for `self` from `self_`.
    pub prelude: TokenStream,
    /// Copies the cells back into `self_`.
    pub epilogue: TokenStream,
    /// The portal's parameters' names, in order.
    pub args: Vec<Ident>,
    /// Those moved into the portal, passed to `jit::specialize` by `&mut`.
    pub owned: Vec<Ident>,
}

impl SplitCall {
    /// The body of a function taking `params` that calls `call` (the
    /// portal's arguments bound) and gives back what it returns.
    pub fn wrap(&self, call: TokenStream) -> TokenStream {
        let (prelude, epilogue) = (&self.prelude, &self.epilogue);
        quote!({
            #prelude
            let __jit_r = #call;
            #epilogue
            __jit_r
        })
    }
}

/// `tokens` with the receiver `self` renamed `self_` and `Self` named `ty`,
/// spans kept; `self::` (the module) stays as it is.
pub(crate) fn rename_self(tokens: TokenStream, ty: &Ident) -> TokenStream {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let path_follows = |k: usize| matches!(trees.get(k + 1), Some(TokenTree::Punct(p)) if p.as_char() == ':');
    trees
        .iter()
        .enumerate()
        .map(|(k, t)| match t {
            TokenTree::Ident(i) if i == "self" && !path_follows(k) => TokenTree::Ident(Ident::new("self_", i.span())),
            TokenTree::Ident(i) if i == "Self" => TokenTree::Ident(Ident::new(&ty.to_string(), i.span())),
            TokenTree::Group(g) => {
                let mut ng = Group::new(g.delimiter(), rename_self(g.stream(), ty));
                ng.set_span(g.span());
                TokenTree::Group(ng)
            }
            t => t.clone(),
        })
        .collect()
}

/// The methods of each type's inherent impls, by type and name (for
/// inlining into a split portal).
fn inherent_methods(items: &[syn::Item]) -> BTreeMap<String, BTreeMap<String, syn::ImplItemFn>> {
    let mut methods_of: BTreeMap<String, BTreeMap<String, syn::ImplItemFn>> = BTreeMap::new();
    for item in items {
        let syn::Item::Impl(imp) = item else { continue };
        let syn::Type::Path(tp) = &*imp.self_ty else { continue };
        let (Some(seg), None) = (tp.path.segments.last(), &imp.trait_) else { continue };
        for ii in &imp.items {
            if let syn::ImplItem::Fn(f) = ii {
                methods_of.entry(seg.ident.to_string()).or_default().insert(f.sig.ident.to_string(), f.clone());
            }
        }
    }
    methods_of
}

/// Lifts every portal method of the module's inherent impls; returns them.
/// With `split` false, every `self` is kept whole.
pub fn lift_portal_methods(module: &mut syn::ItemMod, split: bool) -> Vec<LiftedMethod> {
    let Some((_, items)) = &mut module.content else { return vec![] };
    let shapes = crate::split::ModuleShapes::read(items);
    let structs: BTreeMap<String, syn::ItemStruct> = items
        .iter()
        .filter_map(|i| match i {
            syn::Item::Struct(s) => Some((s.ident.to_string(), s.clone())),
            _ => None,
        })
        .collect();
    let methods_of = inherent_methods(items);
    let mut lifted = vec![];
    let mut free_fns: Vec<syn::Item> = vec![];
    let mut inlined: BTreeSet<(String, String)> = BTreeSet::new();
    for item in items.iter_mut() {
        let syn::Item::Impl(imp) = item else { continue };
        if imp.trait_.is_some() {
            continue;
        }
        let syn::Type::Path(tp) = &*imp.self_ty else { continue };
        let Some(ty) = tp.path.segments.last().map(|s| s.ident.clone()) else { continue };
        let self_ty = imp.self_ty.clone();
        let generics = imp.generics.clone();
        for ii in imp.items.iter_mut() {
            let syn::ImplItem::Fn(m) = ii else { continue };
            if !hint_annotator::has_merge_point(&m.block) {
                continue;
            }
            let Some(syn::FnArg::Receiver(recv)) = m.sig.inputs.first() else { continue };
            let syn::ReceiverKind::Reference(_, lifetime, mutability) = &recv.kind else { continue };
            let mut params = vec![quote!(self_: &#lifetime #mutability #self_ty)];
            let mut args = vec![quote!(self)];
            let mut own_args: Vec<Ident> = vec![];
            // The same, without `mut`: the wrapper only passes them on.
            let mut passed: Vec<TokenStream> = vec![];
            let mut simple = true;
            for a in m.sig.inputs.iter().skip(1) {
                match a {
                    syn::FnArg::Typed(pt) => match &*pt.pat {
                        syn::Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => {
                            let ident = &pi.ident;
                            params.push(quote!(#pt));
                            passed.push(typed(ident, &pt.ty));
                            args.push(quote!(#ident));
                            own_args.push(ident.clone());
                        }
                        _ => simple = false,
                    },
                    syn::FnArg::Receiver(_) => simple = false,
                }
            }
            if !simple || !m.sig.generics.params.is_empty() {
                continue;
            }
            let free = format_ident!("__{}_{}", ty.unraw(), m.sig.ident.unraw());
            let output = rename_self(m.sig.output.to_token_stream(), &ty);
            let vis = &m.vis;
            let (impl_generics, _, where_clause) = generics.split_for_impl();
            // `&mut self` of a struct of the module: split into its fields
            // where everything the method does with `self` allows it.
            // Lifetime parameters only (`impl<'a> Machine<'a>`): they
            // change no field's shape.
            let lifetimes_only = generics.params.iter().all(|p| matches!(p, syn::GenericParam::Lifetime(_)));
            let split = match (mutability, structs.get(&ty.to_string()), lifetimes_only) {
                _ if !split => Err("its module's analysis failed with it split".to_string()),
                (Some(_), Some(s), true) => {
                    let mut others = methods_of.get(&ty.to_string()).cloned().unwrap_or_default();
                    others.remove(&m.sig.ident.to_string());
                    crate::split::split(s, m, &others, &shapes)
                }
                (None, _, _) => Err("the method takes `&self`".to_string()),
                _ => Err(format!("`{ty}` is not a struct of the module without type parameters")),
            };
            let (split, whole_because) = match split {
                Ok(sp) => (Some(sp), None),
                Err(why) => (None, Some(why)),
            };
            let (params, body, split_call) = match split {
                Some(sp) => {
                    inlined.extend(sp.inlined.iter().map(|m| (ty.to_string(), m.clone())));
                    if let Some(c) = sp.cells {
                        free_fns.push(c);
                    }
                    free_fns.extend(sp.wrappers);
                    let own: Vec<TokenStream> = params.iter().skip(1).map(|p| rename_self(p.clone(), &ty)).collect();
                    let mut all_params = sp.params.clone();
                    all_params.extend(own.iter().cloned());
                    let mut all_args = sp.args.clone();
                    all_args.extend(own_args.iter().cloned());
                    let block = &sp.body;
                    let body = rename_self(quote!(#block), &ty);
                    let mut wparams = vec![quote!(self_: &mut #self_ty)];
                    wparams.extend(passed.iter().map(|p| rename_self(p.clone(), &ty)));
                    let call = SplitCall {
                        generics: (quote!(#impl_generics), quote!(#where_clause)),
                        params: wparams,
                        output: output.clone(),
                        prelude: sp.prelude,
                        epilogue: sp.epilogue,
                        args: all_args,
                        owned: sp.owned,
                    };
                    (all_params, body, Some(call))
                }
                None => {
                    let block = &m.block;
                    (params.into_iter().map(|p| rename_self(p, &ty)).collect(), rename_self(quote!(#block), &ty), None)
                }
            };
            let f: syn::Item = syn::parse_quote! {
                #[doc(hidden)]
                #[allow(non_snake_case, unreachable_code, unused_parens, unused_braces)]
                #vis fn #free #impl_generics (#(#params),*) #output #where_clause #body
            };
            free_fns.push(f);
            m.block = if split_call.is_some() {
                // The real body (see `finish_wrappers`) borrows the fields
                // side by side, which the analysis need not read.
                syn::parse_quote!({ panic!("jitgen: this body is replaced after the analysis") })
            } else {
                syn::parse_quote!({ #free(#(#args),*) })
            };
            drop_mut_params(&mut m.sig);
            lifted.push(LiftedMethod {
                ty: ty.clone(),
                method: m.sig.ident.clone(),
                free,
                public: matches!(m.vis, syn::Visibility::Public(_)),
                split: split_call,
                whole_because,
                stubbed: vec![],
            });
        }
    }
    // Names that functions other than the inlined methods and the split
    // portals mention: an inlined method named there may be called there.
    let split_methods: BTreeSet<(String, String)> =
        lifted.iter().filter(|l| l.split.is_some()).map(|l| (l.ty.to_string(), l.method.to_string())).collect();
    let mut mentioned: BTreeSet<String> = BTreeSet::new();
    let mut note = |ts: TokenStream| {
        fn idents(ts: TokenStream, out: &mut BTreeSet<String>) {
            for t in ts {
                match t {
                    TokenTree::Ident(i) => {
                        out.insert(i.to_string());
                    }
                    TokenTree::Group(g) => idents(g.stream(), out),
                    _ => {}
                }
            }
        }
        idents(ts, &mut mentioned);
    };
    for item in items.iter() {
        match item {
            syn::Item::Fn(f) => note(f.block.to_token_stream()),
            syn::Item::Impl(imp) => {
                let ty = match &*imp.self_ty {
                    syn::Type::Path(tp) => tp.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default(),
                    _ => String::new(),
                };
                for ii in &imp.items {
                    if let syn::ImplItem::Fn(f) = ii {
                        let key = (ty.clone(), f.sig.ident.to_string());
                        if !inlined.contains(&key) && !split_methods.contains(&key) {
                            note(f.block.to_token_stream());
                        }
                    }
                }
            }
            other => note(other.to_token_stream()),
        }
    }
    // Methods inlined into a split portal may have no other caller; those
    // no other function names are stubbed for the analysis.
    for item in items.iter_mut() {
        let syn::Item::Impl(imp) = item else { continue };
        let syn::Type::Path(tp) = &*imp.self_ty else { continue };
        let Some(ty) = tp.path.segments.last().map(|s| s.ident.clone()) else { continue };
        for ii in imp.items.iter_mut() {
            if let syn::ImplItem::Fn(f) = ii {
                if inlined.contains(&(ty.to_string(), f.sig.ident.to_string())) {
                    f.attrs.push(syn::parse_quote!(#[allow(dead_code)]));
                    if !mentioned.contains(&f.sig.ident.to_string()) {
                        if let Some(l) = lifted.iter_mut().find(|l| l.ty == ty && l.split.is_some()) {
                            let stub: syn::Block = syn::parse_quote!({ panic!("jitgen: inlined into a portal") });
                            l.stubbed.push((f.sig.ident.clone(), std::mem::replace(&mut f.block, stub)));
                        }
                    }
                }
            }
        }
    }
    items.extend(free_fns);
    lifted
}

/// Gives each method whose `self` was split its body: the fields of `self`
/// borrowed side by side, the portal called, the cells copied back.
pub fn finish_wrappers(module: &mut syn::ItemMod, lifted: &[LiftedMethod]) {
    let Some((_, items)) = &mut module.content else { return };
    for item in items.iter_mut() {
        let syn::Item::Impl(imp) = item else { continue };
        let syn::Type::Path(tp) = &*imp.self_ty else { continue };
        let Some(ty) = tp.path.segments.last().map(|s| s.ident.clone()) else { continue };
        for ii in imp.items.iter_mut() {
            let syn::ImplItem::Fn(m) = ii else { continue };
            if let Some((_, body)) =
                lifted.iter().filter(|l| l.ty == ty).flat_map(|l| &l.stubbed).find(|(n, _)| *n == m.sig.ident)
            {
                m.block = body.clone();
                continue;
            }
            let Some(l) = lifted.iter().find(|l| l.ty == ty && l.method == m.sig.ident) else { continue };
            let Some(sc) = &l.split else { continue };
            let (free, args) = (&l.free, &sc.args);
            let body = sc.wrap(quote!(#free(#(#args),*)));
            m.block = syn::parse_quote!({
                let self_ = self;
                #body
            });
        }
    }
}

/// `pub mod T { pub use super::__T_m as m; }` for each lifted method: the
/// method's name under `jit::plain` and `jit::specialize`. A method whose
/// `self` was split gets a function that calls the portal as the method
/// does; under `jit::specialize` it specializes and runs at once, given
/// which of the portal's parameters are green (`greens`, by free function).
pub fn method_paths(lifted: &[LiftedMethod], specialize: Option<&BTreeMap<String, Vec<bool>>>) -> TokenStream {
    let mut by_ty: Vec<(&Ident, Vec<&LiftedMethod>)> = vec![];
    for l in lifted {
        match by_ty.iter_mut().find(|(t, _)| **t == l.ty) {
            Some((_, ms)) => ms.push(l),
            None => by_ty.push((&l.ty, vec![l])),
        }
    }
    let mods = by_ty.iter().map(|(ty, ms)| {
        let uses = ms.iter().map(|l| {
            let (free, method) = (&l.free, &l.method);
            let Some(sc) = &l.split else {
                // A private method's free function is private to the module:
                // named for the module only.
                return match (l.public, specialize) {
                    (true, _) => quote!(pub use super::#free as #method;),
                    (false, None) => quote!(pub(in super::super::super) use super::#free as #method;),
                    // Specialized only where public (`jit::specialize`).
                    (false, Some(_)) => quote!(),
                };
            };
            let (params, output, (generics, where_clause)) = (&sc.params, &sc.output, &sc.generics);
            let call = match specialize {
                None => {
                    let args = &sc.args;
                    quote!(super::#free(#(#args),*))
                }
                Some(greens) => {
                    let Some(g) = greens.get(&free.to_string()) else { return quote!() };
                    let green: Vec<&Ident> = sc.args.iter().zip(g).filter(|(_, g)| **g).map(|(a, _)| a).collect();
                    let red: Vec<TokenStream> = sc
                        .args
                        .iter()
                        .zip(g)
                        .filter(|(_, g)| !**g)
                        .map(|(a, _)| if sc.owned.contains(a) { quote!(&mut #a) } else { quote!(#a) })
                        .collect();
                    quote!(super::#free(#(#green),*).call(#(#red),*))
                }
            };
            let body = sc.wrap(call);
            quote! {
                #[allow(clippy::all)]
                pub fn #method #generics (#(#params),*) #output #where_clause #body
            }
        });
        let doc = format!("The portal methods of `{ty}`.");
        quote! {
            #[doc = #doc]
            #[allow(non_snake_case)]
            pub mod #ty {
                #[allow(unused_imports)]
                use super::super::super::*;
                #(#uses)*
            }
        }
    });
    quote!(#(#mods)*)
}

/// Drops `mut` from the parameters of a method whose body now only passes
/// them on (to the free function lifted from it): none is changed there.
fn drop_mut_params(sig: &mut syn::Signature) {
    for a in sig.inputs.iter_mut() {
        if let syn::FnArg::Typed(pt) = a {
            if let syn::Pat::Ident(pi) = &mut *pt.pat {
                pi.mutability = None;
            }
        }
    }
}

/// `name: ty`, a parameter without a pattern's `mut`.
fn typed(name: &Ident, ty: &syn::Type) -> TokenStream {
    quote!(#name: #ty)
}

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
//! Lifted are methods whose receiver is `&self` or `&mut self` and whose
//! other parameters are plain bindings (`x: T`, `mut x: T`); others keep
//! their merge point, which `check::portals` then refuses at its span.

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

/// Lifts every portal method of the module's inherent impls; returns them.
pub fn lift_portal_methods(module: &mut syn::ItemMod) -> Vec<LiftedMethod> {
    let Some((_, items)) = &mut module.content else { return vec![] };
    let mut lifted = vec![];
    let mut free_fns: Vec<syn::Item> = vec![];
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
            let mut simple = true;
            for a in m.sig.inputs.iter().skip(1) {
                match a {
                    syn::FnArg::Typed(pt) => match &*pt.pat {
                        syn::Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => {
                            let ident = &pi.ident;
                            params.push(quote!(#pt));
                            args.push(quote!(#ident));
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
            let block = &m.block;
            let body = rename_self(quote!(#block), &ty);
            let params: Vec<TokenStream> = params.into_iter().map(|p| rename_self(p, &ty)).collect();
            let vis = &m.vis;
            let (impl_generics, _, where_clause) = generics.split_for_impl();
            let f: syn::Item = syn::parse_quote! {
                #[doc(hidden)]
                #[allow(non_snake_case)]
                #vis fn #free #impl_generics (#(#params),*) #output #where_clause #body
            };
            free_fns.push(f);
            m.block = syn::parse_quote!({ #free(#(#args),*) });
            lifted.push(LiftedMethod { ty: ty.clone(), method: m.sig.ident.clone(), free });
        }
    }
    items.extend(free_fns);
    lifted
}

/// `pub mod T { pub use super::__T_m as m; }` for each lifted method: the
/// method's name under `jit::plain` and `jit::specialize`.
pub fn method_paths(lifted: &[LiftedMethod]) -> TokenStream {
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
            quote!(pub use super::#free as #method;)
        });
        let doc = format!("The portal methods of `{ty}`.");
        quote! {
            #[doc = #doc]
            #[allow(non_snake_case)]
            pub mod #ty {
                #(#uses)*
            }
        }
    });
    quote!(#(#mods)*)
}

//! The `#[jit_interpreter]` attribute of jitgen.
//!
//! Thin at the top: parse the module, check it with the hint-annotator
//! (every problem reported at its span, all together), expand. After an error
//! the module is still emitted (with the markers removed) beside the errors, so
//! that rustc reports no follow-on errors about the module's items.
//!
//! Architecture Invariant: only this crate emits tokens; generated code refers
//! to jitgen only through `::jitgen::__private`, and its own names start with `__`.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::{quote, ToTokens};

/// Turns an interpreter module into a JIT compiler generator. See the jitgen crate.
#[proc_macro_attribute]
pub fn jit_interpreter(attr: TokenStream, item: TokenStream) -> TokenStream {
    let attr = TokenStream2::from(attr);
    let mut module = match syn::parse::<syn::ItemMod>(item.clone()) {
        Ok(m) => m,
        Err(_) => {
            let item2 = TokenStream2::from(item);
            let err =
                syn::Error::new_spanned(&item2, "#[jit_interpreter] goes on an inline module: `mod name { ... }`")
                    .to_compile_error();
            return quote!(#err #item2).into();
        }
    };
    let mut errors = vec![];
    if !attr.is_empty() {
        errors.push(syn::Error::new_spanned(&attr, "#[jit_interpreter] takes no arguments"));
    }
    let checked = hint_annotator::annotate_module(&module);
    let source = module.to_token_stream().to_string();
    strip_markers(&mut module);
    let graphs_ok = match checked {
        Ok(_) => true,
        Err(e) => {
            errors.push(e);
            false
        }
    };
    if module.content.is_none() {
        let errs = errors.iter().map(syn::Error::to_compile_error);
        return quote!(#(#errs)* #module).into();
    }
    let jit = jit_module(&module, &source, graphs_ok);
    if let Some((_, items)) = &mut module.content {
        items.push(syn::Item::Verbatim(jit));
    }
    let errs = errors.iter().map(syn::Error::to_compile_error);
    quote!(#(#errs)* #module).into()
}

/// Removes the marker attributes jitgen consumes (`#[virtualizable]`,
/// `#[jit_opaque]`): an attribute macro cannot declare helper attributes.
fn strip_markers(module: &mut syn::ItemMod) {
    let keep = |a: &syn::Attribute| !(a.path().is_ident("virtualizable") || a.path().is_ident("jit_opaque"));
    let Some((_, items)) = &mut module.content else { return };
    for item in items {
        match item {
            syn::Item::Struct(s) => s.attrs.retain(keep),
            syn::Item::Fn(f) => f.attrs.retain(keep),
            syn::Item::Impl(i) => {
                for ii in &mut i.items {
                    if let syn::ImplItem::Fn(f) = ii {
                        f.attrs.retain(keep);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The `jit` submodule of the contract.
fn jit_module(module: &syn::ItemMod, source: &str, graphs_ok: bool) -> TokenStream2 {
    let Some((_, items)) = &module.content else { return TokenStream2::new() };
    let fns: Vec<&syn::Ident> = items
        .iter()
        .filter_map(|i| match i {
            syn::Item::Fn(f) if matches!(f.vis, syn::Visibility::Public(_)) => Some(&f.sig.ident),
            _ => None,
        })
        .collect();
    let graphs_body = if graphs_ok {
        quote!(::jitgen::__private::graphs_from_source(__SOURCE))
    } else {
        quote!(::core::unreachable!())
    };
    quote! {
        /// What `#[jit_interpreter]` derived from this module.
        pub mod jit {
            /// The module's source, as the annotator saw it.
            const __SOURCE: &str = #source;

            /// The colored flow graphs of every function of the module
            /// (computed on each call).
            pub fn graphs() -> ::jitgen::__private::hint_annotator::ColoredGraphs {
                #graphs_body
            }

            /// The unmodified interpreter: never compiles.
            pub mod plain {
                #(pub use super::super::#fns;)*
            }
        }
    }
}

//! The `#[jit_interpreter]` attribute of jitgen.
//!
//! Thin at the top: parse the module, check it (the hint-annotator's
//! analysis and `check.rs`, every problem reported at its span, all
//! together), expand (`timeshift.rs`: the generating extension; `jit_module.rs`:
//! portal hooks and the `jit` module). After an error the module is still
//! emitted (markers removed) beside the errors, so that rustc reports no
//! follow-on errors about the module's items.
//!
//! Architecture Invariant: only this crate emits tokens; generated code refers
//! to jitgen only through `::jitgen::__private`, and its own names start with `__`.

mod check;
mod content;
mod jit_module;
mod repr;
mod timeshift;

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
    let graphs = match checked {
        Ok(g) => {
            errors.extend(check::portals(&g));
            Some(g)
        }
        Err(e) => {
            errors.push(e);
            None
        }
    };
    let errs: Vec<TokenStream2> = errors.iter().map(syn::Error::to_compile_error).collect();
    let Some((_, items)) = &mut module.content else {
        return quote!(#(#errs)* #module).into();
    };
    match graphs {
        Some(g) if errors.is_empty() => {
            let mut fns: Vec<&mut syn::ItemFn> = items
                .iter_mut()
                .filter_map(|i| match i {
                    syn::Item::Fn(f) => Some(f),
                    _ => None,
                })
                .collect();
            let exp = jit_module::expand(&g, &mut fns, &source);
            for it in exp.items {
                items.push(syn::Item::Verbatim(it));
            }
        }
        _ => {
            // Enough of `jit` for the module's own code to keep compiling.
            items.push(syn::Item::Verbatim(quote! {
                pub mod jit {}
            }));
        }
    }
    let out = quote!(#(#errs)* #module);
    // For debugging jitgen itself: `JITGEN_EXPAND_DIR=dir` writes each
    // expansion to `dir/MODULE.rs` (format it with rustfmt to read it).
    if let Some(dir) = std::env::var_os("JITGEN_EXPAND_DIR") {
        let path = std::path::Path::new(&dir).join(format!("{}.rs", module.ident));
        let _ = std::fs::write(path, out.to_string());
    }
    out.into()
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

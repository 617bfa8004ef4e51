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
//!
//! ## How the expansion works
//!
//! **Representation** (`repr.rs`), by type and color: green scalars are Rust values;
//! green pointers are `&'a` references to the interpreter's own data (frozen while
//! compiling); red scalars and pointers are red boxes, a red pointer being the address of
//! the object its type designates (`Box<T>`: the `T`), a red `&[T]` two boxes (address,
//! length); enums (`Option`, `Result`, the module's own), green or red, are arrays of red
//! boxes in a flattened layout (tag, then every variant's payload fields; unused slots
//! constant 0). Green enums are part of the merge key, red ones of the reds.
//!
//! **Timeshifting** (`timeshift.rs`; containers in `containers.rs`, calls in `calls.rs`,
//! frames and points in `frames.rs`, the analyses it reads in `analysis.rs`): green
//! operations become Rust on Rust values.
//! Green arithmetic goes through `ops::fold_*`, so that an operation that would panic
//! ends the path with the same error exit in residual code instead of panicking in the
//! compiler; green indexing that would fail does the same with a bounds check. Red
//! operations become red-box operations (`red_bin`, ...). At the entry of a join block
//! the state goes through `merge` first (`MergeKind::LoopHead` for back-edge targets of
//! the interpreter's graph, `Join` otherwise); a red branch goes through `split`. Calls:
//! a green call (pure, green result) runs the Rust function now; red, gray and yellow
//! calls are inlined by pushing a continuation frame and the callee's entry frame
//! (the callee's `@green_result` copy for yellow calls); `#[jit_opaque]` functions and
//! functions outside the module become residual calls through generated callbacks.
//! Red `Vec<scalar>` length, reads and writes are inline loads and stores at offsets
//! measured at run time (`heap::vec_layout`), with Rust's bounds check; push, pop and
//! allocation are callbacks; allocations live in an arena until the residual call
//! returns. What cannot be compiled yet (allocating structs and boxes, promoting a
//! run-time value, types that cannot be laid out) generates `decline("why")`: the
//! compilation is declined, the portal remembers the key as declined, the interpreter
//! goes on, and `jit::last_decline()` (or `JITGEN_LOG=1`) tells why.
//!
//! **Portals.** A function with `hint!(global_merge_point)` is a portal. Its hook counts
//! iterations per position key (the green variables live there: addresses of green
//! data, values of green scalars) in a thread-local `PortalCache`; past the threshold
//! (1000 by default) a key is warm, and once the run has lasted `WARMUP_FACTOR` (4)
//! times the expected compile time since then, it compiles residual code that starts
//! at the merge point with the interpreter's red values as inputs and returns the
//! function's result. An explicit threshold (`set_threshold`, `JITGEN_THRESHOLD`)
//! compiles right past the count, with no warm-up. Reuse of compiled code compares
//! the content of green sequences with what was compiled against (not copied while
//! merely counting): a buffer refilled with another program recompiles. Deeper green
//! data (a `&Program`) is compared by its bytes and buffer addresses, taken once per
//! portal call (see "Green data and cached code"). Settings and
//! counts: `jit::config()` (`JITGEN_THRESHOLD`, `JITGEN_OFF`), `jit::stats()`. Where
//! the merge point starts its loop, the portal also gets a copy of the loop without
//! the hook (`unhooked`), which a call that has met only declined keys for a while
//! goes on in; with compiling off, the portal calls its plain copy out of line.

mod ahead;
mod analysis;
mod arith;
mod byte_arrays;
mod calls;
mod check;
mod closure_args;
mod closure_params;
mod closures;
mod containers;
mod content;
mod entry;
mod external;
mod forward;
mod frame;
mod frames;
mod jit_module;
mod leaving;
mod left;
mod methods;
mod nested;
mod objects;
mod outline;
mod park;
mod repr;
mod slice_iters;
mod split;
mod timeshift;
mod unhooked;

#[cfg(test)]
mod tests;

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::{quote, ToTokens};

/// Turns an interpreter module into a JIT compiler generator. See the jitgen crate.
#[proc_macro_attribute]
pub fn jit_interpreter(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand_attribute(attr.into(), item.into()).into()
}

/// The whole of `#[jit_interpreter]` over `proc_macro2` tokens, so that
/// tests can expand a module outside a compiler.
fn expand_attribute(attr: TokenStream2, item: TokenStream2) -> TokenStream2 {
    let mut module = match syn::parse2::<syn::ItemMod>(item.clone()) {
        Ok(m) => m,
        Err(_) => {
            let err = syn::Error::new_spanned(&item, "#[jit_interpreter] goes on an inline module: `mod name { ... }`")
                .to_compile_error();
            return quote!(#err #item);
        }
    };
    let mut errors = vec![];
    if module.content.is_none() {
        // Not Rust jitgen leaves aside: the attribute misused.
        let err = syn::Error::new(
            module.ident.span(),
            "#[jit_interpreter] needs the module's items inline (`mod name { ... }`): rustc does not let attribute macros see into `mod name;` files",
        )
        .to_compile_error();
        return quote!(#err #module);
    }
    if !attr.is_empty() {
        errors.push(syn::Error::new_spanned(&attr, "#[jit_interpreter] takes no arguments"));
    }
    nested::hoist(&mut module);
    closure_args::specialize(&mut module);
    closures::inline(&mut module);
    byte_arrays::rewrite(&mut module);
    slice_iters::rewrite(&mut module);
    let original = module.clone();
    let mut lifted = methods::lift_portal_methods(&mut module, true);
    // The closures that `split` bound where it inlined a method.
    closures::inline(&mut module);
    let external = external::find(&module);
    let mut checked = hint_annotator::annotate_module_with(&module, &external.items);
    // A portal method whose `self` was split into its fields may use them
    // in ways the analysis does not support where `self` whole would not
    // (its methods inlined): the module analyzed with `self` whole.
    if matches!(&checked, Err(e) if hint_annotator::is_unsupported(e)) && lifted.iter().any(|l| l.split.is_some()) {
        let mut whole = original;
        let lifted_whole = methods::lift_portal_methods(&mut whole, false);
        let again = hint_annotator::annotate_module_with(&whole, &external.items);
        if again.is_ok() {
            (module, lifted, checked) = (whole, lifted_whole, again);
        }
    }
    let source = module.to_token_stream().to_string();
    let analyzed = module.clone();
    // The functions with a merge point, before the markers are stripped:
    // one left to Rust still says so where it is called (`JITGEN_LOG`).
    let portals: std::collections::HashSet<String> = match &analyzed.content {
        Some((_, items)) => items
            .iter()
            .filter_map(|i| match i {
                syn::Item::Fn(f) if hint_annotator::has_merge_point(&f.block) => Some(f.sig.ident.to_string()),
                _ => None,
            })
            .collect(),
        None => Default::default(),
    };
    methods::finish_wrappers(&mut module, &lifted);
    strip_markers(&mut module);
    // Rust the analysis does not support, in a portal or the module's
    // types, leaves the whole module to Rust: it interprets, and says why.
    let mut left_whole = None;
    let graphs = match checked {
        Ok(g) => {
            errors.extend(check::portals(&g));
            Some(g)
        }
        Err(e) if errors.is_empty() && hint_annotator::is_unsupported(&e) => {
            left_whole = Some(e);
            None
        }
        Err(e) => {
            errors.push(with_split_reason(e, &lifted));
            None
        }
    };
    let errs: Vec<TokenStream2> = errors.iter().map(syn::Error::to_compile_error).collect();
    if module.content.is_none() {
        return quote!(#(#errs)* #module);
    }
    match graphs {
        Some(g) if errors.is_empty() => {
            let pristine = module.clone();
            let declined = expand_into(&mut module, &g, &source, &lifted, &external, &portals);
            // An operation of a portal whose code always declines keeps
            // compiled code from every position that may reach it (see
            // `ahead`): the statement holding it runs as Rust, outlined,
            // where it can stand alone, and the module is expanded again.
            if !declined.is_empty() {
                let outlined = |g: &hint_annotator::ColoredGraphs| -> usize {
                    g.functions().map(|f| f.graph.outlined.len()).sum()
                };
                let again = hint_annotator::annotate_module_outlining(&analyzed, &external.items, &declined);
                if let Some(g2) = again.ok().filter(|g2| outlined(g2) > outlined(&g) && check::portals(g2).is_empty()) {
                    module = pristine;
                    expand_into(&mut module, &g2, &source, &lifted, &external, &portals);
                }
            }
        }
        _ if left_whole.is_some() => {
            let name = module.ident.to_string();
            let why = left_whole.take().expect("checked");
            let Some((_, items)) = &mut module.content else { unreachable!("checked above") };
            left::whole(&name, items, &source, &external, why);
        }
        _ => {
            let Some((_, items)) = &mut module.content else { unreachable!("checked above") };
            // Enough of `jit` for the module's own code to keep compiling.
            items.push(syn::Item::Verbatim(quote! {
                pub mod jit {}
            }));
        }
    }
    quiet_hint_statements(&mut module);
    let out = quote!(#(#errs)* #module);
    // For debugging jitgen itself: `JITGEN_EXPAND_DIR=dir` writes each
    // expansion to `dir/MODULE.rs` (format it with rustfmt to read it).
    if let Some(dir) = std::env::var_os("JITGEN_EXPAND_DIR") {
        let path = std::path::Path::new(&dir).join(format!("{}.rs", module.ident));
        let _ = std::fs::write(path, out.to_string());
    }
    out
}

/// `e` with, on each error naming a field of a portal's `self` kept whole
/// (`self_.pc`), why `self` could not be split into its fields: that is
/// why the field is memory, and red.
fn with_split_reason(e: syn::Error, lifted: &[methods::LiftedMethod]) -> syn::Error {
    let Some(why) = lifted.iter().find_map(|l| l.whole_because.as_ref()) else { return e };
    let mut out: Option<syn::Error> = None;
    for one in e {
        // The fields as written (`self.pc`), not as the lifted method names them.
        let text = one.to_string().replace("self_.", "self.");
        let one = if text.contains("`self.") || text.contains("(self.") {
            syn::Error::new(
                one.span(),
                format!("{text}; the fields of `self` are memory here, for `self` could not be split into them: {why}"),
            )
        } else {
            one
        };
        match &mut out {
            Some(o) => o.combine(one),
            None => out = Some(one),
        }
    }
    out.unwrap_or_else(|| syn::Error::new(proc_macro2::Span::call_site(), why))
}

/// Adds the expansion of `g` to `module`'s items (its portals rewritten in
/// place); where the operations whose code always declines are.
fn expand_into(
    module: &mut syn::ItemMod,
    g: &hint_annotator::ColoredGraphs,
    source: &str,
    lifted: &[methods::LiftedMethod],
    external: &external::External,
    portals: &std::collections::HashSet<String>,
) -> Vec<(proc_macro2::Span, String)> {
    let Some((_, items)) = &mut module.content else { return vec![] };
    let cx = outline::ModuleContext::of(items);
    let mut fns: Vec<&mut syn::ItemFn> = items
        .iter_mut()
        .filter_map(|i| match i {
            syn::Item::Fn(f) => Some(f),
            _ => None,
        })
        .collect();
    let exp = jit_module::expand(g, &mut fns, source, lifted, external, &cx, portals);
    items.extend(exp.items.into_iter().map(syn::Item::Verbatim));
    exp.declined_at
}

/// Writes each `hint!(e, kind);` standing as a statement in the module's
/// own code as `let _ = hint!(e, kind);`: the hint is `e` in Rust, and a
/// statement that only borrows (`hint!(&*frame.function, promote);`)
/// would make rustc warn, in the user's crate, that the borrow is unused.
/// Done after the expansion, which reads such statements as written (and
/// to the portals' plain copies, `jit_module::plain_copy`).
fn quiet_hint_statements(module: &mut syn::ItemMod) {
    syn::visit_mut::VisitMut::visit_item_mod_mut(&mut QuietHints, module);
}

/// The visitor of [`quiet_hint_statements`].
pub(crate) struct QuietHints;

impl syn::visit_mut::VisitMut for QuietHints {
    fn visit_stmt_mut(&mut self, s: &mut syn::Stmt) {
        syn::visit_mut::visit_stmt_mut(self, s);
        let mac = match s {
            syn::Stmt::Macro(m) if m.semi_token.is_some() => &m.mac,
            syn::Stmt::Expr(syn::Expr::Macro(m), Some(_)) => &m.mac,
            _ => return,
        };
        let two_args =
            mac.tokens.clone().into_iter().any(|t| matches!(t, proc_macro2::TokenTree::Punct(p) if p.as_char() == ','));
        if mac.path.is_ident("hint") && two_args {
            let mac = mac.clone();
            *s = syn::parse_quote!(let _ = #mac;);
        }
    }
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

//! Code the analysis leaves to Rust (`hint_annotator::LeftToRust`): how
//! `jit::left_to_rust()` reports it, and the expansion of a module left to
//! Rust as a whole.
//!
//! A function whose body uses Rust the analysis does not model is called as
//! it is from compiled code (the annotator's doc says how); so is a portal,
//! where another portal of the module compiles. A module none of whose
//! portals compiles, or whose types use such Rust, is left to Rust whole: it keeps
//! its functions unchanged and interprets, with the `jit` module every
//! annotated module has (settings, counts, graphs), which says why. Only
//! misused hints, and what would make compiled code wrong, stay compile
//! errors.

use quote::quote;

use crate::repr::rt;

/// The items of a module left to Rust as a whole (`items`, named `name`,
/// its source `source`): its functions unchanged, so that it interprets, and
/// a `jit` module that says why (`left_to_rust`, and `JITGEN_LOG` at the
/// first call of a portal) beside the settings and counts every module has.
pub fn whole(
    name: &str,
    items: &mut Vec<syn::Item>,
    source: &str,
    external: &crate::external::External,
    why: syn::Error,
) {
    let common = common_items(source, external, None);
    let left_lines =
        lines(&[hint_annotator::LeftToRust { name: "the module".into(), reasons: why.into_iter().collect() }]);
    let log = quote!(self::jit::__log_left_whole(););
    for item in items.iter_mut() {
        match item {
            syn::Item::Fn(f) if hint_annotator::has_merge_point(&f.block) => {
                f.block.stmts.insert(0, syn::parse_quote!(#log));
            }
            syn::Item::Impl(i) => {
                for ii in &mut i.items {
                    if let syn::ImplItem::Fn(f) = ii {
                        if hint_annotator::has_merge_point(&f.block) {
                            f.block.stmts.insert(0, syn::parse_quote!(#log));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    let intro = format!("jitgen: module `{name}` is interpreted only, compiled code needs what it does not support:");
    items.push(syn::Item::Verbatim(quote! {
        #[doc(hidden)]
        #[allow(unused_imports)]
        use ::jitgen::__private::rt as __rt;

        /// What `#[jit_interpreter]` derived from this module: it uses Rust
        /// the analysis does not support where code would be compiled, so it
        /// only interprets (see `left_to_rust`).
        pub mod jit {
            #common

            /// No compiled code.
            pub fn portal_listings() -> ::std::vec::Vec<::std::string::String> {
                ::std::vec::Vec::new()
            }

            /// Nothing was declined: nothing compiles.
            pub fn last_decline() -> ::core::option::Option<::std::string::String> {
                ::core::option::Option::None
            }

            /// Why the module is left to Rust, one line per reason:
            /// `the module: file:line:column: what is not supported`.
            pub fn left_to_rust() -> ::std::vec::Vec<::std::string::String> {
                [#(#left_lines),*].iter().map(|__l: &&str| ::std::string::ToString::to_string(*__l)).collect()
            }

            /// Prints why the module only interprets, once per process,
            /// where `JITGEN_LOG` is set.
            #[doc(hidden)]
            #[inline]
            pub fn __log_left_whole() {
                // The environment read once: a portal may be called once
                // per call of the interpreted program.
                static __ONCE: ::std::sync::Once = ::std::sync::Once::new();
                __ONCE.call_once(|| {
                    if ::std::env::var_os("JITGEN_LOG").is_some() {
                        ::std::eprintln!(#intro);
                        for __l in left_to_rust() {
                            ::std::eprintln!("  {}", __l);
                        }
                    }
                });
            }

            /// The unmodified interpreter (the module's own functions: the
            /// module only interprets).
            #[allow(unused_imports)]
            pub mod plain {
                pub use super::super::*;
            }
        }
    }));
}

/// Why a module whose portals have nothing to specialize interprets
/// (`ColoredGraphs::nothing_to_specialize`), as `jit::left_to_rust()` and
/// `JITGEN_LOG` say it.
pub fn nothing_to_specialize(at: proc_macro2::Span) -> String {
    let reason = "nothing to specialize: no green variable is live at the merge point and nothing is promoted, so compiled code would be the interpreter again; it interprets. Mark what the program counter reads: `hint!(code[pc], concrete)`, or `hint!(pc, promote)`";
    let p = at.start();
    format!("the module: {}:{}:{}: {reason}", at.file(), p.line, p.column + 1)
}

/// What the analysis left to Rust, one line per reason, as
/// `jit::left_to_rust()` returns them: `name: file:line:column: message`.
pub fn lines(left: &[hint_annotator::LeftToRust]) -> Vec<String> {
    left.iter()
        .flat_map(|l| {
            l.reasons.iter().map(move |e| {
                let span = e.span();
                let at = span.start();
                format!("{}: {}:{}:{}: {e}", l.name, span.file(), at.line, at.column + 1)
            })
        })
        .collect()
}

/// What the `jit` module of every annotated module has, compiled or left to
/// Rust: its source (for `graphs()`), settings and counts. With
/// `interpreting`, why the module compiles nothing unless asked (see
/// `Config::interpreting`).
pub fn common_items(
    source: &str,
    external: &crate::external::External,
    interpreting: Option<&str>,
) -> proc_macro2::TokenStream {
    let rt = rt();
    let external_source = external.source();
    let config = match interpreting {
        Some(why) => quote!(#rt::driver::Config::interpreting(#why)),
        None => quote!(#rt::driver::Config::new()),
    };
    quote! {
        #[allow(unused_imports)]
        use super::__rt;
        const __SOURCE: &str = #source;
        const __EXTERNAL: &str = #external_source;

        #[doc(hidden)]
        pub static __CONFIG: #rt::driver::Config = #config;
        #[doc(hidden)]
        pub static __STATS: #rt::driver::Stats = #rt::driver::Stats::new();
        #[doc(hidden)]
        pub(crate) static __DUE: #rt::driver::DueCount = #rt::driver::DueCount::new();

        /// The colored flow graphs of every function of the module (computed
        /// on each call); none where the module is left to Rust.
        pub fn graphs() -> ::jitgen::__private::ColoredGraphs {
            ::jitgen::__private::graphs_from_source(__SOURCE, __EXTERNAL)
        }

        /// Counts: compilations, residual operations, entries into residual code, ...
        pub fn stats() -> #rt::driver::StatsSnapshot {
            __STATS.snapshot()
        }

        /// Settings: threshold, on/off (the environment's JITGEN_THRESHOLD and JITGEN_OFF by default).
        pub fn config() -> &'static #rt::driver::Config {
            &__CONFIG
        }
    }
}

//! The hint-annotator: jitgen's front half.
//!
//! It reads the functions of an interpreter module written in a subset of Rust,
//! builds a flow graph per function ([`flowgraph`]), infers a machine-level
//! type for every variable ([`types`]), and runs the binding-time analysis of
//! PyPy's hint-annotator over them: which values are green (known when the
//! generating extension runs) and which are red (known only when the residual
//! code runs). The result is a set of [`ColoredGraphs`].
//!
//! It is a plain library: the `#[jit_interpreter]` macro calls it on `syn`
//! items, tests call it on source text.
//!
//! Architecture Invariant: nothing here knows of Cranelift or of the runtime;
//! the only output is data (colored graphs) and `syn::Error`s with spans.
//! Architecture Invariant: every problem is reported as a `syn::Error` at the
//! span of the offending code, and all problems of a module are reported
//! together, never only the first.

#![warn(missing_docs)]

mod bta;
mod colored;
pub mod flowgraph;
mod lower;
pub mod module;
pub mod types;

use indexmap::IndexMap;

pub use colored::{CallKind, Color, ColoredGraph, ColoredGraphs, MergePoint, ModuleTypes, GREEN_RESULT_SUFFIX};
pub use flowgraph::FlowGraph;

/// Merges many errors into one that reports each at its own span.
pub fn combine(errors: Vec<syn::Error>) -> Option<syn::Error> {
    let mut it = errors.into_iter();
    let mut first = it.next()?;
    for e in it {
        first.combine(e);
    }
    Some(first)
}

fn graphs_and_types(items: &[syn::Item]) -> Result<(IndexMap<String, FlowGraph>, ModuleTypes), syn::Error> {
    let mut errors = vec![];
    let m = module::ModuleDef::read(items, &mut errors);
    let mut graphs = IndexMap::new();
    for f in m.fns.values() {
        if let Some(g) = lower::lower_fn(&m, f, &mut errors) {
            graphs.insert(f.name.clone(), g);
        }
    }
    match combine(errors) {
        Some(e) => Err(e),
        None => Ok((graphs, ModuleTypes { structs: m.structs.clone(), enums: m.enums.clone() })),
    }
}

/// Builds the (uncolored) flow graph of every function of a module.
pub fn flow_graphs(items: &[syn::Item]) -> Result<IndexMap<String, FlowGraph>, syn::Error> {
    graphs_and_types(items).map(|(g, _)| g)
}

/// Annotates the items of a module: flow graphs, types, binding times.
pub fn annotate_items(items: &[syn::Item]) -> Result<ColoredGraphs, syn::Error> {
    let (graphs, types) = graphs_and_types(items)?;
    colored::color_module(graphs, types).map_err(|e| combine(e).expect("at least one error"))
}

/// Annotates an inline module (`mod m { ... }`).
pub fn annotate_module(m: &syn::ItemMod) -> Result<ColoredGraphs, syn::Error> {
    match &m.content {
        Some((_, items)) => annotate_items(items),
        None => Err(syn::Error::new(
            m.ident.span(),
            "#[jit_interpreter] needs the module's items inline (`mod name { ... }`): rustc does not let attribute macros see into `mod name;` files",
        )),
    }
}

/// Annotates Rust source text: the module marked `#[jit_interpreter]` in it,
/// or else a file that is a single inline module, or else all the file's items.
pub fn annotate_source(src: &str) -> Result<ColoredGraphs, syn::Error> {
    let file = syn::parse_file(src)?;
    let marked = file.items.iter().find_map(|i| match i {
        syn::Item::Mod(m) if m.attrs.iter().any(|a| a.path().is_ident("jit_interpreter")) => Some(m),
        _ => None,
    });
    match (marked, file.items.as_slice()) {
        (Some(m), _) | (None, [syn::Item::Mod(m)]) => annotate_module(m),
        _ => annotate_items(&file.items),
    }
}

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
//!
//! ## How the front half works
//!
//! **Flow graphs.** PyPy-style: a block has input arguments, operations and one exit
//! (`goto`, a two-way branch on a bool, `return`, or `abort` for panics). Exits leave
//! through links, the edges of a petgraph `StableDiGraph`, that carry one value per input
//! argument of the target. Constants are inline operands. Lowering gives every join
//! block (loop headers, ends of `if`/`match`) one input argument per binding in scope;
//! afterwards, arguments that receive one value everywhere are replaced by it, dead ones
//! dropped, and blocks that only forward are bypassed: what remains are the real joins.
//! `match` lowers to a chain of tests (tag or value comparisons, range bounds); the last
//! unguarded arm needs no test because rustc checked exhaustiveness.
//!
//! **Memory model.** Integers, bools, chars, floats and enums (with `Option` and
//! `Result`) are values. Structs, `Vec`, `Box`, slices, arrays and references are
//! pointers: a struct literal allocates, `p.f = v` stores through the pointer, `&x` and
//! `*r` of pointers are copies of the pointer. A struct of a `Copy` type read by value
//! from a place (`let f = *frames.last().unwrap()`, an argument, a `push`) is copied
//! field by field, as is a derived `.clone()` of a struct of values (of one that owns what
//! the analysis does not model, Rust's own clone is one residual call, and the local holding it
//! drops it where it is assigned again: `OpKind::Drop`; a struct owning a `Vec`, a `String` or
//! such an object, bound by `let` and used only for its scalar fields, is dropped where its block
//! ends, as Rust drops it (a frame popped from a `Vec<Frame>`); assigned to a local never moved, or
//! through `*` of a list's accessor, it is written in place: its values stored, the objects
//! the analysis does not model cloned into their places by Rust, `OpKind::CloneInto`), and `*r = s`
//! through a `&mut` stores each field: the copy is Rust's, never an alias. This is PyPy's low-level model; virtual lists and
//! structures (`jitgen-runtime`'s `vlist.rs` and `virtuals.rs`) remove the allocations
//! again in residual code. A type the analysis does not model, as a struct field or an
//! enum payload, is an opaque object (`Ty::Foreign`) reached by address; so is a struct
//! an enum holds inline: an enum read in place carries its address.
//!
//! **Types.** Unification with three kinds of inference variables (any, integer literal,
//! float literal). An unsuffixed literal takes its type from its use (`let mut pc = 0;`
//! is a `usize` because of `s[pc]`) and defaults to `i32`/`f64` as in rustc. A variable
//! whose type stays unknown is an error at its span asking for an ascription.
//!
//! **Binding-time rules** (`bta.rs`, module doc): constants green, everything else red
//! by default; foldable operations green when all their operands are; reads foldable
//! through *frozen* pointers only; non-foldable operations red; a join red unless a
//! `concrete` hint needs it green (then everything flowing in must be); `concrete`
//! global and backward with an error naming the blocking red value; `promote` local
//! (a field promoted is the promoted value where it is read again, until written or
//! handed to a call: `lower/known.rs`); `variable` red; `deepfreeze` marks a value frozen. Calls: each function has a summary
//! (the parameters its result depends on through foldable operations, the parameters
//! its own hints require green, whether it has effects); a call site reproduces the
//! dependency locally, so two call sites never pollute each other. A call whose result
//! must be green uses a specialized copy of the callee whose result is forced green
//! (`NAME@green_result` in `ColoredGraphs`). A parameter is green when its hints require
//! it or every call site passes a green value (a monotone fixpoint from all-red).
//! Calls are green (green result, no effects: run at compile time), gray (no result,
//! effects), yellow (green result, effects) or red.
//!
//! **Frozen pointers.** A value of type `&T` is frozen: Rust forbids mutation behind a
//! shared reference while it lives, so reads through it are foldable without a hint
//! (this is where jitgen is simpler to use than PyPy, which needed `deepfreeze` for
//! every structure). A parameter declared `&T` is frozen also where `&T` is the value
//! itself at the machine level (`&Obj` of an enum holding objects, whose payloads are
//! reached by address). What is behind an `Rc<S>` or `Arc<S>` is read as behind a `&S`
//! (`shared_deref`): neither lets it change; `hint!(&*rc, promote)` makes that `&S` green,
//! promoted by its address. `hint!(e, deepfreeze)` makes any value
//! frozen. What is read through a frozen pointer is frozen; a join is frozen when
//! everything flowing in is. The
//! runtime must still treat green data behind references as content (DESIGN.md
//! section 6): a caller may reuse the same buffer for another program.
//!
//! **Position keys.** At a `hint!(global_merge_point)`, the green variables live there
//! (liveness on the graph). No hand-written list of greens and reds.

#![warn(missing_docs)]

mod bta;
mod colored;
pub mod flowgraph;
mod lower;
pub mod macro_rules;
pub mod module;
mod resolve;
pub mod types;

use indexmap::IndexMap;

use crate::flowgraph::{OpKind, Var};
use crate::types::Ty;
use quote::ToTokens;
use std::collections::BTreeSet;

pub use colored::{
    CallKind, Color, ColoredGraph, ColoredGraphs, LeftToRust, MergePoint, ModuleTypes, GREEN_RESULT_SUFFIX,
};
pub use flowgraph::FlowGraph;
pub use flowgraph::{has_merge_point, is_merge_point};

/// Merges many errors into one that reports each at its own span.
pub fn combine(errors: Vec<syn::Error>) -> Option<syn::Error> {
    let mut it = errors.into_iter();
    let mut first = it.next()?;
    for e in it {
        first.combine(e);
    }
    Some(first)
}

/// How an error begins that a module's hints gave once the Rust the analysis
/// does not support was outlined: why it is left to Rust all the same (never
/// a compile error: the module interprets as written).
pub const OUTLINED_THEN: &str = "once the Rust jitgen does not model runs as Rust (outlined): ";

/// Whether `op` is a compound assignment (`+=`, `<<=`, ...): the one list
/// of them the annotator and the macro share.
pub fn is_compound_assign_op(op: &syn::BinOp) -> bool {
    use syn::BinOp::*;
    matches!(
        op,
        AddAssign(_)
            | SubAssign(_)
            | MulAssign(_)
            | DivAssign(_)
            | RemAssign(_)
            | BitXorAssign(_)
            | BitAndAssign(_)
            | BitOrAssign(_)
            | ShlAssign(_)
            | ShrAssign(_)
    )
}

/// Whether the method `m`, called on a number, `bool` or `char`, is one of
/// the standard library's that take it by value or by `&` (`checked_sub`,
/// `wrapping_add`, `min`, `to_string`, `is_ascii_digit`): it reads the
/// value and cannot change it. Any other method may be a trait's taking
/// `&mut self` (a user's `fn bump(&mut self)` on `i64`, `add_assign`,
/// `make_ascii_uppercase`), so a caller that keeps the receiver in a
/// local of its own must write the local back after such a call. The one
/// list the annotator and the macro share.
pub fn is_by_value_scalar_method(m: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "checked_",
        "wrapping_",
        "saturating_",
        "overflowing_",
        "strict_",
        "unchecked_",
        "is_",
        "count_",
        "leading_",
        "trailing_",
        "rotate_",
        "ilog",
        "to_",
        "then",
        "eq_ignore_",
    ];
    const NAMES: &[&str] = &[
        "abs",
        "abs_diff",
        "unsigned_abs",
        "pow",
        "isqrt",
        "signum",
        "swap_bytes",
        "reverse_bits",
        "rem_euclid",
        "div_euclid",
        "div_ceil",
        "next_power_of_two",
        "next_multiple_of",
        "midpoint",
        "cast_signed",
        "cast_unsigned",
        "min",
        "max",
        "clamp",
        "cmp",
        "partial_cmp",
        "total_cmp",
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "clone",
        "into",
        "try_into",
        "hash",
        "fmt",
        "sqrt",
        "cbrt",
        "floor",
        "ceil",
        "round",
        "round_ties_even",
        "trunc",
        "fract",
        "powi",
        "powf",
        "exp",
        "exp2",
        "exp_m1",
        "ln",
        "ln_1p",
        "log",
        "log2",
        "log10",
        "sin",
        "cos",
        "tan",
        "asin",
        "acos",
        "atan",
        "atan2",
        "sinh",
        "cosh",
        "tanh",
        "hypot",
        "mul_add",
        "recip",
        "copysign",
        "len_utf8",
        "len_utf16",
        "escape_default",
        "escape_debug",
        "escape_unicode",
    ];
    PREFIXES.iter().any(|p| m.starts_with(p)) || NAMES.contains(&m)
}

/// Whether an error only says that the analysis does not support some Rust
/// (a construct, a type, a method), as opposed to a misuse of a hint, which
/// stays a compile error. Code with such errors is left to Rust.
pub fn is_unsupported(e: &syn::Error) -> bool {
    e.clone().into_iter().all(|e| {
        let m = e.to_string();
        m.starts_with(OUTLINED_THEN)
            || !(m.contains("hint!(") || m.starts_with("unknown hint") || m.starts_with("`hint!`"))
    })
}

/// The module's analyzable functions as flow graphs, its types, and what
/// is left to Rust.
///
/// A function whose body uses Rust the analysis does not support is left to
/// Rust: it gets no graph, and calls of it are residual calls of the
/// function as it is (as for `#[jit_opaque]`). Its callers are lowered
/// again, since a call of a function left to Rust may itself be
/// unsupported (a type the analysis does not model), until nothing more is
/// left. What remains an error: hints misused, problems with the module's
/// types, and anything unsupported in a portal (a function with
/// `hint!(global_merge_point)`) where no other portal of the module lowers:
/// the macro then leaves the whole module to Rust. Beside a portal that
/// lowers, such a portal is left to Rust like any function.
fn graphs_and_types(
    items: &[syn::Item],
    external: &[syn::Item],
) -> Result<(IndexMap<String, FlowGraph>, ModuleTypes, Vec<LeftToRust>), syn::Error> {
    // External types the analysis cannot model are left out, and what uses
    // them is then left to Rust like any type it does not know.
    let mut dropped: std::collections::HashSet<String> = std::collections::HashSet::new();
    loop {
        let kept: Vec<syn::Item> = external
            .iter()
            .filter(|i| match i {
                syn::Item::Struct(s) => !dropped.contains(&s.ident.to_string()),
                syn::Item::Enum(e) => !dropped.contains(&e.ident.to_string()),
                syn::Item::Impl(i) => !dropped.contains(&i.self_ty.to_token_stream().to_string()),
                _ => true,
            })
            .cloned()
            .collect();
        let all: Vec<syn::Item> = items.iter().cloned().chain(kept).collect();
        let mut external_errors = vec![];
        let mut errors = vec![];
        let m = module::ModuleDef::read_with_external(&all, items.len(), &mut errors, &mut external_errors);
        let poisoned: Vec<String> = m
            .structs
            .iter()
            .filter(|(_, d)| d.fields.values().any(|t| matches!(t, types::Ty::Error)))
            .map(|(n, _)| n)
            .chain(
                m.enums
                    .iter()
                    .filter(|(_, d)| {
                        d.variants.iter().any(|v| v.fields.iter().any(|(_, t)| matches!(t, types::Ty::Error)))
                    })
                    .map(|(n, _)| n),
            )
            .filter(|n| m.external.contains(*n) && !dropped.contains(*n))
            .cloned()
            .collect();
        if !poisoned.is_empty() {
            dropped.extend(poisoned);
            continue;
        }
        return analyze(m, errors);
    }
}

/// Lowers the functions of a module read (see `graphs_and_types`).
fn analyze(
    mut m: module::ModuleDef<'_>,
    mut errors: Vec<syn::Error>,
) -> Result<(IndexMap<String, FlowGraph>, ModuleTypes, Vec<LeftToRust>), syn::Error> {
    let external = std::mem::take(&mut m.external);
    let mut left: Vec<LeftToRust> = std::mem::take(&mut m.skipped)
        .into_iter()
        .filter(|(name, _)| !external.contains(name))
        .map(|(name, reasons)| LeftToRust { name, reasons })
        .collect();
    // Methods of other modules marked `#[jit_opaque]` are called, never
    // inlined (their bodies may use what is private to their module); the
    // macro leaves unmarked only those it can inline (`external.rs`).
    // Generic functions are called as they are (see `Ty::Param`).
    let mut left_fns: std::collections::HashSet<String> =
        m.fns.values().filter(|f| external.contains(&f.name) || f.is_generic()).map(|f| f.name.clone()).collect();
    loop {
        let mut graphs = IndexMap::new();
        let mut failed = vec![];
        for f in m.fns.values() {
            // Functions taking or returning a `&mut` to a value are lowered
            // where they are called, each call inlined.
            if lower::inline_only(f) || left_fns.contains(&f.name) {
                continue;
            }
            let mut errs = vec![];
            match lower::lower_fn(&m, f, &mut errs) {
                Some(g) if errs.is_empty() => {
                    graphs.insert(f.name.clone(), g);
                }
                _ => {
                    // An inlined function's errors are found at each of its calls: report each once.
                    let mut seen = std::collections::HashSet::new();
                    errs.retain(|e| seen.insert((format!("{:?}", e.span()), e.to_string())));
                    failed.push((f.name.clone(), errs));
                }
            }
        }
        let mut fn_errors = vec![];
        let mut changed = false;
        // A portal using Rust the analysis does not support interprets, as
        // Rust, where another portal of the module compiles: only a module
        // none of whose portals can compile is left to Rust as a whole.
        let a_portal_compiles = graphs.keys().any(|n| m.fns.get(n).is_some_and(|f| has_merge_point(f.body)));
        for (name, errs) in failed {
            let f = m.fns.get_mut(&name).expect("a function of the module");
            if !errs.is_empty() && errs.iter().all(is_unsupported) && (a_portal_compiles || !has_merge_point(f.body)) {
                f.opaque = true;
                left_fns.insert(name.clone());
                // A trait impl's method (`Display::fmt`) runs as Rust where
                // analyzed code does not call it: nothing to report.
                if !m.trait_methods.contains(&name) {
                    left.push(LeftToRust { name, reasons: errs });
                }
                changed = true;
            } else {
                fn_errors.extend(errs);
            }
        }
        if changed {
            continue;
        }
        errors.extend(fn_errors);
        // Statements of portals outlined: each runs as Rust, say which
        // (where the module is left to Rust anyway, they are not why).
        for g in graphs.values().filter(|_| errors.is_empty()) {
            let reasons: Vec<syn::Error> = g.outlined.iter().flat_map(|o| o.reasons.iter().cloned()).collect();
            if !reasons.is_empty() {
                left.push(LeftToRust { name: g.name.clone(), reasons });
            }
        }
        if !errors.is_empty() && errors.iter().all(is_unsupported) {
            // The module is left to Rust as a whole: say everything it uses
            // that the analysis does not support.
            errors.extend(std::mem::take(&mut left).into_iter().flat_map(|l| l.reasons));
            errors.sort_by_key(|e| (e.span().start().line, e.span().start().column));
        }
        let mut seen = std::collections::HashSet::new();
        errors.retain(|e| seen.insert((format!("{:?}", e.span()), e.to_string())));
        return match combine(errors) {
            Some(e) => Err(e),
            None => {
                let generic_fns = m.fns.values().filter(|f| f.is_generic()).map(|f| f.name.clone()).collect();
                let written_structs = written_structs(&graphs);
                let shared_params = m
                    .fns
                    .values()
                    .filter(|f| f.params.iter().any(|p| p.shared))
                    .map(|f| (f.name.clone(), f.params.iter().map(|p| p.shared).collect()))
                    .collect();
                let types = ModuleTypes {
                    structs: m.structs.clone(),
                    enums: m.enums.clone(),
                    generic_fns,
                    written_structs,
                    shared_params,
                };
                Ok((graphs, types, left))
            }
        };
    }
}

/// The structs some analyzed code writes a field of (`s.f = v`, through
/// any reference) other than through a `&mut` parameter of a portal no
/// analyzed code calls (`*last = ins` of a split `self.last`): such a
/// parameter is the caller's memory, which no value made while compiling
/// can be, and no enum payload read by words (see
/// `ModuleTypes::value_struct`).
fn written_structs(graphs: &IndexMap<String, FlowGraph>) -> BTreeSet<String> {
    let called: BTreeSet<&str> = graphs
        .values()
        .flat_map(|g| g.blocks().flat_map(move |b| g.graph[b].ops.iter()))
        .filter_map(|op| match &op.kind {
            OpKind::Call(f) => Some(f.as_str()),
            _ => None,
        })
        .collect();
    let mut out = BTreeSet::new();
    for (name, g) in graphs {
        let portal = g.blocks().any(|b| g.graph[b].ops.iter().any(|op| matches!(op.kind, OpKind::GlobalMergePoint)));
        let callers_memory: BTreeSet<Var> = if portal && !called.contains(name.as_str()) {
            g.params().iter().copied().filter(|p| matches!(g.var(*p).ty, Ty::Ref { mutable: true, .. })).collect()
        } else {
            BTreeSet::new()
        };
        for b in g.blocks() {
            for op in &g.graph[b].ops {
                if let OpKind::SetField(_) | OpKind::CloneInto(_) = op.kind {
                    let mut t = g.value_ty(&op.args[0]);
                    while let Ty::Ref { to, .. } | Ty::Boxed(to) = t {
                        t = *to;
                    }
                    match t {
                        Ty::Struct(s) if !op.args[0].as_var().is_some_and(|v| callers_memory.contains(&v)) => {
                            out.insert(s);
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    out
}

/// Builds the (uncolored) flow graph of every function of a module.
pub fn flow_graphs(items: &[syn::Item]) -> Result<IndexMap<String, FlowGraph>, syn::Error> {
    graphs_and_types(items, &[]).map(|(g, _, _)| g)
}

/// Annotates the items of a module: flow graphs, types, binding times.
pub fn annotate_items(items: &[syn::Item]) -> Result<ColoredGraphs, syn::Error> {
    annotate_items_with(items, &[])
}

/// Annotates the items of a module with `external` items: structs, enums
/// and inherent impls of other modules that the module imports. Their
/// types are modeled where they can be (else left out, as types the
/// analysis does not know), their methods are residual calls, never inlined,
/// and nothing of them is reported as left to Rust.
pub fn annotate_items_with(items: &[syn::Item], external: &[syn::Item]) -> Result<ColoredGraphs, syn::Error> {
    let (graphs, types, left) = graphs_and_types(items, external)?;
    let outlined = graphs.values().any(|g| !g.outlined.is_empty());
    let e = match colored::color_module(graphs.clone(), types.clone(), left.clone(), false) {
        Ok(cg) => return Ok(cg),
        Err(e) => e,
    };
    if !outlined {
        // Last, a `concrete` hint that a red scalar blocks promotes it.
        return colored::color_module(graphs, types, left, true).map_err(|e| combine(e).expect("at least one error"));
    }
    // Outlining never makes an error of a module that interpreted: a
    // hint it leaves unsatisfiable (data passed to outlined Rust by
    // `&mut` is red) sends the module back to Rust, as without it.
    // Left to Rust as without outlining, saying also why the outlined
    // module did not hold (a value Rust's code makes is known only at run
    // time where a hint needs it known).
    let (plain, plain_types, plain_left) =
        lower::without_outlining(|| graphs_and_types(items, external)).map_err(|first| {
            let why = e.iter().map(|x| syn::Error::new(x.span(), format!("{OUTLINED_THEN}{x}")));
            combine(first.into_iter().chain(why).collect()).expect("at least one error")
        })?;
    if let Ok(cg) = colored::color_module(plain.clone(), plain_types.clone(), plain_left.clone(), false) {
        return Ok(cg);
    }
    // Last, promotions for `concrete` hints: with outlining (more of the
    // module compiles), else without.
    if let Ok(cg) = colored::color_module(graphs, types, left, true) {
        return Ok(cg);
    }
    colored::color_module(plain, plain_types, plain_left, true).map_err(|e| combine(e).expect("at least one error"))
}

/// Annotates an inline module (`mod m { ... }`).
pub fn annotate_module(m: &syn::ItemMod) -> Result<ColoredGraphs, syn::Error> {
    annotate_module_with(m, &[])
}

/// Annotates an inline module with the external items it imports (see
/// `annotate_items_with`).
pub fn annotate_module_with(m: &syn::ItemMod, external: &[syn::Item]) -> Result<ColoredGraphs, syn::Error> {
    match &m.content {
        Some((_, items)) => annotate_items_with(items, external),
        None => Err(syn::Error::new(
            m.ident.span(),
            "#[jit_interpreter] needs the module's items inline (`mod name { ... }`): rustc does not let attribute macros see into `mod name;` files",
        )),
    }
}

/// Annotates a module as [`annotate_module_with`] does, with each operation
/// at `spans` in a portal (one whose code the generating extension always
/// declines, and why) outlined: the innermost statement holding it that
/// can stand alone runs as one residual call of Rust's own code.
pub fn annotate_module_outlining(
    m: &syn::ItemMod,
    external: &[syn::Item],
    spans: &[(proc_macro2::Span, String)],
) -> Result<ColoredGraphs, syn::Error> {
    lower::outlining_at(spans, || annotate_module_with(m, external))
}

/// Annotates Rust source text: the module marked `#[jit_interpreter]` in it,
/// or else a file that is a single inline module, or else all the file's items.
pub fn annotate_source(src: &str) -> Result<ColoredGraphs, syn::Error> {
    annotate_source_with(src, "")
}

/// Annotates Rust source text (as `annotate_source`) with external items
/// given as source text too (see `annotate_items_with`).
pub fn annotate_source_with(src: &str, external: &str) -> Result<ColoredGraphs, syn::Error> {
    let external = syn::parse_file(external)?.items;
    let file = syn::parse_file(src)?;
    let marked = file.items.iter().find_map(|i| match i {
        syn::Item::Mod(m) if m.attrs.iter().any(|a| a.path().is_ident("jit_interpreter")) => Some(m),
        _ => None,
    });
    match (marked, file.items.as_slice()) {
        (Some(m), _) | (None, [syn::Item::Mod(m)]) => annotate_module_with(m, &external),
        _ => annotate_items_with(&file.items, &external),
    }
}

//! The front end: the body of one function, as `syn` syntax, to a flow graph.
//!
//! Lowering walks the body once. Source bindings live in a scoped environment;
//! a *join* block (the head of a loop, the end of an `if` or `match`) takes one
//! input argument per binding in scope, and every jump to it passes the current
//! value of each; a block with a single predecessor takes none. Afterwards,
//! input arguments that receive the same value on every link (or only
//! themselves) are replaced by that value, and those never used are dropped:
//! what remains are the real joins of the function.
//!
//! Every construct outside the supported subset is a `syn::Error` at its span,
//! saying what to write instead; lowering goes on after an error (the faulty
//! expression becomes a value of the error type, which is compatible with any
//! type) so that all errors of a function are reported together.

use std::collections::{HashMap, HashSet};

use petgraph::stable_graph::{NodeIndex, StableDiGraph};
use proc_macro2::Span;
use quote::ToTokens;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, Pat, Token};

use crate::flowgraph::{
    has_merge_point, BinOp, Block, Const, Exit, FlowGraph, HintKind, Link, Op, OpKind, UnOp, Value, Var, VarInfo,
};
use crate::module::{FnDef, ModuleDef};
use crate::types::{IntTy, Ty, Unifier};

mod blocks;
mod calls;
mod control;
mod known;
mod macros;
use macros::{appended, captured_names, escaped_template, is_write_macro, pure_place, str_lit};
mod objects;
mod operators;
mod outline;
mod places;
mod uses;

/// An operand during lowering: unsuffixed literals wait for their type.
#[derive(Clone, PartialEq, Debug)]
enum LVal {
    Var(Var),
    Const(Const),
    Int(i128, Ty),
    Float(f64, Ty),
    /// A tuple: its components, each an operand of its own (a tuple is
    /// never one machine value; it reaches no operation, only patterns,
    /// `.0` reads, bindings and joins).
    Tuple(Vec<LVal>),
    /// A `&mut` to a value (`&mut i64`): the place it names, resolved while
    /// lowering. Reads and writes through it are reads and writes of that
    /// place; it is never a machine value.
    Ref(Box<RefTo>),
    /// An `Option` or `Result` holding a `&mut` to a value (what `get_mut`,
    /// `last_mut` and accessors built on them give): its tag, a `u32`, and
    /// per variant its payload (`None` for a variant without one).
    Sum {
        ty: Ty,
        tag: Box<LVal>,
        payloads: Vec<Option<LVal>>,
    },
}

/// The place a `&mut` to a value names.
#[derive(Clone, PartialEq, Debug)]
enum RefTo {
    /// A local (a binding in scope, by its slot), or a component of a tuple
    /// local: the slot, then the indices inward.
    Local(usize, Vec<usize>),
    /// Reached from the object `root` (a struct or a list) through
    /// `fields`, then, with `index`, the element of the list reached there.
    /// The fields are read again at each use, as a mutating method's
    /// receiver is, so the place is the object's own.
    Heap { root: LVal, fields: Vec<(String, Ty)>, index: Option<LVal>, ty: Ty },
    /// The value at `key` in the map `map` (what `get_mut` gives): read by
    /// `get`, written by `insert`; `opaque` for a map that is an opaque
    /// object (a hasher of its own), whose methods are residual calls.
    Entry { map: LVal, key: LVal, ty: Ty, opaque: bool },
}

impl LVal {
    /// The operands of `self`, composites flattened in order: what a join
    /// passes for it.
    fn flatten(&self, out: &mut Vec<LVal>) {
        match self {
            LVal::Tuple(items) => items.iter().for_each(|i| i.flatten(out)),
            LVal::Ref(r) => match &**r {
                RefTo::Local(..) => {}
                RefTo::Heap { root, index, .. } => {
                    root.flatten(out);
                    if let Some(i) = index {
                        i.flatten(out);
                    }
                }
                RefTo::Entry { map, key, .. } => {
                    map.flatten(out);
                    key.flatten(out);
                }
            },
            LVal::Sum { tag, payloads, .. } => {
                tag.flatten(out);
                payloads.iter().flatten().for_each(|p| p.flatten(out));
            }
            v => out.push(v.clone()),
        }
    }

    /// Whether `self` is never one machine value.
    fn is_composite(&self) -> bool {
        matches!(self, LVal::Tuple(_) | LVal::Ref(_) | LVal::Sum { .. })
    }

    /// Whether `self` and `other` have the same static parts (the places
    /// references name, the variants sums hold), so a join can take either.
    fn same_shape(&self, other: &LVal) -> bool {
        match (self, other) {
            (LVal::Tuple(a), LVal::Tuple(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same_shape(y)),
            (LVal::Ref(a), LVal::Ref(b)) => match (&**a, &**b) {
                (RefTo::Local(i, p), RefTo::Local(j, q)) => i == j && p == q,
                (
                    RefTo::Heap { root: r1, fields: f1, index: i1, .. },
                    RefTo::Heap { root: r2, fields: f2, index: i2, .. },
                ) => {
                    r1.same_shape(r2)
                        && f1.iter().map(|f| &f.0).eq(f2.iter().map(|f| &f.0))
                        && i1.is_some() == i2.is_some()
                }
                (RefTo::Entry { map: m1, key: k1, .. }, RefTo::Entry { map: m2, key: k2, .. }) => {
                    m1.same_shape(m2) && k1.same_shape(k2)
                }
                _ => false,
            },
            (LVal::Sum { payloads: a, .. }, LVal::Sum { payloads: b, .. }) => {
                a.len() == b.len()
                    && a.iter().zip(b).all(|(x, y)| match (x, y) {
                        (Some(x), Some(y)) => x.same_shape(y),
                        (None, None) => true,
                        _ => false,
                    })
            }
            (a, b) => !a.is_composite() && !b.is_composite(),
        }
    }
}

#[derive(Debug)]
struct LOp {
    result: Var,
    kind: OpKind,
    args: Vec<LVal>,
    span: Span,
    source: String,
}

#[derive(Debug)]
struct LLink {
    target: usize,
    args: Vec<LVal>,
}

#[derive(Debug)]
enum LExit {
    Goto(LLink),
    Branch(LVal, LLink, LLink),
    Return(LVal),
    Abort(String),
}

#[derive(Debug, Default)]
struct LBlock {
    inputargs: Vec<Var>,
    ops: Vec<LOp>,
    exit: Option<LExit>,
    /// For join blocks: how many environment slots the input arguments mirror.
    join_depth: Option<usize>,
    /// Whether the last input argument carries the value of an expression.
    has_result: bool,
    /// What each environment slot (and the result, last) is on entry: a
    /// variable among `inputargs`, or a tuple of them.
    shapes: Vec<LVal>,
    preds: usize,
    /// For the two sides of a branch: the bindings when the branch was taken.
    env_at_entry: Option<Vec<(String, LVal)>>,
    /// For the two sides of a branch: the fields known at the branch.
    known_at_entry: Vec<((Var, String, bool), LVal)>,
    /// For a join: the fields known on every path into it so far.
    known_in: Option<known::KnownIn>,
}

struct LoopCtx {
    label: Option<String>,
    header: usize,
    after: usize,
    /// `loop` can break with a value; `while` and `for` cannot.
    result_ty: Option<Ty>,
    /// A labeled block (`'a: { .. }`): only `break 'a` leaves it; an
    /// unlabeled `break` or `continue` goes past it, and nothing continues it.
    block: bool,
}

/// A place that can be assigned.
enum Place {
    Local(usize),
    /// A component of a tuple local: the local, then the indices inward.
    TupleItem(usize, Vec<usize>),
    Field(LVal, String, Ty),
    Item(LVal, LVal, Ty),
    /// What a `&mut` to a value names (`*r = x`).
    Ref(RefTo),
    /// The whole struct (of values) a pointer names: written field by field.
    Whole(LVal, String),
}

thread_local! {
    /// Off while `without_outlining` runs.
    static OUTLINING: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
    /// Set while `outlining_at` runs.
    static FORCED: std::cell::RefCell<Vec<outline::Forced>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` with the operations at `spans` outlined where they can stand
/// alone (see `outline`), though the analysis supports them: the
/// operations whose code the generating extension always declines, each
/// with why.
pub(crate) fn outlining_at<T>(spans: &[(Span, String)], f: impl FnOnce() -> T) -> T {
    /// Clears the spans however `f` ends.
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            FORCED.with(|x| x.borrow_mut().clear());
        }
    }
    FORCED.with(|x| {
        *x.borrow_mut() = spans
            .iter()
            .map(|(s, why)| outline::Forced { range: outline::range(*s), span: *s, why: why.clone() })
            .collect()
    });
    let _clear = Clear;
    f()
}

/// Runs `f` with outlining off (see `outline`): portals whose Rust the
/// analysis does not support leave their module to Rust.
pub(crate) fn without_outlining<T>(f: impl FnOnce() -> T) -> T {
    /// Turns outlining back on however `f` ends.
    struct On;
    impl Drop for On {
        fn drop(&mut self) {
            OUTLINING.with(|o| o.set(true));
        }
    }
    OUTLINING.with(|o| o.set(false));
    let _on = On;
    f()
}

/// Lowers one function. Errors go to `errors`; the graph is returned when the
/// function had none.
pub(crate) fn lower_fn(m: &ModuleDef<'_>, f: &FnDef<'_>, errors: &mut Vec<syn::Error>) -> Option<FlowGraph> {
    let mut errs = vec![];
    let start = outline::Outlining {
        forced: if OUTLINING.with(|o| o.get()) { FORCED.with(|x| x.borrow().clone()) } else { vec![] },
        ..Default::default()
    };
    let (mut g, mut how) = lower_fn_outlining(m, f, &mut errs, start);
    // A portal cannot be left to Rust: what fails in it is outlined. Each
    // lowering outlines where the last failed, with the types the last
    // learned for what it outlined (a later use tells a binding's).
    if has_merge_point(f.body) && OUTLINING.with(|o| o.get()) {
        // What compiled, while a lowering with more known may outline less.
        let mut best = None;
        for _ in 0..8 {
            let at: Vec<_> =
                errs.iter().flat_map(|e| e.clone().into_iter().map(|e| outline::range(e.span()))).collect();
            let found = std::mem::take(&mut how.found_runs);
            let unreturnable = std::mem::take(&mut how.found_unreturnable);
            let more = at.iter().any(|r| !how.at.contains(r))
                || found.iter().any(|r| !how.runs.contains(r))
                || unreturnable.iter().any(|r| !how.unreturnable.contains(r));
            for r in found {
                if !how.runs.contains(&r) {
                    how.runs.push(r);
                }
            }
            for r in unreturnable {
                if !how.unreturnable.contains(&r) {
                    how.unreturnable.push(r);
                }
            }
            let learned = std::mem::take(&mut how.learned);
            let grew = learned.iter().any(|(r, t)| how.known.get(r) != Some(t));
            // Assignments better outlined in place (`Lowering::in_place`).
            let forced = std::mem::take(&mut how.found_forced);
            let in_place = !forced.is_empty();
            how.forced.extend(forced);
            if errs.is_empty() {
                best = g.take();
                if !grew && !in_place {
                    break;
                }
            } else if !errs.iter().all(crate::is_unsupported) || !(more || grew || in_place) {
                break;
            }
            how.at.extend(at);
            how.known.extend(learned);
            errs = vec![];
            (g, how) = lower_fn_outlining(m, f, &mut errs, how);
        }
        if g.is_none() && best.is_some() {
            return best;
        }
    }
    errors.extend(errs);
    g
}

/// Lowers one function, outlining as `outlining` says (see `outline`);
/// returns it with what it learned.
fn lower_fn_outlining(
    m: &ModuleDef<'_>,
    f: &FnDef<'_>,
    errors: &mut Vec<syn::Error>,
    outlining: outline::Outlining,
) -> (Option<FlowGraph>, outline::Outlining) {
    // The body as lowered: its macros expanded, so that what they do with
    // a local counts (`unmoved`).
    let (body, expansion_errors) = crate::resolve::resolve_body(m, f.body);
    let mut l = Lowering {
        m,
        f,
        u: Unifier::default(),
        vars: vec![],
        blocks: vec![LBlock::default()],
        cur: Some(0),
        env: vec![],
        loops: vec![],
        errors: vec![],
        span: f.span,
        inlines: vec![],
        ascribed_loop: None,
        frozen_names: places::frozen_names(f),
        unmoved: uses::unmoved_names(&body),
        outlining,
        pending: vec![],
        known: Default::default(),
        str_views: HashMap::new(),
        element_borrows: HashSet::new(),
    };
    for p in &f.params {
        if matches!(p.ty, Ty::Tuple(_)) {
            l.error(p.span, "a tuple parameter of a portal is not supported by jitgen yet; pass the components, or a struct of the module");
        }
        let v = l.new_var(Some(p.name.clone()), p.ty.clone(), p.span);
        l.blocks[0].inputargs.push(v);
        l.env.push((p.name.clone(), LVal::Var(v)));
    }
    l.errors.extend(expansion_errors);
    let v = l.block(&body);
    if l.cur.is_some() {
        let t = l.ty_of(&v);
        let ret = f.ret.clone();
        let span = f.body.stmts.last().map_or(f.span, |s| s.span());
        l.unify(&ret, &t, span);
        let v = l.returned(v, span);
        l.set_exit(LExit::Return(v));
    }
    let had_errors = !l.errors.is_empty();
    let (graph, mut errs, outlining) = l.finish();
    if let Some(graph) = &graph {
        errs.extend(objects::opaque_objects_by_value(graph, f.span));
        errs.extend(objects::promoted_objects(graph));
    }
    let had_errors = had_errors || !errs.is_empty();
    errors.extend(errs);
    (if had_errors { None } else { graph }, outlining)
}

struct Lowering<'m, 'a> {
    m: &'m ModuleDef<'a>,
    f: &'m FnDef<'a>,
    u: Unifier,
    vars: Vec<VarInfo>,
    blocks: Vec<LBlock>,
    cur: Option<usize>,
    env: Vec<(String, LVal)>,
    loops: Vec<LoopCtx>,
    errors: Vec<syn::Error>,
    /// The span of the expression being lowered (for join results).
    span: Span,
    /// The functions being inlined, innermost last, with the join their
    /// `return` goes to.
    inlines: Vec<(String, usize)>,
    /// The type a `let` ascribes to the labeled `loop` it binds, for that
    /// loop's result (an inlined method's: `let m: R = 'l: loop { .. }`).
    ascribed_loop: Option<Ty>,
    /// Names that only ever stand for data behind a shared reference
    /// parameter of the function (see `frozen_names`).
    frozen_names: HashSet<String>,
    /// The `get`, `first` and `last` calls of a list lowered so far, by
    /// address: each gives a borrowed element, which the analysis models as
    /// the element itself (see `uses::binds_borrow`).
    element_borrows: HashSet<*const syn::ExprMethodCall>,
    /// Names the body only ever uses in place (read through, borrowed,
    /// assigned), never moves: what such a local owned dies where it is
    /// assigned again (see `places::write_place`).
    unmoved: HashSet<String>,
    /// Where an earlier lowering failed on Rust the analysis does not
    /// support, and what it learned (see `outline`).
    outlining: outline::Outlining,
    /// The statements outlined so far.
    pending: Vec<outline::Pending>,
    /// Fields a promotion made known (see `known`).
    known: known::KnownFields,
    /// Names bound by `let`: whether every such binding is a `String`'s
    /// `as_str()` (see `Outlined::views`).
    str_views: HashMap<String, bool>,
}

/// Whether calls of `f` are inlined where they are made, and `f` has no
/// graph of its own: it takes or returns a `&mut` to a value (a place the
/// front end resolves in the caller) or a tuple (never one machine value).
pub(crate) fn inline_only(f: &FnDef<'_>) -> bool {
    let place_or_tuple = |t: &Ty| t.has_mut_ref_to_value() || matches!(t, Ty::Tuple(_));
    !f.opaque && (place_or_tuple(&f.ret) || f.params.iter().any(|p| place_or_tuple(&p.ty))) && !has_merge_point(f.body)
}

/// What to write instead of a string operation jitgen does not know, for
/// every refusal of one.
pub const STRING_ADVICE: &str = "of strings, jitgen knows `String` built by `String::new`, `String::from`, `format!`, `to_string`, `push`, `push_str`, `+=`, `write!`, and read by `len`, `is_empty`, `clear`, `as_str` and formatting; string literals as `&'static str` values, passed and stored (an error's message) but not looked inside; take program text as bytes (`&[u8]`)";

/// What to write instead of an operator on strings.
const STRING_OPERATOR_ADVICE: &str = "append with `push_str` or `+=`; compare strings in a #[jit_opaque] function, or keep what they name as an enum of the module";

fn span_of(t: &dyn ToTokens) -> Span {
    syn::spanned::Spanned::span(&t.to_token_stream())
}

/// Source text of a syntax node, for messages and listings.
fn source_of(t: &dyn ToTokens) -> String {
    let s = t.to_token_stream().to_string();
    s.replace(" ! (", "!(")
        .replace(" ! [", "![")
        .replace(" ;", ";")
        .replace(" . ", ".")
        .replace(" [", "[")
        .replace("[ ", "[")
        .replace(" ]", "]")
        .replace(" (", "(")
        .replace("( ", "(")
        .replace(" )", ")")
        .replace(" ,", ",")
        .replace(" :: ", "::")
        .replace("& ", "&")
        .replace("! ", "!")
}

/// The span of a `hint!` nested in a macro's tokens, if there is one.
fn hint_inside(tokens: proc_macro2::TokenStream) -> Option<Span> {
    let toks: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
    for (i, t) in toks.iter().enumerate() {
        match t {
            proc_macro2::TokenTree::Ident(id) if id == "hint" => {
                if let Some(proc_macro2::TokenTree::Punct(p)) = toks.get(i + 1) {
                    if p.as_char() == '!' {
                        return Some(id.span());
                    }
                }
            }
            proc_macro2::TokenTree::Group(g) => {
                if let Some(s) = hint_inside(g.stream()) {
                    return Some(s);
                }
            }
            _ => {}
        }
    }
    None
}

const FLAGS: &str = "`concrete`, `promote`, `deepfreeze`, `variable` (or `hint!(global_merge_point)` alone)";

impl<'m, 'a> Lowering<'m, 'a> {
    // ----- infrastructure -------------------------------------------------

    fn error(&mut self, span: Span, msg: impl std::fmt::Display) {
        self.errors.push(syn::Error::new(span, msg));
    }

    /// A value standing for an expression that failed to lower.
    fn poison(&mut self, span: Span) -> LVal {
        LVal::Var(self.new_var(None, Ty::Error, span))
    }

    /// `[x; N]`: Rust's own (outlined, an array compiled code holds by
    /// address), typed `[T; N]` where `N` is a literal or a constant of
    /// the module, so that what indexes it compiles.
    fn repeat(&mut self, r: &syn::ExprRepeat) -> LVal {
        let x = self.expr(&r.expr);
        let n = self.m.array_len(&r.len);
        let v = self.unsupported(r, "an array repeat expression", "use `vec![x; n]`");
        if let (Some(n), LVal::Var(var)) = (n, &v) {
            let t = Ty::Array(Box::new(self.ty_of(&x)), n);
            self.vars[var.0 as usize].ty = t;
        }
        v
    }

    fn never(&mut self, span: Span) -> LVal {
        LVal::Var(self.new_var(None, Ty::Never, span))
    }

    fn unsupported(&mut self, e: &dyn ToTokens, what: &str, instead: &str) -> LVal {
        let span = span_of(e);
        let msg = if instead.is_empty() {
            format!("{what} is not supported in a #[jit_interpreter] function")
        } else {
            format!("{what} is not supported in a #[jit_interpreter] function; {instead}")
        };
        self.error(span, msg);
        self.poison(span)
    }

    fn new_var(&mut self, name: Option<String>, ty: Ty, span: Span) -> Var {
        self.vars.push(VarInfo { name, ty, span });
        Var(self.vars.len() as u32 - 1)
    }

    fn ty_of(&self, v: &LVal) -> Ty {
        match v {
            LVal::Var(v) => self.vars[v.0 as usize].ty.clone(),
            LVal::Const(c) => c.ty(),
            LVal::Int(_, t) | LVal::Float(_, t) => t.clone(),
            LVal::Tuple(items) => Ty::Tuple(items.iter().map(|i| self.ty_of(i)).collect()),
            LVal::Ref(r) => Ty::Ref { mutable: true, to: Box::new(self.ref_ty(r)) },
            LVal::Sum { ty, .. } => ty.clone(),
        }
    }

    /// The type of the value a reference names.
    fn ref_ty(&self, r: &RefTo) -> Ty {
        match r {
            RefTo::Local(i, path) => {
                let mut t = self.ty_of(&self.env[*i].1);
                for &k in path {
                    if let Ty::Tuple(ts) = t {
                        t = ts[k].clone();
                    }
                }
                t
            }
            RefTo::Heap { ty, .. } | RefTo::Entry { ty, .. } => ty.clone(),
        }
    }

    /// Join parameters shaped like `v` (one variable per tuple component),
    /// appended to `vars`.
    fn fresh_shape(&mut self, name: Option<String>, v: &LVal, vars: &mut Vec<Var>) -> LVal {
        match v {
            LVal::Tuple(items) => LVal::Tuple(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| self.fresh_shape(name.as_ref().map(|n| format!("{n}.{i}")), item, vars))
                    .collect(),
            ),
            LVal::Ref(r) => LVal::Ref(Box::new(match &**r {
                RefTo::Local(..) => (**r).clone(),
                RefTo::Heap { root, fields, index, ty } => {
                    let n = name.as_ref().map(|n| format!("&{n}"));
                    RefTo::Heap {
                        root: self.fresh_shape(n.clone(), root, vars),
                        fields: fields.clone(),
                        index: index.as_ref().map(|i| self.fresh_shape(n, i, vars)),
                        ty: ty.clone(),
                    }
                }
                RefTo::Entry { map, key, ty, opaque } => {
                    let n = name.as_ref().map(|n| format!("&{n}"));
                    RefTo::Entry {
                        map: self.fresh_shape(n.clone(), map, vars),
                        key: self.fresh_shape(n, key, vars),
                        ty: ty.clone(),
                        opaque: *opaque,
                    }
                }
            })),
            LVal::Sum { ty, tag, payloads } => {
                let n = name.as_ref().map(|n| format!("&{n}"));
                let tag = Box::new(self.fresh_shape(n.clone(), tag, vars));
                let payloads =
                    payloads.iter().map(|p| p.as_ref().map(|p| self.fresh_shape(n.clone(), p, vars))).collect();
                LVal::Sum { ty: ty.clone(), tag, payloads }
            }
            v => {
                let span = match v {
                    LVal::Var(v) => self.vars[v.0 as usize].span,
                    _ => Span::call_site(),
                };
                let t = self.ty_of(v);
                let var = self.new_var(name, t, span);
                vars.push(var);
                LVal::Var(var)
            }
        }
    }

    /// The value a function returns: one machine value. A tuple of values
    /// is made one, as an enum of one variant is (`MakeEnum` of type
    /// `Ty::Tuple`: its components are the payload), which the caller takes
    /// apart again.
    fn returned(&mut self, v: LVal, span: Span) -> LVal {
        match v {
            // A tuple inside a tuple is made one first: a payload of the
            // outer one, as an enum's payload may be an enum.
            LVal::Tuple(items) if items.iter().all(|i| matches!(i, LVal::Tuple(_)) || !i.is_composite()) => {
                let items: Vec<LVal> = items
                    .into_iter()
                    .map(|i| if matches!(i, LVal::Tuple(_)) { self.returned(i, span) } else { i })
                    .collect();
                let ty = Ty::Tuple(items.iter().map(|i| self.ty_of(i)).collect());
                let src = quote::quote_spanned!(span=> (..));
                self.emit(
                    OpKind::MakeEnum { enum_name: String::new(), variant: String::new(), index: 0 },
                    items,
                    ty,
                    &src,
                )
            }
            LVal::Tuple(_) => {
                self.error(
                    span,
                    "returning a tuple that holds a `&mut` from a portal (a function with a global merge point) is not supported; return the values",
                );
                LVal::Const(Const::Unit)
            }
            LVal::Ref(_) | LVal::Sum { .. } => {
                self.error(span, "returning a `&mut` to a value from the portal is not supported; return the value");
                LVal::Const(Const::Unit)
            }
            v => v,
        }
    }

    /// Ends the current block returning `v`: from the function, or, inside
    /// an inlined call, to the code after the call.
    fn return_with(&mut self, v: LVal, span: Span) {
        match self.inlines.last() {
            Some(&(_, join)) => self.jump(join, Some(v)),
            None => {
                let v = self.returned(v, span);
                self.set_exit(LExit::Return(v));
            }
        }
    }

    /// Refuses composites (tuples, `&mut` references to values and sums of
    /// them) among the operands of an operation.
    fn no_composites(&mut self, args: Vec<LVal>, span: Span) -> Vec<LVal> {
        if args.iter().any(|a| matches!(a, LVal::Tuple(_))) {
            self.error(
                span,
                "a tuple is supported in a #[jit_interpreter] function only where it is destructured \
                 (`let (a, b) = ...`, `match (x, y) { ... }`, `.0`); to pass, return or store it, use a struct of the module",
            );
        } else if args.iter().any(LVal::is_composite) {
            self.error(
                span,
                "a `&mut` to a value is supported where it is used: `*r`, `*r = x`, `*r += x`, `?`, `unwrap`, \
                 `ok_or`, `match` and `if let`, and as an argument of a function of the module; \
                 to keep or store it, copy the value (`let v = *r;`)",
            );
        } else {
            return args;
        }
        args.into_iter().map(|a| if a.is_composite() { LVal::Const(Const::Unit) } else { a }).collect()
    }

    /// The type of `v`, resolved at the top level.
    fn shallow_ty(&self, v: &LVal) -> Ty {
        self.u.shallow(&self.ty_of(v))
    }

    fn unify(&mut self, expected: &Ty, found: &Ty, span: Span) {
        if let Err(msg) = self.u.unify(expected, found) {
            self.error(span, msg);
        }
    }

    fn cur_block(&mut self) -> usize {
        match self.cur {
            Some(b) => b,
            None => {
                // Code after a `return`/`break`: lowered into an unreachable block.
                self.blocks.push(LBlock::default());
                let b = self.blocks.len() - 1;
                self.cur = Some(b);
                b
            }
        }
    }

    fn emit(&mut self, kind: OpKind, args: Vec<LVal>, ty: Ty, src: &dyn ToTokens) -> LVal {
        let span = span_of(src);
        let args = self.no_composites(args, span);
        // A field a promotion made known (see `known`).
        if let Some(v) = self.known.read(&kind, &args) {
            return v;
        }
        let stored_value =
            matches!(kind, OpKind::SetField(_)) && args.get(1).is_some_and(|v| self.finished_value(&self.ty_of(v)));
        let result = self.new_var(None, ty, span);
        self.known.emitted(&kind, &args, result, stored_value);
        let b = self.cur_block();
        self.blocks[b].ops.push(LOp { result, kind, args, span, source: source_of(src) });
        LVal::Var(result)
    }

    fn lookup(&self, name: &str) -> Option<usize> {
        self.env.iter().rposition(|(n, _)| n == name)
    }

    /// Binds a name; a fresh temporary takes the name, a constant gets a copy.
    fn bind(&mut self, name: String, v: LVal, src: &dyn ToTokens) {
        let v = self.named(name.clone(), v, src);
        self.env.push((name, v));
    }

    fn named(&mut self, name: String, v: LVal, src: &dyn ToTokens) -> LVal {
        match v {
            LVal::Tuple(items) => LVal::Tuple(
                items.into_iter().enumerate().map(|(i, item)| self.named(format!("{name}.{i}"), item, src)).collect(),
            ),
            LVal::Ref(_) | LVal::Sum { .. } => v,
            // A temporary of a desugaring (`__jitgen_t`, a macro's
            // `__macro1_x`) bound by the user's `let` is the user's from then
            // on: generated code names it so.
            LVal::Var(var) if self.vars[var.0 as usize].name.as_deref().is_none_or(is_temporary) => {
                self.vars[var.0 as usize].name = Some(name);
                v
            }
            LVal::Var(_) => v,
            c => {
                let t = self.ty_of(&c);
                let r = self.emit(OpKind::SameAs, vec![c], t, src);
                if let LVal::Var(var) = r {
                    self.vars[var.0 as usize].name = Some(name);
                }
                r
            }
        }
    }

    /// Reads through references to scalars and enums: the value an operator uses.
    fn rvalue(&mut self, v: LVal, src: &dyn ToTokens) -> LVal {
        let mut v = match v {
            LVal::Ref(r) => self.read_place(&Place::Ref(*r), src),
            v => v,
        };
        loop {
            match self.shallow_ty(&v) {
                Ty::Ref { to, .. } | Ty::Boxed(to) => {
                    let inner = self.u.shallow(&to);
                    if inner.is_pointer() || matches!(inner, Ty::Infer(_)) {
                        return v;
                    }
                    v = self.emit(OpKind::Load, vec![v], inner, src);
                }
                _ => return v,
            }
        }
    }

    /// Whether `t` is already known to be a value type (`Ty::is_value`).
    fn finished_value(&self, t: &Ty) -> bool {
        match self.u.shallow(t) {
            Ty::Option(x) => self.finished_value(&x),
            Ty::Result(x, e) => self.finished_value(&x) && self.finished_value(&e),
            Ty::Infer(_) => self.u.is_intlike(t),
            t => t.is_value(),
        }
    }

    /// The type behind references and boxes, resolved.
    fn deref_ty(&self, t: &Ty) -> Ty {
        match self.u.shallow(t) {
            Ty::Ref { to, .. } | Ty::Boxed(to) => self.deref_ty(&to),
            t => t,
        }
    }

    // ----- statements and blocks -------------------------------------------

    fn block(&mut self, b: &syn::Block) -> LVal {
        let depth = self.env.len();
        let mut value = LVal::Const(Const::Unit);
        let mut skip = 0;
        for (i, s) in b.stmts.iter().enumerate() {
            let last = i + 1 == b.stmts.len();
            value = LVal::Const(Const::Unit);
            if skip > 0 {
                skip -= 1;
                continue;
            }
            if let Some((run, n)) = self.run_from(&b.stmts, i) {
                // Statements outlined together (`outline`'s runs).
                self.outlined_or_lowered(&run, true);
                skip = n - 1;
                continue;
            }
            match s {
                syn::Stmt::Local(local) => self.local(local),
                syn::Stmt::Expr(e, semi) => {
                    let v = self.outlined_or_lowered(e, !(last && semi.is_none()));
                    if let (Expr::Macro(m), Some(_)) = (e, semi) {
                        self.promote_statement(&m.mac, &v);
                    }
                    if last && semi.is_none() {
                        value = v;
                    } else if semi.is_some() && matches!(self.u.shallow(&self.ty_of(&v)), Ty::Infer(_)) {
                        // A statement whose value nobody uses (a call of a
                        // function outside the module, for its effect): unit.
                        let t = self.ty_of(&v);
                        self.unify(&Ty::Unit, &t, e.span());
                    }
                }
                syn::Stmt::Macro(sm) => {
                    let v = self.macro_expr(&sm.mac);
                    if last && sm.semi_token.is_none() {
                        value = v;
                    } else {
                        self.promote_statement(&sm.mac, &v);
                    }
                }
                syn::Stmt::Item(it) => {
                    self.unsupported(it, "an item inside a function body", "move it to the module level");
                }
            }
        }
        if self.cur.is_some() {
            self.drop_scope_objects(depth, b);
        }
        self.env.truncate(depth);
        if self.cur.is_none() {
            return self.never(b.span());
        }
        value
    }

    fn local(&mut self, local: &syn::Local) {
        let Some(init) = &local.init else {
            self.unsupported(
                local,
                "`let` without an initializer",
                "give the binding its first value where it is declared",
            );
            // Its names stay known (poisoned): no second error at each use.
            struct Names(Vec<(String, Span)>);
            impl<'ast> syn::visit::Visit<'ast> for Names {
                fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
                    self.0.push((p.ident.to_string(), p.ident.span()));
                    syn::visit::visit_pat_ident(self, p);
                }
            }
            let mut names = Names(vec![]);
            syn::visit::Visit::visit_pat(&mut names, &local.pat);
            for (name, span) in names.0 {
                let v = self.poison(span);
                self.env.push((name, v));
            }
            return;
        };
        let (pat, ascribed) = match &local.pat {
            Pat::Type(pt) => (&*pt.pat, Some(&pt.ty)),
            p => (p, None),
        };
        // A `Copy` struct bound by value is the binding's own (see
        // `value_of`); one made here (a literal) needs no copy, nor one an
        // immutable binding reads out of data behind a shared reference
        // parameter (an instruction of the program): neither can change
        // while the binding lives, and every use by value copies it.
        if let (Some(t), Expr::Loop(syn::ExprLoop { label: Some(_), .. })) = (ascribed, &*init.expr) {
            self.ascribed_loop = self.m.ty(t, self.f.self_ty.as_deref()).ok();
        }
        let v = self.outlined_or_lowered(&init.expr, false);
        self.ascribed_loop = None;
        let immutable = matches!(&local.pat, Pat::Ident(pi) if pi.mutability.is_none() && pi.by_ref.is_none());
        let v = if matches!(&*init.expr, Expr::Struct(_)) || (immutable && self.frozen_place(&init.expr)) {
            v
        } else {
            self.copied(v, &init.expr)
        };
        if let Some(t) = ascribed {
            match self.m.ty(t, self.f.self_ty.as_deref()) {
                Ok(t) => {
                    let have = self.ty_of(&v);
                    self.unify(&t, &have, init.expr.span());
                }
                Err(e) => self.errors.push(e),
            }
        }
        if let Some((_, d)) = &init.diverge {
            return self.let_else(v, pat, &init.expr, d);
        }
        match pat {
            Pat::Ident(pi) if pi.subpat.is_none() => {
                let name = pi.ident.to_string();
                // `let name = s.as_str();`: a `&str` to Rust code it is
                // handed to, where no other `let` binds the name.
                let view = matches!(&*init.expr, Expr::MethodCall(m) if m.method == "as_str" && m.args.is_empty());
                self.str_views.entry(name.clone()).and_modify(|v| *v &= view).or_insert(view);
                self.bind(name, v, local);
            }
            // `let _ = out.write_all(..);`: a result dropped, of a type
            // nothing else tells (an opaque object's method's), is unit
            // to compiled code, as a statement's is.
            Pat::Wild(_) => {
                if matches!(self.u.shallow(&self.ty_of(&v)), Ty::Infer(_)) {
                    let t = self.ty_of(&v);
                    self.unify(&Ty::Unit, &t, local.span());
                }
            }
            p => {
                // Rust checked that the pattern is irrefutable: no tests.
                let mut binds = vec![];
                self.pattern(v, p, None, &mut binds);
                for (name, val) in binds {
                    self.bind(name, val, p);
                }
            }
        }
    }

    /// `let PAT = v else { diverge };`: where the pattern matches, its
    /// bindings continue (through a join carrying them); elsewhere the
    /// `else` block runs, and Rust checked that it diverges.
    fn let_else(&mut self, v: LVal, pat: &Pat, init: &Expr, diverge: &Expr) {
        let depth = self.env.len();
        let v = self.rvalue(v, init);
        let fail = self.new_join(depth, None);
        let mut binds = vec![];
        self.pattern(v, pat, Some(fail), &mut binds);
        for (name, val) in binds {
            self.bind(name, val, pat);
        }
        let bound = self.env.clone();
        let ok = self.new_join(bound.len(), None);
        self.jump(ok, None);
        self.env.truncate(depth);
        self.enter(fail);
        if self.cur.is_some() {
            let _ = self.expr(diverge);
            if self.cur.is_some() {
                self.error(diverge.span(), "the `else` of `let ... else` must not continue");
                self.cur = None;
            }
        }
        self.env = bound;
        let _ = self.enter(ok);
    }

    // ----- expressions ----------------------------------------------------------

    fn expr(&mut self, e: &Expr) -> LVal {
        self.span = e.span();
        match e {
            Expr::Lit(l) => self.lit(&l.lit),
            Expr::Paren(p) => self.expr(&p.expr),
            Expr::Group(g) => self.expr(&g.expr),
            Expr::Path(p) => self.path_expr(p),
            Expr::Binary(b) => self.binary(b),
            Expr::Unary(u) => self.unary(u),
            Expr::Cast(c) => {
                let v = self.expr(&c.expr);
                let v = self.rvalue(v, &c.expr);
                match self.m.ty(&c.ty, self.f.self_ty.as_deref()) {
                    Ok(t) if t.is_scalar() => self.emit(OpKind::Cast, vec![v], t, e),
                    Ok(_) => self.unsupported(
                        &c.ty,
                        "casting to this type",
                        "cast between integers, floats, bool and char only",
                    ),
                    Err(err) => {
                        self.errors.push(err);
                        self.poison(c.span())
                    }
                }
            }
            Expr::Assign(a) => {
                if self.assign_struct_fields(a, e) {
                    return LVal::Const(Const::Unit);
                }
                let v = match self.clone_assignment(a, e) {
                    Some(Ok(())) => return LVal::Const(Const::Unit),
                    Some(Err(v)) => v,
                    None => self.expr(&a.right),
                };
                let v = if matches!(&*a.right, Expr::Struct(_)) { v } else { self.copied(v, &a.right) };
                if let Some(p) = self.place(&a.left) {
                    self.write_place(p, v, e);
                }
                LVal::Const(Const::Unit)
            }
            Expr::Block(b) => match &b.label {
                Some(l) => self.labeled_block(l, &b.block),
                None => self.block(&b.block),
            },
            Expr::If(i) => self.if_expr(i),
            Expr::While(w) => self.while_expr(w),
            Expr::Loop(l) => self.loop_expr(l),
            Expr::ForLoop(f) => self.for_expr(f),
            Expr::Match(m) => self.match_expr(m),
            Expr::Break(b) => self.break_expr(b),
            Expr::Continue(c) => {
                let label = c.label.as_ref().map(|l| l.ident.to_string());
                match self.find_loop(label.as_deref(), c.span()) {
                    Some(i) => {
                        let h = self.loops[i].header;
                        self.jump(h, None);
                    }
                    None => return self.poison(c.span()),
                }
                self.never(c.span())
            }
            Expr::Return(r) => {
                let v = match &r.expr {
                    Some(x) => self.value_of(x),
                    None => LVal::Const(Const::Unit),
                };
                if self.cur.is_some() {
                    let (ret, t) = (self.f.ret.clone(), self.ty_of(&v));
                    // A mismatch is the value's (`Err("text".into())` where
                    // the result holds a `Box<dyn Error>`): at its span, the
                    // value is a candidate for outlining as Rust's own code.
                    let at = r.expr.as_ref().map_or(r.span(), |x| x.span());
                    self.unify(&ret, &t, at);
                    self.return_with(v, r.span());
                }
                self.never(r.span())
            }
            Expr::Field(f) => {
                let base = self.expr(&f.base);
                if let LVal::Tuple(items) = &base {
                    return match &f.member {
                        syn::Member::Unnamed(k) if (k.index as usize) < items.len() => items[k.index as usize].clone(),
                        m => {
                            let n = items.len();
                            self.error(m.span(), format!("this tuple has {n} components (`.0` to `.{}`)", n - 1));
                            self.poison(m.span())
                        }
                    };
                }
                let base = self.through_shared(base, &f.base);
                self.get_field(base, &f.member, e)
            }
            Expr::Index(i) if self.const_expr_of(&i.expr).is_some() => {
                self.const_table_read(&i.expr, &i.index, false, e.span())
            }
            Expr::Index(i) => {
                let base = self.expr(&i.expr);
                self.get_item(base, &i.index, e)
            }
            Expr::MethodCall(mc) => self.method_call(mc),
            Expr::Call(c) => self.call(c),
            Expr::Struct(s) => self.struct_lit(s),
            Expr::Reference(r) => {
                if r.mutability.is_some() && self.ref_syntax(&r.expr) {
                    // `&mut place`: the place, resolved now. Of a value it
                    // stays a place; of an object it is the object's address.
                    let Some(p) = self.mut_ref(&r.expr) else { return self.poison(r.span()) };
                    let t = self.ref_ty(&p);
                    if self.finished_value(&t) {
                        return LVal::Ref(Box::new(p));
                    }
                    let v = self.read_place(&Place::Ref(p), e);
                    return self.emit(OpKind::SameAs, vec![v], Ty::Ref { mutable: true, to: Box::new(t) }, e);
                }
                let v = match &*r.expr {
                    Expr::Unary(u) if r.mutability.is_none() && matches!(u.op, syn::UnOp::Deref(_)) => {
                        // `&*rc` of an `Rc<S>` or `Arc<S>`: the `&S` it points to.
                        let v = self.expr(&u.expr);
                        if matches!(self.deref_ty(&self.ty_of(&v)), Ty::Foreign(_)) {
                            let through = self.through_shared(v.clone(), &u.expr);
                            if matches!(self.ty_of(&through), Ty::Ref { .. }) {
                                return through;
                            }
                        }
                        self.deref_lowered(v, u)
                    }
                    e => self.expr(e),
                };
                let t = self.ty_of(&v);
                if r.mutability.is_none() && self.finished_value(&t) {
                    // `&value`: the value itself (see `ModuleDef::ty`).
                    return v;
                }
                if r.mutability.is_some() && self.finished_value(&t) {
                    return self.unsupported(
                        r,
                        "`&mut` of this expression",
                        "take `&mut` of a local, a field or an element of a Vec",
                    );
                }
                self.emit(OpKind::SameAs, vec![v], Ty::Ref { mutable: r.mutability.is_some(), to: Box::new(t) }, e)
            }
            Expr::Try(t) => self.try_expr(t),
            Expr::Macro(m) => self.macro_expr(&m.mac),
            Expr::Tuple(t) if t.elems.is_empty() => LVal::Const(Const::Unit),
            Expr::Tuple(t) => LVal::Tuple(t.elems.iter().map(|x| self.expr(x)).collect()),
            Expr::Closure(c) => self.unsupported(c, "a closure", "write a function of the module"),
            Expr::Let(l) => {
                self.unsupported(l, "`let` in this position (a let chain)", "use nested `if let` or `match`")
            }
            Expr::Array(a) => self.unsupported(a, "an array literal", "use `vec![...]`"),
            Expr::Range(r) => self.unsupported(r, "a range outside `for`", "index single elements"),
            Expr::Unsafe(u) => self.unsupported(u, "`unsafe`", ""),
            Expr::Async(a) => self.unsupported(a, "`async`", ""),
            Expr::Await(a) => self.unsupported(a, "`.await`", ""),
            Expr::Repeat(r) => self.repeat(r),
            other => self.unsupported(other, "this expression", ""),
        }
    }

    fn finish(mut self) -> (Option<FlowGraph>, Vec<syn::Error>, outline::Outlining) {
        let mut errors = std::mem::take(&mut self.errors);
        // What was outlined, typed (or its errors, which say more than its
        // value's missing type).
        let outlined = self.outlined_fns();
        if let Err(e) = &outlined {
            errors.extend(e.iter().cloned());
        }
        // Types: every variable that is used must have one.
        let mut vars = std::mem::take(&mut self.vars);
        let mut reported = HashSet::new();
        for (i, vi) in vars.iter_mut().enumerate() {
            match self.u.finish(&vi.ty) {
                Some(t) => vi.ty = t,
                None => {
                    if errors.is_empty()
                        && self.var_is_defined(Var(i as u32))
                        && reported.insert(format!("{:?}", vi.span))
                    {
                        let what = vi.name.as_ref().map_or("this value".to_string(), |n| format!("`{n}`"));
                        errors.push(syn::Error::new(
                            vi.span,
                            format!("cannot infer the type of {what}; add a type ascription (`let x: T = ...`)"),
                        ));
                    }
                    vi.ty = Ty::Error;
                }
            }
        }
        let outlining = std::mem::take(&mut self.outlining);
        if !errors.is_empty() {
            return (None, errors, outlining);
        }
        let u = &self.u;
        let conv = |v: &LVal| -> Value {
            match v {
                LVal::Var(v) => Value::Var(*v),
                LVal::Const(c) => Value::Const(c.clone()),
                LVal::Int(x, t) => match u.finish(t) {
                    Some(Ty::Int(it)) => Value::Const(Const::Int(*x, it)),
                    Some(t @ (Ty::F64 | Ty::F32)) => Value::Const(Const::Float(*x as f64, t)),
                    _ => Value::Const(Const::Int(*x, IntTy::I32)),
                },
                LVal::Float(x, t) => Value::Const(Const::Float(*x, u.finish(t).unwrap_or(Ty::F64))),
                // Refused where they would reach an operation (`no_composites`).
                LVal::Tuple(_) | LVal::Ref(_) | LVal::Sum { .. } => Value::Const(Const::Unit),
            }
        };
        let mut blocks: Vec<Block> = vec![];
        let mut links: Vec<Vec<(usize, Vec<Value>)>> = vec![];
        let mut exits = vec![];
        for b in &self.blocks {
            let ops = b
                .ops
                .iter()
                .map(|o| Op {
                    result: o.result,
                    kind: o.kind.clone(),
                    args: o.args.iter().map(conv).collect(),
                    span: o.span,
                    source: o.source.clone(),
                })
                .collect();
            blocks.push(Block { inputargs: b.inputargs.clone(), ops, exit: Exit::Abort(String::new()) });
            let (ls, ex) = match &b.exit {
                Some(LExit::Goto(l)) => (vec![(l.target, l.args.iter().map(conv).collect())], XExit::Goto),
                Some(LExit::Branch(c, t, f)) => (
                    vec![(t.target, t.args.iter().map(conv).collect()), (f.target, f.args.iter().map(conv).collect())],
                    XExit::Branch(conv(c)),
                ),
                Some(LExit::Return(v)) => (vec![], XExit::Return(conv(v))),
                Some(LExit::Abort(m)) => (vec![], XExit::Abort(m.clone())),
                None => (vec![], XExit::Abort("unreachable".into())),
            };
            links.push(ls);
            exits.push(ex);
        }
        let mut g = simplify_and_build(self.f, vars, blocks, links, exits);
        g.outlined = outlined.unwrap_or_default();
        (Some(g), vec![], outlining)
    }

    fn var_is_defined(&self, v: Var) -> bool {
        self.blocks
            .iter()
            .enumerate()
            .filter(|(i, b)| *i == 0 || b.preds > 0)
            .any(|(_, b)| b.inputargs.contains(&v) || b.ops.iter().any(|o| o.result == v))
    }
}

enum XExit {
    Goto,
    Branch(Value),
    Return(Value),
    Abort(String),
}

fn subst(map: &HashMap<Var, Value>, v: &Value) -> Value {
    let mut v = v.clone();
    while let Value::Var(x) = &v {
        match map.get(x) {
            Some(n) => v = n.clone(),
            None => break,
        }
    }
    v
}

/// Removes unreachable blocks, trivial joins and dead input arguments, and
/// builds the petgraph-backed [`FlowGraph`].
/// Whether an operation can neither fail nor act: dropped when its result is unused.
fn without_effect(k: &OpKind) -> bool {
    match k {
        OpKind::GetField(_) | OpKind::Len | OpKind::SameAs | OpKind::EnumTag | OpKind::Cast => true,
        OpKind::Bin(b) => {
            b.is_comparison() || matches!(b, BinOp::WrappingAdd | BinOp::WrappingSub | BinOp::WrappingMul)
        }
        _ => false,
    }
}

/// Whether a name is a temporary of a desugaring (`__jitgen_t`) or of a
/// macro's expansion (`__macro1_x`), never a name the user wrote.
fn is_temporary(name: &str) -> bool {
    name.starts_with("__jitgen_") || name.starts_with("__macro")
}

fn simplify_and_build(
    f: &FnDef<'_>,
    mut vars: Vec<VarInfo>,
    mut blocks: Vec<Block>,
    mut links: Vec<Vec<(usize, Vec<Value>)>>,
    exits: Vec<XExit>,
) -> FlowGraph {
    let n = blocks.len();
    // Reachability from the start block.
    let mut reachable = vec![false; n];
    let mut stack = vec![0];
    while let Some(b) = stack.pop() {
        if std::mem::replace(&mut reachable[b], true) {
            continue;
        }
        stack.extend(links[b].iter().map(|(t, _)| *t));
    }
    let mut map: HashMap<Var, Value> = HashMap::new();
    loop {
        let mut changed = false;
        // Trivial joins: an input argument receiving one value (or itself) everywhere.
        for b in 1..n {
            if !reachable[b] {
                continue;
            }
            let mut k = 0;
            while k < blocks[b].inputargs.len() {
                let me = blocks[b].inputargs[k];
                let mut incoming: Option<Value> = None;
                let mut trivial = true;
                for p in (0..n).filter(|&p| reachable[p]) {
                    for (t, args) in &links[p] {
                        if *t != b {
                            continue;
                        }
                        let a = subst(&map, &args[k]);
                        if a == Value::Var(me) {
                            continue;
                        }
                        match &incoming {
                            None => incoming = Some(a),
                            Some(i) if *i == a => {}
                            Some(_) => trivial = false,
                        }
                    }
                }
                if trivial {
                    if let Some(val) = incoming {
                        // A desugaring's temporary standing for a user's
                        // binding takes the binding's name.
                        if let Value::Var(x) = &val {
                            let user = vars[me.0 as usize].name.clone().filter(|n| !is_temporary(n));
                            if user.is_some() && vars[x.0 as usize].name.as_deref().is_some_and(is_temporary) {
                                vars[x.0 as usize].name = user;
                            }
                        }
                        map.insert(me, val);
                        blocks[b].inputargs.remove(k);
                        for l in links.iter_mut() {
                            for (t, args) in l.iter_mut() {
                                if *t == b {
                                    args.remove(k);
                                }
                            }
                        }
                        changed = true;
                        continue;
                    }
                }
                k += 1;
            }
        }
        // Forwarding blocks (no operations, a plain `goto`): predecessors jump
        // straight to the target, unless the block's input arguments are used
        // beyond its own link.
        for b in 1..n {
            if !reachable[b] || !blocks[b].ops.is_empty() || !matches!(exits[b], XExit::Goto) {
                continue;
            }
            let (c, fwd) = links[b][0].clone();
            if c == b {
                continue;
            }
            let inputs = blocks[b].inputargs.clone();
            let used_elsewhere = (0..n).filter(|&p| reachable[p] && p != b).any(|p| {
                let in_value = |v: &Value| matches!(subst(&map, v), Value::Var(x) if inputs.contains(&x));
                blocks[p].ops.iter().any(|o| o.args.iter().any(in_value))
                    || links[p].iter().any(|(_, args)| args.iter().any(in_value))
                    || matches!(&exits[p], XExit::Branch(v) | XExit::Return(v) if in_value(v))
            });
            if used_elsewhere {
                continue;
            }
            for p in (0..n).filter(|&p| reachable[p] && p != b) {
                for (t, args) in links[p].iter_mut() {
                    if *t != b {
                        continue;
                    }
                    let new_args = fwd
                        .iter()
                        .map(|a| match subst(&map, a) {
                            Value::Var(x) if inputs.contains(&x) => {
                                args[inputs.iter().position(|i| *i == x).unwrap()].clone()
                            }
                            other => other,
                        })
                        .collect();
                    *t = c;
                    *args = new_args;
                }
            }
            reachable[b] = false;
            changed = true;
        }
        // Dead input arguments: never used, not even passed on to a used one.
        let mut used: HashSet<Var> = HashSet::new();
        let note = |v: &Value, used: &mut HashSet<Var>| {
            if let Value::Var(x) = subst(&map, v) {
                used.insert(x);
            }
        };
        for b in (0..n).filter(|&b| reachable[b]) {
            for op in &blocks[b].ops {
                op.args.iter().for_each(|a| note(a, &mut used));
            }
            match &exits[b] {
                XExit::Branch(c) | XExit::Return(c) => note(c, &mut used),
                _ => {}
            }
        }
        loop {
            let before = used.len();
            for p in (0..n).filter(|&p| reachable[p]) {
                for (t, args) in &links[p] {
                    for (k, a) in args.iter().enumerate() {
                        if used.contains(&blocks[*t].inputargs[k]) {
                            note(a, &mut used);
                        }
                    }
                }
            }
            if used.len() == before {
                break;
            }
        }
        for b in 1..n {
            let mut k = 0;
            while k < blocks[b].inputargs.len() {
                if used.contains(&blocks[b].inputargs[k]) {
                    k += 1;
                    continue;
                }
                blocks[b].inputargs.remove(k);
                for l in links.iter_mut() {
                    for (t, args) in l.iter_mut() {
                        if *t == b {
                            args.remove(k);
                        }
                    }
                }
                changed = true;
            }
        }
        // Dead reads: operations that cannot fail or act, whose result is unused
        // (the receivers a `&mut` accessor evaluates before naming its place).
        for b in (0..n).filter(|&b| reachable[b]) {
            let before = blocks[b].ops.len();
            blocks[b].ops.retain(|o| used.contains(&o.result) || !without_effect(&o.kind));
            changed |= blocks[b].ops.len() != before;
        }
        if !changed {
            break;
        }
    }
    build_graph(f, vars, blocks, links, exits, &reachable, &map)
}

/// The flow graph of the reachable blocks, with the substitution `map`
/// applied to every operand.
fn build_graph(
    f: &FnDef<'_>,
    vars: Vec<VarInfo>,
    mut blocks: Vec<Block>,
    mut links: Vec<Vec<(usize, Vec<Value>)>>,
    mut exits: Vec<XExit>,
    reachable: &[bool],
    map: &HashMap<Var, Value>,
) -> FlowGraph {
    let n = blocks.len();
    let mut graph: StableDiGraph<Block, Link> = StableDiGraph::new();
    let mut index: Vec<Option<NodeIndex>> = vec![None; n];
    for b in 0..n {
        if reachable[b] {
            let mut blk = Block {
                inputargs: blocks[b].inputargs.clone(),
                ops: std::mem::take(&mut blocks[b].ops),
                exit: Exit::Abort(String::new()),
            };
            for op in &mut blk.ops {
                for a in &mut op.args {
                    *a = subst(map, a);
                }
            }
            index[b] = Some(graph.add_node(blk));
        }
    }
    for b in 0..n {
        let Some(nb) = index[b] else { continue };
        let mut edges = vec![];
        for (t, args) in std::mem::take(&mut links[b]) {
            let args = args.iter().map(|a| subst(map, a)).collect();
            edges.push(graph.add_edge(nb, index[t].expect("reachable target"), Link { args }));
        }
        graph[nb].exit = match std::mem::replace(&mut exits[b], XExit::Goto) {
            XExit::Goto => Exit::Goto(edges[0]),
            XExit::Branch(c) => Exit::Branch { cond: subst(map, &c), if_true: edges[0], if_false: edges[1] },
            XExit::Return(v) => Exit::Return(subst(map, &v)),
            XExit::Abort(m) => Exit::Abort(m),
        };
    }
    FlowGraph {
        name: f.name.clone(),
        start: index[0].expect("start block"),
        graph,
        vars,
        ret_ty: f.ret.clone(),
        opaque: f.opaque,
        shared_params: f.params.iter().map(|p| p.shared).collect(),
        outlined: vec![],
    }
}

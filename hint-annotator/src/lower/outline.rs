//! Outlining: a statement of a portal that uses Rust the analysis does not
//! model becomes one residual call of Rust's own code, instead of leaving
//! the whole module to Rust.
//!
//! `lower_fn` lowers a portal once as it is. Where that fails only on Rust
//! the analysis does not support (`is_unsupported`), it lowers it again
//! with the failing spans known. Each candidate that holds one of them (a
//! `let`'s initializer, an expression statement, a `match` arm; where those
//! leave, an `if`'s or `while`'s condition, a scrutinee, the operand of
//! `?`, a value returned or passed) is lowered as usual, and where that
//! adds unsupported errors and the candidate can stand alone, the lowering
//! is rewound to before it and it is lowered as
//! `__jitgen_outlined_<fn>_<k>(x, y, ..)`: a call of a function outside the
//! module (a residual call whose result type comes from the context). The
//! graph records the function ([`Outlined`]), its parameters typed once
//! inference is done, and the macro writes it beside the portal: the
//! expression as written, its locals its parameters. Innermost candidates
//! are tried first, so only what fails is outlined. One that cannot stand
//! alone says why at its span. A candidate fails also where it makes a
//! value the last lowering could not type (a `&str` an opaque object's
//! method gives, formatted). Where one cannot stand alone because a local
//! it uses cannot be handed to it (an object the analysis does not model,
//! or one it moves), the statements of its block from that local's `let`
//! to it are tried together (`Outlining::runs`), up to the last statement
//! that names what they bind; so is a `let` whose outlined value no call
//! can give back (an iterator), with the statements that use it
//! (`Outlining::unreturnable`). An operation whose code the extension
//! always declines (`Outlining::forced`) makes the innermost statement
//! holding it a candidate too, outlined where it can stand alone; so does
//! an assignment to a local whose struct owns an object the analysis does
//! not model (`Lowering::in_place`): outlined, it is Rust's assignment in
//! place through the local's address, not an object made and one dropped.
//!
//! A value outlined has the type its statement had despite its errors, or
//! its form gives (a comparison's `bool`, `Iterator::position`'s
//! `Option<usize>` on a chain from `iter()`), or a later lowering learned
//! from its uses (`Outlining::known`), never an integer literal's default:
//! lowerings repeat while they fail in new places or learn types, and a
//! lowering that compiles is tried once more with what it learned, where
//! that lets an inner statement be outlined alone instead of the arm
//! around it.
//!
//! A candidate stands alone when its effects stay inside the call, and its
//! function would compile:
//! - no `return`, `?`, `break` or `continue` leaving it, no `hint!`, no
//!   `Self`, no macro but the standard library's (a macro of the module is
//!   expanded already), and no name that is neither bound nor an item;
//! - each local it uses is passed by value if it is a value (an integer,
//!   a `Copy` struct, an enum of values, a reference) that it does not
//!   assign, borrow `&mut`, or call a `&mut self` method on, except up to
//!   four scalars it changes (a scalar is changed also by a method that
//!   may take it by `&mut`: any but the standard library's that read,
//!   `is_by_value_scalar_method`): the call returns the first (`n = f(n,
//!   ..)`), and leaves the others in a thread-local stash, each read back
//!   by a call of its own (`m = f_1();`); where the statement also gives a
//!   value, the call returns it and leaves them all in the stash; an owned
//!   object (a `String`, a `Vec`, a map) is passed as a `&mut` to it, when
//!   it never moves it (it only calls methods on it, reads its elements,
//!   borrows or compares it), and named `(*x)` inside (by `&` where it
//!   only reads it: it may be a binding Rust holds by `&`); a binding
//!   read or written through (`*c`) must be held by reference;
//! - `self`, where it is not split, is a parameter like any other;
//! - what it gives is what a residual call can give: unit, a scalar, a
//!   `String`, a `Copy` struct of scalars, an enum of plain values (a value
//!   discarded with `;` is unit).
//!
//! An object handed to outlined Rust by `&mut` (a struct local holding a
//! `Vec` too) escapes: its fields are red from then on. Where that leaves a
//! hint unsatisfiable, `annotate_items_with` analyzes the module again
//! without outlining (`without_outlining`), and it is left to Rust as it
//! was before: outlining never makes an error of a module that interprets.

use std::collections::{HashMap, HashSet};

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{format_ident, quote, ToTokens};
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::visit_mut::VisitMut;
use syn::Expr;

use super::uses::Uses;
use super::{LVal, Lowering};
use crate::flowgraph::{OpKind, Outlined, Var};
use crate::types::{Ty, Unifier};

/// Macros of the standard library an outlined statement may use (none of
/// them leaves the statement).
const STD_MACROS: &[&str] = &[
    "format",
    "vec",
    "matches",
    "assert",
    "assert_eq",
    "assert_ne",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "panic",
    "unreachable",
    "todo",
    "unimplemented",
    "write",
    "writeln",
    "print",
    "println",
    "eprint",
    "eprintln",
    "concat",
    "stringify",
    "format_args",
    "line",
    "column",
    "file",
];

/// The most value locals one outlined statement may change.
const MAX_CHANGED: usize = 4;

/// How a statement that cannot be outlined says so.
const CANNOT: &str = "this statement cannot run as Rust on its own (outlined) either";

/// Where the lowering stood before a statement: what rewinding restores.
pub(super) struct Mark {
    vars: usize,
    blocks: usize,
    cur: Option<usize>,
    cur_ops: usize,
    env: Vec<(String, LVal)>,
    loops: usize,
    inlines: usize,
    errors: usize,
    u: Unifier,
    span: Span,
    pending: usize,
    known: Vec<((crate::flowgraph::Var, String, bool), LVal)>,
}

/// An outlined statement's call, its types not yet inferred.
pub(super) struct Pending {
    name: String,
    /// The errors of the statement as written: what is reported where it
    /// cannot be outlined after all.
    errors: Vec<syn::Error>,
    range: Range,
    span: Span,
    names: Vec<String>,
    args: Vec<LVal>,
    result: Var,
    body: TokenStream,
    /// The changed locals the call leaves in its stash, by parameter name.
    stashed: Vec<String>,
    /// The parameters that are values owning strings or `Rc`s, lent by
    /// `&` (the analysis holds them as values: see `Outlined::params`).
    lent: Vec<String>,
}

/// Where to outline, and what was learned outlining.
#[derive(Default)]
pub(crate) struct Outlining {
    /// Where an earlier lowering failed on Rust the analysis does not
    /// support: the statements holding these are tried.
    pub at: Vec<Range>,
    /// The types of outlined statements' values an earlier lowering
    /// inferred, by the statement's place.
    pub known: HashMap<Range, Ty>,
    /// What this lowering inferred so.
    pub learned: HashMap<Range, Ty>,
    /// Runs of statements to outline together: from where a local an
    /// outlined statement could not be handed (an object the analysis does
    /// not model, or one it moves) is bound, to the end of that statement.
    pub runs: Vec<Range>,
    /// Such runs this lowering found.
    pub found_runs: Vec<Range>,
    /// Outlined statements whose value an earlier lowering found no type
    /// for that a call can give back (an iterator): what holds one is
    /// outlined instead, and a `let` of one with the statements that use
    /// what it binds (see [`Lowering::run_from`]).
    pub unreturnable: Vec<Range>,
    /// Such statements this lowering found.
    pub found_unreturnable: Vec<Range>,
    /// Operations the generating extension declines always (see
    /// `outlining_at`): the innermost statement holding one is outlined
    /// where it can stand alone, and lowered as it is where not.
    pub forced: Vec<Forced>,
    /// Assignments this lowering found that are better outlined (see
    /// [`Lowering::in_place`]): forced in the next.
    pub found_forced: Vec<Forced>,
    /// While an outlined statement's call is lowered.
    pub calling: bool,
}

/// An operation to outline though the analysis supports it (see
/// `outlining_at`).
#[derive(Clone)]
pub(crate) struct Forced {
    pub range: Range,
    pub span: Span,
    /// Why its code declines.
    pub why: String,
}

/// How a local is passed to an outlined statement.
#[derive(Clone, Copy, PartialEq)]
enum Passed {
    ByValue,
    /// An object, by `&` or `&mut`, named `(*x)` inside.
    ByReference,
    /// A binding Rust holds by `&` itself: by `&`, named as it was.
    Borrowed,
}

/// A span as line and column range, to test containment.
pub(crate) type Range = ((usize, usize), (usize, usize));

pub(super) fn range(s: Span) -> Range {
    ((s.start().line, s.start().column), (s.end().line, s.end().column))
}

/// The range of all of `t`'s tokens (a span of several tokens is its
/// first's where spans cannot be joined, in a procedural macro).
fn tokens_range(t: TokenStream) -> Option<Range> {
    let mut out: Option<Range> = None;
    let mut add = |r: Range| {
        out = Some(match out {
            None => r,
            Some((a, b)) => (a.min(r.0), b.max(r.1)),
        })
    };
    for t in t {
        match t {
            TokenTree::Group(g) => {
                add(range(g.span_open()));
                add(range(g.span_close()));
                if let Some(r) = tokens_range(g.stream()) {
                    add(r);
                }
            }
            t => add(range(t.span())),
        }
    }
    out
}

/// Whether one of `t`'s tokens starts where `r` does and one ends where it
/// does: `t` holds the code at `r` itself (a range of all its tokens may
/// take in code it does not hold, where some are spanned elsewhere).
fn holds(t: TokenStream, r: Range) -> bool {
    fn visit(t: TokenStream, r: Range, found: &mut (bool, bool)) {
        for t in t {
            let s = match &t {
                TokenTree::Group(g) => {
                    visit(g.stream(), r, found);
                    g.span()
                }
                t => t.span(),
            };
            let at = range(s);
            found.0 |= at.0 == r.0;
            found.1 |= at.1 == r.1;
        }
    }
    let mut found = (false, false);
    visit(t, r, &mut found);
    found.0 && found.1
}

fn contains(outer: Range, inner: Range) -> bool {
    outer.0 <= inner.0 && inner.1 <= outer.1
}

impl Lowering<'_, '_> {
    /// An assignment `e` of a new value to the local `name`, whose struct
    /// owns an object the analysis does not model (an `Rc`): such a local
    /// is an object residual code made, and the assignment makes another
    /// (a residual call allocating it) and drops the old one. Outlined, it
    /// is Rust's own assignment, in place through the local's address
    /// (`*frame = frames.last().unwrap().clone()`): one call, no
    /// allocation. The next lowering forces it out where it can stand
    /// alone; where not, it is lowered as it is.
    pub(super) fn in_place(&mut self, e: &dyn ToTokens, name: &str) {
        if self.outlining.calling {
            return;
        }
        let Some(r) = tokens_range(e.to_token_stream()) else { return };
        let known = |f: &Forced| f.range == r;
        if self.outlining.forced.iter().any(known) || self.outlining.found_forced.iter().any(known) {
            return;
        }
        let why = format!(
            "assigning to `{}`, which owns an object the analysis does not model, in place",
            crate::flowgraph::as_written(name)
        );
        self.outlining.found_forced.push(Forced { range: r, span: super::span_of(e), why });
    }

    /// Lowers a statement's expression `e`, outlined where it fails on Rust
    /// the analysis does not support and can stand alone (see the module
    /// doc); `discard` where the statement drops its value.
    pub(super) fn outlined_or_lowered(&mut self, e: &Expr, discard: bool) -> LVal {
        let Some(here) = tokens_range(e.to_token_stream()) else { return self.expr(e) };
        let failed = self.outlining.at.iter().any(|r| contains(here, *r));
        let forced_here: Vec<Forced> = if self.outlining.forced.is_empty() {
            vec![]
        } else {
            let tokens = e.to_token_stream();
            let held = |f: &&Forced| contains(here, f.range) && holds(tokens.clone(), f.range);
            self.outlining.forced.iter().filter(held).cloned().collect()
        };
        if self.outlining.calling || !(failed || !forced_here.is_empty()) || leaves(e) || desugared(e) {
            return self.expr(e);
        }
        let mark = self.mark();
        let v = self.expr(e);
        let new = &self.errors[mark.errors..];
        // An operation the extension declines, that no statement inside
        // this one outlined: this one is outlined, if it can be.
        let forced: Vec<syn::Error> = if new.is_empty() {
            let outlined_inside = |r: Range| self.pending[mark.pending..].iter().any(|p| contains(p.range, r));
            forced_here.iter().filter(|f| !outlined_inside(f.range)).map(|f| syn::Error::new(f.span, &f.why)).collect()
        } else {
            vec![]
        };
        // A value the last lowering could not type fails only once the
        // lowering is done (what Rust gives it, a `&str` of an opaque
        // object's method, is nothing the analysis models): where it is
        // made here, this candidate holds it.
        let untyped = new.is_empty()
            && (self.untyped_since(mark.vars)
                || self.pending[mark.pending..].iter().any(|p| self.outlining.unreturnable.contains(&p.range)));
        if !untyped && forced.is_empty() && (!failed || new.is_empty() || !new.iter().all(crate::is_unsupported)) {
            return v;
        }
        // A loop's or an assignment's value is unit: it is dropped wherever
        // it stands (a `match` arm `1 => sum += ..`).
        let discard =
            discard || matches!(e, Expr::ForLoop(_) | Expr::While(_) | Expr::Assign(_)) || is_compound_assign(e);
        let (call, mut pending) = match self.outline(e, discard, &mark) {
            Ok(o) => o,
            Err(_) if !forced.is_empty() && !untyped => return v,
            Err(why) => {
                if let Some(def) = self.unhandable_binding(e, &mark) {
                    self.outlining.found_runs.push((range(def).0, here.1));
                }
                // A local of no known type, or a name not bound, is another
                // error's consequence.
                if !["of type `_`", "of type `{error}`", "not bound here"].iter().any(|c| why.contains(c)) {
                    self.error(e.span(), format!("{CANNOT}: {why}"));
                }
                return v;
            }
        };
        // Why it runs as Rust: its errors, the operations forced out, and
        // the reasons of what it holds that was outlined already.
        let inner = self.pending[mark.pending..].iter().flat_map(|p| p.errors.iter().cloned());
        pending.errors = self.errors[mark.errors..].iter().cloned().chain(forced).chain(inner).collect();
        // A type the statement as written had despite its errors (a
        // comparison's `bool`) is its value's.
        let known = self.known_ty(&self.ty_of(&v)).or_else(|| self.written_ty(e));
        // What statements outlined inside this one learned, for a lowering
        // that outlines them alone.
        for p in &self.pending[mark.pending..] {
            if let Some(t) = self.known_ty(&self.vars[p.result.0 as usize].ty) {
                self.outlining.learned.insert(p.range, t);
            }
        }
        self.rewind(&mark);
        // The call's arguments (spanned as the statement) are not
        // candidates themselves.
        let calling = std::mem::replace(&mut self.outlining.calling, true);
        let out = self.expr(&call);
        self.outlining.calling = calling;
        let op = self.cur.and_then(|c| {
            self.blocks[c].ops.iter().rev().find(|o| matches!(&o.kind, OpKind::CallOpaque(n) if *n == pending.name))
        });
        let fits = self.errors.len() == mark.errors
            && op.is_some_and(|o| o.args.len() == pending.names.len() && o.args.iter().all(|a| !a.is_composite()));
        if !fits {
            // It cannot be called so: the errors of the statement as written.
            self.rewind(&mark);
            return self.expr(e);
        }
        let op = op.expect("the call just lowered");
        let (args, result) = (op.args.clone(), op.result);
        let t = self.ty_of(&out);
        match self.outlining.known.get(&here).cloned().or(known) {
            _ if discard => self.unify(&Ty::Unit, &t, e.span()),
            Some(k) => self.unify(&k, &t, e.span()),
            None => {}
        }
        self.pending.push(Pending { args, result, range: here, span: e.span(), ..pending });
        out
    }

    /// Where a local `e` uses is bound, when `e` cannot be handed it: its
    /// type is nothing Rust code can be handed, or `e` moves it. The
    /// statements from that binding to `e` may stand alone together.
    fn unhandable_binding(&self, e: &Expr, mark: &Mark) -> Option<Span> {
        let mut uses = Uses::default();
        uses.visit_expr(e);
        uses.names.iter().find_map(|n| {
            let (_, v) = mark.env.iter().rev().find(|(m, _)| m == n)?;
            let LVal::Var(x) = v else { return None };
            let t = self.u.shallow(&self.ty_of(v));
            let refused = match self.passed(&t) {
                None => true,
                Some(Passed::ByReference) => uses.moved.contains(n),
                Some(Passed::ByValue | Passed::Borrowed) => false,
            };
            refused.then(|| self.vars[x.0 as usize].span)
        })
    }

    /// The statements of a block from `i` that a run (see
    /// [`Outlining::runs`]) holds, as one block to outline, and how many:
    /// none where no run starts in statement `i`, or where the run holds
    /// the block's value. A run goes on to the last statement that names
    /// what it binds.
    pub(super) fn run_from(&self, stmts: &[syn::Stmt], i: usize) -> Option<(Expr, usize)> {
        let at = tokens_range(stmts[i].to_token_stream())?;
        let n = match self.outlining.runs.iter().find(|r| contains(at, (r.0, r.0)) && r.1 > at.1) {
            Some(run) => stmts[i..]
                .iter()
                .take_while(|s| tokens_range(s.to_token_stream()).is_some_and(|r| r.0 <= run.1))
                .count(),
            None => match &stmts[i] {
                syn::Stmt::Local(syn::Local { init: Some(init), .. })
                    if tokens_range(init.expr.to_token_stream())
                        .is_some_and(|r| self.outlining.unreturnable.contains(&r)) =>
                {
                    1
                }
                _ => return None,
            },
        };
        let n = binding_run(stmts, i, n);
        let last = i + n == stmts.len() && matches!(stmts[i + n - 1], syn::Stmt::Expr(_, None));
        // A run that is the whole block is the block's own candidate.
        if n < 2 || last || (i == 0 && n == stmts.len()) {
            return None;
        }
        let span = stmts[i].span();
        let block = syn::Block { brace_token: syn::token::Brace(span), stmts: stmts[i..i + n].to_vec() };
        Some((Expr::Block(syn::ExprBlock { attrs: vec![], label: None, block }), n))
    }

    /// Whether a variable made since `vars` has no type yet and is where
    /// the last lowering failed.
    fn untyped_since(&self, vars: usize) -> bool {
        self.vars[vars..].iter().any(|vi| {
            let at = range(vi.span);
            self.u.finish(&vi.ty).is_none() && self.outlining.at.iter().any(|r| contains(*r, at))
        })
    }

    fn mark(&self) -> Mark {
        Mark {
            vars: self.vars.len(),
            blocks: self.blocks.len(),
            cur: self.cur,
            cur_ops: self.cur.map_or(0, |c| self.blocks[c].ops.len()),
            env: self.env.clone(),
            loops: self.loops.len(),
            inlines: self.inlines.len(),
            errors: self.errors.len(),
            u: self.u.clone(),
            span: self.span,
            pending: self.pending.len(),
            known: self.known.known.clone(),
        }
    }

    fn rewind(&mut self, m: &Mark) {
        self.vars.truncate(m.vars);
        self.blocks.truncate(m.blocks);
        self.cur = m.cur;
        if let Some(c) = m.cur {
            self.blocks[c].ops.truncate(m.cur_ops);
            self.blocks[c].exit = None;
        }
        self.env.clone_from(&m.env);
        self.loops.truncate(m.loops);
        self.inlines.truncate(m.inlines);
        self.errors.truncate(m.errors);
        self.u = m.u.clone();
        self.span = m.span;
        self.pending.truncate(m.pending);
        self.known.known.clone_from(&m.known);
        self.known.forget_from(m.vars);
    }

    /// The call standing for `e` and what the function it calls holds, if
    /// `e` can stand alone with the bindings of `mark`.
    fn outline(&self, e: &Expr, discard: bool, mark: &Mark) -> Result<(Expr, Pending), String> {
        let bound: HashSet<&str> = mark.env.iter().map(|(n, _)| n.as_str()).collect();
        let mut uses = Uses::default();
        uses.visit_expr(e);
        // A name neither bound here nor inside, nor an item of the module,
        // is another error's (a pattern that failed): Rust reports it.
        if let Some(n) = uses.names.iter().find(|n| {
            !bound.contains(n.as_str())
                && !uses.bound_inside.contains(*n)
                && !uses.callees.contains(*n)
                && n.starts_with(|c: char| c.is_lowercase() || c == '_')
                && !self.m.fns.contains_key(*n)
                && !self.m.consts.contains_key(*n)
        }) {
            return Err(format!("it uses `{}`, which is not bound here", crate::flowgraph::as_written(n)));
        }
        let mut names = vec![];
        let mut ways = vec![];
        // The value locals the statement changes: the call returns the
        // first, the others it leaves in a thread-local stash that calls
        // of one getter each read back (`Outlined::stash`).
        let mut changed: Vec<String> = vec![];
        let mut borrowed: Vec<String> = vec![];
        let mut taken: Vec<String> = vec![];
        let mut lent: Vec<String> = vec![];
        for n in uses.names.iter().filter(|n| bound.contains(n.as_str())) {
            let shown = if n == "self" { "self".to_string() } else { crate::flowgraph::as_written(n) };
            let Some((_, v)) = mark.env.iter().rev().find(|(m, _)| m == n) else { continue };
            if v.is_composite() {
                return Err(format!("it uses `{shown}`, a reference compiled code resolves while compiling"));
            }
            let t = self.u.shallow(&self.ty_of(v));
            let Some(mut passed) = self.passed(&t) else {
                return Err(format!(
                    "it uses `{shown}`, of type `{}`, which Rust code cannot be handed",
                    self.u.show(&t)
                ));
            };
            // A binding Rust holds by `&` (a pattern's, matched through a
            // reference: the statement reads through it, `*f`) that the
            // analysis holds as a value or an opaque object, only read.
            // A value is passed as one, and named `(&x)` inside.
            let read_through = uses.derefs.contains(n) && !uses.mutated.contains(n) && !matches!(t, Ty::Ref { .. });
            let borrowed_value = read_through && passed == Passed::ByValue && self.copy_value(&t);
            if read_through && matches!(t, Ty::Foreign(_)) {
                passed = Passed::Borrowed;
            }
            if borrowed_value {
                borrowed.push(n.clone());
            }
            match passed {
                Passed::ByValue if borrowed_value => {}
                // A binding Rust holds by reference (a pattern's, matched
                // through `&`) that the analysis holds as its value.
                Passed::ByValue if !matches!(t, Ty::Ref { .. }) && uses.derefs.contains(n) => {
                    return Err(format!("it reads or writes through `{shown}`"));
                }
                Passed::ByValue if matches!(t, Ty::Ref { .. }) && uses.reassigned.contains(n) => {
                    return Err(format!("it changes the reference `{shown}`"));
                }
                // A scalar a method is called on that may take it by `&mut`
                // (a trait's `fn bump(&mut self)` on `i64`) is changed too.
                Passed::ByValue
                    if !matches!(t, Ty::Ref { .. })
                        && (uses.mutated.contains(n)
                            || ((t.is_scalar() || self.u.is_intlike(&t)) && uses.may_change_by_method(n))) =>
                {
                    if !(t.is_scalar() || self.u.is_intlike(&t)) {
                        return Err(format!("it changes `{shown}`, which is not a scalar"));
                    }
                    if changed.len() == MAX_CHANGED {
                        return Err(format!("it changes more than {MAX_CHANGED} locals"));
                    }
                    changed.push(n.clone());
                }
                Passed::ByValue => {
                    // A method called on it must be the module's, and not
                    // change it.
                    if let Ty::Struct(ty) | Ty::Enum(ty) = &t {
                        for (_, m) in uses.receivers.iter().filter(|(r, _)| r == n) {
                            let f = self.m.fns.get(&format!("{ty}::{m}"));
                            let receiver = f.and_then(|f| f.params.first().filter(|p| p.name == "self"));
                            let shared_std = f.is_none() && SHARED_STD_METHODS.contains(&m.as_str());
                            if !shared_std && receiver.is_none_or(|r| matches!(r.ty, Ty::Ref { mutable: true, .. })) {
                                return Err(format!("it calls `{m}` on `{shown}`, which may change it"));
                            }
                        }
                    }
                }
                // A `String` or `Vec` moved at its one use (the error a `?`
                // converts): taken out of its place (`mem::take`), which
                // Rust's move leaves unread.
                Passed::ByReference
                    if uses.moved.contains(n)
                        && uses.occurrences.get(n) == Some(&1)
                        && !uses.macro_names.contains(n)
                        && matches!(self.u.shallow(&t), Ty::Str | Ty::Vec(_)) =>
                {
                    taken.push(n.clone());
                }
                Passed::ByReference if uses.moved.contains(n) => return Err(format!("it moves `{shown}`")),
                Passed::ByReference if matches!(t, Ty::Enum(_)) && self.owned_value(&t) => {
                    if !uses.only_read(n) {
                        return Err(format!("it changes `{shown}`, a value owning strings or `Rc`s"));
                    }
                    lent.push(n.clone());
                }
                Passed::ByReference | Passed::Borrowed => {}
            }
            names.push(n.clone());
            ways.push(passed);
        }
        let f: String = self.f.name.chars().map(|c| if c.is_alphanumeric() { c } else { '_' }).collect();
        let name = format!("__jitgen_outlined_{f}_{}", mark.pending);
        let mut body = e.clone();
        Rename {
            by_ref: names
                .iter()
                .zip(&ways)
                .filter(|(n, w)| **w == Passed::ByReference && !taken.contains(n))
                .map(|(n, _)| n.clone())
                .collect(),
            borrowed,
            taken: taken.clone(),
        }
        .visit_expr_mut(&mut body);
        let span = e.span();
        let changed_ids: Vec<proc_macro2::Ident> = changed.iter().map(|n| local_ident(n, span)).collect();
        // The call returns the first changed local, or the statement's value
        // where it gives one; the stash holds the other changed locals.
        let returned = if discard { changed_ids.first() } else { None };
        let stashed_ids = &changed_ids[usize::from(returned.is_some())..];
        let stash = (!stashed_ids.is_empty()).then(|| {
            let stash = format_ident!("{}", Outlined::stash_name(&name));
            quote!(#stash.with(|__s| __s.set(::core::option::Option::Some((#(#stashed_ids,)*))));)
        });
        let body = match returned {
            _ if changed_ids.is_empty() && discard => quote!({ let _ = { #body }; }),
            _ if changed_ids.is_empty() => body.to_token_stream(),
            Some(first) => quote!({ #(let mut #changed_ids = #changed_ids;)* let _ = { #body }; #stash #first }),
            None => quote!({
                #(let mut #changed_ids = #changed_ids;)*
                let __jitgen_value = { #body };
                #stash
                __jitgen_value
            }),
        };
        let callee = format_ident!("{}", name, span = span);
        let args = names.iter().zip(&ways).map(|(n, w)| {
            let id = param_ident(n, span);
            match w {
                Passed::ByValue => quote!(#id),
                Passed::ByReference | Passed::Borrowed if uses.only_read(n) && !taken.contains(n) => quote!(&#id),
                Passed::ByReference | Passed::Borrowed => quote!(&mut #id),
            }
        });
        let call = quote::quote_spanned!(span=> #callee(#(#args),*));
        let getters = (1..=stashed_ids.len()).map(|k| format_ident!("{}_{}", name, k, span = span));
        let call = match returned {
            _ if changed_ids.is_empty() => call,
            Some(first) => quote::quote_spanned!(span=> { #first = #call; #(#stashed_ids = #getters();)* }),
            None => quote::quote_spanned!(span=> {
                let __jitgen_value = #call;
                #(#stashed_ids = #getters();)*
                __jitgen_value
            }),
        };
        let call: Expr = syn::parse2(call).map_err(|e| e.to_string())?;
        let params = names.iter().map(|n| param_name(n)).collect();
        let stashed = changed.iter().skip(usize::from(returned.is_some())).map(|n| param_name(n)).collect();
        Ok((
            call,
            Pending {
                name,
                names: params,
                args: vec![],
                result: Var(0),
                body,
                range: ((0, 0), (0, 0)),
                span,
                errors: vec![],
                stashed,
                lent,
            },
        ))
    }

    /// `t` resolved, where inference knows all of it: no variable left, not
    /// even an integer literal's (whose default, `i32`, Rust may not take).
    fn known_ty(&self, t: &Ty) -> Option<Ty> {
        fn known(u: &Unifier, t: &Ty) -> bool {
            match u.shallow(t) {
                Ty::Infer(_) => false,
                Ty::Ref { to, .. }
                | Ty::Boxed(to)
                | Ty::Vec(to)
                | Ty::Slice(to)
                | Ty::Array(to, _)
                | Ty::Option(to) => known(u, &to),
                Ty::Map(a, b) | Ty::Result(a, b) => known(u, &a) && known(u, &b),
                Ty::Tuple(ts) => ts.iter().all(|t| known(u, t)),
                _ => true,
            }
        }
        known(&self.u, t).then(|| self.u.finish(t)).flatten().filter(|t| !has_unnameable(t))
    }

    /// The type an expression has by its form alone: a comparison's or a
    /// logical operator's `bool`, a cast's target, `format!`'s `String`,
    /// `matches!`'s `bool`, `u16::from_le_bytes(..)`'s `u16`.
    fn written_ty(&self, e: &Expr) -> Option<Ty> {
        use syn::BinOp::*;
        match e {
            Expr::Paren(p) => self.written_ty(&p.expr),
            Expr::Binary(b) if matches!(b.op, Eq(_) | Ne(_) | Lt(_) | Le(_) | Gt(_) | Ge(_) | And(_) | Or(_)) => {
                Some(Ty::Bool)
            }
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Not(_)) => self.written_ty(&u.expr).filter(|t| *t == Ty::Bool),
            Expr::Cast(c) => self.m.ty(&c.ty, self.f.self_ty.as_deref()).ok().filter(|t| t.is_scalar()),
            // What `Iterator`'s own methods give, on a chain that starts
            // at an iterator of the standard library's.
            Expr::MethodCall(mc) if iterator_chain(&mc.receiver) => match mc.method.to_string().as_str() {
                "position" | "rposition" => Some(Ty::Option(Box::new(Ty::Int(crate::types::IntTy::Usize)))),
                "count" => Some(Ty::Int(crate::types::IntTy::Usize)),
                "any" | "all" => Some(Ty::Bool),
                _ => None,
            },
            // A number's constructor called by its path gives that number.
            Expr::Call(c) => match &*c.func {
                Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 2 => {
                    let f = p.path.segments[1].ident.to_string();
                    let makes = ["from_le_bytes", "from_be_bytes", "from_ne_bytes", "from_bits"].contains(&f.as_str());
                    makes.then(|| super::operators::number_ty(&p.path.segments[0].ident.to_string())).flatten()
                }
                _ => None,
            },
            Expr::Macro(m) if m.mac.path.is_ident("format") => Some(Ty::Str),
            Expr::Macro(m) if m.mac.path.is_ident("matches") => Some(Ty::Bool),
            _ => None,
        }
    }

    /// How a local of type `t` is passed, if it can be.
    fn passed(&self, t: &Ty) -> Option<Passed> {
        let copy = |t: &Ty| self.copy_value(t);
        match t {
            Ty::Ref { .. } => Some(Passed::ByValue),
            // An integer literal's type, which later uses tell.
            t if self.u.is_intlike(t) => Some(Passed::ByValue),
            // An object the analysis does not model (a `fn` pointer of
            // the module's): by reference too, what Rust does with it its
            // own.
            Ty::Str | Ty::Vec(_) | Ty::Map(..) | Ty::Foreign(_) => Some(Passed::ByReference),
            t if copy(t) => Some(Passed::ByValue),
            // A struct of the module that is not a plain copy (it holds a
            // `Vec`): an object, by reference as those above.
            Ty::Struct(n) if self.m.structs.contains_key(n) => Some(Passed::ByReference),
            // A value owning strings or `Rc`s (`Value::Str(Rc<str>)`): by
            // reference, a view of its words.
            t if self.owned_value(t) => Some(Passed::ByReference),
            _ => None,
        }
    }

    /// Whether values of `t` are plain copies: scalars, `Copy` structs,
    /// enums, options and results of those.
    pub(super) fn copy_value(&self, t: &Ty) -> bool {
        match self.u.shallow(t) {
            t if t.is_scalar() => true,
            Ty::Struct(n) => {
                self.m.structs.get(&n).is_some_and(|s| s.copy && s.fields.values().all(|f| self.copy_value(f)))
            }
            Ty::Enum(n) => self.m.enums.get(&n).is_some_and(|d| {
                d.variants.iter().all(|v| {
                    v.fields
                        .iter()
                        .all(|(_, f)| !matches!(f, Ty::Enum(x) if *x == n) && (self.copy_value(f) || is_text_ref(f)))
                })
            }),
            Ty::Option(x) => self.copy_value(&x),
            Ty::Result(x, y) => self.copy_value(&x) && self.copy_value(&y),
            _ => false,
        }
    }

    /// Whether an outlined statement's value of type `t` can be handed to
    /// compiled code, as a residual call's result is: unit, a scalar, a
    /// `String` (which compiled code then owns), a `Copy` struct of scalars,
    /// an enum, `Option` or `Result` of plain values. Nothing that holds a reference, or an
    /// object whose drop compiled code would not know to run.
    fn returnable(&self, t: &Ty) -> bool {
        match t {
            Ty::Unit | Ty::Str => true,
            // A `Vec` of scalars (a program's text collected, `chars()`):
            // a real one compiled code owns, as a `String`.
            Ty::Vec(e) | Ty::Array(e, _) => self.u.shallow(e).is_scalar(),
            // A `Copy` struct of scalars, word by word.
            Ty::Struct(n) => {
                self.copy_value(t) && self.m.structs.get(n).is_some_and(|d| d.fields.values().all(Ty::is_scalar))
            }
            t => self.returnable_part(t),
        }
    }

    /// A part of an `Option` or `Result` an outlined statement gives: a
    /// plain copy with no struct in it, a `String`, a struct of scalars
    /// and `String`s (an error with its message), or an object the analysis
    /// does not model that owns what it holds (a `Box<dyn Error>`), which
    /// compiled code then owns as it owns a `String`.
    pub(super) fn returnable_part(&self, t: &Ty) -> bool {
        match self.u.shallow(t) {
            Ty::Unit | Ty::Str => true,
            Ty::Foreign(text) => crate::types::owned_opaque(&text),
            Ty::Struct(n) => self.m.structs.get(&n).is_some_and(|d| {
                d.lifetimes == 0
                    && d.fields.values().any(|f| *f == Ty::Str)
                    && d.fields.values().all(|f| *f == Ty::Str || f.is_scalar())
            }),
            Ty::Option(x) => self.returnable_part(&x),
            Ty::Result(x, y) => self.returnable_part(&x) && self.returnable_part(&y),
            t @ Ty::Enum(_) if !self.copy_value(&t) => self.owned_value(&t),
            t => self.copy_value(&t),
        }
    }

    /// The functions outlined, typed (once inference is done); `Err` names
    /// a call whose parameter or result has no type a signature can name.
    pub(super) fn outlined_fns(&mut self) -> Result<Vec<Outlined>, Vec<syn::Error>> {
        for p in &self.pending {
            if let Some(t) = self.known_ty(&self.vars[p.result.0 as usize].ty) {
                self.outlining.learned.insert(p.range, t);
            }
        }
        // An integer nothing outside the statement typed has the type Rust
        // infers inside it, which the analysis does not know: no default.
        let resolved = |t: &Ty| self.known_ty(t);
        let mut out = vec![];
        let mut errors = vec![];
        let mut unreturnable = vec![];
        for p in &self.pending {
            let lend = |n: &String, t: Ty| match p.lent.contains(n) {
                true => Ty::Ref { mutable: false, to: Box::new(t) },
                false => t,
            };
            let params: Option<Vec<(String, Ty)>> = p
                .names
                .iter()
                .zip(&p.args)
                .map(|(n, a)| Some((n.clone(), lend(n, resolved(&self.ty_of(a))?))))
                .collect();
            let ret = resolved(&self.vars[p.result.0 as usize].ty);
            match (params, ret) {
                (Some(params), Some(ret)) if self.returnable(&ret) => {
                    let stash = p
                        .stashed
                        .iter()
                        .map(|n| params.iter().find(|(m, _)| m == n).map(|(_, t)| t.clone()).expect("a parameter"))
                        .collect();
                    let reasons = p
                        .errors
                        .iter()
                        .flat_map(|e| e.clone().into_iter())
                        .filter(|e| !e.to_string().starts_with(CANNOT))
                        .map(|e| {
                            // What it was, without the advice for compiled code.
                            let m = e.to_string();
                            let what = m.split(" is not supported").next().unwrap_or(&m).to_string();
                            syn::Error::new(e.span(), format!("runs as Rust, one residual call (outlined): {what}"))
                        })
                        .collect();
                    let views = params
                        .iter()
                        .filter(|(n, t)| {
                            self.str_views.get(n) == Some(&true)
                                && matches!(t, Ty::Ref { mutable: false, to } if **to == Ty::Str)
                        })
                        .map(|(n, _)| n.clone())
                        .collect();
                    let body = p.body.clone();
                    out.push(Outlined { name: p.name.clone(), params, views, ret, body, reasons, stash });
                }
                (Some(_), Some(ret)) => {
                    unreturnable.push(p.range);
                    errors.extend(p.errors.iter().cloned());
                    errors.push(syn::Error::new(
                        p.span,
                        format!("this Rust, left as written in a portal, gives a `{ret}`, which compiled code cannot take from it: a scalar, a `String`, an enum, `Option` or `Result` of plain values can be"),
                    ));
                }
                (_, ret) => {
                    if ret.is_none() {
                        unreturnable.push(p.range);
                    }
                    errors.extend(p.errors.iter().cloned())
                }
            }
        }
        self.outlining.found_unreturnable.extend(unreturnable);
        if errors.is_empty() {
            Ok(out)
        } else {
            Err(errors)
        }
    }
}

/// Methods of the standard library's traits that take `&self`
/// (`Display`'s `to_string`, `Clone`, the comparisons): called on a value
/// passed to outlined Rust, they cannot change it.
const SHARED_STD_METHODS: &[&str] =
    &["to_string", "clone", "to_owned", "eq", "ne", "lt", "le", "gt", "ge", "cmp", "partial_cmp", "fmt", "hash"];

/// Whether `f`, an enum's payload, is `&str` (an error's message): two
/// words that copy.
fn is_text_ref(f: &Ty) -> bool {
    matches!(f, Ty::Ref { mutable: false, to } if **to == Ty::Text)
}

/// Whether `e` is an iterator of the standard library's, or adapters of
/// one: a chain of methods through `iter()`, `chars()`, `keys()` and kin.
fn iterator_chain(e: &Expr) -> bool {
    match e {
        Expr::MethodCall(mc) => {
            let m = mc.method.to_string();
            matches!(
                m.as_str(),
                "iter"
                    | "iter_mut"
                    | "into_iter"
                    | "chars"
                    | "bytes"
                    | "char_indices"
                    | "keys"
                    | "values"
                    | "lines"
                    | "split_whitespace"
            ) || iterator_chain(&mc.receiver)
        }
        Expr::Paren(p) => iterator_chain(&p.expr),
        _ => false,
    }
}

fn has_unnameable(t: &Ty) -> bool {
    match t {
        Ty::Infer(_) | Ty::Error | Ty::Never | Ty::Param(_) | Ty::Tuple(_) => true,
        Ty::Ref { to, .. } | Ty::Boxed(to) | Ty::Vec(to) | Ty::Slice(to) | Ty::Array(to, _) | Ty::Option(to) => {
            has_unnameable(to)
        }
        Ty::Map(a, b) | Ty::Result(a, b) => has_unnameable(a) || has_unnameable(b),
        _ => false,
    }
}

/// The parameter standing for the local `n` (`self` cannot be one).
fn param_name(n: &str) -> String {
    if n == "self" {
        "__jitgen_self".to_string()
    } else {
        n.to_string()
    }
}

fn param_ident(n: &str, span: Span) -> TokenStream {
    if n == "self" {
        quote::quote_spanned!(span=> self)
    } else {
        local_ident(n, span).to_token_stream()
    }
}

/// The identifier of a local as its name is printed (`r#type` is raw).
fn local_ident(n: &str, span: Span) -> proc_macro2::Ident {
    match n.strip_prefix("r#") {
        Some(raw) => proc_macro2::Ident::new_raw(raw, span),
        None => proc_macro2::Ident::new(n, span),
    }
}

/// How many statements from `i` a run of `n` grows to: it takes in each
/// later statement that names what the run binds.
fn binding_run(stmts: &[syn::Stmt], i: usize, mut n: usize) -> usize {
    loop {
        let mut bound = Uses::default();
        for s in &stmts[i..i + n] {
            if let syn::Stmt::Local(l) = s {
                bound.visit_pat(&l.pat);
            }
        }
        let uses = |s: &syn::Stmt| {
            let mut u = Uses::default();
            u.visit_stmt(s);
            bound.bound_inside.iter().any(|b| u.names.contains(b))
        };
        match stmts[i + n..].iter().rposition(uses) {
            Some(k) => n += k + 1,
            None => return n,
        }
    }
}

/// Whether `e` cannot stand alone: it leaves itself (`return`, `?`, a
/// `break` or `continue` of a loop outside it), holds a hint, names `Self`,
/// or uses a macro that is not the standard library's.
fn leaves(e: &Expr) -> bool {
    struct Leaves {
        found: bool,
        loops: usize,
        labels: Vec<String>,
    }
    impl<'a> Visit<'a> for Leaves {
        fn visit_expr_return(&mut self, _: &'a syn::ExprReturn) {
            self.found = true;
        }
        fn visit_expr_try(&mut self, _: &'a syn::ExprTry) {
            self.found = true;
        }
        fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
        fn visit_expr_async(&mut self, _: &'a syn::ExprAsync) {}
        fn visit_expr_await(&mut self, _: &'a syn::ExprAwait) {
            self.found = true;
        }
        fn visit_expr_break(&mut self, b: &'a syn::ExprBreak) {
            match &b.label {
                Some(l) => self.found |= !self.labels.contains(&l.ident.to_string()),
                None => self.found |= self.loops == 0,
            }
            syn::visit::visit_expr_break(self, b);
        }
        fn visit_expr_continue(&mut self, c: &'a syn::ExprContinue) {
            match &c.label {
                Some(l) => self.found |= !self.labels.contains(&l.ident.to_string()),
                None => self.found |= self.loops == 0,
            }
        }
        fn visit_label(&mut self, l: &'a syn::Label) {
            self.labels.push(l.name.ident.to_string());
        }
        fn visit_expr_loop(&mut self, l: &'a syn::ExprLoop) {
            self.loops += 1;
            syn::visit::visit_expr_loop(self, l);
            self.loops -= 1;
        }
        fn visit_expr_while(&mut self, l: &'a syn::ExprWhile) {
            self.loops += 1;
            syn::visit::visit_expr_while(self, l);
            self.loops -= 1;
        }
        fn visit_expr_for_loop(&mut self, l: &'a syn::ExprForLoop) {
            self.loops += 1;
            syn::visit::visit_expr_for_loop(self, l);
            self.loops -= 1;
        }
        fn visit_macro(&mut self, m: &'a syn::Macro) {
            let std = m.path.get_ident().is_some_and(|i| STD_MACROS.contains(&i.to_string().as_str()));
            self.found |= !std || names_self_type(m.tokens.clone());
        }
        fn visit_path(&mut self, p: &'a syn::Path) {
            self.found |= p.segments.iter().any(|s| s.ident == "Self");
            syn::visit::visit_path(self, p);
        }
        fn visit_item(&mut self, _: &'a syn::Item) {
            self.found = true;
        }
    }
    let mut l = Leaves { found: false, loops: 0, labels: vec![] };
    l.visit_expr(e);
    l.found
}

/// Whether `e` is `x op= y`.
fn is_compound_assign(e: &Expr) -> bool {
    matches!(e, Expr::Binary(b) if crate::is_compound_assign_op(&b.op))
}

/// Whether `e` is the index loop lowering makes of a `for` over a
/// sequence, whose Rust only holds for slices: the `for` as written is
/// outlined instead.
fn desugared(e: &Expr) -> bool {
    fn has(t: TokenStream) -> bool {
        t.into_iter().any(|t| match t {
            TokenTree::Ident(i) => i.to_string().starts_with("__for_"),
            TokenTree::Group(g) => has(g.stream()),
            _ => false,
        })
    }
    has(e.to_token_stream())
}

fn names_self_type(t: TokenStream) -> bool {
    t.into_iter().any(|t| match t {
        TokenTree::Ident(i) => i == "Self",
        TokenTree::Group(g) => names_self_type(g.stream()),
        _ => false,
    })
}

/// Renames in an outlined statement: `self` to its parameter, and each
/// local passed by reference to `(*x)`.
struct Rename {
    /// Objects passed by reference: `(*x)`.
    by_ref: Vec<String>,
    /// Values Rust holds by `&`, passed as values: `(&x)`.
    borrowed: Vec<String>,
    /// Objects passed by `&mut` and moved at their one use:
    /// `::std::mem::take(x)`.
    taken: Vec<String>,
}

impl Rename {
    fn tokens(&self, t: TokenStream) -> TokenStream {
        t.into_iter()
            .map(|t| match t {
                TokenTree::Ident(i) if i == "self" => {
                    TokenTree::Ident(proc_macro2::Ident::new("__jitgen_self", i.span()))
                }
                TokenTree::Group(g) => {
                    let mut n = proc_macro2::Group::new(g.delimiter(), self.tokens(g.stream()));
                    n.set_span(g.span());
                    TokenTree::Group(n)
                }
                t => t,
            })
            .collect()
    }
}

impl VisitMut for Rename {
    fn visit_field_value_mut(&mut self, f: &mut syn::FieldValue) {
        // A shorthand field (`Class { name }`) whose local is renamed
        // names its field and the new expression.
        if f.colon_token.is_none() {
            f.colon_token = Some(Default::default());
        }
        syn::visit_mut::visit_field_value_mut(self, f);
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        if let Expr::Path(p) = e {
            if let Some(i) = p.path.get_ident() {
                let n = i.to_string();
                if n == "self" {
                    let id = proc_macro2::Ident::new("__jitgen_self", i.span());
                    *e = syn::parse_quote!(#id);
                } else if self.by_ref.contains(&n) {
                    let id = i.clone();
                    *e = syn::parse_quote!((*#id));
                } else if self.borrowed.contains(&n) {
                    let id = i.clone();
                    *e = syn::parse_quote!((&#id));
                } else if self.taken.contains(&n) {
                    let id = i.clone();
                    *e = syn::parse_quote!(::std::mem::take(#id));
                }
                return;
            }
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }

    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        m.tokens = self.tokens(m.tokens.clone());
    }
}

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

use crate::flowgraph::{BinOp, Block, Const, Exit, FlowGraph, HintKind, Link, Op, OpKind, UnOp, Value, Var, VarInfo};
use crate::module::{FnDef, ModuleDef};
use crate::types::{IntTy, Ty, Unifier};

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
}

/// Lowers one function. Errors go to `errors`; the graph is returned when the
/// function had none.
pub(crate) fn lower_fn(m: &ModuleDef<'_>, f: &FnDef<'_>, errors: &mut Vec<syn::Error>) -> Option<FlowGraph> {
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
    };
    for p in &f.params {
        if matches!(p.ty, Ty::Tuple(_)) {
            l.error(p.span, "a tuple parameter of a portal is not supported by jitgen yet; pass the components, or a struct of the module");
        }
        let v = l.new_var(Some(p.name.clone()), p.ty.clone(), p.span);
        l.blocks[0].inputargs.push(v);
        l.env.push((p.name.clone(), LVal::Var(v)));
    }
    let body = crate::resolve::resolve_body(m, f.body);
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
    let g = l.finish();
    errors.extend(g.1);
    if had_errors {
        None
    } else {
        g.0
    }
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
pub const STRING_ADVICE: &str = "of strings, jitgen knows `String` built by `String::new`, `String::from`, `format!`, `to_string`, `push`, `push_str`, `+=`, `write!`, and read by `len`, `is_empty`, `clear`, `as_str` and formatting; string literals only as arguments of these and of `ok_or`; for errors, use an enum of the module (`Err(VmError::StackUnderflow)`); take program text as bytes (`&[u8]`)";


/// What to write instead of an operator on strings.
const STRING_OPERATOR_ADVICE: &str = "append with `push_str` or `+=`; compare strings in a #[jit_opaque] function, or keep what they name as an enum of the module";

/// A string literal as a format string that writes it as it is.
fn escaped_template(l: &syn::LitStr) -> syn::LitStr {
    syn::LitStr::new(&l.value().replace('{', "{{").replace('}', "}}"), l.span())
}

/// The string literal `e` is, if it is one.
fn str_lit(e: &Expr) -> Option<&syn::LitStr> {
    match e {
        Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(l), .. }) => Some(l),
        Expr::Paren(p) => str_lit(&p.expr),
        _ => None,
    }
}

/// `dest.push_str(arg)` as a `write!` into `dest`: a literal becomes the
/// format string, `&format!(..)` and `&x.to_string()` write without making
/// the intermediate `String`, anything else is formatted with `{}`.
fn appended(dest: &Expr, arg: &Expr) -> Expr {
    if let Some(l) = str_lit(arg) {
        let t = escaped_template(l);
        return syn::parse_quote_spanned!(arg.span()=> write!(#dest, #t));
    }
    if let Expr::Reference(r) = arg {
        match &*r.expr {
            Expr::Macro(m) if m.mac.path.is_ident("format") => {
                let tokens = &m.mac.tokens;
                return syn::parse_quote_spanned!(arg.span()=> write!(#dest, #tokens));
            }
            Expr::MethodCall(mc) if mc.method == "to_string" && mc.args.is_empty() => {
                let x = &mc.receiver;
                return match str_lit(x) {
                    Some(l) => {
                        let t = escaped_template(l);
                        syn::parse_quote_spanned!(arg.span()=> write!(#dest, #t))
                    }
                    None => syn::parse_quote_spanned!(arg.span()=> write!(#dest, "{}", #x)),
                };
            }
            _ => {}
        }
    }
    syn::parse_quote_spanned!(arg.span()=> write!(#dest, "{}", #arg))
}

/// Whether `e` is `write!(..)` or `writeln!(..)`.
fn is_write_macro(e: &Expr) -> bool {
    matches!(e, Expr::Macro(m) if m.mac.path.is_ident("write") || m.mac.path.is_ident("writeln"))
}

/// Whether `m` is `hint!(global_merge_point)`.
pub fn is_merge_point(m: &syn::Macro) -> bool {
    m.path.is_ident("hint") && m.tokens.to_string().trim() == "global_merge_point"
}

/// Whether `body` contains `hint!(global_merge_point)`: it is a portal
/// (never inlined).
pub fn has_merge_point(body: &syn::Block) -> bool {
    struct Find(bool);
    impl<'ast> syn::visit::Visit<'ast> for Find {
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            self.0 |= is_merge_point(m);
        }
    }
    let mut f = Find(false);
    syn::visit::Visit::visit_block(&mut f, body);
    f.0
}

/// Whether `e` names a place that can be named again with no effect: a
/// binding, or fields of one.
fn pure_place(e: &Expr) -> bool {
    match e {
        Expr::Path(p) => p.path.get_ident().is_some(),
        Expr::Field(f) => pure_place(&f.base),
        Expr::Paren(p) => pure_place(&p.expr),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => pure_place(&u.expr),
        _ => false,
    }
}

/// The names a format string takes from the scope, in order of first use:
/// `{x}`, `{x:?}`, and `w` in `{:w$}` or `{:.w$}`.
fn captured_names(template: &str) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    let is_start = |c: char| c.is_alphabetic() || c == '_';
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        if rest[open + 1..].starts_with('{') {
            rest = &rest[open + 2..];
            continue;
        }
        let Some(close) = rest[open..].find('}') else { break };
        let spec = &rest[open + 1..open + close];
        let (arg, fmt) = spec.split_once(':').unwrap_or((spec, ""));
        let mut found = vec![];
        if arg.starts_with(is_start) {
            found.push(arg.trim().to_string());
        }
        for piece in fmt.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$')) {
            if let Some(name) = piece.strip_suffix('$') {
                if name.starts_with(is_start) {
                    found.push(name.to_string());
                }
            }
        }
        for n in found {
            if !out.contains(&n) {
                out.push(n);
            }
        }
        rest = &rest[open + close + 1..];
    }
    out
}

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
            RefTo::Heap { ty, .. } => ty.clone(),
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

    /// The value a function returns: not a tuple (a function's result is
    /// one machine value).
    fn returned(&mut self, v: LVal, span: Span) -> LVal {
        match v {
            LVal::Tuple(_) => {
                self.error(
                    span,
                    "returning a tuple from a portal (a function with `hint!(global_merge_point)`) is not supported yet; return a struct of the module",
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
        let result = self.new_var(None, ty, span);
        let b = self.cur_block();
        self.blocks[b].ops.push(LOp { result, kind, args, span, source: source_of(src) });
        LVal::Var(result)
    }

    fn set_exit(&mut self, exit: LExit) {
        let b = self.cur_block();
        let targets: Vec<usize> = match &exit {
            LExit::Goto(l) => vec![l.target],
            LExit::Branch(_, a, b) => vec![a.target, b.target],
            _ => vec![],
        };
        for t in targets {
            self.blocks[t].preds += 1;
        }
        self.blocks[b].exit = Some(exit);
        self.cur = None;
    }

    /// A join block mirroring the first `depth` bindings, plus an optional result.
    fn new_join(&mut self, depth: usize, result: Option<Ty>) -> usize {
        let mut inputargs = vec![];
        let mut shapes = vec![];
        for i in 0..depth {
            let (name, val) = self.env[i].clone();
            shapes.push(self.fresh_shape(Some(name), &val, &mut inputargs));
        }
        let has_result = result.is_some();
        if let Some(t) = result {
            // One variable; reshaped into a tuple's by the first value that
            // flows in (`link_to`), if it is a tuple.
            let var = self.new_var(None, t, self.span);
            inputargs.push(var);
            shapes.push(LVal::Var(var));
        }
        self.blocks.push(LBlock { inputargs, join_depth: Some(depth), has_result, shapes, ..Default::default() });
        self.blocks.len() - 1
    }

    fn link_to(&mut self, target: usize, result: Option<LVal>) -> LLink {
        let depth = self.blocks[target].join_depth.unwrap_or(0);
        let mut args: Vec<LVal> = vec![];
        for (_, v) in &self.env[..depth] {
            v.flatten(&mut args);
        }
        let result_shape = result.clone();
        if self.blocks[target].has_result {
            let r = result.unwrap_or(LVal::Const(Const::Unit));
            let shape = self.blocks[target].shapes.last().cloned();
            if let (true, Some(LVal::Var(rv))) = (r.is_composite(), shape) {
                if self.blocks[target].preds == 0 {
                    let (want, have) = (self.vars[rv.0 as usize].ty.clone(), self.ty_of(&r));
                    let _ = self.u.unify(&want, &have);
                    let mut vars = vec![];
                    let shape = self.fresh_shape(None, &r, &mut vars);
                    let b = &mut self.blocks[target];
                    b.inputargs.pop();
                    b.inputargs.extend(vars);
                    *b.shapes.last_mut().unwrap() = shape;
                }
            }
            r.flatten(&mut args);
        }
        // Unify the types of the join's input arguments with what flows in.
        let same = {
            let shapes = &self.blocks[target].shapes;
            let mut incoming = self.env[..depth].iter().map(|(_, v)| v.clone()).collect::<Vec<_>>();
            if self.blocks[target].has_result {
                incoming.push(result_shape.clone().unwrap_or(LVal::Const(Const::Unit)));
            }
            shapes.len() == incoming.len() && shapes.iter().zip(&incoming).all(|(a, b)| a.same_shape(b))
        };
        if !same || args.len() != self.blocks[target].inputargs.len() {
            self.error(
                self.span,
                "values of different shapes meet here: a tuple and another value, or `&mut` references \
                 to different places (or an `Option<&mut _>` built in two ways); make both sides alike",
            );
            args.resize(self.blocks[target].inputargs.len(), LVal::Const(Const::Unit));
        }
        for (i, a) in args.iter().enumerate() {
            let (want, have) = (self.vars[self.blocks[target].inputargs[i].0 as usize].ty.clone(), self.ty_of(a));
            let _ = self.u.unify(&want, &have);
        }
        LLink { target, args }
    }

    /// Ends the current block with a jump to a join block.
    fn jump(&mut self, target: usize, result: Option<LVal>) {
        if self.cur.is_none() {
            return;
        }
        let link = self.link_to(target, result);
        self.set_exit(LExit::Goto(link));
    }

    /// Continues in a join block; returns its result argument. With no
    /// predecessors, the code after it is unreachable.
    fn enter(&mut self, b: usize) -> Option<LVal> {
        if self.blocks[b].preds == 0 {
            self.cur = None;
            return None;
        }
        let depth = self.blocks[b].join_depth.unwrap_or(0);
        for i in 0..depth {
            self.env[i].1 = self.blocks[b].shapes[i].clone();
        }
        self.cur = Some(b);
        if self.blocks[b].has_result {
            self.blocks[b].shapes.last().cloned()
        } else {
            None
        }
    }

    /// Branches on `cond`; returns the (true, false) blocks. No block is current after.
    fn branch(&mut self, cond: LVal) -> (usize, usize) {
        for _ in 0..2 {
            self.blocks.push(LBlock { env_at_entry: Some(self.env.clone()), ..Default::default() });
        }
        let (t, f) = (self.blocks.len() - 2, self.blocks.len() - 1);
        let exit = LExit::Branch(cond, LLink { target: t, args: vec![] }, LLink { target: f, args: vec![] });
        self.set_exit(exit);
        (t, f)
    }

    /// Continues in one side of a branch, with the bindings as they were there.
    fn resume(&mut self, b: usize) {
        if let Some(env) = &self.blocks[b].env_at_entry {
            self.env = env.clone();
        }
        self.cur = Some(b);
    }

    /// Continues only where `cond` holds; elsewhere jumps to the join `fail`.
    fn test(&mut self, cond: LVal, fail: usize) {
        let (t, f) = self.branch(cond);
        self.resume(f);
        self.jump(fail, None);
        self.resume(t);
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
            LVal::Var(var) if self.vars[var.0 as usize].name.is_none() => {
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
        for (i, s) in b.stmts.iter().enumerate() {
            let last = i + 1 == b.stmts.len();
            value = LVal::Const(Const::Unit);
            match s {
                syn::Stmt::Local(local) => self.local(local),
                syn::Stmt::Expr(e, semi) => {
                    let v = self.expr(e);
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
                    }
                }
                syn::Stmt::Item(it) => {
                    self.unsupported(it, "an item inside a function body", "move it to the module level");
                }
            }
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
        let v = self.expr(&init.expr);
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
            Pat::Ident(pi) if pi.subpat.is_none() => self.bind(pi.ident.to_string(), v, local),
            Pat::Wild(_) => {}
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
                let v = self.expr(&a.right);
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
                    Some(x) => self.expr(x),
                    None => LVal::Const(Const::Unit),
                };
                if self.cur.is_some() {
                    let (ret, t) = (self.f.ret.clone(), self.ty_of(&v));
                    self.unify(&ret, &t, r.span());
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
                self.get_field(base, &f.member, e)
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
                let v = self.expr(&r.expr);
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
            Expr::Repeat(r) => self.unsupported(r, "an array repeat expression", "use `vec![x; n]`"),
            other => self.unsupported(other, "this expression", ""),
        }
    }

    fn lit(&mut self, l: &syn::Lit) -> LVal {
        match l {
            syn::Lit::Int(i) => {
                let Ok(v) = i.base10_parse::<i128>() else {
                    return self.unsupported(l, "this integer literal", "");
                };
                match i.suffix() {
                    "" => LVal::Int(v, self.u.fresh_int()),
                    "f64" => LVal::Const(Const::Float(v as f64, Ty::F64)),
                    "f32" => LVal::Const(Const::Float(v as f64, Ty::F32)),
                    s => match IntTy::from_name(s) {
                        Some(t) => LVal::Const(Const::Int(v, t)),
                        None => self.unsupported(l, "this literal suffix", ""),
                    },
                }
            }
            syn::Lit::Float(f) => {
                let Ok(v) = f.base10_parse::<f64>() else {
                    return self.unsupported(l, "this float literal", "");
                };
                match f.suffix() {
                    "f32" => LVal::Const(Const::Float(v, Ty::F32)),
                    "f64" => LVal::Const(Const::Float(v, Ty::F64)),
                    _ => LVal::Float(v, self.u.fresh_float()),
                }
            }
            syn::Lit::Bool(b) => LVal::Const(Const::Bool(b.value)),
            syn::Lit::Byte(b) => LVal::Const(Const::Int(b.value() as i128, IntTy::U8)),
            syn::Lit::Char(c) => LVal::Const(Const::Char(c.value())),
            syn::Lit::Str(_) | syn::Lit::ByteStr(_) | syn::Lit::CStr(_) => {
                self.unsupported(l, "a string literal", STRING_ADVICE)
            }
            other => self.unsupported(other, "this literal", ""),
        }
    }

    fn path_expr(&mut self, p: &syn::ExprPath) -> LVal {
        let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segs.len() == 1 {
            let name = &segs[0];
            if let Some(i) = self.lookup(name) {
                return self.env[i].1.clone();
            }
            if let Some(c) = self.m.consts.get(name) {
                return LVal::Const(c.clone());
            }
            if name == "None" {
                let t = Ty::Option(Box::new(self.u.fresh()));
                return self.emit(
                    OpKind::MakeEnum { enum_name: "Option".into(), variant: "None".into(), index: 0 },
                    vec![],
                    t,
                    p,
                );
            }
            return self.unsupported(
                p,
                &format!("the name `{name}` (not a local, a parameter or a const of the module)"),
                "",
            );
        }
        let ty_name = self.resolve_self(&segs[segs.len() - 2]);
        let last = &segs[segs.len() - 1];
        if let Some(c) = self.m.consts.get(&format!("{ty_name}::{last}")) {
            return LVal::Const(c.clone());
        }
        if let Some(it) = IntTy::from_name(&ty_name) {
            let v = match (last.as_str(), it.signed()) {
                ("MAX", true) => (1i128 << (it.bits().min(127) - 1)) - 1,
                ("MIN", true) => -(1i128 << (it.bits().min(127) - 1)),
                ("MAX", false) if it.bits() < 128 => (1i128 << it.bits()) - 1,
                ("MIN", false) => 0,
                _ => return self.unsupported(p, "this associated constant", ""),
            };
            return LVal::Const(Const::Int(v, it));
        }
        if let Some((idx, fields)) = self.variant(&ty_name, last) {
            if !fields.is_empty() {
                return self.unsupported(p, "an enum constructor used as a function value", "call it with its payload");
            }
            return self.emit(
                OpKind::MakeEnum { enum_name: ty_name.clone(), variant: last.clone(), index: idx },
                vec![],
                Ty::Enum(ty_name),
                p,
            );
        }
        self.unsupported(p, &format!("the path `{}`", segs.join("::")), "")
    }

    fn resolve_self(&self, name: &str) -> String {
        match (name, &self.f.self_ty) {
            ("Self", Some(s)) => s.clone(),
            _ => name.to_string(),
        }
    }

    /// A variant of a module enum: its tag and payload types.
    fn variant(&self, enum_name: &str, variant: &str) -> Option<(u32, Vec<(String, Ty)>)> {
        let e = self.m.enums.get(enum_name)?;
        let i = e.variants.iter().position(|v| v.name == variant)?;
        Some((i as u32, e.variants[i].fields.clone()))
    }

    fn binop(op: &syn::BinOp) -> Option<(BinOp, bool)> {
        use syn::BinOp as B;
        Some(match op {
            B::Add(_) => (BinOp::Add, false),
            B::Sub(_) => (BinOp::Sub, false),
            B::Mul(_) => (BinOp::Mul, false),
            B::Div(_) => (BinOp::Div, false),
            B::Rem(_) => (BinOp::Rem, false),
            B::BitXor(_) => (BinOp::BitXor, false),
            B::BitAnd(_) => (BinOp::BitAnd, false),
            B::BitOr(_) => (BinOp::BitOr, false),
            B::Shl(_) => (BinOp::Shl, false),
            B::Shr(_) => (BinOp::Shr, false),
            B::Eq(_) => (BinOp::Eq, false),
            B::Lt(_) => (BinOp::Lt, false),
            B::Le(_) => (BinOp::Le, false),
            B::Ne(_) => (BinOp::Ne, false),
            B::Ge(_) => (BinOp::Ge, false),
            B::Gt(_) => (BinOp::Gt, false),
            B::AddAssign(_) => (BinOp::Add, true),
            B::SubAssign(_) => (BinOp::Sub, true),
            B::MulAssign(_) => (BinOp::Mul, true),
            B::DivAssign(_) => (BinOp::Div, true),
            B::RemAssign(_) => (BinOp::Rem, true),
            B::BitXorAssign(_) => (BinOp::BitXor, true),
            B::BitAndAssign(_) => (BinOp::BitAnd, true),
            B::BitOrAssign(_) => (BinOp::BitOr, true),
            B::ShlAssign(_) => (BinOp::Shl, true),
            B::ShrAssign(_) => (BinOp::Shr, true),
            _ => return None,
        })
    }

    /// Whether `left += right` appends to a `String`: `right` is a string
    /// literal, or a reference and `left` a `String` (its place is read to
    /// see, which has no effect).
    fn is_string_place(&mut self, left: &Expr, right: &Expr) -> bool {
        if str_lit(right).is_some() {
            return true;
        }
        if !matches!(right, Expr::Reference(_)) {
            return false;
        }
        let Some(place) = self.place(left) else { return false };
        let cur = self.read_place(&place, left);
        let t = self.ty_of(&cur);
        self.u.shallow(&t) == Ty::Str
    }

    /// Emits `a op b` with the typing rules of Rust's primitive operators.
    fn arith(&mut self, op: BinOp, a: LVal, b: LVal, src: &dyn ToTokens) -> LVal {
        let (a, b) = (self.rvalue(a, src), self.rvalue(b, src));
        let (ta, tb) = (self.ty_of(&a), self.ty_of(&b));
        let span = span_of(src);
        let is_string = |u: &Unifier, t: &Ty| match u.shallow(t) {
            Ty::Str => true,
            Ty::Ref { to, .. } => u.shallow(&to) == Ty::Str,
            _ => false,
        };
        if is_string(&self.u, &ta) || is_string(&self.u, &tb) {
            return self.unsupported(src, "an operator on strings", STRING_OPERATOR_ADVICE);
        }
        let result = match op {
            BinOp::Shl | BinOp::Shr => {
                if !self.u.is_intlike(&tb) && !matches!(self.u.shallow(&tb), Ty::Infer(_) | Ty::Error | Ty::Never) {
                    self.error(span, format!("shift amounts must be integers, found `{}`", self.u.show(&tb)));
                }
                ta
            }
            o if o.is_comparison() => {
                self.unify(&ta, &tb, span);
                if matches!(o, BinOp::Eq | BinOp::Ne) && self.equal_tags_decide(&a, &b) {
                    // Equal variants decide: compare the tags, which works on
                    // run-time values as well as on known ones.
                    let ta = self.emit(OpKind::EnumTag, vec![a], Ty::Int(IntTy::U32), src);
                    let tb = self.emit(OpKind::EnumTag, vec![b], Ty::Int(IntTy::U32), src);
                    return self.emit(OpKind::Bin(op), vec![ta, tb], Ty::Bool, src);
                }
                Ty::Bool
            }
            _ => {
                self.unify(&ta, &tb, span);
                ta
            }
        };
        self.emit(OpKind::Bin(op), vec![a, b], result, src)
    }

    /// Whether `a == b` on enums is the same as comparing their variants:
    /// `PartialEq` is derived (always for `Option` and `Result`) and either
    /// no variant has a payload, or one side is a variant without payload.
    fn equal_tags_decide(&self, a: &LVal, b: &LVal) -> bool {
        let fieldless = match self.shallow_ty(a) {
            Ty::Enum(e) => match self.m.enums.get(&e) {
                Some(d) if d.derives_eq => d.variants.iter().all(|v| v.fields.is_empty()),
                _ => return false,
            },
            Ty::Option(_) | Ty::Result(..) => false,
            _ => return false,
        };
        fieldless || self.is_unit_variant(a) || self.is_unit_variant(b)
    }

    /// Whether `v` was just made as a variant without payload (`Op::Add`, `None`).
    fn is_unit_variant(&self, v: &LVal) -> bool {
        let (LVal::Var(var), Some(b)) = (v, self.cur) else { return false };
        self.blocks[b]
            .ops
            .iter()
            .rev()
            .any(|o| o.result == *var && matches!(o.kind, OpKind::MakeEnum { .. }) && o.args.is_empty())
    }

    fn binary(&mut self, b: &syn::ExprBinary) -> LVal {
        match b.op {
            syn::BinOp::And(_) | syn::BinOp::Or(_) => {
                let is_and = matches!(b.op, syn::BinOp::And(_));
                let l = self.expr(&b.left);
                let l = self.rvalue(l, &b.left);
                let tl = self.ty_of(&l);
                self.unify(&Ty::Bool, &tl, b.left.span());
                let join = self.new_join(self.env.len(), Some(Ty::Bool));
                let (t, f) = self.branch(l);
                // `a && b`: if a is false the result is false, else b.
                let (rhs_block, short_block, short_val) = if is_and { (t, f, false) } else { (f, t, true) };
                self.resume(short_block);
                self.jump(join, Some(LVal::Const(Const::Bool(short_val))));
                self.resume(rhs_block);
                let r = self.expr(&b.right);
                let r = self.rvalue(r, &b.right);
                let tr = self.ty_of(&r);
                self.unify(&Ty::Bool, &tr, b.right.span());
                self.jump(join, Some(r));
                self.enter(join).unwrap_or_else(|| LVal::Const(Const::Bool(false)))
            }
            _ => {
                let Some((op, assign)) = Self::binop(&b.op) else {
                    return self.unsupported(&b.op, "this operator", "");
                };
                if assign && matches!(b.op, syn::BinOp::AddAssign(_)) && self.is_string_place(&b.left, &b.right) {
                    let (l, r) = (&b.left, &b.right);
                    return self.expr(&syn::parse_quote_spanned!(b.span()=> (#l).push_str(#r)));
                }
                if assign {
                    let r = self.expr(&b.right);
                    let Some(place) = self.place(&b.left) else {
                        return self.poison(b.span());
                    };
                    let cur = self.read_place(&place, &b.left);
                    let v = self.arith(op, cur, r, b);
                    self.write_place(place, v, b);
                    LVal::Const(Const::Unit)
                } else if str_lit(&b.left).is_some() || str_lit(&b.right).is_some() {
                    self.unsupported(b, "an operator on strings", STRING_OPERATOR_ADVICE)
                } else {
                    let l = self.expr(&b.left);
                    let r = self.expr(&b.right);
                    self.arith(op, l, r, b)
                }
            }
        }
    }

    fn unary(&mut self, u: &syn::ExprUnary) -> LVal {
        match u.op {
            syn::UnOp::Neg(_) => {
                if let Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(_) | syn::Lit::Float(_), .. }) = &*u.expr {
                    match self.expr(&u.expr) {
                        LVal::Int(v, t) => return LVal::Int(-v, t),
                        LVal::Float(v, t) => return LVal::Float(-v, t),
                        LVal::Const(Const::Int(v, t)) => return LVal::Const(Const::Int(-v, t)),
                        LVal::Const(Const::Float(v, t)) => return LVal::Const(Const::Float(-v, t)),
                        other => return other,
                    }
                }
                let v = self.expr(&u.expr);
                let v = self.rvalue(v, &u.expr);
                let t = self.ty_of(&v);
                self.emit(OpKind::Un(UnOp::Neg), vec![v], t, u)
            }
            syn::UnOp::Not(_) => {
                let v = self.expr(&u.expr);
                let v = self.rvalue(v, &u.expr);
                let t = self.ty_of(&v);
                self.emit(OpKind::Un(UnOp::Not), vec![v], t, u)
            }
            syn::UnOp::Deref(_) => {
                let v = self.expr(&u.expr);
                if let LVal::Ref(r) = v {
                    return self.read_place(&Place::Ref(*r), u);
                }
                match self.shallow_ty(&v) {
                    Ty::Ref { to, .. } | Ty::Boxed(to) => {
                        let inner = self.u.shallow(&to);
                        let kind = if inner.is_pointer() { OpKind::SameAs } else { OpKind::Load };
                        self.emit(kind, vec![v], inner, u)
                    }
                    // Bindings made by `match` on a reference are values already.
                    _ => v,
                }
            }
            _ => self.unsupported(u, "this unary operator", ""),
        }
    }

    // ----- places -----------------------------------------------------------------

    fn place(&mut self, e: &Expr) -> Option<Place> {
        match e {
            Expr::Paren(p) => self.place(&p.expr),
            Expr::Path(p) if p.path.get_ident().is_some() => {
                let name = p.path.get_ident().unwrap().to_string();
                match self.lookup(&name) {
                    Some(i) => Some(Place::Local(i)),
                    None => {
                        self.unsupported(p, &format!("assigning to `{name}` (not a local)"), "");
                        None
                    }
                }
            }
            Expr::Field(f) => {
                if let Some((i, path)) = self.tuple_place(e) {
                    return Some(Place::TupleItem(i, path));
                }
                let base = self.expr(&f.base);
                let (name, ty) = self.field_ty(&base, &f.member, e)?;
                Some(Place::Field(base, name, ty))
            }
            Expr::Index(i) => {
                let base = self.expr(&i.expr);
                let idx = self.expr(&i.index);
                let idx = self.rvalue(idx, &i.index);
                let t = self.elem_ty(&base, &idx, e)?;
                Some(Place::Item(base, idx, t))
            }
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => match self.expr(&u.expr) {
                LVal::Ref(r) => Some(Place::Ref(*r)),
                _ => {
                    self.unsupported(
                        u,
                        "assigning through this reference (a `&mut` parameter of a portal, or a `Box`)",
                        "keep the value in a field of a struct passed by `&mut`, or return it",
                    );
                    None
                }
            },
            other => {
                self.unsupported(other, "assigning to this place", "assign to a local, a field or an element");
                None
            }
        }
    }

    /// `t.0` (or `t.1.0`) where `t` is a local holding a tuple: the local
    /// and the path of indices.
    fn tuple_place(&self, e: &Expr) -> Option<(usize, Vec<usize>)> {
        match e {
            Expr::Paren(p) => self.tuple_place(&p.expr),
            Expr::Path(p) => {
                let i = self.lookup(&p.path.get_ident()?.to_string())?;
                matches!(self.env[i].1, LVal::Tuple(_)).then(|| (i, vec![]))
            }
            Expr::Field(f) => {
                let syn::Member::Unnamed(k) = &f.member else { return None };
                let (i, mut path) = self.tuple_place(&f.base)?;
                let mut v = &self.env[i].1;
                for &j in &path {
                    let LVal::Tuple(items) = v else { return None };
                    v = &items[j];
                }
                let LVal::Tuple(items) = v else { return None };
                let k = k.index as usize;
                (k < items.len()).then(|| {
                    path.push(k);
                    (i, path)
                })
            }
            _ => None,
        }
    }

    /// Whether `e` is written as a place `&mut` can take: a binding, its
    /// fields and elements, or `*r` of a `&mut` binding.
    fn ref_syntax(&self, e: &Expr) -> bool {
        let deref_of_binding = |e: &Expr| {
            let mut e = e;
            while let Expr::Paren(p) = e {
                e = &p.expr;
            }
            matches!(e, Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) && matches!(&*u.expr, Expr::Path(p) if p.path.get_ident().is_some()))
        };
        match e {
            Expr::Paren(p) => self.ref_syntax(&p.expr),
            Expr::Path(p) => p.path.get_ident().is_some(),
            Expr::Field(f) => self.ref_syntax(&f.base) || deref_of_binding(&f.base),
            Expr::Index(i) => self.ref_syntax(&i.expr) || deref_of_binding(&i.expr),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => match &*u.expr {
                Expr::Path(p) => p
                    .path
                    .get_ident()
                    .and_then(|i| self.lookup(&i.to_string()))
                    .is_some_and(|i| matches!(self.env[i].1, LVal::Ref(_))),
                _ => false,
            },
            _ => false,
        }
    }

    /// The place `&mut e` names, for `e` of a value type: a local (or a
    /// tuple component), or a field or element reached from a binding.
    fn mut_ref(&mut self, e: &Expr) -> Option<RefTo> {
        let refused = |me: &mut Self| {
            me.unsupported(e, "`&mut` of this expression", "take `&mut` of a local, a field or an element of a Vec");
            None
        };
        match e {
            Expr::Paren(p) => self.mut_ref(&p.expr),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => match self.expr(&u.expr) {
                LVal::Ref(r) => Some(*r),
                _ => refused(self),
            },
            Expr::Path(p) if p.path.get_ident().is_some() => match self.lookup(&p.path.get_ident()?.to_string()) {
                Some(i) if !matches!(self.env[i].1, LVal::Ref(_) | LVal::Sum { .. }) => Some(RefTo::Local(i, vec![])),
                _ => refused(self),
            },
            Expr::Field(_) => {
                if let Some((i, path)) = self.tuple_place(e) {
                    return Some(RefTo::Local(i, path));
                }
                let (root, fields) = self.heap_path(e)?;
                let ty = fields.last().map(|f| f.1.clone())?;
                Some(RefTo::Heap { root, fields, index: None, ty })
            }
            Expr::Index(ix) => {
                let (root, fields) = self.heap_path(&ix.expr)?;
                let list_ty = fields.last().map_or_else(|| self.ty_of(&root), |f| f.1.clone());
                let idx = self.expr(&ix.index);
                let idx = self.rvalue(idx, &ix.index);
                let it = self.ty_of(&idx);
                self.unify(&Ty::Int(IntTy::Usize), &it, ix.index.span());
                match self.deref_ty(&list_ty) {
                    Ty::Vec(t) | Ty::Slice(t) | Ty::Array(t, _) => {
                        Some(RefTo::Heap { root, fields, index: Some(idx), ty: *t })
                    }
                    _ => refused(self),
                }
            }
            _ => refused(self),
        }
    }

    /// `e` as an object reached from a binding through fields: the
    /// binding's value and the fields with their types.
    fn heap_path(&mut self, e: &Expr) -> Option<(LVal, Vec<(String, Ty)>)> {
        match e {
            Expr::Paren(p) => self.heap_path(&p.expr),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => self.heap_path(&u.expr),
            Expr::Path(p) if p.path.get_ident().is_some() => {
                let name = p.path.get_ident()?.to_string();
                match self.lookup(&name) {
                    Some(i) if !self.env[i].1.is_composite() => Some((self.env[i].1.clone(), vec![])),
                    _ => {
                        self.unsupported(
                            e,
                            &format!("a `&mut` into `{name}`"),
                            "take it into a local Vec or struct, or a field of one",
                        );
                        None
                    }
                }
            }
            Expr::Field(f) => {
                let (root, mut fields) = self.heap_path(&f.base)?;
                let t = fields.last().map_or_else(|| self.ty_of(&root), |f| f.1.clone());
                let field = self.field_ty_in(&t, &f.member, e)?;
                fields.push(field);
                Some((root, fields))
            }
            _ => {
                self.unsupported(
                    e,
                    "a `&mut` into this expression",
                    "take it into a local Vec or struct, or a field of one",
                );
                None
            }
        }
    }

    fn read_place(&mut self, p: &Place, src: &dyn ToTokens) -> LVal {
        match p {
            Place::Local(i) => self.env[*i].1.clone(),
            Place::TupleItem(i, path) => {
                let mut v = &self.env[*i].1;
                for &k in path {
                    let LVal::Tuple(items) = v else { unreachable!("a tuple place names a tuple") };
                    v = &items[k];
                }
                v.clone()
            }
            Place::Field(b, f, t) => self.emit(OpKind::GetField(f.clone()), vec![b.clone()], t.clone(), src),
            Place::Item(b, i, t) => self.emit(OpKind::GetItem, vec![b.clone(), i.clone()], t.clone(), src),
            Place::Ref(RefTo::Local(i, path)) => {
                let p = if path.is_empty() { Place::Local(*i) } else { Place::TupleItem(*i, path.clone()) };
                self.read_place(&p, src)
            }
            Place::Ref(RefTo::Heap { root, fields, index, ty }) => {
                let (root, fields, index, ty) = (root.clone(), fields.clone(), index.clone(), ty.clone());
                let p = self.heap_place(root, &fields, index, ty, src);
                self.read_place(&p, src)
            }
        }
    }

    /// `root.f1.f2...`: the fields read in turn.
    fn read_path(&mut self, root: LVal, fields: &[(String, Ty)], src: &dyn ToTokens) -> LVal {
        let mut base = root;
        for (f, t) in fields {
            base = self.emit(OpKind::GetField(f.clone()), vec![base], t.clone(), src);
        }
        base
    }

    /// The place `root.f1.f2...[index]` names, the fields but the last (or
    /// all, with an index) read on the way.
    fn heap_place(
        &mut self,
        root: LVal,
        fields: &[(String, Ty)],
        index: Option<LVal>,
        ty: Ty,
        src: &dyn ToTokens,
    ) -> Place {
        let through = if index.is_some() { fields.len() } else { fields.len().saturating_sub(1) };
        let base = self.read_path(root, &fields[..through], src);
        match index {
            Some(i) => Place::Item(base, i, ty),
            None => match fields.last() {
                Some((f, _)) => Place::Field(base, f.clone(), ty),
                None => unreachable!("a reference into the heap names a field or an element"),
            },
        }
    }

    fn write_place(&mut self, p: Place, v: LVal, src: &dyn ToTokens) {
        let span = span_of(src);
        match p {
            Place::Local(i) => {
                let (old, new) = (self.ty_of(&self.env[i].1.clone()), self.ty_of(&v));
                self.unify(&old, &new, span);
                let name = self.env[i].0.clone();
                let v = match v {
                    LVal::Var(var) if self.vars[var.0 as usize].name.is_none() => {
                        self.vars[var.0 as usize].name = Some(name);
                        v
                    }
                    LVal::Var(_) => v,
                    c => self.named(name, c, src),
                };
                self.env[i].1 = v;
            }
            Place::TupleItem(i, path) => {
                let mut old = &self.env[i].1;
                for &k in &path {
                    let LVal::Tuple(items) = old else { unreachable!("a tuple place names a tuple") };
                    old = &items[k];
                }
                let (old_t, new_t) = (self.ty_of(old), self.ty_of(&v));
                self.unify(&old_t, &new_t, span);
                let name = path.iter().fold(self.env[i].0.clone(), |n, k| format!("{n}.{k}"));
                let v = match v {
                    LVal::Var(var) if self.vars[var.0 as usize].name.is_some() => v,
                    v => self.named(name, v, src),
                };
                let mut slot = &mut self.env[i].1;
                for &k in &path {
                    let LVal::Tuple(items) = slot else { unreachable!("a tuple place names a tuple") };
                    slot = &mut items[k];
                }
                *slot = v;
            }
            Place::Field(b, f, t) => {
                let vt = self.ty_of(&v);
                self.unify(&t, &vt, span);
                self.emit(OpKind::SetField(f), vec![b, v], Ty::Unit, src);
            }
            Place::Item(b, i, t) => {
                let vt = self.ty_of(&v);
                self.unify(&t, &vt, span);
                self.emit(OpKind::SetItem, vec![b, i, v], Ty::Unit, src);
            }
            Place::Ref(RefTo::Local(i, path)) => {
                let p = if path.is_empty() { Place::Local(i) } else { Place::TupleItem(i, path) };
                self.write_place(p, v, src);
            }
            Place::Ref(RefTo::Heap { root, fields, index, ty }) => {
                let p = self.heap_place(root, &fields, index, ty, src);
                self.write_place(p, v, src);
            }
        }
    }

    fn field_ty(&mut self, base: &LVal, member: &syn::Member, src: &dyn ToTokens) -> Option<(String, Ty)> {
        let t = self.ty_of(base);
        self.field_ty_in(&t, member, src)
    }

    /// The name and type of the field `member` of a value of type `t`
    /// (behind references).
    fn field_ty_in(&mut self, t: &Ty, member: &syn::Member, src: &dyn ToTokens) -> Option<(String, Ty)> {
        let name = match member {
            syn::Member::Named(i) => i.to_string(),
            syn::Member::Unnamed(i) => i.index.to_string(),
        };
        let t = self.deref_ty(t);
        match &t {
            Ty::Struct(s) => match self.m.structs.get(s).and_then(|d| d.fields.get(&name)) {
                Some(ft) => Some((name, ft.clone())),
                None => {
                    self.unsupported(src, &format!("the field `{name}` (struct `{s}` has no such field)"), "");
                    None
                }
            },
            Ty::Error | Ty::Never => None,
            Ty::Infer(_) => {
                self.unsupported(
                    src,
                    "field access on a value whose type is not known yet",
                    "add a type ascription to the binding",
                );
                None
            }
            other => {
                self.unsupported(
                    src,
                    &format!("field access on `{other}`"),
                    "fields can be read from structs of the module",
                );
                None
            }
        }
    }

    fn get_field(&mut self, base: LVal, member: &syn::Member, src: &Expr) -> LVal {
        match self.field_ty(&base, member, src) {
            Some((name, t)) => self.emit(OpKind::GetField(name), vec![base], t, src),
            None => self.poison(src.span()),
        }
    }

    fn elem_ty(&mut self, base: &LVal, idx: &LVal, src: &dyn ToTokens) -> Option<Ty> {
        let span = span_of(src);
        let it = self.ty_of(idx);
        self.unify(&Ty::Int(IntTy::Usize), &it, span);
        match self.deref_ty(&self.ty_of(base)) {
            Ty::Vec(t) | Ty::Slice(t) | Ty::Array(t, _) => Some(*t),
            Ty::Error | Ty::Never => None,
            Ty::Infer(_) => {
                self.unsupported(
                    src,
                    "indexing a value whose type is not known yet",
                    "add a type ascription to the binding",
                );
                None
            }
            other => {
                self.unsupported(src, &format!("indexing `{other}`"), "index a Vec, a slice or an array");
                None
            }
        }
    }

    fn get_item(&mut self, base: LVal, index: &Expr, src: &Expr) -> LVal {
        if let Expr::Range(r) = index {
            return self.unsupported(r, "indexing with a range (a sub-slice)", "pass the whole slice and an offset");
        }
        let idx = self.expr(index);
        let idx = self.rvalue(idx, index);
        match self.elem_ty(&base, &idx, src) {
            Some(t) => self.emit(OpKind::GetItem, vec![base, idx], t, src),
            None => self.poison(src.span()),
        }
    }

    // ----- calls ------------------------------------------------------------------

    fn args(&mut self, args: &Punctuated<Expr, Token![,]>) -> Vec<LVal> {
        args.iter().map(|a| self.expr(a)).collect()
    }

    /// A call of a module function, with its arguments type-checked.
    fn call_fn(&mut self, name: &str, args: Vec<LVal>, arg_exprs: &[&Expr], src: &dyn ToTokens) -> LVal {
        let m = self.m;
        let f = &m.fns[name];
        let Some(args) = self.checked_args(name, args, arg_exprs, src) else { return self.poison(span_of(src)) };
        if inline_only(f) {
            return self.inline_call(f, args, src);
        }
        // A portal is called, never inlined: the call reaches it through
        // its hook (a Rust-recursive interpreter's call of itself, once per
        // call of the interpreted program), and its loops compile there.
        let kind = if f.opaque || has_merge_point(f.body) {
            OpKind::CallOpaque(name.to_string())
        } else {
            OpKind::Call(name.to_string())
        };
        self.emit(kind, args, f.ret.clone(), src)
    }

    /// Lowers the body of `f` in place of a call, its parameters bound to
    /// `args`; its `return`s continue after the call.
    fn inline_call(&mut self, f: &'m FnDef<'a>, args: Vec<LVal>, src: &dyn ToTokens) -> LVal {
        let span = span_of(src);
        if self.inlines.iter().any(|(n, _)| *n == f.name) {
            let msg = format!(
                "`{}` takes or returns a `&mut` to a value or a tuple, and calls itself: jitgen resolves those where the function is called, which recursion prevents; pass the containing struct or Vec, or a struct of the module, instead",
                f.name
            );
            self.error(span, msg);
            return self.poison(span);
        }
        let saved_f = std::mem::replace(&mut self.f, f);
        let saved_loops = std::mem::take(&mut self.loops);
        let depth = self.env.len();
        let join = self.new_join(depth, Some(f.ret.clone()));
        self.inlines.push((f.name.clone(), join));
        for (p, a) in f.params.iter().zip(args) {
            self.env.push((p.name.clone(), a));
        }
        let body = crate::resolve::resolve_body(self.m, f.body);
        let v = self.block(&body);
        if self.cur.is_some() {
            let t = self.ty_of(&v);
            let ret = f.ret.clone();
            self.unify(&ret, &t, span);
            self.jump(join, Some(v));
        }
        self.env.truncate(depth);
        self.inlines.pop();
        self.f = saved_f;
        self.loops = saved_loops;
        match self.enter(join) {
            Some(v) => v,
            None => self.never(span),
        }
    }

    /// The arguments of a call of `name`, type-checked and read through
    /// references where the parameter takes a value.
    fn checked_args(
        &mut self,
        name: &str,
        mut args: Vec<LVal>,
        arg_exprs: &[&Expr],
        src: &dyn ToTokens,
    ) -> Option<Vec<LVal>> {
        let f = &self.m.fns[name];
        let span = span_of(src);
        if f.params.len() != args.len() {
            let msg = format!("`{name}` takes {} arguments, {} given", f.params.len(), args.len());
            self.error(span, msg);
            return None;
        }
        let params = f.params.clone();
        let receiver_offset = params.len() - arg_exprs.len();
        for (i, p) in params.iter().enumerate() {
            let at = arg_exprs.get(i.wrapping_sub(receiver_offset)).map_or(span, |e| e.span());
            // Auto-referencing of receivers and `&`/`&mut` coercions: compare
            // what is behind references.
            if i < receiver_offset {
                continue;
            }
            if let (LVal::Ref(r), Ty::Ref { mutable: true, to }) = (&args[i], &p.ty) {
                let t = self.ref_ty(r);
                self.unify(to, &t, at);
                continue;
            }
            if !self.u.shallow(&p.ty).is_pointer() {
                args[i] = self.rvalue(args[i].clone(), src);
            }
            let mut have = self.ty_of(&args[i]);
            // Deref coercion: `&Box<T>` passed for `&T` (the same address:
            // a box's value is the address of what it holds).
            if let (Ty::Ref { to: want_to, .. }, Ty::Ref { to: have_to, mutable }) = (&p.ty, self.u.shallow(&have)) {
                if let (Ty::Boxed(inner), false) =
                    (self.u.shallow(&have_to), matches!(self.u.shallow(want_to), Ty::Boxed(_)))
                {
                    let t = Ty::Ref { mutable, to: inner };
                    args[i] = self.emit(OpKind::SameAs, vec![args[i].clone()], t.clone(), src);
                    have = t;
                }
            }
            // Deref coercion: `&Vec<T>` passed for `&[T]` (its elements).
            if let (Ty::Ref { to: want_to, .. }, Ty::Ref { to: have_to, mutable }) = (&p.ty, self.u.shallow(&have)) {
                if let (Ty::Vec(elem), Ty::Slice(_)) = (self.u.shallow(&have_to), self.u.shallow(want_to)) {
                    let t = Ty::Ref { mutable, to: Box::new(Ty::Slice(elem)) };
                    args[i] = self.emit(OpKind::SameAs, vec![args[i].clone()], t.clone(), src);
                    have = t;
                }
            }
            let (want, have) = match (&p.ty, self.u.shallow(&have)) {
                (Ty::Ref { .. }, Ty::Ref { .. }) | (Ty::Ref { .. }, Ty::Infer(_)) => (p.ty.clone(), have),
                (Ty::Ref { to, .. }, h) => ((**to).clone(), h),
                _ => (p.ty.clone(), have),
            };
            self.unify(&want, &have, at);
        }
        Some(args)
    }

    /// Unifies `t` with the type a constructor's path names by its
    /// turbofish (`Vec::<Frame>::new()`, also what an alias resolves to).
    fn turbofish(&mut self, path: &syn::Path, t: &Ty) {
        let first = &path.segments[0];
        let syn::PathArguments::AngleBracketed(args) = &first.arguments else { return };
        let mut args = args.clone();
        args.colon2_token = None;
        let ident = &first.ident;
        let named: syn::Type = syn::parse_quote_spanned!(first.ident.span()=> #ident #args);
        match self.m.ty(&named, self.f.self_ty.as_deref()) {
            Ok(named) => self.unify(&named, t, path.span()),
            Err(e) => self.errors.push(e),
        }
    }

    fn call(&mut self, c: &syn::ExprCall) -> LVal {
        let Expr::Path(p) = &*c.func else {
            return self.unsupported(
                &c.func,
                "calling a computed function value",
                "call a function of the module by name",
            );
        };
        let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
        let arg_exprs: Vec<&Expr> = c.args.iter().collect();
        if segs.len() == 1 {
            let name = &segs[0];
            if self.m.fns.contains_key(name) {
                let args = self.args(&c.args);
                return self.call_fn(name, args, &arg_exprs, c);
            }
            match name.as_str() {
                "Some" | "Ok" | "Err" if c.args.len() == 1 => {
                    let a = self.expr(&c.args[0]);
                    let ta = self.ty_of(&a);
                    if let LVal::Ref(_) = a {
                        // An `Option`/`Result` of a `&mut`: a sum of places.
                        let (ty, en, idx, payloads) = match name.as_str() {
                            "Some" => (Ty::Option(Box::new(ta)), "Option", 1, vec![None, Some(a)]),
                            "Ok" => {
                                (Ty::Result(Box::new(ta), Box::new(self.u.fresh())), "Result", 0, vec![Some(a), None])
                            }
                            _ => (Ty::Result(Box::new(self.u.fresh()), Box::new(ta)), "Result", 1, vec![None, Some(a)]),
                        };
                        let tag = LVal::Const(Const::Tag { enum_name: en.into(), variant: name.clone(), index: idx });
                        return LVal::Sum { ty, tag: Box::new(tag), payloads };
                    }
                    let (t, en, idx) = match name.as_str() {
                        "Some" => (Ty::Option(Box::new(ta)), "Option", 1),
                        "Ok" => (Ty::Result(Box::new(ta), Box::new(self.u.fresh())), "Result", 0),
                        _ => (Ty::Result(Box::new(self.u.fresh()), Box::new(ta)), "Result", 1),
                    };
                    return self.emit(
                        OpKind::MakeEnum { enum_name: en.into(), variant: name.clone(), index: idx },
                        vec![a],
                        t,
                        c,
                    );
                }
                _ => {}
            }
            if let Some(sd) = self.m.structs.get(name) {
                let fields: Vec<Ty> = sd.fields.values().cloned().collect();
                return self.construct_struct(name.clone(), fields, c.args.iter().collect(), c);
            }
        }
        if segs.len() == 2 {
            let ty_name = self.resolve_self(&segs[0]);
            let last = &segs[1];
            let qualified = format!("{ty_name}::{last}");
            if self.m.fns.contains_key(&qualified) {
                let args = self.args(&c.args);
                return self.call_fn(&qualified, args, &arg_exprs, c);
            }
            if let Some((idx, fields)) = self.variant(&ty_name, last) {
                if fields.len() != c.args.len() {
                    return self.unsupported(
                        c,
                        &format!("`{qualified}` with {} payload values (it has {})", c.args.len(), fields.len()),
                        "",
                    );
                }
                let mut args = vec![];
                for ((_, ft), a) in fields.iter().zip(&c.args) {
                    let v = self.expr(a);
                    let t = self.ty_of(&v);
                    self.unify(ft, &t, a.span());
                    args.push(v);
                }
                return self.emit(
                    OpKind::MakeEnum { enum_name: ty_name.clone(), variant: last.clone(), index: idx },
                    args,
                    Ty::Enum(ty_name),
                    c,
                );
            }
            match (segs[0].as_str(), last.as_str(), c.args.len()) {
                ("Vec", "new", 0) | ("Vec", "with_capacity", 1) => {
                    // The capacity is only a hint to the allocator.
                    if let Some(a) = c.args.first() {
                        self.expr(a);
                    }
                    let t = Ty::Vec(Box::new(self.u.fresh()));
                    self.turbofish(&p.path, &t);
                    return self.emit(OpKind::NewVec, vec![], t, c);
                }
                ("String", "new", 0) => {
                    return self.emit(OpKind::CallOpaque("std::string::String::new".into()), vec![], Ty::Str, c);
                }
                ("String", "with_capacity", 1) => {
                    let n = self.expr(&c.args[0]);
                    let n = self.rvalue(n, &c.args[0]);
                    let nt = self.ty_of(&n);
                    self.unify(&Ty::Int(IntTy::Usize), &nt, c.args[0].span());
                    let f = OpKind::CallOpaque("std::string::String::with_capacity".into());
                    return self.emit(f, vec![n], Ty::Str, c);
                }
                ("String", "from", 1) => {
                    let a = &c.args[0];
                    let e: Expr = match str_lit(a) {
                        Some(l) => {
                            let t = escaped_template(l);
                            syn::parse_quote_spanned!(c.span()=> format!(#t))
                        }
                        None => syn::parse_quote_spanned!(c.span()=> format!("{}", #a)),
                    };
                    return self.expr(&e);
                }
                ("HashMap", "new", 0) => {
                    let t = Ty::Map(Box::new(self.u.fresh()), Box::new(self.u.fresh()));
                    self.turbofish(&p.path, &t);
                    return self.emit(OpKind::NewMap, vec![], t, c);
                }
                ("Box", "new", 1) => {
                    let v = self.expr(&c.args[0]);
                    let t = Ty::Boxed(Box::new(self.ty_of(&v)));
                    self.turbofish(&p.path, &t);
                    return self.emit(OpKind::NewBox, vec![v], t, c);
                }
                _ => {}
            }
        }
        if matches!(segs.first().map(String::as_str), Some("super" | "crate" | "std" | "core")) || segs.len() == 1 {
            // A function outside the module: a residual call whose result type
            // comes from the context.
            let args = self.args(&c.args);
            let t = self.u.fresh();
            match segs.as_slice() {
                [.., m, f] if m == "mem" && (f == "take" || f == "replace") => {
                    // `mem::take(&mut x)`, `mem::replace(&mut x, y)`: a value of x's type.
                    if let Some(Ty::Ref { to, .. }) = args.first().map(|a| self.u.shallow(&self.ty_of(a))) {
                        self.unify(&t, &to, c.span());
                    }
                }
                [.., m, f] if m == "mem" && f == "swap" => self.unify(&t, &Ty::Unit, c.span()),
                _ => {}
            }
            return self.emit(OpKind::CallOpaque(segs.join("::")), args, t, c);
        }
        let instead = if matches!(segs.first().map(String::as_str), Some("String" | "str")) {
            STRING_ADVICE
        } else {
            "call functions and methods of the module, or a function outside it through `super::`"
        };
        self.unsupported(c, &format!("calling `{}`", segs.join("::")), instead)
    }

    fn construct_struct(&mut self, name: String, field_tys: Vec<Ty>, values: Vec<&Expr>, src: &dyn ToTokens) -> LVal {
        let mut args = vec![];
        for (ft, e) in field_tys.iter().zip(values) {
            let v = self.expr(e);
            let t = self.ty_of(&v);
            self.unify(ft, &t, e.span());
            args.push(v);
        }
        self.emit(OpKind::NewStruct(name.clone()), args, Ty::Struct(name), src)
    }

    fn struct_lit(&mut self, s: &syn::ExprStruct) -> LVal {
        if let Some(r) = &s.rest {
            return self.unsupported(r, "struct update syntax (`..base`)", "list every field");
        }
        let segs: Vec<String> = s.path.segments.iter().map(|x| x.ident.to_string()).collect();
        let given: HashMap<String, &Expr> = s
            .fields
            .iter()
            .map(|fv| {
                let n = match &fv.member {
                    syn::Member::Named(i) => i.to_string(),
                    syn::Member::Unnamed(i) => i.index.to_string(),
                };
                (n, &fv.expr)
            })
            .collect();
        let (fields, make): (Vec<(String, Ty)>, Box<dyn Fn(Vec<LVal>) -> (OpKind, Ty)>) = if segs.len() == 1 {
            let name = self.resolve_self(&segs[0]);
            match self.m.structs.get(&name) {
                Some(sd) => {
                    let n2 = name.clone();
                    (
                        sd.fields.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                        Box::new(move |_| (OpKind::NewStruct(n2.clone()), Ty::Struct(n2.clone()))),
                    )
                }
                None => {
                    return self.unsupported(&s.path, &format!("the struct `{name}` (not defined in the module)"), "")
                }
            }
        } else {
            let en = self.resolve_self(&segs[segs.len() - 2]);
            let vn = segs[segs.len() - 1].clone();
            match self.variant(&en, &vn) {
                Some((idx, fields)) => (
                    fields,
                    Box::new(move |_| {
                        (
                            OpKind::MakeEnum { enum_name: en.clone(), variant: vn.clone(), index: idx },
                            Ty::Enum(en.clone()),
                        )
                    }),
                ),
                None => return self.unsupported(&s.path, "this struct path", ""),
            }
        };
        let mut args = vec![];
        for (fname, ft) in &fields {
            match given.get(fname) {
                Some(e) => {
                    let v = self.expr(e);
                    let t = self.ty_of(&v);
                    self.unify(ft, &t, e.span());
                    args.push(v);
                }
                None => {
                    self.error(s.path.span(), format!("missing field `{fname}`"));
                    args.push(self.poison(s.span()));
                }
            }
        }
        let (kind, ty) = make(args.clone());
        self.emit(kind, args, ty, s)
    }

    /// Lowers `e` with the given temporaries in scope (the values of a
    /// desugared call's receiver and arguments, evaluated once, in order).
    fn desugared(&mut self, temps: Vec<(&str, LVal)>, e: Expr) -> LVal {
        let n = temps.len();
        for (name, v) in temps {
            self.env.push((name.to_string(), v));
        }
        let r = self.expr(&e);
        self.env.truncate(self.env.len() - n);
        r
    }

    /// Methods of the standard library that are written in terms of what
    /// the analysis knows (see `std_methods`): `Vec` and slice accessors and
    /// edits, and the `Option`/`Result` combinators with their closures
    /// inlined. `None` when `method` is not one of them.
    fn std_method(&mut self, mc: &syn::ExprMethodCall, recv: &LVal, recv_ty: &Ty) -> Option<LVal> {
        let method = mc.method.to_string();
        let nargs = mc.args.len();
        let r = &*mc.receiver;
        let is_list = matches!(recv_ty, Ty::Vec(_) | Ty::Slice(_) | Ty::Array(..));
        let (a0, a1) = (mc.args.first(), mc.args.get(1));
        if is_list {
            // Mutating methods name the receiver again at each use: a field
            // read each time is the field's own list.
            let mutating = matches!(
                method.as_str(),
                "swap" | "truncate" | "clear" | "insert" | "remove" | "extend_from_slice" | "reverse" | "split_off"
            );
            if mutating && !pure_place(r) {
                return Some(self.unsupported(
                    mc,
                    &format!("`.{method}()` on this expression"),
                    "call it on a variable or a field",
                ));
            }
            if let ("get_mut", 1) | ("last_mut" | "first_mut", 0) = (method.as_str(), nargs) {
                let elem = match recv_ty {
                    Ty::Vec(t) | Ty::Slice(t) | Ty::Array(t, _) => (**t).clone(),
                    _ => Ty::Error,
                };
                if self.finished_value(&elem) {
                    return Some(self.mut_accessor(mc, &method, elem));
                }
            }
            let method = method.trim_end_matches("_mut");
            let e: Expr = match (method, nargs) {
                // Accessors on a place name it again at each use, as the
                // mutating methods do: a field of a virtual object read in
                // each block stays that object's list.
                ("get", 1) if pure_place(r) => syn::parse_quote!({
                    let __jitgen_i: usize = #a0;
                    if __jitgen_i < (#r).len() { Some((#r)[__jitgen_i]) } else { None }
                }),
                ("first", 0) if pure_place(r) => syn::parse_quote!(if (#r).is_empty() { None } else { Some((#r)[0]) }),
                // A copy of a list of values, element by element.
                ("clone" | "to_vec", 0)
                    if pure_place(r)
                        && matches!(recv_ty, Ty::Vec(t) | Ty::Slice(t) | Ty::Array(t, _) if self.u.shallow(t).is_value()) =>
                {
                    syn::parse_quote!({
                        let mut __jitgen_t = Vec::new();
                        let mut __jitgen_k: usize = 0;
                        while __jitgen_k < (#r).len() {
                            __jitgen_t.push((#r)[__jitgen_k]);
                            __jitgen_k += 1;
                        }
                        __jitgen_t
                    })
                }
                ("last", 0) if pure_place(r) => {
                    syn::parse_quote!(if (#r).is_empty() { None } else { Some((#r)[(#r).len() - 1]) })
                }
                ("get", 1) => {
                    let i = self.expr(&mc.args[0]);
                    let i = self.rvalue(i, &mc.args[0]);
                    let recv = self.rvalue(recv.clone(), r);
                    let e = syn::parse_quote!(if __jitgen_i < __jitgen_recv.len() {
                        Some(__jitgen_recv[__jitgen_i])
                    } else {
                        None
                    });
                    return Some(self.desugared(vec![("__jitgen_recv", recv), ("__jitgen_i", i)], e));
                }
                ("first" | "last", 0) => {
                    // The receiver is evaluated once, as Rust does.
                    let recv = self.rvalue(recv.clone(), r);
                    let e = if method == "first" {
                        syn::parse_quote!(if __jitgen_recv.is_empty() { None } else { Some(__jitgen_recv[0]) })
                    } else {
                        syn::parse_quote!(if __jitgen_recv.is_empty() {
                            None
                        } else {
                            Some(__jitgen_recv[__jitgen_recv.len() - 1])
                        })
                    };
                    return Some(self.desugared(vec![("__jitgen_recv", recv)], e));
                }
                ("swap", 2) => syn::parse_quote!({
                    let __jitgen_a: usize = #a0;
                    let __jitgen_b: usize = #a1;
                    let __jitgen_t = (#r)[__jitgen_a];
                    (#r)[__jitgen_a] = (#r)[__jitgen_b];
                    (#r)[__jitgen_b] = __jitgen_t;
                }),
                ("truncate", 1) => syn::parse_quote!({
                    let __jitgen_n: usize = #a0;
                    while (#r).len() > __jitgen_n {
                        (#r).pop();
                    }
                }),
                // A copy of the tail, then the list truncated; Rust panics
                // past the length (here without its message). The tail's
                // length is computed first: `v.split_off(v.len() - n)`
                // copies n elements, known while compiling when n is.
                ("split_off", 1) => syn::parse_quote!({
                    let __jitgen_at: usize = #a0;
                    assert!(__jitgen_at <= (#r).len());
                    let __jitgen_n: usize = (#r).len() - __jitgen_at;
                    let mut __jitgen_t = Vec::new();
                    let mut __jitgen_k: usize = 0;
                    while __jitgen_k < __jitgen_n {
                        __jitgen_t.push((#r)[__jitgen_at + __jitgen_k]);
                        __jitgen_k += 1;
                    }
                    while (#r).len() > __jitgen_at {
                        (#r).pop();
                    }
                    __jitgen_t
                }),
                ("reverse", 0) => syn::parse_quote!({
                    let __jitgen_n: usize = (#r).len();
                    let mut __jitgen_k: usize = 0;
                    while __jitgen_k < __jitgen_n / 2 {
                        let __jitgen_t = (#r)[__jitgen_k];
                        (#r)[__jitgen_k] = (#r)[__jitgen_n - 1 - __jitgen_k];
                        (#r)[__jitgen_n - 1 - __jitgen_k] = __jitgen_t;
                        __jitgen_k += 1;
                    }
                }),
                ("clear", 0) => syn::parse_quote!(while !(#r).is_empty() {
                    (#r).pop();
                }),
                ("insert", 2) => syn::parse_quote!({
                    let __jitgen_i: usize = #a0;
                    let __jitgen_x = #a1;
                    (#r).push(__jitgen_x);
                    let mut __jitgen_k = (#r).len() - 1;
                    while __jitgen_k > __jitgen_i {
                        (#r)[__jitgen_k] = (#r)[__jitgen_k - 1];
                        __jitgen_k -= 1;
                    }
                    (#r)[__jitgen_i] = __jitgen_x;
                }),
                ("remove", 1) => syn::parse_quote!({
                    let __jitgen_i: usize = #a0;
                    let __jitgen_v = (#r)[__jitgen_i];
                    let mut __jitgen_k = __jitgen_i;
                    while __jitgen_k + 1 < (#r).len() {
                        (#r)[__jitgen_k] = (#r)[__jitgen_k + 1];
                        __jitgen_k += 1;
                    }
                    (#r).pop();
                    __jitgen_v
                }),
                ("extend_from_slice", 1) => {
                    let from = match &mc.args[0] {
                        Expr::Reference(x) => (*x.expr).clone(),
                        e => e.clone(),
                    };
                    syn::parse_quote!({
                        let mut __jitgen_k: usize = 0;
                        while __jitgen_k < (#from).len() {
                            (#r).push((#from)[__jitgen_k]);
                            __jitgen_k += 1;
                        }
                    })
                }
                _ => return None,
            };
            return Some(self.expr(&e));
        }
        let is_option = matches!(recv_ty, Ty::Option(_));
        if !is_option && !matches!(recv_ty, Ty::Result(..)) {
            return None;
        }
        // The combinators, as a `match` with the closure's body inlined
        // (its parameter pattern becomes the arm's): captures are the
        // bindings in scope.
        let apply = |f: &Expr, arg: Option<Expr>| -> Option<(Option<Pat>, Expr)> {
            match f {
                Expr::Closure(c) => {
                    if c.inputs.len() != usize::from(arg.is_some()) || c.asyncness.is_some() {
                        return None;
                    }
                    let pat = c.inputs.first().map(|p| match p {
                        Pat::Reference(r) => (*r.pat).clone(),
                        Pat::Type(t) => (*t.pat).clone(),
                        p => p.clone(),
                    });
                    Some((pat, (*c.body).clone()))
                }
                f => Some((
                    None,
                    match arg {
                        Some(x) => syn::parse_quote!((#f)(#x)),
                        None => syn::parse_quote!((#f)()),
                    },
                )),
            }
        };
        let some = if is_option { quote::quote!(Some) } else { quote::quote!(Ok) };
        let none: Pat = if is_option { syn::parse_quote!(None) } else { syn::parse_quote!(Err(__jitgen_e)) };
        let arm = |f: &Expr, wrap: bool| -> Option<(Pat, Expr)> {
            let x: Expr = syn::parse_quote!(__jitgen_x);
            let (pat, body) = apply(f, Some(x))?;
            let pat = pat.unwrap_or_else(|| syn::parse_quote!(__jitgen_x));
            let body = if wrap { syn::parse_quote!(#some(#body)) } else { body };
            Some((syn::parse_quote!(#some(#pat)), body))
        };
        let otherwise = |f: &Expr| -> Option<Expr> {
            if is_option {
                Some(apply(f, None)?.1)
            } else {
                let e: Expr = syn::parse_quote!(__jitgen_e);
                let (pat, body) = apply(f, Some(e))?;
                Some(match pat {
                    Some(p) => syn::parse_quote!({ let #p = __jitgen_e; #body }),
                    None => body,
                })
            }
        };
        let bad = |me: &mut Self| {
            Some(me.unsupported(
                mc,
                &format!("this argument of `.{method}()`"),
                "pass a closure literal or the name of a function",
            ))
        };
        let e: Expr = match (method.as_str(), nargs) {
            ("map", 1) => {
                let Some((p, b)) = arm(&mc.args[0], true) else { return bad(self) };
                let n: Expr = if is_option { syn::parse_quote!(None) } else { syn::parse_quote!(Err(__jitgen_e)) };
                syn::parse_quote!(match __jitgen_recv { #p => #b, #none => #n })
            }
            ("and_then", 1) => {
                let Some((p, b)) = arm(&mc.args[0], false) else { return bad(self) };
                let n: Expr = if is_option { syn::parse_quote!(None) } else { syn::parse_quote!(Err(__jitgen_e)) };
                syn::parse_quote!(match __jitgen_recv { #p => #b, #none => #n })
            }
            ("map_or", 2) => {
                let Some((p, b)) = arm(&mc.args[1], false) else { return bad(self) };
                let d = self.expr(&mc.args[0]);
                let d = self.rvalue(d, &mc.args[0]);
                let recv = self.rvalue(recv.clone(), r);
                let e = syn::parse_quote!(match __jitgen_recv { #p => #b, _ => __jitgen_d });
                return Some(self.desugared(vec![("__jitgen_recv", recv), ("__jitgen_d", d)], e));
            }
            ("map_or_else", 2) => {
                let Some((p, b)) = arm(&mc.args[1], false) else { return bad(self) };
                let Some(d) = otherwise(&mc.args[0]) else { return bad(self) };
                syn::parse_quote!(match __jitgen_recv { #p => #b, #none => #d })
            }
            ("unwrap_or_else", 1) => {
                let Some(d) = otherwise(&mc.args[0]) else { return bad(self) };
                syn::parse_quote!(match __jitgen_recv { #some(__jitgen_x) => __jitgen_x, #none => #d })
            }
            ("ok_or_else", 1) if is_option => {
                let Some(d) = otherwise(&mc.args[0]) else { return bad(self) };
                syn::parse_quote!(match __jitgen_recv { Some(__jitgen_x) => Ok(__jitgen_x), None => Err(#d) })
            }
            ("unwrap_or_default", 0) => {
                let inner = match recv_ty {
                    Ty::Option(t) | Ty::Result(t, _) => self.u.shallow(t),
                    _ => return None,
                };
                let d: Expr = match inner {
                    Ty::Bool => syn::parse_quote!(false),
                    Ty::F64 | Ty::F32 => syn::parse_quote!(0.0),
                    t if self.u.is_intlike(&t) => syn::parse_quote!(0),
                    _ => return Some(self.unsupported(mc, "`unwrap_or_default` on this type", "use `unwrap_or(..)`")),
                };
                syn::parse_quote!(match __jitgen_recv { #some(__jitgen_x) => __jitgen_x, _ => #d })
            }
            _ => return None,
        };
        let recv = self.rvalue(recv.clone(), r);
        Some(self.desugared(vec![("__jitgen_recv", recv)], e))
    }

    /// `a.checked_add(b)` and its kin: the wrapping result, and a test of
    /// overflow (or of a zero divisor) written with wrapping operations.
    fn checked_arith(&mut self, mc: &syn::ExprMethodCall, m: &str, recv: LVal) -> LVal {
        let b = self.expr(&mc.args[0]);
        let b = self.rvalue(b, &mc.args[0]);
        let (ta, tb) = (self.ty_of(&recv), self.ty_of(&b));
        self.unify(&ta, &tb, mc.args[0].span());
        let signed = match self.u.shallow(&ta) {
            Ty::Int(it) => it.signed(),
            _ => true,
        };
        // `a` is the minimum of a signed type: its own wrapping negation, not 0.
        let min = |x: &str| -> Expr {
            let x: syn::Ident = syn::parse_str(x).expect("an identifier");
            syn::parse_quote!((#x != 0 && #x.wrapping_neg() == #x))
        };
        let (min_a, min_b) = (min("__jitgen_a"), min("__jitgen_b"));
        let e: Expr = match (m, signed) {
            ("checked_add", false) => syn::parse_quote!({
                let __jitgen_s = __jitgen_a.wrapping_add(__jitgen_b);
                if __jitgen_s >= __jitgen_a {
                    Some(__jitgen_s)
                } else {
                    None
                }
            }),
            ("checked_add", true) => syn::parse_quote!({
                let __jitgen_s = __jitgen_a.wrapping_add(__jitgen_b);
                if (__jitgen_b >= 0) == (__jitgen_s >= __jitgen_a) {
                    Some(__jitgen_s)
                } else {
                    None
                }
            }),
            ("checked_sub", false) => syn::parse_quote!(if __jitgen_a >= __jitgen_b {
                Some(__jitgen_a.wrapping_sub(__jitgen_b))
            } else {
                None
            }),
            ("checked_sub", true) => syn::parse_quote!({
                let __jitgen_s = __jitgen_a.wrapping_sub(__jitgen_b);
                if (__jitgen_b >= 0) == (__jitgen_s <= __jitgen_a) {
                    Some(__jitgen_s)
                } else {
                    None
                }
            }),
            ("checked_mul", _) => {
                let min_overflow: Expr =
                    if signed { syn::parse_quote!((__jitgen_a == -1 && #min_b)) } else { syn::parse_quote!(false) };
                syn::parse_quote!(if __jitgen_a == 0 {
                    Some(0)
                } else {
                    let __jitgen_p = __jitgen_a.wrapping_mul(__jitgen_b);
                    if __jitgen_p.wrapping_div(__jitgen_a) == __jitgen_b && !#min_overflow { Some(__jitgen_p) } else { None }
                })
            }
            (_, _) => {
                let op: syn::Ident = syn::parse_str(if m == "checked_div" { "wrapping_div" } else { "wrapping_rem" })
                    .expect("an identifier");
                let min_overflow: Expr =
                    if signed { syn::parse_quote!((__jitgen_b == -1 && #min_a)) } else { syn::parse_quote!(false) };
                syn::parse_quote!(if __jitgen_b == 0 || #min_overflow { None } else { Some(__jitgen_a.#op(__jitgen_b)) })
            }
        };
        self.desugared(vec![("__jitgen_a", recv), ("__jitgen_b", b)], e)
    }

    /// `v.get_mut(i)`, `v.last_mut()`, `v.first_mut()` on a list of values:
    /// an `Option` of a `&mut` to the element, whose tag is the bounds test.
    fn mut_accessor(&mut self, mc: &syn::ExprMethodCall, method: &str, elem: Ty) -> LVal {
        let Some((root, fields)) = self.heap_path(&mc.receiver) else { return self.poison(mc.span()) };
        let list = self.read_path(root.clone(), &fields, mc);
        let usize_ty = Ty::Int(IntTy::Usize);
        let len = self.emit(OpKind::Len, vec![list], usize_ty.clone(), mc);
        let zero = LVal::Const(Const::Int(0, IntTy::Usize));
        let (index, present) = match method {
            "get_mut" => {
                let i = self.expr(&mc.args[0]);
                let i = self.rvalue(i, &mc.args[0]);
                let it = self.ty_of(&i);
                self.unify(&usize_ty, &it, mc.args[0].span());
                let present = self.emit(OpKind::Bin(BinOp::Lt), vec![i.clone(), len], Ty::Bool, mc);
                (i, present)
            }
            _ => {
                let present = self.emit(OpKind::Bin(BinOp::Ne), vec![len.clone(), zero.clone()], Ty::Bool, mc);
                let i = if method == "last_mut" {
                    let one = LVal::Const(Const::Int(1, IntTy::Usize));
                    self.emit(OpKind::Bin(BinOp::WrappingSub), vec![len, one], usize_ty, mc)
                } else {
                    zero
                };
                (i, present)
            }
        };
        let r = RefTo::Heap { root, fields, index: Some(index), ty: elem.clone() };
        let tag = self.emit(OpKind::Cast, vec![present], Ty::Int(IntTy::U32), mc);
        let ty = Ty::Option(Box::new(Ty::Ref { mutable: true, to: Box::new(elem) }));
        LVal::Sum { ty, tag: Box::new(tag), payloads: vec![None, Some(LVal::Ref(Box::new(r)))] }
    }

    fn method_call(&mut self, mc: &syn::ExprMethodCall) -> LVal {
        if let (Some(l), "to_string" | "to_owned" | "into", 0) =
            (str_lit(&mc.receiver), mc.method.to_string().as_str(), mc.args.len())
        {
            // `"text".to_string()`: a `String` with the literal's text.
            let t = escaped_template(l);
            return self.expr(&syn::parse_quote_spanned!(mc.span()=> format!(#t)));
        }
        if let (Some(l), "ok_or") = (mc.args.first().and_then(str_lit), mc.method.to_string().as_str()) {
            // `.ok_or("message")?` into a `String` error: the string made
            // only on the way to the error.
            let (r, t) = (&mc.receiver, escaped_template(l));
            return self.expr(&syn::parse_quote_spanned!(mc.span()=> (#r).ok_or_else(|| format!(#t))));
        }
        if is_write_macro(&mc.receiver) && matches!(mc.method.to_string().as_str(), "unwrap" | "expect") {
            // Writing into a `Vec<u8>` cannot fail (see `formatted`).
            return self.expr(&mc.receiver);
        }
        let recv = match self.expr(&mc.receiver) {
            LVal::Sum { ty, tag, payloads } => return self.sum_method(mc, ty, *tag, payloads),
            r @ LVal::Ref(_) => self.rvalue(r, &*mc.receiver),
            v => v,
        };
        let method = mc.method.to_string();
        let recv_ty = self.deref_ty(&self.ty_of(&recv));
        let nargs = mc.args.len();
        if recv_ty == Ty::Str {
            return self.string_method(mc);
        }
        if method == "to_string" && nargs == 0 && recv_ty.is_scalar() {
            let r = &mc.receiver;
            return self.expr(&syn::parse_quote_spanned!(mc.span()=> format!("{}", #r)));
        }
        if let Some(v) = self.std_method(mc, &recv, &recv_ty) {
            return v;
        }
        match (&recv_ty, method.as_str(), nargs) {
            (Ty::Vec(_) | Ty::Slice(_) | Ty::Array(..), "len", 0) => {
                return self.emit(OpKind::Len, vec![recv], Ty::Int(IntTy::Usize), mc)
            }
            (Ty::Vec(_) | Ty::Slice(_) | Ty::Array(..), "is_empty", 0) => {
                let n = self.emit(OpKind::Len, vec![recv], Ty::Int(IntTy::Usize), mc);
                return self.emit(
                    OpKind::Bin(BinOp::Eq),
                    vec![n, LVal::Const(Const::Int(0, IntTy::Usize))],
                    Ty::Bool,
                    mc,
                );
            }
            (Ty::Vec(t), "push", 1) => {
                let t = (**t).clone();
                let v = self.expr(&mc.args[0]);
                let vt = self.ty_of(&v);
                self.unify(&t, &vt, mc.args[0].span());
                return self.emit(OpKind::Push, vec![recv, v], Ty::Unit, mc);
            }
            (Ty::Vec(t), "pop", 0) => return self.emit(OpKind::Pop, vec![recv], Ty::Option(t.clone()), mc),
            (Ty::Map(..), "len", 0) => return self.emit(OpKind::Len, vec![recv], Ty::Int(IntTy::Usize), mc),
            (Ty::Map(k, v), "insert" | "get" | "remove" | "contains_key", _) => {
                let (k, v) = ((**k).clone(), (**v).clone());
                let want = if method == "insert" { 2 } else { 1 };
                if nargs != want {
                    let span = mc.span();
                    self.error(span, format!("`{method}` takes {want} argument(s)"));
                    return self.poison(span);
                }
                // Keys are passed by reference except to `insert`: take what
                // is behind a `&`.
                let key_expr = match (&mc.args[0], method.as_str()) {
                    (Expr::Reference(r), m) if m != "insert" => &*r.expr,
                    (e, _) => e,
                };
                let key = self.expr(key_expr);
                let key = self.rvalue(key, key_expr);
                let kt = self.ty_of(&key);
                self.unify(&k, &kt, key_expr.span());
                let (kind, mut args, ty) = match method.as_str() {
                    "insert" => (OpKind::MapInsert, vec![recv, key], Ty::Option(Box::new(v.clone()))),
                    "get" => (OpKind::MapGet, vec![recv, key], Ty::Option(Box::new(v.clone()))),
                    "remove" => (OpKind::MapRemove, vec![recv, key], Ty::Option(Box::new(v.clone()))),
                    _ => (OpKind::MapContains, vec![recv, key], Ty::Bool),
                };
                if method == "insert" {
                    let val = self.expr(&mc.args[1]);
                    let val = self.rvalue(val, &mc.args[1]);
                    let vt = self.ty_of(&val);
                    self.unify(&v, &vt, mc.args[1].span());
                    args.push(val);
                }
                return self.emit(kind, args, ty, mc);
            }
            // `map.get(&k).copied()`: values are scalars, `get` gives them already.
            (Ty::Option(_), "copied" | "cloned", 0) => return self.rvalue(recv, mc),
            // A value (a scalar, an enum) is its own clone.
            (t, "clone", 0) if t.is_value() => return self.rvalue(recv, mc),
            (Ty::Option(t), "ok_or", 1) if matches!(self.u.shallow(t), Ty::Struct(_)) => {
                // `Result` of an object: a sum of the `Option`'s object and
                // the error (the object is never one enum payload word).
                let t = (**t).clone();
                let recv = self.rvalue(recv, mc);
                let e = self.expr(&mc.args[0]);
                let e = self.rvalue(e, &mc.args[0]);
                let tag = self.emit(OpKind::EnumTag, vec![recv.clone()], Ty::Int(IntTy::U32), mc);
                let none = self.is_variant(tag, "Option", "None", 0, mc);
                let tag = self.emit(OpKind::Cast, vec![none], Ty::Int(IntTy::U32), mc);
                let obj = self.emit(OpKind::EnumField { variant: "Some".into(), index: 0 }, vec![recv], t.clone(), mc);
                let ty = Ty::Result(Box::new(t), Box::new(self.ty_of(&e)));
                return LVal::Sum { ty, tag: Box::new(tag), payloads: vec![Some(obj), Some(e)] };
            }
            (Ty::Option(_) | Ty::Result(..), "unwrap_or" | "ok_or", 1) => {
                // Desugared into a `match` on the value (the argument is
                // evaluated first, as Rust does).
                let is_option = matches!(recv_ty, Ty::Option(_));
                if method == "ok_or" && !is_option {
                    return self.unsupported(mc, "`ok_or` on a `Result`", "");
                }
                let recv = self.rvalue(recv, mc);
                let arg = self.expr(&mc.args[0]);
                let arg = self.rvalue(arg, &mc.args[0]);
                self.env.push(("__jitgen_recv".into(), recv));
                self.env.push(("__jitgen_arg".into(), arg));
                let m: Expr = match (method.as_str(), is_option) {
                    ("unwrap_or", true) => {
                        syn::parse_quote!(match __jitgen_recv {
                            Some(__jitgen_v) => __jitgen_v,
                            None => __jitgen_arg,
                        })
                    }
                    ("unwrap_or", false) => {
                        syn::parse_quote!(match __jitgen_recv {
                            Ok(__jitgen_v) => __jitgen_v,
                            Err(_) => __jitgen_arg,
                        })
                    }
                    _ => syn::parse_quote!(match __jitgen_recv {
                        Some(__jitgen_v) => Ok(__jitgen_v),
                        None => Err(__jitgen_arg),
                    }),
                };
                let r = self.expr(&m);
                self.env.truncate(self.env.len() - 2);
                return r;
            }
            (Ty::Option(t) | Ty::Result(t, _), "unwrap" | "expect", _) => {
                let t = (**t).clone();
                let recv = self.rvalue(recv, mc);
                return self.emit(OpKind::Unwrap, vec![recv], t, mc);
            }
            (Ty::Option(_) | Ty::Result(..), "is_some" | "is_none" | "is_ok" | "is_err", 0) => {
                let recv = self.rvalue(recv, mc);
                let tag = self.emit(OpKind::EnumTag, vec![recv], Ty::Int(IntTy::U32), mc);
                let (en, vn, idx) = match method.as_str() {
                    "is_some" => ("Option", "Some", 1),
                    "is_none" => ("Option", "None", 0),
                    "is_ok" => ("Result", "Ok", 0),
                    _ => ("Result", "Err", 1),
                };
                let c = Const::Tag { enum_name: en.into(), variant: vn.into(), index: idx };
                return self.emit(OpKind::Bin(BinOp::Eq), vec![tag, LVal::Const(c)], Ty::Bool, mc);
            }
            (Ty::Int(_) | Ty::Infer(_) | Ty::F64 | Ty::F32, m, _)
                if self.u.is_intlike(&recv_ty) || recv_ty == Ty::F64 || recv_ty == Ty::F32 =>
            {
                let recv = self.rvalue(recv, mc);
                match (m, nargs) {
                    ("wrapping_add", 1)
                    | ("wrapping_sub", 1)
                    | ("wrapping_mul", 1)
                    | ("wrapping_div", 1)
                    | ("wrapping_rem", 1)
                    | ("min", 1)
                    | ("max", 1) => {
                        let op = match m {
                            "wrapping_add" => BinOp::WrappingAdd,
                            "wrapping_sub" => BinOp::WrappingSub,
                            "wrapping_mul" => BinOp::WrappingMul,
                            "wrapping_div" => BinOp::WrappingDiv,
                            "wrapping_rem" => BinOp::WrappingRem,
                            "min" => BinOp::Min,
                            _ => BinOp::Max,
                        };
                        let a = self.expr(&mc.args[0]);
                        return self.arith(op, recv, a, mc);
                    }
                    ("checked_add" | "checked_sub" | "checked_mul" | "checked_div" | "checked_rem", 1)
                        if self.u.is_intlike(&recv_ty) =>
                    {
                        return self.checked_arith(mc, m, recv);
                    }
                    ("wrapping_neg", 0) | ("abs", 0) => {
                        let op = if m == "abs" { UnOp::Abs } else { UnOp::WrappingNeg };
                        let t = self.ty_of(&recv);
                        return self.emit(OpKind::Un(op), vec![recv], t, mc);
                    }
                    ("rem_euclid" | "div_euclid", 1) | ("signum" | "is_positive" | "is_negative", 0)
                        if self.u.is_intlike(&recv_ty) =>
                    {
                        // Desugared as the standard library defines them,
                        // on the operations above (the same panics: `/`
                        // and `%` by zero or overflowing come first).
                        let mut bound = vec![("__jitgen_recv".to_string(), recv)];
                        if nargs == 1 {
                            let a = self.expr(&mc.args[0]);
                            bound.push(("__jitgen_arg".to_string(), self.rvalue(a, &mc.args[0])));
                        }
                        let n = bound.len();
                        self.env.extend(bound);
                        let e: Expr = match m {
                            "rem_euclid" => syn::parse_quote!({
                                let __jitgen_r = __jitgen_recv % __jitgen_arg;
                                if __jitgen_r < 0 {
                                    if __jitgen_arg < 0 {
                                        __jitgen_r - __jitgen_arg
                                    } else {
                                        __jitgen_r + __jitgen_arg
                                    }
                                } else {
                                    __jitgen_r
                                }
                            }),
                            "div_euclid" => syn::parse_quote!({
                                let __jitgen_q = __jitgen_recv / __jitgen_arg;
                                if __jitgen_recv % __jitgen_arg < 0 {
                                    if __jitgen_arg > 0 {
                                        __jitgen_q - 1
                                    } else {
                                        __jitgen_q + 1
                                    }
                                } else {
                                    __jitgen_q
                                }
                            }),
                            "signum" => syn::parse_quote!(if __jitgen_recv > 0 {
                                1
                            } else if __jitgen_recv < 0 {
                                -1
                            } else {
                                0
                            }),
                            "is_positive" => syn::parse_quote!(__jitgen_recv > 0),
                            _ => syn::parse_quote!(__jitgen_recv < 0),
                        };
                        let r = self.expr(&e);
                        self.env.truncate(self.env.len() - n);
                        if m != "is_positive" && m != "is_negative" {
                            let t = self.ty_of(&r);
                            self.unify(&t, &recv_ty, mc.span());
                        }
                        return r;
                    }
                    _ => {}
                }
            }
            (Ty::Struct(n) | Ty::Enum(n), _, _) => {
                let q = format!("{n}::{method}");
                if self.m.fns.get(&q).is_some_and(|f| f.params.first().is_some_and(|p| p.name == "self")) {
                    let mut args = vec![recv];
                    args.extend(self.args(&mc.args));
                    let arg_exprs: Vec<&Expr> = mc.args.iter().collect();
                    return self.call_fn(&q, args, &arg_exprs, mc);
                }
            }
            (Ty::Error | Ty::Never, _, _) => return self.poison(mc.span()),
            (Ty::Infer(_), _, _) => {
                return self.unsupported(
                    mc,
                    &format!("calling `.{method}()` on a value whose type is not known yet"),
                    "add a type ascription to the binding",
                )
            }
            _ => {}
        }
        let shown = self.u.show(&recv_ty);
        if matches!(method.as_str(), "to_string" | "to_owned" | "push_str" | "as_str" | "chars") {
            self.error(mc.method.span(), format!("the method `{method}` on `{shown}`: {STRING_ADVICE}"));
            return self.poison(mc.span());
        }
        self.error(mc.method.span(), format!(
            "the method `{method}` on `{shown}` is not supported in a #[jit_interpreter] function; supported: methods of the module's impls, len/is_empty/push/pop/get/get_mut/first/first_mut/last/last_mut/swap/truncate/clear/insert/remove/extend_from_slice/reverse/split_off, HashMap new/insert/get/remove/contains_key, unwrap/expect/unwrap_or/ok_or/map/map_or/map_or_else/and_then/unwrap_or_else/ok_or_else/unwrap_or_default/copied/is_some/is_none/is_ok/is_err, wrapping_add/sub/mul/div/rem/neg, checked_add/sub/mul/div/rem, min, max, abs, rem_euclid, div_euclid, signum, is_positive, is_negative"
        ));
        self.poison(mc.span())
    }

    fn try_expr(&mut self, t: &syn::ExprTry) -> LVal {
        if is_write_macro(&t.expr) {
            // Writing into a `Vec<u8>` cannot fail (see `formatted`).
            return self.expr(&t.expr);
        }
        let v = self.expr(&t.expr);
        if let LVal::Sum { ty, tag, payloads } = v {
            return self.try_sum(t, ty, *tag, payloads);
        }
        let v = self.rvalue(v, &t.expr);
        let ret = self.u.shallow(&self.f.ret);
        let span = t.question_token.span;
        let have = self.shallow_ty(&v);
        let Some((en, fail_variant, fail_idx, _)) = self.try_shape(&have, span) else { return self.poison(span) };
        let (payload, ok_variant) = match have {
            Ty::Result(ok, _) => (*ok, "Ok"),
            Ty::Option(inner) => (*inner, "Some"),
            _ => (Ty::Error, "Some"),
        };
        let tag = self.emit(OpKind::EnumTag, vec![v.clone()], Ty::Int(IntTy::U32), t);
        let c = Const::Tag { enum_name: en.into(), variant: fail_variant.into(), index: fail_idx };
        let is_fail = self.emit(OpKind::Bin(BinOp::Eq), vec![tag, LVal::Const(c)], Ty::Bool, t);
        let (fail_b, ok_b) = self.branch(is_fail);
        self.resume(fail_b);
        let mut args = vec![];
        if en == "Result" {
            let e_ty = match &ret {
                Ty::Result(_, e) => (**e).clone(),
                _ => Ty::Error,
            };
            args.push(self.emit(OpKind::EnumField { variant: "Err".into(), index: 0 }, vec![v.clone()], e_ty, t));
        }
        let r = self.emit(
            OpKind::MakeEnum { enum_name: en.into(), variant: fail_variant.into(), index: fail_idx },
            args,
            ret,
            t,
        );
        self.return_with(r, span);
        self.resume(ok_b);
        self.emit(OpKind::EnumField { variant: ok_variant.into(), index: 0 }, vec![v], payload, t)
    }

    /// What `?` on a value of type `have` does in the current function: the
    /// enum, its failing variant and index, and the index of the other;
    /// `None` (after an error, unless the type is already one) when `?`
    /// does not apply. No `From` conversion: error types must be the same.
    fn try_shape(&mut self, have: &Ty, span: Span) -> Option<(&'static str, &'static str, u32, u32)> {
        let ret = self.u.shallow(&self.f.ret);
        match (have, &ret) {
            (Ty::Result(_, err), Ty::Result(_, rerr)) => {
                let (err, rerr) = ((**err).clone(), (**rerr).clone());
                self.unify(&rerr, &err, span);
                Some(("Result", "Err", 1, 0))
            }
            (Ty::Option(_), Ty::Option(_)) => Some(("Option", "None", 0, 1)),
            // After an error (in the value, or in the function's result
            // type): nothing more to say.
            (Ty::Error | Ty::Never, _) | (_, Ty::Error) => None,
            (have, _) => {
                self.error(span, format!(
                    "`?` is supported on `Result` in a function returning `Result` with the same error type, and on `Option` in a function returning `Option`; here it is applied to `{}` in a function returning `{}`",
                    self.u.show(have),
                    self.u.show(&ret)
                ));
                None
            }
        }
    }

    /// `?` on an `Option` or `Result` holding a `&mut`: returns on `None`
    /// or `Err`, else gives the reference.
    fn try_sum(&mut self, t: &syn::ExprTry, ty: Ty, tag: LVal, payloads: Vec<Option<LVal>>) -> LVal {
        let ret = self.u.shallow(&self.f.ret);
        let span = t.question_token.span;
        let have = self.u.shallow(&ty);
        let Some((en, fail_vn, fail_idx, ok_idx)) = self.try_shape(&have, span) else { return self.poison(span) };
        let fails = self.is_variant(tag, en, fail_vn, fail_idx, t);
        if fails != LVal::Const(Const::Bool(false)) {
            let (fail_b, ok_b) = self.branch(fails);
            self.resume(fail_b);
            let args = match (en, payloads.get(1).cloned().flatten()) {
                ("Result", Some(e)) => vec![e],
                ("Result", None) => vec![LVal::Const(Const::Unit)],
                _ => vec![],
            };
            let r = self.emit(
                OpKind::MakeEnum { enum_name: en.into(), variant: fail_vn.into(), index: fail_idx },
                args,
                ret,
                t,
            );
            self.return_with(r, span);
            self.resume(ok_b);
        }
        match payloads.get(ok_idx as usize).cloned().flatten() {
            Some(p) => p,
            None => self.poison(span),
        }
    }

    /// Whether the tag `tag` is the variant `idx`: a `bool`, folded when the
    /// tag is known.
    fn is_variant(&mut self, tag: LVal, en: &str, vn: &str, idx: u32, src: &dyn ToTokens) -> LVal {
        if let LVal::Const(Const::Tag { index, .. }) = &tag {
            return LVal::Const(Const::Bool(*index == idx));
        }
        let c = Const::Tag { enum_name: en.into(), variant: vn.into(), index: idx };
        self.emit(OpKind::Bin(BinOp::Eq), vec![tag, LVal::Const(c)], Ty::Bool, src)
    }

    /// Methods of an `Option` or `Result` holding a `&mut` to a value.
    fn sum_method(&mut self, mc: &syn::ExprMethodCall, ty: Ty, tag: LVal, payloads: Vec<Option<LVal>>) -> LVal {
        let method = mc.method.to_string();
        let is_option = matches!(self.u.shallow(&ty), Ty::Option(_));
        let (en, ok_vn, ok_idx) = if is_option { ("Option", "Some", 1) } else { ("Result", "Ok", 0) };
        match (method.as_str(), mc.args.len()) {
            ("unwrap" | "expect", _) => {
                let ok = self.is_variant(tag, en, ok_vn, ok_idx, mc);
                if ok != LVal::Const(Const::Bool(true)) {
                    let (t, f) = self.branch(ok);
                    self.resume(f);
                    let what = if is_option { "a `None` value" } else { "an `Err` value" };
                    self.set_exit(LExit::Abort(format!("called `{method}` on {what}")));
                    self.resume(t);
                }
                match payloads.get(ok_idx as usize).cloned().flatten() {
                    Some(p) => p,
                    None => self.never(mc.span()),
                }
            }
            ("ok_or", 1) if is_option => {
                let e = self.expr(&mc.args[0]);
                let e = self.rvalue(e, &mc.args[0]);
                let none = self.is_variant(tag, "Option", "None", 0, mc);
                let tag = match none {
                    LVal::Const(Const::Bool(b)) => LVal::Const(Const::Tag {
                        enum_name: "Result".into(),
                        variant: if b { "Err" } else { "Ok" }.into(),
                        index: u32::from(b),
                    }),
                    none => self.emit(OpKind::Cast, vec![none], Ty::Int(IntTy::U32), mc),
                };
                let inner = match self.u.shallow(&ty) {
                    Ty::Option(t) => *t,
                    t => t,
                };
                let ty = Ty::Result(Box::new(inner), Box::new(self.ty_of(&e)));
                LVal::Sum { ty, tag: Box::new(tag), payloads: vec![payloads.get(1).cloned().flatten(), Some(e)] }
            }
            ("is_some" | "is_none" | "is_ok" | "is_err", 0) => {
                let (en, vn, idx) = match method.as_str() {
                    "is_some" => ("Option", "Some", 1),
                    "is_none" => ("Option", "None", 0),
                    "is_ok" => ("Result", "Ok", 0),
                    _ => ("Result", "Err", 1),
                };
                self.is_variant(tag, en, vn, idx, mc)
            }
            _ => self.unsupported(
                mc,
                &format!("`.{method}()` on an `Option` or `Result` holding a `&mut`"),
                "use `?`, `unwrap`, `expect`, `ok_or`, `is_some`, `match` or `if let`",
            ),
        }
    }

    /// A method of `String`, as one residual call of Rust's own: appends
    /// as `write!` (see `appended`), copies as `format!`, and `len`,
    /// `is_empty` and `clear` as calls of `String`'s methods. The receiver
    /// is named again in the desugaring: it was evaluated as a place, which
    /// has no effect.
    fn string_method(&mut self, mc: &syn::ExprMethodCall) -> LVal {
        let method = mc.method.to_string();
        let r = &*mc.receiver;
        let span = mc.span();
        let e: Expr = match (method.as_str(), mc.args.len()) {
            ("push", 1) => {
                let a = &mc.args[0];
                syn::parse_quote_spanned!(span=> write!(#r, "{}", #a))
            }
            ("push_str", 1) => appended(r, &mc.args[0]),
            ("to_string" | "to_owned" | "clone", 0) => syn::parse_quote_spanned!(span=> format!("{}", #r)),
            ("as_str", 0) => {
                // A `&str` of the `String`: a reference to it, once.
                let v = self.expr(r);
                if matches!(self.shallow_ty(&v), Ty::Ref { .. }) {
                    return v;
                }
                syn::parse_quote_spanned!(span=> &(#r))
            }
            ("len" | "is_empty" | "clear", 0) => {
                let (e, ty): (Expr, Ty) = match method.as_str() {
                    "len" => (syn::parse_quote_spanned!(span=> &(#r)), Ty::Int(IntTy::Usize)),
                    "is_empty" => (syn::parse_quote_spanned!(span=> &(#r)), Ty::Bool),
                    _ => (syn::parse_quote_spanned!(span=> &mut (#r)), Ty::Unit),
                };
                let a = self.expr(&e);
                let a = self.rvalue(a, &e);
                return self.emit(OpKind::CallOpaque(format!("std::string::String::{method}")), vec![a], ty, mc);
            }
            _ => {
                self.error(mc.method.span(), format!("the method `{method}` on `String`: {STRING_ADVICE}"));
                return self.poison(span);
            }
        };
        self.expr(&e)
    }

    fn macro_expr(&mut self, mac: &syn::Macro) -> LVal {
        let name = mac.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
        match name.as_str() {
            "hint" => self.hint(mac),
            "vec" => self.vec_macro(mac),
            "print" | "println" | "eprint" | "eprintln" => self.formatted(mac, &name, false),
            "write" | "writeln" => self.formatted(mac, &name, true),
            "format" => self.formatted(mac, &name, false),
            "assert" | "assert_eq" | "assert_ne" => self.assert_macro(mac, &name),
            "panic" | "unreachable" | "todo" | "unimplemented" => {
                let msg = format!("{name}!({})", mac.tokens);
                let b = self.cur_block();
                self.cur = Some(b);
                self.set_exit(LExit::Abort(msg));
                self.never(mac.span())
            }
            _ => {
                if let Some(span) = hint_inside(mac.tokens.clone()) {
                    self.error(
                        span,
                        format!("`hint!` inside `{name}!` is invisible to jitgen: bind the hinted value with `let` first, then use the binding"),
                    );
                }
                self.unsupported(
                    mac,
                    &format!("the macro `{name}!`"),
                    "supported are `hint!`, `vec!`, `print!`, `println!`, `eprint!`, `eprintln!`, `format!`, `write!` and `writeln!` into a `Vec<u8>` or a `String`, `assert!`, `assert_eq!`, `assert_ne!` and `panic!`; move other effects into a #[jit_opaque] function",
                )
            }
        }
    }

    /// `assert!(c)`, `assert_eq!(a, b)`, `assert_ne!(a, b)`: a test that
    /// panics (the message, if any, is not formatted).
    fn assert_macro(&mut self, mac: &syn::Macro, name: &str) -> LVal {
        let parsed = mac.parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated);
        let parts: Vec<Expr> = parsed.map(|p| p.into_iter().collect()).unwrap_or_default();
        let cond: Expr = match (name, parts.as_slice()) {
            ("assert", [c, ..]) => c.clone(),
            ("assert_eq", [a, b, ..]) => syn::parse_quote!((#a) == (#b)),
            ("assert_ne", [a, b, ..]) => syn::parse_quote!((#a) != (#b)),
            _ => return self.unsupported(mac, &format!("this `{name}!`"), "give it a condition (or two operands)"),
        };
        let c = self.cond(&cond);
        let (ok, fail) = self.branch(c);
        self.resume(fail);
        self.set_exit(LExit::Abort(format!("{name}!({})", mac.tokens)));
        self.resume(ok);
        LVal::Const(Const::Unit)
    }

    /// `println!("{} {x}", a)`: its arguments evaluated in order (captured
    /// names `{x}` last), then one residual effect that formats them.
    /// `println!("{} {x}", a)` (and `print!`, `eprint!`, `eprintln!`), or
    /// with `has_dest` `write!(out, "{}", x)` and `writeln!` into a `Vec<u8>`
    /// (a field, a local, or behind a `&mut`), given first: its arguments
    /// evaluated in order (captured names `{x}` last), then one residual
    /// effect that formats them. Writing into a `Vec` cannot fail, so its
    /// `io::Result` is `Ok(())`: `.unwrap()`, `.expect(..)`, `?`, `let _ =`
    /// and a statement all take the write alone (see `is_write_macro`).
    fn formatted(&mut self, mac: &syn::Macro, name: &str, has_dest: bool) -> LVal {
        let parsed = mac.parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated);
        let Ok(parts) = parsed else {
            return self.unsupported(
                mac,
                &format!("this `{name}!`"),
                "write a format string literal, then the arguments",
            );
        };
        let mut parts = parts.into_iter();
        let mut args = vec![];
        let mut names = vec![];
        if has_dest {
            let Some(dest) = parts.next() else {
                return self.unsupported(mac, &format!("this `{name}!`"), "name the `Vec<u8>` to write into first");
            };
            // `write!(v, ..)` borrows `v` mutably, unless it is a `&mut`.
            let d = self.expr(&dest);
            let d = self.rvalue(d, &dest);
            let d = match self.u.shallow(&self.ty_of(&d)) {
                Ty::Ref { mutable: true, .. } => d,
                _ => {
                    let e: Expr = syn::parse_quote_spanned!(dest.span()=> &mut (#dest));
                    let d = self.expr(&e);
                    self.rvalue(d, &e)
                }
            };
            let want = Ty::Ref { mutable: true, to: Box::new(Ty::Vec(Box::new(Ty::Int(IntTy::U8)))) };
            let have = self.ty_of(&d);
            let into_string = matches!(self.u.shallow(&have), Ty::Ref { to, .. } if self.u.shallow(&to) == Ty::Str);
            if !into_string && self.u.unify(&want, &have).is_err() {
                return self.unsupported(
                    &dest,
                    &format!("`{name}!` into this destination"),
                    "write into a `Vec<u8>` or a `String` (an `io::Write` is not supported)",
                );
            }
            args.push(d);
            names.push(None);
        }
        let template = match parts.next() {
            None => String::new(),
            Some(Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. })) => s.value(),
            Some(other) => {
                return self.unsupported(&other, "a format string that is not a literal", "write the string literally");
            }
        };
        for p in parts {
            let (n, e) = match p {
                Expr::Assign(a) => match &*a.left {
                    Expr::Path(path) if path.path.get_ident().is_some() => {
                        (path.path.get_ident().map(|i| i.to_string()), (*a.right).clone())
                    }
                    _ => (None, Expr::Assign(a)),
                },
                e => (None, e),
            };
            let v = self.expr(&e);
            let v = self.rvalue(v, &e);
            args.push(v);
            names.push(n);
        }
        // Names the format string captures from the scope: `{x}`, `{x:?}`,
        // and widths or precisions `{:w$}`.
        for id in captured_names(&template) {
            if names.iter().any(|n| n.as_deref() == Some(id.as_str())) {
                continue;
            }
            let Ok(ident) = syn::parse_str::<syn::Ident>(&id) else { continue };
            let e: Expr = syn::parse_quote_spanned!(mac.delimiter.span().open()=> #ident);
            let v = self.expr(&e);
            let v = self.rvalue(v, &e);
            args.push(v);
            names.push(Some(id));
        }
        let ty = if name == "format" { Ty::Str } else { Ty::Unit };
        self.emit(OpKind::Format { mac: name.to_string(), template, names }, args, ty, mac)
    }

    fn hint(&mut self, mac: &syn::Macro) -> LVal {
        let parsed = mac.parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated);
        let args = match parsed {
            Ok(a) => a,
            Err(e) => {
                self.errors.push(e);
                return self.poison(mac.span());
            }
        };
        let flag_of = |e: &Expr| match e {
            Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
            _ => None,
        };
        match args.len() {
            1 if flag_of(&args[0]).as_deref() == Some("global_merge_point") => {
                // A `&mut` binding in scope here would borrow what the portal
                // hands to compiled code at this point.
                let refs: Vec<String> = self
                    .env
                    .iter()
                    .filter(|(n, v)| matches!(v, LVal::Ref(_) | LVal::Sum { .. }) && !n.starts_with("__jitgen"))
                    .map(|(n, _)| format!("`{n}`"))
                    .collect();
                if !refs.is_empty() {
                    self.error(
                        mac.span(),
                        format!(
                            "the `&mut` reference {} is in scope at `hint!(global_merge_point)`: take it inside the loop, after the merge point, where it is used",
                            refs.join(", ")
                        ),
                    );
                }
                self.emit(OpKind::GlobalMergePoint, vec![], Ty::Unit, mac)
            }
            2 => {
                let kind = match flag_of(&args[1]).as_deref() {
                    Some("concrete") => HintKind::Concrete,
                    Some("promote") => HintKind::Promote,
                    Some("deepfreeze") => HintKind::Deepfreeze,
                    Some("variable") => HintKind::Variable,
                    _ => {
                        let msg = format!("unknown hint `{}`: expected one of {FLAGS}", source_of(&args[1]));
                        self.error(args[1].span(), msg);
                        return self.expr(&args[0]);
                    }
                };
                let v = self.expr(&args[0]);
                let t = self.ty_of(&v);
                self.emit(OpKind::Hint(kind), vec![v], t, mac)
            }
            _ => {
                self.error(mac.span(), format!("`hint!` takes an expression and a flag: {FLAGS}"));
                self.poison(mac.span())
            }
        }
    }

    fn vec_macro(&mut self, mac: &syn::Macro) -> LVal {
        struct Repeat(Expr, Expr);
        impl syn::parse::Parse for Repeat {
            fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
                let e: Expr = input.parse()?;
                input.parse::<Token![;]>()?;
                Ok(Repeat(e, input.parse()?))
            }
        }
        if let Ok(Repeat(elem, n)) = mac.parse_body::<Repeat>() {
            let v = self.expr(&elem);
            let c = self.expr(&n);
            let ct = self.ty_of(&c);
            self.unify(&Ty::Int(IntTy::Usize), &ct, n.span());
            let t = Ty::Vec(Box::new(self.ty_of(&v)));
            return self.emit(OpKind::NewVecRepeat, vec![v, c], t, mac);
        }
        match mac.parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated) {
            Ok(elems) => {
                let et = self.u.fresh();
                let mut args = vec![];
                for e in &elems {
                    let v = self.expr(e);
                    let t = self.ty_of(&v);
                    self.unify(&et, &t, e.span());
                    args.push(v);
                }
                self.emit(OpKind::NewVec, args, Ty::Vec(Box::new(et)), mac)
            }
            Err(e) => {
                self.errors.push(e);
                self.poison(mac.span())
            }
        }
    }

    // ----- control flow -----------------------------------------------------------

    fn cond(&mut self, c: &Expr) -> LVal {
        let v = self.expr(c);
        let v = self.rvalue(v, c);
        let t = self.ty_of(&v);
        self.unify(&Ty::Bool, &t, c.span());
        v
    }

    fn if_expr(&mut self, i: &syn::ExprIf) -> LVal {
        let depth = self.env.len();
        let rt = self.u.fresh();
        let join = self.new_join(depth, Some(rt.clone()));
        let else_b;
        if let Expr::Let(l) = &*i.cond {
            let v = self.expr(&l.expr);
            let v = self.rvalue(v, &l.expr);
            let fail = self.new_join(depth, None);
            let mut binds = vec![];
            self.pattern(v, &l.pat, Some(fail), &mut binds);
            for (n, v) in binds {
                self.bind(n, v, &l.pat);
            }
            let tv = self.block(&i.then_branch);
            self.env.truncate(depth);
            self.finish_arm(join, &rt, tv, i.then_branch.span());
            else_b = fail;
            self.enter(else_b);
        } else {
            let c = self.cond(&i.cond);
            let (t, f) = self.branch(c);
            self.resume(t);
            let tv = self.block(&i.then_branch);
            self.finish_arm(join, &rt, tv, i.then_branch.span());
            self.resume(f);
        }
        match &i.else_branch {
            Some((_, e)) => {
                let ev = self.expr(e);
                self.finish_arm(join, &rt, ev, e.span());
            }
            None => {
                self.unify(&rt, &Ty::Unit, i.then_branch.span());
                self.jump(join, Some(LVal::Const(Const::Unit)));
            }
        }
        match self.enter(join) {
            Some(v) => v,
            None => self.never(i.span()),
        }
    }

    fn finish_arm(&mut self, join: usize, rt: &Ty, v: LVal, span: Span) {
        if self.cur.is_some() {
            let t = self.ty_of(&v);
            self.unify(rt, &t, span);
            self.jump(join, Some(v));
        }
    }

    fn label_of(l: &Option<syn::Label>) -> Option<String> {
        l.as_ref().map(|l| l.name.ident.to_string())
    }

    fn find_loop(&mut self, label: Option<&str>, span: Span) -> Option<usize> {
        let found = match label {
            None => self.loops.iter().rposition(|c| !c.block),
            Some(l) => self.loops.iter().rposition(|c| c.label.as_deref() == Some(l)),
        };
        if found.is_none() {
            self.error(span, "`break`/`continue` outside of a loop (or with an unknown label)");
        }
        found
    }

    fn break_expr(&mut self, b: &syn::ExprBreak) -> LVal {
        let label = b.label.as_ref().map(|l| l.ident.to_string());
        let Some(i) = self.find_loop(label.as_deref(), b.span()) else {
            return self.poison(b.span());
        };
        let v = b.expr.as_ref().map(|e| self.expr(e));
        let (after, rt) = (self.loops[i].after, self.loops[i].result_ty.clone());
        match (&v, rt) {
            (Some(v), Some(rt)) => {
                let t = self.ty_of(v);
                self.unify(&rt, &t, b.span());
            }
            (Some(_), None) => {
                self.error(b.span(), "`break` with a value is only allowed in `loop`");
            }
            (None, Some(rt)) => self.unify(&rt, &Ty::Unit, b.span()),
            (None, None) => {}
        }
        self.jump(after, v);
        self.never(b.span())
    }

    /// `'a: { .. break 'a v; .. }`: the block's value, or the value of a
    /// `break 'a` inside it, flows to the join after it.
    fn labeled_block(&mut self, label: &syn::Label, body: &syn::Block) -> LVal {
        let depth = self.env.len();
        let rt = self.u.fresh();
        let after = self.new_join(depth, Some(rt.clone()));
        let ctx = LoopCtx {
            label: Some(label.name.ident.to_string()),
            header: after,
            after,
            result_ty: Some(rt.clone()),
            block: true,
        };
        self.loops.push(ctx);
        let v = self.block(body);
        self.env.truncate(depth);
        self.finish_arm(after, &rt, v, body.span());
        self.loops.pop();
        match self.enter(after) {
            Some(v) => v,
            None => self.never(body.span()),
        }
    }

    fn loop_body(&mut self, ctx: LoopCtx, body: &syn::Block) {
        let header = ctx.header;
        self.loops.push(ctx);
        let depth = self.env.len();
        self.block(body);
        self.env.truncate(depth);
        self.jump(header, None);
        self.loops.pop();
    }

    fn while_expr(&mut self, w: &syn::ExprWhile) -> LVal {
        let depth = self.env.len();
        let header = self.new_join(depth, None);
        let after = self.new_join(depth, None);
        self.jump(header, None);
        self.enter(header);
        if let Expr::Let(l) = &*w.cond {
            let v = self.expr(&l.expr);
            let v = self.rvalue(v, &l.expr);
            let mut binds = vec![];
            self.pattern(v, &l.pat, Some(after), &mut binds);
            for (n, v) in binds {
                self.bind(n, v, &l.pat);
            }
        } else {
            let c = self.cond(&w.cond);
            let (body, exit) = self.branch(c);
            self.resume(exit);
            self.jump(after, None);
            self.resume(body);
        }
        self.loop_body(
            LoopCtx { label: Self::label_of(&w.label), header, after, result_ty: None, block: false },
            &w.body,
        );
        self.env.truncate(depth);
        self.enter(after);
        LVal::Const(Const::Unit)
    }

    fn loop_expr(&mut self, l: &syn::ExprLoop) -> LVal {
        let depth = self.env.len();
        let rt = self.u.fresh();
        let header = self.new_join(depth, None);
        let after = self.new_join(depth, Some(rt.clone()));
        self.jump(header, None);
        self.enter(header);
        self.loop_body(
            LoopCtx { label: Self::label_of(&l.label), header, after, result_ty: Some(rt), block: false },
            &l.body,
        );
        match self.enter(after) {
            Some(v) => v,
            None => self.never(l.span()),
        }
    }

    fn for_expr(&mut self, f: &syn::ExprForLoop) -> LVal {
        let Expr::Range(r) = &*f.expr else {
            return self.unsupported(
                &f.expr,
                "`for` over anything but an integer range",
                "iterate over indices: `for i in 0..v.len()`",
            );
        };
        let (Some(start), Some(end)) = (&r.start, &r.end) else {
            return self.unsupported(r, "an open range in `for`", "");
        };
        let outer = self.env.len();
        let s = self.expr(start);
        let s = self.rvalue(s, start);
        let e = self.expr(end);
        let e = self.rvalue(e, end);
        let (ts, te) = (self.ty_of(&s), self.ty_of(&e));
        self.unify(&ts, &te, r.span());
        // The hidden counter is a binding of its own, so that the loop header joins it.
        let counter = format!("__for{}", self.env.len());
        let s = match s {
            LVal::Var(_) => s,
            c => self.named(counter.clone(), c, start),
        };
        self.env.push((counter, s));
        let header = self.new_join(self.env.len(), None);
        let after = self.new_join(outer, None);
        self.jump(header, None);
        self.enter(header);
        let i = self.env[outer].1.clone();
        let op = if matches!(r.limits, syn::RangeLimits::Closed(_)) { BinOp::Le } else { BinOp::Lt };
        let c = self.arith(op, i.clone(), e, &f.expr);
        let (body, exit) = self.branch(c);
        self.resume(exit);
        self.jump(after, None);
        self.resume(body);
        let one = LVal::Int(1, ts.clone());
        let next = self.emit(OpKind::Bin(BinOp::Add), vec![i.clone(), one], ts, &f.expr);
        self.env[outer].1 = next;
        match &*f.pat {
            Pat::Ident(pi) => self.env.push((pi.ident.to_string(), i)),
            Pat::Wild(_) => {}
            p => {
                self.unsupported(p, "this loop pattern", "bind a single name");
            }
        }
        self.loop_body(
            LoopCtx { label: Self::label_of(&f.label), header, after, result_ty: None, block: false },
            &f.body,
        );
        self.env.truncate(outer);
        self.enter(after);
        LVal::Const(Const::Unit)
    }

    fn match_expr(&mut self, m: &syn::ExprMatch) -> LVal {
        let v = self.expr(&m.expr);
        let v = self.rvalue(v, &m.expr);
        let depth = self.env.len();
        let rt = self.u.fresh();
        let join = self.new_join(depth, Some(rt.clone()));
        let n = m.arms.len();
        for (k, arm) in m.arms.iter().enumerate() {
            let (pat, guard) = match &arm.pat {
                Pat::Guard(g) => (&*g.pat, Some(&g.guard)),
                p => (p, None),
            };
            let last = k + 1 == n;
            let fail = if last && guard.is_none() {
                // Rust checked exhaustiveness: whatever reaches the last
                // unguarded arm matches it.
                None
            } else {
                let f = self.new_join(depth, None);
                if last {
                    self.blocks[f].exit = Some(LExit::Abort("no match arm matched".into()));
                }
                Some(f)
            };
            let mut binds = vec![];
            if self.cur.is_some() {
                self.pattern(v.clone(), pat, fail, &mut binds);
            }
            for (name, val) in binds {
                self.bind(name, val, pat);
            }
            if let (Some(g), Some(f)) = (guard, fail) {
                let c = self.cond(g);
                self.test(c, f);
            }
            let av = self.expr(&arm.body);
            self.env.truncate(depth);
            self.finish_arm(join, &rt, av, arm.body.span());
            match fail {
                Some(f) if !last => {
                    self.enter(f);
                }
                _ => self.cur = None,
            }
        }
        match self.enter(join) {
            Some(v) => v,
            None => self.never(m.span()),
        }
    }

    /// Emits the tests of a pattern against `v`; where it fails, jumps to the
    /// join `fail` (no tests when `fail` is `None`: the pattern is known to match).
    /// Bindings are collected in `binds`.
    fn pattern(&mut self, v: LVal, p: &Pat, fail: Option<usize>, binds: &mut Vec<(String, LVal)>) {
        let ty = self.deref_ty(&self.ty_of(&v));
        match p {
            Pat::Wild(_) | Pat::Rest(_) => {}
            Pat::Paren(pp) => self.pattern(v, &pp.pat, fail, binds),
            Pat::Reference(r) => self.pattern(v, &r.pat, fail, binds),
            Pat::Ident(pi) => {
                let name = pi.ident.to_string();
                if pi.subpat.is_none()
                    && (self.m.consts.contains_key(&name) || name == "None" || self.unit_variant_of(&ty, &name))
                {
                    let path: syn::Path = pi.ident.clone().into();
                    self.path_pattern(v, &path, p, fail);
                    return;
                }
                if let Some((_, sub)) = &pi.subpat {
                    self.pattern(v.clone(), sub, fail, binds);
                }
                binds.push((name, v));
            }
            Pat::Lit(l) => {
                let c = self.lit(&l.lit);
                if let Some(f) = fail {
                    let eq = self.arith(BinOp::Eq, v, c, p);
                    self.test(eq, f);
                }
            }
            Pat::Range(r) => {
                let Some(f) = fail else { return };
                if let Some(lo) = &r.start {
                    let lo = self.expr(lo);
                    let c = self.arith(BinOp::Ge, v.clone(), lo, p);
                    self.test(c, f);
                }
                if let Some(hi) = &r.end {
                    let hi = self.expr(hi);
                    let op = if matches!(r.limits, syn::RangeLimits::Closed(_)) { BinOp::Le } else { BinOp::Lt };
                    let c = self.arith(op, v, hi, p);
                    self.test(c, f);
                }
            }
            Pat::Path(pp) => self.path_pattern(v, &pp.path, p, fail),
            Pat::TupleStruct(ts) => {
                let Some((en, vn, idx, fields)) = self.pattern_variant(&ty, &ts.path, p) else { return };
                self.tag_test(v.clone(), &en, &vn, idx, fail, p);
                let elems: Vec<&Pat> = ts.elems.iter().collect();
                if elems.len() != fields.len() && !elems.iter().any(|e| matches!(e, Pat::Rest(_))) {
                    self.error(p.span(), format!("`{vn}` has {} payload fields", fields.len()));
                    return;
                }
                for (i, sp) in elems.iter().enumerate() {
                    if matches!(sp, Pat::Wild(_) | Pat::Rest(_)) {
                        continue;
                    }
                    if let LVal::Sum { payloads, .. } = &v {
                        let p = payloads.get(idx as usize).cloned().flatten();
                        let p = p.unwrap_or_else(|| LVal::Var(self.new_var(None, Ty::Never, sp.span())));
                        self.pattern(p, sp, fail, binds);
                        continue;
                    }
                    let fv = self.emit(
                        OpKind::EnumField { variant: vn.clone(), index: i as u32 },
                        vec![v.clone()],
                        fields[i].1.clone(),
                        *sp,
                    );
                    self.pattern(fv, sp, fail, binds);
                }
            }
            Pat::Struct(ps) => {
                if ps.path.segments.len() == 1
                    && self.m.structs.contains_key(&self.resolve_self(&ps.path.segments[0].ident.to_string()))
                {
                    for fp in &ps.fields {
                        let Some((name, ft)) = self.field_ty(&v, &fp.member, fp) else { continue };
                        let fv = self.emit(OpKind::GetField(name), vec![v.clone()], ft, fp);
                        self.pattern(fv, &fp.pat, fail, binds);
                    }
                    return;
                }
                let Some((en, vn, idx, fields)) = self.pattern_variant(&ty, &ps.path, p) else { return };
                self.tag_test(v.clone(), &en, &vn, idx, fail, p);
                for fp in &ps.fields {
                    let fname = match &fp.member {
                        syn::Member::Named(i) => i.to_string(),
                        syn::Member::Unnamed(i) => i.index.to_string(),
                    };
                    let Some(i) = fields.iter().position(|(n, _)| *n == fname) else {
                        self.error(fp.member.span(), format!("`{vn}` has no field `{fname}`"));
                        continue;
                    };
                    if matches!(&*fp.pat, Pat::Wild(_)) {
                        continue;
                    }
                    let fv = self.emit(
                        OpKind::EnumField { variant: vn.clone(), index: i as u32 },
                        vec![v.clone()],
                        fields[i].1.clone(),
                        fp,
                    );
                    self.pattern(fv, &fp.pat, fail, binds);
                }
            }
            Pat::Or(o) => {
                let Some(f) = fail else { return };
                let depth = self.blocks[f].join_depth.unwrap_or(0);
                let succ = self.new_join(depth, None);
                let n = o.cases.len();
                for (i, case) in o.cases.iter().enumerate() {
                    let next = if i + 1 == n { f } else { self.new_join(depth, None) };
                    let mut inner = vec![];
                    self.pattern(v.clone(), case, Some(next), &mut inner);
                    if !inner.is_empty() {
                        self.error(case.span(), "bindings inside `|` patterns are not supported; split the arm");
                    }
                    self.jump(succ, None);
                    if i + 1 < n {
                        self.enter(next);
                    }
                }
                self.enter(succ);
            }
            Pat::Guard(g) => {
                self.unsupported(g, "a guard in this position", "");
            }
            Pat::Tuple(pt) => {
                let LVal::Tuple(items) = v else {
                    self.error(p.span(), format!("a tuple pattern against a value of type `{}`", self.u.show(&ty)));
                    return;
                };
                let rest = pt.elems.iter().position(|e| matches!(e, Pat::Rest(_)));
                let n = pt.elems.len();
                if rest.is_none() && n != items.len() || rest.is_some() && n - 1 > items.len() {
                    self.error(p.span(), format!("this pattern has {n} components, the tuple {}", items.len()));
                    return;
                }
                for (k, sp) in pt.elems.iter().enumerate() {
                    let item = match rest {
                        Some(r) if k == r => continue,
                        Some(r) if k > r => &items[items.len() - (n - k)],
                        _ => &items[k],
                    };
                    self.pattern(item.clone(), sp, fail, binds);
                }
            }
            other => {
                self.unsupported(
                    other,
                    "this pattern",
                    "match on integers, consts, ranges, `_`, bindings and enum variants",
                );
            }
        }
    }

    fn unit_variant_of(&self, ty: &Ty, name: &str) -> bool {
        matches!(ty, Ty::Enum(e) if self.variant(e, name).is_some_and(|(_, f)| f.is_empty()))
    }

    /// Resolves the variant a pattern path names: module enums, `Some`/`None`/`Ok`/`Err`.
    fn pattern_variant(
        &mut self,
        ty: &Ty,
        path: &syn::Path,
        p: &Pat,
    ) -> Option<(String, String, u32, Vec<(String, Ty)>)> {
        let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        let vn = segs.last()?.clone();
        match (ty, vn.as_str()) {
            (Ty::Option(t), "Some") => return Some(("Option".into(), vn, 1, vec![("0".into(), (**t).clone())])),
            (Ty::Option(_), "None") => return Some(("Option".into(), vn, 0, vec![])),
            (Ty::Result(t, _), "Ok") => return Some(("Result".into(), vn, 0, vec![("0".into(), (**t).clone())])),
            (Ty::Result(_, e), "Err") => return Some(("Result".into(), vn, 1, vec![("0".into(), (**e).clone())])),
            _ => {}
        }
        let en = if segs.len() >= 2 {
            self.resolve_self(&segs[segs.len() - 2])
        } else if let Ty::Enum(e) = ty {
            e.clone()
        } else {
            String::new()
        };
        match self.variant(&en, &vn) {
            Some((idx, fields)) => Some((en, vn, idx, fields)),
            None => {
                if !matches!(ty, Ty::Error | Ty::Never) {
                    self.unsupported(
                        p,
                        &format!("the pattern `{}` on a value of type `{}`", source_of(path), self.u.show(ty)),
                        "",
                    );
                }
                None
            }
        }
    }

    fn tag_test(&mut self, v: LVal, en: &str, vn: &str, idx: u32, fail: Option<usize>, src: &dyn ToTokens) {
        let Some(f) = fail else { return };
        let tag = match v {
            LVal::Sum { tag, .. } => *tag,
            v => self.emit(OpKind::EnumTag, vec![v], Ty::Int(IntTy::U32), src),
        };
        let eq = self.is_variant(tag, en, vn, idx, src);
        if eq != LVal::Const(Const::Bool(true)) {
            self.test(eq, f);
        }
    }

    fn path_pattern(&mut self, v: LVal, path: &syn::Path, p: &Pat, fail: Option<usize>) {
        let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        let qualified = if segs.len() >= 2 {
            format!("{}::{}", self.resolve_self(&segs[segs.len() - 2]), segs[segs.len() - 1])
        } else {
            segs[0].clone()
        };
        if let Some(c) = self.m.consts.get(&qualified).cloned() {
            if let Some(f) = fail {
                let eq = self.arith(BinOp::Eq, v, LVal::Const(c), p);
                self.test(eq, f);
            }
            return;
        }
        let ty = self.deref_ty(&self.ty_of(&v));
        if let Some((en, vn, idx, _)) = self.pattern_variant(&ty, path, p) {
            self.tag_test(v, &en, &vn, idx, fail, p);
        }
    }

    // ----- finishing ------------------------------------------------------------------

    fn finish(mut self) -> (Option<FlowGraph>, Vec<syn::Error>) {
        let mut errors = std::mem::take(&mut self.errors);
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
        if !errors.is_empty() {
            return (None, errors);
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
        let g = simplify_and_build(self.f, vars, blocks, links, exits);
        (Some(g), vec![])
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

fn simplify_and_build(
    f: &FnDef<'_>,
    vars: Vec<VarInfo>,
    mut blocks: Vec<Block>,
    mut links: Vec<Vec<(usize, Vec<Value>)>>,
    mut exits: Vec<XExit>,
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
    // Apply the substitution and build the petgraph.
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
                    *a = subst(&map, a);
                }
            }
            index[b] = Some(graph.add_node(blk));
        }
    }
    for b in 0..n {
        let Some(nb) = index[b] else { continue };
        let mut edges = vec![];
        for (t, args) in std::mem::take(&mut links[b]) {
            let args = args.iter().map(|a| subst(&map, a)).collect();
            edges.push(graph.add_edge(nb, index[t].expect("reachable target"), Link { args }));
        }
        graph[nb].exit = match std::mem::replace(&mut exits[b], XExit::Goto) {
            XExit::Goto => Exit::Goto(edges[0]),
            XExit::Branch(c) => Exit::Branch { cond: subst(&map, &c), if_true: edges[0], if_false: edges[1] },
            XExit::Return(v) => Exit::Return(subst(&map, &v)),
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
    }
}

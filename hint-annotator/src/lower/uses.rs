//! What the names of a statement are used for (`Uses`): moved, changed,
//! read through, the receivers of which methods; and the questions the
//! lowering asks of a binding's scope with it (`never_moved`,
//! `only_scalar_fields_used`, `unmoved_names`). Outlining decides from it
//! how each local is handed to Rust's code.

use std::collections::{HashMap, HashSet};

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::visit::Visit;
use syn::Expr;

/// The names an expression uses, in order, and how: moved (used by value
/// as a whole), mutated (assigned or borrowed `&mut`, whole or in part),
/// reassigned (as a whole), and the methods called on each.
#[derive(Default)]
pub(super) struct Uses {
    pub(super) names: Vec<String>,
    pub(super) moved: HashSet<String>,
    pub(super) mutated: HashSet<String>,
    pub(super) reassigned: HashSet<String>,
    pub(super) receivers: Vec<(String, String)>,
    /// Names read or written through (`*x`).
    pub(super) derefs: HashSet<String>,
    /// Names inside macros (how they are used is not known).
    pub(super) macro_names: HashSet<String>,
    /// Names the expression binds itself (patterns, closure parameters).
    pub(super) bound_inside: HashSet<String>,
    /// Names called (`f(..)`): functions, of this module or imported.
    pub(super) callees: HashSet<String>,
    /// How many times each name appears.
    pub(super) occurrences: HashMap<String, usize>,
}

impl Uses {
    /// Whether a method is called on the number `n` that may take it by
    /// `&mut`: any but the standard library's that read it
    /// (`crate::is_by_value_scalar_method`).
    pub(super) fn may_change_by_method(&self, n: &str) -> bool {
        self.receivers.iter().any(|(r, m)| r == n && !crate::is_by_value_scalar_method(m))
    }

    /// Whether `n` is only read: not assigned, borrowed `&mut`, or the
    /// receiver of a method but those of the standard library's that only
    /// read. Such an object is handed by `&` (it may be one Rust holds by
    /// `&`, a pattern's binding in a matched reference).
    pub(super) fn only_read(&self, n: &str) -> bool {
        const READS: &[&str] = &[
            "clone",
            "len",
            "is_empty",
            "get",
            "contains",
            "contains_key",
            "iter",
            "keys",
            "values",
            "first",
            "last",
            "to_string",
            "to_owned",
            "as_str",
            "as_bytes",
            "starts_with",
            "ends_with",
            "eq",
        ];
        !self.mutated.contains(n) && self.receivers.iter().all(|(r, m)| r != n || READS.contains(&m.as_str()))
    }

    fn name(&mut self, n: String) {
        *self.occurrences.entry(n.clone()).or_default() += 1;
        if !self.names.contains(&n) {
            self.names.push(n);
        }
    }

    /// `e` used as a place: read through, not moved.
    fn place(&mut self, e: &Expr) {
        match e {
            Expr::Path(p) if p.path.get_ident().is_some() => self.name(p.path.segments[0].ident.to_string()),
            Expr::Paren(p) => self.place(&p.expr),
            e => self.visit_expr(e),
        }
    }

    /// The places an assignment's left side writes: one place, or each of
    /// a destructuring assignment's (`(a, b) = ..`, `[a, _] = ..`,
    /// `S { x, .. } = ..`, `T(a, b) = ..`).
    fn assigned(&mut self, left: &Expr) {
        match left {
            Expr::Tuple(t) => t.elems.iter().for_each(|e| self.assigned(e)),
            Expr::Array(a) => a.elems.iter().for_each(|e| self.assigned(e)),
            Expr::Paren(p) => self.assigned(&p.expr),
            Expr::Struct(st) => st.fields.iter().for_each(|f| self.assigned(&f.expr)),
            Expr::Call(c) => c.args.iter().for_each(|e| self.assigned(e)),
            Expr::Infer(_) | Expr::Range(_) => {}
            place => {
                if let Some(n) = Self::root(place) {
                    self.mutated.insert(n);
                }
                if let Expr::Path(p) = place {
                    self.reassigned.extend(p.path.get_ident().map(|i| i.to_string()));
                }
                self.place(place);
            }
        }
    }

    /// The local a place is rooted at (`*c` is `c`'s).
    fn root(e: &Expr) -> Option<String> {
        match e {
            Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
            Expr::Field(f) => Self::root(&f.base),
            Expr::Index(i) => Self::root(&i.expr),
            Expr::Paren(p) => Self::root(&p.expr),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => Self::root(&u.expr),
            _ => None,
        }
    }

    fn tokens(&mut self, t: TokenStream) {
        // A name after `.` or `::` is a field's, a method's or a path's
        // part, not a local's.
        let mut after_dot = false;
        for t in t {
            let follows = std::mem::replace(
                &mut after_dot,
                matches!(&t, TokenTree::Punct(p) if matches!(p.as_char(), '.' | ':')),
            );
            match t {
                TokenTree::Ident(_) if follows => {}
                TokenTree::Ident(i) => {
                    self.macro_names.insert(i.to_string());
                    self.name(i.to_string())
                }
                TokenTree::Group(g) => self.tokens(g.stream()),
                TokenTree::Literal(l) => {
                    // Names a format string captures (`{x}`).
                    if let Ok(s) = syn::parse2::<syn::LitStr>(l.to_token_stream()) {
                        for n in super::captured_names(&s.value()) {
                            self.name(n);
                        }
                    }
                }
                TokenTree::Punct(_) => {}
            }
        }
    }
}

impl<'a> Visit<'a> for Uses {
    fn visit_expr(&mut self, e: &'a Expr) {
        match e {
            Expr::Path(p) if p.path.get_ident().is_some() => {
                let n = p.path.segments[0].ident.to_string();
                self.moved.insert(n.clone());
                self.name(n);
            }
            Expr::MethodCall(m) => {
                if let Some(r) = Self::root(&m.receiver) {
                    self.receivers.push((r, m.method.to_string()));
                }
                let method = m.method.to_string();
                if method.starts_with("into") || method == "leak" {
                    self.visit_expr(&m.receiver);
                } else {
                    self.place(&m.receiver);
                }
                m.args.iter().for_each(|a| self.visit_expr(a));
            }
            Expr::Field(f) => self.place(&f.base),
            Expr::Call(c) => {
                if let Expr::Path(p) = &*c.func {
                    self.callees.extend(p.path.get_ident().map(|i| i.to_string()));
                }
                // A local called (a `fn` pointer) is used in place.
                self.place(&c.func);
                c.args.iter().for_each(|a| self.visit_expr(a));
            }
            Expr::Index(i) => {
                self.place(&i.expr);
                self.visit_expr(&i.index);
            }
            Expr::Reference(r) => {
                if r.mutability.is_some() {
                    if let Some(n) = Self::root(&r.expr) {
                        self.mutated.insert(n);
                    }
                }
                self.place(&r.expr);
            }
            Expr::Assign(a) => {
                self.assigned(&a.left);
                self.visit_expr(&a.right);
            }
            Expr::Binary(b) => {
                use syn::BinOp::*;
                let assigns = crate::is_compound_assign_op(&b.op);
                if assigns {
                    if let Some(n) = Self::root(&b.left) {
                        self.mutated.insert(n);
                    }
                    if let Expr::Path(p) = &*b.left {
                        self.reassigned.extend(p.path.get_ident().map(|i| i.to_string()));
                    }
                }
                if assigns || matches!(b.op, Eq(_) | Ne(_) | Lt(_) | Le(_) | Gt(_) | Ge(_)) {
                    self.place(&b.left);
                    self.place(&b.right);
                } else {
                    syn::visit::visit_expr_binary(self, b);
                }
            }
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => {
                if let Some(n) = Self::root(&u.expr) {
                    self.derefs.insert(n);
                }
                syn::visit::visit_expr_unary(self, u);
            }
            e => syn::visit::visit_expr(self, e),
        }
    }

    fn visit_macro(&mut self, m: &'a syn::Macro) {
        // Macros that only borrow their arguments (formatting, `hint!`):
        // each is used in place. Any other: its names, used as not known.
        const BORROWING: &[&str] =
            &["hint", "format", "print", "println", "eprint", "eprintln", "write", "writeln", "panic", "unreachable"];
        let borrowing = m.path.get_ident().is_some_and(|i| BORROWING.contains(&i.to_string().as_str()));
        let args = syn::parse::Parser::parse2(
            syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated,
            m.tokens.clone(),
        );
        match args {
            Ok(args) if borrowing => {
                for a in &args {
                    match a {
                        // The format string's captures (`{x}`), borrowed.
                        Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => {
                            for n in super::captured_names(&s.value()) {
                                self.name(n);
                            }
                        }
                        a => self.place(a),
                    }
                }
            }
            _ => self.tokens(m.tokens.clone()),
        }
    }

    fn visit_pat_ident(&mut self, p: &'a syn::PatIdent) {
        self.bound_inside.insert(p.ident.to_string());
        syn::visit::visit_pat_ident(self, p);
    }
}

/// The names `body` uses only in place: never moved (passed, returned or
/// bound by value), and never named inside a macro.
pub(super) fn unmoved_names(body: &syn::Block) -> HashSet<String> {
    let mut uses = Uses::default();
    uses.visit_block(body);
    uses.names.iter().filter(|n| !uses.moved.contains(*n) && !uses.macro_names.contains(*n)).cloned().collect()
}

/// Whether the statements `stmts` (a binding's scope) use `name` only to
/// read or write fields for which `scalar` holds: never moving, passing,
/// borrowing or formatting it, calling a method on it, or naming it inside a
/// macro whose arguments are not expressions. Assigning it is no use.
pub(super) fn only_scalar_fields_used(stmts: &[syn::Stmt], name: &str, scalar: impl Fn(&str) -> bool) -> bool {
    if !never_moved(stmts, name) {
        return false;
    }
    match field_reads(stmts).get(name) {
        Some(Some(read)) => read.iter().all(|f| scalar(f)),
        Some(None) => false,
        None => true,
    }
}

/// Whether the statements `stmts` (a binding's scope) never move `name`
/// (pass, return or bind it by value), nor name it inside a macro whose
/// arguments are not expressions: what it owns dies with the scope.
pub(super) fn never_moved(stmts: &[syn::Stmt], name: &str) -> bool {
    let mut uses = Uses::default();
    stmts.iter().for_each(|s| uses.visit_stmt(s));
    !uses.moved.contains(name) && !uses.macro_names.contains(name)
}

/// For each name `stmts` use, the fields they read out of it (`x.f`, as a
/// place or a value), or `None` where they use the name otherwise (pass,
/// borrow or format it, call a method on it, or name it inside a macro
/// that is not a list of expressions). Assigning the name itself, and
/// binding it, are not uses.
fn field_reads(stmts: &[syn::Stmt]) -> HashMap<String, Option<HashSet<String>>> {
    #[derive(Default)]
    struct Fields(HashMap<String, Option<HashSet<String>>>);
    impl Fields {
        fn other(&mut self, n: String) {
            self.0.insert(n, None);
        }
    }
    impl<'a> Visit<'a> for Fields {
        fn visit_expr(&mut self, e: &'a Expr) {
            match e {
                Expr::Field(f) => match &*f.base {
                    Expr::Path(p) if p.path.get_ident().is_some() => {
                        let n = p.path.segments[0].ident.to_string();
                        let member = match &f.member {
                            syn::Member::Named(i) => i.to_string(),
                            syn::Member::Unnamed(i) => i.index.to_string(),
                        };
                        if let Some(fields) = self.0.entry(n).or_insert_with(|| Some(HashSet::new())) {
                            fields.insert(member);
                        }
                    }
                    base => self.visit_expr(base),
                },
                Expr::Path(p) if p.path.get_ident().is_some() => self.other(p.path.segments[0].ident.to_string()),
                Expr::Assign(a) if matches!(&*a.left, Expr::Path(p) if p.path.get_ident().is_some()) => {
                    self.visit_expr(&a.right)
                }
                e => syn::visit::visit_expr(self, e),
            }
        }
        fn visit_macro(&mut self, m: &'a syn::Macro) {
            let args = syn::parse::Parser::parse2(
                syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated,
                m.tokens.clone(),
            );
            match args {
                Ok(args) => {
                    for a in &args {
                        match a {
                            Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => {
                                super::captured_names(&s.value()).into_iter().for_each(|n| self.other(n));
                            }
                            a => self.visit_expr(a),
                        }
                    }
                }
                Err(_) => {
                    let mut names = HashSet::new();
                    collect_idents(m.tokens.clone(), &mut names);
                    names.into_iter().for_each(|n| self.other(n));
                }
            }
        }
    }
    fn collect_idents(t: TokenStream, out: &mut HashSet<String>) {
        for t in t {
            match t {
                TokenTree::Ident(i) => drop(out.insert(i.to_string())),
                TokenTree::Group(g) => collect_idents(g.stream(), out),
                _ => {}
            }
        }
    }
    let mut f = Fields::default();
    stmts.iter().for_each(|s| f.visit_stmt(s));
    f.0
}

/// Whether the `let` `local` binds a borrow, not an owned value: a pattern
/// typed `&T` or binding `ref`, or an initializer that is `&e`, or a call
/// for which `element` holds (a list's `get`, `first` or `last`, as the
/// lowering read it), under the adapters that keep what they are given
/// (`?`, `unwrap`, `expect`, `ok_or`, `ok_or_else`, `as_ref`, and a `match`
/// that yields its `Some` or `Ok` payload or leaves, as `?` is written
/// out). The analysis models a borrowed element as the element itself;
/// Rust's drop at the end of the scope frees nothing, so residual code must
/// not drop it. (A map's `get` is not such a call: its value is copied out
/// of the map, and that copy is dropped.)
pub(super) fn binds_borrow(local: &syn::Local, element: impl Fn(&syn::ExprMethodCall) -> bool) -> bool {
    let pat_borrows = match &local.pat {
        syn::Pat::Type(t) => matches!(&*t.ty, syn::Type::Reference(_)),
        syn::Pat::Ident(i) => i.by_ref.is_some(),
        _ => false,
    };
    let Some(init) = &local.init else { return pat_borrows };
    let mut e = &*init.expr;
    loop {
        e = match e {
            Expr::Reference(_) => return true,
            Expr::Paren(p) => &p.expr,
            Expr::Group(g) => &g.expr,
            Expr::Try(t) => &t.expr,
            Expr::Match(m) if yields_payload(m) => &m.expr,
            Expr::MethodCall(m) if element(m) => return true,
            Expr::MethodCall(m) => match m.method.to_string().as_str() {
                "unwrap" | "expect" | "ok_or" | "ok_or_else" | "as_ref" | "as_mut" => &m.receiver,
                _ => return pat_borrows,
            },
            _ => return pat_borrows,
        }
    }
}

/// Whether the arms of `m` each yield the payload their `Some(x)` or
/// `Ok(x)` pattern binds, or leave (`return`, `break`, `continue`, a
/// panicking macro), with at least one yielding: the value of `m` is what
/// its scrutinee holds.
fn yields_payload(m: &syn::ExprMatch) -> bool {
    fn leaves(e: &Expr) -> bool {
        match e {
            Expr::Return(_) | Expr::Break(_) | Expr::Continue(_) => true,
            Expr::Macro(m) => m.mac.path.segments.last().is_some_and(|s| {
                matches!(s.ident.to_string().as_str(), "panic" | "unreachable" | "todo" | "unimplemented")
            }),
            Expr::Block(b) => match b.block.stmts.last() {
                Some(syn::Stmt::Expr(e, _)) => leaves(e),
                Some(syn::Stmt::Macro(m)) => leaves(&Expr::Macro(syn::ExprMacro { attrs: vec![], mac: m.mac.clone() })),
                _ => false,
            },
            _ => false,
        }
    }
    let yields = |arm: &syn::Arm| {
        let syn::Pat::TupleStruct(p) = &arm.pat else { return false };
        let variant = p.path.segments.last().map(|s| s.ident.to_string());
        if !matches!(variant.as_deref(), Some("Some" | "Ok")) || p.elems.len() != 1 {
            return false;
        }
        let syn::Pat::Ident(x) = &p.elems[0] else { return false };
        matches!(&*arm.body, Expr::Path(b) if b.path.is_ident(&x.ident))
    };
    m.arms.iter().any(yields) && m.arms.iter().all(|a| yields(a) || leaves(&a.body))
}

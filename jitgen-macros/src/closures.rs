//! Closures bound by `let` in a function's body and only called there,
//! inlined at each call before the analysis, which has no closure values
//! (a closure outside a combinator's argument left the whole module to
//! Rust): `let double = |x: i64| x * 2; .. double(a) ..` becomes
//! `.. { let __jitgen_closure_arg0 = a; let x: i64 = __jitgen_closure_arg0;
//! x * 2 } ..`.
//!
//! A closure captures its environment by reference, and Rust forbids
//! changing what it borrows while it lives, so its body reads the same
//! values where it is called, unless a name it uses means something else
//! there. So a closure is inlined only where:
//!
//! - it is bound by `let NAME = |..| ..;` (no `move`, no `async`), its
//!   parameters plain names (typed or not), or, as `split` binds a closure
//!   handed to a method it inlines, by `let NAME: &dyn Fn(..) = &(|..| ..);`
//!   (`&mut dyn FnMut`, `Box<dyn FnOnce>`);
//! - `NAME` occurs after it only as the callee of calls with as many
//!   arguments as it has parameters;
//! - its body has no `return` and no `?` (each leaves the closure, not the
//!   function), and declares no item;
//! - no identifier of its body but its parameters is bound again after it
//!   in the block. (The arguments are evaluated into temporaries before the
//!   parameters are bound, as a call does, then the body.)

use std::collections::HashSet;

use proc_macro2::TokenTree;

use crate::outline::idents;
use quote::ToTokens;
use syn::visit::Visit;
use syn::visit_mut::VisitMut;

/// Inlines the local closures of `module`'s functions and methods, as the
/// module doc says.
pub fn inline(module: &mut syn::ItemMod) {
    let Some((_, items)) = &mut module.content else { return };
    for body in crate::nested::bodies_mut(items) {
        Blocks.visit_block_mut(body);
    }
}

/// Visits every block, innermost first, inlining its closures.
struct Blocks;

impl VisitMut for Blocks {
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        syn::visit_mut::visit_block_mut(self, b);
        inline_in(b);
    }
}

fn inline_in(b: &mut syn::Block) {
    let mut i = 0;
    while i < b.stmts.len() {
        let Some((name, params, body)) = closure_let(&b.stmts[i]) else {
            i += 1;
            continue;
        };
        let rest = &b.stmts[i + 1..];
        if !inlinable(&name, &params, &body, rest) {
            i += 1;
            continue;
        }
        let mut calls = Calls { name: name.clone(), params, body, found: 0 };
        for s in &mut b.stmts[i + 1..] {
            calls.visit_stmt_mut(s);
        }
        b.stmts.remove(i);
    }
}

/// `let NAME = |params| body;`: the name, the parameters (as patterns) and
/// the body.
fn closure_let(s: &syn::Stmt) -> Option<(String, Vec<syn::Pat>, syn::Expr)> {
    let syn::Stmt::Local(l) = s else { return None };
    let pi = match &l.pat {
        syn::Pat::Ident(pi) => pi,
        syn::Pat::Type(pt) => match &*pt.pat {
            syn::Pat::Ident(pi) => pi,
            _ => return None,
        },
        _ => return None,
    };
    if pi.by_ref.is_some() || pi.subpat.is_some() || !l.attrs.is_empty() {
        return None;
    }
    let init = l.init.as_ref().filter(|i| i.diverge.is_none())?;
    let c = closure_value(&init.expr)?;
    // Written `|..| ..`: no `move`, `async`, `static` or `for<..>` before it.
    let first = c.to_token_stream().into_iter().next();
    if !matches!(first, Some(TokenTree::Punct(p)) if p.as_char() == '|') || !c.attrs.is_empty() {
        return None;
    }
    let plain = |p: &syn::Pat| match p {
        syn::Pat::Ident(pi) => pi.by_ref.is_none() && pi.subpat.is_none(),
        syn::Pat::Type(pt) => matches!(&*pt.pat, syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none()),
        _ => false,
    };
    if !c.inputs.iter().all(plain) {
        return None;
    }
    let body = match &c.output {
        syn::ReturnType::Default => (*c.body).clone(),
        // `|x| -> i64 { .. }`: the body, its type kept.
        syn::ReturnType::Type(_, t) => {
            let b = &c.body;
            syn::parse_quote!({ let __jitgen_closure_value: #t = #b; __jitgen_closure_value })
        }
    };
    Some((pi.ident.to_string(), c.inputs.iter().cloned().collect(), body))
}

/// The closure a binding's value is: `|..| ..`, or the closure an inlined
/// method's parameter is bound to behind its `dyn` (`split`): `&(|..| ..)`,
/// `&mut (|..| ..)`, `Box::new(|..| ..)`. Only called, it is the same.
fn closure_value(e: &syn::Expr) -> Option<&syn::ExprClosure> {
    match e {
        syn::Expr::Closure(c) => Some(c),
        syn::Expr::Paren(p) => closure_value(&p.expr),
        syn::Expr::Reference(r) => match &*r.expr {
            syn::Expr::Paren(p) => closure_value(&p.expr),
            _ => None,
        },
        syn::Expr::Call(c) if c.args.len() == 1 && is_box_new(&c.func) => closure_value(&c.args[0]),
        _ => None,
    }
}

/// `Box::new` (by any path ending so).
fn is_box_new(f: &syn::Expr) -> bool {
    let syn::Expr::Path(p) = f else { return false };
    let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
    segs.ends_with(&["Box".to_string(), "new".to_string()])
}

/// The parameter's name.
fn param_name(p: &syn::Pat) -> String {
    match p {
        syn::Pat::Ident(pi) => pi.ident.to_string(),
        syn::Pat::Type(pt) => param_name(&pt.pat),
        _ => String::new(),
    }
}

fn inlinable(name: &str, params: &[syn::Pat], body: &syn::Expr, rest: &[syn::Stmt]) -> bool {
    // Its body stays inside it.
    let mut leaves = Leaves::default();
    leaves.visit_expr(body);
    if leaves.found {
        return false;
    }
    // `NAME` only called, with as many arguments as parameters.
    let mut uses = Uses { name, params: params.len(), calls: 0, other: false };
    for s in rest {
        uses.visit_stmt(s);
    }
    if uses.other || uses.calls == 0 {
        return false;
    }
    // No name of the body bound again after it, and no parameter named in
    // an argument.
    let params: HashSet<String> = params.iter().map(param_name).collect();
    let captured: HashSet<String> =
        idents(&body.to_token_stream()).into_iter().filter(|i| !params.contains(i)).collect();
    let mut bound = Bound::default();
    for s in rest {
        bound.visit_stmt(s);
    }
    !bound.names.iter().any(|n| captured.contains(n))
}

/// Replaces the calls of the closure by its body.
struct Calls {
    name: String,
    params: Vec<syn::Pat>,
    body: syn::Expr,
    found: usize,
}

impl VisitMut for Calls {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        syn::visit_mut::visit_expr_mut(self, e);
        let syn::Expr::Call(c) = e else { return };
        if !is_name(&c.func, &self.name) {
            return;
        }
        // The arguments first, in order, then the parameters bound to them.
        let temps: Vec<syn::Ident> =
            (0..self.params.len()).map(|k| quote::format_ident!("__jitgen_closure_arg{}", k)).collect();
        let args = c.args.iter();
        let params = self.params.iter();
        let body = &self.body;
        let span = c.paren_token.span.join();
        let block = quote::quote_spanned!(span=> {
            #(let #temps = #args;)*
            #(let #params = #temps;)*
            #body
        });
        // (Never fails: names, types and expressions of parsed Rust.)
        if let Ok(b) = syn::parse2::<syn::Expr>(block) {
            self.found += 1;
            *e = b;
        }
    }
}

/// Whether `e` is the path `name`.
fn is_name(e: &syn::Expr, name: &str) -> bool {
    matches!(e, syn::Expr::Path(p) if p.qself.is_none() && p.path.is_ident(name))
}

/// Uses of the closure's name: calls with the right count of arguments, or
/// anything else.
struct Uses<'n> {
    name: &'n str,
    params: usize,
    calls: usize,
    other: bool,
}

impl<'ast> Visit<'ast> for Uses<'_> {
    fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
        if is_name(&c.func, self.name) {
            if c.args.len() == self.params {
                self.calls += 1;
            } else {
                self.other = true;
            }
            for a in &c.args {
                self.visit_expr(a);
            }
            return;
        }
        syn::visit::visit_expr_call(self, c);
    }

    fn visit_ident(&mut self, i: &'ast proc_macro2::Ident) {
        if i == self.name {
            self.other = true;
        }
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // Inside a macro's tokens, any mention is a use of another kind.
        if idents(&m.tokens).contains(self.name) {
            self.other = true;
        }
    }
}

/// Whether an expression leaves a closure's body: `return` or `?`, or
/// declares an item there.
#[derive(Default)]
struct Leaves {
    found: bool,
}

impl<'ast> Visit<'ast> for Leaves {
    fn visit_expr_return(&mut self, _: &'ast syn::ExprReturn) {
        self.found = true;
    }
    fn visit_expr_try(&mut self, _: &'ast syn::ExprTry) {
        self.found = true;
    }
    fn visit_item(&mut self, _: &'ast syn::Item) {
        self.found = true;
    }
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // `return` or `?` in a macro's tokens (`fail!` of the module,
        // `format!("{}", x?)`) count too.
        fn has_question(ts: &proc_macro2::TokenStream) -> bool {
            ts.clone().into_iter().any(|t| match t {
                TokenTree::Punct(p) => p.as_char() == '?',
                TokenTree::Group(g) => has_question(&g.stream()),
                _ => false,
            })
        }
        if idents(&m.tokens).contains("return") || has_question(&m.tokens) {
            self.found = true;
        }
    }
    fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {
        // A closure inside has its own `return`s.
    }
}

/// The names bound by patterns (`let`, `match` arms, `for`, closures'
/// parameters, `if let`).
#[derive(Default)]
pub(crate) struct Bound {
    pub(crate) names: HashSet<String>,
}

impl<'ast> Visit<'ast> for Bound {
    fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
        self.names.insert(p.ident.to_string());
        syn::visit::visit_pat_ident(self, p);
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};

    fn check(src: &str, want: Expect) {
        let mut m: syn::ItemMod = syn::parse_str(src).unwrap();
        super::inline(&mut m);
        want.assert_eq(&prettyplease::unparse(&syn::parse_quote!(#m)));
    }

    #[test]
    fn closures_only_called_are_inlined_at_each_call() {
        check(
            "mod m { fn run(code: &[u8], k: i64) -> i64 { let double = |x: i64| x * 2; \
             let add_k = |a, b| -> i64 { a + b + k }; let mut s = 0; \
             for i in 0..code.len() { s = add_k(double(s), code[i] as i64); } s } }",
            expect![[r#"
                mod m {
                    fn run(code: &[u8], k: i64) -> i64 {
                        let mut s = 0;
                        for i in 0..code.len() {
                            s = {
                                let __jitgen_closure_arg0 = {
                                    let __jitgen_closure_arg0 = s;
                                    let x: i64 = __jitgen_closure_arg0;
                                    x * 2
                                };
                                let __jitgen_closure_arg1 = code[i] as i64;
                                let a = __jitgen_closure_arg0;
                                let b = __jitgen_closure_arg1;
                                {
                                    let __jitgen_closure_value: i64 = { a + b + k };
                                    __jitgen_closure_value
                                }
                            };
                        }
                        s
                    }
                }
            "#]],
        );
    }

    #[test]
    fn closures_stay_where_inlining_could_change_what_they_do() {
        // Passed as a value; with a `return`; a name of its body bound
        // again after it; `move`; a `?` in a macro's tokens. (`p(y, 4)` is
        // inlined: its arguments are evaluated before `y` is bound.)
        check(
            "mod m { fn run(v: Vec<i64>, k: i64) -> i64 { let f = |x: i64| x + 1; let g = |x: i64| { return x; }; \
             let h = |x: i64| x + k; let k = 3; let p = |x: i64, y: i64| x - y; let y = 1; \
             let q = move |x: i64| x * k; let r = |x: Option<i64>| format!(\"{}\", x?).len() as i64; \
             v.iter().copied().map(f).sum::<i64>() + f(1) + g(2) + h(3) + p(y, 4) + q(5) + r(None) } }",
            expect![[r#"
                mod m {
                    fn run(v: Vec<i64>, k: i64) -> i64 {
                        let f = |x: i64| x + 1;
                        let g = |x: i64| {
                            return x;
                        };
                        let h = |x: i64| x + k;
                        let k = 3;
                        let y = 1;
                        let q = move |x: i64| x * k;
                        let r = |x: Option<i64>| format!("{}", x ?).len() as i64;
                        v.iter().copied().map(f).sum::<i64>() + f(1) + g(2) + h(3)
                            + {
                                let __jitgen_closure_arg0 = y;
                                let __jitgen_closure_arg1 = 4;
                                let x: i64 = __jitgen_closure_arg0;
                                let y: i64 = __jitgen_closure_arg1;
                                x - y
                            } + q(5) + r(None)
                    }
                }
            "#]],
        );
    }
}

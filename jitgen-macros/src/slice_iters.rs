//! Iterators over a slice bound by `let` and only stepped, rewritten before
//! the analysis into an index it reads as a slice access:
//! `let mut inp = input.iter(); .. inp.next() ..` becomes
//! `let mut __jitgen_at0: usize = 0; .. { let __jitgen_next =
//! input.get(__jitgen_at0); if __jitgen_next.is_some() { __jitgen_at0 += 1; }
//! __jitgen_next } ..`. A `Brainfuck` reading its input so kept the whole
//! module interpreted: the analysis does not own values of types it does not
//! model, and a portal's loop holds the iterator across its merge point.
//!
//! The forms: `x.iter()`, `x.iter().copied()`, `x.iter().cloned()` (a
//! step gives what `get` gives, copied for the last two) and `x.bytes()`
//! (`x.as_bytes().get(..).copied()`), where `x` is one name. The iterator
//! borrows what `x` names, so that cannot change while it lives; the
//! rewrite applies where the iterator's name occurs after its `let` only
//! as the receiver of `.next()` calls (nor inside a string literal, which
//! a format string's `{inp:?}` would read), and `x` is neither assigned,
//! borrowed `&mut`, nor bound again there (a binding of that name would be
//! another slice). An iterator used any other way stays as written.

use quote::{format_ident, ToTokens};
use syn::visit::Visit;
use syn::visit_mut::VisitMut;

/// Rewrites the slice iterators of `module`'s functions and methods, as the
/// module doc says.
pub fn rewrite(module: &mut syn::ItemMod) {
    let Some((_, items)) = &mut module.content else { return };
    for body in crate::nested::bodies_mut(items) {
        Blocks::default().visit_block_mut(body);
    }
}

/// Visits every block, innermost first; counts the rewrites for fresh names.
#[derive(Default)]
struct Blocks {
    made: usize,
}

impl VisitMut for Blocks {
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        syn::visit_mut::visit_block_mut(self, b);
        for i in 0..b.stmts.len() {
            self.rewrite_at(b, i);
        }
    }
}

/// How a step reads the slice: `get` of it, copied or not, through
/// `as_bytes()` or not.
#[derive(Clone, Copy)]
struct Form {
    bytes: bool,
    copied: bool,
}

impl Blocks {
    /// Rewrites the iterator bound at statement `i` of `b`, if it is one
    /// the module doc describes.
    fn rewrite_at(&mut self, b: &mut syn::Block, i: usize) {
        let Some((name, slice, form)) = iter_let(&b.stmts[i]) else { return };
        let rest = &b.stmts[i + 1..];
        let uses: usize = rest.iter().map(|s| crate::byte_arrays::occurrences(&s.to_token_stream(), &name)).sum();
        if uses == 0 || rest.iter().any(|s| crate::byte_arrays::in_literal(&s.to_token_stream(), &name)) {
            return;
        }
        let mut still = Unchanged { name: &slice, changed: false };
        for s in rest {
            still.visit_stmt(s);
        }
        if still.changed {
            return;
        }
        let at = format_ident!("__jitgen_at{}", self.made);
        let mut steps = Steps { name: name.clone(), slice: format_ident!("{}", slice), at: at.clone(), form, found: 0 };
        let mut rest: Vec<syn::Stmt> = rest.to_vec();
        for s in &mut rest {
            steps.visit_stmt_mut(s);
        }
        if steps.found != uses {
            return;
        }
        self.made += 1;
        let span = b.stmts[i].to_token_stream().into_iter().next().map(|t| t.span());
        let span = span.unwrap_or_else(proc_macro2::Span::call_site);
        let index: syn::Stmt = syn::parse_quote_spanned!(span=> let mut #at: usize = 0;);
        b.stmts.splice(i.., std::iter::once(index).chain(rest));
    }
}

/// `let mut NAME = x.iter();` (or `.iter().copied()`, `.iter().cloned()`,
/// `.bytes()`): the name, `x`, and how a step reads it.
fn iter_let(s: &syn::Stmt) -> Option<(String, String, Form)> {
    let syn::Stmt::Local(l) = s else { return None };
    let pi = match &l.pat {
        syn::Pat::Ident(pi) => pi,
        // `let mut inp: std::slice::Iter<u8> = ..`: the type goes with it.
        syn::Pat::Type(pt) => match &*pt.pat {
            syn::Pat::Ident(pi) => pi,
            _ => return None,
        },
        _ => return None,
    };
    if !l.attrs.is_empty() || pi.by_ref.is_some() || pi.subpat.is_some() {
        return None;
    }
    let init = l.init.as_ref().filter(|i| i.diverge.is_none())?;
    let (call, copied) = match &*init.expr {
        syn::Expr::MethodCall(m) if m.args.is_empty() && (m.method == "copied" || m.method == "cloned") => {
            match &*m.receiver {
                syn::Expr::MethodCall(inner) if inner.method == "iter" => (inner, true),
                _ => return None,
            }
        }
        syn::Expr::MethodCall(m) => (m, false),
        _ => return None,
    };
    let bytes = match call.method.to_string().as_str() {
        "iter" => false,
        "bytes" if !copied => true,
        _ => return None,
    };
    let syn::Expr::Path(p) = &*call.receiver else { return None };
    let slice = p.path.get_ident().filter(|_| p.qself.is_none() && call.args.is_empty() && call.turbofish.is_none())?;
    Some((pi.ident.to_string(), slice.to_string(), Form { bytes, copied: copied || bytes }))
}

/// Whether the slice's name is assigned, borrowed `&mut` or bound again.
struct Unchanged<'n> {
    name: &'n str,
    changed: bool,
}

impl Unchanged<'_> {
    fn names(&self, e: &syn::Expr) -> bool {
        matches!(e, syn::Expr::Path(p) if p.path.is_ident(self.name))
    }
}

impl<'ast> Visit<'ast> for Unchanged<'_> {
    fn visit_expr(&mut self, e: &'ast syn::Expr) {
        match e {
            syn::Expr::Assign(a) if self.names(&a.left) => self.changed = true,
            syn::Expr::Binary(b) if self.names(&b.left) && hint_annotator::is_compound_assign_op(&b.op) => {
                self.changed = true
            }
            syn::Expr::Reference(r) if r.mutability.is_some() && self.names(&r.expr) => self.changed = true,
            _ => {}
        }
        syn::visit::visit_expr(self, e);
    }

    fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
        if p.ident == self.name {
            self.changed = true;
        }
        syn::visit::visit_pat_ident(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // A macro's body is not parsed here: a mention of the name in it
        // may change it.
        if crate::byte_arrays::occurrences(&m.tokens, self.name) > 0 {
            self.changed = true;
        }
    }
}

/// Replaces each `NAME.next()` by a step of the index.
struct Steps {
    name: String,
    slice: syn::Ident,
    at: syn::Ident,
    form: Form,
    found: usize,
}

impl VisitMut for Steps {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        syn::visit_mut::visit_expr_mut(self, e);
        let syn::Expr::MethodCall(m) = e else { return };
        let on_name = matches!(&*m.receiver, syn::Expr::Path(p) if p.qself.is_none() && p.path.is_ident(&self.name));
        if !(on_name && m.method == "next" && m.args.is_empty() && m.turbofish.is_none()) {
            return;
        }
        let (slice, at) = (&self.slice, &self.at);
        let read: syn::Expr = match (self.form.bytes, self.form.copied) {
            (true, _) => syn::parse_quote_spanned!(m.method.span()=> #slice.as_bytes().get(#at).copied()),
            (false, true) => syn::parse_quote_spanned!(m.method.span()=> #slice.get(#at).copied()),
            (false, false) => syn::parse_quote_spanned!(m.method.span()=> #slice.get(#at)),
        };
        *e = syn::parse_quote_spanned!(m.method.span()=> {
            let __jitgen_next = #read;
            if __jitgen_next.is_some() {
                #at += 1;
            }
            __jitgen_next
        });
        self.found += 1;
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};

    fn check(src: &str, want: Expect) {
        let mut m: syn::ItemMod = syn::parse_str(src).unwrap();
        super::rewrite(&mut m);
        want.assert_eq(&prettyplease::unparse(&syn::parse_quote!(#m)));
    }

    #[test]
    fn an_iterator_only_stepped_is_an_index() {
        check(
            "mod m { impl M { fn run(&mut self, code: &[u8], input: &[u8]) { \
             let mut inp = input.iter(); let mut pc = 0; \
             loop { match code[pc] { 0 => self.x = inp.next().copied().unwrap_or(0), _ => return } pc += 1; } } } \
             fn b(s: &str) -> Option<u8> { let mut it = s.bytes(); it.next(); it.next() } }",
            expect![[r#"
                mod m {
                    impl M {
                        fn run(&mut self, code: &[u8], input: &[u8]) {
                            let mut __jitgen_at0: usize = 0;
                            let mut pc = 0;
                            loop {
                                match code[pc] {
                                    0 => {
                                        self.x = {
                                            let __jitgen_next = input.get(__jitgen_at0);
                                            if __jitgen_next.is_some() {
                                                __jitgen_at0 += 1;
                                            }
                                            __jitgen_next
                                        }
                                            .copied()
                                            .unwrap_or(0);
                                    }
                                    _ => return,
                                }
                                pc += 1;
                            }
                        }
                    }
                    fn b(s: &str) -> Option<u8> {
                        let mut __jitgen_at0: usize = 0;
                        {
                            let __jitgen_next = s.as_bytes().get(__jitgen_at0).copied();
                            if __jitgen_next.is_some() {
                                __jitgen_at0 += 1;
                            }
                            __jitgen_next
                        };
                        {
                            let __jitgen_next = s.as_bytes().get(__jitgen_at0).copied();
                            if __jitgen_next.is_some() {
                                __jitgen_at0 += 1;
                            }
                            __jitgen_next
                        }
                    }
                }
            "#]],
        );
    }

    #[test]
    fn an_iterator_used_otherwise_stays_as_written() {
        // Passed on; named in a format string; its slice rebound, then
        // assigned; a chain of adapters.
        check(
            "mod m { fn a(v: &[u8]) -> usize { let mut it = v.iter(); it.next(); f(it) } \
             fn c(v: &[u8]) { let mut it = v.iter(); it.next(); println!(\"{it:?}\"); } \
             fn d(v: &[u8], w: &[u8]) { let mut it = v.iter(); let v = w; it.next(); } \
             fn e(mut v: &[u8], w: &[u8]) { let mut it = v.iter(); v = w; it.next(); } \
             fn g(v: &[u8]) { let mut it = v.iter().rev(); it.next(); } }",
            expect![[r#"
                mod m {
                    fn a(v: &[u8]) -> usize {
                        let mut it = v.iter();
                        it.next();
                        f(it)
                    }
                    fn c(v: &[u8]) {
                        let mut it = v.iter();
                        it.next();
                        println!("{it:?}");
                    }
                    fn d(v: &[u8], w: &[u8]) {
                        let mut it = v.iter();
                        let v = w;
                        it.next();
                    }
                    fn e(mut v: &[u8], w: &[u8]) {
                        let mut it = v.iter();
                        v = w;
                        it.next();
                    }
                    fn g(v: &[u8]) {
                        let mut it = v.iter().rev();
                        it.next();
                    }
                }
            "#]],
        );
    }
}

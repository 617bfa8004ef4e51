//! Closure parameters of the module's functions and methods: which
//! parameter types are closures (`impl Fn(..)`, a type parameter bounded by
//! `Fn`, a function pointer), how an argument is bound to one where the
//! body is inlined or copied (behind a reference to its `dyn`, which gives
//! it its signature), and a function named by its path as the closure that
//! calls it. `split` (a method of `self` inlined) and `closure_args` (a
//! function copied) bind them; `closures` inlines them where they are
//! called.

use std::collections::BTreeMap;

use proc_macro2::{Ident, TokenStream, TokenTree};
use quote::{format_ident, quote};
use syn::Expr;

/// The type parameters of `g` bounded by a closure trait, with that bound
/// (inline or in the `where` clause).
pub(crate) fn closure_generics(g: &syn::Generics) -> BTreeMap<Ident, syn::TraitBound> {
    let mut found = BTreeMap::new();
    let mut note = |i: &Ident, bounds: &syn::punctuated::Punctuated<syn::TypeParamBound, syn::Token![+]>| {
        if let Some(b) = bounds.iter().find_map(closure_trait) {
            found.insert(i.clone(), b);
        }
    };
    for p in &g.params {
        if let syn::GenericParam::Type(t) = p {
            note(&t.ident, &t.bounds);
        }
    }
    for p in g.where_clause.iter().flat_map(|w| &w.predicates) {
        if let (Some(i), syn::WherePredicate::Type(t)) = (bounded_ident(p), p) {
            note(i, &t.bounds);
        }
    }
    found
}

/// The type parameter a `where` predicate bounds (`F: Fn(i64) -> i64`).
pub(crate) fn bounded_ident(p: &syn::WherePredicate) -> Option<&Ident> {
    match p {
        syn::WherePredicate::Type(t) if t.lifetimes.is_none() => match &t.bounded_ty {
            syn::Type::Path(tp) if tp.qself.is_none() => tp.path.get_ident(),
            _ => None,
        },
        _ => None,
    }
}

/// `Fn(..) -> R`, `FnMut(..)` or `FnOnce(..)`.
fn closure_trait(b: &syn::TypeParamBound) -> Option<syn::TraitBound> {
    let syn::TypeParamBound::Trait(t) = b else { return None };
    let last = t.path.segments.last()?;
    (matches!(last.arguments, syn::PathArguments::Parenthesized(_))
        && ["Fn", "FnMut", "FnOnce"].contains(&last.ident.to_string().as_str()))
    .then(|| t.clone())
}

/// The closure trait of a parameter's type: `impl Fn(..)`, a type
/// parameter bounded by one, or a function pointer (`fn(i64, i64) ->
/// Option<i64>`, as `Fn(i64, i64) -> Option<i64>`: every function pointer
/// is one).
pub(crate) fn closure_bound(t: &syn::Type, generics: &BTreeMap<Ident, syn::TraitBound>) -> Option<syn::TraitBound> {
    match t {
        syn::Type::ImplTrait(it) => it.bounds.iter().find_map(closure_trait),
        syn::Type::Path(tp) if tp.qself.is_none() => generics.get(tp.path.get_ident()?).cloned(),
        syn::Type::FnPtr(f)
            if f.lifetimes.is_none() && f.unsafety.is_none() && f.abi.is_none() && f.variadic.is_none() =>
        {
            let inputs = f.inputs.iter().map(|a| &a.ty);
            let output = &f.output;
            syn::parse2(quote!(Fn(#(#inputs),*) #output)).ok()
        }
        syn::Type::Paren(p) => closure_bound(&p.elem, generics),
        _ => None,
    }
}

/// The closure trait that the parameter `pt`, of a function whose body is
/// `stmts`, stands for ([`closure_bound`]): a function pointer only where
/// the body does nothing with it but call it ([`only_called`]), since
/// anything else may need its own type.
pub(crate) fn param_closure_bound(
    pt: &syn::PatType,
    generics: &BTreeMap<Ident, syn::TraitBound>,
    stmts: &[syn::Stmt],
) -> Option<syn::TraitBound> {
    closure_bound(&pt.ty, generics).filter(|_| {
        !matches!(&*pt.ty, syn::Type::FnPtr(_) | syn::Type::Paren(_))
            || matches!(&*pt.pat, syn::Pat::Ident(p) if only_called(&p.ident, stmts))
    })
}

/// Whether `name` occurs in `stmts` only as the callee of calls (at least
/// one), each with the same count of arguments: a function pointer only
/// called, which a closure may stand for.
pub(crate) fn only_called(name: &Ident, stmts: &[syn::Stmt]) -> bool {
    struct Uses<'n> {
        name: &'n Ident,
        arity: Option<usize>,
        calls: usize,
        other: bool,
    }
    impl<'ast> syn::visit::Visit<'ast> for Uses<'_> {
        fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
            if matches!(&*c.func, Expr::Path(p) if p.qself.is_none() && p.path.is_ident(self.name)) {
                self.other |= *self.arity.get_or_insert(c.args.len()) != c.args.len();
                self.calls += 1;
                for a in &c.args {
                    self.visit_expr(a);
                }
                return;
            }
            syn::visit::visit_expr_call(self, c);
        }
        fn visit_ident(&mut self, i: &'ast Ident) {
            self.other |= i == self.name;
        }
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            self.other |= names(&m.tokens, self.name);
        }
    }
    let mut uses = Uses { name, arity: None, calls: 0, other: false };
    for s in stmts {
        syn::visit::Visit::visit_stmt(&mut uses, s);
    }
    !uses.other && uses.calls > 0
}

/// A function named by its path as a closure parameter's argument
/// (`i64::checked_add`, a function of the module, an enum's tuple
/// variant), as the closure that calls it with the bound's arguments:
/// `|__jitgen_fn_arg0, __jitgen_fn_arg1| i64::checked_add(__jitgen_fn_arg0,
/// __jitgen_fn_arg1)`, which `closures` inlines where it is called.
/// `None` for any other argument, for paths through `self`, and through
/// `Self` unless `in_impl` (a method's body, where `Self` is named later;
/// not a function of the module).
pub(crate) fn path_as_closure(arg: &Expr, bound: &syn::TraitBound, in_impl: bool) -> Option<Expr> {
    let Expr::Path(p) = arg else { return None };
    let first = p.path.segments.first()?.ident.to_string();
    if p.qself.is_some() || !p.attrs.is_empty() || first == "self" || (first == "Self" && !in_impl) {
        return None;
    }
    let syn::PathArguments::Parenthesized(args) = &bound.path.segments.last()?.arguments else { return None };
    let params: Vec<Ident> = (0..args.inputs.len()).map(|k| format_ident!("__jitgen_fn_arg{}", k)).collect();
    Some(syn::parse_quote_spanned!(syn::spanned::Spanned::span(arg)=> |#(#params),*| #p(#(#params),*)))
}

/// The closure trait an `impl Fn..(A) -> R` parameter names, if that is
/// what it is.
pub(crate) struct ImplClosure {
    /// `Fn`, `FnMut` or `FnOnce`, with its arguments and result.
    pub(crate) bound: syn::TraitBound,
}

impl ImplClosure {
    /// The binding's type and value for the argument `a`: `&dyn Fn(..)`
    /// and `&a`, `&mut dyn FnMut(..)` and `&mut a`, `Box<dyn FnOnce(..)>`
    /// and `Box::new(a)`.
    pub(crate) fn bind(&self, a: &Expr) -> (syn::Type, Expr) {
        let b = &self.bound;
        match b.path.segments.last().map(|s| s.ident.to_string()).as_deref() {
            Some("Fn") => (syn::parse_quote!(&dyn #b), syn::parse_quote!(&(#a))),
            Some("FnMut") => (syn::parse_quote!(&mut dyn #b), syn::parse_quote!(&mut (#a))),
            _ => (syn::parse_quote!(::std::boxed::Box<dyn #b + '_>), syn::parse_quote!(::std::boxed::Box::new(#a))),
        }
    }
}

/// Whether the tokens `ts` hold the identifier `name`.
fn names(ts: &TokenStream, name: &Ident) -> bool {
    ts.clone().into_iter().any(|t| match t {
        TokenTree::Ident(i) => &i == name,
        TokenTree::Group(g) => names(&g.stream(), name),
        _ => false,
    })
}

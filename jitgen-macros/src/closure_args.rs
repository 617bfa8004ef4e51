//! Functions of the module that take a closure (`impl Fn(..)`, a type
//! parameter bounded by `Fn`, or a function pointer they only call),
//! specialized before the analysis to each function or closure their calls
//! hand them: `apply(&mut stack, i64::checked_add)` calls a copy of `apply`
//! without that parameter, whose body binds it first (`let f: &dyn Fn(i64,
//! i64) -> Option<i64> = &(|a0, a1| i64::checked_add(a0, a1));`), and
//! `closures` inlines it where the copy calls it. The analysis has no
//! closure values: such a function left the whole module to Rust.
//!
//! An argument is specialized where it means the same in the copy:
//!
//! - a path to a function or an enum's tuple variant (`i64::checked_add`,
//!   `Value::Number`, a function of the module that no binding of the
//!   caller hides), not through `self` or `Self`;
//! - a closure written at the call (`|a, b| a.wrapping_add(b)`, its
//!   parameters plain names) that captures nothing: every name its body
//!   reads is one of its parameters or, where the caller binds no such
//!   name, a binding of its own, a function, constant or static of the
//!   module, or capitalized (a constructor or a constant); and no macro,
//!   whose tokens could name anything.
//!
//! A call is specialized when every closure argument of it is; copies are
//! shared by calls handing the same arguments, and made for calls in
//! copies too, up to [`MAX_COPIES`].

use std::collections::{BTreeMap, HashSet};

use proc_macro2::Ident;
use quote::{format_ident, ToTokens};
use syn::visit::Visit;
use syn::visit_mut::VisitMut;

use crate::closure_params::{closure_generics, param_closure_bound, path_as_closure, ImplClosure};
use crate::closures::Bound;

/// At most this many copies per module.
const MAX_COPIES: usize = 64;

/// A function of the module with closure parameters.
struct Candidate {
    item: syn::ItemFn,
    /// Per parameter, its closure trait where it is a closure parameter.
    bounds: Vec<Option<syn::TraitBound>>,
}

/// Specializes the functions of `module` that take closures, as the module
/// doc says.
pub fn specialize(module: &mut syn::ItemMod) {
    let Some((_, items)) = &mut module.content else { return };
    let mut candidates = BTreeMap::new();
    let mut names = HashSet::new();
    for i in items.iter() {
        match i {
            syn::Item::Fn(f) => {
                names.insert(f.sig.ident.to_string());
                if let Some(c) = candidate(f) {
                    candidates.insert(f.sig.ident.to_string(), c);
                }
            }
            syn::Item::Const(c) => {
                names.insert(c.ident.to_string());
            }
            syn::Item::Static(s) => {
                names.insert(s.ident.to_string());
            }
            _ => {}
        }
    }
    if candidates.is_empty() {
        return;
    }
    let mut s = Specializer { candidates, names, made: BTreeMap::new(), copies: vec![], bound: HashSet::new() };
    for i in items.iter_mut() {
        match i {
            syn::Item::Fn(f) => s.visit_fn(&f.sig, &mut f.block),
            syn::Item::Impl(im) => {
                for ii in &mut im.items {
                    if let syn::ImplItem::Fn(f) = ii {
                        s.visit_fn(&f.sig, &mut f.block);
                    }
                }
            }
            _ => {}
        }
    }
    // Calls in the copies, which may make more.
    let mut done = 0;
    while done < s.copies.len() {
        let mut f = s.copies[done].clone();
        s.visit_fn(&f.sig.clone(), &mut f.block);
        s.copies[done] = f;
        done += 1;
    }
    // The functions copied may be called nowhere now.
    for i in items.iter_mut() {
        if let syn::Item::Fn(f) = i {
            if s.made.keys().any(|(name, _)| f.sig.ident == name) {
                f.attrs.push(syn::parse_quote!(#[allow(dead_code)]));
            }
        }
    }
    items.extend(s.copies.into_iter().map(syn::Item::Fn));
}

/// `f`, where some of its parameters are closure parameters it can be
/// specialized to.
fn candidate(f: &syn::ItemFn) -> Option<Candidate> {
    let generics = closure_generics(&f.sig.generics);
    let mut bounds = vec![];
    for (k, a) in f.sig.inputs.iter().enumerate() {
        let syn::FnArg::Typed(pt) = a else { return None };
        let syn::Pat::Ident(p) = &*pt.pat else {
            bounds.push(None);
            continue;
        };
        let bound = param_closure_bound(pt, &generics, &f.block.stmts).filter(|_| {
            // A type parameter bounding it names nothing else of the
            // signature.
            let elsewhere = match &*pt.ty {
                syn::Type::Path(tp) => tp.path.get_ident().is_some_and(|g| {
                    let others = f.sig.inputs.iter().enumerate().filter(|(j, _)| *j != k);
                    others
                        .map(|(_, a)| a.to_token_stream())
                        .chain([f.sig.output.to_token_stream()])
                        .any(|t| crate::outline::idents(&t).contains(&g.to_string()))
                }),
                _ => false,
            };
            p.by_ref.is_none() && p.subpat.is_none() && !elsewhere
        });
        bounds.push(bound);
    }
    bounds.iter().any(Option::is_some).then(|| Candidate { item: f.clone(), bounds })
}

/// Rewrites calls of candidates into calls of their copies.
struct Specializer {
    candidates: BTreeMap<String, Candidate>,
    /// The module's functions, constants and statics.
    names: HashSet<String>,
    /// Copies made, by the function and the text of its closure arguments.
    made: BTreeMap<(String, String), Ident>,
    copies: Vec<syn::ItemFn>,
    /// The names the function being visited binds (parameters, patterns).
    bound: HashSet<String>,
}

impl Specializer {
    fn visit_fn(&mut self, sig: &syn::Signature, block: &mut syn::Block) {
        let mut b = Bound::default();
        for a in &sig.inputs {
            if let syn::FnArg::Typed(pt) = a {
                b.visit_pat(&pt.pat);
            }
        }
        b.visit_block(block);
        self.bound = b.names;
        self.visit_block_mut(block);
    }

    /// The closure `arg` is as an argument of a closure parameter bounded
    /// by `bound`, where it means the same in a copy.
    fn closure_arg(&self, arg: &syn::Expr, bound: &syn::TraitBound) -> Option<syn::Expr> {
        match arg {
            syn::Expr::Path(p) if p.path.segments.len() == 1 => {
                let name = p.path.segments[0].ident.to_string();
                let function = self.candidates.contains_key(&name) || self.names.contains(&name);
                (function && !self.bound.contains(&name)).then(|| path_as_closure(arg, bound, false)).flatten()
            }
            syn::Expr::Path(_) => path_as_closure(arg, bound, false),
            syn::Expr::Closure(c) if self.captures_nothing(c) => Some(arg.clone()),
            _ => None,
        }
    }

    fn captures_nothing(&self, c: &syn::ExprClosure) -> bool {
        let plain = |p: &syn::Pat| match p {
            syn::Pat::Ident(pi) => pi.by_ref.is_none() && pi.subpat.is_none(),
            syn::Pat::Type(pt) => matches!(&*pt.pat, syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none()),
            _ => false,
        };
        if c.asyncness.is_some() || !c.inputs.iter().all(plain) {
            return false;
        }
        let mut params = Bound::default();
        for p in &c.inputs {
            params.visit_pat(p);
        }
        let mut own = Bound::default();
        own.visit_expr(&c.body);
        let mut reads = Reads::default();
        reads.visit_expr(&c.body);
        // A name the caller binds is the caller's, even where the module
        // has an item of that name, and where the body binds it too: a read
        // before that binding is the caller's.
        !reads.macros
            && reads.names.iter().all(|n| {
                params.names.contains(n)
                    || !self.bound.contains(n)
                        && (own.names.contains(n)
                            || self.names.contains(n)
                            || n.starts_with(|ch: char| ch.is_uppercase()))
            })
    }

    /// The call of a copy that `c` becomes, where every closure argument
    /// of it can be specialized.
    fn specialized(&mut self, c: &syn::ExprCall) -> Option<syn::Expr> {
        let syn::Expr::Path(p) = &*c.func else { return None };
        let name = p.path.get_ident()?.to_string();
        if self.bound.contains(&name) {
            return None;
        }
        let cand = self.candidates.get(&name)?;
        if cand.bounds.len() != c.args.len() {
            return None;
        }
        let mut closures = vec![];
        for (a, b) in c.args.iter().zip(&cand.bounds) {
            if let Some(b) = b {
                closures.push(Some(self.closure_arg(a, b)?));
            } else {
                closures.push(None);
            }
        }
        let key_text: Vec<String> = closures.iter().flatten().map(|e| e.to_token_stream().to_string()).collect();
        let key = (name.clone(), key_text.join(" , "));
        let copy = match self.made.get(&key) {
            Some(i) => i.clone(),
            None => {
                if self.copies.len() >= MAX_COPIES {
                    return None;
                }
                let ident = format_ident!("__jitgen_{}_with_{}", name, self.made.len());
                let copy = make_copy(cand, &closures, &ident);
                self.copies.push(copy);
                self.made.insert(key, ident.clone());
                ident
            }
        };
        let args = c.args.iter().zip(&closures).filter(|(_, k)| k.is_none()).map(|(a, _)| a);
        let mut call = c.clone();
        call.func = Box::new(syn::parse_quote_spanned!(p.path.segments[0].ident.span()=> #copy));
        call.args = args.cloned().collect();
        Some(syn::Expr::Call(call))
    }
}

impl VisitMut for Specializer {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        syn::visit_mut::visit_expr_mut(self, e);
        if let syn::Expr::Call(c) = e {
            if let Some(s) = self.specialized(c) {
                *e = s;
            }
        }
    }
}

/// The copy of `cand` named `ident`, its closure parameters bound first to
/// `closures` (those that are `Some`) and taken out of its signature, with
/// the type parameters that bounded them.
fn make_copy(cand: &Candidate, closures: &[Option<syn::Expr>], ident: &Ident) -> syn::ItemFn {
    let mut f = cand.item.clone();
    f.sig.ident = ident.clone();
    f.vis = syn::Visibility::Inherited;
    let mut lets = vec![];
    let mut gone = vec![];
    let inputs = std::mem::take(&mut f.sig.inputs);
    for ((a, b), c) in inputs.into_iter().zip(&cand.bounds).zip(closures) {
        match (b, c, &a) {
            (Some(b), Some(c), syn::FnArg::Typed(pt)) => {
                let (ty, value) = ImplClosure { bound: b.clone() }.bind(c);
                let pat = &pt.pat;
                lets.push(syn::parse_quote!(let #pat: #ty = #value;));
                if let syn::Type::Path(tp) = &*pt.ty {
                    gone.extend(tp.path.get_ident().cloned());
                }
            }
            _ => f.sig.inputs.push(a),
        }
    }
    let params = std::mem::take(&mut f.sig.generics.params);
    f.sig.generics.params =
        params.into_iter().filter(|p| !matches!(p, syn::GenericParam::Type(t) if gone.contains(&t.ident))).collect();
    if let Some(w) = &mut f.sig.generics.where_clause {
        let preds = std::mem::take(&mut w.predicates);
        w.predicates = preds
            .into_iter()
            .filter(|p| {
                !matches!(p, syn::WherePredicate::Type(t)
                    if matches!(&t.bounded_ty, syn::Type::Path(tp) if tp.path.get_ident().is_some_and(|i| gone.contains(i))))
            })
            .collect();
    }
    if f.sig.generics.params.is_empty() {
        f.sig.generics.lt_token = None;
        f.sig.generics.gt_token = None;
    }
    if f.sig.generics.where_clause.as_ref().is_some_and(|w| w.predicates.is_empty()) {
        f.sig.generics.where_clause = None;
    }
    let stmts = std::mem::take(&mut f.block.stmts);
    f.block.stmts = lets.into_iter().chain(stmts).collect();
    f
}

/// The one-name paths an expression reads, and whether it holds a macro.
#[derive(Default)]
struct Reads {
    names: HashSet<String>,
    macros: bool,
}

impl<'ast> Visit<'ast> for Reads {
    fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
        if let Some(i) = p.path.get_ident() {
            self.names.insert(i.to_string());
        } else if p.qself.is_none() {
            // `self.x` is a field, but `self::f` and `Self::f` are paths;
            // either way `self` is not the copy's.
            if let Some(first) = p.path.segments.first() {
                if first.ident == "self" || first.ident == "Self" {
                    self.names.insert(first.ident.to_string());
                }
            }
        }
        syn::visit::visit_expr_path(self, p);
    }
    fn visit_macro(&mut self, _: &'ast syn::Macro) {
        self.macros = true;
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};

    fn check(src: &str, want: Expect) {
        let mut m: syn::ItemMod = syn::parse_str(src).unwrap();
        super::specialize(&mut m);
        crate::closures::inline(&mut m);
        want.assert_eq(&prettyplease::unparse(&syn::parse_quote!(#m)));
    }

    #[test]
    fn functions_taking_closures_are_specialized_to_what_their_calls_hand_them() {
        check(
            "mod m {
                fn apply(stack: &mut Vec<i64>, f: fn(i64, i64) -> Option<i64>) -> Option<()> {
                    let b = stack.pop()?; let a = stack.pop()?; stack.push(f(a, b)?); Some(())
                }
                fn each<F>(stack: &mut Vec<i64>, mut f: F) where F: FnMut(i64) { for x in stack.iter() { f(*x) } }
                fn twice(x: i64, f: impl Fn(i64) -> i64) -> i64 { f(f(x)) }
                fn halve(x: i64) -> i64 { x / 2 }
                const K: i64 = 3;
                struct Vm;
                impl Vm {
                    fn op(a: i64, b: i64) -> Option<i64> { a.checked_sub(b) }
                    fn step(&mut self, stack: &mut Vec<i64>) { apply(stack, Self::op); }
                }
                fn run(stack: &mut Vec<i64>, k: i64) -> i64 {
                    apply(stack, i64::checked_add);
                    apply(stack, i64::checked_add);
                    apply(stack, |a, b| a.checked_mul(b + K));
                    let mut n = 0;
                    each(stack, |x| n += x);
                    twice(twice(k, halve), |x| x * k) + twice(1, |x| x - 1)
                }
                fn shadowed(k: i64) -> i64 { let halve = |x: i64| x + k; twice(k, halve) }
                fn shadowed_inside(k: i64) -> i64 { let halve = |x: i64| x + k; let K = 2; twice(k, |x| halve(x) * K) }
                fn bound_after_read(y: i64) -> i64 { twice(1, |x| { let z = x + y; let y = 2; z * y }) }
            }",
            expect![[r#"
                mod m {
                    #[allow(dead_code)]
                    fn apply(stack: &mut Vec<i64>, f: fn(i64, i64) -> Option<i64>) -> Option<()> {
                        let b = stack.pop()?;
                        let a = stack.pop()?;
                        stack.push(f(a, b)?);
                        Some(())
                    }
                    fn each<F>(stack: &mut Vec<i64>, mut f: F)
                    where
                        F: FnMut(i64),
                    {
                        for x in stack.iter() {
                            f(*x)
                        }
                    }
                    #[allow(dead_code)]
                    fn twice(x: i64, f: impl Fn(i64) -> i64) -> i64 {
                        f(f(x))
                    }
                    fn halve(x: i64) -> i64 {
                        x / 2
                    }
                    const K: i64 = 3;
                    struct Vm;
                    impl Vm {
                        fn op(a: i64, b: i64) -> Option<i64> {
                            a.checked_sub(b)
                        }
                        fn step(&mut self, stack: &mut Vec<i64>) {
                            apply(stack, Self::op);
                        }
                    }
                    fn run(stack: &mut Vec<i64>, k: i64) -> i64 {
                        __jitgen_apply_with_0(stack);
                        __jitgen_apply_with_0(stack);
                        __jitgen_apply_with_1(stack);
                        let mut n = 0;
                        each(stack, |x| n += x);
                        twice(__jitgen_twice_with_2(k), |x| x * k) + __jitgen_twice_with_3(1)
                    }
                    fn shadowed(k: i64) -> i64 {
                        let halve = |x: i64| x + k;
                        twice(k, halve)
                    }
                    fn shadowed_inside(k: i64) -> i64 {
                        let K = 2;
                        twice(
                            k,
                            |x| (
                                {
                                    let __jitgen_closure_arg0 = x;
                                    let x: i64 = __jitgen_closure_arg0;
                                    x + k
                                } * K
                            ),
                        )
                    }
                    fn bound_after_read(y: i64) -> i64 {
                        twice(
                            1,
                            |x| {
                                let z = x + y;
                                let y = 2;
                                z * y
                            },
                        )
                    }
                    fn __jitgen_apply_with_0(stack: &mut Vec<i64>) -> Option<()> {
                        let b = stack.pop()?;
                        let a = stack.pop()?;
                        stack
                            .push(
                                {
                                    let __jitgen_closure_arg0 = a;
                                    let __jitgen_closure_arg1 = b;
                                    let __jitgen_fn_arg0 = __jitgen_closure_arg0;
                                    let __jitgen_fn_arg1 = __jitgen_closure_arg1;
                                    i64::checked_add(__jitgen_fn_arg0, __jitgen_fn_arg1)
                                }?,
                            );
                        Some(())
                    }
                    fn __jitgen_apply_with_1(stack: &mut Vec<i64>) -> Option<()> {
                        let b = stack.pop()?;
                        let a = stack.pop()?;
                        stack
                            .push(
                                {
                                    let __jitgen_closure_arg0 = a;
                                    let __jitgen_closure_arg1 = b;
                                    let a = __jitgen_closure_arg0;
                                    let b = __jitgen_closure_arg1;
                                    a.checked_mul(b + K)
                                }?,
                            );
                        Some(())
                    }
                    fn __jitgen_twice_with_2(x: i64) -> i64 {
                        {
                            let __jitgen_closure_arg0 = {
                                let __jitgen_closure_arg0 = x;
                                let __jitgen_fn_arg0 = __jitgen_closure_arg0;
                                halve(__jitgen_fn_arg0)
                            };
                            let __jitgen_fn_arg0 = __jitgen_closure_arg0;
                            halve(__jitgen_fn_arg0)
                        }
                    }
                    fn __jitgen_twice_with_3(x: i64) -> i64 {
                        {
                            let __jitgen_closure_arg0 = {
                                let __jitgen_closure_arg0 = x;
                                let x = __jitgen_closure_arg0;
                                x - 1
                            };
                            let x = __jitgen_closure_arg0;
                            x - 1
                        }
                    }
                }
            "#]],
        );
    }
}

//! Functions written inside a function's body, moved to the module before
//! the analysis, which reads the module's functions only (an item in a body
//! is Rust it does not support, and left the whole module to Rust).
//!
//! A nested `fn` captures nothing of the function around it, so at the
//! module's level it means the same, where its name occurs nowhere else in
//! the module (a glob import may bring that name), and where it names
//! nothing else the body declares: the
//! body's `use` declarations go with it, and a body that declares other
//! items (types, constants) or `macro_rules!` that its functions call keeps
//! its functions. All of a body's functions move, or none (one may call
//! another).

use std::collections::{HashMap, HashSet};

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;

/// Moves the nested functions of `module`'s functions and methods to the
/// module, as the module doc says.
pub fn hoist(module: &mut syn::ItemMod) {
    let Some((_, items)) = &mut module.content else { return };
    let taken = module_names(items);
    let mut counts: HashMap<String, usize> = HashMap::new();
    for body in bodies(items) {
        for f in nested_fns(body) {
            *counts.entry(f.sig.ident.to_string()).or_default() += 1;
        }
    }
    // How often each identifier occurs in the module: a name its body's
    // functions take must occur nowhere else (a glob import may bring it).
    let mut everywhere: HashMap<String, usize> = HashMap::new();
    count_idents(&quote::quote!(#(#items)*), &mut everywhere);
    let mut hoisted: Vec<syn::Item> = vec![];
    for body in bodies_mut(items) {
        let fns = nested_fns(body);
        if fns.is_empty() {
            continue;
        }
        let mut here: HashMap<String, usize> = HashMap::new();
        count_idents(&body.to_token_stream(), &mut here);
        let names: Vec<String> = fns.iter().map(|f| f.sig.ident.to_string()).collect();
        if names.iter().any(|n| taken.contains(n) || counts[n] > 1 || everywhere[n] > here[n]) {
            continue;
        }
        let local_macros: HashSet<String> = body
            .stmts
            .iter()
            .filter_map(|s| match s {
                syn::Stmt::Item(syn::Item::Macro(m)) => m.ident.as_ref().map(|i| i.to_string()),
                _ => None,
            })
            .collect();
        let other_items = body.stmts.iter().any(|s| {
            matches!(s, syn::Stmt::Item(i) if !matches!(i, syn::Item::Fn(_) | syn::Item::Use(_) | syn::Item::Macro(_)))
        });
        let calls_local_macro = fns.iter().any(|f| {
            crate::outline::called_macros(&f.block.to_token_stream()).iter().any(|m| local_macros.contains(m))
        });
        if other_items || calls_local_macro {
            continue;
        }
        let uses: Vec<syn::ItemUse> = body
            .stmts
            .iter()
            .filter_map(|s| match s {
                syn::Stmt::Item(syn::Item::Use(u)) => Some(u.clone()),
                _ => None,
            })
            .collect();
        body.stmts.retain(|s| !matches!(s, syn::Stmt::Item(syn::Item::Fn(_))));
        // What only the functions used goes unused in the body.
        for s in &mut body.stmts {
            if let syn::Stmt::Item(syn::Item::Use(u)) = s {
                u.attrs.push(syn::parse_quote!(#[allow(unused_imports)]));
            }
        }
        for mut f in fns {
            for u in uses.iter().rev() {
                let mut u = u.clone();
                u.attrs.push(syn::parse_quote!(#[allow(unused_imports)]));
                f.block.stmts.insert(0, syn::Stmt::Item(syn::Item::Use(u)));
            }
            f.vis = syn::Visibility::Inherited;
            hoisted.push(syn::Item::Fn(f));
        }
    }
    items.extend(hoisted);
}

/// The names the module's items bind (and its `use`s bring in).
fn module_names(items: &[syn::Item]) -> HashSet<String> {
    let mut out = HashSet::new();
    for i in items {
        let name = match i {
            syn::Item::Fn(f) => Some(&f.sig.ident),
            syn::Item::Struct(s) => Some(&s.ident),
            syn::Item::Enum(e) => Some(&e.ident),
            syn::Item::Const(c) => Some(&c.ident),
            syn::Item::Static(s) => Some(&s.ident),
            syn::Item::Type(t) => Some(&t.ident),
            syn::Item::Mod(m) => Some(&m.ident),
            syn::Item::Union(u) => Some(&u.ident),
            syn::Item::Trait(t) => Some(&t.ident),
            syn::Item::Macro(m) => m.ident.as_ref(),
            _ => None,
        };
        if let Some(n) = name {
            out.insert(n.to_string());
        }
        if let syn::Item::Use(u) = i {
            // Every identifier of a `use` tree: what it brings in, and more.
            let mut ids = HashMap::new();
            count_idents(&u.tree.to_token_stream(), &mut ids);
            out.extend(ids.into_keys());
        }
    }
    out
}

/// Counts the identifiers of `ts`, at any depth.
fn count_idents(ts: &TokenStream, out: &mut HashMap<String, usize>) {
    for t in ts.clone() {
        match t {
            TokenTree::Ident(id) => *out.entry(id.to_string()).or_default() += 1,
            TokenTree::Group(g) => count_idents(&g.stream(), out),
            _ => {}
        }
    }
}

/// The bodies of the module's functions and methods.
fn bodies(items: &[syn::Item]) -> Vec<&syn::Block> {
    let mut out = vec![];
    for i in items {
        match i {
            syn::Item::Fn(f) => out.push(&*f.block),
            syn::Item::Impl(im) => out.extend(im.items.iter().filter_map(|ii| match ii {
                syn::ImplItem::Fn(f) => Some(&f.block),
                _ => None,
            })),
            _ => {}
        }
    }
    out
}

fn bodies_mut(items: &mut [syn::Item]) -> Vec<&mut syn::Block> {
    let mut out = vec![];
    for i in items {
        match i {
            syn::Item::Fn(f) => out.push(&mut *f.block),
            syn::Item::Impl(im) => out.extend(im.items.iter_mut().filter_map(|ii| match ii {
                syn::ImplItem::Fn(f) => Some(&mut f.block),
                _ => None,
            })),
            _ => {}
        }
    }
    out
}

/// The functions declared at the top level of `body`.
fn nested_fns(body: &syn::Block) -> Vec<syn::ItemFn> {
    body.stmts
        .iter()
        .filter_map(|s| match s {
            syn::Stmt::Item(syn::Item::Fn(f)) => Some(f.clone()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};

    fn check(src: &str, want: Expect) {
        let mut m: syn::ItemMod = syn::parse_str(src).unwrap();
        super::hoist(&mut m);
        want.assert_eq(&prettyplease::unparse(&syn::parse_quote!(#m)));
    }

    #[test]
    fn nested_functions_move_to_the_module_with_the_bodys_uses() {
        check(
            "mod m { pub fn run(n: i64) -> i64 { use Op::*; let k = twice(n); fn twice(x: i64) -> i64 { x * 2 } \
             fn pick(o: Op) -> i64 { match o { Add => 1, Sub => 2 } } k + pick(Add) } \
             impl Vm { fn go(&self) -> i64 { fn one() -> i64 { 1 } one() } } }",
            expect![[r#"
                mod m {
                    pub fn run(n: i64) -> i64 {
                        #[allow(unused_imports)]
                        use Op::*;
                        let k = twice(n);
                        k + pick(Add)
                    }
                    impl Vm {
                        fn go(&self) -> i64 {
                            one()
                        }
                    }
                    fn twice(x: i64) -> i64 {
                        #[allow(unused_imports)]
                        use Op::*;
                        x * 2
                    }
                    fn pick(o: Op) -> i64 {
                        #[allow(unused_imports)]
                        use Op::*;
                        match o {
                            Add => 1,
                            Sub => 2,
                        }
                    }
                    fn one() -> i64 {
                        1
                    }
                }
            "#]],
        );
    }

    #[test]
    fn nested_functions_stay_where_their_names_or_the_bodys_items_would_change() {
        // A name the module has, a name two bodies use, a body declaring a
        // constant, a function calling the body's own macro, a name another
        // function uses (which a glob import may bring it).
        check(
            "mod m { fn twice() {} fn a() { fn twice() {} } fn b() { fn same() {} } fn c() { fn same() {} } \
             fn d() { const K: i64 = 1; fn k() -> i64 { K } } \
             fn e() { macro_rules! one { () => { 1 } } fn f() -> i64 { one!() } } \
             fn g() { fn elsewhere() {} elsewhere() } fn h() { elsewhere() } }",
            expect![[r#"
                mod m {
                    fn twice() {}
                    fn a() {
                        fn twice() {}
                    }
                    fn b() {
                        fn same() {}
                    }
                    fn c() {
                        fn same() {}
                    }
                    fn d() {
                        const K: i64 = 1;
                        fn k() -> i64 {
                            K
                        }
                    }
                    fn e() {
                        macro_rules! one {
                            () => {
                                1
                            };
                        }
                        fn f() -> i64 {
                            one!()
                        }
                    }
                    fn g() {
                        fn elsewhere() {}
                        elsewhere()
                    }
                    fn h() {
                        elsewhere()
                    }
                }
            "#]],
        );
    }
}

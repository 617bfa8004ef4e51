//! Items written inside a function's body, moved to the module before the
//! analysis, which reads the module's items only (an item in a body is Rust
//! it does not support, and left the whole module to Rust).
//!
//! An item captures nothing of the function around it (Rust forbids it), so
//! at the module's level it means the same, where its name occurs nowhere
//! else in the module (a glob import may bring that name), and where it
//! names nothing else the body declares:
//!
//! - A `use` moves where every name it brings in occurs only in its body,
//!   none is a name of the module, and it is no glob and no path into an
//!   enum of the module (the analysis resolves those in place).
//! - Functions, constants, statics, structs, enums, unions, type aliases
//!   and `impl` blocks move together, all of a body's or none (one may name
//!   another). A body whose items include others (a module, a trait, an
//!   `extern` block), or whose `macro_rules!` an item calls, keeps them.
//! - A `use` that stays is copied into each moved function; a body whose
//!   other items name what such a `use` brings in keeps its items.

use std::collections::{HashMap, HashSet};

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;

/// Moves the items of `module`'s functions and methods to the module, as
/// the module doc says.
pub fn hoist(module: &mut syn::ItemMod) {
    let Some((_, items)) = &mut module.content else { return };
    let taken = module_names(items);
    let enums: HashSet<String> = items
        .iter()
        .filter_map(|i| match i {
            syn::Item::Enum(e) => Some(e.ident.to_string()),
            _ => None,
        })
        .collect();
    let mut counts: HashMap<String, usize> = HashMap::new();
    for body in bodies(items) {
        for i in body_items(body) {
            if let Some(n) = item_name(i) {
                *counts.entry(n).or_default() += 1;
            }
        }
    }
    // How often each identifier occurs in the module: a name a body's items
    // take must occur nowhere else (a glob import may bring it).
    let mut everywhere: HashMap<String, usize> = HashMap::new();
    count_idents(&quote::quote!(#(#items)*), &mut everywhere);
    let mut hoisted = hoist_uses(items, &taken, &enums, &everywhere);
    for body in bodies_mut(items) {
        let mut here: HashMap<String, usize> = HashMap::new();
        count_idents(&body.to_token_stream(), &mut here);
        let only_here = |n: &String| !taken.contains(n) && everywhere.get(n) == here.get(n);
        let moving: Vec<syn::Item> = body_items(body).into_iter().cloned().collect();
        if moving.is_empty() || !moving.iter().all(movable_item) {
            continue;
        }
        let names: Vec<String> = moving.iter().filter_map(item_name).collect();
        if names.iter().any(|n| !only_here(n) || counts[n] > 1) {
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
        let calls_local_macro = moving
            .iter()
            .any(|i| crate::outline::called_macros(&i.to_token_stream()).iter().any(|m| local_macros.contains(m)));
        let uses: Vec<syn::ItemUse> = body
            .stmts
            .iter()
            .filter_map(|s| match s {
                syn::Stmt::Item(syn::Item::Use(u)) => Some(u.clone()),
                _ => None,
            })
            .collect();
        // What the uses that stay bring in, for items that are not
        // functions (a function gets its own copies of them).
        let from_uses: HashSet<String> = uses.iter().flat_map(|u| brought_in(&u.tree)).collect();
        let glob = uses.iter().any(|u| has_glob(&u.tree));
        let needs_a_use = moving.iter().filter(|i| !matches!(i, syn::Item::Fn(_))).any(|i| {
            let mut ids = HashMap::new();
            count_idents(&i.to_token_stream(), &mut ids);
            glob || ids.keys().any(|k| from_uses.contains(k))
        });
        if calls_local_macro || needs_a_use {
            continue;
        }
        body.stmts.retain(|s| !matches!(s, syn::Stmt::Item(i) if movable_item(i)));
        // What only the functions used goes unused in the body.
        for s in &mut body.stmts {
            if let syn::Stmt::Item(syn::Item::Use(u)) = s {
                u.attrs.push(syn::parse_quote!(#[allow(unused_imports)]));
            }
        }
        for mut item in moving {
            if let syn::Item::Fn(f) = &mut item {
                for u in uses.iter().rev() {
                    let mut u = u.clone();
                    u.attrs.push(syn::parse_quote!(#[allow(unused_imports)]));
                    f.block.stmts.insert(0, syn::Stmt::Item(syn::Item::Use(u)));
                }
            }
            make_private(&mut item);
            hoisted.push(item);
        }
    }
    items.extend(hoisted);
}

/// Takes the `use`s that move out of the bodies (see the module doc), one
/// of each: the same `use` in several bodies moves where the names it
/// brings in occur only in those bodies.
fn hoist_uses(
    items: &mut [syn::Item],
    taken: &HashSet<String>,
    enums: &HashSet<String>,
    everywhere: &HashMap<String, usize>,
) -> Vec<syn::Item> {
    // Each movable `use` (by its text), and the identifiers of the bodies
    // that have it, counted.
    let mut seen: HashMap<String, (syn::ItemUse, HashMap<String, usize>)> = HashMap::new();
    for body in bodies(items) {
        let mut here: HashMap<String, usize> = HashMap::new();
        count_idents(&body.to_token_stream(), &mut here);
        let mut keys = HashSet::new();
        for s in &body.stmts {
            if let syn::Stmt::Item(syn::Item::Use(u)) = s {
                if movable_use(u, enums) && keys.insert(u.to_token_stream().to_string()) {
                    let e = seen.entry(u.to_token_stream().to_string()).or_insert_with(|| (u.clone(), HashMap::new()));
                    for (k, n) in &here {
                        *e.1.entry(k.clone()).or_default() += n;
                    }
                }
            }
        }
    }
    let moving: HashSet<String> = seen
        .iter()
        .filter(|(_, (u, counted))| {
            brought_in(&u.tree).iter().all(|n| !taken.contains(n) && everywhere.get(n) == counted.get(n))
        })
        .map(|(k, _)| k.clone())
        .collect();
    for body in bodies_mut(items) {
        body.stmts.retain(
            |s| !matches!(s, syn::Stmt::Item(syn::Item::Use(u)) if moving.contains(&u.to_token_stream().to_string())),
        );
    }
    let mut out: Vec<(String, syn::Item)> = seen
        .into_iter()
        .filter(|(k, _)| moving.contains(k))
        .map(|(k, (mut u, _))| {
            u.vis = syn::Visibility::Inherited;
            (k, syn::Item::Use(u))
        })
        .collect();
    // (In a fixed order: the expansion must not depend on hashing.)
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out.into_iter().map(|(_, u)| u).collect()
}

/// The kinds of item that move (see the module doc).
fn movable_item(i: &syn::Item) -> bool {
    matches!(
        i,
        syn::Item::Fn(_)
            | syn::Item::Const(_)
            | syn::Item::Static(_)
            | syn::Item::Struct(_)
            | syn::Item::Enum(_)
            | syn::Item::Union(_)
            | syn::Item::Type(_)
            | syn::Item::Impl(_)
    )
}

/// The name an item binds.
fn item_name(i: &syn::Item) -> Option<String> {
    let id = match i {
        syn::Item::Fn(f) => &f.sig.ident,
        syn::Item::Const(c) => &c.ident,
        syn::Item::Static(s) => &s.ident,
        syn::Item::Struct(s) => &s.ident,
        syn::Item::Enum(e) => &e.ident,
        syn::Item::Union(u) => &u.ident,
        syn::Item::Type(t) => &t.ident,
        syn::Item::Trait(t) => &t.ident,
        syn::Item::Mod(m) => &m.ident,
        _ => return None,
    };
    Some(id.to_string())
}

/// A moved item is private to the module, as it was to its body (a `pub`
/// item of a body is reachable from nowhere; in the module it would be
/// exported).
fn make_private(i: &mut syn::Item) {
    let vis = match i {
        syn::Item::Fn(f) => &mut f.vis,
        syn::Item::Const(c) => &mut c.vis,
        syn::Item::Static(s) => &mut s.vis,
        syn::Item::Struct(s) => &mut s.vis,
        syn::Item::Enum(e) => &mut e.vis,
        syn::Item::Union(u) => &mut u.vis,
        syn::Item::Type(t) => &mut t.vis,
        _ => return,
    };
    *vis = syn::Visibility::Inherited;
}

/// A `use` that may move: no glob, no path into an enum of the module
/// (`use Op::Add;`, which the analysis resolves where it stands).
fn movable_use(u: &syn::ItemUse, enums: &HashSet<String>) -> bool {
    let first = match &u.tree {
        syn::UseTree::Path(p) => p.ident.to_string(),
        syn::UseTree::Name(n) => n.ident.to_string(),
        syn::UseTree::Rename(r) => r.ident.to_string(),
        _ => return false,
    };
    let into_enum = enums.contains(&first)
        || matches!(&u.tree, syn::UseTree::Path(p) if (p.ident == "self" || p.ident == "crate" || p.ident == "super")
            && matches!(&*p.tree, syn::UseTree::Path(q) if enums.contains(&q.ident.to_string())));
    !has_glob(&u.tree) && !into_enum
}

/// The names a `use` tree brings into scope.
fn brought_in(t: &syn::UseTree) -> Vec<String> {
    match t {
        syn::UseTree::Path(p) => brought_in(&p.tree),
        syn::UseTree::Name(n) => vec![n.ident.to_string()],
        syn::UseTree::Rename(r) => vec![r.rename.to_string()],
        syn::UseTree::Glob(_) => vec![],
        syn::UseTree::Group(g) => g.items.iter().flat_map(brought_in).collect(),
    }
}

fn has_glob(t: &syn::UseTree) -> bool {
    match t {
        syn::UseTree::Path(p) => has_glob(&p.tree),
        syn::UseTree::Glob(_) => true,
        syn::UseTree::Group(g) => g.items.iter().any(has_glob),
        _ => false,
    }
}

/// The items declared at the top level of `body`, but its `use`s and
/// macros.
fn body_items(body: &syn::Block) -> Vec<&syn::Item> {
    body.stmts
        .iter()
        .filter_map(|s| match s {
            syn::Stmt::Item(syn::Item::Use(_) | syn::Item::Macro(_)) => None,
            syn::Stmt::Item(i) => Some(i),
            _ => None,
        })
        .collect()
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

/// The bodies of the module's functions and methods, to rewrite (the
/// pre-passes of `closures` and `byte_arrays` too).
pub(crate) fn bodies_mut(items: &mut [syn::Item]) -> Vec<&mut syn::Block> {
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
    fn items_stay_where_their_names_or_the_bodys_other_declarations_would_change() {
        // A name the module has, a name two bodies use, a trait among the
        // items, a function calling the body's own macro, a name another
        // function uses (which a glob import may bring it), a constant
        // naming what a glob of the body brings in.
        check(
            "mod m { fn twice() {} fn a() { fn twice() {} } fn b() { fn same() {} } fn c() { fn same() {} } \
             fn d() { trait T {} const K: i64 = 1; fn k() -> i64 { K } } \
             fn e() { macro_rules! one { () => { 1 } } fn f() -> i64 { one!() } } \
             fn g() { fn elsewhere() {} elsewhere() } fn h() { elsewhere() } \
             fn i() { use Op::*; const FIRST: Op = Add; } }",
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
                        trait T {}
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
                    fn i() {
                        use Op::*;
                        const FIRST: Op = Add;
                    }
                }
            "#]],
        );
    }

    #[test]
    fn constants_types_impls_and_uses_move_with_the_functions() {
        // A `use` of names only its bodies have moves, once; one whose name
        // another body has from another `use` stays, and the moved function
        // gets a copy of it.
        check(
            "mod m { pub fn run(n: usize) -> usize { use std::cmp::max; use std::io::Write; \
             const LIMIT: usize = 256; pub struct Frame { pub base: usize } \
             impl Frame { fn top(&self) -> usize { self.base + LIMIT } } \
             static SEEN: usize = 0; fn first() -> usize { SEEN } \
             let f = Frame { base: n }; max(f.top(), first()) } \
             fn other(out: &mut Vec<u8>) { use std::io::Write; out.write_all(b\"x\").unwrap(); } \
             fn fmt(out: &mut String) { use std::cmp::max; use std::fmt::Write; let _ = write!(out, \"{}\", max(1, 2)); } }",
            expect![[r#"
                mod m {
                    pub fn run(n: usize) -> usize {
                        #[allow(unused_imports)]
                        use std::io::Write;
                        let f = Frame { base: n };
                        max(f.top(), first())
                    }
                    fn other(out: &mut Vec<u8>) {
                        use std::io::Write;
                        out.write_all(b"x").unwrap();
                    }
                    fn fmt(out: &mut String) {
                        use std::fmt::Write;
                        let _ = write!(out, "{}", max(1, 2));
                    }
                    use std::cmp::max;
                    const LIMIT: usize = 256;
                    struct Frame {
                        pub base: usize,
                    }
                    impl Frame {
                        fn top(&self) -> usize {
                            self.base + LIMIT
                        }
                    }
                    static SEEN: usize = 0;
                    fn first() -> usize {
                        #[allow(unused_imports)]
                        use std::io::Write;
                        SEEN
                    }
                }
            "#]],
        );
    }
}

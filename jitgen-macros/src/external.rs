//! Types the annotated module imports from other modules of its crate
//! (`use crate::value::Value;`, `use super::*;`), read from their source
//! files, so that the analysis models them as it models the module's own.
//!
//! An attribute macro sees only its module's tokens; the types an
//! interpreter's values are made of usually live beside it (`value.rs`). So
//! the macro finds the files of the modules the annotated module imports
//! from (the crate's root file is the first `lib.rs` or `main.rs` found
//! from the annotated file's directory up to the package's), parses them,
//! and passes their structs, enums and inherent impls to the analysis as
//! external items:
//!
//! - an enum, or a struct whose fields are all visible to the crate, is
//!   modeled; a struct with a private field is an opaque object (its fields
//!   cannot be named from generated code);
//! - their methods are residual calls of Rust's own, not inlined: their
//!   bodies may use what is private to their module. A modeled type's
//!   method that only computes on its arguments, by value or through shared
//!   references, calls only such methods, and names nothing but its own
//!   bindings and the variants of types modeled here (`fn is_falsey(self)
//!   -> bool { matches!(self, Value::Nil | Value::Bool(false)) }`) is
//!   analyzed instead, as the module's own methods are, and inlined
//!   ([`inlinable`]);
//! - generated code names them through `use` items of their paths.
//!
//! Cargo rebuilds the crate, and the macro runs again, whenever one of its
//! files changes. What cannot be found or read is left out: code using it
//! is left to Rust, as for any type the analysis does not model.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};

/// What the annotated module imports from its crate's other modules.
#[derive(Default)]
pub struct External {
    /// Their structs, enums and inherent impls (methods marked
    /// `#[jit_opaque]`).
    pub items: Vec<syn::Item>,
    /// `use` items naming each of those types, for generated code.
    pub uses: Vec<TokenStream>,
}

impl External {
    /// The items as source text, for `jit::graphs()` at run time.
    pub fn source(&self) -> String {
        let items = &self.items;
        quote!(#(#items)*).to_string()
    }
}

/// The external items `module` imports, read from the files of the modules
/// it names in its `use` items.
pub fn find(module: &syn::ItemMod) -> External {
    let Some((_, items)) = &module.content else { return External::default() };
    let Some(file) = proc_macro2::Span::call_site().local_file() else { return External::default() };
    let Some(root) = crate_root(&file) else { return External::default() };
    let own: HashSet<String> = items
        .iter()
        .filter_map(|i| match i {
            syn::Item::Struct(s) => Some(s.ident.to_string()),
            syn::Item::Enum(e) => Some(e.ident.to_string()),
            syn::Item::Type(t) => Some(t.ident.to_string()),
            _ => None,
        })
        .collect();
    let mut out = External::default();
    let mut seen_modules = HashSet::new();
    // A name imported from two modules is taken from the first.
    let mut taken = own.clone();
    for item in items {
        let syn::Item::Use(u) = item else { continue };
        let mut paths = vec![];
        use_paths(&u.tree, &mut vec![], &mut paths);
        for (segments, _) in paths {
            let Some(path) = module_path(&segments, &file, &root) else { continue };
            if !seen_modules.insert(path.clone()) {
                continue;
            }
            let Some(module_items) = read_module(&root, &path) else { continue };
            add_types(&mut out, &module_items, &path, &mut taken);
        }
    }
    out
}

/// The directory of the crate's root file: from `file`'s directory up to
/// the package's (`CARGO_MANIFEST_DIR`), the first holding `lib.rs` or
/// `main.rs`.
fn crate_root(file: &Path) -> Option<PathBuf> {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
    let mut dir = file.parent()?.to_path_buf();
    loop {
        if dir.join("lib.rs").is_file() || dir.join("main.rs").is_file() {
            return Some(dir);
        }
        if manifest.as_deref().is_some_and(|m| dir.ends_with(m) || dir == m) {
            return None;
        }
        dir = dir.parent()?.to_path_buf();
        if dir.as_os_str().is_empty() {
            return None;
        }
    }
}

/// The module path (from the crate root) of an imported path's module:
/// `crate::value::Value` -> `["value"]`; `super::X` from the annotated
/// module, inline in `src/vm.rs` -> `["vm"]` (the file's own module).
fn module_path(segments: &[String], file: &Path, root: &Path) -> Option<Vec<String>> {
    match segments.first().map(String::as_str) {
        Some("crate") => Some(segments[1..].to_vec()),
        Some("super") => {
            // The annotated module is inline in `file`: `super` is the
            // file's module.
            let rel = file.strip_prefix(root).ok()?;
            let mut m: Vec<String> = rel.with_extension("").iter().map(|s| s.to_string_lossy().into_owned()).collect();
            if matches!(m.last().map(String::as_str), Some("mod" | "lib" | "main")) {
                m.pop();
            }
            let mut rest = segments[1..].to_vec();
            while rest.first().map(String::as_str) == Some("super") {
                m.pop()?;
                rest.remove(0);
            }
            m.extend(rest);
            Some(m)
        }
        _ => None,
    }
}

/// The `use` tree's paths: the module segments and the imported name (or
/// `*`).
fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => out.push((prefix.clone(), n.ident.to_string())),
        syn::UseTree::Rename(r) => out.push((prefix.clone(), r.ident.to_string())),
        syn::UseTree::Glob(_) => out.push((prefix.clone(), "*".into())),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_paths(t, prefix, out);
            }
        }
    }
}

/// The items of the module at `path` under the crate root: its file
/// (`a/b.rs`, `a/b/mod.rs`), or an inline module of an enclosing file.
fn read_module(root: &Path, path: &[String]) -> Option<Vec<syn::Item>> {
    let root_file = ["lib.rs", "main.rs"].iter().map(|f| root.join(f)).find(|f| f.is_file())?;
    let mut items = parse(&root_file)?;
    let mut dir = root.to_path_buf();
    for (k, seg) in path.iter().enumerate() {
        let inline = items.iter().find_map(|i| match i {
            syn::Item::Mod(m) if m.ident == seg => Some(m.content.as_ref().map(|(_, it)| it.clone())),
            _ => None,
        })?;
        items = match inline {
            Some(inner) => inner,
            None => {
                let file =
                    [dir.join(format!("{seg}.rs")), dir.join(seg).join("mod.rs")].into_iter().find(|f| f.is_file())?;
                parse(&file)?
            }
        };
        if k + 1 < path.len() {
            dir = dir.join(seg);
        }
    }
    Some(items)
}

/// A file's items, its item macros expanded (a macro declaring an enum).
fn parse(file: &Path) -> Option<Vec<syn::Item>> {
    let text = std::fs::read_to_string(file).ok()?;
    syn::parse_file(&text).ok().map(|f| hint_annotator::macro_rules::expand_items(f.items))
}

/// Whether a field is visible to the whole crate.
fn crate_visible(v: &syn::Visibility) -> bool {
    match v {
        syn::Visibility::Public(_) => true,
        syn::Visibility::Restricted(r) => r.path.is_ident("crate"),
        syn::Visibility::Inherited => false,
    }
}

/// Writes the types a module's types name unqualified, and that are not
/// modeled (opaque objects to the analysis), with their module's path:
/// generated code, in another module, names them so.
struct Qualify<'a> {
    local: &'a HashSet<String>,
    prefix: &'a [syn::Ident],
}

impl syn::visit_mut::VisitMut for Qualify<'_> {
    fn visit_type_path_mut(&mut self, t: &mut syn::TypePath) {
        if t.qself.is_none() && t.path.segments.len() == 1 && self.local.contains(&t.path.segments[0].ident.to_string())
        {
            let (prefix, last) = (self.prefix, &t.path.segments[0]);
            *t = syn::parse_quote!(crate #(::#prefix)* :: #last);
            return;
        }
        syn::visit_mut::visit_type_path_mut(self, t);
    }
}

/// Whether an item has type or const parameters (lifetimes are fine).
fn generic(g: &syn::Generics) -> bool {
    g.params.iter().any(|p| !matches!(p, syn::GenericParam::Lifetime(_)))
}

/// Adds the structs, enums and inherent impls of a module's `items` (at
/// `path`), except those whose names are `taken` (the annotated module's
/// own, or added from another module), and takes their names.
fn add_types(out: &mut External, items: &[syn::Item], path: &[String], taken: &mut HashSet<String>) {
    let modeled: HashSet<String> = items
        .iter()
        .filter_map(|i| match i {
            syn::Item::Struct(s)
                if crate_visible(&s.vis) && !generic(&s.generics) && s.fields.iter().all(|f| crate_visible(&f.vis)) =>
            {
                Some(s.ident.to_string())
            }
            syn::Item::Enum(e) if crate_visible(&e.vis) && !generic(&e.generics) => Some(e.ident.to_string()),
            _ => None,
        })
        .filter(|n| !taken.contains(n))
        .collect();
    taken.extend(modeled.iter().cloned());
    // Crate-visible structs with a private field: opaque objects whose
    // public methods are known.
    let opaque: HashSet<String> = items
        .iter()
        .filter_map(|i| match i {
            syn::Item::Struct(s) if crate_visible(&s.vis) && !generic(&s.generics) => Some(s.ident.to_string()),
            _ => None,
        })
        .filter(|n| !modeled.contains(n) && !taken.contains(n))
        .collect();
    let segs: Vec<syn::Ident> = path.iter().map(|s| syn::Ident::new(s, proc_macro2::Span::call_site())).collect();
    // Names of the module's own items, which its types may use unqualified.
    let local: HashSet<String> = items
        .iter()
        .filter_map(|i| match i {
            syn::Item::Struct(s) => Some(s.ident.to_string()),
            syn::Item::Enum(e) => Some(e.ident.to_string()),
            syn::Item::Type(t) => Some(t.ident.to_string()),
            _ => None,
        })
        .filter(|n| !modeled.contains(n))
        .collect();
    let callable = inlinable_methods(items, &modeled);
    let mut qualify = Qualify { local: &local, prefix: &segs };
    for item in items {
        match item {
            syn::Item::Struct(s) if modeled.contains(&s.ident.to_string()) => {
                let mut s = s.clone();
                syn::visit_mut::VisitMut::visit_fields_mut(&mut qualify, &mut s.fields);
                s.attrs.retain(|a| a.path().is_ident("derive"));
                let name = &s.ident;
                out.uses.push(quote!(#[allow(unused_imports)] use crate #(::#segs)* ::#name;));
                out.items.push(syn::Item::Struct(s));
            }
            syn::Item::Enum(e) if modeled.contains(&e.ident.to_string()) => {
                let mut e = e.clone();
                for v in &mut e.variants {
                    syn::visit_mut::VisitMut::visit_fields_mut(&mut qualify, &mut v.fields);
                }
                e.attrs.retain(|a| a.path().is_ident("derive"));
                let name = &e.ident;
                out.uses.push(quote!(#[allow(unused_imports)] use crate #(::#segs)* ::#name;));
                out.items.push(syn::Item::Enum(e));
            }
            syn::Item::Impl(i) if i.trait_.is_none() && !generic(&i.generics) => {
                let self_name = i.self_ty.to_token_stream().to_string();
                if !modeled.contains(&self_name) && !opaque.contains(&self_name) {
                    continue;
                }
                let mut i = i.clone();
                if opaque.contains(&self_name) {
                    // An opaque object's methods: its type by its path.
                    let last = syn::Ident::new(&self_name, proc_macro2::Span::call_site());
                    *i.self_ty = syn::parse_quote!(crate #(::#segs)* :: #last);
                }
                i.attrs.clear();
                i.items.retain(|ii| matches!(ii, syn::ImplItem::Fn(f) if crate_visible(&f.vis)));
                for ii in &mut i.items {
                    if let syn::ImplItem::Fn(f) = ii {
                        if modeled.contains(&self_name) && callable.contains(&f.sig.ident.to_string()) {
                            // Analyzed as the module's own methods are:
                            // inlined into compiled code where its values
                            // are red, run while compiling where green.
                            f.attrs.clear();
                            continue;
                        }
                        f.attrs = if pure_fn(&f.sig, &f.block) {
                            vec![syn::parse_quote!(#[jit_opaque]), syn::parse_quote!(#[jit_pure])]
                        } else {
                            vec![syn::parse_quote!(#[jit_opaque])]
                        };
                        // Only the signature counts: the body may use what
                        // is private to its module.
                        f.block = syn::parse_quote!({ loop {} });
                    }
                }
                out.items.push(syn::Item::Impl(i));
            }
            _ => {}
        }
    }
}

/// The names of the methods of `items`' types `modeled` here that are
/// [`inlinable`], calls of one another included (found again while the
/// set grows; a method calling itself never is). A name that a private
/// method of the module has too, or that two of its types define, is
/// never inlined: a call by that name may mean the other.
fn inlinable_methods(items: &[syn::Item], modeled: &HashSet<String>) -> HashSet<String> {
    let variants: HashSet<String> = items
        .iter()
        .filter_map(|i| match i {
            syn::Item::Enum(e) if modeled.contains(&e.ident.to_string()) => Some(e),
            _ => None,
        })
        .flat_map(|e| e.variants.iter().map(move |v| format!("{}::{}", e.ident, v.ident)))
        .collect();
    let mut methods: Vec<&syn::ImplItemFn> = vec![];
    let mut seen: HashSet<String> = HashSet::new();
    let mut blocked: HashSet<String> = HashSet::new();
    for item in items {
        let syn::Item::Impl(i) = item else { continue };
        let ours = i.trait_.is_none() && modeled.contains(&i.self_ty.to_token_stream().to_string());
        for ii in &i.items {
            let syn::ImplItem::Fn(f) = ii else { continue };
            let name = f.sig.ident.to_string();
            if !seen.insert(name.clone()) || !ours || !crate_visible(&f.vis) || generic(&i.generics) {
                blocked.insert(name);
            } else {
                methods.push(f);
            }
        }
    }
    let mut callable = HashSet::new();
    loop {
        let found: Vec<String> = methods
            .iter()
            .map(|f| f.sig.ident.to_string())
            .zip(&methods)
            .filter(|(n, f)| {
                !blocked.contains(n)
                    && !callable.contains(n)
                    && inlinable(&f.sig, &f.block, modeled, &variants, &callable)
            })
            .map(|(n, _)| n)
            .collect();
        if found.is_empty() {
            return callable;
        }
        callable.extend(found);
    }
}

/// Whether a method of a modeled type can be analyzed where the annotated
/// module calls it, as the module's own methods are (inlined into compiled
/// code): it only computes on its arguments, by value or through shared
/// references ([`pure_fn`]'s computations, `matches!` and calls of the
/// methods `callable` included), and every path in it names one of its own
/// bindings, one of the `variants` of the enums modeled here (`Value::Nil`;
/// not an associated constant such as `Op::ALL`), or a variant of the
/// prelude (`Some`, `None`, `Ok`, `Err`); the types it writes are primitive
/// or `modeled` here. Anything else may be private to its module, which
/// code generated in the annotated module cannot name; such a method stays
/// a call of Rust's own.
fn inlinable(
    sig: &syn::Signature,
    body: &syn::Block,
    modeled: &HashSet<String>,
    variants: &HashSet<String>,
    callable: &HashSet<String>,
) -> bool {
    /// The names the method binds: its parameters and its patterns'.
    #[derive(Default)]
    struct Bindings(HashSet<String>);
    impl<'ast> syn::visit::Visit<'ast> for Bindings {
        fn visit_pat_ident(&mut self, i: &'ast syn::PatIdent) {
            self.0.insert(i.ident.to_string());
            syn::visit::visit_pat_ident(self, i);
        }
        fn visit_expr_macro(&mut self, m: &'ast syn::ExprMacro) {
            if let Some((e, p)) = matches_args(&m.mac) {
                self.visit_expr(&e);
                self.visit_pat(&p);
            }
        }
    }
    let mut bound = Bindings::default();
    bound.0.insert("self".to_string());
    syn::visit::Visit::visit_signature(&mut bound, sig);
    syn::visit::Visit::visit_block(&mut bound, body);
    struct Paths<'a> {
        modeled: &'a HashSet<String>,
        variants: &'a HashSet<String>,
        bound: &'a HashSet<String>,
        ok: bool,
    }
    impl<'ast> syn::visit::Visit<'ast> for Paths<'_> {
        fn visit_path(&mut self, p: &'ast syn::Path) {
            let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
            let own_binding = segs.len() == 1 && self.bound.contains(&segs[0]);
            let prelude = segs.len() == 1 && matches!(segs[0].as_str(), "Some" | "None" | "Ok" | "Err");
            let variant = segs.len() == 2 && self.variants.contains(&segs.join("::"));
            let plain = p.leading_colon.is_none() && p.segments.iter().all(|s| s.arguments.is_none());
            self.ok &= plain && (own_binding || prelude || variant);
        }
        fn visit_type_path(&mut self, t: &'ast syn::TypePath) {
            // A type written in the body (a cast, a `let`): a primitive or
            // one modeled here.
            const PRIMITIVE: [&str; 16] = [
                "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize", "f32", "f64",
                "bool", "char",
            ];
            let name = t.path.get_ident().map(|i| i.to_string());
            self.ok &=
                t.qself.is_none() && name.is_some_and(|n| PRIMITIVE.contains(&n.as_str()) || self.modeled.contains(&n));
        }
        fn visit_pat_ident(&mut self, i: &'ast syn::PatIdent) {
            // An uppercase name in a pattern is a unit variant or a constant
            // brought in by a `use` of its module (`use Value::*`).
            self.ok &= !i.ident.to_string().starts_with(char::is_uppercase);
            syn::visit::visit_pat_ident(self, i);
        }
        fn visit_stmt(&mut self, s: &'ast syn::Stmt) {
            // A nested item is the module's to place, not the method's.
            self.ok &= !matches!(s, syn::Stmt::Item(_));
            syn::visit::visit_stmt(self, s);
        }
        fn visit_expr_macro(&mut self, m: &'ast syn::ExprMacro) {
            match matches_args(&m.mac) {
                Some((e, p)) => {
                    self.visit_expr(&e);
                    self.visit_pat(&p);
                }
                None => self.ok &= panicking(&m.mac),
            }
        }
    }
    let mut paths = Paths { modeled, variants, bound: &bound.0, ok: true };
    syn::visit::Visit::visit_block(&mut paths, body);
    // Parameters by value or by shared reference (`&self`): reading through
    // them is a computation on the arguments too. Their types are the
    // signature's, named where generated code names the method's.
    let params = sig.inputs.iter().all(|a| match a {
        syn::FnArg::Receiver(r) => {
            r.mutability.is_none()
                && match &r.kind {
                    syn::ReceiverKind::Value => true,
                    syn::ReceiverKind::Reference(_, _, m) => m.is_none(),
                    _ => false,
                }
        }
        syn::FnArg::Typed(t) => {
            let ty_ok = match &*t.ty {
                syn::Type::Path(_) => true,
                syn::Type::Reference(r) => r.mutability.is_none() && matches!(&*r.elem, syn::Type::Path(_)),
                _ => false,
            };
            ty_ok && matches!(&*t.pat, syn::Pat::Ident(i) if i.mutability.is_none() && i.by_ref.is_none())
        }
    });
    // The body checked as `pure_fn`'s, reads through those references
    // (`*self`, `&x`) taken as reads of the values, and calls of methods
    // already found inlinable (`callable`) as a constructor's call on the
    // receiver and the arguments.
    struct Reads<'a>(&'a HashSet<String>);
    impl syn::visit_mut::VisitMut for Reads<'_> {
        fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
            match e {
                syn::Expr::Unary(syn::ExprUnary { op: syn::UnOp::Deref(_), expr, .. }) => *e = (**expr).clone(),
                syn::Expr::Reference(r) if r.mutability.is_none() => *e = (*r.expr).clone(),
                syn::Expr::MethodCall(m) if m.turbofish.is_none() && self.0.contains(&m.method.to_string()) => {
                    let args = std::iter::once(&*m.receiver).chain(&m.args);
                    *e = syn::parse_quote!(Inlined(#(#args),*));
                }
                _ => {}
            }
            syn::visit_mut::visit_expr_mut(self, e);
        }
    }
    let mut read = body.clone();
    syn::visit_mut::VisitMut::visit_block_mut(&mut Reads(callable), &mut read);
    paths.ok
        && params
        && sig.generics.params.is_empty()
        && !matches!(sig.safety, syn::Safety::Unsafe(_))
        && sig.asyncness.is_none()
        && pure_block(&read)
}

/// The scrutinee and pattern of a `matches!(e, pat)` (no guard).
fn matches_args(m: &syn::Macro) -> Option<(syn::Expr, syn::Pat)> {
    if !m.path.is_ident("matches") {
        return None;
    }
    m.parse_body_with(|input: syn::parse::ParseStream| {
        let e: syn::Expr = input.parse()?;
        input.parse::<syn::Token![,]>()?;
        let p = syn::Pat::parse_multi_with_leading_vert(input)?;
        let _ = input.parse::<Option<syn::Token![,]>>()?;
        Ok((e, p))
    })
    .ok()
}

/// Whether a function only computes its result from its arguments (by
/// value) and constants: no reference or `mut` parameter, and a body of
/// `let`s and expressions made of literals, paths (arguments, constants,
/// variants), operators, casts, indexing, fields, tuples, arrays, `if`,
/// `match`, calls of constructors (`Name(..)`, by Rust's naming) and the
/// panicking macros. Such a function can run at compile time on green
/// arguments (`#[jit_pure]`; a panic there declines the compilation).
fn pure_fn(sig: &syn::Signature, body: &syn::Block) -> bool {
    let plain_params = sig.inputs.iter().all(|a| match a {
        syn::FnArg::Receiver(r) => matches!(r.kind, syn::ReceiverKind::Value) && r.mutability.is_none(),
        syn::FnArg::Typed(t) => {
            matches!(&*t.ty, syn::Type::Path(_))
                && matches!(&*t.pat, syn::Pat::Ident(i) if i.mutability.is_none() && i.by_ref.is_none())
        }
    });
    sig.generics.params.is_empty()
        && !matches!(sig.safety, syn::Safety::Unsafe(_))
        && sig.asyncness.is_none()
        && plain_params
        && pure_block(body)
}

fn pure_block(b: &syn::Block) -> bool {
    b.stmts.iter().all(|s| match s {
        syn::Stmt::Local(l) => {
            matches!(&l.pat, syn::Pat::Ident(i) if i.mutability.is_none() && i.by_ref.is_none() && i.subpat.is_none())
                && l.init.as_ref().is_some_and(|i| i.diverge.is_none() && pure_expr(&i.expr))
        }
        syn::Stmt::Expr(e, _) => pure_expr(e),
        syn::Stmt::Macro(m) => panicking(&m.mac),
        // A `const`'s value is Rust's compile-time constant.
        syn::Stmt::Item(i) => matches!(i, syn::Item::Const(_)),
    })
}

/// `panic!`, `unreachable!` and the like: a panic, no effect.
fn panicking(m: &syn::Macro) -> bool {
    m.path
        .get_ident()
        .is_some_and(|i| matches!(i.to_string().as_str(), "panic" | "unreachable" | "unimplemented" | "todo"))
}

/// A pattern without `ref mut` bindings, whose guards (`pat if cond`) are pure.
fn pure_pat(p: &syn::Pat) -> bool {
    match p {
        syn::Pat::Guard(g) => pure_pat(&g.pat) && pure_expr(&g.guard),
        syn::Pat::Ident(i) => i.by_ref.is_none() || i.mutability.is_none(),
        _ => true,
    }
}

fn pure_expr(e: &syn::Expr) -> bool {
    use syn::Expr;
    match e {
        Expr::Lit(_) | Expr::Path(_) => true,
        Expr::Binary(b) => !hint_annotator::is_compound_assign_op(&b.op) && pure_expr(&b.left) && pure_expr(&b.right),
        Expr::Unary(u) => !matches!(u.op, syn::UnOp::Deref(_)) && pure_expr(&u.expr),
        Expr::Cast(c) => pure_expr(&c.expr),
        Expr::Paren(p) => pure_expr(&p.expr),
        Expr::Group(g) => pure_expr(&g.expr),
        Expr::Index(i) => pure_expr(&i.expr) && pure_expr(&i.index),
        Expr::Field(f) => pure_expr(&f.base),
        Expr::Tuple(t) => t.elems.iter().all(pure_expr),
        Expr::Array(a) => a.elems.iter().all(pure_expr),
        Expr::Block(b) => b.label.is_none() && pure_block(&b.block),
        Expr::If(i) => {
            pure_expr(&i.cond) && pure_block(&i.then_branch) && i.else_branch.as_ref().is_none_or(|(_, e)| pure_expr(e))
        }
        Expr::Match(m) => pure_expr(&m.expr) && m.arms.iter().all(|a| pure_pat(&a.pat) && pure_expr(&a.body)),
        Expr::Return(r) => r.expr.as_deref().is_none_or(pure_expr),
        Expr::Macro(m) => panicking(&m.mac) || matches_args(&m.mac).is_some_and(|(e, p)| pure_expr(&e) && pure_pat(&p)),
        // A tuple struct's or a variant's constructor, by Rust's naming
        // (`Value::Number(x)`, `Some(x)`); a function's name is snake case.
        Expr::Call(c) => {
            let constructor = match &*c.func {
                Expr::Path(p) => {
                    p.path.segments.last().is_some_and(|s| s.ident.to_string().starts_with(char::is_uppercase))
                }
                _ => false,
            };
            constructor && c.args.iter().all(pure_expr)
        }
        Expr::Struct(s) => s.rest.is_none() && s.fields.iter().all(|f| pure_expr(&f.expr)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::module_path;
    use std::path::Path;

    fn path(p: &str, file: &str) -> Option<Vec<String>> {
        let segs: Vec<String> = p.split("::").map(str::to_string).collect();
        module_path(&segs, Path::new(file), Path::new("pkg/src"))
    }

    #[test]
    fn imported_modules_are_found_from_the_crate_root_or_the_annotated_file() {
        assert_eq!(path("crate::value", "pkg/src/vm.rs"), Some(vec!["value".to_string()]));
        assert_eq!(path("crate", "pkg/src/vm.rs"), Some(vec![]));
        assert_eq!(path("super", "pkg/src/vm.rs"), Some(vec!["vm".to_string()]));
        assert_eq!(path("super", "pkg/src/lib.rs"), Some(vec![]));
        assert_eq!(path("super::value", "pkg/src/a/mod.rs"), Some(vec!["a".to_string(), "value".to_string()]));
        assert_eq!(path("super::super::x", "pkg/src/a/b.rs"), Some(vec!["a".to_string(), "x".to_string()]));
        assert_eq!(path("std::rc", "pkg/src/vm.rs"), None);
    }

    /// Whether the function in `src` is judged pure.
    fn pure(src: &str) -> bool {
        let f: syn::ItemFn = syn::parse_str(src).expect("a function");
        super::pure_fn(&f.sig, &f.block)
    }

    /// Whether the method in `src`, of a module modeling `Value`, is
    /// judged inlinable.
    fn inlinable(src: &str) -> bool {
        let f: syn::ItemFn = syn::parse_str(src).expect("a function");
        let callable = ["weight".to_string()].into_iter().collect();
        let variants =
            ["Value::Nil", "Value::Bool", "Value::Int", "Value::Pair"].map(String::from).into_iter().collect();
        super::inlinable(&f.sig, &f.block, &["Value".to_string()].into_iter().collect(), &variants, &callable)
    }

    #[test]
    fn methods_naming_only_their_bindings_and_modeled_variants_are_inlinable() {
        assert!(inlinable("fn is_falsey(self) -> bool { matches!(self, Value::Nil | Value::Bool(false)) }"));
        assert!(inlinable(
            "fn w(self) -> i64 { match self { Value::Int(n) if n > 0 => n, Value::Pair(a, b) => a as i64 + b as i64, _ => 0 } }"
        ));
        assert!(inlinable("fn f(self, by: i64) -> Option<i64> { let x = by * 2; if x > 0 { Some(x) } else { None } }"));
        // What may be private to the method's module, or is not a computation.
        assert!(!inlinable("fn f(self) -> i64 { LIMIT }"), "a constant of its module");
        assert!(!inlinable("fn f(self) -> i64 { helper(self) }"), "a function of its module");
        assert!(!inlinable("fn f(self) -> Op { Op::Add }"), "a variant of a type not modeled here");
        assert!(!inlinable("fn f(self) -> Value { Value::ALL[0] }"), "an associated constant, not a variant");
        assert!(!inlinable("fn f(self) -> Value { Value::new() }"), "an associated function, not a variant");
        assert!(!inlinable("fn f(self) -> i64 { match self { Nil => 0, _ => 1 } }"), "a variant by a glob import");
        assert!(!inlinable("fn f(self) -> Value { Self::Nil }"));
        assert!(!inlinable("fn f(self) -> i64 { const K: i64 = 2; K }"));
        assert!(inlinable("fn is_truthy(&self) -> bool { match self { Value::Nil => false, _ => true } }"));
        assert!(inlinable(
            "fn n(&self, d: &Value) -> i64 { match (*self, *d) { (Value::Int(a), Value::Int(b)) => a + b, _ => 0 } }"
        ));
        assert!(!inlinable("fn heavy(&self) -> bool { !self.weight().eq(&0) }"), "a method not known inlinable");
        assert!(
            inlinable("fn heavy(&self, than: i64) -> bool { self.weight() > than }"),
            "a call of an inlinable method"
        );
        assert!(!inlinable("fn heavy(&self) -> bool { self.weigh() > 0 }"), "a call of another method");
        assert!(!inlinable("fn f(&mut self) -> bool { true }"));
        assert!(!inlinable("fn f(self, v: &mut Value) -> bool { true }"));
        assert!(!inlinable("fn f(self, x: i64) -> i64 { x as Word }"), "a type of its module");
        assert!(!inlinable("fn f(self) -> bool { println!(\"x\"); true }"));
    }

    #[test]
    fn methods_calling_inlinable_methods_are_inlinable_but_not_recursive_ones() {
        let file: syn::File = syn::parse_str(
            "pub enum Value { Nil, Int(i64) }
             impl Value {
                 pub fn is_truthy(&self) -> bool { !self.is_falsey() }
                 pub fn is_falsey(&self) -> bool { matches!(self, Value::Nil) }
                 pub fn loops(self) -> bool { self.loops() }
                 pub fn uses_private(self) -> bool { self.private() }
                 fn private(self) -> bool { true }
                 pub fn twice(self) -> bool { true }
             }
             pub struct Other;
             impl Other { pub fn twice(self) -> bool { false } }",
        )
        .expect("a module");
        let modeled = ["Value".to_string(), "Other".to_string()].into_iter().collect();
        let mut found: Vec<String> = super::inlinable_methods(&file.items, &modeled).into_iter().collect();
        found.sort();
        assert_eq!(found, ["is_falsey", "is_truthy"]);
    }

    #[test]
    fn functions_that_only_compute_on_their_arguments_are_pure() {
        assert!(pure("fn from_byte(b: u8) -> Op { Op::ALL[b as usize] }"));
        assert!(pure("fn f(b: u8) -> Op { const T: [Op; 2] = [Op::A, Op::B]; match b { 0 | 1 => T[b as usize], _ => unreachable!() } }"));
        assert!(pure(
            "fn w(self) -> i64 { match self { V::I(n) if n > 0 => n, V::P(a, b) => a as i64 + b as i64, _ => 0 } }"
        ));
        assert!(pure("fn g(x: i64) -> V { let y = x * 2; if y > 3 { V::I(y) } else { V::Nothing } }"));
        // Effects, or what could have them.
        assert!(!pure("fn f(b: u8) -> u8 { COUNT.fetch_add(1, Relaxed); b }"));
        assert!(!pure("fn f(b: u8) -> u8 { helper(b) }"));
        assert!(!pure("fn f(&self) -> u8 { self.b }"));
        assert!(!pure("fn f(b: &mut u8) -> u8 { *b += 1; *b }"));
        assert!(!pure("fn f(mut b: u8) -> u8 { b += 1; b }"));
        assert!(!pure("fn f(b: u8) -> u8 { println!(\"{b}\"); b }"));
        assert!(!pure("unsafe fn f(b: u8) -> u8 { b }"));
        assert!(!pure("fn f<T>(b: T) -> T { b }"));
        assert!(!pure("fn f(b: u8) -> u8 { let mut x = b; loop { x += 1; if x > 9 { break x; } } }"));
    }
}

//! Name resolution before lowering: the paths an interpreter writes that
//! name the module's items indirectly are rewritten to their full form, so
//! that lowering sees one spelling.
//!
//! - `use Enum::*;` and `use Enum::{A, B as C};` inside a function body (also
//!   through `self::`): bare variant names in expressions and patterns become
//!   `Enum::A`, and the `use` items are dropped. A bare identifier pattern is a
//!   unit variant when one of that name is in scope, as in Rust.
//! - `Alias::f(..)` through a type alias of the module becomes the path of
//!   the aliased type with the alias's generic arguments as a turbofish:
//!   `Vec::<Frame>::new()` for `type CallStack = Vec<Frame>`, so that
//!   lowering knows the element type.
//!
//! The rewrite works on a copy of the body; spans are kept, so errors still
//! point at what the user wrote.

use std::collections::HashMap;

use syn::visit_mut::{self, VisitMut};
use syn::{Expr, Pat, Path};

use crate::module::ModuleDef;
use crate::types::Ty;

/// The body with its macros expanded (`macro_rules`), variant imports and
/// alias paths resolved, and what went wrong expanding.
pub(crate) fn resolve_body(m: &ModuleDef<'_>, body: &syn::Block) -> (syn::Block, Vec<syn::Error>) {
    let mut body = body.clone();
    let errors = crate::macro_rules::expand_body(&mut body, &m.macros);
    Resolver { m, variants: HashMap::new() }.visit_block_mut(&mut body);
    (body, errors)
}

struct Resolver<'m, 'a> {
    m: &'m ModuleDef<'a>,
    /// Imported variants: the name in scope, and the enum and variant.
    variants: HashMap<String, (String, String)>,
}

impl Resolver<'_, '_> {
    /// Records the variants a `use` imports; false when it imports anything
    /// else (then it stays, and lowering reports it).
    fn take_use(&mut self, tree: &syn::UseTree) -> bool {
        match tree {
            syn::UseTree::Path(p) if p.ident == "self" => self.take_use(&p.tree),
            syn::UseTree::Path(p) => {
                let en = p.ident.to_string();
                let Some(def) = self.m.enums.get(&en) else { return false };
                let names: Vec<(String, String)> = match &*p.tree {
                    syn::UseTree::Glob(_) => def.variants.iter().map(|v| (v.name.clone(), v.name.clone())).collect(),
                    syn::UseTree::Name(n) => vec![(n.ident.to_string(), n.ident.to_string())],
                    syn::UseTree::Rename(r) => vec![(r.rename.to_string(), r.ident.to_string())],
                    syn::UseTree::Group(g) => {
                        let mut out = vec![];
                        for t in &g.items {
                            match t {
                                syn::UseTree::Name(n) => out.push((n.ident.to_string(), n.ident.to_string())),
                                syn::UseTree::Rename(r) => out.push((r.rename.to_string(), r.ident.to_string())),
                                _ => return false,
                            }
                        }
                        out
                    }
                    _ => return false,
                };
                if !names.iter().all(|(_, v)| def.variants.iter().any(|d| d.name == *v)) {
                    return false;
                }
                for (local, v) in names {
                    self.variants.insert(local, (en.clone(), v));
                }
                true
            }
            _ => false,
        }
    }

    /// `Variant` as `Enum::Variant`, or `Alias::f` as `Type::f`.
    fn resolve_path(&self, path: &mut Path) {
        if path.leading_colon.is_some() {
            return;
        }
        if path.segments.len() == 1 {
            let seg = &path.segments[0];
            if let Some((en, v)) = self.variants.get(&seg.ident.to_string()) {
                let (e, v) = (syn::Ident::new(en, seg.ident.span()), syn::Ident::new(v, seg.ident.span()));
                *path = syn::parse_quote!(#e::#v);
            }
            return;
        }
        let first = path.segments[0].ident.to_string();
        if let Some(t) = self.m.aliases.get(&first) {
            let name = match t {
                Ty::Vec(_) => "Vec",
                Ty::Map(..) => "HashMap",
                Ty::Boxed(_) => "Box",
                Ty::Struct(n) | Ty::Enum(n) => n.as_str(),
                _ => return,
            };
            let span = path.segments[0].ident.span();
            path.segments[0].ident = syn::Ident::new(name, span);
            if let (Some(args), syn::PathArguments::None) = (self.m.alias_args.get(&first), &path.segments[0].arguments)
            {
                let mut args = args.clone();
                args.colon2_token = Some(Default::default());
                path.segments[0].arguments = syn::PathArguments::AngleBracketed(args);
            }
        }
    }

    fn unit_variant(&self, name: &str) -> bool {
        self.variants
            .get(name)
            .is_some_and(|(en, v)| self.m.enums[en].variants.iter().any(|d| d.name == *v && d.fields.is_empty()))
    }
}

impl VisitMut for Resolver<'_, '_> {
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        b.stmts.retain(|s| !matches!(s, syn::Stmt::Item(syn::Item::Use(u)) if self.take_use(&u.tree)));
        visit_mut::visit_block_mut(self, b);
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        match e {
            Expr::Path(p) if p.qself.is_none() => self.resolve_path(&mut p.path),
            Expr::Struct(s) if s.qself.is_none() => self.resolve_path(&mut s.path),
            _ => {}
        }
        visit_mut::visit_expr_mut(self, e);
    }

    fn visit_pat_mut(&mut self, p: &mut Pat) {
        match p {
            Pat::Ident(pi) if pi.by_ref.is_none() && pi.mutability.is_none() && pi.subpat.is_none() => {
                if self.unit_variant(&pi.ident.to_string()) {
                    let mut path: Path = pi.ident.clone().into();
                    self.resolve_path(&mut path);
                    *p = Pat::Path(syn::ExprPath { attrs: vec![], qself: None, path });
                }
            }
            Pat::Path(pp) if pp.qself.is_none() => self.resolve_path(&mut pp.path),
            Pat::TupleStruct(ts) if ts.qself.is_none() => self.resolve_path(&mut ts.path),
            Pat::Struct(ps) if ps.qself.is_none() => self.resolve_path(&mut ps.path),
            _ => {}
        }
        visit_mut::visit_pat_mut(self, p);
    }
}

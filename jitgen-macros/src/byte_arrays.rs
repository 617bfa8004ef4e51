//! Arrays of bytes bound by `let` and decoded once, rewritten before the
//! analysis into the form it reads as shifts and ors:
//! `let bytes = [a, b, c, d]; .. i32::from_le_bytes(bytes) ..` becomes
//! `let __jitgen_byte0: u8 = a; .. let __jitgen_byte3: u8 = d;
//! .. i32::from_le_bytes([__jitgen_byte0, .., __jitgen_byte3]) ..`.
//!
//! The elements are still evaluated where the array was, in order, so what
//! runs between the `let` and the call (an instruction pointer moved past
//! the operand) sees the same values. The rewrite applies where the name
//! occurs nowhere after its `let` but as the one argument of one
//! `from_le_bytes` or `from_be_bytes` call in the same block; an array used
//! any other way stays as written.

use quote::{format_ident, ToTokens};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;

/// Rewrites the byte arrays of `module`'s functions and methods, as the
/// module doc says.
pub fn rewrite(module: &mut syn::ItemMod) {
    let Some((_, items)) = &mut module.content else { return };
    for item in items.iter_mut() {
        match item {
            syn::Item::Fn(f) => Blocks::default().visit_block_mut(&mut f.block),
            syn::Item::Impl(im) => {
                for ii in &mut im.items {
                    if let syn::ImplItem::Fn(f) = ii {
                        Blocks::default().visit_block_mut(&mut f.block);
                    }
                }
            }
            _ => {}
        }
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
        let mut i = 0;
        while i < b.stmts.len() {
            match self.rewrite_at(b, i) {
                Some(n) => i += n,
                None => i += 1,
            }
        }
    }
}

impl Blocks {
    /// Rewrites the array bound at statement `i` of `b`, if it is one the
    /// module doc describes; the statements it became.
    fn rewrite_at(&mut self, b: &mut syn::Block, i: usize) -> Option<usize> {
        let (name, elems) = array_let(&b.stmts[i])?;
        let rest = &b.stmts[i + 1..];
        let uses: usize = rest.iter().map(|s| occurrences(&s.to_token_stream(), &name)).sum();
        if uses != 1 {
            return None;
        }
        let temps: Vec<syn::Ident> =
            (0..elems.len()).map(|k| format_ident!("__jitgen_byte{}_{}", self.made, k)).collect();
        let mut calls = Decode { name: name.clone(), temps: temps.clone(), found: 0 };
        let mut rest: Vec<syn::Stmt> = rest.to_vec();
        for s in &mut rest {
            calls.visit_stmt_mut(s);
        }
        if calls.found != 1 {
            return None;
        }
        self.made += 1;
        let lets: Vec<syn::Stmt> =
            temps.iter().zip(&elems).map(|(t, e)| syn::parse_quote_spanned!(e.span()=> let #t: u8 = #e;)).collect();
        let n = lets.len();
        b.stmts.splice(i.., lets.into_iter().chain(rest));
        Some(n)
    }
}

/// `let NAME = [e, ..];` or `let NAME: [u8; N] = [e, ..];`: the name and
/// the elements.
fn array_let(s: &syn::Stmt) -> Option<(String, Vec<syn::Expr>)> {
    let syn::Stmt::Local(l) = s else { return None };
    if !l.attrs.is_empty() {
        return None;
    }
    let ident = match &l.pat {
        syn::Pat::Ident(pi) => pi,
        syn::Pat::Type(pt) => match (&*pt.pat, &*pt.ty) {
            (syn::Pat::Ident(pi), syn::Type::Array(a)) if a.elem.to_token_stream().to_string() == "u8" => pi,
            _ => return None,
        },
        _ => return None,
    };
    if ident.by_ref.is_some() || ident.mutability.is_some() || ident.subpat.is_some() {
        return None;
    }
    let init = l.init.as_ref().filter(|i| i.diverge.is_none())?;
    let syn::Expr::Array(a) = &*init.expr else { return None };
    matches!(a.elems.len(), 2 | 4 | 8 | 16).then(|| (ident.ident.to_string(), a.elems.iter().cloned().collect()))
}

/// How often the identifier `name` occurs in `ts`.
fn occurrences(ts: &proc_macro2::TokenStream, name: &str) -> usize {
    ts.clone()
        .into_iter()
        .map(|t| match t {
            proc_macro2::TokenTree::Ident(i) if i == name => 1,
            proc_macro2::TokenTree::Group(g) => occurrences(&g.stream(), name),
            _ => 0,
        })
        .sum()
}

/// Replaces `T::from_le_bytes(NAME)` and `T::from_be_bytes(NAME)` by the
/// same call of an array of the temporaries.
struct Decode {
    name: String,
    temps: Vec<syn::Ident>,
    found: usize,
}

impl VisitMut for Decode {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        syn::visit_mut::visit_expr_mut(self, e);
        let syn::Expr::Call(c) = e else { return };
        let syn::Expr::Path(f) = &*c.func else { return };
        let decodes = f.path.segments.len() == 2
            && matches!(f.path.segments[1].ident.to_string().as_str(), "from_le_bytes" | "from_be_bytes");
        let arg_is_name = c.args.len() == 1
            && matches!(&c.args[0], syn::Expr::Path(p) if p.qself.is_none() && p.path.is_ident(&self.name));
        if decodes && arg_is_name {
            let temps = &self.temps;
            c.args[0] = syn::parse_quote!([#(#temps),*]);
            self.found += 1;
        }
    }
}

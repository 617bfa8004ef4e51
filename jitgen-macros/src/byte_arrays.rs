//! Arrays of bytes bound by `let` and decoded once, rewritten before the
//! analysis into the form it reads as shifts and ors:
//! `let bytes = [a, b, c, d]; .. i32::from_le_bytes(bytes) ..` becomes
//! `let __jitgen_byte0: u8 = a; .. let __jitgen_byte3: u8 = d;
//! .. i32::from_le_bytes([__jitgen_byte0, .., __jitgen_byte3]) ..`.
//!
//! The elements are still evaluated where the array was, in order, so what
//! runs between the `let` and the call (an instruction pointer moved past
//! the operand) sees the same values. The rewrite applies where the name
//! occurs nowhere after its `let` (nor inside a string literal, which a
//! format string's `{bytes:?}` would read) but as the one argument of one
//! `from_le_bytes` or `from_be_bytes` call of a primitive integer type in
//! the same block; an array used any other way stays as written.

use quote::{format_ident, ToTokens};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;

/// Rewrites the byte arrays of `module`'s functions and methods, as the
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
        if uses != 1 || rest.iter().any(|s| in_literal(&s.to_token_stream(), &name)) {
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
pub(crate) fn occurrences(ts: &proc_macro2::TokenStream, name: &str) -> usize {
    ts.clone()
        .into_iter()
        .map(|t| match t {
            proc_macro2::TokenTree::Ident(i) if i == name => 1,
            proc_macro2::TokenTree::Group(g) => occurrences(&g.stream(), name),
            _ => 0,
        })
        .sum()
}

/// Whether a literal of `ts` (a format string) contains `name`.
pub(crate) fn in_literal(ts: &proc_macro2::TokenStream, name: &str) -> bool {
    ts.clone().into_iter().any(|t| match t {
        proc_macro2::TokenTree::Literal(l) => l.to_string().contains(name),
        proc_macro2::TokenTree::Group(g) => in_literal(&g.stream(), name),
        _ => false,
    })
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
            && matches!(
                f.path.segments[0].ident.to_string().as_str(),
                "u16" | "u32" | "u64" | "u128" | "i16" | "i32" | "i64" | "i128"
            )
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

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};

    fn check(src: &str, want: Expect) {
        let mut m: syn::ItemMod = syn::parse_str(src).unwrap();
        super::rewrite(&mut m);
        want.assert_eq(&prettyplease::unparse(&syn::parse_quote!(#m)));
    }

    #[test]
    fn an_array_decoded_once_is_decoded_in_place_its_bytes_read_where_it_was() {
        check(
            "mod m { impl M { fn read(&mut self) -> i32 { \
             let bytes = [self.code[self.ip], self.code[self.ip + 1], self.code[self.ip + 2], self.code[self.ip + 3]]; \
             self.ip += 4; i32::from_le_bytes(bytes) } } }",
            expect![[r#"
                mod m {
                    impl M {
                        fn read(&mut self) -> i32 {
                            let __jitgen_byte0_0: u8 = self.code[self.ip];
                            let __jitgen_byte0_1: u8 = self.code[self.ip + 1];
                            let __jitgen_byte0_2: u8 = self.code[self.ip + 2];
                            let __jitgen_byte0_3: u8 = self.code[self.ip + 3];
                            self.ip += 4;
                            i32::from_le_bytes([
                                __jitgen_byte0_0,
                                __jitgen_byte0_1,
                                __jitgen_byte0_2,
                                __jitgen_byte0_3,
                            ])
                        }
                    }
                }
            "#]],
        );
    }

    #[test]
    fn an_array_used_otherwise_stays_as_written() {
        // Used twice; named in a format string; decoded by a function of
        // the module; of another length than an integer's.
        check(
            "mod m { fn a(x: u8) -> u16 { let b = [x, x]; let v = u16::from_le_bytes(b); v + b[0] as u16 } \
             fn c(x: u8) -> u16 { let b = [x, x]; let v = u16::from_be_bytes(b); println!(\"{b:?}\"); v } \
             fn d(x: u8) -> u16 { let b = [x, x]; Op::from_le_bytes(b) } \
             fn e(x: u8) -> u16 { let b = [x, x, x]; u16::from_le_bytes(b) } }",
            expect![[r#"
                mod m {
                    fn a(x: u8) -> u16 {
                        let b = [x, x];
                        let v = u16::from_le_bytes(b);
                        v + b[0] as u16
                    }
                    fn c(x: u8) -> u16 {
                        let b = [x, x];
                        let v = u16::from_be_bytes(b);
                        println!("{b:?}");
                        v
                    }
                    fn d(x: u8) -> u16 {
                        let b = [x, x];
                        Op::from_le_bytes(b)
                    }
                    fn e(x: u8) -> u16 {
                        let b = [x, x, x];
                        u16::from_le_bytes(b)
                    }
                }
            "#]],
        );
    }
}

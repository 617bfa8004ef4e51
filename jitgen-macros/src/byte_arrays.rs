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
//!
//! A slice of a known length converted to an array, the way tutorials read
//! an operand (`u16::from_le_bytes(self.code[self.ip..self.ip + 2]
//! .try_into().unwrap())`, or `let b: [u8; 4] = code[i..i + 4].try_into()
//! .unwrap();`), is first written as the array of its bytes:
//! `{ let __jitgen_at0 = self.ip; u16::from_le_bytes([self.code[__jitgen_at0],
//! self.code[__jitgen_at0 + 1]]) }`. The range must say its length (`a..a + N`,
//! `a..=a + M`, or two literals) and that length must be the array's, so
//! `try_into` cannot fail; the slice must be of a place (a path or its
//! fields), read once per byte; its start is evaluated once. A range out of
//! bounds still panics, at the first byte past the end instead of at the
//! slice.

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
            match self.slice_let(&b.stmts[i]) {
                Some(two) => {
                    b.stmts.splice(i..=i, two);
                    i += 2;
                }
                None => i += 1,
            }
        }
        let mut i = 0;
        while i < b.stmts.len() {
            match self.rewrite_at(b, i) {
                Some(n) => i += n,
                None => i += 1,
            }
        }
    }

    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        syn::visit_mut::visit_expr_mut(self, e);
        let syn::Expr::Call(c) = e else { return };
        let syn::Expr::Path(f) = &*c.func else { return };
        let Some(width) = decoded_width(&f.path) else { return };
        if c.args.len() != 1 {
            return;
        }
        let Some((place, start)) = slice_as_array(&c.args[0], width) else { return };
        let (at, bytes) = self.bytes(&place, width);
        c.args[0] = bytes;
        let call = &*c;
        *e = syn::parse_quote_spanned!(call.span()=> { let #at = #start; #call });
    }
}

impl Blocks {
    /// `let NAME: [u8; N] = SLICE.try_into().unwrap();` of a slice of
    /// length `N`, as the two statements binding its start and the array
    /// of its bytes.
    fn slice_let(&mut self, s: &syn::Stmt) -> Option<[syn::Stmt; 2]> {
        let syn::Stmt::Local(l) = s else { return None };
        let syn::Pat::Type(pt) = &l.pat else { return None };
        let syn::Type::Array(a) = &*pt.ty else { return None };
        if a.elem.to_token_stream().to_string() != "u8" {
            return None;
        }
        let syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(n), .. }) = &a.len else { return None };
        let width: usize = n.base10_parse().ok()?;
        let init = l.init.as_ref().filter(|i| i.diverge.is_none())?;
        let (place, start) = slice_as_array(&init.expr, width)?;
        let (at, bytes) = self.bytes(&place, width);
        let mut array = l.clone();
        array.init.as_mut().expect("checked above").expr = Box::new(bytes);
        let span = init.expr.span();
        Some([syn::parse_quote_spanned!(span=> let #at = #start;), syn::Stmt::Local(array)])
    }

    /// A fresh name for a slice's start, and the array of the `width`
    /// bytes of `place` from it.
    fn bytes(&mut self, place: &syn::Expr, width: usize) -> (syn::Ident, syn::Expr) {
        let at = format_ident!("__jitgen_at{}", self.made);
        self.made += 1;
        let elems = (0..width).map(|k| match k {
            0 => quote::quote!(#place[#at]),
            k => {
                let k = proc_macro2::Literal::usize_unsuffixed(k);
                quote::quote!(#place[#at + #k])
            }
        });
        (at.clone(), syn::parse_quote_spanned!(place.span()=> [#(#elems),*]))
    }

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

/// The width in bytes of the integer `T::from_le_bytes` or
/// `T::from_be_bytes` (the path) decodes.
fn decoded_width(path: &syn::Path) -> Option<usize> {
    if path.segments.len() != 2 {
        return None;
    }
    let f = path.segments[1].ident.to_string();
    if !matches!(f.as_str(), "from_le_bytes" | "from_be_bytes") {
        return None;
    }
    match path.segments[0].ident.to_string().as_str() {
        "u16" | "i16" => Some(2),
        "u32" | "i32" => Some(4),
        "u64" | "i64" | "usize" | "isize" => Some(8),
        "u128" | "i128" => Some(16),
        _ => None,
    }
}

/// `PLACE[a..b].try_into().unwrap()` (or `.expect(..)`, or of `&PLACE[..]`)
/// where the range's length is `width`: the place and the start `a`.
fn slice_as_array(e: &syn::Expr, width: usize) -> Option<(syn::Expr, syn::Expr)> {
    let syn::Expr::MethodCall(unwrap) = e else { return None };
    let unwrapped = match unwrap.method.to_string().as_str() {
        "unwrap" => unwrap.args.is_empty(),
        "expect" => unwrap.args.len() == 1,
        _ => false,
    };
    let syn::Expr::MethodCall(conv) = &*unwrap.receiver else { return None };
    if !unwrapped || conv.method != "try_into" || !conv.args.is_empty() || conv.turbofish.is_some() {
        return None;
    }
    let mut slice = &*conv.receiver;
    loop {
        slice = match slice {
            syn::Expr::Paren(p) => &p.expr,
            syn::Expr::Reference(r) if r.mutability.is_none() => &r.expr,
            _ => break,
        };
    }
    let syn::Expr::Index(ix) = slice else { return None };
    let syn::Expr::Range(r) = &*ix.index else { return None };
    let (Some(start), Some(end)) = (&r.start, &r.end) else { return None };
    // Evaluated once where Rust evaluates it twice (in the start and the
    // end): only where that reads the same both times.
    if !computes_only(start) {
        return None;
    }
    let len = match (int_lit(start), int_lit(end)) {
        (Some(a), Some(b)) => b.checked_sub(a)?,
        _ => {
            let syn::Expr::Binary(b) = &**end else { return None };
            let same_start = b.left.to_token_stream().to_string() == start.to_token_stream().to_string();
            if !matches!(b.op, syn::BinOp::Add(_)) || !same_start {
                return None;
            }
            int_lit(&b.right)?
        }
    };
    let len = if matches!(r.limits, syn::RangeLimits::Closed(_)) { len + 1 } else { len };
    (len == width && is_place(&ix.expr)).then(|| ((*ix.expr).clone(), (**start).clone()))
}

fn int_lit(e: &syn::Expr) -> Option<usize> {
    match e {
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(n), .. }) => n.base10_parse().ok(),
        syn::Expr::Paren(p) => int_lit(&p.expr),
        _ => None,
    }
}

/// Arithmetic on places and literals (`self.ip`, `pc + 1`): no call, no
/// assignment, nothing that could give another value when evaluated again.
fn computes_only(e: &syn::Expr) -> bool {
    match e {
        syn::Expr::Lit(_) => true,
        syn::Expr::Binary(b) => {
            !matches!(
                b.op,
                syn::BinOp::AddAssign(_)
                    | syn::BinOp::SubAssign(_)
                    | syn::BinOp::MulAssign(_)
                    | syn::BinOp::DivAssign(_)
                    | syn::BinOp::RemAssign(_)
                    | syn::BinOp::BitXorAssign(_)
                    | syn::BinOp::BitAndAssign(_)
                    | syn::BinOp::BitOrAssign(_)
                    | syn::BinOp::ShlAssign(_)
                    | syn::BinOp::ShrAssign(_)
            ) && computes_only(&b.left)
                && computes_only(&b.right)
        }
        syn::Expr::Cast(c) => computes_only(&c.expr),
        syn::Expr::Unary(u) => computes_only(&u.expr),
        e => is_place(e),
    }
}

/// A path or a field of one (`code`, `self.chunk.code`): reading it again
/// reads the same thing.
fn is_place(e: &syn::Expr) -> bool {
    match e {
        syn::Expr::Path(p) => p.qself.is_none(),
        syn::Expr::Field(f) => is_place(&f.base),
        syn::Expr::Paren(p) => is_place(&p.expr),
        _ => false,
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

    #[test]
    fn a_slice_of_known_length_made_an_array_is_its_bytes_written_out() {
        check(
            "mod m { impl M { fn read(&mut self) -> u16 { \
             let v = u16::from_le_bytes(self.code[self.ip..self.ip + 2].try_into().unwrap()); self.ip += 2; v } } \
             fn b(code: &[u8], i: usize) -> i32 { i32::from_be_bytes((&code[i..=i + 3]).try_into().expect(\"4\")) } \
             fn c(code: &[u8], i: usize) -> u32 { let w: [u8; 4] = code[i..i + 4].try_into().unwrap(); u32::from_le_bytes(w) } \
             fn d(code: &[u8]) -> u16 { u16::from_le_bytes(code[1..3].try_into().unwrap()) } }",
            expect![[r#"
                mod m {
                    impl M {
                        fn read(&mut self) -> u16 {
                            let v = {
                                let __jitgen_at0 = self.ip;
                                u16::from_le_bytes([
                                    self.code[__jitgen_at0],
                                    self.code[__jitgen_at0 + 1],
                                ])
                            };
                            self.ip += 2;
                            v
                        }
                    }
                    fn b(code: &[u8], i: usize) -> i32 {
                        {
                            let __jitgen_at0 = i;
                            i32::from_be_bytes([
                                code[__jitgen_at0],
                                code[__jitgen_at0 + 1],
                                code[__jitgen_at0 + 2],
                                code[__jitgen_at0 + 3],
                            ])
                        }
                    }
                    fn c(code: &[u8], i: usize) -> u32 {
                        let __jitgen_at0 = i;
                        let __jitgen_byte1_0: u8 = code[__jitgen_at0];
                        let __jitgen_byte1_1: u8 = code[__jitgen_at0 + 1];
                        let __jitgen_byte1_2: u8 = code[__jitgen_at0 + 2];
                        let __jitgen_byte1_3: u8 = code[__jitgen_at0 + 3];
                        u32::from_le_bytes([
                            __jitgen_byte1_0,
                            __jitgen_byte1_1,
                            __jitgen_byte1_2,
                            __jitgen_byte1_3,
                        ])
                    }
                    fn d(code: &[u8]) -> u16 {
                        {
                            let __jitgen_at0 = 1;
                            u16::from_le_bytes([code[__jitgen_at0], code[__jitgen_at0 + 1]])
                        }
                    }
                }
            "#]],
        );
    }

    #[test]
    fn a_slice_whose_length_is_not_the_arrays_stays_as_written() {
        // Of another length than the integer's; a length the range does not
        // say; of a call's result, which reading per byte would call again;
        // converted to a reference to an array; from a start that calls.
        check(
            "mod m { fn a(c: &[u8], i: usize) -> u32 { u32::from_le_bytes(c[i..i + 2].try_into().unwrap()) } \
             fn b(c: &[u8], i: usize, j: usize) -> u16 { u16::from_le_bytes(c[i..j].try_into().unwrap()) } \
             fn e(i: usize) -> u16 { u16::from_le_bytes(code()[i..i + 2].try_into().unwrap()) } \
             fn f(c: &[u8], i: usize) -> u16 { let r: &[u8; 2] = c[i..i + 2].try_into().unwrap(); u16::from_le_bytes(*r) } \
             fn g(&mut self) -> u16 { u16::from_le_bytes(self.c[self.next()..self.next() + 2].try_into().unwrap()) } }",
            expect![[r#"
                mod m {
                    fn a(c: &[u8], i: usize) -> u32 {
                        u32::from_le_bytes(c[i..i + 2].try_into().unwrap())
                    }
                    fn b(c: &[u8], i: usize, j: usize) -> u16 {
                        u16::from_le_bytes(c[i..j].try_into().unwrap())
                    }
                    fn e(i: usize) -> u16 {
                        u16::from_le_bytes(code()[i..i + 2].try_into().unwrap())
                    }
                    fn f(c: &[u8], i: usize) -> u16 {
                        let r: &[u8; 2] = c[i..i + 2].try_into().unwrap();
                        u16::from_le_bytes(*r)
                    }
                    fn g(&mut self) -> u16 {
                        u16::from_le_bytes(self.c[self.next()..self.next() + 2].try_into().unwrap())
                    }
                }
            "#]],
        );
    }
}

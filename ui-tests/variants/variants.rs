//! The example interpreters (`interpreters/stackvm`, `interpreters/subroutines`)
//! rewritten the ways another Rust programmer could have written them:
//! compound assignments spelled out, `if`s inverted, locals renamed, `?`
//! written as a `match`, tuple `let`s split, operands parenthesized, arm
//! bodies in blocks, the stack's methods called by path
//! (`Stack::push(&mut self.stack, x)`), a `match` that returns early as
//! `let .. else`, reads `v[i]` as `*v.get(i).unwrap()`, a call that fails
//! past a depth (`self.frames.len()` read at each call).
//!
//! Each variation is a syntax-tree rewrite of the annotated module. The build
//! script writes the variants as modules of one test crate, each with a test
//! that runs the interpreter's programs (loops, calls, printing, errors)
//! through the portal and `jit::specialize` against `jit::plain`: in the
//! fast tier one variant per interpreter with every variation applied, in
//! the deep tier (`JITGEN_DEEP=1` when building) also one per variation.

use proc_macro2::{Ident, TokenStream, TokenTree};
use quote::quote;
use syn::visit_mut::{self, VisitMut};

/// The interpreters varied: a name, the source, and a `main` comparing the
/// variant's portal and `jit::specialize` with `jit::plain`.
const INTERPRETERS: &[(&str, &str, &str)] = &[
    ("stackvm", include_str!("../../interpreters/stackvm/src/lib.rs"), STACKVM_MAIN),
    ("subroutines", include_str!("../../interpreters/subroutines/src/lib.rs"), SUBROUTINES_MAIN),
];

const SUBROUTINES_MAIN: &str = r#"
pub fn main() {
    use sub::*;
    sub::jit::config().set_threshold(0);
    let programs: &[&[u8]] = &[
        &[CALL, 6, JNZ, 0, HALT, HALT, CALL, 9, RET, DECR, RET],
        &[CALL, 14, CALL, 14, CALL, 14, DECR, DECR, DECR, DECR, JNZ, 0, HALT, HALT, ADD, 1, RET],
        &[DOUBLE, DOUBLE, HALT],
        &[RET],
        &[CALL, 4, HALT, HALT, 3, 100, RET],
        &[CALL, 0],
        &[9],
        &[CALL],
    ];
    for code in programs {
        for a in [1, 5, 40] {
            let want = sub::jit::plain::run(code, a);
            for _ in 0..3 {
                assert_eq!(sub::run(code, a), want, "the portal on {code:?} with {a}");
            }
            assert_eq!(sub::jit::specialize::run(code).call(a), want, "specialized {code:?} with {a}");
        }
    }
    let st = sub::jit::stats();
    assert!(st.entries > 0, "nothing compiled: {st:?} {:?}", sub::jit::last_decline());
}
"#;

const STACKVM_MAIN: &str = r#"
pub fn main() {
    use programs::*;
    use vm::{Instruction::*, Vm};
    vm::jit::config().set_threshold(0);
    let programs: Vec<Vec<vm::Instruction>> = vec![
        counted_loop(100),
        nested_loops(4, 6),
        procedure_in_a_loop(30),
        printing(2),
        vec![Add],
        vec![Push(1), Jump(99)],
        vec![Push(1), Ret],
        vec![Load(3), Halt],
        vec![Push(1), Push(2), Swap, Sub, Dup, Lt, Inc, Halt],
        recursive_fib(12),
        deep_recursion(1500, 0),
        deep_recursion(1500, 1),
    ];
    for code in programs {
        let want = vm::jit::plain::Vm::run(&mut Vm::new(code.clone()));
        for _ in 0..3 {
            assert_eq!(Vm::new(code.clone()).run(), want, "the portal on {code:?}");
        }
        assert_eq!(vm::jit::specialize::Vm::run(&mut Vm::new(code.clone())), want, "specialized {code:?}");
    }
    let st = vm::jit::stats();
    assert!(st.entries > 0, "nothing compiled: {st:?} {:?}", vm::jit::last_decline());
}
"#;

/// A rewrite of the annotated module; returns how many places it changed.
type Variation = fn(&mut syn::ItemMod) -> usize;

const VARIATIONS: &[(&str, Variation)] = &[
    ("compound_assignments_spelled_out", compound_assignments_spelled_out),
    ("ifs_inverted", ifs_inverted),
    ("locals_renamed", locals_renamed),
    ("question_marks_as_matches", question_marks_as_matches),
    ("tuple_lets_split", tuple_lets_split),
    ("operands_parenthesized", operands_parenthesized),
    ("arm_bodies_in_blocks", arm_bodies_in_blocks),
    ("stack_methods_called_by_path", stack_methods_called_by_path),
    ("matches_as_let_else", matches_as_let_else),
    ("indexing_as_get", indexing_as_get),
    ("calls_limited_in_depth", calls_limited_in_depth),
];

/// The source of the test crate: every interpreter with all variations
/// applied, and with `one_by_one` also each variation alone (a variation
/// that finds nothing to change in one interpreter is skipped there, but
/// must change something somewhere). Each variant is a module holding the
/// varied file, and a test runs its `main`.
pub fn test_crate(one_by_one: bool) -> String {
    let mut out = String::new();
    for (interp, source, main) in INTERPRETERS {
        let mut every = vec![];
        for (name, vary) in VARIATIONS {
            every.push(*vary);
            if one_by_one {
                if let Some(text) = variant(source, &[*vary]) {
                    out += &module(&format!("{interp}_{name}"), &text, main);
                }
            }
        }
        let text = variant(source, &every).expect("the variations change each interpreter");
        out += &module(&format!("{interp}_every_variation"), &text, main);
    }
    for (name, vary) in VARIATIONS {
        let changes = INTERPRETERS.iter().filter(|(_, source, _)| variant(source, &[*vary]).is_some()).count();
        assert!(changes > 0, "the variation {name} changed nothing");
    }
    out
}

/// `source` with `variations` applied to its `#[jit_interpreter]` module,
/// printed; `None` if they changed nothing.
fn variant(source: &str, variations: &[Variation]) -> Option<String> {
    let mut f: syn::File = syn::parse_str(source).expect("the interpreter parses");
    let mut changed = 0;
    for item in &mut f.items {
        if let syn::Item::Mod(m) = item {
            if m.attrs.iter().any(|a| a.path().is_ident("jit_interpreter")) {
                changed += variations.iter().map(|vary| vary(m)).sum::<usize>();
            }
        }
    }
    (changed > 0).then(|| prettyplease::unparse(&f))
}

/// A variant as a module of the test crate, and its test.
fn module(name: &str, text: &str, main: &str) -> String {
    format!("#[allow(dead_code)]\nmod {name} {{\n{text}{main}}}\n\n#[test]\nfn {name}_agrees_with_plain() {{\n    {name}::main();\n}}\n\n")
}

/// Rewrites every expression of a module, innermost first, with `f`
/// (which says whether it changed it); returns how many it changed.
fn exprs_rewritten(m: &mut syn::ItemMod, f: impl FnMut(&mut syn::Expr) -> bool) -> usize {
    struct V<F>(F, usize);
    impl<F: FnMut(&mut syn::Expr) -> bool> VisitMut for V<F> {
        fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
            visit_mut::visit_expr_mut(self, e);
            if (self.0)(e) {
                self.1 += 1;
            }
        }
    }
    count_with(m, V(f, 0), |v| v.1)
}

/// Applies `visit` to a module, counting through `count`.
fn count_with<V: VisitMut>(m: &mut syn::ItemMod, mut v: V, count: impl Fn(&V) -> usize) -> usize {
    v.visit_item_mod_mut(m);
    count(&v)
}

/// `a += b` as `a = a + b` (every compound assignment).
fn compound_assignments_spelled_out(m: &mut syn::ItemMod) -> usize {
    exprs_rewritten(m, |e| {
        let syn::Expr::Binary(b) = e else { return false };
        let op = match b.op {
            syn::BinOp::AddAssign(_) => quote!(+),
            syn::BinOp::SubAssign(_) => quote!(-),
            syn::BinOp::MulAssign(_) => quote!(*),
            _ => return false,
        };
        let (l, r) = (&b.left, &b.right);
        *e = syn::parse_quote!(#l = #l #op #r);
        true
    })
}

/// `if c { a } else { b }` as `if !(c) { b } else { a }`.
fn ifs_inverted(m: &mut syn::ItemMod) -> usize {
    exprs_rewritten(m, |e| {
        let syn::Expr::If(i) = e else { return false };
        if matches!(*i.cond, syn::Expr::Let(_)) {
            return false;
        }
        let Some((_, els)) = &i.else_branch else { return false };
        let syn::Expr::Block(els) = &**els else { return false };
        let (c, then, els) = (&i.cond, &i.then_branch, &els.block);
        *e = syn::parse_quote!(if !(#c) #els else #then);
        true
    })
}

/// Every local and parameter (bound by `let`, a match arm, a closure or a
/// signature) renamed, in macros' tokens too (`hint!(frame.return_pc,
/// promote)`).
fn locals_renamed(m: &mut syn::ItemMod) -> usize {
    struct Names(std::collections::HashSet<String>);
    impl VisitMut for Names {
        fn visit_pat_ident_mut(&mut self, p: &mut syn::PatIdent) {
            let s = p.ident.to_string();
            if s != "self" && s.starts_with(|c: char| c.is_lowercase()) {
                self.0.insert(s);
            }
        }
    }
    let mut names = Names(Default::default());
    names.visit_item_mod_mut(m);
    let names = names.0;
    struct Rename<'a>(&'a std::collections::HashSet<String>, usize);
    impl Rename<'_> {
        fn renamed(&self, i: &Ident) -> Option<Ident> {
            self.0.contains(&i.to_string()).then(|| Ident::new(&format!("{i}_v"), i.span()))
        }
        fn tokens(&mut self, ts: TokenStream) -> TokenStream {
            ts.into_iter()
                .map(|t| match t {
                    TokenTree::Ident(i) => match self.renamed(&i) {
                        Some(r) => {
                            self.1 += 1;
                            TokenTree::Ident(r)
                        }
                        None => TokenTree::Ident(i),
                    },
                    TokenTree::Group(g) => {
                        let mut n = proc_macro2::Group::new(g.delimiter(), self.tokens(g.stream()));
                        n.set_span(g.span());
                        TokenTree::Group(n)
                    }
                    t => t,
                })
                .collect()
        }
    }
    impl VisitMut for Rename<'_> {
        fn visit_pat_ident_mut(&mut self, p: &mut syn::PatIdent) {
            if let Some(r) = self.renamed(&p.ident) {
                p.ident = r;
                self.1 += 1;
            }
        }
        fn visit_expr_path_mut(&mut self, p: &mut syn::ExprPath) {
            if p.qself.is_none() && p.path.segments.len() == 1 {
                if let Some(r) = self.renamed(&p.path.segments[0].ident) {
                    p.path.segments[0].ident = r;
                    self.1 += 1;
                }
            }
        }
        fn visit_field_value_mut(&mut self, f: &mut syn::FieldValue) {
            // `Frame { base }` becomes `Frame { base: base_v }`.
            if f.colon_token.is_none() {
                f.colon_token = Some(Default::default());
            }
            visit_mut::visit_field_value_mut(self, f);
        }
        fn visit_macro_mut(&mut self, mac: &mut syn::Macro) {
            mac.tokens = self.tokens(std::mem::take(&mut mac.tokens));
        }
    }
    count_with(m, Rename(&names, 0), |v| v.1)
}

/// `x?` as `match x { Ok(v) => v, Err(e) => return Err(e) }`.
fn question_marks_as_matches(m: &mut syn::ItemMod) -> usize {
    exprs_rewritten(m, |e| {
        let syn::Expr::Try(t) = e else { return false };
        let x = &t.expr;
        *e = syn::parse_quote!(match #x {
            ::core::result::Result::Ok(ok) => ok,
            ::core::result::Result::Err(err) => return ::core::result::Result::Err(err),
        });
        true
    })
}

/// `let (a, b) = (x, y);` as `let a = x; let b = y;`.
fn tuple_lets_split(m: &mut syn::ItemMod) -> usize {
    struct V(usize);
    impl VisitMut for V {
        fn visit_block_mut(&mut self, b: &mut syn::Block) {
            visit_mut::visit_block_mut(self, b);
            let mut out = vec![];
            for s in std::mem::take(&mut b.stmts) {
                if let syn::Stmt::Local(l) = &s {
                    if let (syn::Pat::Tuple(p), Some(init)) = (&l.pat, &l.init) {
                        if let (syn::Expr::Tuple(t), None) = (&*init.expr, &init.diverge) {
                            if p.elems.len() == t.elems.len() {
                                for (p, x) in p.elems.iter().zip(&t.elems) {
                                    out.push(syn::parse_quote!(let #p = #x;));
                                }
                                self.0 += 1;
                                continue;
                            }
                        }
                    }
                }
                out.push(s);
            }
            b.stmts = out;
        }
    }
    count_with(m, V(0), |v| v.0)
}

/// `a + b` as `(a) + (b)` (every binary operation that is not a compound
/// assignment).
fn operands_parenthesized(m: &mut syn::ItemMod) -> usize {
    exprs_rewritten(m, |e| {
        let syn::Expr::Binary(b) = e else { return false };
        if matches!(b.op, syn::BinOp::AddAssign(_) | syn::BinOp::SubAssign(_) | syn::BinOp::MulAssign(_)) {
            return false;
        }
        let (l, r) = (&b.left, &b.right);
        b.left = Box::new(syn::parse_quote!((#l)));
        b.right = Box::new(syn::parse_quote!((#r)));
        true
    })
}

/// `Pat => expr,` as `Pat => { expr }`.
fn arm_bodies_in_blocks(m: &mut syn::ItemMod) -> usize {
    struct V(usize);
    impl VisitMut for V {
        fn visit_arm_mut(&mut self, a: &mut syn::Arm) {
            visit_mut::visit_arm_mut(self, a);
            if !matches!(*a.body, syn::Expr::Block(_)) {
                let b = &a.body;
                a.body = Box::new(syn::parse_quote!({ #b }));
                a.comma = Some(Default::default());
                self.0 += 1;
            }
        }
    }
    count_with(m, V(0), |v| v.0)
}

/// `self.stack.push(x)` as `Stack::push(&mut self.stack, x)` (and `&` for
/// the methods that take `&self`).
fn stack_methods_called_by_path(m: &mut syn::ItemMod) -> usize {
    exprs_rewritten(m, |e| {
        let syn::Expr::MethodCall(c) = e else { return false };
        let r = &c.receiver;
        if quote!(#r).to_string() != "self . stack" {
            return false;
        }
        let (method, args) = (&c.method, &c.args);
        let by = match method.to_string().as_str() {
            "push" | "pop" | "peek_mut" | "get_mut" => quote!(&mut),
            "peek" | "get" | "len" | "is_empty" => quote!(&),
            _ => return false,
        };
        *e = syn::parse_quote!(Stack::#method(#by self.stack, #args));
        true
    })
}

/// `let x = match e { Some(v) => v, None => return r };` as
/// `let Some(x) = e else { return r };`.
fn matches_as_let_else(m: &mut syn::ItemMod) -> usize {
    struct V(usize);
    impl VisitMut for V {
        fn visit_local_mut(&mut self, l: &mut syn::Local) {
            visit_mut::visit_local_mut(self, l);
            let (syn::Pat::Ident(name), Some(init)) = (&l.pat, &l.init) else { return };
            let (syn::Expr::Match(mt), None) = (&*init.expr, &init.diverge) else { return };
            let [some, none] = &mt.arms[..] else { return };
            let syn::Pat::TupleStruct(p) = &some.pat else { return };
            let (Some(bound), syn::Expr::Path(body)) = (p.elems.first(), &*some.body) else { return };
            if quote!(#bound).to_string() != quote!(#body).to_string() || !quote!(#none).to_string().contains("return")
            {
                return;
            }
            let (path, scrutinee, diverge, name) = (&p.path, &mt.expr, &none.body, &name.ident);
            let syn::Stmt::Local(new) = syn::parse_quote!(let #path(#name) = #scrutinee else { #diverge; };) else {
                unreachable!("a let statement")
            };
            *l = new;
            self.0 += 1;
        }
    }
    count_with(m, V(0), |v| v.0)
}

/// A read `v[i]` as `*v.get(i).unwrap()` (assigned places and `&mut v[i]`
/// stay indexed).
fn indexing_as_get(m: &mut syn::ItemMod) -> usize {
    struct V(usize);
    impl VisitMut for V {
        fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
            match e {
                syn::Expr::Assign(a) => return self.visit_expr_mut(&mut a.right),
                syn::Expr::Binary(b) if matches!(b.op, syn::BinOp::AddAssign(_) | syn::BinOp::SubAssign(_)) => {
                    return self.visit_expr_mut(&mut b.right);
                }
                syn::Expr::Reference(r) if r.mutability.is_some() => return,
                syn::Expr::MethodCall(c) if matches!(*c.receiver, syn::Expr::Index(_)) => {
                    // The receiver may be borrowed `&mut`.
                    for a in &mut c.args {
                        self.visit_expr_mut(a);
                    }
                    return;
                }
                _ => {}
            }
            visit_mut::visit_expr_mut(self, e);
            if let syn::Expr::Index(ix) = e {
                let (v, i) = (&ix.expr, &ix.index);
                *e = syn::parse_quote!(*#v.get(#i).unwrap());
                self.0 += 1;
            }
        }
    }
    count_with(m, V(0), |v| v.0)
}

/// A call that fails once the interpreted program is 1000 calls deep:
/// `if self.frames.len() >= 1000 { return Err(VmError::NoFrame); }` before
/// each `self.frames.push(..)` (the length of the saved frames read at
/// every call, as a recursion limit does).
fn calls_limited_in_depth(m: &mut syn::ItemMod) -> usize {
    struct V(usize);
    impl VisitMut for V {
        fn visit_block_mut(&mut self, b: &mut syn::Block) {
            visit_mut::visit_block_mut(self, b);
            let pushes_frame = |s: &syn::Stmt| {
                let syn::Stmt::Expr(syn::Expr::MethodCall(c), _) = s else { return false };
                let r = &c.receiver;
                c.method == "push" && quote!(#r).to_string().replace(' ', "") == "self.frames"
            };
            if let Some(at) = b.stmts.iter().position(pushes_frame) {
                b.stmts.insert(
                    at,
                    syn::parse_quote!(if self.frames.len() >= 1000 {
                        return Err(VmError::NoFrame);
                    }),
                );
                self.0 += 1;
            }
        }
    }
    count_with(m, V(0), |v| v.0)
}

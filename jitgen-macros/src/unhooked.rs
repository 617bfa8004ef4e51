//! A portal's hook-free continuation: the rest of a portal call, interpreted
//! with no hook at its merge point. Only for a loop that is not outlined
//! from its hook (see `outline`, whose closure is entered again with its
//! test off instead).
//!
//! The hook costs a test at every visit of the merge point (of the sampling
//! clock's flag, `LoopSampler::due`; with code in the thread, of the entry
//! filter in the cold path at every visit), and a portal whose every
//! compilation declines would pay it for nothing. So when the hook has met
//! only declined positions for a while (`Sampler::gives_up`), the call goes
//! on in a copy of the merge point's loop without the hook, placed beside
//! the loop in the same function: same variables, nothing moved or borrowed
//! anew, so whatever the interpreter's body does with its locals the copy
//! does too.
//!
//! The merge point must be the first statement of its loop (other than
//! items). The loop `L`, labeled `'l` (`'__jit_loop` if it had no label),
//! becomes
//!
//! ```text
//! '__jit_exit: {
//!     '__jit_enter: {
//!         if black_box(false) { break '__jit_enter; }
//!         break '__jit_exit (L);   // the hook gives up with `break '__jit_enter`
//!     }
//!     U                            // the copy, which leaves by `break '__jit_exit`
//! }
//! ```
//!
//! with, for the copy `U` and its body `B` (what follows the merge point):
//!
//! ```text
//! 'l: loop { mp; B }             U = '__jit_u: loop { B' }
//! 'l: while c { mp; B }          U = '__jit_u: loop { '__jit_b: { B' } if !(c) { break '__jit_exit; } }
//! 'l: while let p = e { mp; B }  U = '__jit_u: while let p = e { B' } break '__jit_exit;
//! ```
//!
//! In `B'`, the loop's own `break`s (unlabeled at its top level, or `'l`)
//! break `'__jit_exit` with their value, and its `continue`s go on with the
//! copy. A `while let` binds its pattern inside the loop, so there the hook
//! first ends the turn under way (`'__jit_b: { B } break '__jit_enter;`,
//! `continue` retargeted to the end of the turn) and the copy starts by
//! testing the condition. `return` and `?` are unchanged. The entry that
//! never holds (`black_box(false)`) keeps the optimizer from taking the copy
//! for code as cold as the hook, where it would not inline calls: reached
//! from the hook alone, a copy that boxed a value allocated it (3.5x plain)
//! where the plain interpreter's allocation was elided. A merge point
//! anywhere else (after other statements of its loop), or one whose loop body is
//! larger than [`MAX_BODY_TOKENS`], gets no copy: its hook stays for the whole call.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::visit_mut::{self, VisitMut};

/// Replaces the merge point's loop in `item` by the loop with its hook-free
/// continuation beside it (labeling the loop if it had no label), and
/// returns what the hook runs where the call gives the hook up. `None`
/// where the merge point does not start its loop's body.
pub fn continuation(item: &mut syn::ItemFn) -> Option<TokenStream> {
    let mut find = Find { found: None };
    find.visit_block_mut(&mut item.block);
    find.found.flatten()
}

/// The largest loop body (in tokens, groups counted once each) that gets a
/// copy. In a small body the hook's countdown (as it was, per visit) is a large share of a turn
/// (1.2-1.3x plain on a 4-operation loop, 1.15x on the stack VM's 1,454
/// tokens) and the copy beside it cost nothing measurable; in TLC's 2,272
/// tokens the countdown costs about 6% and the copy's code in the same
/// function cost the hooked loop 6-9% (PERFORMANCE.md). A bound measured
/// between those two interpreters.
pub const MAX_BODY_TOKENS: usize = 2000;

pub(crate) fn token_count(t: TokenStream) -> usize {
    t.into_iter()
        .map(|x| match x {
            proc_macro2::TokenTree::Group(g) => 1 + token_count(g.stream()),
            _ => 1,
        })
        .sum()
}

struct Find {
    /// Once the merge point's loop is found: what the hook runs to give up,
    /// if the loop got a copy.
    found: Option<Option<TokenStream>>,
}

fn lifetime(name: &str) -> syn::Lifetime {
    syn::Lifetime::new(name, Span::call_site())
}

impl VisitMut for Find {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if self.found.is_some() {
            return;
        }
        let (label, body, cond) = match e {
            syn::Expr::Loop(l) => (&mut l.label, &l.body, None),
            syn::Expr::While(w) => (&mut w.label, &w.body, Some((*w.cond).clone())),
            _ => return visit_mut::visit_expr_mut(self, e),
        };
        let Some((items, rest)) = split_at_merge_point(body) else {
            return visit_mut::visit_expr_mut(self, e);
        };
        if token_count(quote!(#(#rest)*)) > MAX_BODY_TOKENS {
            self.found = Some(None);
            return;
        }
        let orig = label
            .get_or_insert_with(|| syn::Label { name: lifetime("'__jit_loop"), colon_token: Default::default() })
            .name
            .clone();
        let (exit, enter, u, b) =
            (lifetime("'__jit_exit"), lifetime("'__jit_enter"), lifetime("'__jit_u"), lifetime("'__jit_b"));
        // The loop again, without the hook, its exits leaving it for the
        // end of the original.
        let (at_hook, unhooked) = match &cond {
            None => {
                let body = retarget(&rest, &orig, syn::parse_quote!(continue #u), &exit, true);
                (quote!(break #enter;), quote!(#u: loop { #(#items)* #(#body)* }))
            }
            Some(c) if !has_let(c) => {
                let body = retarget(&rest, &orig, syn::parse_quote!(break #b), &exit, true);
                (quote!(break #enter;), quote!(#u: loop { #(#items)* #b: { #(#body)* } if !(#c) { break #exit; } }))
            }
            Some(c) => {
                // The pattern's bindings live in the loop: the turn under way
                // ends at the hook, then the copy tests the condition.
                let turn = retarget(&rest, &orig, syn::parse_quote!(break #b), &orig, true);
                let body = retarget(&rest, &orig, syn::parse_quote!(continue #u), &exit, false);
                (quote!(#b: { #(#turn)* } break #enter;), quote!(#u: while #c { #(#items)* #(#body)* } break #exit;))
            }
        };
        let hooked = e.clone();
        // `black_box(false)` never holds; it gives the copy an entry the
        // optimizer cannot rule out, so that it does not take the copy for
        // code as cold as the hook it is otherwise reached from (it would
        // not inline calls there).
        *e = syn::parse_quote!(#exit: {
            #enter: {
                if ::core::hint::black_box(false) {
                    break #enter;
                }
                break #exit (#hooked);
            }
            #unhooked
        });
        self.found = Some(Some(at_hook));
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

/// The items of a loop body before its merge point, and the statements
/// after it, when the merge point is its first statement other than items.
pub(crate) fn split_at_merge_point(body: &syn::Block) -> Option<(Vec<syn::Stmt>, Vec<syn::Stmt>)> {
    let i = body.stmts.iter().position(|s| !matches!(s, syn::Stmt::Item(_)))?;
    let is_merge_point = match &body.stmts[i] {
        syn::Stmt::Macro(m) => hint_annotator::is_merge_point(&m.mac),
        syn::Stmt::Expr(syn::Expr::Macro(m), _) => hint_annotator::is_merge_point(&m.mac),
        _ => false,
    };
    is_merge_point.then(|| (body.stmts[..i].to_vec(), body.stmts[i + 1..].to_vec()))
}

/// Whether a `while` condition binds (`while let`, let chains).
pub(crate) fn has_let(c: &syn::Expr) -> bool {
    match c {
        syn::Expr::Let(_) => true,
        syn::Expr::Binary(b) => has_let(&b.left) || has_let(&b.right),
        syn::Expr::Paren(p) => has_let(&p.expr),
        _ => false,
    }
}

/// `stmts` with the jumps of the loop labeled `orig` retargeted: its
/// `continue`s become `cont`, its `break`s break `brk`; with `top`, the
/// unlabeled ones at the top level of `stmts` count as its own.
pub(crate) fn retarget(
    stmts: &[syn::Stmt],
    orig: &syn::Lifetime,
    cont: syn::Expr,
    brk: &syn::Lifetime,
    top: bool,
) -> Vec<syn::Stmt> {
    let mut r = Retarget { orig, cont, brk, top, depth: 0 };
    let mut out = stmts.to_vec();
    for s in &mut out {
        r.visit_stmt_mut(s);
    }
    out
}

struct Retarget<'a> {
    orig: &'a syn::Lifetime,
    cont: syn::Expr,
    brk: &'a syn::Lifetime,
    top: bool,
    /// Loops entered inside the copied statements.
    depth: u32,
}

impl Retarget<'_> {
    fn is_orig(&self, label: &Option<syn::Lifetime>) -> bool {
        match label {
            None => self.top && self.depth == 0,
            Some(l) => l.ident == self.orig.ident,
        }
    }
}

impl VisitMut for Retarget<'_> {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        match e {
            syn::Expr::Continue(c) => {
                if self.is_orig(&c.label) {
                    *e = self.cont.clone();
                }
            }
            syn::Expr::Break(b) => {
                if self.is_orig(&b.label) {
                    b.label = Some(self.brk.clone());
                }
                visit_mut::visit_expr_break_mut(self, b);
            }
            syn::Expr::Loop(_) | syn::Expr::While(_) | syn::Expr::ForLoop(_) => {
                self.depth += 1;
                visit_mut::visit_expr_mut(self, e);
                self.depth -= 1;
            }
            // Jumps do not cross closures and async blocks.
            syn::Expr::Closure(_) | syn::Expr::Async(_) => {}
            _ => visit_mut::visit_expr_mut(self, e),
        }
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};

    fn check(src: &str, want: Expect) {
        let mut f: syn::ItemFn = syn::parse_str(src).unwrap();
        let got = match super::continuation(&mut f) {
            Some(at_hook) => {
                let file: syn::File = syn::parse_quote!(#f fn at_hook() { #at_hook });
                prettyplease::unparse(&file)
            }
            None => "no continuation\n".to_string(),
        };
        want.assert_eq(&got);
    }

    #[test]
    fn loop_breaks_leave_the_original_and_continues_stay_in_the_copy() {
        check(
            "fn f() -> i64 { let mut pc = 0; loop { hint!(global_merge_point); pc += 1; \
             if pc == 3 { continue; } while pc < 2 { break; } if pc > 9 { break pc; } } }",
            expect![[r#"
                fn f() -> i64 {
                    let mut pc = 0;
                    '__jit_exit: {
                        '__jit_enter: {
                            if ::core::hint::black_box(false) {
                                break '__jit_enter;
                            }
                            break '__jit_exit ('__jit_loop: loop {
                                hint!(global_merge_point);
                                pc += 1;
                                if pc == 3 {
                                    continue;
                                }
                                while pc < 2 {
                                    break;
                                }
                                if pc > 9 {
                                    break pc;
                                }
                            });
                        }
                        '__jit_u: loop {
                            pc += 1;
                            if pc == 3 {
                                continue '__jit_u;
                            }
                            while pc < 2 {
                                break;
                            }
                            if pc > 9 {
                                break '__jit_exit pc;
                            }
                        }
                    }
                }
                fn at_hook() {
                    break '__jit_enter;
                }
            "#]],
        );
    }

    #[test]
    fn while_tests_its_condition_after_a_continue() {
        check(
            "fn f(s: &[u8]) { let mut pc = 0; 'l: while pc < s.len() { use E::*; hint!(global_merge_point); \
             pc += 1; for i in 0..2 { if i == 1 { continue 'l; } continue; } if pc == 7 { break; } } }",
            expect![[r#"
                fn f(s: &[u8]) {
                    let mut pc = 0;
                    '__jit_exit: {
                        '__jit_enter: {
                            if ::core::hint::black_box(false) {
                                break '__jit_enter;
                            }
                            break '__jit_exit ('l: while pc < s.len() {
                                use E::*;
                                hint!(global_merge_point);
                                pc += 1;
                                for i in 0..2 {
                                    if i == 1 {
                                        continue 'l;
                                    }
                                    continue;
                                }
                                if pc == 7 {
                                    break;
                                }
                            });
                        }
                        '__jit_u: loop {
                            use E::*;
                            '__jit_b: {
                                pc += 1;
                                for i in 0..2 {
                                    if i == 1 {
                                        break '__jit_b;
                                    }
                                    continue;
                                }
                                if pc == 7 {
                                    break '__jit_exit;
                                }
                            }
                            if !(pc < s.len()) {
                                break '__jit_exit;
                            }
                        }
                    }
                }
                fn at_hook() {
                    break '__jit_enter;
                }
            "#]],
        );
    }

    #[test]
    fn while_let_ends_the_turn_then_loops_again() {
        check(
            "fn f(p: &[u8]) { let mut pc = 0; while let Some(op) = p.get(pc) { hint!(global_merge_point); \
             pc += 1; if *op == 0 { continue; } if *op == 1 { break; } } }",
            expect![[r#"
                fn f(p: &[u8]) {
                    let mut pc = 0;
                    '__jit_exit: {
                        '__jit_enter: {
                            if ::core::hint::black_box(false) {
                                break '__jit_enter;
                            }
                            break '__jit_exit ('__jit_loop: while let Some(op) = p.get(pc) {
                                hint!(global_merge_point);
                                pc += 1;
                                if *op == 0 {
                                    continue;
                                }
                                if *op == 1 {
                                    break;
                                }
                            });
                        }
                        '__jit_u: while let Some(op) = p.get(pc) {
                            pc += 1;
                            if *op == 0 {
                                continue;
                            }
                            if *op == 1 {
                                break;
                            }
                        }
                        break '__jit_exit;
                    }
                }
                fn at_hook() {
                    '__jit_b: {
                        pc += 1;
                        if *op == 0 {
                            break '__jit_b;
                        }
                        if *op == 1 {
                            break '__jit_loop;
                        }
                    }
                    break '__jit_enter;
                }
            "#]],
        );
    }

    #[test]
    fn a_loop_body_too_large_to_copy_has_none() {
        let body = "acc += 1; ".repeat(super::MAX_BODY_TOKENS / 4);
        check(
            &format!("fn f() {{ let mut acc = 0; loop {{ hint!(global_merge_point); {body} }} }}"),
            expect![[r#"
                no continuation
            "#]],
        );
    }

    #[test]
    fn a_merge_point_after_other_statements_has_none() {
        check(
            "fn f() { let mut pc = 0; loop { pc += 1; hint!(global_merge_point); } }",
            expect![[r#"
                no continuation
            "#]],
        );
    }
}

//! Visits of the merge point that a turn reached by stepping the position
//! forward skip the hook's test: only a turn that may have jumped looks.
//!
//! PyPy's interpreters mark where a loop of the interpreted program can
//! close (`can_enter_jit`, at backward jumps), and its hot-spot counting
//! runs only there. A `global_merge_point` is at the top of the dispatch
//! loop instead, so the sampler's test ran at every instruction: a load,
//! a test and a branch in the interpreter's tightest loop (7-15% of a short
//! run's time on one machine, PERFORMANCE.md). A loop of the interpreted
//! program must come back to a position it was at, so some turn of it does
//! not step forward; testing only at such turns finds every loop.
//!
//! The position is the merge point's green locals. A turn steps forward when
//! its path changes them only by `g += k` (`k` an integer literal, at least
//! 1) of one green scalar `g`, and does that at least once: the loop body
//! (after the merge point) has such a statement at its top level, run by
//! every turn that reaches the body's end; or, where each arm of its
//! `match` steps instead (`ip += 1` in the arms), each step sets a second
//! flag, and a turn that set none looks too. Anything else that may write a
//! green (an assignment, another compound assignment, `&mut g`, a method
//! called on it, a macro that names it, a macro of the body or the module
//! whose transcriber names it) sets a flag first, at the innermost
//! statement or match arm holding it. The body runs in an inner loop, and
//! its end goes back to the test only where the flag is set:
//!
//! ```text
//! 'l: loop { mp; B }   =>   'l: loop { mp; loop { let mut f = false; B'; if f { continue 'l; } } }
//! ```
//!
//! In `B'`, the loop's own `continue`s go to `'l` (they may skip the step),
//! its `break`s leave `'l`. A rotated `while` (`outline::rotate_while`)
//! keeps its condition at the end of the inner loop, and the jump that
//! stands for its `continue` sets the flag. A `while let P = E` carries its
//! pattern's bindings `b..` into the inner loop, and tests `P = E` again at
//! its end:
//!
//! ```text
//! 'l: while let P = E { mp; B }   =>   'l: while let P = E { mp; let mut t = (b..);
//!     loop { let (b..) = t; let mut f = false; B'; if f { continue 'l; }
//!            match E { P => t = (b..), _ => break 'l } } }
//! ```
//!
//! What `P` binds is not a green of the position there: it is recomputed
//! from `E` at each turn. Not applied (the test stays at every visit): a
//! green that is not a plain local, a body with no step, or one that binds
//! a green's name again.

use std::collections::{HashMap, HashSet};

use proc_macro2::{Spacing, TokenStream, TokenTree};
use quote::ToTokens;
use syn::visit::{self, Visit};

/// The flag a turn that may have jumped sets.
const FLAG: &str = "__jit_jumped";

/// The flag a turn that stepped sets, where the body has no step at its
/// top level (each arm of its `match` steps).
const STEPPED: &str = "__jit_stepped";

/// Sets `flag` after each step inside the body (not in closures, which may
/// not run): after the statement in its block, or around a match arm's
/// body that is a step.
struct MarkSteps<'a, 'w> {
    w: &'a Writes<'w>,
    flag: &'a syn::Ident,
    found: bool,
}

impl syn::visit_mut::VisitMut for MarkSteps<'_, '_> {
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        let mut out = Vec::with_capacity(b.stmts.len());
        for mut s in std::mem::take(&mut b.stmts) {
            let step = self.w.is_step(&s);
            if !step {
                self.visit_stmt_mut(&mut s);
            }
            let flag = self.flag;
            let ends_block = matches!(&s, syn::Stmt::Expr(_, None));
            if step && ends_block {
                // The block's value is the step's, `()`.
                if let syn::Stmt::Expr(_, semi) = &mut s {
                    *semi = Some(Default::default());
                }
            }
            out.push(s);
            if step {
                self.found = true;
                out.push(syn::parse_quote!(#flag = true;));
            }
        }
        b.stmts = out;
    }

    fn visit_arm_mut(&mut self, a: &mut syn::Arm) {
        if self.w.is_step_expr(&a.body) {
            let (body, flag) = (&a.body, self.flag);
            *a.body = syn::parse_quote!({ #body; #flag = true; });
            self.found = true;
            return;
        }
        syn::visit_mut::visit_arm_mut(self, a);
    }

    fn visit_expr_closure_mut(&mut self, _: &mut syn::ExprClosure) {}
}

/// Rewrites the merge point's loop, the first of `suffix` (the portal's
/// statements from it on; `prefix` those before it), as the module doc
/// says, for the position's greens `greens`; `module_macros` are the
/// module's `macro_rules!`. Greens bound without `mut` (by their last
/// binding in `sig` and `prefix`) never change and are left out.
pub fn skip_forward_turns(
    suffix: &mut [syn::Stmt],
    prefix: &[syn::Stmt],
    sig: &syn::Signature,
    greens: &[String],
    module_macros: &[syn::ItemMacro],
    rotated: bool,
) -> bool {
    // The transcribers of the macros the body may call, by name: the
    // module's, and those defined anywhere in the portal's body.
    struct Defined<'a>(Vec<&'a syn::ItemMacro>);
    impl<'a> Visit<'a> for Defined<'a> {
        fn visit_item_macro(&mut self, m: &'a syn::ItemMacro) {
            self.0.push(m);
        }
    }
    let mut defined = Defined(vec![]);
    for s in prefix.iter().chain(suffix.iter()) {
        defined.visit_stmt(s);
    }
    let mut transcribers: HashMap<String, TokenStream> = HashMap::new();
    for m in module_macros.iter().chain(defined.0) {
        if let (Some(name), true) = (&m.ident, m.mac.path.is_ident("macro_rules")) {
            transcribers.entry(name.to_string()).or_default().extend(m.mac.tokens.clone());
        }
    }
    let mut fixed: HashSet<String> = HashSet::new();
    let params = sig.inputs.iter().filter_map(|a| match a {
        syn::FnArg::Typed(pt) => Some(&*pt.pat),
        _ => None,
    });
    let lets = prefix.iter().filter_map(|s| match s {
        syn::Stmt::Local(l) => Some(&l.pat),
        _ => None,
    });
    for p in params.chain(lets) {
        for (name, mutable) in pattern_binds(p) {
            if mutable {
                fixed.remove(&name.to_string());
            } else {
                fixed.insert(name.to_string());
            }
        }
    }
    let greens: Vec<String> = greens.iter().filter(|g| !fixed.contains(*g)).cloned().collect();
    match suffix.first_mut() {
        Some(s) => skip_forward_visits(s, &greens, &transcribers, rotated),
        None => false,
    }
}

/// The names a pattern binds (not its constants, which are capitalized),
/// with their `mut`.
pub(crate) fn pattern_binds(pat: &syn::Pat) -> Vec<(syn::Ident, bool)> {
    struct V(Vec<(syn::Ident, bool)>);
    impl<'ast> syn::visit::Visit<'ast> for V {
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            if !p.ident.to_string().starts_with(|c: char| c.is_ascii_uppercase()) {
                self.0.push((p.ident.clone(), p.mutability.is_some()));
            }
            syn::visit::visit_pat_ident(self, p);
        }
    }
    let mut v = V(vec![]);
    syn::visit::Visit::visit_pat(&mut v, pat);
    v.0
}

/// Rewrites the merge point's loop statement `s` as the module doc says,
/// for the position's green locals `greens`; `macros` are the transcribers
/// of the `macro_rules!` the body may call, by name. False where it does not
/// apply (`s` unchanged).
fn skip_forward_visits(
    s: &mut syn::Stmt,
    greens: &[String],
    macros: &HashMap<String, TokenStream>,
    rotated: bool,
) -> bool {
    if greens.is_empty() || greens.iter().any(|g| syn::parse_str::<syn::Ident>(g).is_err()) {
        return false;
    }
    let mut greens: HashSet<String> = greens.iter().cloned().collect();
    let Some(l) = loop_of(s, rotated) else { return false };
    let (label_slot, body, while_let) = match l {
        TurnLoop::Loop(l) => (&mut l.label, &mut l.body, None),
        TurnLoop::WhileLet(w) => {
            let syn::Expr::Let(c) = &*w.cond else { return false };
            let (pat, e) = ((*c.pat).clone(), (*c.expr).clone());
            // What the pattern binds is recomputed at each turn from the
            // scrutinee, whose greens are the position's: not a green the
            // turn steps or writes.
            for (n, _) in pattern_binds(&pat) {
                greens.remove(&n.to_string());
            }
            (&mut w.label, &mut w.body, Some((pat, e)))
        }
    };
    let writes = Writes { greens: &greens, macros };
    // Its label, given where it has none (once rewritten).
    let label = label_slot.as_ref().map_or_else(|| syn::parse_quote!('__jit_loop), |l| l.name.clone());
    let Some(mp) = body.stmts.iter().position(is_merge_point) else { return false };
    let rest: Vec<syn::Stmt> = body.stmts[mp + 1..].to_vec();
    // The turn's steps, and where it may jump.
    let flag = syn::Ident::new(FLAG, proc_macro2::Span::call_site());
    let (body_stmts, tail): (Vec<syn::Stmt>, Vec<syn::Stmt>) = if rotated {
        // `'b: { B } if !(c) { break 'l; }`
        let [syn::Stmt::Expr(syn::Expr::Block(b), _), cond] = &rest[..] else { return false };
        if b.label.is_none() {
            return false;
        }
        (b.block.stmts.clone(), vec![cond.clone()])
    } else {
        (rest, vec![])
    };
    if binds_green(&body_stmts, &greens) || binds_green(&tail, &greens) {
        return false;
    }
    // A `while let`'s pattern binds afresh at each turn of the inner loop:
    // its bindings are carried from one turn to the next in `__jit_turn`.
    let (carry, rebind, next) = match &while_let {
        None => (None, None, None),
        Some((pat, e)) => {
            let binds = pattern_binds(pat);
            let names = binds.iter().map(|(n, _)| n);
            let lets = binds.iter().map(|(n, m)| if *m { quote::quote!(mut #n) } else { quote::quote!(#n) });
            let names2 = names.clone();
            let carry: syn::Stmt = syn::parse_quote!(#[allow(unused_mut)] let mut __jit_turn = (#(#names,)*););
            let rebind: syn::Stmt = syn::parse_quote!(let (#(#lets,)*) = __jit_turn;);
            let next: syn::Stmt = syn::parse_quote! {
                #[allow(unreachable_patterns)]
                match #e {
                    #pat => __jit_turn = (#(#names2,)*),
                    _ => break #label,
                }
            };
            (Some(carry), Some(rebind), Some(next))
        }
    };
    // Without a step at the top level, each step sets a second flag: a turn
    // steps forward where it stepped and wrote nothing else.
    let top_step = body_stmts.iter().any(|s| writes.is_step(s));
    let stepped = syn::Ident::new(STEPPED, proc_macro2::Span::call_site());
    let mut steps = MarkSteps { w: &writes, flag: &stepped, found: false };
    let mut marked = body_stmts;
    if !top_step {
        for s in &mut marked {
            syn::visit_mut::VisitMut::visit_stmt_mut(&mut steps, s);
        }
        if !steps.found {
            return false;
        }
    }
    for s in &mut marked {
        if let syn::Stmt::Expr(e, semi @ None) = s {
            if !matches!(e, syn::Expr::If(_) | syn::Expr::Match(_) | syn::Expr::Block(_)) {
                *semi = Some(Default::default());
            }
        }
    }
    mark_block_stmts(&mut marked, &writes, &flag);
    let inner: Vec<syn::Stmt> = if rotated {
        // The rotated `while`'s `continue`s are `break 'b`: they may skip the step.
        let syn::Stmt::Expr(syn::Expr::Block(b), _) = &body.stmts[mp + 1] else { return false };
        let b_label = b.label.clone();
        let mut blk = syn::ExprBlock { attrs: b.attrs.clone(), label: b_label.clone(), block: b.block.clone() };
        blk.block.stmts = marked;
        if let Some(l) = &b_label {
            let mut j = FlagJumps { to: &l.name, flag: &flag };
            for s in &mut blk.block.stmts {
                syn::visit_mut::VisitMut::visit_stmt_mut(&mut j, s);
            }
        }
        let mut v = vec![syn::Stmt::Expr(syn::Expr::Block(blk), None)];
        v.extend(tail);
        v
    } else {
        let cont: syn::Expr = syn::parse_quote!(continue #label);
        crate::unhooked::retarget(&marked, &label, cont, &label, true)
    };
    let mut stmts: Vec<syn::Stmt> = body.stmts[..=mp].to_vec();
    stmts.extend(carry);
    stmts.push(if top_step {
        syn::parse_quote!(
            loop {
                #rebind
                #[allow(unused_mut)]
                let mut #flag = false;
                #(#inner)*
                if #flag { continue #label; }
                #next
            }
        )
    } else {
        syn::parse_quote!(
            loop {
                #rebind
                #[allow(unused_mut)]
                let mut #flag = false;
                let mut #stepped = false;
                #(#inner)*
                if #flag || !#stepped { continue #label; }
                #next
            }
        )
    });
    body.stmts = stmts;
    label_slot.get_or_insert_with(|| syn::Label { name: label, colon_token: Default::default() });
    true
}

/// The loop of the merge point: a `loop`, or a `while let` (the last
/// statement of the block `outline::enter_while_let` makes of it).
enum TurnLoop<'a> {
    Loop(&'a mut syn::ExprLoop),
    WhileLet(&'a mut syn::ExprWhile),
}

/// The loop of the merge point.
fn loop_of(s: &mut syn::Stmt, rotated: bool) -> Option<TurnLoop<'_>> {
    let e: &mut syn::Expr = match s {
        syn::Stmt::Expr(e, _) => e,
        syn::Stmt::Local(syn::Local { init: Some(syn::LocalInit { expr, diverge: None, .. }), .. }) => expr,
        _ => return None,
    };
    let e = if rotated {
        // `if __jit_resumed || (c) { 'l: loop { .. } }`
        let syn::Expr::If(i) = e else { return None };
        if crate::unhooked::has_let(&i.cond) {
            return None;
        }
        match i.then_branch.stmts.first_mut() {
            Some(syn::Stmt::Expr(l, _)) => l,
            _ => return None,
        }
    } else {
        e
    };
    match e {
        syn::Expr::Loop(l) => Some(TurnLoop::Loop(l)),
        // `'w: { ..; while let P = E { mp; B } }`
        syn::Expr::Block(b) if !rotated => match b.block.stmts.last_mut() {
            Some(syn::Stmt::Expr(syn::Expr::While(w), _)) if matches!(&*w.cond, syn::Expr::Let(_)) => {
                Some(TurnLoop::WhileLet(w))
            }
            _ => None,
        },
        _ => None,
    }
}

fn is_merge_point(s: &syn::Stmt) -> bool {
    match s {
        syn::Stmt::Macro(m) => hint_annotator::is_merge_point(&m.mac),
        syn::Stmt::Expr(syn::Expr::Macro(m), _) => hint_annotator::is_merge_point(&m.mac),
        _ => false,
    }
}

/// What may write a green.
struct Writes<'a> {
    greens: &'a HashSet<String>,
    macros: &'a HashMap<String, TokenStream>,
}

impl Writes<'_> {
    /// `g += k;`, `k` an integer literal of at least 1, or a plain block
    /// with one at its top level (a split field's step, `{ __self_pc += 1;
    /// __self_cells.pc = __self_pc; }`: its statements all run, in order).
    fn is_step(&self, s: &syn::Stmt) -> bool {
        match s {
            syn::Stmt::Expr(syn::Expr::Block(b), _) if b.label.is_none() && b.attrs.is_empty() => {
                b.block.stmts.iter().any(|s| self.is_step(s))
            }
            syn::Stmt::Expr(e, _) => self.is_step_expr(e),
            _ => false,
        }
    }

    fn is_step_expr(&self, e: &syn::Expr) -> bool {
        let syn::Expr::Binary(b) = e else { return false };
        // An attribute (`#[cfg]`) may take the statement away.
        if !matches!(b.op, syn::BinOp::AddAssign(_)) || !b.attrs.is_empty() {
            return false;
        }
        let syn::Expr::Path(p) = &*b.left else { return false };
        let Some(g) = p.path.get_ident() else { return false };
        if !self.greens.contains(&g.to_string()) || p.qself.is_some() || !p.attrs.is_empty() {
            return false;
        }
        match &*b.right {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => {
                i.base10_parse::<u128>().is_ok_and(|k| k >= 1)
            }
            _ => false,
        }
    }

    /// Whether anything in `n` may write a green (a step does not).
    fn in_stmt(&self, s: &syn::Stmt) -> bool {
        let mut f = Finder { w: self, found: false };
        f.visit_stmt(s);
        f.found
    }

    fn in_expr(&self, e: &syn::Expr) -> bool {
        let mut f = Finder { w: self, found: false };
        f.visit_expr(e);
        f.found
    }

    fn names_green(&self, e: &syn::Expr) -> bool {
        let mut f = Names { greens: self.greens, found: false };
        f.visit_expr(e);
        f.found
    }

    /// Whether a place expression is rooted at a green.
    fn rooted_at_green(&self, e: &syn::Expr) -> bool {
        match e {
            syn::Expr::Path(p) => p.path.get_ident().is_some_and(|i| self.greens.contains(&i.to_string())),
            syn::Expr::Field(f) => self.rooted_at_green(&f.base),
            syn::Expr::Index(i) => self.rooted_at_green(&i.expr),
            syn::Expr::Paren(p) => self.rooted_at_green(&p.expr),
            syn::Expr::Unary(u) => self.rooted_at_green(&u.expr),
            _ => false,
        }
    }

    fn macro_writes(&self, m: &syn::Macro) -> bool {
        let name = m.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
        if self.names_green_through(&name) || self.calls_writing_macro(m.tokens.clone()) {
            return true;
        }
        if !names_green_tokens(m.tokens.clone(), self.greens) {
            return false;
        }
        // Std macros of expressions write only what those expressions write.
        !crate::split::EXPR_MACROS.contains(&name.as_str()) || writes_in_tokens(m.tokens.clone(), self.greens)
    }
}

impl Writes<'_> {
    /// Whether the macro `name` of the body or the module names a green in
    /// its transcribers.
    fn names_green_through(&self, name: &str) -> bool {
        self.macros.get(name).is_some_and(|t| names_green_tokens(t.clone(), self.greens))
    }

    /// Whether tokens (a macro's arguments) call such a macro (`m!`).
    fn calls_writing_macro(&self, t: TokenStream) -> bool {
        let v: Vec<TokenTree> = t.into_iter().collect();
        v.iter().enumerate().any(|(i, t)| match t {
            TokenTree::Group(g) => self.calls_writing_macro(g.stream()),
            TokenTree::Ident(id) => {
                matches!(v.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == '!')
                    && self.names_green_through(&id.to_string())
            }
            _ => false,
        })
    }
}

struct Finder<'w, 'a> {
    w: &'w Writes<'a>,
    found: bool,
}

impl<'ast> Visit<'ast> for Finder<'_, '_> {
    fn visit_expr(&mut self, e: &'ast syn::Expr) {
        if self.found {
            return;
        }
        match e {
            syn::Expr::Assign(a) if self.w.names_green(&a.left) => self.found = true,
            syn::Expr::Binary(b) if hint_annotator::is_compound_assign_op(&b.op) && self.w.names_green(&b.left) => {
                if !self.w.is_step_expr(e) {
                    self.found = true;
                }
            }
            syn::Expr::Reference(r) if r.mutability.is_some() && self.w.rooted_at_green(&r.expr) => self.found = true,
            syn::Expr::RawAddr(r)
                if matches!(r.mutability, syn::PointerMutability::Mut(_)) && self.w.rooted_at_green(&r.expr) =>
            {
                self.found = true
            }
            syn::Expr::MethodCall(m) if self.w.rooted_at_green(&m.receiver) => self.found = true,
            syn::Expr::Macro(m) if self.w.macro_writes(&m.mac) => self.found = true,
            _ => visit::visit_expr(self, e),
        }
    }

    fn visit_stmt_macro(&mut self, m: &'ast syn::StmtMacro) {
        if self.w.macro_writes(&m.mac) {
            self.found = true;
        }
    }

    fn visit_item(&mut self, _: &'ast syn::Item) {}
}

struct Names<'a> {
    greens: &'a HashSet<String>,
    found: bool,
}

impl<'ast> Visit<'ast> for Names<'_> {
    fn visit_ident(&mut self, i: &'ast syn::Ident) {
        if self.greens.contains(&i.to_string()) {
            self.found = true;
        }
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        if names_green_tokens(m.tokens.clone(), self.greens) {
            self.found = true;
        }
    }
}

fn names_green_tokens(t: TokenStream, greens: &HashSet<String>) -> bool {
    t.into_iter().any(|t| match t {
        TokenTree::Ident(i) => greens.contains(&i.to_string()),
        TokenTree::Group(g) => names_green_tokens(g.stream(), greens),
        _ => false,
    })
}

/// Whether tokens (a reading macro's arguments) may write a green: the
/// green followed by `=`, a compound assignment or `.`, or after `mut`.
fn writes_in_tokens(t: TokenStream, greens: &HashSet<String>) -> bool {
    let v: Vec<TokenTree> = t.into_iter().collect();
    let punct = |i: usize| match v.get(i) {
        Some(TokenTree::Punct(p)) => Some((p.as_char(), p.spacing())),
        _ => None,
    };
    for (i, t) in v.iter().enumerate() {
        match t {
            TokenTree::Group(g) => {
                if writes_in_tokens(g.stream(), greens) {
                    return true;
                }
            }
            TokenTree::Ident(id) if greens.contains(&id.to_string()) => {
                if i > 0 && matches!(&v[i - 1], TokenTree::Ident(m) if m == "mut") {
                    return true;
                }
                match punct(i + 1) {
                    Some(('=', Spacing::Alone)) | Some(('.', _)) => return true,
                    Some((c, Spacing::Joint)) if "+-*/%^&|".contains(c) => {
                        if matches!(punct(i + 2), Some(('=', _))) {
                            return true;
                        }
                    }
                    Some((c @ ('<' | '>'), Spacing::Joint)) => {
                        if matches!(punct(i + 2), Some((d, _)) if d == c) {
                            return true;
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    false
}

/// Whether a pattern among `stmts` binds a green's name again.
fn binds_green(stmts: &[syn::Stmt], greens: &HashSet<String>) -> bool {
    struct Binds<'a> {
        greens: &'a HashSet<String>,
        found: bool,
    }
    impl<'ast> Visit<'ast> for Binds<'_> {
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            if self.greens.contains(&p.ident.to_string()) {
                self.found = true;
            }
            visit::visit_pat_ident(self, p);
        }
        fn visit_item(&mut self, _: &'ast syn::Item) {}
    }
    let mut b = Binds { greens, found: false };
    for s in stmts {
        b.visit_stmt(s);
    }
    b.found
}

/// Sets the flag before each statement among `stmts` that may write a
/// green, or inside it where its blocks or match arms hold all such writes.
fn mark_block_stmts(stmts: &mut Vec<syn::Stmt>, w: &Writes, flag: &syn::Ident) {
    let mut out = Vec::with_capacity(stmts.len());
    for mut s in std::mem::take(stmts) {
        if w.in_stmt(&s) {
            let inside = match &mut s {
                syn::Stmt::Expr(e, _) => mark_expr(e, w, flag),
                _ => false,
            };
            if !inside {
                out.push(syn::parse_quote!(#flag = true;));
            }
        }
        out.push(s);
    }
    *stmts = out;
}

/// Marks the writes in `e` inside its blocks and arms; false where a write
/// is in a part of `e` that is not one of them (its condition, scrutinee).
fn mark_expr(e: &mut syn::Expr, w: &Writes, flag: &syn::Ident) -> bool {
    match e {
        syn::Expr::Block(b) if b.label.is_none() => {
            mark_block_stmts(&mut b.block.stmts, w, flag);
            true
        }
        syn::Expr::If(i) => {
            if w.in_expr(&i.cond) {
                return false;
            }
            mark_block_stmts(&mut i.then_branch.stmts, w, flag);
            if let Some((_, els)) = &mut i.else_branch {
                if w.in_expr(els) && !mark_expr(els, w, flag) {
                    let inner = els.clone();
                    **els = syn::parse_quote!({ #flag = true; #inner });
                }
            }
            true
        }
        syn::Expr::Match(m) => {
            let guard_writes = |p: &syn::Pat| matches!(p, syn::Pat::Guard(g) if w.in_expr(&g.guard));
            if w.in_expr(&m.expr) || m.arms.iter().any(|a| guard_writes(&a.pat)) {
                return false;
            }
            for a in &mut m.arms {
                if w.in_expr(&a.body) && !mark_expr(&mut a.body, w, flag) {
                    let body = a.body.clone();
                    *a.body = syn::parse_quote!({ #flag = true; #body });
                    a.comma.get_or_insert_with(Default::default);
                }
            }
            true
        }
        _ => false,
    }
}

/// Sets the flag before each jump to the label `to` (a rotated `while`'s
/// `continue`), outside closures nested in the body.
struct FlagJumps<'a> {
    to: &'a syn::Lifetime,
    flag: &'a syn::Ident,
}

impl syn::visit_mut::VisitMut for FlagJumps<'_> {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        match e {
            syn::Expr::Break(b) if b.label.as_ref().is_some_and(|l| l.ident == self.to.ident) => {
                let flag = self.flag;
                let jump = b.to_token_stream();
                *e = syn::parse_quote!({ #flag = true; #jump });
            }
            syn::Expr::Closure(_) | syn::Expr::Async(_) => {}
            _ => syn::visit_mut::visit_expr_mut(self, e),
        }
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};

    /// Rewrites the loop of `src`'s function (a `while` given as `outline`
    /// rotates it), the position's greens `greens`.
    fn check(src: &str, greens: &[&str], want: Expect) {
        let mut f: syn::ItemFn = syn::parse_str(src).unwrap();
        let before = f.clone();
        let i = f.block.stmts.iter().position(|s| !matches!(s, syn::Stmt::Item(_) | syn::Stmt::Local(_))).unwrap();
        let rotated = matches!(&f.block.stmts[i], syn::Stmt::Expr(syn::Expr::If(_), _));
        let greens: Vec<String> = greens.iter().map(|g| g.to_string()).collect();
        let (prefix, suffix) = f.block.stmts.split_at_mut(i);
        let got = if super::skip_forward_turns(suffix, prefix, &f.sig, &greens, &[], rotated) {
            prettyplease::unparse(&syn::parse_quote!(#f))
        } else {
            assert!(f == before, "left alone, but changed");
            "unchanged\n".to_string()
        };
        want.assert_eq(&got);
    }

    #[test]
    fn only_arms_that_may_jump_go_back_to_the_test() {
        check(
            "fn run(code: &[u8]) -> i64 { let mut pc = 0; let mut acc = 0; loop { hint!(global_merge_point); \
             if pc >= code.len() { break acc; } let op = hint!(code[pc], concrete); pc += 1; \
             if op == 0 { acc += 1; } else if op == 1 { let n = code[pc]; pc += 1; acc += n as i64; } \
             else if op == 2 { if acc > 0 { pc = code[pc] as usize; } else { pc += 1; } } \
             else { match op { 3 => pc -= 2, 4 => continue, _ => acc = 0 } } } }",
            &["pc"],
            expect![[r#"
                fn run(code: &[u8]) -> i64 {
                    let mut pc = 0;
                    let mut acc = 0;
                    '__jit_loop: loop {
                        hint!(global_merge_point);
                        loop {
                            #[allow(unused_mut)]
                            let mut __jit_jumped = false;
                            if pc >= code.len() {
                                break '__jit_loop acc;
                            }
                            let op = hint!(code[pc], concrete);
                            pc += 1;
                            if op == 0 {
                                acc += 1;
                            } else if op == 1 {
                                let n = code[pc];
                                pc += 1;
                                acc += n as i64;
                            } else if op == 2 {
                                if acc > 0 {
                                    __jit_jumped = true;
                                    pc = code[pc] as usize;
                                } else {
                                    pc += 1;
                                }
                            } else {
                                match op {
                                    3 => {
                                        __jit_jumped = true;
                                        pc -= 2;
                                    }
                                    4 => continue '__jit_loop,
                                    _ => acc = 0,
                                }
                            }
                            if __jit_jumped {
                                continue '__jit_loop;
                            }
                        }
                    }
                }
            "#]],
        );
    }

    #[test]
    fn writes_through_macros_references_and_methods_set_the_flag() {
        check(
            "fn run(code: &[u8], out: &mut Vec<u8>) { let mut pc = 0; \
             macro_rules! skip { () => { pc += 2 }; } macro_rules! byte { ($c:expr) => { $c[0] }; } \
             if __jit_resumed || (pc < code.len()) { '__jit_loop: loop { hint!(global_merge_point); \
             '__jit_b: { pc += 1; \
             if code[pc] == 0 { skip!(); } else if code[pc] == 1 { seek(&mut pc); } \
             else if code[pc] == 2 { writeln!(out, \"{}\", pc).unwrap(); } \
             else if code[pc] == 3 { let _ = byte!(code); } else if code[pc] == 4 { pc.add_assign(1); } \
             else if code[pc] == 5 { break '__jit_b; } else if code[pc] == 6 { println!(\"{}\", skip!()); } \
             else if code[pc] == 7 { macro_rules! back { () => { pc = 0 }; } back!(); } else { dbg!(pc); } } \
             if !(pc < code.len()) { break '__jit_loop; } } } }",
            &["pc"],
            expect![[r#"
                fn run(code: &[u8], out: &mut Vec<u8>) {
                    let mut pc = 0;
                    macro_rules! skip {
                        () => {
                            pc += 2
                        };
                    }
                    macro_rules! byte {
                        ($c:expr) => {
                            $c [0]
                        };
                    }
                    if __jit_resumed || (pc < code.len()) {
                        '__jit_loop: loop {
                            hint!(global_merge_point);
                            loop {
                                #[allow(unused_mut)]
                                let mut __jit_jumped = false;
                                '__jit_b: {
                                    pc += 1;
                                    if code[pc] == 0 {
                                        __jit_jumped = true;
                                        skip!();
                                    } else if code[pc] == 1 {
                                        __jit_jumped = true;
                                        seek(&mut pc);
                                    } else if code[pc] == 2 {
                                        writeln!(out, "{}", pc).unwrap();
                                    } else if code[pc] == 3 {
                                        let _ = byte!(code);
                                    } else if code[pc] == 4 {
                                        __jit_jumped = true;
                                        pc.add_assign(1);
                                    } else if code[pc] == 5 {
                                        {
                                            __jit_jumped = true;
                                            break '__jit_b;
                                        };
                                    } else if code[pc] == 6 {
                                        __jit_jumped = true;
                                        println!("{}", skip!());
                                    } else if code[pc] == 7 {
                                        macro_rules! back {
                                            () => {
                                                pc = 0
                                            };
                                        }
                                        __jit_jumped = true;
                                        back!();
                                    } else {
                                        __jit_jumped = true;
                                        dbg!(pc);
                                    }
                                }
                                if !(pc < code.len()) {
                                    break '__jit_loop;
                                }
                                if __jit_jumped {
                                    continue '__jit_loop;
                                }
                            }
                        }
                    }
                }
            "#]],
        );
    }

    /// A method portal's field, split out of `self`: its step is a block
    /// that also stores the new value into the field's cell.
    #[test]
    fn a_split_fields_step_is_a_block_with_its_cells_store() {
        check(
            "fn run(__self_cells: &mut Cells, code: &[u8], __self_pc_at_entry: usize) -> u8 { \
             let mut __self_pc = __self_pc_at_entry; loop { hint!(global_merge_point); \
             let op = code[hint!(__self_pc, concrete)]; { __self_pc += 1; __self_cells.pc = __self_pc; }; \
             match op { 0 => { __self_pc = code[__self_pc] as usize; __self_cells.pc = __self_pc; } \
             1 => { let v = { { __self_pc += 2; __self_cells.pc = __self_pc; }; 7 }; } _ => return op } } }",
            &["__self_pc"],
            expect![[r#"
                fn run(__self_cells: &mut Cells, code: &[u8], __self_pc_at_entry: usize) -> u8 {
                    let mut __self_pc = __self_pc_at_entry;
                    '__jit_loop: loop {
                        hint!(global_merge_point);
                        loop {
                            #[allow(unused_mut)]
                            let mut __jit_jumped = false;
                            let op = code[hint!(__self_pc, concrete)];
                            {
                                __self_pc += 1;
                                __self_cells.pc = __self_pc;
                            };
                            match op {
                                0 => {
                                    __jit_jumped = true;
                                    __self_pc = code[__self_pc] as usize;
                                    __self_cells.pc = __self_pc;
                                }
                                1 => {
                                    let v = {
                                        {
                                            __self_pc += 2;
                                            __self_cells.pc = __self_pc;
                                        };
                                        7
                                    };
                                }
                                _ => return op,
                            }
                            if __jit_jumped {
                                continue '__jit_loop;
                            }
                        }
                    }
                }
            "#]],
        );
    }

    #[test]
    fn steps_inside_the_arms_of_a_turn_set_a_flag_of_their_own() {
        // No step at the body's top level: a turn steps forward where it
        // stepped (in a branch) and wrote nothing else.
        let nested = "fn run(code: &[u8]) { let mut pc = 0; loop { hint!(global_merge_point); \
                       if code[pc] == 0 { pc += 1; } else { pc = 0; } } }";
        check(
            nested,
            &["pc"],
            expect![[r#"
                fn run(code: &[u8]) {
                    let mut pc = 0;
                    '__jit_loop: loop {
                        hint!(global_merge_point);
                        loop {
                            #[allow(unused_mut)]
                            let mut __jit_jumped = false;
                            let mut __jit_stepped = false;
                            if code[pc] == 0 {
                                pc += 1;
                                __jit_stepped = true;
                            } else {
                                __jit_jumped = true;
                                pc = 0;
                            }
                            if __jit_jumped || !__jit_stepped {
                                continue '__jit_loop;
                            }
                        }
                    }
                }
            "#]],
        );
        // An arm that is a step; one whose block steps; a closure's step
        // is no step of the turn.
        let arms = "fn run(code: &[u8]) { let mut pc = 0; loop { hint!(global_merge_point); \
                    match code[pc] { 0 => pc += 1, 1 => { let f = |x: usize| { let mut y = x; y += 1; y }; pc += 2 } \
                    2 => { let _ = || { pc += 1; }; } _ => pc = 0 } } }";
        check(
            arms,
            &["pc"],
            expect![[r#"
            fn run(code: &[u8]) {
                let mut pc = 0;
                '__jit_loop: loop {
                    hint!(global_merge_point);
                    loop {
                        #[allow(unused_mut)]
                        let mut __jit_jumped = false;
                        let mut __jit_stepped = false;
                        match code[pc] {
                            0 => {
                                pc += 1;
                                __jit_stepped = true;
                            }
                            1 => {
                                let f = |x: usize| {
                                    let mut y = x;
                                    y += 1;
                                    y
                                };
                                pc += 2;
                                __jit_stepped = true;
                            }
                            2 => {
                                let _ = || {
                                    pc += 1;
                                };
                            }
                            _ => {
                                __jit_jumped = true;
                                pc = 0;
                            }
                        }
                        if __jit_jumped || !__jit_stepped {
                            continue '__jit_loop;
                        }
                    }
                }
            }
        "#]],
        );
    }

    #[test]
    fn a_while_let_carries_its_bindings_from_turn_to_turn() {
        // As `outline::enter_while_let` leaves it: the peeled turn, then
        // the loop. The pattern's binding is a green of the position, and
        // recomputed at each turn.
        check(
            "fn run(code: &[u8]) -> i64 { let mut pc = 0; let mut acc = 0; '__jit_w: { \
             if let Some((op,)) = __jit_resume { '__jit_b: { pc += 1; } } \
             while let Some(&op) = code.get(pc) { hint!(global_merge_point); \
             if op == 0 { pc += 1; } else if op == 1 { acc += 1; pc += 1; } else if acc > 9 { break; } \
             else { pc = 0; continue; } } } acc }",
            &["pc", "op"],
            expect![[r#"
                fn run(code: &[u8]) -> i64 {
                    let mut pc = 0;
                    let mut acc = 0;
                    '__jit_w: {
                        if let Some((op,)) = __jit_resume {
                            '__jit_b: {
                                pc += 1;
                            }
                        }
                        '__jit_loop: while let Some(&op) = code.get(pc) {
                            hint!(global_merge_point);
                            #[allow(unused_mut)]
                            let mut __jit_turn = (op,);
                            loop {
                                let (op,) = __jit_turn;
                                #[allow(unused_mut)]
                                let mut __jit_jumped = false;
                                let mut __jit_stepped = false;
                                if op == 0 {
                                    pc += 1;
                                    __jit_stepped = true;
                                } else if op == 1 {
                                    acc += 1;
                                    pc += 1;
                                    __jit_stepped = true;
                                } else if acc > 9 {
                                    break '__jit_loop;
                                } else {
                                    __jit_jumped = true;
                                    pc = 0;
                                    continue '__jit_loop;
                                }
                                if __jit_jumped || !__jit_stepped {
                                    continue '__jit_loop;
                                }
                                #[allow(unreachable_patterns)]
                                match code.get(pc) {
                                    Some(&op) => __jit_turn = (op,),
                                    _ => break '__jit_loop,
                                }
                            }
                        }
                    }
                    acc
                }
            "#]],
        );
    }

    #[test]
    fn a_body_without_a_step_or_binding_a_green_again_is_left_alone() {
        let no_step = "fn run(code: &[u8]) { let mut pc = 0; loop { hint!(global_merge_point); \
                       if code[pc] == 0 { pc = 2; } else { pc = 0; } } }";
        check(
            no_step,
            &["pc"],
            expect![[r#"
            unchanged
        "#]],
        );
        let shadowed = "fn run(code: &[u8]) { let mut pc = 0; loop { hint!(global_merge_point); pc += 1; \
                        if let Some(pc) = code.get(pc) { let mut pc = *pc; pc += 1; } } }";
        check(
            shadowed,
            &["pc"],
            expect![[r#"
            unchanged
        "#]],
        );
        let while_let = "fn run(code: &[u8]) { let mut pc = 0; \
                         if __jit_resumed || (let Some(op) = code.get(pc)) { '__jit_loop: loop { \
                         hint!(global_merge_point); '__jit_b: { pc += 1; } \
                         if !(let Some(op) = code.get(pc)) { break '__jit_loop; } } } }";
        check(
            while_let,
            &["pc"],
            expect![[r#"
            unchanged
        "#]],
        );
        let cfg = "fn run(code: &[u8]) { let mut pc = 0; loop { hint!(global_merge_point); \
                   #[cfg(any())] pc += 1; { #[cfg(any())] { pc += 1; } } if code[pc] == 0 { pc = 1; } } }";
        check(
            cfg,
            &["pc"],
            expect![[r#"
                fn run(code: &[u8]) {
                    let mut pc = 0;
                    '__jit_loop: loop {
                        hint!(global_merge_point);
                        loop {
                            #[allow(unused_mut)]
                            let mut __jit_jumped = false;
                            let mut __jit_stepped = false;
                            __jit_jumped = true;
                            #[cfg(any())] pc += 1;
                            {
                                #[cfg(any())]
                                {
                                    pc += 1;
                                    __jit_stepped = true;
                                }
                            }
                            if code[pc] == 0 {
                                __jit_jumped = true;
                                pc = 1;
                            }
                            if __jit_jumped || !__jit_stepped {
                                continue '__jit_loop;
                            }
                        }
                    }
                }
            "#]],
        );
        let field = "fn run(m: &mut M) { loop { hint!(global_merge_point); m.pc += 1; } }";
        check(
            field,
            &["m.pc"],
            expect![[r#"
            unchanged
        "#]],
        );
    }
}

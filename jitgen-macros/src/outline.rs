//! A portal's merge point loop outlined from its hook: the loop, and the
//! rest of the portal's body after it, run in a closure called out of line,
//! and the hook is called outside it.
//!
//! A call of the hook inside the loop's function costs the interpreter
//! about 10% of its speed even where it never runs, whatever the call's
//! arguments (PERFORMANCE.md); the sampler's test costs 1-3%. So the closure
//! keeps only the test, and where a visit goes to the hook it returns the
//! loop's state. The portal
//!
//! ```text
//! fn run(params) -> R { P; L; T }      L: loop { hint!(global_merge_point); B }
//! ```
//!
//! (the loop a statement of the body, `let x = L;` too, or of a block that
//! `let x = { .. };` binds, which is flattened first) becomes
//!
//! ```text
//! fn run(params) -> R {
//!     P
//!     #[inline(never)] fn __jit_outlined<A1, .., An, R, F>(c1: A1, .., cn: An, f: F) { f(c1, .., cn) }
//!     let mut __jit_carried = (c1, .., cn);
//!     loop {
//!         let (c1, .., cn) = __jit_carried;
//!         let __jit_flow = __jit_outlined::<_, .., R, _>(c1, .., cn, |c1, .., cn| {
//!             let (mut c1, .., mut cn) = (c1, .., cn);
//!             loop { if VISITS { return SAMPLE((c1, .., cn)); } B }
//!             DONE(T)
//!         });
//!         let (mut c1, .., mut cn) = match __jit_flow { Done(r) => return r, Sample(s) => s };
//!         HOOK
//!         __jit_carried = (c1, .., cn);
//!     }
//! }
//! ```
//!
//! The carried locals `c1, .., cn` are the parameters and locals bound by
//! `P` that the closure mentions: moved in and out, so that the loop keeps
//! them in registers as the interpreter's own function does, and each a
//! parameter of the helper, so that a reference among them is known not to
//! alias as the portal's own parameters are. The closure binds them again
//! as its own locals: a value of a large type (a frame struct) is passed by
//! address, and bound as a parameter the loop reached it through that
//! address at every use, where the interpreter's own function keeps it in
//! its frame. One that a later local of `P`
//! was computed from (`let n = v.len();`) stays where it is and the closure
//! borrows it, unless it is a shared reference or a scalar.
//!
//! Entering the closure again starts the loop at its head, which is the
//! merge point; the sampler passes over that visit (`LoopSampler::resumed`),
//! which the hook has seen. A `while c { mp; B }` is entered as
//! `if __jit_resumed || (c) { 'l: loop { mp; 'b: { B } if !(c) { break 'l; } } }`,
//! so that `c` is not tested again for the turn under way.
//!
//! In the closure, `return e` becomes `return DONE(e)`: in the code, in the
//! arguments of macro calls, and in the transcribers of the `macro_rules!`
//! defined in `P` or in the module (those that `return`), defined again
//! inside the closure so that they name the carried locals. Its value `T`
//! becomes `DONE(T)`. A portal returning a `Result` or an `Option` keeps
//! its `?`s (see the runtime's `Outlined`); one returning another type is
//! outlined only where its body has no `?`. Where the hook gives up
//! (`Sampler::gives_up`), the closure is entered with `__jit_hooked` off: a
//! visit the clock makes due lowers the flag until the next tick
//! (`LoopSampler::idle`).
//!
//! Not outlined (the hook stays in the loop, see `unhooked`): a merge point
//! that is not the first statement of its loop or whose loop is not a
//! statement of the portal's body, a `while let` whose body is larger than
//! `unhooked::MAX_BODY_TOKENS` (its turn under way is copied) or whose
//! condition reads a local that is neither a reference nor a scalar, an `async` portal or one
//! returning `impl Trait`, a local of `P` bound without a value that the
//! closure mentions.

use std::collections::{HashMap, HashSet};

use proc_macro2::{Delimiter, Group, Ident, TokenStream, TokenTree};
use quote::{format_ident, quote, ToTokens};
use syn::visit_mut::{self, VisitMut};

/// What the portal does at its merge point, and outside its closure.
pub struct Hook {
    /// A `bool` expression: whether this visit goes to the hook (the
    /// sampler's test, then its cold path).
    pub visits: TokenStream,
    /// What runs outside the closure where a visit goes to the hook, with
    /// the carried locals bound again; it sets `__jit_unhooked` where the
    /// hook gives up, and `__jit_at_head` where a hand-over parked at the
    /// loop's head.
    pub runs: TokenStream,
    /// Whether a hand-over parks at the head of the loop (`park`): only a
    /// `while let` is entered there again, so any other loop is not
    /// outlined with it (the caller tries again without).
    pub parks_at_head: bool,
    /// The green variables of the merge point's position, by name: where
    /// they are plain locals, turns that only step one forward skip
    /// `visits` (`forward`).
    pub greens: Vec<String>,
}

/// The module's items the outlined closure may need: its `macro_rules!`
/// (defined again in the closure where they `return`) and its type
/// aliases (of a `Result` or an `Option`).
#[derive(Default)]
pub struct ModuleContext {
    pub macros: Vec<syn::ItemMacro>,
    pub aliases: HashMap<String, syn::Type>,
}

impl ModuleContext {
    /// Reads `items`.
    pub fn of(items: &[syn::Item]) -> ModuleContext {
        let mut cx = ModuleContext::default();
        for i in items {
            match i {
                syn::Item::Macro(m) if m.ident.is_some() && m.mac.path.is_ident("macro_rules") => {
                    cx.macros.push(m.clone())
                }
                syn::Item::Type(t) => {
                    cx.aliases.insert(t.ident.to_string(), (*t.ty).clone());
                }
                _ => {}
            }
        }
        cx
    }
}

/// How the closure's value is made.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// Through the runtime's `Outlined` (a `Result` or an `Option`).
    Outlined,
    /// `Flow` itself (no `?` in the body).
    Plain,
}

/// Rewrites `item`'s body as the module doc says; where that does not
/// apply, why (and `item` unchanged).
pub fn outline(item: &mut syn::ItemFn, hook: &Hook, cx: &ModuleContext) -> Result<(), &'static str> {
    let sig = &item.sig;
    if sig.asyncness.is_some() || sig.constness.is_some() {
        return Err("an async or const function");
    }
    if sig.inputs.iter().any(|a| matches!(a, syn::FnArg::Receiver(_))) {
        return Err("a method");
    }
    let ret: syn::Type = match &sig.output {
        syn::ReturnType::Default => syn::parse_quote!(()),
        syn::ReturnType::Type(_, t) => (**t).clone(),
    };
    if idents(&ret.to_token_stream()).contains("impl") {
        return Err("it returns `impl Trait`");
    }
    let mut stmts = item.block.stmts.clone();
    while !stmts.iter().any(is_outlinable_loop) {
        if !flatten_one(&mut stmts) {
            break;
        }
    }
    let Some(k) = stmts.iter().position(is_outlinable_loop) else {
        return Err(
            "its merge point is not the first statement of a `loop`, `while` or `while let` of the function's body",
        );
    };
    let mut suffix: Vec<syn::Stmt> = stmts[k..].to_vec();
    let mode = if returns_outlined(&ret, cx) {
        Mode::Outlined
    } else if has_question_mark(&quote!(#(#suffix)*)) {
        return Err("a `?` in a function that does not return a `Result` or an `Option`");
    } else {
        Mode::Plain
    };
    let mut prefix: Vec<syn::Stmt> = stmts[..k].to_vec();
    // Items are seen from the whole body: they stay outside.
    suffix.retain(|s| match s {
        s if is_macro_rules(s) => true,
        syn::Stmt::Item(_) => {
            prefix.push(s.clone());
            false
        }
        _ => true,
    });
    let while_let = enter_while_let(&mut suffix[0])?;
    if hook.parks_at_head && while_let.is_none() {
        return Err("its hand-overs park at the head of a loop that is not a `while let`");
    }
    let rotated = rotate_while(&mut suffix[0]);
    crate::forward::skip_forward_turns(&mut suffix, &prefix, sig, &hook.greens, &cx.macros, rotated);

    let macros = macros_again(sig, &mut prefix, &suffix, cx)?;

    // The carried locals.
    let mentioned = {
        let mut m = idents(&quote!(#(#suffix)* #(#macros)*));
        m.extend(idents(&hook.visits));
        m
    };
    let bindings = bindings(sig, &prefix);
    let carried = carried(&bindings, &mentioned)?;
    let mut c: Vec<Ident> = carried.iter().map(|b| b.name.clone()).collect();
    // A `while let`'s bindings go out with the state and come back as
    // `__jit_resume`: they may borrow only what is moved with them.
    let mut sampled: Vec<TokenStream> = c.iter().map(|c| quote!(#c)).collect();
    let mut outer: Vec<TokenStream> = c.iter().map(|c| quote!(mut #c)).collect();
    let mut again: Vec<TokenStream> = sampled.clone();
    let mut first: Vec<TokenStream> = sampled.clone();
    if let Some(w) = &while_let {
        let borrows = bindings
            .iter()
            .any(|b| w.scrutinee.contains(&b.name.to_string()) && !carried.iter().any(|k| k.name == b.name && k.copy));
        if borrows {
            return Err("a `while let` whose condition reads a local that is not a reference or a scalar");
        }
        let names: Vec<&Ident> = w.binds.iter().map(|(n, _)| n).collect();
        sampled.push(quote!((#(#names,)*)));
        outer.push(quote!((#(mut #names,)*)));
        // Parked at the loop's head after a hand-over (`__jit_at_head`,
        // see `park::Park`): the turn is the interpreter's to begin.
        again.push(quote!(if ::core::mem::take(&mut __jit_at_head) {
            ::core::option::Option::None
        } else {
            ::core::option::Option::Some((#(#names,)*))
        }));
        first.push(quote!(::core::option::Option::None));
        c.push(format_ident!("__jit_resume"));
    }

    let done = |e: TokenStream| match mode {
        Mode::Outlined => quote!(<#ret as __rt::portal::Outlined<_>>::done(#e)),
        Mode::Plain => quote!(__rt::portal::Flow::Done(#e)),
    };
    let sample = match mode {
        Mode::Outlined => quote!(<#ret as __rt::portal::Outlined<_>>::sample((#(#sampled,)*))),
        Mode::Plain => quote!(__rt::portal::Flow::Sample((#(#sampled,)*))),
    };
    let mut returns = Returns { done: &done };
    for s in &mut suffix {
        returns.visit_stmt_mut(s);
    }
    let macros: Vec<syn::ItemMacro> = macros
        .into_iter()
        .map(|mut m| {
            m.mac.tokens = rewrite_transcribers(m.mac.tokens, &done);
            m
        })
        .collect();
    let visits = &hook.visits;
    MergePoint { at: syn::parse_quote!(if #visits { return #sample; }) }.visit_stmt_mut(&mut suffix[0]);
    match suffix.last_mut() {
        Some(syn::Stmt::Expr(e, None)) => {
            let d = done(quote!(#e));
            *e = syn::parse_quote!(#d);
        }
        _ if matches!(&ret, syn::Type::Tuple(t) if t.elems.is_empty()) => {
            let d = done(quote!(()));
            suffix.push(syn::Stmt::Expr(syn::parse_quote!(#d), None));
        }
        _ => {}
    }

    // The carried locals are the helper's parameters, each its own: a
    // reference among them is known not to alias (as the portal's own
    // parameters are), where a field of one tuple would not be.
    let tys: Vec<Ident> = (0..c.len()).map(|i| format_ident!("__A{}", i)).collect();
    let (helper_ret, call_body) = match mode {
        Mode::Outlined => (
            quote!(<__R as __rt::portal::Outlined<__S>>::Step),
            quote!(<__R as __rt::portal::Outlined<__S>>::resume(__jit_f(#(#c),*))),
        ),
        Mode::Plain => (quote!(__rt::portal::Flow<__R, __S>), quote!(__jit_f(#(#c),*))),
    };
    let bound = match mode {
        Mode::Outlined => quote!(__S, __R: __rt::portal::Outlined<__S>),
        Mode::Plain => quote!(__S, __R),
    };
    let infer = vec![quote!(_); c.len()];
    let runs = &hook.runs;
    let resumed_decl = rotated.then(|| quote!(let mut __jit_resumed = false;));
    let at_head_decl = while_let.is_some().then(|| quote!(#[allow(unused_mut)] let mut __jit_at_head = false;));
    let resumed_set = rotated.then(|| quote!(__jit_resumed = true;));
    let body: syn::Block = syn::parse_quote!({
        #(#prefix)*
        #[inline(never)]
        fn __jit_outlined<#(#tys,)* #bound, __F: ::core::ops::FnOnce(#(#tys),*) -> #helper_ret>(
            #(#c: #tys,)* __jit_f: __F,
        ) -> __rt::portal::Flow<__R, __S> {
            #call_body
        }
        let mut __jit_unhooked = false;
        #at_head_decl
        #resumed_decl
        let mut __jit_carried = (#(#first,)*);
        loop {
            let (#(#c,)*) = __jit_carried;
            #[allow(unreachable_code)]
            let __jit_flow = __jit_outlined::<#(#infer,)* _, #ret, _>(#(#c,)* |#(#c),*| {
                #[allow(unused_mut)]
                let (#(mut #c,)*) = (#(#c,)*);
                let __jit_hooked = !__jit_unhooked;
                #(#macros)*
                #(#suffix)*
            });
            #[allow(unused_mut)]
            let (#(#outer,)*) = match __jit_flow {
                __rt::portal::Flow::Done(__jit_r) => return __jit_r,
                __rt::portal::Flow::Sample(__jit_s) => __jit_s,
            };
            #runs
            #resumed_set
            __jit_carried = (#(#again,)*);
        }
    });
    item.block = Box::new(body);
    Ok(())
}

/// The macros defined again inside the closure: the body's own, and the
/// module's that `return` and that the rest of the body calls. Defined
/// again, a macro's identifiers meet the closure's locals: one that names
/// a local bound after the macro's own definition (a module's macro, any
/// local), which the original could not see, is not outlined.
fn macros_again(
    sig: &syn::Signature,
    prefix: &mut [syn::Stmt],
    suffix: &[syn::Stmt],
    cx: &ModuleContext,
) -> Result<Vec<syn::ItemMacro>, &'static str> {
    let called = called_macros(&quote!(#(#suffix)*));
    let mut bound: Vec<HashSet<String>> = vec![bindings(sig, &[]).iter().map(|b| b.name.to_string()).collect()];
    let mut local = vec![];
    for s in prefix.iter_mut() {
        match s {
            syn::Stmt::Local(l) => bound.push(pattern_names(&l.pat).iter().map(|n| n.to_string()).collect()),
            syn::Stmt::Item(syn::Item::Macro(m)) if m.ident.is_some() && m.mac.path.is_ident("macro_rules") => {
                local.push((bound.len(), m.clone()));
                // The closure calls its own copy.
                m.attrs.push(syn::parse_quote!(#[allow(unused_macros)]));
            }
            _ => {}
        }
    }
    let names_after = |from: usize| bound[from..].iter().flatten().cloned().collect::<HashSet<String>>();
    let mut again = vec![];
    for (at, m) in local {
        if !transcribed_idents(&m.mac.tokens).is_disjoint(&names_after(at)) {
            return Err("a `macro_rules!` naming a local bound after it");
        }
        again.push(m);
    }
    for m in &cx.macros {
        let name = m.ident.as_ref().map(|i| i.to_string()).unwrap_or_default();
        let ts = transcribed_idents(&m.mac.tokens);
        if !called.contains(&name) || !ts.contains("return") || again.iter().any(|l| l.ident == m.ident) {
            continue;
        }
        if !ts.is_disjoint(&names_after(0)) {
            return Err("a module's `macro_rules!` that returns and names a local of the portal");
        }
        again.push(m.clone());
    }
    Ok(again)
}

/// The bindings the closure carries: those it mentions (the latest of a
/// name), less those a carried local was computed from, unless moving them
/// leaves that as it was (see the module doc).
fn carried<'b>(bindings: &'b [Binding], mentioned: &HashSet<String>) -> Result<Vec<&'b Binding>, &'static str> {
    let mut carried: Vec<&Binding> = Vec::new();
    let mut seen = HashSet::new();
    for b in bindings.iter().rev() {
        if mentioned.contains(&b.name.to_string()) && seen.insert(b.name.to_string()) {
            if !b.init {
                return Err("a local bound without a value before the loop");
            }
            carried.push(b);
        }
    }
    let carried_names: HashSet<String> = carried.iter().map(|b| b.name.to_string()).collect();
    let borrowed: HashSet<String> = bindings
        .iter()
        .filter(|b| b.names_in_init.is_some() && b.bound_names.iter().any(|n| carried_names.contains(n)))
        .flat_map(|b| b.names_in_init.clone().unwrap_or_default())
        .collect();
    carried.retain(|b| b.copy || !borrowed.contains(&b.name.to_string()));
    carried.sort_by_key(|b| b.order);
    Ok(carried)
}

/// Flattens the first `let x = { s1; ..; sn; e };` of `stmts` whose block
/// holds the merge point into `s1; ..; sn; let x = e;`, where the names the
/// block's `let`s bind are not mentioned after it; whether one was.
fn flatten_one(stmts: &mut Vec<syn::Stmt>) -> bool {
    for k in 0..stmts.len() {
        let syn::Stmt::Local(l) = &stmts[k] else { continue };
        let Some(syn::LocalInit { expr, diverge: None, .. }) = &l.init else { continue };
        let syn::Expr::Block(b) = &**expr else { continue };
        if b.label.is_some() || !b.attrs.is_empty() || !hint_annotator::has_merge_point(&b.block) {
            continue;
        }
        let inner = &b.block.stmts;
        let after = idents(&{
            let rest = &stmts[k + 1..];
            quote!(#(#rest)*)
        });
        let binds = inner.iter().any(|s| match s {
            syn::Stmt::Local(l) => pattern_names(&l.pat).iter().any(|n| after.contains(&n.to_string())),
            _ => false,
        });
        if binds {
            return false;
        }
        let (body, tail): (Vec<syn::Stmt>, syn::Expr) = match inner.last() {
            Some(syn::Stmt::Expr(e, None)) => (inner[..inner.len() - 1].to_vec(), e.clone()),
            _ => (inner.clone(), syn::parse_quote!(())),
        };
        let mut l = l.clone();
        if let Some(init) = &mut l.init {
            init.expr = Box::new(tail);
        }
        stmts.splice(k..=k, body.into_iter().chain(std::iter::once(syn::Stmt::Local(l))));
        return true;
    }
    false
}

/// Whether `s` is a loop (or `let x = loop { .. };`) whose body starts
/// with the merge point, other than items, and that re-enters at its head.
fn is_outlinable_loop(s: &syn::Stmt) -> bool {
    let e = match s {
        syn::Stmt::Expr(e, _) => e,
        syn::Stmt::Local(syn::Local { init: Some(syn::LocalInit { expr, diverge: None, .. }), .. }) => {
            if !matches!(**expr, syn::Expr::Loop(_)) {
                return false;
            }
            expr
        }
        _ => return false,
    };
    let body = match e {
        syn::Expr::Loop(l) => &l.body,
        syn::Expr::While(w) if !crate::unhooked::has_let(&w.cond) => &w.body,
        syn::Expr::While(w) => match &*w.cond {
            syn::Expr::Let(l) if !binds_by_ref(&l.pat) => &w.body,
            _ => return false,
        },
        _ => return false,
    };
    crate::unhooked::split_at_merge_point(body).is_some()
}

/// Whether a pattern has a `ref` binding (which would borrow its
/// scrutinee's temporary).
fn binds_by_ref(p: &syn::Pat) -> bool {
    struct V(bool);
    impl<'ast> syn::visit::Visit<'ast> for V {
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            self.0 |= p.by_ref.is_some();
            syn::visit::visit_pat_ident(self, p);
        }
    }
    let mut v = V(false);
    syn::visit::Visit::visit_pat(&mut v, p);
    v.0
}

/// A `while let` as the loop is entered again: its pattern's bindings.
struct WhileLet {
    /// The names the pattern binds, with their `mut`.
    binds: Vec<(Ident, bool)>,
    /// The identifiers of its scrutinee.
    scrutinee: HashSet<String>,
}

/// Turns `while let P = E { mp; B }` into a loop that, entered again,
/// takes the bindings the hook saw (`__jit_resume`) instead of testing
/// `P = E` again for the turn under way: `'w: { if let Some((b..)) = resume
/// { 'b: { B } } while let P = E { mp; B } }`, the turn under way peeled and
/// the loop as written, whose bindings are computed at its head as the
/// plain interpreter's are. After a hand-over that parked at the loop's head
/// (`park`), `resume` is `None`: the loop tests its condition first. A body
/// larger than `unhooked::MAX_BODY_TOKENS` is not copied, and not outlined.
fn enter_while_let(s: &mut syn::Stmt) -> Result<Option<WhileLet>, &'static str> {
    let syn::Stmt::Expr(syn::Expr::While(w), _) = s else { return Ok(None) };
    let syn::Expr::Let(l) = &*w.cond else { return Ok(None) };
    let label = w.label.as_ref().map(|l| l.name.clone()).unwrap_or_else(|| lifetime("'__jit_loop"));
    let binds = crate::forward::pattern_binds(&l.pat);
    let lets = binds.iter().map(|(n, m)| if *m { quote!(mut #n) } else { quote!(#n) });
    let Some((items, rest)) = crate::unhooked::split_at_merge_point(&w.body) else { return Ok(None) };
    if crate::unhooked::token_count(quote!(#(#rest)*)) > crate::unhooked::MAX_BODY_TOKENS {
        return Err("a `while let` whose body is too large to copy");
    }
    let (b, entry) = (lifetime("'__jit_b"), lifetime("'__jit_w"));
    let scrutinee = idents(&l.expr.to_token_stream());
    let turn = crate::unhooked::retarget(&rest, &label, syn::parse_quote!(break #b), &entry, true);
    let whole = w.clone();
    let (pat, e) = (&l.pat, &l.expr);
    let names = binds.iter().map(|(n, _)| n);
    *s = syn::Stmt::Expr(
        syn::parse_quote!(#entry: {
            // Never runs: gives `__jit_resume` the type of the pattern's
            // bindings before the peeled turn matches on them.
            #[allow(unreachable_patterns)]
            if false {
                __jit_resume = match #e {
                    #pat => ::core::option::Option::Some((#(#names,)*)),
                    _ => ::core::option::Option::None,
                };
            }
            if let ::core::option::Option::Some((#(#lets,)*)) = __jit_resume {
                #b: { #(#items)* #(#turn)* }
            }
            #whole
        }),
        None,
    );
    Ok(Some(WhileLet { binds, scrutinee }))
}

/// Rotates a `while` statement as the module doc says; whether it was one.
fn rotate_while(s: &mut syn::Stmt) -> bool {
    let syn::Stmt::Expr(syn::Expr::While(w), _) = s else { return false };
    let label = w.label.as_ref().map(|l| l.name.clone()).unwrap_or_else(|| lifetime("'__jit_loop"));
    let b = lifetime("'__jit_b");
    let c = &w.cond;
    let Some((items, rest)) = crate::unhooked::split_at_merge_point(&w.body) else { return false };
    let mp = &w.body.stmts[items.len()];
    let body = crate::unhooked::retarget(&rest, &label, syn::parse_quote!(break #b), &label, true);
    *s = syn::Stmt::Expr(
        syn::parse_quote!(if __jit_resumed || (#c) {
            #label: loop {
                #(#items)*
                #mp
                #b: { #(#body)* }
                if !(#c) { break #label; }
            }
        }),
        None,
    );
    true
}

fn lifetime(name: &str) -> syn::Lifetime {
    syn::Lifetime::new(name, proc_macro2::Span::call_site())
}

fn is_macro_rules(s: &syn::Stmt) -> bool {
    matches!(s, syn::Stmt::Item(syn::Item::Macro(m)) if m.ident.is_some() && m.mac.path.is_ident("macro_rules"))
}

/// Whether `ret` is a `Result` or an `Option` (by its last segment, through
/// the module's aliases).
fn returns_outlined(ret: &syn::Type, cx: &ModuleContext) -> bool {
    let mut ty = ret;
    for _ in 0..8 {
        let syn::Type::Path(tp) = ty else { return false };
        let Some(last) = tp.path.segments.last() else { return false };
        let name = last.ident.to_string();
        if name == "Result" || name == "Option" {
            return true;
        }
        match cx.aliases.get(&name) {
            Some(t) if tp.path.segments.len() == 1 => ty = t,
            _ => return false,
        }
    }
    false
}

/// The identifiers a `macro_rules!`'s transcribers write themselves (not
/// its metavariables `$x`, nor its matchers).
fn transcribed_idents(ts: &TokenStream) -> HashSet<String> {
    fn go(ts: TokenStream, out: &mut HashSet<String>) {
        let mut after_dollar = false;
        for t in ts {
            match &t {
                TokenTree::Ident(i) if !after_dollar => {
                    out.insert(i.to_string());
                }
                TokenTree::Group(g) => go(g.stream(), out),
                _ => {}
            }
            after_dollar = matches!(&t, TokenTree::Punct(p) if p.as_char() == '$');
        }
    }
    let v: Vec<TokenTree> = ts.clone().into_iter().collect();
    let mut out = HashSet::new();
    for (i, t) in v.iter().enumerate() {
        let after_arrow = i >= 2
            && matches!(&v[i - 1], TokenTree::Punct(p) if p.as_char() == '>')
            && matches!(&v[i - 2], TokenTree::Punct(p) if p.as_char() == '=');
        if let TokenTree::Group(g) = t {
            if after_arrow {
                go(g.stream(), &mut out);
            }
        }
    }
    out
}

/// Every identifier in `ts`, at any depth.
pub(crate) fn idents(ts: &TokenStream) -> HashSet<String> {
    fn go(ts: TokenStream, out: &mut HashSet<String>) {
        for t in ts {
            match t {
                TokenTree::Ident(i) => {
                    out.insert(i.to_string());
                }
                TokenTree::Group(g) => go(g.stream(), out),
                _ => {}
            }
        }
    }
    let mut out = HashSet::new();
    go(ts.clone(), &mut out);
    out
}

fn has_question_mark(ts: &TokenStream) -> bool {
    ts.clone().into_iter().any(|t| match t {
        TokenTree::Punct(p) => p.as_char() == '?',
        TokenTree::Group(g) => has_question_mark(&g.stream()),
        _ => false,
    })
}

/// The names of macros called in `ts` (`name!`).
pub(crate) fn called_macros(ts: &TokenStream) -> HashSet<String> {
    fn go(ts: TokenStream, out: &mut HashSet<String>) {
        let v: Vec<TokenTree> = ts.into_iter().collect();
        for (i, t) in v.iter().enumerate() {
            match t {
                TokenTree::Ident(id) => {
                    if matches!(v.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == '!') {
                        out.insert(id.to_string());
                    }
                }
                TokenTree::Group(g) => go(g.stream(), out),
                _ => {}
            }
        }
    }
    let mut out = HashSet::new();
    go(ts.clone(), &mut out);
    out
}

/// A name bound before the loop.
struct Binding {
    name: Ident,
    /// Bound with a value (a parameter, or `let` with an initializer).
    init: bool,
    /// A shared reference or a scalar: moving it leaves what it was
    /// computed from, and what was computed from it, as they were.
    copy: bool,
    /// The position of its binding.
    order: usize,
    /// For a `let`: the names it binds, and the identifiers of its
    /// initializer.
    bound_names: Vec<String>,
    names_in_init: Option<HashSet<String>>,
}

/// The parameters, then the locals bound by the top-level `let`s of
/// `prefix`, in order.
fn bindings(sig: &syn::Signature, prefix: &[syn::Stmt]) -> Vec<Binding> {
    let mut out = Vec::new();
    for a in &sig.inputs {
        let syn::FnArg::Typed(pt) = a else { continue };
        let names = pattern_names(&pt.pat);
        let copy = names.len() == 1 && is_copy_type(&pt.ty);
        for n in names {
            out.push(Binding { name: n, init: true, copy, order: out.len(), bound_names: vec![], names_in_init: None });
        }
    }
    for s in prefix {
        let syn::Stmt::Local(l) = s else { continue };
        let (pat, ty) = match &l.pat {
            syn::Pat::Type(pt) => (&*pt.pat, Some(&*pt.ty)),
            p => (p, None),
        };
        let names = pattern_names(pat);
        let bound: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let init = l.init.as_ref();
        let copy = names.len() == 1
            && (ty.is_some_and(is_copy_type)
                || init.is_some_and(|i| {
                    matches!(&*i.expr, syn::Expr::Reference(r) if r.mutability.is_none())
                        || matches!(&*i.expr, syn::Expr::Lit(_))
                }));
        let in_init = init.map(|i| {
            let mut s = idents(&i.expr.to_token_stream());
            if let Some((_, d)) = &i.diverge {
                s.extend(idents(&d.to_token_stream()));
            }
            s
        });
        for n in names {
            out.push(Binding {
                name: n,
                init: init.is_some(),
                copy,
                order: out.len(),
                bound_names: bound.clone(),
                names_in_init: in_init.clone(),
            });
        }
    }
    out
}

/// A shared reference, or a scalar type by its name.
fn is_copy_type(t: &syn::Type) -> bool {
    const SCALARS: &[&str] = &[
        "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize", "f32", "f64", "bool",
        "char",
    ];
    match t {
        syn::Type::Reference(r) => r.mutability.is_none(),
        syn::Type::Path(tp) => tp.qself.is_none() && SCALARS.iter().any(|s| tp.path.is_ident(s)),
        _ => false,
    }
}

/// The names a pattern binds.
fn pattern_names(p: &syn::Pat) -> Vec<Ident> {
    struct V(Vec<Ident>);
    impl<'ast> syn::visit::Visit<'ast> for V {
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            self.0.push(p.ident.clone());
            syn::visit::visit_pat_ident(self, p);
        }
    }
    let mut v = V(vec![]);
    syn::visit::Visit::visit_pat(&mut v, p);
    // An identifier pattern naming a constant or a unit variant binds
    // nothing; by Rust's naming, those are the capitalized ones.
    v.0.retain(|i| !i.to_string().starts_with(|c: char| c.is_ascii_uppercase()));
    v.0
}

/// Replaces the merge point statement by `at`.
struct MergePoint {
    at: syn::Stmt,
}

impl VisitMut for MergePoint {
    fn visit_stmt_mut(&mut self, s: &mut syn::Stmt) {
        let is_mp = match s {
            syn::Stmt::Macro(m) => hint_annotator::is_merge_point(&m.mac),
            syn::Stmt::Expr(syn::Expr::Macro(m), _) => hint_annotator::is_merge_point(&m.mac),
            _ => false,
        };
        if is_mp {
            *s = self.at.clone();
            return;
        }
        visit_mut::visit_stmt_mut(self, s);
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

/// Rewrites the closure's `return`s (not those of closures, async blocks
/// and items inside it).
struct Returns<'d> {
    done: &'d dyn Fn(TokenStream) -> TokenStream,
}

impl VisitMut for Returns<'_> {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        match e {
            syn::Expr::Return(r) => {
                if let Some(x) = &mut r.expr {
                    self.visit_expr_mut(x);
                }
                let v = r.expr.as_ref().map(|x| x.to_token_stream()).unwrap_or_else(|| quote!(()));
                let d = (self.done)(v);
                *e = syn::parse_quote!(return #d);
            }
            syn::Expr::Closure(_) | syn::Expr::Async(_) => {}
            syn::Expr::Macro(m) => m.mac.tokens = rewrite_returns(m.mac.tokens.clone(), self.done),
            _ => visit_mut::visit_expr_mut(self, e),
        }
    }

    fn visit_stmt_mut(&mut self, s: &mut syn::Stmt) {
        match s {
            syn::Stmt::Macro(m) => m.mac.tokens = rewrite_returns(m.mac.tokens.clone(), self.done),
            syn::Stmt::Item(syn::Item::Macro(m)) if m.mac.path.is_ident("macro_rules") => {
                m.mac.tokens = rewrite_transcribers(m.mac.tokens.clone(), self.done)
            }
            _ => visit_mut::visit_stmt_mut(self, s),
        }
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

/// `return X` in tokens, where `X` runs to the next `;` or `,` of its
/// group: `return DONE(X)`.
fn rewrite_returns(ts: TokenStream, done: &dyn Fn(TokenStream) -> TokenStream) -> TokenStream {
    let v: Vec<TokenTree> = ts.into_iter().collect();
    let mut out = TokenStream::new();
    let mut i = 0;
    while i < v.len() {
        match &v[i] {
            TokenTree::Ident(id) if id == "return" => {
                let mut j = i + 1;
                while j < v.len() && !matches!(&v[j], TokenTree::Punct(p) if p.as_char() == ';' || p.as_char() == ',') {
                    j += 1;
                }
                let x: TokenStream = v[i + 1..j].iter().cloned().collect();
                let x = rewrite_returns(x, done);
                let x = if x.is_empty() { quote!(()) } else { x };
                out.extend(std::iter::once(v[i].clone()));
                out.extend(done(x));
                i = j;
            }
            TokenTree::Group(g) => {
                let mut ng = Group::new(g.delimiter(), rewrite_returns(g.stream(), done));
                ng.set_span(g.span());
                out.extend(std::iter::once(TokenTree::Group(ng)));
                i += 1;
            }
            t => {
                out.extend(std::iter::once(t.clone()));
                i += 1;
            }
        }
    }
    out
}

/// The `return`s of a `macro_rules!`'s transcribers (`(..) => { .. }`),
/// not of its matchers.
fn rewrite_transcribers(ts: TokenStream, done: &dyn Fn(TokenStream) -> TokenStream) -> TokenStream {
    let v: Vec<TokenTree> = ts.into_iter().collect();
    let mut out = TokenStream::new();
    for (i, t) in v.iter().enumerate() {
        let after_arrow = i >= 2
            && matches!(&v[i - 1], TokenTree::Punct(p) if p.as_char() == '>')
            && matches!(&v[i - 2], TokenTree::Punct(p) if p.as_char() == '=');
        match t {
            TokenTree::Group(g) if after_arrow && g.delimiter() != Delimiter::None => {
                let mut ng = Group::new(g.delimiter(), rewrite_returns(g.stream(), done));
                ng.set_span(g.span());
                out.extend(std::iter::once(TokenTree::Group(ng)));
            }
            t => out.extend(std::iter::once(t.clone())),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};

    use super::*;

    fn check(src: &str, want: Expect) {
        let file: syn::File = syn::parse_str(src).unwrap();
        let cx = ModuleContext::of(&file.items);
        let mut f = file
            .items
            .iter()
            .find_map(|i| match i {
                syn::Item::Fn(f) => Some(f.clone()),
                _ => None,
            })
            .unwrap();
        let hook = Hook { visits: quote!(VISITS(pc)), runs: quote!(HOOK(pc);), parks_at_head: false, greens: vec![] };
        let got = match outline(&mut f, &hook, &cx) {
            Ok(()) => prettyplease::unparse(&syn::parse_quote!(#f)),
            Err(why) => format!("not outlined: {why}\n"),
        };
        want.assert_eq(&got);
    }

    #[test]
    fn a_result_loop_carries_what_it_mentions_and_keeps_its_question_marks() {
        check(
            "fn run(code: &[u8], heap: &mut Heap) -> Result<i64, E> { let mut pc = 0; let mut acc = 0; let unused = 1; \
             loop { hint!(global_merge_point); if pc >= code.len() { return Ok(acc); } acc += step(heap, code[pc])?; pc += 1; } }",
            expect![[r#"
                fn run(code: &[u8], heap: &mut Heap) -> Result<i64, E> {
                    let mut pc = 0;
                    let mut acc = 0;
                    let unused = 1;
                    #[inline(never)]
                    fn __jit_outlined<
                        __A0,
                        __A1,
                        __A2,
                        __A3,
                        __S,
                        __R: __rt::portal::Outlined<__S>,
                        __F: ::core::ops::FnOnce(
                                __A0,
                                __A1,
                                __A2,
                                __A3,
                            ) -> <__R as __rt::portal::Outlined<__S>>::Step,
                    >(
                        code: __A0,
                        heap: __A1,
                        pc: __A2,
                        acc: __A3,
                        __jit_f: __F,
                    ) -> __rt::portal::Flow<__R, __S> {
                        <__R as __rt::portal::Outlined<__S>>::resume(__jit_f(code, heap, pc, acc))
                    }
                    let mut __jit_unhooked = false;
                    let mut __jit_carried = (code, heap, pc, acc);
                    loop {
                        let (code, heap, pc, acc) = __jit_carried;
                        #[allow(unreachable_code)]
                        let __jit_flow = __jit_outlined::<
                            _,
                            _,
                            _,
                            _,
                            _,
                            Result<i64, E>,
                            _,
                        >(
                            code,
                            heap,
                            pc,
                            acc,
                            |code, heap, pc, acc| {
                                #[allow(unused_mut)]
                                let (mut code, mut heap, mut pc, mut acc) = (code, heap, pc, acc);
                                let __jit_hooked = !__jit_unhooked;
                                <Result<
                                    i64,
                                    E,
                                > as __rt::portal::Outlined<
                                    _,
                                >>::done(
                                    loop {
                                        if VISITS(pc) {
                                            return <Result<
                                                i64,
                                                E,
                                            > as __rt::portal::Outlined<
                                                _,
                                            >>::sample((code, heap, pc, acc));
                                        }
                                        if pc >= code.len() {
                                            return <Result<
                                                i64,
                                                E,
                                            > as __rt::portal::Outlined<_>>::done(Ok(acc));
                                        }
                                        acc += step(heap, code[pc])?;
                                        pc += 1;
                                    },
                                )
                            },
                        );
                        #[allow(unused_mut)]
                        let (mut code, mut heap, mut pc, mut acc) = match __jit_flow {
                            __rt::portal::Flow::Done(__jit_r) => return __jit_r,
                            __rt::portal::Flow::Sample(__jit_s) => __jit_s,
                        };
                        HOOK(pc);
                        __jit_carried = (code, heap, pc, acc);
                    }
                }
            "#]],
        );
    }

    #[test]
    fn a_while_is_entered_past_its_condition_and_a_plain_portal_wraps_its_returns() {
        check(
            "fn run(code: &[u8]) -> i64 { let mut pc = 0; while pc < code.len() { hint!(global_merge_point); \
             if code[pc] == 0 { return 7; } if code[pc] == 1 { pc += 2; continue; } pc += 1; } -1 }",
            expect![[r#"
                fn run(code: &[u8]) -> i64 {
                    let mut pc = 0;
                    #[inline(never)]
                    fn __jit_outlined<
                        __A0,
                        __A1,
                        __S,
                        __R,
                        __F: ::core::ops::FnOnce(__A0, __A1) -> __rt::portal::Flow<__R, __S>,
                    >(code: __A0, pc: __A1, __jit_f: __F) -> __rt::portal::Flow<__R, __S> {
                        __jit_f(code, pc)
                    }
                    let mut __jit_unhooked = false;
                    let mut __jit_resumed = false;
                    let mut __jit_carried = (code, pc);
                    loop {
                        let (code, pc) = __jit_carried;
                        #[allow(unreachable_code)]
                        let __jit_flow = __jit_outlined::<
                            _,
                            _,
                            _,
                            i64,
                            _,
                        >(
                            code,
                            pc,
                            |code, pc| {
                                #[allow(unused_mut)]
                                let (mut code, mut pc) = (code, pc);
                                let __jit_hooked = !__jit_unhooked;
                                if __jit_resumed || (pc < code.len()) {
                                    '__jit_loop: loop {
                                        if VISITS(pc) {
                                            return __rt::portal::Flow::Sample((code, pc));
                                        }
                                        '__jit_b: {
                                            if code[pc] == 0 {
                                                return __rt::portal::Flow::Done(7);
                                            }
                                            if code[pc] == 1 {
                                                pc += 2;
                                                break '__jit_b;
                                            }
                                            pc += 1;
                                        }
                                        if !(pc < code.len()) {
                                            break '__jit_loop;
                                        }
                                    }
                                }
                                __rt::portal::Flow::Done(-1)
                            },
                        );
                        #[allow(unused_mut)]
                        let (mut code, mut pc) = match __jit_flow {
                            __rt::portal::Flow::Done(__jit_r) => return __jit_r,
                            __rt::portal::Flow::Sample(__jit_s) => __jit_s,
                        };
                        HOOK(pc);
                        __jit_resumed = true;
                        __jit_carried = (code, pc);
                    }
                }
            "#]],
        );
    }

    #[test]
    fn macros_that_return_are_defined_again_in_the_closure() {
        check(
            "macro_rules! give_up { ($pc:expr) => { return Ok($pc) }; (return) => { 0 }; } \
             macro_rules! unused_here { () => { return Ok(0) }; } \
             fn run(code: &[u8]) -> Result<i64, E> { let mut pc = 0; \
             macro_rules! next { () => {{ pc += 1; if pc > 9 { return Err(E) } code[pc] }}; } \
             loop { hint!(global_merge_point); if next!() == 0 { give_up!(1); } } }",
            expect![[r#"
                fn run(code: &[u8]) -> Result<i64, E> {
                    let mut pc = 0;
                    #[allow(unused_macros)]
                    macro_rules! next {
                        () => {
                            { pc += 1; if pc > 9 { return Err(E) } code[pc] }
                        };
                    }
                    #[inline(never)]
                    fn __jit_outlined<
                        __A0,
                        __A1,
                        __S,
                        __R: __rt::portal::Outlined<__S>,
                        __F: ::core::ops::FnOnce(
                                __A0,
                                __A1,
                            ) -> <__R as __rt::portal::Outlined<__S>>::Step,
                    >(code: __A0, pc: __A1, __jit_f: __F) -> __rt::portal::Flow<__R, __S> {
                        <__R as __rt::portal::Outlined<__S>>::resume(__jit_f(code, pc))
                    }
                    let mut __jit_unhooked = false;
                    let mut __jit_carried = (code, pc);
                    loop {
                        let (code, pc) = __jit_carried;
                        #[allow(unreachable_code)]
                        let __jit_flow = __jit_outlined::<
                            _,
                            _,
                            _,
                            Result<i64, E>,
                            _,
                        >(
                            code,
                            pc,
                            |code, pc| {
                                #[allow(unused_mut)]
                                let (mut code, mut pc) = (code, pc);
                                let __jit_hooked = !__jit_unhooked;
                                macro_rules! next {
                                    () => {
                                        { pc += 1; if pc > 9 { return < Result < i64, E > as
                                        __rt::portal::Outlined < _ >> ::done(Err(E)) } code[pc] }
                                    };
                                }
                                macro_rules! give_up {
                                    ($pc:expr) => {
                                        return < Result < i64, E > as __rt::portal::Outlined < _ >>
                                        ::done(Ok($pc))
                                    };
                                    (return) => {
                                        0
                                    };
                                }
                                <Result<
                                    i64,
                                    E,
                                > as __rt::portal::Outlined<
                                    _,
                                >>::done(
                                    loop {
                                        if VISITS(pc) {
                                            return <Result<
                                                i64,
                                                E,
                                            > as __rt::portal::Outlined<_>>::sample((code, pc));
                                        }
                                        if next!() == 0 {
                                            give_up!(1);
                                        }
                                    },
                                )
                            },
                        );
                        #[allow(unused_mut)]
                        let (mut code, mut pc) = match __jit_flow {
                            __rt::portal::Flow::Done(__jit_r) => return __jit_r,
                            __rt::portal::Flow::Sample(__jit_s) => __jit_s,
                        };
                        HOOK(pc);
                        __jit_carried = (code, pc);
                    }
                }
            "#]],
        );
    }

    #[test]
    fn a_local_that_another_was_computed_from_is_borrowed_not_moved() {
        check(
            "fn run(n: i64) -> Option<i64> { let mut stack: Vec<i64> = vec![n]; let depth = stack.len(); \
             let first: i64 = n; let view = &first; let mut pc = 0; \
             let r = { let k = 3; loop { hint!(global_merge_point); pc += k + depth; stack.push(*view); if pc > 9 { break stack.pop()?; } } }; \
             Some(r) }",
            expect![[r#"
                fn run(n: i64) -> Option<i64> {
                    let mut stack: Vec<i64> = vec![n];
                    let depth = stack.len();
                    let first: i64 = n;
                    let view = &first;
                    let mut pc = 0;
                    let k = 3;
                    #[inline(never)]
                    fn __jit_outlined<
                        __A0,
                        __A1,
                        __A2,
                        __A3,
                        __S,
                        __R: __rt::portal::Outlined<__S>,
                        __F: ::core::ops::FnOnce(
                                __A0,
                                __A1,
                                __A2,
                                __A3,
                            ) -> <__R as __rt::portal::Outlined<__S>>::Step,
                    >(
                        depth: __A0,
                        view: __A1,
                        pc: __A2,
                        k: __A3,
                        __jit_f: __F,
                    ) -> __rt::portal::Flow<__R, __S> {
                        <__R as __rt::portal::Outlined<__S>>::resume(__jit_f(depth, view, pc, k))
                    }
                    let mut __jit_unhooked = false;
                    let mut __jit_carried = (depth, view, pc, k);
                    loop {
                        let (depth, view, pc, k) = __jit_carried;
                        #[allow(unreachable_code)]
                        let __jit_flow = __jit_outlined::<
                            _,
                            _,
                            _,
                            _,
                            _,
                            Option<i64>,
                            _,
                        >(
                            depth,
                            view,
                            pc,
                            k,
                            |depth, view, pc, k| {
                                #[allow(unused_mut)]
                                let (mut depth, mut view, mut pc, mut k) = (depth, view, pc, k);
                                let __jit_hooked = !__jit_unhooked;
                                let r = loop {
                                    if VISITS(pc) {
                                        return <Option<
                                            i64,
                                        > as __rt::portal::Outlined<_>>::sample((depth, view, pc, k));
                                    }
                                    pc += k + depth;
                                    stack.push(*view);
                                    if pc > 9 {
                                        break stack.pop()?;
                                    }
                                };
                                <Option<i64> as __rt::portal::Outlined<_>>::done(Some(r))
                            },
                        );
                        #[allow(unused_mut)]
                        let (mut depth, mut view, mut pc, mut k) = match __jit_flow {
                            __rt::portal::Flow::Done(__jit_r) => return __jit_r,
                            __rt::portal::Flow::Sample(__jit_s) => __jit_s,
                        };
                        HOOK(pc);
                        __jit_carried = (depth, view, pc, k);
                    }
                }
            "#]],
        );
    }

    #[test]
    fn a_while_let_is_entered_with_the_bindings_the_hook_saw() {
        check(
            "fn run(code: &[Op], out: &mut Vec<u8>) -> Vec<isize> { let mut stack = Vec::new(); let mut pc: usize = 0; \
             while let Some(op) = code.get(pc) { hint!(global_merge_point); pc += 1; if let Op::Out = op { out.push(1); continue; } stack.push(1); } stack }",
            expect![[r#"
                fn run(code: &[Op], out: &mut Vec<u8>) -> Vec<isize> {
                    let mut stack = Vec::new();
                    let mut pc: usize = 0;
                    #[inline(never)]
                    fn __jit_outlined<
                        __A0,
                        __A1,
                        __A2,
                        __A3,
                        __A4,
                        __S,
                        __R,
                        __F: ::core::ops::FnOnce(
                                __A0,
                                __A1,
                                __A2,
                                __A3,
                                __A4,
                            ) -> __rt::portal::Flow<__R, __S>,
                    >(
                        code: __A0,
                        out: __A1,
                        stack: __A2,
                        pc: __A3,
                        __jit_resume: __A4,
                        __jit_f: __F,
                    ) -> __rt::portal::Flow<__R, __S> {
                        __jit_f(code, out, stack, pc, __jit_resume)
                    }
                    let mut __jit_unhooked = false;
                    #[allow(unused_mut)]
                    let mut __jit_at_head = false;
                    let mut __jit_carried = (code, out, stack, pc, ::core::option::Option::None);
                    loop {
                        let (code, out, stack, pc, __jit_resume) = __jit_carried;
                        #[allow(unreachable_code)]
                        let __jit_flow = __jit_outlined::<
                            _,
                            _,
                            _,
                            _,
                            _,
                            _,
                            Vec<isize>,
                            _,
                        >(
                            code,
                            out,
                            stack,
                            pc,
                            __jit_resume,
                            |code, out, stack, pc, __jit_resume| {
                                #[allow(unused_mut)]
                                let (mut code, mut out, mut stack, mut pc, mut __jit_resume) = (
                                    code,
                                    out,
                                    stack,
                                    pc,
                                    __jit_resume,
                                );
                                let __jit_hooked = !__jit_unhooked;
                                '__jit_w: {
                                    #[allow(unreachable_patterns)]
                                    if false {
                                        __jit_resume = match code.get(pc) {
                                            Some(op) => ::core::option::Option::Some((op,)),
                                            _ => ::core::option::Option::None,
                                        };
                                    }
                                    if let ::core::option::Option::Some((op,)) = __jit_resume {
                                        '__jit_b: {
                                            pc += 1;
                                            if let Op::Out = op {
                                                out.push(1);
                                                break '__jit_b;
                                            }
                                            stack.push(1);
                                        }
                                    }
                                    while let Some(op) = code.get(pc) {
                                        if VISITS(pc) {
                                            return __rt::portal::Flow::Sample((
                                                code,
                                                out,
                                                stack,
                                                pc,
                                                (op,),
                                            ));
                                        }
                                        pc += 1;
                                        if let Op::Out = op {
                                            out.push(1);
                                            continue;
                                        }
                                        stack.push(1);
                                    }
                                }
                                __rt::portal::Flow::Done(stack)
                            },
                        );
                        #[allow(unused_mut)]
                        let (mut code, mut out, mut stack, mut pc, (mut op,)) = match __jit_flow {
                            __rt::portal::Flow::Done(__jit_r) => return __jit_r,
                            __rt::portal::Flow::Sample(__jit_s) => __jit_s,
                        };
                        HOOK(pc);
                        __jit_carried = (
                            code,
                            out,
                            stack,
                            pc,
                            if ::core::mem::take(&mut __jit_at_head) {
                                ::core::option::Option::None
                            } else {
                                ::core::option::Option::Some((op,))
                            },
                        );
                    }
                }
            "#]],
        );
    }

    #[test]
    fn what_is_not_outlined_says_why() {
        check(
            "fn run(n: i64) -> i64 { let mut stack = vec![n]; while let Some(op) = stack.pop() { hint!(global_merge_point); stack.push(op - 1); } 0 }",
            expect![[r#"
                not outlined: a `while let` whose condition reads a local that is not a reference or a scalar
            "#]],
        );
        let large = "pc += 1; ".repeat(600);
        check(
            &format!(
                "fn run(code: &[u8]) -> i64 {{ let mut pc: usize = 0; \
                 while let Some(op) = code.get(pc) {{ hint!(global_merge_point); {large} }} 0 }}"
            ),
            expect![[r#"
                not outlined: a `while let` whose body is too large to copy
            "#]],
        );
        check(
            "fn run(n: i64) -> i64 { let mut pc = 0; loop { pc += 1; hint!(global_merge_point); if pc > 9 { return 1; } } }",
            expect![[r#"
                not outlined: its merge point is not the first statement of a `loop`, `while` or `while let` of the function's body
            "#]],
        );
        check(
            "fn run(n: i64) -> i64 { let x = n; macro_rules! m { () => { x } } let x = 2; \
             loop { hint!(global_merge_point); if m!() + x > 0 { return 1; } } }",
            expect![[r#"
                not outlined: a `macro_rules!` naming a local bound after it
            "#]],
        );
        check(
            "static COUNT: i64 = 3; macro_rules! give { () => { return Ok(COUNT + count) } } \
             fn run(n: i64) -> Result<i64, E> { let count = n; loop { hint!(global_merge_point); give!(); } }",
            expect![[r#"
                not outlined: a module's `macro_rules!` that returns and names a local of the portal
            "#]],
        );
        check(
            "fn run(code: &[u8]) -> Value { let mut pc = 0; loop { hint!(global_merge_point); pc = next(pc)?; } }",
            expect![[r#"
                not outlined: a `?` in a function that does not return a `Result` or an `Option`
            "#]],
        );
        check(
            "fn run(code: &[u8]) -> i64 { let mut pc; pc = 0; loop { hint!(global_merge_point); pc += 1; if pc > 3 { return 1; } } }",
            expect![[r#"
                not outlined: a local bound without a value before the loop
            "#]],
        );
    }
}

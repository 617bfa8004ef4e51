//! `macro_rules!` macros of the module and of function bodies, expanded
//! before lowering, as rustc expands them: the analysis sees the code the
//! macro stands for.
//!
//! A definition (an item of the module, or a statement of a block, in scope
//! to the block's end) is read into rules: a matcher and a transcriber. An
//! invocation in expression or statement position tries the rules in order;
//! the first whose matcher matches the invocation's tokens is transcribed,
//! and the result parsed as an expression (expression position) or as
//! statements (statement position), then expanded again (macros using
//! macros), up to [`DEPTH`] levels. Matchers take literal tokens, groups,
//! fragments (`expr`, `ident`, `tt`, `ty`, `literal`, `path`, `pat`,
//! `block`, `stmt`, `lifetime`, `item`, `vis`, `meta`) parsed by `syn` as rustc
//! parses them, and repetitions (`$(...) sep? *`, `+`, `?`).
//!
//! Hygiene: an `expr` fragment is put in parentheses, and a name the
//! transcriber binds with `let` (`let x`, `let mut x`, `let (a, b)`) is
//! renamed for each expansion (`__macro3_x`), so that it neither captures nor
//! shadows the caller's names; other names in the transcriber mean what
//! they mean where the macro is used, which is what they mean where it is
//! defined as long as the definition comes first in the same function.
//! `matches!(e, pat)` is expanded here too, into a `match`.
//!
//! Spans are kept: tokens of the transcriber point at the definition, and
//! fragments at the invocation, so errors point at what the user wrote.

use std::collections::HashMap;

use proc_macro2::{Delimiter, Group, Ident, Spacing, Span, TokenStream, TokenTree};
use quote::{quote, ToTokens};
use syn::parse::{ParseStream, Parser};
use syn::visit_mut::{self, VisitMut};
use syn::{Expr, Stmt};

/// How deep expansions may nest (a macro expanding to itself forever stops
/// here, with an error).
pub const DEPTH: usize = 64;

/// One rule of a macro: what it matches and what it stands for.
#[derive(Clone, Debug)]
pub struct Rule {
    matcher: Vec<M>,
    transcriber: TokenStream,
}

/// An element of a matcher.
#[derive(Clone, Debug)]
enum M {
    /// A token to match as written.
    Tok(String),
    /// A delimited group and what it holds.
    Group(Delimiter, Vec<M>),
    /// `$name:fragment`.
    Var(String, String),
    /// `$( ... ) sep op`.
    Rep(Vec<M>, Option<String>, char),
}

/// What a fragment matched: tokens, or one binding per repetition.
#[derive(Clone, Debug)]
enum Binding {
    One(TokenStream),
    Seq(Vec<Binding>),
}

type Bindings = HashMap<String, Binding>;

/// The rules of a `macro_rules! name { ... }` body; `None` if it is not
/// one jitgen can read.
pub fn read_rules(body: &TokenStream) -> Option<Vec<Rule>> {
    let toks: Vec<TokenTree> = body.clone().into_iter().collect();
    let mut rules = vec![];
    let mut i = 0;
    while i < toks.len() {
        let TokenTree::Group(m) = &toks[i] else { return None };
        let arrow = matches!((toks.get(i + 1), toks.get(i + 2)), (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
            if a.as_char() == '=' && b.as_char() == '>');
        let Some(TokenTree::Group(t)) = toks.get(i + 3) else { return None };
        if !arrow {
            return None;
        }
        rules.push(Rule { matcher: read_matcher(m.stream())?, transcriber: t.stream() });
        i += 4;
        if matches!(toks.get(i), Some(TokenTree::Punct(p)) if p.as_char() == ';') {
            i += 1;
        }
    }
    Some(rules)
}

fn read_matcher(ts: TokenStream) -> Option<Vec<M>> {
    let toks: Vec<TokenTree> = ts.into_iter().collect();
    let mut out = vec![];
    let mut i = 0;
    while i < toks.len() {
        match &toks[i] {
            TokenTree::Punct(p) if p.as_char() == '$' => match toks.get(i + 1) {
                Some(TokenTree::Ident(name)) => {
                    let colon = matches!(toks.get(i + 2), Some(TokenTree::Punct(c)) if c.as_char() == ':');
                    let Some(TokenTree::Ident(frag)) = toks.get(i + 3) else { return None };
                    if !colon {
                        return None;
                    }
                    out.push(M::Var(name.to_string(), frag.to_string()));
                    i += 4;
                }
                Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis => {
                    let inner = read_matcher(g.stream())?;
                    let (sep, op, used) = repetition_tail(&toks[i + 2..])?;
                    out.push(M::Rep(inner, sep, op));
                    i += 2 + used;
                }
                _ => return None,
            },
            TokenTree::Group(g) => {
                out.push(M::Group(g.delimiter(), read_matcher(g.stream())?));
                i += 1;
            }
            t => {
                out.push(M::Tok(t.to_string()));
                i += 1;
            }
        }
    }
    Some(out)
}

/// After `$( ... )`: the separator, if any, the operator, and how many
/// tokens they took.
fn repetition_tail(rest: &[TokenTree]) -> Option<(Option<String>, char, usize)> {
    let op = |t: Option<&TokenTree>| match t {
        Some(TokenTree::Punct(p)) if matches!(p.as_char(), '*' | '+' | '?') => Some(p.as_char()),
        _ => None,
    };
    if let Some(o) = op(rest.first()) {
        return Some((None, o, 1));
    }
    let o = op(rest.get(1))?;
    Some((Some(rest.first()?.to_string()), o, 2))
}

/// Matches `ms` against all of `input`.
fn match_all(ms: &[M], input: ParseStream, b: &mut Bindings) -> syn::Result<()> {
    match_seq(ms, input, b)?;
    if input.is_empty() {
        Ok(())
    } else {
        Err(input.error("unexpected tokens"))
    }
}

fn match_seq(ms: &[M], input: ParseStream, b: &mut Bindings) -> syn::Result<()> {
    for m in ms {
        match m {
            M::Tok(t) => {
                let got: TokenTree = input.parse()?;
                if got.to_string() != *t {
                    return Err(syn::Error::new(got.span(), "no match"));
                }
            }
            M::Group(d, inner) => {
                let got: TokenTree = input.parse()?;
                let TokenTree::Group(g) = got else { return Err(input.error("no match")) };
                if g.delimiter() != *d {
                    return Err(syn::Error::new(g.span(), "no match"));
                }
                let mut inner_b = Bindings::new();
                (|s: ParseStream| match_all(inner, s, &mut inner_b)).parse2(g.stream())?;
                b.extend(inner_b);
            }
            M::Var(name, frag) => {
                let ts = fragment(frag, input)?;
                b.insert(name.clone(), Binding::One(ts));
            }
            M::Rep(inner, sep, op) => {
                let mut iters: Vec<Bindings> = vec![];
                loop {
                    if *op == '?' && !iters.is_empty() {
                        break;
                    }
                    let fork = input.fork();
                    if !iters.is_empty() {
                        if let Some(s) = sep {
                            match fork.parse::<TokenTree>() {
                                Ok(t) if t.to_string() == *s => {}
                                _ => break,
                            }
                        }
                    }
                    let mut ib = Bindings::new();
                    if fork.is_empty() || match_seq(inner, &fork, &mut ib).is_err() {
                        break;
                    }
                    use syn::parse::discouraged::Speculative;
                    input.advance_to(&fork);
                    iters.push(ib);
                }
                if *op == '+' && iters.is_empty() {
                    return Err(input.error("no match"));
                }
                let mut names = vec![];
                var_names(inner, &mut names);
                for n in names {
                    let seq = iters.iter().filter_map(|ib| ib.get(&n).cloned()).collect();
                    b.insert(n, Binding::Seq(seq));
                }
            }
        }
    }
    Ok(())
}

fn var_names(ms: &[M], out: &mut Vec<String>) {
    for m in ms {
        match m {
            M::Var(n, _) => out.push(n.clone()),
            M::Group(_, inner) | M::Rep(inner, ..) => var_names(inner, out),
            M::Tok(_) => {}
        }
    }
}

/// Parses one fragment of kind `frag`, as its tokens.
fn fragment(frag: &str, input: ParseStream) -> syn::Result<TokenStream> {
    Ok(match frag {
        "expr" => {
            let e: Expr = input.parse()?;
            // As rustc keeps an `expr` fragment one operand: in parentheses.
            let mut g = Group::new(Delimiter::Parenthesis, e.to_token_stream());
            g.set_span(e_span(&e));
            TokenTree::Group(g).into()
        }
        "ident" => syn::ext::IdentExt::parse_any(input).map(|i: Ident| i.into_token_stream())?,
        "tt" => input.parse::<TokenTree>()?.into(),
        "ty" => input.parse::<syn::Type>()?.into_token_stream(),
        "literal" => input.parse::<syn::Lit>()?.into_token_stream(),
        "path" => input.parse::<syn::Path>()?.into_token_stream(),
        "pat" | "pat_param" => syn::Pat::parse_multi(input)?.into_token_stream(),
        "block" => input.parse::<syn::Block>()?.into_token_stream(),
        "stmt" => input.parse::<Stmt>()?.into_token_stream(),
        "lifetime" => input.parse::<syn::Lifetime>()?.into_token_stream(),
        "item" => input.parse::<syn::Item>()?.into_token_stream(),
        "vis" => input.parse::<syn::Visibility>()?.into_token_stream(),
        "meta" => input.parse::<syn::Meta>()?.into_token_stream(),
        _ => return Err(input.error(format!("the fragment `{frag}` is not supported"))),
    })
}

fn e_span(e: &Expr) -> Span {
    e.to_token_stream().into_iter().next().map_or_else(Span::call_site, |t| t.span())
}

/// Substitutes `b` into a transcriber.
fn transcribe(ts: TokenStream, b: &Bindings) -> Result<TokenStream, String> {
    let toks: Vec<TokenTree> = ts.into_iter().collect();
    let mut out = TokenStream::new();
    let mut i = 0;
    while i < toks.len() {
        match &toks[i] {
            TokenTree::Punct(p) if p.as_char() == '$' => match toks.get(i + 1) {
                Some(TokenTree::Ident(name)) if name == "crate" => {
                    out.extend([TokenTree::Ident(Ident::new("crate", name.span()))]);
                    i += 2;
                }
                Some(TokenTree::Ident(name)) => match b.get(&name.to_string()) {
                    Some(Binding::One(t)) => {
                        out.extend(t.clone());
                        i += 2;
                    }
                    Some(Binding::Seq(_)) => return Err(format!("`${name}` is repeated here but not inside `$(...)`")),
                    None => return Err(format!("`${name}` is not bound by the matcher")),
                },
                Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis => {
                    let (sep, _, used) = repetition_tail(&toks[i + 2..]).ok_or("a `$(...)` without `*`, `+` or `?`")?;
                    let mut names = vec![];
                    used_names(g.stream(), &mut names);
                    let n = names
                        .iter()
                        .filter_map(|n| match b.get(n) {
                            Some(Binding::Seq(s)) => Some(s.len()),
                            _ => None,
                        })
                        .max()
                        .ok_or("a `$(...)` with no repeated fragment in it")?;
                    for k in 0..n {
                        if k > 0 {
                            if let Some(s) = &sep {
                                out.extend(s.parse::<TokenStream>().map_err(|e| e.to_string())?);
                            }
                        }
                        let mut inner = b.clone();
                        for name in &names {
                            if let Some(Binding::Seq(s)) = b.get(name) {
                                if let Some(x) = s.get(k) {
                                    inner.insert(name.clone(), x.clone());
                                }
                            }
                        }
                        out.extend(transcribe(g.stream(), &inner)?);
                    }
                    i += 2 + used;
                }
                _ => {
                    out.extend([toks[i].clone()]);
                    i += 1;
                }
            },
            TokenTree::Group(g) => {
                let mut ng = Group::new(g.delimiter(), transcribe(g.stream(), b)?);
                ng.set_span(g.span());
                out.extend([TokenTree::Group(ng)]);
                i += 1;
            }
            t => {
                out.extend([t.clone()]);
                i += 1;
            }
        }
    }
    Ok(out)
}

fn used_names(ts: TokenStream, out: &mut Vec<String>) {
    let toks: Vec<TokenTree> = ts.into_iter().collect();
    for (i, t) in toks.iter().enumerate() {
        match t {
            TokenTree::Punct(p) if p.as_char() == '$' => {
                if let Some(TokenTree::Ident(n)) = toks.get(i + 1) {
                    out.push(n.to_string());
                }
            }
            TokenTree::Group(g) => used_names(g.stream(), out),
            _ => {}
        }
    }
}

/// The names a transcriber binds with `let` (`let x`, `let mut x`, `let
/// (a, mut b)`), to be renamed in each expansion.
fn let_bound(ts: &TokenStream, out: &mut Vec<String>) {
    let toks: Vec<TokenTree> = ts.clone().into_iter().collect();
    for (i, t) in toks.iter().enumerate() {
        match t {
            TokenTree::Ident(l) if l == "let" => {
                let mut j = i + 1;
                if matches!(toks.get(j), Some(TokenTree::Ident(m)) if m == "mut") {
                    j += 1;
                }
                match toks.get(j) {
                    Some(TokenTree::Ident(x)) if x != "_" => out.push(x.to_string()),
                    Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis => {
                        for t in g.stream() {
                            if let TokenTree::Ident(x) = t {
                                if x != "mut" && x != "ref" && x != "_" {
                                    out.push(x.to_string());
                                }
                            }
                        }
                    }
                    _ => {}
                }
            }
            TokenTree::Group(g) => let_bound(&g.stream(), out),
            _ => {}
        }
    }
}

/// Renames `names` in a transcriber, except after `.` (a field or method)
/// and after `$` (a fragment).
fn rename(ts: TokenStream, names: &[String], prefix: &str) -> TokenStream {
    let mut out = TokenStream::new();
    let mut after_dot_or_dollar = false;
    for t in ts {
        let next_flag = matches!(&t, TokenTree::Punct(p) if (p.as_char() == '.' || p.as_char() == '$') && p.spacing() == Spacing::Alone);
        let t = match t {
            TokenTree::Ident(x) if !after_dot_or_dollar && names.iter().any(|n| x == n) => {
                TokenTree::Ident(Ident::new(&format!("{prefix}{x}"), x.span()))
            }
            TokenTree::Group(g) => {
                let mut ng = Group::new(g.delimiter(), rename(g.stream(), names, prefix));
                ng.set_span(g.span());
                TokenTree::Group(ng)
            }
            t => t,
        };
        out.extend([t]);
        after_dot_or_dollar = next_flag;
    }
    out
}

/// The items of a file with its item macros expanded: invocations, at the
/// top level, of the `macro_rules!` macros the file defines (a macro
/// declaring an enum and its table, say), as rustc expands them; other
/// items as they are. An expansion that fails leaves its invocation.
pub fn expand_items(items: Vec<syn::Item>) -> Vec<syn::Item> {
    let mut defs = HashMap::new();
    for i in &items {
        if let syn::Item::Macro(m) = i {
            if let (true, Some(name), Some(rules)) =
                (m.mac.path.is_ident("macro_rules"), m.ident.as_ref(), read_rules(&m.mac.tokens))
            {
                defs.insert(name.to_string(), rules);
            }
        }
    }
    let mut x = Expander { scopes: vec![defs], errors: vec![], depth: 0, count: 0 };
    let mut out = vec![];
    for i in items {
        match &i {
            syn::Item::Macro(m) if m.ident.is_none() => {
                let n = x.errors.len();
                let expanded =
                    x.expand(&m.mac).filter(|_| x.errors.len() == n).and_then(|ts| syn::parse2::<syn::File>(ts).ok());
                match expanded {
                    Some(f) => out.extend(expand_items(f.items)),
                    None => out.push(i),
                }
            }
            _ => out.push(i),
        }
    }
    out
}

/// Expands the macros of a function body: its own definitions and `module`'s.
pub fn expand_body(body: &mut syn::Block, module: &HashMap<String, Vec<Rule>>) -> Vec<syn::Error> {
    let mut x = Expander { scopes: vec![module.clone()], errors: vec![], depth: 0, count: 0 };
    x.visit_block_mut(body);
    x.errors
}

struct Expander {
    scopes: Vec<HashMap<String, Vec<Rule>>>,
    errors: Vec<syn::Error>,
    depth: usize,
    count: usize,
}

impl Expander {
    fn rules(&self, name: &str) -> Option<Vec<Rule>> {
        self.scopes.iter().rev().find_map(|s| s.get(name).cloned())
    }

    /// The expansion of `mac`, as tokens; `None` where it is not a macro
    /// defined here. Where it fails, an error is recorded and the expansion
    /// is `panic!()`: the function is left to Rust, for the error's reason
    /// alone.
    fn expand(&mut self, mac: &syn::Macro) -> Option<TokenStream> {
        let name = mac.path.get_ident()?.to_string();
        if name == "matches" {
            return matches_macro(mac);
        }
        let n = self.errors.len();
        let t = self.expand_defined(mac, &name)?;
        Some(if self.errors.len() > n { quote!(panic!()) } else { t })
    }

    fn expand_defined(&mut self, mac: &syn::Macro, name: &str) -> Option<TokenStream> {
        let rules = self.rules(&name)?;
        if self.depth >= DEPTH {
            self.errors.push(syn::Error::new_spanned(mac, format!("`{name}!` expands more than {DEPTH} levels deep")));
            return Some(TokenStream::new());
        }
        for r in &rules {
            let mut b = Bindings::new();
            if (|s: ParseStream| match_all(&r.matcher, s, &mut b)).parse2(mac.tokens.clone()).is_ok() {
                let mut bound = vec![];
                let_bound(&r.transcriber, &mut bound);
                self.count += 1;
                let template = rename(r.transcriber.clone(), &bound, &format!("__macro{}_", self.count));
                return Some(transcribe(template, &b).unwrap_or_else(|e| {
                    self.errors.push(syn::Error::new_spanned(mac, format!("`{name}!`: {e}")));
                    TokenStream::new()
                }));
            }
        }
        self.errors.push(syn::Error::new_spanned(mac, format!("no rule of `{name}!` matches this invocation")));
        Some(TokenStream::new())
    }
}

/// `matches!(e, pat)` and `matches!(e, pat if guard)` as a `match`.
fn matches_macro(mac: &syn::Macro) -> Option<TokenStream> {
    let parsed = (|s: ParseStream| {
        let e: Expr = s.parse()?;
        s.parse::<syn::Token![,]>()?;
        let p = syn::Pat::parse_multi(s)?;
        let guard = if s.peek(syn::Token![if]) {
            s.parse::<syn::Token![if]>()?;
            Some(s.parse::<Expr>()?)
        } else {
            None
        };
        let _ = s.parse::<Option<syn::Token![,]>>()?;
        Ok((e, p, guard))
    })
    .parse2(mac.tokens.clone())
    .ok()?;
    let (e, p, guard) = parsed;
    let guard = guard.map(|g| quote!(if #g));
    Some(quote!(match #e { #p #guard => true, _ => false }))
}

impl VisitMut for Expander {
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        self.scopes.push(HashMap::new());
        let stmts = std::mem::take(&mut b.stmts);
        let mut out = Vec::with_capacity(stmts.len());
        // Each statement with the depth of expansion it came from.
        let base = self.depth;
        let mut pending: std::collections::VecDeque<(Stmt, usize)> = stmts.into_iter().map(|s| (s, base)).collect();
        while let Some((mut s, depth)) = pending.pop_front() {
            self.depth = depth;
            match &s {
                Stmt::Item(syn::Item::Macro(m)) if m.mac.path.is_ident("macro_rules") => {
                    match (m.ident.as_ref(), read_rules(&m.mac.tokens)) {
                        (Some(name), Some(rules)) => {
                            self.scopes.last_mut().expect("a scope").insert(name.to_string(), rules);
                        }
                        _ => out.push(s),
                    }
                    continue;
                }
                Stmt::Macro(sm) => {
                    if let Some(ts) = self.expand(&sm.mac) {
                        // Statements in statement position; a trailing
                        // expression keeps the invocation's semicolon. They
                        // are expanded in turn, in the scope of the block.
                        match syn::parse2::<syn::Block>(quote!({ #ts })) {
                            Ok(inner) => {
                                let mut stmts = inner.stmts;
                                if let (Some(semi), Some(Stmt::Expr(_, s @ None))) = (sm.semi_token, stmts.last_mut()) {
                                    *s = Some(semi);
                                }
                                for st in stmts.into_iter().rev() {
                                    pending.push_front((st, depth + 1));
                                }
                                continue;
                            }
                            Err(e) => {
                                self.errors
                                    .push(syn::Error::new(e.span(), format!("the expansion of this macro: {e}")));
                            }
                        }
                    }
                }
                _ => {}
            }
            self.visit_stmt_mut(&mut s);
            out.push(s);
        }
        self.depth = base;
        b.stmts = out;
        self.scopes.pop();
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        if let Expr::Macro(m) = e {
            if let Some(ts) = self.expand(&m.mac) {
                match syn::parse2::<Expr>(ts.clone()).or_else(|_| syn::parse2::<Expr>(quote!({ #ts }))) {
                    Ok(new) => {
                        *e = new;
                        self.depth += 1;
                        self.visit_expr_mut(e);
                        self.depth -= 1;
                        return;
                    }
                    Err(err) => {
                        self.errors.push(syn::Error::new(err.span(), format!("the expansion of this macro: {err}")));
                        return;
                    }
                }
            }
        }
        visit_mut::visit_expr_mut(self, e);
    }
}

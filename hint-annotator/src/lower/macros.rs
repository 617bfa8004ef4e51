//! Lowering macros: `hint!`, `vec!`, `assert!` and its kin, and the
//! formatting macros (`print!`, `write!`, `format!`).

#[allow(unused_imports)]
use super::*;

impl<'m, 'a> Lowering<'m, 'a> {
    pub(super) fn macro_expr(&mut self, mac: &syn::Macro) -> LVal {
        let name = mac.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
        match name.as_str() {
            "hint" => self.hint(mac),
            "vec" => self.vec_macro(mac),
            "print" | "println" | "eprint" | "eprintln" => self.formatted(mac, &name, false),
            "write" | "writeln" => self.formatted(mac, &name, true),
            "format" => self.formatted(mac, &name, false),
            "assert" | "assert_eq" | "assert_ne" => self.assert_macro(mac, &name),
            "panic" | "unreachable" | "todo" | "unimplemented" => self.panic_macro(mac, &name),
            _ => {
                if let Some(span) = hint_inside(mac.tokens.clone()) {
                    self.error(
                        span,
                        format!("`hint!` inside `{name}!` is invisible to jitgen: bind the hinted value with `let` first, then use the binding"),
                    );
                }
                self.unsupported(
                    mac,
                    &format!("the macro `{name}!`"),
                    "supported are `hint!`, `vec!`, `print!`, `println!`, `eprint!`, `eprintln!`, `format!`, `write!` and `writeln!` into a `Vec<u8>` or a `String`, `assert!`, `assert_eq!`, `assert_ne!` and `panic!`; move other effects into a #[jit_opaque] function",
                )
            }
        }
    }

    /// `panic!` and its kin, with the message Rust's own macro gives. One
    /// known while expanding (none, or a literal without braces) is the
    /// block's abort; a formatted one is one residual call of the macro
    /// itself, its arguments evaluated here, which panics with Rust's own
    /// message (caught at the call and raised again by the portal). The
    /// abort after it is never reached.
    fn panic_macro(&mut self, mac: &syn::Macro, name: &str) -> LVal {
        let bare = match name {
            "panic" => "explicit panic",
            "unreachable" => "internal error: entered unreachable code",
            "todo" => "not yet implemented",
            _ => "not implemented",
        };
        let parts = mac.parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated);
        let parts: Vec<Expr> = parts.map(|p| p.into_iter().collect()).unwrap_or_default();
        let fixed = match parts.as_slice() {
            [] if mac.tokens.is_empty() => Some(bare.to_string()),
            [e] => str_lit(e).map(|l| l.value()).filter(|v| !v.contains(['{', '}'])).map(|v| match name {
                "panic" => v,
                _ => format!("{bare}: {v}"),
            }),
            _ => None,
        };
        if fixed.is_none() && !parts.is_empty() {
            self.format_op(mac, name, parts.into_iter(), vec![], vec![]);
        }
        self.abort(fixed.unwrap_or_else(|| format!("{name}!({})", mac.tokens)), mac.span())
    }

    /// Ends the current block with a panic of message `msg`.
    fn abort(&mut self, msg: String, span: Span) -> LVal {
        let b = self.cur_block();
        self.cur = Some(b);
        self.set_exit(LExit::Abort(msg));
        self.never(span)
    }

    /// `assert!(c)`, `assert_eq!(a, b)`, `assert_ne!(a, b)`: a test that
    /// panics with the message Rust's own macro gives: `assertion failed:
    /// c` known while expanding; a message of the user's, or the values of
    /// `assert_eq!`'s operands, formatted by one residual call of the macro
    /// itself on the failing branch (where they are scalars or strings).
    pub(super) fn assert_macro(&mut self, mac: &syn::Macro, name: &str) -> LVal {
        let parsed = mac.parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated);
        let parts: Vec<Expr> = parsed.map(|p| p.into_iter().collect()).unwrap_or_default();
        let source = format!("{name}!({})", mac.tokens);
        match (name, parts.as_slice()) {
            ("assert", [c, rest @ ..]) => {
                let cv = self.cond(c);
                let (ok, fail) = self.branch(cv);
                self.resume(fail);
                let msg = if rest.is_empty() {
                    format!("assertion failed: {}", c.to_token_stream())
                } else {
                    self.format_op(mac, "panic", rest.iter().cloned(), vec![], vec![]);
                    source
                };
                self.abort(msg, mac.span());
                self.resume(ok);
            }
            ("assert_eq" | "assert_ne", [a, b, rest @ ..]) => {
                let va = self.expr(a);
                let va = self.rvalue(va, a);
                let vb = self.expr(b);
                let vb = self.rvalue(vb, b);
                let e: Expr = if name == "assert_eq" {
                    syn::parse_quote_spanned!(mac.span()=> __jitgen_left == __jitgen_right)
                } else {
                    syn::parse_quote_spanned!(mac.span()=> __jitgen_left != __jitgen_right)
                };
                let cv = self.desugared(vec![("__jitgen_left", va.clone()), ("__jitgen_right", vb.clone())], e);
                let cv = self.rvalue(cv, mac);
                let (ok, fail) = self.branch(cv);
                self.resume(fail);
                if self.shown_by_callback(&va) && self.shown_by_callback(&vb) {
                    self.format_op(mac, name, rest.iter().cloned(), vec![va, vb], vec![None, None]);
                }
                let op = if name == "assert_eq" { "==" } else { "!=" };
                self.abort(format!("assertion `left {op} right` failed"), mac.span());
                self.resume(ok);
            }
            _ => return self.unsupported(mac, &format!("this `{name}!`"), "give it a condition (or two operands)"),
        }
        LVal::Const(Const::Unit)
    }

    /// Whether `v` is a value a residual call formats as Rust would: a
    /// scalar or a string.
    fn shown_by_callback(&mut self, v: &LVal) -> bool {
        let t = self.u.shallow(&self.ty_of(v));
        t.is_scalar()
            || self.u.is_intlike(&t)
            || t == Ty::Str
            || matches!(&t, Ty::Ref { to, .. } if matches!(self.u.shallow(to), Ty::Str | Ty::Text))
    }

    /// `println!("{} {x}", a)` (and `print!`, `eprint!`, `eprintln!`), or
    /// with `has_dest` `write!(out, "{}", x)` and `writeln!` into a `Vec<u8>`
    /// (a field, a local, or behind a `&mut`), given first: its arguments
    /// evaluated in order (captured names `{x}` last), then one residual
    /// effect that formats them. Writing into a `Vec` cannot fail, so its
    /// `io::Result` is `Ok(())`: `.unwrap()`, `.expect(..)`, `?`, `let _ =`
    /// and a statement all take the write alone (see `is_write_macro`).
    pub(super) fn formatted(&mut self, mac: &syn::Macro, name: &str, has_dest: bool) -> LVal {
        let parsed = mac.parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated);
        let Ok(parts) = parsed else {
            return self.unsupported(
                mac,
                &format!("this `{name}!`"),
                "write a format string literal, then the arguments",
            );
        };
        let mut parts = parts.into_iter();
        let mut args = vec![];
        let mut names = vec![];
        if has_dest {
            let Some(dest) = parts.next() else {
                return self.unsupported(mac, &format!("this `{name}!`"), "name the `Vec<u8>` to write into first");
            };
            // `write!(v, ..)` borrows `v` mutably, unless it is a `&mut`.
            let d = self.expr(&dest);
            let d = self.rvalue(d, &dest);
            let d = match self.u.shallow(&self.ty_of(&d)) {
                Ty::Ref { mutable: true, .. } => d,
                // A `String` computed with effects (`names[next()]`): the
                // object read once, borrowed by name, not computed again.
                Ty::Str if !effect_free(&dest) => {
                    let e: Expr = syn::parse_quote_spanned!(dest.span()=> &mut (__jitgen_dest));
                    self.env.push(("__jitgen_dest".to_string(), d));
                    let d = self.expr(&e);
                    let d = self.rvalue(d, &e);
                    self.env.pop();
                    d
                }
                _ if !effect_free(&dest) => {
                    return self.unsupported(
                        &dest,
                        &format!("`{name}!` into a destination computed with effects"),
                        "bind the destination to a variable first",
                    );
                }
                _ => {
                    let e: Expr = syn::parse_quote_spanned!(dest.span()=> &mut (#dest));
                    let d = self.expr(&e);
                    self.rvalue(d, &e)
                }
            };
            let want = Ty::Ref { mutable: true, to: Box::new(Ty::Vec(Box::new(Ty::Int(IntTy::U8)))) };
            let have = self.ty_of(&d);
            let into_string = matches!(self.u.shallow(&have), Ty::Ref { to, .. } if self.u.shallow(&to) == Ty::Str);
            if !into_string && self.u.unify(&want, &have).is_err() {
                return self.unsupported(
                    &dest,
                    &format!("`{name}!` into this destination"),
                    "write into a `Vec<u8>` or a `String` (an `io::Write` is not supported)",
                );
            }
            args.push(d);
            names.push(None);
        }
        self.format_op(mac, name, parts, args, names)
    }

    /// The rest of a formatting macro `name!` (its format string, then its
    /// arguments) after the values `args` (named `names`) that come first:
    /// one residual effect formatting them, a `String` for `format!`.
    fn format_op(
        &mut self,
        mac: &syn::Macro,
        name: &str,
        mut parts: impl Iterator<Item = Expr>,
        mut args: Vec<LVal>,
        mut names: Vec<Option<String>>,
    ) -> LVal {
        let template = match parts.next() {
            None => String::new(),
            Some(Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. })) => s.value(),
            Some(other) => {
                return self.unsupported(&other, "a format string that is not a literal", "write the string literally");
            }
        };
        for p in parts {
            let (n, e) = match p {
                Expr::Assign(a) => match &*a.left {
                    Expr::Path(path) if path.path.get_ident().is_some() => {
                        (path.path.get_ident().map(|i| i.to_string()), (*a.right).clone())
                    }
                    _ => (None, Expr::Assign(a)),
                },
                e => (None, e),
            };
            let v = self.expr(&e);
            let v = self.rvalue(v, &e);
            args.push(v);
            names.push(n);
        }
        // Names the format string captures from the scope: `{x}`, `{x:?}`,
        // and widths or precisions `{:w$}`.
        for id in captured_names(&template) {
            if names.iter().any(|n| n.as_deref() == Some(id.as_str())) {
                continue;
            }
            let Ok(ident) = syn::parse_str::<syn::Ident>(&id) else { continue };
            let e: Expr = syn::parse_quote_spanned!(mac.delimiter.span().open()=> #ident);
            let v = self.expr(&e);
            let v = self.rvalue(v, &e);
            args.push(v);
            names.push(Some(id));
        }
        let ty = if name == "format" { Ty::Str } else { Ty::Unit };
        self.emit(OpKind::Format { mac: name.to_string(), template, names }, args, ty, mac)
    }

    pub(super) fn hint(&mut self, mac: &syn::Macro) -> LVal {
        let parsed = mac.parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated);
        let args = match parsed {
            Ok(a) => a,
            Err(e) => {
                self.errors.push(e);
                return self.poison(mac.span());
            }
        };
        let flag_of = |e: &Expr| match e {
            Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
            _ => None,
        };
        match args.len() {
            1 if flag_of(&args[0]).as_deref() == Some("global_merge_point") => {
                // A `&mut` binding in scope here would borrow what the portal
                // hands to compiled code at this point.
                let refs: Vec<String> = self
                    .env
                    .iter()
                    .filter(|(n, v)| matches!(v, LVal::Ref(_) | LVal::Sum { .. }) && !n.starts_with("__jitgen"))
                    .map(|(n, _)| format!("`{n}`"))
                    .collect();
                if !refs.is_empty() {
                    self.error(
                        mac.span(),
                        format!(
                            "the `&mut` reference {} is in scope at `hint!(global_merge_point)`: take it inside the loop, after the merge point, where it is used",
                            refs.join(", ")
                        ),
                    );
                }
                self.emit(OpKind::GlobalMergePoint, vec![], Ty::Unit, mac)
            }
            2 => {
                let kind = match flag_of(&args[1]).as_deref() {
                    Some("concrete") => HintKind::Concrete,
                    Some("promote") => HintKind::Promote,
                    Some("deepfreeze") => HintKind::Deepfreeze,
                    Some("variable") => HintKind::Variable,
                    _ => {
                        let msg = format!("unknown hint `{}`: expected one of {FLAGS}", source_of(&args[1]));
                        self.error(args[1].span(), msg);
                        return self.expr(&args[0]);
                    }
                };
                let v = self.expr(&args[0]);
                let t = self.ty_of(&v);
                if kind == HintKind::Promote {
                    if let Some(e) = self.promoted_enum(&v, mac) {
                        return e;
                    }
                }
                self.emit(OpKind::Hint(kind), vec![v], t, mac)
            }
            _ => {
                self.error(mac.span(), format!("`hint!` takes an expression and a flag: {FLAGS}"));
                self.poison(mac.span())
            }
        }
    }

    /// The statement `hint!(x, promote);` of a local `x` holding a value,
    /// whose value `promoted` is: from here on, `x` is the promoted value,
    /// as after `x = hint!(x, promote);` (the statement means what it says;
    /// its value is discarded). `let y = hint!(x, promote)` leaves `x` as
    /// it was: a promotion is local.
    pub(super) fn promote_statement(&mut self, mac: &syn::Macro, promoted: &LVal) {
        if !mac.path.is_ident("hint") {
            return;
        }
        let Ok(args) = mac.parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated) else { return };
        if args.len() != 2 || !matches!(&args[1], Expr::Path(p) if p.path.is_ident("promote")) {
            return;
        }
        let Expr::Path(p) = &args[0] else { return };
        let Some(name) = p.path.get_ident().map(|i| i.to_string()) else { return };
        let Some(i) = self.lookup(&name) else { return };
        if !matches!(self.env[i].1, LVal::Var(_)) || matches!(self.u.shallow(&self.ty_of(promoted)), Ty::Struct(_)) {
            return;
        }
        self.write_place(Place::Local(i), promoted.clone(), &args[0]);
    }

    /// `hint!(e, promote)` of a fieldless enum of the module: its tag
    /// promoted (a flexswitch switches on one word), and the variant that
    /// tag names, known while compiling (`concrete`: its branches test the
    /// promoted tag). `None` for other values. Payloads could be promoted
    /// in turn, but a switch per operand at every turn of a loop whose
    /// program is not green ran 2x slower than the interpreter
    /// (PERFORMANCE.md): such an enum stays red, and the compilation that
    /// needs it known declines.
    fn promoted_enum(&mut self, v: &LVal, mac: &syn::Macro) -> Option<LVal> {
        let v = self.rvalue(v.clone(), mac);
        let Ty::Enum(name) = self.u.shallow(&self.ty_of(&v)) else { return None };
        let def = self.m.enums.get(&name)?;
        if def.variants.is_empty() || def.variants.iter().any(|var| !var.fields.is_empty()) {
            return None;
        }
        let en = syn::Ident::new(&name, mac.span());
        let arms = def.variants.iter().enumerate().map(|(k, var)| {
            let (k, vn) = (k as u32, syn::Ident::new(&var.name, mac.span()));
            quote::quote!(#k => #en::#vn,)
        });
        let last = syn::Ident::new(&def.variants.last()?.name, mac.span());
        let tag = self.emit(OpKind::EnumTag, vec![v], Ty::Int(IntTy::U32), mac);
        let tag = self.emit(OpKind::Hint(HintKind::Promote), vec![tag], Ty::Int(IntTy::U32), mac);
        let e: Expr =
            syn::parse_quote_spanned!(mac.span()=> hint!(match __jitgen_tag { #(#arms)* _ => #en::#last }, concrete));
        Some(self.desugared(vec![("__jitgen_tag", tag)], e))
    }

    pub(super) fn vec_macro(&mut self, mac: &syn::Macro) -> LVal {
        struct Repeat(Expr, Expr);
        impl syn::parse::Parse for Repeat {
            fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
                let e: Expr = input.parse()?;
                input.parse::<Token![;]>()?;
                Ok(Repeat(e, input.parse()?))
            }
        }
        if let Ok(Repeat(elem, n)) = mac.parse_body::<Repeat>() {
            let v = self.expr(&elem);
            let c = self.expr(&n);
            let ct = self.ty_of(&c);
            self.unify(&Ty::Int(IntTy::Usize), &ct, n.span());
            let t = Ty::Vec(Box::new(self.ty_of(&v)));
            return self.emit(OpKind::NewVecRepeat, vec![v, c], t, mac);
        }
        match mac.parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated) {
            Ok(elems) => {
                let et = self.u.fresh();
                let mut args = vec![];
                for e in &elems {
                    let v = self.expr(e);
                    let t = self.ty_of(&v);
                    self.unify(&et, &t, e.span());
                    args.push(v);
                }
                self.emit(OpKind::NewVec, args, Ty::Vec(Box::new(et)), mac)
            }
            Err(e) => {
                self.errors.push(e);
                self.poison(mac.span())
            }
        }
    }

    // ----- control flow -----------------------------------------------------------

    pub(super) fn cond(&mut self, c: &Expr) -> LVal {
        let v = self.outlined_or_lowered(c, false);
        let v = self.rvalue(v, c);
        let t = self.ty_of(&v);
        self.unify(&Ty::Bool, &t, c.span());
        v
    }
}

/// A string literal as a format string that writes it as it is.
pub(super) fn escaped_template(l: &syn::LitStr) -> syn::LitStr {
    syn::LitStr::new(&l.value().replace('{', "{{").replace('}', "}}"), l.span())
}

/// The string literal `e` is, if it is one.
pub(super) fn str_lit(e: &Expr) -> Option<&syn::LitStr> {
    match e {
        Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(l), .. }) => Some(l),
        Expr::Paren(p) => str_lit(&p.expr),
        _ => None,
    }
}

/// `dest.push_str(arg)` as a `write!` into `dest`: a literal becomes the
/// format string, `&format!(..)` and `&x.to_string()` write without making
/// the intermediate `String`, anything else is formatted with `{}`.
pub(super) fn appended(dest: &Expr, arg: &Expr) -> Expr {
    if let Some(l) = str_lit(arg) {
        let t = escaped_template(l);
        return syn::parse_quote_spanned!(arg.span()=> write!(#dest, #t));
    }
    if let Expr::Reference(r) = arg {
        match &*r.expr {
            Expr::Macro(m) if m.mac.path.is_ident("format") => {
                let tokens = &m.mac.tokens;
                return syn::parse_quote_spanned!(arg.span()=> write!(#dest, #tokens));
            }
            Expr::MethodCall(mc) if mc.method == "to_string" && mc.args.is_empty() => {
                let x = &mc.receiver;
                return match str_lit(x) {
                    Some(l) => {
                        let t = escaped_template(l);
                        syn::parse_quote_spanned!(arg.span()=> write!(#dest, #t))
                    }
                    None => syn::parse_quote_spanned!(arg.span()=> write!(#dest, "{}", #x)),
                };
            }
            _ => {}
        }
    }
    syn::parse_quote_spanned!(arg.span()=> write!(#dest, "{}", #arg))
}

/// Whether `e` is `write!(..)` or `writeln!(..)`.
pub(super) fn is_write_macro(e: &Expr) -> bool {
    matches!(e, Expr::Macro(m) if m.mac.path.is_ident("write") || m.mac.path.is_ident("writeln"))
}

/// Whether `e` names a place that can be named again with no effect: a
/// binding, or fields of one.
/// Whether evaluating `e` twice does what evaluating it once does: names,
/// literals, fields, elements, casts and operators of such (no call, no
/// macro, no assignment), where a lowering that names an expression again
/// may do so.
pub(super) fn effect_free(e: &Expr) -> bool {
    match e {
        Expr::Path(_) | Expr::Lit(_) => true,
        Expr::Field(f) => effect_free(&f.base),
        Expr::Paren(p) => effect_free(&p.expr),
        Expr::Group(g) => effect_free(&g.expr),
        Expr::Unary(u) => effect_free(&u.expr),
        Expr::Reference(r) => effect_free(&r.expr),
        Expr::Cast(c) => effect_free(&c.expr),
        Expr::Index(i) => effect_free(&i.expr) && effect_free(&i.index),
        Expr::Binary(b) => {
            Lowering::binop(&b.op).is_some_and(|(_, assign)| !assign) && effect_free(&b.left) && effect_free(&b.right)
        }
        _ => false,
    }
}

pub(super) fn pure_place(e: &Expr) -> bool {
    match e {
        Expr::Path(p) => p.path.get_ident().is_some(),
        Expr::Field(f) => pure_place(&f.base),
        Expr::Paren(p) => pure_place(&p.expr),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => pure_place(&u.expr),
        _ => false,
    }
}

/// The names a format string takes from the scope, in order of first use:
/// `{x}`, `{x:?}`, and `w` in `{:w$}` or `{:.w$}`.
pub(super) fn captured_names(template: &str) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    let is_start = |c: char| c.is_alphabetic() || c == '_';
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        if rest[open + 1..].starts_with('{') {
            rest = &rest[open + 2..];
            continue;
        }
        let Some(close) = rest[open..].find('}') else { break };
        let spec = &rest[open + 1..open + close];
        let (arg, fmt) = spec.split_once(':').unwrap_or((spec, ""));
        let mut found = vec![];
        if arg.starts_with(is_start) {
            found.push(arg.trim().to_string());
        }
        for piece in fmt.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$')) {
            if let Some(name) = piece.strip_suffix('$') {
                if name.starts_with(is_start) {
                    found.push(name.to_string());
                }
            }
        }
        for n in found {
            if !out.contains(&n) {
                out.push(n);
            }
        }
        rest = &rest[open + close + 1..];
    }
    out
}

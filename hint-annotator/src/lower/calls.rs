//! Lowering calls: functions of the module (inlined where they must be),
//! struct literals and constructors, methods of the module and of the
//! standard library, `?`, and the methods of `Option`, `Result` and `String`.

#[allow(unused_imports)]
use super::*;

impl<'m, 'a> Lowering<'m, 'a> {
    /// Lowers the body of `f` in place of a call, its parameters bound to
    /// `args`; its `return`s continue after the call.
    pub(super) fn inline_call(&mut self, f: &'m FnDef<'a>, args: Vec<LVal>, src: &dyn ToTokens) -> LVal {
        let span = span_of(src);
        if self.inlines.iter().any(|(n, _)| *n == f.name) {
            let msg = format!(
                "`{}` takes or returns a `&mut` to a value or a tuple, and calls itself: jitgen resolves those where the function is called, which recursion prevents; pass the containing struct or Vec, or a struct of the module, instead",
                f.name
            );
            self.error(span, msg);
            return self.poison(span);
        }
        let saved_f = std::mem::replace(&mut self.f, f);
        let saved_loops = std::mem::take(&mut self.loops);
        let depth = self.env.len();
        let join = self.new_join(depth, Some(f.ret.clone()));
        self.inlines.push((f.name.clone(), join));
        for (p, a) in f.params.iter().zip(args) {
            self.env.push((p.name.clone(), a));
        }
        let (body, expansion_errors) = crate::resolve::resolve_body(self.m, f.body);
        self.errors.extend(expansion_errors);
        let v = self.block(&body);
        if self.cur.is_some() {
            let t = self.ty_of(&v);
            let ret = f.ret.clone();
            self.unify(&ret, &t, span);
            self.jump(join, Some(v));
        }
        self.env.truncate(depth);
        self.inlines.pop();
        self.f = saved_f;
        self.loops = saved_loops;
        match self.enter(join) {
            Some(v) => v,
            None => self.never(span),
        }
    }

    /// The arguments of a call of `name`, type-checked and read through
    /// references where the parameter takes a value.
    pub(super) fn checked_args(
        &mut self,
        name: &str,
        params: &[Ty],
        mut args: Vec<LVal>,
        arg_exprs: &[&Expr],
        src: &dyn ToTokens,
    ) -> Option<Vec<LVal>> {
        let span = span_of(src);
        if params.len() != args.len() {
            let msg = format!("`{name}` takes {} arguments, {} given", params.len(), args.len());
            self.error(span, msg);
            return None;
        }
        let receiver_offset = params.len() - arg_exprs.len();
        for (i, p) in params.iter().enumerate() {
            let at = arg_exprs.get(i.wrapping_sub(receiver_offset)).map_or(span, |e| e.span());
            // Auto-referencing of receivers and `&`/`&mut` coercions: compare
            // what is behind references.
            if i < receiver_offset {
                continue;
            }
            if let (LVal::Ref(r), Ty::Ref { mutable: true, to }) = (&args[i], p) {
                let t = self.ref_ty(r);
                self.unify(to, &t, at);
                continue;
            }
            if !self.u.shallow(p).is_pointer() {
                args[i] = self.rvalue(args[i].clone(), src);
            }
            let mut have = self.ty_of(&args[i]);
            // Deref coercion: `&Box<T>` passed for `&T` (the same address:
            // a box's value is the address of what it holds).
            if let (Ty::Ref { to: want_to, .. }, Ty::Ref { to: have_to, mutable }) = (p, self.u.shallow(&have)) {
                if let (Ty::Boxed(inner), false) =
                    (self.u.shallow(&have_to), matches!(self.u.shallow(want_to), Ty::Boxed(_)))
                {
                    let t = Ty::Ref { mutable, to: inner };
                    args[i] = self.emit(OpKind::SameAs, vec![args[i].clone()], t.clone(), src);
                    have = t;
                }
            }
            // Deref coercion: `&Vec<T>` passed for `&[T]` (its elements).
            if let (Ty::Ref { to: want_to, .. }, Ty::Ref { to: have_to, mutable }) = (p, self.u.shallow(&have)) {
                if let (Ty::Vec(elem), Ty::Slice(_)) = (self.u.shallow(&have_to), self.u.shallow(want_to)) {
                    let t = Ty::Ref { mutable, to: Box::new(Ty::Slice(elem)) };
                    args[i] = self.emit(OpKind::SameAs, vec![args[i].clone()], t.clone(), src);
                    have = t;
                }
            }
            let (want, have) = match (p, self.u.shallow(&have)) {
                (Ty::Ref { .. }, Ty::Ref { .. }) | (Ty::Ref { .. }, Ty::Infer(_)) => (p.clone(), have),
                (Ty::Ref { to, .. }, h) => ((**to).clone(), h),
                _ => (p.clone(), have),
            };
            self.unify(&want, &have, at);
        }
        Some(args)
    }

    /// Unifies `t` with the type a constructor's path names by its
    /// turbofish (`Vec::<Frame>::new()`, also what an alias resolves to).
    pub(super) fn turbofish(&mut self, path: &syn::Path, t: &Ty) {
        let first = &path.segments[0];
        let syn::PathArguments::AngleBracketed(args) = &first.arguments else { return };
        let mut args = args.clone();
        args.colon2_token = None;
        let ident = &first.ident;
        let named: syn::Type = syn::parse_quote_spanned!(first.ident.span()=> #ident #args);
        match self.m.ty(&named, self.f.self_ty.as_deref()) {
            Ok(named) => self.unify(&named, t, path.span()),
            Err(e) => self.errors.push(e),
        }
    }

    pub(super) fn call(&mut self, c: &syn::ExprCall) -> LVal {
        if !matches!(&*c.func, Expr::Path(_)) {
            // A function value: callable when it is an opaque object (a
            // boxed closure in a field), as a residual call of it.
            let f = self.expr(&c.func);
            let f = match f {
                r @ LVal::Ref(_) => self.rvalue(r, &*c.func),
                v => v,
            };
            if let Ty::Foreign(_) = self.deref_ty(&self.ty_of(&f)) {
                let mut args = vec![f];
                let shape = self.by_reference(&c.args, &mut args);
                let t = self.u.fresh();
                return self.emit(OpKind::CallOpaque(format!(".({shape})")), args, t, c);
            }
        }
        let Expr::Path(p) = &*c.func else {
            return self.unsupported(
                &c.func,
                "calling a computed function value",
                "call a function of the module by name",
            );
        };
        let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
        let arg_exprs: Vec<&Expr> = c.args.iter().collect();
        if segs.len() == 1 {
            let name = &segs[0];
            if self.m.fns.contains_key(name) {
                let args = self.args(&c.args);
                return self.call_fn(name, args, &arg_exprs, c);
            }
            match name.as_str() {
                "Some" | "Ok" | "Err" if c.args.len() == 1 => {
                    let a = self.expr(&c.args[0]);
                    let ta = self.ty_of(&a);
                    if let LVal::Ref(_) = a {
                        // An `Option`/`Result` of a `&mut`: a sum of places.
                        let (ty, en, idx, payloads) = match name.as_str() {
                            "Some" => (Ty::Option(Box::new(ta)), "Option", 1, vec![None, Some(a)]),
                            "Ok" => {
                                (Ty::Result(Box::new(ta), Box::new(self.u.fresh())), "Result", 0, vec![Some(a), None])
                            }
                            _ => (Ty::Result(Box::new(self.u.fresh()), Box::new(ta)), "Result", 1, vec![None, Some(a)]),
                        };
                        let tag = LVal::Const(Const::Tag { enum_name: en.into(), variant: name.clone(), index: idx });
                        return LVal::Sum { ty, tag: Box::new(tag), payloads };
                    }
                    let (t, en, idx) = match name.as_str() {
                        "Some" => (Ty::Option(Box::new(ta)), "Option", 1),
                        "Ok" => (Ty::Result(Box::new(ta), Box::new(self.u.fresh())), "Result", 0),
                        _ => (Ty::Result(Box::new(self.u.fresh()), Box::new(ta)), "Result", 1),
                    };
                    return self.emit(
                        OpKind::MakeEnum { enum_name: en.into(), variant: name.clone(), index: idx },
                        vec![a],
                        t,
                        c,
                    );
                }
                _ => {}
            }
            if let Some(sd) = self.m.structs.get(name) {
                let fields: Vec<Ty> = sd.fields.values().cloned().collect();
                return self.construct_struct(name.clone(), fields, c.args.iter().collect(), c);
            }
        }
        if segs.len() == 2 {
            let ty_name = self.resolve_self(&segs[0]);
            let last = &segs[1];
            let qualified = format!("{ty_name}::{last}");
            if self.m.fns.contains_key(&qualified) {
                let args = self.args(&c.args);
                return self.call_fn(&qualified, args, &arg_exprs, c);
            }
            if let Some((idx, fields)) = self.variant(&ty_name, last) {
                if fields.len() != c.args.len() {
                    return self.unsupported(
                        c,
                        &format!("`{qualified}` with {} payload values (it has {})", c.args.len(), fields.len()),
                        "",
                    );
                }
                let mut args = vec![];
                for ((_, ft), a) in fields.iter().zip(&c.args) {
                    let v = self.expr(a);
                    let t = self.ty_of(&v);
                    self.unify(ft, &t, a.span());
                    args.push(v);
                }
                return self.emit(
                    OpKind::MakeEnum { enum_name: ty_name.clone(), variant: last.clone(), index: idx },
                    args,
                    Ty::Enum(ty_name),
                    c,
                );
            }
            if let (Some(t), "from", 1) = (super::operators::number_ty(&segs[0]), last.as_str(), c.args.len()) {
                // `From` of a number, a bool or a char (the lossless impls
                // of the standard library): a cast. A module's `impl
                // From<Op> for i64` is not one.
                let x = self.expr(&c.args[0]);
                let x = self.rvalue(x, &c.args[0]);
                let have = self.u.shallow(&self.ty_of(&x));
                if have.is_scalar() || self.u.is_intlike(&have) {
                    return self.emit(OpKind::Cast, vec![x], t, c);
                }
                return self.unsupported(c, &format!("calling `{}`", segs.join("::")), "write an `as` cast");
            }
            if let Some(e) = super::operators::from_bytes(&segs[0], last, c) {
                return self.expr(&e);
            }
            if let Some(v) = self.number_method_by_path(&segs[0], &p.path.segments[1].ident, c) {
                return v;
            }
            match (segs[0].as_str(), last.as_str(), c.args.len()) {
                ("Vec", "new", 0) | ("Vec", "with_capacity", 1) => {
                    // The capacity is only a hint to the allocator.
                    if let Some(a) = c.args.first() {
                        self.expr(a);
                    }
                    let t = Ty::Vec(Box::new(self.u.fresh()));
                    self.turbofish(&p.path, &t);
                    return self.emit(OpKind::NewVec, vec![], t, c);
                }
                ("String", "new", 0) => {
                    return self.emit(OpKind::CallOpaque("std::string::String::new".into()), vec![], Ty::Str, c);
                }
                ("String", "with_capacity", 1) => {
                    let n = self.expr(&c.args[0]);
                    let n = self.rvalue(n, &c.args[0]);
                    let nt = self.ty_of(&n);
                    self.unify(&Ty::Int(IntTy::Usize), &nt, c.args[0].span());
                    let f = OpKind::CallOpaque("std::string::String::with_capacity".into());
                    return self.emit(f, vec![n], Ty::Str, c);
                }
                ("String", "from", 1) => {
                    let a = &c.args[0];
                    let e: Expr = match str_lit(a) {
                        Some(l) => {
                            let t = escaped_template(l);
                            syn::parse_quote_spanned!(c.span()=> format!(#t))
                        }
                        None => syn::parse_quote_spanned!(c.span()=> format!("{}", #a)),
                    };
                    return self.expr(&e);
                }
                ("HashMap", "new", 0) => {
                    let t = Ty::Map(Box::new(self.u.fresh()), Box::new(self.u.fresh()));
                    self.turbofish(&p.path, &t);
                    return self.emit(OpKind::NewMap, vec![], t, c);
                }
                ("Box", "new", 1) => {
                    let v = self.expr(&c.args[0]);
                    let t = Ty::Boxed(Box::new(self.ty_of(&v)));
                    self.turbofish(&p.path, &t);
                    return self.emit(OpKind::NewBox, vec![v], t, c);
                }
                _ => {}
            }
        }
        if segs.ends_with(&["From".to_string(), "from".to_string()]) && c.args.len() == 1 {
            return self.from_conversion(c);
        }
        // (`jitgen`: the split's own calls, `jitgen-macros`' `split.rs`.)
        if matches!(segs.first().map(String::as_str), Some("super" | "crate" | "std" | "core" | "jitgen"))
            || segs.len() == 1
        {
            // A function outside the module: a residual call whose result type
            // comes from the context.
            let args = self.args(&c.args);
            let t = self.u.fresh();
            match segs.as_slice() {
                [.., m, f] if m == "mem" && (f == "take" || f == "replace") => {
                    // `mem::take(&mut x)`, `mem::replace(&mut x, y)`: a value of x's type.
                    if let Some(Ty::Ref { to, .. }) = args.first().map(|a| self.u.shallow(&self.ty_of(a))) {
                        self.unify(&t, &to, c.span());
                    }
                }
                [.., m, f] if m == "mem" && f == "swap" => self.unify(&t, &Ty::Unit, c.span()),
                _ => {}
            }
            // The prelude's `drop` is no item of the module.
            let path = if segs == ["drop"] { "std::mem::drop".to_string() } else { segs.join("::") };
            return self.emit(OpKind::CallOpaque(path), args, t, c);
        }
        if let Some(v) = self.foreign_path_call(c, &segs) {
            return v;
        }
        let instead = if matches!(segs.first().map(String::as_str), Some("String" | "str")) {
            STRING_ADVICE
        } else {
            "call functions and methods of the module, or a function outside it through `super::`"
        };
        self.unsupported(c, &format!("calling `{}`", segs.join("::")), instead)
    }

    pub(super) fn construct_struct(
        &mut self,
        name: String,
        field_tys: Vec<Ty>,
        values: Vec<&Expr>,
        src: &dyn ToTokens,
    ) -> LVal {
        let mut args = vec![];
        for (ft, e) in field_tys.iter().zip(values) {
            let v = self.value_of(e);
            let t = self.ty_of(&v);
            self.unify(ft, &t, e.span());
            args.push(v);
        }
        self.emit(OpKind::NewStruct(name.clone()), args, Ty::Struct(name), src)
    }

    pub(super) fn struct_lit(&mut self, s: &syn::ExprStruct) -> LVal {
        if let Some(r) = &s.rest {
            return self.unsupported(r, "struct update syntax (`..base`)", "list every field");
        }
        let segs: Vec<String> = s.path.segments.iter().map(|x| x.ident.to_string()).collect();
        let given: HashMap<String, &Expr> = s
            .fields
            .iter()
            .map(|fv| {
                let n = match &fv.member {
                    syn::Member::Named(i) => i.to_string(),
                    syn::Member::Unnamed(i) => i.index.to_string(),
                };
                (n, &fv.expr)
            })
            .collect();
        let (fields, make): (Vec<(String, Ty)>, Box<dyn Fn(Vec<LVal>) -> (OpKind, Ty)>) = if segs.len() == 1 {
            let name = self.resolve_self(&segs[0]);
            match self.m.structs.get(&name) {
                Some(sd) => {
                    let n2 = name.clone();
                    (
                        sd.fields.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                        Box::new(move |_| (OpKind::NewStruct(n2.clone()), Ty::Struct(n2.clone()))),
                    )
                }
                None => {
                    return self.unsupported(&s.path, &format!("the struct `{name}` (not defined in the module)"), "")
                }
            }
        } else {
            let en = self.resolve_self(&segs[segs.len() - 2]);
            let vn = segs[segs.len() - 1].clone();
            match self.variant(&en, &vn) {
                Some((idx, fields)) => (
                    fields,
                    Box::new(move |_| {
                        (
                            OpKind::MakeEnum { enum_name: en.clone(), variant: vn.clone(), index: idx },
                            Ty::Enum(en.clone()),
                        )
                    }),
                ),
                None => return self.unsupported(&s.path, "this struct path", ""),
            }
        };
        let mut args = vec![];
        for (fname, ft) in &fields {
            match given.get(fname) {
                Some(e) => {
                    let v = self.expr(e);
                    let t = self.ty_of(&v);
                    self.unify(ft, &t, e.span());
                    args.push(v);
                }
                None => {
                    self.error(s.path.span(), format!("missing field `{fname}`"));
                    args.push(self.poison(s.span()));
                }
            }
        }
        let (kind, ty) = make(args.clone());
        self.emit(kind, args, ty, s)
    }

    /// Lowers `e` with the given temporaries in scope (the values of a
    /// desugared call's receiver and arguments, evaluated once, in order).
    pub(super) fn desugared(&mut self, temps: Vec<(&str, LVal)>, e: Expr) -> LVal {
        let n = temps.len();
        for (name, v) in temps {
            self.env.push((name.to_string(), v));
        }
        let r = self.expr(&e);
        self.env.truncate(self.env.len() - n);
        r
    }

    /// Methods of the standard library that are written in terms of what
    /// the analysis knows (see `std_methods`): `Vec` and slice accessors and
    /// edits, and the `Option`/`Result` combinators with their closures
    /// inlined. `None` when `method` is not one of them.
    pub(super) fn std_method(&mut self, mc: &syn::ExprMethodCall, recv: &LVal, recv_ty: &Ty) -> Option<LVal> {
        let method = mc.method.to_string();
        let nargs = mc.args.len();
        let r = &*mc.receiver;
        if let ("into" | "try_into", 0) = (method.as_str(), nargs) {
            if let Some(v) = self.conversion(mc, recv, recv_ty) {
                return Some(v);
            }
        }
        if let (Ty::Struct(s), "clone", 0) = (recv_ty, method.as_str(), nargs) {
            // A derived clone of a struct of values: a copy.
            if self.m.structs.get(s.as_str()).is_some_and(|d| d.clone) && self.copyable(s, 0) {
                let recv = self.rvalue(recv.clone(), mc);
                return Some(self.copy_struct(recv, s, mc));
            }
            // A derived clone of a struct owning what the analysis does not
            // model (an `Rc`, a map): Rust's own clone, one residual call on
            // the struct's address, giving a new object that compiled code
            // owns (in its arena) and reaches by address.
            if self.m.structs.get(s.as_str()).is_some_and(|d| d.clone && d.lifetimes == 0) {
                let recv = self.rvalue(recv.clone(), mc);
                let t = Ty::Struct(s.clone());
                return Some(self.emit(OpKind::CallOpaque(".clone()".into()), vec![recv], t, mc));
            }
        }
        let is_list = matches!(recv_ty, Ty::Vec(_) | Ty::Slice(_) | Ty::Array(..));
        if is_list {
            return self.list_method(mc, recv, recv_ty);
        }
        let is_option = matches!(recv_ty, Ty::Option(_));
        if !is_option && !matches!(recv_ty, Ty::Result(..)) {
            return None;
        }
        // The combinators, as a `match` with the closure's body inlined
        // (its parameter pattern becomes the arm's): captures are the
        // bindings in scope.
        let apply = |f: &Expr, arg: Option<Expr>| -> Option<(Option<Pat>, Expr)> {
            match f {
                Expr::Closure(c) => {
                    if c.inputs.len() != usize::from(arg.is_some()) || c.asyncness.is_some() {
                        return None;
                    }
                    let pat = c.inputs.first().map(|p| match p {
                        Pat::Reference(r) => (*r.pat).clone(),
                        Pat::Type(t) => (*t.pat).clone(),
                        p => p.clone(),
                    });
                    Some((pat, (*c.body).clone()))
                }
                // A path (a function, an enum's constructor) is called as
                // written, so that a constructor builds its variant.
                Expr::Path(p) => Some((
                    None,
                    match arg {
                        Some(x) => syn::parse_quote!(#p(#x)),
                        None => syn::parse_quote!(#p()),
                    },
                )),
                f => Some((
                    None,
                    match arg {
                        Some(x) => syn::parse_quote!((#f)(#x)),
                        None => syn::parse_quote!((#f)()),
                    },
                )),
            }
        };
        let some = if is_option { quote::quote!(Some) } else { quote::quote!(Ok) };
        let none: Pat = if is_option { syn::parse_quote!(None) } else { syn::parse_quote!(Err(__jitgen_e)) };
        let arm = |f: &Expr, wrap: bool| -> Option<(Pat, Expr)> {
            let x: Expr = syn::parse_quote!(__jitgen_x);
            let (pat, body) = apply(f, Some(x))?;
            let pat = pat.unwrap_or_else(|| syn::parse_quote!(__jitgen_x));
            let body = if wrap { syn::parse_quote!(#some(#body)) } else { body };
            Some((syn::parse_quote!(#some(#pat)), body))
        };
        let otherwise = |f: &Expr| -> Option<Expr> {
            if is_option {
                Some(apply(f, None)?.1)
            } else {
                let e: Expr = syn::parse_quote!(__jitgen_e);
                let (pat, body) = apply(f, Some(e))?;
                Some(match pat {
                    Some(p) => syn::parse_quote!({ let #p = __jitgen_e; #body }),
                    None => body,
                })
            }
        };
        let bad = |me: &mut Self| {
            Some(me.unsupported(
                mc,
                &format!("this argument of `.{method}()`"),
                "pass a closure literal or the name of a function",
            ))
        };
        let e: Expr = match (method.as_str(), nargs) {
            ("map", 1) => {
                let Some((p, b)) = arm(&mc.args[0], true) else { return bad(self) };
                let n: Expr = if is_option { syn::parse_quote!(None) } else { syn::parse_quote!(Err(__jitgen_e)) };
                syn::parse_quote!(match __jitgen_recv { #p => #b, #none => #n })
            }
            ("and_then", 1) => {
                let Some((p, b)) = arm(&mc.args[0], false) else { return bad(self) };
                let n: Expr = if is_option { syn::parse_quote!(None) } else { syn::parse_quote!(Err(__jitgen_e)) };
                syn::parse_quote!(match __jitgen_recv { #p => #b, #none => #n })
            }
            ("map_or", 2) => {
                let Some((p, b)) = arm(&mc.args[1], false) else { return bad(self) };
                let d = self.expr(&mc.args[0]);
                let d = self.rvalue(d, &mc.args[0]);
                let recv = self.rvalue(recv.clone(), r);
                let e = syn::parse_quote!(match __jitgen_recv { #p => #b, _ => __jitgen_d });
                return Some(self.desugared(vec![("__jitgen_recv", recv), ("__jitgen_d", d)], e));
            }
            ("map_err", 1) if !is_option => {
                let e: Expr = syn::parse_quote!(__jitgen_e);
                let Some((pat, body)) = apply(&mc.args[0], Some(e)) else { return bad(self) };
                let mapped: Expr = match pat {
                    Some(p) => syn::parse_quote!({ let #p = __jitgen_e; #body }),
                    None => body,
                };
                syn::parse_quote!(match __jitgen_recv { Ok(__jitgen_x) => Ok(__jitgen_x), Err(__jitgen_e) => Err(#mapped) })
            }
            ("is_some_and" | "is_ok_and" | "is_none_or", 1) => {
                let Some((p, b)) = arm(&mc.args[0], false) else { return bad(self) };
                let otherwise = method == "is_none_or";
                syn::parse_quote!(match __jitgen_recv { #p => #b, _ => #otherwise })
            }
            ("map_or_else", 2) => {
                let Some((p, b)) = arm(&mc.args[1], false) else { return bad(self) };
                let Some(d) = otherwise(&mc.args[0]) else { return bad(self) };
                syn::parse_quote!(match __jitgen_recv { #p => #b, #none => #d })
            }
            ("unwrap_or_else", 1) => {
                let Some(d) = otherwise(&mc.args[0]) else { return bad(self) };
                syn::parse_quote!(match __jitgen_recv { #some(__jitgen_x) => __jitgen_x, #none => #d })
            }
            ("ok_or_else", 1) if is_option => {
                let Some(d) = otherwise(&mc.args[0]) else { return bad(self) };
                syn::parse_quote!(match __jitgen_recv { Some(__jitgen_x) => Ok(__jitgen_x), None => Err(#d) })
            }
            ("unwrap_or_default", 0) => {
                let inner = match recv_ty {
                    Ty::Option(t) | Ty::Result(t, _) => self.u.shallow(t),
                    _ => return None,
                };
                let Some(d) = self.default_expr(&inner, mc.span()) else {
                    return Some(self.unsupported(mc, "`unwrap_or_default` on this type", "use `unwrap_or(..)`"));
                };
                syn::parse_quote!(match __jitgen_recv { #some(__jitgen_x) => __jitgen_x, _ => #d })
            }
            _ => return None,
        };
        let recv = self.rvalue(recv.clone(), r);
        Some(self.desugared(vec![("__jitgen_recv", recv)], e))
    }

    /// `From::from(e)` (what `?` applies to an error): the module's one impl
    /// converting e's type, else e itself (a conversion the analysis does
    /// not model is then a type error, left to Rust). Into the function's
    /// `Box<dyn Error>`, a residual call of Rust's own conversion
    /// ([`crate::flowgraph::BOX_FROM`]) where `e` is a `String` or an enum
    /// of the module (a `?` on `ok_or("text")`, on the module's error);
    /// of other values, a conversion the analysis does not model, which runs
    /// as Rust where outlined.
    fn from_conversion(&mut self, c: &syn::ExprCall) -> LVal {
        let x = self.expr(&c.args[0]);
        let x = self.rvalue(x, &c.args[0]);
        let have = self.u.shallow(&self.ty_of(&x));
        if let Some(name) = self.module_conversion("from", &have) {
            return self.call_fn(&name, vec![x], &[&c.args[0]], c);
        }
        // Into the error of the function the `?` leaves: an inlined
        // method's (its labeled loop's result), else the portal's.
        let into = match self.loops.iter().rev().find(|c| c.label.as_deref().is_some_and(|l| l.starts_with("__jit_m")))
        {
            Some(c) => c.result_ty.clone().unwrap_or_else(|| self.f.ret.clone()),
            None => self.f.ret.clone(),
        };
        if let Ty::Result(_, e) = self.u.shallow(&into) {
            if let Ty::Foreign(boxed) = self.u.shallow(&e) {
                let same = matches!(&have, Ty::Foreign(h) if *h == boxed);
                if crate::types::owned_opaque(&boxed) && !same {
                    if matches!(have, Ty::Str | Ty::Enum(_)) {
                        let call = OpKind::CallOpaque(crate::flowgraph::BOX_FROM.into());
                        return self.emit(call, vec![x], Ty::Foreign(boxed), c);
                    }
                    self.error(
                        c.span(),
                        format!("the conversion of this error into a `{boxed}` is not supported by jitgen's analysis"),
                    );
                    return self.poison(c.span());
                }
            }
        }
        self.emit(OpKind::SameAs, vec![x], have, c)
    }

    /// `x.into()` (`x.try_into()`) where one trait impl of the module
    /// converts values of `x`'s type (`impl From<u8> for Op`): a call of
    /// its `from` (`try_from`). Rust's own conversions (`u8` into `u64`)
    /// are not the module's: `None` then, as where two impls could apply.
    fn conversion(&mut self, mc: &syn::ExprMethodCall, recv: &LVal, recv_ty: &Ty) -> Option<LVal> {
        let from = if mc.method == "into" { "from" } else { "try_from" };
        let name = self.module_conversion(from, &self.u.shallow(recv_ty))?;
        let arg = self.rvalue(recv.clone(), &*mc.receiver);
        Some(self.call_fn(&name, vec![arg], &[&*mc.receiver], mc))
    }

    /// The one trait method `T::from` (or `T::try_from`, as `method` says)
    /// of the module taking a value of type `have`; `None` when there is
    /// none, or more than one.
    fn module_conversion(&self, method: &str, have: &Ty) -> Option<String> {
        let mut found = self.m.trait_methods.iter().filter(|n| {
            n.rsplit_once("::").is_some_and(|(_, m)| m == method)
                && self.m.fns.get(n.as_str()).is_some_and(|f| f.params.len() == 1 && f.params[0].ty == *have)
        });
        let name = found.next()?.clone();
        found.next().is_none().then_some(name)
    }

    /// `a.checked_add(b)` and its kin: the wrapping result, and a test of
    /// overflow (or of a zero divisor) written with wrapping operations.
    pub(super) fn checked_arith(&mut self, mc: &syn::ExprMethodCall, m: &str, recv: LVal) -> LVal {
        let b = self.expr(&mc.args[0]);
        let b = self.rvalue(b, &mc.args[0]);
        let (ta, tb) = (self.ty_of(&recv), self.ty_of(&b));
        self.unify(&ta, &tb, mc.args[0].span());
        let signed = match self.u.shallow(&ta) {
            Ty::Int(it) => it.signed(),
            _ => true,
        };
        // `a` is the minimum of a signed type: its own wrapping negation, not 0.
        let min = |x: &str| -> Expr {
            let x: syn::Ident = syn::parse_str(x).expect("an identifier");
            syn::parse_quote!((#x != 0 && #x.wrapping_neg() == #x))
        };
        let (min_a, min_b) = (min("__jitgen_a"), min("__jitgen_b"));
        let e: Expr = match (m, signed) {
            ("checked_add", false) => syn::parse_quote!({
                let __jitgen_s = __jitgen_a.wrapping_add(__jitgen_b);
                if __jitgen_s >= __jitgen_a {
                    Some(__jitgen_s)
                } else {
                    None
                }
            }),
            ("checked_add", true) => syn::parse_quote!({
                let __jitgen_s = __jitgen_a.wrapping_add(__jitgen_b);
                if (__jitgen_b >= 0) == (__jitgen_s >= __jitgen_a) {
                    Some(__jitgen_s)
                } else {
                    None
                }
            }),
            ("checked_sub", false) => syn::parse_quote!(if __jitgen_a >= __jitgen_b {
                Some(__jitgen_a.wrapping_sub(__jitgen_b))
            } else {
                None
            }),
            ("checked_sub", true) => syn::parse_quote!({
                let __jitgen_s = __jitgen_a.wrapping_sub(__jitgen_b);
                if (__jitgen_b >= 0) == (__jitgen_s <= __jitgen_a) {
                    Some(__jitgen_s)
                } else {
                    None
                }
            }),
            ("checked_mul", _) => {
                let min_overflow: Expr =
                    if signed { syn::parse_quote!((__jitgen_a == -1 && #min_b)) } else { syn::parse_quote!(false) };
                syn::parse_quote!(if __jitgen_a == 0 {
                    Some(0)
                } else {
                    let __jitgen_p = __jitgen_a.wrapping_mul(__jitgen_b);
                    if __jitgen_p.wrapping_div(__jitgen_a) == __jitgen_b && !#min_overflow { Some(__jitgen_p) } else { None }
                })
            }
            (_, _) => {
                let op: syn::Ident = syn::parse_str(if m == "checked_div" { "wrapping_div" } else { "wrapping_rem" })
                    .expect("an identifier");
                let min_overflow: Expr =
                    if signed { syn::parse_quote!((__jitgen_b == -1 && #min_a)) } else { syn::parse_quote!(false) };
                syn::parse_quote!(if __jitgen_b == 0 || #min_overflow { None } else { Some(__jitgen_a.#op(__jitgen_b)) })
            }
        };
        self.desugared(vec![("__jitgen_a", recv), ("__jitgen_b", b)], e)
    }

    /// `a.saturating_add(b)` and its kin on integers of type `it`: the
    /// checked operation, and where it overflows the bound it passed (the
    /// type's `MAX` or `MIN`, by the signs of the operands).
    fn saturating_arith(&mut self, mc: &syn::ExprMethodCall, m: &str, it: IntTy, recv: LVal) -> LVal {
        let checked = syn::Ident::new(&m.replace("saturating", "checked"), mc.method.span());
        let t = syn::Ident::new(it.name(), mc.method.span());
        let b = self.expr(&mc.args[0]);
        let b = self.rvalue(b, &mc.args[0]);
        let past: Expr = match m {
            "saturating_add" => syn::parse_quote!(if __jitgen_sb < 0 { #t::MIN } else { #t::MAX }),
            "saturating_sub" => syn::parse_quote!(if __jitgen_sb > 0 { #t::MIN } else { #t::MAX }),
            _ => syn::parse_quote!(if (__jitgen_sa < 0) != (__jitgen_sb < 0) { #t::MIN } else { #t::MAX }),
        };
        let e: Expr = syn::parse_quote_spanned!(mc.span()=> match __jitgen_sa.#checked(__jitgen_sb) {
            Some(__jitgen_v) => __jitgen_v,
            None => #past,
        });
        self.desugared(vec![("__jitgen_sa", recv), ("__jitgen_sb", b)], e)
    }

    /// `v.get_mut(i)`, `v.last_mut()`, `v.first_mut()` on a list of values:
    /// an `Option` of a `&mut` to the element, whose tag is the bounds test.
    pub(super) fn mut_accessor(&mut self, mc: &syn::ExprMethodCall, method: &str, elem: Ty) -> LVal {
        let Some((root, fields)) = self.heap_path(&mc.receiver) else { return self.poison(mc.span()) };
        let list = self.read_path(root.clone(), &fields, mc);
        let usize_ty = Ty::Int(IntTy::Usize);
        let len = self.emit(OpKind::Len, vec![list], usize_ty.clone(), mc);
        let zero = LVal::Const(Const::Int(0, IntTy::Usize));
        let (index, present) = match method {
            "get_mut" => {
                let i = self.expr(&mc.args[0]);
                let i = self.rvalue(i, &mc.args[0]);
                let it = self.ty_of(&i);
                self.unify(&usize_ty, &it, mc.args[0].span());
                let present = self.emit(OpKind::Bin(BinOp::Lt), vec![i.clone(), len], Ty::Bool, mc);
                (i, present)
            }
            _ => {
                let present = self.emit(OpKind::Bin(BinOp::Ne), vec![len.clone(), zero.clone()], Ty::Bool, mc);
                let i = if method == "last_mut" {
                    let one = LVal::Const(Const::Int(1, IntTy::Usize));
                    self.emit(OpKind::Bin(BinOp::WrappingSub), vec![len, one], usize_ty, mc)
                } else {
                    zero
                };
                (i, present)
            }
        };
        let r = RefTo::Heap { root, fields, index: Some(index), ty: elem.clone() };
        let tag = self.emit(OpKind::Cast, vec![present], Ty::Int(IntTy::U32), mc);
        let ty = Ty::Option(Box::new(Ty::Ref { mutable: true, to: Box::new(elem) }));
        LVal::Sum { ty, tag: Box::new(tag), payloads: vec![None, Some(LVal::Ref(Box::new(r)))] }
    }

    pub(super) fn method_call(&mut self, mc: &syn::ExprMethodCall) -> LVal {
        if let (Some(l), "to_string" | "to_owned" | "into", 0) =
            (str_lit(&mc.receiver), mc.method.to_string().as_str(), mc.args.len())
        {
            // `"text".to_string()`: a `String` with the literal's text.
            let t = escaped_template(l);
            return self.expr(&syn::parse_quote_spanned!(mc.span()=> format!(#t)));
        }
        if let (Some(l), "ok_or") = (mc.args.first().and_then(str_lit), mc.method.to_string().as_str()) {
            // `.ok_or("message")?` into a `String` error: the string made
            // only on the way to the error.
            let (r, t) = (&mc.receiver, escaped_template(l));
            return self.expr(&syn::parse_quote_spanned!(mc.span()=> (#r).ok_or_else(|| format!(#t))));
        }
        if is_write_macro(&mc.receiver) && matches!(mc.method.to_string().as_str(), "unwrap" | "expect") {
            // Writing into a `Vec<u8>` cannot fail (see `formatted`).
            return self.expr(&mc.receiver);
        }
        if let Some((Ty::Array(_, n), _)) = self.const_expr_of(&mc.receiver) {
            // A const table's `get` and `len` (see `const_table_read`).
            match (mc.method.to_string().as_str(), mc.args.len()) {
                ("get", 1) => return self.const_table_read(&mc.receiver, &mc.args[0], true, mc.span()),
                ("len", 0) => return LVal::Const(Const::Int(n as i128, IntTy::Usize)),
                _ => {}
            }
        }
        let recv = match self.expr(&mc.receiver) {
            LVal::Sum { ty, tag, payloads } => return self.sum_method(mc, ty, *tag, payloads),
            r @ LVal::Ref(_) => self.rvalue(r, &*mc.receiver),
            v => v,
        };
        self.method_call_on(mc, recv)
    }

    /// The method call `mc` on its receiver, lowered already (`recv`).
    pub(super) fn method_call_on(&mut self, mc: &syn::ExprMethodCall, recv: LVal) -> LVal {
        let method = mc.method.to_string();
        let recv_ty = self.deref_ty(&self.ty_of(&recv));
        let nargs = mc.args.len();
        if recv_ty == Ty::Str {
            return self.string_method(mc, recv);
        }
        if let Some(v) = self.map_method(mc, &recv, &recv_ty) {
            return v;
        }
        if let Ty::Foreign(_) = recv_ty {
            return self.object_method(mc, recv, &method);
        }
        // `ToString` of a number, or a module type's `Display`: `format!("{}", x)`.
        let display =
            matches!(&recv_ty, Ty::Enum(n) | Ty::Struct(n) if !self.m.fns.contains_key(&format!("{n}::to_string")));
        if method == "to_string" && nargs == 0 && (recv_ty.is_scalar() || display) {
            // The receiver, lowered once already, by a temporary (naming
            // its expression again would pop twice in `pop().unwrap().to_string()`).
            let e = syn::parse_quote_spanned!(mc.span()=> format!("{}", __jitgen_recv));
            return self.desugared(vec![("__jitgen_recv", recv)], e);
        }
        if let Some(v) = self.std_method(mc, &recv, &recv_ty) {
            return v;
        }
        match (&recv_ty, method.as_str(), nargs) {
            // Text's bytes: the same address and length, known while
            // compiling where the text is (`hint!(code[pc], concrete)` on
            // `let code = program.as_bytes();`).
            (Ty::Text, "as_bytes", 0) => {
                let bytes = Ty::Ref { mutable: false, to: Box::new(Ty::Slice(Box::new(Ty::Int(IntTy::U8)))) };
                return self.emit(OpKind::CallPure("core::primitive::str::as_bytes".into()), vec![recv], bytes, mc);
            }
            (Ty::Text, "len", 0) => {
                return self.emit(
                    OpKind::CallPure("core::primitive::str::len".into()),
                    vec![recv],
                    Ty::Int(IntTy::Usize),
                    mc,
                )
            }
            (Ty::Vec(_) | Ty::Slice(_) | Ty::Array(..), "len", 0) => {
                return self.emit(OpKind::Len, vec![recv], Ty::Int(IntTy::Usize), mc)
            }
            (Ty::Vec(_) | Ty::Slice(_) | Ty::Array(..), "is_empty", 0) => {
                let n = self.emit(OpKind::Len, vec![recv], Ty::Int(IntTy::Usize), mc);
                return self.emit(
                    OpKind::Bin(BinOp::Eq),
                    vec![n, LVal::Const(Const::Int(0, IntTy::Usize))],
                    Ty::Bool,
                    mc,
                );
            }
            (Ty::Vec(t), "push", 1) => {
                let t = (**t).clone();
                let before = self.cur;
                let v = self.value_of(&mc.args[0]);
                let vt = self.ty_of(&v);
                self.unify(&t, &vt, mc.args[0].span());
                // An argument that branched (`push(if a < b { 1 } else { 0 })`)
                // would carry the list read before it into its join, and a
                // list read from an object carried to another block forces
                // the object. A receiver that is a plain place is read again
                // where the push is: the same list, since the argument
                // cannot write it while the call's borrow is reserved.
                let recv = if self.cur != before && pure_place(&mc.receiver) {
                    match self.expr(&mc.receiver) {
                        r @ LVal::Ref(_) => self.rvalue(r, &*mc.receiver),
                        r => r,
                    }
                } else {
                    recv
                };
                return self.emit(OpKind::Push, vec![recv, v], Ty::Unit, mc);
            }
            (Ty::Vec(t), "pop", 0) => return self.emit(OpKind::Pop, vec![recv], Ty::Option(t.clone()), mc),
            // `map.get(&k).copied()`: values are scalars, `get` gives them already.
            (Ty::Option(_), "copied" | "cloned", 0) => return self.rvalue(recv, mc),
            // A value (a scalar, an enum) is its own clone.
            (t, "clone", 0) if t.is_value() => return self.rvalue(recv, mc),
            (Ty::Option(t), "ok_or", 1) if matches!(self.u.shallow(t), Ty::Struct(_)) => {
                // `Result` of an object: a sum of the `Option`'s object and
                // the error (the object is never one enum payload word).
                let t = (**t).clone();
                let recv = self.rvalue(recv, mc);
                let e = self.expr(&mc.args[0]);
                let e = self.rvalue(e, &mc.args[0]);
                let tag = self.emit(OpKind::EnumTag, vec![recv.clone()], Ty::Int(IntTy::U32), mc);
                let none = self.is_variant(tag, "Option", "None", 0, mc);
                let tag = self.emit(OpKind::Cast, vec![none], Ty::Int(IntTy::U32), mc);
                let obj = self.emit(OpKind::EnumField { variant: "Some".into(), index: 0 }, vec![recv], t.clone(), mc);
                let ty = Ty::Result(Box::new(t), Box::new(self.ty_of(&e)));
                return LVal::Sum { ty, tag: Box::new(tag), payloads: vec![Some(obj), Some(e)] };
            }
            (Ty::Option(_) | Ty::Result(..), "unwrap_or" | "ok_or", 1) => {
                // Desugared into a `match` on the value (the argument is
                // evaluated first, as Rust does).
                let is_option = matches!(recv_ty, Ty::Option(_));
                if method == "ok_or" && !is_option {
                    return self.unsupported(mc, "`ok_or` on a `Result`", "");
                }
                let recv = self.rvalue(recv, mc);
                let arg = self.expr(&mc.args[0]);
                let arg = self.rvalue(arg, &mc.args[0]);
                self.env.push(("__jitgen_recv".into(), recv));
                self.env.push(("__jitgen_arg".into(), arg));
                let m: Expr = match (method.as_str(), is_option) {
                    ("unwrap_or", true) => {
                        syn::parse_quote!(match __jitgen_recv {
                            Some(__jitgen_v) => __jitgen_v,
                            None => __jitgen_arg,
                        })
                    }
                    ("unwrap_or", false) => {
                        syn::parse_quote!(match __jitgen_recv {
                            Ok(__jitgen_v) => __jitgen_v,
                            Err(_) => __jitgen_arg,
                        })
                    }
                    _ => syn::parse_quote!(match __jitgen_recv {
                        Some(__jitgen_v) => Ok(__jitgen_v),
                        None => Err(__jitgen_arg),
                    }),
                };
                let r = self.expr(&m);
                self.env.truncate(self.env.len() - 2);
                return r;
            }
            (Ty::Option(t) | Ty::Result(t, _), "unwrap" | "expect", _) => {
                let t = (**t).clone();
                let recv = self.rvalue(recv, mc);
                return self.emit(OpKind::Unwrap, vec![recv], t, mc);
            }
            (Ty::Option(_) | Ty::Result(..), "is_some" | "is_none" | "is_ok" | "is_err", 0) => {
                let recv = self.rvalue(recv, mc);
                let tag = self.emit(OpKind::EnumTag, vec![recv], Ty::Int(IntTy::U32), mc);
                let (en, vn, idx) = match method.as_str() {
                    "is_some" => ("Option", "Some", 1),
                    "is_none" => ("Option", "None", 0),
                    "is_ok" => ("Result", "Ok", 0),
                    _ => ("Result", "Err", 1),
                };
                let c = Const::Tag { enum_name: en.into(), variant: vn.into(), index: idx };
                return self.emit(OpKind::Bin(BinOp::Eq), vec![tag, LVal::Const(c)], Ty::Bool, mc);
            }
            (Ty::Int(_) | Ty::Infer(_) | Ty::F64 | Ty::F32, m, _)
                if self.u.is_intlike(&recv_ty) || recv_ty == Ty::F64 || recv_ty == Ty::F32 =>
            {
                if let Some(v) = self.scalar_method(mc, recv, &recv_ty, m, nargs) {
                    return v;
                }
            }
            (Ty::Struct(n) | Ty::Enum(n), _, _) => {
                let q = format!("{n}::{method}");
                if self.m.fns.get(&q).is_some_and(|f| f.params.first().is_some_and(|p| p.name == "self")) {
                    let mut args = vec![recv];
                    args.extend(self.args(&mc.args));
                    let arg_exprs: Vec<&Expr> = mc.args.iter().collect();
                    return self.call_fn(&q, args, &arg_exprs, mc);
                }
            }
            (Ty::Error | Ty::Never, _, _) => return self.poison(mc.span()),
            (Ty::Infer(_), _, _) => {
                return self.unsupported(
                    mc,
                    &format!("calling `.{method}()` on a value whose type is not known yet"),
                    "add a type ascription to the binding",
                )
            }
            _ => {}
        }
        let shown = self.u.show(&recv_ty);
        if matches!(method.as_str(), "to_string" | "to_owned" | "push_str" | "as_str" | "chars") {
            self.error(mc.method.span(), format!("the method `{method}` on `{shown}`: {STRING_ADVICE}"));
            return self.poison(mc.span());
        }
        self.error(mc.method.span(), format!(
            "the method `{method}` on `{shown}` is not supported in a #[jit_interpreter] function; supported: methods of the module's impls, len/is_empty/push/pop/get/get_mut/first/first_mut/last/last_mut/swap/truncate/clear/insert/remove/extend_from_slice/reverse/split_off, HashMap new/insert/get/remove/contains_key, unwrap/expect/unwrap_or/ok_or/map/map_or/map_or_else/and_then/unwrap_or_else/ok_or_else/unwrap_or_default/copied/is_some/is_none/is_ok/is_err/is_some_and/is_none_or/is_ok_and/map_err, wrapping_add/sub/mul/div/rem/neg, checked_add/sub/mul/div/rem, saturating_add/sub/mul, min, max, abs, rem_euclid, div_euclid, signum, is_positive, is_negative"
        ));
        self.poison(mc.span())
    }

    /// A method of an integer or a float (`wrapping_add`, `min`, `abs`, ...),
    /// or `None` when `m` is not one of those supported.
    fn scalar_method(
        &mut self,
        mc: &syn::ExprMethodCall,
        recv: LVal,
        recv_ty: &Ty,
        m: &str,
        nargs: usize,
    ) -> Option<LVal> {
        let recv = self.rvalue(recv, mc);
        match (m, nargs) {
            ("wrapping_add", 1)
            | ("wrapping_sub", 1)
            | ("wrapping_mul", 1)
            | ("wrapping_div", 1)
            | ("wrapping_rem", 1)
            | ("min", 1)
            | ("max", 1) => {
                let op = match m {
                    "wrapping_add" => BinOp::WrappingAdd,
                    "wrapping_sub" => BinOp::WrappingSub,
                    "wrapping_mul" => BinOp::WrappingMul,
                    "wrapping_div" => BinOp::WrappingDiv,
                    "wrapping_rem" => BinOp::WrappingRem,
                    "min" => BinOp::Min,
                    _ => BinOp::Max,
                };
                let a = self.expr(&mc.args[0]);
                return Some(self.arith(op, recv, a, mc));
            }
            ("checked_add" | "checked_sub" | "checked_mul" | "checked_div" | "checked_rem", 1)
                if self.u.is_intlike(&recv_ty) =>
            {
                return Some(self.checked_arith(mc, m, recv));
            }
            ("saturating_add" | "saturating_sub" | "saturating_mul", 1) => {
                if let Ty::Int(it) = self.u.shallow(recv_ty) {
                    return Some(self.saturating_arith(mc, m, it, recv));
                }
            }
            ("wrapping_neg", 0) | ("abs", 0) => {
                let op = if m == "abs" { UnOp::Abs } else { UnOp::WrappingNeg };
                let t = self.ty_of(&recv);
                return Some(self.emit(OpKind::Un(op), vec![recv], t, mc));
            }
            ("rem_euclid" | "div_euclid", 1) | ("signum" | "is_positive" | "is_negative", 0)
                if self.u.is_intlike(&recv_ty) =>
            {
                // Desugared as the standard library defines them,
                // on the operations above (the same panics: `/`
                // and `%` by zero or overflowing come first).
                let mut bound = vec![("__jitgen_recv".to_string(), recv)];
                if nargs == 1 {
                    let a = self.expr(&mc.args[0]);
                    bound.push(("__jitgen_arg".to_string(), self.rvalue(a, &mc.args[0])));
                }
                let n = bound.len();
                self.env.extend(bound);
                let e: Expr = match m {
                    "rem_euclid" => syn::parse_quote!({
                        let __jitgen_r = __jitgen_recv % __jitgen_arg;
                        if __jitgen_r < 0 {
                            if __jitgen_arg < 0 {
                                __jitgen_r - __jitgen_arg
                            } else {
                                __jitgen_r + __jitgen_arg
                            }
                        } else {
                            __jitgen_r
                        }
                    }),
                    "div_euclid" => syn::parse_quote!({
                        let __jitgen_q = __jitgen_recv / __jitgen_arg;
                        if __jitgen_recv % __jitgen_arg < 0 {
                            if __jitgen_arg > 0 {
                                __jitgen_q - 1
                            } else {
                                __jitgen_q + 1
                            }
                        } else {
                            __jitgen_q
                        }
                    }),
                    "signum" => syn::parse_quote!(if __jitgen_recv > 0 {
                        1
                    } else if __jitgen_recv < 0 {
                        -1
                    } else {
                        0
                    }),
                    "is_positive" => syn::parse_quote!(__jitgen_recv > 0),
                    _ => syn::parse_quote!(__jitgen_recv < 0),
                };
                let r = self.expr(&e);
                self.env.truncate(self.env.len() - n);
                if m != "is_positive" && m != "is_negative" {
                    let t = self.ty_of(&r);
                    self.unify(&t, &recv_ty, mc.span());
                }
                return Some(r);
            }
            _ => {}
        }
        None
    }

    pub(super) fn try_expr(&mut self, t: &syn::ExprTry) -> LVal {
        if is_write_macro(&t.expr) {
            // Writing into a `Vec<u8>` cannot fail (see `formatted`).
            return self.expr(&t.expr);
        }
        let v = self.outlined_or_lowered(&t.expr, false);
        if let LVal::Sum { ty, tag, payloads } = v {
            return self.try_sum(t, ty, *tag, payloads);
        }
        let v = self.rvalue(v, &t.expr);
        let ret = self.u.shallow(&self.f.ret);
        let span = t.question_token.span;
        let have = self.shallow_ty(&v);
        let Some((en, fail_variant, fail_idx, _)) = self.try_shape(&have, span) else { return self.poison(span) };
        let (payload, ok_variant) = match have {
            Ty::Result(ok, _) => (*ok, "Ok"),
            Ty::Option(inner) => (*inner, "Some"),
            _ => (Ty::Error, "Some"),
        };
        let tag = self.emit(OpKind::EnumTag, vec![v.clone()], Ty::Int(IntTy::U32), t);
        let c = Const::Tag { enum_name: en.into(), variant: fail_variant.into(), index: fail_idx };
        let is_fail = self.emit(OpKind::Bin(BinOp::Eq), vec![tag, LVal::Const(c)], Ty::Bool, t);
        let (fail_b, ok_b) = self.branch(is_fail);
        self.resume(fail_b);
        let mut args = vec![];
        if en == "Result" {
            let e_ty = match &ret {
                Ty::Result(_, e) => (**e).clone(),
                _ => Ty::Error,
            };
            args.push(self.emit(OpKind::EnumField { variant: "Err".into(), index: 0 }, vec![v.clone()], e_ty, t));
        }
        let r = self.emit(
            OpKind::MakeEnum { enum_name: en.into(), variant: fail_variant.into(), index: fail_idx },
            args,
            ret,
            t,
        );
        self.return_with(r, span);
        self.resume(ok_b);
        self.emit(OpKind::EnumField { variant: ok_variant.into(), index: 0 }, vec![v], payload, t)
    }

    /// What `?` on a value of type `have` does in the current function: the
    /// enum, its failing variant and index, and the index of the other;
    /// `None` (after an error, unless the type is already one) when `?`
    /// does not apply. No `From` conversion: error types must be the same.
    pub(super) fn try_shape(&mut self, have: &Ty, span: Span) -> Option<(&'static str, &'static str, u32, u32)> {
        let ret = self.u.shallow(&self.f.ret);
        match (have, &ret) {
            (Ty::Result(_, err), Ty::Result(_, rerr)) => {
                let (err, rerr) = ((**err).clone(), (**rerr).clone());
                self.unify(&rerr, &err, span);
                Some(("Result", "Err", 1, 0))
            }
            (Ty::Option(_), Ty::Option(_)) => Some(("Option", "None", 0, 1)),
            // After an error (in the value, or in the function's result
            // type): nothing more to say.
            (Ty::Error | Ty::Never, _) | (_, Ty::Error) => None,
            (have, _) => {
                self.error(span, format!(
                    "`?` is supported on `Result` in a function returning `Result` with the same error type, and on `Option` in a function returning `Option`; here it is applied to `{}` in a function returning `{}`",
                    self.u.show(have),
                    self.u.show(&ret)
                ));
                None
            }
        }
    }

    /// `?` on an `Option` or `Result` holding a `&mut`: returns on `None`
    /// or `Err`, else gives the reference.
    pub(super) fn try_sum(&mut self, t: &syn::ExprTry, ty: Ty, tag: LVal, payloads: Vec<Option<LVal>>) -> LVal {
        let ret = self.u.shallow(&self.f.ret);
        let span = t.question_token.span;
        let have = self.u.shallow(&ty);
        let Some((en, fail_vn, fail_idx, ok_idx)) = self.try_shape(&have, span) else { return self.poison(span) };
        let fails = self.is_variant(tag, en, fail_vn, fail_idx, t);
        if fails != LVal::Const(Const::Bool(false)) {
            let (fail_b, ok_b) = self.branch(fails);
            self.resume(fail_b);
            let args = match (en, payloads.get(1).cloned().flatten()) {
                ("Result", Some(e)) => vec![e],
                ("Result", None) => vec![LVal::Const(Const::Unit)],
                _ => vec![],
            };
            let r = self.emit(
                OpKind::MakeEnum { enum_name: en.into(), variant: fail_vn.into(), index: fail_idx },
                args,
                ret,
                t,
            );
            self.return_with(r, span);
            self.resume(ok_b);
        }
        match payloads.get(ok_idx as usize).cloned().flatten() {
            Some(p) => p,
            None => self.poison(span),
        }
    }

    /// Whether the tag `tag` is the variant `idx`: a `bool`, folded when the
    /// tag is known.
    pub(super) fn is_variant(&mut self, tag: LVal, en: &str, vn: &str, idx: u32, src: &dyn ToTokens) -> LVal {
        if let LVal::Const(Const::Tag { index, .. }) = &tag {
            return LVal::Const(Const::Bool(*index == idx));
        }
        let c = Const::Tag { enum_name: en.into(), variant: vn.into(), index: idx };
        self.emit(OpKind::Bin(BinOp::Eq), vec![tag, LVal::Const(c)], Ty::Bool, src)
    }

    /// Methods of an `Option` or `Result` holding a `&mut` to a value.
    pub(super) fn sum_method(
        &mut self,
        mc: &syn::ExprMethodCall,
        ty: Ty,
        tag: LVal,
        payloads: Vec<Option<LVal>>,
    ) -> LVal {
        let method = mc.method.to_string();
        let is_option = matches!(self.u.shallow(&ty), Ty::Option(_));
        let (en, ok_vn, ok_idx) = if is_option { ("Option", "Some", 1) } else { ("Result", "Ok", 0) };
        match (method.as_str(), mc.args.len()) {
            ("unwrap" | "expect", _) => {
                let ok = self.is_variant(tag, en, ok_vn, ok_idx, mc);
                if ok != LVal::Const(Const::Bool(true)) {
                    let (t, f) = self.branch(ok);
                    self.resume(f);
                    let what = if is_option { "a `None` value" } else { "an `Err` value" };
                    self.set_exit(LExit::Abort(format!("called `{method}` on {what}")));
                    self.resume(t);
                }
                match payloads.get(ok_idx as usize).cloned().flatten() {
                    Some(p) => p,
                    None => self.never(mc.span()),
                }
            }
            ("ok_or", 1) if is_option => {
                let e = self.expr(&mc.args[0]);
                let e = self.rvalue(e, &mc.args[0]);
                let none = self.is_variant(tag, "Option", "None", 0, mc);
                let tag = match none {
                    LVal::Const(Const::Bool(b)) => LVal::Const(Const::Tag {
                        enum_name: "Result".into(),
                        variant: if b { "Err" } else { "Ok" }.into(),
                        index: u32::from(b),
                    }),
                    none => self.emit(OpKind::Cast, vec![none], Ty::Int(IntTy::U32), mc),
                };
                let inner = match self.u.shallow(&ty) {
                    Ty::Option(t) => *t,
                    t => t,
                };
                let ty = Ty::Result(Box::new(inner), Box::new(self.ty_of(&e)));
                LVal::Sum { ty, tag: Box::new(tag), payloads: vec![payloads.get(1).cloned().flatten(), Some(e)] }
            }
            ("is_some" | "is_none" | "is_ok" | "is_err", 0) => {
                let (en, vn, idx) = match method.as_str() {
                    "is_some" => ("Option", "Some", 1),
                    "is_none" => ("Option", "None", 0),
                    "is_ok" => ("Result", "Ok", 0),
                    _ => ("Result", "Err", 1),
                };
                self.is_variant(tag, en, vn, idx, mc)
            }
            _ => self.unsupported(
                mc,
                &format!("`.{method}()` on an `Option` or `Result` holding a `&mut`"),
                "use `?`, `unwrap`, `expect`, `ok_or`, `is_some`, `match` or `if let`",
            ),
        }
    }

    /// A method of `String`, as one residual call of Rust's own: appends
    /// as `write!` (see `appended`), copies as `format!`, and `len`,
    /// `is_empty` and `clear` as calls of `String`'s methods. The receiver,
    /// lowered once already (`recv`: the `String` by address), is named in
    /// the desugaring by a temporary: naming its expression again would
    /// run what it computes twice (`names[self.read_byte()].clone()`).
    pub(super) fn string_method(&mut self, mc: &syn::ExprMethodCall, recv: LVal) -> LVal {
        let method = mc.method.to_string();
        let span = mc.span();
        let r: Expr = syn::parse_quote_spanned!(span=> __jitgen_recv);
        let r = &r;
        let e: Expr = match (method.as_str(), mc.args.len()) {
            ("push", 1) => {
                let a = &mc.args[0];
                syn::parse_quote_spanned!(span=> write!(#r, "{}", #a))
            }
            ("push_str", 1) => appended(r, &mc.args[0]),
            ("to_string" | "to_owned" | "clone", 0) => syn::parse_quote_spanned!(span=> format!("{}", #r)),
            ("as_str", 0) => {
                // A `&str` of the `String`: a reference to it, once.
                if matches!(self.shallow_ty(&recv), Ty::Ref { .. }) {
                    return recv;
                }
                syn::parse_quote_spanned!(span=> &(#r))
            }
            ("len" | "is_empty" | "clear", 0) => {
                let (e, ty): (Expr, Ty) = match method.as_str() {
                    "len" => (syn::parse_quote_spanned!(span=> &(#r)), Ty::Int(IntTy::Usize)),
                    "is_empty" => (syn::parse_quote_spanned!(span=> &(#r)), Ty::Bool),
                    _ => (syn::parse_quote_spanned!(span=> &mut (#r)), Ty::Unit),
                };
                // Read while the temporary is in scope.
                self.env.push(("__jitgen_recv".to_string(), recv));
                let a = self.expr(&e);
                let a = self.rvalue(a, &e);
                self.env.pop();
                return self.emit(OpKind::CallOpaque(format!("std::string::String::{method}")), vec![a], ty, mc);
            }
            _ => {
                self.error(mc.method.span(), format!("the method `{method}` on `String`: {STRING_ADVICE}"));
                return self.poison(span);
            }
        };
        self.desugared(vec![("__jitgen_recv", recv)], e)
    }

    /// A method of a `Vec`, slice or array (see [`Lowering::std_method`]).
    fn list_method(&mut self, mc: &syn::ExprMethodCall, recv: &LVal, recv_ty: &Ty) -> Option<LVal> {
        let method = mc.method.to_string();
        let nargs = mc.args.len();
        let r = &*mc.receiver;
        let (a0, a1) = (mc.args.first(), mc.args.get(1));
        if let ("get", 1) | ("first" | "last", 0) = (method.as_str(), nargs) {
            self.element_borrows.insert(mc);
        }
        // Mutating methods name the receiver again at each use: a field
        // read each time is the field's own list.
        let mutating = matches!(
            method.as_str(),
            "swap" | "truncate" | "clear" | "insert" | "remove" | "extend_from_slice" | "reverse" | "split_off"
        );
        if mutating && !pure_place(r) {
            return Some(self.unsupported(
                mc,
                &format!("`.{method}()` on this expression"),
                "call it on a variable or a field",
            ));
        }
        // Reversing values that own strings (a call's arguments): Rust's own.
        if let (Ty::Vec(t), "reverse", 0) = (recv_ty, method.as_str(), nargs) {
            if self.owns_heap_ty(&self.u.shallow(t), 0) {
                return Some(self.object_method(mc, recv.clone(), "reverse"));
            }
        }
        // An element that owns what the analysis does not model (a struct
        // holding an `Rc`) is reached in place only: moved in or out of
        // the list, it is Rust's (the statement outlined).
        if let (Ty::Vec(t), "pop" | "push" | "remove" | "swap_remove" | "insert" | "truncate" | "clear") =
            (recv_ty, method.as_str())
        {
            if let Ty::Struct(s) = self.u.shallow(t) {
                if self.owns_opaque(&s, 0) {
                    return Some(self.unsupported(mc, &format!("`.{method}()` of a list of `{s}`"), ""));
                }
            }
        }
        if let ("get_mut", 1) | ("last_mut" | "first_mut", 0) = (method.as_str(), nargs) {
            let elem = match recv_ty {
                Ty::Vec(t) | Ty::Slice(t) | Ty::Array(t, _) => (**t).clone(),
                _ => Ty::Error,
            };
            if self.finished_value(&elem) {
                return Some(self.mut_accessor(mc, &method, elem));
            }
        }
        let method = method.trim_end_matches("_mut");
        let e: Expr = match (method, nargs) {
            // Accessors on a place name it again at each use, as the
            // mutating methods do: a field of a virtual object read in
            // each block stays that object's list.
            ("get", 1) if pure_place(r) => syn::parse_quote!({
                let __jitgen_i: usize = #a0;
                if __jitgen_i < (#r).len() { Some((#r)[__jitgen_i]) } else { None }
            }),
            ("first", 0) if pure_place(r) => syn::parse_quote!(if (#r).is_empty() { None } else { Some((#r)[0]) }),
            // A copy of a list of values, element by element.
            ("clone" | "to_vec", 0)
                if pure_place(r)
                    && matches!(recv_ty, Ty::Vec(t) | Ty::Slice(t) | Ty::Array(t, _) if self.u.shallow(t).is_value()) =>
            {
                syn::parse_quote!({
                    let mut __jitgen_t = Vec::new();
                    let mut __jitgen_k: usize = 0;
                    while __jitgen_k < (#r).len() {
                        __jitgen_t.push((#r)[__jitgen_k]);
                        __jitgen_k += 1;
                    }
                    __jitgen_t
                })
            }
            ("last", 0) if pure_place(r) => {
                syn::parse_quote!(if (#r).is_empty() { None } else { Some((#r)[(#r).len() - 1]) })
            }
            ("get", 1) => {
                let i = self.expr(&mc.args[0]);
                let i = self.rvalue(i, &mc.args[0]);
                let recv = self.rvalue(recv.clone(), r);
                let e = syn::parse_quote!(if __jitgen_i < __jitgen_recv.len() {
                    Some(__jitgen_recv[__jitgen_i])
                } else {
                    None
                });
                return Some(self.desugared(vec![("__jitgen_recv", recv), ("__jitgen_i", i)], e));
            }
            ("first" | "last", 0) => {
                // The receiver is evaluated once, as Rust does.
                let recv = self.rvalue(recv.clone(), r);
                let e = if method == "first" {
                    syn::parse_quote!(if __jitgen_recv.is_empty() { None } else { Some(__jitgen_recv[0]) })
                } else {
                    syn::parse_quote!(if __jitgen_recv.is_empty() {
                        None
                    } else {
                        Some(__jitgen_recv[__jitgen_recv.len() - 1])
                    })
                };
                return Some(self.desugared(vec![("__jitgen_recv", recv)], e));
            }
            ("swap", 2) => syn::parse_quote!({
                let __jitgen_a: usize = #a0;
                let __jitgen_b: usize = #a1;
                let __jitgen_t = (#r)[__jitgen_a];
                (#r)[__jitgen_a] = (#r)[__jitgen_b];
                (#r)[__jitgen_b] = __jitgen_t;
            }),
            // Counted down from the number of elements dropped: where the
            // new length is the length minus a constant (`len() - 2`), that
            // count is a constant while compiling (`len - (len - 2)`), and
            // the pops unroll; no loop tests the length at run time.
            ("truncate", 1) => syn::parse_quote!({
                let __jitgen_n: usize = #a0;
                let __jitgen_len: usize = (#r).len();
                if __jitgen_n < __jitgen_len {
                    let mut __jitgen_k: usize = __jitgen_len.wrapping_sub(__jitgen_n);
                    while __jitgen_k > 0 {
                        (#r).pop();
                        __jitgen_k = __jitgen_k.wrapping_sub(1);
                    }
                }
            }),
            // A copy of the tail, then the list truncated; Rust panics
            // past the length (here without its message). The tail's
            // length is computed first: `v.split_off(v.len() - n)`
            // copies n elements, known while compiling when n is.
            ("split_off", 1) => syn::parse_quote!({
                let __jitgen_at: usize = #a0;
                assert!(__jitgen_at <= (#r).len());
                let __jitgen_n: usize = (#r).len() - __jitgen_at;
                let mut __jitgen_t = Vec::new();
                let mut __jitgen_k: usize = 0;
                while __jitgen_k < __jitgen_n {
                    __jitgen_t.push((#r)[__jitgen_at + __jitgen_k]);
                    __jitgen_k += 1;
                }
                while (#r).len() > __jitgen_at {
                    (#r).pop();
                }
                __jitgen_t
            }),
            ("reverse", 0) => syn::parse_quote!({
                let __jitgen_n: usize = (#r).len();
                let mut __jitgen_k: usize = 0;
                while __jitgen_k < __jitgen_n / 2 {
                    let __jitgen_t = (#r)[__jitgen_k];
                    (#r)[__jitgen_k] = (#r)[__jitgen_n - 1 - __jitgen_k];
                    (#r)[__jitgen_n - 1 - __jitgen_k] = __jitgen_t;
                    __jitgen_k += 1;
                }
            }),
            ("clear", 0) => syn::parse_quote!(while !(#r).is_empty() {
                (#r).pop();
            }),
            ("insert", 2) => syn::parse_quote!({
                let __jitgen_i: usize = #a0;
                let __jitgen_x = #a1;
                (#r).push(__jitgen_x);
                let mut __jitgen_k = (#r).len() - 1;
                while __jitgen_k > __jitgen_i {
                    (#r)[__jitgen_k] = (#r)[__jitgen_k - 1];
                    __jitgen_k -= 1;
                }
                (#r)[__jitgen_i] = __jitgen_x;
            }),
            ("remove", 1) => syn::parse_quote!({
                let __jitgen_i: usize = #a0;
                let __jitgen_v = (#r)[__jitgen_i];
                let mut __jitgen_k = __jitgen_i;
                while __jitgen_k + 1 < (#r).len() {
                    (#r)[__jitgen_k] = (#r)[__jitgen_k + 1];
                    __jitgen_k += 1;
                }
                (#r).pop();
                __jitgen_v
            }),
            ("extend_from_slice", 1) => {
                let from = match &mc.args[0] {
                    Expr::Reference(x) => (*x.expr).clone(),
                    e => e.clone(),
                };
                syn::parse_quote!({
                    let mut __jitgen_k: usize = 0;
                    while __jitgen_k < (#from).len() {
                        (#r).push((#from)[__jitgen_k]);
                        __jitgen_k += 1;
                    }
                })
            }
            _ => return None,
        };
        return Some(self.expr(&e));
    }
}

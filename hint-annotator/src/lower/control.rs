//! Lowering control flow: `if`, `while`, `for`, `loop`, labeled blocks,
//! `break` and `continue`, `match` and its patterns.

#[allow(unused_imports)]
use super::*;

impl<'m, 'a> Lowering<'m, 'a> {
    pub(super) fn if_expr(&mut self, i: &syn::ExprIf) -> LVal {
        let depth = self.env.len();
        let rt = self.u.fresh();
        let join = self.new_join(depth, Some(rt.clone()));
        let else_b;
        if let Expr::Let(l) = &*i.cond {
            let v = self.outlined_or_lowered(&l.expr, false);
            let v = self.rvalue(v, &l.expr);
            let fail = self.new_join(depth, None);
            let mut binds = vec![];
            self.pattern(v, &l.pat, Some(fail), &mut binds);
            for (n, v) in binds {
                self.bind(n, v, &l.pat);
            }
            let tv = self.block(&i.then_branch);
            self.env.truncate(depth);
            self.finish_arm(join, &rt, tv, i.then_branch.span());
            else_b = fail;
            self.enter(else_b);
        } else {
            let c = self.cond(&i.cond);
            let (t, f) = self.branch(c);
            self.resume(t);
            let tv = self.block(&i.then_branch);
            self.finish_arm(join, &rt, tv, i.then_branch.span());
            self.resume(f);
        }
        match &i.else_branch {
            Some((_, e)) => {
                let ev = self.expr(e);
                self.finish_arm(join, &rt, ev, e.span());
            }
            None => {
                self.unify(&rt, &Ty::Unit, i.then_branch.span());
                self.jump(join, Some(LVal::Const(Const::Unit)));
            }
        }
        match self.enter(join) {
            Some(v) => v,
            None => self.never(i.span()),
        }
    }

    pub(super) fn finish_arm(&mut self, join: usize, rt: &Ty, v: LVal, span: Span) {
        if self.cur.is_some() {
            let t = self.ty_of(&v);
            self.unify(rt, &t, span);
            self.jump(join, Some(v));
        }
    }

    pub(super) fn label_of(l: &Option<syn::Label>) -> Option<String> {
        l.as_ref().map(|l| l.name.ident.to_string())
    }

    pub(super) fn find_loop(&mut self, label: Option<&str>, span: Span) -> Option<usize> {
        let found = match label {
            None => self.loops.iter().rposition(|c| !c.block),
            Some(l) => self.loops.iter().rposition(|c| c.label.as_deref() == Some(l)),
        };
        if found.is_none() {
            self.error(span, "`break`/`continue` outside of a loop (or with an unknown label)");
        }
        found
    }

    pub(super) fn break_expr(&mut self, b: &syn::ExprBreak) -> LVal {
        let label = b.label.as_ref().map(|l| l.ident.to_string());
        let Some(i) = self.find_loop(label.as_deref(), b.span()) else {
            return self.poison(b.span());
        };
        let v = b.expr.as_ref().map(|e| self.expr(e));
        let (after, rt) = (self.loops[i].after, self.loops[i].result_ty.clone());
        match (&v, rt) {
            (Some(v), Some(rt)) => {
                let t = self.ty_of(v);
                self.unify(&rt, &t, b.span());
            }
            (Some(_), None) => {
                self.error(b.span(), "`break` with a value is only allowed in `loop`");
            }
            (None, Some(rt)) => self.unify(&rt, &Ty::Unit, b.span()),
            (None, None) => {}
        }
        self.jump(after, v);
        self.never(b.span())
    }

    /// `'a: { .. break 'a v; .. }`: the block's value, or the value of a
    /// `break 'a` inside it, flows to the join after it.
    pub(super) fn labeled_block(&mut self, label: &syn::Label, body: &syn::Block) -> LVal {
        let depth = self.env.len();
        let rt = self.u.fresh();
        let after = self.new_join(depth, Some(rt.clone()));
        let ctx = LoopCtx {
            label: Some(label.name.ident.to_string()),
            header: after,
            after,
            result_ty: Some(rt.clone()),
            block: true,
        };
        self.loops.push(ctx);
        let v = self.block(body);
        self.env.truncate(depth);
        self.finish_arm(after, &rt, v, body.span());
        self.loops.pop();
        match self.enter(after) {
            Some(v) => v,
            None => self.never(body.span()),
        }
    }

    pub(super) fn loop_body(&mut self, ctx: LoopCtx, body: &syn::Block) {
        let header = ctx.header;
        self.loops.push(ctx);
        let depth = self.env.len();
        self.block(body);
        self.env.truncate(depth);
        self.jump(header, None);
        self.loops.pop();
    }

    pub(super) fn while_expr(&mut self, w: &syn::ExprWhile) -> LVal {
        let depth = self.env.len();
        let header = self.new_join(depth, None);
        let after = self.new_join(depth, None);
        self.jump(header, None);
        self.enter_loop_header(header);
        if let Expr::Let(l) = &*w.cond {
            let v = self.outlined_or_lowered(&l.expr, false);
            let v = self.rvalue(v, &l.expr);
            let mut binds = vec![];
            self.pattern(v, &l.pat, Some(after), &mut binds);
            for (n, v) in binds {
                self.bind(n, v, &l.pat);
            }
        } else {
            let c = self.cond(&w.cond);
            let (body, exit) = self.branch(c);
            self.resume(exit);
            self.jump(after, None);
            self.resume(body);
        }
        self.loop_body(
            LoopCtx { label: Self::label_of(&w.label), header, after, result_ty: None, block: false },
            &w.body,
        );
        self.env.truncate(depth);
        self.enter(after);
        LVal::Const(Const::Unit)
    }

    pub(super) fn loop_expr(&mut self, l: &syn::ExprLoop) -> LVal {
        let depth = self.env.len();
        let rt = self.u.fresh();
        if let Some(t) = self.ascribed_loop.take() {
            self.unify(&rt, &t, l.span());
        }
        let header = self.new_join(depth, None);
        let after = self.new_join(depth, Some(rt.clone()));
        self.jump(header, None);
        self.enter_loop_header(header);
        self.loop_body(
            LoopCtx { label: Self::label_of(&l.label), header, after, result_ty: Some(rt), block: false },
            &l.body,
        );
        match self.enter(after) {
            Some(v) => v,
            None => self.never(l.span()),
        }
    }

    pub(super) fn for_expr(&mut self, f: &syn::ExprForLoop) -> LVal {
        if let Some(e) = over_elements(f) {
            return self.expr(&e);
        }
        let Expr::Range(r) = &*f.expr else {
            return self.unsupported(
                &f.expr,
                "`for` over anything but an integer range",
                "iterate over indices: `for i in 0..v.len()`",
            );
        };
        let (Some(start), Some(end)) = (&r.start, &r.end) else {
            return self.unsupported(r, "an open range in `for`", "");
        };
        let outer = self.env.len();
        let s = self.expr(start);
        let s = self.rvalue(s, start);
        let e = self.expr(end);
        let e = self.rvalue(e, end);
        let (ts, te) = (self.ty_of(&s), self.ty_of(&e));
        self.unify(&ts, &te, r.span());
        // The hidden counter is a binding of its own, so that the loop header joins it.
        let counter = format!("__for{}", self.env.len());
        let s = match s {
            LVal::Var(_) => s,
            c => self.named(counter.clone(), c, start),
        };
        self.env.push((counter, s));
        let header = self.new_join(self.env.len(), None);
        let after = self.new_join(outer, None);
        self.jump(header, None);
        self.enter_loop_header(header);
        let i = self.env[outer].1.clone();
        let op = if matches!(r.limits, syn::RangeLimits::Closed(_)) { BinOp::Le } else { BinOp::Lt };
        let c = self.arith(op, i.clone(), e, &f.expr);
        let (body, exit) = self.branch(c);
        self.resume(exit);
        self.jump(after, None);
        self.resume(body);
        let one = LVal::Int(1, ts.clone());
        let next = self.emit(OpKind::Bin(BinOp::Add), vec![i.clone(), one], ts, &f.expr);
        self.env[outer].1 = next;
        match &*f.pat {
            Pat::Ident(pi) => self.env.push((pi.ident.to_string(), i)),
            Pat::Wild(_) => {}
            p => {
                self.unsupported(p, "this loop pattern", "bind a single name");
            }
        }
        self.loop_body(
            LoopCtx { label: Self::label_of(&f.label), header, after, result_ty: None, block: false },
            &f.body,
        );
        self.env.truncate(outer);
        self.enter(after);
        LVal::Const(Const::Unit)
    }

    pub(super) fn match_expr(&mut self, m: &syn::ExprMatch) -> LVal {
        let v = self.outlined_or_lowered(&m.expr, false);
        let v = self.rvalue(v, &m.expr);
        let depth = self.env.len();
        let rt = self.u.fresh();
        let join = self.new_join(depth, Some(rt.clone()));
        let n = m.arms.len();
        for (k, arm) in m.arms.iter().enumerate() {
            let (pat, guard) = match &arm.pat {
                Pat::Guard(g) => (&*g.pat, Some(&g.guard)),
                p => (p, None),
            };
            let last = k + 1 == n;
            let fail = if last && guard.is_none() {
                // Rust checked exhaustiveness: whatever reaches the last
                // unguarded arm matches it.
                None
            } else {
                let f = self.new_join(depth, None);
                if last {
                    self.blocks[f].exit = Some(LExit::Abort("no match arm matched".into()));
                }
                Some(f)
            };
            let mut binds = vec![];
            if self.cur.is_some() {
                self.pattern(v.clone(), pat, fail, &mut binds);
            }
            for (name, val) in binds {
                self.bind(name, val, pat);
            }
            if let (Some(g), Some(f)) = (guard, fail) {
                let c = self.cond(g);
                self.test(c, f);
            }
            let av = self.outlined_or_lowered(&arm.body, false);
            self.env.truncate(depth);
            self.finish_arm(join, &rt, av, arm.body.span());
            match fail {
                Some(f) if !last => {
                    self.enter(f);
                }
                _ => self.cur = None,
            }
        }
        match self.enter(join) {
            Some(v) => v,
            None => self.never(m.span()),
        }
    }

    /// Emits the tests of a pattern against `v`; where it fails, jumps to the
    /// join `fail` (no tests when `fail` is `None`: the pattern is known to match).
    /// Bindings are collected in `binds`.
    pub(super) fn pattern(&mut self, v: LVal, p: &Pat, fail: Option<usize>, binds: &mut Vec<(String, LVal)>) {
        let ty = self.deref_ty(&self.ty_of(&v));
        match p {
            Pat::Wild(_) | Pat::Rest(_) => {}
            Pat::Paren(pp) => self.pattern(v, &pp.pat, fail, binds),
            Pat::Reference(r) => self.pattern(v, &r.pat, fail, binds),
            Pat::Ident(pi) => {
                let name = pi.ident.to_string();
                if pi.subpat.is_none()
                    && (self.m.consts.contains_key(&name)
                        || self.m.const_exprs.contains_key(&name)
                        || name == "None"
                        || self.unit_variant_of(&ty, &name))
                {
                    let path: syn::Path = pi.ident.clone().into();
                    self.path_pattern(v, &path, p, fail);
                    return;
                }
                if let Some((_, sub)) = &pi.subpat {
                    self.pattern(v.clone(), sub, fail, binds);
                }
                binds.push((name, v));
            }
            Pat::Lit(l) => {
                let c = self.lit(&l.lit);
                if let Some(f) = fail {
                    let eq = self.arith(BinOp::Eq, v, c, p);
                    self.test(eq, f);
                }
            }
            Pat::Range(r) => {
                let Some(f) = fail else { return };
                if let Some(lo) = &r.start {
                    let lo = self.expr(lo);
                    let c = self.arith(BinOp::Ge, v.clone(), lo, p);
                    self.test(c, f);
                }
                if let Some(hi) = &r.end {
                    let hi = self.expr(hi);
                    let op = if matches!(r.limits, syn::RangeLimits::Closed(_)) { BinOp::Le } else { BinOp::Lt };
                    let c = self.arith(op, v, hi, p);
                    self.test(c, f);
                }
            }
            Pat::Path(pp) => self.path_pattern(v, &pp.path, p, fail),
            Pat::TupleStruct(ts)
                if ts.path.segments.len() == 1
                    && self.m.structs.contains_key(&self.resolve_self(&ts.path.segments[0].ident.to_string())) =>
            {
                // A tuple struct of the module (`let Scaled(p) = a * b;`):
                // its fields read as a struct pattern reads them.
                let name = self.resolve_self(&ts.path.segments[0].ident.to_string());
                let count = self.m.structs[&name].fields.len();
                let n = ts.elems.len();
                let rest = ts.elems.iter().position(|e| matches!(e, Pat::Rest(_)));
                if rest.is_none() && n != count || rest.is_some() && n - 1 > count {
                    self.error(p.span(), format!("`{name}` has {count} fields, this pattern {n}"));
                    return;
                }
                for (k, sp) in ts.elems.iter().enumerate() {
                    let i = match rest {
                        Some(r) if k == r => continue,
                        Some(r) if k > r => count - (n - k),
                        _ => k,
                    };
                    if matches!(sp, Pat::Wild(_)) {
                        continue;
                    }
                    let member = syn::Member::Unnamed(syn::Index { index: i as u32, span: sp.span() });
                    let Some((field, ft)) = self.field_ty(&v, &member, sp) else { continue };
                    let fv = self.emit(OpKind::GetField(field), vec![v.clone()], ft, sp);
                    self.pattern(fv, sp, fail, binds);
                }
            }
            Pat::TupleStruct(ts) => {
                let Some((en, vn, idx, fields)) = self.pattern_variant(&ty, &ts.path, p) else { return };
                self.tag_test(v.clone(), &en, &vn, idx, fail, p);
                let elems: Vec<&Pat> = ts.elems.iter().collect();
                if elems.len() != fields.len() && !elems.iter().any(|e| matches!(e, Pat::Rest(_))) {
                    self.error(p.span(), format!("`{vn}` has {} payload fields", fields.len()));
                    return;
                }
                for (i, sp) in elems.iter().enumerate() {
                    if matches!(sp, Pat::Wild(_) | Pat::Rest(_)) {
                        continue;
                    }
                    if let LVal::Sum { payloads, .. } = &v {
                        let p = payloads.get(idx as usize).cloned().flatten();
                        let p = p.unwrap_or_else(|| LVal::Var(self.new_var(None, Ty::Never, sp.span())));
                        self.pattern(p, sp, fail, binds);
                        continue;
                    }
                    let fv = self.emit(
                        OpKind::EnumField { variant: vn.clone(), index: i as u32 },
                        vec![v.clone()],
                        fields[i].1.clone(),
                        *sp,
                    );
                    self.pattern(fv, sp, fail, binds);
                }
            }
            Pat::Struct(ps) => {
                if ps.path.segments.len() == 1
                    && self.m.structs.contains_key(&self.resolve_self(&ps.path.segments[0].ident.to_string()))
                {
                    for fp in &ps.fields {
                        let Some((name, ft)) = self.field_ty(&v, &fp.member, fp) else { continue };
                        let fv = self.emit(OpKind::GetField(name), vec![v.clone()], ft, fp);
                        self.pattern(fv, &fp.pat, fail, binds);
                    }
                    return;
                }
                let Some((en, vn, idx, fields)) = self.pattern_variant(&ty, &ps.path, p) else { return };
                self.tag_test(v.clone(), &en, &vn, idx, fail, p);
                for fp in &ps.fields {
                    let fname = match &fp.member {
                        syn::Member::Named(i) => i.to_string(),
                        syn::Member::Unnamed(i) => i.index.to_string(),
                    };
                    let Some(i) = fields.iter().position(|(n, _)| *n == fname) else {
                        self.error(fp.member.span(), format!("`{vn}` has no field `{fname}`"));
                        continue;
                    };
                    if matches!(&*fp.pat, Pat::Wild(_)) {
                        continue;
                    }
                    let fv = self.emit(
                        OpKind::EnumField { variant: vn.clone(), index: i as u32 },
                        vec![v.clone()],
                        fields[i].1.clone(),
                        fp,
                    );
                    self.pattern(fv, &fp.pat, fail, binds);
                }
            }
            Pat::Or(o) => {
                let Some(f) = fail else { return };
                let depth = self.blocks[f].join_depth.unwrap_or(0);
                let succ = self.new_join(depth, None);
                let n = o.cases.len();
                for (i, case) in o.cases.iter().enumerate() {
                    let next = if i + 1 == n { f } else { self.new_join(depth, None) };
                    let mut inner = vec![];
                    self.pattern(v.clone(), case, Some(next), &mut inner);
                    if !inner.is_empty() {
                        self.error(case.span(), "bindings inside `|` patterns are not supported; split the arm");
                    }
                    self.jump(succ, None);
                    if i + 1 < n {
                        self.enter(next);
                    }
                }
                self.enter(succ);
            }
            Pat::Guard(g) => {
                self.unsupported(g, "a guard in this position", "");
            }
            Pat::Tuple(pt) => {
                let LVal::Tuple(items) = v else {
                    self.error(p.span(), format!("a tuple pattern against a value of type `{}`", self.u.show(&ty)));
                    return;
                };
                let rest = pt.elems.iter().position(|e| matches!(e, Pat::Rest(_)));
                let n = pt.elems.len();
                if rest.is_none() && n != items.len() || rest.is_some() && n - 1 > items.len() {
                    self.error(p.span(), format!("this pattern has {n} components, the tuple {}", items.len()));
                    return;
                }
                for (k, sp) in pt.elems.iter().enumerate() {
                    let item = match rest {
                        Some(r) if k == r => continue,
                        Some(r) if k > r => &items[items.len() - (n - k)],
                        _ => &items[k],
                    };
                    self.pattern(item.clone(), sp, fail, binds);
                }
            }
            other => {
                self.unsupported(
                    other,
                    "this pattern",
                    "match on integers, consts, ranges, `_`, bindings and enum variants",
                );
            }
        }
    }

    pub(super) fn unit_variant_of(&self, ty: &Ty, name: &str) -> bool {
        matches!(ty, Ty::Enum(e) if self.variant(e, name).is_some_and(|(_, f)| f.is_empty()))
    }

    /// Resolves the variant a pattern path names: module enums, `Some`/`None`/`Ok`/`Err`.
    pub(super) fn pattern_variant(
        &mut self,
        ty: &Ty,
        path: &syn::Path,
        p: &Pat,
    ) -> Option<(String, String, u32, Vec<(String, Ty)>)> {
        let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        let vn = segs.last()?.clone();
        match (ty, vn.as_str()) {
            (Ty::Option(t), "Some") => return Some(("Option".into(), vn, 1, vec![("0".into(), (**t).clone())])),
            (Ty::Option(_), "None") => return Some(("Option".into(), vn, 0, vec![])),
            (Ty::Result(t, _), "Ok") => return Some(("Result".into(), vn, 0, vec![("0".into(), (**t).clone())])),
            (Ty::Result(_, e), "Err") => return Some(("Result".into(), vn, 1, vec![("0".into(), (**e).clone())])),
            _ => {}
        }
        let en = if segs.len() >= 2 {
            self.resolve_self(&segs[segs.len() - 2])
        } else if let Ty::Enum(e) = ty {
            e.clone()
        } else {
            String::new()
        };
        match self.variant(&en, &vn) {
            Some((idx, fields)) => Some((en, vn, idx, fields)),
            None => {
                // (A value whose type an earlier error left unknown: that
                // error is the one to read.)
                let cascade = matches!(ty, Ty::Infer(_)) && !self.errors.is_empty();
                if !matches!(ty, Ty::Error | Ty::Never) && !cascade {
                    self.unsupported(
                        p,
                        &format!("the pattern `{}` on a value of type `{}`", source_of(path), self.u.show(ty)),
                        "",
                    );
                }
                None
            }
        }
    }

    pub(super) fn tag_test(&mut self, v: LVal, en: &str, vn: &str, idx: u32, fail: Option<usize>, src: &dyn ToTokens) {
        let Some(f) = fail else { return };
        let tag = match v {
            LVal::Sum { tag, .. } => *tag,
            v => self.emit(OpKind::EnumTag, vec![v], Ty::Int(IntTy::U32), src),
        };
        let eq = self.is_variant(tag, en, vn, idx, src);
        if eq != LVal::Const(Const::Bool(true)) {
            self.test(eq, f);
        }
    }

    pub(super) fn path_pattern(&mut self, v: LVal, path: &syn::Path, p: &Pat, fail: Option<usize>) {
        let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        let qualified = if segs.len() >= 2 {
            format!("{}::{}", self.resolve_self(&segs[segs.len() - 2]), segs[segs.len() - 1])
        } else {
            segs[0].clone()
        };
        if let Some(c) = self.m.consts.get(&qualified).cloned() {
            if let Some(f) = fail {
                let eq = self.arith(BinOp::Eq, v, LVal::Const(c), p);
                self.test(eq, f);
            }
            return;
        }
        let as_expr = Expr::Path(syn::ExprPath { attrs: vec![], qself: None, path: path.clone() });
        if self.const_expr_of(&as_expr).is_some() {
            // A const computed where it is read (`OP_ADD = Op::Add as u8`).
            if let Some(f) = fail {
                let c = self.expr(&as_expr);
                let eq = self.arith(BinOp::Eq, v, c, p);
                self.test(eq, f);
            }
            return;
        }
        let ty = self.deref_ty(&self.ty_of(&v));
        if let Some((en, vn, idx, _)) = self.pattern_variant(&ty, path, p) {
            self.tag_test(v, &en, &vn, idx, fail, p);
        }
    }

    // ----- finishing ------------------------------------------------------------------
}

/// A `for` over the elements of a `Vec`, a slice or an array, as a loop over
/// its indices: `for x in &v`, `for x in v.iter()` (each element by
/// reference), `.iter().copied()` and `.iter().cloned()` (by value),
/// `.iter().enumerate()` (`(i, x)`), and `&mut v` / `.iter_mut()`
/// (by mutable reference). `None` for other iterators.
fn over_elements(f: &syn::ExprForLoop) -> Option<Expr> {
    let strip = |e: &Expr, m: &str| match e {
        Expr::MethodCall(mc) if mc.method == m && mc.args.is_empty() => Some((*mc.receiver).clone()),
        _ => None,
    };
    let (mut seq, mut by_value, mut enumerate, mut mutable) = (None, false, false, false);
    let mut e = (*f.expr).clone();
    if let Some(inner) = strip(&e, "enumerate") {
        enumerate = true;
        e = inner;
    }
    if let Some(inner) = strip(&e, "copied").or_else(|| strip(&e, "cloned")) {
        by_value = true;
        e = inner;
    }
    if let Some(inner) = strip(&e, "iter") {
        seq = Some(inner);
    } else if let Some(inner) = strip(&e, "iter_mut") {
        (seq, mutable) = (Some(inner), true);
    } else if let Expr::Reference(r) = &e {
        if !enumerate && !by_value {
            (seq, mutable) = (Some((*r.expr).clone()), r.mutability.is_some());
        }
    }
    let seq = seq?;
    if mutable && by_value {
        return None;
    }
    let (pat, body, label) = (&f.pat, &f.body, &f.label);
    // The loop made is where the `for` was written: what fails in it is
    // reported there.
    let at = f.for_token.span;
    let elem: Expr = match (by_value, mutable) {
        (true, _) => syn::parse_quote_spanned!(at=> __for_seq[__for_i]),
        (false, true) => syn::parse_quote_spanned!(at=> &mut __for_seq[__for_i]),
        (false, false) => syn::parse_quote_spanned!(at=> &__for_seq[__for_i]),
    };
    let bind: syn::Stmt = if enumerate {
        let syn::Pat::Tuple(t) = &**pat else { return None };
        let (i, x) = (t.elems.first()?, t.elems.iter().nth(1)?);
        syn::parse_quote_spanned!(at=> let (#i, #x) = (__for_i, #elem);)
    } else {
        syn::parse_quote_spanned!(at=> let #pat = #elem;)
    };
    let seq_ref: Expr =
        if mutable { syn::parse_quote_spanned!(at=> &mut #seq) } else { syn::parse_quote_spanned!(at=> &#seq) };
    Some(syn::parse_quote_spanned!(at=> {
        let __for_seq = #seq_ref;
        #label for __for_i in 0..__for_seq.len() {
            #bind
            #body
        }
    }))
}

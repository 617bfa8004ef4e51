//! Lowering literals, paths and operators: arithmetic (with Rust's overflow
//! rules), comparisons, logic, casts, and enum equality.

#[allow(unused_imports)]
use super::*;

impl<'m, 'a> Lowering<'m, 'a> {
    pub(super) fn lit(&mut self, l: &syn::Lit) -> LVal {
        match l {
            syn::Lit::Int(i) => {
                let Ok(v) = i.base10_parse::<i128>() else {
                    return self.unsupported(l, "this integer literal", "");
                };
                match i.suffix() {
                    "" => LVal::Int(v, self.u.fresh_int()),
                    "f64" => LVal::Const(Const::Float(v as f64, Ty::F64)),
                    "f32" => LVal::Const(Const::Float(v as f64, Ty::F32)),
                    s => match IntTy::from_name(s) {
                        Some(t) => LVal::Const(Const::Int(v, t)),
                        None => self.unsupported(l, "this literal suffix", ""),
                    },
                }
            }
            syn::Lit::Float(f) => {
                let Ok(v) = f.base10_parse::<f64>() else {
                    return self.unsupported(l, "this float literal", "");
                };
                match f.suffix() {
                    "f32" => LVal::Const(Const::Float(v, Ty::F32)),
                    "f64" => LVal::Const(Const::Float(v, Ty::F64)),
                    _ => LVal::Float(v, self.u.fresh_float()),
                }
            }
            syn::Lit::Bool(b) => LVal::Const(Const::Bool(b.value)),
            syn::Lit::Byte(b) => LVal::Const(Const::Int(b.value() as i128, IntTy::U8)),
            syn::Lit::Char(c) => LVal::Const(Const::Char(c.value())),
            syn::Lit::Str(s) => LVal::Const(Const::Str(s.value())),
            syn::Lit::ByteStr(_) | syn::Lit::CStr(_) => self.unsupported(
                l,
                "a byte string literal",
                "take bytes as a parameter (`&[u8]`), or make them with `vec![...]`",
            ),
            other => self.unsupported(other, "this literal", ""),
        }
    }

    /// `i64::checked_add(a, b)`: the method called on its first argument
    /// (`&x` for a `&self` one), typed by the path. `None` where `ty` is no
    /// number, there is no argument, or the function is a constructor
    /// (`from`, `from_le_bytes`...).
    pub(super) fn number_method_by_path(&mut self, ty: &str, method: &syn::Ident, c: &syn::ExprCall) -> Option<LVal> {
        let t = number_ty(ty)?;
        let first = c.args.first()?;
        if method.to_string().starts_with("from") {
            return None;
        }
        let first = match first {
            Expr::Reference(r) => &*r.expr,
            e => e,
        };
        let x = self.expr(first);
        let x = self.rvalue(x, first);
        let tx = self.ty_of(&x);
        self.unify(&t, &tx, first.span());
        let rest = c.args.iter().skip(1);
        let e: Expr = syn::parse_quote_spanned!(c.span()=> __jitgen_recv.#method(#(#rest),*));
        Some(self.desugared(vec![("__jitgen_recv", x)], e))
    }

    /// `T::default()` for the type `t`, as an expression: a scalar's zero,
    /// or the `#[default]` variant of an enum deriving `Default`.
    pub(super) fn default_expr(&self, t: &Ty, span: Span) -> Option<Expr> {
        Some(match t {
            Ty::Bool => syn::parse_quote!(false),
            Ty::F64 | Ty::F32 => syn::parse_quote!(0.0),
            t if self.u.is_intlike(t) => syn::parse_quote!(0),
            Ty::Enum(n) => {
                let v = self.m.enums.get(n)?.default_variant.as_ref()?;
                let (n, v) = (syn::Ident::new(n, span), syn::Ident::new(v, span));
                syn::parse_quote!(#n::#v)
            }
            _ => return None,
        })
    }

    /// The const read where it is used that `e` names, if it names one
    /// (see `ModuleDef::const_exprs`): its type and initializer.
    pub(super) fn const_expr_of(&self, e: &Expr) -> Option<(Ty, Expr)> {
        let Expr::Path(p) = e else { return None };
        let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
        let name = match segs.as_slice() {
            [one] if self.lookup(one).is_some() => return None,
            [one] => one.clone(),
            [.., ty, last] => format!("{}::{last}", self.resolve_self(ty)),
            [] => return None,
        };
        self.m.const_exprs.get(&name).cloned()
    }

    /// A read of a const table at `index`: a `match` on the index, each arm
    /// an element as written (folded while compiling where the index is
    /// green). `get` gives `Some` of the element, or `None` past the end,
    /// where indexing panics as indexing the table does.
    pub(super) fn const_table_read(&mut self, table: &Expr, index: &Expr, get: bool, span: Span) -> LVal {
        let Some((_, Expr::Array(elems))) = self.const_expr_of(table) else {
            return self.unsupported(table, "this const", "");
        };
        let n = elems.elems.len();
        let arms = elems.elems.iter().enumerate().map(|(k, e)| {
            let k = proc_macro2::Literal::usize_unsuffixed(k);
            if get {
                quote::quote!(#k => Some(#e),)
            } else {
                quote::quote!(#k => #e,)
            }
        });
        let miss = if get {
            quote::quote!(None)
        } else {
            // Past the end: a list of the table's length indexed, for the
            // panic indexing the table gives.
            let n = proc_macro2::Literal::usize_unsuffixed(n);
            quote::quote!({
                let _ = vec![0u8; #n][__jitgen_index];
                unreachable!()
            })
        };
        let read: Expr = syn::parse_quote_spanned!(span=> {
            let __jitgen_index: usize = #index;
            match __jitgen_index { #(#arms)* _ => #miss }
        });
        self.expr(&read)
    }

    pub(super) fn path_expr(&mut self, p: &syn::ExprPath) -> LVal {
        // A const read where it is used: a scalar's initializer computed
        // here; a table only indexed (see `const_table_read`).
        if let Some((t, init)) = self.const_expr_of(&Expr::Path(p.clone())) {
            if matches!(t, Ty::Array(..)) {
                return self.unsupported(p, "a const table read whole", "index it: `TABLE[i]` or `TABLE.get(i)`");
            }
            let v = self.expr(&init);
            let vt = self.ty_of(&v);
            self.unify(&t, &vt, p.span());
            return v;
        }
        let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segs.len() == 1 {
            let name = &segs[0];
            if let Some(i) = self.lookup(name) {
                return self.env[i].1.clone();
            }
            if let Some(c) = self.m.consts.get(name) {
                return LVal::Const(c.clone());
            }
            if name == "None" {
                let t = Ty::Option(Box::new(self.u.fresh()));
                return self.emit(
                    OpKind::MakeEnum { enum_name: "Option".into(), variant: "None".into(), index: 0 },
                    vec![],
                    t,
                    p,
                );
            }
            if name.starts_with("__jit") && !self.errors.is_empty() {
                // A binding of the macro's own desugaring (`?`'s) that an
                // earlier error left unbound: that error is the one to read.
                return self.poison(p.span());
            }
            return self.unsupported(
                p,
                &format!("the name `{name}` (not a local, a parameter or a const of the module)"),
                "",
            );
        }
        let ty_name = self.resolve_self(&segs[segs.len() - 2]);
        let last = &segs[segs.len() - 1];
        if let Some(c) = self.m.consts.get(&format!("{ty_name}::{last}")) {
            return LVal::Const(c.clone());
        }
        if let Some(it) = IntTy::from_name(&ty_name) {
            let v = match (last.as_str(), it.signed()) {
                ("MAX", true) => (1i128 << (it.bits().min(127) - 1)) - 1,
                ("MIN", true) => -(1i128 << (it.bits().min(127) - 1)),
                ("MAX", false) if it.bits() < 128 => (1i128 << it.bits()) - 1,
                ("MIN", false) => 0,
                _ => return self.unsupported(p, "this associated constant", ""),
            };
            return LVal::Const(Const::Int(v, it));
        }
        if let Some(c) = float_const(&segs) {
            return LVal::Const(c);
        }
        if let Some((idx, fields)) = self.variant(&ty_name, last) {
            if !fields.is_empty() {
                return self.unsupported(p, "an enum constructor used as a function value", "call it with its payload");
            }
            return self.emit(
                OpKind::MakeEnum { enum_name: ty_name.clone(), variant: last.clone(), index: idx },
                vec![],
                Ty::Enum(ty_name),
                p,
            );
        }
        self.unsupported(p, &format!("the path `{}`", segs.join("::")), "")
    }

    pub(super) fn resolve_self(&self, name: &str) -> String {
        match (name, &self.f.self_ty) {
            ("Self", Some(s)) => s.clone(),
            _ => name.to_string(),
        }
    }

    /// A variant of a module enum: its tag and payload types.
    pub(super) fn variant(&self, enum_name: &str, variant: &str) -> Option<(u32, Vec<(String, Ty)>)> {
        let e = self.m.enums.get(enum_name)?;
        let i = e.variants.iter().position(|v| v.name == variant)?;
        Some((i as u32, e.variants[i].fields.clone()))
    }

    pub(super) fn binop(op: &syn::BinOp) -> Option<(BinOp, bool)> {
        use syn::BinOp as B;
        Some(match op {
            B::Add(_) => (BinOp::Add, false),
            B::Sub(_) => (BinOp::Sub, false),
            B::Mul(_) => (BinOp::Mul, false),
            B::Div(_) => (BinOp::Div, false),
            B::Rem(_) => (BinOp::Rem, false),
            B::BitXor(_) => (BinOp::BitXor, false),
            B::BitAnd(_) => (BinOp::BitAnd, false),
            B::BitOr(_) => (BinOp::BitOr, false),
            B::Shl(_) => (BinOp::Shl, false),
            B::Shr(_) => (BinOp::Shr, false),
            B::Eq(_) => (BinOp::Eq, false),
            B::Lt(_) => (BinOp::Lt, false),
            B::Le(_) => (BinOp::Le, false),
            B::Ne(_) => (BinOp::Ne, false),
            B::Ge(_) => (BinOp::Ge, false),
            B::Gt(_) => (BinOp::Gt, false),
            B::AddAssign(_) => (BinOp::Add, true),
            B::SubAssign(_) => (BinOp::Sub, true),
            B::MulAssign(_) => (BinOp::Mul, true),
            B::DivAssign(_) => (BinOp::Div, true),
            B::RemAssign(_) => (BinOp::Rem, true),
            B::BitXorAssign(_) => (BinOp::BitXor, true),
            B::BitAndAssign(_) => (BinOp::BitAnd, true),
            B::BitOrAssign(_) => (BinOp::BitOr, true),
            B::ShlAssign(_) => (BinOp::Shl, true),
            B::ShrAssign(_) => (BinOp::Shr, true),
            _ => return None,
        })
    }

    /// Whether `left += right` appends to a `String`: `right` is a string
    /// literal, or a reference and `left` a `String` (its place is read to
    /// see, which has no effect: only where computing it has none, since
    /// the append computes it again; else it is not seen as one, and the
    /// operator is refused as on any string).
    pub(super) fn is_string_place(&mut self, left: &Expr, right: &Expr) -> bool {
        if str_lit(right).is_some() {
            return true;
        }
        if !matches!(right, Expr::Reference(_)) || !super::macros::effect_free(left) {
            return false;
        }
        let Some(place) = self.place(left) else { return false };
        let cur = self.read_place(&place, left);
        let t = self.ty_of(&cur);
        self.u.shallow(&t) == Ty::Str
    }

    /// Emits `a op b` with the typing rules of Rust's primitive operators.
    pub(super) fn arith(&mut self, op: BinOp, a: LVal, b: LVal, src: &dyn ToTokens) -> LVal {
        let (a, b) = (self.rvalue(a, src), self.rvalue(b, src));
        let (ta, tb) = (self.ty_of(&a), self.ty_of(&b));
        let span = span_of(src);
        let is_string = |u: &Unifier, t: &Ty| match u.shallow(t) {
            Ty::Str => true,
            Ty::Ref { to, .. } => u.shallow(&to) == Ty::Str,
            _ => false,
        };
        if is_string(&self.u, &ta) || is_string(&self.u, &tb) {
            return self.unsupported(src, "an operator on strings", STRING_OPERATOR_ADVICE);
        }
        let result = match op {
            BinOp::Shl | BinOp::Shr => {
                if !self.u.is_intlike(&tb) && !matches!(self.u.shallow(&tb), Ty::Infer(_) | Ty::Error | Ty::Never) {
                    self.error(span, format!("shift amounts must be integers, found `{}`", self.u.show(&tb)));
                }
                ta
            }
            o if o.is_comparison() => {
                self.unify(&ta, &tb, span);
                if matches!(o, BinOp::Eq | BinOp::Ne) && self.equal_tags_decide(&a, &b) {
                    // Equal variants decide: compare the tags, which works on
                    // run-time values as well as on known ones.
                    let ta = self.emit(OpKind::EnumTag, vec![a], Ty::Int(IntTy::U32), src);
                    let tb = self.emit(OpKind::EnumTag, vec![b], Ty::Int(IntTy::U32), src);
                    return self.emit(OpKind::Bin(op), vec![ta, tb], Ty::Bool, src);
                }
                Ty::Bool
            }
            _ => {
                self.unify(&ta, &tb, span);
                ta
            }
        };
        self.emit(OpKind::Bin(op), vec![a, b], result, src)
    }

    /// Whether `a == b` on enums is the same as comparing their variants:
    /// `PartialEq` is derived (always for `Option` and `Result`) and either
    /// no variant has a payload, or one side is a variant without payload.
    pub(super) fn equal_tags_decide(&self, a: &LVal, b: &LVal) -> bool {
        let fieldless = match self.shallow_ty(a) {
            Ty::Enum(e) => match self.m.enums.get(&e) {
                Some(d) if d.derives_eq => d.variants.iter().all(|v| v.fields.is_empty()),
                _ => return false,
            },
            Ty::Option(_) | Ty::Result(..) => false,
            _ => return false,
        };
        fieldless || self.is_unit_variant(a) || self.is_unit_variant(b)
    }

    /// Whether `v` was just made as a variant without payload (`Op::Add`, `None`).
    pub(super) fn is_unit_variant(&self, v: &LVal) -> bool {
        let (LVal::Var(var), Some(b)) = (v, self.cur) else { return false };
        self.blocks[b]
            .ops
            .iter()
            .rev()
            .any(|o| o.result == *var && matches!(o.kind, OpKind::MakeEnum { .. }) && o.args.is_empty())
    }

    pub(super) fn binary(&mut self, b: &syn::ExprBinary) -> LVal {
        match b.op {
            syn::BinOp::And(_) | syn::BinOp::Or(_) => {
                let is_and = matches!(b.op, syn::BinOp::And(_));
                let l = self.expr(&b.left);
                let l = self.rvalue(l, &b.left);
                let tl = self.ty_of(&l);
                self.unify(&Ty::Bool, &tl, b.left.span());
                let join = self.new_join(self.env.len(), Some(Ty::Bool));
                let (t, f) = self.branch(l);
                // `a && b`: if a is false the result is false, else b.
                let (rhs_block, short_block, short_val) = if is_and { (t, f, false) } else { (f, t, true) };
                self.resume(short_block);
                self.jump(join, Some(LVal::Const(Const::Bool(short_val))));
                self.resume(rhs_block);
                let r = self.expr(&b.right);
                let r = self.rvalue(r, &b.right);
                let tr = self.ty_of(&r);
                self.unify(&Ty::Bool, &tr, b.right.span());
                self.jump(join, Some(r));
                self.enter(join).unwrap_or_else(|| LVal::Const(Const::Bool(false)))
            }
            _ => {
                let Some((op, assign)) = Self::binop(&b.op) else {
                    return self.unsupported(&b.op, "this operator", "");
                };
                if assign && matches!(b.op, syn::BinOp::AddAssign(_)) && self.is_string_place(&b.left, &b.right) {
                    let (l, r) = (&b.left, &b.right);
                    return self.expr(&syn::parse_quote_spanned!(b.span()=> (#l).push_str(#r)));
                }
                if assign {
                    let r = self.expr(&b.right);
                    let Some(place) = self.place(&b.left) else {
                        return self.poison(b.span());
                    };
                    let cur = self.read_place(&place, &b.left);
                    if matches!(b.op, syn::BinOp::AddAssign(_)) && self.u.shallow(&self.ty_of(&cur)) == Ty::Str {
                        // (Where computing the place has no effect, the
                        // append is `push_str`: `is_string_place`.)
                        return self.unsupported(
                            &b.left,
                            "`+=` on a `String` whose place is computed with effects",
                            "bind it first (`let s = &mut names[next()]; *s += ..`), or call `push_str`",
                        );
                    }
                    let v = self.arith(op, cur, r, b);
                    self.write_place(place, v, b);
                    LVal::Const(Const::Unit)
                } else if str_lit(&b.left).is_some() || str_lit(&b.right).is_some() {
                    self.unsupported(b, "an operator on strings", STRING_OPERATOR_ADVICE)
                } else if matches!(b.op, syn::BinOp::Add(_)) && self.is_string_place(&b.left, &b.right) {
                    // `s + &t` of an owned `String`: Rust's `Add` appends to
                    // `s` and gives it back.
                    let (l, r) = (&b.left, &b.right);
                    self.expr(&syn::parse_quote_spanned!(b.span()=> {
                        let mut __jitgen_sum = #l;
                        __jitgen_sum.push_str(#r);
                        __jitgen_sum
                    }))
                } else {
                    let l = self.expr(&b.left);
                    let r = self.expr(&b.right);
                    if let Some(name) = self.operator_impl(operator_method(&b.op), &l) {
                        // `a + b` of a type of the module: its `Add` impl's
                        // `add`, whose `Output` may be any type.
                        let (l, r) = (self.rvalue(l, &b.left), self.rvalue(r, &b.right));
                        return self.call_fn(&name, vec![l, r], &[&b.left, &b.right], b);
                    }
                    self.arith(op, l, r, b)
                }
            }
        }
    }

    /// The module's implementation of an operator trait's `method` (`add`
    /// of `Add`) for the type of the operand `l`, a struct or enum of the
    /// module: `Value::add`.
    fn operator_impl(&self, method: Option<&str>, l: &LVal) -> Option<String> {
        let (Ty::Enum(n) | Ty::Struct(n)) = self.shallow_ty(l) else { return None };
        let name = format!("{n}::{}", method?);
        (self.m.trait_methods.contains(&name) && self.m.fns.contains_key(&name)).then_some(name)
    }

    pub(super) fn unary(&mut self, u: &syn::ExprUnary) -> LVal {
        let v = self.expr(&u.expr);
        let method = match u.op {
            syn::UnOp::Neg(_) => Some("neg"),
            syn::UnOp::Not(_) => Some("not"),
            _ => None,
        };
        if let Some(name) = self.operator_impl(method, &v) {
            // `-v` of a type of the module: its `Neg` impl's `neg`.
            let v = self.rvalue(v, &u.expr);
            return self.call_fn(&name, vec![v], &[&u.expr], u);
        }
        self.unary_of(u, v)
    }

    /// `u` of its operand lowered to `v`.
    fn unary_of(&mut self, u: &syn::ExprUnary, v: LVal) -> LVal {
        match u.op {
            syn::UnOp::Neg(_) => {
                if let Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(_) | syn::Lit::Float(_), .. }) = &*u.expr {
                    match v {
                        LVal::Int(v, t) => return LVal::Int(-v, t),
                        LVal::Float(v, t) => return LVal::Float(-v, t),
                        LVal::Const(Const::Int(v, t)) => return LVal::Const(Const::Int(-v, t)),
                        LVal::Const(Const::Float(v, t)) => return LVal::Const(Const::Float(-v, t)),
                        other => return other,
                    }
                }
                let v = self.rvalue(v, &u.expr);
                let t = self.ty_of(&v);
                self.emit(OpKind::Un(UnOp::Neg), vec![v], t, u)
            }
            syn::UnOp::Not(_) => {
                let v = self.rvalue(v, &u.expr);
                let t = self.ty_of(&v);
                self.emit(OpKind::Un(UnOp::Not), vec![v], t, u)
            }
            syn::UnOp::Deref(_) => self.deref_lowered(v, u),
            _ => self.unsupported(u, "this unary operator", ""),
        }
    }

    /// `*e` of `e` lowered to `v`.
    pub(super) fn deref_lowered(&mut self, v: LVal, u: &syn::ExprUnary) -> LVal {
        if let LVal::Ref(r) = v {
            return self.read_place(&Place::Ref(*r), u);
        }
        match self.shallow_ty(&v) {
            Ty::Ref { to, .. } | Ty::Boxed(to) => {
                let inner = self.u.shallow(&to);
                let kind = if inner.is_pointer() { OpKind::SameAs } else { OpKind::Load };
                self.emit(kind, vec![v], inner, u)
            }
            // Bindings made by `match` on a reference are values already.
            _ => v,
        }
    }

    // ----- places -----------------------------------------------------------------
}

/// `u16::from_le_bytes([lo, hi])` or `from_be_bytes` of an array written
/// out (how bytecode operands are decoded), as the `as` casts, shifts and
/// ors it is. `None` for anything else.
pub(super) fn from_bytes(ty: &str, f: &str, c: &syn::ExprCall) -> Option<Expr> {
    let bits = IntTy::from_name(ty)?.bits() as usize;
    if !matches!(f, "from_le_bytes" | "from_be_bytes") || c.args.len() != 1 {
        return None;
    }
    let Expr::Array(a) = &c.args[0] else { return None };
    if a.elems.len() * 8 != bits {
        return None;
    }
    let t = syn::Ident::new(ty, c.func.span());
    let n = a.elems.len();
    let parts = a.elems.iter().enumerate().map(|(k, e)| {
        let shift = 8 * if f == "from_le_bytes" { k } else { n - 1 - k } as u32;
        quote::quote!((((#e) as u8 as #t) << #shift))
    });
    Some(syn::parse_quote_spanned!(c.span()=> (#(#parts)|*)))
}

/// The number type a path segment names (`i64`, `u8`, `f64`).
pub(super) fn number_ty(name: &str) -> Option<Ty> {
    match name {
        "f32" => Some(Ty::F32),
        "f64" => Some(Ty::F64),
        n => IntTy::from_name(n).map(Ty::Int),
    }
}

/// A float type's associated constant (`f64::NAN`, `f32::MAX`) or one of
/// its `consts` (`std::f64::consts::PI`), by the path's last segments.
fn float_const(segs: &[String]) -> Option<Const> {
    let (ty, name, consts) = match segs {
        [.., t, c, name] if c == "consts" => (t.as_str(), name.as_str(), true),
        [.., t, name] => (t.as_str(), name.as_str(), false),
        _ => return None,
    };
    // The same names for both float types, each read at its own.
    macro_rules! value {
        ($t:ident) => {{
            use std::$t::consts::*;
            match (consts, name) {
                (true, "PI") => PI,
                (true, "TAU") => TAU,
                (true, "E") => E,
                (true, "SQRT_2") => SQRT_2,
                (true, "LN_2") => LN_2,
                (true, "LN_10") => LN_10,
                (true, "FRAC_PI_2") => FRAC_PI_2,
                (true, "FRAC_PI_4") => FRAC_PI_4,
                (true, "FRAC_1_SQRT_2") => FRAC_1_SQRT_2,
                (false, "MAX") => $t::MAX,
                (false, "MIN") => $t::MIN,
                (false, "MIN_POSITIVE") => $t::MIN_POSITIVE,
                (false, "EPSILON") => $t::EPSILON,
                (false, "INFINITY") => $t::INFINITY,
                (false, "NEG_INFINITY") => $t::NEG_INFINITY,
                (false, "NAN") => $t::NAN,
                _ => return None,
            }
        }};
    }
    Some(match ty {
        "f64" => Const::Float(value!(f64), Ty::F64),
        "f32" => Const::Float(value!(f32) as f64, Ty::F32),
        _ => return None,
    })
}

/// The method of the operator trait a binary operator calls (`add` of
/// `Add` for `+`); `None` for `&&`, `||`, comparisons and assignments.
fn operator_method(op: &syn::BinOp) -> Option<&'static str> {
    use syn::BinOp as B;
    Some(match op {
        B::Add(_) => "add",
        B::Sub(_) => "sub",
        B::Mul(_) => "mul",
        B::Div(_) => "div",
        B::Rem(_) => "rem",
        B::BitAnd(_) => "bitand",
        B::BitOr(_) => "bitor",
        B::BitXor(_) => "bitxor",
        B::Shl(_) => "shl",
        B::Shr(_) => "shr",
        _ => return None,
    })
}

//! Lowering places: locals, tuple components, fields, indexing, `&` and
//! `&mut` to values, and reads and writes through them.

#[allow(unused_imports)]
use super::*;

impl<'m, 'a> Lowering<'m, 'a> {
    /// Whether `e` is a place (fields and elements) inside what a shared
    /// reference parameter of the function points to: data no one changes
    /// while the function runs.
    pub(super) fn frozen_place(&self, e: &Expr) -> bool {
        match e {
            Expr::Paren(p) => self.frozen_place(&p.expr),
            Expr::Field(f) => self.frozen_place(&f.base),
            Expr::Index(i) => self.frozen_place(&i.expr),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => self.frozen_place(&u.expr),
            // A name bound to frozen data in the function's own body (not
            // a callee inlined into it), never bound otherwise.
            Expr::Path(p) if self.inlines.is_empty() => {
                p.path.get_ident().is_some_and(|id| self.frozen_names.contains(&id.to_string()))
            }
            _ => false,
        }
    }

    pub(super) fn place(&mut self, e: &Expr) -> Option<Place> {
        match e {
            Expr::Paren(p) => self.place(&p.expr),
            Expr::Path(p) if p.path.get_ident().is_some() => {
                let name = p.path.get_ident().unwrap().to_string();
                match self.lookup(&name) {
                    Some(i) => Some(Place::Local(i)),
                    None => {
                        self.unsupported(p, &format!("assigning to `{name}` (not a local)"), "");
                        None
                    }
                }
            }
            Expr::Field(f) => {
                if let Some((i, path)) = self.tuple_place(e) {
                    return Some(Place::TupleItem(i, path));
                }
                let base = self.expr(&f.base);
                let base = self.through_shared(base, &f.base);
                let (name, ty) = self.field_ty(&base, &f.member, e)?;
                Some(Place::Field(base, name, ty))
            }
            Expr::Index(i) => {
                let base = self.expr(&i.expr);
                let idx = self.expr(&i.index);
                let idx = self.rvalue(idx, &i.index);
                let t = self.elem_ty(&base, &idx, e)?;
                Some(Place::Item(base, idx, t))
            }
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => match self.expr(&u.expr) {
                LVal::Ref(r) => Some(Place::Ref(*r)),
                // `*r = v` of a struct of values behind a `&mut` (`*frames.
                // last_mut().unwrap() = frame`): each field stored.
                p => match self.struct_behind_mut(&p) {
                    Some(s) => Some(Place::Whole(p, s)),
                    None => {
                        self.unsupported(
                            u,
                            "assigning through this reference (a `&mut` parameter of a portal, or a `Box`)",
                            "keep the value in a field of a struct passed by `&mut`, or return it",
                        );
                        None
                    }
                },
            },
            other => {
                self.unsupported(other, "assigning to this place", "assign to a local, a field or an element");
                None
            }
        }
    }

    /// `*r = S { f: e, .. }` (every field given) where `r` is a binding of
    /// a `&mut S` (or a `Box<S>`) whose struct owns more than values (a
    /// `Vec`, a `String`): the field values are computed first, then each
    /// field stored in the order of the struct's declaration, as Rust would
    /// move the new value in and drop the old one's fields. Returns whether
    /// the assignment was of that form (a struct of values is stored whole
    /// by [`Place::Whole`]).
    pub(super) fn assign_struct_fields(&mut self, a: &syn::ExprAssign, e: &Expr) -> bool {
        let (Expr::Unary(u), Expr::Struct(lit)) = (&*a.left, &*a.right) else { return false };
        let binding = matches!(&*u.expr, Expr::Path(p) if p.path.get_ident().is_some());
        if !matches!(u.op, syn::UnOp::Deref(_)) || !binding || lit.rest.is_some() || lit.dot2_token.is_some() {
            return false;
        }
        let r = self.expr(&u.expr);
        let s = match self.u.shallow(&self.ty_of(&r)) {
            Ty::Ref { mutable: true, to } | Ty::Boxed(to) => match self.u.shallow(&to) {
                Ty::Struct(s) if !self.copyable(&s, 0) => s,
                _ => return false,
            },
            _ => return false,
        };
        let mut values = vec![];
        for f in &lit.fields {
            let v = self.expr(&f.expr);
            let v = self.copied(v, &f.expr);
            values.push((f.member.clone(), v));
        }
        for (name, _) in self.fields_of(&s) {
            let Some(k) = values.iter().position(|(m, _)| matches!(m, syn::Member::Named(i) if *i == name)) else {
                continue;
            };
            let (member, v) = values.swap_remove(k);
            if let Some((name, ty)) = self.field_ty(&r, &member, e) {
                self.write_place(Place::Field(r.clone(), name, ty), v, e);
            }
        }
        true
    }

    /// `t.0` (or `t.1.0`) where `t` is a local holding a tuple: the local
    /// and the path of indices.
    pub(super) fn tuple_place(&self, e: &Expr) -> Option<(usize, Vec<usize>)> {
        match e {
            Expr::Paren(p) => self.tuple_place(&p.expr),
            Expr::Path(p) => {
                let i = self.lookup(&p.path.get_ident()?.to_string())?;
                matches!(self.env[i].1, LVal::Tuple(_)).then(|| (i, vec![]))
            }
            Expr::Field(f) => {
                let syn::Member::Unnamed(k) = &f.member else { return None };
                let (i, mut path) = self.tuple_place(&f.base)?;
                let mut v = &self.env[i].1;
                for &j in &path {
                    let LVal::Tuple(items) = v else { return None };
                    v = &items[j];
                }
                let LVal::Tuple(items) = v else { return None };
                let k = k.index as usize;
                (k < items.len()).then(|| {
                    path.push(k);
                    (i, path)
                })
            }
            _ => None,
        }
    }

    /// Whether `e` is written as a place `&mut` can take: a binding, its
    /// fields and elements, or `*r` of a `&mut` binding.
    pub(super) fn ref_syntax(&self, e: &Expr) -> bool {
        let deref_of_binding = |e: &Expr| {
            let mut e = e;
            while let Expr::Paren(p) = e {
                e = &p.expr;
            }
            matches!(e, Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) && matches!(&*u.expr, Expr::Path(p) if p.path.get_ident().is_some()))
        };
        match e {
            Expr::Paren(p) => self.ref_syntax(&p.expr),
            Expr::Path(p) => p.path.get_ident().is_some(),
            Expr::Field(f) => self.ref_syntax(&f.base) || deref_of_binding(&f.base),
            Expr::Index(i) => self.ref_syntax(&i.expr) || deref_of_binding(&i.expr),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => match &*u.expr {
                Expr::Path(p) => p
                    .path
                    .get_ident()
                    .and_then(|i| self.lookup(&i.to_string()))
                    .is_some_and(|i| matches!(self.env[i].1, LVal::Ref(_))),
                _ => false,
            },
            _ => false,
        }
    }

    /// The place `&mut e` names, for `e` of a value type: a local (or a
    /// tuple component), or a field or element reached from a binding.
    pub(super) fn mut_ref(&mut self, e: &Expr) -> Option<RefTo> {
        let refused = |me: &mut Self| {
            me.unsupported(e, "`&mut` of this expression", "take `&mut` of a local, a field or an element of a Vec");
            None
        };
        match e {
            Expr::Paren(p) => self.mut_ref(&p.expr),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => match self.expr(&u.expr) {
                LVal::Ref(r) => Some(*r),
                _ => refused(self),
            },
            Expr::Path(p) if p.path.get_ident().is_some() => match self.lookup(&p.path.get_ident()?.to_string()) {
                Some(i) if !matches!(self.env[i].1, LVal::Ref(_) | LVal::Sum { .. }) => Some(RefTo::Local(i, vec![])),
                _ => refused(self),
            },
            Expr::Field(_) => {
                if let Some((i, path)) = self.tuple_place(e) {
                    return Some(RefTo::Local(i, path));
                }
                let (root, fields) = self.heap_path(e)?;
                let ty = fields.last().map(|f| f.1.clone())?;
                Some(RefTo::Heap { root, fields, index: None, ty })
            }
            Expr::Index(ix) => {
                let (root, fields) = self.heap_path(&ix.expr)?;
                let list_ty = fields.last().map_or_else(|| self.ty_of(&root), |f| f.1.clone());
                let idx = self.expr(&ix.index);
                let idx = self.rvalue(idx, &ix.index);
                let it = self.ty_of(&idx);
                self.unify(&Ty::Int(IntTy::Usize), &it, ix.index.span());
                match self.deref_ty(&list_ty) {
                    Ty::Vec(t) | Ty::Slice(t) | Ty::Array(t, _) => {
                        Some(RefTo::Heap { root, fields, index: Some(idx), ty: *t })
                    }
                    _ => refused(self),
                }
            }
            _ => refused(self),
        }
    }

    /// `e` as an object reached from a binding through fields: the
    /// binding's value and the fields with their types.
    pub(super) fn heap_path(&mut self, e: &Expr) -> Option<(LVal, Vec<(String, Ty)>)> {
        match e {
            Expr::Paren(p) => self.heap_path(&p.expr),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => self.heap_path(&u.expr),
            Expr::Path(p) if p.path.get_ident().is_some() => {
                let name = p.path.get_ident()?.to_string();
                match self.lookup(&name) {
                    Some(i) if !self.env[i].1.is_composite() => Some((self.env[i].1.clone(), vec![])),
                    _ => {
                        self.unsupported(
                            e,
                            &format!("a `&mut` into `{name}`"),
                            "take it into a local Vec or struct, or a field of one",
                        );
                        None
                    }
                }
            }
            Expr::Field(f) => {
                let (root, mut fields) = self.heap_path(&f.base)?;
                let t = fields.last().map_or_else(|| self.ty_of(&root), |f| f.1.clone());
                let field = self.field_ty_in(&t, &f.member, e)?;
                fields.push(field);
                Some((root, fields))
            }
            _ => {
                self.unsupported(
                    e,
                    "a `&mut` into this expression",
                    "take it into a local Vec or struct, or a field of one",
                );
                None
            }
        }
    }

    pub(super) fn read_place(&mut self, p: &Place, src: &dyn ToTokens) -> LVal {
        match p {
            Place::Local(i) => self.env[*i].1.clone(),
            Place::TupleItem(i, path) => {
                let mut v = &self.env[*i].1;
                for &k in path {
                    let LVal::Tuple(items) = v else { unreachable!("a tuple place names a tuple") };
                    v = &items[k];
                }
                v.clone()
            }
            Place::Field(b, f, t) => self.emit(OpKind::GetField(f.clone()), vec![b.clone()], t.clone(), src),
            Place::Item(b, i, t) => self.emit(OpKind::GetItem, vec![b.clone(), i.clone()], t.clone(), src),
            Place::Ref(RefTo::Local(i, path)) => {
                let p = if path.is_empty() { Place::Local(*i) } else { Place::TupleItem(*i, path.clone()) };
                self.read_place(&p, src)
            }
            Place::Ref(RefTo::Heap { root, fields, index, ty }) => {
                let (root, fields, index, ty) = (root.clone(), fields.clone(), index.clone(), ty.clone());
                let p = self.heap_place(root, &fields, index, ty, src);
                self.read_place(&p, src)
            }
            Place::Ref(RefTo::Entry { map, key, ty, opaque }) => {
                let (kind, args) = match opaque {
                    true => (OpKind::CallOpaque(".get(&).copied()".into()), vec![map.clone(), key.clone()]),
                    false => (OpKind::MapGet, vec![map.clone(), key.clone()]),
                };
                let got = self.emit(kind, args, Ty::Option(Box::new(ty.clone())), src);
                let some = OpKind::EnumField { variant: "Some".into(), index: 0 };
                self.emit(some, vec![got], ty.clone(), src)
            }
            Place::Whole(p, s) => self.copy_struct(p.clone(), s, src),
        }
    }

    /// Stores each field of the struct `v` into the struct `s` at `dst`
    /// (structs held inline field by field in turn).
    pub(super) fn store_fields(&mut self, dst: LVal, v: LVal, s: &str, src: &dyn ToTokens) {
        for (name, t) in self.fields_of(s) {
            let x = self.emit(OpKind::GetField(name.clone()), vec![v.clone()], t.clone(), src);
            match &t {
                Ty::Struct(n) => {
                    let inner = self.emit(OpKind::GetField(name), vec![dst.clone()], t.clone(), src);
                    self.store_fields(inner, x, n, src);
                }
                _ => {
                    self.emit(OpKind::SetField(name), vec![dst.clone(), x], Ty::Unit, src);
                }
            }
        }
    }

    /// `root.f1.f2...`: the fields read in turn.
    pub(super) fn read_path(&mut self, root: LVal, fields: &[(String, Ty)], src: &dyn ToTokens) -> LVal {
        let mut base = root;
        for (f, t) in fields {
            base = self.emit(OpKind::GetField(f.clone()), vec![base], t.clone(), src);
        }
        base
    }

    /// The place `root.f1.f2...[index]` names, the fields but the last (or
    /// all, with an index) read on the way.
    pub(super) fn heap_place(
        &mut self,
        root: LVal,
        fields: &[(String, Ty)],
        index: Option<LVal>,
        ty: Ty,
        src: &dyn ToTokens,
    ) -> Place {
        let through = if index.is_some() { fields.len() } else { fields.len().saturating_sub(1) };
        let base = self.read_path(root, &fields[..through], src);
        match index {
            Some(i) => Place::Item(base, i, ty),
            None => match fields.last() {
                Some((f, _)) => Place::Field(base, f.clone(), ty),
                None => unreachable!("a reference into the heap names a field or an element"),
            },
        }
    }

    pub(super) fn write_place(&mut self, p: Place, v: LVal, src: &dyn ToTokens) {
        let span = span_of(src);
        match p {
            Place::Local(i) => {
                let (old, new) = (self.ty_of(&self.env[i].1.clone()), self.ty_of(&v));
                self.unify(&old, &new, span);
                let name = self.env[i].0.clone();
                // What the local owned dies (an object only a local that is
                // never moved holds: Rust's own clone of a struct owning
                // what the analysis does not model).
                if let Ty::Struct(s) = self.u.shallow(&old) {
                    if self.unmoved.contains(&name) && self.owns_opaque(&s, 0) {
                        let dead = self.env[i].1.clone();
                        self.emit(OpKind::Drop, vec![dead], Ty::Unit, src);
                        self.in_place(src, &name);
                    }
                }
                let v = match v {
                    LVal::Var(var) if self.vars[var.0 as usize].name.is_none() => {
                        self.vars[var.0 as usize].name = Some(name);
                        v
                    }
                    LVal::Var(_) => v,
                    c => self.named(name, c, src),
                };
                self.env[i].1 = v;
            }
            Place::TupleItem(i, path) => {
                let mut old = &self.env[i].1;
                for &k in &path {
                    let LVal::Tuple(items) = old else { unreachable!("a tuple place names a tuple") };
                    old = &items[k];
                }
                let (old_t, new_t) = (self.ty_of(old), self.ty_of(&v));
                self.unify(&old_t, &new_t, span);
                let name = path.iter().fold(self.env[i].0.clone(), |n, k| format!("{n}.{k}"));
                let v = match v {
                    LVal::Var(var) if self.vars[var.0 as usize].name.is_some() => v,
                    v => self.named(name, v, src),
                };
                let mut slot = &mut self.env[i].1;
                for &k in &path {
                    let LVal::Tuple(items) = slot else { unreachable!("a tuple place names a tuple") };
                    slot = &mut items[k];
                }
                *slot = v;
            }
            Place::Field(b, f, t) => {
                let vt = self.ty_of(&v);
                self.unify(&t, &vt, span);
                self.emit(OpKind::SetField(f), vec![b, v], Ty::Unit, src);
            }
            Place::Item(b, i, t) => {
                let vt = self.ty_of(&v);
                self.unify(&t, &vt, span);
                self.emit(OpKind::SetItem, vec![b, i, v], Ty::Unit, src);
            }
            Place::Ref(RefTo::Local(i, path)) => {
                let p = if path.is_empty() { Place::Local(i) } else { Place::TupleItem(i, path) };
                self.write_place(p, v, src);
            }
            Place::Ref(RefTo::Heap { root, fields, index, ty }) => {
                let p = self.heap_place(root, &fields, index, ty, src);
                self.write_place(p, v, src);
            }
            Place::Ref(RefTo::Entry { map, key, ty, opaque }) => {
                let vt = self.ty_of(&v);
                self.unify(&ty, &vt, span);
                let kind = if opaque { OpKind::CallOpaque(".insert(,)".into()) } else { OpKind::MapInsert };
                self.emit(kind, vec![map, key, v], Ty::Option(Box::new(ty)), src);
            }
            Place::Whole(p, s) => {
                let vt = self.ty_of(&v);
                self.unify(&Ty::Struct(s.clone()), &vt, span);
                self.store_fields(p, v, &s, src);
            }
        }
    }

    /// `base` itself, or, where it is (a reference to) an `Rc<S>` or an
    /// `Arc<S>` of a struct `S` the analysis models, the `&S` it points to:
    /// what is behind a shared pointer is read as behind a shared
    /// reference (frozen: neither lets it change). The pointer itself stays
    /// an opaque object: cloning or dropping it runs as Rust.
    pub(super) fn through_shared(&mut self, base: LVal, src: &dyn ToTokens) -> LVal {
        let Ty::Foreign(text) = self.deref_ty(&self.ty_of(&base)) else { return base };
        let Some(to) = crate::types::shared_pointee(&text).and_then(|t| self.m.ty(&t, None).ok()) else { return base };
        if !matches!(to, Ty::Struct(_)) {
            return base;
        }
        let base = self.rvalue(base, src);
        self.emit(OpKind::SharedDeref, vec![base], Ty::Ref { mutable: false, to: Box::new(to) }, src)
    }

    pub(super) fn field_ty(&mut self, base: &LVal, member: &syn::Member, src: &dyn ToTokens) -> Option<(String, Ty)> {
        let t = self.ty_of(base);
        self.field_ty_in(&t, member, src)
    }

    /// The name and type of the field `member` of a value of type `t`
    /// (behind references).
    pub(super) fn field_ty_in(&mut self, t: &Ty, member: &syn::Member, src: &dyn ToTokens) -> Option<(String, Ty)> {
        let name = match member {
            syn::Member::Named(i) => i.to_string(),
            syn::Member::Unnamed(i) => i.index.to_string(),
        };
        let t = self.deref_ty(t);
        match &t {
            Ty::Struct(s) => match self.m.structs.get(s).and_then(|d| d.fields.get(&name)) {
                Some(ft) => Some((name, ft.clone())),
                None => {
                    self.unsupported(src, &format!("the field `{name}` (struct `{s}` has no such field)"), "");
                    None
                }
            },
            Ty::Error | Ty::Never => None,
            Ty::Infer(_) => {
                self.unsupported(
                    src,
                    "field access on a value whose type is not known yet",
                    "add a type ascription to the binding",
                );
                None
            }
            other => {
                self.unsupported(
                    src,
                    &format!("field access on `{other}`"),
                    "fields can be read from structs of the module",
                );
                None
            }
        }
    }

    pub(super) fn get_field(&mut self, base: LVal, member: &syn::Member, src: &Expr) -> LVal {
        match self.field_ty(&base, member, src) {
            Some((name, t)) => self.emit(OpKind::GetField(name), vec![base], t, src),
            None => self.poison(src.span()),
        }
    }

    pub(super) fn elem_ty(&mut self, base: &LVal, idx: &LVal, src: &dyn ToTokens) -> Option<Ty> {
        let span = span_of(src);
        let it = self.ty_of(idx);
        self.unify(&Ty::Int(IntTy::Usize), &it, span);
        match self.deref_ty(&self.ty_of(base)) {
            Ty::Vec(t) | Ty::Slice(t) | Ty::Array(t, _) => Some(*t),
            Ty::Error | Ty::Never => None,
            Ty::Infer(_) => {
                self.unsupported(
                    src,
                    "indexing a value whose type is not known yet",
                    "add a type ascription to the binding",
                );
                None
            }
            other => {
                self.unsupported(src, &format!("indexing `{other}`"), "index a Vec, a slice or an array");
                None
            }
        }
    }

    pub(super) fn get_item(&mut self, base: LVal, index: &Expr, src: &Expr) -> LVal {
        if let Expr::Range(r) = index {
            return self.unsupported(r, "indexing with a range (a sub-slice)", "pass the whole slice and an offset");
        }
        if let (Ty::Map(_, v), Expr::Index(ei)) = (self.deref_ty(&self.ty_of(&base)), src) {
            if self.u.shallow(&v).is_value() {
                // `map[&k]` of a value: what Rust's `Index` does.
                let (m, k) = (&ei.expr, &ei.index);
                return self.expr(&syn::parse_quote_spanned!(src.span()=> *(#m).get(#k).expect("key not found")));
            }
        }
        let before = self.cur;
        let idx = self.expr(index);
        let idx = self.rvalue(idx, index);
        // An index that branched (`stack[if c { i } else { j }]`) would
        // carry the list read before it into its join, which forces a
        // backed object there (see `method_call_on`'s `push`). A plain
        // place is read again after it, where nothing in the index names
        // the place's root (so nothing in it wrote the list).
        let base = match src {
            Expr::Index(ei) if self.cur != before && pure_place(&ei.expr) && !names_root_of(index, &ei.expr) => {
                self.expr(&ei.expr)
            }
            _ => base,
        };
        match self.elem_ty(&base, &idx, src) {
            Some(t) => self.emit(OpKind::GetItem, vec![base, idx], t, src),
            None => self.poison(src.span()),
        }
    }

    // ----- calls ------------------------------------------------------------------

    pub(super) fn args(&mut self, args: &Punctuated<Expr, Token![,]>) -> Vec<LVal> {
        args.iter().map(|a| self.value_of(a)).collect()
    }

    /// `e` used by value: a struct of a `Copy` type read from a place (a
    /// binding, a field, an element, `*r`) is copied, as Rust copies it.
    /// Structs are pointers in the memory model: without the copy, the
    /// value would alias the place it was read from, and a later change of
    /// either (or a `push` moving the place) would show through the other.
    pub(super) fn value_of(&mut self, e: &Expr) -> LVal {
        let v = self.outlined_or_lowered(e, false);
        if place_expr(e) {
            self.copied(v, e)
        } else {
            v
        }
    }

    /// The struct `p` points to, where it is a `&mut` (or a `Box`) of a
    /// struct of values (`copyable`), whose fields an assignment of the
    /// whole stores.
    pub(super) fn struct_behind_mut(&self, p: &LVal) -> Option<String> {
        let s = match self.u.shallow(&self.ty_of(p)) {
            Ty::Ref { mutable: true, to } | Ty::Boxed(to) => match self.u.shallow(&to) {
                Ty::Struct(s) => s,
                _ => return None,
            },
            // What `*` applies to is a reference: a struct's is its address.
            Ty::Struct(s) => s,
            _ => return None,
        };
        self.copyable(&s, 0).then_some(s)
    }

    /// A copy of `v` where it is a struct of a `Copy` type; else `v`.
    pub(super) fn copied(&mut self, v: LVal, src: &dyn ToTokens) -> LVal {
        match self.u.shallow(&self.ty_of(&v)) {
            Ty::Struct(s) if self.m.structs.get(&s).is_some_and(|d| d.copy) => self.copy_struct(v, &s, src),
            _ => v,
        }
    }

    /// Whether a struct's value is its fields' values: each a value (a
    /// scalar, an enum without objects), a shared reference, or such a
    /// struct held inline. Its copy (and derived clone) reads each field.
    pub(super) fn copyable(&self, s: &str, depth: usize) -> bool {
        let Some(d) = self.m.structs.get(s) else { return false };
        depth < 8
            && d.fields.values().all(|t| match t {
                Ty::Struct(n) => self.copyable(n, depth + 1),
                Ty::Ref { mutable: false, .. } => true,
                t => t.is_value(),
            })
    }

    /// Where a block falls through its end, Rust drops the objects its
    /// `let`s own: an `OpKind::Drop` for each local bound since `depth` (the
    /// innermost last bound first) that holds a struct owning a `Vec`, a
    /// `String`, a map or an object the analysis does not model (a frame
    /// popped from a `Vec<Frame>` with its locals), where the statements
    /// after its `let` use it only to read or write its scalar fields
    /// (`uses::only_scalar_fields_used`: a field moved or borrowed out
    /// of it may outlive the drop as the analysis models it, a pointer into
    /// the object); or a `Vec` of what is not a scalar (a call's arguments)
    /// those statements never move (`uses::never_moved`). Residual code drops
    /// the object where it made it (in the arena; a virtual one is
    /// forgotten), instead of keeping it to the portal's return. An enum
    /// owning strings or `Rc`s (a popped `Value`) that those statements
    /// never move is dropped so too.
    pub(super) fn drop_scope_objects(&mut self, depth: usize, src: &syn::Block) {
        let locals: Vec<(String, Var)> = self.env[depth..]
            .iter()
            .rev()
            .filter_map(|(n, v)| match v {
                LVal::Var(x) => Some((n.clone(), *x)),
                _ => None,
            })
            .collect();
        let mut seen = HashSet::new();
        for (name, var) in locals {
            let ty = self.u.shallow(&self.vars[var.0 as usize].ty);
            let owned = match &ty {
                Ty::Struct(s) => self.owns_heap(s, 0),
                Ty::Vec(e) => self.owns_heap_ty(&self.u.shallow(e), 0),
                // A value owning strings or `Rc`s (a popped `Value`).
                Ty::Enum(_) => self.owned_value(&ty),
                _ => false,
            };
            if !seen.insert(name.clone()) || !owned {
                continue;
            }
            // The statements in the scope of its last `let`.
            let Some(at) =
                src.stmts.iter().rposition(|st| matches!(st, syn::Stmt::Local(l) if binds_name(&l.pat, &name)))
            else {
                continue;
            };
            let element = |m: &syn::ExprMethodCall| self.element_borrows.contains(&(m as *const _));
            if matches!(&src.stmts[at], syn::Stmt::Local(l) if uses::binds_borrow(l, element)) {
                continue;
            }
            let scope = &src.stmts[at + 1..];
            let dies = match &ty {
                Ty::Struct(s) => {
                    let fields = &self.m.structs[s].fields;
                    uses::only_scalar_fields_used(scope, &name, |f| fields.get(f).is_some_and(Ty::is_scalar))
                }
                _ => uses::never_moved(scope, &name),
            };
            if dies {
                self.emit(OpKind::Drop, vec![LVal::Var(var)], Ty::Unit, src);
            }
        }
    }

    /// Whether values of type `t` own what Rust's drop frees: a `String`,
    /// a `Vec`, or an enum or struct holding one (`Value::Str(String)`).
    pub(super) fn owns_heap_ty(&self, t: &Ty, depth: usize) -> bool {
        match t {
            Ty::Str | Ty::Vec(_) | Ty::Map(..) | Ty::Boxed(_) | Ty::Foreign(_) => true,
            Ty::Struct(s) => self.owns_heap(s, depth),
            Ty::Enum(n) => {
                depth < 8
                    && self.m.enums.get(n).is_some_and(|d| {
                        d.variants.iter().any(|v| v.fields.iter().any(|(_, f)| self.owns_heap_ty(f, depth + 1)))
                    })
            }
            _ => false,
        }
    }

    /// Whether objects of the struct `s` own what Rust's drop frees: a
    /// `Vec`, a `String`, a map, a box, or an object the analysis does
    /// not model, directly or through a struct field.
    fn owns_heap(&self, s: &str, depth: usize) -> bool {
        let Some(d) = self.m.structs.get(s) else { return false };
        depth < 8 && d.fields.values().any(|t| self.owns_heap_ty(t, depth + 1))
    }

    /// Whether a struct holds (in a field, or a struct held inline) an
    /// object the analysis does not model (an `Rc`, a map of another
    /// crate): compiled code reaches it in place, never moves it.
    pub(super) fn owns_opaque(&self, s: &str, depth: usize) -> bool {
        let Some(d) = self.m.structs.get(s) else { return false };
        depth < 8
            && d.fields.values().any(|t| match t {
                Ty::Struct(n) => self.owns_opaque(n, depth + 1),
                Ty::Foreign(_) => true,
                _ => false,
            })
    }

    /// Whether an assignment of a derived clone of the struct `s` is written
    /// in place, field by field ([`Lowering::clone_assignment`]): `s`
    /// derives `Clone` and owns an object the analysis does not model (a
    /// struct of values is a value, copied), and each field is a value, a
    /// struct of values, such an object (cloned by Rust's own `clone`,
    /// `OpKind::CloneInto`), or such a struct.
    pub(super) fn clones_in_place(&self, s: &str, depth: usize) -> bool {
        let Some(d) = self.m.structs.get(s) else { return false };
        depth < 8
            && d.clone
            && d.lifetimes == 0
            && self.owns_opaque(s, 0)
            && d.fields.values().all(|t| match t {
                Ty::Foreign(_) => true,
                Ty::Struct(n) => self.copyable(n, 0) || self.clones_in_place(n, depth + 1),
                t => t.is_value(),
            })
    }

    /// `dst = src.clone()` where `src` is a struct that clones in place
    /// ([`Lowering::clones_in_place`]) and `dst` a local never moved, or
    /// `*` of accessors that only find a place (`*frames.last_mut().unwrap()`):
    /// the fields of the object `dst` holds written in place, as Rust's
    /// assignment leaves them (`Some(Ok(()))`), where Rust's own assignment
    /// made an object and dropped one (outlined, a call). `Some(Err(v))`:
    /// the clone as lowered otherwise, `v`, its receiver lowered once;
    /// `None`: not such an assignment, nothing lowered.
    pub(super) fn clone_assignment(&mut self, a: &syn::ExprAssign, e: &Expr) -> Option<Result<(), LVal>> {
        let Expr::MethodCall(mc) = &*a.right else { return None };
        if mc.method != "clone" || !mc.args.is_empty() || mc.turbofish.is_some() {
            return None;
        }
        let local = match &*a.left {
            Expr::Path(p) => {
                let name = p.path.get_ident()?.to_string();
                if !self.unmoved.contains(&name) {
                    return None;
                }
                Some(self.env.iter().rposition(|(n, _)| *n == name)?)
            }
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) && finds_place(&u.expr) => None,
            _ => return None,
        };
        let recv = match self.expr(&mc.receiver) {
            LVal::Sum { ty, tag, payloads } => return Some(Err(self.sum_method(mc, ty, *tag, payloads))),
            r @ LVal::Ref(_) => self.rvalue(r, &*mc.receiver),
            v => v,
        };
        let s = match self.u.shallow(&self.deref_ty(&self.ty_of(&recv))) {
            Ty::Struct(s) if self.clones_in_place(&s, 0) => s,
            _ => return Some(Err(self.method_call_on(mc, recv))),
        };
        let dst = match (local, &*a.left) {
            (Some(i), _) => {
                let held = self.env[i].1.clone();
                // An object of the struct the local owns.
                if !matches!(held, LVal::Var(_)) || self.u.shallow(&self.ty_of(&held)) != Ty::Struct(s.clone()) {
                    return Some(Err(self.method_call_on(mc, recv)));
                }
                held
            }
            (None, Expr::Unary(u)) => {
                let p = match self.expr(&u.expr) {
                    r @ LVal::Ref(_) => self.rvalue(r, &*u.expr),
                    v => v,
                };
                let t = self.deref_ty(&self.ty_of(&p));
                self.unify(&Ty::Struct(s.clone()), &t, u.span());
                p
            }
            _ => unreachable!("a local or a dereference"),
        };
        self.clone_fields_into(dst, recv, &s, e);
        Some(Ok(()))
    }

    /// The fields of `src`, an object of the struct `s`, written into the
    /// object `dst` as `*dst = src.clone()` writes them: the fields of
    /// types the analysis does not model cloned into place by Rust
    /// (`OpKind::CloneInto`), the values read from `src` before any is
    /// written (as Rust clones the whole before it assigns).
    fn clone_fields_into(&mut self, dst: LVal, src: LVal, s: &str, at: &dyn ToTokens) {
        let mut values = vec![];
        for (name, t) in self.fields_of(s) {
            match &t {
                // A struct of values too (a handle): written whole, so that
                // no analyzed code writes its fields (an enum holding one
                // keeps it as its words, see `ModuleTypes::written_structs`).
                Ty::Foreign(_) | Ty::Struct(_) if self.copyable_or_foreign(&t) => {
                    self.emit(OpKind::CloneInto(name), vec![dst.clone(), src.clone()], Ty::Unit, at);
                }
                Ty::Struct(n) => {
                    let d = self.emit(OpKind::GetField(name.clone()), vec![dst.clone()], t.clone(), at);
                    let x = self.emit(OpKind::GetField(name), vec![src.clone()], t.clone(), at);
                    self.clone_fields_into(d, x, n, at);
                }
                _ => {
                    let x = self.emit(OpKind::GetField(name.clone()), vec![src.clone()], t.clone(), at);
                    values.push((name, x));
                }
            }
        }
        for (name, x) in values {
            self.emit(OpKind::SetField(name), vec![dst.clone(), x], Ty::Unit, at);
        }
    }

    /// An object the analysis does not model, or a struct of values.
    fn copyable_or_foreign(&self, t: &Ty) -> bool {
        match t {
            Ty::Foreign(_) => true,
            Ty::Struct(n) => self.copyable(n, 0),
            _ => false,
        }
    }

    /// The fields of the struct `s`, named and typed, in order.
    fn fields_of(&self, s: &str) -> Vec<(String, Ty)> {
        self.m.structs[s].fields.iter().map(|(n, t)| (n.clone(), t.clone())).collect()
    }

    /// A new struct `s` with the fields of `v` (structs held inline copied
    /// in turn).
    pub(super) fn copy_struct(&mut self, v: LVal, s: &str, src: &dyn ToTokens) -> LVal {
        let mut args = vec![];
        for (name, t) in self.fields_of(s) {
            let f = self.emit(OpKind::GetField(name), vec![v.clone()], t.clone(), src);
            args.push(match &t {
                Ty::Struct(n) => self.copy_struct(f, n, src),
                _ => f,
            });
        }
        self.emit(OpKind::NewStruct(s.to_string()), args, Ty::Struct(s.to_string()), src)
    }

    /// A call of a module function, with its arguments type-checked.
    pub(super) fn call_fn(&mut self, name: &str, args: Vec<LVal>, arg_exprs: &[&Expr], src: &dyn ToTokens) -> LVal {
        let m = self.m;
        let f = &m.fns[name];
        // Each call of a generic function has type arguments of its own.
        let mut fresh: Vec<(String, Ty)> = vec![];
        let mut instantiate = |t: &Ty| {
            t.substituted(&mut |n| {
                Some(match fresh.iter().find(|(p, _)| p == n) {
                    Some((_, t)) => t.clone(),
                    None => {
                        let t = self.u.fresh();
                        fresh.push((n.to_string(), t.clone()));
                        t
                    }
                })
            })
            .0
        };
        let params: Vec<Ty> = f.params.iter().map(|p| instantiate(&p.ty)).collect();
        let ret = instantiate(&f.ret);
        let Some(args) = self.checked_args(name, &params, args, arg_exprs, src) else {
            return self.poison(span_of(src));
        };
        if inline_only(f) {
            return self.inline_call(f, args, src);
        }
        // A portal is called, never inlined: the call reaches it through
        // its hook (a Rust-recursive interpreter's call of itself, once per
        // call of the interpreted program), and its loops compile there.
        let kind = if f.opaque && f.pure {
            OpKind::CallPure(name.to_string())
        } else if f.opaque || has_merge_point(f.body) {
            OpKind::CallOpaque(name.to_string())
        } else {
            OpKind::Call(name.to_string())
        };
        self.emit(kind, args, ret, src)
    }
}

/// Whether `e` names a place (read by value, it is copied or moved).
fn place_expr(e: &Expr) -> bool {
    match e {
        Expr::Paren(p) => place_expr(&p.expr),
        Expr::Path(p) => p.path.get_ident().is_some(),
        Expr::Field(_) | Expr::Index(_) => true,
        Expr::Unary(u) => matches!(u.op, syn::UnOp::Deref(_)),
        _ => false,
    }
}

/// The names of `f` that only ever stand for data behind a shared
/// reference parameter: such a parameter never bound again, or a name whose
/// every binding is an immutable `let` of one of those, possibly through
/// `hint!(.., concrete)` or `hint!(.., deepfreeze)` (what a split `self`'s
/// program field is).
pub(super) fn frozen_names(f: &FnDef<'_>) -> HashSet<String> {
    use syn::visit::Visit;
    /// Every binding of a name in the body: `Some(init)` for an immutable
    /// `let NAME = init`, `None` for any other.
    struct Bindings<'b>(HashMap<String, Vec<Option<&'b Expr>>>);
    impl<'b> Visit<'b> for Bindings<'b> {
        fn visit_local(&mut self, l: &'b syn::Local) {
            match (&l.pat, &l.init) {
                (Pat::Ident(pi), Some(init))
                    if pi.mutability.is_none()
                        && pi.by_ref.is_none()
                        && pi.subpat.is_none()
                        && init.diverge.is_none() =>
                {
                    self.0.entry(pi.ident.to_string()).or_default().push(Some(&init.expr));
                    self.visit_expr(&init.expr);
                }
                _ => syn::visit::visit_local(self, l),
            }
        }
        fn visit_pat_ident(&mut self, p: &'b syn::PatIdent) {
            self.0.entry(p.ident.to_string()).or_default().push(None);
            syn::visit::visit_pat_ident(self, p);
        }
    }
    let mut b = Bindings(HashMap::new());
    b.visit_block(f.body);
    let shared: HashSet<String> = f.params.iter().filter(|p| p.shared).map(|p| p.name.clone()).collect();
    let mut frozen: HashSet<String> = shared.iter().filter(|n| !b.0.contains_key(*n)).cloned().collect();
    // `let y = x`, or `let y = hint!(x, concrete)`, of a frozen `x`.
    let of_frozen = |e: &Expr, frozen: &HashSet<String>| {
        let root = match e {
            Expr::Macro(m) if m.mac.path.is_ident("hint") => {
                let args =
                    m.mac.parse_body_with(syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated).ok();
                let freezes = args.as_ref().and_then(|a| a.last()).is_some_and(
                    |h| matches!(h, Expr::Path(p) if p.path.is_ident("concrete") || p.path.is_ident("deepfreeze")),
                );
                args.filter(|_| freezes).and_then(|a| a.first().cloned())
            }
            e => Some(e.clone()),
        };
        matches!(root, Some(Expr::Path(p)) if p.path.get_ident().is_some_and(|i| {
            let i = i.to_string();
            frozen.contains(&i) || shared.contains(&i)
        }))
    };
    for _ in 0..4 {
        for (name, sites) in &b.0 {
            if sites.iter().all(|s| s.is_some_and(|e| of_frozen(e, &frozen))) {
                frozen.insert(name.clone());
            }
        }
    }
    frozen
}

/// Whether `e` only finds a place: a path or a field, or such an
/// expression's `last_mut()`, `first_mut()`, `get_mut(i)`, `unwrap()` or
/// `expect(..)` with literal or named arguments (nothing it evaluates
/// writes memory, so a clone assigned there may be read before it).
fn finds_place(e: &Expr) -> bool {
    match e {
        Expr::Path(_) => true,
        Expr::Field(f) => finds_place(&f.base),
        Expr::Paren(p) => finds_place(&p.expr),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => finds_place(&u.expr),
        Expr::MethodCall(m) => {
            matches!(m.method.to_string().as_str(), "last_mut" | "first_mut" | "get_mut" | "unwrap" | "expect")
                && finds_place(&m.receiver)
                && m.args.iter().all(|a| matches!(a, Expr::Lit(_) | Expr::Path(_)))
        }
        _ => false,
    }
}

/// Whether `e` names the local that the place `place` is rooted at.
fn names_root_of(e: &Expr, place: &Expr) -> bool {
    fn root(e: &Expr) -> Option<&syn::Ident> {
        match e {
            Expr::Path(p) => p.path.get_ident(),
            Expr::Field(f) => root(&f.base),
            Expr::Paren(p) => root(&p.expr),
            Expr::Unary(u) => root(&u.expr),
            _ => None,
        }
    }
    fn names(t: proc_macro2::TokenStream, name: &syn::Ident) -> bool {
        t.into_iter().any(|t| match t {
            proc_macro2::TokenTree::Ident(i) => i == *name,
            proc_macro2::TokenTree::Group(g) => names(g.stream(), name),
            _ => false,
        })
    }
    root(place).is_none_or(|name| names(quote::ToTokens::to_token_stream(e), name))
}

/// Whether the `let` pattern `p` binds `name` as a whole (`x`, `mut x`,
/// `x: T`).
fn binds_name(p: &syn::Pat, name: &str) -> bool {
    match p {
        syn::Pat::Ident(i) => i.ident == name && i.subpat.is_none(),
        syn::Pat::Type(t) => binds_name(&t.pat, name),
        _ => false,
    }
}

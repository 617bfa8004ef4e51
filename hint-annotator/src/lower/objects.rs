//! Lowering what the analysis does not model: methods of opaque objects
//! (`Ty::Foreign`) as residual calls of Rust's own, maps' methods (of
//! `HashMap`, and of opaque maps, `ModuleDef::map_like`) and their entries
//! (`get_mut`), and the check that opaque objects are reached only by
//! address.

#[allow(unused_imports)]
use super::*;

impl<'m, 'a> Lowering<'m, 'a> {
    /// A method of an opaque object: a residual call of Rust's own method on
    /// the object's address (`.m(shape)` in the flow graph, see
    /// `by_reference`).
    pub(super) fn object_method(&mut self, mc: &syn::ExprMethodCall, recv: LVal, method: &str) -> LVal {
        let mut args = vec![recv];
        let shape = self.by_reference(&mc.args, &mut args);
        // The result's type comes from its use; a few methods have the same
        // result type on every type of the standard library (a count, a
        // test), which a cast does not tell.
        let sig = match self.deref_ty(&self.ty_of(&args[0])) {
            Ty::Foreign(text) => {
                let q = format!("{}::{method}", crate::types::unqualified(&text));
                self.m.fns.get(&q).filter(|f| f.params.first().is_some_and(|p| p.name == "self"))
            }
            _ => None,
        };
        // Its signature types what nothing typed yet (a `String` made by
        // Rust the analysis outlined, then passed here).
        if let Some(f) = sig.filter(|f| f.params.len() == args.len()) {
            for (i, (a, p)) in args.iter().zip(&f.params).enumerate().skip(1) {
                let by_ref = shape.split(',').nth(i - 1) == Some("&");
                let want = match (&p.ty, by_ref) {
                    (Ty::Ref { to, .. }, true) => (**to).clone(),
                    (t, _) => t.clone(),
                };
                if matches!(self.u.shallow(&self.ty_of(a)), Ty::Infer(_)) && !want.has_param() {
                    let t = self.ty_of(a);
                    self.unify(&want, &t, mc.args[i - 1].span());
                }
            }
        }
        let known = sig.map(|f| f.ret.clone());
        // A map of the standard library's interface (a hasher of its own,
        // another crate's map): its values are read out by copy, as
        // `HashMap`'s are (see `map_method`).
        let map = match self.deref_ty(&self.ty_of(&args[0])) {
            Ty::Foreign(text) => self.m.map_like(&text),
            _ => None,
        };
        // A shared reference the analysis names as its referent (`&Obj`):
        // the call gives the object in place.
        let mut then = if sig.is_some_and(|f| f.ret_shared) { "&" } else { "" };
        let t = match (known, map, method) {
            (Some(t), ..) => t,
            (None, Some((k, v)), "get" | "insert" | "remove" | "contains_key") => {
                let want = if method == "insert" { 2 } else { 1 };
                if args.len() != want + 1 {
                    let span = mc.span();
                    self.error(span, format!("`{method}` takes {want} argument(s)"));
                    return self.poison(span);
                }
                let kt = self.deref_ty(&self.ty_of(&args[1]));
                self.unify(&k, &kt, mc.args[0].span());
                if method == "insert" {
                    let vt = self.ty_of(&args[2]);
                    self.unify(&v, &vt, mc.args[1].span());
                }
                match method {
                    "contains_key" => Ty::Bool,
                    "get" if v.is_value() || self.copy_scalar_struct(&v) => {
                        then = ".copied()";
                        Ty::Option(Box::new(v))
                    }
                    // A value owning strings or `Rc`s: cloned out by the
                    // call, as a `HashMap`'s is (residual code treats a
                    // `clone` of it as the value itself).
                    "get" if self.owned_value(&v) => {
                        then = ".cloned()";
                        Ty::Option(Box::new(v))
                    }
                    "get" => return self.unsupported(mc, &format!("a value of type `{v}` read from a map"), ""),
                    _ => Ty::Option(Box::new(v)),
                }
            }
            (None, _, "len" | "capacity" | "count") => Ty::Int(IntTy::Usize),
            // `Clone::clone` gives what it is called on.
            (None, _, "clone") if args.len() == 1 => self.deref_ty(&self.ty_of(&args[0])),
            (None, _, "is_empty" | "contains" | "contains_key" | "starts_with" | "ends_with") => Ty::Bool,
            (None, ..) => self.u.fresh(),
        };
        self.emit(OpKind::CallOpaque(format!(".{method}({shape}){then}")), args, t, mc)
    }

    /// A function of `Rc` or `Arc` called by its path, the type imported
    /// by `use`: `Rc::clone(&x)` is `x.clone()`, and `Rc::ptr_eq(a, b)`
    /// and the counts are one residual call of Rust's own function each.
    /// `None` for any other path.
    pub(super) fn foreign_path_call(&mut self, c: &syn::ExprCall, segs: &[String]) -> Option<LVal> {
        let first = segs.first()?.as_str();
        let ours = self.m.structs.contains_key(first)
            || self.m.enums.contains_key(first)
            || self.m.aliases.contains_key(first)
            || self.m.fns.keys().any(|f| f.split("::").next() == Some(first));
        if segs.len() != 2 || !(first == "Rc" || first == "Arc") || ours {
            return None;
        }
        let last = segs.last().map(String::as_str);
        if let (Some("clone"), 1) = (last, c.args.len()) {
            let recv = match &c.args[0] {
                Expr::Reference(r) if r.mutability.is_none() => (*r.expr).clone(),
                e => syn::parse_quote_spanned!(e.span()=> (*#e)),
            };
            return Some(self.expr(&syn::parse_quote_spanned!(c.span()=> #recv.clone())));
        }
        let t = match last {
            Some("ptr_eq") => Ty::Bool,
            Some("strong_count" | "weak_count") => Ty::Int(IntTy::Usize),
            // Another (`Rc::new`, `Rc::from`) gives a type Rust infers
            // from its use, which a residual call cannot name: the
            // statement holding it is outlined.
            _ => return None,
        };
        let args = self.args(&c.args);
        Some(self.emit(OpKind::CallOpaque(segs.join("::")), args, t, c))
    }

    /// Whether a value of type `t` owns what compiled code owns in its
    /// arena and can rebuild it from: a `String`, or an owning enum (see
    /// `owning_enum`).
    pub(super) fn owned_value(&self, t: &Ty) -> bool {
        match self.u.shallow(t) {
            Ty::Str => true,
            Ty::Enum(n) => !self.copy_value(t) && self.owning_enum(&n, 0),
            _ => false,
        }
    }

    /// Whether an enum of the module owns only what compiled code can own
    /// and rebuild a value from (`Value::Str(Rc<str>)`, `Value::Str(String)`):
    /// each payload a plain copy, a `String`, an `Rc` or `Arc`, a struct
    /// of scalars and `String`s, or another such enum.
    pub(super) fn owning_enum(&self, n: &str, depth: usize) -> bool {
        depth < 8
            && self.m.enums.get(n).is_some_and(|d| {
                d.variants.iter().all(|v| {
                    v.fields.iter().all(|(_, f)| match f {
                        Ty::Foreign(text) => crate::types::shared_opaque(text),
                        Ty::Enum(x) if !self.copy_value(f) => x != n && self.owning_enum(x, depth + 1),
                        Ty::Option(_) | Ty::Result(..) => self.copy_value(f),
                        f => self.returnable_part(f),
                    })
                })
            })
    }

    /// Whether `t` is a `Copy` struct of scalars (a handle): read out of a
    /// map by copy, as values are.
    fn copy_scalar_struct(&self, t: &Ty) -> bool {
        let Ty::Struct(s) = self.u.shallow(t) else { return false };
        self.m.structs.get(&s).is_some_and(|d| d.copy && !d.fields.is_empty() && d.fields.values().all(Ty::is_scalar))
    }

    /// Lowers the arguments of a call of an opaque object (appended to
    /// `args`), and says which are values passed by shared reference
    /// (`&k`, a value at the machine level): `&` for those, nothing for the
    /// others, comma-separated (`.get(&)`, `.insert(,)` in the flow graph).
    pub(super) fn by_reference(&mut self, exprs: &Punctuated<Expr, Token![,]>, args: &mut Vec<LVal>) -> String {
        let mut shape = vec![];
        for e in exprs {
            // A `String` passed as its bytes or text (`out.write_all(s.as_bytes())`):
            // the string, viewed so in the call.
            if let Expr::MethodCall(m) = e {
                let view = m.method.to_string();
                // Only of a place (read twice where it is not a `String`).
                if m.args.is_empty() && matches!(view.as_str(), "as_bytes" | "as_str") && pure_place(&m.receiver) {
                    let s = self.expr(&m.receiver);
                    let s = match s {
                        r @ LVal::Ref(_) => self.rvalue(r, &*m.receiver),
                        v => v,
                    };
                    if self.deref_ty(&self.ty_of(&s)) == Ty::Str {
                        shape.push(if view == "as_bytes" { "as_bytes" } else { "as_str" });
                        args.push(s);
                        continue;
                    }
                }
            }
            let v = self.expr(e);
            let v = match v {
                r @ LVal::Ref(_) => self.rvalue(r, e),
                v => v,
            };
            let value = self.finished_value(&self.ty_of(&v));
            if value && matches!(e, Expr::Reference(r) if r.mutability.is_some()) {
                self.unsupported(e, "`&mut` of a value passed to an object the analysis does not model", "");
            }
            let by_ref = matches!(e, Expr::Reference(r) if r.mutability.is_none()) && value;
            shape.push(if by_ref { "&" } else { "" });
            args.push(v);
        }
        shape.join(",")
    }

    /// A method of a `HashMap` (`len`, `insert`, `get`, `remove`,
    /// `contains_key`), or `get_mut` of a map of values (a `HashMap`, or an
    /// opaque map, see `ModuleDef::map_like`); `None` for any other.
    pub(super) fn map_method(&mut self, mc: &syn::ExprMethodCall, recv: &LVal, recv_ty: &Ty) -> Option<LVal> {
        let (method, nargs) = (mc.method.to_string(), mc.args.len());
        if (method.as_str(), nargs) == ("get_mut", 1) {
            let map = match recv_ty {
                Ty::Map(k, v) => Some(((**k).clone(), (**v).clone(), false)),
                Ty::Foreign(text) => self.m.map_like(text).map(|(k, v)| (k, v, true)),
                _ => None,
            };
            if let Some((k, v, opaque)) = map.filter(|(_, v, _)| self.finished_value(v)) {
                return Some(self.map_entry(mc, recv.clone(), k, v, opaque));
            }
        }
        let recv = recv.clone();
        match (recv_ty, method.as_str(), nargs) {
            (Ty::Map(..), "len", 0) => Some(self.emit(OpKind::Len, vec![recv], Ty::Int(IntTy::Usize), mc)),
            (Ty::Map(k, v), "insert" | "get" | "remove" | "contains_key", _) => {
                let (k, v) = ((**k).clone(), (**v).clone());
                let want = if method == "insert" { 2 } else { 1 };
                if nargs != want {
                    let span = mc.span();
                    self.error(span, format!("`{method}` takes {want} argument(s)"));
                    return Some(self.poison(span));
                }
                // Keys are passed by reference except to `insert`: take what
                // is behind a `&`.
                let key_expr = match (&mc.args[0], method.as_str()) {
                    (Expr::Reference(r), m) if m != "insert" => &*r.expr,
                    (e, _) => e,
                };
                let key = self.expr(key_expr);
                let key = self.rvalue(key, key_expr);
                let kt = self.deref_ty(&self.ty_of(&key));
                self.unify(&k, &kt, key_expr.span());
                let (kind, mut args, ty) = match method.as_str() {
                    "insert" => (OpKind::MapInsert, vec![recv, key], Ty::Option(Box::new(v.clone()))),
                    "get" => (OpKind::MapGet, vec![recv, key], Ty::Option(Box::new(v.clone()))),
                    "remove" => (OpKind::MapRemove, vec![recv, key], Ty::Option(Box::new(v.clone()))),
                    _ => (OpKind::MapContains, vec![recv, key], Ty::Bool),
                };
                if method == "insert" {
                    let val = self.expr(&mc.args[1]);
                    let val = self.rvalue(val, &mc.args[1]);
                    let vt = self.ty_of(&val);
                    self.unify(&v, &vt, mc.args[1].span());
                    args.push(val);
                }
                Some(self.emit(kind, args, ty, mc))
            }
            _ => None,
        }
    }

    /// `map.get_mut(&k)` on a map of values (`k`, `v` its key and value
    /// types): an `Option` whose tag is `contains_key` and whose `&mut` names
    /// the entry, read by `get` and written by `insert` (`RefTo::Entry`).
    fn map_entry(&mut self, mc: &syn::ExprMethodCall, map: LVal, k: Ty, v: Ty, opaque: bool) -> LVal {
        let key_expr = match &mc.args[0] {
            Expr::Reference(r) => &*r.expr,
            e => e,
        };
        let key = self.expr(key_expr);
        let key = self.rvalue(key, key_expr);
        let kt = self.deref_ty(&self.ty_of(&key));
        self.unify(&k, &kt, key_expr.span());
        let (kind, args) = match opaque {
            true => (OpKind::CallOpaque(".contains_key(&)".into()), vec![map.clone(), key.clone()]),
            false => (OpKind::MapContains, vec![map.clone(), key.clone()]),
        };
        let present = self.emit(kind, args, Ty::Bool, mc);
        let tag = self.emit(OpKind::Cast, vec![present], Ty::Int(IntTy::U32), mc);
        let r = RefTo::Entry { map, key, ty: v.clone(), opaque };
        let ty = Ty::Option(Box::new(Ty::Ref { mutable: true, to: Box::new(v) }));
        LVal::Sum { ty, tag: Box::new(tag), payloads: vec![None, Some(LVal::Ref(Box::new(r)))] }
    }
}

/// Uses of an opaque object (`Ty::Foreign`, not behind a reference) other
/// than taking its address or calling its method: compiled code holds such
/// an object's address, and a copy of a `Copy` one (a handle) would alias
/// what it was copied from.
pub(super) fn opaque_objects_by_value(g: &FlowGraph, span: Span) -> Vec<syn::Error> {
    // An `Rc` or `Arc` is moved or copied by Rust's own code (a residual
    // call takes it by address, by reference or as its own: see
    // `jitgen_runtime::heap::SharedArg`), so any use of one is allowed.
    let owned = |v: &Value| matches!(v, Value::Var(x) if matches!(&g.var(*x).ty, Ty::Foreign(t) if !crate::types::shared_opaque(t)));
    let mut errors = vec![];
    let message = |t: &str| {
        format!(
            "a value of `{t}`, a type the analysis does not model, used by value: compiled code reaches such an object only by address (`&x`, `x.method(..)`)"
        )
    };
    for b in g.blocks() {
        for op in &g.graph[b].ops {
            for (i, a) in op.args.iter().enumerate() {
                let by_address = matches!(&op.kind, OpKind::SameAs | OpKind::SharedDeref)
                    || (i == 0 && matches!(&op.kind, OpKind::CallOpaque(m) if m.starts_with('.')));
                // An object compiled code owns (a `Box<dyn Error>`) may be
                // moved into an enum (`Err(e)`): its address moves with it.
                let moved_into_enum = matches!(&op.kind, OpKind::MakeEnum { .. })
                    && matches!(a, Value::Var(x) if matches!(&g.var(*x).ty, Ty::Foreign(t) if crate::types::owned_opaque(t)));
                if owned(a) && !by_address && !moved_into_enum {
                    errors.push(syn::Error::new(op.span, message(&g.value_ty(a).to_string())));
                }
            }
        }
        let carried = g.exits(b).into_iter().flat_map(|e| g.link(e).1.args.clone());
        let returned = match &g.graph[b].exit {
            Exit::Return(v) => Some(v.clone()),
            _ => None,
        };
        if let Some(a) = carried.chain(returned).find(|a| owned(a)) {
            errors.push(syn::Error::new(span, message(&g.value_ty(&a).to_string())));
        }
    }
    errors
}

/// `hint!(e, promote)` of a reference or an object: a flexswitch switches
/// on a word, so only values (integers, bools, chars, enums) are promoted,
/// and what an `Rc` or `Arc` points to (`&*frame.function`: its address; the
/// code compiled for it keeps it alive, so no other object takes that
/// address). A misused hint, so an error, not Rust left to Rust.
pub(super) fn promoted_objects(g: &FlowGraph) -> Vec<syn::Error> {
    let mut errors = vec![];
    for b in g.blocks() {
        for op in &g.graph[b].ops {
            if matches!(op.kind, OpKind::Hint(HintKind::Promote))
                && g.value_ty(&op.args[0]).is_pointer()
                && g.shared_pointee(&op.args[0]).is_none()
            {
                errors.push(syn::Error::new(
                    op.span,
                    format!(
                        "`hint!(.., promote)` switches on a value (an integer, a bool, a char, an enum), not on `{}`, a reference or an object: promote what finds it (an index, a program counter), and reach the data through a shared reference or `hint!(.., deepfreeze)`, whose reads are green where the reference is",
                        g.value_ty(&op.args[0])
                    ),
                ));
            }
        }
    }
    errors
}

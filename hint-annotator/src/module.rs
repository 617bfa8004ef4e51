//! Reading a module: its structs, enums, consts, type aliases, functions and
//! inherent impls, with the types of their signatures.

use indexmap::IndexMap;
use proc_macro2::Span;
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;

use crate::flowgraph::Const;
use crate::types::{IntTy, Ty};

/// A struct of the module.
#[derive(Clone, Debug)]
pub struct StructDef {
    /// Fields in declaration order (tuple structs: `0`, `1`, ...).
    pub fields: IndexMap<String, Ty>,
    /// Marked `#[virtualizable]`.
    pub virtualizable: bool,
    /// Its lifetime parameters.
    pub lifetimes: usize,
    /// `#[derive(Copy)]`: read by value from a place, it is copied.
    pub copy: bool,
    /// `#[derive(Clone)]`: `.clone()` copies it where its fields are values.
    pub clone: bool,
    /// `#[derive(PartialEq)]`: `==` compares its fields in order.
    pub derives_eq: bool,
    /// The module implements `Drop` for it.
    pub drops: bool,
}

/// A variant of an enum of the module.
#[derive(Clone, Debug)]
pub struct VariantDef {
    /// Its name.
    pub name: String,
    /// Its payload fields: named (`{ a: T }`) or positional (`(T)`, named `0`, `1`...).
    pub fields: Vec<(String, Ty)>,
    /// Whether the fields are named.
    pub named: bool,
    /// Its discriminant (what `as` gives of a fieldless enum): as written
    /// (`= 7`), else one past the previous variant's, the first's 0. The
    /// tag of the flattened value stays the variant's index.
    pub discriminant: i128,
}

/// An enum of the module.
#[derive(Clone, Debug)]
pub struct EnumDef {
    /// Variants in declaration order; the index is the tag.
    pub variants: Vec<VariantDef>,
    /// Its `PartialEq` is derived: `==` compares the variant, then the payload.
    pub derives_eq: bool,
    /// Its `Default` is derived: the variant marked `#[default]`.
    pub default_variant: Option<String>,
}

/// A parameter of a function.
#[derive(Clone, Debug)]
pub struct Param {
    /// Its name (`self` for receivers).
    pub name: String,
    /// Its type.
    pub ty: Ty,
    /// Whether it is declared `mut`.
    pub mutable: bool,
    /// Whether it is declared a shared reference (`&T`): what it points to
    /// is frozen while the call lasts, also where the reference is the
    /// value itself at the machine level (`&Instruction`).
    pub shared: bool,
    /// Where it is declared.
    pub span: Span,
}

/// A function or method of the module.
#[derive(Clone, Debug)]
pub struct FnDef<'a> {
    /// `name`, or `Type::name` for methods.
    pub name: String,
    /// The `Self` type, for methods.
    pub self_ty: Option<String>,
    /// Parameters, the receiver first.
    pub params: Vec<Param>,
    /// The return type.
    pub ret: Ty,
    /// Marked `#[jit_pure]` (what the macro marks of another module's
    /// functions whose bodies only compute on their arguments and
    /// constants), with scalar and enum parameters and result: a call
    /// with green arguments runs at compile time.
    pub pure: bool,
    /// It returns a shared reference that [`FnDef::ret`] names as the value
    /// (`&Obj` is `Obj`, see `Module::ty`): a residual call of it gives the
    /// referent in place.
    pub ret_shared: bool,
    /// The body.
    pub body: &'a syn::Block,
    /// Marked `#[jit_opaque]`.
    pub opaque: bool,
    /// The function's name token.
    pub span: Span,
}

impl FnDef<'_> {
    /// Whether its signature has type parameters ([`Ty::Param`]): it is
    /// never analyzed, each call is a residual call of it as it is.
    pub fn is_generic(&self) -> bool {
        self.params.iter().map(|p| &p.ty).chain([&self.ret]).any(Ty::has_param)
    }
}

/// Everything the annotator knows about the module's items.
#[derive(Debug, Default)]
pub struct ModuleDef<'a> {
    /// Structs by name.
    pub structs: IndexMap<String, StructDef>,
    /// Enums by name.
    pub enums: IndexMap<String, EnumDef>,
    /// Constants by name.
    pub consts: IndexMap<String, Const>,
    /// Constants whose initializers are read where the constants are used
    /// (see [`const_read_where_used`]), by name: their types and
    /// initializers. A table (`const OPS: [Op; 3] = [..]`) is read by
    /// indexing it, as a `match` on the index; a scalar's initializer
    /// (`1 << 20`, `N * 2`) is computed where it is read, green.
    pub const_exprs: IndexMap<String, (Ty, syn::Expr)>,
    /// Type aliases by name.
    pub aliases: IndexMap<String, Ty>,
    /// The generic arguments an alias gives its type, as written
    /// (`<StackFrame>` of `type CallStack = Vec<StackFrame>`).
    pub alias_args: IndexMap<String, syn::AngleBracketedGenericArguments>,
    /// Type aliases with type parameters: their parameters' names and the
    /// type they stand for, expanded where used.
    pub generic_aliases: IndexMap<String, (Vec<String>, syn::Type)>,
    /// Functions and methods by name.
    pub fns: IndexMap<String, FnDef<'a>>,
    /// The names of the types and methods read from other modules (see
    /// `read_with_external`).
    pub external: std::collections::HashSet<String>,
    /// Types of other modules the analysis does not model but knows the
    /// methods of: their names (unqualified) and their text.
    pub opaque_types: IndexMap<String, String>,
    /// The type parameters of the signature being read (see [`Ty::Param`]).
    type_params: Vec<String>,
    /// The module's `macro_rules!` macros by name, expanded where used.
    pub macros: std::collections::HashMap<String, Vec<crate::macro_rules::Rule>>,
    /// What the analysis leaves to Rust, with why: functions whose
    /// signatures it cannot read (generic, async, types it does not model)
    /// and items it does not look into (statics, nested modules, macros).
    /// Code that uses them is itself left to Rust (see `crate::Analysis`).
    pub skipped: Vec<(String, Vec<syn::Error>)>,
    /// Methods read from trait impls (`Type::method`), see `read_trait_impl`.
    pub trait_methods: std::collections::HashSet<String>,
}

/// Whether a type `found` says yes to occurs anywhere in `t`.
fn occurs(t: &Ty, found: &dyn Fn(&Ty) -> bool) -> bool {
    found(t)
        || match t {
            Ty::Ref { to: x, .. } | Ty::Boxed(x) | Ty::Vec(x) | Ty::Slice(x) | Ty::Array(x, _) | Ty::Option(x) => {
                occurs(x, found)
            }
            Ty::Map(k, v) | Ty::Result(k, v) => occurs(k, found) || occurs(v, found),
            Ty::Tuple(ts) => ts.iter().any(|x| occurs(x, found)),
            _ => false,
        }
}

/// Whether a tuple occurs anywhere in `t`.
fn has_tuple(t: &Ty) -> bool {
    occurs(t, &|x| matches!(x, Ty::Tuple(_)))
}

/// Whether `&str` occurs anywhere in `t`.
fn has_text(t: &Ty) -> bool {
    occurs(t, &|x| *x == Ty::Text)
}

/// Whether `t` is the type `str` (by any path to it).
fn is_str(t: &syn::Type) -> bool {
    matches!(t, syn::Type::Path(p) if p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "str" && s.arguments.is_empty()))
}

/// Whether `#[derive(..)]` among `attrs` names `name`.
fn derives(attrs: &[syn::Attribute], name: &str) -> bool {
    attrs.iter().filter(|a| a.path().is_ident("derive")).any(|a| {
        let mut found = false;
        let _ = a.parse_nested_meta(|m| {
            found |= m.path.segments.last().is_some_and(|s| s.ident == name);
            Ok(())
        });
        found
    })
}

fn has_attr(attrs: &[syn::Attribute], name: &str) -> bool {
    attrs.iter().any(|a| a.path().is_ident(name))
}

fn err(span: impl Spanned, msg: impl std::fmt::Display) -> syn::Error {
    syn::Error::new(span.span(), msg)
}

impl<'a> ModuleDef<'a> {
    /// Reads the items of a module; errors are pushed to `errors`.
    pub fn read(items: &'a [syn::Item], errors: &mut Vec<syn::Error>) -> ModuleDef<'a> {
        ModuleDef::read_with_external(items, items.len(), errors, &mut vec![])
    }

    /// Reads the items of a module, the first `own` of `items`, and the
    /// external items after them (types of other modules, see
    /// `crate::annotate_items_with`): errors of the module's items are
    /// pushed to `errors`, those of external items to `external_errors`.
    pub fn read_with_external(
        items: &'a [syn::Item],
        own: usize,
        module_errors: &mut Vec<syn::Error>,
        external_errors: &mut Vec<syn::Error>,
    ) -> ModuleDef<'a> {
        let mut m = ModuleDef::default();
        m.register_names(items, own);
        m.read_aliases(items);
        for (k, item) in items.iter().enumerate() {
            let errors = if k < own { &mut *module_errors } else { &mut *external_errors };
            match item {
                syn::Item::Struct(s) => {
                    if let Err(e) = no_type_generics(&s.generics) {
                        errors.push(e);
                    }
                    let mut fields = IndexMap::new();
                    for (i, f) in s.fields.iter().enumerate() {
                        let name = f.ident.as_ref().map_or(i.to_string(), |i| i.to_string());
                        match m.field_ty(&f.ty) {
                            Ok(t) => {
                                fields.insert(name, t);
                            }
                            Err(e) => {
                                errors.push(e);
                                fields.insert(name, Ty::Error);
                            }
                        }
                    }
                    m.structs[&s.ident.to_string()].fields = fields;
                }
                syn::Item::Enum(en) => {
                    if let Err(e) = no_type_generics(&en.generics) {
                        errors.push(e);
                    }
                    let mut variants = vec![];
                    let mut next = 0i128;
                    for v in &en.variants {
                        let discriminant = match &v.discriminant {
                            None => next,
                            Some((_, d)) => m.discriminant(d).unwrap_or_else(|e| {
                                errors.push(e);
                                next
                            }),
                        };
                        next = discriminant.wrapping_add(1);
                        let named = matches!(v.fields, syn::Fields::Named(_));
                        let mut fields = vec![];
                        for (i, f) in v.fields.iter().enumerate() {
                            let name = f.ident.as_ref().map_or(i.to_string(), |i| i.to_string());
                            match m.payload_ty(&f.ty) {
                                Ok(t) => fields.push((name, t)),
                                // Kept, poisoned: uses of the variant add no errors.
                                Err(e) => {
                                    errors.push(e);
                                    fields.push((name, Ty::Error));
                                }
                            }
                        }
                        variants.push(VariantDef { name: v.ident.to_string(), fields, named, discriminant });
                    }
                    m.enums[&en.ident.to_string()].variants = variants;
                }
                // A const the analysis cannot evaluate (a table, an
                // arithmetic expression) is Rust's: code that uses it runs
                // as Rust, as for a static.
                syn::Item::Const(c) => m.read_const(c.ident.to_string(), &c.ty, &c.expr, None),
                syn::Item::Fn(f) => {
                    let opaque = has_attr(&f.attrs, "jit_opaque");
                    m.read_fn(&f.sig, &f.block, None, opaque, errors);
                    m.mark_pure(&f.attrs, f.sig.ident.to_string());
                }
                syn::Item::Impl(imp) => {
                    if imp.trait_.is_some() {
                        // Read after every inherent method (see `read_trait_impl`).
                        continue;
                    }
                    let shown = imp.self_ty.to_token_stream().to_string();
                    if let Err(e) = no_type_generics(&imp.generics) {
                        m.skipped.push((shown, vec![e]));
                        continue;
                    }
                    let self_name = match m.ty(&imp.self_ty, None) {
                        Ok(Ty::Struct(n) | Ty::Enum(n)) => n,
                        // A type of another module the analysis does not
                        // model: its methods' signatures type the residual
                        // calls of them (see `lower`'s opaque objects).
                        Err(_) if k >= own => {
                            let text = type_text(&imp.self_ty);
                            let name = crate::types::unqualified(&text).to_string();
                            m.opaque_types.insert(name.clone(), text);
                            name
                        }
                        Ok(_) => {
                            m.skipped.push((
                                shown,
                                vec![err(&imp.self_ty, "an impl on a type other than a struct or enum of the module is not analyzed: its methods run as Rust")],
                            ));
                            continue;
                        }
                        Err(e) => {
                            m.skipped.push((shown, vec![e]));
                            continue;
                        }
                    };
                    for ii in &imp.items {
                        match ii {
                            syn::ImplItem::Fn(f) => {
                                let opaque = has_attr(&f.attrs, "jit_opaque");
                                m.read_fn(&f.sig, &f.block, Some(&self_name), opaque, errors);
                                m.mark_pure(&f.attrs, format!("{self_name}::{}", f.sig.ident));
                            }
                            syn::ImplItem::Const(c) => {
                                let name = format!("{self_name}::{}", c.ident);
                                m.read_const(name, &c.ty, &c.expr, Some(&self_name));
                            }
                            other => m.skipped.push((
                                String::new(),
                                vec![err(other, "only methods and consts of impls are analyzed: code that uses this item runs as Rust")],
                            )),
                        }
                    }
                }
                syn::Item::Use(_) | syn::Item::Type(_) => {}
                syn::Item::Trait(_) => {}
                syn::Item::Mod(md) => m.skipped.push((
                    md.ident.to_string(),
                    vec![err(&md.ident, "a nested module is not analyzed: code that uses its items runs as Rust")],
                )),
                syn::Item::Static(st) => m.skipped.push((
                    st.ident.to_string(),
                    vec![err(
                        &st.ident,
                        "a static is not analyzed (global mutable state hides from the JIT): code that uses it runs as Rust; a `const`, or a parameter, can compile",
                    )],
                )),
                syn::Item::Macro(mac) if mac.mac.path.is_ident("macro_rules") && mac.ident.is_some() => {
                    match crate::macro_rules::read_rules(&mac.mac.tokens) {
                        Some(rules) => {
                            m.macros.insert(mac.ident.as_ref().expect("checked").to_string(), rules);
                        }
                        None => m.skipped.push((
                            mac.ident.as_ref().expect("checked").to_string(),
                            vec![err(&mac.mac.path, "a macro whose rules the analysis cannot read: code that uses it runs as Rust")],
                        )),
                    }
                }
                syn::Item::Macro(mac) => m.skipped.push((
                    mac.mac.path.segments.last().map_or_else(String::new, |s| s.ident.to_string()),
                    vec![err(&mac.mac.path, "a macro item is not analyzed: code that uses the macro runs as Rust")],
                )),
                other => m.skipped.push((
                    String::new(),
                    vec![err(other, "this kind of item is not analyzed: code that uses it runs as Rust")],
                )),
            }
        }
        m.fold_const_exprs();
        for item in &items[..own] {
            if let syn::Item::Impl(imp) = item {
                if imp.trait_.is_some() {
                    m.read_trait_impl(imp, module_errors);
                }
            }
        }
        m
    }

    /// The names of the structs and enums of `items`, so that types may
    /// refer to each other in any order, and which items are external (after
    /// the first `own`).
    fn register_names(&mut self, items: &'a [syn::Item], own: usize) {
        for item in &items[own..] {
            match item {
                syn::Item::Struct(s) => drop(self.external.insert(s.ident.to_string())),
                syn::Item::Enum(e) => drop(self.external.insert(e.ident.to_string())),
                syn::Item::Impl(i) => {
                    let text = type_text(&i.self_ty);
                    let ty = crate::types::unqualified(&text);
                    for ii in &i.items {
                        // A method not marked `#[jit_opaque]` is one the
                        // macro found only computing on its arguments, in
                        // terms the annotated module can name: analyzed as
                        // the module's own are.
                        match ii {
                            syn::ImplItem::Fn(f) if has_attr(&f.attrs, "jit_opaque") => {
                                self.external.insert(format!("{ty}::{}", f.sig.ident));
                            }
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        // First the names, so that types may refer to each other in any order.
        for item in items {
            match item {
                syn::Item::Struct(s) => {
                    self.structs.insert(
                        s.ident.to_string(),
                        StructDef {
                            fields: IndexMap::new(),
                            virtualizable: has_attr(&s.attrs, "virtualizable"),
                            lifetimes: s.generics.lifetimes().count(),
                            copy: derives(&s.attrs, "Copy"),
                            clone: derives(&s.attrs, "Clone"),
                            derives_eq: derives(&s.attrs, "PartialEq"),
                            drops: items.iter().any(|i| implements_drop(i, &s.ident)),
                        },
                    );
                }
                syn::Item::Enum(e) => {
                    self.enums.insert(
                        e.ident.to_string(),
                        EnumDef {
                            variants: vec![],
                            derives_eq: derives(&e.attrs, "PartialEq"),
                            default_variant: e
                                .variants
                                .iter()
                                .find(|v| v.fields.is_empty() && has_attr(&v.attrs, "default"))
                                .filter(|_| derives(&e.attrs, "Default"))
                                .map(|v| v.ident.to_string()),
                        },
                    );
                }
                _ => {}
            }
        }
    }

    fn read_fn(
        &mut self,
        sig: &syn::Signature,
        body: &'a syn::Block,
        self_ty: Option<&str>,
        opaque: bool,
        module_errors: &mut Vec<syn::Error>,
    ) {
        // A signature jitgen cannot read leaves the function to Rust.
        let mut own = vec![];
        let errors = &mut own;
        // A generic function is called as it is, a residual call whose type
        // arguments Rust infers; its signature's type parameters are
        // instantiated at each call (`lower`).
        let mut opaque = opaque;
        self.type_params.clear();
        for p in &sig.generics.params {
            match p {
                syn::GenericParam::Lifetime(_) => {}
                syn::GenericParam::Type(t) => {
                    self.type_params.push(t.ident.to_string());
                    opaque = true;
                }
                syn::GenericParam::Const(c) => errors.push(err(
                    c,
                    "const generic parameters are not supported inside #[jit_interpreter]; write the concrete value",
                )),
            }
        }
        if let Some(a) = &sig.asyncness {
            errors.push(err(a, "async functions are not supported by jitgen"));
        }
        let mut params = vec![];
        for input in &sig.inputs {
            match input {
                syn::FnArg::Receiver(r) => {
                    let Some(st) = self_ty else {
                        errors.push(err(r, "`self` outside an impl"));
                        continue;
                    };
                    let base = self.named(st);
                    let ty = match &r.kind {
                        syn::ReceiverKind::Value => base,
                        // `&self` of a value (an enum of the module): the
                        // value itself, as for a parameter `x: &Value`.
                        syn::ReceiverKind::Reference(_, _, None) if base.is_value() => base,
                        syn::ReceiverKind::Reference(_, _, m) => Ty::Ref { mutable: m.is_some(), to: Box::new(base) },
                        syn::ReceiverKind::Typed(_, t) => match self.ty(t, self_ty) {
                            Ok(t) => t,
                            Err(e) => {
                                errors.push(e);
                                Ty::Error
                            }
                        },
                        _ => {
                            errors.push(err(r, "unsupported receiver"));
                            Ty::Error
                        }
                    };
                    let shared = matches!(&r.kind, syn::ReceiverKind::Reference(_, _, None));
                    params.push(Param {
                        name: "self".into(),
                        ty,
                        mutable: r.mutability.is_some(),
                        shared,
                        span: r.self_token.span,
                    });
                }
                syn::FnArg::Typed(pt) => {
                    let ty = match self.ty(&pt.ty, self_ty) {
                        Ok(t) => t,
                        Err(e) => {
                            errors.push(e);
                            Ty::Error
                        }
                    };
                    let shared = matches!(&*pt.ty, syn::Type::Reference(r) if r.mutability.is_none());
                    match &*pt.pat {
                        syn::Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => params.push(Param {
                            name: pi.ident.to_string(),
                            ty,
                            mutable: pi.mutability.is_some(),
                            shared,
                            span: pi.ident.span(),
                        }),
                        syn::Pat::Wild(w) => {
                            params.push(Param { name: "_".into(), ty, mutable: false, shared, span: w.span() })
                        }
                        p => {
                            errors.push(err(p, "parameters must be plain names (`x: T`); destructure inside the body"))
                        }
                    }
                }
            }
        }
        let ret = match &sig.output {
            syn::ReturnType::Default => Ty::Unit,
            syn::ReturnType::Type(_, t) => self.ty(t, self_ty).unwrap_or_else(|e| {
                errors.push(e);
                Ty::Error
            }),
        };
        self.type_params.clear();
        let name = match self_ty {
            Some(s) => format!("{s}::{}", sig.ident),
            None => sig.ident.to_string(),
        };
        if self.fns.contains_key(&name) {
            module_errors.push(err(&sig.ident, format!("`{name}` is defined twice")));
            return;
        }
        if !own.is_empty() && crate::flowgraph::has_merge_point(body) {
            // A portal cannot be left to Rust and keep its merge point.
            module_errors.extend(own);
            return;
        }
        if !own.is_empty() {
            self.skipped.push((name, own));
            return;
        }
        self.fns.insert(
            name.clone(),
            FnDef {
                name,
                self_ty: self_ty.map(str::to_string),
                params,
                ret_shared: matches!(&sig.output, syn::ReturnType::Type(_, t) if matches!(&**t, syn::Type::Reference(r) if r.mutability.is_none()))
                    && !matches!(ret, Ty::Ref { .. } | Ty::Str),
                ret,
                body,
                opaque,
                pure: false,
                span: sig.ident.span(),
            },
        );
    }

    /// Reads a `const`: a literal is a constant of the analysis; a table or
    /// a scalar computed from literals and other consts is read where it
    /// is used ([`ModuleDef::const_exprs`]); anything else is Rust's, and
    /// code that uses it runs as Rust, as for a static.
    fn read_const(&mut self, name: String, ty: &syn::Type, init: &syn::Expr, self_ty: Option<&str>) {
        let t = match self.ty(ty, self_ty) {
            Ok(t) => t,
            Err(e) => return self.skipped.push((name, vec![e])),
        };
        match const_value(init, &t) {
            Ok(v) => {
                self.consts.insert(name, v);
            }
            Err(_) if const_read_where_used(&t, init) => {
                // Read elsewhere, `Self` in an impl's const must name its type.
                let mut init = init.clone();
                if let Some(Ok(ident)) = self_ty.map(syn::parse_str::<syn::Ident>) {
                    struct NameSelf(syn::Ident);
                    impl VisitMut for NameSelf {
                        fn visit_path_segment_mut(&mut self, s: &mut syn::PathSegment) {
                            if s.ident == "Self" {
                                s.ident = self.0.clone();
                            }
                            syn::visit_mut::visit_path_segment_mut(self, s);
                        }
                    }
                    NameSelf(ident).visit_expr_mut(&mut init);
                }
                self.const_exprs.insert(name, (t, init));
            }
            Err(e) => self.skipped.push((name, vec![e])),
        }
    }

    /// Moves the integer consts read where used whose initializers fold
    /// (`1 << SHIFT`, `Self::BASE * 2 + 1`: integer literals, other integer
    /// consts, operators and casts) to [`ModuleDef::consts`], so that
    /// patterns, array lengths and the analysis see their values. Repeated
    /// while one folds, as a const may name one written after it.
    fn fold_const_exprs(&mut self) {
        loop {
            let folded: Vec<(String, Const)> = self
                .const_exprs
                .iter()
                .filter_map(|(name, (t, init))| {
                    let Ty::Int(it) = t else { return None };
                    let v = self.fold_int(init)?;
                    (wrap_int(v, *it) == v).then(|| (name.clone(), Const::Int(v, *it)))
                })
                .collect();
            if folded.is_empty() {
                return;
            }
            for (name, c) in folded {
                self.const_exprs.shift_remove(&name);
                self.consts.insert(name, c);
            }
        }
    }

    /// The value of an integer const's initializer, where it folds (see
    /// [`ModuleDef::fold_const_exprs`]): `None` where it names what is not
    /// an integer const, or overflows.
    fn fold_int(&self, e: &syn::Expr) -> Option<i128> {
        use syn::BinOp as B;
        match e {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => i.base10_parse::<i128>().ok(),
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Byte(b), .. }) => Some(b.value() as i128),
            syn::Expr::Paren(p) => self.fold_int(&p.expr),
            syn::Expr::Path(p) => {
                let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
                let name = match segs.as_slice() {
                    [one] => one.clone(),
                    [.., ty, last] => format!("{ty}::{last}"),
                    [] => return None,
                };
                match self.consts.get(&name) {
                    Some(Const::Int(v, _)) => Some(*v),
                    _ => None,
                }
            }
            syn::Expr::Unary(u) => {
                let v = self.fold_int(&u.expr)?;
                match u.op {
                    syn::UnOp::Neg(_) => v.checked_neg(),
                    // `!` depends on the width: folded by the cast of the
                    // result to the const's type, as a two's complement.
                    syn::UnOp::Not(_) => Some(!v),
                    _ => None,
                }
            }
            syn::Expr::Cast(c) => {
                let Ok(Ty::Int(it)) = self.ty(&c.ty, None) else { return None };
                Some(wrap_int(self.fold_int(&c.expr)?, it))
            }
            syn::Expr::Binary(b) => {
                let (l, r) = (self.fold_int(&b.left)?, self.fold_int(&b.right)?);
                match b.op {
                    B::Add(_) => l.checked_add(r),
                    B::Sub(_) => l.checked_sub(r),
                    B::Mul(_) => l.checked_mul(r),
                    B::Div(_) => l.checked_div(r),
                    B::Rem(_) => l.checked_rem(r),
                    B::BitAnd(_) => Some(l & r),
                    B::BitOr(_) => Some(l | r),
                    B::BitXor(_) => Some(l ^ r),
                    B::Shl(_) if (0..64).contains(&r) => l.checked_mul(1i128 << r),
                    B::Shr(_) if (0..127).contains(&r) => Some(l >> r),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// Marks the function `name` just read pure (see [`FnDef::pure`]) when
    /// `attrs` say so and its types allow it.
    fn mark_pure(&mut self, attrs: &[syn::Attribute], name: String) {
        if !has_attr(attrs, "jit_pure") {
            return;
        }
        let value = |t: &Ty| matches!(t, Ty::Int(_) | Ty::Bool | Ty::Char | Ty::F64 | Ty::Enum(_));
        if let Some(f) = self.fns.get_mut(&name) {
            f.pure = f.params.iter().all(|p| value(&p.ty) && !p.shared) && value(&f.ret) && !f.ret_shared;
        }
    }

    /// The type of a module struct or enum by name (or of an opaque type
    /// whose methods are known).
    pub fn named(&self, name: &str) -> Ty {
        if let Some(text) = self.opaque_types.get(name) {
            return Ty::Foreign(text.clone());
        }
        if self.enums.contains_key(name) {
            Ty::Enum(name.into())
        } else {
            Ty::Struct(name.into())
        }
    }

    /// Reads the module's type aliases: generic ones are expanded where
    /// used; one of a type the analysis does not model names an opaque
    /// object.
    fn read_aliases(&mut self, items: &[syn::Item]) {
        let m = self;
        for item in items {
            if let syn::Item::Type(t) = item {
                let params: Vec<String> = t.generics.type_params().map(|p| p.ident.to_string()).collect();
                if !params.is_empty() {
                    // `type Run<T> = Result<T, Error>;`: expanded where used.
                    m.generic_aliases.insert(t.ident.to_string(), (params, (*t.ty).clone()));
                    continue;
                }
                match m.ty(&t.ty, None) {
                    Ok(ty) => {
                        if let syn::Type::Path(tp) = &*t.ty {
                            if let Some(syn::PathArguments::AngleBracketed(a)) =
                                tp.path.segments.last().map(|s| &s.arguments)
                            {
                                m.alias_args.insert(t.ident.to_string(), a.clone());
                            }
                        }
                        m.aliases.insert(t.ident.to_string(), ty);
                    }
                    // A type the analysis does not model (a `fn` pointer):
                    // an opaque object, named by the alias (as a field of
                    // that type is, see `field_ty`).
                    Err(_) if !mentions_self(&t.ty) => {
                        m.aliases.insert(t.ident.to_string(), Ty::Foreign(t.ident.to_string()));
                    }
                    // Code that uses the alias is left to Rust in turn.
                    Err(e) => m.skipped.push((t.ident.to_string(), vec![e])),
                }
            }
        }
    }

    /// Whether a path names a type from outside the module that jitgen may
    /// treat as opaque: no type arguments, not a type jitgen knows or rejects.
    fn foreign(&self, p: &syn::TypePath) -> bool {
        let seg = p.path.segments.last().expect("non-empty path");
        let name = seg.ident.to_string();
        matches!(seg.arguments, syn::PathArguments::None)
            && IntTy::from_name(&name).is_none()
            && !matches!(name.as_str(), "String" | "str" | "Self" | "Vec" | "Box" | "HashMap" | "Option" | "Result")
            && !self.structs.contains_key(&name)
            && !self.enums.contains_key(&name)
    }

    /// The key and value types of an opaque object that is a map of the
    /// standard library's interface (`get`, `insert`, `remove`,
    /// `contains_key`): a type written `FxHashMap<K, V>`, `HashMap<K, V, S>`,
    /// `BTreeMap<K, V>`, ..., whose name ends in `Map`, with two type
    /// arguments or more, the first two types the analysis models.
    pub fn map_like(&self, text: &str) -> Option<(Ty, Ty)> {
        let syn::Type::Path(p) = syn::parse_str::<syn::Type>(text).ok()? else { return None };
        let seg = p.path.segments.last()?;
        if !seg.ident.to_string().ends_with("Map") {
            return None;
        }
        let syn::PathArguments::AngleBracketed(a) = &seg.arguments else { return None };
        let mut tys = a.args.iter().filter_map(|g| match g {
            syn::GenericArgument::Type(t) => Some(t),
            _ => None,
        });
        let (k, v) = (tys.next()?, tys.next()?);
        // A key the analysis does not model but compiled code may own
        // (`Rc<str>`): an opaque object the calls take by address.
        let key = match self.ty(k, None) {
            Ok(t) => t,
            Err(_) if crate::types::shared_opaque(&type_text(k)) => Ty::Foreign(type_text(k)),
            Err(_) => return None,
        };
        Some((key, self.ty(v, None).ok()?))
    }

    /// The methods of a trait impl for a struct or enum of the module
    /// (`impl From<u8> for Op`): functions `Type::method` like inherent
    /// ones, called by path (`Op::from(b)`, `Op::try_from(b)`) and by the
    /// conversions that resolve to them (`b.into()`, see `lower`), with
    /// `Self::Name` in signatures the impl's associated type. A name two
    /// impls of the type define (`From<u8>` and `From<char>`) is left out:
    /// which one a call means is Rust's to decide. Nothing of a trait impl
    /// is reported as left to Rust: its methods run as Rust where analyzed
    /// code does not call them.
    fn read_trait_impl(&mut self, imp: &'a syn::ItemImpl, errors: &mut Vec<syn::Error>) {
        let self_name = match self.ty(&imp.self_ty, None) {
            Ok(Ty::Struct(n) | Ty::Enum(n)) if no_type_generics(&imp.generics).is_ok() => n,
            _ => return,
        };
        let assoc: Vec<(String, syn::Type)> = imp
            .items
            .iter()
            .filter_map(|i| match i {
                syn::ImplItem::Type(t) => Some((t.ident.to_string(), t.ty.clone())),
                _ => None,
            })
            .collect();
        for ii in &imp.items {
            let syn::ImplItem::Fn(f) = ii else { continue };
            let name = format!("{self_name}::{}", f.sig.ident);
            if self.fns.contains_key(&name) && !self.trait_methods.contains(&name) {
                // An inherent method of that name: what `Type::name` means.
                continue;
            }
            if !self.trait_methods.insert(name.clone()) {
                // A second trait's: ambiguous.
                self.fns.shift_remove(&name);
                continue;
            }
            let mut sig = f.sig.clone();
            SelfAssoc(&assoc).visit_signature_mut(&mut sig);
            let mut own = vec![];
            self.read_fn(&sig, &f.block, Some(&self_name), has_attr(&f.attrs, "jit_opaque"), &mut own);
            errors.extend(own);
            // A signature it cannot read: not a reason to report.
            self.skipped.retain(|(n, _)| *n != name);
        }
    }

    /// An explicit discriminant: an integer literal (negated or not), or a
    /// const of the module.
    fn discriminant(&self, d: &syn::Expr) -> syn::Result<i128> {
        match d {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => i.base10_parse::<i128>(),
            syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => Ok(-self.discriminant(&u.expr)?),
            syn::Expr::Paren(p) => self.discriminant(&p.expr),
            syn::Expr::Path(p) => match p.path.get_ident().and_then(|i| self.consts.get(&i.to_string())) {
                Some(Const::Int(v, _)) => Ok(*v as i128),
                _ => Err(err(d, "an enum discriminant must be an integer literal or an integer const of the module")),
            },
            _ => Err(err(d, "an enum discriminant must be an integer literal or an integer const of the module")),
        }
    }

    /// An array's length as written (`[T; 8]`, `[x; NUM_REGS]`): an integer
    /// literal or a constant of the module.
    pub fn array_len(&self, e: &syn::Expr) -> Option<u64> {
        match e {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => i.base10_parse::<u64>().ok(),
            syn::Expr::Path(p) => match p.path.get_ident().and_then(|i| self.consts.get(&i.to_string())) {
                Some(Const::Int(v, _)) => u64::try_from(*v).ok(),
                _ => None,
            },
            _ => None,
        }
    }

    /// The type of a struct field or an enum payload: a tuple there would
    /// have to be one machine value, which tuples never are.
    fn stored_ty(&self, t: &syn::Type) -> syn::Result<Ty> {
        let ty = self.ty(t, None)?;
        if has_text(&ty) {
            // (A field holding `&str` is an opaque object, see `field_ty`.)
            return Err(err(t, STR_ADVICE));
        }
        if has_tuple(&ty) {
            return Err(err(
                t,
                "a tuple in a struct field or an enum payload is not supported by jitgen; use a struct of the module",
            ));
        }
        Ok(ty)
    }

    /// The type of a struct field: one the analysis does not model is an
    /// opaque object as a whole (`Ty::Foreign`, its Rust text), which
    /// compiled code reaches only by address: method calls on it are
    /// residual calls of Rust's own methods (see `lower`).
    fn field_ty(&self, t: &syn::Type) -> syn::Result<Ty> {
        match self.stored_ty(t) {
            Ok(ty) => Ok(ty),
            Err(_) if !mentions_self(t) => Ok(Ty::Foreign(type_text(t))),
            Err(e) => Err(e),
        }
    }

    /// The type of an enum payload: a field's (see `field_ty`), but
    /// `&'static str` (an error's message) is a value of two words, as a
    /// `&str` local is. (Text borrowed for a lifetime of the enum's stays an
    /// opaque object: its values are rebuilt as `'static`.)
    fn payload_ty(&self, t: &syn::Type) -> syn::Result<Ty> {
        match t {
            syn::Type::Reference(r)
                if r.mutability.is_none()
                    && is_str(&r.elem)
                    && r.lifetime.as_ref().is_some_and(|l| l.ident == "static") =>
            {
                Ok(Ty::Ref { mutable: false, to: Box::new(Ty::Text) })
            }
            t => self.field_ty(t),
        }
    }

    /// Converts a Rust type of a signature, field or ascription. Tuples are
    /// accepted only at the top (and inside tuples): their components live
    /// in separate variables, so `Vec<(A, B)>` or `Option<(A, B)>` cannot be.
    pub fn ty(&self, t: &syn::Type, self_ty: Option<&str>) -> syn::Result<Ty> {
        let ty = self.ty_inner(t, self_ty)?;
        let nested = match &ty {
            Ty::Tuple(ts) => ts.iter().any(|t| !matches!(t, Ty::Tuple(_)) && has_tuple(t)),
            t => has_tuple(t),
        };
        if nested {
            return Err(err(t, "a tuple inside this type is not supported by jitgen; use a struct of the module"));
        }
        Ok(ty)
    }

    fn ty_inner(&self, t: &syn::Type, self_ty: Option<&str>) -> syn::Result<Ty> {
        match t {
            syn::Type::Paren(p) => self.ty(&p.elem, self_ty),
            syn::Type::Group(g) => self.ty(&g.elem, self_ty),
            syn::Type::Tuple(tt) if tt.elems.is_empty() => Ok(Ty::Unit),
            syn::Type::Tuple(tt) => {
                Ok(Ty::Tuple(tt.elems.iter().map(|t| self.ty_inner(t, self_ty)).collect::<syn::Result<_>>()?))
            }
            syn::Type::Reference(r) if r.mutability.is_none() && is_str(&r.elem) => {
                Ok(Ty::Ref { mutable: false, to: Box::new(Ty::Text) })
            }
            syn::Type::Reference(r) => {
                let to = match (self.ty(&r.elem, self_ty), &*r.elem) {
                    (Ok(t), _) => t,
                    // A type from outside the module, behind a reference: opaque.
                    (Err(_), syn::Type::Path(p)) if p.qself.is_none() && self.foreign(p) => {
                        let path: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
                        Ty::Foreign(path.join("::"))
                    }
                    // A sized type the analysis does not model (generic
                    // ones too): opaque, one address (never `str` or `dyn`,
                    // whose references are two words).
                    (Err(_), syn::Type::Path(p))
                        if p.qself.is_none()
                            && !mentions_self(&r.elem)
                            && p.path.segments.last().is_some_and(|s| s.ident != "str") =>
                    {
                        Ty::Foreign(type_text(&r.elem))
                    }
                    (Err(e), _) => return Err(e),
                };
                if r.mutability.is_none() && to.is_value() {
                    // A shared reference to a value (`&i64`, `&Instruction`):
                    // the data is frozen while borrowed, so the reference is
                    // the value itself at the machine level.
                    return Ok(to);
                }
                Ok(Ty::Ref { mutable: r.mutability.is_some(), to: Box::new(to) })
            }
            syn::Type::Slice(s) => Ok(Ty::Slice(Box::new(self.ty(&s.elem, self_ty)?))),
            syn::Type::Array(a) => {
                let Some(n) = self.array_len(&a.len) else {
                    return Err(err(&a.len, "array lengths must be integer literals or consts of the module"));
                };
                Ok(Ty::Array(Box::new(self.ty(&a.elem, self_ty)?), n))
            }
            syn::Type::Path(p)
                if p.qself.is_none()
                    && p.path.get_ident().is_some_and(|i| self.type_params.contains(&i.to_string())) =>
            {
                Ok(Ty::Param(p.path.segments[0].ident.to_string()))
            }
            syn::Type::Path(p) if p.qself.is_none() => {
                let seg = p.path.segments.last().expect("non-empty path");
                let name = seg.ident.to_string();
                // The type arguments as written (`<A, B>`).
                let type_args = || -> syn::Result<Vec<&syn::Type>> {
                    let syn::PathArguments::AngleBracketed(a) = &seg.arguments else {
                        return Err(err(seg, format!("`{name}` needs type arguments")));
                    };
                    Ok(a.args
                        .iter()
                        .filter_map(|g| match g {
                            syn::GenericArgument::Type(t) => Some(t),
                            _ => None,
                        })
                        .collect())
                };
                let generic = |i: usize| -> syn::Result<Ty> {
                    let tys = type_args()?;
                    match tys.get(i) {
                        Some(t) => self.ty(t, self_ty),
                        None => Err(err(seg, format!("`{name}` needs type arguments"))),
                    }
                };
                if let Some(i) = IntTy::from_name(&name) {
                    return Ok(Ty::Int(i));
                }
                Ok(match name.as_str() {
                    "bool" => Ty::Bool,
                    "char" => Ty::Char,
                    "f64" => Ty::F64,
                    "f32" => Ty::F32,
                    "Vec" => Ty::Vec(Box::new(generic(0)?)),
                    // With a hasher of its own, a map is an opaque object
                    // (its layout is not `HashMap<K, V>`'s), see `map_like`.
                    "HashMap" if type_args()?.len() > 2 => {
                        return Err(err(seg, "a `HashMap` with a hasher is an object jitgen does not model"))
                    }
                    "HashMap" => Ty::Map(Box::new(generic(0)?), Box::new(generic(1)?)),
                    // `Box<dyn Error>`: an object the analysis does not
                    // model, which compiled code may own as a whole.
                    "Box" if matches!(type_args()?.first(), Some(syn::Type::TraitObject(_))) => {
                        Ty::Foreign(type_text(t))
                    }
                    "Box" => Ty::Boxed(Box::new(generic(0)?)),
                    "Option" => Ty::Option(Box::new(generic(0)?)),
                    "Result" => Ty::Result(Box::new(generic(0)?), Box::new(generic(1)?)),
                    "Self" => match self_ty {
                        Some(s) => self.named(s),
                        None => return Err(err(seg, "`Self` outside an impl")),
                    },
                    n if self.structs.contains_key(n) => Ty::Struct(n.into()),
                    n if self.enums.contains_key(n) => Ty::Enum(n.into()),
                    n if self.aliases.contains_key(n) => self.aliases[n].clone(),
                    n if self.generic_aliases.contains_key(n) => {
                        let (params, body) = &self.generic_aliases[n];
                        let args = type_args()?;
                        if args.len() != params.len() {
                            return Err(err(seg, format!("`{name}` takes {} type arguments", params.len())));
                        }
                        let mut expanded = body.clone();
                        SubstituteParams { params, args: &args }.visit_type_mut(&mut expanded);
                        return self.ty(&expanded, self_ty);
                    }
                    "String" => Ty::Str,
                    "str" => return Err(err(t, STR_ADVICE)),
                    _ => {
                        return Err(err(
                            t,
                            format!(
                                "type `{name}` is not supported here: use integers, bool, char, f64, references, Box, Vec, String, slices, arrays, Option, Result, or structs and enums defined in the module"
                            ),
                        ))
                    }
                })
            }
            syn::Type::TraitObject(_) => Err(err(
                t,
                format!(
                    "a trait object (`{}`) outside a `Box` is not supported by jitgen's analysis yet; own it as a `Box<dyn ..>` (an object compiled code holds without looking inside), or use a type of the module",
                    type_text(t)
                ),
            )),
            syn::Type::ImplTrait(_) => Err(err(t, "`impl Trait` is not supported by jitgen's analysis yet; name the type")),
            other => Err(err(other, format!("the type `{}` is not supported by jitgen's analysis", type_text(other)))),
        }
    }
}

/// Replaces a generic alias's type parameters by its arguments.
struct SubstituteParams<'p> {
    params: &'p [String],
    args: &'p [&'p syn::Type],
}

impl syn::visit_mut::VisitMut for SubstituteParams<'_> {
    fn visit_type_mut(&mut self, t: &mut syn::Type) {
        if let syn::Type::Path(p) = t {
            if let Some(i) = p.path.get_ident().and_then(|id| self.params.iter().position(|x| id == x)) {
                if p.qself.is_none() {
                    *t = self.args[i].clone();
                    return;
                }
            }
        }
        syn::visit_mut::visit_type_mut(self, t);
    }
}

/// A type as Rust text, spaced as written by hand (`BTreeMap<i64, u32>`).
fn type_text(t: &syn::Type) -> String {
    let mut s = t.to_token_stream().to_string();
    for (from, to) in [(" :: ", "::"), (":: ", "::"), (" <", "<"), ("< ", "<"), (" >", ">"), (" ,", ","), ("& ", "&")] {
        s = s.replace(from, to);
    }
    s
}

/// Whether a type names `Self` (meaningless outside its impl, so never an
/// opaque object's text).
fn mentions_self(t: &syn::Type) -> bool {
    t.to_token_stream().into_iter().any(|tt| matches!(tt, proc_macro2::TokenTree::Ident(i) if i == "Self"))
}

fn no_type_generics(g: &syn::Generics) -> syn::Result<()> {
    for p in &g.params {
        match p {
            syn::GenericParam::Lifetime(_) => {}
            other => return Err(err(other, "generic parameters are not supported inside #[jit_interpreter] (lifetimes are); write the concrete type")),
        }
    }
    Ok(())
}

/// Evaluates the initializer of a `const`: a literal, possibly negated.
pub fn const_value(e: &syn::Expr, ty: &Ty) -> syn::Result<Const> {
    let bad = || {
        err(e, "a const whose initializer is not a literal (possibly negated) is not analyzed: code that uses it runs as Rust")
    };
    match (e, ty) {
        (syn::Expr::Lit(l), _) => lit_const(&l.lit, ty).ok_or_else(bad),
        (syn::Expr::Unary(u), Ty::Int(_) | Ty::F64 | Ty::F32) if matches!(u.op, syn::UnOp::Neg(_)) => {
            match const_value(&u.expr, ty)? {
                Const::Int(v, t) => Ok(Const::Int(-v, t)),
                Const::Float(v, t) => Ok(Const::Float(-v, t)),
                _ => Err(bad()),
            }
        }
        (syn::Expr::Paren(p), _) => const_value(&p.expr, ty),
        _ => Err(bad()),
    }
}

/// The most elements a const table read by indexing may have (each is an
/// arm of the `match` its reads become).
pub const MAX_CONST_TABLE: usize = 256;

/// Whether a const of type `t` initialized by `init` is read where it is
/// used: an array written out element by element (a table, of at most
/// [`MAX_CONST_TABLE`]), or a scalar computed by operators and casts from
/// literals and paths (other consts, `u8::MAX`).
pub fn const_read_where_used(t: &Ty, init: &syn::Expr) -> bool {
    fn computed(e: &syn::Expr) -> bool {
        match e {
            syn::Expr::Lit(_) | syn::Expr::Path(_) => true,
            syn::Expr::Binary(b) => computed(&b.left) && computed(&b.right),
            syn::Expr::Unary(u) => computed(&u.expr),
            syn::Expr::Cast(c) => computed(&c.expr),
            syn::Expr::Paren(p) => computed(&p.expr),
            _ => false,
        }
    }
    match (t, init) {
        (Ty::Array(..), syn::Expr::Array(a)) => a.elems.len() <= MAX_CONST_TABLE,
        (t, e) => t.is_scalar() && computed(e),
    }
}

/// `v` as a value of the integer type `t`: its low bits, as `as` gives.
fn wrap_int(v: i128, t: IntTy) -> i128 {
    let bits = match t {
        IntTy::I8 | IntTy::U8 => 8,
        IntTy::I16 | IntTy::U16 => 16,
        IntTy::I32 | IntTy::U32 => 32,
        IntTy::I64 | IntTy::U64 | IntTy::Isize | IntTy::Usize => 64,
        IntTy::I128 | IntTy::U128 => return v,
    };
    let low = v & ((1i128 << bits) - 1);
    let signed = matches!(t, IntTy::I8 | IntTy::I16 | IntTy::I32 | IntTy::I64 | IntTy::Isize);
    if signed && low >> (bits - 1) == 1 {
        low - (1i128 << bits)
    } else {
        low
    }
}

/// A literal of a known type as a constant.
pub fn lit_const(l: &syn::Lit, ty: &Ty) -> Option<Const> {
    Some(match (l, ty) {
        (syn::Lit::Int(i), Ty::Int(t)) => Const::Int(i.base10_parse::<i128>().ok()?, *t),
        (syn::Lit::Byte(b), Ty::Int(IntTy::U8)) => Const::Int(b.value() as i128, IntTy::U8),
        (syn::Lit::Bool(b), Ty::Bool) => Const::Bool(b.value),
        (syn::Lit::Char(c), Ty::Char) => Const::Char(c.value()),
        (syn::Lit::Float(f), Ty::F64 | Ty::F32) => Const::Float(f.base10_parse::<f64>().ok()?, ty.clone()),
        (syn::Lit::Int(i), Ty::F64 | Ty::F32) => Const::Float(i.base10_parse::<f64>().ok()?, ty.clone()),
        _ => return None,
    })
}

/// What to write instead of the type `str`.
pub const STR_ADVICE: &str = "the type `str` is supported by jitgen's analysis only as `&str` in a signature or a local (an opaque value): use `&str` there, a `String` (made by `String::from(\"..\")` or `format!`), an enum of the module, or program text as bytes (`&[u8]`)";

/// Replaces `Self::Name` in a trait impl's signature by the impl's
/// associated type `Name` (`Self::Error` of a `TryFrom`).
struct SelfAssoc<'t>(&'t [(String, syn::Type)]);

impl VisitMut for SelfAssoc<'_> {
    fn visit_type_mut(&mut self, t: &mut syn::Type) {
        if let syn::Type::Path(p) = t {
            let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
            if p.qself.is_none() && segs.len() == 2 && segs[0] == "Self" {
                if let Some((_, ty)) = self.0.iter().find(|(n, _)| *n == segs[1]) {
                    *t = ty.clone();
                    return;
                }
            }
        }
        syn::visit_mut::visit_type_mut(self, t);
    }
}

/// Whether `item` is `impl Drop for name`.
fn implements_drop(item: &syn::Item, name: &syn::Ident) -> bool {
    let syn::Item::Impl(imp) = item else { return false };
    let is_drop = match &imp.trait_ {
        Some((path, _)) => path.segments.last().is_some_and(|s| s.ident == "Drop"),
        None => false,
    };
    let of_name =
        matches!(&*imp.self_ty, syn::Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == *name));
    is_drop && of_name
}

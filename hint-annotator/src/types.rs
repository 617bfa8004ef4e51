//! Machine-level types of flow-graph variables, and their inference.
//!
//! Types are inferred by unification, as rustc does for the subset we accept:
//! signatures, ascriptions, literals, struct fields, enum payloads and method
//! signatures give types; an unsuffixed integer literal takes its type from its
//! use and defaults to `i32` (a float to `f64`) when nothing constrains it.
//!
//! At the machine level, structs, vectors, strings, boxes, slices, arrays and
//! references are all *pointers* to memory; integers, bools, chars, floats and enums
//! (including `Option` and `Result`) are values.

use std::fmt;

/// An integer type: width and signedness.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[allow(missing_docs)]
pub enum IntTy {
    I8,
    I16,
    I32,
    I64,
    I128,
    Isize,
    U8,
    U16,
    U32,
    U64,
    U128,
    Usize,
}

impl IntTy {
    /// All integer types, in a fixed order.
    pub const ALL: [IntTy; 12] = [
        IntTy::I8,
        IntTy::I16,
        IntTy::I32,
        IntTy::I64,
        IntTy::I128,
        IntTy::Isize,
        IntTy::U8,
        IntTy::U16,
        IntTy::U32,
        IntTy::U64,
        IntTy::U128,
        IntTy::Usize,
    ];

    /// The Rust spelling (`i64`, `usize`, ...).
    pub fn name(self) -> &'static str {
        match self {
            IntTy::I8 => "i8",
            IntTy::I16 => "i16",
            IntTy::I32 => "i32",
            IntTy::I64 => "i64",
            IntTy::I128 => "i128",
            IntTy::Isize => "isize",
            IntTy::U8 => "u8",
            IntTy::U16 => "u16",
            IntTy::U32 => "u32",
            IntTy::U64 => "u64",
            IntTy::U128 => "u128",
            IntTy::Usize => "usize",
        }
    }

    /// Parses a Rust integer type name.
    pub fn from_name(s: &str) -> Option<IntTy> {
        IntTy::ALL.into_iter().find(|t| t.name() == s)
    }

    /// Whether the type is signed.
    pub fn signed(self) -> bool {
        matches!(self, IntTy::I8 | IntTy::I16 | IntTy::I32 | IntTy::I64 | IntTy::I128 | IntTy::Isize)
    }

    /// Width in bits (pointer-sized types are 64 bits on our targets).
    pub fn bits(self) -> u32 {
        match self {
            IntTy::I8 | IntTy::U8 => 8,
            IntTy::I16 | IntTy::U16 => 16,
            IntTy::I32 | IntTy::U32 => 32,
            IntTy::I64 | IntTy::U64 | IntTy::Isize | IntTy::Usize => 64,
            IntTy::I128 | IntTy::U128 => 128,
        }
    }
}

/// A machine-level type.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Ty {
    /// `()`.
    Unit,
    /// `bool`.
    Bool,
    /// `char`.
    Char,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// An integer.
    Int(IntTy),
    /// `&T` (shared: the data behind it is frozen while borrowed) or `&mut T`.
    Ref {
        /// `&mut`.
        mutable: bool,
        /// The referent.
        to: Box<Ty>,
    },
    /// `Box<T>`.
    Boxed(Box<Ty>),
    /// `Vec<T>`.
    Vec(Box<Ty>),
    /// `HashMap<K, V>`.
    Map(Box<Ty>, Box<Ty>),
    /// `String`: an object residual code never looks inside; every
    /// operation on it is a residual call of Rust's own (see `lower`).
    Str,
    /// `[T]`, behind a reference.
    Slice(Box<Ty>),
    /// `str`, behind a reference: text the analysis never looks inside.
    /// `&str` is two words (address and length), as a slice is; every
    /// operation on it is Rust's own, outlined.
    Text,
    /// `[T; N]`.
    Array(Box<Ty>, u64),
    /// A struct of the annotated module.
    Struct(String),
    /// An enum of the annotated module.
    Enum(String),
    /// A type the analysis does not model (its Rust text): behind a
    /// reference, or as a struct field. An opaque object: the analysis never
    /// looks inside; compiled code holds its address, passes it on to calls
    /// that are not inlined (an output sink, a host object) and calls its
    /// methods as residual calls of Rust's own.
    Foreign(String),
    /// `Option<T>`.
    Option(Box<Ty>),
    /// `Result<T, E>`.
    Result(Box<Ty>, Box<Ty>),
    /// A tuple of two or more components: never one machine value, its
    /// components are kept in separate variables (see `lower`).
    Tuple(Vec<Ty>),
    /// The type of an expression that never completes (`return`, `break`, a panic).
    Never,
    /// The type of an expression that already produced an error: unifies with
    /// everything, so that one mistake gives one error.
    Error,
    /// An inference variable (only during inference).
    Infer(u32),
    /// A type parameter of a generic function's signature (`T` of `fn
    /// error<T>(..) -> Result<T, E>`): each call stands for a fresh
    /// inference variable, and Rust infers the same type where the call is
    /// compiled (a generic function is always a residual call).
    Param(String),
}

impl Ty {
    /// The type with references and boxes stripped: what field access and
    /// method calls auto-dereference to.
    pub fn autoderef(&self) -> &Ty {
        match self {
            Ty::Ref { to, .. } | Ty::Boxed(to) => to.autoderef(),
            t => t,
        }
    }

    /// Whether values of this type are pointers to memory at the machine level.
    pub fn is_pointer(&self) -> bool {
        matches!(
            self,
            Ty::Ref { .. }
                | Ty::Boxed(_)
                | Ty::Vec(_)
                | Ty::Map(..)
                | Ty::Str
                | Ty::Slice(_)
                | Ty::Array(..)
                | Ty::Struct(_)
                | Ty::Foreign(_)
        )
    }

    /// Whether this is a shared reference (`&T`): Rust forbids mutation of the
    /// data behind it while it lives, so reads through it are foldable.
    pub fn is_shared_ref(&self) -> bool {
        matches!(self, Ty::Ref { mutable: false, .. })
    }

    /// Whether values of this type are plain values at the machine level
    /// (scalars, enums, `Option` and `Result` of values): what a shared
    /// reference to it may stand for.
    pub fn is_value(&self) -> bool {
        match self {
            Ty::Enum(_) => true,
            Ty::Option(t) => t.is_value(),
            Ty::Result(t, e) => t.is_value() && e.is_value(),
            Ty::Tuple(ts) => ts.iter().all(Ty::is_value),
            t => t.is_scalar(),
        }
    }

    /// Whether this holds a `&mut` to a value type (`&mut i64`,
    /// `Option<&mut i64>`): a place the front end resolves while lowering,
    /// never a machine value.
    pub fn has_mut_ref_to_value(&self) -> bool {
        match self {
            Ty::Ref { mutable: true, to } => to.is_value(),
            Ty::Option(t) => t.has_mut_ref_to_value(),
            Ty::Result(t, e) => t.has_mut_ref_to_value() || e.has_mut_ref_to_value(),
            Ty::Tuple(ts) => ts.iter().any(Ty::has_mut_ref_to_value),
            _ => false,
        }
    }

    /// Whether this is a numeric, bool or char scalar.
    pub fn is_scalar(&self) -> bool {
        matches!(self, Ty::Bool | Ty::Char | Ty::F32 | Ty::F64 | Ty::Int(_))
    }
}

impl Ty {
    /// Whether a type parameter occurs in it.
    pub fn has_param(&self) -> bool {
        self.substituted(&mut |_| None).1
    }

    /// The type with each type parameter replaced by what `by` gives for
    /// its name (kept where it gives nothing), and whether one occurred.
    pub fn substituted(&self, by: &mut dyn FnMut(&str) -> Option<Ty>) -> (Ty, bool) {
        let mut seen = false;
        let t = self.substitute(by, &mut seen);
        (t, seen)
    }

    fn substitute(&self, by: &mut dyn FnMut(&str) -> Option<Ty>, seen: &mut bool) -> Ty {
        let mut sub = |t: &Ty| Box::new(t.substitute(by, seen));
        match self {
            Ty::Param(n) => {
                *seen = true;
                return by(n).unwrap_or_else(|| self.clone());
            }
            Ty::Ref { mutable, to } => Ty::Ref { mutable: *mutable, to: sub(to) },
            Ty::Boxed(t) => Ty::Boxed(sub(t)),
            Ty::Vec(t) => Ty::Vec(sub(t)),
            Ty::Slice(t) => Ty::Slice(sub(t)),
            Ty::Option(t) => Ty::Option(sub(t)),
            Ty::Array(t, n) => Ty::Array(sub(t), *n),
            Ty::Map(k, v) => {
                let k = sub(k);
                Ty::Map(k, sub(v))
            }
            Ty::Result(t, e) => {
                let t = sub(t);
                Ty::Result(t, sub(e))
            }
            Ty::Tuple(ts) => Ty::Tuple(ts.iter().map(|t| *sub(t)).collect()),
            other => other.clone(),
        }
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Unit => f.write_str("()"),
            Ty::Bool => f.write_str("bool"),
            Ty::Char => f.write_str("char"),
            Ty::F32 => f.write_str("f32"),
            Ty::F64 => f.write_str("f64"),
            Ty::Int(i) => f.write_str(i.name()),
            Ty::Ref { mutable, to } => {
                write!(f, "&{}{}", if *mutable { "mut " } else { "" }, to)
            }
            Ty::Boxed(t) => write!(f, "Box<{t}>"),
            Ty::Vec(t) => write!(f, "Vec<{t}>"),
            Ty::Map(k, v) => write!(f, "HashMap<{k}, {v}>"),
            Ty::Str => f.write_str("String"),
            Ty::Slice(t) => write!(f, "[{t}]"),
            Ty::Text => f.write_str("str"),
            Ty::Array(t, n) => write!(f, "[{t}; {n}]"),
            Ty::Struct(n) | Ty::Enum(n) | Ty::Foreign(n) | Ty::Param(n) => f.write_str(n),
            Ty::Option(t) => write!(f, "Option<{t}>"),
            Ty::Result(t, e) => write!(f, "Result<{t}, {e}>"),
            Ty::Tuple(ts) => {
                f.write_str("(")?;
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{t}")?;
                }
                f.write_str(")")
            }
            Ty::Never => f.write_str("!"),
            Ty::Error => f.write_str("{error}"),
            Ty::Infer(_) => f.write_str("_"),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum InferKind {
    Any,
    Int,
    Float,
}

/// The inference table: bindings of inference variables.
#[derive(Clone, Default, Debug)]
pub(crate) struct Unifier {
    vars: Vec<(InferKind, Option<Ty>)>,
}

impl Unifier {
    fn fresh_of(&mut self, kind: InferKind) -> Ty {
        self.vars.push((kind, None));
        Ty::Infer(self.vars.len() as u32 - 1)
    }
    /// A variable for any type.
    pub fn fresh(&mut self) -> Ty {
        self.fresh_of(InferKind::Any)
    }
    /// A variable for the type of an unsuffixed integer literal.
    pub fn fresh_int(&mut self) -> Ty {
        self.fresh_of(InferKind::Int)
    }
    /// A variable for the type of an unsuffixed float literal.
    pub fn fresh_float(&mut self) -> Ty {
        self.fresh_of(InferKind::Float)
    }

    /// Follows bindings at the top of `ty`.
    pub fn shallow(&self, ty: &Ty) -> Ty {
        let mut t = ty.clone();
        while let Ty::Infer(i) = t {
            match &self.vars[i as usize].1 {
                Some(b) => t = b.clone(),
                None => return t,
            }
        }
        t
    }

    /// Whether `ty` is (still) an integer-literal variable or an integer.
    pub fn is_intlike(&self, ty: &Ty) -> bool {
        match self.shallow(ty) {
            Ty::Int(_) => true,
            Ty::Infer(i) => self.vars[i as usize].0 == InferKind::Int,
            _ => false,
        }
    }

    /// Resolves `ty` completely; unconstrained literals take their defaults.
    /// Returns `None` where a type variable remains unconstrained.
    pub fn finish(&self, ty: &Ty) -> Option<Ty> {
        Some(match self.shallow(ty) {
            Ty::Infer(i) => match self.vars[i as usize].0 {
                InferKind::Int => Ty::Int(IntTy::I32),
                InferKind::Float => Ty::F64,
                InferKind::Any => return None,
            },
            Ty::Ref { mutable, to } => Ty::Ref { mutable, to: Box::new(self.finish(&to)?) },
            Ty::Boxed(t) => Ty::Boxed(Box::new(self.finish(&t)?)),
            Ty::Vec(t) => Ty::Vec(Box::new(self.finish(&t)?)),
            Ty::Map(k, v) => Ty::Map(Box::new(self.finish(&k)?), Box::new(self.finish(&v)?)),
            Ty::Slice(t) => Ty::Slice(Box::new(self.finish(&t)?)),
            Ty::Array(t, n) => Ty::Array(Box::new(self.finish(&t)?), n),
            Ty::Option(t) => Ty::Option(Box::new(self.finish(&t)?)),
            Ty::Result(t, e) => Ty::Result(Box::new(self.finish(&t)?), Box::new(self.finish(&e)?)),
            Ty::Tuple(ts) => Ty::Tuple(ts.iter().map(|t| self.finish(t)).collect::<Option<_>>()?),
            t => t,
        })
    }

    /// Best-effort resolution for messages.
    pub fn show(&self, ty: &Ty) -> String {
        self.finish(ty).unwrap_or_else(|| self.shallow(ty)).to_string()
    }

    fn occurs(&self, var: u32, ty: &Ty) -> bool {
        match self.shallow(ty) {
            Ty::Infer(i) => i == var,
            Ty::Ref { to: t, .. } | Ty::Boxed(t) | Ty::Vec(t) | Ty::Slice(t) | Ty::Array(t, _) | Ty::Option(t) => {
                self.occurs(var, &t)
            }
            Ty::Result(t, e) | Ty::Map(t, e) => self.occurs(var, &t) || self.occurs(var, &e),
            Ty::Tuple(ts) => ts.iter().any(|t| self.occurs(var, t)),
            _ => false,
        }
    }

    /// Makes `a` and `b` the same type, or explains why they cannot be.
    pub fn unify(&mut self, a: &Ty, b: &Ty) -> Result<(), String> {
        let (a, b) = (self.shallow(a), self.shallow(b));
        let mismatch =
            |u: &Unifier| Err(format!("mismatched types: expected `{}`, found `{}`", u.show(&a), u.show(&b)));
        match (&a, &b) {
            (Ty::Never | Ty::Error, _) | (_, Ty::Never | Ty::Error) => Ok(()),
            (Ty::Infer(i), Ty::Infer(j)) if i == j => Ok(()),
            (Ty::Infer(i), Ty::Infer(j)) => {
                let (ki, kj) = (self.vars[*i as usize].0, self.vars[*j as usize].0);
                let kind = match (ki, kj) {
                    (InferKind::Any, k) | (k, InferKind::Any) => k,
                    (k1, k2) if k1 == k2 => k1,
                    _ => return mismatch(self),
                };
                self.vars[*j as usize].0 = kind;
                self.vars[*i as usize].1 = Some(b.clone());
                Ok(())
            }
            (Ty::Infer(i), t) | (t, Ty::Infer(i)) => {
                let ok = match self.vars[*i as usize].0 {
                    InferKind::Any => !self.occurs(*i, t),
                    InferKind::Int => matches!(t, Ty::Int(_)),
                    InferKind::Float => matches!(t, Ty::F32 | Ty::F64),
                };
                if !ok {
                    return mismatch(self);
                }
                self.vars[*i as usize].1 = Some(t.clone());
                Ok(())
            }
            (Ty::Ref { to: t1, .. }, Ty::Ref { to: t2, .. }) => {
                // `&mut T` coerces to `&T`: accept either way, as rustc would here.
                self.unify(t1, t2)
            }
            // One opaque type, named by two paths (`crate::heap::Heap`, `Heap`).
            (Ty::Foreign(x), Ty::Foreign(y)) if unqualified(x) == unqualified(y) => Ok(()),
            (Ty::Boxed(x), Ty::Boxed(y))
            | (Ty::Vec(x), Ty::Vec(y))
            | (Ty::Slice(x), Ty::Slice(y))
            | (Ty::Option(x), Ty::Option(y)) => self.unify(x, y),
            (Ty::Array(x, n), Ty::Array(y, m)) if n == m => self.unify(x, y),
            (Ty::Tuple(xs), Ty::Tuple(ys)) if xs.len() == ys.len() => {
                xs.iter().zip(ys).try_for_each(|(x, y)| self.unify(x, y)).or_else(|_| mismatch(self))
            }
            (Ty::Result(x1, e1), Ty::Result(x2, e2)) | (Ty::Map(x1, e1), Ty::Map(x2, e2)) => {
                self.unify(x1, x2)?;
                self.unify(e1, e2)
            }
            _ if a == b => Ok(()),
            _ => mismatch(self),
        }
    }
}

/// An opaque type's text without the module path before its name
/// (`crate::heap::Heap` -> `Heap`, `std::rc::Rc<Function>` -> `Rc<Function>`).
pub(crate) fn unqualified(text: &str) -> &str {
    let path_end = text.find('<').unwrap_or(text.len());
    match text[..path_end].rfind("::") {
        Some(i) => &text[i + 2..],
        None => text,
    }
}

/// Whether a type the analysis does not model, by its text, is one compiled
/// code may own as a value, as it owns a `String` (moved into its arena, by
/// address): a `Box` of a trait object (`Box<dyn std::error::Error>`), or a
/// shared pointer (see `shared_opaque`), with no lifetime or reference in
/// it. Other such types stay objects compiled code reaches only by address.
pub fn owned_opaque(text: &str) -> bool {
    let Ok(syn::Type::Path(p)) = syn::parse_str::<syn::Type>(text) else { return false };
    let boxed_dyn = p.path.segments.last().is_some_and(|s| {
        s.ident == "Box"
            && matches!(&s.arguments, syn::PathArguments::AngleBracketed(a)
                if matches!(a.args.first(), Some(syn::GenericArgument::Type(syn::Type::TraitObject(_)))))
    });
    p.qself.is_none() && plain_text(text) && (boxed_dyn || shared_opaque(text))
}

/// Whether an owned object the analysis does not model is an `Rc<T>` or an
/// `Arc<T>` with no lifetime or reference in it (`Value::Str(Rc<str>)`):
/// besides being moved, it is copied by its own `clone` (a count
/// incremented), so a value holding one may be read in place as a copy,
/// as a value holding a `String` is.
pub fn shared_opaque(text: &str) -> bool {
    plain_text(text) && shared_pointee(text).is_some()
}

fn plain_text(text: &str) -> bool {
    !text.contains('\'') && !text.contains('&') && !text.contains("Self")
}

/// Of the text of a type the analysis does not model: `T` where it is an
/// `Rc<T>` or an `Arc<T>` (by any path).
pub fn shared_pointee(text: &str) -> Option<syn::Type> {
    let syn::Type::Path(p) = syn::parse_str::<syn::Type>(text).ok()? else { return None };
    let seg = p.path.segments.last()?;
    if p.qself.is_some() || !(seg.ident == "Rc" || seg.ident == "Arc") {
        return None;
    }
    match &seg.arguments {
        syn::PathArguments::AngleBracketed(a) if a.args.len() == 1 => match &a.args[0] {
            syn::GenericArgument::Type(t) => Some(t.clone()),
            _ => None,
        },
        _ => None,
    }
}

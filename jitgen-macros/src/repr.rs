//! How each value of the interpreter is represented inside its generating
//! extension, decided from its machine-level type and its color.
//!
//! - green scalars are Rust values; green pointers are `&'a` references to
//!   the interpreter's data (frozen while compiling);
//! - red scalars and red pointers are red boxes; a red pointer is the address
//!   of the object its type designates (a `Box<T>`: of the `T`), a red `&[T]`
//!   two boxes (address, length);
//! - enums (`Option`, `Result` and the module's own), green or red, are arrays
//!   of red boxes in a fixed flattened layout: the tag, then every variant's
//!   payload fields in order (unused slots are constant 0). Green ones hold
//!   constants only;
//! - red containers made while compiling may be virtual: a `Vec` of scalars
//!   or of plain enums is a `VList`, a module struct with scalar fields a
//!   `VPtr`, a `HashMap` of scalars a `VDict` (see `jitgen_runtime`'s
//!   `vlist`, `virtuals`, `vdict`): virtual, or the address of a real one.

use hint_annotator::types::{IntTy, Ty};
use hint_annotator::ModuleTypes;
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};

/// A scalar type.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Sc {
    Int(IntTy),
    Bool,
    Char,
    F64,
}

/// The representation of one value.
#[derive(Clone, Debug)]
pub enum Repr {
    Unit,
    G(Sc),
    /// `&'a R`, R given as a type.
    GRef(Ty),
    /// `&'a [T]`.
    GSlice(Ty),
    /// `[RedBox; n]`, green or red.
    Enum(Ty, usize),
    R(Sc),
    RPtr,
    RSlice,
    /// A red pointer to (or value of) a module struct whose fields are all
    /// scalars: a `VPtr` (a virtual object in the state's heap, or a real
    /// address).
    VPtr,
    /// A red `Vec` of a plain enum (`n` slots per element), owned by a
    /// local: a `VList` of flattened elements (virtual only: a real one
    /// declines for now).
    VEList(Ty, usize),
    /// A red `HashMap` of scalars: a `VDict` (virtual while its keys are
    /// compile-time constants, else a real map's address).
    VDict(Sc, Sc),
    /// A red `Vec` of scalars, owned by a local: a `VList` (virtual while
    /// made and used at compile-time positions, else a real `Vec`'s address).
    VList(Sc),
    /// A red `Vec` of a struct whose objects may be virtual (`Vec<Frame>`):
    /// a `VPList`, virtual while made and used at compile-time positions.
    VOList(String),
    /// A red `Option` of such a struct (what `pop` gives): the tag's red box
    /// and the pointer (`VPtr::Real(0)` for `None`).
    VOpt,
    /// Cannot be represented (yet): using it declines the compilation.
    Bad(String),
}

/// Whether values of this representation are compile-time containers
/// (mutated in place, cloned when a frame needs its own copy).
pub fn is_container(r: &Repr) -> bool {
    matches!(r, Repr::VList(_) | Repr::VEList(..) | Repr::VDict(..) | Repr::VOList(_))
}

/// A field of a struct as it is written after `.` or in a literal: a name,
/// or an index for a tuple struct's fields (named "0", "1", ... by the analysis).
pub fn member(name: &str) -> syn::Member {
    match name.parse::<u32>() {
        Ok(index) => syn::Member::Unnamed(syn::Index { index, span: Span::call_site() }),
        Err(_) => syn::Member::Named(format_ident!("{}", name)),
    }
}

/// The path of the runtime's private API in generated code: the expansion
/// imports `::jitgen::__private::rt` as `__rt` into the annotated module, and
/// its own modules see it from there.
pub fn rt() -> TokenStream {
    quote!(__rt)
}

pub fn scalar(ty: &Ty) -> Option<Sc> {
    Some(match ty {
        Ty::Int(i) => Sc::Int(*i),
        Ty::Bool => Sc::Bool,
        Ty::Char => Sc::Char,
        Ty::F64 => Sc::F64,
        _ => return None,
    })
}

/// Enums, and tuples, which a function returns as an enum of one variant
/// (see the annotator's `returned`).
pub fn is_enum(ty: &Ty) -> bool {
    matches!(ty, Ty::Enum(_) | Ty::Option(_) | Ty::Result(..) | Ty::Tuple(_))
}

/// Owned types that are pointers at the machine level.
pub fn is_owned_pointer(ty: &Ty) -> bool {
    matches!(ty, Ty::Vec(_) | Ty::Map(..) | Ty::Str | Ty::Struct(_) | Ty::Array(..) | Ty::Boxed(_) | Ty::Foreign(_))
}

pub fn sc_rust(sc: Sc) -> TokenStream {
    match sc {
        Sc::Int(i) => {
            let id = Ident::new(i.name(), Span::call_site());
            quote!(#id)
        }
        Sc::Bool => quote!(bool),
        Sc::Char => quote!(char),
        Sc::F64 => quote!(f64),
    }
}

pub fn sc_valty(sc: Sc) -> TokenStream {
    let rt = rt();
    match sc {
        Sc::Int(i) => {
            // The named constant (`ValTy::I64`): one line of generated code.
            let name = format_ident!("{}{}", if i.signed() { "I" } else { "U" }, i.bits().min(64));
            quote!(#rt::ValTy::#name)
        }
        Sc::Bool => quote!(#rt::ValTy::Bool),
        Sc::Char => quote!(#rt::ValTy::U32),
        Sc::F64 => quote!(#rt::ValTy::F64),
    }
}

pub fn ptr_valty() -> TokenStream {
    let rt = rt();
    quote!(#rt::ValTy::Ptr)
}

pub fn u32_valty() -> TokenStream {
    let rt = rt();
    quote!(#rt::ValTy::U32)
}

pub fn u64_valty() -> TokenStream {
    let rt = rt();
    quote!(#rt::ValTy::U64)
}

/// A Rust scalar expression as a canonical word.
pub fn to_word(sc: Sc, e: TokenStream) -> TokenStream {
    match sc {
        Sc::Int(_) => quote!(((#e) as u64)),
        Sc::Bool => quote!(((#e) as u64)),
        Sc::Char => quote!(((#e) as u32 as u64)),
        Sc::F64 => quote!((#e).to_bits()),
    }
}

/// A word as a Rust scalar.
pub fn from_word(sc: Sc, e: TokenStream) -> TokenStream {
    match sc {
        Sc::Int(_) => {
            let t = sc_rust(sc);
            quote!(((#e) as #t))
        }
        Sc::Bool => quote!(((#e) != 0)),
        Sc::Char => quote!(::core::char::from_u32((#e) as u32).unwrap_or('\0')),
        Sc::F64 => quote!(f64::from_bits(#e)),
    }
}

/// The Rust type of `ty`; references get the lifetime `lt` (none: elided).
pub fn rust_ty(ty: &Ty, lt: Option<&TokenStream>) -> TokenStream {
    match ty {
        Ty::Unit => quote!(()),
        Ty::Bool => quote!(bool),
        Ty::Char => quote!(char),
        Ty::F32 => quote!(f32),
        Ty::F64 => quote!(f64),
        Ty::Int(i) => {
            let id = Ident::new(i.name(), Span::call_site());
            quote!(#id)
        }
        Ty::Ref { mutable, to } => {
            let t = rust_ty(to, lt);
            let m = if *mutable { quote!(mut) } else { quote!() };
            match lt {
                Some(l) => quote!(&#l #m #t),
                None => quote!(&#m #t),
            }
        }
        Ty::Boxed(t) => {
            let t = rust_ty(t, lt);
            quote!(::std::boxed::Box<#t>)
        }
        Ty::Vec(t) => {
            let t = rust_ty(t, lt);
            quote!(::std::vec::Vec<#t>)
        }
        Ty::Map(k, v) => {
            let (k, v) = (rust_ty(k, lt), rust_ty(v, lt));
            quote!(::std::collections::HashMap<#k, #v>)
        }
        Ty::Str => quote!(::std::string::String),
        Ty::Foreign(text) => {
            // The type as written (the annotator took it from a type).
            let t: syn::Type = syn::parse_str(text).unwrap_or_else(|_| syn::parse_quote!(()));
            match &t {
                // Generated code lives in modules inside the annotated one.
                syn::Type::Path(p)
                    if p.qself.is_none() && p.path.segments.first().is_some_and(|s| s.ident == "super") =>
                {
                    quote!(super::#t)
                }
                _ => quote!(#t),
            }
        }
        Ty::Slice(t) => {
            let t = rust_ty(t, lt);
            quote!([#t])
        }
        Ty::Text => quote!(str),
        Ty::Array(t, n) => {
            let t = rust_ty(t, lt);
            let n = *n as usize;
            quote!([#t; #n])
        }
        Ty::Struct(n) | Ty::Enum(n) => {
            let id = Ident::new(n, Span::call_site());
            quote!(#id)
        }
        Ty::Option(t) => {
            let t = rust_ty(t, lt);
            quote!(::core::option::Option<#t>)
        }
        Ty::Result(t, e) => {
            let (t, e) = (rust_ty(t, lt), rust_ty(e, lt));
            quote!(::core::result::Result<#t, #e>)
        }
        Ty::Tuple(ts) => {
            let ts = ts.iter().map(|t| rust_ty(t, lt));
            quote!((#(#ts,)*))
        }
        Ty::Never | Ty::Error | Ty::Infer(_) => quote!(()),
        // Instantiated at each call; Rust infers it where one is left.
        Ty::Param(_) => quote!(_),
    }
}

/// A readable identifier fragment for a type (for generated helper names).
pub fn mangle(ty: &Ty) -> String {
    ty.to_string().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect()
}

/// One slot of a flattened enum.
#[derive(Clone, Debug)]
pub enum Slot {
    Tag,
    Scalar(Sc),
    Ptr,
    /// A `String` the value owns: its address (see `rebuildable`).
    Owned,
}

/// The variants of an enum type: (name, Rust path of the constructor, payload types).
pub fn variants(ty: &Ty, types: &ModuleTypes) -> Vec<(String, TokenStream, Vec<Ty>, bool)> {
    match ty {
        Ty::Option(t) => vec![
            ("None".into(), quote!(::core::option::Option::None), vec![], false),
            ("Some".into(), quote!(::core::option::Option::Some), vec![(**t).clone()], false),
        ],
        Ty::Result(t, e) => vec![
            ("Ok".into(), quote!(::core::result::Result::Ok), vec![(**t).clone()], false),
            ("Err".into(), quote!(::core::result::Result::Err), vec![(**e).clone()], false),
        ],
        // One variant without a name: `(a, b)` is its pattern and its
        // constructor.
        Ty::Tuple(ts) => vec![(String::new(), quote!(), ts.clone(), false)],
        Ty::Enum(n) => {
            let en = Ident::new(n, Span::call_site());
            types.enums.get(n).map_or(vec![], |d| {
                d.variants
                    .iter()
                    .map(|v| {
                        let vn = Ident::new(&v.name, Span::call_site());
                        (v.name.clone(), quote!(#en::#vn), v.fields.iter().map(|(_, t)| t.clone()).collect(), v.named)
                    })
                    .collect()
            })
        }
        _ => vec![],
    }
}

/// The flattened slots of a type inside an enum payload (`None`: not representable).
pub fn slots(ty: &Ty, types: &ModuleTypes, depth: usize) -> Option<Vec<Slot>> {
    if depth > 16 {
        return None;
    }
    if let Some(sc) = scalar(ty) {
        return Some(vec![Slot::Scalar(sc)]);
    }
    match ty {
        Ty::Unit => Some(vec![]),
        t if is_enum(t) => {
            let mut out = vec![Slot::Tag];
            for (_, _, fields, _) in variants(t, types) {
                for f in fields {
                    out.extend(payload_slots(t, &f, types, depth + 1)?);
                }
            }
            Some(out)
        }
        Ty::Boxed(inner) if !matches!(**inner, Ty::Slice(_) | Ty::Text) => Some(vec![Slot::Ptr]),
        // Text behind a shared reference (an error's `&'static str`): its
        // address and length, two words that copy as the `&str` does.
        t if is_text_ref(t) => Some(vec![Slot::Scalar(Sc::Int(IntTy::Usize)); 2]),
        Ty::Ref { to, .. } if !matches!(**to, Ty::Slice(_) | Ty::Text) => Some(vec![Slot::Ptr]),
        Ty::Str => Some(vec![Slot::Owned]),
        // A `Vec` of scalars (a stack given back in an `Ok`), as a `String`.
        Ty::Vec(e) if scalar(e).is_some() => Some(vec![Slot::Owned]),
        // A struct of scalars and `String`s (an error with its message):
        // a real object residual code owns (moved into the arena), as a
        // `String` is.
        Ty::Struct(s) if owning_struct(s, types) => Some(vec![Slot::Owned]),
        // An object the analysis does not model, owned (a `Box<dyn Error>`
        // outlined Rust made): in the arena, as a `String`.
        Ty::Foreign(text) if hint_annotator::types::owned_opaque(text) => Some(vec![Slot::Owned]),
        // A struct that owns what the analysis does not model (one that
        // cannot be virtual): its address, as structs are pointers in the
        // analysis's memory model (`Option<Frame>` of `frames.last()`).
        Ty::Struct(_) if virtual_struct(ty, types).is_none() => Some(vec![Slot::Ptr]),
        _ => None,
    }
}

/// Whether `ty` is `&str`: text behind a shared reference.
pub fn is_text_ref(ty: &Ty) -> bool {
    matches!(ty, Ty::Ref { mutable: false, to } if **to == Ty::Text)
}

/// The flattened slots of a payload of type `f` of the enum `of`. A struct
/// or an object the analysis does not model, held inline by an enum of the
/// module or of another one, is one pointer slot: its address in the enum
/// read (structs are pointers in the analysis's memory model), so that a
/// heap of enum objects matched through references reaches its payloads in
/// place. Like a `Box`'s, such a value is never rebuilt from its words.
pub fn payload_slots(of: &Ty, f: &Ty, types: &ModuleTypes, depth: usize) -> Option<Vec<Slot>> {
    if let Some((_, fields)) = flat_payload(f, types) {
        return Some(fields.into_iter().map(|(_, sc)| Slot::Scalar(sc)).collect());
    }
    if inline_object(of, f, types) {
        return Some(vec![Slot::Ptr]);
    }
    slots(f, types, depth)
}

/// Whether `f`, a payload type of the enum `of`, is held inline and reached
/// by address (see `payload_slots`).
pub fn inline_object(of: &Ty, f: &Ty, types: &ModuleTypes) -> bool {
    matches!(of, Ty::Enum(_))
        && matches!(f, Ty::Struct(_) | Ty::Foreign(_))
        && flat_payload(f, types).is_none()
        && !shared_object(f)
}

/// Whether `f` is an `Rc` or `Arc` the analysis does not model
/// (`hint_annotator::types::shared_opaque`): owned by residual code as a
/// `String` is, and copied by its `clone`. In an enum read in place, its
/// word is its address there, as a payload held inline.
pub fn shared_object(f: &Ty) -> bool {
    matches!(f, Ty::Foreign(t) if hint_annotator::types::shared_opaque(t))
}

/// A struct an enum holds as its fields' words, not by address: of
/// scalars, with no `Drop` of the module's (`Copy` or not: a value moved
/// out of a place is its words, as a copy is), and no analyzed code writes
/// its fields but through a portal's own `&mut` parameter, which no enum
/// holds (`ModuleTypes::written_structs`; so no write can reach the place a
/// payload was read from: a
/// handle such as `ObjRef(u32)` in `Value::Obj(ObjRef)`, an error
/// `VmError { pc, code }` in a `Result`). Its name and fields. Such a
/// payload is a virtual object where it is bound, made again from the
/// words.
pub fn flat_payload(f: &Ty, types: &ModuleTypes) -> Option<(String, Vec<(String, Sc)>)> {
    let (s, fields) = scalar_struct(f, types)?;
    let d = types.structs.get(&s)?;
    (!d.drops && !d.virtualizable && !types.written_structs.contains(&s)).then_some((s, fields))
}

/// Whether residual code makes a real struct `s`: its fields are scalars and
/// `String`s, at least one of those (a struct of scalars is virtual).
pub(crate) fn owning_struct(s: &str, types: &ModuleTypes) -> bool {
    types.structs.get(s).is_some_and(|d| {
        d.lifetimes == 0
            && d.fields.values().any(|t| *t == Ty::Str)
            && d.fields.values().all(|t| *t == Ty::Str || scalar(t).is_some())
    })
}

/// Whether residual code makes a real struct `s` from its fields' words by
/// a call of Rust's own code (`Gen::new_owning_struct`), and a portal can
/// return one by address: an owning struct, or one whose fields are
/// scalars, `String`s, `Vec`s of scalars and enums rebuilt from their words,
/// one of them owning (`Outcome { stack: Vec<i64>, result: Result<i64,
/// String> }`).
pub(crate) fn built_struct(s: &str, types: &ModuleTypes) -> bool {
    let field = |t: &Ty| {
        scalar(t).is_some()
            || *t == Ty::Str
            || matches!(t, Ty::Vec(e) if scalar(e).is_some())
            || (is_enum(t) && drops_by_rebuilding(t, types, 0))
    };
    // Something it owns: a struct of scalars and plain enums (a cell of two
    // values) stays a value residual code does not make.
    let owned = |t: &Ty| *t == Ty::Str || matches!(t, Ty::Vec(_)) || (is_enum(t) && !plain(t, types));
    owning_struct(s, types)
        || types.structs.get(s).is_some_and(|d| {
            d.lifetimes == 0
                && virtual_struct(&Ty::Struct(s.to_string()), types).is_none()
                && d.fields.values().all(field)
                && d.fields.values().any(owned)
        })
}

/// Whether residual code owns values of type `f` as objects in its arena,
/// rebuilt by moving them out: an owning struct (see `owning_struct`), or an
/// object the analysis does not model that it may own (a `Box<dyn Error>`).
fn owned_object(f: &Ty, types: &ModuleTypes) -> bool {
    match f {
        Ty::Struct(s) => owning_struct(s, types),
        Ty::Foreign(t) => hint_annotator::types::owned_opaque(t),
        _ => false,
    }
}

/// Whether a value of the type owns an object the analysis does not model
/// (a `Result` whose error is a `Box<dyn Error>`): it moves into and out of
/// the arena, and is never read in place as a copy, which Rust's `clone`
/// of it may not be.
pub fn owns_opaque(ty: &Ty, types: &ModuleTypes) -> bool {
    let direct = |t: &Ty| matches!(t, Ty::Foreign(x) if hint_annotator::types::owned_opaque(x)) && !shared_object(t);
    direct(ty)
        || (is_enum(ty)
            && variants(ty, types).iter().any(|(_, _, fields, _)| {
                fields
                    .iter()
                    .any(|f| !inline_object(ty, f, types) && (direct(f) || (is_enum(f) && owns_opaque(f, types))))
            }))
}

/// Whether a rebuildable enum's value rebuilt from its words and dropped
/// frees only what residual code owns: each payload a scalar, text, a
/// handle, a `String`, a `Vec` of scalars or an `Rc` (each taken out of
/// the arena, or a copy of the interpreter's own), or such an enum. (An
/// owning struct is taken out of the arena only, and may be the
/// interpreter's own.)
pub fn drops_by_rebuilding(ty: &Ty, types: &ModuleTypes, depth: usize) -> bool {
    depth < 8
        && rebuildable(ty, types)
        && variants(ty, types).iter().all(|(_, _, fields, _)| {
            fields.iter().all(|f| {
                scalar(f).is_some()
                    || *f == Ty::Str
                    || matches!(f, Ty::Vec(e) if scalar(e).is_some())
                    || shared_object(f)
                    || is_text_ref(f)
                    || flat_payload(f, types).is_some()
                    || *f == Ty::Unit
                    || (is_enum(f) && (plain(f, types) || drops_by_rebuilding(f, types, depth + 1)))
            })
        })
}

/// Whether values of the type can be rebuilt from their words (no pointers inside).
pub fn plain(ty: &Ty, types: &ModuleTypes) -> bool {
    slots(ty, types, 0).is_some_and(|s| s.iter().all(|x| !matches!(x, Slot::Ptr | Slot::Owned)))
}

/// Whether values of the type can be rebuilt from their words once, moving
/// what they own: plain, or holding `String`s (an error message), each
/// moved out of the arena of residual code or out of the place it was in.
pub fn rebuildable(ty: &Ty, types: &ModuleTypes) -> bool {
    slots(ty, types, 0).is_some_and(|s| s.iter().all(|x| !matches!(x, Slot::Ptr)))
}

/// The offset of a variant's payload field within the flattened layout.
pub fn field_offset(ty: &Ty, variant: &str, index: usize, types: &ModuleTypes) -> Option<(usize, Ty)> {
    let mut at = 1;
    for (name, _, fields, _) in variants(ty, types) {
        for (i, f) in fields.iter().enumerate() {
            if name == variant && i == index {
                return Some((at, f.clone()));
            }
            at += payload_slots(ty, f, types, 1)?.len();
        }
    }
    None
}

/// For each variant of an enum, the slots its payload occupies in the
/// flattened value (see `slots`): `start..end`.
pub fn variant_ranges(ty: &Ty, types: &ModuleTypes) -> Vec<(usize, usize)> {
    let mut at = 1;
    let mut out = vec![];
    for (_, _, fields, _) in variants(ty, types) {
        let start = at;
        for f in &fields {
            at += payload_slots(ty, f, types, 1).map_or(0, |s| s.len());
        }
        out.push((start, at));
    }
    out
}

/// How many elements from the top of a portal's list of enums have their
/// variant in the position key (4 bits each, in one key word).
pub const TAGGED_TOP: usize = 8;

/// The representation of a value of type `ty` and color `green`.
pub fn repr(ty: &Ty, green: bool, types: &ModuleTypes) -> Repr {
    if let Some(sc) = scalar(ty) {
        return if green { Repr::G(sc) } else { Repr::R(sc) };
    }
    // An `Option` of a struct is a tag and an object, green or red (a
    // green one is a constant `None`, or `Some` of an object).
    if matches!(ty, Ty::Option(e) if matches!(**e, Ty::Struct(_)) && virtual_struct(e, types).is_some()) {
        return Repr::VOpt;
    }
    if !green {
        if virtual_struct(ty, types).is_some() {
            return Repr::VPtr;
        }
        if let Ty::Vec(e) = ty {
            if let (Ty::Struct(_), Some(s)) = (&**e, virtual_struct(e, types)) {
                return Repr::VOList(s);
            }
        }
    }
    match ty {
        Ty::Unit | Ty::Never => Repr::Unit,
        // `str` read through its `&str` (a formatted argument): the same
        // address and length.
        Ty::Text if !green => Repr::RSlice,
        // A slice read through its box (`*self.tape`): the same address
        // and length.
        Ty::Slice(_) if !green => Repr::RSlice,
        t if is_enum(t) => match slots(t, types, 0) {
            Some(s) => Repr::Enum(t.clone(), s.len()),
            None => Repr::Bad(format!("values of type `{t}` (a payload jitgen cannot lay out yet)")),
        },
        Ty::Ref { to, .. } => match &**to {
            Ty::Slice(e) if green => Repr::GSlice((**e).clone()),
            Ty::Slice(_) => Repr::RSlice,
            // Text: its address and length, as a slice's. Known while
            // compiling (program text read by `as_bytes`), its bytes, held
            // as a green slice is (`&'a [u8]`).
            Ty::Text if green => Repr::GSlice(Ty::Int(hint_annotator::types::IntTy::U8)),
            Ty::Text => Repr::RSlice,
            t if green => Repr::GRef(t.clone()),
            _ => Repr::RPtr,
        },
        // A boxed slice (`tape: Box<[u8]>`) read at run time: its address
        // and length, as a `&[T]`'s.
        Ty::Boxed(to) if !green && matches!(**to, Ty::Slice(_)) => Repr::RSlice,
        Ty::Vec(e) if !green && scalar(e).is_some() => Repr::VList(scalar(e).expect("checked")),
        Ty::Vec(e) if !green && is_enum(e) && plain(e, types) => {
            Repr::VEList((**e).clone(), slots(e, types, 0).expect("plain").len())
        }
        Ty::Map(k, v) if !green && scalar(k).is_some() && scalar(v).is_some() => {
            Repr::VDict(scalar(k).expect("checked"), scalar(v).expect("checked"))
        }
        t if is_owned_pointer(t) => {
            if green {
                Repr::GRef(t.clone())
            } else {
                Repr::RPtr
            }
        }
        other => Repr::Bad(format!("values of type `{other}`")),
    }
}

/// The struct a value of this type designates (itself, boxed, or behind a
/// reference), when its objects can be virtual: a module struct without
/// lifetime parameters whose fields are all scalars or lists of scalars or
/// of plain enums (see `list_field`).
pub fn virtual_struct(ty: &Ty, types: &ModuleTypes) -> Option<String> {
    let s = match ty {
        Ty::Struct(s) => s,
        Ty::Boxed(t) | Ty::Ref { to: t, .. } => match &**t {
            Ty::Struct(s) => s,
            // `&Box<S>`: taken of a box, it is the box's value (see the
            // annotator's deref coercion).
            Ty::Boxed(b) => match &**b {
                Ty::Struct(s) if matches!(ty, Ty::Ref { .. }) => s,
                _ => return None,
            },
            _ => return None,
        },
        _ => return None,
    };
    let d = types.structs.get(s)?;
    let ok = |t: &Ty| scalar(t).is_some() || list_field(t, types).is_some();
    (d.lifetimes == 0 && !d.fields.is_empty() && d.fields.values().all(ok)).then(|| s.clone())
}

/// A struct of scalar fields only, by value (`ObjRef(u32)`): its name and
/// fields, what a residual call's result of it is written as, word by word.
pub fn scalar_struct(ty: &Ty, types: &ModuleTypes) -> Option<(String, Vec<(String, Sc)>)> {
    let Ty::Struct(s) = ty else { return None };
    let d = types.structs.get(s)?;
    let fields: Option<Vec<(String, Sc)>> = d.fields.iter().map(|(n, t)| Some((n.clone(), scalar(t)?))).collect();
    let fields = fields.filter(|f| !f.is_empty() && d.lifetimes == 0)?;
    Some((s.clone(), fields))
}

/// The elements of a list field of a virtual object.
#[derive(Clone, Debug)]
pub enum LElem {
    /// Scalars: one red box each.
    Sc(Sc),
    /// A plain enum: its flattened slots each.
    Enum(Ty, usize),
}

impl LElem {
    /// The representation of the list.
    pub fn repr(&self) -> Repr {
        match self {
            LElem::Sc(sc) => Repr::VList(*sc),
            LElem::Enum(t, w) => Repr::VEList(t.clone(), *w),
        }
    }

    /// Red boxes per element.
    pub fn width(&self) -> usize {
        match self {
            LElem::Sc(_) => 1,
            LElem::Enum(_, w) => *w,
        }
    }

    /// The element's Rust type.
    pub fn rust(&self) -> TokenStream {
        match self {
            LElem::Sc(sc) => sc_rust(*sc),
            LElem::Enum(t, _) => rust_ty(t, None),
        }
    }

    /// The runtime's helper writing a virtual list into a `Vec`:
    /// `[dest, n, slots..] -> []`.
    pub fn store_fn(&self) -> TokenStream {
        let rt = rt();
        match self {
            LElem::Sc(sc) => {
                let t = sc_rust(*sc);
                quote!(#rt::heap::vec_store::<#t>)
            }
            LElem::Enum(t, _) => {
                let m = flat_marker(t);
                quote!(#rt::heap::flat_vec_store::<#m>)
            }
        }
    }
}

/// The elements of a field of this type that a virtual object keeps as a
/// list: a `Vec` of scalars or of plain enums.
pub fn list_field(t: &Ty, types: &ModuleTypes) -> Option<LElem> {
    match t {
        Ty::Vec(e) => match scalar(e) {
            Some(sc) => Some(LElem::Sc(sc)),
            None if is_enum(e) && plain(e, types) => Some(LElem::Enum((**e).clone(), slots(e, types, 0)?.len())),
            None => None,
        },
        _ => None,
    }
}

/// Where field `name` of a virtual struct lives in its `VObject`: among the
/// scalar fields (`Ok(k)`) or among the lists (`Err(k)`).
pub fn vfield_index(
    d: &hint_annotator::module::StructDef,
    name: &str,
    types: &ModuleTypes,
) -> Option<Result<usize, usize>> {
    let is_list = list_field(d.fields.get(name)?, types).is_some();
    let k = d
        .fields
        .iter()
        .take_while(|(n, _)| *n != name)
        .filter(|(_, t)| list_field(t, types).is_some() == is_list)
        .count();
    Some(if is_list { Err(k) } else { Ok(k) })
}

/// The type of a frame field holding a value of this representation.
pub fn field_ty(r: &Repr) -> TokenStream {
    let rt = rt();
    let lt = quote!('a);
    match r {
        Repr::Unit | Repr::Bad(_) => quote!(()),
        Repr::G(sc) => sc_rust(*sc),
        Repr::GRef(t) => {
            let t = rust_ty(t, Some(&lt));
            quote!(&'a #t)
        }
        Repr::GSlice(t) => {
            let t = rust_ty(t, Some(&lt));
            quote!(&'a [#t])
        }
        Repr::Enum(_, n) => quote!([#rt::RedBox; #n]),
        Repr::R(_) | Repr::RPtr => quote!(#rt::RedBox),
        Repr::VList(_) | Repr::VEList(..) => quote!(#rt::VList),
        Repr::VPtr => quote!(#rt::VPtr),
        Repr::VDict(..) => quote!(#rt::VDict),
        Repr::VOList(_) => quote!(#rt::VPList),
        Repr::VOpt => quote!((#rt::RedBox, #rt::VPtr)),
        Repr::RSlice => quote!([#rt::RedBox; 2]),
    }
}

/// Names of the generated helpers of an enum type.
pub fn enum_helpers(ty: &Ty) -> (Ident, Ident, Ident) {
    let m = mangle(ty);
    (format_ident!("__flat_{}", m), format_ident!("__unflat_{}", m), format_ident!("__tys_{}", m))
}

/// `__flat_owned_T`: the words of a rebuildable enum value, its strings
/// moved into the arena of residual code.
pub fn flat_owned_fn(ty: &Ty) -> Ident {
    format_ident!("__flat_owned_{}", mangle(ty))
}

/// The struct `sname` as a type in generated code: its lifetime parameters,
/// if any, as `'static` (`offset_of!` and a place reached through a raw
/// address: lifetimes change no layout, and the place lives as long as the
/// reference residual code holds).
pub fn struct_at(sname: &str, types: &ModuleTypes) -> TokenStream {
    let sn = format_ident!("{}", sname);
    match types.structs.get(sname).map_or(0, |d| d.lifetimes) {
        0 => quote!(#sn),
        n => {
            let statics = (0..n).map(|_| quote!('static));
            quote!(#sn<#(#statics),*>)
        }
    }
}

/// A copy of the owning struct (see `owning_struct`) of type `f` that `b`
/// refers to, field by field: it holds scalars and `String`s.
fn owning_struct_copy(f: &Ty, b: &Ident, types: &ModuleTypes) -> TokenStream {
    let Ty::Struct(sname) = f else { return quote!(unreachable!()) };
    let st = rust_ty(f, None);
    let fields = types.structs[sname].fields.iter().map(|(name, t)| {
        let m = member(name);
        if *t == Ty::Str {
            quote!(#m: ::std::string::String::clone(&#b.#m))
        } else {
            quote!(#m: #b.#m)
        }
    });
    quote!(#st { #(#fields),* })
}

/// `__flat_copy_T`: the words of a copy of a rebuildable enum value read in
/// place, its strings copied into the arena of residual code.
pub fn flat_copy_fn(ty: &Ty) -> Ident {
    format_ident!("__flat_copy_{}", mangle(ty))
}

/// `__view_T`: a rebuildable enum value lent to Rust from its words (see
/// `payload_view`), in a `ManuallyDrop`.
pub fn view_fn(ty: &Ty) -> Ident {
    format_ident!("__view_{}", mangle(ty))
}

/// The read of a payload field `f` of `ty` at word `at` for a value lent
/// from its words: what residual code owns (a `String`, an `Rc`, a `Vec`)
/// read bitwise from its place, so the value is a view whose drop must not
/// run; anything else as `read` (its value rebuilt).
fn payload_view(ty: &Ty, f: &Ty, at: usize, width: usize, types: &ModuleTypes, read: &TokenStream) -> TokenStream {
    if is_enum(f) && !plain(f, types) {
        let (v, end) = (view_fn(f), at + width);
        quote!(::core::mem::ManuallyDrop::into_inner(#v(&__w[#at..#end])))
    } else if *f == Ty::Str
        || matches!(f, Ty::Vec(e) if scalar(e).is_some())
        || (owned_object(f, types) && !inline_object(ty, f, types))
    {
        let st = rust_ty(f, None);
        // SAFETY: the words name a live object (see `rebuildable`), read
        // here as a view its `ManuallyDrop` never drops.
        quote!(unsafe { ::core::ptr::read(__w[#at] as usize as *const #st) })
    } else {
        read.clone()
    }
}

/// The marker type implementing `jitgen_runtime::heap::Flat` for a plain
/// enum type (for the runtime's helpers on `Vec`s of it).
pub fn flat_marker(ty: &Ty) -> Ident {
    format_ident!("__F_{}", mangle(ty))
}

/// `__flat_T`, `__unflat_T` and `__F_T` (when plain) and `__tys_T` for an
/// enum type.
pub fn enum_helper_fns(ty: &Ty, types: &ModuleTypes) -> TokenStream {
    let rt = rt();
    let (flat, unflat, tys) = enum_helpers(ty);
    let Some(all) = slots(ty, types, 0) else { return quote!() };
    let n = all.len();
    let t = rust_ty(ty, None);
    // A value rebuilt from words (and the `Flat` marker's type) holds its
    // `&str`s for as long as their words say: `'static` (see `unflat`).
    let t_static = rust_ty(ty, Some(&quote!('static)));
    let slot_tys: Vec<TokenStream> = all
        .iter()
        .map(|s| match s {
            Slot::Tag => u32_valty(),
            Slot::Scalar(sc) => sc_valty(*sc),
            Slot::Ptr | Slot::Owned => ptr_valty(),
        })
        .collect();
    // Flattening: a match over the variants, writing each payload at its offset.
    let mut flat_arms = vec![];
    let mut owned_arms = vec![];
    let mut copy_arms = vec![];
    let mut unflat_arms = vec![];
    let mut view_arms = vec![];
    let mut at = 1usize;
    for (k, (_, path, fields, named)) in variants(ty, types).into_iter().enumerate() {
        let k32 = k as u64;
        let binds: Vec<Ident> = (0..fields.len()).map(|i| format_ident!("__f{}", i)).collect();
        let field_names: Vec<Ident> = match (&ty, named) {
            (Ty::Enum(en), true) => {
                types.enums[en].variants[k].fields.iter().map(|(n, _)| format_ident!("{}", n)).collect()
            }
            _ => vec![],
        };
        let pat = if fields.is_empty() {
            quote!(#path)
        } else if named {
            quote!(#path { #(#field_names: #binds),* })
        } else {
            quote!(#path(#(#binds),*))
        };
        let mut writes = vec![quote!(__w[0] = #k32;)];
        let mut moves = vec![];
        let mut copies = vec![];
        let mut reads = vec![];
        let mut views = vec![];
        for (i, f) in fields.iter().enumerate() {
            let b = &binds[i];
            let width = payload_slots(ty, f, types, 1).map_or(0, |s| s.len());
            payload_field_code(ty, f, b, at, types, &mut writes, &mut moves, &mut copies, &mut reads);
            views.push(payload_view(ty, f, at, width, types, reads.last().expect("a read")));
            at += width;
        }
        flat_arms.push(quote!(#pat => { #(#writes)* }));
        owned_arms.push(quote!(#pat => { #(#moves)* }));
        copy_arms.push(quote!(#pat => { #(#copies)* }));
        // The variant made of one payload expression per field.
        let build = |parts: &[TokenStream]| {
            if fields.is_empty() {
                quote!(#path)
            } else if named {
                quote!(#path { #(#field_names: #parts),* })
            } else {
                quote!(#path(#(#parts),*))
            }
        };
        let (built, view) = (build(&reads), build(&views));
        unflat_arms.push(quote!(#k32 => #built,));
        view_arms.push(quote!(#k32 => #view,));
    }
    let marker = flat_marker(ty);
    let ranges: Vec<TokenStream> = variant_ranges(ty, types).iter().map(|(a, b)| quote!((#a, #b))).collect();
    let marker_impl = if plain(ty, types) {
        quote! {
            #[allow(non_camel_case_types)]
            pub(super) struct #marker;
            impl #rt::heap::Flat for #marker {
                type T = #t_static;
                const N: usize = #n;
                fn flat(__v: &#t_static, __out: &mut [u64]) {
                    __out[..#n].copy_from_slice(&#flat(__v));
                }
                fn unflat(__w: &[u64]) -> #t_static {
                    #unflat(__w)
                }
                fn layout() -> ::core::option::Option<&'static #rt::heap::EnumLayout> {
                    static __L: ::std::sync::OnceLock<::core::option::Option<#rt::heap::EnumLayout>> =
                        ::std::sync::OnceLock::new();
                    __L.get_or_init(|| #rt::heap::enum_layout::<Self>(&#tys(), &[#(#ranges),*])).as_ref()
                }
            }
        }
    } else {
        quote!()
    };
    let (owned, copy, view) = (flat_owned_fn(ty), flat_copy_fn(ty), view_fn(ty));
    let unflat_fn = if rebuildable(ty, types) {
        quote! {
            #marker_impl
            /// The words of a value residual code gets back from Rust,
            /// its strings moved into the arena (a value's own words would
            /// name strings dropped with it).
            #[allow(non_snake_case, unused_variables, dead_code, clippy::all)]
            pub(super) fn #owned(__v: #t) -> [u64; #n] {
                let mut __w = #flat(&__v);
                match __v { #(#owned_arms)* }
                __w
            }
            /// The words of a copy of a value residual code reads in place
            /// (as Rust's `clone` of it), its strings copied into the arena:
            /// the place's own may be dropped while the copy lives.
            #[allow(non_snake_case, unused_variables, dead_code, clippy::all)]
            pub(super) fn #copy(__v: &#t) -> [u64; #n] {
                let mut __w = #flat(__v);
                match __v { #(#copy_arms)* }
                __w
            }
            /// The value the words name, lent to Rust by reference: what
            /// it owns read in place, never dropped (an outlined statement's
            /// `&Value`).
            #[allow(non_snake_case, unused_variables, unused_unsafe, dead_code)]
            pub(super) fn #view(__w: &[u64]) -> ::core::mem::ManuallyDrop<#t_static> {
                ::core::mem::ManuallyDrop::new(match __w[0] {
                    #(#view_arms)*
                    _ => unreachable!("a tag out of range"),
                })
            }
            #[allow(non_snake_case, unused_variables, unused_unsafe)]
            pub(super) fn #unflat(__w: &[u64]) -> #t_static {
                match __w[0] {
                    #(#unflat_arms)*
                    _ => unreachable!("a tag out of range"),
                }
            }
        }
    } else {
        quote!()
    };
    quote! {
        // Inlined: a callback giving a value back writes its words straight
        // into the call's buffer, not into an array copied there.
        #[inline]
        #[allow(non_snake_case, unused_variables, clippy::all)]
        pub(super) fn #flat(__v: &#t) -> [u64; #n] {
            let mut __w = [0u64; #n];
            match __v { #(#flat_arms)* }
            __w
        }
        #unflat_fn
        #[allow(non_snake_case)]
        pub(super) fn #tys() -> [#rt::ValTy; #n] {
            [#(#slot_tys),*]
        }
    }
}

/// The code of one payload field `f` (bound to `b`, at word `at`) of a
/// variant of `ty`: its words written (`writes`), moved or copied into the
/// arena where the value owns them (`moves`, `copies`), and its value read
/// back (`reads`, one expression).
#[allow(clippy::too_many_arguments)]
fn payload_field_code(
    ty: &Ty,
    f: &Ty,
    b: &Ident,
    at: usize,
    types: &ModuleTypes,
    writes: &mut Vec<TokenStream>,
    moves: &mut Vec<TokenStream>,
    copies: &mut Vec<TokenStream>,
    reads: &mut Vec<TokenStream>,
) {
    let rt = rt();
    let width = payload_slots(ty, f, types, 1).map_or(0, |s| s.len());
    if let Some(sc) = scalar(f) {
        let w = to_word(sc, quote!(*#b));
        writes.push(quote!(__w[#at] = #w;));
        let r = from_word(sc, quote!(__w[#at]));
        reads.push(r);
    } else if is_enum(f) {
        let (ff, fu, _) = enum_helpers(f);
        let end = at + width;
        writes.push(quote!(__w[#at..#end].copy_from_slice(&#ff(#b));));
        reads.push(quote!(#fu(&__w[#at..#end])));
        if !plain(f, types) {
            let (fo, fc) = (flat_owned_fn(f), flat_copy_fn(f));
            moves.push(quote!(__w[#at..#end].copy_from_slice(&#fo(#b));));
            copies.push(quote!(__w[#at..#end].copy_from_slice(&#fc(#b));));
        }
    } else if let Some((_, sfields)) = flat_payload(f, types) {
        // A handle: its fields' words, and the struct made again.
        let st = rust_ty(f, None);
        let mut inits = vec![];
        for (k, (name, sc)) in sfields.iter().enumerate() {
            let (m, slot) = (member(name), at + k);
            let w = to_word(*sc, quote!(#b.#m));
            writes.push(quote!(__w[#slot] = #w;));
            let r = from_word(*sc, quote!(__w[#slot]));
            inits.push(quote!(#m: #r));
        }
        reads.push(quote!(#st { #(#inits),* }));
    } else if is_text_ref(f) {
        let end = at + 1;
        writes.push(quote!(__w[#at] = #b.as_ptr() as usize as u64; __w[#end] = #b.len() as u64;));
        // SAFETY: the words are a `&str`'s, written above from one
        // that outlives the value made of them.
        reads.push(quote!(unsafe {
            ::core::str::from_utf8_unchecked(::core::slice::from_raw_parts(__w[#at] as usize as *const u8, __w[#end] as usize))
        }));
    } else if *f == Ty::Str {
        moves.push(quote!(__w[#at] = #rt::heap::arena_alloc(#b) as usize as u64;));
        copies.push(quote!(__w[#at] = #rt::heap::arena_alloc(::std::string::String::clone(#b)) as usize as u64;));
        writes.push(quote!(__w[#at] = #b as *const ::std::string::String as usize as u64;));
        // SAFETY: a rebuilt value's words name live `String`s no
        // one reads again (see `rebuildable`).
        reads.push(quote!(unsafe { #rt::heap::take_string(__w[#at]) }));
    } else if matches!(f, Ty::Vec(e) if scalar(e).is_some()) {
        let vt = rust_ty(f, None);
        moves.push(quote!(__w[#at] = #rt::heap::arena_alloc(#b) as usize as u64;));
        copies
            .push(quote!(__w[#at] = #rt::heap::arena_alloc(<#vt as ::core::clone::Clone>::clone(#b)) as usize as u64;));
        writes.push(quote!(__w[#at] = #b as *const #vt as usize as u64;));
        // SAFETY: as for a `String` above.
        reads.push(quote!(unsafe { #rt::heap::take_or_copy_vec(__w[#at]) }));
    } else if owned_object(f, types) && !inline_object(ty, f, types) {
        // A struct of scalars and `String`s, or an object the
        // analysis does not model (a `Box<dyn Error>`, an `Rc`): moved
        // into the arena and out again. An `Rc` is copied by its
        // `clone`; a `Box<dyn Error>` never is (a value holding one is
        // never read in place: `owns_opaque`).
        let st = rust_ty(f, None);
        let lost = format!("jitgen: a `{f}` residual code did not make, moved out of an enum value");
        moves.push(quote!(__w[#at] = #rt::heap::arena_alloc(#b) as usize as u64;));
        let copy = match f {
            Ty::Struct(_) => owning_struct_copy(f, b, types),
            _ if shared_object(f) => quote!(<#st as ::core::clone::Clone>::clone(#b)),
            _ => quote!(unreachable!("jitgen: an object it does not model copied out of its place")),
        };
        copies.push(quote!(__w[#at] = #rt::heap::arena_alloc(#copy) as usize as u64;));
        writes.push(quote!(__w[#at] = #b as *const #st as usize as u64;));
        reads.push(if shared_object(f) {
            // SAFETY: a rebuilt value's words name live objects no one
            // reads again (see `rebuildable`).
            quote!(unsafe { #rt::heap::take_or_clone::<#st>(__w[#at]) })
        } else {
            quote!(#rt::heap::arena_take::<#st>(__w[#at]).expect(#lost))
        });
    } else if let Some(key) = value_struct_key(f, &quote!(#b), types) {
        // A value struct (a decoded instruction) held by value: the
        // address of its one copy for these words, which outlives the
        // enum value it was read from (a green call's `Option<Instr>`).
        writes.push(quote!(__w[#at] = {
            let mut __k: ::std::vec::Vec<u64> = ::std::vec::Vec::new();
            #key
            #rt::heap::green_copy(&__k, || *#b) as *const _ as *const u8 as usize as u64
        };));
        reads.push(quote!(unreachable!("objects held inline cannot be rebuilt from words")));
    } else if inline_object(ty, f, types) || matches!(f, Ty::Struct(_)) {
        // Held inline, or a struct residual code reaches by address
        // only (an `Option<Frame>` of `frames.last()`): its address.
        writes.push(quote!(__w[#at] = #b as *const _ as *const u8 as usize as u64;));
        reads.push(quote!(unreachable!("objects held inline cannot be rebuilt from words")));
    } else if matches!(f, Ty::Boxed(_) | Ty::Ref { .. }) {
        writes.push(quote!(__w[#at] = (&**#b) as *const _ as *const u8 as usize as u64;));
        reads.push(quote!(unreachable!("pointers cannot be rebuilt from words")));
    } else if *f != Ty::Unit {
        reads.push(quote!(unreachable!()));
    } else {
        reads.push(quote!(()));
    }
}

/// The name of the value struct `t` is (`ModuleTypes::value_struct`), if it is one.
pub fn value_struct_of<'t>(t: &'t Ty, types: &ModuleTypes) -> Option<&'t str> {
    match t {
        Ty::Struct(s) if types.value_struct(s) => Some(s),
        _ => None,
    }
}

/// The code pushing the words of a value struct `v` of type `f` (see
/// `ModuleTypes::value_struct`) onto `__k: Vec<u64>`: the key of its one
/// copy (`heap::green_copy`), so that equal values are one object and a
/// green `&S` compared by address compares values. `None` for any other
/// type, or a value struct with a field of no key yet (a tuple). The enums
/// it flattens are among `collect_enums` of an enum holding it.
pub fn value_struct_key(f: &Ty, v: &TokenStream, types: &ModuleTypes) -> Option<TokenStream> {
    let s = value_struct_of(f, types)?;
    let mut words = vec![];
    for (name, t) in &types.structs.get(s)?.fields {
        let m = member(name);
        words.push(match repr(t, true, types) {
            Repr::G(sc) => {
                let w = to_word(sc, quote!(#v.#m));
                quote!(__k.push(#w);)
            }
            Repr::Enum(t, _) if plain(&t, types) => {
                let (flat, _, _) = enum_helpers(&t);
                quote!(__k.extend_from_slice(&#flat(&#v.#m));)
            }
            _ => return None,
        });
    }
    Some(quote!(#(#words)*))
}

/// Every enum type reachable from `ty` (itself, nested payloads, and the
/// fields of value structs among them).
pub fn collect_enums(ty: &Ty, types: &ModuleTypes, out: &mut Vec<Ty>) {
    if let Ty::Struct(s) = ty {
        if types.value_struct(s) {
            for t in types.structs[s].fields.values() {
                collect_enums(t, types, out);
            }
        }
    }
    if is_enum(ty) && !out.contains(ty) {
        out.push(ty.clone());
        for (_, _, fields, _) in variants(ty, types) {
            for f in fields {
                collect_enums(&f, types, out);
            }
        }
    }
    match ty {
        Ty::Ref { to: t, .. } | Ty::Boxed(t) | Ty::Vec(t) | Ty::Slice(t) | Ty::Array(t, _) => {
            collect_enums(t, types, out)
        }
        _ => {}
    }
}

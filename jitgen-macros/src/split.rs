//! The fields of `self` as the interpreter's state: a portal method's
//! receiver split into its fields before the analysis.
//!
//! `impl Vm { fn run(&mut self, a: A) -> R }` over `struct Vm { code: Vec<I>,
//! pc: usize, stack: Stack, frames: Vec<Frame> }` is lifted (see `methods`)
//! to a portal that takes the fields one by one:
//!
//! ```text
//! fn __Vm_run(__self_cells: &mut __Vm_run_cells, __self_code: &Vec<I>,
//!             __self_stack: &mut Stack, __self_frames: &mut Vec<Frame>, a: A) -> R
//! ```
//!
//! - A field no code of the method changes (a `Vec` only read: indexed,
//!   `get`, `len`, ...) is passed by `&` and made green, as
//!   `hint!(code[pc], concrete)` makes a program: read-only data of the
//!   machine is its program.
//! - A shared reference no code of the method assigns (`code: &'a [u8]` of
//!   a `Machine<'a>`; a struct's lifetime parameters are the only generics
//!   a split accepts) is passed by value, its lifetimes elided, and made
//!   green as a `&[u8]` parameter is. So is a `Box<[T]>` (`Rc<[T]>`,
//!   `Arc<[T]>`) only read, as the slice it holds.
//! - Structs (a wrapped operand stack) and maps are passed by `&mut`: the
//!   portal entry loads a struct into registers as it does `#[virtualizable]`
//!   frames, and writes it back when control leaves compiled code.
//! - Scalar fields live in a generated `#[virtualizable]` struct of cells,
//!   and the body reads each through a local (`__self_pc`), which starts
//!   from a parameter (`__self_pc_at_entry`) and which every assignment
//!   writes through into its cell: the local is what the merge point sees,
//!   so `hint!(self.pc, concrete)` makes the counter green. A number's
//!   own method called on one (`self.fuel.checked_sub(1)`, by value) reads
//!   its local; one of the `_assign` kind keeps `self` whole. A promotion
//!   as a statement, `hint!(self.pc, promote);`, is the assignment
//!   `self.pc = hint!(self.pc, promote);`: the field itself is promoted.
//! - A changed `Vec` of scalars that the methods index (an operand stack
//!   whose frames address its slots) is moved out of `self` into a
//!   generated tuple struct around it (`__Vm_run_stack`), passed by `&mut`
//!   as a hand-wrapped stack is (its header in registers in compiled code,
//!   where a moved one is a real `Vec` behind an address: PERFORMANCE.md),
//!   and moved back after the call.
//! - Another changed `Vec` (the saved frames, an output) is moved out of
//!   `self` into a local of the portal (`__self_frames`), virtual in compiled code as a
//!   local `Vec` is (a recursion spills it); every `return` and `?` of the
//!   body first gives it back to the field (`__self_frames_home`). The
//!   flow graphs pop it onto the field and put the field in order with one
//!   residual call (no index, so a virtual list moves at compile time); the
//!   Rust the interpreter runs swaps it back whole (`WholeGiveBacks`).
//! - An enum field (`last: Option<Instr>`, `flags: Flags`) is moved out of
//!   `self` (an `Option`, or an enum deriving `Default`) or copied out (a
//!   `Copy` enum) into a generated tuple struct around it, passed by
//!   `&mut` as a struct is, and moved back after the call. Another enum, or
//!   a `Result`, keeps `self` whole where the method uses it.
//! - A `Vec` of tuples, or of structs holding an `Rc` or `Arc`, is passed
//!   by `&mut`: compiled code reaches such elements in place only.
//! - Methods called on `self` are inlined where they are called (their
//!   bodies use the same fields); their `return` and `?` break out of a
//!   labeled `loop` around the body. A method's type parameters without
//!   bounds that its body does not name are left to rustc to infer; the
//!   result kind for `?` is read through the module's aliases (generic
//!   ones too: `type Run<T> = Result<T, E>`).
//!
//! The method, `jit::plain::T::m` and `jit::specialize::T::m` borrow the
//! fields of `self` side by side, copy the scalars into cells, call the
//! portal, and copy the cells back. Anything this does not cover (`self`
//! used whole, a field of another kind, `&mut self.pc`) leaves the method
//! lifted whole, as `__T_m(self_: &mut T, ..)`; so does a split the
//! analysis then does not support (`jitgen-macros/src/lib.rs` lifts the
//! module again with `self` whole).

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote, ToTokens};
use syn::punctuated::Punctuated;
use syn::visit_mut::VisitMut;
use syn::{Expr, Token};

use crate::closure_params::{bounded_ident, closure_generics, param_closure_bound, path_as_closure, ImplClosure};

/// How the portal takes one field of `self`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum FieldKind {
    /// A scalar: a cell of the generated struct, read through a local.
    Cell,
    /// Only read: by `&`.
    Frozen,
    /// A shared reference (`code: &'a [u8]`) never assigned: by value,
    /// green as a program passed as `&[u8]` is.
    SharedRef,
    /// Changed: by `&mut`.
    Mutated,
    /// A changed `Vec` (the saved frames) or `String` (the output): moved
    /// into a local of the portal, whose every exit moves it back to the
    /// field.
    Owned,
    /// A changed `Vec` of scalars that the methods index (an operand stack
    /// of numbers, see [`indexed`]): moved into a generated tuple struct
    /// around it, passed by `&mut` as a struct field is (its header in
    /// registers in compiled code), and moved back after the call.
    Wrapped,
}

/// A portal method's receiver split into its fields.
pub struct Split {
    /// The cells struct, if `self` has scalar fields.
    pub cells: Option<syn::Item>,
    /// The structs wrapping `Vec`s of scalars ([`FieldKind::Wrapped`]).
    pub wrappers: Vec<syn::Item>,
    /// The portal's parameters standing for `self`, in order.
    pub params: Vec<TokenStream>,
    /// The methods inlined into the body (dead code to rustc otherwise).
    pub inlined: BTreeSet<String>,
    /// The arguments moved into the portal (changed `Vec`s), which
    /// `jit::specialize` passes by `&mut`.
    pub owned: Vec<Ident>,
    /// Binds the portal's first arguments from `self_: &mut T`.
    pub prelude: TokenStream,
    /// Copies the cells back into `self_`.
    pub epilogue: TokenStream,
    /// The portal's arguments standing for `self` (names bound by the prelude).
    pub args: Vec<Ident>,
    /// The body with `self` replaced by the fields.
    pub body: syn::Block,
}

const SCALARS: &[&str] = &[
    "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize", "bool", "char", "f32",
    "f64",
];

/// Methods of a `Vec`, a slice, a map or a value of the standard library
/// that only read it (`self.code[i].clone()` leaves `code` as it was).
const READS: &[&str] = &[
    "clone",
    "cloned",
    "copied",
    "to_owned",
    "to_string",
    // By value: out of `&mut self`, only a copy (`self.code[i..i + 2].try_into()`).
    "into",
    "try_into",
    "as_str",
    "as_bytes",
    "eq",
    "ne",
    "cmp",
    "partial_cmp",
    "contains_key",
    "get",
    "len",
    "is_empty",
    "first",
    "last",
    "iter",
    "contains",
    "starts_with",
    "ends_with",
    "to_vec",
    "as_slice",
    "binary_search",
    "windows",
    "chunks",
];

/// The last segment's name of a plain path type (`Vec<T>` gives `Vec`).
fn type_head(t: &syn::Type) -> Option<String> {
    match t {
        syn::Type::Path(p) if p.qself.is_none() => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

/// What the module declares that decides how fields are passed.
pub struct ModuleShapes {
    /// `type A = B;`
    aliases: BTreeMap<String, syn::Type>,
    /// Enums (values: a field of one is not passed by reference).
    enums: BTreeSet<String>,
    /// The enums among them deriving `Default`, and those deriving `Copy`.
    defaults: BTreeSet<String>,
    copies: BTreeSet<String>,
    /// Structs of the module (whose content keys cover what they hold).
    structs: BTreeSet<String>,
    /// Structs of the module holding a shared pointer (`Rc`, `Arc`), which
    /// compiled code reaches in place only: a `Vec` of one is passed by
    /// reference, never made a local list.
    sharing: BTreeSet<String>,
}

impl ModuleShapes {
    pub fn read(items: &[syn::Item]) -> Self {
        let mut aliases = BTreeMap::new();
        let mut enums = BTreeSet::new();
        let mut defaults = BTreeSet::new();
        let mut copies = BTreeSet::new();
        let mut structs = BTreeSet::new();
        let mut sharing = BTreeSet::new();
        for it in items {
            match it {
                // A generic alias's parameters stay unsubstituted: what
                // decides a field's or a result's shape is its head.
                syn::Item::Type(t) => {
                    aliases.insert(t.ident.to_string(), (*t.ty).clone());
                }
                syn::Item::Enum(e) => {
                    enums.insert(e.ident.to_string());
                    let derives = |t: &str| {
                        e.attrs.iter().any(|a| {
                            a.path().is_ident("derive")
                                && names_any(a.meta.to_token_stream(), &[format_ident!("{}", t)])
                        })
                    };
                    if derives("Default") {
                        defaults.insert(e.ident.to_string());
                    }
                    if derives("Copy") {
                        copies.insert(e.ident.to_string());
                    }
                }
                syn::Item::Struct(s) if s.generics.params.is_empty() => {
                    structs.insert(s.ident.to_string());
                    let shared =
                        |t: &syn::Type| names_any(t.to_token_stream(), &[format_ident!("Rc"), format_ident!("Arc")]);
                    if s.fields.iter().any(|f| shared(&f.ty)) {
                        sharing.insert(s.ident.to_string());
                    }
                }
                _ => {}
            }
        }
        ModuleShapes { aliases, enums, defaults, copies, structs, sharing }
    }

    /// A `Vec` that is made a local list of the portal: of neither tuples
    /// nor structs holding shared pointers.
    fn is_local_list(&self, t: &syn::Type) -> bool {
        let t = self.resolve(t);
        self.is_vec(&t)
            && !holds_tuple(&t)
            && !names_any(t.to_token_stream(), &self.sharing.iter().map(|s| format_ident!("{}", s)).collect::<Vec<_>>())
    }

    /// `t` with module aliases resolved (a few levels).
    fn resolve(&self, t: &syn::Type) -> syn::Type {
        let mut t = t.clone();
        for _ in 0..8 {
            match type_head(&t).and_then(|h| self.aliases.get(&h)) {
                Some(u) if matches!(&t, syn::Type::Path(p) if p.path.segments.len() == 1) => t = u.clone(),
                _ => break,
            }
        }
        t
    }

    /// `Some(true)` for a scalar, `Some(false)` for an object passed by
    /// reference (a `Vec`, `HashMap`, `String`, array, struct of the module,
    /// or an object of another type: a `Box<dyn Write>`, an `Rc`, another
    /// crate's map), `None` for what is not split (a value of an enum,
    /// `Option` or `Result`, whose writes are not through a reference).
    fn field_shape(&self, t: &syn::Type) -> Option<bool> {
        let t = self.resolve(t);
        if matches!(t, syn::Type::Array(_)) {
            return Some(false);
        }
        let h = type_head(&t)?;
        if SCALARS.contains(&h.as_str()) {
            return Some(true);
        }
        (!self.enums.contains(&h) && !matches!(h.as_str(), "Option" | "Result" | "Self")).then_some(false)
    }

    /// A value of an enum that has a `Default` (an `Option`, an enum of the
    /// module deriving it) or is `Copy`: a field of one can be moved or
    /// copied out of `self` for the call, into a generated struct around
    /// it ([`FieldKind::Wrapped`]).
    fn is_takeable_enum(&self, t: &syn::Type) -> bool {
        type_head(&self.resolve(t)).is_some_and(|h| h == "Option" || self.defaults.contains(&h) || self.is_copy_enum(t))
    }

    /// An enum of the module deriving `Copy`.
    fn is_copy_enum(&self, t: &syn::Type) -> bool {
        type_head(&self.resolve(t)).is_some_and(|h| self.copies.contains(&h))
    }

    fn is_array(&self, t: &syn::Type) -> bool {
        matches!(self.resolve(t), syn::Type::Array(_))
    }

    /// The element type of a slice owned or shared behind a pointer
    /// (`Box<[T]>`, `Rc<[T]>`, `Arc<[T]>`): a field of one that the method
    /// only reads is passed as the slice, `&[T]`.
    fn boxed_slice_elem(&self, t: &syn::Type) -> Option<syn::Type> {
        let syn::Type::Path(p) = self.resolve(t) else { return None };
        let last = p.path.segments.last()?;
        if !matches!(last.ident.to_string().as_str(), "Box" | "Rc" | "Arc") {
            return None;
        }
        let syn::PathArguments::AngleBracketed(a) = &last.arguments else { return None };
        match a.args.first()? {
            syn::GenericArgument::Type(syn::Type::Slice(s)) if a.args.len() == 1 => Some((*s.elem).clone()),
            _ => None,
        }
    }

    fn is_vec(&self, t: &syn::Type) -> bool {
        type_head(&self.resolve(t)).as_deref() == Some("Vec")
    }

    /// A `Vec` of scalars (an operand stack of numbers).
    fn is_scalar_vec(&self, t: &syn::Type) -> bool {
        let syn::Type::Path(p) = self.resolve(t) else { return false };
        let Some(last) = p.path.segments.last() else { return false };
        let syn::PathArguments::AngleBracketed(a) = &last.arguments else { return false };
        last.ident == "Vec"
            && matches!(a.args.first(), Some(syn::GenericArgument::Type(e))
                if type_head(&self.resolve(e)).is_some_and(|h| SCALARS.contains(&h.as_str())))
    }

    fn is_string(&self, t: &syn::Type) -> bool {
        type_head(&self.resolve(t)).as_deref() == Some("String")
    }

    /// A struct of the module (not another module's: content keys, which
    /// keep cached code from running on other data at the same address,
    /// cover only the module's types).
    fn is_module_struct(&self, t: &syn::Type) -> bool {
        let t = self.resolve(t);
        matches!(&t, syn::Type::Path(p) if p.path.segments.len() == 1)
            && type_head(&t).is_some_and(|h| self.structs.contains(&h))
    }
}

/// `self.f` (through parentheses): `f`.
fn self_field(e: &Expr) -> Option<String> {
    match e {
        Expr::Paren(p) => self_field(&p.expr),
        Expr::Field(f) => match (&*f.base, &f.member) {
            (Expr::Path(p), syn::Member::Named(n)) if p.path.is_ident("self") => Some(n.to_string()),
            _ => None,
        },
        _ => None,
    }
}

/// The field of `self` a place expression lies in (`self.f.0[i]` gives `f`).
fn root_field(e: &Expr) -> Option<String> {
    if let Some(f) = self_field(e) {
        return Some(f);
    }
    match e {
        Expr::Paren(p) => root_field(&p.expr),
        Expr::Field(f) => root_field(&f.base),
        Expr::Index(i) => root_field(&i.expr),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => root_field(&u.expr),
        _ => None,
    }
}

fn is_self(e: &Expr) -> bool {
    matches!(e, Expr::Path(p) if p.path.is_ident("self"))
}

/// Macros whose arguments are expressions separated by commas.
pub(crate) const EXPR_MACROS: &[&str] = &[
    "print",
    "println",
    "eprint",
    "eprintln",
    "write",
    "writeln",
    "assert",
    "assert_eq",
    "assert_ne",
    "panic",
    "hint",
    "vec",
    "format",
    "format_args",
    "unreachable",
    "todo",
    "unimplemented",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
];

/// Rewrites a body: `self.f` to the fields, methods on `self` inlined.
struct Rewrite<'a> {
    kinds: &'a BTreeMap<String, FieldKind>,
    methods: &'a BTreeMap<String, syn::ImplItemFn>,
    shapes: &'a ModuleShapes,
    /// Methods being inlined, innermost last.
    inlining: Vec<String>,
    /// Fields that something changes.
    mutated: BTreeSet<String>,
    /// The methods inlined.
    inlined: BTreeSet<String>,
    /// The fields the body uses.
    mentioned: BTreeSet<String>,
    /// Why the split is not possible, if it is not.
    failed: Option<String>,
    /// What every exit of the portal does first (moving owned fields
    /// back), and the method's result kind (`Result` or `Option`, for `?`);
    /// `None` while rewriting inlined methods and closures.
    exits: Option<Exits>,
    /// Labels given to inlined methods with early exits so far.
    labels: usize,
    /// Whether the expression being visited is a statement's whose value
    /// `;` discards (set for it alone: the next expression visited takes it).
    discarded: bool,
}

/// Where `return` and `?` go in the code being rewritten.
#[derive(Clone)]
struct Exits {
    /// What leaving the portal does first (moving owned fields back).
    write_back: TokenStream,
    /// `Result` or `Option`: what `?` gives back.
    kind: Option<String>,
    /// In an inlined method, the label of the loop its exits break out of.
    label: Option<syn::Lifetime>,
    /// The portal's result type, where a binding may be given it: a
    /// `return`'s value is bound to it before the write-backs, so that it
    /// coerces as the returned value does (`Err(Box::new(e))` into a
    /// `Box<dyn Error>`).
    ret: Option<syn::Type>,
}

impl<'a> Rewrite<'a> {
    fn new(
        kinds: &'a BTreeMap<String, FieldKind>,
        methods: &'a BTreeMap<String, syn::ImplItemFn>,
        shapes: &'a ModuleShapes,
        exits: Option<Exits>,
    ) -> Self {
        Rewrite {
            kinds,
            methods,
            shapes,
            inlining: vec![],
            mutated: BTreeSet::new(),
            inlined: BTreeSet::new(),
            mentioned: BTreeSet::new(),
            failed: None,
            exits,
            labels: 0,
            discarded: false,
        }
    }

    fn fail(&mut self, why: &str) {
        self.failed.get_or_insert_with(|| why.to_string());
    }

    fn cell(f: &str) -> Ident {
        format_ident!("__self_{}", f)
    }

    /// The block a call `self.m(args)` becomes: `{ let (params) = (args); body }`.
    fn inline(&mut self, mc: &mut syn::ExprMethodCall) -> Option<Expr> {
        let name = mc.method.to_string();
        let Some(m) = self.methods.get(&name).cloned() else {
            self.fail(&format!("`self.{name}()` is not a method of the module"));
            return None;
        };
        if self.inlining.contains(&name) || self.inlining.len() > 8 {
            self.fail(&format!("`{name}` calls itself"));
            return None;
        }
        if !matches!(m.sig.inputs.first(), Some(syn::FnArg::Receiver(r)) if matches!(r.kind, syn::ReceiverKind::Reference(..)))
        {
            self.fail(&format!("`{name}` does not take `&self` or `&mut self`"));
            return None;
        }
        // Type parameters without bounds that the body does not name
        // (`fn error<T>(&self, m: String) -> Result<T, E>`) are left to
        // rustc to infer where the body is inlined: the types that name
        // them are not written there. Others keep `self` whole.
        // A type parameter bounded by a closure trait (`F: Fn(f64, f64) ->
        // f64`) is the type of a closure argument, bound as `impl Fn` is
        // (below).
        let closure_generics = closure_generics(&m.sig.generics);
        let mut generic = vec![];
        for p in &m.sig.generics.params {
            match p {
                syn::GenericParam::Type(t) if closure_generics.contains_key(&t.ident) => generic.push(t.ident.clone()),
                syn::GenericParam::Type(t)
                    if t.bounds.is_empty()
                        && m.sig.generics.where_clause.as_ref().is_none_or(|w| {
                            w.predicates
                                .iter()
                                .all(|p| bounded_ident(p).is_some_and(|i| closure_generics.contains_key(i)))
                        }) =>
                {
                    generic.push(t.ident.clone())
                }
                _ => {
                    self.fail(&format!("`{name}` has generic parameters"));
                    return None;
                }
            }
        }
        let names_generic = |t: TokenStream| names_any(t, &generic);
        if names_generic(m.block.to_token_stream()) {
            self.fail(&format!("`{name}` names its generic parameters"));
            return None;
        }
        let mut finder = ExitFinder(false);
        syn::visit::Visit::visit_block(&mut finder, &m.block);
        // `return` and `?` of the method leave a labeled loop around its body.
        let label = finder.0.then(|| {
            self.labels += 1;
            syn::Lifetime::new(&format!("'__jit_m{}", self.labels), mc.method.span())
        });
        let mut pats = vec![];
        let mut tys = vec![];
        let mut closure_bounds = vec![];
        for a in m.sig.inputs.iter().skip(1) {
            match a {
                syn::FnArg::Typed(pt) => {
                    pats.push((*pt.pat).clone());
                    tys.push((!names_generic(pt.ty.to_token_stream())).then(|| (*pt.ty).clone()));
                    closure_bounds.push(param_closure_bound(pt, &closure_generics, &m.block.stmts));
                }
                syn::FnArg::Receiver(_) => return None,
            }
        }
        for a in mc.args.iter_mut() {
            self.visit_expr_mut(a);
        }
        // A closure parameter (`impl Fn(i64, i64) -> i64`, or `F` bounded
        // so) is no type a binding may have: the argument is bound behind a
        // reference to the matching `dyn`, which gives it its signature as
        // the parameter did; one written at the call is bound first, by
        // itself, for `closures` to inline. Any other `impl Trait` argument
        // keeps its own type.
        let mut args: Vec<Expr> = mc.args.iter().cloned().collect();
        let mut closure_lets = vec![];
        for k in (0..args.len().min(tys.len())).rev() {
            if let Some(bound) = &closure_bounds[k] {
                let c = ImplClosure { bound: bound.clone() };
                if let Some(closure) = path_as_closure(&args[k], bound, true) {
                    args[k] = closure;
                }
                if let (syn::Pat::Ident(p), Expr::Closure(_)) = (&pats[k], &args[k]) {
                    closure_lets.push((p.ident.clone(), c.bind(&args[k])));
                    pats.remove(k);
                    tys.remove(k);
                    args.remove(k);
                    continue;
                }
                let (ty, arg) = c.bind(&args[k]);
                tys[k] = Some(ty);
                args[k] = arg;
            } else if tys[k].as_ref().is_some_and(holds_impl_trait) {
                tys[k] = None;
            }
        }
        let args: Vec<&Expr> = args.iter().collect();
        let mut body = m.block.clone();
        self.inlined.insert(name.clone());
        self.inlining.push(name);
        let kind = match &m.sig.output {
            syn::ReturnType::Type(_, t) => type_head(&self.shapes.resolve(t)),
            syn::ReturnType::Default => None,
        };
        let inner = label.clone().map(|label| Exits { write_back: quote!(), kind, label: Some(label), ret: None });
        let exits = std::mem::replace(&mut self.exits, inner);
        self.visit_block_mut(&mut body);
        self.exits = exits;
        self.inlining.pop();
        let stmts = &body.stmts;
        // The block the call becomes is where the call is (the range that
        // outlining takes for it); its statements stay their method's.
        let at = mc.method.span();
        let body = match &label {
            Some(l) => {
                let ty = match &m.sig.output {
                    syn::ReturnType::Type(_, t) if names_generic(t.to_token_stream()) => quote!(),
                    syn::ReturnType::Type(_, t) => {
                        let t = respan(t.to_token_stream(), at);
                        quote::quote_spanned!(at=> : #t)
                    }
                    syn::ReturnType::Default => quote::quote_spanned!(at=> : ()),
                };
                // The block in parentheses: rustc's `break_with_label_and_loop`
                // lints a labeled `break` of a bare block (and the portal
                // allows `unused_braces`).
                quote::quote_spanned!(at=> let __jit_m #ty = #l: loop { break #l ({ #(#stmts)* }); }; __jit_m)
            }
            None => quote!(#(#stmts)*),
        };
        // `_` where the type names a type parameter.
        let tys: Vec<TokenStream> = tys
            .iter()
            .map(|t| t.as_ref().map_or_else(|| quote::quote_spanned!(at=> _), |t| respan(t.to_token_stream(), at)))
            .collect();
        let pats: Vec<TokenStream> = pats.iter().map(|p| respan(p.to_token_stream(), at)).collect();
        let block: syn::Block = match pats.len() {
            0 => syn::parse_quote_spanned!(at=> { #body }),
            1 => {
                let (p, t, a) = (&pats[0], &tys[0], args[0]);
                syn::parse_quote_spanned!(at=> { let #p: #t = #a; #body })
            }
            _ => syn::parse_quote_spanned!(at=> { let (#(#pats),*): (#(#tys),*) = (#(#args),*); #body }),
        };
        Some(Expr::Block(syn::ExprBlock { attrs: vec![], label: None, block: bind_closures(block, closure_lets, at) }))
    }

    /// Notes what a place rooted in a field of `self` does to it.
    fn note_mutation(&mut self, place: &Expr) {
        if let Some(f) = root_field(place) {
            self.mutated.insert(f);
        }
    }
}

/// `block` with the closures written at an inlined call bound first
/// (`(name, (dyn type, value))`), each behind a reference to its `dyn`
/// (which gives it its signature); `closures` inlines it later where the
/// body calls it, run again on the lifted methods.
fn bind_closures(block: syn::Block, lets: Vec<(Ident, (syn::Type, Expr))>, at: proc_macro2::Span) -> syn::Block {
    let mut block = block;
    for (name, (ty, value)) in lets {
        block = syn::parse_quote_spanned!(at=> { let #name: #ty = #value; #block });
    }
    block
}

/// A method's result type, where a binding may be given it (it names
/// neither `Self` nor an `impl Trait`).
fn result_type(m: &syn::ImplItemFn) -> Option<syn::Type> {
    match &m.sig.output {
        syn::ReturnType::Type(_, t)
            if !holds_impl_trait(t) && !names_any(t.to_token_stream(), &[format_ident!("Self")]) =>
        {
            Some((**t).clone())
        }
        _ => None,
    }
}

/// Whether an `impl Trait` type is nested in `t`.
fn holds_impl_trait(t: &syn::Type) -> bool {
    struct Find(bool);
    impl<'a> syn::visit::Visit<'a> for Find {
        fn visit_type_impl_trait(&mut self, _: &'a syn::TypeImplTrait) {
            self.0 = true;
        }
    }
    let mut f = Find(false);
    syn::visit::Visit::visit_type(&mut f, t);
    f.0
}

/// Whether a tuple type is nested in `t`.
fn holds_tuple(t: &syn::Type) -> bool {
    struct Find(bool);
    impl<'a> syn::visit::Visit<'a> for Find {
        fn visit_type_tuple(&mut self, t: &'a syn::TypeTuple) {
            self.0 |= !t.elems.is_empty();
        }
    }
    let mut f = Find(false);
    syn::visit::Visit::visit_type(&mut f, t);
    f.0
}

/// Whether `t` names one of `names`.
fn names_any(t: TokenStream, names: &[Ident]) -> bool {
    t.into_iter().any(|tt| match tt {
        proc_macro2::TokenTree::Ident(i) => names.contains(&i),
        proc_macro2::TokenTree::Group(g) => names_any(g.stream(), names),
        _ => false,
    })
}

/// Whether a body has `return` or `?` outside closures.
struct ExitFinder(bool);

impl<'ast> syn::visit::Visit<'ast> for ExitFinder {
    fn visit_expr_return(&mut self, _: &'ast syn::ExprReturn) {
        self.0 = true;
    }
    fn visit_expr_try(&mut self, _: &'ast syn::ExprTry) {
        self.0 = true;
    }
    fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
}

impl VisitMut for Rewrite<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        let discarded = std::mem::take(&mut self.discarded);
        if self.failed.is_some() {
            return;
        }
        match e {
            Expr::Assign(a) => {
                if let Some(f) = self_field(&a.left).filter(|f| self.kinds.get(f) == Some(&FieldKind::Cell)) {
                    self.mentioned.insert(f.clone());
                    self.visit_expr_mut(&mut a.right);
                    let (c, r) = (Self::cell(&f), &a.right);
                    let fi = format_ident!("{}", f);
                    *e = syn::parse_quote!({ #c = #r; __self_cells.#fi = #c; });
                    return;
                }
                self.note_mutation(&a.left);
            }
            Expr::Binary(b) if hint_annotator::is_compound_assign_op(&b.op) => {
                if let Some(f) = self_field(&b.left).filter(|f| self.kinds.get(f) == Some(&FieldKind::Cell)) {
                    self.mentioned.insert(f.clone());
                    self.visit_expr_mut(&mut b.right);
                    let (c, op, r) = (Self::cell(&f), &b.op, &b.right);
                    let fi = format_ident!("{}", f);
                    *e = syn::parse_quote!({ #c #op #r; __self_cells.#fi = #c; });
                    return;
                }
                self.note_mutation(&b.left);
            }
            Expr::Reference(r) if r.mutability.is_some() => {
                if let Some(f) = root_field(&r.expr) {
                    if self.kinds.get(&f) == Some(&FieldKind::Cell) {
                        self.fail(&format!("`&mut self.{f}`"));
                        return;
                    }
                    self.mutated.insert(f);
                }
            }
            Expr::MethodCall(mc) if is_self(&mc.receiver) => {
                if let Some(x) = self.inline(mc) {
                    *e = x;
                }
                return;
            }
            Expr::MethodCall(mc) => {
                // Nothing is changed through a shared reference (`code: &'a [u8]`).
                if let Some(f) = root_field(&mc.receiver).filter(|f| self.kinds.get(f) != Some(&FieldKind::SharedRef)) {
                    let m = mc.method.to_string();
                    let on_cell =
                        self.kinds.get(&f) == Some(&FieldKind::Cell) && self_field(&mc.receiver).as_ref() == Some(&f);
                    // A scalar's own methods take it by value
                    // (`self.fuel.checked_sub(1)`): a read of its cell.
                    let scalar_read = on_cell && hint_annotator::is_by_value_scalar_method(&m);
                    if on_cell && !scalar_read && !READS.contains(&m.as_str()) {
                        // Any other method may take it by `&mut` (a trait's
                        // `fn bump(&mut self)` on `i64`): called on the cell,
                        // whose value is then the field's, as an assignment's is.
                        self.mentioned.insert(f.clone());
                        mc.args.iter_mut().for_each(|a| self.visit_expr_mut(a));
                        let span = syn::spanned::Spanned::span(&*mc);
                        let (c, fi) = (Self::cell(&f), format_ident!("{}", f));
                        let (method, turbofish, args) = (mc.method.clone(), mc.turbofish.clone(), mc.args.clone());
                        *e = if discarded {
                            syn::parse_quote_spanned!(span=> { #c.#method #turbofish (#args); __self_cells.#fi = #c; })
                        } else {
                            syn::parse_quote_spanned!(span=> {
                                let __jitgen_value = #c.#method #turbofish (#args);
                                __self_cells.#fi = #c;
                                __jitgen_value
                            })
                        };
                        return;
                    }
                    if !READS.contains(&m.as_str()) && !scalar_read {
                        if self.kinds.get(&f) == Some(&FieldKind::Cell) {
                            self.fail(&format!("`.{}()` on `self.{f}`", mc.method));
                            return;
                        }
                        self.mutated.insert(f);
                    }
                }
            }
            Expr::Field(_) => {
                if let Some(f) = self_field(e) {
                    self.mentioned.insert(f.clone());
                    // Where `self.f` was written: what is said of the field
                    // (a decline's line) points there.
                    let span = syn::spanned::Spanned::span(&*e);
                    let mut c = Self::cell(&f);
                    c.set_span(span);
                    match self.kinds.get(&f) {
                        Some(FieldKind::Cell | FieldKind::Owned | FieldKind::SharedRef) => {
                            *e = syn::parse_quote_spanned!(span=> #c)
                        }
                        Some(FieldKind::Wrapped) => *e = syn::parse_quote_spanned!(span=> (#c.0)),
                        Some(_) => *e = syn::parse_quote_spanned!(span=> (*#c)),
                        None => self.fail(&format!("`self.{f}`")),
                    }
                    return;
                }
            }
            Expr::Path(p) if p.path.is_ident("self") => {
                self.fail("`self` used whole");
                return;
            }
            Expr::Macro(m) => {
                self.visit_macro_mut(&mut m.mac);
                return;
            }
            Expr::Closure(c) => {
                let exits = self.exits.take();
                self.visit_expr_mut(&mut c.body);
                self.exits = exits;
                return;
            }
            Expr::Return(r) if self.exits.is_some() => {
                if let Some(x) = &mut r.expr {
                    self.visit_expr_mut(x);
                }
                let ex = self.exits.clone().expect("checked");
                // Where the `return` is (see `Expr::Try` below).
                let at = r.return_token.span;
                let x = r.expr.as_ref().map_or(quote::quote_spanned!(at=> ()), |x| quote!(#x));
                let wb = respan(ex.write_back.clone(), at);
                *e = match &ex.label {
                    // In parentheses: the value may be an inlined method's
                    // labeled `loop` (rustc's `break_with_label_and_loop`).
                    Some(l) => syn::parse_quote_spanned!(at=> break #l (#x)),
                    // The block is where the value is: a mismatch of its
                    // type with the result's is the value's, which
                    // outlining then runs as Rust (`Err("text".into())`
                    // into a `Box<dyn Error>`).
                    None => {
                        let vat = r.expr.as_ref().map_or(at, |x| syn::spanned::Spanned::span(&**x));
                        let ty = ex.ret.as_ref().map(|t| {
                            let t = respan(t.to_token_stream(), vat);
                            quote::quote_spanned!(vat=> : #t)
                        });
                        let value: Expr = syn::parse_quote_spanned!(vat=> { let __jit_r #ty = #x; #wb __jit_r });
                        syn::parse_quote_spanned!(at=> return #value)
                    }
                };
                return;
            }
            Expr::Try(t) if self.exits.is_some() => {
                self.visit_expr_mut(&mut t.expr);
                let ex = self.exits.clone().expect("checked");
                let x = &t.expr;
                // What `?` becomes is where the `?` is (the range outlining
                // takes for it).
                let at = t.question_token.span;
                let wb = respan(ex.write_back.clone(), at);
                let leave = |v: TokenStream| match &ex.label {
                    Some(l) => quote::quote_spanned!(at=> break #l #v),
                    None => quote::quote_spanned!(at=> { #wb return #v; }),
                };
                // As `?` does: the error converted into the function's (`&str`
                // into `String`).
                let (err, none) = (
                    leave(quote::quote_spanned!(at=> Err(::core::convert::From::from(__jit_e)))),
                    leave(quote::quote_spanned!(at=> None)),
                );
                *e = match ex.kind.as_deref() {
                    Some("Result") => syn::parse_quote_spanned!(at=> match #x {
                        Ok(__jit_v) => __jit_v,
                        Err(__jit_e) => #err,
                    }),
                    Some("Option") => syn::parse_quote_spanned!(at=> match #x {
                        Some(__jit_v) => __jit_v,
                        None => #none,
                    }),
                    _ => {
                        self.fail("`?` in a method returning neither `Result` nor `Option`");
                        return;
                    }
                };
                return;
            }
            _ => {}
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }

    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        if !m.tokens.clone().into_iter().any(|t| mentions_self(&t)) {
            return;
        }
        let name = m.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
        if name == "matches" {
            // `matches!(e, pattern)` or `matches!(e, pattern if guard)`.
            let parser = |input: syn::parse::ParseStream| {
                let e: Expr = input.parse()?;
                let comma: Token![,] = input.parse()?;
                let pat = syn::Pat::parse_multi_with_leading_vert(input)?;
                let guard = if input.peek(Token![if]) {
                    let i: Token![if] = input.parse()?;
                    Some((i, input.parse::<Expr>()?))
                } else {
                    None
                };
                let trailing: Option<Token![,]> = input.parse()?;
                Ok((e, comma, pat, guard, trailing))
            };
            match syn::parse::Parser::parse2(parser, m.tokens.clone()) {
                Ok((mut e, comma, pat, mut guard, trailing)) => {
                    self.visit_expr_mut(&mut e);
                    if let Some((_, g)) = &mut guard {
                        self.visit_expr_mut(g);
                    }
                    let guard = guard.map(|(i, g)| quote!(#i #g));
                    m.tokens = quote!(#e #comma #pat #guard #trailing);
                }
                Err(_) => self.fail("`self` inside `matches!`"),
            }
            return;
        }
        let parsed = syn::parse::Parser::parse2(Punctuated::<Expr, Token![,]>::parse_terminated, m.tokens.clone());
        match parsed {
            Ok(mut args) if EXPR_MACROS.contains(&name.as_str()) => {
                if name == "write" || name == "writeln" {
                    // The destination is written.
                    if let Some(dest) = args.first() {
                        self.note_mutation(dest);
                    }
                }
                for a in args.iter_mut() {
                    self.visit_expr_mut(a);
                }
                m.tokens = args.to_token_stream();
            }
            _ => self.fail(&format!("`self` inside `{name}!`")),
        }
    }

    fn visit_stmt_macro_mut(&mut self, s: &mut syn::StmtMacro) {
        self.visit_macro_mut(&mut s.mac);
    }

    fn visit_stmt_mut(&mut self, s: &mut syn::Stmt) {
        // `hint!(self.pc, promote);` promotes the field itself (as PyPy's
        // promote of a field does, and `known` in the analysis for a
        // struct kept whole): for a cell, its local and its cell take the
        // promoted value, as `self.pc = hint!(self.pc, promote);` does.
        if let syn::Stmt::Macro(sm) = s {
            let promoted = promoted_field(&sm.mac).filter(|f| self.kinds.get(f) == Some(&FieldKind::Cell));
            if let Some(f) = promoted {
                let (f, mac) = (format_ident!("{}", f), &sm.mac);
                *s = syn::parse_quote_spanned!(syn::spanned::Spanned::span(&sm.mac)=> self.#f = #mac;);
            }
        }
        self.discarded = matches!(s, syn::Stmt::Expr(_, Some(_)));
        syn::visit_mut::visit_stmt_mut(self, s);
        self.discarded = false;
    }
}

/// The field `f` of `hint!(self.f, promote)`, if the macro is that.
fn promoted_field(mac: &syn::Macro) -> Option<String> {
    if !mac.path.is_ident("hint") {
        return None;
    }
    let args = mac.parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated).ok()?;
    match (args.first(), args.get(1), args.len()) {
        (Some(place), Some(Expr::Path(flag)), 2) if flag.path.is_ident("promote") => self_field(place),
        _ => None,
    }
}

fn mentions_self(t: &proc_macro2::TokenTree) -> bool {
    match t {
        proc_macro2::TokenTree::Ident(i) => i == "self",
        proc_macro2::TokenTree::Group(g) => g.stream().into_iter().any(|t| mentions_self(&t)),
        _ => false,
    }
}

/// Rewrites the give-backs of owned `Vec` fields at a split method's exits
/// (the element-by-element form the flow graphs see: pops onto the field,
/// then a residual call that reverses it) as one swap, in the Rust the
/// interpreter runs: the field was left empty, so the swap gives it back
/// whole, in O(1), where the element-by-element form costs a portal call
/// the length of the `Vec`.
pub(crate) struct WholeGiveBacks;

impl VisitMut for WholeGiveBacks {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        if let Some((list, home)) = give_back_parts(e) {
            *e = syn::parse_quote!({ ::jitgen::__private::give_back_whole(#home, &mut #list); });
            return;
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
}

/// The local and the field's reference of a give-back written by [`split`]:
/// `{ while let Some(__jit_x) = LIST.pop() { HOME.push(__jit_x); } give_back_order(HOME); }`.
fn give_back_parts(e: &Expr) -> Option<(Expr, Expr)> {
    let Expr::Block(b) = e else { return None };
    let [syn::Stmt::Expr(Expr::While(w), _), syn::Stmt::Expr(Expr::Call(order), Some(_))] = &b.block.stmts[..] else {
        return None;
    };
    let (Expr::Path(f), Some(home), 1) = (&*order.func, order.args.first(), order.args.len()) else { return None };
    let Expr::Let(l) = &*w.cond else { return None };
    let syn::Pat::TupleStruct(p) = &*l.pat else { return None };
    let bound = p.elems.first().map(|x| x.to_token_stream().to_string());
    let Expr::MethodCall(pop) = &*l.expr else { return None };
    let orders = f.path.segments.last().is_some_and(|s| s.ident == "give_back_order");
    (bound.as_deref() == Some("__jit_x") && pop.method == "pop" && orders)
        .then(|| ((*pop.receiver).clone(), home.clone()))
}

/// Splits `self` of the method `m` of struct `s` (named fields), or says why not.
pub fn split(
    s: &syn::ItemStruct,
    m: &syn::ImplItemFn,
    methods: &BTreeMap<String, syn::ImplItemFn>,
    shapes: &ModuleShapes,
) -> Result<Split, String> {
    let syn::Fields::Named(named) = &s.fields else { return Err("not a struct with named fields".into()) };
    if s.generics.params.iter().any(|p| !matches!(p, syn::GenericParam::Lifetime(_))) {
        return Err("a struct with type parameters".into());
    }
    let mut kinds = BTreeMap::new();
    let mut tys = BTreeMap::new();
    let mut unsupported = vec![];
    let mut order = vec![];
    for f in &named.named {
        let Some(id) = &f.ident else { return Err("an unnamed field".into()) };
        let name = id.to_string();
        if name.starts_with("r#") {
            return Err(format!("the raw field name `{name}`"));
        }
        let kind = split_kind(&f.ty, &name, m, methods, shapes).unwrap_or_else(|| {
            // Fine while the method does not use it (it stays in `self`).
            unsupported.push(name.clone());
            FieldKind::Mutated
        });
        kinds.insert(name.clone(), kind);
        tys.insert(name.clone(), f.ty.clone());
        order.push(name);
    }
    // The body's own `macro_rules!` are expanded first: their rules may use
    // `self`'s fields (`binary_op!(+)` popping `self.stack`), which the
    // rewrite then splits as anywhere else.
    let block = {
        let mut b = m.block.clone();
        if hint_annotator::macro_rules::expand_body(&mut b, &Default::default()).is_empty() {
            b
        } else {
            m.block.clone()
        }
    };
    // A first pass finds what is changed: an owned field only read is frozen.
    let mut probe = Rewrite::new(&kinds, methods, shapes, None);
    probe.visit_block_mut(&mut block.clone());
    if let Some(why) = probe.failed {
        return Err(why);
    }
    if let Some(f) = unsupported.iter().find(|f| probe.mentioned.contains(*f)) {
        return Err(format!(
            "field `{f}`: an enum that is neither `Copy` nor `Default`, or a `Result` (derive `Default` for \
             it; a scalar, an `Option`, an enum deriving `Copy` or `Default`, or an object passed by reference, \
             can be split)"
        ));
    }
    // Fields the method never uses stay in `self`, untouched.
    order.retain(|f| probe.mentioned.contains(f));
    let mutated = probe.mutated;
    if let Some(f) = order.iter().find(|f| kinds[*f] == FieldKind::SharedRef && mutated.contains(*f)) {
        return Err(format!("field `{f}`: a reference the method assigns"));
    }
    freeze_unchanged(&mut kinds, &mutated, &tys, shapes);
    let owned: Vec<Ident> =
        order.iter().filter(|f| kinds[*f] == FieldKind::Owned).map(|f| format_ident!("{}", f)).collect();
    let write_backs: Vec<TokenStream> = owned
        .iter()
        .map(|f| {
            let (c, home) = (format_ident!("__self_{}", f), format_ident!("__self_{}_home", f));
            if shapes.is_string(&tys[&f.to_string()]) {
                // The field was left empty: swapping restores it, without
                // copying the text.
                quote!(::std::mem::swap(#home, &mut #c);)
            } else {
                // As compiled code gives it back (a virtual list has no
                // address to swap); the Rust copies swap (`WholeGiveBacks`).
                quote!({ while let Some(__jit_x) = #c.pop() { #home.push(__jit_x); } ::jitgen::__private::give_back_order(#home); })
            }
        })
        .collect();
    let wb = quote!(#(#write_backs)*);
    let result_kind = match &m.sig.output {
        syn::ReturnType::Type(_, t) => type_head(&shapes.resolve(t)),
        syn::ReturnType::Default => None,
    };
    // `return` and `?` leave through the write-backs; a wrapped `Vec`'s
    // needs none, but its `?`s convert their errors the same way (`From`).
    let wrapped = kinds.iter().any(|(f, k)| *k == FieldKind::Wrapped && order.contains(f));
    let exits = (!owned.is_empty() || wrapped).then(|| Exits {
        write_back: wb.clone(),
        kind: result_kind,
        label: None,
        ret: result_type(m),
    });
    let mut rw = Rewrite::new(&kinds, methods, shapes, exits);
    let mut body = block;
    rw.visit_block_mut(&mut body);
    if let Some(why) = rw.failed {
        return Err(why);
    }
    if body.to_token_stream().into_iter().any(|t| mentions_self(&t)) {
        return Err("`self` left in the body".into());
    }
    let sname = &s.ident;
    let cells_ty = format_ident!("__{}_{}_cells", sname, m.sig.ident);
    let cell_fields: Vec<&String> = order.iter().filter(|f| kinds[*f] == FieldKind::Cell).collect();
    let mut params = vec![];
    let mut args = vec![];
    let mut lets = vec![];
    let mut shadows = vec![];
    let mut epilogue = vec![];
    let mut owned_args = vec![];
    let mut wrappers = vec![];
    let cells = (!cell_fields.is_empty()).then(|| {
        let tys: Vec<&syn::Type> = cell_fields.iter().map(|f| &tys[*f]).collect();
        let (item, glue) = cells_struct(&cell_fields, &tys, &sname.to_string(), &m.sig.ident.to_string(), &cells_ty);
        params.extend(glue.params);
        args.extend(glue.args);
        lets.extend(glue.lets);
        shadows.extend(glue.shadows);
        epilogue.extend(glue.epilogue);
        item
    });
    for f in &order {
        let (id, t, c) = (format_ident!("{}", f), &tys[f], format_ident!("__self_{}", f));
        match kinds[f] {
            FieldKind::Cell => {}
            FieldKind::Frozen => {
                params.push(quote!(#c: &#t));
                lets.push(quote!(let #c = &self_.#id;));
                // The program: green, as `hint!(code[pc], concrete)` makes it.
                shadows.push(quote!(let #c = hint!(#c, concrete);));
                args.push(c);
            }
            FieldKind::SharedRef => {
                let (param, bind) = shared_param(&c, &id, t, shapes);
                params.push(param);
                lets.push(bind);
                shadows.push(quote!(let #c = hint!(#c, concrete);));
                args.push(c);
            }
            FieldKind::Mutated => {
                params.push(quote!(#c: &mut #t));
                lets.push(quote!(let #c = &mut self_.#id;));
                args.push(c);
            }
            FieldKind::Wrapped => {
                let copy = shapes.is_copy_enum(t);
                let (item, param, mut l, e) = wrap_field(f, t, copy, &sname.to_string(), &m.sig.ident.to_string());
                wrappers.push(item);
                params.push(param);
                lets.append(&mut l);
                epilogue.push(e);
                args.push(c);
            }
            FieldKind::Owned => {
                let home = format_ident!("__self_{}_home", f);
                params.push(quote!(mut #c: #t));
                params.push(quote!(#home: &mut #t));
                lets.push(quote!(#[allow(unused_mut)] let mut #c = ::core::mem::take(&mut self_.#id);));
                lets.push(quote!(let #home = &mut self_.#id;));
                owned_args.push(c.clone());
                args.push(c);
                args.push(home);
            }
        }
    }
    let stmts = &body.stmts;
    let body: syn::Block = if owned.is_empty() {
        syn::parse_quote!({ #(#shadows)* #(#stmts)* })
    } else {
        syn::parse_quote!({
            #(#shadows)*
            let __jit_r = { #(#stmts)* };
            #wb
            __jit_r
        })
    };
    Ok(Split {
        cells,
        wrappers,
        inlined: rw.inlined,
        owned: owned_args,
        params,
        prelude: quote!(#(#lets)*),
        epilogue: quote!(#(#epilogue)*),
        args,
        body,
    })
}

/// What the caller and the portal say for some of `self`'s fields.
#[derive(Default)]
struct Glue {
    params: Vec<TokenStream>,
    args: Vec<Ident>,
    lets: Vec<TokenStream>,
    shadows: Vec<TokenStream>,
    epilogue: Vec<TokenStream>,
}

/// The `#[virtualizable]` struct `cells_ty` of the scalar fields `fields`
/// (of types `tys`) of `sname` while `method` runs, and how they cross the
/// call: each comes in by value too, so that it can be green.
fn cells_struct(
    fields: &[&String],
    tys: &[&syn::Type],
    sname: &str,
    method: &str,
    cells_ty: &Ident,
) -> (syn::Item, Glue) {
    let fs: Vec<Ident> = fields.iter().map(|f| format_ident!("{}", f)).collect();
    let doc = format!("The scalar fields of `{sname}` while `{method}` runs (see `jitgen`'s split of `self`).");
    let mut g = Glue::default();
    g.params.push(quote!(__self_cells: &mut #cells_ty));
    g.args.push(format_ident!("__self_cells"));
    g.lets.push(quote!(let mut __self_cells_value = #cells_ty { #(#fs: self_.#fs),* };));
    g.lets.push(quote!(let __self_cells = &mut __self_cells_value;));
    for (f, t) in fs.iter().zip(tys) {
        let (c, c0) = (format_ident!("__self_{}", f), format_ident!("__self_{}_at_entry", f));
        g.params.push(quote!(#c0: #t));
        g.args.push(c0.clone());
        g.lets.push(quote!(let #c0 = self_.#f;));
        g.shadows.push(quote!(#[allow(unused_mut, unused_variables)] let mut #c = #c0;));
        g.epilogue.push(quote!(self_.#f = __self_cells_value.#f;));
    }
    let item = syn::parse_quote! {
        #[doc = #doc]
        #[doc(hidden)]
        #[virtualizable]
        #[allow(non_camel_case_types)]
        pub struct #cells_ty { #(pub #fs: #tys),* }
    };
    (item, g)
}

/// Whether `self.f[..]` is written in the method or another method of the
/// type (which it may inline): a `Vec` of scalars indexed, as an operand
/// stack whose frames address its slots is, is wrapped
/// ([`FieldKind::Wrapped`]); one only pushed and popped (an output, a
/// stack of temporaries) stays a local list, virtual in compiled code.
fn indexed(f: &str, m: &syn::ImplItemFn, methods: &BTreeMap<String, syn::ImplItemFn>) -> bool {
    fn scan(ts: TokenStream, f: &str) -> bool {
        let tts: Vec<proc_macro2::TokenTree> = ts.into_iter().collect();
        tts.windows(4).any(|w| {
            use proc_macro2::TokenTree as T;
            matches!((&w[0], &w[1], &w[2], &w[3]),
                (T::Ident(s), T::Punct(d), T::Ident(n), T::Group(g))
                    if s == "self" && d.as_char() == '.' && n == f && g.delimiter() == proc_macro2::Delimiter::Bracket)
        }) || tts.iter().any(|t| matches!(t, proc_macro2::TokenTree::Group(g) if scan(g.stream(), f)))
    }
    std::iter::once(m).chain(methods.values()).any(|m| scan(m.block.to_token_stream(), f))
}

/// A [`FieldKind::Wrapped`] field `f` of type `t`, of the struct `sname`
/// in its method `method`: the generated struct around it, the portal's
/// parameter, the caller's `let`s before the call and its move back after.
fn wrap_field(
    f: &str,
    t: &syn::Type,
    copy: bool,
    sname: &str,
    method: &str,
) -> (syn::Item, TokenStream, Vec<TokenStream>, TokenStream) {
    let (id, c) = (format_ident!("{}", f), format_ident!("__self_{}", f));
    let w = format_ident!("__{}_{}_{}", sname, method, f);
    let v = format_ident!("__self_{}_value", f);
    let doc = format!("The field `{f}` of `{sname}` while `{method}` runs (see `jitgen`'s split of `self`).");
    let item = syn::parse_quote! {
        #[doc = #doc]
        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        pub struct #w(pub #t);
    };
    // A `Copy` enum is copied in (it may have no `Default` to leave).
    let value = if copy { quote!(self_.#id) } else { quote!(::core::mem::take(&mut self_.#id)) };
    let lets = vec![quote!(let mut #v = #w(#value);), quote!(let #c = &mut #v;)];
    (item, quote!(#c: &mut #w), lets, quote!(self_.#id = #v.0;))
}

/// How the portal takes a field of type `t` (before it knows what the
/// method changes), or `None` for a value it cannot split.
fn field_kind(t: &syn::Type, shapes: &ModuleShapes) -> Option<FieldKind> {
    Some(match shapes.field_shape(t) {
        _ if matches!(t, syn::Type::Reference(r) if r.mutability.is_none()) => FieldKind::SharedRef,
        Some(true) => FieldKind::Cell,
        // A `Vec` of what the analysis does not model (tuples) is an
        // opaque object, which compiled code reaches by address only.
        Some(false) if shapes.is_local_list(t) || shapes.is_string(t) => FieldKind::Owned,
        Some(false) => FieldKind::Mutated,
        None => return None,
    })
}

/// How the portal takes the field `name` of type `t`; `None` for a field
/// it cannot take (which is fine while the method does not use it).
fn split_kind(
    t: &syn::Type,
    name: &str,
    m: &syn::ImplItemFn,
    methods: &BTreeMap<String, syn::ImplItemFn>,
    shapes: &ModuleShapes,
) -> Option<FieldKind> {
    Some(match field_kind(t, shapes) {
        Some(FieldKind::Owned) if shapes.is_scalar_vec(t) && indexed(name, m, methods) => FieldKind::Wrapped,
        Some(k) => k,
        // An enum value (`state: Option<Frame>`): moved out for the call
        // into a struct around it, passed by `&mut` as a struct is.
        None if shapes.is_takeable_enum(t) => FieldKind::Wrapped,
        None => return None,
    })
}

/// The parameter and binding of a field passed as a shared reference:
/// the reference itself, its lifetimes elided (the portal's own generics
/// need not name the struct's), or the slice a `Box<[T]>` (`Rc`, `Arc`)
/// holds.
fn shared_param(c: &Ident, id: &Ident, t: &syn::Type, shapes: &ModuleShapes) -> (TokenStream, TokenStream) {
    match shapes.boxed_slice_elem(t) {
        Some(e) => (quote!(#c: &[#e]), quote!(let #c: &[#e] = &self_.#id[..];)),
        None => {
            let t = elide_lifetimes(t);
            (quote!(#c: #t), quote!(let #c = self_.#id;))
        }
    }
}

/// The fields the method does not change, among those it would pass by
/// `&mut` or move: a `Vec`, array or struct is passed by `&` and green
/// ([`FieldKind::Frozen`]), a `Box<[T]>` as the slice it holds, as a
/// shared reference is ([`FieldKind::SharedRef`]).
fn freeze_unchanged(
    kinds: &mut BTreeMap<String, FieldKind>,
    mutated: &BTreeSet<String>,
    tys: &BTreeMap<String, syn::Type>,
    shapes: &ModuleShapes,
) {
    for (name, kind) in kinds.iter_mut() {
        if matches!(*kind, FieldKind::Mutated | FieldKind::Owned | FieldKind::Wrapped) && !mutated.contains(name) {
            if shapes.is_vec(&tys[name]) || shapes.is_array(&tys[name]) || shapes.is_module_struct(&tys[name]) {
                *kind = FieldKind::Frozen;
            } else if shapes.boxed_slice_elem(&tys[name]).is_some() {
                *kind = FieldKind::SharedRef;
            }
        }
    }
}

/// `t` with each lifetime written `'_`.
fn elide_lifetimes(t: &syn::Type) -> syn::Type {
    struct Elide;
    impl VisitMut for Elide {
        fn visit_lifetime_mut(&mut self, l: &mut syn::Lifetime) {
            *l = syn::Lifetime::new("'_", l.span());
        }
    }
    let mut t = t.clone();
    Elide.visit_type_mut(&mut t);
    t
}

/// `t` with every token's span set to `at`.
fn respan(t: TokenStream, at: proc_macro2::Span) -> TokenStream {
    t.into_iter()
        .map(|mut tt| {
            if let proc_macro2::TokenTree::Group(g) = &tt {
                let mut n = proc_macro2::Group::new(g.delimiter(), respan(g.stream(), at));
                n.set_span(at);
                tt = proc_macro2::TokenTree::Group(n);
            } else {
                tt.set_span(at);
            }
            tt
        })
        .collect()
}

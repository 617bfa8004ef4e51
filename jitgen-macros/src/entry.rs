//! A portal's entry into compiled code ([`Entry`]): how each variable live
//! at its merge point crosses from Rust into a compilation (its position key,
//! its content, the words residual code takes), and what the hook's
//! parameters are called.

use std::collections::HashSet;

use hint_annotator::flowgraph::Var;
use hint_annotator::types::Ty;
use hint_annotator::Color;
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use crate::content::{content_of, copy_of, has_deep_content, is_flat, is_owned_flat};
use crate::repr::*;
use crate::timeshift::Gen;

/// How the live variables of an entry point cross from Rust into a compilation.
pub(crate) struct Entry {
    /// Parameters of the hook / specialize function: (name, type).
    pub(crate) params: Vec<(Ident, TokenStream)>,
    /// Arguments at the hook's call site, in the interpreter.
    pub(crate) args: Vec<TokenStream>,
    /// Statements (inside the compile function) binding every frame field.
    pub(crate) frame_lets: Vec<TokenStream>,
    /// Statements pushing the residual input types onto `__t`.
    pub(crate) input_tys: Vec<TokenStream>,
    /// Statements pushing the input words (in the hook).
    pub(crate) input_words: Vec<TokenStream>,
    /// Expressions of the key words of the greens.
    pub(crate) key: Vec<TokenStream>,
    /// Expressions of the content bytes of green sequences.
    pub(crate) content: Vec<TokenStream>,
    /// Statements at the start of the compile function that decline
    /// positions the entry cannot start from (`return Err(why)`).
    pub(crate) checks: Vec<TokenStream>,
    /// Statements appending the content of deeper green data to `__out`
    /// (see `content`), run once per call of the portal.
    pub(crate) deep: Vec<TokenStream>,
    /// Statements of the hook rebinding green sequences of flat values to
    /// their canonical copies (`jitgen_runtime::portal::canonical`), with
    /// `__canon`, the call's `Seen`.
    pub(crate) canonical: Vec<TokenStream>,
    /// Where the address words of the green data `canonical` rebinds are
    /// in `cheap_greens_in_hook` (the entry filter takes them through
    /// `Sampler::canonical`).
    pub(crate) canonical_at: Vec<usize>,
    /// Green parameters passed to the compile function: (name, type with
    /// the lifetime `'a`, type with it elided).
    pub(crate) green_params: Vec<(Ident, TokenStream, TokenStream)>,
    /// Why this entry cannot compile, if it cannot.
    pub(crate) bad: Option<String>,
    /// Whether the interpreter has saved frames at this position (see
    /// `PortalSite::nested`), when it keeps them in a `Vec`.
    pub(crate) nested: Option<TokenStream>,
    /// The structs whose objects it loads into virtual ones (their
    /// descriptors must be generated).
    pub(crate) vstructs: Vec<String>,
    /// Statements of the hook computing the lengths of the lists the entry
    /// virtualizes (they are green parameters of the compile function).
    pub(crate) lens: Vec<TokenStream>,
    /// The greens that are cheap to read (scalars, addresses), as words:
    /// expressions at the portal's merge point, and in the hook. Their
    /// `green_word` keys the entry filter of the portal's `Sampler`.
    pub(crate) cheap_greens: Vec<TokenStream>,
    pub(crate) cheap_greens_in_hook: Vec<TokenStream>,
    /// The names of the green variables of the position, as the analysis
    /// has them (`pc`, `frame.ip`, `self`): where all are plain locals, a
    /// turn that only steps one forward skips the hook's test (`forward`).
    pub(crate) green_names: Vec<String>,
    /// Owned `mut` locals the hook takes by `&mut`: moved into a temporary
    /// of the same name with `__jit_moved_` before the call and back after,
    /// so that the interpreter's own local never has its address taken and
    /// stays in registers on the hot path (an escaped address kept a
    /// `Vec`'s length in a stack slot, stored at every push and pop).
    pub(crate) moved: Vec<(TokenStream, Ident)>,
    /// Owned `mut` locals of a struct that owns what the analysis does not
    /// model: moved into the arena for the call (`heap::Handed`), so that
    /// compiled code owns them and drops them where Rust would; taken back
    /// after it, where compiled code did not drop them.
    pub(crate) handed: Vec<(TokenStream, Ident)>,
}

/// `portal`: the entry of a portal hook, which virtualizes the lists it is
/// given (their length is part of the position key, see `jitgen_runtime::vlist`).
pub(crate) fn entry(gen: &Gen, fi: usize, vars: &[Var], mutable: &HashSet<String>, portal: bool) -> Entry {
    let rt = rt();
    let f = gen.fns[fi];
    // The lengths of the portal's lists of scalars, and of its lists of
    // enums with their top elements' variants (see the end).
    let (mut scalar_lens, mut enum_lens) = (vec![], vec![]);
    let mut e = Entry {
        params: vec![],
        args: vec![],
        frame_lets: vec![],
        input_tys: vec![],
        input_words: vec![],
        key: vec![],
        content: vec![],
        deep: vec![],
        canonical: vec![],
        checks: vec![],
        green_params: vec![],
        bad: None,
        nested: None,
        vstructs: vec![],
        lens: vec![],
        cheap_greens: vec![],
        cheap_greens_in_hook: vec![],
        canonical_at: vec![],
        green_names: vec![],
        moved: vec![],
        handed: vec![],
    };
    for v in vars {
        let info = f.graph.var(*v);
        let Some(name) = info.name.clone() else {
            e.bad = Some(format!("an unnamed value `{}` is live here", f.graph.var_name(*v)));
            continue;
        };
        let (n, src) = live_name(&name);
        let fid = format_ident!("v{}", v.0);
        let ty = info.ty.clone();
        let green = f.color(*v) == Color::Green;
        let r = gen.repr(fi, *v);
        let is_mut = mutable.contains(base_name(&name));
        let pty_of = |t: &Ty| rust_ty(t, None);
        match &r {
            Repr::Unit => {}
            Repr::Bad(why) => e.bad = Some(why.clone()),
            Repr::G(sc) => {
                let t = sc_rust(*sc);
                let src = quote!(<_ as #rt::portal::ByValue<#t>>::by_value(#src));
                e.params.push((n.clone(), t.clone()));
                e.args.push(src.clone());
                e.green_params.push((n.clone(), t.clone(), t));
                e.green_names.push(name.clone());
                e.frame_lets.push(quote!(let #fid = #n;));
                let w = to_word(*sc, quote!(#n));
                e.cheap_greens_in_hook.push(w.clone());
                e.cheap_greens.push(to_word(*sc, src));
                e.key.push(w);
            }
            Repr::GRef(target) | Repr::GSlice(target) => {
                green_reference(&mut e, &n, &src, &fid, &ty, &r, target);
                canonical(&mut e, &n, &ty, &r, gen.cg.types());
            }
            Repr::Enum(t, nslots) if green => {
                let tt = pty_of(t);
                let (flat, _, tys) = enum_helpers(t);
                e.params.push((n.clone(), quote!(&#tt)));
                e.args.push(quote!(&#src));
                e.green_params.push((n.clone(), quote!(&'a #tt), quote!(&#tt)));
                e.green_names.push(name.clone());
                e.frame_lets.push(quote!(
                    let #fid: [#rt::RedBox; #nslots] = {
                        let __w = #flat(#n);
                        let __t = #tys();
                        #rt::RedBox::constants(&__t, &__w)
                    };
                ));
                let nw = *nslots;
                for i in 0..nw {
                    e.key.push(quote!(#flat(#n)[#i]));
                }
            }
            Repr::R(sc) => {
                let t = sc_rust(*sc);
                e.args.push(quote!(<_ as #rt::portal::ByValue<#t>>::by_value(#src)));
                e.params.push((n.clone(), t));
                let vt = sc_valty(*sc);
                e.input_tys.push(quote!(__t.push(#vt);));
                let w = to_word(*sc, quote!(#n));
                e.input_words.push(quote!(__words.push(#w);));
                e.frame_lets.push(quote!(let #fid = __in.next().expect("an input");));
            }
            Repr::Enum(t, nslots) => {
                let tt = pty_of(t);
                let (flat, _, tys) = enum_helpers(t);
                e.params.push((n.clone(), quote!(&#tt)));
                e.args.push(quote!(&#src));
                e.input_tys.push(quote!(__t.extend_from_slice(&#tys());));
                e.input_words.push(quote!(__words.extend_from_slice(&#flat(#n));));
                e.frame_lets.push(quote!(let #fid: [#rt::RedBox; #nslots] = #rt::redbox::next_n(&mut __in);));
            }
            Repr::VOpt => e.bad = Some(format!("an `Option` of a struct (`{ty}`) is live here")),
            Repr::RPtr | Repr::VList(_) | Repr::VEList(..) | Repr::VPtr | Repr::VDict(..) | Repr::VOList(_) => {
                let live =
                    Live { n: n.clone(), src: src.clone(), fid: fid.clone(), ty: ty.clone(), r: r.clone(), is_mut };
                red_object(gen, &mut e, &live, portal, &mut scalar_lens, &mut enum_lens);
            }
            Repr::RSlice => {
                let Ty::Ref { mutable, to } = &ty else {
                    if matches!(ty, Ty::Boxed(_)) {
                        e.bad = Some(format!("a `{ty}` is live here (an owned slice, not a reference to one)"));
                    }
                    continue;
                };
                let (pty, arg) = match &**to {
                    Ty::Text => (quote!(&str), quote!(&*#src)),
                    Ty::Slice(et) => {
                        let t = pty_of(et);
                        if *mutable {
                            (quote!(&mut [#t]), quote!(&mut *#src))
                        } else {
                            (quote!(&[#t]), quote!(&*#src))
                        }
                    }
                    _ => continue,
                };
                e.params.push((n.clone(), pty));
                e.args.push(arg);
                let (pt, ut) = (ptr_valty(), u64_valty());
                e.input_tys.push(quote!(__t.push(#pt); __t.push(#ut);));
                e.input_words.push(quote!(__words.push(#n.as_ptr() as usize as u64); __words.push(#n.len() as u64);));
                e.frame_lets.push(quote!(let #fid = [__in.next().expect("an input"), __in.next().expect("an input")];));
            }
        }
    }
    // A list too long to be virtual is keyed as one length: code entered
    // there takes it from memory whatever its length, so a stack that grows
    // from turn to turn (a loop leaving a value each time) finds its code.
    //
    // With saved frames, the portal's lists of scalars hold the callers'
    // values too: an operand stack every call of the interpreted program
    // shares (each call's part above its frame's base, or its arguments
    // popped into the frame's own locals). So code entered there takes them
    // from memory, with no length in its key: one entry serves every depth
    // (it would compile once per depth, and its flexswitches' cases too).
    // Lists of enums keep their length and types in the key while short
    // (`NESTED_KEYED_LEN`): an interpreter whose frames take the caller's
    // stack along (TLC) enters a callee's loop with the callee's own few
    // values, their types known.
    let nested = e.nested.clone().unwrap_or_else(|| quote!(false));
    for len in scalar_lens {
        e.lens.push(quote! {
            let #len: usize = if #nested || #len > #rt::vlist::MAX_VIRTUAL_LEN { usize::MAX } else { #len };
        });
    }
    if let Some(nested) = &e.nested {
        for (len, tags) in enum_lens {
            e.lens.push(quote! {
                let (#len, #tags): (usize, u64) =
                    if #nested && #len > #rt::vlist::NESTED_KEYED_LEN { (usize::MAX, 0) } else { (#len, #tags) };
            });
        }
    }
    e
}

/// The entry's part for a live reference known while compiling (`code:
/// &[u8]`, `program: &str`, a `Vec` only read): a green parameter, the
/// key's address, and the content checked on reuse.
fn green_reference(e: &mut Entry, n: &Ident, src: &TokenStream, fid: &Ident, ty: &Ty, r: &Repr, target: &Ty) {
    let rt = rt();
    let pty_of = |t: &Ty| rust_ty(t, None);
    let referent = match (&r, &ty) {
        (Repr::GSlice(_), _) => {
            let t = pty_of(target);
            quote!([#t])
        }
        (_, Ty::Ref { to, .. }) => pty_of(to),
        _ => pty_of(&ty),
    };
    // Text known while compiling is taken as `&str` and held as
    // its bytes.
    let text = matches!(&ty, Ty::Ref { to, .. } if **to == Ty::Text);
    let referent = if text { quote!(str) } else { referent };
    let arg = if matches!(ty, Ty::Ref { .. }) { quote!(&*#src) } else { quote!(&#src) };
    e.params.push((n.clone(), quote!(&#referent)));
    // The entry filter's word: a `Vec`'s buffer, not where the
    // `Vec` itself sits (a fresh program in a machine at the same
    // place would pass the filter at every visit of a position
    // compiled for the old one).
    let is_vec = matches!(&ty, Ty::Vec(_)) || matches!(&ty, Ty::Ref { to, .. } if matches!(&**to, Ty::Vec(_)));
    if is_vec {
        e.cheap_greens.push(quote!((#arg).as_ptr() as *const u8 as usize as u64));
        e.cheap_greens_in_hook.push(quote!(#n.as_ptr() as *const u8 as usize as u64));
    } else {
        e.cheap_greens.push(quote!((#arg) as *const _ as *const u8 as usize as u64));
        e.cheap_greens_in_hook.push(quote!(#n as *const _ as *const u8 as usize as u64));
    }
    e.args.push(arg);
    e.green_params.push((n.clone(), quote!(&'a #referent), quote!(&#referent)));
    e.green_names.push(src.to_string());
    e.frame_lets.push(if text { quote!(let #fid = #n.as_bytes();) } else { quote!(let #fid = #n;) });
    e.key.push(quote!(#n as *const _ as *const u8 as usize as u64));
    // The content of green sequences of plain values, checked on reuse.
    let elem = match &ty {
        Ty::Ref { to, .. } => match &**to {
            Ty::Slice(t) | Ty::Vec(t) => Some((**t).clone()),
            // Text, held as its bytes.
            Ty::Text => Some(Ty::Int(hint_annotator::types::IntTy::U8)),
            _ => None,
        },
        Ty::Vec(t) => Some((**t).clone()),
        _ => None,
    };
    if text {
        e.key.push(quote!(#n.len() as u64));
        e.content.push(quote!(#n.as_bytes()));
    } else if elem.as_ref().is_some_and(|t| scalar(t).is_some()) {
        e.key.push(quote!(#n.len() as u64));
        e.content.push(quote!(#rt::driver::content_bytes(&#n[..])));
    } else {
        // Deeper data (a program with its class table): its
        // bytes, taken once per call of the portal.
        let referent_ty = match &ty {
            Ty::Ref { to, .. } => (**to).clone(),
            other => (*other).clone(),
        };
        if has_deep_content(&referent_ty) {
            e.deep.push(content_of(&referent_ty, quote!(#n)));
        }
    }
}

/// Where a green reference is a sequence of flat values (`&[Instr]`,
/// `&Vec<u8>`, `&str`), or data that owns only such values (a `&Program`
/// of `Vec`s and `String`s), the hook's statement rebinding it to its
/// canonical copy (see `jitgen_runtime::portal::canonical`): code is then
/// cached by the copy's address, found again for a new buffer of the same
/// program.
fn canonical(e: &mut Entry, n: &Ident, ty: &Ty, r: &Repr, types: &hint_annotator::ModuleTypes) {
    let rt = rt();
    let canon = quote!(#rt::portal::canonical);
    let referent = match (r, ty) {
        (_, Ty::Ref { to, .. }) if **to == Ty::Text => {
            e.canonical.push(quote!(let #n: &str = #canon::text(#n, __canon);));
            filter_word_aliased(e);
            return;
        }
        (Repr::GSlice(_), Ty::Ref { to, .. }) | (Repr::GRef(_), Ty::Ref { to, .. }) => (**to).clone(),
        (Repr::GRef(_), Ty::Vec(_)) => ty.clone(),
        _ => return,
    };
    // The content closures' and copies' parameter is `__e`; no addresses.
    let content = |t: &Ty| {
        let each = content_of(t, quote!(__e));
        let rt_t = rust_ty(t, None);
        quote!(|__e: &#rt_t, __out: &mut ::std::vec::Vec<u8>| { let __addrs = false; #each })
    };
    let stmt = match &referent {
        // Integers are compared with their copy at each visit, in place.
        Ty::Slice(t) if matches!(**t, Ty::Int(_) | Ty::Bool | Ty::Char | Ty::F32 | Ty::F64) => {
            let et = rust_ty(t, None);
            quote!(let #n: &[#et] = #canon::scalars(#n, __canon);)
        }
        Ty::Slice(t) if is_flat(t, types) => {
            let (et, each) = (rust_ty(t, None), content(t));
            // SAFETY: `is_flat`: a bitwise copy owns nothing, and the
            // content is all of an element's.
            quote!(let #n: &[#et] = unsafe { #canon::slice(#n, __canon, #each) };)
        }
        Ty::Vec(t) if is_flat(t, types) => {
            let (et, each) = (rust_ty(t, None), content(t));
            // SAFETY: as for a slice.
            quote!(let #n: &::std::vec::Vec<#et> = unsafe { #canon::vec(#n, __canon, #each) };)
        }
        Ty::Slice(t) if is_owned_flat(t, types) => {
            let (et, each, copy) = (rust_ty(t, None), content(t), copy_of(t, quote!(__e)));
            quote!(let #n: &[#et] = #canon::deep_slice(#n, __canon, #each, |__e: &#et| -> #et { #copy });)
        }
        t if !matches!(t, Ty::Slice(_)) && is_owned_flat(t, types) => {
            let (tt, each, copy) = (rust_ty(t, None), content(t), copy_of(t, quote!(__e)));
            quote!(let #n: &#tt = #canon::deep(#n, __canon, #each, |__e: &#tt| -> #tt { #copy });)
        }
        _ => return,
    };
    e.canonical.push(stmt);
    filter_word_aliased(e);
}

/// The entry filter's word of the green reference `green_reference` just
/// added, which `canonical` rebinds: the loop takes it through the
/// aliases the hook records (`LoopSampler::canonical`), so that a program
/// in a new buffer passes the filter where its copy's code starts.
fn filter_word_aliased(e: &mut Entry) {
    let (Some(at), Some(in_loop)) = (e.cheap_greens_in_hook.len().checked_sub(1), e.cheap_greens.last_mut()) else {
        return;
    };
    e.canonical_at.push(at);
    *in_loop = quote!(__jit_sampler.canonical(#in_loop));
}

/// Code making the `VList` of a `Vec` at `__p` whose length is `len` (a
/// compile-time value): its elements loaded into registers, or real when long.
pub(crate) fn load_list(sc: Sc, len: &Ident) -> TokenStream {
    let rt = rt();
    let (t, vt) = (sc_rust(sc), sc_valty(sc));
    quote! {
        if #len <= #rt::vlist::MAX_VIRTUAL_LEN {
            let mut __items = ::std::vec::Vec::new();
            // Where the layout is known, the elements are read in place:
            // one bounds check, then a load each.
            let __buf = match #rt::heap::vec_layout::<#t>() {
                Some(__l) if #len > 0 => {
                    let __n = __c.b.red_load(#rt::ValTy::U64, &__p, __l.1);
                    __c.b.red_bounds_check(&#rt::RedBox::u64(#len as u64 - 1), &__n);
                    Some(__c.b.red_load(#rt::ValTy::Ptr, &__p, __l.0))
                }
                _ => None,
            };
            for __i in 0..#len {
                __items.push(match &__buf {
                    Some(__buf) => {
                        let __at = __c.b.red_offset(__buf, (__i * ::core::mem::size_of::<#t>()) as u64);
                        __c.b.red_load(#vt, &__at, 0)
                    }
                    None => {
                        let __i = #rt::RedBox::u64(__i as u64);
                        __c.b.red_call(#rt::heap::vec_get::<#t>, "vec_get", &[__p, __i], &[#vt])[0]
                    }
                });
            }
            #rt::VList::Virtual(__items)
        } else {
            #rt::VList::Real(__p)
        }
    }
}

/// The struct a `&mut` to a `#[virtualizable]` struct designates.
pub(crate) fn virtualizable<'g>(ty: &Ty, gen: &Gen<'g>) -> Option<&'g hint_annotator::module::StructDef> {
    match ty {
        // A portal's `&mut` to a struct of the module is its frame: marked
        // `#[virtualizable]` or not, its fields live in registers.
        Ty::Ref { mutable: true, to } => match &**to {
            Ty::Struct(s) => gen.cg.types().structs.get(s),
            _ => None,
        },
        // A struct the portal owns (a local, `let mut stack = Stack(..)`):
        // its fields live in registers too, with no marker needed.
        Ty::Struct(s) => gen.cg.types().structs.get(s),
        _ => None,
    }
}

/// The parameter a live variable of a portal becomes in its hook, and the
/// place it is read from (and written back to) in the portal: `x` and `x`,
/// `self` and `__self`, a tuple's component `t.0` and `t__0`.
pub(crate) fn live_name(name: &str) -> (Ident, TokenStream) {
    if name == "self" {
        return (format_ident!("__self"), quote!(self));
    }
    // `check::portals` refused every other name (`&r`, a reference's parts).
    let clean: String =
        name.chars().map(|c| if c.is_alphanumeric() || c == '_' || c == '.' { c } else { '_' }).collect();
    let mut parts = clean.split('.');
    let base = format_ident!("{}", parts.next().unwrap_or("_"));
    let path: Vec<syn::Index> = parts.filter_map(|p| p.parse::<usize>().ok()).map(syn::Index::from).collect();
    (format_ident!("{}", clean.replace('.', "__")), quote!(#base #(.#path)*))
}

/// Whether the portal passes the owned local at `src` by reference rather
/// than moving it (see [`Entry::moved`]): `self`, and a tuple's component
/// (moving it out would leave the tuple partly moved).
fn portal_moves_by_ref(src: &TokenStream) -> bool {
    let s = src.to_string();
    s == "self" || s.contains('.')
}

/// The local a live variable belongs to: `t` for the component `t.0`.
pub(crate) fn base_name(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

/// A live variable of an entry: the hook's parameter `n` (its source in
/// the interpreter `src`), the frame's field `fid`, its type and representation.
struct Live {
    n: Ident,
    src: TokenStream,
    fid: Ident,
    ty: Ty,
    r: Repr,
    is_mut: bool,
}

/// How a red object live at the entry crosses (a reference, a box, a list,
/// a dict, a struct): by its address, its lists virtualized at a portal
/// (their lengths go to `scalar_lens` and `enum_lens`, see `entry`).
fn red_object(
    gen: &Gen,
    e: &mut Entry,
    live: &Live,
    portal: bool,
    scalar_lens: &mut Vec<Ident>,
    enum_lens: &mut Vec<(Ident, Ident)>,
) {
    let rt = rt();
    let Live { n, src, fid, ty, r, is_mut } = live;
    let is_mut = *is_mut;
    let pty_of = |t: &Ty| rust_ty(t, None);
    let (pty, arg, addr) = match &ty {
        Ty::Ref { mutable: true, to } => {
            let t = pty_of(to);
            (quote!(&mut #t), quote!(&mut *#src), quote!(#n as *mut #t as usize as u64))
        }
        Ty::Ref { to, .. } => {
            let t = pty_of(to);
            (quote!(&#t), quote!(&*#src), quote!(#n as *const #t as usize as u64))
        }
        Ty::Boxed(inner) => {
            let t = pty_of(inner);
            if is_mut {
                (quote!(&mut ::std::boxed::Box<#t>), quote!(&mut #src), quote!(&mut **#n as *mut #t as usize as u64))
            } else {
                (quote!(&::std::boxed::Box<#t>), quote!(&#src), quote!(&**#n as *const #t as usize as u64))
            }
        }
        other => {
            let t = pty_of(other);
            let owning = matches!(other, Ty::Struct(_)) && virtual_struct(other, gen.cg.types()).is_none();
            if is_mut && owning && portal && !portal_moves_by_ref(src) {
                let tmp = format_ident!("__jit_handed_{}", n);
                e.handed.push((src.clone(), tmp.clone()));
                (quote!(&mut #t), quote!(#tmp.get()), quote!(#n as *mut #t as usize as u64))
            } else if is_mut && !portal_moves_by_ref(src) {
                let tmp = format_ident!("__jit_moved_{}", n);
                e.moved.push((src.clone(), tmp.clone()));
                (quote!(&mut #t), quote!(&mut #tmp), quote!(#n as *mut #t as usize as u64))
            } else if is_mut {
                (quote!(&mut #t), quote!(&mut #src), quote!(#n as *mut #t as usize as u64))
            } else {
                (quote!(&#t), quote!(&#src), quote!(#n as *const #t as usize as u64))
            }
        }
    };
    e.params.push((n.clone(), pty));
    e.args.push(arg);
    let pt = ptr_valty();
    e.input_tys.push(quote!(__t.push(#pt);));
    e.input_words.push(quote!(__words.push(#addr);));
    if let (Repr::VList(sc), true) = (&r, portal) {
        // A virtualizable list: its elements are loaded once at
        // entry and live in registers from then on.
        let len = format_ident!("__len_{}", n);
        e.lens.push(quote!(let #len: usize = #n.len();));
        e.key.push(quote!(#len as u64));
        e.green_params.push((len.clone(), quote!(usize), quote!(usize)));
        scalar_lens.push(len.clone());
        let load = load_list(*sc, &len);
        e.frame_lets.push(quote! {
            let #fid = {
                let __p = __in.next().expect("an input");
                #load
            };
        });
    } else if let (Repr::VPtr, true, Some(d)) = (&r, portal, virtualizable(&ty, gen)) {
        // A virtualizable object (the interpreter's frame): its
        // fields are loaded once at entry into a virtual object
        // backed by the real one (see `jitgen_runtime::virtuals`).
        let Some(s) = virtual_struct(&ty, gen.cg.types()) else { return };
        e.vstructs.push(s.clone());
        let (sn, desc) = (format_ident!("{}", s), format_ident!("__VDESC_{}", s));
        let mut loads = vec![];
        for (fname, ft) in &d.fields {
            let fid_ = member(fname);
            let off = quote!(::core::mem::offset_of!(#sn, #fid_));
            if let Some(LElem::Enum(..)) = list_field(ft, gen.cg.types()) {
                // A list of enums stays in the object: the virtual
                // object names it (moved back onto itself when
                // written back).
                loads.push(quote!(__lists.push(#rt::VList::Real(__c.b.red_offset(&__obj, #off as u64)));));
            } else if let Some(LElem::Sc(sc)) = list_field(ft, gen.cg.types()) {
                let len = format_ident!("__len_{}_{}", n, fname);
                e.lens.push(quote!(let #len: usize = #n.#fid_.len();));
                e.key.push(quote!(#len as u64));
                e.green_params.push((len.clone(), quote!(usize), quote!(usize)));
                scalar_lens.push(len.clone());
                let load = load_list(sc, &len);
                loads.push(quote!({
                    let __p = __c.b.red_offset(&__obj, #off as u64);
                    __lists.push(#load);
                }));
            } else if let Some(sc) = scalar(ft) {
                let vt = sc_valty(sc);
                loads.push(quote!(__fields.push(__c.b.red_load(#vt, &__obj, #off as i32));));
            }
        }
        e.frame_lets.push(quote! {
            let #fid = {
                let __obj = __in.next().expect("an input");
                let mut __fields = ::std::vec::Vec::new();
                let mut __lists = ::std::vec::Vec::new();
                #(#loads)*
                __heap.alloc_backed(&#desc, __fields, __lists, __obj)
            };
        });
    } else if matches!(r, Repr::VDict(..)) {
        e.frame_lets.push(quote!(let #fid = #rt::VDict::Real(__in.next().expect("an input"));));
    } else if matches!(r, Repr::VPtr) {
        e.frame_lets.push(quote!(let #fid = #rt::VPtr::Real(__in.next().expect("an input"));));
    } else if let (Repr::VEList(ety, w), true) = (&r, portal) {
        virtual_enum_list(gen, e, n, fid, ety, *w, enum_lens);
    } else if let (Repr::VOList(_), true) = (&r, portal) {
        // A portal's saved frames: virtual when there are none
        // (whether there are is in the key); else its `Vec` with
        // the frames of calls compiled code makes pushed over it,
        // virtual (see `VPList::Over`), whatever its length.
        let len = format_ident!("__len_{}", n);
        e.lens.push(quote!(let #len: usize = #n.len();));
        e.green_params.push((len.clone(), quote!(usize), quote!(usize)));
        e.key.push(quote!((#len != 0) as u64));
        e.nested = Some(quote!(#len != 0));
        let shown = src.to_string().replace(' ', "");
        let shown = shown.strip_prefix("__self_").map_or(shown.clone(), |f| format!("self.{f}"));
        let why = format!(
                "a language-level recursion was seen whose saved frames (`{shown}`) cannot be spilled: compiled code starts only where `{shown}` is empty"
            );
        e.checks.push(quote!(if #len != 0 && super::jit::__STATS.recursion_seen() { return Err(#why.to_string()); }));
        e.frame_lets.push(quote! {
            let #fid = {
                let __a = __in.next().expect("an input");
                if #len == 0 {
                    #rt::VPList::Virtual(::std::vec::Vec::new())
                } else {
                    #rt::VPList::Over(__a, ::std::vec::Vec::new())
                }
            };
        });
    } else if matches!(r, Repr::VOList(_)) {
        e.frame_lets.push(quote!(let #fid = #rt::VPList::Real(__in.next().expect("an input"));));
    } else if matches!(r, Repr::VList(_) | Repr::VEList(..)) {
        e.frame_lets.push(quote!(let #fid = #rt::VList::Real(__in.next().expect("an input"));));
    } else {
        e.frame_lets.push(quote!(let #fid = __in.next().expect("an input");));
    }
}

/// A list of enums a portal is given: virtual, its elements loaded at
/// entry; its length and its top elements' variants (`enum_lens`) are
/// green parameters of the compile function (see `entry`).
fn virtual_enum_list(
    gen: &Gen,
    e: &mut Entry,
    n: &Ident,
    fid: &Ident,
    ety: &Ty,
    w: usize,
    enum_lens: &mut Vec<(Ident, Ident)>,
) {
    let rt = rt();
    // A list of enums: elements read (flattened) once at entry.
    // The variants of the top `TAGGED_TOP` elements are part
    // of the key (4 bits each, 15: not known), so that the
    // code compiled for them knows them: a dynamic language's
    // operand stack enters the loop with its types known.
    let len = format_ident!("__len_{}", n);
    let tags = format_ident!("__tags_{}", n);
    let (flat, _, tys) = enum_helpers(ety);
    let top = TAGGED_TOP;
    e.lens.push(quote! {
        let #len: usize = #n.len();
        let #tags: u64 = {
            let mut __w = 0u64;
            for __i in 0..#len.min(#top) {
                let __t = #flat(&#n[#len - 1 - __i])[0];
                __w |= __t.min(15) << (4 * __i);
            }
            __w
        };
    });
    // Too long to be virtual: one key for every length (see `entry`).
    e.lens.push(quote! {
        let (#len, #tags): (usize, u64) =
            if #len > #rt::vlist::MAX_VIRTUAL_LEN { (usize::MAX, 0) } else { (#len, #tags) };
    });
    e.key.push(quote!(#len as u64));
    e.key.push(quote!(#tags));
    e.green_params.push((len.clone(), quote!(usize), quote!(usize)));
    e.green_params.push((tags.clone(), quote!(u64), quote!(u64)));
    enum_lens.push((len.clone(), tags.clone()));
    let ranges: Vec<TokenStream> = variant_ranges(ety, gen.cg.types()).iter().map(|(a, b)| quote!((#a, #b))).collect();
    let marker = flat_marker(ety);
    let et = rust_ty(ety, None);
    let get = quote!(#rt::heap::flat_vec_get::<#marker>);
    e.frame_lets.push(quote! {
        let #fid = {
            let __p = __in.next().expect("an input");
            if #len <= #rt::vlist::MAX_VIRTUAL_LEN {
                let __ranges: &[(usize, usize)] = &[#(#ranges),*];
                let __tys = #tys();
                let mut __items = ::std::vec::Vec::new();
                // Where the layouts are known, the elements
                // are read in place: one bounds check, then
                // loads of the words in use (a call per
                // element made the entry most of the code
                // Cranelift compiled for a TLC loop).
                let __in_place = match (
                    <#marker as #rt::heap::Flat>::layout(),
                    #rt::heap::vec_layout::<#et>(),
                ) {
                    (Some(__el), Some(__vl)) if #len > 0 && __el.slots.len() + 1 >= #w => {
                        let __n = __c.b.red_load(#rt::ValTy::U64, &__p, __vl.1);
                        __c.b.red_bounds_check(&#rt::RedBox::u64(#len as u64 - 1), &__n);
                        let __buf = __c.b.red_load(#rt::ValTy::Ptr, &__p, __vl.0);
                        Some((__el, __buf))
                    }
                    _ => None,
                };
                for __i in 0..#len {
                    let __depth = #len - 1 - __i;
                    let __t = if __depth < #top { ((#tags >> (4 * __depth)) & 15) as usize } else { 15 };
                    // The variant, if known: then its tag is a
                    // constant, other variants' slots are 0.
                    let __known = __ranges.get(__t).copied();
                    let __other = |__s: usize| matches!(__known, Some((__a, __b)) if __s < __a || __s >= __b);
                    let __e: ::std::vec::Vec<#rt::RedBox> = match &__in_place {
                        Some((__el, __buf)) => {
                            let __at = __c.b.red_offset(__buf, __i as u64 * __el.size);
                            let mut __e = ::std::vec::Vec::with_capacity(#w);
                            __e.push(match __known {
                                Some(_) => #rt::RedBox::constant(__tys[0], __t as u64),
                                None => {
                                    let __tag = __c.b.red_load(__el.tag.1, &__at, __el.tag.0);
                                    __c.b.red_cast(&__tag, __tys[0])
                                }
                            });
                            for __s in 1..#w {
                                let (__off, __ty) = __el.slots[__s - 1];
                                __e.push(if __other(__s) {
                                    #rt::RedBox::constant(__tys[__s], 0)
                                } else {
                                    __c.b.red_load(__ty, &__at, __off)
                                });
                            }
                            __e
                        }
                        None => {
                            let __e = __c.b.red_call(#get, "vec_get", &[__p, #rt::RedBox::u64(__i as u64)], &__tys);
                            let mut __e: ::std::vec::Vec<#rt::RedBox> = __e[..#w].to_vec();
                            if __known.is_some() {
                                __e[0] = #rt::RedBox::constant(__tys[0], __t as u64);
                            }
                            for __s in 1..#w {
                                if __other(__s) {
                                    __e[__s] = #rt::RedBox::constant(__tys[__s], 0);
                                }
                            }
                            __e
                        }
                    };
                    __items.extend_from_slice(&__e);
                }
                #rt::VList::Virtual(__items)
            } else {
                #rt::VList::Real(__p)
            }
        };
    });
}

//! What the macro adds to the module: the generating extension (`__jit`), the
//! portal hooks, and the `jit` module of the contract (`plain`, `specialize`,
//! `graphs`, `stats`, `config`).

use std::collections::BTreeMap;
use std::collections::{HashMap, HashSet};

use hint_annotator::types::Ty;
use hint_annotator::{Color, ColoredGraphs};
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};
use syn::visit_mut::VisitMut;

use crate::entry::{entry, Entry};
use crate::park::*;
use crate::repr::*;
use crate::timeshift::Gen;

/// Input types as one expression.
fn input_tys_expr(tys: &[TokenStream]) -> TokenStream {
    let rt = rt();
    quote!({ let mut __t: ::std::vec::Vec<#rt::ValTy> = ::std::vec::Vec::new(); #(#tys)* __t })
}

/// Output types, and the decoding of output words into the Rust result.
fn outputs(gen: &Gen, ret: &Ty) -> Option<(TokenStream, TokenStream)> {
    let types = gen.cg.types();
    if *ret == Ty::Unit {
        return Some((quote!(::std::vec::Vec::new()), quote!(())));
    }
    if let Some(sc) = scalar(ret) {
        let vt = sc_valty(sc);
        let back = from_word(sc, quote!(__w[0]));
        return Some((quote!(vec![#vt]), back));
    }
    if is_enum(ret) && rebuildable(ret, types) {
        let (_, unflat, tys) = enum_helpers(ret);
        return Some((quote!(#tys().to_vec()), quote!(#unflat(&__w))));
    }
    if crate::timeshift::returned_by_address(ret, gen) {
        // The address of a real `Vec`, `String` or struct, made by residual
        // code (in the arena) or moved in: taken over by the caller.
        let (rt, pt, t) = (rt(), ptr_valty(), rust_ty(ret, None));
        let take = match ret {
            Ty::Str => quote!(#rt::heap::take_string(__w[0])),
            Ty::Struct(_) => crate::timeshift::take_struct(ret, quote!(__w[0]), types),
            _ => quote!({
                let __v: #t = #rt::heap::take_vec(__w[0]);
                __v
            }),
        };
        return Some((quote!(vec![#pt]), quote!(unsafe { #take })));
    }
    None
}

/// Why an entry point can never be compiled: a value it cannot keep, or
/// else its result (asked only of entry points that cannot be compiled).
fn never_compiled(label: &str, e: &Entry, ret: &Ty) -> String {
    let unsupported = || format!("returning a value of type `{ret}` from residual code is not supported yet");
    format!("{label}: {}", e.bad.clone().unwrap_or_else(unsupported))
}

/// The compile function for an entry point.
fn compile_fn(gen: &Gen, name: &Ident, label: &str, point: usize, e: &Entry, ret: &Ty) -> TokenStream {
    let rt = rt();
    let gp: Vec<TokenStream> = e.green_params.iter().map(|(n, t, _)| quote!(#n: #t)).collect();
    if e.bad.is_some() {
        let msg = never_compiled(label, e, ret);
        return quote! {
            #[allow(unused_variables)]
            pub(super) fn #name<'a>(#(#gp,)* __words: ::core::option::Option<&[u64]>) -> ::core::result::Result<#rt::residual::ResidualFunction, ::std::string::String> {
                Err(#msg.to_string())
            }
        };
    }
    let Some((out_tys, _)) = outputs(gen, ret) else {
        let msg = never_compiled(label, e, ret);
        return quote! {
            #[allow(unused_variables)]
            pub(super) fn #name<'a>(#(#gp,)* __words: ::core::option::Option<&[u64]>) -> ::core::result::Result<#rt::residual::ResidualFunction, ::std::string::String> {
                Err(#msg.to_string())
            }
        };
    };
    let in_tys = input_tys_expr(&e.input_tys);
    let lets = &e.frame_lets;
    let checks = &e.checks;
    let pt = &gen.points[point];
    let fields = pt.live.iter().map(|v| format_ident!("v{}", v.0));
    gen.framed.borrow_mut().insert(point);
    let pack = crate::frame::pack_name(gen.point_layout(point));
    let pid = point as u32;
    quote! {
        /// Compiles the entry; `__words` (the inputs residual code would
        /// get now) lets it promote loop-invariant divisors at entry.
        #[allow(unused_variables, unused_mut, clippy::all)]
        pub(super) fn #name<'a>(#(#gp,)* __words: ::core::option::Option<&[u64]>) -> ::core::result::Result<#rt::residual::ResidualFunction, ::std::string::String> {
            #(#checks)*
            let __body = || -> ::core::result::Result<#rt::residual::ResidualFunction, ::std::string::String> {
                let __inputs = #in_tys;
                let __outputs: ::std::vec::Vec<#rt::ValTy> = #out_tys;
                let __new = || {
                    let mut __c: #rt::Compilation<__Frame<'a>> =
                        #rt::Compilation::new(#label, &__inputs, &__outputs, super::jit::__CONFIG.limits());
                    __c.set_defer(Some(&super::jit::__STATS), __defer);
                    // A portal's code continues in the interpreter proper
                    // from its merge point; `specialize`'s, to its return.
                    __c.set_declines_ahead(__declines_ahead, __words.is_some());
                    if __words.is_some() {
                        // A portal's: the interpreter runs recursion.
                        __c.set_declines_recursion();
                    }
                    __c
                };
                // The entry state, from the inputs of `__c` (run-time values,
                // or in execute mode the values of `__words`).
                let __build = |__c: &mut #rt::Compilation<__Frame<'a>>| -> #rt::JitState<__Frame<'a>> {
                    let mut __in = __c.inputs().into_iter();
                    let mut __heap = #rt::virtuals::VHeap::default();
                    #(#lets)*
                    let __frame = __at(#pid, #pack(#(#fields),*));
                    #rt::JitState::with_heap(__frame, __heap)
                };
                let mut __c = __new();
                let __st = __build(&mut __c);
                let __entry = __words.map(|_| __st.clone());
                __c.mark_entry();
                __run(&mut __c, __st);
                let __facts = #rt::ext::entry_facts(&mut __c);
                if let (false, false, Some(__w), Some(__entry)) = (__c.is_declined(), __facts.is_empty(), __words, __entry) {
                    // The entry in execute mode: the values residual code
                    // gets now, to make constants (and copies one) behind
                    // guards at entry in the code just recorded.
                    let __now = ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(|| {
                        let mut __x: #rt::Compilation<__Frame<'a>> =
                            #rt::Compilation::executing(#label, &__inputs, __w, &__outputs);
                        let mut __now = __build(&mut __x);
                        __now.forget_fields();
                        __now.normalize();
                        __now.reds()
                    }));
                    if let Ok(__now) = __now {
                        #rt::ext::version_entry(&mut __c, __entry, &__facts, &__now);
                    }
                }
                #rt::ext::finish(__c).map_err(|d| ::std::format!("{d:?}"))
            };
            match ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(__body)) {
                Ok(r) => r,
                Err(_) => Err(::std::string::String::from("the generating extension panicked")),
            }
        }
    }
}

/// Names bound `mut` in a function (parameters and `let`s).
pub fn mutable_names(f: &syn::ItemFn) -> HashSet<String> {
    struct V(HashSet<String>);
    impl<'ast> syn::visit::Visit<'ast> for V {
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            if p.mutability.is_some() {
                self.0.insert(p.ident.to_string());
            }
            syn::visit::visit_pat_ident(self, p);
        }
    }
    let mut v = V(HashSet::new());
    syn::visit::Visit::visit_item_fn(&mut v, f);
    v.0
}

/// Replaces `hint!(global_merge_point)` in a portal's body by the hook call.
pub struct InsertHook {
    pub call: TokenStream,
}

impl VisitMut for InsertHook {
    fn visit_stmt_mut(&mut self, s: &mut syn::Stmt) {
        if let syn::Stmt::Macro(sm) = s {
            if hint_annotator::is_merge_point(&sm.mac) {
                let call = &self.call;
                *s = syn::parse_quote!(#call);
                return;
            }
        }
        syn::visit_mut::visit_stmt_mut(self, s);
    }
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if let syn::Expr::Macro(m) = e {
            if hint_annotator::is_merge_point(&m.mac) {
                let call = &self.call;
                *e = syn::parse_quote!(#call);
                return;
            }
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
}

pub struct Expansion {
    /// Items for the user's module (the `__jit` and `jit` modules, the plain copies of portals).
    pub items: Vec<TokenStream>,
    /// Where the operations are whose code always declines (see `ahead`),
    /// and why.
    pub declined_at: Vec<(proc_macro2::Span, String)>,
}

/// Makes calls of portals inside plain copies call the plain copies.
struct PlainCalls<'n>(&'n HashSet<String>, &'n HashMap<String, String>);

impl VisitMut for PlainCalls<'_> {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if let syn::Expr::MethodCall(m) = e {
            let on_self = matches!(&*m.receiver, syn::Expr::Path(p) if p.path.is_ident("self_"));
            if let (true, Some(plain)) = (on_self, self.1.get(&m.method.to_string())) {
                let plain = format_ident!("{}", plain);
                let args = m.args.clone();
                *e = syn::parse_quote!(#plain(self_, #args));
            }
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }

    fn visit_expr_call_mut(&mut self, c: &mut syn::ExprCall) {
        if let syn::Expr::Path(p) = &mut *c.func {
            if let Some(id) = p.path.get_ident() {
                if self.0.contains(&id.to_string()) {
                    let new = format_ident!("__plain_{}", id);
                    p.path = syn::parse_quote!(#new);
                }
            }
        }
        syn::visit_mut::visit_expr_call_mut(self, c);
    }
}

/// Whether a function of the module calls `name` (a portal called this way
/// recurses in Rust).
fn calls_of(gen: &Gen, name: &str) -> bool {
    gen.fns.iter().any(|f| {
        f.graph.blocks().any(|b| {
            f.graph.graph[b]
                .ops
                .iter()
                .any(|op| matches!(&op.kind, hint_annotator::flowgraph::OpKind::CallOpaque(n) if n == name))
        })
    })
}

/// The parameters of a function whose every input is `name: Type`
/// (without `mut`), or `None`.
fn typed_params(sig: &syn::Signature) -> Option<Vec<(Ident, syn::Type)>> {
    sig.inputs
        .iter()
        .map(|a| match a {
            syn::FnArg::Typed(pt) => match &*pt.pat {
                syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                    Some((pi.ident.clone(), (*pt.ty).clone()))
                }
                _ => None,
            },
            syn::FnArg::Receiver(_) => None,
        })
        .collect()
}

/// What a portal whose calls recurse in Rust needs for compiled code to call
/// it directly (see `jitgen_runtime::direct`): `__direct_entry_NAME(greens)`,
/// run when compiling a call site, gives the address of the entry for the
/// content of the green arguments; `__direct_NAME(entry, arguments)`, called
/// by the call site's callback, runs the entry's code (the portal specialized
/// to its greens, compiled on the first call), or the portal where that
/// declined, or the plain interpreter past the stack budget. `None` where the
/// specialization cannot compile.
fn direct_fns(
    gen: &Gen,
    fi: usize,
    sig: &syn::Signature,
    params: &[(Ident, syn::Type)],
    e: &Entry,
    ret: &Ty,
) -> Option<TokenStream> {
    let rt = rt();
    if e.bad.is_some() {
        return None;
    }
    let (_, decode) = outputs(gen, ret)?;
    let f = gen.fns[fi];
    let name = sig.ident.to_string();
    let (entry_fn, direct_fn, table) = (
        format_ident!("__direct_entry_{}", name),
        format_ident!("__direct_{}", name),
        format_ident!("__DIRECT_{}", name.to_uppercase()),
    );
    let (compile, plain, portal) =
        (format_ident!("__specialize_{}", name), format_ident!("__plain_{}", name), &sig.ident);
    let mut green_params = vec![];
    let mut green_names = vec![];
    // Red parameters as the entry's inputs take them: scalars and
    // references as they are, enums by reference; others (a `Vec` or a
    // struct by value) have no direct call.
    let mut rebinds = vec![];
    for p in f.graph.params() {
        if f.color(*p) != Color::Green {
            let info = f.graph.var(*p);
            let n = syn::parse_str::<Ident>(info.name.as_deref()?).ok()?;
            if is_enum(&info.ty) {
                rebinds.push(quote!(let #n = &#n;));
            } else if scalar(&info.ty).is_none() && !matches!(info.ty, Ty::Ref { .. }) {
                return None;
            }
            continue;
        }
        let pname = f.graph.var(*p).name.clone().unwrap_or_default();
        let (n, _, t) = e.green_params.iter().find(|(x, _, _)| *x == pname)?;
        green_params.push(quote!(#n: #t));
        green_names.push(n.clone());
    }
    let (key, content, deep, words) = (&e.key, &e.content, &e.deep, &e.input_words);
    let (nkey, ncontent) = (key.len(), content.len());
    let names: Vec<&Ident> = params.iter().map(|(n, _)| n).collect();
    let typed: Vec<TokenStream> = params.iter().map(|(n, t)| quote!(#n: #t)).collect();
    let ret_rust = match &sig.output {
        syn::ReturnType::Default => quote!(()),
        syn::ReturnType::Type(_, t) => quote!(#t),
    };
    // The portal's generics (a method of `Machine<'a>`): its parameters name them.
    let (generics, _, where_clause) = sig.generics.split_for_impl();
    Some(quote! {
        ::std::thread_local! {
            static #table: ::core::cell::RefCell<#rt::direct::DirectTable> =
                const { ::core::cell::RefCell::new(#rt::direct::DirectTable::new()) };
        }
        /// The address of the direct entry of this portal for these green
        /// arguments (0: the table is full).
        #[allow(unused_variables, unused_mut, clippy::all)]
        pub(super) fn #entry_fn(#(#green_params),*) -> u64 {
            let mut __bytes: ::std::vec::Vec<u8> = ::std::vec::Vec::new();
            let __key: [u64; #nkey] = [#(#key),*];
            for __w in __key {
                __bytes.extend_from_slice(&__w.to_le_bytes());
            }
            let __content: [&[u8]; #ncontent] = [#(#content),*];
            for __c in __content {
                __bytes.extend_from_slice(&(__c.len() as u64).to_le_bytes());
                __bytes.extend_from_slice(__c);
            }
            {
                let __out: &mut ::std::vec::Vec<u8> = &mut __bytes;
                let __addrs = true;
                #(#deep)*
            }
            #table.with(|__t| __t.borrow_mut().entry(__bytes)).map_or(0, |__p| __p as usize as u64)
        }
        /// A call of this portal from compiled code, through its direct entry.
        #[allow(unused_variables, unused_mut, clippy::all)]
        pub(super) fn #direct_fn #generics (__entry: u64, #(#typed),*) -> #ret_rust #where_clause {
            // SAFETY: the address of an entry of this thread's table, which
            // keeps its entries for the thread's life (`__direct_entry_*`).
            let __e = unsafe { &*(__entry as usize as *const #rt::direct::DirectEntry) };
            let ::core::option::Option::Some(__g) = #rt::direct::enter_stack() else {
                return super::#plain(#(#names),*);
            };
            let ::core::option::Option::Some(__code) = __e.code(&super::jit::__STATS, || #rt::residual::native(#compile(#(#green_names,)* None))) else {
                return super::#portal(#(#names),*);
            };
            let mut __words = #rt::residual::InputFrame::new();
            #(#rebinds)*
            #(#words)*
            let __mark = #rt::heap::arena_mark();
            let __out = __code.call_frame(&mut __words);
            // Decoded before the arena is released: an owned result moves out of it.
            let __r = __out.map(|__w| #decode);
            #rt::heap::arena_release(__mark);
            match __r {
                ::core::result::Result::Ok(__v) => __v,
                ::core::result::Result::Err(__e) => __e.resume(),
            }
        }
    })
}

/// What `expand` gathers from the module's functions before it assembles
/// the expansion.
#[derive(Default)]
struct Gathered {
    plain_copies: Vec<syn::ItemFn>,
    hooks: Vec<TokenStream>,
    unpark_structs: Vec<String>,
    specializers: Vec<TokenStream>,
    specialize_api: Vec<TokenStream>,
    reexports: Vec<TokenStream>,
    listing_calls: Vec<TokenStream>,
    green_flags: BTreeMap<String, Vec<bool>>,
}

/// Generates everything. `fns` are the module's free functions (original,
/// markers stripped); portal bodies are rewritten in place.
pub fn expand(
    cg: &ColoredGraphs,
    fns: &mut [&mut syn::ItemFn],
    source: &str,
    lifted: &[crate::methods::LiftedMethod],
    external: &crate::external::External,
    cx: &crate::outline::ModuleContext,
    portals: &std::collections::HashSet<String>,
) -> Expansion {
    let mut gen = Gen::new(cg);
    // Entry points: portals (at their merge point) and specialize (at entry).
    let mut out = Gathered { hooks: vec![crate::content::content_fns(gen.cg.types())], ..Default::default() };
    for item in fns.iter_mut() {
        // The flow graphs are built: the Rust copies may differ from them
        // where they mean the same.
        syn::visit_mut::VisitMut::visit_item_fn_mut(&mut crate::split::WholeGiveBacks, item);
        let name = item.sig.ident.to_string();
        let Some(&fi) = gen.fn_ids.get(&name) else {
            if portals.contains(&name) {
                left_portal(&mut out, item, lifted);
            } else if matches!(item.vis, syn::Visibility::Public(_)) {
                let ident = &item.sig.ident;
                out.reexports.push(quote!(pub use super::super::#ident;));
            }
            continue;
        };
        let f = gen.fns[fi];
        if let Some(mp) = f.merge_points().first() {
            let point =
                if mp.op == 0 { gen.point_ids[&(fi, mp.block, 0)] } else { gen.point_ids[&(fi, mp.block, mp.op + 1)] };
            portal(&mut gen, &mut out, item, fi, point, lifted, cx);
        } else if matches!(item.vis, syn::Visibility::Public(_)) {
            let ident = &item.sig.ident;
            out.reexports.push(quote!(pub use super::super::#ident;));
        }
        specialize(&mut gen, &mut out, item, fi);
    }
    assemble(gen, out, source, lifted, external)
}

/// The interpreter proper, kept beside a portal for `jit::plain` as
/// `__plain_NAME` (same module, so that its paths mean the same), and named
/// there as the portal is.
fn plain_copy(plain_copies: &mut Vec<syn::ItemFn>, reexports: &mut Vec<TokenStream>, item: &syn::ItemFn) {
    let ident = &item.sig.ident;
    let is_pub = matches!(item.vis, syn::Visibility::Public(_));
    let plain_id = format_ident!("__plain_{}", ident);
    let mut plain = item.clone();
    plain.sig.ident = plain_id.clone();
    plain.attrs.push(syn::parse_quote!(#[doc(hidden)]));
    syn::visit_mut::VisitMut::visit_item_fn_mut(&mut crate::QuietHints, &mut plain);
    // A private portal's plain copy is named in the crate, under
    // `jit::plain`, as a public one's is everywhere.
    let vis = if is_pub { quote!(pub) } else { quote!(pub(crate)) };
    if !is_pub {
        plain.vis = syn::parse_quote!(pub(crate));
    }
    plain_copies.push(plain);
    reexports.push(quote!(#vis use super::super::#plain_id as #ident;));
}

/// A portal left to Rust (another portal of the module compiles): it
/// interprets as written, with a plain copy as every portal has (its calls
/// of other portals plain too), and says why at its first call where
/// `JITGEN_LOG` is set.
fn left_portal(out: &mut Gathered, item: &mut syn::ItemFn, lifted: &[crate::methods::LiftedMethod]) {
    let name = item.sig.ident.to_string();
    plain_copy(&mut out.plain_copies, &mut out.reexports, item);
    // Named as written: `Vm::run` for a lifted method, as `left_to_rust` does.
    let shown = match lifted.iter().find(|l| l.free == name) {
        Some(m) => format!("{}::{}", m.ty, m.method),
        None => name.clone(),
    };
    let intro = format!("jitgen: portal `{shown}` is interpreted only, compiled code needs what it does not support:");
    let prefix = format!("{shown}: ");
    let log_fn = format_ident!("__log_left_{}", name);
    out.hooks.push(quote! {
        /// Prints why the portal interprets, once per process, where
        /// `JITGEN_LOG` is set.
        #[inline(never)]
        pub fn #log_fn() {
            static __ONCE: ::std::sync::Once = ::std::sync::Once::new();
            __ONCE.call_once(|| {
                if ::std::env::var_os("JITGEN_LOG").is_some() {
                    ::std::eprintln!(#intro);
                    for __l in super::jit::left_to_rust().iter().filter(|__l| __l.starts_with(#prefix)) {
                        ::std::eprintln!("  {}", __l);
                    }
                }
            });
        }
    });
    item.block.stmts.insert(0, syn::parse_quote!(self::__jit::#log_fn();));
}

/// A portal: its hook, its compile function, its plain copy, and its body
/// rewritten to ask the hook at its merge point (`point`).
fn portal(
    gen: &mut Gen,
    out: &mut Gathered,
    item: &mut syn::ItemFn,
    fi: usize,
    point: usize,
    lifted: &[crate::methods::LiftedMethod],
    cx: &crate::outline::ModuleContext,
) {
    let name = item.sig.ident.to_string();

    let mutable = mutable_names(item);
    let mut e = entry(&gen, fi, &gen.points[point].live.clone(), &mutable, true);
    gen.vstructs.extend(e.vstructs.iter().cloned());
    // Where the portal promotes a run-time value, its code switches on it:
    // it knows where it is after the switch, with no green key.
    let promotes = gen.fns[fi]
        .graph
        .blocks()
        .any(|b| gen.fns[fi].graph.graph[b].ops.iter().any(|op| gen.promotes_run_time(fi, op)));
    if e.key.is_empty() && e.bad.is_none() && !promotes {
        // Code compiled here would not know where in the program it
        // starts: it would be the interpreter itself, run slower.
        let mut why = "nothing live at `hint!(global_merge_point)` is green, so compiled code could not know \
             which instruction it starts at: make the program and its counter green \
             (`let op = hint!(code[pc], concrete);` with `code` and `pc` locals or parameters, \
             or `self.code.get(hint!(self.pc, concrete))` in a method)"
            .to_string();
        if let Some(w) = lifted.iter().find(|l| l.free == name).and_then(|l| l.whole_because.as_ref()) {
            why.push_str(&format!("; the fields of `self` could not be the portal's state: {w}"));
        }
        e.bad = Some(why);
    }
    let park = park_pieces(gen, &mut out.unpark_structs, fi, point, &mutable, &name, &e.handed);
    let never = portal_hook(gen, out, item, point, &e, &park);
    let parks_at_head = portal_call_site(out, item, &e, &park, never, cx);
    if park.at_head && !parks_at_head {
        // The loop cannot be entered at its head again (see `Park`): after
        // a hand-over, the rest of the call runs in execute mode.
        gen.park_points.remove(&(park.pid as usize));
    }
}

/// The portal's hook (`__portal_NAME`: the cache and sampler of its
/// compiled code, what it calls them with, and the hand-over back), its
/// compile function and its helpers; whether it never compiles.
fn portal_hook(gen: &mut Gen, out: &mut Gathered, item: &syn::ItemFn, point: usize, e: &Entry, park: &Park) -> bool {
    let rt = rt();
    let name = item.sig.ident.to_string();
    let ret = gen.fns[gen.fn_ids[&name]].graph.ret_ty.clone();
    let Park { parked, parked_fields, origins, unparks, field_pats, unpack, pid, .. } = park;
    let Gathered { hooks, listing_calls, .. } = out;

    let compile = format_ident!("__compile_portal_{}", name);
    let hook = format_ident!("__portal_{}", name);
    let cache = format_ident!("__CACHE_{}", name.to_uppercase());
    let sampler = format_ident!("__SAMPLER_{}", name.to_uppercase());
    let skip_fn = format_ident!("__skip_{}", name);
    let mask_fn = format_ident!("__mask_{}", name);
    let told = format_ident!("__never_{}", name);
    hooks.push(call_clock(&name, &cache, &sampler));
    hooks.push(compile_fn(&gen, &compile, &name, point, &e, &ret));
    let mut params: Vec<TokenStream> = e.params.iter().map(|(n, t)| quote!(#n: #t)).collect();
    let deep = &e.deep;
    let has_deep = !deep.is_empty();
    if has_deep {
        params.push(quote!(__deep_cell: &mut ::core::option::Option<::std::vec::Vec<u8>>));
    }
    let canonical = &e.canonical;
    if !canonical.is_empty() {
        params.push(quote!(__canon: &mut #rt::portal::canonical::Seen));
    }
    let canonical_block = entry_word(e, &sampler);
    let green_args: Vec<&Ident> = e.green_params.iter().map(|(n, _, _)| n).collect();
    let ret_rust = match &item.sig.output {
        syn::ReturnType::Default => quote!(()),
        syn::ReturnType::Type(_, t) => quote!(#t),
    };
    let key = &e.key;
    let nested = e.nested.clone().unwrap_or_else(|| quote!(false));
    let lens = &e.lens;
    let nkey = e.key.len();
    let content = &e.content;
    let words = &e.input_words;
    let deep_content = if has_deep {
        quote!(__deep_cell.get_or_insert_with(|| {
            let mut __bytes = ::std::vec::Vec::new();
            let __out: &mut ::std::vec::Vec<u8> = &mut __bytes;
            let __addrs = true;
            #(#deep)*
            __bytes
        }))
    } else {
        quote!()
    };
    // Deep content is taken only where it is compared: for keys
    // with code (see `PortalSite::has_code`).
    let visit = if has_deep {
        quote!(if __site.has_code(&__key) {
            __site.visit(&__key, &[#(#content,)* #deep_content])?
        } else {
            __site.visit(&__key, &[])?
        })
    } else {
        quote!(__site.visit(&__key, &[#(#content,)*])?)
    };
    let body = match outputs(&gen, &ret) {
        Some((_, decode)) if e.bad.is_none() => quote! {
            let __cfg = &super::jit::__CONFIG;
            if !__cfg.enabled() {
                return None;
            }
            #(#lens)*
            #canonical_block
            let __key: [u64; #nkey] = [#(#key),*];
            let __site = #rt::driver::PortalSite {
                cache: &#cache,
                sampler: &#sampler,
                config: __cfg,
                stats: &super::jit::__STATS,
                nested: #nested,
            };
            let __hot = #visit;
            let __content: &[&[u8]] = &[#(#content,)* #deep_content];
            // The inputs of residual code (which the compiler may
            // also read: see `Compilation::version_entry`).
            let mut __words: ::std::vec::Vec<u64> = ::std::vec::Vec::new();
            #(#words)*
            let __code = __site.code(
                __hot,
                __key,
                __content,
                &__words,
                &mut |__w| #compile(#(#green_args,)* Some(__w)),
                &|| __entry_word,
            )?;
            #(#origins)*
            let __mark = #rt::heap::arena_mark();
            let __t0 = __site.nested.then(::std::time::Instant::now);
            __site.entering_code();
            let __out = #rt::residual::call_parking(&__code, &__words);
            __site.left_code();
            let __r = match __out {
                Ok(__w) => Ok(#decode),
                // After a hand-over, the interpreter reached the merge
                // point: the interpreter proper goes on from there.
                Err(#rt::residual::ResidualError::Parked(__p)) => {
                    __site.handed_over(&__key, __t0.map(|__t| __t.elapsed()));
                    let __st = *__p
                        .downcast::<#rt::JitState<__Frame<'static>>>()
                        .expect("jitgen: a state of this portal");
                    let __vheap = __st.heap;
                    match __st.frames.into_iter().next_back() {
                        Some(__f) if __f.point == #pid => {
                            let (#(#field_pats,)*) = #unpack(__f.vals);
                            Err(#parked { #(#unparks),* })
                        }
                        _ => panic!("jitgen: the interpreter stopped elsewhere than the merge point"),
                    }
                }
                Err(__e) => {
                    #rt::heap::arena_release(__mark);
                    __e.resume()
                }
            };
            #rt::heap::arena_release(__mark);
            Some(__r)
        },
        _ => {
            // Never compiled: said once, for `jit::last_decline()` and JITGEN_LOG.
            quote! {
                #told();
                None
            }
        }
    };
    let never = outputs(&gen, &ret).is_none() || e.bad.is_some();
    if never {
        // Only a portal that never compiles has this helper.
        let why = never_compiled(&name.to_string(), &e, &ret);
        hooks.push(quote! {
            /// Says once why this portal never compiles (when compiling
            /// is on); `true`, for the portal's entry.
            pub(super) fn #told() -> bool {
                static __TOLD: ::std::sync::Once = ::std::sync::Once::new();
                if super::jit::__CONFIG.enabled() {
                    __TOLD.call_once(|| super::jit::__STATS.declined_because(#why));
                }
                true
            }
        });
    }
    let listings_fn = format_ident!("__listings_{}", name);
    listing_calls.push(quote!(__l.extend(super::__jit::#listings_fn());));
    hooks.push(quote! {
        /// The listings of this portal's compiled code (this thread's).
        pub(super) fn #listings_fn() -> ::std::vec::Vec<::std::string::String> {
            #cache.with(|__c| __c.borrow().listings())
        }
        ::std::thread_local! {
            static #cache: ::core::cell::RefCell<#rt::driver::PortalCache<[u64; #nkey]>> =
                const { ::core::cell::RefCell::new(#rt::driver::PortalCache::new()) };
            /// Which merge point visits to skip, and where code starts.
            static #sampler: #rt::driver::Sampler = const { #rt::driver::Sampler::new() };
        }
        /// The variables a portal gets back when it continues in the interpreter.
        #[allow(non_camel_case_types)]
        pub(super) struct #parked { #(#parked_fields),* }

        /// Whether the portal skips this visit of its merge point,
        /// and how many after it (see `Sampler::ask`): one call out
        /// of the interpreter loop, made only when its countdown
        /// runs out, the sampling clock ticks, or its entry mask lets
        /// the visit through.
        #[inline(never)]
        pub(super) fn #skip_fn(__due: bool, __left: u32, __green: u64) -> ::core::option::Option<u32> {
            #sampler.with(|__s| __s.ask(__due, __left, __green))
        }

        /// The entry filter folded for the interpreter loop's local
        /// (see `Sampler::entry_mask`).
        #[inline(never)]
        pub(super) fn #mask_fn() -> (u64, #rt::driver::Aliases) {
            #sampler.with(|__s| (__s.entry_mask(), __s.aliases()))
        }

        #[allow(unused_variables, unused_mut, dead_code, clippy::all)]
        pub(super) fn #hook(#(#params),*) -> ::core::option::Option<::core::result::Result<#ret_rust, #parked>> {
            #body
        }
    });
    never
}

/// `fn name() -> bool`: whether this call of the portal `what`, as the
/// `Sampler` method `method` of the thread-local `sampler` says; a yes is
/// counted in `jit::stats().unhooked`.
fn unhooked_query(name: &Ident, sampler: &Ident, method: &str, what: &str) -> TokenStream {
    let method = format_ident!("{}", method);
    let doc = format!(" Whether this call of the portal {what} (see `Sampler::{method}`); counted.");
    quote! {
        #[doc = #doc]
        #[inline(never)]
        pub(super) fn #name() -> bool {
            let __yes = #sampler.with(|__s| __s.#method());
            if __yes {
                super::jit::__STATS.unhooked();
            }
            __yes
        }
    }
}

/// The functions that begin and end a call of the portal `name` for
/// `portal::slow` (its code cache and sampler the thread-locals `cache` and
/// `sampler`): the interpreter loop's sampler at the start, which reports
/// the call's end to `PortalSite::call_ended`.
fn call_clock(name: &str, cache: &Ident, sampler: &Ident) -> TokenStream {
    let rt = rt();
    let (begin_fn, end_fn) = (format_ident!("__begin_{}", name), format_ident!("__end_{}", name));
    quote! {
        /// The interpreter loop's sampler at the start of a call of the
        /// portal, which reports its end to `portal::slow`.
        #[inline(never)]
        pub(super) fn #begin_fn() -> #rt::driver::LoopSampler {
            super::jit::__DUE.list();
            let __work = super::jit::__STATS.compile_work();
            let __ticks = super::jit::__CONFIG.hot_policy().warmup;
            #sampler.with(|__s| {
                __s.set_ticks(__ticks);
                let __timed = __s.begin_call(__work);
                let __began = if __timed { __s.call_began() } else { ::core::option::Option::None };
                let mut __l = #rt::driver::LoopSampler::begin(__s.entry_mask(), __began, #end_fn, __s.joins_wait());
                __l.aliases = __s.aliases();
                __l
            })
        }

        /// A call of the portal ended (see `PortalSite::call_ended`).
        #[inline(never)]
        fn #end_fn(__took: ::core::option::Option<::std::time::Duration>) {
            let __site = #rt::driver::PortalSite {
                cache: &#cache,
                sampler: &#sampler,
                config: &super::jit::__CONFIG,
                stats: &super::jit::__STATS,
                nested: false,
            };
            __site.call_ended(__took);
        }
    }
}

/// The hook's statements making its green data canonical (see
/// `entry::canonical`) and computing `__entry_word`, the entry filter's
/// word of the position: of the data's canonical copies, to which the
/// interpreter loop's words, of the data it has, are renamed
/// (`Sampler::canonical`).
fn entry_word(e: &Entry, sampler: &Ident) -> TokenStream {
    let rt = rt();
    let cheap_in_hook = &e.cheap_greens_in_hook;
    if e.canonical.is_empty() {
        return quote!(let __entry_word = #rt::driver::green_word(&[#(#cheap_in_hook),*]););
    }
    let canonical = &e.canonical;
    let words: Vec<&TokenStream> = e.canonical_at.iter().map(|&i| &cheap_in_hook[i]).collect();
    // The visit's word as the loop took it.
    let in_loop = cheap_in_hook.iter().enumerate().map(|(i, w)| {
        if e.canonical_at.contains(&i) {
            quote!(#rt::driver::alias(&__aliases, #w))
        } else {
            w.clone()
        }
    });
    quote! {
        let __aliases = #sampler.with(|__s| __s.aliases());
        let __loop_word = #rt::driver::green_word(&[#(#in_loop),*]);
        let __given = [#(#words),*];
        #(#canonical)*
        let __entry_word = #rt::driver::green_word(&[#(#cheap_in_hook),*]);
        #sampler.with(|__s| __s.canonical(__loop_word, __entry_word, &__given, &[#(#words),*]));
    }
}

/// The portal's body rewritten: its merge point asks the hook first, its
/// plain copy kept beside it (for `jit::plain`, and when compiling is off).
/// Whether its hand-overs may park at its loop's head (see `place_hook`).
fn portal_call_site(
    out: &mut Gathered,
    item: &mut syn::ItemFn,
    e: &Entry,
    park: &Park,
    never: bool,
    cx: &crate::outline::ModuleContext,
) -> bool {
    let name = item.sig.ident.to_string();
    let has_deep = !e.deep.is_empty();
    let sampler = format_ident!("__SAMPLER_{}", name.to_uppercase());
    let told = format_ident!("__never_{}", name);
    let Gathered { plain_copies, reexports, hooks, .. } = out;

    plain_copy(plain_copies, reexports, item);
    let plain_id = format_ident!("__plain_{}", name);
    // The portal: the merge point asks the hook first.
    let mut args = e.args.clone();
    if has_deep {
        args.push(quote!(&mut __jit_deep_content));
    }
    let has_canonical = !e.canonical.is_empty();
    if has_canonical {
        args.push(quote!(&mut __jit_canon));
    }
    let runs_plain_fn = format_ident!("__runs_plain_{}", name);
    let runs_plain = unhooked_query(&runs_plain_fn, &sampler, "runs_plain", "runs the plain interpreter");
    let plain_timed_fn = format_ident!("__runs_plain_timed_{}", name);
    let plain_timed =
        unhooked_query(&plain_timed_fn, &sampler, "runs_plain_timed", "runs the plain interpreter, timed");
    let begin_fn = format_ident!("__begin_{}", name);
    let parks_at_head = place_hook(hooks, item, e, &args, park, never, cx);
    // Interpreting only (`JITGEN_OFF=1`, `set_enabled(false)`): the
    // plain copy, with no hook at its merge point.
    let plain_args: Vec<TokenStream> = item
        .sig
        .inputs
        .iter()
        .filter_map(|a| match a {
            syn::FnArg::Typed(pt) => match &*pt.pat {
                syn::Pat::Ident(pi) => {
                    let i = &pi.ident;
                    Some(quote!(#i))
                }
                _ => None,
            },
            syn::FnArg::Receiver(_) => Some(quote!(self)),
        })
        .collect();
    if plain_args.len() == item.sig.inputs.len() && item.sig.inputs.iter().all(|a| matches!(a, syn::FnArg::Typed(_))) {
        // The plain copy called out of line, as it is called from
        // outside: inlined here, beside the portal's loops, its code
        // is laid out anew (a 4-operation loop ran 1.2-1.35x slower).
        let mut off_sig = item.sig.clone();
        off_sig.ident = format_ident!("__jit_off");
        for a in off_sig.inputs.iter_mut() {
            if let syn::FnArg::Typed(pt) = a {
                if let syn::Pat::Ident(pi) = &mut *pt.pat {
                    pi.mutability = None;
                }
            }
        }
        let off_fn: syn::Stmt = syn::parse_quote! {
            #[inline(never)]
            #off_sig {
                #plain_id(#(#plain_args),*)
            }
        };
        let entry_check: syn::Stmt = if never {
            syn::parse_quote!(if self::__jit::#told() {
                return #plain_id(#(#plain_args),*);
            })
        } else {
            syn::parse_quote!(if !self::jit::__CONFIG.enabled() {
                self::jit::__CONFIG.tell_off();
                return __jit_off(#(#plain_args),*);
            })
        };
        if !never {
            // Calls interpreted on purpose to compare suspect code with,
            // the plain interpreter timed (the clock's drop ends the call).
            hooks.push(plain_timed);
            item.block.stmts.insert(
                0,
                syn::parse_quote!(if self::__jit::#plain_timed_fn() {
                    let __jit_clock = self::__jit::#begin_fn();
                    return __jit_off(#(#plain_args),*);
                }),
            );
            // After calls at retired positions, the plain interpreter.
            hooks.push(runs_plain);
            item.block.stmts.insert(
                0,
                syn::parse_quote!(if self::__jit::#runs_plain_fn() {
                    return __jit_off(#(#plain_args),*);
                }),
            );
        }
        item.block.stmts.insert(0, entry_check);
        if !never {
            item.block.stmts.insert(0, off_fn);
        }
    }
    if has_canonical {
        // What the call made canonical (see `entry::canonical`).
        let rt = rt();
        item.block.stmts.insert(0, syn::parse_quote!(let mut __jit_canon = #rt::portal::canonical::Seen::new();));
    }
    if has_deep {
        // The content of the portal's green data, taken at most once
        // per call (see `content`).
        item.block.stmts.insert(
            0,
            syn::parse_quote!(let mut __jit_deep_content: ::core::option::Option<::std::vec::Vec<u8>> = ::core::option::Option::None;),
        );
    }
    // A `Vec` taken by value goes to the hook by `&mut` (a list the
    // interpreter gets back after a hand-over): bound `mut` here
    // when its parameter is not.
    for a in item.sig.inputs.iter() {
        let syn::FnArg::Typed(pt) = a else { continue };
        let syn::Pat::Ident(pi) = &*pt.pat else { continue };
        let by_value_vec =
            matches!(&*pt.ty, syn::Type::Path(tp) if tp.path.segments.last().is_some_and(|s| s.ident == "Vec"));
        if by_value_vec && pi.mutability.is_none() && pi.by_ref.is_none() {
            let id = &pi.ident;
            item.block.stmts.insert(0, syn::parse_quote!(#[allow(unused_mut)] let mut #id = #id;));
        }
    }
    parks_at_head
}

/// Places the hook in the portal's body: the sampler's test at the merge
/// point, and what runs where a visit goes to the hook (with what runs
/// where it gives up), either outside the loop's closure (see `outline`)
/// or in the loop, beside a copy of the loop without it where it has one
/// (see `unhooked`). Whether hand-overs may park at the loop's head
/// (`Park::at_head`): only where the loop is outlined as a `while let`.
fn place_hook(
    hooks: &mut Vec<TokenStream>,
    item: &mut syn::ItemFn,
    e: &Entry,
    args: &[TokenStream],
    park: &Park,
    never: bool,
    cx: &crate::outline::ModuleContext,
) -> bool {
    let rt = rt();
    let name = item.sig.ident.to_string();
    let cheap = &e.cheap_greens;
    let (hook, sampler) = (format_ident!("__portal_{}", name), format_ident!("__SAMPLER_{}", name.to_uppercase()));
    let (skip_fn, mask_fn) = (format_ident!("__skip_{}", name), format_ident!("__mask_{}", name));
    let begin_fn = format_ident!("__begin_{}", name);
    let gives_up_fn = format_ident!("__gives_up_{}", name);
    // The hook's pieces: the sampler's test at the merge point, what runs
    // where a visit goes to the hook (with what runs where it gives up).
    let (srcs, tmps): (Vec<_>, Vec<_>) = e.moved.iter().cloned().unzip();
    let (hsrcs, htmps): (Vec<_>, Vec<_>) = e.handed.iter().cloned().unzip();
    let backs: Vec<Ident> = htmps.iter().map(|t| format_ident!("{}_back", t)).collect();
    let kept = "jitgen: compiled code that did not run dropped an object handed to it";
    let green_visit = quote! {
        let __jit_green = #rt::driver::green_word(&[#(#cheap),*]);
        __jit_sampler.visits_hook(__jit_green, self::__jit::#skip_fn)
    };
    // Cold from the module's count on: where no thread's flag is raised, a
    // visit falls through to the loop's dispatch instead of jumping over the
    // thread's own test (a taken branch per instruction; PERFORMANCE.md).
    let visits =
        quote!(self::jit::__DUE.any() && { ::core::hint::cold_path(); __jit_sampler.due() } && { #green_visit });
    let runs = |give_up: TokenStream, assigns: &[TokenStream]| {
        quote! {
            #(let mut #tmps = #srcs;)*
            #(let mut #htmps = #rt::heap::Handed::new(#hsrcs);)*
            let __jit_result = self::__jit::#hook(#(#args),*);
            #(#srcs = #tmps;)*
            #(let mut #backs = #htmps.back();)*
            match __jit_result {
                ::core::option::Option::Some(::core::result::Result::Ok(__r)) => return __r,
                ::core::option::Option::Some(::core::result::Result::Err(__p)) => {
                    #(#assigns)*
                    __jit_sampler.entered();
                }
                ::core::option::Option::None => {
                    #(#hsrcs = #backs.take().expect(#kept);)*
                    #give_up
                }
            }
            (__jit_sampler.mask, __jit_sampler.aliases) = self::__jit::#mask_fn();
        }
    };
    let begin: syn::Stmt = syn::parse_quote!(let mut __jit_sampler = self::__jit::#begin_fn(););
    // The loop outlined from the hook where it can be (see `outline`),
    // else the hook in the loop, beside a copy of the loop without it
    // where it has one (see `unhooked`).
    let mut outlined = false;
    // Where its hand-overs would park at the loop's head, a loop that is
    // not a `while let` is outlined without parking there (`Park`).
    let mut at_head = park.at_head;
    let tries: &[bool] = if park.at_head { &[true, false] } else { &[false] };
    for &parks_at_head in tries.iter().filter(|_| !never) {
        let mut trial = item.clone();
        trial.block.stmts.insert(0, begin.clone());
        let hook = crate::outline::Hook {
            visits: quote! {
                self::jit::__DUE.any() && { ::core::hint::cold_path(); __jit_sampler.due() } && {
                    if __jit_hooked {
                        #green_visit
                    } else {
                        __jit_sampler.idle();
                        false
                    }
                }
            },
            runs: {
                // Parked at the loop's head: the outlined loop is entered
                // there again, and tests its condition (see `Park`).
                let mut assigns = park.assigns.clone();
                if parks_at_head {
                    assigns.push(quote!(__jit_at_head = true;));
                }
                let runs = runs(quote!(if self::__jit::#gives_up_fn() { __jit_unhooked = true; }), &assigns);
                quote!(#runs __jit_sampler.resumed();)
            },
            parks_at_head,
            greens: e.green_names.clone(),
        };
        if crate::outline::outline(&mut trial, &hook, cx).is_ok() {
            // The locals moved into the closure are not changed where
            // they are bound (the plain copy keeps the lint for them).
            trial.attrs.push(syn::parse_quote!(#[allow(unused_mut)]));
            *item = trial;
            outlined = true;
            at_head = parks_at_head;
            hooks.push(unhooked_query(&gives_up_fn, &sampler, "gives_up", "goes on without its hook"));
            break;
        }
    }
    if !outlined {
        let cont = if never { None } else { crate::unhooked::continuation(item) };
        let give_up = match cont {
            Some(cont) => {
                item.attrs.push(syn::parse_quote!(#[allow(unused_labels, unreachable_code)]));
                hooks.push(unhooked_query(&gives_up_fn, &sampler, "gives_up", "goes on without its hook"));
                quote!(if self::__jit::#gives_up_fn() { #cont })
            }
            _ => quote!(),
        };
        let call = if never {
            // A portal that never compiles: the interpreter only (see
            // the entry below), nothing at its merge point.
            quote!({})
        } else {
            // A load and a compare per visit, the rest in the cold path
            // (see `LoopSampler`).
            let runs = runs(give_up, &park.assigns);
            quote!(if #visits { #runs })
        };
        InsertHook { call }.visit_item_fn_mut(item);
        if !never {
            item.block.stmts.insert(0, begin);
        }
    }
    outlined && at_head
}

/// `jit::specialize::NAME` for a public function, and the compile function
/// of a portal that compiled code calls directly.
fn specialize(gen: &mut Gen, out: &mut Gathered, item: &mut syn::ItemFn, fi: usize) {
    let rt = rt();
    let name = item.sig.ident.to_string();
    let f = gen.fns[fi];
    let ret = f.graph.ret_ty.clone();
    let is_pub = matches!(item.vis, syn::Visibility::Public(_));
    let ident = item.sig.ident.clone();
    let Gathered { hooks, specializers, specialize_api, green_flags, .. } = out;

    // A portal whose calls recurse in Rust: compiled code calls it
    // directly, specialized from its start (see `direct_fns`).
    let direct_params =
        (f.merge_points().first().is_some() && calls_of(&gen, &name)).then(|| typed_params(&item.sig)).flatten();
    if is_pub || direct_params.is_some() {
        let start = gen.point_ids[&(fi, f.graph.start, 0)];
        let live = gen.points[start].live.clone();
        let e = entry(&gen, fi, &live, &mutable_names(item), false);
        let compile = format_ident!("__specialize_{}", name);
        specializers.push(compile_fn(&gen, &compile, &name, start, &e, &ret));
        if let Some(params) = &direct_params {
            if let Some(d) = direct_fns(&gen, fi, &item.sig, params, &e, &ret) {
                hooks.push(d);
                gen.direct_portals.insert(name.clone());
            }
        }
    }
    if is_pub {
        // jit::specialize::NAME(greens) -> residual function of the reds.
        let start = gen.point_ids[&(fi, f.graph.start, 0)];
        let live = gen.points[start].live.clone();
        let e = entry(&gen, fi, &live, &mutable_names(item), false);
        let compile = format_ident!("__specialize_{}", name);
        let mut green_params = vec![];
        let mut green_args = vec![];
        let mut red_params = vec![];
        let mut greens = vec![];
        for p in f.graph.params() {
            let info = f.graph.var(*p);
            let pname = info.name.clone().unwrap_or_default();
            let n = Ident::new(if pname == "self" { "__self" } else { &pname }, Span::call_site());
            let green = f.color(*p) == Color::Green;
            greens.push(green);
            if green {
                if let Some((_, t_a, _)) = e.green_params.iter().find(|(x, _, _)| *x == n) {
                    green_params.push(quote!(#n: #t_a));
                    green_args.push(quote!(#n));
                } else {
                    let t = rust_ty(&info.ty, None);
                    green_params.push(quote!(#n: #t));
                }
            } else {
                if let Some((_, t)) = e.params.iter().find(|(x, _)| *x == n) {
                    red_params.push(quote!(#n: #t));
                } else {
                    let t = rust_ty(&info.ty, None);
                    red_params.push(quote!(#n: #t));
                }
            }
        }
        green_flags.insert(name.clone(), greens);
        let cname = format!("Residual{}", camel(&name));
        let cid = Ident::new(&cname, Span::call_site());
        let words = &e.input_words;
        let ret_rust = match &item.sig.output {
            syn::ReturnType::Default => quote!(()),
            syn::ReturnType::Type(_, t) => quote!(#t),
        };
        let decode = outputs(&gen, &ret).map(|(_, d)| d).unwrap_or(quote!(unreachable!()));
        let doc = format!("`{name}` specialized to its green arguments: a residual function of its red ones.");
        specialize_api.push(quote! {
            #[doc = #doc]
            #[doc = ""]
            #[doc = "It borrows the green arguments: the compiler may resume from them when a promotion meets a new value."]
            pub struct #cid<'a> {
                f: #rt::residual::ResidualFn,
                _greens: ::core::marker::PhantomData<&'a ()>,
            }
            impl<'a> #cid<'a> {
                /// Runs the residual code; panics where the interpreter would.
                #[allow(unused_mut, unused_variables)]
                pub fn call(&self, #(#red_params),*) -> #ret_rust {
                    let mut __words: ::std::vec::Vec<u64> = ::std::vec::Vec::new();
                    #(#words)*
                    let __mark = #rt::heap::arena_mark();
                    let __out = self.f.call_words(&__words);
                    // Decoded before the arena is released: an owned
                    // result moves out of it.
                    let __r = __out.map(|__w| #decode);
                    #rt::heap::arena_release(__mark);
                    match __r {
                        Ok(__v) => __v,
                        Err(__e) => __e.resume(),
                    }
                }
                /// The residual operations, one per line.
                pub fn listing(&self) -> &str {
                    self.f.listing()
                }
                /// The listing followed by the flexswitch cases compiled so far.
                pub fn listing_with_cases(&self) -> ::std::string::String {
                    self.f.listing_with_cases()
                }
                /// The compiled function.
                pub fn function(&self) -> &#rt::residual::ResidualFn {
                    &self.f
                }
            }
            #[doc = #doc]
            #[allow(clippy::all)]
            pub fn #ident<'a>(#(#green_params),*) -> #cid<'a> {
                match #rt::residual::native(super::super::__jit::#compile(#(#green_args,)* None)) {
                    Ok(f) => {
                        super::__STATS.compiled(Some(f.op_count()), 0);
                        #cid { f, _greens: ::core::marker::PhantomData }
                    }
                    Err(why) => panic!("jit::specialize::{} could not compile: {}", #name, why),
                }
            }
        });
    }
}

/// The expansion's items: `__jit` (the generating extension and the hooks),
/// `jit` (what the user calls), the plain copies of the portals.
fn assemble(
    mut gen: Gen,
    out: Gathered,
    source: &str,
    lifted: &[crate::methods::LiftedMethod],
    external: &crate::external::External,
) -> Expansion {
    let uses = &external.uses;
    let idle = gen.cg.nothing_to_specialize().map(crate::left::nothing_to_specialize);
    let common = crate::left::common_items(source, external, idle.as_deref());
    let Gathered {
        mut plain_copies,
        mut hooks,
        unpark_structs,
        specializers,
        specialize_api,
        reexports,
        listing_calls,
        green_flags,
    } = out;

    let portal_names: HashSet<String> =
        plain_copies.iter().map(|f| f.sig.ident.to_string().trim_start_matches("__plain_").to_string()).collect();
    for f in &mut plain_copies {
        // A lifted method's recursive calls `self_.m(..)` of its type's
        // portal methods (`self` kept whole) call their plain copies too.
        let name = f.sig.ident.to_string();
        let methods: HashMap<String, String> = lifted
            .iter()
            .find(|l| name == format!("__plain_{}", l.free))
            .map(|me| {
                lifted
                    .iter()
                    .filter(|l| l.ty == me.ty && l.split.is_none())
                    .map(|l| (l.method.to_string(), format!("__plain_{}", l.free)))
                    .collect()
            })
            .unwrap_or_default();
        PlainCalls(&portal_names, &methods).visit_item_fn_mut(f);
    }
    for sname in &unpark_structs {
        hooks.push(unpark_fn(sname, gen.cg.types()));
    }
    let extension = gen.extension();
    let ahead = crate::ahead::declines_ahead(&gen);
    let outlined = outlined_fns(&gen);
    let mut left_lines = crate::left::lines(gen.cg.left_to_rust());
    // A lifted method is named as written (`Vm::run`, not `__Vm_run`).
    for l in &mut left_lines {
        if let Some(m) = lifted.iter().find(|m| l.starts_with(&format!("{}: ", m.free))) {
            *l = format!("{}::{}{}", m.ty, m.method, &l[m.free.to_string().len()..]);
        }
    }
    left_lines.extend(idle);
    let plain_paths = crate::methods::method_paths(lifted, None);
    let specialize_paths = crate::methods::method_paths(lifted, Some(&green_flags));
    let jit_internal = quote! {
        #[doc(hidden)]
        #[allow(unused_imports, dead_code, non_snake_case, non_camel_case_types, unused_parens, unused_variables, unused_mut, unused_braces, unreachable_code, unused_labels, clippy::all)]
        pub mod __jit {
            use super::*;
            #(#uses)*
            #extension
            #ahead
            #(#hooks)*
            #(#specializers)*
        }
    };
    let jit = quote! {
        /// What `#[jit_interpreter]` derived from this module.
        pub mod jit {
            #common

            /// The listings of the code the portals compiled so far in this
            /// thread, with their flexswitch cases (for tests and tools).
            pub fn portal_listings() -> ::std::vec::Vec<::std::string::String> {
                let mut __l = ::std::vec::Vec::new();
                #(#listing_calls)*
                __l
            }

            /// Why the last declined compilation gave up, if one did.
            pub fn last_decline() -> ::core::option::Option<::std::string::String> {
                __STATS.last_decline()
            }

            /// The functions and items of the module left to Rust (called
            /// as they are from compiled code, never inlined), one line per
            /// reason: `name: line:column: what is not supported`.
            pub fn left_to_rust() -> ::std::vec::Vec<::std::string::String> {
                [#(#left_lines),*].iter().map(|__l: &&str| ::std::string::ToString::to_string(*__l)).collect()
            }

            /// The unmodified interpreter: never compiles.
            #[allow(unused_imports, clippy::all)]
            pub mod plain {
                use super::super::*;
                #(#uses)*
                #(#reexports)*
                #plain_paths
            }

            #[doc(hidden)]
            #[allow(non_snake_case, unused_imports, clippy::all)]
            pub mod __specialize {
                use super::super::*;
                use super::super::__jit::*;
                #(#uses)*
                #(#specialize_api)*
            }

            /// The generating extensions called directly: specialize a function to its green arguments.
            #[allow(non_snake_case, unused_imports)]
            pub mod specialize {
                pub use super::__specialize::*;
                #specialize_paths
            }
        }
    };
    let plain_items = plain_copies.iter().map(|f| quote!(#f));
    // Generated code names the runtime's private API `__rt`.
    let runtime = quote! {
        #[doc(hidden)]
        #[allow(unused_imports)]
        use ::jitgen::__private::rt as __rt;
    };
    let declined_at = gen
        .static_declines
        .borrow()
        .iter()
        .filter_map(|((f, b, k), why)| gen.fns[*f].graph.graph[*b].ops.get(*k).map(|o| (o.span, why.clone())))
        .collect();
    Expansion { items: vec![runtime, jit_internal, jit, quote!(#(#plain_items)*), quote!(#(#outlined)*)], declined_at }
}

/// The statements of portals outlined as functions of their own (see
/// `hint_annotator::flowgraph::Outlined`), which residual calls call.
fn outlined_fns(gen: &Gen<'_>) -> Vec<TokenStream> {
    let mut seen = HashSet::new();
    gen.fns
        .iter()
        .flat_map(|f| &f.graph.outlined)
        .filter(|o| seen.insert(o.name.clone()))
        .map(|o| {
            let name = format_ident!("{}", o.name);
            let params = o.params.iter().map(|(n, t)| {
                let n = match n.strip_prefix("r#") {
                    Some(raw) => Ident::new_raw(raw, Span::call_site()),
                    None => Ident::new(n, Span::call_site()),
                };
                let t = if o.views.contains(&n.to_string()) { quote!(&str) } else { rust_ty(t, None) };
                quote!(#n: #t)
            });
            let ret = rust_ty(&o.ret, None);
            let body = &o.body;
            // The changed locals after the first, left in a stash for their getters.
            let stash = (!o.stash.is_empty()).then(|| {
                let cell = format_ident!("{}", hint_annotator::flowgraph::Outlined::stash_name(&o.name));
                let tys: Vec<TokenStream> = o.stash.iter().map(|t| rust_ty(t, None)).collect();
                let getters = tys.iter().enumerate().map(|(k, t)| {
                    let getter = format_ident!("{}_{}", o.name, k + 1);
                    let k = syn::Index::from(k);
                    quote! {
                        #[doc(hidden)]
                        #[inline(never)]
                        #[allow(non_snake_case)]
                        fn #getter() -> #t {
                            #cell.with(|__s| __s.get().expect("jitgen: the outlined statement ran before").#k)
                        }
                    }
                });
                quote! {
                    ::std::thread_local! {
                        #[doc(hidden)]
                        #[allow(non_upper_case_globals)]
                        static #cell: ::core::cell::Cell<::core::option::Option<(#(#tys,)*)>> =
                            const { ::core::cell::Cell::new(::core::option::Option::None) };
                    }
                    #(#getters)*
                }
            });
            quote! {
                #[doc(hidden)]
                #[inline(never)]
                #[allow(non_snake_case, unused_variables, unused_mut, unused_parens, unused_braces, clippy::all)]
                fn #name(#(#params),*) -> #ret {
                    #body
                }
                #stash
            }
        })
        .collect()
}

fn camel(s: &str) -> String {
    s.split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            match c.next() {
                Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

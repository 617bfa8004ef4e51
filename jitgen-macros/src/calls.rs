//! Timeshifting calls: green calls run while compiling, opaque and outside
//! calls become residual calls through generated callbacks, direct calls of a
//! portal's compiled code, and the continuations of inlined calls (methods of
//! `timeshift::Gen`).

use hint_annotator::flowgraph::{Const, Value, Var};
use hint_annotator::types::Ty;
use hint_annotator::Color;
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use crate::repr::*;
use crate::timeshift::*;

impl<'g> Gen<'g> {
    /// A callback of residual code (see `jitgen_runtime::ir::builder::CallbackFn`)
    /// running `body` on its buffer `__b` of `width` words; its name.
    pub(crate) fn callback(&mut self, width: usize, body: TokenStream) -> Ident {
        let rt = rt();
        let cb = format_ident!("__cb{}", self.callbacks.len());
        self.callbacks.push(quote! {
            #[allow(unused_unsafe, unknown_lints, dangerous_implicit_autorefs, clippy::all)]
            extern "C" fn #cb(__buf: *mut u64) -> u64 {
                #rt::residual::run_callback(|| {
                    // SAFETY: residual code passes a buffer of `width` words.
                    let __b = unsafe { ::core::slice::from_raw_parts_mut(__buf, #width) };
                    #body
                    Ok(())
                })
            }
        });
        cb
    }

    /// A call of a pure function of the module with green arguments and
    /// result: run now.
    pub(crate) fn green_call(&mut self, fi: usize, r: Var, rr: &Repr, name: &str, args: &[Value]) -> TokenStream {
        let Some(ci) = self.fn_ids.get(name).copied() else { return self.decline("a call") };
        let callee = self.fns[ci];
        let params: Vec<Ty> = callee.graph.params().iter().map(|p| callee.graph.var(*p).ty.clone()).collect();
        self.call_now(fi, r, rr, name, args, Some(&params))
    }

    /// A call of a pure function outside the module (`OpKind::CallPure`)
    /// with green arguments: run now, on the arguments' values.
    pub(crate) fn pure_call(&mut self, fi: usize, r: Var, rr: &Repr, name: &str, args: &[Value]) -> TokenStream {
        self.call_now(fi, r, rr, name, args, None)
    }

    /// The call of `name` on green `args` run while compiling, its result
    /// bound to `r`; a green reference is passed where `params` (when
    /// known) take a shared reference.
    fn call_now(
        &mut self,
        fi: usize,
        r: Var,
        rr: &Repr,
        name: &str,
        args: &[Value],
        params: Option<&[Ty]>,
    ) -> TokenStream {
        let mut exprs = vec![];
        for (k, a) in args.iter().enumerate() {
            let shared = params.and_then(|p| p.get(k)).is_some_and(|t| matches!(t, Ty::Ref { mutable: false, .. }));
            let from = self.value_repr(fi, a);
            let Some(e) = self.operand(fi, a, &from) else { return self.decline("an argument") };
            exprs.push(match &from {
                Repr::G(_) => e,
                // Text known while compiling, held as its bytes: the
                // `&str` again (it was one).
                Repr::GSlice(_) if matches!(self.value_ty(fi, a), Ty::Ref { to, .. } if *to == Ty::Text) => {
                    quote!(unsafe { ::core::str::from_utf8_unchecked(#e) })
                }
                Repr::GRef(_) | Repr::GSlice(_) if shared => e,
                // A value struct known while compiling, passed by value:
                // a copy of its one copy.
                Repr::GRef(_) if value_struct_of(&self.value_ty(fi, a), self.cg.types()).is_some() => quote!(*#e),
                Repr::Enum(t, _) if plain(t, self.cg.types()) => {
                    let (_, unflat, _) = enum_helpers(t);
                    let rt = rt();
                    quote!(#unflat(&#rt::redbox::const_words(&#e)))
                }
                _ => return self.decline("an argument of this type to a call run at compile time"),
            });
        }
        let path = rust_path(name);
        let call = quote!(#path(#(#exprs),*));
        let returned = value_struct_of(&self.fns[fi].graph.var(r).ty, self.cg.types()).map(str::to_string);
        match rr {
            // A value struct returned by value (`Instr::decode(w)`): its
            // one copy for these words (see `value_op`).
            Repr::GRef(_) if returned.is_some() => {
                let s = returned.expect("matched above");
                let kept = need!(self, self.green_value_struct(&s, call), "the result of this call");
                self.bind(fi, r, kept)
            }
            Repr::G(_) | Repr::GRef(_) | Repr::GSlice(_) | Repr::Unit => self.bind(fi, r, call),
            Repr::Enum(t, _) => {
                let t = t.clone();
                let e = self.enum_from_rust(&t, quote!(&__r));
                self.bind(fi, r, quote!({ let __r = #call; #e }))
            }
            _ => self.decline("the result of this call"),
        }
    }

    /// How a residual call's result of type `rty` comes back: the value
    /// types of its words, and the callback code writing them from `__r`;
    /// `None` for a type that cannot come back yet.
    fn result_words(&mut self, rty: &Ty, shared: bool) -> Option<(TokenStream, TokenStream)> {
        let rt = rt();
        let types = self.cg.types();
        if shared {
            return self.shared_result_words(rty);
        }
        Some(if *rty == Ty::Unit {
            (quote!(&[]), quote!(let _ = __r;))
        } else if let Some(sc) = scalar(rty) {
            let vt = sc_valty(sc);
            let w = to_word(sc, quote!(__r));
            (quote!(&[#vt]), quote!(__b[0] = #w;))
        } else if *rty == Ty::Str
            || matches!(rty, Ty::Vec(e) | Ty::Array(e, _) if scalar(e).is_some())
            || matches!(repr(rty, false, types), Repr::RPtr if matches!(rty, Ty::Map(..) | Ty::Vec(_)))
        {
            // A new `String`, `Vec` of scalars, or list or map that is the
            // interpreter's own kind of object (a `HashMap<String, i64>`,
            // each method one residual call), kept in the arena until the
            // residual call that made it returns (or moved out of it by
            // the portal).
            let pt = ptr_valty();
            (quote!(&[#pt]), quote!(__b[0] = #rt::heap::arena_alloc(__r) as usize as u64;))
        } else if let Some((_, fields)) = scalar_struct(rty, types) {
            // A struct of scalars: its fields, word by word.
            let vts = fields.iter().map(|(_, sc)| sc_valty(*sc));
            let writes = fields.iter().enumerate().map(|(k, (n, sc))| {
                let member: syn::Member = syn::parse_str(n).expect("a field name");
                let w = to_word(*sc, quote!(__r.#member));
                quote!(__b[#k] = #w;)
            });
            (quote!(&[#(#vts),*]), quote!(#(#writes)*))
        } else if matches!(rty, Ty::Foreign(t) if hint_annotator::types::owned_opaque(t)) {
            // An object the analysis does not model (a `Box<dyn Error>`):
            // moved into the arena, reached by address, as a `String`.
            let pt = ptr_valty();
            (quote!(&[#pt]), quote!(__b[0] = #rt::heap::arena_alloc(__r) as usize as u64;))
        } else if let Ty::Struct(s) = rty {
            // A struct of the module that is not a struct of scalars (it
            // owns what the analysis does not model, as a derived clone
            // does): moved into the arena, reached by address.
            if types.structs.get(s).is_none_or(|d| d.lifetimes > 0) {
                return None;
            }
            let pt = ptr_valty();
            (quote!(&[#pt]), quote!(__b[0] = #rt::heap::arena_alloc(__r) as usize as u64;))
        } else if let Some((_, fields)) = option_of_scalar_struct(rty, types) {
            // `Option` of a struct of scalars (a map's old value, a
            // handle): the tag, then the fields.
            let vts = fields.iter().map(|(_, sc)| sc_valty(*sc));
            let u32t = u32_valty();
            let writes = fields.iter().enumerate().map(|(k, (n, sc))| {
                let (m, at) = (member(n), k + 1);
                let w = to_word(*sc, quote!(__s.#m));
                quote!(__b[#at] = #w;)
            });
            (
                quote!(&[#u32t, #(#vts),*]),
                quote!(match __r {
                    ::core::option::Option::Some(__s) => { __b[0] = 1; #(#writes)* }
                    ::core::option::Option::None => __b[0] = 0,
                }),
            )
        } else if matches!(rty, Ty::Ref { mutable: false, to } if matches!(&**to, Ty::Slice(e) if scalar(e).is_some()))
        {
            // A slice of scalars into memory the call's arguments reach
            // (`text.as_bytes()`): its address and length.
            let (pt, ut) = (ptr_valty(), u64_valty());
            (quote!(&[#pt, #ut]), quote!(__b[0] = __r.as_ptr() as usize as u64; __b[1] = __r.len() as u64;))
        } else if let Ty::Ref { mutable, to } = rty {
            // A reference into the interpreter's objects (`heap.get_mut(r)`):
            // its address.
            if matches!(**to, Ty::Slice(_) | Ty::Text | Ty::Str | Ty::Foreign(_) | Ty::Param(_)) {
                return None;
            }
            let (pt, t) = (ptr_valty(), rust_ty(to, None));
            let ptr = if *mutable { quote!(*mut #t) } else { quote!(*const #t) };
            (quote!(&[#pt]), quote!(__b[0] = __r as #ptr as usize as u64;))
        } else if is_enum(rty) && rebuildable(rty, types) {
            let (flat, _, tys) = enum_helpers(rty);
            self.uses_enum(rty);
            // A value owning strings gives them to the arena: its own
            // words would name strings dropped with it.
            let flat = if plain(rty, types) {
                quote!(#flat(&__r))
            } else {
                let o = flat_owned_fn(rty);
                quote!(#o(__r))
            };
            (quote!(&#tys()), quote!(let __w = #flat; __b[..__w.len()].copy_from_slice(&__w);))
        } else {
            return None;
        })
    }

    /// As [`Gen::result_words`], for a call that gives `&T` where the flow
    /// graph names `T` (a heap's `get(r) -> &Obj`; only values are named
    /// so, see `FnDef::ret_shared`): a scalar read out; an enum's words as
    /// it lies in place (an object it holds by its address there, see
    /// `repr::payload_slots`). Nothing is moved or owned.
    fn shared_result_words(&mut self, rty: &Ty) -> Option<(TokenStream, TokenStream)> {
        let types = self.cg.types();
        Some(if let Some(sc) = scalar(rty) {
            let vt = sc_valty(sc);
            let w = to_word(sc, quote!(*__r));
            (quote!(&[#vt]), quote!(__b[0] = #w;))
        } else if is_enum(rty) && slots(rty, types, 0).is_some() {
            let (flat, _, tys) = enum_helpers(rty);
            self.uses_enum(rty);
            (quote!(&#tys()), quote!(let __w = #flat(__r); __b[..__w.len()].copy_from_slice(&__w);))
        } else {
            return None;
        })
    }

    /// A call of a pure function outside the module (`OpKind::CallPure`)
    /// whose arguments are red: a residual call, run while compiling
    /// instead where its arguments are values (scalars, plain enums) that
    /// are all constants when it is met, as a constant red box is folded
    /// (`Op::from_byte(byte)` on a byte of promoted code: the `match` on
    /// its result then folds to one arm, where a residual call made every
    /// case dispatch on every operation).
    pub(crate) fn pure_residual_call(&mut self, fi: usize, r: Var, name: &str, args: &[Value]) -> TokenStream {
        let types = self.cg.types();
        let value = |t: &Ty| scalar(t).is_some() || (is_enum(t) && plain(t, types));
        let rty = self.fns[fi].graph.var(r).ty.clone();
        let folds = (rty == Ty::Unit || value(&rty)) && args.iter().all(|a| value(&self.value_ty(fi, a)));
        self.residual_call(fi, r, name, args, None, folds)
    }

    /// A residual call of a function outside the analysis, through a
    /// callback; with `format`, the callback runs that `print!`-like macro
    /// (name, format string, argument names) on the arguments instead.
    pub(crate) fn opaque_call(
        &mut self,
        fi: usize,
        r: Var,
        name: &str,
        args: &[Value],
        format: Option<(&String, &String, &Vec<Option<String>>)>,
    ) -> TokenStream {
        self.residual_call(fi, r, name, args, format, false)
    }

    /// [`Gen::opaque_call`]; where `folds` (a pure function's call on
    /// values, see [`Gen::pure_residual_call`]), run while compiling
    /// instead where its arguments are constants then.
    fn residual_call(
        &mut self,
        fi: usize,
        r: Var,
        name: &str,
        args: &[Value],
        format: Option<(&String, &String, &Vec<Option<String>>)>,
        folds: bool,
    ) -> TokenStream {
        let rt = rt();
        let types = self.cg.types();
        let f = self.fns[fi];
        let (direct, portal_check) = self.portal_call(fi, name, args);
        let mut obj = ObjectCall::of(name);
        let ArgWords { code: mut arg_code, reads, mut starts, mut at } =
            match self.residual_args(fi, name, args, obj.as_mut(), format.is_some()) {
                Ok(words) => words,
                Err(declined) => return declined,
            };
        let rty = f.graph.var(r).ty.clone();
        // Read out by copy (see `object_method`): only a plain value may be.
        let by_copy = |v: &Ty| {
            let handle = scalar_struct(v, types).is_some_and(|(s, _)| types.structs.get(&s).is_some_and(|d| d.copy));
            scalar(v).is_some() || (is_enum(v) && plain(v, types)) || handle
        };
        if let (Some(o), Ty::Option(v)) = (obj.as_mut().filter(|o| o.copied), &rty) {
            // An enum owning strings (`Value::Str(String)`): Rust's clone
            // of it, as the interpreter's `.cloned()` or `v.clone()` made.
            o.cloned = is_enum(v) && rebuildable(v, types) && !plain(v, types);
            if !by_copy(v) && !o.cloned {
                return self.decline(&format!("a value of type `{v}` read out of a map by copy"));
            }
        }
        let shared = obj.as_ref().is_some_and(|o| o.shared);
        let Some((rets, write)) = self.result_words(&rty, shared) else {
            return self.decline(&format!("the result type `{rty}` of a residual call of `{name}`"));
        };
        // The direct entry's address follows the arguments.
        let entry_at = at;
        starts.push(at);
        if direct.is_some() {
            arg_code.push(quote!(__args.push(#rt::RedBox::u64(__entry));));
            at += 1;
        }
        let result_words = match (scalar_struct(&rty, types), option_of_scalar_struct(&rty, types)) {
            (Some((_, f)), _) => f.len(),
            (_, Some((_, f))) => 1 + f.len(),
            _ => slots(&rty, types, 0).map_or(1, |s| s.len()),
        };
        let width = at.max(result_words).max(1);
        let dest_ty = args.first().map(|a| self.value_ty(fi, a));
        let call = match format {
            None if direct.is_some() => {
                let path = rust_path(name);
                let direct_fn = format_ident!("__direct_{}", name);
                quote!(if __b[#entry_at] == 0 { #path(#(#reads),*) } else { #direct_fn(__b[#entry_at], #(#reads),*) })
            }
            None => match &obj {
                Some(o) => {
                    let (call, then) = (object_call(o, &reads, args), o.then());
                    match &rty {
                        // A method known only by its use may give the value
                        // or a reference to it (`if let Some(&v) = x.m()`).
                        Ty::Option(v) if !o.copied && !o.shared && by_copy(v) => {
                            let vt = rust_ty(v, None);
                            quote!(#rt::heap::OptionRead::<#vt>::read_out(#call))
                        }
                        _ => quote!(#call #then),
                    }
                }
                None => {
                    let path = rust_path(name);
                    quote!(#path(#(#reads),*))
                }
            },
            Some((mac, template, names)) => {
                let writes = mac == "write" || mac == "writeln";
                let mac = format_ident!("{}", mac);
                // `write!` into a `Vec<u8>`: its destination comes first.
                let (dest, reads) = if writes { (reads.first(), &reads[1..]) } else { (None, &reads[..]) };
                let args = reads.iter().zip(&names[writes as usize..]).map(|(x, n)| match n {
                    Some(n) => {
                        let n = format_ident!("{}", n);
                        quote!(#n = #x)
                    }
                    None => quote!(#x),
                });
                let text_arg = reads.len() == 1 && dest_ty == Some(Ty::Str);
                let into_string = matches!(dest_ty, Some(Ty::Ref { to, .. }) if *to == Ty::Str);
                let asserts = mac == "assert_eq" || mac == "assert_ne";
                match dest {
                    // On the failing branch of `assert_eq!(a, b, ..)`: the
                    // macro again, with the operands' values, panics as
                    // Rust's own does.
                    _ if asserts && reads.len() >= 2 => {
                        let (l, r, rest) = (&reads[0], &reads[1], args.skip(2));
                        if template.is_empty() {
                            quote!(::std::#mac!(#l, #r))
                        } else {
                            quote!(::std::#mac!(#l, #r, #template, #(#rest),*))
                        }
                    }
                    Some(d) if into_string => quote!({
                        use ::std::fmt::Write as _;
                        ::std::#mac!(#d, #template, #(#args),*).expect("writing into a String cannot fail")
                    }),
                    Some(d) => quote!({
                        use ::std::io::Write as _;
                        ::std::#mac!(#d, #template, #(#args),*).expect("writing into a Vec<u8> cannot fail")
                    }),
                    // `format!("{}", s)` of a `String` (its `clone`, as
                    // lowered): a copy of its bytes, without the formatting
                    // machinery (a `String`'s address is read as a `&String`).
                    None if mac == "format" && template == "{}" && names.first() == Some(&None) && text_arg => {
                        let x = &reads[0];
                        quote!(::std::string::String::clone(#x))
                    }
                    None => quote!(::std::#mac!(#template, #(#args),*)),
                }
            }
        };
        // A generic function's type arguments are inferred from its result.
        // So is a constructor's (`HashMap::new()`), of a type without lifetimes.
        let generic = types.generic_fns.contains(name)
            || name == hint_annotator::flowgraph::BOX_FROM
            || matches!(rty, Ty::Map(..) | Ty::Vec(_));
        let ascribed = if generic { Some(rust_ty(&rty, None)) } else { None };
        let ascribed = ascribed.map(|t| quote!(: #t));
        let cb = self.callback(
            width,
            quote! {
                let __r #ascribed = #call;
                #write
            },
        );
        let call_name = if direct.is_some() { format!("{name} (direct)") } else { name.to_string() };
        let fast = self.fast_path(direct.is_some(), name, &rty, &starts);
        let bind_result = match self.call_result(fi, r, &rty) {
            Ok(bind) => bind,
            Err(declined) => return declined,
        };
        let folding = folds && fast.is_none() && format.is_none() && obj.is_none();
        let red_call = match fast {
            Some(fast) => quote! {{
                let mut __fast: ::std::vec::Vec<#rt::RedBox> = ::std::vec::Vec::new();
                #(#fast)*
                __c.b.red_call_direct(__entry, &__fast, #cb, #call_name, &__args, #rets)
            }},
            None if folding => quote!(__c.b.red_call_folding(#cb, #call_name, &__args, #rets)),
            None => quote!(__c.b.red_call(#cb, #call_name, &__args, #rets)),
        };
        // The callee may have written any object, unless it ran now (a pure
        // function, folded).
        let (results, forget) = if folding {
            (
                quote!((__v, __folded)),
                quote!(if !__folded {
                    __st.forget_fields();
                }),
            )
        } else {
            (quote!(__v), quote!(__st.forget_fields();))
        };
        quote! {
            #portal_check
            let #results = {
                let mut __args = ::std::vec::Vec::new();
                #(#arg_code)*
                #red_call
            };
            #forget
            #bind_result
        }
    }

    /// The words of a residual call's arguments: code pushing them onto
    /// `__args`, the callback's reads of them (from `__b`), where each
    /// starts, and how many; for an object's method (`obj`), an argument
    /// read as a reference already is marked so. `Err` is the decline for an
    /// argument it cannot pass.
    fn residual_args(
        &mut self,
        fi: usize,
        name: &str,
        args: &[Value],
        mut obj: Option<&mut ObjectCall>,
        format: bool,
    ) -> Result<ArgWords, TokenStream> {
        let rt = rt();
        let types = self.cg.types();
        let mut arg_code = vec![];
        let mut reads = vec![];
        let mut at = 0usize;
        // Where each argument's words start in the callback's arguments.
        let mut starts = vec![];
        for (i, a) in args.iter().enumerate() {
            starts.push(at);
            let ty = self.value_ty(fi, a);
            let by_ref = obj.as_ref().is_some_and(|o| o.by_ref(i)) || self.lent(name, i);
            if let (Some(_), 0) = (&obj, i) {
                // The receiver of an opaque object's method: its address.
                let Some(x) = self.operand(fi, a, &Repr::RPtr) else { return Err(self.decline("a receiver")) };
                arg_code.push(quote!(__args.push(#x);));
                let t = rust_ty(if let Ty::Ref { to, .. } = &ty { to } else { &ty }, None);
                reads.push(quote!((__b[#at] as usize as *mut #t)));
                at += 1;
            } else if let Some(sc) = scalar(&ty) {
                let Some(x) = self.operand(fi, a, &Repr::R(sc)) else { return Err(self.decline("an argument")) };
                arg_code.push(quote!(__args.push(#x);));
                reads.push(from_word(sc, quote!(__b[#at])));
                at += 1;
            } else if is_enum(&ty) && (by_ref || format) && !plain(&ty, types) && rebuildable(&ty, types) {
                // A value owning strings or `Rc`s lent by `&` (or formatted): a view of
                // its words, which the call never drops.
                let n = slots(&ty, types, 0).map_or(0, |s| s.len());
                let Some(x) = self.enum_words(fi, a, &ty, n) else { return Err(self.decline("an argument")) };
                self.uses_enum(&ty);
                let view = view_fn(&ty);
                arg_code.push(quote!(__args.extend_from_slice(&#x);));
                let end = at + n;
                reads.push(quote!(&*#view(&__b[#at..#end])));
                if let Some(o) = obj.as_deref_mut() {
                    o.read_as_reference(i);
                }
                at += n;
            } else if is_enum(&ty) && (plain(&ty, types) || (!by_ref && rebuildable(&ty, types))) {
                // A plain enum's words, or a value owning `String`s moved
                // into the call (Rust moved it: it is not used again).
                let n = slots(&ty, types, 0).map_or(0, |s| s.len());
                let Some(x) = self.enum_words(fi, a, &ty, n) else { return Err(self.decline("an argument")) };
                let (_, unflat, _) = enum_helpers(&ty);
                arg_code.push(quote!(__args.extend_from_slice(&#x);));
                let end = at + n;
                reads.push(quote!(#unflat(&__b[#at..#end])));
                at += n;
            } else if let (Ty::Ref { mutable: false, to }, from @ Repr::GSlice(_)) = (&ty, self.value_repr(fi, a)) {
                // A green slice (program text, a table of functions): its
                // address and length, constants of the residual call (code
                // runs only on green data at the addresses it was compiled
                // for).
                let Ty::Slice(elem) = &**to else { return Err(self.decline("a slice argument to a residual call")) };
                let Some(x) = self.operand(fi, a, &from) else { return Err(self.decline("an argument")) };
                arg_code.push(quote! {
                    __args.push(#rt::RedBox::u64(#x.as_ptr() as usize as u64));
                    __args.push(#rt::RedBox::u64(#x.len() as u64));
                });
                let t = rust_ty(elem, None);
                let next = at + 1;
                // SAFETY: the address and length of a slice the compiler
                // held, which outlives the code (see above).
                reads.push(quote!(unsafe { ::core::slice::from_raw_parts(__b[#at] as usize as *const #t, __b[#next] as usize) }));
                at += 2;
            } else if ty == Ty::Str {
                // A `String`: its address. Formatted, and passed by `&` to
                // an object's method, it is read by reference; passed as
                // its bytes or text (`s.as_bytes()`), so; passed by value,
                // it is moved out of the arena where residual code made it
                // (Rust's move leaves the variable dead), else copied (a
                // place of the interpreter's, which keeps its own).
                let Some(x) = self.operand(fi, a, &Repr::RPtr) else { return Err(self.decline("an argument")) };
                arg_code.push(quote!(__args.push(#x);));
                let view = obj.as_ref().and_then(|o| o.views.get(i.checked_sub(1)?).cloned().flatten());
                reads.push(if let Some(view) = view {
                    quote!(unsafe { (*(__b[#at] as usize as *const ::std::string::String)).#view() })
                } else if format || by_ref {
                    quote!(unsafe { &*(__b[#at] as usize as *const ::std::string::String) })
                } else {
                    quote!(unsafe { #rt::heap::take_string(__b[#at]) })
                });
                if let Some(o) = obj.as_deref_mut() {
                    o.read_as_reference(i);
                }
                at += 1;
            } else if let Some((sname, fields, shared)) = scalar_struct_arg(&ty, types) {
                // A struct of scalars (a handle), or a shared reference to
                // one: its fields' words, and the struct made again (by `&`,
                // a temporary of the call): a virtual object stays virtual.
                let by_ref = by_ref || shared;
                if !by_ref && !types.structs.get(&sname).is_some_and(|d| d.copy) {
                    return Err(self.decline(&format!("a `{sname}` moved into a residual call of `{name}`")));
                }
                let sty = Ty::Struct(sname.clone());
                let Some(words) = self.scalar_struct_words(fi, a, &sty) else {
                    return Err(self.decline("an argument"));
                };
                arg_code.push(quote!(__args.extend_from_slice(&#words);));
                let t = rust_ty(&sty, None);
                let inits = fields.iter().enumerate().map(|(k, (n, sc))| {
                    let (m, w) = (member(n), at + k);
                    let back = from_word(*sc, quote!(__b[#w]));
                    quote!(#m: #back)
                });
                reads.push(if by_ref { quote!(&#t { #(#inits),* }) } else { quote!(#t { #(#inits),* }) });
                if let Some(o) = obj.as_deref_mut() {
                    o.read_as_reference(i);
                }
                at += fields.len();
            } else if let Ty::Struct(sname) = &ty {
                // A struct of the module passed by value: its address. By
                // `&` to an object's method (a map's key), read by
                // reference; else copied, which only a `Copy` struct may be.
                if !by_ref && !types.structs.get(sname).is_some_and(|d| d.copy) {
                    return Err(self.decline(&format!("a `{sname}` moved into a residual call of `{name}`")));
                }
                let Some(x) = self.operand(fi, a, &Repr::RPtr) else { return Err(self.decline("an argument")) };
                arg_code.push(quote!(__args.push(#x);));
                let t = rust_ty(&ty, None);
                reads.push(if by_ref {
                    quote!(unsafe { &*(__b[#at] as usize as *const #t) })
                } else {
                    quote!(unsafe { *(__b[#at] as usize as *const #t) })
                });
                if let Some(o) = obj.as_deref_mut() {
                    o.read_as_reference(i);
                }
                at += 1;
            } else if let (Ty::Text | Ty::Ref { .. }, Repr::RSlice) = (&ty, self.value_repr(fi, a)) {
                // A slice or text known at run time (`&str`, or the `str`
                // read through it to be formatted): its address and length.
                let Some(x) = self.operand(fi, a, &Repr::RSlice) else { return Err(self.decline("an argument")) };
                arg_code.push(quote!(__args.extend_from_slice(&#x);));
                let next = at + 1;
                // SAFETY (of each read): the address and length of a live
                // slice or `&str` of the interpreter's, as residual code
                // holds them.
                reads.push(match &ty {
                    Ty::Ref { to, .. } if **to != Ty::Text => {
                        let (Ty::Ref { mutable, .. }, Ty::Slice(elem)) = (&ty, &**to) else {
                            return Err(self.decline("a slice argument to a residual call"));
                        };
                        let t = rust_ty(elem, None);
                        if *mutable {
                            quote!(unsafe { ::core::slice::from_raw_parts_mut(__b[#at] as usize as *mut #t, __b[#next] as usize) })
                        } else {
                            quote!(unsafe { ::core::slice::from_raw_parts(__b[#at] as usize as *const #t, __b[#next] as usize) })
                        }
                    }
                    _ => quote!(unsafe {
                        ::core::str::from_utf8_unchecked(::core::slice::from_raw_parts(
                            __b[#at] as usize as *const u8,
                            __b[#next] as usize,
                        ))
                    }),
                });
                at += 2;
            } else if let Some(t) = shared_arg(&ty) {
                // An `Rc` or `Arc`: its address, read as the callee takes
                // it (formatted, by reference).
                let Some(x) = self.operand(fi, a, &Repr::RPtr) else { return Err(self.decline("an argument")) };
                arg_code.push(quote!(__args.push(#x);));
                let reference = format || by_ref || matches!(ty, Ty::Ref { .. });
                let as_taken = obj.is_some() || name.starts_with("Rc::") || name.starts_with("Arc::");
                reads.push(shared_read(t, at, reference, as_taken));
                if let Some(o) = obj.as_deref_mut() {
                    o.read_as_reference(i);
                }
                at += 1;
            } else if let Ty::Ref { mutable, to } = &ty {
                if matches!(**to, Ty::Slice(_) | Ty::Text) {
                    return Err(self.decline("a slice argument known only at run time to a residual call"));
                }
                let Some(x) = self.operand(fi, a, &Repr::RPtr) else { return Err(self.decline("an argument")) };
                arg_code.push(quote!(__args.push(#x);));
                let t = rust_ty(to, None);
                reads.push(if *mutable {
                    quote!(unsafe { &mut *(__b[#at] as usize as *mut #t) })
                } else {
                    quote!(unsafe { &*(__b[#at] as usize as *const #t) })
                });
                // Already a reference where a method takes one (a map's key).
                if let Some(o) = obj.as_deref_mut() {
                    o.read_as_reference(i);
                }
                at += 1;
            } else {
                return Err(self.decline(&format!("an argument of type `{ty}` to a residual call of `{name}`")));
            }
        }
        Ok(ArgWords { code: arg_code, reads, starts, at })
    }

    /// Whether argument `i` of a residual call of `name` is lent by `&`
    /// where the analysis holds it as a value: a parameter an outlined
    /// statement takes so (`Outlined::params`: a value owning strings or
    /// `Rc`s), or one a function of the module declares a shared reference.
    fn lent(&self, name: &str, i: usize) -> bool {
        let outlined = self
            .fns
            .iter()
            .flat_map(|f| &f.graph.outlined)
            .find(|o| o.name == name)
            .is_some_and(|o| matches!(o.params.get(i), Some((_, Ty::Ref { mutable: false, to })) if is_enum(to)));
        outlined || self.cg.types().shared_params.get(name).is_some_and(|p| p.get(i) == Some(&true))
    }

    /// The continuations of the inlined calls of function `fi`: each point,
    /// the call's result and the call.
    pub(crate) fn continuations_of(&self, fi: usize) -> Vec<(usize, Var, hint_annotator::flowgraph::Op)> {
        let mut out = vec![];
        for (p, pt) in self.points.iter().enumerate() {
            let Some(r) = pt.ret else { continue };
            let op = self.fns[pt.f].graph.graph[pt.block].ops[pt.op - 1].clone();
            if self.inlined_callee(pt.f, r, &op.kind) == Some(fi) {
                out.push((p, r, op));
            }
        }
        out
    }

    /// Statements pushing onto `__fast` the inputs of portal `ci`'s code
    /// specialized from its start (its red parameters, in the order of its
    /// entry: the live variables there), taken from the callback's
    /// arguments `__args` (argument `k`'s words start at `starts[k]`, up to
    /// `starts[k + 1]`), so that each is converted once; `None` where one
    /// is not passed as the entry takes it.
    pub(crate) fn direct_inputs(&self, ci: usize, starts: &[usize]) -> Option<Vec<TokenStream>> {
        let callee = self.fns[ci];
        let start = *self.point_ids.get(&(ci, callee.graph.start, 0))?;
        let params = callee.graph.params();
        let mut out = vec![];
        for v in &self.points[start].live {
            let k = params.iter().position(|p| p == v)?;
            if callee.color(*v) == Color::Green {
                continue;
            }
            let (from, to) = (*starts.get(k)?, *starts.get(k + 1)?);
            let words = match self.repr(ci, *v) {
                Repr::Unit => 0,
                Repr::R(_)
                | Repr::RPtr
                | Repr::VList(_)
                | Repr::VEList(..)
                | Repr::VPtr
                | Repr::VDict(..)
                | Repr::VOList(_) => 1,
                Repr::Enum(_, n) => n,
                Repr::RSlice => 2,
                _ => return None,
            };
            if to - from != words {
                return None;
            }
            out.push(quote!(__fast.extend_from_slice(&__args[#from..#to]);));
        }
        Some(out)
    }

    /// A call of a portal (an interpreter whose calls recurse in Rust): the
    /// values of its green arguments where they are all known (for a direct
    /// entry), and the check that declines the call in a portal's
    /// compilation where there is no entry to call.
    fn portal_call(&mut self, fi: usize, name: &str, args: &[Value]) -> (Option<Vec<TokenStream>>, TokenStream) {
        // A call of a portal (an interpreter whose calls recurse in Rust):
        // with its green arguments known, a direct call of its code
        // specialized to them (see the module doc); else it would enter
        // through the portal's hook at every call, which costs more than
        // interpreting the call (PERFORMANCE.md), and a portal's compilation
        // declines it (`jit::specialize` makes the residual call). Here,
        // the values of the green arguments, for the direct entry.
        let direct = match self.fn_ids.get(name) {
            Some(&ci) if self.direct_portals.contains(name) => {
                let callee = self.fns[ci];
                let mut greens = Some(vec![]);
                for (k, a) in args.iter().enumerate() {
                    let Some(p) = callee.graph.params().get(k) else {
                        greens = None;
                        break;
                    };
                    if callee.color(*p) != Color::Green {
                        continue;
                    }
                    let from = self.value_repr(fi, a);
                    let e = match from {
                        Repr::G(_) | Repr::GRef(_) | Repr::GSlice(_) => self.operand(fi, a, &from),
                        _ => None,
                    };
                    match (e, &mut greens) {
                        (Some(e), Some(g)) => g.push(e),
                        _ => {
                            greens = None;
                            break;
                        }
                    }
                }
                greens
            }
            _ => None,
        };
        let why = format!(
            "a call of the portal `{name}` from compiled code: it would enter through the portal's hook at every call, which costs more than interpreting the call"
        );
        let portal_check = match self.fn_ids.get(name) {
            Some(&ci) if self.fns[ci].is_portal() && direct.is_some() => {
                // Where the entry table is full, as below.
                let entry_fn = format_ident!("__direct_entry_{}", name);
                let greens = direct.as_ref().expect("matched");
                quote! {
                    let __entry: u64 = #entry_fn(#(#greens),*);
                    if __entry == 0 && __c.for_portal() { __c.decline(#why); break 'path None; }
                }
            }
            Some(&ci) if self.fns[ci].is_portal() => {
                quote!(if __c.for_portal() { __c.decline(#why); break 'path None; })
            }
            _ => quote!(),
        };
        (direct, portal_check)
    }

    /// Binds the result of a residual call (its words, `__v`) to `r`, or
    /// declines a result it cannot hold.
    fn call_result(&mut self, fi: usize, r: Var, rty: &Ty) -> Result<TokenStream, TokenStream> {
        let rt = rt();
        Ok(match self.repr(fi, r) {
            Repr::Unit => quote!(),
            Repr::R(_) => {
                let id = v_ident(r);
                quote!(let #id = __v[0];)
            }
            Repr::Enum(_, n) => {
                let id = v_ident(r);
                quote!(let #id: [#rt::RedBox; #n] = #rt::redbox::first_n(&__v);)
            }
            // A `String`, or a struct or an owned object the analysis does
            // not model in the arena (see `result_words`).
            Repr::RPtr
                if *rty == Ty::Str
                    || matches!(rty, Ty::Struct(_) | Ty::Ref { .. } | Ty::Array(..) | Ty::Map(..) | Ty::Vec(_))
                    || matches!(rty, Ty::Foreign(t) if hint_annotator::types::owned_opaque(t)) =>
            {
                self.bind(fi, r, quote!(__v[0]))
            }
            Repr::VPtr if scalar_struct(rty, self.cg.types()).is_some() => {
                // A struct of scalars, a virtual object of the words given.
                let (s, fields) = scalar_struct(rty, self.cg.types()).expect("checked");
                let words = (0..fields.len()).map(|k| quote!(__v[#k]));
                self.vstructs.insert(s.clone());
                let desc = format_ident!("__VDESC_{}", s);
                self.bind(fi, r, quote!(__st.heap.alloc(&#desc, ::std::vec![#(#words),*], ::std::vec![])))
            }
            Repr::VOpt if option_of_scalar_struct(rty, self.cg.types()).is_some() => {
                // The tag, and a virtual object of the fields (unused
                // where the tag says `None`).
                let (s, fields) = option_of_scalar_struct(rty, self.cg.types()).expect("checked");
                let words = (1..=fields.len()).map(|k| quote!(__v[#k]));
                self.vstructs.insert(s.clone());
                let desc = format_ident!("__VDESC_{}", s);
                self.bind(fi, r, quote!((__v[0], __st.heap.alloc(&#desc, ::std::vec![#(#words),*], ::std::vec![]))))
            }
            Repr::VPtr if matches!(rty, Ty::Struct(_) | Ty::Ref { .. }) => {
                // An object in the arena (see `result_words`).
                self.bind(fi, r, quote!(#rt::VPtr::Real(__v[0])))
            }
            // A `Vec` of scalars in the arena (see `result_words`).
            Repr::VList(_) if matches!(rty, Ty::Vec(_)) => self.bind(fi, r, quote!(#rt::VList::Real(__v[0]))),
            // A slice: its address and length.
            Repr::RSlice => self.bind(fi, r, quote!([__v[0], __v[1]])),
            _ => return Err(self.decline("the result of this residual call")),
        })
    }

    /// The inputs of the callee's specialized code, for the direct call's
    /// fast path (a call of that code from residual code): its red
    /// parameters, in the order its entry takes them. Only for results that
    /// own nothing (the arena is freed after the call).
    fn fast_path(&mut self, direct: bool, name: &str, rty: &Ty, starts: &[usize]) -> Option<Vec<TokenStream>> {
        let types = self.cg.types();
        match (direct, self.fn_ids.get(name)) {
            (true, Some(&ci)) if *rty == Ty::Unit || scalar(rty).is_some() || (is_enum(rty) && plain(rty, types)) => {
                self.direct_inputs(ci, starts)
            }
            _ => None,
        }
    }
}

/// What [`Gen::residual_args`] gives: code pushing the words, the
/// callback's reads, where each argument starts, how many words.
struct ArgWords {
    code: Vec<TokenStream>,
    reads: Vec<TokenStream>,
    starts: Vec<usize>,
    at: usize,
}

/// A residual call of an opaque object's method, as its name in the flow
/// graph says: `.m(&,,as_bytes).copied()` (an empty `m` calls the object).
struct ObjectCall {
    method: String,
    /// Per argument after the receiver: whether the interpreter passed it
    /// by `&`; cleared where the callback's read is a reference already.
    by_ref: Vec<bool>,
    /// Per argument after the receiver: a `String` passed as its bytes or
    /// text (`as_bytes`, `as_str`).
    views: Vec<Option<Ident>>,
    /// The result is an `Option<&V>` read out by copy (`map.get(&k)`).
    copied: bool,
    /// Read out by copy, the value is cloned (it owns strings).
    cloned: bool,
    /// The result is a shared reference to what the flow graph names as
    /// its type (`&Obj` as `Obj`): read in place (see `result_words`).
    shared: bool,
}

impl ObjectCall {
    /// The object call a residual call's name is, if it is one.
    fn of(name: &str) -> Option<ObjectCall> {
        let m = name.strip_prefix('.')?;
        let (method, rest) = m.split_once('(').unwrap_or((m, ")"));
        let (shape, then) = rest.split_once(')').unwrap_or((rest, ""));
        let parts: Vec<&str> = shape.split(',').collect();
        Some(ObjectCall {
            method: method.to_string(),
            by_ref: parts.iter().map(|s| *s == "&").collect(),
            views: parts.iter().map(|s| matches!(*s, "as_bytes" | "as_str").then(|| format_ident!("{}", s))).collect(),
            copied: then == ".copied()",
            cloned: false,
            shared: then == "&",
        })
    }

    /// Whether argument `i` (the receiver is 0) was passed by `&`.
    fn by_ref(&self, i: usize) -> bool {
        i.checked_sub(1).and_then(|k| self.by_ref.get(k)).copied().unwrap_or(false)
    }

    /// Marks argument `i`'s read as a reference already.
    fn read_as_reference(&mut self, i: usize) {
        if let Some(b) = i.checked_sub(1).and_then(|k| self.by_ref.get_mut(k)) {
            *b = false;
        }
    }

    /// What follows the call: a value read out of a map by copy is a plain
    /// value (scalars, enums of them), whose bits are a copy whether or not
    /// its type is `Copy` (the interpreter cloned it).
    fn then(&self) -> TokenStream {
        // SAFETY: see above; the map keeps its own.
        if self.cloned {
            quote!(.map(::core::clone::Clone::clone))
        } else if self.copied {
            quote!(.map(|__v| unsafe { ::core::ptr::read(__v) }))
        } else {
            quote!()
        }
    }
}

/// The call of an opaque object's method (or of the object itself, where
/// the method is empty) with the callback's `reads` of `args`, the receiver's
/// address first: constants as literals, typed by the method as in the
/// interpreter's own call, and values the interpreter passed by reference
/// by reference.
fn object_call(obj: &ObjectCall, reads: &[TokenStream], args: &[Value]) -> TokenStream {
    let rest: Vec<TokenStream> = reads[1..]
        .iter()
        .zip(&args[1..])
        .enumerate()
        .map(|(i, (x, a))| {
            let x = match a {
                Value::Const(Const::Int(v, _)) => {
                    let l = proc_macro2::Literal::u128_unsuffixed(v.unsigned_abs());
                    if *v < 0 {
                        quote!(-#l)
                    } else {
                        quote!(#l)
                    }
                }
                _ => x.clone(),
            };
            if obj.by_ref(i + 1) {
                quote!(&#x)
            } else {
                x
            }
        })
        .collect();
    let recv = &reads[0];
    if obj.method.is_empty() {
        // SAFETY: as for a method, below.
        quote!(unsafe { (*#recv)(#(#rest),*) })
    } else {
        let m = format_ident!("{}", obj.method);
        // SAFETY: the address of a live object of the interpreter's: the
        // method borrows it (shared or mutable, as the method takes it) as
        // the interpreter's own call did.
        quote!(unsafe { (*#recv).#m(#(#rest),*) })
    }
}

/// `Option<S>` where `S` is a struct of scalars: `S`'s name and fields.
fn option_of_scalar_struct(ty: &Ty, types: &hint_annotator::ModuleTypes) -> Option<(String, Vec<(String, Sc)>)> {
    let Ty::Option(e) = ty else { return None };
    scalar_struct(e, types)
}

/// A struct of scalars, or a shared reference to one: its name, its fields,
/// and whether it is the reference.
fn scalar_struct_arg(ty: &Ty, types: &hint_annotator::ModuleTypes) -> Option<(String, Vec<(String, Sc)>, bool)> {
    match ty {
        Ty::Ref { mutable: false, to } => scalar_struct(to, types).map(|(s, f)| (s, f, true)),
        t => scalar_struct(t, types).map(|(s, f)| (s, f, false)),
    }
}

/// The read of an `Rc` or `Arc` of type `t` from its address in word
/// `at` of a residual call's arguments: by `&` where it is `reference`
/// (formatted, passed as `&x`, a parameter declared `&Rc<T>`); else, where
/// the callee's parameter types are not a bare type parameter (`as_taken`:
/// a method's, a function of `Rc`'s), as its type says, a reference or its
/// own (`heap::SharedArg`); else as its own (`heap::take_or_clone`), so no
/// inference is asked of Rust for a generic callee (`drop(x)`).
fn shared_read(t: &Ty, at: usize, reference: bool, as_taken: bool) -> TokenStream {
    let (rt, t) = (rt(), rust_ty(t, None));
    match (reference, as_taken) {
        (true, _) => quote!(unsafe { &*(__b[#at] as usize as *const #t) }),
        (false, true) => quote!(unsafe { <_ as #rt::heap::SharedArg<#t>>::from_addr(__b[#at]) }),
        (false, false) => quote!(unsafe { #rt::heap::take_or_clone::<#t>(__b[#at]) }),
    }
}

/// The `Rc` or `Arc` type an argument of type `ty` (or a shared reference
/// to one) holds, if it is one (`repr::shared_object`).
fn shared_arg(ty: &Ty) -> Option<&Ty> {
    match ty {
        Ty::Ref { mutable: false, to } if shared_object(to) => Some(to),
        t if shared_object(t) => Some(t),
        _ => None,
    }
}

//! The frames of a generating extension: pushing, linking and going to a
//! point, the code of each point, exits and returns, and the extension as a
//! whole (its frame enum, `__run`, the deliver functions) (methods of
//! `timeshift::Gen`).

use std::collections::HashMap;

use hint_annotator::flowgraph::{Exit, Value, Var};
use hint_annotator::types::Ty;
use hint_annotator::Color;
use petgraph::stable_graph::NodeIndex;
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use crate::repr::*;
use crate::timeshift::*;

impl<'g> Gen<'g> {
    /// A frame for resume point `p` built from the locals in scope, with
    /// `overrides` for some of its variables (input arguments, parameters).
    pub(crate) fn frame(&self, p: usize, overrides: &HashMap<Var, TokenStream>) -> TokenStream {
        let pt = &self.points[p];
        let vname = format_ident!("R{}", p);
        let mut fields = vec![];
        for v in &pt.live {
            let id = v_ident(*v);
            match overrides.get(v) {
                Some(e) => fields.push(quote!(#id: #e)),
                // A list may be needed again after this frame is made (the
                // other side of a split): the frame gets its own copy.
                None if is_container(&self.repr(pt.f, *v)) => fields.push(quote!(#id: #id.clone())),
                None => fields.push(quote!(#id)),
            }
        }
        if pt.ret.is_some() {
            fields.push(quote!(__ret: None));
        }
        if pt.op == 0 && self.joins[pt.f].contains(&pt.block) {
            fields.push(quote!(__merged: false));
        }
        quote!(__Frame::#vname { #(#fields),* })
    }

    /// The frame for entering `target` along a link carrying `args`, and
    /// the statements converting the link's values first.
    pub(crate) fn link_frame(
        &self,
        fi: usize,
        target: NodeIndex,
        args: &[Value],
    ) -> Result<(Vec<TokenStream>, TokenStream), String> {
        let f = self.fns[fi];
        let mut lets = vec![];
        let mut ov = HashMap::new();
        for (k, ia) in f.graph.graph[target].inputargs.iter().enumerate() {
            let to = self.repr(fi, *ia);
            let e = self.operand(fi, &args[k], &to).ok_or("a value needed green at a join is red")?;
            let tmp = format_ident!("__a{}", k);
            lets.push(quote!(let #tmp = #e;));
            ov.insert(*ia, quote!(#tmp));
        }
        let p = self.point_ids[&(fi, target, 0)];
        Ok((lets, self.frame(p, &ov)))
    }

    /// The transition along a link: the current state continues at `target`.
    pub(crate) fn goto(&self, fi: usize, target: NodeIndex, args: &[Value]) -> Result<TokenStream, String> {
        let (lets, frame) = self.link_frame(fi, target, args)?;
        Ok(quote!({ #(#lets)* let mut __s = __st; __s.frames.push(#frame); Some(__s) }))
    }

    /// The same transition as a new state, leaving `__st` untouched (for split).
    pub(crate) fn goto_state(&self, fi: usize, target: NodeIndex, args: &[Value]) -> Result<TokenStream, String> {
        let (lets, frame) = self.link_frame(fi, target, args)?;
        Ok(quote!({ #(#lets)* let mut __s = __st.clone(); __s.frames.push(#frame); __s }))
    }

    /// The code of resume point `p`: from its operation to the next resume point.
    pub(crate) fn point_code(&mut self, p: usize) -> TokenStream {
        let (fi, b, start, ret) = {
            let pt = &self.points[p];
            (pt.f, pt.block, pt.op, pt.ret)
        };
        let f = self.fns[fi];
        let mut body = vec![];
        if let Some(r) = ret {
            let id = v_ident(r);
            body.push(quote!(let #id = __ret.expect("the callee delivered its result");));
        }
        let ops = f.graph.graph[b].ops.clone();
        let drops = self.dead_strings(fi, b);
        for k in start..ops.len() {
            let op = &ops[k];
            if let Some(ci) = self.inlined_callee(fi, op.result, &op.kind) {
                // Inline: push the continuation, then the callee's entry.
                let callee = self.fns[ci];
                let cont = self.point_ids[&(fi, b, k + 1)];
                let cont_frame = self.frame(cont, &HashMap::new());
                let entry = self.point_ids[&(ci, callee.graph.start, 0)];
                let mut lets = vec![];
                let mut ov = HashMap::new();
                for (j, param) in callee.graph.params().iter().enumerate() {
                    let to = self.repr(ci, *param);
                    let Some(e) = self.operand(fi, &op.args[j], &to) else {
                        body.push(self.decline("an argument needed green by the callee is red"));
                        return quote!(#(#body)*);
                    };
                    let tmp = format_ident!("__p{}", j);
                    lets.push(quote!(let #tmp = #e;));
                    ov.insert(*param, quote!(#tmp));
                }
                let entry_frame = self.frame(entry, &ov);
                body.push(quote! {
                    #(#lets)*
                    __st.frames.push(#cont_frame);
                    __st.frames.push(#entry_frame);
                    break 'path Some(__st);
                });
                return quote!(#(#body)*);
            }
            if self.promotes_run_time(fi, op) {
                // Promotion: a constant goes straight on; a run-time value
                // ends the path in a flexswitch whose cases continue here.
                let cont = self.point_ids[&(fi, b, k + 1)];
                let cont_frame = self.frame(cont, &HashMap::new());
                let a = self.boxed(fi, &op.args[0]).expect("a red scalar");
                body.push(quote! {
                    let __a = #a;
                    __st.frames.push(#cont_frame);
                    match __a.as_const() {
                        Some(__w) => {
                            __deliver_promoted(&mut __st, __w);
                            break 'path Some(__st);
                        }
                        None => {
                            __promote(__c, __st, &__a);
                            break 'path None;
                        }
                    }
                });
                return quote!(#(#body)*);
            }
            if let Some(l) = self.pops_frames(fi, op) {
                // Spilled frames: resume before this pop with the top one
                // back (or with none left), compiled or executed.
                let pre = self.point_ids[&(fi, b, k)];
                let pre_frame = self.frame(pre, &HashMap::new());
                let l = v_ident(l);
                body.push(quote! {
                    if #l.pops_spilled() {
                        __st.frames.push(#pre_frame);
                        break 'path __c.unspill(__st, __forever, __resume_fns());
                    }
                });
            }
            if let Some((p, k)) = self.pops_hidden(fi, b, op) {
                // An operand stack with a hidden part: its segment comes back
                // with the frame on top of the continuation stack.
                let pre = self.point_ids[&(fi, b, k)];
                let pre_frame = self.frame(pre, &HashMap::new());
                body.push(quote! {
                    if __st.pops_hidden(&#p, #k) {
                        __st.frames.push(#pre_frame);
                        if __st.any_pops_spilled() {
                            break 'path __c.unspill(__st, __forever, __resume_fns());
                        }
                        __st.frames.pop();
                    }
                });
            }
            self.declined.set(false);
            body.push(self.op(fi, op));
            if self.declined.get() {
                // The rest of the block cannot be reached.
                return quote!(#(#body)*);
            }
            for &v in drops.get(&k).into_iter().flatten() {
                let Some(x) = self.operand(fi, &Value::Var(v), &Repr::RPtr) else { continue };
                let rt = rt();
                body.push(quote!(__c.b.red_call(#rt::heap::arena_drop, "drop", &[#x], &[]);));
            }
        }
        body.push(self.exit(fi, b));
        quote!(#(#body)*)
    }

    pub(crate) fn exit(&mut self, fi: usize, b: NodeIndex) -> TokenStream {
        let rt = rt();
        let f = self.fns[fi];
        match f.graph.graph[b].exit.clone() {
            Exit::Goto(e) => {
                let (t, link) = f.graph.link(e);
                match self.goto(fi, t, &link.args.clone()) {
                    Ok(code) => quote!(#code),
                    Err(why) => self.decline(&why),
                }
            }
            Exit::Branch { cond, if_true, if_false } => {
                let (tt, tl) = f.graph.link(if_true);
                let (ft, fl) = f.graph.link(if_false);
                let (tl, fl) = (tl.args.clone(), fl.args.clone());
                let (gt, gf) = match (self.goto(fi, tt, &tl), self.goto(fi, ft, &fl)) {
                    (Ok(a), Ok(b)) => (a, b),
                    (Err(w), _) | (_, Err(w)) => return self.decline(&w),
                };
                let green = match &cond {
                    Value::Const(_) => true,
                    Value::Var(v) => f.color(*v) == Color::Green,
                };
                if green {
                    let c = self.green(fi, &cond).expect("a green bool");
                    quote!(if #c { #gt } else { #gf })
                } else {
                    let c = self.boxed(fi, &cond).expect("a bool");
                    let other = match self.goto_state(fi, ft, &fl) {
                        Ok(s) => s,
                        Err(w) => return self.decline(&w),
                    };
                    quote!(if __c.split(&#c, &mut || #other) { #gt } else { #gf })
                }
            }
            Exit::Return(v) => {
                // Every return of a function hands over the same representation.
                let ret_repr = self.fn_return_repr(fi);
                let Some(val) = self.operand(fi, &v, &ret_repr) else { return self.decline("a return value") };
                let outer = self.return_boxes(&f.graph.ret_ty.clone(), &ret_repr, quote!(__rv));
                let deliver = format_ident!("__deliver_f{}", fi);
                let writeback = format_ident!("__writeback_f{}", fi);
                let params = f.graph.params();
                let lists: Vec<Ident> =
                    params.iter().filter(|p| self.written_back[fi].contains(p)).map(|p| v_ident(*p)).collect();
                let writeback = (!lists.is_empty()).then(|| quote!(#writeback(&mut __st, #(#lists.clone()),*);));
                let outer = match outer {
                    Some(o) => o,
                    None => self.decline("returning a value of this type from residual code"),
                };
                quote! {
                    #[allow(unused_mut)]
                    let mut __rv = #val;
                    if __st.frames.is_empty() {
                        #outer
                        None
                    } else {
                        #writeback
                        #deliver(&mut __st, __rv, __c);
                        Some(__st)
                    }
                }
            }
            Exit::Abort(msg) => {
                quote!({
                    __c.error_exit(#rt::ops::ErrorKind::Abort(#rt::residual::message_id(#msg)));
                    None
                })
            }
        }
    }

    /// Code that ends the outermost frame by returning `e` (of `repr`),
    /// after writing the virtualizable objects back into memory.
    pub(crate) fn return_boxes(&self, ty: &Ty, r: &Repr, e: TokenStream) -> Option<TokenStream> {
        let write_back = quote!(__st.heap.write_back(&mut __c.b););
        Some(match r {
            Repr::Unit => quote!(#write_back __c.finish_return(&[]);),
            Repr::G(sc) => {
                let b = self.convert(e, r, &Repr::R(*sc))?;
                quote!(#write_back __c.finish_return(&[#b]);)
            }
            Repr::R(_) => quote!(#write_back __c.finish_return(&[#e]);),
            Repr::Enum(..) if rebuildable(ty, self.cg.types()) => quote!(#write_back __c.finish_return(&#e);),
            // An owned `Vec` of scalars: the address of a real one, complete
            // in memory before the objects it may have been moved out of
            // are written back.
            Repr::VList(sc) => {
                let p = force_list(*sc, e);
                quote!({
                    let __p = #p;
                    __st.heap.write_back_returning(&mut __c.b, &__p);
                    __c.finish_return(&[__p]);
                })
            }
            // An owned `Vec` of plain enums, likewise.
            Repr::VEList(ety, n) => {
                let p = force_flat_list(ety, *n, e);
                quote!({
                    let __p = #p;
                    __st.heap.write_back_returning(&mut __c.b, &__p);
                    __c.finish_return(&[__p]);
                })
            }
            // A `String`: the address of a real one, as for a `Vec`.
            Repr::RPtr if returned_by_address(ty, self.cg.types()) => {
                quote!(#write_back __c.finish_return(&[#e]);)
            }
            _ => return None,
        })
    }

    /// The frame enum, its `Frame` impl, `__run` and the deliver functions.
    pub fn extension(&mut self) -> TokenStream {
        let rt = rt();
        let mut frame = crate::frame::FrameEnum::default();
        let mut run_arms = vec![];
        // Points whose live lists are the same variables alike share one
        // arm of `lists_mut` (an or-pattern): (the visits, the patterns).
        let mut list_groups: indexmap::IndexMap<String, (Vec<TokenStream>, Vec<TokenStream>)> = Default::default();
        let mut point_fns = vec![];
        for p in 0..self.points.len() {
            let (code, run_arm) = self.point_pieces(p, &mut frame, &mut list_groups);
            point_fns.push(code);
            run_arms.push(run_arm);
        }
        let delivers = self.delivers();
        let enum_fns: Vec<TokenStream> =
            self.enums.clone().iter().map(|t| enum_helper_fns(t, self.cg.types())).collect();
        // Virtualizable structs get theirs for portal entries (see `jit_module`).
        let types = self.cg.types();
        for (name, d) in &types.structs {
            if d.virtualizable && virtual_struct(&Ty::Struct(name.clone()), types).is_some() {
                self.vstructs.insert(name.clone());
            }
        }
        // An interpreter that reads its saved frames in place
        // (`frames.last()`): spilled, they count their entries (see the
        // runtime's `JitState::spill_frames`).
        let read_in_place = self.frames_read_in_place();
        let vdescs: Vec<TokenStream> =
            self.vstructs.iter().map(|s| vdesc(s, self.cg.types(), read_in_place.contains(s))).collect();
        let callbacks = &self.callbacks;
        let list_arms: Vec<TokenStream> =
            list_groups.into_values().map(|(visits, pats)| quote!(#(#pats)|* => { #(#visits)* })).collect();
        let reads_saved_frames = (!read_in_place.is_empty()).then(|| {
            quote!(
                fn reads_saved_frames(&self) -> bool {
                    true
                }
            )
        });
        // (Frames with no list keep the trait's default, which visits none.)
        let lists_mut = (!list_arms.is_empty()).then(|| {
            quote! {
                fn lists_mut(&mut self, __f: &mut dyn FnMut(#rt::state::ListMut<'_>)) {
                    match self {
                        #(#list_arms)*
                        _ => {}
                    }
                }
            }
        });
        let frame = frame.emit(quote!(#lists_mut #reads_saved_frames));
        quote! {
            #frame
            #[allow(dead_code)]
            const __OVERFLOW: #rt::ops::Overflow =
                if cfg!(debug_assertions) { #rt::ops::Overflow::Check } else { #rt::ops::Overflow::Wrap };
            /// A compilation, and the state a point's code continues.
            type __C<'a> = #rt::schedule::Compilation<__Frame<'a>>;
            type __S<'a> = #rt::state::JitState<__Frame<'a>>;

            #(#delivers)*

            #[allow(unused_variables, unused_mut, unused_braces, unreachable_code, unused_labels, clippy::all)]
            pub(super) fn __run<'a>(__c: &mut #rt::schedule::Compilation<__Frame<'a>>, __start: #rt::state::JitState<__Frame<'a>>) {
                let mut __next = Some(__start);
                while let Some(mut __st) = __next.take() {
                    if !__c.step() {
                        return;
                    }
                    let Some(__frame) = __st.frames.pop() else { continue };
                    let __r: ::core::option::Option<#rt::state::JitState<__Frame<'a>>> = match __frame {
                        #(#run_arms)*
                        __Frame::__Phantom(_) => None,
                    };
                    __next = match __r {
                        Some(__s) => Some(__s),
                        None => __c.next_pending(),
                    };
                }
            }

            #(#point_fns)*
            #(#enum_fns)*
            #(#vdescs)*
            #(#callbacks)*
        }
    }

    /// The deliver functions: a returning function hands its value to its
    /// caller's continuation, a promoted value to the state it resumes; and
    /// the table of what a flexswitch's resumption calls.
    fn delivers(&mut self) -> Vec<TokenStream> {
        let rt = rt();
        let mut delivers = vec![];
        for fi in 0..self.fns.len() {
            let ret_repr = self.fn_return_repr(fi);
            let rt_ty = field_ty(&ret_repr);
            let mut arms = vec![];
            for (p, r, _) in self.continuations_of(fi) {
                let pt = &self.points[p];
                let want = self.repr(pt.f, r);
                let vname = format_ident!("R{}", p);
                let conv = self.convert(quote!(__v), &ret_repr, &want);
                arms.push(match conv {
                    Some(c) => quote!(Some(__Frame::#vname { __ret, .. }) => { *__ret = Some(#c); }),
                    None => quote!(Some(__Frame::#vname { .. }) => { __c.decline("a green result expected from a call is red"); }),
                });
            }
            // Written-back lists: into the caller's continuation.
            let wb: Vec<Var> =
                self.fns[fi].graph.params().iter().filter(|p| self.written_back[fi].contains(p)).copied().collect();
            if !wb.is_empty() {
                let mut wb_arms = vec![];
                for (p, _, op) in self.continuations_of(fi) {
                    let pt = &self.points[p];
                    let params = self.fns[fi].graph.params();
                    let mut fields = vec![];
                    let mut sets = vec![];
                    for (j, w) in wb.iter().enumerate() {
                        let Some(k) = params.iter().position(|x| x == w) else { continue };
                        let Some(a) = op.args.get(k) else { continue };
                        let arg = format_ident!("__l{}", j);
                        for t in self.written_back_targets(pt.f, a) {
                            if pt.live.contains(&t) {
                                let id = v_ident(t);
                                fields.push(quote!(#id));
                                sets.push(quote!(*#id = #arg.clone();));
                            }
                        }
                    }
                    let vname = format_ident!("R{}", p);
                    wb_arms.push(quote!(Some(__Frame::#vname { #(#fields,)* .. }) => { #(#sets)* }));
                }
                let args: Vec<TokenStream> = (0..wb.len())
                    .map(|j| {
                        let a = format_ident!("__l{}", j);
                        quote!(#a: #rt::vlist::VList)
                    })
                    .collect();
                let name = format_ident!("__writeback_f{}", fi);
                delivers.push(quote! {
                    /// Writes the lists a returning function was given by
                    /// `&mut` back into its caller's variables.
                    #[allow(unused_variables, unreachable_patterns)]
                    fn #name<'a>(__st: &mut #rt::state::JitState<__Frame<'a>>, #(#args),*) {
                        match __st.frames.last_mut() {
                            #(#wb_arms)*
                            _ => {}
                        }
                    }
                });
            }
            let name = format_ident!("__deliver_f{}", fi);
            delivers.push(quote! {
                #[allow(unused_variables, unreachable_patterns)]
                fn #name<'a>(__st: &mut #rt::state::JitState<__Frame<'a>>, __v: #rt_ty, __c: &mut #rt::schedule::Compilation<__Frame<'a>>) {
                    match __st.frames.last_mut() {
                        #(#arms)*
                        _ => __c.decline("a return without a caller"),
                    }
                }
            });
        }
        let mut promoted_arms = vec![];
        for (p, pt) in self.points.iter().enumerate() {
            let Some(r) = pt.ret else { continue };
            let op = &self.fns[pt.f].graph.graph[pt.block].ops[pt.op - 1];
            if !self.promotes_run_time(pt.f, op) {
                continue;
            }
            let Repr::G(sc) = self.repr(pt.f, r) else { continue };
            let back = from_word(sc, quote!(__w));
            let vname = format_ident!("R{}", p);
            promoted_arms.push(quote!(Some(__Frame::#vname { __ret, .. }) => { *__ret = Some(#back); }));
        }
        delivers.push(quote! {
            /// Hands a promoted value to the continuation of its promotion.
            #[allow(unused_variables, unreachable_patterns)]
            fn __deliver_promoted<'a>(__st: &mut #rt::state::JitState<__Frame<'a>>, __w: u64) {
                match __st.frames.last_mut() {
                    #(#promoted_arms)*
                    _ => panic!("jitgen: a promoted value without its continuation"),
                }
            }

            fn __resume_fns() -> #rt::schedule::ResumeFns<__Frame<'static>> {
                #rt::schedule::ResumeFns { run: __run, deliver: __deliver_promoted, defer: __defer }
            }

            /// Ends the path in a flexswitch on `__v` (see `Compilation::flexswitch`).
            fn __promote<'a>(
                __c: &mut #rt::schedule::Compilation<__Frame<'a>>,
                __st: #rt::state::JitState<__Frame<'a>>,
                __v: &#rt::redbox::RedBox,
            ) {
                __c.flexswitch(__forever(__st), Some(__v), __resume_fns());
            }

            /// Ends the path in a lazily compiled continuation of `__st`.
            pub(super) fn __defer<'a>(
                __c: &mut #rt::schedule::Compilation<__Frame<'a>>,
                __st: #rt::state::JitState<__Frame<'a>>,
            ) {
                __c.flexswitch(__forever(__st), None, __resume_fns());
            }

            /// A state kept by a flexswitch, beyond the compilation that made it.
            fn __forever<'a>(__st: #rt::state::JitState<__Frame<'a>>) -> #rt::state::JitState<__Frame<'static>> {
                // SAFETY: the green references in a state point into the
                // interpreter's data that the portal's key and content check
                // identify (or that a `specialize` result borrows). The state
                // is only resumed while residual code of its switch runs,
                // which is entered only under the same key and content, so
                // the data is alive and unchanged whenever it is used.
                unsafe {
                    ::core::mem::transmute::<
                        #rt::state::JitState<__Frame<'a>>,
                        #rt::state::JitState<__Frame<'static>>,
                    >(__st)
                }
            }
        });
        delivers
    }

    /// Point `p`: its variant and arms of the frame enum (added to `frame`;
    /// the visits of its lists to `list_groups`), its function `__pointN`,
    /// and its arm of `__run`.
    fn point_pieces(
        &mut self,
        p: usize,
        frame: &mut crate::frame::FrameEnum,
        list_groups: &mut indexmap::IndexMap<String, (Vec<TokenStream>, Vec<TokenStream>)>,
    ) -> (TokenStream, TokenStream) {
        let rt = rt();
        let code = self.point_code(p);
        let pt = &self.points[p];
        let f = self.fns[pt.f];
        let vname = format_ident!("R{}", p);
        let pid = p as u32;
        let mut fields = vec![];
        let mut key_parts = vec![];
        let mut reds = vec![];
        let mut sets = vec![];
        let mut vptr_visits = vec![];
        let mut list_visits = vec![];
        let mut list_ids = vec![];
        // Consecutive scalar reds, copied as one run.
        let mut red_run: Vec<Ident> = vec![];
        for v in &pt.live {
            let id = v_ident(*v);
            let r = self.repr(pt.f, *v);
            if !matches!(r, Repr::R(_) | Repr::RPtr) {
                flush_red_run(&mut red_run, &mut reds, &mut sets);
            }
            fields.push((id.clone(), field_ty(&r)));
            match &r {
                Repr::G(sc) => key_parts.push(KeyPart::Word(to_word(*sc, quote!(*#id)))),
                Repr::GRef(_) => key_parts.push(KeyPart::Word(quote!((*#id) as *const _ as *const u8 as usize as u64))),
                Repr::GSlice(_) => {
                    key_parts.push(KeyPart::Word(quote!(#id.as_ptr() as usize as u64)));
                    key_parts.push(KeyPart::Word(quote!(#id.len() as u64)));
                }
                Repr::Enum(..) if f.color(*v) == Color::Green => key_parts.push(KeyPart::Stmt(
                    quote!(for __b in #id.iter() { __k.push(__b.as_const().unwrap_or(u64::MAX)); }),
                )),
                Repr::Enum(_, n) => {
                    reds.push(quote!(__r.extend_from_slice(#id);));
                    sets.push(quote!(#id.copy_from_slice(&__reds[__at..__at + #n]); __at += #n;));
                }
                Repr::R(_) | Repr::RPtr => red_run.push(id.clone()),
                Repr::VPtr => {
                    key_parts.push(KeyPart::Word(quote!(match #id {
                        #rt::virtuals::VPtr::Real(_) => u64::MAX,
                        #rt::virtuals::VPtr::Virtual(__i) => *__i as u64,
                    })));
                    reds.push(quote!(if let #rt::virtuals::VPtr::Real(__p) = #id { __r.push(*__p); }));
                    sets.push(quote!(if let #rt::virtuals::VPtr::Real(__p) = #id { *__p = __reds[__at]; __at += 1; }));
                    vptr_visits.push(quote!(__f(#id);));
                }
                Repr::VDict(k, v) => {
                    let (kt, vt, kvt) = (sc_rust(*k), sc_rust(*v), sc_valty(*k));
                    list_visits.push(quote!(__f(#rt::state::ListMut::Dict(#id, #kvt, #rt::heap::map_new::<#kt, #vt>, #rt::heap::map_insert::<#kt, #vt>));));
                    list_ids.push(id.clone());
                    key_parts.push(KeyPart::Stmt(quote!(#id.key_words(&mut __k);)));
                    reds.push(quote!(#id.reds_into(&mut __r);));
                    sets.push(quote!(#id.set_reds(__reds, &mut __at);));
                }
                Repr::VOList(_) => {
                    list_visits.push(quote!(__f(#rt::state::ListMut::Ptrs(#id));));
                    list_ids.push(id.clone());
                    key_parts.push(KeyPart::Stmt(quote!(#id.key_words(&mut __k);)));
                    reds.push(quote!(#id.reds_into(&mut __r);));
                    sets.push(quote!(#id.set_reds(__reds, &mut __at);));
                    vptr_visits.push(quote!(#id.vptrs_mut(__f);));
                }
                Repr::VOpt => {
                    key_parts.push(KeyPart::Word(quote!(#id.0.as_const().unwrap_or(u64::MAX))));
                    key_parts.push(KeyPart::Word(quote!(match &#id.1 {
                        #rt::virtuals::VPtr::Real(_) => u64::MAX,
                        #rt::virtuals::VPtr::Virtual(__i) => *__i as u64,
                    })));
                    reds.push(
                        quote!(__r.push(#id.0); if let #rt::virtuals::VPtr::Real(__p) = &#id.1 { __r.push(*__p); }),
                    );
                    sets.push(quote!(#id.0 = __reds[__at]; __at += 1; if let #rt::virtuals::VPtr::Real(__p) = &mut #id.1 { *__p = __reds[__at]; __at += 1; }));
                    vptr_visits.push(quote!(__f(&mut #id.1);));
                }
                Repr::VList(_) | Repr::VEList(..) => {
                    list_visits.push(match &r {
                        Repr::VList(sc) => {
                            let (t, vt) = (sc_rust(*sc), sc_valty(*sc));
                            quote!(__f(#rt::state::ListMut::Scalars(#id, #vt, #rt::heap::vec_new_repeat::<#t>, #rt::heap::vec_set::<#t>));)
                        }
                        Repr::VEList(ety, n) => {
                            let m = flat_marker(ety);
                            quote!(__f(#rt::state::ListMut::Flat(#id, #n, #rt::heap::flat_vec_new::<#m>));)
                        }
                        _ => unreachable!("matched above"),
                    });
                    list_ids.push(id.clone());
                    key_parts.push(KeyPart::Word(quote!(#id.key_word())));
                    reds.push(quote!(#id.reds_into(&mut __r);));
                    sets.push(quote!(#id.set_reds(__reds, &mut __at);));
                }
                Repr::RSlice => {
                    reds.push(quote!(__r.extend_from_slice(#id);));
                    sets.push(quote!(#id.copy_from_slice(&__reds[__at..__at + 2]); __at += 2;));
                }
                Repr::Unit | Repr::Bad(_) => {}
            }
        }
        flush_red_run(&mut red_run, &mut reds, &mut sets);
        // The code of a point may force a list in place: lists bind `mut`.
        let mut pat_all: Vec<TokenStream> = pt
            .live
            .iter()
            .map(|v| {
                let id = v_ident(*v);
                if is_container(&self.repr(pt.f, *v)) {
                    quote!(mut #id)
                } else {
                    quote!(#id)
                }
            })
            .collect();
        if let Some(r) = pt.ret {
            let t = field_ty(&self.repr(pt.f, r));
            fields.push((format_ident!("__ret"), quote!(::core::option::Option<#t>)));
            pat_all.push(quote!(__ret));
        }
        let is_join = pt.op == 0 && self.joins[pt.f].contains(&pt.block);
        if is_join {
            fields.push((format_ident!("__merged"), quote!(bool)));
            pat_all.push(quote!(__merged));
        }
        // The same fields, as an expression rebuilding the frame.
        let field_exprs: Vec<TokenStream> = pat_all
            .iter()
            .map(|p| {
                let name = p.clone().into_iter().last().expect("a field name");
                quote!(#name)
            })
            .collect();
        let key = key_code(&key_parts);
        let (reds, sets, vptrs) = (quote!(#(#reds)*), quote!(#(#sets)*), quote!(#(#vptr_visits)*));
        let arms = crate::frame::PointArms { key: quote!(#key __k), reds, sets, vptrs, merges: is_join };
        frame.add(&vname, pid, &fields, arms);
        if !list_visits.is_empty() {
            let group = list_groups.entry(quote!(#(#list_visits)*).to_string()).or_default();
            if group.0.is_empty() {
                group.0 = list_visits;
            }
            group.1.push(quote!(__Frame::#vname { #(#list_ids,)* .. }));
        }
        let kind = if self.loop_heads[pt.f].contains(&pt.block) {
            quote!(#rt::schedule::MergeKind::LoopHead)
        } else {
            quote!(#rt::schedule::MergeKind::Join)
        };
        let merge = if is_join {
            let rebuilt: Vec<TokenStream> = field_exprs
                .iter()
                .map(|p| if p.to_string() == "__merged" { quote!(__merged: true) } else { quote!(#p) })
                .collect();
            quote! {
                if !__merged {
                    let mut __s = __st;
                    __s.frames.push(__Frame::#vname { #(#rebuilt),* });
                    break 'path __c.merge(__s, #kind);
                }
            }
        } else {
            quote!()
        };
        let park = self.park_code(p, &vname, &field_exprs);
        // The code of each point is a function of its own: the dispatch
        // stays a small match, and rustc and LLVM see hundreds of small
        // functions instead of one that holds every point.
        let point_fn = format_ident!("__point{}", p);
        // (The lints generated code may trip are allowed on `__jit`.)
        let code = quote! {
            #[inline(never)]
            fn #point_fn<'a>(__c: &mut __C<'a>, mut __st: __S<'a>, __frame: __Frame<'a>) -> ::core::option::Option<__S<'a>> {
                let __Frame::#vname { #(#pat_all),* } = __frame else {
                    unreachable!("jitgen: a frame dispatched to another point's code")
                };
                'path: {
                    #park
                    #merge
                    #code
                }
            }
        };
        let run_arm = quote! {
            __Frame::#vname { .. } => #point_fn(__c, __st, __frame),
        };
        (code, run_arm)
    }

    /// At point `p`, where a portal's hand-over comes back to its merge
    /// point: the state goes back to the interpreter proper (parked).
    fn park_code(&self, p: usize, vname: &Ident, field_exprs: &[TokenStream]) -> TokenStream {
        if self.park_points.contains(&p) {
            // Back at the portal's merge point after a hand-over: the
            // portal continues in the interpreter proper from here.
            quote! {
                if __st.frames.is_empty() && __c.parking() {
                    // Virtualizable objects go back into memory first
                    // (execute mode: these stores happen now), and
                    // spilled frames into the lists they came from.
                    __st.heap.write_back(&mut __c.b);
                    __st.frames.push(__Frame::#vname { #(#field_exprs),* });
                    __st.untail_lists(&mut __c.b);
                    if !__st.unspill_all(&mut __c.b) {
                        __c.decline("a frame on the continuation stack that this thread did not spill");
                        break 'path None;
                    }
                    __c.park(::std::boxed::Box::new(__forever(__st)));
                    break 'path None;
                }
            }
        } else {
            quote!()
        }
    }
}

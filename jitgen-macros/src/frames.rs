//! The frames of a generating extension: pushing, linking and going to a
//! point, the code of each point, exits and returns, and the extension as a
//! whole (its frames' layouts, `__run`, the deliver functions) (methods of
//! `timeshift::Gen`).

use std::collections::HashMap;

use hint_annotator::flowgraph::{Exit, Value, Var};
use hint_annotator::types::{IntTy, Ty};
use hint_annotator::Color;
use petgraph::stable_graph::NodeIndex;
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use crate::analysis::HiddenIndex;
use crate::repr::*;
use crate::timeshift::*;

impl<'g> Gen<'g> {
    /// The number of the layout of point `p`'s frame (see `frame`).
    pub(crate) fn point_layout(&self, p: usize) -> usize {
        let pt = &self.points[p];
        let f = self.fns[pt.f];
        let values: Vec<(Repr, bool)> =
            pt.live.iter().map(|v| (self.repr(pt.f, *v), f.color(*v) == Color::Green)).collect();
        self.layouts.borrow_mut().of(&values)
    }

    /// A frame for resume point `p` built from the locals in scope, with
    /// `overrides` for some of its variables (input arguments, parameters).
    /// Where `moves`, the frame is the last use of the locals (the path
    /// ends with it): its lists move into it; else it gets copies of them.
    pub(crate) fn frame(&self, p: usize, overrides: &HashMap<Var, TokenStream>, moves: bool) -> TokenStream {
        let pt = &self.points[p];
        let mut fields = vec![];
        for v in &pt.live {
            let id = v_ident(*v);
            match overrides.get(v) {
                Some(e) => fields.push(e.clone()),
                // A list may be needed again after this frame is made (the
                // other side of a split): the frame gets its own copy.
                None if !moves && is_container(&self.repr(pt.f, *v)) => fields.push(quote!(#id.clone())),
                None => fields.push(quote!(#id)),
            }
        }
        self.framed.borrow_mut().insert(p);
        let pack = crate::frame::pack_name(self.point_layout(p));
        let pid = p as u32;
        quote!(__at(#pid, #pack(#(#fields),*)))
    }

    /// The frame for entering `target` along a link carrying `args`, and
    /// the statements converting the link's values first.
    pub(crate) fn link_frame(
        &self,
        fi: usize,
        target: NodeIndex,
        args: &[Value],
        moves: bool,
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
        Ok((lets, self.frame(p, &ov, moves)))
    }

    /// Whether a transition to block `target` continues in the same point
    /// function instead of stopping there: `target` is entered from one place
    /// only (not a join, a loop head, a function's start or a portal's merge
    /// point), so the state never needs to stop at it to be merged or
    /// resumed. Chains of such blocks nest, to a bounded depth.
    fn continues_into(&self, fi: usize, target: NodeIndex) -> bool {
        let f = self.fns[fi];
        let p = self.point_ids[&(fi, target, 0)];
        self.inline_depth.get() < MAX_INLINE_DEPTH
            && target != f.graph.start
            && !self.plans[fi].joins.contains(&target)
            && !self.plans[fi].loop_heads.contains(&target)
            && !self.park_points.contains(&p)
            && self.plans[fi].preds.get(&target) == Some(&1)
    }

    /// The transition along a link: the current state continues at `target`,
    /// in this function's code (`continues_into`) or at its point.
    pub(crate) fn goto(&mut self, fi: usize, target: NodeIndex, args: &[Value]) -> Result<TokenStream, String> {
        if self.continues_into(fi, target) {
            // The link's values are all converted before any is bound: a
            // link may pass a block's variables to each other.
            let f = self.fns[fi];
            let mut lets = vec![];
            let mut binds = vec![];
            for (k, ia) in f.graph.graph[target].inputargs.iter().enumerate() {
                let to = self.repr(fi, *ia);
                let e = self.operand(fi, &args[k], &to).ok_or("a value needed green at a join is red")?;
                let (tmp, id) = (format_ident!("__a{}", k), v_ident(*ia));
                lets.push(quote!(let #tmp = #e;));
                binds.push(if is_container(&to) { quote!(let mut #id = #tmp;) } else { quote!(let #id = #tmp;) });
            }
            let p = self.point_ids[&(fi, target, 0)];
            self.inline_depth.set(self.inline_depth.get() + 1);
            let code = self.point_code(p);
            self.inline_depth.set(self.inline_depth.get() - 1);
            return Ok(quote!({ #(#lets)* #(#binds)* #code }));
        }
        let (lets, frame) = self.link_frame(fi, target, args, true)?;
        Ok(if lets.is_empty() {
            quote!(Some(__st.pushed(#frame)))
        } else {
            quote!({ #(#lets)* Some(__st.pushed(#frame)) })
        })
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
        let drops = self.plans[fi].dead_strings.get(&b).cloned().unwrap_or_default();
        for k in start..ops.len() {
            let op = &ops[k];
            self.op_at.set(Some((fi, b, k)));
            if let Some(ci) = self.inlined_callee(fi, op.result, &op.kind) {
                // Inline: push the continuation, then the callee's entry.
                let callee = self.fns[ci];
                let cont = self.point_ids[&(fi, b, k + 1)];
                let cont_frame = self.frame(cont, &HashMap::new(), true);
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
                let entry_frame = self.frame(entry, &ov, true);
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
                let cont_frame = self.frame(cont, &HashMap::new(), true);
                let a = self
                    .boxed(fi, &op.args[0])
                    .or_else(|| self.operand(fi, &op.args[0], &Repr::RPtr))
                    .expect("a red scalar or pointer");
                let every_turn = self.promotes_every_turn(fi, b, k);
                body.push(quote! {
                    let __a = #a;
                    __st.frames.push(#cont_frame);
                    match __a.as_const() {
                        Some(__w) => {
                            __deliver_promoted(&mut __st, __w);
                            break 'path Some(__st);
                        }
                        None => {
                            __promote(__c, __st, &__a, #every_turn);
                            break 'path None;
                        }
                    }
                });
                return quote!(#(#body)*);
            }
            // A frame made again for this point, before its first operation,
            // gets back the result it was delivered.
            // (A green result only: a frame's red boxes and its key are
            // those of its values.)
            let ret_back = (k == start && ret.is_some()).then(|| {
                quote! {
                    match (&__ret_words, __st.frames.last_mut()) {
                        (Some(__r), Some(__f)) if __r.is_green() => __f.ret = Some(__r.clone()),
                        _ => {
                            __c.decline("a run-time result delivered where the frames spilled must come back first");
                            break 'path None;
                        }
                    }
                }
            });
            if let Some(l) = self.pops_frames(fi, op) {
                // Spilled frames: resume before this pop with the top one
                // back (or with none left), compiled or executed.
                let pre = self.point_ids[&(fi, b, k)];
                let pre_frame = self.frame(pre, &HashMap::new(), true);
                let l = v_ident(l);
                let rt = rt();
                body.push(quote! {
                    if #l.pops_spilled() {
                        __st.frames.push(#pre_frame);
                        #ret_back
                        break 'path #rt::ext::unspill(__c, __st, __forever, __resume_fns());
                    }
                });
            }
            if let Some((p, j)) = self.pops_hidden(fi, b, op) {
                // An operand stack with a hidden part: its segment comes back
                // with the frame on top of the continuation stack.
                let pops = quote!(__st.pops_hidden(&#p, #j));
                let room = quote!(__st.any_pops_spilled() || __st.unspills_for_index());
                body.push(self.unspill_first(fi, b, k, pops, room, ret_back.clone()));
            }
            if let Some((p, j, i)) = self.reads_hidden(fi, b, k) {
                // An index into an operand stack's hidden part: the segment
                // holding it comes back with the frame on top of the
                // continuation stack, then the field is read again.
                let usize_repr = Repr::R(Sc::Int(IntTy::Usize));
                let reads = match i {
                    Some(HiddenIndex::Known(i)) => {
                        self.operand(fi, &i, &usize_repr).map(|i| quote!(__st.reads_hidden(&__c.b, &#p, #j, Some(&#i))))
                    }
                    Some(HiddenIndex::Step(a, c)) => {
                        let (a, c) = (self.operand(fi, &a, &usize_repr), self.operand(fi, &c, &usize_repr));
                        a.zip(c).map(|(a, c)| quote!(__st.reads_hidden_step(&__c.b, &#p, #j, &#a, &#c)))
                    }
                    None => Some(quote!(__st.reads_hidden(&__c.b, &#p, #j, None))),
                };
                if let Some(reads) = reads {
                    body.push(self.unspill_first(fi, b, k, reads, quote!(__st.unspills_for_index()), ret_back));
                }
            }
            self.declined.set(false);
            self.op_at.set(Some((fi, b, k)));
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
        self.op_at.set(Some((fi, b, ops.len())));
        body.push(self.exit(fi, b));
        quote!(#(#body)*)
    }

    /// Code that, where `needs` holds before operation `k` of block `b`
    /// (it would need an operand stack's hidden part) and `room` allows,
    /// resumes before the operation with the frame on top of the
    /// continuation stack popped back (see `JitState::unspill`); `ret_back`
    /// gives the frame made again its delivered result, where `k` is the
    /// point's first operation.
    fn unspill_first(
        &mut self,
        fi: usize,
        b: NodeIndex,
        k: usize,
        needs: TokenStream,
        room: TokenStream,
        ret_back: Option<TokenStream>,
    ) -> TokenStream {
        let pre = self.point_ids[&(fi, b, k)];
        let pre_frame = self.frame(pre, &HashMap::new(), false);
        let rt = rt();
        quote! {
            if #needs {
                __st.frames.push(#pre_frame);
                if #room {
                    #ret_back
                    break 'path #rt::ext::unspill(__c, __st, __forever, __resume_fns());
                }
                __st.frames.pop();
            }
        }
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
                let green = match &cond {
                    Value::Const(_) => true,
                    Value::Var(v) => f.color(*v) == Color::Green,
                };
                // A red split one of whose sides leaves the loop while the
                // other stays: that side compiles when first taken
                // (`Compilation::fork_exit`).
                let plan = &self.plans[fi];
                let leaves = |e, t| plan.leaves_loop.contains(&t) || plan.leaving_links.contains(&e);
                let exit = match (green, leaves(if_true, tt), leaves(if_false, ft)) {
                    (false, true, false) => Some(true),
                    (false, false, true) => Some(false),
                    _ => None,
                };
                let gt = match self.goto(fi, tt, &tl) {
                    Ok(code) => code,
                    Err(w) => return self.decline(&w),
                };
                if green {
                    let gf = match self.goto(fi, ft, &fl) {
                        Ok(code) => code,
                        Err(w) => return self.decline(&w),
                    };
                    let c = self.green(fi, &cond).expect("a green bool");
                    quote!(if #c { #gt } else { #gf })
                } else {
                    // The false side's state, made once in the code: from a
                    // copy when the condition is a run-time value (the true
                    // side goes on with this state: `fork`), or from this
                    // state when it is a false constant.
                    let c = self.boxed(fi, &cond).expect("a bool");
                    let (lets, frame) = match self.link_frame(fi, ft, &fl, false) {
                        Ok(x) => x,
                        Err(w) => return self.decline(&w),
                    };
                    // The false side leaving the loop is compiled when first
                    // taken where the compilation defers; a true side that
                    // leaves is too, the false side queued (the order in
                    // which sides compile is kept).
                    let then = if exit == Some(false) { quote!(then_exit) } else { quote!(then) };
                    let lazy_true = match exit {
                        Some(true) => {
                            let (lets_t, frame_t) = match self.link_frame(fi, tt, &tl, false) {
                                Ok(x) => x,
                                Err(w) => return self.decline(&w),
                            };
                            quote! {
                                if #rt::ext::exits_lazily(__c, &__cond) {
                                    let __t = { #(#lets_t)* #frame_t };
                                    __s.split_exit(__c, __t, __f);
                                    break 'path None;
                                }
                            }
                        }
                        _ => quote!(),
                    };
                    quote!({
                        let __cond = #c;
                        if let Some(__s) = #rt::ext::false_side(__c, &__cond, &mut __st) {
                            #(#lets)*
                            let __f = #frame;
                            #lazy_true
                            if let Some(__s) = __s.#then(__c, __f) {
                                break 'path Some(__s);
                            }
                        }
                        #gt
                    })
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
                    params.iter().filter(|p| self.plans[fi].written_back.contains(p)).map(|p| v_ident(*p)).collect();
                let args: Vec<Ident> = (0..lists.len()).map(|j| format_ident!("__l{}", j)).collect();
                let writeback = (!lists.is_empty()).then(|| quote!(#writeback(&mut __st, #(#args),*);));
                let outer = match outer {
                    Some(o) => o,
                    None => self.decline("returning a value of this type from residual code"),
                };
                // Every return of a function ends alike: one function.
                let name = format_ident!("__return_f{}", fi);
                let rv_ty = field_ty(&ret_repr);
                self.return_fns.entry(fi).or_insert_with(|| {
                    quote! {
                        fn #name<'a>(__c: &mut __C<'a>, mut __st: __S<'a>, mut __rv: #rv_ty #(, #args: #rt::VList)*) -> ::core::option::Option<__S<'a>> {
                            'path: {
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
                    }
                });
                quote!({
                    let __rv = #val;
                    #name(__c, __st, __rv #(, #lists.clone())*)
                })
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
            // A `String`, or a struct residual code builds: the address of
            // a real one, as for a `Vec`.
            Repr::RPtr if returned_by_address(ty, self) => {
                quote!(#write_back __c.finish_return(&[#e]);)
            }
            _ => return None,
        })
    }

    /// The extension: its points' functions and `__run`, the layouts of its
    /// frames, and the deliver and return functions.
    pub fn extension(&mut self) -> TokenStream {
        let rt = rt();
        // The code of the points a state can stop at (`framed`): those the
        // entries make frames for, then those their code makes frames for,
        // until no new one appears. A point no code stops at gets none.
        let mut pieces: std::collections::BTreeMap<usize, (TokenStream, TokenStream)> = Default::default();
        loop {
            let todo: Vec<usize> = self.framed.borrow().iter().filter(|p| !pieces.contains_key(p)).copied().collect();
            if todo.is_empty() {
                break;
            }
            for p in todo {
                let piece = self.point_pieces(p);
                pieces.insert(p, piece);
            }
        }
        let framed = self.framed.borrow().clone();
        let (point_fns, run_arms): (Vec<TokenStream>, Vec<TokenStream>) = pieces.into_values().unzip();
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
        let reads_saved = !read_in_place.is_empty();
        let return_fns = self.return_fns.values();
        // The layouts of the points emitted, and of their calls' results.
        let mut used = std::collections::BTreeSet::new();
        for &p in &framed {
            used.insert(self.point_layout(p));
            let pt = &self.points[p];
            if let Some(r) = pt.ret {
                let green = self.fns[pt.f].color(r) == Color::Green;
                used.insert(self.layouts.borrow_mut().of(&[(self.repr(pt.f, r), green)]));
            }
        }
        let layouts = self.layouts.borrow().emit(&used);
        quote! {
            pub(super) type __Frame<'a> = #rt::frame::PointFrame<'a>;
            /// A frame at point `p` holding `v`.
            fn __at<'a>(p: u32, v: #rt::Values) -> __Frame<'a> {
                #rt::frame::PointFrame::new(p, #reads_saved, v)
            }
            #layouts
            #[allow(dead_code)]
            const __OVERFLOW: #rt::Overflow =
                if cfg!(debug_assertions) { #rt::Overflow::Check } else { #rt::Overflow::Wrap };
            /// A compilation, and the state a point's code continues.
            type __C<'a> = #rt::Compilation<__Frame<'a>>;
            type __S<'a> = #rt::JitState<__Frame<'a>>;

            #(#delivers)*

            #[allow(unused_variables, unused_mut, unused_braces, unreachable_code, unused_labels, clippy::all)]
            pub(super) fn __run<'a>(__c: &mut #rt::Compilation<__Frame<'a>>, __start: #rt::JitState<__Frame<'a>>) {
                let mut __next = Some(__start);
                while let Some(mut __st) = __next.take() {
                    if !__c.step() {
                        return;
                    }
                    let Some(__frame) = __st.frames.pop() else { continue };
                    let __r: ::core::option::Option<#rt::JitState<__Frame<'a>>> = match __frame.point {
                        #(#run_arms)*
                        _ => unreachable!("jitgen: a frame at no point of this extension"),
                    };
                    __next = match __r {
                        Some(__s) => Some(__s),
                        None => __c.next_pending(),
                    };
                }
            }

            #(#point_fns)*
            #(#return_fns)*
            #(#enum_fns)*
            #(#vdescs)*
            #(#callbacks)*
        }
    }

    /// The deliver functions: a returning function hands its value to its
    /// caller's continuation, a promoted value to the state it resumes; and
    /// the table of what a flexswitch's resumption calls.
    fn delivers(&mut self) -> Vec<TokenStream> {
        let framed = self.framed.borrow().clone();
        let rt = rt();
        let mut delivers = vec![];
        for fi in 0..self.fns.len() {
            let ret_repr = self.fn_return_repr(fi);
            let rt_ty = field_ty(&ret_repr);
            // Continuations that take the result alike share an arm.
            let mut arms: indexmap::IndexMap<String, (TokenStream, Vec<u32>)> = Default::default();
            // (Only continuations some code makes a frame for: a value is
            // delivered to a frame on the state.)
            for (p, r, _) in self.continuations_of(fi).into_iter().filter(|(p, ..)| framed.contains(p)) {
                let pt = &self.points[p];
                let want = self.repr(pt.f, r);
                let green = self.fns[pt.f].color(r) == Color::Green;
                let conv = self.convert(quote!(__v), &ret_repr, &want);
                let code = match conv {
                    Some(c) => {
                        let pack = crate::frame::pack_name(self.layouts.borrow_mut().of(&[(want, green)]));
                        quote!(__f.ret = Some(::std::boxed::Box::new(#pack(#c)));)
                    }
                    None => quote!(__c.decline("a green result expected from a call is red");),
                };
                arms.entry(code.to_string()).or_insert_with(|| (code, vec![])).1.push(p as u32);
            }
            let arms = arms.into_values().map(|(code, ps)| quote!(#(#ps)|* => { #code }));
            // Written-back lists: into the caller's continuation.
            let wb: Vec<Var> = self.fns[fi]
                .graph
                .params()
                .iter()
                .filter(|p| self.plans[fi].written_back.contains(p))
                .copied()
                .collect();
            if !wb.is_empty() {
                let mut wb_arms = vec![];
                for (p, _, op) in self.continuations_of(fi).into_iter().filter(|(p, ..)| framed.contains(p)) {
                    let pt = &self.points[p];
                    let params = self.fns[fi].graph.params();
                    let mut sets = vec![];
                    let layout = self.point_layout(p);
                    for (j, w) in wb.iter().enumerate() {
                        let Some(k) = params.iter().position(|x| x == w) else { continue };
                        let Some(a) = op.args.get(k) else { continue };
                        let arg = format_ident!("__l{}", j);
                        for t in self.written_back_targets(pt.f, a) {
                            if let Some(at) = pt.live.iter().position(|x| *x == t) {
                                let slot = self.layouts.borrow().slot_of(layout, at);
                                sets.push(quote!(*__f.vals.slots[#slot].list_mut() = #arg.clone();));
                            }
                        }
                    }
                    let pid = p as u32;
                    wb_arms.push(quote!(#pid => { #(#sets)* }));
                }
                let args: Vec<TokenStream> = (0..wb.len())
                    .map(|j| {
                        let a = format_ident!("__l{}", j);
                        quote!(#a: #rt::VList)
                    })
                    .collect();
                let name = format_ident!("__writeback_f{}", fi);
                delivers.push(quote! {
                    /// Writes the lists a returning function was given by
                    /// `&mut` back into its caller's variables.
                    #[allow(unused_variables, unreachable_patterns)]
                    fn #name<'a>(__st: &mut #rt::JitState<__Frame<'a>>, #(#args),*) {
                        let Some(__f) = __st.frames.last_mut() else { return };
                        match __f.point {
                            #(#wb_arms)*
                            _ => {}
                        }
                    }
                });
            }
            let name = format_ident!("__deliver_f{}", fi);
            delivers.push(quote! {
                #[allow(unused_variables, unreachable_patterns)]
                fn #name<'a>(__st: &mut #rt::JitState<__Frame<'a>>, __v: #rt_ty, __c: &mut #rt::Compilation<__Frame<'a>>) {
                    let Some(__f) = __st.frames.last_mut() else { return __c.decline("a return without a caller") };
                    match __f.point {
                        #(#arms)*
                        _ => __c.decline("a return without a caller"),
                    }
                }
            });
        }
        let mut promoted_arms = vec![];
        for (p, pt) in self.points.iter().enumerate().filter(|(p, _)| framed.contains(p)) {
            let Some(r) = pt.ret else { continue };
            let op = &self.fns[pt.f].graph.graph[pt.block].ops[pt.op - 1];
            if !self.promotes_run_time(pt.f, op) {
                continue;
            }
            let rr = self.repr(pt.f, r);
            let back = match &rr {
                Repr::G(sc) => from_word(*sc, quote!(__w)),
                Repr::GRef(t) => {
                    // What an `Rc` (`Arc`) points to. The code compiled for
                    // it holds a weak count, never given back: the value is
                    // dropped when Rust drops it, but its allocation stays,
                    // so no other object is made at that address, which the
                    // code's switch would take for this one.
                    let text = self.fns[pt.f].graph.shared_pointee(&op.args[0]).unwrap_or_default();
                    let shared = if text.trim_start().starts_with("Arc") || text.contains("::Arc") {
                        quote!(::std::sync::Arc)
                    } else {
                        quote!(::std::rc::Rc)
                    };
                    let t = rust_ty(t, None);
                    // SAFETY: the address of a live `T` an `Rc<T>` (`Arc<T>`)
                    // holds, read through it by the interpreter just now; the
                    // `Rc` made of it is not dropped (its count is not ours).
                    quote!(unsafe {
                        let __rc = ::core::mem::ManuallyDrop::new(#shared::<#t>::from_raw(__w as usize as *const #t));
                        ::core::mem::forget(#shared::downgrade(&*__rc));
                        &*(__w as usize as *const #t)
                    })
                }
                _ => continue,
            };
            let green = self.fns[pt.f].color(r) == Color::Green;
            let pack = crate::frame::pack_name(self.layouts.borrow_mut().of(&[(rr.clone(), green)]));
            let pid = p as u32;
            promoted_arms.push(quote!(#pid => __f.ret = Some(::std::boxed::Box::new(#pack(#back))),));
        }
        delivers.push(quote! {
            /// Hands a promoted value to the continuation of its promotion.
            #[allow(unused_variables, unreachable_patterns)]
            fn __deliver_promoted<'a>(__st: &mut #rt::JitState<__Frame<'a>>, __w: u64) {
                let __f = __st.frames.last_mut().expect("jitgen: a promoted value without its continuation");
                match __f.point {
                    #(#promoted_arms)*
                    _ => panic!("jitgen: a promoted value without its continuation"),
                }
            }

            fn __resume_fns() -> #rt::schedule::ResumeFns<__Frame<'static>> {
                #rt::schedule::ResumeFns { run: __run, deliver: __deliver_promoted, defer: __defer }
            }

            /// Ends the path in a flexswitch on `__v` (see `Compilation::flexswitch`).
            /// With `__every_turn`, the promotion runs on every turn of the
            /// portal's loop (see `Compilation::flexswitch_every_turn`).
            fn __promote<'a>(
                __c: &mut #rt::Compilation<__Frame<'a>>,
                __st: #rt::JitState<__Frame<'a>>,
                __v: &#rt::RedBox,
                __every_turn: bool,
            ) {
                #rt::ext::promote(__c, __forever(__st), __v, __every_turn, __resume_fns());
            }

            /// Ends the path in a lazily compiled continuation of `__st`.
            pub(super) fn __defer<'a>(
                __c: &mut #rt::Compilation<__Frame<'a>>,
                __st: #rt::JitState<__Frame<'a>>,
            ) {
                #rt::ext::flexswitch(__c, __forever(__st), None, __resume_fns());
            }

            /// A state kept by a flexswitch, beyond the compilation that made it.
            fn __forever<'a>(__st: #rt::JitState<__Frame<'a>>) -> #rt::JitState<__Frame<'static>> {
                // SAFETY: the green references in a state point into the
                // interpreter's data that the portal's key and content check
                // identify (or that a `specialize` result borrows). The state
                // is only resumed while residual code of its switch runs,
                // which is entered only under the same key and content, so
                // the data is alive and unchanged whenever it is used.
                unsafe {
                    ::core::mem::transmute::<
                        #rt::JitState<__Frame<'a>>,
                        #rt::JitState<__Frame<'static>>,
                    >(__st)
                }
            }
        });
        delivers
    }

    /// Point `p`: its function `__pointN` and its arm of `__run`.
    fn point_pieces(&mut self, p: usize) -> (TokenStream, TokenStream) {
        let rt = rt();
        let code = self.point_code(p);
        let pt = &self.points[p];
        let f = self.fns[pt.f];
        let pid = p as u32;
        // The code of a point may force a list in place: lists bind `mut`.
        let pats: Vec<TokenStream> = pt
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
        let unpack = crate::frame::unpack_name(self.point_layout(p));
        let ret = pt.ret.map(|r| {
            let values = [(self.repr(pt.f, r), f.color(r) == Color::Green)];
            let unvals = crate::frame::unpack_name(self.layouts.borrow_mut().of(&values));
            // (Kept whole too: a path that stops at this point again, to
            // bring spilled frames back first, gives the frame its result
            // back, see `point_code`.)
            quote! {
                let __ret_words = __frame.ret.take();
                let __ret = __ret_words.clone().map(|__r| #unvals(*__r).0);
            }
        });
        let is_join = pt.op == 0 && self.plans[pt.f].joins.contains(&pt.block);
        let merge_fn = if self.plans[pt.f].loop_heads.contains(&pt.block) {
            quote!(#rt::ext::loop_head)
        } else {
            quote!(#rt::ext::join)
        };
        let merge = is_join.then(|| {
            quote! {
                if !__frame.merged {
                    __frame.merged = true;
                    __st.frames.push(__frame);
                    break 'path #merge_fn(__c, __st);
                }
            }
        });
        let park = self.park_code(p);
        // The code of each point is a function of its own: the dispatch
        // stays a small match, and rustc and LLVM see hundreds of small
        // functions instead of one that holds every point.
        let point_fn = format_ident!("__point{}", p);
        // (The lints generated code may trip are allowed on `__jit`.)
        let code = quote! {
            #[inline(never)]
            fn #point_fn<'a>(__c: &mut __C<'a>, mut __st: __S<'a>, mut __frame: __Frame<'a>) -> ::core::option::Option<__S<'a>> {
                'path: {
                    #park
                    #merge
                    #ret
                    let (#(#pats,)*) = #unpack(__frame.vals);
                    #code
                }
            }
        };
        let run_arm = quote! {
            #pid => #point_fn(__c, __st, __frame),
        };
        (code, run_arm)
    }

    /// At point `p`, where a portal's hand-over comes back to its merge
    /// point: the state goes back to the interpreter proper (parked).
    fn park_code(&self, p: usize) -> TokenStream {
        if self.park_points.contains(&p) {
            // Back at the portal's merge point after a hand-over: the
            // portal continues in the interpreter proper from here.
            quote! {
                if __st.frames.is_empty() && __c.parking() {
                    // Virtualizable objects go back into memory first
                    // (execute mode: these stores happen now), and
                    // spilled frames into the lists they came from.
                    __st.heap.write_back(&mut __c.b);
                    __st.frames.push(__frame);
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

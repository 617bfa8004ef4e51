//! Timeshifting: colored flow graphs to generating extensions.
//!
//! The generating extension of a module is one resumable state machine over
//! *resume points* of all its functions: the entry of every block, the point
//! after every inlined call (a continuation), and the point after each global
//! merge point. Each resume point is a variant of the frame enum `__Frame`,
//! holding the variables live there (see `repr.rs` for how). `__run` pops the
//! innermost frame of a state, runs the code of that point (green operations
//! as Rust, red ones through red boxes) until the next resume point, and
//! pushes the next frame; an inlined call pushes a continuation and the
//! callee's entry; a return pops and hands the value to the continuation.
//! At the entry of a join block the state goes through the runtime's merge
//! logic first; a red branch forks through `split`.
//!
//! A promotion of a run-time value is a resume point too: the path ends in a
//! flexswitch whose cases resume the state there (`__promote`, `__defer`).
//! What cannot be compiled yet (structs with non-scalar fields, containers of
//! non-scalars at run-time positions, values jitgen cannot lay out) generates
//! a `decline` at that point: the compilation gives up and the interpreter
//! goes on.
//!
//! Lists given by `&mut` to inlined functions. Frames hold virtual lists by
//! value, so a helper such as `fn pop(stack: &mut Vec<i64>)` would force its
//! caller's list into memory to share it. Instead, a red `&mut Vec` of
//! scalars that is a parameter of an inlined function is a virtual list of
//! its own (`Gen::written_back_params`), live to every return, where
//! `__writeback_fN` assigns it to the caller's variables that were passed:
//! the argument and, through `same_as`, the list `&mut` was taken of
//! (`Gen::written_back_targets`). A `&mut list` taken only to be passed so is
//! such a list too (`Gen::written_back_aliases`); used any other way it is a
//! pointer, as before. A helper that gives the list to Rust's code forces it,
//! and the caller gets the real list back.
//!
//! Calls of a portal from compiled code (an interpreter whose calls recurse
//! in Rust) with its green arguments known are direct calls of the portal's
//! code specialized to them (`opaque_call`, `Gen::direct_inputs`; the entries
//! are `jit_module::direct_fns`): a native call where the entry has code, a
//! callback otherwise (see `jitgen_runtime::direct`).

use std::collections::{BTreeSet, HashMap, HashSet};

use hint_annotator::flowgraph::{BinOp, Const, Exit, HintKind, OpKind, UnOp, Value, Var};
use hint_annotator::types::{IntTy, Ty};
use hint_annotator::{CallKind, Color, ColoredGraph, ColoredGraphs, GREEN_RESULT_SUFFIX};
use petgraph::stable_graph::NodeIndex;
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};

use crate::repr::*;

/// A point where a compile-time state can be resumed.
pub struct Point {
    pub f: usize,
    pub block: NodeIndex,
    pub op: usize,
    pub live: Vec<Var>,
    /// For continuations: the call's result (delivered through `__ret`).
    pub ret: Option<Var>,
}

pub struct Gen<'g> {
    pub cg: &'g ColoredGraphs,
    pub fns: Vec<&'g ColoredGraph>,
    pub fn_ids: HashMap<String, usize>,
    pub points: Vec<Point>,
    pub point_ids: HashMap<(usize, NodeIndex, usize), usize>,
    pub enums: Vec<Ty>,
    pub callbacks: Vec<TokenStream>,
    /// Whether the interpreter reads its saved frames in place
    /// ([`Gen::frames_read_in_place`] is not empty).
    pub frames_in_place: bool,
    /// Portal merge points where execute mode may stop for the portal to
    /// continue in the interpreter proper (see `jit_module`).
    pub park_points: BTreeSet<usize>,
    /// Structs whose objects were made virtual (each gets a `VDesc`).
    pub(crate) vstructs: BTreeSet<String>,
    /// Portals that compiled code calls directly (see `jit_module::direct_fns`).
    pub(crate) direct_portals: HashSet<String>,
    /// Per function, its red `&mut Vec` of scalars that are virtual lists
    /// passed by value and written back (see `Gen::written_back`).
    written_back: Vec<BTreeSet<Var>>,
    joins: Vec<BTreeSet<NodeIndex>>,
    loop_heads: Vec<BTreeSet<NodeIndex>>,
    /// Set when the code just generated always declines: what follows it is unreachable.
    declined: std::cell::Cell<bool>,
}

/// Targets of back edges (depth-first from the start block): loop heads.
fn loop_heads(f: &ColoredGraph) -> BTreeSet<NodeIndex> {
    let g = &f.graph;
    let mut heads = BTreeSet::new();
    let mut state: HashMap<NodeIndex, u8> = HashMap::new(); // 1: on the stack, 2: done
    let mut stack = vec![(g.start, 0usize)];
    state.insert(g.start, 1);
    while let Some((b, i)) = stack.pop() {
        let succ: Vec<NodeIndex> = g.exits(b).into_iter().map(|e| g.link(e).0).collect();
        if i < succ.len() {
            stack.push((b, i + 1));
            let t = succ[i];
            match state.get(&t) {
                Some(1) => {
                    heads.insert(t);
                }
                Some(_) => {}
                None => {
                    state.insert(t, 1);
                    stack.push((t, 0));
                }
            }
        } else {
            state.insert(b, 2);
        }
    }
    heads
}

/// The scalar of a `&mut Vec` of scalars.
fn mut_scalar_vec(ty: &Ty) -> Option<Sc> {
    match ty {
        Ty::Ref { mutable: true, to } => match &**to {
            Ty::Vec(e) => scalar(e),
            _ => None,
        },
        _ => None,
    }
}

fn v_ident(v: Var) -> Ident {
    format_ident!("v{}", v.0)
}

impl<'g> Gen<'g> {
    pub fn new(cg: &'g ColoredGraphs) -> Gen<'g> {
        let fns: Vec<&ColoredGraph> = cg.functions().collect();
        let fn_ids = fns.iter().enumerate().map(|(i, f)| (f.name().to_string(), i)).collect();
        let mut g = Gen {
            cg,
            fns,
            fn_ids,
            points: vec![],
            point_ids: HashMap::new(),
            enums: vec![],
            callbacks: vec![],
            park_points: BTreeSet::new(),
            vstructs: BTreeSet::new(),
            direct_portals: HashSet::new(),
            written_back: vec![],
            joins: vec![],
            loop_heads: vec![],
            declined: std::cell::Cell::new(false),
            frames_in_place: false,
        };
        g.written_back = (0..g.fns.len()).map(|fi| g.written_back_params(fi)).collect();
        g.frames_in_place = !g.frames_read_in_place().is_empty();
        for fi in 0..g.fns.len() {
            let aliases = g.written_back_aliases(fi);
            g.written_back[fi].extend(aliases);
        }
        for fi in 0..g.fns.len() {
            let f = g.fns[fi];
            let mut preds: HashMap<NodeIndex, usize> = HashMap::new();
            for b in f.graph.blocks() {
                for e in f.graph.exits(b) {
                    *preds.entry(f.graph.link(e).0).or_default() += 1;
                }
            }
            g.joins.push(preds.into_iter().filter(|(_, n)| *n >= 2).map(|(b, _)| b).collect());
            g.loop_heads.push(loop_heads(f));
            for b in f.graph.blocks() {
                g.point(fi, b, 0, None);
                for (k, op) in f.graph.graph[b].ops.iter().enumerate() {
                    if g.inlined_callee(fi, op.result, &op.kind).is_some() {
                        g.point(fi, b, k + 1, Some(op.result));
                    }
                    if g.promotes_run_time(fi, op) {
                        g.point(fi, b, k + 1, Some(op.result));
                    }
                    if g.pops_frames(fi, op).is_some() || g.pops_hidden(fi, b, op).is_some() {
                        g.point(fi, b, k, None);
                    }
                    if op.kind == OpKind::GlobalMergePoint && k > 0 {
                        g.point(fi, b, k + 1, None);
                    }
                }
            }
            for v in 0..f.graph.vars.len() {
                collect_enums(&f.graph.vars[v].ty, cg.types(), &mut g.enums);
            }
            collect_enums(&f.graph.ret_ty, cg.types(), &mut g.enums);
        }
        g
    }

    /// Code that declines the compilation and ends the path.
    fn decline(&self, msg: &str) -> TokenStream {
        self.declined.set(true);
        quote! {{ __c.decline(#msg); break 'path None; }}
    }

    fn point(&mut self, f: usize, block: NodeIndex, op: usize, ret: Option<Var>) -> usize {
        if let Some(i) = self.point_ids.get(&(f, block, op)) {
            return *i;
        }
        let mut live = self.fns[f].live_before(block, op);
        // Written back at every return: live to the end.
        let params = self.fns[f].graph.params();
        live.extend(self.written_back[f].iter().filter(|v| params.contains(v)));
        let mut live: Vec<Var> = live.into_iter().collect();
        if let Some(r) = ret {
            live.retain(|v| *v != r);
        }
        self.points.push(Point { f, block, op, live, ret });
        self.point_ids.insert((f, block, op), self.points.len() - 1);
        self.points.len() - 1
    }

    /// An operation on a list of enums (see `Repr::VEList`), or `None` when
    /// `op` is not one. On a virtual list at compile-time positions nothing
    /// is emitted; otherwise the list is forced and the runtime's helpers
    /// for `Vec`s of flattened elements (`heap::Flat`) are called.
    fn enum_list_op(&mut self, fi: usize, op: &hint_annotator::flowgraph::Op) -> Option<TokenStream> {
        let rt = rt();
        let r = op.result;
        let args = &op.args;
        let base = match op.kind {
            OpKind::NewVec | OpKind::NewVecRepeat => None,
            OpKind::Len | OpKind::GetItem | OpKind::SetItem | OpKind::Push | OpKind::Pop => match args.first() {
                Some(Value::Var(v)) if matches!(self.repr(fi, *v), Repr::VEList(..) | Repr::RPtr) => Some(*v),
                _ => return None,
            },
            _ => return None,
        };
        // A `&mut Vec<E>` (a red pointer) is worked on as the real list it points to.
        let by_ref = base.is_some_and(|v| matches!(self.repr(fi, v), Repr::RPtr));
        let list_repr = match base {
            Some(v) if by_ref => match self.value_ty(fi, &Value::Var(v)).autoderef() {
                Ty::Vec(e) if is_enum(e) && plain(e, self.cg.types()) => {
                    Repr::VEList((**e).clone(), slots(e, self.cg.types(), 0)?.len())
                }
                _ => return None,
            },
            Some(v) => self.repr(fi, v),
            None => self.repr(fi, r),
        };
        let list_of = |v: Var| {
            let id = v_ident(v);
            if by_ref {
                quote!((#rt::vlist::VList::Real(#id)))
            } else {
                quote!(#id)
            }
        };
        let Repr::VEList(ety, n) = list_repr else { return None };
        let erepr = Repr::Enum(ety.clone(), n);
        let u = quote!(#rt::redbox::RedBox);
        let usize_r = Repr::R(Sc::Int(IntTy::Usize));
        let m = flat_marker(&ety);
        let class = elem_class(&quote!(#m).to_string());
        let (_, _, tys) = enum_helpers(&ety);
        let force = |l: &TokenStream| force_flat_list(&ety, n, l.clone());
        let et = rust_ty(&ety, None);
        Some(match (&op.kind, base) {
            (OpKind::Len, Some(l)) => {
                let l = list_of(l);
                let addr = force(&l);
                let ut = u64_valty();
                self.bind(
                    fi,
                    r,
                    quote!(match #l.len_w(#n) {
                        Some(__n) => __n,
                        None => {
                            let __a = #addr;
                            match #rt::heap::vec_layout::<#et>() {
                                Some(__vl) => __st.vec_len(&mut __c.b, &__a, __vl),
                                None => __c.b.red_call(#rt::heap::flat_vec_len::<#m>, "vec_len", &[__a], &[#ut])[0],
                            }
                        }
                    }),
                )
            }
            (OpKind::GetItem, Some(l)) => {
                let l = list_of(l);
                let addr = force(&l);
                let i = self.operand(fi, &args[1], &usize_r)?;
                self.bind(
                    fi,
                    r,
                    quote!({
                        let __i = #i;
                        match #l.get_w(&__i, #n) {
                            Some(__s) => <[#u; #n]>::try_from(__s).expect("n slots"),
                            None => {
                                let __a = #addr;
                                let __v = __st.flat_get::<#m>(&mut __c.b, &__a, &__i, #class, &#tys());
                                <[#u; #n]>::try_from(&__v[..]).expect("n slots")
                            }
                        }
                    }),
                )
            }
            (OpKind::SetItem, Some(l)) => {
                let l = list_of(l);
                let addr = force(&l);
                let i = self.operand(fi, &args[1], &usize_r)?;
                let x = self.operand(fi, &args[2], &erepr)?;
                quote!({
                    let (__i, __x) = (#i, #x);
                    if !#l.set_w(&__i, &__x) {
                        let __a = #addr;
                        __st.flat_set::<#m>(&mut __c.b, &__a, &__i, &__x, #class);
                    }
                })
            }
            (OpKind::Push, Some(l)) => {
                let l = list_of(l);
                let addr = force(&l);
                let x = self.operand(fi, &args[1], &erepr)?;
                quote!({
                    let __x = #x;
                    if !#l.push_w(&__x) {
                        let __a = #addr;
                        let __how = #rt::state::FlatVec::of::<#m>(#class);
                        __st.flat_vec_push(&mut __c.b, &__a, &__x, &__how);
                    }
                })
            }
            (OpKind::Pop, Some(l)) => {
                let l = list_of(l);
                let addr = force(&l);
                let (_, _, otys) = enum_helpers(&Ty::Option(Box::new(ety.clone())));
                let m1 = n + 1;
                self.bind(
                    fi,
                    r,
                    quote!(match #l.pop_w(#n) {
                        Some(Some(__e)) => {
                            let __t = #otys();
                            let mut __a: [#u; #m1] = #u::zeros(&__t);
                            __a[0] = #u::constant(__t[0], 1);
                            __a[1..].copy_from_slice(&__e);
                            __a
                        }
                        Some(None) => {
                            let __t = #otys();
                            #u::zeros(&__t)
                        }
                        None => {
                            let __a = #addr;
                            let __how = #rt::state::FlatVec::of::<#m>(#class);
                            let __v = __st.flat_vec_pop(&mut __c.b, &__a, &__how, &#otys());
                            <[#u; #m1]>::try_from(&__v[..]).expect("1 + n slots")
                        }
                    }),
                )
            }
            (OpKind::NewVec, None) => {
                let mut xs = vec![];
                for a in args {
                    xs.push(self.operand(fi, a, &erepr)?);
                }
                let addr = force(&quote!(__l));
                self.bind(
                    fi,
                    r,
                    quote!({
                        let mut __items: ::std::vec::Vec<#u> = ::std::vec::Vec::new();
                        #(__items.extend_from_slice(&#xs);)*
                        let __n = __items.len() / #n.max(1);
                        let mut __l = #rt::vlist::VList::Virtual(__items);
                        if __n > #rt::vlist::MAX_VIRTUAL_LEN {
                            #addr;
                        }
                        __l
                    }),
                )
            }
            (OpKind::NewVecRepeat, None) => {
                let x = self.operand(fi, &args[0], &erepr)?;
                let k = self.operand(fi, &args[1], &usize_r)?;
                self.bind(
                    fi,
                    r,
                    quote!({
                        let (__x, __k) = (#x, #k);
                        match __k.as_const() {
                            Some(__k) if (__k as usize) <= #rt::vlist::MAX_VIRTUAL_LEN => {
                                #rt::vlist::VList::Virtual(__x.repeat(__k as usize))
                            }
                            _ => {
                                __c.decline("`vec![x; n]` of enums with `n` not known at compile time");
                                break 'path None;
                            }
                        }
                    }),
                )
            }
            _ => return None,
        })
    }

    /// A `HashMap` operation (`Len` for `len()`): on a virtual dict at a
    /// constant key, nothing is emitted; otherwise Rust's own code is called.
    fn map_op(&mut self, fi: usize, r: Var, kind: &OpKind, args: &[Value]) -> TokenStream {
        let rt = rt();
        let Some(Value::Var(m)) = args.first() else { return self.decline("this map") };
        let Repr::VDict(ksc, vsc) = self.repr(fi, *m) else {
            return self.decline("a HashMap whose keys or values are not scalars, or known at compile time");
        };
        let id = v_ident(*m);
        let (kt, vt, kvt, vvt, u32t) = (sc_rust(ksc), sc_rust(vsc), sc_valty(ksc), sc_valty(vsc), u32_valty());
        let addr = force_dict(ksc, vsc, quote!(#id));
        let key = match args.get(1) {
            Some(k) => match self.operand(fi, k, &Repr::R(ksc)) {
                Some(k) => k,
                None => return self.decline("a key"),
            },
            None => quote!(#rt::redbox::RedBox::u64(0)),
        };
        let call = |f: TokenStream, name: &str, extra: TokenStream, rets: TokenStream| quote!({ let __a = #addr; __c.b.red_call(#rt::heap::#f::<#kt, #vt>, #name, &[__a #extra], &#rets) });
        let code = match kind {
            OpKind::Len => {
                let real = call(quote!(map_len), "map_len", quote!(), quote!([#rt::ops::ValTy::U64]));
                quote!(match #id.len_const() { Some(__n) => __n, None => (#real)[0] })
            }
            OpKind::MapContains => {
                let real = call(quote!(map_contains), "map_contains", quote!(, __k), quote!([#rt::ops::ValTy::Bool]));
                quote!({ let __k = #key; match #id.contains_const(&__k) { Some(__x) => __x, None => (#real)[0] } })
            }
            OpKind::MapGet | OpKind::MapRemove => {
                let (f, name, fast) = if *kind == OpKind::MapGet {
                    (quote!(map_get), "map_get", quote!(get_const))
                } else {
                    (quote!(map_remove), "map_remove", quote!(remove_const))
                };
                let real = call(f, name, quote!(, __k), quote!([#u32t, #vvt]));
                quote!({
                    let __k = #key;
                    match #id.#fast(&__k, #vvt) { Some(__x) => __x, None => { let __v = #real; [__v[0], __v[1]] } }
                })
            }
            _ => {
                let Some(v) = args.get(2).and_then(|v| self.operand(fi, v, &Repr::R(vsc))) else {
                    return self.decline("a value");
                };
                let real = call(quote!(map_insert), "map_insert", quote!(, __k, __x), quote!([#u32t, #vvt]));
                quote!({
                    let (__k, __x) = (#key, #v);
                    match #id.insert_const(&__k, &__x) { Some(__o) => __o, None => { let __v = #real; [__v[0], __v[1]] } }
                })
            }
        };
        let _ = kvt;
        match self.repr(fi, r) {
            Repr::Unit => quote!({ let _ = #code; }),
            _ => self.bind(fi, r, code),
        }
    }

    /// The local a struct operation's base is, when it may be virtual.
    fn vptr_local(&self, fi: usize, v: &Value) -> Option<Ident> {
        match v {
            Value::Var(x) if matches!(self.repr(fi, *x), Repr::VPtr) => Some(v_ident(*x)),
            _ => None,
        }
    }

    /// For a list operation on `t = getfield.f(p)` where `p` may be a
    /// virtual object and `f` one of its list fields: `(p, k)`, `f` being its
    /// list `k`. The operation works on a copy of the list, which then goes
    /// back into the object. This is sound because such a `t` is only used
    /// as the base of list operations (else the object is forced when `t` is
    /// read, see `list_temp_escapes`), and Rust's borrow rules keep the
    /// object's list from changing while `t` borrows it.
    fn field_list_of(&self, fi: usize, t: &Value) -> Option<(Ident, usize)> {
        let Value::Var(t) = t else { return None };
        let f = self.fns[fi];
        let op = f.graph.blocks().flat_map(|b| f.graph.graph[b].ops.iter()).find(|op| op.result == *t)?;
        let OpKind::GetField(name) = &op.kind else { return None };
        if self.list_temp_escapes(fi, *t) {
            // Moved out of the object, or read from the forced object. A
            // temporary that is only the base of list operations is written
            // back even when the object is owned: `m.stack.push(x)` on a
            // struct local reads the field as such a temporary, and writing
            // into a field a real move left behind is never observed.
            return None;
        }
        let p = self.vptr_local(fi, &op.args[0])?;
        let s = virtual_struct(&self.value_ty(fi, &op.args[0]), self.cg.types())?;
        match vfield_index(&self.cg.types().structs[&s], name, self.cg.types())? {
            Err(k) => Some((p, k)),
            Ok(_) => None,
        }
    }

    /// Whether the list `t` read from a field is used otherwise than as the
    /// base of list operations in its own block.
    fn list_temp_escapes(&self, fi: usize, t: Var) -> bool {
        let f = self.fns[fi];
        let tv = Value::Var(t);
        for b in f.graph.blocks() {
            let blk = &f.graph.graph[b];
            let defines = blk.ops.iter().any(|op| op.result == t);
            for op in &blk.ops {
                let list_op =
                    matches!(op.kind, OpKind::GetItem | OpKind::SetItem | OpKind::Len | OpKind::Push | OpKind::Pop);
                for (i, a) in op.args.iter().enumerate() {
                    if *a == tv && !(list_op && i == 0 && defines) {
                        return true;
                    }
                }
            }
            let in_exit = match &blk.exit {
                Exit::Return(v) => *v == tv,
                Exit::Branch { cond, .. } => *cond == tv,
                _ => false,
            };
            if in_exit || f.graph.exits(b).iter().any(|e| f.graph.link(*e).1.args.contains(&tv)) {
                return true;
            }
        }
        false
    }

    /// The list `op` pops or reads when it is a local `Vec` of structs
    /// whose objects may be virtual (the interpreter's saved frames): such
    /// an operation may resume on the continuation stack (compiled
    /// recursion, see the runtime's `compile::spill`) with its top frame
    /// virtual again, from a resume point before it.
    fn pops_frames(&self, fi: usize, op: &hint_annotator::flowgraph::Op) -> Option<Var> {
        match (&op.kind, op.args.first()) {
            (OpKind::Pop | OpKind::Len | OpKind::GetItem, Some(Value::Var(l)))
                if matches!(self.repr(fi, *l), Repr::VOList(_)) && self.fns[fi].color(*l) == Color::Red =>
            {
                Some(*l)
            }
            _ => None,
        }
    }

    /// For `t = getfield(p)`, a list field of a virtual object that this
    /// block pops, where the interpreter reads its saved frames in place:
    /// `(p, k)` as [`Gen::field_list_of`]. Such a pop may find the list's
    /// part below its tail hidden with spilled frames (`compile::spill`'s
    /// segments): the frame on top of the continuation stack is then popped
    /// first, so that its segment is back in the tail.
    fn pops_hidden(&self, fi: usize, b: NodeIndex, op: &hint_annotator::flowgraph::Op) -> Option<(Ident, usize)> {
        if !self.frames_in_place || !matches!(op.kind, OpKind::GetField(_)) {
            return None;
        }
        if !matches!(self.repr(fi, op.result), Repr::VList(_)) {
            return None;
        }
        let t = Value::Var(op.result);
        let ops = &self.fns[fi].graph.graph[b].ops;
        if !ops.iter().any(|o| o.kind == OpKind::Pop && o.args.first() == Some(&t)) {
            return None;
        }
        self.field_list_of(fi, &t)
    }

    /// The types of struct whose local `Vec`s the interpreter reads in
    /// place as well as pops (`len` or an index: `frames.last()`). Spilled
    /// by a recursion, such lists count their entries, so that their
    /// length is known (the runtime's `Frame::reads_saved_frames`,
    /// `VDesc::reads_in_place`).
    pub fn frames_read_in_place(&self) -> BTreeSet<String> {
        let (mut popped, mut read) = (BTreeSet::new(), BTreeSet::new());
        for fi in 0..self.fns.len() {
            for b in self.fns[fi].graph.blocks() {
                for op in &self.fns[fi].graph.graph[b].ops {
                    let Some(l) = self.pops_frames(fi, op) else { continue };
                    let Repr::VOList(s) = self.repr(fi, l) else { continue };
                    if op.kind == OpKind::Pop {
                        popped.insert(s);
                    } else {
                        read.insert(s);
                    }
                }
            }
        }
        popped.intersection(&read).cloned().collect()
    }

    /// Whether `op` promotes a red scalar: a flexswitch at run time, its
    /// continuation a resume point receiving the value through `__ret`.
    fn promotes_run_time(&self, fi: usize, op: &hint_annotator::flowgraph::Op) -> bool {
        op.kind == OpKind::Hint(HintKind::Promote)
            && matches!(self.value_repr(fi, &op.args[0]), Repr::R(_))
            && matches!(self.repr(fi, op.result), Repr::G(_))
    }

    /// The function a call is inlined from, when it is inlined.
    fn inlined_callee(&self, fi: usize, result: Var, kind: &OpKind) -> Option<usize> {
        let f = self.fns[fi];
        let OpKind::Call(name) = kind else { return None };
        if f.call_kind(result) == Some(CallKind::Green) {
            return None;
        }
        let target =
            if f.calls_green_result_copy(result) { format!("{name}{GREEN_RESULT_SUFFIX}") } else { name.clone() };
        let ci = *self.fn_ids.get(&target)?;
        if self.fns[ci].graph.opaque {
            return None;
        }
        Some(ci)
    }

    pub fn repr(&self, fi: usize, v: Var) -> Repr {
        let f = self.fns[fi];
        if self.written_back.get(fi).is_some_and(|w| w.contains(&v)) {
            if let Some(sc) = mut_scalar_vec(&f.graph.var(v).ty) {
                return Repr::VList(sc);
            }
        }
        repr(&f.graph.var(v).ty, f.color(v) == Color::Green, self.cg.types())
    }

    /// The red `&mut Vec` of scalars parameters of function `fi`, an
    /// inlined function (not a portal, not opaque): each is a virtual list
    /// given by value, live to every return, where it is written back to
    /// the caller's list (`__writeback_fN`). A helper such as `fn pop(stack:
    /// &mut Vec<i64>)` then works on the caller's list without forcing it
    /// into memory.
    fn written_back_params(&self, fi: usize) -> BTreeSet<Var> {
        let f = self.fns[fi];
        if f.is_portal() || f.graph.opaque {
            return BTreeSet::new();
        }
        f.graph
            .params()
            .iter()
            .filter(|p| f.color(**p) == Color::Red && mut_scalar_vec(&f.graph.var(**p).ty).is_some())
            .copied()
            .collect()
    }

    /// `&mut list` taken of a list to pass it to such parameters: a
    /// `same_as` of a variable that is a virtual list, whose every use is an
    /// argument of an inlined call for a written-back parameter (written
    /// back into the alias and into the list it was taken of).
    fn written_back_aliases(&self, fi: usize) -> Vec<Var> {
        let f = self.fns[fi];
        let mut out = vec![];
        for b in f.graph.blocks() {
            for op in &f.graph.graph[b].ops {
                let (OpKind::SameAs, [Value::Var(x)]) = (&op.kind, op.args.as_slice()) else { continue };
                if f.color(op.result) != Color::Red || mut_scalar_vec(&f.graph.var(op.result).ty).is_none() {
                    continue;
                }
                if !matches!(self.repr(fi, *x), Repr::VList(_)) {
                    continue;
                }
                if self.only_written_back_args(fi, op.result) {
                    out.push(op.result);
                }
            }
        }
        out
    }

    /// Whether every use of `v` in function `fi` is an argument of an
    /// inlined call for a written-back parameter.
    fn only_written_back_args(&self, fi: usize, v: Var) -> bool {
        let f = self.fns[fi];
        let val = Value::Var(v);
        for b in f.graph.blocks() {
            let blk = &f.graph.graph[b];
            for op in &blk.ops {
                let Some(k) = op.args.iter().position(|a| *a == val) else { continue };
                if op.args.iter().filter(|a| **a == val).count() > 1 {
                    return false;
                }
                let Some(ci) = self.inlined_callee(fi, op.result, &op.kind) else { return false };
                let callee = self.fns[ci];
                match callee.graph.params().get(k) {
                    Some(p) if self.written_back[ci].contains(p) => {}
                    _ => return false,
                }
            }
            let in_exit = match &blk.exit {
                Exit::Return(x) => *x == val,
                Exit::Branch { cond, .. } => *cond == val,
                _ => false,
            };
            let in_links = f.graph.exits(b).iter().any(|e| f.graph.link(*e).1.args.contains(&val));
            if in_exit || in_links {
                return false;
            }
        }
        true
    }

    /// The variables of a caller that a written-back argument `a` of a call
    /// in function `fi` updates: itself, and through `same_as` the list it
    /// was taken of, while they are virtual lists.
    fn written_back_targets(&self, fi: usize, a: &Value) -> Vec<Var> {
        let f = self.fns[fi];
        let mut out = vec![];
        let mut cur = match a {
            Value::Var(v) => Some(*v),
            Value::Const(_) => None,
        };
        while let Some(v) = cur {
            if !matches!(self.repr(fi, v), Repr::VList(_)) || out.contains(&v) {
                break;
            }
            out.push(v);
            cur = f.graph.blocks().find_map(|b| {
                f.graph.graph[b].ops.iter().find_map(|op| match (&op.kind, op.args.as_slice()) {
                    (OpKind::SameAs, [Value::Var(x)]) if op.result == v => Some(*x),
                    _ => None,
                })
            });
        }
        out
    }

    fn value_ty(&self, fi: usize, v: &Value) -> Ty {
        self.fns[fi].graph.value_ty(v)
    }

    /// The representation an operand has in the generated code.
    fn value_repr(&self, fi: usize, v: &Value) -> Repr {
        match v {
            Value::Var(x) => self.repr(fi, *x),
            Value::Const(c) => match scalar(&c.ty()) {
                Some(sc) => Repr::G(sc),
                None => Repr::Unit,
            },
        }
    }

    /// A constant as a Rust expression.
    fn const_expr(c: &Const) -> TokenStream {
        match c {
            Const::Int(v, t) => {
                let lit = proc_macro2::Literal::i128_unsuffixed(*v);
                let ty = Ident::new(t.name(), Span::call_site());
                quote!((#lit as #ty))
            }
            Const::Bool(b) => quote!(#b),
            Const::Char(ch) => quote!(#ch),
            Const::Float(x, _) => {
                let bits = x.to_bits();
                quote!(f64::from_bits(#bits))
            }
            Const::Unit => quote!(()),
            Const::Tag { index, .. } => quote!((#index as u32)),
        }
    }

    /// Converts an expression of one representation into another, or `None`
    /// when that is impossible (a red value needed green).
    fn convert(&self, e: TokenStream, from: &Repr, to: &Repr) -> Option<TokenStream> {
        let rt = rt();
        Some(match (from, to) {
            (_, Repr::Unit) => quote!(()),
            (Repr::G(_), Repr::G(_))
            | (Repr::GRef(_), Repr::GRef(_))
            | (Repr::GSlice(_), Repr::GSlice(_))
            | (Repr::R(_), Repr::R(_))
            | (Repr::RPtr, Repr::RPtr)
            | (Repr::RSlice, Repr::RSlice)
            | (Repr::Enum(..), Repr::Enum(..)) => e,
            (Repr::VList(_), Repr::VList(_))
            | (Repr::VEList(..), Repr::VEList(..))
            | (Repr::VDict(..), Repr::VDict(..))
            | (Repr::VOList(_), Repr::VOList(_)) => quote!((#e).clone()),
            (Repr::VOpt, Repr::VOpt) => e,
            (Repr::RPtr, Repr::VOList(_)) => quote!(#rt::virtuals::VPList::Real(#e)),
            (Repr::RPtr, Repr::VEList(..)) => quote!(#rt::vlist::VList::Real(#e)),
            (Repr::RPtr, Repr::VDict(..)) => quote!(#rt::vdict::VDict::Real(#e)),
            (Repr::VPtr, Repr::VPtr) => e,
            (Repr::RPtr, Repr::VPtr) => quote!(#rt::virtuals::VPtr::Real(#e)),
            (Repr::GRef(_), Repr::VPtr) => {
                let vt = ptr_valty();
                quote!(#rt::virtuals::VPtr::Real(#rt::redbox::RedBox::constant(#vt, (#e) as *const _ as *const u8 as usize as u64)))
            }
            (Repr::RPtr, Repr::VList(_)) => quote!(#rt::vlist::VList::Real(#e)),
            (Repr::G(sc), Repr::R(_)) => {
                let (vt, w) = (sc_valty(*sc), to_word(*sc, e));
                quote!(#rt::redbox::RedBox::constant(#vt, #w))
            }
            (Repr::GRef(_), Repr::RPtr) => {
                let vt = ptr_valty();
                quote!(#rt::redbox::RedBox::constant(#vt, (#e) as *const _ as *const u8 as usize as u64))
            }
            (Repr::GRef(Ty::Vec(_)), Repr::GSlice(_)) => quote!(&(#e)[..]),
            (Repr::GSlice(_), Repr::RSlice) => {
                let (pt, ut) = (ptr_valty(), u64_valty());
                quote!({
                    let __s = #e;
                    [
                        #rt::redbox::RedBox::constant(#pt, __s.as_ptr() as usize as u64),
                        #rt::redbox::RedBox::constant(#ut, __s.len() as u64),
                    ]
                })
            }
            _ => return None,
        })
    }

    /// An operand, converted to the representation `to`.
    fn operand(&self, fi: usize, v: &Value, to: &Repr) -> Option<TokenStream> {
        let (e, from) = match v {
            Value::Var(x) => {
                let id = v_ident(*x);
                if let (Repr::VList(sc), Repr::RPtr) = (self.repr(fi, *x), to) {
                    // Its address is needed: the list must exist in memory.
                    return Some(force_list(sc, quote!(#id)));
                }
                if let (Repr::VEList(ety, n), Repr::RPtr) = (self.repr(fi, *x), to) {
                    // Its address is needed: the list must exist in memory.
                    return Some(force_flat_list(&ety, n, quote!(#id)));
                }
                if let (Repr::VOList(s), Repr::RPtr) = (self.repr(fi, *x), to) {
                    // Its address is needed: frames over a real list move
                    // into memory; a virtual list (no memory) is not made
                    // real yet.
                    let msg = format!("a virtual `Vec<{s}>` whose address is needed");
                    let desc = format_ident!("__VDESC_{}", s);
                    return Some(quote!({
                        if #id.flush(&mut __c.b, &mut __st.heap, &#desc) {
                            __st.forget_fields();
                        }
                        match #id.address() {
                            Some(__a) => __a,
                            None => { __c.decline(#msg); break 'path None; }
                        }
                    }));
                }
                if let (Repr::VDict(k, v), Repr::RPtr) = (self.repr(fi, *x), to) {
                    return Some(force_dict(k, v, quote!(#id)));
                }
                if let (Repr::VPtr, Repr::RPtr) = (self.repr(fi, *x), to) {
                    // Its address is needed: the object escapes.
                    return Some(quote!(__st.heap.force(&mut __c.b, &#id)));
                }
                (quote!(#id), self.repr(fi, *x))
            }
            Value::Const(c) => (Self::const_expr(c), self.value_repr(fi, v)),
        };
        self.convert(e, &from, to)
    }

    /// A scalar operand as a red box.
    fn boxed(&self, fi: usize, v: &Value) -> Option<TokenStream> {
        let sc = scalar(&self.value_ty(fi, v))?;
        self.operand(fi, v, &Repr::R(sc))
    }

    /// A scalar operand as a Rust value (it must be green).
    fn green(&self, fi: usize, v: &Value) -> Option<TokenStream> {
        let sc = scalar(&self.value_ty(fi, v))?;
        self.operand(fi, v, &Repr::G(sc))
    }

    fn bind(&self, fi: usize, r: Var, e: TokenStream) -> TokenStream {
        let id = v_ident(r);
        let rr = self.repr(fi, r);
        let t = field_ty(&rr);
        if is_container(&rr) {
            return quote!(let mut #id: #t = #e;);
        }
        quote!(let #id: #t = #e;)
    }

    /// Binds `r` to an address (a red box): wrapped when `r` is a list.
    fn bind_ptr(&self, fi: usize, r: Var, e: TokenStream) -> TokenStream {
        let rt = rt();
        match self.repr(fi, r) {
            Repr::VList(_) | Repr::VEList(..) => self.bind(fi, r, quote!(#rt::vlist::VList::Real(#e))),
            Repr::VDict(..) => self.bind(fi, r, quote!(#rt::vdict::VDict::Real(#e))),
            Repr::VPtr => self.bind(fi, r, quote!(#rt::virtuals::VPtr::Real(#e))),
            Repr::VOList(_) => self.bind(fi, r, quote!(#rt::virtuals::VPList::Real(#e))),
            _ => self.bind(fi, r, e),
        }
    }

    fn overflow(op: BinOp) -> TokenStream {
        let rt = rt();
        match op {
            // As the user's build does (`__OVERFLOW`, emitted with the extension).
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Shl | BinOp::Shr => quote!(__OVERFLOW),
            // `MIN / -1` and `MIN % -1` panic in Rust whatever the build.
            BinOp::Div | BinOp::Rem => quote!(#rt::ops::Overflow::Check),
            _ => quote!(#rt::ops::Overflow::Wrap),
        }
    }

    /// Code for one operation (not an inlined call).
    fn op(&mut self, fi: usize, op: &hint_annotator::flowgraph::Op) -> TokenStream {
        let rr = self.repr(fi, op.result);
        let args = &op.args;
        if let Repr::Bad(why) = &rr {
            if !matches!(op.kind, OpKind::SetField(_) | OpKind::SetItem | OpKind::Push | OpKind::GlobalMergePoint) {
                return self.decline(&format!("jitgen cannot compile {why} yet (in `{}`)", op.source));
            }
        }
        let code = match self.enum_list_op(fi, op) {
            Some(code) => code,
            None => match self.obj_list_op(fi, op) {
                Some(code) => code,
                None => self.op_inner(fi, op),
            },
        };
        if matches!(op.kind, OpKind::GetItem | OpKind::SetItem | OpKind::Len | OpKind::Push | OpKind::Pop) {
            if let (Some((p, k)), Value::Var(t)) = (self.field_list_of(fi, &args[0]), &args[0]) {
                let t = v_ident(*t);
                return quote!(#code __st.heap.set_list(&#p, #k, &#t););
            }
        }
        code
    }

    /// An operation on a `Vec` of structs whose objects may be virtual (see
    /// `Repr::VOList`), or on the `Option` its `pop` gives; `None` when `op`
    /// is not one. A virtual list of pointers emits nothing; a real one is
    /// worked on in memory, its elements moved through the arena.
    fn obj_list_op(&mut self, fi: usize, op: &hint_annotator::flowgraph::Op) -> Option<TokenStream> {
        let rt = rt();
        let r = op.result;
        let args = &op.args;
        let base_repr = match args.first() {
            Some(Value::Var(v)) => self.repr(fi, *v),
            _ => Repr::Unit,
        };
        if let Repr::VOpt = base_repr {
            let a = self.operand(fi, &args[0], &base_repr)?;
            let rgreen = self.fns[fi].color(r) == Color::Green;
            return Some(match &op.kind {
                OpKind::EnumTag if rgreen => {
                    let msg = "an enum tag expected to be known";
                    self.bind(fi, r, quote!(match #a.0.as_const() { Some(__w) => __w as u32, None => { __c.decline(#msg); break 'path None; } }))
                }
                OpKind::EnumTag => self.bind(fi, r, quote!(#a.0)),
                OpKind::EnumField { .. } => self.bind(fi, r, quote!(#a.1)),
                OpKind::Unwrap => {
                    let msg = "called `Option::unwrap()` on a `None` value";
                    self.bind(
                        fi,
                        r,
                        quote!({
                            let __o = #a;
                            let __ok = __c.b.red_cmp(#rt::ops::CmpOp::Eq, &__o.0, &#rt::redbox::RedBox::constant(#rt::ops::ValTy::U32, 1));
                            if !__c.guard(&__ok, #rt::ops::ErrorKind::Abort(#rt::residual::message_id(#msg))) {
                                break 'path None;
                            }
                            __o.1
                        }),
                    )
                }
                _ => self.decline("this use of an `Option` of a struct"),
            });
        }
        let list_repr = match op.kind {
            OpKind::NewVec => self.repr(fi, r),
            OpKind::Len | OpKind::GetItem | OpKind::SetItem | OpKind::Push | OpKind::Pop => base_repr.clone(),
            _ => return None,
        };
        // A `&mut Vec<S>` (a red pointer) is worked on as the real list it points to.
        let by_ref = matches!(base_repr, Repr::RPtr) && !matches!(op.kind, OpKind::NewVec);
        let list_repr = match (&list_repr, args.first()) {
            (Repr::RPtr, Some(a)) if by_ref => match self.value_ty(fi, a).autoderef() {
                Ty::Vec(e) if matches!(**e, Ty::Struct(_)) => match virtual_struct(e, self.cg.types()) {
                    Some(s) => Repr::VOList(s),
                    None => return None,
                },
                _ => return None,
            },
            _ => list_repr,
        };
        let Repr::VOList(sname) = list_repr else { return None };
        let sn = format_ident!("{}", sname);
        let list_of = |v: Var| {
            let id = v_ident(v);
            if by_ref {
                quote!((#rt::virtuals::VPList::Real(#id)))
            } else {
                quote!(#id)
            }
        };
        // Pushes and pops go through the runtime (`VPList::push`, `pop`),
        // with the type's `VDesc`: how its objects move into memory.
        self.vstructs.insert(sname.clone());
        let desc = format_ident!("__VDESC_{}", sname);
        let decline = |what: &str| {
            let msg = format!("{what} on a `Vec<{sname}>` that is not virtual");
            quote!({ __c.decline(#msg); break 'path None; })
        };
        let (not_virtual, no_layout) = (decline("this operation"), decline("a layout not known"));
        let spilled = {
            let msg = format!("a language-level recursion whose frames are read (a `Vec<{sname}>` whose frames are on the continuation stack)");
            quote!({ __c.decline_recursion(#msg); break 'path None; })
        };
        let too_deep = {
            let msg = format!(
                "a `Vec<{sname}>` growing past {{}} virtual elements (recursion, when they are the interpreter's frames)"
            );
            quote!({
                __c.decline(format!(#msg, #rt::virtuals::MAX_VIRTUAL_PTRS));
                break 'path None;
            })
        };
        // A list with virtual elements over a real part, made all real
        // where memory is read.
        let flushed =
            |l: &TokenStream| quote!(if #l.flush(&mut __c.b, &mut __st.heap, &#desc) { __st.forget_fields(); });
        Some(match (&op.kind, &args[..]) {
            (OpKind::NewVec, xs) => {
                let mut ps = vec![];
                for x in xs {
                    ps.push(self.operand(fi, x, &Repr::VPtr)?);
                }
                let n = ps.len();
                self.bind(
                    fi,
                    r,
                    quote!({
                        if #n > #rt::virtuals::MAX_VIRTUAL_PTRS #too_deep
                        #rt::virtuals::VPList::Virtual(::std::vec![#(#ps),*])
                    }),
                )
            }
            (OpKind::Len, [Value::Var(l), ..]) => {
                // Virtual elements stay virtual: an index computed from the
                // length (`last()`) finds them (`JitState::frames_elem`).
                let l = list_of(*l);
                self.bind(
                    fi,
                    r,
                    quote!({
                        match __st.frames_len(&#l, &mut __c.b, #rt::heap::vec_layout::<#sn>()) {
                            Some(__n) => __n,
                            None if matches!(&#l, #rt::virtuals::VPList::Spilled { .. }) => #spilled,
                            None => #no_layout,
                        }
                    }),
                )
            }
            (OpKind::GetItem, [Value::Var(l), i]) => {
                let l = list_of(*l);
                let flush = flushed(&l);
                let i = self.operand(fi, i, &Repr::R(Sc::Int(IntTy::Usize)))?;
                self.bind(
                    fi,
                    r,
                    quote!({
                        let __i = #i;
                        match __st.frames_elem(&#l, &__c.b, &__i) {
                            Some(__p) => __p,
                            None => {
                        #flush
                        match &#l {
                            #rt::virtuals::VPList::Virtual(__items) => {
                                match __i.as_const().and_then(|__k| __items.get(__k as usize)) {
                                    Some(__p) => *__p,
                                    None => #not_virtual,
                                }
                            }
                            #rt::virtuals::VPList::Real(__a) | #rt::virtuals::VPList::Over(__a, _) => match #rt::heap::vec_layout::<#sn>() {
                                Some(__l) => #rt::virtuals::VPtr::Real(
                                    __st.vec_elem(&mut __c.b, __a, &__i, ::core::mem::size_of::<#sn>() as u64, __l),
                                ),
                                None => #no_layout,
                            },
                            #rt::virtuals::VPList::Spilled { .. } => #spilled,
                        }
                            }
                        }
                    }),
                )
            }
            (OpKind::Push, [Value::Var(l), x]) => {
                let l = list_of(*l);
                let x = self.operand(fi, x, &Repr::VPtr)?;
                quote!({
                    let __x = #x;
                    let __pushed = if __c.for_portal() {
                        #l.push(&mut __c.b, &mut __st.heap, &#desc, __x)
                    } else {
                        #l.push_spilling(&mut __c.b, &mut __st.heap, &#desc, __x)
                    };
                    match __pushed {
                        Ok(true) => __st.forget_fields(),
                        Ok(false) => {}
                        Err(()) => #too_deep,
                    }
                })
            }
            (OpKind::Pop, [Value::Var(l)]) => {
                let l = list_of(*l);
                self.bind(
                    fi,
                    r,
                    quote!({
                        let (__tag, __p, __from) = #l.pop(&mut __c.b, &mut __st.heap, &#desc);
                        if __from != #rt::virtuals::Popped::Virtual {
                            __st.forget_fields();
                            __st.below_entry |= __from == #rt::virtuals::Popped::BelowEntry;
                        }
                        (__tag, __p)
                    }),
                )
            }
            _ => self.decline(&format!("this operation on a `Vec<{sname}>`")),
        })
    }

    fn op_inner(&mut self, fi: usize, op: &hint_annotator::flowgraph::Op) -> TokenStream {
        let rt = rt();
        let f = self.fns[fi];
        let types = self.cg.types();
        let r = op.result;
        let rr = self.repr(fi, r);
        let rgreen = f.color(r) == Color::Green;
        let args = &op.args;
        macro_rules! need {
            ($e:expr, $why:expr) => {
                match $e {
                    Some(x) => x,
                    None => return self.decline($why),
                }
            };
        }
        match &op.kind {
            OpKind::Bin(b) if b.is_comparison() && is_enum(&self.value_ty(fi, &args[0])) => {
                if !rgreen {
                    return self.decline("comparing run-time enum values is not supported yet");
                }
                let a = need!(self.operand(fi, &args[0], &self.value_repr(fi, &args[0])), "enum operand");
                let c = need!(self.operand(fi, &args[1], &self.value_repr(fi, &args[1])), "enum operand");
                let e = if *b == BinOp::Eq { quote!(#a == #c) } else { quote!(#a != #c) };
                self.bind(fi, r, e)
            }
            OpKind::Bin(b) if b.is_comparison() => {
                let cmp = match b {
                    BinOp::Eq => quote!(Eq),
                    BinOp::Ne => quote!(Ne),
                    BinOp::Lt => quote!(Lt),
                    BinOp::Le => quote!(Le),
                    BinOp::Gt => quote!(Gt),
                    _ => quote!(Ge),
                };
                if rgreen {
                    let (a, c) =
                        (need!(self.green(fi, &args[0]), "operand"), need!(self.green(fi, &args[1]), "operand"));
                    let e = match b {
                        BinOp::Eq => quote!(#a == #c),
                        BinOp::Ne => quote!(#a != #c),
                        BinOp::Lt => quote!(#a < #c),
                        BinOp::Le => quote!(#a <= #c),
                        BinOp::Gt => quote!(#a > #c),
                        _ => quote!(#a >= #c),
                    };
                    self.bind(fi, r, e)
                } else {
                    let (a, c) =
                        (need!(self.boxed(fi, &args[0]), "operand"), need!(self.boxed(fi, &args[1]), "operand"));
                    self.bind(fi, r, quote!(__st.red_cmp(&mut __c.b, #rt::ops::CmpOp::#cmp, &#a, &#c)))
                }
            }
            OpKind::Bin(b) => {
                let (rop, ov) = match b {
                    BinOp::Add => (quote!(Add), Self::overflow(*b)),
                    BinOp::Sub => (quote!(Sub), Self::overflow(*b)),
                    BinOp::Mul => (quote!(Mul), Self::overflow(*b)),
                    BinOp::Div => (quote!(Div), Self::overflow(*b)),
                    BinOp::Rem => (quote!(Rem), Self::overflow(*b)),
                    BinOp::BitAnd => (quote!(And), Self::overflow(*b)),
                    BinOp::BitOr => (quote!(Or), Self::overflow(*b)),
                    BinOp::BitXor => (quote!(Xor), Self::overflow(*b)),
                    BinOp::Shl => (quote!(Shl), Self::overflow(*b)),
                    BinOp::Shr => (quote!(Shr), Self::overflow(*b)),
                    BinOp::WrappingAdd => (quote!(Add), Self::overflow(BinOp::Min)),
                    BinOp::WrappingSub => (quote!(Sub), Self::overflow(BinOp::Min)),
                    BinOp::WrappingMul => (quote!(Mul), Self::overflow(BinOp::Min)),
                    BinOp::WrappingDiv => (quote!(Div), Self::overflow(BinOp::Min)),
                    BinOp::WrappingRem => (quote!(Rem), Self::overflow(BinOp::Min)),
                    BinOp::Min => (quote!(Min), Self::overflow(*b)),
                    BinOp::Max => (quote!(Max), Self::overflow(*b)),
                    _ => unreachable!("comparisons handled above"),
                };
                let rty = f.graph.var(r).ty.clone();
                let Some(sc) = scalar(&rty) else { return self.decline("arithmetic on a non-scalar") };
                if rgreen {
                    let ty_a = need!(scalar(&self.value_ty(fi, &args[0])), "operand");
                    let ty_b = need!(scalar(&self.value_ty(fi, &args[1])), "operand");
                    let (a, c) =
                        (need!(self.green(fi, &args[0]), "operand"), need!(self.green(fi, &args[1]), "operand"));
                    let (wa, wc) = (to_word(ty_a, a), to_word(ty_b, c));
                    let vt = sc_valty(sc);
                    let back = from_word(sc, quote!(__w));
                    self.bind(
                        fi,
                        r,
                        quote!(match #rt::ops::fold_bin(#rt::ops::BinOp::#rop, #vt, #ov, #wa, #wc) {
                            Ok(__w) => #back,
                            Err(__k) => { __c.error_exit(__k); break 'path None; }
                        }),
                    )
                } else {
                    let (a, c) =
                        (need!(self.boxed(fi, &args[0]), "operand"), need!(self.boxed(fi, &args[1]), "operand"));
                    self.bind(fi, r, quote!(__c.b.red_bin(#rt::ops::BinOp::#rop, #ov, &#a, &#c)))
                }
            }
            OpKind::Un(u) => {
                let (rop, ov) = match u {
                    UnOp::Neg => (quote!(Neg), Self::overflow(BinOp::Add)),
                    UnOp::Abs => (quote!(Abs), Self::overflow(BinOp::Add)),
                    UnOp::Not => (quote!(Not), Self::overflow(BinOp::Min)),
                    UnOp::WrappingNeg => (quote!(Neg), Self::overflow(BinOp::Min)),
                };
                let Some(sc) = scalar(&f.graph.var(r).ty) else { return self.decline("arithmetic on a non-scalar") };
                if rgreen {
                    let a = need!(self.green(fi, &args[0]), "operand");
                    let (vt, wa, back) = (sc_valty(sc), to_word(sc, a), from_word(sc, quote!(__w)));
                    self.bind(
                        fi,
                        r,
                        quote!(match #rt::ops::fold_un(#rt::ops::UnOp::#rop, #vt, #ov, #wa) {
                            Ok(__w) => #back,
                            Err(__k) => { __c.error_exit(__k); break 'path None; }
                        }),
                    )
                } else {
                    let a = need!(self.boxed(fi, &args[0]), "operand");
                    self.bind(fi, r, quote!(__c.b.red_un(#rt::ops::UnOp::#rop, #ov, &#a)))
                }
            }
            OpKind::Cast => {
                let Some(sc) = scalar(&f.graph.var(r).ty) else { return self.decline("a cast to a non-scalar") };
                if rgreen {
                    let a = need!(self.green(fi, &args[0]), "operand");
                    let t = sc_rust(sc);
                    self.bind(fi, r, quote!((#a) as #t))
                } else {
                    let a = need!(self.boxed(fi, &args[0]), "operand");
                    let vt = sc_valty(sc);
                    self.bind(fi, r, quote!(__c.b.red_cast(&#a, #vt)))
                }
            }
            OpKind::SameAs
            | OpKind::Hint(HintKind::Concrete | HintKind::Deepfreeze | HintKind::Variable)
            | OpKind::Hint(HintKind::Promote) => {
                let from = self.value_repr(fi, &args[0]);
                if let (Repr::RSlice, Ty::Ref { to, .. }) = (&rr, self.value_ty(fi, &args[0])) {
                    if let Ty::Vec(et) = &*to {
                        // `&Vec<T>` as `&[T]`: the buffer and the length.
                        let Some(esc) = scalar(et) else { return self.decline("a slice of non-scalars") };
                        let (addr, _) = need!(self.red_object(fi, &args[0]), "a vector");
                        let t = sc_rust(esc);
                        return self.bind(
                            fi,
                            r,
                            quote!({
                                #addr
                                match #rt::heap::vec_layout::<#t>() {
                                    Some(__l) => [__st.vec_buf(&mut __c.b, &__addr, __l), __st.vec_len(&mut __c.b, &__addr, __l)],
                                    None => { __c.decline("a Vec whose layout is not known"); break 'path None; }
                                }
                            }),
                        );
                    }
                }
                if let Some(e) = self.operand(fi, &args[0], &rr) {
                    return self.bind(fi, r, e);
                }
                // A red value needed green: only a constant can be.
                match (&from, &rr) {
                    (Repr::R(sc), Repr::G(_)) => {
                        let a = need!(self.operand(fi, &args[0], &from), "operand");
                        let back = from_word(*sc, quote!(__w));
                        let msg = format!(
                            "`{}` needs a value known only at run time to be known while compiling, where no flexswitch can promote it",
                            op.source
                        );
                        self.bind(
                            fi,
                            r,
                            quote!(match (#a).as_const() {
                                Some(__w) => #back,
                                None => { __c.decline(#msg); break 'path None; }
                            }),
                        )
                    }
                    _ => self.decline(&format!("`{}`: this value cannot be made green here", op.source)),
                }
            }
            OpKind::GlobalMergePoint => quote!(),
            OpKind::Load => {
                let base_ty = self.value_ty(fi, &args[0]);
                let (Ty::Ref { to, .. } | Ty::Boxed(to)) = base_ty else {
                    return self.decline("a load through a non-pointer");
                };
                if rgreen {
                    let a = need!(self.operand(fi, &args[0], &self.value_repr(fi, &args[0])), "operand");
                    match &rr {
                        Repr::G(_) => self.bind(fi, r, quote!(*#a)),
                        Repr::Enum(t, _) => {
                            let e = self.enum_from_rust(t, quote!(&*#a));
                            self.bind(fi, r, e)
                        }
                        _ => self.decline("this load"),
                    }
                } else {
                    let Some(sc) = scalar(&to) else {
                        return self.decline("a load of a non-scalar through a run-time pointer");
                    };
                    let a = need!(self.operand(fi, &args[0], &Repr::RPtr), "operand");
                    let vt = sc_valty(sc);
                    self.bind(fi, r, quote!(__c.b.red_load(#vt, &#a, 0)))
                }
            }
            OpKind::GetField(name) => self.get_field(fi, r, &rr, rgreen, &args[0], name),
            OpKind::SetField(name) => {
                let (addr, s) = need!(self.red_object(fi, &args[0]), "a store into this object");
                let Ty::Struct(sname) = s else { return self.decline("a store into a non-struct") };
                if types.structs.get(&sname).is_none_or(|d| d.lifetimes > 0) {
                    return self.decline("a store into a struct with lifetime parameters");
                }
                let fty = types.structs[&sname].fields.get(name).cloned();
                if let (Some(le), Some(Err(k))) =
                    (fty.as_ref().and_then(|t| list_field(t, types)), vfield_index(&types.structs[&sname], name, types))
                {
                    // A list field of a virtual object: replaced in the
                    // virtual object, or written into the real one.
                    let Some(p) = self.vptr_local(fi, &args[0]) else {
                        return self.decline("a store into this list field");
                    };
                    let v = need!(self.operand(fi, &args[1], &le.repr()), "a list value");
                    let (sn, fname, t) = (format_ident!("{}", sname), member(name), le.rust());
                    let (store, w) = (le.store_fn(), le.width());
                    return quote!({
                        let __l: #rt::vlist::VList = ::core::clone::Clone::clone(&#v);
                        if !__st.heap.set_list(&#p, #k, &__l) {
                            #addr
                            let __dest = __c.b.red_offset(&__addr, ::core::mem::offset_of!(#sn, #fname) as u64);
                            let mut __l = __l;
                            __l.untail(&mut __c.b);
                            match __l {
                                #rt::vlist::VList::Real(__src) | #rt::vlist::VList::Tail(__src, ..) => {
                                    __c.b.red_call(#rt::heap::vec_move::<#t>, "vec_move", &[__dest, __src], &[]);
                                }
                                #rt::vlist::VList::Virtual(__items) => {
                                    let mut __a = ::std::vec![__dest, #rt::redbox::RedBox::u64((__items.len() / #w) as u64)];
                                    __a.extend_from_slice(&__items);
                                    __c.b.red_call(#store, "vec_store", &__a, &[]);
                                }
                            }
                            __st.forget_fields();
                        }
                    });
                }
                let Some(sc) = fty.as_ref().and_then(scalar) else {
                    return self.decline("a store of a non-scalar field through a run-time pointer");
                };
                let v = need!(self.operand(fi, &args[1], &Repr::R(sc)), "value");
                let (sn, fname) = (format_ident!("{}", sname), member(name));
                let class = alias_class(&sname);
                let real = quote!({
                    #addr
                    let __f = ::core::mem::offset_of!(#sn, #fname) as i32;
                    __st.store_field(&mut __c.b, &__addr, __f, &__x, #class, __f);
                });
                match self.vptr_local(fi, &args[0]) {
                    Some(p) => {
                        let Some(Ok(k)) = vfield_index(&types.structs[&sname], name, types) else {
                            return self.decline("a store into this field");
                        };
                        quote!({ let __x = #v; if !__st.heap.set_field(&#p, #k, &__x) #real })
                    }
                    None => quote!({ let __x = #v; #real }),
                }
            }
            OpKind::GetItem => self.get_item(fi, r, &rr, rgreen, &args[0], &args[1]),
            OpKind::Len => {
                let base_ty = self.value_ty(fi, &args[0]);
                if rgreen {
                    if let Ty::Array(_, n) = base_ty.autoderef() {
                        let n = *n as usize;
                        return self.bind(fi, r, quote!(#n));
                    }
                    let a = need!(self.operand(fi, &args[0], &self.value_repr(fi, &args[0])), "operand");
                    return self.bind(fi, r, quote!(#a.len()));
                }
                if let Ty::Map(..) = base_ty.autoderef() {
                    return self.map_op(fi, r, &OpKind::Len, args);
                }
                match base_ty.autoderef().clone() {
                    Ty::Slice(_) => {
                        let s = need!(self.operand(fi, &args[0], &Repr::RSlice), "slice");
                        self.bind(fi, r, quote!(#s[1]))
                    }
                    Ty::Vec(et) => {
                        let Some(esc) = scalar(&et) else {
                            return self.decline("a Vec of non-scalars in residual code");
                        };
                        let (addr, _) = need!(self.red_object(fi, &args[0]), "vector");
                        let t = sc_rust(esc);
                        let u = u64_valty();
                        let real = quote!({
                            #addr
                            match #rt::heap::vec_layout::<#t>() {
                                Some(__l) => __st.vec_len(&mut __c.b, &__addr, __l),
                                None => __c.b.red_call(#rt::heap::vec_len::<#t>, "vec_len", &[__addr], &[#u])[0],
                            }
                        });
                        match list_local(self, fi, &args[0]) {
                            Some(l) => self.bind(
                                fi,
                                r,
                                quote!(match #l.len_const() {
                                    Some(__n) => __n,
                                    None => match __st.tail_len(&mut __c.b, &#l) {
                                        Some(__n) => __n,
                                        None => #real,
                                    },
                                }),
                            ),
                            None => self.bind(fi, r, real),
                        }
                    }
                    _ => self.decline("the length of this value"),
                }
            }
            OpKind::SetItem => {
                let base_ty = self.value_ty(fi, &args[0]);
                match base_ty.autoderef().clone() {
                    Ty::Vec(et) => {
                        let Some(esc) = scalar(&et) else {
                            return self.decline("a Vec of non-scalars in residual code");
                        };
                        let (addr, _) = need!(self.red_object(fi, &args[0]), "vector");
                        let i = need!(self.operand(fi, &args[1], &Repr::R(Sc::Int(IntTy::Usize))), "index");
                        let x = need!(self.operand(fi, &args[2], &Repr::R(esc)), "value");
                        let t = sc_rust(esc);
                        let class = elem_class(&quote!(#t).to_string());
                        let real = quote!({
                            #addr
                            match #rt::heap::vec_layout::<#t>() {
                                Some(__l) => {
                                    let __e = __st.vec_elem(&mut __c.b, &__addr, &#i, ::core::mem::size_of::<#t>() as u64, __l);
                                    __st.store_field(&mut __c.b, &__e, 0, &#x, #class, 0);
                                }
                                None => {
                                    __c.b.red_call(#rt::heap::vec_set::<#t>, "vec_set", &[__addr, #i, #x], &[]);
                                }
                            }
                        });
                        match list_local(self, fi, &args[0]) {
                            Some(l) => {
                                quote!(if !#l.set_const(&#i, &#x) && !__st.tail_set(&mut __c.b, &mut #l, &#i, &#x) #real)
                            }
                            None => real,
                        }
                    }
                    cont @ (Ty::Slice(_) | Ty::Array(..)) => {
                        // Through `&mut [T]` or `&mut [T; N]`: a store at the
                        // element's address, bounds-checked.
                        let et = match &cont {
                            Ty::Slice(t) | Ty::Array(t, _) => (**t).clone(),
                            _ => Ty::Error,
                        };
                        let Some(esc) = scalar(&et) else {
                            return self.decline("a store of a non-scalar element through a run-time pointer");
                        };
                        let i = need!(self.operand(fi, &args[1], &Repr::R(Sc::Int(IntTy::Usize))), "index");
                        let x = need!(self.operand(fi, &args[2], &Repr::R(esc)), "value");
                        let addr = match self.elem_addr(fi, &args[0], &cont, &et, &quote!(__i)) {
                            Ok(a) => a,
                            Err(declined) => return declined,
                        };
                        // A known field like a `Vec`'s element (the slice
                        // may be one's buffer): the store forgets what it
                        // may overwrite.
                        let t = sc_rust(esc);
                        let class = elem_class(&quote!(#t).to_string());
                        quote!({
                            let __i = #i;
                            let __x = #x;
                            let __a = #addr;
                            __st.store_field(&mut __c.b, &__a, 0, &__x, #class, 0);
                        })
                    }
                    _ => self.decline("a store into this kind of sequence in residual code"),
                }
            }
            OpKind::Push | OpKind::Pop => {
                let base_ty = self.value_ty(fi, &args[0]);
                let Ty::Vec(et) = base_ty.autoderef().clone() else { return self.decline("push/pop on a non-Vec") };
                let Some(esc) = scalar(&et) else { return self.decline("a Vec of non-scalars in residual code") };
                let (addr, _) = need!(self.red_object(fi, &args[0]), "vector");
                let (t, vt, u32t) = (sc_rust(esc), sc_valty(esc), u32_valty());
                let list = list_local(self, fi, &args[0]);
                // In place where the `Vec` layout is known (`JitState::vec_push`,
                // `vec_pop`), else by the runtime's helpers.
                let class = elem_class(&quote!(#t).to_string());
                let size = quote!(::core::mem::size_of::<#t>() as u64);
                if op.kind == OpKind::Push {
                    let x = need!(self.operand(fi, &args[1], &Repr::R(esc)), "value");
                    let real = quote!({
                        #addr
                        match #rt::heap::vec_header::<#t>() {
                            Some(__h) => __st.vec_push(&mut __c.b, &__addr, &__x, __h, #size, #class, #rt::heap::vec_reserve_one::<#t>),
                            None => {
                                __c.b.red_call(#rt::heap::vec_push::<#t>, "vec_push", &[__addr, __x], &[]);
                            }
                        }
                    });
                    match list {
                        Some(l) => quote!({ let __x = #x; if !#l.push_virtual(&__x) #real }),
                        None => quote!({ let __x = #x; #real }),
                    }
                } else {
                    let real = quote!({
                        #addr
                        match #rt::heap::vec_header::<#t>() {
                            Some(__h) => __st.vec_pop(&mut __c.b, &__addr, #vt, __h, #size, #class),
                            None => {
                                let __v = __c.b.red_call(#rt::heap::vec_pop::<#t>, "vec_pop", &[__addr], &[#u32t, #vt]);
                                [__v[0], __v[1]]
                            }
                        }
                    });
                    match list {
                        Some(l) => self.bind(
                            fi,
                            r,
                            quote!(match #l.pop_virtual() {
                                Some(Some(__x)) => [#rt::redbox::RedBox::constant(#u32t, 1), __x],
                                Some(None) => [#rt::redbox::RedBox::constant(#u32t, 0), #rt::redbox::RedBox::constant(#vt, 0)],
                                None => #real,
                            }),
                        ),
                        None => self.bind(fi, r, real),
                    }
                }
            }
            OpKind::NewVec | OpKind::NewVecRepeat => {
                let Ty::Vec(et) = f.graph.var(r).ty.clone() else { return self.decline("a vector") };
                let Some(esc) = scalar(&et) else { return self.decline("a Vec of non-scalars in residual code") };
                let t = sc_rust(esc);
                let p = ptr_valty();
                if op.kind == OpKind::NewVecRepeat {
                    let x = need!(self.operand(fi, &args[0], &Repr::R(esc)), "element");
                    let n = need!(self.operand(fi, &args[1], &Repr::R(Sc::Int(IntTy::Usize))), "count");
                    let real = quote!(__c.b.red_call(#rt::heap::vec_new_repeat::<#t>, "vec_new_repeat", &[__x, __n], &[#p])[0]);
                    if matches!(self.repr(fi, r), Repr::VList(_)) {
                        self.bind(
                            fi,
                            r,
                            quote!({
                                let (__x, __n) = (#x, #n);
                                match #rt::vlist::VList::repeat(&__x, &__n) {
                                    Some(__l) => __l,
                                    None => #rt::vlist::VList::Real(#real),
                                }
                            }),
                        )
                    } else {
                        self.bind(fi, r, quote!({ let (__x, __n) = (#x, #n); #real }))
                    }
                } else if matches!(self.repr(fi, r), Repr::VList(_)) && args.len() <= 64 {
                    let mut xs = vec![];
                    for a in args {
                        xs.push(need!(self.operand(fi, a, &Repr::R(esc)), "element"));
                    }
                    self.bind(fi, r, quote!(#rt::vlist::VList::Virtual(::std::vec![#(#xs),*])))
                } else {
                    let mut pushes = vec![];
                    for a in args {
                        let x = need!(self.operand(fi, a, &Repr::R(esc)), "element");
                        pushes.push(quote!({
                            __c.b.red_call(#rt::heap::vec_push::<#t>, "vec_push", &[__p, #x], &[]);
                        }));
                    }
                    self.bind_ptr(
                        fi,
                        r,
                        quote!({
                            let __p = __c.b.red_call(#rt::heap::vec_new::<#t>, "vec_new", &[], &[#p])[0];
                            #(#pushes)*
                            __p
                        }),
                    )
                }
            }
            OpKind::NewMap => match rr {
                Repr::VDict(..) => self.bind(fi, r, quote!(#rt::vdict::VDict::new())),
                _ => self.decline("a HashMap of non-scalars in residual code"),
            },
            OpKind::MapInsert | OpKind::MapGet | OpKind::MapRemove | OpKind::MapContains => {
                self.map_op(fi, r, &op.kind, args)
            }
            OpKind::NewStruct(s) if matches!(rr, Repr::RPtr) && owning_struct(s, types) => {
                self.new_owning_struct(fi, r, s, args)
            }
            OpKind::NewStruct(s) => {
                let Repr::VPtr = rr else {
                    return self.decline(&format!(
                        "allocating a `{s}` in residual code (only structs whose fields are scalars, or lists of scalars or of plain enums, can be virtual yet)"
                    ));
                };
                let d = types.structs[s].clone();
                let mut fields = vec![];
                let mut lists = vec![];
                for (a, t) in args.iter().zip(d.fields.values()) {
                    match list_field(t, types) {
                        Some(le) => lists.push(need!(self.operand(fi, a, &le.repr()), "a list value")),
                        None => {
                            let sc = scalar(t).expect("a virtual struct's fields are scalars or lists");
                            fields.push(need!(self.operand(fi, a, &Repr::R(sc)), "a field value"));
                        }
                    }
                }
                self.vstructs.insert(s.clone());
                let desc = format_ident!("__VDESC_{}", s);
                self.bind(fi, r, quote!(__st.heap.alloc(&#desc, ::std::vec![#(#fields),*], ::std::vec![#(#lists),*])))
            }
            OpKind::NewBox => match (&rr, self.value_repr(fi, &args[0])) {
                (Repr::VPtr, Repr::VPtr) => {
                    // The boxed value moves into the box: the same object.
                    let a = need!(self.operand(fi, &args[0], &rr), "the boxed value");
                    self.bind(fi, r, a)
                }
                _ => self.decline("allocating a Box of this type in residual code"),
            },
            OpKind::MakeEnum { index, .. } if matches!(rr, Repr::VOpt) => {
                // `None`, or `Some` of an object: a tag and the object.
                let tag = *index as u64;
                let obj = match args.first() {
                    Some(a) => need!(self.operand(fi, a, &Repr::VPtr), "the object"),
                    None => {
                        let pt = ptr_valty();
                        quote!(#rt::virtuals::VPtr::Real(#rt::redbox::RedBox::constant(#pt, 0)))
                    }
                };
                self.bind(fi, r, quote!((#rt::redbox::RedBox::constant(#rt::ops::ValTy::U32, #tag), #obj)))
            }
            OpKind::MakeEnum { variant, index, .. } => {
                let ty = f.graph.var(r).ty.clone();
                let Repr::Enum(_, n) = rr.clone() else { return self.decline("this enum value") };
                let (_, _, tys) = enum_helpers(&ty);
                let tag = *index as u64;
                let mut sets = vec![];
                for (i, a) in args.iter().enumerate() {
                    let Some((off, fty)) = field_offset(&ty, variant, i, types) else {
                        return self.decline("an enum payload");
                    };
                    match repr(&fty, false, types) {
                        Repr::R(sc) => {
                            let x = need!(self.operand(fi, a, &Repr::R(sc)), "payload");
                            sets.push(quote!(__e[#off] = #x;));
                        }
                        Repr::Enum(_, w) => {
                            let x = need!(self.operand(fi, a, &self.value_repr(fi, a)), "payload");
                            let end = off + w;
                            sets.push(quote!(__e[#off..#end].copy_from_slice(&#x);));
                        }
                        Repr::RPtr => {
                            let x = need!(self.operand(fi, a, &Repr::RPtr), "payload");
                            sets.push(quote!(__e[#off] = #x;));
                        }
                        Repr::Unit => {}
                        _ => return self.decline("an enum payload of this type"),
                    }
                }
                self.bind(
                    fi,
                    r,
                    quote!({
                        let __t = #tys();
                        let mut __e: [#rt::redbox::RedBox; #n] = #rt::redbox::RedBox::zeros(&__t);
                        __e[0] = #rt::redbox::RedBox::constant(#rt::ops::ValTy::U32, #tag);
                        #(#sets)*
                        __e
                    }),
                )
            }
            OpKind::EnumTag => {
                let a = need!(self.operand(fi, &args[0], &self.value_repr(fi, &args[0])), "enum");
                if rgreen {
                    let msg = "an enum tag expected to be known";
                    self.bind(fi, r, quote!(match #a[0].as_const() { Some(__w) => __w as u32, None => { __c.decline(#msg); break 'path None; } }))
                } else {
                    self.bind(fi, r, quote!(#a[0]))
                }
            }
            OpKind::EnumField { variant, index } => {
                let ety = self.value_ty(fi, &args[0]);
                let a = need!(self.operand(fi, &args[0], &self.value_repr(fi, &args[0])), "enum");
                let Some((off, _)) = field_offset(&ety, variant, *index as usize, types) else {
                    return self.decline("an enum payload");
                };
                self.payload(fi, r, &rr, a, off)
            }
            OpKind::Unwrap => {
                let ety = self.value_ty(fi, &args[0]);
                let (succ, variant, msg) = match ety {
                    Ty::Option(_) => (1u64, "Some", "called `Option::unwrap()` on a `None` value"),
                    _ => (0u64, "Ok", "called `Result::unwrap()` on an `Err` value"),
                };
                let a = need!(self.operand(fi, &args[0], &self.value_repr(fi, &args[0])), "enum");
                let Some((off, _)) = field_offset(&ety, variant, 0, types) else { return self.decline("unwrap") };
                let check = quote!({
                    let __ok = __c.b.red_cmp(#rt::ops::CmpOp::Eq, &#a[0], &#rt::redbox::RedBox::constant(#rt::ops::ValTy::U32, #succ));
                    if !__c.guard(&__ok, #rt::ops::ErrorKind::Abort(#rt::residual::message_id(#msg))) {
                        break 'path None;
                    }
                });
                let take = self.payload(fi, r, &rr, a, off);
                quote!(#check #take)
            }
            OpKind::Call(name) => {
                // Green calls run now, as Rust; inlined calls are handled by the block.
                self.green_call(fi, r, &rr, name, args)
            }
            OpKind::CallOpaque(name) => self.opaque_call(fi, r, name, args, None),
            OpKind::Format { mac, template, names } => {
                let shown = format!("{mac}!");
                self.opaque_call(fi, r, &shown, args, Some((mac, template, names)))
            }
        }
    }

    /// A callback of residual code (see `jitgen_runtime::ir::builder::CallbackFn`)
    /// running `body` on its buffer `__b` of `width` words; its name.
    fn callback(&mut self, width: usize, body: TokenStream) -> Ident {
        let rt = rt();
        let cb = format_ident!("__cb{}", self.callbacks.len());
        self.callbacks.push(quote! {
            #[allow(unused_unsafe, clippy::all)]
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

    /// A struct of scalars and `String`s (see `owning_struct`), made by a
    /// residual call that moves its strings into it, in the arena.
    fn new_owning_struct(&mut self, fi: usize, r: Var, s: &str, args: &[Value]) -> TokenStream {
        let rt = rt();
        let d = self.cg.types().structs[s].clone();
        let (mut arg_code, mut inits) = (vec![], vec![]);
        for (at, (a, (name, t))) in args.iter().zip(&d.fields).enumerate() {
            let fid = member(name);
            let (x, read) = match scalar(t) {
                Some(sc) => (self.operand(fi, a, &Repr::R(sc)), from_word(sc, quote!(__b[#at]))),
                // SAFETY: the address of a live `String` the struct
                // literal moves (the analysis's types say so).
                None => (self.operand(fi, a, &Repr::RPtr), quote!(unsafe { #rt::heap::take_string(__b[#at]) })),
            };
            let Some(x) = x else { return self.decline("a field value") };
            arg_code.push(quote!(__args.push(#x);));
            inits.push(quote!(#fid: #read));
        }
        let (sn, width, pt) = (format_ident!("{}", s), args.len().max(1), ptr_valty());
        let name = format!("new {s}");
        let cb = self.callback(
            width,
            quote! {
                let __r = #sn { #(#inits),* };
                __b[0] = #rt::heap::arena_alloc(__r) as usize as u64;
            },
        );
        let bind = self.bind(fi, r, quote!(__v[0]));
        quote! {
            let __v = {
                let mut __args = ::std::vec::Vec::new();
                #(#arg_code)*
                __c.b.red_call(#cb, #name, &__args, &[#pt])
            };
            #bind
        }
    }

    /// The strings residual code makes in block `b` that die in it, by the
    /// op after which each is dead: made there by a residual call (so in
    /// the arena), and only borrowed (formatted, `len`, `is_empty`,
    /// `clear`, or a reference taken for those) in `b` and nowhere else.
    /// Dropping them keeps a loop that makes a temporary string per turn
    /// from growing the arena.
    fn dead_strings(&self, fi: usize, b: NodeIndex) -> HashMap<usize, Vec<Var>> {
        let f = self.fns[fi];
        let ops = &f.graph.graph[b].ops;
        let borrowed = |kind: &OpKind| match kind {
            OpKind::Format { .. } => true,
            OpKind::CallOpaque(n) => {
                matches!(
                    n.as_str(),
                    "std::string::String::len" | "std::string::String::is_empty" | "std::string::String::clear"
                )
            }
            _ => false,
        };
        let mut out: HashMap<usize, Vec<Var>> = HashMap::new();
        for (d, def) in ops.iter().enumerate() {
            if f.graph.var(def.result).ty != Ty::Str
                || !matches!(def.kind, OpKind::Format { .. } | OpKind::CallOpaque(_))
            {
                continue;
            }
            // The string and its references, and where they are last used.
            let mut names = vec![Value::Var(def.result)];
            let mut last = d;
            for (j, op) in ops.iter().enumerate().skip(d + 1) {
                if !op.args.iter().any(|a| names.contains(a)) {
                    continue;
                }
                let alias = matches!(op.kind, OpKind::SameAs) && op.args.len() == 1;
                if !(alias || borrowed(&op.kind)) {
                    last = usize::MAX;
                    break;
                }
                if alias {
                    names.push(Value::Var(op.result));
                }
                last = j;
            }
            if last == usize::MAX {
                continue;
            }
            let elsewhere = f.graph.blocks().any(|c| {
                let blk = &f.graph.graph[c];
                let exit_uses = match &blk.exit {
                    Exit::Return(v) => names.contains(v),
                    Exit::Branch { cond, .. } => names.contains(cond),
                    _ => false,
                };
                let link_uses =
                    f.graph.exits(c).iter().any(|e| f.graph.link(*e).1.args.iter().any(|a| names.contains(a)));
                exit_uses || link_uses || (c != b && blk.ops.iter().any(|op| op.args.iter().any(|a| names.contains(a))))
            });
            if !elsewhere {
                out.entry(last).or_default().push(def.result);
            }
        }
        out
    }

    /// A payload slot (or slots) of an enum array `a` at `off`, as `r`.
    fn payload(&self, fi: usize, r: Var, rr: &Repr, a: TokenStream, off: usize) -> TokenStream {
        let rt = rt();
        match rr {
            Repr::G(sc) => {
                let back = from_word(*sc, quote!(__w));
                self.bind(
                    fi,
                    r,
                    quote!(match #a[#off].as_const() { Some(__w) => #back, None => { __c.decline("a payload expected to be known"); break 'path None; } }),
                )
            }
            Repr::R(_) => self.bind(fi, r, quote!(#a[#off])),
            Repr::RPtr | Repr::VList(_) => self.bind_ptr(fi, r, quote!(#a[#off])),
            Repr::Enum(_, n) => {
                let end = off + n;
                self.bind(fi, r, quote!(#rt::redbox::first_n::<#n>(&#a[#off..#end])))
            }
            Repr::GRef(t) => {
                // A pointer in a green enum value read from frozen data.
                let ty = rust_ty(t, Some(&quote!('a)));
                self.bind(
                    fi,
                    r,
                    quote!(match #a[#off].as_const() {
                        // SAFETY: green enum values come from frozen data
                        // borrowed for the whole compilation.
                        Some(__w) => unsafe { &*(__w as usize as *const #ty) },
                        None => { __c.decline("a pointer expected to be known"); break 'path None; }
                    }),
                )
            }
            Repr::Unit => quote!(),
            _ => self.decline("this enum payload"),
        }
    }

    /// A green enum value as an array of constant boxes, from a Rust place.
    fn enum_from_rust(&mut self, ty: &Ty, place: TokenStream) -> TokenStream {
        let rt = rt();
        if !self.enums.contains(ty) {
            self.enums.push(ty.clone());
        }
        let (flat, _, tys) = enum_helpers(ty);
        quote!({
            let __w = #flat(#place);
            let __t = #tys();
            #rt::redbox::RedBox::constants(&__t, &__w)
        })
    }

    /// Statements that bind `__addr` (a red box) to the address of the object
    /// an operand designates, following references and boxes; and the type of
    /// that object.
    fn red_object(&self, fi: usize, v: &Value) -> Option<(TokenStream, Ty)> {
        let rt = rt();
        let ty = self.value_ty(fi, v);
        let start = self.operand(fi, v, &Repr::RPtr)?;
        let mut code = quote!(let __addr = #start;);
        if let (Repr::VPtr, Some(s)) = (self.value_repr(fi, v), virtual_struct(&ty, self.cg.types())) {
            // Whatever its type (`S`, `Box<S>`, `&S`, `&Box<S>`), the address
            // of the struct.
            return Some((code, Ty::Struct(s)));
        }
        // The operand's box holds the address of the object its type designates.
        let mut cur = match &ty {
            Ty::Ref { to, .. } => (**to).clone(),
            Ty::Boxed(inner) => (**inner).clone(),
            other => other.clone(),
        };
        loop {
            match cur {
                Ty::Ref { to, .. } | Ty::Boxed(to) if !matches!(*to, Ty::Slice(_)) => {
                    code = quote!(#code let __addr = __c.b.red_load(#rt::ops::ValTy::Ptr, &__addr, 0););
                    cur = *to;
                }
                Ty::Ref { .. } | Ty::Boxed(_) => return None,
                other => return Some((code, other)),
            }
        }
    }

    fn get_field(&mut self, fi: usize, r: Var, rr: &Repr, rgreen: bool, base: &Value, name: &str) -> TokenStream {
        let rt = rt();
        let types = self.cg.types();
        let fname = member(name);
        let rty = self.fns[fi].graph.var(r).ty.clone();
        if rgreen {
            let Some(b) = self.operand(fi, base, &self.value_repr(fi, base)) else {
                return self.decline("a field read");
            };
            return match rr {
                Repr::G(_) => self.bind(fi, r, quote!(#b.#fname)),
                Repr::GRef(_) => match &rty {
                    Ty::Ref { .. } => self.bind(fi, r, quote!(#b.#fname)),
                    _ => self.bind(fi, r, quote!(&#b.#fname)),
                },
                Repr::GSlice(_) => self.bind(fi, r, quote!(&#b.#fname[..])),
                Repr::Enum(t, _) => {
                    let e = self.enum_from_rust(&t.clone(), quote!(&#b.#fname));
                    self.bind(fi, r, e)
                }
                Repr::Unit => quote!(),
                _ => self.decline("this field read"),
            };
        }
        let Some((addr, Ty::Struct(sname))) = self.red_object(fi, base) else {
            return self.decline("a field read through this pointer");
        };
        if let (Some(p), Repr::VList(_) | Repr::VEList(..)) = (self.vptr_local(fi, base), rr) {
            if let Some(Err(k)) = types.structs.get(&sname).and_then(|d| vfield_index(d, name, types)) {
                // A copy of the object's list, written back after each
                // operation on it (see `field_list_of`); forced first when
                // the copy would be used otherwise.
                let sn = format_ident!("{}", sname);
                // A list moved out of an owned object is the object's list
                // itself; one read through a reference is a copy.
                let escapes = !moves_out(&self.value_ty(fi, base)) && self.list_temp_escapes(fi, r);
                return self.bind(
                    fi,
                    r,
                    quote!(match __st.heap.list(&#p, #k) {
                        Some(__l) if !#escapes => __l,
                        _ => {
                            #addr
                            #rt::vlist::VList::Real(__c.b.red_offset(&__addr, ::core::mem::offset_of!(#sn, #fname) as u64))
                        }
                    }),
                );
            }
        }
        if let (Some(p), Repr::R(sc)) = (self.vptr_local(fi, base), rr) {
            if let Some(Ok(k)) = types.structs.get(&sname).and_then(|d| vfield_index(d, name, types)) {
                let (sn, vt, class) = (format_ident!("{}", sname), sc_valty(*sc), alias_class(&sname));
                return self.bind(
                    fi,
                    r,
                    quote!(match __st.heap.field(&#p, #k) {
                        Some(__x) => __x,
                        None => {
                            #addr
                            let __f = ::core::mem::offset_of!(#sn, #fname) as i32;
                            __st.load_field(&mut __c.b, #vt, &__addr, __f, #class, __f)
                        }
                    }),
                );
            }
        }
        if types.structs.get(&sname).is_none_or(|d| d.lifetimes > 0) {
            return self.decline("a field of a struct with lifetime parameters through a run-time pointer");
        }
        let sn = format_ident!("{}", sname);
        let off = quote!(::core::mem::offset_of!(#sn, #fname) as u64);
        match (rr, &rty) {
            (Repr::R(sc), _) => {
                let vt = sc_valty(*sc);
                let class = alias_class(&sname);
                self.bind(
                    fi,
                    r,
                    quote!({ #addr __st.load_field(&mut __c.b, #vt, &__addr, #off as i32, #class, #off as i32) }),
                )
            }
            (Repr::RPtr, Ty::Boxed(_) | Ty::Ref { .. }) => {
                self.bind(fi, r, quote!({ #addr __c.b.red_load(#rt::ops::ValTy::Ptr, &__addr, #off as i32) }))
            }
            (Repr::RPtr | Repr::VList(_) | Repr::VEList(..) | Repr::VOList(_), _) => {
                self.bind_ptr(fi, r, quote!({ #addr __c.b.red_offset(&__addr, #off) }))
            }
            (Repr::VPtr, Ty::Struct(_)) => self.bind_ptr(fi, r, quote!({ #addr __c.b.red_offset(&__addr, #off) })),
            _ => self.decline("a field of this type through a run-time pointer"),
        }
    }

    fn get_item(&mut self, fi: usize, r: Var, rr: &Repr, rgreen: bool, base: &Value, idx: &Value) -> TokenStream {
        let rt = rt();
        let base_ty = self.value_ty(fi, base);
        let cont = base_ty.autoderef().clone();
        let et = match &cont {
            Ty::Vec(t) | Ty::Slice(t) | Ty::Array(t, _) => (**t).clone(),
            _ => return self.decline("indexing this value"),
        };
        if rgreen {
            let Some(b) = self.operand(fi, base, &self.value_repr(fi, base)) else {
                return self.decline("an element read");
            };
            let Some(i) = self.green(fi, idx) else { return self.decline("an index") };
            let get = match rr {
                Repr::G(_) => quote!(*__x),
                Repr::GRef(_) if matches!(et, Ty::Ref { .. }) => quote!(*__x),
                Repr::GRef(_) => quote!(__x),
                Repr::GSlice(_) => quote!(&__x[..]),
                Repr::Enum(t, _) => self.enum_from_rust(&t.clone(), quote!(__x)),
                Repr::Unit => quote!(()),
                _ => return self.decline("this element read"),
            };
            return self.bind(
                fi,
                r,
                quote!(match #b.get(#i as usize) {
                    Some(__x) => #get,
                    None => {
                        __c.b.red_bounds_check(&#rt::redbox::RedBox::u64(#i as u64), &#rt::redbox::RedBox::u64(#b.len() as u64));
                        __c.error_exit(#rt::ops::ErrorKind::IndexOutOfBounds);
                        break 'path None;
                    }
                }),
            );
        }
        let Some(i) = self.operand(fi, idx, &Repr::R(Sc::Int(IntTy::Usize))) else { return self.decline("an index") };
        match cont {
            Ty::Vec(_) if matches!(et, Ty::Struct(_)) && matches!(rr, Repr::RPtr | Repr::VPtr) => {
                // An element of a `Vec` of structs: its address, in place.
                let Some((addr, _)) = self.red_object(fi, base) else { return self.decline("this vector") };
                let t = rust_ty(&et, None);
                self.bind_ptr(
                    fi,
                    r,
                    quote!({
                        let __i = #i;
                        #addr
                        match #rt::heap::vec_layout::<#t>() {
                            Some(__l) => __st.vec_elem(&mut __c.b, &__addr, &__i, ::core::mem::size_of::<#t>() as u64, __l),
                            None => { __c.decline("a Vec whose layout is not known"); break 'path None; }
                        }
                    }),
                )
            }
            Ty::Vec(_) => {
                let Some(esc) = scalar(&et) else { return self.decline("a Vec of non-scalars in residual code") };
                let Some((addr, _)) = self.red_object(fi, base) else { return self.decline("this vector") };
                let (t, vt) = (sc_rust(esc), sc_valty(esc));
                let class = elem_class(&quote!(#t).to_string());
                let real = quote!({
                    #addr
                    match #rt::heap::vec_layout::<#t>() {
                        Some(__l) => {
                            let __e = __st.vec_elem(&mut __c.b, &__addr, &__i, ::core::mem::size_of::<#t>() as u64, __l);
                            __st.load_field(&mut __c.b, #vt, &__e, 0, #class, 0)
                        }
                        None => __c.b.red_call(#rt::heap::vec_get::<#t>, "vec_get", &[__addr, __i], &[#vt])[0],
                    }
                });
                let green_base = match self.value_repr(fi, base) {
                    from @ (Repr::GRef(_) | Repr::GSlice(_)) => self.operand(fi, base, &from),
                    _ => None,
                };
                match (list_local(self, fi, base), green_base) {
                    (Some(l), _) => self.bind(
                        fi,
                        r,
                        quote!({
                            let __i = #i;
                            match #l.get_const(&__i) {
                                Some(__x) => __x,
                                None => match __st.tail_get(&mut __c.b, &#l, &__i) {
                                    Some(__x) => __x,
                                    None => #real,
                                },
                            }
                        }),
                    ),
                    (None, Some(g)) => {
                        // Green data (frozen, and part of the portal's content
                        // check) at an index known now: read now.
                        let w = to_word(esc, quote!(*__x));
                        self.bind(
                            fi,
                            r,
                            quote!({
                                let __i = #i;
                                match __i.as_const().and_then(|__k| (#g).get(__k as usize)) {
                                    Some(__x) => #rt::redbox::RedBox::constant(#vt, #w),
                                    None => #real,
                                }
                            }),
                        )
                    }
                    (None, None) => self.bind(fi, r, quote!({ let __i = #i; #real })),
                }
            }
            Ty::Slice(_) | Ty::Array(..) => {
                let addr = match self.elem_addr(fi, base, &cont, &et, &i) {
                    Ok(a) => a,
                    Err(declined) => return declined,
                };
                match rr {
                    Repr::R(sc) => {
                        let vt = sc_valty(*sc);
                        self.bind(fi, r, quote!({ let __a = #addr; __c.b.red_load(#vt, &__a, 0) }))
                    }
                    Repr::RPtr | Repr::VList(_) if is_owned_pointer(&et) => self.bind_ptr(fi, r, addr),
                    _ => self.decline("an element of this type through a run-time pointer"),
                }
            }
            _ => self.decline("indexing this value"),
        }
    }

    /// The address of element `i` (a red box expression) of a slice or an
    /// array reached through a run-time pointer, bounds-checked as Rust
    /// does; `Err` with the decline when the sequence has no such address.
    fn elem_addr(
        &mut self,
        fi: usize,
        base: &Value,
        cont: &Ty,
        et: &Ty,
        i: &TokenStream,
    ) -> Result<TokenStream, TokenStream> {
        let rt = rt();
        let esize = rust_ty(et, None);
        let ptr_len = match cont {
            Ty::Slice(_) => {
                let Some(s) = self.operand(fi, base, &Repr::RSlice) else { return Err(self.decline("this slice")) };
                quote!(let __s = #s; let (__ptr, __len) = (__s[0], __s[1]);)
            }
            Ty::Array(_, n) => {
                let Some((addr, _)) = self.red_object(fi, base) else { return Err(self.decline("this array")) };
                let n = *n;
                quote!(#addr let (__ptr, __len) = (__addr, #rt::redbox::RedBox::u64(#n));)
            }
            _ => return Err(self.decline("indexing this value")),
        };
        Ok(quote!({
            #ptr_len
            __c.b.red_bounds_check(&#i, &__len);
            let __off = __c.b.red_bin(#rt::ops::BinOp::Mul, #rt::ops::Overflow::Wrap, &#i,
                &#rt::redbox::RedBox::u64(::core::mem::size_of::<#esize>() as u64));
            let __off = __c.b.red_cast(&__off, #rt::ops::ValTy::Ptr);
            __c.b.red_bin(#rt::ops::BinOp::Add, #rt::ops::Overflow::Wrap, &__ptr, &__off)
        }))
    }

    /// A call of a pure function with green arguments and result: run now.
    fn green_call(&mut self, fi: usize, r: Var, rr: &Repr, name: &str, args: &[Value]) -> TokenStream {
        let Some(ci) = self.fn_ids.get(name).copied() else { return self.decline("a call") };
        let callee = self.fns[ci];
        let mut exprs = vec![];
        for (k, a) in args.iter().enumerate() {
            let pty = callee.graph.var(callee.graph.params()[k]).ty.clone();
            let from = self.value_repr(fi, a);
            let Some(e) = self.operand(fi, a, &from) else { return self.decline("an argument") };
            exprs.push(match (&from, &pty) {
                (Repr::G(_), _) => e,
                (Repr::GRef(_) | Repr::GSlice(_), Ty::Ref { mutable: false, .. }) => e,
                (Repr::Enum(t, _), _) if plain(t, self.cg.types()) => {
                    let (_, unflat, _) = enum_helpers(t);
                    {
                        let rt = rt();
                        quote!(#unflat(&#rt::redbox::const_words(&#e)))
                    }
                }
                _ => return self.decline("an argument of this type to a call run at compile time"),
            });
        }
        let path = rust_path(name);
        let call = quote!(#path(#(#exprs),*));
        match rr {
            Repr::G(_) | Repr::GRef(_) | Repr::GSlice(_) | Repr::Unit => self.bind(fi, r, call),
            Repr::Enum(t, _) => {
                let t = t.clone();
                let e = self.enum_from_rust(&t, quote!(&__r));
                self.bind(fi, r, quote!({ let __r = #call; #e }))
            }
            _ => self.decline("the result of this call"),
        }
    }

    /// A residual call of a function outside the module or marked #[jit_opaque].
    /// A residual call of a function outside the analysis, through a
    /// callback; with `format`, the callback runs that `print!`-like macro
    /// (name, format string, argument names) on the arguments instead.
    fn opaque_call(
        &mut self,
        fi: usize,
        r: Var,
        name: &str,
        args: &[Value],
        format: Option<(&String, &String, &Vec<Option<String>>)>,
    ) -> TokenStream {
        let rt = rt();
        let types = self.cg.types();
        let f = self.fns[fi];
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
        let mut arg_code = vec![];
        let mut reads = vec![];
        let mut at = 0usize;
        // Where each argument's words start in the callback's arguments.
        let mut starts = vec![];
        for a in args {
            starts.push(at);
            let ty = self.value_ty(fi, a);
            if let Some(sc) = scalar(&ty) {
                let Some(x) = self.operand(fi, a, &Repr::R(sc)) else { return self.decline("an argument") };
                arg_code.push(quote!(__args.push(#x);));
                reads.push(from_word(sc, quote!(__b[#at])));
                at += 1;
            } else if is_enum(&ty) && plain(&ty, types) {
                let Some(x) = self.operand(fi, a, &self.value_repr(fi, a)) else { return self.decline("an argument") };
                let (_, unflat, _) = enum_helpers(&ty);
                let n = slots(&ty, types, 0).map_or(0, |s| s.len());
                arg_code.push(quote!(__args.extend_from_slice(&#x);));
                let end = at + n;
                reads.push(quote!(#unflat(&__b[#at..#end])));
                at += n;
            } else if let (Ty::Ref { mutable: false, to }, from @ Repr::GSlice(_)) = (&ty, self.value_repr(fi, a)) {
                // A green slice (program text, a table of functions): its
                // address and length, constants of the residual call (code
                // runs only on green data at the addresses it was compiled
                // for).
                let Ty::Slice(elem) = &**to else { return self.decline("a slice argument to a residual call") };
                let Some(x) = self.operand(fi, a, &from) else { return self.decline("an argument") };
                arg_code.push(quote! {
                    __args.push(#rt::redbox::RedBox::u64(#x.as_ptr() as usize as u64));
                    __args.push(#rt::redbox::RedBox::u64(#x.len() as u64));
                });
                let t = rust_ty(elem, None);
                let next = at + 1;
                // SAFETY: the address and length of a slice the compiler
                // held, which outlives the code (see above).
                reads.push(quote!(unsafe { ::core::slice::from_raw_parts(__b[#at] as usize as *const #t, __b[#next] as usize) }));
                at += 2;
            } else if ty == Ty::Str && format.is_some() {
                // A `String` formatted: the macro takes it by reference.
                let Some(x) = self.operand(fi, a, &Repr::RPtr) else { return self.decline("an argument") };
                arg_code.push(quote!(__args.push(#x);));
                reads.push(quote!(unsafe { &*(__b[#at] as usize as *const ::std::string::String) }));
                at += 1;
            } else if let (Ty::Ref { mutable, to }, Repr::RSlice) = (&ty, self.value_repr(fi, a)) {
                // A slice known at run time: its address and length.
                let Ty::Slice(elem) = &**to else { return self.decline("a slice argument to a residual call") };
                let Some(x) = self.operand(fi, a, &Repr::RSlice) else { return self.decline("an argument") };
                arg_code.push(quote!(__args.extend_from_slice(&#x);));
                let t = rust_ty(elem, None);
                let next = at + 1;
                // SAFETY: the address and length of a live slice of the
                // interpreter's, as residual code holds them.
                reads.push(if *mutable {
                    quote!(unsafe { ::core::slice::from_raw_parts_mut(__b[#at] as usize as *mut #t, __b[#next] as usize) })
                } else {
                    quote!(unsafe { ::core::slice::from_raw_parts(__b[#at] as usize as *const #t, __b[#next] as usize) })
                });
                at += 2;
            } else if let Ty::Ref { mutable, to } = &ty {
                if matches!(**to, Ty::Slice(_)) {
                    return self.decline("a slice argument known only at run time to a residual call");
                }
                let Some(x) = self.operand(fi, a, &Repr::RPtr) else { return self.decline("an argument") };
                arg_code.push(quote!(__args.push(#x);));
                let t = rust_ty(to, None);
                reads.push(if *mutable {
                    quote!(unsafe { &mut *(__b[#at] as usize as *mut #t) })
                } else {
                    quote!(unsafe { &*(__b[#at] as usize as *const #t) })
                });
                at += 1;
            } else {
                return self.decline("an argument of this type to a residual call");
            }
        }
        let rty = f.graph.var(r).ty.clone();
        let (rets, write) = if rty == Ty::Unit {
            (quote!(&[]), quote!(let _ = __r;))
        } else if let Some(sc) = scalar(&rty) {
            let vt = sc_valty(sc);
            let w = to_word(sc, quote!(__r));
            (quote!(&[#vt]), quote!(__b[0] = #w;))
        } else if rty == Ty::Str {
            // A new `String`, kept in the arena until the residual call
            // that made it returns (or moved out of it by the portal).
            let pt = ptr_valty();
            (quote!(&[#pt]), quote!(__b[0] = #rt::heap::arena_alloc(__r) as usize as u64;))
        } else if is_enum(&rty) && rebuildable(&rty, types) {
            let (flat, _, tys) = enum_helpers(&rty);
            if !self.enums.contains(&rty) {
                self.enums.push(rty.clone());
            }
            // A value owning strings gives them to the arena: its own
            // words would name strings dropped with it.
            let flat = if plain(&rty, types) {
                quote!(#flat(&__r))
            } else {
                let o = flat_owned_fn(&rty);
                quote!(#o(__r))
            };
            (quote!(&#tys()), quote!(let __w = #flat; __b[..__w.len()].copy_from_slice(&__w);))
        } else {
            return self.decline("the result type of this residual call");
        };
        // The direct entry's address follows the arguments.
        let entry_at = at;
        starts.push(at);
        if direct.is_some() {
            arg_code.push(quote!(__args.push(#rt::redbox::RedBox::u64(__entry));));
            at += 1;
        }
        let width = at.max(slots(&rty, types, 0).map_or(1, |s| s.len())).max(1);
        let dest_ty = args.first().map(|a| self.value_ty(fi, a));
        let call = match format {
            None if direct.is_some() => {
                let path = rust_path(name);
                let direct_fn = format_ident!("__direct_{}", name);
                quote!(if __b[#entry_at] == 0 { #path(#(#reads),*) } else { #direct_fn(__b[#entry_at], #(#reads),*) })
            }
            None => {
                let path = rust_path(name);
                quote!(#path(#(#reads),*))
            }
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
                let into_string = matches!(dest_ty, Some(Ty::Ref { to, .. }) if *to == Ty::Str);
                match dest {
                    Some(d) if into_string => quote!({
                        use ::std::fmt::Write as _;
                        ::std::#mac!(#d, #template, #(#args),*).expect("writing into a String cannot fail")
                    }),
                    Some(d) => quote!({
                        use ::std::io::Write as _;
                        ::std::#mac!(#d, #template, #(#args),*).expect("writing into a Vec<u8> cannot fail")
                    }),
                    None => quote!(::std::#mac!(#template, #(#args),*)),
                }
            }
        };
        let cb = self.callback(
            width,
            quote! {
                let __r = #call;
                #write
            },
        );
        let call_name = if direct.is_some() { format!("{name} (direct)") } else { name.to_string() };
        // The inputs of the callee's specialized code, for the direct call's
        // fast path (a call of that code from residual code): its red
        // parameters, in the order its entry takes them. Only for results
        // that own nothing (the arena is freed after the call).
        let fast = match (&direct, self.fn_ids.get(name)) {
            (Some(_), Some(&ci))
                if rty == Ty::Unit || scalar(&rty).is_some() || (is_enum(&rty) && plain(&rty, types)) =>
            {
                self.direct_inputs(ci, &starts)
            }
            _ => None,
        };
        let bind_result = match self.repr(fi, r) {
            Repr::Unit => quote!(),
            Repr::R(_) => {
                let id = v_ident(r);
                quote!(let #id = __v[0];)
            }
            Repr::Enum(_, n) => {
                let id = v_ident(r);
                quote!(let #id: [#rt::redbox::RedBox; #n] = #rt::redbox::first_n(&__v);)
            }
            Repr::RPtr if rty == Ty::Str => self.bind(fi, r, quote!(__v[0])),
            _ => return self.decline("the result of this residual call"),
        };
        let red_call = match fast {
            Some(fast) => quote! {{
                let mut __fast: ::std::vec::Vec<#rt::redbox::RedBox> = ::std::vec::Vec::new();
                #(#fast)*
                __c.b.red_call_direct(__entry, &__fast, #cb, #call_name, &__args, #rets)
            }},
            None => quote!(__c.b.red_call(#cb, #call_name, &__args, #rets)),
        };
        quote! {
            #portal_check
            let __v = {
                let mut __args = ::std::vec::Vec::new();
                #(#arg_code)*
                #red_call
            };
            // The callee may have written any object.
            __st.forget_fields();
            #bind_result
        }
    }

    /// The continuations of the inlined calls of function `fi`: each point,
    /// the call's result and the call.
    fn continuations_of(&self, fi: usize) -> Vec<(usize, Var, hint_annotator::flowgraph::Op)> {
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
    fn direct_inputs(&self, ci: usize, starts: &[usize]) -> Option<Vec<TokenStream>> {
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

    /// A frame for resume point `p` built from the locals in scope, with
    /// `overrides` for some of its variables (input arguments, parameters).
    fn frame(&self, p: usize, overrides: &HashMap<Var, TokenStream>) -> TokenStream {
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
    fn link_frame(
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
    fn goto(&self, fi: usize, target: NodeIndex, args: &[Value]) -> Result<TokenStream, String> {
        let (lets, frame) = self.link_frame(fi, target, args)?;
        Ok(quote!({ #(#lets)* let mut __s = __st; __s.frames.push(#frame); Some(__s) }))
    }

    /// The same transition as a new state, leaving `__st` untouched (for split).
    fn goto_state(&self, fi: usize, target: NodeIndex, args: &[Value]) -> Result<TokenStream, String> {
        let (lets, frame) = self.link_frame(fi, target, args)?;
        Ok(quote!({ #(#lets)* let mut __s = __st.clone(); __s.frames.push(#frame); __s }))
    }

    /// The code of resume point `p`: from its operation to the next resume point.
    fn point_code(&mut self, p: usize) -> TokenStream {
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

    fn exit(&mut self, fi: usize, b: NodeIndex) -> TokenStream {
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
    fn return_boxes(&self, ty: &Ty, r: &Repr, e: TokenStream) -> Option<TokenStream> {
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
                    Repr::GRef(_) => {
                        key_parts.push(KeyPart::Word(quote!((*#id) as *const _ as *const u8 as usize as u64)))
                    }
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
                        sets.push(
                            quote!(if let #rt::virtuals::VPtr::Real(__p) = #id { *__p = __reds[__at]; __at += 1; }),
                        );
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
            let park = if self.park_points.contains(&p) {
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
            };
            // The code of each point is a function of its own: the dispatch
            // stays a small match, and rustc and LLVM see hundreds of small
            // functions instead of one that holds every point.
            let point_fn = format_ident!("__point{}", p);
            // (The lints generated code may trip are allowed on `__jit`.)
            point_fns.push(quote! {
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
            });
            run_arms.push(quote! {
                __Frame::#vname { .. } => #point_fn(__c, __st, __frame),
            });
        }
        // Deliver: a returning function hands its value to its caller's continuation.
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

    /// How a function's returned value is represented.
    pub fn fn_return_repr(&self, fi: usize) -> Repr {
        let f = self.fns[fi];
        let mut green = true;
        for b in f.graph.blocks() {
            if let Exit::Return(Value::Var(v)) = &f.graph.graph[b].exit {
                green &= f.color(*v) == Color::Green;
            }
        }
        repr(&f.graph.ret_ty, green, self.cg.types())
    }
}

/// The `VDesc` of a struct whose objects can be virtual, and the callback
/// that allocates one (in the arena of objects residual code makes).
fn vdesc(s: &str, types: &hint_annotator::ModuleTypes, reads_in_place: bool) -> TokenStream {
    let rt = rt();
    let d = &types.structs[s];
    let (sn, desc, alloc) = (format_ident!("{}", s), format_ident!("__VDESC_{}", s), format_ident!("__valloc_{}", s));
    let mut tys = vec![];
    let mut inits = vec![];
    let mut offsets = vec![];
    let mut lists = vec![];
    for (name, t) in &d.fields {
        let f = member(name);
        if let Some(le) = list_field(t, types) {
            let (et, store, w) = (le.rust(), le.store_fn(), le.width());
            // Lists of integers may keep a tail once in memory (`VList::Tail`).
            let in_place = match le {
                LElem::Sc(sc @ Sc::Int(i)) if i.bits() <= 64 => {
                    let (vt, class) = (sc_valty(sc), elem_class(&et.to_string()));
                    quote!(Some(&#rt::vlist::InPlace {
                        header: #rt::heap::vec_header::<#et>,
                        size: ::core::mem::size_of::<#et>() as u64,
                        ty: #vt,
                        class: #class,
                        reserve: #rt::heap::vec_reserve_one::<#et>,
                        extend: #rt::heap::vec_extend::<#et>,
                    }))
                }
                _ => quote!(None),
            };
            lists.push(quote!(#rt::virtuals::VListField {
                offset: ::core::mem::offset_of!(#sn, #f) as i32,
                width: #w,
                store: #store,
                mov: #rt::heap::vec_move::<#et>,
                in_place: #in_place,
            }));
            inits.push(quote!(#f: ::std::vec::Vec::new()));
            continue;
        }
        let sc = scalar(t).expect("a virtual struct's fields are scalars or lists");
        let k = tys.len();
        tys.push(sc_valty(sc));
        offsets.push(quote!(::core::mem::offset_of!(#sn, #f) as i32));
        let v = from_word(sc, quote!(__b[#k]));
        inits.push(quote!(#f: #v));
    }
    let n = tys.len().max(1);
    let label = format!("new {s}");
    let by_fields = lists.is_empty() && d.fields.values().all(|t| scalar(t).is_some());
    let moves = if by_fields { vec_moves(s, types) } else { quote!() };
    let by_fields = if by_fields {
        let (push, pop) = (format_ident!("__vpush_{}", s), format_ident!("__vpop_{}", s));
        quote!(Some((#push, #pop)))
    } else {
        quote!(None)
    };
    quote! {
        #moves
        #[allow(unused_unsafe, clippy::all)]
        extern "C" fn #alloc(__buf: *mut u64) -> u64 {
            #rt::residual::run_callback(|| {
                // SAFETY: residual code passes a buffer of a word per scalar field (at least one).
                let __b = unsafe { ::core::slice::from_raw_parts_mut(__buf, #n) };
                let __p = #rt::heap::arena_alloc(#sn { #(#inits),* });
                __b[0] = __p as usize as u64;
                Ok(())
            })
        }
        static #desc: #rt::virtuals::VDesc = #rt::virtuals::VDesc {
            name: #label, fields: &[#(#tys),*], alloc: #alloc, offsets: &[#(#offsets),*], lists: &[#(#lists),*],
            push_moved: #rt::heap::vec_push_moved::<#sn>, pop_moved: #rt::heap::vec_pop_moved::<#sn>, by_fields: #by_fields,
            reads_in_place: #reads_in_place,
        };
    }
}

/// For a struct whose fields are all scalars: `__vpush_S` (`[vec, fields..]
/// -> []`) and `__vpop_S` (`[vec] -> [tag, fields..]`), which move an
/// object into and out of a real `Vec<S>` by its field words, so that
/// residual code keeps popped objects virtual and makes none in the arena.
fn vec_moves(s: &str, types: &hint_annotator::ModuleTypes) -> TokenStream {
    let rt = rt();
    let d = &types.structs[s];
    let (sn, push, pop) = (format_ident!("{}", s), format_ident!("__vpush_{}", s), format_ident!("__vpop_{}", s));
    let mut inits = vec![];
    let mut outs = vec![];
    for (k, (name, t)) in d.fields.iter().enumerate() {
        let Some(sc) = scalar(t) else { return quote!() };
        let f = member(name);
        let v = from_word(sc, quote!(__b[#k + 1]));
        inits.push(quote!(#f: #v));
        let w = to_word(sc, quote!(__x.#f));
        outs.push(quote!(__b[#k + 1] = #w;));
    }
    let n = d.fields.len() + 1;
    quote! {
        #[allow(unused_unsafe, clippy::all)]
        extern "C" fn #push(__buf: *mut u64) -> u64 {
            #rt::residual::run_callback(|| {
                // SAFETY: residual code passes the address of a live `Vec`
                // of this type, then a word per field.
                let __b = unsafe { ::core::slice::from_raw_parts_mut(__buf, #n) };
                let __v = unsafe { &mut *(__b[0] as usize as *mut ::std::vec::Vec<#sn>) };
                __v.push(#sn { #(#inits),* });
                Ok(())
            })
        }
        #[allow(unused_unsafe, clippy::all)]
        extern "C" fn #pop(__buf: *mut u64) -> u64 {
            #rt::residual::run_callback(|| {
                // SAFETY: as for the push; the buffer has a word per field
                // after the tag.
                let __b = unsafe { ::core::slice::from_raw_parts_mut(__buf, #n) };
                let __v = unsafe { &mut *(__b[0] as usize as *mut ::std::vec::Vec<#sn>) };
                match __v.pop() {
                    Some(__x) => {
                        __b[0] = 1;
                        #(#outs)*
                    }
                    None => __b.fill(0),
                }
                Ok(())
            })
        }
    }
}

/// Whether a field read from a value of this type moves the field out (the
/// base is an owned struct: Rust cannot copy a `Vec` out of it, so the
/// object's field is not read again before being written).
fn moves_out(base: &Ty) -> bool {
    matches!(base, Ty::Struct(_))
}

/// Code forcing the list in the local `id` (see `jitgen_runtime::vlist`):
/// the address of a real `Vec`.
/// Whether residual code makes a real struct `s`: its fields are scalars and
/// `String`s, at least one of those (a struct of scalars is virtual).
fn owning_struct(s: &str, types: &hint_annotator::ModuleTypes) -> bool {
    types.structs.get(s).is_some_and(|d| {
        d.lifetimes == 0
            && d.fields.values().any(|t| *t == Ty::Str)
            && d.fields.values().all(|t| *t == Ty::Str || scalar(t).is_some())
    })
}

/// Whether a portal returns a value of this type as the address of a real
/// object its caller takes over: a `Vec` of scalars or of plain enums, a
/// `String`.
pub fn returned_by_address(ty: &Ty, types: &hint_annotator::ModuleTypes) -> bool {
    match ty {
        Ty::Vec(e) => scalar(e).is_some() || (is_enum(e) && plain(e, types)),
        Ty::Str => true,
        _ => false,
    }
}

fn force_list(sc: Sc, id: TokenStream) -> TokenStream {
    let rt = rt();
    let (t, vt) = (sc_rust(sc), sc_valty(sc));
    quote!(#id.force(&mut __c.b, #vt, #rt::heap::vec_new_repeat::<#t>, #rt::heap::vec_set::<#t>))
}

/// Code forcing the list of enums (`n` slots each) in the local `id`: the
/// address of a real `Vec`.
fn force_flat_list(ety: &Ty, n: usize, id: TokenStream) -> TokenStream {
    let (rt, m) = (rt(), flat_marker(ety));
    quote!(#id.force_flat(&mut __c.b, #n, #rt::heap::flat_vec_new::<#m>))
}

/// Code forcing the dict in the local `id` (see `jitgen_runtime::vdict`):
/// the address of a real `HashMap`.
fn force_dict(k: Sc, v: Sc, id: TokenStream) -> TokenStream {
    let rt = rt();
    let (kt, vt, kvt) = (sc_rust(k), sc_rust(v), sc_valty(k));
    quote!(#id.force(&mut __c.b, #kvt, #rt::heap::map_new::<#kt, #vt>, #rt::heap::map_insert::<#kt, #vt>))
}

/// The list local a value designates, when it is one (the base of a `Vec`
/// operation applied to the variable itself).
fn list_local(g: &Gen, fi: usize, v: &Value) -> Option<Ident> {
    match v {
        Value::Var(x) if matches!(g.repr(fi, *x), Repr::VList(_)) => Some(v_ident(*x)),
        _ => None,
    }
}

/// The Rust path, from the generated `__jit` module, of a function the
/// interpreter calls by `name` (module functions, methods, outside paths).
pub fn rust_path(name: &str) -> TokenStream {
    let segs: Vec<&str> = name.split("::").collect();
    let idents: Vec<Ident> = segs.iter().map(|s| Ident::new(s, Span::call_site())).collect();
    match segs[0] {
        "super" => quote!(super::#(#idents)::*),
        "crate" | "std" | "core" => quote!(#(#idents)::*),
        _ => quote!(super::#(#idents)::*),
    }
}

/// The alias class of the fields of the module's struct `name` (see
/// `jitgen_runtime::state::Fact`): a hash of the name, never
/// `VEC_HEADER` (0).
fn alias_class(name: &str) -> u32 {
    let h = name.bytes().fold(0x811c_9dc5u32, |h, b| (h ^ b as u32).wrapping_mul(0x0100_0193));
    h | 1
}

/// The alias class of the elements of `Vec`s of the type `name` (see
/// `jitgen_runtime::state::Fact`): even, with bit 2 set, so never a struct's
/// class, `VEC_HEADER` or `BOUNDS_CHECKED`; a call forgets them.
fn elem_class(name: &str) -> u32 {
    (alias_class(name) & !1) | 4
}

/// A part of a frame's key: a word, or code that pushes words onto `__k`.
enum KeyPart {
    Word(TokenStream),
    Stmt(TokenStream),
}

/// Code that makes a frame's key words in `__k`: each run of words is one
/// array: one allocation and one copy, not a push and its capacity check
/// per word.
fn key_code(parts: &[KeyPart]) -> TokenStream {
    // The words before the first statement make the vector; later runs extend it.
    let first = parts.iter().position(|p| matches!(p, KeyPart::Stmt(_))).unwrap_or(parts.len());
    let words = |ps: &[KeyPart]| -> Vec<TokenStream> {
        ps.iter().filter_map(|p| if let KeyPart::Word(w) = p { Some(w.clone()) } else { None }).collect()
    };
    let head = words(&parts[..first]);
    let mut out = quote!(let mut __k: ::std::vec::Vec<u64> = ::std::vec![#(#head),*];);
    for run in parts[first..].split_inclusive(|p| matches!(p, KeyPart::Stmt(_))) {
        let (stmt, ws) = match run.split_last() {
            Some((KeyPart::Stmt(code), rest)) => (Some(code), words(rest)),
            _ => (None, words(run)),
        };
        if !ws.is_empty() {
            out = quote!(#out __k.extend_from_slice(&[#(#ws),*]););
        }
        if let Some(code) = stmt {
            out = quote!(#out #code);
        }
    }
    out
}

/// Appends the code that reads and writes a run of scalar red fields
/// (`ids`) to `reds` and `sets`, and empties the run: one slice copy out,
/// one length check in.
fn flush_red_run(ids: &mut Vec<Ident>, reds: &mut Vec<TokenStream>, sets: &mut Vec<TokenStream>) {
    if ids.is_empty() {
        return;
    }
    let n = ids.len();
    let tmps: Vec<Ident> = (0..n).map(|i| format_ident!("__x{}", i)).collect();
    reds.push(quote!(__r.extend_from_slice(&[#(*#ids),*]);));
    sets.push(quote! {
        let &[#(#tmps),*] = &__reds[__at..__at + #n] else { ::core::unreachable!() };
        #(*#ids = #tmps;)*
        __at += #n;
    });
    ids.clear();
}

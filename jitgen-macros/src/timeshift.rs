//! Timeshifting: colored flow graphs to generating extensions.
//!
//! The generating extension of a module is one resumable state machine over
//! *resume points* of all its functions: the entry of every block, the point
//! after every inlined call (a continuation), and the point after each global
//! merge point. A frame is the runtime's `PointFrame`: the resume point's
//! number and the variables live there, packed by the function of the point's
//! layout (`frame.rs`; see `repr.rs` for how each variable is represented).
//! `__run` pops the innermost frame of a state, runs the code of that point
//! (green operations as Rust, red ones through red boxes) until the next
//! resume point, and pushes the next frame; an inlined call pushes a
//! continuation and the callee's entry; a return pops and hands the value to
//! the continuation. At the entry of a join block the state goes through the
//! runtime's merge logic first; a red branch forks through `split`. A block
//! entered from one place only is no stop: the code going to it continues
//! into its code (`Gen::goto`), and only the points some code makes a frame
//! for get a function.
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

use hint_annotator::flowgraph::{BinOp, Const, Exit, OpKind, Value, Var};
use hint_annotator::types::Ty;
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
    /// Per function, what the analyses found before any code is emitted.
    pub(crate) plans: Vec<FnPlan>,
    /// Set when the code just generated always declines: what follows it is unreachable.
    pub(crate) declined: std::cell::Cell<bool>,
    /// The operation whose code is being generated: its function, block
    /// and index.
    pub(crate) op_at: std::cell::Cell<Option<(usize, NodeIndex, usize)>>,
    /// Every operation whose code always declines, and why (see `ahead`).
    pub(crate) static_declines: std::cell::RefCell<std::collections::BTreeMap<(usize, NodeIndex, usize), String>>,
    /// The layouts of the extension's frames (see `frame`).
    pub(crate) layouts: std::cell::RefCell<crate::frame::Layouts>,
    /// Per function, the function its returns call (see `Gen::exit`).
    pub(crate) return_fns: std::collections::BTreeMap<usize, TokenStream>,
    /// The points a state can stop at: those some code makes a frame for.
    pub(crate) framed: std::cell::RefCell<BTreeSet<usize>>,
    /// How many transitions the code being generated continued into.
    pub(crate) inline_depth: std::cell::Cell<usize>,
}

/// What the timeshifter knows of one function before emitting its code:
/// computed by `Gen::new`, read by emission.
#[derive(Default)]
pub(crate) struct FnPlan {
    /// Its red `&mut Vec` of scalars that are virtual lists passed by value
    /// and written back (see `Gen::written_back_params`).
    pub(crate) written_back: BTreeSet<Var>,
    /// How many links enter each block.
    pub(crate) preds: HashMap<NodeIndex, usize>,
    /// The blocks entered from more than one place: where states merge.
    pub(crate) joins: BTreeSet<NodeIndex>,
    /// The targets of back edges.
    pub(crate) loop_heads: BTreeSet<NodeIndex>,
    /// In a portal, the blocks from which its merge point cannot be
    /// reached: a branch into one leaves the interpreter's loop (a return,
    /// an error), and that side compiles when first taken.
    pub(crate) leaves_loop: BTreeSet<NodeIndex>,
    /// The links of branches whose side leaves the portal's loop once the
    /// enum values made on the way are known (`leaving`).
    pub(crate) leaving_links: BTreeSet<petgraph::stable_graph::EdgeIndex>,
    /// Per block, the strings that die in it, by the operation after which
    /// each is dead (see `Gen::dead_strings`).
    pub(crate) dead_strings: HashMap<NodeIndex, HashMap<usize, Vec<Var>>>,
}

/// The value of an `Option` the code being generated needs, or code that
/// declines the compilation (returned from the enclosing method of `Gen`,
/// whose receiver is `$gen`).
macro_rules! need {
    ($gen:expr, $e:expr, $why:expr) => {
        match $e {
            Some(x) => x,
            None => return $gen.decline($why),
        }
    };
}
pub(crate) use need;

/// What the emission of every family of operations starts from: the
/// result, its representation and color, the arguments.
pub(crate) struct OpParts<'o> {
    pub(crate) r: Var,
    pub(crate) rr: Repr,
    pub(crate) rgreen: bool,
    pub(crate) args: &'o [Value],
}

/// How deep transitions nest in one point's code (see `Gen::goto`).
pub(crate) const MAX_INLINE_DEPTH: usize = 16;

/// Targets of back edges (depth-first from the start block): loop heads.
pub(crate) fn loop_heads(f: &ColoredGraph) -> BTreeSet<NodeIndex> {
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

/// The blocks of a portal from which none of its merge points can be
/// reached (empty for other functions).
pub(crate) fn leaves_loop(f: &ColoredGraph) -> BTreeSet<NodeIndex> {
    let g = &f.graph;
    if !f.is_portal() {
        return BTreeSet::new();
    }
    let mut reaches: BTreeSet<NodeIndex> = f.merge_points().iter().map(|m| m.block).collect();
    let mut work: Vec<NodeIndex> = reaches.iter().copied().collect();
    while let Some(b) = work.pop() {
        for p in g.graph.neighbors_directed(b, petgraph::Direction::Incoming) {
            if reaches.insert(p) {
                work.push(p);
            }
        }
    }
    g.blocks().filter(|b| !reaches.contains(b)).collect()
}

/// The scalar of a `&mut Vec` of scalars.
pub(crate) fn mut_scalar_vec(ty: &Ty) -> Option<Sc> {
    match ty {
        Ty::Ref { mutable: true, to } => match &**to {
            Ty::Vec(e) => scalar(e),
            _ => None,
        },
        _ => None,
    }
}

pub(crate) fn v_ident(v: Var) -> Ident {
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
            plans: vec![],
            declined: std::cell::Cell::new(false),
            op_at: Default::default(),
            static_declines: Default::default(),
            layouts: Default::default(),
            return_fns: Default::default(),
            framed: Default::default(),
            inline_depth: Default::default(),
            frames_in_place: false,
        };
        g.plans = (0..g.fns.len())
            .map(|fi| FnPlan { written_back: g.written_back_params(fi), ..Default::default() })
            .collect();
        g.frames_in_place = !g.frames_read_in_place().is_empty();
        for fi in 0..g.fns.len() {
            let aliases = g.written_back_aliases(fi);
            g.plans[fi].written_back.extend(aliases);
        }
        let leaving: Vec<_> = {
            let l = crate::leaving::Leaving::new(&g.fns, |fi, r, k| g.inlined_callee(fi, r, k));
            (0..g.fns.len()).map(|fi| l.links(fi)).collect()
        };
        for (plan, links) in g.plans.iter_mut().zip(leaving) {
            plan.leaving_links = links;
        }
        for fi in 0..g.fns.len() {
            let f = g.fns[fi];
            let mut preds: HashMap<NodeIndex, usize> = HashMap::new();
            for b in f.graph.blocks() {
                for e in f.graph.exits(b) {
                    *preds.entry(f.graph.link(e).0).or_default() += 1;
                }
            }
            g.plans[fi].joins = preds.iter().filter(|(_, n)| **n >= 2).map(|(b, _)| *b).collect();
            g.plans[fi].preds = preds;
            g.plans[fi].loop_heads = loop_heads(f);
            g.plans[fi].leaves_loop = leaves_loop(f);
            g.plans[fi].dead_strings = f.graph.blocks().map(|b| (b, g.dead_strings(fi, b))).collect();
            for b in f.graph.blocks() {
                g.point(fi, b, 0, None);
                for (k, op) in f.graph.graph[b].ops.iter().enumerate() {
                    if g.inlined_callee(fi, op.result, &op.kind).is_some() {
                        g.point(fi, b, k + 1, Some(op.result));
                    }
                    if g.promotes_run_time(fi, op) {
                        g.point(fi, b, k + 1, Some(op.result));
                    }
                    if g.pops_frames(fi, op).is_some()
                        || g.pops_hidden(fi, b, op).is_some()
                        || g.reads_hidden(fi, b, k).is_some()
                    {
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
    pub(crate) fn decline(&self, msg: &str) -> TokenStream {
        self.declined.set(true);
        if let Some(at) = self.op_at.get() {
            self.static_declines.borrow_mut().entry(at).or_insert_with(|| msg.to_string());
        }
        quote! {{ __c.decline(#msg); break 'path None; }}
    }

    pub(crate) fn point(&mut self, f: usize, block: NodeIndex, op: usize, ret: Option<Var>) -> usize {
        if let Some(i) = self.point_ids.get(&(f, block, op)) {
            return *i;
        }
        let mut live = self.fns[f].live_before(block, op);
        // Written back at every return: live to the end.
        let params = self.fns[f].graph.params();
        live.extend(self.plans[f].written_back.iter().filter(|v| params.contains(v)));
        let mut live: Vec<Var> = live.into_iter().collect();
        if let Some(r) = ret {
            live.retain(|v| *v != r);
        }
        self.points.push(Point { f, block, op, live, ret });
        self.point_ids.insert((f, block, op), self.points.len() - 1);
        self.points.len() - 1
    }

    /// The local a struct operation's base is, when it may be virtual.
    pub(crate) fn vptr_local(&self, fi: usize, v: &Value) -> Option<Ident> {
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
    pub(crate) fn field_list_of(&self, fi: usize, t: &Value) -> Option<(Ident, usize)> {
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

    /// The function a call is inlined from, when it is inlined.
    pub(crate) fn inlined_callee(&self, fi: usize, result: Var, kind: &OpKind) -> Option<usize> {
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
        if self.plans.get(fi).is_some_and(|p| p.written_back.contains(&v)) {
            if let Some(sc) = mut_scalar_vec(&f.graph.var(v).ty) {
                return Repr::VList(sc);
            }
        }
        repr(&f.graph.var(v).ty, f.color(v) == Color::Green, self.cg.types())
    }

    pub(crate) fn value_ty(&self, fi: usize, v: &Value) -> Ty {
        self.fns[fi].graph.value_ty(v)
    }

    /// The representation an operand has in the generated code.
    pub(crate) fn value_repr(&self, fi: usize, v: &Value) -> Repr {
        match v {
            Value::Var(x) => self.repr(fi, *x),
            // A string literal: its bytes, as text known while compiling is.
            Value::Const(Const::Str(_)) => Repr::GSlice(Ty::Int(hint_annotator::types::IntTy::U8)),
            Value::Const(c) => match scalar(&c.ty()) {
                Some(sc) => Repr::G(sc),
                None => Repr::Unit,
            },
        }
    }

    /// A constant as a Rust expression.
    pub(crate) fn const_expr(c: &Const) -> TokenStream {
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
            Const::Str(s) => quote!(#s.as_bytes()),
        }
    }

    /// Converts an expression of one representation into another, or `None`
    /// when that is impossible (a red value needed green).
    pub(crate) fn convert(&self, e: TokenStream, from: &Repr, to: &Repr) -> Option<TokenStream> {
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
            (Repr::RPtr, Repr::VOList(_)) => quote!(#rt::VPList::Real(#e)),
            (Repr::RPtr, Repr::VEList(..)) => quote!(#rt::VList::Real(#e)),
            (Repr::RPtr, Repr::VDict(..)) => quote!(#rt::VDict::Real(#e)),
            (Repr::VPtr, Repr::VPtr) => e,
            (Repr::RPtr, Repr::VPtr) => quote!(#rt::VPtr::Real(#e)),
            (Repr::GRef(_), Repr::VPtr) => {
                let vt = ptr_valty();
                quote!(#rt::VPtr::Real(#rt::RedBox::constant(#vt, (#e) as *const _ as *const u8 as usize as u64)))
            }
            (Repr::RPtr, Repr::VList(_)) => quote!(#rt::VList::Real(#e)),
            (Repr::G(sc), Repr::R(_)) => {
                let (vt, w) = (sc_valty(*sc), to_word(*sc, e));
                quote!(#rt::RedBox::constant(#vt, #w))
            }
            (Repr::GRef(_), Repr::RPtr) => {
                let vt = ptr_valty();
                quote!(#rt::RedBox::constant(#vt, (#e) as *const _ as *const u8 as usize as u64))
            }
            (Repr::GRef(Ty::Vec(_)), Repr::GSlice(_)) => quote!(&(#e)[..]),
            (Repr::GSlice(_), Repr::RSlice) => {
                let (pt, ut) = (ptr_valty(), u64_valty());
                quote!({
                    let __s = #e;
                    [
                        #rt::RedBox::constant(#pt, __s.as_ptr() as usize as u64),
                        #rt::RedBox::constant(#ut, __s.len() as u64),
                    ]
                })
            }
            _ => return None,
        })
    }

    /// An operand, converted to the representation `to`.
    pub(crate) fn operand(&self, fi: usize, v: &Value, to: &Repr) -> Option<TokenStream> {
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
            Value::Const(c) => {
                // A red constant: its word, computed here (the runtime
                // makes it canonical for its type).
                let word = match c {
                    Const::Int(v, _) => Some(*v as u64),
                    Const::Bool(b) => Some(*b as u64),
                    Const::Char(ch) => Some(*ch as u64),
                    Const::Tag { index, .. } => Some(*index as u64),
                    _ => None,
                };
                if let (Repr::R(_), Some(sc), Some(w)) = (to, scalar(&c.ty()), word) {
                    let (rt, vt) = (rt(), sc_valty(sc));
                    return Some(quote!(#rt::RedBox::constant(#vt, #w)));
                }
                (Self::const_expr(c), self.value_repr(fi, v))
            }
        };
        self.convert(e, &from, to)
    }

    /// A scalar operand as a red box.
    pub(crate) fn boxed(&self, fi: usize, v: &Value) -> Option<TokenStream> {
        let sc = scalar(&self.value_ty(fi, v))?;
        self.operand(fi, v, &Repr::R(sc))
    }

    /// A scalar operand as a Rust value (it must be green).
    pub(crate) fn green(&self, fi: usize, v: &Value) -> Option<TokenStream> {
        let sc = scalar(&self.value_ty(fi, v))?;
        self.operand(fi, v, &Repr::G(sc))
    }

    pub(crate) fn bind(&self, fi: usize, r: Var, e: TokenStream) -> TokenStream {
        let id = v_ident(r);
        let rr = self.repr(fi, r);
        let t = field_ty(&rr);
        if is_container(&rr) {
            return quote!(let mut #id: #t = #e;);
        }
        quote!(let #id: #t = #e;)
    }

    /// Binds `r` to an address (a red box): wrapped when `r` is a list.
    pub(crate) fn bind_ptr(&self, fi: usize, r: Var, e: TokenStream) -> TokenStream {
        let rt = rt();
        match self.repr(fi, r) {
            Repr::VList(_) | Repr::VEList(..) => self.bind(fi, r, quote!(#rt::VList::Real(#e))),
            Repr::VDict(..) => self.bind(fi, r, quote!(#rt::VDict::Real(#e))),
            Repr::VPtr => self.bind(fi, r, quote!(#rt::VPtr::Real(#e))),
            Repr::VOList(_) => self.bind(fi, r, quote!(#rt::VPList::Real(#e))),
            _ => self.bind(fi, r, e),
        }
    }

    pub(crate) fn overflow(op: BinOp) -> TokenStream {
        let rt = rt();
        match op {
            // As the user's build does (`__OVERFLOW`, emitted with the extension).
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Shl | BinOp::Shr => quote!(__OVERFLOW),
            // `MIN / -1` and `MIN % -1` panic in Rust whatever the build.
            BinOp::Div | BinOp::Rem => quote!(#rt::Overflow::Check),
            _ => quote!(#rt::Overflow::Wrap),
        }
    }

    /// Code for one operation (not an inlined call).
    pub(crate) fn op(&mut self, fi: usize, op: &hint_annotator::flowgraph::Op) -> TokenStream {
        let rr = self.repr(fi, op.result);
        let args = &op.args;
        if let Repr::Bad(why) = &rr {
            if !matches!(op.kind, OpKind::SetField(_) | OpKind::SetItem | OpKind::Push | OpKind::GlobalMergePoint) {
                let source = hint_annotator::flowgraph::as_written(&op.source);
                return self.decline(&format!("jitgen cannot compile {why} yet (in `{source}`)"));
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

    /// The parts of operation `op` of function `fi` (see `OpParts`).
    pub(crate) fn op_parts<'o>(&self, fi: usize, op: &'o hint_annotator::flowgraph::Op) -> OpParts<'o> {
        let r = op.result;
        OpParts { r, rr: self.repr(fi, r), rgreen: self.fns[fi].color(r) == Color::Green, args: &op.args }
    }

    /// The code of one operation, by family: arithmetic (`arith`), lists
    /// (`containers`), objects (`objects`), calls (`calls`).
    pub(crate) fn op_inner(&mut self, fi: usize, op: &hint_annotator::flowgraph::Op) -> TokenStream {
        let (r, args) = (op.result, &op.args);
        let rr = self.repr(fi, r);
        match &op.kind {
            OpKind::Bin(_) | OpKind::Un(_) | OpKind::Cast | OpKind::SameAs | OpKind::Hint(_) => self.arith_op(fi, op),
            OpKind::GetItem | OpKind::Len | OpKind::SetItem => self.list_op(fi, op),
            OpKind::Push | OpKind::Pop | OpKind::NewVec | OpKind::NewVecRepeat => self.list_make_op(fi, op),
            OpKind::Load
            | OpKind::SharedDeref
            | OpKind::GetField(_)
            | OpKind::SetField(_)
            | OpKind::NewMap
            | OpKind::MapInsert
            | OpKind::MapGet
            | OpKind::MapRemove
            | OpKind::MapContains => self.object_op(fi, op),
            OpKind::NewStruct(_)
            | OpKind::NewBox
            | OpKind::MakeEnum { .. }
            | OpKind::EnumTag
            | OpKind::EnumField { .. }
            | OpKind::Unwrap => self.value_op(fi, op),
            OpKind::GlobalMergePoint => quote!(),
            OpKind::CloneInto(name) => self.clone_into(fi, name, args),
            OpKind::Drop if matches!(self.value_repr(fi, &args[0]), Repr::VPtr) => {
                // A virtual object is forgotten; a real one dropped where
                // residual code made it (in the arena), else left alone.
                let rt = rt();
                let x = need!(self, self.operand(fi, &args[0], &Repr::VPtr), "an object to drop");
                quote!(if let #rt::VPtr::Real(__a) = #x {
                    __c.b.red_call(#rt::heap::arena_drop, "drop", &[__a], &[]);
                })
            }
            // A value owning strings or `Rc`s (a popped `Value`): what it
            // owns in the arena.
            OpKind::Drop if matches!(self.value_repr(fi, &args[0]), Repr::Enum(..)) => self.enum_drop(fi, &args[0]),
            // What compiled code holds otherwise (a virtual list, green data)
            // is not dropped.
            OpKind::Drop if !matches!(self.value_repr(fi, &args[0]), Repr::RPtr) => quote!(),
            OpKind::Drop => {
                // Dropped where residual code made it (in the arena); an
                // object of the interpreter's is left to it.
                let rt = rt();
                let x = need!(self, self.operand(fi, &args[0], &Repr::RPtr), "an object to drop");
                quote!(__c.b.red_call(#rt::heap::arena_drop, "drop", &[#x], &[]);)
            }
            OpKind::Call(name) => {
                // Green calls run now, as Rust; inlined calls are handled by the block.
                self.green_call(fi, r, &rr, name, args)
            }
            OpKind::CallOpaque(name) => self.opaque_call(fi, r, name, args, None),
            OpKind::CallPure(name) if self.fns[fi].color(r) == Color::Green => self.pure_call(fi, r, &rr, name, args),
            OpKind::CallPure(name) => self.pure_residual_call(fi, r, name, args),
            OpKind::Format { mac, template, names } => {
                let shown = format!("{mac}!");
                self.opaque_call(fi, r, &shown, args, Some((mac, template, names)))
            }
        }
    }

    /// The strings residual code makes in block `b` that die in it, by the
    /// op after which each is dead: made there by a residual call (so in
    /// the arena), and only borrowed (formatted, `len`, `is_empty`,
    /// `clear`, or a reference taken for those) in `b` and nowhere else.
    /// Dropping them keeps a loop that makes a temporary string per turn
    /// from growing the arena.
    pub(crate) fn dead_strings(&self, fi: usize, b: NodeIndex) -> HashMap<usize, Vec<Var>> {
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
pub(crate) fn vdesc(s: &str, types: &hint_annotator::ModuleTypes, reads_in_place: bool) -> TokenStream {
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
    let (by_fields, in_memory) = if by_fields {
        let (push, pop) = (format_ident!("__vpush_{}", s), format_ident!("__vpop_{}", s));
        let class = alias_class(s);
        (
            quote!(Some((#push, #pop))),
            quote!(Some(#rt::virtuals::StructVec {
                header: #rt::heap::vec_header::<#sn>,
                size: ::core::mem::size_of::<#sn>() as u64,
                class: #class,
                reserve: #rt::heap::vec_reserve_one::<#sn>,
            })),
        )
    } else {
        (quote!(None), quote!(None))
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
            in_memory: #in_memory, reads_in_place: #reads_in_place,
        };
    }
}

/// For a struct whose fields are all scalars: `__vpush_S` (`[vec, fields..]
/// -> []`) and `__vpop_S` (`[vec] -> [tag, fields..]`), which move an
/// object into and out of a real `Vec<S>` by its field words, so that
/// residual code keeps popped objects virtual and makes none in the arena.
pub(crate) fn vec_moves(s: &str, types: &hint_annotator::ModuleTypes) -> TokenStream {
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
pub(crate) fn moves_out(base: &Ty) -> bool {
    matches!(base, Ty::Struct(_))
}

/// Whether a portal returns a value of this type as the address of a real
/// object its caller takes over: a `Vec` of scalars or of plain enums, a
/// `String`, or a struct residual code builds (`built_struct`) that is
/// either `Clone` (one read in place is cloned) or found only where
/// residual code made it: no module function takes it by value and no
/// field of the module's types holds it.
pub fn returned_by_address(ty: &Ty, gen: &Gen) -> bool {
    let types = gen.cg.types();
    match ty {
        Ty::Vec(e) => scalar(e).is_some() || (is_enum(e) && plain(e, types)),
        Ty::Str => true,
        Ty::Struct(s) if built_struct(s, types) => {
            let d = &types.structs[s];
            let held = |t: &Ty| t.to_string().split(|c: char| !c.is_alphanumeric() && c != '_').any(|w| w == s);
            let in_fields = types.structs.values().any(|o| o.fields.values().any(held))
                || types.enums.values().any(|e| e.variants.iter().any(|v| v.fields.iter().any(|(_, t)| held(t))));
            let by_value = gen.fns.iter().any(|f| f.graph.params().iter().any(|p| f.graph.var(*p).ty == *ty));
            d.clone || !(in_fields || by_value)
        }
        _ => false,
    }
}

/// The decoding of a struct a portal returns by address (see
/// `returned_by_address`), inside the caller's `unsafe`: moved out of the
/// arena where residual code made it, else cloned from its place.
pub(crate) fn take_struct(ty: &Ty, w: TokenStream, types: &hint_annotator::ModuleTypes) -> TokenStream {
    let (rt, t) = (rt(), rust_ty(ty, None));
    let Ty::Struct(s) = ty else { return quote!(unreachable!()) };
    if types.structs[s].clone {
        return quote!(#rt::heap::take_or_clone::<#t>(#w));
    }
    let lost = format!("jitgen: a `{s}` that residual code did not make, returned from a portal");
    quote!(#rt::heap::arena_take::<#t>(#w).expect(#lost))
}

/// Code forcing the list in the local `id` (see `jitgen_runtime::vlist`):
/// the address of a real `Vec`.
pub(crate) fn force_list(sc: Sc, id: TokenStream) -> TokenStream {
    let rt = rt();
    let (t, vt) = (sc_rust(sc), sc_valty(sc));
    quote!(#id.force(&mut __c.b, #vt, #rt::heap::vec_new_repeat::<#t>, #rt::heap::vec_set::<#t>))
}

/// Code forcing the list of enums (`n` slots each) in the local `id`: the
/// address of a real `Vec`.
pub(crate) fn force_flat_list(ety: &Ty, n: usize, id: TokenStream) -> TokenStream {
    let (rt, m) = (rt(), flat_marker(ety));
    quote!(#id.force_flat(&mut __c.b, #n, #rt::heap::flat_vec_new::<#m>))
}

/// Code forcing the dict in the local `id` (see `jitgen_runtime::vdict`):
/// the address of a real `HashMap`.
pub(crate) fn force_dict(k: Sc, v: Sc, id: TokenStream) -> TokenStream {
    let rt = rt();
    let (kt, vt, kvt) = (sc_rust(k), sc_rust(v), sc_valty(k));
    quote!(#id.force(&mut __c.b, #kvt, #rt::heap::map_new::<#kt, #vt>, #rt::heap::map_insert::<#kt, #vt>))
}

/// The list local a value designates, when it is one (the base of a `Vec`
/// operation applied to the variable itself).
pub(crate) fn list_local(g: &Gen, fi: usize, v: &Value) -> Option<Ident> {
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
        "jitgen" => quote!(::#(#idents)::*),
        _ => quote!(super::#(#idents)::*),
    }
}

/// The alias class of the fields of the module's struct `name` (see
/// `jitgen_runtime::state::Fact`): a hash of the name, never
/// `VEC_HEADER` (0).
pub(crate) fn alias_class(name: &str) -> u32 {
    let h = name.bytes().fold(0x811c_9dc5u32, |h, b| (h ^ b as u32).wrapping_mul(0x0100_0193));
    h | 1
}

/// The alias class of the elements of `Vec`s of the type `name` (see
/// `jitgen_runtime::state::Fact`): even, with bit 2 set, so never a struct's
/// class, `VEC_HEADER` or `BOUNDS_CHECKED`; a call forgets them.
pub(crate) fn elem_class(name: &str) -> u32 {
    (alias_class(name) & !1) | 4
}

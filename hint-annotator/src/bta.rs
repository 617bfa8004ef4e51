//! Binding-time analysis: which values are green (known at compile time) and
//! which are red (known only at run time).
//!
//! The rules are those of PyPy's hint-annotator:
//! - constants are green; everything else is red by default;
//! - a foldable operation (no side effect, result depending only on its
//!   operands) is green when all its operands are; reads through a frozen
//!   pointer (a shared reference `&T`, or a `hint!(.., deepfreeze)`d value,
//!   and what is read through them) are foldable; other reads, stores,
//!   allocations and opaque calls are red. A value struct (immutable words,
//!   `ModuleTypes::value_struct`) is made foldably and is frozen itself;
//! - a join (a block input argument fed by several values) is red unless a
//!   `concrete` hint needs it green, in which case every incoming value must be;
//! - `hint!(e, concrete)` forces `e` and, backwards and recursively, everything
//!   it depends on to be green; a red dependency that cannot be green is an
//!   error at the hint, naming that value;
//! - `hint!(e, promote)` is green without touching `e`; `hint!(e, variable)` is red;
//! - calls: each function has a summary (which parameters its result depends
//!   on, which parameters it requires green, whether it has effects) and a call
//!   site reproduces those dependencies locally, so that two call sites do not
//!   pollute each other. A call site whose result must be green uses a
//!   specialized copy of the callee whose result is forced green. A parameter
//!   is green when every call site passes a green value (a fixpoint).
//!
//! Architecture Invariant: the analysis reads flow graphs only; it never looks
//! at syntax, so the same rules hold for every front end.

use std::collections::{BTreeSet, HashMap};

use indexmap::IndexMap;
use petgraph::stable_graph::NodeIndex;
use proc_macro2::Span;

use crate::flowgraph::{as_written, Exit, FlowGraph, HintKind, OpKind, Value, Var};
use crate::types::Ty;

/// Why a value is red no matter what.
#[derive(Clone, Debug)]
pub(crate) enum RedReason {
    MutableRead,
    Effect,
    Allocation,
    Opaque(String),
    Variable,
}

impl RedReason {
    fn explain(&self) -> String {
        match self {
            RedReason::MutableRead => "a read from mutable memory (reads are green only through a shared reference `&T` or a `hint!(.., deepfreeze)`d value)".into(),
            RedReason::Effect => "the result of an operation with side effects".into(),
            RedReason::Allocation => "a fresh allocation".into(),
            RedReason::Opaque(f) => format!("the result of `{f}`, which is outside the module or #[jit_opaque]"),
            RedReason::Variable => "forced red by `hint!(.., variable)`".into(),
        }
    }
}

/// How a variable's color depends on others.
#[derive(Clone, Debug)]
pub(crate) enum Dep {
    /// Always green (constants, promotions, merge points).
    Green,
    /// A parameter.
    Param(usize),
    /// Green when all of these are.
    Foldable(Vec<Var>),
    /// A join: green only when forced.
    Join(Vec<Var>),
    /// Always red.
    Red(RedReason),
    /// The result of a call of a module function.
    Call { callee: String, args: Vec<Option<Var>> },
}

/// Per-function facts that do not depend on other functions.
#[derive(Debug)]
pub(crate) struct FnDeps {
    pub deps: Vec<Dep>,
    pub frozen: Vec<bool>,
    /// Variables defined by operations or input arguments (not dangling ones).
    pub defined: Vec<bool>,
    /// `hint!(e, concrete)` sites: (the operand, the hint's span).
    pub concrete: Vec<(Var, Span)>,
    /// Calls: (result, callee, argument variables, span).
    pub calls: Vec<(Var, String, Vec<Option<Var>>, Span)>,
    /// Whether the function itself has effects (stores, allocations, opaque calls).
    pub local_effects: bool,
    /// Values returned.
    pub returns: Vec<Var>,
}

fn vars_of(args: &[Value]) -> Vec<Var> {
    args.iter().filter_map(Value::as_var).collect()
}

/// Computes the local dependency facts of one graph.
pub(crate) fn fn_deps(g: &FlowGraph, module_fns: &dyn Fn(&str) -> bool, value_struct: &dyn Fn(&str) -> bool) -> FnDeps {
    let n = g.vars.len();
    let mut deps = vec![Dep::Red(RedReason::Effect); n];
    let mut defined = vec![false; n];
    let mut concrete = vec![];
    let mut calls = vec![];
    let mut local_effects = false;
    let mut returns = vec![];
    for (i, p) in g.params().iter().enumerate() {
        deps[p.0 as usize] = Dep::Param(i);
        defined[p.0 as usize] = true;
    }
    // Joins: what flows into each input argument.
    let mut incoming: HashMap<Var, Vec<Var>> = HashMap::new();
    for b in g.blocks() {
        for e in g.exits(b) {
            let (t, link) = g.link(e);
            for (k, a) in link.args.iter().enumerate() {
                let ia = g.graph[t].inputargs[k];
                let list = incoming.entry(ia).or_default();
                if let Value::Var(v) = a {
                    list.push(*v);
                }
            }
        }
        if let Exit::Return(Value::Var(v)) = &g.graph[b].exit {
            returns.push(*v);
        }
    }
    for b in g.blocks() {
        if b != g.start {
            for ia in &g.graph[b].inputargs {
                deps[ia.0 as usize] = Dep::Join(incoming.remove(ia).unwrap_or_default());
                defined[ia.0 as usize] = true;
            }
        }
    }
    for b in g.blocks() {
        for op in &g.graph[b].ops {
            let r = op.result.0 as usize;
            defined[r] = true;
            let args = vars_of(&op.args);
            let base_is_array = || matches!(g.value_ty(&op.args[0]).autoderef(), Ty::Array(..));
            deps[r] = match &op.kind {
                OpKind::Bin(_)
                | OpKind::Un(_)
                | OpKind::Cast
                | OpKind::SameAs
                | OpKind::MakeEnum { .. }
                | OpKind::EnumTag
                | OpKind::EnumField { .. }
                | OpKind::Unwrap
                | OpKind::Hint(HintKind::Deepfreeze) => Dep::Foldable(args),
                OpKind::Hint(HintKind::Concrete) => {
                    if let Some(v) = op.args[0].as_var() {
                        concrete.push((v, op.span));
                    }
                    Dep::Foldable(args)
                }
                OpKind::Hint(HintKind::Promote) | OpKind::GlobalMergePoint => Dep::Green,
                OpKind::Hint(HintKind::Variable) => Dep::Red(RedReason::Variable),
                OpKind::Len if base_is_array() => Dep::Green,
                // Reads: foldable through frozen pointers; decided below.
                OpKind::Load | OpKind::SharedDeref | OpKind::GetField(_) | OpKind::GetItem | OpKind::Len => {
                    Dep::Foldable(args)
                }
                OpKind::MapGet | OpKind::MapContains => Dep::Foldable(args),
                OpKind::SetField(_)
                | OpKind::SetItem
                | OpKind::Push
                | OpKind::Pop
                | OpKind::MapInsert
                | OpKind::MapRemove
                | OpKind::Drop
                | OpKind::CloneInto(_) => {
                    local_effects = true;
                    Dep::Red(RedReason::Effect)
                }
                // A value of immutable words (`ModuleTypes::value_struct`):
                // green where its fields are, as an enum value is.
                OpKind::NewStruct(s) if value_struct(s) => Dep::Foldable(args),
                OpKind::NewStruct(_) | OpKind::NewVec | OpKind::NewVecRepeat | OpKind::NewBox | OpKind::NewMap => {
                    local_effects = true;
                    Dep::Red(RedReason::Allocation)
                }
                // Green where its arguments are, with no effect.
                OpKind::CallPure(_) => Dep::Foldable(args),
                OpKind::CallOpaque(f) => {
                    local_effects = true;
                    Dep::Red(RedReason::Opaque(f.clone()))
                }
                OpKind::Format { mac, .. } => {
                    local_effects = true;
                    Dep::Red(RedReason::Opaque(format!("{mac}!")))
                }
                OpKind::Call(f) if module_fns(f) => {
                    let a: Vec<Option<Var>> = op.args.iter().map(Value::as_var).collect();
                    calls.push((op.result, f.clone(), a.clone(), op.span));
                    Dep::Call { callee: f.clone(), args: a }
                }
                OpKind::Call(f) => {
                    local_effects = true;
                    Dep::Red(RedReason::Opaque(f.clone()))
                }
            };
        }
    }
    // Frozen pointers: shared references, deep-frozen values and what is read
    // through them; a join is frozen when everything flowing in is.
    // A value struct is frozen too: nothing writes its fields.
    let mut frozen: Vec<bool> =
        g.vars.iter().map(|v| v.ty.is_shared_ref() || matches!(&v.ty, Ty::Struct(s) if value_struct(s))).collect();
    for (p, shared) in g.params().iter().zip(&g.shared_params) {
        frozen[p.0 as usize] |= *shared;
    }
    loop {
        let mut changed = false;
        for b in g.blocks() {
            for op in &g.graph[b].ops {
                let r = op.result.0 as usize;
                let through = |f: &Vec<bool>| op.args.first().and_then(Value::as_var).is_some_and(|v| f[v.0 as usize]);
                let fz = match &op.kind {
                    OpKind::Hint(HintKind::Deepfreeze) => true,
                    OpKind::Load
                    | OpKind::GetField(_)
                    | OpKind::GetItem
                    | OpKind::EnumField { .. }
                    | OpKind::Unwrap
                    | OpKind::SameAs
                    | OpKind::Hint(_) => through(&frozen),
                    _ => false,
                };
                if fz && !frozen[r] {
                    frozen[r] = true;
                    changed = true;
                }
            }
            if b != g.start {
                for ia in &g.graph[b].inputargs {
                    if let Dep::Join(inc) = &deps[ia.0 as usize] {
                        if !frozen[ia.0 as usize] && !inc.is_empty() && inc.iter().all(|v| frozen[v.0 as usize]) {
                            frozen[ia.0 as usize] = true;
                            changed = true;
                        }
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    for b in g.blocks() {
        for op in &g.graph[b].ops {
            if matches!(
                op.kind,
                OpKind::Load | OpKind::SharedDeref | OpKind::GetField(_) | OpKind::GetItem | OpKind::Len
            ) && matches!(deps[op.result.0 as usize], Dep::Foldable(_))
            {
                let base_frozen = op.args[0].as_var().is_none_or(|v| frozen[v.0 as usize]);
                if !base_frozen {
                    deps[op.result.0 as usize] = Dep::Red(RedReason::MutableRead);
                }
            }
        }
    }
    FnDeps { deps, frozen, defined, concrete, calls, local_effects, returns }
}

/// A function's summary, seen from its call sites.
#[derive(Clone, Debug, Default)]
pub(crate) struct Summary {
    /// `Some(S)`: the result is green whenever the parameters in S are
    /// (without forcing); `None`: the result is red unless forced.
    pub result_deps: Option<BTreeSet<usize>>,
    /// Parameters that `concrete` hints inside require green.
    pub required: BTreeSet<usize>,
    /// No effects, also through callees: a green call can run at compile time.
    pub pure: bool,
}

/// A `concrete` hint that cannot be satisfied.
#[derive(Clone, Debug)]
pub(crate) struct ForceError {
    /// Where to report it.
    pub span: Span,
    /// The message.
    pub message: String,
    /// The red value that blocked it, when a promotion of it would satisfy
    /// the hint (a scalar computed by an operation): (function, variable).
    pub promotable: Option<(String, Var)>,
}

/// The result of forcing: which variables became green, which parameters are needed.
#[derive(Clone, Debug, Default)]
pub(crate) struct Forcing {
    pub forced: Vec<bool>,
    pub params: BTreeSet<usize>,
    /// Calls whose results must be green: they use the specialized copy.
    pub green_result_calls: BTreeSet<Var>,
}

/// The whole-module analysis.
pub(crate) struct Analysis<'g> {
    pub graphs: &'g IndexMap<String, FlowGraph>,
    pub deps: IndexMap<String, FnDeps>,
    pub summaries: IndexMap<String, Summary>,
    /// Forcing done by the function's own hints (and its callees' requirements).
    pub base: IndexMap<String, Forcing>,
    /// Forcing of the specialized copy whose result is green, per function.
    pub green_result: HashMap<String, Result<Forcing, ForceError>>,
    in_progress: Vec<String>,
    pub errors: Vec<syn::Error>,
    /// Per error, the value whose promotion would remove it, if any.
    pub promotable: Vec<Option<(String, Var)>>,
}

fn describe(g: &FlowGraph, v: Var) -> String {
    let name = g.var(v).name.as_deref().map(as_written);
    let source = g.blocks().flat_map(|b| g.graph[b].ops.iter()).find(|o| o.result == v).map(|o| as_written(&o.source));
    match (name, source) {
        (Some(n), Some(s)) if n != s => format!("`{n}` (`{s}`)"),
        (Some(n), _) => format!("`{n}`"),
        (None, Some(s)) => format!("`{s}`"),
        (None, None) => format!("`{}`", g.var_name(v)),
    }
}

impl<'g> Analysis<'g> {
    pub fn run(graphs: &'g IndexMap<String, FlowGraph>, value_struct: &dyn Fn(&str) -> bool) -> Analysis<'g> {
        let is_module_fn = |f: &str| graphs.contains_key(f);
        let deps: IndexMap<String, FnDeps> =
            graphs.iter().map(|(n, g)| (n.clone(), fn_deps(g, &is_module_fn, value_struct))).collect();
        let mut a = Analysis {
            graphs,
            deps,
            summaries: IndexMap::new(),
            base: IndexMap::new(),
            green_result: HashMap::new(),
            in_progress: vec![],
            errors: vec![],
            promotable: vec![],
        };
        a.compute_summaries();
        a
    }

    /// Call-graph strongly connected components, callees first.
    fn sccs(&self) -> Vec<Vec<String>> {
        let mut cg = petgraph::graph::DiGraph::<String, ()>::new();
        let idx: HashMap<&String, petgraph::graph::NodeIndex> =
            self.graphs.keys().map(|n| (n, cg.add_node(n.clone()))).collect();
        for (n, d) in &self.deps {
            for (_, callee, _, _) in &d.calls {
                cg.update_edge(idx[n], idx[callee], ());
            }
        }
        // Tarjan's algorithm yields components in reverse topological order:
        // callees before callers.
        petgraph::algo::tarjan_scc(&cg).into_iter().map(|c| c.into_iter().map(|i| cg[i].clone()).collect()).collect()
    }

    fn compute_summaries(&mut self) {
        for name in self.graphs.keys() {
            // Purity starts optimistic, result dependencies pessimistic: the
            // fixpoints of recursive components are then the safe ones.
            self.summaries.insert(name.clone(), Summary { pure: true, ..Default::default() });
        }
        for scc in self.sccs() {
            // Recursive components: iterate to a fixpoint (bounded; the
            // lattice is finite and updates are monotone).
            for _round in 0..=scc.len() + 1 {
                let mut changed = false;
                for name in &scc {
                    let s = self.summarize(name);
                    let old = &self.summaries[name];
                    if old.result_deps != s.result_deps || old.required != s.required || old.pure != s.pure {
                        changed = true;
                    }
                    self.summaries.insert(name.clone(), s);
                }
                if !changed {
                    break;
                }
            }
        }
        // Requirements and hints, now that every summary is known.
        for name in self.graphs.keys().cloned().collect::<Vec<_>>() {
            let f = self.force_all(&name, &[]);
            match f {
                Ok(f) => {
                    self.base.insert(name, f);
                }
                Err(e) => {
                    self.errors.push(syn::Error::new(e.span, e.message));
                    self.promotable.push(e.promotable);
                    let n = self.graphs[&name].vars.len();
                    self.base.insert(name, Forcing { forced: vec![false; n], ..Default::default() });
                }
            }
        }
    }

    fn summarize(&mut self, name: &str) -> Summary {
        let d = &self.deps[name];
        // Symbolic greenness: which parameters a value depends on through
        // foldable operations only (None: red unless forced).
        let n = self.graphs[name].vars.len();
        let mut sym: Vec<Option<Option<BTreeSet<usize>>>> = vec![None; n];
        fn eval(
            v: Var,
            d: &FnDeps,
            sums: &IndexMap<String, Summary>,
            sym: &mut Vec<Option<Option<BTreeSet<usize>>>>,
        ) -> Option<BTreeSet<usize>> {
            // Iterative post-order evaluation (graphs can be large).
            let mut stack = vec![(v, false)];
            while let Some((x, ready)) = stack.pop() {
                let xi = x.0 as usize;
                if sym[xi].is_some() {
                    continue;
                }
                let children: Vec<Var> = match &d.deps[xi] {
                    Dep::Foldable(args) => args.clone(),
                    Dep::Call { args, .. } => args.iter().flatten().copied().collect(),
                    _ => vec![],
                };
                if !ready {
                    stack.push((x, true));
                    for c in children {
                        if sym[c.0 as usize].is_none() {
                            stack.push((c, false));
                        }
                    }
                    continue;
                }
                let get = |sym: &Vec<Option<Option<BTreeSet<usize>>>>, c: Var| sym[c.0 as usize].clone().flatten();
                let r = match &d.deps[xi] {
                    Dep::Green => Some(BTreeSet::new()),
                    Dep::Param(i) => Some(BTreeSet::from([*i])),
                    Dep::Foldable(args) => {
                        let mut s = BTreeSet::new();
                        let mut ok = true;
                        for a in args {
                            match get(sym, *a) {
                                Some(x) => s.extend(x),
                                None => ok = false,
                            }
                        }
                        ok.then_some(s)
                    }
                    Dep::Call { callee, args } => match &sums[callee].result_deps {
                        Some(need) => {
                            let mut s = BTreeSet::new();
                            let mut ok = true;
                            for j in need {
                                match args.get(*j).copied().flatten() {
                                    Some(a) => match get(sym, a) {
                                        Some(x) => s.extend(x),
                                        None => ok = false,
                                    },
                                    None => {}
                                }
                            }
                            ok.then_some(s)
                        }
                        None => None,
                    },
                    Dep::Join(_) | Dep::Red(_) => None,
                };
                sym[xi] = Some(r);
            }
            sym[v.0 as usize].clone().flatten()
        }
        let result_deps = if d.returns.is_empty() {
            Some(BTreeSet::new())
        } else if d.returns.len() == 1 {
            eval(d.returns[0], d, &self.summaries, &mut sym)
        } else {
            // Several returns of different values: a join.
            let first = d.returns[0];
            if d.returns.iter().all(|r| *r == first) {
                eval(first, d, &self.summaries, &mut sym)
            } else {
                None
            }
        };
        // Constants returned directly count as green: returns only lists variables.
        let pure = !d.local_effects && d.calls.iter().all(|(_, c, _, _)| self.summaries[c].pure || c == name);
        let required = match self.force_all(name, &[]) {
            Ok(f) => f.params,
            Err(_) => BTreeSet::new(),
        };
        Summary { result_deps, required, pure }
    }

    /// Forces the function's `concrete` hints, its callees' requirements, and
    /// `extra` (for specialized copies).
    pub fn force_all(&mut self, name: &str, extra: &[Var]) -> Result<Forcing, ForceError> {
        let g = &self.graphs[name];
        let n = g.vars.len();
        let mut st = Forcing { forced: vec![false; n], ..Default::default() };
        let concrete = self.deps[name].concrete.clone();
        for (v, span) in concrete {
            self.force(name, v, span, "`hint!(.., concrete)`", &mut st)?;
        }
        for (_, callee, args, span) in self.deps[name].calls.clone() {
            let required = self.summaries[&callee].required.clone();
            for j in required {
                if let Some(Some(a)) = args.get(j) {
                    let what =
                        format!("`{callee}`, which needs its parameter {} green (a `concrete` hint inside it),", j + 1);
                    self.force(name, *a, span, &what, &mut st)?;
                }
            }
        }
        for v in extra {
            let span = g.var(*v).span;
            self.force(name, *v, span, "a caller that needs the result green", &mut st)?;
        }
        Ok(st)
    }

    fn force(&mut self, name: &str, v: Var, span: Span, why: &str, st: &mut Forcing) -> Result<(), ForceError> {
        let mut work = vec![(v, v)];
        while let Some((x, origin)) = work.pop() {
            let xi = x.0 as usize;
            if st.forced[xi] {
                continue;
            }
            st.forced[xi] = true;
            let dep = self.deps[name].deps[xi].clone();
            match dep {
                Dep::Green => {}
                Dep::Param(i) => {
                    st.params.insert(i);
                }
                Dep::Foldable(args) | Dep::Join(args) => work.extend(args.into_iter().map(|a| (a, origin))),
                Dep::Red(reason) => {
                    let g = &self.graphs[name];
                    let blocked = describe(g, x);
                    let wanted = describe(g, origin);
                    let message = if x == origin {
                        let instead = match reason {
                            // A frame's instruction pointer, read from the
                            // interpreter's `Vec` of frames, is the usual case.
                            RedReason::MutableRead => "; `hint!(.., promote)` instead makes it a constant in compiled code by a switch on its run-time value (for data that changes, such as an instruction pointer kept in a frame), and `hint!(.., deepfreeze)` on the data it is read from makes the read green (for data that never changes)",
                            _ => "",
                        };
                        format!("{why} cannot be satisfied: {wanted} is red: it is {}{instead}", reason.explain())
                    } else {
                        format!(
                            "{why} cannot be satisfied: {wanted} depends on {blocked}, which is red: it is {}; {}",
                            reason.explain(),
                            match reason {
                                RedReason::MutableRead => "mark the data `hint!(.., deepfreeze)` or use `hint!(.., promote)` on a value it depends on",
                                _ => "use `hint!(.., promote)` on a value it depends on",
                            }
                        )
                    };
                    // A value the hint's operand depends on, not the
                    // operand itself: promoting the operand would leave
                    // what it is computed from unknown.
                    let promotable = (x != origin).then(|| self.promotable_red(name, x, &reason)).flatten();
                    return Err(ForceError { span, message, promotable });
                }
                Dep::Call { callee, args } => {
                    let inner = self.green_result_forcing(&callee);
                    match inner {
                        Ok(f) => {
                            st.green_result_calls.insert(x);
                            for j in f.params {
                                if let Some(Some(a)) = args.get(j) {
                                    work.push((*a, origin));
                                }
                            }
                        }
                        Err(e) => {
                            let g = &self.graphs[name];
                            let promotable =
                                (x != origin).then(|| self.promotable_red(name, x, &RedReason::Effect)).flatten();
                            return Err(ForceError {
                                promotable,
                                span,
                                message: format!(
                                    "{why} cannot be satisfied: {} depends on the result of `{callee}`, which cannot be green: {}",
                                    describe(g, origin),
                                    e.message
                                ),
                            });
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// `x`, red for `reason`, when promoting it where it is computed makes
    /// it green: a scalar (an integer, `bool` or `char`) that an operation
    /// defines, not one the interpreter forced red.
    fn promotable_red(&self, name: &str, x: Var, reason: &RedReason) -> Option<(String, Var)> {
        let g = &self.graphs[name];
        let scalar = matches!(g.var(x).ty, Ty::Int(_) | Ty::Bool | Ty::Char);
        let by_op = g.blocks().any(|b| g.graph[b].ops.iter().any(|o| o.result == x));
        (scalar && by_op && !matches!(reason, RedReason::Variable)).then(|| (name.to_string(), x))
    }

    /// The forcing of `callee`'s specialized copy whose result is green.
    pub fn green_result_forcing(&mut self, callee: &str) -> Result<Forcing, ForceError> {
        if let Some(r) = self.green_result.get(callee) {
            return r.clone();
        }
        if self.in_progress.iter().any(|c| c == callee) {
            // Recursion: the copy being built needs no more than what is found so far.
            return Ok(Forcing::default());
        }
        self.in_progress.push(callee.to_string());
        let returns = self.deps[callee].returns.clone();
        let r = self.force_all(callee, &returns);
        self.in_progress.pop();
        self.green_result.insert(callee.to_string(), r.clone());
        r
    }
}

/// Colors of one graph's variables given its parameters' colors and a forcing.
pub(crate) fn solve_colors(a: &Analysis<'_>, name: &str, param_green: &[bool], forcing: &Forcing) -> Vec<bool> {
    let d = &a.deps[name];
    let g = &a.graphs[name];
    let n = g.vars.len();
    let mut green = vec![false; n];
    // Definitions dominate their uses except at joins, and joins are green
    // only when forced: a few forward sweeps in block order reach the fixpoint.
    loop {
        let mut changed = false;
        for i in 0..n {
            if green[i] || !d.defined[i] {
                continue;
            }
            let gr = forcing.forced[i]
                || match &d.deps[i] {
                    Dep::Green => true,
                    Dep::Param(p) => param_green.get(*p).copied().unwrap_or(false),
                    Dep::Foldable(args) => args.iter().all(|v| green[v.0 as usize]),
                    Dep::Join(_) | Dep::Red(_) => false,
                    Dep::Call { callee, args } => match &a.summaries[callee].result_deps {
                        Some(need) => {
                            need.iter().all(|j| args.get(*j).copied().flatten().is_none_or(|v| green[v.0 as usize]))
                        }
                        None => false,
                    },
                };
            if gr {
                green[i] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    green
}

/// Liveness: variables live at the entry of each block.
pub(crate) fn live_in(g: &FlowGraph) -> HashMap<NodeIndex, BTreeSet<Var>> {
    let mut live: HashMap<NodeIndex, BTreeSet<Var>> = g.blocks().map(|b| (b, BTreeSet::new())).collect();
    loop {
        let mut changed = false;
        for b in g.blocks().collect::<Vec<_>>().into_iter().rev() {
            let inputs = &g.graph[b].inputargs;
            let s: BTreeSet<Var> = live_before(g, b, 0, &live).into_iter().filter(|v| !inputs.contains(v)).collect();
            if live[&b] != s {
                live.insert(b, s);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    live
}

/// Variables live just before operation `k` of block `b` (k = ops.len(): before the exit).
pub(crate) fn live_before(
    g: &FlowGraph,
    b: NodeIndex,
    k: usize,
    live: &HashMap<NodeIndex, BTreeSet<Var>>,
) -> BTreeSet<Var> {
    let blk = &g.graph[b];
    let mut s = BTreeSet::new();
    let add = |v: &Value, s: &mut BTreeSet<Var>| {
        if let Value::Var(x) = v {
            s.insert(*x);
        }
    };
    for e in g.exits(b) {
        let (t, link) = g.link(e);
        s.extend(live[&t].iter().copied());
        link.args.iter().for_each(|a| add(a, &mut s));
    }
    match &blk.exit {
        Exit::Branch { cond, .. } => add(cond, &mut s),
        Exit::Return(v) => add(v, &mut s),
        _ => {}
    }
    for op in blk.ops[k..].iter().rev() {
        s.remove(&op.result);
        op.args.iter().for_each(|a| add(a, &mut s));
    }
    s
}

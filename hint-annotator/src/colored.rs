//! Colored graphs: the result of the analysis, for the timeshifter, for tests
//! and for people: the color of every variable and operation, the kind of every
//! call, the global merge points with their position keys; as text and as DOT.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

use indexmap::IndexMap;
use petgraph::stable_graph::NodeIndex;
use petgraph::visit::EdgeRef;

use crate::bta::{live_before, live_in, solve_colors, Analysis};
use crate::flowgraph::{Exit, FlowGraph, HintKind, Op, OpKind, Value, Var};
use crate::module::{EnumDef, StructDef};
use crate::types::Ty;

/// A binding time.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Color {
    /// Known at compile time.
    Green,
    /// Known only at run time.
    Red,
}

impl Color {
    fn of(green: bool) -> Color {
        if green {
            Color::Green
        } else {
            Color::Red
        }
    }
    /// `green` or `red`.
    pub fn name(self) -> &'static str {
        match self {
            Color::Green => "green",
            Color::Red => "red",
        }
    }
}

/// How a call is compiled (PyPy's classification).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum CallKind {
    /// Green result, no effects: runs at compile time.
    Green,
    /// No result, red effects: inlined for its effects.
    Gray,
    /// Green result but red effects: inlined, the result known at compile time.
    Yellow,
    /// Red result: inlined (or residual when opaque).
    Red,
}

impl CallKind {
    /// `green`, `gray`, `yellow` or `red`.
    pub fn name(self) -> &'static str {
        match self {
            CallKind::Green => "green",
            CallKind::Gray => "gray",
            CallKind::Yellow => "yellow",
            CallKind::Red => "red",
        }
    }
}

/// A `hint!(global_merge_point)`.
#[derive(Clone, Debug)]
pub struct MergePoint {
    /// Its block.
    pub block: NodeIndex,
    /// Its index among the block's operations.
    pub op: usize,
    /// The green variables live there: the position key.
    pub position_key: Vec<Var>,
}

/// One function's flow graph with its colors.
#[derive(Clone, Debug)]
pub struct ColoredGraph {
    /// The flow graph.
    pub graph: FlowGraph,
    /// For a specialized copy: the function it specializes.
    pub specializes: Option<String>,
    green: Vec<bool>,
    frozen: Vec<bool>,
    call_kinds: HashMap<Var, CallKind>,
    green_result_calls: BTreeSet<Var>,
    merge_points: Vec<MergePoint>,
    live: HashMap<NodeIndex, BTreeSet<Var>>,
}

/// Suffix naming the specialized copy of a function whose result is forced green.
pub const GREEN_RESULT_SUFFIX: &str = "@green_result";

impl ColoredGraph {
    /// The function's name.
    pub fn name(&self) -> &str {
        &self.graph.name
    }

    /// The color of a variable.
    pub fn color(&self, v: Var) -> Color {
        Color::of(self.green[v.0 as usize])
    }

    /// Whether a variable is a frozen pointer (a shared reference, a
    /// deep-frozen value, or read through one): reads through it are
    /// foldable, so they happen at compile time when it is green.
    pub fn is_frozen(&self, v: Var) -> bool {
        self.frozen[v.0 as usize]
    }

    /// The color of a source binding: red if any definition of it is red,
    /// green if all are, `None` if no variable has that name.
    pub fn color_of(&self, name: &str) -> Option<Color> {
        let mut found = None;
        for v in self.defined_vars() {
            if self.graph.var(v).name.as_deref() == Some(name) {
                if !self.green[v.0 as usize] {
                    return Some(Color::Red);
                }
                found = Some(Color::Green);
            }
        }
        found
    }

    fn defined_vars(&self) -> Vec<Var> {
        let g = &self.graph;
        let mut out = vec![];
        for b in g.blocks() {
            out.extend(g.graph[b].inputargs.iter().copied());
            out.extend(g.graph[b].ops.iter().map(|o| o.result));
        }
        out
    }

    /// Whether an operation runs at compile time (green) or is left in
    /// residual code (red). Effects, allocations and opaque calls are red; a
    /// promotion is red when its operand is (it becomes a flexswitch).
    pub fn op_color(&self, op: &Op) -> Color {
        match &op.kind {
            OpKind::SetField(_)
            | OpKind::CloneInto(_)
            | OpKind::SetItem
            | OpKind::Push
            | OpKind::Pop
            | OpKind::NewStruct(_)
            | OpKind::NewVec
            | OpKind::NewVecRepeat
            | OpKind::NewBox
            | OpKind::CallOpaque(_)
            | OpKind::Format { .. } => Color::Red,
            OpKind::Hint(HintKind::Promote) => match &op.args[0] {
                Value::Var(v) => self.color(*v),
                Value::Const(_) => Color::Green,
            },
            OpKind::Call(_) | OpKind::CallPure(_) => Color::of(self.call_kind(op.result) == Some(CallKind::Green)),
            _ => self.color(op.result),
        }
    }

    /// The kind of the call defining `result`, if it is a call.
    pub fn call_kind(&self, result: Var) -> Option<CallKind> {
        self.call_kinds.get(&result).copied()
    }

    /// Whether the call defining `result` uses the callee's specialized copy
    /// whose result is green (see [`GREEN_RESULT_SUFFIX`]).
    pub fn calls_green_result_copy(&self, result: Var) -> bool {
        self.green_result_calls.contains(&result)
    }

    /// Every operation with its block and color, in block order.
    pub fn ops(&self) -> Vec<(NodeIndex, &Op, Color)> {
        let g = &self.graph;
        g.blocks().flat_map(|b| g.graph[b].ops.iter().map(move |o| (b, o, self.op_color(o)))).collect()
    }

    /// The variables live just before operation `k` of block `b` (`k` equal
    /// to the number of operations: before the exit).
    pub fn live_before(&self, b: NodeIndex, k: usize) -> BTreeSet<Var> {
        live_before(&self.graph, b, k, &self.live)
    }

    /// The global merge points.
    pub fn merge_points(&self) -> &[MergePoint] {
        &self.merge_points
    }

    /// Whether this function is a portal (it has a global merge point).
    pub fn is_portal(&self) -> bool {
        !self.merge_points.is_empty()
    }

    /// The source names of the position key of the first merge point.
    pub fn position_key(&self) -> Option<Vec<String>> {
        self.merge_points.first().map(|m| m.position_key.iter().map(|v| self.source_name(*v)).collect())
    }

    fn source_name(&self, v: Var) -> String {
        self.graph.var(v).name.clone().unwrap_or_else(|| self.graph.var_name(v))
    }

    fn var_note(&self, v: Var) -> String {
        format!(" {}", self.color(v).name())
    }

    fn op_line(&self, b: NodeIndex, k: usize, op: &Op) -> String {
        let g = &self.graph;
        let letter = match self.op_color(op) {
            Color::Green => 'G',
            Color::Red => 'R',
        };
        let mut line = format!("{letter} {}", g.op_text(op, &|_| String::new()));
        if let Some(kind) = self.call_kind(op.result) {
            let _ = write!(
                line,
                "  [{} call{}]",
                kind.name(),
                if self.calls_green_result_copy(op.result) { ", green result" } else { "" }
            );
        }
        if matches!(op.kind, OpKind::Hint(HintKind::Promote)) && self.op_color(op) == Color::Red {
            line.push_str("  [promotion: result green]");
        }
        if let Some(m) = self.merge_points.iter().find(|m| m.block == b && m.op == k) {
            let key: Vec<String> = m.position_key.iter().map(|v| g.var_name(*v)).collect();
            let _ = write!(line, "  [position key: {}]", key.join(", "));
        }
        line
    }

    /// The flow graph as text: operations prefixed `G` (compile time) or `R`
    /// (residual), input arguments with their colors.
    pub fn to_text(&self) -> String {
        let g = &self.graph;
        let mut out = String::new();
        let head = match &self.specializes {
            Some(f) => format!("fn {} -> {}  [copy of {f} with a green result]", g.name, g.ret_ty),
            None => format!("fn {} -> {}", g.name, g.ret_ty),
        };
        let _ = writeln!(out, "{head}");
        for b in g.blocks() {
            let _ = writeln!(out, "{}", g.block_heading(b, &|v| self.var_note(v)));
            for (k, op) in g.graph[b].ops.iter().enumerate() {
                let _ = writeln!(out, "    {}", self.op_line(b, k, op));
            }
            let _ = writeln!(out, "    {}", g.exit_text(b));
        }
        out
    }

    /// The flow graph in Graphviz's DOT language: one node per block, green and
    /// red rows per operation, promotions and merge points marked.
    pub fn to_dot(&self) -> String {
        let g = &self.graph;
        let node_attr = |_, (b, _): (NodeIndex, &crate::flowgraph::Block)| {
            let mut rows = String::new();
            let heading = g.block_heading(b, &|v| self.var_note(v));
            let hcolor = if b == g.start { "lightblue" } else { "lightgray" };
            let _ = write!(rows, "<tr><td align=\"left\" bgcolor=\"{hcolor}\"><b>{}</b></td></tr>", html(&heading));
            for (k, op) in g.graph[b].ops.iter().enumerate() {
                let color = match (&op.kind, self.op_color(op)) {
                    (OpKind::GlobalMergePoint, _) => "gold",
                    (OpKind::Hint(HintKind::Promote), Color::Red) => "orange",
                    (_, Color::Green) => "palegreen",
                    (_, Color::Red) => "lightcoral",
                };
                let _ = write!(
                    rows,
                    "<tr><td align=\"left\" bgcolor=\"{color}\">{}</td></tr>",
                    html(&self.op_line(b, k, op))
                );
            }
            let exit = match &g.graph[b].exit {
                Exit::Branch { cond, .. } => format!("if {}", g.value_text(cond)),
                Exit::Goto(_) => String::new(),
                Exit::Return(v) => format!("return {}", g.value_text(v)),
                Exit::Abort(m) => format!("abort {m:?}"),
            };
            let exit_color = match &g.graph[b].exit {
                Exit::Branch { cond: Value::Var(v), .. } => self.color(*v).name(),
                _ => "white",
            };
            let exit_bg = match exit_color {
                "green" => "palegreen",
                "red" => "lightcoral",
                _ => "white",
            };
            if !exit.is_empty() {
                let _ = write!(rows, "<tr><td align=\"left\" bgcolor=\"{exit_bg}\">{}</td></tr>", html(&exit));
            }
            let shape = if self.merge_points.iter().any(|m| m.block == b) {
                "shape=box, peripheries=2, color=goldenrod"
            } else {
                "shape=plain"
            };
            format!("{shape}, label=<<table border=\"0\" cellspacing=\"0\" cellborder=\"1\">{rows}</table>>")
        };
        let edge_attr = |_, e: petgraph::stable_graph::EdgeReference<'_, crate::flowgraph::Link>| {
            let src = e.source();
            let args: Vec<String> = e.weight().args.iter().map(|a| g.value_text(a)).collect();
            let which = match &g.graph[src].exit {
                Exit::Branch { if_true, .. } if *if_true == e.id() => "true ",
                Exit::Branch { .. } => "false ",
                _ => "",
            };
            format!("label=\"{}\"", format!("{which}({})", args.join(", ")).replace('"', "\\\""))
        };
        let dot = petgraph::dot::Dot::with_attr_getters(
            &g.graph,
            &[petgraph::dot::Config::NodeNoLabel, petgraph::dot::Config::EdgeNoLabel],
            &edge_attr,
            &node_attr,
        );
        format!("{dot:?}")
    }
}

fn html(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The colored graphs of every function of a module, plus the specialized
/// copies some call sites need.
#[derive(Clone, Debug, Default)]
pub struct ColoredGraphs {
    functions: IndexMap<String, ColoredGraph>,
    types: ModuleTypes,
    left_to_rust: Vec<LeftToRust>,
}

/// Code the analysis leaves to Rust: a function (or item) it cannot analyze,
/// and why. Compiled code calls such a function as it is (a residual call),
/// never inlines it; code that uses an item it does not look into is left
/// to Rust in turn.
#[derive(Clone, Debug)]
pub struct LeftToRust {
    /// The function (`Type::name` for methods) or item.
    pub name: String,
    /// What the analysis does not support in it, at their spans.
    pub reasons: Vec<syn::Error>,
}

impl LeftToRust {
    /// One line per reason: `line:column: message`.
    pub fn lines(&self) -> Vec<String> {
        self.reasons
            .iter()
            .map(|e| {
                let at = e.span().start();
                format!("{}:{}: {e}", at.line, at.column + 1)
            })
            .collect()
    }
}

/// The structs and enums of the module, for code generation.
#[derive(Clone, Debug, Default)]
pub struct ModuleTypes {
    /// Structs by name.
    pub structs: IndexMap<String, StructDef>,
    /// Enums by name.
    pub enums: IndexMap<String, EnumDef>,
    /// The generic functions (`Type::name` for methods): residual calls of
    /// them name their result's type, from which Rust infers their type
    /// arguments.
    pub generic_fns: std::collections::BTreeSet<String>,
    /// The structs whose fields analyzed code writes (`s.f = v`) other than
    /// through a `&mut` parameter of a portal no analyzed code calls (the
    /// caller's memory: a split `self.last = ins`): a `Copy` struct of
    /// scalars that is not among them is held by enums as its fields'
    /// words (nothing can write the place a payload was read from), and one
    /// of words is a value struct (`ModuleTypes::value_struct`).
    pub written_structs: std::collections::BTreeSet<String>,
    /// Per function with one (`Type::name` for methods), which parameters
    /// it declares shared references (`&T`; see `FnDef`'s `shared`):
    /// a residual call of it lends a value so held by the analysis as
    /// its value.
    pub shared_params: std::collections::BTreeMap<String, Vec<bool>>,
}

impl ModuleTypes {
    /// Whether values of the struct `s` are immutable words: `Copy`, of
    /// fields that are words (`ModuleTypes::word_value`), without
    /// lifetimes, `Drop` or `#[virtualizable]`, and no analyzed code writes
    /// its fields but through a portal's own `&mut` parameter (the caller's
    /// memory, never a value made while compiling: `written_structs`). Such
    /// a value (a decoded instruction) is green where its
    /// fields are, and its fields read where it is (see the binding-time
    /// analysis).
    pub fn value_struct(&self, s: &str) -> bool {
        self.structs.get(s).is_some_and(|d| {
            d.copy
                && d.lifetimes == 0
                && !d.drops
                && !d.virtualizable
                && !d.fields.is_empty()
                && d.fields.values().all(|t| self.word_value(t, 0))
                && !self.written_structs.contains(s)
        })
    }

    /// Whether values of type `t` are words with no pointer among them:
    /// scalars, and the module's enums, `Option`s and tuples of those
    /// (an opcode, `Option<u8>`), `depth` levels deep at most 4.
    pub fn word_value(&self, t: &Ty, depth: usize) -> bool {
        match t {
            t if t.is_scalar() => !matches!(t, Ty::F32),
            _ if depth >= 4 => false,
            Ty::Enum(e) => self.enums.get(e).is_some_and(|d| {
                d.variants.iter().all(|v| v.fields.iter().all(|(_, f)| self.word_value(f, depth + 1)))
            }),
            Ty::Option(t) => self.word_value(t, depth + 1),
            Ty::Tuple(ts) => ts.iter().all(|t| self.word_value(t, depth + 1)),
            _ => false,
        }
    }
}

impl ColoredGraphs {
    /// Where the module's portals have nothing to specialize: the span of
    /// a merge point, when no merge point has a green variable live and no
    /// function promotes a value or needs one green (`promote`, `concrete`).
    /// Compiled code could then only be the interpreter again.
    pub fn nothing_to_specialize(&self) -> Option<proc_macro2::Span> {
        // A key of green references alone (the program, a frozen field of
        // `self`) says what is interpreted, not where: still nothing.
        let keyed = self
            .functions
            .values()
            .any(|g| g.merge_points.iter().any(|m| m.position_key.iter().any(|v| !g.graph.var(*v).ty.is_pointer())));
        let hinted = self.functions.values().any(|g| {
            g.graph.blocks().flat_map(|b| &g.graph.graph[b].ops).any(|op| match op.kind {
                OpKind::Hint(HintKind::Promote) => true,
                // Green data (a program, a frozen field of `self`), not a position.
                OpKind::Hint(HintKind::Concrete) => !g.graph.value_ty(&op.args[0]).is_pointer(),
                _ => false,
            })
        });
        if keyed || hinted {
            return None;
        }
        let g = self.functions.values().find(|g| g.is_portal())?;
        let m = &g.merge_points[0];
        Some(g.graph.graph[m.block].ops[m.op].span)
    }

    /// One function (methods as `Type::name`; specialized copies as
    /// `name@green_result`).
    pub fn function(&self, name: &str) -> Option<&ColoredGraph> {
        self.functions.get(name)
    }

    /// Every function, in source order, then the specialized copies.
    pub fn functions(&self) -> impl Iterator<Item = &ColoredGraph> {
        self.functions.values()
    }

    /// The functions and items the analysis left to Rust, with why.
    pub fn left_to_rust(&self) -> &[LeftToRust] {
        &self.left_to_rust
    }

    /// A module left to Rust as a whole (a portal or the module's types use
    /// Rust the analysis does not support): no graphs, and why.
    pub fn left_whole(name: String, reasons: Vec<syn::Error>) -> ColoredGraphs {
        ColoredGraphs { left_to_rust: vec![LeftToRust { name, reasons }], ..ColoredGraphs::default() }
    }

    /// The module's structs and enums.
    pub fn types(&self) -> &ModuleTypes {
        &self.types
    }

    /// All graphs as text.
    pub fn to_text(&self) -> String {
        let mut parts: Vec<String> = self.functions.values().map(|f| f.to_text()).collect();
        for l in &self.left_to_rust {
            let mut t = format!("left to Rust: {}\n", l.name);
            for line in l.lines() {
                t.push_str(&format!("    {line}\n"));
            }
            parts.push(t);
        }
        parts.join("\n")
    }
}

/// At most this many values are promoted for `concrete` hints per module.
const AUTO_PROMOTIONS: usize = 64;

/// Runs the analysis over a module's graphs and colors them.
///
/// With `auto_promote`, a `concrete` hint that a red scalar blocks (a read
/// of mutable memory such as `let pc = m.pc`, or an effect's result)
/// promotes that scalar where it is computed, as `hint!(.., promote)`
/// written there would, and the analysis runs again; what no promotion can
/// satisfy is still an error.
pub(crate) fn color_module(
    mut graphs: IndexMap<String, FlowGraph>,
    types: ModuleTypes,
    left_to_rust: Vec<LeftToRust>,
    auto_promote: bool,
) -> Result<ColoredGraphs, Vec<syn::Error>> {
    let value_struct = |s: &str| types.value_struct(s);
    for _ in 0..if auto_promote { AUTO_PROMOTIONS } else { 0 } {
        let blocker = {
            let a = Analysis::run(&graphs, &value_struct);
            match a.promotable.iter().flatten().next() {
                Some(p) => p.clone(),
                None => break,
            }
        };
        let (f, x) = blocker;
        if graphs.get_mut(&f).and_then(|g| g.promote_where_computed(x)).is_none() {
            break;
        }
    }
    let mut a = Analysis::run(&graphs, &value_struct);
    if !a.errors.is_empty() {
        return Err(std::mem::take(&mut a.errors));
    }
    // Parameters: green when required, or when every call site passes green.
    let mut param_green: IndexMap<String, Vec<bool>> = graphs
        .iter()
        .map(|(n, g)| {
            let req = &a.summaries[n].required;
            (n.clone(), (0..g.params().len()).map(|i| req.contains(&i)).collect())
        })
        .collect();
    let mut colors: IndexMap<String, Vec<bool>>;
    loop {
        colors = graphs.keys().map(|n| (n.clone(), solve_colors(&a, n, &param_green[n], &a.base[n]))).collect();
        let mut sites: HashMap<&str, Vec<Vec<bool>>> = HashMap::new();
        for (caller, d) in &a.deps {
            for (_, callee, args, _) in &d.calls {
                let greens = args.iter().map(|v| v.is_none_or(|v| colors[caller][v.0 as usize])).collect();
                sites.entry(callee.as_str()).or_default().push(greens);
            }
        }
        let mut changed = false;
        for (name, pg) in param_green.iter_mut() {
            let Some(s) = sites.get(name.as_str()) else { continue };
            for (j, p) in pg.iter_mut().enumerate() {
                if !*p && s.iter().all(|site| site.get(j).copied().unwrap_or(false)) {
                    *p = true;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    let mut functions = IndexMap::new();
    for (name, g) in &graphs {
        let cg = build(&a, g, colors[name].clone(), a.base[name].green_result_calls.clone(), None);
        functions.insert(name.clone(), cg);
    }
    let copies: Vec<String> =
        graphs.keys().filter(|n| matches!(a.green_result.get(*n), Some(Ok(_)))).cloned().collect();
    for name in copies {
        let Some(Ok(f)) = a.green_result.get(&name).cloned() else { continue };
        let mut pg = param_green[&name].clone();
        for p in &f.params {
            pg[*p] = true;
        }
        let green = solve_colors(&a, &name, &pg, &f);
        let mut g = graphs[&name].clone();
        g.name = format!("{name}{GREEN_RESULT_SUFFIX}");
        let cg = build(&a, &g, green, f.green_result_calls.clone(), Some(name.clone()));
        functions.insert(g.name.clone(), cg);
    }
    Ok(ColoredGraphs { functions, types, left_to_rust })
}

fn build(
    a: &Analysis<'_>,
    g: &FlowGraph,
    green: Vec<bool>,
    green_result_calls: BTreeSet<Var>,
    specializes: Option<String>,
) -> ColoredGraph {
    let mut call_kinds = HashMap::new();
    for b in g.blocks() {
        for op in &g.graph[b].ops {
            let r = op.result;
            let unit = g.var(r).ty == Ty::Unit;
            let kind = match &op.kind {
                OpKind::Call(f) => {
                    let pure = a.summaries.get(f).is_some_and(|s| s.pure);
                    match (green[r.0 as usize], pure, unit) {
                        (true, true, _) => CallKind::Green,
                        (_, false, true) => CallKind::Gray,
                        (true, false, false) => CallKind::Yellow,
                        _ => CallKind::Red,
                    }
                }
                OpKind::CallPure(_) if green[r.0 as usize] => CallKind::Green,
                OpKind::CallOpaque(_) | OpKind::CallPure(_) | OpKind::Format { .. } if unit => CallKind::Gray,
                OpKind::CallPure(_) => CallKind::Red,
                OpKind::CallOpaque(_) => CallKind::Red,
                _ => continue,
            };
            call_kinds.insert(r, kind);
        }
    }
    let live = live_in(g);
    let mut merge_points = vec![];
    for b in g.blocks() {
        for (k, op) in g.graph[b].ops.iter().enumerate() {
            if op.kind == OpKind::GlobalMergePoint {
                let position_key =
                    live_before(g, b, k + 1, &live).into_iter().filter(|v| green[v.0 as usize]).collect();
                merge_points.push(MergePoint { block: b, op: k, position_key });
            }
        }
    }
    let frozen = a.deps[specializes.as_deref().unwrap_or(&g.name)].frozen.clone();
    ColoredGraph { graph: g.clone(), specializes, green, frozen, call_kinds, green_result_calls, merge_points, live }
}

//! Flow graphs: one per function, PyPy-style.
//!
//! A graph is a set of blocks held in a petgraph `StableDiGraph`; each block has
//! input arguments, ordered operations and one exit. Exits leave through *links*
//! (the graph's edges) that carry values to the input arguments of the next
//! block. Every variable has exactly one definition: a function parameter, a block
//! input argument or an operation result. Constants appear inline as operands.
//!
//! Architecture Invariant: block and variable numbering depend only on the
//! source text, so the text form is stable from run to run.

use std::fmt::Write as _;

/// The residual call of Rust's own `From` that converts an error into a
/// function's `Box<dyn Error>` (a `?`'s conversion; see the lowering of
/// calls): its result is an object compiled code owns.
pub const BOX_FROM: &str = "core::convert::From::from";

use petgraph::stable_graph::{EdgeIndex, NodeIndex, StableDiGraph};
use proc_macro2::Span;

use crate::types::{IntTy, Ty};

/// A variable of a flow graph (an index into [`FlowGraph::vars`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct Var(pub u32);

/// What is known about a variable.
#[derive(Clone, Debug)]
pub struct VarInfo {
    /// The source name, when the variable holds a named binding.
    pub name: Option<String>,
    /// Its machine-level type.
    pub ty: Ty,
    /// Where it is defined in the source.
    pub span: Span,
}

/// A compile-time constant operand.
#[derive(Clone, PartialEq, Debug)]
pub enum Const {
    /// An integer of the given type.
    Int(i128, IntTy),
    /// A bool.
    Bool(bool),
    /// A char.
    Char(char),
    /// A float (`f32` or `f64` by its type).
    Float(f64, Ty),
    /// `()`.
    Unit,
    /// The tag of an enum variant, compared against [`OpKind::EnumTag`].
    Tag {
        /// The enum (`Option` and `Result` included).
        enum_name: String,
        /// The variant.
        variant: String,
        /// Its index in declaration order.
        index: u32,
    },
    /// A string literal: a `&'static str`, known while compiling.
    Str(String),
}

impl Const {
    /// The type of the constant.
    pub fn ty(&self) -> Ty {
        match self {
            Const::Int(_, t) => Ty::Int(*t),
            Const::Bool(_) => Ty::Bool,
            Const::Char(_) => Ty::Char,
            Const::Float(_, t) => t.clone(),
            Const::Unit => Ty::Unit,
            Const::Tag { .. } => Ty::Int(IntTy::U32),
            Const::Str(_) => Ty::Ref { mutable: false, to: Box::new(Ty::Text) },
        }
    }
}

impl std::fmt::Display for Const {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Const::Int(v, t) => write!(f, "{v}_{}", t.name()),
            Const::Bool(b) => write!(f, "{b}"),
            Const::Char(c) => write!(f, "{c:?}"),
            Const::Float(v, t) => write!(f, "{v:?}_{t}"),
            Const::Unit => f.write_str("()"),
            Const::Tag { enum_name, variant, .. } => write!(f, "{enum_name}::{variant}"),
            Const::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// An operand: a variable or a constant.
#[derive(Clone, PartialEq, Debug)]
pub enum Value {
    /// A variable.
    Var(Var),
    /// A constant.
    Const(Const),
}

impl Value {
    /// The variable, if this is one.
    pub fn as_var(&self) -> Option<Var> {
        match self {
            Value::Var(v) => Some(*v),
            Value::Const(_) => None,
        }
    }
}

/// Binary operations (integer, bool and float; Rust's semantics per type).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[allow(missing_docs)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    WrappingAdd,
    WrappingSub,
    WrappingMul,
    WrappingDiv,
    WrappingRem,
    Min,
    Max,
}

impl BinOp {
    /// The operation's name in the text form.
    pub fn name(self) -> &'static str {
        match self {
            BinOp::Add => "add",
            BinOp::Sub => "sub",
            BinOp::Mul => "mul",
            BinOp::Div => "div",
            BinOp::Rem => "rem",
            BinOp::BitAnd => "and",
            BinOp::BitOr => "or",
            BinOp::BitXor => "xor",
            BinOp::Shl => "shl",
            BinOp::Shr => "shr",
            BinOp::Eq => "eq",
            BinOp::Ne => "ne",
            BinOp::Lt => "lt",
            BinOp::Le => "le",
            BinOp::Gt => "gt",
            BinOp::Ge => "ge",
            BinOp::WrappingAdd => "wrapping_add",
            BinOp::WrappingSub => "wrapping_sub",
            BinOp::WrappingMul => "wrapping_mul",
            BinOp::WrappingDiv => "wrapping_div",
            BinOp::WrappingRem => "wrapping_rem",
            BinOp::Min => "min",
            BinOp::Max => "max",
        }
    }

    /// Whether the result is a bool comparison of the operands.
    pub fn is_comparison(self) -> bool {
        matches!(self, BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge)
    }
}

/// Unary operations.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[allow(missing_docs)]
pub enum UnOp {
    Neg,
    Not,
    WrappingNeg,
    Abs,
}

impl UnOp {
    /// The operation's name in the text form.
    pub fn name(self) -> &'static str {
        match self {
            UnOp::Neg => "neg",
            UnOp::Not => "not",
            UnOp::WrappingNeg => "wrapping_neg",
            UnOp::Abs => "abs",
        }
    }
}

/// The binding-time hints of `hint!(e, FLAG)`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum HintKind {
    /// `e` and everything it depends on must be green.
    Concrete,
    /// The result is green; the value is promoted at run time.
    Promote,
    /// Reads through the result are green when it is green.
    Deepfreeze,
    /// The result is red.
    Variable,
}

impl HintKind {
    /// The flag as written in `hint!`.
    pub fn name(self) -> &'static str {
        match self {
            HintKind::Concrete => "concrete",
            HintKind::Promote => "promote",
            HintKind::Deepfreeze => "deepfreeze",
            HintKind::Variable => "variable",
        }
    }
}

/// What an operation does. Operand conventions are given per kind.
#[derive(Clone, PartialEq, Debug)]
pub enum OpKind {
    /// `[a, b]`.
    Bin(BinOp),
    /// `[a]`.
    Un(UnOp),
    /// `[a]`, converted to the result's type with `as`.
    Cast,
    /// `[a]`: a copy (also retyping: `&x`, `*r` of pointers).
    SameAs,
    /// `[a]`: `hint!(a, kind)`.
    Hint(HintKind),
    /// `[]`: `hint!(global_merge_point)`.
    GlobalMergePoint,
    /// `[ptr]`: read a scalar or enum through a reference or box (`*r`).
    Load,
    /// `[ptr]`: read a struct field.
    GetField(String),
    /// `[ptr, value]`: write a struct field.
    SetField(String),
    /// `[ptr, index]`: read an element of a Vec, slice or array.
    GetItem,
    /// `[ptr, index, value]`: write an element.
    SetItem,
    /// `[ptr]`: the length of a Vec, slice or array.
    Len,
    /// `[vec, value]`.
    Push,
    /// `[vec]`, giving an `Option`.
    Pop,
    /// `[]`: `HashMap::new()`.
    NewMap,
    /// `[map, key, value]`, giving the old value as an `Option`.
    MapInsert,
    /// `[map, key]`: the value as an `Option` (`get(&k)`, copied).
    MapGet,
    /// `[map, key]`, giving the removed value as an `Option`.
    MapRemove,
    /// `[map, key]`: a `bool`.
    MapContains,
    /// Field values in declaration order: allocate a struct of the module.
    NewStruct(String),
    /// Elements: allocate a Vec (`Vec::new()`, `vec![a, b]`).
    NewVec,
    /// `[elem, count]`: `vec![elem; count]`.
    NewVecRepeat,
    /// `[value]`: `Box::new(value)`.
    NewBox,
    /// Payload values: an enum value (module enums, `Option`, `Result`).
    MakeEnum {
        /// The enum (`Option` and `Result` included).
        enum_name: String,
        /// The variant.
        variant: String,
        /// Its index in declaration order.
        index: u32,
    },
    /// `[value]`: the variant index of an enum value, as a `u32`.
    EnumTag,
    /// `[value]`: a payload field of the given variant.
    EnumField {
        /// The variant the value is known to be.
        variant: String,
        /// The payload field's position.
        index: u32,
    },
    /// `[value]`: `.unwrap()` / `.expect(..)` of an `Option` or `Result` (panics).
    Unwrap,
    /// `[object]`: the end of an object a local owned (a struct holding
    /// what the analysis does not model, made by Rust's own `.clone()`),
    /// where Rust drops it: the local is assigned again.
    Drop,
    /// `[dst, src]`: `dst.f = src.f.clone()`, two objects of one struct,
    /// for a field of a type the analysis does not model (an `Rc`): Rust's
    /// own clone of the field into the place, its old value dropped. An
    /// assignment of a derived clone (`frame = frames.last().clone()`)
    /// writes its fields so, the others as values.
    CloneInto(String),
    /// `[rc]`: the `&T` an `Rc<T>` or `Arc<T>` (an opaque object, at its
    /// address) points to: fields are read through shared pointers as
    /// through shared references.
    SharedDeref,
    /// Arguments: a call of a function of the module (methods as `Type::name`).
    Call(String),
    /// Arguments: a call of a function outside the module or marked
    /// `#[jit_opaque]`: always residual.
    CallOpaque(String),
    /// Arguments: a call of a function outside the module whose body only
    /// computes on its arguments and constants (`Op::from_byte(b)`, see
    /// `FnDef::pure`): run at compile time where its arguments are green,
    /// else residual as `CallOpaque` is.
    CallPure(String),
    /// The values `print!`, `println!`, `eprint!` or `eprintln!` formats, in
    /// order: an effect, always residual.
    Format {
        /// The macro's name, without `!`.
        mac: String,
        /// The format string, as written.
        template: String,
        /// Per argument, its name when it is a named one (`x = ..`, or `{x}`
        /// captured from the format string).
        names: Vec<Option<String>>,
    },
}

impl OpKind {
    /// The operation's name in the text form.
    pub fn name(&self) -> String {
        match self {
            OpKind::Bin(b) => b.name().into(),
            OpKind::Un(u) => u.name().into(),
            OpKind::Cast => "cast".into(),
            OpKind::SameAs => "same_as".into(),
            OpKind::Hint(h) => format!("hint_{}", h.name()),
            OpKind::GlobalMergePoint => "global_merge_point".into(),
            OpKind::Load => "load".into(),
            OpKind::GetField(f) => format!("getfield.{f}"),
            OpKind::SetField(f) => format!("setfield.{f}"),
            OpKind::GetItem => "getitem".into(),
            OpKind::SetItem => "setitem".into(),
            OpKind::Len => "len".into(),
            OpKind::Push => "push".into(),
            OpKind::Pop => "pop".into(),
            OpKind::NewMap => "new_map".into(),
            OpKind::MapInsert => "map_insert".into(),
            OpKind::MapGet => "map_get".into(),
            OpKind::MapRemove => "map_remove".into(),
            OpKind::MapContains => "map_contains".into(),
            OpKind::NewStruct(s) => format!("new.{s}"),
            OpKind::NewVec => "new_vec".into(),
            OpKind::NewVecRepeat => "new_vec_repeat".into(),
            OpKind::NewBox => "new_box".into(),
            OpKind::MakeEnum { enum_name, variant, .. } => format!("{enum_name}::{variant}"),
            OpKind::EnumTag => "enum_tag".into(),
            OpKind::EnumField { variant, index } => format!("enum_field.{variant}.{index}"),
            OpKind::Unwrap => "unwrap".into(),
            OpKind::SharedDeref => "shared_deref".into(),
            OpKind::Drop => "drop".into(),
            OpKind::CloneInto(f) => format!("clone_into.{f}"),
            OpKind::Call(f) => format!("call {f}"),
            OpKind::CallOpaque(f) => format!("call_opaque {f}"),
            OpKind::CallPure(f) => format!("call_pure {f}"),
            OpKind::Format { mac, template, .. } => format!("format {mac}!({template:?})"),
        }
    }
}

/// One operation: `result = kind(args)`.
#[derive(Clone, Debug)]
pub struct Op {
    /// The variable it defines (of type `()` for operations done for effect).
    pub result: Var,
    /// What it does.
    pub kind: OpKind,
    /// Its operands.
    pub args: Vec<Value>,
    /// The source expression it comes from.
    pub span: Span,
    /// That expression as text, for messages.
    pub source: String,
}

/// The arguments a link carries to the input arguments of its target block.
#[derive(Clone, Debug, Default)]
pub struct Link {
    /// One value per input argument of the target.
    pub args: Vec<Value>,
}

/// How a block ends.
#[derive(Clone, Debug)]
pub enum Exit {
    /// Continue along one link.
    Goto(EdgeIndex),
    /// Continue along `if_true` or `if_false` depending on a bool.
    Branch {
        /// The condition.
        cond: Value,
        /// Taken when `cond` is true.
        if_true: EdgeIndex,
        /// Taken when `cond` is false.
        if_false: EdgeIndex,
    },
    /// Return from the function.
    Return(Value),
    /// Panic with a message (`panic!`, `unreachable!`, a failed match).
    Abort(String),
}

/// A basic block.
#[derive(Clone, Debug)]
pub struct Block {
    /// Variables defined on entry, one per argument of each incoming link.
    pub inputargs: Vec<Var>,
    /// Operations in order.
    pub ops: Vec<Op>,
    /// The exit.
    pub exit: Exit,
}

/// The flow graph of one function.
#[derive(Clone, Debug)]
pub struct FlowGraph {
    /// The function's name (`name`, or `Type::name` for methods).
    pub name: String,
    /// Blocks (nodes) and links (edges).
    pub graph: StableDiGraph<Block, Link>,
    /// The entry block; its input arguments are the parameters.
    pub start: NodeIndex,
    /// Every variable, indexed by [`Var`].
    pub vars: Vec<VarInfo>,
    /// The return type.
    pub ret_ty: Ty,
    /// Marked `#[jit_opaque]`: never inlined.
    pub opaque: bool,
    /// Per parameter, whether it is declared a shared reference (frozen
    /// while the call lasts, whatever its machine-level type).
    pub shared_params: Vec<bool>,
    /// The functions its residual calls of outlined Rust call (see
    /// [`Outlined`]).
    pub outlined: Vec<Outlined>,
}

/// A statement of a portal that uses Rust the analysis does not model,
/// made a function of its own (`fn name(params) -> ret { body }`) that the
/// portal's graph calls as a residual call (`OpKind::CallOpaque(name)`):
/// the macro writes it beside the generating extension, so the portal
/// compiles around it instead of being left to Rust as a whole.
#[derive(Clone, Debug)]
pub struct Outlined {
    /// The function's name, unique in the module.
    pub name: String,
    /// Its parameters: the locals the statement uses, a binding the
    /// statement only reads or calls methods on through a `&mut` to it.
    pub params: Vec<(String, Ty)>,
    /// The parameters that are a `String`'s `as_str()` (typed `&String`
    /// in the analysis, a reference to the `String`): declared `&str`, as
    /// the statement's binding is.
    pub views: Vec<String>,
    /// What it returns.
    pub ret: Ty,
    /// The statement's expression, the names of the parameters passed
    /// by reference dereferenced (`(*v)`) and `self` renamed.
    pub body: proc_macro2::TokenStream,
    /// Why: what the analysis does not support in the statement.
    pub reasons: Vec<syn::Error>,
    /// The types of the locals the statement changes after the first
    /// (which it returns): it leaves them in a thread-local stash
    /// ([`Outlined::stash_name`], a `Cell` of an `Option` of their tuple),
    /// and functions `<name>_1`, `<name>_2`, .. read each back.
    pub stash: Vec<Ty>,
}

impl Outlined {
    /// The name of the stash of the outlined function `name`.
    pub fn stash_name(name: &str) -> String {
        format!("__JITGEN_STASH_{name}")
    }
}

impl FlowGraph {
    /// The parameters (the input arguments of the start block).
    pub fn params(&self) -> &[Var] {
        &self.graph[self.start].inputargs
    }

    /// Information about a variable.
    pub fn var(&self, v: Var) -> &VarInfo {
        &self.vars[v.0 as usize]
    }

    /// The type of an operand.
    pub fn value_ty(&self, v: &Value) -> Ty {
        match v {
            Value::Var(v) => self.var(*v).ty.clone(),
            Value::Const(c) => c.ty(),
        }
    }

    /// Where `v` is what an `Rc` or `Arc` points to (`shared_deref` made
    /// it): that pointer's type's text (`Rc<Function>`).
    pub fn shared_pointee(&self, v: &Value) -> Option<String> {
        let Value::Var(x) = v else { return None };
        self.blocks().flat_map(|b| self.graph[b].ops.iter()).find_map(|op| match (&op.kind, op.result == *x) {
            (OpKind::SharedDeref, true) => match self.value_ty(&op.args[0]).autoderef() {
                Ty::Foreign(text) => Some(text.clone()),
                _ => None,
            },
            (OpKind::SameAs, true) => self.shared_pointee(&op.args[0]),
            _ => None,
        })
    }

    /// Promotes `x` where an operation computes it: a new variable,
    /// `hint!(x, promote)` right after that operation, replaces `x` in
    /// every later use. Definitions dominate their uses, so every use is
    /// after the promotion. What a `concrete` hint on a value computed
    /// from a read of mutable memory asks for (see `bta`). Returns the
    /// promoted variable, or `None` when no operation defines `x`.
    pub fn promote_where_computed(&mut self, x: Var) -> Option<Var> {
        let (b, k) = self
            .graph
            .node_indices()
            .find_map(|b| self.graph[b].ops.iter().position(|o| o.result == x).map(|k| (b, k)))?;
        let promoted = Var(self.vars.len() as u32);
        let info = self.vars[x.0 as usize].clone();
        self.vars.push(info);
        let def = &self.graph[b].ops[k];
        let op = Op {
            result: promoted,
            kind: OpKind::Hint(HintKind::Promote),
            args: vec![Value::Var(x)],
            span: def.span,
            source: format!("hint!({}, promote)", def.source),
        };
        let renamed = |v: &mut Value| {
            if *v == Value::Var(x) {
                *v = Value::Var(promoted);
            }
        };
        for n in self.graph.node_indices().collect::<Vec<_>>() {
            let block = &mut self.graph[n];
            for o in &mut block.ops {
                o.args.iter_mut().for_each(renamed);
            }
            match &mut block.exit {
                Exit::Branch { cond, .. } => renamed(cond),
                Exit::Return(v) => renamed(v),
                Exit::Goto(_) | Exit::Abort(_) => {}
            }
        }
        for e in self.graph.edge_indices().collect::<Vec<_>>() {
            self.graph[e].args.iter_mut().for_each(renamed);
        }
        self.graph[b].ops.insert(k + 1, op);
        Some(promoted)
    }

    /// Blocks in a stable order (creation order).
    pub fn blocks(&self) -> impl Iterator<Item = NodeIndex> + '_ {
        self.graph.node_indices()
    }

    /// The target block and arguments of a link.
    pub fn link(&self, e: EdgeIndex) -> (NodeIndex, &Link) {
        (self.graph.edge_endpoints(e).expect("live link").1, &self.graph[e])
    }

    /// The links leaving a block, in exit order.
    pub fn exits(&self, b: NodeIndex) -> Vec<EdgeIndex> {
        match &self.graph[b].exit {
            Exit::Goto(e) => vec![*e],
            Exit::Branch { if_true, if_false, .. } => vec![*if_true, *if_false],
            Exit::Return(_) | Exit::Abort(_) => vec![],
        }
    }

    /// The printed name of a variable: `name_N` or `vN`.
    pub fn var_name(&self, v: Var) -> String {
        match &self.var(v).name {
            Some(n) => format!("{n}_{}", v.0),
            None => format!("v{}", v.0),
        }
    }

    /// The printed form of an operand.
    pub fn value_text(&self, v: &Value) -> String {
        match v {
            Value::Var(v) => self.var_name(*v),
            Value::Const(c) => c.to_string(),
        }
    }

    /// The printed name of a block: `blockN`, N in creation order.
    pub fn block_name(&self, b: NodeIndex) -> String {
        format!("block{}", b.index())
    }

    /// A variable definition, `name: type` plus an annotation.
    fn def_text(&self, v: Var, note: &dyn Fn(Var) -> String) -> String {
        format!("{}: {}{}", self.var_name(v), self.var(v).ty, note(v))
    }

    /// One operation as text (without indentation).
    pub fn op_text(&self, op: &Op, note: &dyn Fn(Var) -> String) -> String {
        let args: Vec<String> = op.args.iter().map(|a| self.value_text(a)).collect();
        let call = format!("{}({})", op.kind.name(), args.join(", "));
        if self.var(op.result).ty == Ty::Unit {
            format!("{call}{}", note(op.result))
        } else {
            format!("{} = {call}", self.def_text(op.result, note))
        }
    }

    /// A link as text: `blockN(args)`.
    pub fn link_text(&self, e: EdgeIndex) -> String {
        let (target, link) = self.link(e);
        let args: Vec<String> = link.args.iter().map(|a| self.value_text(a)).collect();
        format!("{}({})", self.block_name(target), args.join(", "))
    }

    /// The exit of a block as text.
    pub fn exit_text(&self, b: NodeIndex) -> String {
        match &self.graph[b].exit {
            Exit::Goto(e) => format!("goto {}", self.link_text(*e)),
            Exit::Branch { cond, if_true, if_false } => format!(
                "if {} then {} else {}",
                self.value_text(cond),
                self.link_text(*if_true),
                self.link_text(*if_false)
            ),
            Exit::Return(v) => format!("return {}", self.value_text(v)),
            Exit::Abort(msg) => format!("abort {msg:?}"),
        }
    }

    /// The heading of a block: `blockN(inputargs):`.
    pub fn block_heading(&self, b: NodeIndex, note: &dyn Fn(Var) -> String) -> String {
        let args: Vec<String> = self.graph[b].inputargs.iter().map(|v| self.def_text(*v, note)).collect();
        format!("{}({}):", self.block_name(b), args.join(", "))
    }

    /// The whole graph as text, each definition followed by `note(var)`.
    pub fn to_text_with(&self, note: &dyn Fn(Var) -> String) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "fn {} -> {}", self.name, self.ret_ty);
        for b in self.blocks() {
            let _ = writeln!(out, "{}", self.block_heading(b, note));
            for op in &self.graph[b].ops {
                let _ = writeln!(out, "    {}", self.op_text(op, note));
            }
            let _ = writeln!(out, "    {}", self.exit_text(b));
        }
        out
    }

    /// The whole graph as text.
    pub fn to_text(&self) -> String {
        self.to_text_with(&|_| String::new())
    }
}

/// Whether `m` is `hint!(global_merge_point)`.
pub fn is_merge_point(m: &syn::Macro) -> bool {
    m.path.is_ident("hint") && m.tokens.to_string().trim() == "global_merge_point"
}

/// Whether `body` contains `hint!(global_merge_point)`: it is a portal
/// (never inlined).
pub fn has_merge_point(body: &syn::Block) -> bool {
    struct Find(bool);
    impl<'ast> syn::visit::Visit<'ast> for Find {
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            self.0 |= is_merge_point(m);
        }
    }
    let mut f = Find(false);
    syn::visit::Visit::visit_block(&mut f, body);
    f.0
}

/// Source text as the user wrote it: the fields of a portal method's
/// `self`, split into bindings before the analysis (`__self_ip`,
/// `(* __self_chunk)`), shown as `self.ip` and `self.chunk`.
pub fn as_written(s: &str) -> String {
    let mut out = s.to_string();
    while let Some(at) = out.find("(* __self_") {
        let rest = &out[at + "(* __self_".len()..];
        let Some(end) = rest.find(')') else { break };
        out = format!("{}self.{}{}", &out[..at], &rest[..end], &rest[end + 1..]);
    }
    out.replace("__self_", "self.")
}

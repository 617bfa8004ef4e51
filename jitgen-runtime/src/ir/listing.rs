//! The text form of residual functions: the listing, one operation per
//! line ([`listing`]), and its parser ([`parse`]), so that passes are tested
//! text in, text out, as Cranelift's filetests are.
//!
//! ```text
//! entry(v0: i64, v1: ptr):          the entry block; its parameters are the inputs
//!     v2 = const.i64 5
//!     v3 = add_checked.i64 v0, v2   binary and unary operations: NAME[_checked].TYPE
//!     v4 = lt.i64 v3, v0            comparisons give a bool
//!     v5 = cast.i64.u8 v3
//!     v6 = load.i64 v1+8
//!     store.i64 v1+8, v3
//!     bounds_check v0, v3
//!     v7 = call NAME(v1, v0)        a Rust callback, by name
//!     branch v4, L2(v3), L3()
//! L2(v8: i64):
//!     jump L2(v8)                   also: return VALS, error KIND,
//! L3():                             flexswitch V [live VALS] #SWITCH
//!     error IndexOutOfBounds
//! ```
//!
//! Lines `register ADDRESS+OFFSET` before the first block are the
//! function's register cells (`RegisterCell`), and lines `reentry LABEL` its
//! other entries (`ResidualFunction::reentries`).
//!
//! Values are numbered in order of definition, blocks by label, so
//! `listing(&parse(text)?)` gives back any listing `listing` printed.
//! Architecture Invariant: the listing is the one text form of residual
//! code: the Cranelift backend translates the very function it prints.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::rc::Rc;

use crate::ir::function::{
    CallbackFn, CaseTable, EntityRef, Inst, Label, PrimaryMap, RBlock, RegisterCell, ResidualFunction, SwitchTable,
    Terminator, Val,
};
use crate::ir::ops::{BinOp, CmpOp, ErrorKind, Overflow, UnOp, ValTy};

/// The readable listing of a residual function, one operation per line.
pub fn listing(f: &ResidualFunction) -> String {
    // Values are numbered in order of definition, so that listings do not
    // depend on labels that simplification removed.
    let mut number: HashMap<Val, usize> = HashMap::new();
    for (_, b) in f.live_blocks() {
        for p in &b.params {
            let n = number.len();
            number.insert(*p, n);
        }
        for i in &b.insts {
            for &d in i.defs() {
                let n = number.len();
                number.insert(d, n);
            }
        }
    }
    let v = |x: &Val| match number.get(x) {
        Some(n) => format!("v{n}"),
        None => format!("?{}", x.index()),
    };
    let vs = |xs: &[Val]| xs.iter().map(v).collect::<Vec<_>>().join(", ");
    let target = |(l, args): &(Label, Vec<Val>)| format!("L{}({})", l.index(), vs(args));
    let mut out = String::new();
    for c in &f.cells {
        let _ = writeln!(out, "register {:#x}+{}", c.address, c.offset);
    }
    for l in &f.reentries {
        let _ = writeln!(out, "reentry L{}", l.index());
    }
    for (l, b) in f.live_blocks() {
        let params: Vec<String> = b.params.iter().map(|p| format!("{}: {}", v(p), f.vals[*p])).collect();
        let name = if l == Label::ENTRY { "entry".to_string() } else { format!("L{}", l.index()) };
        let _ = writeln!(out, "{name}({}):", params.join(", "));
        for i in &b.insts {
            let line = match i {
                Inst::Const { dst, ty, bits } => {
                    let shown = match ty {
                        ValTy::F64 => format!("{:?}", f64::from_bits(*bits)),
                        t if t.signed() => format!("{}", *bits as i64),
                        ValTy::Bool => format!("{}", *bits != 0),
                        ValTy::Ptr => format!("{bits:#x}"),
                        _ => format!("{bits}"),
                    };
                    format!("{} = const.{ty} {shown}", v(dst))
                }
                Inst::Bin { dst, op, ty, ov, a, b } => {
                    let checked = if *ov == Overflow::Check { "_checked" } else { "" };
                    format!("{} = {}{checked}.{ty} {}, {}", v(dst), op.name(), v(a), v(b))
                }
                Inst::Un { dst, op, ty, ov, a } => {
                    let checked = if *ov == Overflow::Check { "_checked" } else { "" };
                    format!("{} = {}{checked}.{ty} {}", v(dst), op.name(), v(a))
                }
                Inst::Cmp { dst, op, ty, a, b } => format!("{} = {}.{ty} {}, {}", v(dst), op.name(), v(a), v(b)),
                Inst::Cast { dst, from, to, a } => format!("{} = cast.{from}.{to} {}", v(dst), v(a)),
                Inst::Load { dst, ty, base, offset } => format!("{} = load.{ty} {}+{offset}", v(dst), v(base)),
                Inst::Store { ty, base, offset, value } => format!("store.{ty} {}+{offset}, {}", v(base), v(value)),
                Inst::BoundsCheck { index, len } => format!("bounds_check {}, {}", v(index), v(len)),
                Inst::CallCode { dsts, code, entry, args } => {
                    let a: Vec<Val> = args.iter().map(|(x, _)| *x).collect();
                    let tys: String = dsts.iter().map(|d| format!(".{}", f.vals[*d])).collect();
                    let call = format!("call_code{tys} {}({}) entry {entry:#x}", v(code), vs(&a));
                    if dsts.is_empty() {
                        call
                    } else {
                        format!("{} = {call}", vs(dsts))
                    }
                }
                Inst::Call { dsts, name, args, cold, pure, .. } => {
                    let a: Vec<Val> = args.iter().map(|(x, _)| *x).collect();
                    let op = match (*cold, *pure) {
                        (_, true) => "call.pure",
                        (true, false) => "call.cold",
                        (false, false) => "call",
                    };
                    if dsts.is_empty() {
                        format!("{op} {name}({})", vs(&a))
                    } else {
                        format!("{} = {op} {name}({})", vs(dsts), vs(&a))
                    }
                }
            };
            let _ = writeln!(out, "    {line}");
        }
        let term = match b.term.as_ref().expect("live block") {
            Terminator::Jump(l, args) => format!("jump {}", target(&(*l, args.clone()))),
            Terminator::Branch { cond, if_true, if_false } => {
                format!("branch {}, {}, {}", v(cond), target(if_true), target(if_false))
            }
            Terminator::Return(vals) => format!("return {}", vs(vals)),
            Terminator::Error(k) => format!("error {k:?}"),
            Terminator::FlexSwitch { value, live, switch } => {
                format!("flexswitch {} [live {}] #{switch}", v(value), vs(live))
            }
        };
        let _ = writeln!(out, "    {term}");
    }
    out
}

/// A Rust function that a parsed listing may call: the name it has in the
/// listing, its address, and the types of its results.
#[derive(Clone, Copy, Debug)]
pub struct ListedCallback<'a> {
    /// The name after `call`.
    pub name: &'a str,
    /// The function residual code calls.
    pub func: CallbackFn,
    /// The types of its results.
    pub rets: &'a [ValTy],
}

/// Why a listing could not be parsed: the line (from 1) and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The line, counted from 1.
    pub line: usize,
    /// What is wrong there.
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

/// The table of a flexswitch read from a listing: it has no cases, and every
/// value misses. Parsed functions are for passes and listings; running one
/// that reaches a flexswitch needs the run-time layer's tables instead.
#[derive(Debug)]
struct ListedSwitch(CaseTable);

impl SwitchTable for ListedSwitch {
    fn case_table(&self) -> *const CaseTable {
        &self.0
    }
    fn describe(&self, _out: &mut String, _depth: usize) {}
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Reads a listing back into a residual function. Blank lines and lines
/// starting with `#` are skipped. Calls name their callbacks in `calls`.
/// The function's outputs are the types of the values its first `return`
/// returns. Flexswitches get tables without cases (see the module doc).
pub fn parse(text: &str, calls: &[ListedCallback]) -> Result<ResidualFunction, ParseError> {
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .map(|(n, l)| (n + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let mut p = Parser { calls, names: HashMap::new(), vals: PrimaryMap::new(), line: 0 };
    // First the definitions, in order, so that a use may come before its
    // definition in label order (merging moves code into later blocks).
    let mut labels: Vec<(Label, usize)> = vec![];
    let mut cells = vec![];
    let mut reentries = vec![];
    for &(n, l) in &lines {
        p.line = n;
        if let Some(head) = l.strip_suffix(':') {
            let (label, params) = p.header(head)?;
            if labels.iter().any(|(x, _)| *x == label) {
                return Err(p.err(format!("block {head} is listed twice")));
            }
            labels.push((label, n));
            for (name, ty) in params {
                p.define(name, ty)?;
            }
        } else if let (true, Some(r)) = (labels.is_empty(), l.strip_prefix("reentry L")) {
            match r.parse() {
                Ok(k) => reentries.push((Label::new(k), n)),
                Err(_) => return Err(p.err("reentry LABEL".to_string())),
            }
        } else if labels.is_empty() {
            let cell = l.strip_prefix("register ").and_then(|c| {
                let (address, offset) = c.split_once('+')?;
                let address = u64::from_str_radix(address.strip_prefix("0x")?, 16).ok()?;
                Some(RegisterCell { address, offset: offset.parse().ok()? })
            });
            match cell {
                Some(c) => cells.push(c),
                None => return Err(p.err("an instruction before the first block".to_string())),
            }
        } else if let Some((lhs, rhs)) = l.split_once(" = ") {
            let tys = p.def_types(rhs)?;
            let names = split_top(lhs);
            if names.len() != tys.len() {
                return Err(p.err(format!("{} values defined, {} produced", names.len(), tys.len())));
            }
            for (name, ty) in names.into_iter().zip(tys) {
                p.define(name, ty)?;
            }
        }
    }
    let Some(max) = labels.iter().map(|(l, _)| l.index()).max() else {
        return Err(ParseError { line: 0, message: "no blocks".to_string() });
    };
    if !labels.iter().any(|(l, _)| *l == Label::ENTRY) {
        return Err(ParseError { line: 0, message: "no entry block".to_string() });
    }
    let mut blocks: PrimaryMap<Label, RBlock> = (0..=max).map(|_| RBlock::default()).collect();
    let mut switches: Vec<Rc<dyn SwitchTable>> = vec![];
    let mut outputs: Option<Vec<ValTy>> = None;
    let mut cur: Option<Label> = None;
    if let Some((bad, line)) = reentries.iter().find(|(r, _)| !labels.iter().any(|(l, _)| l == r)) {
        return Err(ParseError { line: *line, message: format!("reentry L{} is not a block", bad.index()) });
    }
    for &(n, l) in lines.iter().skip(cells.len() + reentries.len()) {
        p.line = n;
        if let Some(head) = l.strip_suffix(':') {
            if let Some(c) = cur {
                if blocks[c].term.is_none() {
                    return Err(p.err(format!("block L{} has no terminator", c.index())));
                }
            }
            let (label, params) = p.header(head)?;
            blocks[label].params = params.iter().map(|(name, _)| p.names[*name]).collect();
            cur = Some(label);
            continue;
        }
        let c = cur.expect("checked in the first pass");
        if blocks[c].term.is_some() {
            return Err(p.err("an instruction after the terminator".to_string()));
        }
        let (word, rest) = l.split_once(' ').unwrap_or((l, ""));
        let term = match word {
            "jump" => {
                let (to, args) = p.target(rest, &labels)?;
                Some(Terminator::Jump(to, args))
            }
            "branch" => {
                let parts = split_top(rest);
                let [cond, t, f] = parts.as_slice() else { return Err(p.err("branch COND, L(..), L(..)".into())) };
                Some(Terminator::Branch {
                    cond: p.use_of(cond)?,
                    if_true: p.target(t, &labels)?,
                    if_false: p.target(f, &labels)?,
                })
            }
            "return" => {
                let vals = p.uses(rest)?;
                outputs.get_or_insert_with(|| vals.iter().map(|v| p.vals[*v]).collect());
                Some(Terminator::Return(vals))
            }
            "error" => Some(Terminator::Error(p.error_kind(rest)?)),
            "flexswitch" => {
                let bad = || "flexswitch V [live VALS] #N".to_string();
                let (value, rest) = rest.split_once(" [live").ok_or_else(|| p.err(bad()))?;
                let (live, num) = rest.split_once(']').ok_or_else(|| p.err(bad()))?;
                let num: u32 = num.trim().strip_prefix('#').and_then(|k| k.parse().ok()).ok_or_else(|| p.err(bad()))?;
                if num as usize != switches.len() {
                    return Err(p.err(format!("switch #{num} where #{} comes next", switches.len())));
                }
                switches.push(Rc::new(ListedSwitch(CaseTable {
                    len: 0,
                    entries: std::ptr::null(),
                    hits: std::ptr::null_mut(),
                })));
                Some(Terminator::FlexSwitch { value: p.use_of(value)?, live: p.uses(live)?, switch: num })
            }
            _ => None,
        };
        match term {
            Some(t) => blocks[c].term = Some(t),
            None => {
                let inst = p.inst(l)?;
                blocks[c].insts.push(inst);
            }
        }
    }
    if let Some(c) = cur {
        if blocks[c].term.is_none() {
            return Err(p.err(format!("block L{} has no terminator", c.index())));
        }
    }
    let inputs = blocks[Label::ENTRY].params.iter().map(|v| p.vals[*v]).collect();
    Ok(ResidualFunction {
        name: "parsed".to_string(),
        inputs,
        outputs: outputs.unwrap_or_default(),
        vals: p.vals,
        blocks,
        switches,
        pieces: None,
        cells,
        reentries: reentries.into_iter().map(|(l, _)| l).collect(),
        passes_pending: false,
        turns: Some(std::rc::Rc::new(std::cell::Cell::new(0))),
    })
}

/// Splits at the commas outside parentheses and brackets; trims the parts
/// and drops empty ones.
fn split_top(s: &str) -> Vec<&str> {
    let mut out = vec![];
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(s[start..].trim());
    out.retain(|p| !p.is_empty());
    out
}

/// A block's parameters: names and types.
type Params<'t> = Vec<(&'t str, ValTy)>;

struct Parser<'a, 't> {
    calls: &'a [ListedCallback<'a>],
    names: HashMap<&'t str, Val>,
    vals: PrimaryMap<Val, ValTy>,
    line: usize,
}

impl<'t> Parser<'_, 't> {
    fn err(&self, message: String) -> ParseError {
        ParseError { line: self.line, message }
    }

    fn define(&mut self, name: &'t str, ty: ValTy) -> Result<(), ParseError> {
        if !name.starts_with('v') || name[1..].parse::<u32>().is_err() {
            return Err(self.err(format!("`{name}` is not a value name (v0, v1, ..)")));
        }
        if self.names.contains_key(name) {
            return Err(self.err(format!("{name} is defined twice")));
        }
        let v = self.vals.push(ty);
        self.names.insert(name, v);
        Ok(())
    }

    fn use_of(&self, name: &str) -> Result<Val, ParseError> {
        self.names.get(name.trim()).copied().ok_or_else(|| self.err(format!("{} is never defined", name.trim())))
    }

    fn uses(&self, list: &str) -> Result<Vec<Val>, ParseError> {
        split_top(list).into_iter().map(|n| self.use_of(n)).collect()
    }

    fn ty(&self, s: &str) -> Result<ValTy, ParseError> {
        let all = ValTy::ALL_INTS.into_iter().chain([ValTy::Bool, ValTy::F64, ValTy::Ptr]);
        all.into_iter().find(|t| t.to_string() == s).ok_or_else(|| self.err(format!("unknown type `{s}`")))
    }

    fn label(&self, s: &str) -> Result<Label, ParseError> {
        if s == "entry" {
            return Ok(Label::ENTRY);
        }
        match s.strip_prefix('L').and_then(|n| n.parse::<usize>().ok()) {
            Some(n) if n > 0 => Ok(Label::new(n)),
            _ => Err(self.err(format!("`{s}` is not a label (entry, L1, L2, ..)"))),
        }
    }

    /// `NAME(v0: ty, ..)` of a block header.
    fn header(&self, head: &'t str) -> Result<(Label, Params<'t>), ParseError> {
        let (name, params) = head.split_once('(').ok_or_else(|| self.err("a block header: NAME(PARAMS):".into()))?;
        let params = params.strip_suffix(')').ok_or_else(|| self.err("a block header: NAME(PARAMS):".into()))?;
        let params = split_top(params)
            .into_iter()
            .map(|p| {
                let (v, t) = p.split_once(':').ok_or_else(|| self.err(format!("a parameter `v: type`, not `{p}`")))?;
                Ok((v.trim(), self.ty(t.trim())?))
            })
            .collect::<Result<_, _>>()?;
        Ok((self.label(name.trim())?, params))
    }

    /// `L(v1, ..)`, a label that the listing has, with its arguments.
    fn target(&self, s: &str, labels: &[(Label, usize)]) -> Result<(Label, Vec<Val>), ParseError> {
        let s = s.trim();
        let (name, args) = s.split_once('(').ok_or_else(|| self.err(format!("a target `L(ARGS)`, not `{s}`")))?;
        let args = args.strip_suffix(')').ok_or_else(|| self.err(format!("a target `L(ARGS)`, not `{s}`")))?;
        let l = self.label(name)?;
        if !labels.iter().any(|(x, _)| *x == l) {
            return Err(self.err(format!("{name} is not a block of this listing")));
        }
        Ok((l, self.uses(args)?))
    }

    fn error_kind(&self, s: &str) -> Result<ErrorKind, ParseError> {
        let s = s.trim();
        let simple = [
            ErrorKind::DivideByZero,
            ErrorKind::RemainderByZero,
            ErrorKind::NegOverflow,
            ErrorKind::IndexOutOfBounds,
            ErrorKind::CallbackPanicked,
        ];
        let number = |prefix: &str| s.strip_prefix(prefix)?.strip_suffix(')')?.parse::<u32>().ok();
        let found = simple
            .into_iter()
            .chain(BinOp::ALL.map(ErrorKind::Overflow))
            .find(|k| format!("{k:?}") == s)
            .or_else(|| number("Abort(").map(ErrorKind::Abort))
            .or_else(|| number("Resume(").map(ErrorKind::Resume));
        found.ok_or_else(|| self.err(format!("unknown error `{s}`")))
    }

    /// `OP.TYPE` with an optional `_checked` after OP: the operation and
    /// whether it checks overflow.
    fn op_name<'s>(&self, op: &'s str) -> Result<(&'s str, Overflow, ValTy), ParseError> {
        let (name, ty) = op.split_once('.').ok_or_else(|| self.err(format!("`{op}`: an operation NAME.TYPE")))?;
        let (name, ov) = match name.strip_suffix("_checked") {
            Some(n) => (n, Overflow::Check),
            None => (name, Overflow::Wrap),
        };
        Ok((name, ov, self.ty(ty)?))
    }

    /// The types of the values that the right side of a definition makes.
    fn def_types(&self, rhs: &str) -> Result<Vec<ValTy>, ParseError> {
        let (op, rest) = rhs.split_once(' ').unwrap_or((rhs, ""));
        if matches!(op, "call" | "call.cold" | "call.pure") {
            let name = rest.split_once('(').map_or(rest, |(n, _)| n).trim();
            return Ok(self.callback(name)?.rets.to_vec());
        }
        if let Some(tys) = op.strip_prefix("call_code") {
            return tys.split('.').skip(1).map(|t| self.ty(t)).collect();
        }
        if let Some(tys) = op.strip_prefix("cast.") {
            let (_, to) = tys.split_once('.').ok_or_else(|| self.err(format!("`{op}`: cast.FROM.TO")))?;
            return Ok(vec![self.ty(to)?]);
        }
        let (name, _, ty) = self.op_name(op)?;
        Ok(vec![if CmpOp::ALL.iter().any(|c| c.name() == name) { ValTy::Bool } else { ty }])
    }

    fn callback(&self, name: &str) -> Result<&ListedCallback<'_>, ParseError> {
        self.calls.iter().find(|c| c.name == name).ok_or_else(|| self.err(format!("no callback named `{name}` given")))
    }

    /// `BASE+OFFSET` of a load or store.
    fn address(&self, s: &str) -> Result<(Val, i32), ParseError> {
        let (base, off) = s.split_once('+').ok_or_else(|| self.err(format!("an address `v+OFFSET`, not `{s}`")))?;
        let off = off.trim().parse().map_err(|_| self.err(format!("an offset, not `{off}`")))?;
        Ok((self.use_of(base)?, off))
    }

    fn two(&self, s: &str) -> Result<(Val, Val), ParseError> {
        match split_top(s).as_slice() {
            [a, b] => Ok((self.use_of(a)?, self.use_of(b)?)),
            _ => Err(self.err(format!("two operands, not `{s}`"))),
        }
    }

    /// An instruction line (not a terminator).
    fn inst(&self, l: &str) -> Result<Inst, ParseError> {
        let (dsts, rhs) = match l.split_once(" = ") {
            Some((lhs, rhs)) => (self.uses(lhs)?, rhs),
            None => (vec![], l),
        };
        let (op, rest) = rhs.split_once(' ').unwrap_or((rhs, ""));
        let dst = || dsts.first().copied().ok_or_else(|| self.err(format!("`{op}` defines a value")));
        if matches!(op, "call" | "call.cold" | "call.pure") {
            let (name, args) = rest.split_once('(').ok_or_else(|| self.err("call NAME(ARGS)".into()))?;
            let args = args.strip_suffix(')').ok_or_else(|| self.err("call NAME(ARGS)".into()))?;
            let cb = self.callback(name.trim())?;
            let args = self.uses(args)?.into_iter().map(|a| (a, self.vals[a])).collect();
            let (cold, pure) = (op == "call.cold", op == "call.pure");
            return Ok(Inst::Call { dsts, func: cb.func, name: cb.name.to_string(), args, cold, pure });
        }
        if op.starts_with("call_code") {
            let (code, rest) =
                rest.split_once('(').ok_or_else(|| self.err("call_code.TYPES vCODE(ARGS) entry ADDRESS".into()))?;
            let (args, entry) = rest
                .split_once(") entry ")
                .ok_or_else(|| self.err("call_code.TYPES vCODE(ARGS) entry ADDRESS".into()))?;
            let entry = entry.trim();
            let entry = match entry.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16),
                None => entry.parse(),
            }
            .map_err(|_| self.err(format!("an address, not `{entry}`")))?;
            let args = self.uses(args)?.into_iter().map(|a| (a, self.vals[a])).collect();
            return Ok(Inst::CallCode { dsts, code: self.use_of(code.trim())?, entry, args });
        }
        if op == "bounds_check" {
            let (index, len) = self.two(rest)?;
            return Ok(Inst::BoundsCheck { index, len });
        }
        if let Some(tys) = op.strip_prefix("cast.") {
            let (from, to) = tys.split_once('.').ok_or_else(|| self.err(format!("`{op}`: cast.FROM.TO")))?;
            return Ok(Inst::Cast { dst: dst()?, from: self.ty(from)?, to: self.ty(to)?, a: self.use_of(rest)? });
        }
        let (name, ov, ty) = self.op_name(op)?;
        match name {
            "const" => {
                let bits = match ty {
                    ValTy::F64 => rest.parse::<f64>().ok().map(f64::to_bits),
                    ValTy::Bool => ["false", "true"].iter().position(|b| *b == rest).map(|b| b as u64),
                    ValTy::Ptr => rest.strip_prefix("0x").and_then(|h| u64::from_str_radix(h, 16).ok()),
                    t if t.signed() => rest.parse::<i64>().ok().map(|x| x as u64),
                    _ => rest.parse::<u64>().ok(),
                };
                let bits = bits.ok_or_else(|| self.err(format!("`{rest}` is not a constant of type {ty}")))?;
                Ok(Inst::Const { dst: dst()?, ty, bits: ty.canon(bits) })
            }
            "load" => {
                let (base, offset) = self.address(rest)?;
                Ok(Inst::Load { dst: dst()?, ty, base, offset })
            }
            "store" => {
                let (addr, value) =
                    rest.split_once(',').ok_or_else(|| self.err("store.TYPE v+OFFSET, VALUE".into()))?;
                let (base, offset) = self.address(addr)?;
                Ok(Inst::Store { ty, base, offset, value: self.use_of(value)? })
            }
            _ => {
                if let Some(op) = BinOp::ALL.into_iter().find(|o| o.name() == name) {
                    let (a, b) = self.two(rest)?;
                    Ok(Inst::Bin { dst: dst()?, op, ty, ov, a, b })
                } else if let Some(op) = CmpOp::ALL.into_iter().find(|o| o.name() == name) {
                    let (a, b) = self.two(rest)?;
                    Ok(Inst::Cmp { dst: dst()?, op, ty, a, b })
                } else if let Some(op) = UnOp::ALL.into_iter().find(|o| o.name() == name) {
                    Ok(Inst::Un { dst: dst()?, op, ty, ov, a: self.use_of(rest)? })
                } else {
                    Err(self.err(format!("unknown operation `{name}`")))
                }
            }
        }
    }
}

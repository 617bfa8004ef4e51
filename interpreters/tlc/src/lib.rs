//! The TLC interpreter of shared/languages/tlc.md, annotated for jitgen.
//!
//! Values are a small `Copy` enum: integers inline, conses and instances as
//! handles into a heap of cells and objects (the arena style of many Rust
//! VMs). The current frame's operand stack and arguments are locals of the
//! dispatch loop; calls save them in a `Vec` of frames.

pub mod asm;
pub mod programs;

use std::fmt::Write as _;

use jitgen::prelude::*;

/// Where PRINT and DUMP write: each line kept, and echoed to standard output
/// when `echo` is set.
#[derive(Debug, Default)]
pub struct Out {
    /// The lines printed so far.
    pub lines: Vec<String>,
    /// Whether to print each line as it comes too.
    pub echo: bool,
}

impl Out {
    fn line(&mut self, s: String) {
        if self.echo {
            println!("{s}");
        }
        self.lines.push(s);
    }
}

/// A value as TLC prints it.
pub fn show(heap: &tlc::Heap, v: tlc::Value) -> String {
    let mut s = String::new();
    show_into(heap, v, &mut s);
    s
}

fn show_into(heap: &tlc::Heap, v: tlc::Value, s: &mut String) {
    use tlc::Value;
    match v {
        Value::Int(n) => write!(s, "{n}").expect("a String takes writes"),
        Value::Nil => s.push_str("nil"),
        Value::Obj(_) => s.push_str("<object>"),
        Value::Cons(_) if tlc::is_list(heap, v) => {
            s.push('[');
            let mut cur = v;
            let mut first = true;
            while let Value::Cons(i) = cur {
                if !first {
                    s.push_str(", ");
                }
                first = false;
                let c = &heap.cells[i as usize];
                show_into(heap, c.car, s);
                cur = c.cdr;
            }
            s.push(']');
        }
        Value::Cons(i) => {
            let c = &heap.cells[i as usize];
            s.push('(');
            show_into(heap, c.car, s);
            s.push_str(" . ");
            show_into(heap, c.cdr, s);
            s.push(')');
        }
    }
}

/// PRINT: one value on its own line.
pub fn print_value(heap: &tlc::Heap, v: tlc::Value, out: &mut Out) {
    out.line(show(heap, v));
}

/// DUMP: the whole stack, bottom first, as a list.
pub fn dump_stack(heap: &tlc::Heap, stack: &[tlc::Value], out: &mut Out) {
    let items: Vec<String> = stack.iter().map(|v| show(heap, *v)).collect();
    out.line(format!("[{}]", items.join(", ")));
}

/// The message of an error: `KIND: detail` (`strings` names attributes).
pub fn describe(e: &tlc::Error, strings: &[String]) -> String {
    use tlc::Error;
    let name = |i: u32| strings.get(i as usize).map_or("?", String::as_str).to_string();
    match *e {
        Error::TypeError(op) => format!("TypeError: unsupported operand types for opcode {op}"),
        Error::ZeroDivisionError => "ZeroDivisionError: division by zero".into(),
        Error::IndexError(i) => format!("IndexError: index {i} out of range"),
        Error::AttributeError(s) => format!("AttributeError: no attribute or method `{}`", name(s)),
        Error::StackUnderflow(0) => "StackUnderflow: the stack is empty at the end".into(),
        Error::StackUnderflow(op) => format!("StackUnderflow: opcode {op} reaches below the bottom of the stack"),
        Error::BadJump(t) => format!("BadJump: jump to {t}, outside the code"),
        Error::BadOperand(pc) => format!("BadOperand: operand at {pc} is missing or invalid"),
        Error::UnknownOpcode(op) => format!("UnknownOpcode: unknown opcode {op}"),
    }
}

#[jit_interpreter]
pub mod tlc {
    use super::*;

    pub const NOP: u8 = 1;
    pub const PUSH: u8 = 2;
    pub const POP: u8 = 3;
    pub const SWAP: u8 = 4;
    pub const ROLL: u8 = 5;
    pub const PICK: u8 = 6;
    pub const PUT: u8 = 7;
    pub const ADD: u8 = 8;
    pub const SUB: u8 = 9;
    pub const MUL: u8 = 10;
    pub const DIV: u8 = 11;
    pub const EQ: u8 = 12;
    pub const NE: u8 = 13;
    pub const LT: u8 = 14;
    pub const LE: u8 = 15;
    pub const GT: u8 = 16;
    pub const GE: u8 = 17;
    pub const BR_COND: u8 = 18;
    pub const BR_COND_STK: u8 = 19;
    pub const CALL: u8 = 20;
    pub const RETURN: u8 = 21;
    pub const PUSHARG: u8 = 22;
    pub const INVALID: u8 = 23;
    pub const NIL: u8 = 24;
    pub const CONS: u8 = 25;
    pub const CAR: u8 = 26;
    pub const CDR: u8 = 27;
    pub const NEW: u8 = 28;
    pub const GETATTR: u8 = 29;
    pub const SETATTR: u8 = 30;
    pub const SEND: u8 = 31;
    pub const PUSHARGN: u8 = 32;
    pub const PRINT: u8 = 33;
    pub const DUMP: u8 = 34;
    pub const BR: u8 = 35;
    pub const CALLARGS: u8 = 36;
    pub const AND: u8 = 37;
    pub const MOD: u8 = 38;

    /// A TLC value.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Value {
        /// A signed 64-bit integer (arithmetic wraps).
        Int(i64),
        /// The empty list.
        Nil,
        /// A pair: its index in the heap's cells.
        Cons(u32),
        /// An instance: its index in the heap's objects.
        Obj(u32),
    }

    /// What can go wrong running TLC bytecode.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Error {
        /// Wrong kinds of operands for this opcode.
        TypeError(u8),
        /// Division or modulo by zero.
        ZeroDivisionError,
        /// A list index or an argument index out of range.
        IndexError(i64),
        /// No attribute or method of this name (a string index).
        AttributeError(u32),
        /// This opcode reached below the bottom of the stack (0: the stack
        /// was empty at the end).
        StackUnderflow(u8),
        /// A jump to this position, outside the code.
        BadJump(i64),
        /// The operand at this position is past the end of the code, or
        /// names no class or string.
        BadOperand(u32),
        /// An opcode TLC does not have.
        UnknownOpcode(u8),
    }

    /// A method: its name (a string index) and where its code starts.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Method {
        pub name: u32,
        pub pos: u32,
    }

    /// A class: attribute names (string indices) and methods.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Class {
        pub attrs: Vec<u32>,
        pub methods: Vec<Method>,
    }

    /// Assembled bytecode and its class table.
    #[derive(Clone, Debug, Default)]
    pub struct Program {
        pub code: Vec<u8>,
        pub classes: Vec<Class>,
    }

    /// A pair.
    #[derive(Clone, Copy, Debug)]
    pub struct Cell {
        pub car: Value,
        pub cdr: Value,
    }

    /// An instance: its class and attribute values.
    #[derive(Clone, Debug)]
    pub struct Object {
        pub class: u32,
        pub fields: Vec<Value>,
    }

    /// Where conses and instances live.
    #[derive(Clone, Debug, Default)]
    pub struct Heap {
        pub cells: Vec<Cell>,
        pub objects: Vec<Object>,
    }

    /// A caller's frame, saved while a callee runs.
    #[derive(Clone, Debug)]
    pub struct Frame {
        pub stack: Vec<Value>,
        pub args: Vec<Value>,
        pub ret: usize,
    }

    /// The signed one-byte operand at `pc`.
    fn operand(code: &[u8], pc: usize) -> Result<i64, Error> {
        if pc >= code.len() {
            return Err(Error::BadOperand(pc as u32));
        }
        Ok(code[pc] as i8 as i64)
    }

    /// The position `off` bytes after `from`, checked.
    fn jump(code: &[u8], from: usize, off: i64) -> Result<usize, Error> {
        let target = from as i64 + off;
        if target < 0 || target > code.len() as i64 {
            return Err(Error::BadJump(target));
        }
        Ok(target as usize)
    }

    /// The integer in `v`, or a type error of opcode `op`.
    fn int_of(v: Value, op: u8) -> Result<i64, Error> {
        match v {
            Value::Int(n) => Ok(n),
            _ => Err(Error::TypeError(op)),
        }
    }

    fn truthy(v: Value) -> bool {
        match v {
            Value::Int(n) => n != 0,
            Value::Nil => false,
            _ => true,
        }
    }

    /// Whether `v` is a proper list (Nil or a Cons chain ending in Nil).
    #[jit_opaque]
    pub fn is_list(heap: &Heap, v: Value) -> bool {
        let mut cur = v;
        loop {
            match cur {
                Value::Nil => return true,
                Value::Cons(i) => cur = heap.cells[i as usize].cdr,
                _ => return false,
            }
        }
    }

    /// A new cons.
    #[jit_opaque]
    pub fn cons(heap: &mut Heap, car: Value, cdr: Value) -> Value {
        heap.cells.push(Cell { car, cdr });
        Value::Cons((heap.cells.len() - 1) as u32)
    }

    /// `b + a` on lists: a new list, b's elements then a's.
    #[jit_opaque]
    pub fn concat(heap: &mut Heap, b: Value, a: Value) -> Result<Value, Error> {
        if !is_list(heap, a) || !is_list(heap, b) {
            return Err(Error::TypeError(ADD));
        }
        let mut items: Vec<Value> = Vec::new();
        let mut cur = b;
        while let Value::Cons(i) = cur {
            items.push(heap.cells[i as usize].car);
            cur = heap.cells[i as usize].cdr;
        }
        let mut r = a;
        while let Some(v) = items.pop() {
            r = cons(heap, v, r);
        }
        Ok(r)
    }

    /// `list / index`: the element at `index`.
    #[jit_opaque]
    pub fn list_index(heap: &Heap, list: Value, index: i64) -> Result<Value, Error> {
        if !is_list(heap, list) {
            return Err(Error::TypeError(DIV));
        }
        let mut cur = list;
        let mut k = index;
        if k < 0 {
            return Err(Error::IndexError(index));
        }
        while let Value::Cons(i) = cur {
            if k == 0 {
                return Ok(heap.cells[i as usize].car);
            }
            k -= 1;
            cur = heap.cells[i as usize].cdr;
        }
        Err(Error::IndexError(index))
    }

    /// EQ: integers by value, Nil and instances by identity, conses
    /// structurally (with a work list: long lists do not recurse).
    #[jit_opaque]
    pub fn equal(heap: &Heap, a: Value, b: Value) -> bool {
        let mut left: Vec<Value> = vec![a];
        let mut right: Vec<Value> = vec![b];
        while let Some(x) = left.pop() {
            let y = match right.pop() {
                Some(y) => y,
                None => return false,
            };
            match x {
                Value::Cons(i) => match y {
                    Value::Cons(j) => {
                        left.push(heap.cells[i as usize].cdr);
                        right.push(heap.cells[j as usize].cdr);
                        left.push(heap.cells[i as usize].car);
                        right.push(heap.cells[j as usize].car);
                    }
                    _ => return false,
                },
                _ => {
                    if x != y {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// `b // a`, rounding toward negative infinity (`MIN // -1` wraps).
    fn floor_div(b: i64, a: i64) -> Result<i64, Error> {
        if a == 0 {
            return Err(Error::ZeroDivisionError);
        }
        let q = b.wrapping_div(a);
        if b.wrapping_rem(a) != 0 && ((b < 0) != (a < 0)) {
            return Ok(q - 1);
        }
        Ok(q)
    }

    /// `b % a` with the sign of `a` (`MIN % -1` is 0).
    fn floor_mod(b: i64, a: i64) -> Result<i64, Error> {
        if a == 0 {
            return Err(Error::ZeroDivisionError);
        }
        let r = b.wrapping_rem(a);
        if r != 0 && ((r < 0) != (a < 0)) {
            return Ok(r + a);
        }
        Ok(r)
    }

    /// The index of attribute `name` in `class`.
    fn attr_index(class: &Class, name: u32) -> Result<usize, Error> {
        let mut k = 0;
        while k < class.attrs.len() {
            if class.attrs[k] == name {
                return Ok(k);
            }
            k += 1;
        }
        Err(Error::AttributeError(name))
    }

    /// Where method `name` of `class` starts.
    fn method_pos(class: &Class, name: u32) -> Result<usize, Error> {
        let mut k = 0;
        while k < class.methods.len() {
            if class.methods[k].name == name {
                return Ok(class.methods[k].pos as usize);
            }
            k += 1;
        }
        Err(Error::AttributeError(name))
    }

    /// The class of instance `v` (a type error of `op` otherwise).
    fn class_of(heap: &Heap, v: Value, op: u8) -> Result<usize, Error> {
        match v {
            Value::Obj(o) => Ok(heap.objects[o as usize].class as usize),
            _ => Err(Error::TypeError(op)),
        }
    }

    /// Runs `prog` with `args = [Int(input)]`: the value on top of the stack
    /// at the end.
    pub fn run(prog: &Program, input: i64, heap: &mut Heap, out: &mut Out) -> Result<Value, Error> {
        let code = &prog.code;
        let mut stack: Vec<Value> = Vec::new();
        let mut args: Vec<Value> = vec![Value::Int(input)];
        let mut frames: Vec<Frame> = Vec::new();
        let mut pc: usize = 0;
        loop {
            hint!(global_merge_point);
            if pc >= code.len() {
                break;
            }
            let op = hint!(code[pc], concrete);
            pc += 1;
            if op == NOP {
            } else if op == PUSH {
                let n = operand(code, pc)?;
                pc += 1;
                stack.push(Value::Int(n));
            } else if op == POP {
                stack.pop().ok_or(Error::StackUnderflow(op))?;
            } else if op == SWAP {
                let a = stack.pop().ok_or(Error::StackUnderflow(op))?;
                let b = stack.pop().ok_or(Error::StackUnderflow(op))?;
                stack.push(a);
                stack.push(b);
            } else if op == ROLL {
                let r = operand(code, pc)?;
                pc += 1;
                let len = stack.len();
                if r < -1 {
                    // The top goes down to depth -r-1.
                    let d = (-r - 1) as usize;
                    if d >= len {
                        return Err(Error::StackUnderflow(op));
                    }
                    let top = stack[len - 1];
                    let mut k = len - 1;
                    while k > len - 1 - d {
                        stack[k] = stack[k - 1];
                        k -= 1;
                    }
                    stack[len - 1 - d] = top;
                } else if r > 1 {
                    // The value at depth r-1 comes up to the top.
                    let d = (r - 1) as usize;
                    if d >= len {
                        return Err(Error::StackUnderflow(op));
                    }
                    let v = stack[len - 1 - d];
                    let mut k = len - 1 - d;
                    while k < len - 1 {
                        stack[k] = stack[k + 1];
                        k += 1;
                    }
                    stack[len - 1] = v;
                }
            } else if op == PICK {
                let n = operand(code, pc)?;
                pc += 1;
                if n < 0 || n as usize >= stack.len() {
                    return Err(Error::StackUnderflow(op));
                }
                let v = stack[stack.len() - 1 - n as usize];
                stack.push(v);
            } else if op == PUT {
                let n = operand(code, pc)?;
                pc += 1;
                let v = stack.pop().ok_or(Error::StackUnderflow(op))?;
                if n < 0 || n as usize >= stack.len() {
                    return Err(Error::StackUnderflow(op));
                }
                let at = stack.len() - 1 - n as usize;
                stack[at] = v;
            } else if op == ADD {
                let a = stack.pop().ok_or(Error::StackUnderflow(op))?;
                let b = stack.pop().ok_or(Error::StackUnderflow(op))?;
                let r = match a {
                    Value::Int(x) => Value::Int(int_of(b, op)?.wrapping_add(x)),
                    _ => concat(heap, b, a)?,
                };
                stack.push(r);
            } else if op == SUB || op == MUL || op == AND || op == MOD {
                let a = stack.pop().ok_or(Error::StackUnderflow(op))?;
                let b = stack.pop().ok_or(Error::StackUnderflow(op))?;
                let x = int_of(a, op)?;
                let y = int_of(b, op)?;
                let r = if op == SUB {
                    y.wrapping_sub(x)
                } else if op == MUL {
                    y.wrapping_mul(x)
                } else if op == AND {
                    y & x
                } else {
                    floor_mod(y, x)?
                };
                stack.push(Value::Int(r));
            } else if op == DIV {
                let a = stack.pop().ok_or(Error::StackUnderflow(op))?;
                let b = stack.pop().ok_or(Error::StackUnderflow(op))?;
                let x = int_of(a, op)?;
                let r = match b {
                    Value::Int(y) => Value::Int(floor_div(y, x)?),
                    _ => list_index(heap, b, x)?,
                };
                stack.push(r);
            } else if op == EQ || op == NE {
                let a = stack.pop().ok_or(Error::StackUnderflow(op))?;
                let b = stack.pop().ok_or(Error::StackUnderflow(op))?;
                let same = match a {
                    Value::Int(x) => match b {
                        Value::Int(y) => x == y,
                        _ => false,
                    },
                    _ => equal(heap, b, a),
                };
                stack.push(Value::Int(if same == (op == EQ) { 1 } else { 0 }));
            } else if op == LT || op == LE || op == GT || op == GE {
                let a = stack.pop().ok_or(Error::StackUnderflow(op))?;
                let b = stack.pop().ok_or(Error::StackUnderflow(op))?;
                let x = int_of(a, op)?;
                let y = int_of(b, op)?;
                let r = if op == LT {
                    y < x
                } else if op == LE {
                    y <= x
                } else if op == GT {
                    y > x
                } else {
                    y >= x
                };
                stack.push(Value::Int(if r { 1 } else { 0 }));
            } else if op == BR_COND {
                let off = operand(code, pc)?;
                pc += 1;
                let cond = stack.pop().ok_or(Error::StackUnderflow(op))?;
                if truthy(cond) {
                    pc = jump(code, pc, off)?;
                }
            } else if op == BR_COND_STK {
                let off = stack.pop().ok_or(Error::StackUnderflow(op))?;
                let off = int_of(off, op)?;
                let cond = stack.pop().ok_or(Error::StackUnderflow(op))?;
                if truthy(cond) {
                    let off = hint!(off, promote);
                    pc = jump(code, pc, off)?;
                }
            } else if op == BR {
                let off = operand(code, pc)?;
                pc += 1;
                pc = jump(code, pc, off)?;
            } else if op == CALL || op == CALLARGS || op == SEND {
                let first = operand(code, pc)?;
                pc += 1;
                let mut new_args: Vec<Value> = Vec::new();
                let target = if op == CALL {
                    new_args.push(Value::Int(0));
                    jump(code, pc, first)?
                } else {
                    let n = operand(code, pc)?;
                    if n < 0 {
                        return Err(Error::BadOperand(pc as u32));
                    }
                    let n = n as usize;
                    let takes = if op == SEND { n + 1 } else { n };
                    if takes > stack.len() {
                        return Err(Error::StackUnderflow(op));
                    }
                    let base = stack.len() - takes;
                    let mut k = base;
                    while k < stack.len() {
                        new_args.push(stack[k]);
                        k += 1;
                    }
                    let to = if op == SEND {
                        let class = class_of(heap, new_args[0], op)?;
                        let class = hint!(class, promote);
                        if class >= prog.classes.len() {
                            return Err(Error::TypeError(op));
                        }
                        method_pos(&prog.classes[class], first as u32)?
                    } else {
                        jump(code, pc, first)?
                    };
                    while stack.len() > base {
                        stack.pop();
                    }
                    pc += 1;
                    to
                };
                let caller = Frame { stack, args, ret: pc };
                frames.push(caller);
                stack = Vec::new();
                args = new_args;
                pc = target;
            } else if op == RETURN {
                match frames.pop() {
                    None => break,
                    Some(caller) => {
                        let result = stack.pop();
                        stack = caller.stack;
                        args = caller.args;
                        pc = hint!(caller.ret, promote);
                        if let Some(v) = result {
                            stack.push(v);
                        }
                    }
                }
            } else if op == PUSHARG || op == PUSHARGN {
                let i = if op == PUSHARG {
                    0
                } else {
                    let i = operand(code, pc)?;
                    pc += 1;
                    i
                };
                if i < 0 || i as usize >= args.len() {
                    return Err(Error::IndexError(i));
                }
                stack.push(args[i as usize]);
            } else if op == NIL {
                stack.push(Value::Nil);
            } else if op == CONS {
                let car = stack.pop().ok_or(Error::StackUnderflow(op))?;
                let cdr = stack.pop().ok_or(Error::StackUnderflow(op))?;
                let c = cons(heap, car, cdr);
                stack.push(c);
            } else if op == CAR || op == CDR {
                let v = stack.pop().ok_or(Error::StackUnderflow(op))?;
                let c = match v {
                    Value::Cons(i) => heap.cells[i as usize],
                    _ => return Err(Error::TypeError(op)),
                };
                stack.push(if op == CAR { c.car } else { c.cdr });
            } else if op == NEW {
                let idx = operand(code, pc)?;
                if idx < 0 || idx as usize >= prog.classes.len() {
                    return Err(Error::BadOperand(pc as u32));
                }
                pc += 1;
                let class = &prog.classes[idx as usize];
                let fields: Vec<Value> = vec![Value::Nil; class.attrs.len()];
                heap.objects.push(Object { class: idx as u32, fields });
                stack.push(Value::Obj((heap.objects.len() - 1) as u32));
            } else if op == GETATTR || op == SETATTR {
                let name = operand(code, pc)?;
                pc += 1;
                let v = if op == SETATTR { stack.pop().ok_or(Error::StackUnderflow(op))? } else { Value::Nil };
                let obj = stack.pop().ok_or(Error::StackUnderflow(op))?;
                let class = class_of(heap, obj, op)?;
                let class = hint!(class, promote);
                if class >= prog.classes.len() {
                    return Err(Error::TypeError(op));
                }
                let k = attr_index(&prog.classes[class], name as u32)?;
                let o = match obj {
                    Value::Obj(o) => o,
                    _ => return Err(Error::TypeError(op)),
                };
                if op == GETATTR {
                    stack.push(heap.objects[o as usize].fields[k]);
                } else {
                    heap.objects[o as usize].fields[k] = v;
                }
            } else if op == PRINT {
                let v = stack.pop().ok_or(Error::StackUnderflow(op))?;
                super::print_value(heap, v, out);
            } else if op == DUMP {
                super::dump_stack(heap, &stack, out);
            } else {
                return Err(Error::UnknownOpcode(op));
            }
        }
        stack.pop().ok_or(Error::StackUnderflow(0))
    }
}

//! Values, the objects of the heap, and how both print.

use std::fmt::{self, Write as _};
use std::rc::Rc;

use rustc_hash::FxHashMap;

use crate::chunk::Chunk;

/// A handle to an object in the [`Heap`](crate::heap::Heap).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjRef(pub u32);

/// A Lox value.
#[derive(Clone, Copy, Debug)]
pub enum Value {
    /// `nil`.
    Nil,
    /// `true` or `false`.
    Bool(bool),
    /// Every number is a double.
    Number(f64),
    /// A string, function, class, instance...
    Obj(ObjRef),
}

impl Value {
    /// `nil` and `false` are false; everything else is true.
    pub fn is_falsey(self) -> bool {
        matches!(self, Value::Nil | Value::Bool(false))
    }
}

impl PartialEq for Value {
    /// Lox's `==`: numbers by value (so NaN is not equal to itself), objects
    /// by identity (strings are interned, so equal strings are one object).
    fn eq(&self, other: &Value) -> bool {
        match (*self, *other) {
            (Value::Nil, Value::Nil) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Number(a), Value::Number(b)) => a == b,
            (Value::Obj(a), Value::Obj(b)) => a == b,
            _ => false,
        }
    }
}

/// A function compiled to bytecode.
#[derive(Debug, Default)]
pub struct Function {
    /// How many parameters it takes.
    pub arity: usize,
    /// How many upvalues its closures capture.
    pub upvalue_count: usize,
    /// Its code.
    pub chunk: Chunk,
    /// Its name; `None` for the top-level script.
    pub name: Option<ObjRef>,
}

/// A function of Rust that Lox code can call.
pub type NativeFn = fn(&[Value]) -> Value;

/// A function and the variables it captured.
#[derive(Debug)]
pub struct Closure {
    /// The code.
    pub function: Rc<Function>,
    /// The captured variables ([`Obj::Upvalue`]s).
    pub upvalues: Vec<ObjRef>,
}

/// A captured variable: open while it still lives on the stack, closed
/// (holding its value) once its scope ended.
#[derive(Debug)]
pub enum Upvalue {
    /// At this slot of the VM's stack.
    Open(usize),
    /// Moved off the stack.
    Closed(Value),
}

/// A class: its name and methods (closures), keyed by interned name.
#[derive(Debug)]
pub struct Class {
    /// Its name.
    pub name: ObjRef,
    /// Its methods, its superclass's copied in.
    pub methods: FxHashMap<ObjRef, ObjRef>,
}

/// An instance: its class and fields.
#[derive(Debug)]
pub struct Instance {
    /// Its class.
    pub class: ObjRef,
    /// Its fields, keyed by interned name.
    pub fields: FxHashMap<ObjRef, Value>,
}

/// A method bound to its receiver.
#[derive(Debug)]
pub struct BoundMethod {
    /// `this`.
    pub receiver: Value,
    /// The method's closure.
    pub method: ObjRef,
}

/// An object of the heap.
#[derive(Debug)]
pub enum Obj {
    /// An interned string.
    String(Box<str>),
    /// A function, as a constant of the function that makes closures of it.
    Function(Rc<Function>),
    /// A native function.
    Native(NativeFn),
    /// A closure.
    Closure(Closure),
    /// A captured variable.
    Upvalue(Upvalue),
    /// A class.
    Class(Class),
    /// An instance.
    Instance(Instance),
    /// A bound method.
    BoundMethod(BoundMethod),
}

/// Writes a number as C's `printf("%g")` does, as clox prints numbers:
/// six significant digits, trailing zeros dropped, an exponent outside
/// `1e-4 ..= 1e6`.
pub fn write_number(out: &mut impl fmt::Write, n: f64) -> fmt::Result {
    if n.is_nan() {
        return out.write_str(if n.is_sign_negative() { "-nan" } else { "nan" });
    }
    if n.is_infinite() {
        return out.write_str(if n < 0.0 { "-inf" } else { "inf" });
    }
    if n == 0.0 {
        return out.write_str(if n.is_sign_negative() { "-0" } else { "0" });
    }
    const PRECISION: i32 = 6;
    // The exponent after rounding to the precision, as `%e` would print it.
    let sci = format!("{:.*e}", (PRECISION - 1) as usize, n);
    let (mantissa, exp) = sci.split_once('e').expect("`{:e}` writes an exponent");
    let exp: i32 = exp.parse().expect("an integer exponent");
    if (-4..PRECISION).contains(&exp) {
        let decimals = (PRECISION - 1 - exp) as usize;
        let fixed = format!("{:.*}", decimals, n);
        out.write_str(trim_zeros(&fixed))
    } else {
        out.write_str(trim_zeros(mantissa))?;
        write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// A number as [`write_number`] writes it.
pub fn number_to_string(n: f64) -> String {
    let mut s = String::new();
    write_number(&mut s, n).expect("a String takes writes");
    s
}

impl Value {
    /// Writes the value as Lox's `print` does.
    pub fn write(self, heap: &crate::heap::Heap, out: &mut String) {
        match self {
            Value::Nil => out.push_str("nil"),
            Value::Bool(b) => out.push_str(if b { "true" } else { "false" }),
            Value::Number(n) => write_number(out, n).expect("a String takes writes"),
            Value::Obj(r) => heap.write_object(r, out),
        }
    }
}

impl crate::heap::Heap {
    /// Writes an object as Lox's `print` does.
    pub fn write_object(&self, r: ObjRef, out: &mut String) {
        match self.get(r) {
            Obj::String(s) => out.push_str(s),
            Obj::Function(f) => self.write_function(f, out),
            Obj::Native(_) => out.push_str("<native fn>"),
            Obj::Closure(c) => self.write_function(&c.function, out),
            Obj::Upvalue(_) => out.push_str("upvalue"),
            Obj::Class(c) => out.push_str(self.str(c.name)),
            Obj::Instance(i) => {
                let Obj::Class(c) = self.get(i.class) else { unreachable!("an instance's class is a class") };
                let _ = write!(out, "{} instance", self.str(c.name));
            }
            Obj::BoundMethod(b) => self.write_object(b.method, out),
        }
    }

    fn write_function(&self, f: &Function, out: &mut String) {
        match f.name {
            Some(name) => {
                let _ = write!(out, "<fn {}>", self.str(name));
            }
            None => out.push_str("<script>"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::number_to_string;

    #[test]
    fn numbers_print_as_printf_g_prints_them() {
        let cases: &[(f64, &str)] = &[
            (123.0, "123"),
            (-0.0, "-0"),
            (0.1, "0.1"),
            (123.456, "123.456"),
            (-0.001, "-0.001"),
            (1e6, "1e+06"),
            (999999.0, "999999"),
            (1234567.0, "1.23457e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1e100, "1e+100"),
            (2.5e-7, "2.5e-07"),
            (9999995.0, "1e+07"),
            (0.30000000000000004, "0.3"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for &(n, want) in cases {
            assert_eq!(number_to_string(n), want, "{n:?}");
        }
    }
}

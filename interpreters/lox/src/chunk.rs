//! Bytecode: the instruction set and a function's chunk of code.

use crate::value::Value;

/// Declares `Op` and `Op::ALL` (every operation, by its byte) from one list.
macro_rules! operations {
    ($($(#[$doc:meta])* $op:ident,)*) => {
        /// An instruction's operation, its first byte. Operands follow: one
        /// byte (a constant, slot or argument count) unless said otherwise.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u8)]
        pub enum Op {
            $($(#[$doc])* $op,)*
        }

        impl Op {
            /// Every operation, by its byte.
            pub const ALL: &'static [Op] = &[$(Op::$op,)*];
        }
    };
}

operations! {
    /// Push constant `k`.
    Constant,
    /// Push `nil`.
    Nil,
    /// Push `true`.
    True,
    /// Push `false`.
    False,
    /// Drop the top.
    Pop,
    /// Push local slot `s`.
    GetLocal,
    /// Store the top in local slot `s`.
    SetLocal,
    /// Push the global named by constant `k`.
    GetGlobal,
    /// Define the global named by constant `k` as the top, popped.
    DefineGlobal,
    /// Store the top in the existing global named by constant `k`.
    SetGlobal,
    /// Push upvalue `u`.
    GetUpvalue,
    /// Store the top in upvalue `u`.
    SetUpvalue,
    /// Replace the instance on top by its property named by constant `k`.
    GetProperty,
    /// Set the field named by constant `k` of the instance below the top.
    SetProperty,
    /// Replace the superclass on top by the method named by constant `k`
    /// bound to the receiver below it.
    GetSuper,
    /// `==`.
    Equal,
    /// `>`.
    Greater,
    /// `<`.
    Less,
    /// `+` of numbers or strings.
    Add,
    /// `-`.
    Subtract,
    /// `*`.
    Multiply,
    /// `/`.
    Divide,
    /// `!`.
    Not,
    /// Unary `-`.
    Negate,
    /// Print the top, popped.
    Print,
    /// Jump forward by a 16-bit offset.
    Jump,
    /// Jump forward by a 16-bit offset if the top is falsey (not popped).
    JumpIfFalse,
    /// Jump back by a 16-bit offset.
    Loop,
    /// Call the value below `n` arguments.
    Call,
    /// Call method constant `k` of the receiver below `n` arguments.
    Invoke,
    /// Call superclass method constant `k` (superclass on top) with `n`.
    SuperInvoke,
    /// Push a closure of function constant `k`; then per upvalue two
    /// bytes: whether it is a local of the enclosing function, its index.
    Closure,
    /// Close the upvalue of the top slot and pop it.
    CloseUpvalue,
    /// Return the top from the current function.
    Return,
    /// Push a new class named by constant `k`.
    Class,
    /// Copy the superclass's methods (below the top) into the class on top.
    Inherit,
    /// Add the closure on top as method constant `k` of the class below it.
    Method,
}

impl Op {
    /// The operation of a byte the compiler wrote.
    #[inline]
    pub fn from_byte(b: u8) -> Op {
        Op::ALL[b as usize]
    }
}

#[cfg(test)]
#[test]
fn each_operation_is_found_by_its_byte() {
    for (i, op) in Op::ALL.iter().enumerate() {
        assert_eq!(*op as usize, i);
    }
}

/// A function's bytecode, line numbers and constants.
#[derive(Debug, Default)]
pub struct Chunk {
    /// The instructions.
    pub code: Vec<u8>,
    /// The source line of each byte of `code`.
    pub lines: Vec<u32>,
    /// The constants.
    pub constants: Vec<Value>,
}

impl Chunk {
    /// Appends a byte from source line `line`.
    pub fn write(&mut self, byte: u8, line: u32) {
        self.code.push(byte);
        self.lines.push(line);
    }

    /// Adds a constant and returns its index.
    pub fn add_constant(&mut self, v: Value) -> usize {
        self.constants.push(v);
        self.constants.len() - 1
    }
}

//! Lox, the language of *Crafting Interpreters*, as clox implements it: a
//! scanner ([`scanner`]), a single-pass compiler to bytecode ([`compiler`],
//! [`chunk`]), and a stack VM ([`vm`]) with closures, classes, and a
//! mark-sweep collector over a heap of handles ([`heap`]).
//!
//! Written as a Rust programmer writes such a VM: a `Value` enum, objects
//! behind handles, `Vec` stacks, hash maps, `impl Vm { fn run(&mut self) }`.
//! Its observable behaviour is clox's: output, error messages, stack traces,
//! exit codes, limits and number formatting.
//!
//! Invariant: the interpreter is the specification. Nothing here is
//! written around a JIT.

pub mod chunk;
pub mod compiler;
pub mod heap;
pub mod scanner;
pub mod value;
pub mod vm;

pub use vm::{InterpretError, Vm};

/// Exit code of a script that did not compile (`EX_DATAERR`).
pub const EXIT_COMPILE_ERROR: i32 = 65;
/// Exit code of a script that failed while running (`EX_SOFTWARE`).
pub const EXIT_RUNTIME_ERROR: i32 = 70;
/// Exit code of a bad command line (`EX_USAGE`).
pub const EXIT_USAGE: i32 = 64;
/// Exit code of a file that cannot be read (`EX_IOERR`).
pub const EXIT_IO_ERROR: i32 = 74;

/// Runs `source` in a fresh VM, capturing what it prints: the output, and
/// the error lines if it failed.
pub fn run_captured(source: &str) -> (String, Result<(), InterpretError>) {
    #[derive(Clone, Default)]
    struct Shared(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);
    impl std::io::Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let out = Shared::default();
    let mut vm = Vm::new(Box::new(out.clone()));
    let result = vm.interpret(source);
    let text = String::from_utf8_lossy(&out.0.borrow()).into_owned();
    (text, result)
}

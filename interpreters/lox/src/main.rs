//! `lox [FILE]`: runs a Lox file, or with no file, a REPL.

use std::io::{BufRead, BufWriter, Write};
use std::process::ExitCode;

use lox::{InterpretError, Vm, EXIT_COMPILE_ERROR, EXIT_IO_ERROR, EXIT_RUNTIME_ERROR, EXIT_USAGE};

fn report(e: &InterpretError) -> u8 {
    let (lines, code) = match e {
        InterpretError::Compile(lines) => (lines, EXIT_COMPILE_ERROR),
        InterpretError::Runtime(lines) => (lines, EXIT_RUNTIME_ERROR),
    };
    let mut err = std::io::stderr().lock();
    for l in lines {
        let _ = writeln!(err, "{l}");
    }
    code as u8
}

fn repl() -> ExitCode {
    let mut vm = Vm::new(Box::new(std::io::stdout()));
    let stdin = std::io::stdin();
    let mut line = String::new();
    loop {
        print!("> ");
        let _ = std::io::stdout().flush();
        line.clear();
        match stdin.lock().read_line(&mut line) {
            Ok(0) | Err(_) => {
                println!();
                return ExitCode::SUCCESS;
            }
            Ok(_) => {
                if let Err(e) = vm.interpret(&line) {
                    report(&e);
                }
            }
        }
    }
}

fn run_file(path: &str) -> ExitCode {
    let Ok(source) = std::fs::read(path) else {
        eprintln!("Could not open file \"{path}\".");
        return ExitCode::from(EXIT_IO_ERROR as u8);
    };
    let source = String::from_utf8_lossy(&source);
    let mut vm = Vm::new(Box::new(BufWriter::new(std::io::stdout())));
    match vm.interpret(&source) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => ExitCode::from(report(&e)),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    match args.as_slice() {
        [_] => repl(),
        [_, path] => run_file(path),
        _ => {
            eprintln!("Usage: lox [path]");
            ExitCode::from(EXIT_USAGE as u8)
        }
    }
}

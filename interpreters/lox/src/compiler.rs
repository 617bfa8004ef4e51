//! The compiler: a single pass from tokens to bytecode, as clox's.
//!
//! A Pratt parser emits code as it reads. Each function being compiled has
//! its locals, upvalues and scope depth ([`FnState`]); nested functions push
//! one. Errors are collected as clox prints them (`[line N] Error at 'x':
//! message`); after one, the parser is in panic mode and reports nothing
//! until it synchronizes at a statement boundary.

use std::rc::Rc;

use crate::chunk::Op;
use crate::heap::Heap;
use crate::scanner::{Scanner, Token, TokenKind};
use crate::value::{Function, Obj, Value};

/// At most this many locals, upvalues and constants per function (each is
/// addressed by one byte).
const BYTE_COUNT: usize = 256;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Prec {
    None,
    Assignment,
    Or,
    And,
    Equality,
    Comparison,
    Term,
    Factor,
    Unary,
    Call,
    Primary,
}

impl Prec {
    fn next(self) -> Prec {
        use Prec::*;
        match self {
            None => Assignment,
            Assignment => Or,
            Or => And,
            And => Equality,
            Equality => Comparison,
            Comparison => Term,
            Term => Factor,
            Factor => Unary,
            Unary => Call,
            Call | Primary => Primary,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum FnKind {
    Script,
    Function,
    Method,
    Initializer,
}

struct Local<'src> {
    name: &'src str,
    /// `None` while its initializer is compiled.
    depth: Option<usize>,
    captured: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
struct UpvalueRef {
    index: u8,
    is_local: bool,
}

struct FnState<'src> {
    function: Function,
    kind: FnKind,
    locals: Vec<Local<'src>>,
    upvalues: Vec<UpvalueRef>,
    scope_depth: usize,
}

struct ClassState {
    has_superclass: bool,
}

type ParseFn<'src, 'h> = fn(&mut Parser<'src, 'h>, bool);

struct Parser<'src, 'h> {
    scanner: Scanner<'src>,
    current: Token<'src>,
    previous: Token<'src>,
    panic_mode: bool,
    errors: Vec<String>,
    fns: Vec<FnState<'src>>,
    classes: Vec<ClassState>,
    heap: &'h mut Heap,
}

/// Compiles a script into its top-level function, or returns the compile
/// errors as clox prints them, one line each.
pub fn compile(source: &str, heap: &mut Heap) -> Result<Rc<Function>, Vec<String>> {
    let eof = Token { kind: TokenKind::Eof, lexeme: "", line: 1 };
    let mut p = Parser {
        scanner: Scanner::new(source),
        current: eof,
        previous: eof,
        panic_mode: false,
        errors: Vec::new(),
        fns: Vec::new(),
        classes: Vec::new(),
        heap,
    };
    p.begin_function(FnKind::Script);
    p.advance();
    while !p.matches(TokenKind::Eof) {
        p.declaration();
    }
    let function = p.end_function();
    if p.errors.is_empty() {
        Ok(Rc::new(function))
    } else {
        Err(p.errors)
    }
}

impl<'src, 'h> Parser<'src, 'h> {
    // Tokens and errors.

    fn advance(&mut self) {
        self.previous = self.current;
        loop {
            self.current = self.scanner.scan_token();
            if self.current.kind != TokenKind::Error {
                break;
            }
            self.error_at(self.current, self.current.lexeme);
        }
    }

    fn check(&self, kind: TokenKind) -> bool {
        self.current.kind == kind
    }

    fn matches(&mut self, kind: TokenKind) -> bool {
        if !self.check(kind) {
            return false;
        }
        self.advance();
        true
    }

    fn consume(&mut self, kind: TokenKind, message: &str) {
        if self.check(kind) {
            self.advance();
        } else {
            self.error_at(self.current, message);
        }
    }

    fn error(&mut self, message: &str) {
        self.error_at(self.previous, message);
    }

    fn error_at_current(&mut self, message: &str) {
        self.error_at(self.current, message);
    }

    fn error_at(&mut self, token: Token<'src>, message: &str) {
        if self.panic_mode {
            return;
        }
        self.panic_mode = true;
        let at = match token.kind {
            TokenKind::Eof => " at end".to_string(),
            TokenKind::Error => String::new(),
            _ => format!(" at '{}'", token.lexeme),
        };
        self.errors.push(format!("[line {}] Error{at}: {message}", token.line));
    }

    fn synchronize(&mut self) {
        self.panic_mode = false;
        use TokenKind::*;
        while self.current.kind != Eof {
            if self.previous.kind == Semicolon {
                return;
            }
            if matches!(self.current.kind, Class | Fun | Var | For | If | While | Print | Return) {
                return;
            }
            self.advance();
        }
    }

    // Emitting code.

    fn state(&mut self) -> &mut FnState<'src> {
        self.fns.last_mut().expect("a function is being compiled")
    }

    fn code_len(&mut self) -> usize {
        self.state().function.chunk.code.len()
    }

    fn emit(&mut self, byte: u8) {
        let line = self.previous.line;
        self.state().function.chunk.write(byte, line);
    }

    fn emit_op(&mut self, op: Op) {
        self.emit(op as u8);
    }

    fn emit_op_arg(&mut self, op: Op, arg: u8) {
        self.emit(op as u8);
        self.emit(arg);
    }

    fn emit_jump(&mut self, op: Op) -> usize {
        self.emit_op(op);
        self.emit(0xff);
        self.emit(0xff);
        self.code_len() - 2
    }

    fn patch_jump(&mut self, at: usize) {
        let jump = self.code_len() - at - 2;
        if jump > u16::MAX as usize {
            self.error("Too much code to jump over.");
        }
        let code = &mut self.state().function.chunk.code;
        code[at] = (jump >> 8) as u8;
        code[at + 1] = jump as u8;
    }

    fn emit_loop(&mut self, start: usize) {
        self.emit_op(Op::Loop);
        let offset = self.code_len() - start + 2;
        if offset > u16::MAX as usize {
            self.error("Loop body too large.");
        }
        self.emit((offset >> 8) as u8);
        self.emit(offset as u8);
    }

    fn emit_return(&mut self) {
        if self.state().kind == FnKind::Initializer {
            self.emit_op_arg(Op::GetLocal, 0);
        } else {
            self.emit_op(Op::Nil);
        }
        self.emit_op(Op::Return);
    }

    fn make_constant(&mut self, v: Value) -> u8 {
        let i = self.state().function.chunk.add_constant(v);
        if i >= BYTE_COUNT {
            self.error("Too many constants in one chunk.");
            return 0;
        }
        i as u8
    }

    fn emit_constant(&mut self, v: Value) {
        let k = self.make_constant(v);
        self.emit_op_arg(Op::Constant, k);
    }

    fn identifier_constant(&mut self, name: &str) -> u8 {
        let s = self.heap.intern(name);
        self.make_constant(Value::Obj(s))
    }

    // Functions and scopes.

    fn begin_function(&mut self, kind: FnKind) {
        let mut function = Function::default();
        if kind != FnKind::Script {
            function.name = Some(self.heap.intern(self.previous.lexeme));
        }
        // Slot 0 holds the callee: `this` in methods, unnamed otherwise.
        let slot0 = if matches!(kind, FnKind::Method | FnKind::Initializer) { "this" } else { "" };
        let locals = vec![Local { name: slot0, depth: Some(0), captured: false }];
        self.fns.push(FnState { function, kind, locals, upvalues: Vec::new(), scope_depth: 0 });
    }

    fn end_function(&mut self) -> Function {
        self.emit_return();
        let state = self.fns.pop().expect("a function is being compiled");
        let mut function = state.function;
        function.upvalue_count = state.upvalues.len();
        function
    }

    fn begin_scope(&mut self) {
        self.state().scope_depth += 1;
    }

    fn end_scope(&mut self) {
        let state = self.state();
        state.scope_depth -= 1;
        let depth = state.scope_depth;
        while let Some(local) = self.state().locals.last() {
            if local.depth.is_none_or(|d| d <= depth) {
                break;
            }
            let op = if local.captured { Op::CloseUpvalue } else { Op::Pop };
            self.emit_op(op);
            self.state().locals.pop();
        }
    }

    fn add_local(&mut self, name: &'src str) {
        if self.state().locals.len() == BYTE_COUNT {
            self.error("Too many local variables in function.");
            return;
        }
        self.state().locals.push(Local { name, depth: None, captured: false });
    }

    fn declare_variable(&mut self) {
        let name = self.previous.lexeme;
        let state = self.state();
        if state.scope_depth == 0 {
            return;
        }
        let depth = state.scope_depth;
        let duplicate =
            state.locals.iter().rev().take_while(|l| l.depth.is_none_or(|d| d >= depth)).any(|l| l.name == name);
        if duplicate {
            self.error("Already a variable with this name in this scope.");
        }
        self.add_local(name);
    }

    fn parse_variable(&mut self, message: &str) -> u8 {
        self.consume(TokenKind::Identifier, message);
        self.declare_variable();
        if self.state().scope_depth > 0 {
            return 0;
        }
        self.identifier_constant(self.previous.lexeme)
    }

    fn mark_initialized(&mut self) {
        let state = self.state();
        if state.scope_depth == 0 {
            return;
        }
        let depth = state.scope_depth;
        if let Some(l) = state.locals.last_mut() {
            l.depth = Some(depth);
        }
    }

    fn define_variable(&mut self, global: u8) {
        if self.state().scope_depth > 0 {
            self.mark_initialized();
            return;
        }
        self.emit_op_arg(Op::DefineGlobal, global);
    }

    fn resolve_local(&mut self, level: usize, name: &str) -> Option<u8> {
        let found = self.fns[level].locals.iter().rposition(|l| l.name == name)?;
        if self.fns[level].locals[found].depth.is_none() {
            self.error("Can't read local variable in its own initializer.");
        }
        Some(found as u8)
    }

    fn resolve_upvalue(&mut self, level: usize, name: &str) -> Option<u8> {
        if level == 0 {
            return None;
        }
        if let Some(local) = self.resolve_local(level - 1, name) {
            self.fns[level - 1].locals[local as usize].captured = true;
            return Some(self.add_upvalue(level, local, true));
        }
        let up = self.resolve_upvalue(level - 1, name)?;
        Some(self.add_upvalue(level, up, false))
    }

    fn add_upvalue(&mut self, level: usize, index: u8, is_local: bool) -> u8 {
        let want = UpvalueRef { index, is_local };
        if let Some(i) = self.fns[level].upvalues.iter().position(|u| *u == want) {
            return i as u8;
        }
        if self.fns[level].upvalues.len() == BYTE_COUNT {
            self.error("Too many closure variables in function.");
            return 0;
        }
        self.fns[level].upvalues.push(want);
        (self.fns[level].upvalues.len() - 1) as u8
    }

    // Declarations and statements.

    fn declaration(&mut self) {
        if self.matches(TokenKind::Class) {
            self.class_declaration();
        } else if self.matches(TokenKind::Fun) {
            self.fun_declaration();
        } else if self.matches(TokenKind::Var) {
            self.var_declaration();
        } else {
            self.statement();
        }
        if self.panic_mode {
            self.synchronize();
        }
    }

    fn class_declaration(&mut self) {
        self.consume(TokenKind::Identifier, "Expect class name.");
        let class_name = self.previous;
        let name = self.identifier_constant(class_name.lexeme);
        self.declare_variable();
        self.emit_op_arg(Op::Class, name);
        self.define_variable(name);
        self.classes.push(ClassState { has_superclass: false });
        if self.matches(TokenKind::Less) {
            self.consume(TokenKind::Identifier, "Expect superclass name.");
            self.variable(false);
            if class_name.lexeme == self.previous.lexeme {
                self.error("A class can't inherit from itself.");
            }
            self.begin_scope();
            self.add_local("super");
            self.define_variable(0);
            self.named_variable(class_name, false);
            self.emit_op(Op::Inherit);
            self.classes.last_mut().expect("in a class").has_superclass = true;
        }
        self.named_variable(class_name, false);
        self.consume(TokenKind::LeftBrace, "Expect '{' before class body.");
        while !self.check(TokenKind::RightBrace) && !self.check(TokenKind::Eof) {
            self.method();
        }
        self.consume(TokenKind::RightBrace, "Expect '}' after class body.");
        self.emit_op(Op::Pop);
        if self.classes.pop().expect("in a class").has_superclass {
            self.end_scope();
        }
    }

    fn method(&mut self) {
        self.consume(TokenKind::Identifier, "Expect method name.");
        let name = self.identifier_constant(self.previous.lexeme);
        let kind = if self.previous.lexeme == "init" { FnKind::Initializer } else { FnKind::Method };
        self.function(kind);
        self.emit_op_arg(Op::Method, name);
    }

    fn fun_declaration(&mut self) {
        let global = self.parse_variable("Expect function name.");
        self.mark_initialized();
        self.function(FnKind::Function);
        self.define_variable(global);
    }

    fn function(&mut self, kind: FnKind) {
        self.begin_function(kind);
        self.begin_scope();
        self.consume(TokenKind::LeftParen, "Expect '(' after function name.");
        if !self.check(TokenKind::RightParen) {
            loop {
                self.state().function.arity += 1;
                if self.state().function.arity > 255 {
                    self.error_at_current("Can't have more than 255 parameters.");
                }
                let k = self.parse_variable("Expect parameter name.");
                self.define_variable(k);
                if !self.matches(TokenKind::Comma) {
                    break;
                }
            }
        }
        self.consume(TokenKind::RightParen, "Expect ')' after parameters.");
        self.consume(TokenKind::LeftBrace, "Expect '{' before function body.");
        self.block();
        let upvalues = self.fns.last().expect("a function is being compiled").upvalues.clone();
        let function = self.end_function();
        let f = self.heap.alloc(Obj::Function(Rc::new(function)));
        let k = self.make_constant(Value::Obj(f));
        self.emit_op_arg(Op::Closure, k);
        for u in upvalues {
            self.emit(u.is_local as u8);
            self.emit(u.index);
        }
    }

    fn var_declaration(&mut self) {
        let global = self.parse_variable("Expect variable name.");
        if self.matches(TokenKind::Equal) {
            self.expression();
        } else {
            self.emit_op(Op::Nil);
        }
        self.consume(TokenKind::Semicolon, "Expect ';' after variable declaration.");
        self.define_variable(global);
    }

    fn statement(&mut self) {
        if self.matches(TokenKind::Print) {
            self.expression();
            self.consume(TokenKind::Semicolon, "Expect ';' after value.");
            self.emit_op(Op::Print);
        } else if self.matches(TokenKind::For) {
            self.for_statement();
        } else if self.matches(TokenKind::If) {
            self.if_statement();
        } else if self.matches(TokenKind::Return) {
            self.return_statement();
        } else if self.matches(TokenKind::While) {
            self.while_statement();
        } else if self.matches(TokenKind::LeftBrace) {
            self.begin_scope();
            self.block();
            self.end_scope();
        } else {
            self.expression();
            self.consume(TokenKind::Semicolon, "Expect ';' after expression.");
            self.emit_op(Op::Pop);
        }
    }

    fn block(&mut self) {
        while !self.check(TokenKind::RightBrace) && !self.check(TokenKind::Eof) {
            self.declaration();
        }
        self.consume(TokenKind::RightBrace, "Expect '}' after block.");
    }

    fn if_statement(&mut self) {
        self.consume(TokenKind::LeftParen, "Expect '(' after 'if'.");
        self.expression();
        self.consume(TokenKind::RightParen, "Expect ')' after condition.");
        let then_jump = self.emit_jump(Op::JumpIfFalse);
        self.emit_op(Op::Pop);
        self.statement();
        let else_jump = self.emit_jump(Op::Jump);
        self.patch_jump(then_jump);
        self.emit_op(Op::Pop);
        if self.matches(TokenKind::Else) {
            self.statement();
        }
        self.patch_jump(else_jump);
    }

    fn while_statement(&mut self) {
        let start = self.code_len();
        self.consume(TokenKind::LeftParen, "Expect '(' after 'while'.");
        self.expression();
        self.consume(TokenKind::RightParen, "Expect ')' after condition.");
        let exit = self.emit_jump(Op::JumpIfFalse);
        self.emit_op(Op::Pop);
        self.statement();
        self.emit_loop(start);
        self.patch_jump(exit);
        self.emit_op(Op::Pop);
    }

    fn for_statement(&mut self) {
        self.begin_scope();
        self.consume(TokenKind::LeftParen, "Expect '(' after 'for'.");
        if self.matches(TokenKind::Semicolon) {
        } else if self.matches(TokenKind::Var) {
            self.var_declaration();
        } else {
            self.expression();
            self.consume(TokenKind::Semicolon, "Expect ';' after expression.");
            self.emit_op(Op::Pop);
        }
        let mut start = self.code_len();
        let mut exit = None;
        if !self.matches(TokenKind::Semicolon) {
            self.expression();
            self.consume(TokenKind::Semicolon, "Expect ';' after loop condition.");
            exit = Some(self.emit_jump(Op::JumpIfFalse));
            self.emit_op(Op::Pop);
        }
        if !self.matches(TokenKind::RightParen) {
            let body = self.emit_jump(Op::Jump);
            let increment = self.code_len();
            self.expression();
            self.emit_op(Op::Pop);
            self.consume(TokenKind::RightParen, "Expect ')' after for clauses.");
            self.emit_loop(start);
            start = increment;
            self.patch_jump(body);
        }
        self.statement();
        self.emit_loop(start);
        if let Some(exit) = exit {
            self.patch_jump(exit);
            self.emit_op(Op::Pop);
        }
        self.end_scope();
    }

    fn return_statement(&mut self) {
        if self.state().kind == FnKind::Script {
            self.error("Can't return from top-level code.");
        }
        if self.matches(TokenKind::Semicolon) {
            self.emit_return();
        } else {
            if self.state().kind == FnKind::Initializer {
                self.error("Can't return a value from an initializer.");
            }
            self.expression();
            self.consume(TokenKind::Semicolon, "Expect ';' after return value.");
            self.emit_op(Op::Return);
        }
    }

    // Expressions.

    fn expression(&mut self) {
        self.parse_precedence(Prec::Assignment);
    }

    fn parse_precedence(&mut self, prec: Prec) {
        self.advance();
        let Some(prefix) = rule(self.previous.kind).0 else {
            self.error("Expect expression.");
            return;
        };
        let can_assign = prec <= Prec::Assignment;
        prefix(self, can_assign);
        while prec <= rule(self.current.kind).2 {
            self.advance();
            let infix = rule(self.previous.kind).1.expect("a token with a precedence has an infix rule");
            infix(self, can_assign);
        }
        if can_assign && self.matches(TokenKind::Equal) {
            self.error("Invalid assignment target.");
        }
    }

    fn number(&mut self, _can_assign: bool) {
        let n: f64 = self.previous.lexeme.parse().expect("the scanner reads numbers Rust parses");
        self.emit_constant(Value::Number(n));
    }

    fn string(&mut self, _can_assign: bool) {
        let lexeme = self.previous.lexeme;
        let s = self.heap.intern(&lexeme[1..lexeme.len() - 1]);
        self.emit_constant(Value::Obj(s));
    }

    fn literal(&mut self, _can_assign: bool) {
        match self.previous.kind {
            TokenKind::False => self.emit_op(Op::False),
            TokenKind::Nil => self.emit_op(Op::Nil),
            TokenKind::True => self.emit_op(Op::True),
            _ => unreachable!("literal() is the rule of literals only"),
        }
    }

    fn grouping(&mut self, _can_assign: bool) {
        self.expression();
        self.consume(TokenKind::RightParen, "Expect ')' after expression.");
    }

    fn unary(&mut self, _can_assign: bool) {
        let op = self.previous.kind;
        self.parse_precedence(Prec::Unary);
        match op {
            TokenKind::Bang => self.emit_op(Op::Not),
            TokenKind::Minus => self.emit_op(Op::Negate),
            _ => unreachable!("unary() is the rule of `!` and `-` only"),
        }
    }

    fn binary(&mut self, _can_assign: bool) {
        let op = self.previous.kind;
        self.parse_precedence(rule(op).2.next());
        use TokenKind::*;
        match op {
            BangEqual => {
                self.emit_op(Op::Equal);
                self.emit_op(Op::Not);
            }
            EqualEqual => self.emit_op(Op::Equal),
            Greater => self.emit_op(Op::Greater),
            GreaterEqual => {
                self.emit_op(Op::Less);
                self.emit_op(Op::Not);
            }
            Less => self.emit_op(Op::Less),
            LessEqual => {
                self.emit_op(Op::Greater);
                self.emit_op(Op::Not);
            }
            Plus => self.emit_op(Op::Add),
            Minus => self.emit_op(Op::Subtract),
            Star => self.emit_op(Op::Multiply),
            Slash => self.emit_op(Op::Divide),
            _ => unreachable!("binary() is the rule of binary operators only"),
        }
    }

    fn and(&mut self, _can_assign: bool) {
        let end = self.emit_jump(Op::JumpIfFalse);
        self.emit_op(Op::Pop);
        self.parse_precedence(Prec::And);
        self.patch_jump(end);
    }

    fn or(&mut self, _can_assign: bool) {
        let else_jump = self.emit_jump(Op::JumpIfFalse);
        let end = self.emit_jump(Op::Jump);
        self.patch_jump(else_jump);
        self.emit_op(Op::Pop);
        self.parse_precedence(Prec::Or);
        self.patch_jump(end);
    }

    fn call(&mut self, _can_assign: bool) {
        let n = self.argument_list();
        self.emit_op_arg(Op::Call, n);
    }

    fn argument_list(&mut self) -> u8 {
        let mut n = 0usize;
        if !self.check(TokenKind::RightParen) {
            loop {
                self.expression();
                if n == 255 {
                    self.error("Can't have more than 255 arguments.");
                }
                n += 1;
                if !self.matches(TokenKind::Comma) {
                    break;
                }
            }
        }
        self.consume(TokenKind::RightParen, "Expect ')' after arguments.");
        n.min(255) as u8
    }

    fn dot(&mut self, can_assign: bool) {
        self.consume(TokenKind::Identifier, "Expect property name after '.'.");
        let name = self.identifier_constant(self.previous.lexeme);
        if can_assign && self.matches(TokenKind::Equal) {
            self.expression();
            self.emit_op_arg(Op::SetProperty, name);
        } else if self.matches(TokenKind::LeftParen) {
            let n = self.argument_list();
            self.emit_op_arg(Op::Invoke, name);
            self.emit(n);
        } else {
            self.emit_op_arg(Op::GetProperty, name);
        }
    }

    fn variable(&mut self, can_assign: bool) {
        self.named_variable(self.previous, can_assign);
    }

    fn named_variable(&mut self, name: Token<'src>, can_assign: bool) {
        let level = self.fns.len() - 1;
        let (get, set, arg) = if let Some(slot) = self.resolve_local(level, name.lexeme) {
            (Op::GetLocal, Op::SetLocal, slot)
        } else if let Some(up) = self.resolve_upvalue(level, name.lexeme) {
            (Op::GetUpvalue, Op::SetUpvalue, up)
        } else {
            (Op::GetGlobal, Op::SetGlobal, self.identifier_constant(name.lexeme))
        };
        if can_assign && self.matches(TokenKind::Equal) {
            self.expression();
            self.emit_op_arg(set, arg);
        } else {
            self.emit_op_arg(get, arg);
        }
    }

    fn this(&mut self, _can_assign: bool) {
        if self.classes.is_empty() {
            self.error("Can't use 'this' outside of a class.");
            return;
        }
        self.variable(false);
    }

    fn super_(&mut self, _can_assign: bool) {
        match self.classes.last() {
            None => self.error("Can't use 'super' outside of a class."),
            Some(c) if !c.has_superclass => self.error("Can't use 'super' in a class with no superclass."),
            Some(_) => {}
        }
        self.consume(TokenKind::Dot, "Expect '.' after 'super'.");
        self.consume(TokenKind::Identifier, "Expect superclass method name.");
        let name = self.identifier_constant(self.previous.lexeme);
        self.named_variable(Token::synthetic("this"), false);
        if self.matches(TokenKind::LeftParen) {
            let n = self.argument_list();
            self.named_variable(Token::synthetic("super"), false);
            self.emit_op_arg(Op::SuperInvoke, name);
            self.emit(n);
        } else {
            self.named_variable(Token::synthetic("super"), false);
            self.emit_op_arg(Op::GetSuper, name);
        }
    }
}

/// A token's prefix rule, infix rule and infix precedence.
fn rule<'src, 'h>(kind: TokenKind) -> (Option<ParseFn<'src, 'h>>, Option<ParseFn<'src, 'h>>, Prec) {
    use TokenKind::*;
    match kind {
        LeftParen => (Some(Parser::grouping), Some(Parser::call), Prec::Call),
        Dot => (None, Some(Parser::dot), Prec::Call),
        Minus => (Some(Parser::unary), Some(Parser::binary), Prec::Term),
        Plus => (None, Some(Parser::binary), Prec::Term),
        Slash | Star => (None, Some(Parser::binary), Prec::Factor),
        Bang => (Some(Parser::unary), None, Prec::None),
        BangEqual | EqualEqual => (None, Some(Parser::binary), Prec::Equality),
        Greater | GreaterEqual | Less | LessEqual => (None, Some(Parser::binary), Prec::Comparison),
        Identifier => (Some(Parser::variable), None, Prec::None),
        String => (Some(Parser::string), None, Prec::None),
        Number => (Some(Parser::number), None, Prec::None),
        And => (None, Some(Parser::and), Prec::And),
        Or => (None, Some(Parser::or), Prec::Or),
        False | Nil | True => (Some(Parser::literal), None, Prec::None),
        Super => (Some(Parser::super_), None, Prec::None),
        This => (Some(Parser::this), None, Prec::None),
        _ => (None, None, Prec::None),
    }
}

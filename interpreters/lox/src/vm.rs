//! The virtual machine: a stack of values, a stack of call frames, and one
//! `match` per instruction.

pub use machine::*;

#[jitgen::jit_interpreter]
pub mod machine {
    use jitgen::prelude::*;
    use std::io::Write;
    use std::rc::Rc;

    use rustc_hash::FxHashMap;

    use crate::chunk::Op;
    use crate::compiler::compile;
    use crate::heap::Heap;
    use crate::value::{BoundMethod, Class, Function, Instance, NativeFn, Obj, ObjRef, Upvalue, Value};

    /// At most this many calls are under way ("Stack overflow." past it).
    pub const FRAMES_MAX: usize = 64;

    /// How a script ended.
    #[derive(Debug, PartialEq, Eq)]
    pub enum InterpretError {
        /// It did not compile: the errors, one line each.
        Compile(Vec<String>),
        /// It failed while running: the message, then the stack trace, one
        /// line each.
        Runtime(Vec<String>),
    }

    /// A call under way.
    #[derive(Clone)]
    struct CallFrame {
        /// The closure called.
        closure: ObjRef,
        /// Its function.
        function: Rc<Function>,
        /// The next instruction.
        ip: usize,
        /// The stack slot of the callee; its arguments and locals follow.
        base: usize,
    }

    /// A Lox virtual machine: its heap and global variables last from one
    /// [`Vm::interpret`] to the next (a REPL's lines share them).
    pub struct Vm {
        heap: Heap,
        stack: Vec<Value>,
        frames: Vec<CallFrame>,
        globals: FxHashMap<ObjRef, Value>,
        /// Upvalues still open, by the stack slot they point at, ascending.
        open_upvalues: Vec<(usize, ObjRef)>,
        init_string: ObjRef,
        out: Box<dyn Write>,
    }

    /// A runtime error on its way out of [`Vm::run`].
    struct RuntimeError(String);

    type Run<T> = Result<T, RuntimeError>;

    fn clock_native(_args: &[Value]) -> Value {
        use std::sync::OnceLock;
        static START: OnceLock<std::time::Instant> = OnceLock::new();
        Value::Number(START.get_or_init(std::time::Instant::now).elapsed().as_secs_f64())
    }

    impl Vm {
        /// A VM printing to `out`, with the native functions defined.
        pub fn new(out: Box<dyn Write>) -> Vm {
            let mut heap = Heap::new();
            let init_string = heap.intern("init");
            let mut vm = Vm {
                heap,
                stack: Vec::with_capacity(FRAMES_MAX * 256),
                frames: Vec::with_capacity(FRAMES_MAX),
                globals: FxHashMap::default(),
                open_upvalues: Vec::new(),
                init_string,
                out,
            };
            vm.define_native("clock", clock_native);
            vm
        }

        fn define_native(&mut self, name: &str, f: NativeFn) {
            let name = self.heap.intern(name);
            let native = self.heap.alloc(Obj::Native(f));
            self.globals.insert(name, Value::Obj(native));
        }

        /// The heap (to look at values, or at how much it holds).
        pub fn heap(&self) -> &Heap {
            &self.heap
        }

        /// Compiles and runs `source`.
        pub fn interpret(&mut self, source: &str) -> Result<(), InterpretError> {
            let function = compile(source, &mut self.heap).map_err(InterpretError::Compile)?;
            let closure = self.heap.closure(function.clone(), Vec::new());
            self.stack.push(Value::Obj(closure));
            self.frames.push(CallFrame { closure, function, ip: 0, base: 0 });
            let result = self.run();
            let _ = self.out.flush();
            result.map_err(|RuntimeError(message)| {
                let trace = self.stack_trace();
                self.stack.clear();
                self.frames.clear();
                self.open_upvalues.clear();
                InterpretError::Runtime(std::iter::once(message).chain(trace).collect())
            })
        }

        fn stack_trace(&self) -> Vec<String> {
            self.frames
                .iter()
                .rev()
                .map(|f| {
                    let line = f.function.chunk.lines[f.ip.saturating_sub(1)];
                    match f.function.name {
                        Some(name) => format!("[line {line}] in {}()", self.heap.str(name)),
                        None => format!("[line {line}] in script"),
                    }
                })
                .collect()
        }

        #[inline]
        fn peek(&self, distance: usize) -> Value {
            self.stack[self.stack.len() - 1 - distance]
        }

        #[inline]
        fn pop(&mut self) -> Value {
            self.stack.pop().expect("the compiler balances the stack")
        }

        fn error<T>(&self, message: String) -> Run<T> {
            Err(RuntimeError(message))
        }

        /// Collects garbage if enough was allocated since the last time; at
        /// the start of instructions that allocate, whose operands are still
        /// on the stack.
        fn maybe_collect(&mut self) {
            if !self.heap.should_collect() {
                return;
            }
            let roots = self.stack.iter().copied().chain(self.globals.values().copied());
            let objects = self
                .frames
                .iter()
                .map(|f| f.closure)
                .chain(self.open_upvalues.iter().map(|&(_, u)| u))
                .chain(self.globals.keys().copied())
                .chain(std::iter::once(self.init_string));
            self.heap.collect(roots, objects);
        }

        fn instance_of(&self, v: Value) -> Option<ObjRef> {
            match v {
                Value::Obj(r) if matches!(self.heap.get(r), Obj::Instance(_)) => Some(r),
                _ => None,
            }
        }

        fn run(&mut self) -> Run<()> {
            let mut frame = self.frames.last().expect("a frame to run").clone();
            macro_rules! byte {
                () => {{
                    let b = frame.function.chunk.code[frame.ip];
                    frame.ip += 1;
                    b
                }};
            }
            macro_rules! short {
                () => {{
                    let hi = byte!() as usize;
                    let lo = byte!() as usize;
                    (hi << 8) | lo
                }};
            }
            macro_rules! constant {
                () => {
                    frame.function.chunk.constants[byte!() as usize]
                };
            }
            macro_rules! name {
                () => {
                    match constant!() {
                        Value::Obj(r) => r,
                        _ => unreachable!("names are string constants"),
                    }
                };
            }
            // Saves the frame's ip where it can be seen: before calls, returns,
            // and errors (for the stack trace).
            macro_rules! save {
                () => {
                    *self.frames.last_mut().expect("a frame") = frame.clone()
                };
            }
            macro_rules! fail {
                ($($arg:tt)*) => {{
                    save!();
                    return self.error(format!($($arg)*));
                }};
            }
            macro_rules! numbers {
                ($a:ident, $b:ident, $e:expr) => {{
                    match (self.peek(1), self.peek(0)) {
                        (Value::Number($a), Value::Number($b)) => {
                            self.stack.truncate(self.stack.len() - 2);
                            self.stack.push($e);
                        }
                        _ => fail!("Operands must be numbers."),
                    }
                }};
            }
            loop {
                hint!(global_merge_point);
                let op = Op::from_byte(byte!());
                match op {
                    Op::Constant => {
                        let v = constant!();
                        self.stack.push(v);
                    }
                    Op::Nil => self.stack.push(Value::Nil),
                    Op::True => self.stack.push(Value::Bool(true)),
                    Op::False => self.stack.push(Value::Bool(false)),
                    Op::Pop => {
                        self.pop();
                    }
                    Op::GetLocal => {
                        let slot = byte!() as usize;
                        let v = self.stack[frame.base + slot];
                        self.stack.push(v);
                    }
                    Op::SetLocal => {
                        let slot = byte!() as usize;
                        self.stack[frame.base + slot] = self.peek(0);
                    }
                    Op::GetGlobal => {
                        let name = name!();
                        match self.globals.get(&name) {
                            Some(&v) => self.stack.push(v),
                            None => fail!("Undefined variable '{}'.", self.heap.str(name)),
                        }
                    }
                    Op::DefineGlobal => {
                        let name = name!();
                        let v = self.peek(0);
                        self.globals.insert(name, v);
                        self.pop();
                    }
                    Op::SetGlobal => {
                        let name = name!();
                        let v = self.peek(0);
                        match self.globals.get_mut(&name) {
                            Some(slot) => *slot = v,
                            None => fail!("Undefined variable '{}'.", self.heap.str(name)),
                        }
                    }
                    Op::GetUpvalue => {
                        let slot = byte!() as usize;
                        let up = self.upvalue_of(frame.closure, slot);
                        let v = match self.heap.get(up) {
                            Obj::Upvalue(Upvalue::Open(s)) => self.stack[*s],
                            Obj::Upvalue(Upvalue::Closed(v)) => *v,
                            _ => unreachable!("a closure captures upvalues"),
                        };
                        self.stack.push(v);
                    }
                    Op::SetUpvalue => {
                        let slot = byte!() as usize;
                        let up = self.upvalue_of(frame.closure, slot);
                        let v = self.peek(0);
                        match self.heap.get_mut(up) {
                            Obj::Upvalue(Upvalue::Open(s)) => {
                                let s = *s;
                                self.stack[s] = v;
                            }
                            Obj::Upvalue(Upvalue::Closed(c)) => *c = v,
                            _ => unreachable!("a closure captures upvalues"),
                        }
                    }
                    Op::GetProperty => {
                        let name = name!();
                        let Some(instance) = self.instance_of(self.peek(0)) else {
                            fail!("Only instances have properties.");
                        };
                        let Obj::Instance(i) = self.heap.get(instance) else { unreachable!() };
                        if let Some(&v) = i.fields.get(&name) {
                            self.pop();
                            self.stack.push(v);
                        } else {
                            let class = i.class;
                            if let Err(e) = self.bind_method(class, name) {
                                save!();
                                return Err(e);
                            }
                        }
                    }
                    Op::SetProperty => {
                        let name = name!();
                        let Some(instance) = self.instance_of(self.peek(1)) else {
                            fail!("Only instances have fields.");
                        };
                        let v = self.peek(0);
                        let Obj::Instance(i) = self.heap.get_mut(instance) else { unreachable!() };
                        i.fields.insert(name, v);
                        self.stack.truncate(self.stack.len() - 2);
                        self.stack.push(v);
                    }
                    Op::GetSuper => {
                        let name = name!();
                        let Value::Obj(superclass) = self.pop() else { unreachable!("super is a class") };
                        if let Err(e) = self.bind_method(superclass, name) {
                            save!();
                            return Err(e);
                        }
                    }
                    Op::Equal => {
                        let b = self.pop();
                        let a = self.pop();
                        self.stack.push(Value::Bool(a == b));
                    }
                    Op::Greater => numbers!(a, b, Value::Bool(a > b)),
                    Op::Less => numbers!(a, b, Value::Bool(a < b)),
                    Op::Add => match (self.peek(1), self.peek(0)) {
                        (Value::Number(a), Value::Number(b)) => {
                            self.stack.truncate(self.stack.len() - 2);
                            self.stack.push(Value::Number(a + b));
                        }
                        (a, b) if self.heap.is_string(a) && self.heap.is_string(b) => {
                            self.maybe_collect();
                            let (Value::Obj(a), Value::Obj(b)) = (a, b) else { unreachable!() };
                            let s = [self.heap.str(a), self.heap.str(b)].concat();
                            let r = self.heap.intern_owned(s);
                            self.stack.truncate(self.stack.len() - 2);
                            self.stack.push(Value::Obj(r));
                        }
                        _ => fail!("Operands must be two numbers or two strings."),
                    },
                    Op::Subtract => numbers!(a, b, Value::Number(a - b)),
                    Op::Multiply => numbers!(a, b, Value::Number(a * b)),
                    Op::Divide => numbers!(a, b, Value::Number(a / b)),
                    Op::Not => {
                        let v = self.pop();
                        self.stack.push(Value::Bool(v.is_falsey()));
                    }
                    Op::Negate => match self.peek(0) {
                        Value::Number(n) => {
                            self.pop();
                            self.stack.push(Value::Number(-n));
                        }
                        _ => fail!("Operand must be a number."),
                    },
                    Op::Print => {
                        let v = self.pop();
                        let mut s = String::new();
                        v.write(&self.heap, &mut s);
                        s.push('\n');
                        let _ = self.out.write_all(s.as_bytes());
                    }
                    Op::Jump => {
                        let offset = short!();
                        frame.ip += offset;
                    }
                    Op::JumpIfFalse => {
                        let offset = short!();
                        if self.peek(0).is_falsey() {
                            frame.ip += offset;
                        }
                    }
                    Op::Loop => {
                        let offset = short!();
                        frame.ip -= offset;
                    }
                    Op::Call => {
                        let argc = byte!() as usize;
                        save!();
                        self.call_value(self.peek(argc), argc)?;
                        frame = self.frames.last().expect("a frame").clone();
                    }
                    Op::Invoke => {
                        let name = name!();
                        let argc = byte!() as usize;
                        save!();
                        self.invoke(name, argc)?;
                        frame = self.frames.last().expect("a frame").clone();
                    }
                    Op::SuperInvoke => {
                        let name = name!();
                        let argc = byte!() as usize;
                        save!();
                        let Value::Obj(superclass) = self.pop() else { unreachable!("super is a class") };
                        self.invoke_from_class(superclass, name, argc)?;
                        frame = self.frames.last().expect("a frame").clone();
                    }
                    Op::Closure => {
                        self.maybe_collect();
                        let Value::Obj(f) = constant!() else { unreachable!("a function constant") };
                        let Obj::Function(function) = self.heap.get(f) else { unreachable!("a function constant") };
                        let function = function.clone();
                        let mut upvalues = Vec::with_capacity(function.upvalue_count);
                        for _ in 0..function.upvalue_count {
                            let is_local = byte!() == 1;
                            let index = byte!() as usize;
                            upvalues.push(if is_local {
                                self.capture_upvalue(frame.base + index)
                            } else {
                                self.upvalue_of(frame.closure, index)
                            });
                        }
                        let closure = self.heap.closure(function, upvalues);
                        self.stack.push(Value::Obj(closure));
                    }
                    Op::CloseUpvalue => {
                        self.close_upvalues(self.stack.len() - 1);
                        self.pop();
                    }
                    Op::Return => {
                        let result = self.pop();
                        self.close_upvalues(frame.base);
                        self.frames.pop();
                        if self.frames.is_empty() {
                            self.pop();
                            return Ok(());
                        }
                        self.stack.truncate(frame.base);
                        self.stack.push(result);
                        frame = self.frames.last().expect("a frame").clone();
                    }
                    Op::Class => {
                        self.maybe_collect();
                        let name = name!();
                        let class = self.heap.alloc(Obj::Class(Class { name, methods: FxHashMap::default() }));
                        self.stack.push(Value::Obj(class));
                    }
                    Op::Inherit => {
                        let superclass = match self.peek(1) {
                            Value::Obj(r) if matches!(self.heap.get(r), Obj::Class(_)) => r,
                            _ => fail!("Superclass must be a class."),
                        };
                        let Value::Obj(subclass) = self.peek(0) else { unreachable!("a class") };
                        let Obj::Class(s) = self.heap.get(superclass) else { unreachable!() };
                        let methods = s.methods.clone();
                        let Obj::Class(c) = self.heap.get_mut(subclass) else { unreachable!() };
                        c.methods.extend(methods);
                        self.pop();
                    }
                    Op::Method => {
                        let name = name!();
                        let Value::Obj(method) = self.peek(0) else { unreachable!("a closure") };
                        let Value::Obj(class) = self.peek(1) else { unreachable!("a class") };
                        let Obj::Class(c) = self.heap.get_mut(class) else { unreachable!() };
                        c.methods.insert(name, method);
                        self.pop();
                    }
                }
            }
        }

        fn upvalue_of(&self, closure: ObjRef, index: usize) -> ObjRef {
            match self.heap.get(closure) {
                Obj::Closure(c) => c.upvalues[index],
                _ => unreachable!("a frame runs a closure"),
            }
        }

        fn capture_upvalue(&mut self, slot: usize) -> ObjRef {
            match self.open_upvalues.binary_search_by_key(&slot, |&(s, _)| s) {
                Ok(i) => self.open_upvalues[i].1,
                Err(i) => {
                    let up = self.heap.alloc(Obj::Upvalue(Upvalue::Open(slot)));
                    self.open_upvalues.insert(i, (slot, up));
                    up
                }
            }
        }

        /// Closes the open upvalues at `from` and above.
        fn close_upvalues(&mut self, from: usize) {
            let first = self.open_upvalues.partition_point(|&(s, _)| s < from);
            for (slot, up) in self.open_upvalues.drain(first..) {
                *self.heap.get_mut(up) = Obj::Upvalue(Upvalue::Closed(self.stack[slot]));
            }
        }

        fn bind_method(&mut self, class: ObjRef, name: ObjRef) -> Run<()> {
            let Obj::Class(c) = self.heap.get(class) else { unreachable!("a class") };
            let Some(&method) = c.methods.get(&name) else {
                return self.error(format!("Undefined property '{}'.", self.heap.str(name)));
            };
            self.maybe_collect();
            let receiver = self.peek(0);
            let bound = self.heap.alloc(Obj::BoundMethod(BoundMethod { receiver, method }));
            self.pop();
            self.stack.push(Value::Obj(bound));
            Ok(())
        }

        fn call_value(&mut self, callee: Value, argc: usize) -> Run<()> {
            if let Value::Obj(r) = callee {
                match self.heap.get(r) {
                    Obj::Closure(_) => return self.call(r, argc),
                    Obj::BoundMethod(b) => {
                        let (receiver, method) = (b.receiver, b.method);
                        let at = self.stack.len() - argc - 1;
                        self.stack[at] = receiver;
                        return self.call(method, argc);
                    }
                    Obj::Class(c) => {
                        let init = c.methods.get(&self.init_string).copied();
                        self.maybe_collect();
                        let instance =
                            self.heap.alloc(Obj::Instance(Instance { class: r, fields: FxHashMap::default() }));
                        let at = self.stack.len() - argc - 1;
                        self.stack[at] = Value::Obj(instance);
                        return match init {
                            Some(init) => self.call(init, argc),
                            None if argc != 0 => self.error(format!("Expected 0 arguments but got {argc}.")),
                            None => Ok(()),
                        };
                    }
                    Obj::Native(f) => {
                        let f = *f;
                        let at = self.stack.len() - argc;
                        let result = f(&self.stack[at..]);
                        self.stack.truncate(at - 1);
                        self.stack.push(result);
                        return Ok(());
                    }
                    _ => {}
                }
            }
            self.error("Can only call functions and classes.".to_string())
        }

        fn call(&mut self, closure: ObjRef, argc: usize) -> Run<()> {
            let Obj::Closure(c) = self.heap.get(closure) else { unreachable!("a closure") };
            let function = c.function.clone();
            if argc != function.arity {
                return self.error(format!("Expected {} arguments but got {argc}.", function.arity));
            }
            if self.frames.len() == FRAMES_MAX {
                return self.error("Stack overflow.".to_string());
            }
            let base = self.stack.len() - argc - 1;
            self.frames.push(CallFrame { closure, function, ip: 0, base });
            Ok(())
        }

        fn invoke(&mut self, name: ObjRef, argc: usize) -> Run<()> {
            let Some(instance) = self.instance_of(self.peek(argc)) else {
                return self.error("Only instances have methods.".to_string());
            };
            let Obj::Instance(i) = self.heap.get(instance) else { unreachable!() };
            if let Some(&field) = i.fields.get(&name) {
                let at = self.stack.len() - argc - 1;
                self.stack[at] = field;
                return self.call_value(field, argc);
            }
            let class = i.class;
            self.invoke_from_class(class, name, argc)
        }

        fn invoke_from_class(&mut self, class: ObjRef, name: ObjRef, argc: usize) -> Run<()> {
            let Obj::Class(c) = self.heap.get(class) else { unreachable!("a class") };
            let Some(&method) = c.methods.get(&name) else {
                return self.error(format!("Undefined property '{}'.", self.heap.str(name)));
            };
            self.call(method, argc)
        }
    }
}

//! A VM written as a clox port in Rust writes it, with what jitgen once
//! refused or left the portal whole for: a private `run` method; errors
//! made by a generic method (`fn error<T>(&self, m: String) -> Run<T>`,
//! `type Run<T> = Result<T, RuntimeError>`) and `?`; `matches!` on a heap
//! object in a method `run` calls; a `Vec` of tuples (open cells); a heap
//! whose `name` method gives a `&str`, formatted into an error; a map the
//! analysis does not model, cloned into a local and moved into another
//! object's map; a binding of a `get_mut` match written through (`*c =
//! v`); an iterator's search giving a `Run<usize>` (its error a struct
//! owning its message); a collector whose `let`s bind iterators a heap
//! method takes; a native function (a `fn` pointer) called on a sub-slice
//! of the stack; a struct holding an enum, made and moved into the heap.
//! Each is compiled, or outlined as Rust one statement (or a run of
//! statements) at a time. Whole final states are compared with
//! `jit::plain`, through the portal, on random programs.

use jitgen::prelude::*;

#[jit_interpreter]
mod lox_like {
    use jitgen::prelude::*;
    use std::collections::BTreeMap;

    /// A cell: open (a stack slot) or closed over its value.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub enum Cell {
        Open(usize),
        Closed(i64),
    }

    /// A class: its name and methods.
    #[derive(Clone, Debug, PartialEq)]
    pub struct Class {
        pub name: String,
        pub methods: BTreeMap<u8, i64>,
    }

    /// A function of Rust a program can call.
    pub type Native = fn(&[i64]) -> i64;

    /// A cell bound to a class (as a bound method holds its receiver).
    #[derive(Clone, Debug, PartialEq)]
    pub struct Bound {
        pub cell: Cell,
        pub class: usize,
    }

    /// A heap object.
    #[derive(Clone, Debug)]
    pub enum Obj {
        Class(Class),
        Cell(Cell),
        Native(Native),
        Bound(Bound),
    }

    /// The objects, by index.
    #[derive(Debug, Default)]
    pub struct Heap {
        pub objects: Vec<Obj>,
        /// What the last collection saw: the roots' sum, and the cells.
        pub marked: (i64, usize),
    }

    fn sum(args: &[i64]) -> i64 {
        args.iter().fold(0i64, |a, b| a.wrapping_add(*b))
    }

    fn most(args: &[i64]) -> i64 {
        args.iter().copied().max().unwrap_or(-1)
    }

    impl Heap {
        /// Adds an object; its index.
        pub fn alloc(&mut self, o: Obj) -> usize {
            self.objects.push(o);
            self.objects.len() - 1
        }

        /// Marks from the roots and the open cells (a collector's
        /// entry, taking what it walks as iterators).
        pub fn mark(&mut self, roots: impl Iterator<Item = i64>, cells: impl Iterator<Item = usize>) {
            self.marked = (roots.fold(0i64, |a, b| a.wrapping_add(b)), cells.count());
        }

        pub fn get(&self, r: usize) -> &Obj {
            &self.objects[r]
        }

        pub fn get_mut(&mut self, r: usize) -> &mut Obj {
            &mut self.objects[r]
        }

        /// What an object is called.
        pub fn name(&self, r: usize) -> &str {
            match &self.objects[r] {
                Obj::Class(c) => &c.name,
                Obj::Cell(_) => "a cell",
                Obj::Native(_) => "a native",
                Obj::Bound(_) => "a bound cell",
            }
        }
    }

    /// A runtime error: its message.
    #[derive(Debug, PartialEq)]
    pub struct RuntimeError(pub String);

    type Run<T> = Result<T, RuntimeError>;

    pub struct Vm {
        pub code: Vec<u8>,
        pub ip: usize,
        pub stack: Vec<i64>,
        pub heap: Heap,
        /// Open cells, by the slot they point at.
        pub open: Vec<(usize, usize)>,
        pub fuel: u32,
    }

    impl Vm {
        fn error<T>(&self, message: String) -> Run<T> {
            Err(RuntimeError(message))
        }

        fn is_class(&self, v: i64) -> bool {
            v >= 0 && (v as usize) < self.heap.objects.len() && matches!(self.heap.get(v as usize), Obj::Class(_))
        }

        /// The object the top of the stack names, if any.
        fn object(&self) -> Run<usize> {
            match self.stack.last() {
                Some(&v) if v >= 0 && (v as usize) < self.heap.objects.len() => Ok(v as usize),
                _ => self.error("Not an object.".to_string()),
            }
        }

        /// Collects, when there is anything to collect: the iterators the
        /// heap takes are bound by `let`s (outlined together).
        fn collect(&mut self) {
            if self.stack.is_empty() {
                return;
            }
            let n = self.heap.objects.len();
            let roots = self.stack.iter().copied().chain(self.open.iter().map(|&(s, _)| s as i64));
            let cells = self.open.iter().map(|&(_, c)| c).filter(|&c| c < n);
            self.heap.mark(roots, cells);
        }

        /// Closes the open cells at `from` and above.
        fn close(&mut self, from: usize) {
            while let Some(&(slot, cell)) = self.open.last() {
                if slot < from {
                    break;
                }
                let v = self.stack.get(slot).copied().unwrap_or(-1);
                *self.heap.get_mut(cell) = Obj::Cell(Cell::Closed(v));
                self.open.pop();
            }
        }

        /// Ops, two bytes each (op, k): 0 pushes k; 1 adds the top two
        /// (neither may be a class); 2 makes class k; 3 gives the class on
        /// top method k; 4 copies the methods of the class below the top
        /// into the one on top; 5 makes a cell open at slot k; 6 closes the
        /// cells at k and above; 7 writes k through the cell on top; 8
        /// pushes whether the top is a class; 9 jumps to op pair k while
        /// fuel lasts; 10 pushes where the first cell is (an error naming
        /// k if there is none: Rust that gives a `Run<usize>`, outlined);
        /// 11 fails unless there is a class (a `Run<()>`, outlined); 12
        /// collects; 13 makes a native function (sum or max by k's parity);
        /// 14 calls the native on top with the k values below it; 15 binds
        /// a closed cell of k to the class on top; else ends.
        fn run(&mut self) -> Run<usize> {
            loop {
                hint!(global_merge_point);
                let ip = hint!(self.ip, concrete);
                if ip + 1 >= self.code.len() || self.fuel == 0 {
                    return Ok(self.stack.len());
                }
                self.fuel -= 1;
                let op = self.code[ip];
                let k = self.code[ip + 1];
                self.ip = ip + 2;
                match op {
                    0 => self.stack.push(k as i64),
                    1 => {
                        if self.stack.len() < 2 {
                            return self.error("Stack underflow.".to_string());
                        }
                        let b = self.stack.pop().expect("two values");
                        let a = self.stack.pop().expect("two values");
                        if self.is_class(a) {
                            return self.error(format!("Cannot add {}.", self.heap.name(a as usize)));
                        }
                        self.stack.push(a.wrapping_add(b));
                    }
                    2 => {
                        let r = self.heap.objects.len();
                        let name = format!("C{k}");
                        self.heap.objects.push(Obj::Class(Class { name, methods: BTreeMap::new() }));
                        self.stack.push(r as i64);
                    }
                    3 => {
                        let r = self.object()?;
                        match self.heap.get_mut(r) {
                            Obj::Class(c) => {
                                c.methods.insert(k, k as i64 * 2);
                            }
                            _ => return self.error("Only classes have methods.".to_string()),
                        }
                    }
                    4 => {
                        if self.stack.len() < 2 || !self.is_class(self.stack[self.stack.len() - 2]) {
                            return self.error("Superclass must be a class.".to_string());
                        }
                        let sub = self.object()?;
                        if !self.is_class(sub as i64) {
                            return self.error("Subclass must be a class.".to_string());
                        }
                        let sup = self.stack[self.stack.len() - 2] as usize;
                        let Obj::Class(s) = self.heap.get(sup) else { unreachable!("a class") };
                        let methods = s.methods.clone();
                        let Obj::Class(c) = self.heap.get_mut(sub) else { unreachable!("a class") };
                        c.methods.extend(methods);
                    }
                    5 => {
                        let r = self.heap.objects.len();
                        self.heap.objects.push(Obj::Cell(Cell::Open(k as usize)));
                        self.open.push((k as usize, r));
                        self.stack.push(r as i64);
                    }
                    6 => self.close(k as usize),
                    7 => {
                        let r = self.object()?;
                        let cell = match self.heap.get_mut(r) {
                            Obj::Cell(Cell::Closed(c)) => {
                                *c = k as i64;
                                true
                            }
                            Obj::Cell(Cell::Open(s)) => {
                                let s = *s;
                                if s < self.stack.len() {
                                    self.stack[s] = k as i64;
                                }
                                true
                            }
                            _ => false,
                        };
                        if !cell {
                            return self.error(format!("{} is not a cell.", self.heap.name(r)));
                        }
                    }
                    8 => {
                        let top = self.stack.last().copied().unwrap_or(-1);
                        let yes = self.is_class(top);
                        self.stack.push(yes as i64);
                    }
                    9 => self.ip = (k as usize * 2) % self.code.len(),
                    10 => {
                        let found: Run<usize> = self
                            .heap
                            .objects
                            .iter()
                            .position(|o| matches!(o, Obj::Cell(_)))
                            .ok_or_else(|| RuntimeError(format!("No cell for {k}.")));
                        match found {
                            Ok(i) => self.stack.push(i as i64),
                            Err(e) => return Err(e),
                        }
                    }
                    11 => {
                        let classes: Run<()> = self
                            .heap
                            .objects
                            .iter()
                            .find(|o| matches!(o, Obj::Class(_)))
                            .map(|_| ())
                            .ok_or_else(|| RuntimeError("No class.".to_string()));
                        if let Err(e) = classes {
                            return Err(e);
                        }
                    }
                    12 => self.collect(),
                    13 => {
                        let f: Native = if k % 2 == 0 { sum } else { most };
                        let r = self.heap.alloc(Obj::Native(f));
                        self.stack.push(r as i64);
                    }
                    14 => {
                        let r = self.object()?;
                        match self.heap.get(r) {
                            Obj::Native(f) => {
                                let f = *f;
                                let top = self.stack.len() - 1;
                                let at = top.saturating_sub(k as usize);
                                let result = f(&self.stack[at..top]);
                                self.stack.truncate(at);
                                self.stack.push(result);
                            }
                            _ => return self.error(format!("Cannot call {}.", self.heap.name(r))),
                        }
                    }
                    15 => {
                        let class = self.object()?;
                        if !self.is_class(class as i64) {
                            return self.error("Only classes bind.".to_string());
                        }
                        let r = self.heap.alloc(Obj::Bound(Bound { cell: Cell::Closed(k as i64), class }));
                        self.stack.push(r as i64);
                    }
                    _ => return Ok(self.stack.len()),
                }
            }
        }

        /// Runs the program: 0 through `jit::plain`, else the portal (`run`
        /// is private, as a clox port writes it, so `jit::specialize` has
        /// no copy of it).
        pub fn interpret(&mut self, way: u8) -> Run<usize> {
            match way {
                0 => super::lox_like::jit::plain::Vm::run(self),
                _ => self.run(),
            }
        }
    }
}

use lox_like::{Heap, Vm};

fn fresh(code: &[u8], fuel: u32) -> Vm {
    Vm { code: code.to_vec(), ip: 0, stack: vec![], heap: Heap::default(), open: vec![], fuel }
}

/// The whole final state.
fn whole(mut vm: Vm, way: u8) -> String {
    let r = vm.interpret(way);
    format!("{r:?} {:?} {:?} {:?} {} {}", vm.stack, vm.heap, vm.open, vm.ip, vm.fuel)
}

/// The whole final state through the portal is `jit::plain`'s.
fn check(code: &[u8], fuel: u32) {
    let want = whole(fresh(code, fuel), 0);
    assert_eq!(whole(fresh(code, fuel), 1), want, "portal {code:?} {fuel}");
}

#[test]
fn a_clox_style_vm_compiles_around_what_it_outlines() {
    lox_like::jit::config().set_threshold(0);
    lox_like::jit::config().set_turn_checks(1);
    // Classes with methods, inherited; cells opened, written, closed and
    // written again; a class added (an error naming it); a loop.
    let code = [2u8, 1, 3, 4, 2, 2, 4, 0, 8, 0, 0, 3, 5, 1, 7, 9, 6, 0, 7, 5, 0, 1, 1, 0, 9, 0];
    for fuel in [1u32, 3, 7, 11, 40] {
        check(&code, fuel);
    }
    // Where the first cell is, before and after one is made.
    let code = [10u8, 3, 0, 1, 5, 0, 10, 1, 11, 0, 2, 4, 11, 1, 1, 0, 9, 1];
    for fuel in [1u32, 4, 9, 30] {
        check(&code, fuel);
    }
    // The portal is not left to Rust: only statements of it (outlined),
    // `Heap::name` (its string literals), `Heap::mark` (its iterators) and
    // the natives (their slices) are.
    let left = lox_like::jit::left_to_rust();
    let functions = ["Heap::name:", "Heap::mark:", "sum:", "most:"];
    assert!(left.iter().all(|l| l.contains("(outlined)") || functions.iter().any(|f| l.starts_with(f))), "{left:?}");
    // The statement calling `Heap::name` (line 194) is outlined: its
    // `&self` is lent, but its `&str` result is not one compiled code takes.
    assert!(left.iter().any(|l| l.contains("(outlined)") && l.contains("lox_style.rs:194:")), "{left:?}");
    assert!(lox_like::jit::stats().compilations > 0, "{:?}", lox_like::jit::last_decline());
}

#[test]
fn collections_natives_and_bound_objects_compile_around_rust() {
    lox_like::jit::config().set_threshold(0);
    lox_like::jit::config().set_turn_checks(1);
    // Values and a cell collected; a native sum of two values and a max
    // of one; a class bound twice; a loop back to the natives.
    let code = [0u8, 5, 0, 7, 5, 0, 12, 0, 13, 0, 14, 2, 13, 1, 14, 1, 2, 3, 15, 9, 15, 2, 12, 0, 9, 4];
    for fuel in [1u32, 5, 8, 10, 13, 30] {
        check(&code, fuel);
    }
    // Errors: a native called on nothing, a value bound, a class called.
    for code in [[13u8, 0, 14, 3, 12, 0], [0, 1, 15, 1, 12, 0], [2, 0, 14, 0, 12, 0]] {
        check(&code, 10);
    }
    let left = lox_like::jit::left_to_rust();
    // The collector's iterators, outlined together with the call taking them.
    assert!(left.iter().any(|l| l.contains("(outlined): the method `iter` on `Vec<i64>`")), "{left:?}");
    // A sub-slice, outlined with the native's call.
    assert!(left.iter().any(|l| l.contains("(outlined): indexing with a range")), "{left:?}");
    // A struct holding an enum, which residual code does not make: its
    // allocation runs as Rust.
    assert!(left.iter().any(|l| l.contains("(outlined): allocating a `Bound`")), "{left:?}");
    assert!(lox_like::jit::stats().compilations > 0, "{:?}", lox_like::jit::last_decline());
    assert_eq!(lox_like::jit::last_decline(), None);
}

#[test]
fn random_programs_of_a_clox_style_vm_agree_with_plain() {
    lox_like::jit::config().set_threshold(0);
    lox_like::jit::config().set_turn_checks(1);
    let mut rng = crate::common::Rng(0x10_c5);
    for _ in 0..crate::common::how_many(200) {
        let code = rng.op_pairs(14, 17);
        check(&code, 1 + rng.below(80) as u32);
    }
}

//! Frames that own what the analysis does not model, as a clox port in
//! Rust keeps them: the current frame is a `.clone()` of the top of a
//! `Vec` of a struct holding an `Rc` (derived `Clone`, not `Copy`), changed
//! on its own, written back whole (`*frames.last_mut().expect(..) =
//! frame.clone()`) before a call, and taken again after it. A call is a
//! method left to Rust. The clone is Rust's own, one residual call: the
//! copy compiled code holds is an object it owns. The `Rc`'s count shows
//! whether each copy is made and dropped where Rust makes and drops it.
//! Whole final states (counts included) are compared with `jit::plain`,
//! through the portal and through `jit::specialize`.

use jitgen::prelude::*;

#[jit_interpreter]
mod owned {
    use jitgen::prelude::*;
    use std::rc::Rc;

    /// What a frame runs: how many arguments it takes, and a mark.
    #[derive(Debug, PartialEq)]
    pub struct Function {
        pub arity: usize,
        pub mark: i64,
    }

    /// A call under way.
    #[derive(Clone, Debug, PartialEq)]
    pub struct Frame {
        pub function: Rc<Function>,
        pub ip: usize,
        pub base: usize,
    }

    pub struct Vm {
        pub frames: Vec<Frame>,
        pub stack: Vec<i64>,
        pub functions: Vec<Rc<Function>>,
    }

    impl Vm {
        /// Pushes a frame for function `k` (at most 12 deep), its
        /// arguments the top `arity` values, running from op pair `at`.
        fn call(&mut self, k: usize, at: usize) {
            if self.frames.len() < 12 {
                let function = self.functions[k % self.functions.len()].clone();
                let base = self.stack.len() - function.arity.min(self.stack.len());
                self.frames.push(Frame { function, ip: at, base });
            }
        }

        /// Ops, two bytes each (op, k): 0 pushes k; 1 adds the top two; 2
        /// calls function k at op pair k; 3 returns (the last frame ends the
        /// run); 4 pushes the frame's mark and base; 5 jumps to op pair k;
        /// 6 sets the frame's base; 7 writes the frame back and changes the
        /// copy; 8 pushes the count of the frame's function; else ends.
        /// `fuel` bounds the steps.
        pub fn run(&mut self, code: &[u8], mut fuel: u32) -> i64 {
            let mut frame = self.frames.last().expect("a frame").clone();
            loop {
                hint!(global_merge_point);
                let ip = hint!(frame.ip, promote);
                if fuel == 0 || ip + 1 >= code.len() {
                    *self.frames.last_mut().expect("a frame") = frame.clone();
                    return self.stack.len() as i64;
                }
                fuel -= 1;
                let op = code[ip];
                let k = code[ip + 1] as usize;
                frame.ip = ip + 2;
                match op {
                    0 => self.stack.push(k as i64),
                    1 => {
                        if self.stack.len() >= 2 {
                            let b = self.stack.pop().expect("two values");
                            let a = self.stack.pop().expect("two values");
                            self.stack.push(a.wrapping_add(b));
                        }
                    }
                    2 => {
                        *self.frames.last_mut().expect("a frame") = frame.clone();
                        self.call(k, (k * 2) % code.len());
                        frame = self.frames.last().expect("a frame").clone();
                    }
                    3 => {
                        if self.frames.len() == 1 {
                            return self.stack.len() as i64;
                        }
                        self.frames.pop();
                        self.stack.truncate(frame.base);
                        frame = self.frames.last().expect("a frame").clone();
                    }
                    4 => {
                        let v = frame.function.mark * 100 + frame.base as i64;
                        self.stack.push(v);
                    }
                    5 => frame.ip = (k * 2) % code.len(),
                    6 => frame.base = self.stack.len(),
                    7 => {
                        *self.frames.last_mut().expect("a frame") = frame.clone();
                        frame.base += 1;
                    }
                    8 => {
                        let n = Rc::strong_count(&frame.function) as i64;
                        self.stack.push(n);
                    }
                    _ => return -1,
                }
            }
        }
    }
}

use std::rc::Rc;

use owned::{Frame, Function, Vm};

/// Two functions, each also held by the frames.
fn fresh() -> (Vm, Vec<Rc<Function>>) {
    let functions: Vec<Rc<Function>> = (0..2).map(|i| Rc::new(Function { arity: i as usize, mark: 7 + i })).collect();
    let vm = Vm {
        frames: vec![Frame { function: functions[0].clone(), ip: 0, base: 0 }],
        stack: vec![],
        functions: functions.clone(),
    };
    (vm, functions)
}

/// The whole final state: the result, the frames, the stack, and the count
/// of each function (what holds it: the VM, the frames, and `fresh`'s).
fn whole(r: i64, vm: Vm, functions: Vec<Rc<Function>>) -> (i64, Vec<Frame>, Vec<i64>, Vec<usize>) {
    let frames = vm.frames.clone();
    let counts = functions.iter().map(Rc::strong_count).collect();
    (r, frames, vm.stack, counts)
}

fn check(code: &[u8], fuel: u32) {
    let (mut vm, fs) = fresh();
    let want = whole(owned::jit::plain::Vm::run(&mut vm, code, fuel), vm, fs);
    let (mut vm, fs) = fresh();
    assert_eq!(whole(vm.run(code, fuel), vm, fs), want, "{code:?} {fuel}");
    let (mut vm, fs) = fresh();
    assert_eq!(whole(owned::jit::specialize::Vm::run(&mut vm, code, fuel), vm, fs), want, "{code:?} {fuel}");
}

#[test]
fn owned_frames_are_cloned_and_dropped_as_rust_does_in_compiled_code() {
    owned::jit::config().set_threshold(0);
    // Calls (the frame written back, a callee pushed and cloned), the
    // function's mark read through the `Rc`, counts, the frame written back
    // and then changed, returns.
    let code = [0u8, 5, 2, 4, 8, 0, 4, 0, 7, 0, 3, 0, 6, 0, 4, 0, 8, 0, 2, 1, 1, 0, 3, 0];
    for fuel in [1u32, 5, 9, 40, 200] {
        check(&code, fuel);
    }
    // What moves a frame in or out of the `Vec`, and the call, run as
    // Rust (outlined); the portal itself, and the clones, compile.
    let left = owned::jit::left_to_rust();
    assert!(left.iter().all(|l| l.contains("(outlined)")), "{left:?}");
    assert!(left.iter().any(|l| l.contains("`.pop()` of a list of `Frame`")), "{left:?}");
    assert!(owned::jit::stats().compilations > 0, "{:?}", owned::jit::last_decline());
}

/// With at most two cases per flexswitch, the promotion of `frame.ip`
/// hands over to the interpreter often, after calls and returns have
/// dropped the handed frame and cloned others (one may take its address):
/// the interpreter gets back the frame compiled code holds.
#[test]
fn frames_cloned_again_are_handed_back_at_hand_overs() {
    owned::jit::config().set_threshold(0);
    let before = owned::jit::config().limits().max_cases;
    owned::jit::config().set_max_cases(2);
    // Calls and returns in a loop, then ops at new positions.
    let code = [2u8, 2, 3, 0, 2, 3, 3, 0, 0, 1, 2, 4, 3, 0, 4, 0, 5, 0];
    for fuel in [3u32, 7, 12, 30, 90] {
        check(&code, fuel);
    }
    let mut rng = crate::common::Rng(0xf4a3e5);
    for _ in 0..crate::common::how_many(200) {
        let pairs = 2 + rng.below(10) as usize;
        let code: Vec<u8> = (0..pairs)
            .flat_map(|_| [[2u8, 3, 3, 0, 4, 5][rng.below(6) as usize], rng.below(pairs as u64) as u8])
            .collect();
        check(&code, 1 + rng.below(100) as u32);
    }
    owned::jit::config().set_max_cases(before as u32);
}

#[test]
fn random_programs_over_owned_frames_agree_with_plain() {
    owned::jit::config().set_threshold(0);
    let mut rng = crate::common::Rng(0x0_bed);
    for _ in 0..crate::common::how_many(200) {
        let code = rng.op_pairs(12, 10);
        check(&code, 1 + rng.below(120) as u32);
    }
}

/// Frames whose code is their function's, behind the `Rc`: the function
/// and the ip are promoted (`hint!(&*frame.function, promote)`, the address
/// of what the `Rc` points to, as a statement: the field is then known), so
/// each function's code is green and its dispatch compiled away.
#[jit_interpreter]
mod promoted {
    use jitgen::prelude::*;
    use std::rc::Rc;

    #[derive(Debug, PartialEq)]
    pub struct Function {
        pub code: Vec<u8>,
        pub arity: usize,
    }

    #[derive(Clone, Debug, PartialEq)]
    pub struct Frame {
        pub function: Rc<Function>,
        pub ip: usize,
        pub base: usize,
    }

    pub struct Vm {
        pub frames: Vec<Frame>,
        pub stack: Vec<i64>,
        pub functions: Vec<Rc<Function>>,
    }

    impl Vm {
        fn call(&mut self, k: usize) {
            if self.frames.len() < 12 {
                let function = self.functions[k % self.functions.len()].clone();
                let base = self.stack.len() - function.arity.min(self.stack.len());
                self.frames.push(Frame { function, ip: 0, base });
            }
        }

        /// Ops, two bytes each (op, k): 0 pushes k; 1 adds the top two; 2
        /// calls function k; 3 returns (the last frame ends the run); 4
        /// pushes the count of the frame's function; 5 jumps to op pair k;
        /// else ends. `fuel` bounds the steps.
        pub fn run(&mut self, mut fuel: u32) -> i64 {
            let mut frame = self.frames.last().expect("a frame").clone();
            loop {
                hint!(global_merge_point);
                // The function promoted in place (its field read again
                // below is known), the ip into a local.
                let _ = hint!(&*frame.function, promote);
                let ip = hint!(frame.ip, promote);
                if fuel == 0 || ip + 1 >= frame.function.code.len() {
                    *self.frames.last_mut().expect("a frame") = frame.clone();
                    return self.stack.len() as i64;
                }
                fuel -= 1;
                let op = frame.function.code[ip];
                let k = frame.function.code[frame.ip + 1] as usize;
                frame.ip = ip + 2;
                match op {
                    0 => self.stack.push(k as i64),
                    1 => {
                        if self.stack.len() >= 2 {
                            let b = self.stack.pop().expect("two values");
                            let a = self.stack.pop().expect("two values");
                            self.stack.push(a.wrapping_add(b));
                        }
                    }
                    2 => {
                        *self.frames.last_mut().expect("a frame") = frame.clone();
                        self.call(k);
                        frame = self.frames.last().expect("a frame").clone();
                    }
                    3 => {
                        if self.frames.len() == 1 {
                            return self.stack.len() as i64;
                        }
                        self.frames.pop();
                        self.stack.truncate(frame.base);
                        frame = self.frames.last().expect("a frame").clone();
                    }
                    4 => {
                        let n = Rc::strong_count(&frame.function) as i64;
                        self.stack.push(n);
                    }
                    5 => frame.ip = (k * 2) % frame.function.code.len(),
                    _ => return -1,
                }
            }
        }
    }
}

/// A VM over functions with these codes, and the functions (their counts
/// are part of the final state).
fn fresh_promoted(codes: &[Vec<u8>]) -> (promoted::Vm, Vec<Rc<promoted::Function>>) {
    let functions: Vec<Rc<promoted::Function>> =
        codes.iter().enumerate().map(|(i, c)| Rc::new(promoted::Function { code: c.clone(), arity: i % 2 })).collect();
    let vm = promoted::Vm {
        frames: vec![promoted::Frame { function: functions[0].clone(), ip: 0, base: 0 }],
        stack: vec![],
        functions: functions.clone(),
    };
    (vm, functions)
}

type PromotedState = (i64, Vec<promoted::Frame>, Vec<i64>, Vec<usize>);

fn whole_promoted(r: i64, vm: promoted::Vm, functions: Vec<Rc<promoted::Function>>) -> PromotedState {
    let counts = functions.iter().map(Rc::strong_count).collect();
    (r, vm.frames.clone(), vm.stack, counts)
}

fn check_promoted(codes: &[Vec<u8>], fuel: u32) {
    let (mut vm, fs) = fresh_promoted(codes);
    let want = whole_promoted(promoted::jit::plain::Vm::run(&mut vm, fuel), vm, fs);
    let (mut vm, fs) = fresh_promoted(codes);
    assert_eq!(whole_promoted(vm.run(fuel), vm, fs), want, "{codes:?} {fuel}");
    let (mut vm, fs) = fresh_promoted(codes);
    let got = whole_promoted(promoted::jit::specialize::Vm::run(&mut vm, fuel), vm, fs);
    assert_eq!(got, want, "{codes:?} {fuel}");
}

#[test]
fn a_promoted_rc_function_makes_its_code_green() {
    promoted::jit::config().set_threshold(0);
    // A loop in function 0 calling function 1, which counts its callers.
    let codes = vec![vec![0u8, 3, 2, 1, 1, 0, 5, 1], vec![0, 2, 4, 0, 1, 0, 3, 0]];
    for fuel in [1u32, 4, 9, 30, 200] {
        check_promoted(&codes, fuel);
    }
    // Each op's code was compiled for its function and ip: no load of the
    // program in residual code, only the switches on the function's
    // address and the ip.
    let listings = promoted::jit::portal_listings().join("\n");
    assert!(listings.contains("flexswitch"), "{listings}");
    assert!(!listings.contains("load.u8"), "{listings}");
    assert!(promoted::jit::stats().compilations > 0, "{:?}", promoted::jit::last_decline());
}

#[test]
fn random_programs_over_promoted_functions_agree_with_plain() {
    promoted::jit::config().set_threshold(0);
    let mut rng = crate::common::Rng(0x0_f00d);
    for _ in 0..crate::common::how_many(200) {
        let n = 1 + rng.below(3) as usize;
        let codes: Vec<Vec<u8>> = (0..n)
            .map(|_| {
                let pairs = 1 + rng.below(8) as usize;
                (0..pairs).flat_map(|_| [rng.below(7) as u8, rng.below(pairs.max(n) as u64) as u8]).collect()
            })
            .collect();
        check_promoted(&codes, 1 + rng.below(100) as u32);
    }
}

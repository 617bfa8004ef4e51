//! Frames of a `Copy` struct, as a Rust VM keeps them: the current frame is
//! a copy of the top of a `Vec` (`*frames.last().unwrap()`, `.clone()`),
//! changed on its own and written back whole (`*frames.last_mut().unwrap()
//! = frame`) before a call. Structs are pointers in jitgen's memory model,
//! so each copy must be one: a change of the copy must not show in the
//! `Vec`, nor a `push` moving the `Vec` leave the copy dangling. Whole final
//! states are compared with `jit::plain`, through the portal and through
//! `jit::specialize`.

use jitgen::prelude::*;

#[jit_interpreter]
mod copies {
    use jitgen::prelude::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Frame {
        pub ip: usize,
        pub base: usize,
    }

    pub struct Vm {
        pub frames: Vec<Frame>,
        pub stack: Vec<i64>,
    }

    impl Vm {
        /// Ops, two bytes each (op, k): 0 pushes k; 1 adds the top two; 2
        /// calls op pair k (at most 12 frames deep); 3 returns (the last
        /// frame ends the run); 4 mixes a changed clone of the frame into
        /// the top; 5 jumps to op pair k; 6 sets the frame's base; 7 writes
        /// the frame back and changes the copy; else ends. `fuel` bounds
        /// the steps.
        pub fn run(&mut self, code: &[u8], mut fuel: u32) -> i64 {
            let mut frame = *self.frames.last().unwrap();
            loop {
                hint!(global_merge_point);
                let ip = hint!(frame.ip, promote);
                if fuel == 0 || ip + 1 >= code.len() {
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
                            let b = self.stack.pop().unwrap();
                            let a = self.stack.pop().unwrap();
                            self.stack.push(a.wrapping_add(b));
                        }
                    }
                    2 => {
                        if self.frames.len() < 12 {
                            *self.frames.last_mut().unwrap() = frame;
                            let callee = Frame { ip: (k * 2) % code.len(), base: self.stack.len() };
                            self.frames.push(callee);
                            frame = callee;
                        }
                    }
                    3 => {
                        if self.frames.len() == 1 {
                            return self.stack.len() as i64;
                        }
                        self.frames.pop();
                        frame = *self.frames.last().unwrap();
                    }
                    4 => {
                        let mut other = frame.clone();
                        other.base += 3;
                        let mix = (other.base * 10 + frame.base) as i64;
                        self.stack.push(mix);
                    }
                    5 => frame.ip = (k * 2) % code.len(),
                    6 => frame.base = self.stack.len(),
                    7 => {
                        *self.frames.last_mut().unwrap() = frame;
                        frame.base += 1;
                        let top = self.frames[self.frames.len() - 1];
                        self.stack.push(top.base as i64 - frame.base as i64);
                    }
                    _ => return -1,
                }
            }
        }
    }
}

use copies::{Frame, Vm};

fn fresh() -> Vm {
    Vm { frames: vec![Frame { ip: 0, base: 0 }], stack: vec![] }
}

/// The whole final state: the result, the frames and the stack.
fn whole(r: i64, vm: Vm) -> (i64, Vec<Frame>, Vec<i64>) {
    (r, vm.frames, vm.stack)
}

fn check(code: &[u8], fuel: u32) {
    let mut vm = fresh();
    let want = whole(copies::jit::plain::Vm::run(&mut vm, code, fuel), vm);
    let mut vm = fresh();
    assert_eq!(whole(vm.run(code, fuel), vm), want, "{code:?} {fuel}");
    let mut vm = fresh();
    assert_eq!(whole(copies::jit::specialize::Vm::run(&mut vm, code, fuel), vm), want, "{code:?} {fuel}");
}

#[test]
fn copies_of_frames_stay_copies_in_compiled_code() {
    copies::jit::config().set_threshold(0);
    // Calls (a frame written back, a callee pushed: the Vec may move), a
    // clone changed, the frame written back and then changed, returns.
    let code = [0u8, 5, 2, 4, 4, 0, 7, 0, 3, 0, 6, 0, 4, 0, 7, 0, 2, 4, 1, 0, 3, 0];
    for fuel in [1u32, 5, 9, 40, 200] {
        check(&code, fuel);
    }
    assert!(copies::jit::left_to_rust().is_empty(), "{:?}", copies::jit::left_to_rust());
    assert!(copies::jit::stats().compilations > 0, "{:?}", copies::jit::last_decline());
}

#[test]
fn random_programs_over_copied_frames_agree_with_plain() {
    copies::jit::config().set_threshold(0);
    let mut rng = crate::common::Rng(0xc0_9e5);
    for _ in 0..crate::common::how_many(200) {
        let code = rng.op_pairs(12, 9);
        check(&code, 1 + rng.below(120) as u32);
    }
}

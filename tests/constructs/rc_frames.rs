//! A frame in memory that a dispatch promotes at every instruction, as a
//! clox port in Rust writes it: the current frame is a clone of the top of
//! a `Vec` of a struct holding an `Rc` of its function (so it is a real
//! object, not a virtual one), and each turn promotes `&*frame.function`
//! and `frame.ip`. A compilation knows what its path stored and loaded:
//! the promoted function makes the `Rc`'s pointer known, the `ip` it stored
//! is known when read back. So a run of instructions is one
//! piece of code, not a switch per instruction. Calls and returns assign
//! the current frame a clone of the new top, as clox ports do: the
//! assignment is written in place, field by field, the `Rc` cloned into
//! its place by residual code that changes its counts (no object made and
//! dropped, nothing outlined, Rust's `drop` called where a count reaches
//! zero), and a `Copy` handle beside it copied. Whole final states, the `Rc`s' counts among them, are
//! compared with `jit::plain`, on random programs too.

use jitgen::prelude::*;

#[jit_interpreter]
mod rc_frames {
    use jitgen::prelude::*;
    use std::collections::HashMap;
    use std::rc::Rc;

    /// A function: its code, two bytes per op.
    #[derive(Debug, PartialEq)]
    pub struct Function {
        pub code: Vec<u8>,
    }

    /// Where a call was made from (a handle, copied with its frame).
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Caller(pub u32);

    /// The call under way.
    #[derive(Clone, Debug, PartialEq)]
    pub struct Frame {
        pub function: Rc<Function>,
        pub ip: usize,
        pub caller: Caller,
    }

    /// A global's value.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
    pub enum Global {
        Int(i64),
        Flag(u32, bool),
        Unset,
    }

    pub struct Vm {
        pub frames: Vec<Frame>,
        pub stack: Vec<Global>,
        pub globals: HashMap<u8, Global>,
        pub fuel: u32,
    }

    impl Vm {
        /// Ops (op, k): 0 pushes k; 1 adds the top two; 2 pushes global k;
        /// 3 stores the top in global k; 4 jumps back to op pair k while
        /// the top is positive, counting it down; 5 drops the top; 6 pushes
        /// a flag; 7 calls op pair k (at most 6 frames deep); 8 returns
        /// (not from the first frame); else ends. `fuel` bounds the steps.
        pub fn run(&mut self) -> i64 {
            let mut frame = self.frames.last().expect("a frame").clone();
            loop {
                hint!(global_merge_point);
                let _ = hint!(&*frame.function, promote);
                let _ = hint!(frame.ip, promote);
                if frame.ip + 1 >= frame.function.code.len() || self.fuel == 0 {
                    break;
                }
                self.fuel -= 1;
                let op = frame.function.code[frame.ip];
                let k = frame.function.code[frame.ip + 1];
                frame.ip += 2;
                match op {
                    0 => self.stack.push(Global::Int(k as i64)),
                    1 => {
                        // (Both read in place, then dropped at once, as
                        // clox ports write a binary operation.)
                        if self.stack.len() >= 2 {
                            let b = self.stack[self.stack.len() - 1];
                            let a = self.stack[self.stack.len() - 2];
                            self.stack.truncate(self.stack.len() - 2);
                            self.stack.push(match (a, b) {
                                (Global::Int(a), Global::Int(b)) => Global::Int(a.wrapping_add(b)),
                                _ => Global::Unset,
                            });
                        }
                    }
                    2 => {
                        let v = self.globals.get(&k).copied().unwrap_or(Global::Unset);
                        self.stack.push(v);
                    }
                    3 => {
                        let v = self.stack.last().copied().unwrap_or(Global::Unset);
                        self.globals.insert(k, v);
                    }
                    4 => {
                        if let Some(Global::Int(top)) = self.stack.pop() {
                            if top > 0 {
                                self.stack.push(Global::Int(top - 1));
                                frame.ip = 2 * k as usize;
                            }
                        }
                    }
                    5 => {
                        self.stack.pop();
                    }
                    6 => self.stack.push(Global::Flag(k as u32, k % 2 == 0)),
                    7 => {
                        if self.frames.len() < 6 {
                            *self.frames.last_mut().expect("a frame") = frame.clone();
                            let caller = Caller(frame.ip as u32);
                            self.frames.push(Frame { function: frame.function.clone(), ip: 2 * k as usize, caller });
                            frame = self.frames.last().expect("a frame").clone();
                        }
                    }
                    8 => {
                        if self.frames.len() > 1 {
                            self.frames.pop();
                            frame = self.frames.last().expect("a frame").clone();
                        }
                    }
                    _ => break,
                }
            }
            *self.frames.last_mut().expect("a frame") = frame.clone();
            self.stack.len() as i64
        }

        /// Runs the program: 0 through `jit::plain`, 1 the portal, 2
        /// `jit::specialize`.
        pub fn interpret(&mut self, way: u8) -> i64 {
            match way {
                0 => super::rc_frames::jit::plain::Vm::run(self),
                1 => self.run(),
                _ => super::rc_frames::jit::specialize::Vm::run(self),
            }
        }
    }
}

use rc_frames::{Frame, Function, Vm};

fn fresh(code: &[u8], fuel: u32) -> Vm {
    let function = std::rc::Rc::new(Function { code: code.to_vec() });
    Vm {
        frames: vec![Frame { function, ip: 0, caller: rc_frames::Caller(u32::MAX) }],
        stack: vec![],
        globals: Default::default(),
        fuel,
    }
}

/// The whole final state.
fn whole(mut vm: Vm, way: u8) -> String {
    let r = vm.interpret(way);
    let mut globals: Vec<_> = vm.globals.iter().collect();
    globals.sort();
    let counts: Vec<usize> = vm.frames.iter().map(|f| std::rc::Rc::strong_count(&f.function)).collect();
    format!("{r} {:?} {:?} {globals:?} {} {counts:?}", vm.frames, vm.stack, vm.fuel)
}

/// The whole final state through the portal and through `jit::specialize`
/// is `jit::plain`'s.
fn check(code: &[u8], fuel: u32) {
    let want = whole(fresh(code, fuel), 0);
    assert_eq!(whole(fresh(code, fuel), 1), want, "portal {code:?} {fuel}");
    assert_eq!(whole(fresh(code, fuel), 2), want, "specialize {code:?} {fuel}");
}

#[test]
fn frames_in_memory_switch_where_they_change_and_agree_with_plain() {
    rc_frames::jit::config().set_threshold(0);
    // A loop of seventeen instructions: a global read and written, values
    // pushed and added (more than a compilation keeps facts of), a
    // countdown. (Through the portal first: the counts are its code's.)
    let code =
        [0u8, 40, 2, 7, 0, 3, 1, 0, 3, 7, 5, 0, 6, 1, 6, 2, 0, 3, 6, 4, 1, 0, 1, 0, 1, 0, 5, 0, 2, 7, 5, 0, 4, 1, 9, 0];
    assert_eq!(whole(fresh(&code, 1000), 1), whole(fresh(&code, 1000), 0));
    let s = rc_frames::jit::stats();
    assert!(s.compilations > 0 && s.declined == 0, "{s:?} {:?}", rc_frames::jit::last_decline());
    // Fewer switches than the loop has instructions (14: where the loop
    // head first widened the `ip`, and after the call and the return, which
    // assign the frame), where each instruction once made two: one on the
    // function it had promoted already, one on the `ip` it had just stored
    // (40 for this loop). (Paths left to compile when first taken, the
    // loop's exits, are not promotions.)
    assert!(s.flexswitches - s.lazy_sides < 17, "{s:?}");
    check(&code, 1000);
    // A whole program in one call, as an interpreter's `main` runs it: its
    // code is entered once and never again, so no entry fuses its pieces;
    // a switch whose cases run hot fuses them from inside the call
    // (`promotion::flex_hot`). Forever: drop, read global 7, add one, store
    // it back, count down from 1 (taken: back to the start); the fuel ends it.
    let code = [5u8, 0, 2, 7, 0, 1, 1, 0, 3, 7, 5, 0, 0, 1, 4, 0];
    // (In a thread of its own: its code is compiled afresh there. The call
    // runs its code for about 200 ms, past `promotion::LONG_CALL`: an
    // optimized build runs it longer for that.)
    let fuel = if cfg!(debug_assertions) { 5_000_000 } else { 100_000_000 };
    let before = rc_frames::jit::stats();
    std::thread::spawn(move || {
        rc_frames::jit::config().set_threshold(0);
        check(&code, fuel)
    })
    .join()
    .expect("agrees with plain");
    let after = rc_frames::jit::stats();
    assert!(after.entries == before.entries + 1 && after.fusions > before.fusions, "{after:?}");
    let mut rng = crate::common::Rng(0x7c_f4a3);
    for _ in 0..crate::common::how_many(200) {
        let code = rng.op_pairs(12, 10);
        check(&code, 1 + rng.below(300) as u32);
    }
    // (Here, not in a test of its own: the statistics above are the
    // module's, and another test's compilations would count.)
    a_frame_assigned_a_clone_is_assigned_in_place();
    a_position_promoted_on_every_turn_compiles_each_instruction_once();
}

/// The `ip` promoted at the top of every turn is pinned at the merge point:
/// once a loop head's versions have widened it to a run-time value and a
/// switch promoted it there, later versions keep its constants apart, as
/// a green position's would be. So a long loop body compiles as straight
/// code, not as a switch on the `ip` before each instruction.
fn a_position_promoted_on_every_turn_compiles_each_instruction_once() {
    // A counter of 300, then a body of forty instructions (twenty pushes
    // and drops), and a countdown back to the body's start.
    let mut code = vec![0u8, 250, 0, 50, 1, 0];
    for _ in 0..20 {
        code.extend([0, 7, 5, 0]);
    }
    code.extend([4, 3, 9, 0]);
    std::thread::spawn(move || {
        rc_frames::jit::config().set_threshold(0);
        let before = rc_frames::jit::stats();
        check(&code, 100_000);
        let s = rc_frames::jit::stats();
        assert!(s.declined == before.declined, "{s:?} {:?}", rc_frames::jit::last_decline());
        // (Paths left to compile when first taken are switches too.)
        let promotions = (s.flexswitches - s.lazy_sides) - (before.flexswitches - before.lazy_sides);
        // (7 here; 50 without the pin, a switch per instruction.)
        assert!(s.compilations > before.compilations && promotions <= 12, "{promotions} promotions: {s:?}");
    })
    .join()
    .expect("agrees with plain, and compiles the body as straight code");
}

/// A call and a return assign the current frame a clone of the top of
/// `frames`: compiled, each assignment writes in place through the
/// frame's address, its `Rc`'s counts changed by residual code, not a
/// clone made in the arena and the old frame dropped there. So the code clones no frame and drops
/// none, and `left_to_rust` says why those statements run as Rust.
fn a_frame_assigned_a_clone_is_assigned_in_place() {
    // Calls of op pair 4 nested, returns, then a loop: a push, a call of
    // the pair that returns, a countdown.
    let code = [7u8, 4, 7, 4, 9, 0, 8, 0, 0, 3, 7, 3, 4, 4, 9, 0];
    std::thread::spawn(move || {
        rc_frames::jit::config().set_threshold(0);
        check(&code, 200);
        let s = rc_frames::jit::stats();
        assert!(s.compilations > 0 && s.declined == 0, "{s:?} {:?}", rc_frames::jit::last_decline());
        let listings = rc_frames::jit::portal_listings().join("\n");
        assert!(!listings.contains(" .clone(") && !listings.contains(" drop("), "{listings}");
        // The `Rc` cloned into its place by residual code changing its
        // counts (Rust's `drop` called only where a count reaches zero),
        // not by a call of Rust's `clone`.
        assert!(listings.contains("rc_drop_last(") && !listings.contains("clone_into("), "{listings}");
    })
    .join()
    .expect("agrees with plain, and assigns in place");
    // No assignment of a clone left to Rust (outlined).
    let left = rc_frames::jit::left_to_rust();
    assert!(!left.iter().any(|l| l.contains("assigning to `frame`") || l.contains("last_mut")), "{left:?}");
}

//! Error exits written as Rust writes them: `checked_add(..).ok_or(..)?`,
//! `pop().ok_or(..)?`, `get(..).copied().ok_or(..)?`, and a helper
//! returning a `Result` called with `?`. The error's `None` or `Err` is
//! made in one arm and matched after the arms join, so the join reaches
//! the loop; its side still leaves the loop, and compiles when first taken
//! (`jitgen-macros/src/leaving.rs`), not in every piece of code that could
//! take it. Results, errors and final stacks are compared with
//! `jit::plain`, through the portal and through `jit::specialize`, on
//! programs that overflow, underflow and index out of range.

use jitgen::prelude::*;

#[jit_interpreter]
mod vm {
    use jitgen::prelude::*;

    #[derive(Debug, Clone, PartialEq)]
    pub enum VmError {
        Overflow { pc: usize },
        Underflow { pc: usize },
        NoSuchSlot(u8),
        OutOfFuel,
    }

    fn pop(stack: &mut Vec<i64>, pc: usize) -> Result<i64, VmError> {
        stack.pop().ok_or(VmError::Underflow { pc })
    }

    /// Byte pairs `(op, k)`: 0 push k; 1 add the top two; 2 subtract; 3
    /// multiply; 4 push slot k of `slots`; 5 duplicate; 6 jump back k pairs
    /// while the top is odd, halving it; 7 return the top. Every turn
    /// burns a unit of `fuel`.
    pub fn run(code: &[u8], slots: &[i64], stack: &mut Vec<i64>, mut fuel: u32) -> Result<i64, VmError> {
        let mut pc = 0;
        while pc + 1 < code.len() {
            hint!(global_merge_point);
            fuel = fuel.checked_sub(1).ok_or(VmError::OutOfFuel)?;
            let op = hint!(code[pc], concrete);
            let k = hint!(code[pc + 1], concrete);
            pc += 2;
            match op {
                0 => stack.push(k as i64 * 1_000_000_000_000_000),
                1..=3 => {
                    let b = pop(stack, pc)?;
                    let a = pop(stack, pc)?;
                    let r = match op {
                        1 => a.checked_add(b),
                        2 => a.checked_sub(b),
                        _ => a.checked_mul(b),
                    };
                    stack.push(r.ok_or(VmError::Overflow { pc })?);
                }
                4 => stack.push(slots.get(k as usize).copied().ok_or(VmError::NoSuchSlot(k))?),
                5 => {
                    let top = *stack.last().ok_or(VmError::Underflow { pc })?;
                    stack.push(top);
                }
                6 => {
                    let top = stack.pop().ok_or(VmError::Underflow { pc })?;
                    if top % 2 != 0 {
                        stack.push(top / 2);
                        pc = pc.saturating_sub(2 * (k as usize + 1));
                    } else {
                        stack.push(top);
                    }
                }
                _ => return stack.pop().ok_or(VmError::Underflow { pc }),
            }
        }
        Ok(stack.len() as i64)
    }
}

fn check(code: &[u8], slots: &[i64], stack: &[i64], fuel: u32) {
    let mut plain_stack = stack.to_vec();
    let want = vm::jit::plain::run(code, slots, &mut plain_stack, fuel);
    let mut portal_stack = stack.to_vec();
    assert_eq!(vm::run(code, slots, &mut portal_stack, fuel), want, "{code:?} {stack:?} {fuel}");
    assert_eq!(portal_stack, plain_stack, "{code:?} {stack:?} {fuel}");
    let mut spec_stack = stack.to_vec();
    assert_eq!(vm::jit::specialize::run(code).call(slots, &mut spec_stack, fuel), want, "{code:?}");
    assert_eq!(spec_stack, plain_stack, "{code:?} {stack:?} {fuel}");
}

#[test]
fn error_exits_compile_when_taken_and_agree_with_plain() {
    vm::jit::config().set_threshold(0);
    let slots = [3, -5, i64::MAX, i64::MIN];
    let fixed: [&[u8]; 6] = [
        // A loop that halves an odd number: no error taken.
        &[4, 0, 5, 0, 6, 0, 7, 0],
        // Overflow: MAX + 1.
        &[4, 2, 0, 0, 1, 0, 7, 0],
        // Underflow: an add on one value.
        &[0, 1, 1, 0, 7, 0],
        // No such slot.
        &[4, 9, 7, 0],
        // A multiplication that overflows, inside a loop.
        &[0, 3, 5, 0, 3, 0, 6, 1, 7, 0],
        // Out of fuel: a loop that never ends (pushes 3, halves it to 1
        // and jumps back to the push, the stack growing by one a turn).
        &[4, 0, 6, 1, 7, 0],
    ];
    let mut rng = crate::common::Rng(0x5eed_e440);
    let random: Vec<Vec<u8>> = (0..crate::common::how_many(300))
        .map(|_| {
            let pairs = 1 + rng.below(10);
            (0..2 * pairs).map(|i| if i % 2 == 0 { rng.below(8) as u8 } else { rng.below(5) as u8 }).collect()
        })
        .collect();
    for code in fixed.iter().copied().chain(random.iter().map(|c| c.as_slice())) {
        for (stack, fuel) in [(vec![], 50), (vec![7, 2], 50), (vec![i64::MAX - 1, 1], 3), (vec![1; 3], 200)] {
            check(code, &slots, &stack, fuel);
        }
    }
    let s = vm::jit::stats();
    assert!(s.compilations > 0 && s.declined == 0, "{s:?} {:?}", vm::jit::last_decline());
}

#[test]
fn code_that_takes_no_error_carries_none_of_its_exits() {
    // A program taking no error, specialized: its errors (fuel, underflow
    // in `pop` and in place, overflow) each leave through a switch
    // compiled when first taken. Before, each was compiled in place: the
    // error built and returned, at every `?` of every instruction. It adds
    // the two values it is given (each popped by `pop`, which may find the
    // stack empty), then halves the sum while it is odd.
    let code = [1, 0, 6, 0, 7, 0];
    let slots = [3, -5];
    let spec = vm::jit::specialize::run(&code);
    let listing = spec.listing().to_string();
    let returns = listing.lines().filter(|l| l.trim_start().starts_with("return")).count();
    let switches = listing.lines().filter(|l| l.contains("flexswitch")).count();
    assert!(returns <= 2, "{returns} returns:\n{listing}");
    assert!(switches >= 3, "{switches} switches:\n{listing}");
    for stack in [vec![7, 2], vec![1], vec![i64::MAX, 1]] {
        let (mut got, mut want) = (stack.clone(), stack.clone());
        assert_eq!(spec.call(&slots, &mut got, 100), vm::jit::plain::run(&code, &slots, &mut want, 100));
        assert_eq!(got, want);
    }
}

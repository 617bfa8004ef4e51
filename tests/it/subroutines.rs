//! The subroutine machine: return addresses popped from a run-time stack
//! are promoted, so dispatch continues in compiled code per return site.
//! Every result and error is compared with `jit::plain`.

use crate::common;

use subroutines_interp as interp;

use interp::sub::{self, jit, SubError, ADD, CALL, DECR, DOUBLE, HALT, JNZ, RET};

const COUNTDOWN: &[u8] = &[CALL, 6, JNZ, 0, HALT, HALT, CALL, 9, RET, DECR, RET];

/// Three call sites of one subroutine (a += 1) per turn, then a -= 4. The
/// subroutine's entry is reached with three different return addresses on
/// the stack: the first two are kept as constants (exact versions), the
/// third makes them run-time values, and RET promotes the one it pops.
const THREE_SITES: &[u8] = &[CALL, 14, CALL, 14, CALL, 14, DECR, DECR, DECR, DECR, JNZ, 0, HALT, HALT, ADD, 1, RET];

/// Inputs are at least 1: the loops count down to 0.
const PROGRAMS: &[(&str, &[u8])] = &[
    ("countdown", COUNTDOWN),
    ("three sites", THREE_SITES),
    ("doubling", &[DOUBLE, DOUBLE, HALT]),
    ("ret without call", &[RET]),
    ("return into the void", &[CALL, 4, HALT, HALT, 3, 100, RET]),
    ("recursion too deep", &[CALL, 0]),
    ("unknown opcode", &[9]),
    ("operand missing", &[CALL]),
];

#[test]
fn every_program_agrees_with_the_interpreter() {
    jit::config().set_threshold(0);
    for (name, code) in PROGRAMS {
        for a in [1, 5, 40] {
            let want = jit::plain::run(code, a);
            assert_eq!(sub::run(code, a), want, "{name} with a = {a} (portal)");
            assert_eq!(jit::specialize::run(code).call(a), want, "{name} with a = {a} (specialized)");
        }
    }
    assert_eq!(jit::plain::run(&[RET], 0), Err(SubError::StackUnderflow));
    assert_eq!(jit::plain::run(&[CALL, 0], 0), Err(SubError::StackOverflow));
}

#[test]
fn each_return_site_gets_a_case_that_knows_where_it_is() {
    let r = jit::specialize::run(THREE_SITES);
    assert_eq!(r.call(30), jit::plain::run(THREE_SITES, 30));
    // The subroutine's RET switches on the popped address once it is a
    // run-time value: the cases are return sites, each compiled once.
    let all = r.listing_with_cases();
    let mut sites: Vec<&str> = all
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("case "))
        .map(|l| l.split(':').next().unwrap())
        .collect();
    sites.sort();
    sites.dedup();
    assert!(!sites.is_empty() && sites.iter().all(|s| ["2", "4", "6"].contains(s)), "{all}");
    let s = jit::stats();
    assert_eq!(s.flexswitch_cases, s.flexswitch_misses, "{all}");
    // In the pieces, dispatch is gone: no reads of the bytecode.
    let pieces = &all[all.find("run_piece1:").expect("piece 1")..];
    assert!(!pieces.contains("load.u8"), "{pieces}");
    assert!(!pieces.contains(&format!("{:#x}", THREE_SITES.as_ptr() as usize)), "{pieces}");
}

#[test]
fn return_addresses_stored_in_compiled_code_are_known_where_they_are_popped() {
    jit::config().set_threshold(0);
    // One call site per subroutine: every address `RET` pops was stored by
    // the compiled code itself at `stack[sp]`, and read back at
    // `stack[sp + 1 - 1]` across the merge points between: known, so the
    // portal's code switches on none of them and reads none back.
    const NESTED: &[u8] = &[CALL, 6, DECR, JNZ, 0, HALT, ADD, 2, CALL, 13, ADD, 253, RET, ADD, 1, RET];
    for a in [1, 9, 40] {
        assert_eq!(sub::run(NESTED, a), jit::plain::run(NESTED, a), "a = {a}");
    }
    let listings = jit::portal_listings();
    let all = listings.join("\n");
    // No switch but on constants of its own function (paths left to
    // compile when first taken: the loop's exits).
    for listing in &listings {
        for line in listing.lines().filter(|l| l.trim_start().starts_with("flexswitch ")) {
            let v = line.trim_start()["flexswitch ".len()..].split(' ').next().expect("an operand");
            let def = format!("    {v} = const.");
            assert!(listing.contains(&def), "a switch on a run-time value: {line}\n{listing}");
        }
    }
    // After the entry (which reads the interpreter's stack), the code
    // stores return addresses and loads none (a turn check's counter, at
    // a constant address, is no return address).
    let body = &all[all.find("L1(").or_else(|| all.find("L2(")).expect("a block after the entry")..];
    let constants: Vec<&str> =
        body.lines().filter(|l| l.contains("= const.ptr")).filter_map(|l| l.split_whitespace().next()).collect();
    let loads = body.lines().filter(|l| l.contains("load.i64"));
    let stack_loads = loads.filter(|l| !constants.iter().any(|c| l.contains(&format!("load.i64 {c}+")))).count();
    assert!(body.contains("store.i64") && stack_loads == 0, "{all}");
}

/// A random program: a loop of calls counting `a` down by one a turn, and
/// subroutines whose net effect on `a` is nil (`ADD k` paired with `ADD -k`
/// around nested calls and forward `JNZ`s), so every program ends. Calls go
/// to later subroutines, or (rarely) back, which recurses until the stack
/// overflows; a few programs are broken on purpose: a missing `RET` (falling
/// into the next subroutine, or off the code), an extra `RET` (underflow),
/// an unknown opcode, an operand cut off.
fn random_subroutines(rng: &mut common::Rng) -> Vec<u8> {
    let n_subs = 1 + rng.below(4) as usize;
    // Subroutine bodies as (op, operand) items; CALL operands are indices
    // until the layout is known.
    fn body(rng: &mut common::Rng, me: usize, n_subs: usize, depth: u32, out: &mut Vec<(u8, i64)>) {
        for _ in 0..rng.below(4) {
            match rng.below(10) {
                0..=2 => {
                    let k = rng.below(40) as i64 - 20;
                    out.push((ADD, k));
                    if depth < 2 {
                        body(rng, me, n_subs, depth + 1, out);
                    }
                    out.push((ADD, -k));
                }
                3..=5 if me + 1 < n_subs => {
                    out.push((CALL, (me + 1 + rng.below((n_subs - me - 1) as u64) as usize) as i64))
                }
                6 if rng.below(8) == 0 => out.push((CALL, rng.below((me + 1) as u64) as i64)),
                7 if depth < 2 => {
                    // A forward JNZ over a balanced block: patched below.
                    let at = out.len();
                    out.push((JNZ, 0));
                    body(rng, me, n_subs, depth + 1, out);
                    out[at].1 = -(out.len() as i64) - 1;
                }
                _ => {}
            }
        }
    }
    let mut main: Vec<(u8, i64)> = vec![];
    for _ in 0..1 + rng.below(5) {
        main.push((CALL, rng.below(n_subs as u64) as i64));
    }
    let mut subs: Vec<Vec<(u8, i64)>> = (0..n_subs)
        .map(|me| {
            let mut b = vec![];
            body(rng, me, n_subs, 0, &mut b);
            b.push((RET, 0));
            b
        })
        .collect();
    match rng.below(16) {
        0 => {
            subs[rng.below(n_subs as u64) as usize].pop();
        }
        1 => main.push((RET, 0)),
        2 => {
            let s = &mut subs[0];
            s.insert(s.len() - 1, (9, 0));
        }
        _ => {}
    }
    // Layout: main, `DECR; JNZ 0; HALT`, then the subroutines.
    let size = |items: &[(u8, i64)]| {
        items.iter().map(|(op, _)| if matches!(*op, RET | DECR | DOUBLE | HALT | 9) { 1 } else { 2 }).sum::<usize>()
    };
    let mut starts = vec![size(&main) + 4];
    for s in &subs {
        starts.push(starts.last().unwrap() + size(s));
    }
    let mut code = vec![];
    let emit = |code: &mut Vec<u8>, items: &[(u8, i64)]| {
        let base = code.len();
        // Where each item starts, for JNZ's targets (items after it).
        let mut at = vec![];
        let mut p = base;
        for (op, _) in items {
            at.push(p);
            p += if matches!(*op, RET | DECR | DOUBLE | HALT | 9) { 1 } else { 2 };
        }
        at.push(p);
        for (op, arg) in items {
            code.push(*op);
            match *op {
                CALL => code.push(starts[*arg as usize] as u8),
                ADD => code.push(*arg as i8 as u8),
                JNZ => code.push(at[(-*arg - 1) as usize] as u8),
                _ => {}
            }
        }
    };
    emit(&mut code, &main);
    code.extend([DECR, JNZ, 0, HALT]);
    for s in &subs {
        emit(&mut code, s);
    }
    if rng.below(16) == 0 {
        code.push(CALL);
    }
    assert!(code.len() < 256, "targets fit in a byte");
    code
}

#[test]
fn random_subroutine_programs_agree_with_the_interpreter() {
    jit::config().set_threshold(0);
    let mut rng = common::Rng(0x5eed_0005_0b0b);
    for k in 0..common::how_many(300) {
        let code = random_subroutines(&mut rng);
        for a in [1, 3, 17] {
            let want = jit::plain::run(&code, a);
            assert_eq!(sub::run(&code, a), want, "program {k} {code:?} with a = {a} (portal)");
            assert_eq!(jit::specialize::run(&code).call(a), want, "program {k} {code:?} with a = {a} (specialized)");
        }
    }
}

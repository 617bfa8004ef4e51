//! Expansion tests: the example interpreters expanded outside a compiler and
//! printed with prettyplease. plus_minus's whole expansion is a snapshot that
//! shows the shape of generated code (`UPDATE_EXPECT=1` rewrites it); TLC's is
//! held to a size budget, since every line of it is compiled in the user's
//! crate on each edit of the interpreter.

use expect_test::{expect_file, ExpectFile};
use proc_macro2::TokenStream;
use quote::ToTokens;

/// The source of an example interpreter, relative to the workspace root.
fn source(path: &str) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The `#[jit_interpreter]` module of `file`, without the attribute.
fn jit_module_of(file: &str) -> syn::ItemMod {
    let parsed = syn::parse_file(file).expect("the example parses");
    let mut module = parsed
        .items
        .into_iter()
        .find_map(|i| match i {
            syn::Item::Mod(m) if m.attrs.iter().any(|a| a.path().is_ident("jit_interpreter")) => Some(m),
            _ => None,
        })
        .expect("a #[jit_interpreter] module");
    module.attrs.retain(|a| !a.path().is_ident("jit_interpreter"));
    module
}

/// The `#[jit_interpreter]` module of `file`, expanded and printed.
fn expand(file: &str) -> String {
    let module = jit_module_of(file);
    let out = crate::expand_attribute(TokenStream::new(), module.into_token_stream());
    let printed = syn::parse2::<syn::File>(out).expect("the expansion parses as items");
    prettyplease::unparse(&printed)
}

fn check(path: &str, expect: ExpectFile) {
    expect.assert_eq(&expand(&source(path)));
}

#[test]
fn plus_minus_expands_to_its_snapshot() {
    check("examples/plus_minus.rs", expect_file!["../tests/expand/plus_minus.rs"]);
}

#[test]
fn expansion_is_deterministic() {
    let src = source("interpreters/subroutines/src/lib.rs");
    assert_eq!(expand(&src), expand(&src));
}

/// Lines of TLC's printed expansion, its original items included (24,631
/// when the budget was set: frames held by the runtime's `PointFrame`, one
/// point function per place a state can stop). A change that grows
/// generated code past it must say why here, with the release rebuild time
/// it costs (`bench/build_time.sh`). Raised for splits whose true side
/// leaves the loop, which build that side's frame to compile it when first
/// taken (24,949 -> 25,988 lines; the release rebuild 9.8 s, within its 10 s
/// target). Raised for sides that leave the loop through the `None` or
/// `Err` of a `?` (`leaving.rs`), which build their frames too (26,392 ->
/// 26,535 lines; the release rebuild 14.6 s against 14.7 s before the
/// change, in the same hour on a slower machine).
const TLC_EXPANSION_BUDGET: usize = 26_700;

#[test]
fn tlc_expansion_stays_within_its_budget() {
    let src = source("interpreters/tlc/src/lib.rs");
    let original = src.lines().count();
    let lines = expand(&src).lines().count();
    eprintln!("TLC: {original} lines of source, {lines} lines expanded (budget {TLC_EXPANSION_BUDGET})");
    assert!(lines > original, "the expansion holds the module and its generating extension");
    assert!(
        lines <= TLC_EXPANSION_BUDGET,
        "TLC's expansion has {lines} lines, over its budget of {TLC_EXPANSION_BUDGET}"
    );
}

/// The macro never panics and always emits items: the stack VM's module
/// (methods lifted, tuples, `&mut` accessors, `print!`), mutated one token
/// at a time (every seventh token in the deep tier, `JITGEN_DEEP=1`, every
/// 61st in the fast tier: deleted, or replaced), either expands, is left to
/// Rust as a whole (it interprets only, and says why), or reports errors,
/// and what it emits parses as items (mutants that are not Rust syntax are
/// skipped: rustc rejects them first).
#[test]
fn mutated_modules_expand_or_report_errors() {
    let module = jit_module_of(&source("interpreters/stackvm/src/lib.rs"));
    // Printed tokens are separated by spaces (groups' delimiters too).
    let printed = module.into_token_stream().to_string();
    let toks: Vec<&str> = printed.split(' ').collect();
    let (mut expanded, mut left, mut refused) = (0, 0, 0);
    let deep = std::env::var_os("JITGEN_DEEP").is_some_and(|v| v != "0");
    for i in (0..toks.len()).step_by(if deep { 7 } else { 61 }) {
        for r in ["", "self", "0", "&", "?", ";"] {
            let mut m = toks.clone();
            m[i] = r;
            let text = m.join(" ");
            let Ok(item) = text.parse::<TokenStream>() else { continue };
            if syn::parse2::<syn::ItemMod>(item.clone()).is_err() {
                continue;
            }
            let out = std::panic::catch_unwind(|| crate::expand_attribute(TokenStream::new(), item.clone()))
                .unwrap_or_else(|_| panic!("the macro panicked on: {text}"));
            let shown = out.to_string();
            syn::parse2::<syn::File>(out).unwrap_or_else(|e| panic!("{e}: the expansion does not parse: {text}"));
            if shown.contains("compile_error") {
                refused += 1;
            } else if shown.contains("__log_left_whole") {
                left += 1;
            } else {
                expanded += 1;
            }
        }
    }
    assert!(expanded > 0 && left + refused > 0, "{expanded} expanded, {left} left to Rust, {refused} refused");
    eprintln!("{expanded} mutants expanded, {left} left to Rust, {refused} refused");
}

/// A lifted method's body: the receiver renamed, `Self` named, the module
/// path `self::` left alone.
#[test]
fn lifting_renames_the_receiver_not_the_module_path() {
    let ty = proc_macro2::Ident::new("Vm", proc_macro2::Span::call_site());
    let body: TokenStream =
        "{ self.pc += self::STEP; let v = Self::new(); helper(self, &mut self.stack) }".parse().expect("tokens");
    let renamed = crate::methods::rename_self(body, &ty).to_string();
    expect_test::expect![[
        r#"{ self_ . pc += self :: STEP ; let v = Vm :: new () ; helper (self_ , & mut self_ . stack) }"#
    ]]
    .assert_eq(&renamed);
}

/// A module's items after its portal methods are lifted (and their bodies
/// finished), printed.
fn lifted(module: &str) -> String {
    let mut m: syn::ItemMod = syn::parse_str(module).expect("a module");
    let lifted = crate::methods::lift_portal_methods(&mut m, true);
    crate::closures::inline(&mut m);
    crate::methods::finish_wrappers(&mut m, &lifted);
    let file: syn::File =
        syn::parse2(m.content.map(|(_, items)| quote::quote!(#(#items)*)).unwrap_or_default()).expect("items");
    prettyplease::unparse(&file)
}

/// `self` split into its fields: the scalar `pc` in a cell read through a
/// local, the program by `&`, the operand stack moved in and back at each
/// exit (`return`, `?`), `top` inlined, `name` (unused) left in `self`.
#[test]
fn a_portal_methods_self_is_split_into_its_fields() {
    let out = lifted(
        "mod m {
            pub struct Vm { code: Vec<u8>, pc: usize, stack: Vec<i64>, name: String }
            impl Vm {
                fn top(&self) -> Option<i64> { self.stack.last().copied() }
                pub fn run(&mut self) -> Result<i64, u8> {
                    loop {
                        hint!(global_merge_point);
                        let op = hint!(self.code[self.pc], concrete);
                        self.pc += 1;
                        if op == 0 { return self.top().ok_or(1); }
                        let x = self.stack.pop().ok_or(2)?;
                        self.stack.push(x + 1);
                    }
                }
            }
        }",
    );
    expect_test::expect_file!["../tests/expand/split_self.rs"].assert_eq(&out);
}

/// The Rust the interpreter runs gives a moved `Vec` field back whole at
/// each exit, where the flow graphs pop it back element by element.
#[test]
fn the_interpreters_rust_gives_a_moved_vec_back_whole() {
    let split = lifted(
        "mod m {
            pub struct Vm { pc: usize, out: Vec<i64> }
            impl Vm {
                pub fn run(&mut self, code: &[u8]) -> Option<usize> {
                    loop {
                        hint!(global_merge_point);
                        let op = hint!(code[self.pc], concrete);
                        self.pc += 1;
                        if op == 0 { return Some(self.out.len()); }
                        if op == 9 { None?; }
                        self.out.push(op as i64);
                    }
                }
            }
        }",
    );
    let mut file: syn::File = syn::parse_str(&split).expect("the split parses");
    let exits = split.matches("give_back_order(__self_out_home)").count();
    assert_eq!(exits, 3, "{split}");
    syn::visit_mut::VisitMut::visit_file_mut(&mut crate::split::WholeGiveBacks, &mut file);
    let rust = prettyplease::unparse(&file);
    assert!(!rust.contains("give_back_order") && !rust.contains("__jit_x"), "{rust}");
    let whole = quote::quote!(give_back_whole(__self_out_home, &mut __self_out)).to_string();
    assert_eq!(file.to_token_stream().to_string().matches(&whole).count(), exits, "{rust}");
}

/// A number's own method on a scalar field reads its cell
/// (`checked_sub`); any other method may take it by `&mut` (a user's
/// trait), so it is called on the cell and the cell written back to the
/// field, as an assignment is (its value kept where it is used): `self`
/// stays split either way.
#[test]
fn a_method_that_may_change_a_scalar_field_writes_its_cell_back() {
    let out = lifted(
        "mod m {
            pub trait Tally { fn tally(&mut self) -> bool; }
            pub struct Vm { code: Vec<u8>, pc: usize, fuel: u32, count: u32 }
            impl Vm {
                pub fn run(&mut self) -> Option<u32> {
                    loop {
                        hint!(global_merge_point);
                        let op = hint!(self.code[self.pc], concrete);
                        self.fuel = self.fuel.checked_sub(1)?;
                        if self.count.tally() { self.pc += 1; }
                        self.fuel.tally();
                        if op == 0 { return Some(self.count.max(1)); }
                    }
                }
            }
        }",
    );
    expect_test::expect_file!["../tests/expand/split_cell_methods.rs"].assert_eq(&out);
}

/// A closure handed to an inlined method (`impl Fn`, a type parameter
/// bounded by `Fn`, or a function pointer the method only calls) is inlined
/// where the method calls it, and so is a function named by its path
/// (`i64::checked_add`, a function of the module, `Self::mid`); one passed on is bound
/// behind a reference to its `dyn`, a function pointer passed on keeps its
/// type. A `return` of a split portal binds its value at the portal's
/// result type, so that it coerces (`Err(Box::new(e))` into a `Box<dyn
/// Error>`).
#[test]
fn closures_handed_to_inlined_methods_are_inlined_where_called() {
    let out = lifted(
        "mod m {
            pub struct Vm { stack: Vec<i64>, pc: usize }
            fn halve_sum(a: i64, b: i64) -> i64 { (a + b) / 2 }
            fn apply_to(f: fn(i64) -> i64, x: i64) -> i64 { f(x) }
            impl Vm {
                fn binary(&mut self, f: impl Fn(i64, i64) -> i64) {
                    let b = self.stack.pop().unwrap();
                    let a = self.stack.pop().unwrap();
                    self.stack.push(f(a, b));
                }
                fn test<F>(&mut self, f: F) -> bool where F: Fn(i64) -> bool { f(self.stack[0]) }
                fn apply<F: FnMut(i64)>(&mut self, f: F) { self.stack.iter().copied().for_each(f) }
                fn checked(&mut self, f: fn(i64, i64) -> Option<i64>) -> Option<()> {
                    let b = self.stack.pop()?;
                    let a = self.stack.pop()?;
                    self.stack.push(f(a, b)?);
                    Some(())
                }
                fn table(&mut self, f: fn(i64) -> i64) { self.stack.push(apply_to(f, 2)) }
                fn mid(a: i64, b: i64) -> i64 { a / 2 + b / 2 }
                pub fn run(&mut self) -> Result<i64, Box<dyn std::error::Error>> {
                    loop {
                        hint!(global_merge_point);
                        self.pc += 1;
                        self.binary(|a, b| a.wrapping_add(b));
                        self.binary(halve_sum);
                        self.binary(Self::mid);
                        self.checked(i64::checked_sub);
                        self.table(i64::wrapping_neg);
                        if self.test(|x| x > 3) { return Err(Box::new(std::fmt::Error)); }
                        let mut n = 0;
                        self.apply(|x| n += x);
                        self.stack.push(n);
                    }
                }
            }
        }",
    );
    expect_test::expect_file!["../tests/expand/split_closures.rs"].assert_eq(&out);
}

/// A method on `self` with `?` is inlined as a labeled `loop` its exits
/// break out of; `self` used whole keeps the method lifted whole.
#[test]
fn methods_with_early_exits_are_inlined_and_self_used_whole_is_kept() {
    let out = lifted(
        "mod m {
            pub struct Vm { pc: usize, stack: Vec<i64> }
            impl Vm {
                fn pop(&mut self) -> Result<i64, u8> { let x = self.stack.pop().ok_or(1)?; Ok(x) }
                pub fn run(&mut self) -> Result<i64, u8> {
                    loop {
                        hint!(global_merge_point);
                        self.pc += 1;
                        if self.pop()? == 0 { return Ok(0); }
                    }
                }
            }
        }",
    );
    let inlined = out.split("fn __Vm_run").nth(1).unwrap_or_default();
    assert!(inlined.contains("'__jit_m1: loop"), "{out}");
    assert!(inlined.contains("break '__jit_m1 Err(::core::convert::From::from(__jit_e))"), "{out}");
    let out = lifted(
        "mod m {
            pub struct Vm { pc: usize }
            fn helper(vm: &mut Vm) -> usize { vm.pc }
            impl Vm {
                pub fn run(&mut self) -> usize {
                    loop {
                        hint!(global_merge_point);
                        if helper(self) > 3 { return self.pc; }
                    }
                }
            }
        }",
    );
    assert!(out.contains("pub fn __Vm_run(self_: &mut Vm) -> usize"), "{out}");
    assert!(out.contains("__Vm_run(self)"), "{out}");
}

/// A field whose elements are only read (`self.consts[i].clone()`,
/// `self.names[i].to_string()`) stays the machine's program: passed by `&`,
/// green, never moved out of `self` as a changed `Vec` is.
#[test]
fn a_field_whose_elements_are_cloned_stays_read_only() {
    let out = lifted(
        "mod m {
            pub struct Vm { consts: Vec<String>, out: Vec<String>, pc: usize }
            impl Vm {
                pub fn run(&mut self) -> usize {
                    loop {
                        hint!(global_merge_point);
                        let s = self.consts[self.pc].clone();
                        self.out.push(s);
                        self.pc += 1;
                        if self.pc == self.consts.len() { return self.out.len(); }
                    }
                }
            }
        }",
    );
    let run = out.split("fn __Vm_run").nth(1).unwrap_or_default();
    assert!(run.contains("__self_consts: &Vec<String>"), "{out}");
    assert!(run.contains("mut __self_out: Vec<String>"), "{out}");
}

/// A method portal's position is a field: split out of `self`, each step
/// of it is a block that also stores the field's cell, and the hook still
/// tests only the turns that may have jumped (`forward.rs`): the flag is set
/// before the jump, not before the step.
#[test]
fn a_split_fields_forward_steps_skip_the_hook() {
    let out = expand(
        "#[jit_interpreter] mod m {
            use jitgen::prelude::*;
            pub struct Vm { pc: usize, acc: i64 }
            impl Vm {
                pub fn run(&mut self, code: &[u8]) -> i64 {
                    loop {
                        hint!(global_merge_point);
                        let op = code[hint!(self.pc, concrete)];
                        self.pc += 1;
                        match op {
                            0 => self.acc += 1,
                            1 => self.pc = 0,
                            _ => return self.acc,
                        }
                    }
                }
            }
        }",
    );
    let flat: String = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("let mut __jit_jumped = false;"), "the hook's loop is not rewritten");
    assert!(flat.contains("1 => { __jit_jumped = true; __self_pc = 0;"), "the jump sets no flag");
    assert_eq!(flat.matches("__jit_jumped = true").count(), 1, "only the jump sets the flag");
}

/// A changed `Vec` of scalars that the method indexes (its frames' slots)
/// is wrapped in a generated struct passed by `&mut` and moved back after
/// the call; one only pushed and popped (the output) is moved in as a local
/// list, and written back at each exit.
#[test]
fn an_indexed_vec_of_scalars_is_wrapped_and_an_output_moved_in() {
    let out = lifted(
        "mod m {
            pub struct Vm { pc: usize, stack: Vec<i64>, out: Vec<i64> }
            impl Vm {
                pub fn run(&mut self, code: &[u8]) -> Option<i64> {
                    loop {
                        hint!(global_merge_point);
                        let op = code[hint!(self.pc, concrete)];
                        self.pc += 1;
                        if op == 0 { return self.stack.pop(); }
                        let x = self.stack[op as usize];
                        self.stack.push(x);
                        self.out.push(x);
                    }
                }
            }
        }",
    );
    let flat: String = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("pub struct __Vm_run_stack(pub Vec<i64>);"), "{out}");
    assert!(flat.contains("__self_stack: &mut __Vm_run_stack,"), "{out}");
    assert!(flat.contains("let x = (__self_stack.0)[op as usize];"), "{out}");
    assert!(flat.contains("self_.stack = __self_stack_value.0;"), "{out}");
    assert!(flat.contains("mut __self_out: Vec<i64>, __self_out_home: &mut Vec<i64>,"), "{out}");
}

/// A hint standing as a statement is `let _ = hint!(..);` in what the
/// module keeps of its own code, so that rustc does not warn in the user's
/// crate that `hint!(&*frame.function, promote);` borrows for nothing. The
/// merge point's marker, and hints whose value is used, stay as written.
#[test]
fn a_hint_standing_as_a_statement_is_bound_to_nothing() {
    let src = "#[jit_interpreter]
        mod m {
            use std::rc::Rc;
            pub struct Function { pub code: Vec<u8> }
            #[derive(Clone)]
            pub struct Frame { pub function: Rc<Function>, pub ip: usize }
            pub fn run(frames: &[Frame], n: usize) -> usize {
                let mut frame = frames[0].clone();
                loop {
                    hint!(global_merge_point);
                    hint!(&*frame.function, promote);
                    let ip = hint!(frame.ip, promote);
                    if ip >= frame.function.code.len() || ip > n {
                        return ip;
                    }
                    frame.ip += 1;
                }
            }
        }";
    let out = expand(src);
    // The code, without the module's source text that it keeps as a string.
    let flat: String = out.lines().filter(|l| !l.contains("__SOURCE")).flat_map(|l| l.split_whitespace()).collect();
    let hints = flat.matches("hint!(&*frame.function,promote);").count();
    assert!(hints >= 2, "{out}");
    assert_eq!(flat.matches("let_=hint!(&*frame.function,promote);").count(), hints, "{out}");
    assert!(flat.contains("letip=hint!(frame.ip,promote);"), "{out}");
    assert!(flat.contains("hint!(global_merge_point);"), "{out}");
}

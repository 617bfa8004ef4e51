//! The integration tests whose interpreters are written inside them: small
//! `#[jit_interpreter]` modules, each using the Rust constructs under test
//! (wrapper structs, tuples, references, `String`s, calls, promotion, what
//! declines). One binary, compiled in parallel with `tests/it`, whose
//! module doc says how the tests of one binary share a process and how the
//! two tiers differ.

#[path = "../it/common.rs"]
mod common;

mod borrowed_code;
mod boxed_errors;
mod boxed_tape;
mod byte_vm;
mod calls;
mod closure_vm;
mod clox_style;
mod const_tables;
mod conversions;
mod copy_frames;
mod decline;
mod decoded_vm;
mod discriminants;
mod enum_arrays;
mod error_exits;
mod external_types;
mod forward_turns;
mod generics;
mod handles;
mod heap_objects;
mod iter_input;
mod iteration;
mod left_to_rust;
mod local_call_stack;
mod lox_style;
mod macros;
mod maps;
mod method_vm;
mod new_user;
mod opaque;
mod opaque_heap;
mod operator_impls;
mod outlined;
mod owned_frames;
mod panic_messages;
mod promotion;
mod rc_frames;
mod reentry;
mod struct_errors;

mod register_vm;
mod rust_style;
mod shared_values;
mod slice_operands;
mod stack_machine;
mod static_text;
mod string_values;
mod string_vm;
mod strings;
mod tutorial_vm;
mod whole_struct;

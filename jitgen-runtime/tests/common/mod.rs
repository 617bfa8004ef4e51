//! What several of these tests share: an interpreter's value enum with its
//! flattened form, and a frame whose reds are a `Vec`'s address.

#![allow(dead_code)]

use std::sync::OnceLock;

use jitgen_runtime::heap::{enum_layout, EnumLayout, Flat};
use jitgen_runtime::ops::ValTy;
use jitgen_runtime::redbox::RedBox;
use jitgen_runtime::state::Frame;

/// A value enum as interpreters write them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Nil,
    Cons(u32),
    Flag(bool),
}

/// `Value` flattened: its tag, then each variant's slots.
pub struct FlatValue;

/// The types of `FlatValue`'s words.
pub const TYS: [ValTy; 4] = [ValTy::U32, ValTy::I64, ValTy::U32, ValTy::Bool];
/// Each variant's slots among them.
pub const RANGES: [(usize, usize); 4] = [(1, 2), (2, 2), (2, 3), (3, 4)];
/// The variant of each slot after the tag.
pub const VARIANT: [u64; 3] = [0, 2, 3];

impl Flat for FlatValue {
    type T = Value;
    const N: usize = 4;
    fn flat(v: &Value, out: &mut [u64]) {
        out[..4].copy_from_slice(&match *v {
            Value::Int(n) => [0, n as u64, 0, 0],
            Value::Nil => [1, 0, 0, 0],
            Value::Cons(c) => [2, 0, c as u64, 0],
            Value::Flag(b) => [3, 0, 0, b as u64],
        });
    }
    fn unflat(w: &[u64]) -> Value {
        match w[0] {
            0 => Value::Int(w[1] as i64),
            1 => Value::Nil,
            2 => Value::Cons(w[2] as u32),
            _ => Value::Flag(w[3] != 0),
        }
    }
    fn layout() -> Option<&'static EnumLayout> {
        static L: OnceLock<Option<EnumLayout>> = OnceLock::new();
        L.get_or_init(|| enum_layout::<FlatValue>(&TYS, &RANGES)).as_ref()
    }
}

/// A frame whose reds are the `Vec`'s address (where a merge point needs it).
#[derive(Clone, Debug)]
pub struct Blk(pub Vec<RedBox>);

impl Frame for Blk {
    type Key = u32;
    fn key(&self) -> u32 {
        0
    }
    fn reds(&self) -> Vec<RedBox> {
        self.0.clone()
    }
    fn set_reds(&mut self, r: &[RedBox]) {
        self.0 = r.to_vec();
    }
}

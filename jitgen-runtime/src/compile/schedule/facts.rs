//! The known fields of memory ([`crate::compile::state::Fact`]: a value
//! loaded or stored at an address the compiler can name again) that a merge
//! point keeps. A state's facts are described relative to the state
//! ([`FactDesc`]: root and index as its reds, constants or earlier facts;
//! an index that is a red plus a constant as that red, the constant times
//! the stride moved into the offset),
//! so that two arrivals at one key can be compared; a version keeps the
//! facts whose values are parameters of its label, a widened version the
//! facts that every arrival had, and a jump to a version passes the values
//! of the facts it keeps.

use crate::compile::redbox::RedBox;
use crate::compile::state::Fact;
use crate::ir::builder::{ResidualBuilder, SymAddr, Val};
use crate::ir::ops::{BinOp, Overflow, ValTy};

/// Where a known field's root or index comes from at a merge point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FactRef {
    /// A red of the state (by position in [`JitState::core_reds`]).
    Core(usize),
    /// The value of an earlier known field.
    Fact(usize),
    /// A constant.
    Const(RedBox),
}

/// What a known field holds at a merge point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FactVal {
    Const(RedBox),
    /// The state's red at this position (the value, or its widening).
    Core(usize),
    /// A parameter of the merge point's label, of this type.
    Var(ValTy),
    /// The state's red at this position plus a constant (the length of a
    /// stack in memory beside a frame's base in it): computed at the label,
    /// so that indices made from either name the same element.
    Plus(usize, i64),
}

/// A known field ([`crate::compile::state::Fact`]) at a merge point, its values
/// named by where they are in the state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct FactDesc {
    pub(super) root: FactRef,
    pub(super) index: Option<(FactRef, u64)>,
    pub(super) offset: i64,
    pub(super) ty: ValTy,
    pub(super) class: u32,
    pub(super) field: i32,
    pub(super) value: FactVal,
    /// Its lower bound ([`Fact::min`]): a state covers the version's only
    /// with one as high.
    pub(super) min: u64,
}

impl FactDesc {
    /// Whether this is the field `other` is, with `other`'s root and index
    /// named as `root` and `index` are.
    pub(super) fn is_at(&self, root: FactRef, index: Option<(FactRef, u64)>, other: &FactDesc) -> bool {
        self.root == root
            && self.index == index
            && (self.offset, self.ty, self.class, self.field) == (other.offset, other.ty, other.class, other.field)
    }
}

/// The known fields of a state that a merge point can keep (those whose
/// root and index are reds of the state, constants or values of earlier
/// kept fields), with their values.
pub(super) fn describe_facts(b: &ResidualBuilder, known: &[Fact], core: &[RedBox]) -> Vec<(FactDesc, RedBox)> {
    let mut out: Vec<(FactDesc, RedBox)> = vec![];
    // `Vec` headers first: elements are named by the buffer and, where an
    // index is a length plus a constant (`stack[len - 1]`), by the length.
    let header = |f: &&Fact| f.class == crate::compile::state::VEC_HEADER;
    for f in known.iter().filter(header).chain(known.iter().filter(|f| !header(f))) {
        let refer = |r: &RedBox, out: &[(FactDesc, RedBox)]| -> Option<FactRef> {
            if r.is_const() {
                return Some(FactRef::Const(*r));
            }
            if let Some(j) = core.iter().position(|c| c == r) {
                return Some(FactRef::Core(j));
            }
            out.iter().position(|(_, v)| v == r).map(FactRef::Fact)
        };
        let Some(root) = refer(&f.at.root, &out) else { continue };
        let mut offset = f.at.offset;
        let index = match f.at.index {
            None => None,
            Some((i, stride)) => match refer(&i, &out) {
                Some(r) => Some((r, stride)),
                // An index computed from a red, or from an earlier field's
                // value, by adding a constant.
                None => {
                    let core_plus =
                        core.iter().enumerate().find_map(|(j, c)| Some((FactRef::Core(j), b.difference(c, &i)?)));
                    let fact_plus = || {
                        out.iter().enumerate().find_map(|(m, (_, v))| Some((FactRef::Fact(m), b.difference(v, &i)?)))
                    };
                    match core_plus.or_else(fact_plus) {
                        Some((r, d)) => {
                            offset = offset.wrapping_add(d.wrapping_mul(stride as i64));
                            Some((r, stride))
                        }
                        None => continue,
                    }
                }
            },
        };
        let value = if f.value.is_const() {
            FactVal::Const(f.value)
        } else if let Some(j) = core.iter().position(|c| *c == f.value || b.unwiden(c) == f.value) {
            FactVal::Core(j)
        } else if let Some((j, d)) = f.value.ty().is_int().then(|| plus_core(b, core, &f.value)).flatten() {
            FactVal::Plus(j, d)
        } else {
            FactVal::Var(f.value.ty())
        };
        let desc = FactDesc { root, index, offset, ty: f.ty, class: f.class, field: f.field, value, min: f.min };
        out.push((desc, f.value));
    }
    out
}

/// The first run-time red of `core` that `v` is known to be a constant
/// more than ([`ResidualBuilder::difference`]), and that constant.
fn plus_core(b: &ResidualBuilder, core: &[RedBox], v: &RedBox) -> Option<(usize, i64)> {
    core.iter().enumerate().find_map(|(j, c)| match c {
        RedBox::Var { ty, .. } if *ty == v.ty() => Some((j, b.difference(c, v)?)),
        _ => None,
    })
}

/// For each known field of a version, the state's known field it is
/// (same place, value covered), or `None` if the state lacks one.
pub(super) fn match_facts(want: &[FactDesc], have: &[(FactDesc, RedBox)]) -> Option<Vec<usize>> {
    let mut map: Vec<usize> = Vec::with_capacity(want.len());
    for d in want {
        let remap = |r: FactRef| match r {
            FactRef::Fact(m) => FactRef::Fact(map[m]),
            other => other,
        };
        let (root, index) = (remap(d.root), d.index.map(|(i, s)| (remap(i), s)));
        let k = have.iter().position(|(e, v)| {
            e.is_at(root, index, d)
                && e.min >= d.min
                && match d.value {
                    FactVal::Var(t) => v.ty() == t,
                    other => e.value == other,
                }
        })?;
        map.push(k);
    }
    Some(map)
}

/// The known fields of a widened version: those of `prev` that the state
/// also knows, their values run-time where the two differ.
pub(super) fn widen_facts(prev: &[FactDesc], have: &[(FactDesc, RedBox)]) -> Vec<FactDesc> {
    let mut out: Vec<FactDesc> = vec![];
    // The state's fact for each of `prev`'s, and the kept fact for each of the state's.
    let mut in_have: Vec<Option<usize>> = vec![];
    let mut in_out: Vec<Option<usize>> = vec![None; have.len()];
    for d in prev {
        let to_have = |r: FactRef| match r {
            FactRef::Fact(m) => in_have[m].map(FactRef::Fact),
            other => Some(other),
        };
        let index = match d.index {
            None => Some(None),
            Some((i, s)) => to_have(i).map(|r| Some((r, s))),
        };
        let k = match (to_have(d.root), index) {
            (Some(root), Some(index)) => have.iter().position(|(e, _)| e.is_at(root, index, d)),
            _ => None,
        };
        in_have.push(k);
        let Some(k) = k else { continue };
        let (e, v) = &have[k];
        let to_out = |r: FactRef| match r {
            FactRef::Fact(j) => FactRef::Fact(in_out[j].expect("a root kept before")),
            other => other,
        };
        let value = if e.value == d.value { d.value } else { FactVal::Var(v.ty()) };
        out.push(FactDesc {
            root: to_out(e.root),
            index: e.index.map(|(i, s)| (to_out(i), s)),
            value,
            min: d.min.min(e.min),
            ..d.clone()
        });
        in_out[k] = Some(out.len() - 1);
    }
    out
}

/// The known fields of a version, made of the label's reds (`core`) and
/// parameters.
pub(super) fn rebuild_facts(
    b: &mut ResidualBuilder,
    descs: &[FactDesc],
    core: &[RedBox],
    params: &mut impl Iterator<Item = Val>,
) -> Vec<Fact> {
    let mut out: Vec<Fact> = vec![];
    for d in descs {
        let get = |r: FactRef, out: &[Fact]| match r {
            FactRef::Core(j) => core[j],
            FactRef::Fact(m) => out[m].value,
            FactRef::Const(c) => c,
        };
        let root = get(d.root, &out);
        // Indices are named by their roots ([`ResidualBuilder::index_form`]).
        let mut offset = d.offset;
        let index = d.index.map(|(i, s)| {
            let (i, k) = b.index_form(&get(i, &out));
            offset = offset.wrapping_add(k.wrapping_mul(s as i64));
            (i, s)
        });
        let value = match d.value {
            FactVal::Const(c) => c,
            FactVal::Core(j) => core[j],
            FactVal::Var(ty) => RedBox::Var { ty, val: params.next().expect("one parameter per run-time field") },
            FactVal::Plus(j, k) => {
                let c = core[j];
                b.red_bin(BinOp::Add, Overflow::Wrap, &c, &RedBox::constant(c.ty(), c.ty().canon(k as u64)))
            }
        };
        out.push(Fact {
            at: SymAddr { root, index, offset },
            ty: d.ty,
            class: d.class,
            field: d.field,
            value,
            min: d.min,
        });
    }
    out
}

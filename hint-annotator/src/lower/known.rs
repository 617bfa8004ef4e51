//! Fields whose value a promotion made known: `hint!(frame.ip, promote)`
//! (or `hint!(&*frame.function, promote)` of an `Rc` field) as a statement
//! promotes the field itself, as PyPy's `promote` of a field does. Later
//! reads of the same field of the same struct value are the promoted value
//! (green), until something may change the field: a write of it (whose
//! value is then the known one), or a call handed the struct or a pointer
//! into it. The writes stay in the graph; only reads are replaced.
//!
//! What is known follows control flow as the bindings do: each side of a
//! branch starts with what was known at the branch, and a join starts
//! with nothing known.

use std::collections::HashMap;

use crate::flowgraph::{HintKind, OpKind, Var};

use super::LVal;

/// A known entry as it crosses into a join: a binding's value is named by
/// its slot in the environment (the join gives each slot a variable of its
/// own), anything else as it is.
#[derive(Clone, PartialEq, Debug)]
pub(super) enum Carried {
    Slot(usize),
    Val(LVal),
}

/// Known entries crossing into a join (see [`Carried`]).
pub(super) type KnownIn = Vec<((Carried, String, bool), Carried)>;

/// What made a variable, as far as fields go.
#[derive(Clone)]
enum Def {
    /// A field of the struct value `base`.
    Field(Var, String),
    /// What the `Rc` in a field of `base` points to.
    Shared(Var, String),
    /// The same pointer as another variable.
    Alias(Var),
}

/// The fields known in the code being lowered (see the module doc).
#[derive(Default)]
pub(super) struct KnownFields {
    defs: HashMap<Var, Def>,
    /// (struct value, field, through its `Rc`) -> the known value.
    pub(super) known: Vec<((Var, String, bool), LVal)>,
}

impl KnownFields {
    /// The variable a pointer is a copy of (through `same_as`).
    fn alias_root(&self, v: Var) -> Var {
        let mut v = v;
        for _ in 0..16 {
            match self.defs.get(&v) {
                Some(Def::Alias(w)) => v = *w,
                _ => break,
            }
        }
        v
    }

    /// The struct value a pointer variable is into, if one (through
    /// copies and fields).
    fn root(&self, v: Var) -> Var {
        let mut v = v;
        for _ in 0..16 {
            match self.defs.get(&v) {
                Some(Def::Alias(w) | Def::Field(w, _) | Def::Shared(w, _)) => v = *w,
                None => break,
            }
        }
        v
    }

    fn get(&self, key: &(Var, String, bool)) -> Option<LVal> {
        self.known.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
    }

    fn set(&mut self, key: (Var, String, bool), v: LVal) {
        self.known.retain(|(k, _)| *k != key);
        self.known.push((key, v));
    }

    /// What is known, for a join whose first `depth` environment slots
    /// hold `env`.
    pub(super) fn carried(&self, env: &[(String, LVal)], depth: usize) -> KnownIn {
        let name = |v: &LVal| match env[..depth.min(env.len())].iter().position(|(_, e)| e == v) {
            Some(i) => Carried::Slot(i),
            None => Carried::Val(v.clone()),
        };
        self.known.iter().map(|((b, f, s), v)| ((name(&LVal::Var(*b)), f.clone(), *s), name(v))).collect()
    }

    /// Enters a join that gives its slots the values `shapes`, knowing `k`.
    pub(super) fn enter(&mut self, k: &KnownIn, shapes: &[LVal]) {
        let value = |c: &Carried| match c {
            Carried::Slot(i) => shapes.get(*i).cloned(),
            Carried::Val(v) => Some(v.clone()),
        };
        self.known = k
            .iter()
            .filter_map(|((b, f, s), v)| match (value(b)?, value(v)?) {
                (LVal::Var(b), v) => Some(((b, f.clone(), *s), v)),
                _ => None,
            })
            .collect();
    }

    /// Forgets what variables from `n` on were (a lowering rewound to
    /// before them, whose numbers are used again).
    pub(super) fn forget_from(&mut self, n: usize) {
        self.defs.retain(|v, _| (v.0 as usize) < n);
        self.known.retain(|((b, _, _), v)| (b.0 as usize) < n && !matches!(v, LVal::Var(x) if x.0 as usize >= n));
    }

    /// The known value an operation would read, instead of emitting it.
    pub(super) fn read(&self, kind: &OpKind, args: &[LVal]) -> Option<LVal> {
        let Some(LVal::Var(a)) = args.first() else { return None };
        match kind {
            OpKind::GetField(name) => self.get(&(self.alias_root(*a), name.clone(), false)),
            OpKind::SharedDeref => match self.defs.get(&self.alias_root(*a)) {
                Some(Def::Field(b, name)) => self.get(&(*b, name.clone(), true)),
                _ => None,
            },
            _ => None,
        }
    }

    /// Notes what an emitted operation makes known or may change. A field
    /// written is known only where `stored_value` (the value is a value at
    /// the machine level: a struct written into a field is stored in place,
    /// and its copy is another object).
    pub(super) fn emitted(&mut self, kind: &OpKind, args: &[LVal], result: Var, stored_value: bool) {
        let first = match args.first() {
            Some(LVal::Var(a)) => Some(*a),
            _ => None,
        };
        match (kind, first) {
            (OpKind::GetField(name), Some(a)) => {
                self.defs.insert(result, Def::Field(self.alias_root(a), name.clone()));
            }
            (OpKind::SharedDeref, Some(a)) => {
                if let Some(Def::Field(b, name)) = self.defs.get(&self.alias_root(a)).cloned() {
                    self.defs.insert(result, Def::Shared(b, name));
                }
            }
            (OpKind::SameAs, Some(a)) => {
                self.defs.insert(result, Def::Alias(a));
            }
            (OpKind::SetField(name), Some(a)) => {
                let b = self.alias_root(a);
                self.known.retain(|((base, f, _), _)| !(*base == b && f == name));
                match args.get(1) {
                    Some(v) if stored_value => self.set((b, name.clone(), false), v.clone()),
                    _ => {}
                }
            }
            (OpKind::CloneInto(name), Some(a)) => {
                let b = self.alias_root(a);
                self.known.retain(|((base, f, _), _)| !(*base == b && f == name));
            }
            (OpKind::Hint(HintKind::Promote), Some(a)) => match self.defs.get(&self.alias_root(a)).cloned() {
                Some(Def::Field(b, name)) => self.set((b, name, false), LVal::Var(result)),
                Some(Def::Shared(b, name)) => self.set((b, name, true), LVal::Var(result)),
                _ => {}
            },
            (
                OpKind::Call(_) | OpKind::CallOpaque(_) | OpKind::CallPure(_) | OpKind::Format { .. } | OpKind::Drop,
                _,
            ) => {
                // What a call is handed (a struct, a pointer into one) it
                // may change; a place it is handed, anything.
                if args.iter().any(|a| !matches!(a, LVal::Var(_) | LVal::Const(_))) {
                    self.known.clear();
                }
                let roots: Vec<Var> =
                    args.iter().filter_map(|a| if let LVal::Var(v) = a { Some(self.root(*v)) } else { None }).collect();
                let defs = &*self;
                let keep: Vec<bool> =
                    defs.known.iter().map(|((base, _, _), _)| !roots.contains(&defs.root(*base))).collect();
                let mut keep = keep.into_iter();
                self.known.retain(|_| keep.next().unwrap_or(false));
            }
            _ => {}
        }
    }
}

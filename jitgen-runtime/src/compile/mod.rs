//! One compilation: red boxes ([`redbox`]), the JIT state ([`state`]) and the frames it holds ([`frame`]) and what it
//! knows of memory ([`memory`]),
//! virtual lists, dicts and structures ([`vlist`], [`vdict`], [`virtuals`]), elements of
//! real lists of enums ([`flat`]),
//! compiled recursion's spilled frames ([`spill`]), and the scheduler of a generating extension's paths with its merge
//! points, flexswitches, entry promotion and execute mode ([`schedule`]).
//! Uses `ir`, `backend` and `run`.

pub mod extension;
pub mod flat;
pub mod frame;
pub mod memory;
pub mod redbox;
pub mod schedule;
pub mod spill;
pub mod state;
pub mod vdict;
pub mod virtuals;
pub mod vlist;

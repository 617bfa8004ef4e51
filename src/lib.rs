//! jitgen: a partial-evaluation JIT compiler generator for interpreters written in Rust.
//!
//! Put `#[jit_interpreter]` on the module holding an interpreter and add a few
//! [`hint!`] markers; jitgen analyses the module's functions (the
//! hint-annotator's binding-time analysis) and derives from them a
//! just-in-time compiler for the interpreted language. See the README for the
//! contract and ARCHITECTURE.md for the map of the crates.
//!
//! This crate is the facade users depend on: the attribute, the hints, the
//! prelude, and the paths that generated code uses (`__private`).

pub use hint_annotator::{CallKind, Color, ColoredGraph, ColoredGraphs, LeftToRust};
pub use jitgen_macros::jit_interpreter;
pub use jitgen_runtime::driver::{Config, HotPolicy, StatsSnapshot};

/// A binding-time hint. Interpreted, it returns its first argument unchanged
/// (`hint!(global_merge_point)` does nothing), so an annotated module is
/// always a working interpreter. `#[jit_interpreter]` reads the hints:
///
/// | hint | meaning |
/// | --- | --- |
/// | `hint!(e, concrete)` | `e` and everything it depends on must be green |
/// | `hint!(e, promote)` | the result is green; the value is promoted at run time |
/// | `hint!(e, deepfreeze)` | reads through `e` are green when `e` is green |
/// | `hint!(e, variable)` | the result is red |
/// | `hint!(global_merge_point)` | the head of the dispatch loop |
#[macro_export]
macro_rules! hint {
    (global_merge_point) => {
        ()
    };
    ($e:expr, $flag:ident) => {
        $e
    };
}

/// What an interpreter module needs: `use jitgen::prelude::*;`.
pub mod prelude {
    pub use crate::hint;
    pub use crate::{jit_interpreter, CallKind, Color};
}

/// What generated code names, and nothing else: each name here is one that
/// `#[jit_interpreter]` emits. Not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use hint_annotator::ColoredGraphs;

    /// The runtime items generating extensions call, by the layer's file.
    pub mod rt {
        // The names generated code uses most, at the root: `__rt::RedBox`.
        pub use self::frame::{Slot, Values};
        pub use self::ops::{BinOp, CmpOp, Overflow, ValTy};
        pub use self::redbox::RedBox;
        pub use self::schedule::Compilation;
        pub use self::state::JitState;
        pub use self::vdict::VDict;
        pub use self::virtuals::{VPList, VPtr};
        pub use self::vlist::VList;

        /// One compilation and its scheduling.
        pub mod schedule {
            pub use jitgen_runtime::compile::schedule::{Compilation, MergeKind, ResumeFns};
        }
        /// The JIT state and the frames it chains.
        pub use jitgen_runtime::compile::extension as ext;
        pub mod frame {
            pub use jitgen_runtime::compile::frame::{
                boxes, green_ref, green_slice, ref_word, PointFrame, Slot, Values,
            };
        }
        pub mod state {
            pub use jitgen_runtime::compile::state::{FlatVec, Frame, JitState, ListMut};
        }
        /// Red boxes and helpers that build arrays of them.
        pub mod redbox {
            pub use jitgen_runtime::compile::redbox::{const_words, first_n, next_n, RedBox};
        }
        /// Virtual lists, dicts and structures.
        pub mod vlist {
            pub use jitgen_runtime::compile::vlist::{InPlace, VList, MAX_VIRTUAL_LEN, NESTED_KEYED_LEN};
        }
        pub mod vdict {
            pub use jitgen_runtime::compile::vdict::VDict;
        }
        pub mod virtuals {
            pub use jitgen_runtime::compile::virtuals::{
                Popped, StructVec, VDesc, VHeap, VListField, VPList, VPtr, MAX_VIRTUAL_PTRS,
            };
        }
        /// Residual operations and their semantics.
        pub mod ops {
            pub use jitgen_runtime::ir::ops::{fold_bin, fold_un, BinOp, CmpOp, ErrorKind, Overflow, UnOp, ValTy};
        }
        /// The helpers residual code calls, and layouts measured at run time.
        pub mod heap {
            pub use jitgen_runtime::run::heap::{
                arc_value_offset, arena_alloc, arena_drop, arena_len, arena_mark, arena_release, arena_take,
                boxed_slice_layout, clone_into, enum_layout, flat_vec_get, flat_vec_len, flat_vec_new, flat_vec_pop,
                flat_vec_push, flat_vec_set, flat_vec_store, green_copy, map_contains, map_get, map_insert, map_len,
                map_new, map_remove, rc_value_offset, slice_ref_layout, take_or_clone, take_or_copy_vec, take_string,
                take_vec, vec_extend, vec_get, vec_header, vec_layout, vec_len, vec_move, vec_new, vec_new_objects,
                vec_new_repeat, vec_pop, vec_pop_moved, vec_push, vec_push_moved, vec_reserve_one, vec_set, vec_store,
                EnumLayout, Flat, Handed, OptionRead, SharedArg,
            };
        }
        /// Compiled code, its calls and callbacks.
        pub mod residual {
            pub use jitgen_runtime::ir::builder::ResidualFunction;
            pub use jitgen_runtime::run::enter::{call_parking, native};
            pub use jitgen_runtime::run::residual::{message_id, run_callback, InputFrame, ResidualError, ResidualFn};
        }
        /// Direct calls of a portal from compiled code.
        pub mod direct {
            pub use jitgen_runtime::run::direct::{enter_stack, DirectEntry, DirectTable};
        }
        /// Portals: settings, counters, the hot-spot policy and its cache.
        pub mod driver {
            pub use jitgen_runtime::portal::driver::{
                alias, content_bytes, green_word, Aliases, Config, DueCount, LoopSampler, PortalCache, PortalSite,
                Sampler, Stats, StatsSnapshot,
            };
        }
        /// What a portal hook's arguments go through.
        pub mod portal {
            pub use jitgen_runtime::portal::outlined::{Flow, Outlined};
            pub use jitgen_runtime::portal::ByValue;
            /// Green sequences made canonical (`entry::canonical`).
            pub mod canonical {
                pub use jitgen_runtime::portal::canonical::{deep, deep_slice, scalars, slice, text, vec, Seen};
            }
        }
    }

    /// Gives a `Vec` field moved into a split method back whole at an exit:
    /// the field was left empty when the method began.
    pub fn give_back_whole<T>(field: &mut Vec<T>, local: &mut Vec<T>) {
        debug_assert!(field.is_empty(), "jitgen: a moved field was written while moved");
        std::mem::swap(field, local);
    }

    /// Puts a `Vec` field given back last element first (a split method's
    /// exit in compiled code pops its local list onto the field) in order.
    pub fn give_back_order<T>(v: &mut Vec<T>) {
        v.reverse();
    }

    /// Annotates the module source the macro embedded (for `jit::graphs()`).
    pub fn graphs_from_source(src: &str, external: &str) -> hint_annotator::ColoredGraphs {
        match hint_annotator::annotate_source_with(src, external) {
            Ok(g) => g,
            // Only a module left to Rust compiled with errors of its analysis.
            Err(e) => hint_annotator::ColoredGraphs::left_whole("the module".into(), e.into_iter().collect()),
        }
    }
}

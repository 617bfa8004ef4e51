//! What exists while residual code runs: compiled functions and the handles
//! that call them ([`residual`]), entering them ([`enter`]) and fusing their
//! pieces ([`fusion`]), the continuation stack of compiled
//! recursion ([`contstack`]), direct calls between compiled functions of
//! an interpreter that recurses in Rust ([`direct`]), the callbacks and the arena of objects
//! residual code allocates ([`heap`]), flexswitch case tables and the miss
//! handler that calls back into the compiler ([`promotion`]) within a thread's
//! budget ([`case_budget`]), and the
//! counters of a module ([`stats`]). Uses `ir` and `backend`; the compiler
//! above reaches it through closures it stores in case tables.

pub mod background;
pub mod case_budget;
pub mod contstack;
pub mod direct;
pub mod enter;
pub mod fusion;
pub mod heap;
pub mod promotion;
pub mod residual;
pub mod stats;

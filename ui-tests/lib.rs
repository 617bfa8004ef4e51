//! Nothing but a home for `tests/ui.rs`: the UI tests of `#[jit_interpreter]`
//! live in a package of their own so that trybuild, which compiles every
//! dev-dependency of the package under test again, compiles only `jitgen`.

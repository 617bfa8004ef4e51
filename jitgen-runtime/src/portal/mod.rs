//! Portals: settings ([`config`]), green data made canonical ([`canonical`]), the loop outlined from its hook
//! ([`outlined`]), sampling the hook's visits ([`sampler`])
//! between ticks of a clock ([`ticker`]),
//! counting per position key and the cache of compiled code ([`driver`]),
//! retiring code slower than interpreting ([`slow`]). The top layer: what a portal hook
//! calls around a compilation.

pub mod canonical;
pub mod config;
pub mod driver;
pub mod outlined;
pub mod sampler;
pub mod slow;
pub mod ticker;

/// A scalar handed to a portal hook, given either by value or through a shared
/// reference: interpreter code often holds `&i64` where the analysis sees the
/// value (`let d = stack.last().unwrap();`), and the hook takes the value.
pub trait ByValue<T> {
    /// The value itself.
    fn by_value(self) -> T;
}

impl<T: Copy> ByValue<T> for T {
    #[inline(always)]
    fn by_value(self) -> T {
        self
    }
}

impl<T: Copy> ByValue<T> for &T {
    #[inline(always)]
    fn by_value(self) -> T {
        *self
    }
}

//! Portals: settings, the hot-spot policy, counting per position key and the
//! cache of compiled code ([`driver`]). The top layer: what a portal hook
//! calls around a compilation.

pub mod driver;

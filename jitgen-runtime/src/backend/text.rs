//! The text backend: a readable listing of the residual operations.

use super::{Backend, BackendError};
use crate::ir::builder::{listing, ResidualFunction};

/// Produces listings.
#[derive(Clone, Copy, Debug, Default)]
pub struct TextBackend;

impl Backend for TextBackend {
    type Code = String;
    fn compile(&mut self, f: &ResidualFunction) -> Result<String, BackendError> {
        Ok(listing(f))
    }
}

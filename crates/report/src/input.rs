//! Inputs of reports and comparisons (defined in the document model, see
//! [`latlab_core::doc::input`]).

pub use latlab_core::doc::input::{stem, Input};

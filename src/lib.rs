//! rocqa: question-answer supervision grounded in the production sources of ROCm
//! math libraries.
//!
//! The pipeline, one module per stage, data flowing one way:
//! [`source`] (fetch, pin) -> [`index`] (parse, macros) -> [`graph`] (call graph,
//! scope) -> slice -> question -> llm -> validate -> emit. [`config`] holds the
//! configuration every stage reads, [`model`] the records that cross stage borders,
//! and [`cli`] the thin command line on top.

pub mod cli;
pub mod config;
pub mod graph;
pub mod index;
pub mod model;
pub mod source;

//! rocqa: question-answer supervision grounded in the production sources of ROCm
//! math libraries.
//!
//! The pipeline, one module per stage, data flowing one way:
//! [`source`] (fetch, pin) -> [`index`] (parse, macros) -> [`graph`] (call graph,
//! scope) -> [`slice`](mod@slice) -> [`question`] (templates) -> [`llm`] (client, cache) ->
//! [`validate`] -> [`emit`] (JSONL, manifest). [`extract`] wires the stages into the
//! main job; [`config`] holds the configuration every stage reads, [`model`] the
//! records that cross stage borders, and [`cli`] the thin command line on top.

pub mod cli;
pub mod config;
pub mod emit;
pub mod export;
pub mod extract;
pub mod facts;
pub mod graph;
pub mod index;
pub mod llm;
pub mod model;
pub mod question;
pub mod review;
pub mod slice;
pub mod source;
pub mod validate;

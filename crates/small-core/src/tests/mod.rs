//! Whole-library tests over corpora and extremes: secrets precision and recall, the API's
//! manifest vectors, and nesting depth through every gate.

mod deep_nesting;
mod manifest_vectors;
mod secrets_corpus;

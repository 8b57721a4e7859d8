//! Tests that need more than one layer: corpora and extremes (secrets precision and recall,
//! the API's manifest vectors, nesting depth through every gate) and the lower layers on
//! workspaces the write side or the migration made. They sit above every layer, so building
//! a fixture never points a lower module at a higher one.

mod deep_nesting;
mod gate_check;
mod layers;
mod manifest_vectors;
mod next;
mod profile_choice;
mod profile_guards;
mod secrets_corpus;
mod state;

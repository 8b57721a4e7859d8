//! `draft` and `accept`: propose an artifact in `.small/drafts/`, then accept it (built in
//! `authoring::draft`).

pub use crate::authoring::draft::{
    accept, draft, open_scoped, AcceptError, AcceptRequest, DraftRequest,
};

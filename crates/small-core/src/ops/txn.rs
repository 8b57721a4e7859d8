//! What the writing front ends share of the v1 write side: the lock wait they parse from
//! their flags and `SMALL_LOCK_TIMEOUT`, the write error, and the files a commit changed.

pub use crate::workspace::error::{Error, ErrorKind};
pub use crate::workspace::txn::{lock_timeout_from_env, parse_lock_timeout, CommitReport};

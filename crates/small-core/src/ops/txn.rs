//! The v1 write transaction, for the commands that still compose their writes in the CLI
//! (`start`, `reset`, `fix`, `progress migrate`): the lock, staged writes and the commit.

pub use crate::workspace::error::{Error, ErrorKind};
pub use crate::workspace::txn::{
    lock_timeout_from_env, parse_lock_timeout, CommitReport, Transaction, TxnError,
};

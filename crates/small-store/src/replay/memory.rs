//! In-memory replay store (`--store memory`): records live as long as the process.

use super::{ReplayRecord, ReplayStore, ReplayStoreError};
use std::collections::HashMap;
use std::sync::RwLock;

/// Replay records in a hash map behind a lock.
#[derive(Debug, Default)]
pub struct MemoryReplayStore {
    records: RwLock<HashMap<String, ReplayRecord>>,
}

impl MemoryReplayStore {
    pub fn new() -> Self {
        Self::default()
    }
}

fn poisoned<T>(_: T) -> ReplayStoreError {
    ReplayStoreError::Other("in-memory store lock poisoned".into())
}

impl ReplayStore for MemoryReplayStore {
    fn get(&self, replay_id: &str) -> Result<Option<ReplayRecord>, ReplayStoreError> {
        Ok(self
            .records
            .read()
            .map_err(poisoned)?
            .get(replay_id)
            .cloned())
    }

    fn get_or_insert(
        &self,
        candidate: ReplayRecord,
    ) -> Result<(ReplayRecord, bool), ReplayStoreError> {
        if let Some(r) = self
            .records
            .read()
            .map_err(poisoned)?
            .get(&candidate.replay_id)
        {
            return Ok((r.clone(), false));
        }
        let mut map = self.records.write().map_err(poisoned)?;
        match map.get(&candidate.replay_id) {
            Some(r) => Ok((r.clone(), false)),
            None => {
                map.insert(candidate.replay_id.clone(), candidate.clone());
                Ok((candidate, true))
            }
        }
    }

    fn describe(&self) -> String {
        "memory".into()
    }
}

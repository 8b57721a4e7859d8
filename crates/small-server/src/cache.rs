//! Replay responses already served. Replay records never change once stored (the first one
//! wins, in every process sharing the store), so a response built from a stored record can be
//! reused for as long as the process runs without asking the store again.

use axum::body::Bytes;
use std::collections::HashMap;
use std::sync::RwLock;

/// Bounded map from replay ID to the full response body.
#[derive(Debug)]
pub struct ReplayCache {
    map: RwLock<HashMap<String, Bytes>>,
    capacity: usize,
}

impl Default for ReplayCache {
    fn default() -> Self {
        ReplayCache::with_capacity(65_536)
    }
}

impl ReplayCache {
    pub fn with_capacity(capacity: usize) -> Self {
        ReplayCache {
            map: RwLock::new(HashMap::new()),
            capacity,
        }
    }

    pub fn get(&self, replay_id: &str) -> Option<Bytes> {
        self.map.read().ok()?.get(replay_id).cloned()
    }

    /// Remember a response; when full, start over (entries are only a shortcut).
    pub fn put(&self, replay_id: &str, body: Bytes) {
        if let Ok(mut map) = self.map.write() {
            if map.len() >= self.capacity {
                map.clear();
            }
            map.insert(replay_id.to_owned(), body);
        }
    }
}

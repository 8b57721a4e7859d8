//! Storage for the SMALL primitives (seed 003: Schema, Artifact, Manifest, Lineage, Lifecycle)
//! and for replay records.
//!
//! One trait, [`PrimitiveStore`], with two backends: SQLite (embedded, one file, WAL) and
//! PostgreSQL (several servers sharing one database). The rules (schema-first validation,
//! immutable versions, policies, append-only lineage and lifecycle) live in [`engine`] and are
//! written once over the narrow transaction interface of [`tx`], so both backends behave the same.
//! Every record is stored as canonical JSON text and read back byte for byte.

pub mod canonical;
pub mod engine;
pub mod error;
pub mod import;
pub mod model;
pub mod pg;
pub mod sqlite;
pub mod tx;

pub mod replay;

pub use engine::{lifecycle_document, Store};
pub use error::{FieldError, StoreError};
pub use model::{Direction, Graph, GraphEdge, GraphNode, Listing, Page, Put, Record};

use error::Result;
use serde_json::Value;
use std::sync::Arc;

/// The primitives store. Calls are blocking (async servers call them on a blocking thread).
pub trait PrimitiveStore: Send + Sync {
    /// `sqlite` or `postgres`.
    fn backend_name(&self) -> &'static str;

    /// Registers a JSON Schema (2020-12) under its `$id`. Same id and content again: no-op
    /// (`created: false`); same id, other content: `Conflict`; invalid schema: `Invalid`.
    fn register_schema(&self, schema: &Value) -> Result<Put>;
    fn get_schema(&self, id: &str) -> Result<Option<Record>>;
    fn list_schemas(&self, page: &Page) -> Result<Listing>;

    /// Materialises an artifact version `{id, version?, kind, data, schemaId}` after validating
    /// `data` against the registered schema. Without `version`, the next version is assigned.
    fn put_artifact(&self, artifact: &Value) -> Result<Put>;
    /// A version of an artifact, or its latest version when `version` is `None`.
    fn get_artifact(&self, id: &str, version: Option<u64>) -> Result<Option<Record>>;
    /// The latest version of each artifact, by id.
    fn list_artifacts(&self, page: &Page) -> Result<Listing>;
    fn list_artifact_versions(&self, id: &str, page: &Page) -> Result<Listing>;

    /// Stores a manifest version `{id, version?, schemas, artifacts, policies}`; every reference
    /// must exist and the policies are enforced.
    fn put_manifest(&self, manifest: &Value) -> Result<Put>;
    fn get_manifest(&self, id: &str, version: Option<u64>) -> Result<Option<Record>>;
    fn list_manifests(&self, page: &Page) -> Result<Listing>;
    fn list_manifest_versions(&self, id: &str, page: &Page) -> Result<Listing>;

    /// Appends a lineage record `{artifactId, derivedFrom, producedBy, at?}` (an identical record
    /// again is a no-op; records that would make a cycle are refused).
    fn append_lineage(&self, lineage: &Value) -> Result<Put>;
    /// The lineage records of an artifact, oldest first.
    fn get_lineage(&self, artifact_id: &str) -> Result<Vec<Record>>;
    /// Ancestors or descendants of an artifact within `depth` derivation steps.
    fn lineage_graph(&self, artifact_id: &str, direction: Direction, depth: u32) -> Result<Graph>;

    /// Appends one event `{type, at?, schema?, note?}` to an artifact's lifecycle stream,
    /// enforcing the transitions.
    fn append_lifecycle(&self, artifact_id: &str, event: &Value) -> Result<Put>;
    /// Stores a whole stream `{artifactId, events}`: the stored events must be a prefix of
    /// `events`; the remaining ones are appended.
    fn put_lifecycle(&self, lifecycle: &Value) -> Result<Vec<Put>>;
    /// The events of an artifact's lifecycle, oldest first.
    fn get_lifecycle(&self, artifact_id: &str) -> Result<Vec<Record>>;
}

/// The default embedded store file, relative to the current directory.
pub const DEFAULT_STORE_PATH: &str = ".small-cache/store.db";

/// Opens a store from a location: `postgres://…` / `postgresql://…` for PostgreSQL, anything
/// else is the path of an SQLite file (created with its directory when missing). Migrations run
/// on open.
pub fn open(location: &str) -> Result<Arc<dyn PrimitiveStore>> {
    if is_postgres_url(location) {
        Ok(Arc::new(Store::new(pg::PgBackend::connect(
            location, None,
        )?)))
    } else {
        Ok(Arc::new(Store::new(sqlite::SqliteBackend::open(
            std::path::Path::new(location),
        )?)))
    }
}

/// Opens an existing store for reading only (a viewer's open): a `postgres://` URL must hold
/// the store's tables and every transaction is read-only; an SQLite path must be an existing
/// store file, which is opened read-only (never created, never migrated).
pub fn open_read_only(location: &str) -> Result<Arc<dyn PrimitiveStore>> {
    if is_postgres_url(location) {
        Ok(Arc::new(Store::new(pg::PgBackend::connect_read_only(
            location,
        )?)))
    } else {
        Ok(Arc::new(Store::new(sqlite::SqliteBackend::open_read_only(
            std::path::Path::new(location),
        )?)))
    }
}

/// A store location fit to show: a PostgreSQL URL without its password.
pub fn display_location(location: &str) -> String {
    if is_postgres_url(location) {
        pg::redact(location)
    } else {
        location.to_string()
    }
}

/// Whether a store location names a PostgreSQL database.
pub fn is_postgres_url(location: &str) -> bool {
    location.starts_with("postgres://") || location.starts_with("postgresql://")
}

//! The rules of the primitives, written once over [`Tx`] and shared by both backends.

use crate::error::{FieldError, Result, StoreError};
use crate::model::*;
use crate::tx::{Backend, Tx, Versioned};
use crate::PrimitiveStore;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

/// A [`PrimitiveStore`] over a backend.
pub struct Store<B: Backend> {
    backend: B,
    validators: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
}

impl<B: Backend> Store<B> {
    pub fn new(backend: B) -> Self {
        Store {
            backend,
            validators: Mutex::new(HashMap::new()),
        }
    }

    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The compiled validator of a registered schema (compiled once; schemas are immutable).
    fn validator(&self, schema_id: &str) -> Result<Option<Arc<jsonschema::Validator>>> {
        if let Some(v) = self.validators.lock().map_err(poisoned)?.get(schema_id) {
            return Ok(Some(v.clone()));
        }
        let rec = self.backend.read(&mut |tx| tx.schema_get(schema_id))?;
        let Some(rec) = rec else { return Ok(None) };
        let compiled = Arc::new(compile_schema(&rec.value()).map_err(|e| {
            StoreError::Backend(format!(
                "stored schema `{schema_id}` no longer compiles: {}",
                e[0].message
            ))
        })?);
        self.validators
            .lock()
            .map_err(poisoned)?
            .insert(schema_id.to_string(), compiled.clone());
        Ok(Some(compiled))
    }
}

fn poisoned<T>(_: T) -> StoreError {
    StoreError::Backend("internal lock poisoned".into())
}

/// Checks a JSON Schema (2020-12) and compiles it with format assertions on.
pub fn compile_schema(
    schema: &Value,
) -> std::result::Result<jsonschema::Validator, Vec<FieldError>> {
    let meta = jsonschema::draft202012::meta::validator();
    let errors: Vec<FieldError> = meta
        .iter_errors(schema)
        .map(|e| FieldError::new(e.instance_path().as_str(), e.to_string()))
        .collect();
    if !errors.is_empty() {
        return Err(errors);
    }
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(schema)
        .map_err(|e| vec![FieldError::new(e.instance_path().as_str(), e.to_string())])
}

fn make_record(id: &str, version: u64, value: &Value) -> Record {
    let json = exact_canonical_json(value);
    Record {
        id: id.to_string(),
        version,
        sha256: sha256_hex(&json),
        stored_at: now_rfc3339(),
        json,
        resolved: None,
    }
}

fn without_version(json: &str) -> Value {
    let mut v: Value = serde_json::from_str(json).unwrap_or(Value::Null);
    if let Some(m) = v.as_object_mut() {
        m.remove("version");
    }
    v
}

fn noun(t: Versioned) -> &'static str {
    match t {
        Versioned::Artifact => "artifact",
        Versioned::Manifest => "manifest",
    }
}

/// The version rules shared by artifacts and manifests, inside a write transaction: versions are
/// immutable, identical re-puts change nothing, a new version is the previous one + 1, and a
/// missing version means "the next one" (unless the content equals the latest version).
fn put_versioned(
    tx: &mut dyn Tx,
    t: Versioned,
    id: &str,
    version: Option<u64>,
    body: &Map<String, Value>,
    schema_id: Option<&str>,
    resolved: Option<&str>,
) -> Result<Put> {
    let (latest, latest_rec) = tx.lock_head_latest(t, id)?;
    let what = noun(t);
    let version = match version {
        Some(v) if v <= latest => {
            let mut with_version = body.clone();
            with_version.insert("version".into(), json!(v));
            let rec = make_record(id, v, &Value::Object(with_version));
            let existing = if v == latest {
                latest_rec
            } else {
                tx.version_get(t, id, v)?
            };
            let existing = existing.ok_or_else(|| {
                StoreError::Backend(format!("{what} `{id}` version {v} is missing"))
            })?;
            if existing.json == rec.json {
                return Ok(Put {
                    record: existing,
                    created: false,
                });
            }
            return Err(StoreError::Conflict(format!(
                "{what} `{id}` version {v} already exists with other content (sha256 {}); versions are immutable, put version {} instead",
                existing.sha256,
                latest + 1
            )));
        }
        Some(v) if v != latest + 1 => {
            return Err(StoreError::Conflict(format!(
                "{what} `{id}` is at version {latest}; the next version must be {}, not {v}",
                latest + 1
            )));
        }
        Some(v) => v,
        None => {
            if let Some(existing) = latest_rec {
                if without_version(&existing.json) == Value::Object(body.clone()) {
                    return Ok(Put {
                        record: existing,
                        created: false,
                    });
                }
            }
            latest + 1
        }
    };
    let mut body = body.clone();
    body.insert("version".into(), json!(version));
    let mut rec = make_record(id, version, &Value::Object(body));
    rec.resolved = resolved.map(str::to_string);
    tx.version_insert(t, &rec, schema_id)?;
    Ok(Put {
        record: rec,
        created: true,
    })
}

fn event_kinds(events: &[Record]) -> Vec<(String, String)> {
    events
        .iter()
        .map(|r| {
            let v = r.value();
            (
                v.get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                v.get("at")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect()
}

fn append_event(
    tx: &mut dyn Tx,
    artifact_id: &str,
    ev: &EventIn,
    existing: &mut Vec<Record>,
) -> Result<Put> {
    let value = Value::Object(ev.value.clone());
    let rec = make_record(artifact_id, existing.len() as u64 + 1, &value);
    if let Some(last) = existing.last() {
        if last.json == rec.json {
            return Ok(Put {
                record: last.clone(),
                created: false,
            });
        }
    }
    transition_allowed(&event_kinds(existing), &ev.kind, &ev.at).map_err(|reason| {
        StoreError::Conflict(format!(
            "lifecycle of `{artifact_id}`: `{}` refused: {reason}",
            ev.kind
        ))
    })?;
    tx.lifecycle_insert(&rec, &ev.kind)?;
    existing.push(rec.clone());
    Ok(Put {
        record: rec,
        created: true,
    })
}

fn paged(items: Vec<Record>, limit: u32, cursor: impl Fn(&Record) -> String) -> Listing {
    let next = if items.len() as u32 >= limit {
        items.last().map(&cursor)
    } else {
        None
    };
    Listing { items, next }
}

impl<B: Backend> PrimitiveStore for Store<B> {
    fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    fn register_schema(&self, schema: &Value) -> Result<Put> {
        let mut c = Checker::default();
        let Some(m) = schema.as_object() else {
            return Err(StoreError::field(
                "",
                "a schema must be a JSON object (a JSON Schema 2020-12 document)",
            ));
        };
        let id = match m.get("$id") {
            Some(v) => c.id_value(v, "/$id", "$id").map(str::to_string),
            None => {
                c.err(
                    "/$id",
                    "`$id` is required: it is the schema's stable id (e.g. schema:article:v1)",
                );
                None
            }
        };
        match m.get("$schema") {
            None => {}
            Some(Value::String(s)) if s.trim_end_matches('#') == SCHEMA_DIALECT => {}
            Some(_) => c.err(
                "/$schema",
                format!(
                    "only JSON Schema 2020-12 is supported: `$schema` must be {SCHEMA_DIALECT}"
                ),
            ),
        }
        c.finish("schema")?;
        let id = id.unwrap_or_default();
        let compiled = compile_schema(schema).map_err(|errors| {
            let msg = format!(
                "schema `{id}` is not a valid JSON Schema: {}",
                errors[0].message
            );
            StoreError::invalid(msg, errors)
        })?;
        let rec = make_record(&id, 1, schema);
        let put = self.backend.write(&mut |tx| {
            if let Some(existing) = tx.schema_get(&id)? {
                return same_or_conflict(existing, &rec);
            }
            if tx.schema_insert(&rec)? {
                return Ok(Put {
                    record: rec.clone(),
                    created: true,
                });
            }
            match tx.schema_get(&id)? {
                Some(existing) => same_or_conflict(existing, &rec),
                None => Err(StoreError::Backend(format!(
                    "schema `{id}` vanished while registering"
                ))),
            }
        })?;
        self.validators
            .lock()
            .map_err(poisoned)?
            .entry(id.clone())
            .or_insert_with(|| Arc::new(compiled));
        Ok(put)
    }

    fn get_schema(&self, id: &str) -> Result<Option<Record>> {
        if !valid_id(id) {
            return Ok(None);
        }
        self.backend.read(&mut |tx| tx.schema_get(id))
    }

    fn list_schemas(&self, page: &Page) -> Result<Listing> {
        check_cursor(page)?;
        let limit = page.limit();
        let items = self
            .backend
            .read(&mut |tx| tx.schema_list(page.after.as_deref(), limit))?;
        Ok(paged(items, limit, |r| r.id.clone()))
    }

    fn put_artifact(&self, artifact: &Value) -> Result<Put> {
        let a = check_artifact(artifact)?;
        let Some(validator) = self.validator(&a.schema_id)? else {
            return Err(StoreError::field(
                "/schemaId",
                format!("schema `{}` is not registered: register it before materialising artifacts that use it", a.schema_id),
            ));
        };
        let data = a.value.get("data").cloned().unwrap_or(Value::Null);
        let errors: Vec<FieldError> = validator
            .iter_errors(&data)
            .map(|e| {
                FieldError::new(
                    format!("/data{}", e.instance_path().as_str()),
                    e.to_string(),
                )
            })
            .collect();
        if !errors.is_empty() {
            let msg = format!(
                "artifact `{}` does not conform to schema `{}` ({} error{})",
                a.id,
                a.schema_id,
                errors.len(),
                if errors.len() == 1 { "" } else { "s" }
            );
            return Err(StoreError::invalid(msg, errors));
        }
        let mut body = a.value.clone();
        body.remove("version");
        self.backend.write(&mut |tx| {
            put_versioned(
                tx,
                Versioned::Artifact,
                &a.id,
                a.version,
                &body,
                Some(&a.schema_id),
                None,
            )
        })
    }

    fn get_artifact(&self, id: &str, version: Option<u64>) -> Result<Option<Record>> {
        if !valid_id(id) {
            return Ok(None);
        }
        self.backend.read(&mut |tx| {
            let v = match version {
                Some(v) => v,
                None => tx.latest_version(Versioned::Artifact, id)?,
            };
            if v == 0 {
                return Ok(None);
            }
            tx.version_get(Versioned::Artifact, id, v)
        })
    }

    fn list_artifacts(&self, page: &Page) -> Result<Listing> {
        check_cursor(page)?;
        let limit = page.limit();
        let items = self
            .backend
            .read(&mut |tx| tx.heads_list(Versioned::Artifact, page.after.as_deref(), limit))?;
        Ok(paged(items, limit, |r| r.id.clone()))
    }

    fn list_artifact_versions(&self, id: &str, page: &Page) -> Result<Listing> {
        versions(&self.backend, Versioned::Artifact, id, page)
    }

    fn put_manifest(&self, manifest: &Value) -> Result<Put> {
        let m = check_manifest(manifest)?;
        let mut body = m.value.clone();
        body.remove("version");
        self.backend.write(&mut |tx| {
            // Lock the manifest's head before reading its latest version: the appendOnly check
            // below compares with that version, so no other version may be stored in between
            // (on PostgreSQL two servers could otherwise both validate against the same one).
            tx.lock_head(Versioned::Manifest, &m.id)?;
            let mut errors = Vec::new();
            let mut schemas_resolved = Vec::new();
            for (i, s) in m.schemas.iter().enumerate() {
                match tx.schema_get(s)? {
                    Some(rec) => schemas_resolved.push(json!({"id": s, "sha256": rec.sha256})),
                    None => errors.push(FieldError::new(format!("/schemas/{i}"), format!("schema `{s}` is not registered"))),
                }
            }
            let mut artifacts_resolved = Vec::new();
            for (i, r) in m.artifacts.iter().enumerate() {
                let v = match r.version {
                    Some(v) => v,
                    None => tx.latest_version(Versioned::Artifact, &r.id)?,
                };
                let rec = if v == 0 { None } else { tx.version_get(Versioned::Artifact, &r.id, v)? };
                let Some(rec) = rec else {
                    let what = match r.version {
                        Some(v) => format!("artifact `{}` version {v} does not exist", r.id),
                        None => format!("artifact `{}` does not exist", r.id),
                    };
                    errors.push(FieldError::new(format!("/artifacts/{i}"), what));
                    continue;
                };
                let schema_id = rec.value().get("schemaId").and_then(Value::as_str).unwrap_or("").to_string();
                if m.validation_required && !m.schemas.contains(&schema_id) {
                    errors.push(FieldError::new(
                        format!("/artifacts/{i}"),
                        format!(
                            "policy validationRequired: artifact `{}` is validated by schema `{schema_id}`, which this manifest does not list in `schemas`",
                            r.id
                        ),
                    ));
                }
                artifacts_resolved.push(json!({"id": r.id, "version": v, "sha256": rec.sha256}));
            }
            // appendOnly: a new version keeps everything the previous version declared.
            let latest = tx.latest_version(Versioned::Manifest, &m.id)?;
            let superseded = match m.version {
                Some(v) if v > 1 => v - 1,
                Some(_) => 0,
                None => latest,
            };
            if superseded > 0 && superseded <= latest {
                if let Some(prev) = tx.version_get(Versioned::Manifest, &m.id, superseded)? {
                    let pv = prev.value();
                    let prev_append_only = pv.pointer("/policies/appendOnly").and_then(Value::as_bool).unwrap_or(false);
                    let is_new_version = m.version.map(|v| v > latest).unwrap_or(true);
                    if is_new_version && (m.append_only || prev_append_only) {
                        if prev_append_only && !m.append_only {
                            errors.push(FieldError::new(
                                "/policies/appendOnly",
                                format!("policy appendOnly: version {superseded} is append-only; a later version cannot turn the policy off"),
                            ));
                        }
                        for s in pv.get("schemas").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
                            if !m.schemas.iter().any(|x| x == s) {
                                errors.push(FieldError::new(
                                    "/schemas",
                                    format!("policy appendOnly: schema `{s}` of version {superseded} cannot be removed"),
                                ));
                            }
                        }
                        for a in pv.get("artifacts").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
                            let Some(old) = parse_artifact_ref(a) else { continue };
                            match m.artifacts.iter().find(|x| x.id == old.id) {
                                None => errors.push(FieldError::new(
                                    "/artifacts",
                                    format!("policy appendOnly: artifact `{}` of version {superseded} cannot be removed", old.id),
                                )),
                                Some(new) => {
                                    if let (Some(o), Some(n)) = (old.version, new.version) {
                                        if n < o {
                                            errors.push(FieldError::new(
                                                "/artifacts",
                                                format!("policy appendOnly: artifact `{}` cannot go back from version {o} to {n}", old.id),
                                            ));
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            if !errors.is_empty() {
                let msg = if errors.len() == 1 {
                    format!("manifest `{}` refused: {}", m.id, errors[0].message)
                } else {
                    format!("manifest `{}` refused: {} problems", m.id, errors.len())
                };
                return Err(StoreError::invalid(msg, errors));
            }
            // deterministic: the references are frozen as resolved now.
            let resolved = if m.deterministic {
                Some(exact_canonical_json(&json!({"schemas": schemas_resolved, "artifacts": artifacts_resolved})))
            } else {
                None
            };
            put_versioned(tx, Versioned::Manifest, &m.id, m.version, &body, None, resolved.as_deref())
        })
    }

    fn get_manifest(&self, id: &str, version: Option<u64>) -> Result<Option<Record>> {
        if !valid_id(id) {
            return Ok(None);
        }
        self.backend.read(&mut |tx| {
            let v = match version {
                Some(v) => v,
                None => tx.latest_version(Versioned::Manifest, id)?,
            };
            if v == 0 {
                return Ok(None);
            }
            tx.version_get(Versioned::Manifest, id, v)
        })
    }

    fn list_manifests(&self, page: &Page) -> Result<Listing> {
        check_cursor(page)?;
        let limit = page.limit();
        let items = self
            .backend
            .read(&mut |tx| tx.heads_list(Versioned::Manifest, page.after.as_deref(), limit))?;
        Ok(paged(items, limit, |r| r.id.clone()))
    }

    fn list_manifest_versions(&self, id: &str, page: &Page) -> Result<Listing> {
        versions(&self.backend, Versioned::Manifest, id, page)
    }

    fn append_lineage(&self, lineage: &Value) -> Result<Put> {
        let l = check_lineage(lineage)?;
        let rec = make_record(&l.artifact_id, 0, &Value::Object(l.value.clone()));
        self.backend.write(&mut |tx| {
            // Before anything is read: the cycle check below must see every lineage append
            // committed before this one, and none may commit while it runs.
            tx.lineage_lock()?;
            if let Some(existing) = tx.lineage_find(&l.artifact_id, &rec.sha256)? {
                return Ok(Put {
                    record: existing,
                    created: false,
                });
            }
            let mut errors = Vec::new();
            let cyclic = tx.reaches_down(&l.artifact_id, &l.parents)?;
            for (i, p) in l.parents.iter().enumerate() {
                if cyclic.contains(p) {
                    errors.push(FieldError::new(
                        format!("/derivedFrom/{i}"),
                        format!(
                            "`{p}` is already derived from `{}`: this record would make a cycle",
                            l.artifact_id
                        ),
                    ));
                }
            }
            if !errors.is_empty() {
                return Err(StoreError::invalid(
                    format!(
                        "lineage record refused: lineage must not contain cycles ({})",
                        errors[0].message
                    ),
                    errors,
                ));
            }
            let mut rec = rec.clone();
            rec.version = tx.lineage_insert(&rec, &l.parents)?;
            Ok(Put {
                record: rec,
                created: true,
            })
        })
    }

    fn get_lineage(&self, artifact_id: &str) -> Result<Vec<Record>> {
        if !valid_id(artifact_id) {
            return Ok(Vec::new());
        }
        self.backend.read(&mut |tx| tx.lineage_for(artifact_id))
    }

    fn lineage_graph(&self, artifact_id: &str, direction: Direction, depth: u32) -> Result<Graph> {
        let depth = depth.clamp(1, MAX_DEPTH);
        let up = direction == Direction::Ancestors;
        if !valid_id(artifact_id) {
            return Ok(Graph {
                artifact_id: artifact_id.to_string(),
                direction,
                depth,
                nodes: Vec::new(),
                edges: Vec::new(),
            });
        }
        let (reached, walked) = self
            .backend
            .read(&mut |tx| tx.walk(artifact_id, depth, up))?;
        let nodes: BTreeMap<String, u32> = reached
            .into_iter()
            .filter(|(id, _)| id != artifact_id)
            .collect();
        let edges: BTreeSet<GraphEdge> = walked
            .into_iter()
            .map(|(from, to)| GraphEdge { from, to })
            .collect();
        let mut nodes: Vec<GraphNode> = nodes
            .into_iter()
            .map(|(id, depth)| GraphNode { id, depth })
            .collect();
        nodes.sort_by(|a, b| a.depth.cmp(&b.depth).then_with(|| a.id.cmp(&b.id)));
        Ok(Graph {
            artifact_id: artifact_id.to_string(),
            direction,
            depth,
            nodes,
            edges: edges.into_iter().collect(),
        })
    }

    fn append_lifecycle(&self, artifact_id: &str, event: &Value) -> Result<Put> {
        if !valid_id(artifact_id) {
            return Err(StoreError::field(
                "/artifactId",
                "artifact id must be 1 to 256 characters without whitespace",
            ));
        }
        let ev = check_event(event, "")?;
        self.check_event_schema(&ev, "/schema")?;
        self.backend.write(&mut |tx| {
            tx.lifecycle_lock(artifact_id)?;
            let mut existing = tx.lifecycle_events(artifact_id)?;
            append_event(tx, artifact_id, &ev, &mut existing)
        })
    }

    fn put_lifecycle(&self, lifecycle: &Value) -> Result<Vec<Put>> {
        let mut c = Checker::default();
        let mut parsed = None;
        if let Some(m) = c.object(lifecycle, "lifecycle", &["artifactId", "events"]) {
            let id = c.id(m, "artifactId").map(str::to_string);
            match m.get("events") {
                Some(Value::Array(items)) => parsed = id.map(|id| (id, items.clone())),
                _ => c.err("/events", "`events` must be an array of lifecycle events"),
            }
        }
        c.finish("lifecycle")?;
        let (artifact_id, items) = parsed.unwrap_or_default();
        let mut events = Vec::new();
        let mut errors = Vec::new();
        for (i, item) in items.iter().enumerate() {
            if item.get("at").is_none() {
                errors.push(FieldError::new(
                    format!("/events/{i}/at"),
                    "`at` is required in a full lifecycle stream",
                ));
                continue;
            }
            match check_event(item, &format!("/events/{i}")) {
                Ok(ev) => {
                    if let Err(e) = self.check_event_schema(&ev, &format!("/events/{i}/schema")) {
                        errors.extend(e.errors().iter().cloned());
                    }
                    events.push(ev)
                }
                Err(e) => errors.extend(e.errors().iter().cloned()),
            }
        }
        if !errors.is_empty() {
            return Err(StoreError::invalid(
                format!("lifecycle refused: {}", errors[0].message),
                errors,
            ));
        }
        self.backend.write(&mut |tx| {
            tx.lifecycle_lock(&artifact_id)?;
            let mut existing = tx.lifecycle_events(&artifact_id)?;
            let stored = existing.len();
            let mut puts = Vec::new();
            for (i, ev) in events.iter().enumerate() {
                if i < stored {
                    let json = exact_canonical_json(&Value::Object(ev.value.clone()));
                    if existing[i].json != json {
                        return Err(StoreError::Conflict(format!(
                            "lifecycle of `{artifact_id}`: event {} differs from the stored event {}; lifecycle is append-only",
                            i + 1,
                            i + 1
                        )));
                    }
                    puts.push(Put { record: existing[i].clone(), created: false });
                } else {
                    let rec = make_record(&artifact_id, existing.len() as u64 + 1, &Value::Object(ev.value.clone()));
                    transition_allowed(&event_kinds(&existing), &ev.kind, &ev.at).map_err(|reason| {
                        StoreError::Conflict(format!(
                            "lifecycle of `{artifact_id}`: event {} (`{}`) refused: {reason}",
                            i + 1,
                            ev.kind
                        ))
                    })?;
                    tx.lifecycle_insert(&rec, &ev.kind)?;
                    existing.push(rec.clone());
                    puts.push(Put { record: rec, created: true });
                }
            }
            Ok(puts)
        })
    }

    fn get_lifecycle(&self, artifact_id: &str) -> Result<Vec<Record>> {
        if !valid_id(artifact_id) {
            return Ok(Vec::new());
        }
        self.backend
            .read(&mut |tx| tx.lifecycle_events(artifact_id))
    }
}

impl<B: Backend> Store<B> {
    fn check_event_schema(&self, ev: &EventIn, path: &str) -> Result<()> {
        if let Some(s) = &ev.schema {
            if self.get_schema(s)?.is_none() {
                return Err(StoreError::field(
                    path,
                    format!("schema `{s}` is not registered"),
                ));
            }
        }
        Ok(())
    }
}

/// List cursors are ids: anything else cannot match and is refused.
fn check_cursor(page: &Page) -> Result<()> {
    match page.after.as_deref() {
        Some(a) if !valid_id(a) => Err(StoreError::field(
            "/after",
            "the cursor `after` must be an id from a previous page",
        )),
        _ => Ok(()),
    }
}

fn same_or_conflict(existing: Record, rec: &Record) -> Result<Put> {
    if existing.json == rec.json {
        Ok(Put {
            record: existing,
            created: false,
        })
    } else {
        Err(StoreError::Conflict(format!(
            "schema `{}` is already registered with other content (sha256 {}); register changed schemas under a new id",
            rec.id, existing.sha256
        )))
    }
}

fn versions<B: Backend>(backend: &B, t: Versioned, id: &str, page: &Page) -> Result<Listing> {
    if !valid_id(id) {
        return Err(StoreError::NotFound(format!(
            "{} `{id}` does not exist",
            noun(t)
        )));
    }
    let limit = page.limit();
    let after = match page.after.as_deref() {
        None => 0,
        Some(s) => s.parse::<u64>().map_err(|_| {
            StoreError::field(
                "/after",
                "the cursor of a versions listing is a version number",
            )
        })?,
    };
    let items = backend.read(&mut |tx| {
        if tx.latest_version(t, id)? == 0 {
            return Err(StoreError::NotFound(format!(
                "{} `{id}` does not exist",
                noun(t)
            )));
        }
        tx.versions_list(t, id, after, limit)
    })?;
    Ok(paged(items, limit, |r| r.version.to_string()))
}

/// The lifecycle stream of an artifact in the seed's shape: `{"artifactId", "events": [...]}`,
/// each event exactly as stored.
pub fn lifecycle_document(artifact_id: &str, events: &[Record]) -> String {
    let mut out = String::from("{\"artifactId\":");
    out.push_str(&serde_json::to_string(artifact_id).unwrap_or_default());
    out.push_str(",\"events\":[");
    for (i, e) in events.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&e.json);
    }
    out.push_str("]}");
    out
}

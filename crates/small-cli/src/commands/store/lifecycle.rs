//! `small store lifecycle append|get`.

use super::{read_json, Out};
use crate::error::{CliError, CmdResult};
use serde_json::{json, Map, Value};
use small_store::{PrimitiveStore, StoreError};

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Append an event to an artifact's lifecycle (created, validated, materialized, published,
    /// deprecated, archived); transitions are enforced: `created` first, `published` and
    /// `materialized` only after `validated`, nothing after `archived`
    Append {
        /// The artifact id
        id: String,
        /// Event type
        #[arg(long = "type", value_name = "TYPE", required_unless_present = "file")]
        kind: Option<String>,
        /// Event time (RFC 3339; default: now)
        #[arg(long)]
        at: Option<String>,
        /// Schema the event refers to (must be registered)
        #[arg(long)]
        schema: Option<String>,
        /// Free text
        #[arg(long)]
        note: Option<String>,
        /// Read the event, or a whole stream `{artifactId, events}`, from a JSON file
        #[arg(long, conflicts_with_all = ["kind", "at", "schema", "note"])]
        file: Option<String>,
    },
    /// Print an artifact's lifecycle as stored: `{artifactId, events}`
    Get { id: String },
}

pub fn run(c: Command, store: &dyn PrimitiveStore, out: &Out) -> CmdResult {
    match c {
        Command::Append {
            id,
            kind,
            at,
            schema,
            note,
            file,
        } => {
            if let Some(f) = file {
                let v = read_json(&f)?;
                if v.get("events").is_some() {
                    if v.get("artifactId").and_then(Value::as_str) != Some(id.as_str()) {
                        return Err(CliError::usage(format!("{f}: `artifactId` must be `{id}`")));
                    }
                    let puts = store.put_lifecycle(&v).map_err(|e| out.fail(e))?;
                    let appended = puts.iter().filter(|p| p.created).count();
                    if out.json {
                        out.value(
                            &json!({"artifactId": id, "appended": appended, "events": puts.len()}),
                        );
                    } else {
                        out.line(format!(
                            "appended {appended} of {} lifecycle events of {id}",
                            puts.len()
                        ));
                    }
                    return Ok(());
                }
                return append(store, out, &id, &v);
            }
            let mut m = Map::new();
            m.insert("type".into(), json!(kind.unwrap_or_default()));
            if let Some(a) = at {
                m.insert("at".into(), json!(a));
            }
            if let Some(s) = schema {
                m.insert("schema".into(), json!(s));
            }
            if let Some(n) = note {
                m.insert("note".into(), json!(n));
            }
            append(store, out, &id, &Value::Object(m))
        }
        Command::Get { id } => {
            let events = store.get_lifecycle(&id).map_err(|e| out.fail(e))?;
            if events.is_empty() {
                return Err(out.fail(StoreError::NotFound(format!(
                    "no lifecycle events are recorded for `{id}`"
                ))));
            }
            out.data_line(small_store::lifecycle_document(&id, &events));
            Ok(())
        }
    }
}

fn append(store: &dyn PrimitiveStore, out: &Out, id: &str, event: &Value) -> CmdResult {
    let put = store.append_lifecycle(id, event).map_err(|e| out.fail(e))?;
    if out.json {
        out.value(&json!({
            "artifactId": id, "seq": put.record.version, "sha256": put.record.sha256,
            "storedAt": put.record.stored_at, "created": put.created, "event": put.record.value()
        }));
    } else {
        let kind = put.record.value()["type"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let verb = if put.created { "appended" } else { "unchanged" };
        out.line(format!(
            "{verb} {kind} to the lifecycle of {id} (event {})",
            put.record.version
        ));
    }
    Ok(())
}

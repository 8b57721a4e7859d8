//! `small store lineage append|get|ancestors|descendants`.

use super::{read_json, Out};
use crate::error::CmdResult;
use serde_json::{json, Value};
use small_store::{Direction, PrimitiveStore, StoreError};

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Append lineage records `{artifactId, derivedFrom, producedBy{actor,name,runId}, at?}`
    /// from JSON files (`at` defaults to now; an identical record again changes nothing)
    Append {
        #[arg(required = true)]
        files: Vec<String>,
    },
    /// Print the lineage records of an artifact, oldest first, as stored
    Get { id: String },
    /// What an artifact was derived from, transitively, up to --depth steps
    Ancestors {
        id: String,
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
        depth: u32,
    },
    /// What was derived from an artifact, transitively, up to --depth steps
    Descendants {
        id: String,
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
        depth: u32,
    },
}

pub fn run(c: Command, store: &dyn PrimitiveStore, out: &Out) -> CmdResult {
    match c {
        Command::Append { files } => {
            for f in files {
                let v = read_json(&f)?;
                let put = store.append_lineage(&v).map_err(|e| out.fail(e))?;
                if out.json {
                    out.value(&json!({
                        "artifactId": put.record.id, "seq": put.record.version,
                        "sha256": put.record.sha256, "storedAt": put.record.stored_at, "created": put.created
                    }));
                } else {
                    let verb = if put.created { "appended" } else { "unchanged" };
                    out.line(format!(
                        "{verb} lineage of {} (record {})",
                        put.record.id, put.record.version
                    ));
                }
            }
            Ok(())
        }
        Command::Get { id } => {
            let records = store.get_lineage(&id).map_err(|e| out.fail(e))?;
            if records.is_empty() {
                return Err(out.fail(StoreError::NotFound(format!(
                    "no lineage is recorded for `{id}`"
                ))));
            }
            if out.json {
                let items: Vec<Value> = records.iter().map(|r| r.value()).collect();
                out.value(&json!({"artifactId": id, "records": items}));
            } else {
                for r in &records {
                    out.record(r);
                }
            }
            Ok(())
        }
        Command::Ancestors { id, depth } => graph(store, out, &id, Direction::Ancestors, depth),
        Command::Descendants { id, depth } => graph(store, out, &id, Direction::Descendants, depth),
    }
}

fn graph(store: &dyn PrimitiveStore, out: &Out, id: &str, dir: Direction, depth: u32) -> CmdResult {
    let g = store
        .lineage_graph(id, dir, depth)
        .map_err(|e| out.fail(e))?;
    if out.json {
        out.value(&serde_json::to_value(&g).unwrap_or(Value::Null));
    } else if g.nodes.is_empty() {
        let what = if dir == Direction::Ancestors {
            "ancestors"
        } else {
            "descendants"
        };
        out.line(format!("{id} has no recorded {what}"));
    } else {
        for n in &g.nodes {
            out.data_line(format!("{}\t{}", n.depth, n.id));
        }
    }
    Ok(())
}

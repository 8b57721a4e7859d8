//! `small store artifact put|get|list|versions`.

use super::{read_json, GetArgs, Out, PageArgs, PutArgs, VersionsArgs};
use crate::error::CmdResult;
use small_store::{PrimitiveStore, StoreError};

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Materialise artifact versions `{id, version?, kind, data, schemaId}` from JSON files;
    /// `data` is validated against the registered schema first. Without `version`, the next
    /// version is assigned
    Put(PutArgs),
    /// Print an artifact version as stored (the latest unless --version)
    Get(GetArgs),
    /// List artifacts (latest version of each)
    List(PageArgs),
    /// List the versions of an artifact
    Versions(VersionsArgs),
}

pub fn run(c: Command, store: &dyn PrimitiveStore, out: &Out) -> CmdResult {
    match c {
        Command::Put(PutArgs { files }) => {
            for f in files {
                let v = read_json(&f)?;
                let put = store.put_artifact(&v).map_err(|e| out.fail(e))?;
                out.put("artifact", &put);
            }
            Ok(())
        }
        Command::Get(GetArgs { id, version }) => {
            match store.get_artifact(&id, version).map_err(|e| out.fail(e))? {
                Some(rec) => {
                    out.record(&rec);
                    Ok(())
                }
                None => Err(out.fail(StoreError::NotFound(match version {
                    Some(v) => format!("artifact `{id}` has no version {v}"),
                    None => format!("artifact `{id}` does not exist"),
                }))),
            }
        }
        Command::List(p) => {
            let l = store.list_artifacts(&p.page()).map_err(|e| out.fail(e))?;
            out.listing(&l);
            Ok(())
        }
        Command::Versions(VersionsArgs { id, page }) => {
            let l = store
                .list_artifact_versions(&id, &page.page())
                .map_err(|e| out.fail(e))?;
            out.listing(&l);
            Ok(())
        }
    }
}

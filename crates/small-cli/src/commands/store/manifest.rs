//! `small store manifest put|get|list|versions`.

use super::{read_json, GetArgs, Out, PageArgs, PutArgs, VersionsArgs};
use crate::error::CmdResult;
use small_store::{PrimitiveStore, StoreError};

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Store manifest versions `{id, version?, schemas, artifacts, policies}` from JSON files.
    /// Every referenced schema and artifact (`id` or `id@version`) must exist; the policies
    /// deterministic, appendOnly and validationRequired are enforced
    Put(PutArgs),
    /// Print a manifest version as stored (the latest unless --version)
    Get(GetArgs),
    /// List manifests (latest version of each)
    List(PageArgs),
    /// List the versions of a manifest
    Versions(VersionsArgs),
}

pub fn run(c: Command, store: &dyn PrimitiveStore, out: &Out) -> CmdResult {
    match c {
        Command::Put(PutArgs { files }) => {
            for f in files {
                let v = read_json(&f)?;
                let put = store.put_manifest(&v).map_err(|e| out.fail(e))?;
                out.put("manifest", &put);
            }
            Ok(())
        }
        Command::Get(GetArgs { id, version }) => {
            match store.get_manifest(&id, version).map_err(|e| out.fail(e))? {
                Some(rec) => {
                    out.record(&rec);
                    Ok(())
                }
                None => Err(out.fail(StoreError::NotFound(match version {
                    Some(v) => format!("manifest `{id}` has no version {v}"),
                    None => format!("manifest `{id}` does not exist"),
                }))),
            }
        }
        Command::List(p) => {
            let l = store.list_manifests(&p.page()).map_err(|e| out.fail(e))?;
            out.listing(&l);
            Ok(())
        }
        Command::Versions(VersionsArgs { id, page }) => {
            let l = store
                .list_manifest_versions(&id, &page.page())
                .map_err(|e| out.fail(e))?;
            out.listing(&l);
            Ok(())
        }
    }
}

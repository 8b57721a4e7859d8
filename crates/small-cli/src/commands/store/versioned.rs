//! `small store artifact|manifest put|get|list|versions`: the two versioned record kinds share
//! one set of subcommands (their help texts are set per kind in `store/mod.rs`).

use super::{read_json, GetArgs, Out, PageArgs, PutArgs, VersionsArgs};
use crate::error::CmdResult;
use small_store::{Listing, Page, PrimitiveStore, Put, Record, StoreError};

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Store versions from JSON files
    Put(PutArgs),
    /// Print a version as stored (the latest unless --version)
    Get(GetArgs),
    /// List the records (latest version of each)
    List(PageArgs),
    /// List the versions of a record
    Versions(VersionsArgs),
}

/// Which versioned record the subcommands work on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Artifact,
    Manifest,
}

type Res<T> = Result<T, StoreError>;

impl Kind {
    fn noun(self) -> &'static str {
        match self {
            Kind::Artifact => "artifact",
            Kind::Manifest => "manifest",
        }
    }

    fn put(self, s: &dyn PrimitiveStore, v: &serde_json::Value) -> Res<Put> {
        match self {
            Kind::Artifact => s.put_artifact(v),
            Kind::Manifest => s.put_manifest(v),
        }
    }

    fn get(self, s: &dyn PrimitiveStore, id: &str, version: Option<u64>) -> Res<Option<Record>> {
        match self {
            Kind::Artifact => s.get_artifact(id, version),
            Kind::Manifest => s.get_manifest(id, version),
        }
    }

    fn list(self, s: &dyn PrimitiveStore, page: &Page) -> Res<Listing> {
        match self {
            Kind::Artifact => s.list_artifacts(page),
            Kind::Manifest => s.list_manifests(page),
        }
    }

    fn versions(self, s: &dyn PrimitiveStore, id: &str, page: &Page) -> Res<Listing> {
        match self {
            Kind::Artifact => s.list_artifact_versions(id, page),
            Kind::Manifest => s.list_manifest_versions(id, page),
        }
    }
}

pub fn run(kind: Kind, c: Command, store: &dyn PrimitiveStore, out: &Out) -> CmdResult {
    let noun = kind.noun();
    match c {
        Command::Put(PutArgs { files }) => {
            for f in files {
                let v = read_json(&f)?;
                let put = kind.put(store, &v).map_err(|e| out.fail(e))?;
                out.put(noun, &put);
            }
        }
        Command::Get(GetArgs { id, version }) => {
            let rec = kind.get(store, &id, version).map_err(|e| out.fail(e))?;
            let Some(rec) = rec else {
                return Err(out.fail(StoreError::NotFound(match version {
                    Some(v) => format!("{noun} `{id}` has no version {v}"),
                    None => format!("{noun} `{id}` does not exist"),
                })));
            };
            out.record(&rec);
        }
        Command::List(p) => out.listing(&kind.list(store, &p.page()).map_err(|e| out.fail(e))?),
        Command::Versions(VersionsArgs { id, page }) => {
            let l = kind
                .versions(store, &id, &page.page())
                .map_err(|e| out.fail(e))?;
            out.listing(&l);
        }
    }
    Ok(())
}

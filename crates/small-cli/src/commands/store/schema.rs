//! `small store schema register|get|list`.

use super::{read_json, Out, PageArgs};
use crate::error::CmdResult;
use small_store::PrimitiveStore;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Register JSON Schemas (2020-12) under their `$id` (`-` reads standard input)
    Register {
        #[arg(required = true)]
        files: Vec<String>,
    },
    /// Print a registered schema as stored
    Get { id: String },
    /// List registered schemas
    List(PageArgs),
}

pub fn run(c: Command, store: &dyn PrimitiveStore, out: &Out) -> CmdResult {
    match c {
        Command::Register { files } => {
            for f in files {
                let v = read_json(&f)?;
                let put = store.register_schema(&v).map_err(|e| out.fail(e))?;
                out.put("schema", &put);
            }
            Ok(())
        }
        Command::Get { id } => match store.get_schema(&id).map_err(|e| out.fail(e))? {
            Some(rec) => {
                out.record(&rec);
                Ok(())
            }
            None => Err(out.fail(small_store::StoreError::NotFound(format!(
                "schema `{id}` is not registered"
            )))),
        },
        Command::List(p) => {
            let l = store.list_schemas(&p.page()).map_err(|e| out.fail(e))?;
            out.listing(&l);
            Ok(())
        }
    }
}

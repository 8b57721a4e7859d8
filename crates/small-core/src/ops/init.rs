//! `init`: create a workspace from the templates, with AGENTS.md and the merge driver (the
//! files are built in `authoring::init`). `init --force` over a workspace rewrites its v1
//! files, which the profile's back end refuses on a 2.0.0 one.

pub use crate::authoring::init::{
    workspace_root, FileAction, InitOutcome, InitRequest, InitWorkspaceRequest,
};
pub use crate::authoring::templates::{base_artifacts, bootstrap_handoff, workspace};

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::authoring::init::{InitWorkspaceOutcome, MergeDriverOutcome};
use crate::ops::report::{outln, pad, Report};
use crate::ops::{V1Run, Workspace};
use crate::spec::consts::{AGENTS_FILE, PROTOCOL_VERSION, SMALL_DIR};
use crate::workspace::error::Error;

/// Refuse to rewrite the workspace at `root` (`force`) when its profile has no v1 run.
fn allow(root: &Path, force: bool) -> Result<(), Error> {
    if force && root.join(SMALL_DIR).is_dir() {
        Workspace::at(root.to_path_buf())
            .backend()
            .allow_v1_run(V1Run::Reinit)?;
    }
    Ok(())
}

/// Create (or with `force` re-create) the workspace at `req.root`.
pub fn init(req: &InitRequest) -> Result<InitOutcome, Error> {
    allow(req.root, req.force)?;
    crate::authoring::init::init(req)
}

/// One file `init` wrote, as `init --json` lists it.
#[derive(Debug, Clone, Serialize)]
pub struct InitFile {
    pub path: String,
    /// Whether it was there before (rewritten or extended).
    pub existed: bool,
    pub note: String,
}

/// One task the plan was seeded with.
#[derive(Debug, Clone, Serialize)]
pub struct InitTask {
    pub id: String,
    pub title: String,
}

/// A whole `small init`: the `init --json` document.
#[derive(Debug, Clone, Serialize)]
pub struct Initialized {
    pub workspace: String,
    pub reinitialized: bool,
    pub kind: &'static str,
    pub replay_id: String,
    pub files: Vec<InitFile>,
    pub tasks: Vec<InitTask>,
    pub gitignore_added: Vec<String>,
    /// What was done to AGENTS.md (`None`: left alone).
    pub agents: Option<String>,
    pub enclosing_workspace: Option<String>,
    /// What was done about the merge driver, one line each.
    pub merge_driver: Vec<String>,
    /// What went wrong besides (said besides the document).
    #[serde(skip)]
    pub warnings: Vec<String>,
    #[serde(skip)]
    small_dir: PathBuf,
    /// What happened to each of `files`.
    #[serde(skip)]
    actions: Vec<FileAction>,
    /// Whether `.gitignore` existed when lines were added to it.
    #[serde(skip)]
    gitignore_existed: Option<bool>,
}

/// Create the workspace at `req.root`, AGENTS.md and (in a git repository) the merge
/// driver.
pub fn init_workspace(req: &InitWorkspaceRequest) -> Result<Initialized, Error> {
    allow(req.root, req.force)?;
    let out = crate::authoring::init::init_workspace(req)?;
    Ok(Initialized::of(req, out))
}

/// What was done about the merge driver, one line each.
fn merge_driver_lines(m: &MergeDriverOutcome) -> Vec<String> {
    match m {
        MergeDriverOutcome::Skipped => vec!["skipped   merge driver (--no-merge-driver)".into()],
        MergeDriverOutcome::NotGit => vec![
            "skipped   merge driver: not a git repository (after `git init`, run `small merge-driver --install`)".into(),
        ],
        MergeDriverOutcome::Installed(r) => {
            r.lines().into_iter().map(|l| format!("merge     {l}")).collect()
        }
        MergeDriverOutcome::Failed(e) => vec![format!("warning   merge driver not installed: {e}")],
    }
}

impl Initialized {
    fn of(req: &InitWorkspaceRequest, whole: InitWorkspaceOutcome) -> Initialized {
        let o = whole.init;
        let root = req.root;
        let mut warnings = Vec::new();
        if let Some(outer) = &whole.enclosing {
            warnings.push(format!(
                "{} is inside the SMALL workspace at {}; this creates a nested workspace that commands run below {} will use instead (run `small` commands from anywhere inside a project: they find its .small/ upward)",
                root.display(),
                outer.display(),
                root.display()
            ));
        }
        if let Some((why, backup)) = &o.progress_backup {
            warnings.push(format!(
                "the existing progress log could not be extended ({why}); it was moved to {backup} and a new log started"
            ));
        }
        Initialized {
            workspace: root.display().to_string(),
            reinitialized: o.existed,
            kind: o.kind.as_str(),
            replay_id: o.replay_id,
            files: o
                .files
                .iter()
                .map(|f| InitFile {
                    path: f.path.clone(),
                    existed: f.action != FileAction::Created,
                    note: f.note.clone(),
                })
                .collect(),
            tasks: req
                .tasks
                .iter()
                .enumerate()
                .map(|(i, t)| InitTask {
                    id: format!("task-{}", i + 1),
                    title: t.trim().to_string(),
                })
                .collect(),
            gitignore_added: o
                .gitignore
                .as_ref()
                .map(|(_, a)| a.clone())
                .unwrap_or_default(),
            agents: whole
                .agents
                .as_ref()
                .map(|c| crate::ops::agents::describe(c, AGENTS_FILE, false)),
            enclosing_workspace: whole.enclosing.as_ref().map(|p| p.display().to_string()),
            merge_driver: merge_driver_lines(&whole.merge_driver),
            warnings,
            small_dir: o.small_dir,
            actions: o.files.iter().map(|f| f.action).collect(),
            gitignore_existed: o.gitignore.as_ref().map(|(had, _)| *had),
        }
    }
}

impl Report for Initialized {
    /// What was created, each file with its purpose, and the next three steps.
    fn text(&self) -> String {
        let mut o = String::new();
        let verb = if self.reinitialized {
            "Re-initialized the"
        } else {
            "Initialized a"
        };
        outln!(
            o,
            "{verb} SMALL v{PROTOCOL_VERSION} workspace in {}\n",
            self.small_dir.display()
        );
        let width = self.files.iter().map(|f| f.path.len()).max().unwrap_or(0);
        for (f, action) in self.files.iter().zip(&self.actions) {
            let verb = match action {
                FileAction::Created => "created  ",
                FileAction::Extended => "extended ",
                FileAction::Overwrote => "overwrote",
            };
            outln!(o, "  {verb} {}  {}", pad(&f.path, width), f.note);
        }
        if let Some(had) = self.gitignore_existed {
            let verb = if had { "updated  " } else { "created  " };
            outln!(
                o,
                "  {verb} .gitignore: added {}",
                self.gitignore_added.join(", ")
            );
        }
        match &self.agents {
            None => outln!(o, "  skipped   AGENTS.md (--no-agents)"),
            Some(a) => outln!(o, "  {a}"),
        }
        for line in &self.merge_driver {
            outln!(o, "  {line}");
        }
        let step2 = if self.tasks.is_empty() {
            "small plan --add \"<first task>\" (and `small plan --cancel task-1` for the placeholder)"
                .to_string()
        } else {
            format!(
                "small status (the plan has your {} task(s))",
                self.tasks.len()
            )
        };
        outln!(
            o,
            "\nNext:\n  1. A human writes the intent and reviews the constraints in .small/intent.small.yml and\n     .small/constraints.small.yml (agents must not edit these two files).\n  2. {step2}\n  3. small check --strict"
        );
        o
    }
}

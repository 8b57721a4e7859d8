//! `small completion <shell>`: shell completion scripts.

use crate::error::{CliError, CmdResult};
use crate::GlobalArgs;
use clap_complete::Shell;

/// Print a shell completion script for small
///
/// Load it in the current shell, or save it where your shell looks for completions:
///
///   bash:        source <(small completion bash)
///   zsh:         small completion zsh > "${fpath[1]}/_small"
///   fish:        small completion fish > ~/.config/fish/completions/small.fish
///   powershell:  small completion powershell | Out-String | Invoke-Expression
///   elvish:      eval (small completion elvish | slurp)
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The shell to generate the script for
    #[arg(value_enum, ignore_case = true)]
    pub shell: Shell,
}

pub fn run(args: Args, _g: &GlobalArgs) -> CmdResult {
    let mut cmd = <crate::Cli as clap::CommandFactory>::command();
    let mut buf: Vec<u8> = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "small", &mut buf);
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(&buf)
        .and_then(|_| out.flush())
        .map_err(|e| CliError::usage(format!("cannot write the completion script: {e}")))
}

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
    /// Leave out the descriptions of commands and flags (names only)
    #[arg(long)]
    pub no_descriptions: bool,
}

pub fn run(args: Args, g: &GlobalArgs) -> CmdResult {
    let mut cmd = crate::cli_command();
    if args.no_descriptions {
        // Build first so that the generated --help flags and `help` command are included.
        cmd.build();
        cmd = without_descriptions(cmd);
    }
    let mut buf: Vec<u8> = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "small", &mut buf);
    g.data(String::from_utf8(buf).map_err(|e| CliError::usage(e.to_string()))?)
}

/// The same commands and flags with every description removed.
fn without_descriptions(cmd: clap::Command) -> clap::Command {
    let none: Option<&str> = None;
    cmd.about(none)
        .long_about(none)
        .mut_args(|a| {
            let none: Option<&str> = None;
            let a = a.help(none).long_help(none);
            // Possible values carry their own help text.
            let values: Vec<clap::builder::PossibleValue> = a
                .get_possible_values()
                .into_iter()
                .map(|v| v.help(none))
                .collect();
            if values.is_empty() {
                a
            } else {
                // Only ever used to generate the script, never to parse.
                a.value_parser(clap::builder::PossibleValuesParser::new(values))
            }
        })
        .mut_subcommands(without_descriptions)
}

//! `small`: the command-line front end. It parses flags, calls the protocol library and
//! prints; all protocol logic lives in `small-core`.

mod commands;
mod error;
#[cfg(all(test, unix))]
mod fuzz;
mod harness;
mod output;
mod panic_guard;
mod render;
mod settings;
mod units;
mod v2writes;
mod workspace_dir;
mod writes;

use clap::{ArgAction, CommandFactory, FromArgMatches, Parser, Subcommand};
use std::process::ExitCode;

/// SMALL: durable, machine-checkable project state for agents and humans.
#[derive(Parser, Debug)]
#[command(name = "small", disable_version_flag = true)]
pub struct Cli {
    /// Print version information and exit (same as `small version`)
    #[arg(short = 'V', long = "version", short_alias = 'v')]
    pub version: bool,
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Flags every command accepts.
#[derive(clap::Args, Debug, Clone)]
pub struct GlobalArgs {
    /// When to use colours: auto (a terminal, unless NO_COLOR or CI is set), always, never
    #[arg(long, global = true, value_enum, default_value_t, value_name = "WHEN")]
    pub color: output::ColorChoice,
    /// Disable ANSI colour output (same as --color never)
    #[arg(long, global = true)]
    pub no_color: bool,
    /// Print nothing but errors (no progress, no summaries, no warnings)
    #[arg(long, global = true)]
    pub quiet: bool,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    Version(commands::version::Args),
    Init(commands::init::Args),
    Validate(commands::validate::Args),
    Lint(commands::lint::Args),
    Check(commands::check::Args),
    Verify(commands::verify::Args),
    Status(commands::status::Args),
    Health(commands::health::Args),
    Emit(commands::emit::Args),
    Doctor(commands::doctor::Args),
    Plan(commands::plan::Args),
    Progress(commands::progress::Args),
    Checkpoint(commands::checkpoint::Args),
    Claim(commands::claim::Args),
    Unclaim(commands::unclaim::Args),
    Claims(commands::claims::Args),
    Sync(commands::sync::Args),
    Apply(commands::apply::Args),
    Handoff(commands::handoff::Args),
    Start(commands::start::Args),
    Reset(commands::reset::Args),
    Resume(commands::resume::Args),
    Reconstruct(commands::reconstruct::Args),
    Reconcile(commands::reconcile::Args),
    Fix(commands::fix::Args),
    Agents(commands::agents::Args),
    Draft(commands::draft::Args),
    Accept(commands::accept::Args),
    Run(commands::run::Args),
    Session(commands::session::Args),
    Evidence(commands::evidence::Args),
    Mode(commands::mode::Args),
    Policy(commands::policy::Args),
    Archive(commands::archive::Args),
    Selftest(commands::selftest::Args),
    Completion(commands::completion::Args),
    Manifest(commands::manifest::Args),
    Mcp(commands::mcp::Args),
    MergeDriver(commands::merge_driver::Args),
    Migrate(commands::migrate::Args),
    Serve(commands::serve::Args),
    Ui(commands::ui::Args),
    Store(commands::store::Args),
    Man(commands::man::Args),
}

/// The command-line definition as parsed: every boolean flag also takes an explicit value,
/// `--flag=true` or `--flag=false` (as Go CLIs built with cobra accept).
pub fn cli_command() -> clap::Command {
    bool_flags_take_values(Cli::command())
}

fn bool_flags_take_values(cmd: clap::Command) -> clap::Command {
    let cmd = cmd.mut_args(|a| {
        if matches!(a.get_action(), ArgAction::SetTrue)
            && a.get_long().is_some_and(|l| l != "version")
        {
            a.action(ArgAction::Set)
                .num_args(0..=1)
                .require_equals(true)
                .value_name("BOOL")
                .value_parser(clap::builder::BoolishValueParser::new())
                .default_value("false")
                .default_missing_value("true")
                .hide_default_value(true)
                .hide_possible_values(true)
        } else {
            a
        }
    });
    // A subcommand's flags are rewritten when clap builds it: for the one being run, or for
    // all of them (help, completions, manual pages), not for every command on every run.
    cmd.mut_subcommands(|sub| sub.defer(bool_flags_take_values))
}

fn main() -> ExitCode {
    restore_default_sigpipe();
    panic_guard::install();
    let code = match std::panic::catch_unwind(|| run(std::env::args_os())) {
        Ok(code) => code,
        Err(_) => error::EXIT_USAGE,
    };
    // A panic on another thread that was not carried to this one still fails the run.
    if panic_guard::happened() {
        return ExitCode::from(error::EXIT_USAGE);
    }
    ExitCode::from(code)
}

/// Parse `args` (the program name first) and run the command: what `small` does, as an
/// exit code. Errors are reported on stderr (or as JSON where `--json` was given).
fn run(args: impl IntoIterator<Item = std::ffi::OsString>) -> u8 {
    let args: Vec<std::ffi::OsString> = args.into_iter().collect();
    let matches = match cli_command().try_get_matches_from(&args) {
        Ok(m) => m,
        Err(e) => refuse_command_line(e, &args),
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => refuse_command_line(e, &args),
    };
    let g = cli.global.clone();
    let Some(command) = cli.command else {
        if cli.version {
            // `small --version` / `small -V` (and `-v`, as the reference spells it).
            let args = commands::version::Args { json: false };
            return finish(commands::version::run(args, &g), &g, false);
        }
        // Bare `small`: the help, on stdout, and success (as the reference does).
        let help = cli_command().render_help().to_string();
        return finish(g.data(format!("{}\n", help.trim_end())), &g, false);
    };
    let result = dispatch(command, &g);
    finish(result, &g, json_requested(&matches))
}

/// Run one parsed command.
fn dispatch(command: Command, g: &GlobalArgs) -> error::CmdResult {
    output::printed::reset();
    match command {
        Command::Version(a) => commands::version::run(a, g),
        Command::Init(a) => commands::init::run(a, g),
        Command::Validate(a) => commands::validate::run(a, g),
        Command::Lint(a) => commands::lint::run(a, g),
        Command::Check(a) => commands::check::run(a, g),
        Command::Verify(a) => commands::verify::run(a, g),
        Command::Status(a) => commands::status::run(a, g),
        Command::Health(a) => commands::health::run(a, g),
        Command::Emit(a) => commands::emit::run(a, g),
        Command::Doctor(a) => commands::doctor::run(a, g),
        Command::Plan(a) => commands::plan::run(a, g),
        Command::Progress(a) => commands::progress::run(a, g),
        Command::Checkpoint(a) => commands::checkpoint::run(a, g),
        Command::Claim(a) => commands::claim::run(a, g),
        Command::Unclaim(a) => commands::unclaim::run(a, g),
        Command::Claims(a) => commands::claims::run(a, g),
        Command::Sync(a) => commands::sync::run(a, g),
        Command::Apply(a) => commands::apply::run(a, g),
        Command::Handoff(a) => commands::handoff::run(a, g),
        Command::Start(a) => commands::start::run(a, g),
        Command::Reset(a) => commands::reset::run(a, g),
        Command::Resume(a) => commands::resume::run(a, g),
        Command::Reconstruct(a) => commands::reconstruct::run(a, g),
        Command::Reconcile(a) => commands::reconcile::run(a, g),
        Command::Fix(a) => commands::fix::run(a, g),
        Command::Agents(a) => commands::agents::run(a, g),
        Command::Draft(a) => commands::draft::run(a, g),
        Command::Accept(a) => commands::accept::run(a, g),
        Command::Run(a) => commands::run::run(a, g),
        Command::Session(a) => commands::session::run(a, g),
        Command::Evidence(a) => commands::evidence::run(a, g),
        Command::Mode(a) => commands::mode::run(a, g),
        Command::Policy(a) => commands::policy::run(a, g),
        Command::Archive(a) => commands::archive::run(a, g),
        Command::Selftest(a) => commands::selftest::run(a, g),
        Command::Completion(a) => commands::completion::run(a, g),
        Command::Manifest(a) => commands::manifest::run(a, g),
        Command::Mcp(a) => commands::mcp::run(a, g),
        Command::MergeDriver(a) => commands::merge_driver::run(a, g),
        Command::Migrate(a) => commands::migrate::run(a, g),
        Command::Serve(a) => commands::serve::run(a, g),
        Command::Ui(a) => commands::ui::run(a, g),
        Command::Store(a) => commands::store::run(a, g),
        Command::Man(a) => commands::man::run(a, g),
    }
}

/// A command line clap cannot parse: with `--json` among the arguments, the error document
/// on stdout too (a caller that asked for JSON gets JSON), then clap's own output and exit
/// code (2). Help and version displays are left as clap prints them.
fn refuse_command_line(e: clap::Error, args: &[std::ffi::OsString]) -> ! {
    use clap::error::ErrorKind;
    let display = matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion);
    if e.use_stderr() && !display && json_in_args(args) {
        error::CliError::usage(clap_message(&e)).print_json();
    }
    e.exit()
}

/// `--json` or `--json=<true>` among the arguments (before a `--` that ends the flags).
fn json_in_args(args: &[std::ffi::OsString]) -> bool {
    let truthy = |v: &str| {
        matches!(
            v.to_ascii_lowercase().as_str(),
            "y" | "yes" | "t" | "true" | "on" | "1"
        )
    };
    args.iter()
        .skip(1)
        .map(|a| a.to_string_lossy())
        .take_while(|a| a != "--")
        .any(|a| a == "--json" || a.strip_prefix("--json=").is_some_and(truthy))
}

/// clap's error as one line: the text before its usage section, without `error: `.
fn clap_message(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let error = text.split("\n\n").next().unwrap_or_default();
    let words: Vec<&str> = error.split_whitespace().collect();
    let line = words.join(" ");
    line.strip_prefix("error: ").unwrap_or(&line).to_string()
}

/// Whether the command that ran was given `--json` (its errors are then JSON too).
fn json_requested(matches: &clap::ArgMatches) -> bool {
    let mut m = matches;
    while let Some((_, sub)) = m.subcommand() {
        m = sub;
    }
    m.try_get_one::<bool>("json")
        .ok()
        .flatten()
        .copied()
        .unwrap_or(false)
}

/// Print a command's error (if any) and turn it into the process exit code.
fn finish(result: error::CmdResult, g: &GlobalArgs, json: bool) -> u8 {
    match result {
        Ok(()) => error::EXIT_OK,
        Err(e) => {
            e.report(g, json);
            e.exit
        }
    }
}

/// Rust ignores SIGPIPE, which turns `small status | head` into a panic on the next write.
/// Like other Unix tools, `small` simply stops when its reader goes away.
fn restore_default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in main, before any other thread exists; resetting a
    // signal disposition to its default has no other effect on the program.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

//! The command line. `main` calls [`main`]; each subcommand is a function in the library.

mod convert;
mod healthcheck;
mod jobs;
mod logs;
mod storage;
mod token;

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use nix::unistd::Pid;

use crate::config::{Config, ConfigError, VARIABLES};
use crate::logging::{self, Role};
use crate::worker::{self, WorkerOptions};

/// Exit code for configuration errors (and clap's usage errors), so scripts can tell "fix your
/// settings" from "it crashed".
const EXIT_CONFIG: u8 = 2;

#[derive(Debug, Parser)]
#[command(
    name = "bindery",
    version,
    about = "Turns manuscripts (Markdown, DOCX, OpenDocument, EPUB, HTML, plain text) into EPUB 3 books and offline web readers.",
    long_about = "Turns manuscripts (Markdown, DOCX, OpenDocument, EPUB, HTML, plain text) into EPUB 3 books and offline web readers.\n\n\
        With no command, `bindery` runs `bindery serve`: the web server on $PORT plus a worker \
        process it supervises. Everything is configured through environment variables (or a \
        .env file); `bindery config` shows the effective settings.",
    after_help = "Run `bindery config --help` to list every environment variable."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the web server and its worker child process (the default). Use this on one machine.
    Serve,
    /// Run the web server only, with no worker child. Pair it with `bindery worker` processes.
    Web,
    /// Run a worker only: it claims and runs conversion jobs from the database.
    Worker {
        /// Set by `bindery serve`: the pid of the web process this worker belongs to.
        #[arg(long, hide = true)]
        supervised_by: Option<i32>,
        /// Set by `bindery serve`: the id under which this worker heartbeats.
        #[arg(long, hide = true)]
        worker_id: Option<String>,
    },
    /// Apply database migrations and exit (a release-phase command).
    Migrate,
    /// Convert one manuscript to an EPUB (and optionally the web reader) right here, with no
    /// server or queue. Prints the book's report.
    Convert(convert::ConvertArgs),
    /// Exit 0 if this machine's web server answers `/healthz` on $PORT, else 1 (a container's
    /// HEALTHCHECK).
    Healthcheck,
    /// Print the effective configuration, with secrets redacted.
    #[command(after_long_help = variables_help())]
    Config,
    /// Say which scripts the print edition can draw here: for each script Bindery's own fonts
    /// lack, the typeface it prints it in and where that was found, or the Debian package that
    /// installs it. Exits 1 when one is missing.
    Fonts {
        /// Print only the font files found, one path a line (what a container image copies).
        #[arg(long)]
        files: bool,
    },
    /// Inspect and operate the job queue: stats, list, show, retry, cancel, discard, pause, resume.
    Jobs {
        #[command(subcommand)]
        command: jobs::JobsCommand,
    },
    /// Print the log lines of every web and worker process sharing the database, merged by time
    /// (or a deployment's, with --app; or this machine's files, with --files); -f follows.
    Logs(logs::LogsArgs),
    /// Manage API tokens: create (shown once), list, revoke. Each token is a tenant.
    Token {
        #[command(subcommand)]
        command: token::TokenCommand,
    },
    /// Pair the database and the blob store deliberately (`adopt`), when start-up refuses them
    /// as two different installations.
    Storage {
        #[command(subcommand)]
        command: storage::StorageCommand,
    },
    /// Run by a worker: read one manuscript into the blob store, within memory and processor
    /// limits (see `pipeline::steps::parse`).
    #[command(name = "read-manuscript", hide = true)]
    ReadManuscript,
    /// Run by a worker: typeset one book's print edition into the blob store, within memory
    /// and processor limits (see `pipeline::steps::typeset`).
    #[command(name = "print-book", hide = true)]
    PrintBook,
    /// Run by a worker: package one book's EPUB, web reader or covers into the blob store,
    /// within memory and processor limits (see `pipeline::steps::packaging`).
    #[command(name = "package-book", hide = true)]
    PackageBook,
}

/// `bindery fonts`: what [`crate::script_fonts`] finds on this machine.
fn fonts(files_only: bool) -> ExitCode {
    let mut missing = false;
    for script in crate::script_fonts::SCRIPTS {
        let found = crate::script_fonts::found_files(script);
        if files_only {
            for path in &found {
                println!("{}", path.display());
            }
            continue;
        }
        if found.is_empty() {
            missing = true;
            println!(
                "{}: missing ({}; install Debian's {})",
                script.name, script.families[0], script.package
            );
        } else {
            let paths: Vec<String> = found.iter().map(|p| p.display().to_string()).collect();
            println!(
                "{}: {} ({})",
                script.name,
                script.families[0],
                paths.join(", ")
            );
        }
    }
    if missing {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn variables_help() -> String {
    let mut out = String::from("Environment variables:\n");
    for v in VARIABLES {
        let default = if v.default.is_empty() {
            "unset"
        } else {
            v.default
        };
        out.push_str(&format!(
            "  {} [default: {default}]\n      {}\n",
            v.name, v.help
        ));
    }
    out
}

pub fn main() -> ExitCode {
    crate::executable::name_this_process();
    let cli = Cli::parse_from(host_argv(std::env::args_os()));
    let command = cli.command.unwrap_or(Command::Serve);

    // A supervised worker binds its life to the web process before anything else can fail or
    // take time: the earlier this runs, the smaller the window in which the parent can die
    // unnoticed.
    if let Command::Worker {
        supervised_by: Some(pid),
        ..
    } = &command
        && let Err(e) = worker::bind_to_supervisor(Pid::from_raw(*pid))
    {
        eprintln!("bindery worker: {e}");
        return ExitCode::FAILURE;
    }

    if let Command::Fonts { files } = command {
        return fonts(files);
    }
    if let Err(e) = load_dotenv() {
        eprintln!("bindery: {e}");
        return ExitCode::from(EXIT_CONFIG);
    }
    // Following a deployment from elsewhere needs none of this machine's configuration.
    if let Command::Logs(args) = &command
        && args.app.is_some()
    {
        return logs::remote_main(args);
    }
    let loaded = match Config::from_env() {
        Ok(loaded) => loaded,
        Err(e) => return config_error(&e),
    };
    let mut config = loaded.config;

    if let Command::Config = command {
        for (name, value) in config.describe() {
            println!("{name}={value}");
        }
        for warning in &loaded.warnings {
            eprintln!("warning: {warning}");
        }
        return ExitCode::SUCCESS;
    }
    if let Command::Convert(args) = command {
        return convert::run(&config, args);
    }
    if let Command::ReadManuscript = command {
        return crate::pipeline::steps::parse::child_main(&config);
    }
    if let Command::PrintBook = command {
        return crate::pipeline::steps::print_book::child_main(&config);
    }
    if let Command::PackageBook = command {
        return crate::pipeline::steps::packaging::child_main(&config);
    }
    if let Command::Healthcheck = command {
        // Runs every few seconds in a container: no directories, log files or database.
        return match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime.block_on(healthcheck::run(&config)),
            Err(e) => {
                eprintln!("bindery healthcheck: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if !matches!(command, Command::Logs(_))
        && let Err(e) = crate::config::platform::check_storage_is_kept(&config)
    {
        return config_error(&e);
    }
    let directory_warnings = match config.prepare_directories() {
        Ok(warnings) => warnings,
        Err(e) => return config_error(&e),
    };

    let role = match command {
        Command::Serve | Command::Web => Role::Web,
        Command::Worker { .. } => Role::Worker,
        Command::Migrate
        | Command::Config
        | Command::Fonts { .. }
        | Command::Healthcheck
        | Command::Convert(_)
        | Command::Jobs { .. }
        | Command::Logs(_)
        | Command::Token { .. }
        | Command::Storage { .. }
        | Command::ReadManuscript
        | Command::PrintBook
        | Command::PackageBook => Role::Cli,
    };
    let guard = match logging::init(role, &config) {
        Ok(guard) => guard,
        Err(e) => {
            eprintln!("bindery: could not start logging: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    // The child reads the same environment; one set of warnings is enough.
    let supervised = matches!(
        command,
        Command::Worker {
            supervised_by: Some(_),
            ..
        }
    );
    if !supervised {
        for warning in loaded.warnings.iter().chain(&directory_warnings) {
            tracing::warn!("{warning}");
        }
    }

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "could not start the async runtime");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match command {
            Command::Serve => crate::supervisor::run(&config, true).await,
            Command::Web => crate::supervisor::run(&config, false).await,
            Command::Worker {
                supervised_by,
                worker_id,
            } => {
                let options = WorkerOptions {
                    supervisor: supervised_by.map(Pid::from_raw),
                    worker_id: worker_id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
                };
                worker::run(&config, options).await
            }
            Command::Migrate => migrate(&config).await,
            Command::Jobs { command } => jobs::run(&config, command).await,
            Command::Token { command } => token::run(&config, command).await,
            Command::Storage { command } => storage::run(&config, command).await,
            Command::Logs(args) => logs::run(&config, args).await,
            Command::Config
            | Command::Fonts { .. }
            | Command::Convert(_)
            | Command::Healthcheck
            | Command::ReadManuscript
            | Command::PrintBook
            | Command::PackageBook => Ok(ExitCode::SUCCESS),
        }
    });
    let code = match result {
        Ok(code) => code,
        // Found only once storage was reached (a database that refuses the TLS settings, say):
        // still the user's to fix, so the same one line and exit code as at start-up.
        Err(e) if e.downcast_ref::<ConfigError>().is_some() => {
            let line = e
                .downcast_ref::<ConfigError>()
                .map(ToString::to_string)
                .unwrap_or_default();
            eprintln!("bindery: configuration error: {line}");
            ExitCode::from(EXIT_CONFIG)
        }
        Err(e) => {
            tracing::error!(error = %format!("{e:#}"), "{} failed", role.as_str());
            ExitCode::FAILURE
        }
    };
    // Stuck blocking tasks must not hold the exit hostage.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    drop(guard);
    code
}

/// The arguments as a host hands them over, made into the ones `bindery` parses.
///
/// The image's ENTRYPOINT is the binary, and most hosts replace only its CMD with the command
/// their manifest names (Fly.io's `release_command`, heroku.yml's `release`, `dokku run`,
/// compose's `command:`), which people write as a whole command line, by habit: `bindery
/// migrate`. So a first argument that names this program (`bindery`, or a path ending in
/// `/bindery`) is dropped, and `bindery bindery migrate` runs `bindery migrate`. A host that
/// hands over a whole command line as one argument (`["bindery migrate"]`) gets it split at its
/// spaces. No subcommand is called `bindery` and no subcommand has a space in it, so neither
/// changes the meaning of anything that worked before.
fn host_argv(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut args: Vec<OsString> = args.into_iter().collect();
    if args.len() == 2
        && let Some(line) = args[1].to_str()
        && line.trim().contains(char::is_whitespace)
    {
        let words: Vec<OsString> = line.split_whitespace().map(OsString::from).collect();
        args.truncate(1);
        args.extend(words);
    }
    if args.get(1).is_some_and(|first| names_this_program(first)) {
        args.remove(1);
    }
    args
}

/// Whether `arg` is this program's name: `bindery`, or a path to a file named so.
fn names_this_program(arg: &OsStr) -> bool {
    Path::new(arg).file_name() == Some(OsStr::new("bindery"))
        && !arg.to_string_lossy().ends_with('/')
}

fn config_error(e: &ConfigError) -> ExitCode {
    eprintln!("bindery: configuration error: {e}");
    ExitCode::from(EXIT_CONFIG)
}

fn load_dotenv() -> Result<(), String> {
    match dotenvy::dotenv() {
        Ok(_) => Ok(()),
        Err(e) if e.not_found() => Ok(()),
        Err(e) => Err(format!(".env could not be read: {e}")),
    }
}

async fn migrate(config: &Config) -> anyhow::Result<ExitCode> {
    let db = crate::storage::Database::connect(&config.database, 1).await?;
    let blobs = crate::storage::BlobStore::open(&config.blob, &config.azure)?;
    // A new database beside another installation's blob store is refused before anything is
    // created in it; otherwise migrated, and the installation id recorded or compared.
    let checked = crate::storage::installation::at_start(&db, &blobs, true).await;
    if checked.is_ok() {
        crate::tokens::first_admin_at_start(&db, config).await;
    }
    db.close().await;
    checked?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(args: &[&str]) -> Vec<String> {
        host_argv(args.iter().map(OsString::from))
            .into_iter()
            .map(|a| a.into_string().unwrap_or_default())
            .collect()
    }

    /// `Cli` parses what a host's command line becomes, to the subcommand it names.
    fn parses(args: &[&str]) -> String {
        let cli = Cli::try_parse_from(host_argv(args.iter().map(OsString::from)))
            .unwrap_or_else(|e| panic!("{args:?} does not parse: {e}"));
        format!("{:?}", cli.command)
    }

    #[test]
    fn a_command_line_that_repeats_the_program_name_runs_its_subcommand() {
        let entrypoint = "/usr/local/bin/bindery";
        // Fly.io's release_command, heroku.yml's release, dokku run, compose's command:
        // the host keeps the ENTRYPOINT and puts the manifest's words after it.
        assert_eq!(parses(&[entrypoint, "bindery", "migrate"]), "Some(Migrate)");
        assert_eq!(parses(&[entrypoint, "migrate"]), "Some(Migrate)");
        assert_eq!(
            parses(&[entrypoint, "/usr/local/bin/bindery", "migrate"]),
            "Some(Migrate)"
        );
        assert_eq!(
            parses(&[entrypoint, "./target/release/bindery", "serve"]),
            "Some(Serve)"
        );
        assert_eq!(parses(&[entrypoint, "bindery"]), "None");
        assert_eq!(
            argv(&[entrypoint, "bindery", "token", "create", "alice", "--admin"]),
            [entrypoint, "token", "create", "alice", "--admin"]
        );
        // Without the ENTRYPOINT (a host that runs the command itself, bindery on PATH).
        assert_eq!(parses(&["bindery", "migrate"]), "Some(Migrate)");
    }

    #[test]
    fn a_whole_command_line_in_one_argument_is_split_at_its_spaces() {
        assert_eq!(
            argv(&["bindery", "bindery migrate"]),
            ["bindery", "migrate"]
        );
        assert_eq!(
            argv(&["bindery", " token  create\talice "]),
            ["bindery", "token", "create", "alice"]
        );
        assert_eq!(parses(&["bindery", "bindery migrate"]), "Some(Migrate)");
        assert_eq!(parses(&["bindery", "migrate"]), "Some(Migrate)");
    }

    #[test]
    fn only_the_first_argument_is_taken_for_the_program_name() {
        // A manuscript called bindery, or a tenant called bindery, stays an argument.
        assert_eq!(
            argv(&["bindery", "convert", "bindery"]),
            ["bindery", "convert", "bindery"]
        );
        assert_eq!(
            argv(&["bindery", "token", "create", "bindery"]),
            ["bindery", "token", "create", "bindery"]
        );
        // Not the program's name: another program, a directory, a longer name.
        for other in ["bindery-old", "binder", "bindery/", "--bindery"] {
            assert_eq!(argv(&["bindery", other]), ["bindery", other], "{other}");
        }
        // Two arguments are never joined or split, whatever they hold.
        assert_eq!(
            argv(&["bindery", "convert", "my book.md"]),
            ["bindery", "convert", "my book.md"]
        );
    }
}

//! Reading a manuscript in a child process of its own.
//!
//! Reading is the one step whose cost the input decides: a 1 MB DOCX can inflate to
//! hundreds of megabytes and millions of words. The readers stop at the book limits
//! (`MAX_BOOK_WORDS`…) as they go, but a file that finds another way to be expensive must
//! not take the worker down with it (under a host's memory limit, that is a restart of the
//! whole service, into the same job). So the `parse` step runs `bindery read-manuscript` as a
//! child process limited by `setrlimit` to `WORKER_MEMORY_BUDGET` of memory and
//! `STEP_CPU_LIMIT` of processor time. The child reads its inputs from the blob store and
//! writes its outputs there, like any step; what it hands back is one line on stdout: how many
//! chapters it stored, or why the manuscript was refused. A child stopped by a limit fails its
//! book with `too_large` or `too_complex`; the worker is untouched.
//!
//! Later steps work on the stored model, which the limits checked while reading keep small,
//! and run in the worker.

use std::process::{ExitCode, ExitStatus, Stdio};
use std::time::Duration;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

use crate::books::StoredOptions;
use crate::books::keys;
use crate::config::Config;
use crate::convert;
use crate::manuscript::{Format, Ingested, InputError};
use crate::storage::BlobStore;
use crate::storage::fault::{self, Fault, OutOfReach, StorageFull};

/// The hidden subcommand the worker runs.
pub const SUBCOMMAND: &str = "read-manuscript";

/// What the child is asked to read.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    pub book: crate::books::BookId,
    pub format: Format,
    pub encoding: Option<String>,
    pub options: StoredOptions,
}

/// What the child answers on stdout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    /// The model, the report and the images are stored.
    Stored { chapters: usize },
    /// The manuscript cannot be made into a book; `code` and `message` are the API's.
    Refused { code: String, message: String },
}

impl Reply {
    fn refused(error: &InputError) -> Reply {
        Reply::Refused {
            code: error.code().to_owned(),
            message: error.to_string(),
        }
    }
}

/// Runs the child and waits for it. `Err` is a failure worth retrying (the child could not
/// start, or died in a way no limit explains); a limit that stopped it is a `Refused`.
pub async fn read_in_child(config: &Config, request: &Request) -> anyhow::Result<Reply> {
    let mut child = crate::executable::command()
        .context("finding this executable to read the manuscript")?
        .arg(SUBCOMMAND)
        // On stdin, not as an argument: the book's options (a long description) could pass
        // the kernel's limit on one argument's length.
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // A job cancelled or a worker stopping takes its reading with it.
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting bindery {SUBCOMMAND}"))?;
    let pid = child.id().unwrap_or(0);
    tracing::debug!(book.id = %request.book, child.pid = pid, "reading the manuscript in a child process");
    let mut stdin = child.stdin.take().context("the child has no stdin")?;
    stdin.write_all(&serde_json::to_vec(request)?).await?;
    drop(stdin);
    let mut stdout = child.stdout.take().context("the child has no stdout")?;
    let stderr = child.stderr.take().context("the child has no stderr")?;
    // The child's log lines go on to the worker's own stream; an allocation that failed is
    // how an out-of-memory child announces itself before it aborts.
    let book = request.book.clone();
    // In the step's span, so that its lines carry the job as well as the book.
    let relay = tokio::spawn(tracing::Instrument::in_current_span(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        let mut out_of_memory = false;
        while let Ok(Some(line)) = lines.next_line().await {
            out_of_memory |= line.starts_with("memory allocation of");
            // As an event of the worker's, so that the log stays one format (JSON lines). The
            // line is a field, not the message: it can name the server's paths and storage,
            // and the book's log shows its tenant messages only of lines written for them.
            tracing::warn!(book.id = %book, child.pid = pid, child.line = %line, "the manuscript reader logged a line");
        }
        out_of_memory
    }));
    let mut answer = String::new();
    // The answer is one short line; more is a bug, and is not read into memory.
    (&mut stdout)
        .take(64 * 1024)
        .read_to_string(&mut answer)
        .await
        .context("reading the child's answer")?;
    let status = child.wait().await.context("waiting for the child")?;
    let out_of_memory = relay.await.unwrap_or(false);
    interpret(config, request, status, out_of_memory, &answer)
}

fn interpret(
    config: &Config,
    request: &Request,
    status: ExitStatus,
    out_of_memory: bool,
    answer: &str,
) -> anyhow::Result<Reply> {
    use std::os::unix::process::ExitStatusExt;
    let step = "reading the manuscript".to_owned();
    use nix::sys::signal::Signal;
    let signal = status.signal();
    // A child aborts only when an allocation fails (a panic exits 101).
    if out_of_memory || signal == Some(Signal::SIGABRT as i32) {
        let error = InputError::OutOfMemory { step };
        tracing::warn!(book.id = %request.book, ?status, "reading the manuscript ran out of memory");
        return Ok(Reply::refused(&error));
    }
    if signal == Some(Signal::SIGXCPU as i32) {
        let error = InputError::StepTooSlow {
            step,
            seconds: config.step_cpu_limit.as_secs(),
        };
        tracing::warn!(book.id = %request.book, ?status, "reading the manuscript ran out of processor time");
        return Ok(Reply::refused(&error));
    }
    if status.code() == Some(i32::from(OutOfReach::EXIT_CODE)) {
        return Err(anyhow::Error::new(OutOfReach(
            "the process reading the manuscript could not reach the blob store".into(),
        )));
    }
    if status.code() == Some(i32::from(StorageFull::EXIT_CODE)) {
        return Err(anyhow::Error::new(StorageFull(
            "the process reading the manuscript found the blob store full".into(),
        )));
    }
    if !status.success() {
        anyhow::bail!("the process reading the manuscript ended with {status}");
    }
    serde_json::from_str(answer.trim())
        .with_context(|| format!("the process reading the manuscript answered {answer:?}"))
}

/// The child: limits itself, reads its [`Request`] from stdin, then reads and stores. Exits 0
/// with a [`Reply`] on stdout, or with the reason on stderr: [`OutOfReach::EXIT_CODE`] when the
/// blob store could not be reached and [`StorageFull::EXIT_CODE`] when it is full (the job
/// waits for either without spending an attempt), else 1.
pub fn child_main(config: &Config) -> ExitCode {
    if let Err(e) = limit_self(config.worker_memory_budget, config.step_cpu_limit) {
        eprintln!("bindery {SUBCOMMAND}: {e:#}");
        return ExitCode::FAILURE;
    }
    let outcome = (|| -> anyhow::Result<Reply> {
        let request: Request =
            serde_json::from_reader(std::io::stdin().lock()).context("reading the request")?;
        let blobs = BlobStore::open(&config.blob, &config.azure)?;
        // One thread: the limits are per process, and the reading itself is sequential.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(read_and_store(&blobs, config, &request))
    })();
    match outcome {
        Ok(reply) => {
            println!("{}", serde_json::to_string(&reply).unwrap_or_default());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bindery {SUBCOMMAND}: {e:#}");
            match fault::of_storage(&e) {
                Some(Fault::Unavailable) => ExitCode::from(OutOfReach::EXIT_CODE),
                Some(Fault::OutOfSpace) => ExitCode::from(StorageFull::EXIT_CODE),
                _ => ExitCode::FAILURE,
            }
        }
    }
}

/// Memory (the data segment, which heap and anonymous mappings count against) and processor
/// time; no core file when a limit ends the process.
fn limit_self(memory: u64, cpu: Duration) -> anyhow::Result<()> {
    use nix::sys::resource::{Resource, setrlimit};
    setrlimit(Resource::RLIMIT_CORE, 0, 0).context("setting RLIMIT_CORE")?;
    setrlimit(Resource::RLIMIT_DATA, memory, memory).context("setting RLIMIT_DATA")?;
    let seconds = cpu.as_secs().max(1);
    // SIGXCPU at the soft limit says why; the hard limit (SIGKILL) is only a backstop.
    setrlimit(Resource::RLIMIT_CPU, seconds, seconds + 5).context("setting RLIMIT_CPU")?;
    // Dies with the worker: a reading left behind would hold memory for nothing.
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
        .context("binding to the worker")?;
    Ok(())
}

/// The step's work: the inputs from the blob store, the reading, the outputs back.
async fn read_and_store(
    blobs: &BlobStore,
    config: &Config,
    request: &Request,
) -> anyhow::Result<Reply> {
    let book = &request.book;
    let manuscript = blobs.get(&keys::upload(book)).await?;
    let text = match request.format {
        Format::Docx => None,
        Format::Markdown | Format::Text => Some(
            String::from_utf8(blobs.get(&keys::text(book)).await?.to_vec())
                .context("the decoded manuscript is not UTF-8")?,
        ),
    };
    let cover = match &request.options.cover_name {
        Some(name) => Some((name.clone(), blobs.get(&keys::cover_upload(book)).await?)),
        None => None,
    };
    let ingested = Ingested {
        format: request.format,
        text,
        encoding: request.encoding.clone(),
    };
    let assembled = match convert::assemble(
        &ingested,
        &manuscript,
        cover.as_ref().map(|(n, b)| (n.as_str(), b.as_ref())),
        &request.options.convert,
        &config.limits,
        &config.default_language,
    ) {
        Ok(a) => a,
        Err(e) => return Ok(Reply::refused(&e)),
    };
    drop((manuscript, cover, ingested));
    for (id, bytes) in assembled.resources {
        blobs
            .put_if_absent(&keys::resource(book, &id), bytes)
            .await?;
    }
    blobs
        .put_if_absent(
            &keys::parse_report(book),
            serde_json::to_vec(&assembled.report)?,
        )
        .await?;
    blobs
        .put_if_absent(&keys::model(book), serde_json::to_vec(&assembled.book)?)
        .await?;
    Ok(Reply::Stored {
        chapters: assembled.book.document.chapters.len(),
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use super::*;

    fn request() -> Request {
        Request {
            book: crate::books::BookId::unchecked("b"),
            format: Format::Markdown,
            encoding: None,
            options: StoredOptions::default(),
        }
    }

    #[test]
    fn a_child_that_could_not_reach_the_blob_store_or_found_it_full_spends_no_attempt() {
        let config = Config::from_vars(std::iter::empty())
            .expect("config")
            .config;
        let exit = |code: i32| ExitStatus::from_raw(code << 8);
        let unreachable = interpret(
            &config,
            &request(),
            exit(i32::from(OutOfReach::EXIT_CODE)),
            false,
            "",
        )
        .expect_err("a failure");
        assert!(fault::storage_out_of_reach(&unreachable), "{unreachable:#}");
        let full = interpret(
            &config,
            &request(),
            exit(i32::from(StorageFull::EXIT_CODE)),
            false,
            "",
        )
        .expect_err("a failure");
        assert_eq!(
            fault::of_storage(&full),
            Some(Fault::OutOfSpace),
            "{full:#}"
        );
        // Any other failure of the child is the job's, and spends an attempt.
        let other = interpret(&config, &request(), exit(1), false, "").expect_err("a failure");
        assert_eq!(fault::of_storage(&other), None, "{other:#}");
    }
}

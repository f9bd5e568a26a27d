//! Job types by name: the one list a worker runs from.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::burial::{self, DeadFn, DeadFns};
use super::context::JobContext;
use super::{Job, Outcome};

type BoxFuture = Pin<Box<dyn Future<Output = anyhow::Result<Outcome>> + Send>>;
type RunFn<C> = Arc<dyn Fn(&str, JobContext<C>) -> BoxFuture + Send + Sync>;

struct Entry<C> {
    run: RunFn<C>,
    queue: &'static str,
}

/// Maps stored job names to the code that runs them.
pub struct Registry<C> {
    jobs: BTreeMap<&'static str, Entry<C>>,
    /// Each type's `on_dead`, for burials (see `burial`).
    dead: DeadFns<C>,
}

impl<C: Send + Sync + 'static> Default for Registry<C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<C: Send + Sync + 'static> Registry<C> {
    pub fn new() -> Self {
        Self {
            jobs: BTreeMap::new(),
            dead: Arc::new(BTreeMap::new()),
        }
    }

    /// Adds job type `J`. Registering two types under one name is a bug, caught at start-up.
    pub fn register<J: Job<Context = C>>(mut self) -> Self {
        let run: RunFn<C> = Arc::new(|payload: &str, cx: JobContext<C>| {
            let parsed = serde_json::from_str::<J>(payload);
            // `run` consumes its job, so the last attempt keeps a second copy for `on_dead`.
            let spare = (cx.attempt >= cx.max_attempts)
                .then(|| serde_json::from_str::<J>(payload).ok())
                .flatten();
            Box::pin(async move {
                match parsed {
                    Ok(job) => {
                        name_book(&job);
                        let result = job.run(&cx).await;
                        if let (Err(error), Some(spare)) = (&result, spare)
                            && let Err(e) = spare.on_dead(&cx, error).await
                        {
                            tracing::error!(error = %format!("{e:#}"), "reacting to a dead job failed");
                        }
                        result
                    }
                    Err(e) => Ok(Outcome::Discard(format!(
                        "the payload does not match job type `{}`: {e}",
                        J::NAME
                    ))),
                }
            })
        });
        let dead: DeadFn<C> = Arc::new(|payload: &str, cx: JobContext<C>, error: anyhow::Error| {
            let parsed = serde_json::from_str::<J>(payload);
            Box::pin(async move {
                let job = parsed.map_err(|e| {
                    anyhow::anyhow!("the payload does not match job type `{}`: {e}", J::NAME)
                })?;
                name_book(&job);
                job.on_dead(&cx, &error).await
            })
        });
        Arc::make_mut(&mut self.dead).insert(J::NAME, dead);
        let previous = self.jobs.insert(
            J::NAME,
            Entry {
                run,
                queue: J::QUEUE,
            },
        );
        assert!(
            previous.is_none(),
            "job type `{}` registered twice",
            J::NAME
        );
        self
    }

    /// The future that runs one stored job, or `None` if no type has that name.
    pub(crate) fn start(&self, kind: &str, payload: &str, cx: JobContext<C>) -> Option<BoxFuture> {
        if kind == burial::KIND {
            return Some(Box::pin(burial::run(
                self.dead.clone(),
                payload.to_owned(),
                cx,
            )));
        }
        self.jobs.get(kind).map(|entry| (entry.run)(payload, cx))
    }

    /// Every queue some registered type uses: what a worker claims from.
    pub fn queues(&self) -> Vec<String> {
        let mut queues: Vec<String> = self.jobs.values().map(|e| e.queue.to_owned()).collect();
        queues.sort();
        queues.dedup();
        queues
    }
}

/// Puts the job's book on the span of the run (or the burial) it is polled in, whose
/// `book.id` field the runner declares empty: the engine cannot know it before the payload
/// is read.
fn name_book<J: Job>(job: &J) {
    if let Some(book) = job.book() {
        tracing::Span::current().record("book.id", book);
    }
}

//! The service as its operator sees it: jobs, queues, workers, schedules and tokens. The admin
//! API (`web::api::admin`) answers with these views and the admin pages (`web::pages::admin`)
//! show them; neither reaches into the other. Their query helpers are `web::query`'s.

pub(crate) mod jobs;
pub(crate) mod queues;
pub(crate) mod schedules;
pub(crate) mod tokens;
pub(crate) mod workers;

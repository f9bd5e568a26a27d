//! Admin pages: built on the admin API (jobs, queues, workers, schedules, live logs).

use actix_web::web;

pub fn routes(_cfg: &mut web::ServiceConfig) {}

//! Bindery's integration tests, one binary: each module was a test file of its own, and each
//! of those linked the whole crate again, which was most of a test run's build time.
//! `scripts/test --test it MODULE::` runs one of them.

mod common;

mod accounts;
mod accounts_browser;
mod accounts_matrix;
mod ace;
mod admin;
mod advance_copies;
mod amplification;
mod api;
mod app;
mod app_browser;
mod architecture;
mod azure;
mod catalog;
mod chaos;
mod configuration;
mod convert;
mod crash;
mod deploy;
mod editions;
mod fairness;
mod faults;
mod first_admin;
mod formats;
mod hardening;
mod house_styles;
mod http;
mod installation;
mod jobs;
mod jobs_cli;
mod languages;
mod logs_cli;
mod math;
mod metadata;
mod openapi;
mod outages;
mod page_list;
mod pipeline;
mod postgres;
mod print;
mod printers;
mod reader_browser;
mod revisions;
mod s3;
mod shutdown;
mod single_sign_on;
mod styles;
mod supervision;
mod tokens_cli;
mod upgrade;
mod webhooks;

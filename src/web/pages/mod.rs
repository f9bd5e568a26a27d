//! The app's pages: server-rendered HTML (maud escapes every value), with small scripts from
//! `static/` that only enhance them: upload progress, live book progress, live logs. The
//! pages' scripts call the same JSON API as any tool, with the session cookie and its CSRF
//! token, so there is one implementation of every action. Their frame, errors and visitors are
//! `web::frame`, which the file handlers' pages share.

mod account;
mod admin;
mod admin_tokens;
mod books;
mod house_styles;
mod invitations;
mod passkeys;
mod people;
mod reader_links;
mod signin;
mod single_sign_on;
mod styles;

use actix_web::web;

pub fn routes(cfg: &mut web::ServiceConfig) {
    signin::routes(cfg);
    passkeys::routes(cfg);
    single_sign_on::routes(cfg);
    invitations::routes(cfg);
    account::routes(cfg);
    people::routes(cfg);
    reader_links::routes(cfg);
    books::routes(cfg);
    styles::routes(cfg);
    house_styles::routes(cfg);
    admin::routes(cfg);
    admin_tokens::routes(cfg);
}

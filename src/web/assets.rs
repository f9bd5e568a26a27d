//! The pages' scripts, styles and images from `static/`, compiled into the binary.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, get, web};
use rust_embed::Embed;

use super::conditional::{Answer, etag_of_digest};

#[derive(Embed)]
#[folder = "static/"]
struct Assets;

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(asset);
}

#[get("/static/{path:.*}")]
async fn asset(req: HttpRequest, path: web::Path<String>) -> HttpResponse {
    serve(&req, &path)
}

fn serve(req: &HttpRequest, path: &str) -> HttpResponse {
    let Some(file) = Assets::get(path) else {
        return HttpResponse::NotFound()
            .content_type("text/plain; charset=utf-8")
            .body("not found");
    };
    Answer::new(req, etag_of_digest(&file.metadata.sha256_hash()))
        .header((header::CACHE_CONTROL, "no-cache"))
        .body(file.metadata.mimetype(), file.data.into_owned())
}

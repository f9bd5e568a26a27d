//! The pages' scripts, styles and images from `static/`, compiled into the binary.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, get, web};
use rust_embed::Embed;

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
    let etag = format!("\"{}\"", hex(&file.metadata.sha256_hash()[..16]));
    let fresh = req
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    if fresh {
        return HttpResponse::NotModified()
            .insert_header((header::ETAG, etag))
            .finish();
    }
    HttpResponse::Ok()
        .content_type(file.metadata.mimetype())
        .insert_header((header::ETAG, etag))
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .body(file.data.into_owned())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
